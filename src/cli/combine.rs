//! `--combine`: reads the leaf lines of partial listings of one file (made by
//! `--leaves`, maybe with `--leaf-range` or `--part`, on many machines) in
//! any order, and prints that file's checksum line, exactly as hashing it
//! whole would. Made with another leaf size than the default, the checksum
//! line is followed by the file's count line, whose `tree=` check mode
//! takes as the checksum line's leaf size: the result verifies with `-c`
//! without `-t`.
//!
//! Every leaf line must be well formed, all must describe one file with one
//! algorithm, digest size, leaf size and length, together they must list
//! every leaf, and a leaf listed twice must have one digest. Checksum lines
//! (the nameless one of standard input too), blank lines and `#` comments
//! are passed over; any other line is
//! improperly formatted. The first problem is reported (`LISTING: LINE: …`,
//! or the first gap) and the exit status is 1. Memory stays bounded: lines
//! are at most 16 MiB, and the leaves are kept as `Combiner` keeps them.

use std::ffi::{OsStr, OsString};
use std::io::Write;

use crate::cli::system;
use bt2sum::format::InputLines;
use bt2sum::format::checksum::{Style, push_line};
use bt2sum::format::leaf::{is_leaf_line, parse_leaf_line};
use bt2sum::format::lines::{MAX_LINE, Record, read_line};
use bt2sum::format::list::{Grammar, ListLine, classify};
use bt2sum::leaves::Combiner;
use bt2sum::{TreeParams, plain_message};

use super::config::Combining;
use super::output::{Status, output_failed, report, warn};

/// Combines the listings (standard input when none is given), writing the
/// checksum line to `out`; returns the exit status.
pub fn run(config: &Combining, out: &mut dyn Write) -> Status {
    let stdin_only = [OsString::from("-")];
    let listings = if config.listings.is_empty() {
        &stdin_only[..]
    } else {
        &config.listings[..]
    };
    let mut combiner = Combiner::default();
    for listing in listings {
        if let Err((place, message)) = add_listing(&mut combiner, listing) {
            report(&place, &message);
            return Status::Failure;
        }
    }
    let combined = match combiner.finish() {
        Ok(combined) => combined,
        Err(error) => {
            warn(&error.to_string());
            return Status::Failure;
        }
    };
    let (tree, name) = (&combined.tree, combined.name.as_deref());
    let mut line = Vec::new();
    push_line(
        &mut line,
        config.style,
        tree.algorithm(),
        &combined.digest,
        name,
        config.ending,
    );
    if tree.leaf_size() != TreeParams::default().leaf_size() {
        // Named as the checksum line names it: an untagged line names
        // nameless standard input `-`.
        let shown = match (config.style, name) {
            (Style::Untagged, None) => Some(&b"-"[..]),
            _ => name,
        };
        let input = InputLines {
            tree,
            name: shown,
            ending: config.ending,
        };
        input.push_count(&mut line, combined.total);
    }
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => Status::Success,
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
    let mut reader = system::open_list(listing).map_err(|error| failed(plain_message(&error)))?;
    let mut line = Vec::new();
    for number in 1.. {
        let at_line = |message: String| {
            let mut place = shown.to_os_string();
            place.push(format!(": {number}"));
            (place, message)
        };
        match read_line(&mut reader, &mut line).map_err(|error| failed(plain_message(&error)))? {
            Record::End => return Ok(()),
            Record::TooLong => {
                return Err(at_line(format!("line longer than {} MiB", MAX_LINE >> 20)));
            }
            Record::Line => {}
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if is_leaf_line(text) {
            let parsed = parse_leaf_line(text).map_err(|error| at_line(error.to_string()))?;
            combiner
                .add(parsed)
                .map_err(|error| at_line(error.to_string()))?;
            continue;
        }
        // A listing made by --leaves holds checksum lines too, the nameless
        // one of standard input included.
        match classify(text, &Grammar::default()) {
            ListLine::Skip
            | ListLine::Checksum(_)
            | ListLine::Nameless { .. }
            | ListLine::Stat(_) => {}
            ListLine::Leaf(_) | ListLine::Improper(_) => {
                return Err(at_line("improperly formatted line".to_string()));
            }
        }
    }
    Ok(())
}
