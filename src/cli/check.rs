//! The check driver (`bt2sum -c`): reads checksum lists, recomputes every
//! listed file and reports each checked line in list order, GNU coreutils
//! style.
//!
//! A list is read as its files are hashed: the engine takes the next groups
//! as room frees up, hashes several at once, and hands back their results in
//! list order, so a list of millions of files never sits in memory whole. A
//! group is a checksum line, or the lines of a leaf listing about one file
//! (`--leaves`, `--leaf-range`, `--leaf-count`), or both: its file is read
//! once, its leaves compared as they are hashed. Groups naming standard
//! input (`-`) are hashed in turn, since they share one stream. An
//! improperly formatted line is reported (with `--warn`) just before the
//! group that follows it.
//!
//! Per list, after its verdicts, the summary goes to standard error in GNU's
//! order: the non-zero counts of improperly formatted lines, unreadable files
//! and mismatches, then `no file was verified` (`--ignore-missing`); or, for a
//! list without a single valid line, only `no properly formatted checksum
//! lines found`. As in GNU, `--status` silences stdout, the counts and `no
//! file was verified`, but not the reasons a file or list could not be read,
//! nor `no properly formatted checksum lines found`.

use std::cell::RefCell;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::ops::ControlFlow;

use bt2sum::format::checksum::{Entry, Line, parse_line, parse_nameless};
use bt2sum::format::leaf::LeafLine;
use bt2sum::format::verdict::{Verdict, push_count_verdict, push_leaf_verdict, push_verdict};
use bt2sum::leaves::ListedLeaves;
use bt2sum::memory;
use bt2sum::{
    Algorithm, Digest, Error, Event, Hashed, Job, TreeParams, hash_each, out_of_memory,
    plain_message,
};

use super::args::shown_leaf_size;
use super::config::{Checking, Verbosity};
use super::lines::{ListLine, read_line};
use super::output::{Status, output_failed, report, report_listed, warn};
use super::progress::{Progress, When};
use bt2sum::system;

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
        progress: &progress,
        out,
        reader_gone: false,
        shown: Vec::new(),
        file: None,
        sized_by_option: (0, 0),
        lookalikes: Lookalikes::default(),
    };
    let budget = RefCell::new(Budget::new());
    let mut status = Status::Success;
    for list in lists {
        match checker.check_list(list, &budget) {
            Ok(true) => {}
            Ok(false) => status = Status::Failure,
            Err(error) => return status.max(output_failed(&error)),
        }
    }
    if let Err(error) = checker.flush() {
        return status.max(output_failed(&error));
    }
    if config.verbosity != Verbosity::Status {
        hints(config, checker.sized_by_option, &checker.lookalikes);
    }
    status
}

/// Says, after the summaries, what most likely made a list fail as a whole:
/// lines of GNU `b2sum --tag`, lines of a SHA-256 digest's size, or, when
/// every checksum line checked with `-t`'s leaf size failed, another leaf
/// size or another tool (genuine damage rarely hits every file).
fn hints(config: &Checking, (matched, failed): (u64, u64), lookalikes: &Lookalikes) {
    let another_function = "a list made by b2sum (which hashes a file as one sequential \
                            BLAKE2 stream) or by another algorithm never matches a tree hash";
    if lookalikes.gnu_tagged > 0 {
        warn(&format!(
            "hint: {} line{} GNU b2sum's tag (`BLAKE2b (NAME) = `, or a size in bits): {}",
            lookalikes.gnu_tagged,
            if lookalikes.gnu_tagged == 1 {
                " has"
            } else {
                "s have"
            },
            another_function
        ));
    }
    if failed == 0 || matched > 0 {
        return;
    }
    if lookalikes.entries > 0 && lookalikes.sha256_sized == lookalikes.entries {
        warn(
            "hint: these lines hold 64 hex digits, the size of a SHA-256 digest: a list \
             made by sha256sum never matches a tree hash (one made by bt2sum -a blake2s \
             --untagged is checked with -a blake2s)",
        );
        return;
    }
    // Checksum lines do not say which leaf size made them: perhaps the list
    // was made with another.
    warn(&format!(
        "hint: checksum lines do not record their leaf size: these were checked with -t {}, \
         and a list made with another size needs it given with -t; {another_function}",
        shown_leaf_size(config.leaf_size)
    ));
}

