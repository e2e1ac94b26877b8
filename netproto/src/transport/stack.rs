//! The sans-IO glue of a connection and its message layer: what every driver (the
//! UDP transport, a simulator harness, a custom transport) runs, written once.

use crate::Time;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

use super::{ConnectionStats, SendError, TransportError};
use crate::MessageSet;
use crate::channel::{ChannelId, LayerConfig, MessageLayer, PayloadError};
use crate::connection::{
    Client, ClientEvent, ClientId, ConnectionConfig, Delivery, Server, ServerConfig, ServerEvent,
};
use crate::netcode::ConnectToken;
use crate::trace::{DropLog, Refusal};

/// Most payload packets a stack sends one connection in one update: the first, and
/// more while the message layer has more to send
/// ([`more_to_send`](MessageLayer::more_to_send)) and the congestion mode's rate allows
/// (at the default 120 packets per second, a 60 Hz update sends up to two).
pub const MAX_PACKETS_PER_UPDATE: usize = 4;

/// Packets per second a stack sends a connection whose message layer has nothing new
/// ([`MessageLayer::has_news`]): they carry acks and resends only. With news (a
/// message queued since the last packet, or more due than a packet held) a packet
/// goes at once, as far as the congestion mode's rate allows; so a driver that
/// updates a thousand times a second sends a packet when the game has something to
/// say, and 30 a second otherwise.
pub const IDLE_PACKET_RATE: f64 = 30.0;

/// `true` when an update may send the first packet of this tick: something new, or
/// the idle interval passed since the last one.
fn first_packet_due(layer: &MessageLayer<impl MessageSet>, now: Time, last: Time) -> bool {
    layer.has_news() || last > now || now.secs_since(last) + 1e-6 >= 1.0 / IDLE_PACKET_RATE
}

/// What a stack counted of the payloads it wrote and read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackCounters {
    /// Payload packets written by a layer and handed to the connection.
    pub payloads_sent: u64,
    /// The largest payload written, bytes.
    pub largest_payload: usize,
    /// Payloads of connected peers that the layer refused (dropped whole, not acked).
    pub payloads_refused: u64,
    /// Disconnects after flush that ended flushed (everything acked).
    pub flushed_disconnects: u64,
    /// Disconnects after flush that ended at their timeout, with messages unacked.
    pub flush_timeouts: u64,
}

impl StackCounters {
    /// Counts how a disconnect after flush ended.
    fn count_close(&mut self, flushed: bool) {
        if flushed {
            self.flushed_disconnects += 1;
        } else {
            self.flush_timeouts += 1;
        }
    }
}

/// A game server without a clock or a socket: the connection [`Server`] and one
/// [`MessageLayer`] per client slot, glued the one way they must be:
///
/// * a received payload ([`Delivery`](crate::connection::Delivery)) is read by the
///   client's layer *before* the packet is taken: a payload the layer cannot take now
///   is refused (unacked, so the peer resends what it carried); one it finds
///   malformed disconnects the client with
///   [`DisconnectReason::ProtocolError`](crate::connection::DisconnectReason::ProtocolError);
///   an accepted one's acks release what our packets carried
///   ([`on_packet_acked`](MessageLayer::on_packet_acked));
/// * at each [`update`](Self::update), every client whose congestion mode allows a
///   packet gets one payload written by its layer when the layer has news (a message
///   queued since the last packet), or [`IDLE_PACKET_RATE`] times a second without
///   (it still carries acks and resends), with the layer's RTT taken from the
///   connection, and more (up to [`MAX_PACKETS_PER_UPDATE`]) while the layer has more
///   to send and the rate allows; *then* the connection's own update runs, so a
///   keep-alive goes only to clients nothing was sent to.
///
/// The driver hands it every datagram ([`handle_datagram`](Self::handle_datagram)),
/// calls [`update`](Self::update) once per tick with the time, and sends what
/// [`poll_transmit`](Self::poll_transmit) gives. [`UdpServer`](super::UdpServer) is
/// this over a socket.
#[derive(Debug)]
pub struct ServerStack<A, M> {
    server: Server<A>,
    layers: Vec<Option<MessageLayer<M>>>,
    /// The slots that hold a layer, in the order they connected: a tick visits the
    /// clients, not the slots.
    connected: Vec<u16>,
    layer_config: LayerConfig,
    /// Per slot: the deadline of a disconnect after flush.
    closing: Vec<Option<Time>>,
    /// Per slot: when the last payload packet went out.
    last_payload: Vec<Time>,
    events: VecDeque<ServerEvent<A>>,
    counters: StackCounters,
    drop_log: DropLog,
}

