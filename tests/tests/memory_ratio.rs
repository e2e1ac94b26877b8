//! Memory per attacker byte: how many bytes a server holds for each byte an
//! authenticated attacker puts on the wire, measured with a counting global
//! allocator ([`cap::Cap`]) through the real stack (the sans-IO `ServerStack` that the
//! UDP transport runs), with the default block and packet settings.
//!
//! Reassembly is where a peer can make the server hold memory it has not sent: a
//! fragment announces the size of the whole (a block's size, a packet's fragment
//! count). Each case below sends the cheapest fragments that start the most
//! expensive reassemblies the configuration allows and never completes them:
//!
//! * the first fragment of as many blocks as the receiver reassembles at once, each
//!   declaring the largest block size;
//! * the last fragment, one byte, of the same blocks (the smallest datagram that
//!   starts a maximal block);
//! * fragment 0 of packets of `max_fragments` fragments, for three times as many
//!   sequences as the reassembly table holds;
//! * the last fragment, one byte, of the same packets.
//!
//! "Held" is the server's live heap after the attack less its live heap before it
//! (connected, idle); "sent" is the bytes of the sealed datagrams of the attack. The
//! ratio must stay at most [`MAX_RATIO`]. Run with `--nocapture` for the figures.
//!
//! The allocator is process-global, so this binary holds a single test and runs its
//! cases one after the other, each on a fresh server. Every datagram of a case is made
//! before its baseline is taken.

use std::alloc::System;
use std::net::SocketAddr;

use cap::Cap;
use netproto::channel::{BlockConfig, ChannelConfig, ChannelId, LayerConfig};
use netproto::connection::{ClientId, ConnectionConfig, MAX_DATAGRAM_BYTES, ServerConfig};
use netproto::internals::netcode::{ChallengeToken, Packet};
use netproto::netcode::{ConnectToken, Key};
use netproto::packet::{Endpoint, EndpointConfig};
use netproto::transport::ServerStack;
use netproto::{NetMessage, Stream, Time, WriteStream, bits_for_count};
use netproto_tests::sealer::{Sealer, request};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

/// The goal: bytes held by the server per byte the attacker sent.
const MAX_RATIO: f64 = 8.0;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Small {
    #[net(range = 0..=1000)]
    n: u32,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Big {
    #[net(max_len = 1_000_000)]
    bytes: Vec<u8>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Small(Small),
    Big(Big),
}

const PRIVATE_KEY: [u8; 32] = [0x5a; 32];
const CHALLENGE_KEY: [u8; 32] = [0xc4; 32];
const TICK: f64 = 1.0 / 60.0;

/// Channel 0: the reliable preset with the default blocks (64 KiB in 256-byte
/// fragments, 4 in flight); channel 1: the bulk preset with the 1 KiB packets it had
/// before its 8 KiB ones (1 MiB blocks in 128-byte fragments, 2 in flight); channel
/// 2: the bulk preset as it is (1 MiB blocks in 1024-byte fragments, 8 a packet, 2
/// in flight), whose full fragment needs a packet the endpoint splits in two
/// datagrams.
fn layer_config() -> LayerConfig {
    LayerConfig::with_channels(vec![
        ChannelConfig::reliable().with_blocks(BlockConfig::default()),
        ChannelConfig::bulk()
            .with_blocks(BlockConfig {
                fragment_size: 128,
                ..BlockConfig::bulk()
            })
            .with_max_bits_per_packet(7936),
        ChannelConfig::bulk(),
    ])
}

fn connection_config() -> ConnectionConfig {
    ConnectionConfig::new(netproto::protocol_id::<Msg>(&layer_config()))
}

fn server_address() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 40_000))
}

/// One slot, fixed keys (the run replays byte for byte), the other fields default.
fn server_config() -> ServerConfig {
    ServerConfig {
        max_clients: 1,
        challenge_key: Key::from_bytes(CHALLENGE_KEY),
        ..ServerConfig::new(
            connection_config(),
            Key::from_bytes(PRIVATE_KEY),
            vec![server_address()],
        )
    }
}

