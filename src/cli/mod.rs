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

use std::ffi::OsStr;
use std::io::{self, BufWriter, IsTerminal, Write};

pub use output::Status;
use output::{output_failed, warn};
pub use plan::Request;
use plan::{Config, Mode};

/// Answers what the command line asks for; returns the exit status.
pub fn run(request: Request) -> Status {
    let config = match request {
        Request::Run(config) => *config,
        Request::Completions(shell) => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut args::for_completion(), "bt2sum", &mut script);
            return print(&script);
        }
        // (Rendered into memory, which takes every write.)
        Request::Man => return print(&man::page().expect("the page is rendered in memory")),
    };
    if let Err(status) = set_up(&config) {
        return status;
    }
    if sys::stdout_closed() {
        // Lines would vanish into the /dev/null the runtime put there.
        return drive(&config, &mut output::Closed);
    }
    let stdout = io::stdout().lock();
    // Line by line to a terminal (above the progress bar, if one is drawn
    // there); in big writes to a pipe or a file.
    if stdout.is_terminal() {
        return drive(&config, &mut progress::AboveBar(stdout));
    }
    match sys::buffered_stdout() {
        Ok(mut shared) => drive(&config, &mut shared),
        Err(_) => drive(&config, &mut BufWriter::with_capacity(64 << 10, stdout)),
    }
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

/// Hashes, verifies or combines, writing to `out`.
fn drive(config: &Config, out: &mut dyn Write) -> Status {
    output::with_stderr(match &config.mode {
        Mode::Hash(hashing) => hash::run(hashing, config.progress, out),
        Mode::Check(checking) => check::run(checking, config, out),
        Mode::Combine(combining) => combine::run(combining, out),
    })
}

/// What a command line that clap refused means: the help or the version
/// printed (status 0), or a usage error (status 2).
pub fn refused(error: &clap::Error) -> Status {
    if error.use_stderr() {
        let _ = error.print();
        return Status::Usage;
    }
    let text = match io::stdout().is_terminal() {
        true => error.render().ansi().to_string(),
        false => error.render().to_string(),
    };
    print(text.as_bytes())
}

/// Writes generated text (help, a manual page) to standard output, through
/// a descriptor of its own: the runtime's standard output takes a write
/// refused as `Bad file descriptor` (a descriptor open for reading only)
/// for a success.
fn print(text: &[u8]) -> Status {
    if sys::stdout_closed() {
        return output_failed(&sys::closed_stream());
    }
    match sys::duplicate_stdout().and_then(|mut stdout| stdout.write_all(text)) {
        Ok(()) => Status::Success,
        Err(error) => output_failed(&error),
    }
}

/// How a list (of checksums, names or leaves) is named in messages.
fn list_name(list: &OsStr) -> &OsStr {
    match list == "-" {
        true => OsStr::new("standard input"),
        false => list,
    }
}
