//! The library's layers import only the layers below them (see
//! docs/architecture.md): every `crate::MODULE` a module names, outside its
//! tests, must be one it may use.

use std::collections::BTreeMap;
use std::path::Path;

/// Each module of the library and the modules it may name.
const LAYERS: [(&str, &[&str]); 9] = [
    ("ct", &[]),
    ("descriptors", &[]),
    ("params", &[]),
    ("digest", &["ct"]),
    ("error", &["params"]),
    ("engine", &["params", "digest", "error"]),
    ("format", &["params", "digest"]),
    (
        "leaves",
        &[
            "engine",
            "format",
            "params",
            "digest",
            "error",
            "descriptors",
        ],
    ),
    (
        "input",
        &[
            "engine",
            "format",
            "params",
            "digest",
            "error",
            "descriptors",
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

/// The modules `text` names as `crate::MODULE`, leaving out its unit tests.
fn named_modules(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
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
