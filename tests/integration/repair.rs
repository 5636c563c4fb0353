//! Mending damaged leaves from a good copy (`-c --repair-from`), on real
//! files: one, several and all leaves; files cut short or grown; copies
//! damaged, short, missing or the file itself; files that cannot be
//! written; lists without leaf lines; kills at any moment followed by a
//! second run. After each, the file verifies against its listing, or is
//! unchanged; and only the damaged leaves' bytes are read from the copy.
//! (Unix: modes, `kill`.)

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::{
    Retried, assert_contains, assert_ends, assert_starts, bt2sum, noise, rot, run_in, said_in,
    status, stderr, stdout,
};

/// The leaf size of these tests' listings.
const LEAF: usize = 4096;

/// A directory holding `name` (of `len` bytes), its good copy under
/// `copy/`, and its leaf listing `LEAVES`.
fn listed_file(name: &str, len: usize) -> (tempfile::TempDir, Vec<u8>) {
    let good = noise(len, len as u64);
    (listed_with(name, &good, &["--leaves"]), good)
}

/// Rots a byte in each of leaves `leaves` of the file at `path`.
fn damage(path: &Path, leaves: &[usize]) {
    rot(path, leaves.iter().map(|leaf| leaf * LEAF + 123));
}

/// Runs `bt2sum -c ARGS LEAVES` in `dir`: standard output, error, status.
fn check(dir: &Path, args: &[&str]) -> (String, String, i32) {
    said_in(dir, ["-c"].iter().chain(args).chain(&["LEAVES"]))
}

/// Runs `bt2sum -c --quiet --repair-from copy LEAVES` in `dir`.
fn mend(dir: &Path) -> (String, String, i32) {
    check(dir, &["--quiet", "--repair-from", "copy"])
}

/// `good` with `name` and its copy under `copy/` in a new directory, listed
/// in `LEAVES` by `bt2sum -t 4096 ARGS name`.
fn listed_with(name: &str, good: &[u8], args: &[&str]) -> tempfile::TempDir {
    let dir = super::dir_with(&[(name, good), (&format!("copy/{name}"), good)]);
    super::write_list(
        dir.path(),
        "LEAVES",
        ["-t", "4096"].iter().chain(args).chain([&name]),
    );
    dir
}

/// Whether the file verifies against its listing now.
fn verifies(dir: &Path) -> bool {
    check(dir, &["--status"]).2 == 0
}

#[test]
fn one_several_and_all_leaves_are_repaired() {
    for damaged in [&[3][..], &[0, 5, 9], &(0..13).collect::<Vec<_>>()] {
        // 12 whole leaves and a short last one.
        let (dir, good) = listed_file("f", 12 * LEAF + 1000);
        let path = dir.path().join("f");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        damage(&path, damaged);
        let (out, err, code) = mend(dir.path());
        let verdicts = |verdict| -> String {
            let lines = damaged
                .iter()
                .map(|leaf| format!("f: leaf {leaf}: {verdict}\n"));
            lines.collect()
        };
        let expected = format!("f: FAILED\n{}{}", verdicts("FAILED"), verdicts("REPAIRED"));
        let repaired = match damaged.len() {
            1 => "1 damaged leaf was repaired".to_string(),
            count => format!("{count} damaged leaves were repaired"),
        };
        let summary =
            format!("bt2sum: WARNING: 1 computed checksum did NOT match\nbt2sum: {repaired}\n");
        assert_eq!((out, err, code), (expected, summary, 0));
        assert_eq!(fs::read(&path).unwrap(), good);
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o640);
        // Nothing left to do.
        assert_eq!(
            check(dir.path(), &["--repair-from", "copy"]),
            ("f: OK\n".into(), String::new(), 0)
        );
    }
}

