//! Streams: bytes that arrive in order until their end (pipes, FIFOs,
//! terminals, a writer's bytes), cut into leaves as they come. The bytes
//! are gathered in chunks of whole leaves (1 MiB, or one leaf if bigger,
//! and never more than `BATCH_LEAVES` leaves); a chunk's leaves are queued
//! on the engine at once, but its last, held until the byte after it shows
//! whether it is the input's last. A stream keeps at most two chunks' worth
//! of leaves in flight (queued, hashed, or waiting for the root), so that
//! tiny leaves cost bounded memory as a file's windows do. A leaf too big
//! to gather (`BIG_LEAF`) is hashed as it arrives, on the thread that
//! reads.

use std::io::{self, Read, Write};
use std::sync::Arc;

use super::{
    BATCH_LEAVES, BIG_LEAF, Engine, Feed, Leaf, LeafSink, NodeState, Source, check_leaf_count,
};
use crate::digest::Digest;
use crate::error::Error;
use crate::params::{LastNode, Node, TreeParams};

/// Leaves are gathered this many bytes at a time (or one leaf, if bigger).
const CHUNK: usize = 1 << 20;

/// One stream being hashed.
pub(crate) struct Stream {
    engine: Engine,
    tree: TreeParams,
    feed: Feed,
    leaf: usize,
    /// The chunk being filled.
    chunk: Vec<u8>,
    /// The last leaf of the chunk before, queued once it is known whether
    /// it is the input's last: its chunk and where it is.
    held: Option<(Arc<Vec<u8>>, std::ops::Range<usize>)>,
    /// A big leaf being hashed as it arrives, and its bytes so far.
    big: Option<(NodeState, u64)>,
    /// The index of the next leaf to start.
    next: u64,
    /// For an excerpt, the index of the file's last leaf (the last-node
    /// flag is its, whatever the stream holds).
    last_of: Option<u64>,
    length: u64,
}

impl Stream {
    /// A stream of an input's leaves from `first` on; `last_of`: the index
    /// of the last leaf of the file it is an excerpt of, if it is one.
    pub(crate) fn new(
        engine: &Engine,
        tree: &TreeParams,
        first: u64,
        last_of: Option<u64>,
    ) -> Self {
        let leaf = usize::try_from(tree.leaf_size()).unwrap_or(usize::MAX);
        Stream {
            engine: engine.clone(),
            tree: *tree,
            feed: Feed::new(tree, first),
            leaf,
            chunk: Vec::new(),
            held: None,
            big: None,
            next: first,
            last_of,
            length: 0,
        }
    }

    /// Takes the next bytes of the input.
    pub(crate) fn write(&mut self, mut bytes: &[u8], sink: &mut dyn LeafSink) -> Result<(), Error> {
        self.length += bytes.len() as u64;
        while !bytes.is_empty() {
            if self.tree.leaf_size() > BIG_LEAF {
                bytes = self.write_big(bytes)?;
                continue;
            }
            let leaves = (CHUNK / self.leaf).clamp(1, BATCH_LEAVES as usize);
            if self.chunk.capacity() == 0 {
                // (Within the budget; a refusal ends the process.)
                self.chunk = Vec::with_capacity(leaves * self.leaf);
            }
            let room = self.chunk.capacity() - self.chunk.len();
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            // (Bytes after the leaf held: it is not the last.)
            self.release_held(false, sink);
            self.chunk.extend_from_slice(now);
            bytes = rest;
            if self.chunk.len() == self.chunk.capacity() {
                self.seal(sink);
            }
        }
        self.feed.drain(sink);
        Ok(())
    }

    /// Queues the full chunk's leaves but its last, which is held.
    fn seal(&mut self, sink: &mut dyn LeafSink) {
        let chunk = Arc::new(std::mem::take(&mut self.chunk));
        let count = chunk.len().div_ceil(self.leaf);
        let size = self.leaf;
        let mut leaves = Vec::with_capacity(count);
        for at in 0..count {
            let range = at * size..((at + 1) * size).min(chunk.len());
            if at + 1 == count {
                self.held = Some((Arc::clone(&chunk), range));
            } else {
                leaves.push(self.leaf_of(Arc::clone(&chunk), range, false));
            }
        }
        self.queue(leaves, sink);
    }

    /// Queues the held leaf, `last` or not.
    fn release_held(&mut self, last: bool, sink: &mut dyn LeafSink) {
        if let Some((chunk, range)) = self.held.take() {
            let leaf = self.leaf_of(chunk, range, last);
            self.queue(vec![leaf], sink);
        }
    }

    /// The next leaf, at `range` of `chunk`.
    fn leaf_of(&mut self, chunk: Arc<Vec<u8>>, range: std::ops::Range<usize>, last: bool) -> Leaf {
        let index = self.next;
        self.next += 1;
        let last = match self.last_of {
            Some(last_of) => index == last_of,
            None => last,
        };
        Leaf {
            source: Source::Bytes(chunk, range),
            index,
            last,
            done: Arc::clone(&self.feed.done),
        }
    }

    /// Queues leaves on the engine once the stream's leaves in flight leave
    /// room for them (feeding the root meanwhile).
    fn queue(&mut self, leaves: Vec<Leaf>, sink: &mut dyn LeafSink) {
        let Some(last) = leaves.last() else {
            return;
        };
        let end = last.index + 1;
        loop {
            self.feed.drain(sink);
            let in_flight = end - leaves[0].index + (self.feed.queued - self.feed.next());
            if in_flight <= 2 * BATCH_LEAVES || self.feed.done.failed() {
                break;
            }
            let feed = &self.feed;
            self.engine.wait_reading(|| feed.next_arrived());
        }
        self.feed.queued = end;
        self.engine.push(leaves, true);
    }

