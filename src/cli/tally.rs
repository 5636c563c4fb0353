//! The counts of a check, per list and over all of them with what an audit
//! found, and GNU's summary of them. ([`Tally`] itself is a record of
//! `output`, the JSON summary's counts.)

use bt2sum::verify::Checked;
use bt2sum::verify::Verdict;

pub use crate::cli::output::Tally;
use crate::cli::output::{Coverage, Status, Summary};

/// `WARNING: 1 ONE` or `WARNING: COUNT MANY`, unless the count is 0.
fn counted(lines: &mut Vec<String>, count: u64, one: &str, many: &str) {
    said(lines, "WARNING: ", count, one, many);
}

/// `1 ONE` or `COUNT MANY` after `prefix`, unless the count is 0.
fn said(lines: &mut Vec<String>, prefix: &str, count: u64, one: &str, many: &str) {
    match count {
        0 => {}
        1 => lines.push(format!("{prefix}1 {one}")),
        _ => lines.push(format!("{prefix}{count} {many}")),
    }
}

impl Tally {
    /// Adds another list's counts.
    pub fn add(&mut self, other: &Tally) {
        self.entries += other.entries;
        self.improperly_formatted += other.improperly_formatted;
        self.matched += other.matched;
        self.mismatched += other.mismatched;
        self.changed += other.changed;
        self.unreadable += other.unreadable;
        self.unverified += other.unverified;
        self.unread += other.unread;
        self.outside_slice += other.outside_slice;
        self.repaired_leaves += other.repaired_leaves;
        self.unrepaired_leaves += other.unrepaired_leaves;
        self.mended_files += other.mended_files;
        self.accepted += other.accepted;
        self.restored += other.restored;
        self.unrestored += other.unrestored;
    }

    /// The status of an audit: a failure if anything but OK was found.
    pub fn audit_status(&self) -> Status {
        match self.new + self.moved + self.missing + self.errors {
            0 => Status::Success,
            _ => Status::Failure,
        }
    }

    /// An audit's summary, in GNU's words and style, each to follow
    /// `bt2sum: `.
    pub fn audit_warnings(&self, ignore_missing: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        counted(&mut warnings, self.new, "file is new", "files are new");
        counted(
            &mut warnings,
            self.moved,
            "file was moved",
            "files were moved",
        );
        if !ignore_missing {
            let (one, many) = ("listed file is missing", "listed files are missing");
            counted(&mut warnings, self.missing, one, many);
        }
        let why = "(under no directory audited, excluded, deeper than --max-depth, or on \
                   another file system): not read";
        said(
            &mut warnings,
            "",
            self.out_of_scope,
            &format!("listed file was out of the audit's scope {why}"),
            &format!("listed files were out of the audit's scope {why}"),
        );
        warnings
    }

    /// An audit's last line, counting the files of every class found (OK
    /// always), as hashdeep's audit ends; to follow `bt2sum: `.
    pub fn audit_line(&self, ignore_missing: bool) -> String {
        let missing = if ignore_missing { 0 } else { self.missing };
        let classes = [
            (self.matched, "OK"),
            (self.unread, "OK (not read)"),
            (self.unverified, "OK (length only)"),
            (self.mismatched, "FAILED"),
            (self.changed, "CHANGED"),
            (self.unreadable, "FAILED open or read"),
            (self.new, "NEW"),
            (self.moved, "MOVED"),
            (missing, "MISSING"),
        ];
        let files: u64 = classes.iter().map(|(count, _)| count).sum();
        let counted: Vec<String> = classes
            .iter()
            .filter(|&&(count, class)| count > 0 || class == "OK")
            .map(|(count, class)| format!("{count} {class}"))
            .collect();
        let files = match files {
            1 => "1 file".to_string(),
            _ => format!("{files} files"),
        };
        format!("audited {files}: {}", counted.join(", "))
    }

