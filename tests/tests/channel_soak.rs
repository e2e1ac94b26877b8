//! Soak tests of two full stacks (message layer + packet endpoint) over the network
//! simulator: every reliable message delivered exactly once, in order, byte-identical.
//!
//! * a matrix of loss {1, 5, 25, 50}% x latency {0, 50, 250, 1000} ms x duplicates
//!   {0, 10, 25}%, with 100 ms of jitter and reordering, bursts of 0 to 64 messages
//!   per tick on both sides and blocks up to the maximum size;
//! * a long run through at least 4 wraps of both the packet sequences and the message
//!   ids;
//! * a burst of 400 reliable messages in one tick: no packet above its budget, all in
//!   order, drain time reported;
//! * a receiver that stops draining for 10 simulated seconds: the sender is
//!   back-pressured and recovers without loss.
//!
//! Each runs twice: with the resend policy users get (`ChannelConfig::reliable()`:
//! resend after max(0.1 s, 1.25 RTT)) and with the fixed 0.1 s interval
//! (`resend_rtt_factor` 0), which resends far more and so stresses the duplicate and
//! window handling harder.
//!
//! `NETPROTO_SOAK_SCALE=10` (or more) makes every run that many times longer.
//! `NETPROTO_SOAK_SEED=n` draws the matrix from other seeds.
//! `NETPROTO_SOAK_WRAPS=1` runs every cell of the matrix through 4 wraps of the packet
//! sequences (and so many more of the message ids); use `--release` for it. Run with
//! `--nocapture` to see the figures.

use netproto::Time;
use std::collections::VecDeque;
use std::time::Duration;

use netproto::NetMessage;
use netproto::channel::{
    BlockConfig, ChannelConfig, ChannelId, ChannelSendError, LayerConfig, MessageStack,
    StackReceiveError,
};
use netproto::packet::EndpointConfig;
use netproto::sim::{LinkConfig, Network, NodeId, Rng};
use netproto_examples::game::{GameMessage, workload};

/// Largest blob payload; its encoding is the largest block.
const BLOB_MAX: usize = 16000;

/// A large byte message, sent as a block.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Blob {
    #[net(max_len = 16000)]
    data: Vec<u8>,
}

/// The soak's message set: the game's messages and blobs.
#[derive(NetMessage, Debug, Clone, PartialEq)]
enum SoakMessage {
    Game(GameMessage),
    Blob(Blob),
}

const RELIABLE: ChannelId = ChannelId::RELIABLE;
const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;
const TICK: f64 = 1.0 / 60.0;
const PACKET_BITS: usize = 8192;

/// Bytes of the largest block: a maximal blob, encoded.
fn max_block_size() -> usize {
    SoakMessage::MAX_BITS.div_ceil(8)
}

fn layer_config() -> LayerConfig {
    layer_config_with(DEFAULT)
}

/// The resend policy of the fixed 0.1 s interval.
const FIXED: f64 = 0.0;
/// The resend policy users get: `ChannelConfig::reliable()`'s factor (1.25), resend
/// after max(0.1 s, factor x RTT).
const DEFAULT: f64 = -1.0;

/// The two policies every soak runs, with their names.
const POLICIES: [(f64, &str); 2] = [(DEFAULT, "default"), (FIXED, "fixed")];

/// `factor`, with [`DEFAULT`] resolved to the library's default.
fn resolve(factor: f64) -> f64 {
    if factor == DEFAULT {
        let default = ChannelConfig::reliable().resend_rtt_factor;
        assert!(default > 0.0, "the default resend policy is RTT-aware");
        default
    } else {
        factor
    }
}

fn layer_config_with(resend_rtt_factor: f64) -> LayerConfig {
    LayerConfig {
        channels: vec![
            ChannelConfig::reliable()
                .with_resend_rtt_factor(resolve(resend_rtt_factor))
                .with_blocks(BlockConfig {
                    max_block_size: max_block_size(),
                    fragment_size: 400,
                    max_fragments_per_packet: 2,
                    max_blocks_in_flight: 4,
                }),
            ChannelConfig::unreliable()
                .with_max_message_bits(GameMessage::MAX_BITS)
                .with_max_bits_per_packet(2000),
        ],
        max_packet_bits: PACKET_BITS,
        sent_packets_buffer_size: 256,
    }
}

