//! Opening a file that bt2sum is to write, as `tar` and `rsync` open what
//! they extract: from the directory bt2sum works in, one component at a
//! time, never through a symbolic link, and only a regular file.
//!
//! A list names the files a repair writes, and a list may come from
//! anywhere; a tree may hold links that a user who can write in it made.
//! So a name that is absolute or climbs out with `..` is refused (unless
//! the user allows it: [`Names::AnyPath`], `--absolute-names`), and so is a
//! file with several hard links, which may have names outside; each
//! directory on the way is opened relative to the one before without
//! following a link (`openat` with `O_NOFOLLOW`): a link swapped in at any
//! point is met, not followed. A set-user-ID or set-group-ID file is
//! refused unless allowed. The caller then compares the open file with
//! what it checked (its `Stamp`), through the descriptor it writes
//! with.
//!
//! On Windows, where no such call exists, each directory on the way is
//! looked at first (a junction or link is refused) and the file is opened
//! without following a reparse point; a link swapped in between the look
//! and the open is not caught there, but the identity comparison that
//! follows catches a file swapped for another.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Component, Path};

/// Which names a list may give a file to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// Relative names that stay inside the tree (no `..`), of files with
    /// one hard link.
    Inside,
    /// Absolute names and `..` too (`--absolute-names`, as tar's), and
    /// files with several hard links.
    AnyPath,
}

/// Why a file was not opened to be written.
#[derive(Debug)]
pub enum Refusal {
    /// The name is absolute.
    Absolute,
    /// The name climbs out of a directory with `..`.
    Climbs,
    /// A component of the name, shown, is a symbolic link (or, on Windows,
    /// a junction or other reparse point).
    Link(String),
    /// The file is not a regular file.
    NotRegular,
    /// The file has this many hard links.
    Linked(u64),
    /// The file is set-user-ID or set-group-ID.
    SetId,
    /// Opening failed.
    Io(io::Error),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Absolute => f.write_str(
                "its name is absolute, and bt2sum writes only inside the directory it works in \
                 (--absolute-names allows it)",
            ),
            Refusal::Climbs => f.write_str(
                "its name climbs out with '..', and bt2sum writes only inside the directory it \
                 works in (--absolute-names allows it)",
            ),
            Refusal::Link(at) if at.is_empty() => {
                f.write_str("it is a symbolic link, which bt2sum does not write through")
            }
            Refusal::Link(at) => write!(
                f,
                "{at} is a symbolic link on its way, which bt2sum does not write through"
            ),
            Refusal::NotRegular => f.write_str("it is not a regular file"),
            Refusal::Linked(links) => write!(
                f,
                "it has {links} hard links, and writing it would change the file of every one, \
                 some perhaps outside the directory bt2sum works in (--absolute-names allows it)"
            ),
            Refusal::SetId => f.write_str(
                "it is set-user-ID or set-group-ID, which bt2sum does not write \
                 (--repair-setid allows it)",
            ),
            Refusal::Io(error) => {
                write!(f, "cannot be written: {}", bt2sum::plain_message(error))
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// Opens the file at `path`, relative to the current directory, for reading
/// and writing, as the module documentation says: refused if `names` does
/// not allow the name, if a component is a link, if it is not a regular
/// file, or if it is set-id and `setid` is false.
pub fn open_to_write(path: &Path, names: Names, setid: bool) -> Result<File, Refusal> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir if names == Names::Inside => {
                return Err(Refusal::Absolute);
            }
            Component::ParentDir if names == Names::Inside => return Err(Refusal::Climbs),
            Component::CurDir => {}
            component => parts.push(component),
        }
    }
    let file = platform::open(&parts)?;
    let metadata = file.metadata().map_err(Refusal::Io)?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular);
    }
    if !setid && platform::is_setid(&metadata) {
        return Err(Refusal::SetId);
    }
    let links = links(&file, &metadata).map_err(Refusal::Io)?;
    if links > 1 && names == Names::Inside {
        return Err(Refusal::Linked(links));
    }
    Ok(file)
}

/// How many hard links a file has.
pub(crate) fn links(file: &File, metadata: &std::fs::Metadata) -> io::Result<u64> {
    platform::links(file, metadata)
}

