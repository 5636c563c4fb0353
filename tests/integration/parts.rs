//! One file hashed by many workers: `--part K/N`, parts read from streams
//! (`--total`, `--name`), planning without the file (`--leaf-count
//! --total`), combined lines that verify without `-t`, and the recipes of
//! docs/leaves.md run as written, GNU parallel's among them. Everything is
//! compared with hashing the whole file.

use std::fs;
use std::time::Duration;

use super::{
    Retried, assert_contains, bt2sum, dir_with, ok_in, output_within, pattern, run, run_in, status,
    stderr, stdout,
};

/// The leaf indices of a listing's leaf lines.
fn leaf_indices(listing: &str) -> Vec<u64> {
    listing
        .lines()
        .filter_map(|line| line.split_once(" leaf=")?.1.split(' ').next()?.parse().ok())
        .collect()
}

/// The number after `key=` in a line.
fn field(line: &str, key: &str) -> u64 {
    let (_, rest) = line
        .split_once(&format!(" {key}="))
        .unwrap_or_else(|| panic!("no {key}= in {line}"));
    rest.split([' ', '\n']).next().unwrap().parse().unwrap()
}

/// Every K/N of files of many sizes and leaf sizes: the parts are the
/// near-equal runs `--leaf-range` lists (the longer first, empty only past
/// the leaf count), and they combine into the whole file's lines.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn parts_are_near_equal_runs_that_combine_to_the_whole() {
    let trees: [(&[&str], usize); 3] = [
        (&["-t", "1k"], 1024),
        (&["-a", "blake2s", "-s", "20", "-t", "100"], 100),
        (&[], 5 << 20),
    ];
    for (tree, leaf) in trees {
        for len in [0, 1, leaf - 1, leaf, leaf + 1, 7 * leaf + 3] {
            let dir = dir_with(&[("f", &pattern(len))]);
            let count = len.div_ceil(leaf) as u64;
            let whole = super::leaves::combined_lines(dir.path(), tree, "f");
            for parts in [1, 2, 3, 5, count + 2] {
                let (each, longer) = (count / parts, count % parts);
                let mut listings = Vec::new();
                let mut next = 0;
                for part in 1..=parts {
                    let part_arg = format!("{part}/{parts}");
                    let listing = ok_in(
                        dir.path(),
                        [tree, &["--leaves", "--part", &part_arg, "f"]].concat(),
                    );
                    let size = each + u64::from(part <= longer);
                    if len == 0 && part == 1 {
                        assert_contains(&listing, " leaves=0 total=0 ");
                    } else {
                        assert_eq!(
                            leaf_indices(&listing),
                            (next..next + size).collect::<Vec<_>>(),
                            "{tree:?} {len} bytes, part {part_arg}"
                        );
                        assert_eq!(listing.lines().count() as u64, size, "{listing}");
                    }
                    let range = format!("{next}..{}", next + size);
                    let ranged = ok_in(
                        dir.path(),
                        [tree, &["--leaves", "--leaf-range", &range, "f"]].concat(),
                    );
                    if !(len == 0 && part == 1) {
                        assert_eq!(listing, ranged, "{tree:?} {len} bytes, part {part_arg}");
                    }
                    let path = dir.path().join(format!("part.{part}"));
                    fs::write(&path, &listing).unwrap();
                    listings.push(path);
                    next += size;
                }
                assert_eq!(next, count);
                listings.reverse();
                let combined = bt2sum().arg("--combine").args(&listings).output_retried();
                let case = format!("{tree:?} {len} bytes, {parts} parts");
                super::assert_said(&combined, &whole, "", 0, &case);
            }
        }
    }
}

