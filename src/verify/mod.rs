//! Verifying checksum lists: a list's lines are told apart by
//! [`format::list`](crate::format::list), gathered into passes (the lines
//! about one file checked in one reading of it), hashed as jobs on the
//! engine, several at once, and handed back in list order as typed
//! verdicts per line and per leaf. What a caller does with them (print,
//! count, hint, act) is its own.
//!
//! A verifier may check one slice of what its lists describe
//! ([`Verifier::slicing`]), for a scrub spread over several runs; a leaf a
//! check finds failing can be mended from a good copy, from
//! [`Checked::failed_leaves`].
//!
//! ```
//! use std::io::Write;
//! use std::ops::ControlFlow;
//! use bt2sum::verify::Verdict;
//! use bt2sum::verify::{Report, Settings, Verifier};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("hello.txt");
//! std::fs::write(&path, b"hello s3git\n")?;
//! // (Lists name files with `/`, on Windows too.)
//! let name = path.display().to_string().replace('\\', "/");
//! let list = format!(
//!     "BLAKE2b-64 ({name}) = 18e622875a89cede0d7019b2c8afecf8928c21eac18ec51e38a8e6b829b82c3e\
//!      f306dec34227929fa77b1c7c329b3d4e50ed9e72dc4dc885be0932d3f28d7053\n\
//!      not a checksum line\n"
//! );
//! let mut verdicts = Vec::new();
//! let mut bad_lines = Vec::new();
//! Verifier::new(Settings::default()).check(&mut list.as_bytes(), false, |report| {
//!     match report {
//!         Report::Checked(checked) => verdicts.push(checked.file_verdict()),
//!         Report::BadLine { line, .. } => bad_lines.push(line),
//!         Report::Waiting | Report::OutsideSlice { .. } => {}
//!     }
//!     ControlFlow::Continue(())
//! })?;
//! assert_eq!(verdicts, [Some(Verdict::Ok)]);
//! assert_eq!(bad_lines, [2]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod pass;
mod passes;

use std::cell::RefCell;
use std::io::{self, BufRead};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::engine::Event;
use crate::format::list::{Grammar, Improper};
use crate::format::name::Name;
use crate::input::{self, hash_each};
use crate::params::{Part, TreeParams};
pub use pass::{Checked, Subject};
use pass::{Pass, worse};
use passes::{PassOutcome, Passes, Queued};

/// What check mode found out about one listed file (or line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The computed checksum is the listed one.
    Ok,
    /// The computed checksum differs.
    Failed,
    /// The file could not be opened or read (or changed while read).
    Unreadable,
    /// A listed leaf is no longer in the file (it got shorter).
    Missing,
    /// Not read, taken as unchanged: see [`Verifier::quick`].
    Unread,
    /// Failed, and the file's size or modification time differ from its
    /// stat line's: an edit, not damage.
    Changed,
}

impl Verdict {
    /// The words after `NAME: `, as GNU prints them.
    pub const fn text(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Failed => "FAILED",
            Verdict::Unreadable => "FAILED open or read",
            Verdict::Missing => "FAILED missing",
            Verdict::Changed => "CHANGED",
            Verdict::Unread => "OK (not read)",
        }
    }
}

/// What changes how lists are read and files hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// How lines read: `-a` for GNU-style lines, and `-s`.
    pub grammar: Grammar,
    /// The leaf size of checksum lines that no leaf or count line gives one
    /// (`-t`; 5 MiB by default).
    pub leaf_size: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            grammar: Grammar::default(),
            leaf_size: TreeParams::default().leaf_size(),
        }
    }
}

/// Why a line of a list is improperly formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadLine {
    /// As the grammar reads it.
    Grammar(Improper),
    /// A line checking standard input (named `-`, or nameless as hashing
    /// standard input without a FILE prints it), in a list that is read from
    /// standard input itself.
    StdinInStdin,
    /// A stat line that does not follow its file's checksum line (or that
    /// line's leaf lines).
    LoneStat,
}

