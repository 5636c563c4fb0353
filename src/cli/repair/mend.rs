//! Mending a file's damaged leaves from a good copy of it (`--repair-from`).
//!
//! A leaf listing holds each leaf's digest, so one leaf fetched again can be
//! proved good before it is written. For each leaf a check found failing,
//! [`Mender::mend`]:
//!
//! 1. hashes the leaf's bytes in the file as the listing places them: a
//!    leaf that verifies there failed only because the file's length
//!    changed, and is left alone;
//! 2. reads the same byte range from the copy and verifies it against the
//!    listed digest: bytes that do not verify are never written;
//! 3. writes them at the leaf's offset and syncs the file;
//! 4. reads the leaf back from the file and verifies it again.
//!
//! It never makes a file worse. Good leaves are never written. A file cut
//! short is extended only by leaves that verify, one after another: a leaf
//! that starts past the file's end is not written, which would leave a
//! hole. A file longer than listed is cut to its listed length only when
//! asked ([`Mender::settle_length`]). A kill
//! while a leaf is being written leaves it part as it was and part as the
//! copy has it: every byte written is the listed file's own, so the leaf is
//! no further from good than before, and mending again finishes it.
//!
//! The file is opened as `tar` and `rsync` open what they extract: by a
//! name inside the tree (unless [`Rules::names`] allows any), without
//! following a symbolic link, only a regular file, not set-id (unless
//! [`Rules::setid`] allows it); and only if it is still the file the check
//! saw ([`Mender::open`] compares its [`Stamp`]). Every write goes through
//! that one descriptor. The file keeps its mode and owner, and its access
//! time; its change time is that of any write, and once it verifies whole
//! the caller puts its modification time back ([`set_modified`]), so that
//! its stat line holds. A set-id bit the system clears on a write is not
//! set again.
//!

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cli::beneath::{Refusal, Temporary};
use crate::cli::plan::Names;
use bt2sum::format::stat::Mtime;
use bt2sum::leaf_digest;
use bt2sum::plain_message;
use bt2sum::sys::{FileId, read_exact_at, write_all_at};
use bt2sum::{Digest, LastNode, Stamp, TreeParams};

/// Where the good copies are, and what mending may do.
pub struct Mender {
    /// A directory holding the copies under the names the lists give, or
    /// one file: the copy of the one file mended.
    copy: PathBuf,
    copy_is_dir: bool,
    rules: Rules,
    /// The file the single copy was first used for.
    single_copy_of: RefCell<Option<PathBuf>>,
}

/// What mending may do beyond writing verified leaves inside the tree.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// Whether a file longer than listed is cut to its listed length.
    pub truncate: bool,
    /// Which names may be written: inside the tree only, or any.
    pub names: Names,
    /// Whether set-user-ID and set-group-ID files may be written.
    pub setid: bool,
}

/// What became of one failing leaf.
#[derive(Debug)]
pub enum Mend {
    /// Read from the copy, verified, written and verified again in the
    /// file.
    Repaired,
    /// Its bytes in the file verify where the listing places them: it
    /// failed only because the file's length changed. Not written.
    Intact,
    /// The copy's bytes for it do not verify either. Not written.
    CopyDiffers,
    /// The copy ends before the leaf does. Not written.
    CopyShort,
    /// Reading it from the copy failed. Not written.
    CopyUnreadable(io::Error),
    /// It starts past the file's end (a leaf before it could not be
    /// mended, or comes later): writing it would leave a hole. Not
    /// written.
    AfterAGap,
    /// Writing it to the file, or reading it back, failed; or it does not
    /// verify once written (the storage does not keep what it is given).
    WriteFailed(io::Error),
}

impl Mend {
    /// Whether the leaf verifies in the file now.
    pub fn is_good(&self) -> bool {
        matches!(self, Mend::Repaired | Mend::Intact)
    }
}

/// The file's length once its leaves are mended.
#[derive(Debug)]
pub enum Length {
    /// As listed.
    AsListed,
    /// It was longer than listed, and was cut to the listed length.
    Truncated {
        /// Its length before.
        was: u64,
    },
    /// It is longer than listed, and was left so (not asked to cut it).
    Longer {
        /// Its length.
        is: u64,
    },
    /// It is longer than listed, and cutting it failed.
    NotCut {
        /// Its length.
        is: u64,
        /// Why it could not be cut.
        error: io::Error,
    },
    /// It is still shorter than listed: a leaf it lacks could not be
    /// mended.
    Shorter {
        /// Its length.
        is: u64,
    },
}

