//! The layers import only the layers below them (see docs/architecture.md):
//! in the library, every `crate::MODULE` a module names; in the binary,
//! every room of `cli` another room names (`super::ROOM`, `crate::cli::ROOM`),
//! outside their tests, must be one it may use; and within a module's
//! directory the files import one another without circles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each module of the library and the modules it may name.
#[rustfmt::skip]
const LIBRARY: [(&str, &[&str]); 14] = [
    ("ct", &[]),
    ("sys", &[]),
    ("params", &[]),
    ("budget", &["sys"]),
    ("digest", &["ct", "params"]),
    ("error", &["params"]),
    ("format", &["params", "digest"]),
    ("spill", &["budget", "sys"]),
    ("engine", &["params", "digest", "error", "sys", "budget"]),
    ("rustcrypto", &["engine", "params", "digest"]),
    ("input", &["engine", "format", "params", "digest", "error", "sys", "budget"]),
    ("leaves", &["engine", "format", "params", "digest", "error", "spill", "ct"]),
    ("verify", &["input", "leaves", "engine", "format", "params", "digest", "error", "budget",
        "spill"]),
    ("skip", &[]),
];

/// Each room of the binary (`src/cli/ROOM.rs` or `src/cli/ROOM/`) and the
/// rooms it may name: the plumbing at the bottom, a driver per mode at the
/// top, the features a driver plugs in between.
#[rustfmt::skip]
const BINARY: [(&str, &[&str]); 14] = [
    ("sys", &[]),
    ("args", &[]),
    ("walk", &[]),
    ("progress", &["sys"]),
    ("output", &["progress", "sys"]),
    ("man", &["args"]),
    ("plan", &["args", "man", "output", "progress", "walk"]),
    ("tally", &["output"]),
    ("beneath", &["plan", "sys"]),
    ("combine", &["output", "sys"]),
    ("hash", &["output", "plan", "progress", "sys", "walk"]),
    ("repair", &["beneath", "output", "plan", "tally"]),
    ("audit", &["beneath", "output", "plan", "sys", "tally", "walk"]),
    ("check", &["args", "audit", "beneath", "output", "plan", "progress", "repair", "sys",
        "tally"]),
];

/// Every file and directory under `dir`, `dir` too.
fn walked(dir: &Path) -> impl Iterator<Item = PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
}

/// The code of `text` outside its unit tests (`mod tests`, whatever its
/// `cfg`).
fn outside_tests(text: &str) -> &str {
    text.split("\nmod tests {").next().unwrap_or(text)
}

/// The names that follow `prefix` in `code`.
fn named_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    code.match_indices(prefix).map(move |(at, _)| {
        code[at + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    })
}

/// The top module (or room) a file under `root` belongs to, and whether it
/// is that module's own file (`ROOM.rs`, `ROOM/mod.rs`).
fn module_of(path: &Path, root: &Path) -> Option<(String, bool)> {
    let relative = path.strip_prefix(root).ok()?;
    let mut parts = relative.iter().map(|part| part.to_str().unwrap_or(""));
    let first = parts.next()?;
    let rest: Vec<&str> = parts.collect();
    let own = rest.is_empty() || rest == ["mod.rs"];
    Some((first.trim_end_matches(".rs").to_string(), own))
}

/// The modules (rooms) each file names that it may not, by the layers
/// given; and how many files were looked at.
fn upward_imports(
    root: &Path,
    layers: &[(&str, &[&str])],
    named: impl Fn(&str, bool) -> Vec<String>,
    skip: &[&str],
) -> (Vec<String>, usize) {
    let allowed: BTreeMap<&str, &[&str]> = layers.iter().copied().collect();
    let (mut wrong, mut checked) = (Vec::new(), 0);
    for path in walked(root).filter(|path| path.extension().is_some_and(|ext| ext == "rs")) {
        let Some((module, own)) = module_of(&path, root) else {
            continue;
        };
        if skip.contains(&module.as_str()) {
            continue;
        }
        let may = allowed
            .get(module.as_str())
            .unwrap_or_else(|| panic!("{} is in no layer: add it to the layers", path.display()));
        let text = std::fs::read_to_string(&path).unwrap();
        for name in named(outside_tests(&text), own) {
            let known = allowed.contains_key(name.as_str());
            if known && name != module && !may.contains(&name.as_str()) {
                wrong.push(format!("{}: {name}", path.display()));
            }
        }
        checked += 1;
    }
    (wrong, checked)
}

