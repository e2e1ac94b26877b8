//! Soak tests of two packet endpoints over the simulated network, checked against the
//! simulator's oracle (what was really delivered), over several wraps of the 16-bit
//! sequence space:
//!
//! * 99% loss both ways: not one false ack;
//! * 25% loss, 250 ms ± 100 ms, 25% duplicates, reordering: every ack is true, every
//!   delivered packet whose acks got back is acked, the RTT estimate is within 10% of
//!   the simulated round trip and the loss estimate within 3 points of the loss rate;
//! * bursty (Gilbert-Elliott) loss: the same ack checks.
//!
//! Run with `--nocapture` to see the figures.

use netproto::Time;
use netproto_tests::Millis;
use std::time::Duration;
use std::time::Instant;

use netproto::packet::{Endpoint, EndpointConfig, ReceiveError, Received, Sequence};
use netproto::sim::{GilbertElliott, LinkConfig, Network, NodeId};
use netproto_tests::endpoint::receive_with;

const TICK_RATE: f64 = 60.0;

/// One endpoint and everything the test knows about it.
struct Side {
    name: &'static str,
    node: NodeId,
    endpoint: Endpoint,
    /// Packets sent so far (the next packet number; sequence = number mod 65536).
    sent: u64,
    /// Per packet we sent: acked by our endpoint, reported lost, send time.
    acked: Vec<bool>,
    lost: Vec<bool>,
    send_time: Vec<f64>,
    /// Per packet we sent: the acks it carried, from the truth at send time — the
    /// peer's newest packet we had received, and which of the 32 up to it we had.
    carried: Vec<Option<(u64, u32)>>,
    /// Per packet of the peer: delivered to us by the network (oracle).
    delivered: Vec<bool>,
    newest_delivered: Option<u64>,
    /// Results.
    false_acks: u64,
    double_acks: u64,
    missed_acks: u64,
    checked_acks: u64,
    rtt_samples: f64,
    rtt_sum: f64,
}

impl Side {
    fn new(name: &'static str, node: NodeId, packets: usize) -> Self {
        Self {
            name,
            node,
            endpoint: Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("default config"),
            sent: 0,
            acked: vec![false; packets],
            lost: vec![false; packets],
            send_time: vec![0.0; packets],
            carried: vec![None; packets],
            delivered: vec![false; packets],
            newest_delivered: None,
            false_acks: 0,
            double_acks: 0,
            missed_acks: 0,
            checked_acks: 0,
            rtt_samples: 0.0,
            rtt_sum: 0.0,
        }
    }

    /// The number of our packet with sequence `seq`: the latest one sent.
    fn packet_of(&self, seq: Sequence) -> u64 {
        let last = self.sent - 1;
        last - u64::from((last as u16).wrapping_sub(seq.0))
    }

    /// Sends our next packet (its number as payload) into the network, and records
    /// in `origins` (indexed by datagram id) who sent which packet.
    fn send(
        &mut self,
        now: f64,
        peer: NodeId,
        net: &mut Network,
        origins: &mut Vec<(NodeId, u64)>,
    ) {
        let number = self.sent;
        let n = number as usize;
        // Snapshot of what we will ack, from the truth.
        self.carried[n] = self.newest_delivered.map(|newest| {
            let mut mask = 0u32;
            for k in 0..32u64.min(newest + 1) {
                if self.delivered[(newest - k) as usize] {
                    mask |= 1 << k;
                }
            }
            (newest, mask)
        });
        self.send_time[n] = now;
        let node = self.node;
        let sent = self
            .endpoint
            .send(Time::from_secs_f64(now), &number.to_le_bytes(), |d| {
                let id = net.send(Time::from_secs_f64(now), node, peer, d);
                origins.push((node, number));
                assert_eq!(id.0 as usize + 1, origins.len());
            })
            .expect("8 bytes fit");
        assert_eq!(sent.sequence, Sequence(number as u16));
        self.sent += 1;
        if let Some(seq) = sent.lost {
            let lost = self.packet_of(seq) as usize;
            assert!(
                !self.acked[lost],
                "{}: packet {lost} lost after ack",
                self.name
            );
            assert!(!self.lost[lost], "{}: packet {lost} lost twice", self.name);
            self.lost[lost] = true;
        }
    }
}

