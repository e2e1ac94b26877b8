//! The challenge token: what a server sends a client in a challenge packet and gets
//! back in the response, sealed under a key only the server knows, so the server keeps
//! no state for a client until it answers.
//!
//! Plaintext (300 bytes): client id (u64 LE), user data (256), zeros to byte 284, then
//! the 16-byte tag. Sealed with ChaCha20-Poly1305 (IETF) under the server's challenge
//! key, nonce = 4 zero bytes ++ the challenge token sequence (u64 LE), no associated
//! data.

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::crypto::{open, seal, sequence_nonce};
use super::{CHALLENGE_TOKEN_BYTES, Key, MAC_BYTES, TokenError, USER_DATA_BYTES};

const CHALLENGE_MAC_START: usize = CHALLENGE_TOKEN_BYTES - MAC_BYTES;

/// The contents of a challenge token, wiped when dropped (client id and user data are
/// overwritten with zeros).
///
/// ```
/// use netproto::netcode::Key;
/// use netproto::internals::netcode::ChallengeToken;
///
/// let key = Key::random(); // the server's challenge key, fresh each run
/// let token = ChallengeToken { client_id: 7, user_data: [3; 256] };
/// let sealed = token.seal(1, &key);
/// assert_eq!(ChallengeToken::open(&sealed, 1, &key).unwrap(), token);
/// assert!(ChallengeToken::open(&sealed, 2, &key).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeToken {
    /// The client id from the connect token.
    pub client_id: u64,
    /// The user data from the connect token.
    pub user_data: [u8; USER_DATA_BYTES],
}

impl Drop for ChallengeToken {
    fn drop(&mut self) {
        self.client_id.zeroize();
        self.user_data.zeroize();
    }
}

impl ZeroizeOnDrop for ChallengeToken {}

impl ChallengeToken {
    /// The 300 sealed bytes, under `key` with the nonce built from `sequence` (the
    /// server's challenge token sequence: never reuse one under the same key).
    pub fn seal(&self, sequence: u64, key: &Key) -> [u8; CHALLENGE_TOKEN_BYTES] {
        // Plaintext until sealed in place below (sealing these sizes cannot fail).
        let mut data = [0u8; CHALLENGE_TOKEN_BYTES];
        data[..8].copy_from_slice(&self.client_id.to_le_bytes());
        data[8..8 + USER_DATA_BYTES].copy_from_slice(&self.user_data);
        let (body, mac) = data.split_at_mut(CHALLENGE_MAC_START);
        match seal(body, &[], &sequence_nonce(sequence), key) {
            Ok(tag) => mac.copy_from_slice(&tag),
            // ChaCha20-Poly1305 refuses only plaintexts of more than 256 GiB.
            Err(_) => unreachable!("sealing 284 bytes cannot fail"),
        }
        data
    }

    /// Opens a sealed challenge token; [`TokenError::Decrypt`] if the tag does not
    /// verify under `key` and `sequence` (the AEAD verifies the tag, in constant
    /// time). Like the reference, the zero padding is not checked. The client id and
    /// user data in the buffer the token is opened in are wiped before this returns
    /// (ring wipes the buffer itself when the tag does not verify).
    pub fn open(
        sealed: &[u8; CHALLENGE_TOKEN_BYTES],
        sequence: u64,
        key: &Key,
    ) -> Result<Self, TokenError> {
        let mut data = *sealed;
        let (body, mac) = data.split_at_mut(CHALLENGE_MAC_START);
        let tag: [u8; MAC_BYTES] = (&*mac).try_into().map_err(|_| TokenError::Truncated)?;
        open(body, &[], &sequence_nonce(sequence), key, &tag).map_err(|_| TokenError::Decrypt)?;
        // Read straight into the token, which wipes itself, rather than through
        // temporaries that would not be.
        let mut token = Self {
            client_id: 0,
            user_data: [0; USER_DATA_BYTES],
        };
        let (client_id, rest) = data.split_at(8);
        token.client_id =
            u64::from_le_bytes(client_id.try_into().map_err(|_| TokenError::Truncated)?);
        token.user_data.copy_from_slice(&rest[..USER_DATA_BYTES]);
        data[..8 + USER_DATA_BYTES].zeroize();
        Ok(token)
    }
}
