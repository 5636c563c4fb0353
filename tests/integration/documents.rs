//! Every console example of README.md and docs/*.md, run as written: each
//! block in a new directory of its own, each command by bash with the built
//! bt2sum first on `PATH`, and what it prints (standard output and error
//! together, as a terminal shows them) compared with the lines shown after
//! it.
//!
//! A console block holds `$ COMMAND` lines, each followed by the `> MORE`
//! lines that continue it (as bash prompts for them) and then by what it
//! prints. A shown line that ends in `…` stands for any line that starts
//! with the text before it: the documents shorten digests so. Examples that
//! need files make them first, in the block, as a reader would.
//!
//! The examples use GNU coreutils (`b2sum`, `sha256sum`, `head -c`), so they
//! run on Linux.

use std::path::Path;

/// One command of an example and what it prints.
#[derive(Debug, PartialEq)]
struct Example {
    /// The line of its `$` in the document, from 1.
    line: usize,
    command: String,
    shown: Vec<String>,
}

/// A console block: its examples run in order, in one directory.
#[derive(Debug, PartialEq)]
struct Block {
    /// The line of its opening fence, from 1.
    line: usize,
    examples: Vec<Example>,
}

/// The console blocks of a Markdown text; an error names a line that looks
/// like a command (`$ `) in a block of another kind, which would not run,
/// or a block that is never closed.
fn console_blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, bool)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let fence = line.trim_start();
        if let Some(info) = fence.strip_prefix("```") {
            open = match open {
                None => {
                    let console = info.trim() == "console";
                    if console {
                        blocks.push(Block {
                            line: number,
                            examples: Vec::new(),
                        });
                    }
                    Some((number, console))
                }
                Some(_) => None,
            };
            continue;
        }
        let Some((_, console)) = open else {
            continue;
        };
        // Blocks may be indented under a list item.
        let line = line.trim_start();
        if !console {
            if line.starts_with("$ ") {
                return Err(format!(
                    "line {number}: a command in a block that is not `console`, \
                     which never runs: label the block `console`"
                ));
            }
            continue;
        }
        let block = blocks.last_mut().expect("a console block is open");
        if let Some(command) = line.strip_prefix("$ ") {
            block.examples.push(Example {
                line: number,
                command: command.to_string(),
                shown: Vec::new(),
            });
            continue;
        }
        let Some(example) = block.examples.last_mut() else {
            return Err(format!(
                "line {number}: output before the block's first command"
            ));
        };
        match line.strip_prefix("> ") {
            Some(more) if example.shown.is_empty() => {
                example.command.push('\n');
                example.command.push_str(more);
            }
            _ => example.shown.push(line.to_string()),
        }
    }
    match open {
        Some((line, _)) => Err(format!("line {line}: a block that is never closed")),
        None => Ok(blocks),
    }
}

/// Whether `printed` is what `shown` shows: equal, or, where `shown` ends
/// in `…`, starting with what comes before it.
fn shows(shown: &str, printed: &str) -> bool {
    match shown.strip_suffix('…') {
        Some(start) => printed.starts_with(start),
        None => shown == printed,
    }
}

/// Whether `printed` is what `shown` shows, line by line.
fn all_shown(shown: &[String], printed: &[&str]) -> bool {
    shown.len() == printed.len() && shown.iter().zip(printed).all(|(s, p)| shows(s, p))
}

/// Running them: bash and GNU coreutils, on Linux.
#[cfg(target_os = "linux")]
mod run {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use super::{all_shown, console_blocks};

