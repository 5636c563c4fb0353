//! The hashing engine: one scheduler for every leaf of every input.
//!
//! An [`Engine`] holds a queue of [`Leaf`]s, from any inputs: the whole
//! leaves of a big file's mapped window, the single leaf of a small file,
//! the last leaf of any file, a stream's leaves as they are read. Workers
//! on the rayon pool take them a task at a time (a SIMD group or more of
//! one tree, `task`), hash them side by side in the kernel's lanes (lanes
//! of unequal lengths refilled as they finish, see `kernel`), and leave
//! each digest with its input ([`Done`]); the thread that owns the run
//! feeds every input's root in leaf order ([`Feed`]), and hashes too while
//! it waits. The bytes in flight (queued or being hashed) stay within a
//! budget computed once per process ([`Budget`]), so memory is bounded by
//! construction whatever the inputs; threads never wait for each other
//! while leaves are queued.
//!
//! A leaf too big to hash at once (`BIG_LEAF`) is hashed a piece at a time
//! on one worker, from a [`Pieces`] source.

mod kernel;
#[cfg(feature = "schedule-probe")]
pub mod probe;
mod stream;

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

pub use kernel::{HASH_KERNEL_ENV, LeafKernel};
use kernel::{LeafJob, NodeState};
pub(crate) use stream::Stream;
pub use stream::TreeHasher;

use crate::digest::Digest;
use crate::error::Error;
use crate::params::{LastNode, Node, TreeParams};
use crate::sys::lock;

/// Receives the digests of an input's leaves, in leaf order, as they are fed
/// to the root: a leaf listing keeps them, a verifier compares them with
/// listed ones, all in the one pass that computes the checksum.
pub trait LeafSink {
    /// The digests of leaves `first`, `first + 1`, … concatenated
    /// (`digest_size` bytes each). Each call continues where the last ended.
    fn leaves(&mut self, first: u64, digests: &[u8]);
}

/// No sink: leaf digests are only fed to the root.
impl LeafSink for () {
    fn leaves(&mut self, _first: u64, _digests: &[u8]) {}
}

/// An optional sink.
impl<S: LeafSink> LeafSink for Option<S> {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        if let Some(sink) = self {
            sink.leaves(first, digests);
        }
    }
}

impl<S: LeafSink + ?Sized> LeafSink for &mut S {
    fn leaves(&mut self, first: u64, digests: &[u8]) {
        (**self).leaves(first, digests);
    }
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

/// What a run of many inputs tells its caller.
#[derive(Debug)]
pub enum Event<O> {
    /// The output of the next input, in input order.
    Ready(O),
    /// The next output is not ready and the engine is about to wait for it:
    /// a good time to flush what was reported so far.
    Waiting,
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
pub(crate) fn check_leaf_count(tree: &TreeParams, leaves: u64) -> Result<(), Error> {
    match leaves <= tree.algorithm().max_leaves() {
        true => Ok(()),
        false => Err(Error::TooManyLeaves(tree.algorithm())),
    }
}

/// The root node, fed leaf digests in leaf order.
pub(crate) struct Root(NodeState);

impl Root {
    pub(crate) fn new(tree: &TreeParams) -> Self {
        Root(NodeState::new(tree, Node::Root))
    }

    pub(crate) fn feed(&mut self, digests: &[u8]) {
        self.0.update(digests);
    }

    pub(crate) fn finalize(&self) -> Digest {
        self.0.finalize()
    }
}

/// The bytes of leaves in flight: a mapped window of a file, or a buffer;
/// shared by the leaves it holds, and dropped (unmapped) with the last.
pub(crate) trait Bytes: Send + Sync {
    fn bytes(&self) -> &[u8];

    /// Says that `range` of the bytes is hashed: its pages may be handed
    /// back.
    fn release(&self, _range: Range<usize>) {}

