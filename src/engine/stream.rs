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

use super::batch::EndOfInput;
use super::kernel::LeafState;
use super::pipeline::{LeafBytes, Pipeline};
use super::tuning::{self, Spread};
use super::{LeafSink, Root, Sink, check_leaf_index};
use crate::digest::Digest;
use crate::error::Error;
use crate::params::{LastNode, TreeParams};

/// A batch buffer: `bytes[..filled]` is the data.
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

/// The stream machinery, fed bytes by reads or writes; the sink is passed to
/// each call.
pub(crate) struct Stream {
    tree: TreeParams,
    pipeline: Pipeline<LeafBuffer>,
    /// The index of the first leaf not yet handed to the pipeline.
    next_leaf: u64,
    /// Whether the stream's end is the input's end (it is not when the
    /// stream reads the leaves of a range that stops short of it).
    end: EndOfInput,
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
        Stream {
            tree: *tree,
            pipeline: Pipeline::new(
                tree,
                root,
                tuning::STREAM_BATCHES_IN_FLIGHT,
                Spread::SpareOneForReader,
            ),
            next_leaf: first,
            end,
            mode,
        }
    }

    fn batch_bytes(&self) -> usize {
        tuning::batch_leaves(&self.tree) * self.tree.leaf_size() as usize
    }

    /// The buffer to fill once the current one is full: one kept from an
    /// earlier look-ahead, the buffer of the batch in flight once that batch
    /// is done, or a new one. At most two buffers are ever in use.
    fn next_buffer(&mut self, sink: &mut Sink<'_>) -> LeafBuffer {
        let batch_bytes = self.batch_bytes();
        let Mode::Batched { spare, .. } = &mut self.mode else {
            unreachable!("next_buffer is only called in batched mode");
        };
        let mut next = spare
            .take()
            .or_else(|| self.pipeline.wait(sink))
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
    fn submit_full(&mut self, next: LeafBuffer, sink: &mut Sink<'_>) -> Result<(), Error> {
        let batch_leaves = tuning::batch_leaves(&self.tree) as u64;
        check_leaf_index(&self.tree, self.next_leaf + batch_leaves - 1)?;
        let recycled = self.pipeline.wait(sink);
        let Mode::Batched { buffer, spare } = &mut self.mode else {
            unreachable!("submit_full is only called in batched mode");
        };
        if recycled.is_some() {
            *spare = recycled;
        }
        let full = std::mem::replace(buffer, next);
        self.pipeline
            .submit(full, self.next_leaf, EndOfInput::No, sink);
        self.next_leaf += batch_leaves;
        Ok(())
    }

    /// Whether the batch buffer holds a whole batch.
    fn buffer_full(&self) -> bool {
        matches!(&self.mode, Mode::Batched { buffer, .. } if buffer.filled == self.batch_bytes())
    }

    /// The free part of the batch buffer, grown or rotated as needed; only
    /// called when at least one more byte is about to arrive.
    fn room(&mut self, sink: &mut Sink<'_>) -> Result<&mut [u8], Error> {
        if self.buffer_full() {
            let next = self.next_buffer(sink);
            self.submit_full(next, sink)?;
        }
        let batch_bytes = self.batch_bytes();
        let Mode::Batched { buffer, .. } = &mut self.mode else {
            unreachable!("room is only called in batched mode");
        };
        if buffer.filled == buffer.bytes.len() {
            let grown = (buffer.bytes.len() * 2)
                .max(tuning::FIRST_BUFFER)
                .min(batch_bytes);
            buffer.bytes.resize(grown, 0);
        }
        Ok(&mut buffer.bytes[buffer.filled..])
    }

    /// Reads once into a new buffer after a full one, so that the full one is
    /// submitted only if more bytes follow.
    fn read_ahead<R: Read + ?Sized>(
        &mut self,
        reader: &mut R,
        sink: &mut Sink<'_>,
    ) -> Result<usize, Error> {
        let mut next = self.next_buffer(sink);
        match reader.read(&mut next.bytes) {
            Ok(count) if count > 0 => {
                next.filled = count;
                self.submit_full(next, sink)?;
                Ok(count)
            }
            other => {
                let Mode::Batched { spare, .. } = &mut self.mode else {
                    unreachable!("read_ahead is only called in batched mode");
                };
                *spare = Some(next);
                Ok(other?)
            }
        }
    }

    fn advance(&mut self, count: usize) {
        if let Mode::Batched { buffer, .. } = &mut self.mode {
            buffer.filled += count;
        }
    }

    /// Feeds bytes to the current big leaf, finishing leaves as they fill.
    fn update_incremental(&mut self, mut bytes: &[u8], sink: &mut Sink<'_>) -> Result<(), Error> {
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
                self.pipeline
                    .feed(done.finalize(LastNode::No).as_bytes(), sink);
            }
            let current = match leaf {
                Some(current) => current,
                None => {
                    check_leaf_index(&self.tree, self.next_leaf)?;
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

    /// Takes bytes written to the stream.
    pub(crate) fn write(&mut self, mut bytes: &[u8], sink: &mut Sink<'_>) -> Result<(), Error> {
        sink.count(bytes.len() as u64);
        if let Mode::Incremental { .. } = self.mode {
            return self.update_incremental(bytes, sink);
        }
        while !bytes.is_empty() {
            let room = self.room(sink)?;
            let count = room.len().min(bytes.len());
            room[..count].copy_from_slice(&bytes[..count]);
            self.advance(count);
            bytes = &bytes[count..];
        }
        Ok(())
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
        let mut chunk = Vec::new();
        loop {
            let read = match self.mode {
                Mode::Batched { .. } if self.buffer_full() => self.read_ahead(reader, sink),
                Mode::Batched { .. } => {
                    let room = self.room(sink)?;
                    let read = reader.read(room);
                    if let Ok(count) = read {
                        self.advance(count);
                    }
                    read.map_err(Error::from)
                }
                Mode::Incremental { .. } => {
                    chunk.resize(tuning::READ_CHUNK, 0);
                    match reader.read(&mut chunk) {
                        Ok(count) => self
                            .update_incremental(&chunk[..count], sink)
                            .map(|()| count),
                        Err(error) => Err(error.into()),
                    }
                }
            };
            match read {
                Ok(0) => return Ok(total),
                Ok(count) => {
                    // Counted as read: a slow stream shows its progress
                    // before a batch is full.
                    sink.count(count as u64);
                    total += count as u64;
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
    pub(crate) fn finish(mut self, sink: &mut Sink<'_>) -> Result<Root, Error> {
        let last = match self.end {
            EndOfInput::Yes => LastNode::Yes,
            EndOfInput::No => LastNode::No,
        };
        match std::mem::replace(&mut self.mode, Mode::Incremental { leaf: None }) {
            Mode::Batched { buffer, .. } => {
                let leaves = self.tree.leaf_count(buffer.filled as u64);
                if leaves > 0 {
                    check_leaf_index(&self.tree, self.next_leaf + leaves - 1)?;
                }
                self.pipeline
                    .submit_last(buffer, self.next_leaf, self.end, sink);
            }
            Mode::Incremental { leaf } => {
                if let Some(leaf) = leaf {
                    self.pipeline.feed(leaf.finalize(last).as_bytes(), sink);
                }
            }
        }
        Ok(self.pipeline.finish(sink))
    }
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

impl<S: LeafSink> TreeHasher<S> {
    /// A hasher that also hands every leaf digest to `leaves`, in leaf order.
    pub fn with_leaves(tree: &TreeParams, leaves: S) -> Self {
        TreeHasher {
            stream: Stream::new(tree),
            leaves,
        }
    }

    fn sink(&mut self) -> (&mut Stream, Sink<'_>) {
        let sink = Sink {
            leaves: Some(&mut self.leaves),
            progress: None,
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
            progress: None,
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
