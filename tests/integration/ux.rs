//! The conveniences around hashing, through the built binary: `--recursive`
//! (order, links, loops, special files, errors, odd names, round trips),
//! shell completions and the man page, and the progress bar (kept out of
//! pipes and stdout, forced with `--progress`, and drawn in a real terminal
//! under tmux).

use std::fs;
#[cfg(unix)]
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
#[cfg(unix)]
use std::sync::Arc;
#[cfg(unix)]
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

use super::{
    Retried, assert_contains, bt2sum, name, pattern, read_error, run, status, stderr, stdout,
};

/// Makes a symbolic link at `link` to `target` (a directory if `directory`,
/// which Windows needs to know); `false`, with a note naming `test`, where
/// links cannot be made: Windows lets only some users make them, and Wine
/// answers that it made them without making any.
fn symlink(target: &Path, link: &Path, directory: bool, test: &str) -> bool {
    #[cfg(unix)]
    {
        let _ = (directory, test);
        std::os::unix::fs::symlink(target, link).unwrap();
        true
    }
    #[cfg(windows)]
    {
        let made = if directory {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        };
        let made = made.and_then(|()| fs::symlink_metadata(link));
        if let Err(error) = &made {
            super::skip(test, &format!("cannot make symbolic links here: {error}"));
        }
        made.is_ok()
    }
}

/// Creates the files at the relative `paths` (bytes) under `root`, parents
/// included; each holds its own path.
fn make_files(root: &Path, paths: &[&[u8]]) {
    for path in paths {
        let path = root.join(name(path));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, path.as_os_str().as_encoded_bytes()).unwrap();
    }
}

/// Whether `error`, from creating a file, says the file system refuses the
/// name: macOS's APFS (and ZFS with `utf8only`) take only UTF-8 names, and
/// answer `Illegal byte sequence`; some others `Invalid argument`.
#[cfg(unix)]
fn refuses_name(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EILSEQ | libc::EINVAL))
}

/// Writes `data` to the file named by `bytes` in `dir`; `false`, with a note
/// naming `test`, where the file system refuses that name (see
/// [`refuses_name`]): a test then checks the names it can make. Any other
/// error fails the test.
#[cfg(unix)]
pub(super) fn write_named(dir: &Path, bytes: &[u8], data: &[u8], test: &str) -> bool {
    match fs::write(dir.join(name(bytes)), data) {
        Ok(()) => true,
        Err(error) if refuses_name(&error) => {
            super::skip(
                test,
                &format!(
                    "the name \"{}\": the file system here refuses it: {error}",
                    bytes.escape_ascii()
                ),
            );
            false
        }
        Err(error) => panic!("cannot write \"{}\": {error}", bytes.escape_ascii()),
    }
}

/// The paths of `paths` that can name a file here, with a note naming
/// `test` for each of the others. On Unix, those the file system takes, as
/// trying them in a directory of its own shows (see [`refuses_name`]); on
/// Windows those that are UTF-8 and hold no `\` (which separates there),
/// `\n` or `\r` (which Windows names cannot hold).
pub(super) fn possible<'a>(paths: &[&'a [u8]], test: &str) -> Vec<&'a [u8]> {
    #[cfg(unix)]
    let probe = tempfile::tempdir().unwrap();
    paths
        .iter()
        .copied()
        .filter(|path| {
            #[cfg(unix)]
            let refused = {
                let file = probe.path().join(name(path));
                match fs::create_dir_all(file.parent().unwrap())
                    .and_then(|()| fs::write(&file, b""))
                {
                    Ok(()) => None,
                    Err(error) if refuses_name(&error) => {
                        Some(format!("the file system here refuses it: {error}"))
                    }
                    Err(error) => panic!("cannot make \"{}\": {error}", path.escape_ascii()),
                }
            };
            #[cfg(not(unix))]
            let refused = (!std::str::from_utf8(path)
                .is_ok_and(|path| !path.contains(['\\', '\n', '\r'])))
            .then(|| "Windows names are Unicode and hold no `\\`, `\\n` or `\\r`".to_string());
            if let Some(why) = &refused {
                super::skip(
                    test,
                    &format!("the name \"{}\": {why}", path.escape_ascii()),
                );
            }
            refused.is_none()
        })
        .collect()
}

/// The names of `HEX  NAME` lines (names needing no escape), as bytes.
fn untagged_names(output: &[u8]) -> Vec<Vec<u8>> {
    output
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let at = line
                .windows(2)
                .position(|pair| pair == b"  ")
                .expect("an untagged line");
            line[at + 2..].to_vec()
        })
        .collect()
}

/// The names `bt2sum -r --untagged ARGS` lists in `dir`, which must
/// succeed without a message.
fn walked(dir: &Path, args: &[&str]) -> Vec<Vec<u8>> {
    let out = super::run_in(dir, ["-r", "--untagged"].iter().chain(args), b"");
    assert_eq!((stderr(&out).as_str(), status(&out)), ("", 0), "{args:?}");
    untagged_names(&out.stdout)
}

/// `prefix` joined to each path, sorted bytewise: what `find | LC_ALL=C
/// sort` lists.
fn sorted_paths(prefix: &str, paths: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut expected: Vec<Vec<u8>> = paths
        .iter()
        .map(|path| [prefix.as_bytes(), b"/", path].concat())
        .collect();
    expected.sort();
    expected
}

