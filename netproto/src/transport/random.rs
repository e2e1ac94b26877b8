//! Unpredictable (not cryptographic) numbers without a dependency.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A number an off-path attacker cannot guess: SipHash, keyed by the standard
/// library's [`RandomState`] (whose keys come from the operating system's random
/// source), of the wall-clock time, the process id and a process-wide counter.
///
/// Not a cryptographic generator: good for the challenge key and the client nonce,
/// which only need to be unguessable from outside, not for secrets that must resist
/// analysis.
pub fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// A 16-byte challenge key from two [`random_u64`] draws (not cryptographic).
pub fn random_key() -> [u8; 16] {
    let mut key = [0; 16];
    key[..8].copy_from_slice(&random_u64().to_le_bytes());
    key[8..].copy_from_slice(&random_u64().to_le_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_differ() {
        let a = random_u64();
        let b = random_u64();
        assert_ne!(a, b);
        assert_ne!(random_key(), random_key());
    }
}
