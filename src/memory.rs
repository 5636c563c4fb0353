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

/// What stays free beside what grows with the input.
pub const HEADROOM: usize = 1 << 20;

/// What one structure that grows with its input holds in memory before it
/// spills to a file or is cut into passes: a spool or a sorter, a leaf log,
/// the listed leaves of a check, one check pass. A list line longer than
/// this is refused rather than held.
pub const IN_MEMORY: usize = 16 << 20;

/// The error for memory that was refused, in the system's words (`Cannot
/// allocate memory` on Unix), as bt2sum reports it instead of aborting.
pub fn out_of_memory() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ENOMEM);
    // ERROR_NOT_ENOUGH_MEMORY.
    #[cfg(windows)]
    return io::Error::from_raw_os_error(8);
}

/// Held while memory grows (in [`reserve`] and its kin) and while a thread
/// is being started ([`spawn`]), so that the two never race for the same
/// room.
fn lock_growth() -> std::sync::MutexGuard<'static, ()> {
    static GROWTH: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GROWTH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `bytes` of address space can still be had, as a thread's stack
/// takes them (they are given back at once). On Unix the system is asked
/// directly, not the allocator: glibc raises its threshold for mapping big
/// blocks to the size of each one freed, so a probe of a few MiB through
/// it would make later buffers of that size come from the heap, copied
/// when they grow.
#[allow(clippy::disallowed_methods)]
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

/// Whether [`HEADROOM`] bytes of address space can still be had: asked of
/// the system, as for a thread's stack, since the allocator would answer
/// from free room inside its heap, which the system's mappings cannot use.
pub fn room_left() -> bool {
    can_map(HEADROOM)
}

/// Reserves room for `additional` more items of `items` (growing as a
/// `Vec` grows, by doubling), if that leaves [`HEADROOM`] free; `false` (and
/// `items` as it was) if not. Everything that grows with the input or the
/// thread count grows through this or [`reserve_exact`]: memory refused is
/// then an answer (a smaller buffer, a spill, `Cannot allocate memory`),
/// and the small blocks the standard library allocates without asking
/// still find room. (Clippy refuses `Vec::try_reserve` anywhere else.)
#[allow(clippy::disallowed_methods)]
pub fn reserve<T>(items: &mut Vec<T>, additional: usize) -> bool {
    keeping_headroom(items, additional, |items| {
        items.try_reserve(additional).is_ok()
    })
}

/// [`reserve`], for exactly `additional` more items.
#[allow(clippy::disallowed_methods)]
pub fn reserve_exact<T>(items: &mut Vec<T>, additional: usize) -> bool {
    keeping_headroom(items, additional, |items| {
        items.try_reserve_exact(additional).is_ok()
    })
}

/// [`reserve`], for `additional` more entries of a map.
#[allow(clippy::disallowed_methods)]
pub fn reserve_map<K: Eq + std::hash::Hash, V>(
    map: &mut std::collections::HashMap<K, V>,
    additional: usize,
) -> bool {
    let capacity = map.capacity();
    if capacity - map.len() >= additional {
        return true;
    }
    let _growing = lock_growth();
    if map.try_reserve(additional).is_err() {
        return false;
    }
    if !room_left() {
        map.shrink_to(capacity);
        return false;
    }
    true
}

/// Room for up to `most` more bytes of `bytes`, as [`halving`] asks for it;
/// the room there is after it, `None` if even the least was refused.
pub fn reserve_at_most(bytes: &mut Vec<u8>, most: usize) -> Option<usize> {
    halving(most, |wanted| reserve_exact(bytes, wanted))?;
    Some(bytes.capacity() - bytes.len())
}

/// What a buffer does when memory is short: it asks `reserve` for `most`
/// bytes, or, where that is refused, half as many, and so on down to 4 KiB
/// (or `most`, if less); the size granted, `None` if even that was refused.
pub fn halving(most: usize, mut reserve: impl FnMut(usize) -> bool) -> Option<usize> {
    let mut wanted = most;
    while !reserve(wanted) {
        if wanted <= 4096 {
            return None;
        }
        wanted /= 2;
    }
    Some(wanted)
}

/// Grows `items` with `grow` to room for `additional` more, and takes it
/// back if [`HEADROOM`] is then no longer free. (Room already there takes
/// no lock and no system call.)
fn keeping_headroom<T>(
    items: &mut Vec<T>,
    additional: usize,
    grow: impl FnOnce(&mut Vec<T>) -> bool,
) -> bool {
    let capacity = items.capacity();
    if capacity - items.len() >= additional {
        return true;
    }
    let _growing = lock_growth();
    if !grow(items) {
        return false;
    }
    if !room_left() {
        items.shrink_to(capacity);
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Halving: what is granted is the most asked for, halved until the
    /// reservation takes it, and never less than 4 KiB (or `most`).
    #[test]
    fn halving_asks_for_less_down_to_4_kib() {
        for (most, limit, granted) in [
            (1 << 20, usize::MAX, Some(1 << 20)),
            (1 << 20, 300_000, Some(1 << 18)),
            (1 << 20, 4096, Some(4096)),
            (1 << 20, 4095, None),
            (1000, usize::MAX, Some(1000)),
            (1000, 999, None),
        ] {
            let mut asked = Vec::new();
            let got = halving(most, |wanted| {
                asked.push(wanted);
                wanted <= limit
            });
            assert_eq!(got, granted, "{most} under {limit}: asked {asked:?}");
        }
    }

    /// Growth that no address space holds is refused and leaves the vector
    /// as it was; room already there is granted without growing.
    #[test]
    fn reservations_are_refused_where_nothing_would_be_left() {
        let mut bytes = vec![1u8; 10];
        assert!(!reserve_exact(&mut bytes, usize::MAX / 2));
        assert!(!reserve(&mut bytes, usize::MAX / 2));
        assert_eq!(bytes, vec![1u8; 10]);
        assert!(reserve_exact(&mut bytes, 100));
        let capacity = bytes.capacity();
        assert!(reserve(&mut bytes, 50));
        assert_eq!(bytes.capacity(), capacity);
        let mut map = std::collections::HashMap::<u64, u64>::new();
        assert!(reserve_map(&mut map, 10));
        assert!(!reserve_map(&mut map, usize::MAX / 64));
        assert_eq!(reserve_at_most(&mut Vec::new(), 8192), Some(8192));
    }
}
