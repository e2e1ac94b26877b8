//! The sans-IO netcode server: requests checked cheapest first, stateless
//! challenges, client slots, sealed sessions.

use crate::Time;
use core::fmt::Debug;
use core::hash::Hash;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::config::{ConnectionConfigError, ServerConfig};
use super::congestion::Congestion;
use super::delivery::Delivery;
use super::event::{ClientId, DenyReason, DisconnectReason, ServerEvent};
use super::handshake::{
    ForeignProtocolLog, HandshakeStart, Handshakes, Pending, TokenRefusal, TokenTag,
};
use super::session::{Crypto, Link};
use super::stats::{LinkStats, ServerStats};
use super::transmit::{MAX_DATAGRAM_BYTES, TransmitQueue};
use super::{Opened, PayloadSendError, opened};
use crate::netcode::{
    self, AllowedPackets, ChallengeToken, ConnectTokenPrivate, Key, MAC_BYTES, Packet, PacketType,
    ReadError, USER_DATA_BYTES,
};
use crate::packet::{EndpointConfig, Incoming, ReceiveError, Sequence};
use crate::trace::{self, DropLog, DropReason, Refusal};

pub(super) mod raw;

impl DropReason {
    /// The counter of the [`ServerStats`] a drop lands in: the counter named after
    /// its reason; `None` for the reasons of other layers, which the server never
    /// gives.
    fn counter(self, counters: &mut ServerStats) -> Option<&mut u64> {
        Some(match self {
            Self::Malformed => &mut counters.datagrams_dropped_malformed,
            Self::Unexpected => &mut counters.datagrams_dropped_unexpected,
            Self::UnknownAddress => &mut counters.datagrams_dropped_unknown_address,
            Self::Unauthenticated => &mut counters.datagrams_dropped_unauthenticated,
            Self::Replayed => &mut counters.datagrams_dropped_replayed,
            Self::ByEndpoint => &mut counters.datagrams_dropped_by_endpoint,
            Self::RequestMalformed => &mut counters.requests_dropped_malformed,
            Self::RequestExpired => &mut counters.requests_dropped_expired,
            Self::RequestUnauthenticated => &mut counters.requests_dropped_unauthenticated,
            Self::RequestWrongServer => &mut counters.requests_dropped_wrong_server,
            Self::RequestTokenReused => &mut counters.requests_dropped_token_reused,
            Self::RequestBeforeStart => &mut counters.requests_dropped_before_start,
            Self::RequestHistoryFull => &mut counters.requests_dropped_history_full,
            Self::RequestAlreadyConnected => &mut counters.requests_dropped_already_connected,
            Self::RequestBadTimeout => &mut counters.requests_dropped_bad_timeout,
            Self::RequestBusy => &mut counters.requests_dropped_busy,
            Self::ResponseInvalid => &mut counters.responses_dropped_invalid,
            // Not a server's drops: the client's, the message layer's, the socket's.
            Self::WrongAddress | Self::PayloadRefused | Self::SendFailed => return None,
        })
    }
}

/// One connected client: what the connection owns (its address, its token's
/// identity, its session's keys and link) and `upper`, the state of the layer above
/// it (a [`ServerStack`](crate::transport::ServerStack)'s peer: the client's message
/// layer; `()` for a bare [`Server`]), so that a client is one entry of one table.
#[derive(Debug)]
struct Slot<A, U> {
    address: A,
    user_id: u64,
    /// Read only by [`Server::user_data`]: on the heap, out of the lines a tick reads.
    user_data: Box<[u8; USER_DATA_BYTES]>,
    /// A keep-alive or payload came from the client since it connected: it knows it
    /// is connected. Until then a keep-alive goes before every payload.
    confirmed: bool,
    /// The client broke the protocol: it is disconnected at the next update.
    broken: bool,
    crypto: Crypto,
    link: Link,
    /// The layer above's state for this client: `U::default()` when the handshake
    /// completes, dropped with the slot.
    upper: U,
}

