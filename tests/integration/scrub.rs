//! Scrubbing in slices (`-c --part K/N`): for lists of every shape, slices
//! 1 to N together give every verdict a full check gives, once; a slice
//! reads only its own bytes; an audit finds new, moved and missing files
//! in the first slice only.

use std::fs;
use std::path::Path;

use super::{
    dir_with, noise, ok_bytes_in, rot, run_in, said_in, status, stderr, stdout, write_files,
    write_list,
};

/// `--verbose` verdict lines, sorted, and the status.
fn verdicts(dir: &Path, args: &[&str]) -> (Vec<String>, i32) {
    let (out, said, status) = said_in(dir, args);
    assert!(!said.contains("panicked"), "{args:?}: {said}");
    let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
    lines.sort();
    (lines, status)
}

/// Checks that slices 1 to N of `lists` (in `dir`), for several N, give
/// together the verdicts a full check gives, each once, and fail exactly
/// when it does. A leaf listing's own line (`NAME: OK`, named in
/// `leaf_listed`) gets no verdict in a slice: its leaves get theirs.
fn slices_cover_a_full_check(dir: &Path, lists: &[&str], leaf_listed: &[&str], options: &[&str]) {
    let args = [&["-c", "--verbose"], options].concat();
    let (full, full_status) = verdicts(dir, &[&args[..], lists].concat());
    let expected: Vec<String> = full
        .into_iter()
        .filter(|line| {
            !leaf_listed.iter().any(|name| {
                line.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(": ") && !rest.starts_with(": leaf"))
            })
        })
        .collect();
    for parts in [1, 2, 3, 5, 7, 16, 100] {
        let slices = slices(dir, &args, parts, lists);
        let worst = slices.iter().map(|(_, _, status)| *status).max();
        let mut together: Vec<String> =
            slices.into_iter().flat_map(|(_, lines, _)| lines).collect();
        together.sort();
        assert_eq!(together, expected, "slices of {parts} of {lists:?}");
        assert_eq!(worst, Some(full_status), "worst status of {parts} slices");
    }
}

/// Each slice (`K/N`) with its [`verdicts`].
type Slices = Vec<(String, Vec<String>, i32)>;

/// The [`verdicts`] of `bt2sum ARGS --part K/N LISTS` in `dir`, for each K
/// from 1 to N.
fn slices(dir: &Path, args: &[&str], parts: u32, lists: &[&str]) -> Slices {
    let slice = |part| {
        let part = format!("{part}/{parts}");
        let (lines, status) = verdicts(dir, &[args, &["--part", &part], lists].concat());
        (part, lines, status)
    };
    (1..=parts).map(slice).collect()
}

#[test]
fn slices_of_empty_files_check_them_once() {
    if super::emulated_too_slow("slices_of_empty_files_check_them_once") {
        return;
    }
    let dir = dir_with(&[("e1", b""), ("e2", b""), ("e3", b"")]);
    write_list(dir.path(), "SUMS", ["e1", "e2", "e3"]);
    write_list(dir.path(), "LEAVES", ["--leaves", "e1", "e2"]);
    slices_cover_a_full_check(dir.path(), &["SUMS", "LEAVES"], &[], &[]);
}

