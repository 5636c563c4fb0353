//! Files changed while they are hashed, on every path that reads a file.
//!
//! A writer thread takes a file through a cycle of states and records
//! when each change began and ended. Each hash is timed too, and judged
//! by what the file went through meanwhile:
//!
//! - no change overlapped it: the output must be exactly what bt2sum
//!   prints for a still copy of the file in that state;
//! - a change overlapped it: the output must say the file changed, or be
//!   exactly what bt2sum prints for one of the states the file was in
//!   during the hash (a change that ended before bt2sum took its first
//!   stamp, or began after its last). Anything else, a digest of bytes the
//!   file never held all at once, is a wrong digest.
//!
//! Two writers: one cuts the file's tail off and writes it back, leaving
//! zeros for a while (size, modification time and identity end as they
//! began; a mapped page past the end raises SIGBUS meanwhile); one
//! rewrites the first and last MiB in place and restores the modification
//! time, so that only the change time tells. Its forward change writes the
//! head first: a hash that read the old head and the new tail saw a file
//! that never existed. The writer's pauses are drawn around the length of
//! one hash, so that some hashes overlap a change and others do not.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{bt2sum, emulated, pattern};

/// The file's length: two windows of 64 KiB leaves (each window holds
/// 40 MiB), so that its head and tail are hashed apart in time.
const LEN: usize = 44 << 20;
const MIB: usize = 1 << 20;
/// Hashes a command is judged on, for each writer.
const HASHES: usize = 24;

/// What the file holds in each state of the writers' cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Original,
    /// The last MiB cut off.
    Cut,
    /// The last MiB zeros.
    Zeroed,
    /// The first MiB rewritten.
    NewHead,
    /// The first and last MiB rewritten.
    NewBoth,
}

const CONTENTS: [Content; 5] = [
    Content::Original,
    Content::Cut,
    Content::Zeroed,
    Content::NewHead,
    Content::NewBoth,
];

/// The first MiB and the last (`None`: cut off) of the file in `content`.
fn head_and_tail(content: Content, original: &[u8]) -> (Vec<u8>, Option<Vec<u8>>) {
    let new = |part: &[u8]| part.iter().map(|b| b ^ 0x5a).collect();
    let (head, tail) = (&original[..MIB], &original[LEN - MIB..]);
    match content {
        Content::Original => (head.to_vec(), Some(tail.to_vec())),
        Content::Cut => (head.to_vec(), None),
        Content::Zeroed => (head.to_vec(), Some(vec![0; MIB])),
        Content::NewHead => (new(head), Some(tail.to_vec())),
        Content::NewBoth => (new(head), Some(new(tail))),
    }
}

fn bytes_of(content: Content, original: &[u8]) -> Vec<u8> {
    let (head, tail) = head_and_tail(content, original);
    [
        &head[..],
        &original[MIB..LEN - MIB],
        &tail.unwrap_or_default(),
    ]
    .concat()
}

/// One change made by a writer: when it began and ended (`None` while it
/// is being made), and what the file held after it.
#[derive(Clone, Copy, Debug)]
struct Change {
    began: Instant,
    ended: Option<Instant>,
    after: Content,
}

/// The states the file was in at some moment of `during`, given the
/// changes made so far, and whether any change overlapped it.
fn states_during(changes: &Mutex<Vec<Change>>, during: (Instant, Instant)) -> (Vec<Content>, bool) {
    let changes = changes.lock().unwrap();
    let (start, end) = during;
    let mut states = vec![
        changes
            .iter()
            .rev()
            .find(|change| change.ended.is_some_and(|ended| ended <= start))
            .map_or(Content::Original, |change| change.after),
    ];
    let mut overlapped = false;
    for change in changes.iter() {
        if change.began < end && change.ended.is_none_or(|ended| ended > start) {
            overlapped = true;
            states.push(change.after);
        }
    }
    (states, overlapped)
}

/// A writer's cycle: each step is what the file holds after it, then
/// whether to pause before the next (for a while drawn around the length
/// of one hash) or go straight on.
type Step = (Content, bool);

/// Makes the file hold `content`, in place: its length, its first MiB,
/// then its last (each set or written whether it changes or not).
fn change_to(file: &fs::File, content: Content, original: &[u8]) {
    let (head, tail) = head_and_tail(content, original);
    let len = if tail.is_some() { LEN } else { LEN - MIB };
    file.set_len(len as u64).unwrap();
    file.write_all_at(&head, 0).unwrap();
    if let Some(tail) = tail {
        file.write_all_at(&tail, (LEN - MIB) as u64).unwrap();
    }
}

