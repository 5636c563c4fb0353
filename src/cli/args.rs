//! The clap definition (its doc comments are the help), the parsers of the
//! values clap cannot check alone, and the shim for the original Go tool's
//! option spellings. Nothing here runs anything: `plan` resolves the
//! parsed flags once into what the drivers use.

use std::ffi::OsString;
use std::ops::Range;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, CommandFactory, Parser, ValueHint};

use bt2sum::format::decimal;
use bt2sum::format::name::Name;
use bt2sum::{Algorithm, Part, TreeParams};

/// The examples that end `--help` and the manual page.
pub const EXAMPLES: &str = include_str!("examples.txt");

// Which options go together. An option that only means something in one
// mode requires that mode's flag (or an option that does), and also
// conflicts with everything that flag conflicts with: clap drops a
// requirement whose target conflicts with an argument given, so `--quiet
// -r` would be accepted and ignored. (An `ArgGroup` holding the conflicts
// once would do, but clap's message then names every option of the group.)

/// What check mode cannot go with; the check-only options neither. (`-b`,
/// `--text`, `--tag` and `--untagged` go with it and change nothing, for
/// scripts that always pass them; `-s` and `--leaves` mean something there.)
const NOT_WITH_CHECK: [&str; 3] = ["recursive", "leaf_count", "combine"];

/// What a selection of leaves (`--leaf-range`, `--part`) and `--total`
/// cannot go with.
const NOT_WITH_SELECTION: [&str; 4] = ["check", "combine", "untagged", "recursive"];

/// What a walk (`-r`, and what tunes one: `-L`, `-x`, `--max-depth`)
/// cannot go with. (`--part` goes with an audit's walk, not with `-r`.)
const NOT_WITH_WALKING: [&str; 4] = ["combine", "leaf_range", "total", "name"];

/// Print or verify BLAKE2 tree-hash checksums ("unlimited fanout" mode, as
/// used by s3git).
///
/// Each input is cut into leaves of SIZE bytes (-t), every leaf is hashed as
/// a BLAKE2 tree node of depth 0, and the root hashes the leaf digests in
/// order: one line per input.
#[derive(Parser, Debug)]
#[command(
    name = "bt2sum",
    version,
    // One line per mode: clap's own, after a usage error, would show only
    // the options in conflict, as if a FILE were needed.
    override_usage = "bt2sum [OPTIONS] [FILE]...\n       \
                      bt2sum --check [OPTIONS] [LIST]...\n       \
                      bt2sum --combine [OPTIONS] [LISTING]...",
    args_override_self = true,
    after_help = EXAMPLES,
    after_long_help = concat!("The manual page (bt2sum --man) tells each option in full.\n\n",
                              include_str!("examples.txt")),
    // What selects leaves needs a leaf listing or count to print.
    group(ArgGroup::new("listing").args(["leaves", "leaf_count"])),
    // `--total` says what a selection's input holds, or plans one.
    group(ArgGroup::new("planned").args(["leaf_range", "part", "leaf_count"]).multiple(true)),
    // What --part slices: a listing, or a check.
    group(ArgGroup::new("sliceable").args(["leaves", "leaf_count", "check"]).multiple(true)),
    // What walks directories.
    group(ArgGroup::new("walking").args(["recursive", "audit"]).multiple(true)),
)]
pub struct Args {
    /// Files to hash; none, or `-`, means standard input (lists with -c, directories with -r)
    #[arg(value_name = "FILE")]
    pub files: Vec<OsString>,

