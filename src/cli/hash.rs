//! The hashing driver: one checksum line per input, in argument order, errors
//! reported per input and counted rather than fatal.
//!
//! Inputs are hashed several at a time on the pool (a run of many small files
//! is bound by per-file work, which then spreads over the cores), in groups
//! whose lines are written in argument order as each group completes.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::prelude::*;

use super::{EXIT_FAILURE, EXIT_OK, Plan, output_failed, report};
use crate::check::{Style, push_line};
use crate::input::{InputError, hash_path, hash_stdin};
use crate::tree::{Digest, TreeParams};

/// Inputs hashed concurrently before their lines are written.
const GROUP: usize = 64;

/// Hashes one input named on the command line (`-` is standard input).
pub fn hash_named(tree: &TreeParams, name: &OsStr) -> Result<Digest, InputError> {
    if name == "-" {
        hash_stdin(tree)
    } else {
        hash_path(tree, Path::new(name))
    }
}

/// Hashes every input of the plan, writing lines to `out`; returns the exit
/// status.
pub fn run(plan: &Plan, mut out: impl Write) -> u8 {
    let style = if plan.args.untagged {
        Style::Untagged
    } else {
        Style::Tagged
    };
    let stdin_only = [OsString::from("-")];
    let (names, named) = if plan.args.files.is_empty() {
        (&stdin_only[..], false)
    } else {
        (&plan.args.files[..], true)
    };
    let mut status = EXIT_OK;
    let mut lines = Vec::new();
    for group in names.chunks(GROUP) {
        let results: Vec<_> = if group.len() == 1 {
            vec![hash_named(&plan.tree, &group[0])]
        } else {
            group
                .par_iter()
                .map(|name| hash_named(&plan.tree, name))
                .collect()
        };
        for (name, result) in group.iter().zip(results) {
            match result {
                Ok(digest) => {
                    let shown = named.then_some(name.as_bytes());
                    push_line(&mut lines, style, plan.tree.algorithm(), &digest, shown);
                }
                Err(error) => {
                    // Lines before the error go out first, so that stdout and
                    // stderr stay in order when both go to one place.
                    if let Err(error) = out.write_all(&lines).and_then(|()| out.flush()) {
                        return status.max(output_failed(&error));
                    }
                    lines.clear();
                    report(name, &error.to_string());
                    status = EXIT_FAILURE;
                }
            }
        }
        if let Err(error) = out.write_all(&lines) {
            return status.max(output_failed(&error));
        }
        lines.clear();
    }
    match out.flush() {
        Ok(()) => status,
        Err(error) => status.max(output_failed(&error)),
    }
}
