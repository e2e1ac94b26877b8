//! The message layer's rules, one by one, without a network: send refusals, the
//! reliable window, the resend interval, per-packet limits, unreliable at-most-once,
//! blocks, configuration errors.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::ChannelId;
use netproto::channel::{
    BlockConfig, ChannelConfig, ChannelSendError, LayerConfig, LayerConfigError, MessageLayer,
};
use netproto::packet::Sequence;
use netproto_examples::game::{ChatMessage, GameMessage, PlayerInput, workload};
use std::time::Duration;

fn game(i: u64) -> GameMessage {
    workload(1, i).remove(0)
}

fn enc(m: GameMessage) -> Vec<u8> {
    netproto::encode(&m).expect("valid")
}

/// Writes one packet from `from` under `seq` at `now`, reads it into `to`, and returns
/// how many messages of `channel` `to` could then take.
fn hop<M: NetMessage>(
    from: &mut MessageLayer<M>,
    to: &mut MessageLayer<M>,
    now: f64,
    seq: u16,
    channel: usize,
) -> (usize, usize) {
    let mut p = Vec::new();
    let len = from.write_packet(Time::from_secs_f64(now), Sequence(seq), &mut p);
    to.read_packet(&p).expect("valid payload");
    let mut n = 0;
    while to.receive(ChannelId::new(channel)).is_some() {
        n += 1;
    }
    (n, len)
}

#[test]
fn send_refusals_are_immediate_and_distinct() {
    let config = LayerConfig::with_channels(vec![
        ChannelConfig::reliable()
            .with_queues(4, 4)
            .with_max_message_bits(200),
    ]);
    let mut l = MessageLayer::<GameMessage>::new(config).expect("config");
    let refused = l.send(ChannelId::new(3), game(0));
    assert_eq!(
        refused,
        Err(ChannelSendError::NoSuchChannel {
            channel: ChannelId::new(3),
            channels: 1
        })
    );
    assert_eq!(
        refused.expect_err("no channel 3").to_string(),
        "no channel 3: this layer has 1 channels (0 to 0)"
    );
    // Can never fit: larger than the channel's inline limit, and no blocks.
    let chat = GameMessage::Chat(ChatMessage {
        from: 1,
        text: "x".repeat(140),
    });
    assert!(matches!(
        l.send(ChannelId::new(0), chat),
        Err(ChannelSendError::TooLarge {
            channel: ChannelId::RELIABLE,
            ..
        })
    ));
    // A value outside its declared range is refused before it reaches the wire.
    let bad = GameMessage::Input(PlayerInput {
        tick: 0,
        buttons: 0,
        aim_yaw: 0.0,
        aim_pitch: 0.0,
        move_x: 100,
        move_y: 0,
    });
    match l.send(ChannelId::new(0), bad) {
        Err(ChannelSendError::Invalid(e)) => assert_eq!(e.field(), Some("PlayerInput.move_x")),
        other => panic!("{other:?}"),
    }
    // Back-pressure: the fifth message waits for an ack.
    for i in 0..4 {
        l.send(ChannelId::new(0), game(i)).expect("room");
    }
    assert!(!l.can_send(ChannelId::new(0)));
    assert_eq!(
        l.send(ChannelId::new(0), game(9)),
        Err(ChannelSendError::QueueFull {
            channel: ChannelId::new(0),
            size: 4
        })
    );
    let mut p = Vec::new();
    l.write_packet(Time::ZERO, Sequence(0), &mut p);
    l.on_packet_acked(Sequence(0));
    assert!(l.can_send(ChannelId::new(0)));
    assert_eq!(l.send_queue_len(ChannelId::new(0)), 0);
    assert_eq!(l.stats().messages_dropped_send_queue_full, 1);
}

