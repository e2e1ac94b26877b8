//! The UDP client.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Instant;

use super::{
    ClientStack, RECV_BUFFER_SIZE, Recv, SendError, TransportCounters, TransportError, recv,
    resolve,
};
use crate::MessageSet;
use crate::channel::{LayerConfig, MessageLayer};
use crate::connection::{
    Client, ClientEvent, ClientId, ClientState, ConnectionConfig, DenyReason, DisconnectReason,
};

/// An event of a [`UdpClient`], from [`poll_event`](UdpClient::poll_event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UdpClientEvent {
    /// The server accepted us.
    Connected {
        /// Our slot on the server; `None` when the accepted packet was lost and the
        /// session was proven by the server's first session packet instead.
        client: Option<ClientId>,
    },
    /// The connection ended, or the handshake timed out. A client that received a
    /// message the protocol forbids disconnects with [`DisconnectReason::Local`].
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// The server refused us.
    Denied {
        /// Why.
        reason: DenyReason,
        /// The server's protocol id (its message set's fingerprint).
        server_protocol_id: u64,
    },
}

/// A game client over UDP: the sans-IO connection [`Client`] and its
/// [`MessageLayer`], on a non-blocking socket. One value is one connection attempt;
/// after it is denied or disconnected, make a new one to connect again.
///
/// Call [`update`](Self::update) once per tick. Messages may be queued with
/// [`send`](Self::send) during the handshake; they go out once connected.
///
/// ```no_run
/// use netproto::NetMessage;
/// use netproto::channel::LayerConfig;
/// use netproto::transport::{UdpClient, UdpClientEvent};
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
/// let server = "127.0.0.1:40000".parse().unwrap();
/// let mut client = UdpClient::<Msg>::connect(server, LayerConfig::default())?;
/// client.send(RELIABLE, Msg::Chat(Chat { text: "hello".into() }))?;
/// loop {
///     client.update()?;
///     while let Some(event) = client.poll_event() {
///         match event {
///             UdpClientEvent::Connected { .. } => println!("connected"),
///             UdpClientEvent::Denied { reason, .. } => return Err(reason.to_string().into()),
///             UdpClientEvent::Disconnected { reason } => return Err(reason.to_string().into()),
///             _ => {}
///         }
///     }
///     while let Some(Msg::Chat(chat)) = client.receive(RELIABLE) {
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
    epoch: Instant,
    events: VecDeque<UdpClientEvent>,
    recv_buf: Vec<u8>,
    counters: TransportCounters,
}

impl<M: MessageSet> UdpClient<M> {
    /// Connects to `server` with the default connection settings, the message set's
    /// fingerprint as protocol id, a fresh nonce ([`random_u64`](super::random_u64))
    /// and `layer`. The socket binds an ephemeral port on the loopback interface when
    /// the server is on it, on every interface otherwise. The first request goes out
    /// at the first [`update`](Self::update).
    pub fn connect(server: SocketAddr, layer: LayerConfig) -> Result<Self, TransportError> {
        let ip = match (server.ip().is_loopback(), server) {
            (true, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            (true, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            (false, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            (false, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        Self::connect_with(
            SocketAddr::new(ip, 0),
            server,
            ConnectionConfig::new(M::FINGERPRINT),
            layer,
        )
    }

    /// Binds `local` and connects to `server` with `config` as given (its protocol id
    /// should be `M::FINGERPRINT`) and `layer`.
    pub fn connect_with(
        local: impl ToSocketAddrs,
        server: impl ToSocketAddrs,
        config: ConnectionConfig,
        layer: LayerConfig,
    ) -> Result<Self, TransportError> {
        let server = resolve(server)?;
        let stack = ClientStack::new(config, server, super::random_u64(), layer, 0.0)?;
        let socket = UdpSocket::bind(resolve(local)?)?;
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

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.socket.local_addr()?)
    }

    /// The sans-IO connection client: state, statistics and congestion state.
    pub fn connection(&self) -> &Client<SocketAddr> {
        self.stack.connection()
    }

    /// The message layer (queues and counters).
    pub fn layer(&self) -> &MessageLayer<M> {
        self.stack.layer()
    }

    /// The socket counters.
    pub fn counters(&self) -> &TransportCounters {
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

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
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
                ClientEvent::Connected { .. } => UdpClientEvent::Connected {
                    client: self.stack.connection().client_id(),
                },
                ClientEvent::Disconnected { reason } => UdpClientEvent::Disconnected { reason },
                ClientEvent::Denied {
                    reason,
                    server_protocol_id,
                } => UdpClientEvent::Denied {
                    reason,
                    server_protocol_id,
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

    /// Queues `message` on `channel`; it goes out with the next packets (once
    /// connected, when still in the handshake). Fails with
    /// [`SendError::NotConnected`] after a denial or a disconnection.
    pub fn send(&mut self, channel: usize, message: M) -> Result<(), SendError> {
        self.stack.send(channel, message)
    }

    /// The next message delivered on `channel`.
    pub fn receive(&mut self, channel: usize) -> Option<M> {
        self.stack.receive(channel)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<UdpClientEvent> {
        self.events.pop_front()
    }

    /// Every event so far, draining them.
    pub fn events(&mut self) -> impl Iterator<Item = UdpClientEvent> + '_ {
        self.events.drain(..)
    }

    /// Disconnects now: the disconnect packets are sent at once (when connected) and
    /// [`UdpClientEvent::Disconnected`] with [`DisconnectReason::Local`] is reported.
    pub fn disconnect(&mut self) {
        let now = self.now();
        self.stack.disconnect(now);
        self.flush();
    }
}

impl<M: MessageSet> Drop for UdpClient<M> {
    fn drop(&mut self) {
        if self.stack.connection().is_connected() {
            self.disconnect();
        }
    }
}