/// The server side of netcode 1.02, sans-IO and generic over the address type `A` (a
/// `SocketAddr`, the simulator's `NodeId`, ...).
///
/// * [`handle_datagram`](Self::handle_datagram) for every datagram received: it
///   returns a [`Delivery`] when a client's payload arrived, for the layer above to
///   accept or refuse;
/// * [`update`](Self::update) once per tick, after the tick's payloads (keep-alives,
///   timeouts, congestion);
/// * [`send`](Self::send) or [`send_with`](Self::send_with) a payload to a client,
///   [`disconnect`](Self::disconnect) one;
/// * drain [`poll_transmit`](Self::poll_transmit) to the socket and
///   [`poll_event`](Self::poll_event) to the game.
///
/// A connection request is checked cheapest first: its size, version and protocol
/// id, its token's expiry, whether that token was seen from another address or has
/// been used up, then one AEAD open of the token's private part, this server's
/// address among the token's, and whether its client is already connected. What
/// fails gets no answer and leaves no state. A request that passes gets a challenge
/// (sealed under a key only this server run knows, so the server keeps nothing for
/// it but the token's keys, in a bounded table) and, once answered from the same
/// address, a slot. Every packet after the request is sealed; one that fails to
/// open, or replays an earlier one, changes nothing. No reply is larger than the
/// request that caused it. Counted in [`ServerStats`].
///
/// One token opens one session, whatever else happens (netcode 1.4.5's connect
/// token history): a token is pending from the address it first came from (it admits
/// that address again, no other), then consumed when its client gets a slot (it
/// admits nothing more, from any address); the history never evicts an unexpired
/// token, and a restarted server refuses tokens that may predate its start
/// ([`ServerConfig::max_token_lifetime`]). So the keys in a token seal one session,
/// and no (key, nonce) pair is ever sealed twice.
///
/// A flood of valid requests cannot keep new players out: a handshake lives at most
/// its token's timeout from its first request, a client id holds one, and a full
/// table makes room for a new request by replacing the handshake that started first
/// (see [`ServerConfig::pending_handshakes`]).
///
/// `U` is the state a layer above keeps per client, in the client's slot (a
/// [`ServerStack`](crate::transport::ServerStack) keeps its message layer there); a
/// server used on its own has none (`()`), and every public method is the same for
/// any `U`. A function that reads either kind takes `&Server<A, U>` for any `U`
/// (a stack's [`connection`](crate::transport::ServerStack::connection) is a
/// `&Server<A, impl Sized>`).
///
/// ```
/// use netproto::Time;
/// use netproto::connection::{
///     Client, ClientEvent, ConnectionConfig, MAX_DATAGRAM_BYTES, Server, ServerConfig,
///     ServerEvent,
/// };
/// use netproto::netcode::{Key, TokenParams, generate_connect_token};
///
/// let private_key = Key::from_bytes([9; 32]); // shared by the backend and the server
/// let server_address = "127.0.0.1:40000".parse().unwrap();
/// let config = ConnectionConfig::new(0xfeed);
/// let server_config = ServerConfig::new(config.clone(), private_key.clone(), vec![server_address]);
/// let unix_time = 1_800_000_000;
/// let mut server = Server::new(server_config, Time::ZERO, unix_time)?;
///
/// // The backend makes a token for player 42 and hands it to the client.
/// let params = TokenParams::new(0xfeed, 42, vec![server_address]);
/// let token = generate_connect_token(&params, &private_key, unix_time)?;
/// let mut client = Client::new(config, &token, "server", Time::ZERO)?;
///
/// // A perfect, instant network between "client" and "server".
/// let mut buf = [0u8; MAX_DATAGRAM_BYTES];
/// for tick in 0..10 {
///     let now = Time::from_secs_f64(f64::from(tick) * 0.05);
///     client.update(now);
///     server.update(now);
///     while let Some((_, len)) = client.poll_transmit(&mut buf) {
///         server.handle_datagram(now, "client", &buf[..len]);
///     }
///     while let Some((to, len)) = server.poll_transmit(&mut buf) {
///         assert_eq!(to, "client");
///         client.handle_datagram(now, "server", &buf[..len]);
///     }
/// }
/// assert!(client.is_connected());
/// assert!(matches!(
///     server.poll_event(),
///     Some(ServerEvent::Connected { address: "client", user_id: 42, .. })
/// ));
/// assert!(matches!(client.poll_event(), Some(ClientEvent::Connected { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Server<A, U = ()> {
    config: ServerConfig,
    /// `config.connection.endpoint`, shared by every connection's endpoint.
    endpoint_config: Arc<EndpointConfig>,
    slots: Vec<Option<Slot<A, U>>>,
    by_address: HashMap<A, u16>,
    handshakes: Handshakes<A>,
    transmits: TransmitQueue<A>,
    events: VecDeque<ServerEvent<A>>,
    counters: ServerStats,
    /// `now + unix_offset` is the Unix time in seconds.
    unix_offset: f64,
    /// The sequence of packets sealed outside a session (challenges, denials): the
    /// upper half of the sequence space, so that it never meets a session's sequence
    /// under the same key.
    global_sequence: u64,
    challenge_sequence: u64,
    /// The restart rule: a token expiring before this Unix time may have been made
    /// before this server started (see [`ServerConfig::max_token_lifetime`]).
    token_expire_floor: u64,
    last_expiry: Time,
    /// Where a datagram is opened in place.
    scratch: Box<[u8]>,
    /// Where the layer above writes a payload.
    payload: Vec<u8>,
    drop_log: DropLog,
    /// The rate limit of the warning about requests for another protocol id.
    foreign_protocol_log: ForeignProtocolLog<A>,
}

impl<A: Copy + Eq + Hash + Debug> Server<A> {
    /// A server with `config` at time `now` (seconds, any origin: the time every
    /// other call takes), when the Unix time is `unix_time` seconds (to check token
    /// expiry). Fails when the configuration is invalid.
    pub fn new(
        config: ServerConfig,
        now: Time,
        unix_time: u64,
    ) -> Result<Self, ConnectionConfigError> {
        Self::with_upper(config, now, unix_time)
    }
}

impl<A: Copy + Eq + Hash + Debug, U> Server<A, U> {
    /// The bytes of one entry of the slot table (a client's slot with its `U`, or
    /// none): what [`memory_bound`](Self::memory_bound) counts per client slot.
    pub(crate) const SLOT_BYTES: usize = core::mem::size_of::<Option<Slot<A, U>>>();

