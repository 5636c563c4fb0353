//! The compression kernels. The `blake2b_simd` and `blake2s_simd` crates,
//! whose `many::hash_many` hashes 4 (BLAKE2b) or 8 (BLAKE2s) inputs at once
//! with AVX2, hash everything on every machine; on an x86_64 CPU with
//! AVX-512F, our own kernels (`avx512.rs`: 8 and 16 lanes) hash the whole
//! leaves that are not the last node. [`HASH_KERNEL_ENV`] set to `crate`
//! keeps the crates for everything. Everything here is per algorithm;
//! nothing here schedules.

use std::ops::Range;
use std::sync::OnceLock;

use crate::digest::Digest;
use crate::params::{Algorithm, LastNode, Node, TreeParams};

#[cfg(target_arch = "x86_64")]
mod avx512;

/// The environment variable that chooses the leaf kernel: `crate` keeps
/// the SIMD crates for every leaf (to compare, or to rule our kernels out);
/// unset or anything else, the fastest kernel this CPU runs.
pub const HASH_KERNEL_ENV: &str = "BT2SUM_HASH_KERNEL";

/// The kernel that hashes whole leaves in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafKernel {
    /// The `blake2b_simd` and `blake2s_simd` crates (AVX2, SSE4.1 or
    /// portable, as they detect).
    Crates,
    /// bt2sum's own AVX-512F kernels: 8 BLAKE2b or 16 BLAKE2s leaves at
    /// once.
    Avx512,
}

impl LeafKernel {
    /// The kernel used in this process: read once from [`HASH_KERNEL_ENV`]
    /// and what the CPU has.
    pub fn active() -> LeafKernel {
        static ACTIVE: OnceLock<LeafKernel> = OnceLock::new();
        *ACTIVE.get_or_init(|| {
            let crates = std::env::var_os(HASH_KERNEL_ENV).is_some_and(|value| value == "crate");
            if crates || !avx512_available() {
                LeafKernel::Crates
            } else {
                LeafKernel::Avx512
            }
        })
    }

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        match self {
            LeafKernel::Crates => true,
            LeafKernel::Avx512 => avx512_available(),
        }
    }

    /// Hashes `data`, whole leaves of `tree` none of which is the last node,
    /// numbered from `first`, into `out` (one digest a leaf), on this
    /// thread: for the benchmarks that compare kernels in one process.
    ///
    /// # Panics
    ///
    /// If the CPU does not run this kernel, or `data` or `out` have other
    /// lengths.
    #[doc(hidden)]
    pub fn hash_whole_leaves(self, tree: &TreeParams, first: u64, data: &[u8], out: &mut [u8]) {
        assert!(
            self.available(),
            "this CPU does not run the {} kernel",
            self.name()
        );
        let leaf = tree.leaf_size() as usize;
        assert!(data.len().is_multiple_of(leaf), "whole leaves");
        assert_eq!(out.len(), data.len() / leaf * tree.digest_size());
        hash_leaf_run(self, tree, first, data, None, out, &mut |_| {});
    }

    /// Its name: `crate` or `avx512`.
    pub const fn name(self) -> &'static str {
        match self {
            LeafKernel::Crates => "crate",
            LeafKernel::Avx512 => "avx512",
        }
    }

    /// How many leaves of `algorithm` it hashes at once on this CPU.
    pub(crate) fn lanes(self, algorithm: Algorithm) -> usize {
        match (self, algorithm) {
            (LeafKernel::Crates, Algorithm::Blake2b) => blake2b_simd::many::degree(),
            (LeafKernel::Crates, Algorithm::Blake2s) => blake2s_simd::many::degree(),
            (LeafKernel::Avx512, Algorithm::Blake2b) => LANES_B,
            (LeafKernel::Avx512, Algorithm::Blake2s) => LANES_S,
        }
    }
}

/// BLAKE2b leaves the AVX-512 kernel hashes at once (64-bit words in a
/// 512-bit register).
const LANES_B: usize = 8;
/// BLAKE2s leaves it hashes at once (32-bit words).
const LANES_S: usize = 16;

