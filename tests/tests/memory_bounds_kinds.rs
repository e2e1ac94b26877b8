//! The memory bound of a message layer ([`LayerConfig::memory_bound`]) holds for the
//! reliable-unordered and sequenced channel kinds, measured with a counting global
//! allocator: a peer fills a reliable-unordered channel's receive window with messages the
//! application never takes, keeps blocks half sent, floods a sequenced channel, while our
//! side queues values and broadcast encodings ([`Encoded`]) until every queue refuses.
//!
//! One test in this binary: the allocator is process-global.

use netproto::Time;
use netproto::channel::ChannelId;
use std::alloc::System;

use cap::Cap;
use netproto::NetMessage;
use netproto::channel::{BlockConfig, ChannelConfig, Encoded, LayerConfig, MessageLayer};
use netproto::packet::Sequence;

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Num {
    #[net(range = 0..=100_000)]
    n: u32,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Big {
    #[net(max_len = 3000)]
    bytes: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Num(Num),
    Big(Big),
}

/// A `Big` owns at most 3000 bytes of heap.
const MESSAGE_HEAP: usize = 3000;

fn config() -> LayerConfig {
    let blocks = BlockConfig {
        max_block_size: 4000,
        fragment_size: 100,
        max_fragments_per_packet: 4,
        max_blocks_in_flight: 2,
    };
    LayerConfig::with_channels(vec![
        ChannelConfig::reliable_unordered()
            .carries::<Msg, Num>()
            .with_queues(64, 64)
            .with_blocks(blocks),
        ChannelConfig::sequenced()
            .carries::<Msg, Num>()
            .with_queues(64, 64),
        // 1 KiB packets (the bulk preset's 8 KiB would carry `Big` inline): `Big`
        // goes as a block, as on the other block channel.
        ChannelConfig::bulk()
            .with_queues(16, 16)
            .with_blocks(blocks)
            .with_max_bits_per_packet(7936),
    ])
}

#[test]
fn new_kinds_stay_within_the_layer_bound() {
    let config = config();
    let bound = config.memory_bound::<Msg>(MESSAGE_HEAP);
    // The peer's payloads, made before the baseline: everything it can send.
    let mut peer = MessageLayer::<Msg>::new(config.clone()).expect("valid");
    let mut payloads = Vec::new();
    for round in 0..400u32 {
        // The unordered channel fills the receiver's window once (the application
        // never takes those: more would only be refused); the sequenced one always.
        for c in 0..2 {
            while peer.can_send(ChannelId::new(c)) && (c == 1 || round == 0) {
                peer.send(ChannelId::new(c), Msg::Num(Num { n: round }))
                    .expect("room");
            }
        }
        while peer.can_send(ChannelId::new(2)) {
            let bytes = vec![round as u8; 2900];
            peer.send(ChannelId::new(2), Msg::Big(Big { bytes }))
                .expect("room");
        }
        let mut payload = Vec::new();
        peer.write_packet(
            Time::from_secs_f64(f64::from(round)),
            Sequence(round as u16),
            &mut payload,
        );
        // Every other packet acked: blocks stay half sent, ids move on.
        if round % 2 == 0 {
            peer.on_packet_acked(Sequence(round as u16));
        }
        payloads.push(payload);
    }
    drop(peer);
    let mut encoded = Encoded::new(&Msg::Num(Num { n: 7 }))
        .expect("valid")
        .expect("position free");

    let before = ALLOC.allocated();
    let mut layer = MessageLayer::<Msg>::new(config.clone()).expect("valid");
    let mut peak = ALLOC.allocated() - before;
    let mut accepted = 0;
    for (i, payload) in payloads.iter().enumerate() {
        accepted += usize::from(layer.read_packet(payload).is_ok());
        // Our own queues, full: values and encodings on every channel.
        for c in 0..3 {
            loop {
                let sent = if i % 2 == 0 {
                    layer.send(
                        ChannelId::new(c),
                        Msg::Big(Big {
                            bytes: vec![1; 2900],
                        }),
                    )
                } else {
                    // A fresh encoding each time: none shared.
                    encoded = Encoded::new(&Msg::Num(Num { n: i as u32 }))
                        .expect("valid")
                        .expect("position free");
                    layer.send_encoded(ChannelId::new(c), &encoded)
                };
                if sent.is_err() {
                    break;
                }
            }
        }
        let mut out = Vec::new();
        layer.write_packet(Time::from_secs_f64(i as f64), Sequence(i as u16), &mut out);
        drop(out);
        peak = peak.max(ALLOC.allocated() - before);
        // The application never takes the reliable-unordered or sequenced messages.
    }
    println!("accepted {accepted} payloads; peak {peak} bytes; bound {bound} bytes");
    assert!(accepted > 100);
    assert!(
        layer.receive_queue_len(ChannelId::new(0)) > 0
            && layer.receive_queue_len(ChannelId::new(1)) > 0
    );
    assert!(peak <= bound, "peak {peak} above the bound {bound}");
    drop(encoded);
}
