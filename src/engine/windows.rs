//! Inputs that can be read at any offset (regular files): their leaves are
//! mapped a window at a time, two windows in flight, each window's pages
//! given back as its tasks finish; big leaves one per thread, mapped a piece
//! at a time. What cannot be mapped is read at offsets instead.
//!
//! Before a window (or a round of big leaves) is mapped, the input is told
//! which bytes come next ([`RandomAccess::read_ahead`]), always in file
//! order, so that it can ask the storage for them front to back while the
//! pool hashes the bytes before them in whatever order its lanes go.

use std::io::{self, Read};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::batch::{EndOfInput, LeafBytes};
use super::kernel::LeafState;
use super::pipeline::{Batch, Pipeline};
use super::stream::{Stream, read_buffer};
use super::tuning::{self, Spread};
use super::{Hashed, Root, Sink, check_leaf_index};
use crate::digest::Digest;
use crate::error::Error;
use crate::params::{LastNode, TreeParams};

/// An input that can be read at any offset: a regular file, as `input`
/// opens it.
pub(crate) trait RandomAccess: Sync {
    /// The input's length in bytes (from where hashing starts).
    fn len(&self) -> u64;

    /// Says that `bytes` will be read next, after every range said before:
    /// called in file order, before any of them is mapped. The input may
    /// start reading them from storage; its mappings then wait
    /// ([`LeafBytes::wait_for`]) until they are in.
    fn read_ahead(&self, _bytes: Range<u64>) {}

    /// Maps `bytes` of the input for reading; `None` when they cannot be
    /// mapped, and are then read with [`read_at`](Self::read_at).
    fn map(&self, bytes: Range<u64>) -> Option<Box<dyn Mapping>>;

    /// Reads bytes at `offset`, as `pread` does.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Called after each part of the input is hashed: fails if the input has
    /// changed since it was opened, or if `faulted` (a mapped page could not
    /// be read).
    fn check(&self, faulted: bool) -> Result<(), Error>;
}

/// Mapped bytes of a [`RandomAccess`] input.
pub(crate) trait Mapping: LeafBytes {
    /// Whether a page could not be read (the file shrank under the mapping);
    /// what was read there is not the file's.
    fn faulted(&self) -> bool;
}

impl LeafBytes for Box<dyn Mapping> {
    fn bytes(&self) -> &[u8] {
        (**self).bytes()
    }

    fn wait_for(&self, range: Range<usize>) {
        (**self).wait_for(range);
    }

    fn release(&self, range: Range<usize>) {
        (**self).release(range);
    }
}

/// Hashes leaves `leaves` of `file` (cut at its end).
pub(crate) fn hash(
    tree: &TreeParams,
    file: &dyn RandomAccess,
    leaves: Range<u64>,
    sink: &mut Sink<'_>,
) -> Result<Hashed, Error> {
    let length = file.len();
    let count = tree.leaf_count(length);
    let leaves = leaves.start.min(count)..leaves.end.min(count);
    if !leaves.is_empty() {
        check_leaf_index(tree, leaves.end - 1)?;
    }
    let root = Root::new(tree, leaves.start);
    let file = FileLeaves {
        tree,
        file,
        length,
        count,
    };
    let root = if tuning::has_big_leaves(tree) {
        file.big_leaves(leaves, root, sink)?
    } else {
        file.windows(leaves, root, sink)?
    };
    Ok(Hashed {
        digest: root.finalize(),
        length,
    })
}

/// A random-access input cut into the leaves of a tree: what every way of
/// hashing its leaves works on.
#[derive(Clone, Copy)]
struct FileLeaves<'a> {
    tree: &'a TreeParams,
    file: &'a dyn RandomAccess,
    /// The input's length in bytes.
    length: u64,
    /// Its number of leaves.
    count: u64,
}

