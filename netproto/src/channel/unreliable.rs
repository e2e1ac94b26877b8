//! The unreliable-unordered channel: each message sent at most once, bounded queues.

use std::collections::VecDeque;

/// Messages waiting for their one transmission, oldest first, with their measured
/// bits. Full queue: `send` refuses the new message (the caller decides what to drop).
#[derive(Debug)]
pub(crate) struct UnreliableSender<M> {
    pub(crate) queue: VecDeque<(M, usize)>,
    pub(crate) capacity: usize,
}

/// Messages received and not taken yet. Full queue: a newly arrived message is dropped
/// and counted (`receive_queue_overflow`): the packet is still acked, unreliable data
/// is never resent anyway.
#[derive(Debug)]
pub(crate) struct UnreliableReceiver<M> {
    pub(crate) queue: VecDeque<M>,
    pub(crate) capacity: usize,
}

impl<M> UnreliableSender<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            capacity,
        }
    }
}

impl<M> UnreliableReceiver<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            capacity,
        }
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
