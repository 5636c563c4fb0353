//! A list read into passes, as the engine asks for them: each pass a job
//! hashing the listed file, whole or only the listed leaves, with a
//! [`ListedLeaves`] sink that compares the leaves as they are hashed.

use std::io::{self, BufRead};

use super::pass::Pass;
use super::{BadLine, Unit, Verifier};
use crate::digest::Digest;
use crate::format::checksum::Entry;
use crate::format::leaf::LeafLine;
use crate::format::lines::{Record, read_line};
use crate::format::list::{Improper, ListLine, classify};
use crate::format::name::Name;
use crate::format::stat::{Mtime, StatLine};
use crate::input::{Job, Outcome};
use crate::leaves::{ListedLeaf, ListedLeaves};
use crate::params::TreeParams;

/// What hashing a pass gave.
pub(super) type PassOutcome = Outcome<Pass, Option<ListedLeaves>>;

/// The lines of a list made into passes.
pub(super) struct Passes<'a> {
    reader: &'a mut dyn BufRead,
    line: Vec<u8>,
    line_number: u64,
    /// A line read past the end of the last pass, and its number.
    ahead: Option<(u64, ListLine)>,
    ended: bool,
    /// Improperly formatted lines not yet handed on with a pass.
    pub bad_lines: Vec<(u64, BadLine)>,
    /// Whether they are kept to be reported: not while the list's bytes are
    /// counted, nor in a slice but the first (a list's are its first
    /// slice's).
    keeps_bad_lines: bool,
    /// Why reading the list stopped early.
    pub error: Option<io::Error>,
    /// How many properly formatted lines were left to other slices.
    pub outside_slice: u64,
    /// When slicing: whether the pass before was checked in this slice.
    previous_reported: bool,
    /// Whether the last file was taken as unchanged: its next passes are
    /// dropped.
    unread_file: bool,
    /// Whether the next pass goes on with the file of the last one.
    cut: bool,
    /// Whether nameless lines name standard input (the list is not read
    /// from there).
    nameless_is_stdin: bool,
    verifier: &'a Verifier<'a>,
}

/// Whether a line joined a pass.
enum Joined {
    Yes,
    /// It is about another file or listing, or is no leaf or count line.
    No,
    /// It goes on with the pass's listing, which is cut before it (memory,
    /// or an index that does not follow the pass's).
    Cut,
}

impl<'a> Passes<'a> {
    pub fn new(
        reader: &'a mut dyn BufRead,
        list_is_stdin: bool,
        verifier: &'a Verifier<'a>,
    ) -> Self {
        Passes {
            reader,
            line: Vec::new(),
            line_number: 0,
            ahead: None,
            ended: false,
            bad_lines: Vec::new(),
            keeps_bad_lines: (verifier.slice).is_none_or(|slice| slice.part.part() == 1),
            error: None,
            outside_slice: 0,
            previous_reported: false,
            unread_file: false,
            cut: false,
            nameless_is_stdin: !list_is_stdin,
            verifier,
        }
    }

    /// The next line that is not blank or a comment, with its number.
    fn next_line(&mut self) -> Option<(u64, ListLine)> {
        if let Some(ahead) = self.ahead.take() {
            return Some(ahead);
        }
        while !self.ended && self.error.is_none() {
            let line = match read_line(&mut self.reader, &mut self.line) {
                // Not read again: a terminal's end of input is one Ctrl-D,
                // not the end of the terminal.
                Ok(Record::End) => {
                    self.ended = true;
                    return None;
                }
                // (A comment of any length is skipped: its first bytes say
                // what it is.)
                Ok(Record::TooLong) if self.line.first() == Some(&b'#') => ListLine::Skip,
                Ok(Record::TooLong) => ListLine::Improper(Improper::Junk),
                Ok(Record::Line) => classify(&self.line, &self.verifier.settings.grammar),
                Err(error) => {
                    self.error = Some(error);
                    return None;
                }
            };
            self.line_number += 1;
            if !matches!(line, ListLine::Skip) {
                return Some((self.line_number, line));
            }
        }
        None
    }

