//! Progress on standard error (docs/usage.md): on a terminal an indicatif
//! bar, by default only once the work has taken [`DELAY`] and cleared at
//! the end; elsewhere, with `--progress`, a plain line every [`EVERY`] and
//! one at the end, whole lines a log keeps. Standard output never gets a
//! byte of it. The engine adds each byte hashed to a counter that a thread
//! polls; [`suspend`] clears the bar while other lines are written, so
//! that they appear above it whole.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bt2sum::sys::lock;
use indicatif::{BinaryBytes, HumanDuration, ProgressBar, ProgressDrawTarget, ProgressStyle};

const DELAY: Duration = Duration::from_secs(1);

const TICK: Duration = Duration::from_millis(100);

const WITH_TOTAL: &str = "{elapsed_precise} [{wide_bar}] {binary_bytes} / {binary_total_bytes} \
                          {binary_bytes_per_sec} ETA {eta}";
const WITHOUT_TOTAL: &str = "{spinner} {elapsed_precise} {binary_bytes} {binary_bytes_per_sec}";

const EVERY: Duration = Duration::from_secs(5);

static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Set for good by a stop signal, or where a default bar would draw over
/// the typing: no bar is drawn again.
static HIDDEN: AtomicBool = AtomicBool::new(false);

/// When to show progress: `--progress`, `--no-progress`, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarMode {
    Auto,
    Always,
    Never,
}

