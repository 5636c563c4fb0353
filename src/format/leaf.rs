//! Leaf lines: what `--leaves` and `--leaf-count` print, and what check mode
//! and `--combine` read back.
//!
//! ```text
//! BLAKE2b-64 leaf=I offset=O length=N total=T tree=L (NAME) = HEX
//! BLAKE2b-64 leaves=C total=T tree=L (NAME)
//! BLAKE2b-64 leaves=C total=T tree=L offset=X length=Y (NAME)
//! ```
//!
//! Leaf `I` of a `T`-byte input made with `L`-byte leaves (its bytes `O` to
//! `O + N`), then count lines (`C = ceil(T / L)`), of a whole input or, with
//! `offset=X length=Y`, of a selection's leaves. Digests and names are
//! written as in checksum lines; standard input's lines may have no name.

use std::borrow::Cow;
use std::ops::Range;

use super::name::{Name, read_back};
use super::{InputLines, Tag, decimal, decode_hex, name_and_digest, prefixed, split};
use crate::digest::Digest;
use crate::params::TreeParams;

impl InputLines<'_> {
    /// Appends the listing line of leaf `index` of a `total`-byte input.
    pub fn push_leaf(&self, out: &mut Vec<u8>, total: u64, index: u64, digest: &[u8]) {
        let Range { start, end } = self.tree.leaf_bytes(index, total);
        let (length, tree) = (end - start, self.tree.leaf_size());
        let fields =
            format!(" leaf={index} offset={start} length={length} total={total} tree={tree}");
        self.push(out, &fields, &format!(" = {}", hex::encode(digest)));
    }

    /// Appends the line that says how many leaves a `total`-byte input has;
    /// with a selection's `leaves`, followed by their bytes (cut at its last
    /// leaf), `offset=X length=Y`: what a ranged read of those leaves asks
    /// for.
    pub fn push_count(&self, out: &mut Vec<u8>, total: u64, leaves: Option<&Range<u64>>) {
        let (count, tree) = (self.tree.leaf_count(total), self.tree.leaf_size());
        let mut fields = format!(" leaves={count} total={total} tree={tree}");
        if let Some(leaves) = leaves {
            let Range { start, end } = self.tree.leaves_bytes(leaves, total);
            fields += &format!(" offset={start} length={}", end - start);
        }
        self.push(out, &fields, "");
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
    /// On a count line that ends in `offset=X length=Y`, the leaves whose
    /// bytes those are: a selection's.
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

/// Why a listing line was refused: what `--combine` reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed leaf line: {0}")]
pub struct LeafLineError(Cow<'static, str>);

fn refused(reason: impl Into<Cow<'static, str>>) -> LeafLineError {
    LeafLineError(reason.into())
}

/// The numbers of a leaf line's fields, `KEY=NUMBER` each, in the order of
/// `KEYS`; a key given twice, or unknown, is refused.
fn fields(text: &[u8]) -> Result<[Option<u64>; 6], LeafLineError> {
    const KEYS: [&[u8]; 6] = [b"leaf", b"leaves", b"offset", b"length", b"total", b"tree"];
    let mut values = [None; 6];
    for field in text.split(|&b| b == b' ') {
        let (key, value) = split(field, b"=", false).unwrap_or_default();
        match (KEYS.iter().position(|known| *known == key), decimal(value)) {
            (Some(slot), Some(value)) if values[slot].is_none() => values[slot] = Some(value),
            _ => {
                // (As a message shows a name, less the `\` that marks it escaped.)
                let shown = Name::listed(field).shown();
                let field = shown.strip_prefix('\\').unwrap_or(&shown);
                return Err(refused(format!("bad field {field}")));
            }
        }
    }
    Ok(values)
}

/// Parses a listing line (without its line ending).
pub(super) fn parse_leaf_line(line: &[u8]) -> Result<LeafLine, LeafLineError> {
    let (escaped, body) = prefixed(line, b"\\");
    let (tag, rest) = Tag::parse(body).ok_or(refused("unknown tag"))?;
    let rest = rest.strip_prefix(b" ").ok_or(refused("unknown tag"))?;
    // The fields end where the name begins, or where a nameless line's
    // digest does: fields hold no `(` and no `=` after a space.
    let end = split(rest, b" (", false).or_else(|| split(rest, b" = ", false));
    let (text, tail) = rest.split_at(end.map_or(rest.len(), |(text, _)| text.len()));
    let [leaf, leaves, offset, length, total, leaf_size] = fields(text)?;
    let total = total.ok_or(refused("no total="))?;
    let leaf_size = leaf_size.ok_or(refused("no tree="))?;
    let tree = TreeParams::new(tag.algorithm, tag.size, leaf_size)
        .map_err(|error| refused(error.to_string()))?;
    if escaped && !tail.starts_with(b" (") {
        return Err(refused("bad name"));
    }
    let (name, leaf, span) = match (leaves, leaf) {
        (Some(_), Some(_)) => return Err(refused("bad field leaf= with leaves=")),
        (Some(listed), None) => {
            let span = count_span(&tree, total, listed, offset, length)?;
            let (name, _) = name_and_digest(tail, false).ok_or(refused("bad name"))?;
            (name, None, span)
        }
        (None, index) => {
            let index = index.ok_or(refused("no leaf="))?;
            let offset = offset.ok_or(refused("no offset="))?;
            let length = length.ok_or(refused("no length="))?;
            let bad_digest = || refused("the digest is not 2N hex digits of one case");
            let (name, hex) = name_and_digest(tail, true).ok_or_else(bad_digest)?;
            let digest = decode_hex(hex, tree.digest_size()).ok_or_else(bad_digest)?;
            let bytes = tree.leaf_bytes(index, total);
            if index >= tree.leaf_count(total)
                || (offset, length) != (bytes.start, bytes.end - bytes.start)
            {
                let inconsistent =
                    "offset or length do not match the leaf index, leaf size and total";
                return Err(refused(inconsistent));
            }
            (name, Some(Leaf { index, digest }), None)
        }
    };
    let name = name.map(|name| read_back(name, escaped).ok_or(refused("bad escape in the name")));
    Ok(LeafLine {
        tree,
        name: name.transpose()?,
        total,
        leaf,
        span,
    })
}

/// A count line's `offset=X length=Y`, checked against its `leaves=`: the
/// leaves whose bytes they are, as [`InputLines::push_count`] writes them.
fn count_span(
    tree: &TreeParams,
    total: u64,
    listed: u64,
    offset: Option<u64>,
    length: Option<u64>,
) -> Result<Option<Range<u64>>, LeafLineError> {
    let actual = tree.leaf_count(total);
    if listed != actual {
        let counts = format!("leaves={listed}, but total= and tree= make {actual} leaves");
        return Err(refused(counts));
    }
    match (offset, length) {
        (None, None) => Ok(None),
        (Some(offset), Some(length)) => {
            let at = |bytes: u64| bytes.div_ceil(tree.leaf_size());
            let span = offset
                .checked_add(length)
                .map(|end| (offset..end, at(offset)..at(end)));
            let span = span.filter(|(bytes, leaves)| tree.leaves_bytes(leaves, total) == *bytes);
            let boundaries = "offset and offset + length are not leaf boundaries within total";
            Ok(Some(span.ok_or(refused(boundaries))?.1))
        }
        (None, Some(_)) => Err(refused("no offset=")),
        (Some(_), None) => Err(refused("no length=")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Ending;
    use crate::params::Algorithm;

    /// A parsed line as `TAG/L (NAME) total=T leaf=I HEX` or `leaves=X..Y`,
    /// or why it was refused.
    fn describe(line: &str) -> String {
        match parse_leaf_line(line.as_bytes()) {
            Ok(parsed) => {
                let tree = format!("{}/{}", Tag::of(&parsed.tree), parsed.tree.leaf_size());
                let name = match &parsed.name {
                    Some(name) => format!(" ({})", name.escape_ascii()),
                    None => String::new(),
                };
                let rest = match (parsed.leaf, parsed.span) {
                    (Some(leaf), _) => format!(" leaf={} {}", leaf.index, leaf.digest),
                    (None, Some(leaves)) => format!(" leaves={leaves:?}"),
                    (None, None) => String::new(),
                };
                format!("{tree}{name} total={}{rest}", parsed.total)
            }
            Err(error) => error.0.into_owned(),
        }
    }

    #[test]
    fn leaf_lines_read() {
        let mismatch = "offset or length do not match the leaf index, leaf size and total";
        let span = "offset and offset + length are not leaf boundaries within total";
        let digest = "the digest is not 2N hex digits of one case";
        #[rustfmt::skip]
        let table = [
            ("BLAKE2b-1 leaf=2 offset=8 length=2 total=10 tree=4 (f) = ab", "BLAKE2b-1/4 (f) total=10 leaf=2 ab"),
            ("BLAKE2s-2 tree=4 total=10 length=4 offset=4 leaf=1 (a b) = 0102", "BLAKE2s-2/4 (a b) total=10 leaf=1 0102"),
            ("BLAKE2b-1 leaf=00 offset=0 length=1 total=1 tree=5 (x) = y) = 00", "BLAKE2b-1/5 (x) = y) total=1 leaf=0 00"),
            ("\\BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=5 (a\\nb) = 00", "BLAKE2b-1/5 (a\\nb) total=1 leaf=0 00"),
            ("BLAKE2b-1 leaf=0 offset=0 length=4294967295 total=4294967296 tree=4294967295 (f) = 00",
                "BLAKE2b-1/4294967295 (f) total=4294967296 leaf=0 00"),
            ("BLAKE2b-1 leaf=1 offset=4 length=4 total=10 tree=4 = CD", "BLAKE2b-1/4 total=10 leaf=1 cd"),
            ("BLAKE2b-1 leaves=0 total=0 tree=1 ((a))", "BLAKE2b-1/1 ((a)) total=0"),
            ("BLAKE2b-1 leaves=0 total=0 tree=1 ()", "BLAKE2b-1/1 () total=0"),
            ("BLAKE2b-1 leaves=3 total=10 tree=4", "BLAKE2b-1/4 total=10"),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=4 length=6 (f)", "BLAKE2b-1/4 (f) total=10 leaves=1..3"),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=0 length=4", "BLAKE2b-1/4 total=10 leaves=0..1"),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=10 length=0 (f)", "BLAKE2b-1/4 (f) total=10 leaves=3..3"),
            ("BLAKE2b-1 leaves=0 total=0 tree=4 offset=0 length=0 (f)", "BLAKE2b-1/4 (f) total=0 leaves=0..0"),
            // Refused.
            ("BLAKE2q-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00", "unknown tag"),
            ("BLAKE2b-1  leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00", "bad field "),
            ("BLAKE2b-1 leaf=+1 offset=0 length=1 total=1 tree=1 (f) = 00", "bad field leaf=+1"),
            ("BLAKE2b-1 leaf=0 leaf=0 offset=0 length=1 total=1 tree=1 (f) = 00", "bad field leaf=0"),
            ("BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 size=2 (f) = 00", "bad field size=2"),
            ("BLAKE2b-1 leaves=1 total=1 tree=1 x\x1b", "bad field x\\x1b"),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 leaf=1 (f)", "bad field leaf= with leaves="),
            ("BLAKE2b-1 leaf=0 offset=0 length=1 tree=1 (f) = 00", "no total="),
            ("BLAKE2b-1 leaf=0 offset=0 length=1 total=1 (f) = 00", "no tree="),
            ("BLAKE2b-1 offset=0 length=1 total=1 tree=1 (f) = 00", "no leaf="),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=4 (f)", "no length="),
            ("BLAKE2b-1 leaves=0 total=5 tree=1 (f)", "leaves=0, but total= and tree= make 5 leaves"),
            ("BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=0 (f) = 00", "leaf size 0 is out of range: allowed 1 to 4294967295"),
            ("\\BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 = 00", "bad name"),
            ("BLAKE2b-1 leaves=1 total=1 tree=1 (f", "bad name"),
            ("BLAKE2b-1 leaves=1 total=1 tree=1 = 00", "bad name"),
            ("\\BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (a\\tb) = 00", "bad escape in the name"),
            ("BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1", digest),
            ("BLAKE2b-1 leaf=0 offset=0 length=1 total=1 tree=1 (f) = Ab", digest),
            ("BLAKE2b-1 leaf=1 offset=1 length=1 total=1 tree=1 (f) = 00", mismatch),
            ("BLAKE2b-1 leaf=0 offset=0 length=2 total=3 tree=1 (f) = 00", mismatch),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=2 length=4 (f)", span),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=4 length=5 (f)", span),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=8 length=4 (f)", span),
            ("BLAKE2b-1 leaves=3 total=10 tree=4 offset=18446744073709551615 length=1 (f)", span),
        ];
        for (line, expected) in table {
            assert_eq!(describe(line), expected, "{line}");
        }
    }

    /// The line a writer appends, read back.
    fn written(push: impl FnOnce(&mut Vec<u8>)) -> LeafLine {
        let mut line = Vec::new();
        push(&mut line);
        parse_leaf_line(line.strip_suffix(b"\n").unwrap()).unwrap()
    }

    #[test]
    fn written_leaf_lines_read_back() {
        let names: [Option<&[u8]>; 4] = [Some(b"x) = y"), Some(b"a\nb\\"), Some(b"\xff"), None];
        for algorithm in Algorithm::ALL {
            for (size, leaf_size) in [(1, 1), (algorithm.max_digest_size(), 7), (3, 4096)] {
                let tree = TreeParams::new(algorithm, size, leaf_size).unwrap();
                let digest = Digest::from_slice(&vec![0x5a; size]).unwrap();
                for name in names {
                    for total in [0, 1, 10_000] {
                        let lines = InputLines {
                            tree: &tree,
                            name,
                            ending: Ending::Newline,
                        };
                        let name = name.map(<[u8]>::to_vec);
                        let expected = |leaf, span| LeafLine {
                            tree,
                            name: name.clone(),
                            total,
                            leaf,
                            span,
                        };
                        let count = tree.leaf_count(total);
                        for index in (0..count).filter(|&i| i < 2 || i == count - 1) {
                            let parsed = written(|out| {
                                lines.push_leaf(out, total, index, digest.as_bytes())
                            });
                            assert_eq!(parsed, expected(Some(Leaf { index, digest }), None));
                        }
                        assert_eq!(
                            written(|out| lines.push_count(out, total, None)),
                            expected(None, None)
                        );
                        for leaves in [0..count, count / 2..count, count..count + 1] {
                            let parsed = written(|out| lines.push_count(out, total, Some(&leaves)));
                            let selected = leaves.start..leaves.end.min(count);
                            assert_eq!(parsed, expected(None, Some(selected)));
                        }
                    }
                }
            }
        }
    }
}
