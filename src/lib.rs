//! BLAKE2 tree hashing in "unlimited fanout" mode, as used by s3git, and the
//! pieces of the `bt2sum` command built on it.
//!
//! The input is cut into leaves of `leaf_size` bytes (5 MiB by default), each
//! leaf is hashed as a depth-0 node of a BLAKE2 tree, and the root (depth 1)
//! hashes the leaf digests in order. See [`tree`] for the exact parameters.
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
//! Files (and anything that can be opened: FIFOs, devices) are hashed by
//! name; regular files are mapped a window at a time:
//!
//! ```
//! use std::io::Write;
//! use bt2sum::{TreeParams, ct, hash, hash_path};
//!
//! let mut file = tempfile::NamedTempFile::new()?;
//! file.write_all(b"hello s3git\n")?;
//! let tree = TreeParams::default();
//! let digest = hash_path(&tree, file.path())?;
//! // Compare digests in constant time.
//! assert!(ct::eq(digest.as_bytes(), hash(&tree, b"hello s3git\n").as_bytes()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Leaves are hashed on the current rayon pool; [`TreeHasher`] takes input in
//! pieces with bounded memory, [`input`] hashes files and standard input, and
//! [`ct`] compares digests in constant time.

#![warn(missing_docs)]

pub mod check;
pub mod cli;
pub mod ct;
pub mod input;
pub mod leaves;
pub mod tree;

pub use input::{InputError, hash_file, hash_path, hash_stdin};
pub use leaves::LeafLog;
pub use tree::{Algorithm, Digest, ParamsError, TreeHasher, TreeParams, hash};
