//! The full sans-IO stack on the network simulator: a connection [`Server`] or
//! [`Client`] with one [`MessageLayer`] per connection, glued exactly the way the UDP
//! transport (`netproto/src/transport/{server,client}.rs`) glues them:
//!
//! * a payload is read by the layer before the packet is taken (a payload the layer
//!   refuses drops the whole packet, unacked, so the peer resends it);
//! * `PacketAcked` events go to [`MessageLayer::on_packet_acked`];
//! * a connection whose layer saw a protocol error is disconnected;
//! * each connection gets one payload packet per update when its congestion mode
//!   allows one ([`ready_to_send`](Server::ready_to_send)), with the layer's RTT taken
//!   from the connection's statistics.
//!
//! Datagrams go to a [`Network`] instead of a socket; [`WireCounters`] record what
//! went out, so that tests can check packet budgets.

use std::collections::VecDeque;

use netproto::MessageSet;
use netproto::channel::{LayerConfig, MessageLayer, SendError};
use netproto::connection::{
    Client, ClientEvent, ClientId, ConnectionConfig, Packet, Server, ServerConfig, ServerEvent,
    Transmit,
};
use netproto::packet::FRAGMENT_PREFIX;
use netproto::sim::{Network, NodeId};

/// What a node put on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireCounters {
    /// Datagrams handed to the network.
    pub datagrams_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// The largest datagram.
    pub max_datagram: usize,
    /// The largest layer payload written.
    pub max_payload: usize,
    /// Payload datagrams sent as packet-endpoint fragments.
    pub fragments_sent: u64,
    /// Payloads the layer refused on receipt (the packet was dropped unacked).
    pub payloads_refused: u64,
}

impl WireCounters {
    /// Counts one outgoing datagram.
    fn record(&mut self, datagram: &[u8]) {
        self.datagrams_sent += 1;
        self.bytes_sent += datagram.len() as u64;
        self.max_datagram = self.max_datagram.max(datagram.len());
        if let Ok(Packet::Payload {
            datagram: inner, ..
        }) = Packet::decode(datagram)
            && inner.first().is_some_and(|b| b & 1 == FRAGMENT_PREFIX)
        {
            self.fragments_sent += 1;
        }
    }

    /// Counts one payload written by the layer.
    fn record_payload(&mut self, payload: usize) {
        self.max_payload = self.max_payload.max(payload);
    }
}

/// Hands every queued datagram to the network, counting it.
fn flush<A>(
    now: f64,
    from: NodeId,
    net: &mut Network,
    wire: &mut WireCounters,
    mut next: impl FnMut() -> Option<Transmit<A>>,
    to: impl Fn(&A) -> NodeId,
) {
    while let Some(t) = next() {
        wire.record(&t.payload);
        net.send(now, from, to(&t.to), &t.payload);
    }
}

/// A game server on the simulator: the connection [`Server`] and one
/// [`MessageLayer`] per client slot.
#[derive(Debug)]
pub struct SimServer<M: MessageSet> {
    node: NodeId,
    server: Server<NodeId>,
    layers: Vec<Option<MessageLayer<M>>>,
    layer_config: LayerConfig,
    events: VecDeque<ServerEvent<NodeId>>,
    payload: Vec<u8>,
    wire: WireCounters,
}

impl<M: MessageSet> SimServer<M> {
    /// A server at `node` with `config` and `layer` for every client. Panics on an
    /// invalid configuration (a test's own setup).
    pub fn new(node: NodeId, config: ServerConfig, layer: LayerConfig, now: f64) -> Self {
        if let Err(e) = MessageLayer::<M>::new(layer.clone()) {
            panic!("layer config: {e}");
        }
        let server = Server::new(config, now).unwrap_or_else(|e| panic!("server config: {e}"));
        let layers = (0..server.max_clients()).map(|_| None).collect();
        Self {
            node,
            server,
            layers,
            layer_config: layer,
            events: VecDeque::new(),
            payload: Vec::new(),
            wire: WireCounters::default(),
        }
    }

