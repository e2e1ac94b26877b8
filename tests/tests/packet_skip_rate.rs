//! How soon the skipped-sequence trap catches a peer that acks packets it never
//! received ([`EndpointConfig::skip_mean_gap`], default 125 ms), measured over 1000
//! seeds at every send rate a connection uses (10 packets a second with keep-alives
//! only, 30 in bad mode, 60 and 120 in good mode), and what it costs.
//!
//! Our endpoint has the connection layer's configuration with the trap armed; the
//! peer sends at our rate, over a link of 50 ms each way (± 5 ms of jitter). For two
//! seconds it is honest, then it starts to lie (the attack starts at its first lying
//! packet), in one of these ways:
//!
//! * **acks everything**: it receives 0%, 50% or 90% of our packets and acks every
//!   sequence up to the newest one it knows we sent, all 32 ack bits set. With 0% it
//!   knows nothing, so it is given an oracle: the newest packet we sent a one-way
//!   latency ago.
//! * **acks ahead**: it receives every packet (so it knows where every earlier skip
//!   is, and never acks one) and acks them honestly, plus the next sequence, which it
//!   has not received yet (the packet in flight).
//!
//! We record the time from the attack's start to the `OptimisticAck`, and how many of
//! our packets its false acks released as delivered before that. An honest peer over
//! a link with loss, duplicates and reordering, on the same seeds, is never flagged.
//!
//! `cargo test -p netproto-tests --test packet_skip_rate -- --nocapture` prints the
//! distributions.

use netproto::Time;
use netproto::connection::ConnectionConfig;
use netproto::internals::packet::PacketHeader;
use netproto::packet::{Endpoint, EndpointConfig, Incoming, ReceiveError, Sequence};
use netproto::sim::{LinkConfig, Network, NodeId, Rng};
use std::time::Duration;

const SEEDS: u64 = 1000;
const RATES: [u32; 4] = [10, 30, 60, 120];
/// Honest seconds before the attack.
const WARMUP: f64 = 2.0;
/// Seconds of attack watched.
const HORIZON: f64 = 4.0;
const US: NodeId = NodeId(0);
const PEER: NodeId = NodeId(1);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Peer {
    Honest,
    /// Receives this fraction of our packets, acks everything up to the newest.
    AcksEverything(f64),
    /// Receives everything, acks it honestly plus the sequence after the newest.
    AcksAhead,
}

impl Peer {
    fn name(self) -> String {
        match self {
            Self::Honest => "honest".into(),
            Self::AcksEverything(f) => format!("acks all, gets {:.0}%", f * 100.0),
            Self::AcksAhead => "acks one ahead".into(),
        }
    }
}

/// The connection layer's endpoint, with the trap armed when `seed` is given.
fn endpoint(seed: Option<u64>) -> Endpoint {
    let config = EndpointConfig {
        skip_sequence_seed: seed,
        ..ConnectionConfig::new(1).endpoint
    };
    Endpoint::new(config, Time::ZERO).expect("valid")
}

/// What one run measured.
#[derive(Debug, Default)]
struct Run {
    /// Seconds from the attack's start to the `OptimisticAck`.
    caught_after: Option<f64>,
    /// Our packets the peer's false acks released before that.
    falsely_released: u64,
    /// Packets of the peer dropped as `OptimisticAck` (honest runs: must be 0).
    optimistic: u64,
    /// Our sequences used (sent and skipped) and packets sent, over the run.
    sequences: u64,
    packets: u64,
    /// Header bytes of the peer's packets, and their number.
    peer_header_bytes: u64,
    peer_packets: u64,
}

