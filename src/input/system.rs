//! What the command needs from the operating system beyond reading inputs,
//! behind one face that is the same on every platform: the arguments,
//! which standard streams were closed when the process started, Ctrl-C,
//! the allocator, terminals, how names are printed and read back, and which
//! file a path is. Each item says what it does where platforms differ.

use std::ffi::OsString;
use std::fs::{DirEntry, File, Metadata};
use std::io;
use std::path::Path;

/// The command line's arguments, the program's name first, with the
/// wildcards of unquoted arguments expanded on Windows.
///
/// Unix shells expand `*.iso` before bt2sum starts; cmd.exe and PowerShell
/// pass it on as typed, so there the `wild` crate expands it as b3sum does:
/// `*`, `?` and `[a-z]`, in either case, not inside double quotes, and a
/// pattern that matches nothing is passed on as it is (so it is reported as
/// a missing file).
pub fn args_os() -> impl Iterator<Item = OsString> {
    #[cfg(windows)]
    return wild::args_os();
    #[cfg(not(windows))]
    return std::env::args_os();
}

/// Whether standard input was closed when the process started.
///
/// On Unix, Rust's runtime opens `/dev/null` on a closed descriptor 0, 1 or
/// 2 before `main`, so `bt2sum <&-` would look like `bt2sum < /dev/null`:
/// the descriptors are probed before that, by a function the loader runs
/// before the runtime starts. On Windows a missing handle stays missing.
pub fn stdin_closed() -> bool {
    closed::at_start(0)
}

/// Whether standard output was closed when the process started (see
/// [`stdin_closed`]).
pub fn stdout_closed() -> bool {
    closed::at_start(1)
}

/// Under a low limit on open files (`ulimit -n` of 256 or less), the
/// limit and the descriptors it leaves free now; `None` where the limit is
/// higher, or not counted (Windows).
pub fn free_descriptors() -> Option<(u64, usize)> {
    crate::descriptors::free_now()
}

/// The descriptors the work needs free besides those the process holds
/// when it starts: a list being read, the input in turn, and a temporary
/// file for its leaf digests. With as many free, no input is lost to `Too
/// many open files`.
pub const DESCRIPTORS_NEEDED: usize = crate::descriptors::NEEDED;

/// A list to read, buffered: the file `name`, or standard input for `-`
/// ([`closed_stream`] if standard input was closed).
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

/// The error for using a standard stream that was closed: `Bad file
/// descriptor`.
pub fn closed_stream() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::EBADF);
    #[cfg(not(unix))]
    return io::Error::new(io::ErrorKind::NotConnected, "Bad file descriptor");
}

#[cfg(unix)]
mod closed {
    use std::sync::atomic::{AtomicU8, Ordering};

    /// The standard descriptors (bit 0: standard input, 1: output, 2:
    /// error) that were closed when the process started.
    static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

    /// Run by the loader before `main`, and before Rust's runtime opens
    /// `/dev/null` on closed standard descriptors.
    #[cfg(not(target_vendor = "apple"))]
    #[used]
    #[unsafe(link_section = ".init_array")]
    static PROBE: extern "C" fn() = probe;

    /// As above, in the section macOS runs before `main`.
    #[cfg(target_vendor = "apple")]
    #[used]
    #[unsafe(link_section = "__DATA,__mod_init_func")]
    static PROBE: extern "C" fn() = probe;

    extern "C" fn probe() {
        for fd in 0..3 {
            // SAFETY: F_GETFD only reads the descriptor's flags; a closed one
            // fails with EBADF.
            if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
                CLOSED_AT_START.fetch_or(1 << fd, Ordering::Relaxed);
            }
        }
    }

    pub(super) fn at_start(fd: u8) -> bool {
        CLOSED_AT_START.load(Ordering::Relaxed) & (1 << fd) != 0
    }
}

#[cfg(windows)]
mod closed {
    use std::io;
    use std::os::windows::io::AsRawHandle;

    /// A process started without a handle has a null one, for good.
    pub(super) fn at_start(fd: u8) -> bool {
        match fd {
            0 => io::stdin().as_raw_handle().is_null(),
            _ => io::stdout().as_raw_handle().is_null(),
        }
    }
}

/// A duplicate of standard input's descriptor (handle), sharing its offset.
pub fn duplicate_stdin() -> io::Result<File> {
    duplicate(io::stdin())
}

/// What the system says of standard input (`fstat`); `None` for a stream
/// that says nothing of itself: on Windows a pipe or a console, whose
/// handles `File::metadata` fails on.
pub fn stdin_metadata() -> io::Result<Option<Metadata>> {
    super::platform::metadata(&duplicate_stdin()?)
}

/// A duplicate of standard output's descriptor (handle), to write to it
/// without Rust's line buffering and console handling: bytes go out as
/// they are, lines ending in `\n` on every platform.
pub fn duplicate_stdout() -> io::Result<File> {
    duplicate(io::stdout())
}

/// A duplicate of a standard stream's descriptor (handle), as a file.
#[cfg(unix)]
fn duplicate(stream: impl std::os::fd::AsFd) -> io::Result<File> {
    Ok(File::from(stream.as_fd().try_clone_to_owned()?))
}

