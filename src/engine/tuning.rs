//! Every size and count that shapes the work, in one place: how many bytes a
//! batch holds, how large a mapped window is, which leaves are "big", how
//! much a pool task hashes, how many batches and inputs are in flight, and
//! how many threads hash while a reader reads. None of it changes a digest;
//! all of it changes speed and memory.

use super::kernel::LeafKernel;
use crate::params::{Algorithm, TreeParams};

/// The input bytes a batch of whole leaves holds at most.
///
/// With the default 5 MiB leaves that is 8 leaves: two SIMD groups of four,
/// one for each core of a small machine.
pub(crate) const BATCH_BYTES: usize = 40 << 20;

/// The leaves a batch holds at most, so that tiny leaves (`-t 1`) keep the
/// digest buffer small (4 MiB of 64-byte digests).
pub(crate) const BATCH_MAX_LEAVES: usize = 1 << 16;

/// The most bytes a mapped window of whole leaves spans. A window holds a
/// batch, or two SIMD groups of leaves per thread if that is more; its pages
/// are given back as they are hashed, so its size costs address space only:
/// on 64-bit targets two groups a thread up to 256 threads of the crates'
/// AVX2 (5 MiB leaves: 10 GiB), on 32-bit ones what their address space
/// spares.
pub(crate) const WINDOW_MAX_BYTES: usize = if cfg!(target_pointer_width = "64") {
    16 << 30
} else {
    256 << 20
};

/// Mapped windows in flight: two, so that the pool never waits at a
/// window's end for its slowest task while the next one is mapped.
pub(crate) const WINDOWS_IN_FLIGHT: usize = 2;

/// Stream batches in flight: one being hashed while the next one fills, so
/// a stream holds two batches at most.
pub(crate) const STREAM_BATCHES_IN_FLIGHT: usize = 1;

/// Leaves above this size are hashed incrementally, a piece at a time,
/// instead of being buffered or mapped whole.
pub(crate) const BIG_LEAF: u64 = 8 << 20;

/// A big leaf of a mapped file is mapped this much at a time.
pub(crate) const PIECE: u64 = 8 << 20;

/// The size of the reads into a big leaf of a stream.
pub(crate) const READ_CHUNK: usize = 1 << 20;

/// A stream's buffer starts this small and doubles up to the batch size, so
/// that small inputs never allocate a whole batch.
pub(crate) const FIRST_BUFFER: usize = 64 << 10;

/// A task on the pool hashes about this many bytes (at least one SIMD group).
pub(crate) const TASK_BYTES: usize = 256 << 10;

/// The reader thread brings a file into the page cache this much at a
/// time, and tells the pool after each: small enough that the pool starts
/// soon after the bytes it waits for arrive, large enough for the storage
/// to get its largest requests (the kernel's read-ahead window, 128 KiB to
/// a few MiB, within it).
#[cfg(unix)]
pub(crate) const READ_AHEAD_CHUNK: u64 = 8 << 20;

/// The stack of the reader thread, which makes system calls and nothing
/// deeper.
#[cfg(unix)]
pub(crate) const READ_AHEAD_STACK: usize = 256 << 10;

/// Regular files smaller than this are read, not mapped: one `read` is
/// cheaper than setting up and tearing down a mapping.
pub(crate) const MAP_MIN: u64 = 1 << 20;

/// The pipe buffer asked for (Linux's default limit for unprivileged users,
/// `/proc/sys/fs/pipe-max-size`), so that writer and reader wake each other
/// 16 times less often than with the 64 KiB default. (Only Linux lets a
/// pipe's buffer be set.)
#[cfg(target_os = "linux")]
pub(crate) const PIPE_SIZE: usize = 1 << 20;

/// Inputs of a run of many that are being hashed or wait to be reported at
/// once. Their results are reported in order, so this bounds what is held.
pub(crate) const INPUTS_IN_FLIGHT: usize = 64;

/// The bytes that inputs in flight may hold besides their results (their
/// names): a list of long names is not held whole.
pub(crate) const INPUT_BYTES_IN_FLIGHT: usize = 8 << 20;

/// Inputs one pool task takes: small ones among them share SIMD lanes (8, a
/// multiple of BLAKE2b's 4 and BLAKE2s's 8 lanes).
pub(crate) const LANES: usize = 8;

/// How the leaves of a batch are spread over the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spread {
    /// Over every thread: memory and mapped files, whose bytes are all there.
    AllThreads,
    /// Over all threads but one: a stream's reader needs a core of its own
    /// (with two cores, hashers on both slow the reads more than they gain).
    SpareOneForReader,
}

impl Spread {
    /// The threads that hash.
    pub(crate) fn threads(self) -> usize {
        let all = rayon::current_num_threads();
        match self {
            Spread::AllThreads => all,
            Spread::SpareOneForReader => all.saturating_sub(1).max(1),
        }
    }
}

/// How many leaves the leaf kernel hashes at once on this CPU (4 or 8 with
/// the crates' AVX2, 8 or 16 with AVX-512).
pub(crate) fn simd_degree(algorithm: Algorithm) -> usize {
    LeafKernel::active().lanes(algorithm)
}

