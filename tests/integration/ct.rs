//! Machine proofs for the constant-time comparator (`bt2sum::ct`).
//!
//! - `differential_*`: every level against a plain loop, for every length
//!   0..=300, every alignment pair of the two buffers up to length 64 (a
//!   spread beyond), a one-bit difference at every position and bit, with
//!   the bytes just outside both windows different.
//! - `guard_pages_*`: windows flush against `PROT_NONE` pages on either
//!   side; any read outside the window faults.
//! - `valgrind_memcheck_*`: the inputs are marked undefined with Valgrind
//!   client requests, so memcheck reports any branch or address that
//!   depends on them; a deliberately leaky comparator must be reported.
//! - `disassembly_*`: the assembly functions, disassembled from this very
//!   test binary, use only allowlisted data-operand-independent-timing
//!   instructions, no data-dependent branch, no data-dependent address, no
//!   store and no write to a callee-saved register; their loops start on
//!   16-byte boundaries and no path returns with dirty upper ymm halves.
//! - `archlevel_*`: `BT2SUM_ARCHLEVEL` selects the default level.
//!
//! The tests that run the comparators run every level this CPU can run
//! (`Level::available`); a compiled level the CPU lacks (`avx2` without
//! AVX2) is skipped with a printed note, never failed. The disassembly
//! audit, which runs nothing, covers every compiled level (`Level::ALL`).
//!
//! Some proofs re-run this test binary (`std::env::current_exe`) as a
//! child, under valgrind or with another environment, selecting one
//! `#[ignore]`d child test with `--exact --ignored`; the child tests do
//! nothing useful on their own and say so in their ignore reason.

#[cfg(not(miri))]
use super::Retried;
use bt2sum::ct::{self, Level};
use std::hint::black_box;

/// The plain loop every level is checked against.
fn plain_eq(a: &[u8], b: &[u8]) -> bool {
    assert_eq!(a.len(), b.len());
    for i in 0..a.len() {
        if a[i] != b[i] {
            return false;
        }
    }
    true
}

/// splitmix64: a small deterministic generator for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let x = self.next().to_le_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
    }
}

/// A byte buffer whose `base()` is 64-byte aligned, so that window offsets
/// are exact alignments.
struct Aligned {
    buf: Vec<u8>,
    start: usize,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let buf = vec![0u8; len + 64];
        let start = buf.as_ptr().align_offset(64);
        Aligned { buf, start }
    }

    fn bytes(&mut self) -> &mut [u8] {
        let start = self.start;
        let len = self.buf.len() - 64;
        &mut self.buf[start..start + len]
    }
}

// ---------------------------------------------------------------------------
// Exhaustive differential test.

const MAX_LEN: usize = 300;
const FULL_ALIGN_MAX_LEN: usize = 64;
/// Bytes around the windows (and room for offsets up to 15).
const SLACK: usize = 64;
/// Alignment pairs tried beyond `FULL_ALIGN_MAX_LEN`.
const SPREAD: [(usize, usize); 16] = [
    (0, 0),
    (0, 1),
    (1, 0),
    (1, 1),
    (0, 8),
    (8, 0),
    (3, 7),
    (7, 3),
    (4, 12),
    (15, 15),
    (15, 0),
    (0, 15),
    (5, 10),
    (9, 2),
    (12, 13),
    (6, 6),
];

/// Prints a note for each compiled level this CPU cannot run, which the
/// calling test therefore skips.
fn note_skipped_levels(test: &str) {
    for level in Level::ALL.iter().filter(|l| !l.is_available()) {
        super::skip(test, &format!("level {level}: this CPU cannot run it"));
    }
}

/// Compares `a` and `b` with every level this CPU can run and with `eq`,
/// against the plain loop; returns the number of comparator calls made.
fn check_all_levels(a: &[u8], b: &[u8], what: impl Fn() -> String) -> u64 {
    let expected = plain_eq(a, b);
    for &level in Level::available() {
        let r = level.bcmp(black_box(a), black_box(b));
        if (r == 0) != expected {
            panic!(
                "{level:?}: returned {r} but the plain loop says equal={expected}: {}",
                what()
            );
        }
    }
    if ct::eq(a, b) != expected {
        panic!("ct::eq disagrees with the plain loop: {}", what());
    }
    Level::available().len() as u64 + 1
}

#[test]
#[cfg_attr(miri, ignore = "millions of cases; see differential_small for Miri")]
fn differential_every_length_alignment_and_bit() {
    note_skipped_levels("differential");
    let mut rng = Rng(0x7462_3273_756d_0001);
    let size = SLACK + 16 + MAX_LEN + SLACK;
    let mut abuf = Aligned::new(size);
    let mut bbuf = Aligned::new(size);
    let mut calls = 0u64;
    let mut cases = 0u64;
    let all_pairs: Vec<(usize, usize)> =
        (0..16).flat_map(|x| (0..16).map(move |y| (x, y))).collect();
    for len in 0..=MAX_LEN {
        let pairs: &[(usize, usize)] = if len <= FULL_ALIGN_MAX_LEN {
            &all_pairs
        } else {
            &SPREAD
        };
        for &(oa, ob) in pairs {
            let (wa, wb) = (SLACK + oa, SLACK + ob);
            let a = abuf.bytes();
            let b = bbuf.bytes();
            rng.fill(a);
            // b mirrors a around the window, but every byte outside the
            // window differs from its counterpart: a comparator that reads
            // one byte too many (before or after) reports a difference.
            for (i, x) in b.iter_mut().enumerate() {
                let j = (i + wa).wrapping_sub(wb);
                let mirror = if j < a.len() { a[j] } else { 0x55 };
                *x = if (wb..wb + len).contains(&i) {
                    mirror
                } else {
                    !mirror
                };
            }
            let (a, b) = (&a[wa..wa + len], &mut b[wb..wb + len]);
            calls += check_all_levels(a, b, || format!("len {len}, equal, offsets {oa}/{ob}"));
            cases += 1;
            for pos in 0..len {
                for bit in 0..8 {
                    b[pos] ^= 1 << bit;
                    calls += check_all_levels(a, b, || {
                        format!("len {len}, bit {bit} of byte {pos} differs, offsets {oa}/{ob}")
                    });
                    b[pos] ^= 1 << bit;
                    cases += 1;
                }
            }
        }
    }
    // Cases: sum over len of pairs(len) * (1 + 8 * len).
    let per_len = |len: u64| 1 + 8 * len;
    let full: u64 = (0..=FULL_ALIGN_MAX_LEN as u64).map(per_len).sum::<u64>() * 256;
    let spread: u64 = (FULL_ALIGN_MAX_LEN as u64 + 1..=MAX_LEN as u64)
        .map(per_len)
        .sum::<u64>()
        * SPREAD.len() as u64;
    assert_eq!(full, 4_276_480);
    assert_eq!(spread, 5_516_736);
    assert_eq!(cases, 9_793_216);
    assert_eq!(cases, full + spread);
    assert_eq!(calls, cases * (Level::available().len() as u64 + 1));
    println!(
        "differential: {cases} cases x {} levels + ct::eq = {calls} comparator calls",
        Level::available().len()
    );
}

/// A few cases, cheap enough for Miri (which runs only `Portable`).
#[test]
fn differential_small() {
    let mut rng = Rng(42);
    for len in [
        0usize, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 64, 65, 100, 128, 129, 200, 256, 257,
    ] {
        let mut a = vec![0u8; len];
        rng.fill(&mut a);
        let mut b = a.clone();
        check_all_levels(&a, &b, || format!("len {len}"));
        for pos in 0..len {
            b[pos] ^= 0x80;
            check_all_levels(&a, &b, || format!("len {len}, byte {pos}"));
            b[pos] ^= 0x80;
        }
    }
}

