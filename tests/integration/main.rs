//! The one integration-test binary. Each module covers one concern; the
//! helpers they share live here.
// The tests start threads as they like: the limits that memory::spawn
// keeps are the binary's, which the tests run as a process.
#![allow(clippy::disallowed_methods)]

#[cfg(unix)]
mod audit;
#[cfg(unix)]
mod changing;
mod check;
mod cli;
mod ct;
#[cfg(feature = "digest")]
mod digest_traits;
mod disk;
mod documents;
#[cfg(unix)]
mod gnu;
mod habits;
#[cfg(unix)]
mod json;
mod layers;
mod leaves;
mod ledger;
mod parts;
#[cfg(unix)]
mod repair;
mod robust;
#[cfg(feature = "schedule-probe")]
mod schedule;
#[cfg(unix)]
mod scrub;
#[cfg(unix)]
mod signals;
mod skip;
mod ux;
mod vectors;
#[cfg(windows)]
mod windows;
#[cfg(unix)]
mod writes;
pub use skip::skip;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A small file's bytes, and their BLAKE2b-64 tree hash.
pub const HELLO: &[u8] = b"hello s3git\n";
pub const HELLO_B64: &str = "18e622875a89cede0d7019b2c8afecf8928c21eac18ec51e38a8e6b829b82c3ef306dec34227929fa77b1c7c329b3d4e50ed9e72dc4dc885be0932d3f28d7053";

/// The byte pattern of the generated vectors: byte `i` is `i % 251`.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Bytes that differ from one file to the next (`seed`): a xorshift
/// stream, for data no pattern repeats in.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The digest of the last line in `text`: its field after ` = `.
pub fn digest(text: &str) -> String {
    text.trim_end().rsplit(" = ").next().unwrap().to_string()
}

/// Flips a bit of each of the bytes `at` of the file at `path`, keeping its
/// modification time: rot, which no write call made.
pub fn rot(path: &Path, at: impl IntoIterator<Item = usize>) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    for at in at {
        bytes[at] ^= 0x04;
    }
    std::fs::write(path, bytes).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(mtime).unwrap();
}

/// Drops the file's pages from the page cache (after writing them out), so
/// that the next read of it comes from the storage; nothing where the
/// system has no way to ask for it.
pub fn evict(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).unwrap();
        file.sync_all().unwrap();
        // SAFETY: posix_fadvise only drops clean pages of the open file.
        #[cfg(not(target_os = "macos"))]
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
        };
        #[cfg(target_os = "macos")]
        let _ = file.as_raw_fd();
    }
    #[cfg(not(unix))]
    let _ = path;
}

pub fn bt2sum() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bt2sum"))
}

/// Starting a process, retried under emulation: Wine now and then fails
/// to start one with `ERROR_INTERNAL_ERROR` (1359) while many start at
/// once, which says nothing of bt2sum. Natively the first error fails the
/// test.
pub trait Retried {
    /// `spawn`, retried; panics on the last failure.
    fn spawn_retried(&mut self) -> Child;
    /// `output`, retried; panics on the last failure.
    fn output_retried(&mut self) -> Output;
    /// `spawn_retried`, its standard input, output and error piped.
    fn spawn_piped(&mut self) -> Child;
}

impl Retried for Command {
    fn spawn_retried(&mut self) -> Child {
        retried(|| self.spawn())
    }

    fn output_retried(&mut self) -> Output {
        retried(|| self.output())
    }

    fn spawn_piped(&mut self) -> Child {
        self.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_retried()
    }
}

fn retried<T>(mut start: impl FnMut() -> std::io::Result<T>) -> T {
    let attempts = std::env::var_os("BT2SUM_TEST_EMULATED").map_or(1, |_| 5);
    let mut attempt = 1;
    loop {
        match start() {
            Ok(started) => return started,
            Err(error) if attempt < attempts => {
                eprintln!("starting a process failed ({error}); retrying under emulation");
                std::thread::sleep(Duration::from_millis(100 * attempt));
                attempt += 1;
            }
            Err(error) => panic!("the process starts: {error}"),
        }
    }
}

/// Runs `bt2sum ARGS` with `stdin` as its standard input.
pub fn run<I, S>(args: I, stdin: &[u8]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_in(Path::new("."), args, stdin)
}

/// Runs `bt2sum ARGS` in `dir` with `stdin` as its standard input. A run
/// that has not ended after ten minutes (far more than the slowest takes,
/// even under emulation) is killed and fails the test, so that a hang
/// fails it instead of stopping the suite.
pub fn run_in<I, S>(dir: &Path, args: I, stdin: &[u8]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = bt2sum().current_dir(dir).args(args).spawn_piped();
    let mut input = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A closed pipe is fine: the command may not read its input.
        let _ = input.write_all(&bytes);
    });
    let output = output_within(child, Duration::from_secs(600));
    writer.join().expect("stdin writer");
    output
}

/// Runs `bt2sum ARGS` in `dir`, which must succeed; its standard output.
#[track_caller]
pub fn ok_in<I, S>(dir: &Path, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    String::from_utf8_lossy(&ok_bytes_in(dir, args)).into_owned()
}

