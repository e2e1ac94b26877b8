//! Connections: the handshake, keep-alives, timeouts, client slots and congestion
//! avoidance on top of the [packet endpoint](crate::packet).
//!
//! Sans-IO like the layers below: [`Server`] and [`Client`] take `now` and datagrams
//! (`handle_datagram`), are driven by `update(now)`, and hand out datagrams to send
//! (`poll_transmit`) and events for the game (`poll_event`). The address type is a
//! parameter: a `SocketAddr` over UDP, the simulator's [`NodeId`](crate::sim::NodeId)
//! in tests.
//!
//! The handshake ([wire layout](packet)):
//!
//! ```text
//! client                                  server
//!   request {protocol id, nonce, padding} ──►   protocol id differs: denied (mismatch)
//!                                               full: denied (server full)
//!   ◄── challenge {nonce, bucket, token}        token = SipHash(key, address, bucket, ..)
//!   response {nonce, bucket, token}  ──►        checked without stored state; then a
//!                                               slot and a packet endpoint are created
//!   ◄── accepted {nonce, token, client index}
//!   keep-alive / payload {token, packet} ◄──►   (the token is the session token)
//!   disconnect {token} × 3 ──►
//! ```
//!
//! The protocol id is the message set's schema fingerprint
//! ([`MessageSet::FINGERPRINT`](crate::MessageSet::FINGERPRINT)), given in
//! [`ConnectionConfig::protocol_id`]. Payloads are opaque bytes: the layer above
//! (the channels) fills and reads them.
//!
//! Each connection runs [binary congestion avoidance](Congestion) on its RTT:
//! `ready_to_send(now)` tells the layer above whether a payload sent now keeps to the
//! mode's rate.

mod challenge;
mod client;
mod config;
mod congestion;
mod event;
pub mod packet;
mod server;
mod session;

pub use challenge::{SipHasher24, time_bucket, token as challenge_token};
pub use client::{Client, ClientState};
pub use config::{ConfigError, ConnectionConfig, ServerConfig};
pub use congestion::{Congestion, CongestionConfig, Mode};
pub use event::{ClientEvent, ClientId, DenyReason, DisconnectReason, ServerEvent, Transmit};
pub use packet::{Packet, PacketError};
pub use server::{ConnectionError, Server, ServerCounters};
