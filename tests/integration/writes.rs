//! What bt2sum writes stays where the user meant: a repair writes only the
//! regular file the check saw, inside the directory bt2sum works in, not
//! through a symbolic link, not a set-id or hard-linked file unless asked;
//! `--update` rewrites only the list it read. Each test builds a tree with
//! the trap in it, runs the real binary, and checks that nothing outside
//! the files reported as repaired changed. (Unix: links, modes, FIFOs.)

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::{
    Retried, assert_contains, assert_starts, bt2sum, mkfifo, ok_bytes_in, output_within, rot,
    run_in, said_in, status, stderr, stdout, write_list,
};

/// A tree `t/` holding `f` (three leaves of 4096 bytes), its listing
/// `LEAVES` made in `t/`, and a good copy `mirror/f`.
fn tree() -> tempfile::TempDir {
    let good = super::noise(3 * 4096, 7);
    let dir = super::dir_with(&[("t/f", &good), ("mirror/f", &good)]);
    fs::create_dir(dir.path().join("outside")).unwrap();
    write_list(
        &dir.path().join("t"),
        "../LEAVES",
        ["-t", "4096", "--leaves", "f"],
    );
    dir
}

/// Runs `bt2sum -c --repair-from ../mirror ARGS ../LEAVES` in `t/`.
fn repair(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let args = ["-c", "--repair-from", "../mirror"].iter().chain(args);
    said_in(&dir.join("t"), args.chain(&["../LEAVES"]))
}

#[test]
fn names_outside_the_tree_are_written_only_when_asked() {
    let names = [
        ("../victim", "its name climbs out with '..'"),
        ("ABSOLUTE", "its name is absolute"),
    ];
    for (name, why) in names {
        let dir = tree();
        let good = fs::read(dir.path().join("t/f")).unwrap();
        let victim_path = dir.path().join("victim");
        let listed = match name {
            "ABSOLUTE" => victim_path.to_str().unwrap().to_string(),
            name => name.to_string(),
        };
        // The listing names the file outside, as a crafted list would; the
        // fetched copy has the listed bytes.
        fs::write(&victim_path, &good).unwrap();
        let t = dir.path().join("t");
        let listing = write_list(&t, "../LEAVES", ["-t", "4096", "--leaves", &listed]);
        fs::write(dir.path().join("fetched"), &good).unwrap();
        fs::write(&victim_path, b"the user's own file\n").unwrap();
        let before = snapshot(dir.path());
        let repair = "-c --repair-from ../fetched --repair-truncate";
        let out = run_in(&t, repair.split(' ').chain(["../LEAVES"]), b"");
        let err = stderr(&out);
        assert_eq!(status(&out), 1, "{name}: {err}");
        assert!(err.contains(why), "{name}: {err}");
        assert!(err.contains("--absolute-names allows it"), "{name}: {err}");
        assert_eq!(snapshot(dir.path()), before, "{name}: written");
        // Asked for, it is written.
        let out = run_in(&t, repair.split(' ').chain(["--absolute-names"]), &listing);
        assert_eq!(status(&out), 0, "{name}: {}", stderr(&out));
        assert_eq!(fs::read(&victim_path).unwrap(), good, "{name}");
    }
}

/// What the FIFO `t/fifo` of [`held_by_a_fifo`] passes.
const THROUGH_THE_FIFO: &[u8] = b"through the fifo";

/// Makes the FIFO `t/fifo` and appends its checksum line to the list `list`
/// (in `dir`), naming it `listed_as`; starts `bt2sum ARGS` in `t/`, reads
/// its standard output until a line starts with `until` (the FIFO holds
/// back what follows it in the list), runs `meanwhile`, then lets the FIFO
/// through: all the run printed, its standard error, and its status.
fn held_by_a_fifo(
    dir: &Path,
    list: &str,
    listed_as: &str,
    args: &str,
    until: &str,
    meanwhile: impl FnOnce(),
) -> (String, String, i32) {
    mkfifo(&dir.join("t/fifo"));
    let fifo_line = stdout(&run_in(dir, ["-"], THROUGH_THE_FIFO));
    let fifo_line = fifo_line.replace("(-)", &format!("({listed_as})"));
    let text = [fs::read(dir.join(list)).unwrap(), fifo_line.into_bytes()].concat();
    fs::write(dir.join(list), text).unwrap();
    let mut child = bt2sum()
        .args(args.split(' '))
        .current_dir(dir.join("t"))
        .spawn_piped();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut said = String::new();
    let reached = |said: &str| {
        said.lines()
            .last()
            .is_some_and(|line| line.starts_with(until))
    };
    while !reached(&said) {
        assert_ne!(out.read_line(&mut said).unwrap(), 0, "no {until}: {said}");
    }
    meanwhile();
    fs::write(dir.join("t/fifo"), THROUGH_THE_FIFO).unwrap();
    out.read_to_string(&mut said).unwrap();
    let output = output_within(child, Duration::from_secs(60));
    (said, stderr(&output), status(&output))
}

