//! The x86_64 constant-time comparators: three hand-written assembly
//! functions in the style of FreeBSD's amd64 `timingsafe_bcmp(3)`, `scalar`
//! (general-purpose registers only), `baseline` (SSE2) and `avx2`
//! (x86-64-v3), written as naked functions so that no build script or C
//! compiler is needed.
//!
//! All follow the System V AMD64 calling convention
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
//!   `ret`, `nop` (alignment padding), the SSE2 `movdqu`, `pxor`, `por`,
//!   `pcmpeqb`, `pmovmskb`, and their AVX2 forms `vmovdqu`, `vpxor`, `vpor`,
//!   `vpcmpeqb`, `vpmovmskb`, with `vzeroupper` (which has no data operand).
//! - Register roles never mix: `rdi`, `rsi`, `rdx`, `rcx` only ever hold
//!   addresses and lengths; `rax`, `r8`–`r10` and `xmm0`–`xmm5`
//!   (`ymm0`–`ymm5`) hold the data. The disassembly test relies on this to
//!   prove that no flag tested by a branch and no address came from the
//!   data.
//! - They write no callee-saved register and store nothing to memory (not
//!   even to the stack), so they need no prologue; the disassembly test
//!   checks that too.
//! - Every loop head is aligned to 16 bytes (`.p2align 4, 0x90`, padded with
//!   one-byte `nop`s), as FreeBSD's are, so that the instruction fetch of
//!   each pass starts at a block boundary wherever the linker placed the
//!   function (`docs/constant-time.md` has what that does, measured).
//!
//! The length classes (`len` in `rdx`), and the loads each makes from each
//! buffer:
//!
//! | length   | `scalar`                | `baseline`                | `avx2`            |
//! |----------|-------------------------|---------------------------|-------------------|
//! | 0        | none, returns 0         | as `scalar`               | as `scalar`       |
//! | 1..=3    | bytes at 0, `len/2`, `len-1` | as `scalar`          | as `scalar`       |
//! | 4..=16   | 32-bit words at 0, `4k`, `len-4-4k`, `len-4`, `k = len/8` | as `scalar` | as `scalar` |
//! | 17..=32  | 64-bit words at 0, 8, `len-16`, `len-8` | 16-byte vectors at 0, `16k`, `len-16-16k`, `len-16`, `k = len/32` | as `baseline` |
//! | 33..=64  | a loop of 32 bytes (4 words) while the cursor is below `len-32`, then the last 32 bytes | as above | as `baseline` |
//! | 65..=128 | as above                | a loop of 64 bytes (4 vectors) while the cursor is below `len-64`, then the last 64 bytes | 32-byte vectors at 0, 32, `len-64`, `len-32` |
//! | 129..    | as above                | as above                  | a loop of 128 bytes (4 vectors) while the cursor is below `len-128`, then the last 128 bytes |
//!
//! The result is 0 if the bytes are equal and non-zero otherwise: the OR of
//! all the XOR differences, folded to 32 bits (scalar), or the inverted
//! `pcmpeqb` mask of that OR (baseline and avx2).
//!
//! The code shared by several functions (the short length classes) is
//! written once, in the macros below, which expand to one assembly string
//! each, so that the functions cannot drift apart.

/// Lengths 0..=16, identical in all three functions: dispatch on the length
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

