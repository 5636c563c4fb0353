//! One pass over one listed file: the consecutive lines of a list about it
//! (a checksum line, the leaf and count lines that follow it, or those
//! alone), and what hashing the file says of each.

use crate::digest::Digest;
use crate::engine::Hashed;
use crate::error::Error;
use crate::format::list::OtherTool;
use crate::format::stat::Mtime;
use crate::input::Stamp;
use crate::leaves::ListedLeaves;
use crate::params::TreeParams;
use crate::verify::Verdict;
use std::ops::RangeInclusive;
use std::time::SystemTime;

/// What a checked line of a list is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// The file's checksum (a checksum line).
    Checksum,
    /// One of its leaves, by index (a leaf line).
    Leaf(u64),
    /// Its length (a count line, `leaves=C total=T`).
    Length,
}

/// The lines of a list about one file checked in one pass over it (see the
/// module's notes). A file's listing too long for one pass (more leaf lines
/// than memory is set aside for) is checked in several, each hashing only
/// its own leaves.
pub(super) struct Pass {
    /// The file's name, unescaped (`-` for standard input).
    pub name: Vec<u8>,
    /// What the file is hashed with: the tree of its leaf lines (their
    /// `tree=` wins over `-t`), or the checksum line's tag and `-t`.
    pub tree: TreeParams,
    /// The checksum line, if the pass starts with one.
    pub checksum: Option<ListedChecksum>,
    /// The file's length, as its leaf and count lines list it.
    pub total: Option<u64>,
    /// The file's size and modification time, as its stat line lists them.
    pub stat: Option<(u64, Mtime)>,
    /// For each count line, how many of the pass's leaf lines precede it.
    pub count_lines: Vec<usize>,
    /// Whether the pass goes on with the file of the pass before it (its
    /// listing was cut there: memory, or leaf indices that stopped
    /// increasing), and whether the pass after it goes on with its file.
    pub continues: bool,
    pub continued: bool,
    /// Its lines in the list, by number (from 1).
    pub lines: RangeInclusive<u64>,
    /// Whether the file is only opened, not read: a probe (see
    /// [`Checked::is_probe`]), or taken as unchanged (`Verifier::quick`).
    pub probe: bool,
    pub unread: bool,
    /// Whether the file's listing is complete and its leaves do not make
    /// its checksum line's digest: the checksum line fails, whatever the
    /// file holds (known without reading it, in a slice).
    pub contradicts_leaves: bool,
    /// Whether the checksum line is not judged in this pass: in a slice,
    /// the complete leaf listing that follows it stands for it, or another
    /// slice hashes the file whole for it. Its digest still says what the
    /// file was.
    pub checksum_elsewhere: bool,
}

/// A checksum line's digest, and what its shape says of its maker.
#[derive(Clone, Debug)]
pub(super) struct ListedChecksum {
    pub expected: Digest,
    pub sized_like: Option<OtherTool>,
    /// Whether the line is tagged, not GNU-style.
    pub tagged: bool,
}

impl Pass {
    /// Whether a leaf or stat line of `name`, hashed with `tree`, of a file
    /// of `total` bytes, goes with the pass's lines: it names the same file
    /// with the same algorithm and digest size, and, where the pass already
    /// has a listing, the same leaf size and length.
    pub fn takes(&self, name: Option<&[u8]>, tree: &TreeParams, total: u64) -> bool {
        let same_file = name == Some(&self.name[..])
            && tree.algorithm() == self.tree.algorithm()
            && tree.digest_size() == self.tree.digest_size();
        match self.total {
            Some(listed) => same_file && *tree == self.tree && total == listed,
            None => same_file,
        }
    }

    pub fn new(name: Vec<u8>, tree: TreeParams, checksum: Option<ListedChecksum>) -> Pass {
        Pass {
            name,
            tree,
            checksum,
            total: None,
            stat: None,
            count_lines: Vec::new(),
            continues: false,
            continued: false,
            lines: 0..=0,
            probe: false,
            unread: false,
            contradicts_leaves: false,
            checksum_elsewhere: false,
        }
    }

    pub fn judged_checksum(&self) -> Option<&ListedChecksum> {
        self.checksum.as_ref().filter(|_| !self.checksum_elsewhere)
    }

    /// How many lines the pass checks.
    pub fn lines(&self, listed: Option<&ListedLeaves>) -> usize {
        let leaves = listed.map_or(0, ListedLeaves::len);
        let checksum = self.judged_checksum().is_some() || self.contradicts_leaves;
        usize::from(checksum) + leaves + self.count_lines.len()
    }

