//! Where the bytes come from: files by name, or standard input.
//!
//! A regular file of at least [`MAP_MIN`] bytes is memory-mapped a window of
//! whole leaves at a time (so resident memory stays at one or two windows,
//! whatever the file size), and each window is hashed on the pool while the
//! next is mapped. Everything else — small files, pipes, FIFOs, terminals,
//! character devices, `/proc` files whose size says 0 — is read as a stream
//! into the [`TreeHasher`]'s buffers. Standard input that is a regular file is
//! hashed as that file, from its current offset.
//!
//! A regular file is `fstat`ed before and after: a change of size or
//! modification time, or a mapped page found past the end of the file (see
//! `sigbus`), makes the result [`InputError::Changed`] instead of a digest.

mod sigbus;

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{Mmap, MmapOptions, UncheckedAdvice};
use rayon::prelude::*;

use crate::leaves::LeafLog;
use crate::tree::{
    Digest, EndOfInput, LastNode, LeafBytes, LeafState, Pipeline, Spread, TreeHasher, TreeParams,
    hash_keeping_leaves,
};

/// Regular files smaller than this are read: one `read` is cheaper than
/// setting up and tearing down a mapping.
pub const MAP_MIN: u64 = 1 << 20;

/// Big leaves (over [`crate::tree::BIG_LEAF`]) are mapped this much at a time.
const PIECE: u64 = 8 << 20;

/// Why an input has no digest.
#[derive(Debug)]
pub enum InputError {
    /// Opening or reading failed.
    Io(io::Error),
    /// The file's size or modification time changed while it was hashed.
    Changed,
}

impl From<io::Error> for InputError {
    fn from(error: io::Error) -> Self {
        InputError::Io(error)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io(error) => f.write_str(&plain_message(error)),
            InputError::Changed => f.write_str("file changed while being read"),
        }
    }
}

impl std::error::Error for InputError {}

/// The system's message for an error, without Rust's ` (os error N)` suffix:
/// `No such file or directory`, as other command-line tools print it.
pub fn plain_message(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(cut) if error.raw_os_error().is_some() => text[..cut].to_string(),
        _ => text,
    }
}

/// What to do besides computing the checksum.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options<'a> {
    /// Keep every leaf digest, for a listing.
    pub keep_leaves: bool,
    /// A counter of the bytes hashed so far, for a progress display.
    pub progress: Option<&'a AtomicU64>,
}

/// The outcome of hashing one input.
pub struct Hashed {
    /// The checksum.
    pub digest: Digest,
    /// The number of bytes hashed.
    pub length: u64,
    /// The leaf digests, when [`Options::keep_leaves`] asked for them.
    pub leaves: Option<LeafLog>,
}

/// Hashes the file at `path` (or whatever it names: a FIFO, a device, …).
pub fn hash_path(tree: &TreeParams, path: &Path) -> Result<Digest, InputError> {
    Ok(hash_path_with(tree, path, Options::default())?.digest)
}

/// [`hash_path`] with options.
pub fn hash_path_with(
    tree: &TreeParams,
    path: &Path,
    options: Options<'_>,
) -> Result<Hashed, InputError> {
    // A file just opened is at offset 0: no need to ask.
    hash_open_file(tree, File::open(path)?, 0, options)
}

