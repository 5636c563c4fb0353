//! `--combine`: reads the leaf lines of partial listings of one file (made by
//! `--leaves`, maybe with `--leaf-range`, on many machines) in any order, and
//! prints that file's checksum line, exactly as hashing it whole would.
//!
//! Every leaf line must be well formed, all must describe one file with one
//! algorithm, digest size, leaf size and length, together they must list
//! every leaf, and a leaf listed twice must have one digest; otherwise the
//! first problem is reported (`LISTING: LINE: …`, or the first gap) and the
//! exit status is 1. Other lines (checksum lines, comments) are ignored.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;

use super::{EXIT_FAILURE, EXIT_OK, Plan, output_failed, report};
use crate::check::{Style, push_line};
use crate::input::plain_message;
use crate::leaves::{Combiner, is_leaf_line, parse_leaf_line};

/// Combines the listings of the plan (standard input when none is given),
/// writing the checksum line to `out`; returns the exit status.
pub fn run(plan: &Plan, mut out: impl Write) -> u8 {
    let stdin_only = [OsString::from("-")];
    let listings = if plan.args.files.is_empty() {
        &stdin_only[..]
    } else {
        &plan.args.files[..]
    };
    let mut combiner = Combiner::default();
    for listing in listings {
        if let Err((where_, message)) = add_listing(&mut combiner, listing) {
            report(&where_, &message);
            return EXIT_FAILURE;
        }
    }
    let (tree, name, digest) = match combiner.finish() {
        Ok(done) => done,
        Err(message) => {
            eprintln!("bt2sum: {message}");
            return EXIT_FAILURE;
        }
    };
    let style = if plan.args.untagged {
        Style::Untagged
    } else {
        Style::Tagged
    };
    let mut line = Vec::new();
    push_line(&mut line, style, tree.algorithm(), &digest, Some(&name));
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => EXIT_OK,
        Err(error) => output_failed(&error),
    }
}

/// Adds every leaf line of one listing; on failure, where and what.
fn add_listing(combiner: &mut Combiner, listing: &OsStr) -> Result<(), (OsString, String)> {
    let shown = if listing == "-" {
        OsStr::new("standard input")
    } else {
        listing
    };
    let failed = |message: String| (shown.to_os_string(), message);
    let reader: Box<dyn Read> = if listing == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(File::open(listing).map_err(|error| failed(plain_message(&error)))?)
    };
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let count = reader
            .read_until(b'\n', &mut line)
            .map_err(|error| failed(plain_message(&error)))?;
        if count == 0 {
            return Ok(());
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if !is_leaf_line(text) {
            continue;
        }
        let at_line = |message: String| {
            let mut where_ = shown.as_bytes().to_vec();
            where_.extend_from_slice(format!(": {number}").as_bytes());
            (OsStr::from_bytes(&where_).to_os_string(), message)
        };
        let parsed = parse_leaf_line(text).map_err(at_line)?;
        combiner.add(parsed).map_err(at_line)?;
    }
    Ok(())
}
