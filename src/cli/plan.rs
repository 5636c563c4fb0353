//! The parsed flags resolved once into a plan: a mode and its settings,
//! typed and validated here (what clap's declarative rules in `args` cannot
//! say, and the tips for habits from other tools). No driver sees clap.

use std::ffi::OsString;
use std::io::IsTerminal;

use clap::error::ErrorKind;
use clap::{CommandFactory, Error, Parser};

use crate::cli::output::{Layout, Verbosity};
use crate::cli::walk::{Excludes, WalkPlan};
use bt2sum::format::Ending;
use bt2sum::format::checksum::Style;
use bt2sum::format::list::Grammar;
use bt2sum::verify::Settings;
use bt2sum::{Part, Selection, TreeParams};

pub use super::args::Repair;
use super::args::{Args, for_completion, go_spellings};
use super::man;
use super::progress::BarMode;

/// Everything a run needs.
pub struct Config {
    /// The directory to act in (`-C`).
    pub directory: Option<OsString>,
    /// Worker threads; `None` for one per processor.
    pub threads: Option<usize>,
    pub progress: BarMode,
    pub mode: Mode,
}

/// What the command line asks for: a run, or a text to print.
pub enum Request {
    Run(Box<Config>),
    /// The help, the version, a shell completion script or the manual page.
    Print(Vec<u8>),
}

/// What a run does.
pub enum Mode {
    /// Print a checksum line per input.
    Hash(Hashing),
    /// Verify checksum lists.
    Check(Checking),
    /// Turn partial leaf listings (empty: standard input) into a checksum
    /// line.
    Combine {
        listings: Vec<OsString>,
        layout: Layout,
    },
}

pub struct Hashing {
    pub tree: TreeParams,
    pub inputs: Inputs,
    /// How lines are written, and how they end (`-z`: in NUL, unescaped).
    pub layout: Layout,
    pub listing: Listing,
    /// The name lines give the one input (`--name`), as they print it.
    pub name: Option<Vec<u8>>,
    /// The length of the file whose selected leaves alone an input holds
    /// (`--total` with a selection).
    pub excerpt_of: Option<u64>,
    /// Whether a stat line follows each checksum line (`--stat`).
    pub stat: bool,
    /// Whether JSON objects are printed instead of lines (`--json`).
    pub json: bool,
}

pub enum Inputs {
    /// No FILE: standard input, whose line has no name.
    Stdin,
    /// The FILEs, in order (`-` is standard input).
    Named(Vec<OsString>),
    /// The names read from a list, each ended by NUL (`--files0-from`; `-`
    /// is standard input).
    ListedIn(OsString),
    /// Every regular file under the directories (`--recursive`).
    Walk { roots: Roots, walk: WalkPlan },
    /// None: only the count line of a file of this many bytes (of its
    /// selected leaves), `--leaf-count --total T`.
    Planned(u64),
}

/// The directories `--recursive` walks.
pub enum Roots {
    /// The FILEs (none: the current directory).
    Given(Vec<OsString>),
    /// The names read from a list (`--files0-from`).
    ListedIn(OsString),
}

/// What is printed per input besides (or instead of) its checksum line.
#[derive(Clone, PartialEq, Eq)]
pub enum Listing {
    /// The checksum line only.
    None,
    /// The checksum line, then a line per leaf (`--leaves`); with a
    /// selection (`--leaf-range`, `--part`), only the selected leaves' lines.
    Leaves(Option<Selection>),
    /// Only a line saying how many leaves the input has (`--leaf-count`),
    /// without hashing it; with a selection, ending in its bytes.
    Count(Option<Selection>),
}

pub struct Checking {
    /// The lists; empty for standard input.
    pub lists: Vec<OsString>,
    /// How lines read (`-a`, `-s`), and checksum lines' leaf size (`-t`).
    pub settings: Settings,
    pub verbosity: Verbosity,
    /// Whether every line of a leaf listing gets a verdict (`--verbose`).
    pub every_line: bool,
    /// Whether JSON objects are printed instead of lines (`--json`).
    pub json: bool,
    pub strict: bool,
    pub ignore_missing: bool,
    /// The slice of the lists to check, if only one (`--part`).
    pub slice: Option<Part>,
    /// The trees to audit against the lists (`--audit`).
    pub audit: Option<Auditing>,
    /// Where good copies of damaged files are, and what mending may do
    /// (`--repair-from` and the options that go with it).
    pub repair: Option<Repair>,
    /// The ledger of verifications, if one is named or may be used.
    pub ledger: Option<Ledgering>,
}

