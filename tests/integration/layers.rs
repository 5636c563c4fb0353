//! The library's layers import only the layers below them (see
//! docs/architecture.md): every `crate::MODULE` a module names, outside its
//! tests, must be one it may use.

use std::collections::BTreeMap;
use std::path::Path;

/// Each module of the library and the modules it may name.
const LAYERS: [(&str, &[&str]); 14] = [
    ("ct", &[]),
    ("os", &[]),
    ("descriptors", &[]),
    ("memory", &[]),
    ("params", &[]),
    ("digest", &["ct", "params"]),
    ("error", &["params", "memory"]),
    ("engine", &["params", "digest", "error", "memory", "os"]),
    ("format", &["params", "digest", "memory"]),
    (
        "leaves",
        &[
            "engine",
            "format",
            "params",
            "digest",
            "error",
            "descriptors",
            "memory",
            "os",
        ],
    ),
    ("rustcrypto", &["engine", "params", "digest"]),
    (
        "input",
        &[
            "beneath",
            "engine",
            "format",
            "params",
            "digest",
            "error",
            "descriptors",
            "memory",
            "os",
        ],
    ),
    ("spill", &["descriptors", "memory", "os"]),
    (
        "verify",
        &[
            "input", "leaves", "engine", "format", "params", "digest", "error", "memory",
        ],
    ),
];

/// The top module a source file belongs to: `src/engine/many.rs` is
/// `engine`, `src/leaves.rs` is `leaves`.
fn module_of(path: &Path, src: &Path) -> Option<String> {
    let relative = path.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let module = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(module, "lib" | "main" | "cli")).then(|| module.to_string())
}

/// The modules `text` names as `crate::MODULE`, leaving out its unit tests
/// (`mod tests`, whatever its `cfg`).
fn named_modules(text: &str) -> Vec<String> {
    let code = text.split("\nmod tests {").next().unwrap_or(text);
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

fn rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn modules_import_only_the_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.into_iter().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for path in &files {
        let Some(module) = module_of(path, &src) else {
            continue;
        };
        let may = allowed
            .get(module.as_str())
            .unwrap_or_else(|| panic!("{} is in no layer: add it to LAYERS", path.display()));
        for named in named_modules(&std::fs::read_to_string(path).unwrap()) {
            if named != module && !may.contains(&named.as_str()) {
                wrong.push(format!("{}: crate::{named}", path.display()));
            }
        }
        checked += 1;
    }
    assert!(
        wrong.is_empty(),
        "imports from a layer above:\n{}",
        wrong.join("\n")
    );
    // Every library file was looked at (lib.rs, the facade, may name all).
    assert_eq!(
        checked,
        files
            .iter()
            .filter(|p| module_of(p, &src).is_some())
            .count()
    );
    assert!(checked >= 20, "only {checked} files");
}

#[test]
fn the_check_finds_an_upward_import() {
    let text = "use crate::params::TreeParams;\nuse crate::engine::Sink;\n\
                #[cfg(test)]\nmod tests {\n    use crate::input::Job;\n}\n";
    assert_eq!(named_modules(text), ["params", "engine"]);
    let format_may = LAYERS
        .iter()
        .find(|(module, _)| *module == "format")
        .unwrap()
        .1;
    assert!(!format_may.contains(&"engine"));
}

/// The sibling files `text` (a file of a module directory) names as
/// `super::NAME`, leaving out its unit tests.
fn named_siblings(text: &str, siblings: &[String]) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut named: Vec<String> = code
        .match_indices("super::")
        .map(|(at, _)| {
            code[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
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

/// Within a module directory (`engine/`, `format/`, `input/`, `cli/`, …) the
/// files import one another without circles: a piece two files share lives
/// below both.
#[test]
fn the_files_of_a_module_import_one_another_without_circles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![src.clone()];
    let mut checked = 0;
    while let Some(dir) = dirs.pop() {
        let mut siblings = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path.clone());
            }
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            if stem != "mod" && (path.is_dir() || path.extension().is_some_and(|e| e == "rs")) {
                siblings.push(stem);
            }
        }
        if dir == src {
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
    assert!(checked >= 20, "only {checked} files");
}

#[test]
fn the_check_finds_a_circle() {
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
