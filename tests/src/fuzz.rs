//! The fuzz targets' bodies: one function per target, each taking arbitrary bytes and
//! panicking when an invariant of hostile-input handling breaks (SECURITY.md says what
//! netproto guarantees against hostile input).
//!
//! The cargo-fuzz targets in `fuzz/fuzz_targets/` are one-line calls of these
//! functions; the stable-toolchain smoke (`tests/tests/fuzz_smoke.rs`) calls the same
//! functions with seeded, generated and mutated inputs ([`seeds`], [`mutate`]). So both
//! check the same invariants:
//!
//! * no panic, no out-of-bounds access (overflow checks are on in both builds);
//! * memory bounded by the configuration (queues, reassembly tables);
//! * anything that decodes re-encodes to something that decodes to the same value;
//! * decoding the same bytes twice (or replaying the same script on fresh state) gives
//!   the same result.
//!
//! Multi-datagram targets read their input as a script ([`Script`]): an op byte, then
//! the op's operands (lengths are little-endian `u16`, cut to what is left).

use netproto::NetMessage;
use netproto::channel::{
    BlockConfig, ChannelConfig, LayerConfig, MessageLayer, ReadError, SendError as LayerSendError,
};
use netproto::connection::ConnectionConfig;
use netproto::packet::{
    Endpoint, EndpointConfig, FRAGMENT_HEADER_BYTES, Incoming, PacketHeader, ReceiveError,
    Received, Sequence, parse_fragment,
};
use netproto::sim::Rng;
use netproto_examples::game::{GameMessage, workload};

/// The message set every target carries: the richest of the examples (quantized
/// floats, ranged ints, enums with data, a bounded string and a bounded list).
pub type Msg = GameMessage;

/// A cursor over a fuzz input read as a script of ops and operands. Reading past the
/// end yields `None` (ops) or what is left (byte strings): every input is a script.
#[derive(Debug)]
pub struct Script<'a> {
    data: &'a [u8],
}

impl<'a> Script<'a> {
    /// A script over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte, or `None` at the end.
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(b)
    }

    /// The next little-endian `u16` (missing bytes read as 0).
    pub fn u16(&mut self) -> u16 {
        let lo = self.byte().unwrap_or(0);
        let hi = self.byte().unwrap_or(0);
        u16::from_le_bytes([lo, hi])
    }

    /// The next `n` bytes, or what is left.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// A byte string prefixed by its `u16` length.
    pub fn blob(&mut self) -> &'a [u8] {
        let n = usize::from(self.u16());
        self.bytes(n)
    }
}

/// Appends `bytes` to a script as a blob (its `u16` length, then the bytes).
pub fn push_blob(script: &mut Vec<u8>, bytes: &[u8]) {
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    script.extend_from_slice(&len.to_le_bytes());
    script.extend_from_slice(&bytes[..usize::from(len)]);
}

// ---------------------------------------------------------------------------------
// Configurations: small, so that fragments, blocks, windows and full queues are a few
// bytes of input away.
// ---------------------------------------------------------------------------------

/// The packet endpoint of the endpoint target: 32-byte fragments, at most 8 of them,
/// 4 packets in reassembly at once, a skipped sequence every 8 packets on average.
pub fn endpoint_config() -> EndpointConfig {
    EndpointConfig {
        max_packet_size: 256,
        fragment_above: 32,
        fragment_size: 32,
        max_fragments: 8,
        sent_packets_buffer_size: 64,
        received_packets_buffer_size: 64,
        fragment_reassembly_buffer_size: 4,
        // The skipped-sequence trap armed, with short gaps, so that inputs reach it.
        skip_sequence_seed: Some(0xF022),
        skip_interval: 8,
        ..EndpointConfig::default()
    }
}

/// The message layer of every target: channel 0 reliable with blocks (messages above
/// 96 bits, chat lines and id batches, travel as blocks of 16-byte fragments), channel
/// 1 unreliable, channel 2 reliable-unordered with the same blocks, channel 3
/// sequenced; small queues and a 2048-bit packet budget.
pub fn layer_config() -> LayerConfig {
    let blocks = BlockConfig {
        max_block_size: 256,
        fragment_size: 16,
        max_fragments_per_packet: 4,
        max_blocks_in_flight: 2,
    };
    LayerConfig {
        channels: vec![
            ChannelConfig::reliable()
                .with_queues(64, 64)
                .with_max_messages_per_packet(16)
                .with_max_bits_per_packet(1536)
                .with_max_message_bits(96)
                .with_blocks(blocks),
            ChannelConfig::unreliable()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536),
            ChannelConfig::reliable_unordered()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536)
                .with_max_message_bits(96)
                .with_blocks(blocks),
            ChannelConfig::sequenced()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536),
        ],
        max_packet_bits: 2048,
        sent_packets_buffer_size: 256,
    }
}

