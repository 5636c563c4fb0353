//! Archives: audits (`--check --audit DIR`), stat lines (`--stat`), lists
//! updated for deliberate changes (`--update`), excludes and `-C`, on real
//! trees: files added, deleted, renamed, edited and damaged; empty files,
//! duplicates, names holding newlines or bytes that are not UTF-8,
//! symbolic links. (Unix: names of any bytes, links, and `kill`.)

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use super::{
    assert_contains, assert_ends, assert_starts, dir_with, ok_in, run_in, said_in, stderr, stdout,
    write_files, write_list,
};

/// Sets a file's modification time back to `time` (as tools that copy
/// files keep it, or damage that does not touch it).
fn set_mtime(path: &Path, time: SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// The standard archive of these tests, listed (`bt2sum -r . > SUMS`
/// from inside it, with or without stat lines), then changed in every way.
fn changed_archive(stat: bool) -> tempfile::TempDir {
    let dir = dir_with(&[
        ("t/keep", b"kept as it was\n"),
        ("t/edit", b"before the edit\n"),
        ("t/damage", b"intact bytes here\n"),
        ("t/gone", b"deleted\n"),
        ("t/sub/old name", b"renamed, not changed\n"),
        ("t/dup1", b"the same twice\n"),
        ("t/dup2", b"the same twice\n"),
        ("t/empty1", b""),
        ("t/empty2", b""),
        ("t/new\nline", b"a newline in the name\n"),
    ]);
    let root = dir.path().join("t");
    fs::write(root.join(super::name(b"bytes\xff\xfe")), b"not UTF-8\n").unwrap();
    let mut args = vec!["-r", "."];
    if stat {
        args.push("--stat");
    }
    write_list(&root, "../SUMS", &args);
    // Deliberate changes: added, deleted, renamed, edited.
    write_files(&root, &[("added", b"a new file\n"), ("empty3", b"")]);
    fs::remove_file(root.join("gone")).unwrap();
    fs::rename(root.join("sub/old name"), root.join("sub/new name")).unwrap();
    fs::write(root.join("edit"), b"after the edit, longer\n").unwrap();
    // One of two duplicates deleted, and an empty file renamed.
    fs::remove_file(root.join("dup1")).unwrap();
    fs::rename(root.join("empty1"), root.join("empty4")).unwrap();
    // Damage: a bit flipped, size and time as they were.
    super::rot(&root.join("damage"), [14]);
    dir
}

/// The list `SUMS` in `dir`, as text (lossily: its names need not be UTF-8).
fn sums(dir: &Path) -> String {
    String::from_utf8_lossy(&fs::read(dir.join("SUMS")).unwrap()).into_owned()
}

/// The tagged line of `list` that names `name`, if one does.
fn line(list: &str, name: &str) -> Option<String> {
    let named = format!("({name})");
    list.lines()
        .find(|line| line.contains(&named))
        .map(str::to_string)
}

#[test]
fn an_audit_classes_every_file_in_the_tree() {
    let dir = changed_archive(false);
    let root = dir.path().join("t");
    let audited = run_in(&root, ["-c", "--audit", ".", "../SUMS"], b"");
    // The list's files in list order; then what the walk found, in its
    // order; then what is gone. Without stat lines an edit is a failure as
    // damage is. The empty file renamed and the deleted duplicate are new
    // and missing, never moved: every empty file, and each duplicate, has
    // their digests.
    assert_eq!(
        audited.stdout,
        b"./bytes\xff\xfe: OK\n\
         ./damage: FAILED\n\
         ./dup2: OK\n\
         ./edit: FAILED\n\
         ./empty2: OK\n\
         ./keep: OK\n\
         \\./new\\nline: OK\n\
         ./added: NEW\n\
         ./empty3: NEW\n\
         ./empty4: NEW\n\
         ./sub/new name: MOVED from ./sub/old name\n\
         ./dup1: MISSING\n\
         ./empty1: MISSING\n\
         ./gone: MISSING\n"
    );
    assert_eq!(
        (stderr(&audited).as_str(), super::status(&audited)),
        (
            "bt2sum: WARNING: 2 computed checksums did NOT match\n\
             bt2sum: WARNING: 3 files are new\n\
             bt2sum: WARNING: 1 file was moved\n\
             bt2sum: WARNING: 3 listed files are missing\n\
             bt2sum: audited 14 files: 5 OK, 2 FAILED, 3 NEW, 1 MOVED, 3 MISSING\n",
            1
        )
    );
    // --quiet leaves out the OK lines; --status every line; and
    // --ignore-missing the missing files (not the moved one).
    let (quiet, _, _) = said_in(&root, ["-c", "--quiet", "--audit", ".", "../SUMS"]);
    assert!(!quiet.contains(": OK"), "{quiet}");
    assert_contains(&quiet, "./added: NEW\n");
    let (silent, said, code) = said_in(&root, ["-c", "--status", "--audit", ".", "../SUMS"]);
    assert_eq!((silent.as_str(), said.as_str(), code), ("", "", 1));
    let (kept, said, _) = said_in(&root, ["-c", "--ignore-missing", "--audit", ".", "../SUMS"]);
    assert!(
        !kept.contains("MISSING") && kept.contains("MOVED from"),
        "{kept}"
    );
    assert!(!said.contains("missing"), "{said}");
}

#[test]
fn stat_lines_tell_an_edit_from_damage() {
    let dir = changed_archive(true);
    let root = dir.path().join("t");
    let (out, err, code) = said_in(&root, ["-c", "--audit", ".", "../SUMS"]);
    assert_contains(&out, "./edit: CHANGED\n");
    assert_contains(&out, "./damage: FAILED\n");
    assert_starts(
        &err,
        "bt2sum: WARNING: 1 computed checksum did NOT match\n\
             bt2sum: WARNING: 1 listed file was changed since it was listed\n",
    );
    assert_eq!(code, 1);
    // An edit that keeps the size, the time moving on, is an edit too;
    // the same bytes written with the time set back are damage.
    let same_size = dir_with(&[("f", b"version 1\n")]);
    let f = same_size.path().join("f");
    write_list(same_size.path(), "S", ["--stat", "f"]);
    let before = fs::metadata(&f).unwrap().modified().unwrap();
    fs::write(&f, b"version 2\n").unwrap();
    set_mtime(&f, before + Duration::from_secs(3600));
    let (out, _, _) = said_in(same_size.path(), ["-c", "S"]);
    assert_eq!(out, "f: CHANGED\n");
    set_mtime(&f, before);
    let (out, _, _) = said_in(same_size.path(), ["-c", "S"]);
    assert_eq!(out, "f: FAILED\n");
    // A file touched but not changed is still OK; the stat line gives the
    // leaf size, so a list made with another needs no -t.
    let touched = dir_with(&[("f", &super::pattern(200_000))]);
    write_list(touched.path(), "S", ["--stat", "-t", "64k", "f"]);
    set_mtime(
        &touched.path().join("f"),
        SystemTime::now() + Duration::from_secs(60),
    );
    let (out, err, code) = said_in(touched.path(), ["-c", "S"]);
    assert_eq!((out.as_str(), err.as_str(), code), ("f: OK\n", "", 0));
    // GNU b2sum reads such a list too, its stat lines improperly formatted
    // as leaf lines are.
    if super::gnu::gnu_b2sum("stat_lines_tell_an_edit_from_damage").is_some() {
        write_list(touched.path(), "G", ["--stat", "--untagged", "f"]);
        let out = Command::new("b2sum")
            .args(["-c", "G"])
            .current_dir(touched.path())
            .output()
            .unwrap();
        // (Its digest is a tree hash, no b2sum's.)
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "b2sum: WARNING: 1 line is improperly formatted\n\
             b2sum: WARNING: 1 computed checksum did NOT match\n"
        );
    }
}

