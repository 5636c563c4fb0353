//! Where the bytes come from: files by name, open files, and standard input.
//!
//! An input is opened and `fstat`ed ([`Opened`]), then its leaves are handed
//! to the engine as the source that suits it:
//!
//! - a regular file of up to 256 KiB is read whole, and closed, at once: its
//!   leaves are hashed beside other files' in the SIMD lanes;
//! - a larger one is mapped a window of whole leaves at a time (see
//!   `mapped`), so resident memory stays at the leaves being hashed,
//!   whatever the file size;
//! - everything else — pipes, FIFOs, terminals, character devices, `/proc`
//!   files whose size says 0 — is a stream, read to its end in its turn.
//!
//! Standard input that is a regular file is hashed as that file, from its
//! current offset, and left at its end as reading it would. A regular file
//! is `fstat`ed before and after: a change of size, modification or change
//! time, device or inode, or a mapped page found past the end of the file
//! (see `sigbus`), makes the result [`Error::Changed`] instead of a digest.
//!
//! Hashing a mapped file installs a SIGBUS handler, once per process (see
//! `sigbus`): it answers faults in bt2sum's own windows only and hands any
//! other fault to the handler that was there before.

mod buffer;
mod mapped;
mod platform;
#[cfg(unix)]
mod sigbus;
#[cfg(not(unix))]
#[path = "unguarded.rs"]
mod sigbus;
#[cfg(windows)]
mod win32;

use std::collections::VecDeque;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::digest::Digest;
use crate::engine::{
    self as engine, BATCH_LEAVES, BIG_LEAF, Done, Engine, Event, Feed, Hashed, LEAF_COST, Leaf,
    LeafKernel, LeafSink, Root, Source, Stream, check_leaf_count,
};
use crate::error::Error;
use crate::params::{Selection, TreeParams};
use buffer::Buffer;
pub use platform::Stamp;
#[doc(hidden)]
pub use platform::duplicate_stdin;

/// A regular file up to this long is read whole, and closed, at once.
const SMALL: u64 = 256 << 10;
/// The most inputs a run of many holds at once (hashed, or waiting for
/// their turn to be reported).
const IN_FLIGHT: usize = 1024;
/// The bytes after an excerpt's end that are counted for its error message.
const EXCESS_COUNTED: u64 = 64 << 20;

/// Hashes the file at `path` (or whatever it names: a FIFO, a device, …).
///
/// A regular file of more than 256 KiB is mapped a window at a time; the
/// first such file installs a SIGBUS handler for the process, which answers
/// faults in these windows only (a file cut short while it is hashed is then
/// [`Error::Changed`], not a crash) and hands any other fault to the
/// handler installed before it.
///
/// ```
/// use std::io::Write;
/// use bt2sum::{TreeParams, hash, hash_path};
///
/// let mut file = tempfile::NamedTempFile::new()?;
/// file.write_all(b"hello s3git\n")?;
/// let tree = TreeParams::default();
/// assert_eq!(hash_path(&tree, file.path())?, hash(&tree, b"hello s3git\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hash_path(tree: &TreeParams, path: impl AsRef<Path>) -> Result<Digest, Error> {
    hash_one(Job::path((), path.as_ref(), tree))
}

/// Hashes an open file of any kind from its current offset to its end.
pub fn hash_file(tree: &TreeParams, file: File) -> Result<Digest, Error> {
    hash_one(Job::new((), Target::File(Some(file)), tree))
}

/// Hashes standard input from its current offset to its end.
pub fn hash_stdin(tree: &TreeParams) -> Result<Digest, Error> {
    hash_one(Job::stdin((), tree))
}

/// Hashes what `reader` reads, to its end, retrying short and interrupted
/// reads.
///
/// ```
/// use bt2sum::{TreeParams, hash, hash_reader};
///
/// let tree = TreeParams::default();
/// let digest = hash_reader(&tree, &mut &b"hello s3git\n"[..])?;
/// assert_eq!(digest, hash(&tree, b"hello s3git\n"));
/// # Ok::<(), bt2sum::Error>(())
/// ```
pub fn hash_reader(tree: &TreeParams, reader: &mut dyn Read) -> Result<Digest, Error> {
    let mut stream = Stream::new(&Engine::new(), tree, 0, None);
    stream.read_from(reader, None, &mut ())?;
    Ok(stream.finish(&mut ())?.0)
}

fn hash_one(job: Job<()>) -> Result<Digest, Error> {
    let mut result = None;
    hash_each([job], |event| {
        if let Event::Ready(outcome) = event {
            result = Some(outcome.result);
        }
        ControlFlow::Continue(())
    });
    result
        .expect("every job has an outcome")
        .map(|hashed| hashed.digest)
}

/// An input opened for hashing, with what `fstat` said of it then.
pub(crate) struct Opened {
    file: Arc<File>,
    /// `None` for a stream that the system says nothing of (a pipe on
    /// Windows: see [`platform::metadata`]).
    before: Option<Metadata>,
    /// A regular file's stamp when it was opened, to tell whether it changed
    /// while it was hashed.
    stamp: Option<Stamp>,
    /// Where hashing starts: 0, or an open file's current offset.
    start: u64,
    /// Whether the offset is shared with other processes (standard input),
    /// and is to be left at the end as reading would leave it.
    shared_offset: bool,
}

impl Opened {
    /// Opens the file at `path`, at its start, without waiting for a
    /// FIFO's writer: that happens when it is read, in its turn (see
    /// [`platform::open_for_reading`]).
    fn path(path: &Path) -> Result<Opened, Error> {
        let file = platform::open_for_reading(path)?;
        let before = platform::metadata(&file)?;
        let stamp = stamp_of(&file, before.as_ref())?;
        Ok(Opened {
            file: Arc::new(file),
            before,
            stamp,
            start: 0,
            shared_offset: false,
        })
    }

