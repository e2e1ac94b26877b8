//! The network simulator through its public API: determinism, many nodes, per-link
//! models, and an oracle log that agrees with what `poll` handed out.

use netproto::Time;
use std::collections::BTreeMap;
use std::time::Duration;

use netproto::sim::{DatagramId, GilbertElliott, LinkConfig, Network, NodeId, OracleRecord};

/// Sends `rounds` datagrams from every node to every other node, one round per
/// millisecond, and drains the network; returns the oracle log.
fn all_to_all(net: &mut Network, nodes: u32, rounds: u32) -> Vec<OracleRecord> {
    let mut polled = Vec::new();
    for round in 0..rounds {
        let now = f64::from(round) * 0.001;
        for from in 0..nodes {
            for to in (0..nodes).filter(|&t| t != from) {
                net.send(
                    Time::from_secs_f64(now),
                    NodeId(from),
                    NodeId(to),
                    &round.to_le_bytes(),
                );
            }
        }
        while let Some(d) = net.poll(Time::from_secs_f64(now)) {
            polled.push(d);
        }
    }
    while let Some(d) = net.poll(Time::from_secs_f64(f64::INFINITY)) {
        polled.push(d);
    }
    let oracle = net.oracle().to_vec();
    assert_eq!(oracle.len(), polled.len());
    for (record, d) in oracle.iter().zip(&polled) {
        assert_eq!(
            (record.id, record.from, record.to, record.duplicate),
            (d.id, d.from, d.to, d.duplicate)
        );
        assert_eq!(record.delivered_at, d.delivered_at);
        assert_eq!(record.len, d.payload.len());
    }
    oracle
}

fn lossy(loss: f64) -> LinkConfig {
    LinkConfig::default()
        .with_latency(Duration::from_millis(20))
        .with_jitter(Duration::from_millis(10))
        .with_loss(loss)
        .with_duplicates(0.1)
        .with_reordering(0.1, Duration::from_millis(50))
}

#[test]
fn same_seed_same_oracle_log() {
    let run = |seed| {
        let mut net = Network::new(seed);
        net.set_default_link(lossy(0.2));
        all_to_all(&mut net, 4, 500)
    };
    let first = run(11);
    assert_eq!(first, run(11));
    assert_ne!(first, run(12));
}

#[test]
fn per_direction_links_between_many_nodes() {
    let nodes = 5u32;
    let mut net = Network::new(5);
    net.set_default_link(lossy(0.1));
    // Node 0 -> node 1 loses half; node 4 is unreachable from node 3 only.
    net.set_link(NodeId(0), NodeId(1), lossy(0.5));
    net.set_link(NodeId(3), NodeId(4), LinkConfig::default().with_loss(1.0));
    let rounds = 4000;
    let oracle = all_to_all(&mut net, nodes, rounds);

    let mut delivered: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    for r in oracle.iter().filter(|r| !r.duplicate) {
        *delivered.entry((r.from.0, r.to.0)).or_default() += 1;
    }
    for from in 0..nodes {
        for to in (0..nodes).filter(|&t| t != from) {
            let rate = f64::from(*delivered.get(&(from, to)).unwrap_or(&0)) / f64::from(rounds);
            let expected = match (from, to) {
                (0, 1) => 0.5,
                (3, 4) => 0.0,
                _ => 0.9,
            };
            assert!((rate - expected).abs() < 0.03, "{from}->{to}: {rate}");
        }
    }
    let stats = net.stats();
    assert_eq!(
        stats.datagrams_sent,
        u64::from(nodes * (nodes - 1) * rounds)
    );
    assert_eq!(stats.datagrams_delivered, oracle.len() as u64);
    assert_eq!(
        stats.datagrams_sent - stats.datagrams_dropped + stats.datagrams_duplicated,
        stats.datagrams_delivered
    );
    assert_eq!(stats.in_flight_len, 0);
}

#[test]
fn delays_duplicates_and_reordering() {
    let mut net = Network::new(8);
    let link = LinkConfig::default()
        .with_latency(Duration::from_millis(100))
        .with_jitter(Duration::from_millis(40))
        .with_duplicates(0.3);
    net.set_default_link(link);
    let (a, b) = (NodeId(1), NodeId(2));
    let n = 20_000u32;
    for i in 0..n {
        net.send(Time::from_secs_f64(f64::from(i) * 0.005), a, b, &[]);
    }
    let mut copies: BTreeMap<DatagramId, u32> = BTreeMap::new();
    let mut sum = 0.0;
    let mut reordered = 0;
    let mut last_id = 0;
    let mut count = 0;
    while let Some(d) = net.poll(Time::from_secs_f64(f64::INFINITY)) {
        let delay = d.delivered_at.as_secs_f64() - d.sent_at.as_secs_f64();
        assert!((0.06..=0.14).contains(&delay), "{delay}");
        sum += delay;
        count += 1;
        *copies.entry(d.id).or_default() += 1;
        if d.id.0 < last_id {
            reordered += 1;
        }
        last_id = last_id.max(d.id.0);
    }
    assert!((sum / f64::from(count) - 0.1).abs() < 0.002);
    let dups = copies.values().filter(|&&c| c == 2).count() as f64 / f64::from(n);
    assert!((dups - 0.3).abs() < 0.02, "{dups}");
    assert!(copies.values().all(|&c| c <= 2));
    assert!(
        reordered > 1000,
        "jitter of ±40 ms over 5 ms sends reorders"
    );
}

#[test]
fn burst_loss_model_on_a_link() {
    let mut net = Network::new(13);
    let model = GilbertElliott::bursts(0.05, 0.2);
    net.set_default_link(LinkConfig::default().with_burst_loss(model));
    let n = 100_000u32;
    for i in 0..n {
        net.send(Time::from_secs_f64(f64::from(i)), NodeId(0), NodeId(1), &[]);
    }
    let mut lost_runs = Vec::new();
    let mut expected_id = 0u64;
    while let Some(d) = net.poll(Time::from_secs_f64(f64::INFINITY)) {
        if d.id.0 > expected_id {
            lost_runs.push(d.id.0 - expected_id);
        }
        expected_id = d.id.0 + 1;
    }
    let lost: u64 = lost_runs.iter().sum();
    let rate = lost as f64 / f64::from(n);
    assert!((rate - model.mean_loss()).abs() < 0.01, "{rate}");
    let mean_run = lost as f64 / lost_runs.len() as f64;
    assert!((mean_run - 5.0).abs() < 0.4, "mean burst {mean_run}");
}
