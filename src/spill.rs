//! Records kept in bounded memory: what outgrows the memory set aside goes
//! to an anonymous temporary file. A [`Spool`] gives its records back in
//! the order they came; a [`Sorter`] gives them back sorted, bytewise, from
//! sorted runs merged as they are read. Audits hold the names of a list of
//! millions of files this way, and the files that are new or missing.
//!
//! A record is any bytes, up to 4 GiB; in the file each is its length (4
//! bytes, little-endian) and its bytes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

use crate::memory;

/// The memory one spool or sorter holds before it spills.
pub use crate::memory::IN_MEMORY;

/// What reading a run back holds per run.
const READ_BUFFER: usize = 64 << 10;

/// A temporary file.
struct Spilled {
    file: BufWriter<File>,
    /// Bytes written so far.
    len: u64,
}

impl Spilled {
    fn new() -> io::Result<Spilled> {
        Ok(Spilled {
            file: BufWriter::with_capacity(READ_BUFFER, tempfile::tempfile()?),
            len: 0,
        })
    }

    fn write_record(&mut self, record: &[u8]) -> io::Result<()> {
        let len = u32::try_from(record.len()).map_err(|_| io::Error::other("record too long"))?;
        self.file.write_all(&len.to_le_bytes())?;
        self.file.write_all(record)?;
        self.len += 4 + u64::from(len);
        Ok(())
    }

    /// The file, written out, for reading at offsets.
    fn into_file(self) -> io::Result<File> {
        self.file
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
    }
}

/// Records given back in the order they came.
pub struct Spool {
    memory: Vec<Vec<u8>>,
    held: usize,
    budget: usize,
    spilled: Option<Spilled>,
    count: u64,
}

impl Spool {
    /// An empty spool holding up to `budget` bytes in memory.
    pub fn new(budget: usize) -> Spool {
        Spool {
            memory: Vec::new(),
            held: 0,
            budget,
            spilled: None,
            count: 0,
        }
    }

    /// How many records it holds.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a record.
    /// Where memory for it is refused (`ulimit -v`), what is in memory
    /// spills now.
    pub fn push(&mut self, record: &[u8]) -> io::Result<()> {
        self.count += 1;
        if self.spilled.is_none() {
            let copy = (self.held + record.len() <= self.budget)
                .then(|| kept(record))
                .flatten();
            if let Some(copy) = copy.filter(|_| memory::reserve(&mut self.memory, 1)) {
                self.held += record.len() + std::mem::size_of::<Vec<u8>>();
                self.memory.push(copy);
                return Ok(());
            }
            let mut spilled = Spilled::new()?;
            for held in self.memory.drain(..) {
                spilled.write_record(&held)?;
            }
            self.memory = Vec::new();
            self.held = 0;
            self.spilled = Some(spilled);
        }
        self.spilled
            .as_mut()
            .expect("spilled above")
            .write_record(record)
    }

    /// The records, in the order they came (as often as asked).
    pub fn records(&mut self) -> io::Result<impl Iterator<Item = io::Result<Vec<u8>>> + '_> {
        Ok(match &mut self.spilled {
            None => Records::Memory(self.memory.iter()),
            Some(spilled) => {
                spilled.file.flush()?;
                Records::File(Run::new(0, spilled.len), spilled.file.get_ref())
            }
        })
    }
}

/// A spool's records, read back.
enum Records<'a> {
    Memory(std::slice::Iter<'a, Vec<u8>>),
    File(Run, &'a File),
}

impl Iterator for Records<'_> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Records::Memory(records) => records.next().cloned().map(Ok),
            Records::File(run, file) => run.next(file).transpose(),
        }
    }
}

/// A copy of `record`, if memory for it is granted.
fn kept(record: &[u8]) -> Option<Vec<u8>> {
    let mut copy = Vec::new();
    memory::reserve_exact(&mut copy, record.len()).then(|| {
        copy.extend_from_slice(record);
        copy
    })
}

/// Records given back sorted, bytewise; equal ones all given.
pub struct Sorter {
    memory: Vec<Vec<u8>>,
    held: usize,
    budget: usize,
    spilled: Option<Spilled>,
    /// The sorted runs in the file: where each starts and ends.
    runs: Vec<(u64, u64)>,
}

impl Sorter {
    /// An empty sorter holding up to `budget` bytes in memory.
    pub fn new(budget: usize) -> Sorter {
        Sorter {
            memory: Vec::new(),
            held: 0,
            budget,
            spilled: None,
            runs: Vec::new(),
        }
    }

    /// Adds a record.
    /// Where memory for it is refused (`ulimit -v`), the records in memory
    /// spill as a run, and the memory is tried again.
    pub fn push(&mut self, record: Vec<u8>) -> io::Result<()> {
        if !self.memory.is_empty() && self.held + record.len() > self.budget {
            self.spill_run()?;
        }
        if !memory::reserve(&mut self.memory, 1) {
            self.spill_run()?;
            if !memory::reserve(&mut self.memory, 1) {
                return Err(memory::out_of_memory());
            }
        }
        self.held += record.len() + std::mem::size_of::<Vec<u8>>();
        self.memory.push(record);
        Ok(())
    }

