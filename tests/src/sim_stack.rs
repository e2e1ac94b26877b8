//! The full sans-IO stack on the network simulator: the library's own
//! [`ServerStack`] and [`ClientStack`] (a connection with one message layer per
//! connection, glued as the UDP transport uses them), with datagrams going to a
//! [`Network`] instead of a socket and [`WireCounters`] recording what went out, so
//! that tests can check packet budgets. [`SimBackend`] makes the connect tokens, as a
//! game's backend would, deterministically.

use netproto::Time;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use netproto::MessageSet;
use netproto::channel::{ChannelId, LayerConfig, MessageLayer};
use netproto::connection::{
    Client, ClientEvent, ClientId, ConnectionConfig, MAX_DATAGRAM_BYTES, Server, ServerConfig,
    ServerEvent,
};
use netproto::internals::netcode::PacketType;
use netproto::netcode::{
    ConnectToken, Key, TokenParams, USER_DATA_BYTES, generate_connect_token_with,
};
use netproto::sim::{Network, NodeId, Rng};
use netproto::transport::{ClientStack, ConnectionStats, SendError, ServerStack, StackStats};

/// The Unix time the simulated servers start at.
pub const SIM_UNIX_TIME: u64 = 1_800_000_000;

/// The address a server at `node` has in connect tokens (never used as a socket: the
/// simulator routes by node).
pub fn sim_address(node: NodeId) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000 + node.0 as u16))
}

/// A game backend for simulated servers: it holds the private key they share and
/// makes connect tokens with keys and nonces drawn from a seeded generator, so that
/// a test replays byte for byte.
#[derive(Debug)]
pub struct SimBackend {
    /// The key tokens are sealed with.
    pub private_key: Key,
    /// The protocol id tokens carry.
    pub protocol_id: u64,
    /// Seconds a token lives.
    pub expire_seconds: u64,
    /// The connection timeout tokens set.
    pub timeout_seconds: i32,
    /// The user data tokens carry (zeros unless a test sets it).
    pub user_data: [u8; USER_DATA_BYTES],
    rng: Rng,
}

impl SimBackend {
    /// A backend for `protocol_id` with a key drawn from `seed`, tokens that live an
    /// hour with a 5-second timeout.
    pub fn new(protocol_id: u64, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let private_key = Key::from_bytes(random_bytes(&mut rng));
        Self::with_key(protocol_id, private_key, rng.next_u64())
    }

    /// The same with a given private key, drawing nonces and session keys from `seed`.
    pub fn with_key(protocol_id: u64, private_key: Key, seed: u64) -> Self {
        Self {
            private_key,
            protocol_id,
            expire_seconds: 3600,
            timeout_seconds: 5,
            user_data: [0; USER_DATA_BYTES],
            rng: Rng::new(seed),
        }
    }

    /// A server configuration at `node` that accepts this backend's tokens.
    pub fn server_config(&mut self, node: NodeId) -> ServerConfig {
        let mut config = ServerConfig::new(
            ConnectionConfig::new(self.protocol_id),
            self.private_key.clone(),
            vec![sim_address(node)],
        );
        config.challenge_key = Key::from_bytes(random_bytes(&mut self.rng));
        config
    }

    /// A token for client `client_id` to connect to the server at `server`, made at
    /// the simulated servers' start time.
    pub fn token(&mut self, client_id: u64, server: NodeId) -> ConnectToken {
        self.token_to(client_id, sim_address(server))
    }

    /// A token for client `client_id` to connect to the server at `address`, made at
    /// [`SIM_UNIX_TIME`].
    pub fn token_to(&mut self, client_id: u64, address: SocketAddr) -> ConnectToken {
        self.token_made_at(client_id, address, SIM_UNIX_TIME)
    }

    /// A token for client `client_id` to connect to the server at `server`, made at
    /// Unix time `unix_time` (a server restarted since [`SIM_UNIX_TIME`] refuses the
    /// tokens made before it started: the restart rule).
    pub fn token_at(&mut self, client_id: u64, server: NodeId, unix_time: u64) -> ConnectToken {
        self.token_made_at(client_id, sim_address(server), unix_time)
    }

