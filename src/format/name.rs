//! [`Name`]: a file's name as lists hold it, and every way bt2sum writes
//! one.
//!
//! A name is bytes (non-UTF-8 names pass through). Lines print it as it is,
//! or escaped the GNU way when it holds a newline, carriage return or
//! backslash: the line starts with `\`, and in the name `\` is written
//! `\\`, newline `\n`, carriage return `\r`. Verdicts and messages also
//! show the other control bytes as `\xHH`, so that a name cannot act on a
//! terminal.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::PathBuf;

use super::Ending;

/// A file's name as lists print it: on Unix the bytes of the path; on
/// Windows, where names are Unicode, its UTF-8 with every `\` written `/`
/// (as b3sum prints them), so that lists made on Windows verify on Unix and
/// the reverse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name<'a>(Cow<'a, [u8]>);

impl<'a> Name<'a> {
    /// A name as a list spells it (unescaped).
    pub fn listed(bytes: &'a [u8]) -> Self {
        Name(Cow::Borrowed(bytes))
    }

    /// A listed name as names are compared, one file one key: `.` and empty
    /// components left out, so that `./a/b`, `a//b` and `a/./b` are `a/b`
    /// (a leading `/` kept).
    ///
    /// ```
    /// use bt2sum::format::name::Name;
    /// assert_eq!(Name::normalized(b"./a/b"), b"a/b");
    /// assert_eq!(Name::normalized(b"a//./b/"), b"a/b");
    /// assert_eq!(Name::normalized(b"/x/./y"), b"/x/y");
    /// assert_eq!(Name::normalized(b"../a"), b"../a");
    /// ```
    pub fn normalized(name: &[u8]) -> Vec<u8> {
        let parts = name.split(|&b| b == b'/');
        let parts: Vec<_> = parts
            .filter(|part| !part.is_empty() && *part != b".")
            .collect();
        let root: &[u8] = if name.starts_with(b"/") { b"/" } else { b"" };
        [root, &parts.join(&b'/')].concat()
    }

