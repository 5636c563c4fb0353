//! The ledger of verifications (`--ledger`, `--max-duration`): when each
//! unit of a list (a file checked whole, or one listed leaf: the units
//! `--part` counts) was last verified to match.
//!
//! It is a redb database (transactions, so that a kill or a power cut
//! loses at most the last second of progress, never the ledger) beside the
//! list, which itself never changes for it. A unit is known by a hash of
//! its name, tree, leaf index and listed digest: a line `--update` keeps
//! its record, an edited line is a new unit, and a ledger made for
//! another list knows none of the list's units. The ledger only orders a
//! check's work and reports its coverage: it never makes a file pass, and
//! only a unit that matched is recorded (one found failing loses its
//! record, so that it comes first in the next scrub).

use std::ffi::{OsStr, OsString};
use std::io::{self, IsTerminal};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use bt2sum::spill::Spill;
use bt2sum::verify::{Checked, Subject, Unit, Verdict};
use bt2sum::{Digest, TreeParams};
use indicatif::{BinaryBytes, HumanDuration};
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::Serialize;

use super::super::beneath;
use super::super::output::{Coverage, Status, report};
use super::super::plan::Ledgering;

/// When each unit was last verified to match (seconds since 1970).
const VERIFIED: TableDefinition<[u8; 16], u64> = TableDefinition::new("verified");
const ABOUT: TableDefinition<&str, u64> = TableDefinition::new("about");
/// The format this bt2sum writes and reads; a newer one is refused.
const FORMAT: u64 = 1;

/// How often what was verified is committed: each commit is durable (as
/// redb commits by default), so a power cut loses at most this much.
const COMMIT_EVERY: Duration = Duration::from_secs(1);

type Key = [u8; 16];

/// A unit's key in the ledger (see the module documentation).
fn key(name: &[u8], tree: &TreeParams, leaf: Option<u64>, digest: &Digest) -> Key {
    let mut state = blake2b_simd::Params::new().hash_length(16).to_state();
    state.update(&(name.len() as u64).to_le_bytes());
    state.update(name);
    state.update(&[tree.algorithm() as u8, tree.digest_size() as u8]);
    state.update(&tree.leaf_size().to_le_bytes());
    state.update(&leaf.unwrap_or(u64::MAX).to_le_bytes());
    state.update(digest.as_bytes());
    let hash = state.finalize();
    hash.as_bytes().try_into().expect("a 16-byte hash")
}

/// The check's ledger, open (`None`: it is used only if it is there, and
/// it is not), else the run's status, said why: a regular file, reached
/// without following a link, created if it is not there (emptied first
/// with `--ledger-reset`).
pub fn open(ledgering: &Ledgering) -> Result<Option<Schedule>, Status> {
    let name = ledgering.file.as_os_str();
    if ledgering.if_there && std::fs::symlink_metadata(name).is_err() {
        return Ok(None);
    }
    let database = database(&ledgering.file, ledgering.reset).map_err(|why| report(name, &why))?;
    let before = Reader::new(&database);
    Ok(Some(Schedule {
        foreign: (before.0.as_ref()).is_some_and(|table| table.len().is_ok_and(|n| n > 0)),
        before,
        database,
        name: name.to_os_string(),
        pending: None,
        last_commit: Instant::now(),
        unwritten: None,
        failed: false,
        listing: true,
        units: Spill::sorted(),
        left: None,
        chosen: Spill::default(),
        round: Vec::new(),
        started: None,
        bytes: 0,
        error: None,
    }))
}

/// The database at `path`, else why it cannot be used.
fn database(path: &Path, reset: bool) -> Result<Database, String> {
    let refused = |why: beneath::Refusal| format!("cannot open the ledger: {why}");
    let file = beneath::open_or_create(path).map_err(refused)?;
    if reset {
        file.set_len(0).map_err(|error| refused(error.into()))?;
    }
    Err(match formatted(file) {
        Ok((database, format)) if format <= FORMAT => return Ok(database),
        Ok((_, format)) => format!("the ledger was made by a newer bt2sum (format {format})"),
        Err(redb::Error::DatabaseAlreadyOpen) => "the ledger is in use by another bt2sum".into(),
        Err(error) => format!("the ledger is damaged ({error}): --ledger-reset starts it afresh"),
    })
}