fn scale() -> u64 {
    std::env::var("NETPROTO_SOAK_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

fn encoding(message: &mut SoakMessage, buf: &mut [u8]) -> Vec<u8> {
    let len = netproto::encode_into(message, buf).expect("valid message");
    buf[..len].to_vec()
}

/// How one side generates traffic.
#[derive(Clone, Copy, Debug)]
struct Traffic {
    /// Chance per tick of a burst of 0..=64 reliable messages.
    burst_chance: f64,
    /// Chance per tick of a blob (a block unless small).
    blob_chance: f64,
    /// Unreliable messages per tick.
    unreliable_per_tick: usize,
}

/// One end: a stack, its application queues, and what the peer must receive.
struct Side {
    node: NodeId,
    stack: MessageStack<SoakMessage>,
    rng: Rng,
    pool: Vec<GameMessage>,
    /// Generated, not yet accepted by `send` (back-pressure).
    pending: VecDeque<SoakMessage>,
    /// Encodings of accepted reliable messages the peer has not received yet.
    in_flight: VecDeque<Vec<u8>>,
    accepted: u64,
    blocks: u64,
    max_block: usize,
    unreliable_sent: u64,
    queue_full: u64,
    /// Receiving side.
    delivered: u64,
    unreliable_received: u64,
    failures: Vec<String>,
    draining: bool,
    max_datagram: usize,
}

impl Side {
    fn new(node: NodeId, seed: u64, resend_rtt_factor: f64) -> Self {
        Self {
            node,
            stack: MessageStack::new(
                EndpointConfig::default(),
                layer_config_with(resend_rtt_factor),
                Time::ZERO,
            )
            .expect("valid config"),
            rng: Rng::new(seed),
            pool: workload(2048, seed),
            pending: VecDeque::new(),
            in_flight: VecDeque::new(),
            accepted: 0,
            blocks: 0,
            max_block: 0,
            unreliable_sent: 0,
            queue_full: 0,
            delivered: 0,
            unreliable_received: 0,
            failures: Vec::new(),
            draining: true,
            max_datagram: 0,
        }
    }

    fn game(&mut self) -> GameMessage {
        let i = self.rng.below(self.pool.len() as u64) as usize;
        self.pool[i].clone()
    }

    fn generate(&mut self, traffic: &Traffic) {
        if self.rng.chance(traffic.burst_chance) {
            for _ in 0..self.rng.below(65) {
                let m = self.game();
                self.pending.push_back(SoakMessage::Game(m));
            }
        }
        if self.rng.chance(traffic.blob_chance) {
            let len = match self.rng.below(4) {
                0 => BLOB_MAX,
                1 => 1 + self.rng.below(900) as usize,
                _ => 1000 + self.rng.below((BLOB_MAX - 1000) as u64) as usize,
            };
            let mut data = vec![0u8; len];
            self.rng.fill_bytes(&mut data);
            self.pending.push_back(SoakMessage::Blob(Blob { data }));
        }
        for _ in 0..traffic.unreliable_per_tick {
            let m = self.game();
            if self.stack.send(UNRELIABLE, SoakMessage::Game(m)).is_ok() {
                self.unreliable_sent += 1;
            }
        }
    }

    /// Moves pending messages into the reliable channel until it pushes back.
    fn offer(&mut self, buf: &mut [u8]) {
        while let Some(mut message) = self.pending.pop_front() {
            let bytes = encoding(&mut message, buf);
            match self.stack.send(RELIABLE, message.clone()) {
                Ok(()) => {
                    if bytes.len() * 8 > 7000 {
                        self.blocks += 1;
                        self.max_block = self.max_block.max(bytes.len());
                    }
                    self.accepted += 1;
                    self.in_flight.push_back(bytes);
                }
                Err(ChannelSendError::QueueFull { .. }) => {
                    self.queue_full += 1;
                    self.pending.push_front(message);
                    break;
                }
                Err(e) => panic!("send refused: {e}"),
            }
        }
    }
}

/// Takes everything `to` has received, checking reliable messages against what
/// `from` sent.
fn drain(to: &mut Side, from: &mut Side, buf: &mut [u8]) {
    if !to.draining {
        return;
    }
    while let Some(mut m) = to.stack.receive(RELIABLE) {
        let got = encoding(&mut m, buf);
        match from.in_flight.pop_front() {
            Some(expected) if expected == got => to.delivered += 1,
            Some(_) => to.failures.push(format!(
                "message {} differs or is out of order",
                to.delivered
            )),
            None => to.failures.push("message never sent".into()),
        }
        if to.failures.len() > 10 {
            break;
        }
    }
    while to.stack.receive(UNRELIABLE).is_some() {
        to.unreliable_received += 1;
    }
}

struct Run {
    name: String,
    link: LinkConfig,
    seed: u64,
    ticks: u64,
    traffic: Traffic,
    /// Ticks (from start) during which side 1 does not drain.
    stall: Option<(u64, u64)>,
    /// Reliable messages side 0 queues at tick 0.
    initial_burst: usize,
    /// The reliable channel's `resend_rtt_factor` ([`DEFAULT`] or a factor).
    resend_rtt_factor: f64,
}

#[derive(Debug, Default)]
struct Outcome {
    messages: u64,
    blocks: u64,
    max_block: usize,
    packets: u64,
    packet_wraps: f64,
    id_wraps: f64,
    failures: usize,
    drain_seconds: f64,
    /// Seconds from start to the last reliable message delivered.
    last_delivery: f64,
    refused_packets: u64,
    max_receive_queue: usize,
    /// Reliable messages and fragments put in packets, both sides.
    transmissions: u64,
    queue_full: u64,
    unreliable: (u64, u64),
    max_datagram: usize,
}

fn run(r: &Run) -> Outcome {
    let (na, nb) = (NodeId(0), NodeId(1));
    let mut net = Network::new(r.seed);
    net.set_oracle_enabled(false);
    net.set_link_both(na, nb, r.link);
    let mut sides = [
        Side::new(na, r.seed * 2 + 1, r.resend_rtt_factor),
        Side::new(nb, r.seed * 2 + 2, r.resend_rtt_factor),
    ];
    let mut buf = vec![0u8; max_block_size() + 8];
    let mut tick = 0u64;
    let mut last_delivery = 0.0;
    let mut refused_packets = 0;
    let mut max_receive_queue = 0;
    let limit = r.ticks + 200 * 60;
    loop {
        let now = tick as f64 * TICK;
        let generating = tick < r.ticks;
        if tick == 0 {
            for _ in 0..r.initial_burst {
                let m = sides[0].game();
                sides[0].pending.push_back(SoakMessage::Game(m));
            }
        }
        if let Some((from, to)) = r.stall {
            sides[1].draining = !(from..to).contains(&tick);
        }
        while let Some(d) = net.poll(Time::from_secs_f64(now)) {
            let i = usize::from(d.to == nb);
            match sides[i]
                .stack
                .receive_datagram(Time::from_secs_f64(now), &d.payload)
            {
                Ok(_) | Err(StackReceiveError::Packet(_)) => {}
                Err(StackReceiveError::Messages(
                    netproto::channel::PayloadError::ReceiveQueueFull { .. },
                )) => refused_packets += 1,
                Err(e) => sides[i].failures.push(format!("refused: {e}")),
            }
        }
        let before: u64 = sides.iter().map(|s| s.delivered).sum();
        max_receive_queue =
            max_receive_queue.max(sides[1].stack.layer().receive_queue_len(RELIABLE));
        let [a, b] = &mut sides;
        drain(a, b, &mut buf);
        drain(b, a, &mut buf);
        if sides.iter().map(|s| s.delivered).sum::<u64>() > before {
            last_delivery = now;
        }
        for side in &mut sides {
            if generating {
                side.generate(&r.traffic);
            }
            side.offer(&mut buf);
            let node = side.node;
            let peer = NodeId(1 - node.0);
            let mut max = 0;
            side.stack
                .send_packet(Time::from_secs_f64(now), |d| {
                    max = max.max(d.len());
                    net.send(Time::from_secs_f64(now), node, peer, d);
                })
                .expect("payload within budget");
            side.max_datagram = side.max_datagram.max(max);
            if let Some(e) = side.stack.layer().protocol_error() {
                side.failures.push(format!("protocol error: {e}"));
            }
        }
        tick += 1;
        let done = sides
            .iter()
            .all(|s| s.pending.is_empty() && s.in_flight.is_empty());
        if (!generating && done) || tick > limit || sides.iter().any(|s| s.failures.len() > 10) {
            break;
        }
    }
    let mut out = Outcome {
        drain_seconds: (tick.saturating_sub(r.ticks)) as f64 * TICK,
        last_delivery,
        refused_packets,
        max_receive_queue,
        ..Outcome::default()
    };
    for s in &sides {
        out.messages += s.accepted;
        out.blocks += s.blocks;
        out.max_block = out.max_block.max(s.max_block);
        out.packets = out.packets.max(s.stack.endpoint().stats().packets_sent);
        out.failures += s.failures.len() + s.in_flight.len() + s.pending.len();
        out.queue_full += s.queue_full;
        out.unreliable.0 += s.unreliable_sent;
        out.unreliable.1 += s.unreliable_received;
        out.max_datagram = out.max_datagram.max(s.max_datagram);
        out.transmissions += s.stack.layer().stats().messages_transmitted;
        for f in s.failures.iter().take(3) {
            eprintln!("{}: {f}", r.name);
        }
        let layer = s.stack.layer().stats();
        assert_eq!(
            layer.payloads_dropped_malformed, 0,
            "{}: malformed packets",
            r.name
        );
    }
    out.packet_wraps = out.packets as f64 / 65536.0;
    out.id_wraps = sides
        .iter()
        .map(|s| s.accepted as f64 / 65536.0)
        .fold(f64::INFINITY, f64::min);
    println!(
        "{:<28} messages {:>8} blocks {:>4} (max {:>5} B) packets {:>7} wraps pkt {:.2} id {:.2} \
         failures {} drain {:.1} s queue-full {} unreliable {}/{} max datagram {} B",
        r.name,
        out.messages,
        out.blocks,
        out.max_block,
        out.packets,
        out.packet_wraps,
        out.id_wraps,
        out.failures,
        out.drain_seconds,
        out.queue_full,
        out.unreliable.1,
        out.unreliable.0,
        out.max_datagram
    );
    out
}

#[test]
fn soak_matrix() {
    matrix(DEFAULT, "default resend policy");
}

#[test]
fn soak_matrix_fixed_interval() {
    matrix(FIXED, "fixed 0.1 s resend interval");
}

fn matrix(resend_rtt_factor: f64, policy: &str) {
    let scale = scale();
    let full = std::env::var_os("NETPROTO_SOAK_WRAPS").is_some();
    let mut total = Outcome::default();
    let mut seed = std::env::var("NETPROTO_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    for loss in [0.01, 0.05, 0.25, 0.50] {
        for latency in [0.0, 0.05, 0.25, 1.0] {
            for duplicate in [0.0, 0.10, 0.25] {
                seed += 1;
                let link = LinkConfig::default()
                    .with_latency(Duration::from_secs_f64(latency))
                    .with_jitter(Duration::from_millis(100))
                    .with_loss(loss)
                    .with_duplicates(duplicate)
                    .with_reordering(0.1, Duration::from_millis(100));
                let r = Run {
                    name: format!(
                        "{policy}: loss {:>2}% lat {:>4} ms dup {:>2}%",
                        loss * 100.0,
                        latency * 1000.0,
                        duplicate * 100.0
                    ),
                    link,
                    seed,
                    ticks: if full { 4 * 65536 + 600 } else { 600 * scale },
                    // Sustained over the long run, the load must stay below what the
                    // channel can carry at that latency, or the backlog grows forever:
                    // one block is in flight at a time and takes a round trip, and with
                    // the 0.1 s resend interval the oldest messages are resent every 6
                    // packets, so at most ~6 x 64 ids are in flight per round trip.
                    traffic: Traffic {
                        burst_chance: if full {
                            0.1 / (1.0 + 2.0 * latency)
                        } else {
                            0.1
                        },
                        blob_chance: if full {
                            0.01 / (1.0 + 4.0 * latency)
                        } else {
                            0.01
                        },
                        unreliable_per_tick: 2,
                    },
                    stall: None,
                    initial_burst: 0,
                    resend_rtt_factor,
                };
                let out = run(&r);
                assert_eq!(out.failures, 0, "{}", r.name);
                if full {
                    assert!(out.packet_wraps >= 4.0 && out.id_wraps >= 4.0, "{out:?}");
                }
                assert!(out.max_datagram <= PACKET_BITS / 8 + 9, "{}", r.name);
                // Unreliable messages: at most once each, and, lost only with their
                // packets, close to the link's delivery rate.
                let (sent, received) = (out.unreliable.0 as f64, out.unreliable.1 as f64);
                assert!(received <= sent, "{}: {:?}", r.name, out.unreliable);
                assert!(
                    full || received >= 0.9 * (1.0 - loss) * sent,
                    "{}: unreliable {:?}",
                    r.name,
                    out.unreliable
                );
                total.messages += out.messages;
                total.blocks += out.blocks;
                total.max_block = total.max_block.max(out.max_block);
            }
        }
    }
    println!(
        "matrix ({policy}): 48 cells, {} reliable messages ({} blocks, largest {} B of max {}), 0 failures",
        total.messages,
        total.blocks,
        total.max_block,
        max_block_size()
    );
    assert!(total.blocks > 0);
    assert_eq!(total.max_block, max_block_size());
}

#[test]
fn soak_four_wraps() {
    four_wraps(DEFAULT, "default");
}

#[test]
fn soak_four_wraps_fixed_interval() {
    four_wraps(FIXED, "fixed");
}

fn four_wraps(resend_rtt_factor: f64, policy: &str) {
    // 4 wraps of the packet sequence take 262144 packets per side; bursts of 0..=64
    // messages on one tick in 24 give ~1.3 messages per tick, so the message ids
    // wrap at least as often.
    let ticks = 4 * 65536 + 600 + (scale() - 1) * 65536;
    let r = Run {
        name: format!("{policy}: wraps: loss 25% lat 250 ms dup 25%"),
        link: LinkConfig::default()
            .with_latency(Duration::from_millis(250))
            .with_jitter(Duration::from_millis(100))
            .with_loss(0.25)
            .with_duplicates(0.25)
            .with_reordering(0.1, Duration::from_millis(100)),
        seed: 7,
        ticks,
        traffic: Traffic {
            burst_chance: 1.0 / 24.0,
            blob_chance: 0.0005,
            unreliable_per_tick: 1,
        },
        stall: None,
        initial_burst: 0,
        resend_rtt_factor,
    };
    let out = run(&r);
    assert_eq!(out.failures, 0);
    assert!(out.packet_wraps >= 4.0, "{out:?}");
    assert!(out.id_wraps >= 4.0, "{out:?}");
}

#[test]
fn burst_of_400_in_one_tick() {
    for (factor, policy) in POLICIES {
        for (name, link) in [
            ("perfect link", LinkConfig::default()),
            (
                "loss 5% lat 50 ms",
                LinkConfig::default()
                    .with_latency(Duration::from_millis(50))
                    .with_jitter(Duration::from_millis(10))
                    .with_loss(0.05),
            ),
            (
                "loss 25% lat 250 ms",
                LinkConfig::default()
                    .with_latency(Duration::from_millis(250))
                    .with_jitter(Duration::from_millis(100))
                    .with_loss(0.25),
            ),
        ] {
            let name = format!("{policy}: burst: {name}");
            let r = Run {
                name: name.clone(),
                link,
                seed: 400,
                ticks: 1,
                traffic: Traffic {
                    burst_chance: 0.0,
                    blob_chance: 0.0,
                    unreliable_per_tick: 0,
                },
                stall: None,
                initial_burst: 400,
                resend_rtt_factor: factor,
            };
            let out = run(&r);
            assert_eq!(out.failures, 0, "{name}");
            assert_eq!(out.messages, 400, "{name}");
            // Payload budget plus the largest packet header: never a megapacket.
            assert!(out.max_datagram <= PACKET_BITS / 8 + 9, "{name}: {out:?}");
            println!(
                "{name}: 400 messages drained in {:.3} s ({} ticks at 60 Hz, at most 64 per packet)",
                out.last_delivery,
                (out.last_delivery / TICK).round()
            );
        }
    }
}

#[test]
fn receiver_that_stops_draining_back_pressures_the_sender() {
    // Side 1 takes nothing from t = 1 s to t = 11 s while side 0 keeps sending
    // ~6 messages per tick: the receive queue fills, the packets that carry ids
    // beyond it are refused (not acked), side 0's send queue fills and refuses
    // messages (back-pressure); then everything arrives, in order, once.
    for (factor, policy) in POLICIES {
        let r = Run {
            name: format!("{policy}: stalled receiver 10 s"),
            link: LinkConfig::default()
                .with_latency(Duration::from_millis(50))
                .with_jitter(Duration::from_millis(10))
                .with_loss(0.05),
            seed: 10,
            ticks: 20 * 60,
            traffic: Traffic {
                burst_chance: 0.2,
                blob_chance: 0.0,
                unreliable_per_tick: 0,
            },
            stall: Some((60, 660)),
            initial_burst: 0,
            resend_rtt_factor: factor,
        };
        let out = run(&r);
        println!(
            "{policy}: stalled receiver: {} messages, {} send refusals (queue full), {} packets \
             refused for flow control, receive queue peaked at {}, drained {:.1} s after the end, \
             failures {}",
            out.messages,
            out.queue_full,
            out.refused_packets,
            out.max_receive_queue,
            out.drain_seconds,
            out.failures
        );
        assert_eq!(out.failures, 0, "{policy}");
        assert!(
            out.queue_full > 0,
            "{policy}: the sender was never back-pressured"
        );
        assert!(out.refused_packets > 0, "{policy}");
        assert!(out.max_receive_queue <= layer_config().channels[0].receive_queue_size);
    }
}

#[test]
fn rtt_aware_resends_carry_more_at_one_second_latency() {
    // 20 s of ~6.4 reliable messages per tick (~380/s) each way over 1 s latency:
    // with the fixed 0.1 s interval the oldest ids are resent every 6 packets; with
    // `resend_rtt_factor` 1.25 each message goes about once per round trip.
    let mut results = Vec::new();
    for factor in [0.0, 1.25] {
        let r = Run {
            name: format!("1 s latency, resend_rtt_factor {factor}"),
            link: LinkConfig::default()
                .with_latency(Duration::from_secs(1))
                .with_jitter(Duration::from_millis(100))
                .with_loss(0.05),
            seed: 77,
            ticks: 20 * 60,
            traffic: Traffic {
                burst_chance: 0.2,
                blob_chance: 0.0,
                unreliable_per_tick: 0,
            },
            stall: None,
            initial_burst: 0,
            resend_rtt_factor: factor,
        };
        let out = run(&r);
        assert_eq!(out.failures, 0);
        println!(
            "resend_rtt_factor {factor}: {} messages in {:.1} s ({:.0}/s), {:.1} transmissions \
             per message, {} send refusals",
            out.messages,
            out.last_delivery,
            out.messages as f64 / out.last_delivery,
            out.transmissions as f64 / out.messages as f64,
            out.queue_full
        );
        results.push((out.last_delivery, out.transmissions));
    }
    assert!(results[1].0 < results[0].0, "{results:?}");
    assert!(results[1].1 * 2 < results[0].1, "{results:?}");
}
