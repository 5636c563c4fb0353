//! The hashing driver: one checksum line per input, in argument order, each
//! written as soon as its input and every one before it are done; errors
//! reported per input and counted rather than fatal. With `--leaves`, the
//! input's leaf lines follow its checksum line; with a selection
//! (`--leaf-range`, `--part`), only the selected leaves' lines are printed.
//! `--leaf-count` prints a count line instead, and with `--total` reads no
//! input at all.

use std::ffi::OsString;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use bt2sum::binary::memory::out_of_memory;
use bt2sum::format::InputLines;
use bt2sum::format::checksum::push_line;
use bt2sum::format::name::Name;
use bt2sum::format::stat::Mtime;
use bt2sum::leaves::{LeafLog, Unwritten};
use bt2sum::{Event, Hashed, Job, Outcome, Selection, hash_each, plain_message};

use super::config::{Hashing, Inputs, Listing, Roots};
use super::files0::{self, Entry};
use super::output::{Status, output_failed, report};
use super::progress::{BarMode, Progress};
use super::{json, walk};
use bt2sum::binary::system;

/// Hashes every input, writing lines to `out`; returns the exit status.
pub fn run(config: &Hashing, when: BarMode, out: &mut dyn Write) -> Status {
    let mut status = Status::Success;
    let names = match names(config, out, &mut status) {
        Ok(names) => names,
        Err(done) => return done,
    };
    let progress = Progress::start(when, || names.total_bytes(config));
    let mut report = Report {
        config,
        named: names.named || config.name.is_some(),
        lines: Vec::new(),
        status,
        files: 0,
        errors: 0,
    };
    let jobs = names.entries().map(|entry| job(config, entry, &progress));
    let mut written = Ok(());
    hash_each(jobs, |event| {
        written = match event {
            Event::Waiting => out.flush(),
            Event::Ready(outcome) => report.outcome(out, outcome),
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    report.finish(out, written)
}

/// The inputs' names, in order: given, walked as they are hashed, or read
/// from a list as they are hashed (whose sizes are then not known ahead).
struct Names {
    source: Source,
    /// Whether they were named (not standard input read because no FILE
    /// was given), and so are named in the lines.
    named: bool,
}

enum Source {
    Given(Vec<OsString>),
    Walked(walk::Roots),
    Listed(files0::Names),
}

impl Names {
    /// The bytes the run will hash, if they can be known ahead.
    fn total_bytes(&self, config: &Hashing) -> Option<u64> {
        match &self.source {
            Source::Given(names) => total_bytes(config, names),
            Source::Walked(roots) => Some(roots.total_bytes()),
            Source::Listed(_) => None,
        }
    }

    fn entries(self) -> Box<dyn Iterator<Item = Entry>> {
        match self.source {
            Source::Given(names) => Box::new(names.into_iter().map(Entry::Name)),
            Source::Walked(roots) => Box::new(roots.entries()),
            Source::Listed(listed) => Box::new(listed),
        }
    }
}

/// The inputs' names; `Err` with the run's status when there is nothing to
/// hash: a list that cannot be read, or `--leaf-count --total`, whose line
/// is printed here. `status` becomes a failure where names are missing (a
/// walk's errors, an entry of `-r --files0-from` that is no name).
fn names(config: &Hashing, out: &mut dyn Write, status: &mut Status) -> Result<Names, Status> {
    Ok(match &config.inputs {
        Inputs::Planned { total, selection } => {
            return Err(plan(config, *total, selection.as_ref(), out));
        }
        Inputs::Stdin => Names {
            source: Source::Given(vec![OsString::from("-")]),
            named: false,
        },
        Inputs::Named(files) => Names {
            source: Source::Given(files.clone()),
            named: true,
        },
        Inputs::ListedIn(list) => match files0::open(list) {
            Ok(names) => Names {
                source: Source::Listed(names),
                named: true,
            },
            Err(error) => {
                report(list, &plain_message(&error));
                return Err(Status::Failure);
            }
        },
        Inputs::Walk {
            roots,
            follow_links,
            excludes,
        } => {
            let roots = match roots {
                Roots::Given(roots) => roots.clone(),
                Roots::ListedIn(list) => {
                    let (roots, bad) = listed_roots(list).ok_or(Status::Failure)?;
                    if bad {
                        *status = Status::Failure;
                    }
                    roots
                }
            };
            Names {
                source: Source::Walked(walk::Roots::new(&roots, *follow_links, excludes.clone())),
                named: true,
            }
        }
    })
}

/// A job's tag: the input's name as given, and as lines print it.
type Tag = (OsString, Vec<u8>);

/// The job that hashes one entry, as the options ask.
fn job(config: &Hashing, entry: Entry, progress: &Progress) -> Job<Tag, Option<LeafLog>> {
    let tree = &config.tree;
    let (name, error) = match entry {
        Entry::Name(name) => (name, None),
        Entry::Bad { place, message } => (place, Some(io::Error::other(message).into())),
    };
    // How lines name it: a name that cannot be printed is an error.
    let (printed, unprintable) = match (&config.name, Name::of_path(&name)) {
        (Some(renamed), _) => (renamed.clone(), error),
        (None, Some(printed)) => (printed.into_bytes(), error),
        (None, None) => (Vec::new(), Some(bt2sum::Error::NotUnicode)),
    };
    let is_stdin = name == "-";
    let path = PathBuf::from(&name);
    let tag = (name, printed);
    let job = if is_stdin {
        Job::stdin(tag, tree)
    } else {
        Job::path(tag, path, tree)
    };
    let job = if let Some(error) = unprintable {
        job.failing(error)
    } else if is_stdin && system::stdin_closed() {
        job.failing(system::closed_stream().into())
    } else {
        if is_stdin {
            progress.reading_stdin();
        }
        job
    };
    let listed = matches!(config.listing, Listing::Leaves(_));
    let log = listed.then(|| LeafLog::new(tree.digest_size()));
    let mut job = job.with_leaves(log);
    match &config.listing {
        Listing::Leaves(Some(selection)) => job = job.select(selection.clone()),
        // Counting hashes no leaf: the input's length is all it needs.
        Listing::Count(_) => job = job.select(0..0),
        Listing::None | Listing::Leaves(None) => {}
    }
    if let Some(total) = config.excerpt_of {
        job = job.excerpt_of(total);
    }
    match progress.counter() {
        Some(counter) => job.progress(counter.clone()),
        None => job,
    }
}

/// An input hashed, as its lines describe it.
struct HashedInput<'a> {
    /// Its name as lines print it; `None` for standard input read because
    /// no FILE was given.
    name: Option<&'a [u8]>,
    /// A regular file's modification time, when `--stat` asks for its stat
    /// line.
    stat: Option<Mtime>,
    hashed: Hashed,
    leaves: Option<LeafLog>,
}

/// What the run has written and found: the lines of each input as it is
/// done, in order, and the count of inputs hashed and failed.
struct Report<'a> {
    config: &'a Hashing,
    /// Whether lines name their input.
    named: bool,
    /// The lines of the input being written.
    lines: Vec<u8>,
    status: Status,
    files: u64,
    errors: u64,
}

impl Report<'_> {
    /// Writes an input's lines, or reports why it has none.
    fn outcome(
        &mut self,
        out: &mut dyn Write,
        outcome: Outcome<Tag, Option<LeafLog>>,
    ) -> io::Result<()> {
        let (name, printed) = outcome.tag;
        let message = match outcome.result {
            Ok(hashed) => {
                self.files += 1;
                let shown = self.named.then_some(&printed[..]);
                let stat = outcome
                    .stamp
                    .and_then(|stamp| stamp.modified())
                    .filter(|_| self.config.stat)
                    .map(Mtime::of);
                let input = HashedInput {
                    name: shown,
                    stat,
                    hashed,
                    leaves: outcome.leaves,
                };
                let written = if self.config.json {
                    self.write_json(out, input)
                } else {
                    self.write(out, input)
                };
                match written {
                    Ok(()) => return Ok(()),
                    Err(Unwritten::Output(error)) => return Err(error),
                    Err(Unwritten::Listing(error)) => {
                        // Its checksum line goes too: an input is listed
                        // whole or reported.
                        self.lines.clear();
                        error.to_string()
                    }
                }
            }
            Err(error) => error.to_string(),
        };
        self.status = Status::Failure;
        self.errors += 1;
        failed(out, &name, &printed, &message, self.config.json)
    }

    /// Ends the run: with `--json`, the summary; the status, a failure if
    /// output could not be written.
    fn finish(mut self, out: &mut dyn Write, mut written: io::Result<()>) -> Status {
        if self.config.json && written.is_ok() {
            let fields = serde_json::json!({
                "files": self.files,
                "errors": self.errors,
                "status": self.status as u8,
            });
            self.lines.clear();
            json::push(&mut self.lines, &json::object("summary", fields));
            written = out.write_all(&self.lines);
        }
        match written.and_then(|()| out.flush()) {
            Ok(()) => self.status,
            Err(error) => self.status.max(output_failed(&error)),
        }
    }
}

