//! A client of the sans-IO stack and the servers its connect token names, on the
//! network simulator and virtual time: servers can be absent, killed or full, speak
//! another message set or channel configuration, or run another clock, and the
//! client's events are recorded with the time they came. Shared by the tests of
//! failed connections and of failover.

use std::net::SocketAddr;

use netproto::channel::LayerConfig;
use netproto::connection::{ClientEvent, ConnectionConfig, ServerConfig};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token_with};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto::transport::{ClientStack, ServerStack};
use netproto::{MessageSet, Time};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, sim_address};
use std::time::Duration;

/// The simulation's tick, seconds.
pub(crate) const TICK: f64 = 0.05;
/// The client's node.
pub(crate) const CLIENT: NodeId = NodeId(100);
/// The one-way delay of every link.
pub(crate) const LATENCY: Duration = Duration::from_millis(20);

/// The node of a token's server address (`sim_address` backwards).
pub(crate) fn node_of(addr: SocketAddr) -> NodeId {
    NodeId(u32::from(addr.port()) - 40_000)
}

/// A client speaking `C` and servers speaking `S`.
pub(crate) struct World<S: MessageSet, C: MessageSet> {
    pub(crate) net: Network,
    /// The servers by node; `None` once killed.
    pub(crate) servers: Vec<(NodeId, Option<ServerStack<NodeId, S>>)>,
    pub(crate) client: ClientStack<NodeId, C>,
    /// The client's events, with the time each came.
    pub(crate) events: Vec<(f64, ClientEvent)>,
    /// Datagrams the client sent: when, to which node, the bytes.
    pub(crate) sent: Vec<(f64, NodeId, Vec<u8>)>,
    /// Other clients, by node (to fill a server), their events dropped.
    pub(crate) others: Vec<(NodeId, ClientStack<NodeId, C>)>,
    tick: u64,
}

impl<S: MessageSet, C: MessageSet> World<S, C> {
    /// A client of `token` (every server it names, in turn) over `layer`, with a
    /// network of seed `seed`.
    pub(crate) fn new(seed: u64, token: &ConnectToken, layer: LayerConfig) -> Self {
        let mut net = Network::new(seed);
        net.set_default_link(LinkConfig::PERFECT.with_latency(LATENCY));
        let config = ConnectionConfig::new(token.protocol_id);
        let client = ClientStack::from_token(config, token, layer, Time::ZERO, node_of)
            .unwrap_or_else(|e| panic!("client: {e}"));
        Self {
            net,
            servers: Vec::new(),
            client,
            events: Vec::new(),
            sent: Vec::new(),
            others: Vec::new(),
            tick: 0,
        }
    }

    /// Starts a server at `node` with `config` (its protocol id is `S`'s over
    /// `layer`) now, its Unix clock `clock_offset` seconds off the backend's.
    pub(crate) fn start_server(
        &mut self,
        node: NodeId,
        mut config: ServerConfig,
        layer: LayerConfig,
        clock_offset: i64,
    ) {
        config.connection.protocol_id = netproto::protocol_id::<S>(&layer);
        let unix = SIM_UNIX_TIME.saturating_add_signed(clock_offset);
        let stack = ServerStack::new(config, layer, Time::from_secs_f64(self.now()), unix)
            .unwrap_or_else(|e| panic!("server: {e}"));
        self.servers.push((node, Some(stack)));
    }

    /// Another client at `node` with `token` over `layer`, from now.
    pub(crate) fn add_other(&mut self, node: NodeId, token: &ConnectToken, layer: LayerConfig) {
        let config = ConnectionConfig::new(token.protocol_id);
        let now = Time::from_secs_f64(self.now());
        let client = ClientStack::from_token(config, token, layer, now, node_of)
            .unwrap_or_else(|e| panic!("client: {e}"));
        self.others.push((node, client));
    }

    /// Kills the server at `node`: it never reads nor sends again.
    pub(crate) fn kill(&mut self, node: NodeId) {
        for (n, server) in &mut self.servers {
            if *n == node {
                *server = None;
            }
        }
    }

    /// The server at `node`, alive.
    pub(crate) fn server(&self, node: NodeId) -> &ServerStack<NodeId, S> {
        self.servers
            .iter()
            .find(|(n, _)| *n == node)
            .and_then(|(_, s)| s.as_ref())
            .unwrap_or_else(|| panic!("no server at {node:?}"))
    }

    /// The time of the current tick.
    pub(crate) fn now(&self) -> f64 {
        self.tick as f64 * TICK
    }