    /// An open file, from its current offset if it is a regular file.
    /// (Standard input's duplicate shares its offset, so `bt2sum < FILE`
    /// after a partial read by a parent shell hashes from where the shell
    /// left off.)
    fn file(mut file: File, shared_offset: bool) -> Result<Opened, Error> {
        let before = platform::metadata(&file)?;
        let stamp = stamp_of(&file, before.as_ref())?;
        let start = if stamp.is_some() {
            file.stream_position()?
        } else {
            0
        };
        Ok(Opened {
            file: Arc::new(file),
            before,
            stamp,
            start,
            shared_offset,
        })
    }

    fn is_dir(&self) -> bool {
        self.before.as_ref().is_some_and(Metadata::is_dir)
    }

    /// The bytes from the start to the end, if this is a regular file.
    fn regular_length(&self) -> Option<u64> {
        self.stamp.map(|stamp| stamp.len.saturating_sub(self.start))
    }

    /// Fails with [`Error::Changed`] if this is a regular file whose stamp
    /// (size, times, identity) changed since it was opened. (A pipe's
    /// times change with every write.)
    fn unchanged(&self) -> Result<(), Error> {
        match &self.stamp {
            Some(before) if Stamp::now(&self.file)? != *before => Err(Error::Changed),
            _ => Ok(()),
        }
    }

    /// Fails if this regular file, read whole, held fewer bytes (`held`)
    /// than its size said: [`Error::Changed`] if its stamp changed, else
    /// [`Error::EndedEarly`], unless its file system gives sizes that are
    /// only placeholders (Linux's sysfs: 4096 for a line of text), whose
    /// files hold what reading them gives, as `cat` reads them.
    fn held_whole(&self, held: u64) -> Result<(), Error> {
        match self.regular_length() {
            Some(size) if held < size => {
                self.unchanged()?;
                if platform::sizes_are_placeholders(&self.file) {
                    return Ok(());
                }
                Err(Error::EndedEarly { held, size })
            }
            _ => Ok(()),
        }
    }

    /// Leaves the offset of standard input at the end, as reading would
    /// have, when it was not read through the descriptor (mapped): a
    /// second `-` then finds nothing left.
    fn seek_to_end(&self) -> Result<(), Error> {
        if self.shared_offset {
            (&*self.file).seek(SeekFrom::End(0))?;
        }
        Ok(())
    }

    /// Puts the offset of standard input back where hashing started, after
    /// a selection of leaves was read through the descriptor: a selection
    /// reads only its leaves, at their offsets, and leaves the offset be.
    fn rewind(&self) -> Result<(), Error> {
        if self.shared_offset {
            (&*self.file).seek(SeekFrom::Start(self.start))?;
        }
        Ok(())
    }

    /// Readies a stream for reading: waits for a FIFO's writer (and, where
    /// the system needs it, for data), and widens a pipe's buffer.
    fn start_stream(&self) -> Result<(), Error> {
        platform::wait_for_writer(&self.file)?;
        platform::wait_when_reading(&self.file)?;
        platform::widen_pipe(&self.file);
        Ok(())
    }
}

/// The stamp of an open file, if it is a regular file.
fn stamp_of(file: &File, before: Option<&Metadata>) -> Result<Option<Stamp>, Error> {
    match before {
        Some(before) if before.is_file() => Ok(Some(Stamp::settled(file, before)?)),
        _ => Ok(None),
    }
}

/// Reads `file` from where it is to its end, appending to `buffer`, at most
/// `most` bytes; an end met before `size` bytes is read past once more for
/// each time reading goes on (a file system that answered a read short
/// may answer the next). The bytes read.
///
/// (Through `take`, because `File::read_to_end` would ask the size and
/// offset again: two more system calls per file.)
fn read_until(mut file: &File, buffer: &mut Vec<u8>, size: u64, most: u64) -> io::Result<u64> {
    let mut read = 0;
    loop {
        let more = Read::by_ref(&mut file)
            .take(most - read)
            .read_to_end(buffer)? as u64;
        read += more;
        if more == 0 || read >= size.min(most) {
            return Ok(read);
        }
    }
}

/// A small file read whole: its bytes, or, longer than its size said (a
/// `/proc` file), the start of a stream.
enum Small {
    Whole(Buffer),
    Longer(Vec<u8>),
}

/// Reads the small regular file `opened` (`size` bytes by its stamp) whole,
/// and fails if it changed meanwhile or held less than it said.
fn read_small(opened: &Opened, size: u64) -> Result<Small, Error> {
    let mut bytes = Buffer::with_room(size as usize);
    let read = read_until(&opened.file, bytes.bytes_mut(), size, SMALL + 1)?;
    if read > SMALL {
        return Ok(Small::Longer(bytes.into_inner()));
    }
    opened.unchanged()?;
    opened.held_whole(read)?;
    Ok(Small::Whole(bytes))
}

/// What a worker made of a job's input (see [`Running::send`]).
enum Ready {
    /// A small file, read whole and closed.
    Whole(Buffer, Option<Stamp>),
    /// A small file of a few leaves, read whole and closed, to be hashed
    /// with its errand's other files ...
    Read(Buffer, Option<Stamp>, TreeParams),
    /// ... and hashed: its leaves' digests, in order.
    Hashed {
        digests: Vec<u8>,
        length: u64,
        stamp: Option<Stamp>,
    },
    /// Anything else, opened (and a small file's bytes, if it turned out
    /// longer than it said).
    Opened(Box<Opened>, Option<Vec<u8>>),
}

/// Where a worker leaves what it made of a job's input.
type Slot = Arc<std::sync::Mutex<Option<Result<Ready, Error>>>>;

/// A worker's opening of one input of an errand, and the slot for what it
/// made.
type Opening = Box<dyn FnOnce() -> (Slot, Result<Ready, Error>) + Send>;

