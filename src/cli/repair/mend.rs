//! Mending a file's damaged leaves from a good copy, and restoring a
//! missing file whole (`--repair-from`, docs/scrub.md). A leaf is proved
//! good before it is written and again once read back, so a kill while one
//! is written leaves it no further from good, and mending again finishes
//! it. Every write goes through the one descriptor `beneath` opened, and
//! only to the file the check saw (its [`Stamp`]).

use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cli::beneath::{self, Directory, Refusal, Temporary};
use crate::cli::plan::Repair;
use bt2sum::format::stat::Mtime;
use bt2sum::leaf_digest;
use bt2sum::plain_message;
use bt2sum::sys::{FileId, read_exact_at, write_all_at};
use bt2sum::{Digest, LastNode, Stamp, TreeParams};

/// Where the good copies are (a directory of copies under the names the
/// lists give, or the copy of the one file mended), and what mending may do.
pub struct Mender {
    repair: Repair,
    copy_is_dir: bool,
    /// The file the single copy was first used for.
    single_copy_of: Option<PathBuf>,
}

/// A failing leaf that verifies now.
#[derive(Debug)]
pub enum Mended {
    Repaired,
    /// Its bytes in the file verify where the listing places them: it
    /// failed only because the file's length changed. Not written.
    Intact,
}

/// Why a failing leaf was not mended (nor written).
#[derive(Debug, thiserror::Error)]
pub enum Unmended {
    #[error("the copy's leaf does not match either")]
    CopyDiffers,
    #[error("the copy ends before the leaf does")]
    CopyShort,
    #[error("the copy could not be read: {}", plain_message(.0))]
    CopyUnreadable(io::Error),
    /// It starts past the file's end: writing it would leave a hole.
    #[error("the file ends before it, and leaves before it are not mended")]
    AfterAGap,
    /// Writing it or reading it back failed, or it does not verify once
    /// written.
    #[error("it could not be written: {}", plain_message(.0))]
    WriteFailed(io::Error),
}

/// Why a file could not be mended at all (none of its leaves was written).
#[derive(Debug, thiserror::Error)]
pub enum Unmendable {
    #[error("cannot be written: {}", plain_message(.0))]
    File(#[from] io::Error),
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("it changed since it was checked (or was replaced): not written; check it again")]
    Changed,
    #[error("its copy {} cannot be read: {}", .0.display(), plain_message(.1))]
    Copy(PathBuf, io::Error),
    #[error("its copy {} is the file itself", .0.display())]
    CopyIsTheFile(PathBuf),
    #[error("the copy given is one file, the copy of {}: give a directory of copies", .0.display())]
    CopyIsOneFile(PathBuf),
    #[error("its copy {} does not match its checksum line: not written", .0.display())]
    CopyDiffers(PathBuf),
    #[error("a file of its name appeared meanwhile: left as it is")]
    Appeared,
    #[error("the list gives it two different contents (lines {0} and {1}): not written")]
    Contradicted(u64, u64),
}

impl Mender {
    pub fn new(repair: &Repair) -> Mender {
        Mender {
            repair: repair.clone(),
            copy_is_dir: repair.copy.is_dir(),
            single_copy_of: None,
        }
    }

    /// Opens the file at `path` to mend it, if it is still the file a check
    /// saw as `checked`.
    pub fn open(&self, path: &Path, checked: &Stamp) -> Result<File, Unmendable> {
        let file = beneath::open_to_write(path, self.repair.any_path, self.repair.setid)?;
        match Stamp::now(&file)? == *checked {
            true => Ok(file),
            false => Err(Unmendable::Changed),
        }
    }

    /// The copy of the file at `path`, open, and its path.
    fn open_copy(&mut self, path: &Path) -> Result<(File, PathBuf), Unmendable> {
        let copy = if self.copy_is_dir {
            // (`/data/x` under `/mnt/copy` is `/mnt/copy/data/x`.)
            let relative: PathBuf = path
                .components()
                .filter(|part| matches!(part, std::path::Component::Normal(_)))
                .collect();
            self.repair.copy.join(relative)
        } else {
            if let Some(first) = self.single_copy_of.as_ref().filter(|first| *first != path) {
                return Err(Unmendable::CopyIsOneFile(first.clone()));
            }
            self.single_copy_of = Some(path.to_path_buf());
            self.repair.copy.clone()
        };
        match File::open(&copy) {
            Ok(file) => Ok((file, copy)),
            Err(error) => Err(Unmendable::Copy(copy, error)),
        }
    }

