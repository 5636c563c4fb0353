//! What the process needs from the operating system before and around the
//! work: which standard streams were closed when it started, a bound on the
//! address space the allocator reserves, and the lines of the inputs done
//! written out when Ctrl-C ends the run.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The standard descriptors (bit 0: standard input, 1: output, 2: error)
/// that were closed when the process started, as probed by
/// `probe_standard_streams` before Rust's runtime opens `/dev/null` on them.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Runs before `main`, and before Rust's runtime: a closed standard
/// descriptor would otherwise look like `/dev/null`, and `bt2sum <&-` would
/// print the empty input's checksum.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
#[used]
#[unsafe(link_section = ".init_array")]
static PROBE: extern "C" fn() = probe_standard_streams;

/// As above, in the section macOS runs before `main`.
#[cfg(target_vendor = "apple")]
#[used]
#[unsafe(link_section = "__DATA,__mod_init_func")]
static PROBE: extern "C" fn() = probe_standard_streams;

#[cfg(unix)]
extern "C" fn probe_standard_streams() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags; a closed one
        // fails with EBADF.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            CLOSED_AT_START.fetch_or(1 << fd, Ordering::Relaxed);
        }
    }
}

/// Whether standard input was closed when the process started.
pub fn stdin_closed() -> bool {
    CLOSED_AT_START.load(Ordering::Relaxed) & 1 != 0
}

/// Whether standard output was closed when the process started.
pub fn stdout_closed() -> bool {
    CLOSED_AT_START.load(Ordering::Relaxed) & 2 != 0
}

/// The error for a standard stream that was closed.
pub fn closed_stream() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::EBADF);
    #[cfg(not(unix))]
    return io::Error::new(io::ErrorKind::NotConnected, "Bad file descriptor");
}

/// Keeps the allocator to one arena: glibc gives each thread that allocates
/// an arena of its own and reserves 64 MiB of address space for each, which
/// under a limit on address space (`ulimit -v`) leaves too little for the
/// buffers that hashing needs. bt2sum allocates little on its hot paths.
pub fn one_allocator_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Starts the worker threads: `threads` of them (0: one per processor), or
/// as many as the system lets start (a limit on processes or on memory),
/// at least one. (The global pool can be built once only, so the threads
/// that can start are counted first.)
pub fn start_workers(threads: usize) -> Result<(), rayon::ThreadPoolBuildError> {
    let wanted = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = std::sync::Arc::new(std::sync::Mutex::new(released));
    let mut trials = Vec::new();
    for _ in 0..wanted {
        let released = std::sync::Arc::clone(&released);
        // Each waits until all have started, so that they count together.
        let trial = std::thread::Builder::new().spawn(move || {
            let _ = released.lock().map(|released| released.recv());
        });
        match trial {
            Ok(trial) => trials.push(trial),
            Err(_) => break,
        }
    }
    let startable = trials.len().max(1);
    drop(release);
    for trial in trials {
        let _ = trial.join();
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(startable)
        .build_global()
}

/// Standard output as a buffer shared with the thread that, on Ctrl-C,
/// writes out the lines already reported before the process ends.
pub struct SharedOutput(Arc<Mutex<BufWriter<File>>>);

impl Write for SharedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        lock(&self.0).write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        lock(&self.0).write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        lock(&self.0).flush()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Standard output, buffered in big writes, and written out on Ctrl-C
/// before the process ends as Ctrl-C ends it (the shell sees 130).
#[cfg(unix)]
pub fn buffered_stdout() -> io::Result<SharedOutput> {
    use std::os::fd::AsFd;
    let stdout = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let shared = Arc::new(Mutex::new(BufWriter::with_capacity(64 << 10, stdout)));
    interrupt::flush_on_interrupt(Arc::clone(&shared));
    Ok(SharedOutput(shared))
}

#[cfg(unix)]
mod interrupt {
    use std::fs::File;
    use std::io::{BufWriter, Write};
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{Arc, Mutex};

    /// The write end of the pipe the handler wakes the watcher through.
    static WAKE: AtomicI32 = AtomicI32::new(-1);

    extern "C" fn on_interrupt(_signal: libc::c_int) {
        let fd = WAKE.load(Ordering::Relaxed);
        if fd >= 0 {
            let byte = 1u8;
            // SAFETY: write is async-signal-safe; the byte is valid for the
            // call. A full pipe (a second Ctrl-C) loses nothing.
            unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
        }
    }

    /// On SIGINT, a watcher thread flushes `output`, then ends the process
    /// by SIGINT. Not when SIGINT was ignored (a background job), nor when
    /// the pipe or thread cannot be made (then Ctrl-C ends the process as
    /// it would have).
    pub(super) fn flush_on_interrupt(output: Arc<Mutex<BufWriter<File>>>) {
        // SAFETY: a zeroed sigaction is valid to receive the current one.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reads the disposition only.
        if unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current) } != 0
            || current.sa_sigaction == libc::SIG_IGN
        {
            return;
        }
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two descriptors of a valid array.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return;
        }
        let watcher = std::thread::Builder::new()
            .name("interrupt".into())
            .spawn(move || {
                let mut byte = 0u8;
                loop {
                    // SAFETY: reads one byte into a valid buffer.
                    match unsafe { libc::read(fds[0], (&raw mut byte).cast(), 1) } {
                        1 => break,
                        -1 if std::io::Error::last_os_error().kind()
                            == std::io::ErrorKind::Interrupted => {}
                        _ => return,
                    }
                }
                let _ = super::lock(&output).flush();
                // SAFETY: restores the default action and raises SIGINT
                // again, which ends the process as Ctrl-C does.
                unsafe {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    libc::raise(libc::SIGINT);
                }
            });
        if watcher.is_err() {
            return;
        }
        WAKE.store(fds[1], Ordering::Relaxed);
        // SAFETY: a zeroed sigaction with a handler of the right signature
        // and SA_RESTART (so that other threads' reads are not cut short).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_interrupt as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        }
    }
}

/// Where there is no Ctrl-C to flush for, the caller buffers as it will.
#[cfg(not(unix))]
pub fn buffered_stdout() -> io::Result<SharedOutput> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}
