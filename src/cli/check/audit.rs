//! `--check --audit DIR`: the lists checked as check mode checks them, then
//! what the library's auditor finds under the directories: new, moved and
//! missing files, printed after the lists' verdicts with a summary of
//! their own.

use std::io::{self, BufRead};
use std::ops::ControlFlow;
use std::path::Path;

use bt2sum::audit::{Auditor, Finding};
use bt2sum::format::verdict::Class;
use bt2sum::system::FileId;
use bt2sum::verify::{Report, Verifier};
use bt2sum::walk;

use super::super::config::{Checking, Verbosity};
use super::super::output::{Status, report_listed, warn};
use super::Printer;

/// What checks the lists: the verifier alone, or an audit around it.
pub enum Checker<'v> {
    Lists(&'v Verifier<'v>),
    Audit(Box<Auditor<'v>>),
}

impl<'v> Checker<'v> {
    /// The checker `config` asks for.
    pub fn new(config: &Checking, verifier: &'v Verifier<'v>) -> Checker<'v> {
        if config.audit.is_empty() {
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
        let options = walk::Options {
            follow_links: config.follow_links,
            skip,
            excludes: config.excludes.clone(),
        };
        Checker::Audit(Box::new(Auditor::new(verifier, config.audit.clone(), options)))
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
    /// its summary; the status of the audit (Success for a plain check).
    /// `Err` only when writing to standard output fails.
    pub fn finish(self, printer: &mut Printer<'_>) -> io::Result<Status> {
        let Checker::Audit(auditor) = self else {
            return Ok(Status::Success);
        };
        let mut counts = Counts::default();
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
        let mut status = counts.status();
        if let Err(error) = finished {
            warn(&format!(
                "cannot keep what the audit found: {}",
                bt2sum::plain_message(&error)
            ));
            status = Status::Failure;
        }
        if printer.config.verbosity != Verbosity::Status {
            for warning in counts.warnings(printer.config.ignore_missing) {
                warn(&warning);
            }
        }
        Ok(status)
    }
}

/// What an audit found, counted.
#[derive(Default)]
struct Counts {
    new: u64,
    moved: u64,
    missing: u64,
    errors: u64,
}

impl Counts {
    /// Counts and prints one finding.
    fn print(&mut self, finding: &Finding, printer: &mut Printer<'_>) -> io::Result<()> {
        let (name, class) = match finding {
            Finding::Waiting => return printer.out.flush(),
            Finding::Error { name, error } => {
                self.errors += 1;
                printer.out.flush()?;
                report_listed(name, &error.to_string());
                return Ok(());
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
