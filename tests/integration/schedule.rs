//! The schedule, counted (a build with the `schedule-probe` feature:
//! `cargo test --features schedule-probe --test integration schedule`):
//! hashing a big file, by name or from `<`, on pools of 16, 64 and 256
//! threads (on any machine, 2 cores will do), the engine has work for
//! every thread. Each time it hands the pool a window of leaves, the pool
//! has at least as many leaves ready as it has threads, unless fewer are
//! left in the whole input. And `--cpus N` keeps to N: at most N threads
//! hash or read at once, the run's own counted, on many small files too.

use std::fs;
use std::path::PathBuf;
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

/// Hashes `paths` (by name, or the first from `<` if `from_stdin`) in
/// 16 KiB leaves with `--cpus N`, the probe counting.
fn probe(cpus: u64, paths: &[PathBuf], from_stdin: bool) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("probe");
    let mut command = bt2sum();
    command
        .args(["--cpus", &cpus.to_string(), "-t", "16k"])
        .env("BT2SUM_SCHEDULE_PROBE", &report)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    match from_stdin {
        true => command.stdin(fs::File::open(&paths[0]).unwrap()),
        false => command.args(paths),
    };
    let out = command.output_retried();
    assert!(out.status.success(), "--cpus {cpus}: {}", out.status);
    let text = fs::read_to_string(&report).unwrap();
    let mut lines = text.lines();
    let mut field = |name: &str| -> u64 {
        let line = lines.next().unwrap();
        line.strip_prefix(name).unwrap().trim().parse().unwrap()
    };
    Report {
        threads: field("threads"),
        leaves: field("leaves"),
        most_hashing: field("most_hashing"),
        samples: lines
            .map(|line| {
                let (ready, finished) = line.split_once(' ').unwrap();
                (ready.parse().unwrap(), finished.parse().unwrap())
            })
            .collect(),
    }
}

/// On every pool, by name and from `<`: at most N threads hash at once;
/// and on the big pools each window finds work for every thread. Many
/// small files, opened and read on the workers, keep to N as well.
#[test]
fn every_thread_has_work_and_cpus_n_keeps_to_n() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    // 16 KiB leaves: windows of two SIMD groups a thread fit a test's file.
    fs::write(&path, pattern(256 << 20)).unwrap();
    for cpus in [1u64, 2, 3, 16, 64, 256] {
        for from_stdin in [false, true] {
            let report = probe(cpus, std::slice::from_ref(&path), from_stdin);
            let case = format!("--cpus {cpus}, from <: {from_stdin}");
            let most = report.most_hashing;
            assert!((1..=cpus).contains(&most), "{case}: {most} hashed at once");
            if cpus < 16 {
                continue;
            }
            // (The run's own thread hashes as the N-th.)
            let threads = report.threads;
            assert_eq!(threads, cpus - 1, "{case}");
            assert!(report.leaves >= 4 * threads, "{case}: {}", report.leaves);
            assert!(report.samples.len() >= 3, "{case}: {:?}", report.samples);
            for &(ready, finished) in &report.samples {
                let left = report.leaves - finished;
                assert!(
                    ready >= threads.min(left),
                    "{case}: {ready} leaves ready, {left} left: {:?}",
                    report.samples
                );
            }
        }
    }
    let small: Vec<PathBuf> = (0..500)
        .map(|index| {
            let small = dir.path().join(format!("s{index}"));
            fs::write(&small, pattern(index * 97)).unwrap();
            small
        })
        .collect();
    for cpus in [1u64, 2, 3] {
        let most = probe(cpus, &small, false).most_hashing;
        assert!(
            (1..=cpus).contains(&most),
            "small files, --cpus {cpus}: {most} at once"
        );
    }
}