/// One run: our endpoint (trapped unless `trap` is false) and a peer that behaves as
/// `model`, at `rate` packets a second each, over `link` both ways (and the loss of
/// the model towards the peer), for `seconds` (at most `WARMUP + HORIZON`) or until
/// the trap trips.
fn run(seed: u64, rate: u32, model: Peer, link: LinkConfig, trap: bool, seconds: f64) -> Run {
    // Every random stream of the run from the seed.
    let mut rng = Rng::new(seed ^ 0xA11CE);
    let mut us = endpoint(trap.then_some(rng.next_u64()));
    // An honest peer has its own trap armed, as connections do; the others do not
    // need one.
    let peer_seed = rng.next_u64();
    let mut peer = endpoint((model == Peer::Honest && trap).then_some(peer_seed));
    let mut net = Network::new(rng.next_u64());
    net.set_oracle_enabled(false);
    let latency = link.latency.as_secs_f64();
    let to_peer = match model {
        Peer::AcksEverything(received) => link.with_loss(1.0 - received),
        Peer::AcksAhead | Peer::Honest => link,
    };
    let to_us = link;
    net.set_link(US, PEER, to_peer);
    net.set_link(PEER, US, to_us);

    let interval = 1.0 / f64::from(rate);
    // The peer ticks out of phase with us.
    let phase = rng.range_f64(0.0, interval);
    // The peer's first lying packet is its first after the warm-up.
    let attack = if model == Peer::Honest {
        f64::INFINITY
    } else {
        phase + (((WARMUP - phase) / interval).ceil()) * interval
    };
    let end = seconds;
    // Our packets: (send time, sequence), and which the peer received.
    let mut sent: Vec<(f64, Sequence)> = Vec::new();
    let mut received = vec![false; 65536];
    let mut result = Run::default();
    let (mut our_sends, mut peer_sends) = (0u32, 0u32);
    loop {
        let our_next = f64::from(our_sends) * interval;
        let peer_next = phase + f64::from(peer_sends) * interval;
        let net_next = net
            .next_delivery_time()
            .map_or(f64::INFINITY, Time::as_secs_f64);
        let now = our_next.min(peer_next).min(net_next);
        if now > end {
            break;
        }
        let t = Time::from_secs_f64(now);
        while let Some(d) = net.poll(t) {
            if d.to == PEER {
                if let Ok(Incoming::Packet(p)) = peer.receive(t, &d.payload) {
                    received[usize::from(p.sequence().0)] = true;
                    p.accept();
                }
                continue;
            }
            let mut caught = None;
            match us.receive(t, &d.payload) {
                Ok(incoming) => {
                    if let Incoming::Packet(p) = incoming {
                        for acked in p.accept().iter() {
                            if !received[usize::from(acked.0)] {
                                assert!(now >= attack, "an honest ack is true");
                                result.falsely_released += 1;
                            }
                        }
                    }
                }
                Err(ReceiveError::OptimisticAck { sequence }) => {
                    caught = Some(sequence);
                    result.optimistic += 1;
                    if result.caught_after.is_none() && model != Peer::Honest {
                        result.caught_after = Some(now - attack);
                    }
                }
                Err(ReceiveError::Duplicate(_) | ReceiveError::Stale(_)) => {}
                // Acking ahead of our next sequence: dropped, not an optimistic ack.
                Err(ReceiveError::ForgedAck { .. }) if now >= attack => {}
                Err(e) => panic!("seed {seed} at {now}: {e}"),
            }
            if let Some(sequence) = caught {
                assert!(us.is_skipped(sequence));
            }
        }
        if result.caught_after.is_some() {
            break;
        }
        if our_next <= now {
            let sent_now = us
                .send(t, &u64::from(our_sends).to_le_bytes(), |d| {
                    net.send(t, US, PEER, d);
                })
                .expect("fits");
            sent.push((now, sent_now.sequence));
            our_sends += 1;
        }
        if peer_next <= now {
            let mut datagram = Vec::new();
            peer.send(t, &[7; 8], |d| datagram = d.to_vec())
                .expect("fits");
            let (honest, header_len) = PacketHeader::decode(&datagram).expect("ours");
            if now >= attack {
                let (ack, ack_bits) = match model {
                    Peer::AcksEverything(0.0) => {
                        // The oracle: our newest packet sent a one-way latency ago.
                        let newest = sent.iter().rev().find(|(at, _)| *at <= now - latency);
                        (newest.map_or(honest.ack, |(_, s)| *s), u32::MAX)
                    }
                    Peer::AcksEverything(_) => (honest.ack, u32::MAX),
                    Peer::AcksAhead => (honest.ack.next(), (honest.ack_bits << 1) | 1),
                    Peer::Honest => unreachable!("never attacks"),
                };
                let forged = PacketHeader {
                    sequence: honest.sequence,
                    ack,
                    ack_bits,
                }
                .encode();
                let mut lie = forged.to_vec();
                lie.extend_from_slice(&datagram[header_len..]);
                datagram = lie;
            }
            result.peer_header_bytes += PacketHeader::decode(&datagram).expect("valid").1 as u64;
            result.peer_packets += 1;
            net.send(t, PEER, US, &datagram);
            peer_sends += 1;
        }
    }
    let c = us.stats();
    result.sequences = c.packets_sent + c.sequences_skipped;
    result.packets = c.packets_sent;
    if model == Peer::Honest {
        result.optimistic += peer.stats().packets_dropped_optimistic_ack;
    }
    result
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn link(one_way_ms: u64) -> LinkConfig {
    LinkConfig::default()
        .with_latency(Duration::from_millis(one_way_ms))
        .with_jitter(Duration::from_millis(5))
}

/// An honest peer's link: 10% loss, 5% duplicates, 10% reordered by up to 100 ms.
fn lossy(link: LinkConfig) -> LinkConfig {
    link.with_loss(0.1)
        .with_duplicates(0.05)
        .with_reordering(0.1, Duration::from_millis(100))
}

const MODELS: [Peer; 4] = [
    Peer::AcksEverything(0.0),
    Peer::AcksEverything(0.5),
    Peer::AcksEverything(0.9),
    Peer::AcksAhead,
];

/// Every rate and attacker over `SEEDS` seeds, at a round trip of 100 ms and of
/// 250 ms (the congestion threshold): prints the distribution of the time to
/// detection and returns how many runs were caught within 1 s; an honest peer on the
/// same seeds is never flagged.
fn detection(one_way_ms: u64) -> Vec<usize> {
    let mut counts = Vec::new();
    for rate in RATES {
        for model in MODELS {
            let mut times = Vec::new();
            let mut released = Vec::new();
            let mut missed = 0;
            for seed in 0..SEEDS {
                let r = run(seed, rate, model, link(one_way_ms), true, WARMUP + HORIZON);
                match r.caught_after {
                    Some(t) => times.push(t),
                    None => missed += 1,
                }
                released.push(r.falsely_released);
            }
            times.sort_by(f64::total_cmp);
            released.sort_unstable();
            let within = times.iter().filter(|&&t| t <= 1.0).count();
            println!(
                "RTT {:>3} ms, {rate:>3} packets/s, {:<20} caught within 1 s: {within}/{SEEDS}; \
                 after min {:.3} median {:.3} p99 {:.3} max {:.3} s; not in {HORIZON} s: \
                 {missed}; falsely acked packets released before: median {} p99 {} max {}",
                2 * one_way_ms,
                model.name(),
                times[0],
                percentile(&times, 0.5),
                percentile(&times, 0.99),
                times[times.len() - 1],
                released[released.len() / 2],
                released[released.len() * 99 / 100],
                released[released.len() - 1],
            );
            counts.push(within);
        }
    }
    for rate in RATES {
        let mut flagged = 0;
        for seed in 0..SEEDS {
            let r = run(
                seed,
                rate,
                Peer::Honest,
                lossy(link(one_way_ms)),
                true,
                WARMUP + HORIZON,
            );
            flagged += r.optimistic;
        }
        println!(
            "RTT {:>3} ms, {rate:>3} packets/s, honest peer (10% loss, 5% duplicates, 10% \
             reordered): {flagged} flagged",
            2 * one_way_ms
        );
        assert_eq!(flagged, 0, "an honest peer at {rate} packets/s was flagged");
    }
    counts
}

/// Caught within 1 s, per rate (10, 30, 60, 120) and attacker (acks all receiving 0%,
/// 50%, 90%; acks one ahead): at least 990 of 1000 everywhere. The exact counts of
/// this seeded run are asserted, so that a change to the trap shows here.
#[test]
fn optimistic_acks_are_caught_within_a_second_at_100_ms() {
    let counts = detection(50);
    println!("{counts:?}");
    assert!(counts.iter().all(|&c| c * 100 >= 99 * SEEDS as usize));
    assert_eq!(counts, EXPECTED_100_MS);
}

/// The same at a 250 ms round trip: the attacker's acks take longer to come back,
/// which leaves less of the second to catch them in.
#[test]
fn optimistic_acks_are_caught_within_a_second_at_250_ms() {
    let counts = detection(125);
    println!("{counts:?}");
    assert!(counts.iter().all(|&c| c * 100 >= 99 * SEEDS as usize));
    assert_eq!(counts, EXPECTED_250_MS);
}

/// Caught within 1 s of 1000, in the order of `detection`: for each rate (10, 30,
/// 60, 120 packets a second), acks all receiving 0%, 50%, 90%, then acks one ahead.
const EXPECTED_100_MS: [usize; 16] = [
    1000, 1000, 1000, 1000, //
    1000, 1000, 1000, 1000, //
    1000, 1000, 1000, 998, //
    1000, 1000, 1000, 997,
];
const EXPECTED_250_MS: [usize; 16] = [
    1000, 1000, 1000, 999, //
    1000, 1000, 1000, 1000, //
    1000, 1000, 1000, 998, //
    1000, 1000, 1000, 998,
];

/// The cost, honest peers both trapped or neither, over a perfect link and a lossy
/// one (50 ms each way), 10 s at each rate: our sequences used a second and skips a
/// second, and the bytes of the peer's packet headers (its ack bits have a hole for
/// each sequence we skip).
#[test]
fn the_cost_of_the_trap() {
    const COST_SEEDS: u64 = 50;
    const SECONDS: f64 = 10.0;
    let mut table = Vec::new();
    for (name, link) in [("perfect", link(50)), ("lossy", lossy(link(50)))] {
        for rate in RATES {
            let mut row = Vec::new();
            for trap in [false, true] {
                let (mut sequences, mut packets, mut header, mut peer_packets) = (0, 0, 0, 0);
                for seed in 0..COST_SEEDS {
                    let r = run(seed, rate, Peer::Honest, link, trap, SECONDS);
                    assert_eq!(r.optimistic, 0);
                    sequences += r.sequences;
                    packets += r.packets;
                    header += r.peer_header_bytes;
                    peer_packets += r.peer_packets;
                }
                let per_second = |n: u64| n as f64 / (COST_SEEDS as f64 * SECONDS);
                let bytes = header as f64 / peer_packets as f64;
                println!(
                    "{name:<8} {rate:>3} packets/s, trap {}: {:.2} sequences/s ({:.2} \
                     skipped), peer header {bytes:.3} bytes/packet",
                    if trap { "on " } else { "off" },
                    per_second(sequences),
                    per_second(sequences - packets),
                );
                row.push((sequences - packets, header, peer_packets));
            }
            table.push([row[0], row[1]]);
        }
    }
    // Per link and rate, trap off then on: (sequences skipped, peer header bytes,
    // peer packets) over the 50 runs.
    let expected = [
        [(0, 23902, 5000), (2740, 41513, 5000)],
        [(0, 64103, 15000), (3545, 117825, 15000)],
        [(0, 124407, 30000), (3772, 207049, 30000)],
        [(0, 245057, 60000), (3862, 350200, 60000)],
        [(0, 33025, 5000), (2740, 41446, 5000)],
        [(0, 96326, 15000), (3518, 121775, 15000)],
        [(0, 191739, 30000), (3735, 231459, 30000)],
        [(0, 387500, 60000), (3845, 435832, 60000)],
    ];
    assert_eq!(table, expected);
}