/// What GNU find's `find ARG -type f | LC_ALL=C sort` prints in `dir`, line
/// by line, to show that GNU find lists what the tests expect; `None`, with
/// a note naming `test`, where the `find` that `sh` runs is not GNU's (BSD
/// find, as on macOS, writes `find t/` as `t//a`; Windows' own `find.exe`
/// searches text), or there is no `sort` beside it or no `sh`. The tests
/// compare with their own expectation in every case.
fn find_and_sort(dir: &Path, arg: &str, test: &str) -> Option<Vec<Vec<u8>>> {
    // (Windows' own `find.exe` and `sort.exe` answer no `--version`.)
    let script = "find --version 2>&1 | grep -q 'GNU findutils' && sort --version > /dev/null \
                  || exit 99; find \"$1\" -type f | LC_ALL=C sort";
    let found = Command::new("sh")
        .current_dir(dir)
        .args(["-c", script, "sh", arg])
        .output();
    let why = match found {
        Err(error) => format!("there is no sh here ({error})"),
        Ok(out) if out.status.code() == Some(99) => {
            "the find here is not GNU find, or no sort".into()
        }
        Ok(out) => {
            let (status, said) = (out.status, stderr(&out));
            assert!(
                status.success() && said.is_empty(),
                "find {arg} | sort: {status:?}: {said}"
            );
            let lines = out.stdout.split(|&byte| byte == b'\n');
            let lines = lines.filter(|line| !line.is_empty());
            return Some(lines.map(<[u8]>::to_vec).collect());
        }
    };
    super::skip(
        test,
        &format!("the comparison with `find {arg} | sort`: {why}"),
    );
    None
}

/// A tree whose paths sort differently bytewise than walk by walk: `a-b`
/// and `a.b` before `a/`, upper case before lower case, a dot file, deep
/// nesting, spaces, UTF-8 and bytes that are not UTF-8.
const TREE: &[&[u8]] = &[
    b"a/x",
    b"a-b/y",
    b"a.b",
    b"a0",
    b"B",
    b"z",
    b".hidden",
    b"with space/f",
    b"a/b/c/deep",
    b"a/b/c/d/e/f/g/h",
    b"a/\xfe",
    b"caf\xc3\xa9",
    b"\xff/not utf-8 \x80",
];

#[test]
fn recursive_lists_files_in_bytewise_path_order_like_find_and_sort() {
    let dir = tempfile::tempdir().unwrap();
    let test = "recursive_lists_files_in_bytewise_path_order_like_find_and_sort";
    let tree = possible(TREE, test);
    let t = dir.path().join("t");
    make_files(&t, &tree);
    fs::create_dir_all(t.join("empty dir/really empty")).unwrap();
    // `t/` is written `t/a`, as find writes it.
    for (at, arg, prefix) in [
        (dir.path(), "t", "t"),
        (dir.path(), "t/", "t"),
        (&t, ".", "."),
    ] {
        let expected = sorted_paths(prefix, &tree);
        assert_eq!(walked(at, &[arg]), expected, "{arg}");
        if let Some(found) = find_and_sort(at, arg, test) {
            assert_eq!(found, expected, "find {arg} | sort");
        }
    }
    // The digests do not change; without arguments, `-r` walks `.`.
    let out = super::ok_in(dir.path(), ["-r", "--untagged", "t"]);
    assert_eq!(super::ok_in(dir.path(), ["-r", "--untagged", "t/"]), out);
    let here = super::ok_in(&t, ["-r", "--untagged"]);
    assert_eq!(here, super::ok_in(&t, ["-r", "--untagged", "."]));
    // Each line is the file's own checksum line.
    let line = super::ok_in(dir.path(), ["--untagged", "t/a/b/c/deep"]);
    assert_contains(&out, &line);
}

#[test]
fn recursive_list_round_trips_through_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = TREE.to_vec();
    // Names that are escaped in the list, and a file of several leaves.
    paths.extend([
        b"esc/back\\slash".as_slice(),
        b"esc/new\nline",
        b"esc/carriage\rreturn",
    ]);
    let paths = possible(&paths, "recursive_list_round_trips_through_check");
    make_files(&dir.path().join("t"), &paths);
    fs::write(dir.path().join("t/big"), pattern(3 << 20)).unwrap();

    let out = super::run_in(dir.path(), ["-r", "-t", "1m", "t"], b"");
    assert_eq!((stderr(&out).as_str(), status(&out)), ("", 0));
    assert_eq!(
        out.stdout.iter().filter(|&&b| b == b'\n').count(),
        paths.len() + 1
    );
    // A non-UTF-8 name is written as its bytes (where the file system
    // holds it: `possible` said if not).
    #[cfg(unix)]
    if paths.contains(&b"\xff/not utf-8 \x80".as_slice()) {
        let raw = b"(t/\xff/not utf-8 \x80) = ";
        assert!(out.stdout.windows(raw.len()).any(|window| window == raw));
    }
    fs::write(dir.path().join("SUMS"), &out.stdout).unwrap();

    let verdicts = super::ok_in(dir.path(), ["-c", "-t", "1m", "SUMS"]);
    let ok = verdicts.lines().filter(|line| line.ends_with(": OK"));
    assert_eq!(ok.count(), paths.len() + 1, "{verdicts}");

    // A changed file is caught.
    fs::write(dir.path().join("t/a/x"), b"changed").unwrap();
    let check = super::run_in(dir.path(), ["-c", "-t", "1m", "SUMS"], b"");
    assert_eq!(status(&check), 1);
    assert_contains(&stdout(&check), "t/a/x: FAILED\n");
}