    fn token_made_at(
        &mut self,
        client_id: u64,
        address: SocketAddr,
        unix_time: u64,
    ) -> ConnectToken {
        let mut params = TokenParams::new(self.protocol_id, client_id, vec![address]);
        params.timeout_seconds = self.timeout_seconds;
        params.expire_seconds = self.expire_seconds;
        params.user_data = self.user_data;
        generate_connect_token_with(
            &params,
            &self.private_key,
            unix_time,
            unix_time + self.expire_seconds,
            random_bytes(&mut self.rng),
            Key::from_bytes(random_bytes(&mut self.rng)),
            Key::from_bytes(random_bytes(&mut self.rng)),
        )
        .unwrap_or_else(|e| panic!("token: {e}"))
    }
}

fn random_bytes<const N: usize>(rng: &mut Rng) -> [u8; N] {
    let mut bytes = [0u8; N];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// What a node put on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireCounters {
    /// Datagrams handed to the network.
    pub datagrams_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// The largest datagram after the handshake (the 1078-byte connection requests
    /// are left out: they are not packets of the session).
    pub max_datagram: usize,
    /// The largest layer payload written.
    pub max_payload: usize,
    /// Packet-endpoint fragments sent by the node's live connections.
    pub fragments_sent: u64,
    /// Payloads the layer refused on receipt (the packet was dropped unacked).
    pub payloads_dropped_by_layer: u64,
}

impl WireCounters {
    /// Counts one outgoing datagram.
    fn record(&mut self, datagram: &[u8]) {
        self.datagrams_sent += 1;
        self.bytes_sent += datagram.len() as u64;
        let request = datagram.first() == Some(&(PacketType::Request as u8));
        if !request {
            self.max_datagram = self.max_datagram.max(datagram.len());
        }
    }

    /// Takes the stack's payload counts.
    fn sync(&mut self, stack: &StackStats) {
        self.max_payload = stack.largest_payload_bytes;
        self.payloads_dropped_by_layer = stack.payloads_dropped_by_layer;
    }
}

