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
//!
//! A transport drives a server like this (the client is the same, with one peer):
//!
//! ```text
//! loop {
//!     now = clock();
//!     for (from, bytes) in socket.recv_all() { server.handle_datagram(now, from, bytes) }
//!     server.update(now);
//!     for client in ready clients { if server.ready_to_send(now, client) { server.send(now, client, payload) } }
//!     while let Some(t) = server.poll_transmit() { socket.send_to(t.to, &t.payload) }
//!     while let Some(e) = server.poll_event() { game.handle(e) }
//! }
//! ```
//!
//! What the protocol does not do: encrypt or authenticate payloads. The session token
//! stops blind spoofing (an off-path attacker cannot see it), not an on-path attacker
//! who reads the traffic. RTT samples include the time a packet waits for the peer's
//! next packet to ack it (up to a keep-alive interval when the peer is idle).

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
