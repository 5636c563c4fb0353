//! `--repair-from`: after a file's verdicts, its failing leaves mended from
//! a good copy by the library's [`Mender`], each one's fate printed
//! (`NAME: leaf I: REPAIRED`, or `FAILED` and why) and counted.

use std::io;

use bt2sum::format::verdict::Verdict;
use bt2sum::repair::{Length, Mend, Mender};
use bt2sum::system;
use bt2sum::verify::Checked;

use super::super::config::{Checking, Verbosity};
use super::super::json;
use super::super::output::report_listed;
use super::Printer;
use super::tally::Tally;

/// Mends the files a check finds damaged.
pub struct Repairs {
    mender: Mender,
    /// Whether every failing leaf of the file being checked (over its
    /// passes so far) verifies now.
    file_mended: bool,
}

impl Repairs {
    /// The repairs `config` asks for, if any.
    pub fn new(config: &Checking) -> Option<Repairs> {
        let (copy, truncate) = config.repair.as_ref()?;
        Some(Repairs {
            mender: Mender::new(copy.clone(), *truncate),
            file_mended: true,
        })
    }

    /// Mends what one pass over a file found failing, printing and
    /// counting in `tally` what became of each leaf, and on the file's last
    /// pass whether it verifies now. `Err` only when writing to standard
    /// output fails.
    pub fn after(
        &mut self,
        checked: &Checked,
        printer: &mut Printer<'_>,
        tally: &mut Tally,
    ) -> io::Result<()> {
        if checked.is_first_pass() {
            self.file_mended = true;
        }
        let failed = checked
            .lines()
            .any(|(_, verdict)| matches!(verdict, Verdict::Failed | Verdict::Missing));
        if failed && checked.outcome().is_ok() {
            self.file_mended &= self.mend(checked, printer, tally)?;
        }
        let damaged = matches!(
            checked.file_verdict(),
            Some(Verdict::Failed | Verdict::Missing)
        );
        if damaged && self.file_mended {
            tally.mended_files += 1;
        }
        Ok(())
    }

    /// Mends one pass's failing leaves; whether the file verifies now, as
    /// far as this pass's lines go.
    fn mend(
        &mut self,
        checked: &Checked,
        printer: &mut Printer<'_>,
        tally: &mut Tally,
    ) -> io::Result<bool> {
        let name = checked.name();
        let cannot = |printer: &mut Printer<'_>, why: &str| {
            printer.error(name, &format!("cannot be repaired: {why}"))
        };
        if name == b"-" {
            cannot(printer, "it is standard input")?;
            return Ok(false);
        }
        let Some(listed_length) = checked.listed_length() else {
            cannot(
                printer,
                "it is listed without leaf lines (list its leaves with --leaves, \
                 and a damaged leaf can be mended alone)",
            )?;
            return Ok(false);
        };
        if checked.changed() {
            cannot(
                printer,
                "its size or modification time differ from its stat line's: edited, not damaged",
            )?;
            return Ok(false);
        }
        let failing = checked.failed_leaves();
        if failing.is_empty() {
            cannot(
                printer,
                "its length differs from its listing's, and no leaf line says how",
            )?;
            return Ok(false);
        }
        // (A name no path here can have was refused as improperly
        // formatted.)
        let path = system::listed_path(name).unwrap_or_default();
        let tree = *checked.tree();
        let mut lines = Ok(());
        let mut all_good = true;
        let mended = self
            .mender
            .mend(&path, &tree, listed_length, &failing, |index, mend| {
                all_good &= mend.is_good();
                match mend {
                    Mend::Intact => return,
                    Mend::Repaired => tally.repaired_leaves += 1,
                    _ => tally.unrepaired_leaves += 1,
                }
                if lines.is_ok() {
                    let bytes = tree.leaf_bytes(index, listed_length);
                    lines = printer.mend(name, index, bytes, mend);
                }
            });
        lines?;
        let length = match mended {
            Ok(length) => length,
            Err(unmendable) => {
                tally.unrepaired_leaves += failing.len() as u64;
                cannot(printer, &unmendable.to_string())?;
                return Ok(false);
            }
        };
        let length_ok = match length {
            Length::AsListed => true,
            Length::Truncated { was } => {
                let message = format!(
                    "was {was} bytes long: cut to its listed length, {listed_length} bytes"
                );
                printer.note(name, &message)?;
                true
            }
            Length::Longer { is } => {
                let message = format!(
                    "is {is} bytes long, longer than its listed {listed_length}: left as it is \
                     (--repair-truncate cuts it)"
                );
                printer.note(name, &message)?;
                false
            }
            Length::NotCut { is, error } => {
                let message = format!(
                    "is {is} bytes long, longer than its listed {listed_length}, and cannot be \
                     cut: {}",
                    bt2sum::plain_message(&error)
                );
                printer.note(name, &message)?;
                false
            }
            Length::Shorter { is } => {
                let message =
                    format!("is still {is} bytes long, shorter than its listed {listed_length}");
                printer.note(name, &message)?;
                false
            }
        };
        Ok(all_good && length_ok)
    }
}

impl Printer<'_> {
    /// Prints what became of a failing leaf (bytes `bytes` of the listed
    /// file): `NAME: leaf I: REPAIRED`, or `FAILED` and why; unless
    /// `--status` hides it.
    fn mend(
        &mut self,
        name: &[u8],
        index: u64,
        bytes: std::ops::Range<u64>,
        mend: &Mend,
    ) -> io::Result<()> {
        if self.config.verbosity == Verbosity::Status {
            return Ok(());
        }
        let why = match mend {
            Mend::Repaired | Mend::Intact => None,
            Mend::CopyDiffers => Some("the copy's leaf does not match either".to_string()),
            Mend::CopyShort => Some("the copy ends before the leaf does".to_string()),
            Mend::CopyUnreadable(error) => Some(format!(
                "the copy could not be read: {}",
                bt2sum::plain_message(error)
            )),
            Mend::AfterAGap => Some("a leaf before it, past the file's end, was not mended".into()),
            Mend::NoMemory => Some("no memory to hold the leaf".to_string()),
            Mend::WriteFailed(error) => Some(format!(
                "it could not be written: {}",
                bt2sum::plain_message(error)
            )),
        };
        if self.config.json {
            let mut fields = serde_json::json!({
                "name": json::name(name),
                "index": index,
                "offset": bytes.start,
                "length": bytes.end - bytes.start,
                "verdict": if why.is_none() { "REPAIRED" } else { "FAILED" },
            });
            if let Some(why) = &why {
                fields["reason"] = why.as_str().into();
            }
            return self.object(&json::object("repair", fields));
        }
        self.line.clear();
        bt2sum::format::verdict::push_repair(&mut self.line, name, index, why.as_deref());
        self.out.write_all(&self.line)
    }

    /// Says what was done to a file's length (standard error).
    fn note(&mut self, name: &[u8], message: &str) -> io::Result<()> {
        self.out.flush()?;
        report_listed(name, message);
        Ok(())
    }
}
