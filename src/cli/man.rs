//! The manual page: clap's rendering of the options, with the synopsis,
//! the exit statuses, the line formats and the examples written here.

use clap::CommandFactory;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use super::args::{Args, EXAMPLES};

/// The page, as roff.
pub fn page() -> std::io::Result<Vec<u8>> {
    let man = Man::new(Args::command());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    let mut synopsis = Roff::new();
    synopsis.control("SH", ["SYNOPSIS"]).text([
        bold("bt2sum"),
        roman(" [OPTIONS] ["),
        italic("FILE"),
        roman("]..."),
    ]);
    synopsis.to_writer(&mut page)?;
    // clap renders the doc comments as they are written, Markdown and all.
    let mut from_comments = Vec::new();
    man.render_description_section(&mut from_comments)?;
    man.render_options_section(&mut from_comments)?;
    page.extend(code_in_bold(&from_comments));
    let mut sections = Roff::new();
    for (title, body) in SECTIONS {
        section(&mut sections, title, body);
    }
    section(
        &mut sections,
        "EXAMPLES",
        EXAMPLES.strip_prefix("Examples:\n").unwrap_or(EXAMPLES),
    );
    sections.to_writer(&mut page)?;
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// Roff with each Markdown code span of a line (`` `--tag` ``) set in bold
/// instead: a manual page shows literal text in bold, not in backticks. A
/// line's unpaired last backtick is kept.
fn code_in_bold(roff: &[u8]) -> Vec<u8> {
    let mut bold = Vec::with_capacity(roff.len());
    for line in roff.split_inclusive(|&byte| byte == b'\n') {
        let spans: Vec<&[u8]> = line.split(|&byte| byte == b'`').collect();
        let paired = spans.len() % 2 == 1;
        for (index, span) in spans.iter().enumerate() {
            if index > 0 {
                bold.extend_from_slice(match (paired, index % 2) {
                    (false, _) if index == spans.len() - 1 => b"`",
                    (_, 1) => b"\\fB",
                    _ => b"\\fR",
                });
            }
            bold.extend_from_slice(span);
        }
    }
    bold
}

/// Adds a section whose body is paragraphs (separated by blank lines) and
/// preformatted blocks (every line indented by two spaces), which keep their
/// lines as written.
fn section(roff: &mut Roff, title: &str, body: &str) {
    roff.control("SH", [title]);
    for mut block in body.split("\n\n") {
        // (A line that heads an indented block is a paragraph of its own.)
        if let Some((head, rest)) = block.split_once("\n")
            && !head.starts_with("  ")
            && rest.lines().all(|line| line.starts_with("  "))
        {
            roff.control("PP", []).text([roman(head)]);
            block = rest;
        }
        if block.lines().all(|line| line.starts_with("  ")) {
            roff.control("PP", []).control("RS", []).control("nf", []);
            let text: Vec<&str> = block.lines().map(|line| &line[2..]).collect();
            roff.text([roman(text.join("\n"))]);
            roff.control("fi", []).control("RE", []);
        } else {
            roff.control("PP", [])
                .text([roman(block.replace('\n', " "))]);
        }
    }
}

/// The sections after OPTIONS.
const SECTIONS: [(&str, &str); 8] = [
    (
        "OUTPUT",
        "One line per input, in argument order, each written as soon as its input \
and every input before it are done:

  BLAKE2b-64 (NAME) = HEX      a named file, and -
  BLAKE2b-64 = HEX             standard input when no FILE is given
  HEX  NAME                    with --untagged
  BLAKE2b-64 size=N mtime=S.NS tree=L (NAME)
                               with --stat, after a file's checksum line

The number after the dash is the digest size in bytes. A stat line gives \
the file's size, its modification time (seconds since 1970 and nine \
digits of nanoseconds) and the leaf size: check mode then tells an edit \
(CHANGED) from damage (FAILED), and needs no -t. With --json, one JSON \
object a line instead, each with a type, and a summary last \
(docs/json.md). A name holding a \
newline, carriage return or backslash is escaped as GNU tools do: the line \
starts with a backslash, and in the name a backslash is written as two, a \
newline as \\n and a carriage return as \\r. Names are written as the bytes \
they are. Ctrl-C (SIGINT), SIGTERM and SIGHUP write out the lines already \
finished, whole, then end bt2sum by the same signal (status 130 for Ctrl-C, \
143 for SIGTERM, 129 for SIGHUP); a second one ends it at once.",
    ),
    (
        "EXIT STATUS",
        "0: every input was hashed; with --check, every listed file was read and \
matched (and, with --strict, no line was improperly formatted).

1: an input could not be read or changed while it was read; with --check, a \
listed file did not match or could not be read, a list could not be read or \
had no properly formatted line, or the check was cut short; with --combine, \
the listings do not form one complete file; standard output or standard \
error could not be written, or standard input was read but had been closed \
(bt2sum: -: Bad file descriptor). The other inputs are still hashed.

2: bad usage (an unknown option, a value out of range, options that do not \
apply together): nothing was done.

130, 143, 129: ended by Ctrl-C (SIGINT), SIGTERM or SIGHUP, after the \
finished lines were written.

With --audit, 1 also if a file is NEW, MOVED, MISSING or CHANGED; with \
--update, only while damaged (FAILED), unreadable or MISSING files remain \
in the list, the rest being updated. With --part, the status is the \
slice's. With --repair-from, a damaged file mended counts as verified: 0 \
if every file now verifies.

A closed pipe on standard output (bt2sum * | head -1) ends a hashing run \
quietly, with status 0; it ends check mode at once too, quietly, with status \
1: the check did not finish.",
    ),
    (
        "CHECK LIST FORMAT",
        "bt2sum -c reads each LIST (standard input when none is given, or for -) \
and recomputes every file it names, relative to the current directory. \
Accepted lines:

  BLAKE2b-N (NAME) = HEX    N in bytes, 1 to 64; HEX exactly 2N hex digits
  BLAKE2s-N (NAME) = HEX    N in bytes, 1 to 32
  HEX  NAME                 GNU style (two spaces): the algorithm comes from -a,
  HEX *NAME                 the digest size is half the number of hex digits
  BLAKE2b-N = HEX           standard input's, with no name

HEX is all lowercase or all uppercase. Either form may start with the GNU \
escape (a backslash) and end in CRLF. Blank lines and lines starting with # \
are skipped and never counted. The leaf and count lines of a listing (see \
LEAF LISTINGS) are checked too. With -s N only N-byte digests are read. \
Anything else, including leading spaces and single-space separators, is \
improperly formatted. The leaf size is not in a checksum line: it is -t \
(default 5m), so a list made with -t 64k must be checked with -t 64k. A hint \
on standard error follows where the evidence points to a cause: every line \
of a list of several failed (another leaf size, or another tool), or lines \
of another tool's shape (GNU b2sum --tag, sha256sum --tag, b3sum --tag, 64 \
hex digits of BLAKE3 or SHA-256). A single failing line gets none: it is \
damage. --untagged, --tag, -b and --text are accepted and change nothing.

A checksum line followed by the leaf lines of the same file is checked in \
one pass over the file with the listing's leaf size (tree= wins over -t); \
leaf lines alone hash only the leaves they list. A file of another length \
than total= fails every leaf line, and says so.

Per listed file, standard output gets NAME: OK, NAME: FAILED, or NAME: \
FAILED open or read; then, for a leaf listing, NAME: leaf I: FAILED for each \
failing leaf. --verbose (or --leaves with --check) prints a verdict for \
every line instead: NAME: leaf I: OK, NAME: leaf count: OK. A name holding a backslash or a control byte is shown \
escaped after a leading backslash (\\n, \\r, \\\\, \\xHH). After each list, \
standard error gets GNU's warnings for the non-zero counts of lines: N lines \
are improperly formatted, N listed files could not be read, N computed \
checksums did NOT match. Digests are compared in constant time.",
    ),
    (
        "LEAF LISTINGS",
        "--leaves prints, after a file's checksum line, one line per leaf; a file \
with no leaves gets a count line, the line --leaf-count prints:

  TAG leaf=I offset=O length=N total=T tree=L (NAME) = HEX
  TAG leaves=C total=T tree=L (NAME)
  TAG leaves=C total=T tree=L offset=X length=Y (NAME)

TAG is as in checksum lines, I the leaf index from 0, O and N the leaf's \
bytes, T the file's length (a complete listing has C = ceil(T / L) leaves), \
L the leaf size and HEX the leaf's digest. Standard input read because no \
FILE was given has no (NAME) part. The third form is --leaf-count's with a \
selection: the selected leaves' bytes.

Machines share the work on one big file by selecting its leaves: \
--leaf-range A..B lists only leaves A to B-1, and --part K/N the K-th of N \
near-equal runs of leaves (from 1), reading only their bytes; a selection \
past the end prints nothing, and one that takes the first leaf of an empty \
file its leaves=0 line. With --total T, the input holds only the selected \
leaves' bytes of a T-byte file (a ranged download, piped or saved), and \
must be exactly that long; --name NAME gives its lines the file's name. \
--leaf-count --total T reads no input and plans: with a selection, its \
count line gives the bytes to fetch. --combine reads the partial listings, \
in any order, and prints the file's checksum line, refusing gaps, clashes, \
listings of different files and lines it does not know; made with another \
leaf size than the default, the line is followed by the file's count line, \
which tells check mode the leaf size.",
    ),
    (
        "AUDITS",
        "bt2sum -c --audit DIR LIST walks DIR as -r does (excludes and -L too) and \
classes every file under it against the lists: NAME: OK and NAME: FAILED (or \
CHANGED, with stat lines) for a listed file, then, in walk order, NAME: NEW \
for a file no list names and NAME: MOVED from OLD for a new file whose digest \
is that of exactly one missing entry and no other new file (never an empty \
file), then NAME: MISSING for a listed file that is gone. Names match as the \
lists spell them, relative to the current directory (./a and a are one \
file); -C DIR acts as if started in DIR. The lists are never new. Counts on \
standard error after the lists' summaries: N files are new, N files were \
moved, N listed files are missing; then one line counting every class \
(audited N files: N OK, ...). With --quick, a listed file whose size and \
modification time are its stat line's is not read: NAME: OK (not read).

--update (with one LIST) rewrites it atomically for deliberate changes only: \
NEW files added, MOVED ones renamed, CHANGED ones hashed again; FAILED and \
MISSING entries kept as they were, unless named: --accept PATTERN hashes \
again the failing files it matches, --forget-missing drops the lines of \
missing files. Memory stays bounded: what the audit keeps beyond 16 MiB a \
kind goes to temporary files.",
    ),
    (
        "SCRUB AND REPAIR",
        "bt2sum -c --part K/N checks the K-th of N slices of what the lists \
describe, balanced by bytes: a file listed with a checksum line alone is one \
unit, never split; each leaf of a leaf listing is one unit. Slices 1 to N \
check every file and leaf once; a slice reads only its own bytes, and its \
summary and status are its own. The lists must be files (they are read \
twice). With --audit, slice 1 walks the directories and reports NEW, MOVED \
and MISSING files. A nightly scrub that covers a list once a week: \
--part \"$(date +%u)/7\".

bt2sum -c --max-duration DURATION keeps a ledger beside the list \
(LIST.ledger, or --ledger FILE): when each unit was last verified to match. \
Each run verifies the units least recently verified first, those never \
verified before all, stops when the time is up, and ends with the bytes by \
the age of their last proof; the next run goes on from there, inside a big \
file too. Only what matched is recorded; a damaged, foreign or newer ledger \
is refused (--ledger-reset starts it afresh).

bt2sum -c --repair-from PATH mends each failing leaf of a leaf listing from \
a good copy (PATH, or the file of the same name under the directory PATH): \
the leaf is read from the copy and verified, written in place and synced, \
read back and verified again: NAME: leaf I: REPAIRED, once every file of \
the list is checked. Bytes that do not \
verify are never written (NAME: leaf I: FAILED (the copy's leaf does not \
match either)); good leaves are never written; a file cut short is \
extended only with leaves that verify; a longer file is cut to its listed \
length only with --repair-truncate. Counts on standard error: N damaged \
leaves were repaired, N damaged leaves could not be repaired. A missing \
file is restored whole from a copy that matches its checksum line: NAME: \
RESTORED (not with --audit, where it may have moved). The status is 0 only \
if every file now verifies.",
    ),
    (
        "ENVIRONMENT",
        "BT2SUM_ARCHLEVEL selects the constant-time comparator that check mode \
uses: portable, scalar or baseline (SSE2), as FreeBSD's ARCHLEVEL does; \
x86-64-v2, x86-64-v3 and x86-64-v4 mean baseline. The default is baseline on \
x86_64 and portable elsewhere, where every name means portable; an unknown \
name is ignored.\n\n\
BT2SUM_HASH_KERNEL=crate hashes every leaf with the blake2b_simd and \
blake2s_simd crates. Unset (or any other value), leaves are hashed by the \
fastest kernel the CPU runs: bt2sum's own AVX-512 kernels (8 BLAKE2b or 16 \
BLAKE2s leaves at once) on x86_64 CPUs with AVX-512F, the crates elsewhere. \
Both give the same digests.\n\n\
TMPDIR is where leaf listings of many big files keep the leaf digests that \
do not fit in memory, and audits what they keep of long lists (default \
/tmp).",
    ),
    (
        "SEE ALSO",
        "b2sum(1), sha256sum(1), b3sum(1). README.md and the docs directory of \
bt2sum's source and of its release archives describe the tree hash, check \
mode (docs/check.md), audits (docs/audit.md), JSON (docs/json.md), leaf \
listings and many machines (docs/leaves.md), \
options, directories and the progress bar (docs/usage.md), speed, \
platforms and the constant-time comparator in full.",
    ),
];

#[cfg(test)]
mod tests {
    use super::code_in_bold;

    #[test]
    fn code_spans_become_bold() {
        let table: [(&str, &str); 6] = [
            ("plain\n", "plain\n"),
            (
                "as `b2sum \\-\\-tag` prints\n",
                "as \\fBb2sum \\-\\-tag\\fR prints\n",
            ),
            ("`a` and `b`\n", "\\fBa\\fR and \\fBb\\fR\n"),
            // Spans never cross lines; a lone backtick stays.
            ("one ` here\nand `x`\n", "one ` here\nand \\fBx\\fR\n"),
            ("`a` then ` alone\n", "\\fBa\\fR then ` alone\n"),
            ("no newline `at` the end", "no newline \\fBat\\fR the end"),
        ];
        for (roff, expected) in table {
            let bold = code_in_bold(roff.as_bytes());
            assert_eq!(String::from_utf8(bold).unwrap(), expected, "{roff:?}");
        }
    }
}
