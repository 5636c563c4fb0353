//! The process around the work: the worker threads, and standard output
//! shared with the stop signals' watcher, which writes out the lines
//! already done before the process ends.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{memory, system};

/// Starts the worker threads: `wanted` of them (0: one per processor), no
/// more than the address space left holds, and no more than the system
/// grants (a task limit, `ulimit -u`, a container's pids limit). Each
/// thread is started before the pool is built, and the pool is built on
/// those that started; with none, the calling thread is the pool's one.
/// Returns how many started, and how many were asked for.
pub fn start_workers(wanted: usize) -> Result<(usize, usize), rayon::ThreadPoolBuildError> {
    let wanted = memory::threads(wanted);
    let mut started = Vec::with_capacity(wanted);
    for _ in 0..wanted {
        let (hand_over, receive) = std::sync::mpsc::channel::<rayon::ThreadBuilder>();
        let thread = std::thread::Builder::new()
            .stack_size(memory::STACK)
            .spawn(move || {
                if let Ok(worker) = receive.recv() {
                    worker.run();
                }
            });
        match thread {
            Ok(_) => started.push(hand_over),
            Err(_) => break,
        }
    }
    let count = started.len();
    let builder = rayon::ThreadPoolBuilder::new();
    if count == 0 {
        builder.num_threads(1).use_current_thread().build_global()?;
        return Ok((1, wanted));
    }
    let mut started = started.into_iter();
    builder
        .num_threads(count)
        .spawn_handler(move |worker| {
            let hand_over = started.next().expect("a thread started for each worker");
            hand_over
                .send(worker)
                .map_err(|_| io::Error::other("a worker thread ended before its start"))
        })
        .build_global()?;
    Ok((count, wanted))
}

/// Standard output as a buffer shared with the stop signals' watcher.
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

/// Standard output, buffered in big writes, written out on a stop signal
/// before the process ends by it. Lines reach the buffer whole and it is
/// written out whole, and the lock is kept while the signal ends the
/// process: the output never ends inside a line.
pub fn buffered_stdout() -> io::Result<SharedOutput> {
    // (Its descriptor, and the watcher's two, only where the work keeps
    // what it needs.)
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
