//! Reading ahead: a file's bytes are asked of the storage front to back, in
//! large requests, by one reader thread, while the pool hashes the bytes the
//! reader has passed, in whatever order its lanes and threads go.
//!
//! Why it is needed: the pool reads a mapped window at many places at once
//! (the lanes of a SIMD group are a leaf apart, and each thread has its own
//! group), and a page fault reads only around the page that faulted. On a
//! file that is not in the page cache, the storage would be asked for small
//! pieces from all over the window, and would serve them no faster than it
//! serves `cat` (a spinning disk much slower, a seek for each).
//!
//! Instead the engine says which bytes it will hash next
//! ([`ReadAhead::ask`]), in file order. The reader brings them into the page
//! cache a chunk at a time, front to back, as a sequential reader would (so
//! the kernel's own read-ahead sends the storage its largest requests), and
//! a pool task waits ([`Arrival::wait`]) until the reader is past the bytes
//! it is about to touch. Bytes found in the page cache when the engine
//! asks for them are not asked of the reader ([`in_memory`]): a file that
//! is in memory is hashed as if there were no reader.
//!
//! One reader serves every file of the process, one asked range at a time
//! in the order they were asked: two files hashed at once are read a
//! window at a time each, never interleaved page by page.
//!
//! The reader keeps nothing resident: on Linux it sends each chunk to
//! `/dev/null` with `sendfile`, which reads it into the page cache without
//! copying it anywhere; elsewhere it reads the chunk into a reused 1 MiB
//! buffer. Errors are the pool's to meet: a chunk the reader could not read
//! is passed over, and the pool's own page faults then read it, or find it
//! gone (see `sigbus`).

use std::collections::VecDeque;
use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use memmap2::MmapOptions;

use crate::descriptors::{self, Ticket, When};
use crate::engine::tuning;

/// The reading ahead of one file being hashed; dropping it abandons what
/// was asked and not yet read.
pub(super) struct ReadAhead {
    shared: Arc<Shared>,
}

/// What a mapped window needs to wait for its bytes: the file's reader and
/// where the window starts in the file.
pub(super) struct Arrival {
    shared: Arc<Shared>,
    offset: u64,
}

/// What the reader and the hashing threads share for one file.
struct Shared {
    /// The file, opened again for the reader (see [`open_again`]), so that
    /// the reader never outlives the file it reads.
    file: File,
    /// The right to hold `file`'s descriptor.
    _descriptor: Ticket,
    pending: Mutex<Pending>,
    /// Notified as the reader gets past a chunk, and when the file is
    /// abandoned.
    arrived: Condvar,
}

#[derive(Default)]
struct Pending {
    /// The ranges asked for and not yet read, in the order asked (which is
    /// file order); the first is the one the reader is in.
    ranges: VecDeque<Range<u64>>,
    /// Hashing has ended (or failed): nothing is waited for any more.
    abandoned: bool,
}

/// The bytes the reader has gone through, over the life of the process
/// (for the tests: proof that a file was read ahead).
static FETCHED: AtomicU64 = AtomicU64::new(0);

/// The reader's work, in the order it was asked for.
struct Queue {
    requests: Mutex<VecDeque<(Arc<Shared>, Range<u64>)>>,
    asked: Condvar,
}

impl ReadAhead {
    /// Reading ahead for `file`; `None` if the reader thread could not be
    /// started or the file opened again (the hashing then reads the file
    /// through its own page faults, as well as they go).
    pub(super) fn new(file: &File) -> Option<ReadAhead> {
        queue()?;
        // (Reading ahead is worth no input lost for want of a descriptor.)
        let descriptor = descriptors::take(When::Ahead)?;
        let file = open_again(file)?;
        Some(ReadAhead {
            shared: Arc::new(Shared {
                file,
                _descriptor: descriptor,
                pending: Mutex::new(Pending::default()),
                arrived: Condvar::new(),
            }),
        })
    }

    /// Asks for the file's `bytes` to be read, after everything asked
    /// before.
    pub(super) fn ask(&self, bytes: Range<u64>) {
        if bytes.is_empty() {
            return;
        }
        let Some(queue) = queue() else { return };
        self.shared.lock().ranges.push_back(bytes.clone());
        lock(&queue.requests).push_back((Arc::clone(&self.shared), bytes));
        queue.asked.notify_one();
    }

