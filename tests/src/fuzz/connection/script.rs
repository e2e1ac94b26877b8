//! Target: a script of connects (fresh and already-used tokens), sends, ticks,
//! network faults, disconnects and restarts of the server and of clients, against a
//! real server and its clients (connection and message layer: [`ServerStack`] and
//! [`ClientStack`]) on virtual time.

use netproto::Time;
use netproto::channel::ChannelId;

use super::*;
use crate::nonce_log::NonceLog;

/// Most client instances a script makes (each one a token): bounds the harness.
const MAX_INSTANCES: usize = 12;
/// Most client instances alive at once.
const MAX_LIVE: usize = 3;
/// Most datagrams the harness keeps in flight (older ones are lost).
const MAX_IN_FLIGHT: usize = 256;
/// The first client address (each instance gets the next one: a restarted client
/// comes back from a new port, as it would).
const FIRST_ADDRESS: u32 = 10;

/// The server of this target: [`server_config`] with 8 slots, so that the sessions
/// of crashed clients (until they time out) leave room for the live ones.
fn script_server_config(private_key: Key, challenge_key: Key) -> ServerConfig {
    ServerConfig {
        max_clients: 8,
        // The harness's tokens live an hour: the restart rule must know it, or a
        // restarted server would take the tokens of its previous run.
        max_token_lifetime: std::time::Duration::from_secs(3600),
        ..server_config(private_key, challenge_key)
    }
}

/// What a run of [`connection_script_outcome`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// Sessions opened (server `Connected` events).
    pub sessions: usize,
    /// Reliable messages delivered, both directions, all sessions.
    pub reliable_delivered: usize,
    /// Reliable messages the layers took to send, both directions.
    pub reliable_sent: usize,
    /// Unreliable messages delivered.
    pub unreliable_delivered: usize,
    /// Connects with a token that had already opened a session (each must fail).
    pub reused_tokens: usize,
    /// Server restarts.
    pub restarts: usize,
    /// Sealed datagrams recorded in the nonce log.
    pub sealed: u64,
    /// Digest of the run (the determinism check).
    pub trace: u64,
}

/// One client: a [`ClientStack`] at its own address, with the token it used, and
/// what was sent and received on its session, both ways.
struct Instance {
    address: u32,
    token: usize,
    /// `None` once crashed (restarted: its successor is another instance).
    stack: Option<ClientStack<u32, Msg>>,
    /// Reliable messages sent: by the client (as the server must decode them), by the
    /// server to this client's session.
    sent: [Vec<Msg>; 2],
    /// Reliable messages received: by the server from this session, by the client.
    got: [Vec<Msg>; 2],
    /// Unreliable messages sent and received, indexed the same way.
    sent_unreliable: [Vec<Msg>; 2],
    got_unreliable: [Vec<Msg>; 2],
    /// The server's slot for this session on the current server, once connected.
    slot: Option<ClientId>,
    /// The server generation the session was opened on.
    generation: usize,
    /// Whether the client heard it was connected.
    connected_event: bool,
}

/// The harness's state.
struct Stage {
    rng: Rng,
    backend: Backend,
    private_key: Key,
    server: ServerStack<u32, Msg>,
    /// Server generation (restarts so far).
    generation: usize,
    now: f64,
    tokens: Vec<ConnectToken>,
    /// Sessions each token opened.
    token_sessions: Vec<usize>,
    instances: Vec<Instance>,
    /// (from, to, bytes).
    in_flight: VecDeque<(u32, u32, Vec<u8>)>,
    nonces: NonceLog,
    memory_bound: usize,
    out: ScriptOutcome,
}

