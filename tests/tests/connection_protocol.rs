//! The connection protocol on the simulator, in virtual time: connect, payloads,
//! disconnect, timeouts, full servers, protocol-id mismatch, and hostile input
//! (junk floods, spoofed and forged handshakes) that must not create client state.

use netproto::connection::{
    Client, ClientEvent, ClientId, ClientState, ConnectionConfig, DenyReason, DisconnectReason,
    Packet, Server, ServerConfig, ServerEvent, challenge_token, time_bucket,
};
use netproto::sim::{LinkConfig, Network, NodeId, Rng};

const PROTOCOL: u64 = 0x5eed_f00d_1234_5678;
const KEY: [u8; 16] = *b"0123456789abcdef";
const SERVER: NodeId = NodeId(0);
const TICK: f64 = 1.0 / 60.0;

/// A server, clients, and a simulated network between them.
struct World {
    net: Network,
    now: f64,
    server: Server<NodeId>,
    clients: Vec<(NodeId, Client<NodeId>)>,
    server_events: Vec<ServerEvent<NodeId>>,
    client_events: Vec<(NodeId, ClientEvent)>,
}

impl World {
    fn new(config: ServerConfig, link: LinkConfig) -> Self {
        let mut net = Network::new(1);
        net.set_default_link(link);
        Self {
            net,
            now: 0.0,
            server: Server::new(config, 0.0).expect("valid config"),
            clients: Vec::new(),
            server_events: Vec::new(),
            client_events: Vec::new(),
        }
    }

    fn with_slots(max_clients: usize) -> Self {
        let mut config = ServerConfig::new(ConnectionConfig::new(PROTOCOL), KEY);
        config.max_clients = max_clients;
        Self::new(config, LinkConfig::default().with_latency(0.03))
    }

    fn add_client(&mut self, node: u32, protocol_id: u64) -> NodeId {
        let id = NodeId(node);
        let client = Client::new(
            ConnectionConfig::new(protocol_id),
            SERVER,
            u64::from(node) * 0x9e37_79b9,
            self.now,
        )
        .expect("valid config");
        self.clients.push((id, client));
        id
    }

    fn client(&mut self, id: NodeId) -> &mut Client<NodeId> {
        &mut self
            .clients
            .iter_mut()
            .find(|(n, _)| *n == id)
            .expect("known client")
            .1
    }

    /// One tick: deliver what is due, update everyone, send what they queued.
    fn step(&mut self) {
        self.now += TICK;
        let now = self.now;
        while let Some(d) = self.net.poll(now) {
            if d.to == SERVER {
                self.server.handle_datagram(now, d.from, &d.payload);
            } else if let Some((_, c)) = self.clients.iter_mut().find(|(n, _)| *n == d.to) {
                c.handle_datagram(now, d.from, &d.payload);
            }
        }
        self.server.update(now);
        while let Some(t) = self.server.poll_transmit() {
            self.net.send(now, SERVER, t.to, &t.payload);
        }
        while let Some(e) = self.server.poll_event() {
            self.server_events.push(e);
        }
        for (node, c) in &mut self.clients {
            c.update(now);
            while let Some(t) = c.poll_transmit() {
                self.net.send(now, *node, t.to, &t.payload);
            }
            while let Some(e) = c.poll_event() {
                self.client_events.push((*node, e));
            }
        }
    }

    fn run(&mut self, seconds: f64) {
        let end = self.now + seconds;
        while self.now < end {
            self.step();
        }
    }

    fn client_events_of(&self, id: NodeId) -> Vec<ClientEvent> {
        self.client_events
            .iter()
            .filter(|(n, _)| *n == id)
            .map(|(_, e)| e.clone())
            .collect()
    }
}

