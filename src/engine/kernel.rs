//! The compression kernels: the `blake2b_simd` and `blake2s_simd` crates,
//! whose `many::hash_many` hashes 4 (BLAKE2b) or 8 (BLAKE2s) inputs at once
//! with AVX2. Everything here is per algorithm; nothing here schedules.

use crate::digest::Digest;
use crate::params::{Algorithm, LastNode, Node, TreeParams};

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

/// Hashes the leaves in `data` (whole leaves, but the final one may be short),
/// numbered from `first`, into `out`; the leaf numbered `last_leaf`, if any,
/// gets the last-node flag.
pub(crate) fn hash_leaf_run(
    tree: &TreeParams,
    first: u64,
    data: &[u8],
    last_leaf: Option<u64>,
    out: &mut [u8],
) {
    match tree.algorithm() {
        Algorithm::Blake2b => hash_leaf_run!(blake2b_simd, tree, first, data, last_leaf, out),
        Algorithm::Blake2s => hash_leaf_run!(blake2s_simd, tree, first, data, last_leaf, out),
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
