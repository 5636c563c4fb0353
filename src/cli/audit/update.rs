//! `--update`: the one list an audit read, rewritten as the audit found
//! the tree ([`Rewrite`]), atomically, by a [`Temporary`] renamed over it
//! (docs/audit.md). The list is opened once, through `beneath`, before the
//! audit reads it; every later step goes through that descriptor and its
//! directory's, never the list's path again.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Seek};
use std::path::{Path, PathBuf};

use super::rewrite::Rewrite;
use crate::cli::beneath::{Directory, Temporary};
use crate::cli::output::{JsonName, Printer, Record, Rewritten, Status, Verbosity, counted, warn};
use crate::cli::plan::Checking;
use crate::cli::sys;
use crate::cli::tally::Tally;
use crate::cli::walk::UPDATE_PREFIX;
use bt2sum::Stamp;
use bt2sum::format::name::Name;
use bt2sum::sys::FileId;

/// The list an update rewrites, opened before the audit reads it.
pub struct UpdatedList {
    directory: Directory,
    /// The directory's path, for messages.
    directory_path: PathBuf,
    name: OsString,
    file: File,
    /// The list as the audit began, and its owner and permissions to keep.
    stamp: Stamp,
    metadata: std::fs::Metadata,
}

impl UpdatedList {
    pub fn open(path: &Path) -> Result<UpdatedList, String> {
        let plain = |error: io::Error| bt2sum::plain_message(&error);
        let (directory, directory_path, name, file) =
            crate::cli::beneath::open_list(path).map_err(|refusal| refusal.to_string())?;
        let metadata = file.metadata().map_err(plain)?;
        let links = crate::cli::beneath::links(&file, &metadata).map_err(plain)?;
        if links > 1 {
            return Err(format!(
                "it has {links} hard links, which replacing it would split (update a copy of it)"
            ));
        }
        let stamp = Stamp::now(&file).map_err(plain)?;
        Ok(UpdatedList {
            directory,
            directory_path,
            name,
            file,
            stamp,
            metadata,
        })
    }

    pub fn reader(&self) -> io::Result<io::BufReader<&File>> {
        (&self.file).rewind()?;
        Ok(io::BufReader::with_capacity(64 << 10, &self.file))
    }

    /// Which file the list is, and the directory it is in.
    pub fn ids(&self) -> io::Result<(FileId, FileId)> {
        let file = FileId::of(&self.file, &self.metadata)?;
        Ok((file, self.directory.id()?))
    }

    /// Fails unless the list is still as the audit began, and still the
    /// file its name gives in its directory.
    fn unchanged(&self) -> Result<(), String> {
        let here = self.directory.open(&self.name, false).ok();
        let same = Stamp::now(&self.file).ok() == Some(self.stamp)
            && here.and_then(|file| Stamp::now(&file).ok()) == Some(self.stamp);
        same.then_some(())
            .ok_or_else(|| "it changed while the audit ran (audit it again)".to_string())
    }

    /// Rewrites the list as `rewrite` says (see [`Rewrite::write`]); why
    /// not, with the list as it was.
    pub fn rewrite(&self, rewrite: Rewrite) -> Result<Rewritten, String> {
        let plain = |error: io::Error| bt2sum::plain_message(&error);
        self.unchanged()?;
        let temporary = Temporary::create(&self.directory, UPDATE_PREFIX).map_err(|error| {
            let shown = Name::of_path_lossy(self.directory_path.as_os_str()).shown();
            let why = plain(error);
            format!("cannot create a temporary file in {shown}: {why}")
        })?;
        let new = temporary.file();
        let mut out = io::BufWriter::with_capacity(64 << 10, new);
        let mut list = self.reader().map_err(plain)?;
        let done = rewrite.write(&mut list, &mut out).map_err(plain)?;
        drop(out);
        sys::keep_owner(new, &self.metadata)
            .map_err(|error| format!("cannot give the new list its owner: {}", plain(error)))?;
        new.set_permissions(self.metadata.permissions())
            .map_err(plain)?;
        new.sync_all().map_err(plain)?;
        // (Checked again before the rename: no other update came first.)
        self.unchanged()?;
        temporary.persist(&self.name, true).map_err(plain)?;
        self.directory.sync().map_err(plain)?;
        Ok(done)
    }
}

/// Rewrites the list an audit read as it found the tree; the run's status:
/// only what the list keeps as it was (missing and unreadable files) still
/// fails it.
pub fn update(
    updated: &UpdatedList,
    rewrite: Rewrite,
    check: &Checking,
    printer: &mut Printer<'_>,
    tally: &Tally,
) -> io::Result<Status> {
    let list = Name::of_path_lossy(&check.lists[0]);
    let done = match updated.rewrite(rewrite) {
        Ok(done) => done,
        Err(why) => {
            warn(&format!("{}: not updated: {why}", list.shown()));
            return Ok(Status::Failure);
        }
    };
    if printer.verbosity != Verbosity::Status {
        warn(&format!("{}: updated: {}", list.shown(), said(&done)));
        let list = JsonName(Some(list.printed()));
        printer.emit(&Record::Update { list, done: &done })?;
    }
    let missing = tally.missing - done.forgotten;
    Ok(match missing + tally.errors + done.unreadable {
        0 => Status::Success,
        _ => Status::Failure,
    })
}

/// What an update did, as its line says it.
fn said(done: &Rewritten) -> String {
    let parts: Vec<String> = [
        (done.added, "file{s} added"),
        (done.renamed, "renamed"),
        (done.rehashed, "hashed again"),
        (done.restated, "stat line{s} written anew"),
        (done.forgotten, "missing file{s} forgotten"),
    ]
    .into_iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, what)| counted(count, &what.replace("{s}", ""), &what.replace("{s}", "s")))
    .collect();
    match parts.is_empty() {
        true => "nothing changed".to_string(),
        false => parts.join(", "),
    }
}