#[test]
fn connect_exchange_payloads_and_disconnect() {
    let mut w = World::with_slots(4);
    let a = w.add_client(1, PROTOCOL);
    w.run(0.5);
    assert!(w.client(a).is_connected());
    assert_eq!(w.server.connected_clients(), 1);
    let id = w.server.client_id(&a).expect("connected");
    assert_eq!(w.client(a).client_id(), Some(id));
    assert_eq!(
        w.server_events,
        vec![ServerEvent::Connected {
            client: id,
            address: a
        }]
    );
    assert_eq!(
        w.client_events_of(a),
        vec![ClientEvent::Connected { client: id }]
    );

    // Payloads both ways, a few large enough to be fragmented.
    let mut sent = Vec::new();
    for i in 0..20u32 {
        let big = vec![i as u8; if i % 5 == 0 { 3000 } else { 10 }];
        let now = w.now;
        sent.push(w.client(a).send(now, &big).expect("connected"));
        w.server
            .send(w.now, id, &i.to_le_bytes())
            .expect("connected");
        w.step();
    }
    w.run(0.5);
    let to_server: Vec<Vec<u8>> = w
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Payload { payload, .. } => Some(payload.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(to_server.len(), 20);
    assert_eq!(to_server[5], vec![5u8; 3000]);
    let to_client: Vec<Vec<u8>> = w
        .client_events_of(a)
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::Payload { payload, .. } => Some(payload),
            _ => None,
        })
        .collect();
    let expected: Vec<Vec<u8>> = (0..20u32).map(|i| i.to_le_bytes().to_vec()).collect();
    assert_eq!(to_client, expected);
    // 60 ms of round trip, plus the time a packet waits to be acked by the next
    // packet the other side sends (at most a keep-alive interval, 100 ms).
    // Each payload packet is reported acked once (the acks of one packet newest
    // first); keep-alives are not.
    let mut acked: Vec<_> = w
        .client_events_of(a)
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::PacketAcked { sequence } => Some(sequence),
            _ => None,
        })
        .collect();
    acked.sort_by_key(|s| s.get());
    assert_eq!(acked, sent);
    let server_acked = w
        .server_events
        .iter()
        .filter(|e| matches!(e, ServerEvent::PacketAcked { .. }))
        .count();
    assert_eq!(server_acked, 20);
    let rtt = w.client(a).stats().expect("connected").rtt_ms;
    assert!((55.0..=170.0).contains(&rtt), "rtt {rtt}");

    // The client disconnects; both sides see it and the slot is free.
    let now = w.now;
    w.client(a).disconnect(now);
    w.run(0.2);
    assert_eq!(
        w.client(a).state(),
        ClientState::Disconnected(DisconnectReason::Local)
    );
    assert!(w.client_events_of(a).contains(&ClientEvent::Disconnected {
        reason: DisconnectReason::Local
    }));
    assert_eq!(
        w.server_events.last(),
        Some(&ServerEvent::Disconnected {
            client: id,
            address: a,
            reason: DisconnectReason::PeerDisconnected
        })
    );
    assert_eq!(w.server.connected_clients(), 0);
}

#[test]
fn server_disconnect_is_seen_by_the_client_despite_loss() {
    let mut config = ServerConfig::new(ConnectionConfig::new(PROTOCOL), KEY);
    config.max_clients = 2;
    // Half the datagrams are lost: 3 copies of the disconnect make it through 7 in 8
    // times; the seed is fixed, and the run is deterministic.
    let mut w = World::new(
        config,
        LinkConfig::default().with_latency(0.02).with_loss(0.5),
    );
    let a = w.add_client(1, PROTOCOL);
    w.run(3.0);
    assert!(w.client(a).is_connected());
    let id = w.server.client_id(&a).expect("connected");
    assert!(w.server.disconnect(w.now, id));
    assert!(!w.server.disconnect(w.now, id), "only once");
    w.run(0.5);
    assert_eq!(
        w.client(a).state(),
        ClientState::Disconnected(DisconnectReason::PeerDisconnected)
    );
    assert!(w.server_events.contains(&ServerEvent::Disconnected {
        client: id,
        address: a,
        reason: DisconnectReason::Local
    }));
    assert_eq!(w.server.connected_clients(), 0);
}

#[test]
fn connects_through_loss_duplicates_and_reordering() {
    let mut config = ServerConfig::new(ConnectionConfig::new(PROTOCOL), KEY);
    config.max_clients = 8;
    let link = LinkConfig::default()
        .with_latency(0.05)
        .with_jitter(0.02)
        .with_loss(0.3)
        .with_duplicates(0.2)
        .with_reordering(0.2, 0.05);
    let mut w = World::new(config, link);
    let nodes: Vec<NodeId> = (1..=8).map(|n| w.add_client(n, PROTOCOL)).collect();
    w.run(4.0);
    for &n in &nodes {
        assert!(w.client(n).is_connected(), "{n:?}");
    }
    assert_eq!(w.server.connected_clients(), 8);
    // Keep-alives hold the connections open for a minute of virtual time.
    w.run(60.0);
    assert_eq!(w.server.connected_clients(), 8);
    let connected = w
        .server_events
        .iter()
        .filter(|e| matches!(e, ServerEvent::Connected { .. }))
        .count();
    assert_eq!(connected, 8, "each client accepted once");
}

