//! Hostile payloads for the message layer: every malformed field is rejected and
//! counted, nothing of a rejected payload is delivered, nothing panics, and memory
//! stays within the configuration.

use netproto::Time;
use netproto::channel::ChannelId;
use netproto::channel::{
    BlockConfig, ChannelConfig, ChannelSendError, LayerConfig, MessageLayer, PayloadError,
};
use netproto::packet::Sequence;
use netproto::sim::Rng;
use netproto::{ErrorKind, NetMessage, Stream, StreamError, WriteStream};
use netproto_examples::game::{GameMessage, workload};
use netproto_tests::handmade::{bits, build};

/// Channel 0: reliable with blocks; 1: unreliable; 2: reliable without blocks.
/// Three channels: 2 bits of entry count, 2 of channel index; 5 messages per packet
/// at most: 3 bits of count.
fn config() -> LayerConfig {
    LayerConfig::with_channels(vec![
        ChannelConfig::reliable()
            .with_max_messages_per_packet(5)
            .with_blocks(BlockConfig {
                max_block_size: 1000,
                fragment_size: 100,
                max_fragments_per_packet: 3,
                max_blocks_in_flight: 1,
            }),
        ChannelConfig::unreliable().with_max_messages_per_packet(5),
        ChannelConfig::reliable().with_max_messages_per_packet(5),
    ])
}

fn layer() -> MessageLayer<GameMessage> {
    MessageLayer::new(config()).expect("valid config")
}

fn message(i: u64) -> GameMessage {
    workload(1, i).remove(0)
}

/// The wire form (quantized floats come back quantized).
fn enc(m: GameMessage) -> Vec<u8> {
    netproto::encode(&m).expect("valid")
}

type W<'a> = WriteStream<'a>;

/// Entry header: channel (2 bits), count (3 bits), has_fragments (1 bit).
fn entry(w: &mut W<'_>, channel: u64, count: u64, fragments: bool) -> Result<(), StreamError> {
    bits(w, channel, 2)?;
    bits(w, count, 3)?;
    bits(w, u64::from(fragments), 1)
}

/// One fragment group: block id, size in [1, 1000] (10 bits), count in [1, 3] (2 bits),
/// then each fragment's index in [0, 9] (4 bits) and bytes.
fn group(w: &mut W<'_>, id: u16, size: u32, fragments: &[(u32, &[u8])]) -> Result<(), StreamError> {
    bits(w, u64::from(id), 16)?;
    bits(w, u64::from(size - 1), 10)?;
    bits(w, fragments.len() as u64 - 1, 2)?;
    for (index, data) in fragments {
        bits(w, u64::from(*index), 4)?;
        w.serialize_bytes(*data)?;
    }
    Ok(())
}

fn reject(layer: &mut MessageLayer<GameMessage>, payload: &[u8]) -> PayloadError {
    let before = layer.stats();
    let e = layer.read_packet(payload).expect_err("must be rejected");
    let after = layer.stats();
    assert_eq!(
        after.payloads_dropped_malformed,
        before.payloads_dropped_malformed + 1,
        "{e}"
    );
    for channel in 0..3 {
        assert_eq!(
            layer.receive(ChannelId::new(channel)),
            None,
            "{e}: something was delivered"
        );
    }
    e
}

fn malformed(e: PayloadError) -> ErrorKind {
    match e {
        PayloadError::Malformed(e) => e.kind(),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn a_hand_written_payload_is_accepted() {
    // The helpers write the documented layout: a control for the rejections below.
    let (a, b) = (message(1), message(2));
    let payload = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 0, 2, false)?;
        bits(w, 0, 16)?;
        a.clone().serialize(w)?;
        w.serialize_relative(0, &mut 1)?;
        b.clone().serialize(w)
    });
    let mut l = layer();
    l.read_packet(&payload).expect("valid");
    assert_eq!(l.receive(ChannelId::new(0)).map(enc), Some(enc(a)));
    assert_eq!(l.receive(ChannelId::new(0)).map(enc), Some(enc(b)));
}

#[test]
fn bad_channel_index_and_order() {
    let mut l = layer();
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 3, 1, false)
    });
    assert_eq!(reject(&mut l, &p), PayloadError::BadChannel(3));
    // Entries must come in increasing channel order (no entry twice).
    let p = build(|w| {
        bits(w, 2, 2)?;
        entry(w, 1, 1, false)?;
        message(1).serialize(w)?;
        entry(w, 1, 1, false)?;
        message(2).serialize(w)
    });
    assert_eq!(reject(&mut l, &p), PayloadError::BadChannel(1));
    // Three entries announced, one byte of payload.
    let p = build(|w| bits(w, 3, 2));
    reject(&mut l, &p);
}