#[test]
fn never_an_id_at_or_beyond_oldest_unacked_plus_the_receive_queue() {
    let config = LayerConfig::with_channels(vec![ChannelConfig::reliable().with_queues(64, 8)]);
    let mut a = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut b = MessageLayer::<GameMessage>::new(config).expect("config");
    let sent: Vec<GameMessage> = (0..20).map(game).collect();
    for m in &sent {
        a.send(ChannelId::new(0), m.clone()).expect("room");
    }
    let mut got = Vec::new();
    let mut p = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut p);
    b.read_packet(&p).expect("valid");
    while let Some(m) = b.receive(ChannelId::new(0)) {
        got.push(m);
    }
    assert_eq!(got.len(), 8, "ids 0..8 only");
    // Unacked, the window does not move: nothing new, nothing due before 0.1 s.
    a.write_packet(Time::from_secs_f64(0.05), Sequence(1), &mut p);
    assert_eq!(p, [0], "no entries");
    // Acked: the window moves to 8..16.
    a.on_packet_acked(Sequence(0));
    a.write_packet(Time::from_secs_f64(0.06), Sequence(2), &mut p);
    b.read_packet(&p).expect("valid");
    while let Some(m) = b.receive(ChannelId::new(0)) {
        got.push(m);
    }
    assert_eq!(got.len(), 16);
    // Lost (never acked): resent after the interval, not before.
    assert_eq!(hop(&mut a, &mut b, 0.1, 3, 0).0, 0);
    let mut c = MessageLayer::<GameMessage>::new(LayerConfig::with_channels(vec![
        ChannelConfig::reliable().with_queues(64, 8),
    ]))
    .expect("config");
    a.write_packet(Time::from_secs_f64(0.17), Sequence(4), &mut p);
    assert!(p.len() > 1, "8..16 resent after 0.1 s");
    assert!(
        c.read_packet(&p).is_err(),
        "a fresh receiver is not at id 8"
    );
    a.on_packet_acked(Sequence(4));
    assert_eq!(hop(&mut a, &mut b, 0.2, 5, 0).0, 4);
    assert_eq!(
        got.into_iter().map(enc).collect::<Vec<_>>(),
        sent[..16].iter().cloned().map(enc).collect::<Vec<_>>()
    );
}

#[test]
fn a_burst_is_split_by_message_count_and_bit_budget() {
    let config = LayerConfig::with_channels(vec![
        ChannelConfig::reliable()
            .with_max_messages_per_packet(10)
            .with_max_bits_per_packet(2000),
    ]);
    let mut a = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut b = MessageLayer::<GameMessage>::new(config).expect("config");
    for i in 0..400 {
        a.send(ChannelId::new(0), game(i)).expect("room");
    }
    let mut total = 0;
    let mut seq = 0;
    while total < 400 {
        let (n, len) = hop(&mut a, &mut b, 0.0, seq, 0);
        a.on_packet_acked(Sequence(seq));
        assert!(n <= 10 && len * 8 <= 2000 + 7, "{n} messages, {len} bytes");
        total += n;
        seq += 1;
    }
    assert!(seq >= 40);
}

