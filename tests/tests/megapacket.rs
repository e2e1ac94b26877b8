//! The megapacket scenario (issue 7, item 4), from an incident in a shipped game: one
//! client's burst of about 400 input messages in one tick, relayed by the server to
//! 200 clients, caused loss, resend cascades and mass disconnects.
//!
//! A server with 200 clients at 60 Hz on the network simulator (50 ms each way, 5 ms
//! jitter, 5% loss each way), the full sans-IO stack on every node (connection plus
//! one message layer per connection, glued like the UDP transport:
//! [`netproto_tests::sim_stack`]). Every tick each client sends an input
//! (unreliable) and the server sends each client a snapshot (unreliable); ten times a
//! second the server sends each client a game event (reliable). Once every connection
//! is up and in good congestion mode, and after two seconds of that regular traffic,
//! one client (then 5% of them, 10 at once) queues 400 reliable inputs in one tick,
//! and the server relays each to every client, the sender included. The server keeps
//! its own backlog per client and channel for what a full layer send queue refuses
//! (`QueueFull` is back-pressure; nothing is dropped).
//!
//! Asserted: no disconnects; no datagram above its budget (the layer's payload budget
//! plus the connection and packet headers) and no fragments; every relayed message
//! delivered exactly once and in order, at the server and at every client; the time
//! to drain; resent / original reliable messages within the loss rate plus 5 points
//! (no cascade); and the latency added by the burst to the regular traffic of the
//! clients not bursting, against the two seconds before it. Run with `--nocapture`
//! to see the figures.
//!
//! Three layer configurations:
//!
//! * A fixed 0.1 s resend interval (the article's algorithm, and this library's
//!   default before this scenario) resends an unacked reliable message every 0.1 s
//!   whatever the round trip. An ack takes the 100 ms round trip plus the wait for
//!   the peer's next packet (30 per second), so most messages of a burst are sent
//!   twice ([`fixed_resend_interval_sends_a_burst_twice`]).
//! * `LayerConfig::default()` now waits at least 1.25 round trips (the transport
//!   glue feeds the layer the connection's RTT) and resends about once per lost
//!   packet; with one reliable channel, the regular events queue behind the relayed
//!   burst ([`five_percent_burst_on_one_reliable_channel`]).
//! * The configuration a game should use: the bulk relays on a reliable channel of
//!   their own beside the events' (a channel that keeps to its share of a packet goes
//!   first, so the relays take what the events leave): events are
//!   not delayed at all.

use netproto_tests::Millis;
use std::collections::VecDeque;
use std::time::Duration;

use netproto::NetMessage;
use netproto::channel::{ChannelConfig, ChannelId, LayerConfig};
use netproto::connection::{
    ClientEvent, ClientId, CongestionConfig, ConnectionConfig, Mode, ServerEvent,
};
use netproto::internals::packet::MAX_HEADER_BYTES;
use netproto::sim::{GilbertElliott, LinkConfig, Network, NodeId, Rng};
use netproto_examples::game::{EntityUpdate, GameMessage, MatchPhase, PlayerInput, workload};
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, WireCounters, deliver};

const CLIENTS: usize = 200;
const TICK: f64 = 1.0 / 60.0;
const LOSS: f64 = 0.05;
const ONE_WAY: f64 = 0.05;
const JITTER: f64 = 0.005;
const BURST: usize = 400;
/// The server sends each client a reliable event every this many ticks (10 Hz).
const EVENT_EVERY: u64 = 6;
/// Seconds of regular traffic measured before the burst.
const BASELINE: f64 = 2.0;
/// Seconds run after the burst drained, to see the connections settle.
const SETTLE: f64 = 3.0;
/// The unreliable channel of every layout.
const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;
/// Bytes a netcode payload packet adds around the packet-endpoint datagram, at most:
/// the prefix byte, up to 8 sequence bytes and the 16-byte tag.
const SESSION_PREFIX: usize = 1 + 8 + netproto::internals::netcode::MAC_BYTES;

