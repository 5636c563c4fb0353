//! The portable comparator as built for arm64, read back from bt2sum's
//! binary with binutils for aarch64: no branch and no address depends
//! on the compared bytes, no division touches them, and no call is handed
//! them.
//!
//! There is no assembly level on arm64, so this is the code that compares
//! digests there. It is compiled Rust, not hand-written: its registers are
//! reused and its accumulator goes through the stack (`black_box`), so the
//! audit is a flow-sensitive taint analysis over the control-flow graph,
//! with the stack frame's bytes tracked: every load from outside the frame
//! is secret, and a value stays secret through any instruction and any
//! stack slot it passes through. The flags are one more register.
//!
//! The code read is the code that ships: bt2sum's own release binary for
//! arm64, whose path `.ci/run` gives the arm64 test run; the audit itself
//! is proved able to fail, on listings of leaky code everywhere and on a
//! leaky comparator compiled into the test binary on arm64.

use std::collections::{BTreeMap, BTreeSet};

/// One disassembled instruction (objdump for aarch64).
#[derive(Debug, Clone)]
struct Insn {
    addr: u64,
    mnemonic: String,
    operands: Vec<String>,
}

/// Parses `objdump -d --no-show-raw-insn` lines of one function.
fn parse(text: &str) -> Vec<Insn> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((addr, rest)) = line.split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        // objdump's comments: `// b.any`, `// #48`.
        let rest = rest.split("//").next().unwrap().trim();
        let (mnemonic, operands) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        out.push(Insn {
            addr,
            mnemonic: mnemonic.to_string(),
            operands: split_operands(operands.trim()),
        });
    }
    out
}

/// Splits operands at the commas outside brackets and braces:
/// `q0, q1, [x10, #32]!` is three.
fn split_operands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

/// The register `name` is part of: `w3` and `x3` are `x3`; `q2`, `d2`,
/// `s2`, `h2`, `b2` and `v2.16b` are `v2`; `sp` and `wsp` are `sp`. The
/// zero registers are none (they hold no data).
fn register(name: &str) -> Option<String> {
    let name = name.trim();
    if matches!(name, "sp" | "wsp") {
        return Some("sp".to_string());
    }
    let base = name.split(['.', '[']).next().unwrap_or(name);
    let (kind, number) = base.split_at(base.len().min(1));
    let number: u8 = number.parse().ok()?;
    match kind {
        "x" | "w" if number <= 30 => Some(format!("x{number}")),
        "v" | "q" | "d" | "s" | "h" | "b" if number <= 31 => Some(format!("v{number}")),
        _ => None,
    }
}

/// The flags, as a register.
const FLAGS: &str = "nzcv";

/// Stands for a stack byte the analysis cannot place (a secret stored
/// where the stack pointer is not known): every stack load is then secret.
const SOMEWHERE_ON_THE_STACK: i64 = i64::MIN;

/// A memory operand: its base and index registers, and for a stack slot
/// the offset from the base.
struct Memory {
    base: Option<String>,
    index: Option<String>,
    offset: i64,
    /// `[x0, #8]!` (before) or `[x0], #8` (after): the base moves by this.
    writeback: Option<i64>,
}

/// An immediate operand: `#32`, `#0x20`, `#-8`.
fn immediate(operand: &str) -> Option<i64> {
    let text = operand.trim().strip_prefix('#')?;
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = match text.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => text.parse().ok()?,
    };
    Some(if negative { -value } else { value })
}

/// The memory operand of a load or store, with a post-index that follows
/// it as its own operand.
fn memory(insn: &Insn) -> Option<Memory> {
    let position = insn.operands.iter().position(|o| o.starts_with('['))?;
    let operand = &insn.operands[position];
    let inner = operand.trim_end_matches('!').trim_start_matches('[');
    let inner = inner.trim_end_matches(']');
    let parts = split_operands(inner);
    let base = parts.first().and_then(|p| register(p));
    let index = parts.get(1).and_then(|p| register(p));
    // `[x0, #8]`: at x0 + 8; `[x0, #8]!`: at x0 + 8, which x0 becomes;
    // `[x0], #8`: at x0, which then moves by 8.
    let offset = parts.get(1).and_then(|p| immediate(p)).unwrap_or(0);
    let writeback = if operand.ends_with('!') {
        Some(offset)
    } else {
        insn.operands.get(position + 1).and_then(|p| immediate(p))
    };
    Some(Memory {
        base,
        index,
        offset,
        writeback,
    })
}