#[test]
fn message_count_zero_or_above_the_maximum() {
    let mut l = layer();
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 1, 0, false)
    });
    assert_eq!(reject(&mut l, &p), PayloadError::EmptyEntry(1));
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 1, 6, false)
    });
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::TooLong);
    // A count the bytes cannot hold.
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 1, 5, false)?;
        message(1).serialize(w)
    });
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::PastEnd);
}

#[test]
fn type_id_out_of_range() {
    // GameMessage has 5 types: a 3-bit type id of 5, 6 or 7 is unknown.
    let mut l = layer();
    for id in 5..8 {
        let p = build(|w| {
            bits(w, 1, 2)?;
            entry(w, 1, 1, false)?;
            bits(w, id, 3)?;
            bits(w, 0, 64)
        });
        assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::UnknownVariant);
    }
}

#[test]
fn ids_beyond_the_window_are_a_protocol_error() {
    let mut l = layer();
    assert_eq!(l.protocol_error(), None);
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 0, 1, false)?;
        bits(w, 5000, 16)?;
        message(1).serialize(w)
    });
    let e = reject(&mut l, &p);
    assert_eq!(
        e,
        PayloadError::OutsideWindow {
            channel: 0,
            id: 5000
        }
    );
    assert_eq!(l.protocol_error(), Some(e));
    // Ids just behind the window are duplicates of delivered messages: accepted,
    // ignored, counted.
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 0, 1, false)?;
        bits(w, 65000, 16)?;
        message(1).serialize(w)
    });
    l.read_packet(&p).expect("old id");
    assert_eq!(l.receive(ChannelId::new(0)), None);
    assert_eq!(l.stats().messages_dropped_duplicate, 1);
}

#[test]
fn relative_ids_that_overflow_or_do_not_increase() {
    let mut l = layer();
    // The last tier of the ladder: 6 flag bits of 0 then the id itself in 32 bits.
    let raw = |w: &mut W<'_>, value: u64| -> Result<(), StreamError> {
        bits(w, 0, 6)?;
        bits(w, value, 32)
    };
    for (second, expected) in [
        (u64::from(u32::MAX), None),
        (65535 + 1024, None),
        (3, Some(ErrorKind::NotIncreasing)),
        (65535, Some(ErrorKind::NotIncreasing)),
    ] {
        let p = build(|w| {
            bits(w, 1, 2)?;
            entry(w, 0, 2, false)?;
            bits(w, 65535, 16)?;
            message(1).serialize(w)?;
            raw(w, second)?;
            message(2).serialize(w)
        });
        let e = reject(&mut l, &p);
        match expected {
            Some(kind) => assert_eq!(malformed(e), kind),
            None => assert_eq!(e, PayloadError::IdSpan { channel: 0 }),
        }
    }
}

