//! Two full stacks with the datagrams between them in the harness's hands: the state
//! both connected targets drive.

use super::*;
use netproto::Time;
use netproto::channel::ChannelId;

/// Where a datagram in flight came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
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
pub(super) struct InFlight {
    pub(super) to_server: bool,
    pub(super) bytes: Vec<u8>,
    pub(super) origin: Origin,
    /// The bytes as sealed, once altered: a second alteration may restore them (the
    /// datagram is then genuine again).
    pub(super) genuine: Option<Vec<u8>>,
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
    pub(super) in_flight: VecDeque<InFlight>,
    /// Delivered genuine datagrams (to the server?, bytes), for replays.
    captured: VecDeque<(bool, Vec<u8>)>,
    /// Sealed sequences delivered, to the server and to the client.
    delivered: [HashSet<u64>; 2],
    /// The highest sequence each direction's sender used (to the server, the client).
    max_sequence: [u64; 2],
    /// The session keys: client to server, server to client.
    pub(super) keys: [Key; 2],
    pub(super) protocol_id: u64,
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
        let server = ServerStack::new(config, layer_config(), Time::ZERO, UNIX_TIME)
            .expect("valid server stack");
        let client = ClientStack::new(
            connection_config(),
            &token,
            SERVER,
            layer_config(),
            Time::ZERO,
        )
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
        self.client.update(Time::from_secs_f64(self.now));
        self.server.update(Time::from_secs_f64(self.now));
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
                        self.server.connection().server_stats().clients_accepted == 1,
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
            state.push(self.server.stack_stats().payloads_dropped_by_layer);
            state.push(self.server.stack_stats().payloads_sent);
            let layer = self.server.layer(ClientId(0)).map(|l| {
                format!(
                    "{:?} {} {}",
                    l.stats(),
                    l.receive_queue_len(ChannelId::new(0)),
                    l.receive_queue_len(ChannelId::new(1))
                )
            });
            (
                state,
                format!("{:?} {layer:?}", without_drops(*server.server_stats())),
            )
        } else {
            let client = self.client.connection();
            let state = vec![
                self.client.stack_stats().payloads_dropped_by_layer,
                self.client.stack_stats().payloads_sent,
                u64::from(client.max_clients()),
            ];
            let l = self.client.layer();
            (
                state,
                format!(
                    "{:?} {:?} {:?} {:?} {} {}",
                    client.state(),
                    client.client_id(),
                    client.stats().map(|l| l.endpoint),
                    l.stats(),
                    l.receive_queue_len(ChannelId::new(0)),
                    l.receive_queue_len(ChannelId::new(1))
                ),
            )
        }
    }

    /// The drop count of one side: the server's drop counters, the client's
    /// `dropped` (which also counts the endpoint's refusals: the snapshot tells
    /// them apart, as the endpoint counts those).
    fn drop_count(&self, to_server: bool) -> u64 {
        if to_server {
            drops(self.server.connection().server_stats())
        } else {
            self.client.connection().dropped()
        }
    }

    /// Hands a datagram to its side and checks the sealing: dropped, it changed
    /// nothing and caused nothing; altered or replayed, it was dropped so.
    pub(super) fn deliver(&mut self, d: InFlight) {
        let dir = usize::from(!d.to_server);
        let sequence = sealed_sequence(&d.bytes);
        let replay = d.origin == Origin::Genuine
            && sequence.is_some_and(|s| self.delivered[dir].contains(&s));
        let before = (self.drop_count(d.to_server), self.snapshot(d.to_server));
        if d.to_server {
            self.server
                .handle_datagram(Time::from_secs_f64(self.now), CLIENT, &d.bytes);
        } else {
            self.client
                .handle_datagram(Time::from_secs_f64(self.now), SERVER, &d.bytes);
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
    pub(super) fn forge(&mut self, to_server: bool, packet: &Packet<'_>, offset: u8) {
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
            while let Some(m) = self.server.receive(ClientId(0), ChannelId::new(channel)) {
                check_round_trip(&m);
                let got = if channel == 0 {
                    &mut self.got_reliable
                } else {
                    &mut self.got_unreliable
                };
                got[0].push(m);
            }
            while let Some(m) = self.client.receive(ChannelId::new(channel)) {
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
            self.client.send(ChannelId::new(channel), message)
        } else {
            self.server
                .send(ClientId(0), ChannelId::new(channel), message)
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
                assert!(layer.receive_queue_len(ChannelId::new(c)) <= channel.receive_queue_size);
                assert!(layer.send_queue_len(ChannelId::new(c)) <= channel.send_queue_size);
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
            let idle = self.client.layer().send_queue_len(ChannelId::new(0)) == 0
                && self
                    .server
                    .layer(ClientId(0))
                    .is_none_or(|l| l.send_queue_len(ChannelId::new(0)) == 0);
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
    pub(super) fn finish(mut self) -> DuoOutcome {
        let c = format!(
            "{:?} {} {:?} {:?}",
            self.server.connection().server_stats(),
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
    pub(super) fn alter(&mut self, how: u8, at: u16) {
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
    pub(super) fn replay(&mut self, index: u8) {
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