#[test]
fn timeout_frees_the_slot() {
    let mut w = World::with_slots(1);
    let a = w.add_client(1, PROTOCOL);
    w.run(0.5);
    assert!(w.client(a).is_connected());
    // The client vanishes (its machine crashed): the link to the server goes dead.
    w.net
        .set_link(a, SERVER, LinkConfig::default().with_loss(1.0));
    w.run(4.5);
    assert_eq!(w.server.connected_clients(), 1, "not before the timeout");
    w.run(0.6);
    assert_eq!(w.server.connected_clients(), 0);
    assert!(matches!(
        w.server_events.last(),
        Some(ServerEvent::Disconnected {
            reason: DisconnectReason::TimedOut,
            ..
        })
    ));
    assert_eq!(w.server.counters().clients_timed_out, 1);
    // The client times out too: the server freed the session and stopped sending.
    w.run(5.0);
    assert_eq!(
        w.client(a).state(),
        ClientState::Disconnected(DisconnectReason::TimedOut)
    );
    // The freed slot takes a new client.
    let b = w.add_client(2, PROTOCOL);
    w.run(0.5);
    assert!(w.client(b).is_connected());
}

#[test]
fn full_server_denies() {
    let mut w = World::with_slots(2);
    let a = w.add_client(1, PROTOCOL);
    let b = w.add_client(2, PROTOCOL);
    w.run(0.5);
    let c = w.add_client(3, PROTOCOL);
    w.run(0.5);
    assert!(w.client(a).is_connected() && w.client(b).is_connected());
    assert_eq!(
        w.client(c).state(),
        ClientState::Denied(DenyReason::ServerFull)
    );
    assert_eq!(
        w.client_events_of(c),
        vec![ClientEvent::Denied {
            reason: DenyReason::ServerFull,
            server_protocol_id: PROTOCOL
        }]
    );
    assert_eq!(w.server.connected_clients(), 2);
}

#[test]
fn protocol_id_mismatch_is_denied_with_the_reason() {
    let mut w = World::with_slots(2);
    let other = PROTOCOL ^ 1;
    let a = w.add_client(1, other);
    w.run(0.5);
    assert_eq!(
        w.client(a).state(),
        ClientState::Denied(DenyReason::ProtocolMismatch)
    );
    let events = w.client_events_of(a);
    assert_eq!(
        events,
        vec![ClientEvent::Denied {
            reason: DenyReason::ProtocolMismatch,
            server_protocol_id: PROTOCOL
        }]
    );
    assert!(
        DenyReason::ProtocolMismatch
            .to_string()
            .contains("protocol id mismatch")
    );
    assert_eq!(w.server.connected_clients(), 0);
    assert!(w.server_events.is_empty());
}

#[test]
fn handshake_times_out_without_a_server() {
    let mut w = World::with_slots(1);
    w.net
        .set_link(NodeId(1), SERVER, LinkConfig::default().with_loss(1.0));
    let a = w.add_client(1, PROTOCOL);
    w.run(5.1);
    assert_eq!(
        w.client(a).state(),
        ClientState::Disconnected(DisconnectReason::HandshakeTimedOut)
    );
}

