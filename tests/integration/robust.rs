//! Nothing lost, nothing misreported: the real binary under signals,
//! closed descriptors, gone readers and `ulimit`.

use std::fs;
use std::io::Write;
#[cfg(unix)]
use std::path::Path;
#[cfg(target_os = "linux")]
use std::process::Stdio;

use super::{HELLO, HELLO_B64, Retried, bt2sum, pattern};
#[cfg(unix)]
use super::{emulated, shell, status, stderr, stdout};

/// Whether the address-space limits of the memory tests were chosen on this
/// kind of machine, Linux on x86 (64- and 32-bit): there every limit starts
/// bt2sum and the counts of runs that must succeed are asserted; elsewhere
/// (another C library or page size) the limits that cannot start bt2sum
/// are skipped, and the counts said, not asserted.
#[cfg(unix)]
const LIMITS_MEASURED_HERE: bool = cfg!(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "x86")
));

/// `/dev/full`, to which every write fails with `No space left on device`,
/// open for writing; `None`, with a note naming `test`, where there is no
/// such device (macOS and Windows have none; Linux and FreeBSD do).
pub(super) fn dev_full(test: &str) -> Option<fs::File> {
    match fs::OpenOptions::new().write(true).open("/dev/full") {
        Ok(device) => Some(device),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            super::skip(test, "writing to a full device: there is no /dev/full here");
            None
        }
        Err(error) => panic!("/dev/full: {error}"),
    }
}

/// When standard output's reader goes away, bt2sum ends quietly. Hashing
/// ends with status 0: many empty inputs, or standard input read twice.
/// Check mode's status says the check did not finish (1), whether or not a
/// file had failed by then (a list whose first file fails, or none does,
/// or the first list on standard input): a success is never claimed for a
/// check cut short.
#[test]
fn a_gone_reader_ends_the_run_quietly_and_a_check_without_success() {
    let dir = super::dir_with(&[("a", b"changed\n"), ("e", b"")]);
    let mut lines = format!("BLAKE2b-64 (a) = {HELLO_B64}\n");
    // Enough lines that some are written after the reader is gone.
    for index in 0..2000 {
        fs::write(dir.path().join(format!("f{index}")), HELLO).unwrap();
        lines.push_str(&format!("BLAKE2b-64 (f{index}) = {HELLO_B64}\n"));
    }
    fs::write(dir.path().join("SUMS"), &lines).unwrap();
    fs::write(dir.path().join("GOOD"), lines.split_once('\n').unwrap().1).unwrap();
    // Many lines: `/dev/null` on Unix; on Windows, whose command lines hold
    // 32767 characters, an empty file with a short name.
    let empty = if cfg!(unix) { "/dev/null" } else { "e" };
    let runs = [
        (vec![empty; 5000], vec![], 0),
        (vec!["-", "-"], pattern(1 << 20), 0),
        (vec!["-c", "SUMS"], vec![], 1),
        (vec!["-c", "GOOD"], vec![], 1),
        (vec!["-c", "-"], lines.into_bytes(), 1),
    ];
    for (args, input, code) in runs {
        let mut child = bt2sum().current_dir(dir.path()).args(&args).spawn_piped();
        drop(child.stdout.take());
        // (bt2sum may end before it has read it all.)
        let _ = child.stdin.take().unwrap().write_all(&input);
        let out = child.wait_with_output().unwrap();
        super::assert_said(&out, "", "", code, &format!("{args:?}"));
    }
    // An endless list into a pipe whose reader has gone ends (`yes LINE |
    // bt2sum -c | :`), as GNU's does. (A bt2sum that went on would be
    // stopped by `timeout`, whose status 124 fails the test.)
    #[cfg(unix)]
    {
        let line = stdout(&bt2sum().arg("/dev/null").output_retried());
        let script = format!(
            "yes '{}' | timeout 300 \"$0\" --check | :; echo \"${{PIPESTATUS[1]}}\"",
            line.trim_end()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &script, env!("CARGO_BIN_EXE_bt2sum")])
            .output()
            .unwrap();
        assert_eq!(stdout(&out), "1\n", "{}", stderr(&out));
        assert_eq!(stderr(&out), "");
    }
}

