//! A fixed ring of entries indexed by sequence number.

use crate::sequence::Sequence;
use core::fmt;

/// Marker of an empty slot in the stored-sequence array (no `u16` equals it).
const EMPTY: u32 = u32::MAX;

/// The largest supported number of entries: half the sequence space, so that "older
/// than the window" stays unambiguous.
pub const MAX_SEQUENCE_BUFFER_SIZE: usize = 32768;

/// A sequence was refused because it is older than the buffer's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("sequence {sequence} is older than the window (newest is {newest}, {size} entries)")]
pub struct StaleSequence {
    /// The refused sequence.
    pub sequence: Sequence,
    /// The newest sequence the buffer had seen.
    pub newest: Sequence,
    /// The number of entries of the buffer.
    pub size: usize,
}

/// A fixed ring of `N` entries indexed by `sequence % N`, each slot holding the
/// sequence stored in it beside its entry (a lookup and the insert that follows it
/// touch one cache line), so insert, lookup and remove are O(1).
///
/// It is the data structure of the reference `reliable` library (sent packets,
/// received packets, fragment reassembly), with its two rules:
///
/// * inserting a sequence newer than the newest one clears every slot skipped over,
///   so that entries from an earlier lap of the ring (or an earlier wrap of the
///   16-bit space) can never be mistaken for current ones;
/// * a sequence older than `newest - N` is stale and refused.
///
/// The buffer starts as if the newest sequence were 65535 (one before 0). Slots keep
/// their value after removal ([`invalidate`](Self::invalidate)) so that large entries
/// (reassembly buffers) can be reused without allocating.
///
/// ```
/// use netproto::packet::Sequence;
/// use netproto::internals::packet::SequenceBuffer;
///
/// let mut buf: SequenceBuffer<u32> = SequenceBuffer::new(4);
/// buf.insert(Sequence(10), 100).unwrap();
/// assert_eq!(buf.get(Sequence(10)), Some(&100));
/// // 14 maps to the same slot as 10; inserting it evicts 10 and clears 11..=13.
/// buf.insert(Sequence(14), 140).unwrap();
/// assert_eq!(buf.get(Sequence(10)), None);
/// assert!(buf.insert(Sequence(10), 0).is_err()); // stale: older than 14 - 4
/// ```
pub struct SequenceBuffer<T> {
    /// One past the newest sequence inserted (the reference's `sequence` field).
    next: Sequence,
    /// `size - 1` when `size` is a power of two (fast indexing), else 0.
    mask: usize,
    /// Per slot, the sequence stored (or `EMPTY`) beside the entry: a lookup and the
    /// insert after it touch one cache line.
    slots: Box<[(u32, T)]>,
}

impl<T: Default> SequenceBuffer<T> {
    /// A buffer of `size` empty entries.
    ///
    /// # Panics
    ///
    /// When `size` is 0 or above [`MAX_SEQUENCE_BUFFER_SIZE`].
    pub fn new(size: usize) -> Self {
        assert!(
            (1..=MAX_SEQUENCE_BUFFER_SIZE).contains(&size),
            "sequence buffer size must be in 1..={MAX_SEQUENCE_BUFFER_SIZE}, got {size}"
        );
        let mask = if size.is_power_of_two() { size - 1 } else { 0 };
        Self {
            next: Sequence(0),
            mask,
            slots: (0..size).map(|_| (EMPTY, T::default())).collect(),
        }
    }

    /// Removes `sequence` and returns its value, leaving `T::default()` in the slot.
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn remove(&mut self, sequence: Sequence) -> Option<T> {
        let index = self.index(sequence);
        if self.slots[index].0 == u32::from(sequence.0) {
            self.slots[index].0 = EMPTY;
            Some(core::mem::take(&mut self.slots[index].1))
        } else {
            None
        }
    }

    /// Inserts `value` under `sequence` and returns a reference to it, or refuses a
    /// stale sequence. An older entry in the same slot is overwritten.
    pub fn insert(&mut self, sequence: Sequence, value: T) -> Result<&mut T, StaleSequence> {
        let slot = self.insert_in_place(sequence)?;
        *slot = value;
        Ok(slot)
    }
}

/// The bytes of one slot of a [`SequenceBuffer<T>`]: the entry and the 4-byte sequence
/// stored beside it, padded to the entry's alignment.
pub(crate) const fn slot_bytes<T>() -> usize {
    core::mem::size_of::<(u32, T)>()
}