#[test]
fn all_ones_and_zeros_and_same_slice() {
    for len in 0..=300usize {
        let zeros = vec![0u8; len];
        let ones = vec![0xffu8; len];
        for &level in Level::available() {
            assert_eq!(level.bcmp(&zeros, &zeros), 0);
            assert_eq!(level.bcmp(&ones, &ones), 0);
            assert_eq!(level.bcmp(&ones, &ones[..]), 0);
            if len > 0 {
                assert_ne!(level.bcmp(&zeros, &ones), 0, "{level:?} {len}");
                assert_ne!(level.bcmp(&ones, &zeros), 0, "{level:?} {len}");
            }
        }
    }
}

#[test]
fn different_lengths_panic_and_are_unequal() {
    for &level in Level::ALL {
        let r = std::panic::catch_unwind(|| level.bcmp(b"abc", b"ab"));
        assert!(r.is_err(), "{level:?} accepted slices of different lengths");
    }
    assert!(!ct::eq(b"abc", b"ab"));
    assert!(!ct::eq(b"", b"a"));
    assert!(ct::eq(b"", b""));
}

/// On a CPU without some compiled level (`avx2` without AVX2), `bcmp` on it
/// panics with a message saying why instead of running instructions the CPU
/// does not have.
#[test]
fn unavailable_levels_panic_with_a_clear_message() {
    if Level::available() == Level::ALL {
        println!("every compiled level runs on this CPU: no panic to check");
    }
    for &level in Level::ALL.iter().filter(|l| !l.is_available()) {
        println!("checking the panic of level {level}, which this CPU cannot run");
        let r = std::panic::catch_unwind(|| level.bcmp(b"abc", b"abc"));
        let payload = r.expect_err("an unavailable level ran");
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        assert!(
            message.contains(&format!("level {level} needs a CPU with")),
            "{level:?}: unclear panic message {message:?}"
        );
    }
}

#[test]
fn level_names() {
    let available = Level::available();
    assert!(!available.is_empty() && available.len() <= Level::ALL.len());
    assert_eq!(available, &Level::ALL[..available.len()]);
    assert!(available.iter().all(|l| l.is_available()));
    for &level in Level::ALL {
        assert_eq!(level.to_string(), level.name());
        // A name is a cap: the level itself if this CPU runs it, else the
        // best one below it, which is the best this CPU has.
        let expected = if level.is_available() {
            level
        } else {
            Level::best()
        };
        assert_eq!(Level::from_name(level.name()), Some(expected));
    }
    assert_eq!(Level::best(), *available.last().unwrap());
    assert_eq!(Level::default(), Level::best());
    assert_eq!(Level::from_name(" PORTABLE "), Some(Level::Portable));
    assert_eq!(Level::from_name("x86-64-v3"), Some(Level::best()));
    assert_eq!(Level::from_name("x86-64-v4"), Some(Level::best()));
    assert_eq!(Level::from_name("AVX2"), Some(Level::best()));
    assert_eq!(Level::from_name("avx512"), None);
    assert_eq!(Level::from_name(""), None);
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        assert_eq!(
            Level::ALL,
            &[Level::Portable, Level::Scalar, Level::Baseline, Level::Avx2]
        );
        assert_eq!(Level::from_name("Scalar"), Some(Level::Scalar));
        assert_eq!(Level::from_name("baseline"), Some(Level::Baseline));
        assert_eq!(Level::from_name("x86-64-v2"), Some(Level::Baseline));
        let has_avx2 = std::arch::is_x86_feature_detected!("avx2");
        assert_eq!(Level::Avx2.is_available(), has_avx2);
        let best = if has_avx2 {
            Level::Avx2
        } else {
            println!("level_names: this CPU lacks AVX2: the best level is baseline");
            Level::Baseline
        };
        assert_eq!(Level::best(), best);
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    assert_eq!(Level::best(), Level::Portable);
    let addresses: std::collections::BTreeSet<usize> =
        Level::ALL.iter().map(|l| l.entry_address()).collect();
    assert_eq!(addresses.len(), Level::ALL.len(), "distinct functions");
}

// ---------------------------------------------------------------------------
// BT2SUM_ARCHLEVEL, checked in child processes (the level is cached once per
// process).

#[cfg(not(miri))]
const CHILD_EXPECT_ENV: &str = "BT2SUM_CT_TEST_EXPECT_LEVEL";

