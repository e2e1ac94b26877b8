//! The netcode-only transport: [`NetcodeServer`] and [`NetcodeClient`] carry raw
//! payloads in netcode payload packets over UDP.

use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use super::clock::Clock;
use super::plain_socket::{PlainSocket, local_for};
use super::{TransportError, TransportStats, resolve};
use crate::Time;
use crate::connection::{
    ClientEvent, ClientId, ClientState, ConnectionConfig, RawClient, RawSendError, RawServer,
    ServerConfig, ServerEvent,
};
use crate::netcode::{ConnectToken, Key};

/// Most payloads received and not yet taken ([`NetcodeServer::receive`],
/// [`NetcodeClient::receive`]); more are dropped and counted (`payloads_unread`).
pub const MAX_UNREAD_PAYLOADS: usize = 4096;

/// Payloads received and not yet taken, back to back in one buffer reused once
/// drained.
#[derive(Debug)]
struct Inbox<K> {
    bytes: Vec<u8>,
    queue: VecDeque<(K, usize, usize)>,
    dropped: u64,
}

impl<K: Copy> Inbox<K> {
    fn new() -> Self {
        Self {
            bytes: Vec::new(),
            queue: VecDeque::new(),
            dropped: 0,
        }
    }

    fn push(&mut self, from: K, payload: &[u8]) {
        if self.queue.is_empty() {
            self.bytes.clear();
        }
        if self.queue.len() >= MAX_UNREAD_PAYLOADS {
            self.dropped += 1;
            return;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        self.queue.push_back((from, start, payload.len()));
    }

    fn pop(&mut self) -> Option<(K, &[u8])> {
        let (from, start, len) = self.queue.pop_front()?;
        Some((from, self.bytes.get(start..start + len)?))
    }
}

/// A netcode 1.02 server over UDP whose payloads are the caller's bytes: the way to
/// serve plain netcode clients (the C reference, renetcode, any implementation of
/// the standard), or to have netproto's secure connections (connect tokens, sealed
/// and replay-protected packets) under a framing of one's own. No packet endpoint, no
/// message layer: each payload a client sends is one [`receive`](Self::receive),
/// each [`send`](Self::send) one netcode payload packet (1 to 1200 bytes), unacked
/// and unordered like a UDP datagram. Drives a sans-IO [`RawServer`].
///
/// Call [`update`](Self::update) once per tick: it reads the waiting datagrams, runs
/// timeouts and keep-alives and sends what was queued.
///
/// ```no_run
/// use netproto::connection::{ConnectionConfig, ServerEvent};
/// use netproto::netcode::Key;
/// use netproto::transport::NetcodeServer;
///
/// // The protocol id and key the backend's tokens are made with.
/// let config = ConnectionConfig::new(0x1122_3344_5566_7788);
/// let private_key = Key::from_bytes([7; 32]); // from a secret store
/// let mut server = NetcodeServer::bind("127.0.0.1:40000", config, private_key)?;
/// loop {
///     server.update()?;
///     while let Some(event) = server.poll_event() {
///         if let ServerEvent::Connected { client, address, .. } = event {
///             println!("{address} joined as {client:?}");
///         }
///     }
///     let mut echoes = Vec::new();
///     while let Some((client, payload)) = server.receive() {
///         echoes.push((client, payload.to_vec()));
///     }
///     for (client, payload) in echoes {
///         let _ = server.send(client, &payload); // an echo
///     }
///     std::thread::sleep(std::time::Duration::from_millis(16));
/// }
/// # Ok::<(), netproto::transport::TransportError>(())
/// ```
///
/// Dropping the server disconnects every client (best effort: the disconnect packets
/// are sent once, without waiting).
#[derive(Debug)]
pub struct NetcodeServer {
    socket: PlainSocket,
    server: RawServer<SocketAddr>,
    clock: Clock,
    inbox: Inbox<ClientId>,
}

impl NetcodeServer {
    /// Binds a server at `addr` with `config` (its protocol id is the one of the
    /// backend's tokens), the backend's `private_key`, 64 slots, and a challenge key
    /// from the operating system. Tokens must name the bound address (with the port
    /// the system chose when `addr` has port 0); for other settings use
    /// [`bind_with`](Self::bind_with).
    pub fn bind(
        addr: impl ToSocketAddrs,
        config: ConnectionConfig,
        private_key: Key,
    ) -> Result<Self, TransportError> {
        let socket = UdpSocket::bind(resolve(addr)?)?;
        let local = socket.local_addr()?;
        Self::with_socket(socket, ServerConfig::new(config, private_key, vec![local]))
    }

