//! BLAKE2 leaf kernels for x86_64 CPUs with AVX-512F: BLAKE2b hashes 8
//! leaves at once and BLAKE2s 16, one lane of a 512-bit register each.
//!
//! Against the crates' AVX2 kernels (4 and 8 lanes) they gain twice: twice
//! the lanes per instruction, and a rotation is one `vprorq`/`vprord`
//! instead of two shifts and an OR. Each block's message words are loaded
//! from every lane's leaf with plain unaligned loads and transposed in
//! registers (gathers measured slower). The lanes' parameter words differ
//! only in the node offset, which goes into the state.
//!
//! They take whole leaves that are not the last node, of any length from 1
//! byte; everything else (a short final leaf, the last leaf, big leaves
//! hashed a piece at a time) stays on the crates. Results are proved equal
//! to the crates' by the differential tests below and in
//! `tests/integration/vectors.rs`.
//!
//! # Bounds of `unsafe`
//!
//! Miri cannot run these intrinsics, so the memory safety rests on two
//! rules. Every load reads 64 bytes at `lane.as_ptr().add(offset)` where
//! `offset + 64 <= lane.len()` (`load_rows`, an `unsafe fn` whose callers
//! assert every lane's length, a whole number of blocks, before their loop),
//! or a 64-byte row of the state; every store writes a 64-byte row of the
//! state, through the exclusive borrow of it. And the AVX-512 code runs only
//! once [`available`] said the CPU has AVX-512F: the safe entry points
//! assert it.

use core::arch::x86_64::*;
use std::ops::Range;

use super::{LANES_B, LANES_S};
use crate::params::{LastNode, Node, TreeParams};

/// The bytes of each lane hashed between two hand-backs of the pages read
/// (`release`): a chunk is handed back once the next one is hashed, so that
/// 16 lanes of 5 MiB leaves keep at most 32 MiB resident per thread, not
/// 80. A multiple of both block sizes.
pub(super) const CHUNK: usize = 1 << 20;

/// Whether this CPU runs these kernels (checked once, then cached by the
/// standard library); never under Miri, which cannot run the intrinsics.
pub(super) fn available() -> bool {
    !cfg!(miri) && is_x86_feature_detected!("avx512f")
}

const IV_B: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

const IV_S: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The message schedule; BLAKE2b's rounds 10 and 11 repeat rounds 0 and 1.
const SIGMA: [[usize; 16]; 12] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
];