/// A client's input in the burst: its origin and index, so that order can be checked.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct BurstInput {
    #[net(range = 0..=255)]
    origin: u8,
    #[net(range = 0..=1023)]
    index: u16,
    input: PlayerInput,
}

/// A client's regular per-tick input.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct TickInput {
    tick: u32,
    input: PlayerInput,
}

/// The server's per-tick snapshot of a few entities.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Snapshot {
    tick: u32,
    #[net(max_len = 8)]
    entities: Vec<EntityUpdate>,
}

/// A reliable game event.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Event {
    tick: u32,
    phase: MatchPhase,
}

/// The scenario's message set.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Burst(BurstInput),
    Input(TickInput),
    Snapshot(Snapshot),
    Event(Event),
}

/// A layer configuration and which channels carry what.
#[derive(Clone)]
struct Setup {
    name: &'static str,
    layer: LayerConfig,
    /// The reliable channel of the server's regular events.
    event: usize,
    /// The reliable channel of the bursts and their relays.
    relay: usize,
}

impl Setup {
    /// `LayerConfig::default()`: one reliable channel (0) for everything reliable, one
    /// unreliable (1); reliable messages are resent after 0.1 s or 1.25 round trips,
    /// whichever is longer.
    fn defaults() -> Self {
        Self {
            name: "LayerConfig::default(), one reliable channel",
            layer: LayerConfig::default(),
            event: 0,
            relay: 0,
        }
    }

    /// The defaults with the fixed 0.1 s resend interval of the article's algorithm
    /// (`resend_rtt_factor` 0, the default before this scenario).
    fn fixed_resend() -> Self {
        Self {
            name: "fixed 0.1 s resend interval (resend_rtt_factor 0), one reliable channel",
            layer: LayerConfig::with_channels(vec![
                ChannelConfig::reliable().with_resend_rtt_factor(0.0),
                ChannelConfig::unreliable(),
            ]),
            event: 0,
            relay: 0,
        }
    }

    /// The configuration a game should use: the default channels, and the bulk
    /// relayed inputs on a reliable channel of their own after the events' (channels
    /// that keep to their share of a packet go first), so that events never wait
    /// behind a burst.
    fn game() -> Self {
        Self {
            name: "default channels, relays on their own reliable channel",
            layer: LayerConfig::with_channels(vec![
                ChannelConfig::reliable(),
                ChannelConfig::unreliable(),
                ChannelConfig::reliable(),
            ]),
            event: 0,
            relay: 2,
        }
    }
}

/// Latency samples (seconds) of one kind of regular traffic, by the time the message
/// was queued.
#[derive(Default)]
struct Samples(Vec<(f64, f64)>);

/// Mean, 99th percentile and largest latency, in ms.
#[derive(Clone, Copy, Debug, Default)]
struct Latency {
    count: usize,
    mean: f64,
    p99: f64,
    max: f64,
}

impl Samples {
    fn push(&mut self, sent_at: f64, now: f64) {
        self.0.push((sent_at, now - sent_at));
    }

    /// The samples of messages queued in `[from, to)`.
    fn between(&self, from: f64, to: f64) -> Latency {
        let mut v: Vec<f64> = self
            .0
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, l)| l * 1000.0)
            .collect();
        if v.is_empty() {
            return Latency::default();
        }
        v.sort_by(f64::total_cmp);
        let p99 = v[(v.len() * 99 / 100).min(v.len() - 1)];
        Latency {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p99,
            max: v[v.len() - 1],
        }
    }
}

