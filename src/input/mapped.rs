//! Regular files as [`RandomAccess`] inputs: mapped windows registered with
//! the SIGBUS guard and read ahead in file order (see `readahead`), reads at
//! offsets where mapping is refused, and the `fstat` comparison that tells a
//! file changed while it was hashed.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::sync::OnceLock;

use memmap2::{Mmap, MmapOptions};

use super::platform::{self, Stamp};
use super::readahead::{self, Arrival, ReadAhead};
use super::sigbus;
use crate::engine::{LeafBytes, Mapping, RandomAccess};
use crate::error::Error;

/// A regular file from `start` on, as the engine reads it: the bytes of an
/// input from its byte `first` on (0, unless the file is an excerpt of a
/// longer input), `len` bytes in all.
pub(super) struct RegularFile<'a> {
    file: &'a File,
    /// What the file was like when it was opened.
    before: &'a Stamp,
    /// The offset hashing starts at (standard input's current offset).
    start: u64,
    /// The input's byte that the file holds at `start`.
    first: u64,
    /// The input's length.
    len: u64,
    /// The reading ahead of its bytes, started when bytes not in memory
    /// are first asked for; `None` inside if it could not be.
    read_ahead: OnceLock<Option<ReadAhead>>,
    /// Whether it may be mapped (see `platform::safe_to_map`); if not, it
    /// is read at offsets.
    mappable: bool,
}

impl<'a> RegularFile<'a> {
    /// The file from `start` on, as it was when opened (`before`).
    pub(super) fn new(file: &'a File, before: &'a Stamp, start: u64) -> Self {
        let len = before.len.saturating_sub(start);
        RegularFile::excerpt(file, before, start, 0, len)
    }

    /// The file from `start` on as the bytes of an input of `len` bytes from
    /// its byte `first` on: only those bytes are asked for.
    pub(super) fn excerpt(
        file: &'a File,
        before: &'a Stamp,
        start: u64,
        first: u64,
        len: u64,
    ) -> Self {
        RegularFile {
            file,
            before,
            start,
            first,
            len,
            read_ahead: OnceLock::new(),
            mappable: platform::safe_to_map(file),
        }
    }

    /// Where the input's bytes `bytes` are in the file; an error for bytes
    /// before those it holds (which the engine never asks for).
    fn in_file(&self, bytes: Range<u64>) -> io::Result<Range<u64>> {
        let offset = bytes
            .start
            .checked_sub(self.first)
            .ok_or_else(|| io::Error::other("bytes before the excerpt were asked for"))?;
        let start = self.start + offset;
        Ok(start..start + (bytes.end - bytes.start))
    }

    fn reader(&self) -> Option<&ReadAhead> {
        self.read_ahead.get().and_then(Option::as_ref)
    }
}

impl RandomAccess for RegularFile<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_ahead(&self, bytes: Range<u64>) {
        let Ok(bytes) = self.in_file(bytes) else {
            return;
        };
        // A file in memory is hashed without a reader.
        if readahead::in_memory(self.file, bytes.clone()) {
            return;
        }
        let reader = self.read_ahead.get_or_init(|| ReadAhead::new(self.file));
        if let Some(reader) = reader {
            reader.ask(bytes);
        }
    }

    fn map(&self, bytes: Range<u64>) -> Option<Box<dyn Mapping>> {
        if !self.mappable {
            return None;
        }
        let bytes = self.in_file(bytes).ok()?;
        let arrival = self
            .reader()
            .and_then(|reader| reader.arrival(bytes.clone()));
        let window = Window::map(self.file, bytes.start, bytes.end - bytes.start, arrival)?;
        Some(Box::new(window))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let bytes = self.in_file(offset..offset)?;
        crate::os::read_at(self.file, buf, bytes.start)
    }

    fn check(&self, faulted: bool) -> Result<(), Error> {
        unchanged(self.file, self.before)?;
        if faulted {
            // A page that could not be read while the file looks as it did:
            // the device failed.
            #[cfg(unix)]
            return Err(io::Error::from_raw_os_error(libc::EIO).into());
            #[cfg(not(unix))]
            return Err(io::Error::other("Input/output error").into());
        }
        Ok(())
    }
}

/// Fails with [`Error::Changed`] if the file's stamp (its size, times and
/// identity) is no longer what it was.
pub(super) fn unchanged(file: &File, before: &Stamp) -> Result<(), Error> {
    if Stamp::now(file)? != *before {
        return Err(Error::Changed);
    }
    Ok(())
}

/// A mapped window of the file, registered with the SIGBUS guard.
pub(super) struct Window {
    // Field order matters: the registration is dropped (unregistered)
    // before the mapping is unmapped.
    guard: sigbus::Registration,
    map: Mmap,
    /// Where the window's bytes are being read ahead, if they are.
    arrival: Option<Arrival>,
}

