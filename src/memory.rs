//! Growth that may be refused: the stream's and a read window's buffers.

use std::io;

/// The error of memory refused: `Cannot allocate memory`.
pub fn out_of_memory() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ENOMEM);
    #[cfg(windows)]
    return io::Error::from_raw_os_error(8);
}

/// Reserves room for exactly `additional` more items; whether it was
/// granted.
#[allow(clippy::disallowed_methods)]
pub fn reserve_exact<T>(items: &mut Vec<T>, additional: usize) -> bool {
    items.try_reserve_exact(additional).is_ok()
}