/// Runs the openings of an errand, hashes the small files they read
/// together (a lane group of files at once), and leaves what each made in
/// its slot.
fn run_errand(kernel: LeafKernel, openings: Vec<Opening>) {
    let made: Vec<_> = openings.into_iter().map(|opening| opening()).collect();
    let read: Vec<(TreeParams, &[u8])> = made
        .iter()
        .filter_map(|(_, made)| match made {
            Ok(Ready::Read(bytes, _, tree)) => Some((*tree, engine::Bytes::bytes(bytes))),
            _ => None,
        })
        .collect();
    let mut digests = engine::hash_whole(kernel, &read).into_iter();
    drop(read);
    for (slot, made) in made {
        let made = made.map(|ready| match ready {
            Ready::Read(bytes, stamp, _) => Ready::Hashed {
                digests: digests.next().expect("a file's digests"),
                length: bytes.len() as u64,
                stamp,
            },
            ready => ready,
        });
        *crate::sys::lock(&slot) = Some(made);
    }
}

/// The error for a directory named as an input.
fn is_a_directory() -> Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::EISDIR).into();
    #[cfg(not(unix))]
    return io::Error::new(io::ErrorKind::IsADirectory, "Is a directory").into();
}

/// One input of a run of many ([`hash_each`]): a file by path, or standard
/// input, with its tree parameters; optionally a sink for its leaf digests,
/// a leaf range and a progress counter. Its `tag` comes back with its
/// [`Outcome`], for the caller to know which input it was.
pub struct Job<T, S = ()> {
    tag: T,
    target: Target,
    tree: TreeParams,
    leaves: Option<Selection>,
    /// The length of the file this input is an excerpt of, if it is one.
    excerpt_of: Option<u64>,
    sink: S,
    progress: Option<Arc<AtomicU64>>,
    /// Bytes the caller keeps for this job, counted as held while it is.
    held: usize,
    failed: Option<Error>,
}

/// What a [`Job`] names.
enum Target {
    Path(PathBuf),
    Stdin,
    /// An open file (taken when it is opened).
    File(Option<File>),
}

/// What hashing a [`Job`] gave.
pub struct Outcome<T, S> {
    /// The job's tag.
    pub tag: T,
    /// The job's leaf sink, fed every leaf digest.
    pub leaves: S,
    /// The checksum and length, or why there is none.
    pub result: Result<Hashed, Error>,
    /// A regular file's stamp while it was hashed (it did not change
    /// meanwhile: its size, times and identity); `None` for anything else.
    pub stamp: Option<Stamp>,
}

impl<T> Job<T> {
    /// A job hashing the file at `path` (or whatever it names) whole.
    pub fn path(tag: T, path: impl Into<PathBuf>, tree: &TreeParams) -> Self {
        Job::new(tag, Target::Path(path.into()), tree)
    }

    /// A job hashing standard input, from its current offset. Standard
    /// input is one stream: jobs naming it are hashed in turn, each once
    /// every job before it is done.
    pub fn stdin(tag: T, tree: &TreeParams) -> Self {
        Job::new(tag, Target::Stdin, tree)
    }

    fn new(tag: T, target: Target, tree: &TreeParams) -> Self {
        Job {
            tag,
            target,
            tree: *tree,
            leaves: None,
            excerpt_of: None,
            sink: (),
            progress: None,
            held: 0,
            failed: None,
        }
    }
}

impl<T, S: LeafSink> Job<T, S> {
    /// Fails with `error` without opening anything, in its place among the
    /// other jobs: an input known to be unusable (a file a walk could not
    /// look at, a standard input that was closed).
    pub fn failing(mut self, error: Error) -> Self {
        self.failed = Some(error);
        self
    }

    /// Hands every leaf digest to `sink`, in leaf order.
    pub fn with_leaves<L: LeafSink>(self, sink: L) -> Job<T, L> {
        Job {
            tag: self.tag,
            target: self.target,
            tree: self.tree,
            leaves: self.leaves,
            excerpt_of: self.excerpt_of,
            sink,
            progress: self.progress,
            held: self.held,
            failed: self.failed,
        }
    }

    /// Hashes only the leaves `leaves` selects of a regular file (a
    /// [`Range`] of leaf indices, or a [`Part`](crate::params::Part) of the
    /// leaves; cut at its end: a range past it hashes nothing), for their
    /// digests: the outcome's digest then means nothing, but its length is
    /// the file's.
    pub fn select(mut self, leaves: impl Into<Selection>) -> Self {
        self.leaves = Some(leaves.into());
        self
    }

    /// Says that the input is an excerpt of a `total`-byte file: it holds
    /// exactly the bytes of the leaves selected with
    /// [`select`](Self::select) (all of them if none are), and nothing
    /// else, such as what a ranged download of the file gives (a stream, or
    /// a regular file it was saved to). Its leaves get their place in the
    /// file (node offsets, and the file's final leaf its last-node flag),
    /// and the outcome's length is `total`. An input of another length
    /// fails with [`Error::ExcerptLength`]; a regular file does so before
    /// it is read.
    pub fn excerpt_of(mut self, total: u64) -> Self {
        self.excerpt_of = Some(total);
        self
    }

    /// Counts `bytes` that the caller (its tag or sink) keeps for this job
    /// toward the memory [`hash_each`] lets the jobs in flight hold, so that
    /// jobs carrying much are taken on fewer at a time.
    pub fn holds(mut self, bytes: usize) -> Self {
        self.held = bytes;
        self
    }

    /// Adds the bytes hashed to `counter`, if there is one, as the work goes.
    pub fn progress(mut self, counter: Option<Arc<AtomicU64>>) -> Self {
        self.progress = counter;
        self
    }

    /// What the job holds in memory while in flight.
    fn weight(&self) -> usize {
        let name = match &self.target {
            Target::Path(path) => path.as_os_str().len(),
            _ => 0,
        };
        name + self.held
    }