#[test]
fn names_match_however_the_list_spells_them() {
    let dir = dir_with(&[("d/a", b"a\n"), ("d/b", b"b\n"), ("d/c", b"c\n")]);
    // Made from elsewhere: `d/a`, `./d//b`, `d/./c`.
    let lines: String = ["d/a", "./d//b", "d/./c"]
        .map(|name| ok_in(dir.path(), [name]))
        .concat();
    fs::write(dir.path().join("SUMS"), &lines).unwrap();
    let verdicts = "d/a: OK\n./d//b: OK\nd/./c: OK\n";
    for root in ["d", "./d", "d/", "."] {
        let out = run_in(dir.path(), ["-c", "--audit", root, "SUMS"], b"");
        super::assert_said(&out, verdicts, "bt2sum: audited 3 files: 3 OK\n", 0, root);
    }
}

#[test]
fn a_list_made_elsewhere_audits_a_copy_anywhere_with_dash_c() {
    let dir = dir_with(&[
        ("original/photos/a.jpg", b"sunset\n"),
        ("original/photos/b.jpg", b"sea\n"),
        ("mnt/backup/photos/a.jpg", b"sunset\n"),
        ("mnt/backup/photos/b.jpg", b"SEA\n"),
    ]);
    let (original, copy) = (dir.path().join("original"), dir.path().join("mnt/backup"));
    let sums = dir.path().join("SUMS");
    fs::write(&sums, ok_in(&original, ["-r", "."])).unwrap();
    let (copy, sums) = (copy.to_str().unwrap(), sums.to_str().unwrap());
    let (out, _, code) = said_in(dir.path(), ["-C", copy, "-c", "--audit", ".", sums]);
    assert_eq!(
        (out.as_str(), code),
        ("./photos/a.jpg: OK\n./photos/b.jpg: FAILED\n", 1)
    );
    // -C with a directory that is not there is a usage error.
    let (_, err, code) = said_in(dir.path(), ["-C", "nowhere", "-c", "SUMS"]);
    let cannot = "bt2sum: -C: cannot change to nowhere: No such file or directory\n";
    assert_eq!((err.as_str(), code), (cannot, 2));
}

