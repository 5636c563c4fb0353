//! `--json`: every object the commands print, in every mode, is one the
//! schema of docs/json.md allows, and every kind of object the schema
//! describes is printed by some command here. (Unix: the names are made
//! with bytes that are not UTF-8.)

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::run_in;

/// The schema: the `json` block of docs/json.md.
fn schema() -> Value {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .expect("docs/json.md");
    let blocks = super::fenced_blocks(&text, "```json");
    serde_json::from_str(blocks.first().expect("a json block")).expect("the schema is JSON")
}

/// Why `value` does not match `schema` (which may `$ref` into `root`), or
/// `None`: the keywords the schema uses (`$ref`, `oneOf`, `type`, `const`,
/// `enum`, `pattern`, `minimum`, `required`, `properties`,
/// `additionalProperties: false`).
fn mismatch(value: &Value, schema: &Value, root: &Value) -> Option<String> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let path = reference.strip_prefix("#/").expect("a local reference");
        let target = path.split('/').fold(root, |node, key| &node[key]);
        return mismatch(value, target, root);
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let matching = options
            .iter()
            .filter(|option| mismatch(value, option, root).is_none())
            .count();
        if matching != 1 {
            return Some(format!("{value} matches {matching} of oneOf's schemas"));
        }
    }
    if let Some(kind) = schema.get("type").and_then(Value::as_str) {
        let is = match kind {
            "object" => value.is_object(),
            "string" => value.is_string(),
            "integer" => value.is_u64() || value.is_i64(),
            "null" => value.is_null(),
            other => panic!("the schema's type {other}"),
        };
        if !is {
            return Some(format!("{value} is not of type {kind}"));
        }
    }
    if let Some(constant) = schema.get("const")
        && value != constant
    {
        return Some(format!("{value} is not {constant}"));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Some(format!("{value} is none of {allowed:?}"));
    }
    if let (Some(pattern), Some(text)) = (
        schema.get("pattern").and_then(Value::as_str),
        value.as_str(),
    ) && !regex::Regex::new(pattern).unwrap().is_match(text)
    {
        return Some(format!("{text:?} does not match {pattern}"));
    }
    if let (Some(minimum), Some(number)) = (
        schema.get("minimum").and_then(Value::as_i64),
        value.as_i64(),
    ) && number < minimum
    {
        return Some(format!("{number} < {minimum}"));
    }
    if let Some(object) = value.as_object() {
        let required = schema.get("required").and_then(Value::as_array);
        let mut keys = required
            .into_iter()
            .flatten()
            .map(|key| key.as_str().unwrap());
        if let Some(key) = keys.find(|key| !object.contains_key(*key)) {
            return Some(format!("{value} lacks {key}"));
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (key, field) in object {
            let property = properties.and_then(|properties| properties.get(key));
            if let Some(property) = property
                && let Some(why) = mismatch(field, property, root)
            {
                return Some(format!("{key}: {why}"));
            }
            if property.is_none() && closed {
                return Some(format!("{value} has {key}, which the schema does not"));
            }
        }
    }
    None
}

