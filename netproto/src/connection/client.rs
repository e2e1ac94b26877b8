//! The sans-IO client: request, response, session.

use std::collections::VecDeque;

use super::config::{ConfigError, ConnectionConfig};
use super::congestion::Congestion;
use super::event::{ClientEvent, ClientId, DenyReason, DisconnectReason, Transmit};
use super::packet::Packet;
use super::server::ConnectionError;
use super::session::Session;
use crate::packet::{Sequence, Stats};

/// Where a [`Client`] is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientState {
    /// Sending connection requests, waiting for a challenge.
    Requesting,
    /// Sending the challenge response, waiting to be accepted.
    Responding,
    /// Connected.
    Connected,
    /// The server refused us.
    Denied(DenyReason),
    /// The connection ended (or never completed).
    Disconnected(DisconnectReason),
}

#[derive(Clone, Copy, Debug)]
struct Challenge {
    bucket: u64,
    token: u64,
}

/// The client side of the connection protocol, sans-IO and generic over the address
/// type `A`. Created connecting to one server; see [`Server`](super::Server) for a
/// complete exchange.
///
/// It sends a padded request every `handshake_resend_interval` until a challenge
/// echoing its nonce comes back, then the response until it is accepted (or a
/// session packet with its token arrives, if the accepted packet was lost), and gives
/// up after `connect_timeout`. Connected, it sends keep-alives when idle and times
/// out when the server goes silent. Datagrams from any other address, or with the
/// wrong nonce or token, are dropped and counted.
#[derive(Debug)]
pub struct Client<A> {
    config: ConnectionConfig,
    server: A,
    nonce: u64,
    state: ClientState,
    started: f64,
    last_handshake_sent: f64,
    challenge: Option<Challenge>,
    client_id: Option<ClientId>,
    session: Option<Session>,
    transmits: VecDeque<Transmit<A>>,
    events: VecDeque<ClientEvent>,
    dropped: u64,
}

