//! Leaf digests beyond the checksum: [`LeafLog`] keeps an input's leaf
//! digests for a listing (`--leaves`), [`ListedLeaves`] checks them against
//! a listing's (`--check`), and [`Combiner`] turns the leaf lines of partial
//! listings back into the file's checksum (`--combine`). The log and the
//! combiner keep a bounded amount in memory and the rest in an anonymous
//! temporary file; a check holds what its caller chose to list at once.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::digest::Digest;
use crate::engine::{LeafSink, Root};
use crate::format::InputLines;
use crate::format::Tag;
use crate::format::leaf::LeafLine;
use crate::format::name::Name;
use crate::params::TreeParams;

/// Digest bytes one log keeps in memory before spilling to its file.
const LOG_IN_MEMORY: usize = crate::memory::IN_MEMORY;

/// Digest bytes all the logs of a process keep in memory together: a run
/// listing many inputs at once spills early rather than hold 16 MiB each.
const LOGS_IN_MEMORY: usize = 64 << 20;

/// The digest bytes all logs hold in memory now.
static LOGGED: AtomicUsize = AtomicUsize::new(0);

/// Leaf digests that could not be kept: the temporary file they spill to
/// could not be made, written or read back.
#[derive(Debug)]
pub struct SpillError(io::Error);

impl fmt::Display for SpillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot keep leaf digests in a temporary file in {}: {}",
            Name::of_path_lossy(std::env::temp_dir().as_os_str()).shown(),
            crate::error::plain_message(&self.0)
        )
    }
}

impl std::error::Error for SpillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The digests of consecutive leaves, as a [`LeafSink`] is given them: up to
/// 16 MiB in memory (64 MiB for all logs together), the rest in a
/// temporary file.
pub struct LeafLog {
    digest_size: usize,
    first: u64,
    count: u64,
    memory: Vec<u8>,
    spill: Option<File>,
    error: Option<io::Error>,
}

impl LeafLog {
    /// An empty log of `digest_size`-byte digests.
    pub fn new(digest_size: usize) -> Self {
        LeafLog {
            digest_size,
            first: 0,
            count: 0,
            memory: Vec::new(),
            spill: None,
            error: None,
        }
    }

    /// How many leaves are logged.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the digests could not all be kept ([`error`](Self::error)).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Why the digests could not all be kept, if they could not.
    pub fn error(self) -> Option<SpillError> {
        let mut log = self;
        log.error.take().map(SpillError)
    }

    /// Moves the digests in memory to the temporary file (made if need
    /// be), and gives the file: what is written to it next follows them,
    /// as the leaves it is of follow theirs.
    fn spill_memory(&mut self) -> io::Result<&mut File> {
        let file = match self.spill.take() {
            Some(file) => file,
            None => tempfile::tempfile()?,
        };
        let file = self.spill.insert(file);
        file.write_all(&self.memory)?;
        LOGGED.fetch_sub(self.memory.len(), Ordering::Relaxed);
        self.memory = Vec::new();
        Ok(file)
    }

    fn forget_memory(&mut self) {
        LOGGED.fetch_sub(self.memory.len(), Ordering::Relaxed);
        self.memory = Vec::new();
    }