/// `cd dir && bt2sum -r > SUMS && bt2sum -c SUMS`: the walk skips the file
/// standard output writes to (same device and inode, or on Windows the
/// same file index, so also through a link with -L), and the list
/// verifies; its ledger beside it is skipped too.
#[test]
fn recursive_skips_the_list_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    make_files(dir.path(), &[b"a", b"sub/b"]);
    // (Where links cannot be made, -L has none to follow.)
    symlink(
        &Path::new("..").join("SUMS"),
        &dir.path().join("sub/link"),
        false,
        "recursive_skips_the_list_it_writes",
    );
    // `bt2sum ARGS > SUMS`, or `>> SUMS`, which must say nothing.
    let into_sums = |args: &[&str], appended: bool| {
        let sums = fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(appended)
            .truncate(!appended)
            .open(dir.path().join("SUMS"))
            .unwrap();
        let hashed = bt2sum()
            .current_dir(dir.path())
            .args(args)
            .stdout(sums)
            .output_retried();
        super::assert_said(&hashed, "", "", 0, &format!("{args:?}"));
    };
    for (args, appended) in [
        (&["-r"][..], false),
        (&["-r", "-L"], false),
        (&["-r", "-L", "."], true),
    ] {
        into_sums(args, appended);
        let out = super::run_in(dir.path(), ["-c", "SUMS"], b"");
        let expected = "./a: OK\n./sub/b: OK\n".repeat(if appended { 2 } else { 1 });
        super::assert_said(&out, &expected, "", 0, &format!("{args:?}"));
    }
    // Nor is the ledger beside it (which every scrub changes).
    fs::write(dir.path().join("SUMS.ledger"), b"").unwrap();
    into_sums(&["-r", "--untagged"], false);
    let listed = fs::read(dir.path().join("SUMS")).unwrap();
    assert_eq!(untagged_names(&listed), [&b"./a"[..], b"./sub/b"]);
    // Into a pipe, nothing is skipped: SUMS is an ordinary file then.
    let all = [&b"./SUMS"[..], b"./SUMS.ledger", b"./a", b"./sub/b"];
    assert_eq!(walked(dir.path(), &[]), all);
}

#[test]
fn recursive_hashes_other_arguments_as_given_in_argument_order() {
    let dir = tempfile::tempdir().unwrap();
    make_files(dir.path(), &[b"file", b"d2/b", b"d1/a"]);
    let args = ["-r", "--untagged", "d2", "file", "missing", "d1"];
    let missing = read_error(&dir.path().join("missing"), "No such file or directory");
    let out = super::run_in(dir.path(), args, b"");
    assert_eq!(
        untagged_names(&out.stdout),
        [b"d2/b".to_vec(), b"file".to_vec(), b"d1/a".to_vec()]
    );
    assert_eq!(stderr(&out), format!("bt2sum: missing: {missing}\n"));
    assert_eq!(status(&out), 1);
}

#[test]
fn links_in_the_walk_are_skipped_unless_dereference() {
    let dir = tempfile::tempdir().unwrap();
    make_files(dir.path(), &[b"t/file", b"outside/inner", b"lone"]);
    let up = Path::new("..");
    for (target, link, directory) in [
        (up.join("lone"), "t/to-file", false),
        (up.join("outside"), "t/to-dir", true),
        (PathBuf::from("nowhere"), "t/dangling", false),
        (PathBuf::from("t"), "link-to-t", true),
    ] {
        let test = "links_in_the_walk_are_skipped_unless_dereference";
        if !symlink(&target, &dir.path().join(link), directory, test) {
            return;
        }
    }

    assert_eq!(walked(dir.path(), &["t"]), [b"t/file"]);
    // -L: links to files are hashed, links to directories walked, dangling
    // links skipped (as `find -L -type f`).
    for flag in ["-L", "--dereference"] {
        let expected = sorted_paths("t", &[b"file", b"to-dir/inner", b"to-file"]);
        assert_eq!(walked(dir.path(), &[flag, "t"]), expected);
    }
    // A link named as an argument is followed, and paths go through it.
    assert_eq!(walked(dir.path(), &["link-to-t"]), [b"link-to-t/file"]);
}

#[test]
fn dereference_reports_link_loops_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    make_files(dir.path(), &[b"t/a/file", b"t/z"]);
    let test = "dereference_reports_link_loops_without_hanging";
    let up = dir.path().join("t/a/up");
    let own = dir.path().join("t/self");
    if !symlink(Path::new(".."), &up, true, test) || !symlink(Path::new("self"), &own, false, test)
    {
        return;
    }
    // The message of following a link to itself is the system's.
    let looped = bt2sum::plain_message(&fs::metadata(&own).unwrap_err());
    #[cfg(unix)]
    assert_eq!(looped, "Too many levels of symbolic links");
    // (run_in fails the test if the run hangs.)
    let out = super::run_in(dir.path(), ["-r", "-L", "--untagged", "t"], b"");
    assert_eq!(untagged_names(&out.stdout), [&b"t/a/file"[..], b"t/z"]);
    let loops = format!("bt2sum: t/a/up: File system loop detected\nbt2sum: t/self: {looped}\n");
    assert_eq!((stderr(&out), status(&out)), (loops, 1));
}

