//! `--check --audit DIR`: the lists checked as check mode checks them, then
//! what the library's auditor finds under the directories: new, moved and
//! missing files, printed after the lists' verdicts with a summary of
//! their own.

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bt2sum::TreeParams;
use bt2sum::audit::{Auditor, Finding, Rewrite, Rewritten};
use bt2sum::binary::system::FileId;
use bt2sum::format::name::Name;
use bt2sum::format::verdict::Class;
use bt2sum::verify::{Report, Verifier};
use bt2sum::walk;

use super::super::config::{Checking, Verbosity};
use super::super::json;
use super::super::output::{Status, report_listed, warn};
use super::Printer;

/// What checks the lists: the verifier alone, or an audit around it.
pub enum Checker<'v> {
    Lists(&'v Verifier<'v>),
    Audit(Box<Auditor<'v>>),
}

impl<'v> Checker<'v> {
    /// The checker `config` asks for; an audit adds the bytes of the new
    /// files it hashes to `progress`, as the verifier does the listed
    /// files'.
    pub fn new(
        config: &Checking,
        verifier: &'v Verifier<'v>,
        progress: Option<&Arc<AtomicU64>>,
    ) -> Checker<'v> {
        // (Checked in slices, only the first audits.)
        let first_slice = config.slice.is_none_or(|part| part.part() == 1);
        if config.audit.is_empty() || !first_slice {
            return Checker::Lists(verifier);
        }
        // The lists, and the file standard output writes to, are never new.
        let mut skip: Vec<FileId> = FileId::of_stdout().into_iter().collect();
        for list in &config.lists {
            if let Ok(metadata) = std::fs::metadata(list)
                && let Ok(id) = FileId::of(Path::new(list), &metadata)
            {
                skip.push(id);
            }
        }
        // Nor is a temporary file an update that was killed left behind.
        let excludes = config
            .excludes
            .with(&format!("{UPDATE_PREFIX}*"))
            .expect("a valid pattern");
        let options = walk::Options {
            follow_links: config.follow_links,
            skip,
            excludes,
        };
        let mut auditor = Auditor::new(verifier, config.audit.clone(), options);
        if let Some(counter) = progress {
            auditor = auditor.progress(Arc::clone(counter));
        }
        Checker::Audit(Box::new(match config.update {
            Some(stat) => auditor.updating(stat),
            None => auditor,
        }))
    }

    /// Whether missing files wait for the audit's end (to be MISSING, or
    /// MOVED), instead of being reported as unreadable.
    pub fn defers_missing(&self) -> bool {
        matches!(self, Checker::Audit(_))
    }

    /// Checks one list, handing each report to `report`.
    pub fn check(
        &mut self,
        list: &mut dyn BufRead,
        list_is_stdin: bool,
        report: impl FnMut(Report<'_>) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        match self {
            Checker::Lists(verifier) => verifier.check(list, list_is_stdin, report),
            Checker::Audit(auditor) => auditor.check(list, list_is_stdin, report),
        }
    }

    /// For an audit, walks the directories and prints what it finds, then
    /// its summary, and with `--update` rewrites the list; the status of the
    /// audit (Success for a plain check). `Err` only when writing to
    /// standard output fails.
    pub fn finish(self, printer: &mut Printer<'_>, counts: &mut Counts) -> io::Result<Status> {
        let Checker::Audit(auditor) = self else {
            return Ok(Status::Success);
        };
        let mut written = Ok(());
        let finished = auditor.finish(|finding| {
            written = counts.print(&finding, printer);
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        });
        written?;
        printer.out.flush()?;
        let config = printer.config;
        for (list_name, tally) in std::mem::take(&mut printer.summaries) {
            super::summarize(config, &list_name, &tally);
        }
        if config.verbosity != Verbosity::Status {
            for warning in counts.warnings(config.ignore_missing) {
                warn(&warning);
            }
        }
        let rewrite = match finished {
            Ok(rewrite) => rewrite,
            Err(error) => {
                let reason = bt2sum::plain_message(&error);
                warn(&format!("cannot keep what the audit found: {reason}"));
                return Ok(Status::Failure);
            }
        };
        let Some(rewrite) = rewrite else {
            return Ok(counts.status());
        };
        // Updated, the list holds the new, moved and changed files: only
        // what it keeps as it was (missing files) still fails the run.
        let list = Path::new(&config.lists[0]);
        match update(list, rewrite, config) {
            Ok(done) => {
                if config.verbosity != Verbosity::Status {
                    report_updated(list, &done);
                    if config.json {
                        let fields = serde_json::json!({
                            "list": json::name(Name::of_path_lossy(list.as_os_str()).printed()),
                            "added": done.added,
                            "renamed": done.renamed,
                            "rehashed": done.rehashed,
                            "restated": done.restated,
                        });
                        printer.object(&json::object("update", fields))?;
                    }
                }
                let failed = counts.missing + counts.errors + done.unreadable > 0;
                Ok(if failed {
                    Status::Failure
                } else {
                    Status::Success
                })
            }
            Err(error) => {
                let shown = Name::of_path_lossy(list.as_os_str()).shown();
                let reason = bt2sum::plain_message(&error);
                warn(&format!("{shown}: not updated: {reason}"));
                Ok(Status::Failure)
            }
        }
    }
}