/// The connection of every connection target: the protocol id of the message set and
/// [`layer_config`], an endpoint that fragments payloads above 96 bytes.
pub fn connection_config() -> ConnectionConfig {
    let mut config = ConnectionConfig::new(netproto::protocol_id::<Msg>(&layer_config()));
    config.endpoint.max_packet_size = 512;
    config.endpoint.fragment_above = 96;
    config.endpoint.fragment_size = 96;
    config.endpoint.max_fragments = 8;
    config.endpoint.fragment_reassembly_buffer_size = 4;
    config
}

fn new_layer() -> MessageLayer<Msg> {
    MessageLayer::new(layer_config()).expect("the fuzz layer configuration is valid")
}

// ---------------------------------------------------------------------------------
// Target: a derived message set.
// ---------------------------------------------------------------------------------

/// Decodes `data` as a [`GameMessage`] (and as a prefix). Whatever decodes must decode
/// the same way twice, fit `MAX_BITS`, re-encode within its measured size, and the
/// re-encoding must decode to the same value and re-encode to the same bytes. Returns
/// whether `data` decoded.
pub fn message_set(data: &[u8]) -> bool {
    let first = netproto::decode::<Msg>(data);
    let second = netproto::decode::<Msg>(data);
    assert_eq!(first, second, "decoding is not deterministic");
    if let Ok(message) = &first {
        check_round_trip(message);
        assert!(
            data.len() <= Msg::MAX_BITS.div_ceil(8),
            "decoded more than MAX_BITS"
        );
    }
    match netproto::decode_prefix::<Msg>(data) {
        Ok((message, used)) => {
            assert!(used <= data.len());
            check_round_trip(&message);
            // The prefix decodes by itself, exactly.
            assert_eq!(netproto::decode::<Msg>(&data[..used]), Ok(message.clone()));
            if let Ok(whole) = &first {
                assert_eq!(whole, &message, "decode and decode_prefix disagree");
            }
        }
        Err(e) => assert!(
            first.is_err(),
            "decode_prefix failed ({e}) where decode worked"
        ),
    }
    first.is_ok()
}

/// Re-encodes a decoded message: it must encode (every value came in range), within
/// its measure, decode to itself and re-encode to the same bytes.
pub fn check_round_trip(message: &Msg) {
    let bytes = netproto::encode(message)
        .unwrap_or_else(|e| panic!("a decoded message does not re-encode: {e}: {message:?}"));
    assert!(
        bytes.len() * 8 <= netproto::measure(message) + 7,
        "measure below the written size"
    );
    let back = netproto::decode::<Msg>(&bytes)
        .unwrap_or_else(|e| panic!("a re-encoded message does not decode: {e}: {message:?}"));
    assert_eq!(&back, message, "decode(encode(m)) != m");
    assert_eq!(
        netproto::encode(&back).ok(),
        Some(bytes),
        "encoding is not stable"
    );
}

// ---------------------------------------------------------------------------------
// Target: the packet endpoint's receive path.
// ---------------------------------------------------------------------------------

/// One step of a packet-endpoint script, for the determinism check.
#[derive(Debug, PartialEq)]
enum EndpointStep {
    Received(Result<Received, ReceiveError>, Option<(Sequence, Vec<u8>)>),
    Sent(Vec<Vec<u8>>),
}

/// Ops of the endpoint script: receive a datagram (`0 | 3..`: the op is followed by a
/// blob), send a payload of `n` bytes (`1, n`), advance the clock by `n` ms and update
/// (`2, n`). Receiving refuses the payload when its first byte is 0xEE (so refusal is
/// fuzzed too). The script is run twice on fresh endpoints: the traces must match.
/// Returns the number of datagrams the endpoint took (packets and fragments).
pub fn packet_endpoint(data: &[u8]) -> usize {
    let a = run_endpoint(data);
    let b = run_endpoint(data);
    assert_eq!(a, b, "the endpoint is not deterministic");
    a.iter()
        .filter(|s| matches!(s, EndpointStep::Received(Ok(_), _)))
        .count()
}