    /// Writes the records in memory to the file as one sorted run.
    fn spill_run(&mut self) -> io::Result<()> {
        self.memory.sort_unstable();
        let spilled = match &mut self.spilled {
            Some(spilled) => spilled,
            None => self.spilled.insert(Spilled::new()?),
        };
        let start = spilled.len;
        for record in self.memory.drain(..) {
            spilled.write_record(&record)?;
        }
        self.runs.push((start, spilled.len));
        self.memory = Vec::new();
        self.held = 0;
        Ok(())
    }

    /// The records, sorted.
    pub fn into_sorted(mut self) -> io::Result<impl Iterator<Item = io::Result<Vec<u8>>>> {
        if self.spilled.is_none() {
            self.memory.sort_unstable();
            return Ok(Sorted::Memory(self.memory.into_iter()));
        }
        if !self.memory.is_empty() {
            self.spill_run()?;
        }
        let spilled = self.spilled.take().expect("spilled above");
        let file = spilled.into_file()?;
        let mut runs = Vec::new();
        let mut heap = BinaryHeap::new();
        for (index, &(start, end)) in self.runs.iter().enumerate() {
            let mut run = Run::new(start, end);
            if let Some(record) = run.next(&file)? {
                heap.push(Reverse((record, index)));
            }
            runs.push(run);
        }
        Ok(Sorted::Merged(Merge { file, runs, heap }))
    }
}

/// A sorter's records, read back.
enum Sorted {
    Memory(std::vec::IntoIter<Vec<u8>>),
    Merged(Merge),
}

/// Sorted runs merged: the least next record of any run, each time.
struct Merge {
    file: File,
    runs: Vec<Run>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
}

impl Iterator for Sorted {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        let merge = match self {
            Sorted::Memory(records) => return records.next().map(Ok),
            Sorted::Merged(merge) => merge,
        };
        let Reverse((record, index)) = merge.heap.pop()?;
        match merge.runs[index].next(&merge.file) {
            Ok(Some(next)) => merge.heap.push(Reverse((next, index))),
            Ok(None) => {}
            Err(error) => return Some(Err(error)),
        }
        Some(Ok(record))
    }
}

/// The records of `start..end` of a file, read a buffer at a time at
/// offsets (runs of one file are read side by side).
struct Run {
    buffer: Vec<u8>,
    /// The unread part of `buffer`.
    at: usize,
    /// Where the bytes after `buffer` start in the file.
    offset: u64,
    end: u64,
}

impl Run {
    fn new(start: u64, end: u64) -> Run {
        Run {
            buffer: Vec::new(),
            at: 0,
            offset: start,
            end,
        }
    }

    /// Makes at least `wanted` unread bytes be in the buffer; `false` if the
    /// run has fewer left.
    fn fill(&mut self, file: &File, wanted: usize) -> io::Result<bool> {
        let unread = self.buffer.len() - self.at;
        if unread >= wanted {
            return Ok(true);
        }
        let left = self.end - self.offset;
        if (unread as u64) + left < wanted as u64 {
            return Ok(false);
        }
        self.buffer.drain(..self.at);
        self.at = 0;
        let more = wanted.saturating_sub(unread).max(READ_BUFFER);
        let more = usize::try_from(left).map_or(more, |left| left.min(more));
        let start = self.buffer.len();
        if !memory::reserve_exact(&mut self.buffer, more) {
            return Err(memory::out_of_memory());
        }
        self.buffer.resize(start + more, 0);
        crate::os::read_exact_at(file, &mut self.buffer[start..], self.offset)?;
        self.offset += more as u64;
        Ok(true)
    }

    /// The next record, or `None` at the run's end.
    fn next(&mut self, file: &File) -> io::Result<Option<Vec<u8>>> {
        if !self.fill(file, 4)? {
            return Ok(None);
        }
        let len_bytes: [u8; 4] = self.buffer[self.at..self.at + 4]
            .try_into()
            .expect("4 bytes");
        let len = u32::from_le_bytes(len_bytes) as usize;
        if !self.fill(file, 4 + len)? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a temporary file ended early",
            ));
        }
        let record = self.buffer[self.at + 4..self.at + 4 + len].to_vec();
        self.at += 4 + len;
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random records of 0 to 40 bytes.
    fn records(count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|_| {
                (0..next() % 41)
                    .map(|_| (next() % 7) as u8 + b'a')
                    .collect()
            })
            .collect()
    }

    #[test]
    fn spools_give_back_what_came_in_order_from_memory_or_file_as_often_as_asked() {
        for (count, budget) in [(0, 1 << 20), (1000, 1 << 20), (1000, 100), (50_000, 4096)] {
            let given = records(count, count as u64 + 7);
            let mut spool = Spool::new(budget);
            for record in &given {
                spool.push(record).unwrap();
            }
            assert_eq!(spool.len(), count as u64);
            for _ in 0..2 {
                let back: Vec<Vec<u8>> = spool.records().unwrap().map(Result::unwrap).collect();
                assert!(back == given, "{count} records, budget {budget}");
            }
        }
    }

    #[test]
    fn sorters_give_back_every_record_sorted_from_memory_or_runs() {
        for (count, budget) in [(0, 1 << 20), (1000, 1 << 20), (1000, 100), (50_000, 4096)] {
            let mut given = records(count, count as u64 + 3);
            let mut sorter = Sorter::new(budget);
            for record in &given {
                sorter.push(record.clone()).unwrap();
            }
            let back: Vec<Vec<u8>> = sorter.into_sorted().unwrap().map(Result::unwrap).collect();
            given.sort();
            assert!(back == given, "{count} records, budget {budget}");
        }
    }
}
