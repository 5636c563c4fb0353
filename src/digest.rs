//! [`Digest`]: a checksum or a leaf digest, compared in constant time.

use std::fmt;

/// A digest of 1 to 64 bytes: a checksum (the root's digest) or a leaf's.
///
/// Equality, with another digest or with bytes, is decided by
/// [`crate::ct::eq`] in time that depends on the length alone, so `==` is safe
/// for verifying a digest against an expected one.
///
/// ```
/// use bt2sum::{Digest, TreeParams, hash};
///
/// let digest = hash(&TreeParams::default(), b"hello s3git\n");
/// let listed = Digest::from_slice(&digest.as_bytes().to_vec()).unwrap();
/// assert!(digest == listed);
/// assert!(digest == *digest.as_bytes());
/// assert!(digest != [0u8; 64][..]);
/// ```
#[derive(Clone, Copy)]
pub struct Digest {
    bytes: [u8; Digest::MAX_LEN],
    len: u8,
}

impl Digest {
    /// The longest digest, in bytes (BLAKE2b's).
    pub const MAX_LEN: usize = crate::params::Algorithm::Blake2b.max_digest_size();

    /// A digest holding `bytes`; `None` unless they are 1 to 64 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Digest> {
        if bytes.is_empty() || bytes.len() > Self::MAX_LEN {
            return None;
        }
        let mut digest = Digest {
            bytes: [0; Self::MAX_LEN],
            len: bytes.len() as u8,
        };
        digest.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(digest)
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The digest as lowercase hex, as checksum lines print it.
    pub fn to_hex(&self) -> String {
        hex::encode(self.as_bytes())
    }
}

impl PartialEq for Digest {
    fn eq(&self, other: &Self) -> bool {
        crate::ct::eq(self.as_bytes(), other.as_bytes())
    }
}

impl Eq for Digest {}

impl PartialEq<[u8]> for Digest {
    fn eq(&self, other: &[u8]) -> bool {
        crate::ct::eq(self.as_bytes(), other)
    }
}

/// Kept as its bytes (in a spill store, say), and read back only if they
/// are a digest's length.
impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.as_bytes())
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = serde_bytes::ByteBuf::deserialize(deserializer)?;
        Digest::from_slice(&bytes).ok_or_else(|| serde::de::Error::custom("not a digest's length"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}
