//! Rewriting an audited list so that it describes the tree as it is now
//! (`--update`, docs/audit.md), for deliberate changes only: a CHANGED
//! file is hashed again, a MOVED one renamed, NEW files added at the end;
//! FAILED, unreadable and MISSING files keep their lines (unless `--accept`
//! or `--forget-missing`): damage is never absorbed into the list. A stat
//! line always says what the file was when it was hashed, so that it goes
//! with the digest beside it.

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow::{Break, Continue};

use serde::{Deserialize, Serialize};

use super::moves::{Moves, NewFile};
use crate::cli::output::{Rewritten, report_listed};
use crate::cli::plan::Update;
use bt2sum::Event;
use bt2sum::format::checksum::{Style, push_line};
use bt2sum::format::lines::{Record, read_line};
use bt2sum::format::list::{Grammar, ListLine, classify};
use bt2sum::format::name::Name;
use bt2sum::format::stat::Mtime;
use bt2sum::format::{Ending, InputLines};
use bt2sum::leaves::LeafLog;
use bt2sum::spill::Spill;
use bt2sum::verify::Checked;
use bt2sum::verify::Verdict;
use bt2sum::{Algorithm, Digest, TreeParams};
use bt2sum::{Job, hash_each};

/// How a file's lines are written.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) struct Shape {
    pub tree: TreeParams,
    pub tagged: bool,
    pub leaves: bool,
    pub stat: bool,
}

/// What becomes of a listed file's lines that are not kept as they are.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Fate {
    /// Missing entry `index`: renamed if it moved, else copied (or, with
    /// `--forget-missing`, dropped).
    Missing(u64),
    Changed(Shape),
    /// Copied, with a stat line saying this size and time.
    Restat(TreeParams, u64, Mtime),
}

/// What becomes of the lines of a listed file that is there (`None`: they
/// are kept), shaped `shape`.
pub(super) fn fate(checked: &Checked, shape: Option<Shape>, update: &Update) -> Option<Fate> {
    // (Leaf lines alone: nothing to write anew.)
    let shape = shape?;
    // (A stat line is on the file's first pass, with its checksum line.)
    let one_pass = !checked.pass.continues;
    match (
        checked.file_verdict(),
        checked.outcome.as_ref(),
        checked.modified(),
    ) {
        (Some(Verdict::Changed), _, _) => Some(Fate::Changed(Shape {
            stat: true,
            ..shape
        })),
        (Some(Verdict::Failed), _, _) if update.accept.matches_listed(&checked.pass.name) => {
            Some(Fate::Changed(shape))
        }
        (Some(Verdict::Ok), Ok(hashed), Some(modified)) if one_pass => {
            let now = (hashed.length, Mtime::of(modified));
            let listed = checked.pass.stat;
            let restat = (update.stat || listed.is_some()) && listed != Some(now);
            restat.then_some(Fate::Restat(checked.pass.tree, now.0, now.1))
        }
        _ => None,
    }
}

/// A listed file's lines (its first and last, by number) and their fate.
#[derive(Serialize, Deserialize)]
pub(super) struct Entry {
    pub lines: (u64, u64),
    pub fate: Fate,
}

/// What an audit kept to rewrite its list.
pub struct Rewrite {
    pub(super) entries: Spill<Entry>,
    pub(super) moves: Moves,
    /// In walk order.
    pub(super) new: Spill<serde_bytes::ByteBuf>,
    /// How new files are listed; `None` when the list has no checksum line
    /// (they are then listed as the update says).
    pub(super) shape: Option<Shape>,
    pub(super) update: Update,
}

/// Reads the list's next line into `line`, ended by a newline (the last
/// line too: lines may follow it now); `false` at the list's end.
fn next_line(list: &mut dyn BufRead, line: &mut Vec<u8>) -> io::Result<bool> {
    match read_line(&mut &mut *list, line)? {
        Record::End => return Ok(false),
        Record::TooLong => {
            return Err(io::Error::other(
                "the list has a line over 16 MiB, which cannot be copied",
            ));
        }
        Record::Line => {}
    }
    if !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    Ok(true)
}