/// The work's counters, and how they are shown, if they are; the last
/// state is shown (or the bar cleared) when it is dropped.
pub struct Progress {
    state: State,
    shown: bool,
    /// The poller, which dropping the sender stops.
    poller: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

/// What the poller and the end of the run show.
#[derive(Clone)]
struct State {
    /// The bar on a terminal; `None` for plain lines.
    bar: Option<ProgressBar>,
    counter: Arc<AtomicU64>,
    files: Arc<AtomicU64>,
    total: Option<u64>,
    /// Drawn by default, once the work takes [`DELAY`].
    delayed: bool,
    started: Instant,
}

impl Progress {
    /// Starts showing the work about to be done; `total` (asked only if
    /// it is shown) gives its bytes, where they are known.
    pub fn start(when: BarMode, total: impl FnOnce() -> Option<u64>) -> Progress {
        let terminal = crate::cli::sys::stderr_draws_bars();
        let shown = !(when == BarMode::Never || (when == BarMode::Auto && !terminal));
        let total = if shown { total() } else { None };
        let state = State {
            bar: (shown && terminal).then(|| bar(total, when == BarMode::Auto)),
            counter: Arc::default(),
            files: Arc::default(),
            total,
            delayed: when == BarMode::Auto,
            started: Instant::now(),
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let poll = state.clone();
        let thread = std::thread::Builder::new().name("progress".into());
        let run = move || poll.run(&stopped);
        let spawned = (shown && bt2sum::budget::memory().threads_beside_workers)
            .then(|| thread.stack_size(64 << 10).spawn(run).ok());
        let poller = spawned.flatten().map(|poller| (stop, poller));
        Progress {
            state,
            shown,
            poller,
        }
    }

    /// Says that the run is about to read standard input: if that is an
    /// interactive terminal, a default bar stays hidden for the rest of the
    /// run, not to draw a spinner over the typing.
    pub fn reading_stdin(&self) {
        // (The poller hides the bar, if shown, and stops.)
        if self.state.delayed && io::stdin().is_terminal() {
            HIDDEN.store(true, Ordering::Relaxed);
        }
    }

    /// [`reading_stdin`](Self::reading_stdin), for standard input read as
    /// an input: `Err` if it was closed when the process started.
    pub fn open_stdin(&self) -> io::Result<()> {
        self.reading_stdin();
        crate::cli::sys::stdin_open()
    }

    /// The counter to hand to the engine, where progress is shown.
    pub fn counter(&self) -> Option<&Arc<AtomicU64>> {
        self.shown.then_some(&self.state.counter)
    }

    pub fn file_done(&self) {
        self.state.files.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((stop, poller)) = self.poller.take() {
            drop(stop);
            let _ = poller.join();
        }
        match &self.state.bar {
            _ if !self.shown => {}
            Some(bar) => {
                *lock(&ACTIVE) = None;
                bar.finish_and_clear();
            }
            None => self.state.plain_line(true),
        }
    }
}

/// The bar on a terminal, hidden until the poller shows it when `delayed`.
fn bar(total: Option<u64>, delayed: bool) -> ProgressBar {
    let template = total.map_or(WITHOUT_TOTAL, |_| WITH_TOTAL);
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
        .tick_chars(r"|/-\ ");
    let target = match delayed {
        true => ProgressDrawTarget::hidden(),
        false => on_terminal(),
    };
    let bar = ProgressBar::with_draw_target(total, target).with_style(style);
    *lock(&ACTIVE) = Some(bar.clone());
    // A stop signal clears the bar, as the end of a run does. (A run
    // makes one bar.)
    crate::cli::sys::on_stop_signal(|| {
        HIDDEN.store(true, Ordering::Relaxed);
        if let Some(bar) = lock(&ACTIVE).take() {
            bar.finish_and_clear();
            // Nothing draws it again before the process ends.
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
    });
    bar
}

/// indicatif's own rate for stderr.
const TERMINAL_HZ: u8 = 20;

fn on_terminal() -> ProgressDrawTarget {
    let narrower = Narrower(console::Term::buffered_stderr());
    ProgressDrawTarget::term_like_with_hz(Box::new(narrower), TERMINAL_HZ)
}

/// Columns left free at the end of the bar's line. indicatif pads the
/// line with spaces to its target's width, and Ctrl-C's `^C` echoed at a
/// full line's end would wrap to the next, which clearing the bar does
/// not erase: the bar would stay. indicatif has no option for a narrower
/// width than the terminal's; its `TermLike` is the way to give one.
const ECHO_ROOM: u16 = 2;

#[derive(Debug)]
struct Narrower(console::Term);

/// Methods handed to the terminal as they are.
macro_rules! as_the_terminal {
    ($($method:ident($($arg:ident: $type:ty)?);)*) => {
        $(fn $method(&self, $($arg: $type)?) -> io::Result<()> {
            self.0.$method($($arg)?)
        })*
    };
}

impl indicatif::TermLike for Narrower {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(ECHO_ROOM).max(1)
    }

    as_the_terminal! {
        move_cursor_up(lines: usize);
        move_cursor_down(lines: usize);
        move_cursor_right(columns: usize);
        move_cursor_left(columns: usize);
        write_line(line: &str);
        write_str(text: &str);
        clear_line();
        flush();
    }
}

impl State {
    /// Moves the bar to the counter (or writes a plain line) until told to
    /// stop.
    fn run(self, stop: &mpsc::Receiver<()>) {
        let (mut hidden, mut written) = (self.delayed, Instant::now());
        while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
            let Some(bar) = &self.bar else {
                if written.elapsed() >= EVERY {
                    self.plain_line(false);
                    written = Instant::now();
                }
                continue;
            };
            if HIDDEN.load(Ordering::Relaxed) {
                // (Hidden for good: from the typing, or from a stopped run's screen.)
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

    /// Writes progress as one plain line on standard error: `bt2sum:
    /// progress: 1.50 GiB / 3.00 GiB, 12 files, 210.00 MiB/s, 7s left`
    /// (`done` at the `end`).
    fn plain_line(&self, end: bool) {
        let done = self.counter.load(Ordering::Relaxed);
        let files = self.files.load(Ordering::Relaxed);
        // (At no time passed, a rate of 0 rather than NaN.)
        let rate = done as f64 / self.started.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
        let mut line = format!("progress: {}", BinaryBytes(done));
        if let Some(total) = self.total {
            line += &format!(" / {}", BinaryBytes(total));
        }
        let noun = if files == 1 { "file" } else { "files" };
        line += &format!(", {files} {noun}, {}/s", BinaryBytes(rate as u64));
        match (end, self.total) {
            (true, _) => line += ", done",
            (false, Some(total)) if rate > 0.0 && total > done => {
                let left = Duration::from_secs_f64((total - done) as f64 / rate);
                line += &format!(", {} left", HumanDuration(left));
            }
            _ => {}
        }
        let _ = writeln!(io::stderr(), "bt2sum: {line}");
    }
}

/// Runs `f` (which writes to the terminal) with the active bar, if any,
/// cleared from the screen, and draws the bar again after.
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    let bar = lock(&ACTIVE).clone();
    match bar {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// Standard output on a terminal: each write appears above the bar.
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

    fn flush(&mut self) -> io::Result<()> {
        let inner = &mut self.0;
        suspend(|| inner.flush())
    }
}
