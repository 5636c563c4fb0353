//! The check list's line grammar on any bytes: a checksum line (tagged or
//! GNU-style, names escaped or not), a leaf line, a count line, the
//! nameless line of standard input, or another tool's line. Nothing
//! panics, every line that parses reads back the same once printed again,
//! in each style (the parser and the printer agree on the escapes and the
//! fields), and a line bt2sum prints is never taken for another tool's.
#![no_main]

use bt2sum::Algorithm;
use bt2sum::format::checksum::{Style, push_line};
use bt2sum::format::leaf::LeafLine;
use bt2sum::format::list::{Grammar, ListLine, classify};
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
                let ListLine::Stat(again) = classify(&printed, &Grammar::default()) else {
                    panic!("stat line {printed:?} of {line:?} does not read back")
                };
                assert_eq!(
                    (again.tree, again.size, again.mtime, &again.name),
                    (stat.tree, stat.size, stat.mtime, &stat.name)
                );
            }
            ListLine::Skip | ListLine::Improper(_) => {}
        }
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
        None => input.push_count(&mut printed, leaf.total, leaf.span.as_ref()),
    }
    let again = classify(&printed, &Grammar::default());
    let ListLine::Leaf(again) = again else {
        panic!("{printed:?} of {line:?} does not read back: {again:?}");
    };
    assert_eq!(&again, leaf);
}
