//! Every line grammar of bt2sum, both directions in one place: what hashing
//! writes and what check mode and `--combine` read back.
//!
//! - [`Tag`]: `BLAKE2b-64`, the algorithm and the digest size in bytes.
//! - [`checksum`]: `TAG (NAME) = HEX`, `TAG = HEX` and GNU's `HEX  NAME`.
//! - [`leaf`]: the leaf lines of a listing,
//!   `TAG leaf=I offset=O length=N total=T tree=L (NAME) = HEX`; an
//!   input's leaf, count and stat lines are written by [`InputLines`].
//! - [`list`]: every line of a checksum list told apart: bt2sum's, another
//!   tool's (named by its shape), a comment, or junk; [`lines`] reads them
//!   with bounded memory.
//! - [`stat`]: the stat line after a checksum line, `TAG size=N mtime=S.NS
//!   tree=L (NAME)`, which tells an edit from damage.
//! - [`name`]: a file's name as lines print it and as verdicts and messages
//!   show it, escaped where it must be.

pub mod checksum;
pub mod leaf;
pub mod lines;
pub mod list;
pub mod name;
pub mod stat;

use std::fmt;

use crate::digest::Digest;
use crate::params::{Algorithm, TreeParams};

/// How lines end, and with it whether names are escaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ending {
    /// In a newline; a name holding a backslash, newline or carriage return
    /// is escaped, and its line starts with `\`, as GNU does.
    #[default]
    Newline,
    /// In a NUL byte, names written as they are (`-z`, as GNU's
    /// `--zero`): for reading with `xargs -0` or `sort -z`.
    Nul,
}

impl Ending {
    /// Ends a line.
    pub fn push(self, out: &mut Vec<u8>) {
        out.push(match self {
            Ending::Newline => b'\n',
            Ending::Nul => 0,
        });
    }
}

/// The head of every line: `BLAKE2b-N` or `BLAKE2s-N`, N the digest size in
/// bytes, in decimal without leading zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The digest size in bytes, valid for the algorithm.
    pub digest_size: usize,
}

impl Tag {
    /// The tag of a tree's lines.
    pub fn of(tree: &TreeParams) -> Tag {
        Tag {
            algorithm: tree.algorithm(),
            digest_size: tree.digest_size(),
        }
    }

    /// Reads a tag at the start of `line`; returns it and the rest of the
    /// line. `None` unless the line starts with a valid tag (an algorithm
    /// bt2sum knows, a size that algorithm has, no leading zeros).
    pub fn parse(line: &[u8]) -> Option<(Tag, &[u8])> {
        let rest = line.strip_prefix(b"BLAKE2")?;
        let (algorithm, rest) = match rest.split_first()? {
            (b'b', rest) => (Algorithm::Blake2b, rest),
            (b's', rest) => (Algorithm::Blake2s, rest),
            _ => return None,
        };
        let rest = rest.strip_prefix(b"-")?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 2 || rest[0] == b'0' {
            return None;
        }
        let digest_size = rest[..digits]
            .iter()
            .fold(0, |size, digit| size * 10 + usize::from(digit - b'0'));
        if digest_size > algorithm.max_digest_size() {
            return None;
        }
        let tag = Tag {
            algorithm,
            digest_size,
        };
        Some((tag, &rest[digits..]))
    }

    /// Appends the tag to `out`.
    pub fn push(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.to_string().as_bytes());
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.algorithm.name(), self.digest_size)
    }
}

/// What the leaf, count and stat lines of one input share: the tree
/// parameters they name (their tag and `tree=` field), the input's name and
/// the line ending. Its `push_…` methods write those lines (in
/// [`leaf`] and [`stat`]).
#[derive(Clone, Copy, Debug)]
pub struct InputLines<'a> {
    /// The tree parameters of the input's checksum.
    pub tree: &'a TreeParams,
    /// The input's name, as listed; `None` for standard input read because
    /// no FILE was given, whose lines have no name, as its checksum line has
    /// none.
    pub name: Option<&'a [u8]>,
    /// How the lines end (and with it whether the name is escaped).
    pub ending: Ending,
}