/// An authenticated attacker: its handshake datagrams, its sealer and its own packet
/// endpoint (for sequences and packet headers the server accepts).
struct Attacker {
    handshake: Vec<Vec<u8>>,
    /// Conforming traffic before the baseline: see [`Attacker::new`].
    warm_up: Vec<Vec<u8>>,
    sealer: Sealer,
    endpoint: Endpoint,
}

impl Attacker {
    fn new(seed: u64) -> Self {
        let config = connection_config();
        let token: ConnectToken =
            SimBackend::with_key(config.protocol_id, Key::from_bytes(PRIVATE_KEY), seed)
                .token_to(seed, server_address());
        let request = request(&token);
        let mut sealer = Sealer {
            key: token.client_to_server_key.clone(),
            protocol_id: config.protocol_id,
            sequence: 0,
        };
        // The server checks that the challenge token opens with its key, not which of
        // its challenges it was: the harness knows the key and seals its own.
        let challenge = ChallengeToken {
            client_id: seed,
            user_data: [0; 256],
        }
        .seal(seed, &Key::from_bytes(CHALLENGE_KEY));
        let response = sealer.seal(&Packet::Response {
            token_sequence: seed,
            token_data: &challenge,
        });
        let endpoint = Endpoint::new(config.endpoint.clone(), Time::ZERO).expect("valid");
        let mut attacker = Self {
            handshake: vec![request, response],
            warm_up: Vec::new(),
            sealer,
            endpoint,
        };
        // A connection in use: one complete block (id 0) on each block channel, in
        // one packet each (its fragments fit), which the game leaves in the queue.
        for (channel, b) in block_channels() {
            let block = netproto::encode(&Msg::Big(Big {
                bytes: vec![0x42; 500],
            }))
            .expect("encodes");
            let indexes: Vec<usize> = (0..block.len().div_ceil(b.fragment_size)).collect();
            assert!(indexes.len() <= b.max_fragments_per_packet);
            let d = attacker.packet(&block_payload(channel, 0, &block, &indexes));
            attacker.warm_up.push(d);
        }
        attacker
    }

    fn endpoint_config(&self) -> EndpointConfig {
        connection_config().endpoint
    }

    /// A layer payload in one regular packet under the endpoint's next sequence.
    fn packet(&mut self, layer: &[u8]) -> Vec<u8> {
        let mut datagrams = self.datagrams(layer);
        assert_eq!(datagrams.len(), 1, "one regular packet");
        datagrams.remove(0)
    }

    /// A layer payload in one packet under the endpoint's next sequence, in as many
    /// sealed datagrams as the endpoint splits it into.
    fn datagrams(&mut self, layer: &[u8]) -> Vec<Vec<u8>> {
        let mut datagrams = Vec::new();
        self.endpoint
            .send(Time::ZERO, layer, |d| datagrams.push(d.to_vec()))
            .expect("fits");
        datagrams
            .iter()
            .map(|d| self.sealer.seal(&Packet::Payload(d)))
            .collect()
    }

    /// Fragment 0 (with the packet header) of a packet of `max_fragments` fragments
    /// under the endpoint's next sequence.
    fn first_fragment(&mut self) -> Vec<u8> {
        let e = self.endpoint_config();
        let payload = vec![0xab; e.max_payload_size()];
        let mut datagrams = Vec::new();
        self.endpoint
            .send(Time::ZERO, &payload, |d| datagrams.push(d.to_vec()))
            .expect("fits");
        assert_eq!(datagrams.len(), e.max_fragments, "a maximal packet");
        assert_eq!(usize::from(datagrams[0][4]) + 1, e.max_fragments);
        self.sealer.seal(&Packet::Payload(&datagrams[0]))
    }

    /// The last fragment, one byte, of a packet of `max_fragments` fragments under
    /// the endpoint's next sequence (a raw fragment: it carries no header).
    fn last_fragment(&mut self) -> Vec<u8> {
        let e = self.endpoint_config();
        let sequence = self.endpoint.next_sequence().0;
        // Move the endpoint's sequence on, as a packet would.
        self.endpoint
            .send(Time::ZERO, &[], |_| {})
            .expect("an empty packet");
        let count = e.max_fragments;
        let mut d = vec![1];
        d.extend_from_slice(&sequence.to_le_bytes());
        d.push((count - 1) as u8);
        d.push((count - 1) as u8);
        d.push(0xcd);
        self.sealer.seal(&Packet::Payload(&d))
    }
}

