//! A list read into passes, as the engine asks for them: each pass a job
//! hashing the listed file, whole or only the listed leaves, with a
//! [`ListedLeaves`] sink that compares the leaves as they are hashed.

use std::io::{self, BufRead};

use super::pass::{ListedChecksum, Pass};
use super::{BadLine, Unit, Verifier};
use crate::format::leaf::LeafLine;
use crate::format::lines::{Record, read_line};
use crate::format::list::{Improper, ListLine, classify};
use crate::format::name::Name;
use crate::format::stat::{Mtime, StatLine};
use crate::input::{Job, Outcome};
use crate::leaves::ListedLeaves;
use crate::params::TreeParams;

/// The most leaf and count lines of one file checked in one pass over it:
/// what their listed digests take in 16 MiB (less where the address space
/// is limited), and at most `pass_bytes` of leaves of `tree` where the
/// verifier bounds them. A longer run of them is checked a part at a time,
/// each part hashing only its own leaves.
fn pass_lines(pass_bytes: Option<u64>, tree: &TreeParams) -> usize {
    let by_memory = crate::budget::memory().per_structure / ListedLeaves::BYTES_PER_LEAF;
    let by_bytes = pass_bytes.map_or(u64::MAX, |bytes| (bytes / tree.leaf_size()).max(1));
    by_memory.min(usize::try_from(by_bytes).unwrap_or(usize::MAX))
}

/// A pass as a job carries it: with the improperly formatted lines just
/// before it, reported before it.
pub(super) struct Queued {
    pub bad_lines: Vec<(u64, BadLine)>,
    pub pass: Pass,
}

/// What hashing a pass gave.
pub(super) type PassOutcome = Outcome<Queued, Option<ListedLeaves>>;

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
    /// Why reading the list stopped early.
    pub error: Option<io::Error>,
    /// How many properly formatted lines were left to other slices.
    pub outside_slice: u64,
    /// Whether improperly formatted lines are reported (not in slices but
    /// the first).
    reports_bad_lines: bool,
    /// When slicing: whether the pass before was checked in this slice.
    previous_reported: bool,
    /// Whether the passes that go on with the file of the last one are
    /// dropped: it was taken as unchanged, unread.
    unread_file: bool,
    /// Whether the next pass goes on with the file of the last one.
    cut: bool,
    /// Whether a nameless line (of standard input, as hashing it without a
    /// FILE prints) names standard input: when the list is not read from
    /// there.
    nameless_is_stdin: bool,
    verifier: &'a Verifier<'a>,
}