/// Reports that the input `name` (as lines print it, `printed`) has no
/// line: on standard error, and with `--json` as an error object. Lines
/// before it go out first, so that stdout and stderr stay in order when
/// both go to one place.
fn failed(
    out: &mut dyn Write,
    name: &OsString,
    printed: &[u8],
    message: &str,
    as_json: bool,
) -> io::Result<()> {
    if as_json {
        let mut line = Vec::new();
        let error = serde_json::json!({ "name": json::name(printed), "message": message });
        json::push(&mut line, &json::object("error", error));
        out.write_all(&line)?;
    }
    let flushed = out.flush();
    report(name, message);
    flushed
}

/// The directories `-r --files0-from=LIST` walks, read whole (the walk
/// sorts what is under them anyway), and whether an entry was no name (each
/// is reported, and fails the run as a missing FILE would). `None` if the
/// list cannot be read or memory for it is refused.
fn listed_roots(list: &OsString) -> Option<(Vec<OsString>, bool)> {
    let names = match files0::open(list) {
        Ok(names) => names,
        Err(error) => {
            report(list, &plain_message(&error));
            return None;
        }
    };
    let mut roots = Vec::new();
    let mut bad = false;
    for listed in names {
        match listed {
            Entry::Name(name) => {
                if !bt2sum::binary::memory::reserve(&mut roots, 1) {
                    report(list, &plain_message(&out_of_memory()));
                    return None;
                }
                roots.push(name);
            }
            Entry::Bad { place, message } => {
                report(&place, &message);
                bad = true;
            }
        }
    }
    Some((roots, bad))
}

