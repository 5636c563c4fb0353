//! What bt2sum prints: the exit statuses, the one way messages reach
//! standard error, and the one printer of standard output, which writes
//! typed records as lines (the grammars are the library's `format`) or,
//! with `--json`, as one JSON object a line (docs/json.md is the schema).
//! A record with no line of its own (an error, a summary) is written only
//! as JSON.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine;
use serde::{Serialize, Serializer};

use bt2sum::format::checksum::{Style, push_line};
use bt2sum::format::name::Name;
use bt2sum::format::stat::Mtime;
use bt2sum::format::{Ending, InputLines};
use bt2sum::plain_message;
use bt2sum::verify::Verdict;
use bt2sum::{Selection, TreeParams};

use super::progress;

/// The exit status of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Every input hashed, every listed file verified.
    Success = 0,
    /// Some input failed (unreadable, changed, mismatched), or output did.
    Failure = 1,
    /// Bad usage: nothing was done.
    Usage = 2,
}

/// Writes `bt2sum: NAME: MESSAGE` to standard error (above the progress
/// bar, if one is drawn), the name as verdicts show it ([`Name::shown`]).
/// A name that lines cannot print is shown with the characters it cannot
/// have replaced. Returns the status of a run that fails there.
pub fn report(name: &OsStr, message: &str) -> Status {
    report_listed(Name::of_path_lossy(name).printed(), message);
    Status::Failure
}

/// [`report`] for a name as a list gives it, in bytes.
pub fn report_listed(name: &[u8], message: &str) {
    let mut line = b"bt2sum: ".to_vec();
    Name::listed(name).push_shown(&mut line);
    // (Writing to a vector cannot fail.)
    let _ = writeln!(line, ": {message}");
    write_stderr(&line);
}

pub fn warn(message: &str) {
    write_stderr(format!("bt2sum: {message}\n").as_bytes());
}

/// `1 ONE` or `COUNT MANY`, as messages count things.
pub fn counted(count: u64, one: &str, many: &str) -> String {
    match count {
        1 => format!("1 {one}"),
        _ => format!("{count} {many}"),
    }
}

/// Whether a message could not be written to standard error: the run then
/// fails, as GNU's tools do (`2>/dev/full`), whatever else it did.
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes a whole line to standard error, above the progress bar if one is
/// drawn.
fn write_stderr(line: &[u8]) {
    progress::suspend(|| {
        if io::stderr().write_all(line).is_err() {
            STDERR_FAILED.store(true, Ordering::Relaxed);
        }
    });
}

/// The status of a run that ended with `status`, counting a message that
/// could not be written to standard error as a failure.
pub fn with_stderr(status: Status) -> Status {
    match STDERR_FAILED.load(Ordering::Relaxed) {
        true => status.max(Status::Failure),
        false => status,
    }
}

/// What a failed write to standard output means for the run: a closed pipe
/// (`| head -1`) ends it quietly and successfully; anything else is an error.
pub fn output_failed(error: &io::Error) -> Status {
    if error.kind() == io::ErrorKind::BrokenPipe {
        Status::Success
    } else {
        warn(&format!("write error: {}", plain_message(error)));
        Status::Failure
    }
}

/// The status a run's output gives it: [`output_failed`] if it could not
/// be written.
pub fn ended(written: io::Result<()>) -> Status {
    written.map_or_else(|error| output_failed(&error), |()| Status::Success)
}

/// Standard output that was closed when the process started: every write
/// fails as writing to a closed descriptor does.
pub struct Closed;

impl Write for Closed {
    fn write(&mut self, _buf: &[u8]) -> io::Result<usize> {
        Err(crate::cli::sys::closed_stream())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A name as lines print it: `{"text": …}` in JSON, or `{"bytes": BASE64}`
/// where it is not UTF-8 (ripgrep's convention); `None` (`null`) for
/// standard input read because no FILE was given.
#[derive(Clone, Copy)]
pub struct JsonName<'a>(pub Option<&'a [u8]>);

impl Serialize for JsonName<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "lowercase")]
        enum Shown<'a> {
            Text(&'a str),
            Bytes(String),
        }
        let shown = self.0.map(|bytes| match std::str::from_utf8(bytes) {
            Ok(text) => Shown::Text(text),
            Err(_) => Shown::Bytes(base64::engine::general_purpose::STANDARD.encode(bytes)),
        });
        shown.serialize(serializer)
    }
}

