//! Constant-time comparison of byte strings, for verifying digests.
//!
//! [`timingsafe_bcmp`] returns 0 when two equal-length byte strings are equal
//! and non-zero otherwise, in a time that depends on the length alone: no
//! branch, no memory address and no variable-latency instruction depends on
//! the bytes. [`eq`] is the safe, boolean face of it that check mode uses
//! (and that `bt2sum::Digest`'s `==` uses).
//!
//! There are up to four implementations, chosen like FreeBSD's `ARCHLEVEL`:
//!
//! - `portable` (every target, and the only one under Miri): Rust, eight
//!   bytes at a time, with an optimisation barrier on the accumulator.
//! - `scalar` (x86_64 only): hand-written assembly using general-purpose
//!   registers only.
//! - `baseline` (x86_64 only): hand-written assembly using SSE2, which every
//!   x86_64 CPU has.
//! - `avx2` (x86_64 only, for x86-64-v3 CPUs): hand-written assembly using
//!   SSE2 up to 64 bytes and 32-byte AVX2 vectors beyond; it runs only on a
//!   CPU that has AVX2.
//!
//! The default is the fastest level this CPU can run: `avx2` on x86_64 CPUs
//! with AVX2, `baseline` on the other x86_64 CPUs, `portable` elsewhere.
//!
//! The assembly versions use only instructions that Intel lists as having
//! data-operand-independent timing (on recent Intel CPUs that guarantee
//! holds when the DOITM mode is on, which the operating system may or may
//! not enable). The test suite checks them by machine: against a plain loop
//! for every length up to 300 and every alignment, against guard pages,
//! under valgrind memcheck with the inputs marked undefined, and by
//! disassembling them against an allowlist.
//!
//! # Choosing an implementation
//!
//! The environment variable `BT2SUM_ARCHLEVEL` ([`ARCHLEVEL_ENV`]), read
//! once per process, may name `portable`, `scalar`, `baseline` or `avx2`
//! (FreeBSD's `x86-64-v2` is accepted as `baseline`, and `x86-64-v3` and
//! `x86-64-v4` as `avx2`). A name is a cap: the best level this CPU can run
//! at or below the named one is used, so `avx2` means `baseline` on an
//! x86_64 CPU without AVX2, and every name means `portable` on other
//! targets. An unset, empty, unknown or non-UTF-8 value is ignored and the
//! default is used.
//!
//! ```
//! use bt2sum::ct;
//!
//! assert!(ct::eq(b"digest", b"digest"));
//! assert!(!ct::eq(b"digest", b"digesT"));
//! assert!(!ct::eq(b"digest", b"dig")); // lengths are public
//! assert_eq!(ct::timingsafe_bcmp(b"abc", b"abc"), 0);
//! assert_ne!(ct::timingsafe_bcmp(b"abc", b"abd"), 0);
//! ```

use std::fmt;
use std::sync::OnceLock;

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod amd64;
mod portable;

/// The environment variable that selects the implementation, like
/// FreeBSD's `ARCHLEVEL`.
pub const ARCHLEVEL_ENV: &str = "BT2SUM_ARCHLEVEL";

/// One implementation of [`timingsafe_bcmp`], for the tests, benchmarks and
/// examples that compare them.
///
/// `Scalar`, `Baseline` and `Avx2` exist only on x86_64 (and not under Miri,
/// which cannot run assembly); [`Level::ALL`] lists the levels compiled for
/// this target, and [`Level::available`] those that this CPU can run.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// Rust code for every target: 8 bytes at a time, with an optimisation
    /// barrier so the compiler cannot add an early exit.
    Portable,
    /// Hand-written x86_64 assembly, general-purpose registers only.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    Scalar,
    /// Hand-written x86_64 assembly with SSE2 (16 bytes per load).
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    Baseline,
    /// Hand-written x86_64 assembly with AVX2 (32 bytes per load beyond 64
    /// bytes), for x86-64-v3 CPUs; [`Level::bcmp`] panics on a CPU without
    /// AVX2.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    Avx2,
}