/// As [`ok_in`], the bytes of standard output (for names that are not
/// UTF-8, and lists to write).
#[track_caller]
pub fn ok_bytes_in<I, S>(dir: &Path, args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args
        .into_iter()
        .map(|arg| arg.as_ref().to_owned())
        .collect();
    let out = run_in(dir, &args, b"");
    assert_eq!(status(&out), 0, "{args:?}: {}", stderr(&out));
    out.stdout
}

/// Runs `bt2sum ARGS` in `dir`: what it said on standard output and on
/// standard error, and its status.
pub fn said_in<I, S>(dir: &Path, args: I) -> (String, String, i32)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    said(&run_in(dir, args, b""))
}

/// Standard output and error as text, and the status.
pub fn said(output: &Output) -> (String, String, i32) {
    (stdout(output), stderr(output), status(output))
}

/// Asserts what a run printed on each stream, and its status.
#[track_caller]
pub fn assert_output(output: &Output, stdout: &str, stderr: &str, status: i32) {
    assert_said(output, stdout, stderr, status, "stdout, stderr and status");
}

/// As [`assert_output`], naming `case` in its message.
#[track_caller]
pub fn assert_said(output: &Output, stdout: &str, stderr: &str, status: i32, case: &str) {
    let said = (
        self::stdout(output),
        self::stderr(output),
        self::status(output),
    );
    assert_eq!(
        said,
        (stdout.to_string(), stderr.to_string(), status),
        "{case}"
    );
}

/// Asserts that `text` holds `part`, showing `text` if not.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is not in:\n{text}");
}

/// Asserts that `text` starts with `part`, showing `text` if not.
#[track_caller]
pub fn assert_starts(text: &str, part: &str) {
    assert!(text.starts_with(part), "{part:?} does not start:\n{text}");
}

/// Asserts that `text` ends with `part`, showing `text` if not.
#[track_caller]
pub fn assert_ends(text: &str, part: &str) {
    assert!(text.ends_with(part), "{part:?} does not end:\n{text}");
}

/// Writes each of `files` (a relative path and its bytes) under `root`,
/// making the directories they need.
pub fn write_files(root: &Path, files: &[(&str, &[u8])]) {
    for (path, bytes) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// A temporary directory holding `files` (as [`write_files`] writes them).
pub fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), files);
    dir
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The exit status code (panics if the process died of a signal).
pub fn status(output: &Output) -> i32 {
    output.status.code().unwrap_or_else(|| {
        panic!(
            "bt2sum died: {:?}; stderr: {}",
            output.status,
            stderr(output)
        )
    })
}

/// What the binary prints after `bt2sum: NAME: ` when it cannot read the
/// file at `path`: the system's message for the error that reading it
/// gives, without Rust's ` (os error N)` (`bt2sum::plain_message`). On
/// Unix, for example, `No such file or directory` or `Is a directory`; on
/// Windows whatever that system says of the same error. Tests that compare
/// messages build them with this; on Unix it must be `on_unix`.
#[track_caller]
pub fn read_error(path: &Path, on_unix: &str) -> String {
    let error = std::fs::read(path).expect_err("the file is not readable");
    let message = bt2sum::plain_message(&error);
    #[cfg(unix)]
    assert_eq!(message, on_unix, "{}", path.display());
    #[cfg(not(unix))]
    let _ = on_unix;
    message
}

/// `path` as the binary prints it in its lines and messages
/// (`bt2sum::format::name::Name::of_path`): on Unix its bytes, on Windows
/// with every `\` written `/`.
pub fn printed(path: &Path) -> String {
    let printed = bt2sum::format::name::Name::of_path(path.as_os_str()).expect("a printable name");
    String::from_utf8(printed.into_bytes()).expect("a UTF-8 name")
}

/// `bytes` as a file name: on Unix any bytes; on Windows, where names are
/// Unicode, they must be UTF-8.
pub fn name(bytes: &[u8]) -> &OsStr {
    #[cfg(unix)]
    return std::os::unix::ffi::OsStrExt::from_bytes(bytes);
    #[cfg(not(unix))]
    return OsStr::new(std::str::from_utf8(bytes).expect("a UTF-8 name"));
}

