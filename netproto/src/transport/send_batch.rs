//! The UDP server's sends: the datagrams of a flush, to any number of clients, queued
//! in one preallocated batch and handed to the socket many at a time.
//!
//! On Linux a batch goes out in one `sendmmsg` call (through rustix's safe wrapper):
//! up to [`BATCH_DATAGRAMS`] datagrams, each to its own destination, where `sendmsg`
//! (and quinn-udp's GSO, which batches only datagrams to one destination) cost a call
//! per client. Elsewhere each datagram is one `send_to` call, the plain fallback. The rules
//! are the same on both, and live here, with the socket behind [`Sink`] (which the
//! tests fake):
//!
//! - **Partial sends.** A call that took the first `k` datagrams of the batch is
//!   followed by another from the `k+1`-th.
//! - **A failing destination.** A datagram the system refuses (an address it cannot
//!   reach, a family the socket does not speak) is dropped and counted
//!   ([`TransportStats::datagrams_dropped_send_error`]); the datagrams after it still go.
//! - **No room in the socket's send buffer** (`WouldBlock`). The flush stops; the
//!   datagrams not sent wait, in order, for the next flush, where they go first (those
//!   of the batch here, the rest in the stack's transmit queue). A datagram refused so
//!   by two flushes in a row is dropped and counted: by then the buffer has been full
//!   for a tick, and the datagrams waiting stay bounded by two flushes' worth.
//! - **No allocation** once the batch is built: its bytes and its list are allocated
//!   once, and (on Linux) the system call's headers live on the stack.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use super::TransportStats;
use crate::connection::MAX_DATAGRAM_BYTES;

/// Most datagrams handed to the socket in one call.
pub(crate) const BATCH_DATAGRAMS: usize = 64;

/// Where a flush takes its datagrams from, in order: the server stack's transmit queue.
pub(crate) trait Source {
    /// Copies the next datagram into `buf` (which holds [`MAX_DATAGRAM_BYTES`]) and
    /// returns its destination and length.
    fn poll(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)>;

    /// Datagrams still waiting.
    fn pending(&self) -> usize;
}

/// Where a batch goes: the socket.
pub(crate) trait Sink {
    /// Sends the first datagrams of `batch` (never empty), in order, and returns how
    /// many went (at least one); or the error of the first, which did not go.
    fn send(&mut self, batch: Batch<'_>) -> io::Result<usize>;
}

/// The datagrams of a batch not sent yet, in order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batch<'a> {
    items: &'a [Queued],
    bytes: &'a [u8],
}

impl<'a> Batch<'a> {
    /// How many.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The `i`-th: its destination and bytes.
    pub(crate) fn get(&self, i: usize) -> Option<(SocketAddr, &'a [u8])> {
        let q = self.items.get(i)?;
        Some((q.to, self.bytes.get(q.start..q.start + q.len)?))
    }
}

/// One datagram of the batch: `bytes[start..start + len]` to `to`.
#[derive(Clone, Copy, Debug)]
struct Queued {
    to: SocketAddr,
    start: usize,
    len: usize,
}

/// The batch: datagrams back to back in `bytes`, listed in `items`.
#[derive(Debug)]
pub(crate) struct SendBatch {
    /// [`BATCH_DATAGRAMS`] datagrams of at most [`MAX_DATAGRAM_BYTES`].
    bytes: Box<[u8]>,
    items: Vec<Queued>,
    /// Bytes of `bytes` in use.
    used: usize,
    /// The first item not handed to the socket yet.
    next: usize,
    /// `items[next..stale]` were refused for lack of room by the last flush.
    stale: usize,
    /// Datagrams at the front of the source that the last flush left for lack of room.
    stale_in_source: usize,
}

impl SendBatch {
    pub(crate) fn new() -> Self {
        Self {
            bytes: vec![0; BATCH_DATAGRAMS * MAX_DATAGRAM_BYTES].into_boxed_slice(),
            items: Vec::with_capacity(BATCH_DATAGRAMS),
            used: 0,
            next: 0,
            stale: 0,
            stale_in_source: 0,
        }
    }

    /// Sends what waits in the batch, then every datagram of `source`, a batch at a
    /// time, by the rules of the module. Counts what went and what was dropped in
    /// `stats`; `dropped` is told each dropped datagram's destination and error.
    pub(crate) fn flush(
        &mut self,
        source: &mut impl Source,
        sink: &mut impl Sink,
        stats: &mut TransportStats,
        mut dropped: impl FnMut(SocketAddr, &io::Error),
    ) {
        loop {
            if self.next == self.items.len() {
                self.clear();
            }
            self.fill(source);
            if self.next == self.items.len() {
                return;
            }
            if !self.send_queued(sink, stats, &mut dropped) {
                return self.blocked(source, stats, &mut dropped);
            }
        }
    }