impl Window {
    /// Maps `len` bytes at `offset`, which wait for `arrival` before they
    /// are read; `None` if the file cannot be mapped.
    pub(super) fn map(
        file: &File,
        offset: u64,
        len: u64,
        arrival: Option<Arrival>,
    ) -> Option<Window> {
        // SAFETY: the mapping is shared and read-only. The one way another
        // process can break Rust's rules through it is to shrink the file,
        // which would raise SIGBUS on access: the window is registered with
        // the SIGBUS guard before any access, and a window that faulted is
        // reported as a changed file, never hashed into a printed digest.
        // Concurrent writes through other descriptors can change the bytes
        // we read, which the fstat comparison reports.
        // A window takes address space as memory does (`ulimit -v`): one that
        // would leave no room for the rest of the work is read instead.
        let len = usize::try_from(len).ok()?;
        let map = crate::memory::keeping_room(|| {
            unsafe { MmapOptions::new().offset(offset).len(len).map(file) }.ok()
        })?;
        let guard = sigbus::Registration::new(map.as_ptr(), map.len())?;
        // Where the reader brings the bytes in, the pool's page faults must
        // not start read-ahead of their own, from wherever a lane is: they
        // only map what the reader has read. Elsewhere a fault reads ahead
        // of itself, as for any sequential reader.
        #[cfg(unix)]
        let _ = map.advise(if arrival.is_some() {
            memmap2::Advice::Random
        } else {
            memmap2::Advice::Sequential
        });
        #[cfg(windows)]
        prefetch(&map);
        Some(Window {
            guard,
            map,
            arrival,
        })
    }
}

/// Asks Windows to read a window into memory, in large requests and
/// ahead of the pool's page faults (`PrefetchVirtualMemory`, which only
/// starts the reads). Windows are mapped in file order, so the storage is
/// asked for the file front to back. A refusal changes nothing.
#[cfg(windows)]
fn prefetch(map: &Mmap) {
    use super::win32::{GetCurrentProcess, MemoryRange, PrefetchVirtualMemory};

    let range = MemoryRange {
        address: map.as_ptr().cast_mut().cast(),
        size: map.len(),
    };
    // SAFETY: one range, live for the call, covering a view this process
    // has mapped; the call only schedules reads of its pages.
    unsafe { PrefetchVirtualMemory(GetCurrentProcess(), 1, &range, 0) };
}

impl LeafBytes for Window {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    fn wait_for(&self, range: Range<usize>) {
        if let Some(arrival) = &self.arrival {
            arrival.wait(range);
        }
    }

    /// A window's pages are given back as soon as each task of the pool has
    /// hashed its part: the resident set then stays at the leaves being
    /// hashed (a SIMD group per thread), however large the windows. (Where
    /// that cannot be asked for, they go when the window is unmapped.)
    #[cfg(unix)]
    fn release(&self, range: Range<usize>) {
        use memmap2::UncheckedAdvice;
        let page = crate::os::page_size();
        let base = self.map.as_ptr() as usize;
        // Whole pages inside the range only: a page shared with a neighbour
        // task may still be being read.
        let first_page = (base + range.start).next_multiple_of(page);
        let end_page = (base + range.end) / page * page;
        if first_page < end_page {
            let (start, end) = (first_page - base, end_page - base);
            // SAFETY: the mapping is a shared, read-only mapping of a file:
            // MADV_DONTNEED only drops this process's page-table entries, and
            // a later read of those bytes faults them in again from the page
            // cache, unchanged. No byte of the mapping changes.
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
}

impl Mapping for Window {
    fn faulted(&self) -> bool {
        self.guard.faulted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (A mapped file cannot be shrunk on Windows.)
    #[cfg(unix)]
    #[test]
    fn a_window_cut_short_faults_instead_of_killing() {
        // Under an emulator (BT2SUM_TEST_EMULATED, as the integration tests
        // read it), SIGBUS and the handler's answer to it are the
        // emulator's.
        if std::env::var_os("BT2SUM_TEST_EMULATED").is_some() {
            crate::skip::skip(
                "a_window_cut_short_faults_instead_of_killing",
                "under emulation",
            );
            return;
        }
        let (_dir, path) = crate::input::temp_file("shrinking", vec![7u8; 2 << 20]);
        let file = File::open(&path).unwrap();
        let before = Stamp::now(&file).unwrap();
        let source = RegularFile::new(&file, &before, 0);
        let window = Window::map(&file, 0, 2 << 20, None).expect("mappable");
        assert!(source.check(window.faulted()).is_ok());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Every page past the new end raises SIGBUS; the guard answers each
        // with a zero page, so the bytes read there are zeroes.
        let sum: u64 = window.bytes().iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 7 * 4096);
        assert!(window.faulted());
        assert!(matches!(
            source.check(window.faulted()),
            Err(Error::Changed)
        ));
    }

    #[test]
    fn a_fault_elsewhere_is_not_swallowed() {
        // A window that is registered but not touched past the end stays clean.
        let (_dir, path) = crate::input::temp_file("steady", vec![1u8; 1 << 20]);
        let file = File::open(&path).unwrap();
        let window = Window::map(&file, 4096, (1 << 20) - 4096, None).expect("mappable");
        assert_eq!(window.bytes().len(), (1 << 20) - 4096);
        assert!(window.bytes().iter().all(|&b| b == 1));
        assert!(!window.faulted());
    }
}
