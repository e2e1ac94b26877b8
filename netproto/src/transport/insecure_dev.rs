//! Connect tokens for local play and tests, without a backend: **insecure, never
//! ship it.**
//!
//! A real game's clients get their tokens from its backend, sealed with a private key
//! only the backend and the servers know. Here the key is [`INSECURE_DEV_KEY`], a
//! constant compiled into every build of this library: anyone can make a token that
//! any server using it accepts. Use it for a game's first steps, examples and tests;
//! a server started with it says so in its name
//! ([`UdpServer::bind_insecure_dev`](super::UdpServer::bind_insecure_dev)).
//!
//! ```
//! use netproto::transport::insecure_dev;
//!
//! let server = "127.0.0.1:40000".parse().unwrap();
//! let token = insecure_dev::token(0x1234, 7, server)?;
//! assert_eq!(token.server_addresses, vec![server]);
//! # Ok::<(), netproto::netcode::TokenError>(())
//! ```

use std::net::SocketAddr;

use crate::netcode::{ConnectToken, Key, TokenError, TokenParams, generate_connect_token};

/// The private key of development tokens: public, so worthless as a secret.
pub const INSECURE_DEV_KEY: Key = Key::from_bytes(*b"netproto insecure development!!!");

/// A connect token for `server`, for client `client_id`, sealed with
/// [`INSECURE_DEV_KEY`]: valid for an hour, with a 10-second connection timeout.
pub fn token(
    protocol_id: u64,
    client_id: u64,
    server: SocketAddr,
) -> Result<ConnectToken, TokenError> {
    let mut params = TokenParams::new(protocol_id, client_id, vec![server]);
    params.timeout_seconds = 10;
    params.expire_seconds = 3600;
    generate_connect_token(&params, &INSECURE_DEV_KEY, super::clock::unix_time())
}
