//! Thin wrappers over RustCrypto's ChaCha20-Poly1305 (IETF, 12-byte nonce) and
//! XChaCha20-Poly1305 (24-byte nonce), sealing and opening in place with a detached
//! 16-byte tag, so nothing allocates per packet.

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Tag, XChaCha20Poly1305, XNonce};

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

/// Encrypts `buffer` in place with ChaCha20-Poly1305 (IETF); returns the tag.
pub(crate) fn seal(
    buffer: &mut [u8],
    associated_data: &[u8],
    nonce: &[u8; 12],
    key: &Key,
) -> Result<[u8; MAC_BYTES], CryptoError> {
    let cipher = ChaCha20Poly1305::new(key.as_bytes().into());
    cipher
        .encrypt_in_place_detached(nonce.into(), associated_data, buffer)
        .map(Into::into)
        .map_err(|_| CryptoError)
}

/// Decrypts `buffer` in place with ChaCha20-Poly1305 (IETF) if `tag` verifies; on
/// failure `buffer` is unchanged.
pub(crate) fn open(
    buffer: &mut [u8],
    associated_data: &[u8],
    nonce: &[u8; 12],
    key: &Key,
    tag: &[u8; MAC_BYTES],
) -> Result<(), CryptoError> {
    let cipher = ChaCha20Poly1305::new(key.as_bytes().into());
    cipher
        .decrypt_in_place_detached(nonce.into(), associated_data, buffer, Tag::from_slice(tag))
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