    /// The waiting for a window of the file's `bytes`, if any of them are
    /// still to be read (a window whose bytes were in memory when asked
    /// for, or have been read since, has nothing to wait for).
    pub(super) fn arrival(&self, bytes: Range<u64>) -> Option<Arrival> {
        let pending = self.shared.lock();
        let waits = pending
            .ranges
            .iter()
            .any(|asked| asked.start < bytes.end && bytes.start < asked.end);
        drop(pending);
        waits.then(|| Arrival {
            shared: Arc::clone(&self.shared),
            offset: bytes.start,
        })
    }
}

/// Whether the file's `bytes` are in the page cache, as far as a quick look
/// tells (where the system can tell at once: Linux 6.5 and later; elsewhere
/// `false`): then they need not be asked for. A long range is judged by its
/// first and last chunks, which costs far less than asking of every page
/// (a file hashed warm asks of each window), and finds what a file read
/// before, in whole or in part, leaves in memory. A range judged in memory
/// that is not, in its middle, is read by the pool's own page faults.
pub(super) fn in_memory(file: &File, bytes: Range<u64>) -> bool {
    let chunk = tuning::READ_AHEAD_CHUNK;
    if bytes.end - bytes.start <= 2 * chunk {
        return cached(file, bytes) == Some(true);
    }
    cached(file, bytes.start..bytes.start + chunk) == Some(true)
        && cached(file, bytes.end - chunk..bytes.end) == Some(true)
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.shared.abandon();
    }
}

impl Arrival {
    /// Waits until every byte asked for before the window's `bytes.end`
    /// has been read (at once if none was).
    pub(super) fn wait(&self, bytes: Range<usize>) {
        let end = self.offset + bytes.end as u64;
        let mut pending = self.shared.lock();
        while !pending.abandoned && pending.ranges.front().is_some_and(|next| next.start < end) {
            pending = self
                .shared
                .arrived
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        lock(&self.pending)
    }

    /// Nothing more is read or waited for.
    fn abandon(&self) {
        let mut pending = self.lock();
        pending.abandoned = true;
        pending.ranges.clear();
        drop(pending);
        self.arrived.notify_all();
    }

    /// Reads `bytes` a chunk at a time, telling the waiting threads as it
    /// gets past each, until they are read or the file is abandoned.
    fn read(&self, bytes: Range<u64>, reader: &mut Reader) {
        let mut at = bytes.start;
        while at < bytes.end {
            if self.lock().abandoned {
                return;
            }
            let chunk = at..bytes.end.min(at + tuning::READ_AHEAD_CHUNK);
            reader.fetch(&self.file, chunk.clone());
            FETCHED.fetch_add(chunk.end - chunk.start, Ordering::Relaxed);
            let mut pending = self.lock();
            if let Some(next) = pending.ranges.front_mut() {
                next.start = next.start.max(chunk.end);
                if next.is_empty() {
                    pending.ranges.pop_front();
                }
            }
            drop(pending);
            self.arrived.notify_all();
            at = chunk.end;
        }
    }
}

/// The file open for the reader: on Linux opened anew (through
/// `/proc/self/fd`), so that the reader's sequential read-ahead state is
/// its own and can be widened (`POSIX_FADV_SEQUENTIAL` doubles the kernel's
/// read-ahead window, which keeps more requests in flight) without
/// touching a description the user shares, such as standard input's;
/// elsewhere, or if that fails, a duplicate of the descriptor. `None` if
/// neither can be had (no descriptor left).
fn open_again(file: &File) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(own) = File::open(path) {
            // SAFETY: posix_fadvise only sets the read-ahead mode of a
            // descriptor that is open for the call.
            unsafe { libc::posix_fadvise(own.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
            return Some(own);
        }
    }
    file.try_clone().ok()
}

/// Nothing panics while holding these locks; a poisoned one is still
/// consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reader's queue, its thread started on first use; `None` if the
/// thread could not be started.
fn queue() -> Option<&'static Queue> {
    static QUEUE: OnceLock<Option<&'static Queue>> = OnceLock::new();
    *QUEUE.get_or_init(|| {
        let queue: &'static Queue = Box::leak(Box::new(Queue {
            requests: Mutex::new(VecDeque::new()),
            asked: Condvar::new(),
        }));
        crate::memory::spawn("bt2sum-read-ahead", tuning::READ_AHEAD_STACK, move || {
            serve(queue)
        })
        .ok()
        .map(|_| queue)
    })
}

