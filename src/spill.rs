//! What outgrows memory: one store for records of any serde type, kept in
//! memory up to a capacity and beyond it in an anonymous temporary file,
//! read back in the order pushed or sorted.
//!
//! Records are encoded one after another in one buffer (each after its
//! length) with memcomparable, whose bytes compare as the records do
//! (derived `Ord`; byte strings kept compact with `serde_bytes`): a sorted
//! store sorts bytes, never decoding a record to order it. When the buffer
//! would pass the store's capacity, or all stores together would pass
//! theirs (`budget`), it goes to the file: as it is, or, sorted, as one
//! run, merged with the others when read back.

use std::borrow::Borrow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// What one store holds in memory before it spills, at most (less under an
/// address-space limit: `budget`). An audit fills several at once.
const IN_MEMORY: usize = 8 << 20;

/// The bytes all stores hold in memory now.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes read from the file at a time, per run (less when many runs are
/// merged: they share one store's memory).
const READ_BUFFER: usize = 64 << 10;

/// Records of type `T`, in memory up to a capacity, then in a temporary
/// file.
pub struct Spill<T> {
    sorted: bool,
    capacity: usize,
    /// Encoded records: each a 4-byte length and its bytes.
    buffer: Vec<u8>,
    /// Written in turn, read at offsets (by every run of a merge at once).
    file: Option<Arc<File>>,
    /// Where each spill of the buffer went in the file (sorted: a run each).
    runs: Vec<Range<u64>>,
    len: u64,
    /// The record being pushed, encoded.
    encoded: Vec<u8>,
    records: PhantomData<fn() -> T>,
}

/// A store read back in the order pushed.
impl<T> Default for Spill<T> {
    fn default() -> Self {
        Spill {
            sorted: false,
            capacity: IN_MEMORY.min(crate::budget::memory().per_structure),
            buffer: Vec::new(),
            file: None,
            runs: Vec::new(),
            len: 0,
            encoded: Vec::new(),
            records: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned> Spill<T> {
    /// How many records it holds.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a record.
    pub fn push(&mut self, record: &T) -> io::Result<()> {
        // (Encoded in a buffer kept from record to record: a new one grew
        // byte by byte.)
        let mut encoded = std::mem::take(&mut self.encoded);
        encoded.clear();
        let mut serializer = memcomparable::Serializer::new(&mut encoded);
        record
            .serialize(&mut serializer)
            .map_err(io::Error::other)?;
        let size = 4 + encoded.len();
        // (`Vec` at least doubles its room when it grows: a push that would
        // grow the buffer past the capacity spills it first.)
        let grows = self.buffer.len() + size > self.buffer.capacity();
        let full = grows && 2 * self.buffer.capacity().max(size) > self.capacity
            || HELD.load(Ordering::Relaxed) + size > crate::budget::memory().spilled_together;
        if full && !self.buffer.is_empty() {
            self.spill()?;
        }
        let len = u32::try_from(encoded.len())
            .map_err(|_| io::Error::other("a record of 4 GiB or more"))?;
        self.buffer.extend_from_slice(&len.to_le_bytes());
        self.buffer.extend_from_slice(&encoded);
        self.encoded = encoded;
        HELD.fetch_add(size, Ordering::Relaxed);
        self.len += 1;
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        let file = match &self.file {
            Some(file) => file,
            None => self.file.insert(Arc::new(tempfile::tempfile()?)),
        };
        // (At the end written so far: Windows' positional reads move the
        // offset that writes go to.)
        let start = self.runs.last().map_or(0, |run| run.end);
        (&**file).seek(SeekFrom::Start(start))?;
        let mut out = BufWriter::with_capacity(READ_BUFFER, &**file);
        if self.sorted {
            for record in sorted_records(&self.buffer) {
                out.write_all(&self.buffer[record.start - 4..record.end])?;
            }
        } else {
            out.write_all(&self.buffer)?;
        }
        out.flush()?;
        self.runs.push(start..start + self.buffer.len() as u64);
        HELD.fetch_sub(self.buffer.len(), Ordering::Relaxed);
        self.buffer = Vec::new();
        Ok(())
    }

    /// The records, in the order pushed (or, in a store made
    /// [`sorted`](Self::sorted), sorted); they can be read again.
    pub fn iter(&mut self) -> Box<dyn Iterator<Item = io::Result<T>> + '_> {
        if self.sorted {
            return Box::new(Merge::new(&*self));
        }
        let (file, written) = (
            self.file.as_ref(),
            self.runs.last().map_or(0, |run| run.end),
        );
        let mut run = file.map(|file| Run::new(file, 0..written, READ_BUFFER));
        let spilled = std::iter::from_fn(move || {
            let record = run.as_mut()?.next().transpose()?;
            Some(record.and_then(|bytes| decode(&bytes)))
        });
        let buffer = &self.buffer;
        Box::new(spilled.chain(records(buffer).map(|record| decode(&buffer[record]))))
    }

    /// A store read back sorted (by its records' encodings, which keep the
    /// order of a derived `Ord`).
    pub fn sorted() -> Self {
        let mut spill = Spill::default();
        spill.sorted = true;
        spill
    }

    /// The records of a store made [`sorted`](Self::sorted), sorted, read
    /// once: a store that spilled spills its buffer too, as one run more,
    /// and its runs are merged; otherwise its buffer is sorted in memory.
    pub fn into_sorted(mut self) -> io::Result<Box<dyn Iterator<Item = io::Result<T>>>>
    where
        T: 'static,
    {
        debug_assert!(self.sorted, "a store read in the order pushed");
        if self.file.is_some() && !self.buffer.is_empty() {
            self.spill()?;
        }
        Ok(Box::new(Merge::new(self)))
    }
}

impl<T> Drop for Spill<T> {
    fn drop(&mut self) {
        HELD.fetch_sub(self.buffer.len(), Ordering::Relaxed);
    }
}

/// Where each record of a buffer is, after its length.
fn records(buffer: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let len = u32::from_le_bytes(buffer.get(at..at + 4)?.try_into().expect("4 bytes"));
        at += 4 + len as usize;
        Some(at - len as usize..at)
    })
}

