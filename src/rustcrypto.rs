//! The RustCrypto `digest` 0.10 traits, with the `digest` feature.

use std::io::{self, Write};

use digest::consts::U64;
use digest::{
    FixedOutput, FixedOutputReset, HashMarker, InvalidBufferSize, InvalidOutputSize, Output,
    OutputSizeUser, Reset, Update, VariableOutput, VariableOutputReset,
};

use crate::digest::Digest;
use crate::engine::TreeHasher;
use crate::params::{Algorithm, TreeParams};

impl TreeHasher {
    /// Writes the checksum to `out` if it is the checksum's size, and starts
    /// the hasher again with the same parameters.
    fn finish_into(&mut self, out: &mut [u8]) -> Result<(), InvalidBufferSize> {
        if out.len() != self.tree().digest_size() {
            return Err(InvalidBufferSize);
        }
        let tree = *self.tree();
        let digest = std::mem::replace(self, TreeHasher::new(&tree)).finalize();
        let digest = digest.unwrap_or_else(|error| panic!("BLAKE2 tree hash: {error}"));
        out.copy_from_slice(digest.as_bytes());
        Ok(())
    }
}

/// # Panics
///
/// Where the library would return an error, which the trait cannot: when
/// memory for even a 4 KiB buffer is refused, and when a BLAKE2s input has
/// more leaves than its node offsets can number (2^48). A hasher that
/// panicked is not to be used again.
impl Update for TreeHasher {
    fn update(&mut self, data: &[u8]) {
        if let Err(error) = self.write_all(data) {
            panic!("BLAKE2 tree hash: {error}");
        }
    }
}

impl Reset for TreeHasher {
    /// Forgets what was written; the parameters stay.
    fn reset(&mut self) {
        *self = TreeHasher::new(self.tree());
    }
}

impl HashMarker for TreeHasher {}

impl VariableOutput for TreeHasher {
    const MAX_OUTPUT_SIZE: usize = Digest::MAX_LEN;

    /// BLAKE2b with digests of `output_size` bytes (1 to 64) and the
    /// default leaf size; other parameters come from [`TreeHasher::new`].
    fn new(output_size: usize) -> Result<Self, InvalidOutputSize> {
        let leaf_size = TreeParams::default().leaf_size();
        TreeParams::new(Algorithm::Blake2b, output_size, leaf_size)
            .map(|tree| TreeHasher::new(&tree))
            .map_err(|_| InvalidOutputSize)
    }

    fn output_size(&self) -> usize {
        self.tree().digest_size()
    }

    fn finalize_variable(mut self, out: &mut [u8]) -> Result<(), InvalidBufferSize> {
        self.finish_into(out)
    }
}

impl VariableOutputReset for TreeHasher {
    fn finalize_variable_reset(&mut self, out: &mut [u8]) -> Result<(), InvalidBufferSize> {
        self.finish_into(out)
    }
}

/// The tree hash with the default parameters (BLAKE2b, 64-byte digests,
/// 5 MiB leaves: what `bt2sum FILE` prints), as a [`digest::Digest`] with a
/// fixed 64-byte output. Bytes can also be written to it ([`Write`]).
///
/// ```
/// use bt2sum::DefaultTreeHasher;
/// use digest::Digest;
///
/// let digest = DefaultTreeHasher::digest(b"hello s3git\n");
/// assert_eq!(hex::encode(&digest[..8]), "18e622875a89cede");
/// ```
///
/// # Panics
///
/// Taking bytes panics when memory for even a 4 KiB buffer is refused,
/// which the traits cannot report (a hasher that panicked is not to be used
/// again). Nothing else can fail with these parameters.
#[derive(Default)]
pub struct DefaultTreeHasher(TreeHasher);

impl Update for DefaultTreeHasher {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }
}

impl Reset for DefaultTreeHasher {
    fn reset(&mut self) {
        Reset::reset(&mut self.0);
    }
}

impl HashMarker for DefaultTreeHasher {}

impl OutputSizeUser for DefaultTreeHasher {
    type OutputSize = U64;
}

impl FixedOutput for DefaultTreeHasher {
    fn finalize_into(mut self, out: &mut Output<Self>) {
        self.finalize_into_reset(out);
    }
}

impl FixedOutputReset for DefaultTreeHasher {
    fn finalize_into_reset(&mut self, out: &mut Output<Self>) {
        self.0
            .finish_into(out)
            .expect("the output is the checksum's 64 bytes");
    }
}

impl Write for DefaultTreeHasher {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