    fn count(&self, bytes: u64) {
        if let Some(progress) = &self.progress {
            progress.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    fn open(&mut self) -> Result<Opened, Error> {
        match &mut self.target {
            Target::Path(path) => Opened::path(path),
            Target::Stdin => Opened::file(duplicate_stdin()?, true),
            Target::File(file) => Opened::file(file.take().expect("opened once"), false),
        }
    }
}

/// Hashes many inputs, several at once on the rayon pool, and hands each
/// outcome to `report` in the order of `jobs`, as soon as it and every one
/// before it are done. The leaves of small and large files alike are hashed
/// side by side in the SIMD lanes. Jobs are taken from the iterator only as
/// room frees up, so a long list is never held whole. When `report`
/// answers [`ControlFlow::Break`], no further job is started.
///
/// ```
/// use std::ops::ControlFlow;
/// use bt2sum::{Event, Job, TreeParams, hash, hash_each};
///
/// let dir = tempfile::tempdir()?;
/// let tree = TreeParams::default();
/// let mut jobs = Vec::new();
/// for i in 0..10 {
///     let path = dir.path().join(format!("f{i}"));
///     std::fs::write(&path, vec![b'x'; i])?;
///     jobs.push(Job::path(i, path, &tree));
/// }
/// let mut seen = Vec::new();
/// hash_each(jobs, |event| {
///     if let Event::Ready(outcome) = event {
///         let hashed = outcome.result.expect("readable");
///         assert_eq!(hashed.digest, hash(&tree, &vec![b'x'; outcome.tag]));
///         seen.push(outcome.tag);
///     }
///     ControlFlow::Continue(())
/// });
/// assert_eq!(seen, (0..10).collect::<Vec<_>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hash_each<T, S>(
    jobs: impl IntoIterator<Item = Job<T, S>>,
    mut report: impl FnMut(Event<Outcome<T, S>>) -> ControlFlow<()>,
) where
    S: LeafSink,
{
    let mut owner = Owner::new();
    let mut jobs = jobs.into_iter();
    let mut next_job: Option<Job<T, S>> = None;
    let flow = loop {
        if owner.plan_opened() {
            continue;
        }
        match owner.report_front(&mut report) {
            Some(ControlFlow::Continue(())) => continue,
            Some(stop) => break stop,
            None => {}
        }
        // Queue the next window of the first file with leaves left to
        // queue; with none, take on the next job if there is room.
        if let Some(running) = owner
            .flight
            .iter_mut()
            .find(|running| running.leaves_left())
        {
            if running.queue_window(&owner.engine) {
                continue;
            }
        } else {
            match next_job.take().or_else(|| jobs.next()) {
                None if owner.flight.is_empty() => break ControlFlow::Continue(()),
                None => {}
                Some(job) => match owner.take_on(job) {
                    None => continue,
                    given_back => next_job = given_back,
                },
            }
        }
        if owner.wait(&mut report).is_break() {
            break ControlFlow::Break(());
        }
    };
    if flow.is_break() {
        owner.engine.abandon();
    }
}

/// What the thread that runs [`hash_each`] holds: the jobs in flight, in
/// input order, and what they hold of the budget.
struct Owner<T, S> {
    engine: Engine,
    flight: VecDeque<Running<T, S>>,
    /// The bytes the jobs in flight hold, and the files they keep open
    /// (those being opened on the workers counted).
    held: usize,
    open: usize,
    /// The jobs at the back of `flight` being opened on the workers, and
    /// the most at once: each may hold a small file's bytes.
    opening: usize,
    opening_most: usize,
    /// The openings not yet sent to the workers: they go a few at once,
    /// for a worker to wake once for several files.
    errands: Vec<Opening>,
    /// Whether an outcome was reported since the last `Waiting`.
    reported: bool,
}

impl<T, S: LeafSink> Owner<T, S> {
    fn new() -> Self {
        let engine = Engine::new();
        let budget = engine.budget();
        Owner {
            engine,
            flight: VecDeque::new(),
            held: 0,
            open: 0,
            opening: 0,
            opening_most: (budget.reading_whole / SMALL as usize).clamp(1, budget.inputs),
            errands: Vec::with_capacity(ERRAND_FILES),
            reported: false,
        }
    }

    /// Plans the first input being opened on the workers, if it is opened
    /// (they are planned in their order); whether it was.
    fn plan_opened(&mut self) -> bool {
        let first = self.flight.len() - self.opening;
        if self.opening == 0 || !self.flight[first].take_ready(&self.engine) {
            return false;
        }
        self.open = self.open - 1 + usize::from(self.flight[first].opened.is_some());
        self.opening -= 1;
        true
    }

    /// Reports the first input in flight if it is done: `None` if it is
    /// not.
    fn report_front(
        &mut self,
        report: &mut impl FnMut(Event<Outcome<T, S>>) -> ControlFlow<()>,
    ) -> Option<ControlFlow<()>> {
        let front = self.flight.front_mut()?;
        if let Work::ToOpen = front.work {
            front.reopen(&self.engine);
            self.open += usize::from(front.opened.is_some());
        }
        front.drain();
        if front.ready() {
            let running = self.flight.pop_front().expect("a front");
            self.held -= running.job.weight();
            self.open -= usize::from(running.opened.is_some());
            self.reported = true;
            return Some(report(Event::Ready(running.finish())));
        }
        None
    }

    /// Takes `job` on, if there is room for it: it is opened on a worker if
    /// it names a path, else here. Gives it back if there is no room.
    fn take_on(&mut self, job: Job<T, S>) -> Option<Job<T, S>> {
        // (Standard input is opened in its turn: its offset is where the
        // jobs before it left it. Those being opened stay at the back of
        // `flight`: any other job waits for them.)
        let by_path = matches!(job.target, Target::Path(_)) && job.failed.is_none();
        let room = self.flight.len() < IN_FLIGHT
            && self.open < self.engine.budget().inputs
            && (self.held == 0 || self.held + job.weight() <= self.engine.budget().held)
            && (self.flight.is_empty() || !matches!(job.target, Target::Stdin))
            && match by_path {
                true => self.opening < self.opening_most,
                false => self.opening == 0,
            };
        if !room {
            return Some(job);
        }
        if by_path {
            self.held += job.weight();
            self.open += 1;
            self.opening += 1;
            let (running, opening) = Running::send(job);
            self.flight.push_back(running);
            self.errands.push(opening);
            if self.errands.len() == ERRAND_FILES {
                self.send_errands();
            }
            return None;
        }
        match Running::start(job, &self.engine) {
            Ok(running) => {
                self.held += running.job.weight();
                self.open += usize::from(running.opened.is_some());
                self.flight.push_back(running);
            }
            // Out of descriptors: tried again once the inputs in flight are
            // done, or failed if none are.
            Err(refused) if self.flight.is_empty() => {
                let (job, error) = *refused;
                self.flight.push_back(Running::failed(job, error.into()))
            }
            Err(refused) => return Some(refused.0),
        }
        None
    }

