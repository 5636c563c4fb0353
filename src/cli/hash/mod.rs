//! The hashing driver: one checksum line per input, in argument order, each
//! written as soon as its input and every one before it are done; errors
//! reported per input and counted rather than fatal. With `--leaves`, the
//! input's leaf lines follow its checksum line; with a selection
//! (`--leaf-range`, `--part`), only the selected leaves' lines are printed.
//! `--leaf-count` prints a count line instead, and with `--total` reads no
//! input at all.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::SystemTime;

use bt2sum::format::name::Name;
use bt2sum::format::stat::Mtime;
use bt2sum::leaves::LeafLog;
use bt2sum::{Event, Hashed, Job, Outcome, Selection, hash_each, plain_message};

use super::output::{Hex, JsonName, Printer, Record, Status, Tree, Verbosity, ended, report};
use super::plan::{Hashing, Inputs, Listing, Roots};
use super::progress::{BarMode, Progress};
use super::sys;
use super::walk::{Skipped, WalkPlan, Walked, walk};

mod files0;

/// Hashes every input, writing lines to `out`; returns the exit status.
pub fn run(config: &Hashing, when: BarMode, out: &mut dyn Write) -> Status {
    let mut printer = Printer::new(out, config.json, config.layout, Verbosity::Normal);
    let mut status = Status::Success;
    let mut names = match names(config, &mut printer, &mut status) {
        Ok(names) => names,
        Err(done) => return done,
    };
    let progress = Progress::start(when, || names.total_bytes(config));
    let mut report = Report {
        config,
        printer,
        // (Standard input read because no FILE was given has no name.)
        named: !matches!(config.inputs, Inputs::Stdin) || config.name.is_some(),
        status,
        files: 0,
        errors: 0,
    };
    let jobs = names.entries().map(|entry| job(config, entry, &progress));
    let mut written = Ok(());
    hash_each(jobs, |event| {
        written = match event {
            Event::Waiting => report.printer.flush(),
            Event::Ready(outcome) => {
                progress.file_done();
                report.outcome(outcome)
            }
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    report.finish(written)
}

/// The inputs' names, in order: given, walked as they are hashed (the
/// roots of `--recursive`, how to walk them and what to skip), or read from
/// a list as they are hashed (whose sizes are then not known ahead).
enum Names {
    Given(Vec<OsString>),
    Walked(Vec<OsString>, Box<WalkPlan>, Skipped),
    Listed(Box<dyn Iterator<Item = Walked>>),
}

impl Names {
    /// The bytes the run will hash, if they can be known ahead (a walk's
    /// files, walked once more; one of unknown size there counts 0).
    fn total_bytes(&mut self, config: &Hashing) -> Option<u64> {
        let walked = match self {
            Names::Given(_) => false,
            Names::Walked(..) => true,
            Names::Listed(_) => return None,
        };
        let size = |name: OsString| hashed_bytes(config, &name).or(walked.then_some(0));
        let mut sizes = self.entries().map(|entry| entry.map_or(Some(0), size));
        sizes.try_fold(0u64, |total, size| Some(total.saturating_add(size?)))
    }

    /// The names; given or walked ones each time, a list's once.
    fn entries(&mut self) -> Box<dyn Iterator<Item = Walked> + '_> {
        match self {
            Names::Given(names) => Box::new(names.iter().cloned().map(Ok)),
            Names::Walked(roots, plan, skipped) => {
                let (plan, skipped) = (&*plan, &*skipped);
                Box::new(roots.iter().flat_map(move |root| walk(root, plan, skipped)))
            }
            Names::Listed(listed) => Box::new(listed),
        }
    }
}

/// The inputs' names; `Err` with the run's status when there is nothing to
/// hash: a list that cannot be read, or `--leaf-count --total T`, whose
/// count line of a T-byte file, read from nowhere, is printed here.
/// `status` becomes a failure where names are missing (a walk's errors, an
/// entry of `-r --files0-from` that is no name).
fn names(config: &Hashing, out: &mut Printer<'_>, status: &mut Status) -> Result<Names, Status> {
    Ok(match &config.inputs {
        Inputs::Planned(total) => {
            // (Planned only with a count line.)
            let selection = match &config.listing {
                Listing::Count(selection) => selection.as_ref(),
                _ => None,
            };
            let name = JsonName(config.name.as_deref());
            let record = Record::count(&config.tree, name, *total, selection);
            return Err(ended(out.end(Ok(()), &record)));
        }
        Inputs::Stdin => Names::Given(vec![OsString::from("-")]),
        Inputs::Named(files) => Names::Given(files.clone()),
        Inputs::ListedIn(list) => Names::Listed(files0::open(list)?),
        Inputs::Walk { roots, walk } => {
            let mut roots = match roots {
                Roots::Given(roots) => roots.clone(),
                // Read whole: the walk sorts what is under them anyway.
                Roots::ListedIn(list) => (files0::open(list)?)
                    .filter_map(|entry| match entry {
                        Ok(name) => Some(name),
                        Err((place, error)) => {
                            // (As a missing FILE would.)
                            *status = report(&place, &plain_message(&error));
                            None
                        }
                    })
                    .collect(),
            };
            if roots.is_empty() {
                roots.push(OsString::from("."));
            }
            // The file standard output writes to is never hashed.
            let skipped = Skipped {
                files: sys::stdout_file().into_iter().collect(),
                ..Skipped::default()
            };
            Names::Walked(roots, Box::new(walk.clone()), skipped)
        }
    })
}

/// A job's tag: the input's name as given, and as lines print it.
type Tag = (OsString, Vec<u8>);

fn job(config: &Hashing, entry: Walked, progress: &Progress) -> Job<Tag, Option<LeafLog>> {
    let tree = &config.tree;
    let (name, mut error) = match entry {
        Ok(name) => (name, None),
        Err((place, error)) => (place, Some(error.into())),
    };
    // How lines name it: a name that cannot be printed is an error.
    let printed = match (&config.name, Name::of_path(&name)) {
        (Some(renamed), _) => renamed.clone(),
        (None, Some(printed)) => printed.into_bytes(),
        (None, None) => {
            error = Some(bt2sum::Error::NotUnicode);
            Vec::new()
        }
    };
    let mut job = if name == "-" {
        error = error.or_else(|| progress.open_stdin().err().map(Into::into));
        Job::stdin((name, printed), tree)
    } else {
        let path = PathBuf::from(&name);
        Job::path((name, printed), path, tree)
    };
    if let Some(error) = error {
        job = job.failing(error);
    }
    let listed = matches!(config.listing, Listing::Leaves(_));
    let mut job = job.with_leaves(listed.then(|| LeafLog::new(tree.digest_size())));
    match &config.listing {
        Listing::Leaves(Some(selection)) => job = job.select(selection.clone()),
        // Counting hashes no leaf: the input's length is all it needs.
        Listing::Count(_) => job = job.select(0..0),
        Listing::None | Listing::Leaves(None) => {}
    }
    if let Some(total) = config.excerpt_of {
        job = job.excerpt_of(total);
    }
    job.progress(progress.counter().cloned())
}

/// What the run has written and found: the count of inputs hashed and
/// failed.
struct Report<'a, 'o> {
    config: &'a Hashing,
    printer: Printer<'o>,
    /// Whether lines name their input.
    named: bool,
    status: Status,
    files: u64,
    errors: u64,
}

impl Report<'_, '_> {
    /// Writes an input's records, or reports why it has none.
    fn outcome(&mut self, mut outcome: Outcome<Tag, Option<LeafLog>>) -> io::Result<()> {
        let (name, printed) = outcome.tag;
        let unkept = outcome.leaves.as_mut().and_then(LeafLog::error);
        let message = match (outcome.result, unkept) {
            // (A listing whose leaf digests could not be kept is reported
            // whole, its checksum line too.)
            (Ok(_), Some(unkept)) => unkept.to_string(),
            (Ok(hashed), None) => {
                self.files += 1;
                let name = self.named.then_some(&printed[..]);
                let modified = outcome.stamp.and_then(|stamp| stamp.modified());
                return self.write(name, &hashed, modified, outcome.leaves);
            }
            // (As `ls` would not: a user who came from it meant `-r`.)
            (Err(bt2sum::Error::Io(error)), _) if error.kind() == io::ErrorKind::IsADirectory => {
                format!("{}; -r hashes the files in it", plain_message(&error))
            }
            (Err(error), _) => error.to_string(),
        };
        self.status = Status::Failure;
        self.errors += 1;
        let shown = Name::of_path_lossy(&name);
        self.printer.error_as(&printed, shown.printed(), &message)
    }

    /// Writes an input's records: its checksum (with `--stat` its stat
    /// line), its leaves, or the count of its leaves, as the listing asks.
    fn write(
        &mut self,
        name: Option<&[u8]>,
        hashed: &Hashed,
        modified: Option<SystemTime>,
        leaves: Option<LeafLog>,
    ) -> io::Result<()> {
        let (tree, length, name) = (&self.config.tree, hashed.length, JsonName(name));
        let selection = match &self.config.listing {
            Listing::Count(selection) => {
                let count = Record::count(tree, name, length, selection.as_ref());
                return self.printer.emit(&count);
            }
            Listing::Leaves(Some(selection)) => Some(selection),
            Listing::None | Listing::Leaves(None) => {
                self.printer.emit(&Record::Checksum {
                    tree: Tree(tree),
                    name,
                    digest: Hex(hashed.digest.as_bytes()),
                    length,
                    mtime: (modified.filter(|_| self.config.stat && name.0.is_some()))
                        .map(Mtime::of),
                })?;
                None
            }
        };
        let Some(leaves) = leaves else {
            return Ok(());
        };
        if length == 0 && selection.is_none_or(Selection::takes_the_start) {
            // An empty input has no leaf: its listing says so.
            return self.printer.emit(&Record::count(tree, name, 0, None));
        }
        self.write_leaves(name, length, leaves)
    }

    /// Writes the leaf lines of a `length`-byte input.
    fn write_leaves(&mut self, name: JsonName, length: u64, mut leaves: LeafLog) -> io::Result<()> {
        let tree = &self.config.tree;
        for leaf in leaves.iter() {
            let (index, digest) = match leaf {
                Ok(leaf) => leaf,
                Err(unkept) => {
                    self.status = Status::Failure;
                    self.errors += 1;
                    return (self.printer).error(name.0.unwrap_or(b"-"), &unkept.to_string());
                }
            };
            let bytes = tree.leaf_bytes(index, length);
            self.printer.emit(&Record::Leaf {
                tree: Tree(tree),
                name,
                index,
                offset: bytes.start,
                length: bytes.end - bytes.start,
                total: length,
                digest: Hex(digest.as_bytes()),
            })?;
        }
        Ok(())
    }

    /// Ends the run: with `--json`, the summary; the status, a failure if
    /// output could not be written.
    fn finish(mut self, written: io::Result<()>) -> Status {
        let summary = Record::HashSummary {
            files: self.files,
            errors: self.errors,
            status: self.status as u8,
        };
        self.status.max(ended(self.printer.end(written, &summary)))
    }
}

/// The bytes hashing `name` reads, for the progress bar: its size (only
/// the selection's part with `--leaf-range` or `--part`); `None` if it is
/// not a regular file (a pipe, a FIFO, a device), whose size cannot be
/// known. An input that cannot be examined counts 0: it fails anyway.
fn hashed_bytes(config: &Hashing, name: &OsStr) -> Option<u64> {
    // (A stream that says nothing of itself has no size either.)
    let metadata = if name == "-" {
        bt2sum::duplicate_stdin().map(|stdin| stdin.metadata().ok())
    } else {
        std::fs::metadata(name).map(Some)
    };
    let length = match metadata {
        Ok(Some(metadata)) if metadata.is_file() => metadata.len(),
        Ok(Some(metadata)) if metadata.is_dir() => 0,
        Ok(_) => return None,
        Err(_) => 0,
    };
    Some(match &config.listing {
        // An excerpt is all read.
        Listing::Leaves(Some(_)) if config.excerpt_of.is_some() => length,
        Listing::Leaves(Some(selection)) => {
            let leaves = selection.leaves(config.tree.leaf_count(length));
            let bytes = config.tree.leaves_bytes(&leaves, length);
            bytes.end - bytes.start
        }
        Listing::Count(_) => 0,
        Listing::None | Listing::Leaves(None) => length,
    })
}
