//! Machine proofs for the constant-time comparator (`bt2sum::ct`), each run
//! on every level of this target (`Level::available`) and on `ct::eq`:
//!
//! - `differential_*`: against a plain loop, for every length 0..=300,
//!   every alignment pair of the two buffers up to length 64 (a spread
//!   beyond), a one-bit difference at every position and bit, and every
//!   byte different, with the bytes just outside both windows different.
//! - `guard_pages_*`: windows flush against `PROT_NONE` pages on either
//!   side; any read outside the window faults.
//! - `valgrind_memcheck_*`: the inputs are marked undefined with Valgrind
//!   client requests, so memcheck reports any branch or address that
//!   depends on them; a deliberately leaky comparator must be reported.
//! - `disassembly_*`: the assembly, disassembled from this very test
//!   binary, uses only allowlisted data-operand-independent-timing
//!   instructions, with no branch and no address computed from the data,
//!   no store and no write to a callee-saved register; the leaky comparator
//!   must fail the same check.
//! - `archlevel_*`: `BT2SUM_ARCHLEVEL` selects the default level.
//!
//! Some proofs re-run this test binary as a child ([`child`]), under
//! valgrind or with another environment, selecting one `#[ignore]`d child
//! test; the child tests do nothing useful on their own.

use super::{Retried, noise};
use bt2sum::ct::{self, Level};
use std::hint::black_box;
use std::process::{Command, Output};

/// A command running this binary's `#[ignore]`d test `name` (its path, such
/// as `ct::archlevel_child`) alone, under `wrapper` (a program and its
/// arguments) if there is one.
pub(super) fn child(name: &str, wrapper: &[&str]) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(exe);
            command
        }
        None => Command::new(exe),
    };
    command.args([name, "--exact", "--ignored", "--nocapture"]);
    command
}

/// A child's output, for a failure message.
pub(super) fn report(out: &Output) -> String {
    let status = out.status;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    format!("{status:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}")
}

/// Whether the child test ran and passed.
pub(super) fn passed(out: &Output) -> bool {
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed")
}

/// Checks every level and `ct::eq` against a plain loop on `a` and `b`.
fn agree(a: &[u8], b: &[u8], case: impl Fn() -> String) {
    let expected = a.iter().zip(b).all(|(x, y)| x == y);
    for &level in Level::available() {
        let r = ct::timingsafe_bcmp(level, black_box(a), black_box(b));
        if (r == 0) != expected {
            panic!("{level:?} returned {r}; equal: {expected}; {}", case());
        }
    }
    if ct::eq(black_box(a), black_box(b)) != expected {
        panic!("ct::eq disagrees: equal: {expected}; {}", case());
    }
}

#[test]
fn differential_every_length_alignment_and_bit() {
    const MAX_LEN: usize = 300;
    const SLACK: usize = 16;
    // Offsets 0..16 from any base give every alignment modulo 16.
    let pairs: Vec<(usize, usize)> = (0..16).flat_map(|x| (0..16).map(move |y| (x, y))).collect();
    let spread: Vec<(usize, usize)> = pairs.iter().copied().step_by(13).collect();
    let size = SLACK + 16 + MAX_LEN + SLACK;
    let mut cases = 0u64;
    for len in 0..=MAX_LEN {
        let a = noise(size, len as u64);
        for &(oa, ob) in if len <= 64 { &pairs } else { &spread } {
            let (wa, wb) = (SLACK + oa, SLACK + ob);
            // b is a shifted by wb - wa, the window as is and every other
            // byte inverted: a comparator that reads one byte too many
            // (before or after) sees a difference.
            let mut b: Vec<u8> = (0..size)
                .map(|i| !a.get((i + wa).wrapping_sub(wb)).copied().unwrap_or(0))
                .collect();
            b[wb..wb + len].copy_from_slice(&a[wa..wa + len]);
            let (a, b) = (&a[wa..wa + len], &mut b[wb..wb + len]);
            let case = |what: &str| format!("len {len}, offsets {oa}/{ob}, {what}");
            agree(a, b, || case("equal"));
            for pos in 0..len {
                for bit in 0..8 {
                    b[pos] ^= 1 << bit;
                    agree(a, b, || case(&format!("bit {bit} of byte {pos} differs")));
                    b[pos] ^= 1 << bit;
                }
            }
            if len > 0 {
                let inverted: Vec<u8> = a.iter().map(|x| !x).collect();
                agree(a, &inverted, || case("every byte differs"));
            }
            cases += 2 + 8 * len as u64 - u64::from(len == 0);
        }
    }
    assert_eq!(cases, 11_193_504);
}