/// Closed standard descriptors are errors when they are used, and only
/// then; `/dev/null` is not a closed descriptor.
#[cfg(unix)]
#[test]
fn closed_descriptors_are_errors_when_used() {
    if emulated("closed_descriptors_are_errors_when_used") {
        return;
    }
    let sums = format!("BLAKE2b-64 (a) = {HELLO_B64}\n");
    let dir = super::dir_with(&[("a", HELLO), ("SUMS", sums.as_bytes())]);
    let bad_descriptor = "bt2sum: -: Bad file descriptor\n";
    let write_error = "bt2sum: write error: Bad file descriptor\n";
    #[rustfmt::skip]
    let cases: [(&str, &str, &str, i32); 11] = [
        (r#""$BT2SUM" <&-"#, "", bad_descriptor, 1),
        (r#""$BT2SUM" a - <&-"#, "BLAKE2b-64 (a) = ", bad_descriptor, 1),
        (r#""$BT2SUM" a <&-"#, "BLAKE2b-64 (a) = ", "", 0),
        (r#""$BT2SUM" < /dev/null"#, "BLAKE2b-64 = 067b63c7", "", 0),
        (r#""$BT2SUM" a >&-"#, "", write_error, 1),
        (r#""$BT2SUM" -c SUMS >&-"#, "", write_error, 1),
        (r#""$BT2SUM" -c --status SUMS >&-"#, "", "", 0),
        (r#""$BT2SUM" -c <&-"#, "", "bt2sum: standard input: Bad file descriptor\n", 1),
        (r#""$BT2SUM" --combine <&-"#, "", "bt2sum: standard input: Bad file descriptor\n", 1),
        (r#""$BT2SUM" --help >&-"#, "", write_error, 1),
        (r#""$BT2SUM" --version >&-"#, "", write_error, 1),
    ];
    for &(script, out, err, code) in &cases {
        let output = shell(dir.path(), script);
        super::assert_starts(&stdout(&output), out);
        assert_eq!(
            (stderr(&output).as_str(), status(&output)),
            (err, code),
            "{script}"
        );
    }
}

/// Under limits on address space, from the lowest that starts bt2sum up,
/// every mode gives its whole output, as it does unlimited, or a clear
/// message (`bt2sum: out of memory`) with status 1: never an abort, a
/// signal or a FAILED of intact data, however the threads, the mapped
/// windows and the buffers share what the limit leaves. The modes: a 64 MiB
/// file hashed (the default options, and seven threads in 1 KiB leaves); a
/// listing of 300,000 leaves combined out of order and checked, and behind
/// a line over 16 MiB (skipped by the check, never combined); `-r` of
/// 40,000 files; a leaf listing of a file and of a pipe, a check of 100-byte
/// leaves and `-r` of 2,000 files, with 2, 8 and 1024 threads; and `-r` of
/// 400,000 files in 200 directories under a limit far below what their
/// names take together (it holds one directory at a time). Each group of
/// runs has a count that must be whole, measured on Linux on x86 with the
/// test's build.
#[cfg(unix)]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn limited_memory_gives_the_whole_output_or_a_clear_error() {
    let test = "limited_memory_gives_the_whole_output_or_a_clear_error";
    if !super::leaves::address_space_can_be_limited(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    fs::write(dir.join("big"), pattern(64 << 20)).unwrap();
    fs::write(dir.join("b31"), pattern(31 << 20)).unwrap();
    super::write_list(dir, "L100", ["--leaves", "-t", "100", "b31"]);
    // 300,000 one-byte leaves, listed in a scrambled order.
    fs::write(dir.join("f"), pattern(300_000)).unwrap();
    let listing = super::write_list(dir, "listing", ["--leaves", "-t", "1", "f"]);
    let mut lines: Vec<&[u8]> = listing.split_inclusive(|&byte| byte == b'\n').collect();
    // (Ordered by their digests: an order that has nothing to do with theirs.)
    lines.sort_by_cached_key(|line| blake2b_simd::blake2b(line).as_bytes().to_vec());
    fs::write(dir.join("scrambled"), lines.concat()).unwrap();
    // A line far over the 16 MiB a list line may hold, then the listing.
    let mut long = vec![b'x'; 40 << 20];
    long.push(b'\n');
    long.extend_from_slice(&listing);
    fs::write(dir.join("long"), long).unwrap();
    for (name, count) in [("many", 40_000), ("few", 2000)] {
        fs::create_dir(dir.join(name)).unwrap();
        for index in 0..count {
            fs::write(dir.join(format!("{name}/f{index:05}")), [index as u8]).unwrap();
        }
    }
    // Combined: the checksum line, then the count line that records the
    // leaf size.
    let combined = super::ok_in(dir, ["--combine", "scrambled"]);
    assert_eq!(
        combined,
        super::leaves::combined_lines(dir, &["-t", "1"], "f")
    );
    // (In memory where the system has a tmpfs: a disk makes 400,000 files
    // slowly.)
    let walk = match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    for directory in 0..200 {
        let directory = walk.path().join(format!("d{directory:03}"));
        fs::create_dir(&directory).unwrap();
        for file in 0..2000 {
            fs::File::create(directory.join(format!("photo-{file:04}.jpg"))).unwrap();
        }
    }
    let bt2sum = |args: &str| -> Vec<String> {
        args.split('|')
            .map(|args| format!(r#""$BT2SUM" {args}"#))
            .collect()
    };
    let hash = bt2sum("big|--cpus 7 -t 1k big");
    let grows =
        bt2sum("--combine scrambled|-r many|-c --quiet listing|-c --quiet long|--combine long");
    let modes = [
        "--leaves -t 4k b31",
        "-t 4k --leaves - < b31",
        "-c --quiet L100",
        "-r few",
    ];
    let threads: Vec<String> = ["2", "8", "1024"]
        .iter()
        .flat_map(|cpus| modes.map(|mode| format!(r#""$BT2SUM" --cpus {cpus} {mode}"#)))
        .collect();
    let walk = format!(r#""$BT2SUM" --cpus 2 -r {} | wc -l"#, walk.path().display());
    // The limits (KB) of each group, and how many of its runs must be
    // whole: from 50000 on every run hashes the file (below, 20000 is
    // enough for the default options, 30000 for seven threads); combining
    // is whole from 10000 on, walking from 20000, checking at 50000.
    let groups: [(&[String], Vec<u64>, usize); 5] = [
        (&hash, with_lowest(&[12000, 20000]), 0),
        (&hash, vec![50000, 100000, 150000, 200000, 300000], 10),
        (
            &grows,
            with_lowest(&[10000, 12000, 15000, 20000, 30000, 50000]),
            6,
        ),
        (
            &threads,
            with_lowest(&[12000, 16000, 20000, 30000, 52000, 90000, 120000]),
            40,
        ),
        (&[walk], vec![40000], 1),
    ];
    for (commands, limits, at_least) in groups {
        let unstarted = below_start(dir, &limits, test);
        let mut whole_runs = 0;
        for command in commands {
            let whole = shell(dir, command);
            let refused = i32::from(command.contains("--combine long"));
            assert_eq!(status(&whole), refused, "{command}: {}", stderr(&whole));
            for limit in limits.iter().filter(|limit| !unstarted.contains(limit)) {
                let script = format!("ulimit -v {limit}; {command}");
                let out = shell(dir, &script);
                let said = stderr(&out);
                let clear = !said.contains("memory allocation of") && !said.contains("(os error");
                assert!(clear, "{script}: {said}");
                match status(&out) {
                    0 => {
                        assert_eq!(
                            (status(&whole), &out.stdout),
                            (0, &whole.stdout),
                            "{script}"
                        );
                        whole_runs += 1;
                    }
                    1 => {
                        let bt2sums = said.lines().all(|line| line.starts_with("bt2sum: "));
                        assert!(!said.is_empty() && bt2sums, "{script}: {said}");
                        // A pass that could not be hashed is a file that
                        // could not be read, never a FAILED of intact data.
                        let failed = stdout(&out)
                            .lines()
                            .find(|line| line.ends_with("FAILED") || line.ends_with("missing"))
                            .map(str::to_owned);
                        assert_eq!(failed, None, "{script}");
                    }
                    code => panic!("{script}: status {code}: {said}"),
                }
            }
        }
        let runs = commands.len() * (limits.len() - unstarted.len());
        eprintln!("{test}: {whole_runs} of {runs} runs whole: {commands:?}");
        if LIMITS_MEASURED_HERE {
            assert!(
                whole_runs >= at_least,
                "{whole_runs} of {runs} whole: {commands:?}"
            );
        } else {
            let note = format!("{at_least} whole runs of {commands:?}: {whole_runs} here");
            super::skip(
                test,
                &format!("measured on Linux on x86, not asserted: {note}"),
            );
            assert!(whole_runs >= at_least.min(1), "none whole: {commands:?}");
        }
    }
}

/// Of `limits` (in KB of address space), those under which not even
/// `bt2sum --version` starts here (the loader and the C library need more):
/// runs under them would test the system, not bt2sum, and are skipped, with
/// a note naming `test`. None on Linux on x86, where the limits were
/// chosen: every one of them starts bt2sum there, and a test that cannot
/// start fails.
#[cfg(unix)]
fn below_start(dir: &Path, limits: &[u64], test: &str) -> Vec<u64> {
    assert!(limits.is_sorted(), "{test}: limits in order");
    if LIMITS_MEASURED_HERE {
        return Vec::new();
    }
    let below: Vec<u64> = limits
        .iter()
        .copied()
        .filter(|&limit| !starts_under(dir, limit))
        .collect();
    if !below.is_empty() {
        let why =
            format!("the limits {below:?} (KB): not even bt2sum --version starts under them here");
        super::skip(test, &why);
    }
    below
}

/// Whether `bt2sum --version` starts, and says nothing on standard error,
/// under an address-space limit of `limit` KB.
#[cfg(unix)]
fn starts_under(dir: &Path, limit: u64) -> bool {
    let out = shell(dir, &format!(r#"ulimit -v {limit}; "$BT2SUM" --version"#));
    out.status.success() && out.stderr.is_empty()
}

/// The lowest address-space limit of the memory tests (KiB): 500 KiB above
/// the least under which this build of bt2sum starts at all (`--version`),
/// found once. As low as bt2sum can be pushed, whatever the build's size.
#[cfg(unix)]
fn lowest_limit() -> u64 {
    static LOWEST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LOWEST.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        // Between a limit too low to start a process and one that starts
        // any build, to 250 KiB, searched by halves.
        let limits: Vec<u64> = (1000..=64000).step_by(250).collect();
        let least = limits.partition_point(|&limit| !starts_under(dir.path(), limit));
        limits.get(least).map_or(64000, |least| least + 500)
    })
}

/// [`lowest_limit`], then those of `limits` above it.
#[cfg(unix)]
fn with_lowest(limits: &[u64]) -> Vec<u64> {
    let lowest = lowest_limit();
    std::iter::once(lowest)
        .chain(limits.iter().copied().filter(|&limit| limit > lowest))
        .collect()
}

/// Past the file-size limit (`ulimit -f`, in blocks of 512 bytes in `sh`)
/// a write fails with a clear message and status 1, where SIGXFSZ would end
/// the process without a word: a spill file fails only the listing that
/// needs it, and standard output is a write error.
#[cfg(unix)]
#[test]
fn the_file_size_limit_is_a_clear_error() {
    if emulated("the_file_size_limit_is_a_clear_error") {
        return;
    }
    // 300,000 one-byte leaves: 19 MiB of digests, which spill.
    let dir = super::dir_with(&[("big", &pattern(300_000)), ("small", b"small")]);
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let script = format!(
        r#"ulimit -f 2000; TMPDIR='{}' "$BT2SUM" --leaves -t 1 big small > listed"#,
        tmp.display()
    );
    let cannot = "cannot keep leaf digests in a temporary file in";
    let too_large = format!("bt2sum: big: {cannot} {}: File too large\n", tmp.display());
    super::assert_output(&shell(dir.path(), &script), "", &too_large, 1);
    let listed = fs::read_to_string(dir.path().join("listed")).unwrap();
    super::assert_starts(&listed, "BLAKE2b-64 (small) = ");
    // Standard output: every line that fits, then the error.
    let script = format!(
        r#"ulimit -f 1; "$BT2SUM" --leaves -t 1 {} > out"#,
        ["small"; 8].join(" ")
    );
    let too_large = "bt2sum: write error: File too large\n";
    super::assert_output(&shell(dir.path(), &script), "", too_large, 1);
    assert!(fs::metadata(dir.path().join("out")).unwrap().len() <= 512);
}

/// Under every limit on open files at which bt2sum starts, no input is lost
/// to `Too many open files`: hashing thousands of files, checking their
/// list and walking them with `-r` give what they give unlimited. Under
/// the smallest limits it refuses to start, saying what it needs. Inputs
/// opened ahead by the pool's threads leave descriptors for the one in
/// turn; the amount lost used to vary from run to run, so each limit runs
/// three times.
#[cfg(unix)]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn every_descriptor_limit_that_starts_loses_nothing() {
    if emulated("every_descriptor_limit_that_starts_loses_nothing") {
        return;
    }
    let dir = super::dir_with(&[("d/big", &pattern(3 << 20))]);
    let files = dir.path().join("d");
    for index in 0..3000 {
        fs::write(files.join(format!("f{index:05}")), pattern(index)).unwrap();
    }
    let commands = [
        r#""$BT2SUM" -t 1k d/f* d/big"#,
        r#""$BT2SUM" -c --quiet -t 1k SUMS"#,
        r#""$BT2SUM" -r -t 1k d"#,
        r#""$BT2SUM" --leaves -t 1k d/big d/f0000*"#,
    ];
    let sums = shell(dir.path(), commands[0]);
    assert_eq!(stdout(&sums).lines().count(), 3001);
    fs::write(dir.path().join("SUMS"), stdout(&sums)).unwrap();
    let unlimited: Vec<std::process::Output> = commands
        .iter()
        .map(|command| shell(dir.path(), command))
        .collect();
    let mut needed = None;
    let mut runs = 0;
    // (Under 4 the dynamic loader cannot open the C library.)
    for limit in 4..=16 {
        for (command, expected) in commands.iter().zip(&unlimited) {
            for _ in 0..3 {
                let script = format!("ulimit -n {limit}; {command}");
                let out = shell(dir.path(), &script);
                runs += 1;
                let refusal = format!(
                    "bt2sum: too few file descriptors: the limit is {limit} (ulimit -n), \
                     and bt2sum needs "
                );
                if let Some(need) = stderr(&out).strip_prefix(&refusal) {
                    let need: u64 = need.trim_end().parse().expect("a number");
                    assert!(limit < need, "{script}");
                    assert_eq!(*needed.get_or_insert(need), need, "{script}");
                    assert_eq!((status(&out), stdout(&out)), (1, String::new()));
                    continue;
                }
                let (text, err, code) = super::said(expected);
                super::assert_said(&out, &text, &err, code, &script);
            }
        }
    }
    assert_eq!(runs, 13 * 4 * 3);
    // The standard descriptors and three for the work (docs/usage.md).
    assert_eq!(needed, Some(6));
}

/// A SIGBUS that is not about a file bt2sum maps goes to the handler that
/// was there before bt2sum's guard: the guard records it before it takes
/// the signal. (In a child process: a disposition is the whole process's.)
#[cfg(unix)]
#[test]
fn a_fault_elsewhere_goes_to_the_handler_before() {
    if emulated("a_fault_elsewhere_goes_to_the_handler_before") {
        return;
    }
    let out = super::ct::child("robust::sigbus_chain_child", &[]).output_retried();
    assert!(super::ct::passed(&out), "{}", super::ct::report(&out));
}

#[cfg(unix)]
#[test]
#[ignore = "child of a_fault_elsewhere_goes_to_the_handler_before, which runs it alone"]
fn sigbus_chain_child() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static CALLED: AtomicBool = AtomicBool::new(false);
    extern "C" fn before(_signal: libc::c_int, _info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        CALLED.store(true, Ordering::SeqCst);
    }
    // SAFETY: a zeroed sigaction with a handler of the SA_SIGINFO
    // signature, which only stores to an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = before as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()),
            0
        );
    }
    // Hashing a mapped file installs bt2sum's guard over it.
    let dir = super::dir_with(&[("mapped", &pattern(2 << 20))]);
    let path = dir.path().join("mapped");
    bt2sum::hash_path(&bt2sum::TreeParams::default(), &path).unwrap();
    // SAFETY: raises a signal whose handlers are both installed.
    unsafe { libc::raise(libc::SIGBUS) };
    assert!(CALLED.load(Ordering::SeqCst));
}

/// A small stack (`ulimit -s`, which sizes the main thread's) is enough
/// for every mode: the work runs on a thread whose stack bt2sum sizes. (16
/// KiB, where GNU's tools start, works too, but with too little to spare
/// to be asserted under a busy machine.) The process's environment is on
/// that stack, so it runs with a small one (as under cron), not the test
/// runner's; a limit at which not even `env` starts here (another system's
/// loader) is skipped, and said.
#[cfg(unix)]
#[test]
fn a_small_stack_runs_every_mode() {
    let test = "a_small_stack_runs_every_mode";
    if emulated(test) {
        return;
    }
    let dir = super::dir_with(&[("one", HELLO), ("tree/two", HELLO)]);
    super::write_list(dir.path(), "listing", ["-t", "4", "--leaves", "one"]);
    let mut runs = 0;
    for limit in [24, 32, 64] {
        let small = "env -i PATH=/usr/bin:/bin";
        let starts = shell(
            dir.path(),
            &format!("ulimit -s {limit} && {small} env true"),
        );
        if !starts.status.success() {
            super::skip(
                test,
                &format!("the stack of {limit} KiB: nothing starts under it here"),
            );
            continue;
        }
        let commands = "--version|--help|one tree/two|-r tree|-c listing|--combine listing|\
                        --leaf-count one|--nonsense";
        for command in commands.split('|') {
            let script = format!(r#"ulimit -s {limit} && {small} "$BT2SUM" {command} < one"#);
            let out = shell(dir.path(), &script);
            let expected = if command == "--nonsense" { 2 } else { 0 };
            assert_eq!(status(&out), expected, "{script}: {}", stderr(&out));
            runs += 1;
        }
    }
    if LIMITS_MEASURED_HERE {
        assert_eq!(runs, 24);
    }
}

/// A stream cut into tiny leaves keeps the memory bound a file by name
/// keeps: a pipe of 16 MiB in leaves of 1 byte (16 million leaves) peaks
/// under 100 MiB resident, and gives the file's digest.
#[cfg(target_os = "linux")]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn a_stream_of_tiny_leaves_stays_within_the_memory_bound() {
    let test = "a_stream_of_tiny_leaves_stays_within_the_memory_bound";
    if super::emulated_too_slow(test) {
        return;
    }
    let data = super::noise(16 << 20, 3);
    let dir = super::dir_with(&[("f", &data)]);
    let by_name = super::run_in(dir.path(), ["-t", "1", "f"], b"");
    let (out, peak) = peak_resident(dir.path(), &["-t", "1"], data);
    eprintln!("a pipe in leaves of 1 byte: {} KiB at most", peak >> 10);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let digest = |out: &std::process::Output| stdout(out).split(" = ").nth(1).map(str::to_owned);
    assert_eq!(digest(&out), digest(&by_name));
    assert!(
        peak <= 100 << 20,
        "a pipe in leaves of 1 byte peaked at {} KiB",
        peak >> 10
    );
}

/// Runs bt2sum with `args` and `input` written to its standard input
/// through a pipe; its output, and its peak resident memory in bytes (the
/// kernel's own count, `ru_maxrss`). The count is taken by a small
/// Python process that forks and waits for bt2sum: a process this test
/// started directly would count the test's own memory, which its `exec`
/// replaced.
#[cfg(target_os = "linux")]
fn peak_resident(dir: &Path, args: &[&str], input: Vec<u8>) -> (std::process::Output, u64) {
    const WAIT4: &str = "import os, sys\n\
        pid = os.fork()\n\
        if pid == 0:\n    os.execv(sys.argv[1], sys.argv[1:])\n\
        _, status, usage = os.wait4(pid, 0)\n\
        sys.stderr.write('peak %d\\n' % usage.ru_maxrss)\n\
        sys.exit(os.waitstatus_to_exitcode(status))\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", WAIT4, env!("CARGO_BIN_EXE_bt2sum")])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (scripts/test-deps installs it)");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let text = String::from_utf8(output.stderr.clone()).unwrap();
    let (before, peak) = text.rsplit_once("peak ").expect("the peak is said");
    output.stderr = before.as_bytes().to_vec();
    (output, peak.trim().parse::<u64>().unwrap() * 1024)
}

/// Where the system grants fewer threads than asked (a task limit, as a
/// container's pids limit sets), bt2sum hashes with those that started,
/// and says how many once: never a refusal. (Run as `nobody`, whom no other
/// process counts against; root ignores the limit.)
#[cfg(target_os = "linux")]
#[test]
fn fewer_threads_than_asked_still_hash() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let test = "fewer_threads_than_asked_still_hash";
    if emulated(test) {
        return;
    }
    let dir = super::dir_with(&[("f", &pattern(3 << 20))]);
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let user = match super::ux::unprivileged(dir.path(), "f") {
        Ok(Some(user)) => user,
        Ok(None) => return super::skip(test, "needs root, to set a task limit as another user"),
        Err(why) => return super::skip(test, &why),
    };
    let expected = stdout(&super::run_in(dir.path(), ["f"], b""));
    let warning = regex::Regex::new(
        r"^bt2sum: started ([0-9]+) of the ([0-9]+) threads asked for: the system grants no more\n$",
    )
    .unwrap();
    for (tasks, cpus) in [(1, "7"), (3, "7"), (4, "7"), (3, "0")] {
        let script = format!(r#"ulimit -u {tasks} && exec "$BT2SUM" --cpus {cpus} f"#);
        let script = script.replace("--cpus 0 ", "");
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .current_dir(dir.path())
            .env("BT2SUM", env!("CARGO_BIN_EXE_bt2sum"))
            .uid(user)
            .gid(user)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(status(&out), 0, "ulimit -u {tasks}, --cpus {cpus}: {err}");
        assert_eq!(stdout(&out), expected, "ulimit -u {tasks}");
        let default_fits =
            cpus == "0" && std::thread::available_parallelism().map_or(1, usize::from) < tasks;
        if default_fits {
            continue;
        }
        let said = warning
            .captures(&err)
            .unwrap_or_else(|| panic!("ulimit -u {tasks}: {err}"));
        let started: usize = said[1].parse().unwrap();
        assert!(started >= 1 && started < said[2].parse().unwrap(), "{err}");
    }
}
