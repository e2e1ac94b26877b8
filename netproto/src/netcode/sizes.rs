//! The sizes of netcode 1.02's fixed-size parts, as the C reference defines them.

/// The version string at the start of every connect token and connection request, and
/// in the associated data of every sealed body: `"NETCODE 1.02"` and a NUL.
pub const VERSION_INFO: [u8; 13] = *b"NETCODE 1.02\0";
/// Bytes of every key (private key, session keys, challenge key).
pub const KEY_BYTES: usize = 32;
/// Bytes of the Poly1305 authentication tag appended to everything sealed.
pub const MAC_BYTES: usize = 16;
/// Bytes of a connect token's nonce (XChaCha20-Poly1305).
pub const NONCE_BYTES: usize = 24;
/// Bytes of a whole connect token as a backend hands it to a client.
pub const CONNECT_TOKEN_BYTES: usize = 2048;
/// Bytes of the private part of a connect token, sealed (the tag is its last 16 bytes).
pub const CONNECT_TOKEN_PRIVATE_BYTES: usize = 1024;
/// Bytes of a sealed challenge token (the tag is its last 16 bytes).
pub const CHALLENGE_TOKEN_BYTES: usize = 300;
/// Bytes of the user data carried in a connect token's private part and a challenge token.
pub const USER_DATA_BYTES: usize = 256;
/// Most server addresses a connect token may carry (at least one is required).
pub const MAX_SERVERS_PER_CONNECT: usize = 32;
/// Bytes of a connection request: prefix, version, protocol id, expire timestamp, nonce
/// and the sealed private part.
pub const CONNECTION_REQUEST_BYTES: usize =
    1 + VERSION_INFO.len() + 8 + 8 + NONCE_BYTES + CONNECT_TOKEN_PRIVATE_BYTES;
/// Largest payload packet body.
pub const MAX_PAYLOAD_BYTES: usize = 1200;
/// Largest datagram this module writes besides the [`CONNECTION_REQUEST_BYTES`] request:
/// a payload packet with 8 sequence bytes.
pub const MAX_PACKET_BYTES: usize = 1 + 8 + MAX_PAYLOAD_BYTES + MAC_BYTES;
/// The reference reader's minimum for an encrypted packet (types 1 to 6): prefix, one
/// sequence byte and the tag.
pub const MIN_ENCRYPTED_PACKET_BYTES: usize = 1 + 1 + MAC_BYTES;
