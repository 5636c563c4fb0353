//! `--check --audit DIR`: the lists checked as check mode checks them, then
//! what the library's auditor finds under the directories: new, moved and
//! missing files, printed after the lists' verdicts with a summary of
//! their own.

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use std::fs::File;

use crate::cli::audit::{Auditor, Finding, Rewrite, Rewritten};
use crate::cli::system;
use crate::cli::system::FileId;
use crate::cli::walk;
use bt2sum::format::name::Name;
use bt2sum::verify::{Report, Verifier};
use bt2sum::{Stamp, TreeParams};

use super::super::config::{Checking, Verbosity};
use super::super::output::{Status, report_listed, warn};
use super::super::records::{JsonName, Record};
use super::Printer;

/// What checks the lists: the verifier alone, or an audit around it (with
/// `--update`, the list as it was when the audit began).
pub enum Checker<'v> {
    Lists(&'v Verifier<'v>),
    Audit(Box<Auditor<'v>>, Option<Stamp>),
}

impl<'v> Checker<'v> {
    /// The checker `config` asks for; an audit adds the bytes of the new
    /// files it hashes to `progress`, as the verifier does the listed
    /// files'.
    pub fn new(
        config: &Checking,
        verifier: &'v Verifier<'v>,
        progress: Option<&Arc<AtomicU64>>,
    ) -> Checker<'v> {
        // (Checked in slices, only the first audits.)
        let first_slice = config.slice.is_none_or(|part| part.part() == 1);
        if config.audit.is_empty() || !first_slice {
            return Checker::Lists(verifier);
        }
        // The lists, and the file standard output writes to, are never new.
        let mut skip: Vec<FileId> = FileId::of_stdout().into_iter().collect();
        for list in &config.lists {
            if let Ok(metadata) = std::fs::metadata(list)
                && let Ok(id) = FileId::of(Path::new(list), &metadata)
            {
                skip.push(id);
            }
        }
        // Nor is a temporary file an update that was killed left behind.
        let excludes = config
            .excludes
            .with(&format!("{UPDATE_PREFIX}*"))
            .expect("a valid pattern");
        let options = walk::Options {
            follow_links: config.follow_links,
            skip,
            excludes,
        };
        let mut auditor = Auditor::new(verifier, config.audit.clone(), options);
        if let Some(counter) = progress {
            auditor = auditor.progress(Arc::clone(counter));
        }
        let (auditor, list) = match config.update {
            Some(stat) => {
                let list = File::open(&config.lists[0]).and_then(|list| Stamp::now(&list));
                (auditor.updating(stat), list.ok())
            }
            None => (auditor, None),
        };
        Checker::Audit(Box::new(auditor), list)
    }

    /// Whether missing files wait for the audit's end (to be MISSING, or
    /// MOVED), instead of being reported as unreadable.
    pub fn defers_missing(&self) -> bool {
        matches!(self, Checker::Audit(..))
    }

    /// Checks one list, handing each report to `report`.
    pub fn check(
        &mut self,
        list: &mut dyn BufRead,
        list_is_stdin: bool,
        report: impl FnMut(Report<'_>) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        match self {
            Checker::Lists(verifier) => verifier.check(list, list_is_stdin, report),
            Checker::Audit(auditor, _) => auditor.check(list, list_is_stdin, report),
        }
    }

    /// For an audit, walks the directories and prints what it finds, then
    /// its summary, and with `--update` rewrites the list; the status of the
    /// audit (Success for a plain check). `Err` only when writing to
    /// standard output fails.
    pub fn finish(self, printer: &mut Printer<'_>, counts: &mut Counts) -> io::Result<Status> {
        let Checker::Audit(auditor, list_stamp) = self else {
            return Ok(Status::Success);
        };
        let mut written = Ok(());
        let finished = auditor.finish(|finding| {
            written = counts.print(&finding, printer);
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()),
            }
        });
        written?;
        printer.out.flush()?;
        let config = printer.config;
        for (list_name, tally) in std::mem::take(&mut printer.summaries) {
            super::summarize(config, &list_name, &tally);
        }
        if config.verbosity != Verbosity::Status {
            for warning in counts.warnings(config.ignore_missing) {
                warn(&warning);
            }
        }
        let rewrite = match finished {
            Ok(rewrite) => rewrite,
            Err(error) => {
                let reason = bt2sum::plain_message(&error);
                warn(&format!("cannot keep what the audit found: {reason}"));
                return Ok(Status::Failure);
            }
        };
        let Some(rewrite) = rewrite else {
            return Ok(counts.status());
        };
        // Updated, the list holds the new, moved and changed files: only
        // what it keeps as it was (missing files) still fails the run.
        let list = Path::new(&config.lists[0]);
        match update(list, list_stamp, rewrite, config) {
            Ok(done) => {
                if config.verbosity != Verbosity::Status {
                    report_updated(list, &done);
                    if config.json {
                        let list = Name::of_path_lossy(list.as_os_str());
                        printer.out.emit(&Record::Update {
                            list: JsonName(Some(list.printed())),
                            added: done.added,
                            renamed: done.renamed,
                            rehashed: done.rehashed,
                            restated: done.restated,
                        })?;
                    }
                }
                let failed = counts.missing + counts.errors + done.unreadable > 0;
                Ok(if failed {
                    Status::Failure
                } else {
                    Status::Success
                })
            }
            Err(why) => {
                let shown = Name::of_path_lossy(list.as_os_str()).shown();
                warn(&format!("{shown}: not updated: {why}"));
                Ok(Status::Failure)
            }
        }
    }
}