#[test]
fn modules_import_only_the_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let library = |code: &str, _own: bool| named_after(code, "crate::").collect();
    let (wrong, checked) = upward_imports(&src, &LIBRARY, library, &["lib", "main", "cli"]);
    assert!(
        wrong.is_empty(),
        "imports from a layer above:\n{}",
        wrong.join("\n")
    );
    assert!(checked >= 20, "only {checked} library files");

    // A room's own file names the others as `super::ROOM`; its other files
    // as `super::super::ROOM`; any file as `crate::cli::ROOM`.
    let binary = |code: &str, own: bool| {
        let sibling = if own { "super::" } else { "super::super::" };
        named_after(code, "crate::cli::")
            .chain(named_after(code, sibling).filter(|name| name != "super"))
            .collect()
    };
    let cli = src.join("cli");
    let (wrong, checked) = upward_imports(&cli, &BINARY, binary, &["mod"]);
    assert!(
        wrong.is_empty(),
        "rooms naming a room above:\n{}",
        wrong.join("\n")
    );
    assert!(checked >= 20, "only {checked} files of the binary");
}

/// The sibling files `text` (a file of a module directory) names as
/// `super::NAME`, leaving out its unit tests.
fn named_siblings(text: &str, siblings: &[String]) -> Vec<String> {
    let mut named: Vec<String> = named_after(outside_tests(text), "super::")
        .filter(|name| siblings.contains(name))
        .collect();
    named.sort();
    named.dedup();
    named
}

/// The first circle of imports among `edges` (file → files it names), if
/// any, as the files along it.
fn a_circle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        file: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == file) {
            return Some(path[at..].to_vec());
        }
        if done.iter().any(|seen| seen == file) {
            return None;
        }
        path.push(file.to_string());
        for next in edges.get(file).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.push(file.to_string());
        None
    }
    let mut done = Vec::new();
    edges
        .keys()
        .find_map(|file| visit(file, edges, &mut Vec::new(), &mut done))
}

/// Within a module directory (`engine/`, `format/`, `input/`, a room of
/// `cli/`, …) the files import one another without circles: a piece two
/// files share lives below both.
#[test]
fn the_files_of_a_module_import_one_another_without_circles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for dir in walked(&src).filter(|path| path.is_dir()) {
        let mut siblings = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            if stem != "mod" && (path.is_dir() || path.extension().is_some_and(|e| e == "rs")) {
                siblings.push(stem);
            }
        }
        if dir == src || dir == src.join("cli") {
            continue;
        }
        let mut edges = BTreeMap::new();
        for name in &siblings {
            let file = dir.join(format!("{name}.rs"));
            let file = if file.exists() {
                file
            } else {
                dir.join(name).join("mod.rs")
            };
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            edges.insert(name.clone(), named_siblings(&text, &siblings));
            checked += 1;
        }
        if let Some(circle) = a_circle(&edges) {
            panic!(
                "{}: a circle of imports: {}",
                dir.display(),
                circle.join(" -> ")
            );
        }
    }
    assert!(checked >= 10, "only {checked} files");
}

#[test]
fn the_checks_find_an_upward_import_and_a_circle() {
    let text = "use crate::params::TreeParams;\nuse crate::engine::Sink;\n\
                #[cfg(test)]\nmod tests {\n    use crate::input::Job;\n}\n";
    let named: Vec<String> = named_after(outside_tests(text), "crate::").collect();
    assert_eq!(named, ["params", "engine"]);
    let format_may = LIBRARY
        .iter()
        .find(|(module, _)| *module == "format")
        .unwrap()
        .1;
    assert!(!format_may.contains(&"engine"));
    let tally_may = BINARY.iter().find(|(room, _)| *room == "tally").unwrap().1;
    assert!(!tally_may.contains(&"check"));

    let siblings = ["batch".to_string(), "stream".to_string()];
    let text = "use super::stream::x;\nuse super::tuning;\n#[cfg(test)]\nmod tests {\n    use super::batch;\n}\n";
    assert_eq!(named_siblings(text, &siblings), ["stream"]);
    let edges: BTreeMap<String, Vec<String>> = [
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["c".to_string()]),
        ("c".to_string(), vec!["a".to_string()]),
        ("d".to_string(), vec![]),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        a_circle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    let mut straight = edges.clone();
    straight.insert("c".to_string(), vec![]);
    assert_eq!(a_circle(&straight), None);
}
