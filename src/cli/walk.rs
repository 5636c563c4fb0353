//! Walking directories the way `-r` and audits do: every regular file under
//! each root, in the order `find ROOT -type f | LC_ALL=C sort` lists them,
//! one at a time, in memory that holds one directory's entries per level of
//! the tree, however many files the tree has.
//!
//! - Paths are built from the root as given, as `find` builds them (`dir`
//!   and `dir/` give `dir/a`, `.` gives `./a`).
//! - The order is bytewise by whole path. Each directory's entries are
//!   sorted by name, a directory's name as if it ended in `/`: then
//!   visiting them depth first gives the order of the whole paths (`a-b`
//!   before `a/x`, as `-` sorts before `/`), with no sort of the whole tree.
//! - A symbolic link met in the walk is skipped, unless links are followed:
//!   a directory already on the path being walked (same device and inode)
//!   is then a file system loop, reported instead of entered again, and a
//!   dangling link is skipped, as `find -L` does.
//! - FIFOs, sockets and devices are skipped (a FIFO would wait for a writer
//!   forever), and so are the files to skip (the list being written or
//!   audited, by identity) and what the excludes match ([`Excludes`]); an
//!   excluded directory is not entered.
//! - A directory that cannot be read, or an entry that cannot be examined,
//!   is a [`Walked::Error`]; the rest of the tree is still walked.

use std::ffi::{OsStr, OsString};
use std::fs::{self, FileType};
use std::io;
use std::path::Path;
use std::sync::Arc;

use bt2sum::plain_message;

use super::files0::Entry;
use super::system::FileId;

/// What a walk gives, in order.
#[derive(Debug)]
pub enum Walked {
    /// A regular file under a root; or a root that is no directory (a file,
    /// `-`, a missing name), as given.
    File(OsString),
    /// A directory that could not be read, an entry that could not be
    /// examined, a loop.
    Error {
        /// Where.
        path: OsString,
        /// Why.
        error: io::Error,
    },
}

/// How to walk.
#[derive(Default)]
pub struct Options {
    /// Whether symbolic links met in the walk are followed (`-L`).
    pub follow_links: bool,
    /// Files never given, whatever their path: the file standard output
    /// writes to, the lists an audit reads or writes.
    pub skip: Vec<FileId>,
    /// What is left out.
    pub excludes: Excludes,
    /// Directories (by identity) whose entries of a form are passed over
    /// (an update's temporary files, in its lists' directories).
    pub passed_over: Option<(Vec<FileId>, NameTest)>,
}

/// Whether a name is of a form.
pub type NameTest = fn(&OsStr) -> bool;

/// The files under `roots`, walked one at a time.
pub struct Walk {
    roots: std::vec::IntoIter<OsString>,
    options: std::sync::Arc<Options>,
    /// The root being walked.
    root: Option<OsString>,
    levels: Vec<Level>,
}

/// A directory being walked: its identity and path, and its entries not
/// yet visited, sorted. Its entries' names are kept one after another in
/// one buffer: a directory of N entries holds N names and 32 bytes each.
struct Level {
    id: FileId,
    path: OsString,
    names: Vec<u8>,
    children: std::vec::IntoIter<Child>,
}

/// An entry of a directory: where its name is in its level's `names`, and
/// what it is.
struct Child {
    name: std::ops::Range<u32>,
    kind: Kind,
}

/// What a path met in the walk is, for the walk.
enum Kind {
    File,
    Directory(FileId),
    /// It could not be examined.
    Error(io::Error),
}

impl Walk {
    /// A walk of `roots` (each a directory, or anything else to pass
    /// through as given), in the order given.
    pub fn new(roots: Vec<OsString>, options: std::sync::Arc<Options>) -> Walk {
        Walk {
            roots: roots.into_iter(),
            options,
            root: None,
            levels: Vec::new(),
        }
    }

    /// Starts the next root: a directory is entered, anything else given.
    fn start(&mut self, root: OsString) -> Option<Walked> {
        // A link named as a root is followed (`metadata`, not
        // `symlink_metadata`).
        let directory = match fs::metadata(&root) {
            Ok(metadata) if root != "-" && metadata.is_dir() => metadata,
            _ => return Some(Walked::File(root)),
        };
        match FileId::of(Path::new(&root), &directory) {
            Ok(id) => {
                self.root = Some(root.clone());
                self.enter(root, id)
            }
            Err(error) => Some(Walked::Error { path: root, error }),
        }
    }