#[test]
fn a_file_cut_short_is_extended_with_leaves_that_verify() {
    for cut in [0, 1, 3 * LEAF, 3 * LEAF + 17, 12 * LEAF + 999] {
        let (dir, good) = listed_file("f", 12 * LEAF + 1000);
        let path = dir.path().join("f");
        fs::write(&path, &good[..cut]).unwrap();
        let (_, err, code) = mend(dir.path());
        assert_eq!(code, 0, "cut at {cut}: {err}");
        assert_eq!(fs::read(&path).unwrap(), good, "cut at {cut}");
    }
    // A leaf the copy cannot give is a hole the leaves after it are never
    // written past.
    let (dir, good) = listed_file("f", 12 * LEAF + 1000);
    let path = dir.path().join("f");
    fs::write(&path, &good[..5 * LEAF]).unwrap();
    damage(&dir.path().join("copy/f"), &[7]);
    let (out, err, code) = mend(dir.path());
    assert_contains(&out, "f: leaf 5: REPAIRED\nf: leaf 6: REPAIRED\n");
    assert!(out.contains("f: leaf 7: FAILED (the copy's leaf does not match either)\n"));
    for leaf in 8..13 {
        let why = "the file ends before it, and leaves before it are not mended";
        assert_contains(&out, &format!("f: leaf {leaf}: FAILED ({why})\n"));
    }
    let (short, listed) = (7 * LEAF, 12 * LEAF + 1000);
    assert_contains(
        &err,
        &format!("bt2sum: f: is still {short} bytes long, shorter than its listed {listed}\n"),
    );
    assert_ends(
        &err,
        "bt2sum: WARNING: 6 damaged leaves could not be repaired\n",
    );
    assert_eq!(code, 1);
    assert_eq!(fs::read(&path).unwrap(), good[..7 * LEAF]);
}

#[test]
fn a_longer_file_is_cut_only_when_asked() {
    let (dir, good) = listed_file("f", 5 * LEAF + 10);
    let path = dir.path().join("f");
    let mut longer = good.clone();
    longer.extend(b"appended");
    fs::write(&path, &longer).unwrap();
    let (out, err, code) = mend(dir.path());
    assert_eq!(out, "f: FAILED\nf: leaf 5: FAILED\n");
    assert_contains(
        &err,
        "bt2sum: f: is 20498 bytes long, longer than its listed 20490: left as it is (--repair-truncate cuts it)\n",
    );
    assert_eq!(code, 1);
    assert_eq!(fs::read(&path).unwrap(), longer);
    let args = ["--quiet", "--repair-from", "copy", "--repair-truncate"];
    let (out, err, code) = check(dir.path(), &args);
    assert_eq!(out, "f: FAILED\nf: leaf 5: FAILED\n");
    assert_contains(
        &err,
        "bt2sum: f: was 20498 bytes long: cut to its listed length, 20490 bytes\n",
    );
    assert_eq!(code, 0);
    assert_eq!(fs::read(&path).unwrap(), good);
    // Damaged and longer: mended, then cut.
    damage(&path, &[2]);
    fs::write(&path, [fs::read(&path).unwrap(), b"more".to_vec()].concat()).unwrap();
    let (out, _, code) = check(dir.path(), &args);
    assert_ends(&out, "f: leaf 2: REPAIRED\n");
    assert_eq!(code, 0);
    assert_eq!(fs::read(&path).unwrap(), good);
}

