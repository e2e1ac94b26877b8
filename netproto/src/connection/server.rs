//! The sans-IO server: stateless challenges, client slots, sessions.

use core::hash::Hash;
use std::collections::{HashMap, VecDeque};

use super::challenge::{self, ChallengeError, time_bucket};
use super::config::{ConfigError, ServerConfig};
use super::congestion::Congestion;
use super::event::{ClientId, DenyReason, DisconnectReason, ServerEvent, Transmit};
use super::packet::Packet;
use super::session::Session;
use crate::packet::{SendError, Sequence, Stats};

/// What a [`Server`] counted. Every datagram handed to
/// [`handle_datagram`](Server::handle_datagram) lands in `datagrams_received` and, if
/// dropped, in exactly one of the `dropped_*` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ServerCounters {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_received: u64,
    /// Dropped: not a connection packet (empty, unknown kind, wrong length).
    pub dropped_malformed: u64,
    /// Dropped: a kind a server never receives (challenge, accepted, denied).
    pub dropped_unexpected: u64,
    /// Dropped: a session packet from an address with no session.
    pub dropped_unknown_address: u64,
    /// Dropped: a session packet with the wrong session token.
    pub dropped_bad_token: u64,
    /// Dropped: a challenge response with another protocol id.
    pub dropped_protocol_mismatch: u64,
    /// Dropped: a challenge response whose time bucket expired.
    pub dropped_challenge_expired: u64,
    /// Dropped: a challenge response whose token does not match its address.
    pub dropped_challenge_invalid: u64,
    /// Dropped by the packet endpoint of a session (malformed, stale, duplicate...).
    pub dropped_by_endpoint: u64,
    /// Challenges sent.
    pub challenges_sent: u64,
    /// Denials sent.
    pub denials_sent: u64,
    /// Clients accepted.
    pub clients_accepted: u64,
    /// Clients timed out.
    pub clients_timed_out: u64,
}

#[derive(Debug)]
struct Slot<A> {
    address: A,
    nonce: u64,
    session: Session,
}

/// The server side of the connection protocol, sans-IO and generic over the address
/// type `A` (a `SocketAddr`, the simulator's `NodeId`, ...).
///
/// * [`handle_datagram`](Self::handle_datagram) for every datagram received;
/// * [`update`](Self::update) once per tick, after the tick's payloads (keep-alives,
///   timeouts, congestion);
/// * [`send`](Self::send) a payload to a client, [`disconnect`](Self::disconnect) one;
/// * drain [`poll_transmit`](Self::poll_transmit) to the socket and
///   [`poll_event`](Self::poll_event) to the game.
///
/// An unknown address gets only a stateless challenge (or a denial), each no larger
/// than the request; per-client state (a slot, a packet endpoint) is created once a
/// response proves the address. Malformed and unexpected datagrams are dropped
/// without allocating and counted ([`ServerCounters`]).
///
/// ```
/// use netproto::connection::{
///     Client, ClientEvent, ConnectionConfig, Server, ServerConfig, ServerEvent,
/// };
///
/// let config = ConnectionConfig::new(0xfeed);
/// let mut server = Server::new(ServerConfig::new(config.clone(), [3; 16]), 0.0)?;
/// let mut client = Client::new(config, "server", 42, 0.0)?;
/// // A perfect, instant network between "client" and "server".
/// for tick in 0..10 {
///     let now = f64::from(tick) * 0.05;
///     client.update(now);
///     server.update(now);
///     while let Some(t) = client.poll_transmit() {
///         server.handle_datagram(now, "client", &t.payload);
///     }
///     while let Some(t) = server.poll_transmit() {
///         assert_eq!(t.to, "client");
///         client.handle_datagram(now, "server", &t.payload);
///     }
/// }
/// assert!(client.is_connected());
/// assert!(matches!(server.poll_event(), Some(ServerEvent::Connected { address: "client", .. })));
/// assert!(matches!(client.poll_event(), Some(ClientEvent::Connected { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Server<A> {
    config: ServerConfig,
    slots: Vec<Option<Slot<A>>>,
    by_address: HashMap<A, u16>,
    transmits: VecDeque<Transmit<A>>,
    events: VecDeque<ServerEvent<A>>,
    counters: ServerCounters,
    time: f64,
}