/// The bytes a register operand of a load or store moves.
fn width(operand: &str, mnemonic: &str) -> i64 {
    if mnemonic.ends_with('b') && !mnemonic.starts_with("ld1") && !mnemonic.starts_with("st1") {
        return 1;
    }
    if mnemonic.ends_with('h') {
        return 2;
    }
    match operand.trim().chars().next() {
        Some('x' | 'd') => 8,
        Some('w' | 's') => 4,
        Some('q' | 'v') => 16,
        Some('h') => 2,
        Some('b') => 1,
        _ => 8,
    }
}

fn is_load(m: &str) -> bool {
    m.starts_with("ldr")
        || m.starts_with("ldur")
        || m.starts_with("ldp")
        || m.starts_with("ldnp")
        || m.starts_with("ld1")
}

fn is_store(m: &str) -> bool {
    m.starts_with("str")
        || m.starts_with("stur")
        || m.starts_with("stp")
        || m.starts_with("stnp")
        || m.starts_with("st1")
}

/// Instructions that set the flags.
fn sets_flags(m: &str) -> bool {
    matches!(
        m,
        "cmp"
            | "cmn"
            | "tst"
            | "adds"
            | "subs"
            | "ands"
            | "bics"
            | "negs"
            | "ngcs"
            | "adcs"
            | "sbcs"
            | "ccmp"
            | "ccmn"
            | "fcmp"
            | "fcmpe"
    )
}

/// Instructions that read the flags without branching.
fn reads_flags(m: &str) -> bool {
    matches!(
        m,
        "csel"
            | "csinc"
            | "csinv"
            | "csneg"
            | "cset"
            | "csetm"
            | "cinc"
            | "cinv"
            | "cneg"
            | "adc"
            | "adcs"
            | "sbc"
            | "sbcs"
            | "ccmp"
            | "ccmn"
            | "fcsel"
    )
}

/// Instructions whose first operand is read, not written.
fn reads_first_operand(m: &str) -> bool {
    matches!(
        m,
        "cmp" | "cmn" | "tst" | "ccmp" | "ccmn" | "fcmp" | "fcmpe"
    ) || is_store(m)
}

/// What the analysis knows before an instruction: the secret registers,
/// and where the stack pointer and the frame pointer (x29) are relative to
/// the stack pointer at the entry (`None`: not known).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
struct State {
    secret: BTreeSet<String>,
    sp: Option<i64>,
    fp: Option<i64>,
}

impl State {
    fn merge(&mut self, other: &State) -> bool {
        let before = self.clone();
        self.secret.extend(other.secret.iter().cloned());
        if self.sp != other.sp {
            self.sp = None;
        }
        if self.fp != other.fp {
            self.fp = None;
        }
        *self != before
    }

    fn is_secret(&self, register: &str) -> bool {
        self.secret.contains(register)
    }

    /// The address of a stack slot relative to the entry's stack pointer,
    /// if `memory` is one (a known base and no index).
    fn slot(&self, memory: &Memory) -> Option<i64> {
        if memory.index.is_some() {
            return None;
        }
        let base = match memory.base.as_deref()? {
            "sp" => self.sp?,
            "x29" => self.fp?,
            _ => return None,
        };
        Some(base + memory.offset)
    }
}

/// The branch target of a direct branch, if it is one.
fn target(insn: &Insn) -> Option<u64> {
    insn.operands
        .last()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| u64::from_str_radix(t, 16).ok())
}

fn is_conditional(m: &str) -> bool {
    m.starts_with("b.") || matches!(m, "cbz" | "cbnz" | "tbz" | "tbnz")
}

