//! Check mode beside GNU coreutils: the same cases run with GNU `b2sum` and
//! with bt2sum, each on a list it made itself of the same files, must print
//! the same lines and end with the same status (where GNU has the
//! behaviour); and the cases of coreutils' own check-mode tests (md5sum.pl,
//! sha1sum.pl, md5sum-bsd.sh, b2sum.sh, cksum-c.sh), written again for
//! bt2sum's lines from the behaviour they describe. (Unix: a shell runs
//! the cases.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run_in, status, stderr, stdout};

/// GNU `b2sum`, if it is installed (scripts/test-deps installs it).
pub(super) fn gnu_b2sum(test: &str) -> Option<PathBuf> {
    let found = Command::new("b2sum").arg("--version").output().ok();
    match found {
        Some(out) if String::from_utf8_lossy(&out.stdout).contains("GNU coreutils") => {
            Some(PathBuf::from("b2sum"))
        }
        _ => {
            super::skip(test, "GNU b2sum is not installed (scripts/test-deps)");
            None
        }
    }
}

/// Runs `script` with bash in a new directory, `$MAKE` making a list the
/// tool's way (GNU `b2sum`, or `bt2sum --untagged`) and `$CHECK` the tool
/// that checks it. What the tool did: its status (or the signal that ended
/// it, negated), and what it printed, with the tool's own words made the
/// same: its name, GNU's quotes around `standard input` and its `BLAKE2b`
/// in `improperly formatted BLAKE2b checksum line`. bt2sum's hints, which
/// GNU does not give, are left out.
fn run_case(script: &str, make: &str, check: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_bt2sum")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = Command::new("bash")
        .args(["-c", &format!("set -u\n{script}")])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("MAKE", make)
        .env("CHECK", check)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let tidy = |line: &str| {
        line.replacen("bt2sum: ", "TOOL: ", 1)
            .replacen("b2sum: ", "TOOL: ", 1)
            .replace("'standard input'", "standard input")
            .replace("BLAKE2b checksum line", "BLAKE2 checksum line")
    };
    use std::os::unix::process::ExitStatusExt;
    let code = (out.status.code()).unwrap_or_else(|| -out.status.signal().unwrap_or(0));
    let said = |text: &[u8]| without_hints(text, tidy);
    (code, said(&out.stdout), said(&out.stderr))
}

/// The lines of `text` but bt2sum's hints, each made `tidy(line)` and
/// ended with `\n`.
fn without_hints(text: &[u8], tidy: impl Fn(&str) -> String) -> String {
    let text = String::from_utf8_lossy(text);
    let lines = text
        .lines()
        .filter(|line| !line.starts_with("bt2sum: hint: "));
    lines.map(|line| tidy(line) + "\n").collect()
}

/// Files every case starts with: three small ones, one named with a space.
const FILES: &str = "echo alpha > a; echo beta > b; echo gamma > 'c d'\n";