#[test]
fn different_lengths_panic_and_are_unequal() {
    for &level in Level::available() {
        let r = std::panic::catch_unwind(|| ct::timingsafe_bcmp(level, b"abc", b"ab"));
        assert!(r.is_err(), "{level:?} accepted slices of different lengths");
    }
    assert!(!ct::eq(b"abc", b"ab") && !ct::eq(b"", b"a") && ct::eq(b"", b""));
}

// ---------------------------------------------------------------------------
// BT2SUM_ARCHLEVEL, read once per process: checked in child processes.

#[test]
fn archlevel_selects_the_default_level() {
    let levels = Level::available();
    let rank = |rank: usize| levels[rank.min(levels.len() - 1)];
    for (value, expected) in [
        (None, rank(2)),
        (Some("avx2"), rank(2)),
        (Some("portable"), Level::Portable),
        (Some(" SCALAR"), rank(1)),
        (Some("x86-64-v4"), rank(2)),
    ] {
        let mut command = child("ct::archlevel_child", &[]);
        command.env("BT2SUM_CT_EXPECT", expected.name());
        match value {
            Some(value) => command.env("BT2SUM_ARCHLEVEL", value),
            None => command.env_remove("BT2SUM_ARCHLEVEL"),
        };
        let out = command.output_retried();
        assert!(passed(&out), "{value:?}: {}", report(&out));
    }
}

#[test]
#[ignore = "child of archlevel_selects_the_default_level"]
fn archlevel_child() {
    let expected = std::env::var("BT2SUM_CT_EXPECT").expect("run by the parent test");
    assert_eq!(Level::default().name(), expected);
    assert!(ct::eq(b"same", b"same") && !ct::eq(b"same", b"diff"));
}

// ---------------------------------------------------------------------------
// Guard pages.

/// `len` readable bytes (a whole number of pages) between two `PROT_NONE`
/// pages, zeroed.
#[cfg(unix)]
struct Guarded {
    base: *mut u8,
    page: usize,
    len: usize,
}

#[cfg(unix)]
impl Guarded {
    fn new(min_len: usize) -> Guarded {
        let page = bt2sum::sys::page_size();
        let len = min_len.div_ceil(page) * page;
        let (prot, flags) = (
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        );
        // SAFETY: a fresh anonymous mapping, checked against MAP_FAILED.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len + 2 * page, prot, flags, -1, 0) };
        assert_ne!(base, libc::MAP_FAILED, "mmap failed");
        let base = base.cast::<u8>();
        // SAFETY: the first and the last page of the mapping.
        unsafe {
            assert_eq!(libc::mprotect(base.cast(), page, libc::PROT_NONE), 0);
            assert_eq!(
                libc::mprotect(base.add(page + len).cast(), page, libc::PROT_NONE),
                0
            );
        }
        Guarded { base, page, len }
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the pages between the guards are mapped read-write and
        // borrowed from self.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(self.page), self.len) }
    }
}

#[cfg(unix)]
impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len + 2 * self.page) };
    }
}

