//! The check list's line grammar on any bytes: a checksum line (tagged or
//! GNU-style, names escaped or not), a leaf line, a count line, the
//! nameless line of standard input, or another tool's line. Nothing
//! panics, every line that parses reads back the same once printed again,
//! in each style (the parser and the printer agree on the escapes and the
//! fields), and a line bt2sum prints is never taken for another tool's.
#![no_main]

use bt2sum::Algorithm;
use bt2sum::format::checksum::{Style, parse_nameless, push_line};
use bt2sum::format::leaf::{LeafLine, is_leaf_line, parse_leaf_line};
use bt2sum::format::list::{Grammar, ListLine, classify};
use bt2sum::format::stat::parse_stat_line;
use bt2sum::format::{Ending, InputLines};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    for untagged in [Algorithm::Blake2b, Algorithm::Blake2s] {
        let grammar = Grammar {
            untagged_algorithm: untagged,
            digest_size: None,
        };
        match classify(line, &grammar) {
            ListLine::Checksum(entry) => {
                for style in [Style::Tagged, Style::Untagged] {
                    let mut printed = Vec::new();
                    push_line(
                        &mut printed,
                        style,
                        entry.algorithm,
                        &entry.expected,
                        Some(&entry.name),
                        Ending::Newline,
                    );
                    let printed = printed.strip_suffix(b"\n").expect("a line");
                    let grammar = Grammar {
                        untagged_algorithm: entry.algorithm,
                        digest_size: None,
                    };
                    let ListLine::Checksum(again) = classify(printed, &grammar) else {
                        panic!("{style:?} line {printed:?} of {line:?} does not read back");
                    };
                    assert_eq!(again.algorithm, entry.algorithm);
                    assert_eq!(again.name, entry.name);
                    assert!(again.expected == entry.expected);
                }
            }
            ListLine::Leaf(leaf) => reads_back(&leaf, line),
            ListLine::Nameless {
                algorithm,
                expected,
            } => {
                assert!(expected.as_bytes().len() <= algorithm.max_digest_size());
            }
            ListLine::Stat(stat) => {
                let mut printed = Vec::new();
                let input = InputLines {
                    tree: &stat.tree,
                    name: stat.name.as_deref(),
                    ending: Ending::Newline,
                };
                input.push_stat(&mut printed, stat.size, stat.mtime);
                let again = parse_stat_line(&printed[..printed.len() - 1]).unwrap_or_else(|| {
                    panic!("stat line {printed:?} of {line:?} does not read back")
                });
                assert_eq!(
                    (again.tree, again.size, again.mtime, &again.name),
                    (stat.tree, stat.size, stat.mtime, &stat.name)
                );
            }
            ListLine::Skip | ListLine::Improper(_) => {}
        }
    }
    if is_leaf_line(line)
        && let Ok(leaf) = parse_leaf_line(line)
    {
        reads_back(&leaf, line);
    }
    if let Some((algorithm, digest)) = parse_nameless(line) {
        assert!(digest.as_bytes().len() <= algorithm.max_digest_size());
    }
});

/// A leaf or count line, printed again, parses to the same fields.
fn reads_back(leaf: &LeafLine, line: &[u8]) {
    let mut printed = Vec::new();
    let input = InputLines {
        tree: &leaf.tree,
        name: leaf.name.as_deref(),
        ending: Ending::Newline,
    };
    match &leaf.leaf {
        Some(listed) => input.push_leaf(
            &mut printed,
            leaf.total,
            listed.index,
            listed.digest.as_bytes(),
        ),
        None => match &leaf.span {
            None => input.push_count(&mut printed, leaf.total, None),
            Some(span) => {
                // The leaves whose bytes the span is.
                let count = leaf.tree.leaf_count(leaf.total);
                let leaf_at = |at: u64| match at == leaf.total {
                    true => count,
                    false => at / leaf.tree.leaf_size(),
                };
                let leaves = leaf_at(span.start)..leaf_at(span.end);
                input.push_count(&mut printed, leaf.total, Some(&leaves));
            }
        },
    }
    let printed = printed.strip_suffix(b"\n").expect("a line");
    let again = parse_leaf_line(printed)
        .unwrap_or_else(|error| panic!("{printed:?} of {line:?} does not read back: {error}"));
    assert_eq!(&again, leaf);
}