impl Rewrite {
    /// Writes the list as the audit found the tree to `out`, reading `list`
    /// again. Each file that cannot be hashed is reported.
    pub fn write(mut self, list: &mut dyn BufRead, out: &mut dyn Write) -> io::Result<Rewritten> {
        let mut done = self.copy(list, out)?;
        let shape = self.shape.unwrap_or(Shape {
            tree: self.update.tree,
            tagged: true,
            leaves: false,
            stat: self.update.stat,
        });
        let mut failed = Ok(());
        let pairs = super::moves::paired(&mut self.new, &mut self.moves.by_new);
        // The new files that did not move, in walk order.
        let names = pairs
            .filter_map(|pair| pair.map_err(|error| failed = Err(error)).ok())
            .filter_map(|(name, moved)| moved.is_none().then_some(name));
        let (added, unread) = write_hashed(out, &shape, names)?;
        done.added += added;
        done.unreadable += unread;
        failed?;
        out.flush()?;
        Ok(done)
    }

    /// Copies the list to `out`, each entry's lines as its fate says.
    fn copy(&mut self, list: &mut dyn BufRead, out: &mut dyn Write) -> io::Result<Rewritten> {
        let mut done = Rewritten::default();
        let mut entries = self.entries.iter().peekable();
        let mut moved = self.moves.by_missing.iter().peekable();
        let mut current: Option<Entry> = None;
        // Of the current entry: the file it moved to; whether its lines that
        // name the file are left out (forgotten, or written anew); a stat
        // line to write after its checksum line.
        let (mut renamed, mut left_out, mut stat) = (None, false, Vec::new());
        let (mut line, mut number) = (Vec::new(), 0u64);
        while next_line(list, &mut line)? {
            number += 1;
            current.take_if(|entry| number > entry.lines.1);
            let read = classify(&line, &Grammar::default());
            let name = named(&read);
            // (An entry's first line is its checksum line. An entry that
            // could not be read back is taken, to fail the update.)
            let starts = |next: &io::Result<Entry>| {
                (next.as_ref()).map_or(true, |next| next.lines.0 == number)
            };
            if let Some(entry) = entries.next_if(starts) {
                (renamed, left_out) = (None, false);
                match &current.insert(entry?).fate {
                    Fate::Missing(index) => {
                        let to =
                            moved.next_if(|next| next.as_ref().map_or(true, |(at, _)| at == index));
                        renamed = to.transpose()?.map(|(_, file)| file);
                        left_out = self.update.forget_missing && renamed.is_none();
                        done.renamed += u64::from(renamed.is_some());
                        done.forgotten += u64::from(left_out && name.is_some());
                    }
                    Fate::Changed(shape) => {
                        let names = name.map(<[u8]>::to_vec).into_iter();
                        left_out = write_hashed(out, shape, names)?.0 == 1;
                        done.rehashed += u64::from(left_out);
                        done.unreadable += u64::from(!left_out);
                    }
                    Fate::Restat(tree, size, mtime) => {
                        if let Some(name) = name {
                            lines_of(tree, name).push_stat(&mut stat, *size, *mtime);
                            done.restated += 1;
                        }
                    }
                }
            }
            // (An entry's comments and blank lines are kept; its old stat
            // line is left out where a new one is written.)
            match (&renamed, current.as_ref().map(|entry| &entry.fate), &read) {
                (_, None, _) => out.write_all(&line)?,
                (Some(file), _, _) => rename(out, &line, &read, file)?,
                (None, Some(Fate::Restat(..)), ListLine::Stat(_)) => {}
                (None, _, _) if left_out && name.is_some() => {}
                (None, _, _) => out.write_all(&line)?,
            }
            out.write_all(&stat)?;
            stat.clear();
        }
        Ok(done)
    }
}

/// Writes the lines of each file named in `names`, hashed several at once,
/// in `shape`: how many were written, and how many could not be hashed
/// (each reported).
fn write_hashed(
    out: &mut dyn Write,
    shape: &Shape,
    names: impl Iterator<Item = Vec<u8>>,
) -> io::Result<(u64, u64)> {
    let jobs = names.map(|name| {
        let path = Name::listed(&name).path().unwrap_or_default();
        let log = shape.leaves.then(|| LeafLog::new(shape.tree.digest_size()));
        Job::path(name, path, &shape.tree).with_leaves(log)
    });
    let (mut written, mut counts) = (Ok(()), (0, 0));
    hash_each(jobs, |event| {
        let Event::Ready(outcome) = event else {
            return Continue(());
        };
        written = write_outcome(out, shape, outcome).map(|listed| {
            counts.0 += u64::from(listed);
            counts.1 += u64::from(!listed);
        });
        written.as_ref().map_or(Break(()), |()| Continue(()))
    });
    written.map(|()| counts)
}

