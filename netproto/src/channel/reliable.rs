//! The reliable-ordered channel's send and receive state.

use std::collections::VecDeque;

use crate::Time;
use crate::message::NetMessage;

use super::block::OutgoingBlock;
use super::encoded::Payload;

/// A queued reliable message: a small message written inline, or a block.
#[derive(Debug)]
pub(crate) enum Outgoing<M> {
    /// A message that fits one packet.
    Message {
        message: Payload<M>,
        /// Measured size (an upper bound on the written size).
        bits: usize,
        /// When it last went into a packet (`-inf`: never).
        last_sent: Time,
    },
    /// A message sent as fragments.
    Block(OutgoingBlock),
}

/// A send-queue slot: the id it holds and the message.
type SendSlot<M> = Option<(u16, Outgoing<M>)>;

/// The send queue: a ring of `send_queue_size` slots indexed by `id % size`, holding
/// the ids `oldest..next` that are not acked yet.
#[derive(Debug)]
pub(crate) struct ReliableSender<M> {
    slots: Box<[SendSlot<M>]>,
    /// The oldest unacked id (== `next` when nothing is in flight).
    pub(crate) oldest: u16,
    /// The id the next message gets.
    pub(crate) next: u16,
}

impl<M> ReliableSender<M> {
    pub(crate) fn new(size: usize) -> Self {
        Self {
            slots: (0..size).map(|_| None).collect(),
            oldest: 0,
            next: 0,
        }
    }

    /// Ids queued (sent or not) and not acked.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.next.wrapping_sub(self.oldest))
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn index(&self, id: u16) -> usize {
        // The size is a power of two that divides 65536.
        usize::from(id) & (self.slots.len() - 1)
    }

    /// Queues `item` under the next id (the caller checked there is room).
    pub(crate) fn push(&mut self, item: Outgoing<M>) -> u16 {
        let id = self.next;
        let index = self.index(id);
        self.slots[index] = Some((id, item));
        self.next = id.wrapping_add(1);
        id
    }

    pub(crate) fn get(&self, id: u16) -> Option<&Outgoing<M>> {
        match &self.slots[self.index(id)] {
            Some((stored, item)) if *stored == id => Some(item),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, id: u16) -> Option<&mut Outgoing<M>> {
        let index = self.index(id);
        match &mut self.slots[index] {
            Some((stored, item)) if *stored == id => Some(item),
            _ => None,
        }
    }

    /// Releases `id` (acked); returns whether it was still queued.
    pub(crate) fn release(&mut self, id: u16) -> bool {
        let index = self.index(id);
        let hit = matches!(&self.slots[index], Some((stored, _)) if *stored == id);
        if hit {
            self.slots[index] = None;
        }
        hit
    }

    /// Moves `oldest` past every released id.
    pub(crate) fn advance(&mut self) {
        while self.oldest != self.next {
            let index = self.index(self.oldest);
            if matches!(&self.slots[index], Some((stored, _)) if *stored == self.oldest) {
                break;
            }
            self.oldest = self.oldest.wrapping_add(1);
        }
    }
}

/// Where a received id falls relative to the receive window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Not received yet, and there is room to buffer it.
    New,
    /// Received already (buffered or delivered): a duplicate.
    Old,
    /// In the sender's window but beyond what the receive queue can hold until the
    /// application takes messages: refuse the packet, the sender will resend.
    Full,
    /// No conforming sender can send it: a protocol error.
    Outside,
}

/// The receive queue: a ring of `receive_queue_size` slots indexed by `id % size`.
///
/// `next` is the next id to deliver; `frontier` the first id not received (every id
/// in `next..frontier` is buffered). A conforming sender's oldest unacked id is at most
/// `frontier` (it cannot have acks beyond the first gap), and it never sends an id at
/// or beyond `oldest + size`: so an id in `frontier + size..frontier + 32768` is a
/// protocol error, and an id in `next + size..frontier + size` is merely early.
///
/// Behind the frontier there is no such bound: a packet can be overtaken in the
/// network by packets sent after the window moved on, so a resend of an old id may
/// arrive more than `size` ids late. Everything in the half of the id space behind the
/// frontier is a duplicate. The configuration keeps that half larger than any window
/// movement a packet can live through (the endpoint drops packets older than its
/// received window; see `AckWindowTooLarge`).
#[derive(Debug)]
pub(crate) struct ReliableReceiver<M> {
    slots: Box<[ReceiveSlot<M>]>,
    pub(crate) next: u16,
    pub(crate) frontier: u16,
    /// Unordered channels: the ids received and not taken yet, in arrival order (a
    /// taken message leaves its id in its slot, without the message, until `next`
    /// moves past it, so that a resend of it is known as a duplicate). `None` for an
    /// ordered channel.
    ready: Option<VecDeque<u16>>,
}

/// A receive-queue slot. Its value is made when the slot is first used and then kept:
/// a message is moved into it and out of it with [`NetMessage::move_from`] and
/// [`NetMessage::move_out`], which for a message set move only the variant's payload
/// (the enum is as large as its largest variant).
#[derive(Debug)]
pub(crate) struct ReceiveSlot<M> {
    /// The id the slot holds, and whether its message is still there (`false` once an
    /// unordered channel delivered it).
    held: Option<(u16, bool)>,
    value: Option<M>,
}

impl<M> ReliableReceiver<M> {
    /// A receiver with `size` slots, delivering in id order or, when `unordered`, in
    /// arrival order.
    pub(crate) fn new(size: usize, unordered: bool) -> Self {
        Self {
            slots: (0..size)
                .map(|_| ReceiveSlot {
                    held: None,
                    value: None,
                })
                .collect(),
            next: 0,
            frontier: 0,
            ready: unordered.then(|| VecDeque::with_capacity(size)),
        }
    }

