//! The UDP client.

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};

use super::clock::Clock;
use super::plain_socket::local_for;
use super::{
    ClientStack, Config, ConnectionStats, RECV_BUFFER_SIZE, Recv, SendError, TransportError,
    TransportStats, recv, resolve,
};
use crate::MessageSet;
use crate::Time;
use crate::channel::{ChannelId, MessageLayer};
use crate::connection::{Client, ClientEvent, ClientState, ConnectionConfig, MAX_DATAGRAM_BYTES};
use crate::netcode::ConnectToken;
use crate::trace::DropLog;
use std::time::Duration;

/// An event of a [`UdpClient`], from [`poll_event`](UdpClient::poll_event): connected,
/// denied, or disconnected (with why).
pub type UdpClientEvent = ClientEvent;

/// A game client over UDP: the sans-IO connection [`Client`] and its
/// [`MessageLayer`], on a non-blocking socket. One value is one connection attempt;
/// after it is denied or disconnected, make a new one to connect again.
///
/// Call [`update`](Self::update) once per tick. Messages may be queued with
/// [`send`](Self::send) during the handshake; they go out once connected.
///
/// ```no_run
/// use netproto::NetMessage;
/// use netproto::channel::ChannelId;
/// use netproto::transport::{Config, UdpClient, UdpClientEvent};
///
/// #[derive(NetMessage, Debug, Clone)]
/// struct Chat {
///     #[net(max_len = 140)]
///     text: String,
/// }
///
/// #[derive(NetMessage, Debug, Clone)]
/// #[net(message_set)]
/// enum Msg {
///     Chat(Chat),
/// }
///
/// // The connect token the game's backend handed us (2048 bytes, over HTTPS).
/// # let token_bytes = [0u8; 2048];
/// let token = netproto::netcode::ConnectToken::read(&token_bytes)?;
/// let mut client = UdpClient::<Msg>::connect(&token, Config::default())?;
/// client.send(ChannelId::RELIABLE, Msg::Chat(Chat { text: "hello".into() }))?;
/// loop {
///     client.update()?;
///     while let Some(event) = client.poll_event() {
///         match event {
///             UdpClientEvent::Connected { .. } => println!("connected"),
///             UdpClientEvent::Denied { reason } => return Err(reason.to_string().into()),
///             UdpClientEvent::Disconnected { reason } => return Err(reason.to_string().into()),
///             _ => {}
///         }
///     }
///     while let Some(Msg::Chat(chat)) = client.receive(ChannelId::RELIABLE) {
///         println!("{}", chat.text);
///     }
///     std::thread::sleep(std::time::Duration::from_millis(16));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Dropping a connected client disconnects it (best effort, without waiting).
#[derive(Debug)]
pub struct UdpClient<M: MessageSet> {
    socket: UdpSocket,
    stack: ClientStack<SocketAddr, M>,
    clock: Clock,
    recv_buf: Vec<u8>,
    send_buf: Vec<u8>,
    counters: TransportStats,
    /// Where a link conditioner holds the datagrams (feature `conditioner`).
    seam: super::seam::Seam,
}

impl<M: MessageSet> UdpClient<M> {
    /// Connects with `token` to the servers it names, tried in the token's order
    /// (each for the token's timeout, the next after a silence or a denial, as the
    /// netcode standard says; see [`Client::from_token`]), with `config` (the
    /// server's channels and connection settings: the token's protocol id must be
    /// [`protocol_id`](crate::protocol_id) of `M` and the channels).
    /// [`server_addr`](Self::server_addr) says which server is tried, then reached.
    ///
    /// The socket binds an ephemeral port of the first server's address family, on
    /// the loopback interface when every server of the token is on it, on every
    /// interface otherwise (a server of the other family cannot be reached from it,
    /// and is given up after the timeout). The first request goes out at the first
    /// [`update`](Self::update).
    pub fn connect(token: &ConnectToken, config: Config) -> Result<Self, TransportError> {
        let local = local_for(&token.server_addresses).ok_or(TransportError::NoAddress)?;
        let connection = Self::armed(config.connection_for::<M>());
        let stack = ClientStack::from_token(connection, token, config.channels, Time::ZERO, |a| a)?;
        Self::with_stack(local, stack)
    }

    /// Connects to `server` with a token of its own making, sealed with
    /// [`INSECURE_DEV_KEY`](super::insecure_dev::INSECURE_DEV_KEY), as client
    /// `client_id`: for local play against a
    /// [`UdpServer::bind_insecure_dev`](super::UdpServer::bind_insecure_dev) server
    /// and tests only; never ship it.
    pub fn connect_insecure_dev(
        server: SocketAddr,
        client_id: u64,
        config: Config,
    ) -> Result<Self, TransportError> {
        let protocol_id = crate::protocol_id::<M>(&config.channels);
        let token = super::insecure_dev::token(protocol_id, client_id, server)?;
        Self::connect(&token, config)
    }