/// (Unix: FIFOs and Unix sockets.)
#[cfg(unix)]
#[test]
fn fifos_and_sockets_in_the_walk_are_skipped_not_waited_on() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    make_files(dir.path(), &[b"t/file"]);
    super::mkfifo(&dir.path().join("t/fifo"));
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("t/socket")).unwrap();
    symlink("/dev/null", dir.path().join("t/device")).unwrap();

    // (walked fails the test if the run hangs.)
    for extra in [&[][..], &["-L"]] {
        assert_eq!(walked(dir.path(), &[extra, &["t"]].concat()), [b"t/file"]);
    }
}

/// The user to run bt2sum as where a file's mode must deny it: as root,
/// who reads everything whatever its mode, `nobody` (uid and gid 65534),
/// checked to read `readable` (a path in `dir` whose modes let everyone read
/// it) so that only the modes of what the test locks deny it; as anyone
/// else, that user (`None`). An error saying why where root cannot have
/// `nobody` run bt2sum there: switching users refused (a restricted
/// container), or the binary or `dir` out of that user's reach.
#[cfg(unix)]
pub(super) fn unprivileged(dir: &Path, readable: &str) -> Result<Option<u32>, String> {
    use std::os::unix::process::CommandExt;
    const NOBODY: u32 = 65534;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let probe = bt2sum()
        .current_dir(dir)
        .arg(readable)
        .uid(NOBODY)
        .gid(NOBODY)
        .output();
    match probe {
        Ok(out) if out.status.success() => Ok(Some(NOBODY)),
        Ok(out) => Err(format!(
            "root reads every file, and nobody (uid {NOBODY}), who would not, cannot read \
             {readable} here: {}",
            stderr(&out).trim_end()
        )),
        Err(error) => Err(format!(
            "root reads every file, and bt2sum cannot be run as nobody (uid {NOBODY}), who \
             would not: {error}"
        )),
    }
}

/// (Unix: file modes and uids.)
#[cfg(unix)]
#[test]
fn an_unreadable_directory_is_an_error_and_the_rest_is_hashed() {
    use fs::Permissions;
    use std::os::unix::{fs::PermissionsExt, process::CommandExt};
    let dir = tempfile::tempdir().unwrap();
    make_files(dir.path(), &[b"t/a", b"t/locked/secret", b"t/z"]);
    // Open to all (as the user below, too) but the locked directory.
    let set =
        |path: &str, mode| fs::set_permissions(dir.path().join(path), Permissions::from_mode(mode));
    let modes = [
        ("", 0o755),
        ("t", 0o755),
        ("t/a", 0o644),
        ("t/z", 0o644),
        ("t/locked", 0),
    ];
    for (path, mode) in modes {
        set(path, mode).unwrap();
    }
    let test = "an_unreadable_directory_is_an_error_and_the_rest_is_hashed";
    let user = match unprivileged(dir.path(), "t/a") {
        Ok(user) => user,
        Err(why) => return super::skip(test, &why),
    };
    let mut command = bt2sum();
    command
        .current_dir(dir.path())
        .args(["-r", "--untagged", "t"]);
    if let Some(user) = user {
        command.uid(user).gid(user);
    }
    let out = command.output().expect("bt2sum runs");
    // (Open again, for the directory to be removed.)
    set("t/locked", 0o755).unwrap();
    let denied = "bt2sum: t/locked: Permission denied\n";
    assert_eq!(stderr(&out), denied, "stdout: {}", stdout(&out));
    assert_eq!(untagged_names(&out.stdout), [b"t/a", b"t/z"]);
    assert_eq!(status(&out), 1);
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    // (Nothing else with them, and only known shells:
    // cli::bad_options_are_usage_errors.)
    for (shell, own) in [("bash", "--tree"), ("zsh", "tree"), ("fish", "-l tree")] {
        let out = run(["--completions", shell], b"");
        assert_eq!((stderr(&out).as_str(), status(&out)), ("", 0), "{shell}");
        let script = stdout(&out);
        let words = "bt2sum tree recursive check completions leaf-range part total name";
        for word in words.split(' ').chain([own]) {
            assert!(script.contains(word), "{shell}: {word}");
        }
    }
}

