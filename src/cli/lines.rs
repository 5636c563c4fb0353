//! Reading the lines of a list (a checksum list, a leaf listing, names
//! ended by NUL) with bounded memory.

use std::io::{self, BufRead, Read};

/// A list line longer than this (16 MiB, thousands of times `PATH_MAX`) is
/// improperly formatted, and skipped without being held in memory.
pub const MAX_LINE: usize = 16 << 20;

/// One line read from a list.
pub enum ListLine {
    /// The list has ended.
    End,
    /// A line, in the buffer.
    Line,
    /// A line longer than [`MAX_LINE`], skipped.
    TooLong,
}

/// Reads the next line of a list, `\n` included, into `line`. A line over
/// [`MAX_LINE`] bytes is read past and reported as [`ListLine::TooLong`],
/// with only its first bytes kept.
pub fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<ListLine> {
    read_until(reader, line, b'\n')
}

/// Reads the next record of a list, up to and with `end` (a line's `\n`, a
/// name's NUL), into `line`, as [`read_line`] reads lines.
pub fn read_until(reader: &mut impl BufRead, line: &mut Vec<u8>, end: u8) -> io::Result<ListLine> {
    line.clear();
    let read = reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(end, line)?;
    if read == 0 {
        return Ok(ListLine::End);
    }
    if read <= MAX_LINE || line.last() == Some(&end) {
        return Ok(ListLine::Line);
    }
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            break;
        }
        match buffer.iter().position(|&byte| byte == end) {
            Some(end) => {
                reader.consume(end + 1);
                break;
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
    Ok(ListLine::TooLong)
}
