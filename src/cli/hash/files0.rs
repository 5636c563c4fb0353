//! `--files0-from=F`: the names of the inputs, each ended by NUL (the last
//! one may lack it), read from F (or standard input, `-`) as the inputs are
//! hashed, so that a list of any length is never held whole. A name is
//! taken as if it were given on the command line.
//!
//! A name that cannot be one is reported where it is, as GNU `wc` and `du`
//! report it (`bt2sum: F:3: invalid zero-length file name`), and the names
//! after it are still hashed: an empty name, a name of over 16 MiB, `-` in a
//! list read from standard input (which is that list), and on Windows a
//! name that is not UTF-8.

use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead};

use crate::cli::output::{Status, report};
use crate::cli::sys;
use crate::cli::walk::Walked;
use bt2sum::format::lines::{MAX_LINE, Record, read_until};
use bt2sum::plain_message;

/// The names of a list, read as they are asked for; where an entry is no
/// name, where it is (`F:N`, or `F` when the list could not be read) and
/// why, as a walk tells where it failed.
pub struct Names {
    /// `None` once the list has ended, or could not be read on.
    reader: Option<Box<dyn BufRead>>,
    /// The list as messages name it.
    list: OsString,
    number: u64,
    record: Vec<u8>,
}

/// Opens a list of names; one that cannot be read is reported.
pub fn open(list: &OsStr) -> Result<Names, Status> {
    let reader = sys::open_list(list).map_err(|error| report(list, &plain_message(&error)))?;
    Ok(Names {
        reader: Some(reader),
        list: list.to_os_string(),
        number: 0,
        record: Vec::new(),
    })
}

impl Iterator for Names {
    type Item = Walked;

    fn next(&mut self) -> Option<Walked> {
        let read = read_until(self.reader.as_mut()?, &mut self.record, 0);
        self.number += 1;
        let message = match read {
            Err(error) => {
                self.reader = None;
                let message = io::Error::other(plain_message(&error));
                return Some(Err((self.list.clone(), message)));
            }
            Ok(Record::End) => {
                self.reader = None;
                return None;
            }
            Ok(Record::TooLong) => format!("file name longer than {} MiB", MAX_LINE >> 20),
            Ok(Record::Line) => {
                let name = self.record.strip_suffix(b"\0").unwrap_or(&self.record);
                if name.is_empty() {
                    "invalid zero-length file name".into()
                } else if self.list == "-" && name == b"-" {
                    "when reading file names from standard input, no file name of '-' allowed"
                        .into()
                } else {
                    match os_name(name) {
                        Some(name) => return Some(Ok(name)),
                        None => "the name is not valid Unicode".into(),
                    }
                }
            }
        };
        let mut place = self.list.clone();
        place.push(format!(":{}", self.number));
        Some(Err((place, io::Error::other(message))))
    }
}

/// A listed name as the system takes it: on Unix its bytes; on Windows its
/// UTF-8 (`\\` and `/` both separate there, as on its command line).
fn os_name(name: &[u8]) -> Option<OsString> {
    #[cfg(unix)]
    return Some(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string());
    #[cfg(not(unix))]
    return std::str::from_utf8(name).ok().map(OsString::from);
}