/// bash, running the generated script as it does on Tab: `-t` and `-s`
/// offer sizes, values that are numbers offer nothing, and only options
/// that take files offer file names. (Unix: bash.)
#[cfg(unix)]
#[test]
fn completion_offers_sizes_where_sizes_go() {
    let dir = super::dir_with(&[("zzz-file", b"")]);
    let script = stdout(&run(["--completions", "bash"], b""));
    fs::write(dir.path().join("completion.bash"), script).unwrap();
    // What Tab offers after the words given: as bash calls the function.
    let tab = |words: &str| -> String {
        let out = Command::new("bash")
            .current_dir(dir.path())
            .arg("-c")
            .arg(format!(
                "source ./completion.bash; COMP_WORDS=({words}); \
                 COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); \
                 _bt2sum bt2sum \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 echo \"[${{COMPREPLY[*]}}]\""
            ))
            .output()
            .expect("bash runs");
        stdout(&out).trim_end().to_string()
    };
    let table = [
        ("bt2sum -t ''", "[64k 1m 4m 5m 8m 10m 16m 64m 256m 1g]"),
        ("bt2sum --tree 6", "[64k 64m]"),
        ("bt2sum -a blake2s -t 1", "[1m 10m 16m 1g]"),
        ("bt2sum -s ''", "[0 16 20 28 32 40 48 64]"),
        ("bt2sum --cpus ''", "[]"),
        ("bt2sum --leaves --part ''", "[]"),
        ("bt2sum -a ''", "[blake2b blake2s]"),
        ("bt2sum --files0-from z", "[zzz-file]"),
    ];
    for (words, offered) in table {
        assert_eq!(tab(words), offered, "{words}");
    }
    // They are offered, not the only values allowed: no message lists them.
    for option in ["-s", "-t"] {
        let out = run([option], b"");
        assert_eq!(status(&out), 2, "{option}");
        let said = stderr(&out);
        let plain =
            said.starts_with("error: a value is required") && !said.contains("possible values");
        assert!(plain, "{option}: {said}");
    }
}

#[test]
fn man_page_is_roff() {
    let page = super::ok_in(Path::new("."), ["--man"]);
    assert!(page.starts_with('.'), "{}", &page[..page.len().min(200)]);
    // The synopsis says that several FILEs may be given; literal text is
    // bold, as manual pages set it, never in Markdown's backticks.
    for text in [
        ".TH bt2sum 1",
        "\\-\\-tree",
        "\\-\\-recursive",
        "[\\fIFILE\\fR]...",
        "\\fBb2sum \\-\\-tag\\fR",
    ] {
        assert_contains(&page, text);
    }
    assert!(!page.contains('`'), "{page}");
    for option in ["part", "total", "name", "leaf\\-range"] {
        assert!(
            page.contains(&format!(".B \\-\\-{option}"))
                || page.contains(&format!("\\fB\\-\\-{option}\\fR")),
            "no --{option}:\n{page}"
        );
    }
    let sections = "SYNOPSIS|OUTPUT|\"EXIT STATUS\"|\"CHECK LIST FORMAT\"|\"LEAF LISTINGS\"|\
                    ENVIRONMENT|EXAMPLES";
    for section in sections.split('|') {
        assert_contains(&page, &format!(".SH {section}"));
    }
    let see_also = page.split(".SH \"SEE ALSO\"").nth(1).unwrap();
    for text in "b2sum(1) sha256sum(1) b3sum(1) docs/check.md README.md".split(' ') {
        assert_contains(see_also, text);
    }
    // The examples and formats keep their lines: no-fill blocks, each
    // example whole on its line.
    let examples = page.split(".SH EXAMPLES").nth(1).unwrap();
    assert_contains(examples, ".nf\n");
    assert!(
        examples
            .lines()
            .any(|line| line.starts_with("bt2sum \\-c SUMS ") && line.ends_with("...verified")),
        "{examples}"
    );
    let exit = page.split(".SH \"EXIT STATUS\"").nth(1).unwrap();
    for status in ["0: every input", "1: an input", "2: bad usage"] {
        assert_contains(exit, status);
    }
}

/// The archive's life that `--help` ends with runs as written, one command
/// after another, in an archive with a copy beside it: a file added before
/// the quick update, damage and a deletion before the repair.
#[cfg(unix)]
#[test]
fn the_archive_recipe_of_the_help_runs_as_written() {
    let help = stdout(&run(["--help"], b""));
    let recipe: Vec<String> = help
        .split("An archive's life")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| line.trim().split("  ").next().unwrap().to_string())
        .collect();
    assert_eq!(recipe.len(), 5, "{recipe:?}");
    let dir = tempfile::tempdir().unwrap();
    let (tree, copy) = (dir.path().join("tree"), dir.path().join("copy"));
    let both = |name: &str, data: &[u8]| {
        for root in [&tree, &copy] {
            super::write_files(root, &[(name, data)]);
        }
    };
    both("a.jpg", &pattern(3 << 20));
    both("b.jpg", b"b\n");
    for (step, command) in recipe.iter().enumerate() {
        match step {
            2 => both("c.jpg", b"c\n"),
            4 => {
                super::rot(&tree.join("a.jpg"), [1 << 20]);
                fs::remove_file(tree.join("b.jpg")).unwrap();
            }
            _ => {}
        }
        // (The recipe runs `bt2sum`: the built one, first on PATH.)
        let script = format!("PATH=\"$(dirname \"$BT2SUM\"):$PATH\"; {command}");
        let out = super::shell(&tree, &script);
        assert_eq!(status(&out), 0, "{command}: {}", stderr(&out));
    }
    let out = super::run_in(&tree, ["-c", "--quiet", "../SUMS"], b"");
    assert_eq!((stdout(&out).as_str(), status(&out)), ("", 0));
    let read = |root: &Path| fs::read(root.join("a.jpg")).unwrap();
    assert_eq!(read(&tree), read(&copy));
}

