//! `--combine`: reads the leaf lines of partial listings of one file in any
//! order, and prints that file's checksum line, exactly as hashing it whole
//! would (followed, for another leaf size than the default, by its count
//! line, whose `tree=` check mode takes as the checksum line's leaf size).
//! Checksum lines, blank lines and `#` comments are passed over; the first
//! problem is reported (`LISTING: LINE: …`, or the first gap), status 1.

use std::ffi::{OsStr, OsString};
use std::io::Write;

use bt2sum::format::checksum::Style;
use bt2sum::format::lines::{MAX_LINE, Record as Line, read_line};
use bt2sum::format::list::{Grammar, Improper, ListLine, classify};
use bt2sum::leaves::{CombineError, Combined, Combiner};
use bt2sum::{TreeParams, plain_message};

use super::output::{
    Hex, JsonName, Layout, Printer, Record, Status, Tree, Verbosity, ended, report, warn,
};
use super::sys;

/// Combines the listings (standard input when none is given), writing the
/// checksum line to `out`; returns the exit status.
pub fn run(listings: &[OsString], layout: Layout, out: &mut dyn Write) -> Status {
    let stdin_only = [OsString::from("-")];
    let given = Some(listings).filter(|given| !given.is_empty());
    let combined = match combine(given.unwrap_or(&stdin_only)) {
        Ok(combined) => combined,
        Err(status) => return status,
    };
    let mut printer = Printer::new(out, false, layout, Verbosity::Normal);
    let (tree, name) = (&combined.tree, combined.name.as_deref());
    let checksum = Record::Checksum {
        tree: Tree(tree),
        name: JsonName(name),
        digest: Hex(combined.digest.as_bytes()),
        length: combined.total,
        mtime: None,
    };
    if tree.leaf_size() == TreeParams::default().leaf_size() {
        return ended(printer.end(Ok(()), &checksum));
    }
    // Named as the checksum line names it: an untagged line names
    // nameless standard input `-`.
    let shown = match (layout.style, name) {
        (Style::Untagged, None) => Some(&b"-"[..]),
        _ => name,
    };
    let count = Record::count(tree, JsonName(shown), combined.total, None);
    let written = printer.emit(&checksum);
    ended(printer.end(written, &count))
}

/// The file that the listings' leaves make up; `Err` once the first
/// problem is reported.
fn combine(listings: &[OsString]) -> Result<Combined, Status> {
    let mut combiner = Combiner::default();
    for (number, listing) in listings.iter().enumerate() {
        add_listing(&mut combiner, listing, number as u32)?;
    }
    combiner.finish().map_err(|error| match error {
        CombineError::Clash { at, .. } => {
            report(&at_line(&listings[at.0 as usize], at.1), &error.to_string())
        }
        error => {
            warn(&error.to_string());
            Status::Failure
        }
    })
}

/// `LISTING: LINE`, where messages say a line is.
fn at_line(listing: &OsStr, number: u64) -> OsString {
    let mut place = super::list_name(listing).to_os_string();
    place.push(format!(": {number}"));
    place
}

/// Adds every leaf line of one listing (the `number`-th); the first
/// problem is reported.
fn add_listing(combiner: &mut Combiner, listing: &OsStr, number: u32) -> Result<(), Status> {
    let failed = |message: String| report(super::list_name(listing), &message);
    let mut reader = sys::open_list(listing).map_err(|error| failed(plain_message(&error)))?;
    let mut line = Vec::new();
    for line_number in 1.. {
        let at_line = |message: String| report(&at_line(listing, line_number), &message);
        match read_line(&mut reader, &mut line).map_err(|error| failed(plain_message(&error)))? {
            Line::End => return Ok(()),
            Line::TooLong => {
                return Err(at_line(format!("line longer than {} MiB", MAX_LINE >> 20)));
            }
            Line::Line => {}
        }
        match classify(&line, &Grammar::default()) {
            ListLine::Leaf(parsed) => combiner
                .add(parsed, (number, line_number))
                .map_err(|error| at_line(error.to_string()))?,
            // A listing made by --leaves holds checksum lines too, the
            // nameless one of standard input included.
            ListLine::Skip
            | ListLine::Checksum(_)
            | ListLine::Nameless { .. }
            | ListLine::Stat(_) => {}
            ListLine::Improper(Improper::LeafLine(why)) => return Err(at_line(why.to_string())),
            ListLine::Improper(_) => {
                return Err(at_line("improperly formatted line".to_string()));
            }
        }
    }
    Ok(())
}
