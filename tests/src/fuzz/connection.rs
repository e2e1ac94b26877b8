//! The connection targets (netcode 1.02): datagrams from unknown addresses into a
//! [`Server`], and two full stacks ([`ServerStack`] and [`ClientStack`]) with a script
//! that injects, forges, alters and replays datagrams between them.
//!
//! Every key, nonce and token is drawn from fixed constants or from the input (a
//! seeded [`Rng`]), never from the operating system: a script replays byte for byte.
//! The harness holds the keys, so it checks the sealing itself: a datagram the
//! receiver drops as unauthenticated (or replayed, malformed, unexpected) must change
//! nothing but one drop counter; a datagram altered in flight, or one delivered
//! before, must be dropped that way.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};

use netproto::connection::{
    ClientEvent, ClientId, DisconnectReason, MAX_DATAGRAM_BYTES, Server, ServerConfig,
    ServerCounters, ServerEvent,
};
use netproto::netcode::{
    AllowedPackets, ChallengeToken, ConnectToken, ConnectTokenPrivate, Key, Packet, PacketType,
    read_packet, write_packet,
};
use netproto::sim::Rng;
use netproto::transport::{ClientStack, ServerStack};

use super::{Msg, Script, Seed, check_round_trip, connection_config, layer_config, push_blob};

/// The server's address (the driver's address type) in the connection targets.
pub const SERVER: u32 = 1000;
/// The connected client's address in the two-stack targets.
pub const CLIENT: u32 = 7;
/// The private key the fuzz backend and server share (connection_unknown: the
/// requests in its inputs carry tokens sealed with it).
pub const PRIVATE_KEY: [u8; 32] = *b"netproto-fuzzing-private-key-256";
/// The fuzz server's challenge key (fixed, so that the unknown-address target's
/// seeds can answer the challenges the server will send).
pub const CHALLENGE_KEY: [u8; 32] = *b"netproto-fuzzing-challenge-key!!";
/// The Unix time every fuzz server starts at (tokens are made at it, live an hour).
pub const UNIX_TIME: u64 = crate::sim_stack::SIM_UNIX_TIME;
/// Handshakes in progress the fuzz server keeps (16 tokens): small, so that full
/// tables are a few datagrams away.
const PENDING: usize = 2;

/// The fuzz server's address as connect tokens name it.
pub fn server_address() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000))
}

/// The server of the connection targets: 4 slots, 2 handshakes in progress, the given
/// keys (no key from the operating system).
pub fn server_config(private_key: Key, challenge_key: Key) -> ServerConfig {
    ServerConfig {
        connection: connection_config(),
        private_key,
        addresses: vec![server_address()],
        max_clients: 4,
        challenge_key,
        pending_handshakes: PENDING,
    }
}

fn random_key(rng: &mut Rng) -> Key {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    Key::from_bytes(bytes)
}

/// A deterministic backend: nonces and session keys from a seeded generator
/// ([`SimBackend`](crate::sim_stack::SimBackend), with tokens for [`server_address`]).
#[derive(Debug)]
pub struct Backend(crate::sim_stack::SimBackend);

impl Backend {
    /// A backend with `private_key`, drawing nonces and session keys from `seed`.
    pub fn new(private_key: Key, seed: u64) -> Self {
        Self(crate::sim_stack::SimBackend::with_key(
            connection_config().protocol_id,
            private_key,
            seed,
        ))
    }

    /// The key tokens are sealed with.
    pub fn private_key(&self) -> &Key {
        &self.0.private_key
    }

    /// A token for `client_id` to [`server_address`] (5-second timeout, an hour to
    /// live from [`UNIX_TIME`]).
    pub fn token(&mut self, client_id: u64) -> ConnectToken {
        self.0.token_to(client_id, server_address())
    }
}

/// The sum of the counters of datagrams that changed nothing (every one lands in
/// exactly one of them). Not included: `dropped_by_endpoint` (authenticated: the link
/// heard the peer) and `requests_busy` (the token may have been remembered).
fn drops(c: &ServerCounters) -> u64 {
    c.dropped_malformed
        + c.dropped_unexpected
        + c.dropped_unknown_address
        + c.dropped_unauthenticated
        + c.dropped_replayed
        + c.requests_malformed
        + c.requests_expired
        + c.requests_unauthenticated
        + c.requests_wrong_server
        + c.requests_token_reused
        + c.requests_already_connected
        + c.requests_bad_timeout
        + c.responses_invalid
}

/// The counters with the drop counters and `datagrams_received` zeroed.
fn without_drops(mut c: ServerCounters) -> ServerCounters {
    c.datagrams_received = 0;
    c.dropped_malformed = 0;
    c.dropped_unexpected = 0;
    c.dropped_unknown_address = 0;
    c.dropped_unauthenticated = 0;
    c.dropped_replayed = 0;
    c.requests_malformed = 0;
    c.requests_expired = 0;
    c.requests_unauthenticated = 0;
    c.requests_wrong_server = 0;
    c.requests_token_reused = 0;
    c.requests_already_connected = 0;
    c.requests_bad_timeout = 0;
    c.responses_invalid = 0;
    c
}

/// What a server holds, beside its counters.
fn server_state<A: Copy + Eq + std::hash::Hash + std::fmt::Debug>(s: &Server<A>) -> Vec<u64> {
    let mut state = vec![
        s.connected_clients() as u64,
        s.pending_handshakes() as u64,
        s.remembered_tokens() as u64,
        s.pending_transmits() as u64,
    ];
    for (id, _) in s.clients() {
        if let Some(c) = s.endpoint_counters(id) {
            state.extend([
                u64::from(id.0),
                c.packets_received,
                c.fragments_received,
                c.packets_sent,
            ]);
        }
    }
    state
}