    /// Mends the failing leaves of `damaged` in `file`, opened from `path`,
    /// handing what became of each, and its bytes' place, to `mended`.
    /// Fails, having written nothing, if its copy cannot be opened.
    pub fn mend(
        &mut self,
        file: &File,
        path: &Path,
        damaged: &Damaged,
        mut mended: impl FnMut(u64, Range<u64>, &Result<Mended, Unmended>),
    ) -> Result<(), Unmendable> {
        let (tree, listed_length) = (&damaged.tree, damaged.listed_length);
        let mut length = file.metadata()?.len();
        let (copy, copy_path) = self.open_copy(path)?;
        let id = |file: &File| FileId::of(file, &file.metadata()?);
        if matches!((id(file), id(&copy)), (Ok(this), Ok(that)) if this == that) {
            return Err(Unmendable::CopyIsTheFile(copy_path));
        }
        let mut buffer = Vec::new();
        for (index, digest) in &damaged.failing {
            let last = match *index + 1 == tree.leaf_count(listed_length).max(1) {
                true => LastNode::Yes,
                false => LastNode::No,
            };
            // (`==` on digests is constant-time.)
            let verifies = |bytes: &[u8]| leaf_digest(tree, *index, last, bytes) == *digest;
            let bytes = tree.leaf_bytes(*index, listed_length);
            let mend = mend_leaf(file, &copy, &mut buffer, &mut length, &bytes, verifies);
            mended(*index, bytes, &mend);
        }
        Ok(())
    }

    /// Restores the missing file at `path` from its copy, if the copy
    /// matches its entry: a [`Temporary`] beside it, synced, verified
    /// whole, given the copy's permissions (no set-id bit) and the listed
    /// time, then named `path` unless a file of that name appeared
    /// meanwhile. Directories missing on its way are made, as `tar` does.
    pub fn restore(&mut self, path: &Path, lost: &Lost) -> Result<(), Unmendable> {
        // (The name first, then the copy: no directory is made for a file
        // that has none.)
        beneath::allowed(path, self.repair.any_path)?;
        let (mut copy, copy_path) = self.open_copy(path)?;
        let copy_error = |error| Unmendable::Copy(copy_path.clone(), error);
        let permissions = copy.metadata().map_err(copy_error)?.permissions();
        // The copy proved first, so that one that does not match leaves no
        // directory behind; the file written is proved again.
        let matches = |file: &File| -> Result<bool, Unmendable> {
            let length = file.metadata()?.len();
            let hashes = hashes_to(file, &lost.tree, &lost.digest)?;
            Ok(hashes && lost.length.is_none_or(|listed| listed == length))
        };
        if !matches(&copy)? {
            return Err(Unmendable::CopyDiffers(copy_path));
        }
        io::Seek::seek(&mut copy, io::SeekFrom::Start(0)).map_err(copy_error)?;
        let (directory, name) = Directory::holding(None, path, true)?;
        let temporary = Temporary::create(&directory, ".bt2sum-restore-")?;
        let file = temporary.file();
        io::copy(&mut copy, &mut &*file).map_err(copy_error)?;
        file.sync_all()?;
        if !matches(file)? {
            return Err(Unmendable::CopyDiffers(copy_path));
        }
        file.set_permissions(beneath::without_setid(&permissions).unwrap_or(permissions))?;
        if let Some(mtime) = lost.mtime {
            set_modified(file, mtime)?;
        }
        temporary
            .persist(&name, false)
            .map_err(|error| match error.kind() {
                io::ErrorKind::AlreadyExists => Unmendable::Appeared,
                _ => Unmendable::File(error),
            })?;
        directory.sync().map_err(Unmendable::File)
    }

