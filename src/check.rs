//! The checksum-line grammar, both directions in one place, and the tally of
//! a check run.
//!
//! Written lines (what hashing prints):
//!
//! ```text
//! BLAKE2b-64 (NAME) = HEX     tagged, for a named input
//! BLAKE2b-64 = HEX            tagged, for standard input when no FILE is given
//! HEX  NAME                   untagged (`--untagged`), GNU style
//! ```
//!
//! The number after the dash is the digest size in bytes. A name holding a
//! newline, carriage return or backslash is escaped the GNU way: the line
//! starts with `\`, and in the name `\` becomes `\\`, newline `\n` and
//! carriage return `\r`. Names are bytes; non-UTF-8 names pass through.
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
//! all uppercase. Blank lines and lines starting with `#` are skipped. Anything
//! else is improperly formatted, strictly: no leading spaces, no single-space
//! separator, no tagged line without a name (`BLAKE2b-64 = HEX` names standard
//! input, which a list cannot mean), no GNU `--tag` lines (`BLAKE2b (NAME) =`,
//! `BLAKE2b-512 (NAME) =`, whose number counts bits). The writer's lines
//! always read back as written: a tagged name may hold `) = `, because the
//! hex is the fixed-length tail after the last `) = `.
//!
//! What check mode prints per listed file ([`push_verdict`]) shows the name
//! the way the writer does: escaped, after a leading `\`, when it holds a
//! newline, carriage return or backslash.

use crate::tree::{Algorithm, Digest};

/// Whether a name needs the GNU escape (and its line the leading `\`).
pub fn needs_escape(name: &[u8]) -> bool {
    name.iter().any(|&b| matches!(b, b'\\' | b'\n' | b'\r'))
}

/// Appends `name` to `out`, escaped if `escaped` is set.
pub fn push_name(out: &mut Vec<u8>, name: &[u8], escaped: bool) {
    if !escaped {
        out.extend_from_slice(name);
        return;
    }
    for &byte in name {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(byte),
        }
    }
}

/// How a checksum line is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `BLAKE2b-64 (NAME) = HEX`, as the original tool prints.
    Tagged,
    /// `HEX  NAME`, as GNU `b2sum` prints.
    Untagged,
}

/// Appends one checksum line, newline included, to `out`. `name` is `None`
/// for standard input read because no FILE was given.
pub fn push_line(
    out: &mut Vec<u8>,
    style: Style,
    algorithm: Algorithm,
    digest: &Digest,
    name: Option<&[u8]>,
) {
    let escaped = name.is_some_and(needs_escape);
    if escaped {
        out.push(b'\\');
    }
    let hex = digest.to_hex();
    match style {
        Style::Tagged => {
            out.extend_from_slice(algorithm.tag().as_bytes());
            out.extend_from_slice(format!("-{}", digest.as_bytes().len()).as_bytes());
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
    }
    out.push(b'\n');
}

/// One line of a checksum list, as check mode reads it.
#[derive(Clone, Debug)]
pub enum Line {
    /// A blank line, a `#` comment or a `--leaves` leaf line: skipped, never
    /// counted.
    Skip,
    /// A file to verify.
    Entry(Entry),
    /// Anything else: an improperly formatted line.
    Bad,
}

/// A file to verify, and the checksum it should have.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The algorithm of the tag, or the one given to [`parse_line`] for a
    /// GNU-style line.
    pub algorithm: Algorithm,
    /// The digest size in bytes, valid for `algorithm`.
    pub size: usize,
    /// The file name, unescaped: the bytes of the path.
    pub name: Vec<u8>,
    /// The listed digest, `size` bytes. Compare it with [`crate::ct::eq`].
    pub expected: Vec<u8>,
}

/// Parses one line of a checksum list (with or without its `\n`), by the
/// grammar of the module documentation. `untagged_algorithm` is the algorithm
/// of GNU-style `HEX  NAME` lines (`-a`). A pure function of its input: it
/// never fails or panics, whatever the bytes; what it cannot read is
/// [`Line::Bad`].
///
/// ```
/// use bt2sum::check::{Line, Style, parse_line, push_line};
/// use bt2sum::{Algorithm, TreeParams, ct, hash};
///
/// let tree = TreeParams::default();
/// let digest = hash(&tree, b"hello s3git\n");
/// let mut line = Vec::new();
/// push_line(&mut line, Style::Tagged, Algorithm::Blake2b, &digest, Some(b"hello.txt"));
/// assert!(line.starts_with(b"BLAKE2b-64 (hello.txt) = 18e622875a89cede"));
///
/// // What is written reads back.
/// let Line::Entry(entry) = parse_line(&line, Algorithm::Blake2b) else {
///     panic!("a checksum line");
/// };
/// assert_eq!(entry.name, b"hello.txt");
/// assert!(ct::eq(&entry.expected, digest.as_bytes()));
/// assert!(matches!(parse_line(b"# a comment", Algorithm::Blake2b), Line::Skip));
/// assert!(matches!(parse_line(b" BLAKE2b-64 (x) = 00", Algorithm::Blake2b), Line::Bad));
/// ```
pub fn parse_line(line: &[u8], untagged_algorithm: Algorithm) -> Line {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Leaf lines of a `--leaves` listing are not checksums; they are skipped
    // and never counted, even with --strict.
    if line.is_empty() || line[0] == b'#' || crate::leaves::is_leaf_line(line) {
        return Line::Skip;
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
        size: expected.len(),
        name,
        expected,
    })
}

