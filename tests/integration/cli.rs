//! The hashing command line through the built binary: output lines, inputs of
//! every kind, errors and exit statuses, the Go spellings.

use std::fs;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use super::{
    HELLO, HELLO_B64, Retried, assert_contains, assert_output, assert_said, bt2sum, digest,
    dir_with, ok_in, pattern, printed, read_error, run, run_in, status, stderr, stdout,
};
#[cfg(unix)]
use super::{mkfifo, output_within};

const HELLO_B40: &str =
    "919f330a1b4a3a02aced735e7675905c159b99e07e0c8aa087d0327b26e4d3aa8323bc82962b8e8e";
const EMPTY_B64: &str = "067b63c7d8d79ccfb6efc6dbdd97f96fa5c93ce37ad1cec943db3f90b125c3edcc95aa5d82b8e285aee4ca2074d3cf757a6023a750c6b22c7c22b69cac8af4d4";
const EMPTY_S32: &str = "008f3a5f54ab81aead5190f59d8870320e59e0e08934449eec0d45f958afbd2e";

/// Known answers, from standard input and of a named file.
#[test]
fn known_answers_from_standard_input_and_named_files() {
    let dir = dir_with(&[("hello.txt", HELLO)]);
    let named = format!("BLAKE2b-64 (hello.txt) = {HELLO_B64}\n");
    #[rustfmt::skip]
    let table = [
        (&[][..], HELLO, format!("BLAKE2b-64 = {HELLO_B64}\n")),
        (&["-s", "40"], HELLO, format!("BLAKE2b-40 = {HELLO_B40}\n")),
        (&[], b"", format!("BLAKE2b-64 = {EMPTY_B64}\n")),
        (&["-a", "blake2s"], b"", format!("BLAKE2s-32 = {EMPTY_S32}\n")),
        (&["--untagged"], HELLO, format!("{HELLO_B64}  -\n")),
        (&["--untagged", "-a", "blake2s"], b"", format!("{EMPTY_S32}  -\n")),
        // b3sum's spellings of --cpus and -s.
        (&["--num-threads", "1", "--length", "40"], HELLO, format!("BLAKE2b-40 = {HELLO_B40}\n")),
        (&["hello.txt", "-"], HELLO, format!("{named}BLAKE2b-64 (-) = {HELLO_B64}\n")),
        (&["--untagged", "hello.txt"], b"", format!("{HELLO_B64}  hello.txt\n")),
        // The largest leaf size, with the smallest digest (as Python's hashlib has it).
        (&["-t", "4294967295", "-s", "1"], HELLO, "BLAKE2b-1 = 91\n".into()),
    ];
    for (args, input, line) in table {
        assert_said(
            &run_in(dir.path(), args, input),
            &line,
            "",
            0,
            &format!("{args:?}"),
        );
    }
    let out = run(["-t", "4096"], &[0; 6000]);
    assert!(stdout(&out).ends_with(" = 724b5876d9120855dcf220ee7815a697c6559575aa79d9e2b9f63f06c9f22e532fc32bf356ef1ab26ff776ea960edeb31c54769460f87489f59ae8045122705d\n"));
}

