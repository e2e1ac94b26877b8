//! What a connection estimates of its link (round trip, loss, jitter, bandwidth),
//! checked against the simulator's ground truth: the delay of every datagram
//! delivered, and every datagram sent and lost. A full client and server
//! (`SimClient`, `SimServer`: netcode, packet endpoint, message layer) on virtual
//! time, each datagram delivered at its own arrival time, the stacks ticking at
//! 60 Hz: deterministic.
//!
//! Run with `--nocapture` to see the tables (estimate, truth, error) BENCHMARKS.md
//! quotes; `NETPROTO_ESTIMATES_BEFORE=1` adds the same runs without the ack-delay
//! byte (the send-to-ack RTT the connection measured before).

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::{ChannelId, LayerConfig};
use netproto::connection::{CongestionConfig, ConnectionConfig, LinkStats, Mode};
use netproto::sim::{GilbertElliott, LinkConfig, Network, NodeId, OracleRecord};
use netproto_tests::Millis;
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer};
use std::time::Duration;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Blob {
    #[net(max_len = 400)]
    bytes: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Note {
    #[net(range = 0..=1_000_000)]
    n: u32,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Blob(Blob),
    Note(Note),
}

const SERVER: NodeId = NodeId(0);
const CLIENT: NodeId = NodeId(1);
const TICK: f64 = 1.0 / 60.0;
const RELIABLE: ChannelId = ChannelId::RELIABLE;
const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;

/// The congestion mode a run keeps to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Forced {
    /// Good (30 packets per second) after the first second, whatever the RTT.
    Good,
    /// Bad (10 packets per second) throughout.
    Bad,
}

impl Forced {
    fn congestion(self) -> CongestionConfig {
        match self {
            Forced::Good => CongestionConfig {
                rtt_threshold: Duration::from_secs(1_000_000),
                initial_penalty: Duration::from_secs(1),
                ..CongestionConfig::article()
            },
            Forced::Bad => CongestionConfig {
                rtt_threshold: Duration::from_micros(1),
                ..CongestionConfig::article()
            },
        }
    }
}

/// How a run is set up.
#[derive(Clone, Copy, Debug)]
struct Setup {
    up: LinkConfig,
    down: LinkConfig,
    congestion: Option<CongestionConfig>,
    report_ack_delay: bool,
    layer_receive_queue: usize,
    seed: u64,
}

impl Setup {
    fn new(link: LinkConfig) -> Self {
        Self {
            up: link,
            down: link,
            congestion: None,
            report_ack_delay: true,
            layer_receive_queue: 1024,
            seed: 1,
        }
    }

    fn forced(mut self, mode: Forced) -> Self {
        self.congestion = Some(mode.congestion());
        self
    }
}

/// A client and a server on the simulator, stepped from event to event: every
/// datagram at its arrival time, both stacks at every 60 Hz tick.
struct Run {
    net: Network,
    server: SimServer<Msg>,
    client: SimClient<Msg>,
    now: f64,
    next_tick: f64,
}

impl Run {
    fn new(setup: Setup) -> Self {
        let mut layer = LayerConfig::default();
        for channel in &mut layer.channels {
            channel.receive_queue_size = setup.layer_receive_queue;
        }
        let protocol_id = netproto::protocol_id::<Msg>(&layer);
        let mut backend = SimBackend::new(protocol_id, setup.seed);
        let mut server_config = backend.server_config(SERVER);
        let connection = |mut config: ConnectionConfig| {
            config.endpoint.report_ack_delay = setup.report_ack_delay;
            if let Some(congestion) = setup.congestion {
                config.congestion = congestion;
            }
            config
        };
        server_config.connection = connection(server_config.connection);
        let token = backend.token(1, SERVER);
        let mut net = Network::new(setup.seed ^ 0xa5a5);
        net.set_link(CLIENT, SERVER, setup.up);
        net.set_link(SERVER, CLIENT, setup.down);
        Self {
            net,
            server: SimServer::new(SERVER, server_config, layer.clone(), 0.0),
            client: SimClient::new(
                CLIENT,
                SERVER,
                connection(ConnectionConfig::new(protocol_id)),
                &token,
                layer,
                0.0,
            ),
            now: 0.0,
            next_tick: 0.0,
        }
    }