/// Hashes `data`, `n` whole leaves of `tree` (1 <= n <= `lanes`, each
/// `tree.leaf_size()` bytes, none of them the last node) numbered from
/// `first`, into `out`, one digest a leaf. Lanes beyond `n` hash leaf 0
/// again and are dropped. Each lane is hashed `chunk` bytes at a time (a
/// multiple of the block size; [`CHUNK`] but in tests), and `release` is
/// told of each range of `data` once it is hashed.
macro_rules! hash_leaves {
    (
        $tree:expr, $first:expr, $data:expr, $out:expr, $chunk:expr, $release:expr,
        lanes: $lanes:expr, word: $word:ty, block: $block:expr,
        state: $state:ident, compress: $compress:ident
    ) => {{
        assert!(available(), "the AVX-512 kernels need AVX-512F");
        let tree: &TreeParams = $tree;
        let data: &[u8] = $data;
        let chunk: usize = $chunk;
        assert!(
            chunk > 0 && chunk.is_multiple_of($block),
            "chunks of whole blocks"
        );
        let leaf = tree.leaf_size() as usize;
        let count = data.len() / leaf;
        assert!(
            (1..=$lanes).contains(&count) && data.len() == count * leaf,
            "whole leaves for the lanes"
        );
        let size = tree.digest_size();
        assert_eq!($out.len(), count * size, "one digest a leaf");
        // As the crates assert: a node offset past the algorithm's range
        // (48 bits for BLAKE2s) would be cut to fit, and name another leaf.
        let first: u64 = $first;
        assert!(
            first
                .checked_add(count as u64 - 1)
                .is_some_and(|last| last < tree.algorithm().max_leaves()),
            "node offsets past the algorithm's range"
        );
        let lane = |k: usize| {
            let k = if k < count { k } else { 0 };
            &data[k * leaf..(k + 1) * leaf]
        };
        let mut h = $state(tree, first);
        // Every block but the final one, a chunk at a time; each chunk is
        // handed back once the next is hashed (the last one with the final
        // block), so that no page is handed back twice or kept.
        let blocks = leaf.div_ceil($block);
        let whole = (blocks - 1) * $block;
        let (mut done, mut kept) = (0, 0);
        while done < whole {
            let end = (done + chunk).min(whole);
            let lanes: [&[u8]; $lanes] = std::array::from_fn(|k| &lane(k)[done..end]);
            // SAFETY: `available()` said the CPU has AVX-512F (asserted above).
            unsafe { $compress(&mut h, lanes, done as u64 + $block, 0) };
            if kept < done {
                for k in 0..count {
                    $release(k * leaf + kept..k * leaf + done);
                }
            }
            (kept, done) = (done, end);
        }
        // The final block, zero-padded, with the finalisation flag.
        let finals: [[u8; $block]; $lanes] = std::array::from_fn(|k| {
            let mut padded = [0u8; $block];
            padded[..leaf - whole].copy_from_slice(&lane(k)[whole..]);
            padded
        });
        let lanes: [&[u8]; $lanes] = std::array::from_fn(|k| &finals[k][..]);
        // SAFETY: as above.
        unsafe { $compress(&mut h, lanes, leaf as u64, <$word>::MAX) };
        if kept == 0 {
            // Leaves of one chunk: the group's bytes in one range, so that
            // pages shared by neighbouring small leaves are handed back too.
            $release(0..count * leaf);
        } else {
            for k in 0..count {
                $release(k * leaf + kept..(k + 1) * leaf);
            }
        }
        for (k, out) in $out.chunks_mut(size).enumerate() {
            let mut bytes = [0u8; 8 * size_of::<$word>()];
            for (word, bytes) in h.iter().zip(bytes.chunks_mut(size_of::<$word>())) {
                bytes.copy_from_slice(&word[k].to_le_bytes());
            }
            out.copy_from_slice(&bytes[..size]);
        }
    }};
}

/// The signature of [`hash_leaves_b`] and [`hash_leaves_s`].
pub(super) type HashLeaves =
    fn(&TreeParams, u64, &[u8], &mut [u8], usize, &mut dyn FnMut(Range<usize>));

/// BLAKE2b: see [`hash_leaves!`]. `out` holds `data.len() / leaf` digests.
pub(super) fn hash_leaves_b(
    tree: &TreeParams,
    first: u64,
    data: &[u8],
    out: &mut [u8],
    chunk: usize,
    release: &mut dyn FnMut(Range<usize>),
) {
    hash_leaves!(
        tree, first, data, out, chunk, release,
        lanes: LANES_B, word: u64, block: 128,
        state: state_b, compress: compress_b
    );
}

/// BLAKE2s: see [`hash_leaves!`]. `out` holds `data.len() / leaf` digests.
pub(super) fn hash_leaves_s(
    tree: &TreeParams,
    first: u64,
    data: &[u8],
    out: &mut [u8],
    chunk: usize,
    release: &mut dyn FnMut(Range<usize>),
) {
    hash_leaves!(
        tree, first, data, out, chunk, release,
        lanes: LANES_S, word: u32, block: 64,
        state: state_s, compress: compress_s
    );
}

/// The BLAKE2b state of leaves `first..first + 8`, word by word, lane by
/// lane: the IV xor the parameter block (`TreeParams::node`), whose only
/// per-lane word is the node offset, word 1.
fn state_b(tree: &TreeParams, first: u64) -> [[u64; LANES_B]; 8] {
    let node = tree.node(Node::Leaf {
        offset: first,
        last: LastNode::No,
    });
    let p0 = u64::from(node.digest_length)
        | u64::from(node.fanout) << 16
        | u64::from(node.max_depth) << 24
        | u64::from(node.leaf_length) << 32;
    let p2 = u64::from(node.node_depth) | u64::from(node.inner_length) << 8;
    std::array::from_fn(|word| {
        std::array::from_fn(|k| {
            IV_B[word]
                ^ match word {
                    0 => p0,
                    1 => first.wrapping_add(k as u64),
                    2 => p2,
                    _ => 0,
                }
        })
    })
}

