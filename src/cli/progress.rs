//! Progress on standard error: bytes hashed of the total, files done, rate
//! and time left (bytes, files and rate alone when the total is unknown:
//! standard input, FIFOs, check mode).
//!
//! On a terminal it is a bar (indicatif's), drawn by default only once the
//! work has taken [`DELAY`], so that short runs print nothing, and cleared
//! at the end. Into a pipe or a file it is drawn only when `--progress`
//! asks for it, as plain lines (`bt2sum: progress: 1.50 GiB / 3.00 GiB,
//! 12 files, 210.00 MiB/s, 7s left`), one every [`EVERY`] and one at the
//! end: a log gets whole lines, no carriage returns or escape codes.
//! `--no-progress` never draws it. Standard output never gets a byte of it.
//!
//! A bar that would appear by default stays hidden for the rest of the run
//! once bt2sum reads an interactive terminal on standard input
//! ([`Progress::reading_stdin`]): a spinner must not draw over what is being
//! typed.
//!
//! The hashing engine adds every byte it hashes to a counter (see
//! `bt2sum::Job::progress`); a thread polls it every [`TICK`]. While a bar
//! is active, [`suspend`] clears it for a moment so that error lines (see
//! `output::report`) and lines written to a terminal's standard output
//! ([`AboveBar`]) appear above it, whole. Ctrl-C clears a bar before bt2sum
//! ends, as the end of a run does: the screen keeps only the output.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{BinaryBytes, HumanDuration, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long the work runs before the bar appears (unless `--progress`).
pub const DELAY: Duration = Duration::from_secs(1);

/// How often the bar is updated from the counter.
pub const TICK: Duration = Duration::from_millis(100);

/// The bar with a known total: elapsed, bar, done / total, rate, time left.
const WITH_TOTAL: &str = "{elapsed_precise} [{wide_bar}] {binary_bytes} / {binary_total_bytes} \
                          {binary_bytes_per_sec} ETA {eta}";

/// The bar with an unknown total: elapsed, bytes and rate.
const WITHOUT_TOTAL: &str = "{spinner} {elapsed_precise} {binary_bytes} {binary_bytes_per_sec}";

/// How often a plain line is written, off a terminal.
pub const EVERY: Duration = Duration::from_secs(5);

/// The bar that [`suspend`] clears: the one being drawn, if any.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Set for good by a stop signal (Ctrl-C, SIGTERM, SIGHUP): no bar is
/// drawn again.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// When to show progress: `--progress`, `--no-progress`, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarMode {
    /// On a terminal standard error, once the work takes [`DELAY`].
    Auto,
    /// From the start, wherever standard error goes.
    Always,
    /// Never.
    Never,
}

/// The work's counters, and how they are shown, if they are; the last
/// state is shown (or the bar cleared) when it is dropped.
pub struct Progress {
    counter: Arc<AtomicU64>,
    files: Arc<AtomicU64>,
    shown: Option<Shown>,
}

struct Shown {
    /// The bar on a terminal; `None` for plain lines.
    bar: Option<ProgressBar>,
    total: Option<u64>,
    /// Drawn by default (not forced by `--progress`).
    auto: bool,
    /// Set for good once a default bar must stay hidden.
    silenced: Arc<AtomicBool>,
    /// Dropping the sender stops the poller.
    stop: Option<mpsc::Sender<()>>,
    poller: Option<JoinHandle<()>>,
    started: Instant,
}

impl Progress {
    /// Starts showing the work about to be done; `total` (only asked for
    /// if progress may be shown) gives the number of bytes, or `None` when
    /// it cannot be known.
    pub fn start(when: BarMode, total: impl FnOnce() -> Option<u64>) -> Progress {
        let (counter, files) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        // A terminal that takes cursor movements (indicatif draws nothing
        // on one whose `TERM` is unset or `dumb`).
        let terminal = crate::cli::sys::stderr_draws_bars();
        if when == BarMode::Never || (when == BarMode::Auto && !terminal) {
            return Progress {
                counter,
                files,
                shown: None,
            };
        }
        let total = total();
        let bar = terminal.then(|| bar(total, when == BarMode::Auto));
        let (stop, stopped) = mpsc::channel::<()>();
        let silenced = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let poller = crate::cli::sys::room_for_threads().then(|| {
            let poll = Poll {
                bar: bar.clone(),
                counter: Arc::clone(&counter),
                files: Arc::clone(&files),
                total,
                delayed: when == BarMode::Auto,
                silenced: Arc::clone(&silenced),
                started,
            };
            std::thread::Builder::new()
                .name("progress".into())
                .stack_size(64 << 10)
                .spawn(move || poll.run(&stopped))
                .ok()
        });
        Progress {
            counter,
            files,
            shown: Some(Shown {
                bar,
                total,
                auto: when == BarMode::Auto,
                silenced,
                stop: Some(stop),
                poller: poller.flatten(),
                started,
            }),
        }
    }

