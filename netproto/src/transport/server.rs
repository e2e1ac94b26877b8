//! The UDP server.

use std::io::IoSliceMut;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};

use quinn_udp::{BATCH_SIZE, RecvMeta, UdpSocketState};

use super::clock::Clock;
use super::send_batch::{self, SendBatch, SocketSink};
use super::{
    Config, ConnectionStats, RECV_BUFFER_SIZE, SendError, ServerStack, TransportError,
    TransportStats, is_transient, resolve,
};
use crate::MessageSet;
use crate::Time;
use crate::channel::{ChannelId, LayerConfig, MessageLayer};
use crate::connection::{ClientId, Server, ServerConfig, ServerEvent};
use crate::netcode::Key;
use crate::trace::{self, DropLog};
use std::time::Duration;

/// An event of a [`UdpServer`], from [`poll_event`](UdpServer::poll_event): a client
/// connected or disconnected. A client that broke the message protocol is
/// disconnected with [`DisconnectReason::ProtocolError`](crate::connection::DisconnectReason::ProtocolError).
pub type UdpServerEvent = ServerEvent<SocketAddr>;

/// A game server over UDP: the sans-IO connection [`Server`] and one
/// [`MessageLayer`] per client, on a non-blocking socket.
///
/// Call [`update`](Self::update) once per tick: it reads every waiting datagram, runs
/// timeouts and keep-alives, and sends each client its next packet when its congestion
/// mode allows one. Between updates, [`send`](Self::send) queues messages,
/// [`receive`](Self::receive) takes the delivered ones and
/// [`poll_event`](Self::poll_event) reports connections and disconnections.
///
/// ```no_run
/// use netproto::NetMessage;
/// use netproto::channel::ChannelId;
/// use netproto::transport::{Config, UdpServer, UdpServerEvent};
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
/// // The key the game's backend seals connect tokens with (from a secret store).
/// let private_key = netproto::netcode::Key::from_bytes([7; 32]);
/// let mut server = UdpServer::<Msg>::bind("127.0.0.1:40000", private_key, Config::default())?;
/// loop {
///     server.update()?;
///     while let Some(event) = server.poll_event() {
///         if let UdpServerEvent::Connected { client, address, .. } = event {
///             println!("{address} joined as {client:?}");
///         }
///     }
///     let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
///     for &client in &clients {
///         while let Some(Msg::Chat(chat)) = server.receive(client, ChannelId::RELIABLE) {
///             for &to in &clients {
///                 let _ = server.send(to, ChannelId::RELIABLE, Msg::Chat(chat.clone()));
///             }
///         }
///     }
///     std::thread::sleep(std::time::Duration::from_millis(16));
/// }
/// # Ok::<(), netproto::transport::TransportError>(())
/// ```
///
/// Dropping the server disconnects every client (best effort: the disconnect packets
/// are sent once, without waiting).
///
/// The socket is read through [`quinn_udp`]: up to [`BATCH_SIZE`] datagrams per
/// receive call where the platform batches (`recvmmsg` and GRO on Linux), one per call
/// elsewhere. The datagrams a tick writes, to every client, are queued in one batch
/// allocated with the server and sent when the tick ends: on Linux up to 64 per
/// `sendmmsg` call, each to its own destination (a server's fan-out, where GSO, which
/// segments datagrams to one destination, rarely applies); on other systems one
/// `send_to` per datagram. Either way a call that sends part of the batch is followed
/// by one for the rest, a datagram the system refuses (an unreachable address) is
/// dropped alone and counted in
/// [`datagrams_dropped_send_error`](TransportStats::datagrams_dropped_send_error), and
/// when the socket's send buffer is full the datagrams not sent wait for the next
/// update, where they go first (refused by two updates in a row, they are dropped and
/// counted). At a thousand clients this is a few hundredths of a system call per
/// datagram, each way. Its receive and send buffers are raised to
/// [`SOCKET_BUFFER_BYTES`] (as far as the system allows), so that a tick's datagrams
/// from a thousand clients wait in the socket instead of being dropped.
#[derive(Debug)]
pub struct UdpServer<M: MessageSet> {
    socket: UdpSocket,
    state: UdpSocketState,
    stack: ServerStack<SocketAddr, M>,
    clock: Clock,
    /// [`BATCH_SIZE`] receive buffers of [`RECV_BUFFER_SIZE`] bytes, back to back.
    recv_buf: Box<[u8]>,
    meta: [RecvMeta; BATCH_SIZE],
    /// The datagrams of a flush, [`BATCH_DATAGRAMS`](send_batch::BATCH_DATAGRAMS) per send call.
    batch: SendBatch,
    counters: TransportStats,
    /// The datagrams the last flush dropped, when drops are logged at all: logged
    /// once the flush let go of the stack, whose connection server keeps the one drop
    /// log of the server.
    send_drops: Vec<(SocketAddr, std::io::ErrorKind, Option<i32>)>,
    /// Where a link conditioner holds the datagrams (feature `conditioner`).
    seam: super::seam::Seam,
}

