//! Memory for the whole process: the allocator, which ends the process
//! with `bt2sum: out of memory` where the system refuses memory, instead of
//! Rust's abort; and the address space a limit (`ulimit -v`) leaves, from
//! which the thread count is set once at start.

use std::alloc::{GlobalAlloc, Layout, System};

/// The system's allocator; a refusal ends the process cleanly.
pub struct ReportingAllocator;

// SAFETY: every call is the system allocator's, with the same arguments;
// a null answer never returns to the caller.
unsafe impl GlobalAlloc for ReportingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised for `layout`.
        refused_ends(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        refused_ends(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller promised for `ptr`, `layout` and `new_size`.
        refused_ends(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// The block, or, where it was refused, the end of the process: the
/// message, without allocating, and status 1. (A block of 4 MiB or more
/// is refused to its caller: the library still sizes some buffers by
/// trying.)
fn refused_ends(block: *mut u8, size: usize) -> *mut u8 {
    if block.is_null() && size < 4 << 20 {
        const MESSAGE: &[u8] = b"bt2sum: out of memory\n";
        #[cfg(unix)]
        // SAFETY: writes a static message to descriptor 2, then ends the
        // process at once, running nothing that could allocate.
        unsafe {
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(1);
        }
        #[cfg(windows)]
        {
            use std::io::Write;
            let _ = std::io::stderr().write_all(MESSAGE);
            std::process::exit(1);
        }
    }
    block
}

/// The stack of the threads bt2sum starts: hashing needs little.
pub const STACK: usize = 1 << 20;

/// What one worker thread is counted for against an address-space limit:
/// its stack and a share of the work.
const PER_THREAD: usize = STACK + (1 << 20);

/// What the process needs besides its workers.
const BASE: usize = 24 << 20;

/// The address space a limit (`ulimit -v`) leaves now, if one is set.
pub fn address_space_left() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: fills `limit`.
        let known = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
        if !known || limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: usize = statm.split_whitespace().next()?.parse().ok()?;
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        Some((limit.rlim_cur as usize).saturating_sub(pages * page))
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// How many worker threads to start: `wanted` (0: one per processor), as
/// many as the address space left holds.
pub fn threads(wanted: usize) -> usize {
    let wanted = match wanted {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        wanted => wanted,
    };
    match address_space_left() {
        Some(left) => wanted.min(left.saturating_sub(BASE) / PER_THREAD).max(1),
        None => wanted,
    }
}
