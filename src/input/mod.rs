//! Where the bytes come from: files by name, open files, and standard input.
//!
//! An input is opened and `fstat`ed ([`Opened`]), then handed to the engine
//! as the source that suits it:
//!
//! - a regular file of at least 1 MiB is mapped a window of whole leaves at
//!   a time (see `mapped`), so resident memory stays at the leaves being
//!   hashed, whatever the file size;
//! - a smaller regular file is read whole into a reused buffer (in a run of
//!   many, into an arena shared with its neighbours, whose single leaves are
//!   then hashed side by side);
//! - everything else — pipes, FIFOs, terminals, character devices, `/proc`
//!   files whose size says 0 — is a stream, read to its end.
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

mod mapped;
mod platform;
#[cfg(unix)]
mod readahead;
#[cfg(not(unix))]
#[path = "no_readahead.rs"]
mod readahead;
#[cfg(unix)]
mod sigbus;
#[cfg(not(unix))]
#[path = "unguarded.rs"]
mod sigbus;
#[cfg(windows)]
mod win32;

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::descriptors::{self, Ticket, When};
use crate::digest::Digest;
use crate::engine::{self, Event, Hashed, Input, LeafSink, Shape, Sink, Source, Step, tuning};
use crate::error::Error;
use crate::params::{Selection, TreeParams};
use mapped::{RegularFile, unchanged};
pub use platform::Stamp;

/// Hashes the file at `path` (or whatever it names: a FIFO, a device, …).
///
/// A regular file of 1 MiB or more is mapped a window at a time; the first
/// such file installs a SIGBUS handler for the process, which answers
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
    let mut opened = Opened::path(path.as_ref(), When::InTurn)?;
    let hashed = opened.hash(tree, None, &mut Sink::default())?;
    Ok(hashed.digest)
}

/// Hashes an open file of any kind from its current offset to its end.
pub fn hash_file(tree: &TreeParams, file: File) -> Result<Digest, Error> {
    let mut opened = Opened::file(file, Ticket::uncounted(), false)?;
    let hashed = opened.hash(tree, None, &mut Sink::default())?;
    Ok(hashed.digest)
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
    let hashed = engine::hash(tree, Source::Stream(reader), &mut Sink::default())?;
    Ok(hashed.digest)
}

/// Hashes standard input from its current offset to its end.
pub fn hash_stdin(tree: &TreeParams) -> Result<Digest, Error> {
    let hashed = Opened::stdin(When::InTurn)?.hash(tree, None, &mut Sink::default())?;
    Ok(hashed.digest)
}

/// An input opened for hashing, with what `fstat` said of it then.
pub(crate) struct Opened {
    file: File,
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
    /// The right to hold `file`'s descriptor, given back with it.
    _descriptor: Ticket,
}

impl Opened {
    /// Opens the file at `path`, at its start, without waiting for a
    /// FIFO's writer: that happens when it is hashed, on the thread that
    /// reads it (see [`platform::open_for_reading`]). (Reads of a regular
    /// file ignore the non-blocking flag, so only a stream's is cleared.)
    /// Fails with `EMFILE` if no descriptor may be opened `when`.
    pub(crate) fn path(path: &Path, when: When) -> Result<Opened, Error> {
        let descriptor = descriptors::take(when).ok_or_else(descriptors::too_many_open_files)?;
        let file = platform::open_for_reading(path)?;
        let before = platform::metadata(&file)?;
        let stamp = stamp_of(&file, before.as_ref())?;
        Ok(Opened {
            file,
            before,
            stamp,
            start: 0,
            shared_offset: false,
            _descriptor: descriptor,
        })
    }

    /// Standard input, from its current offset: a duplicate of descriptor 0
    /// shares that offset, so `bt2sum < FILE` after a partial read by a
    /// parent shell hashes from where the shell left off.
    pub(crate) fn stdin(when: When) -> Result<Opened, Error> {
        let descriptor = descriptors::take(when).ok_or_else(descriptors::too_many_open_files)?;
        Opened::file(platform::duplicate_stdin()?, descriptor, true)
    }

    /// An open file, from its current offset if it is a regular file.
    fn file(mut file: File, descriptor: Ticket, shared_offset: bool) -> Result<Opened, Error> {
        let before = platform::metadata(&file)?;
        let stamp = stamp_of(&file, before.as_ref())?;
        let start = if stamp.is_some() {
            file.stream_position()?
        } else {
            0
        };
        Ok(Opened {
            file,
            before,
            stamp,
            start,
            shared_offset,
            _descriptor: descriptor,
        })
    }

