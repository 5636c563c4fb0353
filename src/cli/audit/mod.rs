//! Auditing a tree against checksum lists: every file under the roots is
//! classed, not only the listed ones.
//!
//! The lists are checked by a [`Verifier`] as check mode checks them (a
//! listed file is OK, FAILED, CHANGED, or cannot be read); the auditor
//! keeps, in bounded memory (see `spill`), the name of every listed file
//! and the listed files that are missing. Then [`Auditor::finish`] walks
//! the roots as `-r` does and classes what the lists said nothing of:
//!
//! - a file under a root that no list names is **NEW**;
//! - a new file whose digest is that of exactly one missing entry, and of
//!   no other new file, was **MOVED** from it: the two are one file,
//!   renamed. Empty files never are (every empty file has their digest),
//!   nor files whose digest several missing entries or new files share;
//! - a listed file that no longer exists, and was not moved, is
//!   **MISSING**.
//!
//! Names match as the lists spell them, relative to the current directory:
//! `./a/b`, `a//b` and `a/b` are one file ([`normalized`]). New files are
//! hashed only when some missing entry could have moved to them, with that
//! entry's parameters (those of the first missing entry with a checksum
//! line: a list's entries share them, and an entry of other parameters
//! stays MISSING).
//!
//! The findings come in a fixed order: the lists' verdicts as they are
//! checked, then NEW and MOVED in the order of the walk, then MISSING in
//! list order.

use std::ffi::OsString;
use std::io;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::cli::walk::{self, Walk, Walked};
use bt2sum::Event;
use bt2sum::TreeParams;
use bt2sum::format::name::Name;
use bt2sum::spill::{IN_MEMORY, Sorter, Spool};
use bt2sum::verify::{Checked, Report, Verifier};
use bt2sum::{Job, hash_each};
use join::Joined;
use rewrite::Shape;
pub use rewrite::{Rewrite, Rewritten};
pub use update::{UpdatedList, is_temporary, report_updated};

mod join;
mod rewrite;
mod update;

/// What an audit finds once the lists are checked, in order.
#[derive(Debug)]
pub enum Finding {
    /// A file under a root that no list names.
    New {
        /// Its path, as the walk built it.
        name: Vec<u8>,
    },
    /// A new file that is a missing entry, renamed.
    Moved {
        /// Its path, as the walk built it.
        name: Vec<u8>,
        /// The missing entry's name, as its list gives it.
        from: Vec<u8>,
    },
    /// A listed file that no longer exists, and was not moved.
    Missing {
        /// Its name, as its list gives it.
        name: Vec<u8>,
    },
    /// A directory of a root that could not be read, an entry that could
    /// not be examined, or a new file that could not be hashed (it is new
    /// all the same).
    Error {
        /// Where.
        name: Vec<u8>,
        /// Why.
        error: bt2sum::Error,
    },
    /// The next finding is not ready: a good time to flush.
    Waiting,
}

/// Audits lists against the trees under some roots.
pub struct Auditor<'a> {
    verifier: &'a Verifier<'a>,
    roots: Vec<OsString>,
    options: walk::Options,
    progress: Option<Arc<AtomicU64>>,
    /// Every listed name, normalized.
    listed: Sorter,
    /// The missing entries' names, in list order.
    missing: Spool,
    /// The parameters of the missing entries a new file may be: the first
    /// such entry's.
    tree: Option<TreeParams>,
    /// Digests of missing entries and of new files, to find the moves.
    joined: Sorter,
    /// What rewriting the list needs, if it is to be rewritten.
    update: Option<Updating>,
}

/// What an audit keeps to rewrite its list (`--update`).
struct Updating {
    /// Whether every entry written anew, and every OK one, gets a stat
    /// line (`--stat`).
    stat: bool,
    /// Per listed file, in list order: its lines and what becomes of them
    /// ([`rewrite::Entry`]).
    entries: Spool,
    /// How new files are listed: as the list's first checksum line is.
    shape: Option<Shape>,
}

