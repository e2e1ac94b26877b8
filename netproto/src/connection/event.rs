//! What the connection layer reports to the application.

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
    #[error("the server is full")]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// Nothing was received from the peer for the connect token's timeout.
    #[error("the peer timed out")]
    TimedOut,
    /// (Client) the server did not answer the handshake within the token's timeout.
    #[error("the handshake timed out")]
    HandshakeTimedOut,
    /// (Client) the connect token expired before the handshake completed: ask the
    /// backend for a new one.
    #[error("the connect token expired")]
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

impl DisconnectReason {
    /// The reason's stable name: the `reason` field of the `disconnected` tracing
    /// event (`timed_out`, `handshake_timed_out`, `token_expired`,
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
            Self::HandshakeTimedOut => "handshake_timed_out",
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
            HandshakeTimedOut,
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
                "handshake_timed_out",
                "token_expired",
                "peer_disconnected",
                "local",
                "protocol_error"
            ]
        );
        assert_eq!(DenyReason::ServerFull.as_str(), "server_full");
    }
}