/// `BLAKE2b-N (NAME) = HEX`: the algorithm, the digest and the written name.
fn parse_tagged(body: &[u8]) -> Option<(Algorithm, Vec<u8>, &[u8])> {
    let rest = body.strip_prefix(b"BLAKE2")?;
    let (algorithm, rest) = match rest.split_first()? {
        (b'b', rest) => (Algorithm::Blake2b, rest),
        (b's', rest) => (Algorithm::Blake2s, rest),
        _ => return None,
    };
    let rest = rest.strip_prefix(b"-")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let size = parse_digest_size(&rest[..digits], algorithm)?;
    let rest = rest[digits..].strip_prefix(b" (")?;
    let split = rest.windows(4).rposition(|window| window == b") = ")?;
    let (name, hex) = (&rest[..split], &rest[split + 4..]);
    if hex.len() != 2 * size {
        return None;
    }
    Some((algorithm, decode_hex(hex)?, name))
}

/// The `N` of a tag: a decimal number without leading zeros, in the
/// algorithm's range.
fn parse_digest_size(digits: &[u8], algorithm: Algorithm) -> Option<usize> {
    if digits.is_empty() || digits.len() > 2 || digits[0] == b'0' {
        return None;
    }
    let size = digits
        .iter()
        .fold(0, |size, digit| size * 10 + usize::from(digit - b'0'));
    (size <= algorithm.max_digest_size()).then_some(size)
}

/// `HEX  NAME` or `HEX *NAME`: the digest and the written name.
fn parse_untagged(body: &[u8], algorithm: Algorithm) -> Option<(Algorithm, Vec<u8>, &[u8])> {
    let hex_len = body.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let (hex, rest) = body.split_at(hex_len);
    let name = rest
        .strip_prefix(b"  ")
        .or_else(|| rest.strip_prefix(b" *"))?;
    let size = hex_len / 2;
    if hex_len % 2 != 0 || size == 0 || size > algorithm.max_digest_size() {
        return None;
    }
    Some((algorithm, decode_hex(hex)?, name))
}

/// Hex digits, all lowercase or all uppercase, to bytes.
fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    let lower = hex.iter().any(u8::is_ascii_lowercase);
    let upper = hex.iter().any(u8::is_ascii_uppercase);
    if lower && upper {
        return None;
    }
    hex::decode(hex).ok()
}

/// Undoes [`push_name`]'s escape; `None` for any escape but `\\`, `\n`, `\r`
/// (or a lone `\` at the end).
pub(crate) fn unescape(written: &[u8]) -> Option<Vec<u8>> {
    let mut name = Vec::with_capacity(written.len());
    let mut bytes = written.iter();
    while let Some(&byte) = bytes.next() {
        if byte != b'\\' {
            name.push(byte);
            continue;
        }
        name.push(match bytes.next()? {
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            _ => return None,
        });
    }
    Some(name)
}

/// What check mode found out about one listed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The computed checksum is the listed one.
    Ok,
    /// The computed checksum differs.
    Failed,
    /// The file could not be opened or read (or changed while read).
    Unreadable,
}

impl Verdict {
    /// The words after `NAME: `, as GNU prints them.
    pub const fn text(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Failed => "FAILED",
            Verdict::Unreadable => "FAILED open or read",
        }
    }
}

/// Appends a listed name as check mode shows it: escaped, after a leading
/// `\`, when it [`needs_escape`]; as it is otherwise.
pub fn push_shown_name(out: &mut Vec<u8>, name: &[u8]) {
    let escaped = needs_escape(name);
    if escaped {
        out.push(b'\\');
    }
    push_name(out, name, escaped);
}

/// Appends `NAME: OK`, `NAME: FAILED` or `NAME: FAILED open or read`, newline
/// included.
pub fn push_verdict(out: &mut Vec<u8>, name: &[u8], verdict: Verdict) {
    push_shown_name(out, name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(verdict.text().as_bytes());
    out.push(b'\n');
}

/// The counts of one checked list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Properly formatted lines (files checked, or skipped as missing).
    pub entries: u64,
    /// Improperly formatted lines (blank and `#` lines are not counted).
    pub improperly_formatted: u64,
    /// Files whose checksum matched.
    pub matched: u64,
    /// Files whose checksum did not match.
    pub mismatched: u64,
    /// Files that could not be opened or read.
    pub unreadable: u64,
}