/// A file swapped for a link to a file outside, or rewritten, between its
/// check and its repair is not written.
#[test]
fn a_file_swapped_or_rewritten_after_the_check_is_not_written() {
    let edited = super::noise(3 * 4096, 99);
    let swaps = [
        (true, "it is a symbolic link"),
        (false, "it changed since it was checked"),
    ];
    for (swapped, why) in swaps {
        let dir = tree();
        let path = dir.path().join("t/f");
        rot(&path, [4096 + 10]);
        fs::write(dir.path().join("outside/target"), b"secret\n").unwrap();
        let outside = snapshot(&dir.path().join("outside"));
        // Once `f`'s verdict is out its check is done: the repairs wait
        // for the list's end, which the FIFO holds back.
        let args = "-c --repair-from ../mirror ../LEAVES";
        let meanwhile = || match swapped {
            true => {
                fs::remove_file(&path).unwrap();
                symlink("../outside/target", &path).unwrap();
            }
            false => fs::write(&path, &edited).unwrap(),
        };
        let (out, err, code) = held_by_a_fifo(dir.path(), "LEAVES", "fifo", args, "f: ", meanwhile);
        assert_starts(&out, "f: FAILED\n");
        assert_eq!(code, 1, "{out}{err}");
        assert!(!out.contains("REPAIRED"), "{out}");
        assert_contains(&err, &format!("f: cannot be repaired: {why}"));
        assert_eq!(
            snapshot(&dir.path().join("outside")),
            outside,
            "the link's target"
        );
        if !swapped {
            assert_eq!(fs::read(&path).unwrap(), edited);
        }
    }
}

#[test]
fn set_id_and_hard_linked_files_are_written_only_when_asked() {
    let dir = tree();
    let path = dir.path().join("t/f");
    rot(&path, [4096 + 10]);
    let damaged = fs::read(&path).unwrap();
    for mode in [0o4755, 0o2755, 0o6755] {
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        let (_, err, code) = repair(dir.path(), &[]);
        assert_eq!(code, 1, "mode {mode:o}");
        assert_contains(&err, "it is set-user-ID or set-group-ID");
        assert_contains(&err, "--repair-setid allows it");
        assert_eq!(fs::read(&path).unwrap(), damaged);
    }
    // Asked for, it is mended, and no set-id bit is set that a write
    // cleared.
    let (out, err, code) = repair(dir.path(), &["--repair-setid"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "f: leaf 1: REPAIRED");
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode & !0o6000, 0o755);
    // A file with a second name outside the tree.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    rot(&path, [4096 + 10]);
    let damaged = fs::read(&path).unwrap();
    fs::hard_link(&path, dir.path().join("outside/other-name")).unwrap();
    let (_, err, code) = repair(dir.path(), &[]);
    assert_eq!(code, 1);
    assert_contains(&err, "it has 2 hard links");
    assert_eq!(
        fs::read(dir.path().join("outside/other-name")).unwrap(),
        damaged
    );
    assert_eq!(repair(dir.path(), &["--absolute-names"]).2, 0);
}

#[test]
fn a_list_that_names_a_file_with_two_contents_repairs_neither() {
    let dir = tree();
    let path = dir.path().join("t/f");
    // Listed before an edit (the mirror has that version), and after.
    let edited = super::noise(3 * 4096, 8);
    fs::write(&path, &edited).unwrap();
    let mut list = fs::read(dir.path().join("LEAVES")).unwrap();
    list.extend(ok_bytes_in(
        &dir.path().join("t"),
        ["-t", "4096", "--leaves", "f"],
    ));
    fs::write(dir.path().join("LEAVES"), list).unwrap();
    let (out, err, code) = repair(dir.path(), &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("REPAIRED"), "{out}");
    let two = "f: cannot be repaired: the list gives it two different contents (lines 1 and 5)";
    assert_contains(&err, two);
    assert_eq!(fs::read(&path).unwrap(), edited);
}