/// Tree parameters as objects carry them: `algorithm`, `digest_size`,
/// `leaf_size`.
#[derive(Clone, Copy)]
pub struct Tree<'a>(pub &'a TreeParams);

impl Serialize for Tree<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("algorithm", self.0.algorithm().name())?;
        map.serialize_entry("digest_size", &self.0.digest_size())?;
        map.serialize_entry("leaf_size", &self.0.leaf_size())?;
        map.end()
    }
}

#[derive(Clone, Copy)]
pub struct Hex<'a>(pub &'a [u8]);

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&hex::encode(self.0))
    }
}

/// Serializes a verdict as the words check mode prints.
fn verdict_words<S: Serializer>(verdict: &Verdict, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(verdict.text())
}

/// One thing bt2sum reports.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Record<'a> {
    /// An input's checksum line, and with a modification time its stat line.
    Checksum {
        #[serde(flatten)]
        tree: Tree<'a>,
        name: JsonName<'a>,
        digest: Hex<'a>,
        length: u64,
        #[serde(skip_serializing_if = "Option::is_none", serialize_with = "some_mtime")]
        mtime: Option<Mtime>,
    },
    /// One leaf of a listing.
    Leaf {
        #[serde(flatten)]
        tree: Tree<'a>,
        name: JsonName<'a>,
        index: u64,
        offset: u64,
        length: u64,
        total: u64,
        digest: Hex<'a>,
    },
    /// How many leaves an input has; with a selection, its bytes.
    Count {
        #[serde(flatten)]
        tree: Tree<'a>,
        name: JsonName<'a>,
        leaves: u64,
        total: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        length: Option<u64>,
        #[serde(skip)]
        selected: Option<std::ops::Range<u64>>,
    },
    /// The verdict on a listed file (its checksum line).
    Verdict {
        #[serde(flatten)]
        tree: Tree<'a>,
        name: JsonName<'a>,
        #[serde(serialize_with = "verdict_words")]
        verdict: Verdict,
        #[serde(skip_serializing_if = "Option::is_none")]
        expected: Option<Hex<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        digest: Option<Hex<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        length: Option<u64>,
    },
    /// What an audit says of a file no checksum line verifies.
    #[serde(rename = "verdict")]
    Class {
        name: JsonName<'a>,
        verdict: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        from: Option<JsonName<'a>>,
    },
    /// The verdict on one leaf of a listed file.
    LeafVerdict {
        #[serde(flatten)]
        tree: Tree<'a>,
        name: JsonName<'a>,
        #[serde(serialize_with = "verdict_words")]
        verdict: Verdict,
        index: u64,
        offset: u64,
        length: u64,
    },
    /// The verdict on a count line: the listed file's length.
    CountVerdict {
        #[serde(flatten)]
        tree: Tree<'a>,
        name: JsonName<'a>,
        #[serde(serialize_with = "verdict_words")]
        verdict: Verdict,
        total: Option<u64>,
    },
    /// What mending one failing leaf did.
    Repair {
        name: JsonName<'a>,
        index: u64,
        offset: u64,
        length: u64,
        verdict: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// What restoring a missing file did.
    Restore {
        name: JsonName<'a>,
        verdict: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// An improperly formatted line of a list.
    BadLine { list: JsonName<'a>, line: u64 },
    /// An input or a list that could not be read.
    Error {
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<JsonName<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        list: Option<JsonName<'a>>,
        message: &'a str,
    },
    /// What `--update` changed in its list.
    Update {
        list: JsonName<'a>,
        #[serde(flatten)]
        done: &'a Rewritten,
    },
    /// The counts of hashing, last: inputs hashed, and those that failed.
    #[serde(rename = "summary")]
    HashSummary { files: u64, errors: u64, status: u8 },
    /// The counts of a check, last: the lists, and every class of file
    /// over all of them.
    #[serde(rename = "summary")]
    CheckSummary {
        lists: usize,
        #[serde(flatten)]
        counts: &'a Tally,
        status: u8,
        #[serde(skip_serializing_if = "Option::is_none")]
        ledger: Option<Coverage>,
    },
}

/// The counts of one checked list, or over all lists with what an audit
/// found, named as the JSON summary names them (docs/json.md says what
/// each counts). Files are counted, not lines (a file listed with its
/// leaves counts once, by its worst line), but `repaired` and
/// `unrepaired` count leaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Properly formatted lines (of files checked, or skipped as missing).
    #[serde(skip)]
    pub entries: u64,
    pub improperly_formatted: u64,
    pub ok: u64,
    pub failed: u64,
    pub changed: u64,
    pub unreadable: u64,
    pub unverified: u64,
    pub unread: u64,
    /// Properly formatted lines left to other slices (`--part`).
    #[serde(skip)]
    pub outside_slice: u64,
    pub repaired: u64,
    pub unrepaired: u64,
    /// Files that failed and verify now, mended.
    #[serde(skip)]
    pub mended_files: u64,
    pub restored: u64,
    pub unrestored: u64,
    pub out_of_scope: u64,
    /// Files that failed and an update takes in as they are (`--accept`).
    #[serde(skip)]
    pub accepted: u64,
    pub new: u64,
    pub moved: u64,
    pub missing: u64,
    pub errors: u64,
}

/// What `--update` did to its list, counted in files.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rewritten {
    pub added: u64,
    pub renamed: u64,
    pub rehashed: u64,
    pub restated: u64,
    pub forgotten: u64,
    /// Not hashed (their lines are kept, or, new, left out); each reported.
    #[serde(skip)]
    pub unreadable: u64,
}