impl<A: Copy + Eq + Hash + Debug, M: MessageSet> ServerStack<A, M> {
    /// A server with `config` and `layer` for every client, at time `now` when the
    /// Unix time is `unix_time` (see [`Server::new`]). Fails when either
    /// configuration is invalid, the layer does not fit the endpoint, or the
    /// configured protocol id is not [`protocol_id`](crate::protocol_id) of `M` and
    /// `layer`.
    pub fn new(
        config: ServerConfig,
        layer: LayerConfig,
        now: Time,
        unix_time: u64,
    ) -> Result<Self, TransportError> {
        check_protocol_id::<M>(config.connection.protocol_id, &layer)?;
        // Validated once: every client's layer is built from it.
        MessageLayer::<M>::new(layer.clone())?;
        crate::channel::check_pair(&config.connection.endpoint, &layer)?;
        let server = Server::new(config, now, unix_time)?;
        let layers = (0..server.max_clients()).map(|_| None).collect();
        Ok(Self {
            closing: vec![None; server.max_clients()],
            last_payload: vec![Time::NEVER; server.max_clients()],
            connected: Vec::with_capacity(server.max_clients()),
            server,
            layers,
            layer_config: layer,
            events: VecDeque::new(),
            counters: StackCounters::default(),
            drop_log: DropLog::new(now),
        })
    }

    /// The sans-IO connection server: statistics, congestion state and counters of
    /// every client.
    pub fn connection(&self) -> &Server<A> {
        &self.server
    }

    /// What the stack counted.
    pub fn counters(&self) -> &StackCounters {
        &self.counters
    }

