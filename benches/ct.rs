//! Benchmarks of the constant-time comparator, modelled on FreeBSD's
//! `TsBcmpShort`, `TsBcmpMid` and `TsBcmpLong`.
//!
//! A 128 KiB buffer is compared against an identical copy: cut into
//! back-to-back segments whose lengths follow a geometric distribution with
//! mean 16 (Short) or 64 (Mid), one comparison per segment; or compared
//! whole in one call (Long). Every benchmark therefore compares 128 KiB per
//! iteration, and criterion reports the throughput in bytes per second.
//!
//! Contenders: a byte-at-a-time loop kept scalar (the analogue of FreeBSD's
//! generic C, which `black_box` on each byte's XOR keeps the compiler from
//! vectorising), the levels of `bt2sum::ct` (`portable`, and `scalar` and
//! `baseline` on x86_64), and the `constant_time_eq` crate.
//!
//! Run with `cargo bench -p bt2sum-benches --bench ct`; `docs/constant-time.md` gives the
//! options of its published figures.

use bt2sum::ct::{Level, timingsafe_bcmp};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

const BUF_LEN: usize = 128 * 1024;

/// splitmix64, for reproducible segment lengths and contents.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Geometric on {0, 1, 2, ...} with the given mean: the number of
    /// failures before the first success of a trial with p = 1/(mean+1).
    fn geometric(&mut self, mean: f64) -> usize {
        let p = 1.0 / (mean + 1.0);
        (self.unit().ln() / (1.0 - p).ln()).floor() as usize
    }
}

/// Back-to-back `(start, len)` segments covering `0..BUF_LEN`.
fn segments(mean: f64, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = Rng(seed);
    let mut segs = Vec::new();
    let mut start = 0;
    while start < BUF_LEN {
        let len = rng.geometric(mean).min(BUF_LEN - start);
        segs.push((start, len));
        start += len;
    }
    segs
}

/// The byte-at-a-time loop: one XOR per byte, kept scalar by `black_box`.
fn byte_loop(a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(a.len(), b.len());
    let mut acc = 0u8;
    for i in 0..a.len() {
        acc |= black_box(a[i] ^ b[i]);
    }
    i32::from(acc)
}

fn portable(a: &[u8], b: &[u8]) -> i32 {
    timingsafe_bcmp(Level::Portable, a, b)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
fn scalar(a: &[u8], b: &[u8]) -> i32 {
    timingsafe_bcmp(Level::Scalar, a, b)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
fn baseline(a: &[u8], b: &[u8]) -> i32 {
    timingsafe_bcmp(Level::Baseline, a, b)
}

fn cte(a: &[u8], b: &[u8]) -> i32 {
    i32::from(!constant_time_eq::constant_time_eq(a, b))
}

/// Benchmarks one contender on one segment list; generic, so that each
/// contender is called directly (and inlined where the compiler wants),
/// as it would be in real code.
fn run<F: Fn(&[u8], &[u8]) -> i32>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    f: F,
    a: &[u8],
    b: &[u8],
    segs: &[(usize, usize)],
) {
    group.bench_function(name, |bencher| {
        bencher.iter(|| {
            let (a, b) = (black_box(a), black_box(b));
            let mut acc = 0;
            for &(start, len) in segs {
                acc |= f(&a[start..start + len], &b[start..start + len]);
            }
            assert_eq!(acc, 0);
            acc
        })
    });
}

fn bench(c: &mut Criterion) {
    let mut a = vec![0u8; BUF_LEN];
    let mut rng = Rng(0xb7_2500);
    for chunk in a.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes()[..chunk.len()]);
    }
    let b = a.clone();
    let short = segments(16.0, 1);
    let mid = segments(64.0, 2);
    let long = vec![(0, BUF_LEN)];
    for (name, segs) in [
        ("TsBcmpShort", &short),
        ("TsBcmpMid", &mid),
        ("TsBcmpLong", &long),
    ] {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(BUF_LEN as u64));
        run(&mut group, "byteloop", byte_loop, &a, &b, segs);
        run(&mut group, "portable", portable, &a, &b, segs);
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        run(&mut group, "scalar", scalar, &a, &b, segs);
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        run(&mut group, "baseline", baseline, &a, &b, segs);
        run(&mut group, "constant_time_eq", cte, &a, &b, segs);
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
