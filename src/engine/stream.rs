//! Streams: bytes that arrive in order, read ([`Stream::update_reader`]) or
//! written ([`TreeHasher`]), hashed with bounded memory.
//!
//! Bytes are gathered in whole leaves, up to a batch at a time; a full batch
//! is hashed on the pool (all threads but the reader's) while the next one
//! fills, and its digests go to the root at once. A full batch is handed on
//! only once at least one more byte has arrived, so that the final leaf
//! always gets its last-node flag, even when the input's length is a
//! multiple of the leaf size. Leaves bigger than `tuning::BIG_LEAF` are
//! hashed incrementally as their bytes arrive instead of being buffered.
//! Memory is therefore bounded by two batches (80 MiB) whatever the input
//! length.

use std::io::{self, Read, Write};
use std::ops::Range;

use super::batch::{EndOfInput, LeafBytes};
use super::kernel::LeafState;
use super::pipeline::{Batch, Pipeline};
use super::tuning::{self, Spread};
use super::{Hashed, LeafSink, Root, Sink, check_leaf_index};
use crate::digest::Digest;
use crate::error::Error;
use crate::params::{LastNode, TreeParams};

/// A batch buffer: `bytes[..filled]` is the data.
#[derive(Default)]
pub(crate) struct LeafBuffer {
    bytes: Vec<u8>,
    filled: usize,
}

/// A buffer is reused: nothing to give back.
impl LeafBytes for LeafBuffer {
    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.filled]
    }
}

/// What every stream keeps, however it gathers its leaves: where their
/// digests go and which leaf comes next.
struct Core {
    tree: TreeParams,
    pipeline: Pipeline<LeafBuffer>,
    /// The index of the first leaf not yet handed to the pipeline.
    next_leaf: u64,
    /// Whether the stream's end is the input's end (it is not when the
    /// stream reads the leaves of a range that stops short of it).
    end: EndOfInput,
}

impl Core {
    fn leaf_size(&self) -> usize {
        // At most 2^32 - 1: a usize on every supported target.
        self.tree.leaf_size() as usize
    }
}

/// Whole leaves gathered in a buffer, hashed a batch at a time.
struct Batched {
    /// The leaves a batch holds: `tuning::batch_leaves`, or fewer once
    /// memory for a whole batch was refused.
    batch_leaves: usize,
    buffer: LeafBuffer,
    /// A buffer kept for reuse after a look-ahead read found the end.
    spare: Option<LeafBuffer>,
}

/// One leaf at a time, hashed as its bytes arrive: leaves bigger than
/// `tuning::BIG_LEAF`, or any leaves once memory for a batch was refused.
#[derive(Default)]
struct Incremental {
    /// The leaf begun and not yet finished.
    leaf: Option<Box<LeafState>>,
    /// The buffer reads go to; empty until the first read.
    chunk: Vec<u8>,
}

/// How a stream gathers its leaves. A batched stream that is refused memory
/// becomes incremental ([`Stream::fall_back`]), never the other way.
enum Mode {
    Batched(Batched),
    Incremental(Incremental),
}

/// The stream machinery, fed bytes by reads or writes; the sink is passed to
/// each call.
pub(crate) struct Stream {
    core: Core,
    mode: Mode,
}

impl Stream {
    /// A stream of a whole input.
    pub(crate) fn new(tree: &TreeParams) -> Self {
        Stream::resume(tree, Root::new(tree, 0), 0, EndOfInput::Yes)
    }

    /// A stream of the input's bytes from leaf `first` on, feeding `root`
    /// (which has been fed the leaves before); `end` says whether the
    /// stream's end is the input's end.
    pub(crate) fn resume(tree: &TreeParams, root: Root, first: u64, end: EndOfInput) -> Self {
        let mode = if tuning::has_big_leaves(tree) {
            Mode::Incremental(Incremental::default())
        } else {
            Mode::Batched(Batched {
                batch_leaves: tuning::batch_leaves(tree),
                buffer: LeafBuffer::default(),
                spare: None,
            })
        };
        let pipeline = Pipeline::new(
            tree,
            root,
            tuning::STREAM_BATCHES_IN_FLIGHT,
            Spread::SpareOneForReader,
        );
        Stream {
            core: Core {
                tree: *tree,
                pipeline,
                next_leaf: first,
                end,
            },
            mode,
        }
    }