/// The sequence in a sealed datagram's header.
fn sealed_sequence(datagram: &[u8]) -> Option<u64> {
    let (&prefix, rest) = datagram.split_first()?;
    let n = usize::from(prefix >> 4);
    if prefix & 0x0f == 0 || !(1..=8).contains(&n) || rest.len() < n {
        return None;
    }
    let mut le = [0u8; 8];
    le[..n].copy_from_slice(&rest[..n]);
    Some(u64::from_le_bytes(le))
}

/// A small running digest (FNV-1a) of a trace.
fn digest(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash = (*hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
}

// ---------------------------------------------------------------------------------
// Target: the connection's receive path from unknown addresses.
// ---------------------------------------------------------------------------------

/// What [`connection_unknown_outcome`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnknownOutcome {
    /// Challenges the server sent (each checked: a request whose token opens).
    pub challenges: u64,
    /// Sessions created (each checked: a response to our challenge, sealed with the
    /// token's key, carrying a challenge token that opens).
    pub sessions: u64,
    /// Payloads delivered to the layer above (only from connected addresses).
    pub payloads: u64,
    /// Digest of every reply and the final counters (the determinism check).
    pub trace: u64,
}

/// [`connection_unknown_outcome`]: challenges + sessions + payloads.
pub fn connection_unknown(data: &[u8]) -> usize {
    let o = connection_unknown_outcome(data);
    (o.challenges + o.sessions + o.payloads) as usize
}

/// Ops: the low 2 bits of the op byte pick the sender among 4 addresses, then a blob
/// is the datagram; op `0xFF` advances the clock 1 s and updates. The server has the
/// fixed [`PRIVATE_KEY`] and [`CHALLENGE_KEY`], so the requests and responses of the
/// seeds are valid. Checks, per datagram: replies go to the sender and are no larger
/// than the datagram (no amplification); a datagram the server drops changes nothing
/// but one drop counter (no table entry, no reply, no event); a challenge answers only
/// a request whose token opens with the private key and names this server; a session
/// is created only by a response, sealed with that token's client key, whose
/// challenge token opens; payloads come only from connected addresses; the tables
/// stay within their limits and are empty while no token opened; the script run
/// twice gives the same trace.
pub fn connection_unknown_outcome(data: &[u8]) -> UnknownOutcome {
    let a = run_unknown(data);
    let b = run_unknown(data);
    assert_eq!(a, b, "the server is not deterministic");
    a
}

/// What the harness learned of a challenge it saw the server send.
struct Challenged {
    c2s: Key,
    client_id: u64,
}

fn run_unknown(data: &[u8]) -> UnknownOutcome {
    let private_key = Key::from_bytes(PRIVATE_KEY);
    let config = server_config(private_key.clone(), Key::from_bytes(CHALLENGE_KEY));
    let protocol_id = config.connection.protocol_id;
    let max_packet = config.connection.endpoint.max_packet_size;
    let mut server: Server<u32> = Server::new(config, 0.0, UNIX_TIME).expect("valid server");
    let mut out = UnknownOutcome {
        trace: 0xcbf2_9ce4_8422_2325,
        ..UnknownOutcome::default()
    };
    let mut challenged: HashMap<u32, Challenged> = HashMap::new();
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut now = 0.0;
    let mut handled = 0u64;
    let mut script = Script::new(data);
    while let Some(op) = script.byte() {
        if op == 0xFF {
            now += 1.0;
            server.update(now);
            while let Some((_, len)) = server.poll_transmit(&mut buf) {
                digest(&mut out.trace, &buf[..len]);
            }
            while server.poll_event().is_some() {}
            continue;
        }
        let from = u32::from(op & 3);
        let datagram = script.blob();
        let before = *server.counters();
        let state = server_state(&server);
        let was_connected = server.client_id(&from).is_some();
        if let Some(delivery) = server.handle_datagram(now, from, datagram) {
            assert!(was_connected, "a payload from an unconnected address");
            assert!(delivery.payload().len() <= max_packet, "oversized payload");
            let _ = delivery.accept();
            out.payloads += 1;
        }
        handled += 1;
        let after = *server.counters();
        let mut replies = Vec::new();
        while let Some((to, len)) = server.poll_transmit(&mut buf) {
            assert_eq!(to, from, "a reply went to someone else");
            assert!(
                len <= datagram.len(),
                "a reply of {len} bytes to a datagram of {}",
                datagram.len()
            );
            digest(&mut out.trace, &buf[..len]);
            replies.push(buf[..len].to_vec());
        }
        let mut events = Vec::new();
        while let Some(event) = server.poll_event() {
            events.push(event);
        }
        assert_eq!(after.datagrams_received, before.datagrams_received + 1);
        let dropped = drops(&after) - drops(&before);
        assert!(dropped <= 1, "one datagram counted {dropped} times");
        if dropped == 1 {
            assert_eq!(
                without_drops(after),
                without_drops(before),
                "a dropped datagram changed a counter"
            );
            assert_eq!(
                server_state(&server),
                state,
                "a dropped datagram changed the server"
            );
            assert!(
                replies.is_empty() && events.is_empty(),
                "a dropped datagram was answered"
            );
        }
        if after.challenges_sent > before.challenges_sent {
            assert_eq!(after.challenges_sent, before.challenges_sent + 1);
            let (client_id, c2s, s2c) = open_request(datagram, protocol_id, &private_key)
                .unwrap_or_else(|| {
                    panic!(
                        "a challenge answered {:?}",
                        &datagram[..8.min(datagram.len())]
                    )
                });
            assert_eq!(replies.len(), 1, "one challenge per request");
            let mut reply = replies[0].clone();
            let opened = read_packet(
                &mut reply,
                protocol_id,
                0,
                Some(&s2c),
                AllowedPackets::NONE.with(PacketType::Challenge),
                None,
            );
            assert!(
                opened.is_ok(),
                "the challenge is not sealed with the token's key"
            );
            challenged.insert(from, Challenged { c2s, client_id });
            out.challenges += 1;
        }
        if after.clients_accepted > before.clients_accepted {
            assert_eq!(after.clients_accepted, before.clients_accepted + 1);
            let pending = challenged
                .get(&from)
                .expect("a session for an address that was never challenged");
            let mut copy = datagram.to_vec();
            let opened = read_packet(
                &mut copy,
                protocol_id,
                0,
                Some(&pending.c2s),
                AllowedPackets::NONE.with(PacketType::Response),
                None,
            );
            let Ok((
                _,
                Packet::Response {
                    token_sequence,
                    token_data,
                },
            )) = opened
            else {
                panic!("a session was created by {opened:?}");
            };
            let challenge =
                ChallengeToken::open(token_data, token_sequence, &Key::from_bytes(CHALLENGE_KEY))
                    .expect("a session was created by a challenge token that does not open");
            assert_eq!(challenge.client_id, pending.client_id);
            assert!(
                matches!(
                    events.as_slice(),
                    [ServerEvent::Connected { address, user_id, .. }]
                        if *address == from && *user_id == challenge.client_id
                ),
                "{events:?}"
            );
            out.sessions += 1;
        }
        let c = server.counters();
        assert!(server.connected_clients() <= server.max_clients());
        assert!(server.pending_handshakes() <= PENDING);
        assert!(server.remembered_tokens() <= 8 * PENDING);
        assert!(server.pending_handshakes() as u64 <= c.challenges_sent);
        assert!(server.connected_clients() as u64 <= c.clients_accepted);
        if c.challenges_sent + c.denials_sent + c.requests_busy == 0 {
            assert_eq!(
                (server.remembered_tokens(), server.pending_handshakes()),
                (0, 0),
                "state for requests whose token never opened"
            );
        }
    }
    let c = server.counters();
    assert_eq!(c.datagrams_received, handled);
    digest(&mut out.trace, format!("{c:?}").as_bytes());
    out
}

