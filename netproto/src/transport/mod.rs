//! A UDP transport: the [connections](crate::connection) and the
//! [message layer](crate::channel) over a non-blocking [`std::net::UdpSocket`].
//!
//! [`UdpServer`] and [`UdpClient`] are the only code of the crate that reads the clock
//! ([`Instant`](std::time::Instant), [`SystemTime`](std::time::SystemTime) for token
//! expiry) or touches a socket; everything below them is sans-IO. Each drives a
//! sans-IO [`ServerStack`] or [`ClientStack`]: the connection and one
//! [`MessageLayer`](crate::channel::MessageLayer) per connection, glued once for every
//! driver (this one, the tests' simulator harness, or a transport of your own).
//! [`ServerStack`] says how: the payload read by the layer before the packet is
//! taken, acks to the layer, one payload packet per connection when its congestion
//! mode allows, and the connection's own update (keep-alives) after the payloads.
//!
//! Connections are netcode 1.02 ([`netcode`](crate::netcode)): a client needs a
//! connect token from the game's backend, sealed with the private key the servers
//! share. The protocol id is [`protocol_id`](crate::protocol_id) of the message set
//! and the [`LayerConfig`](crate::channel::LayerConfig): a client built with other
//! messages or other channels refuses the token (its
//! [`ClientStack::new`] fails), and its requests get no answer.
//!
//! To talk to a plain netcode peer (the C reference, renetcode), or to carry a
//! framing of one's own in netproto's secure connections, [`NetcodeServer`] and
//! [`NetcodeClient`] carry raw payloads in netcode payload packets: no packet
//! endpoint, no message layer.
//!
//! To test a game under loss, latency, jitter, duplicates, reordering and a bandwidth
//! cap on the real socket, build with the `conditioner` feature and set
//! `NETPROTO_CONDITIONER` (or call `set_conditioner`): see `conditioner` (present with
//! the feature).
//!
//! For local play and tests without a backend, [`insecure_dev`] makes tokens from a
//! key compiled into the library: never ship it.
//!
//! Randomness: the server's challenge key and every token's keys and nonce come from
//! the operating system's generator ([`Key::random`](crate::netcode::Key::random)).

mod client;
mod clock;
#[cfg(feature = "conditioner")]
pub mod conditioner;
mod config;
pub mod insecure_dev;
mod netcode_udp;
mod peer;
mod plain_socket;
mod seam;
mod send_batch;
mod server;
mod stack;
mod stats;

use std::net::SocketAddr;

pub use crate::connection::session::IDLE_PACKET_RATE;
pub use client::{UdpClient, UdpClientEvent};
pub use config::Config;
pub use netcode_udp::{MAX_UNREAD_PAYLOADS, NetcodeClient, NetcodeServer};
pub use peer::MAX_PACKETS_PER_UPDATE;
pub use server::{SOCKET_BUFFER_BYTES, UdpServer, UdpServerEvent};
pub use stack::{ClientStack, ServerStack};
pub use stats::{ConnectionStats, StackStats, TransportStats};

use crate::channel;
use crate::connection;

/// Most datagrams read from the socket per `update`, so that a flood cannot stall the
/// game loop; the rest waits in the socket buffer for the next update (datagrams the
/// system coalesced from one sender, GRO, are taken whole: a few more at most). It also bounds
/// the replies (challenges and denials, never larger than the requests that caused
/// them) queued within one update before they are sent.
pub const MAX_DATAGRAMS_PER_UPDATE: usize = 4096;

/// The receive buffer: any UDP datagram fits.
const RECV_BUFFER_SIZE: usize = 65536;

/// Why a transport could not be created or updated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A socket operation failed.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// The connection configuration is invalid.
    #[error("invalid connection configuration: {0}")]
    Connection(#[from] connection::ConnectionConfigError),
    /// The message layer configuration is invalid.
    #[error("invalid message layer configuration: {0}")]
    Layer(#[from] channel::LayerConfigError),
    /// The message layer does not fit over the connection's packet endpoint
    /// ([`check_pair`](channel::check_pair)).
    #[error("the message layer does not fit the packet endpoint: {0}")]
    Stack(#[from] channel::StackConfigError),
    /// A connect token could not be made or read.
    #[error("connect token: {0}")]
    Token(#[from] crate::netcode::TokenError),
    /// An address did not resolve to any socket address (or a token named none).
    #[error("the address resolved to nothing")]
    NoAddress,
    /// The configured protocol id is not the message set's and channels'.
    #[error(
        "the connection's protocol id is {configured:#018x}, but the message set and channels give {expected:#018x} (netproto::protocol_id): the backend's tokens must carry the latter"
    )]
    ProtocolId {
        /// The configured one.
        configured: u64,
        /// [`protocol_id`](crate::protocol_id) of the message set and layer.
        expected: u64,
    },
    /// The link conditioner's environment variable
    /// ([`conditioner::ENV_VAR`]) is malformed (feature `conditioner`).
    #[cfg(feature = "conditioner")]
    #[error(transparent)]
    Conditioner(#[from] conditioner::ConditionerError),
}

/// Why a message could not be queued for sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// There is no such connection (not connected, gone, denied).
    #[error("not connected")]
    NotConnected,
    /// The connection is closing: a disconnect after flush was asked for, and the
    /// queues are being flushed; nothing new is taken.
    #[error("the connection is closing")]
    Closing,
    /// The message layer refused the message (no such channel, too large, queue full,
    /// out of range).
    #[error(transparent)]
    Channel(#[from] channel::ChannelSendError),
}

/// The first socket address `addr` resolves to.
fn resolve(addr: impl std::net::ToSocketAddrs) -> Result<SocketAddr, TransportError> {
    addr.to_socket_addrs()?
        .next()
        .ok_or(TransportError::NoAddress)
}

/// What one `recv_from` gave.
enum Recv {
    Datagram(usize, SocketAddr),
    /// Nothing more for now.
    Empty,
    /// A transient error: skip it.
    Skip,
}

/// A receive error to skip: an ICMP reset or refusal of an earlier send, an interrupt.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused | ErrorKind::Interrupted
    )
}

/// One non-blocking read: transient errors ([`is_transient`]) are skipped, others
/// are returned.
fn recv(socket: &std::net::UdpSocket, buf: &mut [u8]) -> Result<Recv, TransportError> {
    match socket.recv_from(buf) {
        Ok((n, from)) => Ok(Recv::Datagram(n, from)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(Recv::Empty),
        Err(e) if is_transient(&e) => Ok(Recv::Skip),
        Err(e) => Err(e.into()),
    }
}