#[test]
fn excludes_and_links_are_as_in_a_walk() {
    let dir = dir_with(&[("t/a", b"a\n"), ("t/elsewhere/x", b"x\n")]);
    let root = dir.path().join("t");
    write_list(&root, "../SUMS", ["-r", "."]);
    write_files(
        &root,
        &[
            ("scratch.tmp", b"t\n"),
            (".s3git/objects/1", b"o\n"),
            ("sub/.DS_Store", b"d\n"),
            ("keep.tmp", b"k\n"),
            ("ignore", b".DS_Store\n# a comment\n"),
        ],
    );
    std::os::unix::fs::symlink("elsewhere", root.join("link")).unwrap();
    let args = "-c --audit . --exclude *.tmp --exclude .s3git/ --exclude !keep.tmp ../SUMS";
    let mut from_file: Vec<&str> = args.split(' ').collect();
    from_file.extend(["--exclude-from", "ignore", "--exclude", "ignore"]);
    let (out, _, _) = said_in(&root, &from_file);
    let unlinked = "./a: OK\n./elsewhere/x: OK\n./keep.tmp: NEW\n";
    assert_eq!(out, unlinked);
    // A link is followed with -L only: then its files are new.
    from_file.push("-L");
    let (out, _, _) = said_in(&root, &from_file);
    assert_eq!(out, format!("{unlinked}./link/x: NEW\n"));
    // The same patterns for -r.
    let walk = "-r . --untagged --exclude-from ignore --exclude *.tmp";
    let out = ok_in(&root, walk.split(' '));
    let names: Vec<&str> = out.lines().map(|line| &line[130..]).collect();
    assert_eq!(
        names,
        ["./.s3git/objects/1", "./a", "./elsewhere/x", "./ignore"]
    );
    // A pattern that is none is a usage error.
    let (_, err, code) = said_in(&root, ["-r", ".", "--exclude", "[z-a]"]);
    assert_eq!(code, 2, "{err}");
    assert_contains(&err, "bad pattern \"[z-a]\": invalid range");
}

