//! `--check --audit DIR`: the lists checked as check mode checks them, then
//! what the library's auditor finds under the directories: new, moved and
//! missing files, printed after the lists' verdicts with a summary of
//! their own.

use std::io::{self, BufRead};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::cli::audit::{Auditor, Finding, UpdatedList, is_temporary, report_updated};
use crate::cli::system::FileId;
use crate::cli::walk;
use bt2sum::TreeParams;
use bt2sum::format::name::Name;
use bt2sum::verify::{Report, Verifier};

use super::super::config::{Checking, Verbosity};
use super::super::output::{Status, report_listed, warn};
use super::super::records::{JsonName, Record};
use super::Printer;

/// What checks the lists: the verifier alone, or an audit around it (with
/// `--update`, the list it rewrites).
pub enum Checker<'v> {
    Lists(&'v Verifier<'v>),
    Audit(Box<Auditor<'v>>, Option<&'v UpdatedList>),
}

impl<'v> Checker<'v> {
    /// The checker `config` asks for; an audit adds the bytes of the new
    /// files it hashes to `progress`, as the verifier does the listed
    /// files'.
    pub fn new(
        config: &Checking,
        verifier: &'v Verifier<'v>,
        progress: Option<&Arc<AtomicU64>>,
        updated: Option<&'v UpdatedList>,
    ) -> Checker<'v> {
        // (Checked in slices, only the first audits.)
        let first_slice = config.slice.is_none_or(|part| part.part() == 1);
        if config.audit.is_empty() || !first_slice {
            return Checker::Lists(verifier);
        }
        // The lists, and the file standard output writes to, are never new;
        // nor are an update's temporary files in a list's directory (a run
        // that was killed may have left one behind).
        let mut skip: Vec<FileId> = FileId::of_stdout().into_iter().collect();
        let mut directories = Vec::new();
        for list in &config.lists {
            if let Ok(metadata) = std::fs::metadata(list)
                && let Ok(id) = FileId::of(Path::new(list), &metadata)
            {
                skip.push(id);
            }
            let directory = std::fs::canonicalize(list)
                .ok()
                .and_then(|list| Some(list.parent()?.to_path_buf()));
            if let Some(directory) = directory
                && let Ok(metadata) = std::fs::metadata(&directory)
                && let Ok(id) = FileId::of(&directory, &metadata)
            {
                directories.push(id);
            }
        }
        if let Some((list, directory)) = updated.and_then(|list| list.ids().ok()) {
            skip.push(list);
            directories.push(directory);
        }
        let passed_over = Some((directories, is_temporary as walk::NameTest));
        let options = walk::Options {
            follow_links: config.follow_links,
            skip,
            excludes: config.excludes.clone(),
            passed_over,
        };
        let mut auditor = Auditor::new(verifier, config.audit.clone(), options);
        if let Some(counter) = progress {
            auditor = auditor.progress(Arc::clone(counter));
        }
        let auditor = match config.update {
            Some(stat) => auditor.updating(stat),
            None => auditor,
        };
        Checker::Audit(Box::new(auditor), updated)
    }

    /// Whether missing files wait for the audit's end (to be MISSING, or
    /// MOVED), instead of being reported as unreadable.
    pub fn defers_missing(&self) -> bool {
        matches!(self, Checker::Audit(..))
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
            Checker::Audit(auditor, _) => auditor.check(list, list_is_stdin, report),
        }
    }

    /// For an audit, walks the directories and prints what it finds, then
    /// its summary, and with `--update` rewrites the list; the status of the
    /// audit (Success for a plain check). `Err` only when writing to
    /// standard output fails.
    pub fn finish(self, printer: &mut Printer<'_>, counts: &mut Counts) -> io::Result<Status> {
        let Checker::Audit(auditor, updated) = self else {
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
        let list = &config.lists[0];
        let updated = updated.expect("an update opens its list first");
        let rewritten = default_tree(config).and_then(|tree| {
            updated.rewrite(rewrite, &tree, |name, error| {
                report_listed(name, &error.to_string());
            })
        });
        match rewritten {
            Ok(done) => {
                if config.verbosity != Verbosity::Status {
                    report_updated(list, &done);
                    if config.json {
                        let list = Name::of_path_lossy(list);
                        printer.out.emit(&Record::Update {
                            list: JsonName(Some(list.printed())),
                            added: done.added,
                            renamed: done.renamed,
                            rehashed: done.rehashed,
                            restated: done.restated,
                        })?;
                    }
                }
                let failed = counts.missing + counts.errors + done.unreadable > 0;
                Ok(if failed {
                    Status::Failure
                } else {
                    Status::Success
                })
            }
            Err(why) => {
                let shown = Name::of_path_lossy(list).shown();
                warn(&format!("{shown}: not updated: {why}"));
                Ok(Status::Failure)
            }
        }
    }
}

/// The tree new files are listed with where the list has no checksum line
/// to take the shape of: the check's settings.
fn default_tree(config: &Checking) -> Result<TreeParams, String> {
    let grammar = &config.settings.grammar;
    let algorithm = grammar.untagged_algorithm;
    let size = grammar.digest_size.unwrap_or(algorithm.max_digest_size());
    TreeParams::new(algorithm, size, config.settings.leaf_size).map_err(|error| error.to_string())
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
        match finding {
            Finding::Waiting => printer.out.flush(),
            Finding::Error { name, error } => {
                self.errors += 1;
                printer.error(name, &error.to_string())
            }
            Finding::New { name } => {
                self.new += 1;
                printer.class(name, "NEW", None)
            }
            Finding::Moved { name, from } => {
                self.moved += 1;
                printer.class(name, "MOVED", Some(from))
            }
            Finding::Missing { name } if !printer.config.ignore_missing => {
                self.missing += 1;
                printer.class(name, "MISSING", None)
            }
            Finding::Missing { .. } => Ok(()),
        }
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
