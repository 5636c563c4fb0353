//! The ledger of verifications (`--ledger`, `--max-duration`,
//! `--ledger-reset`): only what matched is recorded, at the grain of a
//! listed leaf; a scrub with a time budget goes on where the last stopped;
//! a ledger that is damaged, foreign, newer, in use or out of reach is
//! said and never makes a file pass; a kill loses no ledger.

use std::fs;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use serde_json::Value;

use super::{
    Retried, assert_contains, bt2sum, noise, ok_bytes_in, rot, run_in, said_in, status, stderr,
    stdout, write_list,
};
#[cfg(unix)]
use super::{mkfifo, ok_in};

/// A tree of three small files and one of 40 leaves of 4 KiB, listed with
/// its leaves in `SUMS`.
fn archive() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, len) in [("a", 1000), ("b", 2000), ("c", 3000), ("big", 40 << 12)] {
        fs::write(dir.path().join(name), noise(len, len as u64)).unwrap();
    }
    write_list(dir.path(), "SUMS", "-t 4k --leaves a b c big".split(' '));
    dir
}

/// Checks `SUMS` in `dir` with `args` and `--json`: the status, the
/// records, and the summary's ledger object.
fn check(dir: &Path, args: &[&str]) -> (i32, Vec<Value>, Value) {
    let (out, _, code) = said_in(dir, ["-c", "--json"].iter().chain(args).chain(&["SUMS"]));
    let records: Vec<Value> = (out.lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let summary = records.last().cloned().unwrap_or(Value::Null);
    (code, records, summary["ledger"].clone())
}

/// The bytes the ledger says were never verified.
fn never(ledger: &Value) -> u64 {
    ledger["never_verified_bytes"].as_u64().unwrap()
}

/// Starts `bt2sum ARGS` in `dir` (its output piped, and left unread).
fn start(dir: &Path, args: &str) -> Child {
    let mut command = bt2sum();
    command.current_dir(dir).env("BT2SUM_HASH_KERNEL", "crate");
    command.args(args.split(' ')).spawn_piped()
}

const LISTED: u64 = 1000 + 2000 + 3000 + (40 << 12);

#[test]
fn a_check_keeps_a_ledger_only_when_asked_or_when_it_is_there() {
    let dir = archive();
    let (code, _, ledger) = check(dir.path(), &[]);
    assert_eq!((code, ledger), (0, Value::Null));
    assert!(!dir.path().join("SUMS.ledger").exists());
    // --max-duration 0 makes the ledger and verifies nothing.
    let (out, err, code) = said_in(dir.path(), ["-c", "--max-duration", "0", "SUMS"]);
    assert_eq!((out.as_str(), code), ("", 0), "{err}");
    assert_contains(&err, "SUMS.ledger: 165.86 KiB listed: 100% never verified");
    // From now on, a plain check records what it verifies.
    let (code, _, ledger) = check(dir.path(), &[]);
    assert_eq!((code, never(&ledger)), (0, 0));
    assert_eq!(ledger["total_bytes"], LISTED);
    assert_eq!(ledger["verified_within_1_day_bytes"], LISTED);
    let (_, err, _) = said_in(dir.path(), ["-c", "--max-duration", "0", "SUMS"]);
    assert_contains(&err, ": 100% verified under a day ago; the oldest proof is");
    // --status says nothing, the ledger is still kept.
    let (_, err, code) = said_in(dir.path(), ["-c", "--status", "SUMS"]);
    assert_eq!((code, err.as_str()), (0, ""));
}

#[test]
fn damage_is_never_recorded_and_a_leaf_is_its_own_unit() {
    let dir = archive();
    // Leaf 3 of big, and all of b, damaged.
    let flip = |name: &str, at: usize| rot(&dir.path().join(name), [at]);
    flip("big", 3 * 4096 + 5);
    flip("b", 0);
    // Found failing again, what was verified before loses its record;
    // mended, they are recorded at the next check.
    for (round, damaged) in [true, true, false, true, false].into_iter().enumerate() {
        if round > 1 {
            flip("big", 3 * 4096 + 5);
            flip("b", 0);
        }
        let (status, _, ledger) = check(dir.path(), &["--ledger", "L"]);
        let expected = if damaged { (1, 2000 + 4096) } else { (0, 0) };
        assert_eq!((status, never(&ledger)), expected, "round {round}");
    }
}

#[test]
fn a_scrub_with_a_time_budget_verifies_what_was_never_verified_first() {
    let dir = archive();
    check(dir.path(), &["--ledger-reset"]);
    // A file added to the list is the one unit never verified.
    fs::write(dir.path().join("d"), b"new").unwrap();
    write_list(dir.path(), "SUMS", "-t 4k --leaves a b c big d".split(' '));
    let (status, records, ledger) = check(dir.path(), &["--max-duration", "0"]);
    assert_eq!((status, records.len(), never(&ledger)), (0, 1, 3));
    // A budget that covers everything verifies it all, each unit once,
    // with its verdict.
    let (status, records, ledger) = check(dir.path(), &["--max-duration", "1h", "--verbose"]);
    assert_eq!((status, never(&ledger)), (0, 0));
    assert_eq!(ledger["total_bytes"], LISTED + 3);
    let verdicts = records.iter().filter(|record| record["type"] != "summary");
    assert_eq!(verdicts.count(), 4 + 40, "{records:?}");
    let (status, _, ledger) = check(dir.path(), &["--max-duration", "0"]);
    assert_eq!((status, never(&ledger)), (0, 0));
}

#[test]
fn a_ledger_that_cannot_be_used_is_said_and_reset_on_request() {
    let dir = archive();
    let (here, path) = (dir.path(), dir.path().join("SUMS.ledger"));
    let refused = |dir: &Path, args: &[&str], why: &str| {
        let (out, err, status) = said_in(dir, ["-c", "--json"].iter().chain(args).chain(&["SUMS"]));
        // (No verdict: the run stops before it checks.)
        assert_eq!((status, out.as_str()), (1, ""), "{args:?}");
        assert!(err.contains(why), "{args:?}: {err}");
    };
    // Damaged.
    fs::write(&path, b"not a ledger at all, not even close").unwrap();
    refused(here, &[], "the ledger is damaged");
    assert_eq!(check(dir.path(), &["--ledger-reset"]).0, 0);
    // Made for another list.
    let other = super::dir_with(&[("x", b"x")]);
    write_list(other.path(), "SUMS", ["x"]);
    fs::copy(&path, other.path().join("SUMS.ledger")).unwrap();
    refused(other.path(), &[], "made for another list");
    assert_eq!(check(other.path(), &["--ledger-reset"]).0, 0);
    // From a newer bt2sum.
    let about = redb::TableDefinition::<&str, u64>::new("about");
    let database = redb::Database::create(&path).unwrap();
    let write = database.begin_write().unwrap();
    let mut table = write.open_table(about).unwrap();
    table.insert("format", 99).unwrap();
    drop(table);
    write.commit().unwrap();
    drop(database);
    refused(here, &[], "made by a newer bt2sum (format 99)");
    // A link is not followed, and a ledger out of reach is said.
    let cannot_open = "cannot open the ledger";
    fs::remove_file(&path).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("elsewhere", &path).unwrap();
        refused(here, &["--max-duration", "0"], cannot_open);
        assert!(!dir.path().join("elsewhere").exists());
        // In use: a list naming a FIFO keeps a check waiting, its ledger
        // open, until the FIFO is opened and closed.
        mkfifo(&here.join("fifo"));
        let line = ok_in(here, ["-a", "blake2b", "/dev/null"]).replace("/dev/null", "fifo");
        fs::write(here.join("WAIT"), line).unwrap();
        let mut first = start(here, "-c --ledger L WAIT");
        let in_use = "L: the ledger is in use by another bt2sum";
        let refused = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            let (_, err, code) = said_in(here, ["-c", "--ledger", "L", "SUMS"]);
            code == 1 && err.contains(in_use)
        });
        let _ = fs::write(here.join("fifo"), b"");
        first.wait().unwrap();
        assert!(refused, "never said: {in_use}");
    }
    refused(here, &["--ledger", "no/such/dir/L"], cannot_open);
}