impl Stage {
    fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5c21_9700_0c0d_e5ed);
        let private_key = random_key(&mut rng);
        let challenge_key = random_key(&mut rng);
        let backend = Backend::new(private_key.clone(), rng.next_u64());
        let server = ServerStack::new(
            script_server_config(private_key.clone(), challenge_key),
            layer_config(),
            Time::ZERO,
            UNIX_TIME,
        )
        .expect("valid server stack");
        let memory_bound = server.connection().memory_bound();
        Self {
            rng,
            backend,
            private_key,
            server,
            generation: 0,
            now: 0.0,
            tokens: Vec::new(),
            token_sessions: Vec::new(),
            instances: Vec::new(),
            in_flight: VecDeque::new(),
            nonces: NonceLog::new(),
            memory_bound,
            out: ScriptOutcome {
                trace: 0xcbf2_9ce4_8422_2325,
                ..ScriptOutcome::default()
            },
        }
    }

    fn live(&self) -> usize {
        self.instances.iter().filter(|i| i.stack.is_some()).count()
    }

    /// A new client instance at the next address, with token `token` (or a fresh
    /// one, made now).
    fn connect(&mut self, token: Option<usize>) {
        if self.instances.len() >= MAX_INSTANCES || self.live() >= MAX_LIVE {
            return;
        }
        let token = match token {
            Some(t) => t,
            None => {
                let client_id = self.rng.next_u64();
                let mut t = self.backend.token(client_id);
                // Made now (at the backend's clock), so that a restarted server, which
                // refuses tokens made before it started, takes it.
                let unix = UNIX_TIME + self.now.ceil() as u64;
                t = self.remake(t, unix);
                self.tokens.push(t);
                self.token_sessions.push(0);
                self.tokens.len() - 1
            }
        };
        let address = FIRST_ADDRESS + self.instances.len() as u32;
        let stack = ClientStack::new(
            connection_config(),
            &self.tokens[token],
            SERVER,
            layer_config(),
            Time::from_secs_f64(self.now),
        )
        .expect("valid client stack");
        self.instances.push(Instance {
            address,
            token,
            stack: Some(stack),
            sent: [Vec::new(), Vec::new()],
            got: [Vec::new(), Vec::new()],
            sent_unreliable: [Vec::new(), Vec::new()],
            got_unreliable: [Vec::new(), Vec::new()],
            slot: None,
            generation: self.generation,
            connected_event: false,
        });
    }

    /// `token` sealed again with its create timestamp at `unix` (same keys, nonce
    /// and client id): what a backend would have made at that time.
    fn remake(&mut self, token: ConnectToken, unix: u64) -> ConnectToken {
        let private = ConnectTokenPrivate::open(
            &token.private_data,
            token.protocol_id,
            token.expire_timestamp,
            &token.nonce,
            &self.private_key,
        )
        .expect("the backend's token opens");
        let mut params = netproto::netcode::TokenParams::new(
            token.protocol_id,
            private.client_id,
            token.server_addresses.clone(),
        );
        params.timeout_seconds = token.timeout_seconds;
        params.user_data = private.user_data;
        netproto::netcode::generate_connect_token_with(
            &params,
            &self.private_key,
            unix,
            unix + 3600,
            token.nonce,
            token.client_to_server_key,
            token.server_to_client_key,
        )
        .expect("a valid token")
    }

    fn instance_at(&self, address: u32) -> Option<usize> {
        address
            .checked_sub(FIRST_ADDRESS)
            .map(|i| i as usize)
            .filter(|&i| i < self.instances.len())
    }

    /// Both sides' ticks, then what they transmit and deliver.
    fn tick(&mut self, dt: f64) {
        self.now += dt;
        let now = Time::from_secs_f64(self.now);
        for i in &mut self.instances {
            if let Some(stack) = &mut i.stack {
                stack.update(now);
            }
        }
        self.server.update(now);
        self.collect();
    }

    /// Takes every datagram the stacks queued (recording its nonce), their events and
    /// the messages they delivered.
    fn collect(&mut self) {
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        let mut sent = Vec::new();
        for i in &mut self.instances {
            let Some(stack) = &mut i.stack else { continue };
            while let Some((to, len)) = stack.poll_transmit(&mut buf) {
                assert_eq!(to, SERVER);
                sent.push((i.address, to, buf[..len].to_vec()));
            }
        }
        while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
            sent.push((SERVER, to, buf[..len].to_vec()));
        }
        for (from, to, bytes) in sent {
            self.record(from, to, &bytes);
            digest(&mut self.out.trace, &bytes);
            self.in_flight.push_back((from, to, bytes));
        }
        while self.in_flight.len() > MAX_IN_FLIGHT {
            self.in_flight.pop_front();
        }
        self.events();
        self.take_messages();
        self.check();
    }

    /// Records a sealed datagram's (key, nonce): the client seals with its token's
    /// client-to-server key, the server with the server-to-client key of the token
    /// of the client at that address (one instance per address: the harness injects
    /// no datagram, so every sealed one is the stacks' own).
    fn record(&mut self, from: u32, to: u32, bytes: &[u8]) {
        let (address, direction) = if from == SERVER { (to, 1) } else { (from, 0) };
        let Some(index) = self.instance_at(address) else {
            panic!("a datagram to or from an unknown address {address}");
        };
        let token = &self.tokens[self.instances[index].token];
        let key = if direction == 0 {
            &token.client_to_server_key
        } else {
            &token.server_to_client_key
        };
        if bytes.first() == Some(&(PacketType::Request as u8)) {
            assert_eq!(direction, 0, "the server sent a request");
            return;
        }
        if !self.nonces.record(key.as_bytes(), bytes) {
            panic!(
                "nonce reuse: {:?} (token {} of instance {index}, {}, server restarts {}, \
                 token sessions {:?}, server counters {:?})",
                self.nonces.reuses().last(),
                self.instances[index].token,
                if direction == 0 {
                    "client to server"
                } else {
                    "server to client"
                },
                self.generation,
                self.token_sessions,
                self.server.connection().server_stats()
            );
        }
    }

    fn events(&mut self) {
        while let Some(event) = self.server.poll_event() {
            digest(&mut self.out.trace, format!("{event:?}").as_bytes());
            match event {
                ServerEvent::Connected {
                    client, address, ..
                } => {
                    let index = self
                        .instance_at(address)
                        .expect("a session of a known client");
                    let token = self.instances[index].token;
                    self.token_sessions[token] += 1;
                    assert_eq!(
                        self.token_sessions[token], 1,
                        "a token opened a second session (instance {index}, token {token})"
                    );
                    let instance = &mut self.instances[index];
                    assert_eq!(instance.slot, None, "a client connected twice");
                    instance.slot = Some(client);
                    instance.generation = self.generation;
                    self.out.sessions += 1;
                }
                ServerEvent::Disconnected { client, .. } => {
                    for i in &mut self.instances {
                        if i.slot == Some(client) && i.generation == self.generation {
                            i.slot = None;
                        }
                    }
                }
                _ => {}
            }
        }
        for (index, i) in self.instances.iter_mut().enumerate() {
            let Some(stack) = &mut i.stack else { continue };
            while let Some(event) = stack.poll_event() {
                digest(&mut self.out.trace, format!("{event:?}").as_bytes());
                if let ClientEvent::Connected { .. } = event {
                    assert!(!i.connected_event, "instance {index} connected twice");
                    i.connected_event = true;
                }
            }
        }
    }

    /// Takes every delivered message (the application keeps up).
    fn take_messages(&mut self) {
        for channel in 0..2 {
            for i in &mut self.instances {
                if let (Some(slot), true) = (i.slot, i.generation == self.generation) {
                    while let Some(m) = self.server.receive(slot, ChannelId::new(channel)) {
                        check_round_trip(&m);
                        if channel == 0 {
                            i.got[0].push(m);
                        } else {
                            i.got_unreliable[0].push(m);
                        }
                    }
                }
                if let Some(stack) = &mut i.stack {
                    while let Some(m) = stack.receive(ChannelId::new(channel)) {
                        check_round_trip(&m);
                        if channel == 0 {
                            i.got[1].push(m);
                        } else {
                            i.got_unreliable[1].push(m);
                        }
                    }
                }
            }
        }
    }

    /// Queues `message` on `channel` from one side of instance `index`'s session
    /// (0 = the client, 1 = the server); records it as the peer will decode it.
    fn send(&mut self, index: usize, side: usize, channel: usize, message: Msg) {
        let Ok(bytes) = netproto::encode(&message) else {
            return;
        };
        let decoded = netproto::decode::<Msg>(&bytes).expect("an encoded message decodes");
        let generation = self.generation;
        let Some(i) = self.instances.get_mut(index) else {
            return;
        };
        let taken = if side == 0 {
            i.stack
                .as_mut()
                .is_some_and(|s| s.send(ChannelId::new(channel), message).is_ok())
        } else {
            match i.slot {
                Some(slot) if i.generation == generation => self
                    .server
                    .send(slot, ChannelId::new(channel), message)
                    .is_ok(),
                _ => false,
            }
        };
        if taken {
            if channel == 0 {
                i.sent[side].push(decoded);
            } else {
                i.sent_unreliable[side].push(decoded);
            }
        }
    }

    /// The invariants after every step: per session, reliable messages arrived in
    /// order, each once (a prefix of what was sent), unreliable ones at most once each
    /// and as sent; the server's tables, the layers' queues and the server's memory
    /// bound within the configuration.
    fn check(&self) {
        for (index, i) in self.instances.iter().enumerate() {
            for side in 0..2 {
                let (sent, got) = (&i.sent[side], &i.got[side]);
                assert!(
                    got.len() <= sent.len() && sent[..got.len()] == got[..],
                    "instance {index}: reliable delivery {} out of order, altered or repeated",
                    if side == 0 {
                        "to the server"
                    } else {
                        "to the client"
                    }
                );
                let mut pool: Vec<Option<&Msg>> =
                    i.sent_unreliable[side].iter().map(Some).collect();
                for m in &i.got_unreliable[side] {
                    let slot = pool
                        .iter_mut()
                        .find(|s| s.is_some_and(|s| s == m))
                        .unwrap_or_else(|| panic!("unreliable {m:?} was not sent (or twice)"));
                    *slot = None;
                }
            }
        }
        let config = layer_config();
        let client_layers = self
            .instances
            .iter()
            .filter_map(|i| i.stack.as_ref().map(|s| s.layer()));
        for layer in self.server.layers().map(|(_, l)| l).chain(client_layers) {
            for (c, channel) in config.channels.iter().enumerate() {
                assert!(layer.receive_queue_len(ChannelId::new(c)) <= channel.receive_queue_size);
                assert!(layer.send_queue_len(ChannelId::new(c)) <= channel.send_queue_size);
            }
        }
        let server = self.server.connection();
        assert!(server.connected_clients() <= server.max_clients());
        assert!(server.pending_handshakes() <= PENDING);
        assert!(server.remembered_tokens() <= 8 * PENDING);
        assert_eq!(
            server.pending_transmits(),
            0,
            "the harness drains the server"
        );
        assert_eq!(server.memory_bound(), self.memory_bound);
    }

    /// Delivers one datagram in flight (to a crashed client: lost).
    fn deliver(&mut self, (from, to, bytes): (u32, u32, Vec<u8>)) {
        let now = Time::from_secs_f64(self.now);
        if to == SERVER {
            self.server.handle_datagram(now, from, &bytes);
        } else if let Some(stack) = self
            .instance_at(to)
            .and_then(|i| self.instances[i].stack.as_mut())
        {
            stack.handle_datagram(now, from, &bytes);
        }
        self.collect();
    }

    fn deliver_all(&mut self) {
        while let Some(d) = self.in_flight.pop_front() {
            self.deliver(d);
        }
    }

    /// A new server with the same private key (and a fresh challenge key, as
    /// [`ServerConfig::new`] draws one), started a second after the next whole second
    /// of virtual time: every session is gone, datagrams in flight reach the new one.
    fn restart_server(&mut self) {
        self.now = self.now.floor() + 2.0;
        let challenge_key = random_key(&mut self.rng);
        self.server = ServerStack::new(
            script_server_config(self.private_key.clone(), challenge_key),
            layer_config(),
            Time::from_secs_f64(self.now),
            UNIX_TIME + self.now as u64,
        )
        .expect("valid server stack");
        self.generation += 1;
        self.out.restarts += 1;
        for i in &mut self.instances {
            i.slot = None;
        }
    }

    /// A perfect network until every live session's reliable queues are empty (at
    /// most 20 s): every reliable message sent on a session alive at both ends must
    /// then have arrived.
    fn drain(&mut self) {
        for _ in 0..200 {
            self.tick(0.1);
            self.deliver_all();
            let idle = self.instances.iter().all(|i| {
                i.stack
                    .as_ref()
                    .is_none_or(|s| s.layer().send_queue_len(ChannelId::new(0)) == 0)
            }) && self
                .server
                .layers()
                .all(|(_, l)| l.send_queue_len(ChannelId::new(0)) == 0);
            if idle {
                break;
            }
        }
        for (index, i) in self.instances.iter().enumerate() {
            let alive = i.slot.is_some()
                && i.generation == self.generation
                && i.stack
                    .as_ref()
                    .is_some_and(|s| s.connection().is_connected());
            if alive {
                for side in 0..2 {
                    assert_eq!(
                        i.got[side].len(),
                        i.sent[side].len(),
                        "instance {index}: reliable messages lost on a live session"
                    );
                }
            }
        }
    }

    fn finish(mut self) -> ScriptOutcome {
        for i in &self.instances {
            self.out.reliable_delivered += i.got[0].len() + i.got[1].len();
            self.out.reliable_sent += i.sent[0].len() + i.sent[1].len();
            self.out.unreliable_delivered += i.got_unreliable[0].len() + i.got_unreliable[1].len();
        }
        self.out.sealed = self.nonces.datagrams();
        let c = format!(
            "{:?} {:?}",
            self.server.connection().server_stats(),
            self.out
        );
        digest(&mut self.out.trace, c.as_bytes());
        self.out
    }
}

