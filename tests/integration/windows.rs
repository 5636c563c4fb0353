//! What bt2sum does on Windows that it does nowhere else (see
//! `bt2sum::format::name::Name`): names are printed as UTF-8 with every `\` written
//! `/`, so that lists made on Windows verify on Unix and the reverse; in a
//! list, a name holding `\` or not UTF-8 is an improperly formatted line;
//! lines end in `\n`; standard input is read as the bytes it is.

use std::ffi::OsString;
use std::fs;
use std::os::windows::ffi::OsStringExt;
use std::process::Stdio;

use bt2sum::{TreeParams, hash};

use super::{
    HELLO, HELLO_B64, Retried, assert_output, bt2sum, pattern, read_error, run, run_in, status,
    stderr, stdout,
};

#[test]
fn backslashes_in_names_are_printed_as_slashes_in_lines_and_messages() {
    let dir = super::dir_with(&[("sub/file", HELLO)]);
    let out = run_in(dir.path(), [r"sub\file", "sub/file"], b"");
    let line = format!("BLAKE2b-64 (sub/file) = {HELLO_B64}\n");
    assert_output(&out, &line.repeat(2), "", 0);
    let out = run_in(dir.path(), ["--untagged", r"sub\file"], b"");
    assert_eq!(stdout(&out), format!("{HELLO_B64}  sub/file\n"));
    // (Leaf lines: lines_end_in_newline_alone.)
    let missing = read_error(
        &dir.path().join("sub").join("missing"),
        "No such file or directory",
    );
    let out = run_in(dir.path(), [r"sub\missing", r"sub\file"], b"");
    assert_output(&out, &line, &format!("bt2sum: sub/missing: {missing}\n"), 1);
    // An absolute path too, drive and all.
    let path = dir.path().join("sub").join("file");
    let absolute = path.to_str().unwrap();
    assert!(absolute.contains('\\'), "{absolute}");
    let line = format!(
        "BLAKE2b-64 ({}) = {HELLO_B64}\n",
        absolute.replace('\\', "/")
    );
    assert_eq!(stdout(&run([absolute], b"")), line);
}

