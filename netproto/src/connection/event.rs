//! What the connection layer reports to the application.

use crate::packet::Sequence;

/// The index of a client's slot on a server, in `0..max_clients`. A slot is reused
/// after its client leaves: pair it with the address (or the `Connected` event) to
/// tell sessions apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u16);

/// Why a server refused a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DenyReason {
    /// Every client slot is taken.
    #[error("the server is full")]
    ServerFull,
    /// The client's protocol id (message set fingerprint) is not the server's: the two
    /// builds do not speak the same message schema.
    #[error("protocol id mismatch: the server and the client use different message schemas")]
    ProtocolMismatch,
    /// A reason code this version does not know.
    #[error("denied with unknown reason code {0}")]
    Other(u8),
}

impl DenyReason {
    /// The code on the wire.
    pub fn code(self) -> u8 {
        match self {
            Self::ServerFull => 1,
            Self::ProtocolMismatch => 2,
            Self::Other(code) => code,
        }
    }

    /// The reason of a wire code.
    pub fn from_code(code: u8) -> Self {
        match code {
            1 => Self::ServerFull,
            2 => Self::ProtocolMismatch,
            other => Self::Other(other),
        }
    }
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// Nothing was received from the peer for `timeout` seconds.
    #[error("the peer timed out")]
    TimedOut,
    /// The client's handshake did not complete within `connect_timeout` seconds.
    #[error("the handshake timed out")]
    HandshakeTimedOut,
    /// The peer sent a disconnect packet.
    #[error("the peer disconnected")]
    PeerDisconnected,
    /// This side called `disconnect`.
    #[error("disconnected locally")]
    Local,
    /// (Server) the same address completed a new handshake: the old session is
    /// replaced.
    #[error("the client reconnected from the same address")]
    Reconnected,
}

/// An event of a [`Server`](super::Server), from [`poll_event`](super::Server::poll_event).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent<A> {
    /// A client completed the handshake and took a slot.
    Connected {
        /// Its slot.
        client: ClientId,
        /// Its address.
        address: A,
    },
    /// A client left, and its slot is free.
    Disconnected {
        /// Its slot.
        client: ClientId,
        /// Its address.
        address: A,
        /// Why.
        reason: DisconnectReason,
    },
    /// A client's payload arrived (each packet once, in arrival order).
    Payload {
        /// The client.
        client: ClientId,
        /// The packet's sequence number.
        sequence: Sequence,
        /// The payload.
        payload: Vec<u8>,
    },
    /// The client acked our payload packet `sequence` (the sequence
    /// [`Server::send`](super::Server::send) returned), once; the layer above
    /// releases what it carried. Keep-alive acks are not reported.
    PacketAcked {
        /// The client.
        client: ClientId,
        /// Our packet's sequence.
        sequence: Sequence,
    },
}

/// An event of a [`Client`](super::Client), from [`poll_event`](super::Client::poll_event).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The server accepted us.
    Connected {
        /// Our slot on the server.
        client: ClientId,
    },
    /// The connection ended (or the handshake timed out).
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// The server refused us.
    Denied {
        /// Why.
        reason: DenyReason,
        /// The server's protocol id (differs from ours when the reason is
        /// [`DenyReason::ProtocolMismatch`]).
        server_protocol_id: u64,
    },
    /// A payload from the server arrived (each packet once, in arrival order).
    Payload {
        /// The packet's sequence number.
        sequence: Sequence,
        /// The payload.
        payload: Vec<u8>,
    },
    /// The server acked our payload packet `sequence` (the sequence
    /// [`Client::send`](super::Client::send) returned), once. Keep-alive acks are not
    /// reported.
    PacketAcked {
        /// Our packet's sequence.
        sequence: Sequence,
    },
}

/// A datagram to send, from `poll_transmit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit<A> {
    /// The destination.
    pub to: A,
    /// The bytes.
    pub payload: Vec<u8>,
}
