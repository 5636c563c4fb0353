//! `--check --audit DIR`: every file under the roots classed against the
//! lists (docs/audit.md). [`Audit::keep`] keeps, in bounded memory
//! (`bt2sum::spill`), every listed name and the missing entries;
//! [`Audit::finish`] then walks the roots as `-r` does. A new file is
//! hashed only when a missing entry could have moved to it, and never an
//! empty one (they all share one digest).

use std::ffi::OsString;
use std::io;
use std::ops::ControlFlow::{self, Break, Continue};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bt2sum::format::name::Name;
use bt2sum::spill::Spill;
use bt2sum::sys::FileId;
use bt2sum::verify::{Checked, Verdict};
use bt2sum::{Event, Job, TreeParams, hash_each};
use moves::{Joined, NewFile, Which};
use rewrite::{Rewrite, Shape};
pub use scope::Scope;
use serde_bytes::ByteBuf;
pub use update::UpdatedList;

use super::output::{JsonName, Printer, Record, Status, Verbosity, warn};
use super::plan::{Auditing, Checking};
use super::tally::Tally;
use super::walk::{Skipped, Walked, walk};

mod moves;
mod rewrite;
mod scope;
mod update;

/// An audit of the files under some roots against the lists checked.
pub struct Audit<'a> {
    plan: &'a Auditing,
    updated: Option<&'a UpdatedList>,
    skipped: Arc<Skipped>,
    progress: Option<Arc<AtomicU64>>,
    /// Every listed name, normalized.
    listed: Spill<ByteBuf>,
    /// In list order.
    missing: Spill<ByteBuf>,
    /// The first missing entry's parameters: new files are hashed so.
    tree: Option<TreeParams>,
    joined: Spill<Joined>,
    /// `--update`: per listed file, what becomes of its lines, and the
    /// shape of the list's first checksum line, for new files.
    entries: Spill<rewrite::Entry>,
    shape: Option<Shape>,
    /// The first listed file out of the audit's scope, normalized: a list
    /// read from the wrong directory may have every file out of it.
    pub first_outside: Option<Vec<u8>>,
}

