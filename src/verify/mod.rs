//! Verifying checksum lists: a list's lines are told apart by
//! [`format::list`](crate::format::list), gathered into passes (the lines
//! about one file checked in one reading of it), hashed as jobs on the
//! engine, several at once, and handed back in list order as typed
//! verdicts per line and per leaf. What a caller does with them (print,
//! count, hint, act) is its own.
//!
//! A verifier may check one slice of what its lists describe
//! ([`Verifier::slice`]), for a scrub spread over several runs; a leaf a
//! check finds failing can be mended from a good copy, from
//! [`Checked::failed_leaves`].
//!
//! ```
//! use std::ops::ControlFlow;
//! use bt2sum::verify::{Report, Settings, Verdict, Verifier};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("hello.txt");
//! std::fs::write(&path, b"hello s3git\n")?;
//! // (Lists name files with `/`, on Windows too.)
//! let name = path.display().to_string().replace('\\', "/");
//! let digest = bt2sum::hash(&Default::default(), b"hello s3git\n");
//! let list = format!("BLAKE2b-64 ({name}) = {digest}\nnot a checksum line\n");
//! let (mut verdicts, mut bad_lines) = (Vec::new(), Vec::new());
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

use std::cell::{Cell, RefCell};
use std::io::{self, BufRead};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::engine::Event;
use crate::format::list::{Grammar, Improper};
use crate::input::{self, hash_each};
use crate::params::{Part, TreeParams};
use pass::worse;
pub use pass::{Checked, Pass, Subject};
use passes::{PassOutcome, Passes};

/// What check mode found out about one listed file or line.
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
    /// How lines read (`-a`, `-s`).
    pub grammar: Grammar,
    /// The leaf size of checksum lines that no leaf or count line gives one
    /// (`-t`).
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
    /// An improperly formatted line, reported before the file checked
    /// after it.
    BadLine {
        /// The line's number, from 1.
        line: u64,
        /// Why it is improperly formatted.
        why: &'a BadLine,
    },
    /// One pass over one listed file, checked.
    Checked(&'a Checked),
    /// The verifier is about to wait for the next file: a good time to
    /// flush what was written so far.
    Waiting,
    /// At the end of each list.
    OutsideSlice {
        /// The properly formatted lines left to other slices or rounds
        /// ([`Verifier::slice`], [`Verifier::chooser`]): none when the
        /// lists are checked whole.
        lines: u64,
    },
}

/// One slice of what lists describe, checked on its own (`-c --part K/N`).
/// The units of the lists are a file checked whole (of its listed size, or
/// else its own: see [`Verifier::size_lookups`]) and each listed leaf; a
/// complete leaf listing stands for its checksum line, an incomplete one
/// does not. Cut by their bytes, in list order, into N near-equal runs,
/// slice K checks the units that start in run K: slices 1 to N check every
/// unit once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Which slice, of how many.
    pub part: Part,
    /// What [`Verifier::total_bytes`] counts.
    pub total: u64,
}

impl Slice {
    /// Whether the unit starting `start` bytes into the lists is the slice's.
    fn holds(&self, start: u64) -> bool {
        let (total, parts) = (u128::from(self.total.max(1)), u128::from(self.part.parts()));
        let start = u128::from(start.min(self.total.saturating_sub(1)));
        start * parts / total + 1 == u128::from(self.part.part())
    }
}

/// A unit of the lists ([`Slice`]), for a [`Verifier::chooser`]: a file
/// checked whole (`leaf` is `None`, `digest` its checksum line's) or one
/// listed leaf, of `bytes` bytes.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub struct Unit<'u> {
    pub name: &'u [u8],
    pub tree: &'u TreeParams,
    pub leaf: Option<u64>,
    pub digest: &'u crate::digest::Digest,
    pub bytes: u64,
}

/// Says whether the unit starting `start` bytes into the lists (see
/// [`Slice`]) is checked; `None` where only the start is asked about (to
/// know where a file's report ends).
pub type Chooser<'a> = Box<dyn Fn(u64, Option<&Unit<'_>>) -> bool + 'a>;

/// The leaf listings with a checksum line that [`Verifier::total_bytes`]
/// counted, by number: those incomplete, and those whose leaves do not
/// make their checksum line's digest.
#[derive(Default)]
struct Listings {
    counted: u64,
    checked: u64,
    incomplete: Vec<u64>,
    contradicted: Vec<u64>,
}