/// A duplicate of a standard stream's handle, as a file.
#[cfg(windows)]
fn duplicate(stream: impl std::os::windows::io::AsHandle) -> io::Result<File> {
    Ok(File::from(stream.as_handle().try_clone_to_owned()?))
}

/// Runs `last_words` when the process is asked to stop: Ctrl-C (SIGINT),
/// SIGTERM or SIGHUP, before those given earlier (as `atexit` does: what
/// was set up last is undone first, so a progress bar is cleared before the
/// output under it is flushed), then ends the process by that signal with
/// its default action (the shell sees 128 + its number: 130 for Ctrl-C).
/// On Windows, Ctrl-C and Ctrl-Break end it with status 130. While the last
/// words run, [`stopping`] is true; a second stop signal ends the process
/// at once. A signal that is ignored when this is first called (SIGINT in
/// a background job, SIGHUP under `nohup`) stays ignored; nothing is
/// installed when the watcher cannot be started or would take descriptors
/// the work needs: the signals then act as they would have.
pub fn on_stop_signal(last_words: impl FnOnce() + Send + 'static) {
    static INSTALLED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    lock_last_words().push(Box::new(last_words));
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if *installed {
        return;
    }
    // (The watcher's pipe takes two.)
    if let Some((_, free)) = free_descriptors()
        && free < DESCRIPTORS_NEEDED + 2
    {
        return;
    }
    *installed = stop_signals::install();
}

/// Whether a stop signal has come and the process is speaking its last
/// words: a writer of output must then write nothing more (see
/// [`wait_to_be_stopped`]), so that the output ends with what was finished.
pub fn stopping() -> bool {
    STOPPING.load(std::sync::atomic::Ordering::Acquire)
}

/// Waits, without end, for the process to be ended by the stop signal that
/// came ([`stopping`]): what a thread does instead of writing more output.
pub fn wait_to_be_stopped() -> ! {
    loop {
        std::thread::park();
    }
}

static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

type LastWords = Box<dyn FnOnce() + Send>;

/// What to do on a stop signal, in the order given.
static LAST_WORDS: std::sync::Mutex<Vec<LastWords>> = std::sync::Mutex::new(Vec::new());

fn lock_last_words() -> std::sync::MutexGuard<'static, Vec<LastWords>> {
    LAST_WORDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs the last words given, the latest first, once.
fn speak_last_words() {
    STOPPING.store(true, std::sync::atomic::Ordering::Release);
    let last_words = std::mem::take(&mut *lock_last_words());
    for words in last_words.into_iter().rev() {
        words();
    }
}

#[cfg(unix)]
mod stop_signals {
    use std::sync::atomic::{AtomicI32, Ordering};

    /// The signals that ask the process to stop.
    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    /// The write end of the pipe the handler wakes the watcher through.
    static WAKE: AtomicI32 = AtomicI32::new(-1);

    /// Tells the watcher which signal came (every stop signal's number
    /// fits a byte).
    extern "C" fn on_stop_signal(signal: libc::c_int) {
        let _errno = super::super::platform::SavedErrno::save();
        let fd = WAKE.load(Ordering::Relaxed);
        if fd >= 0 {
            let byte = signal as u8;
            // SAFETY: write is async-signal-safe; the byte is valid for the
            // call. A full pipe (a second signal) loses nothing.
            unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
        }
    }

    /// Whether `signal` is ignored now.
    fn ignored(signal: libc::c_int) -> bool {
        // SAFETY: a zeroed sigaction is valid to receive the current one.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reads the disposition only.
        let read = unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } == 0;
        !read || current.sa_sigaction == libc::SIG_IGN
    }

    /// A watcher thread waits on a pipe that the handler writes the
    /// signal's number to (a handler may do little else), then gives every
    /// stop signal its default action back (so that a second one ends the
    /// process at once), speaks the last words and raises the signal that
    /// came. `false` if nothing was installed.
    pub(super) fn install() -> bool {
        let taken: Vec<libc::c_int> = SIGNALS.into_iter().filter(|&s| !ignored(s)).collect();
        if taken.is_empty() {
            return false;
        }
        let Some(fds) = super::super::platform::wake_pipe() else {
            return false;
        };
        let restored = taken.clone();
        let watcher =
            crate::memory::spawn("stop signals", crate::memory::DEFAULT_STACK, move || {
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
                for &signal in &restored {
                    // SAFETY: gives a signal taken its default action back.
                    unsafe { libc::signal(signal, libc::SIG_DFL) };
                }
                super::speak_last_words();
                // SAFETY: raises the signal that came, whose action is now the
                // default: it ends the process as it would have.
                unsafe { libc::raise(libc::c_int::from(byte)) };
            });
        if watcher.is_err() {
            // SAFETY: closes the two descriptors made above, used by no one.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            return false;
        }
        WAKE.store(fds[1], Ordering::Relaxed);
        // SAFETY: a zeroed sigaction with a handler of the right signature
        // and SA_RESTART (so that other threads' reads are not cut short).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            for &signal in &taken {
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
        true
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::input::platform::{errno_location, wake_pipe};

        /// The handler writes to a full pipe (a second Ctrl-C): the write
        /// fails with EAGAIN, and the code it interrupted still finds its
        /// own errno.
        #[test]
        fn the_handler_gives_errno_back() {
            let [read, write] = wake_pipe().expect("a pipe");
            let byte = 1u8;
            // SAFETY: writes one valid byte at a time, until full.
            while unsafe { libc::write(write, (&raw const byte).cast(), 1) } == 1 {}
            let before = WAKE.swap(write, Ordering::Relaxed);
            // SAFETY: the calling thread's own errno.
            unsafe { *errno_location() = libc::EDOM };
            on_stop_signal(libc::SIGINT);
            // SAFETY: as above.
            let errno = unsafe { *errno_location() };
            WAKE.store(before, Ordering::Relaxed);
            // SAFETY: closes the descriptors made above.
            unsafe {
                libc::close(read);
                libc::close(write);
            }
            assert_eq!(errno, libc::EDOM);
        }
    }
}