    /// A server as [`new`](Server::new) makes it, whose slots hold a `U` for the
    /// layer above each client (a [`ServerStack`](crate::transport::ServerStack)'s).
    pub(crate) fn with_upper(
        config: ServerConfig,
        now: Time,
        unix_time: u64,
    ) -> Result<Self, ConnectionConfigError> {
        config.validate()?;
        let mut slots = Vec::with_capacity(config.max_clients);
        slots.resize_with(config.max_clients, || None);
        Ok(Self {
            by_address: HashMap::with_capacity(config.max_clients),
            handshakes: Handshakes::new(config.pending_limit()),
            slots,
            transmits: TransmitQueue::new(),
            events: VecDeque::new(),
            counters: ServerStats::default(),
            unix_offset: unix_time as f64 - now.as_secs_f64(),
            global_sequence: 1 << 63,
            challenge_sequence: 0,
            token_expire_floor: unix_time.saturating_add(config.max_token_lifetime.as_secs()),
            last_expiry: now,
            scratch: vec![0; MAX_DATAGRAM_BYTES].into_boxed_slice(),
            payload: Vec::new(),
            drop_log: DropLog::new(now),
            foreign_protocol_log: ForeignProtocolLog::new(now),
            endpoint_config: Arc::new(config.connection.endpoint.clone()),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The rate limit of this server's drop lines, shared with the layers above it
    /// (one log per server: ten lines a second in all).
    pub(crate) fn drop_log(&mut self) -> &mut DropLog {
        &mut self.drop_log
    }

    /// The counters.
    pub fn server_stats(&self) -> &ServerStats {
        &self.counters
    }

    /// Clients connected (slots in use).
    pub fn connected_clients(&self) -> usize {
        self.by_address.len()
    }

    /// Handshakes in progress (challenged, not yet answered).
    pub fn pending_handshakes(&self) -> usize {
        self.handshakes.pending_len()
    }

    /// Connect tokens in the history (pending from an address, or consumed), at most
    /// eight times the handshake limit.
    pub fn remembered_tokens(&self) -> usize {
        self.handshakes.tokens_len()
    }

    /// The Unix time (seconds) at server time `now`.
    pub fn unix_time(&self, now: Time) -> u64 {
        let t = self.unix_offset + now.as_secs_f64();
        if t > 0.0 { t as u64 } else { 0 }
    }

    /// The most heap memory, in bytes, this server holds with every slot in use and
    /// its handshake tables full, whatever its peers and unknown addresses send:
    ///
    /// ```text
    /// max_clients * S                                      slots
    ///   + max_clients * USER_DATA_BYTES                     their tokens' user data
    ///   + 4 * max_clients * (E + 1) + 64                    address map
    ///   + 4 * P * (H + 1) + 64 + 4 * P * (C + 1) + 64      handshakes, by client id
    ///   + 4 * 8P * (T + 1) + 64                             token history
    ///   + max_clients * connection.memory_per_connection()  sessions
    ///   + 2 * MAX_DATAGRAM_BYTES                            scratch buffers
    /// ```
    ///
    /// where `S` is the size of a slot, `E` that of an (address, index) pair, `P` the
    /// [`pending_handshakes`](ServerConfig::pending_handshakes) limit, `H` and `T` the
    /// sizes of a handshake and a token entry, `C` that of a (client id, address)
    /// pair (hash tables reserve at most 4 buckets
    /// per entry). Not included: the datagrams and events waiting in
    /// [`poll_transmit`](Self::poll_transmit) and [`poll_event`](Self::poll_event),
    /// which the caller drains (one datagram brings at most one reply, and a
    /// disconnect `disconnect_copies`).
    pub fn memory_bound(&self) -> usize {
        use core::mem::size_of;
        let clients = self.slots.len();
        let map = |entries: usize, entry: usize| {
            entries
                .saturating_mul(4)
                .saturating_mul(entry + 1)
                .saturating_add(64)
        };
        let (pending, tokens) = self.handshakes.limits();
        clients
            .saturating_mul(Self::SLOT_BYTES + USER_DATA_BYTES)
            .saturating_add(map(clients, size_of::<(A, u16)>()))
            .saturating_add(map(pending, size_of::<(A, Pending)>()))
            .saturating_add(map(pending, size_of::<(u64, A)>()))
            .saturating_add(map(tokens, size_of::<(TokenTag, [u64; 2], A)>()))
            .saturating_add(clients.saturating_mul(self.config.connection.memory_per_connection()))
            .saturating_add(2 * MAX_DATAGRAM_BYTES)
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

    fn slot(&self, client: ClientId) -> Option<&Slot<A, U>> {
        self.slots.get(usize::from(client.0))?.as_ref()
    }

    /// The first stage of a batch's prefetch (`crate::prefetch`): asks the CPU for
    /// the fields of `client`'s session that opening, handling and sending a packet
    /// read. Returns the slot's layer-above state, for the caller to name its own
    /// fields (found in the same visit of the slot).
    #[inline]
    pub(crate) fn prefetch_client(&self, client: ClientId) -> Option<&U> {
        let slot = self.slot(client)?;
        crate::prefetch::prefetch(&slot.address);
        crate::prefetch::prefetch(&slot.confirmed);
        slot.crypto.prefetch_fields();
        slot.link.prefetch_fields();
        Some(&slot.upper)
    }

    /// The second stage, for a client the first found: the windows' slots the
    /// datagram will read (replay protection, the packet endpoint's). Returns the
    /// slot's layer-above state, as the first stage does.
    #[inline]
    pub(crate) fn prefetch_client_windows(&self, client: ClientId) -> Option<&U> {
        let slot = self.slot(client)?;
        slot.crypto.prefetch_replay();
        slot.link.endpoint.prefetch_windows();
        Some(&slot.upper)
    }

    fn slot_mut(&mut self, client: ClientId) -> Option<&mut Slot<A, U>> {
        self.slots.get_mut(usize::from(client.0))?.as_mut()
    }

    /// The address of a connected client.
    pub fn client_address(&self, client: ClientId) -> Option<A> {
        self.slot(client).map(|s| s.address)
    }

    /// The client connected from `address`.
    pub fn client_id(&self, address: &A) -> Option<ClientId> {
        self.by_address.get(address).map(|&i| ClientId(i))
    }

    /// The client id of a connected client's connect token (who the backend let in).
    pub fn user_id(&self, client: ClientId) -> Option<u64> {
        self.slot(client).map(|s| s.user_id)
    }

    /// The user data of a connected client's connect token (256 bytes the backend
    /// chose: a session ticket, a team, a skin...).
    pub fn user_data(&self, client: ClientId) -> Option<&[u8; USER_DATA_BYTES]> {
        self.slot(client).map(|s| &*s.user_data)
    }

    /// What the connection to `client` measured of its link (RTT, jitter, loss,
    /// bandwidth, congestion, traffic), while connected.
    pub fn stats(&self, client: ClientId) -> Option<LinkStats> {
        self.slot(client)
            .map(|s| s.link.link_stats(&s.crypto.traffic))
    }

    /// The congestion state of a connected client.
    pub fn congestion(&self, client: ClientId) -> Option<&Congestion> {
        self.slot(client).map(|s| &s.link.congestion)
    }

    /// `true` when a payload sent to `client` now keeps to its congestion mode's
    /// send rate (30 or 10 packets per second by default).
    pub fn ready_to_send(&self, now: Time, client: ClientId) -> bool {
        self.slot(client).is_some_and(|s| s.link.ready_to_send(now))
    }

    /// Writes the next datagram to send into `buf` and returns its destination and
    /// length; `None` when there is nothing to send. A buffer of
    /// [`MAX_DATAGRAM_BYTES`] holds any datagram (a smaller one drops those that do
    /// not fit).
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        self.transmits.pop(buf)
    }

    /// Datagrams waiting in [`poll_transmit`](Self::poll_transmit).
    pub fn pending_transmits(&self) -> usize {
        self.transmits.len()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ServerEvent<A>> {
        self.events.pop_front()
    }

    /// Seals a packet outside any session (a challenge or a denial) with `key`.
    fn send_global(&mut self, to: A, packet: &Packet<'_>, key: &Key) {
        let protocol_id = self.config.connection.protocol_id;
        if self
            .transmits
            .push(to, packet, self.global_sequence, key, protocol_id)
            .is_some()
        {
            self.global_sequence += 1;
        }
    }

    /// Handles one datagram from `from` at time `now`. Returns the client's payload
    /// when one arrived, for the layer above to [`accept`](Delivery::accept) or
    /// [`refuse`](Delivery::refuse); everything else (handshakes, keep-alives,
    /// disconnects, fragments, packets dropped and counted) is done by then.
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) -> Option<Delivery<'_>>
    where
        U: Default,
    {
        self.handle_datagram_upper(now, from, datagram)
            .map(|(delivery, _)| delivery)
    }

    /// [`handle_datagram`](Self::handle_datagram), with the layer above's state of
    /// the client a payload came from, borrowed beside the delivery that borrows the
    /// client's link: the layer reads the payload before the packet is taken.
    pub(crate) fn handle_datagram_upper(
        &mut self,
        now: Time,
        from: A,
        datagram: &[u8],
    ) -> Option<(Delivery<'_>, &mut U)>
    where
        U: Default,
    {
        let (index, range) = self.open_datagram(now, from, datagram)?;
        self.receive_payload(now, from, index, range)
    }

    /// Opens a datagram and does what its packet says; the client's slot and the
    /// payload's range in `scratch` when it is a payload.
    fn open_datagram(
        &mut self,
        now: Time,
        from: A,
        datagram: &[u8],
    ) -> Option<(usize, core::ops::Range<usize>)>
    where
        U: Default,
    {
        self.counters.datagrams_received += 1;
        let len = datagram.len();
        let Some(buf) = self.scratch.get_mut(..len) else {
            self.dropped(now, from, DropReason::Malformed);
            return None;
        };
        buf.copy_from_slice(datagram);
        let unix = self.unix_time(now);
        match datagram.first() {
            None => {
                self.dropped(now, from, DropReason::Malformed);
                None
            }
            Some(&prefix) if prefix == PacketType::Request as u8 => {
                self.handle_request(now, unix, from, len);
                None
            }
            Some(_) => match self.by_address.get(&from) {
                Some(&index) => {
                    let index = usize::from(index);
                    let range = self.open_session(now, from, index, len)?;
                    Some((index, range))
                }
                None => {
                    self.handle_response(now, unix, from, len);
                    None
                }
            },
        }
    }

    fn handle_request(&mut self, now: Time, unix: u64, from: A, len: usize) {
        if self.by_address.contains_key(&from) {
            self.dropped(now, from, DropReason::RequestAlreadyConnected);
            return;
        }
        let protocol_id = self.config.connection.protocol_id;
        let allowed = AllowedPackets::NONE.with(PacketType::Request);
        let read = netcode::read_packet(
            &mut self.scratch[..len],
            protocol_id,
            unix,
            None,
            allowed,
            None,
        );
        let (expire_timestamp, nonce, sealed) = match read {
            Ok((
                _,
                Packet::Request {
                    expire_timestamp,
                    nonce,
                    private_data,
                    ..
                },
            )) => (expire_timestamp, nonce, *private_data),
            Ok(_) => {
                self.dropped(now, from, DropReason::Unexpected);
                return;
            }
            Err(ReadError::Expired) => {
                self.dropped(now, from, DropReason::RequestExpired);
                return;
            }
            Err(ReadError::ProtocolMismatch) => {
                self.foreign_protocol(now, from);
                return;
            }
            Err(_) => {
                self.dropped(now, from, DropReason::RequestMalformed);
                return;
            }
        };
        if expire_timestamp < self.token_expire_floor {
            self.dropped(now, from, DropReason::RequestBeforeStart);
            if tracing::enabled!(target: trace::CONNECTION, tracing::Level::WARN)
                && self.drop_log.admit(now, "server")
            {
                tracing::warn!(
                    target: trace::CONNECTION,
                    side = "server",
                    addr = ?from,
                    expire_timestamp,
                    accepted_after = self.token_expire_floor,
                    "request refused by the restart rule: its token may predate this server's start \
                     (if the backend's tokens live less than ServerConfig::max_token_lifetime, set it to their lifetime)"
                );
            }
            return;
        }
        let mut tag = [0u8; MAC_BYTES];
        tag.copy_from_slice(&sealed[sealed.len() - MAC_BYTES..]);
        if self.handshakes.check_token(&tag, &from).is_err() {
            self.dropped(now, from, DropReason::RequestTokenReused);
            return;
        }
        let Ok(token) = ConnectTokenPrivate::open(
            &sealed,
            protocol_id,
            expire_timestamp,
            &nonce,
            &self.config.private_key,
        ) else {
            self.dropped(now, from, DropReason::RequestUnauthenticated);
            return;
        };
        if !token
            .server_addresses
            .iter()
            .any(|a| self.config.addresses.contains(a))
        {
            self.dropped(now, from, DropReason::RequestWrongServer);
            return;
        }
        if self.slot_of_user(token.client_id).is_some() {
            self.dropped(now, from, DropReason::RequestAlreadyConnected);
            return;
        }
        let Some(timeout) = self.config.connection.token_timeout(token.timeout_seconds) else {
            self.dropped(now, from, DropReason::RequestBadTimeout);
            return;
        };
        match self
            .handshakes
            .remember_token(tag, from, expire_timestamp, unix)
        {
            Ok(()) => {}
            Err(TokenRefusal::Full) => {
                self.dropped(now, from, DropReason::RequestHistoryFull);
                return;
            }
            Err(_) => {
                self.dropped(now, from, DropReason::RequestTokenReused);
                return;
            }
        }
        if self.by_address.len() >= self.slots.len() {
            self.counters.denials_sent += 1;
            self.log_denied(now, from);
            self.send_global(from, &Packet::Denied, &token.server_to_client_key);
            return;
        }
        let pending = Pending::new(
            token.server_to_client_key.clone(),
            token.client_to_server_key.clone(),
            timeout,
            expire_timestamp,
            tag,
            token.client_id,
            now,
        );
        match self.handshakes.start(from, pending, now, unix) {
            HandshakeStart::Started => {}
            HandshakeStart::Replaced => {
                self.counters.handshakes_replaced += 1;
                trace::log_drop!(
                    self.drop_log,
                    now,
                    "server",
                    addr = ?from,
                    "handshake table full: the handshake that started first was replaced"
                );
            }
            HandshakeStart::Busy => {
                self.dropped(now, from, DropReason::RequestBusy);
                return;
            }
        }
        let challenge = ChallengeToken {
            client_id: token.client_id,
            user_data: token.user_data,
        }
        .seal(self.challenge_sequence, &self.config.challenge_key);
        let packet = Packet::Challenge {
            token_sequence: self.challenge_sequence,
            token_data: &challenge,
        };
        self.challenge_sequence += 1;
        self.counters.challenges_sent += 1;
        self.send_global(from, &packet, &token.server_to_client_key);
    }

    /// A well-formed request for another protocol id (the request in `scratch`):
    /// counted, and logged at warn level with both ids, at most once per address per
    /// 10 s and 5 lines per 10 s in all. It gets no answer: netcode forbids answering
    /// a request the server cannot open.
    fn foreign_protocol(&mut self, now: Time, from: A) {
        self.counters.requests_dropped_wrong_protocol += 1;
        if !tracing::enabled!(target: trace::CONNECTION, tracing::Level::WARN) {
            return;
        }
        let Some(suppressed) = self.foreign_protocol_log.admit(now, from) else {
            return;
        };
        // The request's plaintext protocol id, after the prefix byte and the version
        // (the request was read whole: it is 1078 bytes).
        let theirs = self
            .scratch
            .get(14..22)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, u64::from_le_bytes);
        let ours = self.config.connection.protocol_id;
        tracing::warn!(
            target: trace::CONNECTION,
            side = "server",
            addr = ?from,
            protocol_id = theirs,
            ours,
            suppressed,
            "request for protocol id {theirs:#018x} from {from:?}, this server speaks {ours:#018x} \
             (a client built with other messages or another channel config; not answered)"
        );
    }

    /// Logs a denial, within the drops' rate limit: a request replayed from a spoofed
    /// address is denied as often as it comes.
    fn log_denied(&mut self, now: Time, from: A) {
        if tracing::enabled!(target: trace::CONNECTION, tracing::Level::INFO)
            && self.drop_log.admit(now, "server")
        {
            trace::denied("server", &from, DenyReason::ServerFull);
        }
    }

    /// Counts a dropped datagram and logs it (rate-limited).
    fn dropped(&mut self, now: Time, from: A, why: DropReason) {
        if let Some(counter) = why.counter(&mut self.counters) {
            *counter += 1;
        }
        trace::log_drop!(
            self.drop_log,
            now,
            "server",
            addr = ?from,
            reason = %why,
            "dropped"
        );
    }

    fn slot_of_user(&self, user_id: u64) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.user_id == user_id))
    }

