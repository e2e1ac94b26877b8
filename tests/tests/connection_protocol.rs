//! The netcode 1.02 connection layer on virtual time (the sans-IO [`Server`] and
//! [`Client`] driven by hand, deterministic, no wall clock), proving with exact
//! outcomes and counters that:
//!
//! * a client with a valid token connects, payloads go both ways through the two-phase
//!   [`Delivery`] and their acks come back through `accept()`, and a disconnect from
//!   either side is seen by the other and frees the slot;
//! * a request whose token is sealed with another key, expired, made for another
//!   server, for another protocol id, or already used (from another address, or after
//!   its session ended) gets no answer and leaves no state, and is counted where
//!   [`ServerStats`] says; the client gives up (`NoReply`,
//!   `TokenExpired`);
//! * a captured packet replayed (once, a thousand times, after 300 newer ones) is
//!   delivered once; forged packets from a connected client's address change nothing
//!   but `datagrams_dropped_unauthenticated` (a twin run without them is compared counter by
//!   counter);
//! * a full server denies, and no reply is larger than the datagram that caused it;
//! * keep-alives hold an idle connection open past the token timeout, a silent one
//!   times out and its slot takes a new token; congestion avoidance paces payloads.
//!
//! The flood of invalid connection requests (no state, no reply, memory, cost per
//! request) is in `connection_flood.rs` (it needs its own global allocator).

use netproto::Time;
use netproto::connection::{
    Client, ClientEvent, ClientId, ClientState, ConnectionConfig, ConnectionConfigError,
    DenyReason, DisconnectReason, MAX_DATAGRAM_BYTES, Mode, Server, ServerConfig, ServerEvent,
    ServerStats,
};
use netproto::internals::netcode::{
    AllowedPackets, CONNECTION_REQUEST_BYTES, Packet, PacketType, read_packet,
};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token_with};
use netproto::packet::Sequence;
use netproto::sim::{LinkConfig, Network, NodeId, Rng};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend, sim_address};
use std::time::Duration;

const PROTOCOL: u64 = 0x5eed_f00d_1234_5678;
const SERVER: NodeId = NodeId(0);
/// The virtual tick: a power of two, so that virtual time is exact.
const TICK: f64 = 1.0 / 32.0;

/// Drops a datagram `(from, to, bytes)` when it returns `true`.
type Filter = Box<dyn FnMut(NodeId, NodeId, &[u8]) -> bool>;
/// Datagrams to inject from a client's address before its datagram `bytes`.
type Tamper = Box<dyn FnMut(&[u8]) -> Vec<Vec<u8>>>;

/// A server at [`SERVER`], clients at other nodes, and an instant, lossless network
/// between them (unless `filter` drops), on virtual time. Everything delivered is
/// accepted and recorded.
struct Pair {
    backend: SimBackend,
    now: f64,
    server: Server<NodeId>,
    clients: Vec<(NodeId, Client<NodeId>)>,
    server_events: Vec<ServerEvent<NodeId>>,
    client_events: Vec<(NodeId, ClientEvent)>,
    /// Payloads the server accepted, with the sequences of ours each newly acked.
    to_server: Vec<(ClientId, Vec<u8>, Vec<Sequence>)>,
    /// The endpoint sequence of each payload the server accepted.
    server_sequences: Vec<Sequence>,
    /// Payloads each client accepted, with the acks.
    to_client: Vec<(NodeId, Vec<u8>, Vec<Sequence>)>,
    /// Every datagram delivered: (from, to, bytes).
    wire: Vec<(NodeId, NodeId, Vec<u8>)>,
    /// Bytes handed to the server, and bytes it sent.
    bytes_in: usize,
    bytes_out: usize,
    filter: Option<Filter>,
    tamper: Option<Tamper>,
}

impl Pair {
    /// A server with `max_clients` slots, accepting the tokens of a seeded backend.
    fn new(max_clients: usize) -> Self {
        Self::with(max_clients, |_| {})
    }

    /// [`new`](Self::new) with the server configuration changed by `edit`.
    fn with(max_clients: usize, edit: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::at_unix(max_clients, SIM_UNIX_TIME, edit)
    }

    /// A server whose clock reads `unix_time` at virtual time 0.
    fn at_unix(max_clients: usize, unix_time: u64, edit: impl FnOnce(&mut ServerConfig)) -> Self {
        let mut backend = SimBackend::new(PROTOCOL, 1);
        let mut config = backend.server_config(SERVER);
        config.max_clients = max_clients;
        edit(&mut config);
        Self {
            backend,
            now: 0.0,
            server: Server::new(config, Time::ZERO, unix_time).expect("valid server config"),
            clients: Vec::new(),
            server_events: Vec::new(),
            client_events: Vec::new(),
            to_server: Vec::new(),
            server_sequences: Vec::new(),
            to_client: Vec::new(),
            wire: Vec::new(),
            bytes_in: 0,
            bytes_out: 0,
            filter: None,
            tamper: None,
        }
    }

    /// A fresh token of the backend for `client_id`, for this server.
    fn token(&mut self, client_id: u64) -> ConnectToken {
        self.backend.token(client_id, SERVER)
    }

    /// Adds a client at `node` with `token` (the first request goes out at the next
    /// step).
    fn add_with(&mut self, node: u32, token: &ConnectToken) -> NodeId {
        let client = Client::new(
            ConnectionConfig::new(PROTOCOL),
            token,
            SERVER,
            Time::from_secs_f64(self.now),
        )
        .expect("valid client config");
        self.clients.push((NodeId(node), client));
        NodeId(node)
    }

    /// Adds a client at `node` with a fresh token for user `node`.
    fn add(&mut self, node: u32) -> NodeId {
        let token = self.token(u64::from(node));
        self.add_with(node, &token)
    }

    fn client(&mut self, node: NodeId) -> &mut Client<NodeId> {
        &mut self
            .clients
            .iter_mut()
            .find(|(n, _)| *n == node)
            .expect("a known client")
            .1
    }

    fn events_of(&self, node: NodeId) -> Vec<ClientEvent> {
        self.client_events
            .iter()
            .filter(|(n, _)| *n == node)
            .map(|(_, e)| e.clone())
            .collect()
    }

    fn counters(&self) -> ServerStats {
        *self.server.server_stats()
    }

    fn id(&self, node: NodeId) -> ClientId {
        self.server.client_id(&node).expect("connected")
    }

    /// `true` when the filter lets the datagram through (recording it).
    fn pass(&mut self, from: NodeId, to: NodeId, bytes: &[u8]) -> bool {
        if self.filter.as_mut().is_some_and(|f| f(from, to, bytes)) {
            return false;
        }
        self.wire.push((from, to, bytes.to_vec()));
        true
    }

