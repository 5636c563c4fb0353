//! BLAKE2 leaf kernels for x86_64 CPUs with AVX2: BLAKE2b hashes 4 leaves
//! at once and BLAKE2s 8, one lane of a 256-bit register each, built as
//! the AVX-512 kernels are (`avx512.rs`): each block's message words loaded
//! from every lane's leaf with plain unaligned loads and transposed in
//! registers, the lanes' node offsets in the state. AVX2 has no rotation:
//! rotations by whole bytes are byte shuffles, the others two shifts and
//! an OR.
//!
//! # Bounds of `unsafe`
//!
//! As in `avx512.rs`: every load reads 32 bytes at `lane.as_ptr().add(offset)`
//! where `offset + 32 <= lane.len()` (`load_rows`, whose callers assert
//! every lane's length, a whole number of blocks), or a 32-byte row of the
//! state; every store writes a 32-byte row of the state through the
//! exclusive borrow of it; and the code runs only once [`available`] said
//! the CPU has AVX2.

use core::arch::x86_64::*;
use std::ops::Range;

use super::avx512::{CHUNK, IV_B, IV_S, SIGMA, hash_leaves, state_b, state_s};
use crate::params::TreeParams;

/// BLAKE2b leaves hashed at once.
pub(super) const LANES_B: usize = 4;
/// BLAKE2s leaves hashed at once.
pub(super) const LANES_S: usize = 8;

/// Whether this CPU runs these kernels; never under Miri.
pub(super) fn available() -> bool {
    !cfg!(miri) && is_x86_feature_detected!("avx2")
}

/// BLAKE2b: see `avx512::hash_leaves!`. `out` holds `data.len() / leaf`
/// digests.
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

/// BLAKE2s: see `avx512::hash_leaves!`. `out` holds `data.len() / leaf`
/// digests.
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

/// The bytes of `CHUNK`, to keep the import used where the macro is not.
const _: usize = CHUNK;

