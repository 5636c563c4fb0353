//! The memory a run's growing structures may hold, computed once per
//! process from the address space a limit (`ulimit -v`) leaves: what one
//! structure that grows with the input holds before it spills or is cut
//! (a spill store, a check's pass of leaf lines), and what all spill stores
//! hold together. No structure probes for memory: each is sized from
//! here, and what the system refuses anyway ends the process with one
//! clear message (the command's allocator).

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

/// The budgets, computed once: 16 MiB a structure and 64 MiB together, or
/// a sixteenth and an eighth of what an address-space limit leaves.
pub fn memory() -> Memory {
    static MEMORY: OnceLock<Memory> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let left = crate::sys::address_space_left().unwrap_or(usize::MAX);
        Memory {
            per_structure: (left / 16).clamp(256 << 10, 16 << 20),
            spilled_together: (left / 8).clamp(1 << 20, 64 << 20),
            threads_beside_workers: left > 24 << 20,
        }
    })
}