    /// Says that the run is about to read standard input. If that is an
    /// interactive terminal, a bar drawn by default is hidden for the rest
    /// of the run (`--progress` still draws it).
    pub fn reading_stdin(&self) {
        let Some(Shown {
            bar: Some(bar),
            auto: true,
            silenced,
            ..
        }) = &self.shown
        else {
            return;
        };
        if !silenced.load(Ordering::Relaxed) && io::stdin().is_terminal() {
            silenced.store(true, Ordering::Relaxed);
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
    }

    /// The counter to hand to the engine, or `None` when nothing is shown
    /// (so nothing is counted for nothing).
    pub fn counter(&self) -> Option<&Arc<AtomicU64>> {
        self.shown.as_ref().map(|_| &self.counter)
    }

    /// Counts a file done.
    pub fn file_done(&self) {
        self.files.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let Some(shown) = &mut self.shown else {
            return;
        };
        drop(shown.stop.take());
        if let Some(poller) = shown.poller.take() {
            let _ = poller.join();
        }
        match &shown.bar {
            Some(bar) => {
                *lock_active() = None;
                bar.finish_and_clear();
            }
            None => {
                let (bytes, files) = (&self.counter, &self.files);
                plain_line(bytes, files, shown.total, shown.started, true);
            }
        }
    }
}

/// The bar on a terminal ([`WITH_TOTAL`], or [`WITHOUT_TOTAL`]), hidden
/// until the poller sees the work take long enough, when `delayed`.
fn bar(total: Option<u64>, delayed: bool) -> ProgressBar {
    let template = match total {
        Some(_) => WITH_TOTAL,
        None => WITHOUT_TOTAL,
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
        .tick_chars(r"|/-\ ");
    let target = match delayed {
        true => ProgressDrawTarget::hidden(),
        false => on_terminal(),
    };
    let bar = ProgressBar::with_draw_target(total, target).with_style(style);
    *lock_active() = Some(bar.clone());
    clear_on_stop_signal();
    bar
}

/// Updates per second on a terminal (indicatif's own rate for stderr).
const TERMINAL_HZ: u8 = 20;

/// Standard error on a terminal, as the bar sees it: [`ECHO_ROOM`] columns
/// narrower than it is.
fn on_terminal() -> ProgressDrawTarget {
    let narrower = Narrower(console::Term::buffered_stderr());
    ProgressDrawTarget::term_like_with_hz(Box::new(narrower), TERMINAL_HZ)
}

/// Columns left free at the end of the bar's line on a terminal.
///
/// indicatif pads the bar's line with spaces to the terminal's width, and
/// pressing Ctrl-C makes the terminal echo `^C` where the cursor then is,
/// at the line's end: the echo would wrap onto the next line, out of reach
/// of the one line that clearing the bar erases, leaving the bar behind.
/// Two columns keep `^C` on the bar's line, and it is erased with it.
/// (indicatif's own targets take the terminal's width: this one is why
/// the bar is drawn through its `TermLike`.)
const ECHO_ROOM: u16 = 2;

/// A terminal that tells the bar it is [`ECHO_ROOM`] columns narrower.
#[derive(Debug)]
struct Narrower(console::Term);

impl indicatif::TermLike for Narrower {
    fn width(&self) -> u16 {
        indicatif::TermLike::width(&self.0)
            .saturating_sub(ECHO_ROOM)
            .max(1)
    }

    fn height(&self) -> u16 {
        indicatif::TermLike::height(&self.0)
    }

    fn move_cursor_up(&self, lines: usize) -> io::Result<()> {
        self.0.move_cursor_up(lines)
    }

    fn move_cursor_down(&self, lines: usize) -> io::Result<()> {
        self.0.move_cursor_down(lines)
    }

    fn move_cursor_right(&self, columns: usize) -> io::Result<()> {
        self.0.move_cursor_right(columns)
    }

    fn move_cursor_left(&self, columns: usize) -> io::Result<()> {
        self.0.move_cursor_left(columns)
    }

    fn write_line(&self, line: &str) -> io::Result<()> {
        self.0.write_line(line)
    }

    fn write_str(&self, text: &str) -> io::Result<()> {
        self.0.write_str(text)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> io::Result<()> {
        self.0.flush()
    }
}

/// What the poller moves.
struct Poll {
    bar: Option<ProgressBar>,
    counter: Arc<AtomicU64>,
    files: Arc<AtomicU64>,
    total: Option<u64>,
    delayed: bool,
    silenced: Arc<AtomicBool>,
    started: Instant,
}

impl Poll {
    /// Moves the bar to the counter every [`TICK`] (a delayed bar made
    /// visible once the work has taken [`DELAY`], unless silenced), or
    /// writes a plain line every [`EVERY`], until told to stop.
    fn run(self, stop: &mpsc::Receiver<()>) {
        let (mut hidden, mut written) = (self.delayed, Instant::now());
        loop {
            match stop.recv_timeout(TICK) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            let Some(bar) = &self.bar else {
                if written.elapsed() >= EVERY {
                    let total = self.total;
                    plain_line(&self.counter, &self.files, total, self.started, false);
                    written = Instant::now();
                }
                continue;
            };
            if self.silenced.load(Ordering::Relaxed) || INTERRUPTED.load(Ordering::Relaxed) {
                // (Hidden again in case it was silenced while being shown.)
                bar.set_draw_target(ProgressDrawTarget::hidden());
                return;
            }
            if hidden && self.started.elapsed() >= DELAY {
                bar.set_draw_target(on_terminal());
                hidden = false;
            }
            bar.set_position(self.counter.load(Ordering::Relaxed));
            // Keeps the spinner and the elapsed time moving when no byte
            // comes.
            bar.tick();
        }
    }
}

/// Writes progress as one plain line on standard error: bytes done (of the
/// total), files, rate, and the time left (or `done`, at the `end`).
fn plain_line(
    bytes: &AtomicU64,
    files: &AtomicU64,
    total: Option<u64>,
    started: Instant,
    end: bool,
) {
    let (done, files) = (bytes.load(Ordering::Relaxed), files.load(Ordering::Relaxed));
    let seconds = started.elapsed().as_secs_f64();
    let rate = if seconds > 0.0 {
        done as f64 / seconds
    } else {
        0.0
    };
    let mut line = format!("progress: {}", BinaryBytes(done));
    if let Some(total) = total {
        line += &format!(" / {}", BinaryBytes(total));
    }
    let noun = if files == 1 { "file" } else { "files" };
    line += &format!(", {files} {noun}, {}/s", BinaryBytes(rate as u64));
    match (end, total) {
        (true, _) => line += ", done",
        (false, Some(total)) if rate > 0.0 && total > done => {
            let left = Duration::from_secs_f64((total - done) as f64 / rate);
            line += &format!(", {} left", HumanDuration(left));
        }
        _ => {}
    }
    // (Straight to standard error: a line a log keeps whole.)
    let _ = writeln!(io::stderr(), "bt2sum: {line}");
}

/// The active bar, even if a thread panicked while holding the lock.
fn lock_active() -> std::sync::MutexGuard<'static, Option<ProgressBar>> {
    bt2sum::sys::lock(&ACTIVE)
}

/// Runs `f` (which writes to the terminal) with the active bar, if any,
/// cleared from the screen, and draws the bar again after.
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    let bar = lock_active().clone();
    match bar {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// A writer for standard output on a terminal: every write clears the bar
/// first, is flushed, and the bar is drawn again below it.
pub struct AboveBar<W: Write>(pub W);

impl<W: Write> Write for AboveBar<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let inner = &mut self.0;
        suspend(|| {
            let written = inner.write(buf)?;
            inner.flush()?;
            Ok(written)
        })
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let inner = &mut self.0;
        suspend(|| inner.write_all(buf).and_then(|()| inner.flush()))
    }

    fn flush(&mut self) -> io::Result<()> {
        let inner = &mut self.0;
        suspend(|| inner.flush())
    }
}

/// Has a stop signal clear the active bar from the terminal (once per
/// process).
fn clear_on_stop_signal() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        crate::cli::sys::on_stop_signal(|| {
            INTERRUPTED.store(true, Ordering::Relaxed);
            if let Some(bar) = lock_active().take() {
                bar.finish_and_clear();
                // Nothing draws it again before the process ends.
                bar.set_draw_target(ProgressDrawTarget::hidden());
            }
        });
    });
}