#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn slices_of_one_big_file_cut_at_leaves() {
    // 700 leaves of 4 KiB, and a short last one.
    let dir = dir_with(&[("big", &noise(700 * 4096 + 100, 1))]);
    write_list(dir.path(), "LEAVES", ["-t", "4096", "--leaves", "big"]);
    slices_cover_a_full_check(dir.path(), &["LEAVES"], &["big"], &[]);
    // Balanced: each of 7 slices holds 100 leaves (the last leaf's few
    // bytes go with the seventh).
    for (part, lines, status) in slices(dir.path(), &["-c", "--verbose"], 7, &["LEAVES"]) {
        let leaves = lines.iter().filter(|line| line.contains(": leaf ")).count();
        assert!(
            (100..=101).contains(&leaves) && status == 0,
            "slice {part}: {leaves} leaves"
        );
    }
    // Damaged leaves are found by the slices that hold them, and only
    // there.
    rot(&dir.path().join("big"), [5 * 4096, 650 * 4096 + 7]);
    slices_cover_a_full_check(dir.path(), &["LEAVES"], &["big"], &[]);
    super::assert_output(
        &run_in(dir.path(), ["-c", "--part", "7/7", "LEAVES"], b""),
        "big: FAILED\nbig: leaf 650: FAILED\n",
        "bt2sum: WARNING: 1 computed checksum did NOT match\n",
        1,
    );
    let out = run_in(dir.path(), ["-c", "--part", "4/7", "LEAVES"], b"");
    assert_eq!((stdout(&out).as_str(), status(&out)), ("big: OK\n", 0));
    // Shortened, the file fails in the slice of its last leaf (and in
    // those of the leaves it lost).
    let big = fs::File::options().write(true).open(dir.path().join("big"));
    big.unwrap().set_len(600 * 4096).unwrap();
    slices_cover_a_full_check(dir.path(), &["LEAVES"], &["big"], &[]);
}

#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn slices_of_thousands_of_small_files() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..2000).map(|i| format!("f{i:04}")).collect();
    for (i, name) in names.iter().enumerate() {
        fs::write(dir.path().join(name), noise(i % 1500, i as u64)).unwrap();
    }
    let names = names.iter().map(String::as_str);
    write_list(dir.path(), "SUMS", ["-t", "1024"].into_iter().chain(names));
    write_files(dir.path(), &[("f0100", b"damaged")]);
    fs::remove_file(dir.path().join("f0200")).unwrap();
    slices_cover_a_full_check(dir.path(), &["SUMS"], &[], &["-t", "1024"]);
}

#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn slices_of_mixed_lists() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let sizes = [0usize, 1, 4095, 4096, 4097, 50_000, 200_000];
    for (i, len) in sizes.into_iter().enumerate() {
        for (kind, seed) in [("w", 100), ("l", 200), ("s", 300)] {
            fs::write(root.join(format!("{kind}{i}")), noise(len, seed + i as u64)).unwrap();
        }
    }
    let list = |args: &str| ok_bytes_in(root, format!("-t 4096 {args}").split(' '));
    let whole = list("w0 w1 w2 w3 w4 w5 w6");
    let mut leaves = list("--leaves l0 l1 l2 l3 l4 l5 l6");
    // A leaf listing of only some leaves, as `--part` makes them.
    leaves.extend(list("--leaves --part 2/3 w6"));
    let stat = list("--stat s0 s1 s2 s3 s4 s5 s6");
    write_files(
        root,
        &[("WHOLE", &whole), ("LEAVES", &leaves), ("STAT", &stat)],
    );
    let lists = ["WHOLE", "LEAVES", "STAT"];
    // (An empty file has no leaves: its checksum line is its unit.)
    let leaf_listed = ["l1", "l2", "l3", "l4", "l5", "l6"];
    slices_cover_a_full_check(root, &lists, &leaf_listed, &["-t", "4096"]);
    // Damaged, grown, shortened, missing, edited.
    rot(&root.join("l6"), [100_000]);
    let mut grown = fs::read(root.join("l4")).unwrap();
    grown.push(0);
    let shortened = &fs::read(root.join("w5")).unwrap()[..30_000];
    write_files(
        root,
        &[("l4", &grown), ("w5", shortened), ("s5", b"edited")],
    );
    fs::remove_file(root.join("w2")).unwrap();
    fs::remove_file(root.join("l5")).unwrap();
    slices_cover_a_full_check(root, &lists, &leaf_listed, &["-t", "4096"]);
    // Improperly formatted lines are the first slice's.
    let mut junk = b"not a checksum line\n".to_vec();
    junk.extend(&whole);
    write_files(root, &[("JUNK", &junk)]);
    for part in 1..=3 {
        let part = format!("{part}/3");
        let args = ["-t", "4096", "-c", "-w", "--part", &part, "JUNK"];
        let out = run_in(root, args, b"");
        let warned = stderr(&out).contains("JUNK: 1: improperly formatted");
        assert_eq!(warned, part == "1/3", "{part}: {}", stderr(&out));
    }
}

