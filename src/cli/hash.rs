//! The hashing driver: one checksum line per input, in argument order, errors
//! reported per input and counted rather than fatal.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{EXIT_FAILURE, EXIT_OK, Plan, output_failed, report};
use crate::check::{Style, push_line};
use crate::input::{hash_path, hash_stdin};

/// Hashes every input of the plan, writing lines to `out`; returns the exit
/// status.
pub fn run(plan: &Plan, mut out: impl Write) -> u8 {
    let style = if plan.args.untagged {
        Style::Untagged
    } else {
        Style::Tagged
    };
    let stdin_only = [OsStr::new("-").to_os_string()];
    let (names, named) = if plan.args.files.is_empty() {
        (&stdin_only[..], false)
    } else {
        (&plan.args.files[..], true)
    };
    let mut status = EXIT_OK;
    let mut line = Vec::new();
    for name in names {
        let result = if name == "-" {
            hash_stdin(&plan.tree)
        } else {
            hash_path(&plan.tree, Path::new(name))
        };
        match result {
            Ok(digest) => {
                line.clear();
                let shown = named.then_some(name.as_bytes());
                push_line(&mut line, style, plan.tree.algorithm(), &digest, shown);
                if let Err(error) = out.write_all(&line) {
                    return status.max(output_failed(&error));
                }
            }
            Err(error) => {
                // Keep stdout and stderr in order when both go to one place.
                if let Err(error) = out.flush() {
                    return status.max(output_failed(&error));
                }
                report(name, &error.to_string());
                status = EXIT_FAILURE;
            }
        }
    }
    match out.flush() {
        Ok(()) => status,
        Err(error) => status.max(output_failed(&error)),
    }
}