/// The BLAKE2s state of leaves `first..first + 16`, as [`state_b`]: the
/// 48-bit node offset spans words 2 and 3.
fn state_s(tree: &TreeParams, first: u64) -> [[u32; LANES_S]; 8] {
    let node = tree.node(Node::Leaf {
        offset: first,
        last: LastNode::No,
    });
    let p0 = u32::from(node.digest_length)
        | u32::from(node.fanout) << 16
        | u32::from(node.max_depth) << 24;
    std::array::from_fn(|word| {
        std::array::from_fn(|k| {
            let offset = first.wrapping_add(k as u64);
            IV_S[word]
                ^ match word {
                    0 => p0,
                    1 => node.leaf_length,
                    2 => offset as u32,
                    3 => {
                        (offset >> 32) as u32 & 0xffff
                            | u32::from(node.node_depth) << 16
                            | u32::from(node.inner_length) << 24
                    }
                    _ => 0,
                }
        })
    })
}

/// One BLAKE2 round on the 16 state vectors `v` with message vectors `m`
/// in the order `SIGMA[r]`: `add` and `ror` are the 64- or 32-bit lane
/// operations, `rot` the four rotation counts.
macro_rules! round {
    ($add:ident, $ror:ident, $rot:expr, $v:ident, $m:ident, $r:expr) => {{
        let s = &SIGMA[$r];
        round!(@g $add, $ror, $rot, $v, 0, 4, 8, 12, $m[s[0]], $m[s[1]]);
        round!(@g $add, $ror, $rot, $v, 1, 5, 9, 13, $m[s[2]], $m[s[3]]);
        round!(@g $add, $ror, $rot, $v, 2, 6, 10, 14, $m[s[4]], $m[s[5]]);
        round!(@g $add, $ror, $rot, $v, 3, 7, 11, 15, $m[s[6]], $m[s[7]]);
        round!(@g $add, $ror, $rot, $v, 0, 5, 10, 15, $m[s[8]], $m[s[9]]);
        round!(@g $add, $ror, $rot, $v, 1, 6, 11, 12, $m[s[10]], $m[s[11]]);
        round!(@g $add, $ror, $rot, $v, 2, 7, 8, 13, $m[s[12]], $m[s[13]]);
        round!(@g $add, $ror, $rot, $v, 3, 4, 9, 14, $m[s[14]], $m[s[15]]);
    }};
    (@g $add:ident, $ror:ident, $rot:expr, $v:ident,
     $a:expr, $b:expr, $c:expr, $d:expr, $x:expr, $y:expr) => {
        $v[$a] = $add($add($v[$a], $v[$b]), $x);
        $v[$d] = $ror::<{ $rot[0] }>(_mm512_xor_si512($v[$d], $v[$a]));
        $v[$c] = $add($v[$c], $v[$d]);
        $v[$b] = $ror::<{ $rot[1] }>(_mm512_xor_si512($v[$b], $v[$c]));
        $v[$a] = $add($add($v[$a], $v[$b]), $y);
        $v[$d] = $ror::<{ $rot[2] }>(_mm512_xor_si512($v[$d], $v[$a]));
        $v[$c] = $add($v[$c], $v[$d]);
        $v[$b] = $ror::<{ $rot[3] }>(_mm512_xor_si512($v[$b], $v[$c]));
    };
}

/// The rounds, unrolled so that every message index is a constant and the
/// message vectors stay in registers.
macro_rules! rounds {
    ($add:ident, $ror:ident, $rot:expr, $v:ident, $m:ident, [$($r:expr),*]) => {
        $(round!($add, $ror, $rot, $v, $m, $r);)*
    };
}

const ROT_B: [i32; 4] = [32, 24, 16, 63];
const ROT_S: [i32; 4] = [16, 12, 8, 7];