    /// Hands `bytes` from `from` to the server, accepting a payload, and routes every
    /// reply to its client at once. Checks that no reply is larger than the datagram
    /// that caused it.
    fn inject(&mut self, from: NodeId, bytes: &[u8]) {
        self.bytes_in += bytes.len();
        if let Some(delivery) =
            self.server
                .handle_datagram(Time::from_secs_f64(self.now), from, bytes)
        {
            let client = delivery.client();
            self.server_sequences.push(delivery.sequence());
            let payload = delivery.payload().to_vec();
            let acks = delivery.accept().iter().collect();
            self.to_server.push((client, payload, acks));
        }
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
            assert!(
                len <= bytes.len(),
                "a {len}-byte reply to a {}-byte datagram",
                bytes.len()
            );
            self.bytes_out += len;
            self.route_to_client(to, &buf[..len]);
        }
    }

    /// Hands `bytes` from the server to the client at `to`, if the filter lets it.
    fn route_to_client(&mut self, to: NodeId, bytes: &[u8]) {
        if !self.pass(SERVER, to, bytes) {
            return;
        }
        let now = self.now;
        let Some((_, client)) = self.clients.iter_mut().find(|(n, _)| *n == to) else {
            return;
        };
        if let Some(delivery) = client.handle_datagram(Time::from_secs_f64(now), SERVER, bytes) {
            let payload = delivery.payload().to_vec();
            let acks = delivery.accept().iter().collect();
            self.to_client.push((to, payload, acks));
        }
    }

    /// Moves datagrams until none is left: each client's to the server, the server's
    /// to the clients. Returns how many moved.
    fn deliver(&mut self) -> usize {
        let mut moved = 0;
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        loop {
            let mut any = false;
            // What the server queued outside `handle_datagram` (keep-alives, payloads,
            // disconnects) to the clients; then what every client queued, to the
            // server (whose replies queue the clients' next datagrams for the next
            // round).
            while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
                any = true;
                moved += 1;
                self.bytes_out += len;
                self.route_to_client(to, &buf[..len]);
            }
            let mut queued = Vec::new();
            for (node, client) in &mut self.clients {
                while let Some((to, len)) = client.poll_transmit(&mut buf) {
                    assert_eq!(to, SERVER);
                    queued.push((*node, buf[..len].to_vec()));
                }
            }
            for (from, bytes) in queued {
                any = true;
                moved += 1;
                let forged = self.tamper.as_mut().map(|t| t(&bytes)).unwrap_or_default();
                for f in forged {
                    self.inject(from, &f);
                }
                if self.pass(from, SERVER, &bytes) {
                    self.inject(from, &bytes);
                }
            }
            if !any {
                break;
            }
        }
        while let Some(e) = self.server.poll_event() {
            self.server_events.push(e);
        }
        for (node, client) in &mut self.clients {
            while let Some(e) = client.poll_event() {
                self.client_events.push((*node, e));
            }
        }
        moved
    }

    /// Advances by `dt`: updates the clients then the server, then delivers.
    fn step(&mut self, dt: f64) {
        self.now += dt;
        let now = self.now;
        for (_, client) in &mut self.clients {
            client.update(Time::from_secs_f64(now));
        }
        self.server.update(Time::from_secs_f64(now));
        self.deliver();
    }

    /// Steps [`TICK`] until `seconds` more have passed.
    fn run(&mut self, seconds: f64) {
        let end = self.now + seconds - 1e-9;
        while self.now < end {
            self.step(TICK);
        }
    }

    /// Runs until `node` is connected (at most a second).
    fn connect(&mut self, node: NodeId) -> ClientId {
        for _ in 0..20 {
            if self.client(node).is_connected() {
                break;
            }
            self.step(TICK);
        }
        assert!(
            self.client(node).is_connected(),
            "{:?}",
            self.client(node).state()
        );
        self.id(node)
    }

    /// Datagrams `from` sent to the server that reached it.
    fn sent_by(&self, from: NodeId) -> Vec<&[u8]> {
        self.wire
            .iter()
            .filter(|(f, t, _)| *f == from && *t == SERVER)
            .map(|(_, _, b)| &b[..])
            .collect()
    }

    /// Datagrams of type `kind` the server sent to `to`.
    fn server_sent(&self, to: NodeId, kind: PacketType) -> Vec<&[u8]> {
        self.wire
            .iter()
            .filter(|(f, t, b)| *f == SERVER && *t == to && b[0] & 0x0f == kind.id())
            .map(|(_, _, b)| &b[..])
            .collect()
    }
}

/// The counters of a server that ignored every request: `field` equals the number of
/// requests, every other one is zero.
fn only_requests(requests: u64, field: impl FnOnce(&mut ServerStats)) -> ServerStats {
    let mut expected = ServerStats::default();
    expected.datagrams_received = requests;
    field(&mut expected);
    expected
}

/// `c` with the fields `clear` picks zeroed (to compare the rest).
fn without(mut c: ServerStats, clear: impl FnOnce(&mut ServerStats)) -> ServerStats {
    clear(&mut c);
    c
}

fn assert_no_state(pair: &Pair) {
    assert_eq!(pair.server.pending_handshakes(), 0, "handshakes");
    assert_eq!(pair.server.remembered_tokens(), 0, "tokens");
    assert_eq!(pair.server.connected_clients(), 0, "clients");
    assert_eq!(pair.bytes_out, 0, "no reply");
    assert!(pair.server_events.is_empty());
}

// 1. ---------------------------------------------------------------------------------