/// The bytes of the lists by the age of their last proof, as a check's
/// ledger says at its end.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Coverage {
    pub total_bytes: u64,
    pub never_verified_bytes: u64,
    pub verified_within_1_day_bytes: u64,
    pub verified_within_7_days_bytes: u64,
    pub verified_within_30_days_bytes: u64,
    /// The oldest last proof of a unit, in seconds since 1970.
    pub oldest_verification: Option<u64>,
}

/// A modification time as stat lines write it, `SECONDS.NANOSECONDS`.
fn some_mtime<S: Serializer>(mtime: &Option<Mtime>, serializer: S) -> Result<S::Ok, S::Error> {
    mtime.map(|mtime| mtime.to_string()).serialize(serializer)
}

/// How lines are laid out: the checksum line's style and every line's end.
#[derive(Clone, Copy, Default)]
pub struct Layout {
    pub style: Style,
    pub ending: Ending,
}

/// What check mode prints: GNU's `--status`, `--quiet` and `--warn`, of
/// which the last one given wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    /// Nothing on stdout, no summary counts.
    Status,
    /// No `OK` lines.
    Quiet,
    /// Every verdict and the summary counts.
    Normal,
    /// As normal, plus a line for each improperly formatted line.
    Warn,
}

/// Writes records to standard output as lines or JSON objects, and errors
/// to standard error (with `--json`, as objects too).
pub struct Printer<'o> {
    pub out: &'o mut dyn Write,
    pub json: bool,
    pub layout: Layout,
    pub verbosity: Verbosity,
    line: Vec<u8>,
}

impl<'o> Printer<'o> {
    pub fn new(out: &'o mut dyn Write, json: bool, layout: Layout, verbosity: Verbosity) -> Self {
        Printer {
            out,
            json,
            layout,
            verbosity,
            line: Vec::new(),
        }
    }

    /// Says why `name` (as a list gives it, or lines print it) could not
    /// be read or hashed: on standard error, after what standard output
    /// holds so far, and with `--json` as an object.
    pub fn error(&mut self, name: &[u8], message: &str) -> io::Result<()> {
        self.error_as(name, name, message)
    }