/// The leaves one batch holds: as many whole leaves as fit in
/// [`BATCH_BYTES`], at least one, at most [`BATCH_MAX_LEAVES`].
pub(crate) fn batch_leaves(tree: &TreeParams) -> usize {
    (BATCH_BYTES / leaf_size(tree)).clamp(1, BATCH_MAX_LEAVES)
}

/// The leaves a mapped window holds: a batch, or more if that is what fills
/// a SIMD group on every thread twice over (the AVX-512 kernel hashes 16
/// BLAKE2s leaves at once), up to [`WINDOW_MAX_BYTES`] but on 64-bit
/// targets never less than a group a thread (with two windows in flight,
/// while one window's last groups are hashed the next has work for every
/// thread), and a whole number of SIMD groups where it holds more than one
/// (a group of 3 leaves costs a kernel as much time as a group of 16).
/// Mapped pages are given back as they are hashed, so a window's size costs
/// address space, not memory, and fewer, larger windows mean fewer
/// hand-offs and unmappings.
pub(crate) fn window_leaves(tree: &TreeParams) -> usize {
    let degree = simd_degree(tree.algorithm());
    let one_each = rayon::current_num_threads() * degree;
    let mut most = (WINDOW_MAX_BYTES / leaf_size(tree)).max(1);
    if cfg!(target_pointer_width = "64") {
        most = most.max(one_each);
    }
    let leaves = batch_leaves(tree)
        .max((2 * one_each).min(most))
        .min(BATCH_MAX_LEAVES);
    if leaves > degree {
        leaves / degree * degree
    } else {
        leaves
    }
}

/// Whether leaves are too big to buffer several at once.
pub(crate) fn has_big_leaves(tree: &TreeParams) -> bool {
    tree.leaf_size() > BIG_LEAF
}

/// The kernel that hashes a batch of `count` leaves, the last of which is
/// the input's final leaf if `ends`, spread over `threads` threads.
///
/// bt2sum's AVX-512 kernels hash 8 (BLAKE2b) or 16 (BLAKE2s) leaves at once
/// in about the time the crates' AVX2 kernels hash 4 or 8: twice the work
/// per thread, but in groups twice as large, and a group costs the same
/// whether its lanes are full or not. The input's final leaf, and a lone
/// leaf left over from a group, go to the crates a lane at a time. So
/// where a batch is too small to give every thread full groups, the
/// crates can finish sooner by spreading the leaves over more threads: 8
/// leaves on two threads are one AVX-512 group on one thread (and the last
/// leaf on the other), or two crate groups of 4, one on each, which is
/// never slower. Each way is counted in rounds (a lane group is two
/// halves, a lone leaf one, assigned to the least loaded thread), and the
/// crates are used where they take no more, if all their groups are full:
/// the crates hash the leaves left over from their last full group one
/// lane at a time, each in most of a group's time.
pub(crate) fn batch_kernel(
    tree: &TreeParams,
    count: usize,
    ends: bool,
    threads: usize,
) -> LeafKernel {
    if LeafKernel::active() != LeafKernel::Avx512 {
        return LeafKernel::Crates;
    }
    let algorithm = tree.algorithm();
    let (wide, narrow) = (
        LeafKernel::Avx512.lanes(algorithm),
        LeafKernel::Crates.lanes(algorithm),
    );
    let threads = threads.max(1);
    if count >= 4 * threads * wide || !count.is_multiple_of(narrow) {
        // Full groups on every thread, many times over; or leaves the
        // crates would hash a lane at a time.
        return LeafKernel::Avx512;
    }
    let last = usize::from(ends && count > 0);
    let body = count - last;
    let lone = usize::from(body % wide == 1);
    let groups = (body - lone).div_ceil(wide);
    let lanes = halves_per_thread(threads, groups, lone + last);
    let crates = halves_per_thread(threads, count / narrow, 0);
    if crates <= lanes {
        LeafKernel::Crates
    } else {
        LeafKernel::Avx512
    }
}

/// The most work any of `threads` threads gets, in halves of a lane group,
/// when `groups` lane groups (two halves each) and then `singles` lone
/// leaves (one half each) go each to the least loaded thread.
fn halves_per_thread(threads: usize, groups: usize, singles: usize) -> usize {
    let mut loads = vec![0usize; threads];
    for cost in std::iter::repeat_n(2, groups).chain(std::iter::repeat_n(1, singles)) {
        *loads.iter_mut().min().expect("at least one thread") += cost;
    }
    loads.into_iter().max().unwrap_or(0)
}

/// The leaves one pool task hashes out of `count`, with `kernel`: enough
/// to amortise the hand-off and fill a SIMD group, but no more than an
/// even share, so that few big leaves still spread over every thread. With
/// the AVX-512 kernels the share is rounded up to a whole lane group: they
/// hash 3 leaves in the time of 8 (or 16), so splitting a group over two
/// threads gains nothing.
pub(crate) fn leaves_per_task(
    tree: &TreeParams,
    kernel: LeafKernel,
    count: usize,
    spread: Spread,
) -> usize {
    let degree = kernel.lanes(tree.algorithm());
    let mut even_share = count.div_ceil(spread.threads()).max(1);
    if kernel == LeafKernel::Avx512 {
        even_share = even_share.next_multiple_of(degree);
    }
    (TASK_BYTES / leaf_size(tree))
        .next_multiple_of(degree)
        .max(degree)
        .min(even_share)
}