impl Report<'_> {
    /// Writes an input's lines: its checksum line (and with `--stat` its
    /// stat line), its leaf lines, or the line that counts its leaves, as
    /// the listing asks.
    fn write(&mut self, out: &mut dyn Write, input: HashedInput<'_>) -> Result<(), Unwritten> {
        let HashedInput {
            name,
            stat,
            hashed,
            leaves,
        } = input;
        let Hashing {
            tree,
            style,
            ending,
            listing,
            ..
        } = self.config;
        let (ending, lines, length) = (*ending, &mut self.lines, hashed.length);
        let input = InputLines { tree, name, ending };
        lines.clear();
        match listing {
            Listing::None | Listing::Leaves(None) => {
                push_line(
                    lines,
                    *style,
                    tree.algorithm(),
                    &hashed.digest,
                    name,
                    ending,
                );
                if let (Some(mtime), Some(_)) = (stat, name) {
                    input.push_stat(lines, length, mtime);
                }
            }
            Listing::Count(selection) => {
                push_count(lines, input, length, selection.as_ref());
            }
            Listing::Leaves(Some(_)) => {}
        }
        let listed_from_start = match listing {
            Listing::Leaves(None) => true,
            Listing::Leaves(Some(selection)) => selection.takes_the_start(),
            Listing::None | Listing::Count(_) => false,
        };
        if length == 0 && listed_from_start {
            // An empty input has no leaf: its listing says so.
            input.push_count(lines, 0);
        } else if let Some(leaves) = leaves {
            return leaves.write_lines(out, lines, input, length);
        }
        out.write_all(lines).map_err(Unwritten::Output)
    }

    /// [`write`](Self::write) as JSON objects: `checksum` (with `mtime`
    /// for a stat line), `count`, `leaf`.
    fn write_json(&mut self, out: &mut dyn Write, input: HashedInput<'_>) -> Result<(), Unwritten> {
        let (tree, listing) = (&self.config.tree, &self.config.listing);
        let (lines, hashed, length) = (&mut self.lines, input.hashed, input.hashed.length);
        lines.clear();
        let name = json::maybe_name(input.name);
        let count = |selection: Option<&Selection>| {
            let mut fields = serde_json::json!({
                "name": name,
                "leaves": tree.leaf_count(length),
                "total": length,
            });
            if let Some(selection) = selection {
                let bytes = tree.leaves_bytes(&selection.leaves(tree.leaf_count(length)), length);
                fields["offset"] = bytes.start.into();
                fields["length"] = (bytes.end - bytes.start).into();
            }
            json::with_tree("count", tree, fields)
        };
        let listed_from_start = match listing {
            Listing::None => false,
            Listing::Leaves(None) | Listing::Count(_) => true,
            Listing::Leaves(Some(selection)) => selection.takes_the_start(),
        };
        match listing {
            Listing::None | Listing::Leaves(None) => {
                let mut fields = serde_json::json!({
                    "name": name,
                    "digest": hashed.digest.to_hex(),
                    "length": length,
                });
                if let (Some(mtime), Some(_)) = (input.stat, input.name) {
                    fields["mtime"] = mtime.to_string().into();
                }
                json::push(lines, &json::with_tree("checksum", tree, fields));
            }
            Listing::Count(selection) => json::push(lines, &count(selection.as_ref())),
            Listing::Leaves(Some(_)) => {}
        }
        let empty = length == 0 && listed_from_start;
        match input.leaves {
            Some(_) if empty && !matches!(listing, Listing::Count(_)) => {
                json::push(lines, &count(None));
            }
            Some(leaves) if !empty => {
                return leaves.write_with(out, lines, |lines, index, digest| {
                    let bytes = tree.leaf_bytes(index, length);
                    let fields = serde_json::json!({
                        "name": name,
                        "index": index,
                        "offset": bytes.start,
                        "length": bytes.end - bytes.start,
                        "total": length,
                        "digest": hex::encode(digest),
                    });
                    json::push(lines, &json::with_tree("leaf", tree, fields));
                });
            }
            _ => {}
        }
        out.write_all(lines).map_err(Unwritten::Output)
    }
}

