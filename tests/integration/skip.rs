//! How a test says that it did not run here: [`skip`]. The unit tests
//! (`crate::skip::skip`) and the integration tests (`skip`) share this file.

/// Says that `test` did not run here, and why.
///
/// The harness still reports the test `ok`; this note keeps it from
/// passing for a test that ran. It goes to standard error (shown with
/// `--nocapture`) and, where `BT2SUM_SKIPPED` names a file, as a line
/// appended to that file, which `.ci/run` prints and counts at the end.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    let line = format!("skipped: {test}: {why}\n");
    eprint!("{line}");
    let Some(log) = std::env::var_os("BT2SUM_SKIPPED") else {
        return;
    };
    let noted = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(error) = noted {
        panic!("{test}: cannot note the skip in {log:?}: {error}");
    }
}