/// What a run measured.
struct Figures {
    bursting: usize,
    setup: Setup,
    disconnects: usize,
    connected_at_end: usize,
    wire: WireCounters,
    budget: usize,
    payload_budget: usize,
    /// Relayed messages delivered to clients, and expected.
    delivered: usize,
    expected: usize,
    /// Burst messages received by the server, and expected.
    server_received: usize,
    order_violations: usize,
    /// Seconds from the burst to the server having every burst message.
    server_drain: f64,
    /// Seconds from the burst to every client having every relayed message.
    drain: f64,
    /// Seconds from the burst until the server's backlogs emptied into the layers.
    backlog_drain: f64,
    peak_backlog: usize,
    /// Resent / original reliable messages: both directions, server to clients, and
    /// bursting clients to server.
    resent: f64,
    resent_down: f64,
    resent_up: f64,
    /// The link's mean loss rate, and the datagram loss the network actually drew.
    link_loss: f64,
    loss: f64,
    snapshots_refused: u64,
    /// Regular traffic of the clients not bursting: before the burst, during it.
    snapshot: [Latency; 2],
    event: [Latency; 2],
    input: [Latency; 2],
    /// Every connection was in good mode when the baseline started.
    all_good_at_start: bool,
    bad_mode_ticks: u64,
    rtt_max_ms: f64,
}

/// Totals of a set of layers: reliable messages queued and reliable transmissions,
/// given the unreliable messages queued and those still waiting.
fn resent_ratio(counters: &[(u64, u64, u64, u64)]) -> f64 {
    // (messages_sent, transmissions, unreliable queued, unreliable still queued)
    let (mut originals, mut transmissions) = (0u64, 0u64);
    for &(sent, tx, unreliable, waiting) in counters {
        originals += sent - unreliable;
        transmissions += tx - (unreliable - waiting);
    }
    (transmissions as f64 - originals as f64) / originals as f64
}

/// The scenario's network: 50 ms each way, 5 ms of jitter, 5% i.i.d. loss.
fn standard_link() -> LinkConfig {
    LinkConfig::default()
        .with_latency(Duration::from_secs_f64(ONE_WAY))
        .with_jitter(Duration::from_secs_f64(JITTER))
        .with_loss(LOSS)
}