impl<T> SequenceBuffer<T> {
    /// The number of entries.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// One past the newest sequence ever inserted (or advanced to); 0 when fresh.
    pub fn next_sequence(&self) -> Sequence {
        self.next
    }

    /// The newest sequence inserted or advanced to (65535 when fresh).
    pub fn newest(&self) -> Sequence {
        self.next.prev()
    }

    /// Asks the CPU for the cache line of `sequence`'s slot, without waiting
    /// (`crate::prefetch`): what a server does for each connection of a batch before
    /// processing any.
    #[inline]
    pub(crate) fn prefetch(&self, sequence: Sequence) {
        crate::prefetch::prefetch_at(&self.slots, self.index(sequence));
    }

    #[inline]
    fn index(&self, sequence: Sequence) -> usize {
        let s = usize::from(sequence.0);
        if self.mask != 0 || self.slots.len() == 1 {
            s & self.mask
        } else {
            s % self.slots.len()
        }
    }

    /// `true` when `sequence` is older than the window and would be refused.
    pub fn is_stale(&self, sequence: Sequence) -> bool {
        // `capacity() <= 32768` so the cast is lossless.
        let window = self.slots.len() as u16;
        sequence.is_older_than(self.next.wrapping_sub(window))
    }

    /// Marks `sequence` as occupied and returns its slot without resetting it: the
    /// slot still holds whatever value it held before (possibly an entry removed with
    /// [`invalidate`](Self::invalidate) or evicted). Use it to reuse allocations.
    /// Refuses a stale sequence.
    pub fn insert_in_place(&mut self, sequence: Sequence) -> Result<&mut T, StaleSequence> {
        if self.is_stale(sequence) {
            return Err(StaleSequence {
                sequence,
                newest: self.newest(),
                size: self.capacity(),
            });
        }
        self.advance(sequence);
        let index = self.index(sequence);
        let slot = &mut self.slots[index];
        slot.0 = u32::from(sequence.0);
        Ok(&mut slot.1)
    }

    /// Moves the window forward so that `sequence` is the newest, clearing every slot
    /// skipped over. Does nothing when `sequence` is not newer than the newest.
    pub fn advance(&mut self, sequence: Sequence) {
        if sequence.next().is_newer_than(self.next) {
            self.clear_range(self.next, sequence);
            self.next = sequence.next();
        }
    }

    /// Marks every sequence of `start..=finish` (wrap-aware, at most half the ring)
    /// empty: the whole ring when the range is at least as long as the buffer.
    fn clear_range(&mut self, start: Sequence, finish: Sequence) {
        let span = usize::from(finish.0.wrapping_sub(start.0));
        if span < self.slots.len() {
            let mut sequence = start;
            let mut index = self.index(start);
            for _ in 0..=span {
                self.slots[index].0 = EMPTY;
                sequence = sequence.next();
                // Consecutive sequences use consecutive slots, except across the
                // 65535 -> 0 wrap when the size does not divide 65536.
                index = if sequence.0 == 0 || index + 1 == self.slots.len() {
                    0
                } else {
                    index + 1
                };
            }
        } else {
            self.slots.iter_mut().for_each(|slot| slot.0 = EMPTY);
        }
    }

    /// `true` when the slot of `sequence` currently holds exactly `sequence`.
    #[inline]
    pub fn contains(&self, sequence: Sequence) -> bool {
        self.slots[self.index(sequence)].0 == u32::from(sequence.0)
    }

    /// `true` when the slot `sequence` maps to holds no entry at all.
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn is_slot_free(&self, sequence: Sequence) -> bool {
        self.slots[self.index(sequence)].0 == EMPTY
    }

    /// The entry stored under `sequence`, if any.
    #[inline]
    pub fn get(&self, sequence: Sequence) -> Option<&T> {
        let slot = &self.slots[self.index(sequence)];
        (slot.0 == u32::from(sequence.0)).then_some(&slot.1)
    }

    /// The entry stored under `sequence`, mutably, if any.
    #[inline]
    pub fn get_mut(&mut self, sequence: Sequence) -> Option<&mut T> {
        let index = self.index(sequence);
        let slot = &mut self.slots[index];
        (slot.0 == u32::from(sequence.0)).then_some(&mut slot.1)
    }

