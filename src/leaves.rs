//! Leaf digests beyond the checksum: [`LeafLog`] keeps an input's leaf
//! digests for a listing (`--leaves`), [`ListedLeaves`] checks them against
//! a listing's (`--check`), and [`Combiner`] turns the leaf lines of partial
//! listings back into the file's checksum (`--combine`). The log and the
//! combiner keep a bounded amount in memory and the rest in an anonymous
//! temporary file; a check holds what its caller chose to list at once.

use std::io;

use crate::digest::Digest;
use crate::engine::{LeafSink, Root};
use crate::format::Tag;
use crate::format::leaf::LeafLine;
use crate::format::name::Name;
use crate::params::TreeParams;
use crate::spill::Spill;

/// Leaf digests that could not be kept in their temporary file.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot keep leaf digests in a temporary file in {}: {}",
    Name::of_path_lossy(std::env::temp_dir().as_os_str()).shown(),
    crate::error::plain_message(.0)
)]
pub struct SpillError(#[source] io::Error);

/// The digests of consecutive leaves, as a [`LeafSink`] is given them,
/// kept in a [`Spill`] store.
pub struct LeafLog {
    digest_size: usize,
    /// The first leaf's index, once one is logged.
    first: Option<u64>,
    digests: Spill<Digest>,
    error: Option<io::Error>,
}

impl LeafLog {
    /// An empty log of `digest_size`-byte digests.
    pub fn new(digest_size: usize) -> Self {
        LeafLog {
            digest_size,
            first: None,
            digests: Spill::default(),
            error: None,
        }
    }

    /// Why the digests could not all be kept, if they could not (told once).
    pub fn error(&mut self) -> Option<SpillError> {
        self.error.take().map(SpillError)
    }

    /// Each logged leaf's index and digest, in order; after an error, what
    /// follows is not to be read.
    pub fn iter(&mut self) -> impl Iterator<Item = Result<(u64, Digest), SpillError>> + '_ {
        let unkept = self.error.take().map(Err);
        let digests = unkept.into_iter().chain(self.digests.iter());
        (digests.zip(self.first.unwrap_or(0)..))
            .map(|(digest, index)| Ok((index, digest.map_err(SpillError)?)))
    }
}

impl LeafSink for LeafLog {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        debug_assert!(digests.len().is_multiple_of(self.digest_size));
        self.first.get_or_insert(first);
        for digest in digests.chunks(self.digest_size) {
            let digest = Digest::from_slice(digest).expect("a tree's digest size");
            if self.error.is_none()
                && let Err(error) = self.digests.push(&digest)
            {
                self.error = Some(error);
            }
        }
    }
}

/// Listed digests of some of an input's leaves (of its tree's digest
/// size), in increasing leaf order, each compared (in constant time) with
/// the leaf's as hashing delivers it: as a job's [`LeafSink`], it checks a
/// listing in the pass that computes the checksum.
///
/// ```
/// use std::io::Write;
/// use bt2sum::leaves::ListedLeaves;
/// use bt2sum::{Algorithm, LastNode, TreeHasher, TreeParams, leaf_digest};
///
/// // 10 bytes in 4-byte leaves: three leaves, leaf 1 is `byte`.
/// let tree = TreeParams::new(Algorithm::Blake2s, 32, 4)?;
/// let second = leaf_digest(&tree, 1, LastNode::No, b"byte");
/// // Leaf 1 is listed with its digest, leaf 2 with leaf 1's.
/// let mut listed = ListedLeaves::default();
/// assert!(listed.push(1, second));
/// assert!(listed.push(2, second));
/// assert!(!listed.push(2, second), "indices must increase");
/// assert_eq!(listed.indices(), Some(1..3));
///
/// let mut hasher = TreeHasher::with_leaves(&tree, listed);
/// hasher.write_all(b"ten bytes!")?;
/// let (_, listed) = hasher.finalize_with_leaves()?;
/// let matched: Vec<_> = listed.iter().map(|leaf| (leaf.index, leaf.matched)).collect();
/// assert_eq!(matched, [(1, true), (2, false)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct ListedLeaves {
    listed: Vec<ListedLeaf>,
    /// The first listed leaf not yet delivered.
    next: usize,
}