/// A tree `t/` of files `a` and `b` listed in `SUMS` beside it with stat
/// lines, made from inside it.
fn archive() -> tempfile::TempDir {
    let dir = super::dir_with(&[("t/a", b"file a\n"), ("t/b", b"file b\n")]);
    write_list(&dir.path().join("t"), "../SUMS", ["-r", "--stat", "."]);
    dir
}

/// Runs `bt2sum -c --audit . --update LIST` in `t/`.
fn update(dir: &Path, list: &str) -> (String, String, i32) {
    said_in(&dir.join("t"), ["-c", "--audit", ".", "--update", list])
}

/// Whether an audit of `t/` against `SUMS` finds every file OK.
fn audits_clean(dir: &Path) -> bool {
    let out = run_in(&dir.join("t"), ["-c", "--audit", ".", "../SUMS"], b"");
    status(&out) == 0
}

/// An update keeps a comment and a blank line among the lines of a file it
/// hashes again, and ends a last line that has no newline before it adds
/// a file's lines after it.
#[test]
fn an_update_keeps_comments_and_ends_a_last_line_that_has_no_newline() {
    let dir = archive();
    let sums = dir.path().join("SUMS");
    let list = String::from_utf8(fs::read(&sums).unwrap()).unwrap();
    // A comment and a blank line between `a`'s checksum and stat lines.
    let (first, rest) = list.split_once('\n').unwrap();
    let last = rest.strip_suffix('\n').unwrap();
    fs::write(&sums, format!("{first}\n# a's note\n\n{last}")).unwrap();
    fs::write(dir.path().join("t/a"), b"file a, edited\n").unwrap();
    fs::write(dir.path().join("t/c"), b"file c\n").unwrap();
    let (out, err, code) = update(dir.path(), "../SUMS");
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&err, "1 file added, 1 hashed again");
    let updated = fs::read_to_string(&sums).unwrap();
    assert_contains(&updated, "\n# a's note\n\n");
    assert_contains(&updated, &format!("{}\n", last.lines().last().unwrap()));
    assert!(audits_clean(dir.path()), "{updated}");
}

#[test]
fn an_update_refuses_a_list_that_changed_while_it_ran() {
    let dir = archive();
    let sums = dir.path().join("SUMS");
    fs::write(dir.path().join("t/c"), b"file c\n").unwrap();
    // A FIFO listed last holds the audit until the list has changed.
    let mut edited = Vec::new();
    let args = "-c --audit . --update ../SUMS";
    let (_, err, code) = held_by_a_fifo(dir.path(), "SUMS", "./fifo", args, "./b: ", || {
        // Another update, or an edit, came first.
        edited = [fs::read(&sums).unwrap(), b"# edited meanwhile\n".to_vec()].concat();
        fs::write(&sums, &edited).unwrap();
    });
    assert_eq!(code, 1, "{err}");
    assert_contains(&err, "../SUMS: not updated: it changed while the audit ran");
    assert_eq!(fs::read(&sums).unwrap(), edited);
}

/// A moved file edited after the update hashed it, before the update
/// writes the list (while it hashes a big new file after it): the list
/// gets the stat line of the version hashed, so that an audit after finds
/// it CHANGED (an edit), never FAILED (damage). (Linux: `/proc/PID/fd`
/// tells when the big file is open.)
#[cfg(target_os = "linux")]
#[test]
fn an_update_writes_the_stat_a_file_had_when_it_was_hashed() {
    let dir = archive();
    let root = dir.path().join("t");
    fs::rename(root.join("a"), root.join("a2")).unwrap();
    fs::write(root.join("big"), super::pattern(64 << 20)).unwrap();
    let child = bt2sum()
        .args(["-c", "--audit", ".", "--update", "../SUMS"])
        .current_dir(&root)
        .spawn_piped();
    super::wait_until_open(child.id(), &root.join("big"));
    // The same size, another content, a new time.
    fs::write(root.join("a2"), b"file A\n").unwrap();
    let output = output_within(child, Duration::from_secs(60));
    assert_contains(&stdout(&output), "./a2: MOVED from ./a");
    let audit = run_in(&root, ["-c", "--audit", ".", "../SUMS"], b"");
    assert_eq!(stdout(&audit), "./a2: CHANGED\n./b: OK\n./big: OK\n");
}