impl Level {
    /// Every level compiled for this target, slowest first. A CPU may lack
    /// the instructions of the last ones: see [`Level::available`].
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    pub const ALL: &'static [Level] =
        &[Level::Portable, Level::Scalar, Level::Baseline, Level::Avx2];
    /// Every level compiled for this target, slowest first. A CPU may lack
    /// the instructions of the last ones: see [`Level::available`].
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    pub const ALL: &'static [Level] = &[Level::Portable];

    /// Whether this CPU can run this level (every level but `Avx2` runs on
    /// every CPU of its target).
    #[must_use]
    pub fn is_available(self) -> bool {
        match self {
            Level::Portable => true,
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Scalar | Level::Baseline => true,
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Avx2 => amd64::has_avx2(),
        }
    }

    /// The levels this CPU can run, slowest first: a prefix of
    /// [`Level::ALL`], since each level needs the instructions of the ones
    /// before it.
    #[must_use]
    pub fn available() -> &'static [Level] {
        let n = Level::ALL
            .iter()
            .take_while(|level| level.is_available())
            .count();
        &Level::ALL[..n]
    }

    /// The fastest level this CPU can run, the default: `Avx2` on x86_64
    /// CPUs with AVX2, `Baseline` on other x86_64 CPUs, `Portable`
    /// elsewhere.
    #[must_use]
    pub fn best() -> Level {
        *Level::available()
            .last()
            .expect("Portable is always available")
    }

    /// The lowercase name that [`ARCHLEVEL_ENV`] uses for this level.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Scalar => "scalar",
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Baseline => "baseline",
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Avx2 => "avx2",
        }
    }

    /// The address of the function behind this level: the disassembly
    /// audit finds the function's symbol from it (the symbols are not
    /// exported, so that two versions of the crate can link into one
    /// program). Available or not, every compiled level has one.
    #[must_use]
    pub fn entry_address(self) -> usize {
        match self {
            Level::Portable => portable::address(),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Scalar => amd64::scalar_address(),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Baseline => amd64::baseline_address(),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Avx2 => amd64::avx2_address(),
        }
    }

    /// Compares `a` and `b` in time that depends only on their length, with
    /// this implementation; returns 0 if they are equal and a non-zero value
    /// otherwise (which non-zero value is unspecified).
    ///
    /// It checks on every call that this CPU can run the level (for
    /// `Avx2` a load and a branch, which costs comparisons of a few bytes
    /// about a tenth of their time); code that has checked once calls
    /// [`Level::bcmp_unchecked`] instead, as [`eq`] does.
    ///
    /// # Panics
    ///
    /// If this CPU cannot run this level (see [`Level::available`]), or if
    /// `a` and `b` have different lengths.
    #[inline]
    #[must_use]
    pub fn bcmp(self, a: &[u8], b: &[u8]) -> i32 {
        if !self.is_available() {
            unavailable(self);
        }
        // SAFETY: checked just above.
        unsafe { self.bcmp_unchecked(a, b) }
    }

    /// [`Level::bcmp`] without checking that this CPU can run the level.
    ///
    /// # Safety
    ///
    /// This CPU must be able to run the level: [`Level::is_available`]
    /// returned true for it in this process (the answer cannot change while
    /// the process runs), or it came from [`Level::available`],
    /// [`Level::best`], [`Level::from_name`] or [`Level::from_env`], which
    /// only return such levels. On another CPU the assembly would raise an
    /// invalid-opcode fault.
    ///
    /// # Panics
    ///
    /// If `a` and `b` have different lengths.
    #[inline]
    #[must_use]
    pub unsafe fn bcmp_unchecked(self, a: &[u8], b: &[u8]) -> i32 {
        assert!(
            a.len() == b.len(),
            "timingsafe_bcmp: slices of different lengths ({} and {})",
            a.len(),
            b.len()
        );
        match self {
            Level::Portable => portable::timingsafe_bcmp(a, b),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Scalar => amd64::scalar(a, b),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Baseline => amd64::baseline(a, b),
            // SAFETY: the caller vouches that this CPU runs this level,
            // which for Avx2 means that it has AVX2.
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Avx2 => unsafe { amd64::avx2(a, b) },
        }
    }

    /// The level that an [`ARCHLEVEL_ENV`] value names, capped to what this
    /// CPU can run; `None` for a name it does not know.
    ///
    /// Known names, ASCII case ignored, surrounding blanks trimmed:
    /// `portable`, `scalar`, `baseline`, `avx2`, and FreeBSD's `x86-64-v2`
    /// (meaning `baseline`), `x86-64-v3` and `x86-64-v4` (meaning `avx2`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Level> {
        let name = name.trim().to_ascii_lowercase();
        // The rank of the named level in the x86_64 `ALL`.
        let wanted = match name.as_str() {
            "portable" => 0,
            "scalar" => 1,
            "baseline" | "x86-64-v2" => 2,
            "avx2" | "x86-64-v3" | "x86-64-v4" => 3,
            _ => return None,
        };
        // `available` is sorted slowest first, so this is the best level
        // at or below the one asked for.
        let available = Level::available();
        Some(available[wanted.min(available.len() - 1)])
    }

    /// The level that [`ARCHLEVEL_ENV`] asks for now (not cached), or
    /// [`Level::best`] if it is unset, empty, unknown or not UTF-8.
    #[must_use]
    pub fn from_env() -> Level {
        std::env::var(ARCHLEVEL_ENV)
            .ok()
            .and_then(|v| Level::from_name(&v))
            .unwrap_or_else(Level::best)
    }
}