    /// Runs until `until`, calling `on_tick` after every tick.
    fn run_until(&mut self, until: f64, mut on_tick: impl FnMut(&mut Self)) {
        loop {
            let next = self
                .net
                .next_delivery_time()
                .map_or(self.next_tick, |d| d.as_secs_f64().min(self.next_tick));
            if next > until {
                self.now = until;
                return;
            }
            self.now = next;
            while let Some(d) = self.net.poll(Time::from_secs_f64(self.now)) {
                if d.to == SERVER {
                    self.server.handle_datagram(self.now, d.from, &d.payload);
                } else {
                    self.client.handle_datagram(self.now, d.from, &d.payload);
                }
            }
            if self.now >= self.next_tick {
                self.client.update(self.now, &mut self.net);
                self.server.update(self.now, &mut self.net);
                self.next_tick += TICK;
                on_tick(self);
            }
        }
    }

    fn run(&mut self, seconds: f64) {
        self.run_until(self.now + seconds, |_| {});
    }

    /// Delivers every datagram in flight, without ticking (so nothing new is sent).
    fn drain_network(&mut self) {
        while let Some(at) = self.net.next_delivery_time() {
            self.now = self.now.max(at.as_secs_f64());
            while let Some(d) = self.net.poll(Time::from_secs_f64(self.now)) {
                if d.to == SERVER {
                    self.server.handle_datagram(self.now, d.from, &d.payload);
                } else {
                    self.client.handle_datagram(self.now, d.from, &d.payload);
                }
            }
        }
    }

    fn client_stats(&self) -> Option<LinkStats> {
        self.client.connection().stats()
    }

    fn server_stats(&self) -> Option<LinkStats> {
        let (id, _) = self.server.connection().clients().next()?;
        self.server.connection().stats(id)
    }
}

/// The simulator's truth over a window of sends: per direction, the datagrams sent,
/// those delivered (first copies) and their delays.
#[derive(Debug, Default)]
struct Truth {
    up: Direction,
    down: Direction,
}

#[derive(Debug, Default)]
struct Direction {
    sent: u64,
    bytes: u64,
    delays: Vec<f64>,
}

impl Direction {
    fn mean_delay(&self) -> f64 {
        self.delays.iter().sum::<f64>() / self.delays.len() as f64
    }

    fn variance(&self) -> f64 {
        let mean = self.mean_delay();
        self.delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / self.delays.len() as f64
    }

    fn loss_percent(&self) -> f64 {
        100.0 * (1.0 - self.delays.len() as f64 / self.sent as f64)
    }

    /// Bandwidth over `seconds`, with 28 bytes of IP and UDP headers per datagram.
    fn kbps(&self, seconds: f64) -> f64 {
        (self.bytes + 28 * self.sent) as f64 * 8.0 / 1000.0 / seconds
    }
}

impl Truth {
    /// The mean round trip, ms: mean delay up plus mean delay down.
    fn rtt_ms(&self) -> f64 {
        (self.up.mean_delay() + self.down.mean_delay()) * 1000.0
    }

    /// The standard deviation of a round trip (independent delays each way), ms.
    fn jitter_ms(&self) -> f64 {
        (self.up.variance() + self.down.variance()).sqrt() * 1000.0
    }
}

/// Runs `run` over `seconds` from now, calling `on_tick` after every tick, and
/// returns the truth of the datagrams sent meanwhile (those still in flight at the
/// end are waited for).
fn measure(run: &mut Run, seconds: f64, on_tick: impl FnMut(&mut Run)) -> Truth {
    let start = run.now;
    run.net.set_oracle_enabled(true);
    run.net.take_oracle();
    let sent = |r: &Run| {
        (
            r.client.wire().datagrams_sent,
            r.client.wire().bytes_sent,
            r.server.wire().datagrams_sent,
            r.server.wire().bytes_sent,
        )
    };
    let before = sent(run);
    run.run_until(start + seconds, on_tick);
    let after = sent(run);
    // Every datagram of the window is delivered or lost within two seconds.
    run.run(2.0);
    let end = start + seconds;
    let mut truth = Truth::default();
    truth.up.sent = after.0 - before.0;
    truth.up.bytes = after.1 - before.1;
    truth.down.sent = after.2 - before.2;
    truth.down.bytes = after.3 - before.3;
    let records: Vec<OracleRecord> = run.net.take_oracle();
    for r in records.iter().filter(|r| {
        !r.duplicate
            && r.sent_at >= Time::from_secs_f64(start)
            && r.sent_at < Time::from_secs_f64(end)
    }) {
        let direction = if r.to == SERVER {
            &mut truth.up
        } else {
            &mut truth.down
        };
        direction
            .delays
            .push(r.delivered_at.as_secs_f64() - r.sent_at.as_secs_f64());
    }
    truth
}

