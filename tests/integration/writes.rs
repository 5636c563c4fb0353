//! What bt2sum writes stays where the user meant: a repair writes only the
//! regular file the check saw, inside the directory bt2sum works in, not
//! through a symbolic link, not a set-id or hard-linked file unless asked;
//! `--update` rewrites only the list it read. Each test builds a tree with
//! the trap in it, runs the real binary, and checks that nothing outside
//! the files reported as repaired changed. (Unix: links, modes, FIFOs.)

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::{bt2sum, mkfifo, output_within, run_in, status, stderr, stdout};

/// A tree `t/` holding `f` (three leaves of 4096 bytes), its listing
/// `LEAVES` made in `t/`, and a good copy `mirror/f`.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["t", "mirror", "outside"] {
        fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let good = super::noise(3 * 4096, 7);
    fs::write(dir.path().join("t/f"), &good).unwrap();
    fs::write(dir.path().join("mirror/f"), &good).unwrap();
    let out = run_in(&dir.path().join("t"), ["-t", "4096", "--leaves", "f"], b"");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    fs::write(dir.path().join("LEAVES"), &out.stdout).unwrap();
    dir
}

/// Runs `bt2sum -c --repair-from ../mirror ARGS ../LEAVES` in `t/`.
fn repair(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let mut all = vec!["-c", "--repair-from", "../mirror"];
    all.extend(args);
    all.push("../LEAVES");
    let out = run_in(&dir.join("t"), &all, b"");
    (stdout(&out), stderr(&out), status(&out))
}

/// A file outside the tree, with its bytes and mode, to check it is left
/// as it was.
struct Untouched {
    path: std::path::PathBuf,
    bytes: Vec<u8>,
    mode: u32,
}

impl Untouched {
    fn new(path: &Path, bytes: &[u8], mode: u32) -> Untouched {
        fs::write(path, bytes).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
        Untouched {
            path: path.to_path_buf(),
            bytes: bytes.to_vec(),
            mode,
        }
    }

    fn check(&self, what: &str) {
        assert_eq!(fs::read(&self.path).unwrap(), self.bytes, "{what}: written");
        let mode = fs::metadata(&self.path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, self.mode, "{what}: mode changed");
    }
}

