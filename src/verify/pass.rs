//! One pass over one listed file, and what hashing the file says of each
//! of its lines.

use crate::digest::Digest;
use crate::engine::Hashed;
use crate::error::Error;
use crate::format::checksum::Entry;
use crate::format::name::Name;
use crate::format::stat::Mtime;
use crate::input::Stamp;
use crate::leaves::{ListedLeaf, ListedLeaves};
use crate::params::TreeParams;
use crate::verify::{BadLine, Verdict};
use std::ops::RangeInclusive;
use std::path::PathBuf;
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

/// The consecutive lines of a list about one file (a checksum line, the
/// stat, leaf and count lines that follow it, or those alone) checked in
/// one pass over it. A listing too long for one pass is checked in
/// several, each hashing only its own leaves.
#[derive(Default)]
pub struct Pass {
    /// The file's name, unescaped (`-`: standard input).
    pub name: Vec<u8>,
    /// What the file is hashed with: the tree of its leaf lines (their
    /// `tree=` wins over `-t`), or the checksum line's tag and `-t`.
    pub tree: TreeParams,
    /// The checksum line (its name moved to the pass's).
    pub(super) checksum: Option<Entry>,
    /// The file's length, as its leaf and count lines list it.
    pub total: Option<u64>,
    /// The file's size and modification time, as its stat line lists them.
    pub stat: Option<(u64, Mtime)>,
    /// For each count line, how many of the pass's leaf lines precede it.
    pub(super) count_lines: Vec<usize>,
    /// Whether the pass goes on with the file of the pass before it (`false`:
    /// the file's first pass).
    pub continues: bool,
    /// Whether the pass after it goes on with its file (`false`: the file's
    /// last pass).
    pub continued: bool,
    pub(super) listed: ListedLeaves,
    /// The improperly formatted lines just before the pass.
    pub(super) bad_lines: Vec<(u64, BadLine)>,
    /// Its first and last line in the list, by number (from 1).
    pub(super) first_line: u64,
    pub(super) last_line: u64,
    /// Whether the file was only looked for, not checked: it is outside the
    /// slice (`--part`), and an audit asks whether it is there.
    pub probe: bool,
    /// Whether the file is only opened, not read: taken as unchanged
    /// ([`Verifier::quick`](super::Verifier::quick)).
    pub(super) unread: bool,
    /// Whether the list contradicts itself: the file's listing is complete
    /// and its leaves do not make its checksum line's digest, which this
    /// pass does not judge (found in a slice, without reading the file).
    pub contradicts_itself: bool,
    /// Whether the checksum line is not judged in this pass (in a slice:
    /// the leaves stand for it, or another slice hashes the file whole).
    pub(super) checksum_elsewhere: bool,
}

impl Pass {
    /// Whether a leaf or stat line goes with the pass's lines: the same
    /// file (a nameless line's is `-`), algorithm and digest size, and,
    /// where the pass already has a listing, the same leaf size and length.
    pub(super) fn takes(&self, name: Option<&[u8]>, tree: &TreeParams, total: u64) -> bool {
        let same_file = name.unwrap_or(b"-") == self.name
            && tree.algorithm() == self.tree.algorithm()
            && tree.digest_size() == self.tree.digest_size();
        let same_listing = |listed| *tree == self.tree && total == listed;
        same_file && self.total.is_none_or(same_listing)
    }

    pub(super) fn judged_checksum(&self) -> Option<&Entry> {
        self.checksum.as_ref().filter(|_| !self.checksum_elsewhere)
    }

    /// The file's path; `None` for standard input, and for a name no file
    /// here can have.
    pub(super) fn path(&self) -> Option<PathBuf> {
        let path = Name::listed(&self.name).path();
        path.filter(|_| self.name != b"-")
    }

    /// How many lines the pass checks.
    pub(super) fn lines(&self) -> usize {
        let leaves = self.listed.len();
        let checksum = self.judged_checksum().is_some() || self.contradicts_itself;
        usize::from(checksum) + leaves + self.count_lines.len()
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
    /// The lines checked.
    pub pass: Pass,
    /// What hashing the file gave: its length (and, for a pass with a
    /// checksum line, its checksum), or why it could not be read.
    pub outcome: Result<Hashed, Error>,
    /// A regular file's stamp while it was hashed: what a write after the
    /// check must find it still is.
    pub stamp: Option<Stamp>,
    pub(super) checksum_matched: bool,
    /// The worst verdict on the file's lines in this pass and those before
    /// (unreadable, then failed, then OK).
    pub worst: Verdict,
    /// Whether an earlier pass found the file unreadable (and told why:
    /// the reason is told once per file).
    pub unreadable_before: bool,
    pub(super) file_first_line: u64,
    /// Whether the file was edited since it was listed: its size or
    /// modification time differ from its stat line's (its first pass
    /// found). Its failing lines then say CHANGED, not damage.
    pub edited: bool,
}

impl Checked {
    /// The file's lines in the list so far, by number (from 1).
    pub fn file_lines(&self) -> RangeInclusive<u64> {
        self.file_first_line..=self.pass.last_line
    }

    /// Whether the pass's checksum line, if it has one, is tagged.
    pub fn tagged(&self) -> Option<bool> {
        self.pass.checksum.as_ref().map(|checksum| checksum.tagged)
    }