/// The comparisons run in a child process, so that a fault (a read outside
/// the window) fails this test instead of killing the test binary. The
/// control: reading the byte just before or after the window must fault
/// (SIGSEGV on Linux; macOS and the BSDs may raise SIGBUS).
#[test]
#[cfg(unix)]
fn guard_pages_no_read_outside_the_window() {
    use std::os::unix::process::ExitStatusExt;
    // A fault is a signal, which an emulator delivers in its own way.
    if super::emulated("guard_pages_no_read_outside_the_window") {
        return;
    }
    let out = child("ct::guard_pages_child", &[]).output_retried();
    assert!(passed(&out), "a read outside a window? {}", report(&out));
    let faults = [libc::SIGSEGV, libc::SIGBUS];
    let faults = &faults[..if cfg!(target_os = "linux") { 1 } else { 2 }];
    for side in ["before", "after"] {
        let out = child("ct::guard_pages_child", &[])
            .env("BT2SUM_CT_GUARD_CONTROL", side)
            .output_retried();
        assert!(
            out.status
                .signal()
                .is_some_and(|signal| faults.contains(&signal)),
            "reading the byte {side} the window should fault: {}",
            report(&out)
        );
    }
}

#[test]
#[cfg(unix)]
#[ignore = "child of guard_pages_no_read_outside_the_window"]
fn guard_pages_child() {
    const MAX: usize = 1024;
    let (mut ga, mut gb) = (Guarded::new(MAX), Guarded::new(MAX));
    if let Ok(side) = std::env::var("BT2SUM_CT_GUARD_CONTROL") {
        let at = [ga.page - 1, ga.page + ga.len][usize::from(side == "after")];
        // SAFETY: deliberately not upheld: this reads a guard page, and the
        // process dies of the fault, as the parent test checks.
        let byte = unsafe { std::ptr::read_volatile(ga.base.add(at)) };
        panic!("read {byte} {side} the window without a fault");
    }
    let n = ga.len;
    for len in 0..=MAX {
        // Flush against the guard before (offset 0) and after (n - len),
        // in all four combinations for the two buffers.
        for (oa, ob) in [(0, 0), (n - len, n - len), (0, n - len), (n - len, 0)] {
            let a = &ga.bytes()[oa..oa + len];
            agree(a, &gb.bytes()[ob..ob + len], || format!("len {len}"));
            if len > 0 {
                gb.bytes()[ob + len - 1] ^= 1;
                agree(a, &gb.bytes()[ob..ob + len], || {
                    format!("len {len}, one off")
                });
                gb.bytes()[ob + len - 1] ^= 1;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// A deliberately leaky comparator, the control of the valgrind and
// disassembly proofs: a byte loop that returns at the first difference.

/// # Safety
///
/// `a` and `b` must each be valid for reads of `len` bytes.
// SAFETY (of the naked attribute): a complete System V AMD64 function that
// reads its arguments from rdi/rsi/rdx, writes only caller-saved registers,
// never touches the stack and returns with `ret`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[unsafe(naked)]
#[unsafe(no_mangle)]
unsafe extern "sysv64" fn bt2sum_test_leaky_bcmp(a: *const u8, b: *const u8, len: usize) -> i32 {
    core::arch::naked_asm!(
        "xor eax, eax",
        "test rdx, rdx",
        "jz 3f",
        "2:",
        "movzx eax, byte ptr [rdi]",
        "movzx ecx, byte ptr [rsi]",
        "cmp eax, ecx",
        "jne 4f",
        "add rdi, 1",
        "add rsi, 1",
        "sub rdx, 1",
        "jnz 2b",
        "xor eax, eax",
        "3:",
        "ret",
        "4:",
        "mov eax, 1",
        "ret",
    )
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn leaky_bcmp(a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(a.len(), b.len());
    // SAFETY: both slices are valid for a.len() bytes.
    unsafe { bt2sum_test_leaky_bcmp(a.as_ptr(), b.as_ptr(), a.len()) }
}

// ---------------------------------------------------------------------------
// valgrind memcheck: constant time as "no branch or address depends on
// undefined bytes".

/// A Valgrind client request (the documented amd64 sequence, a no-op
/// returning 0 outside valgrind) with two arguments.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn valgrind(request: usize, args: [usize; 2]) -> usize {
    let block: [usize; 6] = [request, args[0], args[1], 0, 0, 0];
    let mut result = 0;
    // SAFETY: the preamble changes only rdx (the result) and the flags, and
    // reads the request block, which outlives the asm. Valgrind may change
    // the definedness of the memory the arguments name, which the caller
    // owns.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51", "xchg rbx, rbx",
            in("rax") block.as_ptr(), inout("rdx") result, options(nostack),
        );
    }
    result
}

/// Marks `bytes` undefined (secret) or defined for memcheck.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn mark(bytes: &mut [u8], defined: bool) {
    const MAKE_MEM_UNDEFINED: usize = ((b'M' as usize) << 24) | ((b'C' as usize) << 16) | 1;
    let request = MAKE_MEM_UNDEFINED + usize::from(defined);
    valgrind(request, [bytes.as_mut_ptr() as usize, bytes.len()]);
}

#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn valgrind_memcheck_proves_no_secret_dependent_branch_or_address() {
    let memcheck = |mode: &'static str| {
        let wrapper = ["valgrind", "--error-exitcode=97", "--leak-check=no"];
        let mut command = child("ct::valgrind_child", &wrapper);
        let out = command.env("BT2SUM_CT_VALGRIND", mode).output();
        match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "valgrind is not installed: this proof needs it and is never skipped \
                 (Debian/Ubuntu: apt-get install -y valgrind)"
            ),
            out => out.expect("valgrind runs"),
        }
    };
    let leaky = std::thread::spawn(move || memcheck("leaky"));
    let out = memcheck("clean");
    let text = report(&out);
    assert!(passed(&out), "{text}");
    let names = Level::available().iter().map(|level| format!("{level:?}"));
    for name in names.chain(["ct::eq".to_string()]) {
        super::assert_contains(&text, &format!("memcheck {name}: 0 errors"));
    }
    // The control: the same harness must catch the early exit.
    let out = leaky.join().unwrap();
    let text = report(&out);
    assert_eq!(out.status.code(), Some(97), "{text}");
    let leak = "Conditional jump or move depends on uninitialised value";
    assert!(
        text.contains(leak) && text.contains("bt2sum_test_leaky_bcmp"),
        "{text}"
    );
}

