//! The UDP server.

use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Instant;

use super::{
    RECV_BUFFER_SIZE, Recv, SendError, ServerStack, TransportCounters, TransportError, recv,
    resolve,
};
use crate::MessageSet;
use crate::channel::{LayerConfig, MessageLayer};
use crate::connection::{
    ClientId, ConnectionConfig, DisconnectReason, Server, ServerConfig, ServerEvent,
};

/// An event of a [`UdpServer`], from [`poll_event`](UdpServer::poll_event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UdpServerEvent {
    /// A client completed the handshake and took a slot.
    Connected {
        /// Its slot.
        client: ClientId,
        /// Its address.
        address: SocketAddr,
    },
    /// A client left, and its slot is free (its undelivered messages are dropped).
    Disconnected {
        /// Its slot.
        client: ClientId,
        /// Its address.
        address: SocketAddr,
        /// Why. A client that broke the message protocol is disconnected with
        /// [`DisconnectReason::Local`].
        reason: DisconnectReason,
    },
}

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
/// use netproto::channel::LayerConfig;
/// use netproto::transport::{UdpServer, UdpServerEvent};
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
/// const RELIABLE: usize = 0; // LayerConfig::default(): 0 reliable, 1 unreliable
///
/// let mut server = UdpServer::<Msg>::bind("0.0.0.0:40000", 16, LayerConfig::default())?;
/// loop {
///     server.update()?;
///     while let Some(event) = server.poll_event() {
///         if let UdpServerEvent::Connected { client, address } = event {
///             println!("{address} joined as {client:?}");
///         }
///     }
///     let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
///     for &client in &clients {
///         while let Some(Msg::Chat(chat)) = server.receive(client, RELIABLE) {
///             for &to in &clients {
///                 let _ = server.send(to, RELIABLE, Msg::Chat(chat.clone()));
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
#[derive(Debug)]
pub struct UdpServer<M: MessageSet> {
    socket: UdpSocket,
    stack: ServerStack<SocketAddr, M>,
    epoch: Instant,
    events: VecDeque<UdpServerEvent>,
    recv_buf: Vec<u8>,
    counters: TransportCounters,
}

impl<M: MessageSet> UdpServer<M> {
    /// Binds a server at `addr` with `max_clients` slots, the default connection
    /// settings with the message set's fingerprint as protocol id, a freshly drawn
    /// challenge key ([`random_key`](super::random_key)) and `layer` for every client.
    pub fn bind(
        addr: impl ToSocketAddrs,
        max_clients: usize,
        layer: LayerConfig,
    ) -> Result<Self, TransportError> {
        let mut config =
            ServerConfig::new(ConnectionConfig::new(M::FINGERPRINT), super::random_key());
        config.max_clients = max_clients;
        Self::bind_with(addr, config, layer)
    }

    /// Binds a server at `addr` with `config` as given (its protocol id should be
    /// `M::FINGERPRINT`, its challenge key random: see
    /// [`random_key`](super::random_key)) and `layer` for every client.
    pub fn bind_with(
        addr: impl ToSocketAddrs,
        config: ServerConfig,
        layer: LayerConfig,
    ) -> Result<Self, TransportError> {
        let stack = ServerStack::new(config, layer, 0.0)?;
        let socket = UdpSocket::bind(resolve(addr)?)?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            stack,
            epoch: Instant::now(),
            events: VecDeque::new(),
            recv_buf: vec![0; RECV_BUFFER_SIZE],
            counters: TransportCounters::default(),
        })
    }

    /// The address the socket is bound to (with the port chosen by the system when
    /// bound to port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.socket.local_addr()?)
    }

    /// The sans-IO connection server: statistics, congestion state and counters of
    /// every client.
    pub fn connection(&self) -> &Server<SocketAddr> {
        self.stack.connection()
    }

    /// The message layer of a connected client (queues and counters).
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.stack.layer(client)
    }

    /// The socket counters.
    pub fn counters(&self) -> &TransportCounters {
        &self.counters
    }

    /// The connected clients and their addresses.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, SocketAddr)> + '_ {
        self.stack.clients()
    }

    /// Seconds since the server started: the time the connection layer runs on.
    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
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
        for _ in 0..super::MAX_DATAGRAMS_PER_UPDATE {
            let (len, from) = match recv(&self.socket, &mut self.recv_buf)? {
                Recv::Datagram(len, from) => (len, from),
                Recv::Empty => break,
                Recv::Skip => {
                    self.counters.receive_errors += 1;
                    continue;
                }
            };
            self.counters.datagrams_received += 1;
            let datagram = self.recv_buf.get(..len).unwrap_or_default();
            self.stack.handle_datagram(now, from, datagram);
        }
        self.stack.update(now);
        self.flush();
        Ok(())
    }

    /// Turns the stack's events into ours, and hands every queued datagram to the
    /// socket; a refused one counts as lost.
    fn flush(&mut self) {
        while let Some(event) = self.stack.poll_event() {
            self.events.push_back(match event {
                ServerEvent::Connected { client, address } => {
                    UdpServerEvent::Connected { client, address }
                }
                ServerEvent::Disconnected {
                    client,
                    address,
                    reason,
                } => UdpServerEvent::Disconnected {
                    client,
                    address,
                    reason,
                },
                _ => continue,
            });
        }
        self.counters.payloads_refused = self.stack.counters().payloads_refused;
        while let Some(transmit) = self.stack.poll_transmit() {
            match self.socket.send_to(&transmit.payload, transmit.to) {
                Ok(_) => self.counters.datagrams_sent += 1,
                Err(_) => self.counters.send_errors += 1,
            }
        }
    }

    /// Queues `message` to `client` on `channel`; it goes out with the next packets.
    pub fn send(&mut self, client: ClientId, channel: usize, message: M) -> Result<(), SendError> {
        self.stack.send(client, channel, message)
    }

    /// The next message delivered from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: usize) -> Option<M> {
        self.stack.receive(client, channel)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<UdpServerEvent> {
        self.events.pop_front()
    }

    /// Every event so far, draining them.
    pub fn events(&mut self) -> impl Iterator<Item = UdpServerEvent> + '_ {
        self.events.drain(..)
    }

    /// Disconnects `client` now (the disconnect packets are sent at once); returns
    /// `false` if it was not connected.
    pub fn disconnect(&mut self, client: ClientId) -> bool {
        let now = self.now();
        let done = self.stack.disconnect(now, client);
        self.flush();
        done
    }

    /// Disconnects every client now.
    pub fn disconnect_all(&mut self) {
        let now = self.now();
        self.stack.disconnect_all(now);
        self.flush();
    }
}

impl<M: MessageSet> Drop for UdpServer<M> {
    fn drop(&mut self) {
        self.disconnect_all();
    }
}