/// Each case, run by GNU b2sum and by bt2sum: the same verdicts, messages,
/// summaries and statuses.
#[test]
fn gnu_b2sum_and_bt2sum_check_alike() {
    let Some(gnu) = gnu_b2sum("gnu_b2sum_and_bt2sum_check_alike") else {
        return;
    };
    let gnu = gnu.to_str().unwrap().to_string();
    #[rustfmt::skip]
    let cases: [(&str, &str); 27] = [
        ("all match", "$MAKE a b 'c d' > L; $CHECK -c L"),
        ("a damaged file", "$MAKE a b > L; echo x >> a; $CHECK -c L"),
        ("a missing file", "$MAKE a b 'c d' > L; rm b; $CHECK -c L"),
        ("a directory", "$MAKE a b > L; rm b; mkdir b; $CHECK -c L"),
        (
            "improperly formatted lines, --warn",
            "$MAKE a b > L; printf 'junk\\n\\n# note\\n  \\n' >> L; $CHECK -c --warn L",
        ),
        ("--strict", "$MAKE a b > L; echo junk >> L; $CHECK -c --strict L"),
        (
            "--strict, every line good",
            "$MAKE a b > L; printf '\\n# c\\n' >> L; $CHECK -c --strict L",
        ),
        ("--quiet", "$MAKE a b 'c d' > L; echo x >> a; rm b; $CHECK -c --quiet L"),
        ("--status", "$MAKE a b 'c d' > L; echo x >> a; rm b; $CHECK -c --status L"),
        (
            "--ignore-missing, some missing",
            "$MAKE a b 'c d' > L; rm b; $CHECK -c --ignore-missing L",
        ),
        ("--ignore-missing, all missing", "$MAKE a b > L; rm a b; $CHECK -c --ignore-missing L"),
        (
            "--ignore-missing, a mismatch",
            "$MAKE a b > L; rm b; echo x >> a; $CHECK -c --ignore-missing L",
        ),
        ("no properly formatted line", "echo junk > L; $CHECK -c L"),
        ("an empty list", ": > L; $CHECK -c --status L"),
        ("several lists, one missing", "$MAKE a > L; $MAKE b > M; $CHECK -c L nothing M"),
        ("the list on standard input", "$MAKE a b > L; $CHECK -c < L"),
        ("the list as -", "$MAKE a b > L; $CHECK -c - < L"),
        (
            "a list naming standard input, read from standard input",
            "$MAKE - < a > L; $CHECK -c < L",
        ),
        ("a list naming standard input", "$MAKE - < a > L; $CHECK -c L < a"),
        ("CRLF", "$MAKE a b > L; sed 's/$/\\r/' L > M; $CHECK -c M"),
        ("the binary marker", "$MAKE a b > L; sed 's/  / */' L > M; $CHECK -c M"),
        (
            "a name with a newline",
            "n=$(printf 'n\\nl'); echo x > \"$n\"; $MAKE \"$n\" > L; $CHECK -c L",
        ),
        (
            "--status then --warn: the last wins",
            "$MAKE a > L; echo junk >> L; $CHECK --status --warn -c L",
        ),
        (
            "--warn then --status: the last wins",
            "$MAKE a > L; echo junk >> L; $CHECK --warn --status -c L",
        ),
        (
            "standard error cannot be written",
            "$MAKE a > L; echo junk >> L; $CHECK -c L 2>/dev/full",
        ),
        (
            "a read error in the list",
            "$MAKE a > L; $CHECK -c L . 2>&1 | sed 's/ \\.: .*/ .: (why)/'; exit ${PIPESTATUS[0]}",
        ),
        (
            "a checksum of the wrong length",
            "$MAKE a b > L; sed '1s/^../x/' L > M; $CHECK -c --warn M",
        ),
    ];
    for (what, script) in cases {
        let script = format!("{FILES}{script}");
        let theirs = run_case(&script, &gnu, &gnu);
        let ours = run_case(&script, "bt2sum --untagged", "bt2sum");
        assert_eq!(ours, theirs, "{what}");
    }
}

/// A case of coreutils' tests, for bt2sum: files, a list, options, and
/// what it must print.
struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static [u8])],
    list: String,
    args: &'static [&'static str],
    /// Standard output, standard error (bt2sum's hints left out), status.
    said: (&'static str, String, i32),
}

