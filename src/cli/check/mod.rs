//! The check driver (`bt2sum -c`): hands each list to the library's
//! verifier, prints its verdicts GNU coreutils style (docs/check.md), counts
//! them, hints at causes, and hands each pass to the features that act on
//! it (an audit, repairs, the ledger). As in GNU, `--status` silences
//! stdout, the counts and `no file was verified`, but not why a file or
//! list could not be read, nor `no properly formatted checksum lines found`.

mod hints;
mod ledger;

use std::cell::RefCell;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Seek, Write};
use std::ops::ControlFlow::{self, Break, Continue};
use std::path::Path;
use std::time::Instant;

use bt2sum::format::lines::{Record as Line, read_line};
use bt2sum::format::name::Name;
use bt2sum::format::stat::is_stat_line;
use bt2sum::plain_message;
use bt2sum::verify::{Checked, Report, Slice, Subject, Unit, Verdict, Verifier};

use super::audit::{Audit, Scope, UpdatedList};
use super::list_name;
use super::output::{
    Hex, JsonName, Layout, Printer, Record, Status, Tree, Verbosity, output_failed, report, warn,
};
use super::plan::{Checking, Config};
use super::progress::Progress;
use super::repair::Repairs;
use super::sys;
use super::tally::Tally;
use hints::Hints;
use ledger::Schedule;

/// Verifies every list, writing verdicts to `out`; returns the exit status.
pub fn run(plan: &Checking, config: &Config, out: &mut dyn Write) -> Status {
    check(plan, config, out).unwrap_or_else(|status| status)
}

/// [`run`], with `Err` for a check that ends early.
fn check(plan: &Checking, config: &Config, out: &mut dyn Write) -> Result<Status, Status> {
    // (A time budget counts from here: counting the lists takes of it too.)
    let started = Instant::now();
    nothing_missing(plan)?;
    let updated = updated_list(plan)?;
    let ledger = plan.ledger.as_ref().map(ledger::open).transpose()?;
    let lists = Lists::new(plan, updated.as_ref(), ledger.flatten())
        .map_err(|error| report(OsStr::new("standard input"), &plain_message(&error)))?;
    let progress = Progress::start(config.progress, || lists.progress_total(plan));
    let mut verifier = verifier(plan, &progress, &lists);
    // (Checked in slices, only the first audits.)
    let first_slice = plan.slice.is_none_or(|part| part.part() == 1);
    let mut check = Check {
        plan,
        directory: config.directory.as_deref(),
        lists: &lists,
        progress: &progress,
        printer: Printer::new(out, plan.json, Layout::default(), plan.verbosity),
        hints: Hints::default(),
        totals: Tally::default(),
        audit: (plan.audit.as_ref())
            .filter(|_| first_slice)
            .map(|audit| Audit::new(plan, audit, updated.as_ref(), progress.counter())),
        // (In an audit, a missing file may have moved.)
        repairs: (plan.repair.as_ref())
            .map(|repair| Repairs::new(repair, plan.audit.is_none() && !plan.ignore_missing)),
        deadline: (plan.ledger.as_ref())
            .and_then(|ledger| ledger.max_duration)
            .map(|duration| started + duration),
        status: Status::Success,
    };
    // An audit's slice looks for every listed file, to tell the missing ones.
    verifier.probe_others = plan.slice.is_some() && check.audit.is_some();
    let tallies = check.lists(&verifier)?;
    drop(verifier);
    check.finish(&tallies).map_err(|error| write_failed(&error))
}

/// A check whose output could not be written did not finish: it fails,
/// quietly if the reader has gone (as GNU's tools end on SIGPIPE).
fn write_failed(error: &io::Error) -> Status {
    output_failed(error).max(Status::Failure)
}

/// The list an update rewrites, opened first, and read only through it.
fn updated_list(plan: &Checking) -> Result<Option<UpdatedList>, Status> {
    let Some(_) = plan.audit.as_ref().and_then(|audit| audit.update.as_ref()) else {
        return Ok(None);
    };
    let list = plan.lists.first().map_or("-".as_ref(), OsString::as_os_str);
    UpdatedList::open(Path::new(list)).map(Some).map_err(|why| {
        let list = Name::of_path_lossy(list).shown();
        warn(&format!("{list}: not updated: {why}"));
        Status::Failure
    })
}

