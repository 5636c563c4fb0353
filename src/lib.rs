//! BLAKE2 tree hashing in "unlimited fanout" mode, as used by s3git: the
//! library behind the `bt2sum` command.
//!
//! The input is cut into leaves of `leaf_size` bytes (5 MiB by default), each
//! leaf is hashed as a depth-0 node of a BLAKE2 tree, and the root (depth 1)
//! hashes the leaf digests in order. See [`TreeParams`] for the exact
//! parameters.
//!
//! ```
//! use bt2sum::{hash, Algorithm, TreeParams};
//!
//! let digest = hash(&TreeParams::default(), b"hello s3git\n");
//! assert_eq!(
//!     digest.to_hex(),
//!     "18e622875a89cede0d7019b2c8afecf8928c21eac18ec51e38a8e6b829b82c3e\
//!      f306dec34227929fa77b1c7c329b3d4e50ed9e72dc4dc885be0932d3f28d7053"
//! );
//!
//! // 40-byte digests, as `bt2sum -s 40` prints them.
//! let params = TreeParams::new(Algorithm::Blake2b, 40, 5 << 20)?;
//! assert!(hash(&params, b"hello s3git\n").to_hex().starts_with("919f330a1b4a3a02"));
//! # Ok::<(), bt2sum::ParamsError>(())
//! ```
//!
//! - [`hash`] hashes a byte slice, [`TreeHasher`] a stream written or read
//!   in pieces with bounded memory, [`hash_reader`] a reader, and
//!   [`hash_path`], [`hash_file`] and [`hash_stdin`] files of any kind
//!   (mapping a regular file installs a SIGBUS handler once per process, so
//!   that a file cut short while it is hashed is reported, not fatal).
//! - [`Digest`]s compare in constant time, with [`ct::eq`], the hand-written
//!   comparator of [`ct`].
//! - [`hash_each`] hashes many files at once, reporting them in order.
//! - With the `digest` feature, [`TreeHasher`] implements the RustCrypto
//!   `digest` 0.10 traits (`VariableOutput`), and `DefaultTreeHasher` (the
//!   default parameters) is a `digest::Digest`; where the library would
//!   return an error, they panic.
//! - [`format`](mod@format) reads and writes checksum lines and leaf lines;
//!   [`leaves`] keeps leaf digests and combines partial listings.
//! - [`verify`] checks lists: typed verdicts per listed file, line and
//!   leaf.
//!
//! Leaves are hashed on the current rayon pool (the global one unless the
//! call runs inside [`rayon::ThreadPool::install`]).

#![warn(missing_docs)]

/// (The command's; no API of the library.)
#[doc(hidden)]
pub mod budget;
pub mod ct;
mod digest;
mod engine;
mod error;
pub mod format;
mod input;
pub mod leaves;
mod params;
#[cfg(feature = "digest")]
mod rustcrypto;
#[cfg(test)]
#[path = "../tests/integration/skip.rs"]
mod skip;
pub mod spill;
/// (The command's; no API of the library.)
#[doc(hidden)]
pub mod sys;
pub mod verify;

pub use digest::Digest;
/// The schedule probe (the `schedule-probe` feature), for the tests.
#[cfg(feature = "schedule-probe")]
#[doc(hidden)]
pub use engine::probe as schedule_probe;
pub use engine::{Event, HASH_KERNEL_ENV, Hashed, LeafKernel, LeafSink, TreeHasher, leaf_digest};
pub use error::{Error, plain_message};
/// (The command's; no API of the library.)
#[doc(hidden)]
pub use input::duplicate_stdin;
pub use input::{Job, Outcome, Stamp, hash_each, hash_file, hash_path, hash_reader, hash_stdin};
pub use params::{Algorithm, LastNode, Node, NodeParams, ParamsError, Part, Selection, TreeParams};
#[cfg(feature = "digest")]
pub use rustcrypto::DefaultTreeHasher;

/// The README's Rust example, compiled and run as a doctest (it needs the
/// `digest` feature).
#[cfg(all(doctest, feature = "digest"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

/// Hashes a byte slice in one call, on the current rayon pool (as the
/// crate's example shows).
///
/// # Panics
///
/// If memory for one batch's leaf digests (at most 4 MiB) is refused, as
/// any allocation that cannot return an error does. [`TreeHasher`] returns
/// that as an error instead.
pub fn hash(tree: &TreeParams, data: &[u8]) -> Digest {
    // (No slice has more leaves than a node offset can number.)
    engine::hash_slice(tree, data).expect("a slice's leaves can be numbered")
}