    /// Calls `each(index, digest)` for every leaf in order. Fails with a
    /// [`SpillError`] if the temporary file could not be written or read
    /// back, or with what `each` fails with.
    pub fn for_each<E: From<SpillError>>(
        mut self,
        mut each: impl FnMut(u64, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(error) = self.error.take() {
            return Err(SpillError(error).into());
        }
        let mut index = self.first;
        if let Some(mut file) = self.spill.take() {
            file.seek(SeekFrom::Start(0)).map_err(SpillError)?;
            // Read a buffer of whole digests at a time: 1 MiB, or less where
            // memory is short.
            let mut buffer = Vec::new();
            let room = crate::memory::reserve_at_most(&mut buffer, 1 << 20)
                .ok_or_else(|| SpillError(crate::memory::out_of_memory()))?;
            let per_read = (room / self.digest_size).max(1);
            buffer.resize(per_read * self.digest_size, 0);
            let mut spilled = self.count - (self.memory.len() / self.digest_size) as u64;
            while spilled > 0 {
                let digests = per_read.min(usize::try_from(spilled).unwrap_or(usize::MAX));
                let part = &mut buffer[..digests * self.digest_size];
                file.read_exact(part).map_err(SpillError)?;
                for digest in part.chunks(self.digest_size) {
                    each(index, digest)?;
                    index += 1;
                }
                spilled -= digests as u64;
            }
        }
        for digest in self.memory.chunks(self.digest_size) {
            each(index, digest)?;
            index += 1;
        }
        Ok(())
    }
}

/// Reserves room in a log's memory for `additional` more digest bytes (see
/// `memory`); in unit tests, refused past the thread's test limit too.
fn reserve(memory: &mut Vec<u8>, additional: usize) -> bool {
    #[cfg(test)]
    if memory.len() + additional > tests::REFUSED_ABOVE.get() {
        return false;
    }
    crate::memory::reserve(memory, additional)
}

impl Drop for LeafLog {
    fn drop(&mut self) {
        self.forget_memory();
    }
}

impl LeafSink for LeafLog {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        debug_assert!(digests.len().is_multiple_of(self.digest_size));
        if self.count == 0 {
            self.first = first;
        }
        self.count += (digests.len() / self.digest_size) as u64;
        if self.error.is_some() {
            // The listing fails anyway: keep no more.
            return;
        }
        let over_own = self.memory.len() + digests.len() > LOG_IN_MEMORY;
        let over_all = LOGGED.load(Ordering::Relaxed) + digests.len() > LOGS_IN_MEMORY;
        if (over_own || over_all)
            && !self.memory.is_empty()
            && let Err(error) = self.spill_memory()
        {
            self.error = Some(error);
            return;
        }
        if over_all || !reserve(&mut self.memory, digests.len()) {
            // Straight to the file, when memory is short: after the digests
            // memory holds, which are of the leaves before these.
            if let Err(error) = self.spill_memory().and_then(|file| file.write_all(digests)) {
                self.error = Some(error);
            }
            return;
        }
        self.memory.extend_from_slice(digests);
        LOGGED.fetch_add(digests.len(), Ordering::Relaxed);
    }
}

/// The room leaf lines are gathered in before they are written out, as much
/// as an output's own buffer holds.
const LEAF_LINES_ROOM: usize = 64 << 10;

/// Why a listing's lines were not all written.
#[derive(Debug)]
pub enum Unwritten {
    /// Its leaf digests could not be kept: an error about the input.
    Listing(SpillError),
    /// The output failed.
    Output(io::Error),
}

impl From<SpillError> for Unwritten {
    fn from(error: SpillError) -> Self {
        Unwritten::Listing(error)
    }
}

impl LeafLog {
    /// Writes the logged leaves' lines (`--leaves`) of an input of `total`
    /// bytes to `out`, after what `lines` holds already (its
    /// checksum line, say), which is written first. The lines are gathered
    /// in room reserved for them (less, or none, where memory is short) and
    /// written out at half of it, so that they never grow `lines` past it:
    /// a listing has as many lines as the input has leaves. (A line is at
    /// most a few KiB, its name escaped; with no room at all, each is
    /// written as it is made.)
    pub fn write_lines(
        self,
        out: &mut dyn Write,
        lines: &mut Vec<u8>,
        input: InputLines<'_>,
        total: u64,
    ) -> Result<(), Unwritten> {
        self.write_with(out, lines, |lines, index, digest| {
            input.push_leaf(lines, total, index, digest);
        })
    }

    /// As [`write_lines`](Self::write_lines), each leaf's line made by
    /// `push(lines, index, digest)`: another form of them.
    pub fn write_with(
        self,
        out: &mut dyn Write,
        lines: &mut Vec<u8>,
        mut push: impl FnMut(&mut Vec<u8>, u64, &[u8]),
    ) -> Result<(), Unwritten> {
        let room = crate::memory::reserve_at_most(lines, LEAF_LINES_ROOM).unwrap_or(0);
        let write_at = (lines.len() + room) / 2;
        self.for_each(|index, digest| {
            push(lines, index, digest);
            if lines.len() >= write_at {
                out.write_all(lines).map_err(Unwritten::Output)?;
                lines.clear();
            }
            Ok::<(), Unwritten>(())
        })?;
        out.write_all(lines).map_err(Unwritten::Output)
    }
}