    /// Whether a page of a mapping could not be read (the file shrank).
    fn faulted(&self) -> bool {
        false
    }
}

impl Bytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A leaf too big to hash at once, read a piece at a time.
pub(crate) trait Pieces: Send + Sync {
    /// Bytes `range` of the leaf.
    fn piece(&self, range: Range<u64>) -> io::Result<Arc<dyn Bytes>>;
}

/// Where a leaf's bytes are.
pub(crate) enum Source {
    Bytes(Arc<dyn Bytes>, Range<usize>),
    Pieces(Arc<dyn Pieces>, u64),
}

/// One leaf waiting to be hashed.
pub(crate) struct Leaf {
    pub source: Source,
    pub index: u64,
    pub last: bool,
    /// Where its digest goes.
    pub done: Arc<Done>,
}

impl Leaf {
    /// What it counts against the budget while in flight.
    fn weight(&self) -> usize {
        match &self.source {
            Source::Bytes(_, range) => range.end - range.start + LEAF_COST,
            Source::Pieces(..) => PIECE + LEAF_COST,
        }
    }
}

/// The digests of one input's leaves as workers finish them, until the
/// owner feeds them to the root.
pub(crate) struct Done {
    pub tree: TreeParams,
    digests: Mutex<BTreeMap<u64, Digest>>,
    /// Why the input's digest cannot be reported: a piece could not be
    /// read, or the input changed while it was hashed.
    failure: Mutex<Option<Error>>,
}

impl Done {
    pub(crate) fn new(tree: &TreeParams) -> Arc<Done> {
        Arc::new(Done {
            tree: *tree,
            digests: Mutex::new(BTreeMap::new()),
            failure: Mutex::new(None),
        })
    }

    fn put(&self, index: u64, digest: Digest) {
        lock(&self.digests).insert(index, digest);
    }

    /// Says why the input's digest cannot be reported: a file that ended
    /// early (or whose mapping faulted) changed; an error reading it
    /// outweighs that.
    pub(crate) fn fail(&self, error: Error) {
        let error = match error {
            Error::Io(error) if error.kind() == io::ErrorKind::UnexpectedEof => Error::Changed,
            error => error,
        };
        let mut failure = lock(&self.failure);
        if !matches!(*failure, Some(Error::Io(_))) {
            *failure = Some(error);
        }
    }

    /// Whether a leaf failed or the input changed: no more of it is worth
    /// hashing.
    pub(crate) fn failed(&self) -> bool {
        lock(&self.failure).is_some()
    }
}

/// Feeds one input's root (and sink) its leaf digests in leaf order.
pub(crate) struct Feed {
    pub done: Arc<Done>,
    root: Root,
    /// The next leaf to feed, and the end of those queued so far.
    next: u64,
    pub queued: u64,
}

impl Feed {
    /// A feed of leaves from `first` on.
    pub(crate) fn new(tree: &TreeParams, first: u64) -> Feed {
        Feed {
            done: Done::new(tree),
            root: Root::new(tree),
            next: first,
            queued: first,
        }
    }

    /// Feeds the digests that have come in order; whether every leaf
    /// queued is fed.
    pub(crate) fn drain(&mut self, sink: &mut dyn LeafSink) -> bool {
        // (A few hundred at a time: the workers wait for the lock meanwhile,
        // and the batch stays small.)
        let mut ready = Vec::with_capacity(256);
        loop {
            {
                let mut digests = lock(&self.done.digests);
                while ready.len() < ready.capacity()
                    && let Some(entry) = digests.first_entry()
                    && *entry.key() == self.next + ready.len() as u64
                {
                    ready.push(entry.remove_entry());
                }
            }
            if ready.is_empty() {
                return self.next == self.queued;
            }
            for (index, digest) in ready.drain(..) {
                self.root.feed(digest.as_bytes());
                sink.leaves(index, digest.as_bytes());
                self.next += 1;
            }
        }
    }

    /// The next leaf to feed.
    pub(crate) fn next(&self) -> u64 {
        self.next
    }

