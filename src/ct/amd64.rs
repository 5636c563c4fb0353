//! The x86_64 constant-time comparators: two hand-written assembly
//! functions in the style of FreeBSD's amd64 `timingsafe_bcmp(3)`, `scalar`
//! (general-purpose registers only) and `baseline` (SSE2), written as naked
//! functions so that no build script or C compiler is needed.
//!
//! Both follow the System V AMD64 calling convention (`a` in `rdi`, `b` in
//! `rsi`, `len` in `rdx`, result in `eax`) and these rules, all but the
//! last checked by machine in the test suite:
//!
//! - They branch on the length only. Each length class reads the bytes with
//!   a fixed pattern of loads, overlapping ones where the length is not a
//!   multiple of the load width (the head and the tail of the window), so
//!   they never read outside `[p, p + len)` and never depend on alignment.
//! - Every instruction is on Intel's list of data-operand-independent-timing
//!   instructions: `mov`, `movzx`, `xor`, `or`, `lea`, `add`, `sub`, `shr`,
//!   `shl`, `cmp`/`test` and `jcc` on the length or on addresses, `jmp`,
//!   `ret`, `nop` (alignment padding), and the SSE2 `movdqu`, `pxor`, `por`,
//!   `pcmpeqb`, `pmovmskb`.
//! - Register roles never mix: `rdi`, `rsi`, `rdx`, `rcx` only ever hold
//!   addresses and lengths; `rax`, `r8`–`r10` and `xmm0`–`xmm5` hold the
//!   data, so no flag tested by a branch and no address comes from the data.
//! - They write no callee-saved register and store nothing to memory (not
//!   even to the stack), so they need no prologue.
//! - Every loop head is aligned to 16 bytes (`.p2align 4, 0x90`, padded with
//!   one-byte `nop`s), as FreeBSD's are, so that the instruction fetch of
//!   each pass starts at a block boundary wherever the linker placed the
//!   function.
//!
//! The length classes (`len` in `rdx`), and the loads each makes from each
//! buffer:
//!
//! | length   | `scalar`                     | `baseline`                |
//! |----------|------------------------------|---------------------------|
//! | 0        | none, returns 0              | as `scalar`               |
//! | 1..=3    | bytes at 0, `len/2`, `len-1` | as `scalar`               |
//! | 4..=16   | 32-bit words at 0, `4k`, `len-4-4k`, `len-4`, `k = len/8` | as `scalar` |
//! | 17..=32  | 64-bit words at 0, 8, `len-16`, `len-8` | 16-byte vectors at 0, `16k`, `len-16-16k`, `len-16`, `k = len/32` |
//! | 33..=64  | a loop of 32 bytes (4 words) while the cursor is below `len-32`, then the last 32 bytes | as above |
//! | 65..     | as above                     | a loop of 64 bytes (4 vectors) while the cursor is below `len-64`, then the last 64 bytes |
//!
//! The result is 0 if the bytes are equal and non-zero otherwise: the OR of
//! all the XOR differences, folded to 32 bits (scalar), or the inverted
//! `pcmpeqb` mask of that OR (baseline).

