//! Checksum lines, both directions.
//!
//! Written lines (what hashing prints):
//!
//! ```text
//! BLAKE2b-64 (NAME) = HEX     tagged, for a named input
//! BLAKE2b-64 = HEX            tagged, for standard input when no FILE is given
//! HEX  NAME                   untagged (`--untagged`), GNU style
//! ```
//!
//! Read lines ([`parse_entry`], [`parse_nameless`]):
//!
//! ```text
//! BLAKE2b-N (NAME) = HEX      N in bytes, 1..=64; HEX exactly 2N hex digits
//! BLAKE2s-N (NAME) = HEX      N in bytes, 1..=32
//! HEX  NAME                   GNU style; the algorithm comes from `-a`,
//! HEX *NAME                   the size is half the number of hex digits
//! BLAKE2b-N = HEX             standard input's, with no name
//! ```
//!
//! A named line may carry the leading `\` escape (then only `\\`, `\n`
//! and `\r` may appear in the name). HEX is all lowercase or all uppercase.
//! Strictly, as b3sum: no leading spaces, no single-space separator, no
//! empty name. The writer's lines always read back as written: a tagged
//! name may hold `) = `, because the hex is the fixed-length tail after the
//! last `) = `. How a list's other lines are told apart (comments, leaf
//! lines, other tools' lines) is the `list` module's.

use super::name::{Name, read_back};
use super::{Ending, Tag, decode_hex};
use crate::digest::Digest;
use crate::params::Algorithm;

/// How a checksum line is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `BLAKE2b-64 (NAME) = HEX`, as the original tool prints.
    Tagged,
    /// `HEX  NAME`, as GNU `b2sum` prints.
    Untagged,
    /// `HEX` alone (b3sum's `--no-names`).
    Bare,
    /// The digest's bytes, with no line ending (b3sum's `--raw`).
    Raw,
}

/// Appends one checksum line, its ending included, to `out`. `name` is
/// `None` for standard input read because no FILE was given.
pub fn push_line(
    out: &mut Vec<u8>,
    style: Style,
    algorithm: Algorithm,
    digest: &Digest,
    name: Option<&[u8]>,
    ending: Ending,
) {
    let escaped = name.is_some_and(|name| Name::listed(name).escaped_in(ending))
        && matches!(style, Style::Tagged | Style::Untagged);
    if escaped {
        out.push(b'\\');
    }
    let hex = digest.to_hex();
    match style {
        Style::Tagged => {
            let tag = Tag {
                algorithm,
                digest_size: digest.as_bytes().len(),
            };
            tag.push(out);
            if let Some(name) = name {
                out.extend_from_slice(b" (");
                Name::listed(name).push_printed(out, escaped);
                out.push(b')');
            }
            out.extend_from_slice(b" = ");
            out.extend_from_slice(hex.as_bytes());
        }
        Style::Untagged => {
            out.extend_from_slice(hex.as_bytes());
            out.extend_from_slice(b"  ");
            Name::listed(name.unwrap_or(b"-")).push_printed(out, escaped);
        }
        Style::Bare => out.extend_from_slice(hex.as_bytes()),
        Style::Raw => {
            out.extend_from_slice(digest.as_bytes());
            return;
        }
    }
    ending.push(out);
}

/// A file to verify, and the checksum it should have.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The algorithm of the tag, or the one given to [`parse_entry`] for a
    /// GNU-style line.
    pub algorithm: Algorithm,
    /// The file name, unescaped: the bytes of the path.
    pub name: Vec<u8>,
    /// The listed checksum; its length is the digest size. `==` with a
    /// computed [`Digest`] compares in constant time.
    pub expected: Digest,
    /// Whether the line is tagged (`BLAKE2b-N (NAME) = HEX`), not GNU-style.
    pub tagged: bool,
}