/// The AVX-512 kernel for `algorithm` and how many lanes it has.
#[cfg(target_arch = "x86_64")]
fn avx512_group(algorithm: Algorithm) -> (usize, avx512::HashLeaves) {
    match algorithm {
        Algorithm::Blake2b => (LANES_B, avx512::hash_leaves_b),
        Algorithm::Blake2s => (LANES_S, avx512::hash_leaves_s),
    }
}

/// Whether this CPU runs the AVX-512 kernels.
fn avx512_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return avx512::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// The crate's `Params` for a node of `tree`: [`TreeParams::node`] spelled
/// in either crate (their builders have the same methods).
macro_rules! crate_params {
    ($krate:ident, $tree:expr, $node:expr) => {{
        let node = $tree.node($node);
        let mut params = $krate::Params::new();
        params
            .hash_length(usize::from(node.digest_length))
            .fanout(node.fanout)
            .max_depth(node.max_depth)
            .max_leaf_length(node.leaf_length)
            .inner_hash_length(usize::from(node.inner_length))
            .node_offset(node.node_offset)
            .node_depth(node.node_depth)
            .last_node(node.last_node == LastNode::Yes);
        params
    }};
}

/// Hashes consecutive whole leaves (the last may be short) into `out`,
/// `digest_size` bytes each, a SIMD group at a time.
macro_rules! hash_leaf_run {
    ($krate:ident, $tree:expr, $first:expr, $data:expr, $last_leaf:expr, $out:expr) => {{
        use $krate::many::{HashManyJob, hash_many};
        let tree: &TreeParams = $tree;
        let leaf = tree.leaf_size() as usize;
        let size = tree.digest_size();
        let base = crate_params!(
            $krate,
            tree,
            Node::Leaf {
                offset: 0,
                last: LastNode::No
            }
        );
        // 16 leaves a call: a multiple of every SIMD degree, and a small array.
        // (Saturating: 16 leaves of 256 MiB or more pass a 32-bit usize;
        // the data then holds fewer than 16.)
        for (group, (chunk, out)) in $data
            .chunks(leaf.saturating_mul(16))
            .zip($out.chunks_mut(16 * size))
            .enumerate()
        {
            let mut params: [$krate::Params; 16] = std::array::from_fn(|_| base.clone());
            let first = $first + 16 * group as u64;
            let mut jobs: Vec<HashManyJob<'_>> = chunk
                .chunks(leaf)
                .zip(params.iter_mut())
                .enumerate()
                .map(|(i, (bytes, params))| {
                    let offset = first + i as u64;
                    params
                        .node_offset(offset)
                        .last_node(Some(offset) == $last_leaf);
                    HashManyJob::new(params, bytes)
                })
                .collect();
            hash_many(jobs.iter_mut());
            for (job, out) in jobs.iter().zip(out.chunks_mut(size)) {
                out.copy_from_slice(job.to_hash().as_bytes());
            }
        }
    }};
}