/// Means of readings.
#[derive(Debug, Default)]
struct Readings {
    values: Vec<f64>,
}

impl Readings {
    fn push(&mut self, value: f64) {
        self.values.push(value);
    }

    fn mean(&self) -> f64 {
        self.values.iter().sum::<f64>() / self.values.len() as f64
    }

    /// The 5th and 95th percentiles.
    fn spread(&self) -> (f64, f64) {
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
        (at(0.05), at(0.95))
    }
}

fn connected(run: &mut Run) {
    run.run(1.0);
    assert!(
        run.client.connection().is_connected(),
        "{:?}",
        run.client.connection().state()
    );
}

/// The smoothed RTT of both sides over 20 s, after 15 s to settle, against the mean
/// round trip of the datagrams sent meanwhile.
fn rtt_error(setup: Setup) -> (Truth, Readings, Readings) {
    let mut run = Run::new(setup);
    connected(&mut run);
    run.run(14.0);
    let (mut client, mut server) = (Readings::default(), Readings::default());
    let truth = measure(&mut run, 20.0, |r| {
        client.push(r.client_stats().expect("connected").endpoint.rtt.ms());
        server.push(r.server_stats().expect("connected").endpoint.rtt.ms());
    });
    (truth, client, server)
}

fn before_too() -> bool {
    std::env::var_os("NETPROTO_ESTIMATES_BEFORE").is_some()
}

