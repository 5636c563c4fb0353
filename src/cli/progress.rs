//! The progress bar on standard error: bytes hashed of the total, rate and
//! time left (only bytes and rate when the total is unknown: standard input,
//! FIFOs, check mode).
//!
//! By default the bar is drawn only when standard error is a terminal, and
//! only once the work has taken [`DELAY`]: short runs print nothing.
//! `--progress` draws it from the start, even into a pipe or a file (then
//! as plain text updated in place with carriage returns, no escape codes,
//! and its final state is left on a line of its own); `--no-progress` never
//! draws it. Standard output never gets a byte of it.
//!
//! A bar that would appear by default stays hidden for the rest of the run
//! once bt2sum reads an interactive terminal on standard input
//! ([`Progress::reading_stdin`]): a spinner must not draw over what is being
//! typed.
//!
//! The hashing engine adds every byte it hashes to a counter (see
//! `bt2sum::Job::progress`); a thread polls it every [`TICK`] and moves the
//! bar. While a bar is active, [`suspend`] clears it for a moment so that
//! error lines (see `output::report`) and lines written to a terminal's
//! standard output ([`AboveBar`]) appear above it, whole.
//!
//! Ctrl-C clears a bar drawn on a terminal before bt2sum ends, as the end
//! of a run does: the screen keeps only the output.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// How long the work runs before the bar appears (unless `--progress`).
pub const DELAY: Duration = Duration::from_secs(1);

/// How often the bar is updated from the counter.
pub const TICK: Duration = Duration::from_millis(100);

/// The bar with a known total: elapsed, bar, done / total, rate, time left.
const WITH_TOTAL: &str = "{elapsed_precise} [{wide_bar}] {binary_bytes} / {binary_total_bytes} \
                          {binary_bytes_per_sec} ETA {eta}";

/// The bar with an unknown total: elapsed, bytes and rate.
const WITHOUT_TOTAL: &str = "{spinner} {elapsed_precise} {binary_bytes} {binary_bytes_per_sec}";

/// The bar that [`suspend`] clears: the one being drawn, if any.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// BarMode to draw the bar: `--progress`, `--no-progress`, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarMode {
    /// On a terminal standard error, once the work takes [`DELAY`].
    Auto,
    /// From the start, wherever standard error goes.
    Always,
    /// Never.
    Never,
}

/// A progress display over a byte counter; drawn or not as its mode says,
/// and cleared (or, into a non-terminal, finished on its own line) when
/// dropped.
pub struct Progress {
    counter: Arc<AtomicU64>,
    shown: Option<Shown>,
}

/// The parts of a display that is (or may become) visible.
struct Shown {
    bar: ProgressBar,
    /// Drawn as plain text into a non-terminal.
    plain: bool,
    /// Drawn by default (not forced by `--progress`).
    auto: bool,
    /// Set for good once a default bar must stay hidden.
    silenced: Arc<AtomicBool>,
    /// Dropping the sender stops the poller.
    stop: Option<mpsc::Sender<()>>,
    poller: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a display of the work about to be done; `total` (only asked
    /// for if the bar may be drawn) gives the number of bytes, or `None`
    /// when it cannot be known.
    pub fn start(when: BarMode, total: impl FnOnce() -> Option<u64>) -> Progress {
        let counter = Arc::new(AtomicU64::new(0));
        // A terminal that takes cursor movements (indicatif draws nothing
        // on one whose `TERM` is unset or `dumb`).
        let terminal = crate::cli::sys::stderr_draws_bars();
        let target = match when {
            BarMode::Never => None,
            BarMode::Auto if !terminal => None,
            // Hidden until the poller sees the work take long enough.
            BarMode::Auto => Some(ProgressDrawTarget::hidden()),
            BarMode::Always if terminal => Some(on_terminal()),
            BarMode::Always => Some(ProgressDrawTarget::term_like_with_hz(
                Box::new(PlainStderr),
                PLAIN_HZ,
            )),
        };
        let Some(target) = target else {
            return Progress {
                counter,
                shown: None,
            };
        };
        let total = total();
        let template = if total.is_some() {
            WITH_TOTAL
        } else {
            WITHOUT_TOTAL
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ")
            .tick_chars(r"|/-\ ");
        let bar = ProgressBar::with_draw_target(total, target).with_style(style);
        *lock_active() = Some(bar.clone());
        if terminal {
            clear_on_stop_signal();
        }

        let (stop, stopped) = mpsc::channel::<()>();
        let silenced = Arc::new(AtomicBool::new(false));
        let poller = crate::cli::sys::room_for_threads().then(|| {
            let bar = bar.clone();
            let counter = Arc::clone(&counter);
            let delayed = when == BarMode::Auto;
            let silenced = Arc::clone(&silenced);
            std::thread::Builder::new()
                .name("progress".into())
                .stack_size(64 << 10)
                .spawn(move || poll(&bar, &counter, &stopped, delayed, &silenced))
                .ok()
        });
        Progress {
            counter,
            shown: Some(Shown {
                bar,
                plain: when == BarMode::Always && !terminal,
                auto: when == BarMode::Auto,
                silenced,
                stop: Some(stop),
                poller: poller.flatten(),
            }),
        }
    }

    /// Says that the run is about to read standard input. If that is an
    /// interactive terminal, a bar drawn by default is hidden for the rest
    /// of the run (`--progress` still draws it).
    pub fn reading_stdin(&self) {
        let Some(shown) = &self.shown else {
            return;
        };
        if shown.auto && !shown.silenced.load(Ordering::Relaxed) && io::stdin().is_terminal() {
            shown.silenced.store(true, Ordering::Relaxed);
            shown.bar.set_draw_target(ProgressDrawTarget::hidden());
        }
    }

    /// The counter to hand to the engine, or `None` when no bar is drawn
    /// (so nothing is counted for nothing).
    pub fn counter(&self) -> Option<&Arc<AtomicU64>> {
        self.shown.as_ref().map(|_| &self.counter)
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
        shown.bar.set_position(self.counter.load(Ordering::Relaxed));
        *lock_active() = None;
        if shown.plain {
            // Leave the final state in the log, on its own line.
            shown.bar.finish();
            let _ = io::stderr().write_all(b"\n");
        } else {
            shown.bar.finish_and_clear();
        }
    }
}

/// The poller: moves the bar to the counter every [`TICK`] until told to
/// stop; a delayed bar is made visible once the work has taken [`DELAY`],
/// unless it was `silenced`.
fn poll(
    bar: &ProgressBar,
    counter: &AtomicU64,
    stop: &mpsc::Receiver<()>,
    delayed: bool,
    silenced: &AtomicBool,
) {
    let started = Instant::now();
    let mut hidden = delayed;
    loop {
        match stop.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        if silenced.load(Ordering::Relaxed) || INTERRUPTED.load(Ordering::Relaxed) {
            // (Hidden again in case it was silenced while being shown.)
            bar.set_draw_target(ProgressDrawTarget::hidden());
            return;
        }
        if hidden && started.elapsed() >= DELAY {
            bar.set_draw_target(on_terminal());
            hidden = false;
        }
        bar.set_position(counter.load(Ordering::Relaxed));
        // Keeps the spinner and the elapsed time moving when no byte comes.
        bar.tick();
    }
}

/// The active bar, even if a thread panicked while holding the lock.
fn lock_active() -> std::sync::MutexGuard<'static, Option<ProgressBar>> {
    ACTIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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

/// Set for good by a stop signal (Ctrl-C, SIGTERM, SIGHUP): no bar is
/// drawn again.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

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

/// Columns left free at the end of the bar's line on a terminal.
///
/// Pressing Ctrl-C makes the terminal echo `^C` where the cursor is, at the
/// end of the bar. A bar as wide as the terminal would push it onto the
/// next line, leaving the bar on the line above, out of reach of the one
/// line that clearing the bar erases; two columns keep `^C` on the bar's
/// line, and it is erased with it.
const ECHO_ROOM: u16 = 2;

/// Standard error on a terminal, as the bar sees it: [`ECHO_ROOM`] columns
/// narrower than it is.
fn on_terminal() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(
        Box::new(Narrower(console::Term::buffered_stderr())),
        TERMINAL_HZ,
    )
}

/// Updates per second on a terminal (indicatif's own rate for stderr).
const TERMINAL_HZ: u8 = 20;

/// A terminal that tells the bar it is [`ECHO_ROOM`] columns narrower.
#[derive(Debug)]
struct Narrower(console::Term);

impl TermLike for Narrower {
    fn width(&self) -> u16 {
        TermLike::width(&self.0).saturating_sub(ECHO_ROOM).max(1)
    }

