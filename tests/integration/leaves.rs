//! Leaf listings (`--leaves`), leaf ranges (`--leaf-range`) and combining
//! partial listings (`--combine`) through the built binary.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use super::{
    Retried, assert_contains, assert_output, assert_said, assert_starts, bt2sum, dir_with,
    ok_bytes_in, ok_in, pattern, read_error, run, run_in, status, stderr, stdout,
};
#[cfg(unix)]
use super::{emulated, shell};

/// What `--combine` prints for the file that `bt2sum ARGS FILE` hashes (in
/// `dir`): that checksum line, then, unless the leaf size is the default,
/// the file's count line, which gives check mode the leaf size.
pub(super) fn combined_lines(dir: &Path, args: &[&str], file: impl AsRef<OsStr>) -> String {
    let args = || args.iter().map(OsStr::new);
    let mut lines = ok_in(dir, args().chain([file.as_ref()]));
    let counting = args().filter(|&arg| arg != "--untagged");
    let count = ok_in(
        dir,
        counting.chain(["--leaf-count".as_ref(), file.as_ref()]),
    );
    if !count.contains(" tree=5242880") {
        lines.push_str(&count);
    }
    lines
}

/// Runs `bt2sum --combine LISTINGS` in `dir`.
fn combine(dir: &Path, listings: &[impl AsRef<Path>]) -> Output {
    let listings = listings.iter().map(|listing| listing.as_ref());
    let args = [Path::new("--combine")].into_iter();
    run_in(dir, args.chain(listings), b"")
}