/// The database in `file`, and its format (written in a new ledger).
fn formatted(file: std::fs::File) -> Result<(Database, u64), redb::Error> {
    let database = redb::Builder::new()
        // (Its cache is one of the run's growing structures.)
        .set_cache_size(bt2sum::budget::memory().per_structure)
        .create_file(file)?;
    let write = database.begin_write()?;
    let format = (write.open_table(ABOUT)?.get("format")?).map(|format| format.value());
    if format.is_none() {
        write.open_table(ABOUT)?.insert("format", FORMAT)?;
        write.commit()?;
    }
    Ok((database, format.unwrap_or(FORMAT)))
}

/// A ledger as it was when read (a new ledger has no table yet).
struct Reader(Option<redb::ReadOnlyTable<Key, u64>>);

impl Reader {
    fn new(database: &Database) -> Reader {
        let table = database.begin_read().ok();
        Reader(table.and_then(|read| read.open_table(VERIFIED).ok()))
    }

    /// When the unit `key` was last verified (`None`: never).
    fn verified(&self, key: &Key) -> Option<u64> {
        Some(self.0.as_ref()?.get(key).ok()??.value())
    }
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A unit as a schedule keeps it, ordered least recently verified first
/// (never verified: 0), then by where it starts in the lists.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
struct Planned {
    verified: u64,
    start: u64,
    bytes: u64,
    key: Key,
}

type Left = std::iter::Peekable<Box<dyn Iterator<Item = io::Result<Planned>>>>;

/// The units not chosen yet, least recently verified first: `units`,
/// sorted the first time.
fn sorted<'a>(left: &'a mut Option<Left>, units: &mut Spill<Planned>) -> io::Result<&'a mut Left> {
    match left {
        Some(left) => Ok(left),
        None => {
            let units = std::mem::take(units);
            Ok(left.insert(units.into_sorted()?.peekable()))
        }
    }
}

/// Whether units verified at `first` and at `next` (seconds since 1970, 0
/// for never, `next` no older) share a round. A round checks its units in
/// list order: one that held units never verified and others verified
/// last night, or last week, would pass over older ones for newer ones
/// until it ends.
fn same_age(first: u64, next: u64) -> bool {
    (first == 0) == (next == 0) && next - first <= 3600
}

/// The bytes of the first round of a scrub with a time budget, before its
/// speed is known: what a spinning disk reads in the time (see
/// [`same_age`] for why not more), from 4 MiB up to 256 MiB.
const FIRST_ROUND_RATE: f64 = 100e6;

/// A check with a ledger: the ledger, the units of the lists, noted as the
/// lists are read the first time (the listing), and the rounds that then
/// verify them. Each round chooses the least recently verified units left,
/// as many as the time left (`--max-duration`) and the speed so far can
/// verify (a round too big is cut at the deadline), or all of them without
/// a time budget.
pub struct Schedule {
    database: Database,
    name: OsString,
    /// What was verified since the last commit.
    pending: Option<redb::WriteTransaction>,
    last_commit: Instant,
    /// Why it could not be written, once it could not: nothing more is
    /// recorded.
    unwritten: Option<String>,
    /// Whether it could not be kept: the run fails.
    pub failed: bool,
    /// The ledger as it was before the check.
    before: Reader,
    /// No round was chosen yet.
    pub listing: bool,
    /// The units not chosen yet (sorted when the first round is chosen).
    units: Spill<Planned>,
    left: Option<Left>,
    chosen: Spill<Planned>,
    /// Whether the ledger holds records, and none of the units listed so
    /// far.
    foreign: bool,
    /// The starts of the units of the round under way, in order.
    round: Vec<u64>,
    /// When the first round started, and the bytes the rounds chose.
    started: Option<Instant>,
    bytes: u64,
    /// Why a unit could not be kept (the disk under the spill store).
    error: Option<io::Error>,
}

impl Schedule {
    fn fail(&mut self, error: &dyn std::fmt::Display) {
        report(&self.name, &format!("the ledger cannot be kept: {error}"));
        self.failed = true;
    }

    /// Records what a pass verified: each of its units that matched is
    /// verified now; one that did not (damaged, missing, edited) loses its
    /// record; one not read (`--quick`) keeps its record.
    pub fn note(&mut self, checked: &Checked) {
        if self.unwritten.is_none()
            && let Err(error) = self.record(checked)
        {
            self.unwritten = Some(error.to_string());
        }
    }