/// Says what a check would find missing everywhere before anything is read:
/// an audit of a directory that is not there (every file MISSING), copies
/// that are not there (every repair failing alike), with where they were
/// looked for.
fn nothing_missing(plan: &Checking) -> Result<(), Status> {
    for root in plan.audit.iter().flat_map(|audit| &audit.roots) {
        if let Err(error) = std::fs::metadata(root) {
            return Err(report(root, &plain_message(&error)));
        }
    }
    if let Some(repair) = &plan.repair
        && let Err(error) = std::fs::metadata(&repair.copy)
    {
        let here = std::env::current_dir().unwrap_or_default();
        let message = format!(
            "the copies given to --repair-from: {} (looked for from {})",
            plain_message(&error),
            Name::of_path_lossy(here.as_os_str()).shown()
        );
        return Err(report(repair.copy.as_os_str(), &message));
    }
    Ok(())
}

/// The lists of a check (standard input when none is given), each to read
/// from its start as often as needed (the list an update rewrites through
/// the update's descriptor, standard input from a temporary copy where a
/// ledger or a scope reads it more than once), and which of their files
/// the check reads: those in an audit's scope and, with a ledger, those of
/// the round.
struct Lists<'a> {
    names: Vec<OsString>,
    updated: Option<&'a UpdatedList>,
    stdin: Option<File>,
    scope: Option<Scope<'a>>,
    schedule: Option<RefCell<Schedule>>,
}

impl<'a> Lists<'a> {
    fn new(
        plan: &'a Checking,
        updated: Option<&'a UpdatedList>,
        ledger: Option<Schedule>,
    ) -> io::Result<Self> {
        let names = match plan.lists.is_empty() {
            true => vec![OsString::from("-")],
            false => plan.lists.clone(),
        };
        // An audit checks only the listed files its walk would meet.
        // (Not in slices, which hold every file.)
        let scope = (plan.audit.as_ref())
            .filter(|_| plan.slice.is_none())
            .and_then(Scope::new);
        let mut stdin = None;
        // (Both count the lists before they check them.)
        if (ledger.is_some() || scope.is_some()) && names.iter().any(|list| list == "-") {
            let copy = stdin.insert(tempfile::tempfile()?);
            io::copy(&mut io::stdin().lock(), copy)?;
        }
        Ok(Lists {
            names,
            updated,
            stdin,
            scope,
            schedule: ledger.map(RefCell::new),
        })
    }

    fn open(&self, list: &OsStr) -> io::Result<Box<dyn io::BufRead + '_>> {
        match (self.updated, &self.stdin) {
            (Some(updated), _) => Ok(Box::new(updated.reader()?)),
            (None, Some(copy)) if list == "-" => {
                let mut copy = copy.try_clone()?;
                copy.rewind()?;
                Ok(Box::new(io::BufReader::new(copy)))
            }
            (None, _) => sys::open_list(list),
        }
    }

    fn reads(&self, start: u64, unit: Option<&Unit<'_>>) -> bool {
        let scope = self.scope.as_ref().zip(unit);
        let in_scope = scope.is_none_or(|(scope, unit)| scope.holds(unit.name));
        in_scope && (self.schedule.as_ref()).is_none_or(|s| s.borrow_mut().reads(start, unit))
    }

    /// The bytes the lists describe (see [`Slice`]); a list that cannot be
    /// read is reported when it is checked.
    fn total_bytes(&self, verifier: &Verifier<'_>) -> u64 {
        let bytes = |list: &OsString| verifier.total_bytes(&mut self.open(list).ok()?).ok();
        (self.names.iter().filter_map(bytes)).fold(0, u64::saturating_add)
    }

    /// The bytes the check will read, for the progress bar's total and time
    /// left: `None` where that is not cheap to know, or not all that the
    /// lists describe (a slice, a time budget, `--quick`).
    fn progress_total(&self, plan: &Checking) -> Option<u64> {
        const MAX_LIST: u64 = 256 << 20;
        const SIZE_LOOKUPS: u64 = 100_000;
        let quick = plan.audit.as_ref().is_some_and(|audit| audit.quick);
        let time_budget = plan.ledger.as_ref().and_then(|ledger| ledger.max_duration);
        // (Standard input or a pipe is read once: by the check.)
        let cheap = |list: &OsString| {
            let metadata = std::fs::metadata(list).ok().filter(|_| list != "-");
            metadata.is_some_and(|list| list.is_file() && list.len() <= MAX_LIST)
        };
        if plan.slice.is_some() || quick || time_budget.is_some() || !self.names.iter().all(cheap) {
            return None;
        }
        let counter = Verifier::new(plan.settings);
        // (One more than allowed: none left says that a size went unasked.)
        counter.size_lookups.set(Some(SIZE_LOOKUPS + 1));
        let total = self.total_bytes(&counter);
        (counter.size_lookups.get() != Some(0)).then_some(total)
    }
}

