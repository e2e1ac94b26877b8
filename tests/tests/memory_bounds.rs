//! Memory bounds, measured: a counting global allocator ([`cap::Cap`]) shows that a
//! server's heap stays under the bound its configuration documents
//! ([`Server::memory_bound`], [`LayerConfig::memory_bound`]) per connection and in
//! total while authenticated peers send maximal never-completed fragments,
//! never-completed blocks, ids outside every window and more messages than the
//! queues hold, and that datagrams from unknown addresses leave nothing behind.
//!
//! Every peak is the allocator's true maximum during its phase, inside calls as well
//! as between them (see [`Phase`]).
//!
//! The allocator is process-global, so this binary holds a single test and runs its
//! cases one after the other. The server is the library's sans-IO `ServerStack`, the
//! glue of the connection and its message layers that the UDP transport runs. Every datagram of the
//! attack is generated before the baseline is taken (the attackers' own state is
//! dropped by then), so the live bytes measured are the server's.

use netproto::Time;
use netproto::channel::ChannelId;
use std::alloc::System;
use std::net::SocketAddr;
use std::time::Duration;

use cap::Cap;
use netproto::channel::{BlockConfig, ChannelConfig, LayerConfig, MessageStack};
use netproto::connection::{
    ClientId, ConnectionConfig, MAX_DATAGRAM_BYTES, Server, ServerConfig, ServerEvent,
};
use netproto::internals::netcode::{ChallengeToken, Packet};
use netproto::netcode::{ConnectToken, Key};
use netproto::sim::Rng;
use netproto::transport::ServerStack;
use netproto::{NetMessage, Stream, WriteStream};
use netproto_tests::sealer::{Sealer, request};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

/// A phase of the measurement, with its true peak. `cap`'s `max_allocated` is a true
/// maximum (updated at every allocation, so it sees what a call allocates and frees
/// inside itself) but cannot be reset. So a phase starts by allocating a ballast that
/// lifts the live bytes exactly to the maximum so far: from then on every new maximum
/// is the phase's own, and the maximum less the ballast is the most live bytes at any
/// instant of the phase. (A resettable wrapper allocator would need `unsafe`.)
struct Phase {
    ballast: Vec<u8>,
}

impl Phase {
    fn new() -> Self {
        Self {
            ballast: Vec::new(),
        }
    }

    /// Starts a phase: the old ballast goes, a new one lifts the live bytes to the
    /// maximum so far.
    fn restart(&mut self) {
        self.ballast = Vec::new();
        let gap = ALLOC.max_allocated() - ALLOC.allocated();
        self.ballast = Vec::with_capacity(gap);
        assert_eq!(self.ballast.capacity(), gap);
        assert_eq!(
            ALLOC.allocated(),
            ALLOC.max_allocated(),
            "the ballast lifts the live bytes to the maximum"
        );
    }

    /// Live bytes now, less the ballast.
    fn live(&self) -> usize {
        ALLOC.allocated() - self.ballast.capacity()
    }

    /// The most live bytes (less the ballast) at any instant since the phase started.
    fn peak(&self) -> usize {
        ALLOC.max_allocated() - self.ballast.capacity()
    }
}

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
const PRIVATE_KEY: [u8; 32] = [0x5a; 32];
const CHALLENGE_KEY: [u8; 32] = [0xc4; 32];
const UNIX_TIME: u64 = SIM_UNIX_TIME;
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
    ConnectionConfig::new(netproto::protocol_id::<Msg>(&layer_config()))
}

fn server_address() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 40_000))
}

/// Fixed keys (no key from the operating system: the run replays byte for byte);
/// handshakes in progress at the default limit, 4 x `CLIENTS`.
fn server_config() -> ServerConfig {
    ServerConfig {
        connection: connection_config(),
        private_key: Key::from_bytes(PRIVATE_KEY),
        addresses: vec![server_address()],
        max_clients: CLIENTS,
        challenge_key: Key::from_bytes(CHALLENGE_KEY),
        pending_handshakes: 0,
        // The restart rule: the longest tokens made at the start are the flood's.
        max_token_lifetime: Duration::from_secs(FLOOD_TOKEN_SECONDS),
    }
}

fn random_key(rng: &mut Rng) -> Key {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    Key::from_bytes(bytes)
}

