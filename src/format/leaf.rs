//! Leaf lines: what `--leaves` and `--leaf-count` print, and what check mode
//! and `--combine` read back.
//!
//! ```text
//! BLAKE2b-64 leaf=I offset=O length=N total=T tree=L (NAME) = HEX
//! BLAKE2b-64 leaves=C total=T tree=L (NAME)
//! BLAKE2b-64 leaves=C total=T tree=L offset=X length=Y (NAME)
//! ```
//!
//! The first form is leaf `I` of an input; the second says how many leaves
//! an input has (`--leaf-count`, and the one line of an empty input's
//! listing, `leaves=0 total=0`); the third, the count line of a selection
//! (`--leaf-count` with `--leaf-range` or `--part`), adds the selected
//! leaves' bytes, from one leaf boundary to another (`length=0` for a
//! selection past the end). The tag gives the algorithm and digest size
//! as in checksum lines; `O` and `N` are the leaf's bytes, `T` the input's
//! length (so that a listing's completeness can be checked: it has
//! `C = ceil(T / L)` leaves), `L` the leaf size, and HEX the leaf's digest
//! (printed in lowercase; read in either case, all lower or all upper, as
//! in checksum lines). Names are escaped as in checksum lines. Standard input read
//! because no FILE was given has no name, as its checksum line has none: its
//! lines end in ` = HEX`, or after `tree=L`.

use std::fmt;
use std::ops::Range;

use super::name::unescape;
use super::{InputLines, Tag, decode_hex};
use crate::digest::Digest;
use crate::params::{ParamsError, TreeParams};

impl InputLines<'_> {
    /// Appends the listing line of leaf `index` of a `total`-byte input.
    pub fn push_leaf(&self, out: &mut Vec<u8>, total: u64, index: u64, digest: &[u8]) {
        let bytes = self.tree.leaf_bytes(index, total);
        self.push_head(out);
        out.extend_from_slice(
            format!(
                " leaf={index} offset={} length={} total={total} tree={}",
                bytes.start,
                bytes.end - bytes.start,
                self.tree.leaf_size()
            )
            .as_bytes(),
        );
        self.push_name(out);
        out.extend_from_slice(b" = ");
        out.extend_from_slice(hex::encode(digest).as_bytes());
        self.ending.push(out);
    }

    /// Appends the line that says how many leaves a `total`-byte input has
    /// (`leaves=0 total=0` for an empty one).
    pub fn push_count(&self, out: &mut Vec<u8>, total: u64) {
        self.push_counted(out, total, None);
    }

    /// Appends the count line of a `total`-byte input followed by the bytes
    /// of the leaves `leaves` (cut at its last leaf), `offset=X length=Y`:
    /// what a ranged read of those leaves asks for.
    pub fn push_selection_count(&self, out: &mut Vec<u8>, total: u64, leaves: &Range<u64>) {
        let span = self.tree.leaves_bytes(leaves, total);
        self.push_counted(out, total, Some(span));
    }

    fn push_counted(&self, out: &mut Vec<u8>, total: u64, span: Option<Range<u64>>) {
        self.push_head(out);
        out.extend_from_slice(
            format!(
                " leaves={} total={total} tree={}",
                self.tree.leaf_count(total),
                self.tree.leaf_size()
            )
            .as_bytes(),
        );
        if let Some(span) = span {
            out.extend_from_slice(
                format!(" offset={} length={}", span.start, span.end - span.start).as_bytes(),
            );
        }
        self.push_name(out);
        self.ending.push(out);
    }
}

/// One parsed listing line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafLine {
    /// The tree parameters of the listing.
    pub tree: TreeParams,
    /// The input's name, unescaped; `None` for nameless standard input.
    pub name: Option<Vec<u8>>,
    /// The input's length.
    pub total: u64,
    /// The leaf, with its digest; `None` on a count line (`leaves=C`).
    pub leaf: Option<Leaf>,
    /// On a count line that ends in `offset=X length=Y`, those bytes: a
    /// selection's, from one leaf boundary to another.
    pub span: Option<Range<u64>>,
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
/// not: `BLAKE2…` and a first field of `leaf=` or `leaves=`.
pub fn is_leaf_line(line: &[u8]) -> bool {
    super::after_tag(line)
        .is_some_and(|fields| fields.starts_with(b"leaf=") || fields.starts_with(b"leaves="))
}

