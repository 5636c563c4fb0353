//! The check driver (`bt2sum -c`): reads checksum lists, recomputes every
//! listed file and reports each in list order, GNU coreutils style.
//!
//! A list is read as its files are hashed: the engine takes the next entries
//! as room frees up, hashes several at once, and hands back their results in
//! list order, so a list of millions of files never sits in memory whole.
//! Entries naming standard input (`-`) are hashed in turn, since they share
//! one stream. An improperly formatted line is reported (with `--warn`) just
//! before the entry that follows it.
//!
//! Per list, after its verdicts, the summary goes to standard error in GNU's
//! order: the non-zero counts of improperly formatted lines, unreadable files
//! and mismatches, then `no file was verified` (`--ignore-missing`); or, for a
//! list without a single valid line, only `no properly formatted checksum
//! lines found`. As in GNU, `--status` silences stdout, the counts and `no
//! file was verified`, but not the reasons a file or list could not be read,
//! nor `no properly formatted checksum lines found`.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bt2sum::format::checksum::{Entry, Line, parse_line};
use bt2sum::format::verdict::{Verdict, push_shown_name, push_verdict};
use bt2sum::{Error, Event, Hashed, Job, TreeParams, hash_each, plain_message};

use super::config::{Checking, Verbosity};
use super::lines::{ListLine, read_line};
use super::output::{Status, output_failed, report, warn};
use super::process;
use super::progress::{Progress, When};

/// Verifies every list (standard input when none is given), writing
/// verdicts to `out`; returns the exit status.
pub fn run(config: &Checking, when: When, out: &mut dyn Write) -> Status {
    // The lists are read as they are checked: the total is unknown.
    let progress = Progress::start(when, || None);
    let stdin_only = [OsStr::new("-").to_os_string()];
    let lists = if config.lists.is_empty() {
        &stdin_only[..]
    } else {
        &config.lists[..]
    };
    let mut checker = Checker {
        config,
        progress: progress.counter(),
        out,
        reader_gone: false,
        shown: Vec::new(),
    };
    let mut status = Status::Success;
    for list in lists {
        match checker.check_list(list) {
            Ok(true) => {}
            Ok(false) => status = Status::Failure,
            Err(error) => return status.max(output_failed(&error)),
        }
    }
    match checker.flush() {
        Ok(()) => status,
        Err(error) => status.max(output_failed(&error)),
    }
}

/// The counts of one checked list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    /// Properly formatted lines (files checked, or skipped as missing).
    entries: u64,
    /// Improperly formatted lines (blank and `#` lines are not counted).
    improperly_formatted: u64,
    /// Files whose checksum matched.
    matched: u64,
    /// Files whose checksum did not match.
    mismatched: u64,
    /// Files that could not be opened or read.
    unreadable: u64,
}

impl Tally {
    /// Counts one verdict.
    fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Ok => self.matched += 1,
            Verdict::Failed => self.mismatched += 1,
            Verdict::Unreadable => self.unreadable += 1,
        }
    }

    /// GNU's summary warnings for the non-zero counts, in GNU's order and
    /// wording, each to follow `bt2sum: `.
    fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut warn = |count: u64, one: &str, many: &str| match count {
            0 => {}
            1 => warnings.push(format!("WARNING: 1 {one}")),
            _ => warnings.push(format!("WARNING: {count} {many}")),
        };
        warn(
            self.improperly_formatted,
            "line is improperly formatted",
            "lines are improperly formatted",
        );
        warn(
            self.unreadable,
            "listed file could not be read",
            "listed files could not be read",
        );
        warn(
            self.mismatched,
            "computed checksum did NOT match",
            "computed checksums did NOT match",
        );
        warnings
    }

    /// Whether the list verifies: some file matched, none failed or was
    /// unreadable, and with `strict` no line was improperly formatted. (A
    /// list whose files were all skipped as missing verifies nothing, as in
    /// GNU.)
    fn passed(&self, strict: bool) -> bool {
        self.matched > 0
            && self.mismatched == 0
            && self.unreadable == 0
            && !(strict && self.improperly_formatted > 0)
    }
}

/// What a list entry carries through the engine: the numbers of the
/// improperly formatted lines just before it, and the entry.
type Tag = (Vec<u64>, Entry);

