//! What sealing costs: nanoseconds per packet for send + receive + ack between two
//! peers, through the netcode connection (every packet sealed and opened with
//! ChaCha20-Poly1305, replay-checked) beside the bare packet endpoint (the unsealed
//! path the connection wraps), at 8, 100 and 1000 payload bytes, in one run; and the
//! server's cost per connection request, with a valid token (one AEAD open of the
//! token, a challenge sealed and queued) and an invalid one (the open fails).
//!
//! One iteration of the per-packet groups is a round trip: A sends to B, B takes the
//! payload (acking A's packet in its next header), B sends to A, A takes it and
//! processes the ack; the time per element (`Throughput::Elements(2)`) is per packet.
//!
//! `cargo bench -p netproto-tests --bench connection`

use netproto::Time;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use netproto::connection::{Client, ClientId, ConnectionConfig, MAX_DATAGRAM_BYTES, Server};
use netproto::internals::netcode::PacketType;
use netproto::netcode::ConnectToken;
use netproto::packet::{Endpoint, Incoming};
use netproto::sim::NodeId;
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};

const PROTOCOL_ID: u64 = 0x5eed;
const SERVER: u8 = 0;
const CLIENT: u8 = 1;

/// The backend of every server and client here: one private key, deterministic tokens.
fn backend() -> SimBackend {
    SimBackend::new(PROTOCOL_ID, 9)
}

/// A connected server and client on an instant in-memory network.
struct Sealed {
    server: Server<u8>,
    client: Client<u8>,
    id: ClientId,
    buf: Box<[u8]>,
    now: f64,
}

impl Sealed {
    fn new() -> Self {
        let mut backend = backend();
        let mut server = Server::new(backend.server_config(NodeId(0)), Time::ZERO, SIM_UNIX_TIME)
            .expect("valid");
        let token = backend.token(1, NodeId(0));
        let mut client = Client::new(
            ConnectionConfig::new(PROTOCOL_ID),
            &token,
            SERVER,
            Time::ZERO,
        )
        .expect("valid");
        let mut buf = vec![0u8; MAX_DATAGRAM_BYTES].into_boxed_slice();
        let mut now = 0.0;
        while !client.is_connected() {
            now += 0.1;
            client.update(Time::from_secs_f64(now));
            server.update(Time::from_secs_f64(now));
            while let Some((_, len)) = client.poll_transmit(&mut buf) {
                server.handle_datagram(Time::from_secs_f64(now), CLIENT, &buf[..len]);
            }
            while let Some((_, len)) = server.poll_transmit(&mut buf) {
                client.handle_datagram(Time::from_secs_f64(now), SERVER, &buf[..len]);
            }
            assert!(now < 10.0, "no connection");
        }
        let id = server.client_id(&CLIENT).expect("connected");
        Self {
            server,
            client,
            id,
            buf,
            now,
        }
    }

    /// One round trip; the acks reported.
    fn round_trip(&mut self, payload: &[u8]) -> usize {
        self.now += 0.001;
        let now = self.now;
        let mut acks = 0;
        self.client
            .send(Time::from_secs_f64(now), payload)
            .expect("connected");
        while let Some((_, len)) = self.client.poll_transmit(&mut self.buf) {
            let datagram = &self.buf[..len];
            if let Some(d) = self
                .server
                .handle_datagram(Time::from_secs_f64(now), CLIENT, datagram)
            {
                black_box(d.payload());
                acks += d.accept().len();
            }
        }
        self.server
            .send(Time::from_secs_f64(now), self.id, payload)
            .expect("connected");
        while let Some((_, len)) = self.server.poll_transmit(&mut self.buf) {
            let datagram = &self.buf[..len];
            if let Some(d) = self
                .client
                .handle_datagram(Time::from_secs_f64(now), SERVER, datagram)
            {
                black_box(d.payload());
                acks += d.accept().len();
            }
        }
        acks
    }
}

/// Two bare packet endpoints: the path without the connection's seal.
struct Unsealed {
    a: Endpoint,
    b: Endpoint,
    buf: Vec<u8>,
    now: f64,
}

