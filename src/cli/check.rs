//! The check driver (`bt2sum -c`): reads checksum lists, recomputes every
//! listed file and reports each in list order, GNU coreutils style.
//!
//! A list is read a chunk at a time (at most [`CHUNK_ENTRIES`] lines, or
//! [`CHUNK_NAME_BYTES`] of names): the chunk's lines are parsed, its files
//! hashed concurrently on the rayon pool, and their verdicts printed in list
//! order before the next chunk is read, so a list of millions of files never
//! sits in memory whole. Entries naming standard input (`-`) are hashed one
//! after another, in list order, since they share one stream.
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
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::prelude::*;

use super::progress::{Mode, Progress};
use super::{EXIT_FAILURE, EXIT_OK, Plan, output_failed, report, write_stderr};
use crate::check::{Entry, Line, Tally, Verdict, parse_line, push_shown_name, push_verdict};
use crate::ct;
use crate::input::{InputError, Options, hash_path_with, hash_stdin_with, plain_message};
use crate::tree::{Algorithm, Digest, TreeParams};

/// The most lines a chunk holds before its files are hashed.
pub const CHUNK_ENTRIES: usize = 256;

/// The most name bytes a chunk holds before its files are hashed.
pub const CHUNK_NAME_BYTES: usize = 8 << 20;

/// A list line longer than this (16 MiB, thousands of times `PATH_MAX`) is
/// improperly formatted, and skipped without being held in memory.
pub const MAX_LINE: usize = 16 << 20;

/// What check mode prints: GNU's `--status`, `--quiet` and `--warn`, of
/// which the last one given wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verbosity {
    /// Nothing on stdout, no summary counts.
    Status,
    /// No `OK` lines.
    Quiet,
    /// Every verdict and the summary counts.
    Normal,
    /// As normal, plus a line for each improperly formatted line.
    Warn,
}

/// One line of a chunk that is reported: a file to verify, or an improperly
/// formatted line (by its 1-based number, for `--warn`).
enum Item {
    Verify { entry: Entry, tree: TreeParams },
    Bad { line_number: u64 },
}

/// One line read from a list.
enum ListLine {
    /// The list has ended.
    End,
    /// A line, in the buffer.
    Line,
    /// A line longer than [`MAX_LINE`], skipped.
    TooLong,
}

/// Verifies every list of the plan (standard input when none is given),
/// writing verdicts to `out`; returns the exit status.
pub fn run(plan: &Plan, out: impl Write) -> u8 {
    let args = &plan.args;
    let verbosity = if args.status {
        Verbosity::Status
    } else if args.quiet {
        Verbosity::Quiet
    } else if args.warn {
        Verbosity::Warn
    } else {
        Verbosity::Normal
    };
    // The lists are read as they are checked: the total is unknown.
    let progress = Progress::start(Mode::of(args), || None);
    let mut checker = Checker {
        options: Options {
            keep_leaves: false,
            progress: progress.counter(),
        },
        untagged_algorithm: plan.tree.algorithm(),
        leaf_size: plan.tree.leaf_size(),
        verbosity,
        strict: args.strict,
        ignore_missing: args.ignore_missing,
        out,
        shown: Vec::new(),
    };
    let stdin_only = [OsStr::new("-").to_os_string()];
    let lists = if args.files.is_empty() {
        &stdin_only[..]
    } else {
        &args.files[..]
    };
    let mut status = EXIT_OK;
    for list in lists {
        match checker.check_list(list) {
            Ok(true) => {}
            Ok(false) => status = EXIT_FAILURE,
            Err(error) => return status.max(output_failed(&error)),
        }
    }
    match checker.out.flush() {
        Ok(()) => status,
        Err(error) => status.max(output_failed(&error)),
    }
}

/// The options of a check run and where its verdicts go.
struct Checker<'a, W: Write> {
    /// How files are hashed (counting bytes for the progress bar).
    options: Options<'a>,
    untagged_algorithm: Algorithm,
    leaf_size: u64,
    verbosity: Verbosity,
    strict: bool,
    ignore_missing: bool,
    out: W,
    /// A reused buffer for one output line.
    shown: Vec<u8>,
}

