//! A process's budgets, computed once from the limits it starts under:
//! the memory a structure that grows with the input may hold before it
//! spills or is cut (from what `ulimit -v` leaves), the worker threads
//! that fit, and what the descriptors free at the start (`ulimit -n`) are
//! spent on. No structure probes for memory; what the system refuses
//! anyway ends the process with one clear message (the command's
//! allocator).

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// What one structure that grows with the input holds.
    pub per_structure: usize,
    /// What all spill stores hold in memory together.
    pub spilled_together: usize,
    /// Whether threads may be started beside the workers: not under a limit
    /// that leaves less than 24 MiB, where a thread that starts may find no
    /// room for its signal stack, which ends the process.
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

/// What one worker thread is counted for against an address-space limit.
const PER_THREAD: usize = STACK + (1 << 20);

const BASE: usize = 24 << 20;

/// How many worker threads to start: `wanted` (0: one per processor), as
/// many as the address space left holds.
pub fn workers(wanted: usize) -> usize {
    let wanted = match wanted {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        wanted => wanted,
    };
    let left = crate::sys::address_space_left().unwrap_or(usize::MAX);
    wanted.min(left.saturating_sub(BASE) / PER_THREAD)
}

/// What the descriptors free at the start are spent on, under a limit of
/// 256 or less (above it, everything fits).
#[derive(Clone, Copy, Debug)]
pub struct Descriptors {
    /// Where too few are free for the work: the limit, and how many the run
    /// needs in all. It cannot start.
    pub too_few: Option<(u64, usize)>,
    /// Whether the stop signals' watcher (a socket pair) fits beside the
    /// work; without it the signals act as they would.
    pub signal_watcher: bool,
    /// Whether a copy of standard output fits beside the work and the
    /// watcher.
    pub stdout_copy: bool,
    /// How many inputs the engine holds open at once (64 at most).
    pub inputs: usize,
}

/// The descriptors the work needs free besides those the process holds at
/// start: a list being read, the input in turn, and a temporary file.
const WORK: usize = 3;

pub fn descriptors() -> Descriptors {
    // (Without a limit, everything fits.)
    let (limit, free) = crate::sys::descriptors().unwrap_or((u64::MAX, usize::MAX));
    Descriptors {
        too_few: (free < WORK).then(|| (limit, limit as usize - free + WORK)),
        signal_watcher: free >= WORK + 2,
        stdout_copy: free >= WORK + 3,
        inputs: free.saturating_sub(WORK).clamp(1, 64),
    }
}