/// Rewrites `list` as the audit found the tree, atomically: a temporary
/// file in the list's directory (a symbolic link's target's), written,
/// flushed to the disk, given the list's owner, group and permissions, then
/// renamed over it (and the directory flushed, so that the rename itself
/// survives a crash). Until the rename, the list is as it was; after it,
/// whole and new. Refused, with nothing written, when the list is not what
/// the audit read (`seen`: it changed since, or is another file now), when
/// it has other hard links (which the rename would split), or when its
/// owner cannot be kept. A stop signal removes the temporary file. Files
/// that cannot be hashed are reported.
fn update(
    list: &Path,
    seen: Option<Stamp>,
    rewrite: Rewrite,
    config: &Checking,
) -> Result<Rewritten, String> {
    let plain = |error: io::Error| bt2sum::plain_message(&error);
    let changed = || "it changed while the audit ran (audit it again)".to_string();
    let target = std::fs::canonicalize(list).map_err(plain)?;
    let directory = target.parent().unwrap_or(Path::new("/"));
    let file = File::open(&target).map_err(plain)?;
    let metadata = file.metadata().map_err(plain)?;
    if seen != Some(Stamp::now(&file).map_err(plain)?) {
        return Err(changed());
    }
    let links = system::hard_links(&file, &metadata).map_err(plain)?;
    if links > 1 {
        return Err(format!(
            "it has {links} hard links, which replacing it would split (update a copy of it)"
        ));
    }
    let settings = config.settings;
    let default_tree = TreeParams::new(
        settings.grammar.untagged_algorithm,
        settings
            .grammar
            .digest_size
            .unwrap_or(settings.grammar.untagged_algorithm.max_digest_size()),
        settings.leaf_size,
    )
    .map_err(|error| error.to_string())?;
    let temporary = Temporary::create(directory).map_err(|error| {
        // (Where the list is named, unless it is a link.)
        let named = match std::fs::symlink_metadata(list) {
            Ok(metadata) if !metadata.is_symlink() => list.parent(),
            _ => Some(directory),
        };
        let named = named.filter(|named| !named.as_os_str().is_empty());
        let shown = Name::of_path_lossy(named.unwrap_or(Path::new(".")).as_os_str()).shown();
        format!(
            "cannot create a temporary file in {shown}: {}",
            plain(error)
        )
    })?;
    let mut reader = io::BufReader::with_capacity(64 << 10, &file);
    let done = {
        let mut out = io::BufWriter::with_capacity(64 << 10, temporary.file());
        let done = rewrite
            .write(&mut reader, &mut out, &default_tree, |name, error| {
                report_listed(name, &error.to_string());
            })
            .map_err(plain)?;
        out.flush().map_err(plain)?;
        done
    };
    system::keep_owner(temporary.file(), &metadata)
        .map_err(|error| format!("cannot give the new list its owner: {}", plain(error)))?;
    let new = temporary.file();
    new.set_permissions(metadata.permissions()).map_err(plain)?;
    new.sync_all().map_err(plain)?;
    // The list read is still the list there (no other update came first).
    let now = File::open(&target).and_then(|file| Stamp::now(&file));
    if seen != now.ok() {
        return Err(changed());
    }
    temporary.persist(&target).map_err(plain)?;
    flush_directory(directory).map_err(plain)?;
    Ok(done)
}

/// `--update`'s temporary file, removed on a stop signal, and when dropped
/// unless renamed over the list.
struct Temporary {
    /// Open until renamed (Windows renames no open file).
    file: Option<File>,
    /// Its path while it is to be removed.
    path: std::sync::Arc<std::sync::Mutex<Option<PathBuf>>>,
}