/// The client id and keys of a connection request whose token opens with
/// `private_key` and names this server.
fn open_request(datagram: &[u8], protocol_id: u64, private_key: &Key) -> Option<(u64, Key, Key)> {
    let mut copy = datagram.to_vec();
    let (_, packet) = read_packet(
        &mut copy,
        protocol_id,
        0,
        None,
        AllowedPackets::NONE.with(PacketType::Request),
        None,
    )
    .ok()?;
    let Packet::Request {
        expire_timestamp,
        nonce,
        private_data,
        ..
    } = packet
    else {
        return None;
    };
    // The request is in the clear: it re-encodes to the same bytes.
    let mut again = [0u8; MAX_DATAGRAM_BYTES];
    let key = Key::from_bytes([0; 32]);
    let len = write_packet(&packet, 0, &key, protocol_id, &mut again).ok()?;
    assert_eq!(&again[..len], datagram, "a request does not re-encode");
    let token = ConnectTokenPrivate::open(
        private_data,
        protocol_id,
        expire_timestamp,
        &nonce,
        private_key,
    )
    .ok()?;
    token
        .server_addresses
        .contains(&server_address())
        .then_some((
            token.client_id,
            token.client_to_server_key,
            token.server_to_client_key,
        ))
}

// ---------------------------------------------------------------------------------
// Two full stacks.
// ---------------------------------------------------------------------------------

/// Where a datagram in flight came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Sent by a stack, unaltered (a repeat of a sequence already delivered is a
    /// replay and must be dropped).
    Genuine,
    /// Sent by a stack, then altered: must be dropped.
    Altered,
    /// Injected raw by the script: it must not authenticate (if it does, the script
    /// forged it from the seed's keys: tampered).
    Raw,
    /// Sealed by the harness with the session key: tampered when it is taken.
    Forged,
}

/// A datagram in flight.
#[derive(Clone, Debug)]
struct InFlight {
    to_server: bool,
    bytes: Vec<u8>,
    origin: Origin,
    /// The bytes as sealed, once altered: a second alteration may restore them (the
    /// datagram is then genuine again).
    genuine: Option<Vec<u8>>,
}

/// Most datagrams the harness keeps in flight (older ones are dropped): bounds the
/// harness, not the library.
const MAX_IN_FLIGHT: usize = 256;
/// Delivered datagrams kept for replays.
const CAPTURED: usize = 32;

/// What a run of two stacks ([`connection_connected_outcome`],
/// [`two_stacks_outcome`]) counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuoOutcome {
    /// Digest of the run (the determinism check).
    pub trace: u64,
    /// Messages delivered on both sides, reliable and unreliable.
    pub delivered: usize,
    /// Reliable messages delivered on both sides.
    pub reliable_delivered: usize,
    /// Reliable messages both sides' layers took (what must arrive).
    pub reliable_sent: usize,
    /// Whether a datagram the stacks did not send authenticated (the script sealed it
    /// with the session keys): delivery was then checked for bounds, not content.
    pub tampered: bool,
    /// Datagrams dropped without effect, to the server and to the client.
    pub dropped: [u64; 2],
}

