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
//! ```
//! use bt2sum::repair::{Length, Mender, Names, Rules};
//! use bt2sum::{Algorithm, LastNode, Stamp, TreeParams, leaf_digest};
//!
//! // A file of two leaves of 4 bytes, the second damaged, and a good copy.
//! let dir = tempfile::tempdir()?;
//! std::env::set_current_dir(dir.path())?;
//! std::fs::write("copy", b"goodleaf")?;
//! std::fs::write("file", b"goodLEAF")?;
//! let tree = TreeParams::new(Algorithm::Blake2b, 32, 4)?;
//! // What the file's leaf listing says of leaf 1, and what a check saw.
//! let listed = leaf_digest(&tree, 1, LastNode::Yes, b"leaf");
//! let checked = Stamp::now(&std::fs::File::open("file")?)?;
//! let rules = Rules { truncate: false, names: Names::Inside, setid: false };
//! let mender = Mender::new("copy".into(), rules);
//! let path = std::path::Path::new("file");
//! let file = mender.open(path, &checked)?;
//! let mut mended = Vec::new();
//! mender.mend(&file, path, &tree, 8, &[(1, listed)], |index, mend| {
//!     mended.push((index, mend.is_good()))
//! })?;
//! assert_eq!(mended, [(1, true)]);
//! assert!(matches!(mender.settle_length(&file, 8)?, Length::AsListed));
//! assert_eq!(std::fs::read("file")?, b"goodleaf");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub use crate::cli::beneath::{Names, Refusal};
use bt2sum::Digest;
use bt2sum::Stamp;
use bt2sum::format::stat::Mtime;
use bt2sum::leaf_digest;
use bt2sum::plain_message;
use bt2sum::spill::{IN_MEMORY, Spool};
use bt2sum::{Algorithm, LastNode, TreeParams};

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
#[derive(Debug)]
pub enum Unmendable {
    /// The file's length cannot be read or set.
    File(io::Error),
    /// The file is not opened to be written ([`Refusal`]).
    Refused(Refusal),
    /// The file is not the one the check saw, or changed since (its
    /// identity, size or times differ).
    Changed,
    /// The copy cannot be opened.
    Copy {
        /// Where the copy was looked for.
        path: PathBuf,
        /// Why it could not be opened.
        error: io::Error,
    },
    /// The copy is the file itself.
    CopyIsTheFile {
        /// The copy's path.
        path: PathBuf,
    },
    /// The copy named is one file, and it was taken for another file
    /// already.
    CopyIsOneFile {
        /// The file it is the copy of.
        first: PathBuf,
    },
}

impl std::fmt::Display for Unmendable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmendable::File(error) => {
                write!(f, "cannot be written: {}", plain_message(error))
            }
            Unmendable::Refused(refusal) => write!(f, "{refusal}"),
            Unmendable::Changed => f.write_str(
                "it changed since it was checked (or was replaced): not written; check it again",
            ),
            Unmendable::Copy { path, error } => write!(
                f,
                "its copy {} cannot be read: {}",
                path.display(),
                plain_message(error)
            ),
            Unmendable::CopyIsTheFile { path } => {
                write!(f, "its copy {} is the file itself", path.display())
            }
            Unmendable::CopyIsOneFile { first } => write!(
                f,
                "the copy given is one file, the copy of {}: give a directory of copies",
                first.display()
            ),
        }
    }
}

impl std::error::Error for Unmendable {}

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
/// waiting to be mended ([`Pending`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// The file's name, as its list gives it (unescaped).
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

/// Damaged files waiting to be mended. A check mends only once every file
/// of its list is checked, so that no file is written while a pass over it
/// is still being hashed. Kept in memory up to 16 MiB, then in a temporary
/// file.
pub struct Pending {
    spool: Spool,
}

impl Default for Pending {
    fn default() -> Self {
        Pending::new()
    }
}

impl Pending {
    /// An empty queue.
    pub fn new() -> Pending {
        Pending {
            spool: Spool::new(IN_MEMORY),
        }
    }

    /// Adds a damaged file's pass.
    pub fn push(&mut self, damaged: &Damaged) -> io::Result<()> {
        self.spool.push(&encode(damaged))
    }

    /// Hands each file's passes to `each`, in the order they came, and
    /// empties the queue; stops at the first error of `each`'s.
    pub fn drain(&mut self, mut each: impl FnMut(Damaged) -> io::Result<()>) -> io::Result<()> {
        let mut spool = std::mem::replace(&mut self.spool, Spool::new(IN_MEMORY));
        for record in spool.records()? {
            let damaged = decode(&record?).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a damaged file's record is garbled",
                )
            })?;
            each(damaged)?;
        }
        Ok(())
    }
}

