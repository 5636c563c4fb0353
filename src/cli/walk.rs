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
//!
//! Names are bytes throughout: non-UTF-8 names survive. The walk keeps its
//! own stack rather than recursing, and holds no directory open while it
//! walks below it, so deep trees need neither a deep call stack nor many
//! file descriptors.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, FileType, Metadata};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirEntryExt, MetadataExt};

use super::output::report;
use bt2sum::plain_message;

/// What expanding the arguments gave.
pub struct Walk {
    /// The inputs to hash, in order.
    pub files: Vec<OsString>,
    /// How many error lines the walk wrote.
    pub errors: usize,
    /// The file standard output writes to, if it is a regular file: not an
    /// input.
    output: Option<FileId>,
}

/// A file's identity: (device, inode).
type FileId = (u64, u64);

/// A child of a directory, as the directory lists it: its path, its type
/// (which saves a `stat` of each plain file) and its inode.
struct Child {
    path: Vec<u8>,
    file_type: Option<FileType>,
    inode: u64,
}

/// A directory being walked: its identity, and its children not yet
/// visited.
struct Level {
    id: FileId,
    children: std::vec::IntoIter<Child>,
}

/// What a path met in the walk is, for the walk.
enum Kind {
    /// A regular file, and its identity if it was looked up.
    File(Option<FileId>),
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
        output: output_file(),
    };
    for argument in arguments {
        // A link named as an argument is followed (`metadata`, not
        // `symlink_metadata`).
        let directory = match fs::metadata(argument) {
            Ok(metadata) if argument != "-" && metadata.is_dir() => metadata,
            _ => {
                walk.files.push(argument.clone());
                continue;
            }
        };
        let first = walk.files.len();
        walk.directory(argument.as_bytes(), &directory, dereference);
        walk.files[first..].sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    }
    walk
}

impl Walk {
    /// Adds every regular file under the directory `root`.
    fn directory(&mut self, root: &[u8], metadata: &Metadata, dereference: bool) {
        let mut levels = Vec::new();
        self.enter(&mut levels, root.to_vec(), identity(metadata));
        while let Some(level) = levels.last_mut() {
            let Some(child) = level.children.next() else {
                levels.pop();
                continue;
            };
            match self.kind_of(&child.path, child.file_type, dereference) {
                Kind::File(id) if self.is_output(&child, id) => {}
                Kind::File(_) => self.files.push(OsString::from_vec(child.path)),
                Kind::Directory(id) => self.enter(&mut levels, child.path, id),
                Kind::Skipped => {}
            }
        }
    }

    /// Whether a regular file met in the walk is the one standard output
    /// writes to. Only a file with the output's inode number is looked up.
    fn is_output(&self, child: &Child, id: Option<FileId>) -> bool {
        let Some(output) = self.output else {
            return false;
        };
        match id {
            Some(id) => id == output,
            None => {
                child.inode == output.1
                    && fs::metadata(OsStr::from_bytes(&child.path))
                        .is_ok_and(|metadata| identity(&metadata) == output)
            }
        }
    }

    /// Reads the directory at `path` and pushes it on the walk's stack,
    /// unless it is already on it (a loop) or cannot be read.
    fn enter(&mut self, levels: &mut Vec<Level>, path: Vec<u8>, id: FileId) {
        if levels.iter().any(|level| level.id == id) {
            self.error(&path, "File system loop detected");
            return;
        }
        let entries = match fs::read_dir(OsStr::from_bytes(&path)) {
            Ok(entries) => entries,
            Err(error) => return self.error(&path, &plain_message(&error)),
        };
        let mut children = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => children.push(Child {
                    path: join(&path, entry.file_name().as_bytes()),
                    file_type: entry.file_type().ok(),
                    inode: entry.ino(),
                }),
                Err(error) => {
                    self.error(&path, &plain_message(&error));
                    break;
                }
            }
        }
        // Sorted so that errors come out in a stable order; the files are
        // sorted by whole path at the end anyway.
        children.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        levels.push(Level {
            id,
            children: children.into_iter(),
        });
    }

    /// What `path` is to the walk, given its type as its directory listed
    /// it (if it could); an entry that cannot be examined is reported and
    /// skipped.
    fn kind_of(&mut self, path: &[u8], listed: Option<FileType>, dereference: bool) -> Kind {
        match listed {
            Some(file_type) if file_type.is_file() => return Kind::File(None),
            Some(file_type) if file_type.is_symlink() && !dereference => return Kind::Skipped,
            Some(file_type) if !file_type.is_dir() && !file_type.is_symlink() => {
                return Kind::Skipped;
            }
            _ => {}
        }
        let name = OsStr::from_bytes(path);
        let mut metadata = fs::symlink_metadata(name);
        if dereference && metadata.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
            metadata = match fs::metadata(name) {
                // A dangling link is skipped, as `find -L -type f` does.
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Kind::Skipped,
                followed => followed,
            };
        }
        match metadata {
            Ok(metadata) if metadata.is_file() => Kind::File(Some(identity(&metadata))),
            Ok(metadata) if metadata.is_dir() => Kind::Directory(identity(&metadata)),
            Ok(_) => Kind::Skipped,
            // Removed since the directory was read: nothing to hash.
            Err(error) if error.kind() == io::ErrorKind::NotFound => Kind::Skipped,
            Err(error) => {
                self.error(path, &plain_message(&error));
                Kind::Skipped
            }
        }
    }

    /// Reports an error about `path` and counts it.
    fn error(&mut self, path: &[u8], message: &str) {
        report(OsStr::from_bytes(path), message);
        self.errors += 1;
    }
}

/// A file's (device, inode).
fn identity(metadata: &Metadata) -> FileId {
    (metadata.dev(), metadata.ino())
}

/// The identity of the file standard output writes to, if it is a regular
/// file.
fn output_file() -> Option<FileId> {
    let output = File::from(io::stdout().as_fd().try_clone_to_owned().ok()?);
    let metadata = output.metadata().ok()?;
    metadata.is_file().then(|| identity(&metadata))
}

/// `directory/name`, without doubling a slash the directory already ends
/// with (as `find dir/` prints `dir/a`).
fn join(directory: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(directory.len() + 1 + name.len());
    path.extend_from_slice(directory);
    if !directory.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn paths_are_joined_as_find_joins_them() {
        assert_eq!(join(b"dir", b"a"), b"dir/a");
        assert_eq!(join(b"dir/", b"a"), b"dir/a");
        assert_eq!(join(b"dir//", b"a"), b"dir//a");
        assert_eq!(join(b".", b"a"), b"./a");
        assert_eq!(join(b"/", b"a"), b"/a");
    }
}
