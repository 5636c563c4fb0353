//! The BLAKE2 tree hash in "unlimited fanout" mode, as s3git uses it.
//!
//! The input is cut into leaves of `leaf_size` bytes. Leaf `i` is hashed with
//! node offset `i`, node depth 0, and the last-node flag on the final leaf
//! only; the root (offset 0, depth 1, last node) hashes the leaf digests
//! concatenated in leaf order. Every node shares digest length `s`, fanout 0,
//! maximal depth 2, leaf length `leaf_size` and inner length `s`. Empty input
//! has no leaves: its root hashes nothing.
//!
//! Leaves are hashed in batches on the current rayon pool with the crates'
//! multi-input SIMD API (`many::hash_many`), and each batch's digests are fed
//! to the root as soon as the batch is done, so memory stays bounded: a batch
//! holds at most [`BATCH_BYTES`] of input and [`BATCH_MAX_LEAVES`] digests.
//! Leaves larger than [`BATCH_BYTES`] / 5 are hashed incrementally instead.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::mpsc;

use rayon::prelude::*;

use crate::leaves::LeafLog;

/// The input bytes a batch of whole leaves holds at most.
///
/// With the default 5 MiB leaves that is 8 leaves: two SIMD groups of four,
/// one for each core of a small machine.
pub const BATCH_BYTES: usize = 40 << 20;

/// The leaves a batch holds at most, so that tiny leaves (`-t 1`) keep the
/// digest buffer small (4 MiB of 64-byte digests).
pub const BATCH_MAX_LEAVES: usize = 1 << 16;

/// The most bytes a mapped window of whole leaves spans. A window holds a
/// batch, or two SIMD groups of leaves per thread if that is more; its pages
/// are given back as they are hashed, so its size costs address space only.
pub const WINDOW_MAX_BYTES: usize = 256 << 20;

/// Leaves above this size are streamed through an incremental state instead
/// of being buffered whole.
pub const BIG_LEAF: u64 = 8 << 20;

/// A task on the pool hashes about this many bytes (at least one SIMD group).
const TASK_BYTES: usize = 256 << 10;

/// Which BLAKE2 function every node of the tree uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
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

    /// How many inputs the multi-input API hashes at once on this CPU (4 or
    /// 8 with AVX2).
    pub(crate) fn simd_degree(self) -> usize {
        match self {
            Algorithm::Blake2b => blake2b_simd::many::degree(),
            Algorithm::Blake2s => blake2s_simd::many::degree(),
        }
    }

    /// The compression block size, in bytes.
    pub const fn block_size(self) -> usize {
        match self {
            Algorithm::Blake2b => 128,
            Algorithm::Blake2s => 64,
        }
    }

    /// The name used in checksum lines: `BLAKE2b` or `BLAKE2s`.
    pub const fn tag(self) -> &'static str {
        match self {
            Algorithm::Blake2b => "BLAKE2b",
            Algorithm::Blake2s => "BLAKE2s",
        }
    }

    /// The number of leaves the parameter block can number: BLAKE2s has a
    /// 48-bit node offset, BLAKE2b a 64-bit one.
    const fn max_leaves(self) -> u64 {
        match self {
            Algorithm::Blake2b => u64::MAX,
            Algorithm::Blake2s => 1 << 48,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Blake2b => "blake2b",
            Algorithm::Blake2s => "blake2s",
        })
    }
}

/// Why a set of tree parameters was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamsError {
    /// The digest size is 0 or above the algorithm's maximum.
    DigestSize {
        /// The algorithm asked for.
        algorithm: Algorithm,
        /// The digest size asked for, in bytes.
        size: usize,
    },
    /// The leaf size is 0 or above 2^32 - 1 (the leaf-length field is 32 bits).
    LeafSize(u64),
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::DigestSize { algorithm, size } => write!(
                f,
                "digest size {size} is out of range for {algorithm}: allowed 1 to {}",
                algorithm.max_digest_size()
            ),
            ParamsError::LeafSize(size) => write!(
                f,
                "leaf size {size} is out of range: allowed 1 to {}",
                u32::MAX
            ),
        }
    }
}

