//! The exit statuses, and the one way messages reach standard error.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use bt2sum::format::name::Name;
use bt2sum::plain_message;

use super::progress;

/// The exit status of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Every input hashed, every listed file verified.
    Success = 0,
    /// Some input failed (unreadable, changed, mismatched), or output did.
    Failure = 1,
    /// Bad usage: nothing was done.
    Usage = 2,
}

impl Status {
    /// The worse of two statuses.
    pub fn max(self, other: Status) -> Status {
        Ord::max(self, other)
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status as u8)
    }
}

/// Writes `bt2sum: NAME: MESSAGE` to standard error (above the progress
/// bar, if one is drawn), the name as verdicts show it ([`Name::shown`]:
/// as lines print it, escaped after a leading `\` if it holds a backslash
/// or a control byte). A name that lines cannot print is shown with the
/// characters it cannot have replaced.
pub fn report(name: &OsStr, message: &str) {
    report_listed(Name::of_path_lossy(name).printed(), message);
}

/// [`report`] for a name as a list gives it, in bytes.
pub fn report_listed(name: &[u8], message: &str) {
    let mut line = b"bt2sum: ".to_vec();
    Name::listed(name).push_shown(&mut line);
    line.extend_from_slice(b": ");
    line.extend_from_slice(message.as_bytes());
    line.push(b'\n');
    write_stderr(&line);
}

/// Writes `bt2sum: MESSAGE` to standard error.
pub fn warn(message: &str) {
    write_stderr(format!("bt2sum: {message}\n").as_bytes());
}

/// Whether a message could not be written to standard error: the run then
/// fails, as GNU's tools do (`2>/dev/full`), whatever else it did.
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes a whole line to standard error, above the progress bar if one is
/// drawn.
fn write_stderr(line: &[u8]) {
    progress::suspend(|| {
        if io::stderr().write_all(line).is_err() {
            STDERR_FAILED.store(true, Ordering::Relaxed);
        }
    });
}

/// The status of a run that ended with `status`, counting a message that
/// could not be written to standard error as a failure.
pub fn with_stderr(status: Status) -> Status {
    if STDERR_FAILED.load(Ordering::Relaxed) {
        status.max(Status::Failure)
    } else {
        status
    }
}

/// What a failed write to standard output means for the run: a closed pipe
/// (`| head -1`) ends it quietly and successfully; anything else is an error.
pub fn output_failed(error: &io::Error) -> Status {
    if error.kind() == io::ErrorKind::BrokenPipe {
        Status::Success
    } else {
        warn(&format!("write error: {}", plain_message(error)));
        Status::Failure
    }
}

/// Standard output that was closed when the process started: every write
/// fails as writing to a closed descriptor does.
pub struct Closed;

impl Write for Closed {
    fn write(&mut self, _buf: &[u8]) -> io::Result<usize> {
        Err(crate::cli::system::closed_stream())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