#[test]
fn a_damaged_short_missing_or_same_copy_changes_nothing() {
    let (dir, good) = listed_file("f", 8 * LEAF);
    let path = dir.path().join("f");
    let copy = dir.path().join("copy/f");
    damage(&path, &[1, 6]);
    let damaged = fs::read(&path).unwrap();
    // The copy damaged at one of the two leaves: the other is mended.
    damage(&copy, &[6]);
    let (out, err, code) = mend(dir.path());
    assert!(out.ends_with(
        "f: leaf 1: REPAIRED\nf: leaf 6: FAILED (the copy's leaf does not match either)\n"
    ));
    assert!(err.ends_with(
        "bt2sum: 1 damaged leaf was repaired\nbt2sum: WARNING: 1 damaged leaf could not be repaired\n"
    ));
    assert_eq!(code, 1);
    let mut expected = good.clone();
    expected[6 * LEAF..7 * LEAF].copy_from_slice(&damaged[6 * LEAF..7 * LEAF]);
    assert_eq!(fs::read(&path).unwrap(), expected);
    // A copy that ends before the leaf.
    fs::write(&copy, &good[..6 * LEAF + 100]).unwrap();
    let (out, _, code) = mend(dir.path());
    assert_ends(
        &out,
        "f: leaf 6: FAILED (the copy ends before the leaf does)\n",
    );
    assert_eq!(code, 1);
    assert_eq!(fs::read(&path).unwrap(), expected);
    // No copy at all: said once, before anything is checked.
    let (out, err, code) = check(dir.path(), &["--quiet", "--repair-from", "none"]);
    assert_eq!((out.as_str(), code), ("", 1));
    assert_starts(
        &err,
        "bt2sum: none: the copies given to --repair-from: No such file or directory \
             (looked for from ",
    );
    // The file itself.
    let (out, err, code) = check(dir.path(), &["--quiet", "--repair-from", "."]);
    assert_eq!(out, "f: FAILED\nf: leaf 6: FAILED\n");
    assert_contains(
        &err,
        "bt2sum: f: cannot be repaired: its copy ./f is the file itself\n",
    );
    assert_ends(
        &err,
        "bt2sum: WARNING: 1 damaged leaf could not be repaired\n",
    );
    assert_eq!(code, 1);
    assert_eq!(fs::read(&path).unwrap(), expected);
}

#[test]
fn copies_are_found_by_name_under_a_directory_or_given_as_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = ["a", "sub/b", "sub/deeper/c"];
    let mut goods = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let good = noise(3 * LEAF + i, i as u64 + 40);
        super::write_files(root, &[(name, &good), (&format!("copy/{name}"), &good)]);
        goods.push(good);
    }
    let args = ["-t", "4096", "--leaves", "a", "sub/b", "./sub/deeper/c"];
    super::write_list(root, "LEAVES", args);
    for name in names {
        damage(&root.join(name), &[1]);
    }
    let (out, _, code) = check(root, &["--quiet", "--repair-from", "copy"]);
    assert_eq!(out.matches("REPAIRED").count(), 3, "{out}");
    assert_eq!(code, 0);
    // One file as the copy: of the first file it mends, no other.
    for name in names {
        damage(&root.join(name), &[2]);
    }
    let (out, err, code) = check(root, &["--quiet", "--repair-from", "copy/a"]);
    assert_contains(&out, "a: leaf 2: REPAIRED\n");
    assert_contains(
        &err,
        "bt2sum: sub/b: cannot be repaired: the copy given is one file, the copy of a: give a directory of copies\n",
    );
    assert_eq!(code, 1);
    assert_eq!(fs::read(root.join("a")).unwrap(), goods[0]);
    assert_ne!(fs::read(root.join("sub/b")).unwrap(), goods[1]);
}

#[test]
fn a_file_that_cannot_be_written_is_told_so() {
    let (dir, good) = listed_file("f", 4 * LEAF);
    let path = dir.path().join("f");
    damage(&path, &[2]);
    let damaged = fs::read(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let (out, err, code) = mend(dir.path());
    // Root may write any file: it is mended, and stays read-only.
    let root = fs::File::options().write(true).open(&path).is_ok();
    if root {
        let repaired = "f: FAILED\nf: leaf 2: FAILED\nf: leaf 2: REPAIRED\n";
        assert_eq!((out.as_str(), code), (repaired, 0));
        assert_eq!(fs::read(&path).unwrap(), good);
    } else {
        assert_contains(
            &err,
            "bt2sum: f: cannot be repaired: cannot be written: Permission denied\n",
        );
        assert_eq!(code, 1);
        assert_eq!(fs::read(&path).unwrap(), damaged);
    }
    let mode = fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o444);
}