/// A [`Damaged`] as bytes: its stamp; the name's length (4 bytes) and the
/// name; the algorithm, digest size, leaf size (4) and listed length (8);
/// whether a whole checksum follows and whether it is the last pass, then
/// that checksum; the number of failing leaves (8), and each one's index
/// (8) and digest. Numbers little-endian.
fn encode(damaged: &Damaged) -> Vec<u8> {
    let tree = &damaged.tree;
    let mut bytes = damaged.stamp.to_bytes();
    bytes.extend((damaged.name.len() as u32).to_le_bytes());
    bytes.extend(&damaged.name);
    bytes.push(match tree.algorithm() {
        Algorithm::Blake2b => 0,
        Algorithm::Blake2s => 1,
    });
    bytes.push(tree.digest_size() as u8);
    bytes.extend((tree.leaf_size() as u32).to_le_bytes());
    bytes.extend(damaged.listed_length.to_le_bytes());
    bytes.push(
        u8::from(damaged.whole.is_some())
            | u8::from(damaged.last_pass) << 1
            | u8::from(damaged.mtime.is_some()) << 2
            | u8::from(damaged.mtime_listed) << 3,
    );
    if let Some(whole) = &damaged.whole {
        bytes.extend(whole.as_bytes());
    }
    if let Some(mtime) = &damaged.mtime {
        bytes.extend(mtime.seconds.to_le_bytes());
        bytes.extend(mtime.nanoseconds.to_le_bytes());
    }
    bytes.extend((damaged.failing.len() as u64).to_le_bytes());
    for (index, digest) in &damaged.failing {
        bytes.extend(index.to_le_bytes());
        bytes.extend(digest.as_bytes());
    }
    bytes
}

/// The [`Damaged`] [`encode`] made `bytes` of.
fn decode(bytes: &[u8]) -> Option<Damaged> {
    let mut rest = bytes;
    let mut take = |count: usize| -> Option<&[u8]> {
        let (taken, after) = rest.split_at_checked(count)?;
        rest = after;
        Some(taken)
    };
    let u32_at = |bytes: &[u8]| u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
    let u64_at = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    let stamp = Stamp::from_bytes(take(STAMP_BYTES)?)?;
    let name_len = u32_at(take(4)?) as usize;
    let name = take(name_len)?.to_vec();
    let algorithm = match take(1)?[0] {
        0 => Algorithm::Blake2b,
        1 => Algorithm::Blake2s,
        _ => return None,
    };
    let digest_size = usize::from(take(1)?[0]);
    let leaf_size = u64::from(u32_at(take(4)?));
    let tree = TreeParams::new(algorithm, digest_size, leaf_size).ok()?;
    let listed_length = u64_at(take(8)?);
    let flags = take(1)?[0];
    let whole = match flags & 1 {
        0 => None,
        _ => Some(Digest::from_slice(take(digest_size)?)?),
    };
    let mtime = match flags & 4 {
        0 => None,
        _ => Some(Mtime {
            seconds: u64_at(take(8)?) as i64,
            nanoseconds: u32_at(take(4)?),
        }),
    };
    let count = u64_at(take(8)?);
    let mut failing = Vec::new();
    for _ in 0..count {
        let index = u64_at(take(8)?);
        failing.push((index, Digest::from_slice(take(digest_size)?)?));
    }
    Some(Damaged {
        name,
        tree,
        listed_length,
        failing,
        whole,
        last_pass: flags & 2 != 0,
        stamp,
        mtime,
        mtime_listed: flags & 8 != 0,
    })
}

/// The bytes of a [`Stamp`] in a record.
const STAMP_BYTES: usize = 56;

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

/// Reads exactly `buf.len()` bytes of `file` at `offset`.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_exact_at(file, buf, offset);
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            match std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], at)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                read => done += read,
            }
        }
        Ok(())
    }
}

/// Writes all of `buf` to `file` at `offset`.
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::write_all_at(file, buf, offset);
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            done += std::os::windows::fs::FileExt::seek_write(file, &buf[done..], at)?;
        }
        Ok(())
    }
}

/// Whether two open files are one.
fn same_file(a: &File, b: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (a.metadata(), b.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_files_wait_and_come_back_as_they_were() {
        let tree = TreeParams::new(Algorithm::Blake2s, 20, 4096).unwrap();
        let digest = |byte: u8| Digest::from_slice(&[byte; 20]).unwrap();
        let stamp = Stamp::now(&tempfile::tempfile().unwrap()).unwrap();
        let files = [
            Damaged {
                name: b"a\nname \xff".to_vec(),
                tree,
                listed_length: 123_456_789,
                failing: vec![(0, digest(1)), (u64::MAX - 1, digest(2))],
                whole: Some(digest(3)),
                last_pass: false,
                stamp,
                mtime: Some(Mtime {
                    seconds: -5,
                    nanoseconds: 999_999_999,
                }),
                mtime_listed: true,
            },
            Damaged {
                name: Vec::new(),
                tree: TreeParams::default(),
                listed_length: 0,
                failing: Vec::new(),
                whole: None,
                last_pass: true,
                stamp,
                mtime: None,
                mtime_listed: false,
            },
        ];
        let mut pending = Pending::new();
        for file in &files {
            pending.push(file).unwrap();
        }
        let mut back = Vec::new();
        pending
            .drain(|damaged| {
                back.push(damaged);
                Ok(())
            })
            .unwrap();
        assert_eq!(back, files);
        // Drained, it is empty.
        pending.drain(|_| panic!("nothing is left")).unwrap();
        for cut in 0..encode(&files[0]).len() {
            assert_eq!(decode(&encode(&files[0])[..cut]), None);
        }
    }
}