fn run(bursting: usize, setup: Setup, link: LinkConfig, seed: u64) -> Figures {
    let layer = setup.layer.clone();
    let mut rng = Rng::new(seed);
    let mut net = Network::new(rng.next_u64());
    net.set_oracle_enabled(false);
    net.set_default_link(link);
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let connection = ConnectionConfig::new(protocol_id);
    let mut backend = SimBackend::new(protocol_id, rng.next_u64());
    let server_node = NodeId(0);
    let mut server_config = backend.server_config(server_node);
    server_config.max_clients = CLIENTS;
    let mut server = SimServer::<Msg>::new(server_node, server_config, layer.clone(), 0.0);
    let mut clients: Vec<SimClient<Msg>> = (0..CLIENTS)
        .map(|i| {
            let node = NodeId(i as u32 + 1);
            let token = backend.token(i as u64 + 1, server_node);
            SimClient::new(
                node,
                server_node,
                connection.clone(),
                &token,
                layer.clone(),
                0.0,
            )
        })
        .collect();
    let node_of = |id: ClientId, server: &SimServer<Msg>| {
        server
            .connection()
            .client_address(id)
            .map(|n| n.0 as usize - 1)
    };

    // Realistic values from the example game's workload.
    let game = workload(2000, seed);
    let inputs: Vec<PlayerInput> = game
        .iter()
        .filter_map(|m| match m {
            GameMessage::Input(i) => Some(i.clone()),
            _ => None,
        })
        .collect();
    let updates: Vec<EntityUpdate> = game
        .iter()
        .filter_map(|m| match m {
            GameMessage::Update(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    let phases: Vec<MatchPhase> = game
        .iter()
        .filter_map(|m| match m {
            GameMessage::Phase(p) => Some(p.clone()),
            _ => None,
        })
        .collect();

    // The bursting clients, drawn.
    let mut burster = [false; CLIENTS];
    let mut origins = Vec::new();
    while origins.len() < bursting {
        let i = rng.below(CLIENTS as u64) as usize;
        if !burster[i] {
            burster[i] = true;
            origins.push(i);
        }
    }
    // Per client (and the server): the next index expected from each origin.
    let mut next_index = vec![vec![0usize; CLIENTS]; CLIENTS];
    let mut server_next = vec![0usize; CLIENTS];
    let mut order_violations = 0usize;
    let mut delivered = 0usize;
    let mut server_received = 0usize;
    let expected = CLIENTS * bursting * BURST;

    // The server's own queues per client and channel, for what the layer's full send
    // queue refuses.
    let channels = setup.layer.channels.len();
    let mut backlog: Vec<Vec<VecDeque<Msg>>> = (0..CLIENTS)
        .map(|_| (0..channels).map(|_| VecDeque::new()).collect())
        .collect();
    let mut reliable = vec![setup.event, setup.relay];
    reliable.dedup();
    let mut peak_backlog = 0usize;
    let mut disconnects = 0usize;
    let mut snapshots_queued = vec![0u64; CLIENTS];
    let mut snapshots_refused = 0u64;
    let mut inputs_queued = vec![0u64; CLIENTS];
    let mut snapshot_lat = Samples::default();
    let mut event_lat = Samples::default();
    let mut input_lat = Samples::default();
    let mut bad_mode_ticks = 0u64;
    let mut rtt_max_ms = 0.0f64;

    let mut burst_at = None::<f64>;
    let mut all_good_at_start = false;
    let mut baseline_from = None::<f64>;
    let (mut server_drain, mut drain, mut backlog_drain) = (None, None, None);
    let mut end = f64::INFINITY;
    let mut tick = 0u64;
    loop {
        let now = tick as f64 * TICK;
        if now >= end {
            break;
        }
        assert!(
            now < 120.0,
            "no drain after {now} s: {delivered}/{expected}"
        );
        deliver(&mut net, now, &mut server, &mut clients);
        while let Some(event) = server.poll_event() {
            if let ServerEvent::Disconnected { .. } = event {
                disconnects += 1;
            }
        }
        for c in &mut clients {
            while let Some(event) = c.poll_event() {
                if !matches!(event, ClientEvent::Connected { .. }) {
                    disconnects += 1;
                }
            }
        }

        // Phases: connect until every connection is up and in good mode, then the
        // baseline, then the burst.
        if baseline_from.is_none() {
            let ready = server.connection().connected_clients() == CLIENTS
                && server.layers().all(|(id, _)| {
                    server.connection().congestion(id).map(|c| c.mode()) == Some(Mode::Good)
                })
                && clients
                    .iter()
                    .all(|c| c.connection().congestion().map(|c| c.mode()) == Some(Mode::Good));
            // A link near the RTT threshold may never settle in good mode: then the
            // baseline starts after 20 s with every client connected.
            let connected = server.connection().connected_clients() == CLIENTS;
            if ready || (connected && now >= 20.0) {
                baseline_from = Some(now);
                all_good_at_start = ready;
            }
            assert!(now < 20.0 || connected, "clients not connected after 20 s");
        }
        let bursting_now = baseline_from.is_some_and(|b| burst_at.is_none() && now >= b + BASELINE);
        if bursting_now {
            burst_at = Some(now);
        }

        // The server: take what arrived, relay bursts, queue the regular traffic.
        let ids: Vec<ClientId> = server.layers().map(|(id, _)| id).collect();
        for &id in &ids {
            let from = node_of(id, &server).expect("connected");
            while let Some(m) = server
                .layer_mut(id)
                .and_then(|l| l.receive(ChannelId::new(setup.relay)))
            {
                let Msg::Burst(b) = m else {
                    panic!("unexpected reliable message from a client: {m:?}");
                };
                assert_eq!(usize::from(b.origin), from, "origin");
                if usize::from(b.index) != server_next[from] {
                    order_violations += 1;
                }
                server_next[from] = usize::from(b.index) + 1;
                server_received += 1;
                for queues in &mut backlog {
                    queues[setup.relay].push_back(Msg::Burst(b.clone()));
                }
            }
            while let Some(m) = server.layer_mut(id).and_then(|l| l.receive(UNRELIABLE)) {
                let Msg::Input(input) = m else {
                    panic!("unexpected unreliable message from a client: {m:?}");
                };
                if !burster[from] {
                    input_lat.push(f64::from(input.tick) * TICK, now);
                }
            }
        }
        for &id in &ids {
            let to = node_of(id, &server).expect("connected");
            if tick.is_multiple_of(EVENT_EVERY) {
                let phase = phases[(tick / EVENT_EVERY) as usize % phases.len()].clone();
                backlog[to][setup.event].push_back(Msg::Event(Event {
                    tick: tick as u32,
                    phase,
                }));
            }
            let layer = server.layer_mut(id).expect("connected");
            for &channel in &reliable {
                let queue = &mut backlog[to][channel];
                while layer.can_send(ChannelId::new(channel)) {
                    let Some(m) = queue.pop_front() else {
                        break;
                    };
                    layer
                        .send(ChannelId::new(channel), m)
                        .expect("room checked");
                }
            }
            peak_backlog = peak_backlog.max(backlog[to].iter().map(VecDeque::len).sum());
            let first = (tick as usize * 4 + to) % (updates.len() - 4);
            let snapshot = Msg::Snapshot(Snapshot {
                tick: tick as u32,
                entities: updates[first..first + 4].to_vec(),
            });
            match layer.send(UNRELIABLE, snapshot) {
                Ok(()) => snapshots_queued[to] += 1,
                Err(_) => snapshots_refused += 1,
            }
            let stats = server.connection().stats(id).expect("connected");
            if baseline_from.is_some() {
                rtt_max_ms = rtt_max_ms.max(stats.endpoint.rtt.ms());
                if server.connection().congestion(id).map(|c| c.mode()) != Some(Mode::Good) {
                    bad_mode_ticks += 1;
                }
            }
        }
        if server_received == bursting * BURST
            && backlog_drain.is_none()
            && backlog.iter().flatten().all(VecDeque::is_empty)
        {
            backlog_drain = Some(now);
        }
        server.update(now, &mut net);

        // The clients.
        for (i, c) in clients.iter_mut().enumerate() {
            for &channel in &reliable {
                while let Some(m) = c.receive(ChannelId::new(channel)) {
                    match m {
                        Msg::Burst(b) => {
                            let origin = usize::from(b.origin);
                            if usize::from(b.index) != next_index[i][origin] {
                                order_violations += 1;
                            }
                            next_index[i][origin] = usize::from(b.index) + 1;
                            delivered += 1;
                        }
                        Msg::Event(e) if !burster[i] => {
                            event_lat.push(f64::from(e.tick) * TICK, now)
                        }
                        Msg::Event(_) => {}
                        other => panic!("unexpected reliable message: {other:?}"),
                    }
                }
            }
            while let Some(m) = c.receive(UNRELIABLE) {
                let Msg::Snapshot(s) = m else {
                    panic!("unexpected unreliable message: {m:?}");
                };
                if !burster[i] {
                    snapshot_lat.push(f64::from(s.tick) * TICK, now);
                }
            }
            if c.connection().is_connected() {
                let input = inputs[(tick as usize + i) % inputs.len()].clone();
                let message = Msg::Input(TickInput {
                    tick: tick as u32,
                    input,
                });
                if c.send(UNRELIABLE, message).is_ok() {
                    inputs_queued[i] += 1;
                }
            }
            if bursting_now && burster[i] {
                for index in 0..BURST {
                    let message = Msg::Burst(BurstInput {
                        origin: i as u8,
                        index: index as u16,
                        input: inputs[index % inputs.len()].clone(),
                    });
                    c.send(ChannelId::new(setup.relay), message)
                        .expect("a burst of 400 fits the send queue");
                }
            }
            c.update(now, &mut net);
        }

        if let Some(at) = burst_at {
            if server_drain.is_none() && server_received == bursting * BURST {
                server_drain = Some(now - at);
            }
            if drain.is_none() && delivered == expected {
                drain = Some(now - at);
                end = now + SETTLE;
            }
        }
        tick += 1;
    }

    let burst_at = burst_at.expect("burst");
    let baseline_from = baseline_from.expect("baseline");
    let drain = drain.expect("drained");
    let window = |s: &Samples| {
        [
            s.between(baseline_from, burst_at),
            s.between(burst_at, burst_at + drain),
        ]
    };
    let down: Vec<_> = server
        .layers()
        .map(|(id, l)| {
            let c = l.stats();
            let to = node_of(id, &server).expect("connected");
            (
                c.messages_sent,
                c.messages_transmitted,
                snapshots_queued[to],
                l.send_queue_len(UNRELIABLE) as u64,
            )
        })
        .collect();
    let up: Vec<_> = clients
        .iter()
        .enumerate()
        .filter(|(i, _)| burster[*i])
        .map(|(i, c)| {
            let l = c.layer();
            let k = l.stats();
            (
                k.messages_sent,
                k.messages_transmitted,
                inputs_queued[i],
                l.send_queue_len(UNRELIABLE) as u64,
            )
        })
        .collect();
    let mut wire = *server.wire();
    for c in &clients {
        let w = c.wire();
        wire.datagrams_sent += w.datagrams_sent;
        wire.bytes_sent += w.bytes_sent;
        wire.max_datagram = wire.max_datagram.max(w.max_datagram);
        wire.max_payload = wire.max_payload.max(w.max_payload);
        wire.fragments_sent += w.fragments_sent;
        wire.payloads_dropped_by_layer += w.payloads_dropped_by_layer;
    }
    let stats = net.stats();
    let payload_budget = setup.layer.max_packet_bits.div_ceil(8);
    Figures {
        bursting,
        disconnects,
        connected_at_end: server.connection().connected_clients(),
        wire,
        budget: SESSION_PREFIX + MAX_HEADER_BYTES + payload_budget,
        payload_budget,
        setup,
        delivered,
        expected,
        server_received,
        order_violations,
        server_drain: server_drain.expect("server drained"),
        drain,
        backlog_drain: backlog_drain.map_or(f64::NAN, |t| t - burst_at),
        peak_backlog,
        resent: resent_ratio(&[down.as_slice(), up.as_slice()].concat()),
        resent_down: resent_ratio(&down),
        resent_up: resent_ratio(&up),
        link_loss: link.mean_loss(),
        loss: stats.datagrams_dropped as f64 / stats.datagrams_sent as f64,
        snapshots_refused,
        snapshot: window(&snapshot_lat),
        event: window(&event_lat),
        input: window(&input_lat),
        all_good_at_start,
        bad_mode_ticks,
        rtt_max_ms,
    }
}

impl Figures {
    /// Resent / original reliable messages, both directions together.
    fn resent(&self) -> f64 {
        self.resent
    }

    /// The shortest possible drain at `rate` packets per second: the relayed messages
    /// each client must get, at the relay channel's message limit per packet.
    fn ideal_drain(&self, rate: f64) -> f64 {
        let channel = &self.setup.layer.channels[self.setup.relay];
        let per_client = (self.bursting * BURST) as f64;
        per_client / (channel.max_messages_per_packet as f64 * rate)
    }

    fn print(&self) {
        let f = self;
        println!(
            "\nmegapacket: {} of {CLIENTS} clients burst {BURST} reliable messages, relayed to all; {}",
            f.bursting, f.setup.name
        );
        println!("| figure | value |");
        println!("|---|---|");
        println!(
            "| disconnects | {} ({} of {CLIENTS} connected at the end) |",
            f.disconnects, f.connected_at_end
        );
        println!(
            "| largest datagram / budget | {} / {} bytes (layer payload {} / {}; fragments {}) |",
            f.wire.max_datagram,
            f.budget,
            f.wire.max_payload,
            f.payload_budget,
            f.wire.fragments_sent
        );
        println!(
            "| relayed messages delivered in order | {} / {} at the clients, {} / {} at the server, {} out of order |",
            f.delivered,
            f.expected,
            f.server_received,
            f.bursting * BURST,
            f.order_violations
        );
        println!(
            "| drain: server has the burst / its backlog is in the layers / every client has every message | {:.2} / {:.2} / {:.2} s (ideal {:.2} s in good mode) |",
            f.server_drain,
            f.backlog_drain,
            f.drain,
            f.ideal_drain(CongestionConfig::default().good_rate)
        );
        println!(
            "| peak server backlog per client (layer send queue full) | {} messages |",
            f.peak_backlog
        );
        println!(
            "| resent / original reliable messages | {:.3} (server to clients {:.3}, bursting clients to server {:.3}); link loss {:.3}, drawn {:.3} |",
            f.resent(),
            f.resent_down,
            f.resent_up,
            f.link_loss,
            f.loss
        );
        println!(
            "| all good at the start / connection-ticks in bad congestion mode after / largest smoothed RTT | {} / {} / {:.0} ms |",
            f.all_good_at_start, f.bad_mode_ticks, f.rtt_max_ms
        );
        println!(
            "| payloads refused by a layer / snapshots refused | {} / {} |",
            f.wire.payloads_dropped_by_layer, f.snapshots_refused
        );
        println!(
            "| latency of uninvolved clients' traffic, ms | before: mean / p99 / max (samples) | during: mean / p99 / max (samples) | added mean / p99 |"
        );
        println!("|---|---|---|---|");
        for (name, l) in [
            ("snapshot, unreliable, server to client", &f.snapshot),
            ("event, reliable, server to client", &f.event),
            ("input, unreliable, client to server", &f.input),
        ] {
            println!(
                "| {name} | {:.1} / {:.1} / {:.1} ({}) | {:.1} / {:.1} / {:.1} ({}) | {:+.1} / {:+.1} |",
                l[0].mean,
                l[0].p99,
                l[0].max,
                l[0].count,
                l[1].mean,
                l[1].p99,
                l[1].max,
                l[1].count,
                l[1].mean - l[0].mean,
                l[1].p99 - l[0].p99
            );
        }
    }

    /// The bounds every configuration keeps: no disconnects, no datagram above its
    /// budget, every message delivered once and in order, a drain within 1.5 times the
    /// ideal at `rate` packets per second plus a second, and unreliable traffic of the
    /// uninvolved clients no later than a tick more than before the burst.
    fn check_safety(&self, rate: f64) {
        let f = self;
        assert_eq!(f.disconnects, 0, "disconnects");
        assert_eq!(f.connected_at_end, CLIENTS, "connected at the end");
        assert!(f.wire.max_datagram <= f.budget, "datagram above budget");
        assert!(
            f.wire.max_payload <= f.payload_budget,
            "payload above budget"
        );
        assert_eq!(f.wire.fragments_sent, 0, "fragmented packets");
        assert_eq!(f.delivered, f.expected, "relayed messages delivered");
        assert_eq!(f.server_received, f.bursting * BURST, "burst at the server");
        assert_eq!(f.order_violations, 0, "messages out of order");
        assert!(
            f.drain <= 1.5 * f.ideal_drain(rate) + 1.0,
            "drain {:.2} s, ideal {:.2} s",
            f.drain,
            f.ideal_drain(rate)
        );
        assert_eq!(f.snapshots_refused, 0, "snapshots refused");
        for (name, l) in [("snapshot", &f.snapshot), ("input", &f.input)] {
            assert!(l[0].count > 0 && l[1].count > 0, "{name}: no samples");
            assert!(
                l[1].mean <= l[0].mean + TICK * 1000.0 && l[1].p99 <= l[0].p99 + TICK * 1000.0,
                "{name}: latency added by the burst {:?} -> {:?}",
                l[0],
                l[1]
            );
        }
    }

    /// Every connection was in good congestion mode before the burst and stayed there.
    fn check_good_mode(&self) {
        assert!(
            self.all_good_at_start,
            "not every connection in good mode at start"
        );
        assert_eq!(self.bad_mode_ticks, 0, "a connection went to bad mode");
    }

    /// No resend cascade: resent / original reliable messages within the loss rate
    /// plus 5 points.
    fn check_no_cascade(&self) {
        assert!(
            self.resent() <= self.link_loss + 0.05,
            "resent / original {:.3} above {} + 0.05",
            self.resent(),
            self.link_loss
        );
    }
}

/// One client's burst, relayed to 200, with the configuration a game should use.
#[test]
fn one_client_burst_relayed_to_200() {
    let f = run(1, Setup::game(), standard_link(), 1);
    f.print();
    f.check_safety(CongestionConfig::default().good_rate);
    f.check_good_mode();
    f.check_no_cascade();
    // Events travel on their own channel: at most a tick later on average.
    let e = &f.event;
    assert!(e[1].mean <= e[0].mean + TICK * 1000.0, "events: {e:?}");
}

/// 5% of the clients (10) burst at once: 4000 messages relayed to each of 200
/// clients, with the configuration a game should use.
#[test]
fn five_percent_burst_relayed_to_200() {
    let f = run(CLIENTS / 20, Setup::game(), standard_link(), 2);
    f.print();
    f.check_safety(CongestionConfig::default().good_rate);
    f.check_good_mode();
    f.check_no_cascade();
    assert!(f.peak_backlog > 0, "the relay outgrew the send queue");
    let e = &f.event;
    assert!(e[1].mean <= e[0].mean + TICK * 1000.0, "events: {e:?}");
}

/// The same 5% burst with `LayerConfig::default()`: everything reliable on one
/// channel. No cascade with the default resend interval (a regression test: the fixed
/// 0.1 s interval resent most of a burst); the events wait behind the relayed burst
/// (head-of-line), for at most the drain time, and nothing else degrades.
#[test]
fn five_percent_burst_on_one_reliable_channel() {
    let f = run(CLIENTS / 20, Setup::defaults(), standard_link(), 2);
    f.print();
    f.check_safety(CongestionConfig::default().good_rate);
    f.check_good_mode();
    f.check_no_cascade();
    let e = &f.event;
    assert!(
        e[1].max <= e[0].max + f.drain * 1000.0,
        "events waited longer than the drain: {e:?}"
    );
}

/// A fixed 0.1 s resend interval (the article's, and this library's default before
/// this scenario) is shorter than the time an ack takes here (a 100 ms round trip plus
/// the wait for the peer's next packet at 30 per second): most messages of a burst go
/// out twice. The connections hold (no disconnects, budgets kept, everything in
/// order), but the burst costs about twice its bandwidth, and on a real link that
/// extra traffic is what turns a burst into loss and more resends. Bounded here at
/// one spurious resend per message (a runaway cascade would exceed it); the default,
/// which waits at least 1.25 round trips, resends less than a quarter as much.
#[test]
fn fixed_resend_interval_sends_a_burst_twice() {
    let f = run(1, Setup::fixed_resend(), standard_link(), 1);
    f.print();
    f.check_safety(CongestionConfig::default().good_rate);
    f.check_good_mode();
    assert!(
        f.resent() <= 1.0 + LOSS + 0.05,
        "resent / original {:.3}",
        f.resent()
    );
    let default = run(1, Setup::defaults(), standard_link(), 1);
    default.check_no_cascade();
    assert!(
        default.resent() < f.resent() / 4.0,
        "default: {:.3} against {:.3}",
        default.resent(),
        f.resent()
    );
}
/// 10% of the clients (20) burst at once, and the loss comes in bursts
/// (Gilbert-Elliott, 5% on average, bursts of 4 datagrams), with the configuration a
/// game should use. A loss burst delays acks; when the RTT was measured from send to
/// ack its samples jumped with them, connections spent time in bad congestion mode
/// and resent more than the cascade bound allows (0.101 against 0.099). With the
/// network RTT (the ack-delay byte) they stay good, and the resends stay within the
/// bound (0.093). The drain is still checked against the bad mode's rate.
#[test]
fn ten_percent_burst_with_bursty_loss() {
    let link = LinkConfig::default()
        .with_latency(Duration::from_secs_f64(ONE_WAY))
        .with_jitter(Duration::from_secs_f64(JITTER))
        .with_burst_loss(GilbertElliott::bursts(0.013, 0.25));
    let f = run(CLIENTS / 10, Setup::game(), link, 3);
    f.print();
    f.check_safety(CongestionConfig::default().bad_rate);
    f.check_no_cascade();
}