#[test]
fn a_symbolic_link_in_the_tree_is_not_written_through() {
    let dir = tree();
    // A set-user-ID file outside, which the link in the tree points to.
    let target = Untouched::new(&dir.path().join("outside/target"), b"#!/bin/sh\n", 0o4755);
    fs::remove_file(dir.path().join("t/f")).unwrap();
    symlink("../outside/target", dir.path().join("t/f")).unwrap();
    let (_, err, code) = repair(dir.path(), &["--repair-truncate"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("f: cannot be repaired: it is a symbolic link"),
        "{err}"
    );
    target.check("the link's target");
}

#[test]
fn a_symbolically_linked_directory_is_not_written_through() {
    let dir = tree();
    fs::create_dir(dir.path().join("elsewhere")).unwrap();
    let good = fs::read(dir.path().join("t/f")).unwrap();
    // `sub/f` is listed; `sub` is then replaced by a link to a directory
    // whose `f` is another file.
    fs::create_dir(dir.path().join("t/sub")).unwrap();
    fs::write(dir.path().join("t/sub/f"), &good).unwrap();
    let out = run_in(
        &dir.path().join("t"),
        ["-t", "4096", "--leaves", "sub/f"],
        b"",
    );
    fs::write(dir.path().join("LEAVES"), &out.stdout).unwrap();
    fs::create_dir(dir.path().join("mirror/sub")).unwrap();
    fs::write(dir.path().join("mirror/sub/f"), &good).unwrap();
    let mut longer = good[..5000].to_vec();
    longer.extend(b"not the listed bytes, and longer than listed".repeat(300));
    let victim = Untouched::new(&dir.path().join("elsewhere/f"), &longer, 0o644);
    fs::remove_dir_all(dir.path().join("t/sub")).unwrap();
    symlink("../elsewhere", dir.path().join("t/sub")).unwrap();
    let (_, err, code) = repair(dir.path(), &["--repair-truncate"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("sub/f: cannot be repaired: sub is a symbolic link on its way"),
        "{err}"
    );
    victim.check("the file in the linked directory");
}

#[test]
fn names_outside_the_tree_are_written_only_when_asked() {
    for name in ["../victim", "ABSOLUTE"] {
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
        let out = run_in(
            &dir.path().join("t"),
            ["-t", "4096", "--leaves", &listed],
            b"",
        );
        fs::write(dir.path().join("LEAVES"), &out.stdout).unwrap();
        fs::write(dir.path().join("fetched"), &good).unwrap();
        let victim = Untouched::new(&victim_path, b"the user's own file\n", 0o644);
        let out = run_in(
            &dir.path().join("t"),
            [
                "-c",
                "--repair-from",
                "../fetched",
                "--repair-truncate",
                "../LEAVES",
            ],
            b"",
        );
        let err = stderr(&out);
        assert_eq!(status(&out), 1, "{name}: {err}");
        let why = match name {
            "ABSOLUTE" => "its name is absolute",
            _ => "its name climbs out with '..'",
        };
        assert!(err.contains(why), "{name}: {err}");
        assert!(err.contains("--absolute-names allows it"), "{name}: {err}");
        victim.check(name);
        // Asked for, it is written.
        let out = run_in(
            &dir.path().join("t"),
            [
                "-c",
                "--repair-from",
                "../fetched",
                "--repair-truncate",
                "--absolute-names",
            ],
            &fs::read(dir.path().join("LEAVES")).unwrap(),
        );
        assert_eq!(status(&out), 0, "{name}: {}", stderr(&out));
        assert_eq!(fs::read(&victim_path).unwrap(), good, "{name}");
    }
}

/// Starts `bt2sum -c --repair-from ../mirror ../LEAVES` in `t/` on a list
/// that ends with a FIFO's checksum line, waits until `f`'s verdict is out
/// (its check is done; the repairs wait for the list's end, held back by
/// the FIFO), runs `meanwhile`, then lets the FIFO through: what the repair
/// then finds.
fn swapped_after_the_check(dir: &Path, meanwhile: impl FnOnce()) -> (String, String, i32) {
    mkfifo(&dir.join("t/fifo"));
    let fifo_line = stdout(&run_in(dir, ["-t", "4096", "-"], b"through the fifo"))
        .replace("BLAKE2b-64 (-)", "BLAKE2b-64 (fifo)");
    let mut list = fs::read(dir.join("LEAVES")).unwrap();
    list.extend(fifo_line.as_bytes());
    fs::write(dir.join("LEAVES"), list).unwrap();
    let mut child = bt2sum()
        .args([
            "-c",
            "-t",
            "4096",
            "--repair-from",
            "../mirror",
            "../LEAVES",
        ])
        .current_dir(dir.join("t"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert_eq!(first, "f: FAILED\n");
    meanwhile();
    fs::OpenOptions::new()
        .write(true)
        .open(dir.join("t/fifo"))
        .unwrap()
        .write_all(b"through the fifo")
        .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let output = output_within(child, Duration::from_secs(60));
    (first + &rest, stderr(&output), status(&output))
}

#[test]
fn a_file_swapped_for_a_link_after_the_check_is_not_written() {
    let dir = tree();
    let path = dir.path().join("t/f");
    damage(&path);
    let target = Untouched::new(&dir.path().join("outside/target"), b"secret\n", 0o600);
    let (out, err, code) = swapped_after_the_check(dir.path(), || {
        fs::remove_file(&path).unwrap();
        symlink("../outside/target", &path).unwrap();
    });
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("REPAIRED"), "{out}");
    assert!(
        err.contains("f: cannot be repaired: it is a symbolic link"),
        "{err}"
    );
    target.check("the link's target");
}

#[test]
fn a_file_rewritten_after_the_check_is_not_written() {
    let dir = tree();
    let path = dir.path().join("t/f");
    damage(&path);
    let edited = super::noise(3 * 4096, 99);
    let (out, err, code) = swapped_after_the_check(dir.path(), || {
        fs::write(&path, &edited).unwrap();
    });
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("REPAIRED"), "{out}");
    assert!(
        err.contains("f: cannot be repaired: it changed since it was checked"),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), edited);
}

/// Flips a bit in the file's second leaf.
pub fn damage(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    bytes[4096 + 10] ^= 1;
    fs::write(path, bytes).unwrap();
}

#[test]
fn set_id_and_hard_linked_files_are_written_only_when_asked() {
    let dir = tree();
    let path = dir.path().join("t/f");
    damage(&path);
    let damaged = fs::read(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)).unwrap();
    let (_, err, code) = repair(dir.path(), &[]);
    assert_eq!(code, 1);
    assert!(err.contains("it is set-user-ID or set-group-ID"), "{err}");
    assert!(err.contains("--repair-setid allows it"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), damaged);
    for mode in [0o2755, 0o6755] {
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(repair(dir.path(), &[]).2, 1, "mode {mode:o}");
        assert_eq!(fs::read(&path).unwrap(), damaged);
    }
    // Asked for, it is mended, and no set-id bit is set that a write
    // cleared.
    let (out, err, code) = repair(dir.path(), &["--repair-setid"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("f: leaf 1: REPAIRED"), "{out}");
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode & !0o6000, 0o755);
    // A file with a second name outside the tree.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    damage(&path);
    let damaged = fs::read(&path).unwrap();
    fs::hard_link(&path, dir.path().join("outside/other-name")).unwrap();
    let (_, err, code) = repair(dir.path(), &[]);
    assert_eq!(code, 1);
    assert!(err.contains("it has 2 hard links"), "{err}");
    assert_eq!(
        fs::read(dir.path().join("outside/other-name")).unwrap(),
        damaged
    );
    assert_eq!(repair(dir.path(), &["--absolute-names"]).2, 0);
}

#[test]
fn a_fifo_is_never_written_nor_read_twice() {
    let dir = tree();
    fs::remove_file(dir.path().join("t/f")).unwrap();
    mkfifo(&dir.path().join("t/f"));
    // A writer that gives the FIFO damaged bytes once.
    let writer = {
        let path = dir.path().join("t/f");
        let mut bytes = fs::read(dir.path().join("mirror/f")).unwrap();
        bytes.truncate(5000);
        std::thread::spawn(move || {
            let _ = fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|mut fifo| fifo.write_all(&bytes));
        })
    };
    let out = run_in(
        &dir.path().join("t"),
        [
            "-c",
            "--repair-from",
            "../mirror",
            "--repair-truncate",
            "../LEAVES",
        ],
        b"",
    );
    writer.join().unwrap();
    assert_eq!(status(&out), 1);
    assert!(
        stderr(&out).contains("f: cannot be repaired: it is not a regular file"),
        "{}",
        stderr(&out)
    );
}