    /// The run's summary record (`--json`).
    pub fn summary(&self, lists: usize, status: Status, ledger: Option<Coverage>) -> Summary<'_> {
        Summary::Check {
            lists,
            counts: self,
            status: status as u8,
            ledger,
        }
    }

    /// Whether no file was verified, although some were for the list to
    /// verify: with `--ignore-missing`, all were missing. (A list checked
    /// in slices may well have none of its files in one: that slice
    /// verifies nothing of it, and fails nothing.)
    pub fn verified_none(&self) -> bool {
        let held_some = self.entries > self.outside_slice || self.outside_slice == 0;
        self.matched + self.unread == 0 && self.mended_files + self.restored == 0 && held_some
    }

    /// Whether the list may have verified no file although its lines were
    /// good: with `--ignore-missing`, or where some file was listed without
    /// a digest. It then fails, saying so.
    pub fn may_verify_none(&self, ignore_missing: bool) -> bool {
        ignore_missing || self.unverified > 0
    }

    /// Counts a pass's lines, and its file once its last pass is checked;
    /// `skipped`: the file is missing and `--ignore-missing` was given.
    pub fn count_checked(&mut self, checked: &Checked, skipped: bool) {
        self.entries += checked.lines().count() as u64;
        match (checked.file_verdict(), skipped) {
            (Some(Verdict::Ok), false) if checked.lists_no_digest() => self.unverified += 1,
            (Some(verdict), false) => self.count(verdict),
            _ => {}
        }
    }

    /// Counts one file, by its worst line.
    pub fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Ok => self.matched += 1,
            Verdict::Failed | Verdict::Missing => self.mismatched += 1,
            Verdict::Changed => self.changed += 1,
            Verdict::Unreadable => self.unreadable += 1,
            Verdict::Unread => self.unread += 1,
        }
    }

    /// GNU's summary warnings for the non-zero counts, in GNU's order and
    /// wording, each to follow `bt2sum: `.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut warn = |count: u64, one: &str, many: &str| counted(&mut warnings, count, one, many);
        warn(
            self.improperly_formatted,
            "line is improperly formatted",
            "lines are improperly formatted",
        );
        warn(
            self.unreadable,
            "listed file could not be read",
            "listed files could not be read",
        );
        warn(
            self.mismatched,
            "computed checksum did NOT match",
            "computed checksums did NOT match",
        );
        warn(
            self.changed,
            "listed file was changed since it was listed",
            "listed files were changed since they were listed",
        );
        warn(
            self.unverified,
            "listed file has no digest in the list: only its length was checked",
            "listed files have no digest in the list: only their length was checked",
        );
        said(
            &mut warnings,
            "",
            self.unread,
            "listed file was not read: its stat line says it is unchanged (--quick)",
            "listed files were not read: their stat lines say they are unchanged (--quick)",
        );
        // What mending did: the leaves repaired and files restored (news,
        // not warnings), then what is still damaged or missing.
        let (one, many) = ("damaged leaf was repaired", "damaged leaves were repaired");
        said(&mut warnings, "", self.repaired_leaves, one, many);
        let (one, many) = ("missing file was restored", "missing files were restored");
        said(&mut warnings, "", self.restored, one, many);
        let (one, many) = (
            "missing file could not be restored",
            "missing files could not be restored",
        );
        counted(&mut warnings, self.unrestored, one, many);
        let (one, many) = (
            "damaged leaf could not be repaired",
            "damaged leaves could not be repaired",
        );
        counted(&mut warnings, self.unrepaired_leaves, one, many);
        warnings
    }

    /// Whether the list verifies: it has a properly formatted line, none
    /// of its files failed (but those mended or accepted) or was unreadable
    /// (but those restored), none
    /// changed unless `updated` (the update lists it as it is now), with
    /// `strict` no line was improperly formatted, and with
    /// `ignore_missing` some file was verified (or, being `updated`,
    /// changed): a list whose files were all skipped as missing verifies
    /// nothing, as in GNU. (Missing files an audit skips are its own
    /// findings, or another slice's.)
    pub fn passed(&self, strict: bool, updated: bool, ignore_missing: bool) -> bool {
        let changed_ok = updated || self.changed == 0;
        let verified_nothing = self.may_verify_none(ignore_missing) && self.verified_none();
        self.entries > 0
            && (!verified_nothing || updated && self.changed > 0)
            && self.mismatched == self.mended_files + self.accepted
            && changed_ok
            && self.unreadable == self.restored
            && !(strict && self.improperly_formatted > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_warnings_and_verdicts() {
        let mut tally = Tally::default();
        assert!(tally.warnings().is_empty());
        assert!(!tally.passed(false, false, false));
        tally.entries = 1;
        tally.count(Verdict::Ok);
        assert!(tally.passed(true, false, false));
        tally.improperly_formatted = 1;
        assert!(tally.passed(false, false, false));
        assert!(!tally.passed(true, false, false));
        tally.count(Verdict::Changed);
        assert!(!tally.passed(false, false, false));
        assert!(tally.passed(false, true, false));
        assert_eq!(
            tally.warnings(),
            [
                "WARNING: 1 line is improperly formatted",
                "WARNING: 1 listed file was changed since it was listed",
            ]
        );
        tally.improperly_formatted = 3;
        tally.count(Verdict::Failed);
        tally.count(Verdict::Unreadable);
        tally.count(Verdict::Unreadable);
        assert!(!tally.passed(false, true, false));
        assert_eq!(
            tally.warnings(),
            [
                "WARNING: 3 lines are improperly formatted",
                "WARNING: 2 listed files could not be read",
                "WARNING: 1 computed checksum did NOT match",
                "WARNING: 1 listed file was changed since it was listed",
            ]
        );
        let one_each = Tally {
            entries: 2,
            improperly_formatted: 0,
            matched: 0,
            mismatched: 2,
            changed: 0,
            unreadable: 1,
            ..Tally::default()
        };
        // A list whose files are all other slices' passes; one whose files
        // were all skipped as missing does not.
        let elsewhere = Tally {
            entries: 3,
            outside_slice: 3,
            ..Tally::default()
        };
        assert!(elsewhere.passed(false, false, false));
        let skipped = Tally {
            entries: 3,
            ..Tally::default()
        };
        assert!(!skipped.passed(false, false, true));
        assert_eq!(
            one_each.warnings(),
            [
                "WARNING: 1 listed file could not be read",
                "WARNING: 2 computed checksums did NOT match",
            ]
        );
    }
}
