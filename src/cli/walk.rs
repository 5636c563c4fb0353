//! `--recursive`: turns the command line's arguments into the inputs to
//! hash, every regular file under each directory argument, in the order
//! `find DIR -type f | LC_ALL=C sort` lists them (the walk is the library's,
//! `bt2sum::walk`), as they are walked: the files are hashed and printed
//! while the walk goes on, which holds one directory's names per level of
//! the tree, however many files the tree has.
//!
//! An argument that is not a directory (a file, `-`, a missing name) is
//! passed through as given, to be hashed or reported like any named input;
//! the file standard output writes to is skipped, so that `bt2sum -r >
//! SUMS` does not hash its own, half-written list. An error met in the
//! walk is an input that fails in its place (`bt2sum: PATH: Permission
//! denied`), counted with the others.

use std::ffi::OsString;
use std::sync::Arc;

use bt2sum::binary::system::FileId;
use bt2sum::plain_message;
use bt2sum::walk::{Excludes, Options, Walk, Walked};

use super::files0::Entry;

/// The walk of the arguments of `--recursive` (`.` when there are none).
pub struct Roots {
    roots: Vec<OsString>,
    options: Arc<Options>,
}

impl Roots {
    pub fn new(arguments: &[OsString], follow_links: bool, excludes: Excludes) -> Roots {
        let roots = match arguments.is_empty() {
            true => vec![OsString::from(".")],
            false => arguments.to_vec(),
        };
        let options = Options {
            follow_links,
            skip: FileId::of_stdout().into_iter().collect(),
            excludes,
        };
        Roots {
            roots,
            options: Arc::new(options),
        }
    }

    /// The inputs, as they are walked.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + 'static {
        let walk = Walk::new(self.roots.clone(), Arc::clone(&self.options));
        walk.map(|walked| match walked {
            Walked::File(path) => Entry::Name(path),
            Walked::Error { path, error } => Entry::Bad {
                place: path,
                message: plain_message(&error),
            },
        })
    }

    /// The bytes of the regular files the walk gives (walked once more),
    /// for a progress bar's total.
    pub fn total_bytes(&self) -> u64 {
        self.entries()
            .filter_map(|entry| match entry {
                Entry::Name(path) => std::fs::metadata(path).ok(),
                Entry::Bad { .. } => None,
            })
            .filter(std::fs::Metadata::is_file)
            .fold(0u64, |total, metadata| total.saturating_add(metadata.len()))
    }
}