/// Transposes 8 rows of 8 u64 (row k: lane k's 64 bytes) into 8 vectors
/// of one word each across the lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose_8x8(r: [__m512i; 8]) -> [__m512i; 8] {
    // Pairs of rows interleaved, then pairs of pairs, then halves.
    let t: [__m512i; 8] = std::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        if i & 1 == 0 {
            _mm512_unpacklo_epi64(x, y)
        } else {
            _mm512_unpackhi_epi64(x, y)
        }
    });
    let lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    let hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    let s = [
        _mm512_permutex2var_epi64(t[0], lo, t[2]),
        _mm512_permutex2var_epi64(t[0], hi, t[2]),
        _mm512_permutex2var_epi64(t[1], lo, t[3]),
        _mm512_permutex2var_epi64(t[1], hi, t[3]),
        _mm512_permutex2var_epi64(t[4], lo, t[6]),
        _mm512_permutex2var_epi64(t[4], hi, t[6]),
        _mm512_permutex2var_epi64(t[5], lo, t[7]),
        _mm512_permutex2var_epi64(t[5], hi, t[7]),
    ];
    let l = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
    let h = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
    [
        _mm512_permutex2var_epi64(s[0], l, s[4]),
        _mm512_permutex2var_epi64(s[2], l, s[6]),
        _mm512_permutex2var_epi64(s[1], l, s[5]),
        _mm512_permutex2var_epi64(s[3], l, s[7]),
        _mm512_permutex2var_epi64(s[0], h, s[4]),
        _mm512_permutex2var_epi64(s[2], h, s[6]),
        _mm512_permutex2var_epi64(s[1], h, s[5]),
        _mm512_permutex2var_epi64(s[3], h, s[7]),
    ]
}

/// Transposes 16 rows of 16 u32 (row k: lane k's 64 bytes) into 16
/// vectors of one word each across the lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose_16x16(r: [__m512i; 16]) -> [__m512i; 16] {
    // a: pairs of rows interleaved by 32 bits.
    let a: [__m512i; 16] = std::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        if i & 1 == 0 {
            _mm512_unpacklo_epi32(x, y)
        } else {
            _mm512_unpackhi_epi32(x, y)
        }
    });
    // b[g][w]: rows 4g..4g+4, words w, w+4, w+8, w+12 of each 128-bit lane.
    let b: [[__m512i; 4]; 4] = std::array::from_fn(|g| {
        let (a0, a1, a2, a3) = (a[4 * g], a[4 * g + 1], a[4 * g + 2], a[4 * g + 3]);
        [
            _mm512_unpacklo_epi64(a0, a2),
            _mm512_unpackhi_epi64(a0, a2),
            _mm512_unpacklo_epi64(a1, a3),
            _mm512_unpackhi_epi64(a1, a3),
        ]
    });
    // Then the 128-bit lanes, across the four groups.
    let mut c = [_mm512_setzero_si512(); 16];
    for w in 0..4 {
        let x0 = _mm512_shuffle_i32x4::<0x44>(b[0][w], b[1][w]);
        let x1 = _mm512_shuffle_i32x4::<0xEE>(b[0][w], b[1][w]);
        let x2 = _mm512_shuffle_i32x4::<0x44>(b[2][w], b[3][w]);
        let x3 = _mm512_shuffle_i32x4::<0xEE>(b[2][w], b[3][w]);
        c[w] = _mm512_shuffle_i32x4::<0x88>(x0, x2);
        c[w + 4] = _mm512_shuffle_i32x4::<0xDD>(x0, x2);
        c[w + 8] = _mm512_shuffle_i32x4::<0x88>(x1, x3);
        c[w + 12] = _mm512_shuffle_i32x4::<0xDD>(x1, x3);
    }
    c
}

/// Loads the state, word by word across the lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn load_state<W, const N: usize>(h: &[[W; N]; 8]) -> [__m512i; 8] {
    const { assert!(N * size_of::<W>() == 64) };
    // SAFETY: each row is exactly 64 bytes (asserted above).
    std::array::from_fn(|i| unsafe { _mm512_loadu_si512(h[i].as_ptr().cast()) })
}

/// Stores the state back, as [`load_state`] loaded it.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_state<W, const N: usize>(v: &[__m512i; 8], h: &mut [[W; N]; 8]) {
    const { assert!(N * size_of::<W>() == 64) };
    for (row, v) in h.iter_mut().zip(v) {
        // SAFETY: each row is exactly 64 bytes (asserted above), and the
        // exclusive borrow means nothing else refers to it.
        unsafe { _mm512_storeu_si512(row.as_mut_ptr().cast(), *v) };
    }
}