#[test]
fn connect_exchange_payloads_both_ways_and_disconnect_from_either_side() {
    let mut p = Pair::new(4);
    let user_data: [u8; 256] = core::array::from_fn(|i| i as u8);
    p.backend.user_data = user_data;
    let a = p.add(7);
    p.step(TICK);
    // Request, challenge, response, keep-alive: connected within one exchange.
    assert!(p.client(a).is_connected());
    let id = p.id(a);
    assert_eq!(p.client(a).client_id(), Some(id));
    assert_eq!(
        p.server_events,
        vec![ServerEvent::Connected {
            client: id,
            address: a,
            user_id: 7
        }]
    );
    assert_eq!(
        p.events_of(a),
        vec![ClientEvent::Connected {
            client: id,
            max_clients: 4
        }]
    );
    assert_eq!(p.server.user_id(id), Some(7));
    assert_eq!(
        p.server.user_data(id),
        Some(&user_data),
        "the token's user data"
    );
    let c = p.counters();
    assert_eq!(
        (c.challenges_sent, c.clients_accepted, c.datagrams_received),
        (1, 1, 2)
    );

    // Client to server: delivered once, nothing of the server's to ack yet.
    let now = p.now;
    let up = p
        .client(a)
        .send(Time::from_secs_f64(now), b"ping")
        .expect("connected");
    p.deliver();
    assert_eq!(p.to_server, vec![(id, b"ping".to_vec(), vec![])]);
    assert_eq!(
        p.server_sequences,
        vec![up],
        "the delivery carries its sequence"
    );
    // Server to client: its packet acks the client's.
    let down = p
        .server
        .send(Time::from_secs_f64(now), id, b"pong")
        .expect("connected");
    p.deliver();
    assert_eq!(p.to_client, vec![(a, b"pong".to_vec(), vec![up])]);
    // The client's next packet acks the server's.
    let up2 = p
        .client(a)
        .send(Time::from_secs_f64(now), b"ping 2")
        .expect("connected");
    p.deliver();
    assert_eq!(p.to_server[1], (id, b"ping 2".to_vec(), vec![down]));
    assert_ne!(up, up2);
    // A payload larger than a packet is fragmented and arrives whole.
    let big: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    p.server
        .send(Time::from_secs_f64(now), id, &big)
        .expect("connected");
    p.deliver();
    assert_eq!(p.to_client.len(), 2);
    assert_eq!(p.to_client[1].1, big);
    assert_eq!(p.to_client[1].2, vec![up2]);
    // The server's endpoint for this client: two packets sent (one in fragments), two
    // received, one of them acked.
    let e = p.server.stats(id).expect("connected").endpoint;
    assert_eq!(
        (
            e.packets_sent,
            e.fragments_sent,
            e.packets_received,
            e.packets_acked
        ),
        (2, 3, 2, 1)
    );

    // The client disconnects: ten copies (the reference implementation's count), the
    // first frees the slot, the other nine come from an address with no session.
    p.client(a).disconnect(Time::from_secs_f64(now));
    p.deliver();
    assert_eq!(
        p.client(a).state(),
        ClientState::Disconnected(DisconnectReason::Local)
    );
    assert_eq!(
        p.server_events.last(),
        Some(&ServerEvent::Disconnected {
            client: id,
            address: a,
            reason: DisconnectReason::PeerDisconnected
        })
    );
    assert_eq!(p.server.connected_clients(), 0);
    assert_eq!(ConnectionConfig::new(PROTOCOL).disconnect_copies, 10);
    assert_eq!(p.counters().datagrams_dropped_unknown_address, 9);
    assert!(
        p.server
            .send(Time::from_secs_f64(now), id, b"gone")
            .is_err()
    );

    // A second client; this time the server disconnects it.
    let b = p.add(8);
    let id_b = p.connect(b);
    assert_eq!(id_b, id, "the freed slot is reused");
    assert!(p.server.disconnect(Time::from_secs_f64(p.now), id_b));
    assert!(
        !p.server.disconnect(Time::from_secs_f64(p.now), id_b),
        "only once"
    );
    p.deliver();
    assert_eq!(
        p.client(b).state(),
        ClientState::Disconnected(DisconnectReason::PeerDisconnected)
    );
    assert_eq!(
        p.server_events.last(),
        Some(&ServerEvent::Disconnected {
            client: id_b,
            address: b,
            reason: DisconnectReason::Local
        })
    );
    assert_eq!(p.server.connected_clients(), 0);
    // The client counted the nine extra copies as dropped.
    assert_eq!(p.client(b).dropped(), 9);
    let c = p.counters();
    assert_eq!((c.clients_accepted, c.clients_timed_out), (2, 0));
}

// 2. ---------------------------------------------------------------------------------

/// A payload the layer above cannot take now is postponed: not acked (the peer
/// resends it), but the acks it carries apply.
#[test]
fn a_postponed_payload_still_gives_its_acks() {
    let mut p = Pair::new(4);
    let a = p.add(7);
    p.step(TICK);
    let id = p.id(a);
    let now = Time::from_secs_f64(p.now);
    let up = p.client(a).send(now, b"ping").expect("connected");
    p.deliver();
    assert_eq!(p.server_sequences, vec![up]);
    assert_eq!(p.server.pending_transmits(), 0);
    p.server.send(now, id, b"pong").expect("connected");
    assert_eq!(p.server.pending_transmits(), 1, "the payload waits");
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let (to, len) = p.server.poll_transmit(&mut buf).expect("the payload");
    assert_eq!(to, a);
    assert_eq!(p.server.pending_transmits(), 0);
    let delivery = p
        .client(a)
        .handle_datagram(now, SERVER, &buf[..len])
        .expect("a payload");
    assert_eq!(delivery.payload(), b"pong");
    let acks: Vec<Sequence> = delivery.postpone().iter().collect();
    assert_eq!(acks, vec![up], "the server's packet acked the client's");
}

#[test]
fn a_token_sealed_with_another_key_gets_no_challenge_and_leaves_no_state() {
    let mut p = Pair::new(4);
    let token = SimBackend::new(PROTOCOL, 2).token(7, SERVER);
    let a = p.add_with(1, &token);
    p.run(4.9);
    assert_eq!(p.client(a).state(), ClientState::Requesting);
    p.run(0.2);
    let no_reply = DisconnectReason::NoReply {
        server: None,
        servers: 1,
        waited: std::time::Duration::from_secs(5),
        protocol_id: PROTOCOL,
    };
    assert_eq!(p.client(a).state(), ClientState::Disconnected(no_reply));
    assert_eq!(
        p.events_of(a),
        vec![ClientEvent::Disconnected { reason: no_reply }]
    );
    // One request every 0.125 s (the 0.1-second resend interval, on the tick) for the
    // token's 5-second timeout.
    let requests = p.sent_by(a).len() as u64;
    assert_eq!(requests, 40);
    assert!(
        p.sent_by(a)
            .iter()
            .all(|d| d.len() == CONNECTION_REQUEST_BYTES)
    );
    assert_eq!(
        p.counters(),
        only_requests(requests, |c| c.requests_dropped_unauthenticated = requests)
    );
    assert_no_state(&p);
}

// 3. ---------------------------------------------------------------------------------

#[test]
fn an_expired_token_is_ignored() {
    let lifetime = SimBackend::new(PROTOCOL, 1).expire_seconds;
    // The server's clock reads the token's expiry: it has expired.
    let mut p = Pair::at_unix(4, SIM_UNIX_TIME + lifetime, |_| {});
    let a = p.add(1);
    p.run(1.0);
    let requests = p.sent_by(a).len() as u64;
    assert!(requests >= 8, "{requests}");
    assert_eq!(
        p.counters(),
        only_requests(requests, |c| c.requests_dropped_expired = requests)
    );
    assert_no_state(&p);
    assert_eq!(p.client(a).state(), ClientState::Requesting);

    // A second earlier it is still good. (The server started two seconds before and
    // expects tokens to live a second: by the restart rule, it takes this one for
    // one made after its start.)
    let mut p = Pair::at_unix(4, SIM_UNIX_TIME + lifetime - 2, |c| {
        c.max_token_lifetime = Duration::from_secs(1);
    });
    p.run(1.0);
    let a = p.add(1);
    p.connect(a);
    assert_eq!(p.counters().requests_dropped_expired, 0);
}