/// (A K/N out of range: cli::bad_options_are_usage_errors.)
#[test]
fn slices_are_refused_where_they_cannot_be_cut() {
    let dir = dir_with(&[("a", b"a file")]);
    write_list(dir.path(), "SUMS", ["a"]);
    for (args, said) in [
        ("-c --part 1/2", "standard input"),
        ("-c --part 1/2 -", "standard input"),
        ("-c --part 1/2 --update --audit . SUMS", "--update"),
    ] {
        let out = run_in(dir.path(), args.split(' '), b"");
        assert_eq!(status(&out), 2, "{args:?}");
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn an_audit_in_slices_finds_new_moved_and_missing_files_in_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for i in 0..9 {
        let bytes = noise(10_000 * (i + 1), i as u64);
        write_files(&root, &[(&format!("f{i}"), &bytes)]);
    }
    write_list(&root, "../SUMS", ["--stat", "-r", "."]);
    fs::rename(root.join("f1"), root.join("g1")).unwrap();
    fs::remove_file(root.join("f7")).unwrap();
    write_files(&root, &[("new", b"added")]);
    let (full, full_status) = verdicts(&root, &["-c", "--verbose", "--audit", ".", "../SUMS"]);
    assert_eq!(full_status, 1);
    let mut together = Vec::new();
    // (What tunes the walk goes with the slice too.)
    let args = ["-c", "--verbose", "--audit", ".", "-x", "--max-depth", "2"];
    for (part, lines, status) in slices(&root, &args, 4, &["../SUMS"]) {
        let finding = |line: &&String| {
            line.ends_with("NEW") || line.contains("MOVED") || line.ends_with("MISSING")
        };
        let findings: Vec<&String> = lines.iter().filter(finding).collect();
        if part == "1/4" {
            assert_eq!(
                findings,
                ["./f7: MISSING", "./g1: MOVED from ./f1", "./new: NEW"]
            );
            assert_eq!(status, 1);
        } else {
            assert!(findings.is_empty(), "{part}: {findings:?}");
            assert_eq!(status, 0, "{part}");
        }
        together.extend(lines);
    }
    together.sort();
    assert_eq!(together, full);
}

/// A slice of a big file on the spinning-disk model reads about its own
/// share of the file: the counters of the model say how many bytes were
/// served.
#[cfg(target_os = "linux")]
#[test]
fn a_slice_reads_only_its_own_bytes() {
    let test = "a_slice_reads_only_its_own_bytes";
    if super::emulated(test) {
        return;
    }
    let mib = 1 << 20;
    let dir = dir_with(&[("source/big", &noise(64 * mib, 7))]);
    let source = dir.path().join("source");
    write_list(&source, "../SUMS", ["-t", "1048576", "--leaves", "big"]);
    let mountpoint = dir.path().join("disk");
    let Some(mounted) = super::Mounted::counting_disk(test, &source, &mountpoint) else {
        return;
    };
    let before = mounted.served();
    let (out, err, code) = said_in(&mountpoint, ["-c", "--part", "3/8", "../SUMS"]);
    assert_eq!((out.as_str(), code), ("big: OK\n", 0), "{err}");
    let read = mounted.served() - before;
    // 8 leaves of 1 MiB, and what the kernel reads ahead past them.
    let kib = read >> 10;
    assert!(
        (8 * mib as u64..=12 * mib as u64).contains(&read),
        "a slice of 8 MiB read {kib} KiB"
    );
}

/// The command lines of docs/scrub.md's crontab line and systemd service,
/// as cron and systemd hand them to the shell, each run for the seven
/// nights of a week with `date +%u` answering 1 to 7, on an archive with
/// damaged files (`/srv/archive` and its list stood in for by a temporary
/// directory): every night passes on a healthy archive, and together the
/// nights report each damaged file once, as a full check does.
#[test]
fn the_nightly_scrubs_of_the_documentation_cover_a_week() {
    let test = "the_nightly_scrubs_of_the_documentation_cover_a_week";
    if super::emulated(test) {
        return;
    }
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scrub.md")).unwrap();
    let block = |fence: &str, first: &str| -> String {
        let mut blocks = super::fenced_blocks(&docs, fence).into_iter();
        let found =
            blocks.find(|body| body.lines().next().is_some_and(|line| line.contains(first)));
        found.unwrap_or_else(|| panic!("no {fence} block {first}"))
    };
    // Cron runs what follows the five time fields with `sh -c`, a `\%`
    // standing for `%` (a bare `%` would end the command).
    let crontab = block("```crontab", "# m");
    let cron_line = crontab
        .lines()
        .find(|line| !line.starts_with('#') && !line.trim().is_empty())
        .unwrap();
    let command: Vec<&str> = cron_line.split_whitespace().skip(5).collect();
    let cron_command = command.join(" ").replace("\\%", "%");
    assert!(!cron_command.contains('%') || cron_command.contains("+%u"));
    // systemd: ExecStart's `/bin/sh -c '…'`, `$$` standing for `$` and
    // `%%` for `%`.
    let service = block("```ini", "bt2sum-scrub.service");
    let exec = service
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart=/bin/sh -c '"))
        .expect("ExecStart runs /bin/sh -c '…'");
    let unit_command = exec.strip_suffix('\'').unwrap();
    let unit_command = unit_command.replace("$$", "$").replace("%%", "%");
    let timer = block("```ini", "bt2sum-scrub.timer");
    assert!(timer.contains("OnCalendar=") && timer.contains("WantedBy=timers.target"));
    // systemd's own reading of the units, where it is here.
    let units = dir_with(&[
        ("bt2sum-scrub.service", service.as_bytes()),
        ("bt2sum-scrub.timer", timer.as_bytes()),
    ]);
    match std::process::Command::new("systemd-analyze")
        .args(["verify", "bt2sum-scrub.service", "bt2sum-scrub.timer"])
        .current_dir(units.path())
        .output()
    {
        Ok(out) => assert!(
            out.status.success() && out.stderr.is_empty(),
            "systemd-analyze verify: {}",
            stderr(&out)
        ),
        Err(_) => super::skip(
            test,
            "systemd-analyze verify: there is no systemd-analyze here",
        ),
    }

    // An archive of files of many sizes, listed with stat lines.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive");
    for i in 0..40 {
        let bytes = noise(1000 + 7919 * i, i as u64);
        write_files(&archive, &[(&format!("f{i:02}"), &bytes)]);
    }
    write_list(&archive, "../archive.sums", ["--stat", "-r", "."]);
    let list = dir.path().join("archive.sums");
    // `date` answers the night's day of the week for `+%u`.
    let bin = dir.path().join("bin");
    let date = b"#!/bin/sh\n[ \"$1\" = +%u ] && echo \"$NIGHT\"\n";
    write_files(&bin, &[("date", date)]);
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    fs::set_permissions(bin.join("date"), executable).unwrap();
    let bt2sum_dir = Path::new(env!("CARGO_BIN_EXE_bt2sum")).parent().unwrap();
    let mut path = vec![bin, bt2sum_dir.to_path_buf()];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    let path = std::env::join_paths(path).unwrap();
    let week = |command: &str| -> (Vec<String>, i32) {
        let command = command
            .replace("/srv/archive.sums", list.to_str().unwrap())
            .replace("/srv/archive", archive.to_str().unwrap());
        let (mut lines, mut worst) = (Vec::new(), 0);
        for night in 1..=7 {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&command)
                .env("PATH", &path)
                .env("NIGHT", night.to_string())
                .output()
                .unwrap();
            lines.extend(stdout(&out).lines().map(str::to_owned));
            worst = worst.max(status(&out));
            let said = stderr(&out);
            assert!(!said.contains("usage"), "{command}: {said}");
        }
        lines.sort();
        (lines, worst)
    };
    for command in [&cron_command, &unit_command] {
        assert_eq!(week(command), (Vec::new(), 0), "{command}: healthy");
    }
    // Damaged files, spread over the week (their times kept, as damage
    // keeps them).
    for name in ["f03", "f17", "f38"] {
        rot(&archive.join(name), [500]);
    }
    let (full, full_status) = verdicts(&archive, &["-c", "--quiet", list.to_str().unwrap()]);
    assert_eq!(full, ["./f03: FAILED", "./f17: FAILED", "./f38: FAILED"]);
    for command in [&cron_command, &unit_command] {
        assert_eq!(week(command), (full.clone(), full_status), "{command}");
    }
}

