//! Stat lines: what `--stat` prints after a file's checksum line, and what
//! check mode reads back to tell an edit from damage.
//!
//! ```text
//! BLAKE2b-64 size=N mtime=SECONDS.NANOSECONDS tree=L (NAME)
//! ```
//!
//! `N` is the file's size, `L` the leaf size its checksum was made with;
//! before 1970 the seconds are negative and the nanoseconds still count up
//! (`-1.500000000` is half a second before). Names are escaped as in
//! checksum lines.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::name::read_back;
use super::{InputLines, Tag, canonical, decimal, name_and_digest, prefixed, split};
use crate::params::TreeParams;

/// A modification time as stat lines write it: nanoseconds since
/// 1970-01-01 00:00:00 UTC, negative before.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Mtime(i128);

/// Nanoseconds in a second.
const NANOS: i128 = 1_000_000_000;

impl Mtime {
    /// The modification time a file's metadata gives.
    pub fn of(time: SystemTime) -> Mtime {
        Mtime(match time.duration_since(UNIX_EPOCH) {
            Ok(after) => after.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        })
    }

    /// The time this is, where the system's clock can hold it.
    pub fn to_system_time(self) -> Option<SystemTime> {
        let nanos = self.0.unsigned_abs();
        let seconds = u64::try_from(nanos / NANOS as u128).ok()?;
        let since = Duration::new(seconds, (nanos % NANOS as u128) as u32);
        match self.0 < 0 {
            true => UNIX_EPOCH.checked_sub(since),
            false => UNIX_EPOCH.checked_add(since),
        }
    }

    /// Reads `SECONDS.NANOSECONDS` as [`fmt::Display`] writes it.
    fn parse(text: &[u8]) -> Option<Mtime> {
        let (negative, text) = prefixed(text, b"-");
        let (seconds, nanoseconds) = split(text, b".", false)?;
        let seconds = i128::from(i64::try_from(canonical(seconds)?).ok()?);
        if (negative && seconds == 0) || nanoseconds.len() != 9 {
            return None;
        }
        let seconds = if negative { -seconds } else { seconds };
        Some(Mtime(seconds * NANOS + i128::from(decimal(nanoseconds)?)))
    }
}

impl fmt::Display for Mtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (seconds, nanos) = (self.0.div_euclid(NANOS), self.0.rem_euclid(NANOS));
        write!(f, "{seconds}.{nanos:09}")
    }
}

/// One parsed stat line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatLine {
    /// The tree parameters of the file's checksum.
    pub tree: TreeParams,
    /// The file's name, unescaped; `None` for a line without one.
    pub name: Option<Vec<u8>>,
    /// The file's size in bytes.
    pub size: u64,
    /// Its modification time.
    pub mtime: Mtime,
}

impl InputLines<'_> {
    /// Appends the stat line of a file: its size and modification time, and
    /// the leaf size its checksum was made with.
    pub fn push_stat(&self, out: &mut Vec<u8>, size: u64, mtime: Mtime) {
        let fields = format!(" size={size} mtime={mtime} tree={}", self.tree.leaf_size());
        self.push(out, &fields, "");
    }
}

/// Whether a line (CR/LF already removed) is a stat line, well formed or
/// not: `BLAKE2…` and a first field of `size=`.
pub fn is_stat_line(line: &[u8]) -> bool {
    super::after_tag(line).is_some_and(|fields| fields.starts_with(b"size="))
}

/// Parses a stat line (without its line ending): the three fields in
/// their order, then ` (NAME)` or nothing; `None` if it is not exactly that.
pub(super) fn parse_stat_line(line: &[u8]) -> Option<StatLine> {
    let (escaped, body) = prefixed(line, b"\\");
    let (tag, rest) = Tag::parse(body)?;
    let (size, rest) = field(rest, b" size=")?;
    let (mtime, rest) = field(rest, b" mtime=")?;
    let (leaf_size, rest) = field(rest, b" tree=")?;
    let name = match name_and_digest(rest, false)?.0 {
        Some(name) => Some(read_back(name, escaped).filter(|name| !name.is_empty())?),
        None => (!escaped).then_some(None)?,
    };
    Some(StatLine {
        tree: TreeParams::new(tag.algorithm, tag.size, canonical(leaf_size)?).ok()?,
        name,
        size: canonical(size)?,
        mtime: Mtime::parse(mtime)?,
    })
}

/// After `key`, a field's value (up to the next space) and what follows it.
fn field<'a>(text: &'a [u8], key: &[u8]) -> Option<(&'a [u8], &'a [u8])> {
    let text = text.strip_prefix(key)?;
    Some(text.split_at(text.iter().position(|&b| b == b' ').unwrap_or(text.len())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Ending;
    use crate::params::Algorithm;

    #[test]
    fn modification_times_read_back() {
        let after = |seconds, nanos| UNIX_EPOCH + Duration::new(seconds, nanos);
        let before = |seconds, nanos| UNIX_EPOCH - Duration::new(seconds, nanos);
        // Windows counts time in steps of 100 ns, Unix in nanoseconds.
        #[rustfmt::skip]
        let table = [
            (after(0, 0), "0.000000000"),
            (after(1_700_000_000, 12_300), "1700000000.000012300"),
            (before(1, 0), "-1.000000000"),
            (before(86_400, 100), "-86401.999999900"),
        ];
        for (time, text) in table {
            let mtime = Mtime::of(time);
            assert_eq!(mtime.to_string(), text);
            assert_eq!(Mtime::parse(text.as_bytes()), Some(mtime), "{text}");
            assert_eq!(mtime.to_system_time(), Some(time), "{text}");
        }
    }

    #[test]
    fn stat_lines_read_back() {
        let tree = TreeParams::new(Algorithm::Blake2s, 16, 4096).unwrap();
        let mtime = Mtime::of(UNIX_EPOCH - Duration::new(3, 7));
        for name in [None, Some(&b"a b (c)"[..]), Some(b"new\nline\\")] {
            for ending in [Ending::Newline, Ending::Nul] {
                let mut line = Vec::new();
                InputLines {
                    tree: &tree,
                    name,
                    ending,
                }
                .push_stat(&mut line, 99, mtime);
                let line = &line[..line.len() - 1];
                assert!(is_stat_line(line));
                let parsed = parse_stat_line(line).unwrap();
                assert_eq!((parsed.tree, parsed.size, parsed.mtime), (tree, 99, mtime));
                assert_eq!(parsed.name.as_deref(), name);
            }
        }
        assert!(!is_stat_line(b"BLAKE2b-64 leaves=0 total=0 tree=1 (f)"));
    }
}