#[test]
fn no_reply_is_larger_than_its_request() {
    let mut server: Server<u32> = Server::new(
        ServerConfig {
            max_clients: 1,
            ..ServerConfig::new(ConnectionConfig::new(PROTOCOL), KEY)
        },
        0.0,
    )
    .expect("valid");
    let check = |server: &mut Server<u32>, from: u32, request: Vec<u8>| {
        server.handle_datagram(0.0, from, &request);
        let mut replies = 0;
        while let Some(t) = server.poll_transmit() {
            assert!(t.payload.len() <= request.len(), "{t:?} for {request:?}");
            replies += 1;
        }
        replies
    };
    // Challenge, mismatch denial, then (after one client connects) full denial.
    for protocol_id in [PROTOCOL, 7] {
        let req = Packet::Request {
            protocol_id,
            nonce: 1,
        };
        assert_eq!(check(&mut server, 1, req.to_vec()), 1);
    }
    let token = challenge_token(&KEY, &1u32, 0, 1, PROTOCOL);
    let resp = Packet::Response {
        protocol_id: PROTOCOL,
        nonce: 1,
        bucket: 0,
        token,
    };
    assert_eq!(check(&mut server, 1, resp.to_vec()), 1);
    assert_eq!(check(&mut server, 1, resp.to_vec()), 1, "accepted again");
    let req2 = Packet::Request {
        protocol_id: PROTOCOL,
        nonce: 2,
    };
    assert_eq!(check(&mut server, 2, req2.to_vec()), 1, "full");
    let token2 = challenge_token(&KEY, &2u32, 0, 2, PROTOCOL);
    let resp2 = Packet::Response {
        protocol_id: PROTOCOL,
        nonce: 2,
        bucket: 0,
        token: token2,
    };
    assert_eq!(check(&mut server, 2, resp2.to_vec()), 1, "full");
    assert_eq!(server.connected_clients(), 1);
}

#[test]
fn forged_and_replayed_challenge_responses_are_rejected() {
    let config = ServerConfig::new(ConnectionConfig::new(PROTOCOL), KEY);
    let window = config.challenge_window;
    let mut server: Server<u32> = Server::new(config, 0.0).expect("valid");
    let now = 100.0;
    let bucket = time_bucket(now, window);
    let response = |bucket, token| {
        Packet::Response {
            protocol_id: PROTOCOL,
            nonce: 5,
            bucket,
            token,
        }
        .to_vec()
    };
    // A genuine challenge for address 1, replayed from address 2.
    let genuine = challenge_token(&KEY, &1u32, bucket, 5, PROTOCOL);
    server.handle_datagram(now, 2, &response(bucket, genuine));
    // A token computed with the wrong key, for the right address.
    let forged = challenge_token(&[0; 16], &2u32, bucket, 5, PROTOCOL);
    server.handle_datagram(now, 2, &response(bucket, forged));
    // A genuine token with the bucket field changed.
    server.handle_datagram(now, 1, &response(bucket - 1, genuine));
    assert_eq!(server.counters().dropped_challenge_invalid, 3);
    // A genuine challenge from two windows ago: expired.
    let old = bucket - 2;
    let old_token = challenge_token(&KEY, &1u32, old, 5, PROTOCOL);
    server.handle_datagram(now, 1, &response(old, old_token));
    // And one from the future.
    let future_token = challenge_token(&KEY, &1u32, bucket + 1, 5, PROTOCOL);
    server.handle_datagram(now, 1, &response(bucket + 1, future_token));
    assert_eq!(server.counters().dropped_challenge_expired, 2);
    // A genuine token with another protocol id.
    let mut other = response(bucket, genuine);
    other[1] ^= 1;
    server.handle_datagram(now, 1, &other);
    assert_eq!(server.counters().dropped_protocol_mismatch, 1);
    assert_eq!(server.connected_clients(), 0);
    assert!(server.poll_transmit().is_none(), "no reply to any of them");
    assert!(server.poll_event().is_none());
    // The genuine response from its own address, within the next window, is accepted.
    server.handle_datagram(now + window, 1, &response(bucket, genuine));
    assert_eq!(server.connected_clients(), 1);
}

/// Random bytes, truncated and mutated genuine packets, and well-formed session
/// packets with guessed tokens, from thousands of addresses.
fn junk(rng: &mut Rng, genuine: &[Vec<u8>]) -> Vec<u8> {
    match rng.below(4) {
        0 => {
            let mut bytes = vec![0u8; rng.below(80) as usize];
            rng.fill_bytes(&mut bytes);
            bytes
        }
        1 => {
            let mut bytes = genuine[rng.below(genuine.len() as u64) as usize].clone();
            for _ in 0..=rng.below(4) {
                let i = rng.below(bytes.len() as u64) as usize;
                bytes[i] ^= 1 << rng.below(8);
            }
            bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize);
            bytes
        }
        2 => {
            let token = rng.next_u64();
            let mut inner = vec![0u8; rng.below(20) as usize];
            rng.fill_bytes(&mut inner);
            match rng.below(3) {
                0 => Packet::Payload {
                    token,
                    datagram: &inner,
                },
                1 => Packet::KeepAlive {
                    token,
                    datagram: &inner,
                },
                _ => Packet::Disconnect { token },
            }
            .to_vec()
        }
        _ => Packet::Response {
            protocol_id: PROTOCOL,
            nonce: rng.next_u64(),
            bucket: rng.below(3),
            token: rng.next_u64(),
        }
        .to_vec(),
    }
}