/// The counts of one checked list. Files are counted, not lines: a file
/// listed with its leaves counts once, by its worst line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    /// Properly formatted lines (files checked, or skipped as missing).
    entries: u64,
    /// Improperly formatted lines (blank and `#` lines are not counted).
    improperly_formatted: u64,
    /// Files whose every line matched.
    matched: u64,
    /// Files of which a line did not match.
    mismatched: u64,
    /// Files that could not be opened or read.
    unreadable: u64,
}

impl Tally {
    /// Counts one file, by its worst line.
    fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Ok => self.matched += 1,
            Verdict::Failed | Verdict::Missing => self.mismatched += 1,
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

/// The options of a check run and where its verdicts go.
struct Checker<'a> {
    config: &'a Checking,
    /// The progress bar.
    progress: &'a Progress,
    out: &'a mut dyn Write,
    /// Whether standard output's reader has gone: the verdicts are then
    /// dropped, as with `--status`, and the exit status still tells.
    reader_gone: bool,
    /// A reused buffer for one output line.
    shown: Vec<u8>,
    /// The worst verdict so far on the file being checked, counted once
    /// the next file starts (its lines may come in several groups).
    file: Option<Verdict>,
    /// How many checksum lines checked with `-t`'s leaf size (no leaf line
    /// gave theirs) matched, and how many did not. A list made with another
    /// leaf size fails in every file.
    sized_by_option: (u64, u64),
    /// Lines, in every list, that look made by another tool.
    lookalikes: Lookalikes,
}

/// Counts of the lines of lists that look made by another tool, for the
/// hints at the end of a run: a list made by GNU `b2sum` (sequential
/// BLAKE2) or `sha256sum` (another algorithm) never verifies a tree hash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Lookalikes {
    /// Checksum lines.
    entries: u64,
    /// GNU-style `HEX  NAME` checksum lines of 64 hex digits under `-a
    /// blake2b`: a SHA-256 digest's size.
    sha256_sized: u64,
    /// Improperly formatted lines with GNU `b2sum --tag`'s tag: `BLAKE2b
    /// (NAME) = `, or a size in bits (`BLAKE2b-256`).
    gnu_tagged: u64,
}

impl Lookalikes {
    /// Counts one line of a list (its text and how it parsed).
    fn note(&mut self, text: &[u8], parsed: &Line) {
        let text = text.strip_prefix(b"\\").unwrap_or(text);
        match parsed {
            Line::Entry(entry) => {
                self.entries += 1;
                let untagged = !text.starts_with(b"BLAKE2");
                if untagged
                    && entry.algorithm == Algorithm::Blake2b
                    && entry.expected.as_bytes().len() == 32
                {
                    self.sha256_sized += 1;
                }
            }
            Line::Bad if gnu_tagged(text) => self.gnu_tagged += 1,
            _ => {}
        }
    }

    fn add(&mut self, other: &Lookalikes) {
        self.entries += other.entries;
        self.sha256_sized += other.sha256_sized;
        self.gnu_tagged += other.gnu_tagged;
    }
}

/// Whether a line starts with the tag GNU `b2sum --tag` writes: `BLAKE2b
/// (`, or `BLAKE2b-N (` with N a size in bits (more bytes than the
/// algorithm has).
fn gnu_tagged(text: &[u8]) -> bool {
    for (tag, most) in [(&b"BLAKE2b"[..], 64), (b"BLAKE2s", 32)] {
        let Some(rest) = text.strip_prefix(tag) else {
            continue;
        };
        if rest.starts_with(b" (") {
            return true;
        }
        if let Some(rest) = rest.strip_prefix(b"-") {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let bits = std::str::from_utf8(&rest[..digits])
                .ok()
                .and_then(|digits| digits.parse::<u64>().ok());
            if rest[digits..].starts_with(b" (") && bits.is_some_and(|bits| bits > most) {
                return true;
            }
        }
    }
    false
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
}