/// Rewrites `list` as the audit found the tree, atomically: a temporary
/// file in the list's directory, written, flushed to the disk, given the
/// list's permissions, then renamed over it (and the directory flushed, so
/// that the rename itself survives a crash). Until the rename, the list is
/// as it was; after it, whole and new. Files that cannot be hashed are
/// reported.
fn update(list: &Path, rewrite: Rewrite, config: &Checking) -> io::Result<Rewritten> {
    let directory = match list.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let permissions = std::fs::metadata(list)?.permissions();
    let mut temporary = tempfile::Builder::new()
        .prefix(UPDATE_PREFIX)
        .tempfile_in(directory)?;
    let mut reader = io::BufReader::with_capacity(64 << 10, std::fs::File::open(list)?);
    let settings = config.settings;
    let default_tree = TreeParams::new(
        settings.grammar.untagged_algorithm,
        settings
            .grammar
            .digest_size
            .unwrap_or(settings.grammar.untagged_algorithm.max_digest_size()),
        settings.leaf_size,
    )
    .map_err(io::Error::other)?;
    let done = {
        let mut out = io::BufWriter::with_capacity(64 << 10, temporary.as_file_mut());
        let done = rewrite.write(&mut reader, &mut out, &default_tree, |name, error| {
            report_listed(name, &error.to_string());
        })?;
        out.flush()?;
        done
    };
    temporary.as_file().set_permissions(permissions)?;
    temporary.as_file().sync_all()?;
    temporary.persist(list).map_err(|error| error.error)?;
    flush_directory(directory)?;
    Ok(done)
}

/// The start of the name of `--update`'s temporary file, which no audit
/// takes for a new file (a run that was killed may leave one behind).
pub const UPDATE_PREFIX: &str = ".bt2sum-update-";

/// Flushes a directory's entries to the disk (Unix; elsewhere the rename is
/// as durable as the system makes it).
fn flush_directory(directory: &Path) -> io::Result<()> {
    #[cfg(unix)]
    return std::fs::File::open(directory)?.sync_all();
    #[cfg(not(unix))]
    {
        let _ = directory;
        Ok(())
    }
}

/// Says what the update changed in the list, on standard error.
fn report_updated(list: &Path, done: &Rewritten) {
    let mut parts = Vec::new();
    for (count, one, many) in [
        (done.added, "file added", "files added"),
        (done.renamed, "renamed", "renamed"),
        (done.rehashed, "hashed again", "hashed again"),
        (
            done.restated,
            "stat line written anew",
            "stat lines written anew",
        ),
    ] {
        match count {
            0 => {}
            1 => parts.push(format!("1 {one}")),
            _ => parts.push(format!("{count} {many}")),
        }
    }
    if parts.is_empty() {
        parts.push("nothing changed".to_string());
    }
    let shown = Name::of_path_lossy(list.as_os_str()).shown();
    warn(&format!("{shown}: updated: {}", parts.join(", ")));
}

/// What an audit found, counted.
#[derive(Default)]
pub struct Counts {
    pub new: u64,
    pub moved: u64,
    pub missing: u64,
    pub errors: u64,
}

impl Counts {
    /// Counts and prints one finding.
    fn print(&mut self, finding: &Finding, printer: &mut Printer<'_>) -> io::Result<()> {
        let (name, class) = match finding {
            Finding::Waiting => return printer.out.flush(),
            Finding::Error { name, error } => {
                self.errors += 1;
                return printer.error(name, &error.to_string());
            }
            Finding::New { name } => {
                self.new += 1;
                (name, Class::New)
            }
            Finding::Moved { name, from } => {
                self.moved += 1;
                (name, Class::MovedFrom(from))
            }
            Finding::Missing { name } => {
                if printer.config.ignore_missing {
                    return Ok(());
                }
                self.missing += 1;
                (name, Class::Missing)
            }
        };
        printer.class(name, class)
    }

    /// Failure if anything but OK was found.
    fn status(&self) -> Status {
        if self.new + self.moved + self.missing + self.errors > 0 {
            Status::Failure
        } else {
            Status::Success
        }
    }

    /// The summary, in GNU's words and style, each to follow `bt2sum: `.
    fn warnings(&self, ignore_missing: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut warn = |count: u64, one: &str, many: &str| match count {
            0 => {}
            1 => warnings.push(format!("WARNING: 1 {one}")),
            _ => warnings.push(format!("WARNING: {count} {many}")),
        };
        warn(self.new, "file is new", "files are new");
        warn(self.moved, "file was moved", "files were moved");
        if !ignore_missing {
            warn(
                self.missing,
                "listed file is missing",
                "listed files are missing",
            );
        }
        warnings
    }
}