/// ListedLeaf digests of some of an input's leaves, in increasing leaf order,
/// each compared (in constant time) with the leaf's digest as hashing
/// delivers it: fed to a job as its [`LeafSink`], it checks
/// a listing in the pass that computes the checksum.
///
/// ```
/// use std::io::Write;
/// use bt2sum::leaves::{LeafLog, ListedLeaves};
/// use bt2sum::{Algorithm, Digest, TreeHasher, TreeParams};
///
/// // 10 bytes in 4-byte leaves: three leaves.
/// let tree = TreeParams::new(Algorithm::Blake2s, 32, 4)?;
/// let data = b"ten bytes!";
/// let mut hasher = TreeHasher::with_leaves(&tree, LeafLog::new(32));
/// hasher.write_all(data)?;
/// let (_, log) = hasher.finalize_with_leaves()?;
/// let mut digests = Vec::new();
/// log.for_each(|_, leaf| {
///     digests.push(Digest::from_slice(leaf).unwrap());
///     Ok::<(), bt2sum::leaves::SpillError>(())
/// })?;
///
/// // Leaf 1 is listed with its digest, leaf 2 with leaf 0's.
/// let mut listed = ListedLeaves::new(32);
/// assert!(listed.push(1, digests[1])?);
/// assert!(listed.push(2, digests[0])?);
/// assert!(!listed.push(2, digests[2])?, "indices must increase");
/// assert_eq!(listed.indices(), Some(1..3));
///
/// let mut hasher = TreeHasher::with_leaves(&tree, listed);
/// hasher.write_all(data)?;
/// let (_, listed) = hasher.finalize_with_leaves()?;
/// assert_eq!(listed.verdicts().collect::<Vec<_>>(), [(1, true), (2, false)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ListedLeaves {
    digest_size: usize,
    listed: Vec<ListedLeaf>,
    /// The first listed leaf not yet delivered.
    next: usize,
}

struct ListedLeaf {
    index: u64,
    digest: Digest,
    matched: bool,
}

impl ListedLeaves {
    /// What each listed leaf takes in memory.
    pub const BYTES_PER_LEAF: usize = std::mem::size_of::<ListedLeaf>();

    /// No listed leaf yet, of `digest_size`-byte digests.
    pub fn new(digest_size: usize) -> Self {
        ListedLeaves {
            digest_size,
            listed: Vec::new(),
            next: 0,
        }
    }

    /// Lists leaf `index` with `digest`; `Ok(false)` (and nothing listed)
    /// unless `index` is above every leaf listed so far and `digest` has the
    /// digest size; `Err` (nothing listed) if memory for it is refused.
    pub fn push(&mut self, index: u64, digest: Digest) -> Result<bool, io::Error> {
        let increasing = self.listed.last().is_none_or(|last| last.index < index);
        if !increasing || digest.as_bytes().len() != self.digest_size {
            return Ok(false);
        }
        if !crate::memory::reserve(&mut self.listed, 1) {
            return Err(crate::memory::out_of_memory());
        }
        self.listed.push(ListedLeaf {
            index,
            digest,
            matched: false,
        });
        Ok(true)
    }

    /// How many leaves can be listed before more memory is needed.
    pub fn capacity(&self) -> usize {
        self.listed.capacity()
    }

    /// How many leaves are listed.
    pub fn len(&self) -> usize {
        self.listed.len()
    }

    /// Whether no leaf is listed.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The listed leaves' indices, in order.
    pub fn indices_listed(&self) -> impl Iterator<Item = u64> + '_ {
        self.listed.iter().map(|listed| listed.index)
    }

    /// The leaves from the first listed to the last, if any is listed: the
    /// range to hash to check them all.
    pub fn indices(&self) -> Option<std::ops::Range<u64>> {
        let first = self.listed.first()?.index;
        let last = self.listed.last()?.index;
        Some(first..last + 1)
    }

    /// The listed leaves with their listed digests, in leaf order.
    pub fn listed(&self) -> impl Iterator<Item = (u64, &Digest)> + '_ {
        self.listed
            .iter()
            .map(|listed| (listed.index, &listed.digest))
    }

    /// The listed leaves whose digest did not match the leaf's (or that were
    /// never hashed), with their listed digests, in leaf order.
    pub fn failed(&self) -> impl Iterator<Item = (u64, &Digest)> + '_ {
        self.listed
            .iter()
            .filter(|listed| !listed.matched)
            .map(|listed| (listed.index, &listed.digest))
    }

    /// Keeps only the listed leaves `keep` says yes to (by index).
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        self.listed.retain(|listed| keep(listed.index));
        self.next = 0;
    }

    /// Each listed leaf's index, and whether its digest matched the leaf's
    /// (`false` also for a leaf that was never hashed), in leaf order.
    pub fn verdicts(&self) -> impl Iterator<Item = (u64, bool)> + '_ {
        self.listed
            .iter()
            .map(|listed| (listed.index, listed.matched))
    }
}