/// The ledger of a check: `--ledger FILE`, else `LIST.ledger` beside the
/// one list (used when it exists, or when `reset` or `max_duration` ask
/// for it); what it is asked to do.
pub struct Ledgering {
    pub file: std::path::PathBuf,
    /// Whether the ledger is used only if it is there already.
    pub if_there: bool,
    pub reset: bool,
    pub max_duration: Option<std::time::Duration>,
}

/// An audit: the directories walked and classed against the lists
/// (`--audit`), how they are walked, and whether the one list is rewritten
/// to describe the tree (`--update`).
pub struct Auditing {
    pub roots: Vec<OsString>,
    pub walk: WalkPlan,
    pub update: Option<Update>,
    /// Whether listed files whose stat lines say they are unchanged go
    /// unread (`--quick`).
    pub quick: bool,
}

/// `--update`: every entry written anew, and every one that verifies, gets
/// a stat line if `stat` (`--stat`); the lines of missing files are dropped
/// if `forget_missing`; damaged files `accept` matches are hashed again;
/// new files are listed with `tree` where the list has no checksum line to
/// take the shape of.
#[derive(Clone)]
pub struct Update {
    pub tree: TreeParams,
    pub stat: bool,
    pub forget_missing: bool,
    pub accept: Box<Excludes>,
}

fn usage(message: impl std::fmt::Display) -> Error {
    Args::command().error(ErrorKind::ValueValidation, message)
}

/// The one LIST, if the only FILE is a file (not standard input).
fn one_list(files: &[OsString]) -> Option<&OsString> {
    (files.len() == 1 && files[0] != "-").then(|| &files[0])
}

/// The rules clap's declarations in `args` cannot say (they depend on
/// values: how many FILEs, which is standard input): the first the flags
/// break, as a usage error.
fn follows_the_rules(args: &Args) -> Result<(), Error> {
    let files = &args.files;
    let one_list_file = one_list(files).is_some();
    let lists_are_files = !files.is_empty() && files.iter().all(|file| file != "-");
    let ledger_asked = args.ledger_reset || args.max_duration.is_some();
    let input_given = !files.is_empty() || args.files0_from.is_some();
    let broken = if args.zero && args.check {
        // (GNU coreutils 9.1's words.)
        "the --zero option is not supported when verifying checksums"
    } else if args.check && args.stat && !args.update {
        "--stat with --check needs --update"
    } else if args.check && args.part.is_some() && !lists_are_files {
        "--part with --check reads its lists twice: give them as files, not standard input"
    } else if args.update && !one_list_file {
        "--update rewrites one list: give one LIST, a file (not standard input)"
    } else if ledger_asked && args.ledger.is_none() && !one_list_file {
        "--max-duration and --ledger-reset keep a ledger beside the one LIST: name it with \
         --ledger FILE for standard input or several lists"
    } else if args.raw && files.len() > 1 {
        "--raw writes one digest's bytes: give one FILE, or none for standard input"
    } else if args.name.is_some() && files.len() > 1 {
        "--name names one input, and more than one FILE was given"
    } else if args.leaf_count && args.total.is_some() && input_given {
        "--leaf-count --total reads no input: give no FILE (--name names the line)"
    } else {
        return Ok(());
    };
    Err(usage(broken))
}

