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
//! Read lines (what check mode accepts, see [`parse_line`]):
//!
//! ```text
//! BLAKE2b-N (NAME) = HEX      N in bytes, 1..=64; HEX exactly 2N hex digits
//! BLAKE2s-N (NAME) = HEX      N in bytes, 1..=32
//! HEX  NAME                   GNU style; the algorithm comes from `-a`,
//! HEX *NAME                   the size is half the number of hex digits
//! ```
//!
//! Each form may carry the leading `\` escape (then only `\\`, `\n` and
//! `\r` may appear in the name), and may end in CRLF. HEX is all lowercase or
//! all uppercase. Blank lines and lines starting with `#` are skipped; leaf
//! lines (see [`super::leaf`]) are read as such. Anything else is improperly
//! formatted, strictly: no leading spaces, no single-space separator, no
//! tagged line without a name (`BLAKE2b-64 = HEX` names standard input,
//! which a list cannot mean), no GNU `--tag` lines (`BLAKE2b (NAME) =`,
//! `BLAKE2b-512 (NAME) =`, whose number counts bits). The writer's lines
//! always read back as written: a tagged name may hold `) = `, because the
//! hex is the fixed-length tail after the last `) = `.

use super::leaf::{LeafLine, is_leaf_line, parse_leaf_line};
use super::{Ending, Tag, decode_hex, push_name, unescape};
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
    let escaped = name.is_some_and(|name| ending.escapes(name))
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
                push_name(out, name, escaped);
                out.push(b')');
            }
            out.extend_from_slice(b" = ");
            out.extend_from_slice(hex.as_bytes());
        }
        Style::Untagged => {
            out.extend_from_slice(hex.as_bytes());
            out.extend_from_slice(b"  ");
            push_name(out, name.unwrap_or(b"-"), escaped);
        }
        Style::Bare => out.extend_from_slice(hex.as_bytes()),
        Style::Raw => {
            out.extend_from_slice(digest.as_bytes());
            return;
        }
    }
    ending.push(out);
}

/// One line of a checksum list, as check mode reads it.
#[derive(Clone, Debug)]
pub enum Line {
    /// A blank line or a `#` comment: skipped, never counted.
    Skip,
    /// A file to verify.
    Entry(Entry),
    /// A leaf line of a listing (see [`super::leaf`]), naming a file: one
    /// leaf to verify, or how long the file is.
    Leaf(LeafLine),
    /// Anything else, a malformed leaf line included: an improperly
    /// formatted line.
    Bad,
}

/// A file to verify, and the checksum it should have.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The algorithm of the tag, or the one given to [`parse_line`] for a
    /// GNU-style line.
    pub algorithm: Algorithm,
    /// The file name, unescaped: the bytes of the path.
    pub name: Vec<u8>,
    /// The listed checksum; its length is the digest size. `==` with a
    /// computed [`Digest`] compares in constant time.
    pub expected: Digest,
}