    fn handle_response(&mut self, now: Time, unix: u64, from: A, len: usize)
    where
        U: Default,
    {
        let Some(pending) = self.handshakes.pending(&from, now, unix) else {
            self.dropped(now, from, DropReason::UnknownAddress);
            return;
        };
        let receive_key = pending.receive_key.clone();
        let send_key = pending.send_key.clone();
        let protocol_id = self.config.connection.protocol_id;
        let allowed = AllowedPackets::NONE.with(PacketType::Response);
        let read = netcode::read_packet(
            &mut self.scratch[..len],
            protocol_id,
            unix,
            Some(&receive_key),
            allowed,
            None,
        );
        let (token_sequence, sealed) = match read {
            Ok((
                _,
                Packet::Response {
                    token_sequence,
                    token_data,
                },
            )) => (token_sequence, *token_data),
            Ok(_) => {
                self.dropped(now, from, DropReason::Unexpected);
                return;
            }
            Err(e) => {
                self.dropped(now, from, DropReason::of_read_error(e));
                return;
            }
        };
        let Ok(challenge) =
            ChallengeToken::open(&sealed, token_sequence, &self.config.challenge_key)
        else {
            self.dropped(now, from, DropReason::ResponseInvalid);
            return;
        };
        if self.slot_of_user(challenge.client_id).is_some() {
            self.dropped(now, from, DropReason::ResponseInvalid);
            return;
        }
        let Some(index) = self.slots.iter().position(Option::is_none) else {
            self.counters.denials_sent += 1;
            self.log_denied(now, from);
            self.send_global(from, &Packet::Denied, &send_key);
            return;
        };
        let Some(pending) = self.handshakes.finish(&from) else {
            return;
        };
        // From here the token's keys seal this session, and no other: the token
        // admits nothing more, from any address.
        self.handshakes.consume(&pending.tag);
        // Every connection's skipped-sequence trap, seeded with an HMAC of a counter
        // under the secret challenge key: a client cannot predict which sequences are
        // never sent, and one connection's seed tells nothing of another's.
        let skip_seed = self
            .config
            .connection
            .endpoint
            .skip_sequence_seed
            .or_else(|| {
                Some(crate::netcode::crypto::keyed_u64(
                    &self.config.challenge_key,
                    self.counters.clients_accepted,
                ))
            });
        let Some(link) = Link::new(
            &self.config.connection,
            Arc::clone(&self.endpoint_config),
            pending.timeout,
            now,
            skip_seed,
        ) else {
            return;
        };
        let mut slot = Slot {
            address: from,
            user_id: challenge.client_id,
            user_data: Box::new(challenge.user_data),
            confirmed: false,
            broken: false,
            crypto: Crypto::new(pending.send_key, pending.receive_key, protocol_id),
            link,
            upper: U::default(),
        };
        let client = ClientId(index as u16);
        let max_clients = self.slots.len() as u32;
        send_keep_alive(
            (client, max_clients),
            from,
            &mut slot.crypto,
            &mut slot.link,
            &mut self.transmits,
            now,
        );
        self.slots[index] = Some(slot);
        self.by_address.insert(from, client.0);
        self.counters.clients_accepted += 1;
        tracing::info!(
            target: trace::CONNECTION,
            side = "server",
            client = client.0,
            addr = ?from,
            user_id = challenge.client_id,
            "connected"
        );
        self.events.push_back(ServerEvent::Connected {
            client,
            address: from,
            user_id: challenge.client_id,
        });
    }

