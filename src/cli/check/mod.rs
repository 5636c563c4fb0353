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
mod repair;
mod tally;

use std::ffi::OsStr;
use std::io::{self, Write};
use std::ops::ControlFlow;

use std::path::Path;

use crate::cli::audit::UpdatedList;
use crate::cli::system;
use bt2sum::format::name::Name;
use bt2sum::plain_message;
use bt2sum::verify::Verdict;
use bt2sum::verify::{Checked, Report, Slice, Subject, Verifier};

use super::config::{Checking, Verbosity};
use super::output::{Status, output_failed, report, report_listed, warn};
use super::progress::{BarMode, Progress};
use super::records::{self, Hex, JsonName, Record, Tree};
use audit::Checker;
use hints::Hints;
use repair::Repairs;
use tally::Tally;

/// Verifies every list (standard input when none is given), writing
/// verdicts to `out`; returns the exit status.
pub fn run(config: &Checking, when: BarMode, out: &mut dyn Write) -> Status {
    // The lists are read as they are checked: the total is unknown.
    let progress = Progress::start(when, || None);
    let mut verifier = Verifier::new(config.settings).before_reading_stdin(|| {
        progress.reading_stdin();
        match system::stdin_closed() {
            true => Err(system::closed_stream()),
            false => Ok(()),
        }
    });
    if let Some(counter) = progress.counter() {
        verifier = verifier.progress(counter.clone());
    }
    // The list an update rewrites is opened first, and read through that
    // descriptor only.
    let updated = match config.update {
        Some(_) => match UpdatedList::open(Path::new(&config.lists[0])) {
            Ok(list) => Some(list),
            Err(why) => {
                let shown = Name::of_path_lossy(&config.lists[0]).shown();
                warn(&format!("{shown}: not updated: {why}"));
                return Status::Failure;
            }
        },
        None => None,
    };
    let stdin_only = [OsStr::new("-").to_os_string()];
    let lists = if config.lists.is_empty() {
        &stdin_only[..]
    } else {
        &config.lists[..]
    };
    if let Some(part) = config.slice {
        // What the lists describe, to cut into slices; a list that cannot
        // be read is reported when it is checked.
        let mut total = 0u64;
        for list in lists {
            if let Ok(mut reader) = open_list(list, updated.as_ref())
                && let Ok(bytes) = verifier.total_bytes(&mut reader)
            {
                total = total.saturating_add(bytes);
            }
        }
        // An audit walks in the first slice only, which looks for every
        // listed file to tell the missing ones.
        let probe_others = !config.audit.is_empty() && part.part() == 1;
        verifier = verifier.slicing(Slice {
            part,
            total,
            probe_others,
        });
    }
    let mut printer = Printer {
        config,
        out: records::Printer::new(out, config.json, records::Layout::default()),
        summaries: Vec::new(),
    };
    let mut hints = Hints::default();
    let mut status = Status::Success;
    let mut checker = Checker::new(config, &verifier, progress.counter(), updated.as_ref());
    let mut totals = Tally::default();
    let mut repairs = Repairs::new(config);
    for list in lists {
        if list == "-" {
            progress.reading_stdin();
        }
        let reader = open_list(list, updated.as_ref());
        match check_list(
            &mut checker,
            list,
            reader,
            &mut printer,
            &mut hints,
            &mut repairs,
        ) {
            Ok((passed, tally)) => {
                totals.add(&tally);
                if !passed {
                    status = Status::Failure;
                }
            }
            Err(error) => return status.max(write_failed(&error)),
        }
    }
    let mut audited = audit::Counts::default();
    match checker.finish(&mut printer, &mut audited) {
        Ok(audit_status) => status = status.max(audit_status),
        Err(error) => return status.max(write_failed(&error)),
    }
    if config.json && config.verbosity != Verbosity::Status {
        let summary = summary_object(lists.len(), &totals, &audited, status);
        if let Err(error) = printer.out.emit(&summary) {
            return status.max(write_failed(&error));
        }
    }
    if let Err(error) = printer.out.flush() {
        return status.max(write_failed(&error));
    }
    if config.verbosity != Verbosity::Status {
        hints.show(config.settings.leaf_size);
    }
    status
}

/// The list `list`, to read from its start: through the update's
/// descriptor if it is the list an update rewrites.
fn open_list<'a>(
    list: &OsStr,
    updated: Option<&'a UpdatedList>,
) -> io::Result<Box<dyn io::BufRead + 'a>> {
    match updated {
        Some(updated) => Ok(Box::new(updated.reader()?)),
        None => system::open_list(list),
    }
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

