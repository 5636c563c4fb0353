//! What the command needs of the process and the operating system, beyond
//! reading inputs (the library's): the arguments, the standard streams
//! closed at start, standard output shared with the stop signals' watcher,
//! the worker threads, the allocator, and the limits the run starts under.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Once};

use bt2sum::budget;
use bt2sum::sys::{FileId, lock};

/// The arguments. On Windows, whose shell does not expand wildcards,
/// `*.iso` is expanded here as b3sum does (`wild`).
pub fn args_os() -> impl Iterator<Item = OsString> {
    #[cfg(windows)]
    return wild::args_os();
    #[cfg(not(windows))]
    return std::env::args_os();
}

/// `Err` if standard input was closed at start (on Windows, a process
/// started without a handle keeps a null one).
pub fn stdin_open() -> io::Result<()> {
    #[cfg(windows)]
    let closed = std::os::windows::io::AsRawHandle::as_raw_handle(&io::stdin()).is_null();
    #[cfg(unix)]
    let closed = closed::at_start(0);
    match closed {
        true => Err(closed_stream()),
        false => Ok(()),
    }
}

pub fn stdout_closed() -> bool {
    #[cfg(windows)]
    return std::os::windows::io::AsRawHandle::as_raw_handle(&io::stdout()).is_null();
    #[cfg(unix)]
    return closed::at_start(1);
}

pub fn closed_stream() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::EBADF);
    #[cfg(not(unix))]
    return io::Error::new(io::ErrorKind::NotConnected, "Bad file descriptor");
}

/// Rust's runtime opens `/dev/null` on a standard descriptor closed at
/// start, before `main`: the loader runs this probe earlier.
#[cfg(unix)]
mod closed {
    use std::sync::atomic::{AtomicU8, Ordering};

    static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

    #[used]
    #[cfg_attr(not(target_vendor = "apple"), unsafe(link_section = ".init_array"))]
    #[cfg_attr(
        target_vendor = "apple",
        unsafe(link_section = "__DATA,__mod_init_func")
    )]
    static PROBE: extern "C" fn() = probe;

    extern "C" fn probe() {
        for fd in 0..2 {
            // SAFETY: F_GETFD reads a descriptor's flags; a closed one fails.
            if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
                CLOSED_AT_START.fetch_or(1 << fd, Ordering::Relaxed);
            }
        }
    }

    pub(super) fn at_start(fd: u8) -> bool {
        CLOSED_AT_START.load(Ordering::Relaxed) & (1 << fd) != 0
    }
}

/// A list to read, buffered: the file `name`, or standard input for `-`.
pub fn open_list(name: &std::ffi::OsStr) -> io::Result<Box<dyn io::BufRead>> {
    if name != "-" {
        let file = File::open(name)?;
        return Ok(Box::new(io::BufReader::with_capacity(64 << 10, file)));
    }
    stdin_open()?;
    Ok(Box::new(io::stdin().lock()))
}

/// A duplicate of standard output's descriptor, written to without Rust's
/// line buffering: bytes go out as they are, lines ending in `\n`.
pub fn duplicate_stdout() -> io::Result<File> {
    #[cfg(unix)]
    let copy = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?;
    #[cfg(windows)]
    let copy = std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned()?;
    Ok(File::from(copy))
}

static LAST_WORDS: Mutex<Vec<Box<dyn FnOnce() + Send>>> = Mutex::new(Vec::new());

/// Raised when a stop signal comes (an `Arc`: signal-hook's handlers hold it too).
static STOPPING: LazyLock<Arc<AtomicBool>> = LazyLock::new(Default::default);

