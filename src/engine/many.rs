//! Many inputs in one run: hashed several at a time on the pool, those that
//! fit in one leaf side by side in the SIMD lanes, and reported in order,
//! each as soon as it and every input before it are done.
//!
//! Inputs are taken from their iterator only as room frees up (at most
//! `tuning::INPUTS_IN_FLIGHT` of them, holding at most
//! `tuning::INPUT_BYTES_IN_FLIGHT` bytes of names and what their callers
//! keep for them, give or take one input), so a list of millions of
//! files is never held whole. A pool task takes up to `tuning::LANES`
//! consecutive inputs: it opens each ([`Input::prepare`], which never waits
//! for a writer); one that fits a leaf is read whole and waits for a lane;
//! a stream, or a file whose root is a fair share of its work, is handed
//! back to be hashed from the calling thread; any other is hashed at once,
//! after the ones waiting for lanes. An input that must be read in turn
//! (standard input, one stream for every `-`) is started only once
//! everything before it has been reported.

use std::any::Any;
use std::collections::VecDeque;
use std::iter::Peekable;
use std::ops::{ControlFlow, Range};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::kernel::hash_single_leaf_inputs;
use super::tuning;
use crate::digest::Digest;
use crate::params::TreeParams;

/// One input of a run of many, as the engine schedules it.
pub(crate) trait Input: Send + Sized {
    /// What the caller is given for it, in input order.
    type Output: Send;

    /// What [`prepare`](Input::prepare) learned of an input it read whole,
    /// handed back with its checksum.
    type ReadWhole: Send;

    /// Whether the input must be hashed on the calling thread once every
    /// input before it has been reported (standard input, read in turn).
    fn in_turn(&self) -> bool {
        false
    }

    /// The bytes the input holds while it waits (its name, and what its
    /// caller keeps for it).
    fn held_bytes(&self) -> usize {
        0
    }

    /// Opens the input and says how it is to be hashed; an input of at most
    /// one leaf may be read whole, appended to `arena`.
    fn prepare(&mut self, arena: &mut Vec<u8>) -> Step<Self::ReadWhole>;

    /// The output of an input that `prepare` read into the arena, given
    /// what `prepare` learned of it and its checksum.
    fn small_done(self, read: Self::ReadWhole, digest: Digest) -> Self::Output;

    /// Hashes an input that `prepare` left whole, or gives at once the
    /// output of one that needs no hashing. Once `abandoned` is set, the
    /// caller takes no more outputs: the hashing may stop where it is
    /// ([`Sink::go_on`](super::Sink::go_on)).
    fn hash_whole(self, abandoned: &AtomicBool) -> Self::Output;
}

/// What [`Input::prepare`] found; `R` is what it learned of an input it read
/// whole ([`Input::ReadWhole`]).
pub(crate) enum Step<R> {
    /// Nothing to hash (it could not be opened, or is no file at all):
    /// [`Input::hash_whole`] gives its output at once.
    Done,
    /// Its bytes are `arena[bytes]`, at most one leaf of `tree`: hash them
    /// in a SIMD lane, beside others.
    Small {
        tree: TreeParams,
        bytes: Range<usize>,
        read: R,
    },
    /// Hash it whole, with [`Input::hash_whole`]; the engine decides on
    /// which thread from its shape.
    Whole(Shape),
}

/// What an input hashed whole is, for the engine to decide where to hash it
/// (`tuning::hash_on_caller`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// Bytes read until the end: a pipe, a FIFO, a device.
    Stream,
    /// `leaves` leaves of a regular file, with `tree`.
    File { tree: TreeParams, leaves: u64 },
}

