//! Opening what bt2sum is to write, as `tar` and `rsync` open what they
//! extract (docs/scrub.md): a list may come from anywhere, and a tree may
//! hold links that anyone who can write in it made. Each directory on the
//! way is opened relative to the one before without following a link
//! (`openat`, `O_NOFOLLOW`; on Windows, held open without sharing the
//! right to delete it): a link swapped in at any point is met, not followed.
//! What is refused is a [`Refusal`]: a name outside the tree, a file of
//! several hard links or set-id, anything but a regular file.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use bt2sum::format::name::Name;
use bt2sum::sys::lock;

pub use platform::{Directory, links, without_setid};

/// Why a file was not opened to be written.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Its name is absolute, or climbs out with `..`.
    #[error(
        "its name {0}, and bt2sum writes only inside the directory it works in \
         (--absolute-names allows it)"
    )]
    Outside(&'static str),
    /// The file is a symbolic link (or, on Windows, a junction or other
    /// reparse point), or a directory on its way, shown, is.
    #[error("it is a symbolic link, which bt2sum does not write through")]
    Link,
    #[error("{0} is a symbolic link on its way, which bt2sum does not write through")]
    LinkOnTheWay(String),
    #[error("it is not a regular file")]
    NotRegular,
    #[error(
        "it has {0} hard links, and writing it would change the file of every one, some \
         perhaps outside the directory bt2sum works in (--absolute-names allows it)"
    )]
    Linked(u64),
    #[error(
        "it is set-user-ID or set-group-ID, which bt2sum does not write (--repair-setid \
         allows it)"
    )]
    SetId,
    #[error("cannot be written: {}", bt2sum::plain_message(.0))]
    Io(#[from] io::Error),
}

/// Opens the file at `path` for reading and writing, as the module
/// documentation says.
pub fn open_to_write(path: &Path, any_path: bool, setid: bool) -> Result<File, Refusal> {
    allowed(path, any_path)?;
    let (directory, name) = Directory::holding(None, path, false)?;
    let file = directory.open(&name, true)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular);
    }
    if !setid && without_setid(&metadata.permissions()).is_some() {
        return Err(Refusal::SetId);
    }
    let links = links(&file, &metadata)?;
    if links > 1 && !any_path {
        return Err(Refusal::Linked(links));
    }
    Ok(file)
}

