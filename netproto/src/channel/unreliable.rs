//! The unreliable channels (unordered and sequenced): each message sent at most once,
//! bounded queues.

use std::collections::VecDeque;

use super::encoded::Payload;

/// Messages waiting for their one transmission, oldest first, with their measured
/// bits. Full queue: `send` refuses the new message (the caller decides what to drop).
#[derive(Debug)]
pub(crate) struct UnreliableSender<M> {
    queue: VecDeque<(Payload<M>, usize)>,
    capacity: usize,
    /// Sequenced channels: the id the next message written gets.
    next_id: u16,
}

/// Messages received and not taken yet. Full queue: a newly arrived message is dropped
/// and counted (`messages_dropped_receive_queue_full`): the packet is still acked, unreliable data
/// is never resent anyway.
#[derive(Debug)]
pub(crate) struct UnreliableReceiver<M> {
    queue: VecDeque<M>,
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
        self.queue.push_back((message, bits));
    }

    /// The measured bits of the queued messages, oldest first.
    pub(crate) fn bits(&self) -> impl Iterator<Item = usize> + '_ {
        self.queue.iter().map(|(_, bits)| *bits)
    }

    /// Sequenced channels: the id the next message written gets.
    pub(crate) fn next_id(&self) -> u16 {
        self.next_id
    }

    /// Takes the oldest message to write it, under `id` on a sequenced channel (the
    /// next message gets the id after it).
    pub(crate) fn take(&mut self, id: Option<u16>) -> Option<Payload<M>> {
        if let Some(id) = id {
            self.next_id = id.wrapping_add(1);
        }
        self.queue.pop_front().map(|(message, _)| message)
    }
}

impl<M> UnreliableReceiver<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: VecDeque::new(),
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
        self.queue.len()
    }

    /// The oldest message received and not taken.
    pub(crate) fn pop(&mut self) -> Option<M> {
        self.queue.pop_front()
    }

    /// Queues `message`; `false` when the queue is full and it was dropped.
    pub(crate) fn push(&mut self, message: M) -> bool {
        if self.queue.len() >= self.capacity {
            return false;
        }
        self.queue.push_back(message);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
