//! The fuzz targets' bodies: one function per target, each taking arbitrary bytes and
//! panicking when an invariant of DESIGN.md section 7 breaks.
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

use std::collections::VecDeque;

use netproto::channel::{
    BlockConfig, ChannelConfig, LayerConfig, MessageLayer, ReadError, SendError as LayerSendError,
};
use netproto::connection::{
    Client, ClientEvent, ConnectionConfig, Packet, Server, ServerConfig, ServerEvent,
};
use netproto::packet::{
    Endpoint, EndpointConfig, FRAGMENT_HEADER_BYTES, Incoming, PacketHeader, ReceiveError,
    Received, Sequence, parse_fragment,
};
use netproto::sim::Rng;
use netproto::{MessageSet, NetMessage};
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
/// 1 unreliable; small queues and a 2048-bit packet budget.
pub fn layer_config() -> LayerConfig {
    LayerConfig {
        channels: vec![
            ChannelConfig::reliable()
                .with_queues(64, 64)
                .with_max_messages_per_packet(16)
                .with_max_bits_per_packet(1536)
                .with_max_message_bits(96)
                .with_blocks(BlockConfig {
                    max_block_size: 256,
                    fragment_size: 16,
                    max_fragments_per_packet: 4,
                    max_blocks_in_flight: 2,
                }),
            ChannelConfig::unreliable()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536),
        ],
        max_packet_bits: 2048,
        sent_packets_buffer_size: 256,
    }
}

/// The connection of every connection target: the message set's protocol id, an
/// endpoint that fragments payloads above 96 bytes.
pub fn connection_config() -> ConnectionConfig {
    let mut config = ConnectionConfig::new(Msg::FINGERPRINT);
    config.endpoint.max_packet_size = 512;
    config.endpoint.fragment_above = 96;
    config.endpoint.fragment_size = 96;
    config.endpoint.max_fragments = 8;
    config.endpoint.fragment_reassembly_buffer_size = 4;
    config
}

/// The server of the connection targets: 4 slots, a fixed challenge key.
pub fn server_config() -> ServerConfig {
    let mut config = ServerConfig::new(connection_config(), *b"netproto-fuzzing");
    config.max_clients = 4;
    config
}