/// Appends the count line of a `total`-byte input, ending in the bytes of
/// the selected leaves if there is a selection.
fn push_count(
    lines: &mut Vec<u8>,
    input: InputLines<'_>,
    total: u64,
    selection: Option<&Selection>,
) {
    match selection {
        Some(selection) => {
            let leaves = selection.leaves(input.tree.leaf_count(total));
            input.push_selection_count(lines, total, &leaves);
        }
        None => input.push_count(lines, total),
    }
}

/// `--leaf-count --total T`: the count line of a T-byte file, read from
/// nowhere, named by `--name` or nameless.
fn plan(
    config: &Hashing,
    total: u64,
    selection: Option<&Selection>,
    out: &mut dyn Write,
) -> Status {
    let mut line = Vec::new();
    let input = InputLines {
        tree: &config.tree,
        name: config.name.as_deref(),
        ending: config.ending,
    };
    push_count(&mut line, input, total, selection);
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => Status::Success,
        Err(error) => output_failed(&error),
    }
}

/// The bytes the run will hash, for the progress bar: the sizes of the
/// regular files (only the selection's part with `--leaf-range` or
/// `--part`); `None` if an input is not a regular file (a pipe, a FIFO, a
/// device), whose size cannot be known. Inputs that cannot be examined count
/// 0: they fail anyway.
fn total_bytes(config: &Hashing, names: &[OsString]) -> Option<u64> {
    let mut total = 0u64;
    for name in names {
        let metadata = if name == "-" {
            system::stdin_metadata()
        } else {
            std::fs::metadata(name).map(Some)
        };
        let length = match metadata {
            Ok(Some(metadata)) if metadata.is_file() => metadata.len(),
            Ok(Some(metadata)) if metadata.is_dir() => 0,
            Ok(_) => return None,
            Err(_) => 0,
        };
        let hashed = match &config.listing {
            // An excerpt is all read.
            Listing::Leaves(Some(_)) if config.excerpt_of.is_some() => length,
            Listing::Leaves(Some(selection)) => {
                let bytes = config
                    .tree
                    .leaves_bytes(&selection.leaves(config.tree.leaf_count(length)), length);
                bytes.end - bytes.start
            }
            Listing::Count(_) => 0,
            Listing::None | Listing::Leaves(None) => length,
        };
        total = total.saturating_add(hashed);
    }
    Some(total)
}
