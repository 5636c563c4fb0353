//! The system's calls that several places make, written once, for the
//! library and the command: positional reads and writes (Unix's `pread`;
//! Windows' `seek_read`, which moves the offset of a handle nothing here
//! reads in turn), the page size, the limits a budget is computed from,
//! which file an open file is, and a lock that a panic elsewhere does not
//! poison.

use std::fs::File;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The mutex's guard, even if a thread panicked holding it: what it guards
/// is only ever left whole.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which file an open file is: on Unix its device and inode, on Windows its
/// volume's serial number and its index.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct FileId(u64, u64);

impl FileId {
    /// The open file's identity (Unix: from `metadata`, its `fstat`).
    pub fn of(file: &File, metadata: &std::fs::Metadata) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            let _ = file;
            Ok(FileId::of_unix(metadata))
        }
        #[cfg(windows)]
        {
            let _ = metadata;
            let information = winapi_util::file::information(file)?;
            Ok(FileId(
                information.volume_serial_number(),
                information.file_index(),
            ))
        }
    }

    /// The identity of what `path` names (a link followed).
    pub fn of_path(path: &std::path::Path) -> io::Result<FileId> {
        #[cfg(unix)]
        return Ok(FileId::of_unix(&std::fs::metadata(path)?));
        #[cfg(windows)]
        {
            // (Directories open only with backup semantics.)
            use std::os::windows::fs::OpenOptionsExt;
            let file = std::fs::OpenOptions::new()
                .access_mode(0)
                .custom_flags(0x0200_0000)
                .open(path)?;
            FileId::of(&file, &file.metadata()?)
        }
    }

    /// The identity `metadata` (a `stat`, a directory entry's) gives, on
    /// Unix, where nothing need be opened to know it.
    #[cfg(unix)]
    pub fn of_unix(metadata: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId(metadata.dev(), metadata.ino())
    }

    /// The inode (Unix), which a directory's listing gives without a look
    /// at the file.
    pub fn inode(&self) -> u64 {
        self.1
    }
}

/// Reads as much of `buf.len()` bytes of `file` from `offset` as it holds,
/// retrying short and interrupted reads; returns how many.
pub fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let at = offset + filled as u64;
        #[cfg(unix)]
        let read = std::os::unix::fs::FileExt::read_at(file, &mut buf[filled..], at);
        #[cfg(windows)]
        let read = std::os::windows::fs::FileExt::seek_read(file, &mut buf[filled..], at);
        match read {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    if read_full_at(file, buf, offset)? < buf.len() {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        #[cfg(unix)]
        let written = std::os::unix::fs::FileExt::write_at(file, buf, offset);
        #[cfg(windows)]
        let written = std::os::windows::fs::FileExt::seek_write(file, buf, offset);
        match written {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(count) => {
                buf = &buf[count..];
                offset += count as u64;
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(unix)]
pub fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| {
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    })
}

/// The address space a limit (`ulimit -v`) leaves now, if one is set
/// (Linux; elsewhere `None`).
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
        Some((limit.rlim_cur as usize).saturating_sub(pages * page_size()))
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Under a low limit on open files (256 or less), the limit and how many
/// descriptors were free when first asked (the command asks as it
/// starts); `None` where the limit is higher (or on Windows).
pub fn descriptors() -> Option<(u64, usize)> {
    static AT_START: std::sync::OnceLock<Option<(u64, usize)>> = std::sync::OnceLock::new();
    *AT_START.get_or_init(|| {
        #[cfg(unix)]
        {
            // SAFETY: reads the limit into a zeroed struct.
            let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
            if !known || limit.rlim_cur > 256 {
                return None;
            }
            let limit = limit.rlim_cur as libc::c_int;
            // SAFETY: F_GETFD reads a descriptor's flags; it fails on a
            // closed one.
            let held = (0..limit)
                .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1)
                .count();
            Some((limit as u64, (limit as usize).saturating_sub(held)))
        }
        #[cfg(not(unix))]
        None
    })
}
