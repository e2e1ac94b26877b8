//! The skipped-sequence trap against optimistic acks
//! ([`EndpointConfig::skip_sequence_seed`]):
//!
//! * an honest peer never trips it, over 100,000 packets each way with loss,
//!   duplicates and reordering, and every ack it reports is true;
//! * skipped sequences are never sent, lost, acked or measured;
//! * a peer that acks everything trips it within a second, and that packet is
//!   dropped whole with `OptimisticAck`.
//!
//! (`packet_skip_rate.rs` measures how soon over many seeds, send rates and attackers.)
//!
//! (The reference trace vectors run with the default, no skipping:
//! `packet_vectors.rs`.)

use netproto::Time;
use netproto::internals::packet::{PacketHeader, next_header};
use netproto::packet::{
    Endpoint, EndpointConfig, EndpointConfigError, Incoming, ReceiveError, Received, Sequence,
};
use netproto::sim::{LinkConfig, Network, NodeId};
use std::time::Duration;

fn trapped(seed: u64, mean_gap: Duration) -> EndpointConfig {
    EndpointConfig {
        skip_sequence_seed: Some(seed),
        skip_mean_gap: mean_gap,
        ..EndpointConfig::default()
    }
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// One side of the honest exchange and the truth about it.
struct Side {
    node: NodeId,
    endpoint: Endpoint,
    /// Packet number of each sequence, for the latest packet sent under it.
    number_of: Vec<Option<u64>>,
    /// Per packet number we sent: acked, lost.
    acked: Vec<bool>,
    lost: Vec<bool>,
    /// Per packet number of the peer: accepted by us.
    accepted: Vec<bool>,
}

impl Side {
    fn new(node: NodeId, seed: u64, packets: usize) -> Self {
        Self {
            node,
            endpoint: Endpoint::new(trapped(seed, ms(250)), Time::ZERO).expect("valid"),
            number_of: vec![None; 65536],
            acked: vec![false; packets],
            lost: vec![false; packets],
            accepted: vec![false; packets],
        }
    }

    fn send(&mut self, now: f64, number: u64, to: NodeId, net: &mut Network) {
        let node = self.node;
        let expected = self.endpoint.next_sequence();
        let sent = self
            .endpoint
            .send(Time::from_secs_f64(now), &number.to_le_bytes(), |d| {
                net.send(Time::from_secs_f64(now), node, to, d);
            })
            .expect("fits");
        assert_eq!(sent.sequence, expected, "next_sequence names the packet");
        assert!(!self.endpoint.is_skipped(sent.sequence));
        self.number_of[usize::from(sent.sequence.0)] = Some(number);
        if let Some(lost) = sent.lost {
            let n = self.number_of[usize::from(lost.0)].expect("a packet") as usize;
            assert!(!self.acked[n] && !self.lost[n], "packet {n} reported twice");
            self.lost[n] = true;
        }
    }
}

/// Receives at `to` a datagram of `from`; checks every ack against the truth.
fn receive(to: &mut Side, from: &Side, now: f64, datagram: &[u8]) {
    let number = u64::from_le_bytes(datagram[datagram.len() - 8..].try_into().expect("8"));
    match to.endpoint.receive(Time::from_secs_f64(now), datagram) {
        Ok(Incoming::Packet(packet)) => {
            assert!(!to.accepted[number as usize]);
            let acks = packet.accept();
            to.accepted[number as usize] = true;
            for sequence in &acks {
                let n = to.number_of[usize::from(sequence.0)].expect("acked a packet sent");
                assert!(from.accepted[n as usize], "false ack of packet {n}");
                assert!(!to.acked[n as usize] && !to.lost[n as usize]);
                to.acked[n as usize] = true;
            }
        }
        Err(ReceiveError::Duplicate(_) | ReceiveError::Stale(_)) => {}
        Err(e) => panic!("honest packet {number} dropped: {e}"),
        Ok(other) => panic!("unexpected {other:?}"),
    }
}

#[test]
fn an_honest_peer_never_trips_the_trap() {
    const PACKETS: usize = 100_000;
    let (na, nb) = (NodeId(0), NodeId(1));
    let mut net = Network::new(11);
    let link = LinkConfig::default()
        .with_latency(Duration::from_millis(80))
        .with_jitter(Duration::from_millis(30))
        .with_loss(0.15)
        .with_duplicates(0.05)
        .with_reordering(0.1, Duration::from_millis(100));
    net.set_link_both(na, nb, link);
    let mut a = Side::new(na, 1, PACKETS);
    let mut b = Side::new(nb, 2, PACKETS);
    // The loss estimates, once a second after the first ten.
    let mut loss = [Vec::new(), Vec::new()];
    for tick in 0..PACKETS {
        let now = tick as f64 / 60.0;
        while let Some(d) = net.poll(Time::from_secs_f64(now)) {
            if d.to == na {
                receive(&mut a, &b, now, &d.payload);
            } else {
                receive(&mut b, &a, now, &d.payload);
            }
        }
        a.send(now, tick as u64, nb, &mut net);
        b.send(now, tick as u64, na, &mut net);
        if tick % 60 == 0 {
            a.endpoint.update(Time::from_secs_f64(now));
            b.endpoint.update(Time::from_secs_f64(now));
            if tick >= 600 {
                loss[0].push(a.endpoint.stats().packet_loss_percent.expect("known"));
                loss[1].push(b.endpoint.stats().packet_loss_percent.expect("known"));
            }
        }
    }
    for (side, loss) in [(&a, &loss[0]), (&b, &loss[1])] {
        let c = side.endpoint.stats();
        assert_eq!(c.packets_dropped_optimistic_ack, 0);
        assert_eq!(c.packets_dropped_invalid, 0);
        assert_eq!(c.packets_sent, PACKETS as u64);
        // 4 a second on average at 60 sends a second (6.4% of the sends are followed
        // by one), and they cost nothing but the sequence numbers.
        let expected = (PACKETS as f64 * -(-1.0f64 / 15.0).exp_m1()) as u64;
        assert!(
            c.sequences_skipped > expected * 3 / 4 && c.sequences_skipped < expected * 5 / 4,
            "{} skipped",
            c.sequences_skipped
        );
        // Every settled packet was reported once, acked or lost.
        for n in 0..PACKETS - 300 {
            assert!(side.acked[n] != side.lost[n], "packet {n}");
        }
        // The loss estimate measures packets, not skipped sequences (which would add
        // 6 points): its mean is the link's 15%.
        let mean = loss.iter().sum::<f64>() / loss.len() as f64;
        assert!((13.0..17.0).contains(&mean), "loss estimate {mean}%");
    }
}

#[test]
fn skipped_sequences_are_not_sent_lost_acked_or_measured() {
    let mut a = Endpoint::new(trapped(5, ms(50)), Time::ZERO).expect("valid");
    let mut b = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("valid");
    let mut skipped = 0;
    for i in 0..5000u32 {
        let now = f64::from(i) / 60.0;
        let mut wire = Vec::new();
        let sent = a
            .send(Time::from_secs_f64(now), &[1; 100], |d| {
                wire.push(d.to_vec())
            })
            .expect("fits");
        assert_eq!(sent.lost, None);
        // The sequence after it may be skipped: it is never sent.
        if a.next_sequence() != sent.sequence.next() {
            assert_eq!(a.next_sequence(), sent.sequence.next().next());
            assert!(a.is_skipped(sent.sequence.next()));
            assert_eq!(a.is_acked(sent.sequence.next()), None);
            skipped += 1;
        }
        for d in &wire {
            b.receive(Time::from_secs_f64(now), d)
                .expect("valid")
                .accept();
        }
        wire.clear();
        b.send(Time::from_secs_f64(now), b"ack", |d| wire.push(d.to_vec()))
            .expect("fits");
        // A lossless link: B acks every packet A sent, never a skipped one (a
        // `reliable` peer sees a gap), and A takes it.
        let acks = a
            .receive(Time::from_secs_f64(now), &wire[0])
            .expect("honest")
            .accept();
        assert_eq!(acks.acks().as_slice(), &[sent.sequence]);
        if i % 60 == 0 {
            a.update(Time::from_secs_f64(now));
        }
    }
    let c = a.stats();
    assert_eq!(c.sequences_skipped, skipped);
    assert!(skipped > 900, "{skipped}");
    assert_eq!(
        (c.packets_sent, c.packets_acked, c.packets_lost),
        (5000, 5000, 0)
    );
    assert_eq!(c.packets_dropped_optimistic_ack, 0);
    assert_eq!(a.stats().packet_loss_percent, Some(0.0));
    // B counts A's packets only.
    assert_eq!(b.stats().packets_received, 5000);
    // Bandwidth: 128 bytes per packet at 60 per second, skips weigh nothing.
    let kbps = a.stats().sent_kbps;
    assert!(
        (kbps - 128.0 * 60.0 * 8.0 / 1000.0).abs() < 1.0,
        "{kbps} kbps"
    );
}

#[test]
fn a_peer_that_acks_everything_is_caught() {
    let mut a = Endpoint::new(
        trapped(0x5eed, EndpointConfig::default().skip_mean_gap),
        Time::ZERO,
    )
    .expect("valid");
    let mut caught = None;
    for i in 0..2000u16 {
        let now = f64::from(i) / 60.0;
        a.send(Time::from_secs_f64(now), b"state", |_| {})
            .expect("fits");
        // The peer claims it got everything up to our last packet.
        let last = a.next_sequence().prev();
        let last = if a.is_skipped(last) {
            last.prev()
        } else {
            last
        };
        let forged = PacketHeader {
            sequence: Sequence(i),
            ack: last,
            ack_bits: u32::MAX,
        }
        .encode();
        let (acked, header) = (a.stats().packets_acked, next_header(&a));
        match a
            .receive(Time::from_secs_f64(now), &forged)
            .map(Incoming::accept)
        {
            Ok(Received::Packet { .. }) => {}
            Err(ReceiveError::OptimisticAck { sequence }) => {
                assert!(a.is_skipped(sequence));
                // Dropped whole: not recorded, its acks not applied.
                assert_eq!(a.stats().packets_acked, acked);
                assert_eq!(next_header(&a), header);
                caught = Some(i);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let caught = caught.expect("the trap never tripped");
    // 8 skips a second on average: this seed's first skip follows packet 6 (sequence
    // 7), and the forged header of the next step acks it.
    assert_eq!(caught, 7, "caught after {caught} packets");
    assert!(a.is_skipped(Sequence(7)));
    assert_eq!(a.stats().sequences_skipped, 1);
    assert_eq!(a.stats().packets_dropped_optimistic_ack, 1);
    assert_eq!(a.stats().packets_dropped_invalid, 0);
}

#[test]
fn the_trap_is_off_by_default_and_validated() {
    let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("valid");
    for i in 0..10_000u32 {
        a.send(Time::from_secs_f64(f64::from(i)), b"x", |_| {})
            .expect("fits");
    }
    assert_eq!(a.stats().sequences_skipped, 0);
    assert_eq!(a.next_sequence(), Sequence(10_000));
    assert_eq!(
        trapped(1, Duration::ZERO).validate(),
        Err(EndpointConfigError::Zero {
            field: "skip_mean_gap"
        })
    );
    assert!(trapped(1, Duration::from_nanos(1)).validate().is_ok());
}

#[test]
fn the_same_seed_skips_the_same_sequences() {
    let skips = |seed| {
        let mut e = Endpoint::new(trapped(seed, ms(100)), Time::ZERO).expect("valid");
        (0..1000)
            .map(|i| {
                e.send(Time::from_secs_f64(f64::from(i) / 60.0), b"x", |_| {})
                    .expect("fits")
                    .sequence
                    .0
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(skips(3), skips(3));
    assert_ne!(skips(3), skips(4));
}
