//! Encode/decode of three game workloads by netproto and, in the same run, by the crates
//! a Rust game programmer would pick instead (bitcode, bincode, postcard) and by a
//! hand-written bit-packer with the same declared widths (`hand`: the floor a derive must
//! beat; its bytes are netproto's).
//!
//! `cargo bench -p netproto-tests --bench codec`. Workloads, 100,000 seeded messages each:
//!
//! - `game`: the arena's mix (`examples/src/game.rs`): 50% inputs, 30% entity updates,
//!   10% id batches, 5% chat, 5% match-phase changes;
//! - `snapshot`: 80% entity updates with four quantized floats, a 16-bit yaw and an enum,
//!   12% inputs with a full `u32` tick, buttons and two quantized angles, 4% chat lines,
//!   4% id batches (`codec/snapshot.rs`);
//! - `input`: the same messages, 85% inputs, 10% entity updates, 3% chat, 2% id batches.
//!
//! Modes, as groups `<workload>/<mode>/<encode|decode>`: `stream` runs the whole workload
//! through one buffer (the serde crates encode the `Vec`); `packet32` gives every 32
//! consecutive messages their own buffer, as a packet does (the serde crates encode each
//! 32-message `Vec`); `each` gives every message its own buffer (bitcode through a
//! reused `bitcode::Buffer`). Before timing, it prints a size table per workload: bytes
//! per message for each encoding against the information minimum implied by the declared
//! ranges (`log2` of the number of values each field may take).
//!
//! netproto encodes from shared references and decodes each message into a blank one,
//! through the trait's methods that `encode`/`decode` and the channel layer use
//! (`NetMessage::write`, `NetMessage::serialize`: their fast paths are behind them).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use netproto::{NetMessage, ReadStream, WriteStream};
use netproto_examples::game::{EntityState, GameMessage, MatchPhase};

#[path = "codec/hand.rs"]
mod hand;
#[path = "codec/snapshot.rs"]
mod snapshot;

use snapshot::SnapMessage;

const MESSAGES: usize = 100_000;
const PACKET: usize = 32;
const SEED: u64 = 0x6E65_7470_726F_746F;

/// `log2` of a field's values.
fn field(values: f64) -> f64 {
    values.log2()
}

/// `log2` of the values the declarations allow for one game message.
fn game_minimum(message: &GameMessage) -> f64 {
    let quantized = |steps: f64| field(steps + 1.0);
    let body = match message {
        GameMessage::Input(_) => {
            field(64.0)
                + field(256.0)
                + quantized(6284.0)
                + quantized(3142.0)
                + field(15.0)
                + field(15.0)
        }
        GameMessage::Update(m) => {
            let state = match m.state {
                EntityState::Idle => 0.0,
                EntityState::Moving { .. } => field(16.0),
                EntityState::Attacking { .. } => field(4096.0),
                EntityState::Dead { .. } => field(301.0),
            };
            field(4096.0)
                + quantized(204_800.0) * 2.0
                + quantized(51_200.0)
                + quantized(629.0)
                + field(101.0)
                + field(4.0)
                + state
        }
        GameMessage::Chat(m) => field(64.0) + field(141.0) + m.text.len() as f64 * 8.0,
        GameMessage::Batch(m) => field(65.0) + m.ids.len() as f64 * 12.0,
        GameMessage::Phase(m) => {
            field(4.0)
                + match m {
                    MatchPhase::Warmup { .. } => field(65.0),
                    MatchPhase::Countdown { .. } => field(11.0),
                    MatchPhase::Playing { .. } => field(30.0) + field(1000.0) * 2.0,
                    MatchPhase::RoundOver { .. } => field(3.0),
                }
        }
    };
    field(5.0) + body
}

/// `log2` of the values the declarations allow for one snapshot-set message.
fn snap_minimum(message: &SnapMessage) -> f64 {
    let quantized = |steps: f64| field(steps + 1.0);
    field(4.0)
        + match message {
            SnapMessage::Entity(_) => {
                field(16384.0)
                    + quantized(409_600.0) * 2.0
                    + quantized(102_400.0)
                    + quantized(6400.0)
                    + 16.0
                    + field(6.0)
            }
            SnapMessage::Input(_) => 32.0 + 10.0 + quantized(12_567.0) + quantized(6284.0),
            SnapMessage::Chat(m) => field(64.0) + field(97.0) + m.text.len() as f64 * 8.0,
            SnapMessage::Ids(m) => field(33.0) + m.ids.len() as f64 * 14.0,
        }
}