/// Why a listing line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeafLineError {
    /// The line does not start with a tag bt2sum writes.
    Tag,
    /// A name that does not end in `)`, or an escaped line without a name.
    Name,
    /// A field that is not `KEY=NUMBER`, or a key given twice, or unknown
    /// (as messages show list text, [`super::name::echoed`]).
    Field(String),
    /// A field the line must have is missing.
    Missing(&'static str),
    /// `leaves=` with another count than `total=` and `tree=` make.
    Count {
        /// The count the line gives.
        listed: u64,
        /// The count of a `total`-byte input with its leaf size.
        actual: u64,
    },
    /// The digest size or leaf size is out of range.
    Params(ParamsError),
    /// No ` = HEX` after the name, or HEX is not 2N hex digits (all
    /// lowercase or all uppercase).
    Digest,
    /// A bad escape in an escaped name.
    Escape,
    /// The offset or length is not what the index, leaf size and total say.
    Inconsistent,
    /// A count line's `offset=` and `length=` do not span whole leaves of
    /// the input.
    Span,
}

impl fmt::Display for LeafLineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("malformed leaf line: ")?;
        match self {
            LeafLineError::Tag => f.write_str("unknown tag"),
            LeafLineError::Name => f.write_str("bad name"),
            LeafLineError::Field(field) => write!(f, "bad field {field}"),
            LeafLineError::Missing(key) => write!(f, "no {key}="),
            LeafLineError::Count { listed, actual } => write!(
                f,
                "leaves={listed}, but total= and tree= make {actual} leaves"
            ),
            LeafLineError::Params(error) => write!(f, "{error}"),
            LeafLineError::Digest => f.write_str("the digest is not 2N hex digits of one case"),
            LeafLineError::Escape => f.write_str("bad escape in the name"),
            LeafLineError::Inconsistent => {
                f.write_str("offset or length do not match the leaf index, leaf size and total")
            }
            LeafLineError::Span => {
                f.write_str("offset and offset + length are not leaf boundaries within total")
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
            let bad = || LeafLineError::Field(super::name::echoed(field));
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

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Parses a listing line (without its line ending).
///
/// ```
/// use bt2sum::format::leaf::parse_leaf_line;
/// use bt2sum::format::{Ending, InputLines};
/// use bt2sum::{Algorithm, TreeParams};
///
/// let tree = TreeParams::new(Algorithm::Blake2s, 4, 1024)?;
/// let lines = InputLines { tree: &tree, name: Some(b"f"), ending: Ending::Newline };
/// let mut line = Vec::new();
/// lines.push_leaf(&mut line, 3000, 2, &[1, 2, 3, 4]);
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
    // The fields end where the name begins, or where a nameless line's
    // digest or end does: fields hold no `(` and no `=` after a space.
    let end = find(rest, b" (")
        .or_else(|| find(rest, b" = "))
        .unwrap_or(rest.len());
    let fields = Fields::parse(&rest[..end])?;
    let tail = &rest[end..];
    let total = fields.total.ok_or(LeafLineError::Missing("total"))?;
    let leaf_size = fields.tree.ok_or(LeafLineError::Missing("tree"))?;
    let tree = TreeParams::new(tag.algorithm, tag.digest_size, leaf_size)
        .map_err(LeafLineError::Params)?;
    let named = tail.strip_prefix(b" (");
    if escaped && named.is_none() {
        return Err(LeafLineError::Name);
    }
    let (written_name, leaf, span) = match fields.leaves {
        Some(listed) => {
            let (name, span) = count_line(&fields, listed, &tree, total, named, tail)?;
            (name, None, span)
        }
        None => {
            let (name, leaf) = leaf_line(&fields, &tree, total, named, tail)?;
            (name, Some(leaf), None)
        }
    };
    let name = match written_name {
        Some(written) if escaped => Some(unescape(written).ok_or(LeafLineError::Escape)?),
        Some(written) => Some(written.to_vec()),
        None => None,
    };
    Ok(LeafLine {
        tree,
        name,
        total,
        leaf,
        span,
    })
}

/// A count line's written name (if any) and span (if any).
type Counted<'a> = (Option<&'a [u8]>, Option<Range<u64>>);

