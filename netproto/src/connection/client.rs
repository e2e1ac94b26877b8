//! The sans-IO netcode client: request, response, session.

use crate::Time;
use core::fmt::Debug;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::config::{ConnectionConfig, ConnectionConfigError};
use super::congestion::Congestion;
use super::delivery::Delivery;
use super::event::{ClientEvent, ClientId, DenyReason, DisconnectReason};
use super::session::{Crypto, Link};
use super::stats::{LinkStats, Traffic};
use super::transmit::{MAX_DATAGRAM_BYTES, TransmitQueue};
use super::{Opened, PayloadSendError, opened};
use crate::netcode::{AllowedPackets, CHALLENGE_TOKEN_BYTES, ConnectToken, Packet, PacketType};
use crate::packet::{Estimates, Incoming, ReceiveError, Sequence};
use crate::trace::{self, DropLog, DropReason, Refusal};

pub(super) mod raw;

/// The upper half of the sequence space, where a client seals its connection
/// responses (each at its challenge's sequence): its session's packets count up from
/// 0 and never reach it.
const RESPONSE_SEQUENCES: u64 = 1 << 63;

/// Where the index of the server a response goes to sits in its sequence (bits 58 to
/// 62, below [`RESPONSE_SEQUENCES`]): two servers of one token may send challenges
/// with the same sequence, and the client seals a response to each under the same
/// key, so the server's index keeps their nonces apart.
const RESPONSE_SERVER_SHIFT: u32 = 58;

/// The challenge sequences a response can carry in its nonce without touching the
/// server index: a challenge with a larger sequence (2^58 challenges into a server's
/// run) is dropped as malformed rather than risk a nonce sealed twice.
const RESPONSE_SEQUENCE_MASK: u64 = (1 << RESPONSE_SERVER_SHIFT) - 1;

/// The most server addresses a connect token lists (netcode's limit).
const MAX_SERVERS: usize = 32;

/// Where a [`Client`] is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientState {
    /// Sending connection requests (the token), waiting for a challenge.
    Requesting,
    /// Sending the challenge response, waiting for the server's first keep-alive.
    Responding,
    /// Connected.
    Connected,
    /// The server refused us.
    Denied(DenyReason),
    /// The connection ended (or never completed).
    Disconnected(DisconnectReason),
}

/// The client side of netcode 1.02, sans-IO and generic over the address type `A`.
/// Made from a connect token (from the game's backend) to connect to one of the
/// servers it names; see [`Server`](super::Server) for a complete exchange.
///
/// It sends the token's request every `handshake_resend_interval` until a challenge
/// comes back, then the response until the server's first keep-alive. A server that
/// stays silent for the token's timeout, or denies the request, is given up and the
/// next server of the token is tried ([`from_token`](Self::from_token)), as the
/// netcode standard says; after the last, the handshake ends with
/// [`DisconnectReason::NoReply`] (no packet came back),
/// [`DisconnectReason::HandshakeStalled`] (a challenge, then silence) or a denial. The
/// token's lifetime spans every server tried: when it runs out the handshake ends with
/// [`DisconnectReason::TokenExpired`].
/// Connected, it sends keep-alives when idle and times out when the server goes
/// silent. Datagrams from any other address, unexpected in the current state, or that
/// fail to open, are dropped and counted.
#[derive(Debug)]
pub struct Client<A> {
    config: ConnectionConfig,
    server: A,
    /// The servers to try, in order: the driver's address and the token's address it
    /// stands for (`None` when made by [`Client::new`]).
    servers: Vec<(A, Option<SocketAddr>)>,
    /// The index in `servers` of the one tried now.
    server_index: usize,
    token: ConnectToken,
    /// The connection timeout the token sets, seconds.
    timeout: Duration,
    state: ClientState,
    /// When the first attempt started: the token's lifetime counts from here.
    started: Time,
    last_handshake_sent: Time,
    last_received: Time,
    challenge: Option<(u64, [u8; CHALLENGE_TOKEN_BYTES])>,
    crypto: Crypto,
    link: Option<Link>,
    client_id: Option<ClientId>,
    max_clients: u32,
    broken: bool,
    transmits: TransmitQueue<A>,
    events: VecDeque<ClientEvent>,
    dropped: u64,
    drop_log: DropLog,
    scratch: Box<[u8]>,
    payload: Vec<u8>,
}