/// The reader thread: takes each asked range in turn, for the life of the
/// process.
fn serve(queue: &'static Queue) {
    let mut reader = Reader::default();
    loop {
        let mut requests = lock(&queue.requests);
        let (file, bytes) = loop {
            match requests.pop_front() {
                Some(request) => break request,
                None => {
                    requests = queue
                        .asked
                        .wait(requests)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        };
        drop(requests);
        // A panic here (a bug) must not leave the pool waiting for bytes
        // that will never be read: the file is abandoned, and the pool's
        // own page faults read it.
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            file.read(bytes, &mut reader);
        }));
        if read.is_err() {
            file.abandon();
            reader = Reader::default();
        }
    }
}

/// How the reader brings a chunk into the page cache: as a sequential
/// reader of the file would, so that the kernel's read-ahead sends the
/// storage its largest requests and reads the next chunk while the pool
/// waits for this one. (Faulting pages into a mapping of its own would
/// read around each fault instead, in smaller pieces.)
#[derive(Default)]
struct Reader {
    /// `/dev/null`, where Linux sends the bytes read without copying them
    /// out of the page cache (`sendfile`); `None` until opened, or where
    /// that fails.
    #[cfg(target_os = "linux")]
    null: Option<(File, Ticket)>,
    /// Whether `sendfile` was refused (or `/dev/null` could not be opened).
    #[cfg(target_os = "linux")]
    no_sendfile: bool,
    /// Elsewhere the bytes are read into this buffer and dropped.
    buffer: Vec<u8>,
}

impl Reader {
    /// Brings the file's `bytes` into the page cache; errors are passed
    /// over (the pool meets them).
    ///
    /// On Linux every chunk is read, even one the kernel's read-ahead has
    /// brought in already: that costs no copy, and a chunk passed over
    /// would leave unread the page that starts the kernel's next
    /// read-ahead, which would then start again small. Elsewhere, where
    /// reading costs a copy, a chunk that is all in memory is passed over.
    fn fetch(&mut self, file: &File, bytes: Range<u64>) {
        #[cfg(target_os = "linux")]
        if self.send_to_null(file, bytes.clone()) {
            return;
        }
        if !mapped_and_resident(file, bytes.clone()) {
            self.read(file, bytes);
        }
    }

    /// Reads `bytes` with `sendfile` to `/dev/null`; `false` if that is
    /// not possible here (then nothing was read).
    #[cfg(target_os = "linux")]
    fn send_to_null(&mut self, file: &File, bytes: Range<u64>) -> bool {
        use std::os::fd::AsRawFd;
        if self.no_sendfile {
            return false;
        }
        if self.null.is_none() {
            // (No descriptor to spare now: read this time, try next time.)
            let Some(descriptor) = descriptors::take(When::Ahead) else {
                return false;
            };
            let opened = std::fs::OpenOptions::new().write(true).open("/dev/null");
            let Ok(null) = opened else {
                self.no_sendfile = true;
                return false;
            };
            self.null = Some((null, descriptor));
        }
        let (null, _) = self.null.as_ref().expect("opened above");
        let mut offset = bytes.start as libc::off_t;
        while (offset as u64) < bytes.end {
            let count = (bytes.end - offset as u64) as usize;
            // SAFETY: both descriptors are open for the call, and `offset`
            // is a live `off_t` that sendfile advances (the file's own
            // offset is left alone).
            let sent =
                unsafe { libc::sendfile(null.as_raw_fd(), file.as_raw_fd(), &mut offset, count) };
            if sent > 0 {
                continue;
            }
            let error = std::io::Error::last_os_error();
            if sent < 0 && error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if sent < 0
                && offset as u64 == bytes.start
                && matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
            {
                // This file system cannot splice: read instead, from now on.
                self.no_sendfile = true;
                return false;
            }
            // The end of the file (it shrank), or an error: the pool's own
            // reads meet it.
            return true;
        }
        true
    }

    /// Reads `bytes` through the buffer, a piece at a time.
    fn read(&mut self, file: &File, bytes: Range<u64>) {
        if self.buffer.is_empty() {
            if !crate::memory::reserve_exact(&mut self.buffer, tuning::READ_CHUNK) {
                return;
            }
            self.buffer.resize(tuning::READ_CHUNK, 0);
        }
        let mut at = bytes.start;
        while at < bytes.end {
            let want = (bytes.end - at).min(self.buffer.len() as u64) as usize;
            match crate::os::read_full_at(file, &mut self.buffer[..want], at) {
                Ok(count) if count == want => at += count as u64,
                // The end of the file, or an error its hashing will meet.
                _ => return,
            }
        }
    }
}

