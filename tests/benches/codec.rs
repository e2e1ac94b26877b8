//! Encode/decode of a realistic game workload by netproto and, in the same run, by the
//! crates a Rust game programmer would pick instead: bitcode, bincode and postcard.
//!
//! `cargo bench -p netproto-tests --bench codec`. Before timing, it prints a size table:
//! bytes per message for each crate, against the information-theoretic minimum implied
//! by the declared ranges (`log2` of the number of values each field may take) and the
//! declared-width minimum (whole bits per field, no padding).
//!
//! Two modes: `encode`/`decode` run the whole workload through one stream (one buffer for
//! all messages; bitcode encodes the `Vec`), `encode_each`/`decode_each` give every message
//! its own buffer, as a packet does (bitcode through a reused `bitcode::Buffer`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use netproto::{NetMessage, ReadStream, Stream, WriteStream};
use netproto_examples::game::{
    EntityState, GameMessage, MatchPhase, PlayerInput, Position, workload,
};

const MESSAGES: usize = 100_000;
const SEED: u64 = 0x6E65_7470_726F_746F;

/// `(log2 of the values the declarations allow, whole bits the declarations need)`.
fn minimum(message: &GameMessage) -> (f64, u32) {
    fn field(values: f64) -> (f64, u32) {
        (values.log2(), values.log2().ceil() as u32)
    }
    fn add(parts: &[(f64, u32)]) -> (f64, u32) {
        parts.iter().fold((0.0, 0), |(a, b), (x, y)| (a + x, b + y))
    }
    let quantized = |steps: f64| field(steps + 1.0);
    let position = |_: &Position| {
        add(&[
            quantized(204_800.0),
            quantized(204_800.0),
            quantized(51_200.0),
        ])
    };
    let input = |_: &PlayerInput| {
        add(&[
            field(64.0),
            field(256.0),
            quantized(6284.0),
            quantized(3142.0),
            field(15.0),
            field(15.0),
        ])
    };
    let body = match message {
        GameMessage::Input(m) => input(m),
        GameMessage::Update(m) => {
            let state = match m.state {
                EntityState::Idle => (0.0, 0),
                EntityState::Moving { .. } => field(16.0),
                EntityState::Attacking { .. } => field(4096.0),
                EntityState::Dead { .. } => field(301.0),
            };
            add(&[
                field(4096.0),
                position(&m.position),
                quantized(629.0),
                field(101.0),
                field(4.0),
                state,
            ])
        }
        GameMessage::Chat(m) => {
            let bytes = m.text.len() as f64 * 8.0;
            add(&[field(64.0), field(141.0), (bytes, bytes as u32)])
        }
        GameMessage::Batch(m) => {
            let ids = m.ids.len() as f64 * 12.0;
            add(&[field(65.0), (ids, ids as u32)])
        }
        GameMessage::Phase(m) => {
            let payload = match m {
                MatchPhase::Warmup { .. } => field(65.0),
                MatchPhase::Countdown { .. } => field(11.0),
                MatchPhase::Playing { .. } => add(&[field(30.0), field(1000.0), field(1000.0)]),
                MatchPhase::RoundOver { .. } => field(3.0),
            };
            add(&[field(4.0), payload])
        }
    };
    add(&[field(5.0), body])
}

fn netproto_encode(messages: &mut [GameMessage], buf: &mut [u8]) -> usize {
    let mut stream = WriteStream::new(buf);
    for message in messages.iter_mut() {
        if let Err(err) = message.serialize(&mut stream) {
            panic!("workload message rejected: {err}");
        }
    }
    stream.finish()
}

/// Fills blank messages in place, as the serialize function is made to: decoding each
/// into a local and pushing it copies every message once more, through a stack slot whose
/// narrow stores the wide copy cannot forward from (~7% of the decode time here).
fn netproto_decode(bytes: &[u8], count: usize) -> Vec<GameMessage> {
    let mut stream = ReadStream::new(bytes);
    let mut out = Vec::with_capacity(count);
    out.resize_with(count, GameMessage::blank);
    for message in out.iter_mut() {
        if let Err(err) = message.serialize(&mut stream) {
            panic!("decode failed: {err}");
        }
    }
    out
}

fn sizes(messages: &mut [GameMessage]) {
    let n = messages.len() as f64;
    let (info, declared) = messages
        .iter()
        .map(minimum)
        .fold((0.0, 0u64), |(a, b), (x, y)| (a + x, b + u64::from(y)));
    let info_bytes = info / 8.0;
    let mut buf = vec![0u8; messages.len() * GameMessage::MAX_BITS.div_ceil(8)];
    let ours_bits = {
        let mut stream = WriteStream::new(&mut buf);
        for message in messages.iter_mut() {
            if let Err(err) = message.serialize(&mut stream) {
                panic!("{err}");
            }
        }
        stream.bits_processed()
    };
    let ours = ours_bits.div_ceil(8);
    let bitcode_len = bitcode::encode(&messages.to_vec()).len();
    let bincode_len = bincode::encode_to_vec(messages.to_vec(), bincode::config::standard())
        .map_or(0, |v| v.len());
    let postcard_len = postcard::to_allocvec(&messages.to_vec()).map_or(0, |v| v.len());
    println!("\nworkload: {} messages (seed {SEED:#x})", messages.len());
    println!(
        "  {:<28} {:>10} {:>10}",
        "encoding", "B/message", "x minimum"
    );
    let row = |name: &str, bytes: f64| {
        println!(
            "  {:<28} {:>10.3} {:>10.3}",
            name,
            bytes / n,
            bytes / info_bytes
        );
    };
    row("information minimum", info_bytes);
    row("declared-width minimum", declared as f64 / 8.0);
    row("netproto", ours as f64);
    row("bitcode 0.6", bitcode_len as f64);
    row("bincode 2 (varint)", bincode_len as f64);
    row("postcard 1", postcard_len as f64);
    println!();
}