    /// Whether the input is read until it ends, with no size known: a pipe,
    /// a FIFO, a terminal, a device.
    fn is_stream(&self) -> bool {
        self.regular().is_none() && !self.is_dir()
    }

    /// Whether this is a directory.
    fn is_dir(&self) -> bool {
        self.before.as_ref().is_some_and(Metadata::is_dir)
    }

    /// What a regular file was like when it was opened; `None` for
    /// anything else.
    fn regular(&self) -> Option<&Stamp> {
        self.stamp.as_ref()
    }

    /// The bytes from the start to the end, if this is a regular file.
    fn regular_length(&self) -> Option<u64> {
        self.regular()
            .map(|before| before.len.saturating_sub(self.start))
    }

    /// Fails with [`Error::Changed`] if this is a regular file whose stamp
    /// (size, times, identity) changed since it was opened. (A pipe's
    /// times change with every write.)
    fn unchanged(&self) -> Result<(), Error> {
        match self.regular() {
            Some(before) => unchanged(&self.file, before),
            None => Ok(()),
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

    /// Reads a regular file of 1 to `most` bytes whole, appending it to
    /// `arena`, and says where; `None` if it is not one, or holds more than it
    /// said (a special file), in which case it is back at its start.
    fn read_small(
        &mut self,
        most: u64,
        arena: &mut Vec<u8>,
    ) -> Result<Option<Range<usize>>, Error> {
        let Some(expected) = self.regular_length().filter(|len| (1..=most).contains(len)) else {
            return Ok(None);
        };
        let start = arena.len();
        // Room for the whole file and the read that finds its end, so that
        // reading takes one call and finding the end another. Refused, the
        // file is hashed on its own, the way that needs the least memory.
        if !crate::memory::reserve(arena, expected as usize + 1) {
            return Ok(None);
        }
        // One byte more than expected: the read that finds the end.
        let read = read_until(&mut self.file, arena, expected, expected + 1)?;
        if read > expected {
            arena.truncate(start);
            self.file.seek(SeekFrom::Start(self.start))?;
            return Ok(None);
        }
        Ok(Some(start..arena.len()))
    }

    /// Hashes the input from its start to its end (or only the leaves
    /// `leaves` selects, of a regular file), then checks that it has not
    /// changed.
    pub(crate) fn hash(
        &mut self,
        tree: &TreeParams,
        leaves: Option<&Selection>,
        sink: &mut Sink<'_>,
    ) -> Result<Hashed, Error> {
        if self.is_dir() {
            return Err(is_a_directory());
        }
        let hashed = match (leaves, self.regular_length()) {
            (Some(leaves), Some(length)) => {
                let leaves = leaves.leaves(tree.leaf_count(length));
                self.hash_mapped(tree, leaves, sink)?
            }
            (Some(_), None) => return Err(Error::NotRegularFile),
            (None, None) => {
                self.start_stream()?;
                engine::hash(tree, Source::Stream(&mut self.file), sink)?
            }
            (None, Some(length)) if length >= tuning::MAP_MIN => {
                let hashed = self.hash_mapped(tree, 0..u64::MAX, sink)?;
                if self.shared_offset {
                    // A mapped file was not read through the descriptor:
                    // leave its offset at the end as reading would, so that
                    // a second `-` finds nothing left.
                    self.file.seek(SeekFrom::End(0))?;
                }
                hashed
            }
            (None, Some(length)) => {
                let hashed = hash_small(tree, &mut self.file, length, sink)?;
                self.held_whole(hashed.length)?;
                hashed
            }
        };
        self.unchanged()?;
        Ok(hashed)
    }

    /// Hashes the input as an excerpt of a `total`-byte file: it holds
    /// exactly the bytes of the leaves `leaves` selects of that file (all of
    /// them if `None`). A regular file is hashed as a file is (mapped, read
    /// ahead), once its length is found right; a stream is read to its end.
    fn hash_excerpt(
        &mut self,
        tree: &TreeParams,
        leaves: Option<&Selection>,
        total: u64,
        sink: &mut Sink<'_>,
    ) -> Result<Hashed, Error> {
        if self.is_dir() {
            return Err(is_a_directory());
        }
        let count = tree.leaf_count(total);
        let leaves = leaves.map_or(0..count, |leaves| leaves.leaves(count));
        let bytes = tree.leaves_bytes(&leaves, total);
        let expected = bytes.end - bytes.start;
        let hashed = match (self.regular(), self.regular_length()) {
            (Some(_), Some(found)) if found != expected => {
                return Err(Error::ExcerptLength {
                    leaves,
                    total,
                    expected,
                    found,
                    more: false,
                });
            }
            // A regular file: its bytes are the input's from the first
            // selected leaf on, mapped as a file's.
            (Some(before), Some(_)) => {
                let source =
                    RegularFile::excerpt(&self.file, before, self.start, bytes.start, total);
                let hashed = engine::hash(
                    tree,
                    Source::File {
                        file: &source,
                        leaves,
                    },
                    sink,
                )?;
                if self.shared_offset {
                    self.file.seek(SeekFrom::End(0))?;
                }
                hashed
            }
            _ => {
                self.start_stream()?;
                let reader = &mut self.file;
                engine::hash(
                    tree,
                    Source::Excerpt {
                        reader,
                        total,
                        leaves,
                    },
                    sink,
                )?
            }
        };
        self.unchanged()?;
        Ok(hashed)
    }

    /// Readies a stream for reading: waits for a FIFO's writer (and, where
    /// the system needs it, for data), and widens a pipe's buffer.
    fn start_stream(&self) -> Result<(), Error> {
        platform::wait_for_writer(&self.file)?;
        platform::wait_when_reading(&self.file)?;
        platform::widen_pipe(&self.file);
        Ok(())
    }

    /// Hashes leaves of a regular file through mappings.
    fn hash_mapped(
        &mut self,
        tree: &TreeParams,
        leaves: Range<u64>,
        sink: &mut Sink<'_>,
    ) -> Result<Hashed, Error> {
        let Some(before) = self.regular() else {
            return Err(Error::NotRegularFile);
        };
        let source = RegularFile::new(&self.file, before, self.start);
        engine::hash(
            tree,
            Source::File {
                file: &source,
                leaves,
            },
            sink,
        )
    }
}

/// The stamp of an open file, if it is a regular file.
fn stamp_of(file: &File, before: Option<&Metadata>) -> Result<Option<Stamp>, Error> {
    match before {
        Some(before) if before.is_file() => Ok(Some(Stamp::settled(file, before)?)),
        _ => Ok(None),
    }
}

thread_local! {
    /// The buffer small files are read into, kept for the next small file.
    static SMALL_FILE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Reads a small regular file whole into a reused buffer and hashes it in one
/// go: the fewest system calls and no allocation per file, which is what
/// matters when hashing thousands of small files. A file longer than it said
/// (a `/proc` file whose size reads 0) is streamed past `tuning::MAP_MIN`
/// bytes, and a file that grew is caught by the `fstat` comparison after.
fn hash_small(
    tree: &TreeParams,
    file: &mut File,
    expected: u64,
    sink: &mut Sink<'_>,
) -> Result<Hashed, Error> {
    // Taken out of the thread-local, not borrowed: hashing may run other
    // pool work on this thread, which may hash a small file too.
    let mut buffer = SMALL_FILE.take();
    buffer.clear();
    if !crate::memory::reserve(&mut buffer, expected as usize + 1) {
        // Memory is short: a stream holds no more than it can get.
        return engine::hash(tree, Source::Stream(file), sink);
    }
    let read = read_until(file, &mut buffer, expected, tuning::MAP_MIN);
    let hashed = match read {
        Err(error) => Err(error.into()),
        // More may follow: the general way, from the bytes read so far.
        Ok(length) if length == tuning::MAP_MIN => {
            let mut rest = buffer.as_slice().chain(file);
            engine::hash(tree, Source::Stream(&mut rest), sink)
        }
        Ok(_) => engine::hash(tree, Source::Bytes(&buffer), sink),
    };
    SMALL_FILE.set(buffer);
    hashed
}

/// Reads `file` from where it is to its end, appending to `buffer`, at most
/// `most` bytes; an end met before `size` bytes is read past once more for
/// each time reading goes on (a file system that answered a read short
/// may answer the next). The bytes read.
///
/// (Through `take`, because `File::read_to_end` would ask the size and
/// offset again: two more system calls per file.)
fn read_until(file: &mut File, buffer: &mut Vec<u8>, size: u64, most: u64) -> io::Result<u64> {
    let mut read = 0;
    loop {
        let more = Read::by_ref(file).take(most - read).read_to_end(buffer)? as u64;
        read += more;
        if more == 0 || read >= size.min(most) {
            return Ok(read);
        }
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
    state: State,
}

/// Where a [`Job`] is. (`Open` is the big one where `fstat` data is, on
/// FreeBSD for one; boxing it would cost an allocation per input for the
/// few dozen jobs in flight.)
#[allow(clippy::large_enum_variant)]
enum State {
    /// Not opened yet, or not opened for want of a descriptor (then opened
    /// when its turn comes); or read whole into a lane and closed again.
    Closed,
    /// Open, to be hashed whole.
    Open(Opened),
    /// It failed.
    Failed(Error),
}

/// What a [`Job`] names.
enum Target {
    Path(PathBuf),
    Stdin,
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
            state: State::Closed,
        }
    }
}

impl<T, S: LeafSink> Job<T, S> {
    /// Fails with `error` without opening anything, in its place among the
    /// other jobs: an input known to be unusable (a file a walk could not
    /// look at, a standard input that was closed).
    pub fn failing(mut self, error: Error) -> Self {
        self.state = State::Failed(error);
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
            state: self.state,
        }
    }

    /// Hashes only the leaves `leaves` selects of a regular file (a
    /// [`Range`] of leaf indices, or a [`Part`](crate::params::Part) of the leaves;
    /// cut at its end: a range past it hashes nothing), for their digests:
    /// the outcome's digest then means nothing, but its length is the
    /// file's.
    pub fn select(mut self, leaves: impl Into<Selection>) -> Self {
        self.leaves = Some(leaves.into());
        self
    }

    /// Says that the input is an excerpt of a `total`-byte file: it holds
    /// exactly the bytes of the leaves selected with
    /// [`select`](Self::select) (all of them if none are), and
    /// nothing else, such as what a ranged download of the file gives (a
    /// stream, or a regular file it was saved to). Its leaves get their
    /// place in the file (node offsets, and the file's final leaf its
    /// last-node flag), and the outcome's length is `total`. An input of
    /// another length fails with [`Error::ExcerptLength`]; a regular file
    /// does so before it is read.
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

    /// Adds the bytes hashed to `counter` as the work goes.
    pub fn progress(mut self, counter: Arc<AtomicU64>) -> Self {
        self.progress = Some(counter);
        self
    }

    fn outcome(self, result: Result<Hashed, Error>, stamp: Option<Stamp>) -> Outcome<T, S> {
        Outcome {
            tag: self.tag,
            leaves: self.sink,
            result,
            stamp,
        }
    }
}

/// Hashes many inputs, several at once on the rayon pool, and hands each
/// outcome to `report` in the order of `jobs`, as soon as it and every one
/// before it are done. Small files are hashed side by side in the SIMD
/// lanes. Jobs are taken from the iterator only as room frees up, so a long
/// list is never held whole. When `report` answers
/// [`ControlFlow::Break`], no further job is started.
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
    report: impl FnMut(Event<Outcome<T, S>>) -> ControlFlow<()>,
) where
    T: Send,
    S: LeafSink + Send,
{
    engine::hash_each(jobs.into_iter(), report);
}