/// The panic of [`Level::bcmp`] on a level this CPU cannot run, out of line
/// so that the check costs the comparisons only a test and a branch.
#[cold]
#[inline(never)]
fn unavailable(level: Level) -> ! {
    let needs = match level {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        Level::Avx2 => "AVX2",
        // Not reached: these levels run on every CPU of their target.
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        Level::Scalar | Level::Baseline => "its instructions",
        Level::Portable => "its instructions",
    };
    panic!(
        "timingsafe_bcmp: level {level} needs a CPU with {needs}, and this one lacks it \
         (Level::available lists the levels it can run)"
    )
}

impl Default for Level {
    /// [`Level::best`].
    fn default() -> Level {
        Level::best()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The level [`eq`] uses: [`Level::from_env`], read on the first call and
/// cached for the life of the process.
#[doc(hidden)]
#[must_use]
pub fn default_level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let level = Level::from_env();
        // from_env only returns levels this CPU runs; the comparisons
        // below rely on it to skip the check on every call.
        assert!(
            level.is_available(),
            "from_env chose {level}, which this CPU cannot run"
        );
        level
    })
}

/// Compares `a` and `b` in time that depends only on their length, with the
/// implementation `BT2SUM_ARCHLEVEL` selects; returns 0 if they are equal
/// and a non-zero value otherwise (which non-zero value is unspecified), as
/// FreeBSD's `timingsafe_bcmp(3)` does.
///
/// # Panics
///
/// If `a` and `b` have different lengths.
#[inline]
#[must_use]
pub fn timingsafe_bcmp(a: &[u8], b: &[u8]) -> i32 {
    // SAFETY: default_level only returns levels this CPU can run (it
    // asserts so once per process).
    unsafe { default_level().bcmp_unchecked(a, b) }
}

/// Whether `a` and `b` are equal, compared in constant time with the
/// implementation `BT2SUM_ARCHLEVEL` selects. Slices of different lengths
/// are unequal at once: the length is not secret.
#[inline]
#[must_use]
pub fn eq(a: &[u8], b: &[u8]) -> bool {
    // SAFETY: default_level only returns levels this CPU can run (it
    // asserts so once per process).
    a.len() == b.len() && unsafe { default_level().bcmp_unchecked(a, b) } == 0
}