impl std::error::Error for ParamsError {}

/// Everything the checksum depends on besides the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeParams {
    algorithm: Algorithm,
    digest_size: u8,
    leaf_size: u32,
}

impl Default for TreeParams {
    /// BLAKE2b, 64-byte digests, 5 MiB leaves: the original tool's defaults.
    fn default() -> Self {
        TreeParams {
            algorithm: Algorithm::Blake2b,
            digest_size: 64,
            leaf_size: Self::DEFAULT_LEAF_SIZE,
        }
    }
}

impl TreeParams {
    /// The default leaf size, 5 MiB.
    pub const DEFAULT_LEAF_SIZE: u32 = 5 << 20;

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
        let leaf_size = u32::try_from(leaf_size)
            .ok()
            .filter(|&size| size > 0)
            .ok_or(ParamsError::LeafSize(leaf_size))?;
        Ok(TreeParams {
            algorithm,
            digest_size: digest_size as u8,
            leaf_size,
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
    /// none for empty input.
    pub fn leaf_count(&self, len: u64) -> u64 {
        len.div_ceil(self.leaf_size())
    }

    /// The leaves one batch holds: as many whole leaves as fit in
    /// [`BATCH_BYTES`], at least one, at most [`BATCH_MAX_LEAVES`].
    pub(crate) fn batch_leaves(&self) -> usize {
        (BATCH_BYTES / self.leaf_size as usize).clamp(1, BATCH_MAX_LEAVES)
    }

    /// The leaves a mapped window holds: a batch, or more if that is what
    /// fills a SIMD group on every thread twice over (BLAKE2s hashes 8 leaves
    /// at once), up to [`WINDOW_MAX_BYTES`]. Mapped pages are given back as
    /// they are hashed, so a window's size costs address space, not memory,
    /// and fewer, larger windows mean fewer hand-offs and unmappings.
    pub(crate) fn window_leaves(&self) -> usize {
        let leaf = self.leaf_size as usize;
        let lanes = 2 * rayon::current_num_threads() * self.algorithm.simd_degree();
        let most = (WINDOW_MAX_BYTES / leaf).max(1);
        self.batch_leaves()
            .max(lanes.min(most))
            .min(BATCH_MAX_LEAVES)
    }

    /// Whether leaves are too big to buffer several at once.
    pub(crate) fn has_big_leaves(&self) -> bool {
        self.leaf_size() > BIG_LEAF
    }

    /// The error for an input with more leaves than the node offset can count
    /// (BLAKE2s with tiny leaves on an input of hundreds of TiB).
    pub(crate) fn check_leaf_index(&self, index: u64) -> io::Result<()> {
        if index < self.algorithm.max_leaves() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "input too long: {} numbers at most {} leaves; use a larger leaf size",
                    self.algorithm.tag(),
                    self.algorithm.max_leaves()
                ),
            ))
        }
    }
}

/// A checksum: the root digest, 1 to 64 bytes.
///
/// Equality is decided by [`crate::ct::eq`], in constant time.
#[derive(Clone, Copy)]
pub struct Digest {
    bytes: [u8; 64],
    len: u8,
}

impl Digest {
    fn from_bytes(bytes: &[u8]) -> Self {
        let mut digest = Digest {
            bytes: [0; 64],
            len: bytes.len() as u8,
        };
        digest.bytes[..bytes.len()].copy_from_slice(bytes);
        digest
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The digest as lowercase hex, as checksum lines print it.
    pub fn to_hex(&self) -> String {
        hex::encode(self.as_bytes())
    }
}

impl PartialEq for Digest {
    fn eq(&self, other: &Self) -> bool {
        crate::ct::eq(self.as_bytes(), other.as_bytes())
    }
}

impl Eq for Digest {}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Whether a leaf is the last one of its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LastNode {
    No,
    Yes,
}

/// Whether a batch of leaves ends the input, so that its final leaf gets the
/// last-node flag (and may be shorter than a whole leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndOfInput {
    No,
    Yes,
}