/// Where `-C` sends the lists and the copies, the messages say: a list
/// outside the directory gets a tip, and copies that are not there are
/// said once, with where they were looked for.
#[test]
fn dash_c_and_missing_copies_are_explained() {
    let dir = super::dir_with(&[("tree/a", b"a"), ("tree/b", b"b")]);
    super::write_list(
        &dir.path().join("tree"),
        "../sums.txt",
        ["--leaves", "a", "b"],
    );
    let out = super::run_in(dir.path(), ["-C", "tree", "-c", "sums.txt"], b"");
    assert_eq!(status(&out), 1);
    assert_contains(
        &stderr(&out),
        "bt2sum: tip: -C tree applies to the lists too: sums.txt was looked for in tree; \
         give its path from there, or an absolute one",
    );
    let args = ["-C", "tree", "-c", "--repair-from", "backup", "../sums.txt"];
    let (out, said, code) = super::said_in(dir.path(), args);
    assert_eq!(
        (out.as_str(), code, said.lines().count()),
        ("", 1, 1),
        "{said}"
    );
    super::assert_starts(&said, "bt2sum: backup: the copies given to --repair-from: ");
    assert_contains(&said, "(looked for from ");
}

#[test]
fn help_has_examples_and_defaults_and_version_its_own() {
    let help = super::ok_in(Path::new("."), ["--help"]);
    for text in [
        "Examples:",
        "bt2sum -r DIR",
        "bt2sum -c SUMS",
        "--combine P1 P2",
        "--part 2/8 --total T --name F -",
        "--tree <SIZE>",
        "--part <K/N>",
        "--total <T>",
        "--name <NAME>",
        "[default: 5m]",
        "[default: blake2b]",
        "[default: 0]",
        "[default: the number of processors]",
        "1 to 1024",
        "4294967295",
        "1 to 64 for blake2b",
    ] {
        assert_contains(&help, text);
    }
    // -h is the short form: the values' descriptions are --help's only.
    let short = stdout(&run(["-h"], b""));
    assert!(help.contains("Possible values:") && !short.contains("Possible values:"));
    assert!(short.contains("--recursive"));
    let version = format!("bt2sum {}\n", env!("CARGO_PKG_VERSION"));
    super::assert_output(&run(["-V"], b""), &version, "", 0);
}

/// Standard error with the bar's carriage-return updates split off, as
/// separate pieces.
fn pieces(text: &str) -> Vec<&str> {
    text.split(['\r', '\n']).collect()
}