/// A part's bytes, from a pipe, a FIFO or a file of their own (mapped, with
/// its bytes placed where the part's leaves are), list the same leaf lines
/// as the part of the whole file, when `--total` gives the
/// file's length and `--name` its name; the plan from `--leaf-count --total`
/// gives exactly those bytes, with no file to read.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn a_parts_bytes_from_a_stream_list_what_the_whole_file_lists() {
    let cases: [(&[&str], usize); 4] = [
        (&["-t", "1k"], 7 * 1024 + 300),
        (&["-t", "1k"], 4 * 1024),
        (&["-a", "blake2s", "-t", "100"], 1001),
        // Leaves over 8 MiB are hashed as their bytes arrive.
        (&["-t", "9437185"], 2 * 9437185 + 5),
    ];
    for (tree, len) in cases {
        let dir = dir_with(&[("f", &pattern(len))]);
        let data = pattern(len);
        let total = len.to_string();
        for selection in [
            ["--part", "1/3"],
            ["--part", "3/3"],
            ["--leaf-range", "1..2"],
            ["--part", "2/2"],
        ] {
            let on_file = ok_in(
                dir.path(),
                [tree, &["--leaves"], &selection, &["f"]].concat(),
            );
            // The plan, from the file and from its length alone.
            let named = ["--total", &total, "--name", "f"];
            let plan = ok_in(
                dir.path(),
                [tree, &["--leaf-count"], &named, &selection].concat(),
            );
            let plan_of_file = [tree, &["--leaf-count"], &selection, &["f"]].concat();
            assert_eq!(ok_in(dir.path(), plan_of_file), plan);
            // The bytes the plan gives, as a ranged GET would return them.
            let offset = field(&plan, "offset") as usize;
            let bytes = &data[offset..offset + field(&plan, "length") as usize];
            let stream_args = [tree, &["--leaves"], &named, &selection].concat();
            let case = format!("{tree:?} {selection:?}");
            // From a pipe.
            let piped = run_in(dir.path(), [&stream_args[..], &["-"]].concat(), bytes);
            super::assert_said(&piped, &on_file, "", 0, &case);
            // From a file of its own, mapped as files are: by name, not in
            // the page cache (read ahead), and as standard input.
            let excerpt = dir.path().join("excerpt");
            fs::write(&excerpt, bytes).unwrap();
            super::evict(&excerpt);
            let from_file = ok_in(dir.path(), [&stream_args[..], &["excerpt"]].concat());
            assert_eq!(from_file, on_file, "{tree:?} {selection:?}");
            let redirected = bt2sum()
                .current_dir(dir.path())
                .args([&stream_args[..], &["-"]].concat())
                .stdin(fs::File::open(&excerpt).unwrap())
                .output_retried();
            assert_eq!(stdout(&redirected), on_file, "{tree:?} {selection:?}");
            // From a FIFO.
            #[cfg(unix)]
            {
                let fifo = dir.path().join("fifo");
                let _ = fs::remove_file(&fifo);
                super::mkfifo(&fifo);
                let child = bt2sum()
                    .current_dir(dir.path())
                    .args([&stream_args[..], &["fifo"]].concat())
                    .spawn_piped();
                fs::write(&fifo, bytes).unwrap();
                let out = output_within(child, Duration::from_secs(60));
                super::assert_said(&out, &on_file, "", 0, &case);
            }
        }
    }
    // Nameless without --name, as standard input's lines are.
    let dir = dir_with(&[("f", &pattern(3000))]);
    let args = "-t 1k --leaves --part 2/2 --total 3000".split(' ');
    let part = stdout(&run_in(dir.path(), args, &pattern(3000)[2048..]));
    let nameless = "BLAKE2b-64 leaf=2 offset=2048 length=952 total=3000 tree=1024 = ";
    assert!(part.starts_with(nameless), "{part}");
    // A part past the end holds no bytes; part 1 of an empty file lists it.
    #[rustfmt::skip]
    let cases = [
        ("--leaves --part 3/3 --total 2000 -t 1k -", ""),
        ("--leaf-count --part 3/3 --total 2000 -t 1k", "BLAKE2b-64 leaves=2 total=2000 tree=1024 offset=2000 length=0\n"),
        ("--leaves --part 1/3 --total 0 --name e -", "BLAKE2b-64 leaves=0 total=0 tree=5242880 (e)\n"),
    ];
    for (args, listed) in cases {
        super::assert_said(&run(args.split(' '), b""), listed, "", 0, args);
    }
}