    /// Read the inputs' names from F (`-`: standard input), each ended by NUL, not FILEs
    #[arg(long, value_name = "F", value_hint = ValueHint::FilePath,
          conflicts_with_all = ["files", "check", "combine", "name"])]
    pub files0_from: Option<OsString>,

    /// Hash algorithm (in any case: BLAKE2b as lines spell it)
    #[arg(short, long, alias = "a", ignore_case = true, default_value = "blake2b",
          value_parser = algorithms())]
    pub algorithm: Algorithm,

    /// Digest size in bytes: 1 to 64 for blake2b, 1 to 32 for blake2s; 0 means the maximum
    #[arg(short, long, visible_alias = "length", alias = "s")]
    #[arg(value_name = "BYTES", default_value_t = 0)]
    pub size: usize,

    /// Leaf size: 1 byte to 4294967295 bytes (4g - 1), with an optional k, m or g suffix
    #[arg(short = 't', long = "tree", alias = "t", value_name = "SIZE", default_value = "5m",
          value_parser = parse_leaf_size)]
    pub leaf_size: u64,

    /// Act as if started in DIR (as `git -C`): FILEs, LISTs and listed names are relative to it
    #[arg(short = 'C', long = "directory", value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub directory: Option<OsString>,

    /// Threads at work, the run's own counted: 1 to 1024 [default: the number of processors]
    #[arg(long, visible_alias = "num-threads", value_name = "N", value_hint = ValueHint::Other,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub cpus: Option<u16>,

    /// Read checksum lists from the FILEs (or standard input) and verify them
    #[arg(short, long, conflicts_with_all = NOT_WITH_CHECK)]
    pub check: bool,

    /// Print GNU-style `HEX  NAME` lines instead of the default tagged ones
    #[arg(long, overrides_with = "tag")]
    pub untagged: bool,

    /// Print only each input's digest, in hex, without its name (as b3sum's --no-names)
    #[arg(long,
          conflicts_with_all = ["check", "combine", "leaves", "leaf_count", "tag", "untagged"])]
    pub no_names: bool,

    /// Write the digest's bytes themselves, nothing else, for one input (as b3sum's --raw)
    #[arg(long, conflicts_with_all = ["check", "combine", "leaves", "leaf_count", "recursive",
          "files0_from", "zero", "tag", "untagged", "no_names"])]
    pub raw: bool,

    /// End each output line with NUL, not newline, and write names unescaped (GNU's --zero)
    #[arg(short, long)]
    pub zero: bool,

    /// Print `BLAKE2b-64 (NAME) = HEX` lines (the default), as `b2sum --tag` prints them
    #[arg(long, overrides_with = "untagged")]
    pub tag: bool,

    /// Binary mode: accepted for scripts written for sha256sum -b, and changes nothing
    #[arg(short, long, overrides_with = "text")]
    pub binary: bool,

    /// Text mode: accepted for scripts written for sha256sum --text, and changes nothing
    #[arg(long, overrides_with = "binary")]
    pub text: bool,

    /// With --check: print no OK line for each verified file
    #[arg(long, requires = "check", conflicts_with_all = NOT_WITH_CHECK,
          overrides_with_all = ["status", "warn"])]
    pub quiet: bool,

    /// With --check: print nothing on standard output; the exit status tells
    #[arg(long, requires = "check", conflicts_with_all = NOT_WITH_CHECK,
          overrides_with_all = ["quiet", "warn"])]
    pub status: bool,

    /// With --check: fail on improperly formatted checksum lines
    #[arg(long, requires = "check", conflicts_with_all = NOT_WITH_CHECK)]
    pub strict: bool,

    /// With --check: warn about each improperly formatted checksum line
    #[arg(short, long, requires = "check", conflicts_with_all = NOT_WITH_CHECK,
          overrides_with_all = ["quiet", "status"])]
    pub warn: bool,

    /// With --check: skip listed files that do not exist, without failing
    #[arg(long, requires = "check", conflicts_with_all = NOT_WITH_CHECK)]
    pub ignore_missing: bool,

    /// With --check: print a verdict for every line of a leaf listing (as --leaves does)
    #[arg(long, requires = "check", conflicts_with_all = NOT_WITH_CHECK)]
    pub verbose: bool,

    /// Hash every regular file under the directories given (`.` when none), in path order
    #[arg(short, long, conflicts_with_all = ["check", "part"],
          conflicts_with_all = NOT_WITH_WALKING)]
    pub recursive: bool,

    /// With --recursive or --audit: leave out what a gitignore pattern matches (repeatable)
    #[arg(long, value_name = "GLOB", requires = "walking")]
    pub exclude: Vec<String>,

    /// With --recursive or --audit: leave out what the patterns in FILE match (repeatable)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "walking")]
    pub exclude_from: Vec<OsString>,

    /// With --recursive: follow symbolic links met in the walk
    #[arg(short = 'L', long, requires = "walking", conflicts_with_all = NOT_WITH_WALKING)]
    pub dereference: bool,

    /// With --recursive or --audit: stay on each directory's file system (as find -xdev)
    #[arg(short = 'x', long, requires = "walking", conflicts_with_all = NOT_WITH_WALKING)]
    pub one_file_system: bool,

    /// With --recursive or --audit: walk at most N levels below each directory
    #[arg(long, value_name = "N", requires = "walking", conflicts_with_all = NOT_WITH_WALKING,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_depth: Option<u16>,

    /// With --check: class every file under DIR against the lists, NEW ones too (repeatable)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath, requires = "check",
          conflicts_with_all = NOT_WITH_CHECK)]
    pub audit: Vec<OsString>,

    /// Show a progress bar on standard error [default: on a terminal, after a second]
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,

    /// Never show a progress bar
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,

    /// After each file's line, print a line per leaf: index, offset, length and digest
    #[arg(long, conflicts_with_all = ["combine", "untagged"])]
    pub leaves: bool,

    /// With --leaves or --leaf-count: only leaves A to B-1, `A..` to the last [default: all]
    #[arg(long, value_name = "A..B", value_hint = ValueHint::Other, requires = "listing",
          conflicts_with_all = NOT_WITH_SELECTION, value_parser = parse_leaf_range)]
    pub leaf_range: Option<Range<u64>>,

    /// With --leaves, --leaf-count or --check: only the K-th of N near-equal slices (from 1)
    #[arg(long, value_name = "K/N", value_hint = ValueHint::Other, requires = "sliceable",
          conflicts_with_all = ["leaf_range", "combine", "recursive"],
          value_parser = parse_part)]
    pub part: Option<Part>,

    /// The input holds only the selected leaves' bytes of a file of T bytes
    #[arg(long, value_name = "T", value_hint = ValueHint::Other, requires = "planned",
          conflicts_with_all = NOT_WITH_SELECTION, value_parser = parse_byte_count)]
    pub total: Option<u64>,

    /// The name lines give the one input instead of its own (`-` for standard input)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["check", "combine", "recursive"],
          value_parser = clap::builder::OsStringValueParser::new().try_map(parse_name))]
    // (A qualified `Vec`: clap reads a bare one as several values.)
    pub name: Option<std::vec::Vec<u8>>,

    /// After each file's checksum line, print a stat line: size, mtime and leaf size
    #[arg(long, conflicts_with_all = ["combine", "leaf_count", "no_names", "raw"])]
    pub stat: bool,

    /// With --audit: rewrite the one LIST to describe the tree as it is now
    #[arg(long, requires = "audit", conflicts_with = "part", conflicts_with_all = NOT_WITH_CHECK)]
    pub update: bool,

    /// With --audit: do not read a listed file whose size and mtime its stat line gives
    #[arg(long, requires = "audit", conflicts_with_all = NOT_WITH_CHECK)]
    pub quick: bool,

    /// With --update: drop the lines of MISSING files from the list
    #[arg(long, requires = "update", conflicts_with_all = NOT_WITH_CHECK)]
    pub forget_missing: bool,

    /// With --update: hash again the FAILED files PATTERN matches (repeatable)
    #[arg(long, value_name = "PATTERN", requires = "update", conflicts_with_all = NOT_WITH_CHECK)]
    pub accept: Vec<String>,

    /// With --check: record in FILE what was last verified when [default: LIST.ledger]
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "check",
          conflicts_with_all = NOT_WITH_CHECK)]
    pub ledger: Option<OsString>,

    /// With --check: start the ledger afresh
    #[arg(long, requires = "check", conflicts_with_all = NOT_WITH_CHECK)]
    pub ledger_reset: bool,

    /// With --check: stop after DURATION (`90m`, `2h`), least recently verified first
    #[arg(long, value_name = "DURATION", value_hint = ValueHint::Other, requires = "check",
          conflicts_with_all = ["part", "audit"], conflicts_with_all = NOT_WITH_CHECK,
          value_parser = parse_duration)]
    pub max_duration: Option<std::time::Duration>,

    #[command(flatten)]
    pub repair: Option<Repair>,

    /// Print one JSON object a line instead of lines, and a summary at the end
    #[arg(long, conflicts_with_all = ["combine", "raw", "no_names", "zero"])]
    pub json: bool,

    /// Print how many leaves each file has, without hashing it
    #[arg(long, conflicts_with_all = ["check", "combine", "untagged", "leaves"])]
    pub leaf_count: bool,

    /// Print a file's checksum line from its partial leaf listings (the FILEs)
    #[arg(long, conflicts_with_all = ["check", "size", "algorithm", "leaf_size"])]
    pub combine: bool,

    /// Print a shell completion script, and exit
    #[arg(long, value_name = "SHELL", exclusive = true)]
    pub completions: Option<clap_complete::Shell>,

    /// Print the manual page (roff), and exit
    #[arg(long, exclusive = true)]
    pub man: bool,
}

