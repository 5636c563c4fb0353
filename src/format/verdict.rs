//! What check mode prints per listed file: `NAME: OK`, `NAME: FAILED` or
//! `NAME: FAILED open or read`, the name shown the way the writer shows it:
//! escaped, after a leading `\`, when it holds a newline, carriage return or
//! backslash.

use super::{needs_escape, push_name};

/// What check mode found out about one listed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The computed checksum is the listed one.
    Ok,
    /// The computed checksum differs.
    Failed,
    /// The file could not be opened or read (or changed while read).
    Unreadable,
}

impl Verdict {
    /// The words after `NAME: `, as GNU prints them.
    pub const fn text(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Failed => "FAILED",
            Verdict::Unreadable => "FAILED open or read",
        }
    }
}

/// Appends a listed name as check mode shows it: escaped, after a leading
/// `\`, when it [`needs_escape`]; as it is otherwise.
pub fn push_shown_name(out: &mut Vec<u8>, name: &[u8]) {
    let escaped = needs_escape(name);
    if escaped {
        out.push(b'\\');
    }
    push_name(out, name, escaped);
}

/// Appends `NAME: OK`, `NAME: FAILED` or `NAME: FAILED open or read`, newline
/// included.
pub fn push_verdict(out: &mut Vec<u8>, name: &[u8], verdict: Verdict) {
    push_shown_name(out, name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(verdict.text().as_bytes());
    out.push(b'\n');
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
        assert_eq!(
            out,
            b"a b: OK\n\\new\\nline: FAILED\n\\back\\\\slash: FAILED open or read\n\
              \\cr\\r: OK\n\xff: OK\n"
        );
    }
}