    /// [`error`](Self::error), naming the input on standard error as it
    /// was given (`shown`), where lines name it otherwise.
    pub fn error_as(&mut self, name: &[u8], shown: &[u8], message: &str) -> io::Result<()> {
        self.emit(&Record::Error {
            name: Some(JsonName(Some(name))),
            list: None,
            message,
        })?;
        self.say(shown, message)
    }

    /// Says why a list could not be opened or read on, as [`error`](Self::error).
    pub fn list_error(&mut self, list: &OsStr, message: &str) -> io::Result<()> {
        let list = Name::of_path_lossy(list);
        self.emit(&Record::Error {
            name: None,
            list: Some(JsonName(Some(list.printed()))),
            message,
        })?;
        self.say(list.printed(), message)
    }

    /// Writes `bt2sum: NAME: MESSAGE` on standard error only (as
    /// [`report_listed`]), after what standard output holds so far.
    pub fn say(&mut self, name: &[u8], message: &str) -> io::Result<()> {
        self.out.flush()?;
        report_listed(name, message);
        Ok(())
    }

    /// Writes one record, if the verbosity shows it: its object with
    /// `--json`, else its lines (a record without lines writes nothing).
    pub fn emit(&mut self, record: &Record<'_>) -> io::Result<()> {
        if !self.shows(record) {
            return Ok(());
        }
        self.line.clear();
        if self.json {
            // (Through a value, whose map sorts the keys.)
            let value = serde_json::to_value(record)?;
            writeln!(self.line, "{value}")?;
        } else {
            record.push_text(&mut self.line, self.layout);
        }
        self.out.write_all(&self.line)
    }

    /// Whether the verbosity lets `record` out: `--status` nothing (an
    /// error is still said on standard error), `--quiet` no verdict that a
    /// file passed.
    fn shows(&self, record: &Record<'_>) -> bool {
        match (self.verbosity, record) {
            (Verbosity::Status, _) => false,
            (
                Verbosity::Quiet,
                Record::Verdict { verdict, .. }
                | Record::LeafVerdict { verdict, .. }
                | Record::CountVerdict { verdict, .. },
            ) => !matches!(verdict, Verdict::Ok | Verdict::Unread),
            _ => true,
        }
    }

    /// Writes the run's last record (its summary) if everything before it
    /// was written, and flushes the output.
    pub fn end(&mut self, written: io::Result<()>, last: &Record<'_>) -> io::Result<()> {
        written?;
        self.emit(last)?;
        self.out.flush()
    }