/// Verifies one list; whether it passes (`false` if it cannot be read) and
/// its counts; `Err` only when writing to standard output fails.
fn check_list(
    checker: &mut Checker<'_>,
    list: &OsStr,
    reader: io::Result<Box<dyn io::BufRead + '_>>,
    printer: &mut Printer<'_>,
    hints: &mut Hints,
    repairs: &mut Option<Repairs>,
) -> io::Result<(bool, Tally)> {
    let list_is_stdin = list == "-";
    let list_name = if list_is_stdin {
        OsStr::new("standard input")
    } else {
        list
    };
    let mut reader = match reader {
        Ok(reader) => reader,
        Err(error) => {
            printer.list_error(list_name, &plain_message(&error))?;
            return Ok((false, Tally::default()));
        }
    };
    let mut tally = Tally::default();
    let mut written = Ok(());
    // Missing files an audit classes at its end (in its first slice, when
    // checked in slices); --ignore-missing skips.
    let config = printer.config;
    let deferred = config.ignore_missing || !config.audit.is_empty();
    let checked = checker.check(&mut reader, list_is_stdin, |report| {
        written = match report {
            Report::Waiting => printer.out.flush(),
            Report::OutsideSlice { lines } => {
                tally.entries += lines;
                tally.outside_slice += lines;
                Ok(())
            }
            Report::BadLine { line, why } => {
                tally.improperly_formatted += 1;
                hints.bad_line(why);
                printer.bad_line(list_name, line)
            }
            Report::Checked(checked) => {
                let skipped = deferred && checked.is_missing();
                tally.count_checked(checked, skipped);
                hints.checked(checked);
                printer
                    .checked(checked, skipped)
                    .and_then(|()| match repairs {
                        Some(repairs) => repairs.note(checked, printer),
                        None => Ok(()),
                    })
            }
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    written?;
    if let Some(repairs) = repairs {
        repairs.mend(printer, &mut tally)?;
    }
    hints.list_ended();
    printer.out.flush()?;
    if let Err(error) = checked {
        // As GNU: what was read is reported, then the list fails without a
        // summary.
        printer.list_error(list_name, &plain_message(&error))?;
        return Ok((false, tally));
    }
    if checker.defers_missing() {
        // An audit's lists are summed up after what the audit finds.
        printer.summaries.push((list_name.to_os_string(), tally));
    } else {
        summarize(printer.config, list_name, &tally);
    }
    let passed = tally.passed(
        config.strict,
        config.update.is_some(),
        config.ignore_missing,
    );
    Ok((passed, tally))
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
    if tally.may_verify_none(config.ignore_missing) && tally.verified_none() {
        report(list_name, "no file was verified");
    }
}

/// Where verdicts are written, and how many.
pub struct Printer<'a> {
    config: &'a Checking,
    out: records::Printer<'a>,
    /// The lists' names and counts, summed up after an audit's findings.
    summaries: Vec<(std::ffi::OsString, Tally)>,
}

impl Printer<'_> {
    /// With `--warn`, says that line `line` is improperly formatted (with
    /// `--json`, always, as an object).
    fn bad_line(&mut self, list_name: &OsStr, line: u64) -> io::Result<()> {
        if self.config.json && self.config.verbosity != Verbosity::Status {
            let list = Name::of_path_lossy(list_name);
            let list = JsonName(Some(list.printed()));
            self.out.emit(&Record::BadLine { list, line })?;
        }
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
            self.error(checked.name(), &error.to_string())?;
        }
        if checked.contradicts_itself() {
            let message = "its leaf lines do not make its checksum line's digest: the list \
                           contradicts itself";
            self.error(checked.name(), message)?;
        }
        if let Some((found, listed)) = checked.length_change() {
            self.out.flush()?;
            let message = format!("is {found} bytes long, but its leaf lines say total={listed}");
            report_listed(checked.name(), &message);
        }
        if self.config.every_line {
            for (subject, verdict) in checked.lines() {
                self.verdict(checked, subject, verdict)?;
            }
            return Ok(());
        }
        // The file's line first, when it is checked in one pass (as nearly
        // every file is); else after the failing leaves of its last pass.
        let in_one_pass = checked.is_first_pass() && checked.is_last_pass();
        // (A file listed without a digest is not OK: its bytes were not
        // checked. Its count lines fail if its length changed.)
        let file_verdict = checked
            .file_verdict()
            .filter(|verdict| *verdict != Verdict::Ok || !checked.lists_no_digest());
        if let (true, Some(verdict)) = (in_one_pass, file_verdict) {
            self.verdict(checked, Subject::Checksum, verdict)?;
        }
        for (subject, verdict) in checked.lines() {
            let failed = matches!(
                verdict,
                Verdict::Failed | Verdict::Missing | Verdict::Changed
            );
            if subject != Subject::Checksum && failed {
                self.verdict(checked, subject, verdict)?;
            }
        }
        if let (false, Some(verdict)) = (in_one_pass, file_verdict) {
            self.verdict(checked, Subject::Checksum, verdict)?;
        }
        Ok(())
    }

    /// Says why `name` could not be read or hashed: on standard error, and
    /// with `--json` as an object.
    fn error(&mut self, name: &[u8], message: &str) -> io::Result<()> {
        if self.config.json {
            let name = Some(JsonName(Some(name)));
            self.out.emit(&Record::Error {
                name,
                list: None,
                message,
            })?;
        }
        self.out.flush()?;
        report_listed(name, message);
        Ok(())
    }

    /// Says why a list could not be opened or read on: on standard error,
    /// and with `--json` as an object.
    fn list_error(&mut self, list_name: &OsStr, message: &str) -> io::Result<()> {
        if self.config.json {
            let list = Name::of_path_lossy(list_name);
            let list = Some(JsonName(Some(list.printed())));
            self.out.emit(&Record::Error {
                name: None,
                list,
                message,
            })?;
        }
        self.out.flush()?;
        report(list_name, message);
        Ok(())
    }

    /// Prints what an audit says of a file no checksum line verifies,
    /// unless `--status` hides it.
    fn class(&mut self, name: &[u8], verdict: &'static str, from: Option<&[u8]>) -> io::Result<()> {
        if self.config.verbosity == Verbosity::Status {
            return Ok(());
        }
        let (name, from) = (JsonName(Some(name)), from.map(|from| JsonName(Some(from))));
        self.out.emit(&Record::Class {
            name,
            verdict,
            from,
        })
    }

    /// Prints one verdict, unless the verbosity hides it: `NAME: OK` (the
    /// file, or its checksum line), `NAME: leaf I: OK`, `NAME: leaf count:
    /// OK`.
    fn verdict(&mut self, checked: &Checked, subject: Subject, verdict: Verdict) -> io::Result<()> {
        let printed = match verdict {
            Verdict::Ok => matches!(self.config.verbosity, Verbosity::Normal | Verbosity::Warn),
            _ => self.config.verbosity != Verbosity::Status,
        };
        if !printed {
            return Ok(());
        }
        self.out.emit(&verdict_record(checked, subject, verdict))
    }
}

