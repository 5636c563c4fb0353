//! Batches of whole leaves, spread over the pool.

use std::ops::Range;

use rayon::prelude::*;

use super::kernel::{LeafKernel, hash_leaf_run};
use super::tuning::{self, Spread};
use super::{Root, Sink};
use crate::digest::Digest;
use crate::error::Error;
use crate::params::TreeParams;

/// The bytes of a batch of leaves, as they are handed to the pool.
pub(crate) trait LeafBytes: Send + Sync {
    /// The bytes.
    fn bytes(&self) -> &[u8];

    /// Called by a pool task before it reads the bytes in `range`: a mapped
    /// window whose bytes are being read ahead waits until the reader is
    /// past them, so that the task's page faults find them in memory
    /// instead of asking the storage for them out of order.
    fn wait_for(&self, _range: Range<usize>) {}

    /// Called once the bytes in `range` have been hashed and will not be read
    /// again: a mapping may give their pages back.
    fn release(&self, _range: Range<usize>) {}
}

/// Whether a batch of leaves ends the input, so that its final leaf gets the
/// last-node flag (and may be shorter than a whole leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndOfInput {
    No,
    Yes,
}

/// Hashes the leaves of `batch`, numbered from `first`, into `out` (resized
/// to one digest a leaf), in parallel on the current rayon pool. Each task
/// waits for the bytes it is about to read ([`LeafBytes::wait_for`]) and
/// gives back those it is done with ([`LeafBytes::release`]).
///
/// Unless the batch ends the input, it must hold whole leaves; if it does,
/// its final leaf may be short and gets the last-node flag.
pub(crate) fn hash_leaves(
    tree: &TreeParams,
    first: u64,
    batch: &dyn LeafBytes,
    end: EndOfInput,
    out: &mut Vec<u8>,
    spread: Spread,
) {
    let data = batch.bytes();
    let leaf = tree.leaf_size() as usize;
    let size = tree.digest_size();
    let count = data.len().div_ceil(leaf);
    // A batch that leaves off before the input's end must end on a leaf's
    // end, or its final leaf would be hashed short, as if it were the last.
    assert!(
        end == EndOfInput::Yes || data.len().is_multiple_of(leaf),
        "a batch before the input's end holds whole leaves"
    );
    let last_leaf = match end {
        EndOfInput::Yes if count > 0 => Some(first + count as u64 - 1),
        _ => None,
    };
    out.clear();
    out.resize(count * size, 0);
    let Split {
        kernel,
        body,
        per_task,
        apart,
    } = Split::new(tree, count, end, spread);
    // Hashes `data`, the leaves from index `index` of this batch.
    let run = |index: usize, data: &[u8], out: &mut [u8]| {
        let start = index * leaf;
        batch.wait_for(start..start + data.len());
        hash_leaf_run(
            kernel,
            tree,
            first + index as u64,
            data,
            last_leaf,
            out,
            &mut |range| batch.release(start + range.start..start + range.end),
        );
        #[cfg(feature = "schedule-probe")]
        super::probe::finished();
    };
    let (body_data, last_data) = data.split_at(data.len().min(body * leaf));
    let (body_out, last_out) = out.split_at_mut(body * size);
    let mut hash_body = move || {
        if body <= per_task {
            // One task: no hand-off to the pool (small inputs, tail batches).
            run(0, body_data, body_out);
        } else {
            // (Saturating: a task of several leaves of 1 GiB or more passes a
            // 32-bit usize; the data then holds fewer.)
            body_data
                .par_chunks(per_task.saturating_mul(leaf))
                .zip(body_out.par_chunks_mut(per_task * size))
                .enumerate()
                .for_each(|(task, (data, out))| run(task * per_task, data, out));
        }
    };
    if apart {
        rayon::join(hash_body, || run(body, last_data, last_out));
    } else {
        hash_body();
    }
}

/// How a batch of leaves is cut into pool tasks.
struct Split {
    /// The leaf kernel that hashes them.
    kernel: LeafKernel,
    /// The leaves hashed in tasks of `per_task` (all but the input's last
    /// one, when it is `apart`).
    body: usize,
    per_task: usize,
    /// Whether the input's last leaf is a task of its own: the AVX-512
    /// kernels leave it to the crates, which hash a lone leaf a lane at a
    /// time; after a lane group on the same thread it would add most of a
    /// group's time. (The crates' own lane groups take it for free.)
    apart: bool,
}

impl Split {
    /// The split of `count` leaves, the last of which ends the input if
    /// `end` says so, spread as `spread` says.
    fn new(tree: &TreeParams, count: usize, end: EndOfInput, spread: Spread) -> Split {
        let ends = end == EndOfInput::Yes && count > 0;
        let kernel = tuning::batch_kernel(tree, count, ends, spread.threads());
        let apart = ends && count > 1 && kernel == LeafKernel::Avx512;
        let body = if apart { count - 1 } else { count };
        let per_task = tuning::leaves_per_task(tree, kernel, body, spread);
        Split {
            kernel,
            body,
            per_task,
            apart,
        }
    }

    /// How many pool tasks hash the batch.
    #[cfg(feature = "schedule-probe")]
    fn tasks(&self) -> usize {
        self.body.div_ceil(self.per_task).max(1) + usize::from(self.apart)
    }
}

/// How many pool tasks will hash a batch of `bytes` bytes of `tree`'s
/// leaves (for the schedule probe, as the batch is handed to the pool).
#[cfg(feature = "schedule-probe")]
pub(crate) fn tasks(tree: &TreeParams, bytes: usize, end: EndOfInput, spread: Spread) -> usize {
    let count = bytes.div_ceil(tree.leaf_size() as usize);
    Split::new(tree, count, end, spread).tasks()
}

/// Hashes bytes that are all in memory, a batch at a time on every thread.
/// Fails only if the memory for a batch's digests is refused.
pub(crate) fn hash_in_memory(
    tree: &TreeParams,
    data: &[u8],
    sink: &mut Sink<'_>,
) -> Result<Digest, Error> {
    let mut root = Root::new(tree, 0);
    let batch_leaves = tuning::batch_leaves(tree);
    let batch_bytes = batch_leaves * tree.leaf_size() as usize;
    let batches = data.len().div_ceil(batch_bytes);
    // Reserved whole here ([`hash_leaves`] then never grows it), so that
    // memory refused is an error, not an abort.
    let mut digests = Vec::new();
    let leaves = batch_leaves.min(data.len().div_ceil(tree.leaf_size() as usize));
    if !crate::memory::reserve_exact(&mut digests, leaves * tree.digest_size()) {
        return Err(Error::out_of_memory());
    }
    for (index, chunk) in data.chunks(batch_bytes).enumerate() {
        let end = if index + 1 == batches {
            EndOfInput::Yes
        } else {
            EndOfInput::No
        };
        let first = (index * batch_leaves) as u64;
        #[cfg(feature = "schedule-probe")]
        super::probe::handed(tasks(tree, chunk.len(), end, Spread::AllThreads));
        hash_leaves(tree, first, &chunk, end, &mut digests, Spread::AllThreads);
        root.feed(&digests, tree.digest_size(), sink);
        sink.count(chunk.len() as u64);
    }
    Ok(root.finalize())
}