/// A part of a big file, streamed, is hashed in bounded memory (under a
/// 250 MB address-space limit, 296 MB of it) and lists what the file lists.
#[cfg(unix)]
#[test]
fn a_big_part_from_a_stream_stays_within_bounded_memory() {
    let test = "a_big_part_from_a_stream_stays_within_bounded_memory";
    if !super::leaves::address_space_can_be_limited(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Sparse: 600 MB of zeros that take no room.
    fs::File::create(dir.path().join("f"))
        .unwrap()
        .set_len(600_000_000)
        .unwrap();
    let on_file = ok_in(dir.path(), ["--leaves", "--part", "2/2", "f"]);
    let plan = ok_in(dir.path(), ["--leaf-count", "--part", "2/2", "f"]);
    let length = field(&plan, "length");
    let script = format!(
        r#"ulimit -v 250000
        head -c {length} /dev/zero | "$BT2SUM" --leaves --part 2/2 --total 600000000 --name f -"#
    );
    super::assert_output(&super::shell(dir.path(), &script), &on_file, "", 0);
}

/// A stream shorter or longer than the selection is an error that names
/// both lengths, with status 1 and no leaf line; so is a file of another
/// length, before it is read. A stream with no end is not read forever.
#[test]
fn a_stream_of_another_length_is_an_error_naming_both() {
    let data = pattern(5000);
    let args = "-t 1k --leaves --part 2/3 --total 5000 -".split(' ');
    // Part 2 of 3 of 5 leaves: leaves 2 and 3, bytes 2048..4096.
    let message = |found: &str| {
        let selection = "leaves 2..4 of a 5000-byte file are 2048 bytes";
        format!("bt2sum: -: the input holds {found} bytes, but {selection}\n")
    };
    for (bytes, found) in [
        (&data[2048..4095], "2047"),
        (&data[2048..], "2952"),
        (&data[..0], "0"),
        (&data[2048..2049], "1"),
    ] {
        super::assert_said(&run(args.clone(), bytes), "", &message(found), 1, found);
    }
    let dir = dir_with(&[("excerpt", &data[2048..4000])]);
    let out = run_in(dir.path(), args.clone().take(7).chain(["excerpt"]), b"");
    super::assert_output(&out, "", &message("1952").replace(": -:", ": excerpt:"), 1);
    // Endless: read 64 MiB past the end, then given up.
    let mut child = bt2sum().args(args).spawn_piped();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let block = vec![7u8; 1 << 16];
        while input.write_all(&block).is_ok() {}
    });
    let out = output_within(child, Duration::from_secs(120));
    writer.join().unwrap();
    super::assert_output(
        &out,
        "",
        &message(&format!("more than {}", 2048 + (64 << 20))),
        1,
    );
}

/// `--leaf-count --total` reads nothing, not even a standard input that
/// never ends; `--name` renames one input's lines.
#[test]
fn planning_reads_no_input_and_the_options_go_together() {
    let mut child = bt2sum()
        .args(["--leaf-count", "--part", "2/8", "--total", "40m", "--name"])
        .arg("big file")
        .spawn_piped();
    // Standard input stays open and empty while it runs.
    let _stdin = child.stdin.take();
    let out = output_within(child, Duration::from_secs(60));
    assert_eq!(
        stdout(&out),
        "BLAKE2b-64 leaves=8 total=41943040 tree=5242880 offset=5242880 length=5242880 (big file)\n"
    );
    // (How the options go together: cli::bad_options_are_usage_errors.)
    let dir = dir_with(&[("f", &pattern(10))]);
    // --name renames any one input's lines.
    let out = run_in(dir.path(), ["--name", "g", "f"], b"");
    let expected = ok_in(dir.path(), ["f"]).replace("(f)", "(g)");
    assert_eq!(stdout(&out), expected);
    let out = run_in(dir.path(), ["--name", "g"], &pattern(10));
    assert_eq!(stdout(&out), expected);
}

