//! The "straightforward ceiling": the yardstick `scripts/compare`
//! measures bt2sum against, not production code.
//!
//! It maps the whole file, hashes its 5 MiB leaves in groups of
//! `many::degree()` with the SIMD crates' `many::hash_many` (one `Params` per
//! leaf) on a rayon pool, collects every leaf digest, and hashes them in the
//! root. No windows, no bounded memory, no error handling beyond `expect`: it
//! is as fast as the crates allow, and prints the same line as bt2sum.
//!
//! ```sh
//! cargo run --release --example ceiling -- [-a blake2b|blake2s] [--cpus N] FILE
//! ```

use rayon::prelude::*;

const LEAF: usize = 5 << 20;

/// Defines `fn $name(data) -> root digest` for one of the two crates.
macro_rules! tree_hash {
    ($name:ident, $blake:ident, $size:expr) => {
        fn $name(data: &[u8]) -> Vec<u8> {
            use $blake::{Params, many};
            let leaves: Vec<(usize, &[u8])> = data.chunks(LEAF).enumerate().collect();
            let params = |offset: u64, depth: u8, last: bool| {
                let mut params = Params::new();
                params.hash_length($size).fanout(0).max_depth(2);
                params.max_leaf_length(LEAF as u32).inner_hash_length($size);
                params.node_offset(offset).node_depth(depth).last_node(last);
                params
            };
            let groups: Vec<Vec<_>> = leaves
                .par_chunks(many::degree())
                .map(|group| {
                    let params: Vec<Params> = group
                        .iter()
                        .map(|&(i, _)| params(i as u64, 0, i + 1 == leaves.len()))
                        .collect();
                    let mut jobs: Vec<_> = group
                        .iter()
                        .zip(&params)
                        .map(|(&(_, leaf), params)| many::HashManyJob::new(params, leaf))
                        .collect();
                    many::hash_many(jobs.iter_mut());
                    jobs.iter().map(|job| job.to_hash()).collect()
                })
                .collect();
            let mut root = params(0, 1, true).to_state();
            for leaf in groups.iter().flatten() {
                root.update(leaf.as_bytes());
            }
            root.finalize().as_bytes().to_vec()
        }
    };
}

tree_hash!(blake2b, blake2b_simd, 64);
tree_hash!(blake2s, blake2s_simd, 32);

fn main() {
    let usage = "usage: ceiling [-a blake2b|blake2s] [--cpus N] FILE";
    let (mut algorithm, mut cpus, mut path) = ("blake2b".to_string(), 0, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-a" => algorithm = args.next().expect(usage),
            "--cpus" => cpus = args.next().and_then(|n| n.parse().ok()).expect(usage),
            _ if path.is_none() && !arg.starts_with('-') => path = Some(arg),
            _ => panic!("{usage}"),
        }
    }
    let path = path.expect(usage);
    rayon::ThreadPoolBuilder::new()
        .num_threads(cpus)
        .build_global()
        .unwrap();
    let file = std::fs::File::open(&path).expect("cannot open FILE");
    // SAFETY: a benchmark input that nobody modifies while it is hashed.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("cannot map FILE");
    let (tag, digest) = match algorithm.as_str() {
        "blake2b" => ("BLAKE2b-64", blake2b(&map)),
        "blake2s" => ("BLAKE2s-32", blake2s(&map)),
        _ => panic!("{usage}"),
    };
    println!("{tag} ({path}) = {}", hex::encode(digest));
}
