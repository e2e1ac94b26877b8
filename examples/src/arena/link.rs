//! A simulated last mile over real UDP: the library's link conditioner (the network
//! simulator's link model) between one client and the server.

use netproto::Time;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

use netproto::sim::LinkConfig;
use netproto::transport::conditioner::{Conditioner, ConditionerConfig};

/// What a [`SimLink`] carried: the simulator's ground truth, which the connections'
/// estimates are checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WireStats {
    /// Datagrams the client sent into the link.
    pub up_datagrams: u64,
    /// Their bytes (UDP payload).
    pub up_bytes: u64,
    /// Datagrams the server sent into the link.
    pub down_datagrams: u64,
    /// Their bytes (UDP payload).
    pub down_bytes: u64,
    /// Datagrams of the client the simulator lost.
    pub up_lost: u64,
    /// Datagrams of the server the simulator lost.
    pub down_lost: u64,
    /// Datagrams delivered to the server, and the sum of their delays, seconds.
    pub up_delivered: (u64, f64),
    /// Datagrams delivered to the client, and the sum of their delays, seconds.
    pub down_delivered: (u64, f64),
    /// Datagrams from anyone but the client or the server, ignored.
    pub strangers: u64,
}

impl WireStats {
    /// Datagrams the two ends put on the wire.
    pub fn datagrams(&self) -> u64 {
        self.up_datagrams + self.down_datagrams
    }

    /// Bytes the two ends put on the wire.
    pub fn bytes(&self) -> u64 {
        self.up_bytes + self.down_bytes
    }

    /// Datagrams the simulator lost, both ways.
    pub fn lost(&self) -> u64 {
        self.up_lost + self.down_lost
    }

    /// What was carried since `earlier` (a snapshot of the same link).
    pub fn since(&self, earlier: &WireStats) -> WireStats {
        let delivered = |(n, d): (u64, f64), (n0, d0): (u64, f64)| (n - n0, d - d0);
        WireStats {
            up_datagrams: self.up_datagrams - earlier.up_datagrams,
            up_bytes: self.up_bytes - earlier.up_bytes,
            down_datagrams: self.down_datagrams - earlier.down_datagrams,
            down_bytes: self.down_bytes - earlier.down_bytes,
            up_lost: self.up_lost - earlier.up_lost,
            down_lost: self.down_lost - earlier.down_lost,
            up_delivered: delivered(self.up_delivered, earlier.up_delivered),
            down_delivered: delivered(self.down_delivered, earlier.down_delivered),
            strangers: self.strangers - earlier.strangers,
        }
    }

    /// The mean round trip on the link, ms: the mean delay of the datagrams
    /// delivered each way, added (`None` until both ways delivered one).
    pub fn mean_rtt_ms(&self) -> Option<f64> {
        let mean = |(n, sum): (u64, f64)| (n > 0).then(|| sum / n as f64);
        Some((mean(self.up_delivered)? + mean(self.down_delivered)?) * 1000.0)
    }

    /// The share of the client's datagrams the link lost (`None` before one was
    /// sent): the truth of the client's loss estimate.
    pub fn up_loss(&self) -> Option<f64> {
        (self.up_datagrams > 0).then(|| self.up_lost as f64 / self.up_datagrams as f64)
    }
}

/// One client's link to the server through a link conditioner
/// ([`netproto::transport::conditioner`], the [network simulator](netproto::sim)'s
/// link model), as a proxy:
/// the client sends to [`address`](Self::address); the link delays, loses,
/// duplicates and reorders the datagram by its [`LinkConfig`] and forwards it to the
/// server from a socket of its own (so the server sees one address per link), and
/// the same for the way back.
///
/// The first address that sends to the link is its client; datagrams from anyone
/// else are counted and dropped. Call [`pump`](Self::pump) often (every millisecond
/// or two): delivery times are only as precise as the calls.
#[derive(Debug)]
pub struct SimLink {
    front: UdpSocket,
    back: UdpSocket,
    server: SocketAddr,
    client: Option<SocketAddr>,
    /// Client to server ("outgoing") and server to client ("incoming"), each with
    /// its own counters, so that each way's losses are known.
    conditioner: Conditioner<SocketAddr>,
    epoch: Instant,
    buf: Vec<u8>,
    stats: WireStats,
}