fn bench(c: &mut Criterion) {
    let mut messages = workload(MESSAGES, SEED);
    sizes(&mut messages);
    let owned = messages.clone();

    let mut buf = vec![0u8; MESSAGES * GameMessage::MAX_BITS.div_ceil(8)];
    let ours_len = netproto_encode(&mut messages, &mut buf);
    let ours_bytes = buf[..ours_len].to_vec();
    // Quantized floats come back within res/2, not equal (the property tests check that);
    // here, check the decode consumes exactly the stream the encode produced.
    let mut decoded = netproto_decode(&ours_bytes, MESSAGES);
    assert_eq!(
        netproto_encode(&mut decoded, &mut buf),
        ours_len,
        "netproto roundtrip size"
    );
    let bincode_bytes = bincode::encode_to_vec(&owned, bincode::config::standard())
        .unwrap_or_else(|e| panic!("{e}"));
    let postcard_bytes = postcard::to_allocvec(&owned).unwrap_or_else(|e| panic!("{e}"));
    let bitcode_bytes = bitcode::encode(&owned);

    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| black_box(netproto_encode(black_box(&mut messages), &mut buf)))
    });
    let mut bitcode_buffer = bitcode::Buffer::new();
    group.bench_function("bitcode", |b| {
        b.iter(|| black_box(bitcode_buffer.encode(black_box(&owned)).len()))
    });
    let mut slice = vec![0u8; bincode_bytes.len() + postcard_bytes.len()];
    group.bench_function("bincode", |b| {
        b.iter(|| {
            bincode::encode_into_slice(black_box(&owned), &mut slice, bincode::config::standard())
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.bench_function("postcard", |b| {
        b.iter(|| {
            postcard::to_slice(black_box(&owned), &mut slice)
                .map(|s| s.len())
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| black_box(netproto_decode(black_box(&ours_bytes), MESSAGES)))
    });
    let mut bitcode_buffer = bitcode::Buffer::new();
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            black_box(
                bitcode_buffer
                    .decode::<Vec<GameMessage>>(black_box(&bitcode_bytes))
                    .unwrap_or_else(|e| panic!("{e}")),
            )
        })
    });
    group.bench_function("bincode", |b| {
        b.iter(|| {
            black_box(
                bincode::decode_from_slice::<Vec<GameMessage>, _>(
                    black_box(&bincode_bytes),
                    bincode::config::standard(),
                )
                .unwrap_or_else(|e| panic!("{e}")),
            )
        })
    });
    group.bench_function("postcard", |b| {
        b.iter(|| {
            black_box(
                postcard::from_bytes::<Vec<GameMessage>>(black_box(&postcard_bytes))
                    .unwrap_or_else(|e| panic!("{e}")),
            )
        })
    });
    group.finish();
}

/// One message per buffer, as a packet carries them: every message encoded on its own
/// into a reused buffer, and decoded from its own bytes.
fn bench_each(c: &mut Criterion) {
    let mut messages = workload(MESSAGES, SEED);
    let owned = messages.clone();
    let mut buf = vec![0u8; GameMessage::MAX_BITS.div_ceil(8)];
    let ours: Vec<Vec<u8>> = messages
        .iter_mut()
        .map(|m| netproto::encode(m).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let mut bitcode_buffer = bitcode::Buffer::new();
    let theirs: Vec<Vec<u8>> = owned
        .iter()
        .map(|m| bitcode_buffer.encode(m).to_vec())
        .collect();

    let mut group = c.benchmark_group("encode_each");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            let mut total = 0;
            for message in black_box(&mut messages).iter_mut() {
                total += netproto::encode_into(message, &mut buf).unwrap_or_else(|e| panic!("{e}"));
            }
            total
        })
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            let mut total = 0;
            for message in black_box(&owned) {
                total += bitcode_buffer.encode(message).len();
            }
            total
        })
    });
    group.finish();

    let mut group = c.benchmark_group("decode_each");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            for bytes in black_box(&ours) {
                let message: GameMessage =
                    netproto::decode(bytes).unwrap_or_else(|e| panic!("{e}"));
                black_box(message);
            }
        })
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            for bytes in black_box(&theirs) {
                let message: GameMessage = bitcode_buffer
                    .decode(bytes)
                    .unwrap_or_else(|e| panic!("{e}"));
                black_box(message);
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench, bench_each
}
criterion_main!(benches);