/// How the leaves of a batch are spread over the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spread {
    /// Over every thread: memory and mapped files, whose bytes are all there.
    AllThreads,
    /// Over all threads but one: a stream's reader needs a core of its own
    /// (with two cores, hashers on both slow the reads more than they gain).
    SpareOneForReader,
}

/// A node of the tree: a leaf at an offset, or the root.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node {
    Leaf { offset: u64, last: LastNode },
    Root,
}

/// The one place that fills in the BLAKE2 parameter block of a node, for
/// either crate (their `Params` builders have the same methods).
macro_rules! node_params {
    ($krate:ident, $tree:expr, $node:expr) => {{
        let tree: &TreeParams = $tree;
        let (offset, depth, last) = match $node {
            Node::Leaf { offset, last } => (offset, 0, last == LastNode::Yes),
            Node::Root => (0, 1, true),
        };
        let mut params = $krate::Params::new();
        params
            .hash_length(tree.digest_size())
            .fanout(0)
            .max_depth(2)
            .max_leaf_length(tree.leaf_size)
            .inner_hash_length(tree.digest_size())
            .node_offset(offset)
            .node_depth(depth)
            .last_node(last);
        params
    }};
}

/// Hashes consecutive leaves into `out` (`digest_size` bytes each) with the
/// crate's multi-input API, a SIMD group of leaves at a time.
macro_rules! hash_leaf_run {
    ($krate:ident, $tree:expr, $first:expr, $data:expr, $last_leaf:expr, $out:expr) => {{
        use $krate::many::{HashManyJob, hash_many};
        let tree: &TreeParams = $tree;
        let leaf = tree.leaf_size as usize;
        let size = tree.digest_size();
        let base = node_params!(
            $krate,
            tree,
            Node::Leaf {
                offset: 0,
                last: LastNode::No
            }
        );
        // 16 leaves a call: a multiple of every SIMD degree, and a small array.
        for (group, (chunk, out)) in $data
            .chunks(16 * leaf)
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

/// The checksums of inputs of at most one leaf each, their leaves hashed side
/// by side in the SIMD lanes, then their roots likewise.
macro_rules! hash_single_leaf_inputs {
    ($krate:ident, $tree:expr, $inputs:expr) => {{
        use $krate::many::{HashManyJob, hash_many};
        let tree: &TreeParams = $tree;
        let only_leaf = Node::Leaf {
            offset: 0,
            last: LastNode::Yes,
        };
        let leaf_params = node_params!($krate, tree, only_leaf);
        let root_params = node_params!($krate, tree, Node::Root);
        let mut leaves: Vec<HashManyJob<'_>> = $inputs
            .iter()
            .filter(|input| !input.is_empty())
            .map(|input| HashManyJob::new(&leaf_params, input))
            .collect();
        hash_many(leaves.iter_mut());
        let leaf_digests: Vec<_> = leaves.iter().map(HashManyJob::to_hash).collect();
        let mut roots: Vec<HashManyJob<'_>> = leaf_digests
            .iter()
            .map(|digest| HashManyJob::new(&root_params, digest.as_bytes()))
            .collect();
        hash_many(roots.iter_mut());
        let mut roots = roots
            .iter()
            .map(|job| Digest::from_bytes(job.to_hash().as_bytes()));
        let empty = Digest::from_bytes(root_params.to_state().finalize().as_bytes());
        $inputs
            .iter()
            .map(|input| match input.is_empty() {
                true => empty,
                false => roots.next().expect("one root a non-empty input"),
            })
            .collect()
    }};
}

/// The checksums of several inputs of at most one leaf each (small files):
/// hashed one by one, a 4 KiB file would use one SIMD lane of four (BLAKE2b)
/// or eight (BLAKE2s); side by side they fill them.
pub(crate) fn hash_single_leaf_inputs(tree: &TreeParams, inputs: &[&[u8]]) -> Vec<Digest> {
    debug_assert!(
        inputs
            .iter()
            .all(|input| input.len() as u64 <= tree.leaf_size())
    );
    match tree.algorithm {
        Algorithm::Blake2b => hash_single_leaf_inputs!(blake2b_simd, tree, inputs),
        Algorithm::Blake2s => hash_single_leaf_inputs!(blake2s_simd, tree, inputs),
    }
}

/// Hashes the whole leaves in `data`, numbered from `first`, into `out`
/// (resized to one digest a leaf), in parallel on the current rayon pool.
///
/// Unless the batch ends the input, `data` must hold whole leaves; if it does,
/// its final leaf may be short and gets the last-node flag.
pub(crate) fn hash_leaves(
    tree: &TreeParams,
    first: u64,
    data: &[u8],
    end: EndOfInput,
    out: &mut Vec<u8>,
    spread: Spread,
    release: &(dyn Fn(Range<usize>) + Sync),
) {
    let leaf = tree.leaf_size as usize;
    let size = tree.digest_size();
    let count = data.len().div_ceil(leaf);
    debug_assert!(end == EndOfInput::Yes || data.len().is_multiple_of(leaf));
    let last_leaf = match end {
        EndOfInput::Yes if count > 0 => Some(first + count as u64 - 1),
        _ => None,
    };
    out.clear();
    out.resize(count * size, 0);

    // Enough leaves a task to amortise the hand-off and fill a SIMD group,
    // but no more than an even share, so that few big leaves still spread
    // over every thread.
    let degree = tree.algorithm.simd_degree();
    let threads = match spread {
        Spread::AllThreads => rayon::current_num_threads(),
        Spread::SpareOneForReader => rayon::current_num_threads().saturating_sub(1).max(1),
    };
    let even_share = count.div_ceil(threads).max(1);
    let per_task = (TASK_BYTES / leaf)
        .next_multiple_of(degree)
        .max(degree)
        .min(even_share);
    let run = |task: usize, data: &[u8], out: &mut [u8]| {
        let first = first + (task * per_task) as u64;
        match tree.algorithm {
            Algorithm::Blake2b => hash_leaf_run!(blake2b_simd, tree, first, data, last_leaf, out),
            Algorithm::Blake2s => hash_leaf_run!(blake2s_simd, tree, first, data, last_leaf, out),
        }
        let start = task * per_task * leaf;
        release(start..start + data.len());
    };
    if count <= per_task {
        // One task: no hand-off to the pool (small inputs, tail batches).
        run(0, data, out);
    } else {
        data.par_chunks(per_task * leaf)
            .zip(out.par_chunks_mut(per_task * size))
            .enumerate()
            .for_each(|(task, (data, out))| run(task, data, out));
    }
}

/// The bytes of a batch of leaves, as the pipeline hands them to the pool.
pub(crate) trait LeafBytes: AsRef<[u8]> + Send + Sync + 'static {
    /// Called once the bytes in `range` have been hashed and will not be read
    /// again: a mapping may give their pages back.
    fn release(&self, _range: Range<usize>) {}
}

/// An incremental BLAKE2 state for one node, of either algorithm.
#[derive(Clone)]
pub(crate) enum NodeState {
    Blake2b(blake2b_simd::State),
    Blake2s(blake2s_simd::State),
}

impl NodeState {
    pub(crate) fn new(tree: &TreeParams, node: Node) -> Self {
        match tree.algorithm {
            Algorithm::Blake2b => {
                NodeState::Blake2b(node_params!(blake2b_simd, tree, node).to_state())
            }
            Algorithm::Blake2s => {
                NodeState::Blake2s(node_params!(blake2s_simd, tree, node).to_state())
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
        match self {
            NodeState::Blake2b(state) => Digest::from_bytes(state.finalize().as_bytes()),
            NodeState::Blake2s(state) => Digest::from_bytes(state.finalize().as_bytes()),
        }
    }
}

/// Hashes one leaf whose bytes arrive in pieces.
pub(crate) struct LeafState {
    state: NodeState,
    filled: u64,
}

impl LeafState {
    pub(crate) fn new(tree: &TreeParams, offset: u64) -> Self {
        LeafState {
            state: NodeState::new(
                tree,
                Node::Leaf {
                    offset,
                    last: LastNode::No,
                },
            ),
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

/// A batch of leaves handed to the pool, and the digests it gives back.
struct Finished<B> {
    data: B,
    digests: Vec<u8>,
}

/// The root node fed in leaf order, with up to `depth` batches of leaves
/// being hashed on the pool while the caller prepares the next one.
///
/// A finished batch's digests are fed to the root only after the next batch
/// has been handed to the pool, so that hashing the root (which dominates
/// with tiny leaves: 64 bytes of root input per leaf) overlaps the leaves.
pub(crate) struct Pipeline<B> {
    tree: TreeParams,
    root: NodeState,
    /// The batches on the pool, oldest first.
    in_flight: VecDeque<mpsc::Receiver<Finished<B>>>,
    /// How many batches may be in flight at once.
    depth: usize,
    /// How each batch is spread over the pool.
    spread: Spread,
    /// Digests of a finished batch, not yet fed to the root.
    pending: Vec<u8>,
    /// A digest buffer to reuse.
    spare: Vec<u8>,
    /// Every leaf digest, when a listing is wanted.
    log: Option<LeafLog>,
}

impl<B: LeafBytes> Pipeline<B> {
    /// A pipeline with at most `depth` batches in flight.
    pub(crate) fn new(tree: &TreeParams, depth: usize, spread: Spread) -> Self {
        Pipeline {
            tree: *tree,
            root: NodeState::new(tree, Node::Root),
            in_flight: VecDeque::with_capacity(depth),
            depth,
            spread,
            pending: Vec::new(),
            spare: Vec::new(),
            log: None,
        }
    }

    /// Also keeps every leaf digest, the first being leaf `first`.
    pub(crate) fn keep_leaves(&mut self, first: u64) {
        self.log = Some(LeafLog::new(self.tree.digest_size(), first));
    }

    /// The one place leaf digests leave the pipeline: into the root, in leaf
    /// order, and into the log if there is one.
    fn feed_root(&mut self, digests: &[u8]) {
        self.root.update(digests);
        if let Some(log) = &mut self.log {
            log.append(digests);
        }
    }

    /// Whether `depth` batches are in flight: [`wait`](Self::wait) before
    /// submitting another.
    pub(crate) fn is_full(&self) -> bool {
        self.in_flight.len() >= self.depth
    }

    /// Waits for the oldest batch in flight, if any, and gives its buffer
    /// back; its digests wait in `pending` for the next `submit` or `feed`.
    pub(crate) fn wait(&mut self) -> Option<B> {
        let receiver = self.in_flight.pop_front()?;
        let finished = receiver
            .recv()
            .expect("a leaf batch job ended without reporting");
        self.feed_pending();
        self.spare = std::mem::replace(&mut self.pending, finished.digests);
        Some(finished.data)
    }

    fn feed_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        self.feed_root(&pending);
        self.pending = pending;
        self.pending.clear();
    }

    /// Starts hashing a batch of whole leaves numbered from `first` (the
    /// pipeline must not be full), then feeds the root meanwhile.
    pub(crate) fn submit(&mut self, data: B, first: u64, end: EndOfInput) {
        debug_assert!(!self.is_full());
        let (tree, spread) = (self.tree, self.spread);
        let mut digests = std::mem::take(&mut self.spare);
        let job = move || {
            hash_leaves(
                &tree,
                first,
                data.as_ref(),
                end,
                &mut digests,
                spread,
                &|range| data.release(range),
            );
            Finished { data, digests }
        };
        let (sender, receiver) = mpsc::sync_channel(1);
        if rayon::current_thread_index().is_some() {
            // Already on a pool thread: waiting there for a job spawned on the
            // same pool could deadlock a one-thread pool, so hash right here.
            let _ = sender.send(job());
        } else {
            rayon::spawn(move || {
                let _ = sender.send(job());
            });
        }
        self.in_flight.push_back(receiver);
        self.feed_pending();
    }

    /// Waits for every batch in flight, dropping their buffers.
    fn drain(&mut self) {
        while self.wait().is_some() {}
    }

    /// Hashes the final batch right here, since its result is awaited at once
    /// (no hand-off to the pool for a small input), and feeds the root.
    pub(crate) fn submit_last(&mut self, data: B, first: u64) {
        self.drain();
        self.feed_pending();
        let mut digests = std::mem::take(&mut self.spare);
        hash_leaves(
            &self.tree,
            first,
            data.as_ref(),
            EndOfInput::Yes,
            &mut digests,
            self.spread,
            &|range| data.release(range),
        );
        self.feed_root(&digests);
        self.spare = digests;
    }

    /// Feeds digests computed elsewhere (incrementally hashed leaves), after
    /// everything submitted before.
    pub(crate) fn feed(&mut self, leaf_digests: &[u8]) {
        self.drain();
        self.feed_pending();
        self.feed_root(leaf_digests);
    }

    /// Feeds everything outstanding and returns the root digest and the leaf
    /// digests, if they were kept.
    pub(crate) fn finish(mut self) -> (Digest, Option<LeafLog>) {
        self.drain();
        self.feed_pending();
        (self.root.finalize(), self.log)
    }
}

/// Hashes a byte slice in one call, on the current rayon pool.
///
/// ```
/// use bt2sum::{hash, TreeParams};
/// let digest = hash(&TreeParams::default(), b"hello s3git\n");
/// assert!(digest.to_hex().starts_with("18e622875a89cede"));
/// ```
pub fn hash(tree: &TreeParams, data: &[u8]) -> Digest {
    hash_keeping_leaves(tree, data, None).0
}

/// [`hash`], also appending every leaf digest to `log` if there is one.
pub(crate) fn hash_keeping_leaves(
    tree: &TreeParams,
    data: &[u8],
    mut log: Option<LeafLog>,
) -> (Digest, Option<LeafLog>) {
    let mut root = NodeState::new(tree, Node::Root);
    let batch = tree.batch_leaves() * tree.leaf_size as usize;
    let mut digests = Vec::new();
    let batches = data.len().div_ceil(batch);
    for (index, chunk) in data.chunks(batch).enumerate() {
        let end = if index + 1 == batches {
            EndOfInput::Yes
        } else {
            EndOfInput::No
        };
        let first = (index * tree.batch_leaves()) as u64;
        hash_leaves(
            tree,
            first,
            chunk,
            end,
            &mut digests,
            Spread::AllThreads,
            &|_| {},
        );
        root.update(&digests);
        if let Some(log) = &mut log {
            log.append(&digests);
        }
    }
    (root.finalize(), log)
}

/// A streaming tree hasher: write the input in pieces of any size, then
/// [`finalize`](TreeHasher::finalize).
///
/// Bytes are buffered in whole leaves, up to [`BATCH_BYTES`] at a time; a full
/// batch is hashed on the rayon pool while the next one fills, and its
/// digests go to the root at once. Leaves bigger than [`BIG_LEAF`] are hashed
/// incrementally as their bytes arrive instead of being buffered. Memory is
/// therefore bounded by two batches (80 MiB) whatever the input length.
///
/// ```
/// use std::io::Write;
/// use bt2sum::{TreeHasher, TreeParams};
/// let mut hasher = TreeHasher::new(&TreeParams::default());
/// hasher.write_all(b"hello ")?;
/// hasher.write_all(b"s3git\n")?;
/// assert!(hasher.finalize()?.to_hex().starts_with("18e622875a89cede"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TreeHasher {
    tree: TreeParams,
    pipeline: Pipeline<LeafBuffer>,
    /// The index of the first leaf not yet handed to the pipeline.
    next_leaf: u64,
    mode: Mode,
}

enum Mode {
    /// Whole leaves gathered in a buffer, hashed a batch at a time.
    Batched {
        buffer: LeafBuffer,
        /// A buffer kept for reuse after a look-ahead read found the end.
        spare: Option<LeafBuffer>,
    },
    /// One big leaf at a time, hashed as its bytes arrive.
    Incremental { leaf: Option<Box<LeafState>> },
}

/// A batch buffer: `bytes[..filled]` is the data.
pub(crate) struct LeafBuffer {
    bytes: Vec<u8>,
    filled: usize,
}

impl AsRef<[u8]> for LeafBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.filled]
    }
}

/// A buffer is reused: nothing to give back.
impl LeafBytes for LeafBuffer {}

/// The size of the reads into an incremental leaf.
const READ_CHUNK: usize = 1 << 20;

/// A buffer starts this small and doubles up to the batch size, so that small
/// inputs never allocate a whole batch.
const FIRST_BUFFER: usize = 64 << 10;

impl TreeHasher {
    /// A hasher for the given tree parameters.
    pub fn new(tree: &TreeParams) -> Self {
        let mode = if tree.has_big_leaves() {
            Mode::Incremental { leaf: None }
        } else {
            Mode::Batched {
                buffer: LeafBuffer {
                    bytes: Vec::new(),
                    filled: 0,
                },
                spare: None,
            }
        };
        TreeHasher {
            tree: *tree,
            pipeline: Pipeline::new(tree, 1, Spread::SpareOneForReader),
            next_leaf: 0,
            mode,
        }
    }

    fn batch_bytes(&self) -> usize {
        self.tree.batch_leaves() * self.tree.leaf_size as usize
    }

    /// The buffer to fill once the current one is full: one kept from an
    /// earlier look-ahead, the buffer of the batch in flight once that batch
    /// is done, or a new one. At most two buffers are ever in use.
    fn next_buffer(&mut self) -> LeafBuffer {
        let batch_bytes = self.batch_bytes();
        let Mode::Batched { spare, .. } = &mut self.mode else {
            unreachable!("next_buffer is only called in batched mode");
        };
        let mut next = spare
            .take()
            .or_else(|| self.pipeline.wait())
            .unwrap_or_else(|| LeafBuffer {
                bytes: vec![0; batch_bytes],
                filled: 0,
            });
        next.filled = 0;
        next
    }

    /// Hands the full buffer to the pool and makes `next` (which may already
    /// hold bytes) the one to fill. Called only once more input is known to
    /// follow, so that a full buffer at the end of the input is hashed by
    /// `finalize`, with its last-node flag.
    fn submit_full(&mut self, next: LeafBuffer) -> io::Result<()> {
        let batch_leaves = self.tree.batch_leaves() as u64;
        self.tree
            .check_leaf_index(self.next_leaf + batch_leaves - 1)?;
        let recycled = self.pipeline.wait();
        let Mode::Batched { buffer, spare } = &mut self.mode else {
            unreachable!("submit_full is only called in batched mode");
        };
        if recycled.is_some() {
            *spare = recycled;
        }
        let full = std::mem::replace(buffer, next);
        self.pipeline.submit(full, self.next_leaf, EndOfInput::No);
        self.next_leaf += batch_leaves;
        Ok(())
    }

    /// Whether the batch buffer holds a whole batch.
    fn buffer_full(&self) -> bool {
        matches!(&self.mode, Mode::Batched { buffer, .. } if buffer.filled == self.batch_bytes())
    }

    /// The free part of the batch buffer, grown or rotated as needed; only
    /// called when at least one more byte is about to arrive.
    fn room(&mut self) -> io::Result<&mut [u8]> {
        if self.buffer_full() {
            let next = self.next_buffer();
            self.submit_full(next)?;
        }
        let batch_bytes = self.batch_bytes();
        let Mode::Batched { buffer, .. } = &mut self.mode else {
            unreachable!("room is only called in batched mode");
        };
        if buffer.filled == buffer.bytes.len() {
            let grown = (buffer.bytes.len() * 2).max(FIRST_BUFFER).min(batch_bytes);
            buffer.bytes.resize(grown, 0);
        }
        Ok(&mut buffer.bytes[buffer.filled..])
    }

    /// Reads once into a new buffer after a full one, so that the full one is
    /// submitted only if more bytes follow.
    fn read_ahead<R: Read + ?Sized>(&mut self, reader: &mut R) -> io::Result<usize> {
        let mut next = self.next_buffer();
        let count = reader.read(&mut next.bytes);
        match count {
            Ok(count) if count > 0 => {
                next.filled = count;
                self.submit_full(next)?;
            }
            _ => {
                let Mode::Batched { spare, .. } = &mut self.mode else {
                    unreachable!("read_ahead is only called in batched mode");
                };
                *spare = Some(next);
            }
        }
        count
    }

    fn advance(&mut self, count: usize) {
        if let Mode::Batched { buffer, .. } = &mut self.mode {
            buffer.filled += count;
        }
    }

    /// Feeds bytes to the current big leaf, finishing leaves as they fill.
    fn update_incremental(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let Mode::Incremental { leaf } = &mut self.mode else {
            unreachable!("update_incremental is only called in incremental mode");
        };
        while !bytes.is_empty() {
            if leaf
                .as_ref()
                .is_some_and(|l| l.filled == self.tree.leaf_size())
            {
                // More bytes follow, so the full leaf is not the last one.
                let done = leaf.take().expect("checked above");
                self.pipeline.feed(done.finalize(LastNode::No).as_bytes());
            }
            let current = match leaf {
                Some(current) => current,
                None => {
                    self.tree.check_leaf_index(self.next_leaf)?;
                    self.next_leaf += 1;
                    leaf.insert(Box::new(LeafState::new(&self.tree, self.next_leaf - 1)))
                }
            };
            let room = (self.tree.leaf_size() - current.filled).min(bytes.len() as u64) as usize;
            current.update(&bytes[..room]);
            bytes = &bytes[room..];
        }
        Ok(())
    }

    /// Reads `reader` to its end straight into the hasher's buffers, retrying
    /// short and interrupted reads; returns the number of bytes read.
    pub fn update_reader<R: Read + ?Sized>(&mut self, reader: &mut R) -> io::Result<u64> {
        let mut total = 0u64;
        let mut chunk = Vec::new();
        loop {
            let count = match self.mode {
                Mode::Batched { .. } if self.buffer_full() => match self.read_ahead(reader) {
                    Ok(count) => count,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => return Err(error),
                },
                Mode::Batched { .. } => {
                    let room = self.room()?;
                    match reader.read(room) {
                        Ok(count) => {
                            self.advance(count);
                            count
                        }
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                        Err(error) => return Err(error),
                    }
                }
                Mode::Incremental { .. } => {
                    chunk.resize(READ_CHUNK, 0);
                    match reader.read(&mut chunk) {
                        Ok(count) => {
                            self.update_incremental(&chunk[..count])?;
                            count
                        }
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                        Err(error) => return Err(error),
                    }
                }
            };
            if count == 0 {
                return Ok(total);
            }
            total += count as u64;
        }
    }

    /// Keeps every leaf digest for
    /// [`finalize_with_leaves`](Self::finalize_with_leaves); call before the
    /// first byte.
    pub fn keep_leaves(&mut self) {
        self.pipeline.keep_leaves(0);
    }

    /// Hashes what is left and returns the checksum.
    ///
    /// Fails only if the input has more leaves than the algorithm's node
    /// offset can number (BLAKE2s: 2^48).
    pub fn finalize(self) -> io::Result<Digest> {
        Ok(self.finalize_with_leaves()?.0)
    }

    /// Hashes what is left and returns the checksum and, if
    /// [`keep_leaves`](TreeHasher::keep_leaves) was called, the leaf digests.
    pub fn finalize_with_leaves(mut self) -> io::Result<(Digest, Option<LeafLog>)> {
        match std::mem::replace(&mut self.mode, Mode::Incremental { leaf: None }) {
            Mode::Batched { buffer, .. } => {
                let leaves = self.tree.leaf_count(buffer.filled as u64);
                if leaves > 0 {
                    self.tree.check_leaf_index(self.next_leaf + leaves - 1)?;
                }
                self.pipeline.submit_last(buffer, self.next_leaf);
            }
            Mode::Incremental { leaf } => {
                if let Some(leaf) = leaf {
                    self.pipeline.feed(leaf.finalize(LastNode::Yes).as_bytes());
                }
            }
        }
        Ok(self.pipeline.finish())
    }
}

impl Write for TreeHasher {
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<usize> {
        let written = bytes.len();
        if let Mode::Incremental { .. } = self.mode {
            self.update_incremental(bytes)?;
            return Ok(written);
        }
        while !bytes.is_empty() {
            let room = self.room()?;
            let count = room.len().min(bytes.len());
            room[..count].copy_from_slice(&bytes[..count]);
            self.advance(count);
            bytes = &bytes[count..];
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