/// [`connection_script_outcome`]: sessions opened plus messages delivered.
pub fn connection_script(data: &[u8]) -> usize {
    let o = connection_script_outcome(data);
    o.sessions + o.reliable_delivered + o.unreliable_delivered
}

/// A server and its clients (keys from the script's first two bytes), driven by a
/// script (`op % 14`):
///
/// | op | operands | |
/// |---|---|---|
/// | 0 | | a new client with a fresh token (at most 3 alive, 12 in all) |
/// | 1 | byte | a new client with a token that already opened a session (the byte picks it) |
/// | 2 | byte, byte, `u16` | a message: the first byte picks the client (bit 7: the server sends to it), the second the channel (`& 1`: reliable, unreliable), the `u16` seeds it |
/// | 3 | byte | tick (`4 * (n + 1)` ms) |
/// | 4 | | deliver the oldest datagram in flight |
/// | 5 | | drop it |
/// | 6 | | duplicate it (the copy goes to the back) |
/// | 7 | `u16` | flip one bit of it |
/// | 8 | | move it to the back (reordering) |
/// | 9 | | deliver everything in flight |
/// | 10 | byte | a disconnect: the client the byte picks (bit 7: the server disconnects it) |
/// | 11 | | restart the server (same private key, 2 s later) |
/// | 12 | byte | restart the client the byte picks: it crashes, a new one comes with a fresh token |
/// | 13 | | one second of perfect network (10 ticks of 100 ms, everything delivered) |
///
/// Then a perfect network drains the queues. Checks, after every step: no (key,
/// nonce) pair is sealed twice, either direction, across sessions, server restarts
/// and client restarts ([`NonceLog`]); a token that opened a session never opens
/// another (nor does a client connect twice); reliable messages arrive per session in
/// order, each once, unaltered, and all of them on a session alive at both ends after
/// the drain; unreliable ones at most once each; the layers' queues and the server's
/// tables within their configured sizes and its [`Server::memory_bound`] fixed; the
/// run is deterministic.
pub fn connection_script_outcome(data: &[u8]) -> ScriptOutcome {
    let a = run_script(data);
    let b = run_script(data);
    assert_eq!(a, b, "the stacks are not deterministic");
    a
}

