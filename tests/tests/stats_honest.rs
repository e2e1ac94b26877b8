//! Statistics that never lie: the round-trip history (`rtt_min`, the jitters...) and
//! the loss are absent until measured, and the long loss figure reads 1% loss within a
//! stated bound, with a resolution finer than the 32-packet window's 1/32.
//!
//! One client and one server on the network simulator (seeded, virtual time): 30 ms
//! each way, the client's datagrams lose 1% on the way up, none come back lost. The
//! client sends an input every 1/60 s tick.

use netproto::NetMessage;
use netproto::channel::{ChannelId, LayerConfig};
use netproto::connection::ConnectionConfig;
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto::transport::ConnectionStats;
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, deliver};
use std::time::Duration;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Input {
    #[net(range = 0..=15)]
    buttons: u8,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Input(Input),
}

const TICK: f64 = 1.0 / 60.0;
const CLIENT: NodeId = NodeId(1);
const SERVER: NodeId = NodeId(0);

/// The stats of the client at every tick it is connected, with the time, over `secs`
/// seconds of a run on `seed`.
fn run(seed: u64, secs: f64) -> (Vec<(f64, ConnectionStats)>, Network, u64) {
    let layer = LayerConfig::default();
    let mut net = Network::new(seed);
    net.set_oracle_enabled(false);
    let link = LinkConfig::PERFECT.with_latency(Duration::from_millis(30));
    net.set_link(SERVER, CLIENT, link);
    net.set_link(CLIENT, SERVER, link.with_loss(0.01));
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, seed);
    let config = backend.server_config(SERVER);
    let mut server = SimServer::<Msg>::new(SERVER, config, layer.clone(), 0.0);
    let token = backend.token(1, SERVER);
    // A 60 Hz game's input, a packet a frame (the default good rate is 30 a second).
    let mut connection = ConnectionConfig::new(protocol_id);
    connection.congestion.good_rate = 61.0;
    let mut clients = [SimClient::<Msg>::new(
        CLIENT, SERVER, connection, &token, layer, 0.0,
    )];
    let mut readings = Vec::new();
    for tick in 0..(secs / TICK) as u32 {
        let now = f64::from(tick) * TICK;
        deliver(&mut net, now, &mut server, &mut clients);
        let client = &mut clients[0];
        while client.poll_event().is_some() {}
        if client.connection().is_connected() {
            let input = Msg::Input(Input {
                buttons: (tick % 16) as u8,
            });
            client.send(ChannelId::UNRELIABLE, input).expect("room");
        }
        client.update(now, &mut net);
        server.update(now, &mut net);
        if let Some(stats) = client.stats() {
            readings.push((now, stats));
        }
    }
    let sent = clients[0].wire().datagrams_sent;
    (readings, net, sent)
}

#[test]
fn the_round_trip_history_and_the_loss_are_absent_until_measured() {
    let (readings, _, _) = run(1, 3.0);
    let (first_at, first) = readings.first().expect("connected");
    let e = &first.link.endpoint;
    println!("first reading at {first_at:.3} s: {e:?}");
    assert_eq!(
        [
            e.rtt_min,
            e.rtt_max,
            e.rtt_avg,
            e.jitter_avg_vs_min_rtt,
            e.jitter_max_vs_min_rtt,
            e.jitter_stddev_vs_avg_rtt
        ],
        [None; 6],
        "nothing measured at the first reading"
    );
    assert_eq!(e.packet_loss_percent, None);
    assert_eq!(e.packet_loss_percent_long, None);
    // Each figure appears once, and stays.
    let appears = |f: &dyn Fn(&ConnectionStats) -> bool| {
        let at = readings.iter().position(|(_, s)| f(s)).expect("measured");
        assert!(readings[at..].iter().all(|(_, s)| f(s)), "stays");
        readings[at].0
    };
    let rtt_at = appears(&|s| s.link.endpoint.rtt_min.is_some());
    let jitter_at = appears(&|s| s.link.endpoint.jitter_stddev_vs_avg_rtt.is_some());
    let loss_at = appears(&|s| s.link.endpoint.packet_loss_percent.is_some());
    let long_at = appears(&|s| s.link.endpoint.packet_loss_percent_long.is_some());
    println!("rtt_min at {rtt_at:.3} s, jitter at {jitter_at:.3} s, loss at {loss_at:.3} s");
    assert_eq!(rtt_at, jitter_at, "one pass over the history gives both");
    assert_eq!(loss_at, long_at, "the first fate known gives both");
    // Seeded: connected at tick 8, the first fate known at tick 16, the first pass
    // over a history with a sample at tick 24 (the history is passed over every
    // quarter second).
    assert_eq!(
        [*first_at, loss_at, rtt_at],
        [8.0 * TICK, 16.0 * TICK, 24.0 * TICK]
    );
    // The round trip measured is the link's 60 ms, give or take the tick.
    let (_, last) = readings.last().expect("connected");
    let min = last.link.endpoint.rtt_min.expect("measured");
    assert!(
        (Duration::from_millis(55)..Duration::from_millis(80)).contains(&min),
        "{min:?}"
    );
}

/// Stated bound: once 1024 fates are known, the long figure reads the link's true
/// loss (the share of the client's datagrams the simulator dropped) within 0.6 point
/// at 1% (about twice its standard error over 1024 packets, 0.31 point).
#[test]
fn the_long_loss_figure_reads_one_percent_finer_than_one_in_32() {
    let (readings, net, sent) = run(7, 70.0);
    let dropped = net.stats().datagrams_dropped;
    let truth = dropped as f64 / sent as f64 * 100.0;
    // One reading a second, once 1024 packets are known (60 a second: after 20 s).
    let long: Vec<f64> = readings
        .iter()
        .filter(|(t, _)| *t >= 25.0 && (t / 1.0).fract() < TICK * 0.999)
        .map(|(_, s)| s.link.endpoint.packet_loss_percent_long.expect("known"))
        .collect();
    let short: Vec<f64> = readings
        .iter()
        .filter(|(t, _)| *t >= 25.0 && (t / 1.0).fract() < TICK * 0.999)
        .map(|(_, s)| s.link.endpoint.packet_loss_percent.expect("known"))
        .collect();
    println!("truth {truth:.3}% ({dropped} of {sent} datagrams)");
    println!("long: {long:.3?}");
    println!("short: {short:.3?}");
    assert_eq!(long.len(), 45);
    // Seeded: the run and its last reading, 7 of the last 1024 lost.
    assert_eq!((dropped, sent), (39, 4194));
    assert_eq!(long.last().copied(), Some(7.0 / 1024.0 * 100.0));
    for &l in &long {
        assert!((l - truth).abs() <= 0.6, "{l} against {truth}");
    }
    let step = 100.0 / 32.0;
    let between = long
        .iter()
        .filter(|&&l| ((l / step) - (l / step).round()).abs() > 1e-9)
        .count();
    assert!(between > 0, "every reading on a multiple of 1/32: {long:?}");
    // Every short reading is a multiple of 1/32 (32 fates known): its resolution.
    assert!(
        short
            .iter()
            .all(|&l| ((l / step) - (l / step).round()).abs() < 1e-9),
        "{short:?}"
    );
    // The long figure is a count over 1024 packets: a multiple of 1/1024.
    let fine = 100.0 / 1024.0;
    assert!(
        long.iter()
            .all(|&l| ((l / fine) - (l / fine).round()).abs() < 1e-6),
        "{long:?}"
    );
}
