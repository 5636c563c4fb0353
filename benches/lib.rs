//! The benchmarks of bt2sum, a package of their own so that criterion is
//! built only for them: `cargo bench -p bt2sum-benches --bench tree` (the
//! hashing paths) and `--bench ct` (the constant-time comparator). This
//! library is empty.
