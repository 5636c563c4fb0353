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

    /// Each record as kept, or `Err` for one that is too long.
    type Records = Vec<Result<Vec<u8>, ()>>;

    /// What `read_until` makes of `input`.
    fn records(input: &[u8], end: u8, buffer: usize) -> Records {
        let mut reader = io::BufReader::with_capacity(buffer, input);
        let mut line = Vec::new();
        let mut records = Vec::new();
        loop {
            match read_until(&mut reader, &mut line, end).unwrap() {
                Record::End => return records,
                Record::Line => records.push(Ok(line.clone())),
                Record::TooLong => records.push(Err(())),
            }
        }
    }

    #[test]
    fn records_are_read_whole_up_to_the_limit() {
        let at_limit = [vec![b'a'; MAX_LINE], b"\n".to_vec()].concat();
        let over = [vec![b'b'; MAX_LINE + 1], b"\n".to_vec()].concat();
        let unended_at_limit = vec![b'c'; MAX_LINE];
        let unended_over = vec![b'd'; MAX_LINE + 1];
        let table: [(Vec<u8>, u8, Records); 8] = [
            (b"".to_vec(), b'\n', vec![]),
            (
                b"one\ntwo\n".to_vec(),
                b'\n',
                vec![Ok(b"one\n".to_vec()), Ok(b"two\n".to_vec())],
            ),
            (b"last".to_vec(), b'\n', vec![Ok(b"last".to_vec())]),
            (
                b"a\0\0b".to_vec(),
                0,
                vec![Ok(b"a\0".to_vec()), Ok(b"\0".to_vec()), Ok(b"b".to_vec())],
            ),
            (
                [at_limit.clone(), b"x\n".to_vec()].concat(),
                b'\n',
                vec![Ok(at_limit), Ok(b"x\n".to_vec())],
            ),
            (
                [over, b"y\n".to_vec()].concat(),
                b'\n',
                vec![Err(()), Ok(b"y\n".to_vec())],
            ),
            (unended_at_limit.clone(), b'\n', vec![Ok(unended_at_limit)]),
            (unended_over, b'\n', vec![Err(())]),
        ];
        let mut checked = 0;
        for (input, end, expected) in &table {
            // Records across many buffer refills, and within one.
            for buffer in [7, 8 << 10, 64 << 20] {
                assert!(
                    records(input, *end, buffer) == *expected,
                    "{} bytes, buffer {buffer}",
                    input.len()
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 8 * 3);
    }
}