#[test]
fn the_lists_are_never_new() {
    let dir = dir_with(&[("a", b"a\n")]);
    write_list(dir.path(), "SUMS", ["-r", "."]);
    let out = run_in(dir.path(), ["-c", "--audit", ".", "SUMS"], b"");
    super::assert_output(&out, "./a: OK\n", "bt2sum: audited 1 file: 1 OK\n", 0);
    // Nor what an update left behind when it was killed, beside the list;
    // but a file named like one anywhere else, or of another form, is.
    fs::write(dir.path().join(".bt2sum-update-123-456"), b"half a list").unwrap();
    let (out, _, code) = said_in(dir.path(), ["-c", "--audit", ".", "SUMS"]);
    assert_eq!((out.as_str(), code), ("./a: OK\n", 0));
    let script: &[u8] = b"#!/bin/sh\n";
    let scripts =
        [".bt2sum-update-evil.sh", "sub/.bt2sum-update-123-456"].map(|name| (name, script));
    write_files(dir.path(), &scripts);
    let expected = "./a: OK\n./.bt2sum-update-evil.sh: NEW\n./sub/.bt2sum-update-123-456: NEW\n";
    let (out, _, code) = said_in(dir.path(), ["-c", "--audit", ".", "SUMS"]);
    assert_eq!((out.as_str(), code), (expected, 1));
    let (out, err, code) = said_in(dir.path(), ["-c", "--audit", ".", "--update", "SUMS"]);
    assert_eq!((out.as_str(), code), (expected, 0), "{err}");
    assert_contains(&err, "SUMS: updated: 2 files added");
}

#[test]
fn an_update_follows_deliberate_changes_only() {
    let dir = changed_archive(true);
    let root = dir.path().join("t");
    let before = sums(dir.path());
    let (_, err, code) = said_in(&root, ["-c", "--audit", ".", "--update", "../SUMS"]);
    let updated = "bt2sum: ../SUMS: updated: 3 files added, 1 renamed, 1 hashed again\n";
    assert_ends(&err, updated);
    // The damage and the missing files are still there: status 1.
    assert_eq!(code, 1);
    let after = sums(dir.path());
    assert_ne!(after, before);
    // Audited again: the deliberate changes are the list's now; the damage
    // and the missing files are not.
    super::assert_output(
        &run_in(&root, ["-c", "--quiet", "--audit", ".", "../SUMS"], b""),
        "./damage: FAILED\n./dup1: MISSING\n./empty1: MISSING\n./gone: MISSING\n",
        "bt2sum: WARNING: 1 computed checksum did NOT match\n\
         bt2sum: WARNING: 3 listed files are missing\n",
        1,
    );
    // The damaged file's lines are the ones it was listed with.
    assert_eq!(line(&after, "./damage"), line(&before, "./damage"));
    // The renamed file has its old digest under its new name.
    let renamed = line(&after, "./sub/new name").unwrap();
    let old = line(&before, "./sub/old name").unwrap();
    assert_eq!(super::digest(&renamed), super::digest(&old));
    // Once the damage is mended and the missing files accounted for, all is
    // well.
    fs::write(root.join("damage"), b"intact bytes here\n").unwrap();
    let (_, _, code) = said_in(&root, ["-c", "--ignore-missing", "--audit", ".", "../SUMS"]);
    assert_eq!(code, 0);
}

/// A list read from the wrong directory: every file missing where the list
/// says, and found beside the list, or under one prefix more or less, gets
/// a hint that names the base.
#[test]
fn the_wrong_base_is_named() {
    let dir = dir_with(&[("photos/a", b"a\n"), ("photos/b", b"b\n")]);
    write_list(&dir.path().join("photos"), "SUMS", ["a", "b"]);
    write_list(dir.path(), "ABOVE", ["-r", "photos"]);
    let photos = dir.path().join("photos");
    // Checked from above: the files are beside the list. Audited from
    // above, or the list made above audited from inside.
    let hints = [
        "no listed file is here, and they are in photos, beside the list",
        "every listed file was found under photos/: the list's names are relative to photos",
        "the list names every file under photos/, and the audit found them without it",
    ];
    let runs = [
        (dir.path(), "-c photos/SUMS"),
        (dir.path(), "-c --audit photos photos/SUMS"),
        (&photos, "-c --audit . ../ABOVE"),
    ];
    for ((here, args), hint) in runs.into_iter().zip(hints) {
        let (_, err, code) = said_in(here, args.split(' '));
        assert_eq!(code, 1, "{args}");
        assert_contains(&err, &format!("hint: {hint}"));
    }
    // A file here, or a real move, is no sign of the wrong base.
    let no_hint = |args: &[&str]| {
        let (_, err, _) = said_in(dir.path(), args);
        assert!(!err.contains("hint"), "{args:?}: {err}");
    };
    no_hint(&["-c", "--audit", "photos", "ABOVE"]);
    fs::rename(dir.path().join("photos/a"), dir.path().join("photos/c")).unwrap();
    no_hint(&["-c", "--audit", "photos", "ABOVE"]);
    no_hint(&["-c", "ABOVE"]);
}