/// The server's address in the connection targets.
pub const SERVER: u32 = 1000;
/// The connected client's address in the connection targets.
pub const CLIENT: u32 = 7;
/// The connected client's nonce.
pub const NONCE: u64 = 0x5eed_0fc1_1e47;

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
    let mut copy = message.clone();
    let bytes = netproto::encode(&mut copy)
        .unwrap_or_else(|e| panic!("a decoded message does not re-encode: {e}: {message:?}"));
    assert!(
        bytes.len() * 8 <= netproto::measure(&mut copy) + 7,
        "measure below the written size"
    );
    let back = netproto::decode::<Msg>(&bytes)
        .unwrap_or_else(|e| panic!("a re-encoded message does not decode: {e}: {message:?}"));
    assert_eq!(&back, message, "decode(encode(m)) != m");
    let mut again = back;
    assert_eq!(
        netproto::encode(&mut again).ok(),
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
                let channel = usize::from(script.byte().unwrap_or(0) % 2);
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
                let before: Vec<usize> = (0..2).map(|c| layer.receive_queue_len(c)).collect();
                let result = layer.read_packet(payload);
                if result.is_err() {
                    let after: Vec<usize> = (0..2).map(|c| layer.receive_queue_len(c)).collect();
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
    for channel in 0..2 {
        while let Some(message) = layer.receive(channel) {
            check_round_trip(&message);
            trace.push(LayerStep::Delivered(channel, message));
        }
    }
}

// ---------------------------------------------------------------------------------
// Target: the connection's receive path from unknown addresses.
// ---------------------------------------------------------------------------------

/// Ops: the low 2 bits of the op byte pick the sender among 4 unknown addresses, then a
/// blob is the datagram; op `0xFF` advances the clock 1 s and updates. Every reply is
/// no larger than the datagram that caused it (no amplification); a connection packet
/// that decodes re-encodes to one that decodes the same; the counters add up; a
/// session is created only by a valid challenge response; slots stay bounded.
/// Returns the number of datagrams that decoded as connection packets.
pub fn connection_unknown(data: &[u8]) -> usize {
    let mut decoded_count = 0;
    let mut server: Server<u32> = Server::new(server_config(), 0.0).expect("valid server");
    let mut now = 0.0;
    let mut script = Script::new(data);
    let mut handled = 0u64;
    while let Some(op) = script.byte() {
        if op == 0xFF {
            now += 1.0;
            server.update(now);
            while server.poll_transmit().is_some() {}
            while server.poll_event().is_some() {}
            continue;
        }
        let from = u32::from(op & 3);
        let datagram = script.blob();
        let decoded = check_connection_packet(datagram);
        decoded_count += usize::from(decoded.is_some());
        let accepted_before = server.counters().clients_accepted;
        server.handle_datagram_with(now, from, datagram, |_, payload| {
            assert_payload_within_limit(payload);
            true
        });
        handled += 1;
        while let Some(t) = server.poll_transmit() {
            assert_eq!(t.to, from, "a reply went to someone else");
            assert!(
                t.payload.len() <= datagram.len(),
                "a reply of {} bytes to a datagram of {}",
                t.payload.len(),
                datagram.len()
            );
        }
        if server.counters().clients_accepted > accepted_before {
            assert!(
                matches!(decoded, Some(Packet::Response { .. })),
                "a session was created by {decoded:?}"
            );
        }
        while server.poll_event().is_some() {}
        assert!(server.connected_clients() <= server.max_clients());
    }
    let c = server.counters();
    assert_eq!(c.datagrams_received, handled);
    decoded_count
}

fn assert_payload_within_limit(payload: &[u8]) {
    assert!(payload.len() <= connection_config().endpoint.max_packet_size);
}

/// Decodes a connection packet twice (same result) and checks that its encoding
/// decodes to the same packet. Returns the packet.
fn check_connection_packet(datagram: &[u8]) -> Option<Packet<'_>> {
    let first = Packet::decode(datagram);
    assert_eq!(
        first,
        Packet::decode(datagram),
        "Packet::decode is not deterministic"
    );
    let packet = first.ok()?;
    let bytes = packet.to_vec();
    assert_eq!(
        bytes.len(),
        datagram.len(),
        "re-encoding changed the length"
    );
    assert_eq!(Packet::decode(&bytes), Ok(packet), "decode(encode(p)) != p");
    Some(packet)
}

// ---------------------------------------------------------------------------------
// Two full stacks: connection + message layer on each side.
// ---------------------------------------------------------------------------------

/// A server and a client with a message layer each, connected over an in-memory
/// network the script controls. Shared by the connected-receive target and the
/// two-stack target.
#[derive(Debug)]
pub struct Stacks {
    /// The server.
    pub server: Server<u32>,
    /// The server's layer for the client (slot 0).
    pub server_layer: MessageLayer<Msg>,
    /// The client.
    pub client: Client<u32>,
    /// The client's layer.
    pub client_layer: MessageLayer<Msg>,
    /// The virtual time.
    pub now: f64,
    /// Datagrams in flight: (to the server?, bytes).
    pub in_flight: VecDeque<(bool, Vec<u8>)>,
    /// Reliable messages each side sent (as the peer must decode them): client's, server's.
    pub sent_reliable: [Vec<Msg>; 2],
    /// Unreliable messages each side sent (decoded form).
    pub sent_unreliable: [Vec<Msg>; 2],
    /// Reliable messages each side received from the other: the server's (from the
    /// client, index 0 as in `sent_reliable`), the client's.
    pub got_reliable: [Vec<Msg>; 2],
    /// Unreliable messages each side received (indexed like `got_reliable`).
    pub got_unreliable: [Vec<Msg>; 2],
    /// Set when the script injected or altered a datagram: nothing authenticates the
    /// payload, so delivery is then checked for bounds, not content.
    pub tampered: bool,
    /// The session token, once connected.
    pub token: u64,
}