/// Runs `last_words` when the process is asked to stop (Ctrl-C, SIGTERM,
/// SIGHUP), after those given later (as `atexit` does: a progress bar is
/// cleared before the output under it is flushed); the process then ends
/// by that signal (the shell sees 130 for Ctrl-C). A second stop signal
/// ends it at once. A signal ignored when bt2sum started (SIGINT in a
/// background job, SIGHUP under `nohup`) stays ignored.
pub fn on_stop_signal(last_words: impl FnOnce() + Send + 'static) {
    static INSTALLED: Once = Once::new();
    lock(&LAST_WORDS).push(Box::new(last_words));
    // (The watcher's socket pair takes two descriptors: under a very low
    // limit, the work needs them more, and the signals act as they would.)
    if budget::descriptors().signal_watcher && budget::memory().threads_beside_workers {
        INSTALLED.call_once(install_stop_signals);
    }
}

/// Whether a stop signal came: no writer may write more.
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Acquire)
}

pub fn wait_to_be_stopped() -> ! {
    loop {
        std::thread::park();
    }
}

fn speak_last_words() {
    STOPPING.store(true, Ordering::Release);
    let last_words = std::mem::take(&mut *lock(&LAST_WORDS));
    for words in last_words.into_iter().rev() {
        words();
    }
}

/// A watcher thread speaks the last words on the first stop signal, then
/// ends the process by it; a second one has its default action.
#[cfg(unix)]
fn install_stop_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::flag;
    // SAFETY: a zeroed sigaction is valid to receive the current one,
    // which is only read.
    let ignored = |signal| unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) != 0
            || current.sa_sigaction == libc::SIG_IGN
    };
    let taken: Vec<_> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&signal| !ignored(signal))
        .collect();
    // The watcher first: a flag raised while no watcher is there would
    // leave a writer waiting forever for the end it brings.
    let watcher = signal_hook::iterator::Signals::new(&taken).and_then(|mut signals| {
        std::thread::Builder::new()
            .name("stop signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    speak_last_words();
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
            })
    });
    if watcher.is_err() {
        return;
    }
    // Then the handler itself raises the flag, so that no writer waits
    // for the watcher to be scheduled. A second signal has its default
    // action: the handler knows it by a flag of its own, which only
    // handlers raise (the watcher, woken, raises the writers' flag).
    let signalled = Arc::new(AtomicBool::new(false));
    for &signal in &taken {
        let _ = flag::register_conditional_default(signal, Arc::clone(&signalled));
        let _ = flag::register(signal, Arc::clone(&signalled));
        let _ = flag::register(signal, Arc::clone(&STOPPING));
    }
}

/// Ctrl-C and Ctrl-Break: the last words, then status 130.
#[cfg(windows)]
fn install_stop_signals() {
    let _ = ctrlc::set_handler(|| {
        speak_last_words();
        std::process::exit(130)
    });
}

