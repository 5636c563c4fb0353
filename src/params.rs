//! What a checksum depends on besides the bytes: the algorithm, the digest
//! size and the leaf size ([`TreeParams`]), and the one function that turns
//! them into the parameter block of a node of the tree ([`TreeParams::node`]).
//!
//! The tree has two levels. The input is cut into leaves of `leaf_size`
//! bytes; leaf `i` is hashed with node offset `i`, node depth 0 and the
//! last-node flag on the final leaf only. The root (offset 0, depth 1, last
//! node) hashes the leaf digests concatenated in leaf order. Every node shares
//! digest length `s`, no key, fanout 0 ("unlimited"), maximal depth 2, leaf
//! length `leaf_size`, inner length `s`, and zero salt and personalization.
//! Empty input has no leaves: its root hashes nothing.

use std::fmt;

/// Which BLAKE2 function every node of the tree uses.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Algorithm {
    /// BLAKE2b: 64-bit words, 128-byte blocks, digests of 1 to 64 bytes.
    #[default]
    Blake2b,
    /// BLAKE2s: 32-bit words, 64-byte blocks, digests of 1 to 32 bytes.
    Blake2s,
}

impl Algorithm {
    /// Both algorithms, BLAKE2b first.
    pub const ALL: [Algorithm; 2] = [Algorithm::Blake2b, Algorithm::Blake2s];

    /// The largest digest, in bytes (also the default digest size).
    pub const fn max_digest_size(self) -> usize {
        match self {
            Algorithm::Blake2b => 64,
            Algorithm::Blake2s => 32,
        }
    }

    /// The name checksum lines give it: `BLAKE2b` or `BLAKE2s` (the tag's
    /// grammar is `format::Tag`'s).
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Blake2b => "BLAKE2b",
            Algorithm::Blake2s => "BLAKE2s",
        }
    }

    /// How many leaves the parameter block can number: BLAKE2s has a 48-bit
    /// node offset, BLAKE2b a 64-bit one.
    pub const fn max_leaves(self) -> u64 {
        match self {
            Algorithm::Blake2b => u64::MAX,
            Algorithm::Blake2s => 1 << 48,
        }
    }
}

/// The lowercase name the command line uses: `blake2b` or `blake2s`.
/// (Checksum lines name it [`Algorithm::name`].)
impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name().to_ascii_lowercase())
    }
}

/// Why a set of tree parameters was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// The digest size is 0 or above the algorithm's maximum.
    #[error(
        "digest size {size} is out of range for {algorithm}: allowed 1 to {}",
        algorithm.max_digest_size()
    )]
    DigestSize {
        /// The algorithm asked for.
        algorithm: Algorithm,
        /// The digest size asked for, in bytes.
        size: usize,
    },
    /// The leaf size is 0 or above 2^32 - 1 (the leaf-length field is 32 bits).
    #[error("leaf size {0} is out of range: allowed 1 to {max}", max = TreeParams::MAX_LEAF_SIZE)]
    LeafSize(u64),
}

/// Everything the checksum depends on besides the bytes. (Read back from
/// its serde form only if valid, as [`TreeParams::new`] checks.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "(Algorithm, usize, u64)", into = "(Algorithm, usize, u64)")]
pub struct TreeParams {
    algorithm: Algorithm,
    digest_size: u8,
    leaf_size: u32,
}

impl From<TreeParams> for (Algorithm, usize, u64) {
    fn from(tree: TreeParams) -> Self {
        (tree.algorithm(), tree.digest_size(), tree.leaf_size())
    }
}

impl TryFrom<(Algorithm, usize, u64)> for TreeParams {
    type Error = ParamsError;

    fn try_from(
        (algorithm, size, leaf_size): (Algorithm, usize, u64),
    ) -> Result<Self, Self::Error> {
        TreeParams::new(algorithm, size, leaf_size)
    }
}

impl Default for TreeParams {
    /// BLAKE2b, 64-byte digests, 5 MiB leaves: the original tool's defaults.
    fn default() -> Self {
        TreeParams::new(Algorithm::Blake2b, 64, 5 << 20).expect("valid parameters")
    }
}

impl TreeParams {
    /// The largest leaf size, 2^32 - 1 bytes: the leaf-length field of the
    /// parameter block is 32 bits. The smallest is 1.
    pub const MAX_LEAF_SIZE: u64 = u32::MAX as u64;