/// A file whose leaf lines are checked in several passes (listed out of
/// order, here; or more of them than a pass holds) is reported in each
/// slice that holds some of them, with its own verdict there.
#[test]
fn slices_of_files_checked_in_several_passes() {
    if super::emulated_too_slow("slices_of_files_checked_in_several_passes") {
        return;
    }
    let dir = dir_with(&[("f", &noise(40 * 4096, 77))]);
    let root = dir.path();
    let text = super::ok_in(root, ["-t", "4096", "--leaves", "f"]);
    let mut lines: Vec<&str> = text.lines().collect();
    // The checksum line, then its leaves from the last to the first.
    lines[1..].reverse();
    write_files(root, &[("LEAVES", (lines.join("\n") + "\n").as_bytes())]);
    rot(&root.join("f"), [4096 * 3 + 1, 4096 * 36 + 1]);
    // (Out of order, the listing is not taken for the whole file: its
    // checksum line is a unit of its own, and gets its verdict.)
    slices_cover_a_full_check(root, &["LEAVES"], &[], &[]);
    // Each slice holding a failed leaf, or the checksum line, fails, as
    // the full check does.
    let mut failed = 0;
    for (part, lines, status) in slices(root, &["-c"], 4, &["LEAVES"]) {
        let leaves = lines.iter().filter(|line| line.contains(": leaf ")).count();
        let fails = lines.contains(&"f: FAILED".to_string());
        assert_eq!(status, i32::from(fails), "{part}: {lines:?}");
        assert!(fails || leaves == 0, "{part}: {lines:?}");
        failed += leaves;
    }
    assert_eq!(failed, 2);
}