    /// Takes bytes into a big leaf; what is left after it.
    fn write_big<'b>(&mut self, bytes: &'b [u8]) -> Result<&'b [u8], Error> {
        let leaf_size = self.tree.leaf_size();
        if let Some((state, filled)) = self.big.take() {
            // Bytes after a full leaf: it is not the last.
            match filled == leaf_size {
                true => self.finish_big(state, false)?,
                false => self.big = Some((state, filled)),
            }
        }
        let (next, tree) = (self.next, self.tree);
        let (state, filled) = self.big.get_or_insert_with(|| {
            let node = Node::Leaf {
                offset: next,
                last: LastNode::No,
            };
            (NodeState::new(&tree, node), 0)
        });
        let room = usize::try_from(leaf_size - *filled).unwrap_or(usize::MAX);
        let (now, rest) = bytes.split_at(room.min(bytes.len()));
        state.update(now);
        *filled += now.len() as u64;
        Ok(rest)
    }

    /// Gives a big leaf's digest to its input.
    fn finish_big(&mut self, mut state: NodeState, last: bool) -> Result<(), Error> {
        let index = self.next;
        check_leaf_count(&self.tree, index + 1)?;
        self.next += 1;
        self.feed.queued = self.next;
        let last = self.last_of.map_or(last, |last_of| index == last_of);
        state.set_last_node(if last { LastNode::Yes } else { LastNode::No });
        self.feed.done.put(index, state.finalize());
        Ok(())
    }

    /// Reads `reader` to its end, retrying short and interrupted reads;
    /// stops after `most` bytes if given (an excerpt that holds more than
    /// it should). The bytes read.
    pub(crate) fn read_from(
        &mut self,
        reader: &mut dyn Read,
        most: Option<u64>,
        sink: &mut dyn LeafSink,
    ) -> Result<u64, Error> {
        let mut buffer = vec![0; CHUNK];
        let start = self.length;
        loop {
            let want = match most {
                Some(most) => (most + 1 - (self.length - start)).min(CHUNK as u64) as usize,
                None => CHUNK,
            };
            if want == 0 {
                break;
            }
            match reader.read(&mut buffer[..want]) {
                Ok(0) => break,
                Ok(count) => self.write(&buffer[..count], sink)?,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(self.length - start)
    }

    /// Ends the input: its root digest and length.
    pub(crate) fn finish(mut self, sink: &mut dyn LeafSink) -> Result<(Digest, u64), Error> {
        if let Some((state, filled)) = self.big.take()
            && filled > 0
        {
            self.finish_big(state, true)?;
        }
        if self.chunk.is_empty() {
            self.release_held(true, sink);
        } else {
            self.release_held(false, sink);
            self.seal(sink);
            self.release_held(true, sink);
        }
        check_leaf_count(&self.tree, self.next)?;
        let feed = &mut self.feed;
        self.engine.wait_until(|| feed.all_in());
        feed.drain(sink);
        let length = self.length;
        Ok((self.feed.finish()?, length))
    }
}

/// Hashes a stream of bytes written or read in pieces, with bounded memory:
/// leaves are hashed on the rayon pool as they fill, several at once, and
/// their digests fed to the root in order.
///
/// ```
/// use std::io::Write;
/// use bt2sum::{TreeHasher, TreeParams, hash};
///
/// let tree = TreeParams::default();
/// let mut hasher = TreeHasher::new(&tree);
/// hasher.write_all(b"hello ")?;
/// hasher.write_all(b"s3git\n")?;
/// assert_eq!(hasher.finalize()?, hash(&tree, b"hello s3git\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TreeHasher<S: LeafSink = ()> {
    stream: Stream,
    sink: S,
}

impl TreeHasher {
    /// A hasher of `tree`'s checksum.
    pub fn new(tree: &TreeParams) -> Self {
        TreeHasher::with_leaves(tree, ())
    }
}

impl Default for TreeHasher {
    fn default() -> Self {
        TreeHasher::new(&TreeParams::default())
    }
}

impl<S: LeafSink> TreeHasher<S> {
    /// A hasher that hands every leaf digest to `leaves`, in leaf order.
    pub fn with_leaves(tree: &TreeParams, leaves: S) -> Self {
        TreeHasher {
            stream: Stream::new(&Engine::new(), tree, 0, None),
            sink: leaves,
        }
    }

    /// The tree parameters it hashes with.
    pub fn tree(&self) -> &TreeParams {
        &self.stream.tree
    }

    /// Hashes what `reader` reads, to its end; the bytes read.
    pub fn update_reader<R: Read + ?Sized>(&mut self, reader: &mut R) -> Result<u64, Error> {
        let mut reader = reader;
        self.stream.read_from(&mut reader, None, &mut self.sink)
    }

    /// The checksum of everything written.
    pub fn finalize(self) -> Result<Digest, Error> {
        self.finalize_with_leaves().map(|(digest, _)| digest)
    }

    /// The checksum, and the sink with every leaf digest in it.
    pub fn finalize_with_leaves(mut self) -> Result<(Digest, S), Error> {
        let (digest, _) = self.stream.finish(&mut self.sink)?;
        Ok((digest, self.sink))
    }
}

impl<S: LeafSink> Write for TreeHasher<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream
            .write(buf, &mut self.sink)
            .map_err(|error| io::Error::other(error.to_string()))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