/// Hashes the leaves in `data` (whole leaves, but the final one may be
/// short), numbered from `first`, into `out`, with `kernel` (which the CPU
/// must run); the leaf numbered `last_leaf`, if any, gets the last-node
/// flag. `release` is told of each range of `data` once it is hashed.
pub(crate) fn hash_leaf_run(
    kernel: LeafKernel,
    tree: &TreeParams,
    first: u64,
    data: &[u8],
    last_leaf: Option<u64>,
    out: &mut [u8],
    release: &mut dyn FnMut(Range<usize>),
) {
    // Adjacent ranges are handed back as one: a page is given back only if
    // it lies wholly in a range, and lane groups of small leaves share
    // pages with their neighbours.
    let mut pending: Option<Range<usize>> = None;
    let mut coalesce = |range: Range<usize>| match &mut pending {
        Some(held) if held.end == range.start => held.end = range.end,
        _ => {
            if let Some(held) = pending.replace(range) {
                release(held);
            }
        }
    };
    let (leaf, size) = (tree.leaf_size() as usize, tree.digest_size());
    let taken = match kernel {
        LeafKernel::Crates => 0,
        LeafKernel::Avx512 => avx512_share(tree, first, data.len(), last_leaf),
    };
    let (data_avx512, data_rest) = data.split_at(taken * leaf);
    let (out_avx512, out_rest) = out.split_at_mut(taken * size);
    if taken > 0 {
        hash_groups_avx512(tree, first, data_avx512, out_avx512, &mut coalesce);
    }
    let first_rest = first + taken as u64;
    match tree.algorithm() {
        Algorithm::Blake2b => {
            hash_leaf_run!(
                blake2b_simd,
                tree,
                first_rest,
                data_rest,
                last_leaf,
                out_rest
            )
        }
        Algorithm::Blake2s => {
            hash_leaf_run!(
                blake2s_simd,
                tree,
                first_rest,
                data_rest,
                last_leaf,
                out_rest
            )
        }
    }
    coalesce(taken * leaf..data.len());
    if let Some(held) = pending {
        release(held);
    }
}

/// How many of the leading leaves of a run (`length` bytes of leaves
/// numbered from `first`) the AVX-512 kernels hash: the whole leaves that
/// are not the last node, a lane group at a time. The final group may fill
/// fewer lanes: from 2 leaves on that is still faster than the crates, but
/// a lone leaf is left to them (their one-lane loop beats one lane of 8 or
/// 16).
fn avx512_share(tree: &TreeParams, first: u64, length: usize, last_leaf: Option<u64>) -> usize {
    if !cfg!(target_arch = "x86_64") {
        // No AVX-512 kernel on this architecture: the crates hash every leaf.
        return 0;
    }
    let mut whole = length / tree.leaf_size() as usize;
    if let Some(last) = last_leaf.and_then(|last| last.checked_sub(first)) {
        whole = whole.min(usize::try_from(last).unwrap_or(usize::MAX));
    }
    if whole % LeafKernel::Avx512.lanes(tree.algorithm()) == 1 {
        whole -= 1;
    }
    whole
}

/// Hashes `data`, whole leaves numbered from `first`, none the last node,
/// with the AVX-512 kernels, a lane group at a time.
fn hash_groups_avx512(
    tree: &TreeParams,
    first: u64,
    data: &[u8],
    out: &mut [u8],
    release: &mut dyn FnMut(Range<usize>),
) {
    #[cfg(target_arch = "x86_64")]
    {
        let (leaf, size) = (tree.leaf_size() as usize, tree.digest_size());
        let (lanes, hash_group) = avx512_group(tree.algorithm());
        let groups = data
            .chunks(lanes.saturating_mul(leaf))
            .zip(out.chunks_mut(lanes * size));
        for (group, (data, out)) in groups.enumerate() {
            let start = group * lanes * leaf;
            let first = first + (group * lanes) as u64;
            hash_group(tree, first, data, out, avx512::CHUNK, &mut |range| {
                release(start + range.start..start + range.end)
            });
        }
    }
    // No AVX-512 kernel on this architecture: given no leaf (see
    // `avx512_share`).
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (tree, first, data, out, release);
    }
}