/// Whether an input hashed whole is hashed from the calling thread, outside
/// the pool, whose batches then go to the pool while the next one is read:
/// a stream (reading overlaps hashing, and no pool thread waits for its
/// writer), and a file of more than a batch of leaves so small that its
/// root is a fair share of the work (the root then overlaps the leaves of
/// the next batch). Any other input is hashed on a pool thread, beside the
/// others.
fn hash_on_caller(shape: Shape) -> bool {
    match shape {
        Shape::Stream => true,
        Shape::File { tree, leaves } => {
            leaves > tuning::batch_leaves(&tree) as u64
                && tree.leaf_size() <= tuning::ROOT_SHARE * tree.digest_size() as u64
        }
    }
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

/// Hashes every input and hands the outputs to `report` in input order. When
/// `report` answers `Break`, no further input is started, and those already
/// started stop at their next window or batch, unreported.
pub(crate) fn hash_each<I, It, F>(inputs: It, mut report: F)
where
    I: Input,
    It: Iterator<Item = I>,
    F: FnMut(Event<I::Output>) -> ControlFlow<()>,
{
    let mut inputs = inputs.peekable();
    if rayon::current_thread_index().is_some() {
        // Already on a pool thread: waiting here for tasks spawned on the
        // same pool could starve it.
        return hash_each_here(inputs, report);
    }
    let board: Board<Reply<I>> = Board::new();
    // Set once `report` answers `Break`: the inputs in flight stop.
    let abandoned = AtomicBool::new(false);
    rayon::in_place_scope(|scope| {
        // Inputs `reported..taken` are in flight; `slots[i]` is input
        // `reported + i`: the bytes it holds, and its reply once there.
        // Made whole at the start, so that it never has to grow later, when
        // the inputs may hold all the memory there is (`ulimit -v`).
        // (As are the outputs taken from the board: never more than the
        // inputs in flight.)
        let mut slots: VecDeque<(usize, Option<Reply<I>>)> =
            VecDeque::with_capacity(tuning::INPUTS_IN_FLIGHT);
        let mut arrived = Vec::with_capacity(tuning::INPUTS_IN_FLIGHT);
        let mut reported = 0usize;
        let mut held = 0usize;
        let mut stopped = false;
        loop {
            // Start tasks while there is room for a whole one, so that
            // small inputs fill the lanes.
            while !stopped
                && slots.len() + tuning::LANES <= tuning::INPUTS_IN_FLIGHT
                && held < tuning::INPUT_BYTES_IN_FLIGHT
            {
                let Some(next) = inputs.peek() else { break };
                if next.in_turn() {
                    // Only once everything before it is reported, and what
                    // was reported is flushed: it may wait for its reader.
                    if !slots.is_empty() {
                        break;
                    }
                    if report(Event::Waiting).is_break() {
                        stopped = true;
                        abandoned.store(true, Ordering::Relaxed);
                        break;
                    }
                }
                let first = reported + slots.len();
                let room = tuning::INPUT_BYTES_IN_FLIGHT - held;
                let task = take_task(&mut inputs, first, tuning::LANES, room);
                for (_, input) in &task {
                    slots.push_back((input.held_bytes(), None));
                    held += input.held_bytes();
                }
                let (board, abandoned) = (&board, &abandoned);
                scope.spawn(move |_| {
                    // A panic is handed on, so that the caller does not wait
                    // for outputs that will never come.
                    let run = AssertUnwindSafe(|| {
                        run_task(task, abandoned, &mut |done| board.post(done));
                    });
                    if let Err(panic) = panic::catch_unwind(run) {
                        board.post_panic(panic);
                    }
                });
            }
            // Report what is done, in order, hashing here the large inputs
            // handed back.
            while let Some((_, Some(_))) = slots.front() {
                let (bytes, reply) = slots.pop_front().expect("checked");
                held -= bytes;
                reported += 1;
                let reply = reply.expect("checked");
                if stopped {
                    continue;
                }
                if matches!(reply, Reply::Large(_)) && report(Event::Waiting).is_break() {
                    stopped = true;
                    continue;
                }
                if report(Event::Ready(reply.output(&abandoned))).is_break() {
                    stopped = true;
                }
            }
            if stopped {
                abandoned.store(true, Ordering::Relaxed);
            }
            if slots.is_empty() && (stopped || inputs.peek().is_none()) {
                return;
            }
            if slots.front().is_some_and(|(_, output)| output.is_none()) {
                let in_time = board.take(reported, Some(tuning::QUIET_BEFORE_FLUSH), &mut arrived);
                if !in_time {
                    if !stopped && report(Event::Waiting).is_break() {
                        stopped = true;
                        abandoned.store(true, Ordering::Relaxed);
                    }
                    board.take(reported, None, &mut arrived);
                }
                for (index, output) in arrived.drain(..) {
                    slots[index - reported].1 = Some(output);
                }
            }
        }
    });
}

/// [`hash_each`] on this thread, in order, a task at a time.
fn hash_each_here<I, F>(mut inputs: Peekable<impl Iterator<Item = I>>, mut report: F)
where
    I: Input,
    F: FnMut(Event<I::Output>) -> ControlFlow<()>,
{
    let going = AtomicBool::new(false);
    while inputs.peek().is_some() {
        let task = take_task(&mut inputs, 0, tuning::LANES, tuning::INPUT_BYTES_IN_FLIGHT);
        let mut replies = Vec::with_capacity(task.len());
        run_task(task, &going, &mut |done| replies.extend(done));
        // Inputs that waited for a lane come after some that did not.
        replies.sort_unstable_by_key(|(index, _)| *index);
        for (_, reply) in replies {
            if report(Event::Ready(reply.output(&going))).is_break() {
                return;
            }
        }
    }
}

/// Where tasks leave their outputs for the caller, who is woken only when
/// the one it waits for (the next to report) arrives: one wake-up for all
/// that finished before it.
struct Board<O> {
    posted: Mutex<Posted<O>>,
    arrived: Condvar,
}

struct Posted<O> {
    /// Outputs not yet taken, with their input's number.
    outputs: Vec<(usize, O)>,
    /// The input the caller waits for.
    awaited: usize,
    /// A task's panic (a bug), to be raised again in the caller.
    panic: Option<Box<dyn Any + Send>>,
}

impl<O> Board<O> {
    fn new() -> Self {
        Board {
            posted: Mutex::new(Posted {
                // (Whole at the start, as the slots.)
                outputs: Vec::with_capacity(tuning::INPUTS_IN_FLIGHT),
                awaited: usize::MAX,
                panic: None,
            }),
            arrived: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Posted<O>> {
        // Nothing panics while holding the lock.
        self.posted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves outputs for the caller.
    fn post(&self, outputs: Vec<(usize, O)>) {
        let mut posted = self.lock();
        let awaited = outputs.iter().any(|(index, _)| *index == posted.awaited);
        posted.outputs.extend(outputs);
        drop(posted);
        if awaited {
            self.arrived.notify_one();
        }
    }

    /// Hands a task's panic to the caller.
    fn post_panic(&self, panic: Box<dyn Any + Send>) {
        self.lock().panic = Some(panic);
        self.arrived.notify_one();
    }

    /// Moves every output posted to `into`, once input `awaited` is among
    /// them or `patience` has run out, and says which; raises a task's
    /// panic. (Moved, not swapped for a new vector, so that neither side
    /// ever allocates.)
    fn take(&self, awaited: usize, patience: Option<Duration>, into: &mut Vec<(usize, O)>) -> bool {
        let deadline = patience.map(|patience| Instant::now() + patience);
        let mut posted = self.lock();
        posted.awaited = awaited;
        loop {
            if let Some(panic) = posted.panic.take() {
                drop(posted);
                panic::resume_unwind(panic);
            }
            if posted.outputs.iter().any(|(index, _)| *index == awaited) {
                into.append(&mut posted.outputs);
                return true;
            }
            posted = match deadline {
                None => self
                    .arrived
                    .wait(posted)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        into.append(&mut posted.outputs);
                        return false;
                    }
                    self.arrived
                        .wait_timeout(posted, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

/// Takes up to `most` inputs that need not be read in turn, or one that
/// must, numbering them from `first`; no more once they hold `room` bytes.
fn take_task<I: Input, It: Iterator<Item = I>>(
    inputs: &mut Peekable<It>,
    first: usize,
    most: usize,
    room: usize,
) -> Vec<(usize, I)> {
    let mut task: Vec<(usize, I)> = Vec::new();
    let mut held = 0;
    while task.len() < most && held < room {
        if task.first().is_some_and(|(_, input)| input.in_turn()) {
            break;
        }
        match inputs.peek() {
            Some(input) if !input.in_turn() || task.is_empty() => {
                let input = inputs.next().expect("peeked");
                held += input.held_bytes();
                task.push((first + task.len(), input));
            }
            _ => break,
        }
    }
    task
}

/// Prepares and hashes a task's inputs, handing their replies, each with
/// its index, to `send`: together where they are done together (one wake-up
/// of the caller for a lane group), and those before an input hashed whole
/// before it is, since it may block.
fn run_task<I: Input>(
    task: Vec<(usize, I)>,
    abandoned: &AtomicBool,
    send: &mut dyn FnMut(Vec<(usize, Reply<I>)>),
) {
    // Taken out of the thread-local, not borrowed: hashing an input whole
    // may run another task on this thread.
    let mut arena = ARENA.take();
    arena.clear();
    let mut smalls: Vec<Small<I>> = Vec::new();
    let mut ready = Vec::new();
    for (index, mut input) in task {
        match input.prepare(&mut arena) {
            Step::Done => ready.push((index, Reply::Done(input.hash_whole(abandoned)))),
            Step::Small { tree, bytes, read } => smalls.push(Small {
                index,
                input,
                tree,
                bytes,
                read,
            }),
            Step::Whole(shape) if hash_on_caller(shape) => {
                // Handed back at once, with those before it: the caller may
                // need it read before the next input can be opened (a
                // writer feeding two FIFOs in turn).
                hash_smalls(&mut smalls, &arena, &mut ready);
                arena.clear();
                ready.push((index, Reply::Large(input)));
                send(std::mem::take(&mut ready));
            }
            Step::Whole(_) => {
                hash_smalls(&mut smalls, &arena, &mut ready);
                arena.clear();
                if !ready.is_empty() {
                    send(std::mem::take(&mut ready));
                }
                send(vec![(index, Reply::Done(input.hash_whole(abandoned)))]);
            }
        }
    }
    hash_smalls(&mut smalls, &arena, &mut ready);
    ARENA.set(arena);
    if !ready.is_empty() {
        send(ready);
    }
}

/// What a task hands back for an input.
enum Reply<I: Input> {
    /// Its output.
    Done(I::Output),
    /// A large input, opened, to be hashed by the caller.
    Large(I),
}

impl<I: Input> Reply<I> {
    /// The output, hashing a large input here.
    fn output(self, abandoned: &AtomicBool) -> I::Output {
        match self {
            Reply::Done(output) => output,
            Reply::Large(input) => input.hash_whole(abandoned),
        }
    }
}

/// An input read whole into the arena, waiting for a lane.
struct Small<I: Input> {
    index: usize,
    input: I,
    tree: TreeParams,
    /// Where its bytes are in the arena.
    bytes: Range<usize>,
    read: I::ReadWhole,
}

/// Hashes the inputs waiting for a lane, side by side.
fn hash_smalls<I: Input>(
    smalls: &mut Vec<Small<I>>,
    arena: &[u8],
    ready: &mut Vec<(usize, Reply<I>)>,
) {
    if smalls.is_empty() {
        return;
    }
    let inputs: Vec<(TreeParams, &[u8])> = smalls
        .iter()
        .map(|small| (small.tree, &arena[small.bytes.clone()]))
        .collect();
    let digests = hash_single_leaf_inputs(&inputs);
    for (small, digest) in smalls.drain(..).zip(digests) {
        let output = small.input.small_done(small.read, digest);
        ready.push((small.index, Reply::Done(output)));
    }
}

thread_local! {
    /// The memory small inputs are read into, kept for the next task on the
    /// thread: fresh memory for every task would cost a page fault per 4 KiB
    /// read. It holds a lane group's inputs, at most `LANES` MiB.
    static ARENA: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::params::Algorithm;

    /// How a test input behaves.
    #[derive(Clone, Copy)]
    enum Kind {
        /// Read into the arena: `len` bytes of a pattern.
        Small(usize),
        /// Hashed whole after a pause (a slow file, a FIFO).
        Slow(u64),
        /// Nothing to hash.
        Nothing,
        /// Read in turn (a stream, hashed on the calling thread).
        InTurn,
        /// A stream, handed back by its task to the calling thread.
        Large,
    }

    struct Fake<'a> {
        index: usize,
        kind: Kind,
        tree: TreeParams,
        /// Inputs taken and not yet reported, across the run.
        in_flight: &'a AtomicUsize,
        /// Inputs reported so far.
        reported: &'a AtomicUsize,
    }

    fn data(index: usize, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + index) as u8).collect()
    }

    impl Input for Fake<'_> {
        type Output = (usize, Option<Digest>);
        type ReadWhole = ();

        fn in_turn(&self) -> bool {
            matches!(self.kind, Kind::InTurn)
        }

        fn prepare(&mut self, arena: &mut Vec<u8>) -> Step<()> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(now <= tuning::INPUTS_IN_FLIGHT, "{now} inputs in flight");
            match self.kind {
                Kind::Small(len) => {
                    let start = arena.len();
                    arena.extend_from_slice(&data(self.index, len));
                    Step::Small {
                        tree: self.tree,
                        bytes: start..arena.len(),
                        read: (),
                    }
                }
                Kind::Slow(_) => Step::Whole(Shape::File {
                    tree: self.tree,
                    leaves: 1,
                }),
                Kind::InTurn => {
                    let reported = self.reported.load(Ordering::SeqCst);
                    assert_eq!(reported, self.index, "read in turn too early");
                    Step::Whole(Shape::Stream)
                }
                Kind::Large => Step::Whole(Shape::Stream),
                Kind::Nothing => Step::Done,
            }
        }

        fn small_done(self, _read: (), digest: Digest) -> Self::Output {
            (self.index, Some(digest))
        }

        fn hash_whole(self, _abandoned: &AtomicBool) -> Self::Output {
            match self.kind {
                Kind::Slow(millis) => {
                    std::thread::sleep(Duration::from_millis(millis));
                    (
                        self.index,
                        Some(crate::hash(&self.tree, &data(self.index, 100))),
                    )
                }
                Kind::InTurn | Kind::Large => {
                    assert!(rayon::current_thread_index().is_none(), "not on the caller");
                    (self.index, None)
                }
                _ => (self.index, None),
            }
        }
    }

    fn kind_of(index: usize) -> Kind {
        match index % 23 {
            5 => Kind::Slow(30),
            9 | 10 => Kind::Nothing,
            13 | 14 => Kind::Large,
            17 => Kind::InTurn,
            n => Kind::Small(n * 37 % 200),
        }
    }

    #[test]
    fn outputs_come_in_order_whatever_finishes_first() {
        let trees = [
            TreeParams::new(Algorithm::Blake2b, 64, 256).unwrap(),
            TreeParams::new(Algorithm::Blake2s, 5, 200).unwrap(),
        ];
        let in_flight = AtomicUsize::new(0);
        let reported_count = AtomicUsize::new(0);
        let inputs = (0..300).map(|index| Fake {
            index,
            kind: kind_of(index),
            tree: trees[index % 3 % 2],
            in_flight: &in_flight,
            reported: &reported_count,
        });
        let mut reported = Vec::new();
        let mut waited = 0;
        hash_each(inputs, |event| {
            match event {
                Event::Ready((index, digest)) => {
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let tree = &trees[index % 3 % 2];
                    let expected = match kind_of(index) {
                        Kind::Small(len) => Some(crate::hash(tree, &data(index, len))),
                        Kind::Slow(_) => Some(crate::hash(tree, &data(index, 100))),
                        Kind::Nothing | Kind::InTurn | Kind::Large => None,
                    };
                    assert_eq!(digest, expected, "input {index}");
                    reported.push(index);
                    reported_count.fetch_add(1, Ordering::SeqCst);
                }
                Event::Waiting => waited += 1,
            }
            ControlFlow::Continue(())
        });
        assert_eq!(reported, (0..300).collect::<Vec<_>>());
        // At least before each input read in turn, and for the slow ones.
        assert!(waited >= 13, "{waited} waits");
    }

    #[test]
    fn a_break_stops_taking_inputs() {
        let tree = TreeParams::default();
        let in_flight = AtomicUsize::new(0);
        let reported_count = AtomicUsize::new(0);
        let taken = AtomicUsize::new(0);
        let inputs = (0..10_000).map(|index| {
            taken.fetch_add(1, Ordering::SeqCst);
            Fake {
                index,
                kind: Kind::Small(index % 50),
                tree,
                in_flight: &in_flight,
                reported: &reported_count,
            }
        });
        let mut reported = 0;
        hash_each(inputs, |event| {
            if let Event::Ready((index, _)) = event {
                in_flight.fetch_sub(1, Ordering::SeqCst);
                assert_eq!(index, reported);
                reported += 1;
            }
            if reported == 100 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(reported, 100);
        let taken = taken.load(Ordering::SeqCst);
        assert!(taken <= 100 + tuning::INPUTS_IN_FLIGHT + 1, "{taken} taken");
    }

    /// The inputs in flight when `report` asks to stop are abandoned: each
    /// sees the flag, and the run ends without waiting for them to finish.
    #[test]
    fn a_break_abandons_the_inputs_in_flight() {
        /// Input 0 is done at once; the others hash until abandoned (a run
        /// that did not abandon them would fail after a minute).
        struct Waits<'a> {
            index: usize,
            abandoned: &'a AtomicUsize,
        }
        impl Input for Waits<'_> {
            type Output = usize;
            type ReadWhole = ();
            fn prepare(&mut self, _arena: &mut Vec<u8>) -> Step<()> {
                let tree = TreeParams::default();
                Step::Whole(Shape::File { tree, leaves: 1 })
            }
            fn small_done(self, _read: (), _digest: Digest) -> usize {
                self.index
            }
            fn hash_whole(self, abandoned: &AtomicBool) -> usize {
                if self.index == 0 {
                    return 0;
                }
                let deadline = Instant::now() + Duration::from_secs(60);
                while !abandoned.load(Ordering::Relaxed) {
                    assert!(
                        Instant::now() < deadline,
                        "input {} never abandoned",
                        self.index
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                self.abandoned.fetch_add(1, Ordering::SeqCst);
                self.index
            }
        }
        let abandoned = AtomicUsize::new(0);
        let inputs = (0..4).map(|index| Waits {
            index,
            abandoned: &abandoned,
        });
        let mut reported = Vec::new();
        hash_each(inputs, |event| {
            if let Event::Ready(index) = event {
                reported.push(index);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
        assert_eq!(reported, [0]);
        // (One task took all four: the run waited for it, each input
        // returning once abandoned.)
        assert_eq!(abandoned.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_panicking_input_is_not_waited_for() {
        struct Panics;
        impl Input for Panics {
            type Output = ();
            type ReadWhole = ();
            fn prepare(&mut self, _arena: &mut Vec<u8>) -> Step<()> {
                let tree = TreeParams::default();
                Step::Whole(Shape::File { tree, leaves: 1 })
            }
            fn small_done(self, _read: (), _digest: Digest) {}
            fn hash_whole(self, _abandoned: &AtomicBool) {
                panic!("a bug");
            }
        }
        let run = panic::catch_unwind(|| {
            hash_each(std::iter::once(Panics), |_| ControlFlow::Continue(()));
        });
        assert!(run.is_err());
    }
}
