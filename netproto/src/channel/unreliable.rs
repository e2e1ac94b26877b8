//! The unreliable channels (unordered and sequenced): each message sent at most once,
//! bounded queues.

use std::collections::VecDeque;

use super::encoded::Payload;
use crate::message::NetMessage;

/// Messages waiting for their one transmission, oldest first, with their measured
/// bits and, for a tracked message, its receipt. Full queue: `send` refuses the new
/// message (the caller decides what to drop).
#[derive(Debug)]
pub(crate) struct UnreliableSender<M> {
    queue: VecDeque<(Payload<M>, usize, Option<u16>)>,
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

/// Messages received and not taken yet. Full queue: a newly arrived message is dropped
/// and counted (`messages_dropped_receive_queue_full`): the packet is still acked, unreliable data
/// is never resent anyway.
///
/// A ring of slots that keep their values: a message is moved into a slot and out of
/// it with [`NetMessage::move_from`] and [`NetMessage::move_out`], which for a message
/// set move only the variant's payload (the enum is as large as its largest variant).
/// Slots are made as the queue first needs them, up to `capacity`; an emptied queue
/// starts again from its first slot, which stays warm from one tick to the next.
#[derive(Debug)]
pub(crate) struct UnreliableReceiver<M> {
    slots: Vec<M>,
    /// The slot of the oldest message.
    head: usize,
    /// Messages received and not taken.
    len: usize,
    capacity: usize,
    /// Sequenced channels: the newest id received.
    newest: Option<u16>,
}

impl<M> UnreliableSender<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: VecDeque::new(),
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
        self.queue.len() >= self.capacity
    }

    /// Queues a message of `bits` measured bits (the caller checked there is room).
    pub(crate) fn push(&mut self, message: Payload<M>, bits: usize) {
        self.queue.push_back((message, bits, None));
    }

    /// Tracks the message queued last: gives it the next receipt, which
    /// [`pop_acked`](Self::pop_acked) hands back once a packet that carried it is
    /// acked. `None` when nothing is queued.
    pub(crate) fn track_last(&mut self) -> Option<u16> {
        let (_, _, receipt) = self.queue.back_mut()?;
        let r = self.next_receipt;
        *receipt = Some(r);
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
        self.queue.iter().map(|(_, bits, _)| *bits)
    }

    /// Sequenced channels: the id the next message written gets.
    pub(crate) fn next_id(&self) -> u16 {
        self.next_id
    }

    /// The oldest message, with its receipt if tracked: the one a packet writes next,
    /// in place (a message set's value can be large: moving it out is a copy), before
    /// [`pop_written`](Self::pop_written) drops it.
    pub(crate) fn front(&self) -> Option<(&Payload<M>, Option<u16>)> {
        self.queue
            .front()
            .map(|(message, _, receipt)| (message, *receipt))
    }

    /// Drops the oldest message, written under `id` on a sequenced channel (the next
    /// message gets the id after it).
    pub(crate) fn pop_written(&mut self, id: Option<u16>) {
        if let Some(id) = id {
            self.next_id = id.wrapping_add(1);
        }
        // Dropped where it lies (`pop_front` would move it out first).
        if !self.queue.is_empty() {
            self.queue.drain(..1);
        }
    }
}

impl<M> UnreliableReceiver<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            slots: Vec::new(),
            head: 0,
            len: 0,
            capacity,
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
        self.len
    }
}

impl<M: NetMessage> UnreliableReceiver<M> {
    /// The oldest message received and not taken.
    pub(crate) fn pop(&mut self) -> Option<M> {
        if self.len == 0 {
            return None;
        }
        let message = self.slots.get_mut(self.head)?.move_out();
        self.len -= 1;
        self.head = if self.len == 0 {
            0
        } else {
            (self.head + 1) % self.capacity
        };
        Some(message)
    }

    /// Moves `message` in behind the others; `false` when the queue is full and it
    /// was dropped (it stays in `message`).
    pub(crate) fn push_from(&mut self, message: &mut M) -> bool {
        if self.len >= self.capacity {
            return false;
        }
        // Slots are used in order from the first: the next is at most one past the last
        // made.
        let tail = (self.head + self.len) % self.capacity;
        if tail == self.slots.len() {
            if self.slots.len() == self.slots.capacity() {
                // Doubling, never past the capacity.
                let more = self
                    .slots
                    .len()
                    .max(4)
                    .min(self.capacity - self.slots.len());
                self.slots.reserve_exact(more);
            }
            self.slots.push(M::blank());
        }
        let Some(slot) = self.slots.get_mut(tail) else {
            return false;
        };
        slot.move_from(message);
        self.len += 1;
        true
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
        assert!(matches!(s.front(), Some((Payload::Value(1), None))));
        s.pop_written(None);
        assert!(matches!(s.front(), Some((Payload::Value(2), Some(0)))));
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
    fn receiver_ring_keeps_order_and_capacity_and_reuses_its_slots() {
        let mut r: UnreliableReceiver<u32> = UnreliableReceiver::new(3);
        // Drained every time: one slot made, reused.
        for m in 1..10u32 {
            let mut message = m;
            assert!(r.push_from(&mut message));
            assert_eq!(message, 0, "moved out, blank left");
            assert_eq!(r.pop(), Some(m));
            assert_eq!(r.pop(), None);
        }
        assert_eq!(r.slots.len(), 1);
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
        assert_eq!(r.slots.len(), 3, "never more slots than the capacity");
        assert!(r.slots.capacity() <= 4);
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