#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[ignore = "child of valgrind_memcheck_proves_no_secret_dependent_branch_or_address"]
fn valgrind_child() {
    const RUNNING_ON_VALGRIND: usize = 0x1001;
    const COUNT_ERRORS: usize = 0x1201;
    assert_ne!(
        valgrind(RUNNING_ON_VALGRIND, [0; 2]),
        0,
        "not under valgrind"
    );
    let run = |name: &str, compare: &dyn Fn(&[u8], &[u8]) -> i32| {
        let before = valgrind(COUNT_ERRORS, [0; 2]);
        // Every length class of every level, and loops of several passes.
        for len in (0..=70).chain([100, 128, 129, 200, 256, 257, 300]) {
            let a = noise(len, 7);
            // Equal, differing in the first byte, differing in the last.
            for diff in [None, Some(0), Some(len.saturating_sub(1))] {
                let diff = diff.filter(|_| len > 0);
                let (mut x, mut y) = (a.clone(), a.clone());
                if let Some(pos) = diff {
                    y[pos] ^= 0x10;
                }
                mark(&mut x, false);
                mark(&mut y, false);
                // Only the verdict is declassified; then it is branched on.
                let mut verdict = compare(black_box(&x), black_box(&y)).to_ne_bytes();
                mark(&mut verdict, true);
                let equal = i32::from_ne_bytes(verdict) == 0;
                assert_eq!(equal, diff.is_none(), "{name}, len {len}");
            }
        }
        let errors = valgrind(COUNT_ERRORS, [0; 2]) - before;
        println!("memcheck {name}: {errors} errors");
    };
    match std::env::var("BT2SUM_CT_VALGRIND").as_deref() {
        Ok("clean") => {
            for &level in Level::available() {
                let compare = move |a: &[u8], b: &[u8]| ct::timingsafe_bcmp(level, a, b);
                run(&format!("{level:?}"), &compare);
            }
            run("ct::eq", &|a, b| i32::from(!ct::eq(a, b)));
        }
        Ok("leaky") => run("leaky", &leaky_bcmp),
        mode => panic!("run by the parent test, not with mode {mode:?}"),
    }
}

