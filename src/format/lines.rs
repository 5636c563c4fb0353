//! Reading the lines of a list (a checksum list, a leaf listing, names
//! ended by NUL) with bounded memory.

use std::io::{self, BufRead, Read};

/// A list line longer than this (16 MiB, thousands of times `PATH_MAX`) is
/// improperly formatted, and skipped without being held in memory.
pub const MAX_LINE: usize = crate::memory::IN_MEMORY;

/// One line read from a list.
pub enum Record {
    /// The list has ended.
    End,
    /// A line, in the buffer.
    Line,
    /// A line longer than [`MAX_LINE`], skipped.
    TooLong,
}

/// Reads the next line of a list, `\n` included, into `line`. A line over
/// [`MAX_LINE`] bytes is read past and reported as [`Record::TooLong`],
/// with only its first bytes kept.
pub fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Record> {
    read_until(reader, line, b'\n')
}

/// Reads the next record of a list, up to and with `end` (a line's `\n`, a
/// name's NUL), into `line`, as [`read_line`] reads lines. The line grows
/// only while memory is granted (see `crate::memory`): where it is
/// refused, the list cannot be read on, and that is the error (`Cannot
/// allocate memory`), never an abort.
pub fn read_until(reader: &mut impl BufRead, line: &mut Vec<u8>, end: u8) -> io::Result<Record> {
    line.clear();
    loop {
        let room = make_room(line)?;
        // Within the room made, so the standard library's search (fast)
        // never grows the line itself (infallibly).
        let read = reader.by_ref().take(room as u64).read_until(end, line)?;
        if line.last() == Some(&end) || read == 0 {
            return Ok(if line.is_empty() {
                Record::End
            } else {
                Record::Line
            });
        }
        if line.len() > MAX_LINE {
            reader.skip_until(end)?;
            return Ok(Record::TooLong);
        }
    }
}

/// Makes room in `line` for more of a record, up to `MAX_LINE + 1` bytes in
/// all (which tells a record that is too long): doubling, as a Vec grows,
/// or where that is refused less, down to 4 KiB; the room there is.
fn make_room(line: &mut Vec<u8>) -> io::Result<usize> {
    let most = MAX_LINE + 1 - line.len();
    let spare = line.capacity() - line.len();
    if spare > 0 {
        return Ok(spare.min(most));
    }
    let wanted = line.len().max(256).min(most);
    let room =
        crate::memory::reserve_at_most(line, wanted).ok_or_else(crate::memory::out_of_memory)?;
    Ok(room.min(most))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each record, or `None` for one that is too long.
    type Records = Vec<Option<Vec<u8>>>;

    /// What `read_until` makes of `input`.
    fn records(input: &[u8], end: u8, buffer: usize) -> Records {
        let mut reader = io::BufReader::with_capacity(buffer, input);
        let (mut line, mut records) = (Vec::new(), Vec::new());
        loop {
            match read_until(&mut reader, &mut line, end).unwrap() {
                Record::End => return records,
                Record::Line => records.push(Some(line.clone())),
                Record::TooLong => records.push(None),
            }
        }
    }

    #[test]
    fn records_are_read_whole_up_to_the_limit() {
        let longest = [vec![b'a'; MAX_LINE], b"\n".to_vec()].concat();
        let over = vec![b'b'; MAX_LINE + 1];
        let line = |text: &[u8]| Some(text.to_vec());
        #[rustfmt::skip]
        let table: [(Vec<u8>, u8, Records); 6] = [
            (b"one\ntwo".to_vec(), b'\n', vec![line(b"one\n"), line(b"two")]),
            (b"a\0\0b".to_vec(), 0, vec![line(b"a\0"), line(b"\0"), line(b"b")]),
            ([&longest[..], b"x\n"].concat(), b'\n', vec![Some(longest.clone()), line(b"x\n")]),
            ([&over[..], b"\ny\n"].concat(), b'\n', vec![None, line(b"y\n")]),
            (vec![b'c'; MAX_LINE], b'\n', vec![Some(vec![b'c'; MAX_LINE])]),
            (over.clone(), b'\n', vec![None]),
        ];
        for (input, end, expected) in &table {
            // Records across many buffer refills, and within one.
            for buffer in [7, 8 << 10, 64 << 20] {
                assert!(
                    records(input, *end, buffer) == *expected,
                    "{} bytes",
                    input.len()
                );
            }
        }
        assert!(records(b"", b'\n', 7).is_empty());
    }
}