/// Whether a line joined a pass.
enum Joined {
    Yes,
    /// It is about another file or listing, or is no leaf or count line.
    No,
    /// It goes on with the pass's listing, which is cut before it (memory,
    /// or an index that does not follow the pass's): the next pass goes on
    /// with the file.
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
            error: None,
            outside_slice: 0,
            reports_bad_lines: verifier.slice.is_none_or(|slice| slice.part.part() == 1),
            previous_reported: false,
            unread_file: false,
            cut: false,
            nameless_is_stdin: !list_is_stdin,
            verifier,
        }
    }

    /// The next line that is not blank or a comment, with its number. The
    /// nameless lines of standard input name it, `-`, unless the list is
    /// standard input itself.
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
                Ok(Record::TooLong) => ListLine::Improper(Improper::TooLong),
                Ok(Record::Line) => classify(&self.line, &self.verifier.settings.grammar),
                Err(error) => {
                    self.error = Some(error);
                    return None;
                }
            };
            self.line_number += 1;
            let mut line = match line {
                ListLine::Nameless {
                    algorithm,
                    expected,
                } if self.nameless_is_stdin => ListLine::Checksum(crate::format::checksum::Entry {
                    algorithm,
                    name: b"-".to_vec(),
                    expected,
                    tagged: true,
                }),
                line => line,
            };
            if let ListLine::Leaf(LeafLine { name, .. }) | ListLine::Stat(StatLine { name, .. }) =
                &mut line
                && self.nameless_is_stdin
            {
                name.get_or_insert_with(|| b"-".to_vec());
            }
            if !matches!(line, ListLine::Skip) {
                return Some((self.line_number, line));
            }
        }
        None
    }

    /// The pass a line starts, or why it starts none.
    fn start(&mut self, line: ListLine) -> Result<(Pass, Option<ListedLeaves>), BadLine> {
        let (pass, listed) = match line {
            ListLine::Checksum(entry) => {
                let size = entry.expected.as_bytes().len();
                let leaf_size = self.verifier.settings.leaf_size;
                // (The grammar only lets valid sizes through.)
                let tree = TreeParams::new(entry.algorithm, size, leaf_size)
                    .map_err(|_| BadLine::Grammar(Improper::Junk))?;
                let checksum = ListedChecksum {
                    sized_like: entry.sized_like(),
                    expected: entry.expected,
                    tagged: entry.tagged,
                };
                (Pass::new(entry.name, tree, Some(checksum)), None)
            }
            ListLine::Leaf(leaf) => {
                let name = leaf.name.clone().ok_or(BadLine::StdinInStdin)?;
                let mut started = (Pass::new(name, leaf.tree, None), None);
                self.join(&mut started.0, &mut started.1, leaf);
                started
            }
            ListLine::Nameless { .. } => return Err(BadLine::StdinInStdin),
            ListLine::Stat(_) => return Err(BadLine::LoneStat),
            ListLine::Improper(improper) => return Err(BadLine::Grammar(improper)),
            ListLine::Skip => return Err(BadLine::Grammar(Improper::Junk)),
        };
        // Standard input, when the list is read from there (as GNU); a name
        // no file here can have (see `Name::path`).
        if pass.name == b"-" {
            if !self.nameless_is_stdin {
                return Err(BadLine::StdinInStdin);
            }
        } else if Name::listed(&pass.name).path().is_none() {
            return Err(BadLine::Grammar(Improper::Junk));
        }
        Ok((pass, listed))
    }

    /// The next pass, with its listed leaves.
    fn next_pass(&mut self) -> Option<(Pass, Option<ListedLeaves>)> {
        let (mut pass, mut listed) = loop {
            let (line_number, line) = self.next_line()?;
            match self.start(line) {
                Ok(mut started) => {
                    started.0.lines = line_number..=line_number;
                    break started;
                }
                // (A list's improperly formatted lines are its first
                // slice's.)
                Err(_) if !self.reports_bad_lines => {}
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
                ListLine::Leaf(leaf) => self.join(&mut pass, &mut listed, leaf.clone()),
                ListLine::Stat(stat) => join_stat(&mut pass, stat),
                _ => Joined::No,
            };
            match joined {
                Joined::Yes => {
                    pass.lines = *pass.lines.start()..=line_number;
                    continue;
                }
                Joined::No => {}
                Joined::Cut => {
                    pass.continued = true;
                    self.cut = true;
                }
            }
            self.ahead = Some((line_number, line));
            break;
        }
        Some((pass, listed))
    }

    /// Adds a leaf or count line to `pass` if it goes on with it: it names
    /// the same file with the same algorithm and digest size, the same leaf
    /// size and length as the pass's other leaf lines, a leaf after theirs,
    /// and the pass holds fewer than [`pass_lines`] lines. A checksum line
    /// takes the leaf size of the first leaf line joining it.
    ///
    /// A pass cut before the line still takes its leaf size and length (the
    /// line is of its listing, and starts the next pass, which goes on with
    /// it), so that its checksum line is checked with the right leaf size.
    fn join(&self, pass: &mut Pass, listed: &mut Option<ListedLeaves>, leaf: LeafLine) -> Joined {
        if !pass.takes(leaf.name.as_deref(), &leaf.tree, leaf.total) {
            return Joined::No;
        }
        let held = listed.as_ref().map_or(0, ListedLeaves::len) + pass.count_lines.len();
        if held >= pass_lines(self.verifier.pass_bytes, &leaf.tree) {
            return Joined::Cut;
        }
        pass.tree = leaf.tree;
        pass.total = Some(leaf.total);
        let listed = listed.get_or_insert_with(|| ListedLeaves::new(leaf.tree.digest_size()));
        match leaf.leaf {
            // Not after the pass's leaves: checked in the next pass.
            Some(leaf) if !listed.push(leaf.index, leaf.digest) => return Joined::Cut,
            Some(_) => {}
            None => pass.count_lines.push(listed.len()),
        }
        Joined::Yes
    }
}