    /// Binds a server at `addr` with `config` as given.
    pub fn bind_with(
        addr: impl ToSocketAddrs,
        config: ServerConfig,
    ) -> Result<Self, TransportError> {
        Self::with_socket(UdpSocket::bind(resolve(addr)?)?, config)
    }

    /// A server on a socket the caller bound, with `config` as given; the socket is
    /// made non-blocking.
    pub fn with_socket(socket: UdpSocket, config: ServerConfig) -> Result<Self, TransportError> {
        let server = RawServer::new(config, Time::ZERO, super::clock::unix_time())?;
        Ok(Self {
            socket: PlainSocket::new(socket, "server")?,
            server,
            clock: Clock::start(),
            inbox: Inbox::new(),
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        self.socket.local_addr()
    }

    /// The sans-IO server: clients, user ids and data, counters.
    pub fn connection(&self) -> &RawServer<SocketAddr> {
        &self.server
    }

    /// The socket counters.
    pub fn transport_stats(&self) -> &TransportStats {
        &self.socket.counters
    }

    /// Puts a link conditioner on the socket (`None` takes it off; the datagrams it
    /// held are dropped): from now, the datagrams sent and received go through it.
    /// Replaces the one of the environment variable (`NETPROTO_CONDITIONER`, read
    /// when the transport is made).
    #[cfg(feature = "conditioner")]
    pub fn set_conditioner(&mut self, config: Option<super::conditioner::ConditionerConfig>) {
        self.socket.seam.set("server", config);
    }

    /// What the link conditioner did, when there is one.
    #[cfg(feature = "conditioner")]
    pub fn conditioner_stats(&self) -> Option<super::conditioner::ConditionerStats> {
        self.socket.seam.stats()
    }

    /// Payloads dropped because [`MAX_UNREAD_PAYLOADS`] were waiting untaken.
    pub fn payloads_unread(&self) -> u64 {
        self.inbox.dropped
    }

    /// The connected clients and their addresses.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, SocketAddr)> + '_ {
        self.server.clients()
    }

    /// How long `client` has been silent: with a token of no timeout, the
    /// application's to judge (see [`ConnectionConfig::allow_no_timeout`]).
    pub fn silent_for(&self, client: ClientId) -> Option<Duration> {
        self.server.silent_for(self.clock.now(), client)
    }

    /// One tick: reads the waiting datagrams (at most
    /// [`MAX_DATAGRAMS_PER_UPDATE`](super::MAX_DATAGRAMS_PER_UPDATE)), keeps their
    /// payloads for [`receive`](Self::receive), runs timeouts and keep-alives, and
    /// sends what is queued. Errors are socket errors other than "nothing to read"
    /// and the transient ones (skipped and counted).
    pub fn update(&mut self) -> Result<(), TransportError> {
        let now = self.clock.now();
        let Self {
            socket,
            server,
            inbox,
            ..
        } = self;
        socket.receive(now, |from, datagram| {
            if let Some((client, payload)) = server.handle_datagram(now, from, datagram) {
                inbox.push(client, payload);
            }
        })?;
        server.update(now);
        self.flush(now);
        Ok(())
    }

    fn flush(&mut self, now: Time) {
        let Self { socket, server, .. } = self;
        socket.send_all(now, server);
    }

    /// The next payload received, and its client.
    pub fn receive(&mut self) -> Option<(ClientId, &[u8])> {
        self.inbox.pop()
    }

    /// Sends `payload` to `client` now, as one netcode payload packet.
    pub fn send(&mut self, client: ClientId, payload: &[u8]) -> Result<(), RawSendError> {
        let now = self.clock.now();
        self.server.send(now, client, payload)?;
        self.flush(now);
        Ok(())
    }

    /// The next event: a client connected or disconnected.
    pub fn poll_event(&mut self) -> Option<ServerEvent<SocketAddr>> {
        self.server.poll_event()
    }

    /// Disconnects `client` now (the disconnect packets are sent at once); `false`
    /// if it was not connected.
    pub fn disconnect(&mut self, client: ClientId) -> bool {
        let now = self.clock.now();
        let done = self.server.disconnect(now, client);
        self.flush(now);
        done
    }

    /// Disconnects every client now.
    pub fn disconnect_all(&mut self) {
        let now = self.clock.now();
        self.server.disconnect_all(now);
        self.flush(now);
    }
}

impl Drop for NetcodeServer {
    fn drop(&mut self) {
        self.disconnect_all();
    }
}

/// A netcode 1.02 client over UDP whose payloads are the caller's bytes, the client
/// side of [`NetcodeServer`]: connects with a connect token to a plain netcode
/// server or to a [`NetcodeServer`]. Drives a sans-IO [`RawClient`].
///
/// ```no_run
/// use netproto::connection::ClientEvent;
/// use netproto::netcode::ConnectToken;
/// use netproto::transport::NetcodeClient;
///
/// # fn token_from_backend() -> ConnectToken { unimplemented!() }
/// let token: ConnectToken = token_from_backend();
/// let mut client = NetcodeClient::connect(&token)?;
/// loop {
///     client.update()?;
///     while let Some(event) = client.poll_event() {
///         if let ClientEvent::Disconnected { reason } = event {
///             println!("disconnected: {reason}");
///             return Ok(());
///         }
///     }
///     if client.is_connected() {
///         client.send(b"hello").expect("1 to 1200 bytes");
///     }
///     while let Some(payload) = client.receive() {
///         println!("{} bytes", payload.len());
///     }
///     std::thread::sleep(std::time::Duration::from_millis(16));
/// }
/// # Ok::<(), netproto::transport::TransportError>(())
/// ```
///
/// Dropping a connected client disconnects it (the disconnect packets are sent once).
#[derive(Debug)]
pub struct NetcodeClient {
    socket: PlainSocket,
    client: RawClient<SocketAddr>,
    clock: Clock,
    inbox: Inbox<()>,
}

impl NetcodeClient {
    /// Connects with the default settings and the token's protocol id, trying every
    /// server of `token` in turn, each for the token's timeout, as the netcode standard
    /// says (see [`Client::from_token`](crate::connection::Client::from_token)); from an
    /// ephemeral port of the first server's address family, on loopback when every
    /// server is.
    pub fn connect(token: &ConnectToken) -> Result<Self, TransportError> {
        let local = local_for(&token.server_addresses).ok_or(TransportError::NoAddress)?;
        let config = ConnectionConfig::new(token.protocol_id);
        let client = RawClient::from_token(config, token, Time::ZERO, |a| a)?;
        Self::with_client(local, client)
    }