impl<T: Send, S: LeafSink + Send> Input for Job<T, S> {
    type Output = Outcome<T, S>;
    /// Its length and modification time, or why it did not read back as it
    /// was.
    type ReadWhole = Result<(u64, Option<Stamp>), Error>;

    fn in_turn(&self) -> bool {
        matches!(self.target, Target::Stdin)
    }

    fn held_bytes(&self) -> usize {
        let name = match &self.target {
            Target::Path(path) => path.as_os_str().len(),
            Target::Stdin => 0,
        };
        name + self.held
    }

    fn prepare(&mut self, arena: &mut Vec<u8>) -> Step<Self::ReadWhole> {
        if let State::Closed = self.state {
            // Standard input is only ever prepared in turn.
            let when = if self.in_turn() {
                When::InTurn
            } else {
                When::Ahead
            };
            match self.open(when) {
                Ok(opened) => self.state = State::Open(opened),
                // Out of descriptors (or of those that may be opened
                // ahead): opened when its turn comes, on the calling
                // thread.
                Err(Error::Io(error)) if out_of_descriptors(&error) => {
                    return Step::Whole(Shape::Stream);
                }
                Err(error) => self.state = State::Failed(error),
            }
        }
        let State::Open(file) = &mut self.state else {
            return Step::Done;
        };
        let whole = Step::Whole(if file.is_stream() {
            Shape::Stream
        } else {
            // (A directory has no leaves: hashing it fails at once. An
            // excerpt's leaves are numbered in the file it is of.)
            let length = self.excerpt_of.or(file.regular_length());
            let count = self.tree.leaf_count(length.unwrap_or(0));
            let leaves = match &self.leaves {
                Some(selection) => {
                    let leaves = selection.leaves(count);
                    leaves.end - leaves.start
                }
                None => count,
            };
            Shape::File {
                tree: self.tree,
                leaves,
            }
        });
        // An input whose leaves are not wanted, of one leaf or less, is read
        // now and hashed beside others; it is closed at once, the check that
        // it did not change made (its bytes are in memory).
        if self.leaves.is_some() || self.excerpt_of.is_some() || self.sink.wants_leaves() {
            return whole;
        }
        let most = self.tree.leaf_size().min(tuning::MAP_MIN - 1);
        match file.read_small(most, arena) {
            Ok(Some(bytes)) => {
                let length = (bytes.end - bytes.start) as u64;
                let stamp = file.regular().copied();
                let read = file
                    .unchanged()
                    .and_then(|()| file.held_whole(length))
                    .map(|()| (length, stamp));
                self.state = State::Closed;
                Step::Small {
                    tree: self.tree,
                    bytes,
                    read,
                }
            }
            Ok(None) => whole,
            Err(error) => {
                self.state = State::Failed(error);
                Step::Done
            }
        }
    }