    /// What the connection to `client` measured, link and messages, while connected.
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        let link = self.server.stats(client)?;
        Some(ConnectionStats::new(link, self.layer(client)?.stats()))
    }

    /// The message layer of a connected client (queues and counters).
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.layers
            .get(usize::from(client.0))
            .and_then(Option::as_ref)
    }

    /// The message layer of a connected client, to send and receive directly.
    pub fn layer_mut(&mut self, client: ClientId) -> Option<&mut MessageLayer<M>> {
        self.layers
            .get_mut(usize::from(client.0))
            .and_then(Option::as_mut)
    }

    /// Every connected client's layer.
    pub fn layers(&self) -> impl Iterator<Item = (ClientId, &MessageLayer<M>)> + '_ {
        self.layers
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((ClientId(i as u16), l.as_ref()?)))
    }

    /// The connected clients and their addresses.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, A)> + '_ {
        self.server.clients()
    }

    /// Handles one datagram from `from`: a client's payload is read by its layer,
    /// then accepted (its acks release what our packets carried) or refused (the
    /// client resends it); a malformed one disconnects the client. Connections that
    /// open or close with it get or lose their layer at once, so that the next
    /// payload meets its own session's.
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) {
        let mut broken = None;
        if let Some(delivery) = self.server.handle_datagram(now, from, datagram) {
            let client = delivery.client();
            let layer = self
                .layers
                .get_mut(usize::from(client.0))
                .and_then(Option::as_mut);
            match layer {
                Some(layer) => {
                    if let Err(error) = deliver(layer, delivery) {
                        self.counters.payloads_refused += 1;
                        let refusal = refused("server", Some(client), &from, &error);
                        self.drop_log.refused(now, refusal);
                        if error.is_malformed() {
                            broken = Some(client);
                        }
                    }
                }
                None => {
                    delivery.refuse();
                    self.counters.payloads_refused += 1;
                }
            }
        }
        if let Some(client) = broken {
            self.server.disconnect_for_protocol_error(client);
        }
        self.drain_core_events();
    }

    /// One tick at `now`: sends each client its next payload packet when its
    /// congestion mode allows one (written by its layer, with the layer's RTT taken
    /// from the connection), then runs the connection's update (timeouts, statistics,
    /// congestion, keep-alives to clients nothing was sent to).
    pub fn update(&mut self, now: Time) {
        for &index in &self.connected {
            let Some(layer) = self
                .layers
                .get_mut(usize::from(index))
                .and_then(Option::as_mut)
            else {
                continue;
            };
            let client = ClientId(index);
            let last = &mut self.last_payload[usize::from(index)];
            for k in 0..MAX_PACKETS_PER_UPDATE {
                let due = match k {
                    0 => first_packet_due(layer, now, *last),
                    _ => layer.more_to_send(),
                };
                if !due || !self.server.ready_to_send(now, client) {
                    break;
                }
                *last = now;
                if let Some(estimates) = self.server.endpoint_estimates(client) {
                    layer.set_rtt_secs(estimates.ack_time());
                }
                let mut size = 0;
                let sent = self.server.send_with(now, client, |sequence, buf| {
                    layer.write_packet(now, sequence, buf);
                    size = buf.len();
                });
                // A payload within the layer's max_packet_bits always fits the endpoint
                // (checked at construction); a refusal is a lost packet.
                if sent.is_ok() {
                    self.counters.payloads_sent += 1;
                    self.counters.largest_payload = self.counters.largest_payload.max(size);
                }
            }
        }
        self.close_flushed(now);
        self.server.update(now);
        self.drop_log.flush(now, "server");
        self.drain_core_events();
    }

    /// Disconnects the closing clients whose queues are flushed or whose time is up.
    fn close_flushed(&mut self, now: Time) {
        // Only connected clients can be closing: a tick visits them, not the slots.
        for &client in &self.connected {
            let index = usize::from(client);
            let Some(deadline) = self.closing.get(index).copied().flatten() else {
                continue;
            };
            let flushed = self
                .layers
                .get(index)
                .and_then(Option::as_ref)
                .is_none_or(MessageLayer::is_flushed);
            if flushed || now >= deadline {
                self.closing[index] = None;
                self.counters.count_close(flushed);
                self.server.disconnect(now, ClientId(client));
            }
        }
    }

    /// Applies the connection's events to the layers and keeps them for
    /// [`poll_event`](Self::poll_event).
    fn drain_core_events(&mut self) {
        while let Some(event) = self.server.poll_event() {
            match &event {
                ServerEvent::Connected { client, .. } => {
                    if let Some(last) = self.last_payload.get_mut(usize::from(client.0)) {
                        *last = Time::NEVER;
                    }
                    if let Some(slot) = self.layers.get_mut(usize::from(client.0)) {
                        // The configuration was validated at construction.
                        *slot = MessageLayer::new(self.layer_config.clone()).ok();
                        if !self.connected.contains(&client.0) {
                            self.connected.push(client.0);
                        }
                    }
                }
                ServerEvent::Disconnected { client, .. } => {
                    if let Some(slot) = self.layers.get_mut(usize::from(client.0)) {
                        *slot = None;
                    }
                    if let Some(closing) = self.closing.get_mut(usize::from(client.0)) {
                        *closing = None;
                    }
                    if let Some(i) = self.connected.iter().position(|&c| c == client.0) {
                        self.connected.swap_remove(i);
                    }
                }
            }
            self.events.push_back(event);
        }
    }

    /// Writes the next datagram to send into `buf` (at least
    /// [`MAX_DATAGRAM_BYTES`](crate::connection::MAX_DATAGRAM_BYTES)) and returns its
    /// destination and length.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        self.server.poll_transmit(buf)
    }

    /// The next connection or disconnection.
    pub fn poll_event(&mut self) -> Option<ServerEvent<A>> {
        self.events.pop_front()
    }

    /// Queues `message` to `client` on `channel`; it goes out with the next packets.
    pub fn send(
        &mut self,
        client: ClientId,
        channel: ChannelId,
        message: M,
    ) -> Result<(), SendError> {
        if self.is_closing(client) {
            return Err(SendError::Closing);
        }
        let layer = self.layer_mut(client).ok_or(SendError::NotConnected)?;
        Ok(layer.send(channel, message)?)
    }

    /// Queues `message` on `channel` for every connected client (but those closing),
    /// encoded once: the bits are copied into each client's packets
    /// ([`Encoded`](crate::channel::Encoded), [`MessageLayer::send_encoded`]). A
    /// message whose bits depend on where it starts (strings, byte sequences) cannot
    /// be copied: it is cloned and queued for each client, as `send` would. Returns
    /// the clients it was queued for; a client whose queue refuses it (full:
    /// back-pressure) is skipped, and `on_refused` is told. Fails before queueing
    /// anything when a value is out of its declared range.
    pub fn broadcast(
        &mut self,
        channel: ChannelId,
        message: &M,
        mut on_refused: impl FnMut(ClientId, SendError),
    ) -> Result<usize, SendError>
    where
        M: Clone,
    {
        let encoded = crate::channel::Encoded::new(message)
            .map_err(|e| SendError::Channel(crate::channel::ChannelSendError::Invalid(e)))?;
        let mut queued = 0;
        for &index in &self.connected {
            let client = ClientId(index);
            let closing = self.is_closing(client);
            let Some(layer) = self
                .layers
                .get_mut(usize::from(index))
                .and_then(Option::as_mut)
            else {
                continue;
            };
            if closing {
                on_refused(client, SendError::Closing);
                continue;
            }
            let sent = match &encoded {
                Some(encoded) => layer.send_encoded(channel, encoded),
                None => layer.send(channel, message.clone()),
            };
            match sent {
                Ok(()) => queued += 1,
                Err(e) => on_refused(client, SendError::Channel(e)),
            }
        }
        Ok(queued)
    }

    /// `true` while a [`disconnect_after_flush`](Self::disconnect_after_flush) of
    /// `client` waits for its queues.
    pub fn is_closing(&self, client: ClientId) -> bool {
        self.closing
            .get(usize::from(client.0))
            .is_some_and(Option::is_some)
    }

    /// The next message delivered from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: ChannelId) -> Option<M> {
        self.layer_mut(client)?.receive(channel)
    }

    /// Disconnects `client` (the disconnect packets are queued at once); `false` if
    /// it was not connected.
    pub fn disconnect(&mut self, now: Time, client: ClientId) -> bool {
        let done = self.server.disconnect(now, client);
        self.drain_core_events();
        done
    }

    /// A graceful disconnect: `client` keeps getting packets until everything queued
    /// for it is through (every reliable message acked:
    /// [`MessageLayer::is_flushed`]), or for `timeout` at most, and is then
    /// disconnected as by [`disconnect`](Self::disconnect) (checked at each
    /// [`update`](Self::update)). Meanwhile `send` refuses new messages for it
    /// ([`SendError::Closing`]) and its messages are still received. The
    /// [`StackCounters`] count how such disconnects ended. `false` if it was not
    /// connected.
    pub fn disconnect_after_flush(
        &mut self,
        now: Time,
        client: ClientId,
        timeout: Duration,
    ) -> bool {
        let connected = self.layer(client).is_some();
        if let (true, Some(closing)) = (connected, self.closing.get_mut(usize::from(client.0))) {
            let deadline = now + timeout;
            *closing = Some(closing.map_or(deadline, |d| d.min(deadline)));
        }
        connected
    }

    /// Disconnects every client.
    pub fn disconnect_all(&mut self, now: Time) {
        self.server.disconnect_all(now);
        self.drain_core_events();
    }
}