#[cfg(windows)]
mod stop_signals {
    use super::super::win32::{CTRL_BREAK_EVENT, CTRL_C_EVENT, SetConsoleCtrlHandler};

    /// Windows runs a console control handler on a thread of its own, so it
    /// may lock and write like any thread.
    unsafe extern "system" fn on_control(event: u32) -> i32 {
        if event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT {
            // Closing the console, logging off: the default handling.
            return 0;
        }
        super::speak_last_words();
        std::process::exit(130)
    }

    /// `false` if the handler could not be registered.
    pub(super) fn install() -> bool {
        // SAFETY: registers a handler of the signature Windows calls; it
        // stays valid for the life of the process.
        unsafe { SetConsoleCtrlHandler(Some(on_control), 1) != 0 }
    }
}

/// Keeps the allocator to one arena where it would reserve one per thread:
/// glibc gives each thread that allocates an arena of its own and reserves
/// 64 MiB of address space for each, which under a limit on address space
/// (`ulimit -v`) leaves too little for the buffers that hashing needs.
/// bt2sum allocates little on its hot paths. Call it before starting
/// threads; elsewhere it does nothing.
pub fn one_allocator_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Makes a write past the file-size limit (`ulimit -f`) fail with `EFBIG`
/// (`File too large`), which is reported and ends only what wrote, instead
/// of raising SIGXFSZ, which ends the process without a word. Elsewhere
/// (Windows has no such limit) it does nothing.
pub fn file_size_limit_is_an_error() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to ignore installs no code.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Whether standard error is a terminal that a progress bar can be drawn
/// on: on Unix one whose `TERM` takes cursor movements (set, and not
/// `dumb`); on Windows any console.
pub fn stderr_draws_bars() -> bool {
    use std::io::IsTerminal;
    let terminal = io::stderr().is_terminal();
    #[cfg(windows)]
    return terminal;
    #[cfg(not(windows))]
    return terminal && std::env::var_os("TERM").is_some_and(|term| term != "dumb");
}

/// How many hard links an open file has (`metadata`: its `fstat`).
pub fn hard_links(file: &File, metadata: &Metadata) -> io::Result<u64> {
    crate::beneath::links(file, metadata)
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

/// Which file a path names, whatever the path: two paths of one file (a
/// link, `.` and its full path) give equal ids.
///
/// On Unix the device and inode numbers; on Windows the volume serial
/// number and file index, read through a handle kept open with the id.
pub struct FileId(Id);

#[cfg(unix)]
#[derive(PartialEq, Eq)]
struct Id {
    device: u64,
    inode: u64,
}

#[cfg(windows)]
#[derive(PartialEq, Eq)]
struct Id(same_file::Handle);

impl FileId {
    /// The file at `path`, given what `fs::metadata` (or, for a link not
    /// to be followed, `fs::symlink_metadata`) said of it just now. On
    /// Unix the metadata says it all; on Windows the file is opened.
    pub fn of(path: &Path, metadata: &Metadata) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = path;
            Ok(FileId(Id {
                device: metadata.dev(),
                inode: metadata.ino(),
            }))
        }
        #[cfg(windows)]
        {
            let _ = metadata;
            same_file::Handle::from_path(path).map(|handle| FileId(Id(handle)))
        }
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
        return same_file::Handle::from_file(stdout)
            .ok()
            .map(|handle| FileId(Id(handle)));
    }

    /// Whether the file a directory lists as `entry` may be this one: a
    /// cheap test that rules most entries out without looking them up (on
    /// Unix, the inode number that the directory lists; Windows lists
    /// nothing that tells, so there every entry may be).
    pub fn may_be(&self, entry: &DirEntry) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirEntryExt;
            entry.ino() == self.0.inode
        }
        #[cfg(windows)]
        {
            let _ = entry;
            true
        }
    }
}

impl PartialEq for FileId {
    fn eq(&self, other: &FileId) -> bool {
        self.0 == other.0
    }
}

impl Eq for FileId {}
