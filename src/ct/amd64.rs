//! The x86_64 constant-time comparators: two hand-written assembly functions
//! in the style of FreeBSD's amd64 `timingsafe_bcmp(3)`, `scalar`
//! (general-purpose registers only) and `baseline` (SSE2), written as naked
//! functions so that no build script or C compiler is needed.
//!
//! Both follow the System V AMD64 calling convention
//! (`a` in `rdi`, `b` in `rsi`, `len` in `rdx`, result in `eax`) and share
//! these rules, which the test suite checks by machine:
//!
//! - They branch on the length only. Each length class reads the bytes with
//!   a fixed pattern of loads, overlapping ones where the length is not a
//!   multiple of the load width (the head and the tail of the window), so
//!   they never read outside `[p, p + len)` and never depend on alignment.
//! - Every instruction is on Intel's list of data-operand-independent-timing
//!   instructions: `mov`, `movzx`, `xor`, `or`, `lea`, `add`, `sub`, `shr`,
//!   `shl`, `cmp`/`test` and `jcc` on the length or on addresses, `jmp`,
//!   `ret`, and the SSE2 `movdqu`, `pxor`, `por`, `pcmpeqb`, `pmovmskb`.
//! - Register roles never mix: `rdi`, `rsi`, `rdx`, `rcx` only ever hold
//!   addresses and lengths; `rax`, `r8`–`r10` and `xmm0`–`xmm5` hold the
//!   data. The disassembly test relies on this to prove that no flag
//!   tested by a branch and no address came from the data.
//!
//! The result is 0 if the bytes are equal and non-zero otherwise: the OR of
//! all the XOR differences, folded to 32 bits (scalar), or the inverted
//! `pcmpeqb` mask of that OR (baseline).

