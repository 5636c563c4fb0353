//! Leaf digests beyond the checksum: [`LeafLog`] keeps an input's leaf
//! digests for a listing (`--leaves`), and [`Combiner`] turns the leaf lines
//! of partial listings back into the file's checksum (`--combine`).
//!
//! The engine hands every leaf digest to a [`LeafSink`] in leaf order; a
//! [`LeafLog`] keeps up to 16 MiB of them in memory and spills the rest
//! (tiny leaves on a big input) to an anonymous temporary file, read back
//! when the listing is written.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use crate::digest::Digest;
use crate::engine::{LeafSink, Root, Sink};
use crate::format::Tag;
use crate::format::leaf::LeafLine;
use crate::params::TreeParams;

/// Digest bytes kept in memory before spilling to a temporary file.
const IN_MEMORY: usize = 16 << 20;

/// The digests of consecutive leaves, as a [`LeafSink`] is given them.
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

    fn spill_memory(&mut self) -> io::Result<()> {
        let file = match &mut self.spill {
            Some(file) => file,
            None => self.spill.insert(tempfile::tempfile()?),
        };
        file.write_all(&self.memory)?;
        self.memory.clear();
        Ok(())
    }

    /// Calls `each(index, digest)` for every leaf in order. Fails if the
    /// temporary file could not be written or read back.
    pub fn for_each(
        mut self,
        mut each: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let mut index = self.first;
        if let Some(mut file) = self.spill.take() {
            file.seek(SeekFrom::Start(0))?;
            let mut reader = BufReader::with_capacity(1 << 20, file);
            let mut digest = vec![0; self.digest_size];
            let spilled = self.count - (self.memory.len() / self.digest_size) as u64;
            for _ in 0..spilled {
                reader.read_exact(&mut digest)?;
                each(index, &digest)?;
                index += 1;
            }
        }
        for digest in self.memory.chunks(self.digest_size) {
            each(index, digest)?;
            index += 1;
        }
        Ok(())
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
        self.memory.extend_from_slice(digests);
        if self.memory.len() >= IN_MEMORY
            && let Err(error) = self.spill_memory()
        {
            self.error = Some(error);
        }
    }
}

/// Why partial listings do not combine into one checksum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CombineError {
    /// Two lines give different algorithms, digest sizes or leaf sizes.
    Parameters(TreeParams, TreeParams),
    /// Two lines name different files.
    Names(Vec<u8>, Vec<u8>),
    /// Two lines give different file lengths.
    Lengths(u64, u64),
    /// A leaf is listed twice with different digests.
    Clash(u64),
    /// Leaves `missing` are not listed; the file has `leaves` leaves.
    Missing {
        /// The first missing leaf and the next listed one (or the count).
        missing: std::ops::Range<u64>,
        /// How many leaves the file has.
        leaves: u64,
    },
    /// No leaf line was given at all.
    NoLeafLines,
}

impl fmt::Display for CombineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
                String::from_utf8_lossy(first),
                String::from_utf8_lossy(other)
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
            CombineError::Missing { missing, leaves } => write!(
                f,
                "leaves {}..{} are missing (the file has {leaves} leaves)",
                missing.start, missing.end
            ),
            CombineError::NoLeafLines => f.write_str("no leaf lines found"),
        }
    }
}

impl std::error::Error for CombineError {}

/// Gathers the leaf lines of partial listings of one file and computes the
/// file's checksum once every leaf is there.
///
/// ```
/// use std::io::Write;
/// use bt2sum::format::leaf::{parse_leaf_line, push_leaf_line};
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
/// leaves.for_each(|index, leaf| {
///     push_leaf_line(&mut listing, &tree, b"f", data.len() as u64, index, leaf);
///     Ok(())
/// })?;
/// assert!(listing.starts_with(b"BLAKE2b-32 leaf=0 offset=0 length=4 total=10 tree=4 (f) = "));
///
/// // Its lines, in any order, give the file's checksum back.
/// let mut combiner = Combiner::default();
/// for line in listing.split(|&byte| byte == b'\n').filter(|line| !line.is_empty()).rev() {
///     combiner.add(parse_leaf_line(line)?)?;
/// }
/// let (_, name, combined) = combiner.finish()?;
/// assert_eq!(name, b"f");
/// assert_eq!(combined, digest);
/// assert_eq!(combined, hash(&tree, data));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Combiner {
    /// The file's tree parameters, name and length, from the first line.
    file: Option<(TreeParams, Vec<u8>, u64)>,
    /// The digests of the leaves listed so far, by index: only what the
    /// listings hold, whatever length their lines claim.
    digests: BTreeMap<u64, Digest>,
}

impl Combiner {
    /// Adds one listing line; `Err` names the clash.
    pub fn add(&mut self, line: LeafLine) -> Result<(), CombineError> {
        match &self.file {
            None => self.file = Some((line.tree, line.name.clone(), line.total)),
            Some((tree, name, total)) => {
                if *tree != line.tree {
                    return Err(CombineError::Parameters(*tree, line.tree));
                }
                if *name != line.name {
                    return Err(CombineError::Names(name.clone(), line.name));
                }
                if *total != line.total {
                    return Err(CombineError::Lengths(*total, line.total));
                }
            }
        }
        let Some(leaf) = line.leaf else {
            return Ok(());
        };
        match self.digests.entry(leaf.index) {
            Entry::Occupied(known) if *known.get() != leaf.digest => {
                Err(CombineError::Clash(leaf.index))
            }
            Entry::Occupied(_) => Ok(()),
            Entry::Vacant(slot) => {
                slot.insert(leaf.digest);
                Ok(())
            }
        }
    }

    /// The file's tree, name and checksum, or the first gap.
    pub fn finish(self) -> Result<(TreeParams, Vec<u8>, Digest), CombineError> {
        let (tree, name, total) = self.file.ok_or(CombineError::NoLeafLines)?;
        let leaves = tree.leaf_count(total);
        let mut root = Root::new(&tree, 0);
        let mut sink = Sink::default();
        // Every listed index is below `leaves` (the line parser checks it),
        // so the leaves are complete when the n-th key is n throughout.
        for (expected, (&index, digest)) in (0u64..).zip(&self.digests) {
            if index != expected {
                return Err(CombineError::Missing {
                    missing: expected..index,
                    leaves,
                });
            }
            root.feed(digest.as_bytes(), tree.digest_size(), &mut sink);
        }
        let listed = self.digests.len() as u64;
        if listed != leaves {
            return Err(CombineError::Missing {
                missing: listed..leaves,
                leaves,
            });
        }
        Ok((tree, name, root.finalize()))
    }
}
