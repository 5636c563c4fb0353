//! The options users bring from GNU coreutils and b3sum, as they expect
//! them to work.

use super::{
    HELLO_B64, assert_contains, assert_ends, assert_starts, ok_in, run, run_in, status, stderr,
    stdout,
};

/// `--tag` is the default, as `b2sum --tag` prints; beside `--untagged` the
/// last one wins, as in GNU `cksum`. `-b`/`--binary` and `--text`, as
/// scripts written for sha256sum pass them, change nothing. `-a` takes the
/// algorithm's name in any case: `BLAKE2b`, as lines spell it, too. When
/// checking, these options mean nothing, and are accepted for scripts that
/// always pass them.
#[test]
fn tags_modes_and_algorithms_are_spelled_as_other_tools_spell_them() {
    let tagged = stdout(&run(Vec::<&str>::new(), b"hi"));
    assert_starts(&tagged, "BLAKE2b-64 = ");
    let untagged = stdout(&run(["--untagged", "-"], b"hi"));
    assert_ends(&untagged, "  -\n");
    let blake2s = stdout(&run(["-a", "blake2s"], b"hi"));
    for (args, expected) in [
        (&["--tag"][..], &tagged),
        (&["--untagged", "--tag"], &tagged),
        (&["--tag", "--untagged", "-"], &untagged),
        (&["--tag", "--tag"], &tagged),
        (&["-b"], &tagged),
        (&["-b", "--untagged", "-"], &untagged),
        (&["--binary", "--untagged", "-"], &untagged),
        (&["--text", "--untagged", "-"], &untagged),
        (&["--text", "-b", "--untagged", "-"], &untagged),
        (&["-a", "BLAKE2s"], &blake2s),
        (&["-a", "BLAKE2S"], &blake2s),
        (&["-a", "Blake2s"], &blake2s),
    ] {
        let out = run(args, b"hi");
        assert_eq!((&stdout(&out), status(&out)), (expected, 0), "{args:?}");
    }
    // Tagged lines are what a leaf listing prints anyway.
    let out = run(["--untagged", "--tag", "--leaves"], b"hi");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let dir = super::dir_with(&[("f", b"hello\n")]);
    std::fs::write(dir.path().join("L"), ok_in(dir.path(), ["--untagged", "f"])).unwrap();
    for option in ["-b", "--binary", "--text", "--tag", "--untagged"] {
        let checked = ok_in(dir.path(), ["-c", option, "L"]);
        assert_eq!(checked, "f: OK\n", "{option}");
    }
}

/// `-z` ends every line in NUL and writes names as they are, as GNU's
/// `--zero` does: checksum lines, leaf and count lines, and `--combine`'s
/// line. Check mode refuses it, as GNU coreutils 9.1 does.
#[cfg(unix)]
#[test]
fn zero_ends_lines_in_nul_and_leaves_names_alone() {
    let dir = super::dir_with(&[("plain", &super::pattern(3000))]);
    let odd = super::name(b"new\nline\\back");
    std::fs::write(dir.path().join(odd), b"odd").unwrap();
    let out = ok_in(dir.path(), ["plain"]);
    let zero = ok_in(dir.path(), ["-z", "plain"]);
    assert_eq!(zero, out.replace('\n', "\0"));
    let zero = ok_in(dir.path(), ["-z".as_ref(), odd]);
    let one_line = zero.ends_with('\0') && zero.matches('\0').count() == 1;
    let named = zero.starts_with("BLAKE2b-64 (new\nline\\back) = ");
    assert!(one_line && named, "{zero:?}");
    let zero = ok_in(dir.path(), ["-z".as_ref(), "--untagged".as_ref(), odd]);
    assert!(zero.ends_with("  new\nline\\back\0"), "{zero:?}");
    // Leaf listings: every line ends in NUL, the count line too.
    let listing = ok_in(dir.path(), ["-t", "1k", "--leaves", "plain"]);
    let zero = ok_in(dir.path(), ["-z", "-t", "1k", "--leaves", "plain"]);
    assert_eq!(zero, listing.replace('\n', "\0"));
    let zero = ok_in(
        dir.path(),
        "-z -t 1k --leaf-count --part 1/2 plain".split(' '),
    );
    assert!(zero.ends_with("offset=0 length=2048 (plain)\0"), "{zero:?}");
    // --combine, of a listing with newlines.
    let out = run_in(dir.path(), ["--combine", "-z"], listing.as_bytes());
    let combined = run_in(dir.path(), ["--combine"], listing.as_bytes());
    assert_eq!(stdout(&out), stdout(&combined).replace('\n', "\0"));
    assert_eq!(stdout(&out).matches('\0').count(), 2);
}