    /// Whether the next leaf to feed is hashed.
    pub(crate) fn next_arrived(&self) -> bool {
        lock(&self.done.digests).contains_key(&self.next) || self.done.failed()
    }

    /// Whether every leaf queued is hashed (fed or not).
    pub(crate) fn all_in(&self) -> bool {
        let waiting = lock(&self.done.digests).len() as u64;
        self.next + waiting == self.queued || self.done.failed()
    }

    /// The root digest, once every leaf is fed; or why it cannot be
    /// reported ([`Error::Changed`] for a mapping that faulted: the file
    /// shrank while it was hashed).
    pub(crate) fn finish(self) -> Result<Digest, Error> {
        match lock(&self.done.failure).take() {
            Some(error) => Err(error),
            None => Ok(self.root.finalize()),
        }
    }
}

/// What a leaf in flight costs beside its bytes: its place in the queue
/// and its digest until the owner takes it. (Tiny leaves are counted by
/// this, not by their bytes.)
pub(crate) const LEAF_COST: usize = 256;
/// The most leaves queued at once from one window of a file or chunk of a
/// stream: tiny leaves cost their place in the queue more than their
/// bytes. A stream has at most two such batches in flight.
pub(crate) const BATCH_LEAVES: u64 = 1 << 16;
/// A leaf longer than this is hashed a piece at a time, on one worker.
pub(crate) const BIG_LEAF: u64 = 64 << 20;
/// The piece of a big leaf read at a time.
const PIECE: usize = 8 << 20;
/// The bytes a task takes at most, so that tasks go round the threads.
const TASK_BYTES: usize = 16 << 20;
/// The most leaves a task takes: its digests stay in a small buffer.
const TASK_LEAVES: usize = 1 << 14;

/// The budgets of a process, computed once from the machine and its
/// limits, each field one bound.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// The threads of the pool: at most these hash or read at once.
    pub threads: usize,
    /// The bytes of leaves queued or being hashed, each leaf's cost
    /// counted.
    pub in_flight: usize,
    /// The bytes the jobs in flight hold besides: their names and what
    /// their callers said they hold.
    pub held: usize,
    /// The bytes a mapped window aims at, and the most it maps once
    /// rounded up to whole lane groups.
    pub window: u64,
    pub window_most: u64,
    /// The bytes of the small files read whole at once on the workers.
    pub reading_whole: usize,
    /// The bytes the read buffers kept for the next small files hold.
    pub spare_buffers: usize,
    /// The inputs open at once.
    pub inputs: usize,
}

impl Budget {
    pub(crate) fn get() -> Budget {
        static BUDGET: OnceLock<Budget> = OnceLock::new();
        *BUDGET.get_or_init(|| {
            let threads = rayon::current_num_threads();
            // Two tasks of 8 leaves of 5 MiB for each thread that hashes,
            // the owner counted, their cost in the queue counted: a task
            // for each, and one more each queued behind it, so that a
            // worker finds one while the owner hashes rather than maps the
            // next window. At most a third of what an address-space limit
            // leaves.
            let task = 8 * ((5 << 20) + LEAF_COST);
            let mut bytes = ((threads + 1) * 2 * task).clamp(64 << 20, 1 << 30);
            if let Some(left) = crate::sys::address_space_left() {
                bytes = bytes.min(left / 3).max(PIECE);
            }
            let inputs = crate::budget::descriptors().inputs;
            // A window and the leaves in flight fit in the bytes in flight.
            let window_most = bytes as u64 / 2;
            Budget {
                threads,
                in_flight: bytes,
                held: bytes,
                window: window_most.min(64 << 20),
                window_most,
                reading_whole: bytes / 4,
                spare_buffers: bytes / 8,
                inputs,
            }
        })
    }
}

/// The scheduler of one run (see the module documentation).
#[derive(Clone)]
pub(crate) struct Engine {
    shared: Arc<Shared>,
}

struct Shared {
    kernel: LeafKernel,
    budget: Budget,
    queue: Mutex<Queue>,
    /// The bytes queued or being hashed. (Outside the queue's lock: the
    /// owner looks at it while it holds that lock, in `wait_until`.)
    in_flight: AtomicUsize,
    /// A leaf was queued or hashed.
    changed: Condvar,
}

/// Work a worker does in the owner's place besides hashing: opening and
/// reading a small file, so that the owner only keeps the order.
pub(crate) type Errand = Box<dyn FnOnce() + Send>;

/// What a thread takes from the queue.
enum Chore {
    Hash(Vec<Leaf>),
    Run(Errand),
}

#[derive(Default)]
struct Queue {
    leaves: VecDeque<Leaf>,
    errands: VecDeque<Errand>,
    /// The workers started and not yet ended.
    workers: usize,
}

impl Engine {
    pub(crate) fn new() -> Engine {
        Engine {
            shared: Arc::new(Shared {
                kernel: LeafKernel::active(),
                budget: Budget::get(),
                queue: Mutex::new(Queue::default()),
                in_flight: AtomicUsize::new(0),
                changed: Condvar::new(),
            }),
        }
    }