/// Why a file could not be mended at all (none of its leaves was written).
#[derive(Debug, thiserror::Error)]
pub enum Unmendable {
    /// The file's length cannot be read or set.
    #[error("cannot be written: {}", plain_message(.0))]
    File(io::Error),
    /// The file is not opened to be written ([`Refusal`]).
    #[error(transparent)]
    Refused(Refusal),
    /// The file is not the one the check saw, or changed since (its
    /// identity, size or times differ).
    #[error("it changed since it was checked (or was replaced): not written; check it again")]
    Changed,
    /// The copy cannot be opened.
    #[error("its copy {} cannot be read: {}", path.display(), plain_message(error))]
    Copy {
        /// Where the copy was looked for.
        path: PathBuf,
        /// Why it could not be opened.
        error: io::Error,
    },
    /// The copy is the file itself.
    #[error("its copy {} is the file itself", path.display())]
    CopyIsTheFile {
        /// The copy's path.
        path: PathBuf,
    },
    /// The copy named is one file, and it was taken for another file
    /// already.
    #[error(
        "the copy given is one file, the copy of {}: give a directory of copies",
        first.display()
    )]
    CopyIsOneFile {
        /// The file it is the copy of.
        first: PathBuf,
    },
    /// A missing file's copy is not what its checksum line says.
    #[error("its copy {} does not match its checksum line: not written", path.display())]
    CopyDiffers {
        /// The copy's path.
        path: PathBuf,
    },
    /// A file of its name appeared while it was restored.
    #[error("a file of its name appeared meanwhile: left as it is")]
    Appeared,
}

impl Mender {
    /// Mends from `copy`: a directory holding the copies under the names
    /// the lists give (an absolute name under it as a relative one), or
    /// the copy of the one file to mend, as `rules` allow.
    pub fn new(copy: PathBuf, rules: Rules) -> Mender {
        let copy_is_dir = copy.is_dir();
        Mender {
            copy,
            copy_is_dir,
            rules,
            single_copy_of: RefCell::new(None),
        }
    }

    /// Opens the file at `path` (relative to the current directory) to mend
    /// it, as the module documentation says: only if it is still the file a
    /// check saw as `checked`.
    pub fn open(&self, path: &Path, checked: &Stamp) -> Result<File, Unmendable> {
        let file = crate::cli::beneath::open_to_write(path, self.rules.names, self.rules.setid)
            .map_err(Unmendable::Refused)?;
        match Stamp::now(&file) {
            Ok(now) if now == *checked => Ok(file),
            Ok(_) => Err(Unmendable::Changed),
            Err(error) => Err(Unmendable::File(error)),
        }
    }

    /// The copy of the file at `path`.
    fn copy_of(&self, path: &Path) -> Result<PathBuf, Unmendable> {
        if self.copy_is_dir {
            // (`/data/x` under `/mnt/copy` is `/mnt/copy/data/x`.)
            let relative: PathBuf = path
                .components()
                .filter(|part| matches!(part, std::path::Component::Normal(_)))
                .collect();
            return Ok(self.copy.join(relative));
        }
        let mut single = self.single_copy_of.borrow_mut();
        match single.as_ref() {
            Some(first) if first != path => Err(Unmendable::CopyIsOneFile {
                first: first.clone(),
            }),
            _ => {
                *single = Some(path.to_path_buf());
                Ok(self.copy.clone())
            }
        }
    }

    /// Mends the failing leaves `failing` (index and listed digest, in leaf
    /// order) of `file` (opened with [`open`](Self::open) from `path`),
    /// listed with tree `tree` and length `listed_length`, handing what
    /// became of each to `mended`. Fails, having written nothing, if its
    /// copy cannot be opened.
    pub fn mend(
        &self,
        file: &File,
        path: &Path,
        tree: &TreeParams,
        listed_length: u64,
        failing: &[(u64, Digest)],
        mut mended: impl FnMut(u64, &Mend),
    ) -> Result<(), Unmendable> {
        let mut length = file.metadata().map_err(Unmendable::File)?.len();
        let copy_path = self.copy_of(path)?;
        let copy = File::open(&copy_path).map_err(|error| Unmendable::Copy {
            path: copy_path.clone(),
            error,
        })?;
        if same_file(file, &copy) {
            return Err(Unmendable::CopyIsTheFile { path: copy_path });
        }
        let mut buffer = Vec::new();
        for (index, digest) in failing {
            let bytes = tree.leaf_bytes(*index, listed_length);
            let last = match *index + 1 == tree.leaf_count(listed_length).max(1) {
                true => LastNode::Yes,
                false => LastNode::No,
            };
            let leaf = Leaf {
                tree,
                index: *index,
                last,
                start: bytes.start,
                len: (bytes.end - bytes.start) as usize,
                digest,
            };
            // A leaf past the file's end would leave a hole before it.
            let mend = if leaf.start > length {
                Mend::AfterAGap
            } else {
                leaf.mend(file, &copy, &mut buffer, &mut length)
            };
            mended(*index, &mend);
        }
        Ok(())
    }

