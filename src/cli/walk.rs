//! `--recursive`: turns the command line's arguments into the list of inputs
//! to hash, every regular file under each directory argument, in the order
//! `find DIR -type f | LC_ALL=C sort` lists them.
//!
//! - Paths are built from the argument as given, as `find` builds them
//!   (`dir` and `dir/` give `dir/a`, `.` gives `./a`), so that the checksum
//!   list reads back with `--check` from the same directory.
//! - The files under one argument are sorted by their whole path, bytewise;
//!   the arguments keep their order. An argument that is not a directory (a
//!   file, `-`, a missing name) is passed through as given, to be hashed or
//!   reported like any named input.
//! - A symbolic link named as an argument is followed. Links met in the walk
//!   are skipped, unless `-L`: they are then followed, and a directory that
//!   is already on the path being walked (same device and inode) is reported
//!   as a file system loop instead of being entered again; a dangling link
//!   is skipped, as `find -L` does.
//! - FIFOs, sockets and devices met in the walk are skipped silently (a FIFO
//!   would wait for a writer forever), and so is the file standard output
//!   writes to (same device and inode): `bt2sum -r > SUMS` does not hash
//!   its own, half-written list.
//! - A directory that cannot be read, or an entry that cannot be examined,
//!   gets an error line (`bt2sum: PATH: Permission denied`) and is counted;
//!   the rest of the tree is still walked.
//! - The list of files grows only with memory granted: where more is
//!   refused (`ulimit -v`), the walk stops with `bt2sum: PATH: Cannot
//!   allocate memory` and lists nothing, rather than aborting.
//!
//! Names are bytes throughout: non-UTF-8 names survive. The walk keeps its
//! own stack rather than recursing, and holds no directory open while it
//! walks below it, so deep trees need neither a deep call stack nor many
//! file descriptors.

use std::ffi::{OsStr, OsString};
use std::fs::{self, FileType};
use std::io;
use std::path::Path;

use super::output::report;
use bt2sum::system::FileId;
use bt2sum::{out_of_memory, plain_message};

/// What expanding the arguments gave.
pub struct Walk {
    /// The inputs to hash, in order.
    pub files: Vec<OsString>,
    /// How many error lines the walk wrote.
    pub errors: usize,
    /// The file standard output writes to, if it is a regular file: not an
    /// input.
    output: Option<FileId>,
    /// Memory was refused: the walk has stopped.
    stopped: bool,
}

/// A child of a directory, as the directory lists it: its path, its type
/// (which saves a `stat` of each plain file), and whether it may be the
/// file standard output writes to.
struct Child {
    path: OsString,
    file_type: Option<FileType>,
    may_be_output: bool,
}

/// A directory being walked: its identity, and its children not yet
/// visited.
struct Level {
    id: FileId,
    children: std::vec::IntoIter<Child>,
}

/// What a path met in the walk is, for the walk.
enum Kind {
    File,
    Directory(FileId),
    /// Anything else: links not followed, dangling links, FIFOs, sockets,
    /// devices.
    Skipped,
}

/// Expands the arguments of `--recursive` (`.` when there are none): each
/// directory becomes the regular files under it, sorted by path bytewise;
/// anything else stays as given. Errors met in the walk are reported on
/// standard error as they happen, and counted.
pub fn expand(arguments: &[OsString], dereference: bool) -> Walk {
    let current = [OsString::from(".")];
    let arguments = if arguments.is_empty() {
        &current[..]
    } else {
        arguments
    };
    let mut walk = Walk {
        files: Vec::new(),
        errors: 0,
        output: FileId::of_stdout(),
        stopped: false,
    };
    for argument in arguments {
        if walk.stopped {
            break;
        }
        // A link named as an argument is followed (`metadata`, not
        // `symlink_metadata`).
        let directory = match fs::metadata(argument) {
            Ok(metadata) if argument != "-" && metadata.is_dir() => metadata,
            _ => {
                walk.add(argument.clone());
                continue;
            }
        };
        let first = walk.files.len();
        match FileId::of(Path::new(argument), &directory) {
            Ok(id) => walk.directory(argument, id, dereference),
            Err(error) => walk.error(argument, &plain_message(&error)),
        }
        walk.files[first..].sort_unstable_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    }
    walk
}

impl Walk {
    /// Adds every regular file under the directory `root`.
    fn directory(&mut self, root: &OsStr, id: FileId, dereference: bool) {
        let mut levels = Vec::new();
        self.enter(&mut levels, root.to_os_string(), id);
        while let Some(level) = levels.last_mut() {
            if self.stopped {
                return;
            }
            let Some(child) = level.children.next() else {
                levels.pop();
                continue;
            };
            match self.kind_of(&child.path, child.file_type, dereference) {
                Kind::File if self.is_output(&child) => {}
                Kind::File => self.add(child.path),
                Kind::Directory(id) => self.enter(&mut levels, child.path, id),
                Kind::Skipped => {}
            }
        }
    }