/// Writes `text` to a file in `dir` and returns its name.
fn listing(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn leaf_lines_follow_the_file_line_of_any_file() {
    // 2.5 KiB in 1 KiB leaves: two whole leaves and a half one.
    let data = pattern(2560);
    let dir = dir_with(&[("f", &data), ("empty", b"")]);
    let text = ok_in(dir.path(), ["--leaves", "-t", "1k", "f"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("BLAKE2b-64 (f) = "));
    for (index, length) in [1024, 1024, 512].into_iter().enumerate() {
        let offset = index * 1024;
        // Each leaf digest, computed independently of bt2sum's engine.
        let expected = blake2b_simd::Params::new()
            .hash_length(64)
            .fanout(0)
            .max_depth(2)
            .max_leaf_length(1024)
            .inner_hash_length(64)
            .node_offset(index as u64)
            .node_depth(0)
            .last_node(index == 2)
            .hash(&data[offset..offset + length])
            .to_hex();
        assert_eq!(
            lines[index + 1],
            format!(
                "BLAKE2b-64 leaf={index} offset={offset} length={length} total=2560 tree=1024 (f) = {expected}"
            )
        );
    }
    // An empty file says it has no leaves.
    let out = ok_in(dir.path(), "--leaves -a blake2s -s 7 empty".split(' '));
    let digest = super::digest(&stdout(&run(["-a", "blake2s", "-s", "7"], b"")));
    let checksum = format!("BLAKE2s-7 (empty) = {digest}\n");
    let count = "BLAKE2s-7 leaves=0 total=0 tree=5242880 (empty)\n";
    assert_eq!(out, format!("{checksum}{count}"));
    // A range from 0 lists its count line alone.
    let ranged = "--leaves --leaf-range 0..5 -a blake2s -s 7 empty".split(' ');
    assert_eq!(ok_in(dir.path(), ranged), count);
    // And it combines back to the empty checksum.
    let path = listing(dir.path(), "listing", out.as_bytes());
    assert_eq!(stdout(&combine(dir.path(), &[&path])), checksum);
}

/// Runs `bt2sum -c ARGS` in `dir` on a list holding `text`.
fn check(dir: &Path, args: &[&str], text: &[u8]) -> Output {
    listing(dir, "list", text);
    run_in(dir, ["-c"].iter().chain(args).chain(&["list"]), b"")
}

#[test]
fn a_listing_verifies_leaf_by_leaf() {
    // 5000 bytes in 1 KiB leaves: leaves 0 to 4.
    let dir = dir_with(&[("f", &pattern(5000))]);
    let listed = run_in(dir.path(), ["--leaves", "-t", "1k", "f"], b"").stdout;
    let every_line =
        "f: OK\nf: leaf 0: OK\nf: leaf 1: OK\nf: leaf 2: OK\nf: leaf 3: OK\nf: leaf 4: OK\n";
    // One line for the file; every line with --verbose (or --leaves). The
    // leaf size is the listing's `tree=`, whatever -t says.
    for (args, expected) in [
        (&["--strict", "-w"][..], "f: OK\n"),
        (&["-t", "64k"], "f: OK\n"),
        (&["--verbose"], every_line),
        (&["--leaves", "-t", "64k"], every_line),
    ] {
        let out = check(dir.path(), args, &listed);
        assert_said(&out, expected, "", 0, &format!("{args:?}"));
    }

    // One damaged byte in leaf 3: that leaf, and the checksum, fail.
    super::rot(&dir.path().join("f"), [3500]);
    // The summary counts files; the listing gave the leaf size: no hint.
    let failed = "bt2sum: WARNING: 1 computed checksum did NOT match\n";
    let leaf_3 = "f: FAILED\nf: leaf 3: FAILED\n";
    for (args, expected, summary) in [
        (&[][..], leaf_3, failed),
        (
            &["--verbose"],
            "f: FAILED\nf: leaf 0: OK\nf: leaf 1: OK\nf: leaf 2: OK\nf: leaf 3: FAILED\nf: leaf 4: OK\n",
            failed,
        ),
        (&["--quiet"], leaf_3, failed),
        (&["--quiet", "--verbose"], leaf_3, failed),
        (&["--status"], "", ""),
    ] {
        let out = check(dir.path(), args, &listed);
        assert_said(&out, expected, summary, 1, &format!("{args:?}"));
    }
}

#[test]
fn partial_listings_and_counts_verify_their_own_leaves() {
    let data = pattern(10_000);
    let dir = dir_with(&[("f", &data)]);
    let parts = [
        "--leaves --leaf-range 7..9",
        "--leaf-count",
        "--leaves --leaf-range 2..3",
    ];
    let listed: Vec<u8> = (parts.iter())
        .flat_map(|args| ok_bytes_in(dir.path(), args.split(' ').chain(["-t", "1k", "f"])))
        .collect();
    assert_said(&check(dir.path(), &[], &listed), "f: OK\n", "", 0, "whole");
    let verbose = "f: leaf 7: OK\nf: leaf 8: OK\nf: leaf count: OK\nf: leaf 2: OK\n";
    let out = check(dir.path(), &["--verbose"], &listed);
    assert_said(&out, verbose, "", 0, "verbose");

    // A file of another length: the leaves whose bytes and place changed
    // fail (leaf 8, now the last and shorter), and so does the count; the
    // others still verify. Said once, counted as one file.
    fs::write(dir.path().join("f"), &data[..9000]).unwrap();
    let longer = "bt2sum: f: is 9000 bytes long, but its leaf lines say total=10000\n\
                  bt2sum: WARNING: 1 computed checksum did NOT match\n";
    let out = check(dir.path(), &["--verbose"], &listed);
    let verbose = "f: leaf 7: OK\nf: leaf 8: FAILED\nf: leaf count: FAILED\nf: leaf 2: OK\n";
    assert_said(&out, verbose, longer, 1, "shorter, verbose");
    // (Leaf 2, listed after leaf 8, is checked in a pass of its own: the
    // file's line follows the failing lines of the passes before.)
    let out = check(dir.path(), &[], &listed);
    let failed = "f: leaf 8: FAILED\nf: leaf count: FAILED\nf: FAILED\n";
    assert_said(&out, failed, longer, 1, "shorter");

    // Gone: every line is unreadable, the reason given once, one file.
    fs::remove_file(dir.path().join("f")).unwrap();
    let out = check(dir.path(), &["--verbose"], &listed);
    assert_eq!(
        stdout(&out),
        "f: leaf 7: FAILED open or read\nf: leaf 8: FAILED open or read\n\
         f: leaf count: FAILED open or read\nf: leaf 2: FAILED open or read\n"
    );
    let missing = read_error(&dir.path().join("f"), "No such file or directory");
    let unread =
        format!("bt2sum: f: {missing}\nbt2sum: WARNING: 1 listed file could not be read\n");
    let out = check(dir.path(), &[], &listed);
    assert_output(&out, "f: FAILED open or read\n", &unread, 1);
    let out = check(dir.path(), &["--ignore-missing"], &listed);
    assert_output(&out, "", "bt2sum: list: no file was verified\n", 1);
}

#[test]
fn malformed_and_nameless_leaf_lines_are_improperly_formatted() {
    let dir = dir_with(&[("f", &pattern(3000))]);
    let listed = ok_in(dir.path(), ["--leaves", "-t", "1k", "f"]);
    let mut lines: Vec<String> = listed.lines().map(str::to_string).collect();
    // A length that does not fit its leaf, and a line with no name (as
    // standard input's listing has).
    lines[2] = lines[2].replace("length=1024", "length=1000");
    lines[3] = lines[3].replace(" (f)", "");
    let text = lines.join("\n") + "\n";
    // (A nameless line names standard input, which a list read from
    // standard input cannot be.)
    let out = run_in(dir.path(), ["-c", "-w", "--verbose"], text.as_bytes());
    assert_output(
        &out,
        "f: OK\nf: leaf 0: OK\n",
        "bt2sum: standard input: 3: improperly formatted BLAKE2 checksum line\n\
         bt2sum: standard input: 4: improperly formatted BLAKE2 checksum line\n\
         bt2sum: WARNING: 2 lines are improperly formatted\n\
         bt2sum: hint: 1 line checks standard input (named `-`, or nameless as `bt2sum < FILE` \
         prints it): a list read from standard input cannot check standard input too; give \
         the list as a file (bt2sum -c LIST < FILE)\n",
        0,
    );
    let strict = check(dir.path(), &["--strict"], text.as_bytes());
    assert_eq!(status(&strict), 1);
}

/// A FIFO can be read only once: its checksum and leaves verify in one pass.
#[cfg(unix)]
#[test]
fn a_file_and_its_leaves_are_read_once() {
    let data = pattern(300_000);
    let dir = dir_with(&[("f", &data)]);
    let listed = ok_in(dir.path(), ["--leaves", "-t", "64k", "f"]);
    super::mkfifo(&dir.path().join("p"));
    let list = listing(dir.path(), "list", listed.replace("(f)", "(p)").as_bytes());
    let checking = bt2sum()
        .current_dir(dir.path())
        .args(["-c", "--verbose"])
        .arg(&list)
        .spawn_piped();
    fs::write(dir.path().join("p"), &data).unwrap();
    let out = checking.wait_with_output().unwrap();
    let leaves: String = (0..5).map(|leaf| format!("p: leaf {leaf}: OK\n")).collect();
    assert_eq!(stdout(&out), format!("p: OK\n{leaves}"));
    assert_eq!(status(&out), 0);
}

/// Splits the leaves of a file at every boundary (and at every pair of
/// boundaries) and checks the combination equals the whole-file line.
fn split_everywhere(args: &[&str], data_len: usize, leaves: u64) {
    let dir = dir_with(&[("data", &pattern(data_len))]);
    let whole = combined_lines(dir.path(), args, "data");
    let part = |(start, end): (u64, u64)| {
        let range = format!("{start}..{end}");
        let part_args = ["--leaves", "--leaf-range", &range, "data"];
        let text = ok_bytes_in(dir.path(), args.iter().chain(&part_args));
        listing(dir.path(), &format!("part{start}"), &text)
    };
    let mut combined = 0;
    for first in 0..=leaves {
        for second in first..=leaves {
            // Any order of the parts: here the last first.
            let names: Vec<PathBuf> = [(second, leaves), (first, second), (0, first)]
                .into_iter()
                .filter(|(start, end)| start < end)
                .map(part)
                .collect();
            // The parameters come from the listings.
            let out = combine(dir.path(), &names);
            let case = format!("split at {first} and {second}");
            assert_said(&out, &whole, "", 0, &case);
            combined += 1;
        }
    }
    assert_eq!(combined, (leaves + 1) * (leaves + 2) / 2);
}

#[test]
fn combining_ranges_split_at_every_boundary_gives_the_whole_checksum() {
    // 9 MiB + 1 leaves are hashed a mapped piece at a time.
    split_everywhere(&["-t", "9437185"], 2 * 9437185 + 77, 3);
    if super::emulated_too_slow("combining_ranges_split_at_every_boundary_gives_the_whole_checksum")
    {
        return;
    }
    split_everywhere(&["-t", "1k"], 6 * 1024 + 100, 7);
    split_everywhere(&["-t", "1k"], 5 * 1024, 5);
    split_everywhere(&["-a", "blake2s", "-s", "17", "-t", "100"], 333, 4);
}

#[test]
fn combine_reports_gaps_clashes_and_bad_lines() {
    let dir = dir_with(&[("f", &pattern(5000))]);
    let text = ok_in(dir.path(), ["--leaves", "-t", "1k", "f"]);
    let lines: Vec<&str> = text.lines().collect();
    let combine = |name: &str, body: String| {
        combine(dir.path(), &[&listing(dir.path(), name, body.as_bytes())])
    };

    let gap = combine("gap", [lines[1], lines[2], lines[5]].join("\n"));
    let missing = "bt2sum: leaves 2..4 are missing (the file has 5 leaves)\n";
    assert_output(&gap, "", missing, 1);

    let tampered = &lines[3].replace("= ", "= 0")[..lines[3].len()];
    let clash = combine("clash", [lines[3], tampered].join("\n"));
    super::assert_ends(
        &stderr(&clash),
        "clash: 2: leaf 2 is listed twice with different digests\n",
    );
    assert_eq!(status(&clash), 1);

    let other_tree = ok_in(dir.path(), ["--leaves", "-t", "2k", "f"]);
    let other_leaf = other_tree.lines().nth(1).unwrap();
    let mixed = combine("mixed", [lines[1], other_leaf].join("\n"));
    assert_contains(&stderr(&mixed), "listings disagree on the parameters");

    let bad = combine("bad", lines[1].replace("offset=0", "offset=7"));
    // (The listing is named by its full path, which ends in `/bad` on
    // every platform: names are printed with `/` on Windows too.)
    super::assert_ends(
        &stderr(&bad),
        "/bad: 1: malformed leaf line: offset or length do not match the leaf index, leaf size and total\n",
    );

    let nothing = combine("nothing", lines[0].to_string());
    assert_output(&nothing, "", "bt2sum: no leaf lines found\n", 1);

    let absent = read_error(&dir.path().join("absent"), "No such file or directory");
    let missing = run_in(dir.path(), ["--combine", "absent"], b"");
    assert_eq!(stderr(&missing), format!("bt2sum: absent: {absent}\n"));

    // Duplicates that agree, in any order, among comments and blank lines,
    // from standard input.
    let shuffled = [5, 1, 3, 0, 2, 3, 4].map(|index| lines[index]);
    let shuffled = [&["# a comment", ""][..], &shuffled].concat().join("\r\n");
    let out = run(["--combine"], shuffled.as_bytes());
    let count = "BLAKE2b-64 leaves=5 total=5000 tree=1024 (f)";
    assert_eq!(stdout(&out), format!("{}\n{count}\n", lines[0]));
    // A line that is neither a checksum line nor a leaf line fails, with
    // its number.
    let junk = run(["--combine"], format!("{text}junk\n").as_bytes());
    let improper = "bt2sum: standard input: 7: improperly formatted line\n";
    assert_output(&junk, "", improper, 1);
}

/// (Unix: Windows names cannot hold `\n` or bytes that are not UTF-8, and
/// `\` separates there.)
#[cfg(unix)]
#[test]
fn escaped_names_round_trip_through_leaf_lines() {
    let test = "escaped_names_round_trip_through_leaf_lines";
    let dir = tempfile::tempdir().unwrap();
    // Where the file system refuses a byte that is not UTF-8 (macOS's
    // does), the name ends in the UTF-8 `é` instead.
    let names = [&b"odd\nname\\caf\xe9"[..], "odd\nname\\café".as_bytes()];
    let bytes = super::ux::possible(&names, test)[0];
    let tail = &bytes[b"odd\nname\\".len()..];
    let name = super::name(bytes);
    fs::write(dir.path().join(name), pattern(3000)).unwrap();
    let whole = ok_in(dir.path(), [name]);
    let args = ["--leaves", "-t", "1k"].map(OsStr::new);
    let listing_text = ok_bytes_in(dir.path(), args.into_iter().chain([name]));
    let head = [&b"\\BLAKE2b-64 (odd\\nname\\\\"[..], tail, b") = "].concat();
    assert!(listing_text.starts_with(&head));
    let mut lines = listing_text.trim_ascii_end().split(|&b| b == b'\n');
    assert!(lines.all(|line| line.starts_with(b"\\BLAKE2b-64 ")));
    let path = listing(dir.path(), "listing", &listing_text);
    let whole_1k = combined_lines(dir.path(), &["-t", "1k"], name);
    assert_eq!(stdout(&combine(dir.path(), &[&path])), whole_1k);
    assert!(!whole_1k.starts_with(&whole));
}

/// Tiny leaves spill their digests to a temporary file, and every leaf is
/// still listed. A temporary directory that cannot be used fails the
/// listing that needs it, named, with the directory; the other inputs are
/// still hashed.
#[test]
fn tiny_leaves_spill_to_a_temporary_file_and_fail_alone_without_one() {
    // 300,000 one-byte leaves: 19 MB of digests, more than is kept in memory.
    let dir = dir_with(&[("big", &pattern(300_000)), ("small", b"small")]);
    let text = ok_in(dir.path(), ["--leaves", "-t", "1", "big"]);
    assert_eq!(text.lines().count(), 300_001);
    let last = text.lines().last().unwrap();
    assert_starts(
        last,
        "BLAKE2b-64 leaf=299999 offset=299999 length=1 total=300000 tree=1 (big) = ",
    );
    let listed = listing(dir.path(), "listing", text.as_bytes());
    let combined = combine(dir.path(), &[listed]);
    let first = text.lines().next().unwrap();
    let count = "BLAKE2b-64 leaves=300000 total=300000 tree=1 (big)";
    assert_eq!(stdout(&combined), format!("{first}\n{count}\n"));
    // Unix takes the temporary directory from TMPDIR; Windows from TMP (or
    // TEMP), and gives it with a `\` at its end, which bt2sum prints `/`
    // as in every path.
    let (variables, unusable, shown): (&[&str], _, _) = if cfg!(unix) {
        (&["TMPDIR"], "/nonexistent/bt2sum", "/nonexistent/bt2sum")
    } else {
        (
            &["TMP", "TEMP"],
            r"C:\nonexistent\bt2sum",
            "C:/nonexistent/bt2sum/",
        )
    };
    let refused = bt2sum::plain_message(&tempfile::tempfile_in(unusable).unwrap_err());
    #[cfg(unix)]
    assert_eq!(refused, "No such file or directory");
    let out = bt2sum()
        .envs(variables.iter().map(|variable| (variable, unusable)))
        .current_dir(dir.path())
        .args(["--leaves", "-t", "1", "big", "small"])
        .output_retried();
    assert_eq!(status(&out), 1);
    let cannot = "cannot keep leaf digests in a temporary file in";
    assert_eq!(
        stderr(&out),
        format!("bt2sum: big: {cannot} {shown}: {refused}\n")
    );
    let text = stdout(&out);
    assert_starts(&text, "BLAKE2b-64 (small) = ");
    assert_eq!(text.lines().count(), 1 + 5, "{text}");
}

#[test]
fn hostile_listing_lines_are_errors_not_crashes() {
    // (` = D`: the line's digest.)
    for (line, message) in [
        (
            "leaf=0 offset=0 length=1 total=4294967296 tree=1 (f) = D",
            "leaves 1..4294967296 are missing (the file has 4294967296 leaves)",
        ),
        (
            "leaf=0 offset=0 length=1 total=18446744073709551615 tree=1 (f) = D",
            "leaves 1..18446744073709551615 are missing",
        ),
        (
            "leaves=7 leaf=0 offset=0 length=1 total=1 tree=1 (f) = D",
            "malformed leaf line: bad field leaf= with leaves=",
        ),
        (
            "leaves=7 total=1 tree=1 (f)",
            "malformed leaf line: leaves=7, but total= and tree= make 1 leaves",
        ),
        (
            "leaf=18446744073709551615 offset=0 length=1 total=1 tree=1 (f) = D",
            "malformed leaf line: offset or length",
        ),
    ] {
        let line = format!("BLAKE2b-64 {line}").replace(" = D", &format!(" = {}", "ab".repeat(64)));
        let out = run(["--combine"], line.as_bytes());
        assert_eq!(status(&out), 1, "{line}");
        assert!(stderr(&out).contains(message), "{line}: {}", stderr(&out));
    }
}

/// A leaf range is cut at the file's end, and `--leaf-count` counts leaves
/// without hashing; neither reads a pipe. The recipe that splits a file by
/// its count works for any size, 0 included.
#[test]
fn leaf_ranges_and_counts_plan_a_split_of_any_size() {
    let dir = dir_with(&[("f", &pattern(3000))]);
    let ranged = |range| {
        let args = ["--leaves", "--leaf-range", range, "-t", "1k", "f"];
        run_in(dir.path(), args, b"")
    };
    let out = stdout(&ranged("2..99"));
    assert_eq!(out.lines().count(), 1);
    assert!(out.contains(" leaf=2 offset=2048 length=952 total=3000 "));
    // Wholly past the end, or empty: nothing to list, and no error.
    for range in ["3..", "7..9", "1..1", "0..0"] {
        assert_said(&ranged(range), "", "", 0, range);
    }
    // (Without --leaves: cli::bad_options_are_usage_errors.)
    assert_eq!(status(&ranged("2..1")), 2);
    // A pipe cannot be read at an offset, nor its leaves counted.
    for args in [&["--leaves", "--leaf-range", "0..1"][..], &["--leaf-count"]] {
        let out = run(args, b"data");
        assert_contains(&stderr(&out), "needs a regular file");
        assert_eq!(status(&out), 1, "{args:?}");
    }
    if super::emulated_too_slow("leaf_ranges_and_counts_plan_a_split_of_any_size") {
        return;
    }
    for size in [0usize, 1, 1023, 1024, 1025, 5000] {
        let dir = dir_with(&[("f", &pattern(size))]);
        let count = ok_in(dir.path(), ["--leaf-count", "-t", "1k", "f"]);
        let leaves = size.div_ceil(1024);
        assert_eq!(
            count,
            format!("BLAKE2b-64 leaves={leaves} total={size} tree=1024 (f)\n")
        );
        let whole = combined_lines(dir.path(), &["-t", "1k"], "f");
        // Ranges of two leaves from 0 to past the count, combined: the
        // file's line; and so are two parts split at leaf 3, the second
        // open-ended, whatever the size.
        let part = |range: &String| {
            #[rustfmt::skip]
            let args = ["--cpus", "1", "-t", "1k", "--leaves", "--leaf-range", range, "f"];
            let part = ok_bytes_in(dir.path(), args);
            listing(dir.path(), &range.replace('.', "_"), &part)
        };
        let pairs = (0..=leaves)
            .step_by(2)
            .map(|start| format!("{start}..{}", start + 2));
        let halves = ["0..3", "3.."].map(String::from);
        for (ranges, how) in [(pairs.collect(), "in pairs"), (halves.to_vec(), "in two")] {
            let parts: Vec<PathBuf> = ranges.iter().map(part).collect();
            let out = combine(dir.path(), &parts);
            assert_said(&out, &whole, "", 0, &format!("{size} bytes {how}"));
        }
    }
}

/// Standard input read because no FILE was given has no name: neither do its
/// leaf lines, and combining them gives its nameless line back. Its lines
/// check standard input, as `-` does in a GNU list (`bt2sum < F > S;
/// bt2sum -c S < F`); a list read from standard input cannot name it so:
/// there the line is improperly formatted. `-` keeps its name, and its
/// listing verifies against standard input.
#[test]
fn nameless_standard_input_lists_and_combines_nameless() {
    let data = pattern(3000);
    let listed = run(["--leaves", "-t", "1k"], &data);
    let text = stdout(&listed);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("BLAKE2b-64 = "), "{text}");
    assert!(
        lines[3].starts_with("BLAKE2b-64 leaf=2 offset=2048 length=952 total=3000 tree=1024 = "),
        "{text}"
    );
    let leaf_lines: String = lines[1..].iter().rev().map(|l| format!("{l}\n")).collect();
    let nameless = format!("{}\nBLAKE2b-64 leaves=3 total=3000 tree=1024\n", lines[0]);
    // Its leaf lines alone, and the whole listing, its nameless checksum
    // line included, as piped from `bt2sum --leaves`.
    for listing in [&leaf_lines, &text] {
        assert_output(&run(["--combine"], listing.as_bytes()), &nameless, "", 0);
    }
    let empty = run(["--leaves"], b"");
    assert!(stdout(&empty).ends_with("\nBLAKE2b-64 leaves=0 total=0 tree=5242880\n"));
    let combined = run(["--combine"], &empty.stdout);
    let nameless_empty = stdout(&run(Vec::<&str>::new(), b""));
    assert_eq!((stdout(&combined), status(&combined)), (nameless_empty, 0));
    let dir = tempfile::tempdir().unwrap();
    let mut damaged = data.clone();
    damaged[2000] ^= 1;
    for list in [run(Vec::<&str>::new(), &data).stdout, listed.stdout] {
        fs::write(dir.path().join("S"), &list).unwrap();
        for (input, verdict, code) in [(&data, "-: OK\n", 0), (&damaged, "-: FAILED\n", 1)] {
            let out = run_in(dir.path(), ["-c", "S"], input);
            let said = [stdout(&out), stderr(&out)].concat();
            assert!(said.starts_with(verdict) && status(&out) == code, "{said}");
        }
        let out = run(["-c"], &list);
        assert_eq!(status(&out), 1);
        assert_contains(&stderr(&out), "no properly formatted checksum lines found");
    }
    let dash = run(["--leaves", "-t", "1k", "-"], &data);
    assert_contains(&stdout(&dash), " tree=1024 (-) = ");
    // Its listing verifies against standard input.
    let list = listing(dir.path(), "list", &dash.stdout);
    assert_output(&run([Path::new("-c"), &list], &data), "-: OK\n", "", 0);
    let out = run([Path::new("-c"), Path::new("--verbose"), &list], &data);
    let every_leaf = "-: OK\n-: leaf 0: OK\n-: leaf 1: OK\n-: leaf 2: OK\n";
    assert_output(&out, every_leaf, "", 0);
}

/// Whether the tests of bounded memory can run here: not under emulation
/// ([`emulated`]), and `ulimit -v` limits the address space of what `sh`
/// runs: the shell takes the limit, and under 1 MB not even `bt2sum
/// --version` starts. Where it does not, a note
/// naming `test` says why it is skipped (macOS refuses the limit: `ulimit:
/// virtual memory: cannot modify limit: Invalid argument`). The limits the
/// tests in this file and in parts.rs set are 6 to 30 times what bt2sum
/// needs on Linux, where they were measured, so they hold on any Unix that
/// enforces them; robust.rs says where its counts are Linux's own.
#[cfg(unix)]
pub(super) fn address_space_can_be_limited(test: &str) -> bool {
    if emulated(test) {
        return false;
    }
    static LIMITED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let limited = LIMITED.get_or_init(|| {
        let here = Path::new(".");
        let set = shell(here, "ulimit -v 300000 && ulimit -v");
        if !set.status.success() || !set.stderr.is_empty() || stdout(&set).trim() != "300000" {
            return Err(format!(
                "`ulimit -v` sets no limit on address space here ({}: {})",
                set.status,
                stderr(&set).trim_end()
            ));
        }
        let starved = shell(here, r#"ulimit -v 1000; "$BT2SUM" --version"#);
        if starved.status.success() {
            return Err("`ulimit -v` is not enforced here: bt2sum starts in 1 MB".to_string());
        }
        Ok(())
    });
    if let Err(why) = limited {
        super::skip(test, why);
    }
    limited.is_ok()
}

/// Combining holds a bounded amount of memory: a line longer than 16 MiB is
/// refused without being held, and a listing of a million leaves given in
/// two halves, the second first, combines under a limit of 300 MB of address
/// space (the leaves wait in a temporary file).
#[cfg(unix)]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn combining_stays_within_bounded_memory() {
    if !address_space_can_be_limited("combining_stays_within_bounded_memory") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = shell(
        dir.path(),
        r#"ulimit -v 300000; head -c 200000000 /dev/zero | "$BT2SUM" --combine"#,
    );
    let too_long = "bt2sum: standard input: 1: line longer than 16 MiB\n";
    assert_output(&out, "", too_long, 1);
    fs::write(dir.path().join("f"), pattern(1_000_000)).unwrap();
    let script = r#"ulimit -v 300000
        "$BT2SUM" -s 64 -t 1 --leaves f > all || exit 1
        sed -n '2,500001p' all > first; sed -n '500002,$p' all > second
        "$BT2SUM" --combine second first"#;
    let out = shell(dir.path(), script);
    assert_eq!(stderr(&out), "");
    assert_eq!(stdout(&out), combined_lines(dir.path(), &["-t", "1"], "f"));
}

/// Checking a listing of millions of leaves holds a bounded part of it at
/// a time, and still finds the one damaged leaf.
#[cfg(unix)]
#[test]
fn checking_a_listing_of_millions_of_leaves_stays_within_bounded_memory() {
    let test = "checking_a_listing_of_millions_of_leaves_stays_within_bounded_memory";
    if !address_space_can_be_limited(test) {
        return;
    }
    let dir = dir_with(&[("f", &pattern(2_000_000))]);
    super::write_list(dir.path(), "all", ["-s", "1", "-t", "1", "--leaves", "f"]);
    let script = r#"ulimit -v 150000; "$BT2SUM" -c --quiet all"#;
    assert_output(&shell(dir.path(), script), "", "", 0);
    super::rot(&dir.path().join("f"), [1_777_777]);
    let out = shell(dir.path(), script);
    // (A listing checked in several passes: the file's line after them.)
    assert_eq!(stdout(&out), "f: leaf 1777777: FAILED\nf: FAILED\n");
    assert_eq!(status(&out), 1);
}

/// Listing many files of tiny leaves at once keeps their digests within a
/// bound (64 MiB in memory together, the rest in temporary files), and the
/// lines still come out in order.
#[cfg(unix)]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn listing_many_files_of_tiny_leaves_stays_within_bounded_memory() {
    let test = "listing_many_files_of_tiny_leaves_stays_within_bounded_memory";
    if !address_space_can_be_limited(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for index in 0..8 {
        fs::write(dir.path().join(format!("f{index}")), pattern(262_144)).unwrap();
    }
    let script = r#"ulimit -v 250000
        "$BT2SUM" --leaves -t 1 f0 f1 f2 f3 f4 f5 f6 f7 | awk '
          / leaf=/ { count = split($0, words, " "); print words[count - 2] }
          !/ leaf=/ { print "file" }' | uniq -c"#;
    let out = shell(dir.path(), script);
    assert_eq!(stderr(&out), "");
    let said = stdout(&out);
    let counts: Vec<&str> = said.split_whitespace().collect();
    let expected: Vec<String> = (0..8).map(|f| format!("1 file 262144 (f{f})")).collect();
    assert_eq!(counts.join(" "), expected.join(" "));
}

/// A checksum line may come from either leaf size the list gives it: the
/// leaf lines after it (`tree=`) or `-t` (the default `5m`). It fails only
/// if it fails with both, so appended and interleaved listings of different
/// leaf sizes never fail an intact file.
#[test]
fn mixed_listings_of_one_file_verify() {
    let dir = dir_with(&[("f", &pattern(3_000_000))]);
    let lines = |args: &[&str]| ok_in(dir.path(), args);
    let checksum_5m = lines(&["f"]);
    let checksum_64k = lines(&["-t", "64k", "f"]);
    let leaves_5m = lines(&["--leaves", "f"]);
    let leaves_64k = lines(&["--leaves", "-t", "64k", "f"]);
    // (A listing's first line is its checksum line; its leaf lines follow.)
    let leaf_lines = |listing: &str| listing.split_once('\n').unwrap().1.to_string();
    let (a, b): (Vec<&str>, Vec<&str>) =
        (leaves_5m.lines().collect(), leaves_64k.lines().collect());
    let interleaved = [a[0], b[1], b[2], a[1], b[0], b[3]]
        .map(|l| format!("{l}\n"))
        .concat();
    let made_5m = format!("{checksum_5m}{}", leaf_lines(&leaves_64k));
    let made_64k = format!("{checksum_64k}{}", leaf_lines(&leaves_5m));
    let cases: [(&str, &[&str], i32); 7] = [
        (&made_5m, &[], 0),
        (&format!("{leaves_5m}{leaves_64k}"), &[], 0),
        (&format!("{leaves_64k}{leaves_5m}"), &[], 0),
        (&interleaved, &[], 0),
        // Made with 64k, followed by 5m leaf lines: neither size given
        // made it, until -t says 64k.
        (&made_64k, &[], 1),
        (&made_64k, &["-t", "64k"], 0),
        // -t names a size in place of the default: the default is not tried.
        (&made_5m, &["-t", "1k"], 1),
    ];
    for (list, args, expected) in cases {
        let out = check(dir.path(), args, list.as_bytes());
        let said = [stdout(&out), stderr(&out)].concat();
        assert_eq!(status(&out), expected, "{args:?}\n{list}{said}");
    }
    // A damaged file fails with every size.
    super::rot(&dir.path().join("f"), [2_000_000]);
    let out = check(dir.path(), &[], made_5m.as_bytes());
    assert_starts(&stdout(&out), "f: FAILED\n");
    assert_eq!(status(&out), 1);
}

/// A file that got shorter or longer fails only the leaves that changed:
/// its new last leaf (whose bytes or last-node flag changed) and the listed
/// leaves past its end, which are missing; the others still verify. The
/// length change is said once, and the file counted once.
#[test]
fn a_truncated_or_extended_file_fails_only_what_changed() {
    // 58 leaves of 1 KiB, the last one 1014 bytes.
    let data = pattern(58 * 1024 - 10);
    let dir = dir_with(&[("f", &data)]);
    let listed = ok_bytes_in(dir.path(), ["--leaves", "-t", "1k", "f"]);
    // The length, the leaf that changed, the leaf gone, if one is.
    let cases = [
        // The last 100 bytes cut: leaf 57 changed.
        (data.len() - 100, 57, None, "57 of 58"),
        // Cut into leaf 56: it is the last now, and leaf 57 is gone.
        (56 * 1024 + 500, 56, Some(57), "56"),
        // Longer: leaf 57 is no longer the last.
        (data.len() + 5000, 57, None, "longer"),
    ];
    for (length, changed, gone, what) in cases {
        let mut expected = vec![
            "f: FAILED".to_string(),
            format!("f: leaf {changed}: FAILED"),
        ];
        expected.extend(gone.map(|leaf| format!("f: leaf {leaf}: FAILED missing")));
        fs::write(dir.path().join("f"), pattern(length)).unwrap();
        let out = check(dir.path(), &["--verbose"], &listed);
        let text = stdout(&out);
        let (ok, failing): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.ends_with(": OK"));
        assert_eq!(failing, expected, "{what}");
        assert_eq!(ok.len(), 58 + 1 - expected.len(), "{what}");
        let said = format!(
            "bt2sum: f: is {length} bytes long, but its leaf lines say total={}\n\
             bt2sum: WARNING: 1 computed checksum did NOT match\n",
            data.len()
        );
        assert_eq!((stderr(&out), status(&out)), (said, 1), "{what}");
    }
}

