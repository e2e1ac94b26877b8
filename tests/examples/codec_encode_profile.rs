//! The codec benchmark's encode loops without criterion, for profilers: valgrind's
//! callgrind counts instructions per message, which do not depend on the machine's load
//! (the benchmark's times on a shared machine move by a quarter from run to run).
//!
//! `cargo build --release -p netproto-tests --example codec_encode_profile`, then
//! `target/release/examples/codec_encode_profile WORKLOAD CONTENDER MODE` with
//! `WORKLOAD` one of `game`, `snapshot`, `input`, `CONTENDER` one of `netproto`, `hand`
//! (the benchmark's hand-written packer, same bytes), `MODE` one of `stream`, `packet32`,
//! `each`: encodes the benchmark's 100,000 messages `PASSES` times (default 10) and
//! prints ns per message. Instructions per message: run it under
//! `valgrind --tool=callgrind` with `PASSES=0` and `PASSES=10` and divide the
//! difference by 1,000,000.

use std::hint::black_box;
use std::time::Instant;

use netproto::{NetMessage, WriteStream};

#[path = "../benches/codec/hand.rs"]
#[allow(dead_code)]
mod hand;
#[path = "../benches/codec/snapshot.rs"]
#[allow(dead_code)]
mod snapshot;

/// The benchmark's message count and seed (`tests/benches/codec.rs`).
const MESSAGES: usize = 100_000;
const SEED: u64 = 0x6E65_7470_726F_746F;
const PACKET: usize = 32;

fn netproto_encode<M: NetMessage>(messages: &[M], buf: &mut [u8]) -> usize {
    let mut stream = WriteStream::new(buf);
    for message in messages {
        message.write(&mut stream).expect("a workload message fits");
    }
    stream.finish()
}

fn hand_encode<M>(write: fn(&mut hand::Writer<'_>, &M), messages: &[M], buf: &mut [u8]) -> usize {
    let mut writer = hand::Writer::new(buf);
    for message in messages {
        write(&mut writer, message);
    }
    writer.finish()
}

/// Encodes `messages` in `mode` once; returns the bytes written.
fn pass<M: NetMessage>(
    messages: &[M],
    hand_write: Option<fn(&mut hand::Writer<'_>, &M)>,
    mode: &str,
    buf: &mut [u8],
) -> usize {
    let encode = |chunk: &[M], buf: &mut [u8]| match hand_write {
        Some(write) => hand_encode(write, chunk, buf),
        None => netproto_encode(chunk, buf),
    };
    match mode {
        "stream" => encode(messages, buf),
        "packet32" => messages.chunks(PACKET).map(|p| encode(p, buf)).sum(),
        _ => messages
            .iter()
            .map(|m| encode(std::slice::from_ref(m), buf))
            .sum(),
    }
}

fn run<M: NetMessage>(
    messages: Vec<M>,
    hand_write: fn(&mut hand::Writer<'_>, &M),
    args: &[String],
) {
    let hand = match args[2].as_str() {
        "netproto" => None,
        "hand" => Some(hand_write),
        other => panic!("contender {other:?}: netproto or hand"),
    };
    let mode = args[3].as_str();
    assert!(
        ["stream", "packet32", "each"].contains(&mode),
        "mode {mode:?}: stream, packet32 or each"
    );
    let passes: u32 = std::env::var("PASSES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let mut buf = vec![0u8; messages.len() * M::MAX_BITS.div_ceil(8)];
    let start = Instant::now();
    let mut bytes = 0;
    for _ in 0..passes {
        bytes += pass(black_box(&messages), hand, mode, &mut buf);
    }
    let per = (passes as usize * messages.len()).max(1) as f64;
    println!(
        "{} {} {mode}: {:.1} ns/message, {:.3} B/message",
        args[1],
        args[2],
        start.elapsed().as_nanos() as f64 / per,
        bytes as f64 / per
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(
        args.len() == 4,
        "usage: codec_encode_profile game|snapshot|input netproto|hand stream|packet32|each"
    );
    match args[1].as_str() {
        "game" => run(
            netproto_examples::game::workload(MESSAGES, SEED),
            hand::write_game,
            &args,
        ),
        "snapshot" => run(
            snapshot::workload(&snapshot::SNAPSHOT, MESSAGES, SEED),
            hand::write_snap,
            &args,
        ),
        "input" => run(
            snapshot::workload(&snapshot::INPUT, MESSAGES, SEED),
            hand::write_snap,
            &args,
        ),
        other => panic!("workload {other:?}: game, snapshot or input"),
    }
}