// ---------------------------------------------------------------------------
// Disassembly audit.

/// One instruction of `objdump -d --no-show-raw-insn -M intel`.
#[derive(Debug)]
struct Insn {
    addr: u64,
    /// Prefixes objdump prints as words (`lock`, `rep`, `cs`, `data16`,
    /// ...): none belongs in the comparators.
    prefixes: Vec<String>,
    mnemonic: String,
    operands: Vec<String>,
}

/// Parses the instruction lines of objdump's listing.
fn parse_objdump(text: &str) -> Vec<Insn> {
    const PREFIXES: &[&str] = &[
        "cs", "ds", "es", "ss", "fs", "gs", "data16", "addr32", "lock", "rep", "repz", "repnz",
        "repe", "repne", "notrack", "bnd",
    ];
    let parse = |line: &str| {
        let (addr, rest) = line.split_once(":\t")?;
        let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
        let mut words = rest.split('#').next()?.split_whitespace().peekable();
        let prefix = |w: &&str| PREFIXES.contains(w) || w.starts_with("rex");
        let prefixes = std::iter::from_fn(|| words.next_if(prefix).map(str::to_string)).collect();
        let mnemonic = words.next()?.to_string();
        let operands = words.collect::<Vec<_>>().join(" ");
        let operands = operands.split(',').filter(|o| !o.is_empty());
        let operands = operands.map(|o| o.trim().to_string()).collect();
        Some(Insn {
            addr,
            prefixes,
            mnemonic,
            operands,
        })
    };
    text.lines().filter_map(parse).collect()
}

/// The 64-bit (or xmm) register that `name` is part of: `eax` is `rax`.
fn register(name: &str) -> Option<String> {
    const LEGACY: [[&str; 5]; 8] = [
        ["rax", "eax", "ax", "al", "ah"],
        ["rbx", "ebx", "bx", "bl", "bh"],
        ["rcx", "ecx", "cx", "cl", "ch"],
        ["rdx", "edx", "dx", "dl", "dh"],
        ["rsi", "esi", "si", "sil", "sil"],
        ["rdi", "edi", "di", "dil", "dil"],
        ["rbp", "ebp", "bp", "bpl", "bpl"],
        ["rsp", "esp", "sp", "spl", "spl"],
    ];
    if let Some(names) = LEGACY.iter().find(|names| names.contains(&name)) {
        return Some(names[0].to_string());
    }
    if name.starts_with("xmm") && name[3..].parse::<u8>().is_ok() {
        return Some(name.to_string());
    }
    let number = name.strip_prefix('r')?.trim_end_matches(['d', 'w', 'b']);
    let number: u8 = number.parse().ok().filter(|n| (8..=15).contains(n))?;
    Some(format!("r{number}"))
}

/// An operand: a memory reference (with the registers of its address), a
/// register, or neither (an immediate, a branch target).
enum Operand {
    Mem(Vec<String>),
    Reg(String),
    Other,
}

fn operand(text: &str) -> Operand {
    match (text.find('['), text.rfind(']')) {
        (Some(open), Some(close)) => {
            let address = text[open + 1..close].split(|c: char| !c.is_ascii_alphanumeric());
            Operand::Mem(address.filter_map(register).collect())
        }
        _ => register(text).map_or(Operand::Other, Operand::Reg),
    }
}

/// A subset of Intel's data-operand-independent-timing instructions: no
/// multiply, no divide, no `cmov` or `setcc`, no stack instructions.
const ALLOWED: &[&str] = &[
    "mov", "movzx", "xor", "or", "and", "add", "sub", "shr", "shl", "lea", "cmp", "test", "jmp",
    "ret", "movdqu", "movd", "movq", "pxor", "por", "pand", "pcmpeqb", "pmovmskb",
];
/// The conditional branches, allowed on public flags only.
const JCC: &[&str] = &[
    "ja", "jae", "jb", "jbe", "je", "jne", "jz", "jnz", "jg", "jge", "jl", "jle", "jnb", "jnbe",
    "jna", "jnae", "jc", "jnc",
];
/// The registers the System V AMD64 ABI makes a function preserve.
const CALLEE_SAVED: &[&str] = &["rbx", "rbp", "rsp", "r12", "r13", "r14", "r15"];