/// The checksums of inputs of at most one leaf each, all of one algorithm:
/// their leaves hashed side by side in the SIMD lanes, then their roots
/// likewise. Empty inputs have no leaf; their root hashes nothing.
macro_rules! hash_single_leaf_inputs {
    ($krate:ident, $inputs:expr, $out:expr) => {{
        use $krate::many::{HashManyJob, hash_many};
        let only_leaf = Node::Leaf {
            offset: 0,
            last: LastNode::Yes,
        };
        let params: Vec<($krate::Params, $krate::Params)> = $inputs
            .iter()
            .map(|(tree, _)| {
                (
                    crate_params!($krate, tree, only_leaf),
                    crate_params!($krate, tree, Node::Root),
                )
            })
            .collect();
        let mut leaves: Vec<HashManyJob<'_>> = $inputs
            .iter()
            .zip(&params)
            .filter(|((_, bytes), _)| !bytes.is_empty())
            .map(|((_, bytes), (leaf, _))| HashManyJob::new(leaf, bytes))
            .collect();
        hash_many(leaves.iter_mut());
        let leaf_digests: Vec<_> = leaves.iter().map(HashManyJob::to_hash).collect();
        let mut leaf_digests = leaf_digests.iter();
        let mut roots: Vec<HashManyJob<'_>> = $inputs
            .iter()
            .zip(&params)
            .map(|((_, bytes), (_, root))| {
                let input: &[u8] = if bytes.is_empty() {
                    &[]
                } else {
                    leaf_digests
                        .next()
                        .expect("one leaf a non-empty input")
                        .as_bytes()
                };
                HashManyJob::new(root, input)
            })
            .collect();
        hash_many(roots.iter_mut());
        $out.extend(roots.iter().map(|job| {
            Digest::from_slice(job.to_hash().as_bytes()).expect("a digest of 1 to 64 bytes")
        }));
    }};
}

/// The checksums of several inputs of at most one leaf each (small files),
/// each with its own tree: hashed one by one, a 4 KiB file would use one
/// SIMD lane of four (BLAKE2b) or eight (BLAKE2s); side by side they fill
/// them.
pub(crate) fn hash_single_leaf_inputs(inputs: &[(TreeParams, &[u8])]) -> Vec<Digest> {
    debug_assert!(
        inputs
            .iter()
            .all(|(tree, bytes)| bytes.len() as u64 <= tree.leaf_size())
    );
    let mut digests = Vec::with_capacity(inputs.len());
    let first = inputs.first().map(|(tree, _)| tree.algorithm());
    if inputs
        .iter()
        .all(|(tree, _)| Some(tree.algorithm()) == first)
    {
        match first {
            Some(Algorithm::Blake2b) => hash_single_leaf_inputs!(blake2b_simd, inputs, digests),
            Some(Algorithm::Blake2s) => hash_single_leaf_inputs!(blake2s_simd, inputs, digests),
            None => {}
        }
        return digests;
    }
    // Mixed algorithms (a check list naming both): one lane group each.
    let mut by_algorithm = [Vec::new(), Vec::new()];
    for (slot, (tree, bytes)) in inputs.iter().enumerate() {
        by_algorithm[tree.algorithm() as usize].push((slot, (*tree, *bytes)));
    }
    let mut slots = vec![None; inputs.len()];
    for group in &by_algorithm {
        let group_inputs: Vec<_> = group.iter().map(|(_, input)| *input).collect();
        for ((slot, _), digest) in group.iter().zip(hash_single_leaf_inputs(&group_inputs)) {
            slots[*slot] = Some(digest);
        }
    }
    digests.extend(slots.into_iter().map(|d| d.expect("every input hashed")));
    digests
}

/// An incremental BLAKE2 state for one node, of either algorithm.
#[derive(Clone)]
pub(crate) enum NodeState {
    Blake2b(blake2b_simd::State),
    Blake2s(blake2s_simd::State),
}