/// Adds a stat line to `pass` if it is its checksum line's: it names the
/// same file with the same algorithm and digest size, the pass has a
/// checksum line and no stat line yet, and any leaf lines it has are of the
/// same leaf size and length. Its `tree=` is the checksum line's leaf size.
fn join_stat(pass: &mut Pass, stat: &StatLine) -> Joined {
    let takes = pass.takes(stat.name.as_deref(), &stat.tree, stat.size);
    if !(takes && pass.checksum.is_some() && pass.stat.is_none()) {
        return Joined::No;
    }
    pass.tree = stat.tree;
    pass.stat = Some((stat.size, stat.mtime));
    Joined::Yes
}

/// How one leaf listing with a checksum line is sliced: whether it lists
/// every leaf of its file (its leaves then stand for the checksum line),
/// and, while its passes are read, where the leaves seen so far leave off;
/// the root its listed leaves make, to hold against its checksum line.
struct Listing {
    next_index: u64,
    in_order: bool,
    /// The size of the file it lists, as its first pass gives it.
    size: u64,
    root: crate::engine::Root,
    expected: Option<crate::digest::Digest>,
}

impl Passes<'_> {
    /// Cuts a pass to the units of it that start in the slice being
    /// checked (see [`super::Slice`]), moving on the offset of the bytes
    /// the lists describe; whether any is left. A pass that goes on with a
    /// file reported here, or is gone on with by one, says so only then.
    fn slice_pass(&mut self, pass: &mut Pass, listed: &mut Option<ListedLeaves>) -> bool {
        let verifier = self.verifier;
        let offset = &verifier.offset;
        // Moves the offset past a unit of `bytes`, and says whether the
        // unit is checked here.
        let unit = |leaf: Option<u64>, digest: &crate::digest::Digest, bytes: u64| {
            let start = offset.get();
            offset.set(start.saturating_add(bytes));
            let unit = Unit {
                name: &pass.name,
                tree: &pass.tree,
                leaf,
                digest,
                bytes,
            };
            verifier.holds(start, Some(&unit))
        };
        // (Count lines go with the pass's first unit.)
        let starts_in = verifier.holds(offset.get(), None);
        let mut checksum_in = false;
        let in_this = match listed.as_mut().filter(|listed| !listed.is_empty()) {
            Some(leaves) => {
                if let (Some(checksum), false) = (&pass.checksum, pass.continues) {
                    // A listing's first pass: is it complete, and do its
                    // leaves make its checksum?
                    let mut listings = verifier.listings.borrow_mut();
                    let ordinal = listings.checked;
                    listings.checked += 1;
                    pass.contradicts_leaves = listings.contradicted.binary_search(&ordinal).is_ok();
                    let incomplete = listings.incomplete.binary_search(&ordinal).is_ok();
                    drop(listings);
                    if incomplete {
                        checksum_in = unit(None, &checksum.expected, whole_size(pass, verifier));
                    }
                }
                let total = pass.total.unwrap_or(0);
                let tree = pass.tree;
                leaves.retain(|index, digest| {
                    let bytes = tree.leaf_bytes(index, total);
                    unit(Some(index), digest, bytes.end - bytes.start)
                });
                if !starts_in {
                    pass.count_lines.clear();
                }
                let contradicts = pass.contradicts_leaves;
                if !leaves.is_empty() || !pass.count_lines.is_empty() || checksum_in || contradicts
                {
                    // The leaves decide; the checksum line, unless its file
                    // is hashed whole here, is theirs or another slice's.
                    pass.checksum_elsewhere = !checksum_in;
                    pass.count_lines.iter_mut().for_each(|before| *before = 0);
                    true
                } else {
                    false
                }
            }
            None => match &pass.checksum {
                Some(checksum) => unit(None, &checksum.expected, whole_size(pass, verifier)),
                // (Count lines alone: nothing to read.)
                None => starts_in,
            },
        };
        if !in_this {
            return false;
        }
        // Reported here, a pass starts or ends its file's report where the
        // passes of the file before or after it are not.
        pass.continues &= self.previous_reported;
        pass.continued &= verifier.holds(offset.get(), None);
        true
    }

    /// The bytes every pass of the list describes (see [`super::Slice`]),
    /// noting which leaf listings with a checksum line list only some of
    /// their file's leaves, and which list leaves that do not make their
    /// checksum line's digest.
    pub fn total_bytes(&mut self) -> u64 {
        let verifier = self.verifier;
        let mut total = 0u64;
        let mut listing: Option<Listing> = None;
        while let Some((pass, listed)) = self.next_pass() {
            let bytes = match listed.filter(|listed| !listed.is_empty()) {
                Some(listed) => {
                    let length = pass.total.unwrap_or(0);
                    if pass.checksum.is_some() && !pass.continues {
                        listing = Some(Listing {
                            next_index: 0,
                            in_order: true,
                            size: whole_size(&pass, verifier),
                            root: crate::engine::Root::new(&pass.tree),
                            expected: pass.checksum.as_ref().map(|checksum| checksum.expected),
                        });
                    }
                    let mut bytes = 0u64;
                    for (index, digest) in listed.listed() {
                        if let Some(listing) = &mut listing {
                            listing.in_order &= index == listing.next_index;
                            listing.next_index = index + 1;
                            listing.root.feed(digest.as_bytes());
                        }
                        let leaf = pass.tree.leaf_bytes(index, length);
                        bytes = bytes.saturating_add(leaf.end - leaf.start);
                    }
                    if !pass.continued
                        && let Some(done) = listing.take()
                    {
                        let mut listings = verifier.listings.borrow_mut();
                        let ordinal = listings.counted;
                        listings.counted += 1;
                        let complete =
                            done.in_order && done.next_index == pass.tree.leaf_count(length);
                        if !complete {
                            listings.incomplete.push(ordinal);
                            bytes = bytes.saturating_add(done.size);
                        } else if done.expected != Some(done.root.finalize()) {
                            listings.contradicted.push(ordinal);
                        }
                    }
                    bytes
                }
                None if pass.checksum.is_some() => whole_size(&pass, verifier),
                None => 0,
            };
            total = total.saturating_add(bytes);
        }
        total
    }
}