impl FileLeaves<'_> {
    /// The bytes of the leaves `leaves`, from the first one's start to the
    /// last one's end.
    fn bytes(&self, leaves: Range<u64>) -> Range<u64> {
        self.tree.leaves_bytes(&leaves, self.length)
    }

    /// Whether the leaves up to `end` reach the end of the input.
    fn end_at(&self, end: u64) -> EndOfInput {
        if end == self.count {
            EndOfInput::Yes
        } else {
            EndOfInput::No
        }
    }

    /// Whole leaves a window at a time, mapped; read from the first window
    /// that cannot be mapped on.
    fn windows(self, leaves: Range<u64>, root: Root, sink: &mut Sink<'_>) -> Result<Root, Error> {
        let tree = self.tree;
        let mut pipeline: Pipeline<Box<dyn Mapping>> =
            Pipeline::new(tree, root, tuning::WINDOWS_IN_FLIGHT, Spread::AllThreads);
        let mut window = tuning::window_leaves(tree) as u64;
        let mut asked = Asked::new(self, leaves.clone());
        let mut first = leaves.start;
        while first < leaves.end {
            sink.go_on()?;
            // (Saturating: leaf indices reach 2^64 - 2.)
            let last = leaves.end.min(first.saturating_add(window));
            asked.through(last.saturating_add(window));
            // The oldest window is settled, and the digests of this one
            // reserved, before it is mapped: a window takes address space,
            // and under `ulimit -v` what it needs beside must still find
            // room.
            if pipeline.is_full() {
                self.settle(&mut pipeline, sink)?;
            }
            let mapping = if pipeline.reserve_digests((last - first) as usize) {
                self.file.map(self.bytes(first..last))
            } else {
                None
            };
            let Some(mapping) = mapping else {
                // Refused (address space short: `ulimit -v`): smaller
                // windows, down to a batch, before reading instead.
                let batch = tuning::batch_leaves(tree) as u64;
                if window > batch {
                    window = (window / 2).max(batch);
                    continue;
                }
                while self.settle(&mut pipeline, sink)? {}
                let root = pipeline.finish(sink);
                return self.read(first..leaves.end, root, sink);
            };
            let batch = Batch {
                data: mapping,
                first,
                end: self.end_at(last),
            };
            pipeline.submit(batch, sink)?;
            first = last;
        }
        while self.settle(&mut pipeline, sink)? {}
        Ok(pipeline.finish(sink))
    }

    /// Waits for the oldest window in flight, if any, and checks that it
    /// was read whole from an unchanged file (after each window, so that a
    /// change stops the work early); `false` when none was in flight.
    fn settle(
        &self,
        pipeline: &mut Pipeline<Box<dyn Mapping>>,
        sink: &mut Sink<'_>,
    ) -> Result<bool, Error> {
        let Some(done) = pipeline.wait(sink) else {
            return Ok(false);
        };
        self.file.check(done.faulted())?;
        sink.count(done.bytes().len() as u64);
        Ok(true)
    }

    /// Leaves `leaves` (not empty) read at offsets, as a stream, feeding
    /// `root`.
    fn read(self, leaves: Range<u64>, root: Root, sink: &mut Sink<'_>) -> Result<Root, Error> {
        debug_assert!(!leaves.is_empty());
        let bytes = self.bytes(leaves.clone());
        let mut reader = ReadAt {
            file: self.file,
            offset: bytes.start,
            end: bytes.end,
        };
        let mut stream = Stream::resume(self.tree, root, leaves.start, self.end_at(leaves.end));
        let read = stream.update_reader(&mut reader, sink)?;
        // A file that ends early has changed, or says more than it holds:
        // its leaves are not the ones its length numbers.
        if read != bytes.end - bytes.start {
            self.file.check(false)?;
            return Err(Error::EndedEarly {
                held: bytes.start + read,
                size: self.length,
            });
        }
        let root = stream.finish(sink)?;
        self.file.check(false)?;
        Ok(root)
    }

    /// Leaves too big to map whole: a round hashes one leaf per thread,
    /// each mapping its leaf a piece at a time.
    fn big_leaves(
        self,
        leaves: Range<u64>,
        mut root: Root,
        sink: &mut Sink<'_>,
    ) -> Result<Root, Error> {
        let threads = rayon::current_num_threads();
        let progress = sink.progress;
        let mut asked = Asked::new(self, leaves.clone());
        for round in leaves.clone().step_by(threads) {
            sink.go_on()?;
            let round = round..leaves.end.min(round.saturating_add(threads as u64));
            asked.through(round.end.saturating_add(threads as u64));
            let digests: Vec<Result<Digest, Error>> = round
                .into_par_iter()
                .map(|index| {
                    let last = if index + 1 == self.count {
                        LastNode::Yes
                    } else {
                        LastNode::No
                    };
                    self.big_leaf(index, last, progress)
                })
                .collect();
            self.file.check(false)?;
            for digest in digests {
                root.feed(digest?.as_bytes(), self.tree.digest_size(), sink);
            }
        }
        Ok(root)
    }

    /// Hashes one big leaf a mapped piece at a time (or a read piece, where
    /// mapping is refused).
    fn big_leaf(
        self,
        index: u64,
        last: LastNode,
        progress: Option<&AtomicU64>,
    ) -> Result<Digest, Error> {
        let bytes = self.bytes(index..index + 1);
        let mut leaf = LeafState::new(self.tree, index);
        let mut buffer = Vec::new();
        let mut offset = bytes.start;
        while offset < bytes.end {
            let piece = offset..bytes.end.min(offset + tuning::PIECE);
            match self.file.map(piece.clone()) {
                Some(mapping) => {
                    mapping.wait_for(0..mapping.bytes().len());
                    leaf.update(mapping.bytes());
                    if mapping.faulted() {
                        self.file.check(true)?;
                    }
                }
                None => {
                    if buffer.is_empty() {
                        buffer = read_buffer(tuning::PIECE as usize)?;
                    }
                    let mut at = piece.start;
                    while at < piece.end {
                        let len = (piece.end - at).min(buffer.len() as u64) as usize;
                        let part = &mut buffer[..len];
                        read_exact_at(self.file, part, at)?;
                        leaf.update(part);
                        at += part.len() as u64;
                    }
                }
            }
            if let Some(progress) = progress {
                progress.fetch_add(piece.end - piece.start, Ordering::Relaxed);
            }
            offset = piece.end;
        }
        Ok(leaf.finalize(last))
    }
}