#[test]
fn unreliable_messages_go_out_once_and_full_queues_have_a_policy() {
    let config = LayerConfig::with_channels(vec![ChannelConfig::unreliable().with_queues(4, 2)]);
    let mut a = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut b = MessageLayer::<GameMessage>::new(config).expect("config");
    for i in 0..4 {
        a.send(ChannelId::new(0), game(i)).expect("room");
    }
    assert!(matches!(
        a.send(ChannelId::new(0), game(5)),
        Err(ChannelSendError::QueueFull { .. })
    ));
    let mut p = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut p);
    b.read_packet(&p).expect("valid");
    // The receive queue holds 2: the other 2 are dropped and counted.
    assert_eq!(b.receive_queue_len(ChannelId::new(0)), 2);
    assert_eq!(b.stats().messages_dropped_receive_queue_full, 2);
    // Sent once: the next packet is empty, even after the resend interval.
    a.write_packet(Time::from_secs_f64(1.0), Sequence(1), &mut p);
    assert_eq!(p.len(), 1);
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Blob {
    #[net(max_len = 5000)]
    data: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
enum WithBlobs {
    Small(#[net(range = 0..=1000)] u16),
    Blob(Blob),
}

#[test]
fn blocks_are_fragmented_delivered_in_order_and_bounded() {
    let blocks = BlockConfig {
        max_block_size: 3100,
        fragment_size: 128,
        max_fragments_per_packet: 4,
        max_blocks_in_flight: 2,
    };
    let config = LayerConfig::with_channels(vec![ChannelConfig::reliable().with_blocks(blocks)]);
    let mut a = MessageLayer::<WithBlobs>::new(config.clone()).expect("config");
    let mut b = MessageLayer::<WithBlobs>::new(config).expect("config");
    // Larger than max_block_size: refused at once.
    let huge = WithBlobs::Blob(Blob {
        data: vec![1; 4500],
    });
    assert!(matches!(
        a.send(ChannelId::new(0), huge),
        Err(ChannelSendError::TooLarge { .. })
    ));
    let blob = WithBlobs::Blob(Blob {
        data: (0..2999u32).map(|i| (i * 7) as u8).collect(),
    });
    a.send(ChannelId::new(0), WithBlobs::Small(1))
        .expect("room");
    a.send(ChannelId::new(0), blob.clone()).expect("room");
    a.send(ChannelId::new(0), WithBlobs::Small(2))
        .expect("room");
    let mut got = Vec::new();
    let mut p = Vec::new();
    let mut seq = 0u16;
    while got.len() < 3 {
        let len = a.write_packet(Time::from_secs_f64(f64::from(seq)), Sequence(seq), &mut p);
        // 4 fragments of 128 bytes and two small messages at most.
        assert!(len <= 4 * 130 + 16, "{len}");
        b.read_packet(&p).expect("valid");
        a.on_packet_acked(Sequence(seq));
        while let Some(m) = b.receive(ChannelId::new(0)) {
            got.push(m);
        }
        seq += 1;
        assert!(seq < 100);
    }
    assert_eq!(got, [WithBlobs::Small(1), blob, WithBlobs::Small(2)]);
    // 3001 bytes in 128-byte fragments, 4 per packet: 24 fragments, 6 packets.
    assert_eq!(seq, 6);
    assert_eq!(a.send_queue_len(ChannelId::new(0)), 0);
}

#[test]
fn invalid_configurations_are_refused_with_the_field() {
    let bad = LayerConfig::with_channels(vec![ChannelConfig::reliable().with_queues(1000, 1024)]);
    let e = MessageLayer::<GameMessage>::new(bad).expect_err("not a power of two");
    assert!(matches!(
        e,
        LayerConfigError::QueueSize {
            field: "send_queue_size",
            ..
        }
    ));
    assert!(e.to_string().contains("send_queue_size"));
    // A message set whose largest message does not fit the budget needs blocks or a
    // smaller max_message_bits.
    let e =
        MessageLayer::<WithBlobs>::new(LayerConfig::with_channels(vec![ChannelConfig::reliable()]))
            .expect_err("blobs do not fit");
    assert!(matches!(e, LayerConfigError::BudgetTooSmall { .. }), "{e}");
}

#[test]
fn a_resend_overtaken_by_later_packets_is_a_duplicate_not_an_error() {
    // Packet 1 resends ids 0..8 but is held up in the network; meanwhile the window
    // moves on twice (ids 8..16, 16..24). When packet 1 finally arrives, its ids are
    // more than a receive window behind: duplicates, not a protocol error.
    let config = LayerConfig::with_channels(vec![ChannelConfig::reliable().with_queues(64, 8)]);
    let mut a = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut b = MessageLayer::<GameMessage>::new(config).expect("config");
    for i in 0..24 {
        a.send(ChannelId::new(0), game(i)).expect("room");
    }
    let mut late = Vec::new();
    assert_eq!(hop(&mut a, &mut b, 0.0, 0, 0).0, 8);
    a.write_packet(Time::from_secs_f64(0.1), Sequence(1), &mut late);
    a.on_packet_acked(Sequence(0));
    assert_eq!(hop(&mut a, &mut b, 0.11, 2, 0).0, 8);
    a.on_packet_acked(Sequence(2));
    assert_eq!(hop(&mut a, &mut b, 0.12, 3, 0).0, 8);
    b.read_packet(&late).expect("late duplicates are accepted");
    assert_eq!(b.receive(ChannelId::new(0)), None);
    assert_eq!(b.stats().messages_dropped_duplicate, 8);
    assert_eq!(b.protocol_error(), None);
}

#[test]
fn resend_interval_can_follow_the_round_trip() {
    let config =
        LayerConfig::with_channels(vec![ChannelConfig::reliable().with_resend_rtt_factor(1.25)]);
    let mut a = MessageLayer::<GameMessage>::new(config).expect("config");
    a.send(ChannelId::new(0), game(0)).expect("room");
    let mut p = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut p);
    assert!(p.len() > 1);
    // No estimate yet: the fixed 0.1 s.
    a.write_packet(Time::from_secs_f64(0.1), Sequence(1), &mut p);
    assert!(p.len() > 1);
    // A 1 s round trip: not again before 1.25 s after the last send (0.1 s).
    a.set_rtt(Duration::from_secs(1));
    a.write_packet(Time::from_secs_f64(1.3), Sequence(2), &mut p);
    assert_eq!(p.len(), 1);
    a.write_packet(Time::from_secs_f64(1.4), Sequence(3), &mut p);
    assert!(p.len() > 1);
}

/// The default reliable channel waits at least 1.25 round trips: at an ordinary
/// 130 ms (100 ms of network and the wait for the peer's next packet) it does not
/// resend a message at 0.1 s, before its ack could arrive.
#[test]
fn default_resend_interval_follows_the_round_trip() {
    let mut a = MessageLayer::<GameMessage>::new(LayerConfig::default()).expect("config");
    a.set_rtt(Duration::from_millis(130));
    a.send(ChannelId::new(0), game(0)).expect("room");
    let mut p = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut p);
    assert!(p.len() > 1);
    a.write_packet(Time::from_secs_f64(0.1), Sequence(1), &mut p);
    assert_eq!(p.len(), 1, "resent at 0.1 s");
    a.write_packet(Time::from_secs_f64(0.16), Sequence(2), &mut p);
    assert_eq!(p.len(), 1, "resent before 1.25 round trips");
    a.write_packet(Time::from_secs_f64(0.17), Sequence(3), &mut p);
    assert!(p.len() > 1, "not resent after 1.25 round trips");
}