/// What every compared message type implements.
trait Compared:
    NetMessage
    + Clone
    + bitcode::Encode
    + for<'a> bitcode::Decode<'a>
    + bincode::Encode
    + bincode::Decode<()>
    + serde::Serialize
    + for<'a> serde::Deserialize<'a>
{
}

impl<T> Compared for T where
    T: NetMessage
        + Clone
        + bitcode::Encode
        + for<'a> bitcode::Decode<'a>
        + bincode::Encode
        + bincode::Decode<()>
        + serde::Serialize
        + for<'a> serde::Deserialize<'a>
{
}

/// A workload and its hand-written codec.
struct Workload<M> {
    name: &'static str,
    messages: Vec<M>,
    minimum: fn(&M) -> f64,
    hand_write: fn(&mut hand::Writer<'_>, &M),
    hand_read: fn(&mut hand::Reader<'_>) -> Option<M>,
}

fn netproto_encode<M: NetMessage>(messages: &[M], buf: &mut [u8]) -> usize {
    let mut stream = WriteStream::new(buf);
    for message in messages {
        if let Err(err) = message.write(&mut stream) {
            panic!("workload message rejected: {err}");
        }
    }
    stream.finish()
}

/// Fills blank messages in place, as the serialize function is made to: decoding each
/// into a local and pushing it copies every message once more.
fn netproto_decode<M: NetMessage>(bytes: &[u8], count: usize) -> Vec<M> {
    let mut stream = ReadStream::new(bytes);
    let mut out = Vec::with_capacity(count);
    out.resize_with(count, M::blank);
    for message in out.iter_mut() {
        if let Err(err) = message.serialize(&mut stream) {
            panic!("decode failed: {err}");
        }
    }
    out
}

fn hand_encode<M>(w: &Workload<M>, messages: &[M], buf: &mut [u8]) -> usize {
    let mut writer = hand::Writer::new(buf);
    for message in messages {
        (w.hand_write)(&mut writer, message);
    }
    writer.finish()
}

fn hand_decode<M>(w: &Workload<M>, bytes: &[u8], count: usize) -> Vec<M> {
    let mut reader = hand::Reader::new(bytes);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        match (w.hand_read)(&mut reader) {
            Some(m) => out.push(m),
            None => panic!("hand decode failed"),
        }
    }
    assert_eq!(reader.bytes_read(), bytes.len());
    out
}

fn bincode_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

fn sizes<M: Compared>(w: &Workload<M>) {
    let n = w.messages.len() as f64;
    let info: f64 = w.messages.iter().map(w.minimum).sum::<f64>() / 8.0;
    let mut buf = vec![0u8; w.messages.len() * M::MAX_BITS.div_ceil(8)];
    let ours = netproto_encode(&w.messages, &mut buf);
    let owned = w.messages.clone();
    let bitcode_len = bitcode::encode(&owned).len();
    let bincode_len = bincode::encode_to_vec(&owned, bincode_config()).map_or(0, |v| v.len());
    let postcard_len = postcard::to_allocvec(&owned).map_or(0, |v| v.len());
    println!(
        "\nworkload {}: {} messages (seed {SEED:#x})",
        w.name,
        w.messages.len()
    );
    println!(
        "  {:<28} {:>10} {:>10}",
        "encoding", "B/message", "x minimum"
    );
    let row = |name: &str, bytes: f64| {
        println!("  {:<28} {:>10.3} {:>10.3}", name, bytes / n, bytes / info);
    };
    row("information minimum", info);
    row("netproto (= hand)", ours as f64);
    row("bitcode 0.6", bitcode_len as f64);
    row("bincode 2 (varint)", bincode_len as f64);
    row("postcard 1", postcard_len as f64);
    println!();
}

fn bench_workload<M: Compared>(c: &mut Criterion, w: &Workload<M>) {
    sizes(w);
    let messages = &w.messages;
    let count = messages.len();
    let owned: Vec<M> = messages.clone();
    let packets: Vec<Vec<M>> = messages.chunks(PACKET).map(<[M]>::to_vec).collect();
    let max_bytes = M::MAX_BITS.div_ceil(8);

    // The bytes of every encoding, and the checks that the rows compare the same work.
    let mut buf = vec![0u8; count * max_bytes];
    let ours_len = netproto_encode(messages, &mut buf);
    let ours = buf[..ours_len].to_vec();
    let hand_len = hand_encode(w, messages, &mut buf);
    assert_eq!(&buf[..hand_len], &ours[..], "{}: hand bytes differ", w.name);
    let decoded: Vec<M> = netproto_decode(&ours, count);
    assert_eq!(netproto_encode(&decoded, &mut buf), ours_len, "roundtrip");
    let hand_decoded = hand_decode(w, &ours, count);
    assert_eq!(netproto_encode(&hand_decoded, &mut buf), ours_len);
    assert_eq!(
        &buf[..ours_len],
        &ours[..],
        "{}: hand decode differs",
        w.name
    );
    let bitcode_bytes = bitcode::encode(&owned);
    let bincode_bytes =
        bincode::encode_to_vec(&owned, bincode_config()).unwrap_or_else(|e| panic!("{e}"));
    let postcard_bytes = postcard::to_allocvec(&owned).unwrap_or_else(|e| panic!("{e}"));
    let mut slice = vec![0u8; bincode_bytes.len() + postcard_bytes.len()];

    let ours_packets: Vec<Vec<u8>> = messages
        .chunks(PACKET)
        .map(|p| {
            let mut b = vec![0u8; p.len() * max_bytes];
            let n = netproto_encode(p, &mut b);
            b.truncate(n);
            b
        })
        .collect();
    let mut bitcode_buffer = bitcode::Buffer::new();
    let bitcode_packets: Vec<Vec<u8>> = packets
        .iter()
        .map(|p| bitcode_buffer.encode(p).to_vec())
        .collect();
    let bincode_packets: Vec<Vec<u8>> = packets
        .iter()
        .map(|p| bincode::encode_to_vec(p, bincode_config()).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let postcard_packets: Vec<Vec<u8>> = packets
        .iter()
        .map(|p| postcard::to_allocvec(p).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let ours_each: Vec<Vec<u8>> = messages
        .iter()
        .map(|m| netproto::encode(m).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let bitcode_each: Vec<Vec<u8>> = owned
        .iter()
        .map(|m| bitcode_buffer.encode(m).to_vec())
        .collect();
    let mut packet_buf = vec![0u8; PACKET * max_bytes];
    let mut message_buf = vec![0u8; max_bytes];

    let name = w.name;
    let mut group = c.benchmark_group(format!("{name}/stream/encode"));
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| netproto_encode(black_box(messages), &mut buf))
    });
    group.bench_function("hand", |b| {
        b.iter(|| hand_encode(w, black_box(messages), &mut buf))
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| bitcode_buffer.encode(black_box(&owned)).len())
    });
    group.bench_function("bincode", |b| {
        b.iter(|| {
            bincode::encode_into_slice(black_box(&owned), &mut slice, bincode_config())
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

    let mut group = c.benchmark_group(format!("{name}/stream/decode"));
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| netproto_decode::<M>(black_box(&ours), count))
    });
    group.bench_function("hand", |b| {
        b.iter(|| hand_decode(w, black_box(&ours), count))
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            bitcode_buffer
                .decode::<Vec<M>>(black_box(&bitcode_bytes))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.bench_function("bincode", |b| {
        b.iter(|| {
            bincode::decode_from_slice::<Vec<M>, _>(black_box(&bincode_bytes), bincode_config())
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.bench_function("postcard", |b| {
        b.iter(|| {
            postcard::from_bytes::<Vec<M>>(black_box(&postcard_bytes))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("{name}/packet32/encode"));
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            let mut total = 0;
            for packet in black_box(messages).chunks(PACKET) {
                total += netproto_encode(packet, &mut packet_buf);
            }
            total
        })
    });
    group.bench_function("hand", |b| {
        b.iter(|| {
            let mut total = 0;
            for packet in black_box(messages).chunks(PACKET) {
                total += hand_encode(w, packet, &mut packet_buf);
            }
            total
        })
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            let mut total = 0;
            for packet in black_box(&packets) {
                total += bitcode_buffer.encode(packet).len();
            }
            total
        })
    });
    group.bench_function("bincode", |b| {
        b.iter(|| {
            let mut total = 0;
            for packet in black_box(&packets) {
                total += bincode::encode_into_slice(packet, &mut packet_buf, bincode_config())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            total
        })
    });
    group.bench_function("postcard", |b| {
        b.iter(|| {
            let mut total = 0;
            for packet in black_box(&packets) {
                total += postcard::to_slice(packet, &mut packet_buf)
                    .map(|s| s.len())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            total
        })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("{name}/packet32/decode"));
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            for (bytes, packet) in black_box(&ours_packets).iter().zip(&packets) {
                black_box(netproto_decode::<M>(bytes, packet.len()));
            }
        })
    });
    group.bench_function("hand", |b| {
        b.iter(|| {
            for (bytes, packet) in black_box(&ours_packets).iter().zip(&packets) {
                black_box(hand_decode(w, bytes, packet.len()));
            }
        })
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            for bytes in black_box(&bitcode_packets) {
                let packet: Vec<M> = bitcode_buffer
                    .decode(bytes)
                    .unwrap_or_else(|e| panic!("{e}"));
                black_box(packet);
            }
        })
    });
    group.bench_function("bincode", |b| {
        b.iter(|| {
            for bytes in black_box(&bincode_packets) {
                black_box(
                    bincode::decode_from_slice::<Vec<M>, _>(bytes, bincode_config())
                        .unwrap_or_else(|e| panic!("{e}")),
                );
            }
        })
    });
    group.bench_function("postcard", |b| {
        b.iter(|| {
            for bytes in black_box(&postcard_packets) {
                black_box(postcard::from_bytes::<Vec<M>>(bytes).unwrap_or_else(|e| panic!("{e}")));
            }
        })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("{name}/each/encode"));
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            let mut total = 0;
            for message in black_box(messages) {
                total += netproto::encode_into(message, &mut message_buf)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            total
        })
    });
    group.bench_function("hand", |b| {
        b.iter(|| {
            let mut total = 0;
            for message in black_box(messages) {
                total += hand_encode(w, std::slice::from_ref(message), &mut message_buf);
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

    let mut group = c.benchmark_group(format!("{name}/each/decode"));
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("netproto", |b| {
        b.iter(|| {
            for bytes in black_box(&ours_each) {
                let message: M = netproto::decode(bytes).unwrap_or_else(|e| panic!("{e}"));
                black_box(message);
            }
        })
    });
    group.bench_function("hand", |b| {
        b.iter(|| {
            for bytes in black_box(&ours_each) {
                let mut reader = hand::Reader::new(bytes);
                let message = (w.hand_read)(&mut reader).unwrap_or_else(|| panic!("hand"));
                black_box(message);
            }
        })
    });
    group.bench_function("bitcode", |b| {
        b.iter(|| {
            for bytes in black_box(&bitcode_each) {
                let message: M = bitcode_buffer
                    .decode(bytes)
                    .unwrap_or_else(|e| panic!("{e}"));
                black_box(message);
            }
        })
    });
    group.finish();
}

fn game(c: &mut Criterion) {
    bench_workload(
        c,
        &Workload {
            name: "game",
            messages: netproto_examples::game::workload(MESSAGES, SEED),
            minimum: game_minimum,
            hand_write: hand::write_game,
            hand_read: hand::read_game,
        },
    );
}

fn snapshot(c: &mut Criterion) {
    bench_workload(
        c,
        &Workload {
            name: "snapshot",
            messages: snapshot::workload(&snapshot::SNAPSHOT, MESSAGES, SEED),
            minimum: snap_minimum,
            hand_write: hand::write_snap,
            hand_read: hand::read_snap,
        },
    );
}

fn input(c: &mut Criterion) {
    bench_workload(
        c,
        &Workload {
            name: "input",
            messages: snapshot::workload(&snapshot::INPUT, MESSAGES, SEED),
            minimum: snap_minimum,
            hand_write: hand::write_snap,
            hand_read: hand::read_snap,
        },
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = game, snapshot, input
}
criterion_main!(benches);
