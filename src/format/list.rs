//! The lines of a checksum list told apart ([`classify`]): bt2sum's
//! checksum, leaf, count and stat lines, blank lines and `#` comments
//! (skipped), and improperly formatted lines; of those, other tools' are
//! named by their shape ([`OtherTool`]):
//!
//! ```text
//! BLAKE2b (NAME) = HEX          GNU b2sum --tag: sequential BLAKE2b-512
//! BLAKE2b-256 (NAME) = HEX      GNU b2sum --tag -l 256: the size in bits
//! SHA256 (NAME) = HEX           sha256sum --tag, cksum, BSD's sha256
//! SHA256(NAME)= HEX             OpenSSL
//! ```
//!
//! A GNU-style line is bt2sum's whatever its tool, but the size of its
//! digest may show another ([`Entry::sized_like`]).

use super::checksum::{Entry, parse_entry, parse_nameless};
use super::leaf::{LeafLine, is_leaf_line, parse_leaf_line};
use super::stat::{StatLine, is_stat_line, parse_stat_line};
use super::{canonical, prefixed, split};
use crate::digest::Digest;
use crate::params::Algorithm;

/// The options of check mode that change how a line reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grammar {
    /// The algorithm of GNU-style `HEX  NAME` lines (`-a`).
    pub untagged_algorithm: Algorithm,
    /// Only digests of this many bytes are read (`-s N` with `-c`); a line
    /// of another size is improperly formatted. `None`: any size.
    pub digest_size: Option<usize>,
}

/// One line of a list, told apart.
#[derive(Clone, Debug)]
pub enum ListLine {
    /// A blank line or a `#` comment: skipped, never counted.
    Skip,
    /// A checksum line naming a file.
    Checksum(Entry),
    /// `BLAKE2b-64 = HEX`: the checksum line of standard input read because
    /// no FILE was given.
    Nameless {
        /// The algorithm of its tag.
        algorithm: Algorithm,
        /// The listed checksum.
        expected: Digest,
    },
    /// A leaf or count line of a listing.
    Leaf(LeafLine),
    /// The stat line that follows a checksum line.
    Stat(StatLine),
    /// Anything else.
    Improper(Improper),
}

/// Why a line is improperly formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Improper {
    /// A line no tool bt2sum knows of writes (a malformed leaf line
    /// included).
    Junk,
    /// A line of another tool.
    OtherTool(OtherTool),
    /// One of bt2sum's lines, of a digest size other than the one asked for
    /// ([`Grammar::digest_size`]): it holds this many bytes.
    OtherSize(usize),
    /// A line longer than [`super::lines::MAX_LINE`], never held whole.
    TooLong,
}

/// Another tool, as the shape of its lines shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OtherTool {
    /// GNU `b2sum --tag` (or `cksum -a blake2b`): `BLAKE2b (NAME) = `, or
    /// `BLAKE2b-N (NAME) = ` with N the size in bits, which bt2sum's tag
    /// counts in bytes. Its digests are sequential BLAKE2b.
    GnuB2sum,
    /// A tagged line of another algorithm: its tag, such as `SHA256`.
    Tagged(&'static str),
    /// A GNU-style line whose digest has the size of another algorithm's,
    /// and not the default size of `-a`'s.
    Sized {
        /// That algorithm, such as `BLAKE3 or SHA-256` for 32 bytes.
        algorithm: &'static str,
        /// The digest size, in bytes.
        bytes: usize,
    },
}

impl OtherTool {
    /// The tool that writes such lines, as a hint names it.
    pub fn writer(&self) -> &'static str {
        let known = match self {
            OtherTool::GnuB2sum => Some("GNU b2sum --tag"),
            OtherTool::Tagged(tag) => TAGGED.iter().find(|(known, _)| known == tag).map(|t| t.1),
            OtherTool::Sized { bytes, .. } => SIZES.iter().find(|s| s.0 == *bytes).map(|s| s.2),
        };
        known.unwrap_or("another tool")
    }
}