#[test]
fn bad_block_fragments() {
    let data = [7u8; 100];
    let mut l = layer();
    let with = |channel: u64, f: &dyn Fn(&mut W<'_>) -> Result<(), StreamError>| {
        build(|w| {
            bits(w, 1, 2)?;
            entry(w, channel, 0, true)?;
            f(w)
        })
    };
    // On an unreliable channel, and on a reliable channel without blocks.
    for channel in [1, 2] {
        let p = with(channel, &|w| group(w, 0, 250, &[(0, &data)]));
        assert!(matches!(
            reject(&mut l, &p),
            PayloadError::BadFragment { .. }
        ));
    }
    // Index beyond the block (250 bytes: fragments 0..=2), and beyond any block.
    let p = with(0, &|w| group(w, 0, 250, &[(3, &data)]));
    assert!(matches!(
        reject(&mut l, &p),
        PayloadError::BadFragment { .. }
    ));
    let p = with(0, &|w| {
        bits(w, 0, 16)?;
        bits(w, 249, 10)?;
        bits(w, 0, 2)?;
        bits(w, 15, 4)
    });
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::OutOfRange);
    // Indexes not increasing.
    let p = with(0, &|w| group(w, 0, 250, &[(1, &data), (0, &data)]));
    assert!(matches!(
        reject(&mut l, &p),
        PayloadError::BadFragment { .. }
    ));
    // Fragment count above max_fragments_per_packet (2 bits of [1, 3]: raw 3 is 4).
    let p = with(0, &|w| {
        bits(w, 0, 16)?;
        bits(w, 249, 10)?;
        bits(w, 3, 2)
    });
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::OutOfRange);
    // A count the bytes do not hold.
    let p = with(0, &|w| {
        bits(w, 0, 16)?;
        bits(w, 249, 10)?;
        bits(w, 2, 2)?;
        bits(w, 0, 4)?;
        w.serialize_bytes(&data[..])
    });
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::PastEnd);
    // Size above max_block_size (10 bits of [1, 1000]: raw 1023 is 1024).
    let p = with(0, &|w| {
        bits(w, 0, 16)?;
        bits(w, 1023, 10)
    });
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::OutOfRange);
    // A last fragment of the wrong length: its bytes are read as the next fields.
    let p = with(0, &|w| group(w, 0, 250, &[(2, &data)]));
    assert!(matches!(reject(&mut l, &p), PayloadError::Malformed(_)));

    // A valid first fragment starts a reassembly...
    let p = with(0, &|w| group(w, 0, 250, &[(0, &data)]));
    l.read_packet(&p).expect("valid fragment");
    // ... then a different size for the same block, or another block, is refused.
    let p = with(0, &|w| group(w, 0, 300, &[(1, &data)]));
    assert!(matches!(
        reject(&mut l, &p),
        PayloadError::BadFragment { .. }
    ));
    let p = with(0, &|w| group(w, 1, 250, &[(0, &data)]));
    assert!(matches!(
        reject(&mut l, &p),
        PayloadError::BadFragment { .. }
    ));
    // A block id beyond the window.
    let p = with(0, &|w| group(w, 20000, 250, &[(0, &data)]));
    assert!(matches!(
        reject(&mut l, &p),
        PayloadError::OutsideWindow { .. }
    ));
    // Completing the block with bytes that do not decode (type id 7 of 5).
    let junk = [0xffu8; 100];
    let p = with(0, &|w| group(w, 0, 250, &[(1, &junk), (2, &junk[..50])]));
    assert!(matches!(reject(&mut l, &p), PayloadError::BadBlock { .. }));
    assert_eq!(l.receive(ChannelId::new(0)), None);
}

#[test]
fn a_bad_entry_drops_the_whole_payload() {
    let mut l = layer();
    let good = message(1);
    let bad = build(|w| {
        bits(w, 2, 2)?;
        entry(w, 0, 1, false)?;
        bits(w, 0, 16)?;
        good.clone().serialize(w)?;
        entry(w, 1, 1, false)?;
        bits(w, 7, 3)?; // unknown type
        bits(w, 0, 64)
    });
    assert_eq!(malformed(reject(&mut l, &bad)), ErrorKind::UnknownVariant);
    // Id 0 was not consumed: the same message in a valid payload is delivered.
    let p = build(|w| {
        bits(w, 1, 2)?;
        entry(w, 0, 1, false)?;
        bits(w, 0, 16)?;
        good.clone().serialize(w)
    });
    l.read_packet(&p).expect("valid");
    assert_eq!(l.receive(ChannelId::new(0)).map(enc), Some(enc(good)));
    // Trailing bytes after the entries.
    let mut p = build(|w| bits(w, 0, 2));
    p.push(0);
    assert_eq!(malformed(reject(&mut l, &p)), ErrorKind::TrailingBytes);
    assert_eq!(malformed(reject(&mut l, &[])), ErrorKind::PastEnd);
}

