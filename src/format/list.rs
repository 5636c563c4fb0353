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

use super::checksum::Entry;
use super::leaf::{LeafLine, LeafLineError, parse_leaf_line};
use super::name::read_back;
use super::stat::{StatLine, is_stat_line, parse_stat_line};
use super::{Tag, canonical, decode_hex, name_and_digest, prefixed, split};
use crate::digest::Digest;
use crate::params::Algorithm;

/// The options of check mode that change how a line reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grammar {
    /// The algorithm of GNU-style `HEX  NAME` lines (`-a`).
    pub untagged_algorithm: Algorithm,
    /// Only digests of this many bytes are read (`-s N` with `-c`).
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
    #[allow(missing_docs)]
    Nameless {
        algorithm: Algorithm,
        expected: Digest,
    },
    /// A leaf or count line.
    Leaf(LeafLine),
    #[allow(missing_docs)]
    Stat(StatLine),
    /// Anything else.
    Improper(Improper),
}

/// Why a line is improperly formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Improper {
    /// A line no tool bt2sum knows of writes, one of bt2sum's of a digest
    /// size other than [`Grammar::digest_size`], or one longer than
    /// [`super::lines::MAX_LINE`] (never held whole).
    Junk,
    #[allow(missing_docs)]
    OtherTool(OtherTool),
    /// A malformed leaf or count line, and why: what `--combine` reports.
    LeafLine(LeafLineError),
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
    /// A GNU-style line whose digest has the size (`bytes`) of another
    /// `algorithm`'s (such as `BLAKE3 or SHA-256` for 32), and not the
    /// default size of `-a`'s.
    #[allow(missing_docs)]
    Sized {
        algorithm: &'static str,
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
    /// it is `-a`'s default size (what `bt2sum --untagged` writes): 64 hex
    /// digits are BLAKE3's or SHA-256's under `-a blake2b`, not `blake2s`.
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
    let first_field = super::after_tag(line).unwrap_or_default();
    let read = if first_field.starts_with(b"leaf=") || first_field.starts_with(b"leaves=") {
        parse_leaf_line(line).map_or_else(
            |why| ListLine::Improper(Improper::LeafLine(why)),
            ListLine::Leaf,
        )
    } else if is_stat_line(line) {
        parse_stat_line(line).map_or(junk, ListLine::Stat)
    } else if let Some(read) = parse_checksum(line, grammar.untagged_algorithm) {
        read
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
        Some(wanted) if size != wanted => ListLine::Improper(Improper::Junk),
        _ => read,
    }
}

/// Parses a checksum line (without its line ending): one naming a file
/// ([`ListLine::Checksum`]), or standard input's nameless `BLAKE2b-N = HEX`
/// ([`ListLine::Nameless`]); `None` for anything else. `untagged_algorithm`
/// is the algorithm of GNU-style lines (`-a`). It never panics, whatever
/// the bytes.
pub(super) fn parse_checksum(line: &[u8], untagged_algorithm: Algorithm) -> Option<ListLine> {
    let (escaped, body) = prefixed(line, b"\\");
    // No GNU-style line starts with `BLAKE2`: its hex would end at the `L`.
    let tagged = body.starts_with(b"BLAKE2");
    let (algorithm, expected, name) = if tagged {
        let (tag, rest) = Tag::parse(body)?;
        let (name, hex) = name_and_digest(rest, true)?;
        let expected = decode_hex(hex, tag.size)?;
        let Some(name) = name else {
            return (!escaped).then_some(ListLine::Nameless {
                algorithm: tag.algorithm,
                expected,
            });
        };
        (tag.algorithm, expected, name)
    } else {
        let hex_len = body.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        let (hex, rest) = body.split_at(hex_len);
        let name = rest
            .strip_prefix(b"  ")
            .or_else(|| rest.strip_prefix(b" *"))?;
        let size = Some(hex_len / 2).filter(|&size| size <= untagged_algorithm.max_digest_size());
        (untagged_algorithm, decode_hex(hex, size?)?, name)
    };
    let name = read_back(name, escaped).filter(|name| !name.is_empty())?;
    Some(ListLine::Checksum(Entry {
        algorithm,
        name,
        expected,
        tagged,
    }))
}