    /// The kernel its leaves are hashed with.
    pub(crate) fn kernel(&self) -> LeafKernel {
        self.shared.kernel
    }

    /// The budgets it works within.
    pub(crate) fn budget(&self) -> Budget {
        self.shared.budget
    }

    /// Whether the owner is the pool's one thread (`--cpus 1`): nothing
    /// works beside it, so it does the work it queues as it goes.
    fn owner_alone(&self) -> bool {
        rayon::current_num_threads() == 1 && rayon::current_thread_index().is_some()
    }

    /// Has `errand` run on a worker, the owner told when it is done (its
    /// `wait_until` looks again); run at once where the owner is alone.
    pub(crate) fn run(&self, errand: Errand) {
        if self.owner_alone() {
            return Chore::Run(errand).run(&self.shared);
        }
        let mut queue = lock(&self.shared.queue);
        queue.errands.push_back(errand);
        // (A worker for each errand waiting beyond those at work: an errand
        // is worth a wake-up, being several files' opening.)
        if queue.workers < self.shared.budget.threads && queue.errands.len() > queue.workers {
            self.start_worker(&mut queue);
        }
    }

    /// Starts a worker on the pool, which takes chores until none is left.
    fn start_worker(&self, queue: &mut Queue) {
        queue.workers += 1;
        let shared = Arc::clone(&self.shared);
        rayon::spawn(move || work(&shared));
    }

    /// Whether `bytes` more may be queued now.
    pub(crate) fn has_room(&self, bytes: usize) -> bool {
        let in_flight = self.shared.in_flight.load(Ordering::Acquire);
        in_flight == 0 || in_flight + bytes <= self.shared.budget.in_flight
    }