fn verifier<'v>(plan: &'v Checking, progress: &'v Progress, lists: &'v Lists<'_>) -> Verifier<'v> {
    let mut verifier = Verifier::new(plan.settings);
    verifier.before_stdin = Some(Box::new(|| progress.open_stdin()));
    verifier.progress = progress.counter().cloned();
    verifier.quick = plan.audit.as_ref().is_some_and(|audit| audit.quick);
    verifier.pass_bytes = lists.schedule.is_some().then_some(PASS_BYTES);
    if lists.schedule.is_some() || lists.scope.is_some() {
        verifier.chooser = Some(Box::new(|start, unit| lists.reads(start, unit)));
    }
    // (The scope chooses by name.)
    if lists.schedule.is_none() && plan.slice.is_none() {
        verifier.size_lookups.set(Some(0));
    }
    if verifier.chooser.is_some() || plan.slice.is_some() {
        // (Counted once: a ledger's rounds start the lists over.)
        let total = lists.total_bytes(&verifier);
        verifier.slice = plan.slice.map(|part| Slice { part, total });
    }
    verifier
}

/// The most bytes of leaves of one file a pass checks with a ledger: at
/// most what a kill or a deadline leaves unrecorded.
const PASS_BYTES: u64 = 64 << 20;

const NO_STAT_LINES: &str = "--quick needs stat lines, and the list has none: make it with \
                             --stat (bt2sum -r --stat DIR > LIST), or audit without --quick";

/// Whether a list has no stat line (a list that cannot be read on says
/// no: checking it says why it cannot).
fn has_no_stat_line(mut list: Box<dyn io::BufRead + '_>) -> bool {
    let mut line = Vec::new();
    loop {
        match read_line(&mut list, &mut line) {
            Ok(Line::End) => return true,
            Ok(Line::Line) if !is_stat_line(&line) => {}
            Ok(Line::TooLong) => {}
            Ok(Line::Line) | Err(_) => return false,
        }
    }
}

/// How reading a list went (`Err(None)`: why not was said already).
type Read = Result<(), Option<io::Error>>;

/// A check under way.
struct Check<'a, 'o> {
    plan: &'a Checking,
    /// The directory `-C` named, which the lists' paths are read from too.
    directory: Option<&'a OsStr>,
    lists: &'a Lists<'a>,
    progress: &'a Progress,
    printer: Printer<'o>,
    hints: Hints,
    totals: Tally,
    audit: Option<Audit<'a>>,
    repairs: Option<Repairs>,
    /// When a check with a time budget stops (`--max-duration`).
    deadline: Option<Instant>,
    status: Status,
}