impl<W: Write> Checker<'_, W> {
    /// Verifies one list; `Ok(false)` if it does not pass (or cannot be
    /// read), `Err` only when writing to `out` fails.
    fn check_list(&mut self, list: &OsStr) -> io::Result<bool> {
        let list_name = if list == "-" {
            OsStr::new("standard input")
        } else {
            list
        };
        let reader: io::Result<Box<dyn BufRead>> = if list == "-" {
            Ok(Box::new(io::stdin().lock()))
        } else {
            File::open(list).map(|file| Box::new(BufReader::with_capacity(64 << 10, file)) as _)
        };
        let mut reader = match reader {
            Ok(reader) => reader,
            Err(error) => {
                self.out.flush()?;
                report(list_name, &plain_message(&error));
                return Ok(false);
            }
        };

        let mut tally = Tally::default();
        let mut chunk = Vec::new();
        let mut chunk_name_bytes = 0;
        let mut line = Vec::new();
        let mut line_number = 0;
        loop {
            let read = match read_line(&mut reader, &mut line) {
                Ok(ListLine::End) => break,
                Ok(read) => read,
                Err(error) => {
                    // As GNU: what was read is reported, then the list fails
                    // without a summary.
                    self.verify_chunk(&mut chunk, list_name, &mut tally)?;
                    self.out.flush()?;
                    report(list_name, &plain_message(&error));
                    return Ok(false);
                }
            };
            line_number += 1;
            let parsed = match read {
                ListLine::TooLong => Line::Bad,
                _ => parse_line(&line, self.untagged_algorithm),
            };
            let item = match parsed {
                Line::Skip => continue,
                Line::Bad => Item::Bad { line_number },
                Line::Entry(entry) => {
                    match TreeParams::new(entry.algorithm, entry.size, self.leaf_size) {
                        Ok(tree) => {
                            chunk_name_bytes += entry.name.len();
                            Item::Verify { entry, tree }
                        }
                        // The parser only lets valid sizes through.
                        Err(_) => Item::Bad { line_number },
                    }
                }
            };
            chunk.push(item);
            if chunk.len() >= CHUNK_ENTRIES || chunk_name_bytes >= CHUNK_NAME_BYTES {
                self.verify_chunk(&mut chunk, list_name, &mut tally)?;
                chunk_name_bytes = 0;
            }
        }
        self.verify_chunk(&mut chunk, list_name, &mut tally)?;
        self.summarize(list_name, &tally)?;
        Ok(tally.passed(self.strict))
    }

    /// Hashes the chunk's files on the pool, then reports its lines in order
    /// and empties it.
    fn verify_chunk(
        &mut self,
        chunk: &mut Vec<Item>,
        list_name: &OsStr,
        tally: &mut Tally,
    ) -> io::Result<()> {
        let options = self.options;
        let results: Vec<Option<Result<Digest, InputError>>> = chunk
            .par_iter()
            .map(|item| match item {
                Item::Verify { entry, tree } if entry.name != b"-" => {
                    let path = Path::new(OsStr::from_bytes(&entry.name));
                    Some(hash_path_with(tree, path, options).map(|hashed| hashed.digest))
                }
                _ => None,
            })
            .collect();
        for (item, result) in chunk.drain(..).zip(results) {
            match item {
                Item::Bad { line_number } => {
                    tally.improperly_formatted += 1;
                    if self.verbosity == Verbosity::Warn {
                        self.out.flush()?;
                        report(
                            list_name,
                            &format!("{line_number}: improperly formatted BLAKE2 checksum line"),
                        );
                    }
                }
                Item::Verify { entry, tree } => {
                    tally.entries += 1;
                    // Standard input is read here, in list order.
                    let result = result.unwrap_or_else(|| {
                        hash_stdin_with(&tree, self.options).map(|hashed| hashed.digest)
                    });
                    self.report_file(&entry, result, tally)?;
                }
            }
        }
        Ok(())
    }

    /// Counts and prints the verdict on one listed file.
    fn report_file(
        &mut self,
        entry: &Entry,
        result: Result<Digest, InputError>,
        tally: &mut Tally,
    ) -> io::Result<()> {
        let verdict = match result {
            Ok(digest) if ct::eq(digest.as_bytes(), &entry.expected) => Verdict::Ok,
            Ok(_) => Verdict::Failed,
            Err(InputError::Io(error))
                if self.ignore_missing && error.kind() == io::ErrorKind::NotFound =>
            {
                return Ok(());
            }
            Err(error) => {
                self.out.flush()?;
                self.shown.clear();
                push_shown_name(&mut self.shown, &entry.name);
                report(OsStr::from_bytes(&self.shown), &error.to_string());
                Verdict::Unreadable
            }
        };
        tally.count(verdict);
        let printed = match verdict {
            Verdict::Ok => matches!(self.verbosity, Verbosity::Normal | Verbosity::Warn),
            Verdict::Failed | Verdict::Unreadable => self.verbosity != Verbosity::Status,
        };
        if printed {
            self.shown.clear();
            push_verdict(&mut self.shown, &entry.name, verdict);
            self.out.write_all(&self.shown)?;
        }
        Ok(())
    }

    /// The end-of-list messages on standard error, in GNU's order.
    fn summarize(&mut self, list_name: &OsStr, tally: &Tally) -> io::Result<()> {
        self.out.flush()?;
        if tally.entries == 0 {
            report(list_name, "no properly formatted checksum lines found");
            return Ok(());
        }
        if self.verbosity == Verbosity::Status {
            return Ok(());
        }
        for warning in tally.warnings() {
            write_stderr(format!("bt2sum: {warning}\n").as_bytes());
        }
        if self.ignore_missing && tally.matched == 0 {
            report(list_name, "no file was verified");
        }
        Ok(())
    }
}

/// Reads the next line of a list, `\n` included, into `line`. A line over
/// [`MAX_LINE`] bytes is read past and reported as [`ListLine::TooLong`],
/// with only its first bytes kept.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<ListLine> {
    line.clear();
    let read = reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', line)?;
    if read == 0 {
        return Ok(ListLine::End);
    }
    if read <= MAX_LINE || line.last() == Some(&b'\n') {
        return Ok(ListLine::Line);
    }
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            break;
        }
        match buffer.iter().position(|&byte| byte == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                break;
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
    Ok(ListLine::TooLong)
}
