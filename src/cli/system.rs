//! What the command needs of the operating system beyond reading inputs,
//! the same on every platform: the arguments, the standard streams closed
//! at start, the stop signals, terminals, and which file a path is.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The arguments, the program's name first. On Windows, where the shell
/// does not expand wildcards, `*.iso` is expanded here as b3sum does (the
/// `wild` crate), and a pattern that matches nothing is passed on as typed.
pub fn args_os() -> impl Iterator<Item = OsString> {
    #[cfg(windows)]
    return wild::args_os();
    #[cfg(not(windows))]
    return std::env::args_os();
}

/// Whether standard input was closed when the process started (`<&-`).
pub fn stdin_closed() -> bool {
    closed::at_start(0)
}

/// Whether standard output was closed when the process started (`>&-`).
pub fn stdout_closed() -> bool {
    closed::at_start(1)
}

/// The error of a standard stream that was closed: `Bad file descriptor`.
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

    #[cfg(not(target_vendor = "apple"))]
    #[used]
    #[unsafe(link_section = ".init_array")]
    static PROBE: extern "C" fn() = probe;

    #[cfg(target_vendor = "apple")]
    #[used]
    #[unsafe(link_section = "__DATA,__mod_init_func")]
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

/// On Windows a process started without a handle keeps a null one.
#[cfg(windows)]
mod closed {
    use std::os::windows::io::AsRawHandle;

    pub(super) fn at_start(fd: u8) -> bool {
        match fd {
            0 => std::io::stdin().as_raw_handle().is_null(),
            _ => std::io::stdout().as_raw_handle().is_null(),
        }
    }
}

/// A list to read, buffered: the file `name`, or standard input for `-`.
pub fn open_list(name: &std::ffi::OsStr) -> io::Result<Box<dyn io::BufRead>> {
    if name != "-" {
        let file = File::open(name)?;
        return Ok(Box::new(io::BufReader::with_capacity(64 << 10, file)));
    }
    if stdin_closed() {
        return Err(closed_stream());
    }
    Ok(Box::new(io::stdin().lock()))
}

/// What the system says of standard input (`fstat`): `None` for a stream
/// that says nothing of itself (on Windows a pipe or a console).
pub fn stdin_metadata() -> io::Result<Option<Metadata>> {
    #[cfg(unix)]
    let stdin = File::from(std::os::fd::AsFd::as_fd(&io::stdin()).try_clone_to_owned()?);
    #[cfg(windows)]
    let stdin =
        File::from(std::os::windows::io::AsHandle::as_handle(&io::stdin()).try_clone_to_owned()?);
    Ok(stdin.metadata().ok())
}

/// A duplicate of standard output's descriptor, written to without Rust's
/// line buffering: bytes go out as they are, lines ending in `\n`.
pub fn duplicate_stdout() -> io::Result<File> {
    #[cfg(unix)]
    return Ok(File::from(
        std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?,
    ));
    #[cfg(windows)]
    return Ok(File::from(
        std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned()?,
    ));
}

type LastWords = Box<dyn FnOnce() + Send>;

/// What to do on a stop signal, in the order given.
static LAST_WORDS: Mutex<Vec<LastWords>> = Mutex::new(Vec::new());

static STOPPING: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

fn stopping_flag() -> &'static std::sync::Arc<std::sync::atomic::AtomicBool> {
    STOPPING.get_or_init(Default::default)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `last_words` when the process is asked to stop (Ctrl-C, SIGTERM,
/// SIGHUP), after those given later (as `atexit` does: a progress bar is
/// cleared before the output under it is flushed); the process then ends
/// by that signal (the shell sees 130 for Ctrl-C). A second stop signal
/// ends it at once. A signal ignored when bt2sum started (SIGINT in a
/// background job, SIGHUP under `nohup`) stays ignored.
pub fn on_stop_signal(last_words: impl FnOnce() + Send + 'static) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    lock(&LAST_WORDS).push(Box::new(last_words));
    // (The watcher's socket pair takes two descriptors: under a very low
    // limit, the work needs them more, and the signals act as they would.)
    if free_descriptors().is_none_or(|(_, free)| free >= DESCRIPTORS_NEEDED + 2) {
        INSTALLED.call_once(stop_signals::install);
    }
}

/// Whether a stop signal came and the last words are being spoken: no
/// writer may write more ([`wait_to_be_stopped`]).
pub fn stopping() -> bool {
    stopping_flag().load(std::sync::atomic::Ordering::Acquire)
}

/// Waits for the stop signal that came to end the process.
pub fn wait_to_be_stopped() -> ! {
    loop {
        std::thread::park();
    }
}

fn speak_last_words() {
    stopping_flag().store(true, std::sync::atomic::Ordering::Release);
    let last_words = std::mem::take(&mut *lock(&LAST_WORDS));
    for words in last_words.into_iter().rev() {
        words();
    }
}

#[cfg(unix)]
mod stop_signals {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

    /// Whether `signal` is ignored now.
    fn ignored(signal: libc::c_int) -> bool {
        // SAFETY: a zeroed sigaction is valid to receive the current one,
        // which is only read.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut current) != 0
                || current.sa_sigaction == libc::SIG_IGN
        }
    }

    /// A watcher thread speaks the last words on the first stop signal,
    /// then ends the process by it; a second one has its default action.
    pub(super) fn install() {
        let taken: Vec<_> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&signal| !ignored(signal))
            .collect();
        // The handler itself raises the flag, after checking it for the
        // second signal: no writer waits for the watcher to be scheduled.
        // (These run before the watcher's own handler, registered after
        // them: the watcher, woken, raises the flag too.)
        let mut raising = Vec::new();
        for &signal in &taken {
            let flag = super::stopping_flag();
            let _ = signal_hook::flag::register_conditional_default(
                signal,
                std::sync::Arc::clone(flag),
            );
            raising.extend(signal_hook::flag::register(
                signal,
                std::sync::Arc::clone(flag),
            ));
        }
        let watcher = signal_hook::iterator::Signals::new(&taken).and_then(|mut signals| {
            std::thread::Builder::new()
                .name("stop signals".into())
                .spawn(move || {
                    if let Some(signal) = signals.forever().next() {
                        super::speak_last_words();
                        let _ = signal_hook::low_level::emulate_default_handler(signal);
                    }
                })
        });
        if watcher.is_err() {
            // No flag then: no writer waits for a watcher that is not there.
            for id in raising {
                signal_hook::low_level::unregister(id);
            }
        }
    }
}