/// A connect token for `client_id`, sealed with `private_key`, for `server`, with
/// nonce and session keys drawn from `rng` (5-second timeout, an hour to live).
fn token(rng: &mut Rng, private_key: &Key, client_id: u64, server: SocketAddr) -> ConnectToken {
    let protocol_id = connection_config().protocol_id;
    SimBackend::with_key(protocol_id, private_key.clone(), rng.next_u64())
        .token_to(client_id, server)
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
fn payload(f: impl FnOnce(&mut WriteStream<'_>) -> Result<(), netproto::StreamError>) -> Vec<u8> {
    let mut buf = vec![0u8; 2048];
    let mut w = WriteStream::new(&mut buf);
    f(&mut w).expect("the hand-written payload fits");
    let len = w.finish();
    buf.truncate(len);
    buf
}

fn bits(w: &mut WriteStream<'_>, value: u64, n: u32) -> Result<(), netproto::StreamError> {
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
            w.serialize_bytes(&vec![fill; len][..])?;
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
fn attacker(from: u32, seed: u64, t0: f64, protocol_error: bool) -> Vec<Datagram> {
    let config = connection_config();
    let e = config.endpoint.clone();
    let protocol_id = config.protocol_id;
    let mut rng = Rng::new(seed);
    let token = token(
        &mut rng,
        &Key::from_bytes(PRIVATE_KEY),
        seed,
        server_address(),
    );
    let mut sealer = Sealer {
        key: token.client_to_server_key.clone(),
        protocol_id,
        sequence: 0,
    };
    let mut out = Vec::new();
    let mut now = t0;
    // The handshake: a valid token, then a response whose challenge token opens with
    // the server's challenge key (the server checks that it opens, not which of its
    // challenges it was: the harness knows the key and seals its own).
    out.push(Datagram {
        now,
        from,
        bytes: request(&token),
    });
    let challenge = ChallengeToken {
        client_id: seed,
        user_data: [0; 256],
    }
    .seal(seed, &Key::from_bytes(CHALLENGE_KEY));
    now += 0.001;
    out.push(Datagram {
        now,
        from,
        bytes: sealer.seal(&Packet::Response {
            token_sequence: seed,
            token_data: &challenge,
        }),
    });
    // The attacker's layer never resends (a setting of the sender only).
    let mut quiet = layer_config();
    for channel in &mut quiet.channels {
        channel.resend_interval = Duration::from_secs(1000000000);
    }
    let mut stack = MessageStack::<Msg>::new(e.clone(), quiet, Time::from_secs_f64(now))
        .expect("valid configuration");
    // A hand-written layer payload under the stack's next sequence.
    let raw = |stack: &mut MessageStack<Msg>,
               sealer: &mut Sealer,
               now: f64,
               layer: &[u8],
               out: &mut Vec<Datagram>| {
        stack
            .endpoint_mut()
            .send(Time::from_secs_f64(now), layer, |d| {
                out.push(Datagram {
                    now,
                    from,
                    bytes: sealer.seal(&Packet::Payload(d)),
                })
            })
            .expect("fits");
    };

    // Blocks that never complete: the last two ids of channel 0's window, each with
    // every fragment of a maximal block but its last. (A third would be one more than
    // max_blocks_in_flight: a protocol error, which closes the connection.)
    for block in [62u16, 63] {
        for chunk in [&[0u32, 1, 2][..], &[3, 4, 5], &[6]] {
            now += 0.001;
            raw(
                &mut stack,
                &mut sealer,
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
                bytes: sealer.seal(&Packet::Payload(&d)),
            });
        }
    }
    for _ in 0..flood {
        stack
            .endpoint_mut()
            .send(Time::from_secs_f64(now), &[], |_| {})
            .expect("empty");
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
            let _ = stack.send(ChannelId::new(2), chat(sent));
            let _ = stack.send(ChannelId::new(1), chat(sent));
            if sent < 62 {
                let _ = stack.send(ChannelId::new(0), chat(sent));
            }
        }
        stack
            .send_packet(Time::from_secs_f64(now), |d| {
                out.push(Datagram {
                    now,
                    from,
                    bytes: sealer.seal(&Packet::Payload(d)),
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
            &mut sealer,
            now,
            &reliable_payload(128 + k, k.into()),
            &mut out,
        );
        raw(
            &mut stack,
            &mut sealer,
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
            .send(Time::from_secs_f64(now), &[], |x| d = x.to_vec())
            .expect("empty");
        let sequence = u16::from_le_bytes([d[1], d[2]]);
        // (Far ahead, with its acks of packets the server never sent, a datagram is an
        // optimistic ack: a protocol error that closes the connection by design.)
        for shift in [40000u16, 65000] {
            let mut moved = d.clone();
            moved[1..3].copy_from_slice(&sequence.wrapping_add(shift).to_le_bytes());
            out.push(Datagram {
                now,
                from,
                bytes: sealer.seal(&Packet::Payload(&moved)),
            });
        }
        let stale = fragment(sequence.wrapping_sub(1000), 1, e.max_fragments, &body);
        out.push(Datagram {
            now,
            from,
            bytes: sealer.seal(&Packet::Payload(&stale)),
        });
    }
    if protocol_error {
        now += 0.001;
        // An id far beyond the window: no conforming sender sends it.
        raw(
            &mut stack,
            &mut sealer,
            now,
            &reliable_payload(20000, 1),
            &mut out,
        );
    }
    out
}

/// Junk from addresses the server does not know: requests with tokens sealed under
/// another key, for another server, expired, for another protocol; sealed packets of
/// every type with random keys; random bytes.
fn unknown_traffic(rng: &mut Rng, count: usize) -> Vec<Datagram> {
    let mut other_key = [0u8; 32];
    rng.fill_bytes(&mut other_key);
    let other_key = Key::from_bytes(other_key);
    let ours = Key::from_bytes(PRIVATE_KEY);
    let elsewhere = SocketAddr::from(([10, 0, 0, 9], 40_000));
    let protocol_id = connection_config().protocol_id;
    (0..count)
        .map(|i| {
            let from = 100_000 + (rng.next_u64() % 50_000) as u32;
            let bytes = match i % 7 {
                0 => request(&token(rng, &other_key, i as u64, server_address())),
                1 => request(&token(rng, &ours, i as u64, elsewhere)),
                2 => {
                    let mut d = request(&token(rng, &ours, i as u64, server_address()));
                    d[22..30].copy_from_slice(&(UNIX_TIME - 1).to_le_bytes()); // expired
                    d
                }
                3 => {
                    let mut d = request(&token(rng, &ours, i as u64, server_address()));
                    d[14] ^= 1; // the protocol id
                    d
                }
                4 | 5 => {
                    let mut sealer = Sealer {
                        key: random_key(rng),
                        protocol_id,
                        sequence: rng.next_u64() % 1000,
                    };
                    let body = [0u8; 300];
                    match rng.next_u64() % 5 {
                        0 => sealer.seal(&Packet::Response {
                            token_sequence: 0,
                            token_data: &body,
                        }),
                        1 => sealer.seal(&Packet::KeepAlive {
                            client_index: 0,
                            max_clients: 4,
                        }),
                        2 => sealer.seal(&Packet::Disconnect),
                        3 => sealer.seal(&Packet::Denied),
                        _ => sealer.seal(&Packet::Payload(&body[..200])),
                    }
                }
                _ => {
                    let len = (rng.next_u64() % 1300) as usize;
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

/// Valid requests from `count` addresses, each with its own token.
/// Valid requests from `count` addresses, each with its own token. The tokens live
/// [`FLOOD_TOKEN_SECONDS`]: the server's token history never evicts a live token, so
/// the attackers that come after the flood get in once these have expired.
fn valid_requests(rng: &mut Rng, count: usize, t0: f64) -> Vec<Datagram> {
    let ours = Key::from_bytes(PRIVATE_KEY);
    let protocol_id = connection_config().protocol_id;
    (0..count)
        .map(|i| {
            let mut backend = SimBackend::with_key(protocol_id, ours.clone(), rng.next_u64());
            backend.expire_seconds = FLOOD_TOKEN_SECONDS;
            let token = backend.token_to(1_000_000 + i as u64, server_address());
            Datagram {
                now: t0 + i as f64 * 1e-4,
                from: 200_000 + i as u32,
                bytes: request(&token),
            }
        })
        .collect()
}

/// How long the valid-request flood's tokens live, seconds: they expire before the
/// attackers' phase (10 s).
const FLOOD_TOKEN_SECONDS: u64 = 9;

/// The server side: the library's sans-IO [`ServerStack`] (the connection server and
/// one message layer per client, as the UDP transport runs it), with a game that never
/// reads what clients send and relays chat and blocks to every client until its
/// queues refuse them.
struct Host {
    stack: ServerStack<u32, Msg>,
    buf: Vec<u8>,
    phase: Phase,
}

impl Host {
    fn new() -> Self {
        let stack = ServerStack::new(server_config(), layer_config(), Time::ZERO, UNIX_TIME)
            .expect("valid");
        Self {
            stack,
            buf: vec![0; MAX_DATAGRAM_BYTES],
            phase: Phase::new(),
        }
    }

    fn server(&self) -> &Server<u32, impl Sized> {
        self.stack.connection()
    }

    fn deliver(&mut self, d: &Datagram) {
        self.stack
            .handle_datagram(Time::from_secs_f64(d.now), d.from, &d.bytes);
        self.drain();
    }

    /// Drops every reply (the attackers never ack) and every event.
    fn drain(&mut self) {
        while let Some(event) = self.stack.poll_event() {
            if std::env::var_os("MEMORY_BOUNDS_EVENTS").is_some() {
                println!("{event:?}");
            }
        }
        while self.stack.poll_transmit(&mut self.buf).is_some() {}
    }

    /// One tick: the game's relay, then the stack's update (one packet per ready
    /// client, connections that broke the message protocol closed, timeouts and
    /// keep-alives).
    fn tick(&mut self, now: f64, relay: usize) {
        for index in 0..CLIENTS {
            if let Some(layer) = self.stack.layer_mut(ClientId(index as u16)) {
                let _ = layer.send(ChannelId::new(0), chat(relay));
                let _ = layer.send(ChannelId::new(0), big(relay));
                let _ = layer.send(ChannelId::new(1), chat(relay));
                let _ = layer.send(ChannelId::new(2), chat(relay));
            }
        }
        self.stack.update(Time::from_secs_f64(now));
        self.drain();
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
/// disconnect copies) or one datagram's (a reply, a payload event). The transmit
/// arena reserves a whole datagram per packet and grows by doubling.
fn queue_allowance() -> usize {
    let e = connection_config().endpoint;
    let per_tick = CLIENTS * (e.max_fragments + 4);
    let per_datagram = 40;
    let entries = per_tick.max(per_datagram).next_power_of_two();
    entries
        * (2 * MAX_DATAGRAM_BYTES
            + size_of::<(u32, usize, usize)>()
            + 2 * size_of::<ServerEvent<u32>>())
}

#[test]
fn server_memory_stays_within_its_documented_bound() {
    let mut rng = Rng::new(0x6d656d);
    // Everything the attack sends, generated before the baseline.
    let unknown = unknown_traffic(&mut rng, 7 * 300);
    let flood_count = 2000;
    let flood = valid_requests(&mut rng, flood_count, 0.5);
    let alone = attacker(1, 11, 10.0, false);
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
    println!(
        "bounds: endpoint {}, connection {}, layer {layer_bound}, per connection \
         {per_connection}, server {server_bound}, total {bound}; server at start {fixed}",
        connection_config().endpoint.memory_bound(),
        connection_config().memory_per_connection(),
    );

    // 1. Unknown addresses: invalid tokens and sealed garbage leave nothing behind,
    // allocate nothing but (for a token that opens) its address list, and get no
    // answer.
    host.phase.restart();
    let base = host.phase.live();
    let mut allocating = 0;
    for d in &unknown {
        let total = ALLOC.total_allocated();
        host.deliver(d);
        assert_eq!(
            host.phase.live(),
            base,
            "a datagram from an unknown address left memory behind: {:?}",
            &d.bytes[..d.bytes.len().min(16)]
        );
        allocating += usize::from(ALLOC.total_allocated() != total);
    }
    let server = host.server();
    assert_eq!(
        (
            server.connected_clients(),
            server.pending_handshakes(),
            server.remembered_tokens()
        ),
        (0, 0, 0)
    );
    let c = *server.server_stats();
    assert_eq!(
        c.challenges_sent + c.denials_sent,
        0,
        "garbage was answered"
    );
    assert!(c.requests_dropped_unauthenticated > 0 && c.requests_dropped_wrong_server > 0);
    assert!(c.requests_dropped_expired > 0 && c.requests_dropped_malformed > 0);
    assert!(c.datagrams_dropped_unknown_address > 0 && c.datagrams_dropped_malformed > 0);
    let unknown_peak = host.phase.peak() - base;
    println!(
        "unknown addresses: {} datagrams, residue {} bytes, peak {unknown_peak} bytes above \
         the idle server ({allocating} allocated transiently: a token that opens)",
        unknown.len(),
        host.phase.live() - base
    );
    assert!(
        unknown_peak <= 32 * 32,
        "an unknown datagram allocated {unknown_peak} bytes at once"
    );

    // 2. Valid requests from many addresses, each with its own token: the handshake
    // tables fill up to their limits, no further.
    host.phase.restart();
    for d in &flood {
        host.deliver(d);
        let server = host.server();
        assert!(server.pending_handshakes() <= 4 * CLIENTS);
        assert!(server.remembered_tokens() <= 8 * 4 * CLIENTS);
    }
    let flood_max = host.phase.peak();
    let server = host.server();
    let c = *server.server_stats();
    println!(
        "valid-request flood: {flood_count} addresses, {} pending handshakes (limit {}), {} \
         tokens (limit {}), {} challenges, {} busy, {} refused as the history is full; live {} \
         bytes, peak {} bytes above the idle server, server bound {server_bound}",
        server.pending_handshakes(),
        4 * CLIENTS,
        server.remembered_tokens(),
        32 * CLIENTS,
        c.challenges_sent,
        c.requests_dropped_busy,
        c.requests_dropped_history_full,
        host.phase.live() - before_server,
        flood_max - base,
    );
    assert_eq!(
        server.pending_handshakes(),
        4 * CLIENTS,
        "the table filled up"
    );
    assert_eq!(
        server.remembered_tokens(),
        32 * CLIENTS,
        "the table filled up"
    );
    assert_eq!(c.challenges_sent, 4 * CLIENTS as u64);
    // Every request got a challenge, or its token went into the history without a
    // handshake (busy), or the history was full: no entry was evicted.
    assert_eq!(
        c.challenges_sent + c.requests_dropped_busy + c.requests_dropped_history_full,
        flood_count as u64
    );
    assert_eq!(
        c.requests_dropped_history_full,
        (flood_count - 32 * CLIENTS) as u64
    );
    let flood_peak = flood_max - before_server;
    assert!(
        flood_peak <= server_bound + queue_allowance(),
        "the flood took the server to {flood_peak} bytes, above its bound of {server_bound}"
    );
    // The handshakes time out (5 s) before the attackers come.
    host.stack.update(Time::from_secs_f64(8.0));
    host.drain();
    assert_eq!(host.server().pending_handshakes(), 0);

    // 3. One authenticated attacker: its connection's memory alone.
    let before_one = host.phase.live();
    host.phase.restart();
    let mut next_tick = 10.0;
    host.run(&alone, &mut next_tick);
    assert_eq!(
        host.server().connected_clients(),
        1,
        "the attacker stays connected"
    );
    let client = ClientId(0);
    let counters = host.stack.layer(ClientId(0)).expect("connected").stats();
    assert!(
        counters.payloads_dropped_receive_queue_full > 0,
        "the receive queues filled up"
    );
    let one_live = host.phase.live() - before_one;
    let one_peak = host.phase.peak() - before_one;
    println!(
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
    assert!(
        host.stack
            .disconnect(Time::from_secs_f64(next_tick), client)
    );
    host.drain();
    let after_disconnect = host.phase.live() as isize - before_one as isize;
    println!("after its disconnection: {after_disconnect} bytes left");
    assert!(
        after_disconnect < (one_live / 100) as isize,
        "a closed connection left {after_disconnect} bytes"
    );

    // 4. Every slot taken by an attacker at once, the last ending with a protocol
    // error (the server closes that connection).
    host.phase.restart();
    next_tick = t0;
    host.run(&together, &mut next_tick);
    let total_live = host.phase.live() - before_server;
    let total_peak = host.phase.peak() - before_server;
    println!(
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