/// What verifying a list tells, in list order.
pub enum Report<'a> {
    /// An improperly formatted line, by number (from 1), reported before
    /// the file checked after it.
    BadLine {
        /// The line's number.
        line: u64,
        /// Why it is improperly formatted.
        why: &'a BadLine,
    },
    /// One pass over one listed file, checked.
    Checked(&'a Checked),
    /// The next file is not checked yet, and the verifier is about to wait
    /// for it: a good time to flush what was written so far.
    Waiting,
    /// At the end of a list checked in slices ([`Verifier::slicing`]): how
    /// many of its properly formatted lines were other slices' (and got no
    /// verdict here).
    OutsideSlice {
        /// The lines other slices check.
        lines: u64,
    },
}

/// One slice of what lists describe, checked on its own (`-c --part K/N`):
/// the lists' bytes, in list order, are cut into N runs of near-equal
/// bytes, and slice K checks the units that start in run K. A file checked
/// whole (a checksum line without leaf lines) is one unit of its size (its
/// stat line's, its count line's, or else the file's own); each listed
/// leaf is one unit of its length. A checksum line followed by its file's
/// complete leaf listing is left to the leaves, which stand for it; one
/// followed by only some of its leaves is a unit of the file's size too,
/// before them. Together, slices 1 to N check every unit once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Which slice, of how many.
    pub part: Part,
    /// The bytes the lists describe, as [`Verifier::total_bytes`] counts
    /// them.
    pub total: u64,
    /// Whether the files outside the slice are looked for (opened, not
    /// read), for an audit to tell the missing ones: reported as probes
    /// ([`Checked::is_probe`]).
    pub probe_others: bool,
}

impl Slice {
    /// Whether the unit starting `start` bytes into the lists is the
    /// slice's.
    fn holds(&self, start: u64) -> bool {
        let run = match self.total {
            0 => 0,
            total => {
                u128::from(start.min(total - 1)) * u128::from(self.part.parts()) / u128::from(total)
            }
        };
        run + 1 == u128::from(self.part.part())
    }
}

/// A unit of the lists, as [`Slice`] counts them, handed to a caller that
/// chooses the units to check itself ([`Verifier::choosing`]): a file
/// checked whole (`leaf` is `None`, `digest` its checksum line's) or one
/// listed leaf.
#[derive(Clone, Copy, Debug)]
pub struct Unit<'u> {
    /// The file's name, as the list gives it.
    pub name: &'u [u8],
    /// The tree the unit is checked with.
    pub tree: &'u TreeParams,
    /// The leaf's index, for a leaf.
    pub leaf: Option<u64>,
    /// The listed digest: the file's checksum, or the leaf's.
    pub digest: &'u crate::digest::Digest,
    /// The bytes it covers.
    pub bytes: u64,
}

/// Says whether the unit starting `start` bytes into the lists (see
/// [`Slice`]) is checked; the unit is `None` where only the start is
/// asked about (whether the next unit is, to know where a file's report
/// ends).
pub type Chooser<'a> = Box<dyn Fn(u64, Option<&Unit<'_>>) -> bool + 'a>;

/// The leaf listings with a checksum line that the lists counted by
/// [`Verifier::total_bytes`] hold, numbered in list order (`counted`, and
/// `checked` so far): those that do not list every leaf of their file, whose
/// checksum line is a unit of its own, and those that list every leaf and
/// whose leaves do not make the digest of their checksum line (the list
/// contradicts itself).
#[derive(Default)]
struct Listings {
    counted: u64,
    checked: u64,
    incomplete: Vec<u64>,
    contradicted: Vec<u64>,
}

/// Verifies checksum lists, with the same settings for each, on the
/// current rayon pool.
pub struct Verifier<'a> {
    settings: Settings,
    slice: Option<Slice>,
    chooser: Option<Chooser<'a>>,
    pass_bytes: Option<u64>,
    /// How many bytes the lists checked so far describe (with a slice).
    offset: std::cell::Cell<u64>,
    listings: RefCell<Listings>,
    progress: Option<Arc<AtomicU64>>,
    quick: bool,
    look_up_sizes: bool,
    before_stdin: Box<dyn Fn() -> io::Result<()> + 'a>,
}