#[test]
#[cfg(not(miri))]
fn archlevel_env_selects_the_default_level() {
    // Names are caps: "scalar" is Scalar on x86_64 and Portable elsewhere;
    // "baseline" is Baseline on x86_64; "avx2" is Avx2 on a CPU with AVX2
    // and Baseline on other x86_64 CPUs. `level_names` checks those values
    // of `from_name`; this test checks that the environment reaches them.
    let named = |name: &str| Level::from_name(name).unwrap();
    let best = Level::best();
    let cases: Vec<(Option<&str>, Level)> = vec![
        (None, best),
        (Some(""), best),
        (Some("nonsense"), best),
        (Some("portable"), Level::Portable),
        (Some("baseline"), named("baseline")),
        (Some("x86-64-v2"), named("baseline")),
        (Some("avx2"), named("avx2")),
        (Some("x86-64-v3"), best),
        (Some("x86-64-v4"), best),
        (Some("scalar"), named("scalar")),
        (Some("SCALAR"), named("scalar")),
    ];
    let exe = std::env::current_exe().unwrap();
    for (value, expected) in cases {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["ct::archlevel_child", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_EXPECT_ENV, expected.name());
        match value {
            Some(v) => cmd.env(ct::ARCHLEVEL_ENV, v),
            None => cmd.env_remove(ct::ARCHLEVEL_ENV),
        };
        let out = cmd.output_retried();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "BT2SUM_ARCHLEVEL={value:?} should give {expected:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
#[cfg(not(miri))]
#[ignore = "child of archlevel_env_selects_the_default_level; meaningless alone"]
fn archlevel_child() {
    let expected = std::env::var(CHILD_EXPECT_ENV).expect("run by the parent test");
    assert_eq!(ct::default_level().name(), expected);
    assert_eq!(Level::from_env(), ct::default_level());
    assert!(ct::eq(b"same", b"same") && !ct::eq(b"same", b"diff"));
}

// ---------------------------------------------------------------------------
// Guard pages.

#[cfg(all(unix, not(miri)))]
mod guard {
    /// `data_len` readable bytes, page aligned, with a `PROT_NONE` page
    /// right before and right after.
    pub struct Guarded {
        base: *mut u8,
        total: usize,
        pub data: *mut u8,
        pub data_len: usize,
    }

    impl Guarded {
        pub fn new(min_len: usize) -> Guarded {
            // SAFETY: sysconf has no preconditions.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
            let data_len = min_len.div_ceil(page).max(1) * page;
            let total = data_len + 2 * page;
            // SAFETY: a fresh anonymous private mapping; the result is
            // checked against MAP_FAILED.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    total,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED, "mmap failed");
            let base = base.cast::<u8>();
            // SAFETY: both ranges are whole pages inside the mapping.
            unsafe {
                assert_eq!(libc::mprotect(base.cast(), page, libc::PROT_NONE), 0);
                assert_eq!(
                    libc::mprotect(base.add(page + data_len).cast(), page, libc::PROT_NONE),
                    0
                );
            }
            Guarded {
                base,
                total,
                // SAFETY: inside the mapping.
                data: unsafe { base.add(page) },
                data_len,
            }
        }

        pub fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: data..data+data_len is mapped read-write and owned by
            // self.
            unsafe { std::slice::from_raw_parts_mut(self.data, self.data_len) }
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // SAFETY: the mapping made in new, unmapped once.
            unsafe { libc::munmap(self.base.cast(), self.total) };
        }
    }
}

/// Runs `ct::guard_pages_child` in a child process, so that a fault (a
/// read outside the window) is reported as a failure of this test instead
/// of killing the whole test binary.
#[test]
#[cfg(all(unix, not(miri)))]
fn guard_pages_no_read_outside_the_window() {
    use std::os::unix::process::ExitStatusExt;
    // A fault is a signal: under an emulator, its delivery is the
    // emulator's (and the control below is skipped there too).
    if super::emulated("guard_pages_no_read_outside_the_window") {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "ct::guard_pages_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .output_retried();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.signal().is_none(),
        "a comparator read outside its window: the child died of signal {:?}\n{stdout}",
        out.status.signal()
    );
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "guard-page child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The control: the guard pages really fault, before and after. Linux
/// raises SIGSEGV for a `PROT_NONE` page; macOS raises SIGBUS, and the BSDs
/// may raise either (FreeBSD's `machdep.prot_fault_translation`).
#[test]
#[cfg(all(unix, not(miri)))]
fn guard_pages_control_faults() {
    use std::os::unix::process::ExitStatusExt;
    if super::emulated("guard_pages_control_faults") {
        return;
    }
    let faults: &[i32] = if cfg!(target_os = "linux") {
        &[libc::SIGSEGV]
    } else {
        &[libc::SIGSEGV, libc::SIGBUS]
    };
    for side in ["before", "after"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["ct::guard_pages_control_child", "--exact", "--ignored"])
            .env("BT2SUM_CT_GUARD_SIDE", side)
            .output_retried();
        assert!(
            out.status
                .signal()
                .is_some_and(|signal| faults.contains(&signal)),
            "reading the byte {side} the window should fault ({faults:?}): {out:?}"
        );
    }
}

#[test]
#[cfg(all(unix, not(miri)))]
#[ignore = "child of guard_pages_control_faults; it crashes on purpose"]
fn guard_pages_control_child() {
    let g = guard::Guarded::new(100);
    let p = match std::env::var("BT2SUM_CT_GUARD_SIDE").as_deref() {
        // SAFETY: one byte before the data, still inside the mapping (its
        // lower guard page).
        Ok("before") => unsafe { g.data.sub(1) },
        // SAFETY: one byte after the data, still inside the mapping (its
        // upper guard page).
        Ok("after") => unsafe { g.data.add(g.data_len) },
        _ => panic!("run by the parent test"),
    };
    // SAFETY: deliberately not upheld: this reads a PROT_NONE page to show
    // that the guard faults; the child process dies of SIGSEGV (SIGBUS on
    // macOS) before the value could be used, which is what the parent test
    // checks.
    let byte = unsafe { std::ptr::read_volatile(p) };
    println!("read {byte} without a fault");
}

#[test]
#[cfg(all(unix, not(miri)))]
#[ignore = "child of guard_pages_no_read_outside_the_window, which runs it in its own process"]
fn guard_pages_child() {
    use guard::Guarded;
    note_skipped_levels("guard pages");
    const MAX: usize = 1024;
    let mut ga = Guarded::new(MAX);
    let mut gb = Guarded::new(MAX);
    ga.bytes().fill(0xa5);
    gb.bytes().fill(0xa5);
    let n = ga.data_len;
    let mut calls = 0u64;
    for len in 0..=MAX {
        // Windows flush against the guard page before (offset 0) and after
        // (offset n - len), in all four combinations for the two buffers.
        for (oa, ob) in [(0, 0), (n - len, n - len), (0, n - len), (n - len, 0)] {
            for &level in Level::available() {
                {
                    let a = &ga.bytes()[oa..oa + len];
                    let b = &gb.bytes()[ob..ob + len];
                    assert_eq!(level.bcmp(a, b), 0, "{level:?} len {len}");
                }
                if len > 0 {
                    for pos in [ob, ob + len - 1] {
                        gb.bytes()[pos] ^= 0x01;
                        let a = &ga.bytes()[oa..oa + len];
                        let b = &gb.bytes()[ob..ob + len];
                        assert_ne!(level.bcmp(a, b), 0, "{level:?} len {len}");
                        gb.bytes()[pos] ^= 0x01;
                    }
                }
                calls += 1;
            }
        }
    }
    assert_eq!(
        calls,
        (MAX as u64 + 1) * 4 * Level::available().len() as u64
    );
    println!("guard pages: {calls} windows flush against PROT_NONE pages, no fault");
}

// ---------------------------------------------------------------------------
// valgrind memcheck: constant time as "no branch or address depends on
// undefined bytes".

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
mod valgrind {
    use std::arch::asm;

    pub const RUNNING_ON_VALGRIND: usize = 0x1001;
    pub const COUNT_ERRORS: usize = 0x1201;
    const MC_BASE: usize = ((b'M' as usize) << 24) | ((b'C' as usize) << 16);
    pub const MAKE_MEM_UNDEFINED: usize = MC_BASE + 1;
    pub const MAKE_MEM_DEFINED: usize = MC_BASE + 2;

    /// A Valgrind client request: outside valgrind the magic sequence is a
    /// no-op (the rotations of rdi add up to 128 bits) and `default` comes
    /// back; under valgrind it performs `request` with up to 5 arguments.
    pub fn request(default: usize, request: usize, args: [usize; 5]) -> usize {
        let block: [usize; 6] = [request, args[0], args[1], args[2], args[3], args[4]];
        let mut result = default;
        // SAFETY: the documented amd64 client-request preamble; it changes
        // only rdx (the result) and the flags, and reads the request block,
        // which lives until after the asm. Valgrind may change the
        // definedness of the memory named by the arguments, which the
        // caller's pointers own.
        unsafe {
            asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") block.as_ptr(),
                inout("rdx") result,
                options(nostack),
            );
        }
        result
    }

    pub fn running_on_valgrind() -> bool {
        request(0, RUNNING_ON_VALGRIND, [0; 5]) != 0
    }

    pub fn count_errors() -> usize {
        request(0, COUNT_ERRORS, [0; 5])
    }

    pub fn make_undefined<T: ?Sized>(x: &mut T) {
        request(
            0,
            MAKE_MEM_UNDEFINED,
            [
                std::ptr::from_mut(x).cast::<u8>() as usize,
                size_of_val(x),
                0,
                0,
                0,
            ],
        );
    }

    pub fn make_defined<T: ?Sized>(x: &mut T) {
        request(
            0,
            MAKE_MEM_DEFINED,
            [
                std::ptr::from_mut(x).cast::<u8>() as usize,
                size_of_val(x),
                0,
                0,
                0,
            ],
        );
    }
}

/// A deliberately leaky comparator for the controls: a byte loop that
/// returns at the first difference (a branch on the data).
///
/// # Safety
///
/// `a` and `b` must each be valid for reads of `len` bytes.
// SAFETY (of the naked attribute): a complete System V AMD64 function that
// reads its arguments from rdi/rsi/rdx, writes only caller-saved registers,
// never touches the stack and returns with `ret`.
#[cfg(all(target_arch = "x86_64", not(miri)))]
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

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
const LEAKY_SYMBOL: &str = "bt2sum_test_leaky_bcmp";

#[cfg(all(target_arch = "x86_64", not(miri)))]
fn leaky_bcmp(a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(a.len(), b.len());
    // SAFETY: both slices are valid for a.len() bytes.
    unsafe { bt2sum_test_leaky_bcmp(a.as_ptr(), b.as_ptr(), a.len()) }
}

