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
    let mut sizes = Sizes::default();
    for list in &plan.lists {
        let file = File::open(list).ok().filter(|_| list != "-")?;
        if file.metadata().ok()?.len() > MAX_LIST {
            return None;
        }
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        while let Record::Line | Record::TooLong = read_line(&mut reader, &mut line).ok()? {
            match classify(&line, &plan.settings.grammar) {
                ListLine::Checksum(entry) => sizes.entry(entry.name, None)?,
                ListLine::Stat(stat) => sizes.known(stat.size),
                ListLine::Leaf(leaf) => match leaf.name {
                    Some(name) if sizes.current.as_ref().is_none_or(|(at, _)| *at != name) => {
                        sizes.entry(name, Some(leaf.total))?;
                    }
                    _ => sizes.known(leaf.total),
                },
                _ => {}
            }
        }
        sizes.entry(Vec::new(), None)?;
    }
    Some(sizes.total)
}

/// The sum so far, and the entry being read: its name, and its length if
/// a line gave it.
#[derive(Default)]
struct Sizes {
    total: u64,
    stats: u64,
    current: Option<(Vec<u8>, Option<u64>)>,
}

impl Sizes {
    /// Ends the entry being read, and starts the one named `name` (none if
    /// empty); `None` once too many files were asked of the file system.
    fn entry(&mut self, name: Vec<u8>, length: Option<u64>) -> Option<()> {
        if let Some((ended, known)) = self.current.take() {
            let length = match known {
                Some(length) => length,
                None if self.stats == MAX_STATS => return None,
                None => {
                    self.stats += 1;
                    let path = Name::listed(&ended).path();
                    path.and_then(|path| std::fs::metadata(path).ok())
                        .map_or(0, |metadata| metadata.len())
                }
            };
            self.total = self.total.saturating_add(length);
        }
        self.current = (!name.is_empty()).then_some((name, length));
        Some(())
    }

    /// The entry being read is `length` bytes long, unless a line said so.
    fn known(&mut self, length: u64) {
        if let Some((_, known @ None)) = &mut self.current {
            *known = Some(length);
        }
    }
}