impl SimLink {
    /// A link to `server` on the loopback interface, with `config` both ways and the
    /// simulator seeded with `seed`.
    pub fn new(server: SocketAddr, config: LinkConfig, seed: u64) -> io::Result<Self> {
        let front = UdpSocket::bind("127.0.0.1:0")?;
        let back = UdpSocket::bind("127.0.0.1:0")?;
        front.set_nonblocking(true)?;
        back.set_nonblocking(true)?;
        Ok(Self {
            front,
            back,
            server,
            client: None,
            conditioner: Conditioner::new(ConditionerConfig::both(config).with_seed(seed)),
            epoch: Instant::now(),
            buf: vec![0; 65536],
            stats: WireStats::default(),
        })
    }

    /// The address the client should connect to.
    pub fn address(&self) -> io::Result<SocketAddr> {
        self.front.local_addr()
    }

    /// The address the server sees for this link's client.
    pub fn server_side_address(&self) -> io::Result<SocketAddr> {
        self.back.local_addr()
    }

    /// What the link carried so far.
    pub fn stats(&self) -> WireStats {
        let mut stats = self.stats;
        let c = self.conditioner.stats();
        stats.up_lost = c.outgoing.datagrams_dropped + c.outgoing.datagrams_dropped_queue_full;
        stats.down_lost = c.incoming.datagrams_dropped + c.incoming.datagrams_dropped_queue_full;
        stats
    }

    /// Reads what both ends sent, hands it to the simulator, and forwards what the
    /// simulator delivers by now.
    pub fn pump(&mut self) -> io::Result<()> {
        let now = self.epoch.elapsed().as_secs_f64();
        while let Some((len, from)) = recv(&self.front, &mut self.buf)? {
            if *self.client.get_or_insert(from) != from {
                self.stats.strangers += 1;
                continue;
            }
            self.stats.up_datagrams += 1;
            self.stats.up_bytes += len as u64;
            let server = self.server;
            self.conditioner
                .send(Time::from_secs_f64(now), server, &self.buf[..len]);
        }
        while let Some((len, from)) = recv(&self.back, &mut self.buf)? {
            if from != self.server {
                self.stats.strangers += 1;
                continue;
            }
            self.stats.down_datagrams += 1;
            self.stats.down_bytes += len as u64;
            self.conditioner
                .receive(Time::from_secs_f64(now), from, &self.buf[..len]);
        }
        let at = Time::from_secs_f64(now);
        loop {
            let (to_server, delivery, delivered) = if let Some(d) = self.conditioner.poll_send(at) {
                (true, d, &mut self.stats.up_delivered)
            } else if let Some(d) = self.conditioner.poll_receive(at) {
                (false, d, &mut self.stats.down_delivered)
            } else {
                break;
            };
            // Delayed by the conditioner until now (the pump's time, when it forwards).
            delivered.0 += 1;
            delivered.1 += now - delivery.sent_at.as_secs_f64();
            let sent = if to_server {
                self.back.send_to(&delivery.bytes, self.server)
            } else if let Some(client) = self.client {
                self.front.send_to(&delivery.bytes, client)
            } else {
                continue;
            };
            // A refused send is a lost datagram, as on a real network.
            if let Err(e) = sent
                && !transient(&e)
                && e.kind() != ErrorKind::WouldBlock
            {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// One non-blocking read: `None` when nothing waits; transient errors are skipped.
fn recv(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
    loop {
        match socket.recv_from(buf) {
            Ok(got) => return Ok(Some(got)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(None),
            Err(e) if transient(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// An error a UDP socket reports after an ICMP message about an earlier send.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused | ErrorKind::Interrupted
    )
}
