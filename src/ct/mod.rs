//! Constant-time comparison of byte strings, for verifying digests.
//!
//! [`timingsafe_bcmp`] returns 0 when two equal-length byte strings are equal
//! and non-zero otherwise, in a time that depends on the length alone: no
//! branch, no memory address and no variable-latency instruction depends on
//! the bytes. [`eq`] is the boolean face of it that check mode uses (and
//! that `bt2sum::Digest`'s `==` uses).
//!
//! The implementations, or levels ([`Level`]), follow FreeBSD's amd64
//! `timingsafe_bcmp(3)`. The assembly uses only instructions that Intel
//! lists as having data-operand-independent timing (on recent Intel CPUs
//! that guarantee holds when the DOITM mode is on, which the operating
//! system may or may not enable).
//!
//! # Choosing a level
//!
//! The environment variable `BT2SUM_ARCHLEVEL`, read once per process, may
//! name `portable`, `scalar` or `baseline`, like FreeBSD's `ARCHLEVEL`
//! (`x86-64-v2`, `x86-64-v3` and `x86-64-v4` mean `baseline`). On other
//! architectures every name means `portable`. An unset, empty, unknown or
//! non-UTF-8 value is ignored: the default level is used.
//!
//! ```
//! use bt2sum::ct::{self, Level};
//!
//! assert!(ct::eq(b"digest", b"digest"));
//! assert!(!ct::eq(b"digest", b"digesT"));
//! assert!(!ct::eq(b"digest", b"dig")); // lengths are public
//! for &level in Level::available() {
//!     assert_eq!(ct::timingsafe_bcmp(level, b"abc", b"abc"), 0);
//!     assert_ne!(ct::timingsafe_bcmp(level, b"abc", b"abd"), 0);
//! }
//! ```

use std::sync::OnceLock;

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod amd64;
mod portable;

/// One implementation of [`timingsafe_bcmp`]. Every level of a target
/// runs on every CPU of it; [`Level::default`] is the one [`eq`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// Rust for every target (the only level on other architectures and
    /// under Miri): 8 bytes at a time, with an optimisation barrier so that
    /// the compiler cannot add an early exit.
    Portable,
    /// Hand-written x86_64 assembly, general-purpose registers only.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    Scalar,
    /// Hand-written x86_64 assembly with SSE2 (16 bytes per load), which
    /// every x86_64 CPU has.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    Baseline,
}

impl Level {
    /// The levels of this target, slowest first.
    #[must_use]
    pub const fn available() -> &'static [Level] {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        let levels = &[Level::Portable, Level::Scalar, Level::Baseline];
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let levels = &[Level::Portable];
        levels
    }

    /// The lowercase name that `BT2SUM_ARCHLEVEL` uses for this level.
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

    /// The level a `BT2SUM_ARCHLEVEL` value names (ASCII case ignored,
    /// surrounding blanks trimmed), `None` for a name it does not know. A
    /// level this target lacks means the best one below it, `Portable`.
    fn from_name(name: &str) -> Option<Level> {
        let rank = match name.trim().to_ascii_lowercase().as_str() {
            "portable" => 0,
            "scalar" => 1,
            "baseline" | "x86-64-v2" | "x86-64-v3" | "x86-64-v4" => 2,
            _ => return None,
        };
        let levels = Level::available();
        Some(levels[rank.min(levels.len() - 1)])
    }
}

impl Default for Level {
    /// The level `BT2SUM_ARCHLEVEL` selects, read on the first call; if it
    /// selects none, the fastest level of this target.
    fn default() -> Level {
        static LEVEL: OnceLock<Level> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            std::env::var("BT2SUM_ARCHLEVEL")
                .ok()
                .and_then(|name| Level::from_name(&name))
                .unwrap_or(*Level::available().last().unwrap())
        })
    }
}

/// Compares `a` and `b` with `level`, in time that depends only on their
/// length; returns 0 if they are equal and a non-zero value otherwise
/// (which non-zero value is unspecified), as FreeBSD's
/// `timingsafe_bcmp(3)` does.
///
/// # Panics
///
/// If `a` and `b` have different lengths.
#[inline]
#[must_use]
pub fn timingsafe_bcmp(level: Level, a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(
        a.len(),
        b.len(),
        "timingsafe_bcmp: slices of different lengths"
    );
    match level {
        Level::Portable => portable::timingsafe_bcmp(a, b),
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        Level::Scalar => amd64::scalar(a, b),
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        Level::Baseline => amd64::baseline(a, b),
    }
}

/// Whether `a` and `b` are equal, compared in constant time with the
/// default level ([`Level::default`]). Slices of different lengths are
/// unequal at once: the length is not secret.
#[inline]
#[must_use]
pub fn eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && timingsafe_bcmp(Level::default(), a, b) == 0
}

#[cfg(test)]
mod tests {
    use super::Level;

    #[test]
    fn level_names() {
        let levels = Level::available();
        let best = *levels.last().unwrap();
        for &level in levels {
            assert_eq!(Level::from_name(level.name()), Some(level));
        }
        assert_eq!(Level::from_name(" PORTABLE "), Some(Level::Portable));
        for name in ["x86-64-v2", "x86-64-v3", "X86-64-V4", "baseline"] {
            assert_eq!(Level::from_name(name), Some(best), "{name}");
        }
        for unknown in ["", "avx2", "x86-64", "sse2", "portable2"] {
            assert_eq!(Level::from_name(unknown), None, "{unknown}");
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        assert_eq!(levels, [Level::Portable, Level::Scalar, Level::Baseline]);
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        assert_eq!(Level::from_name("scalar"), Some(Level::Portable));
    }
}
