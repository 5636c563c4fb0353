//! Walking directories the way `-r` and audits do (walkdir): every
//! regular file under each root, with paths built from the root as given
//! (as `find` builds them), in the order `find ROOT -type f | LC_ALL=C
//! sort` lists them, one at a time, in memory that holds one directory's
//! entries per level, and no directory open. Each directory's entries are
//! sorted by name, a directory's as if it ended in `/`: then depth first
//! gives the bytewise order of whole paths (`a-b` before `a/x`) with no
//! sort of the whole tree. Links are skipped unless followed (`-L`: a
//! loop is reported, a dangling link skipped, as `find -L`); so are
//! FIFOs, sockets and devices, the files to skip ([`Skipped`]), and what
//! the [`Excludes`] match (an excluded directory is not entered). An
//! error is given in its place, and the rest of the tree is walked.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;

use bt2sum::sys::FileId;
use walkdir::{DirEntry, WalkDir};

/// A regular file under a root, or a root that is no directory (a file,
/// `-`, a missing name), as given; or where the walk failed (a directory
/// that could not be read, an entry that could not be examined, a loop).
pub type Walked = Result<OsString, (OsString, io::Error)>;

/// How to walk: `-L`, `--exclude`, `-x`, `--max-depth`.
#[derive(Clone, Default)]
pub struct WalkPlan {
    pub follow_links: bool,
    pub excludes: Excludes,
    pub one_file_system: bool,
    pub max_depth: Option<usize>,
}

/// What a walk passes over besides its plan's excludes.
#[derive(Default)]
pub struct Skipped {
    /// Files never given, whatever their path: the file standard output
    /// writes to, the lists an audit reads or writes.
    pub files: Vec<FileId>,
    /// Directories whose update's temporary files are passed over (an
    /// audit's lists' directories).
    pub names_in: Vec<FileId>,
}

pub fn walk<'a>(
    root: &'a OsStr,
    plan: &'a WalkPlan,
    skipped: &'a Skipped,
) -> Box<dyn Iterator<Item = Walked> + 'a> {
    // A link named as a root is followed (`metadata`).
    if root == "-" || !std::fs::metadata(root).is_ok_and(|metadata| metadata.is_dir()) {
        return Box::new(std::iter::once(Ok(root.to_os_string())));
    }
    // The ledger beside a list being written (`LIST.ledger`, which sorts
    // right after it), once the walk has met the list.
    let mut ledger_beside: Option<std::path::PathBuf> = None;
    let entries = WalkDir::new(root)
        .min_depth(1)
        .max_depth(plan.max_depth.unwrap_or(usize::MAX))
        .same_file_system(plan.one_file_system)
        .follow_links(plan.follow_links)
        .sort_by(sort_order)
        .into_iter()
        .filter_entry(move |entry| !left_out(entry, root, plan, skipped));
    Box::new(entries.filter_map(move |entry| match entry {
        Ok(entry) if entry.file_type().is_file() => {
            if is_skipped(&entry, skipped) {
                let mut ledger = entry.into_path().into_os_string();
                ledger.push(".ledger");
                ledger_beside = Some(ledger.into());
                return None;
            }
            if ledger_beside.as_deref() == Some(entry.path()) {
                return None;
            }
            Some(Ok(entry.into_path().into_os_string()))
        }
        Ok(_) => None,
        Err(error) => walk_error(error),
    }))
}

/// The order of two entries of one directory: by name, a directory's as
/// if it ended in `/`. (Their whole paths compare as their names do, and
/// walkdir would parse the path for the name at each comparison.)
fn sort_order(a: &DirEntry, b: &DirEntry) -> std::cmp::Ordering {
    fn key(entry: &DirEntry) -> (&[u8], Option<&u8>) {
        let slash = entry.file_type().is_dir().then_some(&b'/');
        (entry.path().as_os_str().as_encoded_bytes(), slash)
    }
    let ((a, a_slash), (b, b_slash)) = (key(a), key(b));
    let common = a.len().min(b.len());
    a[..common].cmp(&b[..common]).then_with(|| {
        let a_rest = a[common..].iter().chain(a_slash);
        a_rest.cmp(b[common..].iter().chain(b_slash))
    })
}

