//! A bounded FIFO ring whose slots keep their values: what the unreliable channels'
//! queues hold their messages in.
//!
//! A message set is as large as its largest variant, and pushing a value into a
//! `VecDeque` or popping it out copies all of it. Here a slot is made once (the first
//! time the queue reaches it) and then written and read in place by the caller, which
//! moves a message in and out with [`NetMessage::move_from`] and
//! [`NetMessage::move_out`](crate::NetMessage::move_out) (for a message set, only the
//! variant's payload).
//!
//! [`NetMessage::move_from`]: crate::NetMessage::move_from

/// A FIFO of at most `capacity` slots, used in order from the first. Slots are made as
/// the queue first needs them (the vector doubling, never past `capacity`), and an
/// emptied queue starts again from its first slot, which stays warm in the cache from
/// one tick to the next.
#[derive(Debug)]
pub(crate) struct Ring<T> {
    slots: Vec<T>,
    /// The slot of the oldest entry.
    head: usize,
    /// Entries queued.
    len: usize,
    capacity: usize,
}

impl<T> Ring<T> {
    /// Asks the CPU for the oldest slot, the next to go (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_head(&self) {
        crate::prefetch::prefetch_at(&self.slots, self.head);
    }

    /// Asks the CPU for the slot the next push takes (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_tail(&self) {
        let tail = (self.head + self.len) % self.capacity.max(1);
        crate::prefetch::prefetch_at(&self.slots, tail);
    }

    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            slots: Vec::new(),
            head: 0,
            len: 0,
            capacity,
        }
    }

    /// Entries queued.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// `true` when the ring holds `capacity` entries.
    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.capacity
    }

    /// The slot of the `k`-th entry from the oldest, if `k < len`.
    pub(crate) fn get(&self, k: usize) -> Option<&T> {
        if k >= self.len {
            return None;
        }
        self.slots.get((self.head + k) % self.capacity)
    }

    /// The newest entry's slot, mutably.
    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        let last = (self.head + self.len.checked_sub(1)?) % self.capacity;
        self.slots.get_mut(last)
    }

    /// Queues an entry behind the others: `fill` writes it into the next slot (made
    /// with `make` the first time the ring reaches it). `false`, and nothing written,
    /// when the ring is full.
    pub(crate) fn push_with(
        &mut self,
        make: impl FnOnce() -> T,
        fill: impl FnOnce(&mut T),
    ) -> bool {
        if self.is_full() {
            return false;
        }
        // Slots are used in order from the first: the next is at most one past the
        // last made.
        let tail = (self.head + self.len) % self.capacity;
        if tail == self.slots.len() {
            if self.slots.len() == self.slots.capacity() {
                let more = self
                    .slots
                    .len()
                    .max(4)
                    .min(self.capacity - self.slots.len());
                self.slots.reserve_exact(more);
            }
            self.slots.push(make());
        }
        let Some(slot) = self.slots.get_mut(tail) else {
            return false;
        };
        fill(slot);
        self.len += 1;
        true
    }

    /// Takes the oldest entry off the queue and returns its slot, whose value stays
    /// there for the caller to move out of (and for reuse).
    pub(crate) fn pop_front(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        let head = self.head;
        self.len -= 1;
        self.head = if self.len == 0 {
            0
        } else {
            (head + 1) % self.capacity
        };
        self.slots.get_mut(head)
    }

    /// Slots made so far.
    #[cfg(test)]
    pub(crate) fn slots_made(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(r: &mut Ring<u32>, value: u32) -> bool {
        r.push_with(|| 0, |slot| *slot = value)
    }

    #[test]
    fn keeps_order_and_capacity_across_its_wrap_and_reuses_its_slots() {
        let mut r: Ring<u32> = Ring::new(3);
        // Drained every time: one slot made, reused.
        for m in 1..10u32 {
            assert!(push(&mut r, m));
            assert_eq!(r.pop_front().copied(), Some(m));
            assert!(r.pop_front().is_none());
        }
        assert_eq!(r.slots_made(), 1);
        // Not drained: the ring wraps, in order, and refuses past its capacity.
        let mut next = 100u32;
        let mut expect = 100u32;
        for round in 0..7 {
            while !r.is_full() {
                assert!(push(&mut r, next));
                assert_eq!(r.back_mut().copied(), Some(next));
                next += 1;
            }
            assert!(!push(&mut r, 7), "full");
            let queued: Vec<u32> = (0..r.len()).filter_map(|k| r.get(k).copied()).collect();
            assert_eq!(queued, (expect..next).collect::<Vec<_>>(), "oldest first");
            assert!(r.get(r.len()).is_none());
            for _ in 0..=(round % 3) {
                assert_eq!(r.pop_front().copied(), Some(expect));
                expect += 1;
            }
        }
        assert_eq!(r.slots_made(), 3, "never more slots than the capacity");
        assert!(r.slots.capacity() <= 4);
        while r.pop_front().is_some() {}
        assert_eq!((r.len(), r.head), (0, 0), "emptied: back at the first slot");
        let mut none: Ring<u32> = Ring::new(0);
        assert!(!push(&mut none, 1));
        assert!(none.pop_front().is_none() && none.back_mut().is_none());
        assert!(none.get(0).is_none());
    }
}