    /// Takes datagrams from `source` until the batch is full or the source empty.
    fn fill(&mut self, source: &mut impl Source) {
        while self.items.len() < BATCH_DATAGRAMS {
            let Some(free) = self.bytes.get_mut(self.used..) else {
                return;
            };
            let Some((to, len)) = source.poll(free) else {
                return;
            };
            self.items.push(Queued {
                to,
                start: self.used,
                len,
            });
            self.used += len;
            if self.stale_in_source > 0 {
                self.stale_in_source -= 1;
                self.stale = self.items.len();
            }
        }
    }

    /// Hands the batch to `sink` until it is sent (`true`) or the socket has no room
    /// (`false`).
    fn send_queued(
        &mut self,
        sink: &mut impl Sink,
        stats: &mut TransportStats,
        dropped: &mut impl FnMut(SocketAddr, &io::Error),
    ) -> bool {
        let mut interrupts = 0;
        while let Some(rest) = self.items.get(self.next..).filter(|r| !r.is_empty()) {
            let batch = Batch {
                items: rest,
                bytes: &self.bytes,
            };
            match sink.send(batch) {
                Ok(0) => return false,
                Ok(n) => {
                    let n = n.min(rest.len());
                    stats.datagrams_sent += n as u64;
                    stats.bytes_sent += rest[..n].iter().map(|q| q.len as u64).sum::<u64>();
                    self.next += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted && interrupts < 3 => {
                    interrupts += 1;
                }
                Err(e) => {
                    stats.datagrams_dropped_send_error += 1;
                    dropped(rest[0].to, &e);
                    self.next += 1;
                }
            }
        }
        true
    }

    /// The socket had no room: what was refused by the last flush too is dropped, the
    /// rest waits for the next one.
    fn blocked(
        &mut self,
        source: &mut impl Source,
        stats: &mut TransportStats,
        dropped: &mut impl FnMut(SocketAddr, &io::Error),
    ) {
        let error = io::Error::from(io::ErrorKind::WouldBlock);
        if self.next < self.stale {
            for q in &self.items[self.next..self.stale] {
                stats.datagrams_dropped_send_error += 1;
                dropped(q.to, &error);
            }
            self.next = self.stale;
            let mut scratch = [0; MAX_DATAGRAM_BYTES];
            for _ in 0..self.stale_in_source {
                let Some((to, _)) = source.poll(&mut scratch) else {
                    break;
                };
                stats.datagrams_dropped_send_error += 1;
                dropped(to, &error);
            }
        }
        self.stale = self.items.len();
        self.stale_in_source = source.pending();
    }

    /// Drops (and counts) what `source` still holds: for a source that will not be
    /// flushed again (the link conditioner's released datagrams).
    pub(crate) fn drop_rest(
        &mut self,
        source: &mut impl Source,
        stats: &mut TransportStats,
        mut dropped: impl FnMut(SocketAddr, &io::Error),
    ) {
        let error = io::Error::from(io::ErrorKind::WouldBlock);
        let mut scratch = [0; MAX_DATAGRAM_BYTES];
        while let Some((to, _)) = source.poll(&mut scratch) {
            stats.datagrams_dropped_send_error += 1;
            dropped(to, &error);
        }
        self.stale_in_source = 0;
    }

    /// Empties the batch for reuse (its memory stays).
    fn clear(&mut self) {
        self.items.clear();
        (self.used, self.next, self.stale) = (0, 0, 0);
    }
}

/// The server's socket as a [`Sink`].
#[derive(Debug)]
pub(crate) struct SocketSink<'a>(pub(crate) &'a UdpSocket);

/// Linux: the whole batch in one `sendmmsg` call.
#[cfg(target_os = "linux")]
impl Sink for SocketSink<'_> {
    fn send(&mut self, batch: Batch<'_>) -> io::Result<usize> {
        // The headers live on the stack in arrays of a fixed size, every slot built:
        // the smallest of three sizes that holds the batch, so that a small server's
        // tick (a few datagrams) does not build 64.
        match batch.len() {
            0..=8 => sendmmsg_in::<8>(self.0, batch),
            9..=24 => sendmmsg_in::<24>(self.0, batch),
            _ => sendmmsg_in::<BATCH_DATAGRAMS>(self.0, batch),
        }
    }
}