/// How an update names its temporary file, beside the list it rewrites.
pub const UPDATE_PREFIX: &str = ".bt2sum-update-";

/// Whether `name` has the exact form of an update's temporary file
/// (`.bt2sum-update-PID-NUMBER`), which an audit passes over.
fn is_temporary(name: &OsStr) -> bool {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    let rest = name
        .to_str()
        .and_then(|name| name.strip_prefix(UPDATE_PREFIX));
    let parts = rest.and_then(|rest| rest.split_once('-'));
    parts.is_some_and(|(pid, number)| digits(pid) && digits(number))
}

/// Whether an entry is left out (a directory not entered).
fn left_out(entry: &DirEntry, root: &OsStr, plan: &WalkPlan, skipped: &Skipped) -> bool {
    if entry.path_is_symlink() && !plan.follow_links {
        return true;
    }
    let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
    if plan.excludes.excludes(relative, entry.file_type().is_dir()) {
        return true;
    }
    is_temporary(entry.file_name())
        && entry
            .path()
            .parent()
            .and_then(|directory| FileId::of_path(directory).ok())
            .is_some_and(|directory| skipped.names_in.contains(&directory))
}

/// Whether a regular file met is one to skip (looked up only where its
/// directory entry's inode allows it).
fn is_skipped(entry: &DirEntry, skipped: &Skipped) -> bool {
    #[cfg(unix)]
    let may_be = {
        use walkdir::DirEntryExt;
        let inode = entry.ino();
        entry.path_is_symlink() || skipped.files.iter().any(|file| file.inode() == inode)
    };
    #[cfg(not(unix))]
    let may_be = !skipped.files.is_empty();
    may_be && FileId::of_path(entry.path()).is_ok_and(|id| skipped.files.contains(&id))
}

/// A walk error in its place; a dangling link, nothing (as `find -L`).
fn walk_error(error: walkdir::Error) -> Option<Walked> {
    let path = (error.path()).map_or_else(OsString::new, |path| path.as_os_str().to_os_string());
    let error = match error.loop_ancestor() {
        Some(_) => io::Error::other("File system loop detected"),
        None => (error.into_io_error()).unwrap_or_else(|| io::Error::other("the walk failed")),
    };
    (error.kind() != io::ErrorKind::NotFound).then_some(Err((path, error)))
}

/// What a walk leaves out (`--exclude`): gitignore's patterns, as git
/// reads them (the `ignore` crate's matcher; `{a,b}` is no alternation),
/// each matched against the path below the root walked (docs/audit.md).
#[derive(Clone, Default)]
pub struct Excludes {
    /// `None` when there is none.
    matcher: Option<ignore::gitignore::Gitignore>,
}

impl Excludes {
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The excludes of `patterns`, in order (blank lines and `#` comments
    /// skipped, as in a `.gitignore`); why a pattern is not one.
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Result<Excludes, String> {
        let bad = |pattern: &str, reason: &str| format!("bad pattern {pattern:?}: {reason}");
        let mut builder = ignore::gitignore::GitignoreBuilder::new("");
        for pattern in patterns {
            let pattern = pattern.as_ref();
            if matches!(pattern.trim_start_matches('!'), "/" | "") && !pattern.is_empty() {
                return Err(bad(pattern, "it matches nothing"));
            }
            builder
                .add_line(None, &braces_literal(pattern))
                .map_err(|error| bad(pattern, &glob_reason(&error)))?;
        }
        let matcher = (builder.build()).map_err(|error| bad("", &glob_reason(&error)))?;
        Ok(Excludes {
            matcher: (matcher.num_ignores() + matcher.num_whitelists() > 0).then_some(matcher),
        })
    }

    /// Whether a listed file's `name` (as the list spells it, from the
    /// directory walked), or a directory above it, is matched; a name from
    /// the root never is.
    pub fn matches_listed(&self, name: &[u8]) -> bool {
        let name = bt2sum::format::name::Name::normalized(name);
        bt2sum::format::name::Name::listed(&name)
            .path()
            .is_some_and(|path| path.is_relative() && self.excludes_file(&path))
    }

    /// Whether the file at `relative` (below the root walked) is left out,
    /// as the walk meets it: each directory on its way, then the file.
    pub fn excludes_file(&self, relative: &Path) -> bool {
        let mut way = std::path::PathBuf::new();
        relative.components().any(|part| {
            way.push(part);
            self.excludes(&way, way != relative)
        })
    }

    /// Whether `relative` (below the root walked) is left out.
    pub fn excludes(&self, relative: &Path, is_dir: bool) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|matcher| matcher.matched(relative, is_dir).is_ignore())
    }
}