/// Lengths 0..=16, identical in both functions: dispatch on the length
/// (public), then the classes 0, 1..=3 and 4..=16, each ending in `ret`.
/// Longer inputs jump to the caller's local label `5`, which must follow.
macro_rules! lengths_up_to_16 {
    () => {
        concat!(
            // Most likely classes first: the length is public, but every
            // mispredicted branch costs time on short inputs.
            "cmp rdx, 16\n",
            "ja 5f\n",
            "cmp rdx, 4\n",
            "jae 3f\n",
            "test rdx, rdx\n",
            "jnz 2f\n",
            // len == 0: equal.
            "xor eax, eax\n",
            "ret\n",
            // 1..=3: bytes at 0, len/2 and len-1 (the same byte up to 3
            // times), so that one path serves all three lengths.
            "2:\n",
            "mov rcx, rdx\n",
            "shr rcx, 1\n",
            "movzx eax, byte ptr [rdi]\n",
            "movzx r8d, byte ptr [rsi]\n",
            "movzx r9d, byte ptr [rdi + rcx]\n",
            "movzx r10d, byte ptr [rsi + rcx]\n",
            "xor eax, r8d\n",
            "xor r9d, r10d\n",
            "movzx r8d, byte ptr [rdi + rdx - 1]\n",
            "movzx r10d, byte ptr [rsi + rdx - 1]\n",
            "xor r8d, r10d\n",
            "or eax, r9d\n",
            "or eax, r8d\n",
            "ret\n",
            // 4..=16: 32-bit words at 0, 4k, len-4-4k and len-4 with
            // k = len/8 (0, 1 or 2): they cover [0, 4+4k) and [len-4-4k,
            // len), which meet because len <= 8+8k.
            "3:\n",
            "mov rcx, rdx\n",
            "shr rcx, 3\n",
            "shl rcx, 2\n",
            "mov eax, dword ptr [rdi]\n",
            "mov r8d, dword ptr [rdi + rdx - 4]\n",
            "mov r9d, dword ptr [rdi + rcx]\n",
            "xor eax, dword ptr [rsi]\n",
            "xor r8d, dword ptr [rsi + rdx - 4]\n",
            "xor r9d, dword ptr [rsi + rcx]\n",
            "sub rdx, rcx\n",
            "mov r10d, dword ptr [rdi + rdx - 4]\n",
            "xor r10d, dword ptr [rsi + rdx - 4]\n",
            "or eax, r8d\n",
            "or r9d, r10d\n",
            "or eax, r9d\n",
            "ret\n",
        )
    };
}

/// Declares a comparator: a naked function of the System V AMD64 ABI
/// whose body is the length dispatch and the classes up to 16 bytes
/// (`lengths_up_to_16`), then the given assembly from label `5`, where
/// longer inputs go. Each function's doc says what its callers vouch for.
macro_rules! comparator {
    ($(#[$doc:meta])* fn $name:ident { $($longer:expr),+ $(,)? }) => {
        $(#[$doc])*
        // SAFETY (of the naked attribute): the body is a complete function
        // in the System V AMD64 ABI, by the rules of this module (checked
        // by the disassembly test): it reads its arguments from
        // rdi/rsi/rdx, writes only caller-saved registers (rax, rcx, rdx,
        // rsi, rdi, r8-r10, xmm0-xmm5, flags), never touches the stack and
        // returns with `ret`; it reads memory only inside the two windows
        // the caller vouches for.
        #[unsafe(naked)]
        unsafe extern "sysv64" fn $name(a: *const u8, b: *const u8, len: usize) -> i32 {
            core::arch::naked_asm!(lengths_up_to_16!(), "5:", $($longer),+)
        }
    };
}

comparator! {
    /// Constant-time comparison with general-purpose registers only, in the
    /// length classes of the module's table.
    ///
    /// # Safety
    ///
    /// `a` and `b` must each be valid for reads of `len` bytes.
    fn scalar_asm {
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
        // The loop head starts a 16-byte block (the nops before it run
        // once), so that each pass is fetched from a block boundary.
        ".p2align 4, 0x90",
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
    }
}

comparator! {
    /// Constant-time comparison with SSE2 (unaligned 16-byte loads), in the
    /// length classes of the module's table.
    ///
    /// Up to 16 bytes it is the scalar code (general-purpose registers are
    /// cheaper there); beyond, the differences are OR-ed in `xmm0`, compared
    /// with zero by `pcmpeqb` and returned as `pmovmskb ^ 0xffff`. SSE2 is
    /// part of the x86_64 baseline: no feature detection is needed.
    ///
    /// # Safety
    ///
    /// `a` and `b` must each be valid for reads of `len` bytes.
    fn baseline_asm {
        "cmp rdx, 64",
        "ja 7f",
        // 17..=64: vectors at 0, 16k, len-16-16k and len-16 with k = len/32 (0,
        // 1 or 2): they cover [0, 16+16k) and [len-16-16k, len), which
        // meet because len <= 32+32k. Legacy SSE loads into registers
        // (a legacy SSE memory operand would have to be aligned).
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
        // The loop head starts a 16-byte block (the nops before it run
        // once), so that each pass is fetched from a block boundary.
        ".p2align 4, 0x90",
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
    }
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