/// The most leaf and count lines of one file checked in one pass over it
/// (what their listed digests take: 16 MiB). A longer run of them is checked
/// a part at a time, each part hashing only its own leaves.
const GROUP_LINES: usize = (16 << 20) / ListedLeaves::BYTES_PER_LEAF;

/// Memory set aside when checking starts, for what must still be done once
/// the system refuses more (`ulimit -v`): hashing the pass at hand, and the
/// messages.
const SPARE_MEMORY: usize = memory::HEADROOM;

/// How many lines one pass may hold. A pass grows only with memory granted;
/// the first time more is refused, the spare memory is given back (so that
/// the pass can still be hashed and reported), and the passes after it hold
/// at most half as many lines (so that they leave room too).
struct Budget {
    lines: usize,
    spare: Vec<u8>,
}

impl Budget {
    fn new() -> Self {
        let mut spare = Vec::new();
        // (Refused, there is no spare: nothing more can be done about it.
        // The spare is room kept free itself, so not taken through
        // `memory::reserve_exact`, which would keep more beside it.)
        #[allow(clippy::disallowed_methods)]
        let _ = spare.try_reserve_exact(SPARE_MEMORY);
        Budget {
            lines: GROUP_LINES,
            spare,
        }
    }

    /// Memory was refused for a pass of `lines` lines.
    fn refused(&mut self, lines: usize) {
        self.spare = Vec::new();
        self.lines = self.lines.min(lines / 2).max(1);
    }
}

/// Consecutive lines of a list about one file, checked in one pass over it:
/// a checksum line with the leaf and count lines that follow it, or leaf
/// and count lines alone.
struct Group {
    /// The improperly formatted lines just before the group, reported
    /// before it.
    bad_lines: Vec<u64>,
    /// The file's name, unescaped.
    name: Vec<u8>,
    /// What the file is hashed with: the tree of its leaf lines (their
    /// `tree=` wins over `-t`), or the checksum line's tag and `-t`.
    tree: TreeParams,
    /// The checksum its checksum line lists, if the group starts with one.
    checksum: Option<Digest>,
    /// The file's length, as its leaf and count lines list it, if it has
    /// any.
    total: Option<u64>,
    /// For each count line, how many of the group's leaf lines precede it.
    count_lines: Vec<usize>,
    /// Whether the group goes on with the leaf lines of the group before it
    /// (one listing of one file, checked a part at a time): the two are one
    /// file.
    continues: bool,
}

/// What a checked line is about.
enum Part {
    /// The file's checksum.
    Checksum,
    /// One of its leaves.
    Leaf(u64),
    /// Its length (a `leaves=` line).
    Count,
}