impl Passes<'_> {
    /// The next pass in the slice being checked, if there is one (a pass
    /// outside it is dropped, or made a probe: see [`super::Slice`]).
    fn next_sliced(&mut self) -> Option<(Pass, Option<ListedLeaves>)> {
        loop {
            let (mut pass, mut listed) = self.next_pass()?;
            if !self.verifier.selects() {
                return Some((pass, listed));
            }
            let probe_others = self.verifier.slice.is_some_and(|slice| slice.probe_others);
            let lines = pass.lines(listed.as_ref());
            let in_slice = self.slice_pass(&mut pass, &mut listed);
            let kept = if in_slice {
                pass.lines(listed.as_ref())
            } else {
                0
            };
            self.outside_slice += (lines - kept) as u64;
            self.previous_reported = in_slice;
            if in_slice {
                return Some((pass, listed));
            }
            // A file's first pass outside the slice is looked for, for the
            // whole file; the passes that go on with it are not. (Probes are
            // only the first slice's, whose passes of a file all come before
            // those outside it.)
            if probe_others && !pass.continues {
                (pass.probe, pass.continued) = (true, false);
                return Some((pass, None));
            }
        }
    }

    /// With `--quick`, marks the first pass of a file whose size and
    /// modification time are its stat line's as unread (opened, not read:
    /// its only verdict is the file's), and drops the passes that go on
    /// with such a file (`None`).
    fn take_unread(
        &mut self,
        mut pass: Pass,
        listed: Option<ListedLeaves>,
    ) -> Option<(Pass, Option<ListedLeaves>)> {
        if pass.continues && self.unread_file {
            self.outside_slice += pass.lines(listed.as_ref()) as u64;
            return None;
        }
        self.unread_file = false;
        let Some((size, mtime)) = pass.stat.filter(|_| self.verifier.quick && !pass.probe) else {
            return Some((pass, listed));
        };
        let path = Name::listed(&pass.name)
            .path()
            .filter(|_| pass.name != b"-");
        let unchanged = path
            .and_then(|path| std::fs::metadata(path).ok())
            .is_some_and(|now| {
                now.is_file()
                    && now.len() == size
                    && now.modified().ok().map(Mtime::of) == Some(mtime)
            });
        if unchanged {
            (pass.unread, self.unread_file) = (true, pass.continued);
            // (Its one verdict is its checksum line's, wherever a slice or a
            // round placed that line.)
            (pass.continued, pass.checksum_elsewhere) = (false, false);
            return Some((pass, None));
        }
        Some((pass, listed))
    }
}