/// What the user names is taken in, and nothing else: `--forget-missing`
/// drops the missing files' lines, `--accept PATTERN` hashes again the
/// damaged (or, without stat lines, edited) files it matches.
#[test]
fn an_update_takes_in_what_is_named_and_nothing_else() {
    let dir = changed_archive(false);
    let root = dir.path().join("t");
    let audit = |extra: &[&str]| {
        let mut args = vec!["-c", "--quiet", "--audit", ".", "--update"];
        args.extend(extra);
        args.push("../SUMS");
        said_in(&root, &args)
    };
    // A pattern that matches nothing accepts nothing.
    let (_, err, code) = audit(&["--accept", "nothing/"]);
    assert_eq!(code, 1);
    assert_contains(&err, "updated: 3 files added, 1 renamed\n");
    // Edited without a stat line, the edit is FAILED until named.
    let (out, _, _) = audit(&[]);
    assert_contains(&out, "./edit: FAILED\n");
    let kept = sums(dir.path());
    let (_, err, code) = audit(&["--accept", "edit", "--forget-missing"]);
    let updated = "updated: 1 hashed again, 3 missing files forgotten\n";
    assert_ends(&err, updated);
    // The damage, not named, still fails the run, and keeps its line.
    assert_eq!(code, 1);
    let now = sums(dir.path());
    assert_eq!(line(&now, "./damage"), line(&kept, "./damage"));
    assert_ne!(line(&now, "./edit"), line(&kept, "./edit"));
    for gone in ["./gone", "./dup1", "./empty1"] {
        assert_eq!(line(&now, gone), None, "{now}");
    }
    // Named, the damage is taken in too: all is well.
    let (_, err, code) = audit(&["--accept", "/damage"]);
    assert_eq!(code, 0, "{err}");
    let (out, err, code) = said_in(&root, ["-c", "--quiet", "--audit", ".", "../SUMS"]);
    assert_eq!((out.as_str(), err.as_str(), code), ("", "", 0));
    // Both need --update; a bad pattern is a usage error.
    for extra in ["--forget-missing -q", "--accept x"] {
        let args = format!("-c --audit . {extra} ../SUMS");
        assert_eq!(said_in(&root, args.split(' ')).2, 2, "{extra}");
    }
    let (_, err, code) = audit(&["--accept", "[z-a]"]);
    assert_eq!(code, 2);
    assert_contains(&err, "--accept: bad pattern \"[z-a]\"");
}

#[test]
fn an_update_keeps_each_entrys_shape() {
    let a = super::pattern(5000);
    let dir = dir_with(&[("t/a", &a), ("t/b", b"bee\n"), ("t/c", b"sea\n")]);
    let root = dir.path().join("t");
    // A leaf listing of `a`, and untagged lines of the others, with stat
    // lines.
    let mut list = ok_in(&root, ["--stat", "-t", "1k", "--leaves", "./a"]);
    list += &ok_in(&root, ["--untagged", "--stat", "-t", "1k", "./b", "./c"]);
    list += "# a comment, kept\n";
    fs::write(dir.path().join("SUMS"), &list).unwrap();
    fs::write(root.join("a"), super::pattern(6000)).unwrap();
    fs::rename(root.join("b"), root.join("b2")).unwrap();
    fs::write(root.join("d"), b"dee\n").unwrap();
    let (_, err, code) = said_in(&root, ["-c", "--audit", ".", "--update", "../SUMS"]);
    assert_eq!(code, 0, "{err}");
    let after = sums(dir.path());
    // The edited file, listed a leaf at a time, is listed so again, with
    // its stat line; the renamed one keeps its untagged shape; the comment
    // stays; the new file takes the shape of the first checksum line:
    // tagged, with a stat line and leaf lines.
    let shapes: Vec<String> = after
        .lines()
        .map(|line| {
            if line.starts_with('#') {
                line.to_string()
            } else if line.contains(" leaf=") {
                "leaf".to_string()
            } else if line.contains(" size=") {
                "stat".to_string()
            } else if let Some((_, name)) = line.split_once("  ") {
                format!("untagged {name}")
            } else {
                let name = line.split(['(', ')']).nth(1).unwrap();
                format!("tagged ({name})")
            }
        })
        .collect();
    let expected = "tagged (./a)|stat|leaf|leaf|leaf|leaf|leaf|leaf|untagged ./b2|stat|\
                    untagged ./c|stat|# a comment, kept|tagged (./d)|stat|leaf";
    assert_eq!(shapes.join("|"), expected, "{after}");
    // And it all verifies.
    super::assert_output(
        &run_in(&root, ["-c", "--audit", ".", "../SUMS"], b""),
        "./a: OK\n./b2: OK\n./c: OK\n./d: OK\n",
        "bt2sum: audited 4 files: 4 OK\n",
        0,
    );
}