/// Most datagrams the harness keeps in flight (older ones are dropped): bounds the
/// harness, not the library.
const MAX_IN_FLIGHT: usize = 256;

impl Stacks {
    /// Two stacks, connected over a perfect network. Panics if the handshake fails.
    pub fn connected() -> Self {
        let server = Server::new(server_config(), 0.0).expect("valid server");
        let client = Client::new(connection_config(), SERVER, NONCE, 0.0).expect("valid client");
        let mut stacks = Self {
            server,
            server_layer: new_layer(),
            client,
            client_layer: new_layer(),
            now: 0.0,
            in_flight: VecDeque::new(),
            sent_reliable: [Vec::new(), Vec::new()],
            sent_unreliable: [Vec::new(), Vec::new()],
            got_reliable: [Vec::new(), Vec::new()],
            got_unreliable: [Vec::new(), Vec::new()],
            tampered: false,
            token: 0,
        };
        for _ in 0..10 {
            stacks.tick(0.01);
            while !stacks.in_flight.is_empty() {
                stacks.deliver_next();
            }
            if stacks.client.is_connected() && stacks.server.connected_clients() == 1 {
                break;
            }
        }
        assert!(stacks.client.is_connected(), "the handshake failed");
        assert_eq!(
            stacks.server.client_id(&CLIENT),
            Some(netproto::connection::ClientId(0))
        );
        stacks
    }

    /// Both sides: write and send a packet if the rate allows, then update (as the
    /// transport does: a keep-alive only when nothing was sent), apply events, queue
    /// the datagrams.
    pub fn tick(&mut self, dt: f64) {
        self.now += dt;
        let now = self.now;
        let client_id = netproto::connection::ClientId(0);
        let mut payload = Vec::new();
        if self.client.ready_to_send(now)
            && let Some(sequence) = self.client.next_sequence()
        {
            self.client_layer.write_packet(now, sequence, &mut payload);
            let sent = self.client.send(now, &payload);
            assert_eq!(
                sent.ok(),
                Some(sequence),
                "the client refused a layer payload"
            );
        }
        if self.server.ready_to_send(now, client_id)
            && let Some(sequence) = self.server.next_sequence(client_id)
        {
            self.server_layer.write_packet(now, sequence, &mut payload);
            let sent = self.server.send(now, client_id, &payload);
            assert_eq!(
                sent.ok(),
                Some(sequence),
                "the server refused a layer payload"
            );
        }
        self.client.update(now);
        self.server.update(now);
        self.drain_events();
        self.collect_transmits();
        self.take_messages();
    }

    fn collect_transmits(&mut self) {
        while let Some(t) = self.client.poll_transmit() {
            assert_eq!(t.to, SERVER);
            // The session token is in every session packet (kind, token u64, ...).
            if self.token == 0
                && let Some(Packet::KeepAlive { token, .. } | Packet::Payload { token, .. }) =
                    Packet::decode(&t.payload).ok()
            {
                self.token = token;
            }
            self.in_flight.push_back((true, t.payload));
        }
        while let Some(t) = self.server.poll_transmit() {
            self.in_flight.push_back((false, t.payload));
        }
        while self.in_flight.len() > MAX_IN_FLIGHT {
            self.in_flight.pop_front();
        }
    }

