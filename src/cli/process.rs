//! The process around the work: the worker threads, and standard output
//! shared with the stop signals' watcher that writes out the lines already
//! done
//! (what differs between platforms is in `bt2sum::binary::system`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bt2sum::binary::{memory, system};

/// The memory that the threads started leave for the work itself (its
/// buffers, the lists it reads), beside their stacks: under an address-space
/// limit (`ulimit -v`) that lets only some of the threads asked for start,
/// the pool is that much smaller rather than leaving the work no room.
const WORK_ROOM: usize = 8 << 20;

/// Starts the worker threads: `threads` of them (0: one per processor), or
/// as many as the system lets start (a limit on processes or on memory),
/// at least one. (The global pool can be built once only, so the threads
/// that can start are counted first.) Every thread is started through
/// `bt2sum::binary::memory::spawn`, which refuses one that could not get its signal
/// stack, rather than let it abort the process.
pub fn start_workers(threads: usize) -> Result<(), rayon::ThreadPoolBuildError> {
    let wanted = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = std::sync::Arc::new(std::sync::Mutex::new(released));
    let mut trials = Vec::new();
    for _ in 0..wanted {
        let released = std::sync::Arc::clone(&released);
        // Each waits until all have started, so that they count together.
        let trial = memory::spawn_leaving("trial", memory::DEFAULT_STACK, WORK_ROOM, move || {
            let _ = released.lock().map(|released| released.recv());
        });
        match trial {
            Ok(trial) => trials.push(trial),
            Err(_) => break,
        }
    }
    let startable = trials.len().max(1);
    drop(release);
    for trial in trials {
        let _ = trial.join();
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(startable)
        .spawn_handler(|thread| {
            let name = thread.name().unwrap_or("worker").to_string();
            let stack = thread.stack_size().unwrap_or(memory::DEFAULT_STACK);
            memory::spawn(&name, stack, move || thread.run()).map(drop)
        })
        .build_global()
}

/// Standard output as a buffer shared with the thread that, on a stop
/// signal, writes out the lines already reported before the process ends.
pub struct SharedOutput(Arc<Mutex<BufWriter<File>>>);

impl SharedOutput {
    /// The buffer, to write to; once a stop signal has come, never: the
    /// process is about to end with what was written before it.
    fn writer(&self) -> MutexGuard<'_, BufWriter<File>> {
        if system::stopping() {
            system::wait_to_be_stopped();
        }
        lock(&self.0)
    }
}

impl Write for SharedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Standard output, buffered in big writes, and written out on a stop
/// signal (Ctrl-C, SIGTERM, SIGHUP) before the process ends by it (the
/// shell sees 130 for Ctrl-C). Fails where that would take descriptors the
/// work needs (three: the output's and the watcher's pipe).
///
/// The lines reach the buffer whole, and the buffer is written out whole,
/// so the output never ends inside a line: the last words wait for a write
/// in progress, flush what the buffer holds, and keep the lock while the
/// signal ends the process, so no write is cut short by it.
pub fn buffered_stdout() -> io::Result<SharedOutput> {
    if let Some((_, free)) = system::free_descriptors()
        && free < system::DESCRIPTORS_NEEDED + 3
    {
        return Err(io::Error::other("too few file descriptors to spare"));
    }
    let stdout = system::duplicate_stdout()?;
    let shared = Arc::new(Mutex::new(BufWriter::with_capacity(64 << 10, stdout)));
    let output = Arc::clone(&shared);
    system::on_stop_signal(move || {
        let mut output = lock(&output);
        let _ = output.flush();
        // Held until the process ends.
        std::mem::forget(output);
    });
    Ok(SharedOutput(shared))
}