    fn record(&mut self, checked: &Checked) -> Result<(), redb::Error> {
        let (name, tree) = (&checked.pass.name, &checked.pass.tree);
        let now = seconds(SystemTime::now());
        let write = match &mut self.pending {
            Some(write) => write,
            None => self.pending.insert(self.database.begin_write()?),
        };
        let mut table = write.open_table(VERIFIED)?;
        // (The leaves' verdicts come in the order the leaves are listed.)
        let mut listed = checked.listed_leaves();
        let units = checked.lines().filter_map(|(subject, verdict)| {
            let key = match subject {
                Subject::Checksum => key(name, tree, None, checked.expected()?),
                Subject::Leaf(index) => {
                    let (_, digest) = listed.find(|(at, _)| *at == index)?;
                    key(name, tree, Some(index), digest)
                }
                Subject::Length => return None,
            };
            Some((key, verdict))
        });
        for (key, verdict) in units {
            match verdict {
                Verdict::Ok => drop(table.insert(key, now)?),
                Verdict::Unread => {}
                _ => drop(table.remove(key)?),
            }
        }
        drop(table);
        if self.last_commit.elapsed() >= COMMIT_EVERY {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), redb::Error> {
        self.last_commit = Instant::now();
        if let Some(write) = self.pending.take() {
            write.commit()?;
        }
        Ok(())
    }

    /// Whether the unit starting at `start` is read: none while the lists
    /// are listed (each unit is noted), then those of the round.
    pub fn reads(&mut self, start: u64, unit: Option<&Unit<'_>>) -> bool {
        if !self.listing {
            return self.round.binary_search(&start).is_ok();
        }
        if let Some(unit) = unit {
            let key = key(unit.name, unit.tree, unit.leaf, unit.digest);
            let verified = self.before.verified(&key);
            self.foreign &= verified.is_none();
            let planned = Planned {
                verified: verified.unwrap_or(0),
                start,
                bytes: unit.bytes,
                key,
            };
            if let Err(error) = self.units.push(&planned) {
                self.error.get_or_insert(error);
            }
        }
        false
    }

    /// Chooses the next round (empty when the time is up); whether it has
    /// units. `Err`: the ledger held records, none of them of these lists.
    pub fn next_round(&mut self, deadline: Option<Instant>) -> Result<bool, Status> {
        if self.listing && self.foreign && !self.units.is_empty() {
            let foreign = "the ledger records none of this list's entries: it was made for \
                           another list (--ledger-reset starts it afresh for this one)";
            return Err(report(&self.name, foreign));
        }
        self.listing = false;
        let now = Instant::now();
        let elapsed = now.duration_since(*self.started.get_or_insert(now));
        let bytes = match deadline.map(|at| at.saturating_duration_since(now)) {
            None => u64::MAX,
            Some(left) if left.is_zero() => 0,
            Some(left) if self.bytes == 0 => {
                ((left.as_secs_f64() * FIRST_ROUND_RATE) as u64).clamp(4 << 20, 256 << 20)
            }
            Some(left) => {
                let rate = self.bytes as f64 / elapsed.as_secs_f64().max(0.001);
                (rate * left.as_secs_f64() * 1.5) as u64
            }
        };
        match self.choose(bytes) {
            Ok(chosen) => self.bytes += chosen,
            Err(error) => self.fail(&error),
        }
        Ok(!self.failed && !self.round.is_empty())
    }

    /// Chooses a round: the units least recently verified, `bytes` of them
    /// (none if 0, else at least one; none when every unit was chosen;
    /// fewer when their starts would outgrow memory, or when the next were
    /// verified at another time: see [`same_age`]); the bytes chosen.
    fn choose(&mut self, bytes: u64) -> io::Result<u64> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        self.round.clear();
        if bytes == 0 {
            return Ok(0);
        }
        let left = sorted(&mut self.left, &mut self.units)?;
        // (A round's starts are held in memory: at most a structure's
        // worth of them.)
        let most = bt2sum::budget::memory().per_structure / size_of::<u64>();
        let mut taken = 0u64;
        let mut first = None;
        while taken < bytes.max(1) && self.round.len() < most {
            // (All at once, without a time budget, the order is moot.)
            let next = left.next_if(|next| match (next, first) {
                (Ok(next), Some(first)) if bytes != u64::MAX => same_age(first, next.verified),
                _ => true,
            });
            let Some(planned) = next else {
                break;
            };
            let planned = planned?;
            first.get_or_insert(planned.verified);
            self.chosen.push(&planned)?;
            self.round.push(planned.start);
            taken = taken.saturating_add(planned.bytes.max(1));
        }
        self.round.sort_unstable();
        Ok(taken)
    }

