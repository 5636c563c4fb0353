//! Check mode (`bt2sum -c`) through the built binary: round trips of the lists
//! bt2sum writes, tampered, deleted and unreadable files, every check option
//! with its exact messages and exit status, and hostile lists.

use std::ffi::OsStr;
use std::fs;
use std::io::Seek;
use std::path::Path;
use std::process::Stdio;

use super::{
    HELLO, HELLO_B64, Retried, assert_output, bt2sum, dir_with, ok_bytes_in, ok_in, pattern,
    read_error, run_in, said_in, status, stderr, stdout, write_list,
};

/// Runs `bt2sum ARGS` in `dir` with stdout and stderr going to one file, as
/// `2>&1` does, to see how they interleave; returns that text and the status.
fn run_merged<I, S>(dir: &Path, args: I) -> (String, i32)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut merged = tempfile::tempfile().unwrap();
    let output = bt2sum()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(merged.try_clone().unwrap())
        .stderr(merged.try_clone().unwrap())
        .output_retried();
    merged.rewind().unwrap();
    (std::io::read_to_string(merged).unwrap(), status(&output))
}

/// A run of `bt2sum ARGS` with a list on standard input, and what it must
/// print on standard output and error, and its status.
type Case<'a> = (&'a [&'a str], &'a [u8], &'a str, &'a str, i32);

/// Runs each case in `dir`.
#[track_caller]
fn assert_cases(dir: &Path, cases: &[Case]) {
    for &(args, stdin, out, err, code) in cases {
        super::assert_said(
            &run_in(dir, args, stdin),
            out,
            err,
            code,
            &format!("{args:?}"),
        );
    }
}

fn abc_dir() -> tempfile::TempDir {
    dir_with(&[("a", b"alpha\n"), ("b", b""), ("c d", &pattern(70_000))])
}

/// What check mode says of a list on standard input without a checksum line.
const NO_LINE_ON_STDIN: &str =
    "bt2sum: standard input: no properly formatted checksum lines found\n";

/// One failed checksum's summary.
const ONE_FAILED: &str = "bt2sum: WARNING: 1 computed checksum did NOT match\n";

/// The hint check mode prints once when every checksum line of a list of
/// several that it checked with `-t`'s leaf size failed.
pub(super) fn leaf_size_hint(size: &str) -> String {
    format!(
        "bt2sum: hint: every checksum line failed: checksum lines do not record their leaf \
         size, these were checked with -t {size}, and a list made with another size needs it \
         given with -t; a list made by b2sum (which hashes a file as one sequential BLAKE2 \
         stream) or by another algorithm never matches a tree hash\n"
    )
}

/// A list read from a file, from standard input and as `-`; and `-` in a
/// list, which names standard input.
#[test]
fn round_trip_from_a_file_stdin_and_dash() {
    let dir = abc_dir();
    let list = write_list(dir.path(), "SUMS", ["a", "b", "c d"]);
    let all_ok = "a: OK\nb: OK\nc d: OK\n";
    // A list given twice is checked twice.
    let twice = all_ok.repeat(2);
    let dash = format!("BLAKE2b-64 (-) = {HELLO_B64}\n{}", ok_in(dir.path(), ["a"]));
    fs::write(dir.path().join("DASH"), &dash).unwrap();
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "SUMS"], b"", all_ok, "", 0),
        (&["--check", "-"], &list, all_ok, "", 0),
        (&["-c"], &list, all_ok, "", 0),
        (&["-c", "SUMS", "-"], &list, &twice, "", 0),
        (&["-c", "DASH"], HELLO, "-: OK\na: OK\n", "", 0),
        (&["-c", "DASH"], b"other", "-: FAILED\na: OK\n", ONE_FAILED, 1),
    ]);
}