    /// One tick: deliveries, the servers' updates, the client's update, its datagrams
    /// to the network.
    pub(crate) fn step(&mut self) {
        self.tick += 1;
        let now = self.now();
        let time = Time::from_secs_f64(now);
        while let Some(d) = self.net.poll(time) {
            if d.to == CLIENT {
                self.client.handle_datagram(time, d.from, &d.payload);
            } else if let Some((_, other)) = self.others.iter_mut().find(|(n, _)| *n == d.to) {
                other.handle_datagram(time, d.from, &d.payload);
            } else if let Some((_, Some(server))) =
                self.servers.iter_mut().find(|(n, _)| *n == d.to)
            {
                server.handle_datagram(time, d.from, &d.payload);
            }
        }
        let mut buf = [0u8; netproto::connection::MAX_DATAGRAM_BYTES];
        for (node, server) in &mut self.servers {
            if let Some(server) = server {
                server.update(time);
                while let Some((to, len)) = server.poll_transmit(&mut buf) {
                    self.net.send(time, *node, to, &buf[..len]);
                }
                while server.poll_event().is_some() {}
            }
        }
        for (node, other) in &mut self.others {
            other.update(time);
            while let Some((to, len)) = other.poll_transmit(&mut buf) {
                self.net.send(time, *node, to, &buf[..len]);
            }
            while other.poll_event().is_some() {}
        }
        self.client.update(time);
        while let Some((to, len)) = self.client.poll_transmit(&mut buf) {
            self.sent.push((now, to, buf[..len].to_vec()));
            self.net.send(time, CLIENT, to, &buf[..len]);
        }
        while let Some(event) = self.client.poll_event() {
            self.events.push((now, event));
        }
    }

    /// Ticks until `done` holds, at most `seconds`; `true` when it held.
    pub(crate) fn run_until(&mut self, seconds: f64, mut done: impl FnMut(&Self) -> bool) -> bool {
        let end = self.now() + seconds;
        while self.now() < end {
            self.step();
            if done(self) {
                return true;
            }
        }
        false
    }

    /// Ticks until the handshake ends (connected, denied or given up), at most
    /// `seconds`; the event that ended it and its time.
    pub(crate) fn handshake(&mut self, seconds: f64) -> (f64, ClientEvent) {
        let ended = self.run_until(seconds, |w| !w.client.connection().is_connecting());
        assert!(ended, "the handshake went on for {seconds} s");
        self.events.last().cloned().expect("an event")
    }

    /// Datagrams the client sent to `node`.
    pub(crate) fn sent_to(&self, node: NodeId) -> usize {
        self.sent.iter().filter(|(_, to, _)| *to == node).count()
    }
}

/// The private key the backend and the servers share.
pub(crate) fn private_key() -> Key {
    Key::from_bytes([0x5a; 32])
}

/// What a connect token says.
pub(crate) struct TokenSpec {
    pub(crate) protocol_id: u64,
    pub(crate) client_id: u64,
    pub(crate) servers: Vec<NodeId>,
    /// The connection timeout, seconds.
    pub(crate) timeout: i32,
    /// Seconds from creation to expiry.
    pub(crate) lifetime: u64,
    /// The key it is sealed with.
    pub(crate) key: Key,
}

impl TokenSpec {
    /// A token of the servers' backend for `M` over `layer`, for client 7, to the
    /// servers at `servers`, with a 5-second timeout, living an hour.
    pub(crate) fn new<M: MessageSet>(layer: &LayerConfig, servers: &[NodeId]) -> Self {
        Self {
            protocol_id: netproto::protocol_id::<M>(layer),
            client_id: 7,
            servers: servers.to_vec(),
            timeout: 5,
            lifetime: 3600,
            key: private_key(),
        }
    }

    /// The token, made at [`SIM_UNIX_TIME`] with fixed nonce and keys (drawn from
    /// the client id): the same bytes on every run.
    pub(crate) fn token(&self) -> ConnectToken {
        let addresses = self.servers.iter().map(|&n| sim_address(n)).collect();
        let mut params = TokenParams::new(self.protocol_id, self.client_id, addresses);
        params.timeout_seconds = self.timeout;
        params.expire_seconds = self.lifetime;
        let byte = self.client_id as u8;
        generate_connect_token_with(
            &params,
            &self.key,
            SIM_UNIX_TIME,
            SIM_UNIX_TIME + self.lifetime,
            filled(byte),
            Key::from_bytes([byte ^ 0x11; 32]),
            Key::from_bytes([byte ^ 0x22; 32]),
        )
        .unwrap_or_else(|e| panic!("token: {e}"))
    }
}

/// A server configuration at `node` for the backend's tokens, with `max_clients`
/// slots.
pub(crate) fn server_config(node: NodeId, max_clients: usize) -> ServerConfig {
    let mut config = ServerConfig::new(
        ConnectionConfig::new(0),
        private_key(),
        vec![sim_address(node)],
    );
    config.max_clients = max_clients;
    config.challenge_key = Key::from_bytes([node.0 as u8; 32]);
    config
}

/// An array of `byte`s, of the length the call wants.
fn filled<const N: usize>(byte: u8) -> [u8; N] {
    [byte; N]
}