/// Valid payloads from a real sender whose every packet is acked at once, written
/// until its queues are empty; and, per channel, the encodings of the messages a
/// reader of those payloads must deliver (all of them: nothing is lost).
fn valid_payloads() -> (Vec<Vec<u8>>, Vec<Vec<Vec<u8>>>) {
    let mut sender = layer();
    let mut payloads = Vec::new();
    let mut sent = vec![Vec::new(); 3];
    let mut sequence = Sequence(0);
    let mut write = |sender: &mut MessageLayer<GameMessage>, now: f64| {
        let mut p = Vec::new();
        sender.write_packet(Time::from_secs_f64(now), sequence, &mut p);
        sender.on_packet_acked(sequence);
        sequence = sequence.next();
        payloads.push(p);
    };
    for (i, m) in workload(400, 3).into_iter().enumerate() {
        let encoding = enc(m.clone());
        match sender.send(ChannelId::new(i % 3), m) {
            Ok(()) => sent[i % 3].push(encoding),
            Err(ChannelSendError::QueueFull { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        if i % 7 == 6 {
            write(&mut sender, i as f64 * 0.01);
        }
    }
    for k in 0..100 {
        if (0..3).all(|c| sender.send_queue_len(ChannelId::new(c)) == 0) {
            break;
        }
        write(&mut sender, 10.0 + f64::from(k) * 0.01);
    }
    assert!(
        (0..3).all(|c| sender.send_queue_len(ChannelId::new(c)) == 0),
        "the sender drained"
    );
    (payloads, sent)
}

/// Takes every delivered message of `l`, checking that each re-encodes to bytes that
/// decode to the same message (and re-encode to the same bytes); returns the encodings.
fn take_checked(l: &mut MessageLayer<GameMessage>) -> Vec<Vec<Vec<u8>>> {
    (0..3)
        .map(|channel| {
            std::iter::from_fn(|| l.receive(ChannelId::new(channel)))
                .map(|m| {
                    netproto_tests::fuzz::check_round_trip(&m);
                    enc(m)
                })
                .collect()
        })
        .collect()
}

#[test]
fn valid_payloads_deliver_exactly_what_was_sent() {
    // The control of the hostile run below: the same payloads, unaltered and in order.
    let (payloads, sent) = valid_payloads();
    let mut l = layer();
    for p in &payloads {
        l.read_packet(p).expect("a valid payload");
    }
    let got = take_checked(&mut l);
    assert_eq!(
        got, sent,
        "delivered (per channel) differs from what was sent"
    );
    assert!(sent.iter().all(|c| !c.is_empty()));
    assert_eq!(l.stats().payloads_read, payloads.len() as u64);
    assert_eq!(
        l.stats().payloads_dropped_malformed + l.stats().payloads_dropped_receive_queue_full,
        0
    );
}

/// Hostile payloads per class: (cases, accepted, messages delivered). Measured: the
/// run is seeded, so any change in what the layer accepts shows here.
const NOISE: (u64, u64, u64) = (50_000, 1, 0);
const MUTATED: (u64, u64, u64) = (50_000, 25_164, 58_323);

#[test]
fn random_and_mutated_payloads_never_panic_and_memory_stays_bounded() {
    let mut rng = Rng::new(0xbad);
    let (valid, _) = valid_payloads();
    let mut l = layer();
    // Per class (noise, mutated): cases, accepted, messages delivered.
    let mut noise = (0u64, 0u64, 0u64);
    let mut mutated = (0u64, 0u64, 0u64);
    let mut rejected = 0u64;
    for case in 0..NOISE.0 + MUTATED.0 {
        let is_noise = case % 2 == 0;
        let payload = if is_noise {
            let mut p = vec![0u8; rng.below(200) as usize];
            rng.fill_bytes(&mut p);
            p
        } else {
            let mut p = valid[rng.below(valid.len() as u64) as usize].clone();
            for _ in 0..1 + rng.below(4) {
                if p.is_empty() {
                    break;
                }
                let i = rng.below(p.len() as u64) as usize;
                p[i] ^= 1 << rng.below(8);
            }
            if rng.chance(0.2) {
                p.truncate(rng.below(p.len() as u64 + 1) as usize);
            }
            p
        };
        let class = if is_noise { &mut noise } else { &mut mutated };
        class.0 += 1;
        match l.read_packet(&payload) {
            Ok(()) => class.1 += 1,
            Err(_) => rejected += 1,
        }
        // What an accepted payload delivered is taken at once, so each message is
        // charged to the payload that delivered it, and checked: it re-encodes to bytes
        // that decode to itself.
        class.2 += take_checked(&mut l).iter().map(Vec::len).sum::<usize>() as u64;
        for (channel, c) in config().channels.iter().enumerate() {
            assert!(l.receive_queue_len(ChannelId::new(channel)) <= c.receive_queue_size);
        }
    }
    let counters = l.stats();
    println!(
        "hostile payloads: noise {noise:?}, mutated {mutated:?} (cases, accepted, messages \
         delivered); {rejected} rejected; counters {counters:?}"
    );
    assert_eq!(
        (noise, mutated),
        (NOISE, MUTATED),
        "(cases, accepted, delivered)"
    );
    // Each verdict is counted once, and every message delivered is counted.
    assert_eq!(counters.payloads_read, noise.1 + mutated.1);
    assert_eq!(
        counters.payloads_dropped_malformed + counters.payloads_dropped_receive_queue_full,
        rejected
    );
    assert_eq!(counters.messages_received, noise.2 + mutated.2);
    // The mutants reach both verdicts, and some still deliver messages.
    assert!(mutated.1 > 0 && mutated.1 < mutated.0 && mutated.2 > 0);
}