/// Loads 64 bytes of each lane at `offset`.
///
/// # Safety
///
/// `offset + 64 <= lane.len()` for every lane.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load_rows<const N: usize>(lanes: &[&[u8]; N], offset: usize) -> [__m512i; N] {
    std::array::from_fn(|k| {
        debug_assert!(offset + 64 <= lanes[k].len());
        // SAFETY: the caller guarantees `offset + 64 <= lanes[k].len()`.
        unsafe { _mm512_loadu_si512(lanes[k].as_ptr().add(offset).cast()) }
    })
}

/// Compresses every 128-byte block of the lanes (equal lengths, whole
/// blocks) into `h`: block `j` at byte count `counter + 128 j`, with the
/// finalisation flag `f0` (all ones for a leaf's final block, then the only
/// block). The block function is written out here, not called, so that the
/// state and message stay in registers.
///
/// # Safety
///
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn compress_b(h: &mut [[u64; LANES_B]; 8], lanes: [&[u8]; LANES_B], counter: u64, f0: u64) {
    let length = lanes[0].len();
    assert!(length.is_multiple_of(128) && lanes.iter().all(|lane| lane.len() == length));
    let mut state = load_state(h);
    let iv = |i: usize| _mm512_set1_epi64(IV_B[i] as i64);
    for block in (0..length).step_by(128) {
        // SAFETY: every lane is `length` bytes (asserted above) and
        // `block + 128 <= length`.
        let (low, high) = unsafe { (load_rows(&lanes, block), load_rows(&lanes, block + 64)) };
        let (low, high) = (transpose_8x8(low), transpose_8x8(high));
        let m: [__m512i; 16] = std::array::from_fn(|j| if j < 8 { low[j] } else { high[j - 8] });
        let t = counter + block as u64;
        let mut v = [
            state[0],
            state[1],
            state[2],
            state[3],
            state[4],
            state[5],
            state[6],
            state[7],
            iv(0),
            iv(1),
            iv(2),
            iv(3),
            _mm512_set1_epi64((IV_B[4] ^ t) as i64),
            iv(5),
            _mm512_set1_epi64((IV_B[6] ^ f0) as i64),
            iv(7),
        ];
        rounds!(
            _mm512_add_epi64,
            _mm512_ror_epi64,
            ROT_B,
            v,
            m,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        );
        for i in 0..8 {
            state[i] = _mm512_xor_si512(state[i], _mm512_xor_si512(v[i], v[i + 8]));
        }
    }
    store_state(&state, h);
}

/// [`compress_b`] for BLAKE2s: 64-byte blocks, a 64-bit byte count over
/// words 12 and 13.
///
/// # Safety
///
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn compress_s(h: &mut [[u32; LANES_S]; 8], lanes: [&[u8]; LANES_S], counter: u64, f0: u32) {
    let length = lanes[0].len();
    assert!(length.is_multiple_of(64) && lanes.iter().all(|lane| lane.len() == length));
    let mut state = load_state(h);
    let iv = |i: usize| _mm512_set1_epi32(IV_S[i] as i32);
    for block in (0..length).step_by(64) {
        // SAFETY: every lane is `length` bytes (asserted above) and
        // `block + 64 <= length`.
        let m = transpose_16x16(unsafe { load_rows(&lanes, block) });
        let t = counter + block as u64;
        let mut v = [
            state[0],
            state[1],
            state[2],
            state[3],
            state[4],
            state[5],
            state[6],
            state[7],
            iv(0),
            iv(1),
            iv(2),
            iv(3),
            _mm512_set1_epi32((IV_S[4] ^ t as u32) as i32),
            _mm512_set1_epi32((IV_S[5] ^ (t >> 32) as u32) as i32),
            _mm512_set1_epi32((IV_S[6] ^ f0) as i32),
            iv(7),
        ];
        rounds!(
            _mm512_add_epi32,
            _mm512_ror_epi32,
            ROT_S,
            v,
            m,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        );
        for i in 0..8 {
            state[i] = _mm512_xor_si512(state[i], _mm512_xor_si512(v[i], v[i + 8]));
        }
    }
    store_state(&state, h);
}
