//! The RustCrypto `digest` traits (the `digest` feature) against the
//! committed vectors, and what generic code expects of them: resets that
//! forget, sizes and buffers checked, and the blanket `Digest` API.

use std::io::Write;

use bt2sum::{Algorithm, DefaultTreeHasher, TreeHasher, TreeParams, hash};
use digest::{Digest, FixedOutputReset, Reset, Update, VariableOutput, VariableOutputReset};

use super::pattern;
use super::vectors::vectors;

/// `data` given to `hasher` in uneven pieces.
fn update_in_pieces(hasher: &mut impl Update, data: &[u8]) {
    let mut rest = data;
    for piece in [1, 63, 64, 65, 4095, 1 << 20].into_iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at(piece.min(rest.len()));
        hasher.update(now);
        rest = later;
    }
}

#[test]
fn digest_traits_match_the_vectors() {
    let default_leaf = TreeParams::default().leaf_size();
    let (mut every, mut by_size, mut default) = (0, 0, 0);
    for vector in vectors() {
        let (data, tree) = (vector.data(), vector.tree);
        let what = format!("{tree:?}, {} bytes", vector.len);
        // BLAKE2b with the default leaf size: made as generic code makes
        // it, by its size alone.
        let sized = tree.algorithm() == Algorithm::Blake2b && tree.leaf_size() == default_leaf;
        let mut hasher = match sized {
            true => <TreeHasher as VariableOutput>::new(tree.digest_size()).unwrap(),
            false => TreeHasher::new(&tree),
        };
        update_in_pieces(&mut hasher, &data);
        assert_eq!(hasher.output_size(), tree.digest_size());
        let mut out = vec![0; tree.digest_size()];
        hasher.finalize_variable(&mut out).unwrap();
        assert_eq!(hex::encode(&out), vector.hex, "{what}");
        every += 1;
        by_size += usize::from(sized);
        if sized && tree.digest_size() == 64 {
            assert_eq!(
                hex::encode(DefaultTreeHasher::digest(&data)),
                vector.hex,
                "{what}"
            );
            default += 1;
        }
    }
    assert!(every > 1000, "{every} vectors");
    assert!(
        by_size >= 10 && default >= 5,
        "{by_size} by size, {default} default"
    );
}

#[test]
fn digest_resets_forget_what_was_written() {
    let data = pattern(11 << 20);
    let tree = TreeParams::new(Algorithm::Blake2s, 20, 1000).unwrap();
    let expected = hash(&tree, &data);

    let mut hasher = TreeHasher::new(&tree);
    hasher.update(b"something else entirely");
    Reset::reset(&mut hasher);
    assert_eq!(hasher.tree(), &tree, "a reset keeps the parameters");
    for round in 0..3 {
        update_in_pieces(&mut hasher, &data);
        let mut out = [0; 20];
        hasher.finalize_variable_reset(&mut out).unwrap();
        assert!(expected == out[..], "round {round}");
    }

    let expected = hash(&TreeParams::default(), &data);
    let mut hasher = DefaultTreeHasher::default();
    Update::update(&mut hasher, b"forgotten");
    Reset::reset(&mut hasher);
    for round in 0..3 {
        // Bytes taken through `std::io` too, as `io::copy` writes them.
        std::io::copy(&mut &data[..], &mut hasher).unwrap();
        hasher.flush().unwrap();
        assert!(
            expected == hasher.finalize_fixed_reset()[..],
            "round {round}"
        );
    }
    // `Digest`'s own spelling of the same, and `chain`.
    let mut hasher = DefaultTreeHasher::new_with_prefix(&data[..10]);
    Digest::reset(&mut hasher);
    let hasher = Digest::chain_update(hasher, &data[..1000]).chain_update(&data[1000..]);
    assert!(expected == hasher.finalize()[..]);
}

#[test]
fn digest_sizes_and_buffers_are_checked() {
    assert_eq!(<TreeHasher as VariableOutput>::MAX_OUTPUT_SIZE, 64);
    assert!(<TreeHasher as VariableOutput>::new(0).is_err());
    assert!(<TreeHasher as VariableOutput>::new(65).is_err());
    for size in [1, 32, 33, 64] {
        let hasher = <TreeHasher as VariableOutput>::new(size).unwrap();
        assert_eq!(hasher.output_size(), size);
        assert_eq!(hasher.tree().algorithm(), Algorithm::Blake2b);
        assert_eq!(hasher.tree().leaf_size(), 5 << 20);
    }
    // A buffer of another length is refused, and nothing is lost by it.
    let mut hasher = <TreeHasher as VariableOutput>::new(40).unwrap();
    hasher.update(b"hello s3git\n");
    for wrong in [0, 39, 41, 64] {
        let mut out = vec![0; wrong];
        assert!(hasher.finalize_variable_reset(&mut out).is_err(), "{wrong}");
    }
    let mut out = [0; 40];
    hasher.finalize_variable(&mut out).unwrap();
    assert_eq!(
        hex::encode(out),
        "919f330a1b4a3a02aced735e7675905c159b99e07e0c8aa087d0327b26e4d3aa8323bc82962b8e8e"
    );
    assert_eq!(<DefaultTreeHasher as Digest>::output_size(), 64);
}