// Where good copies of damaged files are (`--repair-from`), and what
// mending may do: cut a file longer than listed, write any file (named
// absolute or with `..`, or with several hard links, as tar's
// `--absolute-names` does), write set-id files. The check's plan holds it
// as parsed. (Not a doc comment: a flattened struct's would replace the
// command's.)
#[derive(clap::Args, Clone, Debug)]
pub struct Repair {
    /// With --check: mend failing leaves from a good copy: a file, or a directory of copies
    #[arg(id = "repair_from", long = "repair-from", required = false, value_name = "PATH",
          value_hint = ValueHint::AnyPath, requires = "check", conflicts_with = "update",
          conflicts_with_all = NOT_WITH_CHECK)]
    pub copy: PathBuf,

    /// With --repair-from: cut a file longer than listed to its listed length
    #[arg(long = "repair-truncate", requires = "repair_from", conflicts_with_all = NOT_WITH_CHECK)]
    pub truncate: bool,

    /// With --repair-from: write files outside the directory, or with other hard links, too
    #[arg(long = "absolute-names", requires = "repair_from", conflicts_with_all = NOT_WITH_CHECK)]
    pub any_path: bool,

    /// With --repair-from: write set-user-ID and set-group-ID files too
    #[arg(long = "repair-setid", requires = "repair_from", conflicts_with_all = NOT_WITH_CHECK)]
    pub setid: bool,
}