#[test]
fn round_trip_both_algorithms_odd_sizes_tagged_and_untagged() {
    let dir = abc_dir();
    for algorithm in ["blake2b", "blake2s"] {
        for size in ["1", "7", "31", "0"] {
            let made = ["-a", algorithm, "-s", size, "a", "b", "c d"];
            let tagged = ok_bytes_in(dir.path(), made);
            let untagged = ok_bytes_in(dir.path(), [&["--untagged"][..], &made].concat());
            let all_ok = "a: OK\nb: OK\nc d: OK\n";
            // The tag decides the algorithm, whatever -a says.
            #[rustfmt::skip]
            assert_cases(dir.path(), &[
                (&["-c", "-a", "blake2b"], &tagged, all_ok, "", 0),
                (&["-c", "-a", "blake2s"], &tagged, all_ok, "", 0),
                (&["-c", "-a", algorithm], &untagged, all_ok, "", 0),
            ]);
        }
    }
    // A GNU-style line takes its algorithm from -a: a BLAKE2s digest read as
    // BLAKE2b of the same size does not match, and the hint says why. And a
    // 64-byte GNU-style digest is not a BLAKE2s size.
    let untagged_s = ok_bytes_in(dir.path(), ["--untagged", "-a", "blake2s", "a"]);
    let untagged_b = ok_bytes_in(dir.path(), ["--untagged", "a"]);
    let hint = "bt2sum: hint: 1 line holds 64 hex digits, the size of a BLAKE3 or SHA-256 digest, \
                and failed: a list made by b3sum or sha256sum never matches a tree hash (one \
                made by bt2sum -a blake2s --untagged is checked with -a blake2s)\n";
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c"], &untagged_s, "a: FAILED\n", &format!("{ONE_FAILED}{hint}"), 1),
        (&["-c", "-a", "blake2s"], &untagged_b, "", NO_LINE_ON_STDIN, 1),
    ]);
}

#[test]
fn crlf_uppercase_binary_marker_comments_and_blank_lines() {
    let dir = abc_dir();
    let tagged = ok_in(dir.path(), ["a", "b"]);
    let untagged = ok_in(dir.path(), ["--untagged", "c d"]);
    let crlf = tagged.replace('\n', "\r\n");
    let upper = upper_case(&tagged);
    let binary_marker = untagged.replacen("  ", " *", 1);
    let list = format!("# made by bt2sum\n\n{crlf}\r\n{upper}#\n{binary_marker}");
    let out = run_in(dir.path(), ["-c", "--strict"], list.as_bytes());
    assert_output(&out, "a: OK\nb: OK\na: OK\nb: OK\nc d: OK\n", "", 0);
    // Mixed case is not hex as bt2sum or GNU write it.
    let mixed = mixed_case(tagged.lines().next().unwrap()) + "\n";
    let out = run_in(dir.path(), ["-c"], mixed.as_bytes());
    assert_output(&out, "", NO_LINE_ON_STDIN, 1);
    // Leaf lines read in upper case as checksum lines do, and one case a
    // digest: a leaf line's in mixed case is improperly formatted.
    let upper = upper_case(&ok_in(dir.path(), ["-t", "4096", "--leaves", "c d"]));
    let out = run_in(dir.path(), ["-c", "--strict"], upper.as_bytes());
    assert_output(&out, "c d: OK\n", "", 0);
    let leaf_1 = upper.lines().find(|line| line.contains("leaf=1 ")).unwrap();
    let mixed = upper.replace(leaf_1, &mixed_case(leaf_1));
    let out = run_in(dir.path(), ["-c", "--strict"], mixed.as_bytes());
    assert_eq!(status(&out), 1);
}

/// `list` with every digest (after ` = `) in upper case.
fn upper_case(list: &str) -> String {
    let upper = |line: &str| match line.rsplit_once(" = ") {
        Some((head, hex)) => format!("{head} = {}\n", hex.to_uppercase()),
        None => format!("{line}\n"),
    };
    list.lines().map(upper).collect()
}

/// `line` with its digest in upper case but for its first letter: mixed
/// case, which no tool writes.
fn mixed_case(line: &str) -> String {
    let (head, hex) = line.rsplit_once(" = ").unwrap();
    let mut hex = hex.to_uppercase();
    let letter = hex.find(|c: char| c.is_ascii_uppercase()).unwrap();
    hex.replace_range(letter..=letter, &hex[letter..=letter].to_lowercase());
    format!("{head} = {hex}")
}