    /// The pass a line starts, or why it starts none. Nameless lines (as
    /// hashing standard input without a FILE prints them) are standard
    /// input's, `-`.
    fn start(&mut self, line: ListLine) -> Result<Pass, BadLine> {
        let pass = match line {
            ListLine::Nameless {
                algorithm,
                expected,
            } => self.start(ListLine::Checksum(Entry {
                algorithm,
                name: b"-".to_vec(),
                expected,
                tagged: true,
            }))?,
            ListLine::Checksum(mut entry) => {
                let size = entry.expected.as_bytes().len();
                let leaf_size = self.verifier.settings.leaf_size;
                // (The grammar only lets valid sizes through.)
                let tree = TreeParams::new(entry.algorithm, size, leaf_size)
                    .map_err(|_| BadLine::Grammar(Improper::Junk))?;
                Pass {
                    name: std::mem::take(&mut entry.name),
                    tree,
                    checksum: Some(entry),
                    ..Pass::default()
                }
            }
            ListLine::Leaf(leaf) => {
                let mut pass = Pass {
                    name: leaf.name.clone().unwrap_or(b"-".to_vec()),
                    tree: leaf.tree,
                    ..Pass::default()
                };
                self.join(&mut pass, &leaf);
                pass
            }
            ListLine::Stat(_) => return Err(BadLine::LoneStat),
            ListLine::Improper(improper) => return Err(BadLine::Grammar(improper)),
            ListLine::Skip => return Err(BadLine::Grammar(Improper::Junk)),
        };
        // Standard input, when the list is read from there (as GNU); a name
        // no file here can have (see `Name::path`).
        match pass.name == b"-" {
            true if !self.nameless_is_stdin => Err(BadLine::StdinInStdin),
            false if pass.path().is_none() => Err(BadLine::Grammar(Improper::Junk)),
            _ => Ok(pass),
        }
    }

    /// The next pass, with its listed leaves.
    fn next_pass(&mut self) -> Option<Pass> {
        let mut pass = loop {
            let (line_number, line) = self.next_line()?;
            match self.start(line) {
                Ok(pass) => {
                    break Pass {
                        first_line: line_number,
                        last_line: line_number,
                        ..pass
                    };
                }
                Err(_) if !self.keeps_bad_lines => {}
                Err(why) => self.bad_lines.push((line_number, why)),
            }
            if self.error.is_some() {
                return None;
            }
        };
        pass.continues = std::mem::take(&mut self.cut);
        // The leaf and count lines that follow, while they are about the
        // same file and listing and fit in one pass.
        while let Some((line_number, line)) = self.next_line() {
            let joined = match &line {
                ListLine::Leaf(leaf) => self.join(&mut pass, leaf),
                ListLine::Stat(stat) => join_stat(&mut pass, stat),
                _ => Joined::No,
            };
            match joined {
                Joined::Yes => {
                    pass.last_line = line_number;
                    continue;
                }
                Joined::No => {}
                Joined::Cut => (pass.continued, self.cut) = (true, true),
            }
            self.ahead = Some((line_number, line));
            break;
        }
        Some(pass)
    }

    /// Adds a leaf or count line to `pass` if it goes on with it ([`Pass::takes`],
    /// a leaf after the pass's, and room left). A checksum line takes the
    /// leaf size of the first leaf line joining it.
    fn join(&self, pass: &mut Pass, leaf: &LeafLine) -> Joined {
        if !pass.takes(leaf.name.as_deref(), &leaf.tree, leaf.total) {
            return Joined::No;
        }
        // The room: what the lines' digests take in the budget of a
        // structure, and at most `pass_bytes` of leaves where that is set.
        let by_memory = crate::budget::memory().per_structure / size_of::<ListedLeaf>();
        let pass_bytes = self.verifier.pass_bytes;
        let by_bytes = pass_bytes.map_or(u64::MAX, |bytes| (bytes / leaf.tree.leaf_size()).max(1));
        let held = pass.listed.len() + pass.count_lines.len();
        if held as u64 >= (by_memory as u64).min(by_bytes) {
            return Joined::Cut;
        }
        pass.tree = leaf.tree;
        pass.total = Some(leaf.total);
        match &leaf.leaf {
            // Not after the pass's leaves: checked in the next pass.
            Some(leaf) if !pass.listed.push(leaf.index, leaf.digest) => return Joined::Cut,
            Some(_) => {}
            None => pass.count_lines.push(pass.listed.len()),
        }
        Joined::Yes
    }