/// The classes of hashdeep's audit (`hashdeep -a -k`), on the cases where
/// hashdeep is right: OK, new, moved, missing; and where bt2sum says more:
/// a changed file is one FAILED line (hashdeep: "No match" and "Known file
/// not used"), and an empty file renamed is new and missing (hashdeep
/// takes it for a move of whatever empty file it knew).
#[test]
fn audits_agree_with_hashdeep_where_hashdeep_is_right() {
    let test = "audits_agree_with_hashdeep_where_hashdeep_is_right";
    if Command::new("hashdeep").arg("-V").output().is_err() {
        return super::skip(test, "hashdeep is not installed (scripts/test-deps)");
    }
    let dir = dir_with(&[
        ("t/a", b"a\n"),
        ("t/b", b"b\n"),
        ("t/c", b"c\n"),
        ("t/k", b"keep\n"),
        ("t/e1", b""),
        ("t/s/z", b"z\n"),
    ]);
    let root = dir.path().join("t");
    let hashdeep = |args: &str| {
        let out = Command::new("hashdeep")
            .args(args.split(' '))
            .current_dir(&root)
            .output();
        String::from_utf8_lossy(&out.unwrap().stdout).into_owned()
    };
    fs::write(dir.path().join("known.txt"), hashdeep("-c md5 -r -l .")).unwrap();
    write_list(&root, "../SUMS", ["-r", "."]);
    write_files(&root, &[("new", b"new\n")]);
    fs::rename(root.join("c"), root.join("s/c2")).unwrap();
    fs::remove_file(root.join("b")).unwrap();
    fs::write(root.join("k"), b"keep, edited\n").unwrap();
    fs::rename(root.join("e1"), root.join("e2")).unwrap();
    let theirs = hashdeep("-c md5 -k ../known.txt -a -r -l -vvv .");
    let has = |line: &str| theirs.lines().any(|l| l == line);
    let (out, _, _) = said_in(&root, ["-c", "--audit", ".", "../SUMS"]);
    // Where hashdeep is right, the same classes. A changed file: twice in
    // hashdeep's words, once in bt2sum's. An empty file renamed: hashdeep
    // calls it moved; it might be any empty file, so bt2sum says new and
    // missing.
    for (hashdeep, ours) in [
        ("./a: Ok", "./a: OK"),
        ("./s/z: Ok", "./s/z: OK"),
        ("./new: No match", "./new: NEW"),
        ("./s/c2: Moved from ./c", "./s/c2: MOVED from ./c"),
        ("./b: Known file not used", "./b: MISSING"),
        ("./k: No match", "./k: FAILED"),
        ("./k: Known file not used", "./k: FAILED"),
        ("./e2: Moved from ./e1", "./e2: NEW"),
        ("./e2: Moved from ./e1", "./e1: MISSING"),
    ] {
        assert!(has(hashdeep), "hashdeep: {hashdeep}?\n{theirs}");
        assert!(out.lines().any(|line| line == ours), "{ours}?\n{out}");
    }
    let twice = out.contains("./k: NEW") || out.contains("./k: MISSING");
    assert!(!twice, "{out}");
}