impl<A: Copy + Eq + Debug> Client<A> {
    /// A client connecting to `server` (one of the token's server addresses, in the
    /// address type of the driver) with `token`, at time `now`, and to no other. The
    /// first request goes out at the first [`update`](Self::update).
    /// [`from_token`](Self::from_token) tries every server of the token in turn.
    ///
    /// Fails when the configuration is invalid, when the token was made for another
    /// protocol id ([`ConnectionConfigError::ProtocolMismatch`]: another build of the game), or
    /// when its timeout is not one this side accepts.
    pub fn new(
        config: ConnectionConfig,
        token: &ConnectToken,
        server: A,
        now: Time,
    ) -> Result<Self, ConnectionConfigError> {
        Self::with_servers(config, token, vec![(server, None)], now)
    }

    /// A client connecting with `token` to the servers it names, tried in the
    /// token's order as the netcode standard says: each is given the token's timeout
    /// (from its last packet), and a server that stays silent or denies the request
    /// (full) makes the client try the next one. `address` turns each of the token's
    /// addresses into the driver's address type (`|a| a` over UDP). The first request
    /// goes out at the first [`update`](Self::update); [`server`](Self::server) and
    /// [`server_index`](Self::server_index) say which server is tried, then reached.
    ///
    /// Fails as [`new`](Self::new) does, and with
    /// [`ConnectionConfigError::OutOfRange`] (`server_addresses`) when the token lists
    /// no server or more than 32.
    pub fn from_token(
        config: ConnectionConfig,
        token: &ConnectToken,
        now: Time,
        mut address: impl FnMut(SocketAddr) -> A,
    ) -> Result<Self, ConnectionConfigError> {
        let servers = token
            .server_addresses
            .iter()
            .map(|&addr| (address(addr), Some(addr)))
            .collect();
        Self::with_servers(config, token, servers, now)
    }

    fn with_servers(
        config: ConnectionConfig,
        token: &ConnectToken,
        servers: Vec<(A, Option<SocketAddr>)>,
        now: Time,
    ) -> Result<Self, ConnectionConfigError> {
        config.validate()?;
        let Some(&(server, _)) = servers.first().filter(|_| servers.len() <= MAX_SERVERS) else {
            return Err(ConnectionConfigError::OutOfRange {
                field: "server_addresses",
            });
        };
        if token.protocol_id != config.protocol_id {
            return Err(ConnectionConfigError::ProtocolMismatch {
                token: token.protocol_id,
                ours: config.protocol_id,
            });
        }
        let timeout = config.token_timeout(token.timeout_seconds).ok_or(
            ConnectionConfigError::TokenTimeout {
                seconds: token.timeout_seconds,
                max: config.max_timeout,
            },
        )?;
        let crypto = Crypto::new(
            token.client_to_server_key.clone(),
            token.server_to_client_key.clone(),
            config.protocol_id,
        );
        Ok(Self {
            config,
            server,
            servers,
            server_index: 0,
            token: token.clone(),
            timeout,
            state: ClientState::Requesting,
            started: now,
            last_handshake_sent: Time::NEVER,
            last_received: now,
            challenge: None,
            crypto,
            link: None,
            client_id: None,
            max_clients: 0,
            broken: false,
            transmits: TransmitQueue::new(),
            events: VecDeque::new(),
            dropped: 0,
            drop_log: DropLog::new(now),
            scratch: vec![0; MAX_DATAGRAM_BYTES].into_boxed_slice(),
            payload: Vec::new(),
        })
    }

    /// The state.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// `true` when connected.
    pub fn is_connected(&self) -> bool {
        self.state == ClientState::Connected
    }

    /// `true` while the handshake goes on.
    pub fn is_connecting(&self) -> bool {
        matches!(
            self.state,
            ClientState::Requesting | ClientState::Responding
        )
    }

    /// The server's address: the one the handshake is trying, then the one it
    /// reached (or tried last).
    pub fn server(&self) -> A {
        self.server
    }

    /// The index of [`server`](Self::server) among the servers tried, in the token's
    /// order for a client made by [`from_token`](Self::from_token) (0 for one made by
    /// [`new`](Self::new)).
    pub fn server_index(&self) -> usize {
        self.server_index
    }

