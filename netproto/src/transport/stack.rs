//! The sans-IO glue of a connection and its message layer: what every driver (the
//! UDP transport, a simulator harness, a custom transport) runs, written once.

use crate::Time;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::peer::{Peer, Refused};
use super::{ConnectionStats, SendError, StackStats, TransportError};
use crate::MessageSet;
use crate::channel::{Channel, ChannelId, LayerConfig, MessageLayer, Receipt, Scratch};
use crate::connection::{
    Client, ClientEvent, ClientId, ClientState, ConnectionConfig, Server, ServerConfig, ServerEvent,
};
use crate::netcode::ConnectToken;

/// Connections prefetched together: a receive batch's, or a tick's visit in chunks.
const PREFETCH_CHUNK: usize = 32;

/// A game server without a clock or a socket: the connection [`Server`], whose slot
/// table holds, in each connected client's slot, that client's peer (its
/// [`MessageLayer`]): a client is one entry of one table. A peer's two steps
/// (receive a payload, send the packets due) are the glue, written once for the
/// server and the [`ClientStack`]:
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
///   queued since the last packet), or [`IDLE_PACKET_RATE`](super::IDLE_PACKET_RATE)
///   times a second without (it still carries acks and resends), with the layer's
///   RTT taken from the connection, and more (up to
///   [`MAX_PACKETS_PER_UPDATE`](super::MAX_PACKETS_PER_UPDATE)) while the layer has
///   more to send and the rate allows; *then* the connection's own update runs, so a
///   keep-alive goes only to clients nothing was sent to.
///
/// The driver hands it every datagram ([`handle_datagram`](Self::handle_datagram)),
/// calls [`update`](Self::update) once per tick with the time, and sends what
/// [`poll_transmit`](Self::poll_transmit) gives. [`UdpServer`](super::UdpServer) is
/// this over a socket.
#[derive(Debug)]
pub struct ServerStack<A, M> {
    /// The connections, each slot with its client's peer (`None` only between the
    /// handshake's completion and [`drain_core_events`](Self::drain_core_events)).
    server: Server<A, Option<Peer<M>>>,
    /// The slots that hold a client, in the order they connected: a tick visits the
    /// clients, not the slots.
    connected: Vec<u16>,
    /// Shared by every client's layer.
    layer_config: Arc<LayerConfig>,
    events: VecDeque<ServerEvent<A>>,
    counters: StackStats,
    /// The encodings of past broadcasts, reused once every queue let go of them.
    broadcasts: crate::channel::EncodedPool,
    /// Lent to every client's layer for each packet: warm from one client to the next
    /// (`channel/scratch.rs`).
    scratch: Scratch<M>,
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
        let server = Server::with_upper(config, now, unix_time)?;
        Ok(Self {
            connected: Vec::with_capacity(server.max_clients()),
            server,
            layer_config: Arc::new(layer),
            events: VecDeque::new(),
            counters: StackStats::default(),
            scratch: Scratch::default(),
            broadcasts: crate::channel::EncodedPool::default(),
        })
    }

    /// The sans-IO connection server: statistics, congestion state and counters of
    /// every client. Its slots also hold each client's message layer (the opaque
    /// `U` of [`Server`]), reached through this stack.
    pub fn connection(&self) -> &Server<A, impl Sized> {
        &self.server
    }

    /// What the stack counted.
    pub fn stack_stats(&self) -> &StackStats {
        &self.counters
    }

    /// The server's one drop log (its connection server's), for the driver's own
    /// drops.
    pub(crate) fn drop_log(&mut self) -> &mut crate::trace::DropLog {
        self.server.drop_log()
    }

    /// What the connection to `client` measured, link and messages, while connected.
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        let link = self.server.stats(client)?;
        Some(self.peer(client)?.stats(link))
    }

    /// Asks the CPU for the connection state that the datagrams from `senders` (a
    /// batch just received, not yet handled) will read, so that the fetches of all
    /// their connections overlap instead of each [`handle_datagram`](Self::handle_datagram)
    /// waiting on its own in turn. A hint: it changes nothing, and a sender that is
    /// not a connected client is skipped.
    ///
    /// Why: between ticks a server's state leaves the caches (on a shared machine,
    /// whatever runs meanwhile evicts it), and the per-connection work of a datagram
    /// is mostly waits on that state. The prefetch runs in three passes over the
    /// batch, each asking for what the previous brought the address of: the
    /// connection's fields, then its windows' and channels' positions, then the slots
    /// at those positions. [`UdpServer`](super::UdpServer) calls it for each batch its
    /// socket returns; on targets other than x86-64 it does nothing.
    pub fn prefetch(&self, senders: &[A]) {
        let mut clients = [ClientId(0); PREFETCH_CHUNK];
        for chunk in senders.chunks(PREFETCH_CHUNK) {
            let mut found = 0;
            for client in chunk.iter().filter_map(|a| self.server.client_id(a)) {
                clients[found] = client;
                found += 1;
            }
            self.prefetch_clients(&clients[..found]);
        }
    }

    /// The three passes of [`prefetch`](Self::prefetch) over `clients` (at most
    /// [`PREFETCH_CHUNK`]): their fields, then the positions those hold, then the
    /// slots at those positions. The first two visit each client's slot once, for
    /// its session and the peer it holds.
    fn prefetch_clients(&self, clients: &[ClientId]) {
        for &client in clients {
            if let Some(Some(peer)) = self.server.prefetch_client(client) {
                crate::prefetch::prefetch(peer);
                peer.layer().prefetch_fields();
            }
        }
        for &client in clients {
            if let Some(Some(peer)) = self.server.prefetch_client_windows(client) {
                peer.layer().prefetch_channels();
            }
        }
        for &client in clients {
            if let Some(peer) = self.peer(client) {
                peer.layer().prefetch_queues();
            }
        }
    }

    /// The peer of a connected client, in its slot.
    fn peer(&self, client: ClientId) -> Option<&Peer<M>> {
        self.server.upper(client)?.as_ref()
    }

    /// The peer of a connected client, to change.
    fn peer_mut(&mut self, client: ClientId) -> Option<&mut Peer<M>> {
        self.server.upper_mut(client)?.as_mut()
    }

    /// The message layer of a connected client (queues and counters).
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.peer(client).map(Peer::layer)
    }

    /// The message layer of a connected client, to send and receive directly.
    pub fn layer_mut(&mut self, client: ClientId) -> Option<&mut MessageLayer<M>> {
        self.peer_mut(client).map(Peer::layer_mut)
    }

    /// Every connected client's layer.
    pub fn layers(&self) -> impl Iterator<Item = (ClientId, &MessageLayer<M>)> + '_ {
        self.server
            .uppers()
            .filter_map(|(client, p)| Some((client, p.as_ref()?.layer())))
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
    ///
    /// A server that receives datagrams in batches calls [`prefetch`](Self::prefetch)
    /// with the batch's senders first.
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) {
        let refused = match self.server.handle_datagram_upper(now, from, datagram) {
            None => None,
            Some((delivery, upper)) => {
                let client = delivery.client();
                match upper {
                    Some(peer) => peer
                        .deliver(delivery, &mut self.scratch, &mut self.counters)
                        .map(|error| (client, error)),
                    None => {
                        delivery.refuse();
                        self.counters.payloads_dropped_by_layer += 1;
                        None
                    }
                }
            }
        };
        let mut broken = None;
        if let Some((client, error)) = refused {
            let source = Refused {
                side: "server",
                client: Some(client),
                addr: &from,
            };
            source.log(self.server.drop_log(), now, &error);
            broken = error.is_malformed().then_some(client);
        }
        if let Some(client) = broken {
            self.server.disconnect_for_protocol_error(client);
        }
        self.drain_core_events();
    }

    /// One tick at `now`: sends each client its next payload packet when its
    /// congestion mode allows one (written by its layer, with the layer's RTT taken
    /// from the connection), then runs the connection's update (timeouts, statistics,
    /// congestion, keep-alives to clients nothing was sent to). The clients are
    /// visited 32 at a time, each group's state prefetched first (as
    /// [`prefetch`](Self::prefetch) does for a receive batch).
    pub fn update(&mut self, now: Time) {
        for start in (0..self.connected.len()).step_by(PREFETCH_CHUNK) {
            let chunk = &self.connected[start..self.connected.len().min(start + PREFETCH_CHUNK)];
            let mut clients = [ClientId(0); PREFETCH_CHUNK];
            for (client, &index) in clients.iter_mut().zip(chunk) {
                *client = ClientId(index);
            }
            let clients = &clients[..chunk.len()];
            self.prefetch_clients(clients);
            for &client in clients {
                self.transmit(now, client, false);
            }
        }
        // Then the disconnects after flush that are due (only connected clients can
        // be closing).
        for &index in &self.connected {
            let peer = self
                .server
                .upper_mut(ClientId(index))
                .and_then(Option::as_mut);
            if peer.is_some_and(|p| p.close_due(now, &mut self.counters)) {
                self.server.disconnect(now, ClientId(index));
            }
        }
        self.server.update(now);
        self.drain_core_events();
    }

    /// Sends at `now` what was queued since the last packets: every client whose
    /// layer has news (a message queued since its last packet) gets its packets, as
    /// far as its congestion mode allows, as [`update`](Self::update) would send
    /// them. Nothing else of a tick runs: no idle packets, keep-alives, timeouts or
    /// statistics. For a driver whose game queues messages after the tick's update
    /// and wants them out before the next one (the Bevy plugin, at the end of each
    /// frame).
    pub fn flush(&mut self, now: Time) {
        for i in 0..self.connected.len() {
            self.transmit(now, ClientId(self.connected[i]), true);
        }
    }

    /// The send step of `client` at `now` ([`Peer::transmit`]), through its slot
    /// split once: the peer, and the sender over the slot's own session.
    fn transmit(&mut self, now: Time, client: ClientId, news_only: bool) {
        let Some((Some(peer), mut sender)) = self.server.split(client) else {
            return;
        };
        peer.transmit(
            now,
            &mut sender,
            &mut self.scratch,
            &mut self.counters,
            news_only,
        );
    }

    /// Applies the connection's events to the layers and keeps them for
    /// [`poll_event`](Self::poll_event).
    fn drain_core_events(&mut self) {
        while let Some(event) = self.server.poll_event() {
            match &event {
                ServerEvent::Connected { client, .. } => {
                    if let Some(upper) = self.server.upper_mut(*client) {
                        // The configuration was validated at construction.
                        *upper = MessageLayer::with_shared_config(Arc::clone(&self.layer_config))
                            .ok()
                            .map(Peer::new);
                    }
                    if usize::from(client.0) < self.server.max_clients()
                        && !self.connected.contains(&client.0)
                    {
                        self.connected.push(client.0);
                    }
                }
                ServerEvent::Disconnected { client, .. } => {
                    // The peer went with its slot.
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
        self.peer_mut(client)
            .ok_or(SendError::NotConnected)?
            .send(channel, message)
    }

    /// Queues `message` to `client` on the unreliable `channel` and tracks it:
    /// [`poll_receipt`](Self::poll_receipt) returns its receipt once the client acked
    /// a packet that carried it ([`MessageLayer::send_tracked`]; what
    /// [`SnapshotSender::sent_with`](crate::delta::SnapshotSender::sent_with) takes).
    pub fn send_tracked(
        &mut self,
        client: ClientId,
        channel: ChannelId,
        message: M,
    ) -> Result<Receipt, SendError> {
        self.peer_mut(client)
            .ok_or(SendError::NotConnected)?
            .send_tracked(channel, message)
    }

    /// The oldest receipt of a message tracked to `client` on `channel` that reached
    /// it and was not taken yet ([`MessageLayer::poll_receipt`]).
    pub fn poll_receipt(&mut self, client: ClientId, channel: ChannelId) -> Option<Receipt> {
        self.layer_mut(client)?.poll_receipt(channel)
    }

    /// Queues `message` to `client` on `channel`, a channel declared for its type
    /// alone ([`LayerConfig::add_typed`](crate::channel::LayerConfig::add_typed)):
    /// another type does not compile. Otherwise as [`send`](Self::send).
    pub fn send_on<T: Into<M>>(
        &mut self,
        client: ClientId,
        channel: Channel<T>,
        message: T,
    ) -> Result<(), SendError> {
        self.send(client, channel.id(), message.into())
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
        let encoded = self
            .broadcasts
            .encode(message)
            .map_err(|e| SendError::Channel(crate::channel::ChannelSendError::Invalid(e)))?;
        let mut queued = 0;
        for &index in &self.connected {
            let client = ClientId(index);
            let Some(peer) = self.server.upper_mut(client).and_then(Option::as_mut) else {
                continue;
            };
            if peer.is_closing() {
                on_refused(client, SendError::Closing);
                continue;
            }
            let layer = peer.layer_mut();
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
        self.peer(client).is_some_and(Peer::is_closing)
    }

    /// The next message delivered from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: ChannelId) -> Option<M> {
        self.peer_mut(client)?.receive(channel)
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
    /// [`StackStats`] count how such disconnects ended. `false` if it was not
    /// connected.
    pub fn disconnect_after_flush(
        &mut self,
        now: Time,
        client: ClientId,
        timeout: Duration,
    ) -> bool {
        let Some(peer) = self.peer_mut(client) else {
            return false;
        };
        peer.close_after_flush(now, timeout);
        true
    }

    /// Disconnects every client.
    pub fn disconnect_all(&mut self, now: Time) {
        self.server.disconnect_all(now);
        self.drain_core_events();
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
/// peer (the [`MessageLayer`]), glued like a [`ServerStack`]'s (the payload read before the
/// packet is taken, acks to the layer, a malformed payload disconnects, the payload
/// before the connection's update). [`UdpClient`](super::UdpClient) is this over a
/// socket.
#[derive(Debug)]
pub struct ClientStack<A, M> {
    client: Client<A>,
    peer: Peer<M>,
    events: VecDeque<ClientEvent>,
    counters: StackStats,
    /// Lent to the layer for each packet, as the server's stack does.
    scratch: Scratch<M>,
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
        Self::with_client(config, layer, |config| {
            Client::new(config, token, server, now)
        })
    }

    /// A client trying every server `token` names in turn, as
    /// [`Client::from_token`] does (`address` turns the token's addresses into the
    /// driver's address type), with `config`, `layer`, at time `now`. Fails as
    /// [`new`](Self::new) does, and when the token lists no server or more than 32.
    pub fn from_token(
        config: ConnectionConfig,
        token: &ConnectToken,
        layer: LayerConfig,
        now: Time,
        address: impl FnMut(std::net::SocketAddr) -> A,
    ) -> Result<Self, TransportError> {
        Self::with_client(config, layer, |config| {
            Client::from_token(config, token, now, address)
        })
    }

    fn with_client(
        config: ConnectionConfig,
        layer: LayerConfig,
        client: impl FnOnce(
            ConnectionConfig,
        ) -> Result<Client<A>, crate::connection::ConnectionConfigError>,
    ) -> Result<Self, TransportError> {
        check_protocol_id::<M>(config.protocol_id, &layer)?;
        let layer = MessageLayer::new(layer)?;
        crate::channel::check_pair(&config.endpoint, layer.config())?;
        let client = client(config)?;
        Ok(Self {
            client,
            peer: Peer::new(layer),
            events: VecDeque::new(),
            counters: StackStats::default(),
            scratch: Scratch::default(),
        })
    }

    /// The sans-IO connection client: state, statistics and congestion state.
    pub fn connection(&self) -> &Client<A> {
        &self.client
    }

    /// What the connection measured, link and messages, once connected.
    pub fn stats(&self) -> Option<ConnectionStats> {
        let link = self.client.stats()?;
        Some(self.peer.stats(link))
    }

    /// The message layer (queues and counters).
    pub fn layer(&self) -> &MessageLayer<M> {
        self.peer.layer()
    }

    /// The client's one drop log (its connection's), for the driver's own drops.
    pub(crate) fn drop_log(&mut self) -> &mut crate::trace::DropLog {
        self.client.drop_log()
    }

    /// What the stack counted.
    pub fn stack_stats(&self) -> &StackStats {
        &self.counters
    }

    /// Handles one datagram from `from`: a payload is read by the layer, then
    /// accepted or refused; a malformed one disconnects.
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) {
        let client = self.client.client_id();
        let refused = self
            .client
            .handle_datagram(now, from, datagram)
            .and_then(|delivery| {
                self.peer
                    .deliver(delivery, &mut self.scratch, &mut self.counters)
            });
        let mut broken = false;
        if let Some(error) = refused {
            let source = Refused {
                side: "client",
                client,
                addr: &from,
            };
            source.log(self.client.drop_log(), now, &error);
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
        let (client, scratch) = (&mut self.client, &mut self.scratch);
        self.peer
            .transmit(now, client, scratch, &mut self.counters, false);
        if self.is_over() {
            self.peer.cancel_close();
        } else if self.peer.close_due(now, &mut self.counters) {
            self.client.disconnect(now);
        }
        self.client.update(now);
        self.drain_core_events();
    }

    /// Sends at `now` what was queued since the last packet, when connected and the
    /// congestion mode allows: as [`ServerStack::flush`], nothing else of a tick.
    pub fn flush(&mut self, now: Time) {
        let (client, scratch) = (&mut self.client, &mut self.scratch);
        self.peer
            .transmit(now, client, scratch, &mut self.counters, true);
    }

    /// `true` once the connection was denied or ended.
    fn is_over(&self) -> bool {
        matches!(
            self.client.state(),
            ClientState::Denied(_) | ClientState::Disconnected(_)
        )
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
        if self.is_over() {
            return Err(SendError::NotConnected);
        }
        self.peer.send(channel, message)
    }

    /// Queues `message` on the unreliable `channel` and tracks it:
    /// [`poll_receipt`](Self::poll_receipt) returns its receipt once the server acked
    /// a packet that carried it ([`MessageLayer::send_tracked`]).
    pub fn send_tracked(&mut self, channel: ChannelId, message: M) -> Result<Receipt, SendError> {
        if self.is_over() {
            return Err(SendError::NotConnected);
        }
        self.peer.send_tracked(channel, message)
    }

    /// The oldest receipt of a message tracked on `channel` that reached the server
    /// and was not taken yet ([`MessageLayer::poll_receipt`]).
    pub fn poll_receipt(&mut self, channel: ChannelId) -> Option<Receipt> {
        self.peer.layer_mut().poll_receipt(channel)
    }

    /// Queues `message` on `channel`, a channel declared for its type alone
    /// ([`LayerConfig::add_typed`](crate::channel::LayerConfig::add_typed)): another
    /// type does not compile. Otherwise as [`send`](Self::send).
    pub fn send_on<T: Into<M>>(
        &mut self,
        channel: Channel<T>,
        message: T,
    ) -> Result<(), SendError> {
        self.send(channel.id(), message.into())
    }

    /// The next message delivered on `channel`.
    pub fn receive(&mut self, channel: ChannelId) -> Option<M> {
        self.peer.receive(channel)
    }

    /// A graceful disconnect: packets go on until everything queued is through
    /// (every reliable message acked: [`MessageLayer::is_flushed`]), or for `timeout`
    /// at most, then the client disconnects as by
    /// [`disconnect`](Self::disconnect) (checked at each [`update`](Self::update)).
    /// Meanwhile `send` refuses new messages ([`SendError::Closing`]). Before the
    /// connection is up, the timeout still bounds the wait.
    pub fn disconnect_after_flush(&mut self, now: Time, timeout: Duration) {
        self.peer.close_after_flush(now, timeout);
    }

    /// `true` while a [`disconnect_after_flush`](Self::disconnect_after_flush) waits.
    pub fn is_closing(&self) -> bool {
        self.peer.is_closing()
    }

    /// Disconnects (the disconnect packets are queued at once).
    pub fn disconnect(&mut self, now: Time) {
        self.client.disconnect(now);
        self.drain_core_events();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    /// Issue 44's one table: a server stack's client is one slot holding its
    /// session and its peer, no larger than the slot and the peer's entry of the
    /// separate peer table it replaced (`--nocapture` prints the sizes; a layer's
    /// size does not depend on its message type, which its queues hold on the heap).
    #[test]
    fn a_client_is_one_slot() {
        use core::mem::size_of;
        let bare = Server::<SocketAddr>::SLOT_BYTES;
        let peer = size_of::<Option<Peer<u8>>>();
        let one = Server::<SocketAddr, Option<Peer<u8>>>::SLOT_BYTES;
        println!(
            "size_of: Option<Slot<SocketAddr, ()>> {bare}, Option<Peer<M>> {peer}, \
             Option<Slot<SocketAddr, Option<Peer<M>>>> {one}"
        );
        assert!(one <= bare + peer, "{one} > {bare} + {peer}");
        assert_eq!(size_of::<Peer<u8>>(), size_of::<Peer<[u64; 64]>>());
    }
}