/// The options of a check run and where its verdicts go.
struct Checker<'a> {
    config: &'a Checking,
    /// The progress bar's byte counter, if one is drawn.
    progress: Option<&'a Arc<AtomicU64>>,
    out: &'a mut dyn Write,
    /// Whether standard output's reader has gone: the verdicts are then
    /// dropped, as with `--status`, and the exit status still tells.
    reader_gone: bool,
    /// A reused buffer for one output line.
    shown: Vec<u8>,
}

impl Checker<'_> {
    /// Writes the line in `shown`. A reader that has gone (a closed pipe)
    /// silences the rest of the run instead of ending it: the exit status
    /// must still tell whether every file matched.
    fn emit(&mut self) -> io::Result<()> {
        if self.reader_gone {
            return Ok(());
        }
        let written = self.out.write_all(&self.shown);
        self.gone_is_fine(written)
    }

    /// Flushes what was written, as [`emit`](Self::emit) writes.
    fn flush(&mut self) -> io::Result<()> {
        if self.reader_gone {
            return Ok(());
        }
        let flushed = self.out.flush();
        self.gone_is_fine(flushed)
    }

    fn gone_is_fine(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.reader_gone = true;
                Ok(())
            }
            other => other,
        }
    }

    /// Verifies one list; `Ok(false)` if it does not pass (or cannot be
    /// read), `Err` only when writing to `out` fails.
    fn check_list(&mut self, list: &OsStr) -> io::Result<bool> {
        let list_name = if list == "-" {
            OsStr::new("standard input")
        } else {
            list
        };
        let reader: io::Result<Box<dyn BufRead>> = if list == "-" && process::stdin_closed() {
            Err(process::closed_stream())
        } else if list == "-" {
            Ok(Box::new(io::stdin().lock()))
        } else {
            File::open(list).map(|file| Box::new(BufReader::with_capacity(64 << 10, file)) as _)
        };
        let reader = match reader {
            Ok(reader) => reader,
            Err(error) => {
                self.flush()?;
                report(list_name, &plain_message(&error));
                return Ok(false);
            }
        };
        let mut entries = Entries {
            reader,
            line: Vec::new(),
            line_number: 0,
            bad_lines: Vec::new(),
            error: None,
            config: self.config,
            progress: self.progress,
        };
        let mut tally = Tally::default();
        let mut written = Ok(());
        hash_each(&mut entries, |event| {
            written = match event {
                Event::Waiting => self.flush(),
                Event::Ready(outcome) => {
                    let (bad_lines, entry) = outcome.tag;
                    self.report_bad_lines(list_name, &bad_lines, &mut tally)
                        .and_then(|()| self.report_file(&entry, outcome.result, &mut tally))
                }
            };
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        });
        written?;
        self.report_bad_lines(list_name, &entries.bad_lines, &mut tally)?;
        if let Some(error) = entries.error {
            // As GNU: what was read is reported, then the list fails without
            // a summary.
            self.flush()?;
            report(list_name, &plain_message(&error));
            return Ok(false);
        }
        self.summarize(list_name, &tally)?;
        Ok(tally.passed(self.config.strict))
    }

    /// Counts improperly formatted lines, and with `--warn` reports them.
    fn report_bad_lines(
        &mut self,
        list_name: &OsStr,
        line_numbers: &[u64],
        tally: &mut Tally,
    ) -> io::Result<()> {
        for line_number in line_numbers {
            tally.improperly_formatted += 1;
            if self.config.verbosity == Verbosity::Warn {
                self.flush()?;
                report(
                    list_name,
                    &format!("{line_number}: improperly formatted BLAKE2 checksum line"),
                );
            }
        }
        Ok(())
    }

    /// Counts and prints the verdict on one listed file.
    fn report_file(
        &mut self,
        entry: &Entry,
        result: Result<Hashed, Error>,
        tally: &mut Tally,
    ) -> io::Result<()> {
        tally.entries += 1;
        let verdict = match result {
            Ok(hashed) if hashed.digest == entry.expected => Verdict::Ok,
            Ok(_) => Verdict::Failed,
            Err(Error::Io(error))
                if self.config.ignore_missing && error.kind() == io::ErrorKind::NotFound =>
            {
                return Ok(());
            }
            Err(error) => {
                self.flush()?;
                self.shown.clear();
                push_shown_name(&mut self.shown, &entry.name);
                report(&os_str(&self.shown), &error.to_string());
                Verdict::Unreadable
            }
        };
        tally.count(verdict);
        let printed = match verdict {
            Verdict::Ok => matches!(self.config.verbosity, Verbosity::Normal | Verbosity::Warn),
            Verdict::Failed | Verdict::Unreadable => self.config.verbosity != Verbosity::Status,
        };
        if printed {
            self.shown.clear();
            push_verdict(&mut self.shown, &entry.name, verdict);
            self.emit()?;
        }
        Ok(())
    }

    /// The end-of-list messages on standard error, in GNU's order.
    fn summarize(&mut self, list_name: &OsStr, tally: &Tally) -> io::Result<()> {
        self.flush()?;
        if tally.entries == 0 {
            report(list_name, "no properly formatted checksum lines found");
            return Ok(());
        }
        if self.config.verbosity == Verbosity::Status {
            return Ok(());
        }
        for warning in tally.warnings() {
            warn(&warning);
        }
        if self.config.ignore_missing && tally.matched == 0 {
            report(list_name, "no file was verified");
        }
        Ok(())
    }
}