/// Goal: the smoothed RTT within 5% or 5 ms (the larger) of the true mean network
/// round trip, from 20 to 400 ms, in good and in bad mode, with 50 ms of jitter
/// (each datagram's delay uniform within ±50 ms of the latency, never below 0).
#[test]
fn the_rtt_is_the_network_round_trip_within_5_percent_or_5_ms() {
    println!(
        "{:>5} {:>5} {:>9} {:>16} {:>16} {:>14}",
        "rtt", "mode", "true ms", "client est (err)", "server est (err)", "client p5..p95"
    );
    let mut failures = Vec::new();
    for rtt in [20.0, 50.0, 100.0, 200.0, 400.0] {
        for mode in [Forced::Good, Forced::Bad] {
            let link = LinkConfig::PERFECT
                .with_latency(Duration::from_secs_f64(rtt / 2000.0))
                .with_jitter(Duration::from_millis(50));
            let variants: &[bool] = if before_too() {
                &[true, false]
            } else {
                &[true]
            };
            for &report_ack_delay in variants {
                let setup = Setup {
                    report_ack_delay,
                    ..Setup::new(link).forced(mode)
                };
                let (truth, client, server) = rtt_error(setup);
                let true_ms = truth.rtt_ms();
                let tolerance = (true_ms * 0.05).max(5.0);
                let (low, high) = client.spread();
                println!(
                    "{rtt:>5} {:>5} {true_ms:>9.1} {:>9.1} ({:+5.1}) {:>9.1} ({:+5.1}) {low:>6.0}..{high:<6.0}{}",
                    format!("{mode:?}"),
                    client.mean(),
                    client.mean() - true_ms,
                    server.mean(),
                    server.mean() - true_ms,
                    if report_ack_delay { "" } else { " before" },
                );
                if !report_ack_delay {
                    continue;
                }
                for (side, readings) in [("client", &client), ("server", &server)] {
                    let error = readings.mean() - true_ms;
                    if error.abs() > tolerance {
                        failures.push(format!(
                            "{rtt} ms {mode:?} {side}: {:.1} against {true_ms:.1}",
                            readings.mean()
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Goal: a link of 180 ms goes good after the penalty time and stays good. Before
/// the ack-delay byte, a bot 180 ms away measured 213 to 232 ms, crossed 250 ms with
/// its jitter, went bad again and had its penalty doubled. With the article's
/// settings (starting bad at 10 packets per second, the longest ack delay).
#[test]
fn a_180_ms_link_goes_good_after_the_penalty_and_stays_good() {
    for jitter in [0.020, 0.050] {
        let link = LinkConfig::PERFECT
            .with_latency(Duration::from_millis(90))
            .with_jitter(Duration::from_secs_f64(jitter));
        let mut setup = Setup::new(link);
        setup.congestion = Some(CongestionConfig::article());
        let mut run = Run::new(setup);
        let mut went_good = None;
        let mut relapses = 0;
        let mut last = Mode::Bad;
        let mut max_rtt: f64 = 0.0;
        run.run_until(120.0, |r| {
            let Some(stats) = r.client_stats() else {
                return;
            };
            if stats.mode == Mode::Good && went_good.is_none() {
                went_good = Some(r.now);
            }
            if stats.mode == Mode::Bad && last == Mode::Good {
                relapses += 1;
            }
            last = stats.mode;
            if went_good.is_some() {
                max_rtt = max_rtt.max(stats.endpoint.rtt.ms());
            }
        });
        let stats = run.client_stats().expect("connected");
        println!(
            "jitter ±{:.0} ms: good at {went_good:?} s, {relapses} relapses, RTT up to {max_rtt:.0} ms, penalty {} s",
            jitter * 1e3,
            stats.penalty.as_secs_f64()
        );
        // Connected within the first tenth of a second; good 4 s (the initial
        // penalty) later.
        let went_good = went_good.expect("went good");
        assert!((4.0..4.5).contains(&went_good), "good at {went_good}");
        assert_eq!(relapses, 0);
        assert_eq!(stats.mode, Mode::Good);
        assert_eq!(
            stats.penalty.as_secs_f64(),
            1.0,
            "halved down to the minimum"
        );
        let server = run.server_stats().expect("connected");
        assert_eq!(server.mode, Mode::Good);
    }
}

/// Bursty loss with mean `loss` (0 to 1): bursts of 4 datagrams on average.
fn bursty(loss: f64) -> GilbertElliott {
    let bad_to_good = 0.25;
    GilbertElliott::bursts(loss * bad_to_good / (1.0 - loss), bad_to_good)
}

/// Goal: the loss estimate within 2 points of the truth at 1, 5, 25 and 50% loss,
/// i.i.d. and bursty: its mean over 40 s against the share of each side's datagrams
/// the simulator dropped.
#[test]
fn the_loss_estimate_is_within_2_points_of_the_truth() {
    println!(
        "{:>5} {:>7} {:>22} {:>22}",
        "loss", "kind", "client est/true", "server est/true"
    );
    let mut failures = Vec::new();
    for loss in [0.01, 0.05, 0.25, 0.50] {
        for burst in [false, true] {
            let base = LinkConfig::PERFECT
                .with_latency(Duration::from_millis(40))
                .with_jitter(Duration::from_millis(20));
            let link = if burst {
                base.with_burst_loss(bursty(loss))
            } else {
                base.with_loss(loss)
            };
            let mut run = Run::new(Setup::new(link).forced(Forced::Good));
            // A handshake through 50% loss takes a few tries.
            run.run(5.0);
            assert!(run.client.connection().is_connected(), "{loss} {burst}");
            let (mut client, mut server) = (Readings::default(), Readings::default());
            let truth = measure(&mut run, 40.0, |r| {
                client.push(
                    r.client_stats()
                        .expect("connected")
                        .endpoint
                        .packet_loss_percent
                        .expect("known"),
                );
                server.push(
                    r.server_stats()
                        .expect("connected")
                        .endpoint
                        .packet_loss_percent
                        .expect("known"),
                );
            });
            let kind = if burst { "bursty" } else { "iid" };
            println!(
                "{:>4.0}% {kind:>7} {:>10.2}/{:<10.2} {:>10.2}/{:<10.2}",
                loss * 100.0,
                client.mean(),
                truth.up.loss_percent(),
                server.mean(),
                truth.down.loss_percent(),
            );
            for (side, readings, truth) in [
                ("client", &client, truth.up.loss_percent()),
                ("server", &server, truth.down.loss_percent()),
            ] {
                if (readings.mean() - truth).abs() > 2.0 {
                    failures.push(format!(
                        "{kind} {loss}: {side} {:.2} against {truth:.2}",
                        readings.mean()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Goal: a change from 0% to 20% loss shows within 1 s at 30 packets per second.
/// Over 20 seeds, the client's estimate 1 s after its link starts losing 20% of its
/// datagrams: on average at least two thirds of the new level (the estimate counts
/// the last 32 packets whose fate is known, about a second of them), never more
/// than a point before the change.
#[test]
fn the_loss_estimate_reflects_a_change_within_a_second() {
    let link = LinkConfig::PERFECT
        .with_latency(Duration::from_millis(50))
        .with_jitter(Duration::from_millis(10));
    let mut after_a_second = Vec::new();
    for seed in 0..20 {
        let mut run = Run::new(Setup {
            seed,
            ..Setup::new(link).forced(Forced::Good)
        });
        connected(&mut run);
        run.run(9.0);
        let before = run
            .client_stats()
            .expect("connected")
            .endpoint
            .packet_loss_percent
            .expect("known");
        assert!(before <= 1.0, "seed {seed}: {before}% with no loss");
        run.net.set_link(CLIENT, SERVER, link.with_loss(0.20));
        run.run(1.0);
        after_a_second.push(
            run.client_stats()
                .expect("connected")
                .endpoint
                .packet_loss_percent
                .expect("known"),
        );
    }
    let mean = after_a_second.iter().sum::<f64>() / after_a_second.len() as f64;
    println!("1 s after 0% -> 20%: mean {mean:.1}% over 20 seeds: {after_a_second:.0?}");
    assert!(mean >= 20.0 * 2.0 / 3.0, "{mean}");
}

/// Jitter (the standard deviation of the round trip) and bandwidth both ways,
/// against the simulator's: the server sends a 200-byte snapshot every tick it may,
/// the client 20-byte inputs; 5% loss, 100 ms with ±40 ms of jitter.
#[test]
fn jitter_and_bandwidth_match_the_simulator() {
    let link = LinkConfig::PERFECT
        .with_latency(Duration::from_millis(50))
        .with_jitter(Duration::from_millis(40))
        .with_loss(0.05);
    let mut run = Run::new(Setup::new(link).forced(Forced::Good));
    connected(&mut run);
    let send = |r: &mut Run| {
        let (id, _) = r.server.connection().clients().next().expect("connected");
        let layer = r.server.layer_mut(id).expect("connected");
        let _ = layer.send(
            UNRELIABLE,
            Msg::Blob(Blob {
                bytes: vec![7; 200],
            }),
        );
        let _ = r
            .client
            .send(UNRELIABLE, Msg::Blob(Blob { bytes: vec![1; 20] }));
        while r.client.receive(UNRELIABLE).is_some() {}
        while r.server.receive(id, UNRELIABLE).is_some() {}
    };
    run.run_until(20.0, send);
    let (mut jitter, mut up, mut down, mut server_up) = (
        Readings::default(),
        Readings::default(),
        Readings::default(),
        Readings::default(),
    );
    let truth = measure(&mut run, 20.0, |r| {
        send(r);
        let client = r.client_stats().expect("connected");
        let server = r.server_stats().expect("connected");
        jitter.push(
            client
                .endpoint
                .jitter_stddev_vs_avg_rtt
                .expect("measured")
                .ms(),
        );
        up.push(client.sent_kbps);
        down.push(client.received_kbps);
        server_up.push(server.sent_kbps);
    });
    let seconds = 20.0;
    let true_down = truth.down.kbps(seconds) * (1.0 - truth.down.loss_percent() / 100.0);
    println!(
        "jitter {:.1}/{:.1} ms, up {:.2}/{:.2} kbps, down (received) {:.2}/{:.2} kbps, server sent {:.2}/{:.2} kbps",
        jitter.mean(),
        truth.jitter_ms(),
        up.mean(),
        truth.up.kbps(seconds),
        down.mean(),
        true_down,
        server_up.mean(),
        truth.down.kbps(seconds),
    );
    let within = |estimate: f64, truth: f64, share: f64| (estimate - truth).abs() <= truth * share;
    assert!(within(jitter.mean(), truth.jitter_ms(), 0.10), "jitter");
    assert!(within(up.mean(), truth.up.kbps(seconds), 0.03), "up");
    assert!(
        within(server_up.mean(), truth.down.kbps(seconds), 0.03),
        "server up"
    );
    assert!(within(down.mean(), true_down, 0.03), "down");
}

/// A server whose layer refuses every payload for flow control (the game does not
/// take its messages) for three timeouts: the client's packets still prove it alive,
/// nobody times out, and once the game takes its messages they all arrive in order.
#[test]
fn packets_refused_for_flow_control_keep_the_connection_alive() {
    let mut run = Run::new(Setup {
        layer_receive_queue: 4,
        ..Setup::new(LinkConfig::PERFECT.with_latency(Duration::from_millis(20)))
    });
    connected(&mut run);
    for n in 0..64 {
        run.client
            .send(RELIABLE, Msg::Note(Note { n }))
            .expect("queued");
    }
    // 5 s timeout (the backend's tokens): three of them without a message taken.
    run.run(15.0);
    let (id, _) = run
        .server
        .connection()
        .clients()
        .next()
        .expect("still connected");
    assert!(run.client.connection().is_connected());
    assert!(
        run.server.wire().payloads_dropped_by_layer > 100,
        "{:?}",
        run.server.wire()
    );
    let mut got = Vec::new();
    run.run_until(run.now + 10.0, |r| {
        while let Some(Msg::Note(Note { n })) = r.server.receive(id, RELIABLE) {
            got.push(n);
        }
    });
    assert_eq!(got, (0..64).collect::<Vec<_>>());
}

/// A receiver that postpones the peer's packets for flow control still takes the
/// acks they carry: what it sent is released, not resent. Here the client's layer
/// is full (the game does not take the server's messages) while the client sends 64
/// reliable messages over a lossless link: the server gets them, and the client,
/// though it refuses every packet of the server, sees them acked and never resends
/// one.
#[test]
fn a_receiver_that_postpones_packets_still_takes_their_acks() {
    let mut run = Run::new(Setup {
        layer_receive_queue: 4,
        ..Setup::new(LinkConfig::PERFECT.with_latency(Duration::from_millis(20)))
    });
    connected(&mut run);
    let (id, _) = run.server.connection().clients().next().expect("connected");
    // Fill the client's receive queue and keep the server's packets coming with
    // reliable messages it cannot take.
    for n in 0..16 {
        let layer = run.server.layer_mut(id).expect("connected");
        layer.send(RELIABLE, Msg::Note(Note { n })).expect("queued");
    }
    run.run(2.0);
    assert_eq!(run.client.layer().receive_queue_len(RELIABLE), 4, "full");
    let refused = run.client.wire().payloads_dropped_by_layer;
    for n in 0..64 {
        run.client
            .send(RELIABLE, Msg::Note(Note { n }))
            .expect("queued");
    }
    let mut got = 0;
    run.run_until(run.now + 5.0, |r| {
        while r.server.receive(id, RELIABLE).is_some() {
            got += 1;
        }
    });
    assert_eq!(got, 64);
    assert!(
        run.client.wire().payloads_dropped_by_layer > refused + 30,
        "still refusing"
    );
    let stats = run.client.layer().stats();
    assert_eq!(stats.send_queue_len, 0, "every message acked: {stats:?}");
    assert_eq!(stats.messages_resent, 0, "nothing resent: {stats:?}");
}

/// The numbers a game shows: one `ConnectionStats` per connection on both sides,
/// counting what went through.
#[test]
fn connection_stats_count_what_went_through() {
    let mut run = Run::new(Setup::new(
        LinkConfig::PERFECT.with_latency(Duration::from_millis(30)),
    ));
    connected(&mut run);
    for n in 0..10 {
        run.client
            .send(RELIABLE, Msg::Note(Note { n }))
            .expect("queued");
    }
    run.run(3.0);
    run.drain_network();
    let (id, _) = run.server.connection().clients().next().expect("connected");
    let client = run.client.stats().expect("connected");
    let server = run.server.stats(id).expect("connected");
    assert_eq!(client.messages.messages_sent, 10);
    assert_eq!(client.messages.send_queue_len, 0, "acked");
    assert_eq!(server.messages.receive_queue_len, 10, "not taken yet");
    // Per channel: all on RELIABLE, none on the others.
    let on = |stats: &netproto::transport::ConnectionStats| {
        stats
            .channels
            .iter()
            .map(|c| (c.messages_sent, c.receive_queue_len))
            .collect::<Vec<_>>()
    };
    let mut expected = vec![(0, 0); client.channels.len()];
    expected[RELIABLE.index()] = (10, 0);
    assert_eq!(on(&client), expected);
    expected[RELIABLE.index()] = (0, 10);
    assert_eq!(on(&server), expected);
    assert_eq!(client.link.datagrams_sent, server.link.datagrams_received);
    assert_eq!(client.link.bytes_sent, server.link.bytes_received);
    assert_eq!(server.link.datagrams_sent, client.link.datagrams_received);
    assert_eq!(
        client.link.endpoint.packets_sent,
        server.link.endpoint.packets_accepted
    );
    assert!(client.link.endpoint.packets_acked + 3 >= client.link.endpoint.packets_sent);
    assert!(
        (client.link.endpoint.rtt.ms() - 60.0).abs() < 2.0,
        "{:?}",
        client.link
    );
    assert_eq!(client.link.endpoint.packet_loss_percent, Some(0.0));
}
