//! Rewriting an audited list so that it describes the tree as it is now,
//! for deliberate changes only (`--update`):
//!
//! - a file that verifies keeps its lines (with `--stat`, or a stat line
//!   already, that line says the file's size and time now);
//! - a CHANGED file (an edit, its stat line says) is hashed again, and its
//!   lines written anew in the same shape (tagged or not, with leaf lines
//!   and a stat line if it had them);
//! - a MOVED file's lines get its new name (and its stat line its time);
//! - a NEW file's lines are added at the end, in walk order, in the shape
//!   of the list's first checksum line;
//! - FAILED (damaged), unreadable and MISSING files keep their lines as
//!   they were: damage is never absorbed into the list, unless the user
//!   names the file (`--accept`: it is hashed again, as an edit is) or
//!   forgets the missing (`--forget-missing`: their lines are dropped).
//!
//! Everything else in the list (comments, blank and improperly formatted
//! lines, those among a file's lines too) is copied as it is, and a last
//! line without a newline gets one. The list is read again, a line at a
//! time; what the audit kept says what becomes of each file's lines. A
//! stat line always says what the file was when it was hashed, so that it
//! goes with the digest beside it.

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use super::moves::{Moves, NewFile};
use crate::cli::plan::Update;
use bt2sum::Error;
use bt2sum::Event;
use bt2sum::TreeParams;
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
use bt2sum::{Job, hash_each};

/// How a file's lines are written: its tree parameters, tagged or
/// GNU-style, with leaf lines, with a stat line.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) struct Shape {
    pub tree: TreeParams,
    pub tagged: bool,
    pub leaves: bool,
    pub stat: bool,
}

/// What becomes of a listed file's lines.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Fate {
    /// Copied as they are.
    Keep,
    /// Missing entry `index`: renamed if it moved, else copied (or, when
    /// `true`, dropped).
    Missing(u64, bool),
    /// Written anew from the file as it is now, in this shape.
    Changed(Shape),
    /// Copied, with a stat line saying this size and time.
    Restat(TreeParams, u64, Mtime),
}

/// What becomes of a listed file's lines, given what checking it found:
/// `missing`, its index among the missing entries; `update`, what the user
/// asked of the update.
pub(super) fn fate(checked: &Checked, missing: Option<u64>, update: &Update) -> Fate {
    if let Some(index) = missing {
        return Fate::Missing(index, update.forget_missing);
    }
    let Some(tagged) = checked.tagged() else {
        // Leaf lines alone: nothing to write anew.
        return Fate::Keep;
    };
    // (A stat line is on the file's first pass, with its checksum line.)
    let one_pass = checked.is_first_pass();
    match (
        checked.file_verdict(),
        checked.outcome(),
        checked.modified(),
    ) {
        (Some(Verdict::Changed), _, _) => Fate::Changed(Shape {
            tree: *checked.tree(),
            tagged,
            leaves: checked.listed_length().is_some(),
            stat: true,
        }),
        (Some(Verdict::Failed), _, _) if update.accept.matches_listed(checked.name()) => {
            Fate::Changed(Shape {
                tree: *checked.tree(),
                tagged,
                leaves: checked.listed_length().is_some(),
                stat: update.stat || checked.listed_stat().is_some(),
            })
        }
        (Some(Verdict::Ok), Ok(hashed), Some(modified)) if one_pass => {
            let now = (hashed.length, Mtime::of(modified));
            let listed = checked.listed_stat();
            if (update.stat || listed.is_some()) && listed != Some(now) {
                Fate::Restat(*checked.tree(), now.0, now.1)
            } else {
                Fate::Keep
            }
        }
        _ => Fate::Keep,
    }
}

/// A listed file's lines (its first and last, by number) and their fate.
#[derive(Serialize, Deserialize)]
pub(super) struct Entry {
    pub lines: (u64, u64),
    pub fate: Fate,
}