    /// The sequence stored in the slot `sequence` maps to, if the slot is occupied:
    /// the entry that inserting `sequence` would evict.
    pub fn occupant(&self, sequence: Sequence) -> Option<Sequence> {
        let stored = self.slots[self.index(sequence)].0;
        u16::try_from(stored).ok().map(Sequence)
    }

    /// Marks `sequence` empty but keeps its value in the slot for reuse by
    /// [`insert_in_place`](Self::insert_in_place). Returns whether it was present.
    pub fn invalidate(&mut self, sequence: Sequence) -> bool {
        let index = self.index(sequence);
        let slot = &mut self.slots[index];
        let present = slot.0 == u32::from(sequence.0);
        if present {
            slot.0 = EMPTY;
        }
        present
    }

    /// The value in the slot `sequence` maps to, whatever it holds (occupied or not).
    pub(crate) fn slot_mut(&mut self, sequence: Sequence) -> &mut T {
        let index = self.index(sequence);
        &mut self.slots[index].1
    }

    /// The value in slot `index` (`< capacity()`), whatever it holds.
    pub(crate) fn slot_at(&self, index: usize) -> &T {
        &self.slots[index].1
    }

    /// The number of occupied slots (O(N)).
    pub fn occupied(&self) -> usize {
        self.slots.iter().filter(|slot| slot.0 != EMPTY).count()
    }

    /// Empties every slot and restarts the window as if fresh (newest = 65535).
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub fn reset(&mut self) {
        self.next = Sequence(0);
        self.slots.iter_mut().for_each(|slot| slot.0 = EMPTY);
    }

    /// The ack fields describing this buffer as a set of received packets: `ack` is
    /// the newest sequence, and bit `n` of `ack_bits` is set when `ack - n` is
    /// present (bit 0 is `ack` itself). A fresh buffer gives `(65535, 0)`.
    ///
    /// ```
    /// use netproto::packet::Sequence;
    /// use netproto::internals::packet::SequenceBuffer;
    ///
    /// let mut received: SequenceBuffer<()> = SequenceBuffer::new(256);
    /// assert_eq!(received.ack_bits(), (Sequence(65535), 0));
    /// for s in [1, 5, 9, 11] {
    ///     received.insert(Sequence(s), ()).unwrap();
    /// }
    /// let bits = 1 | 1 << (11 - 9) | 1 << (11 - 5) | 1 << (11 - 1);
    /// assert_eq!(received.ack_bits(), (Sequence(11), bits));
    /// ```
    pub fn ack_bits(&self) -> (Sequence, u32) {
        let ack = self.newest();
        let mut bits = 0u32;
        let mut sequence = ack;
        let mut index = self.index(ack);
        for bit in 0..32 {
            if self.slots[index].0 == u32::from(sequence.0) {
                bits |= 1 << bit;
            }
            sequence = sequence.prev();
            index = if sequence.0 == u16::MAX {
                self.index(sequence)
            } else if index == 0 {
                self.slots.len() - 1
            } else {
                index - 1
            };
        }
        (ack, bits)
    }
}

