//! The portable constant-time comparator, [`super::Level::Portable`].
//!
//! It reads bytes at 0, `len/2` and `len-1` for 1..=3 bytes, two
//! overlapping 32-bit words for 4..=7, and from 8 bytes on 32-byte blocks
//! (four native-endian `u64` XORs), then 64-bit words, the last one
//! overlapping. All differences are OR-ed into one accumulator, which
//! passes through [`core::hint::black_box`] after each block, so that the
//! compiler cannot turn the loop into one that stops at the first
//! difference (best effort: the tests check the compiled code under
//! valgrind).

use core::hint::black_box;

const BLOCK: usize = 32;

/// The OR of `x[i] ^ y[i]` over one block, as a `u64` (0 iff equal).
#[inline(always)]
fn block_diff(x: &[u8; BLOCK], y: &[u8; BLOCK]) -> u64 {
    let mut d = 0u64;
    for (xs, ys) in x.as_chunks::<8>().0.iter().zip(y.as_chunks::<8>().0) {
        d |= u64::from_ne_bytes(*xs) ^ u64::from_ne_bytes(*ys);
    }
    d
}

/// The XOR of the 8 bytes at `at` in `a` and `b`.
#[inline(always)]
fn word_diff(a: &[u8], b: &[u8], at: usize) -> u64 {
    let x = a[at..at + 8].as_chunks::<8>().0[0];
    let y = b[at..at + 8].as_chunks::<8>().0[0];
    u64::from_ne_bytes(x) ^ u64::from_ne_bytes(y)
}

/// The XOR of the 4 bytes at `at` in `a` and `b`.
#[inline(always)]
fn half_diff(a: &[u8], b: &[u8], at: usize) -> u32 {
    let x = a[at..at + 4].as_chunks::<4>().0[0];
    let y = b[at..at + 4].as_chunks::<4>().0[0];
    u32::from_ne_bytes(x) ^ u32::from_ne_bytes(y)
}

/// 0 if `a == b`, non-zero otherwise, in time that depends only on the
/// length (which must be the same). Never inlined, so that every caller runs the one compiled body that the
/// tests check, not a copy the compiler shaped to the call site.
#[inline(never)]
pub(super) fn timingsafe_bcmp(a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(a.len(), b.len());
    let len = a.len();
    // Every branch below is on the length, which is public.
    let mut acc = 0u64;
    if len >= 8 {
        let (a_blocks, _) = a.as_chunks::<BLOCK>();
        let (b_blocks, _) = b.as_chunks::<BLOCK>();
        for (x, y) in a_blocks.iter().zip(b_blocks) {
            acc = black_box(acc | block_diff(x, y));
        }
        // Fewer than 32 bytes remain: whole words, then the last 8 bytes
        // (overlapping what came before).
        let mut at = a_blocks.len() * BLOCK;
        while at + 8 < len {
            acc |= word_diff(a, b, at);
            at += 8;
        }
        acc |= word_diff(a, b, len - 8);
    } else if len >= 4 {
        acc = u64::from(half_diff(a, b, 0) | half_diff(a, b, len - 4));
    } else if len >= 1 {
        let mid = len / 2;
        acc = u64::from((a[0] ^ b[0]) | (a[mid] ^ b[mid]) | (a[len - 1] ^ b[len - 1]));
    }
    let acc = black_box(acc);
    // Fold 64 bits into 32 without a branch: non-zero iff `acc` is.
    (acc | (acc >> 32)) as u32 as i32
}