    /// Queues a batch of leaves of one tree (a window, a small file, a
    /// stream's chunk) at once, hashing meanwhile until they fit in the
    /// budget (unless `reading` a stream: see [`Self::wait_reading`]; its
    /// leaves go to the front of the queue). The
    /// batch is handed over under one lock: the workers see all of it or
    /// none, and never wait on the queue while it is filled a leaf at a
    /// time.
    pub(crate) fn push(&self, leaves: Vec<Leaf>, reading: bool) {
        let Some(first) = leaves.first() else {
            return;
        };
        let lanes = self.shared.kernel.lanes(first.done.tree.algorithm());
        let weight = leaves.iter().map(Leaf::weight).sum();
        let mut big = leaves
            .iter()
            .filter(|leaf| matches!(leaf.source, Source::Pieces(..)))
            .count();
        let room = || self.has_room(weight);
        match reading {
            true => self.wait_reading(room),
            false => self.wait_until(room),
        }
        self.shared.in_flight.fetch_add(weight, Ordering::AcqRel);
        let mut queue = lock(&self.shared.queue);
        #[cfg(feature = "schedule-probe")]
        probe::handed(leaves.len());
        // A stream's leaves go first, after those of it queued before: its
        // writer waits for them, and the inputs behind it would hold it up.
        let at = match reading {
            true => (queue.leaves.iter())
                .position(|leaf| !Arc::ptr_eq(&leaf.done, &first.done))
                .unwrap_or(queue.leaves.len()),
            false => queue.leaves.len(),
        };
        let behind = queue.leaves.split_off(at);
        queue.leaves.extend(leaves);
        queue.leaves.extend(behind);
        // The owner is the pool's one thread (`--cpus 1`): nothing hashes
        // beside it, so it hashes the whole lane groups it queues, as it
        // goes (else it would read the whole budget ahead first).
        if self.owner_alone() {
            #[cfg(feature = "schedule-probe")]
            probe::sample();
            while queue.leaves.len() >= lanes
                && let Some(task) = take_task(&self.shared, &mut queue)
            {
                drop(queue);
                hash_task(&self.shared, task);
                queue = lock(&self.shared.queue);
            }
            return;
        }
        // A worker is started for a whole lane group of leaves, or a big
        // leaf: started for each small file, the workers would spend more
        // time waking than hashing. (Fewer are hashed by the owner as it
        // waits.)
        while queue.workers < self.shared.budget.threads
            && (big > 0 || queue.leaves.len() >= lanes * (queue.workers + 1))
        {
            big = big.saturating_sub(1);
            self.start_worker(&mut queue);
        }
        #[cfg(feature = "schedule-probe")]
        probe::sample();
    }

    /// Hashes queued leaves, or waits for the workers, until `ready`.
    pub(crate) fn wait_until(&self, ready: impl Fn() -> bool) {
        self.wait(ready, true);
    }

    /// Waits until `ready`, leaving the queued work to the workers where
    /// there are any: for the owner reading a stream, whose next read is
    /// worth more than its hashing (the writer waits for it).
    pub(crate) fn wait_reading(&self, ready: impl Fn() -> bool) {
        self.wait(ready, self.owner_alone() || self.shared.budget.threads == 0);
    }