/// One `sendmmsg` of up to `N` datagrams of `batch` (`N <= BATCH_DATAGRAMS`).
#[cfg(target_os = "linux")]
fn sendmmsg_in<const N: usize>(socket: &UdpSocket, batch: Batch<'_>) -> io::Result<usize> {
    use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny, sendmmsg};
    use std::io::IoSlice;

    // The system call's headers, on the stack: each borrows its datagram's bytes,
    // destination and (empty) ancillary buffer, so nothing is allocated, and the
    // call returns how many datagrams went. The slots past the batch (an empty
    // datagram to 0.0.0.0:0) are not handed to the system.
    let n = batch.len().min(N);
    let unused = SocketAddr::from(([0, 0, 0, 0], 0));
    let slices: [[IoSlice<'_>; 1]; N] = core::array::from_fn(|i| {
        [IoSlice::new(
            batch.get(i).map_or(&[][..], |(_, bytes)| bytes),
        )]
    });
    let addresses: [SocketAddrAny; N] =
        core::array::from_fn(|i| SocketAddrAny::from(batch.get(i).map_or(unused, |(to, _)| to)));
    let mut controls: [SendAncillaryBuffer<'_, '_, '_>; N] =
        core::array::from_fn(|_| SendAncillaryBuffer::default());
    let mut i = 0;
    let mut headers: [MMsgHdr<'_>; N] = controls.each_mut().map(|control| {
        let header = MMsgHdr::new_with_addr(&addresses[i], &slices[i], control);
        i += 1;
        header
    });
    Ok(sendmmsg(socket, &mut headers[..n], SendFlags::empty())?)
}

