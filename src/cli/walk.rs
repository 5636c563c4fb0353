//! `--recursive`: turns the command line's arguments into the list of inputs
//! to hash, every regular file under each directory argument, in the order
//! `find DIR -type f | LC_ALL=C sort` lists them (the walk is the library's,
//! `bt2sum::walk`).
//!
//! An argument that is not a directory (a file, `-`, a missing name) is
//! passed through as given, to be hashed or reported like any named input;
//! the file standard output writes to is skipped, so that `bt2sum -r >
//! SUMS` does not hash its own, half-written list. Errors met in the walk
//! get an error line each (`bt2sum: PATH: Permission denied`) and are
//! counted. The list of files grows only with memory granted: where more is
//! refused (`ulimit -v`), the walk stops with `bt2sum: PATH: Cannot
//! allocate memory` and lists nothing, rather than aborting.

use std::ffi::OsString;

use bt2sum::binary::system::FileId;
use bt2sum::plain_message;
use bt2sum::walk::{Excludes, Options, Walk as Walker, Walked};

use super::output::report;

/// What expanding the arguments gave.
pub struct Walk {
    /// The inputs to hash, in order.
    pub files: Vec<OsString>,
    /// How many error lines the walk wrote.
    pub errors: usize,
}

/// Expands the arguments of `--recursive` (`.` when there are none): each
/// directory becomes the regular files under it, sorted by path bytewise;
/// anything else stays as given.
pub fn expand(arguments: &[OsString], follow_links: bool, excludes: Excludes) -> Walk {
    let roots = if arguments.is_empty() {
        vec![OsString::from(".")]
    } else {
        arguments.to_vec()
    };
    let options = Options {
        follow_links,
        skip: FileId::of_stdout().into_iter().collect(),
        excludes,
    };
    let mut walk = Walk {
        files: Vec::new(),
        errors: 0,
    };
    for walked in Walker::new(roots, &options) {
        match walked {
            Walked::File(path) => {
                if !bt2sum::binary::memory::reserve(&mut walk.files, 1) {
                    // A walk cut short lists no tree; dropped first, so that
                    // the message itself finds memory.
                    walk.files = Vec::new();
                    walk.errors += 1;
                    report(
                        &path,
                        &plain_message(&bt2sum::binary::memory::out_of_memory()),
                    );
                    break;
                }
                walk.files.push(path);
            }
            Walked::Error { path, error } => {
                walk.errors += 1;
                if error.kind() == std::io::ErrorKind::OutOfMemory {
                    walk.files = Vec::new();
                }
                report(&path, &plain_message(&error));
            }
        }
    }
    walk
}