/// The receive and send buffer size the server asks of its socket (the system may
/// cap it: `net.core.rmem_max` and `wmem_max` on Linux).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Fills the unused entries of a batch's sender list (never read).
const PREFETCH_NOBODY: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0);

impl<M: MessageSet> UdpServer<M> {
    /// Binds a server at `addr` with `config` (its channels, connection settings and
    /// `max_clients` slots; the protocol id is [`protocol_id`](crate::protocol_id) of
    /// `M` and the channels), the backend's `private_key` and a challenge key from
    /// the operating system. Connect tokens must name the bound address (with the
    /// port the system chose when `addr` has port 0); to serve tokens that name
    /// another address (bound to `0.0.0.0`, behind a NAT), give a [`ServerConfig`]
    /// with its [`addresses`](ServerConfig::addresses) to
    /// [`with_socket`](Self::with_socket).
    pub fn bind(
        addr: impl ToSocketAddrs,
        private_key: Key,
        config: Config,
    ) -> Result<Self, TransportError> {
        let socket = UdpSocket::bind(resolve(addr)?)?;
        let local = socket.local_addr()?;
        let mut server = ServerConfig::new(config.connection_for::<M>(), private_key, vec![local]);
        server.max_clients = config.max_clients;
        Self::with_socket(socket, server, config.channels)
    }

    /// [`bind`](Self::bind) with [`INSECURE_DEV_KEY`](super::insecure_dev::INSECURE_DEV_KEY):
    /// for local play and tests only. Anyone can make a token this server accepts
    /// ([`insecure_dev::token`](super::insecure_dev::token)); never ship it.
    pub fn bind_insecure_dev(
        addr: impl ToSocketAddrs,
        config: Config,
    ) -> Result<Self, TransportError> {
        Self::bind(addr, super::insecure_dev::INSECURE_DEV_KEY, config)
    }

    /// A server on a socket the caller bound and configured (socket options such as
    /// the receive buffer size, which decides how much of a burst waits between two
    /// updates), with `config` as given (its protocol id must be
    /// [`protocol_id`](crate::protocol_id) of `M` and `layer`) and `layer` for every
    /// client. The socket is made non-blocking.
    ///
    /// With the `conditioner` feature, the link conditioner of the environment
    /// variable `NETPROTO_CONDITIONER` applies when set (a malformed value is an
    /// error): see `transport::conditioner`.
    pub fn with_socket(
        socket: UdpSocket,
        config: ServerConfig,
        layer: LayerConfig,
    ) -> Result<Self, TransportError> {
        let stack = ServerStack::new(config, layer, Time::ZERO, super::clock::unix_time())?;
        socket.set_nonblocking(true)?;
        let state = UdpSocketState::new((&socket).into())?;
        // Best effort: a system that refuses keeps its default sizes.
        let _ = state.set_recv_buffer_size((&socket).into(), SOCKET_BUFFER_BYTES);
        let _ = state.set_send_buffer_size((&socket).into(), SOCKET_BUFFER_BYTES);
        Ok(Self {
            socket,
            state,
            stack,
            clock: Clock::start(),
            recv_buf: vec![0; BATCH_SIZE * RECV_BUFFER_SIZE].into_boxed_slice(),
            meta: [RecvMeta::default(); BATCH_SIZE],
            batch: SendBatch::new(),
            counters: TransportStats::default(),
            send_drops: Vec::new(),
            seam: super::seam::Seam::new("server")?,
        })
    }

