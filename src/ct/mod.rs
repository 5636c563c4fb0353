//! Constant-time comparison of byte strings, for verifying digests.
//!
//! [`timingsafe_bcmp`] returns 0 when two equal-length byte strings are equal
//! and non-zero otherwise, in a time that depends on the length alone: no
//! branch, no memory address and no variable-latency instruction depends on
//! the bytes. [`eq`] is the safe, boolean face of it that check mode uses
//! (and that `bt2sum::Digest`'s `==` uses).
//!
//! There are up to three implementations, chosen like FreeBSD's `ARCHLEVEL`:
//!
//! - `portable` (every target, and the only one under Miri): Rust, eight
//!   bytes at a time, with an optimisation barrier on the accumulator.
//! - `scalar` (x86_64 only): hand-written assembly using general-purpose
//!   registers only.
//! - `baseline` (x86_64 only, the default there): hand-written assembly using
//!   SSE2, which every x86_64 CPU has.
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
//! once per process, may name `portable`, `scalar` or `baseline` (FreeBSD's
//! `x86-64-v2`, `x86-64-v3` and `x86-64-v4` are accepted as `baseline`, the
//! best level at or below them). A name is a cap: on a target without the
//! named level the best one below it is used, so on non-x86_64 targets every
//! name means `portable`. An unset, empty, unknown or non-UTF-8 value is
//! ignored and the default (`baseline` on x86_64, `portable` elsewhere) is
//! used.
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
/// `Scalar` and `Baseline` exist only on x86_64 (and not under Miri, which
/// cannot run assembly); [`Level::ALL`] lists the levels of this target.
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
}

impl Level {
    /// Every level available on this target, slowest first.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    pub const ALL: &'static [Level] = &[Level::Portable, Level::Scalar, Level::Baseline];
    /// Every level available on this target, slowest first.
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    pub const ALL: &'static [Level] = &[Level::Portable];

    /// The best level of this target: `Baseline` on x86_64, `Portable`
    /// elsewhere.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    pub const DEFAULT: Level = Level::Baseline;
    /// The best level of this target: `Baseline` on x86_64, `Portable`
    /// elsewhere.
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    pub const DEFAULT: Level = Level::Portable;

    /// The lowercase name that [`ARCHLEVEL_ENV`] uses for this level.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Scalar => "scalar",
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Baseline => "baseline",
        }
    }

    /// The address of the assembly function behind this level, if it is
    /// one: the disassembly audit finds the function's symbol from it (the
    /// symbols are not exported, so that two versions of the crate can link
    /// into one program).
    #[must_use]
    pub fn entry_address(self) -> Option<usize> {
        match self {
            Level::Portable => None,
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Scalar => Some(amd64::scalar_address()),
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Level::Baseline => Some(amd64::baseline_address()),
        }
    }

    /// Compares `a` and `b` in time that depends only on their length, with
    /// this implementation; returns 0 if they are equal and a non-zero value
    /// otherwise (which non-zero value is unspecified).
    ///
    /// # Panics
    ///
    /// If `a` and `b` have different lengths.
    #[inline]
    #[must_use]
    pub fn bcmp(self, a: &[u8], b: &[u8]) -> i32 {
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
        }
    }

    /// The level that an [`ARCHLEVEL_ENV`] value names, capped to what this
    /// target has; `None` for a name it does not know.
    ///
    /// Known names, ASCII case ignored, surrounding blanks trimmed:
    /// `portable`, `scalar`, `baseline`, and `x86-64-v2`, `x86-64-v3`,
    /// `x86-64-v4` (FreeBSD's higher levels, meaning `baseline` here).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Level> {
        let name = name.trim().to_ascii_lowercase();
        let wanted = match name.as_str() {
            "portable" => 0,
            "scalar" => 1,
            "baseline" | "x86-64-v2" | "x86-64-v3" | "x86-64-v4" => 2,
            _ => return None,
        };
        // ALL is sorted slowest first, so this is the best level at or
        // below the one asked for.
        Some(Level::ALL[wanted.min(Level::ALL.len() - 1)])
    }

    /// The level that [`ARCHLEVEL_ENV`] asks for now (not cached), or
    /// [`Level::DEFAULT`] if it is unset, empty, unknown or not UTF-8.
    #[must_use]
    pub fn from_env() -> Level {
        std::env::var(ARCHLEVEL_ENV)
            .ok()
            .and_then(|v| Level::from_name(&v))
            .unwrap_or(Level::DEFAULT)
    }
}

impl Default for Level {
    fn default() -> Level {
        Level::DEFAULT
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
    *LEVEL.get_or_init(Level::from_env)
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
    default_level().bcmp(a, b)
}

/// Whether `a` and `b` are equal, compared in constant time with the
/// implementation `BT2SUM_ARCHLEVEL` selects. Slices of different lengths
/// are unequal at once: the length is not secret.
#[inline]
#[must_use]
pub fn eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && default_level().bcmp(a, b) == 0
}