/// A combined line verifies with `bt2sum -c` whatever leaf size the parts
/// used, without `-t` (and with a `-t` of another size too, as its count
/// line records its own); with the default leaf size it is the one line
/// hashing the file prints.
#[test]
fn combined_lines_verify_without_the_leaf_size() {
    if super::emulated_too_slow("combined_lines_verify_without_the_leaf_size") {
        return;
    }
    let dir = dir_with(&[("f", &pattern(3 * (5 << 20) + 17))]);
    let trees: [&[&str]; 4] = [
        &["-t", "4k"],
        &["-a", "blake2s", "-s", "16", "-t", "1000"],
        &["-t", "64m"],
        &[],
    ];
    for tree in trees {
        let mut parts = Vec::new();
        for part in ["1/3", "2/3", "3/3"] {
            let listing = ok_in(
                dir.path(),
                [tree, &["--leaves", "--part", part, "f"]].concat(),
            );
            let path = dir.path().join(format!("part{}", parts.len()));
            fs::write(&path, listing).unwrap();
            parts.push(path);
        }
        // The line hashing the file prints, and the count line of a leaf
        // size other than the default.
        let combined = run_in(dir.path(), ["--combine".into()].iter().chain(&parts), b"");
        let whole = super::leaves::combined_lines(dir.path(), tree, "f");
        super::assert_said(&combined, &whole, "", 0, &format!("{tree:?}"));
        fs::write(dir.path().join("SUM"), &whole).unwrap();
        // (A list of default-sized lines given another -t fails, as any
        // checksum list does: the user said which leaf size made it.)
        let checks: &[&[&str]] = if tree.is_empty() {
            &[&["-c", "SUM"]]
        } else {
            &[&["-c", "SUM"], &["-c", "-t", "8k", "SUM"]]
        };
        for check in checks {
            let out = run_in(dir.path(), *check, b"");
            let said = [stdout(&out), stderr(&out)].concat();
            assert!(
                said.starts_with("f: OK\n") && status(&out) == 0,
                "{tree:?} {check:?}: {said}"
            );
        }
        // And a damaged file fails (a second flip of the bit mends it).
        super::rot(&dir.path().join("f"), [4000]);
        let out = run_in(dir.path(), ["-c", "SUM"], b"");
        assert_eq!(status(&out), 1, "{tree:?}");
        super::rot(&dir.path().join("f"), [4000]);
    }
    // Untagged, of nameless standard input: the line hashing it untagged
    // prints, and a count line naming `-` as that line does; both check
    // standard input.
    let data = pattern(5000);
    let listing = run(["-t", "1k", "--leaves"], &data);
    let combined = run(["--combine", "--untagged"], &listing.stdout);
    let text = stdout(&combined);
    let untagged = stdout(&run(["-t", "1k", "--untagged"], &data));
    assert!(untagged.ends_with("  -\n"), "{untagged}");
    let count = "BLAKE2b-64 leaves=5 total=5000 tree=1024 (-)\n";
    assert_eq!(text, untagged + count);
    fs::write(dir.path().join("U"), &text).unwrap();
    let out = run_in(dir.path(), ["-c", "--strict", "--verbose", "U"], &data);
    super::assert_output(&out, "-: OK\n-: leaf count: OK\n", "", 0);
}

/// The count line of a selection is read back: check mode checks the
/// file's length by it, and `--combine` takes it beside the leaf lines.
#[test]
fn count_lines_of_a_selection_are_checked_and_combined() {
    let dir = dir_with(&[("f", &pattern(5000))]);
    let mut listing = String::new();
    for part in ["1/2", "2/2"] {
        for kind in ["--leaf-count", "--leaves"] {
            listing += &ok_in(dir.path(), ["-t", "1k", kind, "--part", part, "f"]);
        }
    }
    let count = "BLAKE2b-64 leaves=5 total=5000 tree=1024 offset=0 length=3072 (f)\n";
    assert!(listing.starts_with(count), "{listing}");
    let out = run(["--combine"], listing.as_bytes());
    assert_eq!(
        stdout(&out),
        super::leaves::combined_lines(dir.path(), &["-t", "1k"], "f")
    );
    fs::write(dir.path().join("L"), &listing).unwrap();
    let verbose = || run_in(dir.path(), ["-c", "--verbose", "L"], b"");
    let out = verbose();
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    super::assert_starts(&stdout(&out), "f: leaf count: OK\nf: leaf 0: OK\n");
    fs::write(dir.path().join("f"), pattern(5001)).unwrap();
    let out = verbose();
    assert_eq!(status(&out), 1);
    super::assert_starts(&stdout(&out), "f: leaf count: FAILED\n");
    // By default, one line for the file (the two parts are one listing of
    // it, checked in one pass), then its failing lines.
    let out = run_in(dir.path(), ["-c", "L"], b"");
    assert_eq!(
        stdout(&out),
        "f: FAILED\nf: leaf count: FAILED\nf: leaf count: FAILED\nf: leaf 4: FAILED\n"
    );
}