/// A repaired file gets its stat line's modification time back: the next
/// rot in it is damage again (FAILED, repaired again), never an edit that
/// an update would take into the list. An edit is not reverted.
#[test]
fn a_repair_keeps_the_stat_line_true_so_the_next_rot_is_damage() {
    let good = noise(3 * LEAF + 100, 9);
    let dir = super::dir_with(&[("tree/v.mp4", &good), ("backup/v.mp4", &good)]);
    let made = super::write_list(
        dir.path(),
        "SUMS",
        "-C tree -r --stat --leaves -t 4k .".split(' '),
    );
    let path = dir.path().join("tree/v.mp4");
    let listed = fs::metadata(&path).unwrap().modified().unwrap();
    let repair = || {
        let args = "-C tree -c --quiet --repair-from ../backup ../SUMS".split(' ');
        said_in(dir.path(), args)
    };
    let audit = ["-C", "tree", "-c", "--quiet", "--audit", ".", "../SUMS"];

    rot(&path, [10]);
    let (out, err, code) = repair();
    let repaired = "./v.mp4: FAILED\n./v.mp4: leaf 0: FAILED\n./v.mp4: leaf 0: REPAIRED\n";
    assert_eq!((out.as_str(), code), (repaired, 0), "{err}");
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), listed);

    rot(&path, [2 * LEAF + 7]);
    let (out, _, code) = said_in(dir.path(), audit);
    assert_eq!(
        (out.as_str(), code),
        ("./v.mp4: FAILED\n./v.mp4: leaf 2: FAILED\n", 1)
    );
    let mut update = audit.to_vec();
    update.insert(4, "--update");
    let out = run_in(dir.path(), &update, b"");
    assert_eq!(status(&out), 1, "{}", stderr(&out));
    assert_eq!(fs::read(dir.path().join("SUMS")).unwrap(), made);
    let (out, err, code) = repair();
    assert_eq!(code, 0, "{out}{err}");
    assert_ends(&out, "./v.mp4: leaf 2: REPAIRED\n");
    assert_eq!(fs::read(&path).unwrap(), good);
    assert_eq!(run_in(dir.path(), audit, b"").status.code(), Some(0));
    // Edited (a new modification time): not reverted.
    std::thread::sleep(Duration::from_millis(20));
    let mut edited = good.clone();
    edited[123] ^= 0x10;
    fs::write(&path, &edited).unwrap();
    let edited_not_damaged = "bt2sum: ./v.mp4: cannot be repaired: its size or modification \
                              time differ from its stat line's: edited, not damaged\n";
    let (_, err, code) = repair();
    assert_contains(&err, edited_not_damaged);
    assert_eq!(code, 1);
    assert_eq!(fs::read(&path).unwrap(), edited);
}

/// Where the system refuses to set the time back (a file the user may
/// write but does not own), the repair says that the stat line is stale,
/// and how to renew it.
#[test]
fn a_time_that_cannot_be_set_back_is_said() {
    use std::os::unix::process::CommandExt;
    let test = "a_time_that_cannot_be_set_back_is_said";
    let good = noise(3 * LEAF, 3);
    let dir = listed_with("f", &good, &["--leaves", "--stat"]);
    let modes = [
        ("", 0o777),
        ("f", 0o666),
        ("LEAVES", 0o644),
        ("copy", 0o755),
        ("copy/f", 0o644),
    ];
    for (path, mode) in modes {
        fs::set_permissions(dir.path().join(path), fs::Permissions::from_mode(mode)).unwrap();
    }
    let user = match super::ux::unprivileged(dir.path(), "LEAVES") {
        Ok(Some(user)) => user,
        Ok(None) => return super::skip(test, "needs root, to run bt2sum as another user"),
        Err(why) => return super::skip(test, &why),
    };
    rot(&dir.path().join("f"), [5]);
    let out = bt2sum()
        .current_dir(dir.path())
        .args(["-c", "--quiet", "--repair-from", "copy", "LEAVES"])
        .uid(user)
        .gid(user)
        .output()
        .unwrap();
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_contains(
        &stderr(&out),
        "bt2sum: f: is repaired, but its modification time cannot be set back to its stat \
         line's (Operation not permitted): that stat line is stale until an audit with \
         --update writes it anew (bt2sum -c --audit DIR --update LIST)\n",
    );
    assert_eq!(fs::read(dir.path().join("f")).unwrap(), good);
}