/// `--files0-from=F` takes NUL-ended names from F, or from standard input
/// with `-`, as if they were given as FILEs (with `-r`, as the directories
/// to walk); an empty name is an error that says where it is, and the other
/// names are still hashed.
#[test]
fn names_are_read_from_a_nul_separated_list() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a", "with space", "sub/b"];
    for (i, name) in names.iter().enumerate() {
        super::write_files(dir.path(), &[(name, &super::pattern(1000 * i))]);
    }
    let expected = ok_in(dir.path(), names);
    let list = names.join("\0") + "\0";
    std::fs::write(dir.path().join("L"), &list).unwrap();
    // From standard input, the last name without its NUL.
    let stdin = list.trim_end_matches('\0');
    for (args, stdin) in [
        ("--files0-from L", ""),
        ("--files0-from=L", ""),
        ("--files0-from -", stdin),
    ] {
        let (out, _, code) = super::said(&run_in(dir.path(), args.split(' '), stdin.as_bytes()));
        assert_eq!((out, code), (expected.clone(), 0), "{args}");
    }
    // An empty name, a missing file and `-` from standard input: each
    // reported, the rest hashed.
    let names = b"a\0\0missing\0-\0sub/b\0";
    let out = run_in(dir.path(), ["--files0-from", "-"], names);
    let lines: Vec<&str> = expected.lines().collect();
    assert_eq!(stdout(&out), format!("{}\n{}\n", lines[0], lines[2]));
    let errors = stderr(&out);
    assert_contains(&errors, "bt2sum: -:2: invalid zero-length file name\n");
    assert_contains(&errors, "bt2sum: missing: ");
    let dash = "when reading file names from standard input, no file name of '-' allowed";
    assert_contains(&errors, &format!("bt2sum: -:4: {dash}\n"));
    assert_eq!(status(&out), 1);
    // With -r, the directories to walk.
    std::fs::write(dir.path().join("R"), "sub\0").unwrap();
    let walked = run_in(dir.path(), ["-r", "--files0-from", "R"], b"");
    assert_eq!(stdout(&walked), format!("{}\n", lines[2]));
    // A list that cannot be read; names beside a list.
    let out = run_in(dir.path(), ["--files0-from", "absent"], b"");
    assert_eq!(status(&out), 1);
    super::assert_starts(&stderr(&out), "bt2sum: absent: ");
}