    /// A sealed packet from a connected client's address.
    /// Opens a packet of the connected client in slot `index`; the payload's range
    /// in `scratch` when it is a payload.
    fn open_session(
        &mut self,
        now: Time,
        from: A,
        index: usize,
        len: usize,
    ) -> Option<core::ops::Range<usize>> {
        let slot = self.slots.get_mut(index)?.as_mut()?;
        if slot.broken {
            self.dropped(now, from, DropReason::Unexpected);
            return None;
        }
        let allowed = AllowedPackets::NONE
            .with(PacketType::KeepAlive)
            .with(PacketType::Payload)
            .with(PacketType::Disconnect);
        let buf = &mut self.scratch[..len];
        let base = buf.as_ptr() as usize;
        match slot.crypto.open(buf, allowed) {
            Ok((_, packet)) => {
                slot.link.heard(now);
                slot.confirmed = true;
                match opened(packet, base) {
                    Opened::Payload(range) => Some(range),
                    Opened::KeepAlive { .. } => None,
                    Opened::Disconnect => {
                        self.free(index, DisconnectReason::PeerDisconnected, false);
                        None
                    }
                    Opened::Other | Opened::Denied => {
                        self.dropped(now, from, DropReason::Unexpected);
                        None
                    }
                }
            }
            Err(e) => {
                self.dropped(now, from, DropReason::of_read_error(e));
                None
            }
        }
    }