    fn drain_events(&mut self) {
        while let Some(event) = self.server.poll_event() {
            match event {
                ServerEvent::PacketAcked { client, sequence } if client.0 == 0 => {
                    self.server_layer.on_packet_acked(sequence);
                }
                ServerEvent::Connected { client, .. } if client.0 == 0 && self.token != 0 => {
                    // A new session in slot 0 (only a tampered script can make one):
                    // fresh layer, as the transport does.
                    assert!(self.tampered, "a reconnection without tampering");
                    self.server_layer = new_layer();
                }
                _ => {}
            }
        }
        while let Some(event) = self.client.poll_event() {
            if let ClientEvent::PacketAcked { sequence } = event {
                self.client_layer.on_packet_acked(sequence);
            }
        }
        // A peer that broke the message protocol is disconnected (as the transport does).
        if self.server_layer.protocol_error().is_some() {
            assert!(self.tampered, "a protocol error without tampering");
            self.server
                .disconnect(self.now, netproto::connection::ClientId(0));
        }
        if self.client_layer.protocol_error().is_some() && self.client.is_connected() {
            assert!(self.tampered, "a protocol error without tampering");
            self.client.disconnect(self.now);
        }
    }

    /// Delivers the oldest datagram in flight.
    pub fn deliver_next(&mut self) {
        if let Some((to_server, bytes)) = self.in_flight.pop_front() {
            self.deliver(to_server, &bytes);
        }
    }

    /// Hands `bytes` to one side, reading accepted payloads into its layer.
    pub fn deliver(&mut self, to_server: bool, bytes: &[u8]) {
        let now = self.now;
        if to_server {
            let layer = &mut self.server_layer;
            self.server
                .handle_datagram_with(now, CLIENT, bytes, |client, payload| {
                    client.0 == 0 && layer.read_packet(payload).is_ok()
                });
        } else {
            let layer = &mut self.client_layer;
            self.client
                .handle_datagram_with(now, SERVER, bytes, |payload| {
                    layer.read_packet(payload).is_ok()
                });
        }
        self.drain_events();
        self.collect_transmits();
        self.check_bounds();
    }

    /// Takes every delivered message on both sides (the application keeps up).
    pub fn take_messages(&mut self) {
        for (side, layer) in [&mut self.server_layer, &mut self.client_layer]
            .into_iter()
            .enumerate()
        {
            while let Some(m) = layer.receive(0) {
                check_round_trip(&m);
                self.got_reliable[side].push(m);
            }
            while let Some(m) = layer.receive(1) {
                check_round_trip(&m);
                self.got_unreliable[side].push(m);
            }
        }
    }

    /// Queues `message` on `channel` of one side (0 = client, 1 = server); records it,
    /// in the form the peer will decode, when the layer takes it.
    pub fn send(&mut self, side: usize, channel: usize, message: Msg) {
        let mut wire = message.clone();
        let Ok(bytes) = netproto::encode(&mut wire) else {
            return;
        };
        let decoded = netproto::decode::<Msg>(&bytes).expect("an encoded message decodes");
        let layer = if side == 0 {
            &mut self.client_layer
        } else {
            &mut self.server_layer
        };
        if layer.send(channel, message).is_ok() {
            if channel == 0 {
                self.sent_reliable[side].push(decoded);
            } else {
                self.sent_unreliable[side].push(decoded);
            }
        }
    }

    /// Memory bounds of both layers.
    pub fn check_bounds(&self) {
        let config = layer_config();
        for layer in [&self.server_layer, &self.client_layer] {
            for (c, channel) in config.channels.iter().enumerate() {
                assert!(layer.receive_queue_len(c) <= channel.receive_queue_size);
                assert!(layer.send_queue_len(c) <= channel.send_queue_size);
            }
        }
        assert!(self.server.connected_clients() <= self.server.max_clients());
    }

    /// Content checks, unless tampered: reliable messages arrive in order, each once
    /// (what arrived is a prefix of what was sent); unreliable ones arrive at most once
    /// each, as sent.
    pub fn check_delivery(&self) {
        if self.tampered {
            return;
        }
        for side in 0..2 {
            let (sent, got) = (&self.sent_reliable[side], &self.got_reliable[side]);
            assert!(got.len() <= sent.len(), "more reliable messages than sent");
            assert_eq!(
                &sent[..got.len()],
                &got[..],
                "reliable delivery out of order or altered"
            );
            let mut pool: Vec<Option<&Msg>> = self.sent_unreliable[side].iter().map(Some).collect();
            for m in &self.got_unreliable[side] {
                let slot = pool.iter_mut().find(|s| s.is_some_and(|s| s == m));
                let slot =
                    slot.unwrap_or_else(|| panic!("unreliable {m:?} was not sent (or twice)"));
                *slot = None;
            }
        }
    }

