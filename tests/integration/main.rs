//! The one integration-test binary. Each module covers one concern; the
//! helpers they share live here.

mod check;
mod cli;
mod ct;
mod layers;
mod leaves;
mod robust;
mod ux;
mod vectors;

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The byte pattern of the generated vectors: byte `i` is `i % 251`.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A command running the built `bt2sum` binary.
pub fn bt2sum() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bt2sum"))
}

/// Runs `bt2sum ARGS` with `stdin` as its standard input.
pub fn run<I, S>(args: I, stdin: &[u8]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_in(Path::new("."), args, stdin)
}

/// Runs `bt2sum ARGS` in `dir` with `stdin` as its standard input.
pub fn run_in<I, S>(dir: &Path, args: I, stdin: &[u8]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = bt2sum()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bt2sum starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A closed pipe is fine: the command may not read its input.
        let _ = input.write_all(&bytes);
    });
    let output = child.wait_with_output().expect("bt2sum runs");
    writer.join().expect("stdin writer");
    output
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
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

/// Makes a FIFO at `path`.
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
    let emulated = std::env::var_os("BT2SUM_TEST_EMULATED").is_some();
    if emulated {
        eprintln!("{test}: skipped under emulation");
    }
    emulated
}