/// A [`ServerStack`] and a [`ClientStack`] (the library's own glue of connection and
/// message layer, as the UDP transport runs it), connected over an in-memory network
/// the script controls. Shared by the connected target and the two-stack target.
#[derive(Debug)]
pub struct Duo {
    /// The server.
    pub server: ServerStack<u32, Msg>,
    /// The client.
    pub client: ClientStack<u32, Msg>,
    /// The virtual time.
    pub now: f64,
    in_flight: VecDeque<InFlight>,
    /// Delivered genuine datagrams (to the server?, bytes), for replays.
    captured: VecDeque<(bool, Vec<u8>)>,
    /// Sealed sequences delivered, to the server and to the client.
    delivered: [HashSet<u64>; 2],
    /// The highest sequence each direction's sender used (to the server, the client).
    max_sequence: [u64; 2],
    /// The session keys: client to server, server to client.
    keys: [Key; 2],
    protocol_id: u64,
    /// Reliable messages each side sent (as the peer must decode them): client's, server's.
    pub sent_reliable: [Vec<Msg>; 2],
    /// Unreliable messages each side sent (decoded form).
    pub sent_unreliable: [Vec<Msg>; 2],
    /// Reliable messages each side received from the other: the server's (from the
    /// client, index 0 as in `sent_reliable`), the client's.
    pub got_reliable: [Vec<Msg>; 2],
    /// Unreliable messages each side received (indexed like `got_reliable`).
    pub got_unreliable: [Vec<Msg>; 2],
    /// Set when a datagram the stacks did not send authenticated (the harness sealed
    /// it with the session key): delivery is then checked for bounds, not content.
    pub tampered: bool,
    /// Datagrams dropped without effect (checked), per direction.
    pub dropped: [u64; 2],
    /// Digest of the run (the determinism check).
    pub trace: u64,
    /// Connections closed for a protocol error (only tampering may cause one).
    pub protocol_errors: u64,
}