/// Lengths 17..=64 with SSE2, identical in `baseline` and `avx2`: the OR of
/// the differences ends up in `xmm0`; the caller turns it into the result.
macro_rules! sse2_lengths_17_to_64 {
    () => {
        concat!(
            // Vectors at 0, 16k, len-16-16k and len-16 with k = len/32 (0,
            // 1 or 2): they cover [0, 16+16k) and [len-16-16k, len), which
            // meet because len <= 32+32k. Legacy SSE loads into registers
            // (a legacy SSE memory operand would have to be aligned).
            "mov rcx, rdx\n",
            "shr rcx, 5\n",
            "shl rcx, 4\n",
            "movdqu xmm0, xmmword ptr [rdi]\n",
            "movdqu xmm1, xmmword ptr [rsi]\n",
            "movdqu xmm2, xmmword ptr [rdi + rdx - 16]\n",
            "movdqu xmm3, xmmword ptr [rsi + rdx - 16]\n",
            "pxor xmm0, xmm1\n",
            "pxor xmm2, xmm3\n",
            "movdqu xmm1, xmmword ptr [rdi + rcx]\n",
            "movdqu xmm3, xmmword ptr [rsi + rcx]\n",
            "sub rdx, rcx\n",
            "movdqu xmm4, xmmword ptr [rdi + rdx - 16]\n",
            "movdqu xmm5, xmmword ptr [rsi + rdx - 16]\n",
            "pxor xmm1, xmm3\n",
            "pxor xmm4, xmm5\n",
            "por xmm0, xmm2\n",
            "por xmm1, xmm4\n",
            "por xmm0, xmm1\n",
        )
    };
}

