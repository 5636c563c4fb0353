//! Leaf lines: what `--leaves` prints after a file's checksum line, and what
//! `--combine` reads back.
//!
//! ```text
//! BLAKE2b-64 leaf=I offset=O length=N total=T tree=L (NAME) = HEX
//! BLAKE2b-64 leaves=0 total=0 tree=L (NAME)
//! ```
//!
//! The first form is leaf `I`; the second is the one line of an input with
//! no leaves (an empty file). The tag gives the algorithm and digest size as
//! in checksum lines; `O` and `N` are the leaf's bytes, `T` the input's
//! length (so that a listing's completeness can be checked: it has
//! `ceil(T / L)` leaves), `L` the leaf size, and HEX the leaf's digest in
//! lowercase. Names are escaped as in checksum lines. Check mode skips these
//! lines ([`is_leaf_line`]).

use std::fmt;

use super::checksum::decode_hex;
use super::{Tag, needs_escape, push_name, unescape};
use crate::digest::Digest;
use crate::params::{ParamsError, TreeParams};

/// Appends the listing line of leaf `index` of a `total`-byte input.
pub fn push_leaf_line(
    out: &mut Vec<u8>,
    tree: &TreeParams,
    name: &[u8],
    total: u64,
    index: u64,
    digest: &[u8],
) {
    let bytes = tree.leaf_bytes(index, total);
    push_head(out, tree, name);
    out.extend_from_slice(
        format!(
            " leaf={index} offset={} length={} total={total} tree={}",
            bytes.start,
            bytes.end - bytes.start,
            tree.leaf_size()
        )
        .as_bytes(),
    );
    push_tail(out, name);
    out.extend_from_slice(b" = ");
    out.extend_from_slice(hex::encode(digest).as_bytes());
    out.push(b'\n');
}

/// Appends the listing line of an input with no leaves (an empty file).
pub fn push_no_leaves_line(out: &mut Vec<u8>, tree: &TreeParams, name: &[u8]) {
    push_head(out, tree, name);
    out.extend_from_slice(format!(" leaves=0 total=0 tree={}", tree.leaf_size()).as_bytes());
    push_tail(out, name);
    out.push(b'\n');
}

fn push_head(out: &mut Vec<u8>, tree: &TreeParams, name: &[u8]) {
    if needs_escape(name) {
        out.push(b'\\');
    }
    Tag::of(tree).push(out);
}

fn push_tail(out: &mut Vec<u8>, name: &[u8]) {
    out.extend_from_slice(b" (");
    push_name(out, name, needs_escape(name));
    out.push(b')');
}

/// One parsed listing line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafLine {
    /// The tree parameters of the listing.
    pub tree: TreeParams,
    /// The file's name, unescaped.
    pub name: Vec<u8>,
    /// The file's length.
    pub total: u64,
    /// The leaf, with its digest; `None` on the line of an empty file.
    pub leaf: Option<Leaf>,
}

/// A leaf of a listing line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The leaf's index, from 0.
    pub index: u64,
    /// The leaf's digest.
    pub digest: Digest,
}

/// Whether a line (CR/LF already removed) is a listing line, well formed or
/// not: `BLAKE2…` and a first field of `leaf=` or `leaves=`. Check mode
/// skips these.
pub fn is_leaf_line(line: &[u8]) -> bool {
    let body = line.strip_prefix(b"\\").unwrap_or(line);
    let Some(rest) = body.strip_prefix(b"BLAKE2") else {
        return false;
    };
    let Some(space) = rest.iter().position(|&b| b == b' ') else {
        return false;
    };
    let after = &rest[space + 1..];
    after.starts_with(b"leaf=") || after.starts_with(b"leaves=")
}

