//! What check mode prints per checked line: `NAME: OK`, `NAME: FAILED` or
//! `NAME: FAILED open or read`; `NAME: leaf I: OK` for a leaf line
//! (`NAME: leaf I: FAILED missing` for a leaf the file no longer has) and
//! `NAME: leaf count: OK` for a count line. A name holding a backslash or a
//! control byte is shown escaped, after a leading `\` (see
//! [`Name::push_shown`]).

use super::name::Name;

/// What check mode found out about one listed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The computed checksum is the listed one.
    Ok,
    /// The computed checksum differs.
    Failed,
    /// The file could not be opened or read (or changed while read).
    Unreadable,
    /// A listed leaf is no longer in the file (it got shorter).
    Missing,
    /// The computed checksum differs, and so do the file's size or
    /// modification time from its stat line's: an edit, not damage.
    Changed,
}

impl Verdict {
    /// The words after `NAME: `, as GNU prints them.
    pub const fn text(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Failed => "FAILED",
            Verdict::Unreadable => "FAILED open or read",
            Verdict::Missing => "FAILED missing",
            Verdict::Changed => "CHANGED",
        }
    }
}

/// What an audit says of a file that no checksum line verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class<'a> {
    /// A file under an audited directory that no list names.
    New,
    /// A new file that is the missing entry of this name, renamed.
    MovedFrom(&'a [u8]),
    /// A listed file that no longer exists.
    Missing,
}

/// Appends `NAME: NEW`, `NAME: MOVED from OLD` or `NAME: MISSING`, newline
/// included (both names shown as verdicts show them).
pub fn push_class(out: &mut Vec<u8>, name: &[u8], class: Class<'_>) {
    Name::listed(name).push_shown(out);
    match class {
        Class::New => out.extend_from_slice(b": NEW\n"),
        Class::MovedFrom(from) => {
            out.extend_from_slice(b": MOVED from ");
            Name::listed(from).push_shown(out);
            out.push(b'\n');
        }
        Class::Missing => out.extend_from_slice(b": MISSING\n"),
    }
}

/// Appends `NAME: OK`, `NAME: FAILED` or `NAME: FAILED open or read`, newline
/// included.
pub fn push_verdict(out: &mut Vec<u8>, name: &[u8], verdict: Verdict) {
    Name::listed(name).push_shown(out);
    out.extend_from_slice(b": ");
    out.extend_from_slice(verdict.text().as_bytes());
    out.push(b'\n');
}

/// Appends the verdict on leaf `index` of a listed file: `NAME: leaf I: OK`.
pub fn push_leaf_verdict(out: &mut Vec<u8>, name: &[u8], index: u64, verdict: Verdict) {
    Name::listed(name).push_shown(out);
    out.extend_from_slice(format!(": leaf {index}: {}\n", verdict.text()).as_bytes());
}

/// Appends what mending leaf `index` of a listed file from a good copy did
/// (`--repair-from`): `NAME: leaf I: REPAIRED`, or, with the reason it was
/// not, `NAME: leaf I: FAILED (WHY)`.
pub fn push_repair(out: &mut Vec<u8>, name: &[u8], index: u64, failed_because: Option<&str>) {
    Name::listed(name).push_shown(out);
    let line = match failed_because {
        None => format!(": leaf {index}: REPAIRED\n"),
        Some(why) => format!(": leaf {index}: FAILED ({why})\n"),
    };
    out.extend_from_slice(line.as_bytes());
}

/// Appends the verdict on a count line (`leaves=C total=T`), which checks
/// the listed file's length: `NAME: leaf count: OK`.
pub fn push_count_verdict(out: &mut Vec<u8>, name: &[u8], verdict: Verdict) {
    Name::listed(name).push_shown(out);
    out.extend_from_slice(format!(": leaf count: {}\n", verdict.text()).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines() {
        let mut out = Vec::new();
        push_verdict(&mut out, b"a b", Verdict::Ok);
        push_verdict(&mut out, b"new\nline", Verdict::Failed);
        push_verdict(&mut out, b"back\\slash", Verdict::Unreadable);
        push_verdict(&mut out, b"cr\r", Verdict::Ok);
        push_verdict(&mut out, b"\xff", Verdict::Ok);
        push_verdict(&mut out, b"evil.iso: OK\x1b[8m", Verdict::Failed);
        push_leaf_verdict(&mut out, b"tab\tdel\x7f", 7, Verdict::Ok);
        push_repair(&mut out, b"big", 3, None);
        push_repair(
            &mut out,
            b"big\n",
            4,
            Some("the copy's leaf does not match either"),
        );
        push_count_verdict(&mut out, b"f", Verdict::Failed);
        push_leaf_verdict(&mut out, b"f", 57, Verdict::Missing);
        assert_eq!(
            out,
            b"a b: OK\n\\new\\nline: FAILED\n\\back\\\\slash: FAILED open or read\n\
              \\cr\\r: OK\n\xff: OK\n\\evil.iso: OK\\x1b[8m: FAILED\n\
              \\tab\\x09del\\x7f: leaf 7: OK\nbig: leaf 3: REPAIRED\n\\big\\n: leaf 4: FAILED (the \
              copy's leaf does not match either)\nf: leaf count: FAILED\nf: leaf 57: FAILED missing\n"
        );
    }
}