#[test]
fn a_flipped_bit_in_a_big_file_fails() {
    let dir = dir_with(&[("big", &pattern(6 << 20)), ("small", b"x")]);
    let list = ok_bytes_in(dir.path(), ["small", "big"]);
    let out = run_in(dir.path(), ["-c"], &list);
    assert_output(&out, "small: OK\nbig: OK\n", "", 0);
    super::rot(&dir.path().join("big"), [(5 << 20) + 12345]);
    // --quiet keeps the failure, drops the OK.
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c"], &list, "small: OK\nbig: FAILED\n", ONE_FAILED, 1),
        (&["-c", "--quiet"], &list, "big: FAILED\n", ONE_FAILED, 1),
        (&["-c", "--status"], &list, "", "", 1),
    ]);
}

#[test]
fn a_deleted_file_cannot_be_read() {
    let dir = abc_dir();
    write_list(dir.path(), "SUMS", ["a", "b", "c d"]);
    fs::remove_file(dir.path().join("b")).unwrap();
    fs::remove_file(dir.path().join("c d")).unwrap();
    fs::write(dir.path().join("a"), b"changed").unwrap();
    let missing = read_error(&dir.path().join("b"), "No such file or directory");
    let (merged, code) = run_merged(dir.path(), ["-c", "SUMS"]);
    assert_eq!(
        merged,
        format!(
            "a: FAILED\n\
             bt2sum: b: {missing}\n\
             b: FAILED open or read\n\
             bt2sum: c d: {missing}\n\
             c d: FAILED open or read\n\
             bt2sum: WARNING: 2 listed files could not be read\n\
             bt2sum: WARNING: 1 computed checksum did NOT match\n"
        ),
        "one checksum line failed: damage, with no hint"
    );
    assert_eq!(code, 1);
    // --status: nothing on stdout and no summary, but the reasons stay (GNU);
    // with --json, no object either, an error's too.
    let reasons = format!("bt2sum: b: {missing}\nbt2sum: c d: {missing}\n");
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "--status", "SUMS"], b"", "", &reasons, 1),
        (&["-c", "--json", "--status", "SUMS"], b"", "", &reasons, 1),
    ]);
}

#[test]
fn leaf_size_comes_from_dash_t() {
    let dir = dir_with(&[("f", &pattern(200_000))]);
    let list = ok_bytes_in(dir.path(), ["-t", "64k", "f"]);
    fs::write(dir.path().join("f2"), pattern(100_000)).unwrap();
    let two = ok_bytes_in(dir.path(), ["-t", "64k", "f", "f2"]);
    let default_list = ok_bytes_in(dir.path(), ["f", "f2"]);
    let two_failed = |size| {
        format!(
            "bt2sum: WARNING: 2 computed checksums did NOT match\n{}",
            leaf_size_hint(size)
        )
    };
    let both_failed = "f: FAILED\nf2: FAILED\n";
    fs::write(dir.path().join("g"), b"g").unwrap();
    let mut mixed = ok_bytes_in(dir.path(), ["-t", "64k", "f", "g"]);
    fs::write(dir.path().join("g"), b"changed").unwrap();
    mixed.extend_from_slice(&ok_bytes_in(dir.path(), ["-t", "64k", "g"]));
    // One file failing is damage until shown otherwise: no hint. Every file
    // of several failing with the leaf size given: the hint names it.
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "-t", "64k"], &list, "f: OK\n", "", 0),
        (&["-c", "-t=65536"], &list, "f: OK\n", "", 0),
        (&["-c"], &list, "f: FAILED\n", ONE_FAILED, 1),
        (&["-c"], &two, both_failed, &two_failed("5m"), 1),
        (&["-c", "--status"], &two, "", "", 1),
        (&["-c", "-t", "5m"], &default_list, "f: OK\nf2: OK\n", "", 0),
        (&["-c", "-t", "64k"], &default_list, both_failed, &two_failed("64k"), 1),
        // A file that matches shows the leaf size is right: no hint.
        (&["-c", "-t", "64k"], &mixed, "f: OK\ng: FAILED\ng: OK\n", ONE_FAILED, 1),
    ]);
}