    /// Whether `size` is a leaf size [`TreeParams::new`] takes.
    pub const fn leaf_size_allowed(size: u64) -> bool {
        size >= 1 && size <= Self::MAX_LEAF_SIZE
    }

    /// Checks the digest size (1 to the algorithm's maximum) and the leaf size
    /// (1 to 2^32 - 1).
    pub fn new(
        algorithm: Algorithm,
        digest_size: usize,
        leaf_size: u64,
    ) -> Result<Self, ParamsError> {
        if digest_size == 0 || digest_size > algorithm.max_digest_size() {
            return Err(ParamsError::DigestSize {
                algorithm,
                size: digest_size,
            });
        }
        if !Self::leaf_size_allowed(leaf_size) {
            return Err(ParamsError::LeafSize(leaf_size));
        }
        Ok(TreeParams {
            algorithm,
            digest_size: digest_size as u8,
            // In range: checked above.
            leaf_size: leaf_size as u32,
        })
    }

    /// The algorithm of every node.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The digest size in bytes, of the leaves and of the root.
    pub fn digest_size(&self) -> usize {
        usize::from(self.digest_size)
    }

    /// The leaf size in bytes.
    pub fn leaf_size(&self) -> u64 {
        u64::from(self.leaf_size)
    }

    /// The number of leaves an input of `len` bytes has: `ceil(len / L)`, so
    /// none for empty input. The one place this rule is written.
    pub fn leaf_count(&self, len: u64) -> u64 {
        len.div_ceil(self.leaf_size())
    }

    /// The bytes of leaf `index` of an input of `len` bytes (empty past the
    /// end).
    pub fn leaf_bytes(&self, index: u64, len: u64) -> std::ops::Range<u64> {
        let start = index.saturating_mul(self.leaf_size()).min(len);
        start..start.saturating_add(self.leaf_size()).min(len)
    }

    /// The bytes of leaves `leaves` of an input of `len` bytes, from the
    /// first one's start to the last one's end (cut at the end: empty past
    /// it).
    pub fn leaves_bytes(&self, leaves: &std::ops::Range<u64>, len: u64) -> std::ops::Range<u64> {
        let start = self.leaf_bytes(leaves.start, len).start;
        start..self.leaf_bytes(leaves.end, len).start.max(start)
    }

    /// The parameter block of a node of this tree. Every hash of the crate
    /// builds its nodes from this one function.
    pub fn node(&self, node: Node) -> NodeParams {
        let (offset, depth, last) = match node {
            Node::Leaf { offset, last } => (offset, 0, last),
            Node::Root => (0, 1, LastNode::Yes),
        };
        NodeParams {
            digest_length: self.digest_size,
            fanout: 0,
            max_depth: 2,
            leaf_length: self.leaf_size,
            node_offset: offset,
            node_depth: depth,
            inner_length: self.digest_size,
            last_node: last,
        }
    }
}

/// Which leaves of an input are hashed and listed, when not all of them:
/// what `--leaf-range` and `--part` select. Resolved against the input's
/// leaf count with [`Selection::leaves`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Leaves `A` to `B - 1`, cut at the input's last leaf.
    Range(std::ops::Range<u64>),
    /// The `part`-th (from 1) of `parts` runs of leaves.
    Part(Part),
}

impl Selection {
    /// The leaves selected of an input of `count` leaves: within `0..count`,
    /// empty if the selection lies wholly past the end.
    pub fn leaves(&self, count: u64) -> std::ops::Range<u64> {
        match self {
            Selection::Range(range) => range.start.min(count)..range.end.min(count),
            Selection::Part(part) => part.leaves(count),
        }
    }

    /// Whether the selection takes the input's first leaf whenever there is
    /// one: its listing of an empty input then says that it has no leaves,
    /// so that the parts of an empty input combine too.
    pub fn takes_the_start(&self) -> bool {
        match self {
            Selection::Range(range) => range.start == 0 && !range.is_empty(),
            Selection::Part(part) => part.part == 1,
        }
    }
}

impl From<std::ops::Range<u64>> for Selection {
    fn from(range: std::ops::Range<u64>) -> Self {
        Selection::Range(range)
    }
}

/// The `part`-th of `parts` near-equal runs of an input's leaves, counted
/// from 1 as GNU `split -n K/N` counts: run sizes differ by at most one leaf,
/// the longer runs first, so that when there are fewer leaves than parts the
/// parts past the leaf count are empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    part: u64,
    parts: u64,
}

