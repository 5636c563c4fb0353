//! The command line's parsers, from the binary's own source: the size
//! parser behind `-t`, the leaf range and part parsers, the length parser
//! behind `--total`, the rewriting of the Go tool's spellings, and clap's
//! parse of what that gives. The input is one
//! argument list, its arguments separated by NUL bytes.
//!
//! - A size parses only to 1 byte .. 4g - 1, and the size printed back (as
//!   hints print it) parses to itself; a range parses only with A <= B, a
//!   part only with 1 <= K <= N, and both print back to themselves.
//! - The rewriting keeps every argument's place, leaves everything after
//!   `--` alone, and rewritten again changes nothing.
//! - Nothing panics, clap included.
#![no_main]

use std::ffi::OsString;

use clap::Parser;
use libfuzzer_sys::fuzz_target;

#[path = "../../src/cli/args.rs"]
#[allow(dead_code)]
mod args;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(size) = args::parse_leaf_size(text) {
        assert!(
            (1..=u64::from(u32::MAX)).contains(&size),
            "{text:?}: {size}"
        );
        let shown = args::shown_leaf_size(size);
        assert_eq!(
            args::parse_leaf_size(&shown),
            Ok(size),
            "{text:?} shown as {shown:?}"
        );
    }
    if let Ok(range) = args::parse_leaf_range(text) {
        assert!(range.start <= range.end, "{text:?}: {range:?}");
    }
    if let Ok(part) = args::parse_part(text) {
        assert!(
            (1..=part.parts()).contains(&part.part()),
            "{text:?}: {part}"
        );
        assert_eq!(args::parse_part(&part.to_string()), Ok(part), "{text:?}");
    }
    if let Ok(length) = args::parse_byte_count(text) {
        assert_eq!(args::parse_byte_count(&length.to_string()), Ok(length));
    }
    let given: Vec<OsString> = std::iter::once("bt2sum")
        .chain(text.split('\0'))
        .map(OsString::from)
        .collect();
    let rewritten = args::go_spellings(given.clone());
    assert_eq!(rewritten.len(), given.len());
    if let Some(dashes) = given.iter().position(|arg| arg == "--") {
        assert_eq!(rewritten[dashes..], given[dashes..]);
    }
    assert_eq!(args::go_spellings(rewritten.clone()), rewritten);
    let _ = args::Args::try_parse_from(rewritten);
});
