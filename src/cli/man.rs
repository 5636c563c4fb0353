//! The manual page: clap's rendering of the options, with the synopsis
//! and the examples written here, and the sections of man.txt (the exit
//! statuses, the line formats...).

use clap::CommandFactory;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, roman};

use super::args::{Args, EXAMPLES};

/// The sections after OPTIONS, before EXAMPLES.
const SECTIONS: &str = include_str!("man.txt");

/// The page, as roff.
pub fn page() -> std::io::Result<Vec<u8>> {
    let man = Man::new(Args::command());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    // (clap_mangen's synopsis would list every option.)
    page.extend_from_slice(b".SH SYNOPSIS\n\\fBbt2sum\\fR [OPTIONS] [\\fIFILE\\fR]...\n");
    // clap renders the doc comments as they are written, Markdown and all.
    let mut from_comments = Vec::new();
    man.render_description_section(&mut from_comments)?;
    man.render_options_section(&mut from_comments)?;
    page.extend(code_in_bold(&from_comments));
    let mut sections = Roff::new();
    // Each section of man.txt: a `# TITLE` line, then its body.
    for text in SECTIONS.trim_start_matches("# ").split("\n# ") {
        let (title, body) = text.split_once('\n').unwrap_or((text, ""));
        section(&mut sections, title, body.trim_end());
    }
    // The examples, as `--help` ends with them, each whole on its line.
    let examples: Vec<&str> = (EXAMPLES.lines().skip(1))
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect();
    sections.control("SH", ["EXAMPLES"]).control("nf", []);
    sections.text([roman(examples.join("\n"))]);
    sections.control("fi", []);
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
    for block in body.split("\n\n") {
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
