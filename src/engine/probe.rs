//! The schedule probe (the `schedule-probe` feature): in a process asked
//! for a report (`BT2SUM_SCHEDULE_PROBE`), counts the leaves handed to the
//! pool and those finished, and samples the leaves ready (handed over, not
//! finished) each time a window is handed over. The test of the schedule
//! reads the samples: whenever the input still had N leaves to go, a
//! window handed over gave the pool at least N (its threads).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Leaves handed to the pool (counted only when a report is asked for),
/// and leaves finished, over the process's life.
static SUBMITTED: AtomicU64 = AtomicU64::new(0);
static FINISHED: AtomicU64 = AtomicU64::new(0);

/// Threads hashing a task now, and the most that ever did at once.
static HASHING: AtomicU64 = AtomicU64::new(0);
static MOST_HASHING: AtomicU64 = AtomicU64::new(0);

/// A thread starts hashing a task.
pub(crate) fn hashing() {
    let now = HASHING.fetch_add(1, Ordering::SeqCst) + 1;
    MOST_HASHING.fetch_max(now, Ordering::SeqCst);
}

/// A thread is done hashing its task.
pub(crate) fn hashed() {
    HASHING.fetch_sub(1, Ordering::SeqCst);
}

/// One sample: the leaves ready (handed to the pool, not finished) and the
/// leaves finished, as a window is handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Leaves handed to the pool and not finished.
    pub ready: u64,
    /// Leaves finished.
    pub finished: u64,
}

static SAMPLES: Mutex<Vec<Sample>> = Mutex::new(Vec::new());

/// Whether this process was asked for a report (`BT2SUM_SCHEDULE_PROBE`):
/// only then are samples kept, so that a build with the probe runs every
/// other test as any build does (its memory bounded under limits).
fn asked() -> bool {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKED.get_or_init(|| std::env::var_os("BT2SUM_SCHEDULE_PROBE").is_some())
}

/// A batch of leaves is handed to the pool.
pub(crate) fn handed(count: usize) {
    if asked() {
        SUBMITTED.fetch_add(count as u64, Ordering::SeqCst);
    }
}

/// A batch of leaves (a window) has been handed over: a sample, taken
/// under the queue's lock, so that it counts the batch whole.
pub(crate) fn sample() {
    if !asked() {
        return;
    }
    let submitted = SUBMITTED.load(Ordering::SeqCst);
    let finished = FINISHED.load(Ordering::SeqCst);
    let ready = submitted.saturating_sub(finished);
    let mut samples = SAMPLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    samples.push(Sample { ready, finished });
}

/// A task is finished.
pub(crate) fn finished(count: usize) {
    FINISHED.fetch_add(count as u64, Ordering::SeqCst);
}

/// The samples so far, and the leaves handed to the pool in all.
pub fn samples() -> (Vec<Sample>, u64) {
    let samples = SAMPLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (samples.clone(), SUBMITTED.load(Ordering::SeqCst))
}

/// Writes the samples to the file `BT2SUM_SCHEDULE_PROBE` names, if it is
/// set: the pool's threads, the leaves in all, the most threads that ever
/// hashed at once (the owner counted), then a sample a line (`ready
/// finished`).
pub fn write_report() -> std::io::Result<()> {
    use std::io::Write;
    let Some(path) = std::env::var_os("BT2SUM_SCHEDULE_PROBE") else {
        return Ok(());
    };
    let (samples, total) = samples();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "threads {}", rayon::current_num_threads())?;
    writeln!(out, "leaves {total}")?;
    writeln!(out, "most_hashing {}", MOST_HASHING.load(Ordering::SeqCst))?;
    for Sample { ready, finished } in samples {
        writeln!(out, "{ready} {finished}")?;
    }
    out.flush()
}
