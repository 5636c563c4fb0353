#!/usr/bin/env python3
"""Generate tests/data/vectors.tsv: BLAKE2 tree-hash ("unlimited fanout") vectors.

The oracle is Python's hashlib, which implements the BLAKE2 parameter block
independently of the Rust crates bt2sum uses. Every node gets digest size s,
fanout 0, depth 2, leaf size L and inner size s; leaf i hashes bytes
[i*L, min((i+1)*L, len)) at node offset i, depth 0, last-node flag only on the
final leaf; the root (offset 0, depth 1, last node) hashes the leaf digests
concatenated. Empty input has no leaves: the root hashes nothing.

Input bytes follow a pattern the Rust tests rebuild:
  "mod251": byte i is i % 251 (prime, so it never lines up with a block or leaf)
  "zero":   all zero bytes

Output columns (tab separated, one vector a line, '#' lines are comments):
  algorithm  digest_size  leaf_size  length  pattern  hex_digest

Run from the repository root:  python3 scripts/gen_vectors.py > tests/data/vectors.tsv
"""
import hashlib

ALGORITHMS = {
    # name: (constructor, block size, max digest size)
    "blake2b": (hashlib.blake2b, 128, 64),
    "blake2s": (hashlib.blake2s, 64, 32),
}
KIB, MIB = 1024, 1024 * 1024


def pattern_bytes(pattern, length):
    if pattern == "zero":
        return bytes(length)
    return bytes(i % 251 for i in range(251)) * (length // 251) + bytes(range(length % 251))


def tree_hash(algorithm, size, leaf, data):
    new = ALGORITHMS[algorithm][0]
    common = dict(digest_size=size, fanout=0, depth=2, leaf_size=leaf, inner_size=size)
    count = -(-len(data) // leaf)
    root = new(node_offset=0, node_depth=1, last_node=True, **common)
    for i in range(count):
        chunk = data[i * leaf:(i + 1) * leaf]
        node = new(chunk, node_offset=i, node_depth=0, last_node=(i == count - 1), **common)
        root.update(node.digest())
    return root.hexdigest()


def lengths_for(block, leaf):
    """Lengths around every boundary: empty, one byte, a block, a leaf, several leaves."""
    around = lambda n: [n - 1, n, n + 1]
    out = {0, 1, *around(block), *around(2 * block), *around(leaf), *around(2 * leaf), 3 * leaf}
    if leaf <= 4096:
        # Leaf counts around the SIMD group sizes (4 and 8) and a long run of groups.
        out |= {k * leaf + extra for k in (4, 5, 7, 8, 9, 16, 17, 33) for extra in (0, 1)}
        out.add(1000 * leaf + 7)
    return sorted(n for n in out if n >= 0)


def sizes_for(algorithm, leaf):
    max_size = ALGORITHMS[algorithm][2]
    if leaf >= MIB:
        return [1, 33 if max_size == 64 else 17, max_size]
    return [1, 7, max_size // 2 + 1, max_size - 1, max_size]


def main():
    print(__doc__.strip().replace("\n", "\n# ").join(["# ", ""]))
    for algorithm, (_, block, _) in ALGORITHMS.items():
        leaves = [1, 2, 3, block - 1, block, block + 1, 4096, MIB, 5 * MIB]
        for leaf in leaves:
            for size in sizes_for(algorithm, leaf):
                for length in lengths_for(block, leaf):
                    data = pattern_bytes("mod251", length)
                    digest = tree_hash(algorithm, size, leaf, data)
                    print(f"{algorithm}\t{size}\t{leaf}\t{length}\tmod251\t{digest}")
    # Around the boundaries of the implementation's own batching: batches of
    # 65536 tiny leaves, 40 MiB windows of whole leaves (8 default leaves),
    # and big leaves (over 8 MiB) mapped in 8 MiB pieces.
    for algorithm, (_, _, max_size) in ALGORITHMS.items():
        for leaf, lengths in [
            (1, [65535, 65536, 65537, 2 * 65536 + 1]),
            (17, [65536 * 17 - 1, 65536 * 17, 65536 * 17 + 1, 3 * 65536 * 17 + 5]),
            (5 * MIB, [40 * MIB - 1, 40 * MIB, 40 * MIB + 1, 85 * MIB + 3]),
            (9 * MIB + 1, [8 * MIB + 1, 9 * MIB + 1, 9 * MIB + 2, 3 * (9 * MIB + 1) + 7]),
        ]:
            for length in lengths:
                digest = tree_hash(algorithm, max_size, leaf, pattern_bytes("mod251", length))
                print(f"{algorithm}\t{max_size}\t{leaf}\t{length}\tmod251\t{digest}")
    # The SPEC's known answers on zero bytes, and a 4 GiB - 1 leaf size.
    for algorithm, size, leaf, length in [
        ("blake2b", 64, 4096, 6000),
        ("blake2b", 64, 5 * MIB, 8 * MIB),
        ("blake2b", 64, 5 * MIB, 0),
        ("blake2s", 32, 5 * MIB, 0),
        ("blake2b", 64, 2**32 - 1, 3 * MIB + 5),
        ("blake2s", 32, 2**32 - 1, 3 * MIB + 5),
    ]:
        digest = tree_hash(algorithm, size, leaf, pattern_bytes("zero", length))
        print(f"{algorithm}\t{size}\t{leaf}\t{length}\tzero\t{digest}")


if __name__ == "__main__":
    main()
