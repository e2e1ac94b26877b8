//! Wire snapshots of message-layer packet payloads.
//!
//! Each snapshot is a payload written by a real [`MessageLayer`], then dissected here
//! field by field following the layout documented in `netproto::channel` (bit offset,
//! width, field, value). The dissector is independent of the layer's reader, so the
//! snapshots check the documentation as much as the code. A layout change fails here
//! until the new snapshot is reviewed (`cargo insta review`).

use netproto::Time;
use netproto::channel::ChannelId;
use std::fmt::Write as _;

use netproto::channel::{BlockConfig, ChannelConfig, ChannelKind, LayerConfig, MessageLayer};
use netproto::packet::Sequence;
use netproto::{NetMessage, ReadStream, Stream, bits_required};
use netproto_examples::game::{ChatMessage, GameMessage, workload};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Blob {
    #[net(max_len = 150)]
    data: Vec<u8>,
}

/// A message set with game messages and small blobs.
#[derive(NetMessage, Debug, Clone, PartialEq)]
enum Snap {
    Game(GameMessage),
    Blob(Blob),
}

/// Dissects `payload` as written under `config`.
fn dissect<M: NetMessage + std::fmt::Debug>(config: &LayerConfig, payload: &[u8]) -> String {
    let mut out = String::new();
    let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
    writeln!(out, "{} bytes: {hex}", payload.len()).ok();
    writeln!(out, "{:>5} {:>5}  field", "bit", "width").ok();
    let mut r = ReadStream::new(payload);
    let mut row = |r: &ReadStream<'_>, start: usize, name: String| {
        writeln!(out, "{start:>5} {:>5}  {name}", r.bits_processed() - start).ok();
    };
    let read = |r: &mut ReadStream<'_>, bits: u32| -> u64 {
        let mut v = 0;
        if bits > 0 {
            r.serialize_bits(&mut v, bits).expect("field");
        }
        v
    };
    let n = config.channels.len() as u64;
    let at = r.bits_processed();
    let entries = read(&mut r, bits_required(0, n));
    row(&r, at, format!("entries = {entries}"));
    for _ in 0..entries {
        let at = r.bits_processed();
        let channel = read(&mut r, bits_required(0, n - 1));
        let c = &config.channels[channel as usize];
        row(&r, at, format!("channel = {channel} ({:?})", c.kind));
        let at = r.bits_processed();
        let count = read(&mut r, bits_required(0, c.max_messages_per_packet as u64));
        row(&r, at, format!("count = {count}"));
        let at = r.bits_processed();
        let fragments = read(&mut r, 1);
        row(&r, at, format!("has_fragments = {fragments}"));
        let reliable = c.kind == ChannelKind::ReliableOrdered;
        let mut previous = 0u32;
        for i in 0..count {
            if reliable {
                let at = r.bits_processed();
                if i == 0 {
                    previous = read(&mut r, 16) as u32;
                    row(&r, at, format!("first id = {previous}"));
                } else {
                    let mut id = 0;
                    r.serialize_relative(previous, &mut id).expect("relative");
                    row(&r, at, format!("relative id = {id} (+{})", id - previous));
                    previous = id;
                }
            }
            let at = r.bits_processed();
            let mut m = M::blank();
            m.serialize(&mut r).expect("message");
            let text = format!("{m:?}");
            let short: String = text.chars().take(60).collect();
            row(&r, at, format!("message {short}"));
        }
        if fragments == 1 {
            let b = c.blocks.expect("blocks");
            let at = r.bits_processed();
            let id = read(&mut r, 16);
            row(&r, at, format!("block id = {id}"));
            let at = r.bits_processed();
            let size = read(&mut r, bits_required(1, b.max_block_size as u64)) + 1;
            row(&r, at, format!("block size = {size} bytes"));
            let at = r.bits_processed();
            let k = read(&mut r, bits_required(1, b.max_fragments_per_packet as u64)) + 1;
            row(&r, at, format!("fragments = {k}"));
            let last = b.max_block_size.div_ceil(b.fragment_size) as u64 - 1;
            for _ in 0..k {
                let at = r.bits_processed();
                let index = read(&mut r, bits_required(0, last));
                row(&r, at, format!("fragment index = {index}"));
                let at = r.bits_processed();
                let start = index as usize * b.fragment_size;
                let len = (size as usize - start).min(b.fragment_size);
                let mut bytes = vec![0u8; len];
                r.serialize_bytes(&mut bytes[..]).expect("fragment bytes");
                row(&r, at, format!("align + {len} fragment bytes"));
            }
        }
    }
    let at = r.bits_processed();
    r.serialize_align().expect("padding");
    row(&r, at, "zero padding".into());
    assert_eq!(r.bytes_read(), payload.len(), "dissector out of step");
    out
}

