//! The netcode 1.02 wire format: connect tokens, challenge tokens, the seven packet
//! types and the replay window, byte-compatible with the C reference
//! (mas-bandwidth/netcode).
//!
//! netcode is a secure, connection-oriented protocol over UDP. A client may only
//! connect with a *connect token* made by a backend the game trusts (a web service or
//! matchmaker); every packet after the request is encrypted and authenticated with
//! ChaCha20-Poly1305 (IETF) under a per-direction session key carried in the token.
//! This module is the wire layer only: it writes and reads bytes, and holds no
//! connection state (the client and server state machines are built on it).
//!
//! # Packets
//!
//! | id | type | body (sealed unless noted) | sent by |
//! |----|------|----------------------------|---------|
//! | 0 | connection request | not encrypted: version, protocol id, expire timestamp, token nonce, sealed private part (1078 bytes in all) | client |
//! | 1 | connection denied | empty | server |
//! | 2 | connection challenge | challenge token sequence (u64), sealed challenge token (300) | server |
//! | 3 | connection response | challenge token sequence (u64), sealed challenge token (300) | client |
//! | 4 | keep-alive | client index (u32), max clients (u32) | both |
//! | 5 | payload | 1 to [`MAX_PAYLOAD_BYTES`] bytes | both |
//! | 6 | disconnect | empty | both |
//!
//! Types 1 to 6 start with a prefix byte (type in the low 4 bits, the number of
//! sequence bytes, 1 to 8, in the high 4 bits), then the packet sequence in that many
//! bytes little-endian, then the body sealed with ChaCha20-Poly1305 (nonce: 4 zero
//! bytes then the sequence as u64 little-endian; associated data: [`VERSION_INFO`],
//! the protocol id as u64 little-endian and the prefix byte) and its 16-byte tag. See
//! [`write_packet`] and [`read_packet`].
//!
//! # Connect tokens
//!
//! The backend shares a 32-byte private [`Key`] with its dedicated servers. When a
//! player asks to join, the backend authenticates the player (over HTTPS, with the
//! game's own accounts), picks servers, and makes a 2048-byte [`ConnectToken`] with
//! [`generate_connect_token`]. The token carries, in the clear for the client, the
//! servers' public addresses, the two session keys and the timeout; and a private
//! part sealed with XChaCha20-Poly1305 under the private key, which only the servers
//! can open: client id, the servers' internal addresses, the same two keys and 256
//! bytes of user data. The client sends the sealed private part in its connection
//! request; the server opens it with [`ConnectTokenPrivate::open`].
//!
//! ```
//! use netproto::netcode::{generate_connect_token, ConnectToken, Key, TokenParams};
//!
//! // Backend side: the private key comes from configuration, never from a client.
//! let private_key = Key::from_bytes([7; 32]);
//! let params = TokenParams {
//!     protocol_id: 0x1122_3344_5566_7788,
//!     client_id: 42,
//!     timeout_seconds: 10,
//!     expire_seconds: 30,
//!     public_addresses: vec!["203.0.113.7:40000".parse().unwrap()],
//!     internal_addresses: None,
//!     user_data: [0; 256],
//! };
//! let now = 1_700_000_000; // seconds since the Unix epoch
//! let token = generate_connect_token(&params, &private_key, now).unwrap();
//! let bytes: [u8; 2048] = token.write().unwrap();
//! // ...send `bytes` to the client over HTTPS...
//!
//! // Client side:
//! let token = ConnectToken::read(&bytes).unwrap();
//! assert_eq!(token.server_addresses, params.public_addresses);
//! assert_eq!(token.expire_timestamp, now + 30);
//! ```
//!
//! # Key management
//!
//! * The private key is shared only between the backend and the dedicated servers.
//!   Never ship it in a client build: whoever holds it can mint tokens for any client
//!   id and read every token's session keys.
//! * Rotate it like any other server secret; tokens live seconds, so a rotation only
//!   needs servers to accept the old key for one token lifetime.
//! * Session keys and nonces come from the OS random number generator ([`Key::random`],
//!   [`random_bytes`]); never reuse a (key, nonce) pair.
//! * Serve tokens over HTTPS only: a token lets its holder connect as that client until
//!   it expires, and it contains the session keys.

mod address;
mod challenge;
mod crypto;
mod error;
mod key;
mod packet;
mod replay;
mod token;
mod wire;

pub use address::{MAX_ADDRESS_BYTES, read_address, write_address};
pub use challenge::ChallengeToken;
pub use error::{ReadError, TokenError, WriteError};
pub use key::{Key, random_bytes, random_u64};
pub use packet::{AllowedPackets, Packet, PacketType, read_packet, write_packet};
pub use replay::{REPLAY_PROTECTION_BUFFER_SIZE, ReplayProtection};
pub use token::{
    ConnectToken, ConnectTokenPrivate, TokenParams, generate_connect_token,
    generate_connect_token_with,
};

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

#[cfg(test)]
mod tests;
