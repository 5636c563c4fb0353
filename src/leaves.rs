//! Leaf listings (`--leaves`): the leaf digests kept while hashing, the
//! leaf-line grammar (both directions), and combining partial listings back
//! into a file's checksum (`--combine`).
//!
//! The engine feeds every leaf digest to the root in leaf order; when a
//! listing is wanted it also appends them to a [`LeafLog`]. Up to
//! `IN_MEMORY` (16 MiB) of digests stay in memory; beyond that (tiny leaves on
//! a big input) they go to an anonymous temporary file, read back when the
//! listing is written.
//!
//! A listing line for leaf `I` of file `NAME`, and the line of a file with no
//! leaves (an empty file):
//!
//! ```text
//! BLAKE2b-64 leaf=I offset=O length=N total=T tree=L (NAME) = HEX
//! BLAKE2b-64 leaves=0 total=0 tree=L (NAME)
//! ```
//!
//! The tag gives the algorithm and digest size as in checksum lines; `O` and
//! `N` are the leaf's bytes, `T` the file's length (so that a listing's
//! completeness can be checked: it has `ceil(T / L)` leaves), `L` the leaf
//! size, and HEX the leaf's digest. Names are escaped as in checksum lines
//! (a leading `\`, then `\\`, `\n`, `\r`). Check mode skips these lines.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use crate::check::{needs_escape, push_name, unescape};
use crate::ct;
use crate::tree::{Algorithm, Digest, Node, NodeState, TreeParams};

/// Digest bytes kept in memory before spilling to a temporary file.
const IN_MEMORY: usize = 16 << 20;

/// The digests of consecutive leaves, numbered from `first`.
pub struct LeafLog {
    digest_size: usize,
    first: u64,
    count: u64,
    memory: Vec<u8>,
    spill: Option<File>,
    error: Option<io::Error>,
}

impl LeafLog {
    /// An empty log of `digest_size`-byte digests whose first leaf is `first`.
    pub fn new(digest_size: usize, first: u64) -> Self {
        LeafLog {
            digest_size,
            first,
            count: 0,
            memory: Vec::new(),
            spill: None,
            error: None,
        }
    }

    /// The index of the first leaf logged.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// How many leaves are logged.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Appends the digests of the next leaves.
    pub fn append(&mut self, digests: &[u8]) {
        debug_assert!(digests.len().is_multiple_of(self.digest_size));
        self.count += (digests.len() / self.digest_size) as u64;
        if self.error.is_some() {
            // The listing fails anyway: keep no more.
            return;
        }
        self.memory.extend_from_slice(digests);
        if self.memory.len() >= IN_MEMORY
            && self.error.is_none()
            && let Err(error) = self.spill_memory()
        {
            self.error = Some(error);
        }
    }

    fn spill_memory(&mut self) -> io::Result<()> {
        let file = match &mut self.spill {
            Some(file) => file,
            None => self.spill.insert(tempfile::tempfile()?),
        };
        file.write_all(&self.memory)?;
        self.memory.clear();
        Ok(())
    }

    /// Calls `each(index, digest)` for every leaf in order. Fails if the
    /// temporary file could not be written or read back.
    pub fn for_each(
        mut self,
        mut each: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let mut index = self.first;
        if let Some(mut file) = self.spill.take() {
            file.seek(SeekFrom::Start(0))?;
            let mut reader = BufReader::with_capacity(1 << 20, file);
            let mut digest = vec![0; self.digest_size];
            let spilled = self.count - (self.memory.len() / self.digest_size) as u64;
            for _ in 0..spilled {
                reader.read_exact(&mut digest)?;
                each(index, &digest)?;
                index += 1;
            }
        }
        for digest in self.memory.chunks(self.digest_size) {
            each(index, digest)?;
            index += 1;
        }
        Ok(())
    }
}

