//! The unreliable channels (unordered and sequenced): each message sent at most once,
//! bounded queues.

use std::collections::VecDeque;

use super::encoded::{KeptMessage, Payload, PayloadRef};
use super::ring::Ring;
use crate::stream::NetMessage;

/// Messages waiting for their one transmission, oldest first, with their measured
/// bits and, for a tracked message, its receipt. Full queue: `send` refuses the new
/// message (the caller decides what to drop).
///
/// A [`Ring`] of slots that keep their messages ([`KeptMessage`]), so queuing a small
/// message or a broadcast's encoding does not write a whole message set's worth of
/// bytes.
#[derive(Debug)]
pub(crate) struct UnreliableSender<M> {
    queue: Ring<SendSlot<M>>,
    capacity: usize,
    /// Sequenced channels: the id the next message written gets.
    next_id: u16,
    /// The receipt the next tracked message gets.
    next_receipt: u16,
    /// Receipts of tracked messages whose packet was acked, oldest first, at most
    /// `capacity` (allocated by the first tracked message: untracked channels hold
    /// nothing); when full the oldest is dropped.
    acked: VecDeque<u16>,
}

/// A send-queue slot of an unreliable channel: the queued message, cleared once
/// written.
#[derive(Debug)]
pub(crate) struct SendSlot<M> {
    message: KeptMessage<M>,
    bits: usize,
    receipt: Option<u16>,
}

/// Messages received and not taken yet. Full queue: a newly arrived message is dropped
/// and counted (`messages_dropped_receive_queue_full`): the packet is still acked, unreliable data
/// is never resent anyway.
///
/// A [`Ring`] of slots that keep their values: a message is moved into a slot and out
/// of it with [`NetMessage::move_from`] and [`NetMessage::move_out`], which for a
/// message set move only the variant's payload (the enum is as large as its largest
/// variant).
#[derive(Debug)]
pub(crate) struct UnreliableReceiver<M> {
    queue: Ring<M>,
    /// Sequenced channels: the newest id received.
    newest: Option<u16>,
}

impl<M> UnreliableSender<M> {
    /// Asks the CPU for the oldest queued message, the next to be written
    /// (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self) {
        self.queue.prefetch_head();
    }

    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: Ring::new(capacity),
            capacity,
            next_id: 0,
            next_receipt: 0,
            acked: VecDeque::new(),
        }
    }

    /// Messages queued, not written yet.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// `true` when the queue has no room for another message.
    pub(crate) fn is_full(&self) -> bool {
        self.queue.is_full()
    }

    /// Tracks the message queued last: gives it the next receipt, which
    /// [`pop_acked`](Self::pop_acked) hands back once a packet that carried it is
    /// acked. `None` when nothing is queued.
    pub(crate) fn track_last(&mut self) -> Option<u16> {
        let slot = self.queue.back_mut()?;
        let r = self.next_receipt;
        slot.receipt = Some(r);
        self.next_receipt = r.wrapping_add(1);
        if self.acked.capacity() == 0 {
            self.acked.reserve_exact(self.capacity);
        }
        Some(r)
    }

    /// A packet that carried the tracked message `receipt` was acked.
    pub(crate) fn acked(&mut self, receipt: u16) {
        if self.acked.len() >= self.capacity {
            self.acked.pop_front();
        }
        self.acked.push_back(receipt);
    }

    /// The oldest receipt acked and not taken yet.
    pub(crate) fn pop_acked(&mut self) -> Option<u16> {
        self.acked.pop_front()
    }

    /// The measured bits of the queued messages, oldest first.
    pub(crate) fn bits(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.queue.len()).filter_map(|k| self.queue.get(k).map(|slot| slot.bits))
    }

    /// Sequenced channels: the id the next message written gets.
    pub(crate) fn next_id(&self) -> u16 {
        self.next_id
    }

    /// The oldest message, with its receipt if tracked: the one a packet writes next,
    /// in place, before [`pop_written`](Self::pop_written) drops it.
    pub(crate) fn front(&self) -> Option<(PayloadRef<'_, M>, Option<u16>)> {
        let slot = self.queue.get(0)?;
        Some((slot.message.get()?, slot.receipt))
    }
}

impl<M: NetMessage> UnreliableSender<M> {
    /// Queues a message of `bits` measured bits (the caller checked there is room).
    pub(crate) fn push(&mut self, message: Payload<M>, bits: usize) {
        let make = || SendSlot {
            message: KeptMessage::default(),
            bits: 0,
            receipt: None,
        };
        self.queue.push_with(make, |slot| {
            slot.message.put(message);
            slot.bits = bits;
            slot.receipt = None;
        });
    }

    /// Drops the oldest message, written under `id` on a sequenced channel (the next
    /// message gets the id after it).
    pub(crate) fn pop_written(&mut self, id: Option<u16>) {
        if let Some(id) = id {
            self.next_id = id.wrapping_add(1);
        }
        if let Some(slot) = self.queue.pop_front() {
            slot.message.clear();
        }
    }
}

