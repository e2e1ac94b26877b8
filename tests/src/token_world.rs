//! A netcode server and its clients on the deterministic simulator, built to attack
//! the connect token lifecycle: clients come and go with fresh or old tokens, from
//! any address, the server restarts, and attackers replay captured requests. Every
//! sealed datagram is attributed to the key that sealed it (the client's token key,
//! or, for the server's datagrams, the one of the tokens used at that address that
//! opens it) and recorded in a [`NonceLog`], so that a test can assert that no
//! (key, nonce) pair is ever sealed twice, in either direction.

use std::collections::HashMap;
use std::time::Duration;

use netproto::Time;
use netproto::connection::{
    Client, ClientEvent, ConnectionConfig, MAX_DATAGRAM_BYTES, Server, ServerConfig, ServerEvent,
    ServerStats,
};
use netproto::internals::netcode::{AllowedPackets, read_packet};
use netproto::netcode::ConnectToken;
use netproto::sim::{LinkConfig, Network, NodeId};

use crate::nonce_log::NonceLog;
use crate::sim_stack::{SIM_UNIX_TIME, SimBackend};

/// The server's node.
pub const SERVER: NodeId = NodeId(0);
/// The protocol id of this world.
pub const PROTOCOL: u64 = 0x70c3_11fe_cafe_0001;
/// The simulation step, seconds.
pub const TICK: f64 = 0.01;

/// A client of the world.
#[derive(Debug)]
pub struct Peer {
    /// Where it is.
    pub node: NodeId,
    /// The connection.
    pub client: Client<NodeId>,
    /// Which token of [`World::tokens`] it connects with.
    pub token: usize,
    /// The server's datagrams to it are lost (it never hears a challenge).
    pub deaf: bool,
    /// Its responses are lost (it never completes a handshake).
    pub mute_responses: bool,
}

/// An attacker replaying a captured request from `node` every `interval` seconds.
#[derive(Debug)]
pub struct Replayer {
    /// Where it sends from.
    pub node: NodeId,
    /// The request.
    pub request: Vec<u8>,
    /// Seconds between two sends.
    pub interval: f64,
    /// When it sends next.
    pub next: f64,
}

/// The world.
#[derive(Debug)]
pub struct World {
    /// The backend that makes every token.
    pub backend: SimBackend,
    /// The network.
    pub net: Network,
    /// Virtual time, seconds.
    pub now: f64,
    /// The server (replaced by [`restart`](Self::restart)).
    pub server: Server<NodeId>,
    /// How the server is configured (before each start).
    pub server_config: ServerConfig,
    /// Every token made, in order.
    pub tokens: Vec<ConnectToken>,
    /// The tokens used at each node (to attribute the server's datagrams).
    used_at: HashMap<NodeId, Vec<usize>>,
    /// The clients.
    pub peers: Vec<Peer>,
    /// The request replayers.
    pub replayers: Vec<Replayer>,
    /// Every sealed datagram's (key, nonce).
    pub nonces: NonceLog,
    /// Sessions each token opened, as the server reported them (by user id: every
    /// token here has its own user id unless a test says otherwise).
    pub server_events: Vec<ServerEvent<NodeId>>,
    /// Client events: (node, event).
    pub client_events: Vec<(NodeId, ClientEvent)>,
    /// Server datagrams that no known key opened (should stay 0).
    pub unattributed: u64,
    /// The counters of every earlier server run, oldest first.
    pub past_runs: Vec<ServerStats>,
}

impl World {
    /// A world whose server has `max_clients` slots on links of `link`.
    pub fn new(seed: u64, max_clients: usize, link: LinkConfig) -> Self {
        let mut backend = SimBackend::new(PROTOCOL, seed);
        backend.expire_seconds = 300;
        let mut server_config = backend.server_config(SERVER);
        server_config.max_clients = max_clients;
        let mut net = Network::new(seed ^ 0x5eed);
        net.set_default_link(link);
        let server = Server::new(server_config.clone(), Time::ZERO, SIM_UNIX_TIME)
            .expect("valid server config");
        Self {
            backend,
            net,
            // The server has been up for a second: tokens made now are from after
            // its start (the restart rule refuses those of the second it started).
            now: 1.0,
            server,
            server_config,
            tokens: Vec::new(),
            used_at: HashMap::new(),
            peers: Vec::new(),
            replayers: Vec::new(),
            nonces: NonceLog::new(),
            server_events: Vec::new(),
            client_events: Vec::new(),
            unattributed: 0,
            past_runs: Vec::new(),
        }
    }

    /// The Unix time now.
    pub fn unix(&self) -> u64 {
        // (`now` adds up ticks of 0.01 s: 2.9999999 is 3.)
        SIM_UNIX_TIME + (self.now + 1e-6) as u64
    }

    /// A fresh token for `user_id`, made now.
    pub fn new_token(&mut self, user_id: u64) -> usize {
        let token = self.backend.token_at(user_id, SERVER, self.unix());
        self.tokens.push(token);
        self.tokens.len() - 1
    }

    /// A client at `node` connecting with token `token` (a new `Client`: its
    /// sequence starts again).
    pub fn connect(&mut self, node: NodeId, token: usize) {
        self.peers.retain(|p| p.node != node);
        let client = Client::new(
            ConnectionConfig::new(PROTOCOL),
            &self.tokens[token],
            SERVER,
            Time::from_secs_f64(self.now),
        )
        .expect("valid client");
        self.used_at.entry(node).or_default().push(token);
        self.peers.push(Peer {
            node,
            client,
            token,
            deaf: false,
            mute_responses: false,
        });
    }

    /// The peer at `node`.
    pub fn peer(&mut self, node: NodeId) -> &mut Peer {
        self.peers
            .iter_mut()
            .find(|p| p.node == node)
            .expect("a peer at that node")
    }