impl<T: fmt::Debug> fmt::Debug for SequenceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SequenceBuffer")
            .field("capacity", &self.capacity())
            .field("next_sequence", &self.next)
            .field("occupied", &self.occupied())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_free_until_something_is_stored_in_it() {
        let mut buf: SequenceBuffer<u8> = SequenceBuffer::new(4);
        assert!(buf.is_slot_free(Sequence(1)));
        buf.insert(Sequence(1), 7).expect("fresh");
        assert!(!buf.is_slot_free(Sequence(1)));
        assert!(
            !buf.is_slot_free(Sequence(5)),
            "the same slot, another sequence"
        );
        assert!(buf.is_slot_free(Sequence(2)));
        buf.remove(Sequence(1));
        assert!(buf.is_slot_free(Sequence(1)));
    }

    #[test]
    fn debug_shows_the_state_not_the_entries() {
        let mut buf: SequenceBuffer<u8> = SequenceBuffer::new(4);
        buf.insert(Sequence(2), 9).expect("fresh");
        let text = format!("{buf:?}");
        assert!(text.starts_with("SequenceBuffer {"), "{text}");
        assert!(
            text.contains("capacity: 4") && text.contains("occupied: 1"),
            "{text}"
        );
    }

    #[test]
    fn insert_get_remove() {
        let mut buf: SequenceBuffer<u16> = SequenceBuffer::new(256);
        for s in 0..256u16 {
            assert!(buf.get(Sequence(s)).is_none());
        }
        for s in 0..=1024u16 {
            *buf.insert(Sequence(s), 0).expect("fresh") = s;
            assert_eq!(buf.next_sequence(), Sequence(s + 1));
        }
        // Everything older than the window is refused.
        for s in 0..=256u16 {
            assert!(buf.insert(Sequence(s), 0).is_err(), "{s}");
        }
        for s in (1024 - 255)..=1024u16 {
            assert_eq!(buf.get(Sequence(s)), Some(&s));
        }
        assert_eq!(buf.remove(Sequence(1000)), Some(1000));
        assert_eq!(buf.remove(Sequence(1000)), None);
        assert!(!buf.contains(Sequence(1000)));
        buf.reset();
        assert_eq!(buf.next_sequence(), Sequence(0));
        assert_eq!(buf.occupied(), 0);
    }

    #[test]
    fn oldest_in_window_is_accepted_one_older_is_stale() {
        let mut buf: SequenceBuffer<()> = SequenceBuffer::new(4);
        buf.insert(Sequence(100), ()).expect("fresh");
        // newest = 100, next = 101; window covers 97..=100.
        assert!(!buf.is_stale(Sequence(97)));
        assert!(buf.is_stale(Sequence(96)));
        assert!(buf.insert(Sequence(97), ()).is_ok());
        let err = buf.insert(Sequence(96), ()).expect_err("stale");
        assert_eq!(err.newest, Sequence(100));
    }

    #[test]
    fn skipped_slots_are_cleared() {
        let mut buf: SequenceBuffer<()> = SequenceBuffer::new(8);
        for s in 0..8 {
            buf.insert(Sequence(s), ()).expect("fresh");
        }
        assert_eq!(buf.occupied(), 8);
        // Jump ahead by 5: slots of 8..=12 are cleared (they held 0..=4), 5..=7 stay.
        buf.insert(Sequence(12), ()).expect("newer");
        let present: Vec<u16> = (0..16).filter(|&s| buf.contains(Sequence(s))).collect();
        assert_eq!(present, vec![5, 6, 7, 12]);
        // Jump by more than the whole ring: everything else goes.
        buf.insert(Sequence(40), ()).expect("newer");
        assert_eq!(buf.occupied(), 1);
    }

    #[test]
    fn advancing_clears_the_slot_it_lands_on() {
        // `advance` (the reassembly table's, and every insert's) clears the slots of
        // every sequence up to and including the new newest: the slot the newest
        // lands on held an entry a lap older, which must not look present.
        let mut buf: SequenceBuffer<u16> = SequenceBuffer::new(8);
        for s in 0..8 {
            buf.insert(Sequence(s), s).expect("fresh");
        }
        buf.advance(Sequence(12));
        assert_eq!(buf.newest(), Sequence(12));
        assert_eq!(buf.occupant(Sequence(12)), None, "4's slot, now 12's");
        assert_eq!(buf.get(Sequence(4)), None);
        let present: Vec<u16> = (0..16).filter(|&s| buf.contains(Sequence(s))).collect();
        assert_eq!(present, vec![5, 6, 7]);
        // By one: exactly the slot it lands on.
        buf.advance(Sequence(13));
        assert_eq!(buf.occupant(Sequence(13)), None, "5's slot, now 13's");
        assert_eq!(buf.occupied(), 2);
        // Across the 16-bit wrap, with a size that does not divide 65536: 65500 and
        // 0 share slot 0, 65502 and 2 slot 2.
        let mut buf: SequenceBuffer<u16> = SequenceBuffer::new(100);
        for s in 65500..=65535u16 {
            buf.insert(Sequence(s), s)
                .expect("in the window of a fresh buffer");
        }
        buf.advance(Sequence(2));
        assert_eq!(buf.occupant(Sequence(2)), None, "65502's slot, now 2's");
        let present: Vec<u16> = (0..=65535u16)
            .filter(|&s| buf.contains(Sequence(s)))
            .collect();
        assert_eq!(present, (65503..=65535).collect::<Vec<_>>());
        // Advancing to the newest or an older sequence changes nothing.
        buf.advance(Sequence(2));
        buf.advance(Sequence(65510));
        assert_eq!(buf.occupied(), 33);
    }

    #[test]
    fn a_full_wrap_of_the_sequence_space_leaves_no_ghosts() {
        // Without clearing skipped slots, 5 from the previous wrap would still look
        // present when the ack window reaches 5 again.
        let mut buf: SequenceBuffer<()> = SequenceBuffer::new(256);
        buf.insert(Sequence(5), ()).expect("fresh");
        let mut s = Sequence(5);
        for _ in 0..(65536 / 300 + 1) {
            s = s.wrapping_add(300);
            buf.insert(s, ()).expect("newer");
        }
        for _ in 0..1000 {
            s = s.next();
            buf.advance(s);
            if s == Sequence(5) {
                break;
            }
        }
        assert!(!buf.contains(Sequence(5)));
    }

    #[test]
    fn wrap_with_a_size_that_does_not_divide_65536() {
        let mut buf: SequenceBuffer<u16> = SequenceBuffer::new(100);
        let mut s = Sequence(65500);
        buf.insert(s, s.0).expect("in window of a fresh buffer");
        for _ in 0..200 {
            s = s.next();
            buf.insert(s, s.0).expect("newer");
            assert_eq!(buf.get(s), Some(&s.0));
            assert_eq!(buf.get(s.prev()), Some(&s.prev().0));
        }
        // 65500 + 200 = 164 (wrapped); the window holds 65..=164 = 100 entries.
        assert_eq!(buf.newest(), Sequence(164));
        assert_eq!(buf.occupied(), 100);
        for k in 0..100u16 {
            assert!(buf.contains(Sequence(164 - k)));
        }
        // Jump across the wrap by a few: 65534, 65535, 0, 1 with 65535 % 100 = 35
        // and 0 % 100 = 0 not adjacent.
        let mut buf: SequenceBuffer<()> = SequenceBuffer::new(100);
        for s in 65440..=65533u16 {
            buf.insert(Sequence(s), ())
                .expect("in the window of a fresh buffer");
        }
        buf.insert(Sequence(3), ()).expect("newer across the wrap");
        for s in [65534u16, 65535, 0, 1, 2] {
            assert!(!buf.contains(Sequence(s)), "{s}");
        }
        // Newest is 3: the window is 65440..=3. Across the wrap 0..=3 share slots
        // 0..=3 with 65500..=65503 (100 does not divide 65536), so those are evicted,
        // as in the reference; nothing else in the window was cleared.
        let present: Vec<u16> = (0..=65535u16)
            .filter(|&s| buf.contains(Sequence(s)))
            .collect();
        let expected: Vec<u16> = [3u16]
            .into_iter()
            .chain(65440..=65499)
            .chain(65504..=65533)
            .collect();
        assert_eq!(present, expected);
    }

    #[test]
    fn ack_bits_at_and_across_the_wrap() {
        for size in [32usize, 33, 100, 256] {
            let mut buf: SequenceBuffer<()> = SequenceBuffer::new(size);
            assert_eq!(buf.ack_bits(), (Sequence(65535), 0));
            let mut expected = 0u32;
            let newest = 10u16;
            for k in 0..32u16 {
                if k % 3 != 1 {
                    let s = Sequence(newest).wrapping_sub(k);
                    buf.insert(s, ()).expect("in window");
                    expected |= 1 << k;
                }
            }
            assert_eq!(buf.ack_bits(), (Sequence(newest), expected), "size {size}");
        }
        let mut buf: SequenceBuffer<()> = SequenceBuffer::new(256);
        for s in 0..=256u16 {
            buf.insert(Sequence(s), ()).expect("fresh");
        }
        assert_eq!(buf.ack_bits(), (Sequence(256), u32::MAX));
    }

    #[test]
    fn invalidate_keeps_the_value_for_reuse() {
        let mut buf: SequenceBuffer<Vec<u8>> = SequenceBuffer::new(4);
        buf.insert(Sequence(1), vec![1, 2, 3]).expect("fresh");
        assert!(buf.invalidate(Sequence(1)));
        assert!(!buf.invalidate(Sequence(1)));
        assert!(buf.get(Sequence(1)).is_none());
        let slot = buf.insert_in_place(Sequence(5)).expect("newer");
        assert_eq!(slot, &vec![1, 2, 3]);
        assert_eq!(buf.occupant(Sequence(9)), Some(Sequence(5)));
        assert_eq!(buf.occupant(Sequence(8)), None);
    }

    #[test]
    #[should_panic(expected = "sequence buffer size")]
    fn zero_size_panics() {
        let _ = SequenceBuffer::<()>::new(0);
    }
}