/// The leaves asked to be read ahead ([`RandomAccess::read_ahead`]) so
/// far. Each window (or round of big leaves) is asked for together with
/// the next one: hashed from a pool thread, a window is done before the
/// next is mapped, and the storage would be idle meanwhile.
struct Asked<'a> {
    file: FileLeaves<'a>,
    /// The leaves to be hashed.
    leaves: Range<u64>,
    /// Leaves before this one have been asked for.
    through: u64,
}

impl<'a> Asked<'a> {
    fn new(file: FileLeaves<'a>, leaves: Range<u64>) -> Self {
        Asked {
            file,
            through: leaves.start,
            leaves,
        }
    }

    /// Asks for the leaves up to `end` (cut at the last one to be hashed)
    /// not asked for yet.
    fn through(&mut self, end: u64) {
        let end = end.min(self.leaves.end);
        if end > self.through {
            self.file
                .file
                .read_ahead(self.file.bytes(self.through..end));
            self.through = end;
        }
    }
}

/// The bytes `offset..end` of a random-access input, as a reader.
struct ReadAt<'a> {
    file: &'a dyn RandomAccess,
    offset: u64,
    end: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = (self.end - self.offset).min(buf.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        let count = self.file.read_at(&mut buf[..want], self.offset)?;
        self.offset += count as u64;
        Ok(count)
    }
}

