//! Reliable-ordered channels side by side: netproto's message layer + packet endpoint
//! against renet 2's reliable-ordered channel, on the same game workload and the same
//! simulated loss.
//!
//! Workload: 10 000 messages of the arena game (`workload(10_000, 1)`: inputs, entity
//! updates, id batches, chat, phase changes), queued 32 per tick at 60 Hz on side A;
//! side B only acks. Loss: 5% of the datagrams in each direction, drawn from the same
//! seeded generator for both libraries; a datagram that survives is delivered on the
//! next tick. Both resend after 100 ms. One iteration runs until B has delivered all
//! 10 000 messages, in order, and checked each one.
//!
//! Measured per message: send (including the encoding the application needs), pack,
//! unpack and deliver (including the decoding back into a `GameMessage`), and the
//! bytes on the wire in both directions (data, resends and acks; packet headers
//! included, IP/UDP not).
//!
//! renet carries bytes, so its messages are encoded by the application. Two variants:
//!
//! * `renet + bincode`: bincode 2 with its standard (varint) configuration, the
//!   encoding a renet user typically reaches for (renet's own examples use bincode);
//! * `renet + netproto bytes`: each message encoded with `netproto::encode` (the same
//!   bit-packed body, padded to a byte), which isolates the channel and packet
//!   overhead from the message encoding.
//!
//! `cargo bench -p netproto-tests --bench channels` prints the bytes per message once,
//! then criterion's time per message (`Throughput::Elements`).

use netproto::Time;
use netproto::channel::ChannelId;
use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use netproto::channel::{ChannelConfig, LayerConfig, MessageStack};
use netproto::packet::EndpointConfig;
use netproto::sim::Rng;
use netproto_examples::game::{GameMessage, workload};
use renet::{ChannelConfig as RenetChannel, ConnectionConfig, RenetClient, SendType};

const MESSAGES: usize = 10_000;
const PER_TICK: usize = 32;
const LOSS: f64 = 0.05;
const TICK: f64 = 1.0 / 60.0;

/// What one run moved.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    delivered: usize,
    bytes: usize,
    datagrams: usize,
    ticks: usize,
}

/// Datagrams in flight: sent this tick, delivered next tick unless lost.
struct Wire {
    rng: Rng,
    to_a: Vec<Vec<u8>>,
    to_b: Vec<Vec<u8>>,
}

impl Wire {
    fn new() -> Self {
        Self {
            rng: Rng::new(42),
            to_a: Vec::new(),
            to_b: Vec::new(),
        }
    }
}

fn netproto_run(messages: &[GameMessage], totals: &mut Totals) {
    // A fixed 100 ms resend interval, as renet's (the default also waits 1.25 round
    // trips, which is shorter here: datagrams arrive on the next tick).
    let layer =
        LayerConfig::with_channels(vec![ChannelConfig::reliable().with_resend_rtt_factor(0.0)]);
    let new = || {
        MessageStack::<GameMessage>::new(EndpointConfig::default(), layer.clone(), Time::ZERO)
            .expect("valid config")
    };
    let (mut a, mut b) = (new(), new());
    let mut wire = Wire::new();
    let mut next = 0;
    let mut expected = messages.iter();
    let mut tick = 0usize;
    let mut check = vec![0u8; 256];
    let mut want = vec![0u8; 256];
    while totals.delivered < messages.len() {
        let now = tick as f64 * TICK;
        for d in std::mem::take(&mut wire.to_b) {
            let _ = b.receive_datagram(Time::from_secs_f64(now), &d);
        }
        for d in std::mem::take(&mut wire.to_a) {
            let _ = a.receive_datagram(Time::from_secs_f64(now), &d);
        }
        while let Some(m) = b.receive(ChannelId::new(0)) {
            let e = expected.next().expect("no extra message");
            let n = netproto::encode_into(&m, &mut check).expect("encode");
            let k = netproto::encode_into(e, &mut want).expect("encode");
            assert_eq!(check[..n], want[..k], "in order, byte-identical");
            totals.delivered += 1;
        }
        for _ in 0..PER_TICK {
            if next == messages.len() || !a.layer().can_send(ChannelId::new(0)) {
                break;
            }
            a.send(ChannelId::new(0), messages[next].clone())
                .expect("fits");
            next += 1;
        }
        let Wire { rng, to_a, to_b } = &mut wire;
        a.send_packet(Time::from_secs_f64(now), |d| {
            totals.bytes += d.len();
            totals.datagrams += 1;
            if !rng.chance(LOSS) {
                to_b.push(d.to_vec());
            }
        })
        .expect("within budget");
        b.send_packet(Time::from_secs_f64(now), |d| {
            totals.bytes += d.len();
            totals.datagrams += 1;
            if !rng.chance(LOSS) {
                to_a.push(d.to_vec());
            }
        })
        .expect("within budget");
        tick += 1;
    }
    totals.ticks = tick;
}