    /// The documents with examples: README.md and docs/*.md.
    fn documents() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut found = vec![root.join("README.md")];
        let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        docs.sort();
        found.extend(docs);
        found
    }

    /// Runs `command` with bash in `dir`, within two minutes; what it printed on
    /// standard output and error, in the order it printed it.
    fn printed_by(command: &str, dir: &Path) -> String {
        let binary = PathBuf::from(env!("CARGO_BIN_EXE_bt2sum"));
        let path = std::env::join_paths(
            std::iter::once(binary.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
        )
        .unwrap();
        // One pipe for both: errors come out between the lines they follow.
        let child = Command::new("bash")
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .current_dir(dir)
            .env("PATH", path)
            .env("HOME", dir)
            .env("LC_ALL", "C")
            .env_remove("TMPDIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash runs");
        let out = super::super::output_within(child, Duration::from_secs(120));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn every_console_example_runs_as_written() {
        let mut failures = Vec::new();
        let (mut blocks, mut commands) = (0, 0);
        for document in documents() {
            let name = document
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap()
                .display()
                .to_string();
            let name = name.trim_start_matches('/');
            let text = std::fs::read_to_string(&document).unwrap();
            let parsed = console_blocks(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
            for block in parsed {
                let dir = tempfile::tempdir().unwrap();
                for example in &block.examples {
                    let printed = printed_by(&example.command, dir.path());
                    let lines: Vec<&str> = printed.lines().collect();
                    if !all_shown(&example.shown, &lines) {
                        failures.push(format!(
                            "{name}:{}: $ {}\n-- shown:\n{}\n-- printed:\n{}",
                            example.line,
                            example.command,
                            example.shown.join("\n"),
                            printed.trim_end()
                        ));
                    }
                    commands += 1;
                }
                blocks += 1;
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {commands} examples print something else than their documents show:\n\n{}",
            failures.len(),
            failures.join("\n\n")
        );
        assert!(
            blocks >= 10 && commands >= 40,
            "{blocks} blocks, {commands} commands"
        );
    }
}

#[test]
fn console_blocks_are_parsed_as_written() {
    let text = "# Title\n\
                ```console\n\
                $ echo a; echo b\n\
                a\n\
                b\n\
                $ printf '%s\\n' one |\n\
                > cat\n\
                one\n\
                ```\n\
                \n\
                - in a list:\n\
                \x20 ```console\n\
                \x20 $ true\n\
                \x20 ```\n\
                ```sh\n\
                # not run\n\
                ```\n";
    let blocks = console_blocks(text).unwrap();
    let example = |line, command: &str, shown: &[&str]| Example {
        line,
        command: command.to_string(),
        shown: shown.iter().map(|s| s.to_string()).collect(),
    };
    assert_eq!(
        blocks,
        [
            Block {
                line: 2,
                examples: vec![
                    example(3, "echo a; echo b", &["a", "b"]),
                    example(6, "printf '%s\\n' one |\ncat", &["one"]),
                ],
            },
            Block {
                line: 12,
                examples: vec![example(13, "true", &[])],
            },
        ]
    );
    // What would not run, or not as meant, is an error.
    #[rustfmt::skip]
    let wrong = [
        ("```\n$ bt2sum x\n```\n", "line 2: a command in a block that is not `console`"),
        ("```sh\n$ bt2sum x\n```\n", "line 2: a command"),
        ("```console\nBLAKE2b\n```\n", "line 2: output before"),
        ("```console\n$ true\n", "line 1: a block that is never closed"),
    ];
    for (text, error) in wrong {
        let got = console_blocks(text).unwrap_err();
        assert!(got.starts_with(error), "{text:?}: {got}");
    }
}

#[test]
fn shown_lines_match_printed_ones() {
    let table = [
        ("a: OK", "a: OK", true),
        ("a: OK", "a: FAILED", false),
        ("BLAKE2b-64 = 18e6…", "BLAKE2b-64 = 18e622875a89", true),
        ("BLAKE2b-64 = 18e6…", "BLAKE2b-64 = 18e7", false),
        ("…", "anything", true),
        ("a…b", "a…b", true),
        ("trailing ", "trailing", false),
    ];
    for (shown, printed, expected) in table {
        assert_eq!(shows(shown, printed), expected, "{shown:?} {printed:?}");
    }
    let shown = vec!["x".to_string(), "y…".to_string()];
    assert!(all_shown(&shown, &["x", "yes"]));
    assert!(!all_shown(&shown, &["x"]));
    assert!(!all_shown(&shown, &["x", "yes", "more"]));
}

/// The README opens with the two commands that set everything up on a new
/// machine, and stays short: references live in docs/.
#[test]
fn the_readme_opens_with_its_two_commands_and_stays_short() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        readme.len() < 16 << 10,
        "README.md is {} bytes",
        readme.len()
    );
    let first_block = readme
        .split("```")
        .nth(1)
        .expect("a code block in README.md");
    let commands: Vec<&str> = first_block
        .lines()
        .skip(1)
        .map(|line| line.split("  #").next().unwrap().trim())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo install --locked --path . && bt2sum Cargo.toml",
            "scripts/test-deps && cargo test --features slow-tests"
        ],
        "{first_block}"
    );
}
