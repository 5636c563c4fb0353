//! Stop signals (Ctrl-C, SIGTERM, SIGHUP): the finished lines are written,
//! whole, and the process ends by the signal; a second one ends it at once;
//! one that was ignored when bt2sum started stays ignored.

use std::fs;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{HELLO, HELLO_B64, Retried, bt2sum, emulated, mkfifo, output_within};

/// bt2sum, started with the stop signals' default dispositions. The tests
/// may themselves run with SIGINT ignored (a shell without job control,
/// such as a script's, ignores SIGINT and SIGQUIT in what it starts in the
/// background), and bt2sum rightly keeps an ignored signal ignored: these
/// tests are of the default.
pub fn stoppable() -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut command = bt2sum();
    // SAFETY: between fork and exec the closure only calls signal(2), which
    // is async-signal-safe, and touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| {
            for stop in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                if libc::signal(stop, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill has no memory effects; the pid is our child's.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

/// A FIFO that waits for its writer holds back only the lines after it: the
/// line of the file before it is out first. Then Ctrl-C leaves the finished
/// lines and ends the process by SIGINT (the shell sees 130); SIGHUP ignored
/// when bt2sum starts (as `nohup` leaves it) stays ignored, and the run goes
/// on to its end.
#[test]
fn an_interrupt_ends_by_sigint_and_an_ignored_hangup_stays_ignored() {
    if emulated("an_interrupt_ends_by_sigint_and_an_ignored_hangup_stays_ignored") {
        return;
    }
    let line = |name: &str| format!("BLAKE2b-64 ({name}) = {HELLO_B64}\n");
    for (sent, ignored) in [(libc::SIGINT, false), (libc::SIGHUP, true)] {
        let dir = super::dir_with(&[("one", HELLO)]);
        mkfifo(&dir.path().join("ff"));
        let mut command = stoppable();
        if ignored {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec, signal(2) only, as in
            // stoppable (whose closure runs first).
            unsafe { command.pre_exec(|| Ok(_ = libc::signal(libc::SIGHUP, libc::SIG_IGN))) };
        }
        command.current_dir(dir.path()).args(["one", "ff"]);
        let mut child = command.stdout(Stdio::piped()).spawn_retried();
        // Its first line out: bt2sum waits for the FIFO's writer (a fixed
        // pause could end before a slow start on a busy machine).
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut out = String::new();
        std::io::BufRead::read_line(&mut lines, &mut out).unwrap();
        assert_eq!(out, line("one"));
        std::thread::sleep(Duration::from_millis(100));
        signal(&child, sent);
        if ignored {
            std::thread::sleep(Duration::from_millis(200));
            assert!(child.try_wait().unwrap().is_none(), "ended by SIGHUP");
            fs::write(dir.path().join("ff"), HELLO).unwrap();
            out += &line("ff");
        }
        let mut rest = String::new();
        lines.read_to_string(&mut rest).unwrap();
        let ended = child.wait().unwrap();
        assert_eq!(line("one") + &rest, out, "signal {sent}");
        match ignored {
            true => assert!(ended.success(), "{ended:?}"),
            false => assert_eq!(ended.signal(), Some(libc::SIGINT), "{ended:?}"),
        }
    }
}

/// A pipe for bt2sum's lines, its reading end and its writing end, with a
/// buffer of one page where the system lets a pipe's buffer be set
/// (Linux): the lines then fill it many times over, whatever size pipes
/// have by default here (a pipe can hold up to 1 MiB, and then a whole run
/// fits). Set before bt2sum starts, while the pipe is empty.
fn narrow_pipe() -> (std::io::PipeReader, Stdio) {
    let (reader, writer) = std::io::pipe().unwrap();
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: F_SETPIPE_SZ takes an int and only resizes the buffer of
        // a pipe that `writer` holds open for the call.
        let set = unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
        assert!(set > 0, "{}", std::io::Error::last_os_error());
    }
    (reader, writer.into())
}

/// How many bytes wait in `pipe` to be read.
fn unread_bytes(pipe: &std::io::PipeReader) -> usize {
    use std::os::fd::AsRawFd;
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int, into `waiting`; the descriptor is
    // open for the call.
    let asked = unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &mut waiting) };
    assert_eq!(asked, 0, "{}", std::io::Error::last_os_error());
    waiting as usize
}

/// A tree of small files whose lines fill a pipe many times over.
fn many_files(dir: &Path) -> Vec<u8> {
    let tree = dir.join("tree");
    fs::create_dir(&tree).unwrap();
    for index in 0..4000 {
        let name = format!("file-with-a-longish-name-{index:05}");
        fs::write(tree.join(name), [index as u8]).unwrap();
    }
    super::ok_bytes_in(dir, ["-r", "tree"])
}