impl Check<'_, '_> {
    /// Reads every list, once, or with a ledger in rounds until the
    /// schedule is done or the time is up; each list is summed up as it
    /// ends (with a ledger, after the last round). Returns how each went;
    /// `Err`: the run's status, when it ends early.
    fn lists(&mut self, verifier: &Verifier<'_>) -> Result<Vec<(Tally, Read)>, Status> {
        let lists = self.lists;
        let unread = |_: &OsString| (Tally::default(), Ok(()));
        let mut tallies: Vec<(Tally, Read)> = lists.names.iter().map(unread).collect();
        loop {
            // (A later round of a check with a ledger: its lines were
            // counted when the lists were listed.)
            let again = (lists.schedule.as_ref()).is_some_and(|s| !s.borrow().listing);
            verifier.restart();
            for (list, (tally, read)) in lists.names.iter().zip(&mut tallies) {
                if list == "-" {
                    self.progress.reading_stdin();
                }
                if read.is_err() || again && self.out_of_time() {
                    continue;
                }
                *read = (self.list(verifier, list, tally, again)).map_err(|e| write_failed(&e))?;
                if lists.schedule.is_none() {
                    // (Read once: each list is summed up as it ends.)
                    self.end_list(list, tally, read)?;
                }
            }
            if let Some(scope) = &lists.scope {
                scope.counted();
            }
            let Some(schedule) = &lists.schedule else {
                return Ok(tallies);
            };
            if !schedule.borrow_mut().next_round(self.deadline)? {
                break;
            }
        }
        for (list, (tally, read)) in lists.names.iter().zip(&tallies) {
            self.end_list(list, tally, read)?;
        }
        Ok(tallies)
    }

    fn out_of_time(&self) -> bool {
        self.deadline.is_some_and(|at| Instant::now() >= at)
    }

    /// Checks one list, printing and counting into `tally`. `Err` only when
    /// writing to standard output fails.
    fn list(
        &mut self,
        verifier: &Verifier<'_>,
        list: &OsStr,
        tally: &mut Tally,
        again: bool,
    ) -> io::Result<Read> {
        if verifier.quick && list != "-" && self.lists.open(list).is_ok_and(has_no_stat_line) {
            // (Every file would be read: the user meant otherwise.)
            self.status = report(list, NO_STAT_LINES);
            return Ok(Err(None));
        }
        let mut reader = match self.lists.open(list) {
            Ok(reader) => reader,
            Err(error) => return Ok(Err(Some(error))),
        };
        let (mut written, mut kept) = (Ok(()), Ok(()));
        let checked = verifier.check(&mut reader, list == "-", |report| {
            let flow = match report {
                Report::Checked(checked) => self.pass(checked, tally, again, &mut kept),
                Report::Waiting => self.printer.flush().map(|()| Continue(())),
                Report::OutsideSlice { .. } | Report::BadLine { .. } if again => Ok(Continue(())),
                Report::OutsideSlice { lines } => {
                    tally.entries += lines;
                    tally.outside_slice += lines;
                    Ok(Continue(()))
                }
                Report::BadLine { line, why } => {
                    tally.improperly_formatted += 1;
                    self.hints.bad_line(why);
                    let printed = self.printer.bad_line(list_name(list), line);
                    printed.map(|()| Continue(()))
                }
            };
            flow.unwrap_or_else(|error| {
                written = Err(error);
                Break(())
            })
        });
        written?;
        if let Some(repairs) = &mut self.repairs {
            repairs.mend(&mut self.printer, tally)?;
        }
        // (An audit says where its missing files are.)
        self.hints.list_ended(list, self.audit.is_none());
        self.printer.flush()?;
        Ok(kept.and(checked.map(drop)).map_err(Some))
    }

