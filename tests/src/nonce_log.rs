//! Every (key, nonce) pair sealed on a wire, to prove that none is ever used twice.
//!
//! netcode seals every packet but the request with ChaCha20-Poly1305 under one key per
//! direction, with the packet's 64-bit sequence as the nonce. The sequence travels in
//! the clear (the prefix byte's high nibble says how many of its bytes follow), so a
//! test that knows which key each datagram was sealed with (the session keys of the
//! token it made) can read the nonce of every datagram from the outside, with no hook
//! in the library.
//!
//! A datagram sent again byte for byte (a resent connection response) is no reuse:
//! the same key, nonce and plaintext give the same ciphertext, which tells an observer
//! nothing new. Two different datagrams under one (key, nonce) are: they leak the XOR
//! of their plaintexts and let an attacker forge Poly1305 tags.

use std::collections::HashMap;
use std::collections::hash_map::{DefaultHasher, Entry};
use std::hash::{Hash, Hasher};

/// The key and nonce of one sealed datagram, and where it was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reuse {
    /// The key the datagram was sealed with.
    pub key: [u8; 32],
    /// Its sequence (the nonce).
    pub sequence: u64,
    /// Which datagram of the log it was (counting from 0, every recorded datagram).
    pub datagram: u64,
}

/// The (key, sequence) pairs seen so far, with a hash of the datagram each sealed.
#[derive(Debug, Default)]
pub struct NonceLog {
    seen: HashMap<([u8; 32], u64), u64>,
    datagrams: u64,
    reuses: Vec<Reuse>,
}

/// The sequence of a sealed netcode datagram, `None` for a connection request (not
/// sealed with a session key) or a datagram too short to carry its sequence.
pub fn sealed_sequence(datagram: &[u8]) -> Option<u64> {
    let (&prefix, rest) = datagram.split_first()?;
    if prefix & 0x0f == 0 {
        return None; // a connection request: sealed with the backend's key, by token
    }
    let bytes = usize::from(prefix >> 4);
    if !(1..=8).contains(&bytes) || rest.len() < bytes {
        return None;
    }
    let mut le = [0u8; 8];
    le[..bytes].copy_from_slice(&rest[..bytes]);
    Some(u64::from_le_bytes(le))
}

impl NonceLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a datagram sealed with `key`; `false` (and the pair remembered in
    /// [`reuses`](Self::reuses)) when that key already sealed another datagram under
    /// that nonce.
    pub fn record(&mut self, key: &[u8; 32], datagram: &[u8]) -> bool {
        let Some(sequence) = sealed_sequence(datagram) else {
            return true;
        };
        let index = self.datagrams;
        self.datagrams += 1;
        let mut hasher = DefaultHasher::new();
        datagram.hash(&mut hasher);
        let hash = hasher.finish();
        match self.seen.entry((*key, sequence)) {
            Entry::Vacant(entry) => {
                entry.insert(hash);
                return true;
            }
            Entry::Occupied(entry) if *entry.get() == hash => return true,
            Entry::Occupied(_) => {}
        }
        self.reuses.push(Reuse {
            key: *key,
            sequence,
            datagram: index,
        });
        false
    }

    /// Sealed datagrams recorded.
    pub fn datagrams(&self) -> u64 {
        self.datagrams
    }

    /// Every (key, nonce) pair seen more than once, in order.
    pub fn reuses(&self) -> &[Reuse] {
        &self.reuses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_and_sequence_is_a_reuse() {
        let mut log = NonceLog::new();
        // Payload (type 5), two sequence bytes: sequence 0x0102.
        let a = [0x25, 0x02, 0x01, 0xaa];
        assert!(log.record(&[1; 32], &a));
        assert!(log.record(&[2; 32], &a), "another key");
        assert!(
            log.record(&[1; 32], &[0x15, 0x03, 0xbb]),
            "another sequence"
        );
        assert!(log.record(&[1; 32], &a), "the same datagram again");
        assert!(
            !log.record(&[1; 32], &[0x26, 0x02, 0x01]),
            "same key, same nonce, another datagram"
        );
        assert_eq!(log.reuses().len(), 1);
        assert_eq!(log.reuses()[0].sequence, 0x0102);
        assert_eq!(log.reuses()[0].datagram, 4);
        assert_eq!(log.datagrams(), 5);
    }

    #[test]
    fn requests_and_short_datagrams_are_not_sealed_by_a_session_key() {
        assert_eq!(sealed_sequence(&[0x00, 1, 2, 3]), None);
        assert_eq!(sealed_sequence(&[0x35, 1, 2]), None);
        assert_eq!(sealed_sequence(&[0x95, 1]), None);
        assert_eq!(sealed_sequence(&[]), None);
        assert_eq!(
            sealed_sequence(&[0x86, 1, 0, 0, 0, 0, 0, 0, 0x80]),
            Some((1 << 63) | 1)
        );
    }
}