/// What an audit kept to rewrite its list: see the module documentation.
pub struct Rewrite {
    pub(super) entries: Spill<Entry>,
    pub(super) moves: Moves,
    /// The new files, in walk order.
    pub(super) new: Spill<serde_bytes::ByteBuf>,
    /// How new files are listed; `None` when the list has no checksum line
    /// (they are then listed with the verifier's settings).
    pub(super) shape: Option<Shape>,
    pub(super) stat: bool,
}

/// What a rewrite did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// New files listed.
    pub added: u64,
    /// Moved files renamed.
    pub renamed: u64,
    /// Changed files hashed again.
    pub rehashed: u64,
    /// Files whose stat line was written anew.
    pub restated: u64,
    /// Missing files whose lines were dropped.
    pub forgotten: u64,
    /// Files that could not be hashed (their lines are kept, or, new, left
    /// out); each reported.
    pub unreadable: u64,
}

/// Copies a line of an entry whose stat line is written anew (`first`: its
/// first line), leaving its old stat line out and writing the new one after
/// the checksum line; whether the new one was written.
fn restat(
    out: &mut dyn Write,
    line: &[u8],
    first: bool,
    tree: &TreeParams,
    size: u64,
    mtime: Mtime,
) -> io::Result<bool> {
    if is_stat(line) {
        return Ok(false);
    }
    out.write_all(line)?;
    let Some(name) = named(line).filter(|_| first) else {
        return Ok(false);
    };
    let mut stat = Vec::new();
    let lines = InputLines {
        tree,
        name: Some(&name),
        ending: Ending::Newline,
    };
    lines.push_stat(&mut stat, size, mtime);
    out.write_all(&stat)?;
    Ok(true)
}