    /// Once a file's leaves are mended, cuts it to `listed` bytes if it is
    /// longer and cutting was asked for: what was done, or why its length
    /// is not as listed.
    pub fn settle_length(&self, file: &File, listed: u64) -> Result<Option<String>, String> {
        let length = file
            .metadata()
            .map_err(|error| format!("cannot be repaired: {}", Unmendable::File(error)))?
            .len();
        if length == listed {
            return Ok(None);
        }
        if length < listed {
            return Err(format!(
                "is still {length} bytes long, shorter than its listed {listed}"
            ));
        }
        let longer = format!("is {length} bytes long, longer than its listed {listed}");
        if !self.repair.truncate {
            return Err(format!(
                "{longer}: left as it is (--repair-truncate cuts it)"
            ));
        }
        let cut = file.set_len(listed).and_then(|()| file.sync_all());
        cut.map_err(|error| format!("{longer}, and cannot be cut: {}", plain_message(&error)))?;
        Ok(Some(format!(
            "was {length} bytes long: cut to its listed length, {listed} bytes"
        )))
    }
}

/// A damaged file's failing leaves, as one pass of a check found them,
/// waiting to be mended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damaged {
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    pub tree: TreeParams,
    pub listed_length: u64,
    /// Index and listed digest, in leaf order.
    pub failing: Vec<(u64, Digest)>,
    /// The checksum the file must have once mended, where its leaves do
    /// not show it: its checksum line failed, and its leaf lines leave
    /// some of its leaves out.
    pub whole: Option<Digest>,
    /// Whether this is the file's first record, which opens it, and its
    /// last pass: its length is seen to then, and whether it verifies is
    /// known.
    pub opens: bool,
    pub last_pass: bool,
    /// What the file must still be when mended; the time it then gets back
    /// where no stat line lists one.
    pub stamp: Stamp,
    /// Its stat line's modification time, put back once it verifies whole.
    pub mtime: Option<Mtime>,
}

/// A missing file, as its entry lists it, to restore whole from its copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lost {
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    /// Its checksum line's.
    pub tree: TreeParams,
    pub digest: Digest,
    /// Where leaf lines or a stat line list it.
    pub length: Option<u64>,
    /// Its stat line's.
    pub mtime: Option<Mtime>,
}

/// Mends the leaf at `bytes` in `file` (now `length` bytes long, which
/// writing it may extend) from `copy`, reading into `buffer`; `verifies`
/// says whether bytes read are the leaf's.
fn mend_leaf(
    file: &File,
    copy: &File,
    buffer: &mut Vec<u8>,
    length: &mut u64,
    bytes: &Range<u64>,
    verifies: impl Fn(&[u8]) -> bool,
) -> Result<Mended, Unmended> {
    if bytes.start > *length {
        return Err(Unmended::AfterAGap);
    }
    buffer.clear();
    buffer.resize((bytes.end - bytes.start) as usize, 0);
    let start = bytes.start;
    if bytes.end <= *length && read_exact_at(file, buffer, start).is_ok() && verifies(buffer) {
        return Ok(Mended::Intact);
    }
    read_exact_at(copy, buffer, start).map_err(|error| match error.kind() {
        io::ErrorKind::UnexpectedEof => Unmended::CopyShort,
        _ => Unmended::CopyUnreadable(error),
    })?;
    if !verifies(buffer) {
        return Err(Unmended::CopyDiffers);
    }
    let read_back = write_all_at(file, buffer, start).and_then(|()| {
        *length = (*length).max(bytes.end);
        file.sync_all()?;
        buffer.fill(0);
        read_exact_at(file, buffer, start)
    });
    read_back.map_err(Unmended::WriteFailed)?;
    match verifies(buffer) {
        true => Ok(Mended::Repaired),
        false => Err(Unmended::WriteFailed(io::Error::other(
            "the leaf read back does not verify",
        ))),
    }
}

/// Whether `file`, read from its start (whatever positional reads and
/// writes left its offset at), hashes to `digest`.
pub fn hashes_to(file: &File, tree: &TreeParams, digest: &Digest) -> io::Result<bool> {
    let mut reader = file.try_clone()?;
    io::Seek::rewind(&mut reader)?;
    // (`==` on digests is constant-time.)
    Ok(bt2sum::hash_file(tree, reader).map_err(io::Error::other)? == *digest)
}

/// Sets a file's modification time (not its access time).
pub fn set_modified(file: &File, mtime: Mtime) -> io::Result<()> {
    let time = mtime
        .to_system_time()
        .ok_or_else(|| io::Error::other("the time is out of the system's range"))?;
    file.set_times(std::fs::FileTimes::new().set_modified(time))?;
    file.sync_all()
}