    /// The bytes the list describes (see [`super::Slice`]), noting its
    /// incomplete and self-contradicting listings in the verifier's
    /// `listings`.
    pub fn total_bytes(&mut self) -> u64 {
        let verifier = self.verifier;
        self.keeps_bad_lines = false;
        let mut total = 0u64;
        let mut listing: Option<Listing> = None;
        while let Some(pass) = self.next_pass() {
            if pass.listed.is_empty() {
                let whole = pass.checksum.is_some().then(|| whole_size(&pass, verifier));
                total = total.saturating_add(whole.unwrap_or(0));
                continue;
            };
            let length = pass.total.unwrap_or(0);
            if let Some(checksum) = pass.checksum.as_ref().filter(|_| !pass.continues) {
                listing = Some(Listing {
                    next: Some(0),
                    size: whole_size(&pass, verifier),
                    root: crate::engine::Root::new(&pass.tree),
                    expected: checksum.expected,
                });
            }
            for leaf in pass.listed.iter() {
                if let Some(listing) = &mut listing {
                    let in_order = listing.next == Some(leaf.index);
                    listing.next = in_order.then_some(leaf.index + 1);
                    listing.root.feed(leaf.digest.as_bytes());
                }
                let leaf = pass.tree.leaf_bytes(leaf.index, length);
                total = total.saturating_add(leaf.end - leaf.start);
            }
            if !pass.continued
                && let Some(done) = listing.take()
            {
                let mut listings = verifier.listings.borrow_mut();
                let ordinal = listings.counted;
                listings.counted += 1;
                if done.next != Some(pass.tree.leaf_count(length)) {
                    listings.incomplete.push(ordinal);
                    total = total.saturating_add(done.size);
                } else if done.expected != done.root.finalize() {
                    listings.contradicted.push(ordinal);
                }
            }
        }
        total
    }

    /// The next pass in the slice being checked, if there is one: cut to
    /// its units that start in the slice (see [`super::Slice`]), moving on
    /// the offset of the bytes the lists describe. A pass outside it is
    /// dropped, or made a probe.
    fn next_sliced(&mut self) -> Option<Pass> {
        let verifier = self.verifier;
        loop {
            let mut pass = self.next_pass()?;
            if !verifier.selects() {
                return Some(pass);
            }
            let lines = pass.lines();
            // (Count lines go with the pass's first unit.)
            let starts_in = verifier.holds(verifier.offset.get(), None);
            let in_slice = match &pass.checksum {
                _ if !pass.listed.is_empty() => slice_leaves(verifier, &mut pass, starts_in),
                Some(checksum) => take_unit(verifier, &pass, None, &checksum.expected),
                // (Count lines alone: nothing to read.)
                None => starts_in,
            };
            let kept = if in_slice { pass.lines() } else { 0 };
            self.outside_slice += (lines - kept) as u64;
            if in_slice {
                // Reported here, a pass starts or ends its file's report
                // where the passes of the file before or after it are not.
                pass.continues &= std::mem::replace(&mut self.previous_reported, true);
                pass.continued &= verifier.holds(verifier.offset.get(), None);
                return Some(pass);
            }
            self.previous_reported = false;
            // A file's first pass outside the slice is looked for, for the
            // whole file; the passes that go on with it are not. (Probes are
            // only the first slice's, whose passes of a file all come before
            // those outside it.)
            if verifier.probe_others && verifier.slice.is_some() && !pass.continues {
                (pass.probe, pass.continued, pass.listed) = (true, false, ListedLeaves::default());
                return Some(pass);
            }
        }
    }

    /// With `--quick`, marks the first pass of a file whose size and
    /// modification time are its stat line's as unread, and drops the
    /// passes that go on with it (`None`).
    fn take_unread(&mut self, mut pass: Pass) -> Option<Pass> {
        if pass.continues && self.unread_file {
            self.outside_slice += pass.lines() as u64;
            return None;
        }
        self.unread_file = false;
        let Some((size, mtime)) = pass.stat.filter(|_| self.verifier.quick && !pass.probe) else {
            return Some(pass);
        };
        let now = pass.path().and_then(|path| std::fs::metadata(path).ok());
        let unchanged = now.is_some_and(|now| {
            now.is_file() && now.len() == size && now.modified().ok().map(Mtime::of) == Some(mtime)
        });
        if unchanged {
            (pass.unread, self.unread_file) = (true, pass.continued);
            // (Its one verdict is its checksum line's, wherever a slice or a
            // round placed that line.)
            (pass.continued, pass.checksum_elsewhere) = (false, false);
            pass.listed = ListedLeaves::default();
        }
        Some(pass)
    }
}

/// A leaf listing with a checksum line, as its passes are counted: the
/// next index, while its leaves so far are 0, 1, 2..., and the root they
/// make.
struct Listing {
    next: Option<u64>,
    /// The size of the file it lists, as its first pass gives it.
    size: u64,
    root: crate::engine::Root,
    expected: Digest,
}

/// Adds a stat line to `pass` if it is its checksum line's; its `tree=` is
/// the checksum line's leaf size.
fn join_stat(pass: &mut Pass, stat: &StatLine) -> Joined {
    let takes = pass.takes(stat.name.as_deref(), &stat.tree, stat.size);
    if !(takes && pass.checksum.is_some() && pass.stat.is_none()) {
        return Joined::No;
    }
    pass.tree = stat.tree;
    pass.stat = Some((stat.size, stat.mtime));
    Joined::Yes
}

