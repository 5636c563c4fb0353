//! The compression kernels. The `blake2b_simd` and `blake2s_simd` crates'
//! `many::hash_many` hashes leaves on every machine (4 BLAKE2b or 8
//! BLAKE2s at once with AVX2); on an x86_64 CPU with AVX-512F our own
//! kernels (`avx512.rs`: 8 and 16 lanes) do. [`HASH_KERNEL_ENV`] set to
//! `crate` keeps the crates. Both take leaves of any inputs at once, of
//! any lengths, each with its node offset and last-node flag. Nothing here
//! schedules.

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

/// The kernel that hashes leaves in this process.
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
        let jobs: Vec<LeafJob<'_>> = data
            .chunks(leaf)
            .zip(first..)
            .map(|(bytes, index)| LeafJob {
                bytes,
                index,
                last: false,
            })
            .collect();
        hash_leaves(self, tree, &jobs, out, &mut |_, _| {});
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

/// The crate's `many::hash_many` over the jobs, 16 at a time.
macro_rules! hash_many {
    ($krate:ident, $tree:expr, $jobs:expr, $out:expr) => {{
        use $krate::many::{HashManyJob, hash_many};
        let size = $tree.digest_size();
        for (jobs, out) in $jobs.chunks(16).zip($out.chunks_mut(16 * size)) {
            let params: Vec<$krate::Params> = jobs
                .iter()
                .map(|job| {
                    let last = if job.last {
                        LastNode::Yes
                    } else {
                        LastNode::No
                    };
                    crate_params!(
                        $krate,
                        $tree,
                        Node::Leaf {
                            offset: job.index,
                            last
                        }
                    )
                })
                .collect();
            let mut many: Vec<HashManyJob<'_>> = jobs
                .iter()
                .zip(&params)
                .map(|(job, params)| HashManyJob::new(params, job.bytes))
                .collect();
            hash_many(many.iter_mut());
            for (job, out) in many.iter().zip(out.chunks_mut(size)) {
                out.copy_from_slice(job.to_hash().as_bytes());
            }
        }
    }};
}

/// One leaf to hash: its bytes (at most a leaf), its index (the node
/// offset) and whether it is its input's last node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeafJob<'a> {
    pub bytes: &'a [u8],
    pub index: u64,
    pub last: bool,
}

