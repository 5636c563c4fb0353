//! The ordered root feed with batches in flight: a batch of leaves is hashed
//! on the pool while the caller prepares the next one (maps a window, reads
//! a buffer), and digests reach the root in leaf order.

use std::collections::VecDeque;
use std::sync::mpsc;

use super::batch::{EndOfInput, LeafBytes, hash_leaves};
use super::tuning::Spread;
use super::{Root, Sink};
use crate::error::Error;
use crate::params::TreeParams;

/// Whole leaves of an input, numbered from `first`, hashed as one batch;
/// `end` says whether the input ends with them (its final leaf then gets
/// the last-node flag).
pub(crate) struct Batch<B> {
    pub(crate) data: B,
    pub(crate) first: u64,
    pub(crate) end: EndOfInput,
}

/// A batch of leaves handed to the pool, and the digests it gives back.
struct Finished<B> {
    data: B,
    digests: Vec<u8>,
}

/// The root fed in leaf order, with up to `depth` batches being hashed on
/// the pool.
///
/// A finished batch's digests are fed to the root only after the next batch
/// has been handed to the pool, so that hashing the root (which dominates
/// with tiny leaves: 64 bytes of root input per leaf) overlaps the leaves.
pub(crate) struct Pipeline<B> {
    tree: TreeParams,
    root: Root,
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
}

/// Bytes in memory: nothing to wait for or give back.
impl LeafBytes for &[u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl<B: LeafBytes + 'static> Pipeline<B> {
    /// A pipeline with at most `depth` batches in flight, feeding `root`.
    pub(crate) fn new(tree: &TreeParams, root: Root, depth: usize, spread: Spread) -> Self {
        Pipeline {
            tree: *tree,
            root,
            in_flight: VecDeque::with_capacity(depth),
            depth,
            spread,
            pending: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Whether `depth` batches are in flight: [`wait`](Self::wait) before
    /// submitting another.
    pub(crate) fn is_full(&self) -> bool {
        self.in_flight.len() >= self.depth
    }

    /// Waits for the oldest batch in flight, if any, and gives its bytes back
    /// (to be checked, or reused); its digests wait in `pending` for the next
    /// `submit` or `feed`.
    pub(crate) fn wait(&mut self, sink: &mut Sink<'_>) -> Option<B> {
        let receiver = self.in_flight.pop_front()?;
        let finished = receiver
            .recv()
            .expect("a leaf batch job ended without reporting");
        self.feed_pending(sink);
        self.spare = std::mem::replace(&mut self.pending, finished.digests);
        Some(finished.data)
    }

    fn feed_pending(&mut self, sink: &mut Sink<'_>) {
        self.root.feed(&self.pending, self.tree.digest_size(), sink);
        self.pending.clear();
    }

    /// Reserves the digests of a batch of `leaves` leaves before its bytes
    /// are taken, so that a window mapped next (address space, as memory is
    /// under `ulimit -v`) leaves room for them: `false` if refused.
    pub(crate) fn reserve_digests(&mut self, leaves: usize) -> bool {
        self.spare.clear();
        crate::memory::reserve_exact(&mut self.spare, leaves * self.tree.digest_size())
    }

    /// A buffer for the digests of `data`'s leaves, reserved here so that
    /// memory refused is an error, not an abort on the pool.
    fn digest_buffer(&mut self, batch: &Batch<B>) -> Result<Vec<u8>, Error> {
        let mut digests = std::mem::take(&mut self.spare);
        digests.clear();
        let bytes = batch.data.bytes().len();
        let leaves = bytes.div_ceil(self.tree.leaf_size() as usize);
        if !crate::memory::reserve_exact(&mut digests, leaves * self.tree.digest_size()) {
            return Err(Error::out_of_memory());
        }
        #[cfg(feature = "schedule-probe")]
        super::probe::handed(super::batch::tasks(
            &self.tree,
            bytes,
            batch.end,
            self.spread,
        ));
        Ok(digests)
    }

    /// Starts hashing a batch (the pipeline must not be full), then feeds
    /// the root meanwhile.
    pub(crate) fn submit(&mut self, batch: Batch<B>, sink: &mut Sink<'_>) -> Result<(), Error> {
        debug_assert!(!self.is_full());
        let (tree, spread) = (self.tree, self.spread);
        let mut digests = self.digest_buffer(&batch)?;
        let job = move || {
            let Batch { data, first, end } = batch;
            hash_leaves(&tree, first, &data, end, &mut digests, spread);
            Finished { data, digests }
        };
        let (sender, receiver) = mpsc::sync_channel(1);
        if rayon::current_thread_index().is_some() {
            // Already on a pool thread: waiting there for a job spawned on the
            // same pool could deadlock a one-thread pool, so hash right here.
            // (A window is then hashed before the next is mapped. Spawned,
            // and waited for by running the pool's other work, windows
            // overlapped, but the crates' BLAKE2b ran 1.27 times slower on
            // two threads: measured, cause not found, not kept.)
            let _ = sender.send(job());
        } else {
            rayon::spawn(move || {
                let _ = sender.send(job());
            });
        }
        self.in_flight.push_back(receiver);
        self.feed_pending(sink);
        Ok(())
    }

    /// Waits for every batch in flight and feeds their digests, dropping
    /// their bytes.
    fn drain(&mut self, sink: &mut Sink<'_>) {
        while self.wait(sink).is_some() {}
        self.feed_pending(sink);
    }

    /// Hashes the final batch right here, since its result is awaited at once
    /// (no hand-off to the pool for a small input), and feeds the root.
    pub(crate) fn submit_last(
        &mut self,
        batch: Batch<B>,
        sink: &mut Sink<'_>,
    ) -> Result<(), Error> {
        self.drain(sink);
        let mut digests = self.digest_buffer(&batch)?;
        let Batch { data, first, end } = batch;
        hash_leaves(&self.tree, first, &data, end, &mut digests, self.spread);
        self.root.feed(&digests, self.tree.digest_size(), sink);
        self.spare = digests;
        Ok(())
    }

    /// Feeds digests computed elsewhere (incrementally hashed leaves), after
    /// everything submitted before.
    pub(crate) fn feed(&mut self, leaf_digests: &[u8], sink: &mut Sink<'_>) {
        self.drain(sink);
        self.root.feed(leaf_digests, self.tree.digest_size(), sink);
    }

    /// Feeds everything outstanding and gives the root back.
    pub(crate) fn finish(mut self, sink: &mut Sink<'_>) -> Root {
        self.drain(sink);
        self.root
    }
}