impl LeafSink for ListedLeaves {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        let count = (digests.len() / self.digest_size) as u64;
        while let Some(listed) = self.listed.get_mut(self.next) {
            if listed.index >= first + count {
                break;
            }
            if let Some(offset) = listed.index.checked_sub(first) {
                let start = offset as usize * self.digest_size;
                listed.matched = listed.digest == digests[start..start + self.digest_size];
            }
            self.next += 1;
        }
    }
}

/// Why partial listings do not combine into one checksum.
#[derive(Debug)]
pub enum CombineError {
    /// Two lines give different algorithms, digest sizes or leaf sizes.
    Parameters(TreeParams, TreeParams),
    /// Two lines name different files (`None`: standard input, nameless).
    Names(Option<Vec<u8>>, Option<Vec<u8>>),
    /// Two lines give different file lengths.
    Lengths(u64, u64),
    /// A leaf is listed twice with different digests.
    Clash(u64),
    /// Leaves from `first` are not listed, up to `next` (the next listed
    /// one, or the count; `None` when too far to look for); the file has
    /// `leaves` leaves.
    Missing {
        /// The first missing leaf.
        first: u64,
        /// The next listed leaf after it, or the count.
        next: Option<u64>,
        /// How many leaves the file has.
        leaves: u64,
    },
    /// No leaf line was given at all.
    NoLeafLines,
    /// The digests could not be kept in a temporary file.
    Spill(SpillError),
}

impl From<io::Error> for CombineError {
    fn from(error: io::Error) -> Self {
        CombineError::Spill(SpillError(error))
    }
}

