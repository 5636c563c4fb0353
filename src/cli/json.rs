//! `--json`: one JSON object a line on standard output, in place of the
//! lines hashing and checking print, each with a `type`; docs/json.md is
//! the schema. Names are `{"text": …}`, or `{"bytes": BASE64}` when they
//! are not UTF-8 (ripgrep's convention).

use serde_json::{Map, Value, json};

use bt2sum::TreeParams;

/// A name as objects carry it: its text, or its bytes in base64 where it
/// is not UTF-8.
pub fn name(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({ "text": text }),
        Err(_) => json!({ "bytes": base64(bytes) }),
    }
}

/// A name, or `null` for standard input read because no FILE was given.
pub fn maybe_name(bytes: Option<&[u8]>) -> Value {
    bytes.map_or(Value::Null, name)
}

/// An object of `type`, its tree parameters (`algorithm`, `size`, `tree`)
/// and `fields`.
pub fn with_tree(kind: &str, tree: &TreeParams, fields: Value) -> Value {
    let mut object = Map::new();
    object.insert("type".into(), kind.into());
    object.insert("algorithm".into(), tree.algorithm().name().into());
    object.insert("size".into(), tree.digest_size().into());
    object.insert("tree".into(), tree.leaf_size().into());
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    Value::Object(object)
}

/// An object of `type` and `fields`.
pub fn object(kind: &str, fields: Value) -> Value {
    let mut object = Map::new();
    object.insert("type".into(), kind.into());
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    Value::Object(object)
}

/// Appends an object and a newline to `out`.
pub fn push(out: &mut Vec<u8>, value: &Value) {
    // (Writing to memory cannot fail.)
    let _ = serde_json::to_writer(&mut *out, value);
    out.push(b'\n');
}

/// Standard base64 (RFC 4648, with padding).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (at, &byte)| {
            word | u32::from(byte) << (16 - 8 * at)
        });
        for at in 0..4 {
            if at <= chunk.len() {
                out.push(char::from(ALPHABET[(word >> (18 - 6 * at) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_rfc_4648_says() {
        let table: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (bytes, text) in table {
            assert_eq!(base64(bytes), text);
        }
        assert_eq!(name(b"a\xffb"), json!({ "bytes": "Yf9i" }));
        assert_eq!(name(b"a b"), json!({ "text": "a b" }));
    }
}
