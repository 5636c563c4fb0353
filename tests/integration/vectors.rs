//! Every digest path against the committed vectors of
//! `scripts/gen_vectors.py` (Python's hashlib as the oracle): one-shot,
//! streamed in uneven pieces, read from a trickling reader, hashed from a
//! file (read or mapped, in memory or read ahead from the storage), on the
//! global pool and on a one-thread pool; and
//! on both leaf kernels where the CPU has AVX-512 (this binary re-run with
//! `BT2SUM_HASH_KERNEL=crate`).

use std::io::{self, Read, Write};

use std::ops::ControlFlow;

use bt2sum::{
    Algorithm, Event, HASH_KERNEL_ENV, Job, LeafKernel, TreeHasher, TreeParams, hash, hash_each,
    hash_path, hash_reader,
};

use super::{Retried, evict, pattern};

pub struct Vector {
    pub tree: TreeParams,
    pub len: usize,
    pub zero: bool,
    pub hex: String,
}

impl Vector {
    pub fn data(&self) -> Vec<u8> {
        if self.zero {
            vec![0; self.len]
        } else {
            pattern(self.len)
        }
    }
}

/// The committed vectors, parsed.
pub fn vectors() -> Vec<Vector> {
    let text = include_str!("../data/vectors.tsv");
    let lines = text.lines().filter(|line| !line.starts_with('#'));
    let vector = |line: &str| {
        let fields: Vec<&str> = line.split('\t').collect();
        let [algorithm, size, leaf, len, kind, hex] = fields[..] else {
            panic!("bad vector line {line:?}");
        };
        let algorithm = Algorithm::ALL
            .into_iter()
            .find(|a| a.to_string() == algorithm);
        let algorithm = algorithm.unwrap_or_else(|| panic!("unknown algorithm in {line:?}"));
        Vector {
            tree: TreeParams::new(algorithm, size.parse().unwrap(), leaf.parse().unwrap()).unwrap(),
            len: len.parse().unwrap(),
            zero: kind == "zero",
            hex: hex.to_string(),
        }
    };
    lines.map(vector).collect()
}

/// A reader that hands out its data in short, uneven pieces and is
/// interrupted now and then, like a slow pipe.
struct Trickle<'a> {
    data: &'a [u8],
    reads: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.reads.is_multiple_of(7) {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        let piece = [1, 3, 64, 4093, 65537, 1 << 20][self.reads % 6];
        let count = piece.min(buf.len()).min(self.data.len());
        buf[..count].copy_from_slice(&self.data[..count]);
        self.data = &self.data[count..];
        Ok(count)
    }
}

fn streamed(tree: &TreeParams, data: &[u8]) -> String {
    let mut hasher = TreeHasher::new(tree);
    let mut rest = data;
    for piece in [1usize, 127, 128, 129, 5000, 1 << 20].iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let count = (*piece).min(rest.len());
        hasher.write_all(&rest[..count]).unwrap();
        rest = &rest[count..];
    }
    hasher.finalize().unwrap().to_hex()
}

fn read_through(tree: &TreeParams, data: &[u8]) -> String {
    let mut hasher = TreeHasher::new(tree);
    let count = hasher
        .update_reader(&mut Trickle { data, reads: 0 })
        .unwrap();
    assert_eq!(count, data.len() as u64);
    let digest = hasher.finalize().unwrap();
    let again = hash_reader(tree, &mut Trickle { data, reads: 0 }).unwrap();
    assert_eq!(again, digest);
    digest.to_hex()
}

/// From a file; `cold`, with its pages not in memory: read ahead from the
/// storage while it is hashed.
fn from_file(tree: &TreeParams, data: &[u8], dir: &tempfile::TempDir, cold: bool) -> String {
    let path = dir.path().join("input");
    std::fs::write(&path, data).unwrap();
    if cold {
        evict(&path);
    }
    hash_path(tree, &path).unwrap().to_hex()
}

#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn every_path_matches_the_oracle() {
    // (The cold files are hashed where they stay in memory too.)
    super::disk::say_if_evicted_files_stay_in_memory("every_path_matches_the_oracle");
    let vectors = vectors();
    // Update when the generator changes: proves the table was read whole.
    assert_eq!(vectors.len(), 2228);
    let dir = tempfile::tempdir().unwrap();
    let serial = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for vector in &vectors {
        let data = vector.data();
        let tree = &vector.tree;
        let what = format!("{tree:?}, {} bytes", vector.len);
        assert_eq!(hash(tree, &data).to_hex(), vector.hex, "one-shot, {what}");
        let (streamed, read) = (streamed(tree, &data), read_through(tree, &data));
        assert_eq!(streamed, vector.hex, "written in pieces, {what}");
        assert_eq!(read, vector.hex, "read in pieces, {what}");
        let file = from_file(tree, &data, &dir, false);
        assert_eq!(file, vector.hex, "file, {what}");
        // Files of 1 MiB or more are mapped, and read ahead when cold.
        if vector.len >= 1 << 20 {
            let cold = from_file(tree, &data, &dir, true);
            assert_eq!(cold, vector.hex, "file not in memory, {what}");
        }
        let (one_shot, file) = serial.install(|| {
            (
                hash(tree, &data).to_hex(),
                from_file(tree, &data, &dir, false),
            )
        });
        assert_eq!(one_shot, vector.hex, "one-shot on one thread, {what}");
        assert_eq!(file, vector.hex, "file on one thread, {what}");
    }
}