/// The command as shell completion sees it: `-t <Tab>` and `-s <Tab>`
/// offer common sizes (any is taken) instead of file names. Only the completions are
/// made from it: the parser itself offers nothing, so that no message
/// lists these as the only values allowed.
pub fn for_completion() -> clap::Command {
    let leaf_sizes = [
        "64k", "1m", "4m", "5m", "8m", "10m", "16m", "64m", "256m", "1g",
    ];
    let sizes = ["0", "16", "20", "28", "32", "40", "48", "64"];
    Args::command()
        .mut_arg("leaf_size", |arg| arg.value_parser(leaf_sizes))
        .mut_arg("size", |arg| arg.value_parser(sizes))
}

/// Parses `K/N`: part K of N, from 1.
pub fn parse_part(text: &str) -> Result<Part, &'static str> {
    let allowed = "expected K/N (part K of N near-equal parts), with 1 <= K <= N";
    let (part, parts) = text.split_once('/').ok_or(allowed)?;
    let number = |digits: &str| decimal(digits.as_bytes()).ok_or(allowed);
    Part::new(number(part)?, number(parts)?).ok_or(allowed)
}

/// Parses a duration: a number (decimals allowed) with an optional `ms`,
/// `s`, `m`, `h` or `d`, seconds without one.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, &'static str> {
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.');
    let (number, unit) = text.split_at(split.unwrap_or(text.len()));
    let seconds = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => f64::NAN,
    };
    number
        .parse::<f64>()
        .ok()
        .and_then(|number| std::time::Duration::try_from_secs_f64(number * seconds).ok())
        .ok_or("expected a duration: a number with ms, s, m, h or d (90m, 2h, 3600)")
}

