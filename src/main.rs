//! `bt2sum`: print or verify BLAKE2 tree-hash checksums. The command line is
//! in `cli`; the hashing is the `bt2sum` library's.

mod cli;

use std::process::ExitCode;

/// The system's allocator, with a reserve that keeps the last small
/// allocations from aborting under a memory limit (see `cli::memory`).
#[global_allocator]
static ALLOCATOR: cli::memory::WithReserve = cli::memory::WithReserve;

/// The work runs on a thread of its own, with a stack of a size bt2sum
/// chooses: the main thread's is whatever `ulimit -s` left it, which can
/// be too small for parsing the command line (24 KiB is enough to start
/// the thread; GNU's tools need about as much). If the thread cannot be
/// started (no room for its stack), the main thread does the work itself.
fn main() -> ExitCode {
    cli::prepare_process();
    let status =
        match bt2sum::binary::memory::spawn("main", bt2sum::binary::memory::DEFAULT_STACK, work) {
            Ok(thread) => match thread.join() {
                Ok(status) => status,
                // (The panic's message is already printed.)
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => work(),
        };
    // (A build with the schedule probe reports what it counted.)
    #[cfg(feature = "schedule-probe")]
    if let Err(error) = bt2sum::schedule_probe::write_report() {
        eprintln!("bt2sum: the schedule probe's report: {error}");
    }
    status.into()
}

fn work() -> cli::Status {
    match cli::Config::from_args(bt2sum::binary::system::args_os()) {
        Ok(config) => cli::run(config),
        Err(error) => cli::refused(&error),
    }
}