/// Killed at any moment while it mends, a repair leaves each byte either
/// as it was or as the copy has it; a second run finishes the job. (Each
/// leaf is synced as it is written, so mending 2000 leaves takes long
/// enough for most kills to land in the middle; the test says how many
/// did.)
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn a_repair_killed_at_any_moment_is_finished_by_a_second_run() {
    let test = "a_repair_killed_at_any_moment_is_finished_by_a_second_run";
    if super::emulated(test) {
        return;
    }
    let leaves = 2000;
    let (dir, good) = listed_file("f", leaves * LEAF);
    let path = dir.path().join("f");
    let mut caught_in_the_middle = 0;
    let delays = [1u64, 5, 15, 40, 80, 150, 300];
    for (round, delay_ms) in delays.into_iter().enumerate() {
        // Every leaf damaged, a round's own way.
        let damaged: Vec<u8> = good.iter().map(|byte| byte ^ (round as u8 + 1)).collect();
        fs::write(&path, &damaged).unwrap();
        let mut child = bt2sum()
            .current_dir(dir.path())
            .args(["-c", "--quiet", "--repair-from", "copy", "LEAVES"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn_retried();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let now = fs::read(&path).unwrap();
        assert_eq!(now.len(), good.len());
        let mut mended = 0;
        for (at, byte) in now.iter().enumerate() {
            let either = *byte == good[at] || *byte == damaged[at];
            assert!(
                either,
                "round {round}: byte {at} is neither as it was nor the copy's"
            );
            mended += usize::from(*byte == good[at]);
        }
        if 0 < mended && mended < good.len() {
            caught_in_the_middle += 1;
        }
        let (_, err, code) = mend(dir.path());
        assert_eq!(code, 0, "round {round}: {err}");
        assert_eq!(fs::read(&path).unwrap(), good, "round {round}");
        assert!(verifies(dir.path()));
    }
    let kills = delays.len();
    eprintln!("{test}: {caught_in_the_middle} of {kills} kills caught the repair in the middle");
}

/// Only the damaged leaves' bytes are read from a copy on the
/// spinning-disk model (its counters say what it served).
#[cfg(target_os = "linux")]
#[test]
fn only_the_damaged_leaves_are_read_from_the_copy() {
    let test = "only_the_damaged_leaves_are_read_from_the_copy";
    if super::emulated(test) {
        return;
    }
    let mib = 1 << 20;
    let good = noise(64 * mib, 9);
    let dir = super::dir_with(&[("source/f", &good), ("f", &good)]);
    let source = dir.path().join("source");
    super::write_list(dir.path(), "LEAVES", ["-t", "1048576", "--leaves", "f"]);
    rot(
        &dir.path().join("f"),
        [3 * mib + 5, 40 * mib + 5, 41 * mib + 5],
    );
    let mountpoint = dir.path().join("disk");
    let Some(mounted) = super::Mounted::counting_disk(test, &source, &mountpoint) else {
        return;
    };
    let before = mounted.served();
    let (out, err, code) = check(dir.path(), &["--quiet", "--repair-from", "disk"]);
    assert_eq!(out.matches("REPAIRED").count(), 3, "{out}{err}");
    assert_eq!(code, 0);
    let read = mounted.served() - before;
    assert!(
        (3 * mib as u64..=4 * mib as u64).contains(&read),
        "3 damaged leaves of 1 MiB: {} KiB read from the copy",
        read >> 10
    );
    assert_eq!(fs::read(dir.path().join("f")).unwrap(), good);
}

/// The recipe of docs/leaves.md that fetches the damaged leaves over HTTP
/// and mends from them, run as written against a local server that
/// answers range requests (tests/http/ranges.py), its address in place of
/// the mirror's: the file verifies afterwards, and only the damaged leaves'
/// bytes were sent.
#[test]
fn the_http_recipe_mends_what_it_fetches() {
    let test = "the_http_recipe_mends_what_it_fetches";
    if super::emulated(test) {
        return;
    }
    for tool in ["jq", "curl"] {
        let found = std::process::Command::new(tool).arg("--version").output();
        let found = found.is_ok_and(|out| out.status.success());
        assert!(found, "{tool} is needed (scripts/test-deps installs it)");
    }
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/leaves.md")).unwrap();
    let (_, recipe) = super::parts::shell_blocks(&docs)
        .into_iter()
        .find(|(title, _)| title == "Mending damaged leaves over HTTP")
        .expect("docs/leaves.md has the recipe");
    let mib = 1 << 20;
    let good = noise(12 * mib + 777, 11);
    let dir = super::dir_with(&[("mirror/disk.img", &good), ("work/disk.img", &good)]);
    let (mirror, work) = (dir.path().join("mirror"), dir.path().join("work"));
    super::write_list(
        &work,
        "disk.img.leaves",
        ["-t", "1048576", "--leaves", "disk.img"],
    );
    rot(&work.join("disk.img"), [2 * mib + 9, 7 * mib, 12 * mib + 5]);
    // The server, on a free port it names.
    let port_file = dir.path().join("port");
    let mut server = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/http/ranges.py"))
        .arg(&mirror)
        .arg(&port_file)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !port_file.exists() {
        assert!(std::time::Instant::now() < deadline, "the server starts");
        std::thread::sleep(Duration::from_millis(20));
    }
    let port = fs::read_to_string(&port_file).unwrap();
    let url = format!("http://127.0.0.1:{port}/disk.img");
    let script = recipe.replace("https://mirror.example.org/archive/disk.img", &url);
    assert_ne!(script, recipe, "the recipe names the mirror's address");
    let bin = Path::new(env!("CARGO_BIN_EXE_bt2sum")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .output()
        .unwrap();
    let sent = std::process::Command::new("curl")
        .args(["-sf", &format!("http://127.0.0.1:{port}/.bytes-sent")])
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        stdout(&out),
        "disk.img: FAILED\ndisk.img: leaf 2: FAILED\ndisk.img: leaf 7: FAILED\n\
         disk.img: leaf 12: FAILED\ndisk.img: leaf 2: REPAIRED\ndisk.img: leaf 7: REPAIRED\n\
         disk.img: leaf 12: REPAIRED\n",
        "{}",
        stderr(&out)
    );
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(fs::read(work.join("disk.img")).unwrap(), good);
    let sent: u64 = stdout(&sent).trim().parse().unwrap();
    assert_eq!(
        sent,
        2 * mib as u64 + 777,
        "only the damaged leaves are sent"
    );
}

/// Mending follows the slices of a scrub: a slice whose leaves start past
/// the end of a file cut short writes none of them (a hole would be left
/// before them), and once the slice before has mended its own, they are
/// mended too. Each slice mends the damaged leaves it holds.
#[test]
fn slices_never_leave_a_hole_in_a_file_cut_short() {
    let (dir, good) = listed_file("f", 4 * LEAF);
    let path = dir.path().join("f");
    fs::write(&path, &good[..LEAF]).unwrap();
    let args = |part: &'static str| ["--quiet", "--part", part, "--repair-from", "copy"];
    let (out, _, code) = check(dir.path(), &args("2/2"));
    let why = "FAILED (the file ends before it, and leaves before it are not mended)";
    assert_ends(&out, &format!("f: leaf 2: {why}\nf: leaf 3: {why}\n"));
    assert_eq!(code, 1);
    assert_eq!(fs::read(&path).unwrap(), good[..LEAF]);
    let (out, _, code) = check(dir.path(), &args("1/2"));
    assert_ends(&out, "f: leaf 1: REPAIRED\n");
    assert_eq!(code, 0);
    assert_eq!(fs::read(&path).unwrap(), good[..2 * LEAF]);
    let (out, _, code) = check(dir.path(), &args("2/2"));
    assert_ends(&out, "f: leaf 2: REPAIRED\nf: leaf 3: REPAIRED\n");
    assert_eq!(code, 0);
    assert_eq!(fs::read(&path).unwrap(), good);
    // Each slice mends the damaged leaves it holds.
    damage(&path, &[0, 3]);
    for part in ["1/2", "2/2"] {
        let (_, err, code) = check(dir.path(), &args(part));
        assert_eq!(code, 0, "{part}: {err}");
        assert_contains(&err, "1 damaged leaf was repaired");
    }
    assert_eq!(fs::read(&path).unwrap(), good);
}

/// A file listed twice (or checked in several passes) is mended once
/// every pass over it is checked: no pass reads it while it is written.
#[test]
fn a_file_listed_twice_is_mended_after_both_are_checked() {
    let (dir, good) = listed_file("f", 300 * LEAF);
    let listing = fs::read(dir.path().join("LEAVES")).unwrap();
    fs::write(dir.path().join("LEAVES"), listing.repeat(2)).unwrap();
    let path = dir.path().join("f");
    damage(&path, &[0, 299]);
    let (out, err, code) = mend(dir.path());
    assert_eq!(
        out,
        "f: FAILED\nf: leaf 0: FAILED\nf: leaf 299: FAILED\n\
         f: FAILED\nf: leaf 0: FAILED\nf: leaf 299: FAILED\n\
         f: leaf 0: REPAIRED\nf: leaf 299: REPAIRED\n"
    );
    assert!(
        !err.contains("FAILED open or read") && !err.contains("changed"),
        "{err}"
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs::read(&path).unwrap(), good);
}

/// A checksum line with no leaf lines cannot be mended leaf by leaf. With
/// only some of its leaf lines: the leaves listed are mended, but the file verifies only if the bytes they leave out do,
/// which the whole file, hashed again, says.
#[test]
fn leaves_that_leave_bytes_out_do_not_vouch_for_the_file() {
    let good = noise(3 * LEAF, 21);
    let dir = listed_with("f", &good, &[]);
    // No leaf lines at all: nothing can be mended leaf by leaf.
    damage(&dir.path().join("f"), &[1]);
    let damaged = fs::read(dir.path().join("f")).unwrap();
    let (out, err, code) = check(dir.path(), &["-t", "4096", "--repair-from", "copy"]);
    assert_eq!((out.as_str(), code), ("f: FAILED\n", 1));
    assert_contains(
        &err,
        "bt2sum: f: cannot be repaired: it is listed without leaf lines (list its leaves with --leaves, and a damaged leaf can be mended alone)\n",
    );
    assert_eq!(fs::read(dir.path().join("f")).unwrap(), damaged);
    fs::write(dir.path().join("f"), &good).unwrap();
    let leaf_0 = super::ok_bytes_in(
        dir.path(),
        ["-t", "4096", "--leaves", "--leaf-range", "0..1", "f"],
    );
    let list = [fs::read(dir.path().join("LEAVES")).unwrap(), leaf_0].concat();
    fs::write(dir.path().join("LEAVES"), list).unwrap();
    // Only the listed leaf damaged: mended, and the file verifies.
    damage(&dir.path().join("f"), &[0]);
    let (out, _, code) = mend(dir.path());
    assert_ends(&out, "f: leaf 0: REPAIRED\n");
    assert_eq!(code, 0);
    assert!(verifies(dir.path()));
    // The listed leaf and an unlisted one: the listed one is mended, and
    // the file still fails.
    damage(&dir.path().join("f"), &[0, 2]);
    let (out, err, code) = mend(dir.path());
    assert_ends(&out, "f: leaf 0: REPAIRED\n");
    let unlisted =
        "bt2sum: f: still fails its checksum line: bytes its leaf lines do not list differ\n";
    assert_contains(&err, unlisted);
    assert_eq!(code, 1);
    assert!(!verifies(dir.path()));
}

/// A missing file is restored whole from a copy that matches its checksum
/// line: with its directories, the copy's permissions and its stat line's
/// time, through no link, never over a file, never in an audit (where it
/// may have moved) or with --ignore-missing.
#[test]
fn a_missing_file_is_restored_from_a_copy_that_matches() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let copy = dir.path().join("copy");
    let good = noise(5 * LEAF + 7, 5);
    for root in [&tree, &copy] {
        super::write_files(root, &[("sub/deeper/v", &good), ("a", b"alpha\n")]);
    }
    fs::set_permissions(copy.join("a"), fs::Permissions::from_mode(0o640)).unwrap();
    super::write_list(
        &tree,
        "../SUMS",
        ["-r", "--stat", "--leaves", "-t", "4096", "."],
    );
    let listed_time = fs::metadata(tree.join("a")).unwrap().modified().unwrap();
    let run = |args: &[&str]| said_in(&tree, ["-c"].iter().chain(args).chain(&["../SUMS"]));
    fs::remove_dir_all(tree.join("sub")).unwrap();
    fs::remove_file(tree.join("a")).unwrap();
    // Not in an audit, nor with --ignore-missing.
    for args in [&["--audit", "."][..], &["--ignore-missing"]] {
        let mut all = args.to_vec();
        all.extend(["--repair-from", "../copy"]);
        let (out, _, code) = run(&all);
        assert!(!out.contains("RESTORED"), "{out}");
        assert_eq!(code, 1);
        assert!(!tree.join("a").exists());
    }
    // A copy that does not match is not written, and leaves nothing.
    fs::write(copy.join("a"), b"alphA\n").unwrap();
    let (out, err, code) = run(&["--repair-from", "../copy"]);
    let differs = "./a: FAILED to restore (its copy ../copy/a does not match its checksum line: \
                   not written)\n";
    assert_contains(&out, differs);
    assert_ends(&out, "./sub/deeper/v: RESTORED\n");
    let summary = "bt2sum: 1 missing file was restored\n\
                   bt2sum: WARNING: 1 missing file could not be restored\n";
    assert_ends(&err, summary);
    assert_eq!(code, 1);
    assert_eq!(fs::read(tree.join("sub/deeper/v")).unwrap(), good);
    let names: Vec<_> = fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["sub"], "nothing else is left");
    // A copy that does not match makes no directory on its way either.
    fs::remove_dir_all(tree.join("sub")).unwrap();
    rot(&copy.join("sub/deeper/v"), [7]);
    let (_, _, code) = run(&["--repair-from", "../copy"]);
    assert_eq!(code, 1);
    assert!(!tree.join("sub").exists());
    fs::write(copy.join("sub/deeper/v"), &good).unwrap();
    assert_eq!(run(&["--repair-from", "../copy"]).2, 1);
    // The right copy: restored with its permissions and the listed time.
    fs::write(copy.join("a"), b"alpha\n").unwrap();
    let (out, _, code) = run(&["--repair-from", "../copy"]);
    let restored = "./a: FAILED open or read\n./sub/deeper/v: OK\n./a: RESTORED\n";
    assert_eq!((out.as_str(), code), (restored, 0));
    let restored = fs::metadata(tree.join("a")).unwrap();
    assert_eq!(restored.permissions().mode() & 0o7777, 0o640);
    assert_eq!(restored.modified().unwrap(), listed_time);
    assert_eq!(run(&[]).2, 0);
    // A name that climbs out, or an absolute one, is not written.
    let outside = dir.path().join("outside");
    let line = |name: &str| format!("{}  {name}\n", "0".repeat(128));
    fs::write(copy.join("outside"), b"o\n").unwrap();
    let lines = line("../outside") + &line(&outside.display().to_string());
    fs::write(dir.path().join("OUT"), lines).unwrap();
    let (out, _, _) = said_in(&tree, ["-c", "--repair-from", "../copy", "../OUT"]);
    assert_contains(
        &out,
        "../outside: FAILED to restore (its name climbs out with '..'",
    );
    assert_contains(&out, "FAILED to restore (its name is absolute");
    assert!(!outside.exists());
    // A dangling link where the file was is missing, and is never written
    // through: the name is taken.
    fs::remove_file(tree.join("a")).unwrap();
    let target = dir.path().join("target");
    std::os::unix::fs::symlink(&target, tree.join("a")).unwrap();
    let (out, _, code) = run(&["--repair-from", "../copy"]);
    assert_contains(
        &out,
        "./a: FAILED to restore (a file of its name appeared meanwhile",
    );
    assert_eq!(code, 1);
    assert!(!target.exists());
    fs::remove_file(tree.join("a")).unwrap();
    // A link on the way is not followed.
    fs::remove_dir_all(tree.join("sub")).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tree.join("sub")).unwrap();
    let (out, _, code) = run(&["--repair-from", "../copy"]);
    assert_contains(
        &out,
        "./sub/deeper/v: FAILED to restore (sub is a symbolic link on its way",
    );
    assert_eq!(code, 1);
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}