fn game(i: usize) -> GameMessage {
    workload(16, 5).remove(i)
}

#[test]
fn empty_payload_carries_only_the_entry_count() {
    let config = LayerConfig::default();
    let mut l = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut p = Vec::new();
    l.write_packet(Time::ZERO, Sequence(0), &mut p);
    insta::assert_snapshot!(dissect::<GameMessage>(&config, &p));
}

#[test]
fn reliable_and_unreliable_entries() {
    let config = LayerConfig::default();
    let mut l = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    for i in 0..3 {
        l.send(ChannelId::new(0), game(i)).expect("send");
    }
    l.send(ChannelId::new(1), game(3)).expect("send");
    l.send(ChannelId::new(1), game(4)).expect("send");
    let mut p = Vec::new();
    l.write_packet(Time::ZERO, Sequence(0), &mut p);
    insta::assert_snapshot!(dissect::<GameMessage>(&config, &p));
}

#[test]
fn resend_with_a_gap_in_the_ids() {
    // Ids 0 and 1 go in packet 0, id 2 in packet 1, which is acked; at the resend
    // interval packet 2 carries 0, 1 and the new id 3: 3 is relative (+2) to 1.
    let config = LayerConfig::default();
    let mut l = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut p = Vec::new();
    l.send(ChannelId::new(0), game(0)).expect("send");
    l.send(ChannelId::new(0), game(1)).expect("send");
    l.write_packet(Time::ZERO, Sequence(0), &mut p);
    l.send(ChannelId::new(0), game(2)).expect("send");
    l.write_packet(Time::from_secs_f64(0.05), Sequence(1), &mut p);
    l.on_packet_acked(Sequence(1));
    l.send(
        ChannelId::new(0),
        GameMessage::Chat(ChatMessage {
            from: 3,
            text: "gg".into(),
        }),
    )
    .expect("send");
    l.write_packet(Time::from_secs_f64(0.2), Sequence(2), &mut p);
    insta::assert_snapshot!(dissect::<GameMessage>(&config, &p));
}

#[test]
fn block_fragments_beside_a_message() {
    let config = LayerConfig::with_channels(vec![
        ChannelConfig::reliable()
            .with_max_bits_per_packet(1000)
            .with_blocks(BlockConfig {
                max_block_size: Snap::MAX_BITS.div_ceil(8),
                fragment_size: 40,
                max_fragments_per_packet: 2,
                max_blocks_in_flight: 1,
            }),
    ]);
    let mut l = MessageLayer::<Snap>::new(config.clone()).expect("config");
    l.send(ChannelId::new(0), Snap::Game(game(0)))
        .expect("send");
    let data = (0..150u8).collect();
    l.send(ChannelId::new(0), Snap::Blob(Blob { data }))
        .expect("send");
    l.send(ChannelId::new(0), Snap::Game(game(1)))
        .expect("send");
    let mut p = Vec::new();
    l.write_packet(Time::ZERO, Sequence(0), &mut p);
    let first = dissect::<Snap>(&config, &p);
    l.write_packet(Time::from_secs_f64(0.02), Sequence(1), &mut p);
    let second = dissect::<Snap>(&config, &p);
    insta::assert_snapshot!(format!("packet 0\n{first}\npacket 1\n{second}"));
}