/// Hands a payload to `layer` (`channel::deliver`, shared with `MessageStack`):
/// returns the layer's verdict.
fn deliver<M: MessageSet>(
    layer: &mut MessageLayer<M>,
    delivery: Delivery<'_>,
) -> Result<(), PayloadError> {
    crate::channel::deliver(layer, delivery.into_packet()).0
}

/// A payload the layer refused: a malformed one is a protocol error (the connection
/// ends), one it has no room for now a drop.
fn refused<'a>(
    side: &'static str,
    client: Option<ClientId>,
    from: &'a dyn Debug,
    error: &'a PayloadError,
) -> Refusal<'a> {
    Refusal {
        side,
        client: client.map_or(0, |c| c.0),
        addr: from,
        reason: "payload_refused",
        error,
        protocol_error: error.is_malformed(),
    }
}

/// Refuses a protocol id that is not `M`'s and `layer`'s.
fn check_protocol_id<M: MessageSet>(
    configured: u64,
    layer: &LayerConfig,
) -> Result<(), TransportError> {
    let expected = crate::protocol_id::<M>(layer);
    if configured == expected {
        Ok(())
    } else {
        Err(TransportError::ProtocolId {
            configured,
            expected,
        })
    }
}

/// A game client without a clock or a socket: the connection [`Client`] and its
/// [`MessageLayer`], glued like a [`ServerStack`]'s (the payload read before the
/// packet is taken, acks to the layer, a malformed payload disconnects, the payload
/// before the connection's update). [`UdpClient`](super::UdpClient) is this over a
/// socket.
#[derive(Debug)]
pub struct ClientStack<A, M> {
    client: Client<A>,
    layer: MessageLayer<M>,
    /// The deadline of a disconnect after flush.
    closing: Option<Time>,
    /// When the last payload packet went out.
    last_payload: Time,
    events: VecDeque<ClientEvent>,
    counters: StackCounters,
    drop_log: DropLog,
}