/// Hashes several named inputs, as [`hash_path_with`] does one by one, but
/// with the small regular files among them (one leaf or less) read first and
/// hashed side by side in the SIMD lanes.
pub fn hash_paths_with(
    tree: &TreeParams,
    paths: &[&Path],
    options: Options<'_>,
) -> Vec<Result<Hashed, InputError>> {
    /// A small file read whole into `arena[range]`, still open for the
    /// `fstat` after hashing.
    struct Small {
        slot: usize,
        file: File,
        before: Metadata,
        range: Range<usize>,
    }
    let mut results: Vec<Option<Result<Hashed, InputError>>> = Vec::with_capacity(paths.len());
    let mut smalls = Vec::new();
    let mut arena = Vec::new();
    for (slot, path) in paths.iter().enumerate() {
        let opened = File::open(path).map_err(InputError::from).and_then(|file| {
            let before = file.metadata()?;
            Ok((file, before))
        });
        let result = match opened {
            Err(error) => Some(Err(error)),
            Ok((mut file, before)) => {
                let small = before.is_file()
                    && (1..=tree.leaf_size().min(MAP_MIN - 1)).contains(&before.len())
                    && !options.keep_leaves;
                match small.then(|| read_whole(&mut file, before.len(), &mut arena)) {
                    Some(Ok(Some(range))) => {
                        smalls.push(Small {
                            slot,
                            file,
                            before,
                            range,
                        });
                        None
                    }
                    Some(Err(error)) => Some(Err(error.into())),
                    // Longer than it said (a special file): from the start,
                    // the general way.
                    Some(Ok(None)) => Some(
                        file.rewind()
                            .map_err(InputError::from)
                            .and_then(|()| hash_open_file(tree, file, 0, options)),
                    ),
                    None => Some(hash_open_file(tree, file, 0, options)),
                }
            }
        };
        results.push(result);
    }
    let inputs: Vec<&[u8]> = smalls
        .iter()
        .map(|small| &arena[small.range.clone()])
        .collect();
    let digests = crate::tree::hash_single_leaf_inputs(tree, &inputs);
    for (small, digest) in smalls.iter().zip(digests) {
        let length = small.range.len() as u64;
        if let Some(progress) = options.progress {
            progress.fetch_add(length, Ordering::Relaxed);
        }
        let result = unchanged(&small.file, &small.before).map(|()| Hashed {
            digest,
            length,
            leaves: None,
        });
        results[small.slot] = Some(result);
    }
    results
        .into_iter()
        .map(|result| result.expect("every input has a result"))
        .collect()
}

/// Appends a file expected to hold `expected` bytes to `arena` and returns
/// where; `None` if it holds more (then `arena` is as it was).
fn read_whole(
    file: &mut File,
    expected: u64,
    arena: &mut Vec<u8>,
) -> io::Result<Option<Range<usize>>> {
    let start = arena.len();
    // One byte more than expected: the read that finds the end.
    let read = Read::by_ref(file).take(expected + 1).read_to_end(arena)?;
    if read as u64 > expected {
        arena.truncate(start);
        return Ok(None);
    }
    Ok(Some(start..arena.len()))
}

/// Hashes standard input to its end.
pub fn hash_stdin(tree: &TreeParams) -> Result<Digest, InputError> {
    Ok(hash_stdin_with(tree, Options::default())?.digest)
}

/// [`hash_stdin`] with options.
pub fn hash_stdin_with(tree: &TreeParams, options: Options<'_>) -> Result<Hashed, InputError> {
    // A duplicate of descriptor 0 shares its offset, so `bt2sum < FILE` after
    // a partial read by a parent shell hashes from where the shell left off.
    let mut file = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    if !file.metadata()?.is_file() {
        return hash_open_file(tree, file, 0, options);
    }
    let start = file.stream_position()?;
    let mut shared_offset = file.try_clone()?;
    let hashed = hash_open_file(tree, file, start, options)?;
    // A mapped file was not read through the descriptor: leave its offset
    // at the end as reading would, so that a second `-` finds nothing left.
    shared_offset.seek(SeekFrom::End(0))?;
    Ok(hashed)
}

/// Hashes an open file of any kind from its current offset to its end.
pub fn hash_file(tree: &TreeParams, file: File) -> Result<Digest, InputError> {
    Ok(hash_file_with(tree, file, Options::default())?.digest)
}

/// [`hash_file`] with options.
pub fn hash_file_with(
    tree: &TreeParams,
    mut file: File,
    options: Options<'_>,
) -> Result<Hashed, InputError> {
    let start = file.stream_position().unwrap_or(0);
    hash_open_file(tree, file, start, options)
}

