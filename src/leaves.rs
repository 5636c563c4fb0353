//! Leaf digests kept for a listing (`--leaves`), with bounded memory.
//!
//! The engine feeds every leaf digest to the root in leaf order; when a
//! listing is wanted it also appends them here. Up to [`IN_MEMORY`] bytes of
//! digests stay in memory; beyond that (tiny leaves on a big input) they go to
//! an anonymous temporary file, read back when the listing is written.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

/// Digest bytes kept in memory before spilling to a temporary file.
const IN_MEMORY: usize = 16 << 20;

/// The digests of consecutive leaves, numbered from `first`.
pub struct LeafLog {
    digest_size: usize,
    first: u64,
    count: u64,
    memory: Vec<u8>,
    spill: Option<File>,
    error: Option<io::Error>,
}

impl LeafLog {
    /// An empty log of `digest_size`-byte digests whose first leaf is `first`.
    pub fn new(digest_size: usize, first: u64) -> Self {
        LeafLog {
            digest_size,
            first,
            count: 0,
            memory: Vec::new(),
            spill: None,
            error: None,
        }
    }

    /// The index of the first leaf logged.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// How many leaves are logged.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Appends the digests of the next leaves.
    pub fn append(&mut self, digests: &[u8]) {
        debug_assert!(digests.len().is_multiple_of(self.digest_size));
        self.count += (digests.len() / self.digest_size) as u64;
        self.memory.extend_from_slice(digests);
        if self.memory.len() >= IN_MEMORY
            && self.error.is_none()
            && let Err(error) = self.spill_memory()
        {
            self.error = Some(error);
        }
    }

    fn spill_memory(&mut self) -> io::Result<()> {
        let file = match &mut self.spill {
            Some(file) => file,
            None => self.spill.insert(tempfile::tempfile()?),
        };
        file.write_all(&self.memory)?;
        self.memory.clear();
        Ok(())
    }

    /// Calls `each(index, digest)` for every leaf in order. Fails if the
    /// temporary file could not be written or read back.
    pub fn for_each(
        mut self,
        mut each: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let mut index = self.first;
        if let Some(mut file) = self.spill.take() {
            file.seek(SeekFrom::Start(0))?;
            let mut reader = BufReader::with_capacity(1 << 20, file);
            let mut digest = vec![0; self.digest_size];
            let spilled = self.count - (self.memory.len() / self.digest_size) as u64;
            for _ in 0..spilled {
                reader.read_exact(&mut digest)?;
                each(index, &digest)?;
                index += 1;
            }
        }
        for digest in self.memory.chunks(self.digest_size) {
            each(index, digest)?;
            index += 1;
        }
        Ok(())
    }
}
