//! One non-blocking UDP socket read and written one datagram per call: the socket
//! loop of the netcode-only transport ([`NetcodeServer`](super::NetcodeServer),
//! [`NetcodeClient`](super::NetcodeClient)), with the transport's counters, its
//! rate-limited drop log and the seam where a link conditioner sits.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use super::seam::Seam;
use super::{RECV_BUFFER_SIZE, Recv, TransportError, TransportStats, recv};
use crate::Time;
use crate::connection::MAX_DATAGRAM_BYTES;
use crate::trace::{self, DropLog};

/// A socket with its buffers and counters.
#[derive(Debug)]
pub(crate) struct PlainSocket {
    socket: UdpSocket,
    recv_buf: Box<[u8]>,
    send_buf: Box<[u8]>,
    pub(crate) counters: TransportStats,
    side: &'static str,
    /// Where a link conditioner holds the datagrams (feature `conditioner`).
    pub(crate) seam: Seam,
}

impl PlainSocket {
    /// `socket`, made non-blocking; `side` names it in the logs and in the
    /// conditioner's environment variable.
    pub(crate) fn new(socket: UdpSocket, side: &'static str) -> Result<Self, TransportError> {
        socket.set_nonblocking(true)?;
        Ok(Self {
            seam: Seam::new(side)?,
            socket,
            recv_buf: vec![0; RECV_BUFFER_SIZE].into_boxed_slice(),
            send_buf: vec![0; MAX_DATAGRAM_BYTES].into_boxed_slice(),
            counters: TransportStats::default(),
            side,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.socket.local_addr()?)
    }

    /// Hands each waiting datagram to `handle` (through the conditioner, when there
    /// is one, with the held datagrams due at `now`), at most
    /// [`MAX_DATAGRAMS_PER_UPDATE`](super::MAX_DATAGRAMS_PER_UPDATE) read; transient
    /// errors are skipped and counted, others returned.
    pub(crate) fn receive(
        &mut self,
        now: Time,
        mut handle: impl FnMut(SocketAddr, &[u8]),
    ) -> Result<(), TransportError> {
        for _ in 0..super::MAX_DATAGRAMS_PER_UPDATE {
            let (len, from) = match recv(&self.socket, &mut self.recv_buf)? {
                Recv::Datagram(len, from) => (len, from),
                Recv::Empty => break,
                Recv::Skip => {
                    self.counters.receive_errors_skipped += 1;
                    continue;
                }
            };
            self.counters.datagrams_received += 1;
            self.counters.bytes_received += len as u64;
            let datagram = self.recv_buf.get(..len).unwrap_or_default();
            self.seam.receive(now, from, datagram, &mut handle);
        }
        self.seam.release_received(now, handle);
        Ok(())
    }

    /// Sends every datagram `source` writes (into a buffer of
    /// [`MAX_DATAGRAM_BYTES`]), through the conditioner when there is one, and the
    /// held ones due at `now`; a refused send is counted and logged in the source's
    /// drop log (its connection's: one per server or client).
    pub(crate) fn send_all(&mut self, now: Time, source: &mut impl Source) {
        let Self {
            socket,
            send_buf,
            counters,
            side,
            seam,
            ..
        } = self;
        while let Some((to, len)) = source.poll_transmit(send_buf) {
            let log = source.drop_log();
            seam.send(now, to, send_buf.get(..len).unwrap_or_default(), |to, d| {
                send_counted(socket, counters, log, side, now, to, d);
            });
        }
        let log = source.drop_log();
        seam.release_sends(now, |to, d| {
            send_counted(socket, counters, log, side, now, to, d);
        });
    }
}

/// What [`PlainSocket::send_all`] sends: a connection's transmit queue and its drop
/// log.
pub(crate) trait Source {
    /// Writes the next datagram into `buf`; its destination and length.
    fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)>;
    /// The connection's drop log.
    fn drop_log(&mut self) -> &mut DropLog;
}

impl Source for crate::connection::RawServer<SocketAddr> {
    fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        Self::poll_transmit(self, buf)
    }

    fn drop_log(&mut self) -> &mut DropLog {
        Self::drop_log(self)
    }
}

impl Source for crate::connection::RawClient<SocketAddr> {
    fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        Self::poll_transmit(self, buf)
    }

    fn drop_log(&mut self) -> &mut DropLog {
        Self::drop_log(self)
    }
}

/// Sends `datagram` to `to` on `socket`, counted in `counters`; a refused send is
/// counted and logged (rate-limited by `drop_log`) as `side`'s.
pub(crate) fn send_counted(
    socket: &UdpSocket,
    counters: &mut TransportStats,
    drop_log: &mut DropLog,
    side: &'static str,
    now: Time,
    to: SocketAddr,
    datagram: &[u8],
) {
    match socket.send_to(datagram, to) {
        Ok(_) => {
            counters.datagrams_sent += 1;
            counters.bytes_sent += datagram.len() as u64;
        }
        Err(error) => {
            counters.datagrams_dropped_send_error += 1;
            trace::log_drop!(
                drop_log,
                now,
                side,
                addr = ?to,
                reason = %trace::DropReason::SendFailed,
                datagrams = 1,
                %error,
                "dropped"
            );
        }
    }
}

/// The address a client socket binds for the servers of a token: an ephemeral port of
/// the first server's address family, on the loopback interface when every server is
/// on it, on every interface otherwise (a server of the other family cannot be reached
/// from it, and is given up after its timeout).
pub(crate) fn local_for(servers: &[SocketAddr]) -> Option<SocketAddr> {
    let first = *servers.first()?;
    let loopback = servers.iter().all(|a| a.ip().is_loopback());
    let ip = match (loopback, first) {
        (true, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        (true, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        (false, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (false, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    Some(SocketAddr::new(ip, 0))
}