#[test]
fn a_trickling_pipe_gives_the_file_digest() {
    // 12 MiB + 3: three leaves, read from a pipe written in small pieces.
    let data = pattern((12 << 20) + 3);
    let dir = dir_with(&[("data", &data)]);
    let expected = ok_in(dir.path(), ["data"]);
    let mut child = bt2sum().spawn_piped();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut rest = &data[..];
        let mut step = 0;
        while !rest.is_empty() {
            let piece = [1, 7, 512, 4093, 65536, 300_000][step % 6].min(rest.len());
            stdin.write_all(&rest[..piece]).unwrap();
            stdin.flush().unwrap();
            rest = &rest[piece..];
            step += 1;
            if step % 50 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(digest(&stdout(&out)), digest(&expected));
}

/// Standard input is hashed as the file it is (big enough to be mapped,
/// with several windows) or the pipe it is, and read once: a second `-`
/// finds it at its end, whether the file was mapped or read.
#[test]
fn standard_input_is_hashed_as_that_file_and_read_once() {
    let data = pattern((45 << 20) + 11);
    let dir = dir_with(&[("data", &data)]);
    let path = dir.path().join("data");
    let named = digest(&stdout(&bt2sum().arg(&path).output_retried()));
    let from_file = |args: &[&str]| {
        let file = fs::File::open(&path).unwrap();
        bt2sum().args(args).stdin(file).output_retried()
    };
    assert_eq!(digest(&stdout(&from_file(&[]))), named);
    assert_eq!(digest(&stdout(&run::<[&str; 0], _>([], &data))), named);
    for out in [run(["-", "-"], &data), from_file(&["-", "-"])] {
        let lines: Vec<String> = stdout(&out).lines().map(digest).collect();
        assert_eq!(lines, [named.clone(), EMPTY_B64.to_string()]);
    }
}

/// FIFOs are read when their turn comes, whatever the number of threads,
/// and no pool thread waits for a writer: three fed one after the other by
/// one writer, as a script would; and one behind standard input that its
/// writer feeds first (as `tee` to several pipes may): a stream waits for
/// its own writer only, and the inputs behind it are opened meanwhile, so
/// neither waits for the other.
#[cfg(unix)]
#[test]
fn fifos_are_read_in_turn_and_opened_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c", "fifo"] {
        mkfifo(&dir.path().join(name));
    }
    let data = pattern(3 << 20);
    let hashed = digest(&stdout(&run::<[&str; 0], _>([], &data)));
    let line = |name: &str, digest: &str| format!("BLAKE2b-64 ({name}) = {digest}\n");
    let in_turn = ["a", "b", "c"].map(|name| line(name, &hashed)).concat();
    let behind = line("-", HELLO_B64) + &line("fifo", HELLO_B64);
    let missing = "bt2sum: small-before: No such file or directory\n";
    // The arguments, the inputs written in turn, their bytes, and what
    // bt2sum says.
    #[rustfmt::skip]
    let cases = [
        (&["small-before", "a", "b", "c"][..], &["a", "b", "c"][..], &data[..], in_turn, missing, 1),
        (&["-", "fifo"], &["fifo", "-"], HELLO, behind, "", 0),
    ];
    for cpus in ["1", "2"] {
        for (args, inputs, bytes, out, err, code) in &cases {
            let mut child = bt2sum()
                .current_dir(dir.path())
                .args(["--cpus", cpus])
                .args(*args)
                .spawn_piped();
            let (dir, mut stdin) = (dir.path().to_path_buf(), child.stdin.take().unwrap());
            let (inputs, bytes) = (inputs.to_vec(), bytes.to_vec());
            let writer = std::thread::spawn(move || {
                for input in inputs {
                    match input {
                        "-" => stdin.write_all(&bytes).unwrap(),
                        name => fs::write(dir.join(name), &bytes).unwrap(),
                    }
                }
            });
            let said = output_within(child, Duration::from_secs(60));
            writer.join().unwrap();
            assert_said(&said, out, err, *code, &format!("--cpus {cpus} {args:?}"));
        }
    }
}

/// (Unix: file modes and uids.)
#[cfg(unix)]
#[test]
fn unreadable_file_is_an_error() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let test = "unreadable_file_is_an_error";
    let dir = tempfile::tempdir().unwrap();
    // Open to all (as the user below, too) but the secret.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    for (name, mode) in [("open", 0o644), ("secret", 0o000)] {
        fs::write(dir.path().join(name), HELLO).unwrap();
        fs::set_permissions(dir.path().join(name), fs::Permissions::from_mode(mode)).unwrap();
    }
    // Root reads any file: bt2sum runs as a user whom the mode denies.
    let user = match super::ux::unprivileged(dir.path(), "open") {
        Ok(user) => user,
        Err(why) => {
            // Linux's /proc/self/mem cannot be read at offset 0 by anyone:
            // an unreadable file all the same, though not for its mode.
            let mem = std::path::Path::new("/proc/self/mem");
            if !mem.exists() {
                super::skip(test, &why);
                return;
            }
            eprintln!(
                "{test}: {why}; {} is read in place of a file's mode",
                mem.display()
            );
            let out = bt2sum().arg(mem).output_retried();
            assert_eq!(status(&out), 1);
            assert_contains(&stderr(&out), "bt2sum: /proc/self/mem: ");
            return;
        }
    };
    let mut command = bt2sum();
    command.current_dir(dir.path()).arg("secret");
    if let Some(user) = user {
        command.uid(user).gid(user);
    }
    assert_output(
        &command.output_retried(),
        "",
        "bt2sum: secret: Permission denied\n",
        1,
    );
}