    /// Flushes what was written, so that standard error follows it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<'a> Record<'a> {
    /// The count record of a `total`-byte input, with the bytes of the
    /// selected leaves if there is a selection.
    pub fn count(
        tree: &'a TreeParams,
        name: JsonName<'a>,
        total: u64,
        selection: Option<&Selection>,
    ) -> Record<'a> {
        let leaves = tree.leaf_count(total);
        let selected = selection.map(|selection| selection.leaves(leaves));
        let bytes = selected
            .as_ref()
            .map(|leaves| tree.leaves_bytes(leaves, total));
        Record::Count {
            tree: Tree(tree),
            name,
            leaves,
            total,
            offset: bytes.as_ref().map(|bytes| bytes.start),
            length: bytes.map(|bytes| bytes.end - bytes.start),
            selected,
        }
    }

    /// Appends the record's lines, if it has any: an input's lines, or a
    /// verdict, `NAME: VERDICT[ from NAME]`, names shown escaped where they
    /// hold a backslash or a control byte.
    fn push_text(&self, out: &mut Vec<u8>, layout: Layout) {
        let ending = layout.ending;
        fn input<'a>(tree: &Tree<'a>, name: &JsonName<'a>, ending: Ending) -> InputLines<'a> {
            let (tree, name) = (tree.0, name.0);
            InputLines { tree, name, ending }
        }
        let (name, verdict) = match self {
            Record::Checksum {
                tree,
                name,
                digest,
                length,
                mtime,
            } => {
                let checksum = bt2sum::Digest::from_slice(digest.0).expect("a digest");
                let algorithm = tree.0.algorithm();
                push_line(out, layout.style, algorithm, &checksum, name.0, ending);
                if let Some(mtime) = mtime {
                    input(tree, name, ending).push_stat(out, *length, *mtime);
                }
                return;
            }
            Record::Leaf {
                tree,
                name,
                index,
                total,
                digest,
                ..
            } => return input(tree, name, ending).push_leaf(out, *total, *index, digest.0),
            Record::Count {
                tree,
                name,
                total,
                selected,
                ..
            } => return input(tree, name, ending).push_count(out, *total, selected.as_ref()),
            Record::Verdict { name, verdict, .. } => (name, verdict.text().into()),
            Record::Class { name, verdict, .. } => (name, verdict.to_string()),
            Record::LeafVerdict {
                name,
                verdict,
                index,
                ..
            } => (name, format!("leaf {index}: {}", verdict.text())),
            Record::CountVerdict { name, verdict, .. } => {
                (name, format!("leaf count: {}", verdict.text()))
            }
            Record::Repair {
                name,
                index,
                reason,
                ..
            } => match reason {
                None => (name, format!("leaf {index}: REPAIRED")),
                Some(why) => (name, format!("leaf {index}: FAILED ({why})")),
            },
            Record::Restore { name, reason, .. } => match reason {
                None => (name, "RESTORED".into()),
                Some(why) => (name, format!("FAILED to restore ({why})")),
            },
            _ => return,
        };
        let shown = |out: &mut Vec<u8>, name: &JsonName<'_>| {
            Name::listed(name.0.unwrap_or(b"-")).push_shown(out);
        };
        shown(out, name);
        let _ = write!(out, ": {verdict}");
        if let Record::Class {
            from: Some(from), ..
        } = self
        {
            out.extend_from_slice(b" from ");
            shown(out, from);
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines_show_names_escaped() {
        let tree = TreeParams::default();
        let mut out = Vec::new();
        let mut printer = Printer::new(&mut out, false, Layout::default(), Verbosity::Normal);
        let verdict = |name: &'static [u8], verdict| Record::Verdict {
            tree: Tree(&tree),
            name: JsonName(Some(name)),
            verdict,
            expected: None,
            digest: None,
            length: None,
        };
        let leaf = |name: &'static [u8], index, verdict| Record::LeafVerdict {
            tree: Tree(&tree),
            name: JsonName(Some(name)),
            verdict,
            index,
            offset: 0,
            length: 0,
        };
        let repair = |reason| Record::Repair {
            name: JsonName(Some(b"big\n")),
            index: 4,
            offset: 0,
            length: 0,
            verdict: "FAILED",
            reason,
        };
        for record in [
            verdict(b"a b", Verdict::Ok),
            verdict(b"new\nline", Verdict::Failed),
            verdict(b"back\\slash", Verdict::Unreadable),
            verdict(b"\xff", Verdict::Ok),
            verdict(b"evil.iso: OK\x1b[8m", Verdict::Failed),
            leaf(b"tab\tdel\x7f", 7, Verdict::Ok),
            leaf(b"f", 57, Verdict::Missing),
            repair(None),
            repair(Some("the copy's leaf does not match either")),
            Record::CountVerdict {
                tree: Tree(&tree),
                name: JsonName(Some(b"f")),
                verdict: Verdict::Failed,
                total: None,
            },
            Record::Class {
                name: JsonName(Some(b"n\x01")),
                verdict: "MOVED",
                from: Some(JsonName(Some(b"o"))),
            },
        ] {
            printer.emit(&record).unwrap();
        }
        assert_eq!(
            String::from_utf8_lossy(&out),
            "a b: OK\n\\new\\nline: FAILED\n\\back\\\\slash: FAILED open or read\n\u{fffd}: OK\n\
             \\evil.iso: OK\\x1b[8m: FAILED\n\\tab\\x09del\\x7f: leaf 7: OK\nf: leaf 57: FAILED missing\n\
             \\big\\n: leaf 4: REPAIRED\n\\big\\n: leaf 4: FAILED (the copy's leaf does not match either)\n\
             f: leaf count: FAILED\n\\n\\x01: MOVED from o\n"
        );
    }
}