/// The commands of every mode, in one directory, their JSON objects
/// gathered in order.
fn objects_printed() -> Vec<Value> {
    let dir = super::dir_with(&[
        ("t/a", b"alpha\n"),
        ("t/b", b"beta, longer\n"),
        ("t/c", b""),
    ]);
    let at = dir.path();
    fs::write(at.join(super::name(b"t/\xffd")), b"not UTF-8\n").unwrap();
    let mut printed = Vec::new();
    let mut json = |args: &[&str], stdin: &[u8]| {
        let out = run_in(at, ["--json"].iter().chain(args), stdin);
        let lines = out.stdout.split(|&b| b == b'\n');
        for line in lines.filter(|line| !line.is_empty()) {
            let value: Value = serde_json::from_slice(line).unwrap_or_else(|error| {
                panic!("{args:?}: {error}: {}", String::from_utf8_lossy(line))
            });
            printed.push(value);
        }
    };
    // Hashing: checksums, stat, leaves, counts, standard input, errors.
    json(&["--stat", "-r", "t"], b"");
    json(&["-t", "4", "--leaves", "t/b", "t/c", "nowhere"], b"");
    json(&["-t", "4", "--leaf-count", "--part", "2/2", "t/b"], b"");
    json(&[], b"from standard input");
    // Lists to check: with stat lines and leaf lines.
    let list = |args: &[&str]| super::ok_bytes_in(at, args);
    fs::write(at.join("SUMS"), list(&["-r", "--stat", "t"])).unwrap();
    let mut leaves = list(&["-t", "4", "--leaves", "t/b"]);
    leaves.extend(list(&["-t", "4", "--leaf-count", "t/b"]));
    leaves.extend(b"junk\n");
    fs::write(at.join("LEAVES"), leaves).unwrap();
    json(&["-c", "--verbose", "SUMS", "LEAVES", "nolist"], b"");
    // Damage a leaf; edit a file; move a file, and an empty one (which is
    // never moved: it is missing, and new); add one.
    fs::write(at.join("t/b"), b"beta, longex\n").unwrap();
    json(&["-c", "LEAVES"], b"");
    fs::write(at.join("t/b"), b"beta, longer, longer\n").unwrap();
    json(&["-c", "LEAVES"], b"");
    fs::write(at.join("t/a"), b"alpha, edited\n").unwrap();
    fs::rename(at.join(super::name(b"t/\xffd")), at.join("t/e")).unwrap();
    fs::rename(at.join("t/c"), at.join("t/c2")).unwrap();
    fs::write(at.join("t/new"), b"new\n").unwrap();
    json(&["-c", "--audit", "t", "SUMS"], b"");
    json(&["-c", "--audit", "t", "--update", "SUMS"], b"");
    // Files not read (--quick), and a ledger's coverage.
    json(&["-c", "--audit", "t", "--quick", "SUMS"], b"");
    json(&["-c", "--max-duration", "1h", "SUMS"], b"");
    // Leaves mended from a good copy, and one the copy cannot give.
    super::write_files(at, &[("copy/big", &[7u8; 40]), ("big", &[7u8; 40])]);
    fs::write(at.join("BIG"), list(&["-t", "8", "--leaves", "big"])).unwrap();
    super::rot(&at.join("big"), [3, 20]);
    super::rot(&at.join("copy/big"), [21]);
    json(&["-c", "--repair-from", "copy", "BIG"], b"");
    // A missing file, restored from its copy once the copy matches.
    fs::remove_file(at.join("big")).unwrap();
    json(&["-c", "--repair-from", "copy", "BIG"], b"");
    fs::write(at.join("copy/big"), vec![7u8; 40]).unwrap();
    json(&["-c", "--repair-from", "copy", "BIG"], b"");
    // An entry that cannot be read.
    fs::create_dir(at.join("t/dir")).unwrap();
    fs::write(at.join("UNREADABLE"), b"00  t/dir\n").unwrap();
    json(&["-c", "UNREADABLE"], b"");
    printed
}

#[cfg(unix)]
#[test]
fn every_object_printed_is_one_the_schema_allows() {
    let schema = schema();
    let printed = objects_printed();
    let mut kinds = BTreeSet::new();
    for object in &printed {
        if let Some(why) = mismatch(object, &schema, &schema) {
            panic!("{object}: {why}");
        }
        let kind = object["type"].as_str().unwrap().to_string();
        // (Two summaries: hashing's and checking's.)
        let kind = match (kind.as_str(), object.get("lists")) {
            ("summary", Some(_)) if object.get("ledger").is_some() => {
                "summary with a ledger".to_string()
            }
            ("summary", Some(_)) => "summary of a check".to_string(),
            _ => kind,
        };
        kinds.insert(kind);
        if let Some(verdict) = object.get("verdict").and_then(Value::as_str) {
            kinds.insert(format!("{} {verdict}", object["type"].as_str().unwrap()));
        }
    }
    // Every kind of object the schema has, and every verdict an audit
    // gives, was printed and checked.
    let expected = "checksum, leaf, count, verdict, leaf-verdict, count-verdict, bad-line, error, \
                    update, repair REPAIRED, repair FAILED, restore RESTORED, restore FAILED, \
                    summary, summary of a check, summary with a ledger, verdict OK, \
                    verdict OK (not read), verdict FAILED, verdict CHANGED, verdict NEW, \
                    verdict MOVED, verdict MISSING, verdict FAILED open or read, \
                    leaf-verdict FAILED, count-verdict FAILED";
    for expected in expected.split(", ") {
        assert!(kinds.contains(expected), "no {expected} among {kinds:?}");
    }
    // A name that is not UTF-8 is its bytes, in base64.
    let in_bytes = serde_json::json!({ "bytes": "dC//ZA==" });
    let named = |object: &Value| object["name"] == in_bytes || object["from"] == in_bytes;
    assert!(printed.iter().any(named), "no name in bytes");
    // The schema rejects what it should.
    for bad in [
        r#"{"type":"checksum"}"#,
        r#"{"type":"verdict","name":{"text":"a"},"verdict":"PERHAPS"}"#,
        r#"{"type":"summary","files":1,"errors":0,"status":0,"extra":1}"#,
        r#"{"type":"error","message":"x","name":{"text":"a","bytes":"YQ=="}}"#,
    ] {
        let value: Value = serde_json::from_str(bad).unwrap();
        assert!(mismatch(&value, &schema, &schema).is_some(), "{bad}");
    }
}
