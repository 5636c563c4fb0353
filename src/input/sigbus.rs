//! Survives a mapped file shrinking while it is hashed.
//!
//! Touching a page of a file mapping that lies past the file's end raises
//! SIGBUS, which would kill the process. Reading the file instead of mapping
//! it avoids the question but costs a copy of every byte; mapping is what lets
//! bt2sum hash at the SIMD crates' speed. So the mapped windows are registered
//! here, and a SIGBUS handler that finds the faulting address inside one maps
//! a zero page over the faulting page (so the access completes), marks the
//! window as faulted and returns. The caller then discards that window's
//! result and reports the file as changed; no digest computed over the zeroes
//! is ever printed. A fault anywhere else is chained to the handler that was
//! installed before ours, or ends the process as SIGBUS would have.
//!
//! Linux raises SIGBUS for such a page. macOS and the BSDs raise SIGBUS on
//! some releases and SIGSEGV on others, so there the handler takes both
//! signals, and chains whichever it does not own to the disposition that was
//! there before.
//!
//! The handler is async-signal-safe: it reads atomics and a value written
//! before it was installed, calls only `mmap`, `sigaction` and `raise`,
//! which are plain system calls, and gives `errno` back as it found it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How many windows can be registered at once. Each hashing thread maps at
/// most a few windows; a caller that finds no free slot reads instead.
const SLOTS: usize = 512;

/// One registered window: `[start, end)`, or free when `start` is 0.
struct Slot {
    claimed: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    faulted: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE_SLOT: Slot = Slot {
    claimed: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    faulted: AtomicBool::new(false),
};

static REGISTRY: [Slot; SLOTS] = [FREE_SLOT; SLOTS];

/// The signals a page past the end of a mapped file raises here.
#[cfg(any(target_os = "linux", target_os = "android"))]
const SIGNALS: [libc::c_int; 1] = [libc::SIGBUS];
/// The signals a page past the end of a mapped file raises here.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const SIGNALS: [libc::c_int; 2] = [libc::SIGBUS, libc::SIGSEGV];

/// The dispositions before ours (one per signal of [`SIGNALS`], in order),
/// and the page size; set once, before the handler is installed.
struct Installed {
    previous: [libc::sigaction; SIGNALS.len()],
    page_size: usize,
}

// SAFETY: `libc::sigaction` is plain data (function addresses, flags, a
// signal mask); it is written once and only read afterwards.
unsafe impl Sync for Installed {}
unsafe impl Send for Installed {}

static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();

/// Installs the handler once; `false` if that failed (then do not map).
///
/// The dispositions it replaces are recorded first and only then is the
/// handler installed, so that a fault taken at any moment (in a library's
/// own mapping, say) goes to the disposition that was there before. If one
/// of the signals cannot be taken, those already taken are given back.
fn install() -> bool {
    static HOOKED: OnceLock<bool> = OnceLock::new();
    *HOOKED.get_or_init(|| {
        let Some(installed) = INSTALLED.get_or_init(record) else {
            return false;
        };
        // SAFETY: zeroed is a valid `sigaction` (no handler, empty mask);
        // the fields are then filled in as sigaction(2) documents.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: the mask pointer is valid.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        for (taken, signal) in SIGNALS.iter().enumerate() {
            // SAFETY: a valid `sigaction`; the previous one is recorded.
            if unsafe { libc::sigaction(*signal, &action, std::ptr::null_mut()) } != 0 {
                for (signal, previous) in SIGNALS[..taken].iter().zip(&installed.previous) {
                    // SAFETY: puts back the disposition recorded for it.
                    unsafe { libc::sigaction(*signal, previous, std::ptr::null_mut()) };
                }
                return false;
            }
        }
        true
    })
}

/// The page size and the dispositions the handler is to replace, as they
/// are now; `None` if the system does not say.
fn record() -> Option<Installed> {
    let page_size = crate::sys::page_size();
    // SAFETY: zeroed is a valid `sigaction`; each is overwritten with the
    // signal's disposition.
    let mut previous: [libc::sigaction; SIGNALS.len()] = unsafe { std::mem::zeroed() };
    for (signal, previous) in SIGNALS.iter().zip(&mut previous) {
        // SAFETY: reads the disposition into a valid `sigaction`.
        if unsafe { libc::sigaction(*signal, std::ptr::null(), previous) } != 0 {
            return None;
        }
    }
    Some(Installed {
        previous,
        page_size,
    })
}

/// A window registered with the handler; unregistered when dropped.
pub(crate) struct Registration {
    slot: &'static Slot,
}

impl Registration {
    /// Registers `[start, start + len)`; `None` when the handler could not be
    /// installed or every slot is taken (the caller reads the file instead).
    pub(crate) fn new(start: *const u8, len: usize) -> Option<Registration> {
        if !install() || len == 0 {
            return None;
        }
        let slot = REGISTRY.iter().find(|slot| {
            slot.claimed
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        slot.faulted.store(false, Ordering::Relaxed);
        slot.end.store(start as usize + len, Ordering::Relaxed);
        // Publishing `start` last makes the slot visible to the handler.
        slot.start.store(start as usize, Ordering::Release);
        Some(Registration { slot })
    }

    /// Whether a page of the window was past the end of the file.
    pub(crate) fn faulted(&self) -> bool {
        self.slot.faulted.load(Ordering::Acquire)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.slot.start.store(0, Ordering::Release);
        self.slot.claimed.store(false, Ordering::Release);
    }
}

extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // The interrupted code may be about to read errno; mmap may set it.
    let _errno = super::platform::SavedErrno::save();
    let Some(Some(installed)) = INSTALLED.get() else {
        // (Never: the record is made before the handler is installed.)
        restore_default_and_raise(signal);
        return;
    };
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    for slot in &REGISTRY {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || address < start || address >= slot.end.load(Ordering::Acquire) {
            continue;
        }
        // The slot may have been released and reused between the two loads:
        // then `start` changed, and the pair read is not one window.
        if slot.start.load(Ordering::Acquire) != start {
            continue;
        }
        let page = address & !(installed.page_size - 1);
        // SAFETY: the page lies inside a window this process mapped and has
        // not unmapped (it is still registered); replacing it with an
        // anonymous zero page changes only what that window reads.
        let zero = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                installed.page_size,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zero != libc::MAP_FAILED {
            slot.faulted.store(true, Ordering::Release);
            return;
        }
    }
    match SIGNALS.iter().position(|&guarded| guarded == signal) {
        Some(index) => chain(&installed.previous[index], signal, info, context),
        None => restore_default_and_raise(signal),
    }
}

/// Hands a fault that is not ours to the previous disposition.
fn chain(
    previous: &libc::sigaction,
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        restore_default_and_raise(signal);
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: with SA_SIGINFO the previous handler has this signature.
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        handler(signal, info, context);
    } else {
        // SAFETY: without SA_SIGINFO the previous handler takes the signal only.
        let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        handler(signal);
    }
}

/// Restores the default action and raises the signal again: it is delivered
/// when the handler returns and ends the process, as it would have without
/// us (a fault cannot be ignored).
fn restore_default_and_raise(signal: libc::c_int) {
    // SAFETY: a zeroed sigaction with SIG_DFL is valid; sigaction and raise
    // are async-signal-safe.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &default, std::ptr::null_mut());
        libc::raise(signal);
    }
}