    /// Hands the payload at `range` in `scratch`, from the client in slot `index`, to
    /// its packet endpoint; the delivery with the slot's layer-above state.
    fn receive_payload(
        &mut self,
        now: Time,
        from: A,
        index: usize,
        range: core::ops::Range<usize>,
    ) -> Option<(Delivery<'_>, &mut U)> {
        let client = ClientId(index as u16);
        let Self {
            slots,
            scratch,
            counters,
            drop_log,
            ..
        } = self;
        let slot = slots.get_mut(index)?.as_mut()?;
        let payload = scratch.get(range)?;
        match slot.link.endpoint.receive(now, payload) {
            Ok(Incoming::Packet(packet)) => Some((Delivery::new(client, packet), &mut slot.upper)),
            Ok(Incoming::Fragment { .. }) => None,
            Err(error) => {
                counters.datagrams_dropped_by_endpoint += 1;
                slot.broken = matches!(error, ReceiveError::OptimisticAck { .. });
                let refusal = Refusal {
                    side: "server",
                    client: client.0,
                    addr: &from,
                    reason: DropReason::ByEndpoint,
                    error: &error,
                    protocol_error: slot.broken,
                };
                drop_log.refused(now, refusal);
                None
            }
        }
    }

    /// Frees slot `index` and reports it; sends the disconnect packets when `notify`.
    fn free(&mut self, index: usize, reason: DisconnectReason, notify: bool) {
        let Some(mut slot) = self.slots.get_mut(index).and_then(Option::take) else {
            return;
        };
        self.by_address.remove(&slot.address);
        if notify {
            for _ in 0..self.config.connection.disconnect_copies {
                slot.crypto
                    .seal(slot.address, &Packet::Disconnect, &mut self.transmits);
            }
        }
        if reason == DisconnectReason::ProtocolError {
            self.counters.clients_dropped_protocol_error += 1;
        }
        trace::disconnected("server", Some(index as u16), &slot.address, reason);
        self.events.push_back(ServerEvent::Disconnected {
            client: ClientId(index as u16),
            address: slot.address,
            reason,
        });
    }

    /// The layer above's state for a connected client (its slot's `upper`).
    pub(crate) fn upper(&self, client: ClientId) -> Option<&U> {
        self.slot(client).map(|s| &s.upper)
    }

    /// The layer above's state for a connected client, to change.
    pub(crate) fn upper_mut(&mut self, client: ClientId) -> Option<&mut U> {
        self.slot_mut(client).map(|s| &mut s.upper)
    }