/// Options that are malformed, out of range, unknown, or without meaning
/// in a mode are usage errors (status 2, nothing done, a message saying
/// why), never accepted and ignored; habits from other tools meet a tip that
/// says what bt2sum does instead. No usage error shows `--version`.
#[test]
fn bad_options_are_usage_errors() {
    let needs_check = "required arguments were not provided:\n  --check\n";
    let conflict = "cannot be used with";
    let check_options = "tip: --quiet, --status, --strict, --warn and --ignore-missing are options \
                         of -c/--check";
    let range_or_part = "<--leaf-range <A..B>|--part <K/N>|--leaf-count>";
    let update_one = "--update rewrites one list: give one LIST, a file";
    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["-a", "blake2x"], "invalid value 'blake2x'"),
        (&["-s", "65"], "allowed 1 to 64"),
        (&["-a", "blake2s", "-s", "33"], "allowed 1 to 32"),
        (&["-s", "-1"], "-1"),
        (&["-t", "0"], "from 1 byte to 4294967295 bytes"),
        (&["-t", "4g"], "from 1 byte to 4294967295 bytes"),
        (&["--cpus", "0"], "0 is not in 1..=1024"),
        (&["--cpus", "1025"], "1025 is not in 1..=1024"),
        (&["-cpus", "0"], "0 is not in 1..=1024"),
        (&["-c", "-s", "65"], "digest size 65 is out of range"),
        (&["-c", "-a", "blake2s", "-s", "33"], "allowed 1 to 32"),
        (&["--bogus"], "unexpected argument"),
        // Options of check mode need it.
        (&["--quiet"], needs_check),
        (&["--status"], needs_check),
        (&["--strict"], needs_check),
        (&["-w"], needs_check),
        (&["--warn"], needs_check),
        (&["--ignore-missing"], needs_check),
        // Options without meaning in a mode.
        (&["-c", "-r"], conflict),
        (&["-c", "--leaf-count"], conflict),
        (&["--check", "--combine"], conflict),
        (&["--leaf-count", "--quiet", "f"], conflict),
        (&["-r", "--status", "."], conflict),
        (&["--leaves", "--strict", "-r", "."], conflict),
        (&["-c", "--leaf-range", "1..2", "f"], conflict),
        (&["--combine", "-L", "f"], conflict),
        (&["--combine", "--leaf-range", "1..2", "f"], conflict),
        (&["--combine", "--part", "1/2", "f"], conflict),
        (&["--leaf-count", "--leaves", "f"], conflict),
        // Listing options where they do not apply.
        (&["-c", "--leaves", "--untagged"], conflict),
        (&["--combine", "--leaves"], conflict),
        (&["--combine", "-s", "10"], conflict),
        (&["--combine", "-a", "blake2s"], conflict),
        (&["--combine", "-t", "1k"], conflict),
        (&["--leaves", "--untagged"], conflict),
        (&["--leaf-range", "0..1"], "<--leaves|--leaf-count>"),
        (&["--leaves", "--leaf-range", "x"], "expected A..B"),
        (&["--num-threads", "0"], "0 is not in 1..=1024"),
        (&["-c", "-z", "SUMS"], "the --zero option is not supported when verifying checksums"),
        (&["--files0-from", "L", "f"], conflict),
        (&["-L", "f"], "<--recursive|--audit <DIR>>"),
        (&["--completions", "bash", "-r"], conflict),
        (&["--completions", "tcsh"], "invalid value 'tcsh'"),
        (&["--man", "FILE"], conflict),
        // b3sum's --raw writes one digest; --no-names goes with hashing.
        (&["--raw", "f", "f"], "--raw writes one digest's bytes: give one FILE"),
        (&["--raw", "-c", "f"], "'--raw' cannot be used with '--check'"),
        (&["--raw", "-r", "."], conflict),
        (&["--no-names", "--leaves", "f"], conflict),
        (&["--no-names", "-c", "f"], conflict),
        // Parts and streams: --leaf-count --total reads no FILE, and --name
        // names one input.
        (&["--leaf-count", "--total", "10", "f"], "--leaf-count --total reads no input: give no FILE"),
        (&["--name", "x", "f", "f"], "--name names one input, and more than one FILE was given"),
        (&["--leaves", "--total", "10", "f"], range_or_part),
        (&["--total", "10", "f"], range_or_part),
        (&["--part", "1/2", "f"], "<--leaves|--leaf-count|--check>"),
        (&["--leaves", "--part", "0/2", "f"], "with 1 <= K <= N"),
        (&["--leaves", "--part", "1/2", "--leaf-range", "0..1", "f"], conflict),
        (&["-c", "--part", "1/2", "--leaf-range", "0..1", "f"], conflict),
        (&["-r", "--leaves", "--part", "1/2", "."], conflict),
        (&["--leaves", "--part", "1/2", "--total", "x", "f"], "expected a length in bytes"),
        (&["--name", "", "f"], "a name cannot be empty"),
        (&["-c", "--name", "x", "f"], conflict),
        // Other tools' habits.
        (&["-l", "256", "f"], "tip: GNU b2sum's -l counts bits; bt2sum counts the digest size in \
            bytes: -s/--length BYTES (-l 256 is -s 32)"),
        (&["--verify"], "tip: to verify a list of checksums, use -c/--check LIST"),
        (&["--quiet", "f"], check_options),
        (&["--status", "f"], check_options),
        (&["-t", "f"], "tip: -t is the leaf size here (-t 1m); sha256sum's -t/--text is accepted as --text"),
        (&["-c", "-r", "LIST"], "tip: to walk a tree and check it against a list, use -c --audit DIR LIST"),
        // A usage error shows the usage of every mode, not a line that makes
        // the options in conflict look required.
        (&["-c", "-r", "f"], "Usage: bt2sum [OPTIONS] [FILE]...\n       \
            bt2sum --check [OPTIONS] [LIST]...\n       \
            bt2sum --combine [OPTIONS] [LISTING]...\n"),
        // Repair goes with check mode only, and not with an update.
        (&["--repair-from", "copy", "f"], needs_check),
        (&["--repair-truncate", "-c", "LEAVES"], "--repair-from"),
        (&["-c", "--repair-from", "copy", "--update", "--audit", ".", "LEAVES"], conflict),
        // An update rewrites the one list of an audit.
        (&["-c", "--update", "A"], "--audit <DIR>"),
        (&["-c", "--audit", ".", "--update", "A", "B"], update_one),
        (&["-c", "--audit", ".", "--update"], update_one),
        (&["-c", "--audit", ".", "--update", "-"], update_one),
        (&["-c", "--stat", "A"], "--stat with --check needs --update"),
    ];
    let dir = dir_with(&[("f", HELLO)]);
    for &(args, message) in cases {
        let out = super::run_in(dir.path(), args, HELLO);
        assert_eq!(status(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("--version"), "{args:?}");
    }
}

