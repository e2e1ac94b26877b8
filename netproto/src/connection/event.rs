//! What the connection layer reports to the application.

use core::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// The index of a client's slot on a server, in `0..max_clients` (netcode's client
/// index). A slot is reused after its client leaves: pair it with the `Connected`
/// event to tell sessions apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u16);

/// Why a server refused a client.
///
/// netcode's denied packet carries no reason: a server denies only when every slot is
/// taken. A request the server will not serve for any other reason (another protocol
/// id, an expired or forged token, a token for another server) gets no answer at all,
/// and the client's handshake times out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DenyReason {
    /// Every client slot is taken.
    #[error("the server is full: every client slot is taken (try again later, or another server)")]
    ServerFull,
}

impl DenyReason {
    /// The reason's stable name: the `reason` field of the `denied` tracing event.
    ///
    /// ```
    /// assert_eq!(netproto::connection::DenyReason::ServerFull.as_str(), "server_full");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::ServerFull => "server_full",
        }
    }
}

/// Why a connection ended.
///
/// A client that never connected says which step of the handshake failed: no reply at
/// all ([`NoReply`](Self::NoReply)), a challenge and then silence
/// ([`HandshakeStalled`](Self::HandshakeStalled)), or a token that ran out
/// ([`TokenExpired`](Self::TokenExpired)); a server that refused it for being full
/// reports [`ClientEvent::Denied`] instead. A request the server cannot serve for any
/// other reason (another protocol id: other messages or channel configuration; a token
/// sealed with another key; a token for another server) gets no answer at all, as
/// netcode requires, so the client sees [`NoReply`](Self::NoReply) and the server's log
/// names the cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// Nothing was received from the peer for the connect token's timeout, once
    /// connected: on a client, the server stopped or the network between went down.
    #[error(
        "the peer timed out: nothing heard from it for the connect token's timeout \
         (it stopped, crashed or became unreachable)"
    )]
    TimedOut,
    /// (Client) the last server tried sent nothing back to the connection requests
    /// for the token's timeout (netcode's "connection request timed out"); the servers
    /// before it were given up too (silent, stalled or full).
    #[error("{}", NoReplyText { server: *server, servers: *servers, waited: *waited, protocol_id: *protocol_id })]
    NoReply {
        /// The last server tried, as the connect token names it; `None` when the
        /// client was made for one address of the driver's own type
        /// ([`Client::new`](super::Client::new)).
        server: Option<SocketAddr>,
        /// How many servers were tried (each for `waited`), the last included.
        servers: u8,
        /// How long each server was given: the token's timeout.
        waited: Duration,
        /// This client's protocol id (see [`protocol_id`](crate::protocol_id)): a
        /// server that speaks another logs this one when it refuses the request.
        protocol_id: u64,
    },
    /// (Client) the last server tried answered the connection request with a
    /// challenge, then sent nothing for the token's timeout (netcode's "connection
    /// response timed out").
    #[error("{}", StalledText { server: *server, waited: *waited, protocol_id: *protocol_id })]
    HandshakeStalled {
        /// The server, as the connect token names it; `None` when the client was made
        /// for one address of the driver's own type ([`Client::new`](super::Client::new)).
        server: Option<SocketAddr>,
        /// How long it stayed silent: the token's timeout.
        waited: Duration,
        /// This client's protocol id.
        protocol_id: u64,
    },
    /// (Client) the connect token expired before a server accepted it (its lifetime,
    /// from its creation to its expiry, counts from the client's start, across every
    /// server tried).
    #[error(
        "the connect token expired before a server accepted it: ask the backend for a new \
         one (if this happens at once, the backend makes tokens that live too short)"
    )]
    TokenExpired,
    /// The peer sent a disconnect packet (netcode's carries no reason: a peer that
    /// ended the connection for a protocol error is seen here too).
    #[error("the peer disconnected")]
    PeerDisconnected,
    /// This side called `disconnect`.
    #[error("disconnected locally")]
    Local,
    /// The peer broke the protocol: the message layer refused a payload as malformed
    /// (a mismatched or hostile peer), or its acks named a packet never sent (see
    /// [`EndpointConfig`](crate::packet::EndpointConfig)'s skipped-sequence trap).
    /// This side sent disconnect packets; the peer sees
    /// [`PeerDisconnected`](Self::PeerDisconnected).
    #[error("the peer broke the protocol")]
    ProtocolError,
}