/// Appends the listing line of leaf `index` of a `total`-byte input.
pub fn push_leaf_line(
    out: &mut Vec<u8>,
    tree: &TreeParams,
    name: &[u8],
    total: u64,
    index: u64,
    digest: &[u8],
) {
    let offset = index * tree.leaf_size();
    let length = tree.leaf_size().min(total - offset);
    push_head(out, tree, name);
    out.extend_from_slice(
        format!(
            " leaf={index} offset={offset} length={length} total={total} tree={}",
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
    out.extend_from_slice(format!("{}-{}", tree.algorithm().tag(), tree.digest_size()).as_bytes());
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
    /// The byte offset of the leaf's first byte in the file.
    pub offset: u64,
    /// The leaf's length in bytes (the leaf size, or less for the last leaf).
    pub length: u64,
    /// The leaf's digest.
    pub digest: Vec<u8>,
}

/// Whether a line (CR/LF already removed) is a listing line, well formed or
/// not: a tag followed by ` leaf=` or ` leaves=`. Check mode skips these.
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

/// Parses a listing line; `Err` says what is wrong with it.
pub fn parse_leaf_line(line: &[u8]) -> Result<LeafLine, String> {
    let (escaped, body) = match line.strip_prefix(b"\\") {
        Some(body) => (true, body),
        None => (false, line),
    };
    let bad = |what: &str| format!("malformed leaf line: {what}");
    let (tag, rest) = split_at_byte(body, b' ').ok_or_else(|| bad("no fields"))?;
    let tag = std::str::from_utf8(tag).map_err(|_| bad("bad tag"))?;
    let (algorithm, size) = match tag.split_once('-') {
        Some(("BLAKE2b", size)) => (Algorithm::Blake2b, size),
        Some(("BLAKE2s", size)) => (Algorithm::Blake2s, size),
        _ => return Err(bad("unknown tag")),
    };
    let size: usize = size.parse().map_err(|_| bad("bad digest size"))?;
    let open = find(rest, b" (").ok_or_else(|| bad("no name"))?;
    let fields = std::str::from_utf8(&rest[..open]).map_err(|_| bad("bad fields"))?;
    let rest = &rest[open + 2..];
    let mut values = std::collections::HashMap::new();
    for field in fields.split(' ') {
        let (key, value) = field
            .split_once('=')
            .ok_or_else(|| bad("field without ="))?;
        let value: u64 = value
            .parse()
            .map_err(|_| bad(&format!("bad number in {key}=")))?;
        if values.insert(key, value).is_some() {
            return Err(bad(&format!("{key}= given twice")));
        }
    }
    let leaves_field = values.remove("leaves");
    if leaves_field.is_some_and(|count| count != 0) {
        return Err(bad("leaves= other than 0"));
    }
    let mut take = |key: &str| values.remove(key).ok_or_else(|| bad(&format!("no {key}=")));
    let total = take("total")?;
    let leaf_size = take("tree")?;
    let tree =
        TreeParams::new(algorithm, size, leaf_size).map_err(|error| bad(&error.to_string()))?;
    let (written_name, leaf) = if leaves_field.is_some() {
        if total != 0 {
            return Err(bad("leaves=0 with a non-zero total"));
        }
        (
            rest.strip_suffix(b")")
                .ok_or_else(|| bad("no closing parenthesis"))?,
            None,
        )
    } else {
        let index = take("leaf")?;
        let offset = take("offset")?;
        let length = take("length")?;
        let split = rfind(rest, b") = ").ok_or_else(|| bad("no digest"))?;
        let hex = &rest[split + 4..];
        if hex.len() != 2 * size || hex.iter().any(|b| b.is_ascii_uppercase()) {
            return Err(bad("the digest is not 2N lowercase hex digits"));
        }
        let digest = hex::decode(hex).map_err(|_| bad("the digest is not hex"))?;
        let leaf = Leaf {
            index,
            offset,
            length,
            digest,
        };
        (&rest[..split], Some(leaf))
    };
    if !values.is_empty() {
        return Err(bad("unknown field"));
    }
    let name = if escaped {
        unescape(written_name).ok_or_else(|| bad("bad escape in the name"))?
    } else {
        written_name.to_vec()
    };
    let parsed = LeafLine {
        tree,
        name,
        total,
        leaf,
    };
    if let Some(leaf) = &parsed.leaf {
        let expected_offset = leaf.index.checked_mul(tree.leaf_size());
        let fits = expected_offset.is_some_and(|offset| {
            offset == leaf.offset
                && offset < total
                && leaf.length == tree.leaf_size().min(total - offset)
        });
        if !fits {
            return Err(bad(
                "offset or length do not match the leaf index, leaf size and total",
            ));
        }
    }
    Ok(parsed)
}

fn split_at_byte(bytes: &[u8], byte: u8) -> Option<(&[u8], &[u8])> {
    let at = bytes.iter().position(|&b| b == byte)?;
    Some((&bytes[..at], &bytes[at + 1..]))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .rposition(|window| window == needle)
}

/// Gathers the leaf lines of partial listings of one file and computes the
/// file's checksum once every leaf is there.
///
/// ```
/// use std::io::Write;
/// use bt2sum::leaves::{Combiner, parse_leaf_line, push_leaf_line};
/// use bt2sum::{Algorithm, TreeHasher, TreeParams, hash};
///
/// // 10 bytes in 4-byte leaves: three leaves.
/// let tree = TreeParams::new(Algorithm::Blake2b, 32, 4)?;
/// let data = b"ten bytes!";
/// let mut hasher = TreeHasher::new(&tree);
/// hasher.keep_leaves();
/// hasher.write_all(data)?;
/// let (digest, leaves) = hasher.finalize_with_leaves()?;
///
/// // The listing `bt2sum --leaves` would print for a file named `f`.
/// let mut listing = Vec::new();
/// leaves.expect("kept").for_each(|index, leaf| {
///     push_leaf_line(&mut listing, &tree, b"f", data.len() as u64, index, leaf);
///     Ok(())
/// })?;
/// assert!(listing.starts_with(b"BLAKE2b-32 leaf=0 offset=0 length=4 total=10 tree=4 (f) = "));
///
/// // Its lines, in any order, give the file's checksum back.
/// let mut combiner = Combiner::default();
/// for line in listing.split(|&byte| byte == b'\n').filter(|line| !line.is_empty()).rev() {
///     combiner.add(parse_leaf_line(line)?)?;
/// }
/// let (_, name, combined) = combiner.finish()?;
/// assert_eq!(name, b"f");
/// assert_eq!(combined, digest);
/// assert_eq!(combined, hash(&tree, data));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Combiner {
    /// The file's tree parameters, name and length, from the first line.
    file: Option<(TreeParams, Vec<u8>, u64)>,
    /// The digests of the leaves listed so far, by index: only what the
    /// listings hold, whatever length their lines claim.
    digests: BTreeMap<u64, Vec<u8>>,
}

impl Combiner {
    /// Adds one listing line; `Err` names the clash.
    pub fn add(&mut self, line: LeafLine) -> Result<(), String> {
        match &self.file {
            None => self.file = Some((line.tree, line.name.clone(), line.total)),
            Some((tree, name, total)) => {
                if *tree != line.tree {
                    return Err(format!(
                        "listings disagree on the parameters: {} with {}-byte leaves, and {} with {}-byte leaves",
                        describe(tree),
                        tree.leaf_size(),
                        describe(&line.tree),
                        line.tree.leaf_size()
                    ));
                }
                if *name != line.name {
                    return Err(format!(
                        "listings name different files: {} and {}",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(&line.name)
                    ));
                }
                if *total != line.total {
                    return Err(format!(
                        "listings disagree on the file length: {total} and {}",
                        line.total
                    ));
                }
            }
        }
        let Some(leaf) = line.leaf else {
            return Ok(());
        };
        match self.digests.entry(leaf.index) {
            Entry::Occupied(known) if !ct::eq(known.get(), &leaf.digest) => Err(format!(
                "leaf {} is listed twice with different digests",
                leaf.index
            )),
            Entry::Occupied(_) => Ok(()),
            Entry::Vacant(slot) => {
                slot.insert(leaf.digest);
                Ok(())
            }
        }
    }

    /// The file's name and checksum, or the first gap.
    pub fn finish(self) -> Result<(TreeParams, Vec<u8>, Digest), String> {
        let (tree, name, total) = self.file.ok_or("no leaf lines found")?;
        let count = tree.leaf_count(total);
        let mut root = NodeState::new(&tree, Node::Root);
        // Every listed index is below `count` (the line parser checks it),
        // so the leaves are complete when the n-th key is n throughout.
        for (expected, (&index, digest)) in (0u64..).zip(&self.digests) {
            if index != expected {
                return Err(format!(
                    "leaves {expected}..{index} are missing (the file has {count} leaves)"
                ));
            }
            root.update(digest);
        }
        let listed = self.digests.len() as u64;
        if listed != count {
            return Err(format!(
                "leaves {listed}..{count} are missing (the file has {count} leaves)"
            ));
        }
        Ok((tree, name, root.finalize()))
    }
}

fn describe(tree: &TreeParams) -> String {
    format!("{}-{}", tree.algorithm().tag(), tree.digest_size())
}
