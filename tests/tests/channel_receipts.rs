//! Receipts of tracked unreliable messages (`MessageLayer::send_tracked`,
//! `poll_receipt`): a receipt comes back exactly for the tracked messages whose packet
//! the peer acked, never for one lost, once each; a reliable channel refuses to track.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::{
    ChannelConfig, ChannelId, ChannelSendError, LayerConfig, MessageLayer, Receipt,
};
use netproto::packet::Sequence;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Tick {
    n: u32,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Tick(Tick),
}

const SEQUENCED: ChannelId = ChannelId::new(1);

fn layer() -> MessageLayer<Msg> {
    MessageLayer::new(LayerConfig::with_channels(vec![
        ChannelConfig::reliable(),
        ChannelConfig::sequenced(),
        ChannelConfig::unreliable(),
    ]))
    .expect("valid")
}

/// 300 ticks, a tracked message on the sequenced channel each, every fourth untracked,
/// packets lost when `lost(tick)`; the receiver acks what it got, late (5 ticks). The
/// receipts are exactly those of the tracked messages received.
#[test]
fn a_receipt_comes_back_for_every_tracked_message_received_and_no_other() {
    let (mut a, mut b) = (layer(), layer());
    let lost = |tick: u32| tick % 7 == 3 || tick % 11 == 5;
    let mut receipt_of = std::collections::HashMap::new();
    let (mut received, mut receipts) = (Vec::new(), Vec::new());
    let mut acks = std::collections::VecDeque::new();
    let mut payload = Vec::new();
    for tick in 0..300u32 {
        let message = Msg::Tick(Tick { n: tick });
        if tick % 4 == 3 {
            a.send(SEQUENCED, message).expect("room");
        } else {
            let r = a.send_tracked(SEQUENCED, message).expect("room");
            receipt_of.insert(r, tick);
        }
        let sequence = Sequence(tick as u16);
        a.write_packet(Time::ZERO, sequence, &mut payload);
        if !lost(tick) {
            b.read_packet(&payload).expect("well-formed");
            while let Some(Msg::Tick(t)) = b.receive(SEQUENCED) {
                received.push(t.n);
            }
            acks.push_back((tick + 5, sequence));
        }
        while acks.front().is_some_and(|(at, _)| *at <= tick) {
            let (_, s) = acks.pop_front().expect("front");
            a.on_packet_acked(s);
            // An ack seen twice releases nothing twice.
            a.on_packet_acked(s);
        }
        while let Some(r) = a.poll_receipt(SEQUENCED) {
            receipts.push(receipt_of[&r]);
        }
    }
    let tracked_received: Vec<u32> = received
        .iter()
        .copied()
        .filter(|t| t % 4 != 3 && *t < 295)
        .collect();
    assert_eq!(receipts, tracked_received);
    assert!(receipts.iter().all(|&t| !lost(t)));
    // Of 225 tracked: the rest rode lost packets or were acked after the last tick.
    assert_eq!(receipts.len(), 174);
    // Receipts count the tracked messages in order from 0.
    assert_eq!(receipt_of.len(), 225);
    assert_eq!(receipt_of.get(&Receipt(0)), Some(&0));
    assert_eq!(receipt_of.get(&Receipt(224)), Some(&298));
}

/// A channel keeps its `send_queue_size` receipts: the oldest go when nobody polls.
#[test]
fn unpolled_receipts_keep_the_newest() {
    let mut a = MessageLayer::<Msg>::new(LayerConfig::with_channels(vec![
        ChannelConfig::unreliable().with_queues(4, 4),
    ]))
    .expect("valid");
    let channel = ChannelId::new(0);
    let mut payload = Vec::new();
    for tick in 0..10u16 {
        let r = a
            .send_tracked(channel, Msg::Tick(Tick { n: tick.into() }))
            .expect("room");
        assert_eq!(r, Receipt(tick));
        a.write_packet(Time::ZERO, Sequence(tick), &mut payload);
        a.on_packet_acked(Sequence(tick));
    }
    let left: Vec<Receipt> = std::iter::from_fn(|| a.poll_receipt(channel)).collect();
    assert_eq!(left, [6, 7, 8, 9].map(Receipt));
}

#[test]
fn a_reliable_channel_refuses_to_track() {
    let mut a = layer();
    let refused = a
        .send_tracked(ChannelId::RELIABLE, Msg::Tick(Tick { n: 1 }))
        .expect_err("reliable");
    assert_eq!(
        refused,
        ChannelSendError::NotTracked {
            channel: ChannelId::RELIABLE
        }
    );
    assert_eq!(
        refused.to_string(),
        "channel 0 is reliable: its messages arrive without receipts; send_tracked is for unreliable channels"
    );
    assert_eq!(a.stats().send_queue_len, 0, "nothing queued");
    assert!(matches!(
        a.send_tracked(ChannelId::new(9), Msg::Tick(Tick { n: 1 })),
        Err(ChannelSendError::NoSuchChannel { .. })
    ));
}
