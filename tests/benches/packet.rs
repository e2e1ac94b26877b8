//! Packet endpoint throughput: nanoseconds per packet for send + receive + ack
//! processing between two endpoints, with and without fragmentation, and the header
//! bytes per packet in steady state.
//!
//! One iteration is a round trip: A sends to B, B receives (and acks A's packets in
//! its next header), B sends to A, A receives and processes the acks. So the
//! reported time per element (`Throughput::Elements(2)`) is per packet.
//!
//! `cargo bench -p netproto-tests --bench packet`

use netproto::Time;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use netproto::packet::{Endpoint, EndpointConfig, Incoming};

/// Two endpoints and reusable datagram buffers (no allocation in the loop).
struct Pair {
    a: Endpoint,
    b: Endpoint,
    wire: Vec<Vec<u8>>,
    used: usize,
    now: f64,
    acked: u64,
}

impl Pair {
    fn new() -> Self {
        Self {
            a: Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("default config"),
            b: Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("default config"),
            wire: (0..32).map(|_| Vec::with_capacity(2048)).collect(),
            used: 0,
            now: 0.0,
            acked: 0,
        }
    }

    /// Sends `payload` from `from`, keeping the datagrams in the reusable buffers.
    fn send(from: &mut Endpoint, now: f64, payload: &[u8], wire: &mut [Vec<u8>]) -> usize {
        let mut used = 0;
        from.send(Time::from_secs_f64(now), payload, |d| {
            let slot = &mut wire[used];
            slot.clear();
            slot.extend_from_slice(d);
            used += 1;
        })
        .expect("fits");
        used
    }

    /// Delivers the datagrams in the buffers to `to`; returns acks reported.
    fn deliver(to: &mut Endpoint, now: f64, wire: &[Vec<u8>], used: usize) -> usize {
        let mut acks = 0;
        for d in &wire[..used] {
            if let Ok(Incoming::Packet(packet)) = to.receive(Time::from_secs_f64(now), d) {
                black_box(packet.payload());
                acks += packet.accept().len();
            }
        }
        acks
    }

    /// One round trip: `a_payload` A -> B, `b_payload` B -> A.
    fn round_trip(&mut self, a_payload: &[u8], b_payload: &[u8]) {
        self.now += 1.0 / 60.0;
        self.used = Self::send(&mut self.a, self.now, a_payload, &mut self.wire);
        self.acked += Self::deliver(&mut self.b, self.now, &self.wire, self.used) as u64;
        self.used = Self::send(&mut self.b, self.now, b_payload, &mut self.wire);
        self.acked += Self::deliver(&mut self.a, self.now, &self.wire, self.used) as u64;
    }
}

fn report_header_bytes() {
    let mut pair = Pair::new();
    let payload = [0x5Au8; 100];
    for _ in 0..1000 {
        pair.round_trip(&payload, &payload);
    }
    let header = pair.wire[0].len() - payload.len();
    println!(
        "steady state (no loss): {header} header bytes per packet ({} acks reported over 2000 packets)",
        pair.acked
    );
    // Steady state under 10% loss: some ack-bits bytes are no longer 0xFF.
    let mut pair = Pair::new();
    let mut total = 0usize;
    let mut count = 0usize;
    let mut lost = 0u64;
    for i in 0..10_000u64 {
        pair.now += 1.0 / 60.0;
        let now = pair.now;
        pair.used = Pair::send(&mut pair.a, now, &payload, &mut pair.wire);
        total += pair.wire[0].len() - payload.len();
        count += 1;
        // Every 10th packet of A is lost.
        if i % 10 != 3 {
            Pair::deliver(&mut pair.b, now, &pair.wire, pair.used);
        } else {
            lost += 1;
        }
        pair.used = Pair::send(&mut pair.b, now, &payload, &mut pair.wire);
        total += pair.wire[0].len() - payload.len();
        count += 1;
        Pair::deliver(&mut pair.a, now, &pair.wire, pair.used);
    }
    println!(
        "steady state (10% loss one way, {lost} lost): {:.2} header bytes per packet on average",
        total as f64 / count as f64
    );
}

fn bench(c: &mut Criterion) {
    report_header_bytes();
    let mut group = c.benchmark_group("packet");
    group.throughput(Throughput::Elements(2));

    let small = [0x5Au8; 100];
    let mut pair = Pair::new();
    group.bench_function("round trip, 100-byte packets", |bench| {
        bench.iter(|| pair.round_trip(black_box(&small), black_box(&small)));
    });

    let tiny = [0x5Au8; 8];
    let mut pair = Pair::new();
    group.bench_function("round trip, 8-byte packets", |bench| {
        bench.iter(|| pair.round_trip(black_box(&tiny), black_box(&tiny)));
    });

    // 4000 bytes = 4 fragments of 1024 each way.
    let large = vec![0xA5u8; 4000];
    let mut pair = Pair::new();
    group.bench_function("round trip, 4000-byte packets (4 fragments)", |bench| {
        bench.iter(|| pair.round_trip(black_box(&large), black_box(&large)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