    /// Sends the openings gathered to the workers, as one errand, which
    /// hashes the small files it reads together (a lane group of files).
    fn send_errands(&mut self) {
        if !self.errands.is_empty() {
            let (openings, kernel) = (std::mem::take(&mut self.errands), self.engine.kernel());
            self.engine
                .run(Box::new(move || run_errand(kernel, openings)));
        }
    }

    /// Waits, doing queued work meanwhile, until the first input is done,
    /// the next window fits, or the next input being opened is; or, if the
    /// first input is a stream, reads it to its end: the inputs behind it
    /// were taken on while there was room, and are hashed meanwhile.
    fn wait(
        &mut self,
        report: &mut impl FnMut(Event<Outcome<T, S>>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        self.send_errands();
        if std::mem::take(&mut self.reported) && report(Event::Waiting).is_break() {
            return ControlFlow::Break(());
        }
        let front = self.flight.front_mut().expect("inputs in flight");
        if let Work::Stream { .. } = front.work {
            front.read_stream(&self.engine);
            return ControlFlow::Continue(());
        }
        let front = self.flight.front().expect("inputs in flight");
        let window = self
            .flight
            .iter()
            .find(|running| running.leaves_left())
            .map(Running::window_bytes);
        let opening = self
            .flight
            .len()
            .checked_sub(self.opening)
            .filter(|_| self.opening > 0);
        self.engine.wait_until(|| {
            front.ready()
                || window.is_some_and(|bytes| self.engine.has_room(bytes))
                || opening.is_some_and(|at| self.flight[at].is_opened())
        });
        ControlFlow::Continue(())
    }
}

/// The files a worker opens (and reads, if small) in one errand: two of
/// BLAKE2b's lane groups, so that the short files fill the lanes beside the
/// long ones (`engine::hash_whole` hashes the longest first). With 8, a tree of
/// 4 KiB and 256 KiB files side by side left half the lanes idle; 32 kept
/// the other thread waiting for errands.
const ERRAND_FILES: usize = 16;
/// The most leaves of a small file its errand hashes: their digests wait
/// for the owner outside the budget of bytes in flight.
const ERRAND_LEAVES: u64 = 64;

/// A job given back for want of a file descriptor, and the error.
type Refused<T, S> = Box<(Job<T, S>, io::Error)>;

/// A job in flight.
struct Running<T, S> {
    job: Job<T, S>,
    /// The input, while it is open.
    opened: Option<Opened>,
    stamp: Option<Stamp>,
    work: Work,
}

enum Work {
    /// Known before any leaf was hashed.
    Over(Result<Hashed, Error>),
    /// Leaves on the engine, `next..end` still to be queued.
    Leaves {
        feed: Box<Feed>,
        next: u64,
        end: u64,
        /// The input's length: its leaves are cut from it.
        length: u64,
        /// The input's byte that the file holds at its start (an excerpt
        /// holds the bytes from its first leaf on).
        skip: u64,
        /// The bytes read whole, if they were.
        whole: Option<Arc<Buffer>>,
    },
    /// A stream, read when it is the first in flight; the bytes of it read
    /// already.
    Stream { read: Vec<u8> },
    /// Being opened (and read, if small) on a worker.
    Opening(Slot),
    /// Not open: opened by the owner (now, or when it is the first in
    /// flight, if a worker was refused a descriptor for it).
    ToOpen,
}

impl<T, S: LeafSink> Running<T, S> {
    fn failed(job: Job<T, S>, error: Error) -> Self {
        Running {
            job,
            opened: None,
            stamp: None,
            work: Work::Over(Err(error)),
        }
    }

    /// Opens a job's input and queues what it can; gives the job back if
    /// no descriptor was free.
    fn start(mut job: Job<T, S>, engine: &Engine) -> Result<Self, Refused<T, S>> {
        if let Some(error) = job.failed.take() {
            return Ok(Running::failed(job, error));
        }
        let mut running = Running {
            job,
            opened: None,
            stamp: None,
            work: Work::ToOpen,
        };
        match running.job.open() {
            Ok(opened) => running.plan_opened(opened, engine),
            Err(Error::Io(error)) if out_of_descriptors(&error) => {
                return Err(Box::new((running.job, error)));
            }
            Err(error) => running.work = Work::Over(Err(error)),
        }
        Ok(running)
    }

    /// Has a worker open the job's input named by path, and read it if it is
    /// a small regular file whose every leaf is hashed, while the owner
    /// goes on: the owner plans it once it is done ([`Self::take_ready`]).
    fn send(job: Job<T, S>) -> (Self, Opening) {
        let slot = Slot::default();
        let Target::Path(path) = &job.target else {
            unreachable!("only inputs named by path are opened on a worker")
        };
        let (path, tree, small) = (
            path.clone(),
            job.tree,
            job.leaves.is_none() && job.excerpt_of.is_none(),
        );
        let ready = Arc::clone(&slot);
        let opening = move || {
            let made = Opened::path(&path).and_then(|opened| match opened.regular_length() {
                Some(size) if small && size <= SMALL => match read_small(&opened, size)? {
                    // (A file of many tiny leaves is queued by the owner, a
                    // window at a time: their digests count on the budget.)
                    Small::Whole(bytes) if tree.leaf_count(bytes.len() as u64) > ERRAND_LEAVES => {
                        Ok(Ready::Whole(bytes, opened.stamp))
                    }
                    Small::Whole(bytes) => Ok(Ready::Read(bytes, opened.stamp, tree)),
                    Small::Longer(read) => Ok(Ready::Opened(Box::new(opened), Some(read))),
                },
                _ => Ok(Ready::Opened(Box::new(opened), None)),
            });
            (ready, made)
        };
        let running = Running {
            job,
            opened: None,
            stamp: None,
            work: Work::Opening(slot),
        };
        (running, Box::new(opening))
    }

