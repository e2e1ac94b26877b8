//! How fast a map downloads on the bulk channel, and what it costs the game's
//! snapshots: a server and one client on the network simulator (virtual time, seeded),
//! the full sans-IO stack, 60 Hz updates on both sides.
//!
//! As soon as the client is connected the server queues the map (one message on
//! [`ChannelConfig::bulk`]) and sends a snapshot of 64 entities every third tick
//! (20 Hz) on a sequenced channel; the client sends an input every tick. Measured:
//! the time from queueing the map to its delivery, and the snapshots' latency while
//! it is in flight against the same run without a map. Run with `--nocapture` to see
//! the figures; BENCHMARKS.md's "Bulk transfers" quotes them.

use netproto::NetMessage;
use netproto::channel::{ChannelConfig, ChannelId, LayerConfig};
use netproto::connection::{
    ClientEvent, ClientId, CongestionConfig, ConnectionConfig, ServerEvent,
};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto_examples::game::{EntityId, EntityState, EntityUpdate, Position};
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, deliver};
use std::time::Duration;

const TICK: f64 = 1.0 / 60.0;
const ENTITIES: usize = 64;
/// The largest map of these tests: 1 MB.
const MAX_MAP: usize = 1_000_000;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Input {
    tick: u32,
    #[net(range = 0..=15)]
    buttons: u8,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Snapshot {
    tick: u32,
    #[net(max_len = 64)]
    entities: Vec<EntityUpdate>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Map {
    #[net(max_len = 1000000)]
    bytes: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Input(Input),
    Snapshot(Snapshot),
    Map(Map),
}

const INPUT: ChannelId = ChannelId::new(0);
const SNAPSHOT: ChannelId = ChannelId::new(1);
const MAP: ChannelId = ChannelId::new(2);

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    /// Milliseconds from queueing the map to its delivery (0 without a map).
    map_ms: u32,
    /// Snapshots sent and received during the window (the map's flight, or as long
    /// without a map).
    snapshots_sent: usize,
    snapshots_received: usize,
    /// Snapshot latency in the window, milliseconds: median and 99th percentile.
    snapshot_p50_ms: u32,
    snapshot_p99_ms: u32,
}

impl Figures {
    /// The map's rate, kB/s.
    fn rate_kb_s(&self, map: usize) -> f64 {
        map as f64 / f64::from(self.map_ms)
    }
}

fn snapshot(tick: u32) -> Snapshot {
    let entities = (0..ENTITIES)
        .map(|i| EntityUpdate {
            entity: EntityId(i as u16),
            position: Position {
                x: (i as f32 * 3.7 + tick as f32 * 0.1) % 500.0 - 250.0,
                y: 1.0,
                z: (i as f32 * 1.3) % 100.0,
            },
            heading: 0.5,
            health: 100,
            state: EntityState::Idle,
        })
        .collect();
    Snapshot { tick, entities }
}

fn percentile(v: &mut [f64], q: f64) -> u32 {
    v.sort_by(f64::total_cmp);
    let at = ((v.len().saturating_sub(1)) as f64 * q).round() as usize;
    v.get(at).map_or(u32::MAX, |s| (s * 1000.0).round() as u32)
}

/// The scenario: a link of `one_way` latency and `loss` each way, the map of
/// `map` bytes (0: none, and the window is `window` seconds instead), `layer` and
/// `connection` settings.
struct Run {
    one_way: Duration,
    loss: f64,
    map: usize,
    window: f64,
    layer: LayerConfig,
    connection: fn(u64) -> ConnectionConfig,
    seed: u64,
}

impl Run {
    fn new(rtt_ms: u64, loss: f64, map: usize) -> Self {
        Self {
            one_way: Duration::from_millis(rtt_ms / 2),
            loss,
            map,
            window: 2.0,
            layer: game_layer(),
            connection: bulk_connection,
            seed: 16,
        }
    }

    fn go(&self) -> Figures {
        let mut net = Network::new(self.seed);
        net.set_oracle_enabled(false);
        net.set_default_link(
            LinkConfig::default()
                .with_latency(self.one_way)
                .with_loss(self.loss),
        );
        let protocol_id = netproto::protocol_id::<Msg>(&self.layer);
        let mut backend = SimBackend::new(protocol_id, 7);
        let server_node = NodeId(0);
        let mut server_config = backend.server_config(server_node);
        server_config.connection = (self.connection)(protocol_id);
        let mut server = SimServer::<Msg>::new(server_node, server_config, self.layer.clone(), 0.0);
        let token = backend.token(1, server_node);
        let mut client = SimClient::<Msg>::new(
            NodeId(1),
            server_node,
            (self.connection)(protocol_id),
            &token,
            self.layer.clone(),
            0.0,
        );
        let map: Vec<u8> = (0..self.map).map(|i| (i * 7 + i / 256) as u8).collect();
        let mut peer: Option<ClientId> = None;
        let mut queued_at = f64::NAN;
        let mut window_end = f64::INFINITY;
        let mut map_at = None::<f64>;
        let mut sent_at = Vec::new();
        let mut latencies = Vec::new();
        let mut client_connected = false;
        let mut tick = 0u32;
        loop {
            let now = f64::from(tick) * TICK;
            if now >= window_end + 0.5 {
                break;
            }
            assert!(now < 120.0, "no map after 120 s");
            deliver(
                &mut net,
                now,
                &mut server,
                std::slice::from_mut(&mut client),
            );
            while let Some(event) = server.poll_event() {
                match event {
                    ServerEvent::Connected { client, .. } => {
                        peer = Some(client);
                        queued_at = now;
                        let layer = server.layer_mut(client).expect("connected");
                        if self.map > 0 {
                            layer
                                .send(MAP, Msg::Map(Map { bytes: map.clone() }))
                                .expect("the map");
                        } else {
                            window_end = now + self.window;
                        }
                    }
                    other => panic!("server: {other:?}"),
                }
            }
            while let Some(event) = client.poll_event() {
                match event {
                    ClientEvent::Connected { .. } => client_connected = true,
                    other => panic!("client: {other:?}"),
                }
            }
            if let Some(id) = peer
                && tick.is_multiple_of(3)
            {
                let layer = server.layer_mut(id).expect("connected");
                layer
                    .send(SNAPSHOT, Msg::Snapshot(snapshot(tick)))
                    .expect("a snapshot");
                sent_at.push((tick, now));
            }
            if let Some(id) = peer {
                while server.receive(id, INPUT).is_some() {}
            }
            if client_connected {
                let _ = client.send(INPUT, Msg::Input(Input { tick, buttons: 3 }));
                while let Some(m) = client.receive(SNAPSHOT) {
                    if let Msg::Snapshot(s) = m
                        && let Some(&(_, at)) = sent_at.iter().find(|(t, _)| *t == s.tick)
                        && at < window_end
                    {
                        latencies.push(now - at);
                    }
                }
                while let Some(m) = client.receive(MAP) {
                    if let Msg::Map(m) = m {
                        assert!(m.bytes == map, "the map arrives intact");
                        map_at = Some(now);
                        window_end = now;
                    }
                }
            }
            server.update(now, &mut net);
            client.update(now, &mut net);
            tick += 1;
        }
        let map_ms = map_at.map_or(0, |at| ((at - queued_at) * 1000.0).round() as u32);
        Figures {
            map_ms,
            snapshots_sent: sent_at.iter().filter(|(_, t)| *t < window_end).count(),
            snapshots_received: latencies.len(),
            snapshot_p50_ms: percentile(&mut latencies, 0.5),
            snapshot_p99_ms: percentile(&mut latencies, 0.99),
        }
    }
}

/// The channels a game declares: inputs and snapshots carry their own types, the map
/// goes on the bulk preset in one message.
fn game_layer() -> LayerConfig {
    LayerConfig::with_channels(vec![
        ChannelConfig::unreliable().carries::<Msg, Input>(),
        ChannelConfig::sequenced().carries::<Msg, Snapshot>(),
        ChannelConfig::bulk(),
    ])
}

/// The bulk preset as it was before issue 25: 128-byte fragments, 7 to a 1 KiB
/// packet.
fn old_layer() -> LayerConfig {
    let mut blocks = netproto::channel::BlockConfig::bulk();
    blocks.fragment_size = 128;
    LayerConfig::with_channels(vec![
        ChannelConfig::unreliable().carries::<Msg, Input>(),
        ChannelConfig::sequenced().carries::<Msg, Snapshot>(),
        ChannelConfig::bulk()
            .with_blocks(blocks)
            .with_max_bits_per_packet(7936),
    ])
}

/// The bulk preset's connection side: [`CongestionConfig::bulk`], 120 packets a
/// second in good mode and 30 in bad.
fn bulk_connection(protocol_id: u64) -> ConnectionConfig {
    let mut config = ConnectionConfig::new(protocol_id);
    config.congestion = CongestionConfig::bulk();
    config
}

fn good_rate_240(protocol_id: u64) -> ConnectionConfig {
    let mut config = bulk_connection(protocol_id);
    config.congestion.good_rate = 240.0;
    config
}

/// The goal: with the bulk preset (the bulk channel and
/// [`CongestionConfig::bulk`]) a 1 MB map arrives in 2 s or less over a
/// 50 ms round trip with 1% loss each way, while the 20 Hz snapshots keep their
/// latency (99th percentile within one snapshot interval, 50 ms, of the same run
/// without a map). Exact figures of seed 16; the goal on two more seeds.
#[test]
fn a_1_mb_map_takes_under_2_s_at_a_50_ms_round_trip() {
    let unloaded = Run::new(50, 0.01, 0).go();
    let loaded = Run::new(50, 0.01, MAX_MAP).go();
    println!(
        "unloaded {unloaded:?}\nloaded {loaded:?}: {:.0} kB/s",
        loaded.rate_kb_s(MAX_MAP)
    );
    assert_eq!(loaded.map_ms, 1117);
    assert_eq!(
        (unloaded.snapshot_p50_ms, unloaded.snapshot_p99_ms),
        (33, 33)
    );
    assert_eq!((loaded.snapshot_p50_ms, loaded.snapshot_p99_ms), (33, 33));
    assert_eq!((loaded.snapshots_sent, loaded.snapshots_received), (23, 22));
    for seed in [17, 18] {
        let loaded = Run {
            seed,
            ..Run::new(50, 0.01, MAX_MAP)
        }
        .go();
        println!("seed {seed}: {loaded:?}");
        assert!(loaded.map_ms <= 2000, "{loaded:?}");
        assert!(
            loaded.snapshot_p99_ms <= unloaded.snapshot_p99_ms + 50,
            "{loaded:?}"
        );
    }
}

/// Above 250 ms of round trip the congestion mode is bad (30 packets a second with the
/// bulk preset): a 1 MB map at 300 ms still moves at about 217 kB/s (BENCHMARKS.md
/// quotes it).
#[test]
fn at_a_300_ms_round_trip_the_map_moves_at_217_kb_s() {
    let unloaded = Run::new(300, 0.01, 0).go();
    let loaded = Run::new(300, 0.01, MAX_MAP).go();
    println!(
        "unloaded {unloaded:?}\nloaded {loaded:?}: {:.0} kB/s",
        loaded.rate_kb_s(MAX_MAP)
    );
    assert_eq!(loaded.map_ms, 4617);
    assert_eq!(loaded.rate_kb_s(MAX_MAP).round(), 217.0);
    assert_eq!(unloaded.snapshot_p99_ms, 183);
    assert_eq!(loaded.snapshot_p99_ms, 183);
}

/// At the default rates (the article's: 30 packets a second in good mode, 10 in bad)
/// the same map moves at about a quarter of the bulk preset's rate, and in bad mode
/// 10 packets a second cannot carry 20 snapshots a second of one packet each: they
/// queue (BENCHMARKS.md quotes these figures, the guide what to do about them).
#[test]
fn at_the_default_rates_the_map_moves_at_a_quarter_of_the_speed() {
    let mut figures = Vec::new();
    for rtt in [50, 300] {
        let defaults = |map| {
            Run {
                connection: ConnectionConfig::new,
                ..Run::new(rtt, 0.01, map)
            }
            .go()
        };
        let (unloaded, loaded) = (defaults(0), defaults(MAX_MAP));
        println!(
            "defaults, {rtt} ms: unloaded {unloaded:?}\nloaded {loaded:?}: {:.0} kB/s",
            loaded.rate_kb_s(MAX_MAP)
        );
        figures.push((
            loaded.map_ms,
            loaded.rate_kb_s(MAX_MAP).round() as u32,
            (unloaded.snapshot_p50_ms, unloaded.snapshot_p99_ms),
            (loaded.snapshot_p50_ms, loaded.snapshot_p99_ms),
        ));
    }
    assert_eq!(
        figures,
        [
            (4767, 210, (33, 50), (50, 50)),
            (15217, 66, (467, 1117), (3767, 7667)),
        ]
    );
}

/// The report, reproduced: with the old preset's 1 KiB of blocks per packet
/// a 200 KB map took about 2 s (about 107 kB/s: 120 packets x 7 fragments x 128
/// bytes) and a higher `good_rate` changed nothing, because the send timer allows at
/// most two packets per update (60 Hz here: 120 a second). The new preset moves the
/// same map in a fraction of that.
#[test]
fn the_old_cap_was_the_bytes_per_packet_not_the_rate() {
    let map = 200_000;
    let old = Run {
        layer: old_layer(),
        ..Run::new(50, 0.01, map)
    }
    .go();
    let old_faster = Run {
        layer: old_layer(),
        connection: good_rate_240,
        ..Run::new(50, 0.01, map)
    }
    .go();
    let new = Run::new(50, 0.01, map).go();
    println!(
        "old {old:?} {:.0} kB/s\nold at good_rate 240 {old_faster:?}\nnew {new:?} {:.0} kB/s",
        old.rate_kb_s(map),
        new.rate_kb_s(map)
    );
    assert_eq!(
        old.map_ms, old_faster.map_ms,
        "good_rate above 2 per update changes nothing"
    );
    assert_eq!((old.map_ms, new.map_ms), (2150, 233));
}

/// Once over real loopback sockets, through the link conditioner (25 ms each way,
/// 1% loss each way, on the client's socket: a 50 ms round trip), with the bulk
/// preset on both sides: a measurement to report, not an assertion on the wall clock.
/// The same loop without the map gives the unloaded snapshot latency. Build in
/// release for figures that do not measure the debug build: `cargo test --release -p
/// netproto-tests --test bulk_throughput -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement over real sockets and the wall clock"]
fn loopback_1_mb_map_through_the_conditioner() {
    let (_, unloaded_p50, unloaded_p99) = loopback_run(false);
    let (took, p50, p99) = loopback_run(true);
    let took = took.expect("the map arrived");
    println!(
        "loopback, conditioner 25 ms each way, 1% loss: 1 MB map in {took:.3} s ({:.0} kB/s); \
         snapshots during it: p50 {p50} ms, p99 {p99} ms; without the map: p50 {unloaded_p50} ms, p99 {unloaded_p99} ms",
        MAX_MAP as f64 / took / 1000.0
    );
}

/// One loopback run of [`loopback_1_mb_map_through_the_conditioner`]: the map's time
/// in seconds (`None` without a map) and the snapshots' p50 and p99 latency while it
/// was in flight (2 s without a map), milliseconds.
fn loopback_run(with_map: bool) -> (Option<f64>, u32, u32) {
    use netproto::connection::ServerConfig;
    use netproto::transport::conditioner::ConditionerConfig;
    use netproto::transport::{UdpClient, UdpClientEvent, UdpServer, UdpServerEvent};
    use std::time::Instant;
    let layer = game_layer();
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let key = || netproto::netcode::Key::from_bytes([9; 32]);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let addr = socket.local_addr().expect("bound");
    let config = ServerConfig::new(bulk_connection(protocol_id), key(), vec![addr]);
    let mut server = UdpServer::<Msg>::with_socket(socket, config, layer.clone()).expect("server");
    let mut params = netproto::netcode::TokenParams::new(protocol_id, 1, vec![addr]);
    params.timeout_seconds = 10;
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let token = netproto::netcode::generate_connect_token(&params, &key(), unix).expect("token");
    let config = netproto::transport::Config {
        channels: layer,
        connection: bulk_connection(protocol_id),
        max_clients: 1,
    };
    let mut client =
        UdpClient::<Msg>::connect_with("127.0.0.1:0", addr, &token, config).expect("client");
    client.set_conditioner(Some(
        "latency=25ms,loss=1%,seed=16"
            .parse::<ConditionerConfig>()
            .expect("spec"),
    ));
    let map: Vec<u8> = (0..MAX_MAP).map(|i| (i * 7 + i / 256) as u8).collect();
    let start = Instant::now();
    let (mut peer, mut queued, mut done) = (None, None, None);
    let mut tick = 0u32;
    let (mut sent_at, mut latencies) = (Vec::new(), Vec::new());
    let window_over = |queued: Option<Instant>, done: Option<Instant>| match (with_map, queued) {
        (true, _) => done.is_some_and(|d: Instant| d.elapsed().as_secs_f64() >= 0.5),
        (false, Some(q)) => q.elapsed().as_secs_f64() >= 2.0,
        (false, None) => false,
    };
    while !window_over(queued, done) {
        let frame = Instant::now();
        server.update().expect("server");
        client.update().expect("client");
        while let Some(event) = server.poll_event() {
            if let UdpServerEvent::Connected { client, .. } = event {
                peer = Some(client);
                if with_map {
                    server
                        .send(client, MAP, Msg::Map(Map { bytes: map.clone() }))
                        .expect("map");
                }
                queued = Some(Instant::now());
            }
        }
        for event in client.events() {
            assert!(
                matches!(event, UdpClientEvent::Connected { .. }),
                "{event:?}"
            );
        }
        if let Some(id) = peer
            && tick.is_multiple_of(3)
        {
            server
                .send(id, SNAPSHOT, Msg::Snapshot(snapshot(tick)))
                .expect("snapshot");
            sent_at.push((tick, Instant::now()));
        }
        while let Some(m) = client.receive(SNAPSHOT) {
            let in_window = done.is_none()
                && queued.is_some_and(|q| q.elapsed().as_secs_f64() < 2.0 || with_map);
            if let (Msg::Snapshot(s), true) = (m, in_window)
                && let Some(&(_, at)) = sent_at.iter().find(|(t, _)| *t == s.tick)
            {
                latencies.push(at.elapsed().as_secs_f64());
            }
        }
        while let Some(m) = client.receive(MAP) {
            if let Msg::Map(m) = m {
                assert!(m.bytes == map);
                done = Some(Instant::now());
            }
        }
        assert!(start.elapsed().as_secs() < 120, "hung");
        tick += 1;
        std::thread::sleep(Duration::from_secs_f64(TICK).saturating_sub(frame.elapsed()));
    }
    let took = done.zip(queued).map(|(d, q)| (d - q).as_secs_f64());
    let p99 = percentile(&mut latencies, 0.99);
    let p50 = percentile(&mut latencies, 0.5);
    (took, p50, p99)
}
