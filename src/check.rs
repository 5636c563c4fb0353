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
