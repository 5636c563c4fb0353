//! The check driver (`bt2sum -c`): hands each list to the library's
//! verifier, and prints its verdicts GNU coreutils style, counts them and
//! hints at causes.
//!
//! Per file, in list order: `NAME: OK`, `NAME: FAILED` or `NAME: FAILED
//! open or read`; for a leaf listing, that line (its worst verdict), then
//! `NAME: leaf I: FAILED` for each failing leaf, or with `--verbose` a
//! verdict for every line. An improperly formatted line is reported (with
//! `--warn`) just before the file that follows it.
//!
//! Per list, after its verdicts, the summary goes to standard error in
//! GNU's order: the non-zero counts of improperly formatted lines,
//! unreadable files and mismatches, then `no file was verified`
//! (`--ignore-missing`); or, for a list without a single valid line, only
//! `no properly formatted checksum lines found`. As in GNU, `--status`
//! silences stdout, the counts and `no file was verified`, but not the
//! reasons a file or list could not be read, nor `no properly formatted
//! checksum lines found`. The hints come last, once for the run.

mod audit;
mod hints;
mod tally;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::ops::ControlFlow;

use bt2sum::format::verdict::{
    Class, Verdict, push_class, push_count_verdict, push_leaf_verdict, push_verdict,
};
use bt2sum::verify::{Checked, Report, Subject, Verifier};
use bt2sum::{plain_message, system};

use super::config::{Checking, Verbosity};
use super::output::{Status, output_failed, report, report_listed, warn};
use super::progress::{Progress, When};
use audit::Checker;
use hints::Hints;
use tally::Tally;

/// Verifies every list (standard input when none is given), writing
/// verdicts to `out`; returns the exit status.
pub fn run(config: &Checking, when: When, out: &mut dyn Write) -> Status {
    // The lists are read as they are checked: the total is unknown.
    let progress = Progress::start(when, || None);
    let mut verifier =
        Verifier::new(config.settings).before_reading_stdin(|| progress.reading_stdin());
    if let Some(counter) = progress.counter() {
        verifier = verifier.progress(counter.clone());
    }
    let stdin_only = [OsStr::new("-").to_os_string()];
    let lists = if config.lists.is_empty() {
        &stdin_only[..]
    } else {
        &config.lists[..]
    };
    let mut printer = Printer {
        config,
        out,
        line: Vec::new(),
    };
    let mut hints = Hints::default();
    let mut status = Status::Success;
    let mut checker = Checker::new(config, &verifier);
    for list in lists {
        if list == "-" {
            progress.reading_stdin();
        }
        match check_list(&mut checker, list, &mut printer, &mut hints) {
            Ok(true) => {}
            Ok(false) => status = Status::Failure,
            Err(error) => return status.max(write_failed(&error)),
        }
    }
    match checker.finish(&mut printer) {
        Ok(audited) => status = status.max(audited),
        Err(error) => return status.max(write_failed(&error)),
    }
    if let Err(error) = printer.out.flush() {
        return status.max(write_failed(&error));
    }
    if config.verbosity != Verbosity::Status {
        hints.show(config.settings.leaf_size);
    }
    status
}

/// What a failed write to standard output means for a check: the check
/// did not finish, so the status is a failure, whether the reader has gone
/// (quietly, as GNU's tools end on SIGPIPE) or the write failed (with the
/// reason).
fn write_failed(error: &io::Error) -> Status {
    match error.kind() {
        io::ErrorKind::BrokenPipe => Status::Failure,
        _ => output_failed(error),
    }
}

