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
use std::io;

use crate::cli::output::{Status, report};
use crate::cli::sys;
use crate::cli::walk::Walked;
use bt2sum::format::lines::{MAX_LINE, Record, read_until};
use bt2sum::plain_message;

/// The names of a list, read as they are asked for; where an entry is no
/// name, where it is (`F:N`, or `F` when the list could not be read) and
/// why, as a walk tells where it failed. A list that cannot be opened is
/// reported.
pub fn open(list: &OsStr) -> Result<Box<dyn Iterator<Item = Walked>>, Status> {
    let reader = sys::open_list(list).map_err(|error| report(list, &plain_message(&error)))?;
    // (`None` once the list has ended, or could not be read on.)
    let (mut reader, list) = (Some(reader), list.to_os_string());
    let (mut number, mut record) = (0, Vec::new());
    Ok(Box::new(std::iter::from_fn(move || {
        let read = read_until(reader.as_mut()?, &mut record, 0);
        number += 1;
        if !matches!(read, Ok(Record::Line | Record::TooLong)) {
            reader = None;
        }
        let message = match read {
            Err(error) => {
                return Some(Err((list.clone(), io::Error::other(plain_message(&error)))));
            }
            Ok(Record::End) => return None,
            Ok(Record::TooLong) => format!("file name longer than {} MiB", MAX_LINE >> 20),
            Ok(Record::Line) => {
                let name = record.strip_suffix(b"\0").unwrap_or(&record);
                if name.is_empty() {
                    "invalid zero-length file name".into()
                } else if list == "-" && name == b"-" {
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
        let mut place = list.clone();
        place.push(format!(":{number}"));
        Some(Err((place, io::Error::other(message))))
    })))
}

/// A listed name as the system takes it: on Unix its bytes; on Windows its
/// UTF-8 (`\\` and `/` both separate there, as on its command line).
fn os_name(name: &[u8]) -> Option<OsString> {
    #[cfg(unix)]
    return Some(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string());
    #[cfg(not(unix))]
    return std::str::from_utf8(name).ok().map(OsString::from);
}