impl<'a> Verifier<'a> {
    /// A verifier of lists read with `settings`.
    pub fn new(settings: Settings) -> Self {
        Verifier {
            settings,
            slice: None,
            chooser: None,
            pass_bytes: None,
            offset: std::cell::Cell::new(0),
            listings: RefCell::default(),
            progress: None,
            quick: false,
            look_up_sizes: true,
            before_stdin: Box::new(|| Ok(())),
        }
    }

    /// Adds the bytes hashed to `counter` as the work goes.
    pub fn progress(mut self, counter: Arc<AtomicU64>) -> Self {
        self.progress = Some(counter);
        self
    }

    /// Takes a listed file whose size and modification time are those its
    /// stat line lists as unchanged: it is opened, not read, and its
    /// verdict is [`Verdict::Unread`] (`--quick`). Damage that left both as
    /// they were (bit rot) goes unseen: a scrub finds it.
    pub fn quick(mut self) -> Self {
        self.quick = true;
        self
    }

    /// Checks only `slice` of what the lists describe (given to
    /// [`check`](Self::check) in the order [`total_bytes`](Self::total_bytes)
    /// counted them).
    pub fn slicing(mut self, slice: Slice) -> Self {
        self.slice = Some(slice);
        self
    }

    /// Checks only the units `chooser` chooses (see [`Unit`]), as a slice
    /// checks its own: with the lists counted by
    /// [`total_bytes`](Self::total_bytes) first, each time they are checked.
    pub fn choosing(mut self, chooser: Chooser<'a>) -> Self {
        self.chooser = Some(chooser);
        self
    }

    /// Counts a file listed without its size (no stat, leaf or count line)
    /// as 0 bytes, where [`total_bytes`](Self::total_bytes) and a
    /// [`Unit`] would ask the system its size now: for a chooser that
    /// chooses by name alone, which needs no sizes, and would pay a lookup
    /// of every such file twice.
    pub fn without_looking_up_sizes(mut self) -> Self {
        self.look_up_sizes = false;
        self
    }

    /// Cuts a file's leaf listing into passes of at most `bytes` of leaves,
    /// so that each pass is checked, and reported, on its own: a run that
    /// stops midway loses at most one pass of a file.
    pub fn pass_bytes(mut self, bytes: u64) -> Self {
        self.pass_bytes = Some(bytes);
        self
    }

    /// Starts the lists over, to check them again as
    /// [`total_bytes`](Self::total_bytes) counted them: as a caller that
    /// chooses its units does in rounds.
    pub fn restart(&self) {
        self.offset.set(0);
        self.listings.borrow_mut().checked = 0;
    }

    fn selects(&self) -> bool {
        self.slice.is_some() || self.chooser.is_some()
    }

    /// Whether the unit starting `start` bytes into the lists is checked.
    fn holds(&self, start: u64, unit: Option<&Unit<'_>>) -> bool {
        match (&self.slice, &self.chooser) {
            (Some(slice), _) => slice.holds(start),
            (None, Some(chooser)) => chooser(start, unit),
            (None, None) => true,
        }
    }

    /// The bytes a list describes, for slicing ([`Slice`]): each file
    /// checked whole counts its size, each listed leaf its length. Reads
    /// the list to its end (lists to slice are read twice: not from
    /// standard input).
    pub fn total_bytes(&self, list: &mut dyn BufRead) -> io::Result<u64> {
        let mut passes = Passes::new(list, false, self);
        let total = passes.total_bytes();
        match passes.error.take() {
            Some(error) => Err(error),
            None => Ok(total),
        }
    }

    /// Calls `before` whenever standard input is about to be read for a
    /// listed `-` (a progress bar may stop drawing over a terminal's input);
    /// an error it returns (standard input was closed) is that file's.
    pub fn before_reading_stdin(mut self, before: impl Fn() -> io::Result<()> + 'a) -> Self {
        self.before_stdin = Box::new(before);
        self
    }