    fn height(&self) -> u16 {
        TermLike::height(&self.0)
    }

    fn move_cursor_up(&self, lines: usize) -> io::Result<()> {
        TermLike::move_cursor_up(&self.0, lines)
    }

    fn move_cursor_down(&self, lines: usize) -> io::Result<()> {
        TermLike::move_cursor_down(&self.0, lines)
    }

    fn move_cursor_right(&self, columns: usize) -> io::Result<()> {
        TermLike::move_cursor_right(&self.0, columns)
    }

    fn move_cursor_left(&self, columns: usize) -> io::Result<()> {
        TermLike::move_cursor_left(&self.0, columns)
    }

    fn write_line(&self, line: &str) -> io::Result<()> {
        TermLike::write_line(&self.0, line)
    }

    fn write_str(&self, text: &str) -> io::Result<()> {
        TermLike::write_str(&self.0, text)
    }

    fn clear_line(&self) -> io::Result<()> {
        TermLike::clear_line(&self.0)
    }

    fn flush(&self) -> io::Result<()> {
        TermLike::flush(&self.0)
    }
}

/// Updates per second into a non-terminal.
const PLAIN_HZ: u8 = 2;

/// Standard error that is not a terminal, as a place to draw the bar: each
/// state overwrites the last after a carriage return, padded to the width,
/// with no escape codes; cursor moves are ignored (the bar is one line).
#[derive(Debug)]
struct PlainStderr;

impl TermLike for PlainStderr {
    fn width(&self) -> u16 {
        // No terminal to ask; `COLUMNS` if the shell exported it. One column
        // short of it, so that a terminal at the end of the pipe never wraps.
        std::env::var("COLUMNS")
            .ok()
            .and_then(|columns| columns.parse::<u16>().ok())
            .filter(|&columns| columns >= 20)
            .unwrap_or(80)
            - 1
    }

    fn move_cursor_up(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn move_cursor_down(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn move_cursor_right(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn move_cursor_left(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn write_line(&self, line: &str) -> io::Result<()> {
        let mut stderr = io::stderr().lock();
        stderr.write_all(line.as_bytes())?;
        stderr.write_all(b"\n")
    }

    fn write_str(&self, text: &str) -> io::Result<()> {
        io::stderr().write_all(text.as_bytes())
    }

    fn clear_line(&self) -> io::Result<()> {
        // Blanks the line, so that a shorter line written next (an error
        // message) does not end in the rest of the bar.
        let mut line = vec![b' '; usize::from(self.width()) + 2];
        line[0] = b'\r';
        if let Some(last) = line.last_mut() {
            *last = b'\r';
        }
        io::stderr().write_all(&line)
    }

    fn flush(&self) -> io::Result<()> {
        io::stderr().flush()
    }
}