/// An audit holds a bounded part of a long list, and of what it finds, in
/// memory: the rest goes to temporary files. 500,000 entries, every one of
/// them missing, under an address-space limit that cannot hold what the
/// audit keeps of them (their names, sorted and in list order, and their
/// digests: some 170 MB) at once.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn an_audit_of_a_long_list_stays_within_bounded_memory() {
    let test = "an_audit_of_a_long_list_stays_within_bounded_memory";
    if !super::leaves::address_space_can_be_limited(test) {
        return;
    }
    let dir = dir_with(&[("t/here", b"here\n")]);
    let mut list = ok_in(&dir.path().join("t"), ["-r", "."]);
    let digest = super::digest(&list);
    for index in 0..500_000 {
        list +=
            &format!("BLAKE2b-64 (./gone/{index:06}/with a long name to take room) = {digest}\n");
    }
    fs::write(dir.path().join("SUMS"), &list).unwrap();
    let script = r#"ulimit -v 150000; "$BT2SUM" -c --quiet --audit . ../SUMS | tail -1"#;
    let out = super::shell(&dir.path().join("t"), script);
    let last = "./gone/499999/with a long name to take room: MISSING\n";
    assert_eq!(stdout(&out), last, "{}", stderr(&out));
    assert_contains(&stderr(&out), "WARNING: 500000 listed files are missing");
}