#[test]
fn an_update_rewrites_a_linked_lists_target_and_keeps_its_owner() {
    let dir = archive();
    let list = dir.path().join("lists/SUMS");
    fs::create_dir(dir.path().join("lists")).unwrap();
    fs::rename(dir.path().join("SUMS"), &list).unwrap();
    symlink("lists/SUMS", dir.path().join("SUMS")).unwrap();
    fs::set_permissions(&list, fs::Permissions::from_mode(0o604)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        std::os::unix::fs::chown(&list, Some(65534), Some(65534)).unwrap();
    } else {
        let test = "an_update_rewrites_a_linked_lists_target_and_keeps_its_owner";
        super::skip(
            test,
            "not root: the list's owner is not changed to another user's",
        );
    }
    fs::write(dir.path().join("t/c"), b"file c\n").unwrap();
    let (out, err, code) = update(dir.path(), "../SUMS");
    assert_eq!(code, 0, "{out}{err}");
    let link = fs::symlink_metadata(dir.path().join("SUMS")).unwrap();
    assert!(link.is_symlink());
    let metadata = fs::metadata(&list).unwrap();
    assert_eq!(metadata.permissions().mode() & 0o7777, 0o604);
    if root {
        use std::os::unix::fs::MetadataExt;
        assert_eq!((metadata.uid(), metadata.gid()), (65534, 65534));
    }
    assert_contains(
        &fs::read_to_string(dir.path().join("SUMS")).unwrap(),
        "(./c)",
    );
    assert!(audits_clean(dir.path()));
}