#[test]
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn leaky_control_is_a_correct_comparator() {
    // The control differs from the real ones only in timing.
    for len in 0..40usize {
        let a: Vec<u8> = (0..len as u8).collect();
        let mut b = a.clone();
        assert_eq!(leaky_bcmp(&a, &b), 0);
        for pos in 0..len {
            b[pos] ^= 4;
            assert_ne!(leaky_bcmp(&a, &b), 0);
            b[pos] ^= 4;
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
const VALGRIND_CHILD_ENV: &str = "BT2SUM_CT_VALGRIND_CHILD";

/// Runs this test binary's `ct::valgrind_child` under memcheck in `mode`;
/// returns (exit code, stdout, stderr).
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn run_under_memcheck(mode: &str) -> (Option<i32>, String, String) {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=97",
            "--leak-check=no",
            "--track-origins=no",
        ])
        .arg(&exe)
        .args([
            "ct::valgrind_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(VALGRIND_CHILD_ENV, mode)
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "valgrind is not installed: this constant-time proof needs it and is never \
             skipped; install it (Debian/Ubuntu: apt-get install -y valgrind)"
        ),
        Err(e) => panic!("cannot run valgrind: {e}"),
    };
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn valgrind_memcheck_proves_no_secret_dependent_branch_or_address() {
    // The real comparators and the leaky control, in parallel.
    let leaky = std::thread::spawn(|| run_under_memcheck("leaky"));
    let (code, stdout, stderr) = run_under_memcheck("clean");
    let report = format!("--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert_eq!(
        code,
        Some(0),
        "memcheck found secret-dependent behaviour:\n{report}"
    );
    assert!(stdout.contains("1 passed"), "child did not run:\n{report}");
    assert!(
        stderr.contains("ERROR SUMMARY: 0 errors"),
        "memcheck errors:\n{report}"
    );
    // The child runs under valgrind's virtual CPU, which must offer every
    // level this CPU runs (valgrind emulates AVX2), so that none goes
    // unchecked.
    for &level in Level::available() {
        assert!(
            stdout.contains(&format!("memcheck {level:?}: 0 errors")),
            "{level:?} not checked cleanly:\n{report}"
        );
    }
    note_skipped_levels("valgrind memcheck");
    assert!(stdout.contains("memcheck ct::eq: 0 errors"), "{report}");

    // The control: the same harness must catch the early exit.
    let (code, stdout, stderr) = leaky.join().unwrap();
    let report = format!("--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert_eq!(
        code,
        Some(97),
        "memcheck did NOT flag the leaky control:\n{report}"
    );
    assert!(
        stderr.contains("Conditional jump or move depends on uninitialised value"),
        "{report}"
    );
    assert!(
        stderr.contains(LEAKY_SYMBOL),
        "the error is not in the control:\n{report}"
    );
    assert!(
        !stdout.contains("memcheck leaky: 0 errors") && stdout.contains("memcheck leaky: "),
        "{report}"
    );
}

#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
#[ignore = "child of valgrind_memcheck_proves_no_secret_dependent_branch_or_address; \
            meaningless without valgrind"]
fn valgrind_child() {
    use valgrind::{count_errors, make_defined, make_undefined, running_on_valgrind};
    let mode = std::env::var(VALGRIND_CHILD_ENV).expect("run by the parent test");
    assert!(running_on_valgrind(), "must run under valgrind");

    // Lengths that reach every length class of every level (and the
    // loops of each for one and for several passes).
    const LENS: [usize; 26] = [
        0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 100, 128, 129, 200,
        256, 257, 300,
    ];
    let run = |name: &str, f: &dyn Fn(&[u8], &[u8]) -> i32| {
        let before = count_errors();
        for len in LENS {
            let a: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            // Equal, differing in the first byte, differing in the last.
            for diff in [None, Some(0), Some(len.saturating_sub(1))] {
                if diff.is_some() && len == 0 {
                    continue;
                }
                let mut x = a.clone();
                let mut y = a.clone();
                if let Some(pos) = diff {
                    y[pos] ^= 0x10;
                }
                make_undefined(&mut x[..]);
                make_undefined(&mut y[..]);
                let mut r = f(black_box(&x), black_box(&y));
                // Only the verdict is declassified; then branch on it.
                make_defined(&mut r);
                let r = black_box(r);
                assert_eq!(r == 0, diff.is_none(), "{name}: wrong verdict at len {len}");
            }
        }
        let errors = count_errors() - before;
        println!("memcheck {name}: {errors} errors");
    };
    match mode.as_str() {
        "clean" => {
            for &level in Level::available() {
                run(&format!("{level:?}"), &|a, b| level.bcmp(a, b));
            }
            run("ct::eq", &|a, b| i32::from(!ct::eq(a, b)));
        }
        "leaky" => run("leaky", &leaky_bcmp),
        other => panic!("unknown mode {other}"),
    }
}

// ---------------------------------------------------------------------------
// Disassembly audit.

/// One disassembled instruction (objdump, Intel syntax).
#[derive(Debug, Clone)]
struct Insn {
    addr: u64,
    /// Prefixes objdump prints as separate words (`lock`, `rep`, `cs`,
    /// `data16`, ...): none is expected in the comparators.
    prefixes: Vec<String>,
    mnemonic: String,
    operands: Vec<String>,
}

/// Parses `objdump -d --no-show-raw-insn -M intel` lines of one function.
fn parse_objdump(text: &str) -> Vec<Insn> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((addr, rest)) = line.split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        // Drop objdump's `# 1234 <sym>` annotations.
        let rest = rest.split('#').next().unwrap().trim();
        let mut words = rest.split_whitespace();
        let mut mnemonic = String::new();
        let mut prefixes = Vec::new();
        // Prefixes that objdump prints as words before the mnemonic (multi-
        // byte padding nops, locked or repeated instructions): kept apart,
        // so that the audit sees the real mnemonic and rejects the prefix.
        for w in words.by_ref() {
            let prefix = matches!(
                w,
                "cs" | "ds"
                    | "es"
                    | "ss"
                    | "fs"
                    | "gs"
                    | "data16"
                    | "addr32"
                    | "lock"
                    | "rep"
                    | "repz"
                    | "repnz"
                    | "repe"
                    | "repne"
                    | "notrack"
                    | "bnd"
            ) || w.starts_with("rex");
            if prefix {
                prefixes.push(w.to_string());
                continue;
            }
            mnemonic = w.to_string();
            break;
        }
        let ops: String = words.collect::<Vec<_>>().join(" ");
        let operands = if ops.is_empty() {
            Vec::new()
        } else {
            ops.split(',').map(|s| s.trim().to_string()).collect()
        };
        out.push(Insn {
            addr,
            prefixes,
            mnemonic,
            operands,
        });
    }
    out
}

/// The 64-bit register (or the vector register, or the AVX-512 mask
/// register) that `name` is part of: `eax` is `rax`, and `xmm3`, `ymm3` and
/// `zmm3` are one register, `xmm3`.
fn canonical_reg(name: &str) -> Option<String> {
    let n = name.trim();
    if let Some(rest) = n
        .strip_prefix("xmm")
        .or_else(|| n.strip_prefix("ymm"))
        .or_else(|| n.strip_prefix("zmm"))
    {
        return rest.parse::<u8>().ok().map(|i| format!("xmm{i}"));
    }
    if let Some(rest) = n.strip_prefix('k')
        && rest.len() == 1
        && rest.parse::<u8>().is_ok_and(|i| i < 8)
    {
        return Some(n.to_string());
    }
    const LEGACY: [(&str, [&str; 5]); 8] = [
        ("rax", ["rax", "eax", "ax", "al", "ah"]),
        ("rbx", ["rbx", "ebx", "bx", "bl", "bh"]),
        ("rcx", ["rcx", "ecx", "cx", "cl", "ch"]),
        ("rdx", ["rdx", "edx", "dx", "dl", "dh"]),
        ("rsi", ["rsi", "esi", "si", "sil", "sil"]),
        ("rdi", ["rdi", "edi", "di", "dil", "dil"]),
        ("rbp", ["rbp", "ebp", "bp", "bpl", "bpl"]),
        ("rsp", ["rsp", "esp", "sp", "spl", "spl"]),
    ];
    for (canon, names) in LEGACY {
        if names.contains(&n) {
            return Some(canon.to_string());
        }
    }
    let rest = n.strip_prefix('r')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let suffix = &rest[digits.len()..];
    let i: u8 = digits.parse().ok()?;
    if !(8..=15).contains(&i) || !matches!(suffix, "" | "d" | "w" | "b") {
        return None;
    }
    Some(format!("r{i}"))
}

