//! The full sans-IO stack on the network simulator: the library's own
//! [`ServerStack`] and [`ClientStack`] (a connection with one message layer per
//! connection, glued as the UDP transport uses them), with datagrams going to a
//! [`Network`] instead of a socket and [`WireCounters`] recording what went out, so
//! that tests can check packet budgets.

use netproto::MessageSet;
use netproto::channel::{LayerConfig, MessageLayer};
use netproto::connection::{
    Client, ClientEvent, ClientId, ConnectionConfig, Packet, Server, ServerConfig, ServerEvent,
    Transmit,
};
use netproto::packet::FRAGMENT_PREFIX;
use netproto::sim::{Network, NodeId};
use netproto::transport::{ClientStack, SendError, ServerStack, StackCounters};

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

    /// Takes the stack's payload counts.
    fn sync(&mut self, stack: &StackCounters) {
        self.max_payload = stack.largest_payload;
        self.payloads_refused = stack.payloads_refused;
    }
}

/// Hands every queued datagram to the network, counting it.
fn flush(
    now: f64,
    from: NodeId,
    net: &mut Network,
    wire: &mut WireCounters,
    mut next: impl FnMut() -> Option<Transmit<NodeId>>,
) {
    while let Some(t) = next() {
        wire.record(&t.payload);
        net.send(now, from, t.to, &t.payload);
    }
}

/// A game server on the simulator: a [`ServerStack`] at a node.
#[derive(Debug)]
pub struct SimServer<M: MessageSet> {
    node: NodeId,
    stack: ServerStack<NodeId, M>,
    wire: WireCounters,
}

impl<M: MessageSet> SimServer<M> {
    /// A server at `node` with `config` and `layer` for every client. Panics on an
    /// invalid configuration (a test's own setup).
    pub fn new(node: NodeId, config: ServerConfig, layer: LayerConfig, now: f64) -> Self {
        let stack = ServerStack::new(config, layer, now).unwrap_or_else(|e| panic!("config: {e}"));
        Self {
            node,
            stack,
            wire: WireCounters::default(),
        }
    }

    /// The sans-IO connection server (statistics, congestion, counters).
    pub fn connection(&self) -> &Server<NodeId> {
        self.stack.connection()
    }

    /// The layer of a connected client.
    pub fn layer(&self, client: ClientId) -> Option<&MessageLayer<M>> {
        self.stack.layer(client)
    }

    /// Every connected client's layer.
    pub fn layers(&self) -> impl Iterator<Item = (ClientId, &MessageLayer<M>)> + '_ {
        self.stack.layers()
    }

    /// What this node put on the wire.
    pub fn wire(&self) -> &WireCounters {
        &self.wire
    }

    /// Handles one datagram delivered to this node.
    pub fn handle_datagram(&mut self, now: f64, from: NodeId, datagram: &[u8]) {
        self.stack.handle_datagram(now, from, datagram);
        self.wire.sync(self.stack.counters());
    }

    /// One tick ([`ServerStack::update`]); every datagram goes to `net`.
    pub fn update(&mut self, now: f64, net: &mut Network) {
        self.stack.update(now);
        self.flush(now, net);
    }

    /// Everything queued, counted, to the network.
    fn flush(&mut self, now: f64, net: &mut Network) {
        let (node, stack) = (self.node, &mut self.stack);
        flush(now, node, net, &mut self.wire, || stack.poll_transmit());
        self.wire.sync(self.stack.counters());
    }

    /// The layer of a connected client, to send and receive messages.
    pub fn layer_mut(&mut self, client: ClientId) -> Option<&mut MessageLayer<M>> {
        self.stack.layer_mut(client)
    }

    /// `true` when `client` is connected and `channel` has room for one more message.
    pub fn can_send(&self, client: ClientId, channel: usize) -> bool {
        self.layer(client).is_some_and(|l| l.can_send(channel))
    }

    /// The next message from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: usize) -> Option<M> {
        self.stack.receive(client, channel)
    }

    /// The next connection or disconnection.
    pub fn poll_event(&mut self) -> Option<ServerEvent<NodeId>> {
        self.stack.poll_event()
    }
}

/// A game client on the simulator: a [`ClientStack`] at a node.
#[derive(Debug)]
pub struct SimClient<M: MessageSet> {
    node: NodeId,
    stack: ClientStack<NodeId, M>,
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
        let stack = ClientStack::new(config, server, nonce, layer, now)
            .unwrap_or_else(|e| panic!("config: {e}"));
        Self {
            node,
            stack,
            wire: WireCounters::default(),
        }
    }

    /// The sans-IO connection client (state, statistics, congestion).
    pub fn connection(&self) -> &Client<NodeId> {
        self.stack.connection()
    }

    /// The message layer.
    pub fn layer(&self) -> &MessageLayer<M> {
        self.stack.layer()
    }

    /// What this node put on the wire.
    pub fn wire(&self) -> &WireCounters {
        &self.wire
    }

    /// Handles one datagram delivered to this node.
    pub fn handle_datagram(&mut self, now: f64, from: NodeId, datagram: &[u8]) {
        self.stack.handle_datagram(now, from, datagram);
        self.wire.sync(self.stack.counters());
    }

    /// One tick ([`ClientStack::update`]); every datagram goes to `net`.
    pub fn update(&mut self, now: f64, net: &mut Network) {
        self.stack.update(now);
        let (node, stack) = (self.node, &mut self.stack);
        flush(now, node, net, &mut self.wire, || stack.poll_transmit());
        self.wire.sync(self.stack.counters());
    }

    /// Queues `message` on `channel`.
    pub fn send(&mut self, channel: usize, message: M) -> Result<(), SendError> {
        self.stack.send(channel, message)
    }

    /// The next message on `channel`.
    pub fn receive(&mut self, channel: usize) -> Option<M> {
        self.stack.receive(channel)
    }

    /// The next connection, disconnection or denial.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.stack.poll_event()
    }
}
