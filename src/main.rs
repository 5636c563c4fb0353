//! `bt2sum`: print or verify BLAKE2 tree-hash checksums. The command line is
//! in `cli`; the hashing is the `bt2sum` library's.

mod cli;

use std::process::ExitCode;

/// The system's allocator, with a reserve that keeps the last small
/// allocations from aborting under a memory limit (see `cli::memory`).
#[global_allocator]
static ALLOCATOR: cli::memory::WithReserve = cli::memory::WithReserve;

fn main() -> ExitCode {
    cli::prepare_process();
    let status = match cli::Config::from_args(bt2sum::system::args_os()) {
        Ok(config) => cli::run(config),
        Err(error) => cli::refused(&error),
    };
    status.into()
}