/// Splits an operand into its memory part (registers inside `[...]`) or
/// its register; immediates and branch targets give neither. An AVX-512
/// operand's decorations (`zmm1{k2}{z}`) are left out: see [`mask_of`].
enum Operand {
    Reg(String),
    Mem(Vec<String>),
    Other,
}

fn classify(op: &str) -> Operand {
    if let (Some(open), Some(close)) = (op.find('['), op.rfind(']')) {
        let regs = op[open + 1..close]
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter_map(canonical_reg)
            .collect();
        return Operand::Mem(regs);
    }
    let register = op.split('{').next().unwrap_or(op);
    match canonical_reg(register) {
        Some(r) => Operand::Reg(r),
        None => Operand::Other,
    }
}

/// The mask register an AVX-512 operand is written or read under
/// (`zmm1{k2}` reads `k2`): one more source of the instruction.
fn mask_of(op: &str) -> Option<String> {
    op.split('{')
        .skip(1)
        .filter_map(|decoration| decoration.strip_suffix('}'))
        .find_map(canonical_reg)
}

/// The data-operand-independent-timing instructions the functions may use:
/// a subset of Intel's DOIT list (no multiply, no divide, no cmov/setcc).
/// The one-byte `nop` of loop alignment is handled apart.
const DOIT_ALLOWLIST: &[&str] = &[
    "mov", "movzx", "xor", "or", "and", "add", "sub", "shr", "shl", "lea", "cmp", "test", "jmp",
    "ret", "movdqu", "movd", "movq", "pxor", "por", "pand", "pcmpeqb", "pmovmskb",
];
/// The AVX2 instructions the functions may use: the VEX forms of DOIT
/// vector instructions, and `vzeroupper`, which has no data operand.
const DOIT_AVX2_ALLOWLIST: &[&str] = &[
    "vmovdqu",
    "vpxor",
    "vpor",
    "vpcmpeqb",
    "vpmovmskb",
    "vzeroupper",
];
/// The conditional branches (allowed only on public flags).
const JCC: &[&str] = &[
    "ja", "jae", "jb", "jbe", "je", "jne", "jz", "jnz", "jg", "jge", "jl", "jle", "jnb", "jnbe",
    "jna", "jnae", "jc", "jnc",
];
/// Instructions that set the flags from their operands. (A shift by a
/// count of zero leaves them as they were: see [`shift_keeps_flags`].) The
/// AVX-512 mask tests are on no allowlist, but the taint analysis follows
/// them for a level that would use them.
const FLAG_SETTERS: &[&str] = &[
    "cmp", "test", "add", "sub", "and", "or", "xor", "shr", "shl", "sar", "sal", "kortestb",
    "kortestw", "kortestd", "kortestq", "ktestb", "ktestw", "ktestd", "ktestq",
];
/// Instructions whose first operand is only read (every other instruction
/// with operands writes its first one, Intel syntax putting the
/// destination first).
const READS_FIRST_OPERAND: &[&str] = &[
    "cmp", "test", "jmp", "nop", "kortestb", "kortestw", "kortestd", "kortestq", "ktestb",
    "ktestw", "ktestd", "ktestq",
];

/// Whether `i` is a shift whose count may be zero (by `cl`, or by an
/// immediate that is 0 modulo the operand width): it then leaves the flags
/// of whatever instruction set them before, so a branch after it may
/// branch on those.
fn shift_keeps_flags(i: &Insn) -> bool {
    if !matches!(i.mnemonic.as_str(), "shr" | "shl" | "sar" | "sal") {
        return false;
    }
    match i.operands.get(1).map(String::as_str) {
        None => false,
        Some("cl") => true,
        Some(count) => {
            let count = count.trim_start_matches("0x");
            u64::from_str_radix(count, 16).map_or(true, |count| count % 32 == 0)
        }
    }
}
/// The registers the System V AMD64 ABI makes a function preserve: the
/// comparators have no prologue, so they must not write any of them.
const CALLEE_SAVED: &[&str] = &["rbx", "rbp", "rsp", "r12", "r13", "r14", "r15"];

/// The one-byte `nop` (0x90) that `.p2align 4, 0x90` pads with.
fn is_padding_nop(i: &Insn) -> bool {
    i.mnemonic == "nop" && i.operands.is_empty() && i.prefixes.is_empty()
}

/// The registers `i` writes, explicitly or (for the stack instructions)
/// implicitly, as canonical 64-bit (or xmm) names.
fn written_registers(i: &Insn) -> Vec<String> {
    let m = i.mnemonic.as_str();
    let mut out = Vec::new();
    if matches!(m, "push" | "pop" | "call" | "enter" | "leave") {
        out.push("rsp".to_string());
    }
    if matches!(m, "enter" | "leave") {
        out.push("rbp".to_string());
    }
    if JCC.contains(&m) || READS_FIRST_OPERAND.contains(&m) || matches!(m, "ret" | "push") {
        return out;
    }
    // An exchange writes both operands.
    let explicit = if matches!(m, "xchg" | "xadd" | "cmpxchg") {
        2
    } else {
        1
    };
    for o in i.operands.iter().take(explicit) {
        if let Operand::Reg(r) = classify(o) {
            out.push(r);
        }
    }
    out
}

/// Whether `i` stores to memory: a memory destination, or the stack.
fn stores_to_memory(i: &Insn) -> bool {
    let m = i.mnemonic.as_str();
    if matches!(m, "push" | "call" | "enter") {
        return true;
    }
    if JCC.contains(&m) || READS_FIRST_OPERAND.contains(&m) {
        return false;
    }
    matches!(
        i.operands.first().map(|o| classify(o)),
        Some(Operand::Mem(_))
    )
}

/// The branch target of a `jmp` or `jcc`, if it is a direct one.
fn branch_target(i: &Insn) -> Option<u64> {
    i.operands
        .first()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| u64::from_str_radix(t, 16).ok())
}