/// The warnings count files, however many lines name each: a listing of
/// 6,001 lines about one file is one file that fails to read, or one whose
/// checksum does not match.
#[test]
fn warnings_count_files_not_lines() {
    let dir = dir_with(&[("f", &pattern(6000))]);
    let listed = ok_bytes_in(dir.path(), ["--leaves", "-t", "1", "f"]);
    assert_eq!(listed.iter().filter(|&&b| b == b'\n').count(), 6001);
    super::rot(&dir.path().join("f"), [10, 2000, 5999]);
    let out = check(dir.path(), &["--quiet"], &listed);
    assert_output(
        &out,
        "f: FAILED\nf: leaf 10: FAILED\nf: leaf 2000: FAILED\nf: leaf 5999: FAILED\n",
        "bt2sum: WARNING: 1 computed checksum did NOT match\n",
        1,
    );
    fs::remove_file(dir.path().join("f")).unwrap();
    let out = check(dir.path(), &["--quiet", "--verbose"], &listed);
    assert_eq!(stdout(&out).lines().count(), 6001);
    let missing = read_error(&dir.path().join("f"), "No such file or directory");
    let unread =
        format!("bt2sum: f: {missing}\nbt2sum: WARNING: 1 listed file could not be read\n");
    let out = check(dir.path(), &["--quiet"], &listed);
    assert_output(&out, "f: FAILED open or read\n", &unread, 1);
}