#[test]
fn the_client_gives_up_when_its_token_expires_during_the_handshake() {
    // The server started a second before the token was made, and expects tokens of
    // 3 s (the restart rule).
    let mut p = Pair::at_unix(4, SIM_UNIX_TIME - 1, |c| {
        c.max_token_lifetime = Duration::from_secs(3);
    });
    p.backend.expire_seconds = 3; // less than the 5-second timeout
    let a = p.add(1);
    // The challenge arrives; the server's keep-alives (the handshake's last step)
    // never do, so the client keeps sending its response.
    p.filter = Some(Box::new(|from, _, bytes| {
        from == SERVER && bytes[0] & 0x0f == PacketType::KeepAlive.id()
    }));
    p.run(2.9);
    assert_eq!(p.client(a).state(), ClientState::Responding);
    p.run(0.2);
    assert_eq!(
        p.client(a).state(),
        ClientState::Disconnected(DisconnectReason::TokenExpired)
    );
    assert_eq!(
        p.events_of(a),
        vec![ClientEvent::Disconnected {
            reason: DisconnectReason::TokenExpired
        }]
    );
    // Nothing more goes out.
    let sent = p.sent_by(a).len();
    p.run(1.0);
    assert_eq!(p.sent_by(a).len(), sent);
}

// 4. ---------------------------------------------------------------------------------

#[test]
fn a_token_for_another_server_is_ignored() {
    let mut p = Pair::new(4);
    // A genuine token (same key, same protocol) naming another server only.
    let token = p.backend.token(1, NodeId(9));
    assert_ne!(sim_address(NodeId(9)), sim_address(SERVER));
    let a = p.add_with(1, &token);
    p.run(1.0);
    let requests = p.sent_by(a).len() as u64;
    assert!(requests >= 8, "{requests}");
    assert_eq!(
        p.counters(),
        only_requests(requests, |c| c.requests_dropped_wrong_server = requests)
    );
    assert_no_state(&p);
}

// 5. ---------------------------------------------------------------------------------

#[test]
fn a_token_used_from_a_second_address_is_ignored_while_the_first_is_connected() {
    let mut p = Pair::new(4);
    let token = p.token(1);
    let a = p.add_with(1, &token);
    let id = p.connect(a);
    assert_eq!(p.server.remembered_tokens(), 1);
    // A thief replays the token from another address.
    let thief = p.add_with(2, &token);
    p.run(1.0);
    let requests = p.sent_by(thief).len() as u64;
    assert!(requests >= 8, "{requests}");
    let c = p.counters();
    assert_eq!(c.requests_dropped_token_reused, requests);
    assert_eq!((c.challenges_sent, c.clients_accepted), (1, 1));
    assert_eq!(p.client(thief).state(), ClientState::Requesting);
    assert!(p.server_sent(thief, PacketType::Challenge).is_empty());
    assert_eq!(p.server.pending_handshakes(), 0);
    assert_eq!(p.server.connected_clients(), 1);
    assert_eq!(p.server.client_address(id), Some(a));
    assert!(p.client(a).is_connected());
}

#[test]
fn a_token_used_from_a_second_address_is_ignored_mid_handshake() {
    let mut p = Pair::new(4);
    let token = p.token(1);
    let a = p.add_with(1, &token);
    // The owner's responses are lost: its handshake stays in progress.
    p.filter = Some(Box::new(move |from, _, bytes| {
        from == a && bytes[0] & 0x0f == PacketType::Response.id()
    }));
    p.step(TICK);
    assert_eq!(p.client(a).state(), ClientState::Responding);
    assert_eq!(p.server.pending_handshakes(), 1);
    let thief = p.add_with(2, &token);
    p.run(1.0);
    let requests = p.sent_by(thief).len() as u64;
    assert!(requests >= 8, "{requests}");
    let c = p.counters();
    assert_eq!(c.requests_dropped_token_reused, requests);
    assert_eq!(c.challenges_sent, 1);
    assert!(p.server_sent(thief, PacketType::Challenge).is_empty());
    assert_eq!(p.server.pending_handshakes(), 1);
    assert_eq!(p.server.remembered_tokens(), 1);
    // The owner completes once its responses get through.
    p.filter = None;
    p.connect(a);
    assert_eq!(p.counters().clients_accepted, 1);
    assert_eq!(p.client(thief).state(), ClientState::Requesting);
}

#[test]
fn a_token_is_spent_when_its_session_ends() {
    let mut p = Pair::new(4);
    let token = p.token(1);
    let a = p.add_with(1, &token);
    p.connect(a);
    let now = p.now;
    p.client(a).disconnect(Time::from_secs_f64(now));
    p.deliver();
    assert_eq!(p.server.connected_clients(), 0);
    // The same token again, from the same address, by a new client.
    p.clients.clear();
    let again = p.add_with(1, &token);
    assert_eq!(again, a);
    let before = p.counters();
    let earlier = p.sent_by(a).len();
    p.run(1.0);
    let requests = p.sent_by(a).len() - earlier;
    assert!(requests >= 7, "{requests}");
    let c = p.counters();
    assert_eq!(c.requests_dropped_token_reused, requests as u64);
    assert_eq!(c.challenges_sent, before.challenges_sent);
    assert_eq!(c.clients_accepted, 1);
    assert_eq!(p.server.connected_clients(), 0);
    assert_eq!(p.server.pending_handshakes(), 0);
    assert_eq!(p.client(a).state(), ClientState::Requesting);
    // A fresh token for the same user connects.
    p.clients.clear();
    let fresh = p.token(1);
    let a = p.add_with(1, &fresh);
    p.connect(a);
}

// 6. ---------------------------------------------------------------------------------