    /// The pass's checked lines in list order, each with its verdict, given
    /// the leaves' digests, what hashing the file gave (`None`: it could
    /// not be read), and whether the checksum matched.
    ///
    /// A leaf's digest depends only on its bytes, its index and whether it
    /// is the last one: in a file that got shorter or longer, a listed leaf
    /// whose bytes and place are unchanged still verifies, the listed last
    /// leaf no longer does (it is not the last any more, or lost bytes), and
    /// a listed leaf past the new end is missing. A count line checks the
    /// length.
    pub fn verdicts<'a>(
        &'a self,
        listed: Option<&'a ListedLeaves>,
        hashed: Option<&'a Hashed>,
        checksum_matched: bool,
        changed: bool,
    ) -> impl Iterator<Item = (Subject, Verdict)> + 'a {
        let judged = move |passed: bool| match (hashed.is_some(), passed) {
            (false, _) => Verdict::Unreadable,
            (true, true) => Verdict::Ok,
            (true, false) => Verdict::Failed,
        };
        let checksum = self.judged_checksum().map(|_| {
            let verdict = match judged(checksum_matched) {
                // (Taken as unchanged: changed since, it is an edit.)
                Verdict::Failed if self.unread && !changed => Verdict::Unread,
                Verdict::Failed if changed => Verdict::Changed,
                verdict => verdict,
            };
            (Subject::Checksum, verdict)
        });
        let checksum = match self.contradicts_leaves && self.checksum_elsewhere {
            true => Some((Subject::Checksum, Verdict::Failed)),
            false => checksum,
        };
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
                return Some((Subject::Length, judged(total_matches)));
            }
            let (index, matched) = leaves.next()?;
            leaves_seen += 1;
            let verdict = match leaves_now {
                Some(count) if index >= count => Verdict::Missing,
                _ => judged(matched),
            };
            Some((Subject::Leaf(index), verdict))
        });
        checksum.into_iter().chain(rest)
    }
}