/// The name and span of a count line (`leaves=C total=T tree=L`, maybe
/// `offset=X length=Y`), its `leaves=` `listed`; `named` is what follows
/// ` (` after the fields, `tail` all that follows them.
fn count_line<'a>(
    fields: &Fields,
    listed: u64,
    tree: &TreeParams,
    total: u64,
    named: Option<&'a [u8]>,
    tail: &[u8],
) -> Result<Counted<'a>, LeafLineError> {
    if fields.leaf.is_some() {
        return Err(LeafLineError::Field("leaf= with leaves=".to_string()));
    }
    let actual = tree.leaf_count(total);
    if listed != actual {
        return Err(LeafLineError::Count { listed, actual });
    }
    let span = match (fields.offset, fields.length) {
        (None, None) => None,
        (Some(offset), Some(length)) => {
            let boundary = |at: u64| at == total || at.is_multiple_of(tree.leaf_size());
            let span = offset
                .checked_add(length)
                .filter(|&end| end <= total && boundary(offset) && boundary(end))
                .map(|end| offset..end)
                .ok_or(LeafLineError::Span)?;
            Some(span)
        }
        (None, Some(_)) => return Err(LeafLineError::Missing("offset")),
        (Some(_), None) => return Err(LeafLineError::Missing("length")),
    };
    let name = match named {
        Some(named) => Some(named.strip_suffix(b")").ok_or(LeafLineError::Name)?),
        None if tail.is_empty() => None,
        None => return Err(LeafLineError::Name),
    };
    Ok((name, span))
}