fn run_endpoint(data: &[u8]) -> Vec<EndpointStep> {
    let config = endpoint_config();
    let max_memory =
        config.fragment_reassembly_buffer_size * config.max_fragments * config.fragment_size;
    let mut endpoint = Endpoint::new(config.clone(), 0.0).expect("valid endpoint configuration");
    let limits = netproto::packet::FragmentLimits {
        max_fragments: config.max_fragments,
        fragment_size: config.fragment_size,
        max_packet_size: config.max_packet_size,
    };
    let mut now = 0.0;
    let mut trace = Vec::new();
    let mut script = Script::new(data);
    while let Some(op) = script.byte() {
        match op {
            1 => {
                let len = usize::from(script.byte().unwrap_or(0));
                let payload = vec![0xA5; len];
                let mut out = Vec::new();
                let sent = endpoint.send(now, &payload, |d| out.push(d.to_vec()));
                assert!(sent.is_ok(), "a payload within max_packet_size was refused");
                trace.push(EndpointStep::Sent(out));
            }
            2 => {
                now += f64::from(script.byte().unwrap_or(0)) / 1000.0;
                endpoint.update(now);
                let stats = endpoint.stats();
                assert!(
                    stats.rtt_ms >= 0.0 && stats.rtt_ms.is_finite(),
                    "bad RTT {stats:?}"
                );
            }
            _ => {
                let datagram = script.blob();
                check_datagram_codecs(datagram, &limits);
                let mut got = None;
                let result = crate::endpoint::receive_with(
                    &mut endpoint,
                    now,
                    datagram,
                    |sequence, payload| {
                        assert!(payload.len() <= limits.max_packet_size, "oversized payload");
                        got = Some((sequence, payload.to_vec()));
                        payload.first() != Some(&0xEE)
                    },
                );
                if let Ok(Received::Packet { sequence, acks }) = &result {
                    assert_eq!(got.as_ref().map(|g| g.0), Some(*sequence));
                    for acked in acks {
                        assert!(
                            acked.is_older_than(endpoint.next_sequence()),
                            "acked {acked} was never sent"
                        );
                        assert_eq!(endpoint.is_acked(acked), Some(true));
                    }
                }
                trace.push(EndpointStep::Received(result, got));
            }
        }
        assert!(endpoint.pending_reassemblies() <= config.fragment_reassembly_buffer_size);
        assert!(
            endpoint.reassembly_memory() <= max_memory,
            "reassembly holds {} bytes, the bound is {max_memory}",
            endpoint.reassembly_memory()
        );
    }
    trace
}

/// Header and fragment codecs of one datagram: a header that decodes re-encodes (in
/// canonical form) to bytes that decode to the same header; a fragment that parses
/// has a header that re-encodes to its first bytes.
fn check_datagram_codecs(datagram: &[u8], limits: &netproto::packet::FragmentLimits) {
    if let Ok((header, len)) = PacketHeader::decode(datagram) {
        assert!(len <= datagram.len());
        let canonical = header.encode();
        assert_eq!(
            PacketHeader::decode(&canonical),
            Ok((header, canonical.len()))
        );
        assert_eq!(
            PacketHeader::decode_canonical(&canonical),
            Ok((header, canonical.len()))
        );
    }
    if let Ok(fragment) = parse_fragment(datagram, limits) {
        assert_eq!(fragment.header.encode(), datagram[..FRAGMENT_HEADER_BYTES]);
        assert!(!fragment.payload.is_empty() && fragment.payload.len() <= limits.fragment_size);
        if let Some(header) = fragment.packet_header {
            assert_eq!(header.sequence, fragment.header.sequence);
        }
    }
}

// ---------------------------------------------------------------------------------
// Target: the message layer's payload decoding.
// ---------------------------------------------------------------------------------

/// Ops of the layer script: read a payload (`0 | 4..`, then a blob), take every
/// delivered message (`1`), ack one of our packets (`2`, then a `u16`), send a message
/// drawn from a seed and write a packet (`3`, channel byte, seed byte). Every delivered
/// message must round-trip ([`check_round_trip`]); queues stay within their sizes; a
/// payload that fails leaves the layer as it was; the script run twice on fresh layers
/// gives the same trace. Returns the number of payloads read successfully.
pub fn message_layer(data: &[u8]) -> usize {
    let a = run_layer(data);
    let b = run_layer(data);
    assert_eq!(a, b, "the message layer is not deterministic");
    a.iter()
        .filter(|s| matches!(s, LayerStep::Read(Ok(()))))
        .count()
}

#[derive(Debug, PartialEq)]
enum LayerStep {
    Read(Result<(), ReadError>),
    Delivered(usize, Msg),
    Send(Result<(), LayerSendError>, Vec<u8>),
}

