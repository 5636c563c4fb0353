//! In-process benchmarks of the hashing paths, through the public
//! API only: `cargo bench -p bt2sum-benches --bench tree` (about a minute), or
//! `cargo bench -p bt2sum-benches --bench tree -- --test` to run each once.
//!
//! - `leaf_grouping`: [`bt2sum::hash`] on 64 MiB in memory, BLAKE2b and
//!   BLAKE2s, 5 MiB and 4 KiB leaves (grouped `hash_many` calls on the pool).
//! - `stdin_pipeline`: [`TreeHasher::update_reader`] fed 64 MiB by a reader
//!   that hands out 64 KiB pieces, as a pipe does.
//! - `small_files`: [`bt2sum::hash_path`] over 256 files of 4 KiB in a temp
//!   dir, one after the other and concurrently on the rayon pool, and
//!   [`bt2sum::hash_each`] over them (as the command hashes them).
//! - `leaf_kernels`: 32 leaves of 1 MiB with each leaf kernel this CPU
//!   runs (the crates, and the AVX-512 kernels where it has AVX-512F), on
//!   one thread and spread over the rayon pool.
//!
//! Whole-process comparisons with the ceiling and other tools are
//! `scripts/compare`'s job.

use std::hint::black_box;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

use bt2sum::{
    Algorithm, Event, Job, LeafKernel, TreeHasher, TreeParams, hash, hash_each, hash_path,
};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use criterion::{criterion_group, criterion_main};
use rayon::prelude::*;

const MIB: usize = 1 << 20;
const BIG: usize = 64 * MIB;

/// `len` pseudo-random bytes (xorshift64), the same on every run.
fn data(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// Modest settings so that the whole bench stays around a minute. Flat
/// sampling (the same iteration count in every sample) keeps a slow
/// machine's 64 MiB iterations within the measurement time too.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
}

fn leaf_grouping(c: &mut Criterion) {
    let input = data(BIG);
    let mut group = c.benchmark_group("leaf_grouping");
    configure(&mut group);
    group.throughput(Throughput::Bytes(BIG as u64));
    for algorithm in Algorithm::ALL {
        for (leaf, name) in [(5 * MIB, "5MiB"), (4096, "4KiB")] {
            let params = TreeParams::new(algorithm, algorithm.max_digest_size(), leaf as u64)
                .expect("valid parameters");
            let id = BenchmarkId::new(algorithm.name(), format!("{name} leaves"));
            group.bench_with_input(id, &params, |b, params| {
                b.iter(|| hash(params, black_box(&input)))
            });
        }
    }
    group.finish();
}

/// A reader that hands out at most `piece` bytes per call, like a pipe.
struct Pieces<'a> {
    data: &'a [u8],
    piece: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let count = buf.len().min(self.piece).min(self.data.len());
        buf[..count].copy_from_slice(&self.data[..count]);
        self.data = &self.data[count..];
        Ok(count)
    }
}

fn stdin_pipeline(c: &mut Criterion) {
    let input = data(BIG);
    let mut group = c.benchmark_group("stdin_pipeline");
    configure(&mut group);
    group.throughput(Throughput::Bytes(BIG as u64));
    for algorithm in Algorithm::ALL {
        let params = TreeParams::new(algorithm, algorithm.max_digest_size(), 5 << 20)
            .expect("valid parameters");
        let id = BenchmarkId::new(algorithm.name(), "64KiB reads");
        group.bench_with_input(id, &params, |b, params| {
            b.iter(|| {
                let mut hasher = TreeHasher::new(params);
                let mut reader = Pieces {
                    data: black_box(&input),
                    piece: 64 << 10,
                };
                hasher.update_reader(&mut reader).expect("in-memory read");
                hasher.finalize().expect("finalize")
            })
        });
    }
    group.finish();
}

fn small_files(c: &mut Criterion) {
    const FILES: usize = 256;
    const SIZE: usize = 4096;
    let dir = tempfile::tempdir().expect("temp dir");
    let contents = data(FILES * SIZE);
    let paths: Vec<PathBuf> = (0..FILES)
        .map(|index| {
            let path = dir.path().join(format!("{index:04}"));
            std::fs::write(&path, &contents[index * SIZE..][..SIZE]).expect("write a file");
            path
        })
        .collect();
    let params = TreeParams::default();
    let mut group = c.benchmark_group("small_files");
    configure(&mut group);
    group.throughput(Throughput::Bytes((FILES * SIZE) as u64));
    group.bench_function("256x4KiB/sequential", |b| {
        b.iter(|| {
            for path in &paths {
                black_box(hash_path(&params, path).expect("hash a file"));
            }
        })
    });
    group.bench_function("256x4KiB/par_iter", |b| {
        b.iter(|| {
            paths.par_iter().for_each(|path| {
                black_box(hash_path(&params, path).expect("hash a file"));
            })
        })
    });
    // As the command hashes them: several at once, side by side in the
    // SIMD lanes, reported in order.
    group.bench_function("256x4KiB/hash_each", |b| {
        b.iter(|| {
            let jobs = paths.iter().map(|path| Job::path((), path, &params));
            hash_each(jobs, |event| {
                if let Event::Ready(outcome) = event {
                    black_box(outcome.result.expect("hash a file"));
                }
                ControlFlow::Continue(())
            });
        })
    });
    group.finish();
}

fn leaf_kernels(c: &mut Criterion) {
    let mut group = c.benchmark_group("leaf_kernels");
    configure(&mut group);
    const LEAVES: usize = 32;
    let bytes = data(LEAVES * MIB);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    for algorithm in Algorithm::ALL {
        let tree = TreeParams::new(algorithm, algorithm.max_digest_size(), MIB as u64).unwrap();
        let size = tree.digest_size();
        for kernel in [LeafKernel::Crates, LeafKernel::Avx512] {
            if !kernel.available() {
                eprintln!(
                    "leaf_kernels: this CPU does not run the {} kernel",
                    kernel.name()
                );
                continue;
            }
            let name = format!("{}/{}", algorithm.name(), kernel.name());
            let mut out = vec![0; LEAVES * size];
            group.bench_function(BenchmarkId::new(name.clone(), "one-thread"), |b| {
                b.iter(|| kernel.hash_whole_leaves(&tree, 0, black_box(&bytes), &mut out))
            });
            // Lane groups of 16 leaves (a multiple of every kernel's lanes)
            // over the pool.
            group.bench_function(BenchmarkId::new(name, "all-threads"), |b| {
                b.iter(|| {
                    bytes
                        .par_chunks(16 * MIB)
                        .zip(out.par_chunks_mut(16 * size))
                        .enumerate()
                        .for_each(|(index, (data, out))| {
                            kernel.hash_whole_leaves(&tree, 16 * index as u64, data, out)
                        })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    leaf_grouping,
    stdin_pipeline,
    small_files,
    leaf_kernels
);
criterion_main!(benches);
