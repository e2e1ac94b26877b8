//! The reliable-ordered channel's send and receive state.

use std::collections::VecDeque;

use crate::Time;
use crate::stream::NetMessage;

use super::block::OutgoingBlock;
use super::encoded::{KeptMessage, Payload, PayloadRef};

/// What a send-queue slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Empty,
    /// A message that fits one packet.
    Message,
    /// A message sent as fragments.
    Block,
}

/// A send-queue slot's bookkeeping, what every packet's selection walks: 16 bytes, four
/// to a cache line, apart from the messages (a message set is as large as its largest
/// variant).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Head {
    /// When the message last went into a packet (`-inf`: never; a block keeps its
    /// fragments' times itself).
    pub(crate) last_sent: Time,
    /// The message's measured size, bits (an upper bound on the written size).
    pub(crate) bits: u32,
    id: u16,
    held: Held,
}

impl Head {
    const EMPTY: Self = Self {
        last_sent: Time::NEVER,
        bits: 0,
        id: 0,
        held: Held::Empty,
    };

    /// `true` for a block, `false` for a message.
    pub(crate) fn is_block(&self) -> bool {
        self.held == Held::Block
    }
}

/// A send-queue slot's contents, kept from one message to the next: a message, or a
/// block.
#[derive(Debug)]
struct Body<M> {
    message: KeptMessage<M>,
    block: Option<OutgoingBlock>,
}

/// The send queue: a ring of `send_queue_size` slots indexed by `id % size`, holding
/// the ids `oldest..next` that are not acked yet; each slot's [`Head`] in one array,
/// its message in another.
#[derive(Debug)]
pub(crate) struct ReliableSender<M> {
    heads: Box<[Head]>,
    bodies: Box<[Body<M>]>,
    /// The oldest unacked id (== `next` when nothing is in flight).
    pub(crate) oldest: u16,
    /// The id the next message gets.
    pub(crate) next: u16,
}

impl<M> ReliableSender<M> {
    /// Asks the CPU for the head of the oldest unacked message, what an ack
    /// releases first (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch_at(&self.heads, self.index(self.oldest));
    }

    pub(crate) fn new(size: usize) -> Self {
        Self {
            heads: vec![Head::EMPTY; size].into_boxed_slice(),
            bodies: (0..size)
                .map(|_| Body {
                    message: KeptMessage::default(),
                    block: None,
                })
                .collect(),
            oldest: 0,
            next: 0,
        }
    }

    /// Bytes of one slot (its head and body; not what their messages allocate).
    pub(crate) const fn slot_bytes() -> usize {
        size_of::<Head>() + size_of::<Body<M>>()
    }

    /// Ids queued (sent or not) and not acked.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.next.wrapping_sub(self.oldest))
    }

    pub(crate) fn capacity(&self) -> usize {
        self.heads.len()
    }

    fn index(&self, id: u16) -> usize {
        // The size is a power of two that divides 65536.
        usize::from(id) & (self.heads.len() - 1)
    }

    /// The slot of `id`, if it holds it.
    fn slot(&self, id: u16) -> Option<usize> {
        let index = self.index(id);
        let head = &self.heads[index];
        (head.held != Held::Empty && head.id == id).then_some(index)
    }

    /// Queues a block under the next id (the caller checked there is room).
    pub(crate) fn push_block(&mut self, block: OutgoingBlock) -> u16 {
        let (id, index) = self.take_next(Held::Block, 0);
        self.bodies[index].block = Some(block);
        id
    }

    /// Takes the next id for what `held` says, into its slot's head.
    fn take_next(&mut self, held: Held, bits: usize) -> (u16, usize) {
        let id = self.next;
        let index = self.index(id);
        self.heads[index] = Head {
            last_sent: Time::NEVER,
            bits: u32::try_from(bits).unwrap_or(u32::MAX),
            id,
            held,
        };
        self.next = id.wrapping_add(1);
        (id, index)
    }

    /// The head of `id`, if it is queued: a message's size and send time to read and
    /// update, or a block's mark.
    pub(crate) fn head_mut(&mut self, id: u16) -> Option<&mut Head> {
        let index = self.slot(id)?;
        Some(&mut self.heads[index])
    }

    /// The message queued under `id`, if it is one.
    pub(crate) fn message(&self, id: u16) -> Option<PayloadRef<'_, M>> {
        let index = self.slot(id)?;
        if self.heads[index].held != Held::Message {
            return None;
        }
        self.bodies[index].message.get()
    }

    /// The block queued under `id`, if it is one.
    pub(crate) fn block(&self, id: u16) -> Option<&OutgoingBlock> {
        self.bodies[self.slot(id)?].block.as_ref()
    }

    /// The block queued under `id`, if it is one, to update.
    pub(crate) fn block_mut(&mut self, id: u16) -> Option<&mut OutgoingBlock> {
        let index = self.slot(id)?;
        self.bodies[index].block.as_mut()
    }

    /// Moves `oldest` past every released id.
    pub(crate) fn advance(&mut self) {
        while self.oldest != self.next {
            if self.slot(self.oldest).is_some() {
                break;
            }
            self.oldest = self.oldest.wrapping_add(1);
        }
    }
}

impl<M: NetMessage> ReliableSender<M> {
    /// Queues a message of `bits` measured bits under the next id (the caller checked
    /// there is room).
    pub(crate) fn push_message(&mut self, message: Payload<M>, bits: usize) -> u16 {
        let (id, index) = self.take_next(Held::Message, bits);
        self.bodies[index].message.put(message);
        id
    }

    /// Releases `id` (acked); returns whether it was still queued.
    pub(crate) fn release(&mut self, id: u16) -> bool {
        let Some(index) = self.slot(id) else {
            return false;
        };
        let head = std::mem::replace(&mut self.heads[index], Head::EMPTY);
        let body = &mut self.bodies[index];
        match head.held {
            Held::Block => drop(body.block.take()),
            _ => body.message.clear(),
        }
        true
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
    /// Asks the CPU for the slots of the next ids to arrive and to be delivered
    /// (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch_at(&self.slots, self.index(self.frontier));
        crate::prefetch::prefetch_at(&self.slots, self.index(self.next));
    }

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
        for n in 0..4 {
            assert_eq!(s.push_message(Payload::Value(n), 8), u16::from(n));
        }
        assert!(matches!(s.message(2), Some(PayloadRef::Value(&2))));
        assert_eq!(
            s.head_mut(3).map(|h| (h.bits, h.is_block())),
            Some((8, false))
        );
        assert_eq!(s.len(), 4);
        assert!(s.release(1));
        assert!(!s.release(1));
        assert!(s.message(1).is_none() && s.head_mut(1).is_none());
        s.advance();
        assert_eq!(s.oldest, 0);
        assert!(s.release(0));
        s.advance();
        assert_eq!(s.oldest, 2);
        assert_eq!(s.len(), 2);
    }
}