/// Hashes an open file from `start` (its current offset) to its end.
fn hash_open_file(
    tree: &TreeParams,
    mut file: File,
    start: u64,
    options: Options<'_>,
) -> Result<Hashed, InputError> {
    let before = file.metadata()?;
    if before.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR).into());
    }
    if !before.is_file() {
        return hash_stream(tree, &mut file, &[], options);
    }
    let length = before.len().saturating_sub(start);
    let mapped = if length >= MAP_MIN {
        let span = Span {
            start,
            end: before.len(),
            leaves: 0..tree.leaf_count(length),
        };
        hash_mapped(tree, &file, &before, &span, options)?
    } else {
        None
    };
    let hashed = match mapped {
        Some((digest, leaves)) => Hashed {
            digest,
            length,
            leaves,
        },
        None if length < MAP_MIN => hash_small(tree, &mut file, length, options)?,
        // The file cannot be mapped (some special file systems): read it.
        None => hash_stream(tree, &mut file, &[], options)?,
    };
    unchanged(&file, &before)?;
    Ok(hashed)
}

thread_local! {
    /// The buffer small files are read into, kept for the next small file.
    static SMALL_FILE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Reads a small regular file whole into a reused buffer and hashes it in one
/// go: the fewest system calls and no allocation per file, which is what
/// matters when hashing thousands of small files. A file longer than it said
/// (a `/proc` file whose size reads 0) is streamed past [`MAP_MIN`] bytes,
/// and a file that grew is caught by the caller's `fstat` comparison.
fn hash_small(
    tree: &TreeParams,
    file: &mut File,
    expected: u64,
    options: Options<'_>,
) -> Result<Hashed, InputError> {
    // Taken out of the thread-local, not borrowed: hashing may run other
    // pool work on this thread, which may hash a small file too.
    let mut buffer = SMALL_FILE.take();
    buffer.clear();
    // Room for the whole file and the read that finds its end. (Through
    // `take`, because `File::read_to_end` would ask the size and offset
    // again: two more system calls per file.)
    buffer.reserve(expected as usize + 1);
    let length = Read::by_ref(file).take(MAP_MIN).read_to_end(&mut buffer)? as u64;
    if length == MAP_MIN {
        // More may follow: the general way, from the bytes read so far.
        let hashed = hash_stream(tree, file, &buffer, options);
        SMALL_FILE.set(buffer);
        return hashed;
    }
    if let Some(progress) = options.progress {
        progress.fetch_add(length, Ordering::Relaxed);
    }
    let log = options
        .keep_leaves
        .then(|| LeafLog::new(tree.digest_size(), 0));
    let (digest, leaves) = hash_keeping_leaves(tree, &buffer, log);
    SMALL_FILE.set(buffer);
    Ok(Hashed {
        digest,
        length,
        leaves,
    })
}

/// The leaf digests of part of a file: what `--leaf-range` prints.
pub struct LeafRange {
    /// The file's whole length.
    pub length: u64,
    /// The digests of the leaves in the range (cut to the file's end).
    pub leaves: LeafLog,
}

/// Hashes leaves `leaves.start` to `leaves.end - 1` of a regular file from
/// its current offset, reading only their bytes; the last-node flag goes to
/// the file's final leaf. A range past the end is cut to the end; a range that holds no leaf,
/// or a file that is not a regular file, is an error.
pub fn hash_leaf_range(
    tree: &TreeParams,
    file: &File,
    leaves: Range<u64>,
    progress: Option<&AtomicU64>,
) -> Result<LeafRange, InputError> {
    let before = file.metadata()?;
    if before.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR).into());
    }
    if !before.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a leaf range needs a regular file (one that can be read at any offset)",
        )
        .into());
    }
    let start = {
        let mut file = file;
        file.stream_position()?
    };
    let length = before.len().saturating_sub(start);
    let count = tree.leaf_count(length);
    let requested = leaves.clone();
    let leaves = leaves.start..leaves.end.min(count);
    if leaves.is_empty() {
        let end = match requested.end {
            u64::MAX => String::new(),
            end => end.to_string(),
        };
        let message = format!(
            "leaf range {}..{end} holds no leaf: the file has {count} leaves (0..{count})",
            requested.start
        );
        return Err(io::Error::new(io::ErrorKind::InvalidInput, message).into());
    }
    let span = Span {
        start,
        end: before.len(),
        leaves: leaves.clone(),
    };
    let options = Options {
        keep_leaves: true,
        progress,
    };
    let Some((_, Some(log))) = hash_mapped(tree, file, &before, &span, options)? else {
        return Err(
            io::Error::new(io::ErrorKind::InvalidInput, "the file cannot be mapped").into(),
        );
    };
    unchanged(file, &before)?;
    Ok(LeafRange {
        length,
        leaves: log,
    })
}