/// The name and leaf of a leaf line (`leaf=I offset=O length=N total=T
/// tree=L`, then its digest); `named` and `tail` as for [`count_line`].
fn leaf_line<'a>(
    fields: &Fields,
    tree: &TreeParams,
    total: u64,
    named: Option<&'a [u8]>,
    tail: &'a [u8],
) -> Result<(Option<&'a [u8]>, Leaf), LeafLineError> {
    let index = fields.leaf.ok_or(LeafLineError::Missing("leaf"))?;
    let offset = fields.offset.ok_or(LeafLineError::Missing("offset"))?;
    let length = fields.length.ok_or(LeafLineError::Missing("length"))?;
    let (name, hex) = match named {
        Some(named) => {
            let split = named
                .windows(4)
                .rposition(|window| window == b") = ")
                .ok_or(LeafLineError::Digest)?;
            (Some(&named[..split]), &named[split + 4..])
        }
        None => (
            None,
            tail.strip_prefix(b" = ").ok_or(LeafLineError::Digest)?,
        ),
    };
    if hex.len() != 2 * tree.digest_size() {
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
    Ok((name, Leaf { index, digest }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Ending;
    use crate::params::Algorithm;

    /// A parsed line as `TAG/L NAME total=T leaf=I HEX`, or the error, so
    /// that the tables read at a glance.
    fn describe(line: &[u8]) -> String {
        match parse_leaf_line(line) {
            Ok(parsed) => format!(
                "{}/{} {} total={}{}",
                Tag::of(&parsed.tree),
                parsed.tree.leaf_size(),
                match &parsed.name {
                    Some(name) => name.escape_ascii().to_string(),
                    None => "(nameless)".to_string(),
                },
                parsed.total,
                match (parsed.leaf, parsed.span) {
                    (Some(leaf), _) => format!(" leaf={} {}", leaf.index, leaf.digest),
                    (None, Some(span)) => format!(" bytes={span:?}"),
                    (None, None) => String::new(),
                }
            ),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn good_leaf_lines() {
        let table: [(&[u8], &str); 16] = [
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
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 (f)",
                "BLAKE2b-1/4 f total=10",
            ),
            (
                b"BLAKE2b-1 leaf=1 offset=4 length=4 total=10 tree=4 = cd",
                "BLAKE2b-1/4 (nameless) total=10 leaf=1 cd",
            ),
            (
                b"BLAKE2b-1 leaves=0 total=0 tree=4",
                "BLAKE2b-1/4 (nameless) total=0",
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4",
                "BLAKE2b-1/4 (nameless) total=10",
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=4 length=6 (f)",
                "BLAKE2b-1/4 f total=10 bytes=4..10",
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=0 length=4",
                "BLAKE2b-1/4 (nameless) total=10 bytes=0..4",
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=10 length=0 (f)",
                "BLAKE2b-1/4 f total=10 bytes=10..10",
            ),
            (
                b"BLAKE2b-1 leaves=0 total=0 tree=4 offset=0 length=0 (f)",
                "BLAKE2b-1/4 f total=0 bytes=0..0",
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
        let span = malformed("offset and offset + length are not leaf boundaries within total");
        let table: [(&[u8], String); 29] = [
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
                malformed("the digest is not 2N hex digits of one case"),
            ),
            (
                b"\\BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 = 00",
                malformed("bad name"),
            ),
            (
                b"BLAKE2b-1 leaves=1 total=1 tree=1 (f",
                malformed("bad name"),
            ),
            (
                b"BLAKE2b-1 leaves=1 total=1 tree=1 x",
                malformed("bad field x"),
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
                malformed("leaves=1, but total= and tree= make 0 leaves"),
            ),
            (
                b"BLAKE2b-1 leaves=0 total=5 tree=1 (f)",
                malformed("leaves=0, but total= and tree= make 5 leaves"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=0 (f) = 00",
                malformed("leaf size 0 is out of range: allowed 1 to 4294967295"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = Ab",
                malformed("the digest is not 2N hex digits of one case"),
            ),
            (
                b"BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = abc",
                malformed("the digest is not 2N hex digits of one case"),
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
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=2 length=4 (f)",
                span.clone(),
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=4 length=5 (f)",
                span.clone(),
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=8 length=4 (f)",
                span.clone(),
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=18446744073709551615 length=1 (f)",
                span.clone(),
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 offset=4 (f)",
                malformed("no length="),
            ),
            (
                b"BLAKE2b-1 leaves=3 total=10 tree=4 leaf=1 (f)",
                malformed("bad field leaf= with leaves="),
            ),
        ];
        for (line, expected) in table {
            assert_eq!(describe(line), expected, "{}", line.escape_ascii());
        }
    }

    #[test]
    fn written_leaf_lines_read_back() {
        let names: [Option<&[u8]>; 6] = [
            Some(b"f"),
            Some(b"a b"),
            Some(b"x) = y"),
            Some(b"new\nline\\"),
            Some(b"\xff"),
            None,
        ];
        let mut checked = 0;
        for algorithm in Algorithm::ALL {
            for size in [1, algorithm.max_digest_size()] {
                for leaf_size in [1, 7, 4096] {
                    let tree = TreeParams::new(algorithm, size, leaf_size).unwrap();
                    let lines = |name| InputLines {
                        tree: &tree,
                        name,
                        ending: Ending::Newline,
                    };
                    for name in names {
                        for (total, index) in [(1, 0), (10_000, 0), (10_000, 1)] {
                            let digest = vec![0x5a; size];
                            let mut line = Vec::new();
                            lines(name).push_leaf(&mut line, total, index, &digest);
                            let parsed =
                                parse_leaf_line(line.strip_suffix(b"\n").unwrap()).unwrap();
                            assert_eq!((parsed.tree, parsed.total), (tree, total));
                            assert_eq!(parsed.name.as_deref(), name);
                            let leaf = parsed.leaf.unwrap();
                            assert_eq!(leaf.index, index);
                            assert!(leaf.digest == digest[..]);
                            checked += 1;
                        }
                        for total in [0, 1, 10_000] {
                            let mut line = Vec::new();
                            lines(name).push_count(&mut line, total);
                            let parsed =
                                parse_leaf_line(line.strip_suffix(b"\n").unwrap()).unwrap();
                            assert_eq!(
                                (parsed.tree, parsed.total, parsed.leaf),
                                (tree, total, None)
                            );
                            assert_eq!(parsed.name.as_deref(), name);
                            checked += 1;
                            let count = tree.leaf_count(total);
                            for leaves in [0..count, 0..1, count / 2..count, count..count] {
                                let mut line = Vec::new();
                                lines(name).push_selection_count(&mut line, total, &leaves);
                                let parsed =
                                    parse_leaf_line(line.strip_suffix(b"\n").unwrap()).unwrap();
                                let leaves = leaves.start.min(count)..leaves.end.min(count);
                                assert_eq!(parsed.span, Some(tree.leaves_bytes(&leaves, total)));
                                assert_eq!((parsed.tree, parsed.total), (tree, total));
                                assert_eq!(parsed.name.as_deref(), name);
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 2 * 3 * 6 * (6 + 3 * 4));
    }
}