impl<'a> Auditor<'a> {
    /// An audit of the files under `roots`, walked with `options`, against
    /// the lists `verifier` checks (given to [`check`](Self::check)).
    pub fn new(verifier: &'a Verifier<'a>, roots: Vec<OsString>, options: walk::Options) -> Self {
        Auditor {
            verifier,
            roots,
            options,
            progress: None,
            listed: Sorter::new(IN_MEMORY),
            missing: Spool::new(IN_MEMORY),
            tree: None,
            joined: Sorter::new(IN_MEMORY),
            update: None,
        }
    }

    /// Adds the bytes of the new files hashed to `counter` as the work goes.
    pub fn progress(mut self, counter: Arc<AtomicU64>) -> Self {
        self.progress = Some(counter);
        self
    }

    /// Keeps what rewriting the one list audited needs ([`Rewrite`]);
    /// `stat`: every entry written anew, and every entry that verifies,
    /// gets a stat line.
    pub fn updating(mut self, stat: bool) -> Self {
        self.update = Some(Updating {
            stat,
            entries: Spool::new(IN_MEMORY),
            shape: None,
        });
        self
    }

    /// Checks one list as [`Verifier::check`] does, handing on its reports
    /// (those of missing files too: what they are is known only once the
    /// walk is done, and comes then as a [`Finding`]). Fails if the list
    /// cannot be read on, or what the audit keeps of it cannot be kept.
    pub fn check(
        &mut self,
        list: &mut dyn io::BufRead,
        list_is_stdin: bool,
        mut report: impl FnMut(Report<'_>) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        let mut kept = Ok(());
        let verifier = self.verifier;
        let flow = verifier.check(list, list_is_stdin, |event| {
            if let Report::Checked(checked) = &event {
                kept = self.keep(checked);
                if kept.is_err() {
                    return ControlFlow::Break(());
                }
                if checked.is_probe() {
                    // Only looked for, for the audit: another slice's.
                    return ControlFlow::Continue(());
                }
            }
            report(event)
        });
        kept?;
        flow
    }

    /// Keeps what the audit needs of a checked file: its name, and, if it
    /// is missing, what finds where it moved; what the rewrite needs.
    fn keep(&mut self, checked: &Checked) -> io::Result<()> {
        let missing = checked.is_missing() && checked.is_last_pass();
        let index = self.missing.len();
        if missing {
            let movable = checked.expected().filter(|expected| {
                let tree = *self.tree.get_or_insert(*checked.tree());
                // (Every empty file has the digest of empty input.)
                tree == *checked.tree() && Some(**expected) != empty_digest(&tree)
            });
            if let Some(digest) = movable {
                self.joined
                    .push(Joined::missing(digest, index, checked.name()))?;
            }
            self.missing.push(checked.name())?;
        }
        if let Some(update) = &mut self.update {
            if update.shape.is_none() && checked.tagged().is_some() {
                update.shape = Some(Shape {
                    tree: *checked.tree(),
                    tagged: checked.tagged() == Some(true),
                    leaves: checked.listed_length().is_some(),
                    stat: update.stat || checked.listed_stat().is_some(),
                });
            }
            if checked.is_last_pass() {
                let fate = rewrite::fate(checked, missing.then_some(index), update.stat);
                update
                    .entries
                    .push(&rewrite::Entry::encode(checked.file_lines(), fate))?;
            }
        }
        self.listed.push(normalized(checked.name()))
    }

    /// Walks the roots and classes what the lists said nothing of, handing
    /// each finding to `report` in order (see the module documentation).
    /// Returns what rewriting the list needs, if the audit is
    /// [`updating`](Self::updating) (and was not stopped). Fails if what
    /// the audit keeps cannot be written or read back.
    pub fn finish(
        mut self,
        mut report: impl FnMut(Finding) -> ControlFlow<()>,
    ) -> io::Result<Option<Rewrite>> {
        let mut listed = Spool::new(IN_MEMORY);
        for name in std::mem::replace(&mut self.listed, Sorter::new(0)).into_sorted()? {
            listed.push(&name?)?;
        }
        // The new files, in walk order.
        let mut new = Spool::new(IN_MEMORY);
        let options = std::sync::Arc::new(std::mem::take(&mut self.options));
        for root in std::mem::take(&mut self.roots) {
            let unlisted = Unlisted {
                walk: Walk::new(vec![root], std::sync::Arc::clone(&options)),
                listed: (Box::new(listed.records()?) as Box<dyn Iterator<Item = _>>).peekable(),
            };
            if self.walk_new(unlisted, &mut new, &mut report)?.is_break() {
                return Ok(None);
            }
        }
        let mut moves = join::moves(std::mem::replace(&mut self.joined, Sorter::new(0)))?;
        // The new files in walk order, NEW or MOVED from the entry paired
        // with them; then the missing entries that did not move, in list
        // order.
        let new_or_moved = |name, moved: Option<Vec<u8>>| {
            Some(match moved {
                Some(record) => Finding::Moved {
                    name,
                    from: record[8..].to_vec(),
                },
                None => Finding::New { name },
            })
        };
        let missing =
            |name, moved: Option<Vec<u8>>| moved.is_none().then_some(Finding::Missing { name });
        if report_paired(&mut new, &mut moves.by_new, &mut report, new_or_moved)?.is_break()
            || report_paired(
                &mut self.missing,
                &mut moves.by_missing,
                &mut report,
                missing,
            )?
            .is_break()
        {
            return Ok(None);
        }
        Ok(self.update.map(|update| Rewrite {
            entries: update.entries,
            moves,
            new,
            shape: update.shape,
            stat: update.stat,
        }))
    }

    /// Keeps the files of one root that no list names, in walk order, with
    /// their digests beside the missing entries' where a missing entry may
    /// be one of them (hashed as `hash_each` hashes, several at once);
    /// reports the walk's errors.
    fn walk_new(
        &mut self,
        unlisted: Unlisted<'_>,
        new: &mut Spool,
        report: &mut impl FnMut(Finding) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        let Some(tree) = self.tree else {
            for found in unlisted {
                match found? {
                    Ok(name) => new.push(&Name::of_path_lossy(&name).into_bytes())?,
                    Err((name, error)) => {
                        let name = Name::of_path_lossy(&name).into_bytes();
                        if report(Finding::Error { name, error }).is_break() {
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                }
            }
            return Ok(ControlFlow::Continue(()));
        };
        let mut failed = Ok(());
        let jobs = unlisted.map_while(|found| {
            let job = match found {
                Err(error) => {
                    failed = Err(error);
                    return None;
                }
                Ok(Ok(path)) => {
                    Job::path((true, Name::of_path_lossy(&path).into_bytes()), path, &tree)
                }
                // A walk error, in its place.
                Ok(Err((path, error))) => Job::path(
                    (false, Name::of_path_lossy(&path).into_bytes()),
                    path,
                    &tree,
                )
                .failing(error),
            };
            Some(match &self.progress {
                Some(counter) => job.progress(counter.clone()),
                None => job,
            })
        });
        let mut kept = Ok(());
        let mut flow = ControlFlow::Continue(());
        hash_each(jobs, |event| {
            flow = match event {
                Event::Waiting => report(Finding::Waiting),
                Event::Ready(outcome) => {
                    let (file, name) = outcome.tag;
                    let index = new.len();
                    if file {
                        kept = new.push(&name);
                    }
                    match outcome.result {
                        Ok(hashed) => {
                            if kept.is_ok() {
                                let file = join::NewFile::encode(&name, outcome.stamp.as_ref());
                                kept = self.joined.push(Joined::new_file(
                                    &hashed.digest,
                                    index,
                                    &file,
                                ));
                            }
                            ControlFlow::Continue(())
                        }
                        // A walk error, or a new file that could not be
                        // read: said (the file is new all the same).
                        Err(error) => report(Finding::Error { name, error }),
                    }
                }
            };
            if kept.is_err() {
                flow = ControlFlow::Break(());
            }
            flow
        });
        kept?;
        failed?;
        Ok(flow)
    }
}

/// The digest of empty input: every empty file's.
fn empty_digest(tree: &TreeParams) -> Option<bt2sum::Digest> {
    bt2sum::TreeHasher::new(tree).finalize().ok()
}

/// Reports what `finding` makes of each name of `names` and the move that
/// pairs it ([`with_moves`]), until `report` says to stop.
fn report_paired(
    names: &mut Spool,
    moves: &mut Spool,
    report: &mut impl FnMut(Finding) -> ControlFlow<()>,
    finding: impl Fn(Vec<u8>, Option<Vec<u8>>) -> Option<Finding>,
) -> io::Result<ControlFlow<()>> {
    for paired in with_moves(names, moves)? {
        let (name, moved) = paired?;
        if let Some(finding) = finding(name, moved)
            && report(finding).is_break()
        {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// A name, and the record of a move that pairs it, if one does.
type Paired = (Vec<u8>, Option<Vec<u8>>);

/// The names of `names`, in order, each with the record of `moves` (sorted
/// by the index of the name it pairs) that pairs it, if one does.
fn with_moves<'a>(
    names: &'a mut Spool,
    moves: &'a mut Spool,
) -> io::Result<impl Iterator<Item = io::Result<Paired>> + 'a> {
    let mut moves = moves.records()?.peekable();
    let names = names.records()?.enumerate();
    Ok(names.map(move |(index, name)| {
        let moved = moves.next_if(
            |record| matches!(record, Ok(record) if join::index_of(record) == index as u64),
        );
        Ok((name?, moved.transpose()?))
    }))
}

/// The files of a walk that no list names, in walk order, or the walk's
/// errors; `Err` if the listed names cannot be read back.
struct Unlisted<'a> {
    walk: Walk,
    listed: std::iter::Peekable<Box<dyn Iterator<Item = io::Result<Vec<u8>>> + 'a>>,
}

/// A path, or where the walk failed and why.
type Found = Result<OsString, (OsString, bt2sum::Error)>;

impl Iterator for Unlisted<'_> {
    type Item = io::Result<Found>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let path = match self.walk.next()? {
                Walked::File(path) => path,
                Walked::Error { path, error } => return Some(Ok(Err((path, error.into())))),
            };
            let key = normalized(&Name::of_path_lossy(&path).into_bytes());
            let known = loop {
                match self.listed.peek() {
                    Some(Ok(next)) if *next < key => {
                        self.listed.next();
                    }
                    Some(Ok(next)) => break *next == key,
                    Some(Err(_)) => return self.listed.next().map(|error| error.map(|_| Ok(path))),
                    None => break false,
                }
            };
            if !known {
                return Some(Ok(Ok(path)));
            }
        }
    }
}

/// A name as the audit compares it: `.` and empty components left out, so
/// that `./a/b`, `a//b` and `a/./b` are `a/b` (a leading `/` kept).
///
/// ```
/// use crate::cli::audit::normalized;
/// assert_eq!(normalized(b"./a/b"), b"a/b");
/// assert_eq!(normalized(b"a//./b/"), b"a/b");
/// assert_eq!(normalized(b"/x/./y"), b"/x/y");
/// assert_eq!(normalized(b"../a"), b"../a");
/// ```
pub fn normalized(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    if name.starts_with(b"/") {
        out.push(b'/');
    }
    for part in name.split(|&b| b == b'/') {
        if part.is_empty() || part == b"." {
            continue;
        }
        if !out.is_empty() && out != b"/" {
            out.push(b'/');
        }
        out.extend_from_slice(part);
    }
    out
}
