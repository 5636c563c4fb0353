//! BLAKE2 leaf kernels for x86_64 CPUs with AVX-512F: BLAKE2b hashes 8
//! leaves at once and BLAKE2s 16, one lane of a 512-bit register each.
//!
//! Against the crates' AVX2 kernels (4 and 8 lanes) they gain twice: twice
//! the lanes per instruction, and a rotation is one `vprorq`/`vprord`
//! instead of two shifts and an OR. Each block's message words are loaded
//! from every lane's leaf with plain unaligned loads and transposed in
//! registers (gathers measured slower).
//!
//! Every lane has its own leaf: its bytes (any length), its node offset,
//! whether it is its input's last node, and its own byte counter. All lanes
//! compress their ordinary blocks together, as many as the lane with the
//! fewest left has; a lane at its final block is finished in a step of its
//! own (the others' results there are not kept) and takes the next leaf,
//! as `blake2_simd`'s `many` does. Results are proved equal to the crates'
//! by the differential tests in `kernel` and `tests/integration/vectors.rs`.
//!
//! # Bounds of `unsafe`
//!
//! Every load reads 64 bytes at `lane.as_ptr().add(offset)` where
//! `offset + 64 <= lane.len()` (`load_rows`, whose callers assert every
//! lane's length, a whole number of blocks), or a 64-byte row of the state;
//! every store writes a 64-byte row of the state, through the exclusive
//! borrow of it. And the AVX-512 code runs only once [`available`] said the
//! CPU has AVX-512F: the entry points assert it.

use core::arch::x86_64::*;
use std::ops::Range;

use super::{LANES_B, LANES_S, LeafJob};
use crate::params::{LastNode, Node, TreeParams};

/// The most bytes of each lane compressed in one call. A multiple of both
/// block sizes.
pub(super) const CHUNK: usize = 2 << 20;

/// What a finished or empty lane reads: never hashed into a result.
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// How many bytes of a leaf a lane compresses before it hands their pages
/// back (`release`), and its last ones when the leaf ends, so that a thread
/// keeps at most 48 MiB (BLAKE2b, 8 lanes) or 32 MiB (BLAKE2s, 16 lanes)
/// of its leaves resident. Each hand-back costs the other threads a TLB
/// flush: handing back every 2 MiB, two threads hashed a big file at 1.73x
/// one thread's speed; handing back BLAKE2b's default 5 MiB leaves whole
/// (a lane group's as one range, see the engine's `HandBack`), at 1.93x.
/// Whole pages.
const HAND_BACK_B: usize = 6 << 20;
const HAND_BACK_S: usize = 2 << 20;

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