/// Elsewhere: one datagram per call.
#[cfg(not(target_os = "linux"))]
impl Sink for SocketSink<'_> {
    fn send(&mut self, batch: Batch<'_>) -> io::Result<usize> {
        let Some((to, bytes)) = batch.get(0) else {
            return Ok(0);
        };
        self.0.send_to(bytes, to).map(|_| 1)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// Datagrams to send: `(destination, bytes)`.
    #[derive(Default)]
    struct Queue(VecDeque<(SocketAddr, Vec<u8>)>);

    impl Queue {
        /// `n` datagrams from `first`, datagram `i` to port `1000 + i`, its bytes `i`
        /// repeated `10 + i % 50` times.
        fn numbered(first: usize, n: usize) -> Self {
            Self(
                (first..first + n)
                    .map(|i| (addr(i), vec![i as u8; 10 + i % 50]))
                    .collect(),
            )
        }
    }

    impl Source for Queue {
        fn poll(&mut self, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
            let (to, bytes) = self.0.pop_front()?;
            buf[..bytes.len()].copy_from_slice(&bytes);
            Some((to, bytes.len()))
        }

        fn pending(&self) -> usize {
            self.0.len()
        }
    }

    fn addr(i: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 1000 + i as u16))
    }

    /// A socket that behaves as `sendmmsg` does: it sends the datagrams of a call up
    /// to its `limit` and up to the first that fails, and reports that one's error
    /// when it comes first.
    #[derive(Default)]
    struct FakeSocket {
        /// Datagrams sent, in order.
        sent: Vec<(SocketAddr, Vec<u8>)>,
        /// Calls made.
        calls: usize,
        /// Most datagrams taken per call (none: all).
        limit: Option<usize>,
        /// Destinations that fail.
        failing: Vec<SocketAddr>,
        /// Datagrams the send buffer takes before it is full (none: no end).
        room: Option<usize>,
    }

    impl Sink for FakeSocket {
        fn send(&mut self, batch: Batch<'_>) -> io::Result<usize> {
            self.calls += 1;
            assert!(batch.len() > 0 && batch.len() <= BATCH_DATAGRAMS);
            let limit = self.limit.unwrap_or(usize::MAX).min(batch.len());
            let mut n = 0;
            while n < limit {
                let Some((to, bytes)) = batch.get(n) else {
                    break;
                };
                if self.room == Some(0) || self.failing.contains(&to) {
                    break;
                }
                self.sent.push((to, bytes.to_vec()));
                if let Some(room) = &mut self.room {
                    *room -= 1;
                }
                n += 1;
            }
            match batch.get(0) {
                _ if n > 0 => Ok(n),
                Some((to, _)) if self.failing.contains(&to) => {
                    Err(io::Error::from(io::ErrorKind::AddrNotAvailable))
                }
                _ => Err(io::Error::from(io::ErrorKind::WouldBlock)),
            }
        }
    }

    fn flush(
        batch: &mut SendBatch,
        source: &mut Queue,
        socket: &mut FakeSocket,
        stats: &mut TransportStats,
    ) -> Vec<(SocketAddr, io::ErrorKind)> {
        let mut dropped = Vec::new();
        batch.flush(source, socket, stats, |to, e| dropped.push((to, e.kind())));
        dropped
    }

    #[test]
    fn datagrams_to_many_destinations_go_in_order_a_batch_per_call() {
        let mut source = Queue::numbered(0, 1000);
        let expected = source.0.clone();
        let (mut batch, mut socket) = (SendBatch::new(), FakeSocket::default());
        let mut stats = TransportStats::default();
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        assert_eq!(socket.sent, Vec::from(expected.clone()));
        assert_eq!(socket.calls, 1000usize.div_ceil(BATCH_DATAGRAMS));
        assert_eq!(stats.datagrams_sent, 1000);
        let bytes: usize = expected.iter().map(|(_, b)| b.len()).sum();
        assert_eq!(stats.bytes_sent, bytes as u64);
        assert_eq!(stats.datagrams_dropped_send_error, 0);
        assert_eq!(source.pending(), 0);
    }

    #[test]
    fn a_partial_send_continues_from_the_first_datagram_not_sent() {
        let mut source = Queue::numbered(0, 100);
        let expected = source.0.clone();
        let mut socket = FakeSocket {
            limit: Some(7),
            ..FakeSocket::default()
        };
        let (mut batch, mut stats) = (SendBatch::new(), TransportStats::default());
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        assert_eq!(socket.sent, Vec::from(expected));
        // 64 in 10 calls (7 each, then 1), 36 in 6 (7 each, then 1).
        assert_eq!(socket.calls, 16);
        assert_eq!(stats.datagrams_sent, 100);
    }

    #[test]
    fn a_failing_destination_drops_its_datagrams_alone_and_counts_them() {
        let mut source = Queue::numbered(0, 150);
        let bad = [addr(3), addr(70), addr(71), addr(149)];
        let expected: Vec<_> = source
            .0
            .iter()
            .filter(|(to, _)| !bad.contains(to))
            .cloned()
            .collect();
        let mut socket = FakeSocket {
            failing: bad.to_vec(),
            ..FakeSocket::default()
        };
        let (mut batch, mut stats) = (SendBatch::new(), TransportStats::default());
        let dropped = flush(&mut batch, &mut source, &mut socket, &mut stats);
        assert_eq!(socket.sent, expected);
        let kind = io::ErrorKind::AddrNotAvailable;
        assert_eq!(dropped, bad.map(|to| (to, kind)));
        assert_eq!(stats.datagrams_sent, 146);
        assert_eq!(stats.datagrams_dropped_send_error, 4);
    }

    #[test]
    fn would_block_keeps_the_datagrams_for_the_next_flush_in_order() {
        // The send buffer takes 100 of the first flush's 200 datagrams.
        let mut source = Queue::numbered(0, 200);
        let expected = source.0.clone();
        let mut socket = FakeSocket {
            room: Some(100),
            ..FakeSocket::default()
        };
        let (mut batch, mut stats) = (SendBatch::new(), TransportStats::default());
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        assert_eq!(stats.datagrams_sent, 100);
        assert_eq!(stats.datagrams_dropped_send_error, 0);
        // 28 wait in the batch, 72 in the source.
        assert_eq!(source.pending(), 72);

        // The next tick adds 30; the socket has room again: the waiting ones go first.
        source.0.extend(Queue::numbered(200, 30).0);
        socket.room = None;
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        let mut all = Vec::from(expected);
        all.extend(Queue::numbered(200, 30).0);
        assert_eq!(socket.sent, all);
        assert_eq!(stats.datagrams_sent, 230);
        assert_eq!(stats.datagrams_dropped_send_error, 0);
        assert_eq!(source.pending(), 0);
    }

    #[test]
    fn a_datagram_refused_by_two_flushes_in_a_row_is_dropped_and_counted() {
        let mut source = Queue::numbered(0, 200);
        let mut socket = FakeSocket {
            room: Some(100),
            ..FakeSocket::default()
        };
        let (mut batch, mut stats) = (SendBatch::new(), TransportStats::default());
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        // The next tick's 30; the buffer is still full: the 100 left by the first
        // flush are dropped, the 30 wait.
        source.0.extend(Queue::numbered(200, 30).0);
        let dropped = flush(&mut batch, &mut source, &mut socket, &mut stats);
        let kind = io::ErrorKind::WouldBlock;
        assert_eq!(
            dropped,
            (100..200).map(|i| (addr(i), kind)).collect::<Vec<_>>()
        );
        assert_eq!(stats.datagrams_dropped_send_error, 100);
        assert_eq!(source.pending(), 30);
        // Room again: the 30 go, nothing else was lost.
        socket.room = None;
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        assert_eq!(stats.datagrams_sent, 130);
        let last: Vec<_> = socket.sent[100..].to_vec();
        assert_eq!(last, Vec::from(Queue::numbered(200, 30).0));
    }

    #[test]
    fn would_block_within_the_batch_keeps_the_rest_of_the_batch() {
        // 10 of a batch of 40 go, 30 wait in the batch (nothing in the source).
        let mut source = Queue::numbered(0, 40);
        let mut socket = FakeSocket {
            room: Some(10),
            limit: Some(4),
            ..FakeSocket::default()
        };
        let (mut batch, mut stats) = (SendBatch::new(), TransportStats::default());
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        assert_eq!((stats.datagrams_sent, source.pending()), (10, 0));
        socket.room = None;
        assert!(flush(&mut batch, &mut source, &mut socket, &mut stats).is_empty());
        assert_eq!(socket.sent, Vec::from(Queue::numbered(0, 40).0));
    }

    #[test]
    fn the_batch_does_not_grow() {
        let (mut batch, mut socket) = (SendBatch::new(), FakeSocket::default());
        let mut stats = TransportStats::default();
        let (bytes, items) = (batch.bytes.as_ptr(), batch.items.capacity());
        for tick in 0..20 {
            let mut source = Queue::numbered(tick * 10, 300);
            flush(&mut batch, &mut source, &mut socket, &mut stats);
        }
        assert_eq!(stats.datagrams_sent, 20 * 300);
        assert_eq!(
            (batch.bytes.as_ptr(), batch.items.capacity()),
            (bytes, items)
        );
    }

    #[test]
    fn the_socket_sends_batches_of_every_header_array_size() {
        // Around the sizes of the header arrays (8, 24, 64) and beyond one call.
        let receiver = UdpSocket::bind("127.0.0.1:0").expect("bind");
        receiver
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let to = receiver.local_addr().expect("address");
        let sender = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sender.set_nonblocking(true).expect("non-blocking");
        let mut batch = SendBatch::new();
        for n in [1usize, 8, 9, 24, 25, 64, 65, 100] {
            let mut source = Queue::default();
            for i in 0..n {
                source.0.push_back((to, vec![n as u8, i as u8]));
            }
            let mut stats = TransportStats::default();
            batch.flush(
                &mut source,
                &mut SocketSink(&sender),
                &mut stats,
                |to, _| panic!("{to} refused"),
            );
            assert_eq!(stats.datagrams_sent, n as u64, "batch of {n}");
            let mut buf = [0; 16];
            for i in 0..n {
                let (len, _) = receiver
                    .recv_from(&mut buf)
                    .expect("every datagram arrives");
                assert_eq!(&buf[..len], &[n as u8, i as u8], "batch of {n}");
            }
        }
    }

    #[test]
    fn the_socket_sends_a_batch_to_many_destinations_and_skips_a_failing_one() {
        // Real sockets: on Linux one sendmmsg call per batch, elsewhere send_to.
        let receivers: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").expect("bind"))
            .collect();
        let sender = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sender.set_nonblocking(true).expect("non-blocking");
        let to = |r: &UdpSocket| r.local_addr().expect("address");
        // An IPv6 destination from an IPv4 socket: refused by the system.
        let unreachable: SocketAddr = "[::1]:9".parse().expect("address");
        let mut source = Queue::default();
        for round in 0..30u8 {
            for (i, r) in receivers.iter().enumerate() {
                source.0.push_back((to(r), vec![round, i as u8]));
            }
            if round % 10 == 5 {
                source.0.push_back((unreachable, vec![round]));
            }
        }
        let (mut batch, mut stats) = (SendBatch::new(), TransportStats::default());
        let mut dropped = Vec::new();
        batch.flush(
            &mut source,
            &mut SocketSink(&sender),
            &mut stats,
            |to, _| dropped.push(to),
        );
        assert_eq!(dropped, [unreachable; 3]);
        assert_eq!(stats.datagrams_sent, 90);
        assert_eq!(stats.datagrams_dropped_send_error, 3);
        for (i, r) in receivers.iter().enumerate() {
            r.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .expect("timeout");
            let mut buf = [0; 16];
            for round in 0..30u8 {
                let (n, from) = r.recv_from(&mut buf).expect("every datagram arrives");
                assert_eq!((&buf[..n], from), (&[round, i as u8][..], to(&sender)));
            }
        }
    }
}