impl<'a> Audit<'a> {
    /// An audit as `plan` asks, adding the bytes it hashes to `progress`.
    pub fn new(
        check: &Checking,
        plan: &'a Auditing,
        updated: Option<&'a UpdatedList>,
        progress: Option<&Arc<AtomicU64>>,
    ) -> Audit<'a> {
        Audit {
            plan,
            updated,
            skipped: Arc::new(skipped(check, updated)),
            progress: progress.cloned(),
            listed: Spill::sorted(),
            missing: Spill::default(),
            tree: None,
            joined: Spill::sorted(),
            entries: Spill::default(),
            shape: None,
            first_outside: None,
        }
    }

    /// Keeps what the audit and the update need of a checked file; whether
    /// it failed and the update takes it in (`--accept`).
    pub fn keep(&mut self, checked: &Checked) -> io::Result<bool> {
        let missing = checked.is_missing() && !checked.pass.continued;
        let index = self.missing.len();
        if missing {
            let name = ByteBuf::from(&checked.pass.name[..]);
            let movable = checked.expected().filter(|expected| {
                let tree = *self.tree.get_or_insert(checked.pass.tree);
                // (Every empty file has the digest of empty input.)
                let empty = bt2sum::TreeHasher::new(&tree).finalize().ok();
                tree == checked.pass.tree && Some(**expected) != empty
            });
            if let Some(digest) = movable {
                let which = Which::Missing(index, name.clone());
                self.joined
                    .push(&(ByteBuf::from(digest.as_bytes()), which))?;
            }
            self.missing.push(&name)?;
        }
        self.listed
            .push(&ByteBuf::from(Name::normalized(&checked.pass.name)))?;
        let Some(update) = &self.plan.update else {
            return Ok(false);
        };
        // (With a stat line if it has one, or the update adds them.)
        let shape = checked.tagged().map(|tagged| Shape {
            tree: checked.pass.tree,
            tagged,
            leaves: checked.pass.total.is_some(),
            stat: update.stat || checked.pass.stat.is_some(),
        });
        self.shape = self.shape.or(shape);
        let fate = match missing {
            true => Some(rewrite::Fate::Missing(index)),
            false => rewrite::fate(checked, shape, update),
        };
        let Some(fate) = fate.filter(|_| !checked.pass.continued) else {
            return Ok(false);
        };
        let accepted = matches!(fate, rewrite::Fate::Changed(_))
            && checked.file_verdict() == Some(Verdict::Failed);
        let lines = checked.file_lines();
        let lines = (*lines.start(), *lines.end());
        self.entries.push(&rewrite::Entry { lines, fate })?;
        Ok(accepted)
    }

    /// Walks the roots and prints what the lists said nothing of; then
    /// (`summarize`) the lists' summaries, its own, and with `--update`
    /// rewrites the list. `Err` only when writing to standard output fails.
    pub fn finish(
        self,
        check: &Checking,
        printer: &mut Printer<'_>,
        tally: &mut Tally,
        summarize: impl FnOnce(),
    ) -> io::Result<Status> {
        let mut written = Ok(());
        let updated = self.updated;
        let mut base = Base::default();
        let outside = self.first_outside.clone();
        // (The first listed file out of scope found as a new file one
        // directory deeper: the walk began above the list's.)
        let mut deeper = Base::default();
        let finished = self.classify(|finding| {
            match &finding {
                Finding::Class("MOVED", name, Some(from)) => base.moved(name, from),
                Finding::Class("NEW", name, _) if matches!(deeper, Base::NoMove) => {
                    if let Some(outside) = &outside
                        && prefix_of(&Name::normalized(name), outside).is_some()
                    {
                        deeper.moved(name, outside);
                    }
                }
                _ => {}
            }
            written = finding.print(printer, tally, check.ignore_missing);
            written.as_ref().map_or(Break(()), |()| Continue(()))
        });
        written?;
        printer.flush()?;
        summarize();
        warn_found(printer.verbosity, tally, check.ignore_missing, base, deeper);
        let rewrite = match finished {
            Ok(Some(rewrite)) => rewrite,
            Ok(None) => return Ok(tally.audit_status()),
            Err(error) => {
                let reason = bt2sum::plain_message(&error);
                warn(&format!("cannot keep what the audit found: {reason}"));
                return Ok(Status::Failure);
            }
        };
        let updated = updated.expect("an update opens its list first");
        update::update(updated, rewrite, check, printer, tally)
    }

    /// Walks the roots and hands each finding to `report`, in order; what
    /// rewriting the list needs, if the audit updates it (and was not
    /// stopped).
    fn classify(
        mut self,
        mut report: impl FnMut(Finding) -> ControlFlow<()>,
    ) -> io::Result<Option<Rewrite>> {
        let mut listed = std::mem::replace(&mut self.listed, Spill::sorted());
        let mut new = Spill::default();
        let (plan, skipped) = (self.plan, Arc::clone(&self.skipped));
        for root in &plan.roots {
            let walk = walk(root, &plan.walk, &skipped);
            if self
                .walk_new(unlisted(walk, &mut listed), &mut new, &mut report)?
                .is_break()
            {
                return Ok(None);
            }
        }
        let mut moves = moves::moves(std::mem::replace(&mut self.joined, Spill::sorted()))?;
        // The new files in walk order, NEW or MOVED from the entry paired
        // with them; then the missing entries that did not move, in list
        // order.
        for pair in moves::paired(&mut new, &mut moves.by_new) {
            let (name, from) = pair?;
            let class = if from.is_some() { "MOVED" } else { "NEW" };
            if report(Finding::Class(class, name, from.map(ByteBuf::into_vec))).is_break() {
                return Ok(None);
            }
        }
        for pair in moves::paired(&mut self.missing, &mut moves.by_missing) {
            if let (name, None) = pair?
                && report(Finding::Class("MISSING", name, None)).is_break()
            {
                return Ok(None);
            }
        }
        Ok(self.plan.update.as_ref().map(|update| Rewrite {
            entries: self.entries,
            moves,
            new,
            shape: self.shape,
            update: update.clone(),
        }))
    }

    /// Keeps the files of one root that no list names, in walk order, with
    /// their digests where a missing entry may be one of them (none is read
    /// otherwise: with no listed file missing, none can be one moved);
    /// reports the walk's errors.
    fn walk_new(
        &mut self,
        unlisted: impl Iterator<Item = io::Result<Found>>,
        new: &mut Spill<ByteBuf>,
        report: &mut impl FnMut(Finding) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        let (mut failed, mut kept) = (Ok(()), Ok(()));
        let mut found = unlisted.map_while(|found| found.map_err(|error| failed = Err(error)).ok());
        let joined = &mut self.joined;
        // A file met (hashed or not), or where the walk failed (`file`
        // false) or a new file could not be read (new all the same); `None`
        // when the next is not ready.
        let mut keep = |met: Option<(bool, Vec<u8>, NewDigest)>| {
            let Some((file, name, hashed)) = met else {
                return report(Finding::Waiting);
            };
            let index = new.len();
            if file && kept.is_ok() {
                kept = new.push(&ByteBuf::from(&name[..]));
            }
            let flow = match hashed {
                Ok(Some((digest, stamp))) if kept.is_ok() => {
                    let moved = NewFile::of(&name, stamp.as_ref());
                    let digest = ByteBuf::from(digest.as_bytes());
                    kept = joined.push(&(digest, Which::New(index, moved)));
                    Continue(())
                }
                Ok(_) => Continue(()),
                Err(error) => report(Finding::Error(name, error)),
            };
            kept.as_ref().map_or(Break(()), |()| flow)
        };
        let flow = match self.tree {
            None => found.try_for_each(|(path, error)| {
                let name = Name::of_path_lossy(&path).into_bytes();
                keep(Some((error.is_none(), name, error.map_or(Ok(None), Err))))
            }),
            Some(tree) => hash_found(found, &tree, self.progress.clone(), keep),
        };
        kept?;
        failed?;
        Ok(flow)
    }
}