fn run_layer(data: &[u8]) -> Vec<LayerStep> {
    let config = layer_config();
    let mut layer = new_layer();
    let mut trace = Vec::new();
    let mut script = Script::new(data);
    let mut sequence = Sequence(0);
    while let Some(op) = script.byte() {
        match op {
            1 => take_all(&mut layer, &mut trace),
            2 => layer.on_packet_acked(Sequence(script.u16())),
            3 => {
                let channel = usize::from(script.byte().unwrap_or(0) % 4);
                let message = seeded_message(u16::from(script.byte().unwrap_or(0)));
                let result = layer.send(channel, message);
                let mut payload = Vec::new();
                layer.write_packet(0.0, sequence, &mut payload);
                assert!(
                    payload.len() * 8 <= config.max_packet_bits + 7,
                    "oversized payload"
                );
                sequence = sequence.next();
                trace.push(LayerStep::Send(result, payload));
            }
            _ => {
                let payload = script.blob();
                let before: Vec<usize> = (0..4).map(|c| layer.receive_queue_len(c)).collect();
                let result = layer.read_packet(payload);
                if result.is_err() {
                    let after: Vec<usize> = (0..4).map(|c| layer.receive_queue_len(c)).collect();
                    assert_eq!(before, after, "a refused payload was partly applied");
                }
                trace.push(LayerStep::Read(result));
            }
        }
        for (c, channel) in config.channels.iter().enumerate() {
            assert!(layer.receive_queue_len(c) <= channel.receive_queue_size);
            assert!(layer.send_queue_len(c) <= channel.send_queue_size);
        }
    }
    take_all(&mut layer, &mut trace);
    trace
}

fn take_all(layer: &mut MessageLayer<Msg>, trace: &mut Vec<LayerStep>) {
    for channel in 0..4 {
        while let Some(message) = layer.receive(channel) {
            check_round_trip(&message);
            trace.push(LayerStep::Delivered(channel, message));
        }
    }
}

mod connection;

pub use connection::{
    Backend, CHALLENGE_KEY, CLIENT, Duo, DuoOutcome, PRIVATE_KEY, SERVER, UNIX_TIME,
    UnknownOutcome, connection_connected, connection_connected_outcome, connection_unknown,
    connection_unknown_outcome, server_address, server_config, two_stacks, two_stacks_outcome,
};

/// A message drawn from the example workload with `seed`.
pub fn seeded_message(seed: u16) -> Msg {
    let mut messages = workload(1, u64::from(seed));
    messages
        .pop()
        .unwrap_or(GameMessage::Input(netproto_examples::game::PlayerInput {
            tick: 0,
            buttons: 0,
            aim_yaw: 0.0,
            aim_pitch: 0.0,
            move_x: 0,
            move_y: 0,
        }))
}

// ---------------------------------------------------------------------------------
// Inputs for the smoke test and the seed corpus.
// ---------------------------------------------------------------------------------

/// Mutates `input` with 1 to 4 of: bit flips, random bytes, truncation, extension with
/// random bytes, insertion and deletion of bytes, a splice with `other`, or (rarely) a
/// whole random input.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = out.len() as u64;
        match rng.below(16) {
            0..=4 if len > 0 => {
                let bit = rng.below(len * 8);
                out[(bit / 8) as usize] ^= 1 << (bit % 8);
            }
            5..=6 if len > 0 => {
                let at = rng.below(len) as usize;
                out[at] = rng.next_u64() as u8;
            }
            7..=8 if len > 0 => out.truncate(rng.below(len) as usize),
            9 => {
                let extra = 1 + rng.below(16) as usize;
                let mut bytes = vec![0u8; extra];
                rng.fill_bytes(&mut bytes);
                out.extend_from_slice(&bytes);
            }
            10 => {
                let at = rng.below(len + 1) as usize;
                out.insert(at, rng.next_u64() as u8);
            }
            11 if len > 0 => {
                out.remove(rng.below(len) as usize);
            }
            12..=13 => {
                let cut = rng.below(len + 1) as usize;
                let from = rng.below(other.len() as u64 + 1) as usize;
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            14 if len > 1 => {
                // Swap two bytes (reorders fields).
                let (i, j) = (rng.below(len) as usize, rng.below(len) as usize);
                out.swap(i, j);
            }
            15 if rng.below(8) == 0 => {
                let n = rng.below(64) as usize;
                out = vec![0u8; n];
                rng.fill_bytes(&mut out);
            }
            _ => {
                let at = rng.below(len + 1) as usize;
                out.insert(at, 0);
            }
        }
    }
    out
}