    fn small_done(self, read: Self::ReadWhole, digest: Digest) -> Outcome<T, S> {
        let (result, stamp) = match read {
            Ok((length, stamp)) => {
                if let Some(progress) = &self.progress {
                    progress.fetch_add(length, Ordering::Relaxed);
                }
                (Ok(Hashed { digest, length }), stamp)
            }
            Err(error) => (Err(error), None),
        };
        self.outcome(result, stamp)
    }

    fn hash_whole(mut self, abandoned: &AtomicBool) -> Outcome<T, S> {
        let opened = match std::mem::replace(&mut self.state, State::Closed) {
            State::Open(opened) => Ok(opened),
            // (Put off in `prepare`: hashed whole on the calling thread,
            // in turn.)
            State::Closed => self.open(When::InTurn),
            State::Failed(error) => Err(error),
        };
        let mut stamp = None;
        let result = opened.and_then(|mut file| {
            stamp = file.regular().copied();
            let mut sink = Sink {
                leaves: Some(&mut self.sink),
                progress: self.progress.as_deref(),
                abandoned: Some(abandoned),
            };
            match self.excerpt_of {
                Some(total) => {
                    file.hash_excerpt(&self.tree, self.leaves.as_ref(), total, &mut sink)
                }
                None => file.hash(&self.tree, self.leaves.as_ref(), &mut sink),
            }
        });
        let stamp = result.is_ok().then_some(stamp).flatten();
        self.outcome(result, stamp)
    }
}