#[test]
fn forced_progress_goes_to_stderr_and_leaves_stdout_alone() {
    let dir = super::dir_with(&[("data", &pattern(3 << 20))]);
    let missing = read_error(&dir.path().join("missing"), "No such file or directory");
    let plain = super::run_in(dir.path(), ["data", "missing"], b"");
    let forced = super::run_in(dir.path(), ["--progress", "data", "missing"], b"");

    assert_eq!(forced.stdout, plain.stdout);
    assert_eq!(status(&forced), status(&plain));
    assert_eq!(stderr(&plain), format!("bt2sum: missing: {missing}\n"));
    let text = stderr(&forced);
    // The final state, with the total, left on its own line; the error
    // line whole; no escape codes into a pipe.
    assert_contains(&text, "3.00 MiB / 3.00 MiB");
    assert!(text.ends_with('\n'), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
    let error = format!("bt2sum: missing: {missing}");
    assert!(pieces(&text).contains(&error.as_str()), "{text:?}");

    // Without a total (standard input): bytes and rate.
    let out = run(["--progress"], &pattern(1 << 20));
    assert_eq!(
        out.stdout,
        run::<[&str; 0], _>([], &pattern(1 << 20)).stdout
    );
    assert_contains(&stderr(&out), "1.00 MiB");
    assert_contains(&stderr(&out), "B/s");
    // (No total, not a total of 0: ` / ` is the bar's with a total.)
    assert!(!stderr(&out).contains(" / "), "{}", stderr(&out));
}

/// Off a terminal, forced progress is a plain line at most every few
/// seconds, each whole: no carriage return, no escape code, no padding.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn progress_into_a_log_is_a_plain_line_every_few_seconds() {
    use std::io::Write;
    let mut child = bt2sum().arg("--progress").spawn_piped();
    let mut input = child.stdin.take().unwrap();
    // About 11 seconds of input, a little at a time.
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(11) {
        input.write_all(&pattern(1 << 16)).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    let log = stderr(&out);
    assert!(!log.contains(['\r', '\x1b']), "{log:?}");
    let lines: Vec<&str> = log.lines().collect();
    // A line each 5 seconds, and the last, whole.
    assert!((2..=4).contains(&lines.len()), "{log}");
    for line in &lines {
        let plain = line.starts_with("bt2sum: progress: ") && !line.ends_with(' ');
        assert!(plain && line.contains("B/s"), "{line:?}");
    }
    assert!(lines.last().unwrap().ends_with(", done"), "{log}");
}

#[test]
fn progress_options_override_each_other() {
    let data = pattern(1000);
    assert_eq!(stderr(&run(["--progress", "--no-progress"], &data)), "");
    assert_ne!(stderr(&run(["--no-progress", "--progress"], &data)), "");
    assert_eq!(stderr(&run(["--no-progress"], &data)), "");
}

#[test]
fn no_progress_into_a_pipe_by_default_even_for_long_work() {
    use std::io::Write;
    // Standard input trickles in for about two seconds: long enough for the
    // bar, which must still not appear in a pipe.
    let mut child = bt2sum().spawn_piped();
    let mut input = child.stdin.take().unwrap();
    let data = pattern(20 << 16);
    for chunk in data.chunks(1 << 16) {
        input.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert_eq!(stderr(&out), "");
    assert_eq!(out.stdout, run::<[&str; 0], _>([], &data).stdout);
}

#[test]
fn check_mode_shows_progress_when_forced() {
    let dir = super::dir_with(&[("data", &pattern(2 << 20))]);
    super::write_list(dir.path(), "SUMS", ["data"]);
    let (out, forced, code) = super::said_in(dir.path(), ["--progress", "-c", "SUMS"]);
    assert_eq!((out.as_str(), code), ("data: OK\n", 0));
    // The total, from the file system (a checksum line alone).
    assert_contains(&forced, "2.00 MiB / 2.00 MiB");
    // A list from a pipe is read once, by the check: it has no total.
    #[cfg(unix)]
    {
        super::mkfifo(&dir.path().join("PIPED"));
        let (fifo, sums) = (dir.path().join("PIPED"), fs::read(dir.path().join("SUMS")));
        std::thread::spawn(move || fs::write(fifo, sums.unwrap()));
        let (out, forced, code) = super::said_in(dir.path(), ["--progress", "-c", "PIPED"]);
        assert_eq!((out.as_str(), code), ("data: OK\n", 0));
        assert!(!forced.contains(" / "), "{forced}");
    }
    // From the stat and leaf lines (the file system's length, of a file
    // grown since, not asked); none for a list on standard input, or a
    // slice.
    super::write_list(dir.path(), "LISTED", ["--stat", "--leaves", "data"]);
    fs::write(dir.path().join("data"), pattern(3 << 20)).unwrap();
    let forced = super::run_in(dir.path(), ["--progress", "-c", "LISTED"], b"");
    assert_contains(&stderr(&forced), "3.00 MiB / 2.00 MiB");
    for args in [&["-c", "-"][..], &["-c", "--part", "1/1", "LISTED"]] {
        let forced = super::run_in(dir.path(), [&["--progress"][..], args].concat(), b"");
        let said = stderr(&forced);
        assert!(!said.contains(" / "), "{args:?}: {said}");
    }
}

/// A private tmux server, killed when dropped: its socket is a file in a
/// directory of the test's own, so no other server or session can clash
/// with it, and nothing is left behind. (Unix: tmux, and the shell it
/// runs.)
#[cfg(unix)]
struct Tmux {
    socket: PathBuf,
}

#[cfg(unix)]
impl Tmux {
    /// Starts `script` in a detached 200x30 session, in `dir` with `$B`
    /// naming the built binary; the shell then sleeps, to keep the screen.
    /// tmux runs it with the server's shell, which it takes from `SHELL`:
    /// `/bin/sh` here, whatever the user's is (csh, where root's still is
    /// on older BSDs), so that the script's `sh` syntax holds.
    fn start(dir: &Path, script: &str) -> Tmux {
        let quoted =
            |path: &Path| format!("'{}'", path.display().to_string().replace('\'', r"'\''"));
        let binary = quoted(Path::new(env!("CARGO_BIN_EXE_bt2sum")));
        let script = format!("cd {} && B={binary} && {script}; sleep 600", quoted(dir));
        let tmux = Tmux {
            socket: dir.join("tmux"),
        };
        let mut session: Vec<&str> = "new-session -d -s ux -x 200 -y 30".split(' ').collect();
        session.push(&script);
        let out = tmux.command(&session).env("SHELL", "/bin/sh").output();
        match out {
            Ok(out) => assert!(out.status.success(), "tmux: {}", stderr(&out)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => panic!(
                "tmux is not installed: the terminal test of the progress bar needs it \
                 (scripts/test-deps installs it)"
            ),
            Err(error) => panic!("cannot run tmux: {error}"),
        }
        tmux
    }

    /// A tmux command talking to this server, ignoring any user config.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args);
        command
    }

    /// Types `keys` (tmux key names: text, `Enter`, `C-d`).
    fn send(&self, keys: &[&str]) {
        let out = self.command(&["send-keys", "-t", "ux"]).args(keys).output();
        let out = out.expect("tmux send-keys");
        assert!(out.status.success(), "tmux: {}", stderr(&out));
    }

    /// The text on the screen now.
    fn screen(&self) -> String {
        let out = self.command(&["capture-pane", "-p", "-t", "ux"]).output();
        stdout(&out.expect("tmux"))
    }

    /// Polls the screen until `done` says yes, for up to a minute, and
    /// returns that screen; fails the test, saying `what` did not come, if
    /// it never does.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "{what}:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[cfg(unix)]
impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
        let _ = fs::remove_file(&self.socket);
    }
}

/// Feeds the FIFO at `path` with the vector pattern, 64 KiB every 50 ms,
/// until `stop` is set (or a minute has passed); returns the bytes written.
#[cfg(unix)]
fn feed_slowly(path: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        // (Blocks until bt2sum opens it; a test that fails before then
        // leaves the thread to end with the process.)
        let mut fifo = fs::OpenOptions::new().write(true).open(&path).unwrap();
        let stream = pattern(251 * 1024);
        let mut written = 0;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            // The pattern repeats every 251 bytes: continue where it left off.
            let start = written % 251;
            if fifo.write_all(&stream[start..start + (64 << 10)]).is_err() {
                break;
            }
            written += 64 << 10;
            std::thread::sleep(Duration::from_millis(50));
        }
        written
    })
}