#[test]
fn a_list_from_standard_input_or_several_lists_name_their_ledger() {
    let dir = archive();
    let sums = fs::read(dir.path().join("SUMS")).unwrap();
    let out = run_in(dir.path(), ["-c", "--max-duration", "0"], &sums);
    assert_eq!(status(&out), 2);
    assert_contains(&stderr(&out), "--ledger FILE");
    // Named, it is kept for standard input, read again in each round.
    let args = ["-c", "--ledger", "L", "--max-duration", "1h", "--json", "-"];
    let out = run_in(dir.path(), args, &sums);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let summary: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(summary["ledger"]["total_bytes"], LISTED);
    assert_eq!(never(&summary["ledger"]), 0);
    fs::copy(dir.path().join("SUMS"), dir.path().join("SUMS2")).unwrap();
    let (_, _, code) = said_in(dir.path(), "-c --max-duration 0 SUMS SUMS2".split(' '));
    assert_eq!(code, 2);
    let both = "-c --ledger L --ledger-reset SUMS SUMS2";
    ok_bytes_in(dir.path(), both.split(' '));
}

/// Kills a scrub at several points: the ledger is never lost, and what it
/// says was verified never shrinks.
#[test]
fn a_kill_loses_at_most_the_last_moments() {
    // 96 MiB in leaves of 1 MiB: passes of 64 MiB of leaves.
    let dir = super::dir_with(&[("big", &noise(1 << 20, 3).repeat(96))]);
    write_list(dir.path(), "SUMS", ["-t", "1m", "--leaves", "big"]);
    let mut verified = 0;
    for delay in [50, 300, 800, 1500] {
        let mut child = start(dir.path(), "-c --cpus 1 --max-duration 1h SUMS");
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        child.wait().unwrap();
        let (status, _, ledger) = check(dir.path(), &["--max-duration", "0"]);
        assert_eq!(status, 0, "after a kill at {delay} ms");
        let now = (96 << 20) - never(&ledger);
        assert!(now >= verified, "{now} after {verified}");
        verified = now;
    }
    let (status, _, ledger) = check(dir.path(), &["--max-duration", "1h"]);
    assert_eq!((status, never(&ledger)), (0, 0));
}

#[test]
fn an_audit_and_an_update_keep_the_ledger_and_never_list_it() {
    let data = noise(5000, 1);
    let dir = super::dir_with(&[("a", &data), ("b", &data)]);
    // (With leaf lines: a round of the ledger holds a file's leaves.)
    write_list(dir.path(), "SUMS", "-r --stat --leaves -t 1k .".split(' '));
    assert_eq!(check(dir.path(), &["--ledger-reset"]).0, 0);
    fs::write(dir.path().join("c"), b"new").unwrap();
    let verdicts = "./a: OK (not read)\n./b: OK (not read)\n./c: NEW\n";
    for args in ["--quick", "--quick --update"] {
        let (out, _, _) = said_in(dir.path(), format!("-c --audit . {args} SUMS").split(' '));
        assert_eq!(out, verdicts, "{args}");
    }
    // What was verified keeps its record; the file added has none yet.
    let (status, _, ledger) = check(dir.path(), &["--max-duration", "0"]);
    assert_eq!((status, ledger["total_bytes"].as_u64()), (0, Some(10003)));
    assert_eq!(never(&ledger), 3);
}