    /// Every connected client's layer-above state, in slot order.
    pub(crate) fn uppers(&self) -> impl Iterator<Item = (ClientId, &U)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (ClientId(i as u16), &s.upper)))
    }

    /// A connected client's slot split in two: the layer above's state and the
    /// [`SlotSender`] over the slot's session (its keys and link) and this server's
    /// transmit queue and payload buffer, borrowed side by side so that the layer
    /// sends through its own connection without looking the slot up again. `None`
    /// when `client` is not connected.
    pub(crate) fn split(&mut self, client: ClientId) -> Option<(&mut U, SlotSender<'_, A>)> {
        let max_clients = self.slots.len() as u32;
        let Self {
            slots,
            transmits,
            payload,
            ..
        } = self;
        let slot = slots.get_mut(usize::from(client.0))?.as_mut()?;
        let sender = SlotSender {
            client,
            max_clients,
            address: slot.address,
            confirmed: slot.confirmed,
            crypto: &mut slot.crypto,
            link: &mut slot.link,
            transmits,
            payload,
        };
        Some((&mut slot.upper, sender))
    }

    /// The [`SlotSender`] of a connected client (see [`split`](Self::split)).
    pub(crate) fn sender(&mut self, client: ClientId) -> Option<SlotSender<'_, A>> {
        self.split(client).map(|(_, sender)| sender)
    }

    /// Advances to `now`: disconnects clients that broke the protocol, times out
    /// silent clients, refreshes statistics and congestion, and sends a keep-alive to
    /// each client nothing was sent to for `keepalive_interval`. Send the tick's
    /// payloads before calling it, so that keep-alives go only where nothing else
    /// did.
    ///
    /// `now` should not decrease, but may: a time earlier than a client's last
    /// packet (the clock went back) restarts its timers from `now` (see
    /// [`Client::update`](super::Client::update)).
    pub fn update(&mut self, now: Time) {
        let max_clients = self.slots.len() as u32;
        for index in 0..self.slots.len() {
            let Some(slot) = self.slots[index].as_mut() else {
                continue;
            };
            if slot.broken {
                self.free(index, DisconnectReason::ProtocolError, true);
                continue;
            }
            slot.link.rebase(now);
            if slot.link.timed_out(now) {
                self.counters.clients_timed_out += 1;
                self.free(index, DisconnectReason::TimedOut, false);
                continue;
            }
            let mode = slot.link.congestion.mode();
            let keep_alive = slot.link.update(
                now,
                self.config.connection.keepalive_interval,
                &slot.crypto.traffic,
            );
            if slot.link.congestion.mode() != mode {
                trace::congestion_changed("server", index as u16, &slot.address, &slot.link);
            }
            if keep_alive {
                send_keep_alive(
                    (ClientId(index as u16), max_clients),
                    slot.address,
                    &mut slot.crypto,
                    &mut slot.link,
                    &mut self.transmits,
                    now,
                );
            }
        }
        self.drop_log.flush(now, "server");
        if now.secs_since(self.last_expiry) >= 1.0 || now < self.last_expiry {
            self.last_expiry = now;
            let unix = self.unix_time(now);
            self.handshakes.expire(now, unix);
        }
    }

    /// Sends `payload` to `client` as the packet endpoint's next packet (fragmented
    /// when large), and returns its sequence. The caller keeps to the send rate with
    /// [`ready_to_send`](Self::ready_to_send).
    pub fn send(
        &mut self,
        now: Time,
        client: ClientId,
        payload: &[u8],
    ) -> Result<Sequence, PayloadSendError> {
        self.send_with(now, client, |_, buf| buf.extend_from_slice(payload))
    }

    /// Sends the packet endpoint's next packet to `client`, written by `write`: it
    /// gets the sequence the packet will carry and an empty buffer to fill (reused
    /// from call to call). Returns that sequence.
    pub fn send_with(
        &mut self,
        now: Time,
        client: ClientId,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Sequence, PayloadSendError> {
        self.sender(client)
            .ok_or(PayloadSendError::NotConnected)?
            .send_with(now, write)
    }

    /// Disconnects `client`: sends `disconnect_copies` disconnect packets and reports
    /// [`DisconnectReason::Local`]; `false` if it was not connected.
    pub fn disconnect(&mut self, _now: Time, client: ClientId) -> bool {
        if self.slot_mut(client).is_none() {
            return false;
        }
        self.free(usize::from(client.0), DisconnectReason::Local, true);
        true
    }

    /// Disconnects `client` for breaking the protocol (the layer above refused its
    /// payload as malformed): sends the disconnect packets and reports
    /// [`DisconnectReason::ProtocolError`]; `false` if it was not connected.
    pub fn disconnect_for_protocol_error(&mut self, client: ClientId) -> bool {
        if self.slot_mut(client).is_none() {
            return false;
        }
        self.free(usize::from(client.0), DisconnectReason::ProtocolError, true);
        true
    }

    /// Disconnects every client.
    pub fn disconnect_all(&mut self, now: Time) {
        for index in 0..self.slots.len() {
            self.disconnect(now, ClientId(index as u16));
        }
    }
}

/// Seals a keep-alive for `(client, max_clients)` at `to` and queues it:
/// the packet that tells a client it is connected, and keeps a silent link alive.
fn send_keep_alive<A: Copy>(
    (client, max_clients): (ClientId, u32),
    to: A,
    crypto: &mut Crypto,
    link: &mut Link,
    transmits: &mut TransmitQueue<A>,
    now: Time,
) {
    let packet = Packet::KeepAlive {
        client_index: u32::from(client.0),
        max_clients,
    };
    crypto.seal(to, &packet, transmits);
    link.last_sent = now;
}