/// The entries of a list, read as the engine asks for them: each a job
/// hashing the listed file with the tag's tree and `-t`'s leaf size.
struct Entries<'a> {
    reader: Box<dyn BufRead + 'a>,
    /// The line being read.
    line: Vec<u8>,
    line_number: u64,
    /// Improperly formatted lines not yet handed on with an entry.
    bad_lines: Vec<u64>,
    /// Why reading the list stopped early.
    error: Option<io::Error>,
    config: &'a Checking,
    progress: Option<&'a Arc<AtomicU64>>,
}

impl Iterator for Entries<'_> {
    type Item = Job<Tag>;

    fn next(&mut self) -> Option<Job<Tag>> {
        while self.error.is_none() {
            let read = match read_line(&mut self.reader, &mut self.line) {
                Ok(ListLine::End) => return None,
                Ok(read) => read,
                Err(error) => {
                    self.error = Some(error);
                    return None;
                }
            };
            self.line_number += 1;
            let parsed = match read {
                ListLine::TooLong => Line::Bad,
                _ => parse_line(&self.line, self.config.untagged_algorithm),
            };
            let entry = match parsed {
                Line::Skip => continue,
                Line::Bad => {
                    self.bad_lines.push(self.line_number);
                    continue;
                }
                Line::Entry(entry) => entry,
            };
            let size = entry.expected.as_bytes().len();
            let Ok(tree) = TreeParams::new(entry.algorithm, size, self.config.leaf_size) else {
                // The parser only lets valid sizes through.
                self.bad_lines.push(self.line_number);
                continue;
            };
            let path = (entry.name != b"-").then(|| path_of(&entry.name));
            let tag = (std::mem::take(&mut self.bad_lines), entry);
            let job = match path {
                Some(path) => Job::path(tag, path, &tree),
                None if process::stdin_closed() => {
                    Job::failed(tag, process::closed_stream().into())
                }
                None => Job::stdin(tag, &tree),
            };
            return Some(match self.progress {
                Some(counter) => job.progress(counter.clone()),
                None => job,
            });
        }
        None
    }
}

/// A listed name as a path: the bytes it is.
#[cfg(unix)]
fn path_of(name: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(OsStr::from_bytes(name))
}

/// Bytes shown in a message, as an `OsStr`.
#[cfg(unix)]
fn os_str(bytes: &[u8]) -> std::borrow::Cow<'_, OsStr> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(OsStr::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_warnings_and_verdicts() {
        let mut tally = Tally::default();
        assert!(tally.warnings().is_empty());
        assert!(!tally.passed(false));
        tally.entries = 1;
        tally.count(Verdict::Ok);
        assert!(tally.passed(true));
        tally.improperly_formatted = 1;
        assert!(tally.passed(false));
        assert!(!tally.passed(true));
        assert_eq!(
            tally.warnings(),
            ["WARNING: 1 line is improperly formatted"]
        );
        tally.improperly_formatted = 3;
        tally.count(Verdict::Failed);
        tally.count(Verdict::Unreadable);
        tally.count(Verdict::Unreadable);
        assert!(!tally.passed(false));
        assert_eq!(
            tally.warnings(),
            [
                "WARNING: 3 lines are improperly formatted",
                "WARNING: 2 listed files could not be read",
                "WARNING: 1 computed checksum did NOT match",
            ]
        );
        let one_each = Tally {
            entries: 2,
            improperly_formatted: 0,
            matched: 0,
            mismatched: 2,
            unreadable: 1,
        };
        assert_eq!(
            one_each.warnings(),
            [
                "WARNING: 1 listed file could not be read",
                "WARNING: 2 computed checksums did NOT match",
            ]
        );
    }
}
