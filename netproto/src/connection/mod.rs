//! Connections: netcode 1.02 (connect tokens, sealed packets, replay protection),
//! keep-alives, timeouts, client slots and congestion avoidance, with the
//! [packet endpoint](crate::packet) inside payload packets.
//!
//! Sans-IO like the layers below: [`Server`] and [`Client`] take `now` and datagrams
//! (`handle_datagram`), are driven by `update(now)`, write datagrams to send into the
//! caller's buffer (`poll_transmit`) and report connections and disconnections
//! (`poll_event`). The address type is a parameter: a `SocketAddr` over UDP, the
//! simulator's `NodeId` (feature `sim`) in tests.
//!
//! The handshake ([wire format](crate::netcode)):
//!
//! ```text
//! backend                          client                                  server
//!   connect token (2048 B) ──────►    request {token's sealed private part} ──►
//!     (over HTTPS, after login)                                 checks, cheapest first; one AEAD open
//!                                    ◄── challenge {challenge token}   (sealed; server keeps only the keys)
//!                                    response {challenge token} ──►     opens it: a slot
//!                                    ◄── keep-alive {client index}     connected
//!                                    payload / keep-alive ◄──►         sealed, replay-protected
//!                                    disconnect × 10 ──►
//! ```
//!
//! The protocol id is [`protocol_id`](crate::protocol_id): the message set's schema
//! fingerprint and the channel configuration's. The backend writes it in the tokens; a
//! client refuses a token made for another one, a server ignores its requests.
//!
//! # The boundary with the layer above
//!
//! One way up, one way down, no callbacks:
//!
//! * **Receive, two phases.** `handle_datagram` returns a [`Delivery`] when a payload
//!   arrived: the layer reads [`payload`](Delivery::payload), then
//!   [`accept`](Delivery::accept)s it (the packet will be acked; the call returns the
//!   sequences of our packets it newly acked), [`postpone`](Delivery::postpone)s it
//!   (no room now: not acked, so the peer sends it again, but its acks apply) or
//!   [`refuse`](Delivery::refuse)s it (as if lost).
//! * **Send.** `send_with` hands the layer the sequence the packet will carry and a
//!   buffer to fill.
//! * **Transmit.** `poll_transmit` writes each sealed datagram into the caller's
//!   buffer ([`MAX_DATAGRAM_BYTES`]); nothing is allocated per datagram.
//!
//! Each connection measures its link ([`LinkStats`]: network RTT, jitter, loss,
//! bandwidth, traffic) and runs [binary congestion avoidance](Congestion) on its RTT:
//! `ready_to_send(now)` tells the layer above whether a payload sent now keeps to the
//! mode's rate. [`transport::ServerStack`](crate::transport::ServerStack) glues a
//! server to the message layer, once for every driver.
//!
//! [`RawClient`] and [`RawServer`] are the same connections without the packet
//! endpoint: each netcode payload packet carries the caller's bytes as they are, to
//! talk to a plain netcode peer or carry a framing of one's own
//! ([`transport::NetcodeServer`](crate::transport::NetcodeServer) drives them over
//! UDP).
//!
//! What the protocol guarantees and does not is in the repository's SECURITY.md.

mod client;
mod config;
mod congestion;
mod delivery;
mod event;
mod handshake;
mod server;
pub(crate) mod session;
mod stats;
mod transmit;

use core::ops::Range;

pub use client::raw::RawClient;
pub use client::{Client, ClientState};
pub use config::{ConnectionConfig, ConnectionConfigError, ServerConfig};
pub use congestion::{Congestion, CongestionConfig, Mode};
pub use delivery::Delivery;
pub use event::{ClientEvent, ClientId, DenyReason, DisconnectReason, ServerEvent};
pub use server::Server;
pub(crate) use server::SlotSender;
pub use server::raw::RawServer;
pub use stats::{LinkStats, ServerStats};
pub use transmit::MAX_DATAGRAM_BYTES;

use crate::netcode::Packet;
use crate::packet::PacketSendError;

/// Why a connection could not send a payload (`send`, `send_with` of a [`Client`] or
/// [`Server`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadSendError {
    /// There is no such connection (not connected yet, or gone).
    #[error("not connected")]
    NotConnected,
    /// The packet endpoint refused the payload (too large).
    #[error(transparent)]
    Send(#[from] PacketSendError),
}

/// Why a [`RawClient`] or [`RawServer`] could not send a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RawSendError {
    /// There is no such connection (not connected yet, or gone).
    #[error("not connected")]
    NotConnected,
    /// A netcode payload packet carries 1 to
    /// [`MAX_PAYLOAD_BYTES`](crate::netcode::MAX_PAYLOAD_BYTES) (1200) bytes.
    #[error("a payload of {len} bytes: a netcode payload packet carries 1 to 1200")]
    Size {
        /// The payload's length.
        len: usize,
    },
}

/// What an opened packet asks of a connection, without borrowing the buffer it was
/// opened in.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Opened {
    /// A payload: the endpoint datagram's range in the buffer.
    Payload(Range<usize>),
    KeepAlive {
        client_index: u32,
        max_clients: u32,
    },
    Disconnect,
    Denied,
    /// A handshake packet (request, challenge, response).
    Other,
}

/// `packet`, opened in a buffer that starts at address `base`.
fn opened(packet: Packet<'_>, base: usize) -> Opened {
    match packet {
        Packet::Payload(bytes) => {
            let start = (bytes.as_ptr() as usize).wrapping_sub(base);
            Opened::Payload(start..start + bytes.len())
        }
        Packet::KeepAlive {
            client_index,
            max_clients,
        } => Opened::KeepAlive {
            client_index,
            max_clients,
        },
        Packet::Disconnect => Opened::Disconnect,
        Packet::Denied => Opened::Denied,
        _ => Opened::Other,
    }
}