/// One connected client's session as the layer above sends through it: the slot's
/// keys and link, its address and whether the client confirmed the connection,
/// with the server's transmit queue and payload buffer, borrowed from the slot and
/// the server side by side ([`Server::split`]). The layer's
/// [`Carrier`](crate::channel::Carrier) for a server's client (in
/// `transport/peer.rs`), and what a [`RawServer`](raw::RawServer) sends its raw
/// payloads through.
pub(crate) struct SlotSender<'a, A> {
    client: ClientId,
    max_clients: u32,
    address: A,
    confirmed: bool,
    crypto: &'a mut Crypto,
    link: &'a mut Link,
    transmits: &'a mut TransmitQueue<A>,
    payload: &'a mut Vec<u8>,
}

impl<A: Copy> SlotSender<'_, A> {
    /// What goes before a payload at `now` (a packet endpoint's or a raw one): the
    /// client may have missed the keep-alive that tells it it is connected, so one
    /// goes before every payload until it answers. Written once, here.
    fn before_payload(&mut self, now: Time) {
        if !self.confirmed {
            send_keep_alive(
                (self.client, self.max_clients),
                self.address,
                self.crypto,
                self.link,
                self.transmits,
                now,
            );
        }
    }

    /// The round trip the packet endpoint measures, plus the client's hold (its
    /// ack time; a server's client always has one).
    pub(crate) fn ack_time(&self) -> Option<core::time::Duration> {
        Some(self.link.estimates().ack_time())
    }

    /// `true` when a payload packet is due at `now` ([`Link::payload_due`]).
    pub(crate) fn payload_due(&self, now: Time, news: bool, idle: bool) -> bool {
        self.link.payload_due(now, news, idle)
    }

    /// Sends the packet endpoint's next packet, written by `write` (it gets the
    /// sequence the packet will carry and the server's payload buffer, emptied), and
    /// returns that sequence.
    pub(crate) fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Sequence, PayloadSendError> {
        self.before_payload(now);
        let sequence = self.link.endpoint.next_sequence();
        self.payload.clear();
        write(sequence, self.payload);
        let sent =
            self.link
                .send_payload(self.crypto, now, self.address, self.payload, self.transmits)?;
        debug_assert_eq!(sent, sequence);
        Ok(sent)
    }

    /// Sends `payload` as one netcode payload packet, as it is (no packet endpoint):
    /// `false` when it does not fit one ([`Link::send_raw`]).
    fn send_raw(&mut self, now: Time, payload: &[u8]) -> bool {
        self.before_payload(now);
        self.link
            .send_raw(self.crypto, now, self.address, payload, self.transmits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [DropReason; 20] = [
        DropReason::Malformed,
        DropReason::Unexpected,
        DropReason::UnknownAddress,
        DropReason::WrongAddress,
        DropReason::Unauthenticated,
        DropReason::Replayed,
        DropReason::ByEndpoint,
        DropReason::RequestMalformed,
        DropReason::RequestExpired,
        DropReason::RequestUnauthenticated,
        DropReason::RequestWrongServer,
        DropReason::RequestTokenReused,
        DropReason::RequestBeforeStart,
        DropReason::RequestHistoryFull,
        DropReason::RequestAlreadyConnected,
        DropReason::RequestBadTimeout,
        DropReason::RequestBusy,
        DropReason::ResponseInvalid,
        DropReason::PayloadRefused,
        DropReason::SendFailed,
    ];

    /// The counter a drop reason lands in, by the naming rule of the docs: `dropped_`
    /// and the reason, or the reason with `request_`/`response_` made plural.
    fn counter_name(reason: &str) -> String {
        if let Some(rest) = reason.strip_prefix("request_") {
            format!("requests_dropped_{rest}")
        } else if let Some(rest) = reason.strip_prefix("response_") {
            format!("responses_dropped_{rest}")
        } else {
            format!("datagrams_dropped_{reason}")
        }
    }

    #[test]
    fn each_server_drop_lands_in_the_counter_named_after_its_reason() {
        let mut server_reasons = 0;
        for reason in ALL {
            let mut counters = ServerStats::default();
            let Some(counter) = reason.counter(&mut counters) else {
                continue;
            };
            server_reasons += 1;
            *counter += 1;
            let shown = format!("{counters:?}");
            let expected = format!("{}: 1", counter_name(reason.as_str()));
            assert!(shown.contains(&expected), "{reason:?}: {shown}");
            assert_eq!(
                shown.matches(": 1,").count() + shown.matches(": 1 }").count(),
                1
            );
        }
        assert_eq!(server_reasons, 17);
    }

    /// A client's slot keeps what a tick reads, not its cold bulk: the token's user
    /// data lives on the heap and the replay window is a bitmap, so the slot stays
    /// under 2 KiB (it was 4,112 bytes with both inline). `--nocapture` prints the
    /// sizes of its parts; `tests/tests/memory_idle.rs` measures the heap.
    #[test]
    fn a_slot_holds_no_cold_bulk() {
        use super::super::session::{Crypto, Link};
        use core::mem::size_of;
        println!(
            "size_of: Option<Slot<SocketAddr>> {}, Slot<u32> {}, Crypto {}, Link {}, \
             ReplayProtection {}, Endpoint {}, Congestion {}",
            size_of::<Option<Slot<std::net::SocketAddr, ()>>>(),
            size_of::<Slot<u32, ()>>(),
            size_of::<Crypto>(),
            size_of::<Link>(),
            size_of::<crate::netcode::ReplayProtection>(),
            size_of::<crate::packet::Endpoint>(),
            size_of::<Congestion>(),
        );
        let slot = size_of::<Option<Slot<std::net::SocketAddr, ()>>>();
        assert!(slot < 2048, "a slot of {slot} bytes");
        assert!(size_of::<crate::netcode::ReplayProtection>() < USER_DATA_BYTES);
    }

    #[test]
    fn drop_reasons_have_distinct_names_and_display_them() {
        let names: std::collections::HashSet<_> = ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), ALL.len());
        for reason in ALL {
            assert_eq!(reason.to_string(), reason.as_str());
        }
    }
}
