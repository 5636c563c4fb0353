//! Every line grammar of bt2sum, both directions in one place: what hashing
//! writes and what check mode and `--combine` read back.
//!
//! - [`checksum`]: `TAG (NAME) = HEX`, `TAG = HEX` and GNU's `HEX  NAME`.
//! - [`leaf`] and [`stat`]: the leaf, count and stat lines that follow a
//!   checksum line, written by [`InputLines`].
//! - [`list`]: every line of a checksum list told apart: bt2sum's, another
//!   tool's, a comment, or junk; [`lines`] reads them with bounded memory.
//! - [`name`]: a file's name as lines print it and as messages show it.

pub mod checksum;
pub mod leaf;
pub mod lines;
pub mod list;
pub mod name;
pub mod stat;

use std::fmt;

use self::name::push_named;
use crate::digest::Digest;
use crate::params::{Algorithm, TreeParams};

/// How lines end, and with it whether names are escaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ending {
    /// In a newline, names escaped as GNU escapes them ([`name`]).
    #[default]
    Newline,
    /// In a NUL byte, names written as they are (`-z`, GNU's `--zero`).
    Nul,
}

impl Ending {
    /// Ends a line.
    pub fn push(self, out: &mut Vec<u8>) {
        out.push(if self == Ending::Nul { 0 } else { b'\n' });
    }
}

/// The head of every line: `BLAKE2b-N` or `BLAKE2s-N`, N the digest size in
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The digest size in bytes, valid for the algorithm.
    pub size: usize,
}

impl Tag {
    /// The tag of a tree's lines.
    pub fn of(tree: &TreeParams) -> Tag {
        Tag {
            algorithm: tree.algorithm(),
            size: tree.digest_size(),
        }
    }

    /// Reads a valid tag at the start of `line`; returns it and the rest.
    pub fn parse(line: &[u8]) -> Option<(Tag, &[u8])> {
        let (algorithm, rest) = Algorithm::ALL.into_iter().find_map(|algorithm| {
            let rest = line.strip_prefix(algorithm.name().as_bytes())?;
            Some((algorithm, rest.strip_prefix(b"-")?))
        })?;
        let (size, rest) = rest.split_at(rest.iter().take_while(|b| b.is_ascii_digit()).count());
        let size = usize::try_from(canonical(size)?).ok()?;
        let valid = (1..=algorithm.max_digest_size()).contains(&size);
        valid.then_some((Tag { algorithm, size }, rest))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.algorithm.name(), self.size)
    }
}

/// What the leaf, count and stat lines of one input share; its `push_…`
/// methods (in [`leaf`] and [`stat`]) write them.
#[derive(Clone, Copy, Debug)]
pub struct InputLines<'a> {
    /// The tree parameters of the input's checksum: the lines' tag and
    /// `tree=`.
    pub tree: &'a TreeParams,
    /// The input's name; `None` for standard input read because no FILE was
    /// given, whose lines have no name, as its checksum line has none.
    pub name: Option<&'a [u8]>,
    /// How the lines end (and with it whether the name is escaped).
    pub ending: Ending,
}

impl InputLines<'_> {
    fn push(&self, out: &mut Vec<u8>, fields: &str, tail: &str) {
        let head = format!("{}{fields}", Tag::of(self.tree));
        push_tagged(out, &head, self.name, tail, self.ending);
    }
}

/// Appends `[\]HEAD[ (NAME)]TAIL` and the ending: every tagged line.
fn push_tagged(out: &mut Vec<u8>, head: &str, name: Option<&[u8]>, tail: &str, ending: Ending) {
    match name {
        Some(name) => push_named(out, &[head, " ("], name, &[")", tail], ending),
        None => push_named(out, &[head], b"", &[tail], ending),
    }
}

/// Reads what follows a tagged line's fields, as [`push_tagged`] writes it:
/// ` (NAME)` or nothing, then ` = HEX` on a line with a `digest` (a name
/// may hold `) = `: the digest follows the last one). Returns the name as
/// written, and the HEX (empty on a line without a digest).
fn name_and_digest(tail: &[u8], digest: bool) -> Option<(Option<&[u8]>, &[u8])> {
    match (tail.strip_prefix(b" ("), digest) {
        (Some(named), true) => split(named, b") = ", true).map(|(name, hex)| (Some(name), hex)),
        (Some(named), false) => Some((Some(named.strip_suffix(b")")?), &[])),
        (None, true) => Some((None, tail.strip_prefix(b" = ")?)),
        (None, false) => tail.is_empty().then_some((None, &[])),
    }
}

/// Whether `text` starts with `prefix`, and the text after it.
fn prefixed<'a>(text: &'a [u8], prefix: &[u8]) -> (bool, &'a [u8]) {
    text.strip_prefix(prefix)
        .map_or((false, text), |rest| (true, rest))
}