    pub(crate) fn window(&self) -> usize {
        self.slots.len()
    }

    fn index(&self, id: u16) -> usize {
        usize::from(id) & (self.slots.len() - 1)
    }

    fn has(&self, id: u16) -> bool {
        matches!(self.slots[self.index(id)].held, Some((stored, _)) if stored == id)
    }

    pub(crate) fn classify(&self, id: u16) -> Class {
        let w = self.window();
        let d = usize::from(id.wrapping_sub(self.frontier));
        if d < w {
            if usize::from(id.wrapping_sub(self.next)) >= w {
                Class::Full
            } else if self.has(id) {
                Class::Old
            } else {
                Class::New
            }
        } else if d < 32768 {
            Class::Outside
        } else {
            Class::Old
        }
    }

    /// Messages buffered and not delivered.
    pub(crate) fn buffered(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.held, Some((_, true))))
            .count()
    }
}

impl<M: NetMessage> ReliableReceiver<M> {
    /// Buffers a message classified [`Class::New`].
    pub(crate) fn insert(&mut self, id: u16, mut message: M) {
        self.insert_from(id, &mut message);
    }

    /// Buffers a message classified [`Class::New`], moved out of `message`.
    pub(crate) fn insert_from(&mut self, id: u16, message: &mut M) {
        let index = self.index(id);
        let slot = &mut self.slots[index];
        slot.value.get_or_insert_with(M::blank).move_from(message);
        slot.held = Some((id, true));
        if let Some(ready) = &mut self.ready {
            ready.push_back(id);
        }
        while self.has(self.frontier) {
            self.frontier = self.frontier.wrapping_add(1);
        }
    }

    /// The next message: in id order once it has arrived, or (unordered) the next
    /// one that arrived.
    pub(crate) fn pop(&mut self) -> Option<M> {
        if let Some(ready) = &mut self.ready {
            let id = ready.pop_front()?;
            let index = usize::from(id) & (self.slots.len() - 1);
            let slot = &mut self.slots[index];
            let message = match (&mut slot.held, &mut slot.value) {
                (Some((stored, present @ true)), Some(value)) if *stored == id => {
                    *present = false;
                    Some(value.move_out())
                }
                _ => None,
            };
            // Move past the delivered ids: their slots may take new ones.
            while self.next != self.frontier {
                let index = self.index(self.next);
                if !matches!(self.slots[index].held, Some((stored, false)) if stored == self.next) {
                    break;
                }
                self.next = self.next.wrapping_add(1);
            }
            return message;
        }
        let index = self.index(self.next);
        let slot = &mut self.slots[index];
        match (&slot.held, &mut slot.value) {
            (Some((id, true)), Some(value)) if *id == self.next => {
                slot.held = None;
                self.next = self.next.wrapping_add(1);
                Some(value.move_out())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_classifies_by_window_and_wraps() {
        let mut r: ReliableReceiver<u32> = ReliableReceiver::new(4, false);
        r.next = 65534;
        r.frontier = 65534;
        assert_eq!(r.classify(65534), Class::New);
        assert_eq!(r.classify(1), Class::New);
        assert_eq!(r.classify(2), Class::Outside);
        assert_eq!(r.classify(65533), Class::Old);
        for id in [65534u16, 65535, 0, 1] {
            r.insert(id, u32::from(id));
        }
        assert_eq!(r.frontier, 2);
        // Nothing taken: ids 2..6 are early, not hostile.
        assert_eq!(r.classify(2), Class::Full);
        assert_eq!(r.classify(5), Class::Full);
        assert_eq!(r.classify(6), Class::Outside);
        assert_eq!(r.pop(), Some(65534));
        assert_eq!(r.classify(2), Class::New);
        assert_eq!(r.classify(0), Class::Old);
        assert_eq!(r.buffered(), 3);
    }

    #[test]
    fn unordered_receiver_delivers_on_arrival_and_knows_duplicates() {
        let mut r: ReliableReceiver<u32> = ReliableReceiver::new(4, true);
        assert_eq!(r.classify(2), Class::New);
        r.insert(2, 2);
        assert_eq!(r.pop(), Some(2));
        assert_eq!(r.pop(), None);
        // Delivered but not passed by `next`: a duplicate, still.
        assert_eq!(r.classify(2), Class::Old);
        assert_eq!((r.next, r.frontier), (0, 0));
        r.insert(0, 0);
        r.insert(1, 1);
        assert_eq!(r.frontier, 3);
        assert_eq!(r.buffered(), 2);
        assert_eq!(r.pop(), Some(0));
        assert_eq!(r.next, 1);
        assert_eq!(r.pop(), Some(1));
        assert_eq!(r.next, 3);
        assert_eq!(r.classify(1), Class::Old);
        // The window moved on: ids up to next + 3 are new.
        assert_eq!(r.classify(6), Class::New);
        assert_eq!(r.classify(7), Class::Outside);
        // An undelivered message holds the window.
        r.insert(3, 3);
        assert_eq!(r.classify(7), Class::Full);
        assert_eq!(r.pop(), Some(3));
        assert_eq!(r.classify(7), Class::New);
    }

    #[test]
    fn sender_releases_and_advances() {
        let mut s: ReliableSender<u8> = ReliableSender::new(4);
        for _ in 0..4 {
            s.push(Outgoing::Message {
                message: Payload::Value(0),
                bits: 8,
                last_sent: Time::NEVER,
            });
        }
        assert_eq!(s.len(), 4);
        assert!(s.release(1));
        assert!(!s.release(1));
        s.advance();
        assert_eq!(s.oldest, 0);
        assert!(s.release(0));
        s.advance();
        assert_eq!(s.oldest, 2);
        assert_eq!(s.len(), 2);
    }
}