#[test]
fn a_replayed_packet_is_delivered_once() {
    let mut p = Pair::new(4);
    let a = p.add(1);
    let id = p.connect(a);
    let now = p.now;
    p.client(a)
        .send(Time::from_secs_f64(now), b"once")
        .expect("connected");
    p.deliver();
    let captured = p.sent_by(a).last().expect("sent").to_vec();
    assert_eq!(captured[0] & 0x0f, PacketType::Payload.id());
    let once = |p: &Pair| p.to_server.iter().filter(|d| d.1 == b"once").count();
    assert_eq!(once(&p), 1);
    let before = p.counters();

    p.inject(a, &captured);
    assert_eq!(
        p.counters().datagrams_dropped_replayed,
        before.datagrams_dropped_replayed + 1
    );
    for _ in 0..1000 {
        p.inject(a, &captured);
    }
    assert_eq!(
        p.counters().datagrams_dropped_replayed,
        before.datagrams_dropped_replayed + 1001
    );
    // 300 newer packets: the captured one is now older than the replay window.
    for i in 0..300u32 {
        p.client(a)
            .send(Time::from_secs_f64(now), &i.to_le_bytes())
            .expect("connected");
    }
    p.deliver();
    assert_eq!(p.to_server.len(), 301);
    p.inject(a, &captured);
    let c = p.counters();
    assert_eq!(
        c.datagrams_dropped_replayed,
        before.datagrams_dropped_replayed + 1002
    );
    assert_eq!(once(&p), 1);
    // Nothing else moved, and the connection goes on.
    let clear = |c: &mut ServerStats| {
        c.datagrams_received = 0;
        c.datagrams_dropped_replayed = 0;
    };
    assert_eq!(without(c, clear), without(before, clear));
    assert_eq!(c.datagrams_received, before.datagrams_received + 1002 + 300);
    p.run(1.0);
    let now = p.now;
    p.client(a)
        .send(Time::from_secs_f64(now), b"after")
        .expect("connected");
    p.deliver();
    assert_eq!(p.to_server.last().map(|d| &d.1[..]), Some(&b"after"[..]));
    assert_eq!(p.server.client_id(&a), Some(id));
    assert!(p.client(a).is_connected());
}

// 7. ---------------------------------------------------------------------------------

/// `forged` packets to inject before the genuine `bytes` (a keep-alive or payload from
/// the client, not yet received): half are `bytes` with one bit flipped after the
/// sequence (body or tag: the same sequence, which the genuine packet must still
/// open with), half forged from random bytes with a valid prefix (payload, keep-alive
/// or disconnect), a sequence ahead of anything sent and a random tag.
fn forge(rng: &mut Rng, bytes: &[u8], forged: usize) -> Vec<Vec<u8>> {
    let kind = bytes[0] & 0x0f;
    if kind != PacketType::KeepAlive.id() && kind != PacketType::Payload.id() {
        return Vec::new();
    }
    (0..forged)
        .map(|i| {
            if i % 2 == 0 {
                let mut copy = bytes.to_vec();
                let start = 1 + usize::from(copy[0] >> 4);
                let at = start + rng.below((copy.len() - start) as u64) as usize;
                copy[at] ^= 1 << rng.below(8);
                copy
            } else {
                let (kind, body) = match rng.below(3) {
                    0 => (PacketType::Payload, 1 + rng.below(200) as usize),
                    1 => (PacketType::KeepAlive, 8),
                    _ => (PacketType::Disconnect, 0),
                };
                let mut copy = vec![0u8; 1 + 8 + body + 16];
                rng.fill_bytes(&mut copy);
                copy[0] = kind.id() | (8 << 4);
                // A sequence in 2^40..2^41: never a replay.
                copy[6] = 1;
                copy[7] = 0;
                copy[8] = 0;
                copy
            }
        })
        .collect()
}

/// A client plays for 200 ticks (a payload each way every tick); `forged` packets come
/// from its address before each of its keep-alives and payloads.
fn play(forged: usize) -> Pair {
    let mut p = Pair::new(4);
    let a = p.add(1);
    let id = p.connect(a);
    let mut rng = Rng::new(5);
    p.tamper = Some(Box::new(move |bytes| forge(&mut rng, bytes, forged)));
    for tick in 0..200u32 {
        let now = p.now;
        p.client(a)
            .send(Time::from_secs_f64(now), &tick.to_le_bytes())
            .expect("connected");
        p.server
            .send(Time::from_secs_f64(now), id, &(!tick).to_le_bytes())
            .expect("connected");
        p.step(TICK);
    }
    p
}

#[test]
fn forged_packets_from_a_connected_address_change_nothing() {
    let mut clean = play(0);
    let mut attacked = play(20);
    let a = NodeId(1);
    let sealed = attacked
        .sent_by(a)
        .iter()
        .filter(|d| [4, 5].contains(&(d[0] & 0x0f)))
        .count() as u64;
    assert!(sealed >= 200, "{sealed}");
    let forged = 20 * sealed;
    assert!(attacked.client(a).is_connected());
    assert_eq!(attacked.server.client_id(&a), Some(ClientId(0)));
    assert_eq!(attacked.to_server, clean.to_server, "same deliveries");
    assert_eq!(attacked.to_server.len(), 200);
    assert_eq!(attacked.to_client, clean.to_client);
    assert_eq!(attacked.wire.len(), clean.wire.len());
    let first_difference = attacked
        .wire
        .iter()
        .zip(&clean.wire)
        .position(|(x, y)| x != y);
    if let Some(i) = first_difference {
        panic!(
            "differ at {i}: {:?} vs {:?}",
            &attacked.wire[i.saturating_sub(1)..=i],
            &clean.wire[i.saturating_sub(1)..=i]
        );
    }
    assert_eq!(attacked.server_events, clean.server_events);
    assert_eq!(attacked.events_of(a), clean.events_of(a));
    let (c, d) = (clean.counters(), attacked.counters());
    assert_eq!(d.datagrams_dropped_unauthenticated, forged);
    assert_eq!(d.datagrams_received, c.datagrams_received + forged);
    let clear = |c: &mut ServerStats| {
        c.datagrams_received = 0;
        c.datagrams_dropped_unauthenticated = 0;
    };
    assert_eq!(without(d, clear), without(c, clear));
    assert_eq!(c.datagrams_dropped_unauthenticated, 0);
    assert_eq!(
        attacked.server.stats(ClientId(0)).map(|l| l.endpoint),
        clean.server.stats(ClientId(0)).map(|l| l.endpoint)
    );
    // And the connection lives on.
    attacked.run(1.0);
    clean.run(1.0);
    assert!(attacked.client(a).is_connected());
    assert_eq!(attacked.server.connected_clients(), 1);
}

// 9. ---------------------------------------------------------------------------------

#[test]
fn a_full_server_denies_with_a_reply_smaller_than_the_request() {
    let mut p = Pair::new(2);
    let a = p.add(1);
    let b = p.add(2);
    p.connect(a);
    p.connect(b);
    let c = p.add(3);
    p.run(1.0);
    assert_eq!(
        p.client(c).state(),
        ClientState::Denied(DenyReason::ServerFull)
    );
    assert_eq!(
        p.events_of(c),
        vec![ClientEvent::Denied {
            reason: DenyReason::ServerFull
        }]
    );
    let counters = p.counters();
    assert_eq!(counters.denials_sent, 1);
    assert_eq!(counters.challenges_sent, 2);
    assert_eq!(p.server.connected_clients(), 2);
    // One request, one denial; the client stops asking.
    let requests = p.sent_by(c);
    assert_eq!(requests.len(), 1);
    let denials = p.server_sent(c, PacketType::Denied);
    assert_eq!(denials.len(), 1);
    assert!(denials[0].len() < requests[0].len());
    assert!(p.client(a).is_connected() && p.client(b).is_connected());
}