    /// The address of [`server`](Self::server) as the connect token names it (`None`
    /// for a client made by [`new`](Self::new)).
    pub fn token_server_address(&self) -> Option<SocketAddr> {
        self.servers.get(self.server_index).and_then(|s| s.1)
    }

    /// Our slot on the server, once connected.
    pub fn client_id(&self) -> Option<ClientId> {
        self.client_id
    }

    /// The server's number of slots, once connected.
    pub fn max_clients(&self) -> u32 {
        self.max_clients
    }

    /// Datagrams dropped: from another address, malformed, unexpected in the current
    /// state, failing to open, replayed, or refused by the packet endpoint.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// What the connection measured of its link (RTT, jitter, loss, bandwidth,
    /// congestion, traffic), once connected.
    pub fn stats(&self) -> Option<LinkStats> {
        self.link
            .as_ref()
            .map(|l| l.link_stats(&self.crypto.traffic))
    }

    /// The packet endpoint's estimates, once connected.
    pub(crate) fn endpoint_estimates(&self) -> Option<&Estimates> {
        self.link.as_ref().map(Link::estimates)
    }

    /// The congestion state, once connected.
    pub fn congestion(&self) -> Option<&Congestion> {
        self.link.as_ref().map(|l| &l.congestion)
    }

    /// The rate limit of this client's drop lines, shared with the layers above it
    /// (one log per client).
    pub(crate) fn drop_log(&mut self) -> &mut DropLog {
        &mut self.drop_log
    }

    /// `true` when connected and a payload sent now keeps to the congestion mode's
    /// send rate.
    pub fn ready_to_send(&self, now: Time) -> bool {
        self.is_connected() && self.link.as_ref().is_some_and(|l| l.ready_to_send(now))
    }

    /// `true` when connected and a payload packet is due at `now`
    /// ([`Link::payload_due`]).
    pub(crate) fn payload_due(&self, now: Time, news: bool, idle: bool) -> bool {
        self.is_connected()
            && self
                .link
                .as_ref()
                .is_some_and(|l| l.payload_due(now, news, idle))
    }