/// `xmm0` holds the OR of all differences: return the mask of its non-zero
/// bytes (`pcmpeqb` against zero gives 0xff for the zero bytes), shared by
/// `baseline` and `avx2`.
macro_rules! sse2_result {
    () => {
        concat!(
            "pxor xmm1, xmm1\n",
            "pcmpeqb xmm0, xmm1\n",
            "pmovmskb eax, xmm0\n",
            "xor eax, 0xffff\n",
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
        // rsi, rdi, r8-r10, xmm0-xmm5 or ymm0-ymm5, flags), never touches
        // the stack and returns with `ret` (after `vzeroupper` on every path
        // that wrote a ymm register); it reads memory only inside the two
        // windows the caller vouches for.
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
        sse2_lengths_17_to_64!(),
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
        "9:",
        sse2_result!(),
    }
}

comparator! {
    /// Constant-time comparison with AVX2 (unaligned 32-byte loads), for
    /// x86-64-v3 CPUs, in the length classes of the module's table.
    ///
    /// Up to 64 bytes the 32-byte vectors would gain little and cost a
    /// `vzeroupper`, so the code is the SSE2 code of `baseline`. Beyond, the
    /// differences are OR-ed in `ymm0`, compared with zero by `vpcmpeqb` and
    /// returned as `vpmovmskb ^ 0xffffffff`, after a `vzeroupper` that spares
    /// the caller's legacy SSE code the penalty of dirty upper halves.
    ///
    /// # Safety
    ///
    /// `a` and `b` must each be valid for reads of `len` bytes, and the CPU
    /// must support AVX2.
    fn avx2_asm {
        "cmp rdx, 64",
        "ja 6f",
        sse2_lengths_17_to_64!(),
        sse2_result!(),
        "6:",
        "cmp rdx, 128",
        "ja 7f",
        // 65..=128: vectors at 0, 32, len-64 and len-32: they cover
        // [0, 64) and [len-64, len), which meet because len <= 128. VEX
        // memory operands need no alignment, so b is XOR-ed from memory.
        "vmovdqu ymm0, ymmword ptr [rdi]",
        "vmovdqu ymm1, ymmword ptr [rdi + 32]",
        "vmovdqu ymm2, ymmword ptr [rdi + rdx - 64]",
        "vmovdqu ymm3, ymmword ptr [rdi + rdx - 32]",
        "vpxor ymm0, ymm0, ymmword ptr [rsi]",
        "vpxor ymm1, ymm1, ymmword ptr [rsi + 32]",
        "vpxor ymm2, ymm2, ymmword ptr [rsi + rdx - 64]",
        "vpxor ymm3, ymm3, ymmword ptr [rsi + rdx - 32]",
        "vpor ymm0, ymm0, ymm1",
        "vpor ymm2, ymm2, ymm3",
        "vpor ymm0, ymm0, ymm2",
        "jmp 9f",
        // 129..: 128 bytes per iteration while rdi < rcx = a + len - 128,
        // then the 128 bytes at rcx (overlapping the last iteration). rsi
        // becomes b - a so that [rdi + rsi] addresses b. Two accumulators,
        // each fed by a tree of two vectors, so no OR waits on the previous
        // iteration's OR for more than one step.
        "7:",
        "lea rcx, [rdi + rdx - 128]",
        "sub rsi, rdi",
        "vpxor xmm0, xmm0, xmm0",
        "vpxor xmm1, xmm1, xmm1",
        // The loop head starts a 16-byte block (the nops before it run
        // once), so that each pass is fetched from a block boundary.
        ".p2align 4, 0x90",
        "8:",
        "vmovdqu ymm2, ymmword ptr [rdi]",
        "vmovdqu ymm3, ymmword ptr [rdi + 32]",
        "vmovdqu ymm4, ymmword ptr [rdi + 64]",
        "vmovdqu ymm5, ymmword ptr [rdi + 96]",
        "vpxor ymm2, ymm2, ymmword ptr [rdi + rsi]",
        "vpxor ymm3, ymm3, ymmword ptr [rdi + rsi + 32]",
        "vpxor ymm4, ymm4, ymmword ptr [rdi + rsi + 64]",
        "vpxor ymm5, ymm5, ymmword ptr [rdi + rsi + 96]",
        "vpor ymm2, ymm2, ymm3",
        "vpor ymm4, ymm4, ymm5",
        "vpor ymm0, ymm0, ymm2",
        "vpor ymm1, ymm1, ymm4",
        "add rdi, 128",
        "cmp rdi, rcx",
        "jb 8b",
        "vmovdqu ymm2, ymmword ptr [rcx]",
        "vmovdqu ymm3, ymmword ptr [rcx + 32]",
        "vmovdqu ymm4, ymmword ptr [rcx + 64]",
        "vmovdqu ymm5, ymmword ptr [rcx + 96]",
        "vpxor ymm2, ymm2, ymmword ptr [rcx + rsi]",
        "vpxor ymm3, ymm3, ymmword ptr [rcx + rsi + 32]",
        "vpxor ymm4, ymm4, ymmword ptr [rcx + rsi + 64]",
        "vpxor ymm5, ymm5, ymmword ptr [rcx + rsi + 96]",
        "vpor ymm2, ymm2, ymm3",
        "vpor ymm4, ymm4, ymm5",
        "vpor ymm0, ymm0, ymm2",
        "vpor ymm1, ymm1, ymm4",
        "vpor ymm0, ymm0, ymm1",
        // ymm0 holds the OR of all differences: the mask of its non-zero
        // bytes, as in sse2_result but 32 bytes wide.
        "9:",
        "vpxor xmm1, xmm1, xmm1",
        "vpcmpeqb ymm0, ymm0, ymm1",
        "vpmovmskb eax, ymm0",
        "xor eax, -1",
        "vzeroupper",
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

/// Whether this CPU (and operating system) can run [`avx2_asm`].
/// `is_x86_feature_detected!` caches its answer, so this is a load and a
/// bit test.
#[inline]
pub(super) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// [`avx2_asm`] on two slices.
///
/// # Safety
///
/// The CPU must support AVX2 (see [`has_avx2`]): elsewhere the function
/// would raise an invalid-opcode fault.
///
/// # Panics
///
/// If the lengths differ.
#[inline]
pub(super) unsafe fn avx2(a: &[u8], b: &[u8]) -> i32 {
    assert!(a.len() == b.len());
    // SAFETY: both slices are valid for reads of `a.len()` bytes, the
    // length they share, and the caller vouches for AVX2.
    unsafe { avx2_asm(a.as_ptr(), b.as_ptr(), a.len()) }
}

/// The address of the scalar function's first instruction.
pub(super) fn scalar_address() -> usize {
    scalar_asm as *const () as usize
}

/// The address of the SSE2 function's first instruction.
pub(super) fn baseline_address() -> usize {
    baseline_asm as *const () as usize
}

/// The address of the AVX2 function's first instruction (taking it is safe
/// on any CPU; only calling the function needs AVX2).
pub(super) fn avx2_address() -> usize {
    avx2_asm as *const () as usize
}
