//! Memory that grows with the input is taken only while some stays free.
//!
//! What grows with the input (batch buffers, kept leaves, a check pass) is
//! reserved fallibly, and a refusal is an answer: a smaller batch, a spill
//! to a file, a shorter pass. But the standard library and rayon allocate
//! small blocks infallibly (a channel, a job), and a process that took every
//! byte an address-space limit (`ulimit -v`) allows would abort on the next
//! one. So a reservation counts as granted only if [`HEADROOM`] more can
//! still be had after it.

use std::io;
use std::thread::JoinHandle;

/// What stays free beside what grows with the input.
pub const HEADROOM: usize = 1 << 20;

/// The error for memory that was refused, in the system's words (`Cannot
/// allocate memory` on Unix), as bt2sum reports it instead of aborting.
pub fn out_of_memory() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ENOMEM);
    // ERROR_NOT_ENOUGH_MEMORY.
    #[cfg(windows)]
    return io::Error::from_raw_os_error(8);
}

/// The stack of a thread that needs no size of its own: the standard
/// library's default (a thread started here is given its size, so
/// `RUST_MIN_STACK` does not change it).
pub const DEFAULT_STACK: usize = 2 << 20;

/// Starts a thread named `name` with a stack of `stack` bytes, only while
/// that stack and [`HEADROOM`] more can be had: [`out_of_memory`] if not.
///
/// The standard library maps a new thread's signal stack from inside the
/// thread and aborts the process if it cannot, so a thread started at the
/// very edge of an address-space limit would end the process; refused here,
/// it is an error its caller can take (the work goes on with fewer threads,
/// or without what the thread would have done).
pub fn spawn<T: Send + 'static>(
    name: &str,
    stack: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    if !can_map(stack.saturating_add(HEADROOM)) {
        return Err(out_of_memory());
    }
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(stack)
        .spawn(work)
}

/// Whether `bytes` of address space can still be had, as a thread's stack
/// takes them (they are given back at once). On Unix the system is asked
/// directly, not the allocator: glibc raises its threshold for mapping big
/// blocks to the size of each one freed, so a probe of a few MiB through
/// it would make later buffers of that size come from the heap, copied
/// when they grow.
fn can_map(bytes: usize) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: maps fresh memory that nothing can touch (PROT_NONE) and
        // that nothing else knows of, then unmaps it.
        unsafe {
            let mapped = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANON,
                -1,
                0,
            );
            if mapped == libc::MAP_FAILED {
                return false;
            }
            libc::munmap(mapped, bytes);
        }
        true
    }
    #[cfg(not(unix))]
    return Vec::<u8>::new().try_reserve_exact(bytes).is_ok();
}

/// Whether [`HEADROOM`] bytes can still be had (they are given back at
/// once).
pub fn room_left() -> bool {
    Vec::<u8>::new().try_reserve_exact(HEADROOM).is_ok()
}

/// Reserves room for exactly `additional` more bytes of `bytes`, if that
/// leaves [`HEADROOM`] free; `false` (and `bytes` as it was) if not.
pub fn reserve_exact(bytes: &mut Vec<u8>, additional: usize) -> bool {
    let capacity = bytes.capacity();
    if bytes.try_reserve_exact(additional).is_err() {
        return false;
    }
    if !room_left() {
        bytes.shrink_to(capacity);
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread is started where its stack and the headroom can be had,
    /// and refused, as memory is, where they cannot.
    #[test]
    fn threads_start_only_with_room_for_their_stacks() {
        let started = spawn("small", 64 << 10, || 7).expect("a small thread starts");
        assert_eq!(started.join().unwrap(), 7);
        // Sizes no address space holds: half of one is not enough, as a
        // 32-bit process on a 64-bit kernel can map 2 GiB at once.
        for stack in [usize::MAX - HEADROOM, usize::MAX - 1] {
            let refused = spawn("huge", stack, || ()).expect_err("no such stack");
            assert_eq!(refused.kind(), io::ErrorKind::OutOfMemory, "{stack}");
        }
    }
}