/// One BLAKE2 round on the 16 state vectors `v` with message vectors `m`
/// in the order `SIGMA[r]`: `add` the lane addition, `r0`..`r3` the four
/// rotations.
macro_rules! round {
    ($add:ident, [$r0:ident, $r1:ident, $r2:ident, $r3:ident], $v:ident, $m:ident, $r:expr) => {{
        let s = &SIGMA[$r];
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 0, 4, 8, 12, $m[s[0]], $m[s[1]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 1, 5, 9, 13, $m[s[2]], $m[s[3]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 2, 6, 10, 14, $m[s[4]], $m[s[5]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 3, 7, 11, 15, $m[s[6]], $m[s[7]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 0, 5, 10, 15, $m[s[8]], $m[s[9]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 1, 6, 11, 12, $m[s[10]], $m[s[11]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 2, 7, 8, 13, $m[s[12]], $m[s[13]]);
        round!(@g $add, [$r0, $r1, $r2, $r3], $v, 3, 4, 9, 14, $m[s[14]], $m[s[15]]);
    }};
    (@g $add:ident, [$r0:ident, $r1:ident, $r2:ident, $r3:ident], $v:ident,
     $a:expr, $b:expr, $c:expr, $d:expr, $x:expr, $y:expr) => {
        $v[$a] = $add($add($v[$a], $v[$b]), $x);
        $v[$d] = $r0(_mm256_xor_si256($v[$d], $v[$a]));
        $v[$c] = $add($v[$c], $v[$d]);
        $v[$b] = $r1(_mm256_xor_si256($v[$b], $v[$c]));
        $v[$a] = $add($add($v[$a], $v[$b]), $y);
        $v[$d] = $r2(_mm256_xor_si256($v[$d], $v[$a]));
        $v[$c] = $add($v[$c], $v[$d]);
        $v[$b] = $r3(_mm256_xor_si256($v[$b], $v[$c]));
    };
}

/// The rounds, unrolled so that every message index is a constant.
macro_rules! rounds {
    ($add:ident, $rot:tt, $v:ident, $m:ident, [$($r:expr),*]) => {
        $(round!($add, $rot, $v, $m, $r);)*
    };
}

/// A byte shuffle within each 128-bit half, the same in both.
#[target_feature(enable = "avx2")]
#[inline]
fn shuffle_bytes(x: __m256i, order: [i8; 16]) -> __m256i {
    // SAFETY: reads the 16 bytes of a local array.
    let half = unsafe { _mm_loadu_si128(order.as_ptr().cast()) };
    _mm256_shuffle_epi8(x, _mm256_broadcastsi128_si256(half))
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror64_32(x: __m256i) -> __m256i {
    _mm256_shuffle_epi32::<0b10_11_00_01>(x)
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror64_24(x: __m256i) -> __m256i {
    shuffle_bytes(x, [3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10])
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror64_16(x: __m256i) -> __m256i {
    shuffle_bytes(x, [2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9])
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror64_63(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi64::<63>(x), _mm256_add_epi64(x, x))
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror32_16(x: __m256i) -> __m256i {
    shuffle_bytes(x, [2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13])
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror32_12(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<12>(x), _mm256_slli_epi32::<20>(x))
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror32_8(x: __m256i) -> __m256i {
    shuffle_bytes(x, [1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12])
}

#[target_feature(enable = "avx2")]
#[inline]
fn ror32_7(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x))
}

/// Transposes 4 rows of 4 u64 (row k: 32 bytes of lane k) into 4 vectors
/// of one word each across the lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose_4x4(r: [__m256i; 4]) -> [__m256i; 4] {
    let t0 = _mm256_unpacklo_epi64(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi64(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi64(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi64(r[2], r[3]);
    [
        _mm256_permute2x128_si256::<0x20>(t0, t2),
        _mm256_permute2x128_si256::<0x20>(t1, t3),
        _mm256_permute2x128_si256::<0x31>(t0, t2),
        _mm256_permute2x128_si256::<0x31>(t1, t3),
    ]
}

/// Transposes 8 rows of 8 u32 (row k: 32 bytes of lane k) into 8 vectors
/// of one word each across the lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose_8x8(r: [__m256i; 8]) -> [__m256i; 8] {
    let t: [__m256i; 8] = std::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        if i & 1 == 0 {
            _mm256_unpacklo_epi32(x, y)
        } else {
            _mm256_unpackhi_epi32(x, y)
        }
    });
    // u[j]: words j and j + 4 of four lanes (0-3 for j < 4, else 4-7).
    let u: [__m256i; 8] = std::array::from_fn(|j| {
        let base = if j < 4 { 0 } else { 4 };
        let (x, y) = (t[base + (j % 4) / 2], t[base + 2 + (j % 4) / 2]);
        if j % 2 == 0 {
            _mm256_unpacklo_epi64(x, y)
        } else {
            _mm256_unpackhi_epi64(x, y)
        }
    });
    std::array::from_fn(|w| {
        let (x, y) = (u[w % 4], u[4 + w % 4]);
        if w < 4 {
            _mm256_permute2x128_si256::<0x20>(x, y)
        } else {
            _mm256_permute2x128_si256::<0x31>(x, y)
        }
    })
}

/// Loads the state, word by word across the lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn load_state<W, const N: usize>(h: &[[W; N]; 8]) -> [__m256i; 8] {
    const { assert!(N * size_of::<W>() == 32) };
    // SAFETY: each row is exactly 32 bytes (asserted above).
    std::array::from_fn(|i| unsafe { _mm256_loadu_si256(h[i].as_ptr().cast()) })
}

/// Stores the state back, as [`load_state`] loaded it.
#[target_feature(enable = "avx2")]
#[inline]
fn store_state<W, const N: usize>(v: &[__m256i; 8], h: &mut [[W; N]; 8]) {
    const { assert!(N * size_of::<W>() == 32) };
    for (row, v) in h.iter_mut().zip(v) {
        // SAFETY: each row is exactly 32 bytes (asserted above), and the
        // exclusive borrow means nothing else refers to it.
        unsafe { _mm256_storeu_si256(row.as_mut_ptr().cast(), *v) };
    }
}

/// Loads 32 bytes of each lane at `offset`.
///
/// # Safety
///
/// `offset + 32 <= lane.len()` for every lane.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load_rows<const N: usize>(lanes: &[&[u8]; N], offset: usize) -> [__m256i; N] {
    std::array::from_fn(|k| {
        debug_assert!(offset + 32 <= lanes[k].len());
        // SAFETY: the caller guarantees `offset + 32 <= lanes[k].len()`.
        unsafe { _mm256_loadu_si256(lanes[k].as_ptr().add(offset).cast()) }
    })
}

/// Compresses every 128-byte block of the lanes (equal lengths, whole
/// blocks) into `h`, as `avx512::compress_b` does.
///
/// # Safety
///
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn compress_b(h: &mut [[u64; LANES_B]; 8], lanes: [&[u8]; LANES_B], counter: u64, f0: u64) {
    let length = lanes[0].len();
    assert!(length.is_multiple_of(128) && lanes.iter().all(|lane| lane.len() == length));
    let mut state = load_state(h);
    let iv = |i: usize| _mm256_set1_epi64x(IV_B[i] as i64);
    for block in (0..length).step_by(128) {
        // SAFETY: every lane is `length` bytes (asserted above) and
        // `block + 128 <= length`.
        let quarters: [[__m256i; 4]; 4] =
            std::array::from_fn(|q| transpose_4x4(unsafe { load_rows(&lanes, block + 32 * q) }));
        let m: [__m256i; 16] = std::array::from_fn(|j| quarters[j / 4][j % 4]);
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
            _mm256_set1_epi64x((IV_B[4] ^ t) as i64),
            iv(5),
            _mm256_set1_epi64x((IV_B[6] ^ f0) as i64),
            iv(7),
        ];
        rounds!(
            _mm256_add_epi64,
            [ror64_32, ror64_24, ror64_16, ror64_63],
            v,
            m,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        );
        for i in 0..8 {
            state[i] = _mm256_xor_si256(state[i], _mm256_xor_si256(v[i], v[i + 8]));
        }
    }
    store_state(&state, h);
}

/// [`compress_b`] for BLAKE2s: 64-byte blocks, a 64-bit byte count over
/// words 12 and 13.
///
/// # Safety
///
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn compress_s(h: &mut [[u32; LANES_S]; 8], lanes: [&[u8]; LANES_S], counter: u64, f0: u32) {
    let length = lanes[0].len();
    assert!(length.is_multiple_of(64) && lanes.iter().all(|lane| lane.len() == length));
    let mut state = load_state(h);
    let iv = |i: usize| _mm256_set1_epi32(IV_S[i] as i32);
    for block in (0..length).step_by(64) {
        // SAFETY: every lane is `length` bytes (asserted above) and
        // `block + 64 <= length`.
        let halves: [[__m256i; 8]; 2] =
            std::array::from_fn(|h| transpose_8x8(unsafe { load_rows(&lanes, block + 32 * h) }));
        let m: [__m256i; 16] = std::array::from_fn(|j| halves[j / 8][j % 8]);
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
            _mm256_set1_epi32((IV_S[4] ^ t as u32) as i32),
            _mm256_set1_epi32((IV_S[5] ^ (t >> 32) as u32) as i32),
            _mm256_set1_epi32((IV_S[6] ^ f0) as i32),
            iv(7),
        ];
        rounds!(
            _mm256_add_epi32,
            [ror32_16, ror32_12, ror32_8, ror32_7],
            v,
            m,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        );
        for i in 0..8 {
            state[i] = _mm256_xor_si256(state[i], _mm256_xor_si256(v[i], v[i + 8]));
        }
    }
    store_state(&state, h);
}