/// The tool whose tagged line this is (its `\` removed): GNU b2sum's tag or
/// one of [`TAGGED`], then BSD's ` (NAME) = ` or OpenSSL's `(NAME)= `, and a
/// digest in hex or base64.
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
    let Some(size) = tag.strip_prefix(b"BLAKE2b") else {
        let (known, _) = TAGGED.iter().find(|(known, _)| known.as_bytes() == tag)?;
        return Some(OtherTool::Tagged(known));
    };
    // GNU b2sum's `-N` is N in bits (none: 512), its digest in hex or base64.
    let bits = match size.strip_prefix(b"-") {
        Some(digits) => canonical(digits).unwrap_or(0),
        None if size.is_empty() => 512,
        None => return None,
    };
    let (hex, base64) = (bits / 4, (bits / 8).div_ceil(3) * 4);
    let sized = bits.is_multiple_of(8) && (8..=512).contains(&bits);
    (sized && [hex, base64].contains(&(digest.len() as u64))).then_some(OtherTool::GnuB2sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Algorithm = Algorithm::Blake2b;
    const S: Algorithm = Algorithm::Blake2s;

    /// A line as `ALGORITHM-SIZE (NAME)` (the name's bytes escaped, then the
    /// tool its size is like), `skip`, `nameless …`, `leaf …`, `stat …`,
    /// `bad`, or why else it is improper.
    fn describe(line: &[u8], untagged_algorithm: Algorithm, digest_size: Option<usize>) -> String {
        let grammar = Grammar {
            untagged_algorithm,
            digest_size,
        };
        match classify(line, &grammar) {
            ListLine::Skip => "skip".to_string(),
            ListLine::Improper(Improper::Junk | Improper::LeafLine(_)) => "bad".to_string(),
            ListLine::Improper(improper) => format!("{improper:?}"),
            ListLine::Leaf(leaf) => format!("leaf {:?}", leaf.leaf.map(|leaf| leaf.index)),
            ListLine::Stat(stat) => format!("stat {}", stat.size),
            ListLine::Nameless {
                algorithm,
                expected,
            } => {
                format!("nameless {} {expected}", algorithm.name())
            }
            ListLine::Checksum(entry) => {
                let size = entry.expected.as_bytes().len();
                let like = entry
                    .sized_like()
                    .map(|tool| format!(" like {}", tool.writer()));
                let (algorithm, name) = (entry.algorithm.name(), entry.name.escape_ascii());
                format!("{algorithm}-{size} ({name}){}", like.unwrap_or_default())
            }
        }
    }

    #[test]
    fn lines_are_told_apart() {
        #[rustfmt::skip]
        let table: [(&[u8], &str); 53] = [
            (b"BLAKE2b-1 (a) = ff", "BLAKE2b-1 (a)"),
            (b"BLAKE2b-2 (a) = 0A1B\r\n", "BLAKE2b-2 (a)"),
            (b"BLAKE2s-1 (a) = 00", "BLAKE2s-1 (a)"),
            (b"BLAKE2b-1 ( a ) = 01", "BLAKE2b-1 ( a )"),
            (b"BLAKE2b-1 (a) = b) = 01", "BLAKE2b-1 (a) = b)"),
            (b"BLAKE2b-1 (\xff#\r) = 01", "BLAKE2b-1 (\\xff#\\r)"),
            (b"\\BLAKE2b-1 (a\\\\b\\nc) = 01", "BLAKE2b-1 (a\\\\b\\nc)"),
            // GNU style, the algorithm from -a.
            (b"ff  a", "BLAKE2b-1 (a)"),
            (b"FF *a", "BLAKE2b-1 (a)"),
            (b"ff  *a", "BLAKE2b-1 (*a)"),
            (b"\\ff *a\\nb", "BLAKE2b-1 (a\\nb)"),
            (b"ff  BLAKE2b-1 (a) = ff", "BLAKE2b-1 (BLAKE2b-1 (a) = ff)"),
            // Standard input's, leaf, count and stat lines.
            (b"BLAKE2s-2 = ABCD\r\n", "nameless BLAKE2s abcd"),
            (b"BLAKE2b-1 leaf=0 offset=0 length=4 total=10 tree=4 (f) = ab", "leaf Some(0)"),
            (b"BLAKE2b-1 leaves=3 total=10 tree=4", "leaf None"),
            (b"BLAKE2b-1 size=10 mtime=5.000000000 tree=4 (f)", "stat 10"),
            (b"", "skip"),
            (b"\r\n", "skip"),
            (b"# BLAKE2b-1 (a) = ff", "skip"),
            // Strictly: no stray space, no missing part.
            (b" ", "bad"),
            (b"\r\r\n", "bad"),
            (b" ff  a", "bad"),
            (b" BLAKE2b-1 (a) = ff", "bad"),
            (b"ff a", "bad"),
            (b"ff  ", "bad"),
            (b"ff", "bad"),
            (b"fff  a", "bad"),
            (b"BLAKE2b-1  (a) = ff", "bad"),
            (b"BLAKE2b-1 (a)  = ff", "bad"),
            (b"BLAKE2b-1 (a) = ff ", "bad"),
            (b"BLAKE2b-1 () = ff", "bad"),
            (b"BLAKE2b-2 (a) = ff", "bad"),
            // Escapes.
            (b"\\#ff  a", "bad"),
            (b"\\BLAKE2b-1 = ff", "bad"),
            (b"\\BLAKE2b-1 (a\\tb) = ff", "bad"),
            // Malformed lines of bt2sum's other kinds.
            (b"BLAKE2b-1 leaf=9 offset=0 length=4 total=10 tree=4 (f) = ab", "bad"),
            (b"BLAKE2b-1 size=10 mtime=5 tree=4 (f)", "bad"),
            (b"BLAKE2b-64 size=01 mtime=1.000000000 tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 tree=5242880 mtime=1.000000000 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.000000000 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.000000000 tree=0 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.000000000 tree=5242880 ()", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.000000000 tree=5242880 (f", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.000000000 tree=5242880 x", "bad"),
            (b"\\BLAKE2b-64 size=1 mtime=1.000000000 tree=5242880", "bad"),
            (b"\\BLAKE2b-64 size=1 mtime=1.000000000 tree=5242880 (a\\tb)", "bad"),
            // Times as stat lines never write them.
            (b"BLAKE2b-64 size=1 mtime=1 tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.00000000 tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=01.000000000 tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=-0.000000000 tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=+1.000000000 tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=1.00000000x tree=5242880 (f)", "bad"),
            (b"BLAKE2b-64 size=1 mtime=99999999999999999999.000000000 tree=5242880 (f)", "bad"),
        ];
        for (line, expected) in table {
            let described = describe(line, B, None);
            assert_eq!(described, expected, "{}", line.escape_ascii());
        }
    }

    #[test]
    fn other_tools_and_other_sizes_are_named() {
        let hex = |bytes: usize| "a1".repeat(bytes);
        let (gnu, bad) = ("OtherTool(GnuB2sum)", "bad");
        #[rustfmt::skip]
        let table = [
            (format!("BLAKE2b (f) = {}", hex(64)), B, None, gnu),
            (format!("BLAKE2b-256 (f) = {}", hex(32)), B, None, gnu),
            // A size in bits that bt2sum's tag would read as bytes.
            (format!("BLAKE2b-32 (f) = {}", hex(4)), B, None, gnu),
            (format!("\\BLAKE2b-128 (a\\nb) = {}", hex(16)), B, None, gnu),
            (format!("BLAKE2b (f) = {}==", "Q".repeat(86)), B, None, gnu),
            (format!("BLAKE2b-100 (f) = {}", "a".repeat(25)), B, None, bad),
            (format!("BLAKE2b-520 (f) = {}", hex(65)), B, None, bad),
            (format!("BLAKE2b-256 (f) = {}", hex(31)), B, None, bad),
            (format!("BLAKE2b-0256 (f) = {}", hex(32)), B, None, bad),
            (format!("SHA256 (f) = {}", hex(32)), B, None, "OtherTool(Tagged(\"SHA256\"))"),
            (format!("BLAKE2B-512(f)= {}", hex(64)), B, None, "OtherTool(Tagged(\"BLAKE2B-512\"))"),
            (format!("BLAKE2s-256 (f) = {}", hex(32)), B, None, bad),
            (format!("WHATEVER (f) = {}", hex(32)), B, None, bad),
            (format!("SHA256 f = {}", hex(32)), B, None, bad),
            (format!("SHA256 (f) = {} x", hex(32)), B, None, bad),
            ("SHA256 (f) = ".to_string(), B, None, bad),
            // GNU-style lines are bt2sum's, of sizes -a allows; a size
            // other than -a's default may be another algorithm's.
            (format!("{}  f", hex(64)), B, None, "BLAKE2b-64 (f)"),
            (format!("{}  f", hex(64)), S, None, bad),
            (format!("{}  f", hex(32)), S, None, "BLAKE2s-32 (f)"),
            (format!("{}  f", hex(32)), B, None, "BLAKE2b-32 (f) like b3sum or sha256sum"),
            (format!("{}  f", hex(16)), S, None, "BLAKE2s-16 (f) like md5sum"),
            (format!("{}  f", hex(33)), B, None, "BLAKE2b-33 (f)"),
            (format!("BLAKE2b-32 (f) = {}", hex(32)), B, None, "BLAKE2b-32 (f)"),
            // A digest size asked for refuses the others.
            ("BLAKE2b-2 (f) = abcd".to_string(), B, Some(2), "BLAKE2b-2 (f)"),
            ("abcd  f".to_string(), B, Some(2), "BLAKE2b-2 (f)"),
            ("BLAKE2b-3 (f) = abcdef".to_string(), B, Some(2), bad),
            ("BLAKE2s-1 = ab".to_string(), B, Some(2), bad),
            ("BLAKE2b-1 leaves=3 total=10 tree=4".to_string(), B, Some(2), bad),
            ("BLAKE2b-1 size=10 mtime=5.000000000 tree=4 (f)".to_string(), B, Some(2), bad),
        ];
        for (line, algorithm, digest_size, expected) in table {
            let described = describe(line.as_bytes(), algorithm, digest_size);
            assert_eq!(described, expected, "{line}");
        }
        assert_eq!(OtherTool::GnuB2sum.writer(), "GNU b2sum --tag");
        assert_eq!(OtherTool::Tagged("X").writer(), "another tool");
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
            state as usize
        };
        let grammar = Grammar {
            untagged_algorithm: S,
            digest_size: Some(4),
        };
        for _ in 0..20_000 {
            let line: Vec<u8> = (0..next() % 48)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect();
            for grammar in [Grammar::default(), grammar] {
                if let ListLine::Checksum(entry) = classify(&line, &grammar) {
                    let size = entry.expected.as_bytes().len();
                    assert!((1..=entry.algorithm.max_digest_size()).contains(&size));
                    assert!(!entry.name.is_empty());
                }
            }
        }
    }
}