/// The records of a buffer, in the order of their bytes.
fn sorted_records(buffer: &[u8]) -> Vec<Range<usize>> {
    let mut records: Vec<_> = records(buffer).collect();
    records.sort_unstable_by(|a, b| buffer[a.clone()].cmp(&buffer[b.clone()]));
    records
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> io::Result<T> {
    memcomparable::from_slice(bytes).map_err(io::Error::other)
}

/// Encoded records from a range of the file, read a chunk at a time.
struct Run(BufReader<Stretch>);

impl Run {
    fn new(file: &Arc<File>, range: Range<u64>, chunk: usize) -> Run {
        let file = Arc::clone(file);
        Run(BufReader::with_capacity(chunk, Stretch { file, range }))
    }

    /// The next record's bytes; `None` at the run's end.
    fn next(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.0.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let mut len = [0; 4];
        self.0.read_exact(&mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        // (A length past the run's end is refused before room is made.)
        let (stretch, buffered) = (self.0.get_ref(), self.0.buffer().len() as u64);
        if len as u64 > stretch.range.end - stretch.range.start + buffered {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut record = vec![0; len];
        self.0.read_exact(&mut record)?;
        Ok(Some(record))
    }
}

/// The bytes of a range of the file, read at their offsets.
struct Stretch {
    file: Arc<File>,
    range: Range<u64>,
}

impl Read for Stretch {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.range.end - self.range.start).unwrap_or(usize::MAX);
        let len = buf.len().min(left);
        let read = crate::sys::read_full_at(&self.file, &mut buf[..len], self.range.start)?;
        self.range.start += read as u64;
        Ok(read)
    }
}

/// A sorted store's runs, merged; the records in its buffer (sorted: their
/// places) are one run more, the last. It reads a store it borrows or owns.
struct Merge<T, S> {
    store: S,
    runs: Vec<Run>,
    memory: std::vec::IntoIter<Range<usize>>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    /// Whether each run has given its first record to the heap.
    started: bool,
    records: PhantomData<fn() -> T>,
}

impl<T, S: Borrow<Spill<T>>> Merge<T, S> {
    fn new(store: S) -> Self {
        let spill = store.borrow();
        let chunk = (spill.capacity / spill.runs.len().max(1)).clamp(4 << 10, READ_BUFFER);
        let file = spill.file.as_ref();
        Merge {
            runs: (spill.runs.iter())
                .filter_map(|run| Some(Run::new(file?, run.clone(), chunk)))
                .collect(),
            memory: sorted_records(&spill.buffer).into_iter(),
            store,
            heap: BinaryHeap::new(),
            started: false,
            records: PhantomData,
        }
    }

    fn refill(&mut self, run: usize) -> io::Result<()> {
        let record = match self.runs.get_mut(run) {
            Some(spilled) => spilled.next()?,
            None => (self.memory.next()).map(|at| self.store.borrow().buffer[at].to_vec()),
        };
        if let Some(record) = record {
            self.heap.push(Reverse((record, run)));
        }
        Ok(())
    }
}

impl<T: DeserializeOwned, S: Borrow<Spill<T>>> Iterator for Merge<T, S> {
    type Item = io::Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if !std::mem::replace(&mut self.started, true)
            && let Err(error) = (0..=self.runs.len()).try_for_each(|run| self.refill(run))
        {
            return Some(Err(error));
        }
        let Reverse((record, run)) = self.heap.pop()?;
        Some(self.refill(run).and_then(|()| decode(&record)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever its capacity, a store gives every record back: in the
    /// order pushed (read twice, and once halfway), or sorted as `Ord` sorts
    /// them (read twice, then once more as the store is given up).
    #[test]
    fn records_come_back_in_order_or_sorted_from_memory_and_file() {
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
        enum Kind {
            First(i64),
            Second(#[serde(with = "serde_bytes")] Vec<u8>, Option<(u64, u32)>),
        }
        let records: Vec<(u64, Kind)> = (0..5000u64)
            .map(|i| {
                let kind = match i % 3 {
                    0 => Kind::First(i as i64 - 2500),
                    _ => Kind::Second(
                        vec![i as u8; (i % 37) as usize],
                        (i % 5 == 0).then_some((i, 7)),
                    ),
                };
                ((i * 7919) % 1013, kind)
            })
            .collect();
        let mut sorted_records = records.clone();
        sorted_records.sort();
        for capacity in [0, 1, 100, 10_000, usize::MAX] {
            let mut pushed = Spill::<(u64, Kind)>::default();
            let mut sorted = Spill::<(u64, Kind)>::sorted();
            (pushed.capacity, sorted.capacity) = (capacity, capacity);
            for (at, record) in records.iter().enumerate() {
                if at == records.len() / 2 {
                    // Read halfway: what is pushed next still goes after it.
                    assert_eq!(pushed.iter().count(), at);
                }
                pushed.push(record).unwrap();
                sorted.push(record).unwrap();
            }
            assert_eq!(pushed.len(), 5000);
            for _ in 0..2 {
                let back: Vec<_> = pushed.iter().map(Result::unwrap).collect();
                assert!(back == records, "capacity {capacity}");
                let back: Vec<_> = sorted.iter().map(Result::unwrap).collect();
                assert!(back == sorted_records, "capacity {capacity}, read sorted");
            }
            let back: Vec<_> = sorted.into_sorted().unwrap().map(Result::unwrap).collect();
            assert!(back == sorted_records, "capacity {capacity}, sorted");
        }
        let mut nothing = Spill::<u64>::sorted().into_sorted().unwrap();
        assert!(nothing.next().is_none());
    }
}