#[cfg(windows)]
mod stop_signals {
    /// Ctrl-C and Ctrl-Break: the last words, then status 130.
    pub(super) fn install() {
        let _ = ctrlc::set_handler(|| {
            super::speak_last_words();
            std::process::exit(130)
        });
    }
}

/// Keeps glibc to one allocator arena: it reserves 64 MiB of address space
/// for each thread's own, which under `ulimit -v` leaves too little for the
/// work. (Elsewhere nothing.)
pub fn one_allocator_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Makes a write past `ulimit -f` fail with `File too large`, reported,
/// instead of raising SIGXFSZ, which ends the process without a word.
pub fn file_size_limit_is_an_error() {
    #[cfg(unix)]
    // SAFETY: ignoring a signal installs no code.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Whether standard error is a terminal a bar can be drawn on: on Unix
/// one whose `TERM` is set and not `dumb`; on Windows any console.
pub fn stderr_draws_bars() -> bool {
    use std::io::IsTerminal;
    let terminal = io::stderr().is_terminal();
    terminal && (cfg!(windows) || std::env::var_os("TERM").is_some_and(|term| term != "dumb"))
}

/// Which file a path names, whatever the path (a link, `.`, a full path):
/// on Unix its device and inode, from metadata already at hand (nothing
/// is opened, so a walk holds no directory open); on Windows its volume
/// and index, through a handle (`same-file`) kept with the id.
#[derive(PartialEq, Eq)]
pub struct FileId(#[cfg(unix)] (u64, u64), #[cfg(windows)] same_file::Handle);

impl FileId {
    /// The file at `path`, of which `fs::metadata` (or `symlink_metadata`)
    /// said `metadata` just now.
    pub fn of(path: &Path, metadata: &Metadata) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = path;
            Ok(FileId((metadata.dev(), metadata.ino())))
        }
        #[cfg(windows)]
        {
            let _ = metadata;
            same_file::Handle::from_path(path).map(FileId)
        }
    }

    /// The open file `file`.
    pub fn of_file(file: &File) -> io::Result<FileId> {
        #[cfg(unix)]
        return FileId::of(Path::new(""), &file.metadata()?);
        #[cfg(windows)]
        return same_file::Handle::from_file(file.try_clone()?).map(FileId);
    }

    /// The regular file standard output writes to, if it is one.
    pub fn of_stdout() -> Option<FileId> {
        let stdout = duplicate_stdout().ok()?;
        let metadata = stdout.metadata().ok()?;
        if !metadata.is_file() {
            return None;
        }
        #[cfg(unix)]
        return FileId::of(Path::new(""), &metadata).ok();
        #[cfg(windows)]
        return same_file::Handle::from_file(stdout).ok().map(FileId);
    }

    /// Whether the file a directory lists as `entry` may be this one: the
    /// inode the listing gives rules most out without a lookup (Windows
    /// gives nothing that tells).
    pub fn may_be(&self, entry: &std::fs::DirEntry) -> bool {
        #[cfg(unix)]
        return std::os::unix::fs::DirEntryExt::ino(entry) == self.0.1;
        #[cfg(windows)]
        {
            let _ = entry;
            true
        }
    }
}

/// Gives `file` (a new file bt2sum made) the owner and group `like` (the
/// `fstat` of the file it replaces) has, where they differ; fails where the
/// system does not let them be kept.
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

/// The descriptors the work needs free besides those the process holds at
/// start: a list being read, the input in turn, and a temporary file for
/// its leaf digests.
pub const DESCRIPTORS_NEEDED: usize = 3;

/// Under a low limit on open files (256 or less), the limit and how many
/// descriptors it leaves free now; `None` where it is higher (or Windows).
pub fn free_descriptors() -> Option<(u64, usize)> {
    #[cfg(unix)]
    {
        // SAFETY: reads the limit into a zeroed struct.
        let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 || limit.rlim_cur > 256
        {
            return None;
        }
        let limit = limit.rlim_cur as u64;
        // SAFETY: F_GETFD reads a descriptor's flags; it fails on a closed one.
        let held = (0..limit as libc::c_int)
            .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1)
            .count();
        Some((limit, (limit as usize).saturating_sub(held)))
    }
    #[cfg(not(unix))]
    None
}

/// Raises the soft limit on open files to the hard one, as Go programs do:
/// what a run may hold open is then all the system allows.
pub fn raise_descriptor_limit() {
    #[cfg(unix)]
    // SAFETY: reads and sets the process's own limit.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