/// The recipes of docs/leaves.md, each run as it is written there, with only
/// what a single machine lacks stood in for: the ssh hosts by this machine
/// (`-S :`), the scheduler's variables set as Slurm and Kubernetes set them,
/// shared storage by a local directory, and the object store by a `curl`
/// that answers ranged GETs from the local file. Each ends with the line
/// hashing the whole file prints. Every recipe there is run.
#[cfg(unix)]
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn the_recipes_of_the_documentation_run_as_written() {
    if super::emulated("the_recipes_of_the_documentation_run_as_written") {
        return;
    }
    let has_parallel = std::process::Command::new("parallel")
        .arg("--version")
        .output();
    let has_parallel = has_parallel.is_ok_and(|out| out.status.success());
    assert!(
        has_parallel,
        "GNU parallel is needed (scripts/test-deps installs it)"
    );
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/leaves.md")).unwrap();
    // (The recipe that mends leaves is run by the repair tests.)
    let recipes: Vec<_> = shell_blocks(&docs)
        .into_iter()
        .filter(|(title, _)| title != "Mending damaged leaves over HTTP")
        .collect();
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bt2sum"), bin.path().join("bt2sum")).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    // Seven leaves of 5 MiB and a bit: eight parts, the last one empty;
    // and an empty file, of which only part 1 says anything.
    for size in [6 * (5 << 20) + 12345, 0] {
        let ran = run_recipes(&recipes, &path, size);
        assert_eq!(
            ran,
            [
                "GNU parallel, local workers",
                "GNU parallel over ssh",
                "xargs, local workers",
                "Slurm job array",
                "Kubernetes indexed Job, each pod",
                "S3 or MinIO, ranged GETs",
            ]
        );
    }
}

/// Runs each recipe on a `disk.img` of `size` bytes, with `path` as PATH;
/// the titles of those run.
#[cfg(unix)]
fn run_recipes(recipes: &[(String, String)], path: &str, size: usize) -> Vec<String> {
    let data = tempfile::tempdir().unwrap();
    let image = data.path().join("disk.img");
    fs::write(&image, pattern(size)).unwrap();
    let whole = ok_in(data.path(), ["disk.img"]);
    let mut ran = Vec::new();
    for (title, script) in recipes {
        let dir = tempfile::tempdir().unwrap();
        fs::hard_link(&image, dir.path().join("disk.img")).unwrap();
        let local = script.replace("/shared/", "").replace("/data/", "");
        let driver = match title.as_str() {
            "GNU parallel, local workers" | "xargs, local workers" => local,
            "GNU parallel over ssh" => local.replace("-S host1,host2,host3", "-S :"),
            "Slurm job array" => {
                fs::write(dir.path().join("hash-part.sh"), &local).unwrap();
                "for id in 1 2 3 4 5 6 7 8; do
                   SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=8 sh hash-part.sh > part.$id || exit 1
                 done
                 bt2sum --combine part.*"
                    .to_string()
            }
            "Kubernetes indexed Job, each pod" => {
                fs::create_dir(dir.path().join("parts")).unwrap();
                fs::write(dir.path().join("pod.sh"), &local).unwrap();
                "for index in 0 1 2 3 4 5 6 7; do
                   JOB_COMPLETION_INDEX=$index sh pod.sh || exit 1
                 done
                 bt2sum --combine parts/part.*"
                    .to_string()
            }
            "S3 or MinIO, ranged GETs" => {
                // curl -sf -r FIRST-LAST [-D - -o /dev/null] URL, answered
                // from disk.img as a server answers a ranged GET: the
                // headers (206, or 416 past the end), or the bytes. (BSD
                // `wc` pads its count with blanks: `$((...))` drops them.)
                let stand_in = r#"url=https://objects.example/bucket/disk.img
                    curl() {
                      range=$3 total=$(($(wc -c < disk.img)))
                      first=${range%-*} last=${range#*-}
                      if [ "$4" = "-D" ]; then
                        if [ "$first" -lt "$total" ]; then
                          printf 'HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %s-%s/%s\r\n\r\n' \
                            "$first" "$last" "$total"
                        else
                          printf 'HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */%s\r\n\r\n' "$total"
                        fi
                      else
                        tail -c +$((first + 1)) disk.img | head -c $((last - first + 1))
                      fi
                    }
                    "#;
                format!("{stand_in}{local}")
            }
            other => panic!("docs/leaves.md has a recipe this test does not know: {other}"),
        };
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&driver)
            .current_dir(dir.path())
            .env("PATH", path)
            .output()
            .unwrap();
        super::assert_said(
            &out,
            &whole,
            "",
            0,
            &format!("{title}, {size} bytes:\n{driver}"),
        );
        ran.push(title.clone());
    }
    ran
}