    /// Runs a perfect network until both send queues are empty (at most 20 s): every
    /// reliable message must then have arrived, if the connection lives and nothing was
    /// tampered with.
    pub fn drain(&mut self) {
        for _ in 0..1200 {
            self.tick(1.0 / 60.0);
            while !self.in_flight.is_empty() {
                self.deliver_next();
            }
            self.take_messages();
            let idle = self.client_layer.send_queue_len(0) == 0
                && self.server_layer.send_queue_len(0) == 0;
            if idle || !self.both_connected() {
                break;
            }
        }
        self.check_delivery();
        if !self.tampered && self.both_connected() {
            for side in 0..2 {
                assert_eq!(
                    self.got_reliable[side].len(),
                    self.sent_reliable[side].len(),
                    "reliable messages lost on a live connection"
                );
            }
        }
    }

    /// Both ends consider the connection open.
    pub fn both_connected(&self) -> bool {
        self.client.is_connected() && self.server.client_id(&CLIENT).is_some()
    }
}

/// The session datagram `kind` (6 keep-alive, 7 payload) with `token` around `inner`.
pub fn session_datagram(kind: u8, token: u64, inner: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(9 + inner.len());
    d.push(kind);
    d.extend_from_slice(&token.to_le_bytes());
    d.extend_from_slice(inner);
    d
}

// ---------------------------------------------------------------------------------
// Target: the connection's receive path from the connected peer.
// ---------------------------------------------------------------------------------

/// Two connected stacks; the script injects datagrams into either side, raw or
/// wrapped in a session packet with the live session token (so that the packet
/// endpoint and the message layer behind the token check are reached):
/// `0`/`1` raw blob to the server / client, `2`/`3` payload packet (kind 7, token,
/// blob) to the server / client, `4`/`5` keep-alive (kind 6) to the server / client,
/// `6` tick (`n` ms) and deliver what is in flight, `7` queue a seeded message on a
/// side and channel. Bounds hold throughout; the run is deterministic. Returns the
/// number of messages delivered.
pub fn connection_connected(data: &[u8]) -> usize {
    let a = run_connected(data);
    let b = run_connected(data);
    assert_eq!(a, b, "the connection is not deterministic");
    a.2.iter().chain(&a.3).map(Vec::len).sum()
}

/// What a connected run observed, for the determinism check.
type ConnectedTrace = (
    netproto::connection::ServerCounters,
    u64,
    [Vec<Msg>; 2],
    [Vec<Msg>; 2],
);

fn run_connected(data: &[u8]) -> ConnectedTrace {
    let mut s = Stacks::connected();
    s.tampered = true;
    let mut script = Script::new(data);
    while let Some(op) = script.byte() {
        match op % 8 {
            0 | 1 => {
                let blob = script.blob();
                check_connection_packet(blob);
                s.deliver(op % 8 == 0, blob);
            }
            2..=5 => {
                let kind = if op % 8 < 4 { 7 } else { 6 };
                let d = session_datagram(kind, s.token, script.blob());
                check_connection_packet(&d);
                s.deliver(op % 2 == 0, &d);
            }
            6 => {
                s.tick(f64::from(script.byte().unwrap_or(0)) / 1000.0);
                while !s.in_flight.is_empty() {
                    s.deliver_next();
                }
            }
            _ => {
                let side = usize::from(script.byte().unwrap_or(0) & 1);
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                s.send(side, channel, seeded_message(script.u16()));
            }
        }
        s.take_messages();
        s.check_bounds();
    }
    (
        *s.server.counters(),
        s.client.dropped(),
        s.got_reliable,
        s.got_unreliable,
    )
}

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
// Target: two full stacks driven by a script.
// ---------------------------------------------------------------------------------

