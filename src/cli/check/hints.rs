//! The hints at the end of a check: what most likely made lines fail or
//! go unread, said only where the evidence points to it. A single failing
//! line is damage until shown otherwise, so it gets no hint; every
//! checksum line of a list of several failing does, and so do lines whose
//! shape shows another tool.

use bt2sum::format::list::{Improper, OtherTool};
use bt2sum::format::name::Name;
use bt2sum::verify::{BadLine, Checked};

use crate::cli::args::shown_leaf_size;
use crate::cli::output::{counted, warn};

/// What a run found that a hint may explain.
#[derive(Default)]
pub struct Hints {
    /// Improperly formatted lines of other tools, by tool.
    other_tools: Vec<(OtherTool, u64)>,
    /// Failing GNU-style lines of another algorithm's digest size, by size.
    failed_like: Vec<(OtherTool, u64)>,
    /// Standard input's own lines in a list read from standard input.
    stdin_in_stdin: u64,
    /// Checksum lines checked with `-t`'s leaf size alone in the list being
    /// checked: how many matched, and how many failed (a file listed again
    /// right after itself counted once: it is one file).
    by_option: (u64, u64),
    /// The name of the last such line that failed.
    last_failed: Vec<u8>,
    /// Whether a list of several such lines failed in every one.
    every_line_failed: bool,
    /// In the list being checked: whether a file was there, and the first
    /// missing one's name.
    some_present: bool,
    first_missing: Option<Vec<u8>>,
    /// The directories of lists whose every file is missing and whose first
    /// file is there, beside the list.
    beside_list: Vec<std::path::PathBuf>,
}

fn add(counts: &mut Vec<(OtherTool, u64)>, tool: &OtherTool) {
    match counts.iter_mut().find(|(known, _)| known == tool) {
        Some((_, count)) => *count += 1,
        None => counts.push((tool.clone(), 1)),
    }
}

impl Hints {
    pub fn bad_line(&mut self, why: &BadLine) {
        match why {
            BadLine::Grammar(Improper::OtherTool(tool)) => add(&mut self.other_tools, tool),
            BadLine::StdinInStdin => self.stdin_in_stdin += 1,
            BadLine::Grammar(_) | BadLine::LoneStat => {}
        }
    }

    pub fn checked(&mut self, checked: &Checked) {
        if !checked.pass.continued && !checked.is_missing() {
            self.some_present = true;
        } else if !checked.pass.continued && self.first_missing.is_none() {
            self.first_missing = Some(checked.pass.name.clone());
        }
        let Some((checksum, matched)) = checked.checksum_line() else {
            return;
        };
        // (A GNU-style line of 64 hex digits is BLAKE3's or SHA-256's size.)
        match checksum.sized_like() {
            Some(tool) if !matched => add(&mut self.failed_like, &tool),
            // Checked with `-t`'s leaf size only: a list made with another
            // leaf size fails in every such line.
            None if checked.pass.total.is_some() || checked.pass.stat.is_some() => {}
            None if matched => self.by_option.0 += 1,
            None if checked.pass.name != self.last_failed => {
                self.by_option.1 += 1;
                self.last_failed.clone_from(&checked.pass.name);
            }
            Some(_) | None => {}
        }
    }

    /// Notes the end of `list`; `look`: whether to look beside it for
    /// files that are all missing here.
    pub fn list_ended(&mut self, list: &std::ffi::OsStr, look: bool) {
        let look_beside = !std::mem::take(&mut self.some_present) && look && list != "-";
        let first = std::mem::take(&mut self.first_missing).filter(|_| look_beside);
        let directory = std::path::Path::new(list).parent();
        if let Some(directory) = directory.filter(|directory| !directory.as_os_str().is_empty())
            && let Some(name) = first.and_then(|first| Name::listed(&first).path())
            && name.is_relative()
            && directory.join(name).symlink_metadata().is_ok()
        {
            self.beside_list.push(directory.to_path_buf());
        }
        self.last_failed.clear();
        let (matched, failed) = std::mem::take(&mut self.by_option);
        self.every_line_failed |= matched == 0 && failed >= 2;
    }

    /// Writes the hints on standard error; `leaf_size` is `-t`'s.
    pub fn show(&self, leaf_size: u64) {
        for directory in &self.beside_list {
            let directory = Name::of_path_lossy(directory.as_os_str()).shown();
            warn(&format!(
                "hint: no listed file is here, and they are in {directory}, beside the list: \
                 a list's names are read from the directory bt2sum runs in, not from the \
                 list's; run bt2sum in {directory}, or give -C {directory} (and the list's \
                 path from there)"
            ));
        }
        for (tool, count) in &self.other_tools {
            warn(&tool_hint(tool, *count));
        }
        if self.stdin_in_stdin > 0 {
            warn(&format!(
                "hint: {} standard input (named `-`, or nameless as `bt2sum < FILE` prints \
                 it): a list read from standard input cannot check standard input too; give \
                 the list as a file (bt2sum -c LIST < FILE)",
                counted(self.stdin_in_stdin, "line checks", "lines check")
            ));
        }
        for (tool, count) in &self.failed_like {
            warn(&tool_hint(tool, *count));
        }
        if self.every_line_failed {
            warn(&format!(
                "hint: every checksum line failed: checksum lines do not record their leaf \
                 size, these were checked with -t {}, and a list made with another size needs \
                 it given with -t; a list made by b2sum (which hashes a file as one sequential \
                 BLAKE2 stream) or by another algorithm never matches a tree hash",
                shown_leaf_size(leaf_size)
            ));
        }
    }
}

/// The hint at `count` lines of another tool: improperly formatted ones
/// of its shape, or failing ones the size of its digests.
fn tool_hint(tool: &OtherTool, count: u64) -> String {
    match tool {
        OtherTool::GnuB2sum => format!(
            "hint: {} GNU b2sum's tag (`BLAKE2b (NAME) = `, or `BLAKE2b-N` with N in bits, \
             where bt2sum's counts bytes): b2sum hashes a file as one sequential BLAKE2b \
             stream, which never matches a tree hash",
            counted(count, "line has", "lines have")
        ),
        OtherTool::Tagged(tag) => format!(
            "hint: {} tagged {tag}, as {} writes them: another algorithm's digests never \
             match a tree hash",
            counted(count, "line is", "lines are"),
            tool.writer()
        ),
        OtherTool::Sized { algorithm, bytes } => {
            let blake2s = match bytes {
                32 => " (one made by bt2sum -a blake2s --untagged is checked with -a blake2s)",
                _ => "",
            };
            // ("an MD5": said "em-dee".)
            let article = ["a", "an"][usize::from(algorithm.starts_with("MD"))];
            format!(
                "hint: {} {} hex digits, the size of {article} {algorithm} digest, and \
                 failed: a list made by {} never matches a tree hash{blake2s}",
                counted(count, "line holds", "lines hold"),
                2 * bytes,
                tool.writer()
            )
        }
    }
}