    /// Plans the input a worker opened, once it has; whether it had.
    fn take_ready(&mut self, engine: &Engine) -> bool {
        let Work::Opening(slot) = &self.work else {
            return true;
        };
        let Some(made) = crate::sys::lock(slot).take() else {
            return false;
        };
        let planned = match made {
            Ok(Ready::Whole(bytes, stamp)) => {
                self.stamp = stamp;
                let length = bytes.len() as u64;
                self.start_leaves(engine, length, 0, Some(Arc::new(bytes)))
            }
            Ok(Ready::Hashed {
                digests,
                length,
                stamp,
            }) => {
                self.stamp = stamp;
                let mut root = Root::new(&self.job.tree);
                root.feed(&digests);
                let size = self.job.tree.digest_size();
                for (index, digest) in (0..).zip(digests.chunks(size)) {
                    self.job.sink.leaves(index, digest);
                }
                self.job.count(length);
                let digest = root.finalize();
                self.work = Work::Over(Ok(Hashed { digest, length }));
                Ok(())
            }
            Ok(Ready::Read(..)) => unreachable!("an errand hashes the files it read"),
            Ok(Ready::Opened(opened, Some(read))) => {
                self.stamp = opened.stamp;
                self.opened = Some(*opened);
                self.work = Work::Stream { read };
                Ok(())
            }
            Ok(Ready::Opened(opened, None)) => {
                self.plan_opened(*opened, engine);
                Ok(())
            }
            Err(Error::Io(error)) if out_of_descriptors(&error) => {
                self.work = Work::ToOpen;
                Ok(())
            }
            Err(error) => Err(error),
        };
        if let Err(error) = planned {
            self.opened = None;
            self.work = Work::Over(Err(error));
        }
        true
    }

    /// Whether the worker opening its input is done.
    fn is_opened(&self) -> bool {
        match &self.work {
            Work::Opening(slot) => crate::sys::lock(slot).is_some(),
            _ => true,
        }
    }

    /// Opens again, on the owner, an input a worker was refused a
    /// descriptor for; fails if it is refused again.
    fn reopen(&mut self, engine: &Engine) {
        match self.job.open() {
            Ok(opened) => self.plan_opened(opened, engine),
            Err(error) => self.work = Work::Over(Err(error)),
        }
    }

    /// Plans an opened input, or fails with why it cannot be hashed.
    fn plan_opened(&mut self, opened: Opened, engine: &Engine) {
        self.stamp = opened.stamp;
        self.opened = Some(opened);
        if let Err(error) = self.plan(engine) {
            self.opened = None;
            self.work = Work::Over(Err(error));
        }
    }

    /// Chooses how the opened input is read, and reads it if it is small.
    fn plan(&mut self, engine: &Engine) -> Result<(), Error> {
        let opened = self.opened.as_ref().expect("opened");
        let tree = &self.job.tree;
        if opened.is_dir() {
            return Err(is_a_directory());
        }
        let Some(size) = opened.regular_length() else {
            if self.job.leaves.is_some() && self.job.excerpt_of.is_none() {
                return Err(Error::NotRegularFile);
            }
            self.work = Work::Stream { read: Vec::new() };
            return Ok(());
        };
        let (length, skip, whole) = match self.job.excerpt_of {
            Some(total) => {
                let leaves = self.selected(total);
                let bytes = tree.leaves_bytes(&leaves, total);
                let expected = bytes.end - bytes.start;
                if size != expected {
                    return Err(Error::ExcerptLength {
                        leaves,
                        total,
                        expected,
                        found: size,
                        more: false,
                    });
                }
                (total, bytes.start, None)
            }
            // (A selection of no leaf reads nothing: a file opened only to
            // see whether it is there.)
            None if size <= SMALL
                && (self.job.leaves.is_none() || !self.selected(size).is_empty()) =>
            {
                match read_small(opened, size)? {
                    Small::Whole(bytes) => {
                        if self.job.leaves.is_some() {
                            opened.rewind()?;
                        }
                        self.opened = None;
                        (bytes.len() as u64, 0, Some(Arc::new(bytes)))
                    }
                    Small::Longer(read) => {
                        self.work = Work::Stream { read };
                        return Ok(());
                    }
                }
            }
            None => (size, 0, None),
        };
        self.start_leaves(engine, length, skip, whole)
    }

    /// Starts hashing the leaves selected of an input of `length` bytes:
    /// those of bytes read `whole` at once, or the first window's.
    fn start_leaves(
        &mut self,
        engine: &Engine,
        length: u64,
        skip: u64,
        whole: Option<Arc<Buffer>>,
    ) -> Result<(), Error> {
        let tree = &self.job.tree;
        let leaves = self.selected(length);
        check_leaf_count(tree, leaves.end)?;
        self.work = Work::Leaves {
            feed: Box::new(Feed::new(tree, leaves.start)),
            next: leaves.start,
            end: leaves.end,
            length,
            skip,
            whole,
        };
        if let Work::Leaves { whole: Some(_), .. } = self.work {
            self.queue_window(engine);
        }
        Ok(())
    }

    /// The leaves selected of an input of `length` bytes.
    fn selected(&self, length: u64) -> Range<u64> {
        let count = self.job.tree.leaf_count(length);
        self.job
            .leaves
            .as_ref()
            .map_or(0..count, |selection| selection.leaves(count))
    }