impl<A: Copy + Eq + Hash> Server<A> {
    /// A server with `config` at time `now`. Fails when the configuration is invalid.
    pub fn new(config: ServerConfig, now: f64) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut slots = Vec::with_capacity(config.max_clients);
        slots.resize_with(config.max_clients, || None);
        Ok(Self {
            by_address: HashMap::with_capacity(config.max_clients),
            slots,
            config,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            counters: ServerCounters::default(),
            time: now,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The counters.
    pub fn counters(&self) -> &ServerCounters {
        &self.counters
    }

    /// Clients connected (slots in use): the only per-client state the server holds.
    pub fn connected_clients(&self) -> usize {
        self.by_address.len()
    }

    /// The most heap memory, in bytes, this server holds with every slot in use,
    /// whatever its peers and unknown addresses send:
    ///
    /// ```text
    /// max_clients * S                                      slots
    ///   + 4 * max_clients * (E + 1) + 64                    address map
    ///   + max_clients * connection.memory_per_connection()  sessions
    /// ```
    ///
    /// where `S` is the size of a slot (the session's fixed part) and `E` that of an
    /// (address, index) pair; both fixed parts are allocated by [`new`](Self::new). Not included:
    /// the datagrams and events waiting in [`poll_transmit`](Self::poll_transmit) and
    /// [`poll_event`](Self::poll_event), which the caller drains (each call of
    /// [`handle_datagram`](Self::handle_datagram) queues at most one reply and one
    /// payload event of at most `max_packet_size` bytes, besides the acks it reports).
    /// A datagram from an unknown address adds nothing to the server's own memory.
    pub fn memory_bound(&self) -> usize {
        use core::mem::size_of;
        let clients = self.slots.len();
        let slot = size_of::<Option<Slot<A>>>();
        // The address map: hashbrown's buckets (at most 4 per reserved entry, each an
        // (address, index) pair and a control byte) and one group of control bytes.
        let map = 4 * clients * (size_of::<(A, u16)>() + 1) + 64;
        clients
            .saturating_mul(slot)
            .saturating_add(map)
            .saturating_add(clients.saturating_mul(self.config.connection.memory_per_connection()))
    }

    /// The number of slots.
    pub fn max_clients(&self) -> usize {
        self.slots.len()
    }

    /// The connected clients, in slot order.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, A)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (ClientId(i as u16), s.address)))
    }

    fn slot(&self, client: ClientId) -> Option<&Slot<A>> {
        self.slots.get(usize::from(client.0))?.as_ref()
    }

    /// The address of a connected client.
    pub fn client_address(&self, client: ClientId) -> Option<A> {
        self.slot(client).map(|s| s.address)
    }

    /// The client connected from `address`.
    pub fn client_id(&self, address: &A) -> Option<ClientId> {
        self.by_address.get(address).map(|&i| ClientId(i))
    }

    /// The link estimates of a connected client (RTT, loss, bandwidth).
    pub fn client_stats(&self, client: ClientId) -> Option<&Stats> {
        self.slot(client).map(|s| s.session.stats())
    }

    /// The congestion state of a connected client.
    pub fn congestion(&self, client: ClientId) -> Option<&Congestion> {
        self.slot(client).map(|s| &s.session.congestion)
    }

    /// The sequence of the next packet to `client` (payload or keep-alive): what
    /// [`send`](Self::send) returns if called next. The layer above numbers the
    /// payload it writes with it.
    pub fn next_sequence(&self, client: ClientId) -> Option<Sequence> {
        self.slot(client).map(|s| s.session.next_sequence())
    }

    /// `true` when a payload sent to `client` now keeps to its congestion mode's
    /// send rate (30 or 10 packets per second by default).
    pub fn ready_to_send(&self, now: f64, client: ClientId) -> bool {
        self.slot(client)
            .is_some_and(|s| s.session.ready_to_send(now))
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit<A>> {
        self.transmits.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ServerEvent<A>> {
        self.events.pop_front()
    }

    fn reply(&mut self, to: A, packet: Packet<'_>) {
        self.transmits.push_back(Transmit {
            to,
            payload: packet.to_vec(),
        });
    }

    fn deny(&mut self, to: A, nonce: u64, reason: DenyReason) {
        self.counters.denials_sent += 1;
        let protocol_id = self.config.connection.protocol_id;
        self.reply(
            to,
            Packet::Denied {
                protocol_id,
                nonce,
                reason,
            },
        );
    }

    /// Handles one datagram from `from` at time `now`.
    pub fn handle_datagram(&mut self, now: f64, from: A, datagram: &[u8]) {
        self.handle_datagram_with(now, from, datagram, |_, _| true);
    }

    /// Handles one datagram like [`handle_datagram`](Self::handle_datagram), and
    /// hands a connected client's payload to `accept` before the packet is taken:
    /// when `accept` returns `false` the whole packet is dropped (not acked, its acks
    /// not applied, no event), as if lost. The layer above reads the payload there,
    /// so that a payload it cannot take is resent rather than acked and lost.
    pub fn handle_datagram_with(
        &mut self,
        now: f64,
        from: A,
        datagram: &[u8],
        mut accept: impl FnMut(ClientId, &[u8]) -> bool,
    ) {
        self.time = now;
        self.counters.datagrams_received += 1;
        let Ok(packet) = Packet::decode(datagram) else {
            self.counters.dropped_malformed += 1;
            return;
        };
        let protocol_id = self.config.connection.protocol_id;
        match packet {
            Packet::Request {
                protocol_id: theirs,
                nonce,
            } => {
                if theirs != protocol_id {
                    self.deny(from, nonce, DenyReason::ProtocolMismatch);
                } else if self.by_address.len() >= self.slots.len()
                    && !self.by_address.contains_key(&from)
                {
                    self.deny(from, nonce, DenyReason::ServerFull);
                } else {
                    let bucket = time_bucket(now, self.config.challenge_window);
                    let key = &self.config.challenge_key;
                    let token = challenge::token(key, &from, bucket, nonce, protocol_id);
                    self.counters.challenges_sent += 1;
                    self.reply(
                        from,
                        Packet::Challenge {
                            protocol_id,
                            nonce,
                            bucket,
                            token,
                        },
                    );
                }
            }
            Packet::Response {
                protocol_id: theirs,
                nonce,
                bucket,
                token,
            } => self.handle_response(now, from, theirs, nonce, bucket, token),
            Packet::KeepAlive { token, datagram } | Packet::Payload { token, datagram } => {
                let Some(index) = self.session_of(from, token) else {
                    return;
                };
                let is_payload = matches!(packet, Packet::Payload { .. });
                let Some(slot) = self.slots[index].as_mut() else {
                    return;
                };
                let client = ClientId(index as u16);
                let mut accept = |bytes: &[u8]| accept(client, bytes);
                match slot.session.receive(now, datagram, is_payload, &mut accept) {
                    Ok(incoming) => {
                        for sequence in &incoming.acks {
                            self.events
                                .push_back(ServerEvent::PacketAcked { client, sequence });
                        }
                        if let Some((sequence, payload)) = incoming.payload {
                            self.events.push_back(ServerEvent::Payload {
                                client,
                                sequence,
                                payload,
                            });
                        }
                    }
                    Err(_) => self.counters.dropped_by_endpoint += 1,
                }
            }
            Packet::Disconnect { token } => {
                if let Some(index) = self.session_of(from, token) {
                    self.free(index, DisconnectReason::PeerDisconnected);
                }
            }
            Packet::Challenge { .. } | Packet::Accepted { .. } | Packet::Denied { .. } => {
                self.counters.dropped_unexpected += 1;
            }
        }
    }

    /// The slot of `from` if its session token is `token`; counts the drop otherwise.
    fn session_of(&mut self, from: A, token: u64) -> Option<usize> {
        let Some(&index) = self.by_address.get(&from) else {
            self.counters.dropped_unknown_address += 1;
            return None;
        };
        let index = usize::from(index);
        if self.slots[index].as_ref().map(|s| s.session.token) != Some(token) {
            self.counters.dropped_bad_token += 1;
            return None;
        }
        Some(index)
    }

    fn handle_response(
        &mut self,
        now: f64,
        from: A,
        theirs: u64,
        nonce: u64,
        bucket: u64,
        token: u64,
    ) {
        let protocol_id = self.config.connection.protocol_id;
        if theirs != protocol_id {
            self.counters.dropped_protocol_mismatch += 1;
            return;
        }
        let current = time_bucket(now, self.config.challenge_window);
        let key = &self.config.challenge_key;
        match challenge::verify(key, &from, current, bucket, nonce, protocol_id, token) {
            Ok(()) => {}
            Err(ChallengeError::Expired) => {
                self.counters.dropped_challenge_expired += 1;
                return;
            }
            Err(ChallengeError::Invalid) => {
                self.counters.dropped_challenge_invalid += 1;
                return;
            }
        }
        // The address is proven. Already connected with this token: the accepted
        // packet was lost, send it again.
        if let Some(&index) = self.by_address.get(&from) {
            let index = usize::from(index);
            if let Some(slot) = &self.slots[index]
                && slot.session.token == token
            {
                let nonce = slot.nonce;
                self.reply(
                    from,
                    Packet::Accepted {
                        nonce,
                        token,
                        client: index as u16,
                    },
                );
                return;
            }
            // A new handshake from the same address replaces the old session.
            self.free(index, DisconnectReason::Reconnected);
        }
        let Some(index) = self.slots.iter().position(Option::is_none) else {
            self.deny(from, nonce, DenyReason::ServerFull);
            return;
        };
        let Some(session) = Session::new(&self.config.connection, token, now) else {
            return;
        };
        self.slots[index] = Some(Slot {
            address: from,
            nonce,
            session,
        });
        self.by_address.insert(from, index as u16);
        self.counters.clients_accepted += 1;
        let client = ClientId(index as u16);
        self.events.push_back(ServerEvent::Connected {
            client,
            address: from,
        });
        self.reply(
            from,
            Packet::Accepted {
                nonce,
                token,
                client: client.0,
            },
        );
    }

    fn free(&mut self, index: usize, reason: DisconnectReason) {
        if let Some(slot) = self.slots.get_mut(index).and_then(Option::take) {
            self.by_address.remove(&slot.address);
            self.events.push_back(ServerEvent::Disconnected {
                client: ClientId(index as u16),
                address: slot.address,
                reason,
            });
        }
    }

    /// Advances to `now`: times out silent clients (freeing their slots), refreshes
    /// each connection's statistics and congestion mode, sends keep-alives to clients
    /// nothing was sent to for `keepalive_interval`.
    ///
    /// Send the tick's payload packets before calling it: a connection whose payload
    /// comes after the update gets a keep-alive as well when its send interval is
    /// the keep-alive interval (10 packets per second in bad mode, the default), and
    /// sends twice the packets its congestion mode allows.
    ///
    /// `now` should not decrease, but may: a time earlier than a connection's last
    /// event (the clock went back) restarts its timeout and keep-alive interval from
    /// `now`. A jump forward is elapsed time: clients silent for `timeout` by the new
    /// clock time out.
    pub fn update(&mut self, now: f64) {
        self.time = now;
        let timeout = self.config.connection.timeout;
        let keepalive = self.config.connection.keepalive_interval;
        for index in 0..self.slots.len() {
            let Some(slot) = self.slots[index].as_mut() else {
                continue;
            };
            slot.session.rebase(now);
            if now - slot.session.last_received >= timeout {
                self.counters.clients_timed_out += 1;
                self.free(index, DisconnectReason::TimedOut);
                continue;
            }
            let to = slot.address;
            slot.session.update(now, keepalive, to, &mut self.transmits);
        }
    }

    /// Sends `payload` to `client` as one packet (fragmented above the endpoint's
    /// `fragment_above`). The caller keeps to the send rate with
    /// [`ready_to_send`](Self::ready_to_send).
    pub fn send(
        &mut self,
        now: f64,
        client: ClientId,
        payload: &[u8],
    ) -> Result<Sequence, ConnectionError> {
        self.time = now;
        let slot = self
            .slots
            .get_mut(usize::from(client.0))
            .and_then(Option::as_mut)
            .ok_or(ConnectionError::NotConnected)?;
        let to = slot.address;
        Ok(slot
            .session
            .send(now, to, Some(payload), &mut self.transmits)?)
    }

    /// Disconnects `client`: sends `disconnect_copies` disconnect packets, frees the
    /// slot and reports [`DisconnectReason::Local`]. Returns `false` if it was not
    /// connected.
    pub fn disconnect(&mut self, now: f64, client: ClientId) -> bool {
        self.time = now;
        let index = usize::from(client.0);
        let Some(slot) = self.slots.get(index).and_then(Option::as_ref) else {
            return false;
        };
        let (to, token) = (slot.address, slot.session.token);
        for _ in 0..self.config.connection.disconnect_copies {
            self.reply(to, Packet::Disconnect { token });
        }
        self.free(index, DisconnectReason::Local);
        true
    }

    /// Disconnects every client.
    pub fn disconnect_all(&mut self, now: f64) {
        for index in 0..self.slots.len() {
            self.disconnect(now, ClientId(index as u16));
        }
    }
}

/// Why a payload could not be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// There is no such connection (not connected yet, or gone).
    #[error("not connected")]
    NotConnected,
    /// The packet endpoint refused the payload (too large).
    #[error(transparent)]
    Send(#[from] SendError),
}