/// Constant-time comparison with general-purpose registers only.
///
/// Length classes (`len` in `rdx`):
///
/// | length   | loads from each buffer                          |
/// |----------|-------------------------------------------------|
/// | 0        | none, returns 0                                 |
/// | 1..=3    | bytes at 0, `len/2`, `len-1`                    |
/// | 4..=16   | 32-bit words at 0, `4k`, `len-4-4k`, `len-4`, `k = len/8` |
/// | 17..=32  | 64-bit words at 0, 8, `len-16`, `len-8`         |
/// | 33..     | a loop of 32 bytes (4 words) while the cursor is below `len-32`, then the last 32 bytes |
///
/// # Safety
///
/// `a` and `b` must each be valid for reads of `len` bytes.
// SAFETY (of the naked attribute): the body is a complete function in the
// System V AMD64 ABI: it reads its arguments from rdi/rsi/rdx, writes only
// caller-saved registers (rax, rcx, rsi, rdi, r8-r10, flags), never touches
// the stack and returns with `ret`; it reads memory only inside the two
// windows the caller vouches for.
#[unsafe(naked)]
unsafe extern "sysv64" fn scalar_asm(a: *const u8, b: *const u8, len: usize) -> i32 {
    core::arch::naked_asm!(
        // Dispatch on the length (public), most likely classes first.
        "cmp rdx, 16",
        "ja 5f",
        "cmp rdx, 4",
        "jae 3f",
        "test rdx, rdx",
        "jnz 2f",
        // len == 0: equal.
        "xor eax, eax",
        "ret",
        // 1..=3: bytes at 0, len/2 and len-1 (the same byte up to 3 times).
        "2:",
        "mov rcx, rdx",
        "shr rcx, 1",
        "movzx eax, byte ptr [rdi]",
        "movzx r8d, byte ptr [rsi]",
        "movzx r9d, byte ptr [rdi + rcx]",
        "movzx r10d, byte ptr [rsi + rcx]",
        "xor eax, r8d",
        "xor r9d, r10d",
        "movzx r8d, byte ptr [rdi + rdx - 1]",
        "movzx r10d, byte ptr [rsi + rdx - 1]",
        "xor r8d, r10d",
        "or eax, r9d",
        "or eax, r8d",
        "ret",
        // 4..=16: 32-bit words at 0, 4k, len-4-4k and len-4 with
        // k = len/8 (0, 1 or 2): they cover [0, 4+4k) and [len-4-4k, len),
        // which meet because len <= 8+8k.
        "3:",
        "mov rcx, rdx",
        "shr rcx, 3",
        "shl rcx, 2",
        "mov eax, dword ptr [rdi]",
        "mov r8d, dword ptr [rdi + rdx - 4]",
        "mov r9d, dword ptr [rdi + rcx]",
        "xor eax, dword ptr [rsi]",
        "xor r8d, dword ptr [rsi + rdx - 4]",
        "xor r9d, dword ptr [rsi + rcx]",
        "sub rdx, rcx",
        "mov r10d, dword ptr [rdi + rdx - 4]",
        "xor r10d, dword ptr [rsi + rdx - 4]",
        "or eax, r8d",
        "or r9d, r10d",
        "or eax, r9d",
        "ret",
        "5:",
        "cmp rdx, 32",
        "ja 6f",
        // 17..=32: 64-bit words at 0, 8, len-16 and len-8.
        "mov rax, qword ptr [rdi]",
        "mov r8, qword ptr [rdi + 8]",
        "mov r9, qword ptr [rdi + rdx - 16]",
        "mov r10, qword ptr [rdi + rdx - 8]",
        "xor rax, qword ptr [rsi]",
        "xor r8, qword ptr [rsi + 8]",
        "xor r9, qword ptr [rsi + rdx - 16]",
        "xor r10, qword ptr [rsi + rdx - 8]",
        "or rax, r8",
        "or r9, r10",
        "or rax, r9",
        "jmp 8f",
        // 33..: 32 bytes per iteration while rdi < rcx = a + len - 32, then
        // the 32 bytes at rcx (overlapping the last iteration). rsi becomes
        // b - a so that [rdi + rsi] addresses b.
        "6:",
        "lea rcx, [rdi + rdx - 32]",
        "sub rsi, rdi",
        "xor eax, eax",
        "xor r8d, r8d",
        "7:",
        "mov r9, qword ptr [rdi]",
        "mov r10, qword ptr [rdi + 8]",
        "xor r9, qword ptr [rdi + rsi]",
        "xor r10, qword ptr [rdi + rsi + 8]",
        "or rax, r9",
        "or r8, r10",
        "mov r9, qword ptr [rdi + 16]",
        "mov r10, qword ptr [rdi + 24]",
        "xor r9, qword ptr [rdi + rsi + 16]",
        "xor r10, qword ptr [rdi + rsi + 24]",
        "or rax, r9",
        "or r8, r10",
        "add rdi, 32",
        "cmp rdi, rcx",
        "jb 7b",
        "mov r9, qword ptr [rcx]",
        "mov r10, qword ptr [rcx + 8]",
        "xor r9, qword ptr [rcx + rsi]",
        "xor r10, qword ptr [rcx + rsi + 8]",
        "or rax, r9",
        "or r8, r10",
        "mov r9, qword ptr [rcx + 16]",
        "mov r10, qword ptr [rcx + 24]",
        "xor r9, qword ptr [rcx + rsi + 16]",
        "xor r10, qword ptr [rcx + rsi + 24]",
        "or rax, r9",
        "or r8, r10",
        "or rax, r8",
        // Fold the 64-bit difference into eax: non-zero iff rax is.
        "8:",
        "mov r8, rax",
        "shr r8, 32",
        "or eax, r8d",
        "ret",
    )
}

