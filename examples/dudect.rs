//! A dudect-style statistical timing test of the constant-time comparator
//! (run on demand, not in CI: its verdict depends on the machine's noise).
//!
//! For each level of `bt2sum::ct`, and for a deliberately leaky early-exit
//! comparator as the control, it times many single calls on two randomly
//! interleaved classes of inputs of the same length: equal inputs, and
//! inputs that differ in byte 0 (where an early-exit comparator stops at
//! once). Welch's t-test compares the two timing distributions, over all
//! measurements and over measurements cropped at several percentiles (to
//! shed interrupts and other noise, as dudect does); the largest |t| is
//! reported.
//!
//! Reading the result (dudect's thresholds): |t| < 4.5 is no evidence of a
//! leak; |t| > 10 is a leak. The control must come out far above 10, which
//! shows that the method, on this machine, can see a leak.
//!
//! ```text
//! cargo run --release --example dudect [-- MEASUREMENTS_PER_TEST]
//! ```
//!
//! Timing uses `rdtsc` fenced with `lfence` on x86_64 and `Instant`
//! elsewhere.

use bt2sum::ct::{Level, timingsafe_bcmp};
use std::hint::black_box;

/// splitmix64, for reproducible inputs and class sequences.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A timestamp in TSC ticks (x86_64) or nanoseconds.
#[inline(always)]
fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_lfence, _rdtsc};
        // SAFETY: lfence (SSE2) and rdtsc exist on every x86_64 CPU.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// The control: a byte loop that returns at the first difference.
#[inline(never)]
fn leaky(a: &[u8], b: &[u8]) -> i32 {
    for i in 0..a.len() {
        if black_box(a[i]) != b[i] {
            return 1;
        }
    }
    0
}

/// A comparator under test.
type Comparator = dyn Fn(&[u8], &[u8]) -> i32;

/// Welch's t statistic of two samples.
fn welch_t(x: &[f64], y: &[f64]) -> f64 {
    let stats = |s: &[f64]| {
        let n = s.len() as f64;
        let mean = s.iter().sum::<f64>() / n;
        let var = s.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
        (n, mean, var)
    };
    let (nx, mx, vx) = stats(x);
    let (ny, my, vy) = stats(y);
    let se = (vx / nx + vy / ny).sqrt();
    if se == 0.0 { 0.0 } else { (mx - my) / se }
}

struct Outcome {
    max_t: f64,
    full_t: f64,
    median: [u64; 2],
}

/// Times `n` calls of `f` on inputs of `len` bytes, the two classes
/// randomly interleaved; returns the t statistics.
fn measure(f: &Comparator, len: usize, n: usize, seed: u64) -> Outcome {
    const POOL: usize = 1024;
    let mut rng = Rng(seed);
    // One pool of buffers for both classes, so that addresses and cache
    // state cannot tell the classes apart: before each call, byte 0 of `b`
    // is written either as a copy of `a[0]` (class 0: equal) or as
    // `a[0] ^ delta` with a random non-zero delta (class 1: differ in
    // byte 0); the same store happens in both classes.
    let mut pool: Vec<(Vec<u8>, Vec<u8>)> = (0..POOL)
        .map(|_| {
            let a: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            (a.clone(), a)
        })
        .collect();
    let classes: Vec<u8> = (0..n).map(|_| (rng.next() & 1) as u8).collect();
    let deltas: Vec<u8> = classes
        .iter()
        .map(|&c| {
            if c == 0 {
                0
            } else {
                1 + (rng.next() % 255) as u8
            }
        })
        .collect();
    let picks: Vec<usize> = (0..n).map(|_| rng.next() as usize % POOL).collect();
    let mut times = vec![0u64; n];
    let mut call = |i: usize, time: bool| {
        let (a, b) = &mut pool[picks[i]];
        b[0] = a[0] ^ deltas[i];
        let (a, b) = (black_box(&a[..]), black_box(&b[..]));
        let t0 = now();
        let r = f(a, b);
        let t1 = now();
        black_box(r);
        if time {
            times[i] = t1.wrapping_sub(t0);
        }
    };
    // Warm up caches and predictors, then measure.
    for i in 0..n.min(10_000) {
        call(i, false);
    }
    for i in 0..n {
        call(i, true);
    }
    // Split by class, and crop at percentiles of the whole distribution.
    let mut sorted = times.clone();
    sorted.sort_unstable();
    let mut max_t: f64 = 0.0;
    let mut full_t = 0.0;
    let mut median = [0u64; 2];
    for (k, q) in [1.0, 0.999, 0.99, 0.95, 0.9, 0.75, 0.5]
        .into_iter()
        .enumerate()
    {
        let cut = sorted[((n as f64 - 1.0) * q) as usize];
        let mut by_class: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for i in 0..n {
            if times[i] <= cut {
                by_class[classes[i] as usize].push(times[i] as f64);
            }
        }
        let t = welch_t(&by_class[0], &by_class[1]);
        if k == 0 {
            full_t = t;
            for c in 0..2 {
                let mut v: Vec<u64> = by_class[c].iter().map(|&x| x as u64).collect();
                v.sort_unstable();
                median[c] = v[v.len() / 2];
            }
        }
        max_t = max_t.max(t.abs());
    }
    Outcome {
        max_t,
        full_t,
        median,
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("MEASUREMENTS_PER_TEST must be a number"))
        .unwrap_or(1_000_000);
    let unit = if cfg!(target_arch = "x86_64") {
        "TSC ticks"
    } else {
        "ns"
    };
    println!("dudect: {n} measurements per test, classes: equal vs differ in byte 0");
    println!(
        "{:<22} {:>5} {:>9} {:>9} {:>10} {:>10}  verdict",
        "comparator", "len", "max |t|", "t (all)", "med eq", "med ne"
    );
    let mut contenders: Vec<(String, Box<Comparator>)> = Vec::new();
    for &level in Level::available() {
        contenders.push((
            format!("{level:?}"),
            Box::new(move |a: &[u8], b: &[u8]| timingsafe_bcmp(level, a, b)),
        ));
    }
    contenders.push(("leaky control".to_string(), Box::new(leaky)));
    let mut control_caught = true;
    // 16 and 64 bytes take the short paths, 128 and 1024 the loops.
    for len in [16usize, 64, 128, 1024] {
        for (seed, (name, f)) in contenders.iter().enumerate() {
            let o = measure(f.as_ref(), len, n, 0xd0d0 + seed as u64 + len as u64);
            let verdict = if o.max_t > 10.0 {
                "LEAK"
            } else if o.max_t > 4.5 {
                "inconclusive"
            } else {
                "no leak detected"
            };
            if name == "leaky control" && o.max_t <= 10.0 {
                control_caught = false;
            }
            println!(
                "{name:<22} {len:>5} {:>9.2} {:>9.2} {:>10} {:>10}  {verdict}",
                o.max_t, o.full_t, o.median[0], o.median[1]
            );
        }
    }
    println!("(medians in {unit}; |t| < 4.5: no evidence of a leak, |t| > 10: leak)");
    if !control_caught {
        println!("WARNING: the leaky control was not detected; the measurement is too noisy");
        std::process::exit(1);
    }
}