/// A pattern with its braces escaped: git reads `{a,b}` as those five
/// characters, where the `ignore` crate's globs would read an alternation
/// (ripgrep#1221); a brace escaped already stays so.
fn braces_literal(pattern: &str) -> String {
    let mut escaped = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if matches!(c, '{' | '}') {
            escaped.push('\\');
        }
        escaped.push(c);
        if c == '\\' {
            escaped.extend(chars.next());
        }
    }
    escaped
}

fn glob_reason(error: &ignore::Error) -> String {
    match error {
        ignore::Error::Glob { err, .. } => err.clone(),
        ignore::Error::WithLineNumber { err, .. } | ignore::Error::WithPath { err, .. } => {
            glob_reason(err)
        }
        error => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_form_is_a_temporary_file() {
        for (name, temporary) in [
            (".bt2sum-update-123-456", true),
            (".bt2sum-update-1-0", true),
            (".bt2sum-update-", false),
            (".bt2sum-update-123", false),
            (".bt2sum-update-123-", false),
            (".bt2sum-update--4", false),
            (".bt2sum-update-evil.sh", false),
            (".bt2sum-update-12-34.sh", false),
            ("x.bt2sum-update-1-2", false),
        ] {
            assert_eq!(is_temporary(OsStr::new(name)), temporary, "{name}");
        }
    }

    #[test]
    fn excludes_follow_gitignore() {
        let excludes = Excludes::new([
            "*.tmp",
            "# a comment",
            "",
            "Thumbs.db",
            ".s3git/",
            "build/*.o",
            "/top.txt",
            "**/cache",
            "logs/**",
            "!important.tmp",
            "[ab]?.bin",
        ])
        .unwrap();
        let table: [(&str, bool, bool); 22] = [
            ("x.tmp", false, true),
            ("a/b/x.tmp", false, true),
            ("a/important.tmp", false, false),
            ("Thumbs.db", false, true),
            ("deep/er/Thumbs.db", false, true),
            (".s3git", true, true),
            ("a/.s3git", true, true),
            (".s3git", false, false),
            ("build/x.o", false, true),
            ("build/sub/x.o", false, false),
            ("sub/build/x.o", false, false),
            ("top.txt", false, true),
            ("sub/top.txt", false, false),
            ("cache", true, true),
            ("a/b/cache", false, true),
            ("logs/a/b", false, true),
            ("logs", true, false),
            ("a1.bin", false, true),
            ("c1.bin", false, false),
            ("a12.bin", false, false),
            ("x.tmpx", false, false),
            ("a/x.tm", false, false),
        ];
        for (path, is_dir, expected) in table {
            assert_eq!(
                excludes.excludes(Path::new(path), is_dir),
                expected,
                "{path} (directory: {is_dir})"
            );
        }
        assert!(!Excludes::default().excludes(Path::new("a"), false));
        // Brace alternation is not gitignore's: `{a,b}` is a name.
        let braces = Excludes::new(["{a,b}"]).unwrap();
        assert!(!braces.excludes(Path::new("a"), true));
        assert!(braces.excludes(Path::new("{a,b}"), true));
        let escaped = Excludes::new(["x\\{y}", "*.{c,h}"]).unwrap();
        assert!(escaped.excludes(Path::new("x{y}"), false));
        assert!(escaped.excludes(Path::new("d/f.{c,h}"), false));
        assert!(!escaped.excludes(Path::new("f.c"), false));
        // An unclosed class is a name, as git reads it.
        let unclosed = Excludes::new(["a["]).unwrap();
        assert!(unclosed.excludes(Path::new("a["), false));
        assert!(Excludes::new(["/"]).is_err());
    }
}