/// A checksum line its leaf lines do not make fails in every slice. One
/// followed by only some of its file's leaves is, in a slice, a unit of its
/// own, the file hashed whole, so that damage the listed leaves do not
/// cover is found.
#[test]
fn a_checksum_line_beside_its_leaves_is_checked_in_every_slice() {
    let dir = dir_with(&[("f", &noise(40_000, 3)), ("a", &noise(4 * 4096, 5))]);
    let root = dir.path();
    let listing = super::ok_in(root, ["-t", "4096", "--leaves", "f"]);
    // The checksum line's digest damaged, the leaf lines intact.
    let (head, hex) = listing.split_once(" = ").unwrap();
    let flipped = if hex.starts_with('0') { "1" } else { "0" };
    let damaged = format!("{head} = {flipped}{}", &hex[1..]);
    write_files(root, &[("LEAVES", damaged.as_bytes())]);
    let said = "bt2sum: f: its leaf lines do not make its checksum line's digest: the list \
                contradicts itself\n";
    for part in ["1/1", "1/3", "2/3", "3/3"] {
        let (out, err, code) = said_in(root, ["-c", "--part", part, "LEAVES"]);
        assert_eq!((out.as_str(), code), ("f: FAILED\n", 1), "--part {part}");
        assert!(err.starts_with(said), "--part {part}: {err}");
    }
    let out = run_in(root, ["-c", "LEAVES"], b"");
    assert_eq!((stdout(&out).as_str(), status(&out)), ("f: FAILED\n", 1));
    let test = "a_checksum_line_beside_its_leaves_is_checked_in_every_slice";
    if super::emulated_too_slow(test) {
        return;
    }
    let mut list = ok_bytes_in(root, ["-t", "4096", "a"]);
    list.extend(ok_bytes_in(
        root,
        ["-t", "4096", "--leaves", "--leaf-range", "0..1", "a"],
    ));
    write_files(root, &[("S", &list)]);
    rot(&root.join("a"), [3 * 4096]);
    let (full, status) = verdicts(root, &["-c", "-t", "4096", "S"]);
    assert_eq!((full, status), (vec!["a: FAILED".to_string()], 1));
    slices_cover_a_full_check(root, &["S"], &[], &["-t", "4096"]);
}

