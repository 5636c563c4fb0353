//! Reading the lines of a list (a checksum list, a leaf listing, names
//! ended by NUL) with bounded memory.

use std::io::{self, BufRead, Read};

/// A list line longer than this (16 MiB, thousands of times `PATH_MAX`) is
/// improperly formatted, and skipped without being held in memory.
pub const MAX_LINE: usize = 16 << 20;

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
/// name's NUL), into `line`, as [`read_line`] reads lines.
pub fn read_until(reader: &mut impl BufRead, line: &mut Vec<u8>, end: u8) -> io::Result<Record> {
    line.clear();
    // (The longest and its end, or one byte more: what tells a record that
    // is too long.)
    reader
        .by_ref()
        .take(MAX_LINE as u64 + 2)
        .read_until(end, line)?;
    let ended = line.last() == Some(&end);
    if line.len() - usize::from(ended) > MAX_LINE {
        if !ended {
            reader.skip_until(end)?;
        }
        return Ok(Record::TooLong);
    }
    Ok(match line.is_empty() {
        true => Record::End,
        false => Record::Line,
    })
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