    /// Reads the directory at `path` and pushes its sorted entries on the
    /// walk's stack, unless it is already on it (a loop) or cannot be read.
    fn enter(&mut self, path: OsString, id: FileId) -> Option<Walked> {
        if self.levels.iter().any(|level| level.id == id) {
            let error = io::Error::other("File system loop detected");
            return Some(Walked::Error { path, error });
        }
        let entries = match fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(error) => return Some(Walked::Error { path, error }),
        };
        let passed_over = match &self.options.passed_over {
            Some((directories, passed_over)) if directories.contains(&id) => Some(passed_over),
            _ => None,
        };
        let mut names = Vec::new();
        let mut children: Vec<Child> = Vec::new();
        let mut failed = None;
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            };
            if passed_over.is_some_and(|passed_over| passed_over(&entry.file_name())) {
                continue;
            }
            let Some(kind) = self.child(&path, &entry) else {
                continue;
            };
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            let (Ok(start), Ok(end)) = (
                u32::try_from(names.len()),
                u32::try_from(names.len() + name.len()),
            ) else {
                let error = io::Error::other("the directory's names take more than 4 GiB");
                return Some(Walked::Error { path, error });
            };
            names.extend_from_slice(name);
            children.push(Child {
                name: start..end,
                kind,
            });
        }
        // Sorted as if a directory's name ended in `/`.
        let key = |child: &Child| {
            let name = &names[child.name.start as usize..child.name.end as usize];
            let slash = matches!(child.kind, Kind::Directory(_)).then_some(&b'/');
            name.iter().chain(slash)
        };
        children.sort_unstable_by(|a, b| key(a).cmp(key(b)));
        self.levels.push(Level {
            id,
            path: path.clone(),
            names,
            children: children.into_iter(),
        });
        failed.map(|error| Walked::Error { path, error })
    }

    /// An entry of the directory at `directory` as the walk sees it; `None`
    /// for what it skips (links not followed, special files, excluded
    /// paths, the files to skip).
    fn child(&self, directory: &OsStr, entry: &fs::DirEntry) -> Option<Kind> {
        let path = join(directory, &entry.file_name());
        let kind = self.kind_of(&path, entry.file_type().ok())?;
        if let (Some(root), false) = (&self.root, self.options.excludes.is_empty()) {
            let is_dir = matches!(kind, Kind::Directory(_));
            let relative = Path::new(&path).strip_prefix(root).ok()?;
            if self.options.excludes.excludes(relative, is_dir) {
                return None;
            }
        }
        if let Kind::File = kind
            && self.is_skipped(&path, entry)
        {
            return None;
        }
        Some(kind)
    }

    /// Whether a regular file met in the walk is one of the files to skip
    /// (looked up only if the directory's listing allows it).
    fn is_skipped(&self, path: &OsStr, entry: &fs::DirEntry) -> bool {
        let link = entry
            .file_type()
            .map_or(true, |file_type| file_type.is_symlink());
        let may_be = self
            .options
            .skip
            .iter()
            .any(|skipped| link || skipped.may_be(entry));
        may_be
            && fs::metadata(path)
                .and_then(|metadata| FileId::of(Path::new(path), &metadata))
                .is_ok_and(|id| self.options.skip.contains(&id))
    }

    /// What `path` is to the walk, given its type as its directory listed
    /// it (if it could); `None` for what the walk skips.
    fn kind_of(&self, path: &OsStr, listed: Option<FileType>) -> Option<Kind> {
        let follow = self.options.follow_links;
        match listed {
            Some(file_type) if file_type.is_file() => return Some(Kind::File),
            Some(file_type) if file_type.is_symlink() && !follow => return None,
            Some(file_type) if !file_type.is_dir() && !file_type.is_symlink() => return None,
            _ => {}
        }
        let mut metadata = fs::symlink_metadata(path);
        if follow && metadata.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
            metadata = match fs::metadata(path) {
                // A dangling link is skipped, as `find -L -type f` does.
                Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
                followed => followed,
            };
        }
        let directory = match metadata {
            Ok(metadata) if metadata.is_file() => return Some(Kind::File),
            Ok(metadata) if metadata.is_dir() => FileId::of(Path::new(path), &metadata),
            Ok(_) => return None,
            // Removed since the directory was read: nothing to hash.
            Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
            Err(error) => Err(error),
        };
        Some(match directory {
            Ok(id) => Kind::Directory(id),
            Err(error) => Kind::Error(error),
        })
    }
}