impl NodeState {
    pub(crate) fn new(tree: &TreeParams, node: Node) -> Self {
        match tree.algorithm() {
            Algorithm::Blake2b => {
                NodeState::Blake2b(crate_params!(blake2b_simd, tree, node).to_state())
            }
            Algorithm::Blake2s => {
                NodeState::Blake2s(crate_params!(blake2s_simd, tree, node).to_state())
            }
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        match self {
            NodeState::Blake2b(state) => drop(state.update(bytes)),
            NodeState::Blake2s(state) => drop(state.update(bytes)),
        }
    }

    pub(crate) fn set_last_node(&mut self, last: LastNode) {
        match self {
            NodeState::Blake2b(state) => drop(state.set_last_node(last == LastNode::Yes)),
            NodeState::Blake2s(state) => drop(state.set_last_node(last == LastNode::Yes)),
        }
    }

    pub(crate) fn finalize(&self) -> Digest {
        let digest = match self {
            NodeState::Blake2b(state) => Digest::from_slice(state.finalize().as_bytes()),
            NodeState::Blake2s(state) => Digest::from_slice(state.finalize().as_bytes()),
        };
        digest.expect("a digest of 1 to 64 bytes")
    }
}

/// One leaf whose bytes arrive in pieces (big leaves).
pub(crate) struct LeafState {
    state: NodeState,
    pub(crate) filled: u64,
}

impl LeafState {
    /// Leaf number `offset`; whether it is the last is told at the end.
    pub(crate) fn new(tree: &TreeParams, offset: u64) -> Self {
        let node = Node::Leaf {
            offset,
            last: LastNode::No,
        };
        LeafState {
            state: NodeState::new(tree, node),
            filled: 0,
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.state.update(bytes);
        self.filled += bytes.len() as u64;
    }

    pub(crate) fn finalize(mut self, last: LastNode) -> Digest {
        self.state.set_last_node(last);
        self.state.finalize()
    }
}

/// The AVX-512 kernels against the crates. They run where the CPU has
/// AVX-512F and say they are skipped elsewhere; `tests/integration/
/// vectors.rs` runs the hashlib vectors on both kernels.
#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// xorshift64*: reproducible cases, named by their seed and index.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        /// A number in `range`.
        fn within(&mut self, range: std::ops::RangeInclusive<u64>) -> u64 {
            range.start() + self.next() % (range.end() - range.start() + 1)
        }

        fn bytes(&mut self, length: usize) -> Vec<u8> {
            (0..length).map(|_| self.next() as u8).collect()
        }
    }

    /// The random source of an AVX-512 kernel test, from `seed`; `None`
    /// (and the test is said to be skipped) where the CPU lacks AVX-512F.
    fn avx512_rng(test: &str, seed: u64) -> Option<Rng> {
        if !avx512_available() {
            crate::skip::skip(test, "this CPU lacks AVX-512F, so only the crates run here");
            return None;
        }
        Some(Rng(seed))
    }

    /// One leaf by the crate's incremental API: the oracle.
    fn crate_leaf(tree: &TreeParams, offset: u64, bytes: &[u8], last: LastNode) -> Vec<u8> {
        let mut state = NodeState::new(tree, Node::Leaf { offset, last });
        state.update(bytes);
        state.finalize().as_bytes().to_vec()
    }

    /// Asserts that `ranges` cover `0..length` exactly once.
    fn assert_tiles(mut ranges: Vec<Range<usize>>, length: usize, what: &str) {
        ranges.retain(|range| !range.is_empty());
        ranges.sort_by_key(|range| range.start);
        let mut end = 0;
        for range in ranges {
            assert_eq!(range.start, end, "released twice or not at all: {what}");
            end = range.end;
        }
        assert_eq!(end, length, "not all released: {what}");
    }

    fn trees(algorithm: Algorithm, leaf: usize) -> impl Iterator<Item = TreeParams> {
        let sizes = 1..=algorithm.max_digest_size();
        sizes.map(move |size| TreeParams::new(algorithm, size, leaf as u64).unwrap())
    }