    fn leaves_left(&self) -> bool {
        matches!(self.work, Work::Leaves { next, end, .. } if next < end)
    }

    /// The leaves the next window holds.
    fn window(&self) -> Range<u64> {
        let Work::Leaves { next, end, .. } = self.work else {
            return 0..0;
        };
        let leaf = self.job.tree.leaf_size();
        let most = if leaf > BIG_LEAF {
            1
        } else {
            // Whole lane groups of the kernel where they fit half the
            // budget.
            let lanes = LeafKernel::active().lanes(self.job.tree.algorithm()) as u64;
            let budget = crate::engine::Budget::get();
            let fit = budget.window / leaf;
            let groups = fit.max(1).next_multiple_of(lanes);
            let most = if groups * leaf <= budget.window_most {
                groups
            } else {
                fit
            };
            most.clamp(1, BATCH_LEAVES)
        };
        next..end.min(next.saturating_add(most))
    }

    /// The bytes the next window counts on the engine.
    fn window_bytes(&self) -> usize {
        let Work::Leaves { length, .. } = self.work else {
            return 0;
        };
        let leaves = self.window();
        let bytes = self.job.tree.leaves_bytes(&leaves, length);
        let bytes = usize::try_from(bytes.end - bytes.start).unwrap_or(usize::MAX);
        bytes + (leaves.end - leaves.start) as usize * LEAF_COST
    }

    /// Queues the next window's leaves, if the engine has room for them;
    /// whether it did.
    fn queue_window(&mut self, engine: &Engine) -> bool {
        if !engine.has_room(self.window_bytes()) {
            return false;
        }
        let leaves = self.window();
        let tree = self.job.tree;
        let Work::Leaves {
            feed,
            next,
            end,
            length,
            skip,
            whole,
        } = &mut self.work
        else {
            return false;
        };
        // A file that failed or changed is not read further: each mapped
        // window is preceded by a look at the file's size and time.
        if whole.is_none()
            && let Err(error) = self.opened.as_ref().expect("mapped").unchanged()
        {
            feed.done.fail(error);
        }
        if feed.done.failed() {
            *next = *end;
            return true;
        }
        // The leaves' bytes: of the file read whole (from its start), or of
        // a window mapped from the first leaf's (or a big leaf's source).
        let (source, base) = match whole {
            Some(whole) => (Source::Bytes(Arc::clone(whole) as _, 0..whole.len()), 0),
            None => {
                let opened = self.opened.as_ref().expect("mapped");
                match window_source(opened, &tree, &leaves, *end, *length, *skip) {
                    Ok(source) => (source, tree.leaves_bytes(&leaves, *length).start),
                    Err(error) => {
                        feed.done.fail(error.into());
                        *next = *end;
                        return true;
                    }
                }
            }
        };
        engine.push(
            leaves_of(&feed.done, &tree, leaves.clone(), *length, source, base),
            false,
        );
        feed.queued = leaves.end;
        *next = leaves.end;
        true
    }

    /// Feeds the root the digests that came in, in order.
    fn drain(&mut self) {
        if let Work::Leaves { feed, length, .. } = &mut self.work {
            let before = feed.next();
            feed.drain(&mut self.job.sink);
            let bytes = self.job.tree.leaves_bytes(&(before..feed.next()), *length);
            self.job.count(bytes.end - bytes.start);
        }
    }

    /// Whether its outcome can be reported.
    fn ready(&self) -> bool {
        match &self.work {
            Work::Over(_) => true,
            Work::Leaves {
                feed, next, end, ..
            } => next == end && feed.all_in(),
            Work::Stream { .. } | Work::Opening(_) | Work::ToOpen => false,
        }
    }

    /// Reads a stream to its end, hashing it on the engine.
    fn read_stream(&mut self, engine: &Engine) {
        let Work::Stream { read } = &mut self.work else {
            return;
        };
        let read = std::mem::take(read);
        let result = self.hash_stream(engine, read);
        self.work = Work::Over(result);
    }

    fn hash_stream(&mut self, engine: &Engine, read: Vec<u8>) -> Result<Hashed, Error> {
        let opened = self.opened.as_ref().expect("a stream is open");
        let job = &mut self.job;
        let mut reader = Counted {
            inner: &opened.file,
            job_progress: job.progress.as_deref(),
        };
        let Some(total) = job.excerpt_of else {
            opened.start_stream()?;
            let mut stream = Stream::new(engine, &job.tree, 0, None);
            stream.write(&read, &mut job.sink)?;
            job.count(read.len() as u64);
            stream.read_from(&mut reader, None, &mut job.sink)?;
            let (digest, length) = stream.finish(&mut job.sink)?;
            opened.held_whole(length)?;
            opened.unchanged()?;
            return Ok(Hashed { digest, length });
        };
        let count = job.tree.leaf_count(total);
        let leaves = job
            .leaves
            .as_ref()
            .map_or(0..count, |selection| selection.leaves(count));
        let bytes = job.tree.leaves_bytes(&leaves, total);
        let expected = bytes.end - bytes.start;
        let wrong_length = |found, more| Error::ExcerptLength {
            leaves: leaves.clone(),
            total,
            expected,
            found,
            more,
        };
        opened.start_stream()?;
        let mut stream = Stream::new(engine, &job.tree, leaves.start, count.checked_sub(1));
        let found = stream.read_from(&mut reader, Some(expected), &mut job.sink)?;
        if found < expected {
            return Err(wrong_length(found, false));
        }
        // Nothing may follow (the stream read a byte past what it expected,
        // if there was one).
        let excess = found - expected
            + io::copy(&mut (&*opened.file).take(EXCESS_COUNTED), &mut io::sink())?;
        if excess > 0 {
            return Err(wrong_length(
                expected + excess.min(EXCESS_COUNTED),
                excess > EXCESS_COUNTED,
            ));
        }
        let (digest, _) = stream.finish(&mut job.sink)?;
        Ok(Hashed {
            digest,
            length: total,
        })
    }

