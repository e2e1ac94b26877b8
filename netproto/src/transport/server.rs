//! The UDP server.

use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Instant;

use super::{RECV_BUFFER_SIZE, Recv, SendError, TransportCounters, TransportError, recv, resolve};
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
    server: Server<SocketAddr>,
    layers: Vec<Option<MessageLayer<M>>>,
    layer_config: LayerConfig,
    epoch: Instant,
    events: VecDeque<UdpServerEvent>,
    recv_buf: Vec<u8>,
    payload: Vec<u8>,
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
        // Validate the layer configuration once: every client's layer is built from it.
        MessageLayer::<M>::new(layer.clone())?;
        crate::channel::check_pair(&config.connection.endpoint, &layer)?;
        let socket = UdpSocket::bind(resolve(addr)?)?;
        socket.set_nonblocking(true)?;
        let epoch = Instant::now();
        let server = Server::new(config, 0.0)?;
        let layers = (0..server.max_clients()).map(|_| None).collect();
        Ok(Self {
            socket,
            server,
            layers,
            layer_config: layer,
            epoch,
            events: VecDeque::new(),
            recv_buf: vec![0; RECV_BUFFER_SIZE],
            payload: Vec::new(),
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
        &self.server
    }

    /// The message layer of a connected client (queues and counters).
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.layers
            .get(usize::from(client.0))
            .and_then(Option::as_ref)
    }

    /// The socket counters.
    pub fn counters(&self) -> &TransportCounters {
        &self.counters
    }

    /// The connected clients and their addresses.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, SocketAddr)> + '_ {
        self.server.clients()
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
        self.receive_datagrams(now)?;
        for index in 0..self.layers.len() {
            let broken = self.layers[index]
                .as_ref()
                .is_some_and(|l| l.protocol_error().is_some());
            if broken {
                self.server.disconnect(now, ClientId(index as u16));
            }
        }
        self.drain_core_events();
        // Payloads before the core's update: it sends a keep-alive to every client
        // nothing was sent to for the keep-alive interval, and a payload packet
        // carries the acks as well.
        self.send_packets(now);
        self.server.update(now);
        self.drain_core_events();
        self.flush();
        Ok(())
    }

    fn receive_datagrams(&mut self, now: f64) -> Result<(), TransportError> {
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
            let layers = &mut self.layers;
            let counters = &mut self.counters;
            let datagram = self.recv_buf.get(..len).unwrap_or_default();
            self.server
                .handle_datagram_with(now, from, datagram, |client, payload| {
                    let taken = layers
                        .get_mut(usize::from(client.0))
                        .and_then(Option::as_mut)
                        .is_some_and(|layer| layer.read_packet(payload).is_ok());
                    if !taken {
                        counters.payloads_refused += 1;
                    }
                    taken
                });
            // Connections open and close between datagrams, so that each payload
            // meets the layer of its own session.
            self.drain_core_events();
        }
        Ok(())
    }

    /// Applies the connection events to the layers and queues the game's events.
    fn drain_core_events(&mut self) {
        while let Some(event) = self.server.poll_event() {
            match event {
                ServerEvent::Connected { client, address } => {
                    if let Some(slot) = self.layers.get_mut(usize::from(client.0)) {
                        // The configuration was validated at bind.
                        *slot = MessageLayer::new(self.layer_config.clone()).ok();
                    }
                    self.events
                        .push_back(UdpServerEvent::Connected { client, address });
                }
                ServerEvent::Disconnected {
                    client,
                    address,
                    reason,
                } => {
                    if let Some(slot) = self.layers.get_mut(usize::from(client.0)) {
                        *slot = None;
                    }
                    self.events.push_back(UdpServerEvent::Disconnected {
                        client,
                        address,
                        reason,
                    });
                }
                ServerEvent::PacketAcked { client, sequence } => {
                    if let Some(layer) = self
                        .layers
                        .get_mut(usize::from(client.0))
                        .and_then(Option::as_mut)
                    {
                        layer.on_packet_acked(sequence);
                    }
                }
                // Already read by the layer when the packet was accepted.
                _ => {}
            }
        }
    }

    fn send_packets(&mut self, now: f64) {
        for (index, slot) in self.layers.iter_mut().enumerate() {
            let Some(layer) = slot.as_mut() else {
                continue;
            };
            let client = ClientId(index as u16);
            if !self.server.ready_to_send(now, client) {
                continue;
            }
            let Some(sequence) = self.server.next_sequence(client) else {
                continue;
            };
            if let Some(stats) = self.server.client_stats(client) {
                layer.set_rtt(stats.rtt_ms / 1000.0);
            }
            layer.write_packet(now, sequence, &mut self.payload);
            // A payload within the layer's max_packet_bits always fits the endpoint
            // (fragmented above its threshold); a refusal is a lost packet.
            let _ = self.server.send(now, client, &self.payload);
        }
    }

    /// Hands every queued datagram to the socket; a refused one counts as lost.
    fn flush(&mut self) {
        while let Some(transmit) = self.server.poll_transmit() {
            match self.socket.send_to(&transmit.payload, transmit.to) {
                Ok(_) => self.counters.datagrams_sent += 1,
                Err(_) => self.counters.send_errors += 1,
            }
        }
    }

    /// Queues `message` to `client` on `channel`; it goes out with the next packets.
    pub fn send(&mut self, client: ClientId, channel: usize, message: M) -> Result<(), SendError> {
        let layer = self
            .layers
            .get_mut(usize::from(client.0))
            .and_then(Option::as_mut)
            .ok_or(SendError::NotConnected)?;
        Ok(layer.send(channel, message)?)
    }

    /// The next message delivered from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: usize) -> Option<M> {
        self.layers
            .get_mut(usize::from(client.0))
            .and_then(Option::as_mut)?
            .receive(channel)
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
        let done = self.server.disconnect(now, client);
        self.drain_core_events();
        self.flush();
        done
    }

    /// Disconnects every client now.
    pub fn disconnect_all(&mut self) {
        let now = self.now();
        self.server.disconnect_all(now);
        self.drain_core_events();
        self.flush();
    }
}

impl<M: MessageSet> Drop for UdpServer<M> {
    fn drop(&mut self) {
        self.disconnect_all();
    }
}
