//! Checksum lines: written here, in each [`Style`]; read back, told apart
//! from the other lines of a list, by [`classify`](crate::format::list::classify).
//!
//! ```text
//! BLAKE2b-N (NAME) = HEX      tagged: N in bytes (BLAKE2s: 1..=32), HEX 2N digits
//! BLAKE2b-N = HEX             tagged, for standard input when no FILE is given
//! HEX  NAME                   untagged (`--untagged`), GNU style; read also as
//! HEX *NAME                   `HEX *NAME`, the algorithm from `-a`
//! ```
//!
//! A named line may start with the `\` of an escaped name. HEX is all
//! lowercase or all uppercase. Strictly, as b3sum: no leading spaces, no
//! single-space separator, no empty name.

use super::name::push_named;
use super::{Ending, Tag, push_tagged};
use crate::digest::Digest;
use crate::params::Algorithm;

/// How a checksum line is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// `BLAKE2b-64 (NAME) = HEX`, as the original tool prints.
    #[default]
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
    let hex = digest.to_hex();
    match style {
        Style::Tagged => {
            let size = digest.as_bytes().len();
            let head = Tag { algorithm, size }.to_string();
            push_tagged(out, &head, name, &format!(" = {hex}"), ending);
        }
        Style::Untagged => push_named(out, &[&hex, "  "], name.unwrap_or(b"-"), &[], ending),
        Style::Bare => push_named(out, &[&hex], b"", &[], ending),
        Style::Raw => out.extend_from_slice(digest.as_bytes()),
    }
}

/// A file to verify, and the checksum it should have.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The algorithm of the tag, or `-a`'s for a GNU-style line.
    pub algorithm: Algorithm,
    /// The file name, unescaped: the bytes of the path.
    pub name: Vec<u8>,
    /// The listed checksum; its length is the digest size. `==` with a
    /// computed [`Digest`] compares in constant time.
    pub expected: Digest,
    /// Whether the line is tagged (`BLAKE2b-N (NAME) = HEX`), not GNU-style.
    pub tagged: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::list::{ListLine, parse_checksum};

    /// A style, a name and an ending, and the line they make.
    type Case<'a> = (Style, Option<&'a [u8]>, Ending, &'a [u8]);

    #[test]
    fn lines_are_written_in_each_style() {
        let digest = Digest::from_slice(&[0xab, 0xcd]).unwrap();
        #[rustfmt::skip]
        let table: [Case; 7] = [
            (Style::Tagged, Some(b"f"), Ending::Newline, b"BLAKE2s-2 (f) = abcd\n"),
            (Style::Tagged, None, Ending::Newline, b"BLAKE2s-2 = abcd\n"),
            (Style::Tagged, Some(b"a\nb"), Ending::Nul, b"BLAKE2s-2 (a\nb) = abcd\0"),
            (Style::Untagged, Some(b"a\nb"), Ending::Newline, b"\\abcd  a\\nb\n"),
            (Style::Untagged, None, Ending::Newline, b"abcd  -\n"),
            (Style::Bare, Some(b"f"), Ending::Nul, b"abcd\0"),
            (Style::Raw, Some(b"f"), Ending::Newline, b"\xab\xcd"),
        ];
        for (style, name, ending, expected) in table {
            let mut line = Vec::new();
            push_line(&mut line, style, Algorithm::Blake2s, &digest, name, ending);
            assert_eq!(line, expected, "{style:?}");
        }
    }

    #[test]
    fn written_lines_read_back() {
        let names: [&[u8]; 5] = [b"a b", b"(x) = ff", b"x) = ", b"\\\n\r\\", b"\xff\x00"];
        let ending = Ending::Newline;
        for algorithm in Algorithm::ALL {
            for size in 1..=algorithm.max_digest_size() {
                let bytes: Vec<u8> = (0..size as u8).map(|i| i.wrapping_mul(37)).collect();
                let digest = Digest::from_slice(&bytes).unwrap();
                for name in names {
                    for style in [Style::Tagged, Style::Untagged] {
                        let mut line = Vec::new();
                        push_line(&mut line, style, algorithm, &digest, Some(name), ending);
                        let read = parse_checksum(line.strip_suffix(b"\n").unwrap(), algorithm);
                        let Some(ListLine::Checksum(entry)) = read else {
                            panic!("{line:?}")
                        };
                        assert_eq!((entry.algorithm, &entry.name[..]), (algorithm, name));
                        assert_eq!(entry.tagged, style == Style::Tagged);
                        assert!(entry.expected == digest);
                    }
                }
            }
        }
    }
}