impl<T, S> Job<T, S> {
    fn open(&self, when: When) -> Result<Opened, Error> {
        match &self.target {
            Target::Path(path) => Opened::path(path, when),
            Target::Stdin => Opened::stdin(when),
        }
    }
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
    fn a_small_file_longer_than_a_leaf_read_is_streamed_whole() {
        // Like a /proc file whose size reads 0: more than the small-file
        // limit follows.
        let data: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
        let (_dir, path) = crate::input::temp_file("long", &data);
        let tree = TreeParams::default();
        let mut file = File::open(&path).unwrap();
        let hashed = hash_small(&tree, &mut file, 100, &mut Sink::default()).unwrap();
        assert_eq!(hashed.length, 3 << 20);
        assert_eq!(hashed.digest, crate::hash(&tree, &data));
    }

    #[test]
    fn a_small_file_longer_than_it_said_is_not_read_into_a_lane() {
        let (_dir, path) = crate::input::temp_file("growing", b"1234");
        let mut opened = Opened::path(&path, When::InTurn).unwrap();
        // It grows after its size was taken.
        std::fs::write(&path, b"12345678").unwrap();
        let mut arena = b"neighbour".to_vec();
        assert_eq!(opened.read_small(100, &mut arena).unwrap(), None);
        assert_eq!(arena, b"neighbour");
        // Read again from its start, it is found to have changed.
        let tree = TreeParams::default();
        let hashed = opened.hash(&tree, None, &mut Sink::default());
        assert!(matches!(hashed, Err(Error::Changed)), "{hashed:?}");
    }
}