/// A listed leaf: its index, its listed digest, and whether the leaf
/// hashed matched it (`false` until it is hashed).
#[allow(missing_docs)]
pub struct ListedLeaf {
    pub index: u64,
    pub digest: Digest,
    pub matched: bool,
}

/// The listed leaves, in leaf order.
impl std::ops::Deref for ListedLeaves {
    type Target = [ListedLeaf];

    fn deref(&self) -> &[ListedLeaf] {
        &self.listed
    }
}

impl ListedLeaves {
    /// Lists leaf `index` with `digest`; `false` (and nothing listed)
    /// unless `index` is above every leaf listed so far and `digest` has
    /// their size.
    pub fn push(&mut self, index: u64, digest: Digest) -> bool {
        let size = digest.as_bytes().len();
        let follows =
            |last: &ListedLeaf| last.index < index && last.digest.as_bytes().len() == size;
        if !self.listed.last().is_none_or(follows) {
            return false;
        }
        self.listed.push(ListedLeaf {
            index,
            digest,
            matched: false,
        });
        true
    }

    /// The range of leaves to hash to check them all.
    pub fn indices(&self) -> Option<std::ops::Range<u64>> {
        Some(self.listed.first()?.index..self.listed.last()?.index + 1)
    }

    /// Keeps only the listed leaves `keep` says yes to.
    pub fn retain(&mut self, keep: impl FnMut(&ListedLeaf) -> bool) {
        self.listed.retain(keep);
        self.next = 0;
    }
}

impl LeafSink for ListedLeaves {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        let Some(size) = self.listed.first().map(|leaf| leaf.digest.as_bytes().len()) else {
            return;
        };
        let count = (digests.len() / size) as u64;
        while let Some(listed) = self.listed.get_mut(self.next) {
            if listed.index >= first + count {
                break;
            }
            if let Some(offset) = listed.index.checked_sub(first) {
                let start = offset as usize * size;
                listed.matched = listed.digest == digests[start..start + size];
            }
            self.next += 1;
        }
    }
}

/// Why partial listings do not combine into one checksum.
#[derive(Debug, thiserror::Error)]
pub enum CombineError {
    /// Two lines give different algorithms, digest sizes or leaf sizes.
    #[error(
        "listings disagree on the parameters: {} with {}-byte leaves, and {} with {}-byte \
         leaves",
        Tag::of(.0),
        .0.leaf_size(),
        Tag::of(.1),
        .1.leaf_size()
    )]
    Parameters(TreeParams, TreeParams),
    /// Two lines name different files (`None`: standard input, nameless).
    #[error("listings name different files: {} and {}", shown(.0), shown(.1))]
    Names(Option<Vec<u8>>, Option<Vec<u8>>),
    /// Two lines give different file lengths.
    #[error("listings disagree on the file length: {0} and {1}")]
    Lengths(u64, u64),
    /// Leaf `index` is listed twice with different digests, the second
    /// time `at` ([`Combiner::add`]).
    #[error("leaf {index} is listed twice with different digests")]
    #[allow(missing_docs)]
    Clash { index: u64, at: Place },
    /// Leaves `first..next` are not listed (`next`: the next listed one,
    /// or the count).
    #[error("leaves {first}..{next} are missing (the file has {leaves} leaves)")]
    #[allow(missing_docs)]
    Missing { first: u64, next: u64, leaves: u64 },
    /// No leaf line was given at all.
    #[error("no leaf lines found")]
    NoLeafLines,
    /// The digests could not be kept in a temporary file.
    #[error(transparent)]
    Spill(#[from] SpillError),
}

fn shown(name: &Option<Vec<u8>>) -> String {
    name.as_deref()
        .map_or("standard input".into(), |name| Name::listed(name).shown())
}

