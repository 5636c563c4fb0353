//! `--combine`'s input. Any text, line by line as `--combine` reads it,
//! never panics. And a real listing of the input's bytes (any algorithm,
//! digest size and leaf size), its lines shuffled and some repeated, always
//! combines into the checksum of those bytes; with a leaf left out it never
//! combines.
#![no_main]

use std::io::Write;

use bt2sum::format::list::{Grammar, ListLine, classify};
use bt2sum::format::{Ending, InputLines};
use bt2sum::leaves::{Combiner, LeafLog};
use bt2sum::{Algorithm, TreeHasher, TreeParams, hash};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        any_text(rest);
    } else {
        shuffled_listing(rest);
    }
});

fn any_text(text: &[u8]) {
    let mut combiner = Combiner::default();
    for (number, line) in (0..).zip(text.split(|&byte| byte == b'\n')) {
        if let ListLine::Leaf(parsed) = classify(line, &Grammar::default())
            && combiner.add(parsed, (0, number)).is_err()
        {
            return;
        }
    }
    let _ = combiner.finish();
}

fn shuffled_listing(input: &[u8]) {
    let [kind, size, leaf, seed, data @ ..] = input else {
        return;
    };
    let algorithm = if kind & 1 == 0 {
        Algorithm::Blake2b
    } else {
        Algorithm::Blake2s
    };
    let digest_size = 1 + usize::from(*size) % algorithm.max_digest_size();
    let leaf_size = 1 + u64::from(*leaf) % 64;
    let tree = TreeParams::new(algorithm, digest_size, leaf_size).expect("valid");
    let mut hasher = TreeHasher::with_leaves(&tree, LeafLog::new(digest_size));
    hasher.write_all(data).expect("in memory");
    let (digest, mut leaves) = hasher.finalize_with_leaves().expect("in memory");
    assert!(digest == hash(&tree, data));
    let total = data.len() as u64;
    let file = InputLines {
        tree: &tree,
        name: Some(b"f"),
        ending: Ending::Newline,
    };
    let mut lines = Vec::new();
    for leaf in leaves.iter() {
        let (index, leaf) = leaf.expect("in memory");
        let mut line = Vec::new();
        file.push_leaf(&mut line, total, index, leaf.as_bytes());
        lines.push(line);
    }
    let mut count = Vec::new();
    file.push_count(&mut count, total, None);
    lines.push(count);
    // Shuffled, and every third line (by the seed) listed twice.
    let mut state = u64::from(*seed) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in (1..lines.len()).rev() {
        let j = next() as usize % (i + 1);
        lines.swap(i, j);
    }
    for i in 0..lines.len() {
        if next() % 3 == 0 {
            lines.push(lines[i].clone());
        }
    }
    let combined = combine(&lines).expect("a whole listing combines");
    assert!(combined == digest);
    // Without one of its leaves (every copy of it), it never combines.
    let leaf_lines: Vec<&Vec<u8>> = lines
        .iter()
        .filter(|line| !line.windows(7).any(|w| w == b"leaves="))
        .collect();
    if !leaf_lines.is_empty() {
        let dropped = leaf_lines[next() as usize % leaf_lines.len()].clone();
        let rest: Vec<Vec<u8>> = lines.into_iter().filter(|line| *line != dropped).collect();
        assert!(
            combine(&rest).is_none(),
            "a listing without {dropped:?} combined"
        );
    }
}

/// The checksum the lines combine into, if they do.
fn combine(lines: &[Vec<u8>]) -> Option<bt2sum::Digest> {
    let mut combiner = Combiner::default();
    for (number, line) in (0..).zip(lines) {
        let ListLine::Leaf(parsed) = classify(line, &Grammar::default()) else {
            panic!("{line:?} was printed by bt2sum");
        };
        combiner.add(parsed, (0, number)).ok()?;
    }
    combiner.finish().ok().map(|combined| combined.digest)
}