/// Audits one function; returns the violations (empty means it passed).
///
/// Rules:
///
/// - every mnemonic is on `DOIT_ALLOWLIST` or `DOIT_AVX2_ALLOWLIST` (or is
///   a `JCC`), without prefixes; the only `nop` is the one-byte one of
///   alignment padding;
/// - no write to a callee-saved register and no store to memory (the
///   functions have no prologue and no business writing memory);
/// - every branch is direct, stays inside the function and lands on an
///   instruction; every backward branch (a loop) lands on a 16-byte
///   boundary;
/// - no path reaches `ret` with a ymm register written since the last
///   `vzeroupper` (dirty upper halves would slow the caller's SSE code);
/// - a taint analysis (flow-insensitive, so conservative) marks as secret
///   every register written from memory or from a secret register, and
///   then no memory address may use a secret register and every
///   conditional branch must directly follow a flag-setting instruction on
///   public registers only, and must not itself be a branch target (so no
///   other path can bring flags to it).
fn audit(insns: &[Insn]) -> Vec<String> {
    let mut bad = Vec::new();
    if insns.is_empty() {
        bad.push("no instructions".to_string());
        return bad;
    }
    let (lo, hi) = (insns[0].addr, insns.last().unwrap().addr);
    let index_of = |addr: u64| insns.iter().position(|i| i.addr == addr);
    let mut targets = Vec::new();
    for i in insns {
        let m = i.mnemonic.as_str();
        if is_padding_nop(i) {
            continue;
        }
        for p in &i.prefixes {
            bad.push(format!("{:x}: prefix {p} on {m}", i.addr));
        }
        if m == "nop" {
            bad.push(format!(
                "{:x}: multi-byte nop (only one-byte nop padding is expected)",
                i.addr
            ));
        } else if !DOIT_ALLOWLIST.contains(&m)
            && !DOIT_AVX2_ALLOWLIST.contains(&m)
            && !JCC.contains(&m)
        {
            bad.push(format!("{:x}: {m} is not on the DOIT allowlist", i.addr));
        }
        for r in written_registers(i) {
            if CALLEE_SAVED.contains(&r.as_str()) {
                bad.push(format!("{:x}: {m} writes callee-saved {r}", i.addr));
            }
        }
        if stores_to_memory(i) {
            bad.push(format!("{:x}: {m} stores to memory", i.addr));
        }
        if m == "jmp" || JCC.contains(&m) {
            match branch_target(i) {
                Some(t) if (lo..=hi).contains(&t) => {
                    targets.push(t);
                    if index_of(t).is_none() {
                        bad.push(format!(
                            "{:x}: {m} lands inside an instruction, at {t:x}",
                            i.addr
                        ));
                    }
                    if t <= i.addr && t % 16 != 0 {
                        bad.push(format!(
                            "{:x}: {m} loops back to {t:x}, which is not 16-byte aligned",
                            i.addr
                        ));
                    }
                }
                _ => bad.push(format!(
                    "{:x}: {m} leaves the function or is indirect",
                    i.addr
                )),
            }
        }
    }
    // Upper ymm halves: forward data flow over the control-flow graph,
    // "dirty" if on some path from the entry an instruction naming a ymm
    // (or zmm) register ran since the last vzeroupper; naming one, not
    // only writing it, keeps the rule simple and errs on the safe side.
    let mut dirty_in = vec![false; insns.len()];
    let mut reached = vec![false; insns.len()];
    reached[0] = true;
    loop {
        let mut changed = false;
        for (k, i) in insns.iter().enumerate() {
            if !reached[k] {
                continue;
            }
            let m = i.mnemonic.as_str();
            let touches_ymm = i
                .operands
                .iter()
                .any(|o| o.contains("ymm") || o.contains("zmm"));
            let dirty_out = if matches!(m, "vzeroupper" | "vzeroall") {
                false
            } else {
                dirty_in[k] || touches_ymm
            };
            let mut successors = Vec::new();
            if m == "jmp" || JCC.contains(&m) {
                successors.extend(branch_target(i).and_then(index_of));
            }
            if m != "jmp" && m != "ret" && k + 1 < insns.len() {
                successors.push(k + 1);
            }
            for s in successors {
                if !reached[s] || (dirty_out && !dirty_in[s]) {
                    reached[s] = true;
                    dirty_in[s] |= dirty_out;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (k, i) in insns.iter().enumerate() {
        if i.mnemonic == "ret" && dirty_in[k] {
            bad.push(format!(
                "{:x}: ret with dirty upper ymm halves (no vzeroupper on some path)",
                i.addr
            ));
        }
    }
    // Taint: fixpoint over all instructions.
    let mut secret: std::collections::BTreeSet<String> = Default::default();
    loop {
        let before = secret.len();
        for i in insns.iter().filter(|i| !is_padding_nop(i)) {
            let m = i.mnemonic.as_str();
            if JCC.contains(&m) || READS_FIRST_OPERAND.contains(&m) || m == "ret" {
                continue;
            }
            let Some(Operand::Reg(dest)) = i.operands.first().map(|o| classify(o)) else {
                continue; // stores, rejected above
            };
            // x ^ x, x - x (two-operand), and VEX y ^ y into x: zero, whatever
            // the register held.
            let zero_idiom = match i.operands.len() {
                2 => matches!(m, "xor" | "pxor" | "sub") && classify(&i.operands[1]).is_reg(&dest),
                3 => {
                    m == "vpxor"
                        && matches!(classify(&i.operands[1]), Operand::Reg(r)
                            if classify(&i.operands[2]).is_reg(&r))
                }
                _ => false,
            };
            if zero_idiom {
                continue;
            }
            // Sources: all operands except the destination of a pure move
            // (the destination is also a source of two-operand arithmetic;
            // for the three-operand VEX forms counting it is conservative).
            let pure_move = matches!(
                m,
                "mov"
                    | "movzx"
                    | "movdqu"
                    | "movd"
                    | "movq"
                    | "lea"
                    | "pmovmskb"
                    | "vmovdqu"
                    | "vpmovmskb"
                    | "vmovq"
                    | "vmovdqu8"
                    | "vmovdqu64"
                    | "kmovq"
                    | "kmovd"
            );
            let sources = if pure_move {
                &i.operands[1..]
            } else {
                &i.operands[..]
            };
            let tainted = sources.iter().any(|o| match classify(o) {
                Operand::Reg(r) => secret.contains(&r),
                // A load reads the data; lea only computes an address.
                Operand::Mem(regs) => m != "lea" || regs.iter().any(|r| secret.contains(r)),
                Operand::Other => false,
            }) || i
                .operands
                .iter()
                .filter_map(|o| mask_of(o))
                .any(|mask| secret.contains(&mask));
            if tainted {
                secret.insert(dest);
            }
        }
        if secret.len() == before {
            break;
        }
    }
    for (k, i) in insns.iter().enumerate() {
        if is_padding_nop(i) {
            continue;
        }
        let m = i.mnemonic.as_str();
        for o in &i.operands {
            if let Operand::Mem(regs) = classify(o) {
                for r in regs.iter().filter(|r| secret.contains(*r)) {
                    bad.push(format!("{:x}: address depends on secret {r}", i.addr));
                }
            }
        }
        if JCC.contains(&m) {
            if targets.contains(&i.addr) {
                bad.push(format!("{:x}: {m} is a branch target", i.addr));
            }
            let prev = insns[..k].iter().rev().find(|p| !is_padding_nop(p));
            match prev {
                Some(p) if shift_keeps_flags(p) => bad.push(format!(
                    "{:x}: {m} follows {} by a count that may be zero, which leaves the flags \
                     of an earlier instruction",
                    i.addr, p.mnemonic
                )),
                Some(p) if FLAG_SETTERS.contains(&p.mnemonic.as_str()) => {
                    for o in &p.operands {
                        match classify(o) {
                            Operand::Reg(r) if secret.contains(&r) => bad
                                .push(format!("{:x}: {m} branches on flags of secret {r}", i.addr)),
                            Operand::Mem(_) => bad.push(format!(
                                "{:x}: {m} branches on flags of loaded data",
                                i.addr
                            )),
                            _ => {}
                        }
                    }
                }
                _ => bad.push(format!(
                    "{:x}: {m} does not directly follow a flag-setting instruction",
                    i.addr
                )),
            }
        }
    }
    bad.dedup();
    bad
}

/// The targets of the backward branches (the loop heads) of a function.
fn loop_heads(insns: &[Insn]) -> Vec<u64> {
    insns
        .iter()
        .filter(|i| i.mnemonic == "jmp" || JCC.contains(&i.mnemonic.as_str()))
        .filter_map(|i| branch_target(i).filter(|&t| t <= i.addr))
        .collect()
}

impl Operand {
    fn is_reg(&self, r: &str) -> bool {
        matches!(self, Operand::Reg(x) if x == r)
    }
}

/// The name, in this test binary's symbol table, of the function whose first
/// instruction is at `address` (a function pointer): the comparators are not
/// exported, so they are found from their address. The program's load bias
/// (position-independent executables load anywhere) comes from
/// `dl_iterate_phdr`, and `nm` (the binutils of the binary's architecture)
/// names the symbol at the unbiased address.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn symbol_at(mut nm: std::process::Command, address: usize) -> String {
    unsafe extern "C" fn main_program(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        bias: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `info` is valid for the call, and `bias` is the `usize`
        // handed to dl_iterate_phdr below.
        unsafe { *bias.cast::<usize>() = (*info).dlpi_addr as usize };
        // The main program comes first: stop there.
        1
    }
    let mut bias = 0usize;
    // SAFETY: the callback writes only the `usize` it is given, during the
    // call.
    unsafe { libc::dl_iterate_phdr(Some(main_program), (&raw mut bias).cast()) };
    let wanted = address - bias;
    let exe = std::env::current_exe().unwrap();
    let out = nm
        .arg("--defined-only")
        .arg(&exe)
        .output()
        .expect("nm (binutils) runs: the disassembly proof needs it and is never skipped");
    assert!(out.status.success(), "nm failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let (at, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
            let at = usize::from_str_radix(at, 16).ok()?;
            (at == wanted && matches!(kind, "t" | "T")).then(|| name.to_string())
        })
        .unwrap_or_else(|| panic!("no function at {wanted:#x} in {}", exe.display()))
}

/// The listing of `symbol` in this test binary, as `objdump` (the binutils
/// of the binary's architecture, with `options`) prints it.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn listing_of(objdump: std::process::Command, options: &[&str], symbol: &str) -> String {
    listing_in(&std::env::current_exe().unwrap(), objdump, options, symbol)
}

/// The listing of `symbol` in the binary `exe`, as `objdump` (the binutils
/// of the binary's architecture, with `options`) prints it.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn listing_in(
    exe: &std::path::Path,
    mut objdump: std::process::Command,
    options: &[&str],
    symbol: &str,
) -> String {
    let out = objdump
        .args(["-d", "--no-show-raw-insn"])
        .args(options)
        .arg(format!("--disassemble={symbol}"))
        .arg(exe)
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "objdump is not installed: the disassembly proof needs it and is never skipped; \
             install binutils (Debian/Ubuntu: apt-get install -y binutils)"
        ),
        Err(e) => panic!("cannot run objdump: {e}"),
    };
    assert!(out.status.success(), "objdump failed: {:?}", out);
    let text = String::from_utf8_lossy(&out.stdout);
    let header = format!("<{symbol}>:");
    let body = text
        .split_once(&header)
        .unwrap_or_else(|| panic!("{symbol} not found in {}", exe.display()))
        .1;
    // The function ends at the next blank line (objdump separates symbols).
    body.split("\n\n").next().unwrap().to_string()
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn disassemble(symbol: &str) -> Vec<Insn> {
    let objdump = std::process::Command::new("objdump");
    parse_objdump(&listing_of(objdump, &["-M", "intel"], symbol))
}