impl InputLines<'_> {
    /// The start of a line: `\` if the name is escaped, then the tag.
    fn push_head(&self, out: &mut Vec<u8>) {
        if self.escaped() {
            out.push(b'\\');
        }
        Tag::of(self.tree).push(out);
    }

    /// ` (NAME)`, for a line with a name.
    fn push_name(&self, out: &mut Vec<u8>) {
        if let Some(name) = self.name {
            out.extend_from_slice(b" (");
            name::Name::listed(name).push_printed(out, self.escaped());
            out.push(b')');
        }
    }

    fn escaped(&self) -> bool {
        self.name
            .is_some_and(|name| name::Name::listed(name).escaped_in(self.ending))
    }
}

/// The fields after the tag of a line (CR/LF already removed) that starts
/// with `BLAKE2` (after an optional `\`), well formed or not: what tells a
/// leaf or stat line from a checksum line.
pub(super) fn after_tag(line: &[u8]) -> Option<&[u8]> {
    let body = line.strip_prefix(b"\\").unwrap_or(line);
    let rest = body.strip_prefix(b"BLAKE2")?;
    let space = rest.iter().position(|&b| b == b' ')?;
    Some(&rest[space + 1..])
}

/// 2 to 128 hex digits, all lowercase or all uppercase, as a digest.
pub(super) fn decode_hex(hex: &[u8]) -> Option<Digest> {
    // One pass, into a buffer on the stack: lists of millions of lines
    // decode a digest a line.
    let mut bytes = [0; Digest::MAX_LEN];
    let bytes = bytes
        .get_mut(..hex.len() / 2)
        .filter(|_| hex.len().is_multiple_of(2))?;
    let (mut lower, mut upper) = (false, false);
    let mut nibble = |digit: u8| match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => {
            lower = true;
            Some(digit - b'a' + 10)
        }
        b'A'..=b'F' => {
            upper = true;
            Some(digit - b'A' + 10)
        }
        _ => None,
    };
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    if lower && upper {
        return None;
    }
    Digest::from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digests_decode_as_the_hex_crate_decodes_them() {
        let bytes: Vec<u8> = (0..=255).collect();
        for len in 1..=Digest::MAX_LEN {
            let chunk = &bytes[len..len * 2];
            for hex in [hex::encode(chunk), hex::encode_upper(chunk)] {
                let decoded = decode_hex(hex.as_bytes()).expect("a digest");
                assert_eq!(decoded.as_bytes(), chunk);
            }
        }
        for refused in [
            &b""[..],
            b"a",
            b"abc",
            b"aB",
            b"0g",
            b"g0",
            b" 0",
            b"0x",
            &[b'0'; 2 * Digest::MAX_LEN + 2],
        ] {
            assert_eq!(decode_hex(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn tags_read_back_and_bad_ones_are_refused() {
        for algorithm in Algorithm::ALL {
            for digest_size in 1..=algorithm.max_digest_size() {
                let tag = Tag {
                    algorithm,
                    digest_size,
                };
                let mut line = Vec::new();
                tag.push(&mut line);
                line.extend_from_slice(b" rest");
                assert_eq!(Tag::parse(&line), Some((tag, &b" rest"[..])));
            }
        }
        let table: [(&[u8], Option<&str>); 12] = [
            (b"BLAKE2b-64", Some("BLAKE2b-64")),
            (b"BLAKE2s-32 (", Some("BLAKE2s-32")),
            (b"BLAKE2b-1x", Some("BLAKE2b-1")),
            (b"BLAKE2s-33", None),
            (b"BLAKE2b-65", None),
            (b"BLAKE2b-0", None),
            (b"BLAKE2b-064", None),
            (b"BLAKE2b-100", None),
            (b"BLAKE2b-", None),
            (b"BLAKE2b", None),
            (b"BLAKE2B-1", None),
            (b"blake2b-1", None),
        ];
        for (line, expected) in table {
            let parsed = Tag::parse(line).map(|(tag, _)| tag.to_string());
            assert_eq!(parsed.as_deref(), expected, "{}", line.escape_ascii());
        }
    }
}