impl<A: Copy + Eq + Debug, M: MessageSet> ClientStack<A, M> {
    /// A client connecting to `server` (an address the token names, in the driver's
    /// address type) with `config`, the backend's `token` and `layer`, at time `now`.
    /// Fails when either configuration is invalid, the layer does not fit the
    /// endpoint, the protocol id is not [`protocol_id`](crate::protocol_id) of `M`
    /// and `layer`, or the token was made for another.
    pub fn new(
        config: ConnectionConfig,
        token: &ConnectToken,
        server: A,
        layer: LayerConfig,
        now: Time,
    ) -> Result<Self, TransportError> {
        check_protocol_id::<M>(config.protocol_id, &layer)?;
        let layer = MessageLayer::new(layer)?;
        crate::channel::check_pair(&config.endpoint, layer.config())?;
        let client = Client::new(config, token, server, now)?;
        Ok(Self {
            client,
            layer,
            closing: None,
            last_payload: Time::NEVER,
            events: VecDeque::new(),
            counters: StackCounters::default(),
            drop_log: DropLog::new(now),
        })
    }

    /// The sans-IO connection client: state, statistics and congestion state.
    pub fn connection(&self) -> &Client<A> {
        &self.client
    }

    /// What the connection measured, link and messages, once connected.
    pub fn stats(&self) -> Option<ConnectionStats> {
        let link = self.client.stats()?;
        Some(ConnectionStats::new(link, self.layer.stats()))
    }

    /// The message layer (queues and counters).
    pub fn layer(&self) -> &MessageLayer<M> {
        &self.layer
    }

    /// What the stack counted.
    pub fn counters(&self) -> &StackCounters {
        &self.counters
    }

