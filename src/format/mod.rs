//! Every line grammar of bt2sum, both directions in one place: what hashing
//! writes and what check mode and `--combine` read back.
//!
//! - [`Tag`]: `BLAKE2b-64`, the algorithm and the digest size in bytes.
//! - [`checksum`]: `TAG (NAME) = HEX`, `TAG = HEX` and GNU's `HEX  NAME`.
//! - [`leaf`]: the leaf lines of a listing,
//!   `TAG leaf=I offset=O length=N total=T tree=L (NAME) = HEX`.
//! - [`list`]: every line of a checksum list told apart: bt2sum's, another
//!   tool's (named by its shape), a comment, or junk; [`lines`] reads them
//!   with bounded memory.
//! - [`stat`]: the stat line after a checksum line, `TAG size=N mtime=S.NS
//!   tree=L (NAME)`, which tells an edit from damage.
//! - [`verdict`]: what check mode prints per checked line, `NAME: OK`.
//!
//! Names are bytes (non-UTF-8 names pass through) and are escaped the GNU
//! way when they hold a newline, carriage return or backslash: the line
//! starts with `\`, and in the name `\` is written `\\`, newline `\n`,
//! carriage return `\r` ([`push_name`], [`unescape`]). Verdicts and
//! messages show the other control bytes escaped too, as `\xHH`
//! ([`push_shown`]), so that a name cannot act on a terminal.

pub mod checksum;
pub mod leaf;
pub mod lines;
pub mod list;
pub mod stat;
pub mod verdict;

use std::fmt;

use crate::digest::Digest;
use crate::params::{Algorithm, TreeParams};

/// The bytes a name's escape covers. Both sets write a backslash `\\`,
/// newline `\n` and carriage return `\r`; the shown set also writes every
/// other control byte as `\xHH`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    /// GNU's, in the lines bt2sum writes and reads back: backslash, newline
    /// and carriage return.
    Listed,
    /// In verdicts and messages: a backslash and every control byte (C0 and
    /// DEL), which a terminal would act on.
    Shown,
}

impl Escapes {
    fn covers(self, byte: u8) -> bool {
        match self {
            Escapes::Listed => matches!(byte, b'\\' | b'\n' | b'\r'),
            Escapes::Shown => byte == b'\\' || byte < 0x20 || byte == 0x7f,
        }
    }

    fn needed_by(self, name: &[u8]) -> bool {
        name.iter().any(|&byte| self.covers(byte))
    }

    fn push(self, out: &mut Vec<u8>, name: &[u8]) {
        for &byte in name {
            match byte {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                byte if self.covers(byte) => {
                    out.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
                }
                _ => out.push(byte),
            }
        }
    }
}

/// Whether a name needs the GNU escape (and its line the leading `\`).
pub fn needs_escape(name: &[u8]) -> bool {
    Escapes::Listed.needed_by(name)
}

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
    /// Whether `name` is escaped in lines that end this way.
    pub fn escapes(self, name: &[u8]) -> bool {
        self == Ending::Newline && needs_escape(name)
    }

    /// Ends a line.
    pub fn push(self, out: &mut Vec<u8>) {
        out.push(match self {
            Ending::Newline => b'\n',
            Ending::Nul => 0,
        });
    }
}

/// Appends `name` to `out`, escaped the GNU way if `escaped` is set.
pub fn push_name(out: &mut Vec<u8>, name: &[u8], escaped: bool) {
    if escaped {
        Escapes::Listed.push(out, name);
    } else {
        out.extend_from_slice(name);
    }
}

/// Undoes [`push_name`]'s escape; `None` for any escape but `\\`, `\n`, `\r`
/// (or a lone `\` at the end).
pub fn unescape(written: &[u8]) -> Option<Vec<u8>> {
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

/// Whether a name is shown escaped in verdicts and messages: it holds a
/// backslash or a control byte, so that a crafted name can neither move the
/// cursor nor hide a `FAILED` on a terminal.
pub fn needs_shown_escape(name: &[u8]) -> bool {
    Escapes::Shown.needed_by(name)
}

/// Appends `name` as verdicts and messages show it: if it
/// [`needs_shown_escape`], a backslash is written `\\`, newline `\n`,
/// carriage return `\r`, and any other control byte `\xHH` (two lowercase
/// hex digits); otherwise as it is.
pub fn push_shown(out: &mut Vec<u8>, name: &[u8]) {
    if needs_shown_escape(name) {
        Escapes::Shown.push(out, name);
    } else {
        out.extend_from_slice(name);
    }
}

/// A name as lines print it; `None` if it cannot be printed.
///
/// On Unix, the bytes it is. On Windows, where names are Unicode, its UTF-8
/// with every `\` written `/` (as b3sum prints them), so that lists made on
/// Windows verify on Unix and the reverse; a name that is not valid Unicode
/// cannot be printed as UTF-8.
pub fn printed_name(name: &std::ffi::OsStr) -> Option<std::borrow::Cow<'_, [u8]>> {
    use std::borrow::Cow;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Some(Cow::Borrowed(name.as_bytes()))
    }
    #[cfg(not(unix))]
    {
        let name = name.to_str()?;
        Some(if name.contains('\\') {
            Cow::Owned(name.replace('\\', "/").into_bytes())
        } else {
            Cow::Borrowed(name.as_bytes())
        })
    }
}

/// Bytes of a list as a message echoes them ([`push_shown`]), as text:
/// control bytes escaped, bytes that are not UTF-8 replaced.
pub fn shown(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    push_shown(&mut out, bytes);
    String::from_utf8_lossy(&out).into_owned()
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

    #[test]
    fn names_escape_and_unescape() {
        let table: [(&[u8], &[u8]); 5] = [
            (b"plain", b"plain"),
            (b"a\\b", b"a\\\\b"),
            (b"new\nline", b"new\\nline"),
            (b"cr\r", b"cr\\r"),
            (b"\\\n\r\\", b"\\\\\\n\\r\\\\"),
        ];
        for (name, written) in table {
            let mut out = Vec::new();
            push_name(&mut out, name, needs_escape(name));
            if needs_escape(name) {
                assert_eq!(out, written);
                assert_eq!(unescape(written).as_deref(), Some(name));
            } else {
                assert_eq!(out, name);
            }
        }
        for bad in [&b"\\"[..], b"a\\t", b"\\x41", b"a\\0"] {
            assert_eq!(unescape(bad), None, "{}", bad.escape_ascii());
        }
    }
}