    /// Restores the missing file at `path` from its copy, if the copy
    /// matches its entry: written to a new file beside it (bt2sum's own
    /// name, its owner's only), synced, verified whole, given the copy's
    /// permissions (no set-id bit) and the listed time, then named `path`
    /// unless a file of that name appeared meanwhile. Directories missing
    /// on its way are made, as `tar` makes them.
    pub fn restore(&self, path: &Path, lost: &Lost) -> Result<(), Unmendable> {
        // (The name first, then the copy: no directory is made for a file
        // that has none.)
        crate::cli::beneath::allowed(path, self.rules.names).map_err(Unmendable::Refused)?;
        let copy_path = self.copy_of(path)?;
        let copy_error = |error| Unmendable::Copy {
            path: copy_path.clone(),
            error,
        };
        let mut copy = File::open(&copy_path).map_err(copy_error)?;
        let permissions = copy.metadata().map_err(copy_error)?.permissions();
        // The copy proved first, so that a copy that does not match leaves
        // nothing behind, not even a directory; the file written is proved
        // again.
        let matches = |file: &File| -> Result<bool, Unmendable> {
            let length = file.metadata().map_err(Unmendable::File)?.len();
            let hashed = file
                .try_clone()
                .and_then(|mut reader| {
                    io::Seek::seek(&mut reader, io::SeekFrom::Start(0))?;
                    bt2sum::hash_file(&lost.tree, reader).map_err(io::Error::other)
                })
                .map_err(Unmendable::File)?;
            // (`==` on digests is constant-time.)
            Ok(hashed == lost.digest && lost.length.is_none_or(|listed| listed == length))
        };
        if !matches(&copy)? {
            return Err(Unmendable::CopyDiffers { path: copy_path });
        }
        io::Seek::seek(&mut copy, io::SeekFrom::Start(0)).map_err(copy_error)?;
        let (directory, name) = crate::cli::beneath::directory_of(path, self.rules.names, true)
            .map_err(Unmendable::Refused)?;
        let temporary = Temporary::create(&directory, ".bt2sum-restore-")
            .map_err(|error| Unmendable::Refused(Refusal::Io(error)))?;
        let file = temporary.file();
        io::copy(&mut copy, &mut &*file).map_err(copy_error)?;
        file.sync_all().map_err(Unmendable::File)?;
        if !matches(file)? {
            return Err(Unmendable::CopyDiffers { path: copy_path });
        }
        file.set_permissions(without_setid(permissions))
            .map_err(Unmendable::File)?;
        if let Some(mtime) = lost.mtime {
            set_modified(file, mtime).map_err(Unmendable::File)?;
        }
        temporary
            .persist(&name, false)
            .map_err(|error| match error.kind() {
                io::ErrorKind::AlreadyExists => Unmendable::Appeared,
                _ => Unmendable::File(error),
            })?;
        directory.sync().map_err(Unmendable::File)
    }

    /// Once a file's leaves are mended, sees to its length: cut to
    /// `listed_length` if it is longer and cutting was asked for.
    pub fn settle_length(&self, file: &File, listed_length: u64) -> Result<Length, Unmendable> {
        let length = file.metadata().map_err(Unmendable::File)?.len();
        Ok(match length.cmp(&listed_length) {
            std::cmp::Ordering::Equal => Length::AsListed,
            std::cmp::Ordering::Less => Length::Shorter { is: length },
            std::cmp::Ordering::Greater if self.rules.truncate => {
                match file.set_len(listed_length).and_then(|()| file.sync_all()) {
                    Ok(()) => Length::Truncated { was: length },
                    Err(error) => Length::NotCut { is: length, error },
                }
            }
            std::cmp::Ordering::Greater => Length::Longer { is: length },
        })
    }
}