#[test]
fn improperly_formatted_lines_warn_strict_and_counts() {
    let dir = abc_dir();
    let good = ok_in(dir.path(), ["a", "b"]);
    let mut lines = good.lines();
    let (line_a, line_b) = (lines.next().unwrap(), lines.next().unwrap());
    let list = format!(
        "{line_a}\n BLAKE2b-64 (a) = 00\nBLAKE2q-1 (a) = 00\n\n# note\n{line_b}\nBLAKE2b-64 () = {HELLO_B64}\n"
    );
    fs::write(dir.path().join("SUMS"), &list).unwrap();
    let counts = "bt2sum: WARNING: 3 lines are improperly formatted\n";
    let on_stdin: String = [2, 3, 7]
        .map(|line| {
            format!("bt2sum: standard input: {line}: improperly formatted BLAKE2 checksum line\n")
        })
        .concat();
    let warned = on_stdin + counts;
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "SUMS"], b"", "a: OK\nb: OK\n", counts, 0),
        (&["-c", "--strict", "SUMS"], b"", "a: OK\nb: OK\n", counts, 1),
        (&["-c", "--strict", "--status", "SUMS"], b"", "", "", 1),
        (&["-c", "--status", "SUMS"], b"", "", "", 0),
        (&["-c", "--warn", "--strict"], list.as_bytes(), "a: OK\nb: OK\n", &warned, 1),
    ]);
    // -w names each bad line by number, in list order among the verdicts.
    let (merged, code) = run_merged(dir.path(), ["-c", "-w", "SUMS"]);
    assert_eq!(
        merged,
        "a: OK\n\
         bt2sum: SUMS: 2: improperly formatted BLAKE2 checksum line\n\
         bt2sum: SUMS: 3: improperly formatted BLAKE2 checksum line\n\
         b: OK\n\
         bt2sum: SUMS: 7: improperly formatted BLAKE2 checksum line\n\
         bt2sum: WARNING: 3 lines are improperly formatted\n"
    );
    assert_eq!(code, 0);
    // Standard input's nameless line, in a list read from standard input,
    // names nothing that can be read; a hint says so.
    let nameless = format!("{line_a}\nBLAKE2b-64 = {HELLO_B64}\n");
    let one_bad = format!("{line_a}\nnonsense\n");
    let one_improper = "bt2sum: WARNING: 1 line is improperly formatted\n";
    // A line over the 16 MiB line limit is improperly formatted, and the
    // next is read; a comment as long is skipped as any comment (`-w` names
    // it not). The line is shaped like a valid GNU-style line.
    let overlong = format!("{HELLO_B64}  {}\n", "x".repeat(17 << 20));
    let comment = format!("# {}\n", "x".repeat(17 << 20));
    let overlong = format!("{overlong}{comment}{line_a}\n");
    let overlong_named = format!(
        "bt2sum: standard input: 1: improperly formatted BLAKE2 checksum line\n{one_improper}"
    );
    let hint = format!(
        "{one_improper}bt2sum: hint: 1 line checks standard input (named `-`, or nameless as \
         `bt2sum < FILE` prints it): a list read from standard input cannot check standard \
         input too; give the list as a file (bt2sum -c LIST < FILE)\n"
    );
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c"], nameless.as_bytes(), "a: OK\n", &hint, 0),
        (&["-c"], one_bad.as_bytes(), "a: OK\n", one_improper, 0),
        (&["-c", "-w"], overlong.as_bytes(), "a: OK\n", &overlong_named, 0),
    ]);
}

