//! Differential: the input's bytes, with an algorithm, digest size and leaf
//! size taken from its first bytes, give one checksum whichever way they
//! are hashed: `hash` (batches on the pool), `TreeHasher` fed in pieces of
//! arbitrary sizes, and `hash_reader` over a reader that returns short
//! reads. The leaf digests `TreeHasher` hands its sink equal those of each
//! leaf kernel this CPU runs (the crates, and the AVX-512 kernels), hashing
//! the whole leaves from the first or from a later one.
#![no_main]

use std::io::{Read, Write};

use bt2sum::leaves::LeafLog;
use bt2sum::{Algorithm, LeafKernel, TreeHasher, TreeParams, hash, hash_reader};
use libfuzzer_sys::fuzz_target;

/// A reader that hands out at most `next()` bytes a call.
struct ShortReads<'a, F: FnMut() -> u64> {
    data: &'a [u8],
    next: F,
}

impl<F: FnMut() -> u64> Read for ShortReads<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let most = 1 + (self.next)() as usize % 4096;
        let n = most.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|input: &[u8]| {
    let [kind, size, leaf_low, leaf_high, seed, data @ ..] = input else {
        return;
    };
    let algorithm = if kind & 1 == 0 {
        Algorithm::Blake2b
    } else {
        Algorithm::Blake2s
    };
    let digest_size = 1 + usize::from(*size) % algorithm.max_digest_size();
    // Small leaves, so that short inputs have many: 1 to 1024 bytes.
    let leaf_size = 1 + u64::from(u16::from_le_bytes([*leaf_low, *leaf_high])) % 1024;
    let tree = TreeParams::new(algorithm, digest_size, leaf_size).expect("valid");
    let mut state = u64::from(*seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };

    let whole = hash(&tree, data);

    let mut hasher = TreeHasher::with_leaves(&tree, LeafLog::new(digest_size));
    let mut rest = data;
    while !rest.is_empty() {
        let piece = 1 + next() as usize % rest.len().min(3 * leaf_size as usize);
        hasher.write_all(&rest[..piece]).expect("in memory");
        rest = &rest[piece..];
    }
    let (streamed, mut leaves) = hasher.finalize_with_leaves().expect("in memory");
    assert!(streamed == whole, "TreeHasher in pieces");

    let mut reader = ShortReads {
        data,
        next: &mut next,
    };
    let read = hash_reader(&tree, &mut reader).expect("in memory");
    assert!(read == whole, "hash_reader over short reads");

    let mut listed = Vec::new();
    for leaf in leaves.iter() {
        listed.extend_from_slice(leaf.expect("in memory").1.as_bytes());
    }
    let leaf = leaf_size as usize;
    // (An empty input lists no leaf: its count line says `leaves=0`.)
    assert_eq!(listed.len(), data.len().div_ceil(leaf) * digest_size);
    // Every leaf but the last (which the kernels leave to the crates' last
    // node).
    let not_last = data.len().saturating_sub(1) / leaf;
    let from = if not_last == 0 {
        0
    } else {
        next() as usize % not_last
    };
    for kernel in [LeafKernel::Crates, LeafKernel::Avx512] {
        if !kernel.available() {
            continue;
        }
        let mut out = vec![0; (not_last - from) * digest_size];
        kernel.hash_whole_leaves(
            &tree,
            from as u64,
            &data[from * leaf..not_last * leaf],
            &mut out,
        );
        assert_eq!(
            out,
            listed[from * digest_size..not_last * digest_size],
            "the {} kernel from leaf {from}",
            kernel.name()
        );
    }
});
