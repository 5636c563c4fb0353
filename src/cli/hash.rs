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
use bt2sum::format::Ending;
use bt2sum::format::checksum::{Style, push_line};
use bt2sum::format::leaf::{push_count_line, push_selection_count_line};
use bt2sum::format::name::Name;
use bt2sum::format::stat::{Mtime, push_stat_line};
use bt2sum::leaves::{LeafLog, Unwritten};
use bt2sum::{Event, Hashed, Job, Selection, TreeParams, hash_each, plain_message};

use super::config::{Hashing, Inputs, Listing, Roots};
use super::files0::{self, Entry};
use super::output::{Status, output_failed, report};
use super::progress::{BarMode, Progress};
use super::{json, walk};
use bt2sum::binary::system;

/// Hashes every input, writing lines to `out`; returns the exit status.
pub fn run(config: &Hashing, when: BarMode, out: &mut dyn Write) -> Status {
    let mut status = Status::Success;
    // The names, in order: held (given, or walked), or read from a list as
    // they are hashed (whose sizes are then not known ahead).
    let (held, listed, named) = match &config.inputs {
        Inputs::Planned { total, selection } => {
            return plan(config, *total, selection.as_ref(), out);
        }
        Inputs::Stdin => (vec![OsString::from("-")], None, false),
        Inputs::Named(files) => (files.clone(), None, true),
        Inputs::ListedIn(list) => match files0::open(list) {
            Ok(names) => (Vec::new(), Some(names), true),
            Err(error) => {
                report(list, &plain_message(&error));
                return Status::Failure;
            }
        },
        Inputs::Walk {
            roots,
            follow_links,
            excludes,
        } => {
            let roots = match roots {
                Roots::Given(roots) => roots.clone(),
                Roots::ListedIn(list) => match listed_roots(list) {
                    Some((roots, bad)) => {
                        if bad {
                            status = Status::Failure;
                        }
                        roots
                    }
                    None => return Status::Failure,
                },
            };
            let walk = walk::expand(&roots, *follow_links, excludes.clone());
            if walk.errors > 0 {
                status = Status::Failure;
            }
            (walk.files, None, true)
        }
    };
    let named = named || config.name.is_some();
    let progress = Progress::start(when, || match listed {
        Some(_) => None,
        None => total_bytes(config, &held),
    });
    let names: Box<dyn Iterator<Item = Entry>> = match listed {
        Some(listed) => Box::new(listed),
        None => Box::new(held.into_iter().map(Entry::Name)),
    };
    let tree = &config.tree;
    let jobs = names.map(|listed| {
        let (name, error) = match listed {
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
    });
    let mut lines = Vec::new();
    let mut written = Ok(());
    let (mut hashed_files, mut errors) = (0u64, 0u64);
    hash_each(jobs, |event| {
        written = match event {
            Event::Waiting => out.flush(),
            Event::Ready(outcome) => {
                let (name, printed) = outcome.tag;
                match outcome.result {
                    Ok(hashed) => {
                        let shown = named.then_some(&printed[..]);
                        let listing = Printed {
                            tree,
                            style: config.style,
                            ending: config.ending,
                            listing: &config.listing,
                            name: shown,
                            stat: outcome.modified.filter(|_| config.stat).map(Mtime::of),
                            json: config.json,
                        };
                        hashed_files += 1;
                        match listing.write(out, &mut lines, hashed, outcome.leaves) {
                            Ok(()) => Ok(()),
                            Err(Unwritten::Output(error)) => Err(error),
                            Err(Unwritten::Listing(error)) => {
                                // Its checksum line goes too: an input is
                                // listed whole or reported.
                                lines.clear();
                                status = Status::Failure;
                                errors += 1;
                                failed(out, &name, &printed, &error.to_string(), config.json)
                            }
                        }
                    }
                    Err(error) => {
                        status = Status::Failure;
                        errors += 1;
                        failed(out, &name, &printed, &error.to_string(), config.json)
                    }
                }
            }
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    if config.json && written.is_ok() {
        let summary = json::object(
            "summary",
            serde_json::json!({ "files": hashed_files, "errors": errors, "status": status as u8 }),
        );
        lines.clear();
        json::push(&mut lines, &summary);
        written = out.write_all(&lines);
    }
    match written.and_then(|()| out.flush()) {
        Ok(()) => status,
        Err(error) => status.max(output_failed(&error)),
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

/// What is printed for one input.
struct Printed<'a> {
    tree: &'a TreeParams,
    style: Style,
    ending: Ending,
    listing: &'a Listing,
    /// The input's name; `None` for standard input when no FILE is given.
    name: Option<&'a [u8]>,
    /// The modification time of a regular file whose stat line is printed.
    stat: Option<Mtime>,
    /// Whether JSON objects are printed instead of lines.
    json: bool,
}

impl Printed<'_> {
    /// Writes the input's lines: its checksum line, its leaf lines, or the
    /// line that counts its leaves, as the listing asks.
    fn write(
        &self,
        out: &mut dyn Write,
        lines: &mut Vec<u8>,
        hashed: Hashed,
        leaves: Option<LeafLog>,
    ) -> Result<(), Unwritten> {
        if self.json {
            return self.write_json(out, lines, hashed, leaves);
        }
        lines.clear();
        let (tree, name, length) = (self.tree, self.name, hashed.length);
        match self.listing {
            Listing::None | Listing::Leaves(None) => {
                push_line(
                    lines,
                    self.style,
                    tree.algorithm(),
                    &hashed.digest,
                    name,
                    self.ending,
                );
                if let (Some(mtime), Some(_)) = (self.stat, name) {
                    push_stat_line(lines, tree, name, length, mtime, self.ending);
                }
            }
            Listing::Count(selection) => {
                push_count(lines, tree, name, length, selection.as_ref(), self.ending);
            }
            Listing::Leaves(Some(_)) => {}
        }
        let listed_from_start = match self.listing {
            Listing::Leaves(None) => true,
            Listing::Leaves(Some(selection)) => selection.takes_the_start(),
            Listing::None | Listing::Count(_) => false,
        };
        if length == 0 && listed_from_start {
            // An empty input has no leaf: its listing says so.
            push_count_line(lines, tree, name, 0, self.ending);
        } else if let Some(leaves) = leaves {
            return leaves.write_lines(out, lines, tree, name, length, self.ending);
        }
        out.write_all(lines).map_err(Unwritten::Output)
    }
}

impl Printed<'_> {
    /// [`write`](Self::write) as JSON objects: `checksum` (with `mtime`
    /// for a stat line), `count`, `leaf`.
    fn write_json(
        &self,
        out: &mut dyn Write,
        lines: &mut Vec<u8>,
        hashed: Hashed,
        leaves: Option<LeafLog>,
    ) -> Result<(), Unwritten> {
        lines.clear();
        let (tree, length) = (self.tree, hashed.length);
        let name = json::maybe_name(self.name);
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
        let listed_from_start = match self.listing {
            Listing::None => false,
            Listing::Leaves(None) | Listing::Count(_) => true,
            Listing::Leaves(Some(selection)) => selection.takes_the_start(),
        };
        match self.listing {
            Listing::None | Listing::Leaves(None) => {
                let mut fields = serde_json::json!({
                    "name": name,
                    "digest": hashed.digest.to_hex(),
                    "length": length,
                });
                if let (Some(mtime), Some(_)) = (self.stat, self.name) {
                    fields["mtime"] = mtime.to_string().into();
                }
                json::push(lines, &json::with_tree("checksum", tree, fields));
            }
            Listing::Count(selection) => json::push(lines, &count(selection.as_ref())),
            Listing::Leaves(Some(_)) => {}
        }
        let empty = length == 0 && listed_from_start;
        match leaves {
            Some(_) if empty && !matches!(self.listing, Listing::Count(_)) => {
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
    tree: &TreeParams,
    name: Option<&[u8]>,
    total: u64,
    selection: Option<&Selection>,
    ending: Ending,
) {
    match selection {
        Some(selection) => {
            let leaves = selection.leaves(tree.leaf_count(total));
            push_selection_count_line(lines, tree, name, total, &leaves, ending);
        }
        None => push_count_line(lines, tree, name, total, ending),
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
    push_count(
        &mut line,
        &config.tree,
        config.name.as_deref(),
        total,
        selection,
        config.ending,
    );
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