    fn wait(&self, ready: impl Fn() -> bool, hash: bool) {
        loop {
            if ready() {
                return;
            }
            let mut queue = lock(&self.shared.queue);
            if hash && let Some(chore) = take(&self.shared, &mut queue) {
                drop(queue);
                chore.run(&self.shared);
                continue;
            }
            // (Leaves too few to have started a worker, left to one.)
            if !hash && queue.workers == 0 && !queue.leaves.is_empty() {
                self.start_worker(&mut queue);
            }
            if ready() {
                return;
            }
            // Woken by every chore finished, which is all `ready` can wait
            // for (a digest, a failure, bytes given back, a file opened): a
            // chore's end notifies under this lock, so none comes between
            // the look above and the wait.
            let _queue = self
                .shared
                .changed
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Drops the leaves not yet taken: nobody waits for their digests.
    pub(crate) fn abandon(&self) {
        let mut queue = lock(&self.shared.queue);
        queue.errands.clear();
        let dropped: usize = queue.leaves.drain(..).map(|leaf| leaf.weight()).sum();
        self.shared.in_flight.fetch_sub(dropped, Ordering::AcqRel);
    }
}

/// A worker: takes chores until the queue is empty.
fn work(shared: &Shared) {
    loop {
        let mut queue = lock(&shared.queue);
        let Some(chore) = take(shared, &mut queue) else {
            queue.workers -= 1;
            return;
        };
        drop(queue);
        chore.run(shared);
    }
}

/// The next chore: a whole lane group of leaves (or a big leaf) to hash
/// first, then an errand, then the leaves left.
fn take(shared: &Shared, queue: &mut Queue) -> Option<Chore> {
    let group = match queue.leaves.front() {
        Some(leaf) => {
            matches!(leaf.source, Source::Pieces(..))
                || queue.leaves.len() >= shared.kernel.lanes(leaf.done.tree.algorithm())
        }
        None => false,
    };
    if !group && let Some(errand) = queue.errands.pop_front() {
        return Some(Chore::Run(errand));
    }
    take_task(shared, queue).map(Chore::Hash)
}

impl Chore {
    fn run(self, shared: &Shared) {
        match self {
            Chore::Hash(task) => hash_task(shared, task),
            Chore::Run(errand) => {
                #[cfg(feature = "schedule-probe")]
                probe::hashing();
                errand();
                #[cfg(feature = "schedule-probe")]
                probe::hashed();
                notify(shared);
            }
        }
    }
}

/// Wakes the owner if it waits. (Under the lock: an owner between its look
/// and its wait sees what came before this.)
fn notify(shared: &Shared) {
    let _queue = lock(&shared.queue);
    shared.changed.notify_all();
}

/// The next task: the leaves at the front of the queue of one tree, a
/// SIMD group or more, no more than a fair share of what is queued.
fn take_task(shared: &Shared, queue: &mut Queue) -> Option<Vec<Leaf>> {
    let first = queue.leaves.pop_front()?;
    if let Source::Pieces(..) = first.source {
        return Some(vec![first]);
    }
    let tree = first.done.tree;
    let lanes = shared.kernel.lanes(tree.algorithm());
    // (A share for each worker, and for the owner, which hashes as it
    // waits.)
    let share = queue
        .leaves
        .len()
        .div_ceil(shared.budget.threads + 1)
        .max(lanes - 1);
    let (mut bytes, mut longest) = (first.weight(), first.weight());
    let mut task = vec![first];
    // (A whole lane group first, whatever its bytes: a lane left empty is
    // a share of the kernel's work lost. Then, up to a second group, the
    // leaves that fit in the time lanes would stand idle until the longest
    // ends, as a lane takes the next leaf when its own ends: a file's last
    // leaf is short.)
    while let Some(next) = queue.leaves.front()
        && (task.len() < lanes
            || (task.len() <= share && bytes < TASK_BYTES)
            || (task.len() < 2 * lanes && bytes + next.weight() <= lanes * longest))
        && task.len() < TASK_LEAVES
        && next.done.tree == tree
        && matches!(next.source, Source::Bytes(..))
    {
        bytes += next.weight();
        longest = longest.max(next.weight());
        task.extend(queue.leaves.pop_front());
    }
    // The longest first, so that the short ones fill the lanes at the end.
    task.sort_by_key(|leaf| std::cmp::Reverse(leaf.weight()));
    Some(task)
}

/// Hands hashed bytes back to their source, adjacent ranges of one source
/// as one range: a lane group's leaves end side by side, and each hand-back
/// of a mapping costs the other threads a TLB flush.
#[derive(Default)]
struct HandBack<'a>(Option<(&'a Arc<dyn Bytes>, Range<usize>)>);

impl<'a> HandBack<'a> {
    fn add(&mut self, bytes: &'a Arc<dyn Bytes>, range: Range<usize>) {
        match &mut self.0 {
            Some((held, pending)) if Arc::ptr_eq(held, bytes) && pending.end == range.start => {
                pending.end = range.end;
            }
            _ => {
                if let Some((held, pending)) = self.0.replace((bytes, range)) {
                    held.release(pending);
                }
            }
        }
    }
}

impl Drop for HandBack<'_> {
    fn drop(&mut self) {
        if let Some((bytes, range)) = self.0.take() {
            bytes.release(range);
        }
    }
}