    /// Hands one pass to the features (an audit keeps it, the ledger and
    /// the repairs note it), counts and prints it; `Break` when the time is
    /// up, or the audit could not keep it (`kept`: why).
    fn pass(
        &mut self,
        checked: &Checked,
        tally: &mut Tally,
        again: bool,
        kept: &mut io::Result<()>,
    ) -> io::Result<ControlFlow<()>> {
        if let Some(audit) = &mut self.audit {
            *kept = (audit.keep(checked)).map(|accepted| tally.accepted += u64::from(accepted));
            if kept.is_err() {
                return Ok(Break(()));
            }
        }
        // (Only looked for, for the audit: another slice's.)
        if checked.pass.probe {
            return Ok(Continue(()));
        }
        if !checked.pass.continued {
            self.progress.file_done();
        }
        if let Some(schedule) = &self.lists.schedule {
            schedule.borrow_mut().note(checked);
        }
        let lines = checked.lines().count() as u64;
        match again {
            true => tally.outside_slice -= lines,
            false => tally.entries += lines,
        }
        self.hints.checked(checked);
        let out_of_time = self.out_of_time();
        // Missing files an audit classes at its end (in its first slice,
        // when checked in slices); --ignore-missing skips.
        let deferred = self.plan.ignore_missing || self.plan.audit.is_some();
        if !(deferred && checked.is_missing()) {
            tally.count_checked(checked);
            self.printer.checked(checked, self.plan.every_line)?;
        }
        if let Some(repairs) = &mut self.repairs {
            repairs.note(checked, &mut self.printer)?;
        }
        if out_of_time && checked.pass.continued {
            // The file's report ends where the time did: its verdict so far.
            tally.count(checked.worst);
            if !self.plan.every_line {
                self.printer
                    .verdict(checked, Subject::Checksum, checked.worst)?;
            }
        }
        Ok(if out_of_time { Break(()) } else { Continue(()) })
    }

    /// Ends one list once it is checked: its summary, or why it could not
    /// be read.
    fn end_list(&mut self, list: &OsStr, tally: &Tally, read: &Read) -> Result<(), Status> {
        self.totals.add(tally);
        match read {
            Ok(()) => {}
            Err(None) => return Ok(()),
            Err(Some(error)) => return self.unreadable(list, error).map_err(|e| write_failed(&e)),
        }
        // (An audit's lists are summed up after what the audit finds.)
        if self.audit.is_none() {
            summarize(self.plan, list_name(list), tally);
        }
        let (plan, updating) = (self.plan, self.lists.updated.is_some());
        if !tally.passed(plan.strict, updating, plan.ignore_missing) {
            self.status = Status::Failure;
        }
        Ok(())
    }

    /// Says why a list could not be read on: as GNU, what was read is
    /// reported, then the list fails without a summary.
    fn unreadable(&mut self, list: &OsStr, error: &io::Error) -> io::Result<()> {
        self.status = Status::Failure;
        (self.printer).list_error(list_name(list), &plain_message(error))?;
        if let (io::ErrorKind::NotFound, Some(directory)) = (error.kind(), self.directory)
            && Path::new(list).is_relative()
        {
            let directory = Name::of_path_lossy(directory).shown();
            warn(&format!(
                "tip: -C {directory} applies to the lists too: {} was looked for in \
                 {directory}; give its path from there, or an absolute one",
                Name::of_path_lossy(list).shown()
            ));
        }
        Ok(())
    }

    /// Ends the check: the ledger's coverage, an audit's findings and
    /// update, the summaries, the hints (`tallies`: how each list went);
    /// the run's status.
    fn finish(mut self, tallies: &[(Tally, Read)]) -> io::Result<Status> {
        let (plan, lists) = (self.plan, self.lists);
        if let Some(scope) = &lists.scope {
            self.totals.out_of_scope = scope.outside();
            if let Some(audit) = &mut self.audit {
                audit.first_outside = scope.first_outside();
            }
        }
        let shown = plan.verbosity != Verbosity::Status;
        let coverage = (lists.schedule.as_ref()).and_then(|s| s.borrow_mut().coverage(shown));
        if (lists.schedule.as_ref()).is_some_and(|s| s.borrow().failed) {
            self.status = Status::Failure;
        }
        // An audit walks only if every list could be read (and is summed
        // up) and held a valid line: else every file would look new.
        let usable = (tallies.iter()).all(|(tally, read)| read.is_ok() && tally.entries > 0);
        let summarize = || {
            let read = (lists.names.iter().zip(tallies)).filter(|(_, (_, read))| read.is_ok());
            for (list, (tally, _)) in read {
                summarize(plan, list_name(list), tally);
            }
        };
        match self.audit.take() {
            Some(audit) if usable => {
                let audited = audit.finish(plan, &mut self.printer, &mut self.totals, summarize)?;
                self.status = self.status.max(audited);
            }
            Some(_) => {
                summarize();
                warn("the tree is not audited: a list could not be read or held no checksum line");
            }
            None => {}
        }
        let summary = Record::CheckSummary {
            lists: lists.names.len(),
            counts: &self.totals,
            status: self.status as u8,
            ledger: coverage,
        };
        self.printer.end(Ok(()), &summary)?;
        if shown {
            self.hints.show(plan.settings.leaf_size);
        }
        Ok(self.status)
    }
}