impl Temporary {
    /// A new file in `directory`, readable by its owner only until the
    /// list's permissions are given to it.
    fn create(directory: &Path) -> io::Result<Temporary> {
        let path = std::sync::Arc::new(std::sync::Mutex::new(None::<PathBuf>));
        let on_stop = std::sync::Arc::clone(&path);
        system::on_stop_signal(move || {
            if let Some(path) = lock(&on_stop).take() {
                let _ = std::fs::remove_file(path);
            }
        });
        // (Made with the lock held: a signal meanwhile waits for the path.)
        let mut held = lock(&path);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let since = std::time::UNIX_EPOCH.elapsed().unwrap_or_default();
        let mut attempt = 0u32;
        let (file, name) = loop {
            let name = format!(
                "{UPDATE_PREFIX}{}-{}",
                std::process::id(),
                since.subsec_nanos().wrapping_add(attempt)
            );
            match options.open(directory.join(&name)) {
                Ok(file) => break (file, name),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        };
        *held = Some(directory.join(name));
        drop(held);
        Ok(Temporary {
            file: Some(file),
            path,
        })
    }

    fn file(&self) -> &File {
        self.file.as_ref().expect("open until renamed")
    }

    /// Renames it over `target`.
    fn persist(mut self, target: &Path) -> io::Result<()> {
        self.file = None;
        let mut held = lock(&self.path);
        if let Some(path) = held.as_ref() {
            std::fs::rename(path, target)?;
        }
        *held = None;
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        self.file = None;
        if let Some(path) = lock(&self.path).take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The start of the name of `--update`'s temporary file, which no audit
/// takes for a new file (a run that was killed may leave one behind).
pub const UPDATE_PREFIX: &str = ".bt2sum-update-";

/// Flushes a directory's entries to the disk (Unix; elsewhere the rename is
/// as durable as the system makes it).
fn flush_directory(directory: &Path) -> io::Result<()> {
    #[cfg(unix)]
    return std::fs::File::open(directory)?.sync_all();
    #[cfg(not(unix))]
    {
        let _ = directory;
        Ok(())
    }
}

/// Says what the update changed in the list, on standard error.
fn report_updated(list: &Path, done: &Rewritten) {
    let mut parts = Vec::new();
    for (count, one, many) in [
        (done.added, "file added", "files added"),
        (done.renamed, "renamed", "renamed"),
        (done.rehashed, "hashed again", "hashed again"),
        (
            done.restated,
            "stat line written anew",
            "stat lines written anew",
        ),
    ] {
        match count {
            0 => {}
            1 => parts.push(format!("1 {one}")),
            _ => parts.push(format!("{count} {many}")),
        }
    }
    if parts.is_empty() {
        parts.push("nothing changed".to_string());
    }
    let shown = Name::of_path_lossy(list.as_os_str()).shown();
    warn(&format!("{shown}: updated: {}", parts.join(", ")));
}

/// What an audit found, counted.
#[derive(Default)]
pub struct Counts {
    pub new: u64,
    pub moved: u64,
    pub missing: u64,
    pub errors: u64,
}

impl Counts {
    /// Counts and prints one finding.
    fn print(&mut self, finding: &Finding, printer: &mut Printer<'_>) -> io::Result<()> {
        match finding {
            Finding::Waiting => printer.out.flush(),
            Finding::Error { name, error } => {
                self.errors += 1;
                printer.error(name, &error.to_string())
            }
            Finding::New { name } => {
                self.new += 1;
                printer.class(name, "NEW", None)
            }
            Finding::Moved { name, from } => {
                self.moved += 1;
                printer.class(name, "MOVED", Some(from))
            }
            Finding::Missing { name } if !printer.config.ignore_missing => {
                self.missing += 1;
                printer.class(name, "MISSING", None)
            }
            Finding::Missing { .. } => Ok(()),
        }
    }

    /// Failure if anything but OK was found.
    fn status(&self) -> Status {
        if self.new + self.moved + self.missing + self.errors > 0 {
            Status::Failure
        } else {
            Status::Success
        }
    }

    /// The summary, in GNU's words and style, each to follow `bt2sum: `.
    fn warnings(&self, ignore_missing: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut warn = |count: u64, one: &str, many: &str| match count {
            0 => {}
            1 => warnings.push(format!("WARNING: 1 {one}")),
            _ => warnings.push(format!("WARNING: {count} {many}")),
        };
        warn(self.new, "file is new", "files are new");
        warn(self.moved, "file was moved", "files were moved");
        if !ignore_missing {
            warn(
                self.missing,
                "listed file is missing",
                "listed files are missing",
            );
        }
        warnings
    }
}