#[test]
fn quiet_status_and_warn_take_the_last_one_given() {
    let dir = abc_dir();
    let list = ok_in(dir.path(), ["a"]) + "junk\n";
    let warned = "bt2sum: standard input: 2: improperly formatted BLAKE2 checksum line\n\
                  bt2sum: WARNING: 1 line is improperly formatted\n";
    let counted = "bt2sum: WARNING: 1 line is improperly formatted\n";
    let list = list.as_bytes();
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "--status", "--quiet"], list, "", counted, 0),
        (&["-c", "--quiet", "--status"], list, "", "", 0),
        (&["-c", "-w", "--status"], list, "", "", 0),
        (&["-c", "--status", "-w"], list, "a: OK\n", warned, 0),
        (&["-c", "--quiet", "-w"], list, "a: OK\n", warned, 0),
        (&["-c", "-w", "--quiet"], list, "", counted, 0),
        (&["-c", "--status", "--status"], list, "", "", 0),
    ]);
}

#[test]
fn ignore_missing() {
    let dir = abc_dir();
    let list = write_list(dir.path(), "SUMS", ["a", "b", "c d"]);
    fs::remove_file(dir.path().join("b")).unwrap();
    // (That a missing file is skipped: gnu::coreutils_check_cases_pass_for_bt2sum.)
    let missing = read_error(&dir.path().join("b"), "No such file or directory");
    // Only missing files are skipped: a directory still cannot be read.
    fs::create_dir(dir.path().join("b")).unwrap();
    let directory = read_error(&dir.path().join("b"), "Is a directory");
    let unreadable =
        format!("bt2sum: b: {directory}\nbt2sum: WARNING: 1 listed file could not be read\n");
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "--ignore-missing"], &list, "a: OK\nb: FAILED open or read\nc d: OK\n", &unreadable, 1),
    ]);
    fs::remove_dir(dir.path().join("b")).unwrap();
    // A list whose files are all missing verifies nothing.
    fs::remove_file(dir.path().join("a")).unwrap();
    fs::remove_file(dir.path().join("c d")).unwrap();
    // As GNU: the counts come first, and --status silences the line.
    let with_junk = [&list[..], b"junk\n"].concat();
    let none = "bt2sum: SUMS: no file was verified\n";
    let junk = "bt2sum: WARNING: 1 line is improperly formatted\n\
                bt2sum: standard input: no file was verified\n";
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "--ignore-missing", "SUMS"], b"", "", none, 1),
        (&["-c", "--ignore-missing"], &with_junk, "", junk, 1),
        (&["-c", "--ignore-missing", "--status"], &with_junk, "", "", 1),
    ]);
    // As GNU, a mismatch is not a verified file either. Without
    // --ignore-missing the same list reports the missing files.
    fs::write(dir.path().join("a"), b"changed").unwrap();
    let unread = format!(
        "bt2sum: b: {missing}\nbt2sum: c d: {missing}\n\
         bt2sum: WARNING: 2 listed files could not be read\n{ONE_FAILED}"
    );
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "--ignore-missing", "SUMS"], b"", "a: FAILED\n", &format!("{ONE_FAILED}{none}"), 1),
        (&["-c", "--quiet", "SUMS"], b"", "a: FAILED\nb: FAILED open or read\nc d: FAILED open or read\n", &unread, 1),
    ]);
}