impl Group {
    /// The group's checked lines in list order, each with its verdict,
    /// given the leaves' digests and the file's length (`None`: it could not
    /// be read), and whether the checksum matched.
    ///
    /// A leaf's digest depends only on its bytes, its index and whether it
    /// is the last one: in a file that got shorter or longer, a listed leaf
    /// whose bytes and place are unchanged still verifies, the listed last
    /// leaf no longer does (it is not the last any more, or lost bytes), and
    /// a listed leaf past the new end is missing. A count line checks the
    /// length.
    fn verdicts<'a>(
        &'a self,
        listed: Option<&'a ListedLeaves>,
        hashed: Option<&'a Hashed>,
        checksum_matched: bool,
    ) -> impl Iterator<Item = (Part, Verdict)> + 'a {
        let readable = hashed.is_some();
        let judged = move |passed: bool| match (readable, passed) {
            (false, _) => Verdict::Unreadable,
            (true, true) => Verdict::Ok,
            (true, false) => Verdict::Failed,
        };
        let checksum = self
            .checksum
            .map(|_| (Part::Checksum, judged(checksum_matched)));
        let total_matches = hashed.is_some_and(|hashed| Some(hashed.length) == self.total);
        let leaves_now = hashed.map(|hashed| self.tree.leaf_count(hashed.length));
        let mut leaves = listed.into_iter().flat_map(ListedLeaves::verdicts);
        let mut count_lines = self.count_lines.iter().peekable();
        let mut leaves_seen = 0;
        let rest = std::iter::from_fn(move || {
            if count_lines
                .next_if(|&&before| before == leaves_seen)
                .is_some()
            {
                return Some((Part::Count, judged(total_matches)));
            }
            let (index, matched) = leaves.next()?;
            leaves_seen += 1;
            let verdict = match leaves_now {
                Some(count) if index >= count => Verdict::Missing,
                _ => judged(matched),
            };
            Some((Part::Leaf(index), verdict))
        });
        checksum.into_iter().chain(rest)
    }

    /// How many lines the group checks.
    fn lines(&self, listed: Option<&ListedLeaves>) -> u64 {
        let leaves = listed.map_or(0, ListedLeaves::len);
        (usize::from(self.checksum.is_some()) + leaves + self.count_lines.len()) as u64
    }
}