/// Verifies one list; `Ok(false)` if it does not pass (or cannot be read),
/// `Err` only when writing to standard output fails.
fn check_list(
    checker: &mut Checker<'_>,
    list: &OsStr,
    printer: &mut Printer<'_>,
    hints: &mut Hints,
) -> io::Result<bool> {
    let list_is_stdin = list == "-";
    let list_name = if list_is_stdin {
        OsStr::new("standard input")
    } else {
        list
    };
    let mut reader = match open(list) {
        Ok(reader) => reader,
        Err(error) => {
            printer.out.flush()?;
            report(list_name, &plain_message(&error));
            return Ok(false);
        }
    };
    let mut tally = Tally::default();
    let mut written = Ok(());
    // Missing files an audit classes at its end; --ignore-missing skips.
    let deferred = printer.config.ignore_missing || checker.defers_missing();
    let checked = checker.check(&mut reader, list_is_stdin, |report| {
        written = match report {
            Report::Waiting => printer.out.flush(),
            Report::BadLine { line, why } => {
                tally.improperly_formatted += 1;
                hints.bad_line(why);
                printer.bad_line(list_name, line)
            }
            Report::Checked(checked) => {
                let skipped = deferred && checked.is_missing();
                tally.count_checked(checked, skipped);
                hints.checked(checked);
                printer.checked(checked, skipped)
            }
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    written?;
    hints.list_ended();
    printer.out.flush()?;
    if let Err(error) = checked {
        // As GNU: what was read is reported, then the list fails without a
        // summary.
        report(list_name, &plain_message(&error));
        return Ok(false);
    }
    summarize(printer.config, list_name, &tally);
    let config = printer.config;
    Ok(tally.passed(config.strict, config.update.is_some()))
}

/// A list to read: a file, or standard input.
fn open(list: &OsStr) -> io::Result<Box<dyn BufRead>> {
    if list != "-" {
        let file = File::open(list)?;
        return Ok(Box::new(BufReader::with_capacity(64 << 10, file)));
    }
    if system::stdin_closed() {
        return Err(system::closed_stream());
    }
    Ok(Box::new(io::stdin().lock()))
}

/// The end-of-list messages on standard error, in GNU's order.
fn summarize(config: &Checking, list_name: &OsStr, tally: &Tally) {
    if tally.entries == 0 {
        report(list_name, "no properly formatted checksum lines found");
        return;
    }
    if config.verbosity == Verbosity::Status {
        return;
    }
    for warning in tally.warnings() {
        warn(&warning);
    }
    if config.ignore_missing && tally.matched == 0 {
        report(list_name, "no file was verified");
    }
}

/// Where verdicts are written, and how many.
pub struct Printer<'a> {
    config: &'a Checking,
    out: &'a mut dyn Write,
    /// A reused buffer for one output line.
    line: Vec<u8>,
}

impl Printer<'_> {
    /// With `--warn`, says that line `line` is improperly formatted.
    fn bad_line(&mut self, list_name: &OsStr, line: u64) -> io::Result<()> {
        if self.config.verbosity == Verbosity::Warn {
            self.out.flush()?;
            report(
                list_name,
                &format!("{line}: improperly formatted BLAKE2 checksum line"),
            );
        }
        Ok(())
    }

    /// Prints what one pass over a file found: why it could not be read or
    /// how its length changed (standard error, once per file), then its
    /// verdicts. `skipped`: it is missing, and `--ignore-missing` was given.
    fn checked(&mut self, checked: &Checked, skipped: bool) -> io::Result<()> {
        if skipped {
            return Ok(());
        }
        if let Some(error) = checked.new_error() {
            self.out.flush()?;
            report_listed(checked.name(), &error.to_string());
        }
        if let Some((found, listed)) = checked.length_change() {
            self.out.flush()?;
            let message = format!("is {found} bytes long, but its leaf lines say total={listed}");
            report_listed(checked.name(), &message);
        }
        if self.config.every_line {
            for (subject, verdict) in checked.lines() {
                self.verdict(checked.name(), subject, verdict)?;
            }
            return Ok(());
        }
        // The file's line first, when it is checked in one pass (as nearly
        // every file is); else after the failing leaves of its last pass.
        let in_one_pass = checked.is_first_pass() && checked.is_last_pass();
        let file_verdict = checked.file_verdict();
        if let (true, Some(verdict)) = (in_one_pass, file_verdict) {
            self.verdict(checked.name(), Subject::Checksum, verdict)?;
        }
        for (subject, verdict) in checked.lines() {
            let failed = matches!(
                verdict,
                Verdict::Failed | Verdict::Missing | Verdict::Changed
            );
            if subject != Subject::Checksum && failed {
                self.verdict(checked.name(), subject, verdict)?;
            }
        }
        if let (false, Some(verdict)) = (in_one_pass, file_verdict) {
            self.verdict(checked.name(), Subject::Checksum, verdict)?;
        }
        Ok(())
    }

    /// Prints what an audit says of a file no checksum line verifies,
    /// unless `--status` hides it.
    fn class(&mut self, name: &[u8], class: Class<'_>) -> io::Result<()> {
        if self.config.verbosity == Verbosity::Status {
            return Ok(());
        }
        self.line.clear();
        push_class(&mut self.line, name, class);
        self.out.write_all(&self.line)
    }

    /// Prints one verdict, unless the verbosity hides it: `NAME: OK` (the
    /// file, or its checksum line), `NAME: leaf I: OK`, `NAME: leaf count:
    /// OK`.
    fn verdict(&mut self, name: &[u8], subject: Subject, verdict: Verdict) -> io::Result<()> {
        let printed = match verdict {
            Verdict::Ok => matches!(self.config.verbosity, Verbosity::Normal | Verbosity::Warn),
            _ => self.config.verbosity != Verbosity::Status,
        };
        if !printed {
            return Ok(());
        }
        self.line.clear();
        match subject {
            Subject::Checksum => push_verdict(&mut self.line, name, verdict),
            Subject::Leaf(index) => push_leaf_verdict(&mut self.line, name, index, verdict),
            Subject::Length => push_count_verdict(&mut self.line, name, verdict),
        }
        self.out.write_all(&self.line)
    }
}