/// Fails with [`InputError::Changed`] if the file's size or modification time
/// is no longer what it was.
fn unchanged(file: &File, before: &Metadata) -> Result<(), InputError> {
    let now = file.metadata()?;
    if now.len() != before.len()
        || now.mtime() != before.mtime()
        || now.mtime_nsec() != before.mtime_nsec()
    {
        return Err(InputError::Changed);
    }
    Ok(())
}

fn hash_stream(
    tree: &TreeParams,
    file: &mut File,
    already_read: &[u8],
    options: Options<'_>,
) -> Result<Hashed, InputError> {
    widen_pipe(file);
    let mut hasher = TreeHasher::new(tree);
    if options.keep_leaves {
        hasher.keep_leaves();
    }
    hasher.write_all(already_read)?;
    if let Some(progress) = options.progress {
        progress.fetch_add(already_read.len() as u64, Ordering::Relaxed);
    }
    let rest = match options.progress {
        Some(progress) => hasher.update_reader(&mut Counting {
            inner: file,
            progress,
        })?,
        None => hasher.update_reader(file)?,
    };
    let (digest, leaves) = hasher.finalize_with_leaves()?;
    Ok(Hashed {
        digest,
        length: already_read.len() as u64 + rest,
        leaves,
    })
}

/// The pipe buffer asked for: Linux's default limit for unprivileged users
/// (`/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: libc::c_int = 1 << 20;

/// Asks for a bigger buffer on a pipe or FIFO (64 KiB by default), so that
/// the writer and bt2sum wake each other 16 times less often. Best effort:
/// refused or not a pipe, nothing changes.
fn widen_pipe(file: &File) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileTypeExt;
    if file.metadata().is_ok_and(|meta| meta.file_type().is_fifo()) {
        // SAFETY: F_SETPIPE_SZ takes an int and only resizes the pipe's
        // buffer; the descriptor is valid for the life of `file`.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
    }
}

/// A reader that adds what it reads to a progress counter.
struct Counting<'a, R> {
    inner: R,
    progress: &'a AtomicU64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buf)?;
        self.progress.fetch_add(count as u64, Ordering::Relaxed);
        Ok(count)
    }
}

/// A mapped window of the file, registered with the SIGBUS guard.
struct Window {
    // Field order matters: the registration is dropped (unregistered)
    // before the mapping is unmapped.
    guard: sigbus::Registration,
    map: Mmap,
}