    /// Puts a link conditioner on the socket (`None` takes it off; the datagrams it
    /// held are dropped): from now, the datagrams sent and received go through it.
    /// Replaces the one of the environment variable.
    #[cfg(feature = "conditioner")]
    pub fn set_conditioner(&mut self, config: Option<super::conditioner::ConditionerConfig>) {
        self.seam.set("server", config);
    }

    /// What the link conditioner did, when there is one.
    #[cfg(feature = "conditioner")]
    pub fn conditioner_stats(&self) -> Option<super::conditioner::ConditionerStats> {
        self.seam.stats()
    }

    /// The address the socket is bound to (with the port chosen by the system when
    /// bound to port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.socket.local_addr()?)
    }

    /// The sans-IO connection server: statistics, congestion state and counters of
    /// every client (see [`ServerStack::connection`](super::ServerStack::connection)).
    pub fn connection(&self) -> &Server<SocketAddr, impl Sized> {
        self.stack.connection()
    }

    /// What the connection to `client` measured, link and messages, while connected.
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        self.stack.stats(client)
    }

    /// The message layer of a connected client (queues and counters).
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.stack.layer(client)
    }

    /// The socket counters.
    pub fn transport_stats(&self) -> &TransportStats {
        &self.counters
    }

    /// The connected clients and their addresses.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, SocketAddr)> + '_ {
        self.stack.clients()
    }

    /// Seconds since the server started: the time the connection layer runs on.
    fn now(&self) -> Time {
        self.clock.now()
    }

    /// One tick: reads the waiting datagrams (at most
    /// [`MAX_DATAGRAMS_PER_UPDATE`](super::MAX_DATAGRAMS_PER_UPDATE)), runs timeouts
    /// and keep-alives, disconnects clients that broke the message protocol, and sends
    /// each client its next packet when its congestion mode allows one.
    ///
    /// Errors are socket errors other than "nothing to read" and the transient resets
    /// a UDP socket reports after an ICMP message (those are skipped and counted).
    pub fn update(&mut self) -> Result<(), TransportError> {
        let now = self.now();
        let mut budget = super::MAX_DATAGRAMS_PER_UPDATE;
        while budget > 0 {
            let received = {
                let mut chunks = self.recv_buf.chunks_mut(RECV_BUFFER_SIZE);
                let mut bufs: [IoSliceMut<'_>; BATCH_SIZE] =
                    core::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
                let batch = bufs.len().min(budget);
                self.state
                    .recv((&self.socket).into(), &mut bufs[..batch], &mut self.meta)
            };
            let count = match received {
                Ok(count) => count,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if is_transient(&e) => {
                    self.counters.receive_errors_skipped += 1;
                    budget -= 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            if count == 0 {
                break;
            }
            let batch = count.min(BATCH_SIZE);
            let mut senders = [PREFETCH_NOBODY; BATCH_SIZE];
            for (sender, meta) in senders.iter_mut().zip(&self.meta[..batch]) {
                *sender = meta.addr;
            }
            self.stack.prefetch(&senders[..batch]);
            let buffers = self.recv_buf.chunks(RECV_BUFFER_SIZE);
            for (meta, buf) in self.meta.iter().take(count).zip(buffers) {
                let data = buf.get(..meta.len).unwrap_or_default();
                // One buffer holds `len / stride` datagrams when the system coalesced
                // them (GRO); the last may be shorter. An empty datagram is one too.
                let empty = data.is_empty().then_some(data);
                for datagram in data.chunks(meta.stride.max(1)).chain(empty) {
                    self.counters.datagrams_received += 1;
                    self.counters.bytes_received += datagram.len() as u64;
                    let stack = &mut self.stack;
                    self.seam
                        .receive(now, meta.addr, datagram, |from, datagram| {
                            stack.handle_datagram(now, from, datagram);
                        });
                    budget = budget.saturating_sub(1);
                }
            }
        }
        let stack = &mut self.stack;
        self.seam.release_received(now, |from, datagram| {
            stack.handle_datagram(now, from, datagram);
        });
        self.stack.update(now);
        self.flush_socket();
        Ok(())
    }

    /// Sends now the messages queued since the last [`update`](Self::update), to
    /// every client whose congestion mode allows a packet (a client without news
    /// gets nothing: its acks and resends wait for the next update). Nothing else:
    /// the socket is not read, and no timeout or keep-alive runs. For a game that
    /// queues its messages after the tick's update and wants them out before the
    /// next one: the Bevy plugin calls `update` at the start of a frame and `flush`
    /// at its end.
    pub fn flush(&mut self) {
        let now = self.now();
        self.stack.flush(now);
        self.flush_socket();
    }

    /// Hands every queued datagram to the socket, [`BATCH_DATAGRAMS`](send_batch::BATCH_DATAGRAMS) per call where
    /// the system batches (see [`UdpServer`]).
    fn flush_socket(&mut self) {
        self.counters.payloads_dropped_by_layer =
            self.stack.stack_stats().payloads_dropped_by_layer;
        if self.seam.is_active() {
            return self.flush_conditioned();
        }
        let logged = tracing::enabled!(target: trace::DROP, tracing::Level::DEBUG);
        let drops = &mut self.send_drops;
        self.batch.flush(
            &mut self.stack,
            &mut SocketSink(&self.socket),
            &mut self.counters,
            |to, error| {
                if logged {
                    drops.push((to, error.kind(), error.raw_os_error()));
                }
            },
        );
        let (now, drop_log) = (self.clock.now(), self.stack.drop_log());
        for (to, kind, code) in self.send_drops.drain(..) {
            let error = code.map_or_else(|| kind.into(), std::io::Error::from_raw_os_error);
            log_send_drop(drop_log, now, to, &error);
        }
    }

    /// [`flush_socket`](Self::flush_socket) through the link conditioner: it takes every queued
    /// datagram, and the ones it releases now go out in batches (those the socket has
    /// no room for are lost on the conditioned link, and counted).
    fn flush_conditioned(&mut self) {
        let now = self.now();
        let mut buf = [0; crate::connection::MAX_DATAGRAM_BYTES];
        while let Some((to, n)) = self.stack.poll_transmit(&mut buf) {
            self.seam.send(now, to, &buf[..n], |_, _| {});
        }
        let mut released = Released::default();
        self.seam.release_sends(now, |to, datagram| {
            released.0.push_back((to, datagram.to_vec()));
        });
        let drop_log = self.stack.drop_log();
        let mut dropped = |to, error: &std::io::Error| log_send_drop(drop_log, now, to, error);
        let sink = &mut SocketSink(&self.socket);
        self.batch
            .flush(&mut released, sink, &mut self.counters, &mut dropped);
        self.batch
            .drop_rest(&mut released, &mut self.counters, &mut dropped);
    }

    /// Queues `message` to `client` on `channel`; it goes out with the next packets.
    pub fn send(
        &mut self,
        client: ClientId,
        channel: ChannelId,
        message: M,
    ) -> Result<(), SendError> {
        self.stack.send(client, channel, message)
    }

    /// Queues `message` to `client` on the unreliable `channel` and tracks it:
    /// [`poll_receipt`](Self::poll_receipt) returns its receipt once the client acked
    /// a packet that carried it ([`MessageLayer::send_tracked`](crate::channel::MessageLayer::send_tracked);
    /// what [`SnapshotSender::sent_with`](crate::delta::SnapshotSender::sent_with)
    /// takes for delta snapshots).
    pub fn send_tracked(
        &mut self,
        client: ClientId,
        channel: ChannelId,
        message: M,
    ) -> Result<crate::channel::Receipt, SendError> {
        self.stack.send_tracked(client, channel, message)
    }

    /// The oldest receipt of a message tracked to `client` on `channel` that reached
    /// it and was not taken yet.
    pub fn poll_receipt(
        &mut self,
        client: ClientId,
        channel: ChannelId,
    ) -> Option<crate::channel::Receipt> {
        self.stack.poll_receipt(client, channel)
    }

    /// Queues `message` to `client` on `channel`, a channel declared for its type
    /// alone ([`LayerConfig::add_typed`](crate::channel::LayerConfig::add_typed)):
    /// another type does not compile. Otherwise as [`send`](Self::send).
    pub fn send_on<T: Into<M>>(
        &mut self,
        client: ClientId,
        channel: crate::channel::Channel<T>,
        message: T,
    ) -> Result<(), SendError> {
        self.stack.send_on(client, channel, message)
    }

    /// Queues `message` on `channel` for every connected client, encoded once; see
    /// [`ServerStack::broadcast`]. Returns the clients it was queued for.
    pub fn broadcast(
        &mut self,
        channel: ChannelId,
        message: &M,
        on_refused: impl FnMut(ClientId, SendError),
    ) -> Result<usize, SendError>
    where
        M: Clone,
    {
        self.stack.broadcast(channel, message, on_refused)
    }

    /// The next message delivered from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: ChannelId) -> Option<M> {
        self.stack.receive(client, channel)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<UdpServerEvent> {
        self.stack.poll_event()
    }

    /// Every event so far, draining them.
    pub fn events(&mut self) -> impl Iterator<Item = UdpServerEvent> + '_ {
        core::iter::from_fn(|| self.stack.poll_event())
    }

    /// Disconnects `client` now (the disconnect packets are sent at once); returns
    /// `false` if it was not connected.
    pub fn disconnect(&mut self, client: ClientId) -> bool {
        let now = self.now();
        let done = self.stack.disconnect(now, client);
        self.flush_socket();
        done
    }

    /// A graceful disconnect of `client`: its queues are flushed (every reliable
    /// message acked) for `timeout` at most by the next updates, then it is
    /// disconnected; see [`ServerStack::disconnect_after_flush`]. `false` if it was
    /// not connected.
    pub fn disconnect_after_flush(&mut self, client: ClientId, timeout: Duration) -> bool {
        let now = self.now();
        self.stack.disconnect_after_flush(now, client, timeout)
    }

    /// Disconnects every client now.
    pub fn disconnect_all(&mut self) {
        let now = self.now();
        self.stack.disconnect_all(now);
        self.flush_socket();
    }
}

/// Logs a datagram the socket refused (rate-limited).
fn log_send_drop(drop_log: &mut DropLog, now: Time, to: SocketAddr, error: &std::io::Error) {
    trace::log_drop!(
        drop_log,
        now,
        "server",
        addr = ?to,
        reason = %trace::DropReason::SendFailed,
        datagrams = 1,
        %error,
        "dropped"
    );
}

/// The server stack's transmit queue, as the batch takes it.
impl<M: MessageSet> send_batch::Source for ServerStack<SocketAddr, M> {
    fn poll(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        self.poll_transmit(buf)
    }

    fn pending(&self) -> usize {
        self.connection().pending_transmits()
    }
}

/// The datagrams the link conditioner released, as the batch takes them.
#[derive(Debug, Default)]
struct Released(std::collections::VecDeque<(SocketAddr, Vec<u8>)>);

impl send_batch::Source for Released {
    fn poll(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let (to, datagram) = self.0.pop_front()?;
        let n = datagram.len().min(buf.len());
        buf[..n].copy_from_slice(&datagram[..n]);
        Some((to, n))
    }

    fn pending(&self) -> usize {
        self.0.len()
    }
}

impl<M: MessageSet> Drop for UdpServer<M> {
    fn drop(&mut self) {
        self.disconnect_all();
    }
}