impl Rewrite {
    /// Writes the list as the audit found the tree to `out`, reading the
    /// list (`list`, from its start) again; `default_tree` lists new files
    /// when the list has no checksum line to take the shape of. Each file
    /// that cannot be hashed is handed to `unreadable` (its lines are kept,
    /// or, new, it is left out).
    pub fn write(
        mut self,
        list: &mut dyn BufRead,
        out: &mut dyn Write,
        default_tree: &TreeParams,
        mut unreadable: impl FnMut(&[u8], &Error),
    ) -> io::Result<Rewritten> {
        let mut done = Rewritten::default();
        let mut entries = self.entries.iter()?.peekable();
        let mut moved = self.moves.by_missing.iter()?.peekable();
        let mut current: Option<Entry> = None;
        let mut state = State::default();
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            match read_line(&mut &mut *list, &mut line)? {
                Record::End => break,
                Record::TooLong => {
                    return Err(io::Error::other(
                        "the list has a line over 16 MiB, which cannot be copied",
                    ));
                }
                Record::Line => number += 1,
            }
            if !line.ends_with(b"\n") {
                // The list's last line: lines may follow it now.
                line.push(b'\n');
            }
            if current.as_ref().is_some_and(|entry| number > entry.lines.1) {
                current = None;
                state = State::default();
            }
            if current.is_none()
                && matches!(entries.peek(), Some(Ok(next)) if next.lines.0 == number)
            {
                current = entries.next().transpose()?;
            }
            let Some(entry) = &current else {
                out.write_all(&line)?;
                continue;
            };
            let first = number == entry.lines.0;
            match &entry.fate {
                Fate::Keep => out.write_all(&line)?,
                Fate::Missing(index, forget) => {
                    if first {
                        let pair = |moved: &io::Result<(u64, NewFile)>| matches!(moved, Ok((at, _)) if at == index);
                        state.renamed = match moved.next_if(pair) {
                            Some(moved) => {
                                done.renamed += 1;
                                Some(moved?.1)
                            }
                            None => None,
                        };
                    }
                    match &state.renamed {
                        Some(file) => renamed(out, &line, file)?,
                        // (Its comments and blank lines are kept.)
                        None if *forget && named(&line).is_some() => {
                            done.forgotten += u64::from(first);
                        }
                        None => out.write_all(&line)?,
                    }
                }
                Fate::Changed(shape) => {
                    if first {
                        state.written = rehash(out, &line, shape, &mut unreadable)?;
                        if state.written {
                            done.rehashed += 1;
                        } else {
                            done.unreadable += 1;
                        }
                    }
                    // (Its comments and blank lines are kept.)
                    if !state.written || named(&line).is_none() {
                        out.write_all(&line)?;
                    }
                }
                Fate::Restat(tree, size, mtime) => {
                    if restat(out, &line, first, tree, *size, *mtime)? {
                        done.restated += 1;
                    }
                }
            }
        }
        drop((entries, moved));
        let shape = self.shape.unwrap_or(Shape {
            tree: *default_tree,
            tagged: true,
            leaves: false,
            stat: self.stat,
        });
        self.add_new(out, &shape, &mut done, &mut unreadable)?;
        out.flush()?;
        Ok(done)
    }

    /// Lists the new files that did not move, in walk order, hashed several
    /// at once.
    fn add_new(
        &mut self,
        out: &mut dyn Write,
        shape: &Shape,
        done: &mut Rewritten,
        unreadable: &mut impl FnMut(&[u8], &Error),
    ) -> io::Result<()> {
        let mut moves = self.moves.by_new.iter()?.peekable();
        let mut failed = Ok(());
        let names = self.new.iter()?.enumerate().filter_map(|(index, name)| {
            let moved = moves
                .next_if(|moved| matches!(moved, Ok((at, _)) if *at == index as u64))
                .is_some();
            match name {
                Ok(name) if !moved => Some(name.into_vec()),
                Ok(_) => None,
                Err(error) => {
                    failed = Err(error);
                    None
                }
            }
        });
        let jobs = names.map(|name| {
            let path = Name::listed(&name).path().unwrap_or_default();
            let log = shape.leaves.then(|| LeafLog::new(shape.tree.digest_size()));
            Job::path(name, path, &shape.tree).with_leaves(log)
        });
        let mut written = Ok(());
        hash_each(jobs, |event| {
            let Event::Ready(outcome) = event else {
                return ControlFlow::Continue(());
            };
            written = match outcome.result {
                Ok(hashed) => {
                    done.added += 1;
                    let file = Hashed {
                        name: &outcome.tag,
                        digest: &hashed.digest,
                        length: hashed.length,
                        modified: outcome.stamp.and_then(|stamp| stamp.modified()),
                    };
                    write_file(out, shape, &file, outcome.leaves)
                }
                Err(error) => {
                    done.unreadable += 1;
                    unreadable(&outcome.tag, &error);
                    Ok(())
                }
            };
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        });
        written?;
        failed
    }
}

/// What is known of the entry whose lines are being written.
#[derive(Default)]
struct State {
    /// The file it moved to, if it moved.
    renamed: Option<NewFile>,
    /// Whether its lines were written anew (the old ones are then left
    /// out).
    written: bool,
}

/// A file hashed, to list.
struct Hashed<'a> {
    name: &'a [u8],
    digest: &'a bt2sum::Digest,
    length: u64,
    modified: Option<std::time::SystemTime>,
}

/// Writes a file's lines in `shape`: its checksum line, its stat line, its
/// leaf lines (or the count line of an empty file).
fn write_file(
    out: &mut dyn Write,
    shape: &Shape,
    file: &Hashed<'_>,
    leaves: Option<LeafLog>,
) -> io::Result<()> {
    let mut lines = Vec::new();
    let style = if shape.tagged {
        Style::Tagged
    } else {
        Style::Untagged
    };
    let (tree, name) = (&shape.tree, Some(file.name));
    push_line(
        &mut lines,
        style,
        tree.algorithm(),
        file.digest,
        name,
        Ending::Newline,
    );
    let input = InputLines {
        tree,
        name,
        ending: Ending::Newline,
    };
    if let (true, Some(modified)) = (shape.stat, file.modified) {
        input.push_stat(&mut lines, file.length, Mtime::of(modified));
    }
    match leaves {
        Some(_) if file.length == 0 => input.push_count(&mut lines, 0),
        Some(log) => {
            return log.write_lines(out, &mut lines, input, file.length);
        }
        None => {}
    }
    out.write_all(&lines)
}

