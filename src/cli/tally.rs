//! The counts of a check, per list and over all of them with what an audit
//! found, and GNU's summary of them.

use bt2sum::verify::{Checked, Verdict};

pub use crate::cli::output::Tally;
use crate::cli::output::{Status, counted};

/// For each non-zero count, its words ([`counted`]), after `WARNING: `
/// where it is a warning (not news), to follow `bt2sum: `.
fn said(counts: &[(u64, bool, &str, &str)]) -> Vec<String> {
    let said = |&(count, warning, one, many): &(u64, bool, &str, &str)| {
        let prefix = if warning { "WARNING: " } else { "" };
        (count > 0).then(|| format!("{prefix}{}", counted(count, one, many)))
    };
    counts.iter().filter_map(said).collect()
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        macro_rules! add {
            ($($field:ident)*) => { $(self.$field += other.$field;)* };
        }
        add!(entries improperly_formatted ok failed changed unreadable unverified unread
            outside_slice repaired unrepaired mended_files accepted restored
            unrestored);
    }

    /// A failure if an audit found anything but OK.
    pub fn audit_status(&self) -> Status {
        match self.new + self.moved + self.missing + self.errors {
            0 => Status::Success,
            _ => Status::Failure,
        }
    }

    /// An audit's summary, in GNU's words and style, each to follow
    /// `bt2sum: `; unless `quiet`, then its last line, counting the files of
    /// every class found (OK always), as hashdeep's audit ends.
    pub fn audit_summary(&self, ignore_missing: bool, quiet: bool) -> Vec<String> {
        let missing = if ignore_missing { 0 } else { self.missing };
        let scope = "(under no directory audited, excluded, deeper than --max-depth, or on \
                     another file system): not read";
        #[rustfmt::skip]
        let counts = [
            (self.new, true, "file is new", "files are new"),
            (self.moved, true, "file was moved", "files were moved"),
            (missing, true, "listed file is missing", "listed files are missing"),
            (self.out_of_scope, false, &format!("listed file was out of the audit's scope {scope}"),
                &format!("listed files were out of the audit's scope {scope}")),
        ];
        let mut summary = said(&counts);
        if quiet {
            return summary;
        }
        let classes = [
            (self.ok, "OK"),
            (self.unread, "OK (not read)"),
            (self.unverified, "OK (length only)"),
            (self.failed, "FAILED"),
            (self.changed, "CHANGED"),
            (self.unreadable, "FAILED open or read"),
            (self.new, "NEW"),
            (self.moved, "MOVED"),
            (missing, "MISSING"),
        ];
        let files: u64 = classes.iter().map(|(count, _)| count).sum();
        let classes: Vec<String> = classes
            .iter()
            .filter(|&&(count, class)| count > 0 || class == "OK")
            .map(|(count, class)| format!("{count} {class}"))
            .collect();
        let files = counted(files, "file", "files");
        summary.push(format!("audited {files}: {}", classes.join(", ")));
        summary
    }

    /// Whether the list verified no file where it may have although its
    /// lines were good (with `--ignore-missing`, or where some file was
    /// listed without a digest): it then fails, saying so. (A slice may
    /// well hold none of a list's files: it fails nothing.)
    pub fn verified_none(&self, ignore_missing: bool) -> bool {
        let held_some = self.entries > self.outside_slice || self.outside_slice == 0;
        let verified = self.ok + self.unread + self.mended_files + self.restored;
        (ignore_missing || self.unverified > 0) && verified == 0 && held_some
    }

    /// Counts a file once its last pass is checked.
    pub fn count_checked(&mut self, checked: &Checked) {
        match checked.file_verdict() {
            Some(Verdict::Ok) if checked.lists_no_digest() => self.unverified += 1,
            Some(verdict) => self.count(verdict),
            None => {}
        }
    }

    /// Counts one file, by its worst line.
    pub fn count(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Ok => self.ok += 1,
            Verdict::Failed | Verdict::Missing => self.failed += 1,
            Verdict::Changed => self.changed += 1,
            Verdict::Unreadable => self.unreadable += 1,
            Verdict::Unread => self.unread += 1,
        }
    }

    /// GNU's summary warnings for the non-zero counts, in GNU's order and
    /// wording; then what mending did: the leaves repaired and files
    /// restored (news, not warnings), then what is still damaged or missing.
    pub fn warnings(&self) -> Vec<String> {
        let (warning, news) = (true, false);
        #[rustfmt::skip]
        let counts = [
            (self.improperly_formatted, warning, "line is improperly formatted", "lines are improperly formatted"),
            (self.unreadable, warning, "listed file could not be read", "listed files could not be read"),
            (self.failed, warning, "computed checksum did NOT match", "computed checksums did NOT match"),
            (self.changed, warning, "listed file was changed since it was listed",
                "listed files were changed since they were listed"),
            (self.unverified, warning, "listed file has no digest in the list: only its length was checked",
                "listed files have no digest in the list: only their length was checked"),
            (self.unread, news, "listed file was not read: its stat line says it is unchanged (--quick)",
                "listed files were not read: their stat lines say they are unchanged (--quick)"),
            (self.repaired, news, "damaged leaf was repaired", "damaged leaves were repaired"),
            (self.restored, news, "missing file was restored", "missing files were restored"),
            (self.unrestored, warning, "missing file could not be restored", "missing files could not be restored"),
            (self.unrepaired, warning, "damaged leaf could not be repaired",
                "damaged leaves could not be repaired"),
        ];
        said(&counts)
    }

    /// Whether the list verifies. A file that failed may have been mended
    /// or accepted, an unreadable one restored, a changed one `updated`
    /// (the update lists it as it is now); a list whose files were all
    /// skipped as missing verifies nothing, as in GNU. (Missing files an
    /// audit skips are its own findings, or another slice's.)
    pub fn passed(&self, strict: bool, updated: bool, ignore_missing: bool) -> bool {
        self.entries > 0
            && (!self.verified_none(ignore_missing) || updated && self.changed > 0)
            && self.failed == self.mended_files + self.accepted
            && (updated || self.changed == 0)
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
        // A list whose files are all other slices' passes.
        let elsewhere = Tally {
            entries: 3,
            outside_slice: 3,
            ..Tally::default()
        };
        assert!(elsewhere.passed(false, false, false));
        // (That a list whose files were all skipped as missing fails, and
        // the other counts' words: check::ignore_missing and
        // check::leaf_size_comes_from_dash_t.)
    }
}