#[test]
fn lists_without_a_valid_line() {
    let dir = dir_with(&[("a", b"alpha\n")]);
    let garbage = super::noise(200_000, 12345);
    fs::write(dir.path().join("garbage"), &garbage).unwrap();
    fs::write(dir.path().join("empty"), b"").unwrap();
    fs::write(dir.path().join("comments"), b"# only\n\n\r\n#\n").unwrap();
    fs::write(dir.path().join("nuls"), [0u8; 1000]).unwrap();
    for list in ["garbage", "empty", "comments", "nuls"] {
        let none = format!("bt2sum: {list}: no properly formatted checksum lines found\n");
        // GNU prints it even with --status.
        #[rustfmt::skip]
        assert_cases(dir.path(), &[
            (&["-c", list], b"", "", &none, 1),
            (&["-c", "--status", list], b"", "", &none, 1),
        ]);
    }
    // GNU b2sum's tagged lines (sequential BLAKE2b, not a tree hash) are no
    // lines of bt2sum's, and the hint says why. (Its untagged lines fail as
    // any other tool's: habits::the_hint_names_every_likely_cause.)
    let sequential = blake2b_simd::blake2b(b"alpha\n").to_hex();
    let sequential_256 = blake2b_simd::Params::new().hash_length(32).hash(b"alpha\n");
    let sequential_256 = sequential_256.to_hex();
    let tagged = format!("BLAKE2b (a) = {sequential}\nBLAKE2b-256 (a) = {sequential_256}\n");
    let hint = "bt2sum: hint: 2 lines have GNU b2sum's tag (`BLAKE2b (NAME) = `, or `BLAKE2b-N` \
                with N in bits, where bt2sum's counts bytes): b2sum hashes a file as one \
                sequential BLAKE2b stream, which never matches a tree hash\n";
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c"], &garbage, "", NO_LINE_ON_STDIN, 1),
        (&["-c"], tagged.as_bytes(), "", &format!("{NO_LINE_ON_STDIN}{hint}"), 1),
    ]);
    // -w names every line of the garbage, and never panics.
    let out = run_in(dir.path(), ["-c", "-w", "garbage"], b"");
    let lines = garbage.split(|&b| b == b'\n').count() - usize::from(garbage.ends_with(b"\n"));
    let warned = stderr(&out)
        .lines()
        .filter(|line| line.ends_with(": improperly formatted BLAKE2 checksum line"))
        .count();
    assert_eq!(status(&out), 1);
    assert!(warned > 100 && warned <= lines, "{warned} of {lines}");
}

#[test]
fn several_lists_each_get_a_summary_and_a_missing_list_is_an_error() {
    let dir = abc_dir();
    let list = ok_bytes_in(dir.path(), ["a", "b"]);
    fs::write(dir.path().join("one"), [&list[..], b"junk\n"].concat()).unwrap();
    fs::write(dir.path().join("a"), b"changed").unwrap();
    let list2 = ok_bytes_in(dir.path(), ["c d"]);
    fs::write(dir.path().join("two"), [&list2[..], &list[..]].concat()).unwrap();
    fs::create_dir(dir.path().join("dir")).unwrap();
    fs::write(dir.path().join("empty"), b"").unwrap();
    let missing = read_error(&dir.path().join("nolist"), "No such file or directory");
    let directory = read_error(&dir.path().join("dir"), "Is a directory");
    let lists = ["-c", "one", "nolist", "dir", "empty", "two"];
    let (merged, code) = run_merged(dir.path(), lists);
    assert_eq!(
        merged,
        format!(
            "a: FAILED\n\
             b: OK\n\
             bt2sum: WARNING: 1 line is improperly formatted\n\
             bt2sum: WARNING: 1 computed checksum did NOT match\n\
             bt2sum: nolist: {missing}\n\
             bt2sum: dir: {directory}\n\
             bt2sum: empty: no properly formatted checksum lines found\n\
             c d: OK\n\
             a: FAILED\n\
             b: OK\n\
             bt2sum: WARNING: 1 computed checksum did NOT match\n"
        )
    );
    assert_eq!(code, 1);
    // A missing list fails the run even when the others pass, and --status
    // keeps its message.
    let no_list = format!("bt2sum: nolist: {missing}\n");
    let (merged, code) = run_merged(dir.path(), ["-c", "nolist", "one", "--ignore-missing"]);
    assert!(merged.starts_with(&no_list) && code == 1, "{merged}");
    fs::write(dir.path().join("three"), &list2).unwrap();
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "--status", "nolist"], b"", "", &no_list, 1),
        (&["-c", "three", "nolist"], b"", "c d: OK\n", &no_list, 1),
        (&["-c", "three", "three"], b"", "c d: OK\nc d: OK\n", "", 0),
    ]);
}