    /// Connects from `local` to `server` (one of the token's addresses) with
    /// `config`.
    pub fn connect_with(
        local: impl ToSocketAddrs,
        server: impl ToSocketAddrs,
        token: &ConnectToken,
        config: ConnectionConfig,
    ) -> Result<Self, TransportError> {
        let server = resolve(server)?;
        let client = RawClient::new(config, token, server, Time::ZERO)?;
        Self::with_client(resolve(local)?, client)
    }

    fn with_client(
        local: SocketAddr,
        client: RawClient<SocketAddr>,
    ) -> Result<Self, TransportError> {
        let socket = UdpSocket::bind(local)?;
        Ok(Self {
            socket: PlainSocket::new(socket, "client")?,
            client,
            clock: Clock::start(),
            inbox: Inbox::new(),
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        self.socket.local_addr()
    }

    /// The sans-IO client.
    pub fn connection(&self) -> &RawClient<SocketAddr> {
        &self.client
    }

    /// The socket counters.
    pub fn transport_stats(&self) -> &TransportStats {
        &self.socket.counters
    }

    /// Puts a link conditioner on the socket (`None` takes it off; the datagrams it
    /// held are dropped): from now, the datagrams sent and received go through it.
    /// Replaces the one of the environment variable (`NETPROTO_CONDITIONER`, read
    /// when the transport is made).
    #[cfg(feature = "conditioner")]
    pub fn set_conditioner(&mut self, config: Option<super::conditioner::ConditionerConfig>) {
        self.socket.seam.set("client", config);
    }

    /// What the link conditioner did, when there is one.
    #[cfg(feature = "conditioner")]
    pub fn conditioner_stats(&self) -> Option<super::conditioner::ConditionerStats> {
        self.socket.seam.stats()
    }

    /// Payloads dropped because [`MAX_UNREAD_PAYLOADS`] were waiting untaken.
    pub fn payloads_unread(&self) -> u64 {
        self.inbox.dropped
    }

    /// The state.
    pub fn state(&self) -> ClientState {
        self.client.state()
    }

    /// `true` when connected.
    pub fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    /// One tick: reads the waiting datagrams, keeps their payloads for
    /// [`receive`](Self::receive), runs the handshake, timeouts and keep-alives, and
    /// sends what is queued.
    pub fn update(&mut self) -> Result<(), TransportError> {
        let now = self.clock.now();
        let Self {
            socket,
            client,
            inbox,
            ..
        } = self;
        socket.receive(now, |from, datagram| {
            if let Some(payload) = client.handle_datagram(now, from, datagram) {
                inbox.push((), payload);
            }
        })?;
        client.update(now);
        self.flush(now);
        Ok(())
    }

    fn flush(&mut self, now: Time) {
        let Self { socket, client, .. } = self;
        socket.send_all(now, client);
    }

    /// The next payload received from the server.
    pub fn receive(&mut self) -> Option<&[u8]> {
        self.inbox.pop().map(|((), payload)| payload)
    }

    /// Sends `payload` to the server now, as one netcode payload packet.
    pub fn send(&mut self, payload: &[u8]) -> Result<(), RawSendError> {
        let now = self.clock.now();
        self.client.send(now, payload)?;
        self.flush(now);
        Ok(())
    }

    /// The next event: connected, denied, disconnected.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.client.poll_event()
    }

    /// Disconnects now (the disconnect packets are sent at once).
    pub fn disconnect(&mut self) {
        let now = self.clock.now();
        self.client.disconnect(now);
        self.flush(now);
    }
}

impl Drop for NetcodeClient {
    fn drop(&mut self) {
        if self.client.is_connected() {
            self.disconnect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inbox_keeps_payloads_in_order_and_drops_beyond_its_bound() {
        let mut inbox = Inbox::new();
        inbox.push(1u8, b"ab");
        inbox.push(2u8, b"c");
        assert_eq!(inbox.pop(), Some((1, &b"ab"[..])));
        assert_eq!(inbox.pop(), Some((2, &b"c"[..])));
        assert_eq!(inbox.pop(), None);
        for i in 0..MAX_UNREAD_PAYLOADS + 3 {
            inbox.push(0u8, &[i as u8]);
        }
        assert_eq!(inbox.dropped, 3);
        assert_eq!(inbox.queue.len(), MAX_UNREAD_PAYLOADS);
        // Drained, the buffer is reused from its start.
        while inbox.pop().is_some() {}
        inbox.push(9u8, b"z");
        assert_eq!(inbox.bytes, b"z");
    }
}