/// Two connected stacks and a script (op byte modulo 10): `0`/`1` the client / the
/// server queues a seeded message (channel byte, `u16` seed); `2` tick (`n + 1` ms);
/// `3` deliver the oldest datagram in flight; `4` drop it; `5` duplicate it; `6` move
/// it to the back (reordering); `7` deliver everything in flight; `8` inject a blob
/// into a side; `9` flip one bit of the oldest datagram in flight. Then a perfect
/// network drains the queues. Unless the script injected or altered a datagram,
/// reliable messages must all arrive, in order, unaltered, and unreliable ones at most
/// once each; bounds hold throughout. Returns the number of messages delivered.
pub fn two_stacks(data: &[u8]) -> usize {
    let mut s = Stacks::connected();
    let mut script = Script::new(data);
    while let Some(op) = script.byte() {
        match op % 10 {
            0 | 1 => {
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                s.send(usize::from(op % 10), channel, seeded_message(script.u16()));
            }
            2 => s.tick((f64::from(script.byte().unwrap_or(0)) + 1.0) / 1000.0),
            3 => s.deliver_next(),
            4 => {
                s.in_flight.pop_front();
            }
            5 => {
                if let Some(front) = s.in_flight.front().cloned() {
                    s.in_flight.push_back(front);
                }
            }
            6 => {
                if let Some(front) = s.in_flight.pop_front() {
                    s.in_flight.push_back(front);
                }
            }
            7 => {
                while !s.in_flight.is_empty() {
                    s.deliver_next();
                }
            }
            8 => {
                let to_server = script.byte().unwrap_or(0) & 1 == 0;
                let blob = script.blob();
                s.tampered = true;
                s.deliver(to_server, blob);
            }
            _ => {
                let at = usize::from(script.u16());
                if let Some((_, bytes)) = s.in_flight.front_mut()
                    && !bytes.is_empty()
                {
                    let bit = at % (bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                    s.tampered = true;
                }
            }
        }
        s.take_messages();
        s.check_bounds();
        s.check_delivery();
    }
    s.drain();
    s.got_reliable
        .iter()
        .chain(&s.got_unreliable)
        .map(Vec::len)
        .sum()
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

/// Valid inputs of every target, generated from `seed`.
pub mod seeds {
    use super::*;

    /// `count` encoded messages of the example workload.
    pub fn message_set(count: usize, seed: u64) -> Vec<Vec<u8>> {
        workload(count, seed)
            .into_iter()
            .filter_map(|mut m| netproto::encode(&mut m).ok())
            .collect()
    }

    /// `count` scripts of the endpoint target: a peer exchanges packets of random
    /// sizes (many fragmented) with the target endpoint, whose own sends are in the
    /// script so that the peer's acks name real packets.
    pub fn packet_endpoint(count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut peer = Endpoint::new(endpoint_config(), 0.0).expect("valid endpoint");
                // A mirror of the target endpoint: it runs the same script, so its
                // datagrams are the target's, and the peer acks them.
                let mut target = Endpoint::new(endpoint_config(), 0.0).expect("valid endpoint");
                let mut script = Vec::new();
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
                    let _ = peer.send(now, &payload, |d| datagrams.push(d.to_vec()));
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
                script
            })
            .collect()
    }

    /// `count` scripts of the layer target: payloads a peer layer wrote for seeded
    /// messages on both channels (blocks included), read in order, with takes.
    pub fn message_layer(count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut peer = new_layer();
                let mut script = Vec::new();
                let mut sequence = Sequence(0);
                for _ in 0..1 + rng.below(4) {
                    for _ in 0..1 + rng.below(6) {
                        let channel = usize::from(rng.below(4) == 0);
                        let _ = peer.send(channel, seeded_message(rng.next_u64() as u16));
                    }
                    let mut payload = Vec::new();
                    peer.write_packet(0.0, sequence, &mut payload);
                    peer.on_packet_acked(sequence);
                    sequence = sequence.next();
                    script.push(0);
                    push_blob(&mut script, &payload);
                    if rng.below(2) == 0 {
                        script.push(1);
                    }
                }
                script
            })
            .collect()
    }

    /// `count` scripts of the unknown-address target: the datagrams of real
    /// handshakes (requests, responses with valid tokens, session packets) and of
    /// other kinds, from several addresses.
    pub fn connection_unknown(count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut script = Vec::new();
                let mut server: Server<u32> = Server::new(server_config(), 0.0).expect("server");
                let from = rng.below(4) as u32;
                let mut client =
                    Client::new(connection_config(), SERVER, rng.next_u64(), 0.0).expect("client");
                for tick in 0..6 {
                    let now = f64::from(tick) * 0.1;
                    client.update(now);
                    server.update(now);
                    while let Some(t) = client.poll_transmit() {
                        script.push(from as u8);
                        push_blob(&mut script, &t.payload);
                        server.handle_datagram(now, from, &t.payload);
                    }
                    while let Some(t) = server.poll_transmit() {
                        client.handle_datagram(now, SERVER, &t.payload);
                        if rng.below(4) == 0 {
                            // A server packet sent back to the server.
                            script.push(from as u8);
                            push_blob(&mut script, &t.payload);
                        }
                    }
                }
                if let Some(id) = server.client_id(&from) {
                    let _ = server.send(0.6, id, b"x");
                    let _ = client.send(0.6, &[0; 200]);
                    while let Some(t) = client.poll_transmit() {
                        script.push(from as u8);
                        push_blob(&mut script, &t.payload);
                    }
                }
                script
            })
            .collect()
    }

    /// `count` scripts of the connected target: a live exchange's session datagrams,
    /// unwrapped (the target wraps them with the live token), for both sides.
    pub fn connection_connected(count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut s = Stacks::connected();
                let mut script = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    for _ in 0..rng.below(4) {
                        let side = rng.below(2) as usize;
                        let channel = rng.below(2) as usize;
                        let msg_seed = rng.next_u64() as u16;
                        s.send(side, channel, seeded_message(msg_seed));
                        script.extend_from_slice(&[7, side as u8, channel as u8]);
                        script.extend_from_slice(&msg_seed.to_le_bytes());
                    }
                    s.tick(0.05);
                    script.extend_from_slice(&[6, 0]);
                    while let Some((to_server, bytes)) = s.in_flight.pop_front() {
                        if let Ok(
                            Packet::KeepAlive { datagram, .. } | Packet::Payload { datagram, .. },
                        ) = Packet::decode(&bytes)
                        {
                            let kind_op = if bytes[0] == 7 { 2 } else { 4 };
                            script.push(kind_op + u8::from(!to_server));
                            push_blob(&mut script, datagram);
                        } else {
                            script.push(u8::from(!to_server));
                            push_blob(&mut script, &bytes);
                        }
                        s.deliver(to_server, &bytes);
                    }
                }
                script
            })
            .collect()
    }

    /// `count` scripts of the two-stack target: seeded sends, ticks and network
    /// faults (drops, duplicates, reordering), without tampering.
    pub fn two_stacks(count: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut script = Vec::new();
                for _ in 0..8 + rng.below(40) {
                    match rng.below(10) {
                        0..=2 => {
                            script.push(rng.below(2) as u8);
                            script.push(rng.below(2) as u8);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        3..=4 => script.extend_from_slice(&[2, rng.below(40) as u8]),
                        5 => script.push(3),
                        6 => script.push(4),
                        7 => script.push(5),
                        8 => script.push(6),
                        _ => script.push(7),
                    }
                }
                script
            })
            .collect()
    }
}