    /// Goes on a leaf at a time, once memory for batches was refused.
    fn fall_back(&mut self, sink: &mut Sink<'_>) -> Result<(), Error> {
        if let Mode::Batched(batched) = &mut self.mode {
            self.mode = Mode::Incremental(batched.single_leaves(&mut self.core, sink)?);
        }
        Ok(())
    }

    /// Takes bytes written to the stream.
    pub(crate) fn write(&mut self, mut bytes: &[u8], sink: &mut Sink<'_>) -> Result<(), Error> {
        sink.count(bytes.len() as u64);
        loop {
            match &mut self.mode {
                Mode::Batched(batched) => {
                    if batched.write(&mut self.core, &mut bytes, sink)? {
                        return Ok(());
                    }
                }
                Mode::Incremental(single) => return single.update(&mut self.core, bytes, sink),
            }
            self.fall_back(sink)?;
        }
    }

    /// Reads `reader` to its end straight into the stream's buffers,
    /// retrying short and interrupted reads; returns the number of bytes
    /// read.
    pub(crate) fn update_reader<R: Read + ?Sized>(
        &mut self,
        reader: &mut R,
        sink: &mut Sink<'_>,
    ) -> Result<u64, Error> {
        let mut total = 0u64;
        loop {
            let read = match &mut self.mode {
                Mode::Batched(batched) => batched.read(&mut self.core, reader, sink),
                Mode::Incremental(single) => single.read(&mut self.core, reader, sink).map(Some),
            };
            match read {
                // Memory refused, nothing read: read again, a leaf at a time.
                Ok(None) => self.fall_back(sink)?,
                Ok(Some(0)) => return Ok(total),
                Ok(Some(count)) => {
                    // Counted as read: a slow stream shows its progress
                    // before a batch is full.
                    sink.count(count as u64);
                    total += count as u64;
                    sink.go_on()?;
                }
                Err(Error::Io(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Hashes what is left and returns the root digest.
    pub(crate) fn finalize(self, sink: &mut Sink<'_>) -> Result<Digest, Error> {
        Ok(self.finish(sink)?.finalize())
    }

    /// Hashes what is left, feeding the root, and gives the root back.
    pub(crate) fn finish(self, sink: &mut Sink<'_>) -> Result<Root, Error> {
        let Stream { mut core, mode } = self;
        match mode {
            Mode::Batched(batched) => {
                let leaves = core.tree.leaf_count(batched.buffer.filled as u64);
                if leaves > 0 {
                    check_leaf_index(&core.tree, core.next_leaf + leaves - 1)?;
                }
                core.pipeline.submit_last(
                    Batch {
                        data: batched.buffer,
                        first: core.next_leaf,
                        end: core.end,
                    },
                    sink,
                )?;
            }
            Mode::Incremental(Incremental {
                leaf: Some(leaf), ..
            }) => {
                let last = match core.end {
                    EndOfInput::Yes => LastNode::Yes,
                    EndOfInput::No => LastNode::No,
                };
                core.pipeline.feed(leaf.finalize(last).as_bytes(), sink);
            }
            Mode::Incremental(Incremental { leaf: None, .. }) => {}
        }
        Ok(core.pipeline.finish(sink))
    }
}

impl Batched {
    fn batch_bytes(&self, core: &Core) -> usize {
        self.batch_leaves * core.leaf_size()
    }

    fn is_full(&self, core: &Core) -> bool {
        self.buffer.filled == self.batch_bytes(core)
    }

    /// Takes as many of `bytes` as memory allows, leaving the rest in
    /// `bytes`; `false` when memory was refused before they were all taken.
    fn write(
        &mut self,
        core: &mut Core,
        bytes: &mut &[u8],
        sink: &mut Sink<'_>,
    ) -> Result<bool, Error> {
        while !bytes.is_empty() {
            let Some(room) = self.room(core, sink)? else {
                return Ok(false);
            };
            let count = room.len().min(bytes.len());
            room[..count].copy_from_slice(&bytes[..count]);
            self.buffer.filled += count;
            *bytes = &bytes[count..];
        }
        Ok(true)
    }

    /// Reads once from `reader`; `None` when memory was refused before
    /// anything was read.
    fn read<R: Read + ?Sized>(
        &mut self,
        core: &mut Core,
        reader: &mut R,
        sink: &mut Sink<'_>,
    ) -> Result<Option<usize>, Error> {
        if !self.is_full(core) {
            let Some(room) = self.room(core, sink)? else {
                return Ok(None);
            };
            let count = reader.read(room)?;
            self.buffer.filled += count;
            return Ok(Some(count));
        }
        // After a full buffer, a read into the next one, so that the full
        // one is submitted only if more bytes follow.
        let Some(mut next) = self.next_buffer(core, sink) else {
            return Ok(None);
        };
        let batch_bytes = self.batch_bytes(core);
        match reader.read(&mut next.bytes[..batch_bytes]) {
            Ok(count) if count > 0 => {
                next.filled = count;
                self.submit_full(core, next, sink)?;
                Ok(Some(count))
            }
            other => {
                self.spare = Some(next);
                Ok(Some(other?))
            }
        }
    }

    /// The free part of the batch buffer, for at least one more byte that
    /// is about to arrive: a full buffer is handed on, or the buffer grown.
    /// `None` when memory for that was refused.
    fn room(&mut self, core: &mut Core, sink: &mut Sink<'_>) -> Result<Option<&mut [u8]>, Error> {
        loop {
            if self.is_full(core) {
                let Some(next) = self.next_buffer(core, sink) else {
                    return Ok(None);
                };
                self.submit_full(core, next, sink)?;
            }
            match self.grow(core) {
                Growth::Room => break,
                // The batch is now the leaves the buffer holds: it is full.
                Growth::Shrunk => {}
                Growth::Refused => return Ok(None),
            }
        }
        Ok(Some(&mut self.buffer.bytes[self.buffer.filled..]))
    }

    /// Grows the batch buffer if it is filled to its length: doubling, in
    /// whole leaves once past one, up to a batch. When memory is refused, a
    /// buffer of whole leaves becomes the batch.
    fn grow(&mut self, core: &Core) -> Growth {
        let (leaf, batch_bytes) = (core.leaf_size(), self.batch_bytes(core));
        let buffer = &mut self.buffer;
        let len = buffer.bytes.len();
        if buffer.filled < len {
            return Growth::Room;
        }
        let grown = (len * 2).max(tuning::FIRST_BUFFER).min(batch_bytes);
        let grown = if grown >= leaf {
            grown / leaf * leaf
        } else {
            grown
        };
        if reserve_exact(&mut buffer.bytes, grown - len) {
            buffer.bytes.resize(grown, 0);
            Growth::Room
        } else if len >= leaf {
            self.batch_leaves = len / leaf;
            Growth::Shrunk
        } else {
            Growth::Refused
        }
    }

    /// The buffer to fill once the current one is full: one kept from an
    /// earlier look-ahead, the buffer of the batch in flight once that batch
    /// is done, or a new one. At most two buffers are ever in use. `None`
    /// when memory for another buffer is refused.
    fn next_buffer(&mut self, core: &mut Core, sink: &mut Sink<'_>) -> Option<LeafBuffer> {
        let batch_bytes = self.batch_bytes(core);
        let mut next = match self.spare.take().or_else(|| core.pipeline.wait(sink)) {
            Some(recycled) => recycled,
            None => {
                let mut bytes = Vec::new();
                if !reserve_exact(&mut bytes, batch_bytes) {
                    return None;
                }
                bytes.resize(batch_bytes, 0);
                LeafBuffer { bytes, filled: 0 }
            }
        };
        next.filled = 0;
        Some(next)
    }

    /// Hands the full buffer to the pool and makes `next` (which may already
    /// hold bytes) the one to fill. Called only once more input is known to
    /// follow, so that a full buffer at the end of the input is hashed by
    /// `finish`, with its last-node flag.
    fn submit_full(
        &mut self,
        core: &mut Core,
        next: LeafBuffer,
        sink: &mut Sink<'_>,
    ) -> Result<(), Error> {
        let batch_leaves = self.batch_leaves as u64;
        check_leaf_index(&core.tree, core.next_leaf + batch_leaves - 1)?;
        if let Some(recycled) = core.pipeline.wait(sink) {
            self.spare = Some(recycled);
        }
        let full = std::mem::replace(&mut self.buffer, next);
        core.pipeline.submit(
            Batch {
                data: full,
                first: core.next_leaf,
                end: EndOfInput::No,
            },
            sink,
        )?;
        core.next_leaf += batch_leaves;
        Ok(())
    }

    /// Goes on hashing one leaf at a time as its bytes arrive, when memory
    /// for whole batches is refused: the whole leaves in the buffer are
    /// hashed as a batch, and the last one begun (whose being the last is
    /// not known yet) goes on in an incremental state.
    fn single_leaves(
        &mut self,
        core: &mut Core,
        sink: &mut Sink<'_>,
    ) -> Result<Incremental, Error> {
        let leaf = core.leaf_size();
        let mut buffer = std::mem::take(&mut self.buffer);
        self.spare = None;
        if buffer.filled == 0 {
            return Ok(Incremental::default());
        }
        let whole = (buffer.filled - 1) / leaf;
        let mut state = LeafState::new(&core.tree, core.next_leaf + whole as u64);
        state.update(&buffer.bytes[whole * leaf..buffer.filled]);
        if whole > 0 {
            check_leaf_index(&core.tree, core.next_leaf + whole as u64 - 1)?;
            buffer.filled = whole * leaf;
            core.pipeline.submit(
                Batch {
                    data: buffer,
                    first: core.next_leaf,
                    end: EndOfInput::No,
                },
                sink,
            )?;
        }
        check_leaf_index(&core.tree, core.next_leaf + whole as u64)?;
        core.next_leaf += whole as u64 + 1;
        Ok(Incremental {
            leaf: Some(Box::new(state)),
            chunk: Vec::new(),
        })
    }
}

impl Incremental {
    /// Reads once from `reader` and hashes what came.
    fn read<R: Read + ?Sized>(
        &mut self,
        core: &mut Core,
        reader: &mut R,
        sink: &mut Sink<'_>,
    ) -> Result<usize, Error> {
        if self.chunk.is_empty() {
            self.chunk = read_chunk()?;
        }
        let count = reader.read(&mut self.chunk)?;
        Incremental::feed(&mut self.leaf, core, &self.chunk[..count], sink)?;
        Ok(count)
    }

    /// Feeds bytes to the current leaf, finishing leaves as they fill.
    fn update(&mut self, core: &mut Core, bytes: &[u8], sink: &mut Sink<'_>) -> Result<(), Error> {
        Incremental::feed(&mut self.leaf, core, bytes, sink)
    }

    fn feed(
        leaf: &mut Option<Box<LeafState>>,
        core: &mut Core,
        mut bytes: &[u8],
        sink: &mut Sink<'_>,
    ) -> Result<(), Error> {
        let leaf_size = core.tree.leaf_size();
        while !bytes.is_empty() {
            if leaf.as_ref().is_some_and(|l| l.filled == leaf_size) {
                // More bytes follow, so the full leaf is not the last one.
                let done = leaf.take().expect("checked above");
                core.pipeline
                    .feed(done.finalize(LastNode::No).as_bytes(), sink);
            }
            let current = match leaf {
                Some(current) => current,
                None => {
                    check_leaf_index(&core.tree, core.next_leaf)?;
                    core.next_leaf += 1;
                    leaf.insert(Box::new(LeafState::new(&core.tree, core.next_leaf - 1)))
                }
            };
            let room = (leaf_size - current.filled).min(bytes.len() as u64) as usize;
            current.update(&bytes[..room]);
            bytes = &bytes[room..];
        }
        Ok(())
    }
}

/// How many bytes past its end an excerpt that is too long is read on, to
/// say how long it is; a longer one is "more than" that (a stream may have
/// no end).
const EXCESS_COUNTED: u64 = 64 << 20;

/// Hashes a stream that holds exactly the bytes of leaves `leaves` (already
/// cut at the last one) of a `total`-byte input: their leaves get their own
/// node offsets, and the input's final leaf its last-node flag. The digest
/// is the root of those leaves alone; the length given back is `total`. A
/// stream that is shorter or longer is [`Error::ExcerptLength`].
pub(crate) fn hash_excerpt(
    tree: &TreeParams,
    reader: &mut dyn Read,
    total: u64,
    leaves: Range<u64>,
    sink: &mut Sink<'_>,
) -> Result<Hashed, Error> {
    let bytes = tree.leaves_bytes(&leaves, total);
    let expected = bytes.end - bytes.start;
    let wrong_length = |found, more| Error::ExcerptLength {
        leaves: leaves.clone(),
        total,
        expected,
        found,
        more,
    };
    let root = Root::new(tree, leaves.start);
    let root = if leaves.is_empty() {
        root
    } else {
        check_leaf_index(tree, leaves.end - 1)?;
        let end = if leaves.end == tree.leaf_count(total) {
            EndOfInput::Yes
        } else {
            EndOfInput::No
        };
        let mut stream = Stream::resume(tree, root, leaves.start, end);
        let read = stream.update_reader(&mut (&mut *reader).take(expected), sink)?;
        if read < expected {
            return Err(wrong_length(read, false));
        }
        stream.finish(sink)?
    };
    // Nothing may follow.
    let excess = io::copy(&mut reader.take(EXCESS_COUNTED + 1), &mut io::sink())?;
    if excess > 0 {
        let more = excess > EXCESS_COUNTED;
        return Err(wrong_length(expected + excess.min(EXCESS_COUNTED), more));
    }
    Ok(Hashed {
        digest: root.finalize(),
        length: total,
    })
}

/// What growing the batch buffer gave.
enum Growth {
    /// Room for more bytes.
    Room,
    /// No memory for more: the batch is now what the buffer holds.
    Shrunk,
    /// No memory even for one leaf.
    Refused,
}

/// A buffer for reads into single leaves: `tuning::READ_CHUNK` bytes, or
/// less when memory is short.
fn read_chunk() -> Result<Vec<u8>, Error> {
    read_buffer(tuning::READ_CHUNK)
}

/// A buffer for reads of `size` bytes, or fewer (down to 4 KiB) when memory
/// is short.
pub(crate) fn read_buffer(size: usize) -> Result<Vec<u8>, Error> {
    let mut chunk = Vec::new();
    let size = crate::memory::halving(size, |wanted| reserve_exact(&mut chunk, wanted))
        .ok_or_else(Error::out_of_memory)?;
    chunk.resize(size, 0);
    Ok(chunk)
}

/// Reserves room for exactly `additional` more bytes, leaving some memory
/// free (see `memory`); `false` when memory is refused (in unit tests, also
/// above the thread's test limit).
fn reserve_exact(bytes: &mut Vec<u8>, additional: usize) -> bool {
    #[cfg(test)]
    if additional > tests::REFUSED_ABOVE.get() {
        return false;
    }
    crate::memory::reserve_exact(bytes, additional)
}

/// A streaming tree hasher: write the input in pieces of any size (or read
/// it from a reader), then [`finalize`](TreeHasher::finalize).
///
/// Bytes are buffered in whole leaves, up to 40 MiB at a time; a full batch
/// is hashed on the rayon pool while the next one fills. Leaves bigger than
/// 8 MiB are hashed incrementally as their bytes arrive instead of being
/// buffered. Memory is therefore bounded by two batches (80 MiB) whatever
/// the input length.
///
/// ```
/// use std::io::Write;
/// use bt2sum::{TreeHasher, TreeParams};
/// let mut hasher = TreeHasher::new(&TreeParams::default());
/// hasher.write_all(b"hello ")?;
/// hasher.write_all(b"s3git\n")?;
/// assert!(hasher.finalize()?.to_hex().starts_with("18e622875a89cede"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The leaf digests can be had too, through a [`LeafSink`] such as
/// `bt2sum::leaves::LeafLog`:
///
/// ```
/// use std::io::Write;
/// use bt2sum::leaves::LeafLog;
/// use bt2sum::{Algorithm, TreeHasher, TreeParams};
///
/// let tree = TreeParams::new(Algorithm::Blake2b, 32, 4)?;
/// let mut hasher = TreeHasher::with_leaves(&tree, LeafLog::new(32));
/// hasher.write_all(b"ten bytes!")?;
/// let (_, log) = hasher.finalize_with_leaves()?;
/// assert_eq!(log.count(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TreeHasher<S: LeafSink = ()> {
    stream: Stream,
    leaves: S,
}

impl TreeHasher {
    /// A hasher for the given tree parameters.
    pub fn new(tree: &TreeParams) -> Self {
        TreeHasher::with_leaves(tree, ())
    }
}

/// A hasher with the default parameters: BLAKE2b, 64-byte digests, 5 MiB
/// leaves.
impl Default for TreeHasher {
    fn default() -> Self {
        TreeHasher::new(&TreeParams::default())
    }
}

impl<S: LeafSink> TreeHasher<S> {
    /// A hasher that also hands every leaf digest to `leaves`, in leaf order.
    pub fn with_leaves(tree: &TreeParams, leaves: S) -> Self {
        TreeHasher {
            stream: Stream::new(tree),
            leaves,
        }
    }

    /// The parameters this hasher hashes with.
    pub fn tree(&self) -> &TreeParams {
        &self.stream.core.tree
    }

    fn sink(&mut self) -> (&mut Stream, Sink<'_>) {
        let sink = Sink {
            leaves: Some(&mut self.leaves),
            ..Sink::default()
        };
        (&mut self.stream, sink)
    }

    /// Reads `reader` to its end straight into the hasher's buffers, retrying
    /// short and interrupted reads; returns the number of bytes read.
    pub fn update_reader<R: Read + ?Sized>(&mut self, reader: &mut R) -> Result<u64, Error> {
        let (stream, mut sink) = self.sink();
        stream.update_reader(reader, &mut sink)
    }

    /// Hashes what is left and returns the checksum.
    ///
    /// Fails only if the input has more leaves than the algorithm's node
    /// offset can number (BLAKE2s: 2^48).
    pub fn finalize(self) -> Result<Digest, Error> {
        Ok(self.finalize_with_leaves()?.0)
    }

    /// Hashes what is left and returns the checksum and the leaf sink.
    pub fn finalize_with_leaves(mut self) -> Result<(Digest, S), Error> {
        let mut sink = Sink {
            leaves: Some(&mut self.leaves),
            ..Sink::default()
        };
        let digest = self.stream.finalize(&mut sink)?;
        Ok((digest, self.leaves))
    }
}

impl<S: LeafSink> Write for TreeHasher<S> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let (stream, mut sink) = self.sink();
        match stream.write(bytes, &mut sink) {
            Ok(()) => Ok(bytes.len()),
            Err(Error::Io(error)) => Err(error),
            Err(error) => Err(io::Error::other(error)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::params::Algorithm;

    thread_local! {
        /// Allocations of more bytes than this are refused, as if memory
        /// were short.
        pub(super) static REFUSED_ABOVE: Cell<usize> = const { Cell::new(usize::MAX) };
    }

    /// Collects leaf digests in order.
    struct Collect(Vec<u8>);

    impl LeafSink for Collect {
        fn leaves(&mut self, _first: u64, digests: &[u8]) {
            self.0.extend_from_slice(digests);
        }
    }

    /// A reader that hands out its data a few thousand bytes at a time.
    struct Pieces<'a>(&'a [u8]);

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let count = buf.len().min(self.0.len()).min(7001);
            buf[..count].copy_from_slice(&self.0[..count]);
            self.0 = &self.0[count..];
            Ok(count)
        }
    }

    fn hashed(tree: &TreeParams, data: &[u8], by_writes: bool) -> Result<(Digest, Vec<u8>), Error> {
        let mut collect = Collect(Vec::new());
        let mut sink = Sink {
            leaves: Some(&mut collect),
            ..Sink::default()
        };
        let mut stream = Stream::new(tree);
        if by_writes {
            for piece in data.chunks(10_007) {
                stream.write(piece, &mut sink)?;
            }
        } else {
            stream.update_reader(&mut Pieces(data), &mut sink)?;
        }
        let digest = stream.finalize(&mut sink)?;
        Ok((digest, collect.0))
    }

    /// When memory for batch buffers is refused, at any size, the stream
    /// goes on a leaf at a time and gives the same digests; when not even a
    /// 4 KiB read buffer fits, it says memory is short.
    #[test]
    fn refused_memory_gives_the_same_digests_or_says_so() {
        let mut checked = 0;
        for (algorithm, leaf) in [(Algorithm::Blake2b, 1024u64), (Algorithm::Blake2s, 100_000)] {
            let tree = TreeParams::new(algorithm, algorithm.max_digest_size(), leaf).unwrap();
            for len in [0usize, 1, 1023, 1024, 5000, 300_000, 1_000_000] {
                let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let expected = hashed(&tree, &data, false).unwrap();
                assert_eq!(expected.0, crate::hash(&tree, &data));
                let leaf = leaf as usize;
                let limits =
                    [4096, 70_000, leaf, leaf + leaf / 2, 3 * leaf + 1].map(|l| l.max(4096));
                for limit in limits {
                    for by_writes in [false, true] {
                        REFUSED_ABOVE.set(limit);
                        let got = hashed(&tree, &data, by_writes);
                        REFUSED_ABOVE.set(usize::MAX);
                        let got = got.unwrap_or_else(|e| {
                            panic!("{tree:?} {len} bytes, limit {limit}, writes {by_writes}: {e:?}")
                        });
                        assert_eq!(got.0, expected.0, "{tree:?} {len} bytes, limit {limit}");
                        assert!(got.1 == expected.1, "{tree:?} {len} bytes, limit {limit}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 7 * 5 * 2);
        REFUSED_ABOVE.set(100);
        let refused = hashed(&TreeParams::default(), &[1; 10_000], false);
        REFUSED_ABOVE.set(usize::MAX);
        assert!(matches!(refused, Err(Error::Io(e)) if e.kind() == io::ErrorKind::OutOfMemory));
    }
}