impl<M> UnreliableReceiver<M> {
    /// Asks the CPU for the queue's slot the next message takes (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self) {
        self.queue.prefetch_tail();
    }

    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: Ring::new(capacity),
            newest: None,
        }
    }

    /// Sequenced channels: `true` when `id` is newer than every id received before
    /// (then it becomes the newest). Ids compare wrap-aware: newer is less than half
    /// the id space ahead.
    pub(crate) fn newer(&mut self, id: u16) -> bool {
        let newer = self
            .newest
            .is_none_or(|newest| id != newest && id.wrapping_sub(newest) < 32768);
        if newer {
            self.newest = Some(id);
        }
        newer
    }

    /// Messages received and not taken.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}

impl<M: NetMessage> UnreliableReceiver<M> {
    /// The oldest message received and not taken.
    pub(crate) fn pop(&mut self) -> Option<M> {
        self.queue.pop_front().map(M::move_out)
    }

    /// Moves `message` in behind the others; `false` when the queue is full and it
    /// was dropped (it stays in `message`).
    pub(crate) fn push_from(&mut self, message: &mut M) -> bool {
        self.queue
            .push_with(M::blank, |slot| slot.move_from(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_follow_the_tracked_messages_and_keep_the_newest() {
        let mut s: UnreliableSender<u8> = UnreliableSender::new(2);
        assert_eq!(s.track_last(), None, "nothing queued");
        s.push(Payload::Value(1), 8);
        s.push(Payload::Value(2), 8);
        assert_eq!(s.track_last(), Some(0));
        assert!(matches!(s.front(), Some((PayloadRef::Value(1), None))));
        s.pop_written(None);
        assert!(matches!(s.front(), Some((PayloadRef::Value(2), Some(0)))));
        s.pop_written(Some(7));
        assert!(s.front().is_none());
        assert_eq!(s.next_id(), 8, "the id after the one written");
        s.pop_written(None);
        assert_eq!(s.len(), 0, "nothing to drop");
        for r in [0, 1, 2] {
            s.acked(r);
        }
        // Room for 2: the oldest went.
        assert_eq!(
            (s.pop_acked(), s.pop_acked(), s.pop_acked()),
            (Some(1), Some(2), None)
        );
    }

    #[test]
    fn sender_ring_keeps_order_bits_and_receipts_across_its_wrap() {
        let mut s: UnreliableSender<u32> = UnreliableSender::new(3);
        let mut next = 0u32;
        let mut expect = 0u32;
        for round in 0..7 {
            while !s.is_full() {
                s.push(Payload::Value(next), next as usize);
                if next.is_multiple_of(2) {
                    assert!(s.track_last().is_some());
                }
                next += 1;
            }
            let bits: Vec<usize> = s.bits().collect();
            let want: Vec<usize> = (expect..next).map(|m| m as usize).collect();
            assert_eq!(bits, want, "oldest first");
            for _ in 0..=(round % 3) {
                let Some((PayloadRef::Value(&m), receipt)) = s.front() else {
                    panic!("a value queued");
                };
                assert_eq!(m, expect);
                assert_eq!(receipt.is_some(), expect.is_multiple_of(2));
                s.pop_written(None);
                expect += 1;
            }
        }
        while s.front().is_some() {
            s.pop_written(None);
        }
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn receiver_moves_messages_in_order_within_its_capacity() {
        let mut r: UnreliableReceiver<u32> = UnreliableReceiver::new(3);
        // Drained every time.
        for m in 1..10u32 {
            let mut message = m;
            assert!(r.push_from(&mut message));
            assert_eq!(message, 0, "moved out, blank left");
            assert_eq!(r.pop(), Some(m));
            assert_eq!(r.pop(), None);
        }
        // Not drained: the ring wraps, in order, and refuses past its capacity.
        let mut next = 100u32;
        let mut expect = 100u32;
        for round in 0..7 {
            while r.len() < 3 {
                let mut message = next;
                assert!(r.push_from(&mut message));
                next += 1;
            }
            let mut extra = 7;
            assert!(!r.push_from(&mut extra), "full");
            assert_eq!(extra, 7, "a refused message stays where it was");
            for _ in 0..=(round % 3) {
                assert_eq!(r.pop(), Some(expect));
                expect += 1;
            }
        }
        let mut none: UnreliableReceiver<u32> = UnreliableReceiver::new(0);
        let mut message = 1;
        assert!(!none.push_from(&mut message));
        assert_eq!(none.pop(), None);
    }

    #[test]
    fn sequenced_keeps_only_newer_ids_across_the_wrap() {
        let mut r: UnreliableReceiver<u8> = UnreliableReceiver::new(4);
        assert!(r.newer(65534));
        assert!(!r.newer(65534));
        assert!(!r.newer(65000));
        assert!(r.newer(2));
        assert!(!r.newer(65535));
        assert!(r.newer(3));
    }
}