/// The components shown up to the `count`-th, for a message.
fn shown(parts: &[Component<'_>], count: usize) -> String {
    let path: std::path::PathBuf = parts[..count].iter().collect();
    bt2sum::format::name::Name::of_path_lossy(path.as_os_str()).shown()
}

#[cfg(unix)]
mod platform {
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Component;

    use super::{Refusal, shown};

    /// Whether a file is set-user-ID or set-group-ID.
    pub(super) fn is_setid(metadata: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::PermissionsExt;
        metadata.permissions().mode() & 0o6000 != 0
    }

    /// How many hard links a file has.
    pub(super) fn links(_: &File, metadata: &std::fs::Metadata) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(metadata.nlink())
    }

    /// Opens the file the components name, each directory relative to the
    /// one before, none through a link.
    pub(super) fn open(parts: &[Component<'_>]) -> Result<File, Refusal> {
        let mut directory =
            open_at(libc::AT_FDCWD, c".", libc::O_DIRECTORY).map_err(Refusal::Io)?;
        for (index, part) in parts.iter().enumerate() {
            let name: &[u8] = match part {
                Component::RootDir => b"/",
                Component::ParentDir => b"..",
                Component::Normal(name) => name.as_bytes(),
                Component::CurDir | Component::Prefix(_) => continue,
            };
            let name =
                CString::new(name).map_err(|_| Refusal::Io(io::ErrorKind::InvalidInput.into()))?;
            let last = index + 1 == parts.len();
            // (A FIFO is opened without waiting for a writer, then refused
            // as not regular.)
            let flags = if last {
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_NOCTTY
            } else {
                libc::O_DIRECTORY
            };
            let opened = match part {
                Component::RootDir => open_at(libc::AT_FDCWD, c"/", flags),
                _ => open_at(directory.as_raw_fd(), &name, flags | libc::O_NOFOLLOW),
            };
            directory = match opened {
                Ok(fd) => fd,
                Err(error) if is_link(&directory, &name) => {
                    drop(error);
                    return Err(Refusal::Link(match last {
                        true => String::new(),
                        false => shown(parts, index + 1),
                    }));
                }
                Err(error) => return Err(Refusal::Io(error)),
            };
        }
        if parts.is_empty() {
            return Err(Refusal::NotRegular);
        }
        let file = File::from(directory);
        // SAFETY: `fcntl` on a descriptor this function owns; clearing
        // `O_NONBLOCK` changes nothing for a regular file, and keeps any
        // other from surprising its reader.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
        Ok(file)
    }

    fn open_at(at: libc::c_int, name: &std::ffi::CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
        loop {
            // SAFETY: `name` is a NUL-terminated string that lives for the
            // call; `at` is a directory descriptor the caller holds open, or
            // AT_FDCWD.
            let fd = unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_CLOEXEC) };
            if fd >= 0 {
                // SAFETY: `openat` returned a new descriptor that nothing
                // else owns.
                return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }

    /// Whether `name` in `directory` is a symbolic link.
    fn is_link(directory: &OwnedFd, name: &std::ffi::CStr) -> bool {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `stat` has room for the answer, `name` is NUL-terminated,
        // and the descriptor is open.
        let done = unsafe {
            libc::fstatat(
                directory.as_raw_fd(),
                name.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        // SAFETY: `fstatat` succeeded, so it filled `stat` in.
        done == 0 && unsafe { stat.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}

#[cfg(windows)]
mod platform {
    use std::fs::{File, OpenOptions};
    use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
    use std::path::{Component, PathBuf};

    use super::{Refusal, shown};

    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;

    /// Windows has no set-id bits.
    pub(super) fn is_setid(_: &std::fs::Metadata) -> bool {
        false
    }

    /// How many hard links a file has.
    pub(super) fn links(file: &File, _: &std::fs::Metadata) -> std::io::Result<u64> {
        winapi_util::file::information(file).map(|information| information.number_of_links())
    }
    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;

    /// Opens the file the components name, refusing a reparse point on the
    /// way (each directory looked at before the next is opened).
    pub(super) fn open(parts: &[Component<'_>]) -> Result<File, Refusal> {
        let mut path = PathBuf::new();
        for (index, part) in parts.iter().enumerate() {
            path.push(part);
            if matches!(part, Component::Prefix(_) | Component::RootDir) {
                continue;
            }
            let metadata = std::fs::symlink_metadata(&path).map_err(Refusal::Io)?;
            if metadata.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
                return Err(Refusal::Link(match index + 1 == parts.len() {
                    true => String::new(),
                    false => shown(parts, index + 1),
                }));
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(&path)
            .map_err(Refusal::Io)?;
        let metadata = file.metadata().map_err(Refusal::Io)?;
        if metadata.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(Refusal::Link(String::new()));
        }
        Ok(file)
    }
}