/// An update ended by a signal at any moment leaves the list as it was, or
/// whole and new: 200 new files taken in on one thread, under each stop
/// signal, and 300 under SIGKILL; and, with `--quiet`, SIGHUP as the
/// update of 5 creates its temporary file (the run writes nothing that
/// would make it wait for its end, so it went on to the update while the
/// signal's last words were spoken, and a file it made after them was left
/// behind, once in about a thousand runs signalled at random). A stop
/// signal leaves no temporary file; what SIGKILL leaves beside the list,
/// which lives in the tree it lists, is never new: an update run to its end
/// writes the same list, and an audit then finds nothing to say.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn an_update_ended_by_a_signal_leaves_the_old_list_or_the_new_one_whole() {
    let test = "an_update_ended_by_a_signal_leaves_the_old_list_or_the_new_one_whole";
    if super::emulated(test) {
        return;
    }
    let every = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    // New files, an option, rounds, and the signal's delay in steps of a
    // whole update's time: `took * (round % steps) / per`.
    for (new, option, rounds, steps, per, signals) in [
        (200, "--cpus=1", 60u32, 20, 16, &every[..]),
        (5, "--quiet", 400, 100, 100, &every[2..]),
        (300, "--cpus=1", 40, 40, 20, &[libc::SIGKILL][..]),
    ] {
        let dir = archive();
        let root = dir.path().join("t");
        let sums = root.join("SUMS");
        fs::rename(dir.path().join("SUMS"), &sums).unwrap();
        for index in 0..new {
            let name = root.join(format!("new{index:03}"));
            fs::write(name, format!("new {index}\n")).unwrap();
        }
        let list = fs::read(&sums).unwrap();
        let start = || {
            super::signals::stoppable()
                .current_dir(&root)
                .args(["-c", option, "--audit", ".", "--update", "SUMS"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let started = std::time::Instant::now();
        assert!(start().wait().unwrap().success());
        let took = started.elapsed();
        let updated = fs::read(&sums).unwrap();
        assert_ne!(updated, list);
        for round in 0..rounds {
            fs::write(&sums, &list).unwrap();
            let signal = signals[round as usize % signals.len()];
            let child = start();
            std::thread::sleep(took * (round % steps) / per);
            // SAFETY: signals a child of this test's, not yet waited for.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            let _ = output_within(child, Duration::from_secs(60));
            let case = format!("{option}, round {round}, signal {signal}");
            let now = fs::read(&sums).unwrap();
            assert!(now == list || now == updated, "{case}: a mixed list");
            let left: Vec<_> = fs::read_dir(&root)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .filter(|name| name.to_string_lossy().starts_with(".bt2sum-update-"))
                .collect();
            assert!(
                signal == libc::SIGKILL || left.is_empty(),
                "{case}: {left:?} left"
            );
        }
        assert!(start().wait().unwrap().success());
        assert!(
            fs::read(&sums).unwrap() == updated,
            "{option}: not the list an update writes"
        );
        let (out, _, code) = said_in(&root, "-c --quiet --audit . SUMS".split(' '));
        assert_eq!((out.as_str(), code), ("", 0), "{option}");
    }
}

/// On a read-only mount (the spinning-disk model, a FUSE file system)
/// nothing can be written, whoever asks, and each writer says so in plain
/// words: a repair leaves the damaged file as it is; a check with a ledger
/// fails without a verdict, since what it proves could not be kept; a list
/// is not updated.
#[cfg(target_os = "linux")]
#[test]
fn writers_on_a_read_only_mount_say_so_plainly() {
    let test = "writers_on_a_read_only_mount_say_so_plainly";
    if super::emulated(test) {
        return;
    }
    let dir = archive();
    let source = dir.path().join("source");
    let good = super::noise(4 * 4096, 3);
    let files = [
        ("source/f", &good[..]),
        ("copy/f", &good),
        ("t/c", b"file c\n"),
    ];
    super::write_files(dir.path(), &files);
    fs::rename(dir.path().join("SUMS"), source.join("SUMS")).unwrap();
    let listing = write_list(&source, "LEAVES", ["-t", "4096", "--leaves", "f"]);
    // The same list with a ledger.
    fs::write(source.join("KEPT"), listing).unwrap();
    ok_bytes_in(&source, ["-c", "--max-duration", "1h", "KEPT"]);
    rot(&source.join("f"), [4096 + 10]);
    let damaged = fs::read(source.join("f")).unwrap();
    let mountpoint = dir.path().join("mounted");
    let Some(mounted) = super::Mounted::counting_disk(test, &source, &mountpoint) else {
        return;
    };
    let (_, err, code) = said_in(
        &mountpoint,
        "-c --quiet --repair-from ../copy LEAVES".split(' '),
    );
    let read_only = "bt2sum: f: cannot be repaired: cannot be written: Read-only file system\n";
    assert_eq!(code, 1);
    assert_contains(&err, read_only);
    let (out, err, code) = said_in(&mountpoint, "-c --max-duration 1h KEPT".split(' '));
    let ledger = err.contains("cannot open the ledger") && err.contains("Read-only file system");
    assert!(ledger, "{err}");
    assert_eq!((out.as_str(), code), ("", 1));
    let (_, err, code) = update(dir.path(), "../mounted/SUMS");
    assert_eq!(code, 1);
    let read_only = "bt2sum: ../mounted/SUMS: not updated: cannot create a temporary file in \
                     ../mounted: Read-only file system\n";
    super::assert_ends(&err, read_only);
    drop(mounted);
    assert_eq!(fs::read(source.join("f")).unwrap(), damaged);
}

/// Every file under `dir`, with its bytes, mode and modification time.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>, u32, std::time::SystemTime)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in fs::read_dir(directory).unwrap() {
            let path = entry.unwrap().path();
            let metadata = fs::symlink_metadata(&path).unwrap();
            if metadata.is_dir() {
                pending.push(path);
            } else if metadata.is_file() {
                let (mode, time) = (metadata.permissions().mode(), metadata.modified().unwrap());
                files.push((path.clone(), fs::read(&path).unwrap(), mode, time));
            }
        }
    }
    files.sort();
    files
}