/// Hashes a task's leaves, leaves their digests with their inputs, and
/// gives their bytes back to the budget.
fn hash_task(shared: &Shared, task: Vec<Leaf>) {
    #[cfg(feature = "schedule-probe")]
    probe::hashing();
    let weight = (task.iter().map(Leaf::weight).sum(), task.len());
    let tree = task[0].done.tree;
    let size = tree.digest_size();
    let mut out = vec![0; task.len() * size];
    if let [
        Leaf {
            source: Source::Pieces(pieces, len),
            ..
        },
    ] = &task[..]
    {
        // (A big leaf is a task of its own.)
        match hash_pieces(&tree, &task[0], pieces.as_ref(), *len) {
            Ok(digest) => out.copy_from_slice(digest.as_bytes()),
            Err(error) => return finish_task(shared, weight, || task[0].done.fail(error.into())),
        }
    } else {
        let jobs: Vec<LeafJob<'_>> = task
            .iter()
            .map(|leaf| match &leaf.source {
                Source::Bytes(bytes, range) => LeafJob {
                    bytes: &bytes.bytes()[range.clone()],
                    index: leaf.index,
                    last: leaf.last,
                },
                Source::Pieces(..) => unreachable!("a big leaf is a task of its own"),
            })
            .collect();
        let mut hashed = HandBack::default();
        kernel::hash_leaves(shared.kernel, &tree, &jobs, &mut out, &mut |job, range| {
            if let Source::Bytes(bytes, at) = &task[job].source {
                hashed.add(bytes, at.start + range.start..at.start + range.end);
            }
        });
    }
    // The digests, a lock per input.
    let mut leaves = task.iter().zip(out.chunks(size)).peekable();
    while let Some((leaf, digest)) = leaves.next() {
        let mut digests = lock(&leaf.done.digests);
        let mut put = |leaf: &Leaf, digest: &[u8]| {
            if let Source::Bytes(bytes, _) = &leaf.source
                && bytes.faulted()
            {
                leaf.done.fail(Error::Changed);
            }
            digests.insert(leaf.index, Digest::from_slice(digest).expect("a digest"));
        };
        put(leaf, digest);
        while let Some((next, digest)) =
            leaves.next_if(|(next, _)| Arc::ptr_eq(&next.done, &leaf.done))
        {
            put(next, digest);
        }
    }
    finish_task(shared, weight, || drop(task));
}

/// Hashes inputs held whole in memory, their leaves side by side in the
/// kernel's lanes, outside the queue and its budget: each input's leaf
/// digests, in order. (A worker's errand hashes the small files it read
/// this way, a lane group of files at once.)
pub(crate) fn hash_whole(kernel: LeafKernel, inputs: &[(TreeParams, &[u8])]) -> Vec<Vec<u8>> {
    let mut digests = Vec::with_capacity(inputs.len());
    for group in inputs.chunk_by(|a, b| a.0 == b.0) {
        let tree = group[0].0;
        let jobs: Vec<LeafJob<'_>> = group
            .iter()
            .flat_map(|&(_, bytes)| {
                let (length, count) = (bytes.len() as u64, tree.leaf_count(bytes.len() as u64));
                (0..count).map(move |index| {
                    let at = tree.leaf_bytes(index, length);
                    LeafJob {
                        bytes: &bytes[at.start as usize..at.end as usize],
                        index,
                        last: index + 1 == count,
                    }
                })
            })
            .collect();
        // Longest first: the kernel gives a lane the next leaf as its own
        // ends, so the short leaves fill the lanes beside the long ones.
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&job| std::cmp::Reverse(jobs[job].bytes.len()));
        let longest_first: Vec<LeafJob<'_>> = order.iter().map(|&job| jobs[job]).collect();
        let size = tree.digest_size();
        let mut hashed = vec![0; jobs.len() * size];
        kernel::hash_leaves(kernel, &tree, &longest_first, &mut hashed, &mut |_, _| {});
        let mut out = vec![0; jobs.len() * size];
        for (digest, &job) in hashed.chunks(size).zip(&order) {
            out[job * size..(job + 1) * size].copy_from_slice(digest);
        }
        let mut out = &out[..];
        for (_, bytes) in group {
            let (input, rest) = out.split_at(tree.leaf_count(bytes.len() as u64) as usize * size);
            digests.push(input.to_vec());
            out = rest;
        }
    }
    digests
}