#[test]
fn several_blocks_can_be_in_flight() {
    // Two blobs of 3 fragments each, 4 fragments per packet, no acks at all: with one
    // block in flight only the first gets out; with two, both arrive.
    for (in_flight, expected) in [(1, 1), (2, 2)] {
        let blocks = BlockConfig {
            max_block_size: 400,
            fragment_size: 128,
            max_fragments_per_packet: 4,
            max_blocks_in_flight: in_flight,
        };
        let config = LayerConfig::with_channels(vec![
            ChannelConfig::reliable()
                .with_blocks(blocks)
                .with_max_message_bits(100),
        ]);
        let mut a = MessageLayer::<WithBlobs>::new(config.clone()).expect("config");
        let mut b = MessageLayer::<WithBlobs>::new(config).expect("config");
        for fill in [1u8, 2] {
            let blob = WithBlobs::Blob(Blob {
                data: vec![fill; 300],
            });
            a.send(ChannelId::new(0), blob).expect("room");
        }
        let mut got = 0;
        for seq in 0..4 {
            got += hop(&mut a, &mut b, 0.0, seq, 0).0;
        }
        assert_eq!(got, expected, "{in_flight} in flight");
    }
}

/// Each channel counts its own messages, and the layer's totals are their sums: 3
/// reliable and 2 unreliable sent, the reliable ones resent once, 2 + 2 taken by the
/// receiver and 1 left in its queue.
#[test]
fn channel_stats_add_up_to_the_layer_stats() {
    let config =
        LayerConfig::with_channels(vec![ChannelConfig::reliable(), ChannelConfig::unreliable()]);
    let mut a = MessageLayer::<GameMessage>::new(config.clone()).expect("config");
    let mut b = MessageLayer::<GameMessage>::new(config).expect("config");
    let (reliable, unreliable) = (ChannelId::new(0), ChannelId::new(1));
    for i in 0..3 {
        a.send(reliable, game(i)).expect("room");
    }
    for i in 0..2 {
        a.send(unreliable, game(10 + i)).expect("room");
    }
    let mut p = Vec::new();
    a.write_packet(Time::ZERO, Sequence(0), &mut p);
    b.read_packet(&p).expect("valid payload");
    // Not acked: at 1 s the three reliable messages go again.
    a.write_packet(Time::from_secs_f64(1.0), Sequence(1), &mut p);
    for _ in 0..2 {
        b.receive(reliable).expect("delivered");
        b.receive(unreliable).expect("delivered");
    }
    let sent = |l: &MessageLayer<GameMessage>, c| l.channel_stats(c).expect("a channel");
    let (a0, a1, b0, b1) = (
        sent(&a, reliable),
        sent(&a, unreliable),
        sent(&b, reliable),
        sent(&b, unreliable),
    );
    assert_eq!(
        (a0.messages_sent, a0.messages_resent, a0.send_queue_len),
        (3, 3, 3)
    );
    assert_eq!(
        (a1.messages_sent, a1.messages_resent, a1.send_queue_len),
        (2, 0, 0)
    );
    assert_eq!((b0.messages_received, b0.receive_queue_len), (2, 1));
    assert_eq!((b1.messages_received, b1.receive_queue_len), (2, 0));
    let (la, lb) = (a.stats(), b.stats());
    assert_eq!(la.messages_sent, a0.messages_sent + a1.messages_sent);
    assert_eq!(la.messages_resent, a0.messages_resent + a1.messages_resent);
    assert_eq!(la.send_queue_len, a0.send_queue_len + a1.send_queue_len);
    assert_eq!(
        lb.messages_received,
        b0.messages_received + b1.messages_received
    );
    assert_eq!(
        lb.receive_queue_len,
        b0.receive_queue_len + b1.receive_queue_len
    );
    assert_eq!(a.channel_stats(ChannelId::new(2)), None);
}
