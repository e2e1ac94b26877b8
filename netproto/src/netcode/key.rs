//! Keys and OS randomness.

use std::fmt;

use super::KEY_BYTES;

/// A 32-byte symmetric key: the backend's private key, a session key or a server's
/// challenge key. Its `Debug` output never shows the bytes.
///
/// ```
/// use netproto::netcode::Key;
///
/// let key = Key::from_bytes([1; 32]);
/// assert_eq!(format!("{key:?}"), "Key(..)");
/// assert_ne!(Key::random(), Key::random());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; KEY_BYTES]);

impl Key {
    /// The key with these bytes.
    pub const fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        Self(bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }

    /// A fresh key from the operating system's random number generator.
    ///
    /// # Panics
    ///
    /// Only if the OS random number generator fails (see `random_bytes`).
    pub fn random() -> Self {
        Self(random_bytes())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

/// `N` bytes from the operating system's random number generator (nonces, keys).
///
/// # Panics
///
/// Only if the OS random number generator fails: there is no safe fallback for key and
/// nonce material, so this does not return weak bytes.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("the OS random number generator failed: {e}");
    }
    bytes
}

/// A `u64` from the operating system's random number generator.
///
/// # Panics
///
/// Only if the OS random number generator fails (see `random_bytes`).
pub fn random_u64() -> u64 {
    u64::from_le_bytes(random_bytes())
}