/// The tags of other tools' lines, and the tool that writes them. A tag
/// not here is junk, not named: a hint names only what it knows.
const TAGGED: [(&str, &str); 21] = [
    ("MD5", "md5sum --tag"),
    ("SHA1", "sha1sum --tag"),
    ("SHA224", "sha224sum --tag"),
    ("SHA256", "sha256sum --tag"),
    ("SHA384", "sha384sum --tag"),
    ("SHA512", "sha512sum --tag"),
    ("SHA3-224", "cksum -a sha3 --tag"),
    ("SHA3-256", "cksum -a sha3 --tag"),
    ("SHA3-384", "cksum -a sha3 --tag"),
    ("SHA3-512", "cksum -a sha3 --tag"),
    ("SHA2-224", "openssl dgst"),
    ("SHA2-256", "openssl dgst"),
    ("SHA2-384", "openssl dgst"),
    ("SHA2-512", "openssl dgst"),
    ("SHA512-224", "openssl dgst"),
    ("SHA512-256", "openssl dgst"),
    ("BLAKE2B-512", "openssl dgst"),
    ("BLAKE2S-256", "openssl dgst"),
    ("RIPEMD160", "openssl dgst"),
    ("BLAKE3", "b3sum --tag"),
    ("SM3", "cksum -a sm3"),
];

/// Digest sizes of other algorithms common in checksum lists: the size in
/// bytes, the algorithm, and the tools that write them.
const SIZES: [(usize, &str, &str); 5] = [
    (16, "MD5", "md5sum"),
    (20, "SHA-1", "sha1sum"),
    (28, "SHA-224", "sha224sum"),
    (32, "BLAKE3 or SHA-256", "b3sum or sha256sum"),
    (48, "SHA-384", "sha384sum"),
];

impl Entry {
    /// The other algorithm a GNU-style line's digest size points to, unless
    /// it is the default size of the line's algorithm (what `bt2sum
    /// --untagged` writes without `-s`): 64 hex digits under `-a blake2b`
    /// are a BLAKE3 or SHA-256 digest's size, under `-a blake2s` BLAKE2s's
    /// own. Tagged lines say what they are.
    pub fn sized_like(&self) -> Option<OtherTool> {
        let size = self.expected.as_bytes().len();
        if self.tagged || size == self.algorithm.max_digest_size() {
            return None;
        }
        let &(bytes, algorithm, _) = SIZES.iter().find(|(bytes, ..)| *bytes == size)?;
        Some(OtherTool::Sized { algorithm, bytes })
    }
}

/// Tells a line of a list apart (with or without its line ending). It
/// never panics, whatever the bytes.
pub fn classify(line: &[u8], grammar: &Grammar) -> ListLine {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() || line[0] == b'#' {
        return ListLine::Skip;
    }
    let junk = ListLine::Improper(Improper::Junk);
    let read = if is_leaf_line(line) {
        parse_leaf_line(line).map_or(junk, ListLine::Leaf)
    } else if is_stat_line(line) {
        parse_stat_line(line).map_or(junk, ListLine::Stat)
    } else if let Some(entry) = parse_entry(line, grammar.untagged_algorithm) {
        ListLine::Checksum(entry)
    } else if let Some((algorithm, expected)) = parse_nameless(line) {
        ListLine::Nameless {
            algorithm,
            expected,
        }
    } else {
        other_tool(prefixed(line, b"\\").1)
            .map_or(junk, |tool| ListLine::Improper(Improper::OtherTool(tool)))
    };
    let size = match &read {
        ListLine::Checksum(entry) => entry.expected.as_bytes().len(),
        ListLine::Nameless { expected, .. } => expected.as_bytes().len(),
        ListLine::Leaf(leaf) => leaf.tree.digest_size(),
        ListLine::Stat(stat) => stat.tree.digest_size(),
        ListLine::Skip | ListLine::Improper(_) => return read,
    };
    match grammar.digest_size {
        Some(wanted) if size != wanted => ListLine::Improper(Improper::OtherSize(size)),
        _ => read,
    }
}