/// Each stop signal, sent while bt2sum is blocked writing to a full pipe
/// whose reader has read only some of it (so that bt2sum's write is part
/// done, as behind a slow reader): once the pipe is read to its end, the
/// output is the run's own lines from the first, whole (it never ends
/// inside a line, where a write cut short by the signal would leave it),
/// and the process ends by that signal. A second one ends it at once.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn a_stop_signal_leaves_whole_lines_and_ends_by_it() {
    if emulated("a_stop_signal_leaves_whole_lines_and_ends_by_it") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let all = many_files(dir.path());
    for stop in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        for read_first in [10_000, 23_456, 41_000] {
            let (mut pipe, lines) = narrow_pipe();
            let mut child = stoppable()
                .current_dir(dir.path())
                .args(["-r", "tree"])
                .stdout(lines)
                .spawn_retried();
            // Long enough for the pipe (and bt2sum's buffer) to fill; then
            // some of it is read, and bt2sum writes on until it is full.
            std::thread::sleep(Duration::from_millis(300));
            let mut out = vec![0; read_first];
            pipe.read_exact(&mut out).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            // What the pipe holds when the signal goes: if it is the rest of
            // the run, the run could finish before it (a pipe that cannot
            // be narrowed here), and this case says nothing.
            let waiting = unread_bytes(&pipe);
            signal(&child, stop);
            pipe.read_to_end(&mut out).unwrap();
            let ended = child.wait().unwrap();
            if read_first + waiting >= all.len() {
                super::skip(
                    "signals::a_stop_signal_leaves_whole_lines_and_ends_by_it",
                    &format!("the pipe held the run's last {waiting} bytes before the signal"),
                );
                continue;
            }
            assert!(
                out.len() < all.len(),
                "signal {stop}: the run wrote all its {} bytes and ended ({ended:?}) \
                 although only {read_first} had been read when the signal came, \
                 and {waiting} waited in the pipe",
                all.len()
            );
            assert_eq!(ended.signal(), Some(stop), "{ended:?}");
            assert!(
                out.ends_with(b"\n"),
                "signal {stop}: the output ends inside a line: {:?}",
                String::from_utf8_lossy(&out[out.len().saturating_sub(80)..])
            );
            assert_eq!(&all[..out.len()], &out[..], "signal {stop}");
        }
    }
    // While bt2sum's output is blocked for good (nobody reads the pipe), it
    // waits to write its finished lines, as any write waits; a second
    // signal ends it at once, by that signal.
    let (mut unread, lines) = narrow_pipe();
    let mut child = stoppable()
        .current_dir(dir.path())
        .args(["-r", "tree"])
        .stdout(lines)
        .stderr(Stdio::piped())
        .spawn_retried();
    // Its first byte out: the signals are taken. Then the pipe fills again.
    unread.read_exact(&mut [0]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended with its lines unwritten"
    );
    signal(&child, libc::SIGTERM);
    let started = Instant::now();
    let out = output_within(child, Duration::from_secs(20));
    drop(unread);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{:?}", out.status);
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A stop signal while a repair restores a missing file leaves none of
/// its temporary files (`.bt2sum-restore-*`) behind, nor the file itself.
#[test]
fn a_stop_signal_during_a_restore_leaves_no_temporary_file() {
    if emulated("a_stop_signal_during_a_restore_leaves_no_temporary_file") {
        return;
    }
    let dir = super::dir_with(&[("tree/big", b""), ("copy/big", b"")]);
    let (tree, copy) = (dir.path().join("tree"), dir.path().join("copy"));
    // Sparse: quick to read, long to write out and sync again.
    for big in [tree.join("big"), copy.join("big")] {
        let file = fs::File::options().write(true).open(big).unwrap();
        file.set_len(256 << 20).unwrap();
    }
    super::write_list(&tree, "../SUMS", ["big"]);
    fs::remove_file(tree.join("big")).unwrap();
    let temporaries = || {
        fs::read_dir(&tree)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".bt2sum-restore-"))
            .collect::<Vec<_>>()
    };
    for stop in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut child = stoppable()
            .current_dir(&tree)
            .args(["-c", "--repair-from", "../copy", "../SUMS"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn_retried();
        while temporaries().is_empty() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "no temporary file seen"
            );
        }
        signal(&child, stop);
        let ended = child.wait().unwrap();
        assert_eq!(ended.signal(), Some(stop), "{ended:?}");
        assert_eq!(temporaries(), Vec::<String>::new(), "signal {stop}");
        assert!(!tree.join("big").exists(), "signal {stop}");
    }
}
