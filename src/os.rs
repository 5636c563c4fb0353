//! The system's calls that several layers make, written once: positional
//! reads and writes, the same on every system (Unix's `pread` and
//! `pwrite`, which leave the file offset alone; Windows' `seek_read` and
//! `seek_write`, which move it, and nothing here reads such a handle in
//! turn), and the size of a memory page.

use std::fs::File;
use std::io;

/// Reads at most `buf.len()` bytes of `file` from `offset`.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
}

/// Fills `buf` with reads at `offset` on (each `read_at(buf, offset)`, as
/// [`read_at`] reads), until it is full or a read gives nothing (the end
/// of the file); interrupted reads are retried. Returns how many bytes were
/// read.
pub fn fill_at(
    buf: &mut [u8],
    offset: u64,
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<usize>,
) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Reads as much of `buf.len()` bytes of `file` from `offset` as it holds
/// ([`fill_at`]); returns how many.
pub fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    fill_at(buf, offset, |buf, offset| read_at(file, buf, offset))
}

/// Reads exactly `buf.len()` bytes of `file` from `offset`: fails with
/// `UnexpectedEof` if the file ends first.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    if read_full_at(file, buf, offset)? < buf.len() {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Writes all of `buf` to `file` at `offset`, extending the file if it
/// ends before.
pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        #[cfg(unix)]
        let written = std::os::unix::fs::FileExt::write_at(file, buf, offset);
        #[cfg(windows)]
        let written = std::os::windows::fs::FileExt::seek_write(file, buf, offset);
        match written {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(count) => {
                buf = &buf[count..];
                offset += count as u64;
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// The size of a memory page.
#[cfg(unix)]
pub fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| {
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    })
}
