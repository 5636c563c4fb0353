//! The hashing driver: one checksum line per input, in argument order, errors
//! reported per input and counted rather than fatal; with `--leaves`, the
//! input's leaf lines after its checksum line, and with `--leaf-range`, only
//! the leaf lines of the range.
//!
//! Inputs are hashed several at a time on the pool (a run of many small files
//! is bound by per-file work, which then spreads over the cores), in groups
//! whose lines are written in argument order as each group completes.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::prelude::*;

use super::progress::{Mode, Progress};
use super::{EXIT_FAILURE, EXIT_OK, Plan, output_failed, report, walk};
use crate::check::{Style, push_line};
use crate::input::{
    Hashed, InputError, Options, hash_leaf_range, hash_path_with, hash_paths_with, hash_stdin_with,
};
use crate::leaves::{LeafLog, push_leaf_line, push_no_leaves_line};
use crate::tree::TreeParams;

/// Inputs hashed concurrently before their lines are written.
const GROUP: usize = 64;

/// Named inputs one task hashes: small files among them share SIMD lanes (8,
/// a multiple of BLAKE2b's 4 and BLAKE2s's 8 lanes).
const LANES: usize = 8;

/// What hashing one input gave: its checksum, or only leaves of a range.
enum Outcome {
    Whole(Hashed),
    Range { length: u64, leaves: LeafLog },
}

/// Hashes one input named on the command line (`-` is standard input).
fn hash_named(plan: &Plan, name: &OsStr, options: Options<'_>) -> Result<Outcome, InputError> {
    let tree = &plan.tree;
    if let Some(range) = &plan.args.leaf_range {
        let file = if name == "-" {
            File::from(io::stdin().as_fd().try_clone_to_owned()?)
        } else {
            File::open(Path::new(name))?
        };
        let range = hash_leaf_range(tree, &file, range.clone(), options.progress)?;
        return Ok(Outcome::Range {
            length: range.length,
            leaves: range.leaves,
        });
    }
    let hashed = if name == "-" {
        hash_stdin_with(tree, options)?
    } else {
        hash_path_with(tree, Path::new(name), options)?
    };
    Ok(Outcome::Whole(hashed))
}

/// Hashes a group of inputs on the pool, a few at a time: named files go
/// through [`hash_paths_with`], which hashes the small ones side by side in
/// the SIMD lanes.
fn hash_group(
    plan: &Plan,
    group: &[OsString],
    options: Options<'_>,
) -> Vec<Result<Outcome, InputError>> {
    if group.iter().any(|name| name == "-") {
        // Standard input is one stream: each `-` must read it in turn.
        return group
            .iter()
            .map(|name| hash_named(plan, name, options))
            .collect();
    }
    if plan.args.leaf_range.is_some() {
        return group
            .par_iter()
            .map(|name| hash_named(plan, name, options))
            .collect();
    }
    group
        .par_chunks(LANES)
        .flat_map_iter(|names| {
            let paths: Vec<&Path> = names.iter().map(Path::new).collect();
            hash_paths_with(&plan.tree, &paths, options)
                .into_iter()
                .map(|result| result.map(Outcome::Whole))
        })
        .collect()
}

/// Hashes every input of the plan, writing lines to `out`; returns the exit
/// status.
pub fn run(plan: &Plan, mut out: impl Write) -> u8 {
    let style = if plan.args.untagged {
        Style::Untagged
    } else {
        Style::Tagged
    };
    let mut status = EXIT_OK;
    let stdin_only = [OsString::from("-")];
    let walked;
    let (names, named) = if plan.args.recursive {
        let walk = walk::expand(&plan.args.files, plan.args.dereference);
        if walk.errors > 0 {
            status = EXIT_FAILURE;
        }
        walked = walk.files;
        (&walked[..], true)
    } else if plan.args.files.is_empty() {
        (&stdin_only[..], false)
    } else {
        (&plan.args.files[..], true)
    };
    let progress = Progress::start(Mode::of(&plan.args), || total_bytes(plan, names));
    let options = Options {
        keep_leaves: plan.args.leaves,
        progress: progress.counter(),
    };
    let mut lines = Vec::new();
    for group in names.chunks(GROUP) {
        let results = hash_group(plan, group, options);
        for (name, result) in group.iter().zip(results) {
            let written = match result {
                Ok(outcome) => {
                    let shown = named.then_some(name.as_bytes());
                    write_outcome(&mut out, &mut lines, plan, style, shown, outcome)
                }
                Err(error) => {
                    // Lines before the error go out first, so that stdout and
                    // stderr stay in order when both go to one place.
                    let flushed = out.flush();
                    report(name, &error.to_string());
                    status = EXIT_FAILURE;
                    flushed
                }
            };
            if let Err(error) = written {
                return status.max(output_failed(&error));
            }
        }
    }
    match out.flush() {
        Ok(()) => status,
        Err(error) => status.max(output_failed(&error)),
    }
}

/// The bytes the run will hash, for the progress bar: the sizes of the
/// regular files (only the range's part with `--leaf-range`); `None` if an
/// input is not a regular file (a pipe, a FIFO, a device), whose size cannot
/// be known. Inputs that cannot be examined count 0: they fail anyway.
fn total_bytes(plan: &Plan, names: &[OsString]) -> Option<u64> {
    let mut total = 0u64;
    for name in names {
        let metadata = if name == "-" {
            io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map(File::from)
                .and_then(|stdin| stdin.metadata())
        } else {
            std::fs::metadata(name)
        };
        let length = match metadata {
            Ok(metadata) if metadata.is_file() => metadata.len(),
            Ok(metadata) if metadata.is_dir() => 0,
            Ok(_) => return None,
            Err(_) => 0,
        };
        let hashed = match &plan.args.leaf_range {
            Some(range) => {
                let offset = |leaf: u64| leaf.saturating_mul(plan.tree.leaf_size()).min(length);
                offset(range.end) - offset(range.start)
            }
            None => length,
        };
        total = total.saturating_add(hashed);
    }
    Some(total)
}

/// Writes an input's checksum line and, when listed, its leaf lines.
fn write_outcome(
    out: &mut impl Write,
    lines: &mut Vec<u8>,
    plan: &Plan,
    style: Style,
    shown: Option<&[u8]>,
    outcome: Outcome,
) -> io::Result<()> {
    let tree = &plan.tree;
    lines.clear();
    let (length, leaves) = match outcome {
        Outcome::Whole(hashed) => {
            push_line(lines, style, tree.algorithm(), &hashed.digest, shown);
            (hashed.length, hashed.leaves)
        }
        Outcome::Range { length, leaves } => (length, Some(leaves)),
    };
    if let Some(leaves) = leaves {
        write_leaves(out, lines, tree, shown.unwrap_or(b"-"), length, leaves)?;
    }
    out.write_all(lines)
}

/// Appends the leaf lines of one input, writing out as the buffer fills.
fn write_leaves(
    out: &mut impl Write,
    lines: &mut Vec<u8>,
    tree: &TreeParams,
    name: &[u8],
    length: u64,
    leaves: LeafLog,
) -> io::Result<()> {
    if length == 0 {
        push_no_leaves_line(lines, tree, name);
        return Ok(());
    }
    leaves.for_each(|index, digest| {
        push_leaf_line(lines, tree, name, length, index, digest);
        if lines.len() >= 1 << 20 {
            out.write_all(lines)?;
            lines.clear();
        }
        Ok(())
    })
}