/// Whether the file `path` names may be written: any may with `any_path`.
pub fn allowed(path: &Path, any_path: bool) -> Result<(), Refusal> {
    if !any_path {
        for component in path.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {
                    return Err(Refusal::Outside("is absolute"));
                }
                Component::ParentDir => return Err(Refusal::Outside("climbs out with '..'")),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Opens (or creates) the file at `path` as [`open_to_write`] does any
/// name: the ledger.
pub fn open_or_create(path: &Path) -> Result<File, Refusal> {
    match open_to_write(path, true, false) {
        Err(Refusal::Io(error)) if error.kind() == io::ErrorKind::NotFound => {
            let (directory, name) = Directory::holding(None, path, false)?;
            Ok(directory.create_new(&name)?)
        }
        opened => opened,
    }
}

/// Opens a list to rewrite in place (`--update`) for reading: its
/// directory, that directory's path (for messages), its name there, and the
/// file. A link to a list is followed to its target, each step again
/// without following a link on the way; a list that is not a regular file
/// is refused before it is read (a FIFO would wait for a writer).
pub fn open_list(path: &Path) -> Result<(Directory, PathBuf, OsString, File), Refusal> {
    let (mut directory, mut name) = Directory::holding(None, path, false)?;
    let parent = |path: &Path| match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut directory_path = parent(path);
    // (As the system follows links: forty at most.)
    for _ in 0..40 {
        match directory.open(&name, false) {
            Ok(file) if !file.metadata()?.is_file() => return Err(Refusal::NotRegular),
            Ok(file) => return Ok((directory, directory_path, name, file)),
            Err(Refusal::Link) => {
                let target = directory.read_link(&name)?;
                (directory, name) = Directory::holding(Some(&directory), &target, false)?;
                directory_path = parent(&directory_path.join(target));
            }
            Err(refusal) => return Err(refusal),
        }
    }
    Err(io::Error::other("Too many levels of symbolic links").into())
}

/// The temporary files to remove on a stop signal.
static TEMPORARIES: Mutex<Vec<(u64, Directory, OsString)>> = Mutex::new(Vec::new());

/// A file bt2sum writes beside the one it replaces or restores, then
/// renames into place: removed, by name in its directory, when dropped
/// first or when a stop signal comes.
pub struct Temporary {
    /// Open until renamed (Windows renames no open file).
    file: Option<File>,
    token: u64,
}

impl Temporary {
    /// A new file `PREFIXPID-NUMBER` in `directory`, readable and writable
    /// by its owner only.
    pub fn create(directory: &Directory, prefix: &str) -> io::Result<Temporary> {
        static REMOVED_ON_STOP: Once = Once::new();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        REMOVED_ON_STOP.call_once(|| {
            crate::cli::sys::on_stop_signal(|| {
                for (_, directory, name) in lock(&TEMPORARIES).drain(..) {
                    let _ = directory.remove(&name);
                }
            })
        });
        // (Made with the lock held: a stop signal meanwhile waits to remove
        // it. None is made once a stop signal came: its last words may have
        // run already.)
        let mut held = lock(&TEMPORARIES);
        if crate::cli::sys::stopping() {
            drop(held);
            crate::cli::sys::wait_to_be_stopped();
        }
        // (Not tempfile's names: an audit passes over this shape only.)
        let since = std::time::UNIX_EPOCH.elapsed().unwrap_or_default();
        for attempt in 0..100u32 {
            let number = since.subsec_nanos().wrapping_add(attempt);
            let name = OsString::from(format!("{prefix}{}-{number}", std::process::id()));
            match directory.create_new(&name) {
                Ok(file) => {
                    let token = NEXT.fetch_add(1, Ordering::Relaxed);
                    held.push((token, directory.clone(), name));
                    let file = Some(file);
                    return Ok(Temporary { file, token });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
        Err(io::ErrorKind::AlreadyExists.into())
    }

    pub fn file(&self) -> &File {
        self.file.as_ref().expect("open until renamed")
    }

    /// Renames it to `target` in its directory: over a file of that name
    /// (`replace`), or else only where there is none (`AlreadyExists`).
    pub fn persist(mut self, target: &OsStr, replace: bool) -> io::Result<()> {
        self.settle(|directory, name| match replace {
            true => directory.rename(name, target),
            // (A second name, then the first removed: no system call of
            // every Unix renames without replacing.)
            false => directory
                .link(name, target)
                .and_then(|()| directory.remove(name)),
        })
    }

    /// Closes the file and does `done` with it by name in its directory
    /// (unless a stop signal removed it already): once that succeeds, it is
    /// no longer removed on a stop signal, nor when dropped.
    fn settle(
        &mut self,
        done: impl FnOnce(&Directory, &OsStr) -> io::Result<()>,
    ) -> io::Result<()> {
        self.file = None;
        let mut held = lock(&TEMPORARIES);
        if let Some(at) = held.iter().position(|(token, ..)| *token == self.token) {
            let (_, directory, name) = &held[at];
            done(directory, name)?;
            held.swap_remove(at);
        }
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        // (One that cannot be removed is left for a stop signal to try again.)
        let _ = self.settle(|directory, name| directory.remove(name));
    }
}

impl Directory {
    /// The directory holding the file `path` names, walked from `from` (or
    /// the working directory) as [`open_to_write`] walks it, and the file's
    /// name in it; with `make`, directories not there are made on the way.
    /// It takes `..` and a root as given: a name from a list is
    /// [`allowed`] first.
    pub fn holding(
        from: Option<&Directory>,
        path: &Path,
        make: bool,
    ) -> Result<(Directory, OsString), Refusal> {
        let parts: Vec<Component<'_>> = path
            .components()
            .filter(|part| *part != Component::CurDir)
            .collect();
        let Some((Component::Normal(name), way)) = parts.split_last() else {
            return Err(Refusal::NotRegular);
        };
        // (A path from the root starts there: at its prefix and root.)
        let is_root =
            |part: &&Component<'_>| matches!(part, Component::Prefix(_) | Component::RootDir);
        let rooted = way.iter().take_while(is_root).count();
        let root: PathBuf = way[..rooted].iter().collect();
        let mut directory = match (from, root.as_os_str().is_empty()) {
            (Some(from), true) => from.clone(),
            (None, true) => Directory::start(Path::new("."))?,
            (_, false) => Directory::start(&root)?,
        };
        for (index, part) in way.iter().enumerate().skip(rooted) {
            let name = part.as_os_str();
            let child = match directory.child(name) {
                Err(Refusal::Io(error)) if make && error.kind() == io::ErrorKind::NotFound => {
                    directory.make_child(name)?;
                    directory.child(name)
                }
                child => child,
            };
            directory = child.map_err(|refusal| match refusal {
                Refusal::Link => {
                    let link: PathBuf = way[..=index].iter().collect();
                    Refusal::LinkOnTheWay(Name::of_path_lossy(link.as_os_str()).shown())
                }
                refusal => refusal,
            })?;
        }
        Ok((directory, name.to_os_string()))
    }
}

#[cfg(unix)]
mod platform {
    use std::ffi::OsStr;
    use std::fs::{File, Permissions};
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use bt2sum::sys::FileId;
    use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};

    use super::Refusal;

    pub fn links(_: &File, metadata: &std::fs::Metadata) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(metadata.nlink())
    }

    /// The permissions without their set-user-ID and set-group-ID bits, if
    /// they have either.
    pub fn without_setid(permissions: &Permissions) -> Option<Permissions> {
        use std::os::unix::fs::PermissionsExt;
        let mode = permissions.mode();
        (mode & 0o6000 != 0).then(|| Permissions::from_mode(mode & 0o1777))
    }

    #[derive(Clone)]
    pub struct Directory(Arc<OwnedFd>);

    impl Directory {
        pub(super) fn start(path: &Path) -> io::Result<Directory> {
            let flags = OFlags::DIRECTORY | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(CWD, path, flags, Mode::empty())?;
            Ok(Directory(Arc::new(fd)))
        }

        pub(super) fn child(&self, name: &OsStr) -> Result<Directory, Refusal> {
            let fd = self.open_entry(name, OFlags::DIRECTORY)?;
            Ok(Directory(Arc::new(fd)))
        }

        /// (The umask applies.)
        pub(super) fn make_child(&self, name: &OsStr) -> io::Result<()> {
            let mode = Mode::from_bits_truncate(0o777);
            Ok(rustix::fs::mkdirat(&self.0, name, mode)?)
        }

        /// The file `name`, not through a link; a FIFO is opened without
        /// waiting for a writer (and left for the caller to refuse).
        pub fn open(&self, name: &OsStr, write: bool) -> Result<File, Refusal> {
            let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
            let fd = self.open_entry(name, access | OFlags::NONBLOCK | OFlags::NOCTTY)?;
            // (Clearing `O_NONBLOCK` changes nothing for a regular file, and
            // keeps any other from surprising its reader.)
            let flags = rustix::fs::fcntl_getfl(&fd).map_err(|error| Refusal::Io(error.into()))?;
            let _ = rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK);
            Ok(File::from(fd))
        }

        fn open_entry(&self, name: &OsStr, flags: OFlags) -> Result<OwnedFd, Refusal> {
            let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rustix::fs::openat(&self.0, name, flags, Mode::empty()) {
                Ok(fd) => Ok(fd),
                Err(_) if self.is_link(name) => Err(Refusal::Link),
                Err(error) => Err(Refusal::Io(error.into())),
            }
        }

        pub(super) fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
            use std::os::unix::ffi::OsStringExt;
            let target = rustix::fs::readlinkat(&self.0, name, Vec::new())?;
            Ok(std::ffi::OsString::from_vec(target.into_bytes()).into())
        }

        /// A new file `name`, readable and writable by its owner only.
        pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
            let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
            let mode = Mode::RUSR | Mode::WUSR;
            let fd = rustix::fs::openat(&self.0, name, flags | OFlags::CLOEXEC, mode)?;
            Ok(File::from(fd))
        }

        pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
            Ok(rustix::fs::renameat(&self.0, from, &self.0, to)?)
        }

        pub fn remove(&self, name: &OsStr) -> io::Result<()> {
            Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::empty())?)
        }

        pub(super) fn link(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
            Ok(rustix::fs::linkat(
                &self.0,
                from,
                &self.0,
                to,
                AtFlags::empty(),
            )?)
        }

        /// Flushes the directory's entries, so that a rename survives a crash.
        pub fn sync(&self) -> io::Result<()> {
            Ok(rustix::fs::fsync(&self.0)?)
        }

        pub fn id(&self) -> io::Result<FileId> {
            let file = File::from(self.0.try_clone()?);
            FileId::of(&file, &file.metadata()?)
        }

        fn is_link(&self, name: &OsStr) -> bool {
            rustix::fs::statat(self.0.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
        }
    }
}