/// The ```sh blocks of a Markdown text, each with its title: its first
/// comment line (after a `#!` line).
#[cfg(unix)]
pub fn shell_blocks(text: &str) -> Vec<(String, String)> {
    let title = |body: &str| {
        let title = body.lines().find_map(|line| line.strip_prefix("# "));
        title
            .expect("a recipe starts with a comment naming it")
            .to_string()
    };
    let blocks = super::fenced_blocks(text, "```sh").into_iter();
    blocks.map(|body| (title(&body), body)).collect()
}

/// The last leaves of the longest input a leaf index can number (2^64 - 1
/// one-byte leaves), as an excerpt saved to a file (mapped, read ahead)
/// and as a stream: the same leaf lines, whose digests are Python
/// hashlib's for those node offsets (no sum of leaf indices overflows).
#[test]
fn the_last_leaves_before_two_to_the_64_are_listed_from_a_file_and_a_stream() {
    const TOTAL: &str = "18446744073709551615";
    let dir = tempfile::tempdir().unwrap();
    // hashlib.blake2b(b"a", digest_size=64, fanout=0, depth=2, leaf_size=1,
    // node_offset=i, node_depth=0, inner_size=64, last_node=(i == 2^64 - 2))
    let last = "94ae88cf84ead79b2e2311590d04a37f662693b47b31effce9fa0f28fa2c0b1e534bad64d2f7fdf22c6f2aa46152195c4d45ce942f87438281ba3e003ccb5d90";
    // The same for b"b" at node offset 2^64 - 3, not the last node.
    let before_last = "b22e6b039cc33d36f04a8071f16063f9f1b45a4a8af73027983b461f6749f144c64ca2ddee063304dc41ee893b4edb4c55aef7e34b3e42432dc42efad4cfe8f8";
    let line = |leaf: &str, digest: &str| {
        format!(
            "BLAKE2b-64 leaf={leaf} offset={leaf} length=1 total={TOTAL} tree=1 (x) = {digest}\n"
        )
    };
    let (at_2, at_3) = ("18446744073709551614", "18446744073709551613");
    let cases = [
        (format!("{at_2}.."), &b"a"[..], line(at_2, last)),
        (
            format!("{at_3}.."),
            &b"ba"[..],
            line(at_3, before_last) + &line(at_2, last),
        ),
    ];
    for (range, bytes, expected) in cases {
        fs::write(dir.path().join("part"), bytes).unwrap();
        #[rustfmt::skip]
        let args = ["-t", "1", "--leaves", "--leaf-range", &range, "--total", TOTAL, "--name", "x"];
        let from_file = run_in(dir.path(), [&args[..], &["part"]].concat(), b"");
        super::assert_said(&from_file, &expected, "", 0, &range);
        let from_stream = run_in(dir.path(), [&args[..], &["-"]].concat(), bytes);
        super::assert_said(&from_stream, &expected, "", 0, &range);
    }
}