#[test]
fn go_spellings_and_last_value_wins() {
    let dir = dir_with(&[("data", &pattern(11 << 20))]);
    #[rustfmt::skip]
    let long = ["--cpus", "2", "--algorithm", "blake2s", "--size", "20", "--tree", "3m", "data"];
    let expected = ok_in(dir.path(), long);
    assert!(expected.starts_with("BLAKE2s-20 ("));
    #[rustfmt::skip]
    let spellings: [&[&str]; 4] = [
        &["-cpus", "2", "-a=blake2s", "-s=20", "-t=3m", "data"],
        &["-cpus=2", "--a=blake2s", "--s", "20", "--t=3M", "data"],
        &["-a", "blake2b", "-a", "blake2s", "-s", "9", "-s", "20", "-t", "3m", "data"],
        &["--cpus", "1", "-a", "blake2s", "-s", "20", "-t", "3072k", "data"],
    ];
    for args in spellings {
        assert_eq!(ok_in(dir.path(), args), expected, "{args:?}");
    }
    // Nothing after `--` is rewritten: `-cpus` is then a file name.
    let missing = read_error(std::path::Path::new("-cpus"), "No such file or directory");
    let out = run(["--", "-cpus"], b"");
    assert_eq!(stderr(&out), format!("bt2sum: -cpus: {missing}\n"));
}