#[cfg(windows)]
mod platform {
    use std::ffi::OsStr;
    use std::fs::{File, OpenOptions, Permissions};
    use std::io;
    use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use super::Refusal;
    use bt2sum::sys::FileId;

    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
    const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
    const FILE_SHARE_READ: u32 = 1;
    const FILE_SHARE_WRITE: u32 = 2;
    const FILE_SHARE_DELETE: u32 = 4;

    pub fn links(file: &File, _: &std::fs::Metadata) -> io::Result<u64> {
        winapi_util::file::information(file).map(|information| information.number_of_links())
    }

    pub fn without_setid(_: &Permissions) -> Option<Permissions> {
        None
    }

    /// A directory, by its path, with every directory on the way held
    /// open without the right to delete shared: none can be renamed or
    /// removed while it is held.
    #[derive(Clone)]
    pub struct Directory {
        path: PathBuf,
        /// Its handle, after those of the directories on its way.
        held: Vec<Arc<File>>,
    }

    impl Directory {
        pub(super) fn start(path: &Path) -> Result<Directory, Refusal> {
            Directory::at(path.to_path_buf(), Vec::new())
        }

        /// The directory at `path`, held: below the start (`up`, the
        /// handles on its way), not through a link.
        fn at(path: PathBuf, mut up: Vec<Arc<File>>) -> Result<Directory, Refusal> {
            let handle = OpenOptions::new()
                .read(true)
                .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
                .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
                .open(&path)?;
            if !up.is_empty() && is_link(&handle)? {
                return Err(Refusal::Link);
            }
            up.push(Arc::new(handle));
            Ok(Directory { path, held: up })
        }