fn leaf_size(tree: &TreeParams) -> usize {
    // At most 2^32 - 1, which fits a usize on every supported target.
    tree.leaf_size() as usize
}

/// How long a run of many inputs waits for the next one to finish before it
/// tells its caller it is waiting (so that the lines reported so far are
/// flushed): long enough that a busy run flushes in big writes, short
/// enough that a blocked input does not hide the lines before it.
pub(crate) const QUIET_BEFORE_FLUSH: std::time::Duration = std::time::Duration::from_millis(20);

/// A file whose leaves are at most this many digests' worth of bytes has a
/// root that hashes at least 1/64 as much as its leaves (64-byte digests:
/// 4 KiB leaves): worth overlapping with the leaves (see
/// `many::hash_on_caller`).
pub(crate) const ROOT_SHARE: u64 = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_goes_to_the_least_loaded_thread() {
        assert_eq!(halves_per_thread(2, 1, 1), 2);
        assert_eq!(halves_per_thread(2, 2, 1), 3);
        assert_eq!(halves_per_thread(2, 3, 0), 4);
        assert_eq!(halves_per_thread(1, 3, 2), 8);
        assert_eq!(halves_per_thread(4, 0, 3), 1);
        assert_eq!(halves_per_thread(3, 0, 0), 0);
    }

    /// A window of mapped leaves holds two SIMD groups for every thread of
    /// the pool (one group each at the least, where the address space caps
    /// it), so that while one window's last groups are hashed the next
    /// has work for every thread: on pools of up to 256 threads, with the
    /// default leaves and small ones.
    #[test]
    fn windows_have_work_for_every_thread() {
        for threads in [1, 2, 16, 64, 256] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for algorithm in Algorithm::ALL {
                for leaf in [64 << 10, TreeParams::DEFAULT_LEAF_SIZE as u64] {
                    let tree = TreeParams::new(algorithm, 32, leaf).unwrap();
                    let (leaves, degree) =
                        pool.install(|| (window_leaves(&tree), simd_degree(algorithm)));
                    let wanted = if cfg!(target_pointer_width = "64") {
                        threads
                    } else {
                        1
                    };
                    assert!(
                        leaves / degree >= wanted && leaves >= batch_leaves(&tree),
                        "{threads} threads, {tree:?}: {leaves} leaves in a window"
                    );
                    // In u64: on 32-bit targets a group for each of 256
                    // threads is more bytes than a usize counts.
                    let one_each = (threads * degree) as u64 * leaf;
                    let most = (WINDOW_MAX_BYTES.max(BATCH_BYTES) as u64).max(one_each);
                    assert!(leaves as u64 * leaf <= most);
                }
            }
        }
    }

    /// With the AVX-512 kernels, a batch too small to give every thread a
    /// lane group goes to the crates, which spread it; larger ones keep
    /// the wide kernels. (Where the CPU has no AVX-512, always the crates.)
    #[test]
    fn small_batches_on_many_threads_go_to_the_crates() {
        let tree = TreeParams::default();
        if LeafKernel::active() != LeafKernel::Avx512 {
            assert_eq!(batch_kernel(&tree, 1000, true, 2), LeafKernel::Crates);
            return;
        }
        if LeafKernel::Crates.lanes(Algorithm::Blake2b) != 4 {
            crate::skip::skip(
                "small_batches_on_many_threads_go_to_the_crates",
                "the crates have no AVX2 here",
            );
            return;
        }
        // (leaves, ends, threads, AVX-512?)
        let table = [
            (8, true, 2, false),  // 7 leaves in one group, or 2 crate groups
            (4, true, 2, false),  // one group either way
            (9, true, 2, true),   // 8 in one group and the last, or 2 crate groups and a lane
            (16, true, 2, true),  // 2 groups and the last, or 4 crate groups
            (16, false, 2, true), // 2 groups, or 4
            (32, false, 2, true), // 4 groups, or 8
            (8, true, 1, true),   // one thread: fewer groups is sooner
            (8, false, 4, false), // one group, or 2 on two of the threads
            (7, true, 2, true),   // a crate group and 3 leaves a lane at a time
            (13, true, 2, true),  // likewise
            (2, true, 2, true),   // a lone leaf and the last, a lane each
            (1, true, 2, true),   // only the last leaf, a lane either way
            (10_000, true, 2, true),
        ];
        for (count, ends, threads, avx512) in table {
            let expected = if avx512 {
                LeafKernel::Avx512
            } else {
                LeafKernel::Crates
            };
            assert_eq!(
                batch_kernel(&tree, count, ends, threads),
                expected,
                "{count} leaves, ends {ends}, {threads} threads"
            );
        }
    }
}