/// Any number of threads gives the lines the default gives: a big file in
/// 1 MiB leaves; and small files of several leaves each on more threads
/// than cores, where a thread waiting on its own leaves may pick up another
/// small file (five runs).
#[test]
fn any_number_of_threads_gives_the_same_lines() {
    let dir = dir_with(&[("data", &pattern((23 << 20) + 5))]);
    let small: Vec<String> = (0..64).map(|i| format!("f{i}")).collect();
    for (i, name) in small.iter().enumerate() {
        fs::write(dir.path().join(name), pattern(200 << 10 | i)).unwrap();
    }
    let hashed = |cpus: &str, leaf: &str, names: &[String]| {
        let args = ["--cpus", cpus, "-t", leaf].map(String::from);
        ok_in(dir.path(), args.into_iter().chain(names.to_vec()))
    };
    let default = ok_in(dir.path(), ["-t", "1m", "data"]);
    for cpus in ["1", "3", "16"] {
        let out = hashed(cpus, "1m", &["data".to_string()]);
        assert_eq!(out, default, "--cpus {cpus}");
    }
    let reference = hashed("1", "1k", &small);
    for _ in 0..5 {
        assert_eq!(hashed("8", "1k", &small), reference);
    }
}

/// Files whose size lies, procfs's (0) and sysfs's (4096, whatever they
/// hold), are hashed as reading them gives, as `cat` reads them: by name,
/// from `<` (in a list's check as well) and piped.
#[cfg(target_os = "linux")]
#[test]
fn files_whose_size_lies_are_hashed_as_read() {
    let proc = "/proc/version";
    assert_eq!(fs::metadata(proc).unwrap().len(), 0, "procfs says size 0");
    let sysfs = [
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/class/net/lo/address",
        "/sys/kernel/uevent_seqnum",
    ];
    let sysfs = sysfs.into_iter().find(|path| fs::metadata(path).is_ok());
    if sysfs.is_none() {
        super::skip(
            "files_whose_size_lies_are_hashed_as_read",
            "no sysfs attribute here",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for path in [proc].into_iter().chain(sysfs) {
        let piped = run::<[&str; 0], _>([], &fs::read(path).unwrap());
        let from = || fs::File::open(path).unwrap();
        let redirected = bt2sum().stdin(from()).output_retried();
        assert_output(&redirected, &stdout(&piped), "", 0);
        assert_ne!(digest(&stdout(&piped)), EMPTY_B64, "{path}");
        assert_eq!(digest(&ok_in(dir.path(), [path])), digest(&stdout(&piped)));
        let sums = format!("{}  -\n", digest(&stdout(&piped)));
        fs::write(dir.path().join("SUMS"), sums).unwrap();
        let checked = bt2sum()
            .current_dir(dir.path())
            .args(["-c", "SUMS"])
            .stdin(from())
            .output_retried();
        assert_output(&checked, "-: OK\n", "", 0);
    }
}

/// Standard output that cannot be written, a full device (`/dev/full`, on
/// Linux and FreeBSD) or a file open for reading only, is
/// a write error with the system's message and status 1: hashing,
/// checking, `--man`, `--help` and `--version`.
#[test]
fn an_unwritable_output_is_a_write_error_in_every_mode() {
    let dir = dir_with(&[("h", HELLO)]);
    let path = dir.path().join("h");
    fs::write(dir.path().join("SUMS"), format!("{HELLO_B64}  h\n")).unwrap();
    let refused = fs::File::open(&path).unwrap().write(b"x").unwrap_err();
    let mut outputs = vec![(path, false, bt2sum::plain_message(&refused))];
    if super::robust::dev_full("an_unwritable_output_is_a_write_error_in_every_mode").is_some() {
        let full = "No space left on device".to_string();
        outputs.push(("/dev/full".into(), true, full));
    }
    for (output, full, message) in &outputs {
        #[rustfmt::skip]
        let modes: &[&[&str]] = &[&["h"], &["-c", "SUMS"], &["--man"], &["--help"], &["--version"]];
        for args in modes {
            let stdout = fs::OpenOptions::new().read(!full).write(*full).open(output);
            let out = bt2sum()
                .current_dir(dir.path())
                .args(*args)
                .stdout(stdout.unwrap())
                .output_retried();
            let error = format!("bt2sum: write error: {message}\n");
            assert_said(&out, "", &error, 1, &format!("{args:?}"));
        }
    }
}

/// Marks `file` sparse, so that the length it is given takes no room: NTFS
/// gives an ordinary file's length clusters of the disk, where Unix file
/// systems (and Wine's files, which are theirs) leave a hole.
#[cfg(windows)]
fn make_sparse(file: &fs::File) -> std::io::Result<()> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::System::{IO::DeviceIoControl, Ioctl::FSCTL_SET_SPARSE};
    let mut returned = 0;
    // SAFETY: a handle of an open file, no buffers (without an input buffer
    // FSCTL_SET_SPARSE sets the flag), and no OVERLAPPED (the call
    // completes before it returns).
    let done = unsafe {
        DeviceIoControl(
            file.as_raw_handle(),
            FSCTL_SET_SPARSE,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            0,
            &mut returned,
            std::ptr::null_mut(),
        )
    };
    if done == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Hashes a sparse 64 GiB file (many seconds of work), applies `change` to
/// it a moment after hashing starts, and expects the change to be reported.
/// Where the file cannot be made sparse (Windows, on a file system without
/// sparse files), `test` says it is skipped rather than take 64 GiB.
fn assert_change_is_reported(test: &str, name: &str, change: impl FnOnce(&fs::File)) {
    let dir = dir_with(&[(name, b"")]);
    let path = dir.path().join(name);
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    #[cfg(windows)]
    if let Err(error) = make_sparse(&file) {
        super::skip(test, &format!("cannot make a sparse file here: {error}"));
        return;
    }
    #[cfg(not(windows))]
    let _ = test;
    file.set_len(64 << 30).unwrap();
    let child = bt2sum()
        .args(["--cpus", "2"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retried();
    // The change must come while the file is read, not before: a process
    // slow to start (under an emulator, on a busy machine) would hash the
    // changed file whole and rightly print its checksum.
    #[cfg(target_os = "linux")]
    super::wait_until_open(child.id(), &path);
    std::thread::sleep(Duration::from_millis(300));
    change(&file);
    let out = child.wait_with_output().unwrap();
    let changed = format!(
        "bt2sum: {}: file changed while being read\n",
        printed(&path)
    );
    assert_output(&out, "", &changed, 1);
}

/// (Unix: Windows refuses to shorten a file while it is mapped.)
#[cfg(unix)]
#[test]
fn a_file_cut_short_while_hashed_is_reported() {
    // SIGBUS, and the handler's answer to it, would be the emulator's.
    if super::emulated("a_file_cut_short_while_hashed_is_reported") {
        return;
    }
    // Truncated to 1 MiB, mapped pages vanish mid-read: SIGBUS is caught.
    let test = "a_file_cut_short_while_hashed_is_reported";
    assert_change_is_reported(test, "shrinking", |file| file.set_len(1 << 20).unwrap());
}

#[test]
fn a_file_growing_while_hashed_is_reported() {
    // Each mapped window is followed by a look at the file's size and time,
    // so growth is caught long before the 64 GiB are done.
    // (On Windows the file is marked sparse first: see `make_sparse`.)
    let test = "a_file_growing_while_hashed_is_reported";
    assert_change_is_reported(test, "growing", |file| file.set_len(65 << 30).unwrap());
}

/// Many files in one call list what each file alone lists, for both
/// algorithms: small files are hashed side by side in SIMD lanes; sizes
/// around the leaf size, the mapping threshold, empty files, a file named
/// twice, and a missing file and a directory, each an error said in its
/// place, are mixed in.
#[test]
fn many_files_in_one_call_match_each_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut names = Vec::new();
    #[rustfmt::skip]
    let sizes = [0, 1, 63, 64, 65, 1000, 4095, 4096, 4097, 20_000, (1 << 20) + 1];
    for (i, len) in sizes.into_iter().cycle().take(40).enumerate() {
        let name = format!("f{i:02}");
        fs::write(dir.path().join(&name), pattern(len + i)).unwrap();
        names.push(name);
    }
    names.insert(7, "missing".to_string());
    fs::create_dir(dir.path().join("subdir")).unwrap();
    names.insert(20, "subdir".to_string());
    names.push(names[0].clone());
    let missing = read_error(&dir.path().join("missing"), "No such file or directory");
    let directory = read_error(&dir.path().join("subdir"), "Is a directory");
    // (Where the system says the name is a directory, `-r` is named.)
    let hint = if directory == "Is a directory" {
        "; -r hashes the files in it"
    } else {
        ""
    };
    let errors = format!("bt2sum: missing: {missing}\nbt2sum: subdir: {directory}{hint}\n");
    for options in [
        &["-t", "4k"][..],
        &["-a", "blake2s", "-s", "9", "-t", "4096"],
        &[],
    ] {
        let options: Vec<String> = options.iter().map(|option| option.to_string()).collect();
        let together = run_in(dir.path(), options.iter().chain(&names), b"");
        let (mut alone_out, mut alone_err) = (String::new(), String::new());
        for name in &names {
            let out = run_in(dir.path(), options.iter().chain([name]), b"");
            alone_out += &stdout(&out);
            alone_err += &stderr(&out);
        }
        assert_eq!(alone_err, errors, "{options:?}");
        assert_said(
            &together,
            &alone_out,
            &alone_err,
            1,
            &format!("{options:?}"),
        );
    }
}

#[test]
fn standard_input_is_hashed_from_its_offset_in_leaf_ranges_too() {
    use std::io::Read;
    let dir = dir_with(&[("data", &pattern(3000))]);
    let path = dir.path().join("data");
    // Standard input is the file after a first reader took 1000 bytes of
    // it (as `dd bs=1000 count=1` before bt2sum in a script): the offset is
    // the open file's, shared with bt2sum.
    let run_after_1000 = |args: &[&str]| {
        let mut file = fs::File::open(&path).unwrap();
        file.read_exact(&mut [0; 1000]).unwrap();
        bt2sum().args(args).stdin(file).output_retried()
    };
    let whole = run_after_1000(&["--leaves", "-t", "1k", "-"]);
    let range = run_after_1000(&["--leaves", "--leaf-range", "0..", "-t", "1k", "-"]);
    let whole = stdout(&whole);
    assert_contains(&whole, " total=2000 ");
    let leaf_lines: String = whole.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert_eq!(stdout(&range), leaf_lines);
    // A range reads only its leaves, at their offsets: standard input stays
    // where it was, for the next `-`.
    let twice = run_after_1000(&["--leaves", "--leaf-range", "0..", "-t", "1k", "-", "-"]);
    assert_eq!(stdout(&twice), leaf_lines.repeat(2));
}

/// Every message that names a path or echoes list text shows control bytes
/// escaped (`\x1b`), so that a crafted name or list cannot act on the
/// terminal: a file, a directory, a list, a listing, a leaf line, two
/// listings of different files and a temporary directory, each named with
/// an escape. (Unix: Windows names cannot hold control characters.)
#[cfg(unix)]
#[test]
fn every_message_shows_control_bytes_escaped() {
    let (small, big) = (pattern(3000), pattern(300_000));
    // Leaf digests of more than 16 MiB spill to a temporary file.
    let dir = dir_with(&[
        ("a\x1b[8m", &small),
        ("b\x1b[8m", &small),
        ("big\x1b[8m", &big),
        ("list\x1b[8m", b"not a line\n"),
    ]);
    fs::create_dir(dir.path().join("dir\x1b[8m")).unwrap();
    for name in ["a\x1b[8m", "b\x1b[8m"] {
        let listing = format!("{name}.leaves");
        super::write_list(dir.path(), &listing, ["--leaves", "-t", "1k", name]);
    }
    let leaves = fs::read_to_string(dir.path().join("a\x1b[8m.leaves")).unwrap();
    let bad_field = leaves.lines().nth(1).unwrap();
    let bad_field = bad_field.replace(" total=", " x\x1b[8m=1 total=") + "\n";
    fs::write(dir.path().join("bad\x1b[8m.leaves"), bad_field).unwrap();
    let cases: [&[&str]; 10] = [
        &["missing\x1b[8m"],
        &["dir\x1b[8m"],
        &["-r", "missing\x1b[8m"],
        &["--leaf-count", "missing\x1b[8m"],
        &["-c", "missing-list\x1b[8m"],
        &["-c", "-w", "list\x1b[8m"],
        &["--combine", "missing\x1b[8m.leaves"],
        &["--combine", "bad\x1b[8m.leaves"],
        &["--combine", "a\x1b[8m.leaves", "b\x1b[8m.leaves"],
        &["--leaves", "-t", "1", "big\x1b[8m"],
    ];
    for args in cases {
        // The last case spills its leaf digests to the temporary directory,
        // which cannot be used.
        let out = bt2sum()
            .current_dir(dir.path())
            .args(args)
            .env("TMPDIR", "/nonexistent/tmp\x1b[8m")
            .output_retried();
        // (Checksum and leaf lines keep a name's bytes, GNU style; verdicts
        // and messages show them escaped.)
        let shown = match args[0] {
            "-c" => [stdout(&out), stderr(&out)].concat(),
            _ => stderr(&out),
        };
        assert!(!shown.contains('\x1b'), "{args:?}: {shown}");
        let text = stderr(&out);
        assert!(text.contains("\\x1b[8m"), "{args:?}: {text}");
        assert_eq!(status(&out), 1, "{args:?}: {text}");
    }
}