/// How the renet runs turn a message into bytes and back.
#[derive(Clone, Copy)]
enum Encoding {
    Bincode,
    Netproto,
}

fn encode(m: &GameMessage, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Bincode => {
            bincode::encode_to_vec(m, bincode::config::standard()).expect("bincode encode")
        }
        Encoding::Netproto => netproto::encode(m).expect("netproto encode"),
    }
}

fn decode(bytes: &[u8], encoding: Encoding) -> GameMessage {
    match encoding {
        Encoding::Bincode => {
            bincode::decode_from_slice(bytes, bincode::config::standard())
                .expect("bincode decode")
                .0
        }
        Encoding::Netproto => netproto::decode(bytes).expect("netproto decode"),
    }
}

fn renet_config() -> ConnectionConfig {
    let channels = vec![RenetChannel {
        channel_id: 0,
        max_memory_usage_bytes: 5 * 1024 * 1024,
        send_type: SendType::ReliableOrdered {
            resend_time: Duration::from_millis(100),
        },
    }];
    ConnectionConfig {
        available_bytes_per_tick: 60_000,
        server_channels_config: channels.clone(),
        client_channels_config: channels,
    }
}

fn renet_run(messages: &[GameMessage], encoding: Encoding, totals: &mut Totals) {
    // Two clients talk to each other directly: renet's channels are symmetric when
    // both channel lists are equal, and `process_packet` / `get_packets_to_send` are
    // the transport-free API.
    let mut a = RenetClient::new(renet_config());
    let mut b = RenetClient::new(renet_config());
    a.set_connected();
    b.set_connected();
    let mut wire = Wire::new();
    let mut next = 0;
    let mut expected = messages.iter();
    let mut tick = 0usize;
    let dt = Duration::from_secs_f64(TICK);
    while totals.delivered < messages.len() {
        a.update(dt);
        b.update(dt);
        for d in std::mem::take(&mut wire.to_b) {
            b.process_packet(&d);
        }
        for d in std::mem::take(&mut wire.to_a) {
            a.process_packet(&d);
        }
        while let Some(bytes) = b.receive_message(0) {
            let m = decode(&bytes, encoding);
            let e = expected.next().expect("no extra message");
            assert_eq!(encode(&m, encoding), encode(e, encoding), "in order");
            totals.delivered += 1;
        }
        for _ in 0..PER_TICK {
            if next == messages.len() {
                break;
            }
            a.send_message(0, Bytes::from(encode(&messages[next], encoding)));
            next += 1;
        }
        for (from, to) in [(&mut a, &mut wire.to_b), (&mut b, &mut wire.to_a)] {
            for d in from.get_packets_to_send() {
                totals.bytes += d.len();
                totals.datagrams += 1;
                if !wire.rng.chance(LOSS) {
                    to.push(d);
                }
            }
        }
        assert!(!a.is_disconnected() && !b.is_disconnected());
        tick += 1;
    }
    totals.ticks = tick;
}

fn bench(c: &mut Criterion) {
    // Round trip through netproto first, so that both libraries carry the same
    // (quantized) values.
    let messages: Vec<GameMessage> = workload(MESSAGES, 1)
        .into_iter()
        .map(|m| netproto::decode(&netproto::encode(&m).expect("encode")).expect("decode"))
        .collect();

    let mut np = Totals::default();
    netproto_run(&messages, &mut np);
    let mut rb = Totals::default();
    renet_run(&messages, Encoding::Bincode, &mut rb);
    let mut rn = Totals::default();
    renet_run(&messages, Encoding::Netproto, &mut rn);
    let per = |t: &Totals| t.bytes as f64 / t.delivered as f64;
    println!(
        "channels: {MESSAGES} messages, {PER_TICK}/tick, {:.0}% loss each way",
        LOSS * 100.0
    );
    for (name, t) in [
        ("netproto", np),
        ("renet + bincode", rb),
        ("renet + netproto bytes", rn),
    ] {
        println!(
            "  {name:<24} {:>7.2} bytes/message ({:>4} datagrams, {:>6} bytes, {} ticks) ratio to renet+bincode {:.3}, to renet+netproto bytes {:.3}",
            per(&t),
            t.datagrams,
            t.bytes,
            t.ticks,
            per(&t) / per(&rb),
            per(&t) / per(&rn),
        );
    }

    let mut group = c.benchmark_group("channels");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            let mut t = Totals::default();
            netproto_run(black_box(&messages), &mut t);
            t
        })
    });
    group.bench_function("renet + bincode", |b| {
        b.iter(|| {
            let mut t = Totals::default();
            renet_run(black_box(&messages), Encoding::Bincode, &mut t);
            t
        })
    });
    group.bench_function("renet + netproto bytes", |b| {
        b.iter(|| {
            let mut t = Totals::default();
            renet_run(black_box(&messages), Encoding::Netproto, &mut t);
            t
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