#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
fn disassembly_uses_only_doit_instructions_and_public_branches() {
    // Make sure every function is linked into this binary: the runnable
    // ones by a call, all of them by taking their address (which needs no
    // CPU feature: the audit reads the code, it does not run it).
    for &level in Level::available() {
        black_box(level.bcmp(b"x", b"x"));
    }
    let mut report = String::new();
    for &level in Level::ALL {
        if level == Level::Portable {
            // Plain Rust, with its bounds checks' calls to panic: proved
            // under valgrind.
            continue;
        }
        let symbol = &symbol_at(
            std::process::Command::new("nm"),
            black_box(level.entry_address()),
        );
        let insns = disassemble(symbol);
        assert!(
            insns.len() > 40,
            "{symbol}: only {} instructions",
            insns.len()
        );
        assert_eq!(
            insns.last().unwrap().mnemonic,
            "ret",
            "{symbol} must end in ret"
        );
        let bad = audit(&insns);
        assert!(
            bad.is_empty(),
            "{symbol} fails the audit:\n{}",
            bad.join("\n")
        );
        // Each function has one loop, whose head the audit has just found
        // 16-byte aligned: make sure the rule had something to check.
        let heads = loop_heads(&insns);
        assert_eq!(heads.len(), 1, "{symbol}: loop heads {heads:x?}");
        let mnemonics: std::collections::BTreeSet<&str> =
            insns.iter().map(|i| i.mnemonic.as_str()).collect();
        let uses = |reg: &str| {
            insns
                .iter()
                .any(|i| i.operands.iter().any(|o| o.contains(reg)))
        };
        match level {
            Level::Scalar => assert!(
                !uses("xmm") && !uses("ymm"),
                "scalar must use general-purpose registers only"
            ),
            Level::Baseline => {
                for m in ["movdqu", "pxor", "por", "pcmpeqb", "pmovmskb"] {
                    assert!(mnemonics.contains(m), "baseline should use {m}");
                }
                assert!(!uses("ymm"), "baseline must not use ymm registers");
            }
            Level::Avx2 => {
                for m in [
                    "vmovdqu",
                    "vpxor",
                    "vpor",
                    "vpcmpeqb",
                    "vpmovmskb",
                    "vzeroupper",
                    // The SSE2 code it shares with baseline up to 64 bytes.
                    "movdqu",
                    "pcmpeqb",
                ] {
                    assert!(mnemonics.contains(m), "avx2 should use {m}");
                }
                assert!(uses("ymm"), "avx2 should load 32-byte ymm vectors");
                assert!(!uses("zmm"), "avx2 must not use AVX-512 registers");
            }
            Level::Portable => unreachable!(),
        }
        let padding = insns.iter().filter(|i| is_padding_nop(i)).count();
        report.push_str(&format!(
            "{symbol}: {} instructions ({padding} padding nops), loop head at {:x?}, \
             {mnemonics:?}\n",
            insns.len(),
            heads
        ));
    }
    println!("{report}");

    // The control: the leaky comparator in this binary must fail the audit,
    // for its data-dependent branch.
    black_box(leaky_bcmp(b"a", b"a"));
    let bad = audit(&disassemble(LEAKY_SYMBOL));
    assert!(
        bad.iter()
            .any(|b| b.contains("branches on flags of secret")),
        "the audit missed the leaky control's early exit: {bad:?}"
    );
}