impl Checker<'_> {
    /// Verifies one list; `Ok(false)` if it does not pass (or cannot be
    /// read), `Err` only when writing to `out` fails.
    fn check_list(&mut self, list: &OsStr, budget: &RefCell<Budget>) -> io::Result<bool> {
        let list_name = if list == "-" {
            OsStr::new("standard input")
        } else {
            list
        };
        let reader: io::Result<Box<dyn BufRead>> = if list == "-" && system::stdin_closed() {
            Err(system::closed_stream())
        } else if list == "-" {
            self.progress.reading_stdin();
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
        let mut groups = Groups {
            reader,
            line: Vec::new(),
            line_number: 0,
            ahead: None,
            ended: false,
            bad_lines: Vec::new(),
            error: None,
            last_listing: None,
            nameless_is_stdin: list != "-",
            lookalikes: Lookalikes::default(),
            budget,
            config: self.config,
            progress: self.progress,
        };
        let mut tally = Tally::default();
        let mut written = Ok(());
        hash_each(&mut groups, |event| {
            written = match event {
                Event::Waiting => self.flush(),
                Event::Ready(outcome) => {
                    let group = outcome.tag;
                    if let Err(Error::Io(error)) = &outcome.result
                        && error.kind() == io::ErrorKind::OutOfMemory
                    {
                        // Too big a pass to hash: the passes after it are
                        // smaller.
                        budget
                            .borrow_mut()
                            .refused(group.lines(outcome.leaves.as_ref()) as usize);
                    }
                    self.report_bad_lines(list_name, &group.bad_lines, &mut tally)
                        .and_then(|()| {
                            let listed = outcome.leaves.as_ref();
                            self.report_group(&group, listed, outcome.result, &mut tally)
                        })
                }
            };
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        });
        written?;
        self.lookalikes.add(&groups.lookalikes);
        self.count_file(&mut tally);
        self.report_bad_lines(list_name, &groups.bad_lines, &mut tally)?;
        if let Some(error) = groups.error {
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

    /// Counts and prints the verdicts on one group's lines.
    fn report_group(
        &mut self,
        group: &Group,
        listed: Option<&ListedLeaves>,
        result: Result<Hashed, Error>,
        tally: &mut Tally,
    ) -> io::Result<()> {
        tally.entries += group.lines(listed);
        if !group.continues {
            self.count_file(tally);
        }
        let hashed = match result {
            Ok(hashed) => Some(hashed),
            Err(Error::Io(error))
                if self.config.ignore_missing && error.kind() == io::ErrorKind::NotFound =>
            {
                return Ok(());
            }
            Err(error) => {
                // The reason once per file, not once per part of it.
                if !(group.continues && self.file == Some(Verdict::Unreadable)) {
                    self.flush()?;
                    report_listed(&group.name, &error.to_string());
                }
                None
            }
        };
        if let (Some(hashed), Some(total)) = (&hashed, group.total)
            && hashed.length != total
            && !group.continues
        {
            self.flush()?;
            report_listed(
                &group.name,
                &format!(
                    "is {} bytes long, but its leaf lines say total={total}",
                    hashed.length
                ),
            );
        }
        let checksum_matched = self.checksum_matches(group, hashed.as_ref());
        for (part, verdict) in group.verdicts(listed, hashed.as_ref(), checksum_matched) {
            if group.total.is_none() {
                match verdict {
                    Verdict::Ok => self.sized_by_option.0 += 1,
                    Verdict::Failed => self.sized_by_option.1 += 1,
                    Verdict::Unreadable | Verdict::Missing => {}
                }
            }
            self.file = Some(self.file.map_or(verdict, |worst| worse(worst, verdict)));
            let printed = match verdict {
                Verdict::Ok => matches!(self.config.verbosity, Verbosity::Normal | Verbosity::Warn),
                _ => self.config.verbosity != Verbosity::Status,
            };
            if printed {
                self.shown.clear();
                match part {
                    Part::Checksum => push_verdict(&mut self.shown, &group.name, verdict),
                    Part::Leaf(index) => {
                        push_leaf_verdict(&mut self.shown, &group.name, index, verdict);
                    }
                    Part::Count => push_count_verdict(&mut self.shown, &group.name, verdict),
                }
                self.emit()?;
            }
        }
        Ok(())
    }

    /// Whether the group's checksum line matches the file. It may have been
    /// made with either leaf size the list gives it: its leaf lines'
    /// (`tree=`, which the file was hashed with) or `-t`'s (the default
    /// `5m` when not given). So where they differ and the first fails, the
    /// file is hashed once more with `-t`'s (a named file; standard input
    /// cannot be read twice).
    fn checksum_matches(&self, group: &Group, hashed: Option<&Hashed>) -> bool {
        let (Some(expected), Some(hashed)) = (group.checksum, hashed) else {
            return false;
        };
        if hashed.digest == expected {
            return true;
        }
        let by_option = TreeParams::new(
            group.tree.algorithm(),
            group.tree.digest_size(),
            self.config.leaf_size,
        );
        match (by_option, system::listed_path(&group.name)) {
            (Ok(tree), Some(path)) if tree != group.tree && group.name != b"-" => {
                bt2sum::hash_path(&tree, path).is_ok_and(|digest| digest == expected)
            }
            _ => false,
        }
    }

    /// Counts the file whose lines were checked last, if any.
    fn count_file(&mut self, tally: &mut Tally) {
        if let Some(verdict) = self.file.take() {
            tally.count(verdict);
        }
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

/// The worse of two verdicts on one file's lines: unreadable, then failed
/// (or missing), then OK.
fn worse(a: Verdict, b: Verdict) -> Verdict {
    let rank = |verdict| match verdict {
        Verdict::Ok => 0,
        Verdict::Failed | Verdict::Missing => 1,
        Verdict::Unreadable => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The groups of a list, read as the engine asks for them: each a job
/// hashing the listed file, whole or only the listed leaves.
struct Groups<'a> {
    reader: Box<dyn BufRead + 'a>,
    /// The line being read.
    line: Vec<u8>,
    line_number: u64,
    /// A line read past the end of the last group, and its number.
    ahead: Option<(u64, Line)>,
    /// Whether the list has ended.
    ended: bool,
    /// Improperly formatted lines not yet handed on with a group.
    bad_lines: Vec<u64>,
    /// Why reading the list stopped early.
    error: Option<io::Error>,
    /// The file, leaf size and length of the last group's leaf lines: a
    /// group of leaf lines alone that has the same goes on with it.
    last_listing: Option<(Vec<u8>, TreeParams, u64)>,
    /// Whether a nameless line (of standard input, as hashing it without a
    /// FILE prints) names standard input: when the list is not read from
    /// there.
    nameless_is_stdin: bool,
    /// Lines that look made by another tool.
    lookalikes: Lookalikes,
    /// How many lines a pass may hold.
    budget: &'a RefCell<Budget>,
    config: &'a Checking,
    progress: &'a Progress,
}

impl Groups<'_> {
    /// The next line that is not blank or a comment, with its number.
    fn next_line(&mut self) -> Option<(u64, Line)> {
        if let Some(ahead) = self.ahead.take() {
            return Some(ahead);
        }
        while !self.ended && self.error.is_none() {
            let read = match read_line(&mut self.reader, &mut self.line) {
                Ok(ListLine::End) => {
                    // Not read again: a terminal's end of input is one
                    // Ctrl-D, not the end of the terminal.
                    self.ended = true;
                    return None;
                }
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
            // The nameless line of standard input checks standard input,
            // as `-` does, unless the list is standard input itself.
            let parsed = match parsed {
                Line::Bad if self.nameless_is_stdin => match parse_nameless(&self.line) {
                    Some((algorithm, expected)) => Line::Entry(Entry {
                        algorithm,
                        name: b"-".to_vec(),
                        expected,
                    }),
                    None => Line::Bad,
                },
                Line::Leaf(mut leaf) if self.nameless_is_stdin && leaf.name.is_none() => {
                    leaf.name = Some(b"-".to_vec());
                    Line::Leaf(leaf)
                }
                parsed => parsed,
            };
            self.lookalikes.note(&self.line, &parsed);
            if !matches!(parsed, Line::Skip) {
                return Some((self.line_number, parsed));
            }
        }
        None
    }

    /// The next group, with its listed leaves.
    fn next_group(&mut self) -> Option<(Group, Option<ListedLeaves>)> {
        let (mut group, mut listed) = loop {
            let (line_number, line) = self.next_line()?;
            let group = |name, tree, checksum| Group {
                bad_lines: Vec::new(),
                name,
                tree,
                checksum,
                total: None,
                count_lines: Vec::new(),
                continues: false,
            };
            let started = match line {
                Line::Skip | Line::Bad => None,
                Line::Entry(entry) => {
                    let size = entry.expected.as_bytes().len();
                    // (The parser only lets valid sizes through.)
                    TreeParams::new(entry.algorithm, size, self.config.leaf_size)
                        .ok()
                        .map(|tree| (group(entry.name, tree, Some(entry.expected)), None))
                }
                // (The parser only lets named leaf lines through.)
                Line::Leaf(leaf) => match leaf.name.clone() {
                    Some(name) => {
                        let mut started = (group(name, leaf.tree, None), None);
                        if let Err(error) = join(&mut started.0, &mut started.1, leaf, self.budget)
                        {
                            // Not even one leaf line fits: the list
                            // cannot be checked.
                            self.error = Some(error);
                            return None;
                        }
                        Some(started)
                    }
                    None => None,
                },
            };
            // A name no file here can have (see `system::listed_path`).
            let started = started.filter(|(group, _)| {
                group.name == b"-" || system::listed_path(&group.name).is_some()
            });
            match started {
                Some(mut started) => {
                    started.0.bad_lines = std::mem::take(&mut self.bad_lines);
                    break started;
                }
                None => self.bad_lines.push(line_number),
            }
        };
        // The leaf and count lines that follow, while they are about the
        // same file and listing and fit in one pass.
        while let Some((line_number, line)) = self.next_line() {
            let joined = match &line {
                // (A line for which memory is refused starts the next pass.)
                Line::Leaf(leaf) => {
                    join(&mut group, &mut listed, leaf.clone(), self.budget).unwrap_or(false)
                }
                _ => false,
            };
            if !joined {
                self.ahead = Some((line_number, line));
                break;
            }
        }
        let listing = group
            .total
            .map(|total| (group.name.clone(), group.tree, total));
        group.continues =
            group.checksum.is_none() && listing.is_some() && listing == self.last_listing;
        self.last_listing = listing;
        Some((group, listed))
    }
}

/// Adds a leaf or count line to `group` if it continues it: it names the
/// same file with the same algorithm and digest size, the same leaf size and
/// length as the group's other leaf lines, a leaf after theirs, and there is
/// room in the `budget`. A checksum line takes the leaf size of the first
/// leaf line joining it.
///
/// `Err` if memory for the line is refused: it did not join, and the budget
/// shrinks. The group still takes the line's leaf size and length (the line
/// is of its listing, and starts the next pass, which goes on with it), so
/// that its checksum line is checked with the right leaf size.
fn join(
    group: &mut Group,
    listed: &mut Option<ListedLeaves>,
    leaf: LeafLine,
    budget: &RefCell<Budget>,
) -> Result<bool, io::Error> {
    let same_file = leaf.name.as_deref() == Some(&group.name[..])
        && leaf.tree.algorithm() == group.tree.algorithm()
        && leaf.tree.digest_size() == group.tree.digest_size();
    let same_listing = match group.total {
        Some(total) => leaf.tree == group.tree && leaf.total == total,
        None => true,
    };
    let held = listed.as_ref().map_or(0, ListedLeaves::len) + group.count_lines.len();
    if !(same_file && same_listing && held < budget.borrow().lines) {
        return Ok(false);
    }
    group.tree = leaf.tree;
    group.total = Some(leaf.total);
    let listed = listed.get_or_insert_with(|| ListedLeaves::new(leaf.tree.digest_size()));
    let refused = |budget: &RefCell<Budget>| {
        budget.borrow_mut().refused(held);
        out_of_memory()
    };
    match leaf.leaf {
        Some(listed_leaf) => {
            let capacity = listed.capacity();
            let pushed = listed.push(listed_leaf.index, listed_leaf.digest);
            if !pushed.map_err(|_| refused(budget))? {
                // Not after the group's leaves: checked in another pass.
                return Ok(false);
            }
            // Grown: is there still room to hash the pass? (One that takes
            // all the memory there is leaves none for the rest of the work.)
            // If not, this line ends it.
            if listed.capacity() > capacity && !memory::room_left() {
                budget.borrow_mut().refused(held + 1);
            }
        }
        None => {
            if !memory::reserve(&mut group.count_lines, 1) {
                return Err(refused(budget));
            }
            group.count_lines.push(listed.len());
        }
    }
    Ok(true)
}

impl Iterator for Groups<'_> {
    type Item = Job<Group, Option<ListedLeaves>>;

    fn next(&mut self) -> Option<Self::Item> {
        let (group, listed) = self.next_group()?;
        let leaves = listed.as_ref().filter(|listed| !listed.is_empty());
        // Leaf and count lines alone need only the leaves they list (none
        // for count lines): the outcome's length is the file's.
        let range = match (&group.checksum, leaves) {
            (Some(_), _) => None,
            (None, leaves) => Some(leaves.and_then(ListedLeaves::indices).unwrap_or(0..0)),
        };
        let held = listed.as_ref().map_or(0, ListedLeaves::len) * ListedLeaves::BYTES_PER_LEAF
            + group.count_lines.len() * std::mem::size_of::<usize>();
        let tree = group.tree;
        let listed = listed.filter(|listed| !listed.is_empty());
        let job = if group.name == b"-" {
            // Standard input may be a pipe: hashed whole, in turn.
            if system::stdin_closed() {
                Job::failed(group, system::closed_stream().into())
            } else {
                self.progress.reading_stdin();
                Job::stdin(group, &tree)
            }
            .with_leaves(listed)
        } else {
            // (A name no path here can have was refused as improperly
            // formatted.)
            let path = system::listed_path(&group.name).unwrap_or_default();
            let job = Job::path(group, path, &tree).with_leaves(listed);
            match range {
                Some(range) => job.leaf_range(range),
                None => job,
            }
        };
        let job = job.holds(held);
        Some(match self.progress.counter() {
            Some(counter) => job.progress(counter.clone()),
            None => job,
        })
    }
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