/// Hashes again the changed file whose first line (its checksum line) is
/// `line`, and writes its lines anew in `shape`; `false` (nothing written,
/// the reason given to `unreadable`) if it cannot be hashed.
fn rehash(
    out: &mut dyn Write,
    line: &[u8],
    shape: &Shape,
    unreadable: &mut impl FnMut(&[u8], &Error),
) -> io::Result<bool> {
    let Some(name) = named(line) else {
        return Ok(false);
    };
    let path = Name::listed(&name).path().unwrap_or_default();
    let log = shape.leaves.then(|| LeafLog::new(shape.tree.digest_size()));
    let job = Job::path((), path, &shape.tree).with_leaves(log);
    let mut result = None;
    hash_each(std::iter::once(job), |event| {
        if let Event::Ready(outcome) = event {
            result = Some(outcome);
        }
        ControlFlow::Continue(())
    });
    let outcome = result.expect("one job, one outcome");
    match outcome.result {
        Ok(hashed) => {
            let file = Hashed {
                name: &name,
                digest: &hashed.digest,
                length: hashed.length,
                modified: outcome.stamp.and_then(|stamp| stamp.modified()),
            };
            write_file(out, shape, &file, outcome.leaves)?;
            Ok(true)
        }
        Err(error) => {
            unreadable(&name, &error);
            Ok(false)
        }
    }
}

/// Writes a line of a moved file again, with the name of the file it moved
/// to; a stat line with that file's size and time when it was hashed.
fn renamed(out: &mut dyn Write, line: &[u8], file: &NewFile) -> io::Result<()> {
    let name = &file.name[..];
    let mut again = Vec::new();
    let grammar = Grammar::default();
    match classify(line, &grammar) {
        ListLine::Checksum(entry) => {
            let style = if entry.tagged {
                Style::Tagged
            } else {
                Style::Untagged
            };
            push_line(
                &mut again,
                style,
                entry.algorithm,
                &entry.expected,
                Some(name),
                Ending::Newline,
            );
        }
        ListLine::Leaf(leaf) => {
            let input = InputLines {
                tree: &leaf.tree,
                name: Some(name),
                ending: Ending::Newline,
            };
            match (&leaf.leaf, &leaf.span) {
                (Some(listed), _) => {
                    input.push_leaf(
                        &mut again,
                        leaf.total,
                        listed.index,
                        listed.digest.as_bytes(),
                    );
                }
                (None, Some(span)) => {
                    let count = leaf.tree.leaf_count(leaf.total);
                    let at = |offset: u64| {
                        if offset == leaf.total {
                            count
                        } else {
                            offset / leaf.tree.leaf_size()
                        }
                    };
                    let leaves = at(span.start)..at(span.end);
                    input.push_selection_count(&mut again, leaf.total, &leaves);
                }
                (None, None) => input.push_count(&mut again, leaf.total),
            }
        }
        ListLine::Stat(stat) => {
            let (size, mtime) = file.stat.unwrap_or((stat.size, stat.mtime));
            let input = InputLines {
                tree: &stat.tree,
                name: Some(name),
                ending: Ending::Newline,
            };
            input.push_stat(&mut again, size, mtime);
        }
        // (An entry's lines are all one of these; anything else is kept.)
        ListLine::Skip | ListLine::Nameless { .. } | ListLine::Improper(_) => {
            again.extend_from_slice(line);
        }
    }
    out.write_all(&again)
}

/// The name a checksum, leaf or stat line gives.
fn named(line: &[u8]) -> Option<Vec<u8>> {
    match classify(line, &Grammar::default()) {
        ListLine::Checksum(entry) => Some(entry.name),
        ListLine::Leaf(leaf) => leaf.name,
        ListLine::Stat(stat) => stat.name,
        _ => None,
    }
}

/// Whether a line is a stat line.
fn is_stat(line: &[u8]) -> bool {
    matches!(classify(line, &Grammar::default()), ListLine::Stat(_))
}