/// Names are kept as bytes, and a line whose name holds `\n`, `\r` or `\`
/// has them escaped and starts with `\`, GNU style; the lists read back.
/// Verdicts and messages show control bytes escaped. (Unix: Windows names
/// cannot hold `\n`, `\r`, control bytes, `:` or bytes that are not UTF-8,
/// and `\` separates there.)
#[cfg(unix)]
#[test]
fn names_are_escaped_the_gnu_way_and_kept_as_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    // Each name, and as lines and verdicts show it. (Only the names the file
    // system here holds: macOS's refuses bytes that are not UTF-8.)
    let names: Vec<(&[u8], &[u8])> = [
        (&b"new\nline"[..], &b"\\new\\nline"[..]),
        (b"back\\slash", b"\\back\\\\slash"),
        (b"car\rriage", b"\\car\\rriage"),
        (b"x) = (y", b"x) = (y"),
        (b"\xff\xfe latin", b"\xff\xfe latin"),
    ]
    .into_iter()
    .filter(|&(name, _)| {
        let test = "names_are_escaped_the_gnu_way_and_kept_as_bytes";
        super::ux::write_named(dir.path(), name, HELLO, test)
    })
    .collect();
    assert!(
        names.len() >= 4,
        "names of ASCII bytes are taken everywhere"
    );
    let (mut lines, mut verdicts) = (Vec::new(), Vec::new());
    for (_, shown) in &names {
        let (escape, name) = match shown.strip_prefix(b"\\") {
            Some(name) => (&b"\\"[..], name),
            None => (&b""[..], *shown),
        };
        let tail = format!(") = {HELLO_B64}\n");
        lines.extend([escape, b"BLAKE2b-64 (", name, tail.as_bytes()].concat());
        verdicts.extend([shown, &b": OK\n"[..]].concat());
    }
    let args = names.iter().map(|(name, _)| OsStr::from_bytes(name));
    let tagged = ok_bytes_in(dir.path(), args.clone());
    assert_eq!(tagged, lines);
    let untagged_args = [OsStr::new("--untagged")].into_iter().chain(args);
    let untagged = ok_bytes_in(dir.path(), untagged_args);
    let first = format!("\\{HELLO_B64}  new\\nline\n");
    assert!(untagged.starts_with(first.as_bytes()));
    for list in [tagged, untagged] {
        let out = run_in(dir.path(), ["-c"], &list);
        assert_eq!(
            (&out.stdout, stderr(&out).as_str(), status(&out)),
            (&verdicts, "", 0)
        );
    }
    // A name crafted to act on a terminal (here: `: OK` and the escape that
    // hides what follows) is shown with its control bytes escaped in
    // verdicts and messages, while its checksum line keeps the byte, GNU
    // style, so the list still reads back.
    let name: &[u8] = b"evil.iso: OK\x1b[8m";
    let path = dir.path().join(OsStr::from_bytes(name));
    fs::write(&path, b"image").unwrap();
    let list = ok_bytes_in(dir.path(), [OsStr::from_bytes(name)]);
    assert!(list.starts_with(b"BLAKE2b-64 (evil.iso: OK\x1b[8m) = "));
    let shown = "\\evil.iso: OK\\x1b[8m";
    let out = run_in(dir.path(), ["-c"], &list);
    assert_output(&out, &format!("{shown}: OK\n"), "", 0);
    fs::write(&path, b"changed").unwrap();
    let out = run_in(dir.path(), ["-c"], &list);
    assert_eq!(stdout(&out), format!("{shown}: FAILED\n"));
    fs::remove_file(&path).unwrap();
    let out = run_in(dir.path(), ["-c"], &list);
    assert_eq!(stdout(&out), format!("{shown}: FAILED open or read\n"));
    let missing = format!("bt2sum: {shown}: No such file or directory\n");
    super::assert_starts(&stderr(&out), &missing);
}