// 10. --------------------------------------------------------------------------------

#[test]
fn no_reply_is_larger_than_the_datagram_that_caused_it() {
    // One slot, two clients at once: both are challenged, the first response takes
    // the slot, the second is denied. `Pair::to_server` checks every reply's size.
    let mut p = Pair::new(1);
    let a = p.add(1);
    let b = p.add(2);
    p.step(TICK);
    assert!(p.client(a).is_connected());
    assert_eq!(
        p.client(b).state(),
        ClientState::Denied(DenyReason::ServerFull)
    );
    let c = p.counters();
    assert_eq!((c.challenges_sent, c.denials_sent), (2, 1));
    let request = p.sent_by(b)[0].len();
    let response = p.sent_by(b)[1].len();
    let challenge = p.server_sent(b, PacketType::Challenge)[0].len();
    let keep_alive = p.server_sent(a, PacketType::KeepAlive)[0].len();
    let denied = p.server_sent(b, PacketType::Denied)[0].len();
    assert_eq!(request, CONNECTION_REQUEST_BYTES);
    assert!(
        challenge < request,
        "challenge {challenge}, request {request}"
    );
    assert!(keep_alive < response, "keep-alive {keep_alive}");
    assert!(denied < response, "denied {denied}, response {response}");
    // A denial to a request (full already).
    let d = p.add(3);
    p.step(TICK);
    assert_eq!(p.counters().denials_sent, 2);
    let denied = p.server_sent(d, PacketType::Denied)[0].len();
    assert!(denied < p.sent_by(d)[0].len());
    assert!(p.bytes_out < p.bytes_in);
}

// 11. --------------------------------------------------------------------------------

#[test]
fn a_protocol_id_mismatch_is_refused_by_the_client_and_ignored_by_the_server() {
    let mut backend = SimBackend::new(PROTOCOL, 1);
    let token = backend.token(1, SERVER);
    let err = Client::new(
        ConnectionConfig::new(PROTOCOL ^ 1),
        &token,
        SERVER,
        Time::ZERO,
    )
    .expect_err("another build");
    assert_eq!(
        err,
        ConnectionConfigError::ProtocolMismatch {
            token: PROTOCOL,
            ours: PROTOCOL ^ 1
        }
    );

    // A server of another build ignores the requests.
    let mut p = Pair::with(4, |config| config.connection.protocol_id = PROTOCOL ^ 1);
    let a = p.add(1);
    p.run(1.0);
    let requests = p.sent_by(a).len() as u64;
    assert!(requests >= 8, "{requests}");
    assert_eq!(
        p.counters(),
        only_requests(requests, |c| c.requests_dropped_wrong_protocol = requests)
    );
    assert_no_state(&p);
}

#[test]
fn an_unusual_token_is_refused_by_the_client() {
    // A timeout beyond what the client accepts, 0 (no meaning in the standard), or
    // none at all (-1) when the configuration refuses it.
    let key = Key::from_bytes([3; 32]);
    let token = |timeout_seconds| {
        let mut params = TokenParams::new(PROTOCOL, 1, vec![sim_address(SERVER)]);
        params.timeout_seconds = timeout_seconds;
        generate_connect_token_with(
            &params,
            &key,
            SIM_UNIX_TIME,
            SIM_UNIX_TIME + 60,
            [1; 24],
            Key::from_bytes([4; 32]),
            Key::from_bytes([5; 32]),
        )
        .expect("token")
    };
    let strict = ConnectionConfig {
        allow_no_timeout: false,
        ..ConnectionConfig::new(PROTOCOL)
    };
    for (config, timeout_seconds) in [
        (ConnectionConfig::new(PROTOCOL), 0),
        (ConnectionConfig::new(PROTOCOL), 61),
        (strict.clone(), -1),
        (strict, i32::MIN),
    ] {
        assert!(matches!(
            Client::new(config, &token(timeout_seconds), SERVER, Time::ZERO),
            Err(ConnectionConfigError::TokenTimeout { seconds, .. }) if seconds == timeout_seconds
        ));
    }
    // No timeout is the standard's "negative values disable timeout": accepted by
    // default.
    for timeout_seconds in [-1, i32::MIN] {
        let client = Client::new(
            ConnectionConfig::new(PROTOCOL),
            &token(timeout_seconds),
            SERVER,
            Time::ZERO,
        );
        assert!(client.is_ok(), "{timeout_seconds}");
    }
}

// 12. --------------------------------------------------------------------------------

#[test]
fn keep_alives_hold_an_idle_connection_and_a_silent_one_times_out() {
    let mut p = Pair::new(1);
    let a = p.add(1);
    let id = p.connect(a);
    // 12 s without a payload, more than twice the 5-second timeout.
    p.run(12.0);
    assert!(p.client(a).is_connected());
    assert_eq!(p.server.connected_clients(), 1);
    assert!(p.to_server.is_empty() && p.to_client.is_empty());
    let keep_alives = p
        .sent_by(a)
        .iter()
        .filter(|d| d[0] & 0x0f == PacketType::KeepAlive.id())
        .count();
    // One every 0.125 s (the 0.1-second interval, on the tick).
    assert_eq!(keep_alives, 96);
    assert_eq!(p.counters().clients_timed_out, 0);

    // The client goes silent (its machine crashed): the server hears nothing more.
    p.filter = Some(Box::new(move |from, _, _| from == a));
    p.run(4.9);
    assert_eq!(p.server.connected_clients(), 1, "not before the timeout");
    p.run(0.2);
    assert_eq!(p.server.connected_clients(), 0);
    assert_eq!(p.counters().clients_timed_out, 1);
    assert_eq!(
        p.server_events.last(),
        Some(&ServerEvent::Disconnected {
            client: id,
            address: a,
            reason: DisconnectReason::TimedOut
        })
    );
    // The server stopped sending: the client times out too.
    p.run(5.0);
    assert_eq!(
        p.client(a).state(),
        ClientState::Disconnected(DisconnectReason::TimedOut)
    );

    // The freed slot takes a new token.
    p.filter = None;
    let b = p.add(2);
    assert_eq!(p.connect(b), id);
    assert_eq!(p.counters().clients_accepted, 2);
}