/// Whether every page of the file's `bytes` is in the page cache, asked of
/// a mapping of them (`mincore`), for systems without `cachestat`; `false`
/// if they cannot be mapped.
fn mapped_and_resident(file: &File, bytes: Range<u64>) -> bool {
    let Ok(len) = usize::try_from(bytes.end - bytes.start) else {
        return false;
    };
    // SAFETY: the mapping is shared and read-only, and nothing reads its
    // bytes: mincore only asks which of its pages are in memory.
    let Ok(map) = (unsafe { MmapOptions::new().offset(bytes.start).len(len).map(file) }) else {
        return false;
    };
    let page = crate::os::page_size();
    let address = map.as_ptr() as usize;
    let start = address / page * page;
    let span = address + map.len() - start;
    let mut pages = Vec::new();
    if !crate::memory::reserve_exact(&mut pages, span.div_ceil(page)) {
        return false;
    }
    pages.resize(span.div_ceil(page), 0u8);
    // SAFETY: `start..start + span` is the page-aligned extent of a live
    // mapping, and `pages` has one byte per page of it, as mincore writes.
    let result =
        unsafe { libc::mincore(start as *mut libc::c_void, span, pages.as_mut_ptr().cast()) };
    result == 0 && pages.iter().all(|&page| page & 1 != 0)
}

/// Whether all of the file's `bytes` are in the page cache, asked without
/// mapping anything (`cachestat`, Linux 6.5 and later); `None` where the
/// system cannot say.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn cached(file: &File, bytes: Range<u64>) -> Option<bool> {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::AtomicBool;

    /// `cachestat`'s number in the unified system-call table.
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct CachestatRange {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Cachestat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    static REFUSED: AtomicBool = AtomicBool::new(false);
    if bytes.is_empty() {
        return Some(true);
    }
    if REFUSED.load(Ordering::Relaxed) {
        return None;
    }
    let range = CachestatRange {
        off: bytes.start,
        len: bytes.end - bytes.start,
    };
    let mut stat = Cachestat::default();
    // SAFETY: cachestat(2) reads `range` and writes `stat`, both live and
    // laid out as the kernel's structures; the descriptor is open.
    let result = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0u32,
        )
    };
    if result != 0 {
        // An older kernel, or a filter that refuses the call: ask no more.
        REFUSED.store(true, Ordering::Relaxed);
        return None;
    }
    let page = crate::os::page_size() as u64;
    let pages = (bytes.end - 1) / page - bytes.start / page + 1;
    Some(stat.nr_cache >= pages)
}