/// Parses a checksum line naming a file (without its line ending), by the
/// grammar of the module documentation; `None` for anything else.
/// `untagged_algorithm` is the algorithm of GNU-style `HEX  NAME` lines
/// (`-a`). A pure function of its input: it never panics, whatever the
/// bytes. (How every line of a list is told apart is the `list` module's.)
///
/// ```
/// use bt2sum::format::Ending;
/// use bt2sum::format::checksum::{Style, parse_entry, push_line};
/// use bt2sum::{Algorithm, TreeParams, hash};
///
/// let tree = TreeParams::default();
/// let digest = hash(&tree, b"hello s3git\n");
/// let mut line = Vec::new();
/// let name = Some(&b"hello.txt"[..]);
/// push_line(&mut line, Style::Tagged, Algorithm::Blake2b, &digest, name, Ending::Newline);
/// assert!(line.starts_with(b"BLAKE2b-64 (hello.txt) = 18e622875a89cede"));
///
/// // What is written reads back.
/// let entry = parse_entry(line.strip_suffix(b"\n").unwrap(), Algorithm::Blake2b).unwrap();
/// assert_eq!(entry.name, b"hello.txt");
/// assert!(entry.expected == digest);
/// assert!(parse_entry(b" BLAKE2b-64 (x) = 00", Algorithm::Blake2b).is_none());
/// ```
pub fn parse_entry(line: &[u8], untagged_algorithm: Algorithm) -> Option<Entry> {
    let (escaped, body) = match line.strip_prefix(b"\\") {
        Some(body) => (true, body),
        None => (false, line),
    };
    // No GNU-style line starts with `BLAKE2`: its hex would end at the `L`.
    let tagged = body.starts_with(b"BLAKE2");
    let (algorithm, expected, written_name) = if tagged {
        parse_tagged(body)?
    } else {
        parse_untagged(body, untagged_algorithm)?
    };
    let name = read_back(written_name, escaped)?;
    Some(Entry {
        algorithm,
        name,
        expected,
        tagged,
    })
}

/// The checksum of a nameless tagged line, `BLAKE2b-N = HEX`: what hashing
/// standard input prints when no FILE is given (with or without its
/// `\n`); `None` for any other line.
///
/// ```
/// use bt2sum::format::checksum::parse_nameless;
/// let line = format!("BLAKE2s-2 = {}\n", "ab".repeat(2));
/// assert!(parse_nameless(line.as_bytes()).is_some());
/// assert!(parse_nameless(b"BLAKE2s-2 (x) = abab").is_none());
/// ```
pub fn parse_nameless(line: &[u8]) -> Option<(Algorithm, Digest)> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (tag, rest) = Tag::parse(line)?;
    let hex = rest.strip_prefix(b" = ")?;
    if hex.len() != 2 * tag.digest_size {
        return None;
    }
    Some((tag.algorithm, decode_hex(hex)?))
}

/// `BLAKE2b-N (NAME) = HEX`: the algorithm, the digest and the written name.
fn parse_tagged(body: &[u8]) -> Option<(Algorithm, Digest, &[u8])> {
    let (tag, rest) = Tag::parse(body)?;
    let rest = rest.strip_prefix(b" (")?;
    let split = rest.windows(4).rposition(|window| window == b") = ")?;
    let (name, hex) = (&rest[..split], &rest[split + 4..]);
    if hex.len() != 2 * tag.digest_size {
        return None;
    }
    Some((tag.algorithm, decode_hex(hex)?, name))
}

/// `HEX  NAME` or `HEX *NAME`: the digest and the written name.
fn parse_untagged(body: &[u8], algorithm: Algorithm) -> Option<(Algorithm, Digest, &[u8])> {
    let hex_len = body.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let (hex, rest) = body.split_at(hex_len);
    let name = rest
        .strip_prefix(b"  ")
        .or_else(|| rest.strip_prefix(b" *"))?;
    if hex_len % 2 != 0 || hex_len / 2 > algorithm.max_digest_size() {
        return None;
    }
    Some((algorithm, decode_hex(hex)?, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_lines_read_back() {
        let names: [&[u8]; 9] = [
            b"a",
            b"a b",
            b"(x) = ff",
            b"x) = ",
            b"back\\slash",
            b"new\nline",
            b"carriage\rreturn",
            b"\\\n\r\\",
            b"\xff\x00\x80",
        ];
        let mut checked = 0;
        for algorithm in Algorithm::ALL {
            for size in 1..=algorithm.max_digest_size() {
                let bytes: Vec<u8> = (0..size as u8).map(|i| i.wrapping_mul(37)).collect();
                let digest = Digest::from_slice(&bytes).unwrap();
                for name in names {
                    for (style, tagged) in [(Style::Tagged, true), (Style::Untagged, false)] {
                        let mut line = Vec::new();
                        push_line(
                            &mut line,
                            style,
                            algorithm,
                            &digest,
                            Some(name),
                            Ending::Newline,
                        );
                        let line = line.strip_suffix(b"\n").unwrap();
                        let Some(entry) = parse_entry(line, algorithm) else {
                            panic!("{:?} does not read back", line.escape_ascii().to_string());
                        };
                        assert_eq!(entry.algorithm, algorithm);
                        assert_eq!(entry.expected.as_bytes().len(), size);
                        assert_eq!(entry.name, name);
                        assert_eq!(entry.tagged, tagged);
                        assert!(entry.expected == digest);
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, (64 + 32) * 9 * 2);
    }
}