    /// Whether the client at `node` is connected.
    pub fn connected(&self, node: NodeId) -> bool {
        self.peers
            .iter()
            .any(|p| p.node == node && p.client.is_connected())
    }

    /// The first request the token `token` makes, as a client would send it now
    /// (captured from a throwaway client: what an on-path attacker sees).
    pub fn capture_request(&mut self, token: usize) -> Vec<u8> {
        let mut client = Client::new(
            ConnectionConfig::new(PROTOCOL),
            &self.tokens[token],
            SERVER,
            Time::from_secs_f64(self.now),
        )
        .expect("valid client");
        client.update(Time::from_secs_f64(self.now));
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        let (_, len) = client.poll_transmit(&mut buf).expect("a request");
        buf[..len].to_vec()
    }

    /// Presents token `token` once from `node`, as an attacker replaying its
    /// captured request would.
    pub fn present_once(&mut self, node: NodeId, token: usize) {
        let request = self.capture_request(token);
        self.used_at.entry(node).or_default().push(token);
        self.net
            .send(Time::from_secs_f64(self.now), node, SERVER, &request);
    }

    /// An attacker at `node` replaying token `token`'s request every `interval`
    /// seconds from `first` on, never answering a challenge.
    pub fn replay_from(&mut self, node: NodeId, token: usize, interval: f64, first: f64) {
        let request = self.capture_request(token);
        self.used_at.entry(node).or_default().push(token);
        self.replayers.push(Replayer {
            node,
            request,
            interval,
            next: first,
        });
    }

    /// Restarts the server: a new run with the same configuration (and keys) and a
    /// fresh challenge key, knowing nothing of the last run. Its clients are lost. A
    /// restart takes a second (the restart rule cannot tell a token made in the
    /// second of a restart from one made just after: see
    /// `ServerConfig::max_token_lifetime`), during which the clients keep running.
    pub fn restart(&mut self) {
        self.run(1.0);
        let mut config = self.server_config.clone();
        config.challenge_key = netproto::netcode::Key::from_bytes([self.now as u8 ^ 0x5a; 32]);
        self.past_runs.push(*self.server.server_stats());
        self.server = Server::new(config, Time::from_secs_f64(self.now), self.unix())
            .expect("valid server config");
    }

    /// Advances by one [`TICK`].
    pub fn step(&mut self) {
        self.now += TICK;
        let now = Time::from_secs_f64(self.now);
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        for r in &mut self.replayers {
            if self.now >= r.next {
                r.next += r.interval;
                self.net.send(now, r.node, SERVER, &r.request);
            }
        }
        for p in &mut self.peers {
            p.client.update(now);
            while let Some((_, len)) = p.client.poll_transmit(&mut buf) {
                let bytes = &buf[..len];
                let key = self.tokens[p.token].client_to_server_key.as_bytes();
                self.nonces.record(key, bytes);
                let response = bytes.first().is_some_and(|b| b & 0x0f == 3);
                if p.mute_responses && response {
                    continue;
                }
                self.net.send(now, p.node, SERVER, bytes);
            }
            while let Some(event) = p.client.poll_event() {
                self.client_events.push((p.node, event));
            }
        }
        while let Some(d) = self.net.poll(now) {
            if d.to == SERVER {
                if let Some(delivery) = self.server.handle_datagram(now, d.from, &d.payload) {
                    delivery.accept();
                }
            } else if let Some(p) = self.peers.iter_mut().find(|p| p.node == d.to)
                && !p.deaf
                && let Some(delivery) = p.client.handle_datagram(now, SERVER, &d.payload)
            {
                delivery.accept();
            }
        }
        self.server.update(now);
        while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
            let bytes = buf[..len].to_vec();
            self.record_server_datagram(to, &bytes);
            self.net.send(now, SERVER, to, &bytes);
        }
        while let Some(event) = self.server.poll_event() {
            self.server_events.push(event);
        }
    }

    /// Attributes a datagram the server sealed for `to` to the token key that opens
    /// it, and records its nonce.
    fn record_server_datagram(&mut self, to: NodeId, bytes: &[u8]) {
        let candidates = self.used_at.get(&to).cloned().unwrap_or_default();
        let unix = self.unix();
        for token in candidates {
            let key = self.tokens[token].server_to_client_key.clone();
            let mut copy = bytes.to_vec();
            if read_packet(
                &mut copy,
                PROTOCOL,
                unix,
                Some(&key),
                AllowedPackets::ALL,
                None,
            )
            .is_ok()
            {
                self.nonces.record(key.as_bytes(), bytes);
                return;
            }
        }
        self.unattributed += 1;
    }

    /// Runs for `seconds`.
    pub fn run(&mut self, seconds: f64) {
        let end = self.now + seconds;
        while self.now < end - 1e-9 {
            self.step();
        }
    }

    /// Runs until the client at `node` is connected or `limit` seconds pass; the
    /// time it took, if it connected.
    pub fn run_until_connected(&mut self, node: NodeId, limit: f64) -> Option<f64> {
        let start = self.now;
        while self.now - start < limit {
            self.step();
            if self.connected(node) {
                return Some(self.now - start);
            }
        }
        None
    }

    /// Sessions the server opened for user `user_id`, over every run.
    pub fn sessions_of(&self, user_id: u64) -> usize {
        self.server_events
            .iter()
            .filter(|e| matches!(e, ServerEvent::Connected { user_id: u, .. } if *u == user_id))
            .count()
    }
}

/// A link with `latency` each way, 20% of it as jitter.
pub fn link(latency: Duration) -> LinkConfig {
    LinkConfig {
        latency,
        jitter: latency / 5,
        ..LinkConfig::default()
    }
}