/// The worse of two verdicts on one file's lines: unreadable, then failed
/// (or missing, or changed), then OK.
pub(super) fn worse(a: Verdict, b: Verdict) -> Verdict {
    let rank = |verdict| match verdict {
        Verdict::Ok | Verdict::Unread => 0,
        Verdict::Failed | Verdict::Missing | Verdict::Changed => 1,
        Verdict::Unreadable => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// One pass over one listed file, checked: what the verifier reports.
pub struct Checked {
    pub(super) pass: Pass,
    pub(super) listed: Option<ListedLeaves>,
    pub(super) result: Result<Hashed, Error>,
    pub(super) stamp: Option<Stamp>,
    pub(super) checksum_matched: bool,
    /// Of the file's passes so far, this one included: the worst verdict,
    /// whether an earlier one found it unreadable, its first line's
    /// number, and whether the first found it edited.
    pub(super) worst: Verdict,
    pub(super) unreadable_before: bool,
    pub(super) first_line: u64,
    pub(super) edited: bool,
}

impl Checked {
    /// The file's name as the list gives it, unescaped (`-`: standard
    /// input).
    pub fn name(&self) -> &[u8] {
        &self.pass.name
    }

    /// The tree parameters the file was hashed with.
    pub fn tree(&self) -> &TreeParams {
        &self.pass.tree
    }

    /// What hashing the file gave: its length (and, for a pass with a
    /// checksum line, its checksum), or why it could not be read.
    pub fn outcome(&self) -> Result<&Hashed, &Error> {
        self.result.as_ref()
    }

    /// The lines about the file in the list, from its first pass's first to
    /// this pass's last, by number (from 1): on a file's last pass, every
    /// line about it.
    pub fn file_lines(&self) -> RangeInclusive<u64> {
        self.first_line..=*self.pass.lines.end()
    }

    /// Whether the file's checksum line is tagged (`None`: the pass has
    /// none).
    pub fn tagged(&self) -> Option<bool> {
        self.pass.checksum.as_ref().map(|checksum| checksum.tagged)
    }

    /// The size and modification time the file's stat line lists, if it
    /// has one.
    pub fn listed_stat(&self) -> Option<(u64, Mtime)> {
        self.pass.stat
    }

    /// The checksum the pass's checksum line lists, if it has one.
    pub fn expected(&self) -> Option<&Digest> {
        Some(&self.pass.checksum.as_ref()?.expected)
    }

    /// The file's length as its leaf and count lines list it, if the pass
    /// has any.
    pub fn listed_length(&self) -> Option<u64> {
        self.pass.total
    }

    /// Whether the pass's leaf lines list every leaf of the file, in
    /// order, and the file has no other pass: its leaves then stand for its
    /// checksum line.
    pub fn lists_every_leaf(&self) -> bool {
        let (Some(listed), Some(total)) = (&self.listed, self.pass.total) else {
            return false;
        };
        let in_order = listed
            .indices_listed()
            .zip(0..)
            .all(|(index, at)| index == at);
        let one_pass = !self.pass.continues && !self.pass.continued;
        one_pass && listed.len() as u64 == self.pass.tree.leaf_count(total) && in_order
    }

    /// The listed leaves of the pass, with their listed digests, in leaf
    /// order.
    pub fn listed_leaves(&self) -> impl Iterator<Item = (u64, &Digest)> + '_ {
        self.listed.iter().flat_map(ListedLeaves::listed)
    }

    /// The listed leaves the pass found failing (those the file lacks
    /// too), with their listed digests, in leaf order: none if the file
    /// could not be read.
    pub fn failed_leaves(&self) -> Vec<(u64, Digest)> {
        match (&self.result, &self.listed) {
            (Ok(_), Some(listed)) if !self.pass.probe => listed
                .failed()
                .map(|(index, digest)| (index, *digest))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The verdict on each line the pass checked, in list order (none for
    /// a file only looked for: see [`is_probe`](Self::is_probe)).
    pub fn lines(&self) -> impl Iterator<Item = (Subject, Verdict)> + '_ {
        let (listed, hashed) = (self.listed.as_ref(), self.result.as_ref().ok());
        let verdicts = self
            .pass
            .verdicts(listed, hashed, self.checksum_matched, self.changed());
        verdicts.filter(|_| !self.pass.probe)
    }

    /// Whether the file's listing is complete and its leaf digests do not
    /// make the digest of its checksum line: the list contradicts itself
    /// (found in a slice, from the list alone).
    pub fn contradicts_itself(&self) -> bool {
        self.pass.contradicts_leaves && self.pass.checksum_elsewhere
    }

    /// Whether the file's lines list no digest at all (count lines only,
    /// as `--leaf-count` prints them): checking it verifies its length,
    /// not its bytes.
    pub fn lists_no_digest(&self) -> bool {
        self.pass.checksum.is_none() && self.listed.as_ref().is_none_or(ListedLeaves::is_empty)
    }

    /// Whether the file was only looked for, not checked: it is outside the
    /// slice being checked (`--part`), and an audit asked whether it is
    /// there ([`is_missing`](Self::is_missing)).
    pub fn is_probe(&self) -> bool {
        self.pass.probe
    }

    /// Whether the file's size or modification time differ from those its
    /// stat line lists (`false` without one, or for a file that could not
    /// be read): it was edited since.
    pub fn changed(&self) -> bool {
        let (Some((size, mtime)), Ok(hashed)) = (self.pass.stat, &self.result) else {
            return false;
        };
        hashed.length != size || self.modified().map(Mtime::of) != Some(mtime)
    }

    /// Whether the file was edited since it was listed: its size or
    /// modification time differ from its stat line's (its first pass
    /// found). Its failing lines then say CHANGED, not damage.
    pub fn edited(&self) -> bool {
        self.edited
    }

    /// A regular file's modification time while it was hashed.
    pub fn modified(&self) -> Option<SystemTime> {
        self.stamp.and_then(|stamp| stamp.modified())
    }

    /// A regular file's stamp while it was hashed: what a write after the
    /// check must find it still is.
    pub fn stamp(&self) -> Option<&Stamp> {
        self.stamp.as_ref()
    }

    /// Whether this is the first pass over its file (the usual case: a
    /// file's lines are checked in one pass).
    pub fn is_first_pass(&self) -> bool {
        !self.pass.continues
    }

    /// Whether this is the last pass over its file.
    pub fn is_last_pass(&self) -> bool {
        !self.pass.continued
    }

    /// On the last pass over a file, the verdict on the file: the worst
    /// verdict on any of its lines (unreadable, then failed, then OK).
    pub fn file_verdict(&self) -> Option<Verdict> {
        self.is_last_pass().then_some(self.worst)
    }

    /// The verdict on the file so far: the worst verdict on any of its
    /// lines in this pass and those before (for a check that stops before
    /// the file's last pass).
    pub fn verdict_so_far(&self) -> Verdict {
        self.worst
    }

    /// Why the file could not be read, when this is the first pass to find
    /// out (so that the reason is told once per file).
    pub fn new_error(&self) -> Option<&Error> {
        match &self.result {
            Err(error) if !self.unreadable_before => Some(error),
            _ => None,
        }
    }

    /// Whether the file does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(&self.result, Err(Error::Io(error)) if error.kind() == std::io::ErrorKind::NotFound)
    }

    /// On a file's first pass, its length and the one its leaf lines list,
    /// when they differ.
    pub fn length_change(&self) -> Option<(u64, u64)> {
        let found = self.result.as_ref().ok()?.length;
        let listed = self.pass.total?;
        (found != listed && self.is_first_pass()).then_some((found, listed))
    }

    /// For a checksum line checked with `-t`'s leaf size only (no leaf or
    /// count line gave its own), in a file that could be read: whether it
    /// matched. A list made with another leaf size fails in every such
    /// line.
    pub fn matched_with_option_leaf_size(&self) -> Option<bool> {
        let checksum = self.pass.judged_checksum()?;
        let by_option =
            self.pass.total.is_none() && self.pass.stat.is_none() && checksum.sized_like.is_none();
        (by_option && self.result.is_ok()).then_some(self.checksum_matched)
    }

    /// The other tool whose digest size the checksum line has, if it failed
    /// (a GNU-style line of 64 hex digits: BLAKE3 or SHA-256).
    pub fn failed_like(&self) -> Option<&OtherTool> {
        let checksum = self.pass.judged_checksum()?;
        let failed = self.result.is_ok() && !self.checksum_matched;
        checksum.sized_like.as_ref().filter(|_| failed)
    }
}