/// The audit must be able to fail: synthetic listings in objdump's format,
/// one per kind of violation.
#[test]
fn disassembly_audit_rejects_known_bad_code() {
    // Short path, SSE2 path, and a ymm loop whose head is padded to a
    // 16-byte boundary, ending in vzeroupper.
    let ok = "\
  1000:\tcmp    rdx,0x10
  1004:\tja     1010 <f+0x10>
  1006:\tmov    rax,QWORD PTR [rdi]
  1009:\txor    rax,QWORD PTR [rsi]
  100c:\tret
  100d:\tnop
  100e:\tnop
  100f:\tnop
  1010:\tcmp    rdx,0x40
  1014:\tja     1023 <f+0x23>
  1016:\tmovdqu xmm0,XMMWORD PTR [rdi+rdx*1-0x10]
  101b:\tpmovmskb eax,xmm0
  101f:\tret
  1020:\tnop
  1021:\tnop
  1022:\tnop
  1023:\tlea    rcx,[rdi+rdx*1-0x20]
  1028:\tvpxor  xmm0,xmm0,xmm0
  102c:\tnop
  102d:\tnop
  102e:\tnop
  102f:\tnop
  1030:\tvmovdqu ymm1,YMMWORD PTR [rdi]
  1034:\tvpxor  ymm1,ymm1,YMMWORD PTR [rsi]
  1038:\tvpor   ymm0,ymm0,ymm1
  103c:\tadd    rdi,0x20
  1040:\tcmp    rdi,rcx
  1043:\tjb     1030 <f+0x30>
  1045:\tvpmovmskb eax,ymm0
  1049:\tvzeroupper
  104c:\tret
";
    let good = parse_objdump(ok);
    assert_eq!(good.len(), 31);
    assert_eq!(good.iter().filter(|i| is_padding_nop(i)).count(), 10);
    assert_eq!(loop_heads(&good), [0x1030]);
    assert!(audit(&good).is_empty(), "{:?}", audit(&good));

    let bad_cases: &[(&str, &str)] = &[
        (
            "div",
            "  1000:\tmov    rax,QWORD PTR [rdi]\n  1003:\tdiv    rcx\n  1006:\tret\n",
        ),
        (
            "cmovne",
            "  1000:\tmov    rax,QWORD PTR [rdi]\n  1003:\tcmp    rax,rdx\n  1006:\tcmovne rax,rdx\n  100a:\tret\n",
        ),
        ("imul", "  1000:\timul   rax,rdx\n  1004:\tret\n"),
        (
            "branches on flags of secret",
            "  1000:\tmovzx  eax,BYTE PTR [rdi]\n  1003:\ttest   eax,eax\n  1005:\tjne    1000 <f>\n  1007:\tret\n",
        ),
        (
            "branches on flags of secret",
            // Taint flows through arithmetic into a register used later.
            "  1000:\tmov    r8,QWORD PTR [rdi]\n  1003:\tlea    rcx,[r8+0x1]\n  1007:\tcmp    rcx,rdx\n  100a:\tjb     1000 <f>\n  100c:\tret\n",
        ),
        (
            "branches on flags of loaded data",
            "  1000:\tcmp    al,BYTE PTR [rdi]\n  1002:\tje     1000 <f>\n  1004:\tret\n",
        ),
        (
            "address depends on secret",
            "  1000:\tmovzx  eax,BYTE PTR [rdi]\n  1003:\tmovzx  ecx,BYTE PTR [rsi+rax*1]\n  1007:\tret\n",
        ),
        (
            "does not directly follow",
            "  1000:\tmov    rax,rdx\n  1003:\tja     1000 <f>\n  1005:\tret\n",
        ),
        (
            "is a branch target",
            "  1000:\tcmp    rdx,0x8\n  1004:\tjb     1004 <f+0x4>\n  1006:\tret\n",
        ),
        (
            "leaves the function",
            "  1000:\tcmp    rdx,0x8\n  1004:\tjb     2000 <g>\n  1006:\tret\n",
        ),
        (
            "not on the DOIT allowlist",
            "  1000:\tcall   2000 <memcmp>\n  1005:\tret\n",
        ),
        (
            "not on the DOIT allowlist",
            "  1000:\tmov    eax,DWORD PTR [rdi]\n  1003:\tsete   al\n  1006:\tret\n",
        ),
        // Stores to memory: the comparators only read.
        (
            "mov stores to memory",
            "  1000:\tmov    QWORD PTR [rdi],rax\n  1003:\tret\n",
        ),
        (
            "movdqu stores to memory",
            "  1000:\tmovdqu XMMWORD PTR [rsi],xmm0\n  1004:\tret\n",
        ),
        (
            "vmovdqu stores to memory",
            "  1000:\tvmovdqu YMMWORD PTR [rdi+rdx*1-0x20],ymm0\n  1006:\tvzeroupper\n  1009:\tret\n",
        ),
        (
            "or stores to memory",
            "  1000:\tor     BYTE PTR [rsp-0x8],al\n  1004:\tret\n",
        ),
        (
            "push stores to memory",
            "  1000:\tpush   rbx\n  1001:\tret\n",
        ),
        // Writes to callee-saved registers, at any width.
        (
            "mov writes callee-saved rbx",
            "  1000:\tmov    rbx,QWORD PTR [rdi]\n  1003:\tret\n",
        ),
        (
            "xor writes callee-saved r12",
            "  1000:\txor    r12d,r12d\n  1003:\tret\n",
        ),
        (
            "add writes callee-saved rsp",
            "  1000:\tadd    rsp,0x8\n  1004:\tret\n",
        ),
        (
            "movzx writes callee-saved rbp",
            "  1000:\tmovzx  ebp,BYTE PTR [rdi]\n  1003:\tret\n",
        ),
        (
            "or writes callee-saved r15",
            "  1000:\tor     r15b,al\n  1003:\tret\n",
        ),
        (
            "pop writes callee-saved rsp",
            "  1000:\tpop    r8\n  1002:\tret\n",
        ),
        // Padding other than one-byte nops.
        (
            "multi-byte nop",
            "  1000:\tnop    DWORD PTR [rax+0x0]\n  1004:\tret\n",
        ),
        (
            "prefix cs on nop",
            "  1000:\tcs nop WORD PTR [rax+rax*1+0x0]\n  100a:\tret\n",
        ),
        (
            "xchg is not on the DOIT allowlist",
            "  1000:\txchg   ax,ax\n  1002:\tret\n",
        ),
        (
            "prefix lock on or",
            "  1000:\tlock or DWORD PTR [rdi],eax\n  1003:\tret\n",
        ),
        // A loop whose head is not on a 16-byte boundary.
        (
            "loops back to 1005, which is not 16-byte aligned",
            "  1000:\tlea    rcx,[rdi+rdx*1-0x8]\n  1005:\tmov    rax,QWORD PTR [rdi]\n  1008:\tadd    rdi,0x8\n  100c:\tcmp    rdi,rcx\n  100f:\tjb     1005 <f+0x5>\n  1011:\tret\n",
        ),
        (
            "lands inside an instruction",
            "  1000:\tcmp    rdx,0x8\n  1004:\tjb     1007 <f+0x7>\n  1006:\tret\n  1008:\tret\n",
        ),
        // Taint through zmm and mask registers, as a level using AVX-512
        // would: a load into zmm1 reaches rax through xmm1, the compare's
        // mask k1 the flags, a masked load's zmm2 rcx.
        (
            "branches on flags of secret rax",
            "  1000:\tvmovdqu64 zmm1,ZMMWORD PTR [rdi]\n  1006:\tvpxorq zmm1,zmm1,ZMMWORD PTR [rsi]\n  100c:\tvmovq  rax,xmm1\n  1010:\ttest   rax,rax\n  1013:\tjne    1000 <f>\n  1015:\tret\n",
        ),
        (
            "branches on flags of secret k1",
            "  1000:\tvmovdqu8 zmm0,ZMMWORD PTR [rdi]\n  1006:\tvpcmpeqb k1,zmm0,ZMMWORD PTR [rsi]\n  100d:\tkortestq k1,k1\n  1012:\tjb     1000 <f>\n  1014:\tret\n",
        ),
        (
            "branches on flags of secret rax",
            "  1000:\tvmovdqu8 zmm0,ZMMWORD PTR [rdi]\n  1006:\tvpcmpeqb k1,zmm0,ZMMWORD PTR [rsi]\n  100d:\tkmovq  rax,k1\n  1012:\tcmp    rax,rdx\n  1015:\tjne    1000 <f>\n  1017:\tret\n",
        ),
        (
            "branches on flags of secret rcx",
            "  1000:\tvpcmpeqb k1,zmm0,ZMMWORD PTR [rsi]\n  1007:\tvmovdqu8 zmm2{k1}{z},zmm3\n  100d:\tvmovq  rcx,xmm2\n  1012:\tcmp    rcx,rdx\n  1015:\tjb     1000 <f>\n  1017:\tret\n",
        ),
        // A shift by cl sets no flags when cl is 0: the branch after it
        // would branch on the flags of the xor of loaded data before it.
        (
            "follows shr by a count that may be zero",
            "  1000:\tmov    rax,QWORD PTR [rdi]\n  1003:\txor    rax,QWORD PTR [rsi]\n  1006:\tshr    rdx,cl\n  1009:\tjne    1000 <f>\n  100b:\tret\n",
        ),
        (
            "follows shl by a count that may be zero",
            "  1000:\tmov    rax,QWORD PTR [rdi]\n  1003:\txor    rax,QWORD PTR [rsi]\n  1006:\tshl    rdx,0x40\n  100a:\tjne    1000 <f>\n  100c:\tret\n",
        ),
        // A path that returns with ymm upper halves dirty (the short path
        // skips the vzeroupper).
        (
            "ret with dirty upper ymm halves",
            "  1000:\tvmovdqu ymm0,YMMWORD PTR [rdi]\n  1004:\tcmp    rdx,0x40\n  1008:\tja     100e <f+0xe>\n  100a:\tvpmovmskb eax,ymm0\n  100d:\tret\n  100e:\tvzeroupper\n  1011:\tret\n",
        ),
    ];
    for (expect, listing) in bad_cases {
        let insns = parse_objdump(listing);
        assert!(!insns.is_empty());
        let bad = audit(&insns);
        assert!(
            bad.iter().any(|b| b.contains(expect)),
            "audit should report '{expect}' for\n{listing}\ngot {bad:?}"
        );
    }
}