/// The size of a file checked whole: as its stat line lists it, or its
/// leaf or count lines, or else as the system says now (0 for a file that
/// is not there, or where the verifier looks up no sizes).
fn whole_size(pass: &Pass, verifier: &Verifier<'_>) -> u64 {
    if let Some((size, _)) = pass.stat {
        return size;
    }
    if let Some(total) = pass.total {
        return total;
    }
    Name::listed(&pass.name)
        .path()
        .filter(|_| pass.name != b"-" && verifier.look_up_sizes)
        .and_then(|path| std::fs::metadata(path).ok())
        .map_or(0, |metadata| metadata.len())
}

impl<'a> Iterator for Passes<'a> {
    type Item = Job<Queued, Option<ListedLeaves>>;

    fn next(&mut self) -> Option<Self::Item> {
        let (mut pass, listed) = loop {
            let (pass, listed) = self.next_sliced()?;
            if let Some(kept) = self.take_unread(pass, listed) {
                break kept;
            }
        };
        let bad_lines = std::mem::take(&mut self.bad_lines);
        let listed = listed.filter(|listed| !listed.is_empty());
        if pass.probe || pass.unread {
            // Opened, not read: whether it is there.
            pass.count_lines.clear();
            let path = Name::listed(&pass.name).path().unwrap_or_default();
            let tree = pass.tree;
            let job = Job::path(Queued { bad_lines, pass }, path, &tree).with_leaves(None);
            return Some(job.select(0..0));
        }
        // Leaf and count lines alone need only the leaves they list (none
        // for count lines): the outcome's length is the file's.
        let range = (pass.judged_checksum().is_none()).then(|| {
            listed
                .as_ref()
                .and_then(ListedLeaves::indices)
                .unwrap_or(0..0)
        });
        let held = pass.lines(listed.as_ref()) * ListedLeaves::BYTES_PER_LEAF;
        let tree = pass.tree;
        // (A name no path here can have was refused as improperly
        // formatted.)
        let path = Name::listed(&pass.name).path().unwrap_or_default();
        let stdin = pass.name == b"-";
        let queued = Queued { bad_lines, pass };
        let job = if stdin {
            // Standard input may be a pipe: hashed whole, in turn.
            let job = Job::stdin(queued, &tree).with_leaves(listed);
            match (self.verifier.before_stdin)() {
                Ok(()) => job,
                Err(error) => job.failing(error.into()),
            }
        } else {
            let job = Job::path(queued, path, &tree).with_leaves(listed);
            match range {
                Some(range) => job.select(range),
                None => job,
            }
        };
        let job = job.holds(held);
        Some(job.progress(self.verifier.progress.clone()))
    }
}