/// Hands every queued datagram to the network, counting it.
fn flush(
    now: f64,
    from: NodeId,
    net: &mut Network,
    wire: &mut WireCounters,
    mut next: impl FnMut(&mut [u8]) -> Option<(NodeId, usize)>,
) {
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    while let Some((to, len)) = next(&mut buf) {
        wire.record(&buf[..len]);
        net.send(Time::from_secs_f64(now), from, to, &buf[..len]);
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
        let stack = ServerStack::new(config, layer, Time::from_secs_f64(now), SIM_UNIX_TIME)
            .unwrap_or_else(|e| panic!("config: {e}"));
        Self {
            node,
            stack,
            wire: WireCounters::default(),
        }
    }

    /// The sans-IO connection server (statistics, congestion, counters).
    pub fn connection(&self) -> &Server<NodeId, impl Sized> {
        self.stack.connection()
    }

    /// What the connection to `client` measured, link and messages.
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        self.stack.stats(client)
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
        self.stack
            .handle_datagram(Time::from_secs_f64(now), from, datagram);
        self.wire.sync(self.stack.stack_stats());
    }

    /// Handles a batch of datagrams delivered to this node, as `UdpServer` does a
    /// socket's batch: [`ServerStack::prefetch`] with their senders, then each.
    pub fn handle_batch(&mut self, now: f64, datagrams: &[(NodeId, Vec<u8>)]) {
        const CHUNK: usize = 32;
        for chunk in datagrams.chunks(CHUNK) {
            let mut senders = [NodeId(0); CHUNK];
            for (sender, (from, _)) in senders.iter_mut().zip(chunk) {
                *sender = *from;
            }
            self.stack.prefetch(&senders[..chunk.len()]);
            for (from, datagram) in chunk {
                self.handle_datagram(now, *from, datagram);
            }
        }
    }

    /// One tick ([`ServerStack::update`]); every datagram goes to `net`.
    pub fn update(&mut self, now: f64, net: &mut Network) {
        self.stack.update(Time::from_secs_f64(now));
        self.flush(now, net);
    }

    /// Everything queued, counted, to the network.
    fn flush(&mut self, now: f64, net: &mut Network) {
        let (node, stack) = (self.node, &mut self.stack);
        flush(now, node, net, &mut self.wire, |buf| {
            stack.poll_transmit(buf)
        });
        self.wire.sync(self.stack.stack_stats());
        let server = self.stack.connection();
        self.wire.fragments_sent = server
            .clients()
            .filter_map(|(id, _)| server.stats(id).map(|l| l.endpoint))
            .map(|c| c.fragments_sent)
            .sum();
    }

    /// The layer of a connected client, to send and receive messages.
    pub fn layer_mut(&mut self, client: ClientId) -> Option<&mut MessageLayer<M>> {
        self.stack.layer_mut(client)
    }

    /// `true` when `client` is connected and `channel` has room for one more message.
    pub fn can_send(&self, client: ClientId, channel: ChannelId) -> bool {
        self.layer(client).is_some_and(|l| l.can_send(channel))
    }

    /// The next message from `client` on `channel`.
    pub fn receive(&mut self, client: ClientId, channel: ChannelId) -> Option<M> {
        self.stack.receive(client, channel)
    }

    /// The next connection or disconnection.
    pub fn poll_event(&mut self) -> Option<ServerEvent<NodeId>> {
        self.stack.poll_event()
    }

    /// Disconnects `client` now (the packets go out at the next update).
    pub fn disconnect(&mut self, now: f64, client: ClientId) -> bool {
        self.stack.disconnect(Time::from_secs_f64(now), client)
    }

    /// Disconnects `client` once its queues are flushed, or after `timeout`
    /// ([`ServerStack::disconnect_after_flush`]).
    pub fn disconnect_after_flush(&mut self, now: f64, client: ClientId, timeout: f64) -> bool {
        self.stack.disconnect_after_flush(
            Time::from_secs_f64(now),
            client,
            Duration::from_secs_f64(timeout),
        )
    }

    /// What the stack counted.
    pub fn stack_stats(&self) -> &StackStats {
        self.stack.stack_stats()
    }

    /// The stack itself (to broadcast, for one).
    pub fn stack_mut(&mut self) -> &mut ServerStack<NodeId, M> {
        &mut self.stack
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
    /// A client at `node` connecting to `server` with `config`, `token` and `layer`.
    /// Panics on an invalid configuration (a test's own setup).
    pub fn new(
        node: NodeId,
        server: NodeId,
        config: ConnectionConfig,
        token: &ConnectToken,
        layer: LayerConfig,
        now: f64,
    ) -> Self {
        let stack = ClientStack::new(config, token, server, layer, Time::from_secs_f64(now))
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

    /// What the connection measured, link and messages, once connected.
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.stack.stats()
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
        self.stack
            .handle_datagram(Time::from_secs_f64(now), from, datagram);
        self.wire.sync(self.stack.stack_stats());
    }

    /// One tick ([`ClientStack::update`]); every datagram goes to `net`.
    pub fn update(&mut self, now: f64, net: &mut Network) {
        self.stack.update(Time::from_secs_f64(now));
        let (node, stack) = (self.node, &mut self.stack);
        flush(now, node, net, &mut self.wire, |buf| {
            stack.poll_transmit(buf)
        });
        self.wire.sync(self.stack.stack_stats());
        if let Some(c) = self.stack.connection().stats().map(|l| l.endpoint) {
            self.wire.fragments_sent = c.fragments_sent;
        }
    }

    /// Queues `message` on `channel`.
    pub fn send(&mut self, channel: ChannelId, message: M) -> Result<(), SendError> {
        self.stack.send(channel, message)
    }

    /// The next message on `channel`.
    pub fn receive(&mut self, channel: ChannelId) -> Option<M> {
        self.stack.receive(channel)
    }

    /// The next connection, disconnection or denial.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.stack.poll_event()
    }

    /// Disconnects once the queues are flushed, or after `timeout`
    /// ([`ClientStack::disconnect_after_flush`]).
    pub fn disconnect_after_flush(&mut self, now: f64, timeout: f64) {
        self.stack
            .disconnect_after_flush(Time::from_secs_f64(now), Duration::from_secs_f64(timeout));
    }

    /// Disconnects now.
    pub fn disconnect(&mut self, now: f64) {
        self.stack.disconnect(Time::from_secs_f64(now));
    }

    /// What the stack counted.
    pub fn stack_stats(&self) -> &StackStats {
        self.stack.stack_stats()
    }
}

/// Hands every datagram `net` delivers by `now` to `server` or to the client at its
/// destination node (a datagram to a node without one is dropped).
pub fn deliver<M: MessageSet>(
    net: &mut Network,
    now: f64,
    server: &mut SimServer<M>,
    clients: &mut [SimClient<M>],
) {
    while let Some(d) = net.poll(Time::from_secs_f64(now)) {
        if d.to == server.node {
            server.handle_datagram(now, d.from, &d.payload);
        } else if let Some(client) = clients.iter_mut().find(|c| c.node == d.to) {
            client.handle_datagram(now, d.from, &d.payload);
        }
    }
}