    /// Adds a file to hash, if memory for it is granted; stops the walk
    /// (with an error about the file) if not.
    fn add(&mut self, path: OsString) {
        if bt2sum::memory::reserve(&mut self.files, 1) {
            self.files.push(path);
        } else {
            self.out_of_memory(&path);
        }
    }

    /// Reports that memory was refused while at `place`, and stops. The
    /// list is dropped first, both because a walk cut short lists no tree
    /// and so that the message itself finds memory.
    fn out_of_memory(&mut self, place: &OsStr) {
        self.files = Vec::new();
        self.stopped = true;
        self.error(place, &plain_message(&out_of_memory()));
    }

    /// Whether a regular file met in the walk is the one standard output
    /// writes to (looked up only if the directory's listing allows it).
    fn is_output(&self, child: &Child) -> bool {
        let Some(output) = &self.output else {
            return false;
        };
        child.may_be_output
            && fs::metadata(&child.path)
                .and_then(|metadata| FileId::of(Path::new(&child.path), &metadata))
                .is_ok_and(|id| id == *output)
    }

    /// Reads the directory at `path` and pushes it on the walk's stack,
    /// unless it is already on it (a loop) or cannot be read.
    fn enter(&mut self, levels: &mut Vec<Level>, path: OsString, id: FileId) {
        if levels.iter().any(|level| level.id == id) {
            self.error(&path, "File system loop detected");
            return;
        }
        let entries = match fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(error) => return self.error(&path, &plain_message(&error)),
        };
        let mut children = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => {
                    let file_type = entry.file_type().ok();
                    // (A link's own inode says nothing of its target's.)
                    let link = file_type.is_none_or(|file_type| file_type.is_symlink());
                    let joined = join(&path, &entry.file_name());
                    let (Some(child_path), true) =
                        (joined, bt2sum::memory::reserve(&mut children, 1))
                    else {
                        drop(children);
                        return self.out_of_memory(&path);
                    };
                    children.push(Child {
                        path: child_path,
                        file_type,
                        may_be_output: self
                            .output
                            .as_ref()
                            .is_some_and(|output| link || output.may_be(&entry)),
                    });
                }
                Err(error) => {
                    self.error(&path, &plain_message(&error));
                    break;
                }
            }
        }
        // Sorted so that errors come out in a stable order; the files are
        // sorted by whole path at the end anyway.
        children.sort_unstable_by(|a, b| a.path.as_encoded_bytes().cmp(b.path.as_encoded_bytes()));
        levels.push(Level {
            id,
            children: children.into_iter(),
        });
    }

    /// What `path` is to the walk, given its type as its directory listed
    /// it (if it could); an entry that cannot be examined is reported and
    /// skipped.
    fn kind_of(&mut self, path: &OsStr, listed: Option<FileType>, dereference: bool) -> Kind {
        match listed {
            Some(file_type) if file_type.is_file() => return Kind::File,
            Some(file_type) if file_type.is_symlink() && !dereference => return Kind::Skipped,
            Some(file_type) if !file_type.is_dir() && !file_type.is_symlink() => {
                return Kind::Skipped;
            }
            _ => {}
        }
        let mut metadata = fs::symlink_metadata(path);
        if dereference && metadata.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
            metadata = match fs::metadata(path) {
                // A dangling link is skipped, as `find -L -type f` does.
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Kind::Skipped,
                followed => followed,
            };
        }
        let directory = match metadata {
            Ok(metadata) if metadata.is_file() => return Kind::File,
            Ok(metadata) if metadata.is_dir() => FileId::of(Path::new(path), &metadata),
            Ok(_) => return Kind::Skipped,
            // Removed since the directory was read: nothing to hash.
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Kind::Skipped,
            Err(error) => Err(error),
        };
        match directory {
            Ok(id) => Kind::Directory(id),
            Err(error) => {
                self.error(path, &plain_message(&error));
                Kind::Skipped
            }
        }
    }

    /// Reports an error about `path` and counts it.
    fn error(&mut self, path: &OsStr, message: &str) {
        report(path, message);
        self.errors += 1;
    }
}

/// `directory/name`, without adding a slash after a separator the
/// directory already ends with (as `find dir/` prints `dir/a`; on Windows
/// `dir\` gives `dir\a`, which lines print `dir/a`); `None` if memory for
/// it is refused.
fn join(directory: &OsStr, name: &OsStr) -> Option<OsString> {
    let mut path = OsString::new();
    path.try_reserve_exact(directory.len() + 1 + name.len())
        .ok()?;
    path.push(directory);
    let separated = directory
        .as_encoded_bytes()
        .last()
        .is_some_and(|&last| std::path::is_separator(char::from(last)));
    if !separated {
        path.push("/");
    }
    path.push(name);
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::join;
    use std::ffi::OsStr;

    #[test]
    fn paths_are_joined_as_find_joins_them() {
        let joined = |directory: &str| join(OsStr::new(directory), OsStr::new("a")).unwrap();
        assert_eq!(joined("dir"), "dir/a");
        assert_eq!(joined("dir/"), "dir/a");
        assert_eq!(joined("dir//"), "dir//a");
        assert_eq!(joined("."), "./a");
        assert_eq!(joined("/"), "/a");
    }
}