    /// The sans-IO connection server (statistics, congestion, counters).
    pub fn connection(&self) -> &Server<NodeId> {
        &self.server
    }

    /// The layer of a connected client.
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.layers
            .get(usize::from(client.0))
            .and_then(Option::as_ref)
    }

    /// Every connected client's layer.
    pub fn layers(&self) -> impl Iterator<Item = (ClientId, &MessageLayer<M>)> + '_ {
        self.layers
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((ClientId(i as u16), l.as_ref()?)))
    }

    /// What this node put on the wire.
    pub fn wire(&self) -> &WireCounters {
        &self.wire
    }

    /// Handles one datagram delivered to this node: the client's layer reads a
    /// payload before the connection takes the packet.
    pub fn handle_datagram(&mut self, now: f64, from: NodeId, datagram: &[u8]) {
        let layers = &mut self.layers;
        let wire = &mut self.wire;
        self.server
            .handle_datagram_with(now, from, datagram, |client, payload| {
                let taken = layers
                    .get_mut(usize::from(client.0))
                    .and_then(Option::as_mut)
                    .is_some_and(|layer| layer.read_packet(payload).is_ok());
                if !taken {
                    wire.payloads_refused += 1;
                }
                taken
            });
        self.drain_core_events();
    }

    /// One tick: timeouts and keep-alives, disconnection of clients that broke the
    /// message protocol, then each client's next payload packet when its congestion
    /// mode allows one; every datagram goes to `net`.
    pub fn update(&mut self, now: f64, net: &mut Network) {
        self.server.update(now);
        self.drain_core_events();
        for index in 0..self.layers.len() {
            let broken = self.layers[index]
                .as_ref()
                .is_some_and(|l| l.protocol_error().is_some());
            if broken {
                self.server.disconnect(now, ClientId(index as u16));
            }
        }
        self.drain_core_events();
        let (node, server) = (self.node, &mut self.server);
        flush(
            now,
            node,
            net,
            &mut self.wire,
            || server.poll_transmit(),
            |a| *a,
        );
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
            let _ = self.server.send(now, client, &self.payload);
            // The payload packet's datagrams (several if it was fragmented).
            let payload = self.payload.len();
            while let Some(t) = self.server.poll_transmit() {
                self.wire.record_payload(payload);
                self.wire.record(&t.payload);
                net.send(now, self.node, t.to, &t.payload);
            }
        }
    }

    fn drain_core_events(&mut self) {
        while let Some(event) = self.server.poll_event() {
            match event {
                ServerEvent::Connected { client, .. } => {
                    if let Some(slot) = self.layers.get_mut(usize::from(client.0)) {
                        *slot = MessageLayer::new(self.layer_config.clone()).ok();
                    }
                    self.events.push_back(event);
                }
                ServerEvent::Disconnected { client, .. } => {
                    if let Some(slot) = self.layers.get_mut(usize::from(client.0)) {
                        *slot = None;
                    }
                    self.events.push_back(event);
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

    /// The layer of a connected client, to send and receive messages.
    pub fn layer_mut(&mut self, client: ClientId) -> Option<&mut MessageLayer<M>> {
        self.layers
            .get_mut(usize::from(client.0))
            .and_then(Option::as_mut)
    }

    /// `true` when `client` is connected and `channel` has room for one more message.
    pub fn can_send(&self, client: ClientId, channel: usize) -> bool {
        self.layer(client).is_some_and(|l| l.can_send(channel))
    }

    /// The next message from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: usize) -> Option<M> {
        self.layers
            .get_mut(usize::from(client.0))
            .and_then(Option::as_mut)?
            .receive(channel)
    }

    /// The next connection or disconnection.
    pub fn poll_event(&mut self) -> Option<ServerEvent<NodeId>> {
        self.events.pop_front()
    }
}

/// A game client on the simulator: the connection [`Client`] and its
/// [`MessageLayer`].
#[derive(Debug)]
pub struct SimClient<M: MessageSet> {
    node: NodeId,
    client: Client<NodeId>,
    layer: MessageLayer<M>,
    events: VecDeque<ClientEvent>,
    payload: Vec<u8>,
    wire: WireCounters,
}

impl<M: MessageSet> SimClient<M> {
    /// A client at `node` connecting to `server` with `config`, `nonce` and `layer`.
    /// Panics on an invalid configuration (a test's own setup).
    pub fn new(
        node: NodeId,
        server: NodeId,
        config: ConnectionConfig,
        nonce: u64,
        layer: LayerConfig,
        now: f64,
    ) -> Self {
        let layer = MessageLayer::new(layer).unwrap_or_else(|e| panic!("layer config: {e}"));
        let client = Client::new(config, server, nonce, now)
            .unwrap_or_else(|e| panic!("connection config: {e}"));
        Self {
            node,
            client,
            layer,
            events: VecDeque::new(),
            payload: Vec::new(),
            wire: WireCounters::default(),
        }
    }

    /// The sans-IO connection client (state, statistics, congestion).
    pub fn connection(&self) -> &Client<NodeId> {
        &self.client
    }

    /// The message layer.
    pub fn layer(&self) -> &MessageLayer<M> {
        &self.layer
    }

    /// What this node put on the wire.
    pub fn wire(&self) -> &WireCounters {
        &self.wire
    }

    /// Handles one datagram delivered to this node: the layer reads a payload before
    /// the connection takes the packet.
    pub fn handle_datagram(&mut self, now: f64, from: NodeId, datagram: &[u8]) {
        let layer = &mut self.layer;
        let wire = &mut self.wire;
        self.client
            .handle_datagram_with(now, from, datagram, |payload| {
                let taken = layer.read_packet(payload).is_ok();
                if !taken {
                    wire.payloads_refused += 1;
                }
                taken
            });
        self.drain_core_events();
    }

    /// One tick: handshake, keep-alives and timeouts, disconnection on a protocol
    /// error, then the next payload packet when connected and the congestion mode
    /// allows one; every datagram goes to `net`.
    pub fn update(&mut self, now: f64, net: &mut Network) {
        self.client.update(now);
        self.drain_core_events();
        if self.client.is_connected() && self.layer.protocol_error().is_some() {
            self.client.disconnect(now);
            self.drain_core_events();
        }
        let (node, server) = (self.node, self.client.server());
        flush(
            now,
            node,
            net,
            &mut self.wire,
            || self.client.poll_transmit(),
            |a| *a,
        );
        if !(self.client.is_connected() && self.client.ready_to_send(now)) {
            return;
        }
        if let Some(sequence) = self.client.next_sequence() {
            if let Some(stats) = self.client.stats() {
                self.layer.set_rtt(stats.rtt_ms / 1000.0);
            }
            self.layer.write_packet(now, sequence, &mut self.payload);
            let _ = self.client.send(now, &self.payload);
            let payload = self.payload.len();
            while let Some(t) = self.client.poll_transmit() {
                self.wire.record_payload(payload);
                self.wire.record(&t.payload);
                net.send(now, node, server, &t.payload);
            }
        }
    }

    fn drain_core_events(&mut self) {
        while let Some(event) = self.client.poll_event() {
            match event {
                ClientEvent::PacketAcked { sequence } => self.layer.on_packet_acked(sequence),
                ClientEvent::Payload { .. } => {}
                other => self.events.push_back(other),
            }
        }
    }

    /// Queues `message` on `channel`.
    pub fn send(&mut self, channel: usize, message: M) -> Result<(), SendError> {
        self.layer.send(channel, message)
    }

    /// The next message on `channel`.
    pub fn receive(&mut self, channel: usize) -> Option<M> {
        self.layer.receive(channel)
    }

    /// The next connection, disconnection or denial.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }
}