/// Excludes leave out what git ignores, pattern by pattern: each pattern,
/// as `--exclude`, against `git check-ignore` with it as the `.gitignore`
/// (braces are names to git, not alternations).
#[test]
fn excludes_leave_out_what_git_ignores() {
    let test = "excludes_leave_out_what_git_ignores";
    if Command::new("git").arg("--version").output().is_err() {
        return super::skip(test, "git is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let files =
        "a/x b/y {a,b}/z c.tmp d/c.tmp x.{c,h} x.c top/deep/f [ab] a1 f\\g logs/1/2 keep.tmp";
    let files: Vec<&str> = files.split(' ').collect();
    let contents: Vec<_> = files.iter().map(|name| (*name, &b"x\n"[..])).collect();
    write_files(dir.path(), &contents);
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output();
        out.unwrap().status.success()
    };
    assert!(git(&["init", "-q"]));
    let patterns = "{a,b} *.{c,h} *.tmp !keep.tmp top/ /a1 [ab] \\[ab] logs/** a* f\\\\g";
    for pattern in patterns.split(' ') {
        let patterns: Vec<&str> = match pattern {
            "!keep.tmp" => vec!["*.tmp", pattern],
            _ => vec![pattern],
        };
        fs::write(dir.path().join(".gitignore"), patterns.join("\n") + "\n").unwrap();
        let ignored_by_git = |name: &&str| git(&["check-ignore", "-q", "--no-index", name]);
        let ignored: Vec<&str> = files.iter().copied().filter(ignored_by_git).collect();
        let mut args: Vec<&str> = "-r . --untagged --exclude .gitignore --exclude .git/"
            .split(' ')
            .collect();
        for pattern in &patterns {
            args.extend(["--exclude", pattern]);
        }
        let walked = ok_in(dir.path(), &args);
        let excluded: Vec<&str> = (files.iter().copied())
            .filter(|name| !walked.contains(&format!("  ./{}\n", name.replace('\\', "\\\\"))))
            .collect();
        assert_eq!(excluded, ignored, "{patterns:?}");
    }
}

/// A quick audit of an unchanged tree on the spinning-disk model reads no
/// byte of its files (the model counts what it serves), where a full one
/// reads them all: small files too, which are otherwise read whole when
/// opened.
#[cfg(target_os = "linux")]
#[test]
fn a_quick_audit_reads_no_byte_of_an_unchanged_file() {
    let test = "a_quick_audit_reads_no_byte_of_an_unchanged_file";
    if super::emulated(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let mut names: Vec<String> = (0..20).map(|index| format!("small{index}")).collect();
    names.push("sub/big".to_string());
    for (index, name) in names.iter().enumerate() {
        let len = if index < 20 { 1000 } else { 3 << 20 };
        write_files(&source, &[(name, &super::noise(len, index as u64))]);
    }
    write_list(&source, "../SUMS", ["-r", "--stat", "."]);
    let mountpoint = dir.path().join("disk");
    let Some(mounted) = super::Mounted::counting_disk(test, &source, &mountpoint) else {
        return;
    };
    let audit = |extra: &[&str]| {
        for name in &names {
            super::evict(&mountpoint.join(name));
        }
        let before = mounted.served();
        // (The model's counters are a file of the mount.)
        let args = "-c --quiet --audit . --exclude .spinning-disk ../SUMS".split(' ');
        ok_in(&mountpoint, args.chain(extra.iter().copied()));
        mounted.served() - before
    };
    assert_eq!(audit(&["--quick"]), 0);
    assert!(audit(&[]) >= 20 * 1000 + (3 << 20));
}

/// An audit covers what its walk meets: a folder audited alone, the
/// excludes, --max-depth and (where a tmpfs can be mounted) -x leave the
/// other listed files out, neither read nor missing, and counted; an
/// update keeps their lines.
#[test]
fn an_audit_covers_what_its_walk_meets() {
    let dir = dir_with(&[
        ("t/Photos/2020/a", b"a\n"),
        ("t/Photos/2020/b", b"b\n"),
        ("t/Photos/2021/c", b"c\n"),
        ("t/cache/x", b"x\n"),
        ("t/top", b"top\n"),
    ]);
    let root = dir.path().join("t");
    let before = String::from_utf8(write_list(&root, "../SUMS", ["-r", "."])).unwrap();
    // The cache is gone, a photo of 2021 damaged: neither is in 2020.
    fs::remove_dir_all(root.join("cache")).unwrap();
    fs::write(root.join("Photos/2021/c"), b"C\n").unwrap();
    fs::write(root.join("Photos/2020/new"), b"new\n").unwrap();
    let scope = "bt2sum: 3 listed files were out of the audit's scope (under no directory \
                 audited, excluded, deeper than --max-depth, or on another file system): not read";
    let (out, err, code) = said_in(&root, ["-c", "--audit", "Photos/2020", "../SUMS"]);
    let verdicts = "./Photos/2020/a: OK\n./Photos/2020/b: OK\nPhotos/2020/new: NEW\n";
    assert_eq!((out.as_str(), code), (verdicts, 1));
    assert_contains(&err, scope);
    // The same from a list on standard input, which the scope counts first.
    let list = fs::read(dir.path().join("SUMS")).unwrap();
    let piped = super::run_in(&root, ["-c", "--audit", "Photos/2020"], &list);
    assert_eq!(super::said(&piped), (verdicts.to_string(), err, 1));
    // The excludes leave listed files out as walked ones.
    let args = "-c --audit . --exclude cache/ --exclude 2021 ../SUMS";
    let (out, _, _) = said_in(&root, args.split(' '));
    assert!(!out.contains("cache") && !out.contains("2021"), "{out}");
    // --max-depth 1: the files of the top directory alone.
    let (out, err, _) = said_in(&root, ["-c", "--audit", ".", "--max-depth", "1", "../SUMS"]);
    assert_eq!(out, "./top: OK\n");
    assert_contains(&err, "4 listed files were out of the audit's scope");
    // An update takes in the new file of the folder, and keeps the lines
    // of the files out of scope, missing or damaged as they are.
    let args = "-c --audit Photos/2020 --update --forget-missing ../SUMS".split(' ');
    let (_, err, code) = said_in(&root, args);
    assert!(err.ends_with("updated: 1 file added\n"), "{err}");
    assert_eq!(code, 0);
    let after = sums(dir.path());
    let added = after.strip_prefix(&before);
    assert_contains(
        added.unwrap_or_else(|| panic!("{after}")),
        "(Photos/2020/new)",
    );
    // A file system mounted inside the tree, with -x: neither walked nor read.
    let mount = root.join("mnt");
    fs::create_dir(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "none"])
        .arg(&mount)
        .output()
        .is_ok_and(|out| out.status.success());
    if !mounted {
        let why = "-x: a tmpfs cannot be mounted here (it needs root)";
        super::skip("an_audit_covers_what_its_walk_meets", why);
        return;
    }
    fs::write(mount.join("inside"), b"inside\n").unwrap();
    let (walked, _, _) = said_in(&root, ["-r", "-x", "."]);
    let (all, _, _) = said_in(&root, ["-r", "."]);
    fs::write(dir.path().join("ALL"), &all).unwrap();
    let (audited, err, _) = said_in(&root, ["-c", "--audit", ".", "-x", "../ALL"]);
    let _ = std::process::Command::new("umount").arg(&mount).status();
    assert!(!walked.contains("inside"), "{walked}");
    assert_contains(&all, "(./mnt/inside)");
    assert!(!audited.contains("inside"), "{audited}");
    assert_contains(&err, "1 listed file was out of the audit's scope");
}