impl Iterator for Walk {
    type Item = Walked;

    fn next(&mut self) -> Option<Walked> {
        loop {
            let Some(level) = self.levels.last_mut() else {
                let root = self.roots.next()?;
                if let Some(walked) = self.start(root) {
                    return Some(walked);
                }
                continue;
            };
            let Some(child) = level.children.next() else {
                self.levels.pop();
                continue;
            };
            let name = &level.names[child.name.start as usize..child.name.end as usize];
            // SAFETY: the bytes are a whole name `as_encoded_bytes` gave,
            // on this platform, in this process.
            let name = unsafe { OsStr::from_encoded_bytes_unchecked(name) };
            let path = join(&level.path, name);
            let walked = match child.kind {
                Kind::File => Some(Walked::File(path)),
                Kind::Directory(id) => self.enter(path, id),
                Kind::Error(error) => Some(Walked::Error { path, error }),
            };
            if walked.is_some() {
                return walked;
            }
        }
    }
}

/// `directory/name`, without adding a slash after a separator the
/// directory already ends with (as `find dir/` prints `dir/a`; on Windows
/// `dir\` gives `dir\a`, which lines print `dir/a`).
fn join(directory: &OsStr, name: &OsStr) -> OsString {
    let mut path = OsString::with_capacity(directory.len() + 1 + name.len());
    path.push(directory);
    let separated = directory
        .as_encoded_bytes()
        .last()
        .is_some_and(|&last| std::path::is_separator(char::from(last)));
    if !separated {
        path.push("/");
    }
    path.push(name);
    path
}

/// What a walk leaves out, by gitignore's patterns (git's own rules, as
/// the `ignore` crate, ripgrep's, reads them), each matched against the
/// path below the root being walked:
///
/// - a pattern with no `/` but at its end matches a name at any depth
///   (`*.tmp`, `.DS_Store`); one with a `/` elsewhere matches from the
///   root (`build/*.o`, `/top.txt`); `**` matches any number of
///   directories (`**/cache`, `logs/**`);
/// - a trailing `/` matches directories only (`.s3git/`);
/// - `*` and `?` never match a `/`; `[a-z]` is a class; `{a,b}` is no
///   alternation, as in git;
/// - `!` before a pattern takes back what an earlier one left out: the
///   last pattern that matches decides;
/// - an excluded directory is not entered, so nothing under it is walked,
///   whatever a later `!` says (as in git).
///
/// ```
/// use std::path::Path;
/// use crate::cli::walk::Excludes;
///
/// let excludes = Excludes::new(["*.tmp", ".s3git/", "!keep.tmp", "/top.txt"])?;
/// assert!(excludes.excludes(Path::new("a/b/c.tmp"), false));
/// assert!(!excludes.excludes(Path::new("a/keep.tmp"), false));
/// assert!(excludes.excludes(Path::new("x/.s3git"), true));
/// assert!(!excludes.excludes(Path::new("x/.s3git"), false));
/// assert!(excludes.excludes(Path::new("top.txt"), false));
/// assert!(!excludes.excludes(Path::new("sub/top.txt"), false));
/// # Ok::<(), crate::cli::walk::ExcludeError>(())
/// ```
#[derive(Clone, Default)]
pub struct Excludes {
    /// What they match; `None` when there is none.
    matcher: Option<ignore::gitignore::Gitignore>,
}

/// A pattern that is not one.
#[derive(Debug)]
pub struct ExcludeError {
    /// The pattern as given.
    pub pattern: String,
    /// Why it is not one.
    pub reason: String,
}

impl std::fmt::Display for ExcludeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad pattern {:?}: {}", self.pattern, self.reason)
    }
}

impl std::error::Error for ExcludeError {}