/// Digits with an optional `k`, `m` or `g` suffix (either case), as bytes;
/// `None` if that is not what `text` is, or it does not fit in 64 bits.
fn with_unit(text: &str) -> Option<u64> {
    let (digits, unit) = match text.as_bytes().last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&text[..text.len() - 1], 1u64 << 10),
        Some(b'm') => (&text[..text.len() - 1], 1 << 20),
        Some(b'g') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    decimal(digits.as_bytes())?.checked_mul(unit)
}

/// Parses a file's length in bytes, as `-t` takes sizes: `1000`, `12m`.
pub fn parse_byte_count(text: &str) -> Result<u64, &'static str> {
    with_unit(text).ok_or("expected a length in bytes: digits with an optional k, m or g suffix")
}

/// Parses the name lines give an input, as they print it: anything but
/// empty (on Windows, Unicode).
pub fn parse_name(name: OsString) -> Result<Vec<u8>, String> {
    match Name::of_path(&name).map(Name::into_bytes) {
        _ if name.is_empty() => Err("a name cannot be empty".into()),
        printed => printed.ok_or_else(|| bt2sum::Error::NotUnicode.to_string()),
    }
}

/// Parses `A..B` or `A..`: leaves A to B-1, or A to the end.
pub fn parse_leaf_range(text: &str) -> Result<Range<u64>, &'static str> {
    let allowed = "expected A..B (leaves A to B-1) or A.. (A to the last leaf), with A <= B";
    let (start, end) = text.split_once("..").ok_or(allowed)?;
    let number = |digits: &str| decimal(digits.as_bytes()).ok_or(allowed);
    let start = number(start)?;
    let end = match end {
        "" => u64::MAX,
        end => number(end)?,
    };
    (start <= end).then_some(start..end).ok_or(allowed)
}

/// The algorithms, as spelled on the command line (in any case, with
/// `ignore_case`), each with what `--help` says of it.
fn algorithms() -> impl TypedValueParser<Value = Algorithm> {
    PossibleValuesParser::new([
        PossibleValue::new("blake2b")
            .help("digests of 1 to 64 bytes; the faster on 64-bit machines"),
        PossibleValue::new("blake2s").help("digests of 1 to 32 bytes"),
    ])
    .map(|name| match name.eq_ignore_ascii_case("blake2s") {
        true => Algorithm::Blake2s,
        false => Algorithm::Blake2b,
    })
}

/// Parses a leaf size: digits with an optional `k`, `m` or `g` suffix.
pub fn parse_leaf_size(text: &str) -> Result<u64, String> {
    with_unit(text)
        .filter(|&size| TreeParams::leaf_size_allowed(size))
        .ok_or_else(|| {
            format!(
                "expected digits with an optional k, m or g suffix, from 1 byte to {} bytes \
                 (4g - 1)",
                TreeParams::MAX_LEAF_SIZE
            )
        })
}

/// A leaf size as `-t` takes it, in the largest unit that divides it:
/// `5m`, `64k`, `1000`.
pub fn shown_leaf_size(size: u64) -> String {
    match [(30, 'g'), (20, 'm'), (10, 'k')]
        .into_iter()
        .find(|&(shift, _)| size >= 1 << shift && size.trailing_zeros() >= shift)
    {
        Some((shift, unit)) => format!("{}{unit}", size >> shift),
        None => size.to_string(),
    }
}