/// Receives one delivered datagram at `to`, checking acks against the truth.
/// `number` is the packet number the oracle says this datagram carries.
fn receive(to: &mut Side, from: &Side, now: f64, number: u64, datagram: &[u8]) {
    // The payload (the packet number) is the last 8 bytes, after the header.
    let payload = &datagram[datagram.len() - 8..];
    assert_eq!(
        payload,
        number.to_le_bytes(),
        "{}: payload of {number}",
        to.name
    );
    let n = number as usize;
    let first_copy = !to.delivered[n];
    let mut handed_up = None;
    let result = receive_with(&mut to.endpoint, now, datagram, |seq, p| {
        handed_up = Some((seq, p.to_vec()));
        true
    });
    match result {
        Ok(Received::Packet { sequence, acks }) => {
            assert!(first_copy, "{}: packet {number} accepted twice", to.name);
            assert_eq!(sequence, Sequence(number as u16));
            assert_eq!(handed_up, Some((sequence, payload.to_vec())));
            for seq in &acks {
                let acked = to.packet_of(seq) as usize;
                if !from.delivered[acked] {
                    to.false_acks += 1;
                }
                if to.acked[acked] {
                    to.double_acks += 1;
                }
                to.acked[acked] = true;
                to.rtt_samples += 1.0;
                to.rtt_sum += now - to.send_time[acked];
            }
        }
        Err(ReceiveError::Duplicate(seq)) => {
            assert!(
                !first_copy,
                "{}: first copy of {number} called a duplicate",
                to.name
            );
            assert_eq!(seq, Sequence(number as u16));
        }
        Err(e) => panic!("{}: packet {number}: {e}", to.name),
        Ok(other) => panic!("{}: unexpected {other:?}", to.name),
    }
    if first_copy {
        to.delivered[n] = true;
        to.newest_delivered = Some(to.newest_delivered.map_or(number, |m| m.max(number)));
    }
    // Every packet of ours that this packet carried an ack for, and that is still in
    // our sent window, must be acked by now.
    if let Some((newest, mask)) = from.carried[n] {
        for k in 0..32u64 {
            if mask & (1 << k) == 0 {
                continue;
            }
            let ours = newest - k;
            let window = to.endpoint.config().sent_packets_buffer_size as u64;
            if ours + window < to.sent {
                continue;
            }
            to.checked_acks += 1;
            if !to.acked[ours as usize] {
                to.missed_acks += 1;
            }
        }
    }
}

struct Soak {
    name: &'static str,
    packets: usize,
    link: LinkConfig,
    seed: u64,
    /// Seconds before the RTT and loss estimates are sampled.
    warm_up: f64,
}

struct Report {
    false_acks: u64,
    double_acks: u64,
    missed_acks: u64,
    checked_acks: u64,
    acked: u64,
    rtt_ms: f64,
    rtt_history_avg_ms: f64,
    rtt_true_ms: f64,
    loss_estimate: f64,
    loss_true: f64,
    stale: u64,
    invalid: u64,
}

fn run(soak: &Soak) -> Report {
    let started = Instant::now();
    let (na, nb) = (NodeId(0), NodeId(1));
    let mut net = Network::new(soak.seed);
    net.set_link_both(na, nb, soak.link);
    let mut origins = Vec::with_capacity(2 * soak.packets);
    let mut a = Side::new("A", na, soak.packets);
    let mut b = Side::new("B", nb, soak.packets);
    let mut loss_samples = Vec::new();

    for tick in 0..soak.packets {
        let now = tick as f64 / TICK_RATE;
        while let Some(d) = net.poll(Time::from_secs_f64(now)) {
            // The truth comes from the oracle log, not from the datagram.
            let oracle = net.take_oracle();
            let [record] = oracle.as_slice() else {
                panic!("one oracle record per delivery, got {}", oracle.len());
            };
            let (sender, number) = origins[record.id.0 as usize];
            assert_eq!((record.from, record.to), (sender, d.to));
            if record.to == na {
                receive(&mut a, &b, now, number, &d.payload);
            } else {
                receive(&mut b, &a, now, number, &d.payload);
            }
        }
        a.send(now, nb, &mut net, &mut origins);
        b.send(now, na, &mut net, &mut origins);
        if tick % 60 == 0 {
            a.endpoint.update(Time::from_secs_f64(now));
            b.endpoint.update(Time::from_secs_f64(now));
            if now >= soak.warm_up {
                loss_samples.push(a.endpoint.stats().packet_loss_percent.expect("known"));
                loss_samples.push(b.endpoint.stats().packet_loss_percent.expect("known"));
            }
        }
    }

    // Every packet older than the final sent window was reported exactly once, acked
    // or lost.
    for side in [&a, &b] {
        let settled = side.sent.saturating_sub(256) as usize;
        for n in 0..settled {
            assert!(
                side.acked[n] != side.lost[n],
                "{}: packet {n} acked {} lost {}",
                side.name,
                side.acked[n],
                side.lost[n]
            );
        }
    }

    let delivered = a
        .delivered
        .iter()
        .chain(&b.delivered)
        .filter(|&&d| d)
        .count();
    let total = (a.sent + b.sent) as f64;
    let stats = |s: &Side| s.endpoint.stats();
    let (sa, sb) = (stats(&a), stats(&b));
    let counters = |s: &Side| s.endpoint.stats();
    let report = Report {
        false_acks: a.false_acks + b.false_acks,
        double_acks: a.double_acks + b.double_acks,
        missed_acks: a.missed_acks + b.missed_acks,
        checked_acks: a.checked_acks + b.checked_acks,
        acked: counters(&a).packets_acked + counters(&b).packets_acked,
        rtt_ms: (sa.rtt.ms() + sb.rtt.ms()) / 2.0,
        rtt_history_avg_ms: (sa.rtt_avg.expect("measured").ms()
            + sb.rtt_avg.expect("measured").ms())
            / 2.0,
        rtt_true_ms: (a.rtt_sum + b.rtt_sum) / (a.rtt_samples + b.rtt_samples).max(1.0) * 1000.0,
        loss_estimate: loss_samples.iter().sum::<f64>() / loss_samples.len().max(1) as f64,
        loss_true: (1.0 - delivered as f64 / total) * 100.0,
        stale: counters(&a).packets_dropped_stale + counters(&b).packets_dropped_stale,
        invalid: counters(&a).packets_dropped_invalid + counters(&b).packets_dropped_invalid,
    };
    let simulated_rtt = soak.link.mean_round_trip().ms();
    println!(
        "soak {}: {} packets per side ({:.2} sequence wraps), {:.0} s simulated in {:.1} s",
        soak.name,
        soak.packets,
        soak.packets as f64 / 65536.0,
        soak.packets as f64 / TICK_RATE,
        started.elapsed().as_secs_f64()
    );
    println!(
        "  acks: {} reported, {} false, {} double, {} of {} truly carried acks missed",
        report.acked,
        report.false_acks,
        report.double_acks,
        report.missed_acks,
        report.checked_acks
    );
    println!(
        "  rtt: smoothed {:.1} ms, history avg {:.1} ms, measured by the oracle {:.1} ms, \
         simulated round trip {:.1} ms, error {:+.2}%",
        report.rtt_ms,
        report.rtt_history_avg_ms,
        report.rtt_true_ms,
        simulated_rtt,
        (report.rtt_ms - simulated_rtt) / simulated_rtt.max(1e-9) * 100.0
    );
    println!(
        "  loss: estimate {:.2}% (mean after warm-up), simulated {:.2}%, oracle {:.2}%, \
         error {:+.2} points; stale {}, invalid {}",
        report.loss_estimate,
        soak.link.mean_loss() * 100.0,
        report.loss_true,
        report.loss_estimate - soak.link.mean_loss() * 100.0,
        report.stale,
        report.invalid
    );
    report
}

