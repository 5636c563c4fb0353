//! What opening and reading need from the operating system: what an open
//! file is, opening a FIFO without waiting for its writer, and wider pipes.
//! (Windows has no FIFO that opening waits on, and its pipes keep their
//! size: there the file is opened as it is, and read in large blocks.)

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// What `fstat` says of an open file.
#[cfg(unix)]
pub(super) fn metadata(file: &File) -> io::Result<Option<Metadata>> {
    file.metadata().map(Some)
}

/// What the system says of an open file; `None` for a pipe or a character
/// device (a console, `NUL`), or a file that cannot say: a stream, read to
/// its end. (`File::metadata`, `GetFileInformationByHandle`, fails on a
/// pipe with "Incorrect function", so it is not asked.)
#[cfg(windows)]
pub(super) fn metadata(file: &File) -> io::Result<Option<Metadata>> {
    use std::os::windows::io::{AsRawHandle, RawHandle};

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetFileType(file: RawHandle) -> u32;
    }
    const FILE_TYPE_DISK: u32 = 1;
    // SAFETY: GetFileType only reads the type of a handle that is open for
    // the call (it answers FILE_TYPE_UNKNOWN for one it cannot tell).
    if unsafe { GetFileType(file.as_raw_handle()) } != FILE_TYPE_DISK {
        return Ok(None);
    }
    // A disk file's handle that cannot say what it is (Wine's standard
    // input redirected from a Unix file answers "Invalid handle") is still
    // readable: it is read to its end as a stream, without the size or
    // the check for changes.
    Ok(file.metadata().ok())
}

/// Opens `path` for reading.
#[cfg(windows)]
pub(super) fn open_for_reading(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Nothing to wait for.
#[cfg(windows)]
pub(super) fn wait_for_writer(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Reads already wait.
#[cfg(windows)]
pub(super) fn wait_when_reading(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Opens `path` for reading without waiting: opening a FIFO waits for a
/// writer, and a FIFO is opened where inputs are prepared, on a pool thread
/// that others may wait for. The file is then non-blocking until
/// [`wait_when_reading`] (after [`wait_for_writer`] for a FIFO).
#[cfg(unix)]
pub(super) fn open_for_reading(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Waits until a FIFO opened by [`open_for_reading`] has had a writer: before
/// that, a read would find it at its end. Anything else returns at once.
#[cfg(unix)]
pub(super) fn wait_for_writer(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileTypeExt;
    if !file.metadata()?.file_type().is_fifo() {
        return Ok(());
    }
    let mut waiting = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // A FIFO polls readable once a writer has written, and hung up once a
    // writer has come and gone; until then poll waits.
    loop {
        // SAFETY: one valid pollfd, for a descriptor open for the call.
        if unsafe { libc::poll(&mut waiting, 1, -1) } >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Makes reads of a file opened by [`open_for_reading`] wait for data again.
#[cfg(unix)]
pub(super) fn wait_when_reading(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL only read and set the status flags of a
    // descriptor that is open for the calls.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Asks for a bigger buffer on a pipe or FIFO (64 KiB by default), so that
/// the writer and bt2sum wake each other less often. Best effort: refused or
/// not a pipe, nothing changes.
#[cfg(target_os = "linux")]
pub(super) fn widen_pipe(file: &File) {
    use crate::engine::tuning;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileTypeExt;
    if file.metadata().is_ok_and(|meta| meta.file_type().is_fifo()) {
        // SAFETY: F_SETPIPE_SZ takes an int and only resizes the pipe's
        // buffer; the descriptor is valid for the life of `file`.
        unsafe {
            libc::fcntl(
                file.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                tuning::PIPE_SIZE as libc::c_int,
            )
        };
    }
}

/// Pipes keep their size where it cannot be changed.
#[cfg(not(target_os = "linux"))]
pub(super) fn widen_pipe(_file: &File) {}