        pub(super) fn child(&self, name: &OsStr) -> Result<Directory, Refusal> {
            Directory::at(self.path.join(name), self.held.clone())
        }

        pub(super) fn make_child(&self, name: &OsStr) -> io::Result<()> {
            std::fs::create_dir(self.path.join(name))
        }

        pub fn open(&self, name: &OsStr, write: bool) -> Result<File, Refusal> {
            let file = OpenOptions::new()
                .read(true)
                .write(write)
                .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
                .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
                .open(self.path.join(name))?;
            match is_link(&file)? {
                true => Err(Refusal::Link),
                false => Ok(file),
            }
        }

        pub(super) fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
            std::fs::read_link(self.path.join(name))
        }

        pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(self.path.join(name))
        }

        pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
            std::fs::rename(self.path.join(from), self.path.join(to))
        }

        pub fn remove(&self, name: &OsStr) -> io::Result<()> {
            std::fs::remove_file(self.path.join(name))
        }

        pub(super) fn link(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
            std::fs::hard_link(self.path.join(from), self.path.join(to))
        }

        /// A rename is as durable as the system makes it.
        pub fn sync(&self) -> io::Result<()> {
            Ok(())
        }

        pub fn id(&self) -> io::Result<FileId> {
            FileId::of_path(&self.path)
        }
    }

    /// Whether a file opened as itself (not what it names) is a link: a
    /// reparse point.
    fn is_link(file: &File) -> io::Result<bool> {
        Ok(file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0)
    }
}