impl AsRef<[u8]> for Window {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

/// A window's pages are given back as soon as each task of the pool has
/// hashed its part: the resident set then stays at the leaves being hashed
/// (a SIMD group per thread), however large the windows.
impl LeafBytes for Window {
    fn release(&self, range: Range<usize>) {
        let page = page_size();
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

/// The size of a memory page.
fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| {
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    })
}

impl Window {
    /// Maps `len` bytes at `offset`; `None` if the file cannot be mapped.
    fn map(file: &File, offset: u64, len: u64) -> Option<Window> {
        // SAFETY: the mapping is shared and read-only. The
        // one way another process can break Rust's rules through it is to
        // shrink the file, which would raise SIGBUS on access: the window is
        // registered with the SIGBUS guard before any access, and a window
        // that faulted is reported as a changed file, never hashed into a
        // printed digest. Concurrent writes through other descriptors can
        // change the bytes we read, which the fstat comparison reports.
        let map = unsafe {
            MmapOptions::new()
                .offset(offset)
                .len(len as usize)
                .map(file)
        }
        .ok()?;
        let guard = sigbus::Registration::new(map.as_ptr(), map.len())?;
        let _ = map.advise(memmap2::Advice::Sequential);
        Some(Window { guard, map })
    }

    /// The window's bytes were all readable. A page that faulted means the
    /// file shrank (a change) or, if the file looks as it did, that the page
    /// could not be read (an I/O error).
    fn check(&self, file: &File, before: &Metadata) -> Result<(), InputError> {
        if !self.guard.faulted() {
            return Ok(());
        }
        unchanged(file, before)?;
        Err(io::Error::from_raw_os_error(libc::EIO).into())
    }
}

/// The part of a regular file to hash: its leaves numbered from `start`
/// (the offset hashing began at), and `end`, the file's length.
struct Span {
    start: u64,
    end: u64,
    leaves: Range<u64>,
}

impl Span {
    /// The bytes of leaf `index`.
    fn leaf_bytes(&self, tree: &TreeParams, index: u64) -> Range<u64> {
        let first = self.start + index * tree.leaf_size();
        first..self.end.min(first + tree.leaf_size())
    }