/// The excludes of `--exclude` and `--exclude-from` (in that order: a later
/// pattern decides over an earlier one; a file relative to `-C`'s
/// directory, if given); a pattern that is not one, or a file that cannot
/// be read, is a usage error.
fn excludes(args: &Args) -> Result<Excludes, Error> {
    let mut all: Vec<String> = args.exclude.clone();
    for file in &args.exclude_from {
        let path = std::path::Path::new(args.directory.as_deref().unwrap_or_default()).join(file);
        let unread = |why: String| usage(format!("--exclude-from {}: {why}", file.display()));
        let text = std::fs::read(path).map_err(|error| unread(bt2sum::plain_message(&error)))?;
        let text = String::from_utf8(text).map_err(|_| unread("not UTF-8 text".into()))?;
        all.extend(
            text.lines()
                .map(|line| line.trim_end_matches('\r').to_string()),
        );
    }
    Excludes::new(&all).map_err(|error| usage(format!("--exclude: {error}")))
}

impl Request {
    /// Parses and resolves the command line (the program name first); the
    /// error is a usage error.
    pub fn from_args(args: impl IntoIterator<Item = OsString>) -> Result<Request, Error> {
        let args = go_spellings(args);
        let args = match Args::try_parse_from(&args) {
            Ok(parsed) => parsed,
            Err(error) if error.use_stderr() => return Err(habit_tip(error, &args)),
            // The help or the version, in color on a terminal.
            Err(help) => {
                let help = help.render();
                let text = match std::io::stdout().is_terminal() {
                    true => help.ansi().to_string(),
                    false => help.to_string(),
                };
                return Ok(Request::Print(text.into_bytes()));
            }
        };
        if let Some(shell) = args.completions {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut for_completion(), "bt2sum", &mut script);
            Ok(Request::Print(script))
        } else if args.man {
            // (Rendered into memory, which takes every write.)
            let page = man::page().expect("the page is rendered in memory");
            Ok(Request::Print(page))
        } else {
            follows_the_rules(&args)?;
            Ok(Request::Run(Box::new(config(args)?)))
        }
    }
}

fn config(mut args: Args) -> Result<Config, Error> {
    let progress = match (args.progress, args.no_progress) {
        (true, _) => BarMode::Always,
        (_, true) => BarMode::Never,
        _ => BarMode::Auto,
    };
    let style = match (args.raw, args.no_names, args.untagged) {
        (true, _, _) => Style::Raw,
        (_, true, _) => Style::Bare,
        (_, _, true) => Style::Untagged,
        _ => Style::Tagged,
    };
    let ending = match args.zero {
        true => Ending::Nul,
        false => Ending::Newline,
    };
    let layout = Layout { style, ending };
    let walk = WalkPlan {
        follow_links: args.dereference,
        excludes: excludes(&args)?,
        one_file_system: args.one_file_system,
        max_depth: args.max_depth.map(usize::from),
    };
    // A digest size the algorithm has, in every mode: a check's lines
    // must have it too. (`-s 0`, the default, is the largest.)
    let size = match args.size {
        0 => args.algorithm.max_digest_size(),
        size => size,
    };
    let tree = TreeParams::new(args.algorithm, size, args.leaf_size).map_err(usage)?;
    let (directory, threads) = (args.directory.take(), args.cpus.map(usize::from));
    let mode = if args.check {
        Mode::Check(checking(args, tree, walk)?)
    } else if args.combine {
        Mode::Combine {
            listings: args.files,
            layout,
        }
    } else {
        Mode::Hash(hashing(args, tree, layout, walk)?)
    };
    Ok(Config {
        directory,
        threads,
        progress,
        mode,
    })
}