    /// Handles one datagram from `from`: a payload is read by the layer, then
    /// accepted or refused; a malformed one disconnects.
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) {
        let mut broken = false;
        let client = self.client.client_id();
        if let Some(delivery) = self.client.handle_datagram(now, from, datagram)
            && let Err(error) = deliver(&mut self.layer, delivery)
        {
            self.counters.payloads_refused += 1;
            let refusal = refused("client", client, &from, &error);
            self.drop_log.refused(now, refusal);
            broken = error.is_malformed();
        }
        if broken {
            self.client.disconnect_for_protocol_error();
        }
        self.drain_core_events();
    }

    /// One tick at `now`: sends the next payload packet when connected and the
    /// congestion mode allows one, then runs the connection's update (handshake,
    /// timeouts, statistics, congestion, a keep-alive when nothing was sent).
    pub fn update(&mut self, now: Time) {
        for k in 0..MAX_PACKETS_PER_UPDATE {
            let due = match k {
                0 => first_packet_due(&self.layer, now, self.last_payload),
                _ => self.layer.more_to_send(),
            };
            if !due || !self.client.ready_to_send(now) {
                break;
            }
            self.last_payload = now;
            if let Some(estimates) = self.client.endpoint_estimates() {
                self.layer.set_rtt_secs(estimates.ack_time());
            }
            let layer = &mut self.layer;
            let mut size = 0;
            let sent = self.client.send_with(now, |sequence, buf| {
                layer.write_packet(now, sequence, buf);
                size = buf.len();
            });
            // A refusal (a payload larger than the endpoint takes) is a lost packet.
            if sent.is_ok() {
                self.counters.payloads_sent += 1;
                self.counters.largest_payload = self.counters.largest_payload.max(size);
            }
        }
        if let Some(deadline) = self.closing {
            use crate::connection::ClientState;
            let flushed = self.layer.is_flushed();
            if matches!(
                self.client.state(),
                ClientState::Denied(_) | ClientState::Disconnected(_)
            ) {
                self.closing = None;
            } else if flushed || now >= deadline {
                self.closing = None;
                self.counters.count_close(flushed);
                self.client.disconnect(now);
            }
        }
        self.client.update(now);
        self.drop_log.flush(now, "client");
        self.drain_core_events();
    }

    fn drain_core_events(&mut self) {
        while let Some(event) = self.client.poll_event() {
            self.events.push_back(event);
        }
    }

    /// Writes the next datagram to send into `buf` (at least
    /// [`MAX_DATAGRAM_BYTES`](crate::connection::MAX_DATAGRAM_BYTES)) and returns its
    /// destination and length.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        self.client.poll_transmit(buf)
    }

    /// The next connection, disconnection or denial.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// Queues `message` on `channel`; it goes out with the next packets (once
    /// connected, when still in the handshake). Fails with
    /// [`SendError::NotConnected`] after a denial or a disconnection.
    pub fn send(&mut self, channel: ChannelId, message: M) -> Result<(), SendError> {
        use crate::connection::ClientState;
        if matches!(
            self.client.state(),
            ClientState::Denied(_) | ClientState::Disconnected(_)
        ) {
            return Err(SendError::NotConnected);
        }
        if self.closing.is_some() {
            return Err(SendError::Closing);
        }
        Ok(self.layer.send(channel, message)?)
    }

    /// The next message delivered on `channel`.
    pub fn receive(&mut self, channel: ChannelId) -> Option<M> {
        self.layer.receive(channel)
    }

    /// A graceful disconnect: packets go on until everything queued is through
    /// (every reliable message acked: [`MessageLayer::is_flushed`]), or for `timeout`
    /// at most, then the client disconnects as by
    /// [`disconnect`](Self::disconnect) (checked at each [`update`](Self::update)).
    /// Meanwhile `send` refuses new messages ([`SendError::Closing`]). Before the
    /// connection is up, the timeout still bounds the wait.
    pub fn disconnect_after_flush(&mut self, now: Time, timeout: Duration) {
        let deadline = now + timeout;
        self.closing = Some(self.closing.map_or(deadline, |d| d.min(deadline)));
    }

    /// `true` while a [`disconnect_after_flush`](Self::disconnect_after_flush) waits.
    pub fn is_closing(&self) -> bool {
        self.closing.is_some()
    }

    /// Disconnects (the disconnect packets are queued at once).
    pub fn disconnect(&mut self, now: Time) {
        self.client.disconnect(now);
        self.drain_core_events();
    }
}