/// Gathers the leaf lines of partial listings of one file and computes the
/// file's checksum once every leaf is there: every listed leaf is kept in
/// a sorted [`Spill`] store and read back by index at the end (a leaf
/// listed twice is compared with itself, a jump in the indices is a gap).
///
/// ```
/// use bt2sum::format::leaf::{Leaf, LeafLine};
/// use bt2sum::leaves::Combiner;
/// use bt2sum::{Algorithm, LastNode, TreeParams, hash, leaf_digest};
///
/// // 10 bytes in 4-byte leaves: three leaves, listed in any order.
/// let tree = TreeParams::new(Algorithm::Blake2b, 32, 4)?;
/// let leaves: Vec<&[u8]> = b"ten bytes!".chunks(4).collect();
/// let mut combiner = Combiner::default();
/// for (number, index) in [2, 0, 1].into_iter().enumerate() {
///     let last = if index == 2 { LastNode::Yes } else { LastNode::No };
///     let digest = leaf_digest(&tree, index, last, leaves[index as usize]);
///     let leaf = Some(Leaf { index, digest });
///     let line = LeafLine { tree, name: None, total: 10, leaf, span: None };
///     combiner.add(line, (0, number as u64))?;
/// }
/// assert_eq!(combiner.finish()?.digest, hash(&tree, b"ten bytes!"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Combiner {
    /// From the first line.
    file: Option<(TreeParams, Option<Vec<u8>>, u64)>,
    leaves: Spill<(u64, Place, Digest)>,
}

/// Where a line given to a [`Combiner`] is, as its caller numbers them
/// (which listing, which line).
pub type Place = (u32, u64);

impl Default for Combiner {
    fn default() -> Self {
        Combiner {
            file: None,
            leaves: Spill::sorted(),
        }
    }
}

impl Combiner {
    /// Adds one listing line, found at `at`.
    pub fn add(&mut self, line: LeafLine, at: Place) -> Result<(), CombineError> {
        let (tree, name, total) = self
            .file
            .get_or_insert_with(|| (line.tree, line.name.clone(), line.total));
        if *tree != line.tree {
            return Err(CombineError::Parameters(*tree, line.tree));
        }
        if *name != line.name {
            return Err(CombineError::Names(name.clone(), line.name));
        }
        if *total != line.total {
            return Err(CombineError::Lengths(*total, line.total));
        }
        if let Some(leaf) = line.leaf {
            (self.leaves.push(&(leaf.index, at, leaf.digest))).map_err(SpillError)?;
        }
        Ok(())
    }

    /// The file's checksum; or the first leaf listed twice with two digests
    /// (in the order added), else the first gap.
    pub fn finish(self) -> Result<Combined, CombineError> {
        let (tree, name, total) = self.file.ok_or(CombineError::NoLeafLines)?;
        let leaves = tree.leaf_count(total);
        let mut root = Root::new(&tree);
        let (mut next, mut last) = (0, None);
        let (mut clash, mut gap) = (None::<(u64, Place)>, None);
        for leaf in self.leaves.into_sorted().map_err(SpillError)? {
            let (index, at, digest) = leaf.map_err(SpillError)?;
            if index < next {
                // (Sorted: the leaf just fed, listed again.)
                if last != Some(digest) && clash.is_none_or(|(_, first)| first >= at) {
                    clash = Some((index, at));
                }
                continue;
            }
            if index > next {
                gap.get_or_insert((next, index));
            }
            root.feed(digest.as_bytes());
            (next, last) = (index + 1, Some(digest));
        }
        if next < leaves {
            gap.get_or_insert((next, leaves));
        }
        if let Some((index, at)) = clash {
            return Err(CombineError::Clash { index, at });
        }
        if let Some((first, next)) = gap {
            return Err(CombineError::Missing {
                first,
                next,
                leaves,
            });
        }
        Ok(Combined {
            tree,
            name,
            total,
            digest: root.finalize(),
        })
    }
}

/// A file's checksum computed from its listed leaves, and what its lines
/// said of it.
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub struct Combined {
    pub tree: TreeParams,
    /// Unescaped; `None` for nameless standard input.
    pub name: Option<Vec<u8>>,
    pub total: u64,
    pub digest: Digest,
}