    /// Every lane count, every digest size, leaf lengths around the block
    /// sizes, chunks of one and two blocks, node offsets across 2^32 and up
    /// to BLAKE2s's 2^48 limit: each digest equal to the crate's, every
    /// byte released once.
    #[test]
    fn lane_groups_equal_the_crates() {
        let Some(mut rng) = avx512_rng("lane_groups_equal_the_crates", 0x5eed_1234_abcd_0001)
        else {
            return;
        };
        let mut cases = 0;
        for algorithm in Algorithm::ALL {
            let (lanes, block, hash_group): (usize, usize, avx512::HashLeaves) = match algorithm {
                Algorithm::Blake2b => (LANES_B, 128, avx512::hash_leaves_b),
                Algorithm::Blake2s => (LANES_S, 64, avx512::hash_leaves_s),
            };
            let firsts = [
                0,
                (1 << 32) - 3,
                (1 << 40) + 5,
                (1 << 48) - lanes as u64 - 1,
            ];
            for leaf in [1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000] {
                let data = rng.bytes(lanes * leaf);
                for tree in trees(algorithm, leaf) {
                    let size = tree.digest_size();
                    for count in 1..=lanes {
                        let first = firsts[cases % firsts.len()];
                        let chunk = block * (1 + cases % 2);
                        let data = &data[..count * leaf];
                        let mut out = vec![0; count * size];
                        let mut released = Vec::new();
                        hash_group(&tree, first, data, &mut out, chunk, &mut |range| {
                            released.push(range)
                        });
                        let what = format!("{tree:?}, {count} leaves from {first}");
                        for (k, (bytes, digest)) in
                            data.chunks(leaf).zip(out.chunks(size)).enumerate()
                        {
                            let expected = crate_leaf(&tree, first + k as u64, bytes, LastNode::No);
                            assert_eq!(digest, expected, "lane {k}: {what}");
                        }
                        assert_tiles(released, data.len(), &what);
                        cases += 1;
                    }
                }
            }
        }
        // 12 leaf lengths x (64 sizes x 8 lanes + 32 sizes x 16 lanes).
        assert_eq!(cases, 12 * (64 * 8 + 32 * 16));
    }

    /// Leaves longer than a chunk, hashed in the production chunks.
    #[test]
    fn leaves_longer_than_a_chunk_equal_the_crates() {
        let Some(mut rng) = avx512_rng(
            "leaves_longer_than_a_chunk_equal_the_crates",
            0x5eed_1234_abcd_0002,
        ) else {
            return;
        };
        let chunk = avx512::CHUNK as u64;
        // (tree, lanes, kernel, hand-backs per lane): BLAKE2b's whole blocks
        // span 2 chunks and 128 bytes, BLAKE2s's 2 chunks exactly; a chunk is
        // handed back when the next one is hashed, the last one with the
        // final block.
        let cases: [(TreeParams, usize, avx512::HashLeaves, usize); 2] = [
            (
                TreeParams::new(Algorithm::Blake2b, 64, 2 * chunk + 129).unwrap(),
                LANES_B,
                avx512::hash_leaves_b,
                3,
            ),
            (
                TreeParams::new(Algorithm::Blake2s, 32, 2 * chunk + 64).unwrap(),
                LANES_S,
                avx512::hash_leaves_s,
                2,
            ),
        ];
        for (tree, lanes, hash_group, hand_backs) in cases {
            let (leaf, size) = (tree.leaf_size() as usize, tree.digest_size());
            let data = rng.bytes(lanes * leaf);
            let mut out = vec![0; lanes * size];
            let mut released = Vec::new();
            let first = 7 << 33;
            hash_group(&tree, first, &data, &mut out, avx512::CHUNK, &mut |range| {
                released.push(range)
            });
            for (k, (bytes, digest)) in data.chunks(leaf).zip(out.chunks(size)).enumerate() {
                let expected = crate_leaf(&tree, first + k as u64, bytes, LastNode::No);
                assert_eq!(digest, expected, "{tree:?} lane {k}");
            }
            assert_eq!(released.len(), hand_backs * lanes, "{tree:?}");
            assert_tiles(released, data.len(), &format!("{tree:?}"));
        }
        // Leaves of less than a chunk: one range for the whole group, so
        // that the pages that small neighbouring leaves share go back too.
        for (algorithm, hash_group) in [
            (
                Algorithm::Blake2b,
                avx512::hash_leaves_b as avx512::HashLeaves,
            ),
            (Algorithm::Blake2s, avx512::hash_leaves_s),
        ] {
            let tree = TreeParams::new(algorithm, 32, 1000).unwrap();
            let data = rng.bytes(5 * 1000);
            let mut out = vec![0; 5 * 32];
            let mut released = Vec::new();
            hash_group(&tree, 0, &data, &mut out, avx512::CHUNK, &mut |range| {
                released.push(range)
            });
            assert_eq!(
                released,
                vec![Range {
                    start: 0,
                    end: 5000
                }],
                "{tree:?}"
            );
        }
    }