/// Writes the lines of a file hashed (`outcome`, tagged with its name) in
/// `shape`: its checksum line, its stat line, its leaf lines (or the count
/// line of an empty file); `false` (nothing written, the reason reported)
/// if it could not be hashed.
fn write_outcome(
    out: &mut dyn Write,
    shape: &Shape,
    mut outcome: bt2sum::Outcome<Vec<u8>, Option<LeafLog>>,
) -> io::Result<bool> {
    let name = &outcome.tag[..];
    let hashed = match outcome.result {
        Ok(hashed) => hashed,
        Err(error) => {
            report_listed(name, &error.to_string());
            return Ok(false);
        }
    };
    let modified = outcome.stamp.and_then(|stamp| stamp.modified());
    let mut lines = Vec::new();
    let algorithm = shape.tree.algorithm();
    push_checksum(&mut lines, shape.tagged, algorithm, &hashed.digest, name);
    let input = lines_of(&shape.tree, name);
    if let (true, Some(modified)) = (shape.stat, modified) {
        input.push_stat(&mut lines, hashed.length, Mtime::of(modified));
    }
    if outcome.leaves.is_some() && hashed.length == 0 {
        input.push_count(&mut lines, 0, None);
    }
    // (Written a line at a time: `out` is buffered.)
    for leaf in outcome.leaves.iter_mut().flat_map(LeafLog::iter) {
        let (index, digest) = leaf.map_err(io::Error::other)?;
        input.push_leaf(&mut lines, hashed.length, index, digest.as_bytes());
        out.write_all(&lines)?;
        lines.clear();
    }
    out.write_all(&lines)?;
    Ok(true)
}

/// Writes a line of a moved file again (`read`, as classified), with the
/// name of the file it moved to; a stat line with that file's size and
/// time when it was hashed.
fn rename(out: &mut dyn Write, line: &[u8], read: &ListLine, file: &NewFile) -> io::Result<()> {
    let name = &file.name[..];
    let mut again = Vec::new();
    match read {
        ListLine::Checksum(entry) => {
            let (algorithm, digest) = (entry.algorithm, &entry.expected);
            push_checksum(&mut again, entry.tagged, algorithm, digest, name);
        }
        ListLine::Leaf(leaf) => {
            let input = lines_of(&leaf.tree, name);
            match (&leaf.leaf, &leaf.span) {
                (Some(listed), _) => {
                    let digest = listed.digest.as_bytes();
                    input.push_leaf(&mut again, leaf.total, listed.index, digest);
                }
                (None, leaves) => input.push_count(&mut again, leaf.total, leaves.as_ref()),
            }
        }
        ListLine::Stat(stat) => {
            let (size, mtime) = file.stat.unwrap_or((stat.size, stat.mtime));
            lines_of(&stat.tree, name).push_stat(&mut again, size, mtime);
        }
        // (An entry's lines are all one of these; anything else is kept.)
        _ => again.extend_from_slice(line),
    }
    out.write_all(&again)
}

/// The lines of the file `name` that end in a newline.
fn lines_of<'a>(tree: &'a TreeParams, name: &'a [u8]) -> InputLines<'a> {
    InputLines {
        tree,
        name: Some(name),
        ending: Ending::Newline,
    }
}

/// Appends the checksum line of the file `name`, tagged or not.
fn push_checksum(
    out: &mut Vec<u8>,
    tagged: bool,
    algorithm: Algorithm,
    digest: &Digest,
    name: &[u8],
) {
    let style = if tagged {
        Style::Tagged
    } else {
        Style::Untagged
    };
    push_line(out, style, algorithm, digest, Some(name), Ending::Newline);
}

/// The file a line names, if it is one of a file's lines.
fn named(read: &ListLine) -> Option<&[u8]> {
    match read {
        ListLine::Checksum(entry) => Some(&entry.name),
        ListLine::Leaf(leaf) => leaf.name.as_deref(),
        ListLine::Stat(stat) => stat.name.as_deref(),
        _ => None,
    }
}