/// Where `cachestat` is not there, residency is asked of a mapping
/// ([`resident`]).
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn cached(_file: &File, _bytes: Range<u64>) -> Option<bool> {
    None
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::engine::Sink;
    use crate::input::Opened;
    use crate::params::{Algorithm, TreeParams};

    /// Writes `data` to a new file and drops its pages from the page cache;
    /// `None`, said to be a skip of `test`, where they stay (a file system
    /// that keeps every page, as tmpfs does), since the test would then
    /// prove nothing.
    fn cold_file(
        test: &str,
        dir: &tempfile::TempDir,
        name: &str,
        data: &[u8],
    ) -> Option<std::path::PathBuf> {
        let path = dir.path().join(name);
        let mut file = File::create(&path).unwrap();
        file.write_all(data).unwrap();
        file.sync_all().unwrap();
        // SAFETY: posix_fadvise only drops clean pages of the open file.
        // (macOS has no way to ask for that without privileges.)
        #[cfg(not(target_os = "macos"))]
        unsafe {
            use std::os::fd::AsRawFd;
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
        };
        if mapped_and_resident(&file, 0..data.len() as u64) {
            crate::skip::skip(test, &format!("{name}: its pages stay in memory here"));
            return None;
        }
        Some(path)
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 7919) as u8).collect()
    }

    /// Files not in the page cache are read ahead, and hash as they do in
    /// memory: whole, with leaf listings, leaf ranges and big leaves.
    #[test]
    fn cold_files_are_read_ahead_and_hash_the_same() {
        let dir = tempfile::tempdir().unwrap();
        // Algorithm, digest size, leaf size, length, leaf range.
        type Case = (Algorithm, usize, u64, usize, Option<Range<u64>>);
        let cases: [Case; 6] = [
            (Algorithm::Blake2b, 64, 5 << 20, (41 << 20) + 3, None),
            (Algorithm::Blake2s, 32, 5 << 20, 23 << 20, None),
            (Algorithm::Blake2b, 32, 4096, (9 << 20) + 1, None),
            (Algorithm::Blake2b, 64, 1 << 20, 30 << 20, Some(7..19)),
            (Algorithm::Blake2s, 16, (9 << 20) + 5, 40 << 20, None),
            (Algorithm::Blake2b, 64, 1000, 3 << 20, Some(100..2000)),
        ];
        let mut checked = 0;
        for (index, (algorithm, size, leaf, len, leaves)) in cases.into_iter().enumerate() {
            let tree = TreeParams::new(algorithm, size, leaf).unwrap();
            let data = pattern(len);
            let Some(path) = cold_file(
                "cold_files_are_read_ahead_and_hash_the_same",
                &dir,
                &index.to_string(),
                &data,
            ) else {
                return;
            };
            let mut expected = Vec::new();
            let mut memory_sink = Sink {
                leaves: Some(&mut expected),
                ..Sink::default()
            };
            let in_memory =
                crate::engine::hash(&tree, crate::engine::Source::Bytes(&data), &mut memory_sink)
                    .unwrap();
            let fetched = FETCHED.load(Ordering::Relaxed);
            let mut got = Vec::new();
            let mut sink = Sink {
                leaves: Some(&mut got),
                ..Sink::default()
            };
            let hashed = Opened::path(&path, When::InTurn)
                .unwrap()
                .hash(
                    &tree,
                    leaves.clone().map(crate::params::Selection::from).as_ref(),
                    &mut sink,
                )
                .unwrap();
            assert_eq!(hashed.length, len as u64);
            match &leaves {
                None => {
                    assert_eq!(hashed.digest, in_memory.digest, "{tree:?}, {len} bytes");
                    assert!(got == expected, "{tree:?}, {len} bytes");
                }
                Some(range) => {
                    let (first, end) = (range.start as usize * size, range.end as usize * size);
                    assert!(got == expected[first..end], "{tree:?}, leaves {range:?}");
                }
            }
            // The reader went through the bytes hashed: all of them, but
            // for what the kernel's own read-ahead had brought in by the
            // time they were asked for (at most a few read-ahead windows).
            let wanted = match &leaves {
                None => len as u64,
                Some(range) => (range.end - range.start) * leaf,
            };
            let read = FETCHED.load(Ordering::Relaxed) - fetched;
            assert!(
                read >= wanted.min(tuning::READ_AHEAD_CHUNK),
                "{tree:?}: {read} bytes of {wanted} read ahead"
            );
            checked += 1;
        }
        assert_eq!(checked, 6);
    }

    /// Collects leaf digests.
    impl crate::engine::LeafSink for Vec<u8> {
        fn leaves(&mut self, _first: u64, digests: &[u8]) {
            self.extend_from_slice(digests);
        }
    }

    #[test]
    fn asked_bytes_arrive_in_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let data = pattern(20 << 20);
        let Some(path) = cold_file("asked_bytes_arrive_in_the_page_cache", &dir, "cold", &data)
        else {
            return;
        };
        let file = File::open(&path).unwrap();
        let reader = ReadAhead::new(&file).expect("a reader");
        reader.ask(3 << 20..(17 << 20) + 5);
        let window = (1 << 20)..(17 << 20);
        reader
            .arrival(window)
            .expect("bytes to wait for")
            .wait(0..16 << 20);
        assert!(mapped_and_resident(&file, 3 << 20..17 << 20));
        // Bytes never asked for are not waited for.
        assert!(reader.arrival(18 << 20..19 << 20).is_none());
    }

    #[test]
    fn waiting_ends_when_the_reading_is_abandoned() {
        let (_dir, path) = crate::input::temp_file("file", b"bytes");
        let file = File::open(&path).unwrap();
        let reader = ReadAhead::new(&file).expect("a reader");
        // Asked for, but never handed to the reader thread: only abandoning
        // the reading can end the wait.
        reader.shared.lock().ranges.push_back(0..5);
        let arrival = reader.arrival(0..5).expect("bytes to wait for");
        std::thread::scope(|scope| {
            let waiter = scope.spawn(move || arrival.wait(0..5));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished());
            drop(reader);
            waiter.join().unwrap();
        });
    }

    /// The way of reading used where `sendfile` is not (other systems).
    #[test]
    fn reading_through_the_buffer_fills_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let data = pattern(3 << 20);
        let Some(path) = cold_file(
            "reading_through_the_buffer_fills_the_page_cache",
            &dir,
            "read",
            &data,
        ) else {
            return;
        };
        let file = File::open(&path).unwrap();
        assert!(!mapped_and_resident(&file, 0..3 << 20));
        Reader::default().read(&file, 1 << 20..(2 << 20) + 1);
        assert!(mapped_and_resident(&file, 1 << 20..(2 << 20) + 1));
    }
}