impl Part {
    /// Part `part` of `parts`; `None` unless `1 <= part <= parts`.
    pub fn new(part: u64, parts: u64) -> Option<Part> {
        (1..=parts).contains(&part).then_some(Part { part, parts })
    }

    /// Which part this is, from 1.
    pub fn part(&self) -> u64 {
        self.part
    }

    /// How many parts there are.
    pub fn parts(&self) -> u64 {
        self.parts
    }

    /// This part's leaves of an input of `count` leaves: the first
    /// `count % parts` parts hold `count / parts + 1` leaves, the others
    /// `count / parts`.
    pub fn leaves(&self, count: u64) -> std::ops::Range<u64> {
        let (each, longer) = (count / self.parts, count % self.parts);
        let before = self.part - 1;
        // (before * each < parts * each <= count: no overflow.)
        let start = before * each + before.min(longer);
        start..start + each + u64::from(before < longer)
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.part, self.parts)
    }
}

/// A node of the tree: a leaf at an offset, or the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// Leaf number `offset` (from 0); `last` on the input's final leaf.
    #[allow(missing_docs)]
    Leaf { offset: u64, last: LastNode },
    /// The root, which hashes the leaf digests.
    Root,
}

/// The BLAKE2 last-node flag: whether a node is the last of its level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum LastNode {
    No,
    Yes,
}

/// The fields of a BLAKE2 parameter block that the tree sets (no key, zero
/// salt and personalization), named as the BLAKE2 specification names
/// them; see the module's notes for their values. BLAKE2s's node offset
/// has 48 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct NodeParams {
    pub digest_length: u8,
    pub fanout: u8,
    pub max_depth: u8,
    pub leaf_length: u32,
    pub node_offset: u64,
    pub node_depth: u8,
    pub inner_length: u8,
    pub last_node: LastNode,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of every count cover its leaves in order, once each, with
    /// sizes that differ by at most one, the longer first; a part is empty
    /// only past the leaf count.
    #[test]
    fn parts_cut_the_leaves_into_near_equal_runs() {
        for parts in (1..=12).chain([100, 1000]) {
            for count in (0..=40).chain([999, 1000, 1001, u64::MAX]) {
                let mut next = 0;
                let mut sizes = Vec::new();
                for part in 1..=parts {
                    let leaves = Part::new(part, parts).unwrap().leaves(count);
                    assert_eq!(leaves.start, next, "{part}/{parts} of {count}");
                    assert_eq!(leaves.is_empty(), part > count, "{part}/{parts} of {count}");
                    sizes.push(leaves.end - leaves.start);
                    next = leaves.end;
                }
                assert_eq!(next, count, "{parts} parts of {count}");
                assert!(
                    sizes
                        .windows(2)
                        .all(|pair| pair[0] == pair[1] || pair[0] == pair[1] + 1)
                );
            }
        }
        assert_eq!(Part::new(3, 8).unwrap().leaves(20), 6..9);
        assert_eq!(Part::new(1, 1).unwrap().leaves(7), 0..7);
        assert_eq!(Part::new(0, 3), None);
        assert_eq!(Part::new(4, 3), None);
        assert_eq!(Part::new(1, 0), None);
        assert_eq!(Part::new(3, 8).unwrap().to_string(), "3/8");
    }

    #[test]
    fn selections_are_cut_at_the_leaf_count() {
        let range = Selection::from(3..10);
        assert_eq!(range.leaves(20), 3..10);
        assert_eq!(range.leaves(5), 3..5);
        assert_eq!(range.leaves(2), 2..2);
        assert!(Selection::from(0..1).takes_the_start());
        assert!(!Selection::from(0..0).takes_the_start());
        assert!(!Selection::from(1..2).takes_the_start());
        assert!(Selection::Part(Part::new(1, 4).unwrap()).takes_the_start());
        assert!(!Selection::Part(Part::new(2, 4).unwrap()).takes_the_start());
        let tree = TreeParams::new(Algorithm::Blake2b, 64, 10).unwrap();
        assert_eq!(tree.leaves_bytes(&(1..3), 25), 10..25);
        assert_eq!(tree.leaves_bytes(&(1..2), 25), 10..20);
        assert_eq!(tree.leaves_bytes(&(3..9), 25), 25..25);
        assert_eq!(tree.leaves_bytes(&(0..0), 0), 0..0);
        assert_eq!(tree.leaves_bytes(&(0..u64::MAX), u64::MAX), 0..u64::MAX);
    }
}