/// Many files in one run, each with its own parameters: those of one leaf
/// or less (every vector under 1 MiB) are hashed side by side in the SIMD
/// lanes, BLAKE2b and BLAKE2s and every digest size mixed, and reported in
/// order.
#[test]
fn many_files_at_once_match_the_oracle() {
    let vectors: Vec<Vector> = vectors()
        .into_iter()
        .filter(|vector| vector.len < 1 << 20)
        .collect();
    assert_eq!(vectors.len(), 2113);
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<Job<usize>> = vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| {
            let path = dir.path().join(index.to_string());
            std::fs::write(&path, vector.data()).unwrap();
            Job::path(index, path, &vector.tree)
        })
        .collect();
    let mut checked = 0;
    hash_each(jobs, |event| {
        if let Event::Ready(outcome) = event {
            let vector = &vectors[outcome.tag];
            assert_eq!(outcome.tag, checked, "out of order");
            let hashed = outcome.result.unwrap();
            assert_eq!(hashed.length, vector.len as u64);
            assert_eq!(
                hashed.digest.to_hex(),
                vector.hex,
                "{:?}, {} bytes",
                vector.tree,
                vector.len
            );
            checked += 1;
        }
        ControlFlow::Continue(())
    });
    assert_eq!(checked, 2113);
}

#[test]
fn vectors_cover_the_boundaries() {
    let vectors = vectors();
    for algorithm in Algorithm::ALL {
        let ours: Vec<&Vector> = vectors
            .iter()
            .filter(|v| v.tree.algorithm() == algorithm)
            .collect();
        // (A BLAKE2 block holds two of the largest digests.)
        let block = 2 * algorithm.max_digest_size();
        for size in [1, 7, algorithm.max_digest_size()] {
            assert!(
                ours.iter().any(|v| v.tree.digest_size() == size),
                "{algorithm} size {size}"
            );
        }
        for leaf in [1, 2, 3, block - 1, block, block + 1, 4096, 1 << 20, 5 << 20] {
            let with_leaf: Vec<&&Vector> = ours
                .iter()
                .filter(|v| v.tree.leaf_size() == leaf as u64)
                .collect();
            #[rustfmt::skip]
            let lengths = [0, 1, block - 1, block, block + 1, leaf - 1, leaf, leaf + 1, 3 * leaf];
            for len in lengths {
                assert!(
                    with_leaf.iter().any(|v| v.len == len),
                    "{algorithm} leaf {leaf} length {len}"
                );
            }
        }
    }
}

#[test]
fn bad_parameters_are_refused() {
    assert!(TreeParams::new(Algorithm::Blake2b, 0, 1).is_err());
    assert!(TreeParams::new(Algorithm::Blake2b, 65, 1).is_err());
    assert!(TreeParams::new(Algorithm::Blake2s, 33, 1).is_err());
    assert!(TreeParams::new(Algorithm::Blake2s, 32, 0).is_err());
    assert!(TreeParams::new(Algorithm::Blake2s, 32, 1 << 32).is_err());
    assert!(TreeParams::new(Algorithm::Blake2s, 32, u32::MAX as u64).is_ok());
}

/// The kernel in use is the one asked for: the crates under
/// `BT2SUM_HASH_KERNEL=crate`, else the AVX-512 kernels exactly where the
/// CPU has AVX-512F.
#[test]
fn the_kernel_is_the_one_asked_for() {
    let forced = std::env::var_os(HASH_KERNEL_ENV).is_some_and(|value| value == "crate");
    #[cfg(target_arch = "x86_64")]
    let avx512 = std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    let avx512 = false;
    let expected = if avx512 && !forced {
        LeafKernel::Avx512
    } else {
        LeafKernel::Crates
    };
    assert_eq!(LeafKernel::active(), expected);
}

/// The vector tests once more on the crates' kernels, in a child process
/// (the kernel is chosen once per process), where this process ran them on
/// the AVX-512 kernels.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow: --features slow-tests")]
fn vectors_match_on_the_crates_kernels_too() {
    if LeafKernel::active() == LeafKernel::Crates {
        super::skip(
            "vectors_match_on_the_crates_kernels_too",
            &format!(
                "this process already runs the crates' kernels (no AVX-512F here, or \
                 {HASH_KERNEL_ENV}=crate)"
            ),
        );
        return;
    }
    let tests = [
        "vectors::the_kernel_is_the_one_asked_for",
        "vectors::every_path_matches_the_oracle",
        "vectors::many_files_at_once_match_the_oracle",
    ];
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(tests)
        .args(["--exact", "--test-threads", "2"])
        .env(HASH_KERNEL_ENV, "crate")
        .output_retried();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 3 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
