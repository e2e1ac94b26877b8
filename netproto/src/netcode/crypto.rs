//! Thin wrappers over ring's ChaCha20-Poly1305 (IETF, 12-byte nonce: every packet and
//! challenge token) and RustCrypto's XChaCha20-Poly1305 (24-byte nonce: the connect
//! token's private part), sealing and opening in place with a detached 16-byte tag, so
//! nothing allocates per packet.
//!
//! Why two crates: ring's ChaCha20-Poly1305 (assembly) seals and opens a game-sized
//! packet several times faster than RustCrypto's, whose AVX2 back ends pay a large
//! fixed cost per message (measured on this project's machine: 0.4 against 3.2 µs
//! for an 8-byte seal and open, 0.7 against 4.7 µs at 100 bytes); ring has no
//! XChaCha20-Poly1305, which only the handshake uses.
//!
//! Both crates verify a tag themselves, in constant time (ring's
//! `verify_slices_are_equal`, RustCrypto's `subtle::ConstantTimeEq`), and neither
//! releases the plaintext of a tag that does not verify: no tag is compared here.
//!
//! Key copies: RustCrypto's cipher wipes its copy of the key when dropped
//! (`ZeroizeOnDrop`). ring's `LessSafeKey` does not, and ring offers no way to wipe
//! it: each seal and open builds one on the stack from the [`Key`] (a copy of the 32
//! bytes, no key schedule), so the session key's bytes stay in that stack frame until
//! later calls overwrite it. Wiping it would take `unsafe`, which this crate forbids.

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

use super::{Key, MAC_BYTES, NONCE_BYTES};

/// The cipher refused: sealing a too-long buffer, or a tag that does not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CryptoError;

/// The 12-byte IETF nonce of a packet or challenge token: 4 zero bytes, then the
/// sequence as u64 little-endian.
pub(crate) fn sequence_nonce(sequence: u64) -> [u8; 12] {
    let mut nonce = [0u8; 12];
    nonce[4..].copy_from_slice(&sequence.to_le_bytes());
    nonce
}

/// ring's key for `key` (a copy of the 32 bytes; no other setup).
fn ietf_key(key: &Key) -> Result<LessSafeKey, CryptoError> {
    let key = UnboundKey::new(&CHACHA20_POLY1305, key.as_bytes()).map_err(|_| CryptoError)?;
    Ok(LessSafeKey::new(key))
}

/// Encrypts `buffer` in place with ChaCha20-Poly1305 (IETF); returns the tag.
pub(crate) fn seal(
    buffer: &mut [u8],
    associated_data: &[u8],
    nonce: &[u8; 12],
    key: &Key,
) -> Result<[u8; MAC_BYTES], CryptoError> {
    let nonce = Nonce::assume_unique_for_key(*nonce);
    let tag = ietf_key(key)?
        .seal_in_place_separate_tag(nonce, Aad::from(associated_data), buffer)
        .map_err(|_| CryptoError)?;
    tag.as_ref().try_into().map_err(|_| CryptoError)
}

/// Decrypts `buffer` in place with ChaCha20-Poly1305 (IETF) if `tag` verifies; on
/// failure `buffer` is zeroed (ring authenticates while it decrypts, and wipes what
/// did not verify).
pub(crate) fn open(
    buffer: &mut [u8],
    associated_data: &[u8],
    nonce: &[u8; 12],
    key: &Key,
    tag: &[u8; MAC_BYTES],
) -> Result<(), CryptoError> {
    let nonce = Nonce::assume_unique_for_key(*nonce);
    let tag = ring::aead::Tag::from(*tag);
    ietf_key(key)?
        .open_in_place_separate_tag(nonce, Aad::from(associated_data), tag, buffer, 0..)
        .map(|_| ())
        .map_err(|_| CryptoError)
}

/// Encrypts `buffer` in place with XChaCha20-Poly1305; returns the tag.
pub(crate) fn seal_x(
    buffer: &mut [u8],
    associated_data: &[u8],
    nonce: &[u8; NONCE_BYTES],
    key: &Key,
) -> Result<[u8; MAC_BYTES], CryptoError> {
    let cipher = XChaCha20Poly1305::new(key.as_bytes().into());
    cipher
        .encrypt_in_place_detached(XNonce::from_slice(nonce), associated_data, buffer)
        .map(Into::into)
        .map_err(|_| CryptoError)
}

/// Decrypts `buffer` in place with XChaCha20-Poly1305 if `tag` verifies; on failure
/// `buffer` is unchanged.
pub(crate) fn open_x(
    buffer: &mut [u8],
    associated_data: &[u8],
    nonce: &[u8; NONCE_BYTES],
    key: &Key,
    tag: &[u8; MAC_BYTES],
) -> Result<(), CryptoError> {
    let cipher = XChaCha20Poly1305::new(key.as_bytes().into());
    cipher
        .decrypt_in_place_detached(
            XNonce::from_slice(nonce),
            associated_data,
            buffer,
            Tag::from_slice(tag),
        )
        .map_err(|_| CryptoError)
}

/// A 64-bit value derived from `key` and `counter` with HMAC-SHA256 (ring): without
/// the key, knowing any number of them (for other counters) tells nothing of the next.
/// Seeds each connection's skipped-sequence trap from the server's secret challenge
/// key, so the sans-IO server stays deterministic given its configuration.
pub(crate) fn keyed_u64(key: &Key, counter: u64) -> u64 {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key.as_bytes());
    let tag = ring::hmac::sign(&key, &counter.to_le_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&tag.as_ref()[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod keyed_tests {
    use super::*;

    #[test]
    fn keyed_values_depend_on_the_key_and_the_counter() {
        let a = Key::from_bytes([1; 32]);
        let b = Key::from_bytes([2; 32]);
        assert_eq!(keyed_u64(&a, 7), keyed_u64(&a, 7), "deterministic");
        assert_ne!(keyed_u64(&a, 7), keyed_u64(&a, 8));
        assert_ne!(keyed_u64(&a, 7), keyed_u64(&b, 7));
    }
}