#[test]
fn coreutils_check_cases_pass_for_bt2sum() {
    // The digests of `data` as bt2sum prints them.
    let digest_of = |data: &[u8]| super::digest(&stdout(&super::run(["-"], data)));
    let (empty, of_foo) = (digest_of(b""), digest_of(b"foo"));
    let untagged = |name: &str| format!("{empty}  {name}\n");
    let tagged = |name: &str| format!("BLAKE2b-64 ({name}) = {empty}\n");
    let warn = |what: &str| format!("bt2sum: WARNING: {what}\n");
    let no_lines =
        |list: &str| format!("bt2sum: {list}: no properly formatted checksum lines found\n");
    // What most cases have: `f`, empty, listed untagged and checked with no
    // option.
    let base = || Case {
        name: "",
        files: &[("f", b"")],
        list: untagged("f"),
        args: &[],
        said: ("", String::new(), 0),
    };
    #[rustfmt::skip]
    let cases = vec![
        // md5sum.pl
        Case { name: "check-windows", list: format!("{empty}  f\r\n"),
            said: ("f: OK\n", String::new(), 0), ..base() },
        Case { name: "check-quiet1", args: &["--quiet"], said: ("", String::new(), 0), ..base() },
        Case { name: "check-multifail: one file listed twice is no list of several",
            files: &[("f", b"foo")], list: format!("{}{}invalid\n", untagged("f"), untagged("f")),
            said: ("f: FAILED\nf: FAILED\n", warn("1 line is improperly formatted") + &warn("2 computed checksums did NOT match"), 1),
            ..base() },
        Case { name: "check-multifail-warn", files: &[("f", b"foo")],
            list: format!("{}{}invalid\n", untagged("f"), untagged("f")), args: &["--warn"],
            said: ("f: FAILED\nf: FAILED\n", "bt2sum: LIST: 3: improperly formatted BLAKE2 checksum line\n".to_string() + &warn("1 line is improperly formatted") + &warn("2 computed checksums did NOT match"), 1) },
        Case { name: "check-multifail-state", files: &[("f", b""), ("g", b"a")],
            list: untagged("f") + &untagged("g") + &untagged("f"), args: &["--warn"],
            said: ("f: OK\ng: FAILED\nf: OK\n", warn("1 computed checksum did NOT match"), 1) },
        Case { name: "check-bsd: another algorithm's tag is no line of this one",
            list: format!("SHA1 (f) = {}\n", "da".repeat(20)), args: &["--status"],
            said: ("", no_lines("LIST"), 1), ..base() },
        Case { name: "check-openssl: OpenSSL's form is not bt2sum's (strict, as b3sum)",
            list: format!("BLAKE2b-64(f)= {empty}\n"), args: &["--status"],
            said: ("", no_lines("LIST"), 1), ..base() },
        Case { name: "check-ignore-missing-1", list: untagged("f") + &untagged("f.missing"),
            args: &["--ignore-missing"], said: ("f: OK\n", String::new(), 0), ..base() },
        Case { name: "check-ignore-missing-3", list: untagged("missing/f") + &untagged("f"),
            args: &["--quiet", "--ignore-missing"], said: ("", String::new(), 0), ..base() },
        Case { name: "check-ignore-missing-6: a digest starting with 00 is no missing file",
            files: &[("f", b"foo")], list: format!("{of_foo}  f\n"), args: &["--ignore-missing"],
            said: ("f: OK\n", String::new(), 0) },
        Case { name: "bsd-segv", files: &[], list: "BLAKE2b-64 (".to_string(),
            said: ("", no_lines("LIST"), 1), ..base() },
        Case { name: "nul-in-cksum: NULs among the digits, and the file is not even read",
            files: &[], list: format!("{}  h\n", "\0".repeat(128)),
            said: ("", no_lines("LIST"), 1), ..base() },
        // md5sum-bsd.sh: names starting with a space or `*`, tagged and
        // untagged; a header line that is not a checksum.
        Case { name: "names with leading spaces and stars, tagged",
            files: &[("a", b""), (" b", b""), ("*c", b""), (" ", b"")],
            list: tagged("a") + &tagged(" b") + &tagged("*c") + &tagged(" "), args: &["--strict"],
            said: ("a: OK\n b: OK\n*c: OK\n : OK\n", String::new(), 0) },
        Case { name: "names with leading spaces and stars, untagged",
            files: &[("a", b""), (" b", b""), ("*c", b"")],
            list: untagged("a") + &untagged(" b") + &untagged("*c"), args: &["--strict"],
            said: ("a: OK\n b: OK\n*c: OK\n", String::new(), 0) },
        Case { name: "a header that is not a checksum line", files: &[("a", b"")],
            list: format!("____not_all_hex_so_no_match_____ blah\n{}", untagged("a")),
            said: ("a: OK\n", warn("1 line is improperly formatted"), 0), ..base() },
        // b2sum.sh: lines that once crashed a parser, and one digit short.
        Case { name: "truncated tags", files: &[],
            list: "BLAKE2\nBLAKE2b\nBLAKE2-\nBLAKE2(\nBLAKE2 (\nBLAKE2b-\nBLAKE2b-64 (x) =\n".to_string(),
            said: ("", no_lines("LIST"), 1), ..base() },
        Case { name: "an odd number of digits, unended", files: &[], list: "0A0BA0".to_string(),
            said: ("", no_lines("LIST"), 1), ..base() },
        // cksum-c.sh: an awkward name, a signed list.
        Case { name: "a name holding ` (f) = `", files: &[("abc (f) = abc", b"")],
            list: tagged("abc (f) = abc"), said: ("abc (f) = abc: OK\n", String::new(), 0),
            ..base() },
        Case {
            name: "a list signed with PGP, checked without --strict",
            files: &[("input", b"")],
            list: format!(
                "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA384\n\n# ignored comment\n{}\
                 -----BEGIN PGP SIGNATURE-----\n\nSHA384+BCAAdFiEEjFummQvbJuGfKhqAEWGua\n\
                 BLAKE2b/00001EuON62pTEnqrJ5lav61QxRByiuDp/6VODrRL2JWM6Stxu1Myws=\n=AWU7\n\
                 -----END PGP SIGNATURE-----\n",
                tagged("input")
            ),
            said: ("input: OK\n", warn("7 lines are improperly formatted"), 0),
            ..base()
        },
    ];
    assert_eq!(cases.len(), 19);
    for case in &cases {
        let dir = super::dir_with(case.files);
        fs::write(dir.path().join("LIST"), &case.list).unwrap();
        let args = ["-c"].iter().chain(case.args).chain(&["LIST"]);
        let out = run_in(dir.path(), args, b"");
        let err = without_hints(&out.stderr, str::to_string);
        let (said_out, said_err, said_status) = &case.said;
        let expected = (said_out.to_string(), said_err.clone(), *said_status);
        assert_eq!((stdout(&out), err, status(&out)), expected, "{}", case.name);
    }
    // (check.rs asserts the rest: a list all OK, tagged or not (md5sum.pl's
    // check-1, check-bsd2), --strict over blank lines, comments and bad lines
    // (ck-strict-1, ck-strict-2, cksum-c.sh's comments and plurals), --status
    // and --quiet with a mismatch (check-2, check-bsd3, check-quiet2), a list
    // whose files are all missing (check-ignore-missing-5), a listed file that
    // does not exist, and lists that cannot be read or are empty, each said.)
}