#[test]
fn junk_flood_creates_no_state_and_connected_clients_keep_working() {
    let mut w = World::with_slots(4);
    let a = w.add_client(1, PROTOCOL);
    let b = w.add_client(2, PROTOCOL);
    w.run(0.5);
    assert_eq!(w.server.connected_clients(), 2);
    let id_a = w.server.client_id(&a).expect("connected");

    // Capture genuine traffic to mutate.
    let mut genuine = vec![
        Packet::Request {
            protocol_id: PROTOCOL,
            nonce: 1,
        }
        .to_vec(),
    ];
    let now = w.now;
    w.client(a).send(now, b"hello").expect("connected");
    while let Some(t) = w.client(a).poll_transmit() {
        genuine.push(t.payload);
    }

    let mut rng = Rng::new(99);
    let mut received = 0;
    for _ in 0..600 {
        // 500 junk datagrams per tick, from attacker addresses and spoofing the
        // connected clients' addresses.
        for _ in 0..500 {
            let from = match rng.below(10) {
                0 => a,
                1 => b,
                _ => NodeId(1000 + rng.below(100_000) as u32),
            };
            let d = junk(&mut rng, &genuine);
            w.server.handle_datagram(w.now, from, &d);
            assert!(w.server.connected_clients() <= 2);
        }
        // Challenges and denials to the attacker addresses are sent but go nowhere.
        while let Some(t) = w.server.poll_transmit() {
            if t.to == a || t.to == b {
                w.net.send(w.now, SERVER, t.to, &t.payload);
            }
        }
        let now = w.now;
        if w.client(a).ready_to_send(now) {
            w.client(a).send(now, b"still here").expect("connected");
        }
        if w.server.ready_to_send(now, id_a) {
            w.server.send(now, id_a, b"ack").expect("connected");
        }
        w.step();
        received += w
            .server_events
            .drain(..)
            .filter(|e| matches!(e, ServerEvent::Payload { client, .. } if *client == id_a))
            .count();
    }
    assert!(w.client(a).is_connected() && w.client(b).is_connected());
    assert_eq!(w.server.connected_clients(), 2);
    // 10 s at 10 to 30 packets per second.
    assert!(received >= 100, "received {received}");
    let c = w.server.counters();
    assert_eq!(c.clients_accepted, 2);
    assert!(c.dropped_malformed > 10_000);
    assert!(c.dropped_challenge_invalid + c.dropped_challenge_expired > 10_000);
    assert!(c.dropped_unknown_address > 10_000);
    assert!(c.dropped_bad_token > 1_000);
    let server_to_a = w
        .client_events_of(a)
        .iter()
        .filter(|e| matches!(e, ClientEvent::Payload { .. }))
        .count();
    assert!(server_to_a >= 100, "{server_to_a}");
    let _ = ClientId(0);
}

/// Delivers every queued datagram between a server at address 0 and a client at
/// address `from`, dropping those `drop` picks; returns how many were dropped.
fn exchange(
    server: &mut Server<u32>,
    client: &mut Client<u32>,
    from: u32,
    now: f64,
    mut drop: impl FnMut(&[u8]) -> bool,
) -> usize {
    let mut dropped = 0;
    for _ in 0..4 {
        client.update(now);
        while let Some(t) = client.poll_transmit() {
            server.handle_datagram(now, from, &t.payload);
        }
        server.update(now);
        while let Some(t) = server.poll_transmit() {
            if drop(&t.payload) {
                dropped += 1;
            } else {
                client.handle_datagram(now, 0, &t.payload);
            }
        }
    }
    dropped
}

fn u32_server() -> Server<u32> {
    Server::new(ServerConfig::new(ConnectionConfig::new(PROTOCOL), KEY), 0.0).expect("valid")
}