/// Sets the process up for the work (on Unix; elsewhere nothing).
pub fn set_up_process() {
    #[cfg(unix)]
    // SAFETY: mallopt only sets a tunable of the allocator, ignoring a
    // signal installs no code, and the rest reads and sets the process's
    // own limit.
    unsafe {
        // glibc reserves 64 MiB of address space for each thread's own
        // arena, which under `ulimit -v` leaves too little for the work.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::mallopt(libc::M_ARENA_MAX, 1);
        // A write past `ulimit -f` fails with `File too large`, reported,
        // where SIGXFSZ would end the process without a word.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        // What a run may hold open is all the system allows: the soft
        // limit raised to the hard one, as Go programs do.
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Whether standard error is a terminal a bar can be drawn on (indicatif
/// draws nothing where `TERM` is unset or `dumb`).
pub fn stderr_draws_bars() -> bool {
    use std::io::IsTerminal;
    let terminal = io::stderr().is_terminal();
    terminal && (cfg!(windows) || std::env::var_os("TERM").is_some_and(|term| term != "dumb"))
}

/// The regular file standard output writes to, if it is one.
pub fn stdout_file() -> Option<FileId> {
    let stdout = duplicate_stdout().ok()?;
    let metadata = stdout.metadata().ok()?;
    metadata
        .is_file()
        .then(|| FileId::of(&stdout, &metadata).ok())?
}

/// Gives `file` (a new file bt2sum made) the owner and group of `like`
/// (the file it replaces), where they differ.
pub fn keep_owner(file: &File, like: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let now = file.metadata()?;
        if (now.uid(), now.gid()) != (like.uid(), like.gid()) {
            std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid()))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (file, like);
    Ok(())
}

/// Starts the worker threads: one fewer than the processors (or `--cpus`),
/// the thread that owns the run hashing as the last; no more than the
/// address space left holds, nor than the system grants (`ulimit -u`, a
/// container's pids limit): each thread is started before the pool is
/// built on those that started. How many threads hash at most, and how
/// many were asked for.
pub fn start_workers(cpus: Option<usize>) -> Result<(usize, usize), rayon::ThreadPoolBuildError> {
    let wanted = budget::workers(cpus.unwrap_or(0)).saturating_sub(1);
    // Each thread waits for the worker it is to run; the first the system
    // refuses ends the count.
    let started: Vec<_> = (0..wanted)
        .map_while(|_| {
            let (hand_over, receive) = std::sync::mpsc::channel::<rayon::ThreadBuilder>();
            let thread = std::thread::Builder::new().stack_size(budget::STACK);
            let spawned = thread.spawn(move || receive.recv().map(rayon::ThreadBuilder::run));
            spawned.ok().map(|_| hand_over)
        })
        .collect();
    let count = started.len();
    let builder = rayon::ThreadPoolBuilder::new();
    if count == 0 {
        builder.num_threads(1).use_current_thread().build_global()?;
        return Ok((1, wanted + 1));
    }
    let mut started = started.into_iter();
    builder
        .num_threads(count)
        .spawn_handler(move |worker| {
            let hand_over = started.next().expect("a thread started for each worker");
            hand_over
                .send(worker)
                .map_err(|_| io::Error::other("a worker thread ended before its start"))
        })
        .build_global()?;
    Ok((count + 1, wanted + 1))
}

/// Standard output as a buffer shared with the stop signals' watcher.
pub struct SharedOutput(Arc<Mutex<BufWriter<File>>>);

impl SharedOutput {
    /// The buffer; once a stop signal has come, never: the process is about
    /// to end with what was written before it.
    fn writer(&self) -> MutexGuard<'_, BufWriter<File>> {
        if stopping() {
            wait_to_be_stopped();
        }
        lock(&self.0)
    }
}

impl Write for SharedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// Standard output, buffered, written out on a stop signal before the
/// process ends by it; lines reach the buffer whole, and the lock is kept
/// while the signal ends the process: the output never ends inside a line.
pub fn buffered_stdout() -> io::Result<SharedOutput> {
    if !budget::descriptors().stdout_copy {
        return Err(io::Error::other("too few file descriptors to spare"));
    }
    let stdout = duplicate_stdout()?;
    let shared = Arc::new(Mutex::new(BufWriter::with_capacity(64 << 10, stdout)));
    let output = Arc::clone(&shared);
    on_stop_signal(move || {
        let mut output = lock(&output);
        let _ = output.flush();
        // Held until the process ends.
        std::mem::forget(output);
    });
    Ok(SharedOutput(shared))
}

/// The system's allocator; a refusal ends the process cleanly.
pub struct ReportingAllocator;

// SAFETY: every call is the system allocator's, with the same arguments;
// a null answer never returns to the caller.
unsafe impl GlobalAlloc for ReportingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised for `layout`.
        refused_ends(unsafe { System.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        refused_ends(unsafe { System.alloc_zeroed(layout) })
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller promised for `ptr`, `layout` and `new_size`.
        refused_ends(unsafe { System.realloc(ptr, layout, new_size) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// The block, or where it was refused, the message (without allocating)
/// and status 1.
fn refused_ends(block: *mut u8) -> *mut u8 {
    if block.is_null() {
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
            let _ = io::stderr().write_all(MESSAGE);
            std::process::exit(1);
        }
    }
    block
}