/// Parses one line of a checksum list (with or without its `\n`), by the
/// grammar of the module documentation. `untagged_algorithm` is the algorithm
/// of GNU-style `HEX  NAME` lines (`-a`). A pure function of its input: it
/// never fails or panics, whatever the bytes; what it cannot read is
/// [`Line::Bad`].
///
/// ```
/// use bt2sum::format::Ending;
/// use bt2sum::format::checksum::{Line, Style, parse_line, push_line};
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
/// let Line::Entry(entry) = parse_line(&line, Algorithm::Blake2b) else {
///     panic!("a checksum line");
/// };
/// assert_eq!(entry.name, b"hello.txt");
/// assert!(entry.expected == digest);
/// assert!(matches!(parse_line(b"# a comment", Algorithm::Blake2b), Line::Skip));
/// assert!(matches!(parse_line(b" BLAKE2b-64 (x) = 00", Algorithm::Blake2b), Line::Bad));
/// ```
pub fn parse_line(line: &[u8], untagged_algorithm: Algorithm) -> Line {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() || line[0] == b'#' {
        return Line::Skip;
    }
    if is_leaf_line(line) {
        // (A nameless one, of standard input, is the reader's to place.)
        return match parse_leaf_line(line) {
            Ok(leaf) => Line::Leaf(leaf),
            Err(_) => Line::Bad,
        };
    }
    let (escaped, body) = match line.strip_prefix(b"\\") {
        Some(body) => (true, body),
        None => (false, line),
    };
    // No GNU-style line starts with `BLAKE2`: its hex would end at the `L`.
    let parsed = if body.starts_with(b"BLAKE2") {
        parse_tagged(body)
    } else {
        parse_untagged(body, untagged_algorithm)
    };
    let Some((algorithm, expected, written_name)) = parsed else {
        return Line::Bad;
    };
    let name = if escaped {
        match unescape(written_name) {
            Some(name) => name,
            None => return Line::Bad,
        }
    } else {
        written_name.to_vec()
    };
    if name.is_empty() {
        return Line::Bad;
    }
    Line::Entry(Entry {
        algorithm,
        name,
        expected,
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

    const B: Algorithm = Algorithm::Blake2b;
    const S: Algorithm = Algorithm::Blake2s;

    /// A line as `TAG SIZE NAME HEX` (name bytes escaped for reading), `skip`
    /// or `bad`, so that the tables read at a glance.
    fn describe(line: &Line) -> String {
        match line {
            Line::Skip => "skip".to_string(),
            Line::Bad => "bad".to_string(),
            Line::Leaf(leaf) => format!("leaf {:?}", leaf.leaf.as_ref().map(|leaf| leaf.index)),
            Line::Entry(entry) => format!(
                "{} {} {} {}",
                entry.algorithm.name(),
                entry.expected.as_bytes().len(),
                entry.name.escape_ascii(),
                entry.expected.to_hex()
            ),
        }
    }

    fn check_table(table: &[(&[u8], Algorithm, &str)]) {
        for &(line, untagged_algorithm, expected) in table {
            let parsed = parse_line(line, untagged_algorithm);
            assert_eq!(
                describe(&parsed),
                expected,
                "line {:?}",
                line.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn good_lines() {
        check_table(&[
            (b"BLAKE2b-1 (a) = ff", B, "BLAKE2b 1 a ff"),
            (b"BLAKE2b-1 (a) = ff\n", B, "BLAKE2b 1 a ff"),
            (b"BLAKE2b-1 (a) = ff\r\n", B, "BLAKE2b 1 a ff"),
            (b"BLAKE2b-1 (a) = FF", B, "BLAKE2b 1 a ff"),
            (b"BLAKE2b-2 (a) = 0a1B", B, "bad"),
            (b"BLAKE2b-2 (a) = 0A1B", B, "BLAKE2b 2 a 0a1b"),
            (b"BLAKE2b-2 (a) = 0123", B, "BLAKE2b 2 a 0123"),
            (b"BLAKE2s-1 (a) = 00", B, "BLAKE2s 1 a 00"),
            (b"BLAKE2s-1 (a) = 00", S, "BLAKE2s 1 a 00"),
            (b"BLAKE2b-1 (a) = 00", S, "BLAKE2b 1 a 00"),
            // Awkward names read back the way the writer meant them.
            (b"BLAKE2b-1 (a b) = 01", B, "BLAKE2b 1 a b 01"),
            (b"BLAKE2b-1 ( a ) = 01", B, "BLAKE2b 1  a  01"),
            (b"BLAKE2b-1 ((a)) = 01", B, "BLAKE2b 1 (a) 01"),
            (b"BLAKE2b-1 (a) = b) = 01", B, "BLAKE2b 1 a) = b 01"),
            (b"BLAKE2b-1 (x) = 01) = 01", B, "BLAKE2b 1 x) = 01 01"),
            (b"BLAKE2b-1 ()) = 01", B, "BLAKE2b 1 ) 01"),
            (b"BLAKE2b-1 (=) = 01", B, "BLAKE2b 1 = 01"),
            (b"BLAKE2b-1 (a\\b) = 01", B, "BLAKE2b 1 a\\\\b 01"),
            (b"BLAKE2b-1 (a\rb) = 01", B, "BLAKE2b 1 a\\rb 01"),
            (b"BLAKE2b-1 (\xff\xfe) = 01", B, "BLAKE2b 1 \\xff\\xfe 01"),
            (b"BLAKE2b-1 (#) = 01", B, "BLAKE2b 1 # 01"),
            // Escaped lines.
            (b"\\BLAKE2b-1 (a\\\\b) = 01", B, "BLAKE2b 1 a\\\\b 01"),
            (b"\\BLAKE2b-1 (a\\nb\\r) = 01", B, "BLAKE2b 1 a\\nb\\r 01"),
            (b"\\BLAKE2b-1 (plain) = 01", B, "BLAKE2b 1 plain 01"),
            (b"\\BLAKE2b-1 (a\\nb) = 01\r\n", B, "BLAKE2b 1 a\\nb 01"),
            // GNU style.
            (b"ff  a", B, "BLAKE2b 1 a ff"),
            (b"ff *a", B, "BLAKE2b 1 a ff"),
            (b"ff  *a", B, "BLAKE2b 1 *a ff"),
            (b"ff   a", B, "BLAKE2b 1  a ff"),
            (b"ff  a b", B, "BLAKE2b 1 a b ff"),
            (b"ff  a\r\n", B, "BLAKE2b 1 a ff"),
            (b"FF  a", S, "BLAKE2s 1 a ff"),
            (b"0123abcd  \xc3\x28", S, "BLAKE2s 4 \\xc3( 0123abcd"),
            (b"\\ff  a\\\\b", B, "BLAKE2b 1 a\\\\b ff"),
            (b"\\ff *a\\nb", B, "BLAKE2b 1 a\\nb ff"),
            (
                b"ff  BLAKE2b-1 (a) = ff",
                B,
                "BLAKE2b 1 BLAKE2b-1 (a) = ff ff",
            ),
        ]);
    }

    #[test]
    fn full_sizes() {
        let b64 = format!("BLAKE2b-64 (f) = {}", "ab".repeat(64));
        let s32 = format!("BLAKE2s-32 (f) = {}", "AB".repeat(32));
        let b33 = format!("BLAKE2b-33 (f) = {}", "00".repeat(33));
        let untagged_b64 = format!("{}  f", "cd".repeat(64));
        let untagged_32 = format!("{}  f", "cd".repeat(32));
        let untagged_33 = format!("{}  f", "cd".repeat(33));
        let s33 = format!("BLAKE2s-33 (f) = {}", "00".repeat(33));
        let b65 = format!("BLAKE2b-65 (f) = {}", "00".repeat(65));
        let untagged_65 = format!("{}  f", "00".repeat(65));
        let b64_short = format!("BLAKE2b-64 (f) = {}", "ab".repeat(63));
        let b64_long = format!("BLAKE2b-64 (f) = {}0", "ab".repeat(64));
        let b64_nameless = format!("BLAKE2b-64 = {}", "ab".repeat(64));
        check_table(&[
            (
                b64.as_bytes(),
                S,
                &format!("BLAKE2b 64 f {}", "ab".repeat(64)),
            ),
            (
                s32.as_bytes(),
                B,
                &format!("BLAKE2s 32 f {}", "ab".repeat(32)),
            ),
            (
                b33.as_bytes(),
                B,
                &format!("BLAKE2b 33 f {}", "00".repeat(33)),
            ),
            (
                untagged_b64.as_bytes(),
                B,
                &format!("BLAKE2b 64 f {}", "cd".repeat(64)),
            ),
            (untagged_b64.as_bytes(), S, "bad"),
            (
                untagged_32.as_bytes(),
                S,
                &format!("BLAKE2s 32 f {}", "cd".repeat(32)),
            ),
            (untagged_33.as_bytes(), S, "bad"),
            (
                untagged_33.as_bytes(),
                B,
                &format!("BLAKE2b 33 f {}", "cd".repeat(33)),
            ),
            (s33.as_bytes(), B, "bad"),
            (b65.as_bytes(), B, "bad"),
            (untagged_65.as_bytes(), B, "bad"),
            (b64_short.as_bytes(), B, "bad"),
            (b64_long.as_bytes(), B, "bad"),
            (b64_nameless.as_bytes(), B, "bad"),
        ]);
    }

    #[test]
    fn skipped_lines() {
        check_table(&[
            (b"", B, "skip"),
            (b"\n", B, "skip"),
            (b"\r\n", B, "skip"),
            (b"\r", B, "skip"),
            (b"#", B, "skip"),
            (b"# BLAKE2b-1 (a) = ff", B, "skip"),
            (b"#ff  a\n", B, "skip"),
        ]);
    }

    #[test]
    fn bad_lines() {
        check_table(&[
            // Whitespace and separators.
            (b" ", B, "bad"),
            (b"\t\n", B, "bad"),
            (b"\r\r\n", B, "bad"),
            (b" ff  a", B, "bad"),
            (b" BLAKE2b-1 (a) = ff", B, "bad"),
            (b"ff a", B, "bad"),
            (b"ff\ta", B, "bad"),
            (b"ff  ", B, "bad"),
            (b"ff *", B, "bad"),
            (b"ff", B, "bad"),
            (b"ff\n", B, "bad"),
            (b"ff*  a", B, "bad"),
            (b"  a", B, "bad"),
            (b"BLAKE2b-1  (a) = ff", B, "bad"),
            (b"BLAKE2b-1 (a)  = ff", B, "bad"),
            (b"BLAKE2b-1 (a) =  ff", B, "bad"),
            (b"BLAKE2b-1 (a) = ff ", B, "bad"),
            (b"BLAKE2b-1 (a) =ff", B, "bad"),
            (b"BLAKE2b-1(a) = ff", B, "bad"),
            (b"BLAKE2b-1 a = ff", B, "bad"),
            (b"BLAKE2b-1 (a = ff", B, "bad"),
            // Missing parts.
            (b"BLAKE2b-1 () = ff", B, "bad"),
            (b"BLAKE2b-1 (a) = ", B, "bad"),
            (b"BLAKE2b-1 (a) =", B, "bad"),
            (b"BLAKE2b-1 (a)", B, "bad"),
            (b"BLAKE2b-1 (", B, "bad"),
            (b"BLAKE2b-1", B, "bad"),
            (b"BLAKE2b-", B, "bad"),
            (b"BLAKE2b", B, "bad"),
            (b"BLAKE2", B, "bad"),
            (b"BLAKE2b-1 = ff", B, "bad"),
            (b"BLAKE2b- (a) = ff", B, "bad"),
            // Algorithms and sizes.
            (b"BLAKE2q-1 (a) = ff", B, "bad"),
            (b"BLAKE2B-1 (a) = ff", B, "bad"),
            (b"blake2b-1 (a) = ff", B, "bad"),
            (b"BLAKE2bp-1 (a) = ff", B, "bad"),
            (b"BLAKE2b-0 (a) = ", B, "bad"),
            (b"BLAKE2b-0 (a) = ff", B, "bad"),
            (b"BLAKE2b-01 (a) = ff", B, "bad"),
            (b"BLAKE2b-+1 (a) = ff", B, "bad"),
            (b"BLAKE2b--1 (a) = ff", B, "bad"),
            (b"BLAKE2b-1x (a) = ff", B, "bad"),
            (b"BLAKE2b-99999999999999999999999 (a) = ff", B, "bad"),
            // GNU b2sum --tag lines: no size, or the size in bits.
            (b"BLAKE2b (a) = ff", B, "bad"),
            (b"BLAKE2b-8 (a) = ff", B, "bad"),
            // Hex.
            (b"BLAKE2b-1 (a) = f", B, "bad"),
            (b"BLAKE2b-1 (a) = fff", B, "bad"),
            (b"BLAKE2b-1 (a) = fg", B, "bad"),
            (b"BLAKE2b-1 (a) = aB", B, "bad"),
            (b"BLAKE2b-2 (a) = ff", B, "bad"),
            (b"aB  a", B, "bad"),
            (b"fff  a", B, "bad"),
            (b"f  a", B, "bad"),
            (b"fg  a", B, "bad"),
            (b"0x12  a", B, "bad"),
            // Escapes.
            (b"\\", B, "bad"),
            (b"\\\n", B, "bad"),
            (b"\\ff  a\\", B, "bad"),
            (b"\\ff  a\\t", B, "bad"),
            (b"\\ff  a\\x41", B, "bad"),
            (b"\\BLAKE2b-1 (a\\0) = ff", B, "bad"),
            (b"\\\\ff  a", B, "bad"),
            (b"\\#ff  a", B, "bad"),
            (b"\\ ff  a", B, "bad"),
            // Binary.
            (b"\x00\x01\x02", B, "bad"),
            (b"\xff\xfe  a", B, "bad"),
            (b"ff\x00 a", B, "bad"),
        ]);
    }

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
        for algorithm in Algorithm::ALL {
            for size in 1..=algorithm.max_digest_size() {
                let bytes: Vec<u8> = (0..size as u8).map(|i| i.wrapping_mul(37)).collect();
                let digest = Digest::from_slice(&bytes).unwrap();
                for name in names {
                    for style in [Style::Tagged, Style::Untagged] {
                        let mut line = Vec::new();
                        push_line(
                            &mut line,
                            style,
                            algorithm,
                            &digest,
                            Some(name),
                            Ending::Newline,
                        );
                        let Line::Entry(entry) = parse_line(&line, algorithm) else {
                            panic!("{:?} does not read back", line.escape_ascii().to_string());
                        };
                        assert_eq!(entry.algorithm, algorithm);
                        assert_eq!(entry.expected.as_bytes().len(), size);
                        assert_eq!(entry.name, name);
                        assert!(entry.expected == digest);
                    }
                }
            }
        }
    }

    #[test]
    fn garbage_never_panics() {
        // A cheap deterministic generator over bytes that matter to the grammar.
        let alphabet = b"BLAKE2bs-0123456789abcdefABCDEF ()=*\\nr\r\n#\xff\x00";
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut line = Vec::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 48) as usize;
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                line.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            if let Line::Entry(entry) = parse_line(&line, Algorithm::Blake2s) {
                let size = entry.expected.as_bytes().len();
                assert!((1..=entry.algorithm.max_digest_size()).contains(&size));
                assert!(!entry.name.is_empty());
            }
        }
    }
}