/// A hint appears only where the evidence points: a list of several lines
/// that all failed (another leaf size, or another tool), or lines whose
/// shape shows another tool, each named as it is. One failing line is
/// damage until shown otherwise: no hint.
#[test]
fn the_hint_names_every_likely_cause() {
    let dir = super::dir_with(&[("f", b"hello\n"), ("g", b"world\n")]);
    let check = |list: &str| -> Vec<String> {
        let out = run_in(dir.path(), ["-c"], list.as_bytes());
        assert_eq!(status(&out), 1, "{list}");
        (stderr(&out).lines())
            .filter(|line| line.starts_with("bt2sum: hint: "))
            .map(str::to_string)
            .collect()
    };
    let hex = |bytes: usize| "5a".repeat(bytes);
    let all_failed = super::check::leaf_size_hint("5m").trim_end().to_string();
    let b3sum_sized = |lines: &str| {
        format!(
            "bt2sum: hint: {lines} 64 hex digits, the size of a BLAKE3 or SHA-256 digest, and \
             failed: a list made by b3sum or sha256sum never matches a tree hash (one made by \
             bt2sum -a blake2s --untagged is checked with -a blake2s)"
        )
    };
    let gnu_tag = |lines: &str| {
        format!(
            "bt2sum: hint: {lines} GNU b2sum's tag (`BLAKE2b (NAME) = `, or `BLAKE2b-N` with N \
             in bits, where bt2sum's counts bytes): b2sum hashes a file as one sequential \
             BLAKE2b stream, which never matches a tree hash"
        )
    };
    let tagged = |lines: &str, tag: &str, tool: &str| {
        format!(
            "bt2sum: hint: {lines} tagged {tag}, as {tool} --tag writes them: another \
             algorithm's digests never match a tree hash"
        )
    };
    let md5 = "bt2sum: hint: 1 line holds 32 hex digits, the size of an MD5 digest, and \
               failed: a list made by md5sum never matches a tree hash";
    let (h4, h16, h32, h64, h65) = (hex(4), hex(16), hex(32), hex(64), hex(65));
    #[rustfmt::skip]
    let cases: Vec<(String, Vec<String>)> = vec![
        // A damaged file, as a download checked against its .sum file.
        (format!("{h64}  f\n"), vec![]),
        (format!("BLAKE2b-32 (f) = {h32}\n"), vec![]),
        // Nor is one file listed twice.
        (format!("{h64}  f\n{h64}  f\n"), vec![]),
        // Every line of several failing: another leaf size or tool.
        (format!("{h64}  f\n{h64}  g\n"), vec![all_failed.clone()]),
        (format!("BLAKE2b-32 (f) = {h32}\nBLAKE2b-32 (g) = {h32}\n"), vec![all_failed]),
        // b3sum's and sha256sum's untagged lines, named as both.
        (format!("{h32}  f\n"), vec![b3sum_sized("1 line holds")]),
        (format!("{h32}  f\n{h32}  g\n"), vec![b3sum_sized("2 lines hold")]),
        // GNU b2sum --tag, with no size or a size in bits, even one that is
        // also a byte count bt2sum has (-l 32).
        (format!("BLAKE2b (f) = {h64}\nBLAKE2b-256 (f) = {h32}\nBLAKE2b-32 (f) = {h4}\n"), vec![gnu_tag("3 lines have")]),
        // Sizes GNU never writes are no GNU tag.
        (format!("BLAKE2b-65 (f) = {h65}\nBLAKE2b-100 (f) = {}\n", "5".repeat(25)), vec![]),
        // Other tools' tags.
        (format!("SHA256 (f) = {h32}\n"), vec![tagged("1 line is", "SHA256", "sha256sum")]),
        (format!("BLAKE3 (f) = {h32}\nBLAKE3 (g) = {h32}\n"), vec![tagged("2 lines are", "BLAKE3", "b3sum")]),
        // md5sum's, with the article its name takes.
        (format!("{h16}  f\n"), vec![md5.to_string()]),
    ];
    assert_eq!(cases.len(), 12);
    for (list, expected) in &cases {
        assert_eq!(&check(list), expected, "{list}");
    }
    // Not with --status.
    let out = run_in(dir.path(), ["-c", "--status"], cases[5].0.as_bytes());
    assert_eq!(stderr(&out), "");
}

/// b3sum's spellings. `--no-names`: each input's digest alone, in order
/// (standard input's too), with `-z` NUL-ended, a name that lines escape
/// adding no backslash. `--raw`: the digest's bytes and nothing else.
#[test]
fn b3sums_no_names_and_raw() {
    // (A name lines escape: one holding a newline, which Windows refuses.)
    let escaped = if cfg!(windows) { "b" } else { "b\nc" };
    let dir = super::dir_with(&[("a", super::HELLO), (escaped, super::HELLO)]);
    let in_dir = |args: &[&str], stdin: &[u8]| run_in(dir.path(), args, stdin);
    let bare = in_dir(&["--no-names", "a", escaped, "-"], b"hello s3git\n");
    assert_eq!(stdout(&bare), format!("{HELLO_B64}\n").repeat(3));
    let nul = in_dir(&["--no-names", "-z", "a"], b"");
    assert_eq!(stdout(&nul), format!("{HELLO_B64}\0"));
    let raw = in_dir(&["--raw", "a"], b"");
    assert_eq!(status(&raw), 0);
    assert_eq!(raw.stdout, hex::decode(HELLO_B64).unwrap());
    let short = in_dir(&["--raw", "-s", "20"], b"hello s3git\n");
    assert_eq!(short.stdout.len(), 20);
}
