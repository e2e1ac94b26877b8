//! Memory bounds, measured: a counting global allocator ([`cap::Cap`]) shows that a
//! server's heap stays under the bound its configuration documents
//! ([`Server::memory_bound`], [`LayerConfig::memory_bound`]) per connection and in
//! total while authenticated peers send maximal never-completed fragments,
//! never-completed blocks, ids outside every window and more messages than the
//! queues hold, and that datagrams from unknown addresses leave nothing behind.
//!
//! The allocator is process-global, so this binary holds a single test and runs its
//! cases one after the other. The server is the library's sans-IO `ServerStack`, the
//! glue of the connection and its message layers that the UDP transport runs. Every datagram of the
//! attack is generated before the baseline is taken (the attackers' own state is
//! dropped by then), so the live bytes measured are the server's.

use std::alloc::System;

use cap::Cap;
use netproto::channel::{BlockConfig, ChannelConfig, LayerConfig, MessageStack};
use netproto::connection::{
    ClientId, ConnectionConfig, Packet, Server, ServerConfig, ServerEvent, challenge_token,
    time_bucket,
};
use netproto::sim::Rng;
use netproto::transport::ServerStack;
use netproto::{MessageSet, NetMessage, Stream, WriteStream};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Chat {
    #[net(max_len = 64)]
    text: String,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Big {
    #[net(max_len = 1500)]
    text: String,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Chat(Chat),
    Big(Big),
}

/// The most heap one `Msg` owns: its longest string.
const MESSAGE_HEAP: usize = 1500;

const CLIENTS: usize = 4;
const KEY: [u8; 16] = [0x5a; 16];
const TICK: f64 = 1.0 / 60.0;

/// Channel 0: reliable with blocks (a `Big` is a block); 1: unreliable; 2: reliable
/// for chat only.
fn layer_config() -> LayerConfig {
    LayerConfig::with_channels(vec![
        ChannelConfig::reliable()
            .with_queues(64, 64)
            .with_max_message_bits(8 * 80)
            .with_blocks(BlockConfig {
                max_block_size: 1600,
                fragment_size: 200,
                max_fragments_per_packet: 3,
                max_blocks_in_flight: 2,
            }),
        ChannelConfig::unreliable()
            .with_queues(64, 64)
            .with_max_message_bits(8 * 80)
            .with_max_bits_per_packet(2048),
        ChannelConfig::reliable()
            .with_queues(128, 128)
            .with_max_message_bits(8 * 80)
            .with_max_bits_per_packet(2048),
    ])
}

fn connection_config() -> ConnectionConfig {
    ConnectionConfig::new(Msg::FINGERPRINT)
}

fn server_config() -> ServerConfig {
    let mut config = ServerConfig::new(connection_config(), KEY);
    config.max_clients = CLIENTS;
    config
}

fn chat(i: usize) -> Msg {
    Msg::Chat(Chat {
        text: format!("{i:0>64}"),
    })
}

fn big(i: usize) -> Msg {
    Msg::Big(Big {
        text: format!("{i:0>1500}"),
    })
}

/// One scripted datagram: when, from which address, what.
struct Datagram {
    now: f64,
    from: u32,
    bytes: Vec<u8>,
}

/// A session datagram (payload kind) around a packet-endpoint datagram.
fn session(token: u64, datagram: &[u8]) -> Vec<u8> {
    Packet::Payload { token, datagram }.to_vec()
}

/// A raw fragment datagram: prefix 1, sequence, id, count - 1, (header), bytes.
fn fragment(sequence: u16, id: u8, count: usize, body: &[u8]) -> Vec<u8> {
    let mut d = vec![1];
    d.extend_from_slice(&sequence.to_le_bytes());
    d.push(id);
    d.push((count - 1) as u8);
    d.extend_from_slice(body);
    d
}

/// A message-layer payload written by hand with the layout of `layer_config()`:
/// 3 channels (2 bits of entry count, 2 of channel index).
fn payload(f: impl FnOnce(&mut WriteStream<'_>) -> Result<(), netproto::Error>) -> Vec<u8> {
    let mut buf = vec![0u8; 2048];
    let mut w = WriteStream::new(&mut buf);
    f(&mut w).expect("the hand-written payload fits");
    let len = w.finish();
    buf.truncate(len);
    buf
}

fn bits(w: &mut WriteStream<'_>, value: u64, n: u32) -> Result<(), netproto::Error> {
    w.serialize_bits(&mut { value }, n)
}

/// Channel 0's fragment group of block `id`, `size` bytes, with fragments `indexes`
/// (`BlockConfig` above: size in [1, 1600] is 11 bits, count in [1, 3] 2 bits, index in
/// [0, 7] 3 bits).
fn block_payload(id: u16, size: usize, indexes: &[u32], fill: u8) -> Vec<u8> {
    payload(|w| {
        bits(w, 1, 2)?; // one entry
        bits(w, 0, 2)?; // channel 0
        bits(w, 0, 7)?; // no messages (count in [0, 64])
        bits(w, 1, 1)?; // fragments
        bits(w, u64::from(id), 16)?;
        bits(w, size as u64 - 1, 11)?;
        bits(w, indexes.len() as u64 - 1, 2)?;
        for &index in indexes {
            bits(w, u64::from(index), 3)?;
            let start = index as usize * 200;
            let len = (size - start).min(200);
            w.write_bytes(&vec![fill; len])?;
        }
        Ok(())
    })
}

/// Channel 2's entry with one chat message under `id`.
fn reliable_payload(id: u16, message: usize) -> Vec<u8> {
    payload(|w| {
        bits(w, 1, 2)?;
        bits(w, 2, 2)?; // channel 2
        bits(w, 1, 7)?; // one message
        bits(w, 0, 1)?;
        bits(w, u64::from(id), 16)?;
        chat(message).serialize(w)
    })
}

/// The script of one authenticated attacker at address `from`, starting at `t0`.
/// With `protocol_error`, it ends by sending an id no conforming peer could send (the
/// server then closes the connection).
fn attacker(from: u32, nonce: u64, t0: f64, protocol_error: bool) -> Vec<Datagram> {
    let config = connection_config();
    let e = config.endpoint.clone();
    let protocol_id = config.protocol_id;
    let bucket = time_bucket(t0, server_config().challenge_window);
    let token = challenge_token(&KEY, &from, bucket, nonce, protocol_id);
    let mut out = Vec::new();
    let mut now = t0;
    // The handshake: a response with the right token proves the address.
    let response = Packet::Response {
        protocol_id,
        nonce,
        bucket,
        token,
    };
    out.push(Datagram {
        now,
        from,
        bytes: response.to_vec(),
    });
    // The attacker's layer never resends (a setting of the sender only).
    let mut quiet = layer_config();
    for channel in &mut quiet.channels {
        channel.resend_interval = 1e9;
    }
    let mut stack = MessageStack::<Msg>::new(e.clone(), quiet, now).expect("valid configuration");
    // A hand-written layer payload under the stack's next sequence.
    let raw = |stack: &mut MessageStack<Msg>, now: f64, layer: &[u8], out: &mut Vec<Datagram>| {
        stack
            .endpoint_mut()
            .send(now, layer, |d| {
                out.push(Datagram {
                    now,
                    from,
                    bytes: session(token, d),
                })
            })
            .expect("fits");
    };

    // Blocks that never complete: the last two ids of channel 0's window, each with
    // every fragment of a maximal block but its last. A third block is one more than
    // max_blocks_in_flight and is refused.
    for block in [62u16, 63, 61] {
        for chunk in [&[0u32, 1, 2][..], &[3, 4, 5], &[6]] {
            now += 0.001;
            raw(
                &mut stack,
                now,
                &block_payload(block, 1600, chunk, 7),
                &mut out,
            );
        }
    }

    // Maximal fragments that never complete: every fragment but the first (which
    // carries the header) of packets of max_fragments x fragment_size bytes, for
    // three times as many sequences as the reassembly table has slots.
    let first = stack.endpoint().next_sequence().0;
    let flood = 3 * e.fragment_reassembly_buffer_size as u16;
    let body = vec![0xab; e.fragment_size];
    for k in 0..flood {
        now += 0.001;
        for id in 1..e.max_fragments {
            let d = fragment(first + k, id as u8, e.max_fragments, &body);
            out.push(Datagram {
                now,
                from,
                bytes: session(token, &d),
            });
        }
    }
    for _ in 0..flood {
        stack.endpoint_mut().send(now, &[], |_| {}).expect("empty");
    }

    // A conforming stack fills the server's receive queues (the server's game never
    // reads them): channel 2's 128 ids, channel 0's 62 ids below the two blocks, and
    // more unreliable messages than the queue holds. It never hears acks, so it
    // sends each message once and never goes past its send queue: it stays within
    // every window.
    for tick in 0..400 {
        now += TICK;
        for i in 0..8 {
            let sent = tick * 8 + i;
            let _ = stack.send(2, chat(sent));
            let _ = stack.send(1, chat(sent));
            if sent < 62 {
                let _ = stack.send(0, chat(sent));
            }
        }
        stack
            .send_packet(now, |d| {
                out.push(Datagram {
                    now,
                    from,
                    bytes: session(token, d),
                })
            })
            .expect("a layer payload fits the endpoint");
    }

    // Ids past channel 2's full receive queue (refused, not acked: flow control) and
    // in the half of the id space behind it (duplicates).
    for k in 0..100u16 {
        now += 0.001;
        raw(
            &mut stack,
            now,
            &reliable_payload(128 + k, k.into()),
            &mut out,
        );
        raw(
            &mut stack,
            now,
            &reliable_payload(128 + 32768 + k * 200, 1),
            &mut out,
        );
    }
    // Packet sequences far behind and far ahead of the window, a maximal fragment
    // of a stale packet.
    for _ in 0..64 {
        now += 0.001;
        let mut d = Vec::new();
        stack
            .endpoint_mut()
            .send(now, &[], |x| d = x.to_vec())
            .expect("empty");
        let sequence = u16::from_le_bytes([d[1], d[2]]);
        for shift in [30000u16, 40000, 65000] {
            let mut moved = d.clone();
            moved[1..3].copy_from_slice(&sequence.wrapping_add(shift).to_le_bytes());
            out.push(Datagram {
                now,
                from,
                bytes: session(token, &moved),
            });
        }
        let stale = fragment(sequence.wrapping_sub(1000), 1, e.max_fragments, &body);
        out.push(Datagram {
            now,
            from,
            bytes: session(token, &stale),
        });
    }
    if protocol_error {
        now += 0.001;
        // An id far beyond the window: no conforming sender sends it.
        raw(&mut stack, now, &reliable_payload(20000, 1), &mut out);
    }
    out
}

/// Junk from addresses the server does not know.
fn unknown_traffic(rng: &mut Rng, count: usize) -> Vec<Datagram> {
    let protocol_id = connection_config().protocol_id;
    (0..count)
        .map(|i| {
            let from = 100_000 + (rng.next_u64() % 50_000) as u32;
            let token = rng.next_u64();
            let bytes = match i % 7 {
                0 => Packet::Request {
                    protocol_id,
                    nonce: rng.next_u64(),
                }
                .to_vec(),
                1 => Packet::Response {
                    protocol_id,
                    nonce: rng.next_u64(),
                    bucket: 0,
                    token,
                }
                .to_vec(),
                2 => session(token, &[0, 0, 0, 255, 255, 255, 255]),
                3 => Packet::KeepAlive {
                    token,
                    datagram: &[0, 1, 0, 0],
                }
                .to_vec(),
                4 => Packet::Disconnect { token }.to_vec(),
                5 => Packet::Request {
                    protocol_id: protocol_id ^ 1,
                    nonce: 7,
                }
                .to_vec(),
                _ => {
                    let len = (rng.next_u64() % 1200) as usize;
                    (0..len).map(|_| rng.next_u64() as u8).collect()
                }
            };
            Datagram {
                now: i as f64 * 1e-4,
                from,
                bytes,
            }
        })
        .collect()
}

/// The server side: the library's sans-IO [`ServerStack`] (the connection server and
/// one message layer per client, as the UDP transport runs it), with a game that never
/// reads what clients send and relays chat and blocks to every client until its
/// queues refuse them.
struct Host {
    stack: ServerStack<u32, Msg>,
    /// Most live bytes seen since the last reset.
    peak: usize,
}

impl Host {
    fn new() -> Self {
        let stack = ServerStack::new(server_config(), layer_config(), 0.0).expect("valid");
        Self { stack, peak: 0 }
    }

    fn server(&self) -> &Server<u32> {
        self.stack.connection()
    }

    fn sample(&mut self) {
        self.peak = self.peak.max(ALLOC.allocated());
    }

    fn deliver(&mut self, d: &Datagram) {
        self.stack.handle_datagram(d.now, d.from, &d.bytes);
        self.drain();
        self.sample();
    }

    /// Drops every reply (the attackers never ack) and every event.
    fn drain(&mut self) {
        while self.stack.poll_event().is_some() {}
        while self.stack.poll_transmit().is_some() {}
    }

    /// One tick: the game's relay, then the stack's update (one packet per ready
    /// client, connections that broke the message protocol closed, timeouts and
    /// keep-alives).
    fn tick(&mut self, now: f64, relay: usize) {
        for index in 0..CLIENTS {
            if let Some(layer) = self.stack.layer_mut(ClientId(index as u16)) {
                let _ = layer.send(0, chat(relay));
                let _ = layer.send(0, big(relay));
                let _ = layer.send(1, chat(relay));
                let _ = layer.send(2, chat(relay));
            }
        }
        self.stack.update(now);
        self.drain();
        self.sample();
    }

    /// Runs a script, ticking at 60 Hz between its datagrams and once after the last.
    fn run(&mut self, script: &[Datagram], next_tick: &mut f64) {
        for (i, d) in script.iter().enumerate() {
            while *next_tick <= d.now {
                self.tick(*next_tick, i);
                *next_tick += TICK;
            }
            self.deliver(d);
        }
        self.tick(*next_tick, script.len());
        *next_tick += TICK;
    }
}

/// The server's own transmit and event queues keep their largest capacity once
/// drained: at most one tick's worth (a keep-alive or a fragmented payload per client,
/// disconnect copies) or one datagram's (a reply, a payload event, 32 acks).
fn queue_allowance() -> usize {
    let e = connection_config().endpoint;
    let per_tick = CLIENTS * (e.max_fragments + 4);
    let per_datagram = 40;
    let entries = per_tick.max(per_datagram).next_power_of_two();
    entries * (size_of::<netproto::connection::Transmit<u32>>() + size_of::<ServerEvent<u32>>())
}

#[test]
fn server_memory_stays_within_its_documented_bound() {
    let mut rng = Rng::new(0x6d656d);
    // Everything the attack sends, generated before the baseline.
    let unknown = unknown_traffic(&mut rng, 7 * 2000);
    let alone = attacker(1, 11, 2.0, false);
    let t0 = alone.last().map_or(0.0, |d| d.now) + 1.0;
    let mut together: Vec<Datagram> = (1..=CLIENTS as u32)
        .flat_map(|from| attacker(from, 20 + u64::from(from), t0, from == CLIENTS as u32))
        .collect();
    together.sort_by(|a, b| a.now.total_cmp(&b.now));
    let layer = layer_config();
    let layer_bound = layer.memory_bound::<Msg>(MESSAGE_HEAP);
    let per_connection = connection_config().memory_per_connection() + layer_bound;

    let before_server = ALLOC.allocated();
    let mut host = Host::new();
    let server_bound = host.server().memory_bound();
    let bound = server_bound + CLIENTS * layer_bound + queue_allowance();
    let fixed = ALLOC.allocated() - before_server;
    eprintln!(
        "bounds: endpoint {}, connection {}, layer {layer_bound}, per connection \
         {per_connection}, server {server_bound}, total {bound}; server at start {fixed}",
        connection_config().endpoint.memory_bound(),
        connection_config().memory_per_connection(),
    );

    // 1. Unknown addresses. A first request grows the reply queue once; after that,
    // no datagram from an unknown address leaves a byte behind once its reply (if
    // any) is drained, and none but a request allocates at all.
    host.deliver(&unknown[0]);
    let base = ALLOC.allocated();
    let mut answered = 0;
    for d in &unknown {
        let total = ALLOC.total_allocated();
        host.deliver(d);
        assert_eq!(
            ALLOC.allocated(),
            base,
            "a datagram from an unknown address left memory behind: {:?}",
            &d.bytes[..d.bytes.len().min(16)]
        );
        if ALLOC.total_allocated() != total {
            let request = matches!(Packet::decode(&d.bytes), Ok(Packet::Request { .. }));
            assert!(request, "only a request's reply allocates");
            answered += 1;
        }
    }
    assert_eq!(host.server().connected_clients(), 0);
    let c = *host.server().counters();
    assert_eq!(
        answered,
        c.challenges_sent + c.denials_sent - 1,
        "every reply counted"
    );
    assert!(c.dropped_malformed > 0 && c.dropped_unknown_address > 0);
    assert!(c.dropped_challenge_invalid + c.dropped_challenge_expired > 0);
    eprintln!(
        "unknown addresses: {} datagrams, {answered} replies, residue {} bytes",
        unknown.len(),
        ALLOC.allocated() - base
    );

    // 2. One authenticated attacker: its connection's memory alone.
    let before_one = ALLOC.allocated();
    host.peak = 0;
    let mut next_tick = 2.0;
    host.run(&alone, &mut next_tick);
    assert_eq!(
        host.server().connected_clients(),
        1,
        "the attacker stays connected"
    );
    let client = ClientId(0);
    let counters = *host.stack.layer(ClientId(0)).expect("connected").counters();
    assert!(counters.packets_refused > 0, "the receive queues filled up");
    assert!(
        counters.packets_malformed > 0,
        "the third block was refused"
    );
    let one_live = ALLOC.allocated() - before_one;
    let one_peak = host.peak - before_one;
    eprintln!(
        "one connection: live {one_live} bytes, peak {one_peak}, bound {per_connection} \
         ({:.0}% of it)",
        100.0 * one_peak as f64 / per_connection as f64
    );
    assert!(
        one_peak <= per_connection,
        "one connection peaked at {one_peak} bytes, above its bound of {per_connection}"
    );
    // The attack reached most of the bound: the reassembly table filled up.
    let reassembly = {
        let e = connection_config().endpoint;
        e.fragment_reassembly_buffer_size * e.max_fragments * e.fragment_size
    };
    assert!(
        one_live > reassembly,
        "the attack did not fill the reassembly table ({one_live} bytes)"
    );
    // A connection's memory goes with it.
    assert!(host.stack.disconnect(next_tick, client));
    host.drain();
    let after_disconnect = ALLOC.allocated() as isize - before_one as isize;
    eprintln!("after its disconnection: {after_disconnect} bytes left");
    assert!(
        after_disconnect < (one_live / 100) as isize,
        "a closed connection left {after_disconnect} bytes"
    );

    // 3. Every slot taken by an attacker at once, the last ending with a protocol
    // error (the server closes that connection).
    host.peak = 0;
    next_tick = t0;
    host.run(&together, &mut next_tick);
    let total_live = ALLOC.allocated() - before_server;
    let total_peak = host.peak - before_server;
    eprintln!(
        "{CLIENTS} connections: live {total_live} bytes, peak {total_peak}, bound {bound} \
         ({:.0}% of it)",
        100.0 * total_peak as f64 / bound as f64
    );
    assert!(
        total_peak <= bound,
        "the server peaked at {total_peak} bytes, above its bound of {bound}"
    );
    assert!(
        total_peak > CLIENTS * reassembly,
        "every attacker filled its reassembly table"
    );
    assert_eq!(
        host.server().connected_clients(),
        CLIENTS - 1,
        "the peer that broke the protocol was disconnected, the others stay"
    );
}
