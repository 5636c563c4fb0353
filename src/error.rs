//! [`Error`]: why an input has no digest.

use std::io;
use std::ops::Range;

use crate::params::Algorithm;

/// Why an input could not be hashed. (Its `Display` is the message the
/// command prints after `bt2sum: NAME: `.)
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Opening or reading the input failed.
    #[error("{}", plain_message(.0))]
    Io(#[from] io::Error),
    /// The file changed while it was hashed (its size, modification or
    /// change time, or which file it is), or a mapped page of it vanished
    /// (the file shrank).
    #[error("file changed while being read")]
    Changed,
    /// The input has more leaves than the algorithm's node offset can
    /// number (BLAKE2s: 2^48; only with tiny leaves on huge inputs).
    #[error(
        "input too long: {} numbers at most {} leaves; use a larger leaf size",
        .0.name(),
        .0.max_leaves()
    )]
    TooManyLeaves(Algorithm),
    /// A leaf range or count was asked of an input that cannot be read at
    /// any offset (a pipe, a FIFO, a device).
    #[error("a leaf range or count needs a regular file (one that can be read at any offset)")]
    NotRegularFile,
    /// An input said to hold only some leaves' bytes of a longer file (a
    /// ranged download: see `Job::excerpt_of`) holds another number of
    /// bytes. No leaf of it is reported.
    #[error(
        "the input holds {}{found} bytes, but leaves {}..{} of a {total}-byte file are \
         {expected} bytes",
        if *more { "more than " } else { "" },
        leaves.start,
        leaves.end
    )]
    ExcerptLength {
        /// The leaves it was to hold (cut at the file's last leaf).
        leaves: Range<u64>,
        /// The length of the file they are leaves of.
        total: u64,
        /// The bytes of those leaves.
        expected: u64,
        /// The bytes it holds, or held when bt2sum stopped reading.
        found: u64,
        /// Whether it held more than `found` bytes, uncounted.
        more: bool,
    },
    /// A name that lines cannot print: on Windows, one that is not valid
    /// Unicode (see `format::name::Name::of_path`).
    #[error("the name is not valid Unicode, so it cannot be printed")]
    NotUnicode,
    /// A regular file ended before the size the system gave for it, and
    /// read again, still did, while nothing else about it changed: a file
    /// system that misreports sizes or answers reads short. Hashing the
    /// bytes read would give a digest of less than the file.
    #[error("the file ended after {held} of the {size} bytes its size says")]
    EndedEarly {
        /// The bytes it held.
        held: u64,
        /// The size the system gave.
        size: u64,
    },
}

/// The system's message for an error, without Rust's ` (os error N)` suffix:
/// `No such file or directory`, as other command-line tools print it.
pub fn plain_message(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(cut) if error.raw_os_error().is_some() => text[..cut].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages_drop_the_os_error_suffix() {
        // 2: ENOENT on Unix, ERROR_FILE_NOT_FOUND on Windows.
        let error = io::Error::from_raw_os_error(2);
        let full = error.to_string();
        assert_eq!(
            Some(plain_message(&error).as_str()),
            full.strip_suffix(" (os error 2)")
        );
        #[cfg(unix)]
        assert_eq!(plain_message(&error), "No such file or directory");
        let custom = io::Error::other("file changed (os error 5) oddly");
        assert_eq!(plain_message(&custom), "file changed (os error 5) oddly");
    }
}
