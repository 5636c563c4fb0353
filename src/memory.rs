//! Memory that grows with the input is taken only while some stays free.
//!
//! What grows with the input (batch buffers, kept leaves, a check pass) is
//! reserved fallibly, and a refusal is an answer: a smaller batch, a spill
//! to a file, a shorter pass. But the standard library and rayon allocate
//! small blocks infallibly (a channel, a job), and a process that took every
//! byte an address-space limit (`ulimit -v`) allows would abort on the next
//! one. So a reservation counts as granted only if [`HEADROOM`] more can
//! still be had after it.

/// What stays free beside what grows with the input.
pub const HEADROOM: usize = 1 << 20;

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
