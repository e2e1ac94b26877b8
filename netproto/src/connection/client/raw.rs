//! [`RawClient`]: a netcode client whose payload packets carry the caller's bytes.

use core::fmt::Debug;

use super::super::RawSendError;
use super::super::config::{ConnectionConfig, ConnectionConfigError};
use super::super::event::{ClientEvent, ClientId};
use super::{Client, ClientState};
use crate::Time;
use crate::netcode::ConnectToken;

/// A netcode 1.02 client whose payload packets carry the caller's bytes as they are:
/// no packet endpoint inside (no acks, fragments, reliability or congestion
/// avoidance), so that each payload a plain netcode peer (the C reference,
/// renetcode, any implementation of the standard) sends arrives as one
/// [`handle_datagram`](Self::handle_datagram) result, and each [`send`](Self::send)
/// arrives there as one payload. Sans-IO like [`Client`]; the handshake, keep-alives,
/// timeouts, disconnect packets and every check are [`Client`]'s.
/// [`transport::NetcodeClient`](crate::transport::NetcodeClient) drives it over UDP.
///
/// Of the [`ConnectionConfig`] it uses the protocol id, `keepalive_interval`,
/// `max_timeout`, `handshake_resend_interval`, `disconnect_copies` and
/// `allow_no_timeout`. A token with no timeout (negative `timeout_seconds`) gives a
/// connection that is never timed out for silence
/// ([`ConnectionConfig::allow_no_timeout`]).
///
/// ```
/// use netproto::Time;
/// use netproto::connection::{
///     ConnectionConfig, MAX_DATAGRAM_BYTES, RawClient, RawServer, ServerConfig,
/// };
/// use netproto::netcode::{Key, TokenParams, generate_connect_token};
///
/// let private_key = Key::from_bytes([9; 32]);
/// let address = "127.0.0.1:40000".parse().unwrap();
/// let config = ConnectionConfig::new(0xfeed);
/// let server_config = ServerConfig::new(config.clone(), private_key.clone(), vec![address]);
/// let mut server = RawServer::new(server_config, Time::ZERO, 1_800_000_000)?;
/// let token = generate_connect_token(&TokenParams::new(0xfeed, 42, vec![address]), &private_key, 1_800_000_000)?;
/// let mut client = RawClient::new(config, &token, "server", Time::ZERO)?;
///
/// let mut buf = [0u8; MAX_DATAGRAM_BYTES];
/// let mut got = Vec::new();
/// for tick in 0..10 {
///     let now = Time::from_secs_f64(f64::from(tick) * 0.05);
///     if client.is_connected() {
///         client.send(now, b"my own framing")?;
///     }
///     client.update(now);
///     server.update(now);
///     while let Some((_, len)) = client.poll_transmit(&mut buf) {
///         if let Some((_, payload)) = server.handle_datagram(now, "client", &buf[..len]) {
///             got.push(payload.to_vec());
///         }
///     }
///     while let Some((_, len)) = server.poll_transmit(&mut buf) {
///         client.handle_datagram(now, "server", &buf[..len]);
///     }
/// }
/// assert!(!got.is_empty());
/// assert!(got.iter().all(|p| p == b"my own framing"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RawClient<A> {
    inner: Client<A>,
}

impl<A: Copy + Eq + Debug> RawClient<A> {
    /// A client connecting to `server` with `token`, at time `now`: see
    /// [`Client::new`].
    pub fn new(
        config: ConnectionConfig,
        token: &ConnectToken,
        server: A,
        now: Time,
    ) -> Result<Self, ConnectionConfigError> {
        Client::new(config, token, server, now).map(|inner| Self { inner })
    }

    /// A client that tries every server of `token` in turn, each for the token's
    /// timeout: see [`Client::from_token`].
    pub fn from_token(
        config: ConnectionConfig,
        token: &ConnectToken,
        now: Time,
        address: impl FnMut(std::net::SocketAddr) -> A,
    ) -> Result<Self, ConnectionConfigError> {
        Client::from_token(config, token, now, address).map(|inner| Self { inner })
    }

    /// The connection (state, statistics of traffic, counters).
    pub fn connection(&self) -> &Client<A> {
        &self.inner
    }

    /// The state.
    pub fn state(&self) -> ClientState {
        self.inner.state()
    }

    /// `true` when connected.
    pub fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }

    /// Our slot on the server, once connected.
    pub fn client_id(&self) -> Option<ClientId> {
        self.inner.client_id()
    }

    /// Advances to `now`: see [`Client::update`].
    pub fn update(&mut self, now: Time) {
        self.carry_raw();
        self.inner.update(now);
    }

    /// The link carries raw payloads: a token without a timeout means none.
    fn carry_raw(&mut self) {
        if let Some(link) = self.inner.link.as_mut() {
            link.carry_raw();
        }
    }

    /// Handles one datagram from `from` at time `now`; returns the server's payload
    /// when one arrived (1 to [`MAX_PAYLOAD_BYTES`](crate::netcode::MAX_PAYLOAD_BYTES)
    /// bytes, authenticated and not a replay). Everything else (handshake,
    /// keep-alives, disconnect) is done by then; what fails to open is dropped and
    /// counted ([`Client::dropped`]).
    pub fn handle_datagram(&mut self, now: Time, from: A, datagram: &[u8]) -> Option<&[u8]> {
        let range = self.inner.open(now, from, datagram);
        self.carry_raw();
        self.inner.scratch.get(range?)
    }

    /// Sends `payload` to the server as one netcode payload packet.
    pub fn send(&mut self, now: Time, payload: &[u8]) -> Result<(), RawSendError> {
        let client = &mut self.inner;
        let link = match (client.state, client.link.as_mut()) {
            (ClientState::Connected, Some(link)) => link,
            _ => return Err(RawSendError::NotConnected),
        };
        if link.send_raw(
            &mut client.crypto,
            now,
            client.server,
            payload,
            &mut client.transmits,
        ) {
            Ok(())
        } else {
            Err(RawSendError::Size { len: payload.len() })
        }
    }

    /// The client's one drop log, for the driver's own drops.
    pub(crate) fn drop_log(&mut self) -> &mut crate::trace::DropLog {
        self.inner.drop_log()
    }

    /// Writes the next datagram to send into `buf`: see [`Client::poll_transmit`].
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        self.inner.poll_transmit(buf)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.inner.poll_event()
    }

    /// Disconnects: see [`Client::disconnect`].
    pub fn disconnect(&mut self, now: Time) {
        self.inner.disconnect(now);
    }
}