/// `-s N` with `--check` reads only N-byte digests: lines of other sizes,
/// of either form, are improperly formatted, as `--warn` shows. Without it,
/// every size is read (GNU b2sum 9.1 reads every size even with `-l`).
#[test]
fn a_digest_size_with_check_reads_only_that_size() {
    let dir = super::dir_with(&[("f", b"hello\n")]);
    let made = ["-s 32 f", "-s 16 f", "--untagged -s 32 f", "--untagged f"];
    let list = made
        .map(|args| super::ok_in(dir.path(), args.split(' ')))
        .concat();
    fs::write(dir.path().join("L"), &list).unwrap();
    let all_ok = "f: OK\nf: OK\nf: OK\nf: OK\n";
    super::assert_output(&run_in(dir.path(), ["-c", "L"], b""), all_ok, "", 0);
    let strict = run_in(dir.path(), ["-c", "--strict", "-s", "32", "L"], b"");
    assert_eq!(status(&strict), 1);
    for (size, stdout_expected, bad) in [
        (&["-s", "32"][..], "f: OK\nf: OK\n", "2, 4"),
        (&["--length=16"], "f: OK\n", "1, 3, 4"),
        (&["-s", "64"], "f: OK\n", "1, 2, 3"),
    ] {
        let out = run_in(dir.path(), [&["-c", "-w"][..], size, &["L"]].concat(), b"");
        assert_eq!(
            (stdout(&out).as_str(), status(&out)),
            (stdout_expected, 0),
            "{size:?}"
        );
        let err = stderr(&out);
        let warned: Vec<&str> = (err.lines())
            .filter_map(|line| line.strip_prefix("bt2sum: L: ")?.split(':').next())
            .collect();
        assert_eq!(warned.join(", "), bad, "{size:?}");
    }
    // (A size the algorithm does not have is refused, as when hashing:
    // cli::bad_options_are_usage_errors.)
}