/// Whether `i` writes its first operand (Intel syntax puts the destination
/// first): every instruction with operands but these.
fn writes_first(i: &Insn) -> bool {
    !matches!(i.mnemonic.as_str(), "cmp" | "test" | "jmp" | "nop") && !JCC.contains(&&*i.mnemonic)
}

/// Whether `i` sets the flags from its operands. A shift whose count may be
/// zero (by `cl`, or by an immediate that is 0 modulo 32) leaves those of
/// an earlier instruction, so it does not count.
fn sets_flags(i: &Insn) -> bool {
    match i.mnemonic.as_str() {
        "cmp" | "test" | "add" | "sub" | "and" | "or" | "xor" => true,
        "shr" | "shl" => i.operands.get(1).is_some_and(|count| {
            let count = u64::from_str_radix(count.trim_start_matches("0x"), 16);
            count.is_ok_and(|count| count % 32 != 0)
        }),
        _ => false,
    }
}

/// The one-byte `nop` that `.p2align 4, 0x90` pads with.
fn is_padding(i: &Insn) -> bool {
    i.mnemonic == "nop" && i.operands.is_empty() && i.prefixes.is_empty()
}

/// Audits one function; returns the violations (none means it passed).
///
/// Every instruction is on `ALLOWED` or a `JCC`, without prefix, or the
/// padding `nop`; none stores to memory or writes a callee-saved register
/// (the functions have no prologue); every branch is direct and lands on
/// an instruction of the function. A taint analysis (flow-insensitive, so
/// conservative) marks as secret every register written from memory or
/// from a secret register; then no address may use a secret register, and
/// every conditional branch must directly follow an instruction that sets
/// the flags from public registers only, and must not be a branch target
/// itself (so that no other path brings flags to it).
fn audit(insns: &[Insn]) -> Vec<String> {
    let insns: Vec<&Insn> = insns.iter().filter(|i| !is_padding(i)).collect();
    let mut bad = Vec::new();
    let (Some(first), Some(last)) = (insns.first(), insns.last()) else {
        return vec!["no instructions".to_string()];
    };
    let is_branch = |i: &Insn| i.mnemonic == "jmp" || JCC.contains(&&*i.mnemonic);
    let target = |i: &Insn| {
        let target = i.operands.first()?.split_whitespace().next()?;
        u64::from_str_radix(target, 16).ok()
    };
    let mut targets = Vec::new();
    for i in &insns {
        let (at, m) = (i.addr, &i.mnemonic);
        for p in &i.prefixes {
            bad.push(format!("{at:x}: prefix {p} on {m}"));
        }
        if !ALLOWED.contains(&&**m) && !JCC.contains(&&**m) {
            bad.push(format!("{at:x}: {m} is not on the allowlist"));
        }
        if writes_first(i) {
            match i.operands.first().map(|o| operand(o)) {
                Some(Operand::Mem(_)) => bad.push(format!("{at:x}: {m} stores to memory")),
                Some(Operand::Reg(r)) if CALLEE_SAVED.contains(&&*r) => {
                    bad.push(format!("{at:x}: {m} writes callee-saved {r}"))
                }
                _ => {}
            }
        }
        if is_branch(i) {
            match target(i) {
                Some(t) if (first.addr..=last.addr).contains(&t) => {
                    targets.push(t);
                    if !insns.iter().any(|i| i.addr == t) {
                        bad.push(format!("{at:x}: {m} lands inside an instruction, at {t:x}"));
                    }
                }
                _ => bad.push(format!("{at:x}: {m} leaves the function or is indirect")),
            }
        }
    }
    let mut secret = std::collections::BTreeSet::new();
    loop {
        let before = secret.len();
        for i in insns
            .iter()
            .filter(|i| writes_first(i) && !i.operands.is_empty())
        {
            let Operand::Reg(dest) = operand(&i.operands[0]) else {
                continue; // a store, refused above
            };
            // A move's destination is not one of its sources.
            let moves = ["mov", "movzx", "movdqu", "movd", "movq", "lea", "pmovmskb"];
            let sources = &i.operands[usize::from(moves.contains(&&*i.mnemonic))..];
            let tainted = sources.iter().any(|o| match operand(o) {
                Operand::Reg(r) => secret.contains(&r),
                // A load reads the data; lea only computes an address.
                Operand::Mem(regs) => {
                    i.mnemonic != "lea" || regs.iter().any(|r| secret.contains(r))
                }
                Operand::Other => false,
            });
            if tainted {
                secret.insert(dest);
            }
        }
        if secret.len() == before {
            break;
        }
    }
    for (k, i) in insns.iter().enumerate() {
        let (at, m) = (i.addr, &i.mnemonic);
        for o in &i.operands {
            if let Operand::Mem(regs) = operand(o) {
                for r in regs.iter().filter(|r| secret.contains(*r)) {
                    bad.push(format!("{at:x}: address depends on secret {r}"));
                }
            }
        }
        if !JCC.contains(&&**m) {
            continue;
        }
        if targets.contains(&at) {
            bad.push(format!("{at:x}: {m} is a branch target"));
        }
        match k.checked_sub(1).map(|k| insns[k]) {
            Some(p) if sets_flags(p) => {
                for o in &p.operands {
                    match operand(o) {
                        Operand::Reg(r) if secret.contains(&r) => {
                            bad.push(format!("{at:x}: {m} branches on flags of secret {r}"))
                        }
                        Operand::Mem(_) => {
                            bad.push(format!("{at:x}: {m} branches on flags of loaded data"))
                        }
                        _ => {}
                    }
                }
            }
            _ => bad.push(format!(
                "{at:x}: {m} does not directly follow a flag-setting instruction"
            )),
        }
    }
    bad.dedup();
    bad
}

