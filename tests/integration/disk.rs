//! Reading from storage: every way the command reads files gives the same
//! lines whether the files are in memory or not (then they are read ahead
//! from the storage while they are hashed), and a leaf range reads only
//! its own part of a file.

use super::{evict, pattern, run_in, status, stderr, stdout};

/// A note naming `test` where `evict` leaves a file's pages in memory, and
/// the test's cold runs read from memory like its warm ones: macOS has no
/// `posix_fadvise`, a file system may keep its pages (tmpfs), and Windows
/// has no call for it. A file of 1 MiB, evicted and then asked (`mincore`)
/// which of its pages are in memory, tells on Unix.
pub(super) fn say_if_evicted_files_stay_in_memory(test: &str) {
    #[cfg(unix)]
    let kept = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe");
        std::fs::write(&path, pattern(1 << 20)).unwrap();
        evict(&path);
        let resident = resident_pages(&path);
        let kept = resident.iter().filter(|&&resident| resident).count();
        (kept > 0).then(|| format!("{kept} of its {} pages stay in memory", resident.len()))
    };
    #[cfg(not(unix))]
    let kept = Some("there is no way here to drop a file's pages from memory".to_string());
    if let Some(kept) = &kept {
        let why = "the reads from storage: a file evicted here is read from memory all the same";
        super::skip(test, &format!("{why} ({kept})"));
    }
}

#[test]
fn files_read_from_storage_give_the_lines_they_give_from_memory() {
    // (Run where the files stay in memory too: the lines must agree.)
    say_if_evicted_files_stay_in_memory(
        "files_read_from_storage_give_the_lines_they_give_from_memory",
    );
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("big", (23 << 20) + 7),
        ("tree/a", 11 << 20),
        ("tree/b", 3 << 20),
        ("tree/c", 5000),
    ];
    for (name, len) in files {
        super::write_files(dir.path(), &[(name, &pattern(len))]);
    }
    let names: Vec<&str> = files.iter().map(|(name, _)| *name).collect();
    super::write_list(
        dir.path(),
        "LIST",
        ["--leaves", "-t", "1m", "big", "tree/a"],
    );
    let commands: [&[&str]; 9] = [
        &["big"],
        &["--cpus", "1", "big"],
        &["-a", "blake2s", "big", "tree/a", "tree/b"],
        &["--leaves", "big"],
        &["--leaves", "-t", "4k", "tree/b"],
        &["--leaves", "--leaf-range", "3..9", "-t", "1m", "big"],
        &["-r", "tree"],
        &["-c", "LIST"],
        &["-t", "9m", "big"],
    ];
    // Each run twice: with the files in memory, then with them dropped
    // from the page cache.
    for args in commands {
        let warm = run_in(dir.path(), args, b"");
        assert_eq!(status(&warm), 0, "{args:?}: {}", stderr(&warm));
        names.iter().for_each(|name| evict(&dir.path().join(name)));
        let cold = run_in(dir.path(), args, b"");
        assert_eq!(status(&cold), 0, "{args:?} (cold): {}", stderr(&cold));
        let (warm, cold) = (stdout(&warm), stdout(&cold));
        assert!(!warm.is_empty() && cold == warm, "{args:?}: {warm} {cold}");
    }
    // Standard input that is a regular file, as `bt2sum < big`.
    let redirected = || {
        let big = std::fs::File::open(dir.path().join("big")).unwrap();
        let out = super::bt2sum().stdin(big).output().unwrap();
        assert_eq!(status(&out), 0, "{}", stderr(&out));
        stdout(&out)
    };
    let warm = redirected();
    evict(&dir.path().join("big"));
    assert_eq!(redirected(), warm);
}

/// Which of a file's pages are in the page cache, a flag per page
/// (`mincore` on a mapping of it).
#[cfg(unix)]
fn resident_pages(path: &std::path::Path) -> Vec<bool> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    // SAFETY: a shared read-only mapping of an open file, only asked which
    // of its pages are in memory, and unmapped below.
    let (read, shared) = (libc::PROT_READ, libc::MAP_SHARED);
    let map = unsafe { libc::mmap(std::ptr::null_mut(), len, read, shared, file.as_raw_fd(), 0) };
    assert_ne!(map, libc::MAP_FAILED);
    let mut pages = vec![0u8; len.div_ceil(page)];
    // SAFETY: the mapping is live and `pages` has a byte per page of it.
    assert_eq!(
        unsafe { libc::mincore(map, len, pages.as_mut_ptr().cast()) },
        0
    );
    // SAFETY: unmaps the mapping made above, which nothing else uses.
    unsafe { libc::munmap(map, len) };
    pages.iter().map(|&flag| flag & 1 != 0).collect()
}

