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
//! [`sigbus`]), makes the result [`InputError::Changed`] instead of a digest.

mod sigbus;

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Seek};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};
use rayon::prelude::*;

use crate::tree::{Digest, EndOfInput, LastNode, LeafState, Pipeline, TreeHasher, TreeParams};

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

/// Hashes the file at `path` (or whatever it names: a FIFO, a device, …).
pub fn hash_path(tree: &TreeParams, path: &Path) -> Result<Digest, InputError> {
    let file = File::open(path)?;
    hash_file(tree, file)
}

/// Hashes standard input to its end.
pub fn hash_stdin(tree: &TreeParams) -> Result<Digest, InputError> {
    // A duplicate of descriptor 0 shares its offset, so `bt2sum < FILE` after
    // a partial read by a parent shell hashes from where the shell left off.
    let file = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    hash_file(tree, file)
}

/// Hashes an open file of any kind from its current offset to its end.
pub fn hash_file(tree: &TreeParams, mut file: File) -> Result<Digest, InputError> {
    let before = file.metadata()?;
    if before.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR).into());
    }
    if !before.is_file() {
        return hash_stream(tree, &mut file);
    }
    let start = file.stream_position()?;
    let end = before.len();
    let digest = match (end.saturating_sub(start) >= MAP_MIN)
        .then(|| hash_mapped(tree, &file, &before, start))
    {
        Some(Ok(Some(digest))) => digest,
        Some(Err(error)) => return Err(error),
        // Not worth mapping, or the file cannot be mapped (some special
        // file systems): read it.
        Some(Ok(None)) | None => hash_stream(tree, &mut file)?,
    };
    unchanged(&file, &before)?;
    Ok(digest)
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

fn hash_stream(tree: &TreeParams, file: &mut File) -> Result<Digest, InputError> {
    let mut hasher = TreeHasher::new(tree);
    hasher.update_reader(file)?;
    Ok(hasher.finalize()?)
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

impl Window {
    /// Maps `len` bytes at `offset`; `None` if the file cannot be mapped.
    fn map(file: &File, offset: u64, len: u64) -> Option<Window> {
        // SAFETY: the mapping is read-only and private to this process. The
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

    /// The window's bytes were all in the file.
    fn check(&self) -> Result<(), InputError> {
        if self.guard.faulted() {
            Err(InputError::Changed)
        } else {
            Ok(())
        }
    }
}

/// Hashes a regular file from `start` to the end `before` gives through
/// mappings; `Ok(None)` when mapping is refused and the caller should read
/// instead. After each window the file is looked at again, so that a change
/// stops the work early.
fn hash_mapped(
    tree: &TreeParams,
    file: &File,
    before: &Metadata,
    start: u64,
) -> Result<Option<Digest>, InputError> {
    let end = before.len();
    let len = end - start;
    let leaves = tree.leaf_count(len);
    tree.check_leaf_index(leaves.saturating_sub(1))?;
    let mut pipeline: Pipeline<Window> = Pipeline::new(tree);
    if tree.has_big_leaves() {
        // Leaves too big to map whole: a round hashes one leaf per thread,
        // each mapping its leaf a piece at a time.
        let threads = rayon::current_num_threads() as u64;
        for round in (0..leaves).step_by(threads as usize) {
            let digests: Vec<Result<Option<Digest>, InputError>> = (round
                ..leaves.min(round + threads))
                .into_par_iter()
                .map(|index| {
                    let leaf_start = start + index * tree.leaf_size();
                    let leaf_end = end.min(leaf_start + tree.leaf_size());
                    let last = if index + 1 == leaves {
                        LastNode::Yes
                    } else {
                        LastNode::No
                    };
                    hash_mapped_leaf(tree, file, index, leaf_start, leaf_end, last)
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

    let window_bytes = tree.batch_leaves() as u64 * tree.leaf_size();
    let mut offset = start;
    let mut first_leaf = 0;
    while offset < end {
        let window_len = window_bytes.min(end - offset);
        let Some(window) = Window::map(file, offset, window_len) else {
            return Ok(None);
        };
        if let Some(done) = pipeline.wait() {
            done.check()?;
            unchanged(file, before)?;
        }
        offset += window_len;
        let end_of_input = if offset == end {
            EndOfInput::Yes
        } else {
            EndOfInput::No
        };
        pipeline.submit(window, first_leaf, end_of_input);
        first_leaf += tree.leaf_count(window_len);
    }
    if let Some(done) = pipeline.wait() {
        done.check()?;
    }
    Ok(Some(pipeline.finish()))
}

/// Hashes one big leaf `[leaf_start, leaf_end)` a mapped piece at a time.
fn hash_mapped_leaf(
    tree: &TreeParams,
    file: &File,
    index: u64,
    leaf_start: u64,
    leaf_end: u64,
    last: LastNode,
) -> Result<Option<Digest>, InputError> {
    let mut leaf = LeafState::new(tree, index);
    let mut offset = leaf_start;
    while offset < leaf_end {
        let piece_len = PIECE.min(leaf_end - offset);
        let Some(piece) = Window::map(file, offset, piece_len) else {
            return Ok(None);
        };
        leaf.update(piece.as_ref());
        piece.check()?;
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
        let window = Window::map(&file, 0, 2 << 20).expect("mappable");
        assert!(window.check().is_ok());
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
        assert!(matches!(window.check(), Err(InputError::Changed)));
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
        assert!(window.check().is_ok());
    }

    #[test]
    fn plain_messages_drop_the_os_error_suffix() {
        let error = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(plain_message(&error), "No such file or directory");
        let custom = io::Error::other("file changed (os error 5) oddly");
        assert_eq!(plain_message(&custom), "file changed (os error 5) oddly");
    }
}