/// The instructions of `symbol` (demangled) in this test binary.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn disassemble(symbol: &str) -> Vec<Insn> {
    let out = Command::new("objdump")
        .args(["-d", "-C", "--no-show-raw-insn", "-M", "intel"])
        .arg(format!("--disassemble={symbol}"))
        .arg(std::env::current_exe().unwrap())
        .output();
    let out = match out {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "objdump is not installed: this proof needs it and is never skipped \
             (Debian/Ubuntu: apt-get install -y binutils)"
        ),
        out => out.expect("objdump runs"),
    };
    assert!(out.status.success(), "objdump failed: {}", report(&out));
    let insns = parse_objdump(&String::from_utf8_lossy(&out.stdout));
    assert!(insns.len() > 10, "{symbol} not found: {}", report(&out));
    insns
}

#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn disassembly_uses_only_allowed_instructions_and_public_branches() {
    // The functions are linked into this binary: they are called.
    for &level in Level::available() {
        black_box(ct::timingsafe_bcmp(level, b"x", b"x"));
    }
    black_box(leaky_bcmp(b"x", b"x"));
    for (function, sse2) in [("scalar_asm", false), ("baseline_asm", true)] {
        let symbol = format!("bt2sum::ct::amd64::{function}");
        let insns = disassemble(&symbol);
        assert_eq!(insns.last().unwrap().mnemonic, "ret", "{symbol}");
        assert_eq!(audit(&insns), Vec::<String>::new(), "{symbol}");
        // SSE2 registers are baseline's alone.
        let xmm = insns
            .iter()
            .flat_map(|i| &i.operands)
            .any(|o| o.contains("xmm"));
        assert_eq!(xmm, sse2, "{symbol}");
    }
    let bad = audit(&disassemble("bt2sum_test_leaky_bcmp"));
    let caught = bad
        .iter()
        .any(|b| b.contains("jne branches on flags of secret"));
    assert!(
        caught,
        "the leaky control's early exit got through: {bad:?}"
    );
}