/// Constant-time comparison with SSE2 (unaligned 16-byte loads).
///
/// Length classes (`len` in `rdx`):
///
/// | length   | loads from each buffer                          |
/// |----------|-------------------------------------------------|
/// | 0        | none, returns 0                                 |
/// | 1..=3    | bytes at 0, `len/2`, `len-1`                    |
/// | 4..=16   | 32-bit words at 0, `4k`, `len-4-4k`, `len-4`, `k = len/8` |
/// | 17..=64  | 16-byte vectors at 0, `16k`, `len-16-16k`, `len-16`, `k = len/32` |
/// | 65..     | a loop of 64 bytes (4 vectors) while the cursor is below `len-64`, then the last 64 bytes |
///
/// Up to 16 bytes it is the scalar code (general-purpose registers are
/// cheaper there); beyond, the differences are OR-ed in `xmm0`, compared
/// with zero by `pcmpeqb` and returned as `pmovmskb ^ 0xffff`.
///
/// # Safety
///
/// `a` and `b` must each be valid for reads of `len` bytes.
// SAFETY (of the naked attribute): the body is a complete function in the
// System V AMD64 ABI: it reads its arguments from rdi/rsi/rdx, writes only
// caller-saved registers (rax, rcx, rsi, rdi, r8-r10, xmm0-xmm5, flags),
// never touches the stack and returns with `ret`; it reads memory only
// inside the two windows the caller vouches for. SSE2 is part of the x86_64
// baseline, so no feature detection is needed.
#[unsafe(naked)]
unsafe extern "sysv64" fn baseline_asm(a: *const u8, b: *const u8, len: usize) -> i32 {
    core::arch::naked_asm!(
        // Dispatch on the length (public), most likely classes first.
        "cmp rdx, 16",
        "ja 5f",
        "cmp rdx, 4",
        "jae 3f",
        "test rdx, rdx",
        "jnz 2f",
        // len == 0: equal.
        "xor eax, eax",
        "ret",
        // 1..=3: bytes at 0, len/2 and len-1 (the same byte up to 3 times).
        "2:",
        "mov rcx, rdx",
        "shr rcx, 1",
        "movzx eax, byte ptr [rdi]",
        "movzx r8d, byte ptr [rsi]",
        "movzx r9d, byte ptr [rdi + rcx]",
        "movzx r10d, byte ptr [rsi + rcx]",
        "xor eax, r8d",
        "xor r9d, r10d",
        "movzx r8d, byte ptr [rdi + rdx - 1]",
        "movzx r10d, byte ptr [rsi + rdx - 1]",
        "xor r8d, r10d",
        "or eax, r9d",
        "or eax, r8d",
        "ret",
        // 4..=16: 32-bit words at 0, 4k, len-4-4k and len-4 with
        // k = len/8 (0, 1 or 2): they cover [0, 4+4k) and [len-4-4k, len),
        // which meet because len <= 8+8k.
        "3:",
        "mov rcx, rdx",
        "shr rcx, 3",
        "shl rcx, 2",
        "mov eax, dword ptr [rdi]",
        "mov r8d, dword ptr [rdi + rdx - 4]",
        "mov r9d, dword ptr [rdi + rcx]",
        "xor eax, dword ptr [rsi]",
        "xor r8d, dword ptr [rsi + rdx - 4]",
        "xor r9d, dword ptr [rsi + rcx]",
        "sub rdx, rcx",
        "mov r10d, dword ptr [rdi + rdx - 4]",
        "xor r10d, dword ptr [rsi + rdx - 4]",
        "or eax, r8d",
        "or r9d, r10d",
        "or eax, r9d",
        "ret",
        "5:",
        "cmp rdx, 64",
        "ja 7f",
        // 17..=64: vectors at 0, 16k, len-16-16k and len-16 with
        // k = len/32 (0, 1 or 2): they cover [0, 16+16k) and
        // [len-16-16k, len), which meet because len <= 32+32k.
        "mov rcx, rdx",
        "shr rcx, 5",
        "shl rcx, 4",
        "movdqu xmm0, xmmword ptr [rdi]",
        "movdqu xmm1, xmmword ptr [rsi]",
        "movdqu xmm2, xmmword ptr [rdi + rdx - 16]",
        "movdqu xmm3, xmmword ptr [rsi + rdx - 16]",
        "pxor xmm0, xmm1",
        "pxor xmm2, xmm3",
        "movdqu xmm1, xmmword ptr [rdi + rcx]",
        "movdqu xmm3, xmmword ptr [rsi + rcx]",
        "sub rdx, rcx",
        "movdqu xmm4, xmmword ptr [rdi + rdx - 16]",
        "movdqu xmm5, xmmword ptr [rsi + rdx - 16]",
        "pxor xmm1, xmm3",
        "pxor xmm4, xmm5",
        "por xmm0, xmm2",
        "por xmm1, xmm4",
        "por xmm0, xmm1",
        "jmp 9f",
        // 65..: 64 bytes per iteration while rdi < rcx = a + len - 64, then
        // the 64 bytes at rcx (overlapping the last iteration). rsi becomes
        // b - a so that [rdi + rsi] addresses b. Two accumulators.
        "7:",
        "lea rcx, [rdi + rdx - 64]",
        "sub rsi, rdi",
        "pxor xmm0, xmm0",
        "pxor xmm1, xmm1",
        "8:",
        "movdqu xmm2, xmmword ptr [rdi]",
        "movdqu xmm3, xmmword ptr [rdi + rsi]",
        "movdqu xmm4, xmmword ptr [rdi + 16]",
        "movdqu xmm5, xmmword ptr [rdi + rsi + 16]",
        "pxor xmm2, xmm3",
        "pxor xmm4, xmm5",
        "por xmm0, xmm2",
        "por xmm1, xmm4",
        "movdqu xmm2, xmmword ptr [rdi + 32]",
        "movdqu xmm3, xmmword ptr [rdi + rsi + 32]",
        "movdqu xmm4, xmmword ptr [rdi + 48]",
        "movdqu xmm5, xmmword ptr [rdi + rsi + 48]",
        "pxor xmm2, xmm3",
        "pxor xmm4, xmm5",
        "por xmm0, xmm2",
        "por xmm1, xmm4",
        "add rdi, 64",
        "cmp rdi, rcx",
        "jb 8b",
        "movdqu xmm2, xmmword ptr [rcx]",
        "movdqu xmm3, xmmword ptr [rcx + rsi]",
        "movdqu xmm4, xmmword ptr [rcx + 16]",
        "movdqu xmm5, xmmword ptr [rcx + rsi + 16]",
        "pxor xmm2, xmm3",
        "pxor xmm4, xmm5",
        "por xmm0, xmm2",
        "por xmm1, xmm4",
        "movdqu xmm2, xmmword ptr [rcx + 32]",
        "movdqu xmm3, xmmword ptr [rcx + rsi + 32]",
        "movdqu xmm4, xmmword ptr [rcx + 48]",
        "movdqu xmm5, xmmword ptr [rcx + rsi + 48]",
        "pxor xmm2, xmm3",
        "pxor xmm4, xmm5",
        "por xmm0, xmm2",
        "por xmm1, xmm4",
        "por xmm0, xmm1",
        // xmm0 holds the OR of all differences: return the mask of its
        // non-zero bytes (pcmpeqb against zero gives 0xff for zero bytes).
        "9:",
        "pxor xmm1, xmm1",
        "pcmpeqb xmm0, xmm1",
        "pmovmskb eax, xmm0",
        "xor eax, 0xffff",
        "ret",
    )
}

/// [`scalar_asm`] on two slices.
///
/// # Panics
///
/// If the lengths differ.
#[inline]
pub(super) fn scalar(a: &[u8], b: &[u8]) -> i32 {
    assert!(a.len() == b.len());
    // SAFETY: both slices are valid for reads of `a.len()` bytes, the
    // length they share.
    unsafe { scalar_asm(a.as_ptr(), b.as_ptr(), a.len()) }
}

/// [`baseline_asm`] on two slices.
///
/// # Panics
///
/// If the lengths differ.
#[inline]
pub(super) fn baseline(a: &[u8], b: &[u8]) -> i32 {
    assert!(a.len() == b.len());
    // SAFETY: both slices are valid for reads of `a.len()` bytes, the
    // length they share.
    unsafe { baseline_asm(a.as_ptr(), b.as_ptr(), a.len()) }
}

/// The address of the scalar function's first instruction.
pub(super) fn scalar_address() -> usize {
    scalar_asm as *const () as usize
}

/// The address of the SSE2 function's first instruction.
pub(super) fn baseline_address() -> usize {
    baseline_asm as *const () as usize
}