/// The end-of-list messages on standard error, in GNU's order.
fn summarize(plan: &Checking, list_name: &OsStr, tally: &Tally) {
    if tally.entries == 0 {
        report(list_name, "no properly formatted checksum lines found");
        return;
    }
    if plan.verbosity == Verbosity::Status {
        return;
    }
    for warning in tally.warnings() {
        warn(&warning);
    }
    if tally.verified_none(plan.ignore_missing) {
        report(list_name, "no file was verified");
    }
}

impl Printer<'_> {
    /// With `--warn`, says that line `line` is improperly formatted (with
    /// `--json`, always, as an object).
    fn bad_line(&mut self, list_name: &OsStr, line: u64) -> io::Result<()> {
        let list = Name::of_path_lossy(list_name);
        self.emit(&Record::BadLine {
            list: JsonName(Some(list.printed())),
            line,
        })?;
        if self.verbosity == Verbosity::Warn {
            let message = format!("{line}: improperly formatted BLAKE2 checksum line");
            self.say(list.printed(), &message)?;
        }
        Ok(())
    }

    /// Prints what one pass over a file found: why it could not be read or
    /// how its length changed (standard error, once per file), then its
    /// verdicts (with `every_line`, one for each of its lines).
    fn checked(&mut self, checked: &Checked, every_line: bool) -> io::Result<()> {
        let name = &checked.pass.name;
        if let Err(error) = &checked.outcome
            && !checked.unreadable_before
        {
            self.error(name, &error.to_string())?;
        }
        if checked.pass.contradicts_itself {
            let message = "its leaf lines do not make its checksum line's digest: the list \
                           contradicts itself";
            self.error(name, message)?;
        }
        // (On a file's first pass: an edit says CHANGED instead.)
        let found = checked.outcome.as_ref().ok().map(|hashed| hashed.length);
        if let (Some(found), Some(listed)) = (found, checked.pass.total)
            && found != listed
            && !(checked.pass.continues || checked.edited)
        {
            let message = format!("is {found} bytes long, but its leaf lines say total={listed}");
            self.say(name, &message)?;
        }
        // (A file listed without a digest is not OK: its bytes were not
        // checked. Its count lines fail if its length changed. With every
        // line printed, the loop below prints the file's too.)
        let file_line = (checked.file_verdict())
            .filter(|verdict| *verdict != Verdict::Ok || !checked.lists_no_digest())
            .filter(|_| !every_line)
            .map(|verdict| (Subject::Checksum, verdict));
        // The file's line first, when it is checked in one pass (as nearly
        // every file is); else after the failing leaves of its last pass.
        let (first, last) = match !checked.pass.continues && !checked.pass.continued {
            true => (file_line, None),
            false => (None, file_line),
        };
        // (An edited file is CHANGED once: its leaves speak of no damage.)
        let shown = |&(subject, verdict): &(Subject, Verdict)| {
            let failed = matches!(
                verdict,
                Verdict::Failed | Verdict::Missing | Verdict::Changed
            );
            every_line || subject != Subject::Checksum && failed && !checked.edited
        };
        let lines = checked.lines().filter(shown);
        for (subject, verdict) in first.into_iter().chain(lines).chain(last) {
            self.verdict(checked, subject, verdict)?;
        }
        Ok(())
    }

    /// Prints one verdict: a leaf's with its bytes (what to fetch again).
    fn verdict(&mut self, checked: &Checked, subject: Subject, verdict: Verdict) -> io::Result<()> {
        let pass = &checked.pass;
        let (name, tree) = (JsonName(Some(&pass.name[..])), Tree(&pass.tree));
        let hashed = checked.outcome.as_ref().ok();
        self.emit(&match subject {
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
                let bytes = pass.tree.leaf_bytes(index, pass.total.unwrap_or(0));
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
                total: pass.total,
            },
        })
    }
}