impl Tally {
    /// Counts one verdict.
    pub fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Ok => self.matched += 1,
            Verdict::Failed => self.mismatched += 1,
            Verdict::Unreadable => self.unreadable += 1,
        }
    }

    /// GNU's summary warnings for the non-zero counts, in GNU's order and
    /// wording, each to follow `bt2sum: `.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut warn = |count: u64, one: &str, many: &str| match count {
            0 => {}
            1 => warnings.push(format!("WARNING: 1 {one}")),
            _ => warnings.push(format!("WARNING: {count} {many}")),
        };
        warn(
            self.improperly_formatted,
            "line is improperly formatted",
            "lines are improperly formatted",
        );
        warn(
            self.unreadable,
            "listed file could not be read",
            "listed files could not be read",
        );
        warn(
            self.mismatched,
            "computed checksum did NOT match",
            "computed checksums did NOT match",
        );
        warnings
    }

    /// Whether the list verifies: some file matched, none failed or was
    /// unreadable, and with `strict` no line was improperly formatted. (A
    /// list whose files were all skipped as missing verifies nothing, as in
    /// GNU.)
    pub fn passed(&self, strict: bool) -> bool {
        self.matched > 0
            && self.mismatched == 0
            && self.unreadable == 0
            && !(strict && self.improperly_formatted > 0)
    }
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
            Line::Entry(entry) => format!(
                "{} {} {} {}",
                entry.algorithm.tag(),
                entry.size,
                entry.name.escape_ascii(),
                hex::encode(&entry.expected)
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
            if let Line::Entry(entry) = parsed {
                assert_eq!(entry.expected.len(), entry.size);
            }
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
                let tree = crate::TreeParams::new(algorithm, size, 64).unwrap();
                let digest = crate::hash(&tree, b"abc");
                for name in names {
                    for style in [Style::Tagged, Style::Untagged] {
                        let mut line = Vec::new();
                        push_line(&mut line, style, algorithm, &digest, Some(name));
                        let Line::Entry(entry) = parse_line(&line, algorithm) else {
                            panic!("{:?} does not read back", line.escape_ascii().to_string());
                        };
                        assert_eq!(entry.algorithm, algorithm);
                        assert_eq!(entry.size, size);
                        assert_eq!(entry.name, name);
                        assert!(crate::ct::eq(&entry.expected, digest.as_bytes()));
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
                assert_eq!(entry.expected.len(), entry.size);
                assert!((1..=entry.algorithm.max_digest_size()).contains(&entry.size));
                assert!(!entry.name.is_empty());
            }
        }
    }

    #[test]
    fn verdict_lines() {
        let mut out = Vec::new();
        push_verdict(&mut out, b"a b", Verdict::Ok);
        push_verdict(&mut out, b"new\nline", Verdict::Failed);
        push_verdict(&mut out, b"back\\slash", Verdict::Unreadable);
        push_verdict(&mut out, b"cr\r", Verdict::Ok);
        push_verdict(&mut out, b"\xff", Verdict::Ok);
        assert_eq!(
            out,
            b"a b: OK\n\\new\\nline: FAILED\n\\back\\\\slash: FAILED open or read\n\
              \\cr\\r: OK\n\xff: OK\n"
        );
    }

    #[test]
    fn tally_warnings_and_verdicts() {
        let mut tally = Tally::default();
        assert!(tally.warnings().is_empty());
        assert!(!tally.passed(false));
        tally.entries = 1;
        tally.count(Verdict::Ok);
        assert!(tally.passed(true));
        tally.improperly_formatted = 1;
        assert!(tally.passed(false));
        assert!(!tally.passed(true));
        assert_eq!(
            tally.warnings(),
            ["WARNING: 1 line is improperly formatted"]
        );
        tally.improperly_formatted = 3;
        tally.count(Verdict::Failed);
        tally.count(Verdict::Unreadable);
        tally.count(Verdict::Unreadable);
        assert!(!tally.passed(false));
        assert_eq!(
            tally.warnings(),
            [
                "WARNING: 3 lines are improperly formatted",
                "WARNING: 2 listed files could not be read",
                "WARNING: 1 computed checksum did NOT match",
            ]
        );
        let one_each = Tally {
            entries: 2,
            improperly_formatted: 0,
            matched: 0,
            mismatched: 2,
            unreadable: 1,
        };
        assert_eq!(
            one_each.warnings(),
            [
                "WARNING: 1 listed file could not be read",
                "WARNING: 2 computed checksums did NOT match",
            ]
        );
    }
}