impl Duo {
    /// Two stacks with keys and the token drawn from `seed`, connected over a perfect
    /// network. Panics if the handshake fails.
    pub fn connected(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5eed_0fc1_1e47);
        let private_key = random_key(&mut rng);
        let challenge_key = random_key(&mut rng);
        let mut backend = Backend::new(private_key.clone(), rng.next_u64());
        let token = backend.token(rng.next_u64());
        let config = server_config(private_key, challenge_key);
        let server =
            ServerStack::new(config, layer_config(), 0.0, UNIX_TIME).expect("valid server stack");
        let client = ClientStack::new(connection_config(), &token, SERVER, layer_config(), 0.0)
            .expect("valid client stack");
        let mut duo = Self {
            server,
            client,
            now: 0.0,
            in_flight: VecDeque::new(),
            captured: VecDeque::new(),
            delivered: [HashSet::new(), HashSet::new()],
            max_sequence: [0; 2],
            keys: [
                token.client_to_server_key.clone(),
                token.server_to_client_key.clone(),
            ],
            protocol_id: token.protocol_id,
            sent_reliable: [Vec::new(), Vec::new()],
            sent_unreliable: [Vec::new(), Vec::new()],
            got_reliable: [Vec::new(), Vec::new()],
            got_unreliable: [Vec::new(), Vec::new()],
            tampered: false,
            dropped: [0; 2],
            trace: 0xcbf2_9ce4_8422_2325,
            protocol_errors: 0,
        };
        for _ in 0..10 {
            duo.tick(0.01);
            duo.deliver_all();
            if duo.both_connected() {
                break;
            }
        }
        assert!(duo.both_connected(), "the handshake failed");
        assert_eq!(duo.server.clients().next(), Some((ClientId(0), CLIENT)));
        duo.captured.clear();
        duo
    }

    /// Both ends consider the connection open.
    pub fn both_connected(&self) -> bool {
        self.client.connection().is_connected()
            && self.server.connection().client_id(&CLIENT).is_some()
    }

    /// Both sides' ticks (payloads, then updates), then the transmits queued and the
    /// messages taken.
    pub fn tick(&mut self, dt: f64) {
        self.now += dt;
        self.client.update(self.now);
        self.server.update(self.now);
        self.collect();
        self.take_messages();
    }

    /// Queues what both stacks transmit; applies their events.
    fn collect(&mut self) -> usize {
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        let mut count = 0;
        while let Some((to, len)) = self.client.poll_transmit(&mut buf) {
            assert_eq!(to, SERVER);
            self.queue(true, &buf[..len]);
            count += 1;
        }
        while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
            assert_eq!(to, CLIENT);
            self.queue(false, &buf[..len]);
            count += 1;
        }
        while self.in_flight.len() > MAX_IN_FLIGHT {
            self.in_flight.pop_front();
        }
        count + self.events()
    }

    fn queue(&mut self, to_server: bool, bytes: &[u8]) {
        assert!(bytes.len() <= MAX_DATAGRAM_BYTES);
        digest(&mut self.trace, bytes);
        if let Some(s) = sealed_sequence(bytes)
            && s < 1 << 63
        {
            let m = &mut self.max_sequence[usize::from(!to_server)];
            *m = (*m).max(s);
        }
        self.in_flight.push_back(InFlight {
            to_server,
            bytes: bytes.to_vec(),
            origin: Origin::Genuine,
            genuine: None,
        });
    }

    /// Drains both stacks' events; returns how many there were.
    fn events(&mut self) -> usize {
        let mut count = 0;
        while let Some(event) = self.server.poll_event() {
            count += 1;
            digest(&mut self.trace, format!("{event:?}").as_bytes());
            match event {
                ServerEvent::Connected { .. } => {
                    assert!(
                        self.server.connection().counters().clients_accepted == 1,
                        "a second session: {event:?}"
                    );
                }
                ServerEvent::Disconnected { reason, .. } => {
                    self.protocol_errors += u64::from(reason == DisconnectReason::ProtocolError);
                }
                _ => {}
            }
        }
        while let Some(event) = self.client.poll_event() {
            count += 1;
            digest(&mut self.trace, format!("{event:?}").as_bytes());
            if let ClientEvent::Disconnected {
                reason: DisconnectReason::ProtocolError,
            } = event
            {
                self.protocol_errors += 1;
            }
        }
        count
    }

    /// Delivers the oldest datagram in flight.
    pub fn deliver_next(&mut self) {
        if let Some(d) = self.in_flight.pop_front() {
            self.deliver(d);
        }
    }

    /// Delivers everything in flight, in order.
    pub fn deliver_all(&mut self) {
        while let Some(d) = self.in_flight.pop_front() {
            self.deliver(d);
        }
    }

    /// What one side holds, to compare before and after a datagram it drops.
    fn snapshot(&self, to_server: bool) -> (Vec<u64>, String) {
        if to_server {
            let server = self.server.connection();
            let mut state = server_state(server);
            state.push(self.server.counters().payloads_refused);
            state.push(self.server.counters().payloads_sent);
            let layer = self.server.layer(ClientId(0)).map(|l| {
                format!(
                    "{:?} {} {}",
                    l.counters(),
                    l.receive_queue_len(0),
                    l.receive_queue_len(1)
                )
            });
            (
                state,
                format!("{:?} {layer:?}", without_drops(*server.counters())),
            )
        } else {
            let client = self.client.connection();
            let state = vec![
                self.client.counters().payloads_refused,
                self.client.counters().payloads_sent,
                u64::from(client.max_clients()),
            ];
            let l = self.client.layer();
            (
                state,
                format!(
                    "{:?} {:?} {:?} {:?} {} {}",
                    client.state(),
                    client.client_id(),
                    client.endpoint_counters(),
                    l.counters(),
                    l.receive_queue_len(0),
                    l.receive_queue_len(1)
                ),
            )
        }
    }

    /// The drop count of one side: the server's drop counters, the client's
    /// `dropped` (which also counts the endpoint's refusals: the snapshot tells
    /// them apart, as the endpoint counts those).
    fn drop_count(&self, to_server: bool) -> u64 {
        if to_server {
            drops(self.server.connection().counters())
        } else {
            self.client.connection().dropped()
        }
    }

    /// Hands a datagram to its side and checks the sealing: dropped, it changed
    /// nothing and caused nothing; altered or replayed, it was dropped so.
    fn deliver(&mut self, d: InFlight) {
        let dir = usize::from(!d.to_server);
        let sequence = sealed_sequence(&d.bytes);
        let replay = d.origin == Origin::Genuine
            && sequence.is_some_and(|s| self.delivered[dir].contains(&s));
        let before = (self.drop_count(d.to_server), self.snapshot(d.to_server));
        if d.to_server {
            self.server.handle_datagram(self.now, CLIENT, &d.bytes);
        } else {
            self.client.handle_datagram(self.now, SERVER, &d.bytes);
        }
        let caused = self.collect();
        let after = (self.drop_count(d.to_server), self.snapshot(d.to_server));
        let dropped = after.0 == before.0 + 1 && after.1 == before.1;
        if dropped {
            assert_eq!(caused, 0, "a dropped datagram caused a reply or an event");
            self.dropped[dir] += 1;
        } else if d.to_server {
            // The server counts a datagram that changed something in no drop counter.
            assert_eq!(
                after.0, before.0,
                "a dropped datagram changed the server: {before:?} -> {after:?}"
            );
        }
        if replay || d.origin == Origin::Altered {
            assert!(
                dropped,
                "a datagram {} was taken: {:?} -> {:?}",
                if replay {
                    "delivered before"
                } else {
                    "altered in flight"
                },
                before,
                after
            );
        }
        match d.origin {
            Origin::Genuine => {
                if let Some(s) = sequence {
                    self.delivered[dir].insert(s);
                }
                self.captured.push_back((d.to_server, d.bytes));
                if self.captured.len() > CAPTURED {
                    self.captured.pop_front();
                }
            }
            Origin::Raw | Origin::Forged if !dropped => self.tampered = true,
            _ => {}
        }
        self.check_bounds();
        self.check_delivery();
    }

    /// Seals `packet` with the session key of one direction, at `offset` past the
    /// highest sequence its sender used, and delivers it.
    fn forge(&mut self, to_server: bool, packet: &Packet<'_>, offset: u8) {
        let dir = usize::from(!to_server);
        let sequence = self.max_sequence[dir] + 1 + u64::from(offset);
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        let Ok(len) = write_packet(
            packet,
            sequence,
            &self.keys[dir],
            self.protocol_id,
            &mut buf,
        ) else {
            return;
        };
        self.max_sequence[dir] = self.max_sequence[dir].max(sequence);
        self.deliver(InFlight {
            to_server,
            bytes: buf[..len].to_vec(),
            origin: Origin::Forged,
            genuine: None,
        });
    }

    /// Takes every delivered message on both sides (the application keeps up).
    pub fn take_messages(&mut self) {
        for channel in 0..2 {
            while let Some(m) = self.server.receive(ClientId(0), channel) {
                check_round_trip(&m);
                let got = if channel == 0 {
                    &mut self.got_reliable
                } else {
                    &mut self.got_unreliable
                };
                got[0].push(m);
            }
            while let Some(m) = self.client.receive(channel) {
                check_round_trip(&m);
                let got = if channel == 0 {
                    &mut self.got_reliable
                } else {
                    &mut self.got_unreliable
                };
                got[1].push(m);
            }
        }
        self.check_delivery();
    }

    /// Queues `message` on `channel` of one side (0 = client, 1 = server); records it,
    /// in the form the peer will decode, when the layer takes it.
    pub fn send(&mut self, side: usize, channel: usize, message: Msg) {
        let Ok(bytes) = netproto::encode(&message) else {
            return;
        };
        let decoded = netproto::decode::<Msg>(&bytes).expect("an encoded message decodes");
        let sent = if side == 0 {
            self.client.send(channel, message)
        } else {
            self.server.send(ClientId(0), channel, message)
        };
        if sent.is_ok() {
            let record = if channel == 0 {
                &mut self.sent_reliable
            } else {
                &mut self.sent_unreliable
            };
            record[side].push(decoded);
        }
    }

    /// Memory bounds of both layers and the server's tables.
    pub fn check_bounds(&self) {
        let config = layer_config();
        let layers = [self.server.layer(ClientId(0)), Some(self.client.layer())];
        for layer in layers.into_iter().flatten() {
            for (c, channel) in config.channels.iter().enumerate() {
                assert!(layer.receive_queue_len(c) <= channel.receive_queue_size);
                assert!(layer.send_queue_len(c) <= channel.send_queue_size);
            }
        }
        let server = self.server.connection();
        assert!(server.connected_clients() <= 1);
        assert!(server.pending_handshakes() <= PENDING);
        assert!(server.remembered_tokens() <= 8 * PENDING);
    }

    /// Content checks, unless tampered: reliable messages arrive in order, each once
    /// (what arrived is a prefix of what was sent); unreliable ones arrive at most once
    /// each, as sent.
    pub fn check_delivery(&self) {
        if self.tampered {
            return;
        }
        assert_eq!(
            self.protocol_errors, 0,
            "a protocol error without tampering"
        );
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

    /// Runs a perfect network until both reliable send queues are empty (at most
    /// 20 s): every reliable message must then have arrived, if the connection lives
    /// and nothing was tampered with.
    pub fn drain(&mut self) {
        for _ in 0..1200 {
            self.tick(1.0 / 60.0);
            self.deliver_all();
            self.take_messages();
            let idle = self.client.layer().send_queue_len(0) == 0
                && self
                    .server
                    .layer(ClientId(0))
                    .is_none_or(|l| l.send_queue_len(0) == 0);
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

    /// Messages delivered on both sides.
    pub fn delivered_messages(&self) -> usize {
        self.got_reliable
            .iter()
            .chain(&self.got_unreliable)
            .map(Vec::len)
            .sum()
    }

    /// The run's outcome; its trace covers the digest, the counters and what was
    /// delivered.
    fn finish(mut self) -> DuoOutcome {
        let c = format!(
            "{:?} {} {:?} {:?}",
            self.server.connection().counters(),
            self.client.connection().dropped(),
            self.got_reliable,
            self.got_unreliable
        );
        digest(&mut self.trace, c.as_bytes());
        DuoOutcome {
            trace: self.trace,
            delivered: self.delivered_messages(),
            reliable_delivered: self.got_reliable.iter().map(Vec::len).sum(),
            reliable_sent: self.sent_reliable.iter().map(Vec::len).sum(),
            tampered: self.tampered,
            dropped: self.dropped,
        }
    }

    /// Alters the oldest datagram in flight (`how`: flip a bit, truncate, splice
    /// with a captured datagram, append bytes); it must then be dropped.
    fn alter(&mut self, how: u8, at: u16) {
        let spliced = self
            .captured
            .get(usize::from(at) % self.captured.len().max(1))
            .map(|c| c.1.clone());
        let Some(front) = self.in_flight.front_mut() else {
            return;
        };
        if front.origin == Origin::Genuine {
            front.genuine = Some(front.bytes.clone());
        }
        let len = front.bytes.len();
        match how % 4 {
            0 if len > 0 => {
                let bit = usize::from(at) % (len * 8);
                front.bytes[bit / 8] ^= 1 << (bit % 8);
            }
            1 => front.bytes.truncate(usize::from(at) % (len + 1)),
            2 => {
                if let Some(other) = spliced {
                    let cut = usize::from(at) % (len + 1);
                    front.bytes.truncate(cut);
                    front
                        .bytes
                        .extend_from_slice(&other[cut.min(other.len())..]);
                }
            }
            _ => front.bytes.extend_from_slice(&at.to_le_bytes()),
        }
        if let Some(genuine) = &front.genuine {
            front.origin = if front.bytes == *genuine {
                Origin::Genuine
            } else {
                Origin::Altered
            };
        }
    }

    /// Delivers again a datagram delivered before (`index` among the last
    /// [`CAPTURED`]): a replay, which must be dropped.
    fn replay(&mut self, index: u8) {
        if self.captured.is_empty() {
            return;
        }
        let (to_server, bytes) = self.captured[usize::from(index) % self.captured.len()].clone();
        self.deliver(InFlight {
            to_server,
            bytes,
            origin: Origin::Genuine,
            genuine: None,
        });
    }
}

// ---------------------------------------------------------------------------------
// Target: the connection's receive path from the connected peer.
// ---------------------------------------------------------------------------------

/// Two connected stacks (keys and token from the script's first two bytes). Ops
/// (`op % 10`): `0`/`1` a raw blob to the server / the client; `2`/`3` a blob sealed
/// by the harness as a payload with the session key (offset byte, then the blob: the
/// packet endpoint and the message layer behind the seal are reached); `4`/`5` a
/// sealed keep-alive (index byte) or disconnect (odd byte); `6` tick `n` ms and
/// deliver what is in flight; `7` queue a seeded message (side, channel, `u16`
/// seed); `8` alter the oldest datagram in flight (how byte, `u16`: bit flip,
/// truncation, splice with a delivered datagram, extension); `9` replay a delivered
/// datagram (index byte). Checks: nothing a stack did not seal authenticates (an
/// unauthenticated, altered or replayed datagram is dropped and changes nothing);
/// bounds hold throughout; unless the script sealed a datagram itself, reliable
/// messages arrive in order and complete, unreliable ones at most once; the script
/// run twice gives the same trace. Returns the number of messages delivered.
pub fn connection_connected(data: &[u8]) -> usize {
    connection_connected_outcome(data).delivered
}

/// [`connection_connected`], with everything the run counted.
pub fn connection_connected_outcome(data: &[u8]) -> DuoOutcome {
    let a = run_connected(data);
    let b = run_connected(data);
    assert_eq!(a, b, "the connection is not deterministic");
    a
}

fn run_connected(data: &[u8]) -> DuoOutcome {
    let mut script = Script::new(data);
    let mut s = Duo::connected(u64::from(script.u16()));
    while let Some(op) = script.byte() {
        match op % 10 {
            0 | 1 => {
                let bytes = script.blob().to_vec();
                s.deliver(InFlight {
                    to_server: op % 10 == 0,
                    bytes,
                    origin: Origin::Raw,
                    genuine: None,
                });
            }
            2 | 3 => {
                let offset = script.byte().unwrap_or(0);
                let blob = script.blob();
                s.forge(op % 10 == 2, &Packet::Payload(blob), offset);
            }
            4 | 5 => {
                let b = script.byte().unwrap_or(0);
                let packet = if b & 1 == 1 {
                    Packet::Disconnect
                } else {
                    Packet::KeepAlive {
                        client_index: u32::from(b >> 1),
                        max_clients: 4,
                    }
                };
                s.forge(op % 10 == 4, &packet, 0);
            }
            6 => {
                s.tick(f64::from(script.byte().unwrap_or(0)) / 1000.0);
                s.deliver_all();
            }
            7 => {
                let side = usize::from(script.byte().unwrap_or(0) & 1);
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                s.send(side, channel, super::seeded_message(script.u16()));
            }
            8 => {
                let how = script.byte().unwrap_or(0);
                s.alter(how, script.u16());
            }
            _ => s.replay(script.byte().unwrap_or(0)),
        }
        s.take_messages();
    }
    s.drain();
    s.finish()
}

// ---------------------------------------------------------------------------------
// Target: two full stacks driven by a script.
// ---------------------------------------------------------------------------------

/// Two connected stacks (keys and token from the script's first two bytes) and a
/// script (`op % 10`): `0`/`1` the client / the server queues a seeded message
/// (channel byte, `u16` seed); `2` tick (`n + 1` ms); `3` deliver the oldest datagram
/// in flight; `4` drop it; `5` duplicate it (the copy is a replay); `6` move it to the
/// back (reordering); `7` deliver everything in flight; `8` inject a raw blob into a
/// side; `9` flip one bit of the oldest datagram in flight. Then a perfect network
/// drains the queues. Injected and flipped datagrams must be dropped without effect,
/// so every script is checked for content: reliable messages all arrive, in order,
/// unaltered, unreliable ones at most once each; bounds hold throughout; the run is
/// deterministic. Returns the number of messages delivered.
pub fn two_stacks(data: &[u8]) -> usize {
    two_stacks_outcome(data).delivered
}

/// [`two_stacks`], with everything the run counted.
pub fn two_stacks_outcome(data: &[u8]) -> DuoOutcome {
    let a = run_two_stacks(data);
    let b = run_two_stacks(data);
    assert_eq!(a, b, "the stacks are not deterministic");
    a
}

fn run_two_stacks(data: &[u8]) -> DuoOutcome {
    let mut script = Script::new(data);
    let mut s = Duo::connected(u64::from(script.u16()));
    while let Some(op) = script.byte() {
        match op % 10 {
            0 | 1 => {
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                s.send(
                    usize::from(op % 10),
                    channel,
                    super::seeded_message(script.u16()),
                );
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
            7 => s.deliver_all(),
            8 => {
                let to_server = script.byte().unwrap_or(0) & 1 == 0;
                let bytes = script.blob().to_vec();
                s.deliver(InFlight {
                    to_server,
                    bytes,
                    origin: Origin::Raw,
                    genuine: None,
                });
            }
            _ => {
                let at = script.u16();
                s.alter(0, at);
            }
        }
        s.take_messages();
        s.check_bounds();
    }
    s.drain();
    assert!(
        !s.tampered,
        "a datagram no stack sealed authenticated (forged from the seed's keys?)"
    );
    s.finish()
}

/// Valid inputs of the connection targets.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts of the unknown-address target, each one real handshake at
    /// time 0 from one of the 4 addresses (request, response, one payload), among
    /// noise that changes nothing: random bytes, the server's challenge sent back to
    /// it, the request again from another address, a request for another protocol.
    /// Each gets exactly one challenge, one session and one payload through (3).
    pub fn connection_unknown(count: usize, seed: u64) -> Vec<Seed> {
        /// Appends a datagram from `from` to the script and hands it to the mirror
        /// server (the target's twin: same keys, same times).
        fn send(script: &mut Vec<u8>, server: &mut Server<u32>, from: u32, d: &[u8]) {
            script.push(from as u8);
            push_blob(script, d);
            if let Some(delivery) = server.handle_datagram(0.0, from, d) {
                let _ = delivery.accept();
            }
        }
        let mut rng = Rng::new(seed);
        let mut backend = Backend::new(Key::from_bytes(PRIVATE_KEY), rng.next_u64());
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        (0..count)
            .map(|_| {
                let mut script = Vec::new();
                let config =
                    server_config(Key::from_bytes(PRIVATE_KEY), Key::from_bytes(CHALLENGE_KEY));
                let mut server: Server<u32> = Server::new(config, 0.0, UNIX_TIME).expect("server");
                let from = rng.below(4) as u32;
                let other = (from + 1 + rng.below(3) as u32) % 4;
                let token = backend.token(rng.next_u64());
                let mut client =
                    netproto::connection::Client::new(connection_config(), &token, SERVER, 0.0)
                        .expect("client");
                if rng.below(2) == 0 {
                    let mut junk = vec![0u8; rng.below(80) as usize];
                    rng.fill_bytes(&mut junk);
                    send(&mut script, &mut server, other, &junk);
                }
                client.update(0.0);
                let mut request = Vec::new();
                while let Some((_, len)) = client.poll_transmit(&mut buf) {
                    request = buf[..len].to_vec();
                    send(&mut script, &mut server, from, &request);
                }
                for _ in 0..3 {
                    while let Some((_, len)) = server.poll_transmit(&mut buf) {
                        let reply = buf[..len].to_vec();
                        if let Some(delivery) = client.handle_datagram(0.0, SERVER, &reply) {
                            let _ = delivery.accept();
                        }
                        if rng.below(4) == 0 {
                            send(&mut script, &mut server, from, &reply);
                        }
                    }
                    while let Some((_, len)) = client.poll_transmit(&mut buf) {
                        let d = buf[..len].to_vec();
                        send(&mut script, &mut server, from, &d);
                    }
                }
                assert!(client.is_connected(), "the seed's handshake failed");
                if rng.below(2) == 0 {
                    send(&mut script, &mut server, other, &request);
                }
                if rng.below(4) == 0 {
                    let mut wrong = request.clone();
                    wrong[14] ^= 1; // the protocol id
                    send(&mut script, &mut server, other, &wrong);
                }
                let mut payload = vec![0u8; 1 + rng.below(300) as usize];
                rng.fill_bytes(&mut payload);
                client.send(0.0, &payload).expect("connected");
                while let Some((_, len)) = client.poll_transmit(&mut buf) {
                    let d = buf[..len].to_vec();
                    send(&mut script, &mut server, from, &d);
                }
                if rng.below(2) == 0 {
                    script.push(0xFF);
                    client.update(1.0);
                    while let Some((_, len)) = client.poll_transmit(&mut buf) {
                        let d = buf[..len].to_vec();
                        script.push(from as u8);
                        push_blob(&mut script, &d);
                    }
                }
                Seed::taking(script, 3)
            })
            .collect()
    }

    /// `count` scripts of the connected target: seeded sends and ticks; replays of
    /// delivered datagrams and alterations in flight (both dropped without effect);
    /// and, in one script in three, the payloads of a live exchange sealed again by
    /// the harness (which reaches the endpoint and the layer behind the seal, and
    /// marks the script tampered). Every reliable message the script queues must
    /// arrive; the scripts that seal nothing themselves are checked for content.
    pub fn connection_connected(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let key_seed = rng.next_u64() as u16;
                let mut s = Duo::connected(u64::from(key_seed));
                let forging = rng.below(3) == 0;
                let mut script = key_seed.to_le_bytes().to_vec();
                let (mut reliable, mut forged) = (0, false);
                for _ in 0..1 + rng.below(6) {
                    for _ in 0..rng.below(4) {
                        let side = rng.below(2) as u8;
                        let channel = rng.below(2) as u8;
                        let msg_seed = rng.next_u64() as u16;
                        reliable += usize::from(channel == 0);
                        script.extend_from_slice(&[7, side, channel]);
                        script.extend_from_slice(&msg_seed.to_le_bytes());
                    }
                    if rng.below(3) == 0 {
                        script.extend_from_slice(&[8, rng.below(4) as u8]);
                        script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                    }
                    if rng.below(3) == 0 {
                        script.extend_from_slice(&[9, rng.below(32) as u8]);
                    }
                    if forging {
                        // The datagrams of a mirror run, opened, sealed again.
                        for _ in 0..rng.below(3) {
                            let side = rng.below(2) as usize;
                            s.send(
                                side,
                                rng.below(2) as usize,
                                super::super::seeded_message(rng.next_u64() as u16),
                            );
                        }
                        s.tick(0.05);
                        while let Some(d) = s.in_flight.pop_front() {
                            let dir = usize::from(!d.to_server);
                            let mut copy = d.bytes.clone();
                            let allowed = AllowedPackets::NONE.with(PacketType::Payload);
                            if let Ok((_, Packet::Payload(inner))) = read_packet(
                                &mut copy,
                                s.protocol_id,
                                0,
                                Some(&s.keys[dir]),
                                allowed,
                                None,
                            ) {
                                script.extend_from_slice(&[2 + dir as u8, rng.below(3) as u8]);
                                push_blob(&mut script, inner);
                                forged = true;
                            }
                        }
                    }
                    script.extend_from_slice(&[6, 16 + rng.below(60) as u8]);
                }
                Seed {
                    input: script,
                    taken: None,
                    reliable,
                    tampered: forged,
                }
            })
            .collect()
    }

    /// `count` scripts of the two-stack target: seeded sends, ticks and network
    /// faults (drops, duplicates, reordering), raw junk and bit flips (dropped).
    /// Every reliable message the script queues must arrive.
    pub fn two_stacks(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut script = (rng.next_u64() as u16).to_le_bytes().to_vec();
                let mut reliable = 0;
                for _ in 0..8 + rng.below(40) {
                    match rng.below(12) {
                        0..=2 => {
                            let side = rng.below(2) as u8;
                            let channel = rng.below(2) as u8;
                            reliable += usize::from(channel == 0);
                            script.extend_from_slice(&[side, channel]);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        3..=4 => script.extend_from_slice(&[2, rng.below(40) as u8]),
                        5 => script.push(3),
                        6 => script.push(4),
                        7 => script.push(5),
                        8 => script.push(6),
                        9 => {
                            let mut junk = vec![0u8; rng.below(40) as usize];
                            rng.fill_bytes(&mut junk);
                            script.extend_from_slice(&[8, rng.below(2) as u8]);
                            push_blob(&mut script, &junk);
                        }
                        10 => {
                            script.push(9);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        _ => script.push(7),
                    }
                }
                Seed {
                    input: script,
                    taken: None,
                    reliable,
                    tampered: false,
                }
            })
            .collect()
    }
}