impl Unsealed {
    fn new() -> Self {
        let config = ConnectionConfig::new(PROTOCOL_ID).endpoint;
        Self {
            a: Endpoint::new(config.clone(), Time::ZERO).expect("valid"),
            b: Endpoint::new(config, Time::ZERO).expect("valid"),
            buf: Vec::with_capacity(2048),
            now: 0.0,
        }
    }

    fn one_way(
        from: &mut Endpoint,
        to: &mut Endpoint,
        now: f64,
        payload: &[u8],
        buf: &mut Vec<u8>,
    ) -> usize {
        buf.clear();
        from.send(Time::from_secs_f64(now), payload, |d| {
            buf.extend_from_slice(d)
        })
        .expect("fits");
        match to.receive(Time::from_secs_f64(now), buf) {
            Ok(Incoming::Packet(p)) => {
                black_box(p.payload());
                p.accept().len()
            }
            _ => 0,
        }
    }

    fn round_trip(&mut self, payload: &[u8]) -> usize {
        self.now += 0.001;
        Self::one_way(&mut self.a, &mut self.b, self.now, payload, &mut self.buf)
            + Self::one_way(&mut self.b, &mut self.a, self.now, payload, &mut self.buf)
    }
}

fn per_packet(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_packet");
    group.throughput(Throughput::Elements(2));
    for size in [8usize, 100, 1000] {
        let payload = vec![0x5au8; size];
        let mut sealed = Sealed::new();
        group.bench_with_input(BenchmarkId::new("sealed", size), &payload, |b, p| {
            b.iter(|| sealed.round_trip(p))
        });
        let mut unsealed = Unsealed::new();
        group.bench_with_input(BenchmarkId::new("unsealed", size), &payload, |b, p| {
            b.iter(|| unsealed.round_trip(p))
        });
        assert!(sealed.server.stats(sealed.id).is_some(), "still connected");
    }
    group.finish();
}

/// The request a client sends, as bytes.
fn request_bytes(token: &ConnectToken) -> Vec<u8> {
    let mut client = Client::new(
        ConnectionConfig::new(PROTOCOL_ID),
        token,
        SERVER,
        Time::ZERO,
    )
    .expect("valid");
    client.update(Time::ZERO);
    let mut buf = vec![0u8; MAX_DATAGRAM_BYTES];
    let (_, len) = client.poll_transmit(&mut buf).expect("a request");
    assert_eq!(buf[0], PacketType::Request as u8);
    buf.truncate(len);
    buf
}

fn requests(c: &mut Criterion) {
    let mut group = c.benchmark_group("request");
    group.throughput(Throughput::Elements(1));
    let mut backend = backend();
    let config = backend.server_config(NodeId(0));
    let valid = request_bytes(&backend.token(7, NodeId(0)));
    let mut invalid = valid.clone();
    invalid[100] ^= 1; // inside the sealed private part: the AEAD open fails
    let mut buf = vec![0u8; MAX_DATAGRAM_BYTES];
    let mut server = Server::new(config.clone(), Time::ZERO, SIM_UNIX_TIME).expect("valid");
    // What is measured: a valid request is challenged, an invalid one is not.
    server.handle_datagram(Time::ZERO, CLIENT, &valid);
    assert!(server.poll_transmit(&mut buf).is_some(), "a challenge");
    server.handle_datagram(Time::ZERO, CLIENT, &invalid);
    assert!(server.poll_transmit(&mut buf).is_none(), "no reply");
    assert_eq!(server.server_stats().requests_dropped_unauthenticated, 1);
    group.bench_function("valid_token", |b| {
        b.iter(|| {
            // The same client again: each request is opened and challenged anew.
            server.handle_datagram(Time::ZERO, CLIENT, &valid);
            server.poll_transmit(&mut buf).expect("a challenge")
        })
    });
    let mut server = Server::new(config.clone(), Time::ZERO, SIM_UNIX_TIME).expect("valid");
    group.bench_function("invalid_token", |b| {
        b.iter(|| {
            server.handle_datagram(Time::ZERO, CLIENT, &invalid);
            server.poll_transmit(&mut buf)
        })
    });
    assert_eq!(server.server_stats().challenges_sent, 0);
    group.finish();
}

criterion_group!(benches, per_packet, requests);
criterion_main!(benches);