/// Hashes leaves of `tree` with `kernel` into `out`, a digest a job in
/// order; `release(job, bytes)` is told of a job's bytes once hashed (the
/// crates say it only at the end), so that their pages can be handed back.
pub(crate) fn hash_leaves(
    kernel: LeafKernel,
    tree: &TreeParams,
    jobs: &[LeafJob<'_>],
    out: &mut [u8],
    release: &mut dyn FnMut(usize, Range<usize>),
) {
    // Fewer leaves than the crates' lane group take less time there: the
    // AVX-512 kernels compress every lane, busy or not.
    let crates_lanes = LeafKernel::Crates.lanes(tree.algorithm());
    #[cfg(target_arch = "x86_64")]
    if kernel == LeafKernel::Avx512 && jobs.len() > crates_lanes {
        return match tree.algorithm() {
            Algorithm::Blake2b => avx512::hash_jobs_b(tree, jobs, out, release),
            Algorithm::Blake2s => avx512::hash_jobs_s(tree, jobs, out, release),
        };
    }
    let _ = (kernel, crates_lanes);
    match tree.algorithm() {
        Algorithm::Blake2b => hash_many!(blake2b_simd, tree, jobs, out),
        Algorithm::Blake2s => hash_many!(blake2s_simd, tree, jobs, out),
    }
    for (job, leaf) in jobs.iter().enumerate() {
        release(job, 0..leaf.bytes.len());
    }
}

/// One node being hashed a piece at a time: the root, or a leaf too big to
/// hash at once.
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

    /// Sets the last-node flag (a leaf whose end was not known when it
    /// began).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: reproducible cases.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Jobs of every kind at once (lengths around the block sizes and up to
    /// several chunks, node offsets up to BLAKE2s's 2^48, last and not, more
    /// jobs than lanes so that lanes are refilled): each kernel's digests
    /// equal the crate's incremental API, and every byte is released once.
    #[test]
    fn every_kernel_equals_the_crates_incremental_api() {
        let kernels = [LeafKernel::Crates, LeafKernel::Avx512];
        if !LeafKernel::Avx512.available() {
            crate::skip::skip(
                "every_kernel_equals_the_crates_incremental_api",
                "this CPU lacks AVX-512F, so only the crates run here",
            );
        }
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let data: Vec<u8> = (0..(5 << 20)).map(|_| rng.next() as u8).collect();
        let mut cases = 0;
        for algorithm in Algorithm::ALL {
            let lengths = [
                1,
                63,
                64,
                65,
                127,
                128,
                129,
                256,
                1000,
                4096,
                70_000,
                (2 << 20) + 3,
            ];
            for round in 0..24 {
                let leaf = lengths[round % lengths.len()].max(1 + rng.below(5000) as usize);
                let size = 1 + rng.below(algorithm.max_digest_size() as u64) as usize;
                let tree = TreeParams::new(algorithm, size, leaf as u64).unwrap();
                let count = 1 + rng.below(40) as usize;
                let jobs = random_jobs(&mut rng, &data, leaf, count);
                let expected = incrementally(&tree, &jobs);
                for kernel in kernels.into_iter().filter(|kernel| kernel.available()) {
                    let mut out = vec![0; count * size];
                    let mut released: Vec<Vec<Range<usize>>> = vec![Vec::new(); count];
                    hash_leaves(kernel, &tree, &jobs, &mut out, &mut |job, range| {
                        released[job].push(range)
                    });
                    assert_eq!(out, expected, "{kernel:?}, {tree:?}, {count} jobs");
                    for (job, ranges) in jobs.iter().zip(released) {
                        assert_released_once(job, ranges);
                    }
                    cases += 1;
                }
            }
        }
        assert!(cases >= 48, "{cases} cases");
    }

    /// `count` jobs of 1 to `leaf` bytes of `data`, at node offsets small,
    /// near 2^32 and near 2^48, last or not.
    fn random_jobs<'a>(
        rng: &mut Rng,
        data: &'a [u8],
        leaf: usize,
        count: usize,
    ) -> Vec<LeafJob<'a>> {
        (0..count)
            .map(|_| {
                let len = 1 + rng.below(leaf as u64) as usize;
                let start = rng.below((data.len() - len) as u64) as usize;
                let index = match rng.below(3) {
                    0 => rng.below(10),
                    1 => (1 << 32) - 2 + rng.below(4),
                    _ => (1 << 48) - 1 - rng.below(4),
                };
                LeafJob {
                    bytes: &data[start..start + len],
                    index,
                    last: rng.below(2) == 0,
                }
            })
            .collect()
    }

    /// The jobs' digests by the crates' incremental API, one after another.
    fn incrementally(tree: &TreeParams, jobs: &[LeafJob<'_>]) -> Vec<u8> {
        jobs.iter()
            .flat_map(|job| {
                let last = if job.last {
                    LastNode::Yes
                } else {
                    LastNode::No
                };
                let leaf = Node::Leaf {
                    offset: job.index,
                    last,
                };
                let mut state = NodeState::new(tree, leaf);
                state.update(job.bytes);
                state.finalize().as_bytes().to_vec()
            })
            .collect()
    }

    /// Every byte of `job` was released, once.
    fn assert_released_once(job: &LeafJob<'_>, mut ranges: Vec<Range<usize>>) {
        ranges.sort_by_key(|range| range.start);
        let mut end = 0;
        for range in ranges.into_iter().filter(|range| !range.is_empty()) {
            assert_eq!(range.start, end, "released twice or not at all");
            end = range.end;
        }
        assert_eq!(end, job.bytes.len(), "not all released");
    }
}