/// A valid input of a target, and what its generator knows the target must make of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seed {
    /// The input.
    pub input: Vec<u8>,
    /// What the target function returns for it (messages decoded, datagrams or
    /// payloads taken, messages delivered), when the generator knows it exactly.
    pub taken: Option<usize>,
    /// Reliable messages the script queues (connection targets): every one of them
    /// must arrive, in order.
    pub reliable: usize,
    /// Whether the script seals datagrams itself (`connection_connected`), which
    /// leaves delivery unchecked for content: every other script is checked in full.
    pub tampered: bool,
}

impl Seed {
    /// A seed the target must take `taken` units of.
    pub fn taking(input: Vec<u8>, taken: usize) -> Self {
        Self {
            input,
            taken: Some(taken),
            ..Self::default()
        }
    }
}

/// Valid inputs of every target, generated from `seed`, each with what the target
/// must make of it.
pub mod seeds {
    use super::*;

    /// `count` encoded messages of the example workload (each decodes: 1).
    pub fn message_set(count: usize, seed: u64) -> Vec<Seed> {
        workload(count, seed)
            .into_iter()
            .map(|m| Seed::taking(netproto::encode(&m).expect("a valid message"), 1))
            .collect()
    }

    /// `count` scripts of the endpoint target: a peer exchanges packets of random
    /// sizes (many fragmented) with the target endpoint, whose own sends are in the
    /// script so that the peer's acks name real packets. The target takes every
    /// datagram of the peer but one per packet whose payload starts with 0xEE (the
    /// target refuses those: the datagram that completes the packet is not taken).
    pub fn packet_endpoint(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut peer = Endpoint::new(endpoint_config(), 0.0).expect("valid endpoint");
                // A mirror of the target endpoint: it runs the same script, so its
                // datagrams are the target's, and the peer acks them.
                let mut target = Endpoint::new(endpoint_config(), 0.0).expect("valid endpoint");
                let mut script = Vec::new();
                let mut taken = 0;
                let mut now = 0.0;
                for _ in 0..1 + rng.below(8) {
                    let len = rng.below(80) as u8;
                    script.extend_from_slice(&[1, len]);
                    let mut ours = Vec::new();
                    let _ = target.send(now, &vec![0xA5; usize::from(len)], |d| {
                        ours.push(d.to_vec())
                    });
                    if rng.below(4) != 0 {
                        for d in &ours {
                            let _ = peer.receive(now, d).map(Incoming::accept);
                        }
                    }
                    // The peer sends a packet of a random size.
                    let size = rng.below(257) as usize;
                    let mut payload = vec![0u8; size];
                    rng.fill_bytes(&mut payload);
                    let mut datagrams = Vec::new();
                    peer.send(now, &payload, |d| datagrams.push(d.to_vec()))
                        .expect("a payload within max_packet_size");
                    taken += datagrams.len() - usize::from(payload.first() == Some(&0xEE));
                    // Fragments in any order.
                    let n = datagrams.len();
                    for i in 0..n {
                        let j = i + rng.below((n - i) as u64) as usize;
                        datagrams.swap(i, j);
                    }
                    for d in &datagrams {
                        script.push(0);
                        push_blob(&mut script, d);
                        let _ = crate::endpoint::receive_with(&mut target, now, d, |_, p| {
                            p.first() != Some(&0xEE)
                        });
                    }
                    now += 0.016;
                    target.update(now);
                    script.extend_from_slice(&[2, 16]);
                }
                Seed::taking(script, taken)
            })
            .collect()
    }

    /// `count` scripts of the layer target: payloads a peer layer wrote for seeded
    /// messages on every channel (blocks included), read in order, with takes. Every
    /// payload is read successfully.
    pub fn message_layer(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut peer = new_layer();
                let mut script = Vec::new();
                let mut payloads = 0;
                let mut sequence = Sequence(0);
                for _ in 0..1 + rng.below(4) {
                    for _ in 0..1 + rng.below(6) {
                        let channel = rng.below(4) as usize;
                        let _ = peer.send(channel, seeded_message(rng.next_u64() as u16));
                    }
                    let mut payload = Vec::new();
                    peer.write_packet(0.0, sequence, &mut payload);
                    peer.on_packet_acked(sequence);
                    sequence = sequence.next();
                    script.push(0);
                    push_blob(&mut script, &payload);
                    payloads += 1;
                    if rng.below(2) == 0 {
                        script.push(1);
                    }
                }
                Seed::taking(script, payloads)
            })
            .collect()
    }

    pub use super::connection::seeds::{connection_connected, connection_unknown, two_stacks};
}
