//! The netcode 1.02 wire format: connect tokens, challenge tokens, the seven packet
//! types and the replay window, byte-compatible with the C reference
//! (mas-bandwidth/netcode).
//!
//! netcode is a secure, connection-oriented protocol over UDP. A client may only
//! connect with a *connect token* made by a backend the game trusts (a web service or
//! matchmaker); every packet after the request is encrypted and authenticated with
//! ChaCha20-Poly1305 (IETF) under a per-direction session key carried in the token.
//! This module is the wire layer only: it writes and reads bytes, and holds no
//! connection state (the client and server state machines are built on it:
//! [`connection`](crate::connection); to exchange raw payloads with a plain netcode
//! peer, [`transport::NetcodeServer`](crate::transport::NetcodeServer) and
//! [`transport::NetcodeClient`](crate::transport::NetcodeClient)).
//!
//! Where netproto follows the standard (its STANDARD.md) over other
//! implementations: the public token bytes are the standard's layout, 2048 bytes
//! zero-padded, starting with the version info (renetcode's `ConnectToken::write`
//! puts the client id first and does not pad); a payload packet carries 1 to 1200
//! bytes, and others are dropped (renetcode sends 0 and up to 1300); a negative
//! token timeout is "no timeout", and 0 is refused (the standard gives it no
//! meaning).
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
//! `write_packet` and `read_packet` (crate-private: the client and server are their only
//! callers).
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
//! request; the server opens it with the private key.
//!
//! ```
//! use netproto::netcode::{generate_connect_token, ConnectToken, Key, TokenParams};
//!
//! // Backend side: the private key comes from configuration (`Key::from_env`,
//! // `Key::from_file`), never from a client. A fixed one for this example:
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
//! * Load it from the server's secret store, as hex or base64 in an environment
//!   variable or a file: [`Key::from_env`], [`Key::from_file`] (or [`Key::from_text`],
//!   [`Key::from_hex`], [`Key::from_base64`] for a string from elsewhere). Their
//!   [`KeyError`] says what is wrong (length found, encoding, variable, path) and
//!   never shows the key.
//! * Rotate it like any other server secret. A server opens tokens with one key, so
//!   run servers with the new key beside those with the old one, have the backend mint
//!   tokens with the new key naming only the new servers, and stop the old servers
//!   once the last token made with the old key has expired (tokens live minutes).
//! * Session keys and nonces come from the OS random number generator ([`Key::random`],
//!   `random_bytes`); never reuse a (key, nonce) pair.
//! * Serve tokens over HTTPS only: a token lets its holder connect as that client until
//!   it expires, and it contains the session keys.
//!
//! # Secrets in memory
//!
//! * Every [`Key`] (private, session and challenge keys) is overwritten with zeros
//!   when dropped, and so are the opened private part of a connect token
//!   (`ConnectTokenPrivate`: its session keys, user data and client id) and the
//!   contents of a challenge token (`ChallengeToken`). Where a private part or a
//!   challenge token is opened, the plaintext fields left in the buffer are wiped
//!   before the function returns (a failed open leaves only ciphertext), and so is a
//!   private part written for sealing when sealing fails. Nothing is allocated for it.
//! * Not wiped: ring's per-call copy of a session key (see `crypto.rs`), the copies
//!   the compiler makes when it moves a value, and whatever the caller copies out
//!   (`Key::as_bytes`, a token's `user_data`).
//! * Comparisons: two `Key`s compare in constant time. Authentication tags are
//!   verified by the AEAD crates, in constant time; netproto compares none itself.
//!   What else is compared is public: the version string, protocol id, timestamps,
//!   sequences, addresses and client ids; and the server's table of used connect
//!   tokens is keyed by the tag of the sealed private part, which travels in the clear
//!   in every connection request (a hash-map lookup on it leaks nothing an observer
//!   of the request does not already have).

// The modules below hold `pub` items that only `crate::internals` re-exports (for the
// conformance tests and fuzz targets): without that feature they are crate-private.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod address;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod challenge;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod codec;
pub(crate) mod crypto;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod error;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod key;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod packet_type;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod replay;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod sizes;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod token;
mod wire;

// What a game's backend and servers use: keys and connect tokens. The packet codec
// below them is the client's and server's business.
pub use error::TokenError;
pub use key::{Key, KeyError, MAX_KEY_FILE_BYTES};
pub use sizes::{
    CONNECT_TOKEN_BYTES, KEY_BYTES, MAX_PAYLOAD_BYTES, MAX_SERVERS_PER_CONNECT, USER_DATA_BYTES,
    VERSION_INFO,
};
pub use token::{ConnectToken, TokenParams, generate_connect_token, generate_connect_token_with};

pub(crate) use challenge::ChallengeToken;
pub(crate) use codec::{AllowedPackets, Packet, read_packet, write_packet};
pub(crate) use error::{ReadError, WriteError};
pub(crate) use key::{random_bytes, random_u64};
pub(crate) use packet_type::PacketType;
pub(crate) use replay::ReplayProtection;
pub(crate) use sizes::*;
pub(crate) use token::ConnectTokenPrivate;

#[cfg(test)]
mod tests;