/// Cuts the tail, grows the file back (zeros), writes the tail again.
const CUT_AND_RESTORE: &[Step] = &[
    (Content::Cut, false),
    (Content::Zeroed, true),
    (Content::Original, true),
];

/// Rewrites the head then the tail; puts back the tail then the head.
const REWRITE_IN_PLACE: &[Step] = &[
    (Content::NewHead, false),
    (Content::NewBoth, true),
    (Content::NewHead, false),
    (Content::Original, true),
];

/// What one hash gave.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// What bt2sum printed, and its status.
    Printed(Vec<u8>, i32),
    /// `file changed while being read`.
    Changed,
    /// `Input/output error`: a page past the end of the file was mapped
    /// while the file looked unchanged (it was cut and grown back).
    Faulted,
}

/// A way of hashing the file, judged by its outcomes.
trait Hasher: Sync {
    fn name(&self) -> String;
    /// Hashes `dir`'s file (the live one, or a still copy in one state).
    fn hash(&self, dir: &Path) -> Outcome;
}

/// The real binary, run in a directory holding `file`, `tree/file` (a
/// hard link to it) and `list` (a leaf listing of the original).
struct Command {
    args: &'static [&'static str],
    /// The file is standard input.
    stdin: bool,
}

impl Hasher for Command {
    fn name(&self) -> String {
        let stdin = if self.stdin { " < file" } else { "" };
        format!("bt2sum {}{stdin}", self.args.join(" "))
    }

    fn hash(&self, dir: &Path) -> Outcome {
        let stdin = match self.stdin {
            true => Stdio::from(fs::File::open(dir.join("file")).unwrap()),
            false => Stdio::null(),
        };
        let mut command = bt2sum();
        command.args(self.args).current_dir(dir).stdin(stdin);
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let status = out.status.code().expect("no signal");
        let outcome = match &stderr {
            said if said.contains("file changed while being read") => Outcome::Changed,
            said if said.contains("Input/output error") => Outcome::Faulted,
            _ => return Outcome::Printed(out.stdout, status),
        };
        assert_eq!(status, 1, "{stderr}");
        outcome
    }
}

/// The library's `hash_path`, with a leaf size.
struct Library {
    leaf: u32,
}

impl Hasher for Library {
    fn name(&self) -> String {
        format!("hash_path with {} KiB leaves", self.leaf >> 10)
    }

    fn hash(&self, dir: &Path) -> Outcome {
        let tree =
            bt2sum::TreeParams::new(bt2sum::Algorithm::Blake2b, 64, u64::from(self.leaf)).unwrap();
        match bt2sum::hash_path(&tree, dir.join("file")) {
            Ok(digest) => Outcome::Printed(digest.as_bytes().to_vec(), 0),
            Err(bt2sum::Error::Changed) => Outcome::Changed,
            Err(bt2sum::Error::Io(error)) if error.raw_os_error() == Some(libc::EIO) => {
                Outcome::Faulted
            }
            Err(error) => panic!("{error}"),
        }
    }
}

/// A directory laid out as [`Command`] expects, holding `bytes`.
fn lay_out(dir: &Path, bytes: &[u8], list: &[u8]) {
    fs::create_dir_all(dir.join("tree")).unwrap();
    fs::write(dir.join("file"), bytes).unwrap();
    fs::hard_link(dir.join("file"), dir.join("tree/file")).unwrap();
    fs::write(dir.join("list"), list).unwrap();
}

/// What the judging found, for one hasher and one writer.
#[derive(Debug, Default)]
struct Counts {
    /// Hashes no change overlapped.
    still: usize,
    /// Hashes a change overlapped that said so.
    changed: usize,
    /// Hashes a change overlapped that gave one state's output.
    one_state: usize,
    /// Outputs of no state the file was in, or errors where nothing changed.
    wrong: Vec<String>,
}