fn u32_client(nonce: u64) -> Client<u32> {
    Client::new(ConnectionConfig::new(PROTOCOL), 0, nonce, 0.0).expect("valid")
}

#[test]
fn a_lost_accepted_packet_is_made_up_for_by_session_traffic() {
    let mut server = u32_server();
    let mut client = u32_client(3);
    // Every accepted packet is lost; the server's keep-alives carry the token.
    let dropped = exchange(&mut server, &mut client, 1, 0.0, |d| {
        matches!(Packet::decode(d), Ok(Packet::Accepted { .. }))
    });
    assert!(dropped >= 1);
    assert_eq!(server.connected_clients(), 1);
    assert_eq!(client.state(), ClientState::Responding);
    exchange(&mut server, &mut client, 1, 0.2, |_| false);
    assert!(client.is_connected());
    let id = server.client_id(&1).expect("connected");
    client.send(0.2, b"hi").expect("connected");
    exchange(&mut server, &mut client, 1, 0.25, |_| false);
    let mut payloads = 0;
    while let Some(e) = server.poll_event() {
        if let ServerEvent::Payload {
            client, payload, ..
        } = e
        {
            assert_eq!((client, &payload[..]), (id, &b"hi"[..]));
            payloads += 1;
        }
    }
    assert_eq!(payloads, 1);
}

#[test]
fn a_new_handshake_from_the_same_address_replaces_the_session() {
    let mut server = u32_server();
    let mut first = u32_client(3);
    exchange(&mut server, &mut first, 1, 0.0, |_| false);
    assert!(first.is_connected());
    let old = server.client_id(&1).expect("connected");
    // The client's process restarts on the same address, with a new nonce.
    let mut second = u32_client(4);
    exchange(&mut server, &mut second, 1, 1.0, |_| false);
    assert!(second.is_connected());
    assert_eq!(server.connected_clients(), 1);
    let events: Vec<_> = std::iter::from_fn(|| server.poll_event()).collect();
    assert!(events.contains(&ServerEvent::Disconnected {
        client: old,
        address: 1,
        reason: DisconnectReason::Reconnected
    }));
    // The old session's token is refused now.
    let before = server.counters().dropped_bad_token;
    first
        .send(1.1, b"stale")
        .expect("still thinks it is connected");
    while let Some(t) = first.poll_transmit() {
        server.handle_datagram(1.1, 1, &t.payload);
    }
    assert_eq!(server.counters().dropped_bad_token, before + 1);
}

#[test]
fn junk_to_a_client_in_every_state_changes_nothing() {
    let mut rng = Rng::new(7);
    let genuine = vec![
        Packet::Challenge {
            protocol_id: PROTOCOL,
            nonce: 3,
            bucket: 0,
            token: 1,
        }
        .to_vec(),
        Packet::Accepted {
            nonce: 3,
            token: 1,
            client: 0,
        }
        .to_vec(),
        Packet::Disconnect { token: 1 }.to_vec(),
    ];
    let mut server = u32_server();
    let mut client = u32_client(3);
    for step in 0..3 {
        let state = client.state();
        for _ in 0..20_000 {
            let mut d = junk(&mut rng, &genuine);
            if matches!(d.first(), Some(2 | 5))
                && let Some(b) = d.get_mut(9)
            {
                *b ^= 0x80; // never the client's nonce
            }
            client.handle_datagram(0.0, 0, &d);
            // The same bytes from another address are dropped without a look.
            client.handle_datagram(0.0, 9, &genuine[step]);
            assert_eq!(client.state(), state);
        }
        assert!(client.poll_event().is_none(), "{:?}", client.state());
        while client.poll_transmit().is_some() {}
        match step {
            0 => {
                // Requesting -> Responding with the server's real challenge.
                client.update(0.0);
                while let Some(t) = client.poll_transmit() {
                    server.handle_datagram(0.0, 1, &t.payload);
                }
                while let Some(t) = server.poll_transmit() {
                    client.handle_datagram(0.0, 0, &t.payload);
                }
                assert_eq!(client.state(), ClientState::Responding);
            }
            1 => {
                // The response was drained with the junk replies: resent at 0.2 s.
                exchange(&mut server, &mut client, 1, 0.2, |_| false);
                assert!(client.is_connected());
                while client.poll_event().is_some() {}
            }
            _ => {}
        }
    }
    assert!(client.dropped() >= 120_000);
}
