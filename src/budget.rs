//! A process's budgets, computed once from the limits it starts under:
//! the memory a run's growing structures may hold, from the address space
//! a limit (`ulimit -v`) leaves (what one structure that grows with the
//! input holds before it spills or is cut: a spill store, a check's pass
//! of leaf lines; and what all spill stores hold together), the worker
//! threads that fit in it, and what the descriptors free at the start
//! (under `ulimit -n`) are spent on. No structure probes for memory: each
//! is sized from here, and what the system refuses anyway ends the process
//! with one clear message (the command's allocator).

use std::sync::OnceLock;

/// The memory budgets of a process.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// What one structure that grows with the input holds in memory.
    pub per_structure: usize,
    /// What all spill stores hold in memory together.
    pub spilled_together: usize,
    /// Whether threads may be started beside the workers (one reading
    /// ahead, say): not under a limit that leaves less than 24 MiB, where a
    /// thread that starts may find no room for its signal stack, which
    /// ends the process.
    pub threads_beside_workers: bool,
}

/// The budgets, computed once: 16 MiB a structure and 24 MiB for the
/// spill stores together, or a sixteenth and an eighth of what an
/// address-space limit leaves.
pub fn memory() -> Memory {
    static MEMORY: OnceLock<Memory> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let left = crate::sys::address_space_left().unwrap_or(usize::MAX);
        Memory {
            per_structure: (left / 16).clamp(256 << 10, 16 << 20),
            spilled_together: (left / 8).clamp(1 << 20, 24 << 20),
            threads_beside_workers: left > 24 << 20,
        }
    })
}

/// The stack of the threads bt2sum starts: hashing needs little.
pub const STACK: usize = 1 << 20;

/// What one worker thread is counted for against an address-space limit:
/// its stack and a share of the work.
const PER_THREAD: usize = STACK + (1 << 20);

/// What the process needs besides its workers.
const BASE: usize = 24 << 20;

/// How many worker threads to start: `wanted` (0: one per processor), as
/// many as the address space left holds (none: the calling thread hashes
/// alone).
pub fn workers(wanted: usize) -> usize {
    let wanted = match wanted {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        wanted => wanted,
    };
    match crate::sys::address_space_left() {
        Some(left) => wanted.min(left.saturating_sub(BASE) / PER_THREAD),
        None => wanted,
    }
}

/// What the descriptors free at the start are spent on, under a low limit
/// on open files (`ulimit -n` of 256 or less; above it, everything fits).
#[derive(Clone, Copy, Debug)]
pub struct Descriptors {
    /// Where too few are free for the work (a list being read, the input
    /// in turn, a temporary file for its leaf digests): the limit, and how
    /// many the run needs in all. It cannot start: inputs would be lost to
    /// `Too many open files`.
    pub too_few: Option<(u64, usize)>,
    /// Whether the stop signals' watcher (a socket pair) fits beside the
    /// work; without it the signals act as they would.
    pub signal_watcher: bool,
    /// Whether a copy of standard output (written out on a stop signal)
    /// fits beside the work and the watcher.
    pub stdout_copy: bool,
    /// How many inputs the engine holds open at once (64 at most).
    pub inputs: usize,
}

/// The descriptors the work needs free besides those the process holds at
/// start: a list being read, the input in turn, and a temporary file.
const WORK: usize = 3;

/// The descriptor budget, computed once (the command asks as it starts).
pub fn descriptors() -> Descriptors {
    let Some((limit, free)) = crate::sys::descriptors() else {
        return Descriptors {
            too_few: None,
            signal_watcher: true,
            stdout_copy: true,
            inputs: 64,
        };
    };
    Descriptors {
        too_few: (free < WORK).then(|| (limit, limit as usize - free + WORK)),
        signal_watcher: free >= WORK + 2,
        stdout_copy: free >= WORK + 3,
        inputs: free.saturating_sub(WORK).clamp(1, 64),
    }
}