/// Moves the offset past a unit of `pass`'s file (leaf `leaf`, or else the
/// file checked whole, `digest` its checksum), and says whether the unit is
/// checked here.
fn take_unit(verifier: &Verifier<'_>, pass: &Pass, leaf: Option<u64>, digest: &Digest) -> bool {
    let bytes = match leaf {
        Some(index) => {
            let bytes = pass.tree.leaf_bytes(index, pass.total.unwrap_or(0));
            bytes.end - bytes.start
        }
        None => whole_size(pass, verifier),
    };
    let start = verifier.offset.get();
    verifier.offset.set(start.saturating_add(bytes));
    let unit = Unit {
        name: &pass.name,
        tree: &pass.tree,
        leaf,
        digest,
        bytes,
    };
    verifier.holds(start, Some(&unit))
}

/// [`Passes::next_sliced`] for a pass with leaf lines: keeps the leaves in
/// the slice, and the count lines if the pass's first unit is
/// (`starts_in`); the checksum line of a listing's first pass is a unit
/// of its own if the listing is incomplete.
fn slice_leaves(verifier: &Verifier<'_>, pass: &mut Pass, starts_in: bool) -> bool {
    let (mut checksum_in, mut contradicts) = (false, false);
    if let (Some(checksum), false) = (&pass.checksum, pass.continues) {
        // A listing's first pass: is it complete, and do its leaves make
        // its checksum?
        let mut listings = verifier.listings.borrow_mut();
        let ordinal = listings.checked;
        listings.checked += 1;
        contradicts = listings.contradicted.binary_search(&ordinal).is_ok();
        let incomplete = listings.incomplete.binary_search(&ordinal).is_ok();
        drop(listings);
        checksum_in = incomplete && take_unit(verifier, pass, None, &checksum.expected);
    }
    let mut leaves = std::mem::take(&mut pass.listed);
    leaves.retain(|leaf| take_unit(verifier, pass, Some(leaf.index), &leaf.digest));
    pass.listed = leaves;
    if !starts_in {
        pass.count_lines.clear();
    }
    let kept = !pass.listed.is_empty() || !pass.count_lines.is_empty();
    if !(kept || checksum_in || contradicts) {
        return false;
    }
    // The leaves decide; the checksum line, unless its file is hashed whole
    // here, is theirs or another slice's.
    pass.checksum_elsewhere = !checksum_in;
    pass.contradicts_itself = contradicts && !checksum_in;
    pass.count_lines.iter_mut().for_each(|before| *before = 0);
    true
}

/// The size of a file checked whole: as its stat, leaf or count lines list
/// it, or else as the system says now (or 0).
fn whole_size(pass: &Pass, verifier: &Verifier<'_>) -> u64 {
    let now = || {
        let path = pass.path()?;
        if let Some(left) = verifier.size_lookups.get() {
            verifier.size_lookups.set(Some(left.checked_sub(1)?));
        }
        Some(std::fs::metadata(path).ok()?.len())
    };
    let listed = pass.stat.map(|(size, _)| size).or(pass.total);
    listed.or_else(now).unwrap_or(0)
}

impl Iterator for Passes<'_> {
    type Item = Job<Pass, Option<ListedLeaves>>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut pass = loop {
            let pass = self.next_sliced()?;
            if let Some(kept) = self.take_unread(pass) {
                break kept;
            }
        };
        pass.bad_lines = std::mem::take(&mut self.bad_lines);
        let held = pass.lines() * size_of::<ListedLeaf>();
        let listed = Some(std::mem::take(&mut pass.listed)).filter(|listed| !listed.is_empty());
        // (A name no path here can have was refused as improperly
        // formatted.)
        let path = Name::listed(&pass.name).path().unwrap_or_default();
        let tree = pass.tree;
        if pass.probe || pass.unread {
            // Opened, not read: whether it is there.
            pass.count_lines.clear();
            return Some(Job::path(pass, path, &tree).with_leaves(None).select(0..0));
        }
        let job = if pass.name == b"-" {
            // Standard input may be a pipe: hashed whole, in turn.
            let job = Job::stdin(pass, &tree).with_leaves(listed);
            let before = self.verifier.before_stdin.as_ref();
            match before.map_or(Ok(()), |before_stdin| before_stdin()) {
                Ok(()) => job,
                Err(error) => job.failing(error.into()),
            }
        } else {
            // Leaf and count lines alone need only the leaves they list
            // (none for count lines): the outcome's length is the file's.
            let whole = pass.judged_checksum().is_some();
            let range = listed.as_ref().and_then(ListedLeaves::indices);
            let job = Job::path(pass, path, &tree).with_leaves(listed);
            match whole {
                true => job,
                false => job.select(range.unwrap_or(0..0)),
            }
        };
        Some(job.holds(held).progress(self.verifier.progress.clone()))
    }
}
