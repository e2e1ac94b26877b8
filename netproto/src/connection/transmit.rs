//! Datagrams waiting to be sent, sealed, in one reusable byte arena.

use std::collections::VecDeque;

use crate::netcode::{self, Key, Packet};

/// The largest datagram a connection sends: a payload packet with the largest body
/// (the 1078-byte connection request is smaller). A buffer of this size always holds
/// what [`poll_transmit`](super::Server::poll_transmit) writes.
pub const MAX_DATAGRAM_BYTES: usize = netcode::MAX_PACKET_BYTES;

/// Sealed datagrams in order, their bytes back to back in one buffer that is reused
/// once drained: no allocation per datagram in steady state.
#[derive(Debug)]
pub(crate) struct TransmitQueue<A> {
    /// The arena: its first `used` bytes hold the queued datagrams; past them, bytes
    /// of earlier ones (a datagram is written over them, so the arena is zeroed only
    /// where it grows, not at every push).
    bytes: Vec<u8>,
    used: usize,
    /// (destination, start, length) of each datagram in `bytes`.
    queue: VecDeque<(A, usize, usize)>,
    /// Datagrams dropped because the caller's buffer was too small.
    pub(crate) truncated: u64,
}

impl<A: Copy> TransmitQueue<A> {
    pub(crate) fn new() -> Self {
        Self {
            bytes: Vec::new(),
            used: 0,
            queue: VecDeque::new(),
            truncated: 0,
        }
    }

    /// Writes `packet` sealed with `key` and `sequence` at the back of the queue and
    /// returns its length. Returns `None` if it could not be written (a payload
    /// larger than netcode carries): nothing is queued then.
    pub(crate) fn push(
        &mut self,
        to: A,
        packet: &Packet<'_>,
        sequence: u64,
        key: &Key,
        protocol_id: u64,
    ) -> Option<usize> {
        let start = self.used;
        let end = start + MAX_DATAGRAM_BYTES;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        let out = self.bytes.get_mut(start..end)?;
        let len = netcode::write_packet(packet, sequence, key, protocol_id, out).ok()?;
        self.used = start + len;
        self.queue.push_back((to, start, len));
        Some(len)
    }

    /// Copies the next datagram into `buf` and returns its destination and length.
    /// A datagram larger than `buf` is dropped (and counted); a buffer of
    /// [`MAX_DATAGRAM_BYTES`] always holds one.
    pub(crate) fn pop(&mut self, buf: &mut [u8]) -> Option<(A, usize)> {
        loop {
            let (to, start, len) = self.queue.pop_front()?;
            if self.queue.is_empty() {
                // Everything is drained after this one: reuse the arena from its start.
                let out = self.copy(start, len, buf);
                self.used = 0;
                match out {
                    Some(n) => return Some((to, n)),
                    None => return None,
                }
            }
            if let Some(n) = self.copy(start, len, buf) {
                return Some((to, n));
            }
        }
    }

    fn copy(&mut self, start: usize, len: usize, buf: &mut [u8]) -> Option<usize> {
        let (Some(src), Some(dst)) = (self.bytes.get(start..start + len), buf.get_mut(..len))
        else {
            self.truncated += 1;
            return None;
        };
        dst.copy_from_slice(src);
        Some(len)
    }

    /// Datagrams waiting.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Bytes held by the arena (its capacity).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_come_out_in_order_and_the_arena_is_reused() {
        let key = Key::from_bytes([1; 32]);
        let mut queue = TransmitQueue::new();
        for i in 0..3u8 {
            assert!(
                queue
                    .push(i, &Packet::Payload(&[i; 10]), u64::from(i), &key, 9)
                    .is_some()
            );
        }
        assert_eq!(queue.len(), 3);
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        let mut got = Vec::new();
        while let Some((to, len)) = queue.pop(&mut buf) {
            // prefix, 1 sequence byte, 10 sealed bytes, 16-byte tag
            assert_eq!(len, 1 + 1 + 10 + 16);
            got.push(to);
        }
        assert_eq!(got, [0, 1, 2]);
        let capacity = queue.capacity();
        assert!(capacity >= 28);
        assert!(
            queue
                .push(7, &Packet::Payload(&[7; 10]), 3, &key, 9)
                .is_some()
        );
        assert_eq!(queue.capacity(), capacity, "no new allocation once drained");
    }

    #[test]
    fn a_buffer_too_small_drops_the_datagram_and_counts_it() {
        let key = Key::from_bytes([1; 32]);
        let mut queue = TransmitQueue::new();
        assert!(
            queue
                .push(0u8, &Packet::Payload(&[0; 100]), 0, &key, 9)
                .is_some()
        );
        assert!(
            queue
                .push(1u8, &Packet::Payload(&[0; 1]), 1, &key, 9)
                .is_some()
        );
        let mut small = [0u8; 64];
        assert_eq!(queue.pop(&mut small), Some((1, 1 + 1 + 1 + 16)));
        assert_eq!(queue.truncated, 1);
        assert_eq!(queue.pop(&mut small), None);
    }

    #[test]
    fn an_oversized_payload_is_not_queued() {
        let key = Key::from_bytes([1; 32]);
        let mut queue = TransmitQueue::new();
        let big = vec![0u8; netcode::MAX_PAYLOAD_BYTES + 1];
        assert!(
            queue
                .push(0u8, &Packet::Payload(&big), 0, &key, 9)
                .is_none()
        );
        assert_eq!(queue.len(), 0);
    }
}