    /// Whether the span's last leaf is the file's final leaf.
    fn reaches_end(&self, tree: &TreeParams) -> bool {
        self.leaf_bytes(tree, self.leaves.end - 1).end == self.end
    }
}

/// Hashes the span's leaves through mappings, returning the root digest (of
/// those leaves) and the leaf log if asked for; `Ok(None)` when mapping is
/// refused and the caller should read instead. After each window the file is
/// looked at again, so that a change stops the work early.
fn hash_mapped(
    tree: &TreeParams,
    file: &File,
    before: &Metadata,
    span: &Span,
    options: Options<'_>,
) -> Result<Option<(Digest, Option<LeafLog>)>, InputError> {
    let Range {
        start: first,
        end: last,
    } = span.leaves.clone();
    if last > 0 {
        tree.check_leaf_index(last - 1)?;
    }
    // Two windows in flight, so that the pool never waits at a window's end
    // for its slowest task: two windows (80 MiB) are resident at most, as the
    // next one is mapped but not yet touched.
    let mut pipeline: Pipeline<Window> = Pipeline::new(tree, 2, Spread::AllThreads);
    if options.keep_leaves {
        pipeline.keep_leaves(first);
    }
    let count_progress = |bytes: u64| {
        if let Some(progress) = options.progress {
            progress.fetch_add(bytes, Ordering::Relaxed);
        }
    };
    if tree.has_big_leaves() {
        // Leaves too big to map whole: a round hashes one leaf per thread,
        // each mapping its leaf a piece at a time.
        let file_leaves = tree.leaf_count(span.end - span.start);
        let threads = rayon::current_num_threads() as u64;
        for round in (first..last).step_by(threads as usize) {
            let digests: Vec<Result<Option<Digest>, InputError>> = (round
                ..last.min(round + threads))
                .into_par_iter()
                .map(|index| {
                    let last_node = if index + 1 == file_leaves {
                        LastNode::Yes
                    } else {
                        LastNode::No
                    };
                    let bytes = span.leaf_bytes(tree, index);
                    hash_mapped_leaf(tree, file, index, bytes, last_node, before, &count_progress)
                })
                .collect();
            unchanged(file, before)?;
            for digest in digests {
                match digest? {
                    Some(digest) => pipeline.feed(digest.as_bytes()),
                    None => return Ok(None),
                }
            }
        }
        return Ok(Some(pipeline.finish()));
    }

    let batch = tree.window_leaves() as u64;
    let mut window_first = first;
    while window_first < last {
        let window_last = last.min(window_first + batch);
        let bytes =
            span.leaf_bytes(tree, window_first).start..span.leaf_bytes(tree, window_last - 1).end;
        let Some(window) = Window::map(file, bytes.start, bytes.end - bytes.start) else {
            return Ok(None);
        };
        if pipeline.is_full()
            && let Some(done) = pipeline.wait()
        {
            done.check(file, before)?;
            unchanged(file, before)?;
            count_progress(done.map.len() as u64);
        }
        let end_of_input = if window_last == last && span.reaches_end(tree) {
            EndOfInput::Yes
        } else {
            EndOfInput::No
        };
        pipeline.submit(window, window_first, end_of_input);
        window_first = window_last;
    }
    while let Some(done) = pipeline.wait() {
        done.check(file, before)?;
        count_progress(done.map.len() as u64);
    }
    Ok(Some(pipeline.finish()))
}

/// Hashes one big leaf a mapped piece at a time.
fn hash_mapped_leaf(
    tree: &TreeParams,
    file: &File,
    index: u64,
    bytes: Range<u64>,
    last: LastNode,
    before: &Metadata,
    count_progress: &(impl Fn(u64) + Sync),
) -> Result<Option<Digest>, InputError> {
    let mut leaf = LeafState::new(tree, index);
    let mut offset = bytes.start;
    while offset < bytes.end {
        let piece_len = PIECE.min(bytes.end - offset);
        let Some(piece) = Window::map(file, offset, piece_len) else {
            return Ok(None);
        };
        leaf.update(piece.as_ref());
        piece.check(file, before)?;
        count_progress(piece_len);
        offset += piece_len;
    }
    Ok(Some(leaf.finalize(last)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_cut_short_faults_instead_of_killing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinking");
        std::fs::write(&path, vec![7u8; 2 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        let before = file.metadata().unwrap();
        let window = Window::map(&file, 0, 2 << 20).expect("mappable");
        assert!(window.check(&file, &before).is_ok());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Every page past the new end raises SIGBUS; the guard answers each
        // with a zero page, so the bytes read there are zeroes.
        let sum: u64 = window.as_ref().iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 7 * 4096);
        assert!(matches!(
            window.check(&file, &before),
            Err(InputError::Changed)
        ));
    }

    #[test]
    fn a_fault_elsewhere_is_not_swallowed() {
        // A window that is registered but not touched past the end stays clean.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steady");
        std::fs::write(&path, vec![1u8; 1 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        let window = Window::map(&file, 4096, (1 << 20) - 4096).expect("mappable");
        assert_eq!(window.as_ref().len(), (1 << 20) - 4096);
        assert!(window.as_ref().iter().all(|&b| b == 1));
        assert!(window.check(&file, &file.metadata().unwrap()).is_ok());
    }

    #[test]
    fn a_small_file_longer_than_it_said_is_streamed_whole() {
        // Like a /proc file whose size reads 0: more than the small-file
        // limit follows what the size promised.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let data: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let tree = TreeParams::default();
        let mut file = File::open(&path).unwrap();
        let hashed = hash_small(&tree, &mut file, 100, Options::default()).unwrap();
        assert_eq!(hashed.length, 3 << 20);
        assert_eq!(hashed.digest, crate::tree::hash(&tree, &data));
    }

    #[test]
    fn plain_messages_drop_the_os_error_suffix() {
        let error = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(plain_message(&error), "No such file or directory");
        let custom = io::Error::other("file changed (os error 5) oddly");
        assert_eq!(plain_message(&custom), "file changed (os error 5) oddly");
    }
}