#[test]
fn soak_99_percent_loss_has_no_false_acks() {
    let soak = Soak {
        name: "99% loss",
        packets: 3 * 65536 + 1000,
        link: LinkConfig::default()
            .with_latency(Duration::from_millis(50))
            .with_jitter(Duration::from_millis(20))
            .with_loss(0.99),
        seed: 0x99,
        warm_up: 10.0,
    };
    let r = run(&soak);
    assert_eq!(r.false_acks, 0);
    assert_eq!(r.double_acks, 0);
    assert_eq!(r.missed_acks, 0);
    assert!(r.acked > 100, "some acks get through: {}", r.acked);
    assert_eq!((r.stale, r.invalid), (0, 0));
}

#[test]
fn soak_jitter_loss_duplicates_reordering_over_four_wraps() {
    let soak = Soak {
        name: "25% loss, 250±100 ms, 25% duplicates, reordering",
        packets: 4 * 65536 + 1000,
        link: LinkConfig::default()
            .with_latency(Duration::from_millis(250))
            .with_jitter(Duration::from_millis(100))
            .with_loss(0.25)
            .with_duplicates(0.25)
            .with_reordering(0.05, Duration::from_millis(200)),
        seed: 0x25,
        warm_up: 30.0,
    };
    let r = run(&soak);
    assert_eq!(r.false_acks, 0, "every reported ack is true");
    assert_eq!(r.double_acks, 0, "every ack is reported once");
    assert_eq!(
        r.missed_acks, 0,
        "every delivered packet whose acks got back is acked"
    );
    assert!(r.checked_acks > 300_000);
    assert_eq!((r.stale, r.invalid), (0, 0));
    let simulated_rtt = soak.link.mean_round_trip().ms();
    let rtt_error = (r.rtt_ms - simulated_rtt).abs() / simulated_rtt;
    assert!(
        rtt_error < 0.10,
        "RTT {} ms vs {simulated_rtt} ms",
        r.rtt_ms
    );
    let loss_error = (r.loss_estimate - soak.link.mean_loss() * 100.0).abs();
    assert!(loss_error < 3.0, "loss {}% vs 25%", r.loss_estimate);
}

#[test]
fn soak_bursty_loss_acks_stay_true() {
    let soak = Soak {
        name: "Gilbert-Elliott bursts (2% -> bad, 10% -> good) + 2% loss",
        packets: 65536 + 30_000,
        link: LinkConfig::default()
            .with_latency(Duration::from_millis(80))
            .with_jitter(Duration::from_millis(30))
            .with_loss(0.02)
            .with_burst_loss(GilbertElliott::bursts(0.02, 0.1)),
        seed: 0x6e,
        warm_up: 30.0,
    };
    let r = run(&soak);
    assert_eq!(r.false_acks, 0);
    assert_eq!(r.double_acks, 0);
    assert_eq!(r.missed_acks, 0);
    let loss_error = (r.loss_estimate - soak.link.mean_loss() * 100.0).abs();
    assert!(
        loss_error < 3.0,
        "loss {}% vs {}%",
        r.loss_estimate,
        soak.link.mean_loss() * 100.0
    );
}
