//! [`Name`]: a file's name as lists hold it, and every way bt2sum writes
//! one.
//!
//! A name is bytes (non-UTF-8 names pass through). Lines print it as it is,
//! or escaped the GNU way when it holds a newline, carriage return or
//! backslash: the line starts with `\`, and in the name `\` is written
//! `\\`, newline `\n`, carriage return `\r` ([`Name::push_printed`],
//! [`unescape`]). Verdicts and messages show the other control bytes
//! escaped too, as `\xHH` ([`Name::push_shown`]), so that a name cannot act
//! on a terminal.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::PathBuf;

use super::Ending;

/// A file's name as lists print it: on Unix the bytes of the path; on
/// Windows, where names are Unicode, its UTF-8 with every `\` written `/`
/// (as b3sum prints them), so that lists made on Windows verify on Unix and
/// the reverse.
///
/// ```
/// use bt2sum::format::Ending;
/// use bt2sum::format::name::Name;
///
/// let name = Name::listed(b"new\nline");
/// assert!(name.escaped_in(Ending::Newline));
/// let mut line = Vec::new();
/// name.push_printed(&mut line, true);
/// assert_eq!(line, b"new\\nline");
/// assert_eq!(name.shown(), "\\new\\nline");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name<'a>(Cow<'a, [u8]>);

impl<'a> Name<'a> {
    /// A name as a list spells it (unescaped).
    pub fn listed(bytes: &'a [u8]) -> Self {
        Name(Cow::Borrowed(bytes))
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

    /// Whether lines ending in `ending` write the name escaped, and start
    /// with `\`: a name holding a backslash, newline or carriage return, in
    /// lines that end in a newline.
    pub fn escaped_in(&self, ending: Ending) -> bool {
        ending == Ending::Newline && Escapes::Listed.needed_by(&self.0)
    }

    /// Appends the name as a line prints it, escaped the GNU way if
    /// `escaped` ([`escaped_in`](Name::escaped_in)).
    pub fn push_printed(&self, out: &mut Vec<u8>, escaped: bool) {
        if escaped {
            Escapes::Listed.push(out, &self.0);
        } else {
            out.extend_from_slice(&self.0);
        }
    }

    /// Appends the name as verdicts and messages show it: when it holds a
    /// backslash or a control byte, a leading `\` and the name escaped
    /// ([`push_echoed`]), as GNU escapes the names of its verdicts; as it is
    /// otherwise.
    pub fn push_shown(&self, out: &mut Vec<u8>) {
        if Escapes::Shown.needed_by(&self.0) {
            out.push(b'\\');
        }
        push_echoed(out, &self.0);
    }

    /// [`push_shown`](Name::push_shown)'s bytes as text (bytes that are not
    /// UTF-8 replaced).
    pub fn shown(&self) -> String {
        let mut out = Vec::new();
        self.push_shown(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Undoes [`Name::push_printed`]'s escape; `None` for any escape but `\\`,
/// `\n`, `\r` (or a lone `\` at the end).
pub fn unescape(written: &[u8]) -> Option<Vec<u8>> {
    let mut name = Vec::with_capacity(written.len());
    let mut bytes = written.iter();
    while let Some(&byte) = bytes.next() {
        if byte != b'\\' {
            name.push(byte);
            continue;
        }
        name.push(match bytes.next()? {
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            _ => return None,
        });
    }
    Some(name)
}

/// A name as a line writes it, read back: unescaped if the line is escaped;
/// `None` if its escape is bad or the name is empty.
pub fn read_back(written: &[u8], escaped: bool) -> Option<Vec<u8>> {
    let name = if escaped {
        unescape(written)?
    } else {
        written.to_vec()
    };
    (!name.is_empty()).then_some(name)
}

/// Appends bytes of a list as a message echoes them: if they hold a
/// backslash or a control byte, a backslash is written `\\`, newline `\n`,
/// carriage return `\r`, and any other control byte `\xHH` (two lowercase
/// hex digits); otherwise as they are.
pub fn push_echoed(out: &mut Vec<u8>, bytes: &[u8]) {
    if Escapes::Shown.needed_by(bytes) {
        Escapes::Shown.push(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
}

/// [`push_echoed`]'s bytes as text: control bytes escaped, bytes that are
/// not UTF-8 replaced.
pub fn echoed(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    push_echoed(&mut out, bytes);
    String::from_utf8_lossy(&out).into_owned()
}

/// The bytes a name's escape covers. Both sets write a backslash `\\`,
/// newline `\n` and carriage return `\r`; the shown set also writes every
/// other control byte as `\xHH`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    /// GNU's, in the lines bt2sum writes and reads back: backslash, newline
    /// and carriage return.
    Listed,
    /// In verdicts and messages: a backslash and every control byte (C0 and
    /// DEL), which a terminal would act on.
    Shown,
}

impl Escapes {
    fn covers(self, byte: u8) -> bool {
        match self {
            Escapes::Listed => matches!(byte, b'\\' | b'\n' | b'\r'),
            Escapes::Shown => byte == b'\\' || byte < 0x20 || byte == 0x7f,
        }
    }

    fn needed_by(self, name: &[u8]) -> bool {
        name.iter().any(|&byte| self.covers(byte))
    }

    fn push(self, out: &mut Vec<u8>, name: &[u8]) {
        for &byte in name {
            match byte {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                byte if self.covers(byte) => {
                    out.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
                }
                _ => out.push(byte),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_and_unescape() {
        let table: [(&[u8], &[u8]); 5] = [
            (b"plain", b"plain"),
            (b"a\\b", b"a\\\\b"),
            (b"new\nline", b"new\\nline"),
            (b"cr\r", b"cr\\r"),
            (b"\\\n\r\\", b"\\\\\\n\\r\\\\"),
        ];
        for (name, written) in table {
            let mut out = Vec::new();
            let escaped = Name::listed(name).escaped_in(Ending::Newline);
            Name::listed(name).push_printed(&mut out, escaped);
            if escaped {
                assert_eq!(out, written);
                assert_eq!(unescape(written).as_deref(), Some(name));
            } else {
                assert_eq!(out, name);
            }
        }
        for bad in [&b"\\"[..], b"a\\t", b"\\x41", b"a\\0"] {
            assert_eq!(unescape(bad), None, "{}", bad.escape_ascii());
        }
    }
}
