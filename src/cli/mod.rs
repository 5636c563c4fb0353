//! The command line: flags parsed and resolved once into a [`Request`]
//! (`args`, `plan`), then handed to the driver of its mode (`hash`,
//! `check`, `combine`), which uses the library and writes the lines.

mod args;
mod audit;
mod beneath;
mod check;
mod combine;
mod hash;
mod man;
mod output;
mod plan;
mod progress;
mod repair;
pub mod sys;
mod tally;
mod walk;

use std::ffi::{OsStr, OsString};
use std::io::{self, BufWriter, IsTerminal, Write};

pub use output::Status;
use output::{ended, warn};
use plan::{Config, Mode, Request};

/// Answers the command line (the program name first); returns the exit
/// status.
pub fn run(args: impl IntoIterator<Item = OsString>) -> Status {
    let request = match Request::from_args(args) {
        Ok(request) => request,
        Err(usage) => {
            let _ = usage.print();
            return Status::Usage;
        }
    };
    let config = match request {
        Request::Run(config) => *config,
        Request::Print(text) => return ended(print(&text)),
    };
    if let Err(status) = set_up(&config) {
        return status;
    }
    let stdout = io::stdout().lock();
    // Line by line to a terminal (above the progress bar, if one is drawn
    // there); in big writes to a pipe or a file, through a descriptor of
    // its own (see `print`). A closed one takes none: lines would vanish
    // into the /dev/null the runtime put there.
    let mut out: Box<dyn Write> = if sys::stdout_closed() {
        Box::new(output::Closed)
    } else if stdout.is_terminal() {
        Box::new(progress::AboveBar(stdout))
    } else {
        match sys::buffered_stdout() {
            Ok(shared) => Box::new(shared),
            Err(_) => Box::new(BufWriter::with_capacity(64 << 10, stdout)),
        }
    };
    output::with_stderr(match &config.mode {
        Mode::Hash(hashing) => hash::run(hashing, config.progress, &mut *out),
        Mode::Check(checking) => check::run(checking, &config, &mut *out),
        Mode::Combine { listings, layout } => combine::run(listings, *layout, &mut *out),
    })
}

/// Acts in `-C`'s directory, and starts the workers if the descriptors
/// suffice; else the status to end with, nothing done.
fn set_up(config: &Config) -> Result<(), Status> {
    if let Some(directory) = &config.directory
        && let Err(error) = std::env::set_current_dir(directory)
    {
        let shown = bt2sum::format::name::Name::of_path_lossy(directory).shown();
        let reason = bt2sum::plain_message(&error);
        warn(&format!("-C: cannot change to {shown}: {reason}"));
        return Err(Status::Usage);
    }
    if let Some((limit, needed)) = bt2sum::budget::descriptors().too_few {
        warn(&format!(
            "too few file descriptors: the limit is {limit} (ulimit -n), and bt2sum needs {needed}"
        ));
        return Err(Status::Failure);
    }
    match sys::start_workers(config.threads) {
        Ok((started, wanted)) if started < wanted => warn(&format!(
            "started {started} of the {wanted} threads asked for: the system grants no more"
        )),
        Ok(_) => {}
        // (A thread the system refuses is left out, not an error: what is
        // left is rayon's own, or a worker that ended before its start.)
        Err(error) => {
            warn(&format!("cannot start worker threads: {error}"));
            return Err(Status::Failure);
        }
    }
    Ok(())
}

/// Writes a text asked for (the help, a manual page) to standard output,
/// through a descriptor of its own: the runtime's standard output takes a
/// write refused as `Bad file descriptor` (a descriptor open for reading
/// only) for a success.
fn print(text: &[u8]) -> io::Result<()> {
    if sys::stdout_closed() {
        return Err(sys::closed_stream());
    }
    sys::duplicate_stdout()?.write_all(text)
}

/// How a list (of checksums, names or leaves) is named in messages.
fn list_name(list: &OsStr) -> &OsStr {
    match list == "-" {
        true => OsStr::new("standard input"),
        false => list,
    }
}