    /// What the ledger says once the check is done, said on standard error
    /// if `shown`.
    pub fn coverage(&mut self, shown: bool) -> Option<Coverage> {
        let coverage = self.ages();
        if let Some(error) = self.unwritten.take() {
            self.fail(&error);
        }
        let coverage = coverage.map_err(|error| self.fail(&error)).ok()?;
        if shown {
            coverage.show(&self.name);
        }
        Some(coverage)
    }

    /// The bytes each age of last proof covers; the records of units no
    /// longer listed are dropped.
    fn ages(&mut self) -> Result<Coverage, Box<dyn std::error::Error>> {
        self.commit()?;
        let (now, after) = (seconds(SystemTime::now()), Reader::new(&self.database));
        let (mut coverage, mut keys) = (Coverage::default(), Spill::<Key>::sorted());
        let left = sorted(&mut self.left, &mut self.units)?;
        for planned in self.chosen.iter().chain(left) {
            let planned = planned?;
            coverage.add(now, after.verified(&planned.key), planned.bytes);
            keys.push(&planned.key)?;
        }
        drop(after);
        // (Both in key order: the records are walked once.)
        let mut listed = keys.into_sorted()?.peekable();
        let write = self.database.begin_write()?;
        write.open_table(VERIFIED)?.retain(|key, _| {
            while (listed.next_if(|next| matches!(next, Ok(next) if *next < key))).is_some() {}
            matches!(listed.peek(), Some(Ok(next)) if *next == key)
        })?;
        write.commit()?;
        Ok(coverage)
    }
}

const DAY: u64 = 24 * 60 * 60;

impl Coverage {
    fn add(&mut self, now: u64, verified: Option<u64>, bytes: u64) {
        self.total_bytes += bytes;
        let Some(verified) = verified else {
            self.never_verified_bytes += bytes;
            return;
        };
        let age = now.saturating_sub(verified);
        let within = |days: u64| if age < days * DAY { bytes } else { 0 };
        self.verified_within_1_day_bytes += within(1);
        self.verified_within_7_days_bytes += within(7);
        self.verified_within_30_days_bytes += within(30);
        let oldest = self.oldest_verification.get_or_insert(verified);
        *oldest = verified.min(*oldest);
    }

    /// Says the coverage on standard error: in words, after a bar on a
    /// terminal.
    fn show(&self, ledger: &OsStr) {
        let day = self.verified_within_1_day_bytes;
        let week = self.verified_within_7_days_bytes;
        let month = self.verified_within_30_days_bytes;
        let older = self.total_bytes - self.never_verified_bytes - month;
        // The bytes of each age, youngest first, with its words and its
        // shade on the bar.
        let ages = [
            (day, "verified under a day ago", '█'),
            (week - day, "verified 1-7 days ago", '▓'),
            (month - week, "verified 7-30 days ago", '▒'),
            (older, "verified over 30 days ago", '░'),
            (self.never_verified_bytes, "never verified", ' '),
        ];
        // (A part too small for a whole percent is not said to be none, nor
        // one short of the whole to be all.)
        let total = u128::from(self.total_bytes);
        let percent = |bytes: u64| match (u128::from(bytes) * 100 + total / 2) / total {
            0 => "<1".to_string(),
            100 if u128::from(bytes) < total => ">99".to_string(),
            percent => percent.to_string(),
        };
        let mut line = format!("{} listed", BinaryBytes(self.total_bytes));
        if io::stderr().is_terminal() {
            const WIDTH: u64 = 30;
            let bar: String = ages
                .iter()
                .flat_map(|(bytes, _, shade)| {
                    let width = (bytes * WIDTH).div_ceil(self.total_bytes.max(1));
                    std::iter::repeat_n(*shade, width as usize)
                })
                .take(WIDTH as usize)
                .collect();
            line = format!("[{bar:<30}] {line}");
        }
        let said = ages.iter().filter(|(bytes, ..)| *bytes > 0);
        for (nth, (bytes, age, _)) in said.enumerate() {
            let separator = if nth == 0 { ": " } else { ", " };
            line += &format!("{separator}{}% {age}", percent(*bytes));
        }
        if let Some(oldest) = self.oldest_verification {
            let age = Duration::from_secs(seconds(SystemTime::now()).saturating_sub(oldest));
            line += &format!("; the oldest proof is {} old", HumanDuration(age));
        }
        report(ledger, &line);
    }
}