#[test]
fn recursive_prints_slash_separated_paths() {
    let dir = super::dir_with(&[("sub/file", HELLO)]);
    fs::create_dir_all(dir.path().join(r"sub\deeper\deepest")).unwrap();
    fs::write(dir.path().join(r"sub\deeper\deepest\leaf"), b"leaf").unwrap();
    fs::write(dir.path().join("top"), b"top").unwrap();
    let names = |out: &std::process::Output| -> Vec<String> {
        stdout(out)
            .lines()
            .map(|line| line.split_once("  ").unwrap().1.to_string())
            .collect()
    };
    let all = &["./sub/deeper/deepest/leaf", "./sub/file", "./top"][..];
    for (arguments, expected) in [
        (&["-r"][..], all),
        (&["-r", "."], all),
        (&["-r", r".\"], all),
        (&["-r", "sub"], &["sub/deeper/deepest/leaf", "sub/file"]),
        (&["-r", r"sub\"], &["sub/deeper/deepest/leaf", "sub/file"]),
        (&["-r", "sub/"], &["sub/deeper/deepest/leaf", "sub/file"]),
        (&["-r", r"sub\deeper"], &["sub/deeper/deepest/leaf"]),
    ] {
        let out = run_in(dir.path(), ["--untagged"].iter().chain(arguments), b"");
        let (err, code) = (stderr(&out), status(&out));
        assert_eq!((err.as_str(), code), ("", 0), "{arguments:?}");
        assert_eq!(names(&out), expected, "{arguments:?}");
    }
    // The list verifies.
    let list = run_in(dir.path(), ["-r", r"sub\"], b"");
    let out = run_in(dir.path(), ["-c"], &list.stdout);
    assert_output(&out, "sub/deeper/deepest/leaf: OK\nsub/file: OK\n", "", 0);
}

/// A list as bt2sum writes it on Unix, names separated by `/`, verifies on
/// Windows; a line whose name holds `\` (on Unix, part of a file name; on
/// Windows no printed name holds one) or is not UTF-8 is improperly
/// formatted.
#[test]
fn lists_name_files_with_slashes_and_backslashes_are_refused() {
    let dir = super::dir_with(&[("sub/file", HELLO)]);
    let slash = format!("BLAKE2b-64 (sub/file) = {HELLO_B64}\n");
    let untagged = format!("{HELLO_B64}  sub/file\n");
    let out = run_in(dir.path(), ["-c"], format!("{slash}{untagged}").as_bytes());
    assert_output(&out, "sub/file: OK\nsub/file: OK\n", "", 0);

    // `sub\file`, written escaped as bt2sum and GNU write a name with a
    // backslash, tagged and untagged; and a name that is not UTF-8.
    let backslash = format!("\\BLAKE2b-64 (sub\\\\file) = {HELLO_B64}\n");
    let backslash_untagged = format!("\\{HELLO_B64}  sub\\\\file\n");
    let not_utf8 = [
        &b"BLAKE2b-64 (sub/\xff) = "[..],
        HELLO_B64.as_bytes(),
        b"\n",
    ]
    .concat();
    let list = [
        slash.as_bytes(),
        backslash.as_bytes(),
        backslash_untagged.as_bytes(),
        &not_utf8,
    ];
    let list = list.concat();
    let out = run_in(dir.path(), ["-c", "-w"], &list);
    assert_output(
        &out,
        "sub/file: OK\n",
        "bt2sum: standard input: 2: improperly formatted BLAKE2 checksum line\n\
         bt2sum: standard input: 3: improperly formatted BLAKE2 checksum line\n\
         bt2sum: standard input: 4: improperly formatted BLAKE2 checksum line\n\
         bt2sum: WARNING: 3 lines are improperly formatted\n",
        0,
    );
    let out = run_in(dir.path(), ["-c", "--strict"], &list);
    assert_eq!(status(&out), 1);
    // Only such lines: nothing to check.
    let out = run_in(dir.path(), ["-c"], backslash.as_bytes());
    let none = "bt2sum: standard input: no properly formatted checksum lines found\n";
    assert_output(&out, "", none, 1);
    // Leaf lines the same.
    let leaves = run_in(dir.path(), ["--leaves", "-t", "4", r"sub\file"], b"");
    let text = stdout(&leaves);
    let out = run_in(dir.path(), ["-c"], text.as_bytes());
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    // One line for the file, its leaves and checksum all verified.
    assert_eq!(stdout(&out), "sub/file: OK\n");
    let escaped = text
        .lines()
        .map(|line| format!("\\{}\n", line.replace("sub/file", r"sub\\file")))
        .collect::<String>();
    let out = run_in(dir.path(), ["-c"], escaped.as_bytes());
    assert_eq!((stdout(&out).as_str(), status(&out)), ("", 1));
}

/// Lines end in `\n`, not `\r\n`, whatever writes them: checksum lines, leaf
/// lines (their names written with slashes), verdicts, and into a file as
/// into a pipe.
#[test]
fn lines_end_in_newline_alone() {
    let dir = super::dir_with(&[("sub/file", HELLO)]);
    let hashed = run_in(dir.path(), ["--leaves", "-t", "4", r"sub\file"], b"");
    assert!(!hashed.stdout.contains(&b'\r'), "{:?}", stdout(&hashed));
    let named = |line: &str| line.contains(" (sub/file) = ");
    assert!(stdout(&hashed).lines().all(named), "{}", stdout(&hashed));
    assert_eq!(
        hashed.stdout.iter().filter(|&&byte| byte == b'\n').count(),
        1 + HELLO.len().div_ceil(4)
    );
    let checked = run_in(dir.path(), ["-c"], &hashed.stdout);
    assert!(!checked.stdout.contains(&b'\r'), "{:?}", stdout(&checked));
    let errors = run_in(dir.path(), ["missing"], b"");
    assert!(!errors.stderr.contains(&b'\r'), "{:?}", stderr(&errors));
    assert!(stderr(&errors).ends_with('\n'));
    // Into a file.
    let sums = dir.path().join("SUMS");
    let out = bt2sum()
        .current_dir(dir.path())
        .arg(r"sub\file")
        .stdout(fs::File::create(&sums).unwrap())
        .output_retried();
    assert_eq!(status(&out), 0);
    assert_eq!(
        fs::read(&sums).unwrap(),
        format!("BLAKE2b-64 (sub/file) = {HELLO_B64}\n").into_bytes()
    );
}

/// Standard input is binary: `\r\n`, `\x1a` (Ctrl-Z, an end of file to
/// text-mode C runtimes) and every other byte are hashed as they are, from
/// a pipe and from a file, as `bt2sum::hash` hashes them in this process.
#[test]
fn standard_input_is_read_as_its_bytes() {
    let mut data = b"line one\r\nline two\r\n\x1a\r\n\n\r".to_vec();
    data.extend((0..=255u8).cycle().take(70_000));
    data.extend(pattern((1 << 20) + 3));
    for bytes in [&b"a\r\n"[..], &data[..]] {
        let expected = hash(&TreeParams::default(), bytes).to_hex();
        let piped = run::<[&str; 0], _>([], bytes);
        assert_eq!(stdout(&piped), format!("BLAKE2b-64 = {expected}\n"));
        let dir = super::dir_with(&[("input", bytes)]);
        let path = dir.path().join("input");
        let file = fs::File::open(&path).unwrap();
        let redirected = bt2sum().arg("-").stdin(file).output_retried();
        assert_eq!(
            stdout(&redirected),
            format!("BLAKE2b-64 (-) = {expected}\n")
        );
        let named = run([&path], b"");
        assert!(stdout(&named).ends_with(&format!(") = {expected}\n")));
    }
    // A list read from standard input, with `\r\n` line ends, verifies.
    let dir = super::dir_with(&[("sub/file", HELLO)]);
    let list = format!("BLAKE2b-64 (sub/file) = {HELLO_B64}\r\n");
    let out = run_in(dir.path(), ["-c"], list.as_bytes());
    assert_eq!(stdout(&out), "sub/file: OK\n");
    // Standard input as a list and as data in one run.
    let list = format!(
        "BLAKE2b-64 (-) = {}\n",
        hash(&TreeParams::default(), b"\r\n\x1a").to_hex()
    );
    fs::write(dir.path().join("SUMS"), list).unwrap();
    let out = run_in(dir.path(), ["-c", "SUMS"], b"\r\n\x1a");
    assert_eq!(stdout(&out), "-: OK\n");
}

/// A name that is not valid Unicode (an unpaired surrogate) cannot be
/// printed as UTF-8: it is an error, named as well as it can be, and the
/// other inputs are hashed.
#[test]
fn names_that_are_not_unicode_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let name = OsString::from_wide(&[u16::from(b'x'), 0xd800]);
    if let Err(error) = fs::write(dir.path().join(&name), HELLO) {
        let why = format!("no such name here: {error}");
        return super::skip("names_that_are_not_unicode_are_errors", &why);
    }
    fs::write(dir.path().join("y"), HELLO).unwrap();
    let expected_error =
        "bt2sum: x\u{fffd}: the name is not valid Unicode, so it cannot be printed\n";
    let out = run_in(dir.path(), [name.as_os_str(), "y".as_ref()], b"");
    let line = format!("BLAKE2b-64 (y) = {HELLO_B64}\n");
    assert_output(&out, &line, expected_error, 1);
    // Met in a walk, the same.
    let out = run_in(dir.path(), ["-r", "--untagged"], b"");
    let in_walk = expected_error.replace("bt2sum: x", "bt2sum: ./x");
    assert_output(&out, &format!("{HELLO_B64}  ./y\n"), &in_walk, 1);
}

/// Reserved device names are not files: `NUL` reads as empty, as
/// `/dev/null` does on Unix. Standard input from it, a character device,
/// too; the total a progress bar shows for it is unknown, not 0, as it is
/// for a pipe (ux::forced_progress_goes_to_stderr_and_leaves_stdout_alone).
#[test]
fn the_null_device_reads_empty() {
    let empty = hash(&TreeParams::default(), b"").to_hex();
    let out = run(["NUL"], b"");
    assert_output(&out, &format!("BLAKE2b-64 (NUL) = {empty}\n"), "", 0);
    for args in [&["--progress"][..], &[]] {
        let out = bt2sum().args(args).stdin(Stdio::null()).output_retried();
        assert_eq!(stdout(&out), format!("BLAKE2b-64 = {empty}\n"), "{args:?}");
        assert_eq!(status(&out), 0, "{}", stderr(&out));
        assert!(!stderr(&out).contains(" / "), "{}", stderr(&out));
    }
}

/// cmd.exe and PowerShell pass wildcards on as typed, so bt2sum expands
/// those of unquoted arguments itself, as a Unix shell would: `*`, `?` and
/// `[...]`, in either case, in FILEs and in lists for `-c`. A quoted
/// pattern, or one that matches nothing, is a name like any other.
#[test]
fn wildcards_are_expanded_as_a_shell_would() {
    use std::os::windows::process::CommandExt;
    let names = ["a.iso", "B.ISO", "c.txt", "cd.txt", "sub/e.iso"];
    let dir = super::dir_with(&names.map(|name| (name, HELLO)));
    let line = |name: &str| format!("BLAKE2b-64 ({name}) = {HELLO_B64}\n");
    let leaf_4 = TreeParams::new(bt2sum::Algorithm::Blake2b, 64, 4).unwrap();
    let leaf_4 = hash(&leaf_4, HELLO).to_hex();
    let mut checked = 0;
    for (args, names) in [
        (&["*.iso"][..], &["B.ISO", "a.iso"][..]),
        (&["*.ISO"], &["B.ISO", "a.iso"]),
        (&["?.txt"], &["c.txt"]),
        (&["[ab].iso", "c*"], &["B.ISO", "a.iso", "c.txt", "cd.txt"]),
        (&[r"sub\*.iso", "sub/*"], &["sub/e.iso", "sub/e.iso"]),
        (&["--untagged", "-t", "4", "*.txt"], &[]),
    ] {
        let out = run_in(dir.path(), args, b"");
        let expected: String = if names.is_empty() {
            format!("{leaf_4}  c.txt\n{leaf_4}  cd.txt\n")
        } else {
            names.iter().map(|name| line(name)).collect()
        };
        super::assert_said(&out, &expected, "", 0, &format!("{args:?}"));
        checked += 1;
    }
    assert_eq!(checked, 6);

    // Lists for -c are expanded too.
    fs::write(dir.path().join("one.sums"), line("a.iso")).unwrap();
    fs::write(dir.path().join("two.sums"), line("c.txt")).unwrap();
    let out = run_in(dir.path(), ["-c", "*.sums"], b"");
    assert_eq!(stdout(&out), "a.iso: OK\nc.txt: OK\n");
    assert_eq!(status(&out), 0, "{}", stderr(&out));

    // Quoted, or matching nothing, a pattern is a name: not a file here.
    for raw in [r#""*.iso""#, "*.zip"] {
        let out = bt2sum()
            .current_dir(dir.path())
            .raw_arg(raw)
            .stdin(Stdio::null())
            .output_retried();
        let pattern = raw.trim_matches('"');
        assert_eq!(stdout(&out), "", "{raw}");
        assert!(
            stderr(&out).starts_with(&format!("bt2sum: {pattern}: ")),
            "{raw}: {}",
            stderr(&out)
        );
        assert_eq!(status(&out), 1, "{raw}");
    }
}