/// Audits one function; returns the violations (empty means it passed).
fn audit(insns: &[Insn]) -> Vec<String> {
    let mut bad = Vec::new();
    if insns.is_empty() {
        return vec!["no instructions".to_string()];
    }
    let index_of = |addr: u64| insns.iter().position(|i| i.addr == addr);
    // Stack bytes (relative to the entry's stack pointer) that may hold a
    // secret: only grows, so the fixpoint below ends.
    let mut secret_bytes: BTreeSet<i64> = BTreeSet::new();
    let mut states: BTreeMap<usize, State> = BTreeMap::new();
    states.insert(
        0,
        State {
            sp: Some(0),
            ..State::default()
        },
    );
    loop {
        let bytes_before = secret_bytes.len();
        let mut work: Vec<usize> = states.keys().copied().collect();
        while let Some(k) = work.pop() {
            let insn = &insns[k];
            let state = states[&k].clone();
            let out = step(insn, &state, &mut secret_bytes);
            let m = insn.mnemonic.as_str();
            let mut successors = Vec::new();
            if m == "b" || is_conditional(m) {
                successors.extend(target(insn).and_then(index_of));
            }
            let falls_through = !matches!(m, "b" | "br" | "ret");
            if falls_through && k + 1 < insns.len() {
                successors.push(k + 1);
            }
            for s in successors {
                let changed = match states.get_mut(&s) {
                    Some(existing) => existing.merge(&out),
                    None => {
                        states.insert(s, out.clone());
                        true
                    }
                };
                if changed {
                    work.push(s);
                }
            }
        }
        if secret_bytes.len() == bytes_before {
            break;
        }
    }
    for (&k, state) in &states {
        check(&insns[k], state, &mut bad);
    }
    bad.dedup();
    bad
}

/// The state after `insn`, from the state before it; stack bytes it makes
/// secret are added to `secret_bytes`.
fn step(insn: &Insn, before: &State, secret_bytes: &mut BTreeSet<i64>) -> State {
    let m = insn.mnemonic.as_str();
    let mut after = before.clone();
    let ops = &insn.operands;
    let reg = |i: usize| ops.get(i).and_then(|o| register(o));
    if is_load(m) || is_store(m) {
        let Some(memory) = memory(insn) else {
            return after;
        };
        let slot = before.slot(&memory);
        // The registers moved: all operands before the memory one.
        let moved: Vec<&String> = ops.iter().take_while(|o| !o.starts_with('[')).collect();
        let mut at = slot.unwrap_or(0);
        for operand in moved {
            let size = width(operand, m);
            let range = at..at + size;
            if is_load(m) {
                let secret = match slot {
                    Some(_) => {
                        secret_bytes.contains(&SOMEWHERE_ON_THE_STACK)
                            || range.clone().any(|byte| secret_bytes.contains(&byte))
                    }
                    None => true,
                };
                if let Some(r) = register(operand) {
                    if secret {
                        after.secret.insert(r);
                    } else {
                        after.secret.remove(&r);
                    }
                }
            } else if register(operand).is_some_and(|r| before.is_secret(&r)) {
                let on_the_stack = matches!(memory.base.as_deref(), Some("sp" | "x29"));
                match slot {
                    Some(_) => secret_bytes.extend(range.clone()),
                    // (Elsewhere in memory, loads are secret anyway.)
                    None if on_the_stack => {
                        secret_bytes.insert(SOMEWHERE_ON_THE_STACK);
                    }
                    None => {}
                }
            }
            at += size;
        }
        if let (Some(delta), Some(base)) = (memory.writeback, memory.base.as_deref()) {
            match base {
                "sp" => after.sp = before.sp.map(|sp| sp + delta),
                "x29" => after.fp = before.fp.map(|fp| fp + delta),
                _ => {}
            }
        }
        return after;
    }
    if m == "bl" || m == "blr" {
        // What the callee leaves in the registers it may change: secret
        // if it was handed a secret.
        let handed = (0..8).any(|i| before.is_secret(&format!("x{i}")))
            || (0..8).any(|i| before.is_secret(&format!("v{i}")));
        for i in 0..=18 {
            set(&mut after, format!("x{i}"), handed);
        }
        set(&mut after, "x30".to_string(), false);
        set(&mut after, FLAGS.to_string(), handed);
        return after;
    }
    if m == "b" || is_conditional(m) || matches!(m, "ret" | "br" | "nop") {
        return after;
    }
    // The stack and frame pointers, tracked where they move by constants.
    let first = reg(0);
    let sources: Vec<String> = ops
        .iter()
        .skip(usize::from(!reads_first_operand(m)))
        .filter_map(|o| register(o))
        .collect();
    // `mov v0.d[0], x10` and `movk` keep the rest of their destination.
    let keeps_destination =
        m == "movk" || m == "ins" || (m == "mov" && ops.first().is_some_and(|o| o.contains('[')));
    let mut secret = sources.iter().any(|r| before.is_secret(r))
        || (keeps_destination && first.as_deref().is_some_and(|r| before.is_secret(r)))
        || (reads_flags(m) && before.is_secret(FLAGS));
    // x ^ x and x - x are zero, whatever x held.
    if matches!(m, "eor" | "sub") && ops.len() == 3 && ops[1] == ops[2] {
        secret = false;
    }
    if sets_flags(m) {
        set(&mut after, FLAGS.to_string(), secret);
    }
    if let Some(destination) = first.filter(|_| !reads_first_operand(m)) {
        match (destination.as_str(), m, reg(1).as_deref(), ops.get(2)) {
            ("sp", "sub", Some("sp"), Some(imm)) => {
                after.sp = before.sp.zip(immediate(imm)).map(|(sp, imm)| sp - imm);
            }
            ("sp", "add", Some("sp"), Some(imm)) => {
                after.sp = before.sp.zip(immediate(imm)).map(|(sp, imm)| sp + imm);
            }
            ("sp", "mov", Some("x29"), None) => after.sp = before.fp,
            ("x29", "add", Some("sp"), Some(imm)) => {
                after.fp = before.sp.zip(immediate(imm)).map(|(sp, imm)| sp + imm);
            }
            ("x29", "mov", Some("sp"), None) => after.fp = before.sp,
            ("sp", _, _, _) => after.sp = None,
            ("x29", _, _, _) => after.fp = None,
            _ => {}
        }
        set(&mut after, destination, secret);
    }
    after
}