    /// Binds `local` and connects to `server` (one the token names) with `token` and
    /// `config`. Only `server` is tried: see [`connect`](Self::connect) for the
    /// token's servers in turn.
    ///
    /// With the `conditioner` feature, the link conditioner of the environment
    /// variable `NETPROTO_CONDITIONER` applies when set (a malformed value is an
    /// error): see `transport::conditioner`.
    pub fn connect_with(
        local: impl ToSocketAddrs,
        server: impl ToSocketAddrs,
        token: &ConnectToken,
        config: Config,
    ) -> Result<Self, TransportError> {
        let server = resolve(server)?;
        let connection = Self::armed(config.connection_for::<M>());
        let stack = ClientStack::new(connection, token, server, config.channels, Time::ZERO)?;
        Self::with_stack(local, stack)
    }

    /// `config` with the skipped-sequence trap armed with a seed the server cannot
    /// predict, unless it has one.
    fn armed(mut config: ConnectionConfig) -> ConnectionConfig {
        if config.endpoint.skip_sequence_seed.is_none() {
            config.endpoint.skip_sequence_seed = Some(crate::netcode::random_u64());
        }
        config
    }

    fn with_stack(
        local: impl ToSocketAddrs,
        stack: ClientStack<SocketAddr, M>,
    ) -> Result<Self, TransportError> {
        let socket = UdpSocket::bind(resolve(local)?)?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            stack,
            clock: Clock::start(),
            recv_buf: vec![0; RECV_BUFFER_SIZE],
            send_buf: vec![0; MAX_DATAGRAM_BYTES],
            counters: TransportStats::default(),
            seam: super::seam::Seam::new("client")?,
        })
    }

    /// The server's address: the one the handshake is trying, then the one it reached
    /// (see [`Client::server_index`] for its place in the token).
    pub fn server_addr(&self) -> SocketAddr {
        self.stack.connection().server()
    }

    /// Puts a link conditioner on the socket (`None` takes it off; the datagrams it
    /// held are dropped): from now, the datagrams sent and received go through it.
    /// Replaces the one of the environment variable.
    #[cfg(feature = "conditioner")]
    pub fn set_conditioner(&mut self, config: Option<super::conditioner::ConditionerConfig>) {
        self.seam.set("client", config);
    }

    /// What the link conditioner did, when there is one.
    #[cfg(feature = "conditioner")]
    pub fn conditioner_stats(&self) -> Option<super::conditioner::ConditionerStats> {
        self.seam.stats()
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.socket.local_addr()?)
    }

    /// The sans-IO connection client: state, statistics and congestion state.
    pub fn connection(&self) -> &Client<SocketAddr> {
        self.stack.connection()
    }

    /// What the connection measured, link and messages, once connected.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.stack.stats()
    }

    /// The message layer (queues and counters).
    pub fn layer(&self) -> &MessageLayer<M> {
        self.stack.layer()
    }

    /// The socket counters.
    pub fn transport_stats(&self) -> &TransportStats {
        &self.counters
    }

    /// The connection state.
    pub fn state(&self) -> ClientState {
        self.stack.connection().state()
    }

    /// `true` once connected (and until disconnected).
    pub fn is_connected(&self) -> bool {
        self.stack.connection().is_connected()
    }

    fn now(&self) -> Time {
        self.clock.now()
    }

    /// One tick: reads the waiting datagrams, runs the handshake, keep-alives and
    /// timeouts, and sends the next packet when connected and the congestion mode
    /// allows one.
    ///
    /// Errors are socket errors other than "nothing to read" and the transient resets
    /// a UDP socket reports after an ICMP message (those are skipped and counted).
    pub fn update(&mut self) -> Result<(), TransportError> {
        let now = self.now();
        for _ in 0..super::MAX_DATAGRAMS_PER_UPDATE {
            let (len, from) = match recv(&self.socket, &mut self.recv_buf)? {
                Recv::Datagram(len, from) => (len, from),
                Recv::Empty => break,
                Recv::Skip => {
                    self.counters.receive_errors_skipped += 1;
                    continue;
                }
            };
            self.counters.datagrams_received += 1;
            self.counters.bytes_received += len as u64;
            let datagram = self.recv_buf.get(..len).unwrap_or_default();
            let stack = &mut self.stack;
            self.seam.receive(now, from, datagram, |from, d| {
                stack.handle_datagram(now, from, d)
            });
        }
        let stack = &mut self.stack;
        self.seam
            .release_received(now, |from, d| stack.handle_datagram(now, from, d));
        self.stack.update(now);
        self.flush_socket();
        Ok(())
    }

    /// Sends now what was queued since the last [`update`](Self::update), when
    /// connected and the congestion mode allows a packet; nothing else (no socket
    /// read, timeout or keep-alive): see [`UdpServer::flush`](super::UdpServer::flush).
    pub fn flush(&mut self) {
        let now = self.now();
        self.stack.flush(now);
        self.flush_socket();
    }

    /// Hands every queued datagram to the socket; a refused one counts as lost.
    fn flush_socket(&mut self) {
        self.counters.payloads_dropped_by_layer =
            self.stack.stack_stats().payloads_dropped_by_layer;
        let now = self.clock.now();
        while let Some((to, len)) = self.stack.poll_transmit(&mut self.send_buf) {
            let (socket, counters) = (&self.socket, &mut self.counters);
            let send = sender(socket, counters, self.stack.drop_log(), now);
            self.seam.send(now, to, &self.send_buf[..len], send);
        }
        let (socket, counters) = (&self.socket, &mut self.counters);
        let send = sender(socket, counters, self.stack.drop_log(), now);
        self.seam.release_sends(now, send);
    }

    /// Queues `message` on `channel`; it goes out with the next packets (once
    /// connected, when still in the handshake). Fails with
    /// [`SendError::NotConnected`] after a denial or a disconnection.
    pub fn send(&mut self, channel: ChannelId, message: M) -> Result<(), SendError> {
        self.stack.send(channel, message)
    }

    /// Queues `message` on the unreliable `channel` and tracks it:
    /// [`poll_receipt`](Self::poll_receipt) returns its receipt once the server acked
    /// a packet that carried it ([`MessageLayer::send_tracked`]).
    pub fn send_tracked(
        &mut self,
        channel: ChannelId,
        message: M,
    ) -> Result<crate::channel::Receipt, SendError> {
        self.stack.send_tracked(channel, message)
    }

    /// The oldest receipt of a message tracked on `channel` that reached the server
    /// and was not taken yet.
    pub fn poll_receipt(&mut self, channel: ChannelId) -> Option<crate::channel::Receipt> {
        self.stack.poll_receipt(channel)
    }

    /// Queues `message` on `channel`, a channel declared for its type alone
    /// ([`LayerConfig::add_typed`](crate::channel::LayerConfig::add_typed)): another
    /// type does not compile. Otherwise as [`send`](Self::send).
    pub fn send_on<T: Into<M>>(
        &mut self,
        channel: crate::channel::Channel<T>,
        message: T,
    ) -> Result<(), SendError> {
        self.stack.send_on(channel, message)
    }

    /// The next message delivered on `channel`.
    pub fn receive(&mut self, channel: ChannelId) -> Option<M> {
        self.stack.receive(channel)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<UdpClientEvent> {
        self.stack.poll_event()
    }

    /// Every event so far, draining them.
    pub fn events(&mut self) -> impl Iterator<Item = UdpClientEvent> + '_ {
        core::iter::from_fn(|| self.stack.poll_event())
    }

    /// Disconnects now: the disconnect packets are sent at once (when connected) and
    /// [`UdpClientEvent::Disconnected`] with [`DisconnectReason::Local`](crate::connection::DisconnectReason::Local) is reported.
    pub fn disconnect(&mut self) {
        let now = self.now();
        self.stack.disconnect(now);
        self.flush_socket();
    }

    /// A graceful disconnect: the queues are flushed (every reliable message acked)
    /// for `timeout` at most by the next updates, then the client
    /// disconnects; see [`ClientStack::disconnect_after_flush`]. Keep calling
    /// `update` until the disconnection event.
    pub fn disconnect_after_flush(&mut self, timeout: Duration) {
        let now = self.now();
        self.stack.disconnect_after_flush(now, timeout);
    }
}

/// Sends a datagram on `socket`, counted in `counters`; a refused one is logged in
/// `drop_log` (the client's one, its connection's).
fn sender<'a>(
    socket: &'a UdpSocket,
    counters: &'a mut TransportStats,
    drop_log: &'a mut DropLog,
    now: Time,
) -> impl FnMut(SocketAddr, &[u8]) + 'a {
    move |to, datagram| {
        super::plain_socket::send_counted(socket, counters, drop_log, "client", now, to, datagram);
    }
}

impl<M: MessageSet> Drop for UdpClient<M> {
    fn drop(&mut self) {
        if self.stack.connection().is_connected() {
            self.disconnect();
        }
    }
}