#[test]
fn congestion_avoidance_paces_payloads() {
    let mut p = Pair::new(1);
    let a = p.add(1);
    let id = p.connect(a);
    let now = p.now;
    // A new connection starts in good mode: 30 packets per second, with one packet
    // of credit after a pause (two at once), then one every 1/30 s.
    assert_eq!(
        p.client(a).congestion().expect("connected").mode(),
        Mode::Good
    );
    for _ in 0..2 {
        assert!(p.client(a).ready_to_send(Time::from_secs_f64(now)));
        assert!(p.server.ready_to_send(Time::from_secs_f64(now), id));
        p.client(a)
            .send(Time::from_secs_f64(now), b"x")
            .expect("connected");
        p.server
            .send(Time::from_secs_f64(now), id, b"y")
            .expect("connected");
    }
    assert!(!p.client(a).ready_to_send(Time::from_secs_f64(now)));
    assert!(!p.client(a).ready_to_send(Time::from_secs_f64(now + 0.033)));
    assert!(!p.server.ready_to_send(Time::from_secs_f64(now + 0.033), id));
    assert!(
        p.client(a)
            .ready_to_send(Time::from_secs_f64(now + 1.0 / 30.0))
    );
    assert!(
        p.server
            .ready_to_send(Time::from_secs_f64(now + 1.0 / 30.0), id)
    );
    // Not connected: never ready.
    assert!(
        !p.server
            .ready_to_send(Time::from_secs_f64(now + 1.0), ClientId(3))
    );
}

// On the simulator ------------------------------------------------------------------

#[test]
fn clients_connect_through_loss_duplicates_and_reordering() {
    let mut backend = SimBackend::new(PROTOCOL, 3);
    let mut config = backend.server_config(SERVER);
    config.max_clients = 8;
    let mut server = Server::new(config, Time::ZERO, SIM_UNIX_TIME).expect("valid");
    let mut net = Network::new(11);
    net.set_default_link(
        LinkConfig::default()
            .with_latency(Duration::from_millis(50))
            .with_jitter(Duration::from_millis(20))
            .with_loss(0.3)
            .with_duplicates(0.2)
            .with_reordering(0.2, Duration::from_millis(50)),
    );
    let mut clients: Vec<(NodeId, Client<NodeId>)> = (1..=8u32)
        .map(|n| {
            let token = backend.token(u64::from(n), SERVER);
            let client = Client::new(ConnectionConfig::new(PROTOCOL), &token, SERVER, Time::ZERO)
                .expect("valid");
            (NodeId(n), client)
        })
        .collect();
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut connected_events = 0;
    let mut now = 0.0;
    for _ in 0..(64.0 / TICK) as usize {
        now += TICK;
        while let Some(d) = net.poll(Time::from_secs_f64(now)) {
            if d.to == SERVER {
                if let Some(delivery) =
                    server.handle_datagram(Time::from_secs_f64(now), d.from, &d.payload)
                {
                    delivery.accept();
                }
            } else if let Some((_, c)) = clients.iter_mut().find(|(n, _)| *n == d.to) {
                c.handle_datagram(Time::from_secs_f64(now), d.from, &d.payload);
            }
        }
        server.update(Time::from_secs_f64(now));
        while let Some((to, len)) = server.poll_transmit(&mut buf) {
            net.send(Time::from_secs_f64(now), SERVER, to, &buf[..len]);
        }
        while let Some(e) = server.poll_event() {
            if matches!(e, ServerEvent::Connected { .. }) {
                connected_events += 1;
            }
        }
        for (node, c) in &mut clients {
            c.update(Time::from_secs_f64(now));
            while let Some((to, len)) = c.poll_transmit(&mut buf) {
                net.send(Time::from_secs_f64(now), *node, to, &buf[..len]);
            }
        }
    }
    // Keep-alives held the connections open for a minute through the loss.
    for (node, c) in &clients {
        assert!(c.is_connected(), "{node:?}: {:?}", c.state());
    }
    assert_eq!(server.connected_clients(), 8);
    assert_eq!(connected_events, 8, "each client accepted once");
    let counters = server.server_stats();
    assert_eq!(counters.clients_accepted, 8);
    assert_eq!(counters.clients_timed_out, 0);
    assert_eq!(counters.datagrams_dropped_unauthenticated, 0);
    assert!(
        counters.datagrams_dropped_replayed > 0,
        "duplicates are replays"
    );
}

/// The packet endpoint's sequence is 16 bits and wraps; the connection's 64-bit
/// sequence does not. A payload captured early and replayed after the endpoint's
/// sequence went all the way round (70,000 packets later, when the endpoint would
/// take sequence 4464 again as new) is refused by the replay window before the
/// endpoint sees it.
#[test]
fn a_packet_replayed_after_the_endpoint_sequence_wraps_is_refused() {
    const S: u8 = 0;
    const C: u8 = 1;
    let mut backend = SimBackend::new(0xabc, 3);
    let mut server: Server<u8> =
        Server::new(backend.server_config(NodeId(0)), Time::ZERO, SIM_UNIX_TIME).expect("valid");
    let token = backend.token(1, NodeId(0));
    let mut client =
        Client::new(ConnectionConfig::new(0xabc), &token, S, Time::ZERO).expect("valid");
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut now = 0.0;
    while !client.is_connected() {
        now += 0.05;
        client.update(Time::from_secs_f64(now));
        server.update(Time::from_secs_f64(now));
        while let Some((_, len)) = client.poll_transmit(&mut buf) {
            server.handle_datagram(Time::from_secs_f64(now), C, &buf[..len]);
        }
        while let Some((_, len)) = server.poll_transmit(&mut buf) {
            client.handle_datagram(Time::from_secs_f64(now), S, &buf[..len]);
        }
        assert!(now < 5.0, "no connection");
    }
    let mut captured = None;
    let mut delivered = 0u64;
    for i in 0..70_000u32 {
        // 1 ms apart: the server hears from the client throughout.
        now += 0.001;
        client
            .send(Time::from_secs_f64(now), &i.to_le_bytes())
            .expect("connected");
        while let Some((_, len)) = client.poll_transmit(&mut buf) {
            if i == 4464 {
                captured = Some(buf[..len].to_vec());
            }
            if let Some(d) = server.handle_datagram(Time::from_secs_f64(now), C, &buf[..len]) {
                assert_eq!(d.payload(), i.to_le_bytes());
                d.accept();
                delivered += 1;
            }
        }
        if i % 64 == 0 {
            // Keep-alives both ways keep the connection up.
            server.update(Time::from_secs_f64(now));
            client.update(Time::from_secs_f64(now));
            while let Some((_, len)) = client.poll_transmit(&mut buf) {
                server.handle_datagram(Time::from_secs_f64(now), C, &buf[..len]);
            }
            while let Some((_, len)) = server.poll_transmit(&mut buf) {
                client.handle_datagram(Time::from_secs_f64(now), S, &buf[..len]);
            }
        }
    }
    assert_eq!(delivered, 70_000);
    let id = server.client_id(&C).expect("connected");
    // Endpoint sequence 4464 + 65536 = 70000: the next packet's, so a replay of 4464's
    // datagram would carry a sequence the endpoint has not seen in this wrap.
    let replayed_before = server.server_stats().datagrams_dropped_replayed;
    let captured = captured.expect("captured");
    assert!(
        server
            .handle_datagram(Time::from_secs_f64(now), C, &captured)
            .is_none(),
        "not delivered"
    );
    assert_eq!(
        server.server_stats().datagrams_dropped_replayed,
        replayed_before + 1
    );
    assert_eq!(server.client_id(&C), Some(id), "still connected");
}