/// The tool whose tagged line this is (its leading `\` removed), if it has
/// the shape of one: a tag of GNU b2sum's or one of [`TAGGED`], then
/// ` (NAME) = DIGEST` (BSD, GNU) or `(NAME)= DIGEST` (OpenSSL), the digest
/// in hex or base64.
fn other_tool(body: &[u8]) -> Option<OtherTool> {
    let tag_len = body
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
        .count();
    let (tag, rest) = body.split_at(tag_len);
    let rest = prefixed(rest, b" ").1.strip_prefix(b"(")?;
    let (_, digest) = split(rest, b") = ", true).or_else(|| split(rest, b")= ", true))?;
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    let unpadded = digest.iter().take_while(|b| base64(b)).count();
    if unpadded == 0 || digest[unpadded..].iter().any(|b| *b != b'=') {
        return None;
    }
    if let Some(size) = tag.strip_prefix(b"BLAKE2b") {
        return gnu_b2sum_size(size, digest.len()).then_some(OtherTool::GnuB2sum);
    }
    let (known, _) = TAGGED.iter().find(|(known, _)| known.as_bytes() == tag)?;
    Some(OtherTool::Tagged(known))
}

/// Whether what follows `BLAKE2b` in a tag, and a digest of `digest_len`
/// characters, are what GNU b2sum writes: no size (512 bits), or `-N` with
/// N bits, a multiple of 8 up to 512, the digest N/4 hex digits or its
/// base64 (`cksum --base64`).
fn gnu_b2sum_size(size: &[u8], digest_len: usize) -> bool {
    let bits = match size.strip_prefix(b"-") {
        Some(digits) => canonical(digits).unwrap_or(0),
        None if size.is_empty() => 512,
        None => return false,
    };
    let (hex, base64) = (bits / 4, (bits / 8).div_ceil(3) * 4);
    bits.is_multiple_of(8)
        && (8..=512).contains(&bits)
        && [hex, base64].contains(&(digest_len as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Algorithm = Algorithm::Blake2b;
    const S: Algorithm = Algorithm::Blake2s;

    /// A line as `TAG SIZE NAME HEX` (name bytes escaped for reading),
    /// `skip`, `nameless …`, `leaf …` or why it is improper, so that the
    /// tables read at a glance.
    fn describe(line: &ListLine) -> String {
        match line {
            ListLine::Skip => "skip".to_string(),
            ListLine::Improper(Improper::Junk) => "bad".to_string(),
            ListLine::Improper(Improper::TooLong) => "too long".to_string(),
            ListLine::Improper(Improper::OtherSize(size)) => format!("size {size}"),
            ListLine::Improper(Improper::OtherTool(tool)) => format!("tool {tool:?}"),
            ListLine::Leaf(leaf) => format!("leaf {:?}", leaf.leaf.as_ref().map(|leaf| leaf.index)),
            ListLine::Stat(stat) => format!("stat {} {}", stat.size, stat.mtime),
            ListLine::Nameless {
                algorithm,
                expected,
            } => format!("nameless {} {}", algorithm.name(), expected.to_hex()),
            ListLine::Checksum(entry) => format!(
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
            let grammar = Grammar {
                untagged_algorithm,
                digest_size: None,
            };
            let parsed = classify(line, &grammar);
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
            // Standard input's, and leaf lines.
            (b"BLAKE2s-1 = ab", B, "nameless BLAKE2s ab"),
            (b"BLAKE2b-2 = ABCD\r\n", B, "nameless BLAKE2b abcd"),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=4 total=10 tree=4 (f) = ab",
                B,
                "leaf Some(0)",
            ),
            (b"BLAKE2b-1 leaves=3 total=10 tree=4 (f)", B, "leaf None"),
            (b"BLAKE2b-1 leaves=3 total=10 tree=4", B, "leaf None"),
            (
                b"BLAKE2b-1 size=10 mtime=5.000000000 tree=4 (f)",
                B,
                "stat 10 5.000000000",
            ),
            (b"BLAKE2b-1 size=10 mtime=5 tree=4 (f)", B, "bad"),
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
            // No GNU tool writes a size that is not a multiple of 8 bits.
            (b65.as_bytes(), B, "bad"),
            (untagged_65.as_bytes(), B, "bad"),
            (b64_short.as_bytes(), B, "bad"),
            (b64_long.as_bytes(), B, "bad"),
            (
                b64_nameless.as_bytes(),
                B,
                &format!("nameless BLAKE2b {}", "ab".repeat(64)),
            ),
        ]);
    }

    #[test]
    fn other_tools_are_named_by_their_shape() {
        let hex = |bytes: usize| "a1".repeat(bytes);
        let lines: Vec<(String, Algorithm, &str)> = vec![
            // GNU b2sum --tag: no size, or the size in bits.
            (format!("BLAKE2b (f) = {}", hex(64)), B, "tool GnuB2sum"),
            (format!("BLAKE2b-256 (f) = {}", hex(32)), B, "tool GnuB2sum"),
            (format!("BLAKE2b-8 (f) = {}", hex(1)), B, "tool GnuB2sum"),
            // A size in bits that is also a byte count bt2sum has: the
            // digest's length tells.
            (format!("BLAKE2b-32 (f) = {}", hex(4)), B, "tool GnuB2sum"),
            (format!("BLAKE2b-64 (f) = {}", hex(8)), B, "tool GnuB2sum"),
            (
                format!("\\BLAKE2b-128 (a\\nb) = {}", hex(16)),
                B,
                "tool GnuB2sum",
            ),
            // cksum --base64: 64 bytes in 88 characters.
            (
                format!("BLAKE2b (f) = {}==", "Q".repeat(86)),
                B,
                "tool GnuB2sum",
            ),
            // Sizes no GNU tool writes, or a digest of the wrong length.
            (format!("BLAKE2b-65 (f) = {}", hex(65)), B, "bad"),
            (format!("BLAKE2b-100 (f) = {}", "a".repeat(25)), B, "bad"),
            (format!("BLAKE2b-520 (f) = {}", hex(65)), B, "bad"),
            (format!("BLAKE2b-256 (f) = {}", hex(31)), B, "bad"),
            (format!("BLAKE2b-0256 (f) = {}", hex(32)), B, "bad"),
            // Other algorithms' tags.
            (
                format!("SHA256 (f) = {}", hex(32)),
                B,
                "tool Tagged(\"SHA256\")",
            ),
            (
                format!("BLAKE3 (a b) = {}", hex(32)),
                B,
                "tool Tagged(\"BLAKE3\")",
            ),
            (format!("MD5 (f) = {}", hex(16)), S, "tool Tagged(\"MD5\")"),
            (
                format!("SHA3-256 (f) = {}", hex(32)),
                B,
                "tool Tagged(\"SHA3-256\")",
            ),
            (
                format!("BLAKE2B-512(f)= {}", hex(64)),
                B,
                "tool Tagged(\"BLAKE2B-512\")",
            ),
            (format!("WHATEVER (f) = {}", hex(32)), B, "bad"),
            (format!("SHA1(f)= {}", hex(20)), B, "tool Tagged(\"SHA1\")"),
            (format!("BLAKE2s-256 (f) = {}", hex(32)), B, "bad"),
            // Not a tagged line at all.
            (format!("SHA256 f = {}", hex(32)), B, "bad"),
            (format!("SHA256 (f) = {} x", hex(32)), B, "bad"),
            ("SHA256 (f) = ".to_string(), B, "bad"),
            (format!("256 (f) = {}", hex(32)), B, "bad"),
            (format!(" SHA256 (f) = {}", hex(32)), B, "bad"),
        ];
        for (line, algorithm, expected) in &lines {
            check_table(&[(line.as_bytes(), *algorithm, expected)]);
        }
        assert_eq!(lines.len(), 25);
    }

    #[test]
    fn sizes_of_other_algorithms_are_named_unless_the_default() {
        let entry = |hex_digits: usize, algorithm| {
            let line = format!("{}  f", "0".repeat(hex_digits));
            let grammar = Grammar {
                untagged_algorithm: algorithm,
                digest_size: None,
            };
            match classify(line.as_bytes(), &grammar) {
                ListLine::Checksum(entry) => entry.sized_like(),
                other => panic!("{}", describe(&other)),
            }
        };
        let sized = |algorithm, bytes| Some(OtherTool::Sized { algorithm, bytes });
        assert_eq!(entry(64, B), sized("BLAKE3 or SHA-256", 32));
        assert_eq!(entry(64, S), None);
        assert_eq!(entry(32, B), sized("MD5", 16));
        assert_eq!(entry(32, S), sized("MD5", 16));
        assert_eq!(entry(40, B), sized("SHA-1", 20));
        assert_eq!(entry(56, B), sized("SHA-224", 28));
        assert_eq!(entry(96, B), sized("SHA-384", 48));
        assert_eq!(entry(128, B), None);
        assert_eq!(entry(2, B), None);
        let tagged = format!("BLAKE2b-32 (f) = {}", "0".repeat(64));
        let ListLine::Checksum(entry) = classify(tagged.as_bytes(), &Grammar::default()) else {
            panic!("a checksum line");
        };
        assert_eq!(entry.sized_like(), None);
        assert_eq!(
            sized("BLAKE3 or SHA-256", 32).unwrap().writer(),
            "b3sum or sha256sum"
        );
        assert_eq!(OtherTool::Tagged("BLAKE3").writer(), "b3sum --tag");
        assert_eq!(OtherTool::GnuB2sum.writer(), "GNU b2sum --tag");
    }

    #[test]
    fn a_digest_size_asked_for_refuses_the_others() {
        let grammar = |size| Grammar {
            untagged_algorithm: B,
            digest_size: Some(size),
        };
        let table: [(&[u8], usize, &str); 7] = [
            (b"BLAKE2b-2 (f) = abcd", 2, "BLAKE2b 2 f abcd"),
            (b"BLAKE2b-2 (f) = abcd", 3, "size 2"),
            (b"abcd  f", 2, "BLAKE2b 2 f abcd"),
            (b"abcd  f", 64, "size 2"),
            (b"BLAKE2s-1 = ab", 2, "size 1"),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=4 total=10 tree=4 (f) = ab",
                2,
                "size 1",
            ),
            (b"junk", 2, "bad"),
        ];
        for (line, size, expected) in table {
            assert_eq!(describe(&classify(line, &grammar(size))), expected);
        }
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
            (b"\\BLAKE2b-1 = ff", B, "bad"),
            // Binary.
            (b"\x00\x01\x02", B, "bad"),
            (b"\xff\xfe  a", B, "bad"),
            (b"ff\x00 a", B, "bad"),
            // A leaf line that does not parse.
            (
                b"BLAKE2b-1 leaf=9 offset=0 length=4 total=10 tree=4 (f) = ab",
                B,
                "bad",
            ),
        ]);
    }

    #[test]
    fn garbage_never_panics() {
        // A cheap deterministic generator over bytes that matter to the grammar.
        let alphabet = b"BLAKE2bs3-0123456789abcdefABCDEF ()=*\\nr\r\n#\xff\x00SH+/";
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = (next() % 48) as usize;
            let line: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            for grammar in [
                Grammar::default(),
                Grammar {
                    untagged_algorithm: S,
                    digest_size: Some(4),
                },
            ] {
                if let ListLine::Checksum(entry) = classify(&line, &grammar) {
                    let size = entry.expected.as_bytes().len();
                    assert!((1..=entry.algorithm.max_digest_size()).contains(&size));
                    assert!(!entry.name.is_empty());
                }
            }
        }
    }
}