/// Waits for `child` for at most `limit`, with its standard output and
/// error captured if they were piped; kills it and panics after that (a
/// hang fails the test instead of stopping the suite).
pub fn output_within(mut child: Child, limit: Duration) -> Output {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                pipe.read_to_end(&mut bytes)
                    .expect("read the child's output");
            }
            bytes
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for bt2sum") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bt2sum did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Waits until process `pid` has `path` open (Linux: its `/proc/PID/fd`).
#[cfg(target_os = "linux")]
pub fn wait_until_open(pid: u32, path: &Path) {
    let path = std::fs::canonicalize(path).unwrap();
    let fds = format!("/proc/{pid}/fd");
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let open = std::fs::read_dir(&fds).into_iter().flatten().any(|entry| {
            entry
                .ok()
                .and_then(|entry| std::fs::read_link(entry.path()).ok())
                .is_some_and(|target| target == path)
        });
        if open {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("bt2sum did not open {} within 30 s", path.display());
}

#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let made = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// Runs `script` with `sh -c` in `dir`, `$BT2SUM` naming the built binary:
/// for what only a shell sets up (`ulimit`, closed descriptors).
#[cfg(unix)]
pub fn shell(dir: &Path, script: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("BT2SUM", env!("CARGO_BIN_EXE_bt2sum"))
        .output()
        .expect("sh runs")
}

/// Whether the suite runs under an emulator (qemu, wine), as `.ci/run`
/// says with `BT2SUM_TEST_EMULATED`: tests of memory limits, descriptors
/// and signals would then measure the emulator, and say they are skipped.
pub fn emulated(test: &str) -> bool {
    skipped_under_emulation(test, "under emulation")
}

/// As [`emulated`], for a test that runs bt2sum a hundred times or more
/// (or hashes megabytes in tiny leaves) and has no platform code of its
/// own: under an emulator each run costs a fraction of a second, and the
/// test would take minutes to say what it says natively.
pub fn emulated_too_slow(test: &str) -> bool {
    skipped_under_emulation(
        test,
        "under emulation: too many runs of bt2sum, and no platform code of its own",
    )
}

fn skipped_under_emulation(test: &str, why: &str) -> bool {
    let emulated = std::env::var_os("BT2SUM_TEST_EMULATED").is_some();
    if emulated {
        skip(test, why);
    }
    emulated
}

/// A FUSE file system of the project's (`program`, a Python script named
/// from the crate's root) mounted over `source`, unmounted when dropped; `None`, with a note
/// naming `test`, where FUSE cannot be had here.
#[cfg(target_os = "linux")]
pub struct Mounted {
    mountpoint: std::path::PathBuf,
    server: std::process::Child,
}

#[cfg(target_os = "linux")]
impl Mounted {
    /// The spinning-disk model over `source`, with no seek time and no
    /// speed limit: a FUSE file system that counts what it serves
    /// ([`Mounted::served`]) and answers as a disk does.
    pub fn counting_disk(test: &str, source: &Path, mountpoint: &Path) -> Option<Mounted> {
        let args = ["--seek-ms", "0", "--mb-per-s", "100000"];
        Mounted::fuse(test, "scripts/spinning-disk", source, mountpoint, &args)
    }

    /// The bytes the spinning-disk model has served so far (its counters
    /// file).
    pub fn served(&self) -> u64 {
        let counters = std::fs::read_to_string(self.mountpoint.join(".spinning-disk")).unwrap();
        let counters: serde_json::Value = serde_json::from_str(&counters).unwrap();
        counters["bytes"].as_u64().unwrap()
    }

    pub fn fuse(
        test: &str,
        program: &str,
        source: &Path,
        mountpoint: &Path,
        args: &[&str],
    ) -> Option<Mounted> {
        let cannot = |why: &str| {
            skip(test, why);
            None
        };
        if !Path::new("/dev/fuse").exists() {
            return cannot("there is no /dev/fuse here");
        }
        let has_module = std::process::Command::new("python3")
            .args(["-c", "import mfusepy"])
            .output()
            .is_ok_and(|out| out.status.success());
        if !has_module {
            return cannot("Python's mfusepy is missing (scripts/test-deps installs it)");
        }
        std::fs::create_dir_all(mountpoint).unwrap();
        let server = std::process::Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(program))
            .arg(source)
            .arg(mountpoint)
            .args(args)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mounted = Mounted {
            mountpoint: mountpoint.to_path_buf(),
            server,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::fs::read_dir(mountpoint).unwrap().next().is_none() {
            if std::time::Instant::now() > deadline {
                return cannot("the FUSE file system could not be mounted here");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(mounted)
    }
}

#[cfg(target_os = "linux")]
impl Drop for Mounted {
    fn drop(&mut self) {
        for unmount in [&["fusermount3", "-u"][..], &["umount"][..]] {
            let done = std::process::Command::new(unmount[0])
                .args(&unmount[1..])
                .arg(&self.mountpoint)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if done {
                break;
            }
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The bodies of the blocks of a Markdown text that open with the line
/// `fence` (such as ```` ```sh ````), each line ended with `\n`.
#[cfg(unix)]
pub fn fenced_blocks(text: &str, fence: &str) -> Vec<String> {
    let mut lines = text.lines();
    let mut blocks = Vec::new();
    while let Some(line) = lines.next() {
        if line == fence {
            let body = lines.by_ref().take_while(|line| *line != "```");
            blocks.push(body.map(|line| format!("{line}\n")).collect());
        }
    }
    blocks
}

/// Runs `bt2sum ARGS` in `dir`, which must succeed, and writes its standard
/// output to `list` (relative to `dir`): a list for a test to check.
/// Returns what it wrote.
#[track_caller]
pub fn write_list<I, S>(dir: &Path, list: &str, args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let listed = ok_bytes_in(dir, args);
    std::fs::write(dir.join(list), &listed).unwrap();
    listed
}