/// Rewrites the original Go tool's spellings that clap does not take:
/// `-cpus N`, `-cpus=N` and `-help`. Nothing after `--` is touched. (Go's
/// double-dash forms of the one-letter flags, `--a`, `--s` and `--t`, are
/// aliases; `-a=blake2s`, `-s=40`, `-t=10m` clap takes as they are.)
pub fn go_spellings(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut after_dashes = false;
    args.into_iter()
        .map(|arg| {
            if after_dashes {
                return arg;
            }
            after_dashes = arg == "--";
            // Every spelling is ASCII: an argument that is not Unicode is
            // none of them.
            let Some(text) = arg.to_str() else {
                return arg;
            };
            let (flag, value) = text.find('=').map_or((text, ""), |at| text.split_at(at));
            let ours = match flag {
                "-cpus" => "--cpus",
                "-help" => "--help",
                _ => return arg,
            };
            OsString::from(format!("{ours}{value}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind::{ArgumentConflict, MissingRequiredArgument};

    /// The definition is consistent (clap's own checks), and every option
    /// that means something in one mode only is refused beside another
    /// mode, or without its own, as a usage error: never accepted and
    /// ignored.
    #[test]
    fn options_of_one_mode_are_refused_outside_it() {
        Args::command().debug_assert();
        let not_check: [&[&str]; 6] = [
            &["--untagged"],
            &["-s", "40"],
            &["-r"],
            &["--leaves"],
            &["--leaf-count"],
            &["--combine"],
        ];
        let mut refused = Vec::new();
        // Each of `others` after `head`.
        let mut with = |head: &[&'static str], others: &[&[&'static str]]| {
            refused.extend(others.iter().map(|other| [head, other].concat()));
        };
        // (Each alone, and what it needs, the table of usage errors in
        // cli.rs says, with the messages.)
        let check_only = "--quiet --status --strict --warn --ignore-missing --verbose --audit=. \
            --quick --update --forget-missing --accept=x --ledger=L --ledger-reset \
            --max-duration=1h --repair-from=c --repair-truncate --absolute-names --repair-setid";
        for option in check_only.split(' ') {
            with(&[option], &not_check);
        }
        let selected: [&[&str]; 5] = [
            &["--leaves", "-c"],
            &["--leaves", "--combine"],
            &["--leaves", "--untagged"],
            &["--leaves", "-r"],
            &["--leaf-count", "-r"],
        ];
        with(&["--leaf-range", "1..2"], &selected);
        // (--part slices a check too.)
        with(&["--part", "1/2"], &selected[1..]);
        with(
            &["--total", "10"],
            &[&["-c"], &["--combine"], &["--leaf-count", "-r"]],
        );
        with(&["--name", "x"], &[&["--combine"], &["-r"]]);
        let links: [&[&str]; 5] = [
            &["-c"],
            &["--combine"],
            &["--leaves", "--leaf-range", "0..1"],
            &["--leaves", "--part", "1/2"],
            &["--name", "x"],
        ];
        with(&["-r", "-L"], &links);
        with(&["-L"], &[&["-c"]]);
        assert!(Args::try_parse_from(["bt2sum", "-c", "--part", "1/2", "SUMS"]).is_ok());
        assert_eq!(refused.len(), 18 * 6 + 5 + 4 + 3 + 2 + 5 + 1);
        for args in &refused {
            let parsed = Args::try_parse_from(["bt2sum"].iter().chain(args).chain(&["file"]));
            let kind = parsed.expect_err(&format!("{args:?} is refused")).kind();
            let refused = matches!(kind, ArgumentConflict | MissingRequiredArgument);
            assert!(refused, "{args:?}: {kind:?}");
        }
        // And where they mean something, they are taken.
        let accepted: [&[&str]; 12] = [
            &["-c", "--quiet", "--strict", "--ignore-missing"],
            &["-c", "--status", "-w"],
            &["--leaves", "--leaf-range", "1..2"],
            &["--leaves", "--part", "1/2"],
            &["--leaf-count", "--leaf-range", "1..2"],
            &["--leaf-count", "--part", "1/2", "--total", "10"],
            &["--leaves", "--part", "1/2", "--total", "10", "--name", "x"],
            &["--leaves", "--leaf-range", "1..", "--total", "10"],
            &["--leaves", "-r", "-L"],
            &["-r", "-L", "--untagged"],
            &["--leaf-count", "-r"],
            &["--name", "x", "--untagged"],
        ];
        for args in accepted {
            let parsed = Args::try_parse_from(["bt2sum"].iter().chain(args).chain(&["file"]));
            assert!(parsed.is_ok(), "{args:?}: {:?}", parsed.err());
        }
    }

    #[test]
    fn leaf_sizes() {
        let table: [(&str, Option<u64>); 20] = [
            ("1", Some(1)),
            ("5m", Some(5 << 20)),
            ("5M", Some(5 << 20)),
            ("64k", Some(64 << 10)),
            ("64K", Some(64 << 10)),
            ("1g", Some(1 << 30)),
            ("3G", Some(3 << 30)),
            ("4294967295", Some(u64::from(u32::MAX))),
            ("4194303k", Some(4_294_966_272)),
            ("007", Some(7)),
            ("0", None),
            ("0k", None),
            ("4g", None),
            ("4294967296", None),
            ("99999999999999999999", None),
            ("", None),
            ("k", None),
            ("5x", None),
            ("5mb", None),
            ("-1", None),
        ];
        // Every refusal says what is allowed.
        let allowed = "expected digits with an optional k, m or g suffix, from 1 byte to \
                       4294967295 bytes (4g - 1)";
        for (text, expected) in table {
            let parsed = parse_leaf_size(text).map_err(|message| assert_eq!(message, allowed));
            assert_eq!(parsed.ok(), expected, "{text:?}");
        }
    }

    #[test]
    fn leaf_ranges() {
        let table: [(&str, Option<Range<u64>>); 14] = [
            ("0..1", Some(0..1)),
            ("3..10", Some(3..10)),
            ("100..", Some(100..u64::MAX)),
            ("0..", Some(0..u64::MAX)),
            ("18446744073709551614..", Some(u64::MAX - 1..u64::MAX)),
            ("5..5", Some(5..5)),
            ("6..5", None),
            ("..5", None),
            ("..", None),
            ("5", None),
            ("a..b", None),
            ("1...3", None),
            ("+1..3", None),
            ("1..18446744073709551616", None),
        ];
        for (text, expected) in table {
            assert_eq!(parse_leaf_range(text).ok(), expected, "{text:?}");
        }
    }

    #[test]
    fn parts_and_lengths() {
        let parts: [(&str, Option<(u64, u64)>); 12] = [
            ("1/1", Some((1, 1))),
            ("3/8", Some((3, 8))),
            ("8/8", Some((8, 8))),
            ("007/10", Some((7, 10))),
            (
                "18446744073709551615/18446744073709551615",
                Some((u64::MAX, u64::MAX)),
            ),
            ("0/8", None),
            ("9/8", None),
            ("1/0", None),
            ("1", None),
            ("1/", None),
            ("/2", None),
            ("+1/2", None),
        ];
        for (text, expected) in parts {
            let parsed = parse_part(text)
                .ok()
                .map(|part| (part.part(), part.parts()));
            assert_eq!(parsed, expected, "{text:?}");
        }
        let lengths: [(&str, Option<u64>); 9] = [
            ("0", Some(0)),
            ("100000", Some(100_000)),
            ("12m", Some(12 << 20)),
            ("5G", Some(5 << 30)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("17179869184g", None),
            ("", None),
            ("1.5m", None),
        ];
        for (text, expected) in lengths {
            assert_eq!(parse_byte_count(text).ok(), expected, "{text:?}");
        }
        assert!(parse_name(OsString::new()).is_err());
        assert_eq!(parse_name(OsString::from("-")), Ok(b"-".to_vec()));
    }

    #[test]
    fn go_spellings_are_rewritten_before_dashes_only() {
        let table: [(&[&str], &[&str]); 8] = [
            (&["-cpus", "2"], &["--cpus", "2"]),
            (&["-cpus=2"], &["--cpus=2"]),
            (&["-help"], &["--help"]),
            (
                &["-a=blake2s", "-s=40", "-t=10m"],
                &["-a=blake2s", "-s=40", "-t=10m"],
            ),
            (&["-cpusx"], &["-cpusx"]),
            (&["--size", "--tree"], &["--size", "--tree"]),
            (&["--", "-cpus", "--t"], &["--", "-cpus", "--t"]),
            (
                &["f", "-cpus", "1", "--", "-help"],
                &["f", "--cpus", "1", "--", "-help"],
            ),
        ];
        for (given, expected) in table {
            let expected: Vec<_> = expected.iter().map(OsString::from).collect();
            assert_eq!(go_spellings(given.iter().map(OsString::from)), expected);
        }
    }
}