impl<A: Copy + Eq> Client<A> {
    /// A client connecting to `server` at time `now`, with `nonce` (random per
    /// connection: the transport draws it; taken as a parameter so that the core stays
    /// deterministic). The first request goes out at the first
    /// [`update`](Self::update).
    pub fn new(
        config: ConnectionConfig,
        server: A,
        nonce: u64,
        now: f64,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            server,
            nonce,
            state: ClientState::Requesting,
            started: now,
            last_handshake_sent: f64::NEG_INFINITY,
            challenge: None,
            client_id: None,
            session: None,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            dropped: 0,
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

    /// The server's address.
    pub fn server(&self) -> A {
        self.server
    }

    /// Our slot on the server, once connected.
    pub fn client_id(&self) -> Option<ClientId> {
        self.client_id
    }

    /// Datagrams dropped: from another address, malformed, with the wrong nonce or
    /// token, unexpected in the current state, or refused by the packet endpoint.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The link estimates, once connected.
    pub fn stats(&self) -> Option<&Stats> {
        self.session.as_ref().map(Session::stats)
    }

    /// The congestion state, once connected.
    pub fn congestion(&self) -> Option<&Congestion> {
        self.session.as_ref().map(|s| &s.congestion)
    }

    /// `true` when connected and a payload sent now keeps to the congestion mode's
    /// send rate.
    pub fn ready_to_send(&self, now: f64) -> bool {
        self.is_connected() && self.session.as_ref().is_some_and(|s| s.ready_to_send(now))
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit<A>> {
        self.transmits.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    fn transmit(&mut self, packet: Packet<'_>) {
        self.transmits.push_back(Transmit {
            to: self.server,
            payload: packet.to_vec(),
        });
    }

    fn send_handshake(&mut self, now: f64) {
        self.last_handshake_sent = now;
        let protocol_id = self.config.protocol_id;
        let nonce = self.nonce;
        match (self.state, self.challenge) {
            (ClientState::Requesting, _) => self.transmit(Packet::Request { protocol_id, nonce }),
            (ClientState::Responding, Some(c)) => self.transmit(Packet::Response {
                protocol_id,
                nonce,
                bucket: c.bucket,
                token: c.token,
            }),
            _ => {}
        }
    }

    /// Ends the connection and reports it.
    fn end(&mut self, reason: DisconnectReason) {
        self.state = ClientState::Disconnected(reason);
        self.session = None;
        self.events.push_back(ClientEvent::Disconnected { reason });
    }

    /// Advances to `now`: resends the handshake or gives it up; connected, times out a
    /// silent server, refreshes statistics and congestion, sends a keep-alive when
    /// nothing was sent for `keepalive_interval`. Send the tick's payload packet
    /// before calling it (see [`Server::update`](super::Server::update)).
    ///
    /// `now` should not decrease, but may: a time earlier than the last event (the
    /// clock went back) restarts the timers (handshake resend and give-up, timeout,
    /// keep-alive) from `now`. A jump forward is elapsed time: a server silent for
    /// `timeout` by the new clock times out.
    pub fn update(&mut self, now: f64) {
        match self.state {
            ClientState::Requesting | ClientState::Responding => {
                self.started = self.started.min(now);
                self.last_handshake_sent = self.last_handshake_sent.min(now);
                if now - self.started >= self.config.connect_timeout {
                    self.end(DisconnectReason::HandshakeTimedOut);
                } else if now - self.last_handshake_sent >= self.config.handshake_resend_interval {
                    self.send_handshake(now);
                }
            }
            ClientState::Connected => {
                let Some(session) = self.session.as_mut() else {
                    return;
                };
                session.rebase(now);
                if now - session.last_received >= self.config.timeout {
                    self.end(DisconnectReason::TimedOut);
                    return;
                }
                session.update(
                    now,
                    self.config.keepalive_interval,
                    self.server,
                    &mut self.transmits,
                );
            }
            ClientState::Denied(_) | ClientState::Disconnected(_) => {}
        }
    }

    fn connect(&mut self, now: f64, token: u64, client: u16) -> bool {
        let Some(session) = Session::new(&self.config, token, now) else {
            return false;
        };
        self.session = Some(session);
        self.state = ClientState::Connected;
        self.client_id = Some(ClientId(client));
        self.events.push_back(ClientEvent::Connected {
            client: ClientId(client),
        });
        true
    }

    /// Handles one datagram from `from` at time `now`.
    pub fn handle_datagram(&mut self, now: f64, from: A, datagram: &[u8]) {
        self.handle_datagram_with(now, from, datagram, |_| true);
    }

    /// Handles one datagram like [`handle_datagram`](Self::handle_datagram), and
    /// hands a payload from the server to `accept` before the packet is taken: when
    /// `accept` returns `false` the whole packet is dropped (not acked, its acks not
    /// applied, no event), as if lost.
    pub fn handle_datagram_with(
        &mut self,
        now: f64,
        from: A,
        datagram: &[u8],
        mut accept: impl FnMut(&[u8]) -> bool,
    ) {
        if from != self.server || !self.accept(now, datagram, &mut accept) {
            self.dropped += 1;
        }
    }

    /// Processes a datagram from the server; `false` when it was dropped.
    fn accept(&mut self, now: f64, datagram: &[u8], accept: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        let Ok(packet) = Packet::decode(datagram) else {
            return false;
        };
        let ours = self.config.protocol_id;
        let token_ok = |token| match (self.state, self.challenge) {
            (ClientState::Connected | ClientState::Responding, Some(c)) => c.token == token,
            _ => false,
        };
        match packet {
            Packet::Challenge {
                protocol_id,
                nonce,
                bucket,
                token,
            } => {
                if self.state != ClientState::Requesting
                    || nonce != self.nonce
                    || protocol_id != ours
                {
                    return false;
                }
                self.challenge = Some(Challenge { bucket, token });
                self.state = ClientState::Responding;
                self.send_handshake(now);
                true
            }
            Packet::Accepted {
                nonce,
                token,
                client,
            } => {
                if self.state != ClientState::Responding || nonce != self.nonce || !token_ok(token)
                {
                    return false;
                }
                self.connect(now, token, client)
            }
            Packet::Denied {
                protocol_id,
                nonce,
                reason,
            } => {
                let handshaking = matches!(
                    self.state,
                    ClientState::Requesting | ClientState::Responding
                );
                if !handshaking || nonce != self.nonce {
                    return false;
                }
                self.state = ClientState::Denied(reason);
                self.session = None;
                self.events.push_back(ClientEvent::Denied {
                    reason,
                    server_protocol_id: protocol_id,
                });
                true
            }
            Packet::KeepAlive { token, datagram } | Packet::Payload { token, datagram } => {
                if !token_ok(token) {
                    return false;
                }
                if self.state == ClientState::Responding {
                    // The accepted packet was lost; the session packet proves it.
                    // The slot index is unknown until then: keep it unset.
                    if !self.connect(now, token, u16::MAX) {
                        return false;
                    }
                    self.client_id = None;
                }
                let is_payload = matches!(packet, Packet::Payload { .. });
                let Some(session) = self.session.as_mut() else {
                    return false;
                };
                match session.receive(now, datagram, is_payload, accept) {
                    Ok(incoming) => {
                        for sequence in &incoming.acks {
                            self.events.push_back(ClientEvent::PacketAcked { sequence });
                        }
                        if let Some((sequence, payload)) = incoming.payload {
                            self.events
                                .push_back(ClientEvent::Payload { sequence, payload });
                        }
                        true
                    }
                    Err(_) => false,
                }
            }
            Packet::Disconnect { token } => {
                if self.state != ClientState::Connected || !token_ok(token) {
                    return false;
                }
                self.end(DisconnectReason::PeerDisconnected);
                true
            }
            Packet::Request { .. } | Packet::Response { .. } => false,
        }
    }

    /// The sequence of the next packet to the server (payload or keep-alive), once
    /// connected: what [`send`](Self::send) returns if called next.
    pub fn next_sequence(&self) -> Option<Sequence> {
        self.session.as_ref().map(|s| s.next_sequence())
    }

    /// Sends `payload` to the server as one packet. The caller keeps to the send rate
    /// with [`ready_to_send`](Self::ready_to_send).
    pub fn send(&mut self, now: f64, payload: &[u8]) -> Result<Sequence, ConnectionError> {
        if self.state != ClientState::Connected {
            return Err(ConnectionError::NotConnected);
        }
        let session = self.session.as_mut().ok_or(ConnectionError::NotConnected)?;
        Ok(session.send(now, self.server, Some(payload), &mut self.transmits)?)
    }

    /// Disconnects: sends `disconnect_copies` disconnect packets when connected, and
    /// reports [`DisconnectReason::Local`]. Does nothing once denied or disconnected.
    pub fn disconnect(&mut self, _now: f64) {
        match self.state {
            ClientState::Connected => {
                if let Some(c) = self.challenge {
                    for _ in 0..self.config.disconnect_copies {
                        self.transmit(Packet::Disconnect { token: c.token });
                    }
                }
            }
            ClientState::Requesting | ClientState::Responding => {}
            ClientState::Denied(_) | ClientState::Disconnected(_) => return,
        }
        self.end(DisconnectReason::Local);
    }
}