fn set(state: &mut State, register: String, secret: bool) {
    if secret {
        state.secret.insert(register);
    } else {
        state.secret.remove(&register);
    }
}

/// The rules, for one instruction and the state before it.
fn check(insn: &Insn, state: &State, bad: &mut Vec<String>) {
    let m = insn.mnemonic.as_str();
    let at = insn.addr;
    if (is_load(m) || is_store(m))
        && let Some(memory) = memory(insn)
    {
        for r in [memory.base, memory.index].into_iter().flatten() {
            if state.is_secret(&r) {
                bad.push(format!("{at:x}: address depends on secret {r}"));
            }
        }
    }
    if m.starts_with("b.") && state.is_secret(FLAGS) {
        bad.push(format!("{at:x}: {m} branches on flags of secret data"));
    }
    if matches!(m, "cbz" | "cbnz" | "tbz" | "tbnz")
        && let Some(r) = insn.operands.first().and_then(|o| register(o))
        && state.is_secret(&r)
    {
        bad.push(format!("{at:x}: {m} branches on secret {r}"));
    }
    if matches!(m, "br" | "blr") {
        bad.push(format!("{at:x}: {m} is an indirect branch"));
    }
    if m == "ret" && state.is_secret("x30") {
        bad.push(format!(
            "{at:x}: ret to an address that depends on secret data"
        ));
    }
    if m == "bl" {
        for i in 0..8 {
            for r in [format!("x{i}"), format!("v{i}")] {
                if state.is_secret(&r) {
                    bad.push(format!("{at:x}: bl is handed secret {r}"));
                }
            }
        }
    }
    if matches!(m, "udiv" | "sdiv") {
        bad.push(format!(
            "{at:x}: {m} takes a time that depends on its operands"
        ));
    }
}

