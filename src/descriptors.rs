//! File descriptors under a low limit (`ulimit -n`): how many are free, and
//! tickets that share them out so that no input is lost to `Too many open
//! files`.
//!
//! Inputs are opened ahead of their turn by the pool's threads, several at
//! once, and an input that finds no descriptor free is opened again when
//! its turn comes, on the calling thread. That second open must not fail
//! as well, and it cannot wait for descriptors to be given back: the inputs
//! opened ahead keep theirs until their own turns, after it. So what is
//! opened ahead leaves [`KEPT`] descriptors free, for what is opened in
//! turn: the input in turn, and the temporary file its leaf digests may
//! spill to.
//!
//! Descriptors are counted only where the limit is low: above 256 there are
//! more than the inputs in flight can hold, and a ticket is always granted.
//! (On Windows there is no such limit.)

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The descriptors opening ahead leaves free.
pub(crate) const KEPT: usize = 2;

/// The highest limit under which descriptors are counted: many more than
/// the inputs in flight (at most 64) and the rest hold together.
#[cfg(unix)]
pub(crate) const COUNTED_UP_TO: u64 = 256;

/// When a descriptor is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum When {
    /// Ahead of its turn: granted only while [`KEPT`] stay free.
    Ahead,
    /// In turn: any free one is granted.
    InTurn,
}

/// The right to hold one more descriptor, given back when dropped. Kept
/// beside the descriptor it was taken for.
#[derive(Debug)]
pub(crate) struct Ticket {
    /// The count it was taken from, if descriptors are counted.
    from: Option<&'static AtomicUsize>,
}

impl Ticket {
    /// A ticket for a descriptor the process did not open (one handed to
    /// it): nothing to count.
    pub(crate) fn uncounted() -> Ticket {
        Ticket { from: None }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(free) = self.from {
            free.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// The descriptors not held, counted when the first ticket is asked for
/// (by then the process holds what it holds for good: its standard
/// descriptors, its output, a list being read); `None` where the limit is
/// high.
static FREE: LazyLock<Option<AtomicUsize>> =
    LazyLock::new(|| free_now().map(|(_, free)| AtomicUsize::new(free)));

/// A ticket for one more descriptor, if one may be opened `when`.
pub(crate) fn take(when: When) -> Option<Ticket> {
    match &*FREE {
        Some(free) => take_from(free, when),
        None => Some(Ticket::uncounted()),
    }
}

/// A ticket from the `free` descriptors, if one may be opened `when`.
fn take_from(free: &'static AtomicUsize, when: When) -> Option<Ticket> {
    let keep = match when {
        When::Ahead => KEPT,
        When::InTurn => 0,
    };
    let taken = free.fetch_update(Ordering::AcqRel, Ordering::Acquire, |free| {
        (free > keep).then(|| free - 1)
    });
    taken.ok().map(|_| Ticket { from: Some(free) })
}

/// The error for a descriptor that may not be opened, as the system gives
/// it when none is left.
pub(crate) fn too_many_open_files() -> std::io::Error {
    #[cfg(unix)]
    return std::io::Error::from_raw_os_error(libc::EMFILE);
    // ERROR_TOO_MANY_OPEN_FILES (never given: no limit is counted there).
    #[cfg(windows)]
    return std::io::Error::from_raw_os_error(4);
}

/// The limit on descriptors and how many of them are free now, if the limit
/// is low enough to count them (256 or less).
pub(crate) fn free_now() -> Option<(u64, usize)> {
    #[cfg(unix)]
    {
        // SAFETY: a zeroed rlimit is valid to receive the current one.
        let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: reads the limit into a valid struct.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        // (Compared as `rlim_t`, whose width and sign vary by system, and
        // whose infinity is its highest value.)
        if limit.rlim_cur > COUNTED_UP_TO as libc::rlim_t {
            return None;
        }
        let limit = limit.rlim_cur as u64;
        // Descriptors are numbered below the limit: each number is asked
        // whether it is open.
        let held = (0..limit as libc::c_int)
            // SAFETY: F_GETFD only reads a descriptor's flags, and fails on
            // a number that is not open.
            .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1)
            .count();
        Some((limit, (limit as usize).saturating_sub(held)))
    }
    #[cfg(not(unix))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_ahead_leaves_the_kept_descriptors_to_opening_in_turn() {
        static FREE: AtomicUsize = AtomicUsize::new(KEPT + 2);
        let count = || FREE.load(Ordering::Relaxed);
        let ahead: Vec<Ticket> = (0..2)
            .map(|_| take_from(&FREE, When::Ahead).unwrap())
            .collect();
        assert!(
            take_from(&FREE, When::Ahead).is_none(),
            "the kept ones stay free"
        );
        assert_eq!(count(), KEPT, "a ticket refused takes nothing");
        let in_turn: Vec<Ticket> = (0..KEPT)
            .map(|_| take_from(&FREE, When::InTurn).unwrap())
            .collect();
        assert!(take_from(&FREE, When::InTurn).is_none(), "none is left");
        assert_eq!(count(), 0);
        drop(ahead);
        assert_eq!(count(), 2, "dropped tickets give their descriptors back");
        drop(in_turn);
        assert_eq!(count(), KEPT + 2);
        drop(Ticket::uncounted());
        assert_eq!(count(), KEPT + 2);
    }

    #[cfg(unix)]
    #[test]
    fn free_descriptors_are_counted_under_a_low_limit() {
        // (The runner's limit is usually above the counted range; the
        // binary's tests run under low ones.)
        if let Some((limit, free)) = free_now() {
            assert!(limit <= COUNTED_UP_TO);
            assert!(
                free <= limit as usize - 3,
                "the standard descriptors are held"
            );
        }
    }
}