/// Hashes `jobs` (leaves of `tree`) into `out`, one digest a job in order,
/// `lanes` at a time with lane refill (see the module documentation);
/// `release(job, bytes)` is told of each job's bytes once hashed.
macro_rules! hash_jobs {
    (
        $tree:expr, $jobs:expr, $out:expr, $release:expr,
        lanes: $lanes:expr, word: $word:ty, block: $block:expr, hand_back: $hand_back:expr,
        state: $state:ident, compress: $compress:ident
    ) => {{
        assert!(available(), "the AVX-512 kernels need AVX-512F");
        let (tree, jobs): (&TreeParams, &[LeafJob<'_>]) = ($tree, $jobs);
        let size = tree.digest_size();
        assert_eq!($out.len(), jobs.len() * size, "one digest a job");
        for job in jobs {
            // As the crates assert: a node offset past the algorithm's
            // range would be cut to fit, and name another leaf.
            assert!(
                job.index < tree.algorithm().max_leaves(),
                "node offset out of range"
            );
            assert!(job.bytes.len() as u64 <= tree.leaf_size(), "a leaf's bytes");
        }
        let mut h = [[0 as $word; $lanes]; 8];
        // Per lane: the job it hashes and the bytes compressed so far.
        let mut slots: [Option<(usize, usize)>; $lanes] = [None; $lanes];
        let mut next = 0;
        let hand_back: usize = $hand_back;
        // The ordinary blocks a job has: all but its final one.
        let ordinary = |job: &LeafJob<'_>| job.bytes.len().saturating_sub(1) / $block * $block;
        loop {
            for (k, slot) in slots.iter_mut().enumerate() {
                if slot.is_none() && next < jobs.len() {
                    $state(tree, &jobs[next], k, &mut h);
                    *slot = Some((next, 0));
                    next += 1;
                }
            }
            let busy =
                |slot: &Option<(usize, usize)>| slot.map(|(job, done)| ordinary(&jobs[job]) - done);
            let Some(step) = slots.iter().filter_map(busy).min() else {
                break;
            };
            let step = step.min(CHUNK);
            if step > 0 {
                let lanes: [&[u8]; $lanes] = std::array::from_fn(|k| match slots[k] {
                    Some((job, done)) => &jobs[job].bytes[done..done + step],
                    None => &ZEROS[..step],
                });
                let t: [u64; $lanes] =
                    std::array::from_fn(|k| slots[k].map_or(0, |(_, done)| done as u64));
                // SAFETY: `available()` said the CPU has AVX-512F (asserted above).
                unsafe { $compress(&mut h, lanes, t, [0; $lanes], [0; $lanes], !0) };
                for (job, done) in slots.iter_mut().flatten() {
                    let held = *done / hand_back * hand_back;
                    *done += step;
                    let through = *done / hand_back * hand_back;
                    if through > held {
                        $release(*job, held..through);
                    }
                }
                continue;
            }
            // Lanes at their final block: that block, zero-padded, with the
            // finalisation flags; the other lanes' results are not kept.
            let mut finals = [[0u8; $block]; $lanes];
            let (mut t, mut f0, mut f1, mut keep) = ([0u64; $lanes], [0; $lanes], [0; $lanes], 0);
            for (k, slot) in slots.iter().enumerate() {
                if let Some((job, done)) = *slot
                    && ordinary(&jobs[job]) == done
                {
                    let bytes = &jobs[job].bytes[done..];
                    finals[k][..bytes.len()].copy_from_slice(bytes);
                    // (The counter is the leaf's length: `compress` adds
                    // the block to the count before it, wrapping.)
                    t[k] = (jobs[job].bytes.len() as u64).wrapping_sub($block);
                    f0[k] = <$word>::MAX;
                    f1[k] = if jobs[job].last { <$word>::MAX } else { 0 };
                    keep |= 1 << k;
                }
            }
            let lanes: [&[u8]; $lanes] = std::array::from_fn(|k| &finals[k][..]);
            // SAFETY: as above.
            unsafe { $compress(&mut h, lanes, t, f0, f1, keep) };
            for (k, slot) in slots.iter_mut().enumerate() {
                if keep & (1 << k) == 0 {
                    continue;
                }
                let (job, done) = slot.take().expect("a kept lane has a job");
                $release(job, done / hand_back * hand_back..jobs[job].bytes.len());
                let mut bytes = [0u8; 8 * size_of::<$word>()];
                for (word, bytes) in h.iter().zip(bytes.chunks_mut(size_of::<$word>())) {
                    bytes.copy_from_slice(&word[k].to_le_bytes());
                }
                $out[job * size..(job + 1) * size].copy_from_slice(&bytes[..size]);
            }
        }
    }};
}

/// BLAKE2b: see [`hash_jobs!`].
pub(super) fn hash_jobs_b(
    tree: &TreeParams,
    jobs: &[LeafJob<'_>],
    out: &mut [u8],
    release: &mut dyn FnMut(usize, Range<usize>),
) {
    hash_jobs!(
        tree, jobs, out, release,
        lanes: LANES_B, word: u64, block: 128, hand_back: HAND_BACK_B,
        state: state_b, compress: compress_b
    );
}

/// BLAKE2s: see [`hash_jobs!`].
pub(super) fn hash_jobs_s(
    tree: &TreeParams,
    jobs: &[LeafJob<'_>],
    out: &mut [u8],
    release: &mut dyn FnMut(usize, Range<usize>),
) {
    hash_jobs!(
        tree, jobs, out, release,
        lanes: LANES_S, word: u32, block: 64, hand_back: HAND_BACK_S,
        state: state_s, compress: compress_s
    );
}

/// Sets lane `k` of the BLAKE2b state to a leaf's start: the IV xor its
/// parameter block (`TreeParams::node`).
fn state_b(tree: &TreeParams, job: &LeafJob<'_>, k: usize, h: &mut [[u64; LANES_B]; 8]) {
    let node = tree.node(Node::Leaf {
        offset: job.index,
        last: LastNode::No,
    });
    let words = [
        u64::from(node.digest_length)
            | u64::from(node.fanout) << 16
            | u64::from(node.max_depth) << 24
            | u64::from(node.leaf_length) << 32,
        node.node_offset,
        u64::from(node.node_depth) | u64::from(node.inner_length) << 8,
    ];
    for (word, h) in h.iter_mut().enumerate() {
        h[k] = IV_B[word] ^ words.get(word).copied().unwrap_or(0);
    }
}

/// Sets lane `k` of the BLAKE2s state to a leaf's start, as [`state_b`]:
/// the 48-bit node offset spans words 2 and 3.
fn state_s(tree: &TreeParams, job: &LeafJob<'_>, k: usize, h: &mut [[u32; LANES_S]; 8]) {
    let node = tree.node(Node::Leaf {
        offset: job.index,
        last: LastNode::No,
    });
    let words = [
        u32::from(node.digest_length)
            | u32::from(node.fanout) << 16
            | u32::from(node.max_depth) << 24,
        node.leaf_length,
        node.node_offset as u32,
        (node.node_offset >> 32) as u32 & 0xffff
            | u32::from(node.node_depth) << 16
            | u32::from(node.inner_length) << 24,
    ];
    for (word, h) in h.iter_mut().enumerate() {
        h[k] = IV_S[word] ^ words.get(word).copied().unwrap_or(0);
    }
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

/// Stores the lanes set in `keep` back, as [`load_state`] loaded them.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_state<W, const N: usize>(v: &[__m512i; 8], h: &mut [[W; N]; 8], keep: u16) {
    const { assert!(N * size_of::<W>() == 64) };
    for (row, v) in h.iter_mut().zip(v) {
        let row = row.as_mut_ptr();
        // SAFETY: each row is exactly 64 bytes (asserted above), and the
        // exclusive borrow means nothing else refers to it.
        unsafe {
            match N {
                8 => _mm512_mask_storeu_epi64(row.cast(), keep as u8, *v),
                _ => _mm512_mask_storeu_epi32(row.cast(), keep, *v),
            }
        }
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

/// Compresses the lanes' blocks (equal lengths, whole blocks) into `h`:
/// lane `k`'s counter starts at `t[k]` (the bytes before its first block)
/// and grows a block at a time (wrapping), with the finalisation flags `f0[k]` and
/// `f1[k]` (the last node's); only the lanes set in `keep` get the result.
/// The block function is written out here, not called, so that the state
/// and message stay in registers.
///
/// # Safety
///
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn compress_b(
    h: &mut [[u64; LANES_B]; 8],
    lanes: [&[u8]; LANES_B],
    t: [u64; LANES_B],
    f0: [u64; LANES_B],
    f1: [u64; LANES_B],
    keep: u16,
) {
    let length = lanes[0].len();
    assert!(length.is_multiple_of(128) && lanes.iter().all(|lane| lane.len() == length));
    let mut state = load_state(h);
    let iv = |i: usize| _mm512_set1_epi64(IV_B[i] as i64);
    let per_lane = |words: [u64; LANES_B]| {
        // SAFETY: 8 u64 are 64 bytes.
        unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
    };
    let block = _mm512_set1_epi64(128);
    let mut counter = per_lane(t);
    let (f0, f1) = (per_lane(f0), per_lane(f1));
    for at in (0..length).step_by(128) {
        // SAFETY: every lane is `length` bytes (asserted above) and
        // `at + 128 <= length`.
        let (low, high) = unsafe { (load_rows(&lanes, at), load_rows(&lanes, at + 64)) };
        let (low, high) = (transpose_8x8(low), transpose_8x8(high));
        let m: [__m512i; 16] = std::array::from_fn(|j| if j < 8 { low[j] } else { high[j - 8] });
        counter = _mm512_add_epi64(counter, block);
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
            _mm512_xor_si512(iv(4), counter),
            iv(5),
            _mm512_xor_si512(iv(6), f0),
            _mm512_xor_si512(iv(7), f1),
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
    store_state(&state, h, keep);
}

/// [`compress_b`] for BLAKE2s: 64-byte blocks. A leaf's counter stays
/// below 2^32 (leaves are at most 2^32 - 1 bytes): its high word is 0, and
/// `t` counts modulo 2^32.
///
/// # Safety
///
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn compress_s(
    h: &mut [[u32; LANES_S]; 8],
    lanes: [&[u8]; LANES_S],
    t: [u64; LANES_S],
    f0: [u32; LANES_S],
    f1: [u32; LANES_S],
    keep: u16,
) {
    let length = lanes[0].len();
    assert!(length.is_multiple_of(64) && lanes.iter().all(|lane| lane.len() == length));
    let mut state = load_state(h);
    let iv = |i: usize| _mm512_set1_epi32(IV_S[i] as i32);
    let per_lane = |words: [u32; LANES_S]| {
        // SAFETY: 16 u32 are 64 bytes.
        unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
    };
    let block = _mm512_set1_epi32(64);
    let mut counter = per_lane(t.map(|t| t as u32));
    let (f0, f1) = (per_lane(f0), per_lane(f1));
    for at in (0..length).step_by(64) {
        // SAFETY: every lane is `length` bytes (asserted above) and
        // `at + 64 <= length`.
        let m = transpose_16x16(unsafe { load_rows(&lanes, at) });
        counter = _mm512_add_epi32(counter, block);
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
            _mm512_xor_si512(iv(4), counter),
            iv(5),
            _mm512_xor_si512(iv(6), f0),
            _mm512_xor_si512(iv(7), f1),
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
    store_state(&state, h, keep);
}
