//! `bt2sum`: print or verify BLAKE2 tree-hash checksums. The command line is
//! in `cli`; the hashing is the `bt2sum` library's.

mod cli;

use std::panic::resume_unwind;
use std::process::ExitCode;

/// The system's allocator; a refusal ends the process with a message, not
/// an abort (see `cli::sys`).
#[global_allocator]
static ALLOCATOR: cli::sys::ReportingAllocator = cli::sys::ReportingAllocator;

/// The work runs on a thread of its own, with a stack of a size bt2sum
/// chooses: the main thread's is whatever `ulimit -s` left it, which can
/// be too small for parsing the command line. Under an address-space limit
/// that leaves no room for it, the main thread does the work itself.
fn main() -> ExitCode {
    cli::sys::set_up_process();
    let work = || cli::run(cli::sys::args_os());
    let room = bt2sum::budget::memory().threads_beside_workers;
    let thread = room.then(|| std::thread::Builder::new().stack_size(2 << 20).spawn(work));
    let status = match thread {
        // (A panic's message is already printed.)
        Some(Ok(thread)) => thread.join().unwrap_or_else(|panic| resume_unwind(panic)),
        _ => work(),
    };
    // A stop signal that came as the work ended still ends the process.
    if cli::sys::stopping() {
        cli::sys::wait_to_be_stopped();
    }
    // (A build with the schedule probe reports what it counted.)
    #[cfg(feature = "schedule-probe")]
    if let Err(error) = bt2sum::schedule_probe::write_report() {
        eprintln!("bt2sum: the schedule probe's report: {error}");
    }
    ExitCode::from(status as u8)
}