/// One tree with every trap at once: a repair with `--repair-truncate`,
/// then an update, write no byte outside the file they report repairing
/// and the list, and report each refusal.
#[test]
fn no_byte_is_written_outside_what_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (t, outside) = (dir.path().join("t"), dir.path().join("outside"));
    fs::create_dir_all(outside.join("dir")).unwrap();
    let good = super::noise(3 * 4096, 5);
    let names = ["good", "link", "sub/f", "fifo", "hard", "setid"];
    for name in names.iter().chain(&["../outside/abs", "../outside/climb"]) {
        super::write_files(&t, &[(name, &good)]);
    }
    let outside_name = outside.join("abs");
    let absolute = outside_name.to_str().unwrap();
    let mut args = vec!["-t", "4096", "--leaves"];
    args.extend(names);
    args.extend(["../outside/climb", absolute]);
    write_list(&t, "../LEAVES", &args);
    // The mirror holds good copies of every name; the tree and the files
    // outside are then damaged and trapped.
    for name in names
        .iter()
        .chain(&["outside/climb", absolute.trim_start_matches('/')])
    {
        super::write_files(&dir.path().join("mirror"), &[(name, &good)]);
    }
    for name in ["good", "setid"] {
        rot(&t.join(name), [4096 + 10]);
    }
    fs::set_permissions(t.join("setid"), fs::Permissions::from_mode(0o4755)).unwrap();
    for (name, target) in [("link", "../outside/a"), ("sub", "../outside/dir")] {
        let path = t.join(name);
        match fs::symlink_metadata(&path).unwrap().is_dir() {
            true => fs::remove_dir_all(&path).unwrap(),
            false => fs::remove_file(&path).unwrap(),
        }
        symlink(target, path).unwrap();
    }
    // A set-user-ID file behind the link; a file longer than listed, which
    // --repair-truncate would cut, behind the linked directory.
    fs::write(outside.join("a"), b"short\n").unwrap();
    fs::set_permissions(outside.join("a"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::write(outside.join("dir/f"), [&good[..], b"longer"].concat()).unwrap();
    fs::remove_file(t.join("hard")).unwrap();
    fs::write(outside.join("h"), b"other bytes\n").unwrap();
    fs::hard_link(outside.join("h"), t.join("hard")).unwrap();
    fs::remove_file(t.join("fifo")).unwrap();
    mkfifo(&t.join("fifo"));
    for name in ["climb", "abs"] {
        rot(&outside.join(name), [4096 + 10]);
    }
    let before = snapshot(&outside);
    let fifo = t.join("fifo");
    let writer = std::thread::spawn(move || {
        let _ = fs::OpenOptions::new()
            .write(true)
            .open(fifo)
            .and_then(|mut f| f.write_all(b"x"));
    });
    let (out, err, code) = repair(dir.path(), &["--repair-truncate"]);
    writer.join().unwrap();
    assert_eq!(code, 1);
    assert_contains(&out, "good: leaf 1: REPAIRED");
    assert_eq!(out.matches("REPAIRED").count(), 1, "{out}");
    for refusal in [
        "link: cannot be repaired: it is a symbolic link",
        "sub/f: cannot be repaired: sub is a symbolic link on its way",
        "fifo: cannot be repaired: it is not a regular file",
        "hard: cannot be repaired: it has 2 hard links",
        "setid: cannot be repaired: it is set-user-ID or set-group-ID",
        "../outside/climb: cannot be repaired: its name climbs out with '..'",
        "cannot be repaired: its name is absolute",
    ] {
        assert!(err.contains(refusal), "{refusal}: {err}");
    }
    assert_eq!(snapshot(&outside), before);
    // An update writes the list, and nothing else.
    write_list(&t, "../SUMS", ["--stat", "-r", "."]);
    fs::write(t.join("new"), b"new\n").unwrap();
    let (out, err, code) = update(dir.path(), "../SUMS");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(snapshot(&outside), before);
    assert_contains(
        &fs::read_to_string(dir.path().join("SUMS")).unwrap(),
        "(./new)",
    );
}

/// A list with a second name (replacing it would split them), or one that
/// is not a regular file, is refused before anything is read or written:
/// the update of a FIFO never waits for a writer.
#[test]
fn an_update_refuses_a_hard_linked_list_or_a_fifo() {
    let dir = archive();
    fs::hard_link(dir.path().join("SUMS"), dir.path().join("SUMS.too")).unwrap();
    mkfifo(&dir.path().join("FIFO"));
    let list = fs::read(dir.path().join("SUMS")).unwrap();
    fs::write(dir.path().join("t/c"), b"file c\n").unwrap();
    let split = "it has 2 hard links, which replacing it would split (update a copy of it)";
    for (name, why) in [("../SUMS", split), ("../FIFO", "it is not a regular file")] {
        let child = bt2sum()
            .args(["-c", "--audit", ".", "--update", name])
            .current_dir(dir.path().join("t"))
            .spawn_piped();
        let out = output_within(child, Duration::from_secs(20));
        let refused = format!("bt2sum: {name}: not updated: {why}\n");
        super::assert_output(&out, "", &refused, 1);
    }
    assert_eq!(fs::read(dir.path().join("SUMS")).unwrap(), list);
    assert_eq!(fs::read(dir.path().join("SUMS.too")).unwrap(), list);
}

/// The update of `parent/dir/SUMS` with what `t` holds.
#[cfg(target_os = "linux")]
const UPDATE_PARENT: &str = "-c --quiet --audit t --update parent/dir/SUMS";

/// While another thread swaps the list's parent directory with a symbolic
/// link to another directory (`renameat2` with `RENAME_EXCHANGE`, again and
/// again), hundreds of updates each either rewrite the list they read, in
/// its own directory, or are refused: the other directory's list never
/// changes, no temporary file is left anywhere, and the list is whole.
/// (Linux: `renameat2`.)
#[cfg(target_os = "linux")]
#[test]
fn an_update_never_writes_through_a_directory_swapped_for_a_link() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let test = "an_update_never_writes_through_a_directory_swapped_for_a_link";
    if super::emulated_too_slow(test) {
        return;
    }
    let victim = b"the other directory's list\n";
    let dir = super::dir_with(&[("t/a", b"file a\n"), ("victim/dir/SUMS", victim)]);
    let base = dir.path();
    fs::create_dir_all(base.join("parent/dir")).unwrap();
    write_list(base, "parent/dir/SUMS", ["-r", "--stat", "t"]);
    symlink("victim", base.join("link")).unwrap();
    let exchange = |base: &Path| -> std::io::Result<()> {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        let (parent, link) = (base.join("parent"), base.join("link"));
        Ok(renameat_with(
            CWD,
            &parent,
            CWD,
            &link,
            RenameFlags::EXCHANGE,
        )?)
    };
    if let Err(error) = exchange(base).and_then(|()| exchange(base)) {
        return super::skip(test, &format!("renameat2 cannot exchange here: {error}"));
    }
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, base) = (std::sync::Arc::clone(&stop), base.to_path_buf());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                exchange(&base).unwrap();
                swaps += 1;
            }
            // Left with the real directory at `parent`.
            if swaps % 2 == 1 {
                exchange(&base).unwrap();
            }
            swaps
        })
    };
    let (mut updated, mut refused) = (0, 0);
    for round in 0..300 {
        fs::write(base.join(format!("t/new{round}")), format!("{round}\n")).unwrap();
        let out = run_in(base, UPDATE_PARENT.split(' '), b"");
        let err = stderr(&out);
        match status(&out) {
            0 => updated += 1,
            _ if err.contains("parent/dir/SUMS: not updated: ") => refused += 1,
            _ => panic!("round {round}: {}{err}", stdout(&out)),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{updated} updated, {refused} refused, {swaps} swaps");
    assert!(updated > 0);
    let other = fs::read(base.join("victim/dir/SUMS")).unwrap();
    let kept = other == victim;
    assert!(
        kept,
        "the other directory's list was replaced: {} bytes",
        other.len()
    );
    for directory in ["parent/dir", "victim/dir", "victim", "parent", "t", ""] {
        for entry in fs::read_dir(base.join(directory)).unwrap() {
            let name = entry.unwrap().file_name();
            let temporary = name.to_string_lossy().starts_with(".bt2sum-update-");
            assert!(!temporary, "{directory}: {name:?}");
        }
    }
    // The list is whole: one more update takes in what the refused ones
    // did not, and an audit then finds every file as listed.
    assert_eq!(status(&run_in(base, UPDATE_PARENT.split(' '), b"")), 0);
    let audit = run_in(base, ["-c", "--audit", "t", "parent/dir/SUMS"], b"");
    let clean = "bt2sum: audited 301 files: 301 OK\n";
    assert_eq!((stderr(&audit).as_str(), status(&audit)), (clean, 0));
    assert_eq!(stdout(&audit).lines().count(), 301);
}