/// A name that cannot be read is shown, escaped where it must be, in its
/// verdict and its message: one holding a newline, and one of 3 MB, too long
/// for the system; and, hashed, one holding control bytes.
#[test]
fn unreadable_names_are_shown_escaped_on_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let long = "n".repeat(3_000_000);
    let errors = [
        ("gone\nfile", "No such file or directory"),
        (long.as_str(), "File name too long"),
    ]
    .map(|(name, on_unix)| read_error(&dir.path().join(name), on_unix));
    let long_line = format!("BLAKE2b-64 ({long}) = {HELLO_B64}\n");
    let lists = ["\\BLAKE2b-1 (gone\\nfile) = 00\n", &long_line];
    for ((list, shown), error) in lists.iter().zip(["\\gone\\nfile", &long]).zip(errors) {
        assert_output(
            &run_in(dir.path(), ["-c"], list.as_bytes()),
            &format!("{shown}: FAILED open or read\n"),
            &format!(
                "bt2sum: {shown}: {error}\nbt2sum: WARNING: 1 listed file could not be read\n"
            ),
            1,
        );
    }
    let missing = read_error(
        &dir.path().join("tab\there\x07"),
        "No such file or directory",
    );
    let said = format!("bt2sum: \\tab\\x09here\\x07: {missing}\n");
    assert_cases(dir.path(), &[(&["tab\there\x07"], b"", "", &said, 1)]);
}

#[test]
fn many_files_are_reported_in_list_order() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..700).map(|i| format!("f{i:03}")).collect();
    for (i, name) in names.iter().enumerate() {
        fs::write(dir.path().join(name), pattern(i * 37)).unwrap();
    }
    let list = ok_bytes_in(dir.path(), &names);
    let mut expected = String::new();
    let (mut failed, mut missing) = (0, 0);
    for (i, name) in names.iter().enumerate() {
        if i % 101 == 7 {
            fs::remove_file(dir.path().join(name)).unwrap();
            expected += &format!("{name}: FAILED open or read\n");
            missing += 1;
        } else if i % 97 == 5 {
            fs::write(dir.path().join(name), b"tampered").unwrap();
            expected += &format!("{name}: FAILED\n");
            failed += 1;
        } else {
            expected += &format!("{name}: OK\n");
        }
    }
    for cpus in ["1", "4"] {
        let out = run_in(dir.path(), ["-c", "--cpus", cpus], &list);
        assert_eq!(stdout(&out), expected, "--cpus {cpus}");
        assert!(stderr(&out).ends_with(&format!(
            "bt2sum: WARNING: {missing} listed files could not be read\n\
             bt2sum: WARNING: {failed} computed checksums did NOT match\n"
        )));
        assert_eq!(status(&out), 1);
    }
}

#[test]
fn a_file_listed_without_a_digest_verifies_nothing_and_says_so() {
    let dir = dir_with(&[("f", b"hello\n"), ("g", b"world\n")]);
    let counts = write_list(dir.path(), "COUNTS", ["--leaf-count", "f"]);
    // Damaged, of the same length: a count line cannot tell.
    fs::write(dir.path().join("f"), b"HELLO\n").unwrap();
    let note = "bt2sum: WARNING: 1 listed file has no digest in the list: only its length was \
                checked\n";
    // Beside a file that is verified, it is only said.
    let mut mixed = counts.clone();
    mixed.extend(ok_bytes_in(dir.path(), ["g"]));
    fs::write(dir.path().join("MIXED"), mixed).unwrap();
    let none = format!("{note}bt2sum: COUNTS: no file was verified\n");
    #[rustfmt::skip]
    assert_cases(dir.path(), &[
        (&["-c", "COUNTS"], b"", "", &none, 1),
        (&["-c", "MIXED"], b"", "g: OK\n", note, 0),
    ]);
    // A length that changed is a failure.
    fs::write(dir.path().join("f"), b"hello!\n").unwrap();
    let (out, _, code) = said_in(dir.path(), ["-c", "COUNTS"]);
    assert_eq!(
        (out.as_str(), code),
        ("f: FAILED\nf: leaf count: FAILED\n", 1)
    );
}