/// A new file's digest and stamp, if it was read, or why it could not be.
type NewDigest = Result<Option<(bt2sum::Digest, Option<bt2sum::Stamp>)>, bt2sum::Error>;

/// Hashes the files met, several at once, handing each to `keep` in order
/// (a walk error in its place, `None` when the next is not ready); whether
/// `keep` stopped it.
fn hash_found(
    found: impl Iterator<Item = Found>,
    tree: &TreeParams,
    progress: Option<Arc<AtomicU64>>,
    mut keep: impl FnMut(Option<(bool, Vec<u8>, NewDigest)>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let jobs = found.map(|(path, error)| {
        let name = Name::of_path_lossy(&path).into_bytes();
        let mut job = Job::path((error.is_none(), name), path, tree);
        if let Some(error) = error {
            // A walk error, in its place.
            job = job.failing(error);
        }
        job.progress(progress.clone())
    });
    let mut flow = Continue(());
    hash_each(jobs, |event| {
        flow = keep(match event {
            Event::Waiting => None,
            Event::Ready(outcome) => {
                let ((file, name), stamp) = (outcome.tag, outcome.stamp);
                let hashed = outcome.result.map(|hashed| Some((hashed.digest, stamp)));
                Some((file, name, hashed))
            }
        });
        flow
    });
    flow
}

/// Warns what the audit found, unless `--status`: its warnings, its line
/// (unless `--quiet`), and a hint if it found no listed file where the list
/// says, and the moves (`base`), or else the first listed file out of scope
/// found one directory deeper (`deeper`), say where the list's base is.
fn warn_found(verbosity: Verbosity, tally: &Tally, ignore_missing: bool, base: Base, deeper: Base) {
    if verbosity == Verbosity::Status {
        return;
    }
    for said in tally.audit_summary(ignore_missing, verbosity == Verbosity::Quiet) {
        warn(&said);
    }
    let found_here = tally.ok + tally.unread + tally.failed + tally.changed;
    let hint = match tally.moved {
        0 => deeper.hint(),
        _ => base.hint(),
    };
    if let (0, Some(hint)) = (found_here, hint) {
        warn(&hint);
    }
}

/// What a walk passes over in an audit: the lists, their ledger, standard
/// output's file, and an update's temporary files in a list's directory
/// (a run that was killed may have left one behind).
fn skipped(check: &Checking, updated: Option<&UpdatedList>) -> Skipped {
    let mut skipped = Skipped {
        files: super::sys::stdout_file().into_iter().collect(),
        names_in: Vec::new(),
    };
    for list in &check.lists {
        skipped.files.extend(FileId::of_path(Path::new(list)));
        let list = std::fs::canonicalize(list).ok();
        let directory = list.and_then(|list| FileId::of_path(list.parent()?).ok());
        skipped.names_in.extend(directory);
    }
    if let Some(ledger) = &check.ledger {
        skipped.files.extend(FileId::of_path(&ledger.file));
    }
    if let Some((list, directory)) = updated.and_then(|list| list.ids().ok()) {
        skipped.files.push(list);
        skipped.names_in.push(directory);
    }
    skipped
}

/// What an audit finds once the lists are checked, in order.
enum Finding {
    /// NEW, MOVED (from a listed name) or MISSING.
    Class(&'static str, Vec<u8>, Option<Vec<u8>>),
    /// A walk's error, or a new file that could not be hashed (it is new
    /// all the same).
    Error(Vec<u8>, bt2sum::Error),
    /// The next finding is not ready: a good time to flush.
    Waiting,
}

impl Finding {
    fn print(
        &self,
        printer: &mut Printer<'_>,
        tally: &mut Tally,
        ignore_missing: bool,
    ) -> io::Result<()> {
        let (class, name, from) = match self {
            Finding::Waiting => return printer.flush(),
            Finding::Error(name, error) => {
                tally.errors += 1;
                return printer.error(name, &error.to_string());
            }
            Finding::Class("MISSING", ..) if ignore_missing => return Ok(()),
            Finding::Class(class, name, from) => (*class, name, from),
        };
        *match class {
            "NEW" => &mut tally.new,
            "MOVED" => &mut tally.moved,
            _ => &mut tally.missing,
        } += 1;
        printer.emit(&Record::Class {
            name: JsonName(Some(name)),
            verdict: class,
            from: from.as_deref().map(|from| JsonName(Some(from))),
        })
    }
}

/// Whether every file that moved moved by one prefix, added or taken away:
/// then the audit, or the list, started from another directory.
#[derive(Default, PartialEq)]
enum Base {
    #[default]
    NoMove,
    /// Every new name is `PREFIX/` and the listed one (`true`), or every
    /// listed name is `PREFIX/` and the new one (`false`).
    Prefix(Vec<u8>, bool),
    Other,
}

impl Base {
    fn moved(&mut self, name: &[u8], from: &[u8]) {
        let (name, from) = (Name::normalized(name), Name::normalized(from));
        let this = match (prefix_of(&name, &from), prefix_of(&from, &name)) {
            (Some(prefix), _) => Base::Prefix(prefix, true),
            (None, Some(prefix)) => Base::Prefix(prefix, false),
            (None, None) => Base::Other,
        };
        *self = match *self == Base::NoMove || *self == this {
            true => this,
            false => Base::Other,
        };
    }

    fn hint(&self) -> Option<String> {
        let Base::Prefix(prefix, deeper) = self else {
            return None;
        };
        let prefix = Name::listed(prefix).shown();
        Some(match deeper {
            true => format!(
                "hint: every listed file was found under {prefix}/: the list's names are \
                 relative to {prefix}; audit from there (-C {prefix}, the list's path from there)"
            ),
            false => format!(
                "hint: the list names every file under {prefix}/, and the audit found them \
                 without it: the list's names are relative to the directory that holds \
                 {prefix}; audit {prefix} from there"
            ),
        })
    }
}

/// The directories `long` has before `short`, if it ends with `/short`.
fn prefix_of(long: &[u8], short: &[u8]) -> Option<Vec<u8>> {
    let cut = long.len().checked_sub(short.len() + 1)?;
    (long.ends_with(short) && long[cut] == b'/').then(|| long[..cut].to_vec())
}

/// A path walked, and why the walk failed there if it did.
type Found = (OsString, Option<bt2sum::Error>);

/// The files of a walk that no list names (`listed`, sorted), and the
/// walk's errors, in walk order; `Err` where the listed names cannot be
/// read back.
fn unlisted<'a>(
    walk: impl Iterator<Item = Walked> + 'a,
    listed: &'a mut Spill<ByteBuf>,
) -> impl Iterator<Item = io::Result<Found>> + 'a {
    let mut listed = listed.iter().peekable();
    walk.filter_map(move |walked| {
        let path = match walked {
            Ok(path) => path,
            Err((path, error)) => return Some(Ok((path, Some(error.into())))),
        };
        let key = Name::normalized(Name::of_path_lossy(&path).printed());
        while listed
            .next_if(|next| matches!(next, Ok(next) if **next < key))
            .is_some()
        {}
        match listed.peek() {
            Some(Ok(next)) if **next == key => None,
            Some(Err(_)) => listed.next().and_then(Result::err).map(Err),
            _ => Some(Ok((path, None))),
        }
    })
}