/// The audit must be able to fail: a listing it accepts, and one or more
/// listings per rule that it must refuse, each written as `at: instruction`
/// lines joined by `; `.
#[test]
fn disassembly_audit_rejects_known_bad_code() {
    let listing = |text: &str| {
        let lines = text
            .split("; ")
            .map(|l| format!("  {}\n", l.replacen(": ", ":\t", 1)));
        parse_objdump(&lines.collect::<String>())
    };
    let good = listing(
        "1000: cmp rdx,0x10; 1004: ja 100d <f+0xd>; 1006: mov eax,DWORD PTR [rdi]; \
         1008: xor eax,DWORD PTR [rsi]; 100a: ret; 100b: nop; 100c: nop; \
         100d: lea rcx,[rdi+rdx*1-0x10]; 1012: sub rsi,rdi; 1015: pxor xmm0,xmm0; \
         1019: movdqu xmm1,XMMWORD PTR [rdi]; 101d: pxor xmm1,XMMWORD PTR [rdi+rsi*1]; \
         1022: por xmm0,xmm1; 1026: add rdi,0x10; 102a: cmp rdi,rcx; 102d: jb 1019 <f+0x19>; \
         102f: pmovmskb eax,xmm0; 1033: ret",
    );
    let padding = good.iter().filter(|i| is_padding(i)).count();
    assert_eq!((good.len(), padding, audit(&good)), (18, 2, vec![]));
    // Each line: what the audit must say | the listing. The taint reaches
    // rcx through lea; a shift by cl may keep the flags of the xor before.
    let cases = "\
        div is not on the allowlist | 1000: mov rax,[rdi]; 1003: div rcx
        cmovne is not | 1000: mov rax,[rdi]; 1003: cmovne rax,rdx
        imul is not | 1000: imul rax,rdx
        sete is not | 1000: sete al
        call is not | 1000: call 2000 <memcmp>
        push is not | 1000: push rbx
        nop is not | 1000: nop DWORD PTR [rax+0x0]
        prefix cs on nop | 1000: cs nop WORD PTR [rax+rax*1+0x0]
        prefix lock on or | 1000: lock or DWORD PTR [rdi],eax
        mov stores to memory | 1000: mov QWORD PTR [rdi],rax
        movdqu stores to memory | 1000: movdqu XMMWORD PTR [rsi],xmm0
        xor writes callee-saved r12 | 1000: xor r12d,r12d
        movzx writes callee-saved rbp | 1000: movzx ebp,BYTE PTR [rdi]
        add writes callee-saved rsp | 1000: add rsp,0x8
        flags of secret rax | 1000: mov rax,[rdi]; 1003: test rax,rax; 1006: jne 1000
        flags of secret rcx | 1000: mov rax,[rdi]; 1003: lea rcx,[rax+1]; 1007: cmp rcx,rdx; 100a: jb 1000
        je branches on flags of loaded data | 1000: cmp al,BYTE PTR [rdi]; 1002: je 1000
        address depends on secret rax | 1000: movzx eax,BYTE PTR [rdi]; 1003: mov cl,[rsi+rax*1]
        ja does not directly follow | 1000: mov rax,rdx; 1003: ja 1000 <f>
        jne does not directly follow | 1000: xor rax,[rsi]; 1003: shr rdx,cl; 1006: jne 1000
        jb is a branch target | 1000: cmp rdx,0x8; 1004: jb 1004 <f+0x4>
        jb leaves the function | 1000: cmp rdx,0x8; 1004: jb 2000 <g>
        lands inside an instruction | 1000: cmp rdx,8; 1004: jb 1007; 1006: ret; 1008: ret";
    for (expect, text) in cases
        .lines()
        .filter_map(|case| case.trim().split_once(" | "))
    {
        let bad = audit(&listing(text));
        assert!(
            bad.iter().any(|b| b.contains(expect)),
            "{expect}: {text}: {bad:?}"
        );
    }
    assert_eq!(cases.lines().count(), 23);
}