/// A server address for a message: the token's address, or "the server".
struct ServerName(Option<SocketAddr>);

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(addr) => write!(f, "{addr}"),
            None => f.write_str("the server"),
        }
    }
}

/// The text of [`DisconnectReason::NoReply`]: what happened, then the causes, most
/// likely first.
struct NoReplyText {
    server: Option<SocketAddr>,
    servers: u8,
    waited: Duration,
    protocol_id: u64,
}

impl fmt::Display for NoReplyText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let server = ServerName(self.server);
        let waited = self.waited.as_secs_f64();
        write!(f, "no reply from {server} in {waited} s")?;
        if self.servers > 1 {
            write!(f, ", the last of {} servers tried", self.servers)?;
        }
        write!(
            f,
            " (protocol id {:#018x}): the server is not running or unreachable, or it \
             speaks another protocol (other messages or channel config: its log names the \
             id it got), or the token's key is not the server's",
            self.protocol_id
        )
    }
}

/// The text of [`DisconnectReason::HandshakeStalled`].
struct StalledText {
    server: Option<SocketAddr>,
    waited: Duration,
    protocol_id: u64,
}

impl fmt::Display for StalledText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} answered the connection request, then went silent for {} s \
             (protocol id {:#018x}): the server stopped or became unreachable during the \
             handshake, or a client with this token's client id connected there first",
            ServerName(self.server),
            self.waited.as_secs_f64(),
            self.protocol_id
        )
    }
}

impl DisconnectReason {
    /// The reason's stable name: the `reason` field of the `disconnected` tracing
    /// event (`timed_out`, `no_reply`, `handshake_stalled`, `token_expired`,
    /// `peer_disconnected`, `local`, `protocol_error`).
    ///
    /// ```
    /// use netproto::connection::DisconnectReason;
    ///
    /// assert_eq!(DisconnectReason::TimedOut.as_str(), "timed_out");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::TimedOut => "timed_out",
            Self::NoReply { .. } => "no_reply",
            Self::HandshakeStalled { .. } => "handshake_stalled",
            Self::TokenExpired => "token_expired",
            Self::PeerDisconnected => "peer_disconnected",
            Self::Local => "local",
            Self::ProtocolError => "protocol_error",
        }
    }
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
        /// The client id its connect token carries: who the backend let in (an
        /// account or player id). The token's user data is
        /// [`Server::user_data`](super::Server::user_data).
        user_id: u64,
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
}

/// An event of a [`Client`](super::Client), from [`poll_event`](super::Client::poll_event).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The server accepted us.
    Connected {
        /// Our slot on the server.
        client: ClientId,
        /// The server's number of slots.
        max_clients: u32,
    },
    /// The connection ended (or the handshake failed).
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// The server refused us.
    Denied {
        /// Why.
        reason: DenyReason,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_has_its_own_stable_name() {
        use DisconnectReason::*;
        let names: Vec<_> = [
            TimedOut,
            NoReply {
                server: None,
                servers: 1,
                waited: Duration::from_secs(10),
                protocol_id: 1,
            },
            HandshakeStalled {
                server: None,
                waited: Duration::from_secs(10),
                protocol_id: 1,
            },
            TokenExpired,
            PeerDisconnected,
            Local,
            ProtocolError,
        ]
        .iter()
        .map(DisconnectReason::as_str)
        .collect();
        assert_eq!(
            names,
            [
                "timed_out",
                "no_reply",
                "handshake_stalled",
                "token_expired",
                "peer_disconnected",
                "local",
                "protocol_error"
            ]
        );
        assert_eq!(DenyReason::ServerFull.as_str(), "server_full");
    }
}