impl fmt::Display for CombineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |name: &Option<Vec<u8>>| match name {
            Some(name) => Name::listed(name).shown(),
            None => "standard input".to_string(),
        };
        match self {
            CombineError::Parameters(first, other) => write!(
                f,
                "listings disagree on the parameters: {} with {}-byte leaves, and {} with {}-byte leaves",
                Tag::of(first),
                first.leaf_size(),
                Tag::of(other),
                other.leaf_size()
            ),
            CombineError::Names(first, other) => write!(
                f,
                "listings name different files: {} and {}",
                name(first),
                name(other)
            ),
            CombineError::Lengths(first, other) => {
                write!(
                    f,
                    "listings disagree on the file length: {first} and {other}"
                )
            }
            CombineError::Clash(index) => {
                write!(f, "leaf {index} is listed twice with different digests")
            }
            CombineError::Missing {
                first,
                next: Some(next),
                leaves,
            } => write!(
                f,
                "leaves {first}..{next} are missing (the file has {leaves} leaves)"
            ),
            CombineError::Missing {
                first,
                next: None,
                leaves,
            } => write!(
                f,
                "leaves from {first} on are missing (the file has {leaves} leaves)"
            ),
            CombineError::NoLeafLines => f.write_str("no leaf lines found"),
            CombineError::Spill(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for CombineError {}

/// Gathers the leaf lines of partial listings of one file and computes the
/// file's checksum once every leaf is there.
///
/// Leaves that arrive in order go straight to the root; every listed leaf is
/// kept (in memory up to 16 MiB, then in a temporary file, indexed by leaf),
/// so that a leaf listed twice is compared and one listed early waits for
/// those before it. Memory stays bounded whatever the listings hold.
///
/// ```
/// use std::io::Write;
/// use bt2sum::format::leaf::parse_leaf_line;
/// use bt2sum::format::{Ending, InputLines};
/// use bt2sum::leaves::{Combiner, LeafLog};
/// use bt2sum::{Algorithm, TreeHasher, TreeParams, hash};
///
/// // 10 bytes in 4-byte leaves: three leaves.
/// let tree = TreeParams::new(Algorithm::Blake2b, 32, 4)?;
/// let data = b"ten bytes!";
/// let mut hasher = TreeHasher::with_leaves(&tree, LeafLog::new(32));
/// hasher.write_all(data)?;
/// let (digest, leaves) = hasher.finalize_with_leaves()?;
///
/// // The listing `bt2sum --leaves` would print for a file named `f`.
/// let mut listing = Vec::new();
/// let file = InputLines { tree: &tree, name: Some(b"f"), ending: Ending::Newline };
/// leaves.for_each(|index, leaf| {
///     file.push_leaf(&mut listing, data.len() as u64, index, leaf);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// assert!(listing.starts_with(b"BLAKE2b-32 leaf=0 offset=0 length=4 total=10 tree=4 (f) = "));
///
/// // Its lines, in any order, give the file's checksum back.
/// let mut combiner = Combiner::default();
/// for line in listing.split(|&byte| byte == b'\n').filter(|line| !line.is_empty()).rev() {
///     combiner.add(parse_leaf_line(line)?)?;
/// }
/// let combined = combiner.finish()?;
/// assert_eq!(combined.name.as_deref(), Some(&b"f"[..]));
/// assert_eq!((combined.tree, combined.total), (tree, 10));
/// assert_eq!(combined.digest, digest);
/// assert_eq!(combined.digest, hash(&tree, data));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Combiner {
    /// The file's tree parameters, name and length, from the first line,
    /// and where its leaves go.
    file: Option<CombinedFile>,
}

struct CombinedFile {
    tree: TreeParams,
    name: Option<Vec<u8>>,
    total: u64,
    root: Root,
    /// The next leaf the root needs; those before it are fed.
    next: u64,
    /// The highest leaf kept, if any is: past it nothing waits.
    highest: Option<u64>,
    kept: Kept,
}

impl Combiner {
    /// Adds one listing line; `Err` names the clash.
    pub fn add(&mut self, line: LeafLine) -> Result<(), CombineError> {
        let file = match self.file.take() {
            None => CombinedFile {
                tree: line.tree,
                name: line.name.clone(),
                total: line.total,
                root: Root::new(&line.tree),
                next: 0,
                highest: None,
                kept: Kept::Memory(HashMap::new()),
            },
            Some(file) => file,
        };
        let file = self.file.insert(file);
        if file.tree != line.tree {
            return Err(CombineError::Parameters(file.tree, line.tree));
        }
        if file.name != line.name {
            return Err(CombineError::Names(file.name.clone(), line.name));
        }
        if file.total != line.total {
            return Err(CombineError::Lengths(file.total, line.total));
        }
        let Some(leaf) = line.leaf else {
            return Ok(());
        };
        match file.kept.get(leaf.index)? {
            Some(known) if known != leaf.digest => return Err(CombineError::Clash(leaf.index)),
            Some(_) => return Ok(()),
            None => {}
        }
        file.kept.put(&file.tree, leaf.index, &leaf.digest)?;
        file.highest = file.highest.max(Some(leaf.index));
        // Feed the root every leaf now in order: this one, and those listed
        // early that waited for it.
        if leaf.index == file.next {
            file.root.feed(leaf.digest.as_bytes());
            file.next += 1;
        }
        while file.highest.is_some_and(|highest| file.next <= highest) {
            let Some(digest) = file.kept.get(file.next)? else {
                break;
            };
            file.root.feed(digest.as_bytes());
            file.next += 1;
        }
        Ok(())
    }

    /// The file's checksum, with what its lines said of it, or the first
    /// gap.
    pub fn finish(self) -> Result<Combined, CombineError> {
        let mut file = self.file.ok_or(CombineError::NoLeafLines)?;
        let leaves = file.tree.leaf_count(file.total);
        if file.next < leaves {
            let next = match file.highest {
                Some(highest) if highest > file.next => file.kept.next_kept(file.next, highest)?,
                _ => Some(leaves),
            };
            return Err(CombineError::Missing {
                first: file.next,
                next,
                leaves,
            });
        }
        Ok(Combined {
            tree: file.tree,
            name: file.name,
            total: file.total,
            digest: file.root.finalize(),
        })
    }
}

/// What [`Combiner::finish`] gives: a file's checksum, computed from its
/// listed leaves, and what its lines said of it.
#[derive(Clone, Debug)]
pub struct Combined {
    /// The tree parameters of the listings.
    pub tree: TreeParams,
    /// The file's name, unescaped; `None` for nameless standard input.
    pub name: Option<Vec<u8>>,
    /// The file's length.
    pub total: u64,
    /// The file's checksum.
    pub digest: Digest,
}

/// Bytes of listed leaves kept in memory before they move to a file.
const KEPT_IN_MEMORY: usize = crate::memory::IN_MEMORY;

/// What a listed leaf takes in memory: its digest, its index, and the
/// map's share of empty slots.
const KEPT_BYTES: usize = std::mem::size_of::<Digest>() + 32;

/// The listed leaves' digests, by leaf index: in memory, moved to a file
/// when they grow past [`KEPT_IN_MEMORY`] or when memory for more is
/// refused (the map grows only with memory granted, never aborting).
enum Kept {
    Memory(HashMap<u64, Digest>),
    /// A record per leaf index, at `index * (1 + digest size)`: a byte that
    /// says whether the leaf is listed, then its digest. Unlisted records
    /// are holes that read as zeroes.
    File {
        file: File,
        record: u64,
    },
}

impl Kept {
    fn get(&mut self, index: u64) -> io::Result<Option<Digest>> {
        match self {
            Kept::Memory(digests) => Ok(digests.get(&index).copied()),
            Kept::File { file, record } => {
                let mut bytes = vec![0; *record as usize];
                let at = index
                    .checked_mul(*record)
                    .ok_or_else(|| io::Error::from(io::ErrorKind::FileTooLarge))?;
                read_record(file, &mut bytes, at)?;
                Ok((bytes[0] == 1)
                    .then(|| Digest::from_slice(&bytes[1..]))
                    .flatten())
            }
        }
    }

    fn put(&mut self, tree: &TreeParams, index: u64, digest: &Digest) -> io::Result<()> {
        if let Kept::Memory(digests) = self
            && ((digests.len() + 1) * KEPT_BYTES > KEPT_IN_MEMORY
                || !crate::memory::reserve_map(digests, 1))
        {
            let record = 1 + tree.digest_size() as u64;
            let mut moved = Kept::File {
                file: tempfile::tempfile()?,
                record,
            };
            for (&index, digest) in digests.iter() {
                moved.put(tree, index, digest)?;
            }
            *self = moved;
        }
        match self {
            Kept::Memory(digests) => {
                digests.insert(index, *digest);
                Ok(())
            }
            Kept::File { file, record } => {
                let mut bytes = Vec::with_capacity(*record as usize);
                bytes.push(1);
                bytes.extend_from_slice(digest.as_bytes());
                let at = index
                    .checked_mul(*record)
                    .ok_or_else(|| io::Error::from(io::ErrorKind::FileTooLarge))?;
                crate::os::write_all_at(file, &bytes, at)
            }
        }
    }

    /// The first leaf kept after `after`, up to `highest` (which is kept);
    /// `None` when it is too far to look for.
    fn next_kept(&mut self, after: u64, highest: u64) -> io::Result<Option<u64>> {
        match self {
            Kept::Memory(digests) => {
                Ok(digests.keys().copied().filter(|&index| index > after).min())
            }
            Kept::File { .. } => {
                // Looked for a little way only: a gap of millions of leaves
                // is reported open-ended rather than searched to its end.
                for index in (after + 1..highest).take(1 << 20) {
                    if self.get(index)?.is_some() {
                        return Ok(Some(index));
                    }
                }
                Ok((highest - after <= 1 << 20).then_some(highest))
            }
        }
    }
}

/// Reads the record at `at`; past the end of the file (a leaf not listed
/// yet) it reads zeros.
fn read_record(file: &File, bytes: &mut [u8], at: u64) -> io::Result<()> {
    let filled = crate::os::read_full_at(file, bytes, at)?;
    bytes[filled..].fill(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    thread_local! {
        /// A log's memory is refused past this many bytes, as if memory
        /// were short.
        pub(super) static REFUSED_ABOVE: Cell<usize> = const { Cell::new(usize::MAX) };
    }

    /// The digests a log gives back, in order, with their indices.
    fn logged(log: LeafLog) -> Vec<(u64, Vec<u8>)> {
        let mut each = Vec::new();
        log.for_each(|index, digest| {
            each.push((index, digest.to_vec()));
            Ok::<(), SpillError>(())
        })
        .unwrap();
        each
    }

    /// Whatever memory is refused, and whenever, a log gives every digest
    /// back in leaf order: those that went to its file before those it
    /// kept in memory, and memory moved to the file before anything that
    /// follows it there.
    #[test]
    fn refused_memory_keeps_the_leaves_in_order() {
        let digest = |index: u64| vec![index as u8; 4];
        // (Leaves handed over, a run at a time; memory refused from then on
        // past the limit.)
        for limit in [0, 4, 8, 12, 20, usize::MAX] {
            let mut log = LeafLog::new(4);
            let mut next = 5u64;
            for run in [2u64, 1, 3, 1, 2] {
                let digests: Vec<u8> = (next..next + run).flat_map(digest).collect();
                REFUSED_ABOVE.set(limit);
                log.leaves(next, &digests);
                REFUSED_ABOVE.set(usize::MAX);
                next += run;
            }
            let expected: Vec<(u64, Vec<u8>)> = (5..next).map(|i| (i, digest(i))).collect();
            assert_eq!(logged(log), expected, "memory refused past {limit} bytes");
        }
    }
}
