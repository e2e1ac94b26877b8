//! [`RawServer`]: a netcode server whose payload packets carry the caller's bytes.

use core::fmt::Debug;
use core::hash::Hash;
use std::time::Duration;

use super::super::RawSendError;
use super::super::config::{ConnectionConfigError, ServerConfig};
use super::super::event::{ClientId, ServerEvent};
use super::Server;
use crate::Time;

/// A netcode 1.02 server whose payload packets carry the caller's bytes as they are,
/// the server side of [`RawClient`](super::super::RawClient) (see it for an
/// exchange): no packet endpoint inside, so that a plain netcode client's payloads
/// arrive one by one as it sent them. Sans-IO like [`Server`], whose handshake,
/// token checks, slots, keep-alives, timeouts and counters it uses.
/// [`transport::NetcodeServer`](crate::transport::NetcodeServer) drives it over UDP.
///
/// A client whose token set no timeout is never timed out for silence
/// ([`ConnectionConfig::allow_no_timeout`](super::super::ConnectionConfig::allow_no_timeout)):
/// [`silent_for`](Self::silent_for) tells the application how long each has been
/// silent, to disconnect it by a rule of its own.
#[derive(Debug)]
pub struct RawServer<A> {
    inner: Server<A>,
}

impl<A: Copy + Eq + Hash + Debug> RawServer<A> {
    /// A server with `config` at time `now`, when the Unix time is `unix_time`: see
    /// [`Server::new`].
    pub fn new(
        config: ServerConfig,
        now: Time,
        unix_time: u64,
    ) -> Result<Self, ConnectionConfigError> {
        Server::new(config, now, unix_time).map(|inner| Self { inner })
    }

    /// The connection server: clients, addresses, user ids and data, counters.
    pub fn connection(&self) -> &Server<A> {
        &self.inner
    }

    /// The connected clients, in slot order.
    pub fn clients(&self) -> impl Iterator<Item = (ClientId, A)> + '_ {
        self.inner.clients()
    }

    /// How long `client` has been silent (nothing opened from it) at `now`.
    pub fn silent_for(&self, now: Time, client: ClientId) -> Option<Duration> {
        let slot = self.inner.slot(client)?;
        Some(Duration::from_secs_f64(
            now.secs_since(slot.link.last_received).max(0.0),
        ))
    }

    /// Advances to `now`: see [`Server::update`].
    pub fn update(&mut self, now: Time) {
        for slot in self.inner.slots.iter_mut().flatten() {
            slot.link.carry_raw();
        }
        self.inner.update(now);
    }

    /// Handles one datagram from `from` at time `now`; returns the client and its
    /// payload when one arrived (1 to
    /// [`MAX_PAYLOAD_BYTES`](crate::netcode::MAX_PAYLOAD_BYTES) bytes, authenticated
    /// and not a replay). Everything else is done by then; what fails is dropped and
    /// counted ([`Server::server_stats`]).
    pub fn handle_datagram(
        &mut self,
        now: Time,
        from: A,
        datagram: &[u8],
    ) -> Option<(ClientId, &[u8])> {
        let (index, range) = self.inner.open_datagram(now, from, datagram)?;
        let payload = self.inner.scratch.get(range)?;
        Some((ClientId(index as u16), payload))
    }

    /// Sends `payload` to `client` as one netcode payload packet (after a keep-alive
    /// while the client has not answered yet: it tells it it is connected).
    pub fn send(
        &mut self,
        now: Time,
        client: ClientId,
        payload: &[u8],
    ) -> Result<(), RawSendError> {
        let mut sender = self
            .inner
            .sender(client)
            .ok_or(RawSendError::NotConnected)?;
        if sender.send_raw(now, payload) {
            Ok(())
        } else {
            Err(RawSendError::Size { len: payload.len() })
        }
    }

    /// The server's one drop log, for the driver's own drops.
    pub(crate) fn drop_log(&mut self) -> &mut crate::trace::DropLog {
        self.inner.drop_log()
    }

    /// Writes the next datagram to send into `buf`: see [`Server::poll_transmit`].
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        self.inner.poll_transmit(buf)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ServerEvent<A>> {
        self.inner.poll_event()
    }

    /// Disconnects `client` (sends the disconnect packets); `false` if it was not
    /// connected.
    pub fn disconnect(&mut self, now: Time, client: ClientId) -> bool {
        self.inner.disconnect(now, client)
    }

    /// Disconnects every client.
    pub fn disconnect_all(&mut self, now: Time) {
        self.inner.disconnect_all(now);
    }
}