/// A verdict's record: `verdict` for a file (or its checksum line), with
/// its tree, the listed and computed checksums and its length;
/// `leaf-verdict` with the leaf's bytes (what to fetch again); and
/// `count-verdict`.
fn verdict_record(checked: &Checked, subject: Subject, verdict: Verdict) -> Record<'_> {
    let (name, tree) = (JsonName(Some(checked.name())), Tree(checked.tree()));
    let hashed = checked.outcome().ok();
    match subject {
        Subject::Checksum => Record::Verdict {
            tree,
            name,
            verdict,
            expected: checked.expected().map(|expected| Hex(expected.as_bytes())),
            digest: hashed
                .filter(|_| checked.expected().is_some())
                .map(|hashed| Hex(hashed.digest.as_bytes())),
            length: hashed.map(|hashed| hashed.length),
        },
        Subject::Leaf(index) => {
            let bytes = checked
                .tree()
                .leaf_bytes(index, checked.listed_length().unwrap_or(0));
            Record::LeafVerdict {
                tree,
                name,
                verdict,
                index,
                offset: bytes.start,
                length: bytes.end - bytes.start,
            }
        }
        Subject::Length => Record::CountVerdict {
            tree,
            name,
            verdict,
            total: checked.listed_length(),
        },
    }
}

/// The summary of a check: the lists, the counts of every class of file
/// over all of them, and the status.
fn summary_object(
    lists: usize,
    totals: &Tally,
    audited: &audit::Counts,
    status: Status,
) -> Record<'static> {
    Record::Summary(serde_json::json!({
        "lists": lists,
        "improperly_formatted": totals.improperly_formatted,
        "ok": totals.matched,
        "failed": totals.mismatched,
        "changed": totals.changed,
        "unreadable": totals.unreadable,
        "unverified": totals.unverified,
        "new": audited.new,
        "moved": audited.moved,
        "missing": audited.missing,
        "errors": audited.errors,
        "repaired": totals.repaired_leaves,
        "unrepaired": totals.unrepaired_leaves,
        "status": status as u8,
    }))
}
