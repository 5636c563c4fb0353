//! The command line: flags parsed and resolved once into a [`Config`]
//! (`args`, `config`), then handed to the driver of its mode (`hash`,
//! `check`, `combine`), which uses the library and writes the lines.

mod args;
mod check;
mod combine;
mod config;
mod hash;
mod man;
mod output;
mod progress;
mod walk;

use std::io::{self, BufWriter, IsTerminal, Write};

use clap::CommandFactory;

pub use config::Config;
use config::Mode;
pub use output::Status;
use output::{output_failed, warn};

/// Runs a resolved configuration; returns the exit status.
pub fn run(config: Config) -> Status {
    match &config.mode {
        Mode::Completions(shell) => {
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut args::Args::command(), "bt2sum", &mut script);
            return print(&script);
        }
        Mode::Man => {
            return match man::page() {
                Ok(page) => print(&page),
                Err(error) => {
                    warn(&format!("cannot render the manual page: {error}"));
                    Status::Failure
                }
            };
        }
        Mode::Hash(_) | Mode::Check(_) | Mode::Combine(_) => {}
    }
    if let Err(error) = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.unwrap_or(0))
        .build_global()
    {
        warn(&format!("cannot start worker threads: {error}"));
        return Status::Failure;
    }
    let stdout = io::stdout().lock();
    // Line by line to a terminal (above the progress bar, if one is drawn
    // there); in big writes to a pipe or a file.
    if stdout.is_terminal() {
        drive(&config, &mut progress::AboveBar(stdout))
    } else {
        drive(&config, &mut BufWriter::with_capacity(64 << 10, stdout))
    }
}

/// Hashes, verifies or combines, writing to `out`.
fn drive(config: &Config, out: &mut dyn Write) -> Status {
    match &config.mode {
        Mode::Hash(hashing) => hash::run(hashing, config.progress, out),
        Mode::Check(checking) => check::run(checking, config.progress, out),
        Mode::Combine(combining) => combine::run(combining, out),
        Mode::Completions(_) | Mode::Man => Status::Success,
    }
}

/// What a command line that clap refused means: the help or the version
/// printed (status 0), or a usage error (status 2).
pub fn refused(error: &clap::Error) -> Status {
    let printed = error.print().and_then(|()| io::stdout().flush());
    if error.use_stderr() {
        return Status::Usage;
    }
    match printed {
        Ok(()) => Status::Success,
        Err(error) => output_failed(&error),
    }
}

/// Writes generated text to standard output.
fn print(text: &[u8]) -> Status {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(text).and_then(|()| stdout.flush()) {
        Ok(()) => Status::Success,
        Err(error) => output_failed(&error),
    }
}