fn run_script(data: &[u8]) -> ScriptOutcome {
    let mut script = Script::new(data);
    let mut s = Stage::new(u64::from(script.u16()));
    while let Some(op) = script.byte() {
        match op % 14 {
            0 => s.connect(None),
            1 => {
                let pick = usize::from(script.byte().unwrap_or(0));
                let used: Vec<usize> = (0..s.tokens.len())
                    .filter(|&t| s.token_sessions[t] > 0)
                    .collect();
                if !used.is_empty() && s.instances.len() < MAX_INSTANCES && s.live() < MAX_LIVE {
                    s.out.reused_tokens += 1;
                    s.connect(Some(used[pick % used.len()]));
                }
            }
            2 => {
                let who = script.byte().unwrap_or(0);
                let channel = usize::from(script.byte().unwrap_or(0) & 1);
                let message = crate::fuzz::seeded_message(script.u16());
                if !s.instances.is_empty() {
                    let index = usize::from(who & 0x7f) % s.instances.len();
                    s.send(index, usize::from(who >> 7), channel, message);
                }
            }
            3 => {
                let n = f64::from(script.byte().unwrap_or(0)) + 1.0;
                s.tick(n * 0.004);
            }
            4 => {
                if let Some(d) = s.in_flight.pop_front() {
                    s.deliver(d);
                }
            }
            5 => {
                s.in_flight.pop_front();
            }
            6 => {
                if let Some(front) = s.in_flight.front().cloned() {
                    s.in_flight.push_back(front);
                }
            }
            7 => {
                let at = usize::from(script.u16());
                if let Some((_, _, bytes)) = s.in_flight.front_mut()
                    && !bytes.is_empty()
                {
                    let bit = at % (bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
            }
            8 => {
                if let Some(front) = s.in_flight.pop_front() {
                    s.in_flight.push_back(front);
                }
            }
            9 => s.deliver_all(),
            10 => {
                let who = script.byte().unwrap_or(0);
                if !s.instances.is_empty() {
                    let index = usize::from(who & 0x7f) % s.instances.len();
                    let now = Time::from_secs_f64(s.now);
                    let generation = s.generation;
                    let i = &mut s.instances[index];
                    if who >> 7 == 0 {
                        if let Some(stack) = &mut i.stack {
                            stack.disconnect(now);
                        }
                    } else if let (Some(slot), true) = (i.slot, i.generation == generation) {
                        s.server.disconnect(now, slot);
                    }
                    s.collect();
                }
            }
            11 => s.restart_server(),
            12 => {
                let who = usize::from(script.byte().unwrap_or(0));
                let alive: Vec<usize> = (0..s.instances.len())
                    .filter(|&i| s.instances[i].stack.is_some())
                    .collect();
                if !alive.is_empty() && s.instances.len() < MAX_INSTANCES {
                    s.instances[alive[who % alive.len()]].stack = None;
                    s.connect(None);
                }
            }
            _ => {
                for _ in 0..10 {
                    s.tick(0.1);
                    s.deliver_all();
                }
            }
        }
    }
    s.drain();
    s.finish()
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts: clients connect with fresh tokens (each followed by a second
    /// of perfect network, so each opens exactly one session), send on both channels
    /// both ways, tick, lose, duplicate, reorder and corrupt datagrams, reconnect with
    /// tokens already used (never a session), disconnect, and restart clients (a
    /// fresh token: one more session) and the server (the sessions end; clients
    /// reconnect with fresh tokens). `taken` is not exact (ticks and faults decide
    /// how many unreliable messages arrive); `reliable` counts the reliable messages
    /// sent to clients the script keeps connected to the end.
    pub fn connection_script(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut script = (rng.next_u64() as u16).to_le_bytes().to_vec();
                // Instances made and alive (the generator mirrors the harness's
                // limits so that each connect it writes happens).
                let (mut made, mut alive) = (0usize, Vec::<u8>::new());
                let mut connected_once = false;
                let mut sessions = 0;
                for _ in 0..6 + rng.below(20) {
                    match rng.below(20) {
                        0..=2 if made < MAX_INSTANCES && alive.len() < MAX_LIVE => {
                            script.push(0);
                            script.push(13);
                            alive.push(made as u8);
                            made += 1;
                            connected_once = true;
                            sessions += 1;
                        }
                        3 if connected_once && made < MAX_INSTANCES && alive.len() < MAX_LIVE => {
                            script.extend_from_slice(&[1, rng.next_u64() as u8]);
                            alive.push(made as u8);
                            made += 1;
                        }
                        4..=8 if !alive.is_empty() => {
                            let who = alive[rng.below(alive.len() as u64) as usize]
                                | (rng.below(2) as u8) << 7;
                            script.extend_from_slice(&[2, who, rng.below(2) as u8]);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        9..=10 => script.extend_from_slice(&[3, rng.below(40) as u8]),
                        11 => script.push(4),
                        12 => script.push(5),
                        13 => script.push(6),
                        14 => {
                            script.push(7);
                            script.extend_from_slice(&(rng.next_u64() as u16).to_le_bytes());
                        }
                        15 => script.push(8),
                        16 => script.push(9),
                        17 if !alive.is_empty() => {
                            let who = alive[rng.below(alive.len() as u64) as usize]
                                | (rng.below(2) as u8) << 7;
                            script.extend_from_slice(&[10, who]);
                        }
                        18 if rng.below(3) == 0 => {
                            script.push(11);
                        }
                        19 if !alive.is_empty() && made < MAX_INSTANCES => {
                            let pick = rng.below(alive.len() as u64) as usize;
                            script.extend_from_slice(&[12, pick as u8, 13]);
                            alive.remove(pick);
                            alive.push(made as u8);
                            made += 1;
                            sessions += 1;
                        }
                        _ => script.push(13),
                    }
                }
                Seed {
                    input: script,
                    taken: None,
                    reliable: 0,
                    sessions,
                    tampered: false,
                }
            })
            .collect()
    }
}