/// Hands `server` the connection request of `token` from `from` at `now`, and opens
/// its reply (of a type in `allowed`) with the token's key: (sequence, the challenge
/// token's sequence if a challenge). `None` when the server did not answer.
fn reply_to_request(
    server: &mut Server<NodeId>,
    now: f64,
    from: NodeId,
    token: &ConnectToken,
    allowed: AllowedPackets,
) -> Option<(u64, Option<u64>)> {
    let request = netproto_tests::sealer::request(token);
    let now = Time::from_secs_f64(now);
    assert!(server.handle_datagram(now, from, &request).is_none());
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let (to, len) = server.poll_transmit(&mut buf)?;
    assert_eq!(to, from);
    let (sequence, packet) = read_packet(
        &mut buf[..len],
        token.protocol_id,
        SIM_UNIX_TIME,
        Some(&token.server_to_client_key),
        allowed,
        None,
    )
    .expect("a reply sealed with the token's key");
    let challenge = match packet {
        Packet::Challenge { token_sequence, .. } => Some(token_sequence),
        _ => None,
    };
    Some((sequence, challenge))
}

#[test]
fn packets_outside_a_session_take_increasing_sequences_in_the_upper_half() {
    // A full server: the first client's challenge, then a denial for each of two
    // others, all three sealed under the server's global sequence.
    let mut p = Pair::new(1);
    p.add(7);
    p.step(TICK);
    let mut sequences = Vec::new();
    for node in [8, 9] {
        let token = p.token(node);
        let denied = AllowedPackets::NONE.with(PacketType::Denied);
        let (sequence, _) =
            reply_to_request(&mut p.server, p.now, NodeId(node as u32), &token, denied)
                .expect("a denial");
        sequences.push(sequence);
    }
    assert_eq!(sequences, [(1 << 63) + 1, (1 << 63) + 2]);
}

#[test]
fn a_full_handshake_table_replaces_the_first_after_its_grace_and_challenges_take_new_sequences() {
    let mut backend = SimBackend::new(0xfeed, 8);
    let mut config = backend.server_config(SERVER);
    config.max_clients = 1;
    config.pending_handshakes = 1;
    let mut server: Server<NodeId> = Server::new(config, Time::ZERO, SIM_UNIX_TIME).expect("valid");
    // Each request's challenge: the token sequence it carries.
    let mut challenge = |server: &mut Server<NodeId>, now: f64, user: u64| {
        let token = backend.token(user, SERVER);
        let allowed = AllowedPackets::NONE.with(PacketType::Challenge);
        let (_, token_sequence) =
            reply_to_request(server, now, NodeId(user as u32), &token, allowed)?;
        Some(token_sequence.expect("a challenge"))
    };
    assert_eq!(challenge(&mut server, 0.0, 1), Some(0));
    // The table is full and its handshake younger than a second: busy, no reply.
    assert_eq!(challenge(&mut server, 0.5, 2), None);
    assert_eq!(server.server_stats().requests_dropped_busy, 1);
    // After a second, the first handshake is replaced; the challenge token takes
    // the next sequence (its nonce under the challenge key).
    assert_eq!(challenge(&mut server, 1.5, 3), Some(1));
    let c = server.server_stats();
    assert_eq!((c.handshakes_replaced, c.challenges_sent), (1, 2));
    assert_eq!(server.pending_handshakes(), 1);
}

#[test]
fn a_player_already_connected_cannot_take_a_second_slot() {
    let mut p = Pair::new(4);
    let a = p.add(7);
    p.step(TICK);
    assert!(p.client(a).is_connected());
    // Another token of the same player, from another address.
    let token = p.token(7);
    let b = p.add_with(8, &token);
    for _ in 0..10 {
        p.step(TICK);
    }
    assert!(
        p.client(b).is_connecting(),
        "no answer while the first is connected"
    );
    assert_eq!(p.server.connected_clients(), 1);
    let c = p.counters();
    assert!(c.requests_dropped_already_connected > 0, "{c:?}");
    assert_eq!(c.challenges_sent, 1, "only the first was challenged");
}

#[test]
fn the_server_counts_endpoint_refusals_and_protocol_errors() {
    let mut p = Pair::new(4);
    let token = p.token(7);
    let a = p.add_with(1, &token);
    p.step(TICK);
    let id = p.id(a);
    let now = Time::from_secs_f64(p.now);
    // Sealed with the client's key, refused by the packet endpoint (one byte: no
    // packet header), twice.
    let mut sealer = netproto_tests::sealer::Sealer::for_token(&token);
    sealer.sequence = 1000;
    for _ in 0..2 {
        let headless = sealer.seal(&Packet::Payload(&[0xff]));
        assert!(p.server.handle_datagram(now, a, &headless).is_none());
    }
    assert_eq!(p.counters().datagrams_dropped_by_endpoint, 2);
    assert_eq!(
        p.server.connected_clients(),
        1,
        "a refused packet ends nothing"
    );
    // The layer above finds the client's payload malformed.
    assert!(p.server.disconnect_for_protocol_error(id));
    assert_eq!(p.counters().clients_dropped_protocol_error, 1);
    assert!(!p.server.disconnect_for_protocol_error(id), "already gone");
    assert_eq!(p.counters().clients_dropped_protocol_error, 1);
}

#[test]
fn disconnect_all_ends_every_session_and_tells_each_client() {
    let mut p = Pair::new(4);
    let a = p.add(7);
    let b = p.add(8);
    p.step(TICK);
    assert_eq!(p.server.connected_clients(), 2);
    p.server.disconnect_all(Time::from_secs_f64(p.now));
    assert_eq!(p.server.connected_clients(), 0);
    p.deliver();
    for node in [a, b] {
        assert_eq!(
            p.client(node).state(),
            ClientState::Disconnected(DisconnectReason::PeerDisconnected)
        );
    }
}