/// (Unix: a FIFO, and tmux.)
#[cfg(unix)]
#[test]
fn progress_bar_in_a_real_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    super::mkfifo(&fifo);
    // Dropped before `dir`: the server goes first, then its socket's
    // directory.
    let tmux = Tmux::start(dir.path(), r#""$B" fifo missing; echo "exit status $?""#);
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = feed_slowly(fifo, Arc::clone(&stop));

    // The bar (bytes so far and the rate: the FIFO's size is unknown)
    // appears after about a second, while the input still trickles in.
    let screen = tmux.wait_for("no progress bar on the screen", |screen| {
        screen.contains("B/s") && (screen.contains("KiB") || screen.contains("MiB"))
    });
    stop.store(true, Ordering::Relaxed);
    let written = feeder.join().unwrap();
    assert!(!screen.contains("BLAKE2b"), "finished too early:\n{screen}");

    // When done: the checksum line, and the bar gone.
    let screen = tmux.wait_for("bt2sum did not finish", |screen| {
        screen.contains("exit status")
    });
    let digest = super::digest(&stdout(&run::<[&str; 0], _>([], &pattern(written))));
    assert_contains(&screen, &format!("BLAKE2b-64 (fifo) = {digest}"));
    // The error line came out whole, above the bar (still drawn then).
    let error = "bt2sum: missing: No such file or directory";
    assert!(
        screen.lines().any(|line| line.trim_end() == error),
        "{screen}"
    );
    assert_contains(&screen, "exit status 1");
    assert!(
        !screen.contains("B/s"),
        "the bar was left behind:\n{screen}"
    );
}

/// Ctrl-C clears the bar, whole, as the end of a run does: the bar of a
/// file of known size is as wide as bt2sum lets it be, and the terminal's
/// `^C` echo after it must not push the clearing off the bar's line. (Unix:
/// tmux, and the shell it runs.)
#[cfg(unix)]
#[test]
fn ctrl_c_clears_the_progress_bar() {
    let dir = tempfile::tempdir().unwrap();
    // A sparse file: long to hash, nothing on disk.
    let sparse = fs::File::create(dir.path().join("sparse")).unwrap();
    sparse.set_len(64 << 30).unwrap();
    // The shell survives Ctrl-C (a trap, which its children do not
    // inherit) to say how bt2sum ended.
    let script = r#"trap 'true' INT; "$B" --cpus 1 sparse; echo "exit status $?""#;
    let tmux = Tmux::start(dir.path(), script);
    let screen = tmux.wait_for("no progress bar", |screen| {
        screen.contains("/ 64.00 GiB") && screen.contains("ETA")
    });
    let bar = screen.lines().find(|line| line.contains("ETA")).unwrap();
    assert!(
        bar.trim_end().len() <= 198,
        "the bar fills the line:\n{screen}"
    );
    tmux.send(&["C-c"]);
    let screen = tmux.wait_for("bt2sum did not end", |screen| {
        screen.contains("exit status")
    });
    assert_contains(&screen, "exit status 130");
    for left in ["ETA", "GiB", "[="] {
        assert!(!screen.contains(left), "the bar was left behind:\n{screen}");
    }
}

/// Reading what is typed on the terminal, bt2sum draws no spinner over it
/// (hashing standard input, or reading a list from it); `--progress` still
/// forces the bar. (Unix: tmux, and the shell it runs.)
#[cfg(unix)]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn no_spinner_over_typing() {
    let dir = super::dir_with(&[("a", b"alpha")]);
    let list = super::ok_in(dir.path(), ["a"]);
    let script =
        r#""$B"; echo "first $?"; "$B" -c; echo "second $?"; "$B" --progress; echo "third $?""#;
    let tmux = Tmux::start(dir.path(), script);
    for (step, text, done) in [
        ("hash", "hello s3git", "first 0"),
        ("check", list.trim_end(), "second 0"),
    ] {
        // Well past the second after which a bar would appear.
        std::thread::sleep(Duration::from_millis(2500));
        let screen = tmux.screen();
        assert!(
            !screen.contains("B/s"),
            "{step}: a bar over the typing:\n{screen}"
        );
        tmux.send(&[text, "Enter", "C-d"]);
        let screen = tmux.wait_for(&format!("{step}: did not finish"), |s| s.contains(done));
        // (What follows is the next command's.)
        let step_screen = &screen[..screen.find(done).unwrap()];
        assert!(
            !step_screen.contains("B/s"),
            "{step}: a bar was drawn:\n{screen}"
        );
    }
    let screen = tmux.screen();
    assert_contains(&screen, &format!("BLAKE2b-64 = {}", super::HELLO_B64));
    assert_contains(&screen, "a: OK");
    // Forced, the bar is drawn even over the typing.
    tmux.wait_for("--progress drew no bar", |screen| screen.contains("B/s"));
    tmux.send(&["C-d"]);
    tmux.wait_for("did not finish", |screen| screen.contains("third 0"));
}