fn checking(args: Args, tree: TreeParams, walk: WalkPlan) -> Result<Checking, Error> {
    // (They override each other: one at most is given.)
    let verbosity = match (args.status, args.quiet, args.warn) {
        (true, ..) => Verbosity::Status,
        (_, true, _) => Verbosity::Quiet,
        (.., true) => Verbosity::Warn,
        _ => Verbosity::Normal,
    };
    let grammar = Grammar {
        untagged_algorithm: args.algorithm,
        // (`-s 0`, the default, is any size.)
        digest_size: (args.size > 0).then_some(args.size),
    };
    // The ledger named, else the one beside the one list (a list from
    // standard input has no place for one), used if it is there unless
    // asked for.
    let asked = args.ledger_reset || args.max_duration.is_some();
    let beside = one_list(&args.files).map(|list| {
        let mut file = list.clone();
        file.push(".ledger");
        file
    });
    let ledger = args.ledger.clone().or(beside).map(|file| Ledgering {
        file: file.into(),
        if_there: args.ledger.is_none() && !asked,
        reset: args.ledger_reset,
        max_duration: args.max_duration,
    });
    let accept =
        Excludes::new(&args.accept).map_err(|error| usage(format!("--accept: {error}")))?;
    let update = args.update.then(|| Update {
        tree,
        stat: args.stat,
        forget_missing: args.forget_missing,
        accept: Box::new(accept),
    });
    let audit = (!args.audit.is_empty()).then(|| Auditing {
        roots: args.audit,
        walk,
        update,
        quick: args.quick,
    });
    Ok(Checking {
        lists: args.files,
        settings: Settings {
            grammar,
            leaf_size: args.leaf_size,
        },
        verbosity,
        every_line: args.verbose || args.leaves,
        json: args.json,
        strict: args.strict,
        ignore_missing: args.ignore_missing,
        slice: args.part,
        audit,
        repair: args.repair,
        ledger,
    })
}

fn hashing(args: Args, tree: TreeParams, layout: Layout, walk: WalkPlan) -> Result<Hashing, Error> {
    // (`--leaf-range` and `--part` do not go together.)
    let selection = (args.leaf_range.map(Selection::Range)).or(args.part.map(Selection::Part));
    let listing = match (args.leaves, args.leaf_count) {
        (_, true) => Listing::Count(selection),
        (true, false) => Listing::Leaves(selection),
        (false, false) => Listing::None,
    };
    let inputs = if args.recursive {
        let roots = match args.files0_from {
            Some(list) => Roots::ListedIn(list),
            None => Roots::Given(args.files),
        };
        Inputs::Walk { roots, walk }
    } else if let (Some(total), Listing::Count(_)) = (args.total, &listing) {
        Inputs::Planned(total)
    } else if let Some(list) = args.files0_from {
        Inputs::ListedIn(list)
    } else if args.files.is_empty() {
        Inputs::Stdin
    } else {
        Inputs::Named(args.files)
    };
    let excerpt_of = args
        .total
        .filter(|_| matches!(listing, Listing::Leaves(Some(_))));
    Ok(Hashing {
        tree,
        inputs,
        layout,
        listing,
        name: args.name,
        excerpt_of,
        stat: args.stat,
        json: args.json,
    })
}

/// A tip for an error that a habit from another tool led to, in place of
/// clap's own (which, for `--verify`, suggests `--version`).
fn habit_tip(mut error: Error, args: &[OsString]) -> Error {
    use clap::error::{ContextKind, ContextValue};
    // Whether one of `flags` (separated by spaces) is given, alone or
    // with `=VALUE`.
    let given = |flags: &str| {
        let given = args.iter().skip(1).take_while(|arg| *arg != "--");
        given.filter_map(|arg| arg.to_str()).any(|arg| {
            let flag = arg.split_once('=').map_or(arg, |(flag, _)| flag);
            flags.split(' ').any(|known| known == flag)
        })
    };
    let checking_only = "--quiet --status --strict -w --warn --ignore-missing";
    let tip = match error.kind() {
        ErrorKind::UnknownArgument if given("-l --bits") => {
            "GNU b2sum's -l counts bits; bt2sum counts the digest size in bytes: -s/--length BYTES (-l 256 is -s 32)"
        }
        ErrorKind::UnknownArgument if given("--verify") => {
            "to verify a list of checksums, use -c/--check LIST"
        }
        ErrorKind::MissingRequiredArgument if given(checking_only) => {
            "--quiet, --status, --strict, --warn and --ignore-missing are options of -c/--check, which verifies a list"
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation if given("-t") => {
            "-t is the leaf size here (-t 1m); sha256sum's -t/--text is accepted as --text"
        }
        ErrorKind::ArgumentConflict if given("-c --check") && given("-r --recursive") => {
            "to walk a tree and check it against a list, use -c --audit DIR LIST"
        }
        _ => return error,
    };
    error.remove(ContextKind::SuggestedArg);
    let tip = ContextValue::StyledStrs(vec![tip.into()]);
    error.insert(ContextKind::Suggested, tip);
    error
}