/// Why a listing line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeafLineError {
    /// The line does not start with a tag bt2sum writes.
    Tag,
    /// No ` (NAME)` after the fields.
    NoName,
    /// A field that is not `KEY=NUMBER`, or a key given twice, or unknown.
    Field(String),
    /// A field the line must have is missing.
    Missing(&'static str),
    /// `leaves=` with a count other than 0.
    LeavesNotZero,
    /// `leaves=0` with a non-zero total.
    TotalNotZero,
    /// The digest size or leaf size is out of range.
    Params(ParamsError),
    /// No ` = HEX` after the name, or HEX is not 2N lowercase hex digits.
    Digest,
    /// A bad escape in an escaped name.
    Escape,
    /// The offset or length is not what the index, leaf size and total say.
    Inconsistent,
}

impl fmt::Display for LeafLineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("malformed leaf line: ")?;
        match self {
            LeafLineError::Tag => f.write_str("unknown tag"),
            LeafLineError::NoName => f.write_str("no name"),
            LeafLineError::Field(field) => write!(f, "bad field {field}"),
            LeafLineError::Missing(key) => write!(f, "no {key}="),
            LeafLineError::LeavesNotZero => f.write_str("leaves= other than 0"),
            LeafLineError::TotalNotZero => f.write_str("leaves=0 with a non-zero total"),
            LeafLineError::Params(error) => write!(f, "{error}"),
            LeafLineError::Digest => f.write_str("the digest is not 2N lowercase hex digits"),
            LeafLineError::Escape => f.write_str("bad escape in the name"),
            LeafLineError::Inconsistent => {
                f.write_str("offset or length do not match the leaf index, leaf size and total")
            }
        }
    }
}

impl std::error::Error for LeafLineError {}

/// The numbers of a leaf line's fields, each at most once.
#[derive(Default)]
struct Fields {
    leaf: Option<u64>,
    leaves: Option<u64>,
    offset: Option<u64>,
    length: Option<u64>,
    total: Option<u64>,
    tree: Option<u64>,
}

impl Fields {
    fn parse(text: &[u8]) -> Result<Fields, LeafLineError> {
        let mut fields = Fields::default();
        for field in text.split(|&b| b == b' ') {
            let bad = || LeafLineError::Field(String::from_utf8_lossy(field).into_owned());
            let at = field.iter().position(|&b| b == b'=').ok_or_else(bad)?;
            let (key, digits) = (&field[..at], &field[at + 1..]);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(bad());
            }
            let value = std::str::from_utf8(digits)
                .ok()
                .and_then(|digits| digits.parse().ok())
                .ok_or_else(bad)?;
            let slot = match key {
                b"leaf" => &mut fields.leaf,
                b"leaves" => &mut fields.leaves,
                b"offset" => &mut fields.offset,
                b"length" => &mut fields.length,
                b"total" => &mut fields.total,
                b"tree" => &mut fields.tree,
                _ => return Err(bad()),
            };
            if slot.replace(value).is_some() {
                return Err(bad());
            }
        }
        Ok(fields)
    }
}

