//! A regular file's bytes for the engine: mapped windows registered with
//! the SIGBUS guard (a file cut short while hashed is reported, not a
//! crash), asked of the storage ahead of the hashing, and handed back as
//! they are hashed; or, where mapping is not safe, read into buffers.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

use super::sigbus;
use crate::engine::{Bytes, Pieces};

/// A mapped window of a file.
pub(super) struct Window {
    // Field order matters: the registration is dropped (unregistered)
    // before the mapping is unmapped.
    guard: sigbus::Registration,
    map: Mmap,
}

impl Window {
    /// Maps `len` bytes of `file` from `offset`, and asks the storage for
    /// them at once, front to back, and for the `ahead` bytes after them
    /// in the background: the pool then finds its pages read, or coming, in large
    /// requests, however it hashes them.
    fn map(file: &File, offset: u64, len: usize, ahead: usize) -> io::Result<Window> {
        // SAFETY: the mapping is shared and read-only. The one way another
        // process can break Rust's rules through it is to shrink the file,
        // which would raise SIGBUS on access: the window is registered with
        // the SIGBUS guard before any access, and a window that faulted is
        // reported as a changed file, never hashed into a printed digest.
        // Concurrent writes through other descriptors can change the bytes
        // read, which the fstat comparison reports.
        let map = unsafe { MmapOptions::new().offset(offset).len(len).map(file)? };
        let guard = sigbus::Registration::new(map.as_ptr(), map.len())
            .ok_or_else(|| io::Error::other("the SIGBUS guard could not be installed"))?;
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        {
            bring_in(file, offset, len);
            // The bytes after it are asked for meanwhile, by the kernel's
            // own read-ahead (no thread of ours): the next window finds
            // them read or coming.
            let next = offset + len as u64;
            if ahead > 0 && !cached(file, next, ahead) {
                use std::os::fd::AsRawFd;
                // SAFETY: posix_fadvise reads no memory of this process;
                // it only schedules reads of the file's pages.
                unsafe {
                    libc::posix_fadvise(
                        file.as_raw_fd(),
                        next as libc::off_t,
                        ahead as libc::off_t,
                        libc::POSIX_FADV_WILLNEED,
                    )
                };
            }
        }
        #[cfg(all(unix, not(all(target_os = "linux", target_pointer_width = "64"))))]
        let _ = map.advise(memmap2::Advice::WillNeed);
        #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
        let _ = ahead;
        #[cfg(windows)]
        prefetch(&map);
        Ok(Window { guard, map })
    }
}

impl Bytes for Window {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    #[cfg(unix)]
    fn release(&self, range: Range<usize>) {
        use memmap2::UncheckedAdvice;
        let page = crate::sys::page_size();
        let base = self.map.as_ptr() as usize;
        // Whole pages inside the range only: a page shared with a neighbour
        // leaf may still be being read.
        let first_page = (base + range.start).next_multiple_of(page);
        let end_page = (base + range.end) / page * page;
        if first_page < end_page {
            // SAFETY: the mapping is a shared, read-only mapping of a file:
            // MADV_DONTNEED only drops this process's page-table entries, and
            // a later read of those bytes faults them in again from the page
            // cache, unchanged. No byte of the mapping changes.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    UncheckedAdvice::DontNeed,
                    first_page - base,
                    end_page - first_page,
                )
            };
        }
    }

    fn faulted(&self) -> bool {
        self.guard.faulted()
    }
}

/// Brings bytes `offset..offset + len` of `file` into the page cache front
/// to back, as `cat` would read them, unless they are there already: left
/// to the faults of the threads that hash it, a window would reach the
/// storage as small requests from all over it. (`sendfile` to `/dev/null`
/// reads with the kernel's sequential read-ahead, in the device's largest
/// requests, and copies nothing out; an error leaves the rest to the
/// faults.)
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn bring_in(file: &File, offset: u64, len: usize) {
    use std::os::fd::AsRawFd;
    static NULL: std::sync::OnceLock<Option<File>> = std::sync::OnceLock::new();
    if cached(file, offset, len) {
        return;
    }
    let Some(null) = NULL.get_or_init(|| File::options().write(true).open("/dev/null").ok()) else {
        return;
    };
    let end = offset + len as u64;
    let mut at = offset as libc::off_t;
    while (at as u64) < end {
        let count = (end - at as u64).min(8 << 20) as usize;
        // SAFETY: sendfile reads `file` from `at` (which it advances) into
        // /dev/null; of this process's memory it writes only `at`.
        if unsafe { libc::sendfile(null.as_raw_fd(), file.as_raw_fd(), &mut at, count) } <= 0 {
            return;
        }
    }
}

/// Whether every page of bytes `offset..offset + len` of `file` is in the
/// page cache (`cachestat`, Linux 6.5 and later; earlier kernels say no).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn cached(file: &File, offset: u64, len: usize) -> bool {
    use std::os::fd::AsRawFd;
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct Range {
        offset: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        cache: u64,
        dirty: u64,
        writeback: u64,
        evicted: u64,
        recently_evicted: u64,
    }
    let range = Range {
        offset,
        len: len as u64,
    };
    let mut stat = Stat::default();
    // SAFETY: cachestat only reads `range` and writes `stat`, both live
    // for the call; a kernel without it answers ENOSYS.
    let asked =
        unsafe { libc::syscall(SYS_CACHESTAT, file.as_raw_fd(), &range, &mut stat, 0) } == 0;
    let page = crate::sys::page_size() as u64;
    let pages = (offset + len as u64).div_ceil(page) - offset / page;
    asked && stat.cache >= pages
}

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

/// Bytes `offset..offset + len` of `file`: mapped, or read where mapping is
/// not safe (`mappable` false: a network or removable drive on Windows);
/// the `ahead` bytes after them will be asked for next.
pub(super) fn bytes_of(
    file: &File,
    offset: u64,
    len: usize,
    ahead: usize,
    mappable: bool,
) -> io::Result<Arc<dyn Bytes>> {
    if mappable && len > 0 {
        return Ok(Arc::new(Window::map(file, offset, len, ahead)?));
    }
    // (Within the budget; a refusal ends the process.)
    let mut buffer = vec![0; len];
    if crate::sys::read_full_at(file, &mut buffer, offset)? < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Arc::new(buffer))
}

/// A big leaf of a file, read a piece at a time.
pub(super) struct BigLeaf {
    pub file: Arc<File>,
    pub offset: u64,
    pub len: u64,
    pub mappable: bool,
}

impl Pieces for BigLeaf {
    fn piece(&self, range: Range<u64>) -> io::Result<Arc<dyn Bytes>> {
        let len = usize::try_from(range.end - range.start).map_err(io::Error::other)?;
        // (The next piece, of the same size, within the leaf.)
        let ahead = (self.len - range.end).min(len as u64) as usize;
        bytes_of(
            &self.file,
            self.offset + range.start,
            len,
            ahead,
            self.mappable,
        )
    }
}