    /// Verifies one list, read from `list` (`list_is_stdin`: it is standard
    /// input, which its nameless lines then cannot mean too), handing each
    /// report to `report` in list order. Files are hashed several at once,
    /// the list read only as room frees up, so a list of millions of files
    /// never sits in memory whole.
    ///
    /// Returns `Break` if `report` asked to stop (no further file is then
    /// started), and `Err` if the list could not be read on, after
    /// reporting what was read.
    pub fn check(
        &self,
        list: &mut dyn BufRead,
        list_is_stdin: bool,
        mut report: impl FnMut(Report<'_>) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        let mut passes = Passes::new(list, list_is_stdin, self);
        let mut file_worst = (None, 0, false);
        let mut flow = ControlFlow::Continue(());
        hash_each(&mut passes, |event| {
            flow = match event {
                Event::Waiting => report(Report::Waiting),
                Event::Ready(outcome) => self.report_pass(outcome, &mut file_worst, &mut report),
            };
            flow
        });
        if flow.is_break() {
            return Ok(flow);
        }
        for (line, why) in &passes.bad_lines {
            if report(Report::BadLine { line: *line, why }).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        if self.selects() {
            let lines = passes.outside_slice;
            if report(Report::OutsideSlice { lines }).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        match passes.error.take() {
            Some(error) => Err(error),
            None => Ok(ControlFlow::Continue(())),
        }
    }

    /// Reports the improperly formatted lines before a pass, and the pass;
    /// `file_worst`: the worst verdict so far on the lines of the file
    /// checked last, its first line, and whether it was edited.
    fn report_pass(
        &self,
        outcome: PassOutcome,
        (file_worst, first_line, edited): &mut (Option<Verdict>, u64, bool),
        report: &mut impl FnMut(Report<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Queued { bad_lines, pass } = outcome.tag;
        for (line, why) in &bad_lines {
            report(Report::BadLine { line: *line, why })?;
        }
        let listed = outcome.leaves;
        let checksum_matched = !pass.probe
            && !pass.unread
            && self.checksum_matches(&pass, outcome.result.as_ref().ok(), outcome.stamp.is_some());
        let mut checked = Checked {
            pass,
            listed,
            result: outcome.result,
            stamp: outcome.stamp,
            checksum_matched,
            worst: Verdict::Ok,
            unreadable_before: false,
            first_line: 0,
            edited: false,
        };
        if !checked.pass.continues {
            *file_worst = None;
            *first_line = *checked.pass.lines.start();
            // (A stat line is on the first pass.)
            *edited = checked.changed();
        }
        checked.first_line = *first_line;
        checked.edited = *edited;
        checked.unreadable_before = *file_worst == Some(Verdict::Unreadable);
        *file_worst = checked
            .lines()
            .map(|(_, verdict)| verdict)
            .chain(*file_worst)
            .reduce(worse);
        if *edited {
            // Its lines failing, a file whose stat line says it was edited
            // is CHANGED, as its checksum line would have said.
            *file_worst = file_worst.map(|worst| match worst {
                Verdict::Failed | Verdict::Missing => Verdict::Changed,
                verdict => verdict,
            });
        }
        checked.worst = file_worst.unwrap_or(Verdict::Ok);
        report(Report::Checked(&checked))
    }

    /// Whether a pass's checksum line matches the file. It may have been
    /// made with either leaf size the list gives it: its leaf lines'
    /// (`tree=`, which the file was hashed with) or `-t`'s (the default
    /// `5m` when not given). So where they differ and the first fails, the
    /// file is hashed once more with `-t`'s (a named file; standard input
    /// cannot be read twice, nor can a FIFO or a device: only a regular
    /// file is read again).
    fn checksum_matches(
        &self,
        pass: &Pass,
        hashed: Option<&crate::engine::Hashed>,
        regular: bool,
    ) -> bool {
        let (Some(checksum), Some(hashed)) = (pass.judged_checksum(), hashed) else {
            return false;
        };
        if hashed.digest == checksum.expected {
            return true;
        }
        if pass.stat.is_some() {
            // Its stat line gave the leaf size it was made with.
            return false;
        }
        let by_option = TreeParams::new(
            pass.tree.algorithm(),
            pass.tree.digest_size(),
            self.settings.leaf_size,
        );
        match (by_option, Name::listed(&pass.name).path()) {
            (Ok(tree), Some(path)) if tree != pass.tree && regular && pass.name != b"-" => {
                input::hash_path(&tree, path).is_ok_and(|digest| digest == checksum.expected)
            }
            _ => false,
        }
    }
}