/// Parses a listing line (without its line ending).
///
/// ```
/// use bt2sum::format::leaf::{parse_leaf_line, push_leaf_line};
/// use bt2sum::{Algorithm, TreeParams};
///
/// let tree = TreeParams::new(Algorithm::Blake2s, 4, 1024)?;
/// let mut line = Vec::new();
/// push_leaf_line(&mut line, &tree, b"f", 3000, 2, &[1, 2, 3, 4]);
/// assert_eq!(line, b"BLAKE2s-4 leaf=2 offset=2048 length=952 total=3000 tree=1024 (f) = 01020304\n");
/// let parsed = parse_leaf_line(&line[..line.len() - 1])?;
/// assert_eq!((parsed.tree, parsed.total, parsed.leaf.unwrap().index), (tree, 3000, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_leaf_line(line: &[u8]) -> Result<LeafLine, LeafLineError> {
    let (escaped, body) = match line.strip_prefix(b"\\") {
        Some(body) => (true, body),
        None => (false, line),
    };
    let (tag, rest) = Tag::parse(body).ok_or(LeafLineError::Tag)?;
    let rest = rest.strip_prefix(b" ").ok_or(LeafLineError::Tag)?;
    let open = rest
        .windows(2)
        .position(|pair| pair == b" (")
        .ok_or(LeafLineError::NoName)?;
    let fields = Fields::parse(&rest[..open])?;
    let rest = &rest[open + 2..];
    let total = fields.total.ok_or(LeafLineError::Missing("total"))?;
    let leaf_size = fields.tree.ok_or(LeafLineError::Missing("tree"))?;
    let tree = TreeParams::new(tag.algorithm, tag.digest_size, leaf_size)
        .map_err(LeafLineError::Params)?;
    let (written_name, leaf) = match fields.leaves {
        Some(count) => {
            let no_leaf_fields =
                fields.leaf.is_none() && fields.offset.is_none() && fields.length.is_none();
            if count != 0 {
                return Err(LeafLineError::LeavesNotZero);
            }
            if total != 0 {
                return Err(LeafLineError::TotalNotZero);
            }
            if !no_leaf_fields {
                return Err(LeafLineError::Field("leaf= with leaves=".to_string()));
            }
            let name = rest.strip_suffix(b")").ok_or(LeafLineError::NoName)?;
            (name, None)
        }
        None => {
            let index = fields.leaf.ok_or(LeafLineError::Missing("leaf"))?;
            let offset = fields.offset.ok_or(LeafLineError::Missing("offset"))?;
            let length = fields.length.ok_or(LeafLineError::Missing("length"))?;
            let split = rest
                .windows(4)
                .rposition(|window| window == b") = ")
                .ok_or(LeafLineError::Digest)?;
            let hex = &rest[split + 4..];
            if hex.len() != 2 * tag.digest_size || hex.iter().any(u8::is_ascii_uppercase) {
                return Err(LeafLineError::Digest);
            }
            let digest = decode_hex(hex).ok_or(LeafLineError::Digest)?;
            let bytes = tree.leaf_bytes(index, total);
            let fits = index < tree.leaf_count(total)
                && offset == bytes.start
                && length == bytes.end - bytes.start;
            if !fits {
                return Err(LeafLineError::Inconsistent);
            }
            (&rest[..split], Some(Leaf { index, digest }))
        }
    };
    let name = if escaped {
        unescape(written_name).ok_or(LeafLineError::Escape)?
    } else {
        written_name.to_vec()
    };
    Ok(LeafLine {
        tree,
        name,
        total,
        leaf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Algorithm;

    /// A parsed line as `TAG/L NAME total=T leaf=I HEX`, or the error, so
    /// that the tables read at a glance.
    fn describe(line: &[u8]) -> String {
        match parse_leaf_line(line) {
            Ok(parsed) => format!(
                "{}/{} {} total={}{}",
                Tag::of(&parsed.tree),
                parsed.tree.leaf_size(),
                parsed.name.escape_ascii(),
                parsed.total,
                match parsed.leaf {
                    Some(leaf) => format!(" leaf={} {}", leaf.index, leaf.digest),
                    None => String::new(),
                }
            ),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn good_leaf_lines() {
        let table: [(&[u8], &str); 8] = [
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=4 total=10 tree=4 (f) = ab",
                "BLAKE2b-1/4 f total=10 leaf=0 ab",
            ),
            (
                b"BLAKE2b-1 leaf=2 offset=8 length=2 total=10 tree=4 (f) = ab",
                "BLAKE2b-1/4 f total=10 leaf=2 ab",
            ),
            (
                b"BLAKE2s-2 tree=4 total=10 length=4 offset=4 leaf=1 (a b) = 0102",
                "BLAKE2s-2/4 a b total=10 leaf=1 0102",
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=5 (x) = y) = 00",
                "BLAKE2b-1/5 x) = y total=1 leaf=0 00",
            ),
            (
                b"\\BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=5 (a\\nb) = 00",
                "BLAKE2b-1/5 a\\nb total=1 leaf=0 00",
            ),
            (
                b"BLAKE2b-64 leaves=0 total=0 tree=5242880 (empty)",
                "BLAKE2b-64/5242880 empty total=0",
            ),
            (
                b"BLAKE2b-1 leaves=0 total=0 tree=1 ((a))",
                "BLAKE2b-1/1 (a) total=0",
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=4294967295 total=4294967296 tree=4294967295 (f) = 00",
                "BLAKE2b-1/4294967295 f total=4294967296 leaf=0 00",
            ),
        ];
        for (line, expected) in table {
            assert_eq!(describe(line), expected, "{}", line.escape_ascii());
        }
    }

    #[test]
    fn bad_leaf_lines() {
        let malformed = |what: &str| format!("malformed leaf line: {what}");
        let inconsistent =
            malformed("offset or length do not match the leaf index, leaf size and total");
        let table: [(&[u8], String); 20] = [
            (
                b"BLAKE2q-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("unknown tag"),
            ),
            (
                b"BLAKE2b-0 leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("unknown tag"),
            ),
            (
                b"BLAKE2s-33 leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("unknown tag"),
            ),
            (
                b"BLAKE2b-1  leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("bad field "),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1",
                malformed("no name"),
            ),
            (
                b"BLAKE2b-1 leaf=x offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("bad field leaf=x"),
            ),
            (
                b"BLAKE2b-1 leaf=+1 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("bad field leaf=+1"),
            ),
            (
                b"BLAKE2b-1 leaf=0 leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("bad field leaf=0"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 size=2 (f) = 00",
                malformed("bad field size=2"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 tree=1 (f) = 00",
                malformed("no total="),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 (f) = 00",
                malformed("no tree="),
            ),
            (
                b"BLAKE2b-1 offset=0 length=1 total=1 tree=1 (f) = 00",
                malformed("no leaf="),
            ),
            (
                b"BLAKE2b-1 leaves=1 total=0 tree=1 (f)",
                malformed("leaves= other than 0"),
            ),
            (
                b"BLAKE2b-1 leaves=0 total=5 tree=1 (f)",
                malformed("leaves=0 with a non-zero total"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=0 (f) = 00",
                malformed("leaf size 0 is out of range: allowed 1 to 4294967295"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = AB",
                malformed("the digest is not 2N lowercase hex digits"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = abc",
                malformed("the digest is not 2N lowercase hex digits"),
            ),
            (
                b"\\BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (a\\tb) = 00",
                malformed("bad escape in the name"),
            ),
            (
                b"BLAKE2b-1 leaf=1 offset=1 length=1 total=1 tree=1 (f) = 00",
                inconsistent.clone(),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=2 total=3 tree=1 (f) = 00",
                inconsistent.clone(),
            ),
        ];
        for (line, expected) in table {
            assert_eq!(describe(line), expected, "{}", line.escape_ascii());
        }
    }

    #[test]
    fn written_leaf_lines_read_back() {
        let names: [&[u8]; 5] = [b"f", b"a b", b"x) = y", b"new\nline\\", b"\xff"];
        let mut checked = 0;
        for algorithm in Algorithm::ALL {
            for size in [1, algorithm.max_digest_size()] {
                for leaf_size in [1, 7, 4096] {
                    let tree = TreeParams::new(algorithm, size, leaf_size).unwrap();
                    for name in names {
                        for (total, index) in [(1, 0), (10_000, 0), (10_000, 1)] {
                            if index >= tree.leaf_count(total) {
                                continue;
                            }
                            let digest = vec![0x5a; size];
                            let mut line = Vec::new();
                            push_leaf_line(&mut line, &tree, name, total, index, &digest);
                            let parsed =
                                parse_leaf_line(line.strip_suffix(b"\n").unwrap()).unwrap();
                            assert_eq!((parsed.tree, parsed.total), (tree, total));
                            assert_eq!(parsed.name, name);
                            let leaf = parsed.leaf.unwrap();
                            assert_eq!(leaf.index, index);
                            assert!(leaf.digest == digest[..]);
                            checked += 1;
                        }
                        let mut line = Vec::new();
                        push_no_leaves_line(&mut line, &tree, name);
                        let parsed = parse_leaf_line(line.strip_suffix(b"\n").unwrap()).unwrap();
                        assert_eq!((parsed.tree, parsed.total, parsed.leaf), (tree, 0, None));
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 2 * 3 * 5 * 4);
    }
}