    /// The outcome, once [`ready`](Self::ready).
    fn finish(self) -> Outcome<T, S> {
        let Running {
            mut job,
            opened,
            stamp,
            work,
        } = self;
        let result = match work {
            Work::Over(result) => result,
            Work::Leaves {
                mut feed, length, ..
            } => {
                feed.drain(&mut job.sink);
                let digest = feed.finish();
                match &opened {
                    Some(opened) => opened
                        .unchanged()
                        .and_then(|()| match job.leaves {
                            // A selection reads only its leaves, at their offsets:
                            // standard input stays where it was, for the next `-`.
                            Some(_) => Ok(()),
                            None => opened.seek_to_end(),
                        })
                        .and(digest.map_err(|error| match error {
                            // A page that could not be read while the file looks
                            // as it did: the device failed.
                            Error::Changed => device_failed(),
                            error => error,
                        })),
                    None => digest,
                }
                .map(|digest| Hashed { digest, length })
            }
            Work::Stream { .. } | Work::Opening(_) | Work::ToOpen => {
                unreachable!("a stream is read, and an input opened, before it is ready")
            }
        };
        let stamp = if result.is_ok() { stamp } else { None };
        Outcome {
            tag: job.tag,
            leaves: job.sink,
            result,
            stamp,
        }
    }
}

/// A reader that counts what it reads toward a job's progress.
struct Counted<'a> {
    inner: &'a File,
    job_progress: Option<&'a AtomicU64>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buf)?;
        if let Some(progress) = self.job_progress {
            progress.fetch_add(count as u64, Ordering::Relaxed);
        }
        Ok(count)
    }
}

fn device_failed() -> Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::EIO).into();
    #[cfg(not(unix))]
    return io::Error::other("Input/output error").into();
}

/// Leaves `leaves` of an input of `length` bytes, from `source`: a big
/// leaf's, or bytes that start at the input's byte `base`.
fn leaves_of(
    done: &Arc<Done>,
    tree: &TreeParams,
    leaves: Range<u64>,
    length: u64,
    source: Source,
    base: u64,
) -> Vec<Leaf> {
    let count = tree.leaf_count(length);
    let leaf = |index, source| Leaf {
        source,
        index,
        last: index + 1 == count,
        done: Arc::clone(done),
    };
    match source {
        Source::Pieces(..) => vec![leaf(leaves.start, source)],
        Source::Bytes(bytes, _) => leaves
            .map(|index| {
                let at = tree.leaf_bytes(index, length);
                let at = (at.start - base) as usize..(at.end - base) as usize;
                leaf(index, Source::Bytes(Arc::clone(&bytes), at))
            })
            .collect(),
    }
}

/// The source of window `leaves` (ending by `end`) of a mapped file of
/// `length` bytes, of which it holds those from `skip` on: the window
/// mapped (or read), the next window's bytes asked for meanwhile; or, for a
/// leaf too big to hash at once, the leaf to be read a piece at a time.
fn window_source(
    opened: &Opened,
    tree: &TreeParams,
    leaves: &Range<u64>,
    end: u64,
    length: u64,
    skip: u64,
) -> io::Result<Source> {
    let bytes = tree.leaves_bytes(leaves, length);
    let offset = opened.start + bytes.start - skip;
    let mappable = platform::safe_to_map(&opened.file);
    let len = bytes.end - bytes.start;
    if tree.leaf_size() > BIG_LEAF {
        let file = Arc::clone(&opened.file);
        let big = mapped::BigLeaf {
            file,
            offset,
            len,
            mappable,
        };
        return Ok(Source::Pieces(Arc::new(big), len));
    }
    let following = leaves.end..end.min(leaves.end.saturating_add(leaves.end - leaves.start));
    let ahead = tree.leaves_bytes(&following, length);
    let ahead = (ahead.end - ahead.start) as usize;
    let window = mapped::bytes_of(&opened.file, offset, len as usize, ahead, mappable)?;
    Ok(Source::Bytes(window, 0..len as usize))
}

/// Whether opening failed for want of a file descriptor (`EMFILE`,
/// `ENFILE`): worth trying again once others are closed.
fn out_of_descriptors(error: &io::Error) -> bool {
    #[cfg(unix)]
    return matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    #[cfg(not(unix))]
    return {
        let _ = error;
        false
    };
}

/// A file holding `bytes`, named `name`, in a new temporary directory
/// (removed when the returned guard is dropped).
#[cfg(test)]
pub(crate) fn temp_file(
    name: &str,
    bytes: impl AsRef<[u8]>,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_file_longer_than_it_said_is_read_as_a_stream() {
        // Like a /proc file whose size reads 0: more than a small file
        // follows.
        let data: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
        let (_dir, path) = temp_file("long", &data);
        let tree = TreeParams::default();
        let mut job = Job::path((), &path, &tree);
        let mut opened = job.open().unwrap();
        opened.stamp.as_mut().unwrap().len = 100;
        let mut running = Running {
            job,
            stamp: None,
            opened: Some(opened),
            work: Work::Stream { read: Vec::new() },
        };
        let engine = Engine::new();
        running.plan(&engine).unwrap();
        assert!(matches!(&running.work, Work::Stream { read } if read.len() as u64 == SMALL + 1));
        running.read_stream(&engine);
        // (Its stamp no longer says 100 bytes: it "changed".)
        let outcome = running.finish();
        assert!(matches!(outcome.result, Err(Error::Changed)));
    }

    #[test]
    fn a_small_file_that_grew_is_changed() {
        let (_dir, path) = temp_file("growing", b"1234");
        let tree = TreeParams::default();
        let mut job = Job::path((), &path, &tree);
        let opened = job.open().unwrap();
        // It grows after its size was taken.
        std::fs::write(&path, b"12345678").unwrap();
        let mut running = Running {
            job,
            stamp: None,
            opened: Some(opened),
            work: Work::Stream { read: Vec::new() },
        };
        assert!(matches!(running.plan(&Engine::new()), Err(Error::Changed)));
    }
}