    /// Runs of leaves as the engine hands them over, with random
    /// parameters: both kernels give the same digests, including for a
    /// short final leaf and the last node, which the crates keep.
    #[test]
    fn leaf_runs_are_equal_on_both_kernels() {
        let Some(mut rng) =
            avx512_rng("leaf_runs_are_equal_on_both_kernels", 0x5eed_1234_abcd_0003)
        else {
            return;
        };
        for case in 0..3000 {
            let algorithm = Algorithm::ALL[case % 2];
            let size = rng.within(1..=algorithm.max_digest_size() as u64) as usize;
            let leaf = match case % 3 {
                0 => rng.within(1..=300),
                1 => 64 * rng.within(1..=40),
                _ => rng.within(1..=5000),
            };
            let tree = TreeParams::new(algorithm, size, leaf).unwrap();
            let lanes = LeafKernel::Avx512.lanes(algorithm) as u64;
            let count = rng.within(1..=3 * lanes + 2);
            let first = match algorithm {
                Algorithm::Blake2b => rng.within(0..=u64::MAX / 2),
                Algorithm::Blake2s => rng.within(0..=(1 << 47)),
            };
            let ends = rng.next().is_multiple_of(2);
            let final_length = if ends { rng.within(1..=leaf) } else { leaf };
            let length = ((count - 1) * leaf + final_length) as usize;
            let data = rng.bytes(length);
            let last_leaf = ends.then_some(first + count - 1);
            let what = format!(
                "case {case}: {tree:?}, {count} leaves from {first}, last {last_leaf:?}, {length} bytes"
            );
            let mut outs = [LeafKernel::Avx512, LeafKernel::Crates].map(|kernel| {
                let mut out = vec![0; count as usize * size];
                let mut released = Vec::new();
                hash_leaf_run(
                    kernel,
                    &tree,
                    first,
                    &data,
                    last_leaf,
                    &mut out,
                    &mut |range| released.push(range),
                );
                assert_tiles(released, length, &what);
                out
            });
            assert_eq!(outs[0], outs[1], "{what}");
            // And the crates' many API against their incremental one.
            let final_leaf = data.chunks(leaf as usize).last().unwrap();
            let last = if ends { LastNode::Yes } else { LastNode::No };
            let expected = crate_leaf(&tree, first + count - 1, final_leaf, last);
            assert_eq!(outs[1].split_off(outs[1].len() - size), expected, "{what}");
        }
    }

    /// Node offsets past the algorithm's range are refused by every kernel
    /// (as the crates refuse them), never cut to fit: BLAKE2s's are 48
    /// bits, and leaf 2^48 would otherwise be hashed as leaf 0.
    #[test]
    fn offsets_past_the_range_are_refused() {
        let tree = TreeParams::new(Algorithm::Blake2s, 32, 64).unwrap();
        let data = vec![7u8; 2 * 64];
        let mut refused = 0;
        for kernel in [LeafKernel::Crates, LeafKernel::Avx512] {
            if !kernel.available() {
                continue;
            }
            for first in [1u64 << 48, (1 << 48) - 1, u64::MAX] {
                let hashed = std::panic::catch_unwind(|| {
                    let mut out = vec![0; 2 * 32];
                    kernel.hash_whole_leaves(&tree, first, &data, &mut out);
                });
                assert!(hashed.is_err(), "{kernel:?} took leaves from {first}");
                refused += 1;
            }
            // The last offsets in range are taken.
            let mut out = vec![0; 2 * 32];
            kernel.hash_whole_leaves(&tree, (1 << 48) - 2, &data, &mut out);
        }
        assert!(refused >= 3);
    }
}
