//! The schedule, counted (a build with the `schedule-probe` feature:
//! `cargo test --features schedule-probe --test integration schedule`):
//! hashing a big file, by name or from `<`, on pools of 16, 64 and 256
//! threads (on any machine, 2 cores will do), the engine has work for
//! every thread. Each time it hands the pool a window of leaves, the pool
//! has at least as many leaves ready as it has threads, unless fewer are
//! left in the whole input. And `--cpus N` keeps to N: at most N threads
//! hash at once, the run's own counted.

use std::fs;
use std::process::Stdio;

use super::{Retried, bt2sum, pattern};

/// What the probe counted: the pool's threads, the leaves in all, the most
/// threads that hashed at once, and each sample (leaves ready, leaves
/// finished).
struct Report {
    threads: u64,
    leaves: u64,
    most_hashing: u64,
    samples: Vec<(u64, u64)>,
}

fn probe(args: &[&str], stdin: Option<&std::path::Path>) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("probe");
    let mut command = bt2sum();
    command
        .args(args)
        .env("BT2SUM_SCHEDULE_PROBE", &report)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(path) = stdin {
        command.stdin(fs::File::open(path).unwrap());
    }
    let out = command.output_retried();
    assert!(out.status.success(), "{args:?}: {}", out.status);
    let text = fs::read_to_string(&report).unwrap();
    let mut lines = text.lines();
    let mut field = |name: &str| -> u64 {
        let line = lines.next().unwrap();
        line.strip_prefix(name).unwrap().trim().parse().unwrap()
    };
    let (threads, leaves, most_hashing) =
        (field("threads"), field("leaves"), field("most_hashing"));
    let samples = lines
        .map(|line| {
            let (ready, finished) = line.split_once(' ').unwrap();
            (ready.parse().unwrap(), finished.parse().unwrap())
        })
        .collect();
    Report {
        threads,
        leaves,
        most_hashing,
        samples,
    }
}

#[test]
fn every_thread_has_work_on_pools_of_16_64_and_256_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    // 16 KiB leaves: windows of two SIMD groups a thread fit a test's file.
    fs::write(&path, pattern(256 << 20)).unwrap();
    let name = path.to_str().unwrap();
    for threads in [16u64, 64, 256] {
        let cpus = threads.to_string();
        for (how, args, stdin) in [
            ("by name", vec!["--cpus", &cpus, "-t", "16k", name], None),
            (
                "from <",
                vec!["--cpus", &cpus, "-t", "16k"],
                Some(path.as_path()),
            ),
        ] {
            let report = probe(&args, stdin);
            // (The run's own thread hashes as the N-th.)
            assert_eq!(report.threads, threads - 1);
            let threads = report.threads;
            assert!(
                report.leaves >= 4 * threads,
                "{how}, {threads}: {} leaves",
                report.leaves
            );
            assert!(
                report.samples.len() >= 3,
                "{how}, {threads}: {:?}",
                report.samples
            );
            for &(ready, finished) in &report.samples {
                let left = report.leaves - finished;
                assert!(
                    ready >= threads.min(left),
                    "{how}, {threads} threads: {ready} leaves ready, {left} left: {:?}",
                    report.samples
                );
            }
        }
    }
}

/// `--cpus N` means at most N threads hash or read at once, the thread
/// that owns the run counted: by name and from a pipe, on a file of many
/// leaves, and on many small files (opened and read on the workers).
#[test]
fn cpus_n_keeps_to_n_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    fs::write(&path, pattern(64 << 20)).unwrap();
    let name = path.to_str().unwrap();
    let small: Vec<String> = (0..500)
        .map(|index| {
            let small = dir.path().join(format!("s{index}"));
            fs::write(&small, pattern(index * 97)).unwrap();
            small.to_str().unwrap().to_owned()
        })
        .collect();
    for cpus in [1u64, 2, 3] {
        let n = cpus.to_string();
        let mut many = vec!["--cpus", &n];
        many.extend(small.iter().map(String::as_str));
        for (how, args, stdin) in [
            ("by name", vec!["--cpus", &n, "-t", "16k", name], None),
            (
                "from <",
                vec!["--cpus", &n, "-t", "16k"],
                Some(path.as_path()),
            ),
            ("small files", many, None),
        ] {
            let report = probe(&args, stdin);
            assert!(
                (1..=cpus).contains(&report.most_hashing),
                "{how}, --cpus {cpus}: {} threads hashed at once",
                report.most_hashing
            );
        }
    }
}