/// Fills `buf` from `offset`; a file that ends early has changed, or says
/// more than it holds.
fn read_exact_at(file: &dyn RandomAccess, buf: &mut [u8], offset: u64) -> Result<(), Error> {
    let read = crate::os::fill_at(buf, offset, |buf, offset| file.read_at(buf, offset))?;
    if read < buf.len() {
        file.check(false)?;
        return Err(Error::EndedEarly {
            held: offset + read as u64,
            size: file.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::engine::{LeafSink, Source};
    use crate::params::Algorithm;

    /// An input in memory that maps its first `maps` requests only, and
    /// answers reads at offsets a few thousand bytes at a time. It checks
    /// the read-ahead contract: bytes are asked for in file order, each
    /// range where the last ended, and a window is mapped (and its bytes
    /// waited for) only once they have been asked for.
    struct Memory {
        data: Vec<u8>,
        maps: AtomicUsize,
        /// The bytes asked for so far (`read_ahead`).
        asked: Mutex<Option<Range<u64>>>,
        /// The end of what was asked for, for the mappings to check.
        asked_end: Arc<AtomicU64>,
        /// How many times a mapping was waited for.
        waits: Arc<AtomicUsize>,
    }

    impl Memory {
        fn new(data: Vec<u8>, maps: usize) -> Self {
            Memory {
                data,
                maps: AtomicUsize::new(maps),
                asked: Mutex::new(None),
                asked_end: Arc::new(AtomicU64::new(0)),
                waits: Arc::new(AtomicUsize::new(0)),
            }
        }

        fn asked(&self) -> Option<Range<u64>> {
            self.asked.lock().unwrap().clone()
        }
    }

    /// A "mapping": a copy of the bytes, and where they were in the input.
    struct Copy {
        bytes: Vec<u8>,
        offset: u64,
        asked_end: Arc<AtomicU64>,
        waits: Arc<AtomicUsize>,
    }

    impl LeafBytes for Copy {
        fn bytes(&self) -> &[u8] {
            &self.bytes
        }

        fn wait_for(&self, range: Range<usize>) {
            assert!(range.start <= range.end && range.end <= self.bytes.len());
            let end = self.offset + range.end as u64;
            assert!(
                end <= self.asked_end.load(Ordering::SeqCst),
                "waits for bytes not asked for"
            );
            self.waits.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Mapping for Copy {
        fn faulted(&self) -> bool {
            false
        }
    }

    impl RandomAccess for Memory {
        fn len(&self) -> u64 {
            self.data.len() as u64
        }

        fn read_ahead(&self, bytes: Range<u64>) {
            assert!(
                bytes.start < bytes.end && bytes.end <= self.len(),
                "{bytes:?}"
            );
            let mut asked = self.asked.lock().unwrap();
            let union = match asked.take() {
                None => bytes,
                Some(before) => {
                    assert_eq!(before.end, bytes.start, "asked out of order");
                    before.start..bytes.end
                }
            };
            self.asked_end.store(union.end, Ordering::SeqCst);
            *asked = Some(union);
        }

        fn map(&self, bytes: Range<u64>) -> Option<Box<dyn Mapping>> {
            let asked = self.asked().expect("mapped before any read-ahead");
            assert!(
                asked.start <= bytes.start && bytes.end <= asked.end,
                "mapped before asked"
            );
            let left = self.maps.load(Ordering::Relaxed);
            (left > 0).then(|| {
                self.maps.store(left - 1, Ordering::Relaxed);
                Box::new(Copy {
                    bytes: self.data[bytes.start as usize..bytes.end as usize].to_vec(),
                    offset: bytes.start,
                    asked_end: Arc::clone(&self.asked_end),
                    waits: Arc::clone(&self.waits),
                }) as Box<dyn Mapping>
            })
        }

        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let rest = self.data.get(offset as usize..).unwrap_or_default();
            let count = buf.len().min(rest.len()).min(7919);
            buf[..count].copy_from_slice(&rest[..count]);
            Ok(count)
        }

        fn check(&self, _faulted: bool) -> Result<(), Error> {
            Ok(())
        }
    }

    /// Collects leaf digests, checking that they come in order.
    struct Collect {
        digest_size: usize,
        next: Option<u64>,
        digests: Vec<u8>,
    }

    impl LeafSink for Collect {
        fn leaves(&mut self, first: u64, digests: &[u8]) {
            assert!(self.next.is_none_or(|next| next == first), "out of order");
            self.next = Some(first + (digests.len() / self.digest_size) as u64);
            self.digests.extend_from_slice(digests);
        }
    }

    fn hash_with(tree: &TreeParams, source: Source<'_>) -> (Digest, Vec<u8>) {
        let mut collect = Collect {
            digest_size: tree.digest_size(),
            next: None,
            digests: Vec::new(),
        };
        let mut sink = Sink {
            leaves: Some(&mut collect),
            ..Sink::default()
        };
        let digest = crate::engine::hash(tree, source, &mut sink).unwrap().digest;
        (digest, collect.digests)
    }

    /// An input whose digest is no longer wanted stops at its next window,
    /// round of big leaves or read of a stream.
    #[test]
    fn abandoned_inputs_stop() {
        let abandoned = std::sync::atomic::AtomicBool::new(true);
        let data: Vec<u8> = (0..(20 << 20)).map(|i| (i % 251) as u8).collect();
        let mut checked = 0;
        for leaf_size in [64 << 10, (9 << 20) + 1] {
            let tree = TreeParams::new(Algorithm::Blake2b, 64, leaf_size).unwrap();
            let memory = Memory::new(data.clone(), usize::MAX);
            let sources = [
                Source::File {
                    file: &memory,
                    leaves: 0..u64::MAX,
                },
                Source::Stream(&mut &data[..]),
            ];
            for source in sources {
                let mut sink = Sink {
                    abandoned: Some(&abandoned),
                    ..Sink::default()
                };
                let hashed = crate::engine::hash(&tree, source, &mut sink);
                assert!(matches!(hashed, Err(Error::Abandoned)), "{hashed:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, 4);
    }

    /// Every way through a random-access input — mapped windows, reads at
    /// offsets from the first window on or from a later one, big leaves
    /// mapped or read a piece at a time, leaf ranges — against the bytes
    /// hashed in memory.
    #[test]
    fn random_access_inputs_match_memory_however_they_are_read() {
        let cases: [(Algorithm, usize, u64, usize); 4] = [
            // Windows of 65536 one-byte leaves: four of them.
            (Algorithm::Blake2b, 64, 1, 200_000),
            (Algorithm::Blake2s, 32, 3, 200_001),
            // Windows of 65536 64-byte leaves (4 MiB): three of them.
            (Algorithm::Blake2b, 17, 64, (9 << 20) + 5),
            // Big leaves, each mapped or read in 8 MiB pieces.
            (Algorithm::Blake2s, 7, (9 << 20) + 1, 20 << 20),
        ];
        let mut checked = 0;
        for (algorithm, size, leaf_size, len) in cases {
            let tree = TreeParams::new(algorithm, size, leaf_size).unwrap();
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let (expected, leaves) = hash_with(&tree, Source::Bytes(&data));
            let count = tree.leaf_count(len as u64);
            assert_eq!(leaves.len(), count as usize * size);
            let window = tuning::window_leaves(&tree) as u64;
            let ranges = [
                0..u64::MAX,
                0..1,
                1..3,
                count - 1..count,
                window - 1..window + 2,
                count / 2..u64::MAX,
            ];
            for maps in [0, 1, 2, usize::MAX] {
                for range in ranges.iter().filter(|range| range.start < count) {
                    let memory = Memory::new(data.clone(), maps);
                    let source = Source::File {
                        file: &memory,
                        leaves: range.clone(),
                    };
                    let (digest, got) = hash_with(&tree, source);
                    let end = range.end.min(count) as usize;
                    let want = &leaves[range.start as usize * size..end * size];
                    assert!(
                        got == want,
                        "{tree:?} {len} bytes, {maps} maps, leaves {range:?}"
                    );
                    if range.start == 0 && range.end >= count {
                        assert_eq!(digest, expected, "{tree:?} {len} bytes, {maps} maps");
                    }
                    // Only the range's own bytes are asked for: all of them
                    // where every window was mapped, and each mapping was
                    // waited for before it was hashed.
                    let bytes = tree.leaf_bytes(range.start, len as u64).start
                        ..tree.leaf_bytes(end as u64 - 1, len as u64).end;
                    let asked = memory.asked().expect("something asked for");
                    assert!(
                        asked.start == bytes.start && asked.end <= bytes.end,
                        "{asked:?}"
                    );
                    if maps == usize::MAX {
                        assert_eq!(asked, bytes, "{tree:?} {len} bytes, leaves {range:?}");
                        assert!(memory.waits.load(Ordering::SeqCst) > 0);
                    }
                    checked += 1;
                }
            }
        }
        // Six ranges of the first three inputs, five of the last (whose
        // window holds all three leaves), each read four ways.
        assert_eq!(checked, (6 + 6 + 6 + 5) * 4);
    }
}