/// A layer payload with one fragment group on `channel`: fragments `indexes` of block
/// `id`, whose bytes are `block`, written with the payload format's primitives.
fn block_payload(channel: usize, id: u16, block: &[u8], indexes: &[usize]) -> Vec<u8> {
    let layer = layer_config();
    let c = &layer.channels[channel];
    let b = c.blocks.expect("a channel with blocks");
    let mut buf = vec![0u8; (indexes.len() + 1) * b.fragment_size + 64];
    let mut w = WriteStream::new(&mut buf);
    let written: Result<(), netproto::StreamError> = (|| {
        w.serialize_len(&mut 1, layer.channels.len())?;
        w.serialize_bits(
            &mut (channel as u64),
            bits_for_count(layer.channels.len() as u64),
        )?;
        w.serialize_len(&mut 0, c.max_messages_per_packet)?;
        w.serialize_bool(&mut true)?;
        w.serialize_bits(&mut u64::from(id), 16)?;
        w.serialize_int(&mut (block.len() as u32), 1, b.max_block_size as u32)?;
        w.serialize_int(
            &mut (indexes.len() as u32),
            1,
            b.max_fragments_per_packet as u32,
        )?;
        for &index in indexes {
            w.serialize_int(&mut (index as u32), 0, b.max_fragments() as u32 - 1)?;
            w.serialize_align()?;
            let start = index * b.fragment_size;
            let end = (start + b.fragment_size).min(block.len());
            w.serialize_bytes(&block[start..end])?;
        }
        w.serialize_align()
    })();
    written.expect("the payload fits");
    let len = w.finish();
    buf.truncate(len);
    buf
}

/// The block channels and their settings.
fn block_channels() -> Vec<(usize, BlockConfig)> {
    layer_config()
        .channels
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.blocks.map(|b| (i, b)))
        .collect()
}

/// What an attack case measured.
struct Measured {
    sent: usize,
    held: usize,
    peak: usize,
}

impl Measured {
    fn ratio(&self) -> f64 {
        self.held as f64 / self.sent as f64
    }

    fn peak_ratio(&self) -> f64 {
        self.peak as f64 / self.sent as f64
    }
}

/// Connects `attacker` to a fresh server, then delivers `attack` (made before the
/// baseline), ticking at 60 Hz; `check` looks at the server after it.
fn measure(
    attacker: &Attacker,
    attack: &[Vec<u8>],
    check: impl FnOnce(&ServerStack<u32, Msg>),
) -> Measured {
    let mut stack: ServerStack<u32, Msg> =
        ServerStack::new(server_config(), layer_config(), Time::ZERO, SIM_UNIX_TIME)
            .expect("valid");
    let mut buf = vec![0u8; MAX_DATAGRAM_BYTES];
    let mut now = 1.0;
    let mut drain = |stack: &mut ServerStack<u32, Msg>| {
        while stack.poll_event().is_some() {}
        while stack.poll_transmit(&mut buf).is_some() {}
    };
    for d in &attacker.handshake {
        stack.handle_datagram(Time::from_secs_f64(now), 1, d);
        drain(&mut stack);
        now += 0.001;
    }
    stack.update(Time::from_secs_f64(now));
    drain(&mut stack);
    assert_eq!(stack.connection().connected_clients(), 1, "connected");
    for d in &attacker.warm_up {
        stack.handle_datagram(Time::from_secs_f64(now), 1, d);
        drain(&mut stack);
        now += 0.001;
    }
    let layer = stack.layer(ClientId(0)).expect("connected");
    for (channel, _) in block_channels() {
        assert_eq!(layer.receive_queue_len(ChannelId::new(channel)), 1);
    }

    // The baseline: the connection in use, idle (its scratch buffers have grown to
    // a packet's worth: a fixed cost of any connection, not of the attack); from here
    // the allocator's maximum is this case's own (the ballast lifts the live bytes to
    // the maximum so far).
    let ballast = Vec::<u8>::with_capacity(ALLOC.max_allocated() - ALLOC.allocated());
    let before = ALLOC.allocated() - ballast.capacity();
    let mut next_tick = now + TICK;
    for d in attack {
        now += 0.001;
        while next_tick <= now {
            stack.update(Time::from_secs_f64(next_tick));
            drain(&mut stack);
            next_tick += TICK;
        }
        stack.handle_datagram(Time::from_secs_f64(now), 1, d);
        drain(&mut stack);
    }
    stack.update(Time::from_secs_f64(next_tick));
    drain(&mut stack);
    let held = ALLOC.allocated() - ballast.capacity() - before;
    let peak = ALLOC.max_allocated() - ballast.capacity() - before;
    assert_eq!(
        stack.connection().connected_clients(),
        1,
        "the attacker stays connected"
    );
    check(&stack);
    drop(ballast);
    Measured {
        sent: attack.iter().map(Vec::len).sum(),
        held,
        peak,
    }
}