/// The audit must be able to fail: listings in objdump's format of leaky
/// code, one per kind of violation; and a clean one, shaped as the
/// compiler shapes the real function, must pass.
#[test]
fn arm64_audit_rejects_known_bad_code() {
    // A frame, a loop whose counter sets the flags it branches on while
    // the secret accumulator goes through the stack, and the frame
    // restored before ret.
    let clean = "\
   100:\tsub\tsp, sp, #0x30
   104:\tstp\tx29, x30, [sp, #32]
   108:\tadd\tx29, sp, #0x20
   10c:\tcmp\tx1, x3
   110:\tb.ne\t160 <f+0x60>  // b.any
   114:\tstr\txzr, [sp, #16]
   118:\tlsr\tx8, x1, #5
   11c:\tcbz\tx8, 148 <f+0x48>
   120:\tldp\tq0, q1, [x0], #32
   124:\tldp\tq2, q3, [x2], #32
   128:\tldr\tx13, [sp, #16]
   12c:\tsubs\tx8, x8, #0x1
   130:\teor\tv0.16b, v2.16b, v0.16b
   134:\tfmov\tx14, d0
   138:\torr\tx13, x14, x13
   13c:\tstr\tx13, [sp, #16]
   140:\tb.ne\t120 <f+0x20>  // b.any
   144:\tmov\tv0.d[0], x13
   148:\tstur\tx13, [x29, #-8]
   14c:\tldp\tw9, w8, [x29, #-8]
   150:\torr\tw0, w8, w9
   154:\tldp\tx29, x30, [sp, #32]
   158:\tadd\tsp, sp, #0x30
   15c:\tret
   160:\tmov\tx1, sp
   164:\tbl\t9000 <assert_failed>
";
    let insns = parse(clean);
    assert_eq!(insns.len(), 26);
    assert_eq!(insns[2].operands, ["x29", "sp", "#0x20"]);
    assert_eq!(insns[8].operands, ["q0", "q1", "[x0]", "#32"]);
    assert!(audit(&insns).is_empty(), "{:?}", audit(&insns));

    let bad_cases: &[(&str, &str)] = &[
        (
            // The early exit of a leaky comparator.
            "b.ne branches on flags of secret data",
            "   100:\tldrb\tw8, [x0]\n   104:\tldrb\tw9, [x2]\n   108:\tcmp\tw8, w9\n   10c:\tb.ne\t114 <f+0x14>\n   110:\tret\n   114:\tret\n",
        ),
        (
            "cbnz branches on secret x8",
            "   100:\tldr\tx8, [x0]\n   104:\tldr\tx9, [x2]\n   108:\teor\tx8, x8, x9\n   10c:\tcbnz\tx8, 100 <f>\n   110:\tret\n",
        ),
        (
            "tbz branches on secret x9",
            "   100:\tldr\tx9, [x0, #8]\n   104:\ttbz\tw9, #3, 100 <f>\n   108:\tret\n",
        ),
        (
            "address depends on secret x8",
            "   100:\tldrb\tw8, [x0]\n   104:\tldrb\tw9, [x2, x8]\n   108:\tret\n",
        ),
        (
            // Through a stack slot, and the flags of a later compare.
            "b.eq branches on flags of secret data",
            "   100:\tsub\tsp, sp, #0x10\n   104:\tldr\tx8, [x0]\n   108:\tstr\tx8, [sp, #8]\n   10c:\tldr\tx9, [sp, #8]\n   110:\tcmp\tx9, #0x0\n   114:\tb.eq\t104 <f+0x4>\n   118:\tadd\tsp, sp, #0x10\n   11c:\tret\n",
        ),
        (
            // Through the frame pointer's view of the same slot.
            "cbz branches on secret x9",
            "   100:\tsub\tsp, sp, #0x20\n   104:\tadd\tx29, sp, #0x10\n   108:\tldr\tx8, [x0]\n   10c:\tstr\tx8, [sp, #8]\n   110:\tldur\tx9, [x29, #-8]\n   114:\tcbz\tx9, 108 <f+0x8>\n   118:\tret\n",
        ),
        (
            // Stored where the stack pointer is not known (it moved by a
            // register), read back through the frame pointer.
            "cbz branches on secret x10",
            "   100:\tmov\tx29, sp\n   104:\tsub\tsp, sp, x9\n   108:\tldr\tx8, [x0]\n   10c:\tstr\tx8, [sp]\n   110:\tldur\tx10, [x29, #-8]\n   114:\tcbz\tx10, 108 <f+0x8>\n   118:\tret\n",
        ),
        (
            // A flag set by a select on secret flags.
            "b.hi branches on flags of secret data",
            "   100:\tldr\tx8, [x0]\n   104:\tcmp\tx8, #0x1\n   108:\tcset\tw9, eq\n   10c:\tcmp\tx1, #0x4\n   110:\tccmp\tw9, #0x0, #0x4, hi\n   114:\tb.hi\t100 <f>\n   118:\tret\n",
        ),
        (
            "udiv takes a time",
            "   100:\tldr\tx8, [x0]\n   104:\tudiv\tx9, x8, x1\n   108:\tret\n",
        ),
        (
            "bl is handed secret x0",
            "   100:\tldr\tx0, [x0]\n   104:\tbl\t9000 <g>\n   108:\tret\n",
        ),
        ("br is an indirect branch", "   100:\tbr\tx1\n"),
        (
            "ret to an address",
            "   100:\tldr\tx30, [x0]\n   104:\tret\n",
        ),
        (
            // A secret merged in on one path only still reaches the branch.
            "cbnz branches on secret x8",
            "   100:\tmov\tx8, x1\n   104:\tcbz\tx2, 10c <f+0xc>\n   108:\tldr\tx8, [x0]\n   10c:\tcbnz\tx8, 100 <f>\n   110:\tret\n",
        ),
    ];
    for (expect, listing) in bad_cases {
        let insns = parse(listing);
        assert!(!insns.is_empty());
        let bad = audit(&insns);
        assert!(
            bad.iter().any(|b| b.contains(expect)),
            "the audit should report '{expect}' for\n{listing}\ngot {bad:?}"
        );
    }
}

/// The portable comparator of the shipped binary, bt2sum as built for
/// arm64 in release (named by `BT2SUM_AUDIT_BINARY`, which `.ci/run` sets),
/// passes the audit; a leaky comparator built into this test binary does
/// not. Where no such binary is named, the test says it is skipped.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
#[test]
fn arm64_portable_comparator_has_no_secret_branch_or_address() {
    use std::hint::black_box;
    let test = "arm64_portable_comparator_has_no_secret_branch_or_address";

    // The control first, so that it runs wherever the test does: a
    // comparator that stops at the first difference.
    black_box(leaky(b"ab", b"ab"));
    let leaky_symbol = symbol_at(leaky as fn(&[u8], &[u8]) -> bool as usize);
    let own = std::env::current_exe().unwrap();
    let bad = audit(&parse(&disassemble(&own, &leaky_symbol)));
    assert!(
        bad.iter().any(|b| b.contains("branches on")),
        "the audit missed the leaky control's early exit: {bad:?}"
    );

    let Some(shipped) = std::env::var_os("BT2SUM_AUDIT_BINARY") else {
        super::skip(
            test,
            "BT2SUM_AUDIT_BINARY names no release build of bt2sum to read \
             (cargo build --release, then set it to target/release/bt2sum)",
        );
        return;
    };
    let shipped = std::path::PathBuf::from(shipped);
    let symbol = mangled_name(&shipped, "6bt2sum2ct8portable15timingsafe_bcmp");
    let insns = parse(&disassemble(&shipped, &symbol));
    assert!(
        insns.len() > 40,
        "{symbol}: only {} instructions",
        insns.len()
    );
    let loads = insns.iter().filter(|i| is_load(&i.mnemonic)).count();
    let branches = insns.iter().filter(|i| is_conditional(&i.mnemonic)).count();
    assert!(
        loads > 8 && branches > 4,
        "{symbol}: {loads} loads, {branches} branches"
    );
    let bad = audit(&insns);
    assert!(
        bad.is_empty(),
        "{symbol} fails the audit:\n{}",
        bad.join("\n")
    );
    println!(
        "{symbol} in {}: {} instructions, {loads} loads, {branches} conditional branches",
        shipped.display(),
        insns.len()
    );
}

/// The one function symbol of `binary` whose mangled name holds `path`
/// (its path in a mangling's length-prefixed form, the same in the legacy
/// and the v0 scheme).
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
fn mangled_name(binary: &std::path::Path, path: &str) -> String {
    let out = binutils("nm")
        .arg("--defined-only")
        .arg(binary)
        .output()
        .expect("nm (binutils) runs: the disassembly proof needs it");
    assert!(out.status.success(), "nm {}: {out:?}", binary.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let found: Vec<&str> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let (kind, name) = (fields.next()?, fields.next()?);
            (matches!(kind, "t" | "T") && name.contains(path)).then_some(name)
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one function {path} in {}, not {found:?}",
        binary.display()
    );
    found[0].to_owned()
}

/// A comparator that leaks where the first difference is: the control.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
#[inline(never)]
fn leaky(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// binutils for aarch64: the cross tools on another machine (as under
/// qemu), the native ones on an arm64 machine.
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
fn binutils(tool: &str) -> std::process::Command {
    let cross = format!("aarch64-linux-gnu-{tool}");
    let found = std::process::Command::new(&cross)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    std::process::Command::new(if found { cross.as_str() } else { tool })
}

#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
fn symbol_at(address: usize) -> String {
    super::ct::symbol_at(binutils("nm"), address)
}

#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
fn disassemble(binary: &std::path::Path, symbol: &str) -> String {
    super::ct::listing_in(binary, binutils("objdump"), &[], symbol)
}
