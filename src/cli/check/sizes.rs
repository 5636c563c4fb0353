//! The bytes a check will read, for its progress bar's total and time
//! left: each listed file's length as its stat line or leaf lines give it,
//! else as the file system gives it. Only where this is cheap: lists that
//! are files (not standard input) of at most [`MAX_LIST`] bytes, at most
//! [`MAX_STATS`] files asked of the file system; else no total.

use std::fs::File;
use std::io::BufReader;

use bt2sum::format::lines::{Record, read_line};
use bt2sum::format::list::{ListLine, classify};
use bt2sum::format::name::Name;

use crate::cli::plan::Checking;

const MAX_LIST: u64 = 256 << 20;

const MAX_STATS: u64 = 100_000;

/// The bytes of the files the lists name; `None` when that is not cheap to
/// know, or not what the check reads (slices, a time budget, `--quick`).
pub fn listed_bytes(plan: &Checking) -> Option<u64> {
    let quick = plan.audit.as_ref().is_some_and(|audit| audit.quick);
    let budget = plan.ledger.as_ref().and_then(|ledger| ledger.max_duration);
    if plan.lists.is_empty() || plan.slice.is_some() || quick || budget.is_some() {
        return None;
    }
    let (mut total, mut stats) = (0u64, 0);
    // The entry being read: its name, and its length if a line gave it.
    let mut current: Option<(Vec<u8>, Option<u64>)> = None;
    for list in &plan.lists {
        let file = File::open(list).ok().filter(|_| list != "-")?;
        if file.metadata().ok()?.len() > MAX_LIST {
            return None;
        }
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        while let Record::Line | Record::TooLong = read_line(&mut reader, &mut line).ok()? {
            let (length, started) = match classify(&line, &plan.settings.grammar) {
                ListLine::Checksum(entry) => (None, Some(entry.name)),
                ListLine::Stat(stat) => (Some(stat.size), None),
                ListLine::Leaf(leaf) => {
                    let name = leaf
                        .name
                        .filter(|name| current.as_ref().is_none_or(|(at, _)| at != name));
                    (Some(leaf.total), name)
                }
                _ => continue,
            };
            match (started, &mut current) {
                (Some(name), _) => {
                    // (A nameless line's file, standard input, has none.)
                    let started = (!name.is_empty()).then_some((name, length));
                    let ended = std::mem::replace(&mut current, started);
                    total = total.saturating_add(entry_length(ended, &mut stats)?);
                }
                // (The first line to give it counts.)
                (None, Some((_, known @ None))) => *known = length,
                (None, _) => {}
            }
        }
        total = total.saturating_add(entry_length(current.take(), &mut stats)?);
    }
    Some(total)
}

/// The length of an entry read to its end: as a line gave it, else as the
/// file system does; `None` once too many files were asked of it.
fn entry_length(entry: Option<(Vec<u8>, Option<u64>)>, stats: &mut u64) -> Option<u64> {
    let Some((name, known)) = entry else {
        return Some(0);
    };
    if known.is_some() {
        return known;
    }
    if *stats == MAX_STATS {
        return None;
    }
    *stats += 1;
    let metadata = Name::listed(&name)
        .path()
        .and_then(|path| std::fs::metadata(path).ok());
    Some(metadata.map_or(0, |metadata| metadata.len()))
}