#[test]
fn bytes_held_per_byte_sent_stay_small() {
    let e = connection_config().endpoint;
    let flood = 3 * e.fragment_reassembly_buffer_size;
    let mut rows = Vec::new();

    // Blocks: as many as the channel reassembles at once, the largest size, each
    // started by its first fragment (a full one), or by its last (one byte).
    for (channel, b) in block_channels() {
        for last in [false, true] {
            let mut attacker = Attacker::new(11);
            let n = b.max_fragments();
            let (size, index) = if last {
                ((n - 1) * b.fragment_size + 1, n - 1)
            } else {
                (b.max_block_size, 0)
            };
            let block = vec![0x77; size];
            let packets = b.max_blocks_in_flight;
            let attack: Vec<Vec<u8>> = (1..=packets as u16)
                .flat_map(|id| attacker.datagrams(&block_payload(channel, id, &block, &[index])))
                .collect();
            drop(block);
            let m = measure(&attacker, &attack, |stack| {
                let layer = stack.layer(ClientId(0)).expect("connected");
                assert_eq!(
                    layer.stats().payloads_read,
                    (attacker.warm_up.len() + packets) as u64,
                    "every fragment was taken"
                );
                let progress = layer
                    .receive_progress(ChannelId::new(channel))
                    .expect("a block in reassembly");
                assert_eq!(progress.total, size);
                assert_eq!(progress.bytes, if last { 1 } else { b.fragment_size });
            });
            let name = format!(
                "channel {channel} ({} KiB blocks, {} B fragments): {} fragment of {} blocks",
                b.max_block_size / 1024,
                b.fragment_size,
                if last { "last (1 byte)" } else { "first" },
                b.max_blocks_in_flight
            );
            rows.push((name, attack.len(), m));
        }
    }

    // Packets: fragments of maximal packets, for three times as many sequences as
    // the reassembly table holds.
    for last in [false, true] {
        let mut attacker = Attacker::new(12);
        let attack: Vec<Vec<u8>> = (0..flood)
            .map(|_| {
                if last {
                    attacker.last_fragment()
                } else {
                    attacker.first_fragment()
                }
            })
            .collect();
        let m = measure(&attacker, &attack, |stack| {
            let counters = stack
                .connection()
                .stats(ClientId(0))
                .map(|l| l.endpoint)
                .expect("connected");
            assert_eq!(counters.fragments_received, flood as u64);
            assert_eq!(counters.fragments_dropped_invalid, 0);
        });
        let name = format!(
            "packets: {} of {flood} packets of {} fragments",
            if last {
                "last fragment (1 byte)"
            } else {
                "fragment 0"
            },
            e.max_fragments
        );
        rows.push((name, attack.len(), m));
    }

    println!(
        "{:<72} {:>9} {:>8} {:>8} {:>9} {:>9}",
        "attack", "datagrams", "sent", "held", "held/sent", "peak/sent"
    );
    for (name, datagrams, m) in &rows {
        println!(
            "{name:<72} {datagrams:>9} {:>8} {:>8} {:>9.2} {:>9.2}",
            m.sent,
            m.held,
            m.ratio(),
            m.peak_ratio()
        );
    }
    for (name, _, m) in &rows {
        assert!(
            m.ratio() <= MAX_RATIO,
            "{name}: the server holds {} bytes for {} sent, {:.1} per byte",
            m.held,
            m.sent,
            m.ratio()
        );
    }
}
