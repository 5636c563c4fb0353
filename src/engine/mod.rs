//! The hashing engine: every decision about how leaves are scheduled lives
//! here, behind one entry point, [`hash`], which takes a [`Source`] (where
//! the bytes come from) and a [`Sink`] (where leaf digests and progress go),
//! and returns the root digest.
//!
//! - **Batches**: whole leaves are hashed a batch at a time on the rayon
//!   pool with the crates' multi-input SIMD API (`many::hash_many`: 4
//!   BLAKE2b or 8 BLAKE2s leaves per call with AVX2), each pool task taking a
//!   SIMD group or more.
//! - **The ordered root feed**: a batch's digests go to the root, and to the
//!   sink, in leaf order as soon as the batch is done, while later batches are
//!   hashed; memory is bounded by the batches in flight, whatever the input
//!   length.
//! - **Sources**: bytes in memory are hashed in place; a [`RandomAccess`]
//!   source (a regular file) is mapped a window of whole leaves at a time,
//!   two windows in flight, or read at offsets if it cannot be mapped; a
//!   stream is read into two batch buffers, one filling while the other is
//!   hashed on all threads but one (the reader's).
//! - **Big leaves** (over 8 MiB) are hashed incrementally: a stream's one at a
//!   time as its bytes arrive, a file's one per thread, mapped a piece at a
//!   time.
//! - **Many inputs** ([`hash_each`]): several at once, those that fit one
//!   leaf side by side in the SIMD lanes, reported in order as each input
//!   and every one before it are done.
//!
//! [`TreeHasher`] is the same stream machinery driven by writes instead of
//! reads. The sizes and counts that shape the work are in `tuning`.

mod batch;
mod kernel;
mod many;
mod pipeline;
#[cfg(feature = "schedule-probe")]
pub mod probe;
mod stream;
pub(crate) mod tuning;
mod windows;

use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(crate) use batch::LeafBytes;
pub use kernel::{HASH_KERNEL_ENV, LeafKernel};
pub use many::Event;
pub(crate) use many::{Input, Shape, Step, hash_each};
pub use stream::TreeHasher;
pub(crate) use windows::{Mapping, RandomAccess};

use crate::digest::Digest;
use crate::error::Error;
use crate::params::{LastNode, Node, TreeParams};
use kernel::NodeState;

/// Receives the digests of an input's leaves, in leaf order, as they are fed
/// to the root: a leaf listing keeps them, a verifier compares them with
/// listed ones, all in the one pass that computes the checksum.
pub trait LeafSink {
    /// The digests of leaves `first`, `first + 1`, … concatenated
    /// (`digest_size` bytes each). Each call continues where the last ended.
    fn leaves(&mut self, first: u64, digests: &[u8]);

    /// Whether the sink uses leaf digests at all. An input whose sink does
    /// not may be hashed by a shortcut that never forms them separately.
    fn wants_leaves(&self) -> bool {
        true
    }
}

/// No sink: leaf digests are only fed to the root.
impl LeafSink for () {
    fn leaves(&mut self, _first: u64, _digests: &[u8]) {}

    fn wants_leaves(&self) -> bool {
        false
    }
}

/// An optional sink.
impl<S: LeafSink> LeafSink for Option<S> {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        if let Some(sink) = self {
            sink.leaves(first, digests);
        }
    }

    fn wants_leaves(&self) -> bool {
        self.as_ref().is_some_and(LeafSink::wants_leaves)
    }
}

impl<S: LeafSink + ?Sized> LeafSink for &mut S {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        (**self).leaves(first, digests);
    }

    fn wants_leaves(&self) -> bool {
        (**self).wants_leaves()
    }
}

/// Where the by-products of hashing go.
#[derive(Default)]
pub(crate) struct Sink<'a> {
    /// The leaf digests, in leaf order.
    pub leaves: Option<&'a mut dyn LeafSink>,
    /// A counter of the input bytes hashed so far, for a progress display;
    /// advanced as the work goes, possibly from worker threads.
    pub progress: Option<&'a AtomicU64>,
    /// Set when nobody waits for the digest any more (a run of many inputs
    /// that its caller stopped): hashing stops at its next window or batch.
    pub abandoned: Option<&'a AtomicBool>,
}