/// Hashes the live file in `live` [`HASHES`] times while `steps` change it,
/// judging each hash against the still copies' outputs.
fn judge(
    hasher: &dyn Hasher,
    live: &Path,
    original: &[u8],
    steps: &[Step],
    expected: &[(Content, Outcome)],
    pause: Duration,
) -> Counts {
    let file = fs::File::options().write(true).open(live.join("file"));
    let file = file.unwrap();
    let modified = file.metadata().unwrap().modified().unwrap();
    let changes = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let mut counts = Counts::default();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Pauses from 0 to 2 hashes long, drawn from a fixed sequence.
            let mut state = 0x9e37_79b9_7f4a_7c15_u64;
            while !stop.load(Ordering::Relaxed) {
                for &(after, pause_after) in steps {
                    // Recorded before it is made, so that a hash that ends
                    // meanwhile knows of it.
                    changes.lock().unwrap().push(Change {
                        began: Instant::now(),
                        ended: None,
                        after,
                    });
                    change_to(&file, after, original);
                    file.set_times(fs::FileTimes::new().set_modified(modified))
                        .unwrap();
                    let ended = Instant::now();
                    changes.lock().unwrap().last_mut().unwrap().ended = Some(ended);
                    if pause_after {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let share = (state >> 33) % 2001;
                        std::thread::sleep(pause * share as u32 / 1000);
                    }
                }
            }
        });
        for _ in 0..HASHES {
            let start = Instant::now();
            let outcome = hasher.hash(live);
            let (states, overlapped) = states_during(&changes, (start, Instant::now()));
            // (Each state's expected outcome is a printed one.)
            let matches = |content: &Content| {
                (expected.iter()).any(|(state, printed)| state == content && *printed == outcome)
            };
            match (&outcome, overlapped) {
                (Outcome::Changed | Outcome::Faulted, true) => counts.changed += 1,
                (_, false) if matches(&states[0]) => counts.still += 1,
                (_, true) if states.iter().any(matches) => counts.one_state += 1,
                _ => counts.wrong.push(format!(
                    "{outcome:?} while the file was in {states:?}{}",
                    if overlapped { "" } else { ", unchanged" }
                )),
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Put the original back for the next writer.
    file.set_len(0).unwrap();
    file.write_all_at(original, 0).unwrap();
    counts
}

fn hashers() -> Vec<Box<dyn Hasher>> {
    let command = |args, stdin| Box::new(Command { args, stdin }) as Box<dyn Hasher>;
    vec![
        Box::new(Library { leaf: 5 << 20 }),
        // Leaves over 8 MiB: one leaf per thread, mapped a piece at a time.
        Box::new(Library { leaf: 16 << 20 }),
        command(&["-t", "64k", "file"], false),
        command(&["-t", "64k", "--leaves", "file"], false),
        command(
            &["-t", "64k", "--leaves", "--leaf-range", "0..1000", "file"],
            false,
        ),
        command(&["-t", "64k", "-r", "tree"], false),
        command(&["-t", "64k"], true),
        command(&["-c", "list"], false),
    ]
}

/// Every way of reading a file, under both writers: never a wrong digest
/// or verdict, and each writer overlapped some hashes of each way.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn a_file_changed_while_hashed_is_never_misread() {
    let test = "a_file_changed_while_hashed_is_never_misread";
    if emulated(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = pattern(LEN);
    let live = dir.path().join("live");
    lay_out(&live, &original, b"");
    let list = super::write_list(&live, "list", ["-t", "64k", "--leaves", "file"]);
    let still: Vec<(Content, PathBuf)> = CONTENTS
        .iter()
        .map(|&content| {
            let path = dir.path().join(format!("{content:?}"));
            lay_out(&path, &bytes_of(content, &original), &list);
            (content, path)
        })
        .collect();
    let mut wrong = Vec::new();
    let mut report = Vec::new();
    for hasher in hashers() {
        let expected: Vec<(Content, Outcome)> = still
            .iter()
            .map(|(content, path)| (*content, hasher.hash(path)))
            .collect();
        for (content, outcome) in &expected {
            assert!(
                matches!(outcome, Outcome::Printed(..)),
                "{}: the still copy of {content:?} gave {outcome:?}",
                hasher.name()
            );
        }
        let started = Instant::now();
        hasher.hash(&live);
        let pause = started.elapsed();
        for (writer, steps) in [
            ("cut and restore", CUT_AND_RESTORE),
            ("rewrite in place", REWRITE_IN_PLACE),
        ] {
            let counts = judge(&*hasher, &live, &original, steps, &expected, pause);
            let line = format!(
                "{} / {writer}: {} unchanged, {} changed, {} in one state, {} wrong",
                hasher.name(),
                counts.still,
                counts.changed,
                counts.one_state,
                counts.wrong.len()
            );
            eprintln!("{line}");
            if counts.changed + counts.one_state == 0 {
                wrong.push(format!("the writer never overlapped a hash: {line}"));
            }
            for wrong_one in &counts.wrong {
                wrong.push(format!("{} / {writer}: {wrong_one}", hasher.name()));
            }
            report.push(line);
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\n\n{}",
        wrong.join("\n"),
        report.join("\n")
    );
}