impl Excludes {
    /// The excludes of `patterns`, in order (blank lines and `#` comments
    /// are skipped, as in a `.gitignore`); an error names the first pattern
    /// that is not one.
    pub fn new<S: AsRef<str>>(
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Excludes, ExcludeError> {
        let mut builder = ignore::gitignore::GitignoreBuilder::new("");
        for pattern in patterns {
            let pattern = pattern.as_ref();
            let bad = |reason: String| ExcludeError {
                pattern: pattern.to_string(),
                reason,
            };
            if matches!(pattern.trim_start_matches('!'), "/" | "") && !pattern.is_empty() {
                return Err(bad("it matches nothing".to_string()));
            }
            builder
                .add_line(None, &braces_literal(pattern))
                .map_err(|error| bad(glob_reason(&error)))?;
        }
        let matcher = builder.build().map_err(|error| ExcludeError {
            pattern: String::new(),
            reason: glob_reason(&error),
        })?;
        Ok(Excludes {
            matcher: (matcher.num_ignores() + matcher.num_whitelists() > 0).then_some(matcher),
        })
    }

    /// Whether `relative` (a path below the root being walked) is left out;
    /// `is_dir`: it is a directory.
    pub fn excludes(&self, relative: &Path, is_dir: bool) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|matcher| matcher.matched(relative, is_dir).is_ignore())
    }

    /// Whether there is any pattern.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }
}

/// A pattern with its braces escaped: git reads `{a,b}` as those five
/// characters, where the `ignore` crate's globs would read an alternation
/// (ripgrep#1221); a brace escaped already stays so.
fn braces_literal(pattern: &str) -> String {
    let mut escaped = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                escaped.push(c);
                escaped.extend(chars.next());
            }
            '{' | '}' => {
                escaped.push('\\');
                escaped.push(c);
            }
            c => escaped.push(c),
        }
    }
    escaped
}

/// Why the `ignore` crate refused a pattern, in its glob's words.
fn glob_reason(error: &ignore::Error) -> String {
    match error {
        ignore::Error::Glob { err, .. } => err.clone(),
        ignore::Error::WithLineNumber { err, .. } | ignore::Error::WithPath { err, .. } => {
            glob_reason(err)
        }
        error => error.to_string(),
    }
}

/// The walk of the arguments of `--recursive` (`.` when there are none).
pub struct Roots {
    roots: Vec<OsString>,
    options: Arc<Options>,
}

impl Roots {
    pub fn new(arguments: &[OsString], follow_links: bool, excludes: Excludes) -> Roots {
        let roots = match arguments.is_empty() {
            true => vec![OsString::from(".")],
            false => arguments.to_vec(),
        };
        let options = Options {
            follow_links,
            skip: FileId::of_stdout().into_iter().collect(),
            excludes,
            passed_over: None,
        };
        Roots {
            roots,
            options: Arc::new(options),
        }
    }

    /// The inputs, as they are walked.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + 'static {
        let walk = Walk::new(self.roots.clone(), Arc::clone(&self.options));
        walk.map(|walked| match walked {
            Walked::File(path) => Entry::Name(path),
            Walked::Error { path, error } => Entry::Bad {
                place: path,
                message: plain_message(&error),
            },
        })
    }

    /// The bytes of the regular files the walk gives (walked once more),
    /// for a progress bar's total.
    pub fn total_bytes(&self) -> u64 {
        self.entries()
            .filter_map(|entry| match entry {
                Entry::Name(path) => std::fs::metadata(path).ok(),
                Entry::Bad { .. } => None,
            })
            .filter(std::fs::Metadata::is_file)
            .fold(0u64, |total, metadata| total.saturating_add(metadata.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_joined_as_find_joins_them() {
        let joined = |directory: &str| join(OsStr::new(directory), OsStr::new("a"));
        assert_eq!(joined("dir"), "dir/a");
        assert_eq!(joined("dir/"), "dir/a");
        assert_eq!(joined("dir//"), "dir//a");
        assert_eq!(joined("."), "./a");
        assert_eq!(joined("/"), "/a");
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
        assert!(
            Excludes::new(["a["])
                .unwrap()
                .excludes(Path::new("a["), false)
        );
        assert!(Excludes::new(["/"]).is_err());
    }
}