/// A damaged file's failing leaves, as one pass of a check found them,
/// waiting to be mended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damaged {
    /// The file's name, as its list gives it (unescaped).
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    /// The tree its leaf lines were made with.
    pub tree: TreeParams,
    /// Its length, as its leaf lines list it.
    pub listed_length: u64,
    /// The failing leaves: index and listed digest, in leaf order.
    pub failing: Vec<(u64, Digest)>,
    /// The checksum the file must have once mended, where its leaves do
    /// not show it: its checksum line failed, and its leaf lines leave
    /// some of its leaves out.
    pub whole: Option<Digest>,
    /// Whether this is the file's last pass: its length is seen to then,
    /// and whether it verifies is known.
    pub last_pass: bool,
    /// The file as the pass saw it: what it must still be when mended.
    pub stamp: Stamp,
    /// The modification time to put back once the file verifies whole:
    /// its stat line's, or, without one, the one the check saw.
    pub mtime: Option<Mtime>,
    /// Whether `mtime` is a stat line's.
    pub mtime_listed: bool,
}

/// A missing file, as its entry lists it, to restore whole from its copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lost {
    /// Its name, as its list gives it (unescaped).
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    /// The tree of its checksum line, and that line's digest.
    pub tree: TreeParams,
    pub digest: Digest,
    /// Its length, where leaf lines or a stat line list it.
    pub length: Option<u64>,
    /// Its stat line's modification time, given back to it.
    pub mtime: Option<Mtime>,
}

/// One failing leaf, as the listing places it.
struct Leaf<'a> {
    tree: &'a TreeParams,
    index: u64,
    last: LastNode,
    /// Its bytes' offset and length in the listed file.
    start: u64,
    len: usize,
    /// Its listed digest.
    digest: &'a Digest,
}

impl Leaf<'_> {
    /// Whether `bytes` are the leaf's (`==` on digests is constant-time).
    fn verifies(&self, bytes: &[u8]) -> bool {
        leaf_digest(self.tree, self.index, self.last, bytes) == *self.digest
    }

    /// Mends the leaf in `file` (now `length` bytes long, which writing it
    /// may extend) from `copy`, reading into `buffer`.
    fn mend(&self, file: &File, copy: &File, buffer: &mut Vec<u8>, length: &mut u64) -> Mend {
        buffer.clear();
        buffer.resize(self.len, 0);
        // Good in place (only the file's length made it fail): untouched.
        let end = self.start + self.len as u64;
        if end <= *length
            && read_exact_at(file, buffer, self.start).is_ok()
            && self.verifies(buffer)
        {
            return Mend::Intact;
        }
        match read_exact_at(copy, buffer, self.start) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Mend::CopyShort,
            Err(error) => return Mend::CopyUnreadable(error),
        }
        if !self.verifies(buffer) {
            return Mend::CopyDiffers;
        }
        let written = write_all_at(file, buffer, self.start).and_then(|()| {
            *length = (*length).max(end);
            file.sync_all()
        });
        if let Err(error) = written {
            return Mend::WriteFailed(error);
        }
        // Read back from the file, and verified again.
        buffer.fill(0);
        match read_exact_at(file, buffer, self.start) {
            Ok(()) if self.verifies(buffer) => Mend::Repaired,
            Ok(()) => Mend::WriteFailed(io::Error::other("the leaf read back does not verify")),
            Err(error) => Mend::WriteFailed(error),
        }
    }
}

/// Sets a file's modification time (its access time left as it is),
/// through its descriptor.
pub fn set_modified(file: &File, mtime: Mtime) -> io::Result<()> {
    let time = mtime
        .to_system_time()
        .ok_or_else(|| io::Error::other("the time is out of the system's range"))?;
    file.set_times(std::fs::FileTimes::new().set_modified(time))?;
    file.sync_all()
}

/// Permissions without a set-user-ID or set-group-ID bit.
fn without_setid(permissions: std::fs::Permissions) -> std::fs::Permissions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(permissions.mode() & 0o1777)
    }
    #[cfg(not(unix))]
    permissions
}

/// Whether two open files are one.
fn same_file(a: &File, b: &File) -> bool {
    let id = |file: &File| {
        file.metadata()
            .and_then(|metadata| FileId::of(file, &metadata))
    };
    matches!((id(a), id(b)), (Ok(a), Ok(b)) if a == b)
}