    /// The name lines print for `path`; `None` if it cannot be printed (on
    /// Windows, a path that is not valid Unicode).
    pub fn of_path(path: &'a OsStr) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Some(Name(Cow::Borrowed(path.as_bytes())))
        }
        #[cfg(not(unix))]
        {
            let path = path.to_str()?;
            Some(Name(if path.contains('\\') {
                Cow::Owned(path.replace('\\', "/").into_bytes())
            } else {
                Cow::Borrowed(path.as_bytes())
            }))
        }
    }

    /// [`of_path`](Name::of_path), or for a path that lines cannot print,
    /// the path with the characters it cannot have replaced: for messages,
    /// and for names that are only compared.
    pub fn of_path_lossy(path: &'a OsStr) -> Self {
        Name::of_path(path)
            .unwrap_or_else(|| Name(Cow::Owned(path.to_string_lossy().into_owned().into_bytes())))
    }

    /// The name's bytes, as a line prints it unescaped.
    pub fn printed(&self) -> &[u8] {
        &self.0
    }

    /// The name's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_owned()
    }

    /// The path the name names here; `None` if it cannot name one.
    ///
    /// On Unix, the bytes it is. On Windows, its UTF-8 (`/` separates, as
    /// [`of_path`](Name::of_path) writes it); a name that is not UTF-8, or
    /// that holds a `\` (which no name printed there holds, and which a
    /// list made on Unix means as part of a file name), is refused.
    pub fn path(&self) -> Option<PathBuf> {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Some(PathBuf::from(OsStr::from_bytes(&self.0)))
        }
        #[cfg(windows)]
        {
            let name = std::str::from_utf8(&self.0).ok()?;
            (!name.contains('\\')).then(|| PathBuf::from(name))
        }
    }

    /// Appends the name as verdicts and messages show it (see the module's
    /// notes: escaped if it holds a backslash or a control byte).
    pub fn push_shown(&self, out: &mut Vec<u8>) {
        if self.0.iter().any(|&byte| shown_escaped(byte)) {
            out.push(b'\\');
        }
        push_escaped(out, &self.0, true);
    }

    /// [`push_shown`](Name::push_shown)'s bytes as text (bytes that are not
    /// UTF-8 replaced).
    pub fn shown(&self) -> String {
        let mut out = Vec::new();
        self.push_shown(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// GNU's escapes: a backslash, newline and carriage return are written
/// `\` and a letter.
const ESCAPES: [(u8, u8); 3] = [(b'\\', b'\\'), (b'\n', b'n'), (b'\r', b'r')];

fn letter(byte: u8) -> Option<u8> {
    Some(ESCAPES.iter().find(|(raw, _)| *raw == byte)?.1)
}

/// Whether verdicts and messages escape a byte: a backslash or a control
/// byte (C0 or DEL), which a terminal would act on.
fn shown_escaped(byte: u8) -> bool {
    byte == b'\\' || byte < 0x20 || byte == 0x7f
}

/// Appends `[\]HEAD NAME TAIL` and the ending: a line naming a file, the
/// name escaped the GNU way (and the line started with `\`) where it holds
/// a byte to escape and lines end in a newline. (The head and tail come in
/// parts, not to format a line's pieces into new strings first.)
pub(super) fn push_named(
    out: &mut Vec<u8>,
    head: &[&str],
    name: &[u8],
    tail: &[&str],
    ending: Ending,
) {
    let escaped = ending == Ending::Newline && name.iter().any(|&byte| letter(byte).is_some());
    if escaped {
        out.push(b'\\');
    }
    head.iter()
        .for_each(|part| out.extend_from_slice(part.as_bytes()));
    match escaped {
        true => push_escaped(out, name, false),
        false => out.extend_from_slice(name),
    }
    tail.iter()
        .for_each(|part| out.extend_from_slice(part.as_bytes()));
    ending.push(out);
}

/// Appends `bytes` with GNU's escapes, and with `controls` the other
/// control bytes as `\xHH`.
fn push_escaped(out: &mut Vec<u8>, bytes: &[u8], controls: bool) {
    for &byte in bytes {
        match letter(byte) {
            Some(letter) => out.extend_from_slice(&[b'\\', letter]),
            None if controls && shown_escaped(byte) => {
                out.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
            }
            None => out.push(byte),
        }
    }
}

/// A name as a line writes it, read back: unescaped if the line is escaped;
/// `None` for an escape that is not GNU's.
pub(super) fn read_back(written: &[u8], escaped: bool) -> Option<Vec<u8>> {
    if !escaped {
        return Some(written.to_vec());
    }
    let mut name = Vec::with_capacity(written.len());
    let mut bytes = written.iter();
    while let Some(&byte) = bytes.next() {
        name.push(match byte {
            b'\\' => {
                let letter = bytes.next()?;
                ESCAPES.iter().find(|(_, known)| known == letter)?.0
            }
            byte => byte,
        });
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_in_lines_and_messages() {
        // The name, as a line prints it, as messages show it.
        #[rustfmt::skip]
        let table: [(&[u8], &[u8], &str); 5] = [
            (b"plain", b"plain", "plain"),
            (b"\\\n\r", b"\\\\\\\\n\\r", "\\\\\\\\n\\r"),
            (b"tab\t\x7f", b"tab\t\x7f", "\\tab\\x09\\x7f"),
            (b"\xff", b"\xff", "\u{fffd}"),
            (b"", b"", ""),
        ];
        for (name, printed, shown) in table {
            let mut lines = (Vec::new(), Vec::new());
            push_named(&mut lines.0, &[], name, &[], Ending::Newline);
            push_named(&mut lines.1, &[], name, &[], Ending::Nul);
            assert_eq!(lines, ([printed, b"\n"].concat(), [name, b"\0"].concat()));
            let (escaped, printed) = crate::format::prefixed(printed, b"\\");
            assert_eq!(read_back(printed, escaped).as_deref(), Some(name));
            assert_eq!(Name::listed(name).shown(), shown);
        }
        for bad in ["\\", "a\\t", "\\x41"] {
            assert_eq!(read_back(bad.as_bytes(), true), None, "{bad}");
        }
    }
}