/// Gives a task's bytes back to the budget, after `done` (which drops the
/// task's leaves: their windows are unmapped first).
fn finish_task(shared: &Shared, (weight, leaves): (usize, usize), done: impl FnOnce()) {
    done();
    #[cfg(feature = "schedule-probe")]
    {
        probe::finished(leaves);
        probe::hashed();
    }
    #[cfg(not(feature = "schedule-probe"))]
    let _ = leaves;
    shared.in_flight.fetch_sub(weight, Ordering::AcqRel);
    notify(shared);
}

/// A big leaf, hashed a piece at a time.
fn hash_pieces(
    tree: &TreeParams,
    leaf: &Leaf,
    pieces: &dyn Pieces,
    len: u64,
) -> io::Result<Digest> {
    let last = if leaf.last {
        LastNode::Yes
    } else {
        LastNode::No
    };
    let mut state = NodeState::new(
        tree,
        Node::Leaf {
            offset: leaf.index,
            last,
        },
    );
    let mut at = 0;
    while at < len {
        let end = (at + PIECE as u64).min(len);
        let piece = pieces.piece(at..end)?;
        state.update(piece.bytes());
        if piece.faulted() {
            leaf.done.fail(Error::Changed);
        }
        at = end;
    }
    Ok(state.finalize())
}

/// Hashes a byte slice on the current rayon pool: its leaves a batch at a
/// time, each batch's SIMD groups side by side.
pub(crate) fn hash_slice(tree: &TreeParams, data: &[u8]) -> Result<Digest, Error> {
    use rayon::prelude::*;
    let leaf = usize::try_from(tree.leaf_size()).unwrap_or(usize::MAX);
    let count = tree.leaf_count(data.len() as u64);
    check_leaf_count(tree, count)?;
    let kernel = LeafKernel::active();
    let lanes = kernel.lanes(tree.algorithm());
    let size = tree.digest_size();
    let mut root = Root::new(tree);
    // (A batch of leaves whose digests stay a few MiB.)
    let batch = (lanes * 64).max(1);
    for (first, chunk) in data.chunks(leaf.saturating_mul(batch)).enumerate() {
        let first = (first * batch) as u64;
        let jobs: Vec<LeafJob<'_>> = chunk
            .chunks(leaf)
            .zip(first..)
            .map(|(bytes, index)| LeafJob {
                bytes,
                index,
                last: index + 1 == count,
            })
            .collect();
        let mut out = vec![0; jobs.len() * size];
        jobs.par_chunks(lanes)
            .zip(out.par_chunks_mut(lanes * size))
            .for_each(|(jobs, out)| kernel::hash_leaves(kernel, tree, jobs, out, &mut |_, _| {}));
        root.feed(&out);
    }
    Ok(root.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of 6 MiB in 5 MiB leaves: after their short last leaves, half
    /// the lanes of a lane group would stand idle; a task takes the leaves
    /// that fit in that time too, the longest first.
    #[test]
    fn a_task_fills_the_time_its_short_leaves_leave_idle() {
        let (engine, tree) = (Engine::new(), TreeParams::default());
        let lanes = engine.kernel().lanes(tree.algorithm());
        let (long, short) = (5 << 20, 1 << 20);
        let bytes: Arc<dyn Bytes> = Arc::new(vec![0u8; long]);
        let done = Done::new(&tree);
        let mut queue = Queue::default();
        for index in 0..4 * lanes as u64 {
            queue.leaves.push_back(Leaf {
                source: Source::Bytes(Arc::clone(&bytes), 0..[long, short][index as usize % 2]),
                index,
                last: false,
                done: Arc::clone(&done),
            });
        }
        let task = take_task(&engine.shared, &mut queue).expect("a task");
        let lengths: Vec<usize> = task.iter().map(|leaf| leaf.weight() - LEAF_COST).collect();
        assert!(task.len() > lanes, "{lengths:?}");
        let taken: usize = lengths.iter().sum();
        assert!(taken <= lanes * (long + LEAF_COST), "{lengths:?}");
        assert!(lengths.is_sorted_by(|a, b| a >= b), "{lengths:?}");
    }
}