/// A leaf range reads its own bytes: the file before it stays on the
/// storage, and no more than the kernel's read-ahead is read past it.
#[cfg(target_os = "linux")]
#[test]
fn a_leaf_range_reads_only_its_own_part_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    std::fs::write(&path, pattern(96 << 20)).unwrap();
    evict(&path);
    let before = resident_pages(&path);
    if before.iter().any(|&resident| resident) {
        let test = "a_leaf_range_reads_only_its_own_part_of_the_file";
        return super::skip(test, "a file's pages stay in memory here");
    }
    let args = ["--leaves", "-t", "1m", "--leaf-range", "40..48", "big"];
    assert_eq!(super::ok_in(dir.path(), args).lines().count(), 8);
    let resident = resident_pages(&path);
    let page = (96 << 20) / resident.len();
    let mib = (1 << 20) / page;
    assert!(
        resident[40 * mib..48 * mib].iter().all(|&r| r),
        "the range was read"
    );
    assert!(
        !resident[..40 * mib].iter().any(|&r| r),
        "bytes before the range were read"
    );
    let past = resident[48 * mib..].iter().filter(|&&r| r).count();
    assert!(
        past <= 32 * mib,
        "{} MiB past the range were read",
        past / mib
    );
}

/// The FUSE file system of the tests that answers each read short.
#[cfg(target_os = "linux")]
const SHORT_READS: &str = "tests/fuse/short-reads.py";

/// A file system that answers every read with half the bytes asked for:
/// each file is hashed whole (the reads are retried until the file's real
/// end) or reported (status 1), never hashed short. One whose sizes say
/// 1000 bytes more than its files hold: each is reported (`the file ended
/// after 70000 of the 71000 bytes its size says`), never hashed short.
#[cfg(target_os = "linux")]
#[test]
fn files_that_end_before_their_size_are_never_hashed_short() {
    let test = "files_that_end_before_their_size_are_never_hashed_short";
    if super::emulated(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    // Read whole (under 1 MiB), and mapped.
    let (small, big) = (pattern(70_000), pattern(3_000_000));
    super::write_files(&source, &[("small", &small), ("big", &big)]);
    let right = |name: &str| super::ok_in(&source, [name]).replace(name, &format!("mnt/{name}"));
    let (small, big) = (right("small"), right("big"));
    let mountpoint = dir.path().join("mnt");
    {
        let Some(_mounted) = super::Mounted::fuse(test, SHORT_READS, &source, &mountpoint, &[])
        else {
            return;
        };
        for (name, digest) in [("small", &small), ("big", &big)] {
            let out = run_in(dir.path(), [&format!("mnt/{name}")], b"");
            let (hashed, err, code) = super::said(&out);
            let whole = code == 0 && hashed == *digest;
            let reported = code == 1 && hashed.is_empty() && !err.is_empty();
            assert!(whole || reported, "half reads, {name}: {hashed} {err}");
        }
        // The small file, read whole, is right.
        assert_eq!(stdout(&run_in(dir.path(), ["mnt/small"], b"")), small);
        let many = run_in(dir.path(), ["-r", "mnt"], b"");
        for line in stdout(&many).lines() {
            let whole = small.trim_end() == line || big.trim_end() == line;
            assert!(whole, "half reads, -r: {line}");
        }
    }
    let longer = ["--size-adds", "1000"];
    let Some(_mounted) = super::Mounted::fuse(test, SHORT_READS, &source, &mountpoint, &longer)
    else {
        return;
    };
    let out = run_in(dir.path(), ["mnt/small", "mnt/big"], b"");
    assert_eq!((stdout(&out).as_str(), status(&out)), ("", 1));
    let messages = stderr(&out);
    let lines: Vec<&str> = messages.lines().collect();
    let ended = "the file ended after 70000 of the 71000 bytes its size says";
    assert_eq!(lines[0], format!("bt2sum: mnt/small: {ended}"));
    assert!(lines[1].starts_with("bt2sum: mnt/big: "), "{lines:?}");
    let many = run_in(dir.path(), ["-r", "mnt"], b"");
    assert_eq!((status(&many), stdout(&many).as_str()), (1, ""));
    let redirected = super::shell(dir.path(), r#""$BT2SUM" < mnt/small"#);
    assert_eq!((status(&redirected), stdout(&redirected).as_str()), (1, ""));
}