impl Sink<'_> {
    fn count(&self, bytes: u64) {
        if let Some(progress) = self.progress {
            progress.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Fails with [`Error::Abandoned`] once the digest is no longer wanted.
    pub(crate) fn go_on(&self) -> Result<(), Error> {
        match self.abandoned {
            Some(abandoned) if abandoned.load(Ordering::Relaxed) => Err(Error::Abandoned),
            _ => Ok(()),
        }
    }
}

/// Where an input's bytes come from.
pub(crate) enum Source<'a> {
    /// All of them, in memory.
    Bytes(&'a [u8]),
    /// Bytes that arrive in order until the end: pipes, FIFOs, terminals,
    /// devices, and files that cannot be mapped.
    Stream(&'a mut dyn Read),
    /// A stream that holds exactly the bytes of leaves `leaves` (cut at the
    /// last one) of a `total`-byte input, and nothing else: a ranged
    /// download. A stream of another length is an error.
    Excerpt {
        reader: &'a mut dyn Read,
        total: u64,
        leaves: Range<u64>,
    },
    /// Leaves `leaves` of an input that can be read at any offset (a regular
    /// file). The range is cut at the input's end (a range past it hashes
    /// no leaf); the last-node flag goes to the input's final leaf only.
    File {
        file: &'a dyn RandomAccess,
        leaves: Range<u64>,
    },
}

/// What hashing one input gave.
#[derive(Clone, Copy, Debug)]
pub struct Hashed {
    /// The checksum: the root digest. (With a leaf range, the root of the
    /// range's leaves alone, which is no checksum of the input.)
    pub digest: Digest,
    /// The input's length in bytes.
    pub length: u64,
}

/// Hashes one input: the one way into the engine's scheduling.
pub(crate) fn hash(
    tree: &TreeParams,
    source: Source<'_>,
    sink: &mut Sink<'_>,
) -> Result<Hashed, Error> {
    match source {
        Source::Bytes(data) => Ok(Hashed {
            digest: batch::hash_in_memory(tree, data, sink)?,
            length: data.len() as u64,
        }),
        Source::Stream(reader) => {
            let mut stream = stream::Stream::new(tree);
            let length = stream.update_reader(reader, sink)?;
            Ok(Hashed {
                digest: stream.finalize(sink)?,
                length,
            })
        }
        Source::Excerpt {
            reader,
            total,
            leaves,
        } => stream::hash_excerpt(tree, reader, total, leaves, sink),
        Source::File { file, leaves } => windows::hash(tree, file, leaves, sink),
    }
}

/// The root node, fed leaf digests in leaf order; passes them on to the sink.
pub(crate) struct Root {
    state: NodeState,
    /// The index of the next leaf to be fed.
    next: u64,
}

impl Root {
    /// A root whose first leaf is number `first` (0 unless a leaf range).
    pub(crate) fn new(tree: &TreeParams, first: u64) -> Self {
        Root {
            state: NodeState::new(tree, Node::Root),
            next: first,
        }
    }

    /// Feeds the digests of the next leaves, `digest_size` bytes each.
    pub(crate) fn feed(&mut self, digests: &[u8], digest_size: usize, sink: &mut Sink<'_>) {
        if digests.is_empty() {
            return;
        }
        self.state.update(digests);
        if let Some(leaves) = &mut sink.leaves {
            leaves.leaves(self.next, digests);
        }
        self.next += (digests.len() / digest_size) as u64;
    }

    /// The root digest.
    pub(crate) fn finalize(&self) -> Digest {
        self.state.finalize()
    }
}

/// The digest of one leaf: leaf `index` of an input, its bytes `bytes`,
/// `last` on the input's final leaf. What verifying a leaf fetched again
/// (from a copy, a ranged download) against a listing needs.
///
/// ```
/// use bt2sum::{LastNode, TreeParams, hash, leaf_digest};
///
/// // An input of one leaf: the root hashes that leaf's digest.
/// let tree = TreeParams::new(bt2sum::Algorithm::Blake2b, 32, 8)?;
/// let leaf = leaf_digest(&tree, 0, LastNode::Yes, b"12345678");
/// assert_eq!(leaf.as_bytes().len(), 32);
/// assert_ne!(leaf, leaf_digest(&tree, 0, LastNode::No, b"12345678"));
/// assert_ne!(leaf, hash(&tree, b"12345678"));
/// # Ok::<(), bt2sum::ParamsError>(())
/// ```
pub fn leaf_digest(tree: &TreeParams, index: u64, last: LastNode, bytes: &[u8]) -> Digest {
    let mut state = NodeState::new(
        tree,
        Node::Leaf {
            offset: index,
            last,
        },
    );
    state.update(bytes);
    state.finalize()
}

/// Fails for an input with more leaves than the node offset can number
/// (BLAKE2s with tiny leaves on an input of hundreds of TiB).
pub(crate) fn check_leaf_index(tree: &TreeParams, index: u64) -> Result<(), Error> {
    if index < tree.algorithm().max_leaves() {
        Ok(())
    } else {
        Err(Error::TooManyLeaves(tree.algorithm()))
    }
}