/// In slices, as in a full check: with stat lines, a leaf listing's file
/// that was edited is CHANGED, not FAILED. With `--ignore-missing`, a slice
/// holding files of a list, all missing, verified nothing of it and fails;
/// a slice holding none of its files passes quietly, with or without it.
#[test]
fn edited_and_missing_files_get_in_slices_what_a_full_check_gives() {
    let data = noise(10_000, 2);
    let dir = dir_with(&[
        ("a", &noise(8 * 4096, 6)),
        ("f1", &data),
        ("f2", &data),
        ("f3", &data),
    ]);
    let root = dir.path();
    write_list(root, "S", ["-t", "4096", "--leaves", "--stat", "a"]);
    write_list(root, "SUMS", ["--stat", "f1", "f2", "f3"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut bytes = fs::read(root.join("a")).unwrap();
    bytes[100] ^= 1;
    write_files(root, &[("a", &bytes)]);
    for name in ["f1", "f2", "f3"] {
        fs::remove_file(root.join(name)).unwrap();
    }
    let changed = "bt2sum: WARNING: 1 listed file was changed since it was listed\n";
    let none = "bt2sum: SUMS: no file was verified\n";
    for (args, out, said, code) in [
        ("-c --quiet S", "a: CHANGED\n", changed, 1),
        ("-c --quiet --part 1/2 S", "a: CHANGED\n", changed, 1),
        ("-c --ignore-missing SUMS", "", none, 1),
        ("-c --ignore-missing --part 1/3 SUMS", "", none, 1),
        ("-c --ignore-missing --part 2/3 SUMS", "", none, 1),
        ("-c --ignore-missing --part 3/3 SUMS", "", none, 1),
        ("-c --ignore-missing --part 5/5 SUMS", "", "", 0),
        ("-c --part 5/5 SUMS", "", "", 0),
    ] {
        super::assert_said(&run_in(root, args.split(' '), b""), out, said, code, args);
    }
}

/// More leaf lines than one pass holds (300,000 of 64 bytes): the file is
/// checked in passes, and a slice that holds only some of them still
/// reports it, fails where a leaf it holds fails, and the slices together
/// report each failing leaf once.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn slices_of_a_listing_longer_than_a_pass() {
    let dir = dir_with(&[("big", &noise(64 * 300_000, 8))]);
    let root = dir.path();
    write_list(root, "L", ["-t", "64", "--leaves", "big"]);
    rot(&root.join("big"), [64 * 1000 + 5, 64 * 250_000 + 3]);
    let failing = |lines: Vec<String>| -> Vec<String> {
        let leaves = lines.into_iter().filter(|line| line.contains(": leaf "));
        leaves.collect()
    };
    let (full, full_status) = verdicts(root, &["-c", "--quiet", "L"]);
    let full = failing(full);
    assert_eq!(full, ["big: leaf 1000: FAILED", "big: leaf 250000: FAILED"]);
    assert_eq!(full_status, 1);
    for parts in [2, 3] {
        let mut together = Vec::new();
        for (part, lines, status) in slices(root, &["-c", "--quiet"], parts, &["L"]) {
            let leaves = failing(lines);
            assert_eq!(status, i32::from(!leaves.is_empty()), "{part}: {leaves:?}");
            together.extend(leaves);
        }
        together.sort();
        assert_eq!(together, full, "{parts} slices");
    }
}