    /// Writes the next datagram to send into `buf` and returns its destination (the
    /// server) and length; `None` when there is nothing to send. A buffer of
    /// [`MAX_DATAGRAM_BYTES`] holds any datagram.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        self.transmits.pop(buf)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    fn send_handshake(&mut self, now: Time) {
        self.last_handshake_sent = now;
        let server = self.server;
        match (self.state, &self.challenge) {
            (ClientState::Requesting, _) => {
                let request = Packet::Request {
                    protocol_id: self.token.protocol_id,
                    expire_timestamp: self.token.expire_timestamp,
                    nonce: self.token.nonce,
                    private_data: &self.token.private_data,
                };
                // The request is not sealed: sequence and key are unused.
                let key = &self.token.client_to_server_key;
                self.transmits
                    .push(server, &request, 0, key, self.token.protocol_id);
            }
            (ClientState::Responding, Some((token_sequence, token_data))) => {
                let response = Packet::Response {
                    token_sequence: *token_sequence,
                    token_data,
                };
                // The response's nonce is the challenge's own sequence in the upper
                // half of the sequence space, not the next of ours: each challenge
                // has its own sequence in a server run, so two `Client`s given the
                // same token (a game retrying with the token it already tried) never
                // seal two different responses under one nonce, and a resend of the
                // same response is the same datagram, byte for byte. Our sequence
                // (the session's) starts below it and never gets there. The server
                // reads a response with any sequence (they are not replay-protected).
                // The server's index keeps apart the responses to two servers of the
                // token whose challenges have the same sequence (checked to fit when
                // the challenge came).
                let index = self.server_index as u64;
                let sequence =
                    RESPONSE_SEQUENCES | index << RESPONSE_SERVER_SHIFT | *token_sequence;
                self.crypto
                    .seal_at(server, &response, sequence, &mut self.transmits);
            }
            _ => {}
        }
    }

    /// Ends the connection and reports it.
    fn end(&mut self, reason: DisconnectReason) {
        trace::disconnected("client", self.client_id.map(|c| c.0), &self.server, reason);
        self.state = ClientState::Disconnected(reason);
        self.link = None;
        self.events.push_back(ClientEvent::Disconnected { reason });
    }

    /// Advances to `now`: resends the handshake or gives it up (the server silent for
    /// the token's timeout, or the token expired); connected, disconnects if the
    /// server broke the protocol, times out a silent server, refreshes statistics and
    /// congestion, and sends a keep-alive when nothing was sent for
    /// `keepalive_interval`. Send the tick's payload packet before calling it.
    ///
    /// `now` should not decrease, but may: a time earlier than the last event (the
    /// clock went back) restarts the timers (handshake resend and give-up, timeout,
    /// keep-alive) from `now`. A jump forward is elapsed time: a server silent for
    /// the timeout by the new clock times out.
    pub fn update(&mut self, now: Time) {
        match self.state {
            ClientState::Requesting | ClientState::Responding => {
                self.started = self.started.min(now);
                self.last_received = self.last_received.min(now);
                self.last_handshake_sent = self.last_handshake_sent.min(now);
                let lifetime =
                    self.token
                        .expire_timestamp
                        .saturating_sub(self.token.create_timestamp) as f64;
                if now.secs_since(self.started) >= lifetime {
                    self.end(DisconnectReason::TokenExpired);
                } else if now.secs_since(self.last_received) >= self.timeout.as_secs_f64() {
                    let reason = self.handshake_failure();
                    if !self.try_next_server(now, reason.as_str()) {
                        self.end(reason);
                    }
                } else if now.secs_since(self.last_handshake_sent)
                    >= self.config.handshake_resend_interval.as_secs_f64()
                {
                    self.send_handshake(now);
                }
            }
            ClientState::Connected => {
                if self.broken {
                    self.disconnect_with(DisconnectReason::ProtocolError);
                    return;
                }
                let Some(link) = self.link.as_mut() else {
                    return;
                };
                link.rebase(now);
                if link.timed_out(now) {
                    self.end(DisconnectReason::TimedOut);
                    return;
                }
                let mode = link.congestion.mode();
                let keep_alive =
                    link.update(now, self.config.keepalive_interval, &self.crypto.traffic);
                if link.congestion.mode() != mode {
                    let client = self.client_id.map_or(0, |c| c.0);
                    trace::congestion_changed("client", client, &self.server, link);
                }
                if keep_alive {
                    self.keep_alive(now);
                }
            }
            ClientState::Denied(_) | ClientState::Disconnected(_) => {}
        }
        self.drop_log.flush(now, "client");
    }

    /// Why the handshake with the current server failed, once it went silent for
    /// the token's timeout.
    fn handshake_failure(&self) -> DisconnectReason {
        let server = self.token_server_address();
        let protocol_id = self.config.protocol_id;
        let waited = self.timeout;
        match self.state {
            ClientState::Responding => DisconnectReason::HandshakeStalled {
                server,
                waited,
                protocol_id,
            },
            _ => DisconnectReason::NoReply {
                server,
                servers: u8::try_from(self.server_index + 1).unwrap_or(u8::MAX),
                waited,
                protocol_id,
            },
        }
    }

    /// Moves the handshake to the next server of the token, if there is one: the
    /// request goes out at once, and the server is given the token's timeout from
    /// now. `why` (a [`DisconnectReason::as_str`] or [`DenyReason::as_str`]) is
    /// logged. `false` after the last server.
    fn try_next_server(&mut self, now: Time, why: &'static str) -> bool {
        let next = self.server_index + 1;
        let Some(&(server, addr)) = self.servers.get(next) else {
            return false;
        };
        tracing::info!(
            target: trace::CONNECTION,
            side = "client",
            failed = ?self.server,
            reason = why,
            next = ?server,
            token_address = ?addr,
            "trying the token's next server"
        );
        self.server_index = next;
        self.server = server;
        self.state = ClientState::Requesting;
        self.challenge = None;
        // A fresh replay window: the next server's challenge may carry a sequence the
        // last one's already passed.
        self.crypto = Crypto::new(
            self.token.client_to_server_key.clone(),
            self.token.server_to_client_key.clone(),
            self.config.protocol_id,
        );
        self.last_received = now;
        self.send_handshake(now);
        true
    }

    fn keep_alive(&mut self, now: Time) {
        let packet = Packet::KeepAlive {
            client_index: self.client_id.map_or(0, |c| u32::from(c.0)),
            max_clients: self.max_clients,
        };
        self.crypto.seal(self.server, &packet, &mut self.transmits);
        if let Some(link) = self.link.as_mut() {
            link.last_sent = now;
        }
    }

    /// Handles one datagram from `from` at time `now`. Returns the server's payload
    /// when one arrived, for the layer above to [`accept`](Delivery::accept) or
    /// [`refuse`](Delivery::refuse); everything else is done by then.
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) -> Option<Delivery<'_>> {
        let range = self.open(now, from, datagram)?;
        let Self {
            link,
            scratch,
            client_id,
            dropped,
            drop_log,
            broken,
            server,
            ..
        } = self;
        let client = client_id.unwrap_or(ClientId(0));
        let link = link.as_mut()?;
        let payload = scratch.get(range)?;
        match link.endpoint.receive(now, payload) {
            Ok(Incoming::Packet(packet)) => Some(Delivery::new(client, packet)),
            Ok(Incoming::Fragment { .. }) => None,
            Err(error) => {
                *dropped += 1;
                *broken = matches!(error, ReceiveError::OptimisticAck { .. });
                let refusal = Refusal {
                    side: "client",
                    client: client.0,
                    addr: server,
                    reason: DropReason::ByEndpoint,
                    error: &error,
                    protocol_error: *broken,
                };
                drop_log.refused(now, refusal);
                None
            }
        }
    }

    /// Opens a datagram and does what its packet says; the range of the endpoint
    /// datagram in `scratch` when it is a payload to receive.
    fn open(&mut self, now: Time, from: A, datagram: &[u8]) -> Option<core::ops::Range<usize>> {
        let len = datagram.len();
        let allowed = match self.state {
            ClientState::Requesting => AllowedPackets::NONE
                .with(PacketType::Denied)
                .with(PacketType::Challenge),
            ClientState::Responding => AllowedPackets::NONE
                .with(PacketType::Denied)
                .with(PacketType::KeepAlive),
            ClientState::Connected if !self.broken => AllowedPackets::NONE
                .with(PacketType::KeepAlive)
                .with(PacketType::Payload)
                .with(PacketType::Disconnect),
            _ => AllowedPackets::NONE,
        };
        let buf = match self.scratch.get_mut(..len) {
            Some(buf) if from == self.server && allowed != AllowedPackets::NONE => buf,
            _ => {
                let reason = if from != self.server {
                    DropReason::WrongAddress
                } else if allowed == AllowedPackets::NONE {
                    DropReason::Unexpected
                } else {
                    DropReason::Malformed
                };
                self.dropped_datagram(now, from, reason);
                return None;
            }
        };
        buf.copy_from_slice(datagram);
        let base = buf.as_ptr() as usize;
        let opened = match self.crypto.open(buf, allowed) {
            Ok((
                _,
                Packet::Challenge {
                    token_sequence,
                    token_data,
                },
            )) => {
                if token_sequence & !RESPONSE_SEQUENCE_MASK != 0 {
                    // Its sequence would overlap the server index in the response's
                    // nonce: refuse it rather than risk sealing a nonce twice.
                    self.dropped_datagram(now, from, DropReason::Malformed);
                    return None;
                }
                self.challenge = Some((token_sequence, *token_data));
                Opened::Other
            }
            Ok((_, packet)) => opened(packet, base),
            Err(error) => {
                self.dropped_datagram(now, from, DropReason::of_read_error(error));
                return None;
            }
        };
        self.last_received = now;
        match (self.state, opened) {
            (ClientState::Requesting, Opened::Other) => {
                self.state = ClientState::Responding;
                self.send_handshake(now);
                None
            }
            (ClientState::Requesting | ClientState::Responding, Opened::Denied) => {
                trace::denied("client", &self.server, DenyReason::ServerFull);
                if self.try_next_server(now, DenyReason::ServerFull.as_str()) {
                    return None;
                }
                self.state = ClientState::Denied(DenyReason::ServerFull);
                self.events.push_back(ClientEvent::Denied {
                    reason: DenyReason::ServerFull,
                });
                None
            }
            (
                ClientState::Responding,
                Opened::KeepAlive {
                    client_index,
                    max_clients,
                },
            ) => {
                let (Ok(index), Some(link)) = (
                    u16::try_from(client_index),
                    Link::new(
                        &self.config,
                        Arc::new(self.config.endpoint.clone()),
                        self.timeout,
                        now,
                        None,
                    ),
                ) else {
                    self.dropped_datagram(now, from, DropReason::Malformed);
                    return None;
                };
                self.link = Some(link);
                // The session's traffic starts with this keep-alive, the first packet
                // the server sealed in it (the handshake's responses are not part of
                // it: the server opened them without the session's keys).
                self.crypto.traffic = Traffic {
                    datagrams_received: 1,
                    bytes_received: len as u64,
                    ..Traffic::default()
                };
                self.state = ClientState::Connected;
                self.client_id = Some(ClientId(index));
                self.max_clients = max_clients;
                tracing::info!(
                    target: trace::CONNECTION,
                    side = "client",
                    client = index,
                    addr = ?self.server,
                    max_clients,
                    "connected"
                );
                self.events.push_back(ClientEvent::Connected {
                    client: ClientId(index),
                    max_clients,
                });
                None
            }
            (ClientState::Connected, Opened::KeepAlive { .. }) => {
                if let Some(link) = self.link.as_mut() {
                    link.heard(now);
                }
                None
            }
            (ClientState::Connected, Opened::Disconnect) => {
                self.end(DisconnectReason::PeerDisconnected);
                None
            }
            (ClientState::Connected, Opened::Payload(range)) => {
                if let Some(link) = self.link.as_mut() {
                    link.heard(now);
                }
                Some(range)
            }
            _ => {
                self.dropped_datagram(now, from, DropReason::Unexpected);
                None
            }
        }
    }

    /// Counts a dropped datagram and logs it (rate-limited).
    fn dropped_datagram(&mut self, now: Time, from: A, reason: DropReason) {
        self.dropped += 1;
        trace::log_drop!(
            self.drop_log,
            now,
            "client",
            addr = ?from,
            %reason,
            "dropped"
        );
    }

    /// Sends `payload` to the server as the packet endpoint's next packet, and
    /// returns its sequence. The caller keeps to the send rate with
    /// [`ready_to_send`](Self::ready_to_send).
    pub fn send(&mut self, now: Time, payload: &[u8]) -> Result<Sequence, PayloadSendError> {
        self.send_with(now, |_, buf| buf.extend_from_slice(payload))
    }

    /// Sends the packet endpoint's next packet, written by `write`: it gets the
    /// sequence the packet will carry and an empty buffer to fill (reused from call
    /// to call). Returns that sequence.
    pub fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Sequence, PayloadSendError> {
        if self.state != ClientState::Connected {
            return Err(PayloadSendError::NotConnected);
        }
        let link = self.link.as_mut().ok_or(PayloadSendError::NotConnected)?;
        let sequence = link.endpoint.next_sequence();
        self.payload.clear();
        write(sequence, &mut self.payload);
        let sent = link.send_payload(
            &mut self.crypto,
            now,
            self.server,
            &self.payload,
            &mut self.transmits,
        )?;
        debug_assert_eq!(sent, sequence);
        Ok(sent)
    }

    fn disconnect_with(&mut self, reason: DisconnectReason) {
        match self.state {
            ClientState::Connected => {
                for _ in 0..self.config.disconnect_copies {
                    self.crypto
                        .seal(self.server, &Packet::Disconnect, &mut self.transmits);
                }
            }
            ClientState::Requesting | ClientState::Responding => {}
            ClientState::Denied(_) | ClientState::Disconnected(_) => return,
        }
        self.end(reason);
    }

    /// Disconnects: sends `disconnect_copies` disconnect packets when connected, and
    /// reports [`DisconnectReason::Local`]. Does nothing once denied or disconnected.
    pub fn disconnect(&mut self, _now: Time) {
        self.disconnect_with(DisconnectReason::Local);
    }

    /// Disconnects because the server broke the protocol (the layer above refused
    /// its payload as malformed): sends the disconnect packets and reports
    /// [`DisconnectReason::ProtocolError`].
    pub fn disconnect_for_protocol_error(&mut self) {
        self.disconnect_with(DisconnectReason::ProtocolError);
    }
}