/// Verifies checksum lists, with the same settings for each, on the
/// current rayon pool. Its public fields may be set before the first check.
#[derive(Default)]
pub struct Verifier<'a> {
    #[allow(missing_docs)]
    pub settings: Settings,
    /// Counts the bytes hashed as the work goes.
    pub progress: Option<Arc<AtomicU64>>,
    /// `--quick`: a listed file whose size and modification time are its
    /// stat line's is opened, not read ([`Verdict::Unread`]). Damage that
    /// left both as they were (bit rot) goes unseen: a scrub finds it.
    pub quick: bool,
    /// Checks only this slice (of the lists as
    /// [`total_bytes`](Self::total_bytes) counted them, in that order).
    pub slice: Option<Slice>,
    /// With a [`slice`](Self::slice): the files outside it are looked for
    /// (opened, not read), for an audit to tell the missing ones, and
    /// reported as probes ([`Pass::probe`]). (The check sets it in the
    /// first slice, the one that audits.)
    pub probe_others: bool,
    /// Checks only the units this chooses, as a slice checks its own.
    pub chooser: Option<Chooser<'a>>,
    /// How many more files listed without their size may be asked of the
    /// system for theirs, to count or slice the lists (`None`, the default:
    /// every one); past that, such a file counts 0.
    pub size_lookups: Cell<Option<u64>>,
    /// Cuts a file's leaf listing into passes of at most this many bytes of
    /// leaves, each reported on its own: a run that stops midway loses at
    /// most one pass of a file.
    pub pass_bytes: Option<u64>,
    /// Called before standard input is read for a listed `-`; an error it
    /// returns (standard input was closed) is that file's.
    pub before_stdin: Option<Box<dyn Fn() -> io::Result<()> + 'a>>,
    /// How many bytes the lists checked so far describe (with a slice).
    offset: Cell<u64>,
    listings: RefCell<Listings>,
}

impl<'a> Verifier<'a> {
    /// A verifier of lists read with `settings`, checking them whole (as
    /// does the `Default` one, with the default settings).
    pub fn new(settings: Settings) -> Self {
        Verifier {
            settings,
            ..Verifier::default()
        }
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
        passes.error.take().map_or(Ok(total), Err)
    }

    /// Verifies one list (`list_is_stdin`: read from standard input, which
    /// its nameless lines then cannot mean), handing each report to
    /// `report` in list order; the list is read only as room frees up.
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
        let mut file = (None, 0, false);
        let mut flow = ControlFlow::Continue(());
        hash_each(&mut passes, |event| {
            flow = match event {
                Event::Waiting => report(Report::Waiting),
                Event::Ready(outcome) => self.report_pass(outcome, &mut file, &mut report),
            };
            flow
        });
        let mut report_rest = || {
            flow?;
            for (line, why) in &passes.bad_lines {
                report(Report::BadLine { line: *line, why })?;
            }
            let lines = self.selects().then_some(passes.outside_slice);
            report(Report::OutsideSlice {
                lines: lines.unwrap_or(0),
            })
        };
        match report_rest() {
            ControlFlow::Continue(()) => passes.error.take().map_or(Ok(flow), Err),
            stop => Ok(stop),
        }
    }

    /// Reports the improperly formatted lines before a pass, and the pass;
    /// `file`: the worst verdict so far on the lines of the file checked
    /// last, its first line, and whether it was edited.
    fn report_pass(
        &self,
        outcome: PassOutcome,
        file: &mut (Option<Verdict>, u64, bool),
        report: &mut impl FnMut(Report<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut pass = outcome.tag;
        for (line, why) in &pass.bad_lines {
            report(Report::BadLine { line: *line, why })?;
        }
        pass.listed = outcome.leaves.unwrap_or_default();
        let checksum_matched = !pass.probe
            && !pass.unread
            && self.checksum_matches(&pass, outcome.result.as_ref().ok(), outcome.stamp.is_some());
        let mut checked = Checked {
            pass,
            outcome: outcome.result,
            stamp: outcome.stamp,
            checksum_matched,
            worst: Verdict::Ok,
            unreadable_before: false,
            file_first_line: 0,
            edited: false,
        };
        if !checked.pass.continues {
            // (A stat line is on the first pass.)
            *file = (None, checked.pass.first_line, checked.changed());
        }
        let worst_before;
        (worst_before, checked.file_first_line, checked.edited) = *file;
        checked.unreadable_before = worst_before == Some(Verdict::Unreadable);
        // Its lines failing, a file whose stat line says it was edited is
        // CHANGED, as its checksum line would have said.
        let lines = checked.lines().map(|(_, verdict)| verdict);
        file.0 = (lines.chain(worst_before).reduce(worse)).map(|worst| match worst {
            Verdict::Failed | Verdict::Missing if checked.edited => Verdict::Changed,
            verdict => verdict,
        });
        checked.worst = file.0.unwrap_or(Verdict::Ok);
        report(Report::Checked(&checked))
    }

    /// Whether a pass's checksum line matches the file, made with its leaf
    /// lines' `tree=` (which the file was hashed with) or else `-t`'s leaf
    /// size: a regular file is hashed again with `-t`'s where they differ.
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
        match (by_option, pass.path()) {
            (Ok(tree), Some(path)) if tree != pass.tree && regular => {
                input::hash_path(&tree, path).is_ok_and(|digest| digest == checksum.expected)
            }
            _ => false,
        }
    }
}