/// `text` around its first (or `last`) `separator`.
fn split<'a>(text: &'a [u8], separator: &[u8], last: bool) -> Option<(&'a [u8], &'a [u8])> {
    let mut windows = text.windows(separator.len());
    let at = if last {
        windows.rposition(|window| window == separator)?
    } else {
        windows.position(|window| window == separator)?
    };
    Some((&text[..at], &text[at + separator.len()..]))
}

/// What follows the first space of a line that starts with `BLAKE2`, well
/// formed or not: the fields that tell a leaf or stat line apart.
fn after_tag(line: &[u8]) -> Option<&[u8]> {
    let rest = prefixed(line, b"\\").1.strip_prefix(b"BLAKE2")?;
    Some(split(rest, b" ", false)?.1)
}

/// The number `digits` (ASCII digits only, leading zeros allowed) writes.
#[doc(hidden)]
pub fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// [`decimal`], written as bt2sum writes numbers: no leading zero but `0`.
fn canonical(digits: &[u8]) -> Option<u64> {
    decimal(digits).filter(|_| digits == b"0" || digits[0] != b'0')
}

/// A `size`-byte digest written as `2 * size` hex digits, all lowercase or
/// all uppercase. (One table lookup a digit: lists of many files spend
/// most of their parsing here.)
fn decode_hex(hex: &[u8], size: usize) -> Option<Digest> {
    let mut bytes = [0; Digest::MAX_LEN];
    let bytes = bytes.get_mut(..size).filter(|_| hex.len() == 2 * size)?;
    let mut seen = 0;
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
        let high = HEX_DIGITS[usize::from(pair[0])];
        let low = HEX_DIGITS[usize::from(pair[1])];
        seen |= high | low;
        *byte = (high & 0xf) << 4 | (low & 0xf);
    }
    let one_case = seen & (LOWER | UPPER) != LOWER | UPPER;
    (seen & NOT_HEX == 0 && one_case).then_some(())?;
    Digest::from_slice(bytes)
}

/// What each byte is as a hex digit: its value, and whether it is a
/// lowercase or an uppercase letter, or no digit at all.
const HEX_DIGITS: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = match byte as u8 {
            digit @ b'0'..=b'9' => digit - b'0',
            letter @ b'a'..=b'f' => (letter - b'a' + 10) | LOWER,
            letter @ b'A'..=b'F' => (letter - b'A' + 10) | UPPER,
            _ => NOT_HEX,
        };
        byte += 1;
    }
    table
};
const LOWER: u8 = 0x10;
const UPPER: u8 = 0x20;
const NOT_HEX: u8 = 0x80;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_back_and_bad_ones_are_refused() {
        for algorithm in Algorithm::ALL {
            for size in 1..=algorithm.max_digest_size() {
                let tag = Tag { algorithm, size };
                let line = format!("{tag}x");
                assert_eq!(Tag::parse(line.as_bytes()), Some((tag, &b"x"[..])));
            }
        }
        for bad in ["BLAKE2s-33", "BLAKE2b-0", "BLAKE2b-064", "BLAKE2B-1"] {
            assert_eq!(Tag::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    /// The table's decoder against the `hex` crate's, on every pair of
    /// bytes and on digests with one byte changed anywhere; and digests
    /// of another size than asked for, or of no valid size, refused.
    #[test]
    fn hex_digests_decode_as_the_hex_crate_decodes_them() {
        let reference = |text: &[u8], size: usize| {
            let mut bytes = vec![0; size];
            let mixed =
                text.iter().any(u8::is_ascii_lowercase) && text.iter().any(u8::is_ascii_uppercase);
            (hex::decode_to_slice(text, &mut bytes).is_ok() && !mixed && size <= 64)
                .then_some(bytes)
        };
        let decoded = |text: &[u8], size: usize| {
            decode_hex(text, size).map(|digest| digest.as_bytes().to_vec())
        };
        for first in 0..=255u8 {
            for second in 0..=255u8 {
                let text = [first, second];
                assert_eq!(decoded(&text, 1), reference(&text, 1), "{text:?}");
            }
        }
        let lower = b"0123456789abcdef".repeat(4);
        let upper = lower.to_ascii_uppercase();
        for (digest, size) in [(&lower, 2), (&lower, 32), (&upper, 16)] {
            let text = &digest[..2 * size];
            assert!(decoded(text, size).is_some());
            for at in 0..text.len() {
                for byte in 0..=255u8 {
                    let mut changed = text.to_vec();
                    changed[at] = byte;
                    assert_eq!(decoded(&changed, size), reference(&changed, size));
                }
            }
        }
        for (hex, size) in [("abcd", 1), ("abcd", 3), ("", 0), (&*"00".repeat(65), 65)] {
            assert_eq!(decoded(hex.as_bytes(), size), None, "{hex}");
        }
    }
}