    /// The checksum the pass's checksum line lists, if it has one.
    pub fn expected(&self) -> Option<&Digest> {
        Some(&self.pass.checksum.as_ref()?.expected)
    }

    /// Whether the pass's leaf lines list every leaf of the file, in
    /// order, and the file has no other pass: its leaves then stand for its
    /// checksum line.
    pub fn lists_every_leaf(&self) -> bool {
        let pass = &self.pass;
        // (Listed indices increase: as many as there are from 0 to the last
        // are every one.)
        let count = pass.total.map_or(0, |total| pass.tree.leaf_count(total));
        let every = pass.listed.len() as u64 == count && pass.listed.indices() == Some(0..count);
        every && !pass.continues && !pass.continued
    }

    /// The listed leaves and their digests, in leaf order.
    pub fn listed_leaves(&self) -> impl Iterator<Item = (u64, &Digest)> + '_ {
        let listed = self.pass.listed.iter();
        listed.map(|leaf| (leaf.index, &leaf.digest))
    }

    /// The listed leaves that failed or are missing, as
    /// [`listed_leaves`](Self::listed_leaves) (none if the file could not
    /// be read).
    pub fn failed_leaves(&self) -> Vec<(u64, Digest)> {
        // (A probe lists no leaves.)
        let (readable, listed) = (self.outcome.is_ok(), &self.pass.listed);
        let failed = listed.iter().filter(|leaf| readable && !leaf.matched);
        failed.map(|leaf| (leaf.index, leaf.digest)).collect()
    }

    /// The verdict on each line the pass checked, in list order (none for
    /// a file only looked for: see [`Pass::probe`]).
    ///
    /// A leaf's digest depends only on its bytes, its index and whether it
    /// is the last one: in a file that got shorter or longer, a listed leaf
    /// whose bytes and place are unchanged still verifies, the listed last
    /// leaf no longer does (it is not the last any more, or lost bytes), and
    /// a listed leaf past the new end is missing. A count line checks the
    /// length.
    pub fn lines(&self) -> impl Iterator<Item = (Subject, Verdict)> + '_ {
        let (pass, hashed, changed) = (&self.pass, self.outcome.as_ref().ok(), self.changed());
        let judged = move |passed: bool| match (hashed.is_some(), passed) {
            (false, _) => Verdict::Unreadable,
            (true, true) => Verdict::Ok,
            (true, false) => Verdict::Failed,
        };
        let checksum = pass.judged_checksum().map(|_| {
            let verdict = match judged(self.checksum_matched) {
                // (Taken as unchanged: changed since, it is an edit.)
                Verdict::Failed if pass.unread && !changed => Verdict::Unread,
                Verdict::Failed if changed => Verdict::Changed,
                verdict => verdict,
            };
            (Subject::Checksum, verdict)
        });
        // (A listing that contradicts its checksum line leaves it unjudged.)
        let contradicted = pass
            .contradicts_itself
            .then_some((Subject::Checksum, Verdict::Failed));
        let checksum = checksum.or(contradicted);
        let total_matches = hashed.is_some_and(|hashed| Some(hashed.length) == pass.total);
        let leaves_now = hashed.map(|hashed| pass.tree.leaf_count(hashed.length));
        let mut leaves = pass.listed.iter();
        let mut count_lines = pass.count_lines.iter().peekable();
        let mut leaves_seen = 0;
        let rest = std::iter::from_fn(move || {
            if count_lines.next_if_eq(&&leaves_seen).is_some() {
                return Some((Subject::Length, judged(total_matches)));
            }
            let &ListedLeaf { index, matched, .. } = leaves.next()?;
            leaves_seen += 1;
            let verdict = match leaves_now {
                Some(count) if index >= count => Verdict::Missing,
                _ => judged(matched),
            };
            Some((Subject::Leaf(index), verdict))
        });
        checksum.into_iter().chain(rest).filter(|_| !pass.probe)
    }

    /// Whether the file's lines list no digest (count lines only): checking
    /// it verifies its length, not its bytes.
    pub fn lists_no_digest(&self) -> bool {
        self.pass.checksum.is_none() && self.pass.listed.is_empty()
    }

    /// Whether the file's size or modification time differ from its stat
    /// line's (`false` without one, or if it could not be read).
    pub fn changed(&self) -> bool {
        let (Some((size, mtime)), Ok(hashed)) = (self.pass.stat, &self.outcome) else {
            return false;
        };
        hashed.length != size || self.modified().map(Mtime::of) != Some(mtime)
    }

    /// A regular file's modification time while it was hashed.
    pub fn modified(&self) -> Option<SystemTime> {
        self.stamp.and_then(|stamp| stamp.modified())
    }

    /// On the last pass over a file, the verdict on it: the worst on its
    /// lines.
    pub fn file_verdict(&self) -> Option<Verdict> {
        (!self.pass.continued).then_some(self.worst)
    }

    /// Whether the file does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(&self.outcome, Err(Error::Io(error)) if error.kind() == std::io::ErrorKind::NotFound)
    }

    /// The checksum line the pass judged, in a file that could be read,
    /// and whether it matched.
    pub fn checksum_line(&self) -> Option<(&Entry, bool)> {
        let checksum = self.pass.judged_checksum()?;
        Some((checksum, self.checksum_matched)).filter(|_| self.outcome.is_ok())
    }
}
