//! Reassembly of fragmented packets: a bounded table of partial packets.

use super::fragment::Fragment;
use super::header::PacketHeader;
use super::sequence_buffer::SequenceBuffer;
use crate::grow::grow_within;
use crate::sequence::Sequence;

/// Why a (well-formed) fragment could not be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoreError {
    /// Older than the reassembly window.
    Stale,
    /// The fragment count differs from the one of the first fragment seen.
    CountMismatch { expected: u16, got: u16 },
    /// This fragment id was already stored.
    Duplicate,
}

/// A packet being reassembled. Its memory grows with the fragments received, never
/// with the fragment count they declare: each fragment's bytes are appended in
/// arrival order, and laid out in place (one rotation and at most `count - 1` swaps
/// of fragments, nothing allocated) when the packet completes. The buffers are kept
/// (and reused) when the entry is evicted or completed, so a steady stream of
/// fragmented packets does not allocate; a slot's buffers never exceed
/// `max_fragments * fragment_size` bytes and `max_fragments` ids.
#[derive(Debug, Default)]
pub(crate) struct Partial {
    count: u16,
    received: u16,
    mask: [u64; 4],
    header: Option<PacketHeader>,
    /// Bytes of the last fragment (0 until it arrives).
    last_len: usize,
    /// The fragments' bytes, in arrival order.
    data: Vec<u8>,
    /// The fragments' ids, in arrival order.
    order: Vec<u8>,
}

impl Partial {
    fn start(&mut self, count: u16) {
        self.count = count;
        self.received = 0;
        self.mask = [0; 4];
        self.header = None;
        self.last_len = 0;
        self.data.clear();
        self.order.clear();
    }

    /// Lays the fragments (all received) out in order: the last fragment, the only
    /// one that can be shorter, goes to the end, then every other fragment is swapped
    /// into its place. `order` ends up sorted.
    fn lay_out(&mut self, fragment_size: usize) {
        let fs = fragment_size;
        let last = self.count.wrapping_sub(1) as u8;
        if let Some(t) = self.order.iter().position(|&id| id == last)
            && let (Some(bytes), Some(ids)) = (self.data.get_mut(t * fs..), self.order.get_mut(t..))
        {
            bytes.rotate_left(self.last_len);
            ids.rotate_left(1);
        }
        let full = usize::from(self.count).saturating_sub(1);
        for k in 0..full {
            // Each swap puts one fragment in its place for good: at most `full` swaps.
            while let Some(&id) = self.order.get(k)
                && usize::from(id) != k
            {
                let j = usize::from(id);
                if j >= full {
                    // Unreachable: ids are distinct and below `count`.
                    break;
                }
                let (low, high) = self.data.split_at_mut(j * fs);
                if let (Some(a), Some(b)) = (low.get_mut(k * fs..(k + 1) * fs), high.get_mut(..fs))
                {
                    a.swap_with_slice(b);
                }
                self.order.swap(k, j);
            }
        }
    }
}

/// A completed packet, handed out of the table. Give `data` back with
/// [`Reassembly::recycle`] to keep its allocation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Completed {
    pub(crate) header: PacketHeader,
    pub(crate) data: Vec<u8>,
    pub(crate) len: usize,
}

/// The table of packets being reassembled, indexed by sequence.
#[derive(Debug)]
pub(crate) struct Reassembly {
    table: SequenceBuffer<Partial>,
    fragment_size: usize,
}

impl Reassembly {
    pub(crate) fn new(entries: usize, fragment_size: usize) -> Self {
        Self {
            table: SequenceBuffer::new(entries),
            fragment_size,
        }
    }

    /// Stores a validated fragment; returns the packet when it is complete.
    pub(crate) fn store(
        &mut self,
        fragment: &Fragment<'_>,
    ) -> Result<Option<Completed>, StoreError> {
        let sequence = fragment.header.sequence;
        let count = fragment.header.fragment_count;
        let fs = self.fragment_size;
        let partial = match self.table.get_mut(sequence) {
            Some(p) => p,
            None => {
                let p = self
                    .table
                    .insert_in_place(sequence)
                    .map_err(|_| StoreError::Stale)?;
                p.start(count);
                p
            }
        };
        if partial.count != count {
            return Err(StoreError::CountMismatch {
                expected: partial.count,
                got: count,
            });
        }
        let id = usize::from(fragment.header.fragment_id);
        let (word, bit) = (id / 64, 1u64 << (id % 64));
        if partial.mask[word] & bit != 0 {
            return Err(StoreError::Duplicate);
        }
        partial.mask[word] |= bit;
        partial.received += 1;
        if fragment.packet_header.is_some() {
            partial.header = fragment.packet_header;
        }
        let len = fragment.payload.len();
        if id + 1 == usize::from(count) {
            partial.last_len = len;
        }
        // The fragment parser guarantees len <= fs (exactly fs but for the last) and
        // id < count: the buffers stay within count * fs bytes and count ids.
        let whole = usize::from(count) * fs;
        grow_within(&mut partial.data, len, whole);
        partial.data.extend_from_slice(fragment.payload);
        grow_within(&mut partial.order, 1, usize::from(count));
        partial.order.push(fragment.header.fragment_id);

        if partial.received < count {
            return Ok(None);
        }
        partial.lay_out(fs);
        let len = partial.data.len();
        let header = partial.header;
        let data = core::mem::take(&mut partial.data);
        self.table.invalidate(sequence);
        // Fragment 0 is always among the received ones, and carries the header.
        Ok(header.map(|header| Completed { header, data, len }))
    }

    /// Gives a completed packet's buffer back to its slot for reuse.
    pub(crate) fn recycle(&mut self, sequence: Sequence, data: Vec<u8>) {
        let slot = self.table.slot_mut(sequence);
        if slot.data.capacity() < data.capacity() {
            slot.data = data;
        }
    }

    /// Abandons every partial packet up to `sequence` (a packet at or beyond them was
    /// received whole).
    pub(crate) fn advance(&mut self, sequence: Sequence) {
        self.table.advance(sequence);
    }

    /// Packets currently being reassembled.
    pub(crate) fn pending(&self) -> usize {
        self.table.occupied()
    }

    /// Bytes held by reassembly buffers (in use or kept for reuse).
    pub(crate) fn memory(&self) -> usize {
        (0..self.table.capacity())
            .map(|i| {
                let slot = self.table.slot_at(i);
                slot.data.capacity() + slot.order.capacity()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::fragment::FragmentHeader;

    fn frag<'a>(seq: u16, id: u8, count: u16, payload: &'a [u8]) -> Fragment<'a> {
        Fragment {
            header: FragmentHeader {
                sequence: Sequence(seq),
                fragment_id: id,
                fragment_count: count,
            },
            packet_header: (id == 0).then_some(PacketHeader {
                sequence: Sequence(seq),
                ack: Sequence(1),
                ack_bits: 3,
            }),
            payload,
        }
    }

    #[test]
    fn any_order_and_buffer_reuse() {
        let mut r = Reassembly::new(4, 2);
        assert_eq!(r.store(&frag(7, 2, 3, &[5])), Ok(None));
        assert_eq!(r.store(&frag(7, 0, 3, &[1, 2])), Ok(None));
        assert_eq!(r.store(&frag(7, 0, 3, &[1, 2])), Err(StoreError::Duplicate));
        assert_eq!(
            r.store(&frag(7, 1, 2, &[3, 4])),
            Err(StoreError::CountMismatch {
                expected: 3,
                got: 2
            })
        );
        let done = r
            .store(&frag(7, 1, 3, &[3, 4]))
            .expect("ok")
            .expect("complete");
        assert_eq!(&done.data[..done.len], &[1, 2, 3, 4, 5]);
        assert_eq!(done.header.ack_bits, 3);
        assert_eq!(r.pending(), 0);
        let cap = done.data.capacity();
        r.recycle(Sequence(7), done.data);
        // The data buffer, and the slot's list of 3 ids.
        assert_eq!(r.memory(), cap + 3);
    }

    #[test]
    fn fragments_in_any_order_are_laid_out_in_place() {
        let fs = 4;
        let packet: Vec<u8> = (0..30u8).collect();
        let count = packet.len().div_ceil(fs) as u16;
        let chunk = |id: u16| &packet[usize::from(id) * fs..((usize::from(id) + 1) * fs).min(30)];
        // Reversed, the last fragment first, last in the middle, shuffled, in order.
        let orders: [Vec<u16>; 5] = [
            (0..count).rev().collect(),
            vec![7, 0, 1, 2, 3, 4, 5, 6],
            vec![3, 1, 7, 6, 0, 2, 5, 4],
            vec![5, 2, 6, 0, 4, 1, 3, 7],
            (0..count).collect(),
        ];
        let mut r = Reassembly::new(4, fs);
        for (k, order) in orders.iter().enumerate() {
            let seq = k as u16;
            for (n, &id) in order.iter().enumerate() {
                let done = r.store(&frag(seq, id as u8, count, chunk(id))).expect("ok");
                assert_eq!(done.is_some(), n + 1 == order.len());
                if let Some(done) = done {
                    assert_eq!(&done.data[..done.len], &packet[..], "{order:?}");
                    r.recycle(Sequence(seq), done.data);
                }
            }
        }
        // Each slot keeps buffers of at most count * fs bytes and count ids.
        assert_eq!(r.memory(), 4 * (32 + 8));
    }

    #[test]
    fn memory_grows_with_the_fragments_received() {
        // The last fragment (one byte) of packets of 256 fragments of 1024 bytes: one
        // byte and one id each, not 256 KiB.
        let mut r = Reassembly::new(64, 1024);
        for seq in 0..200u16 {
            assert_eq!(r.store(&frag(seq, 255, 256, &[1])), Ok(None));
        }
        assert_eq!(r.pending(), 64);
        assert_eq!(r.memory(), 64 * 2);
        // Fragments 1.. of one of them: its buffers at most double what arrived.
        let body = [2u8; 1024];
        for id in 1..100u8 {
            assert_eq!(r.store(&frag(199, id, 256, &body)), Ok(None));
            let arrived = 1 + usize::from(id) * 1024 + usize::from(id) + 1;
            let memory = r.memory() - 63 * 2;
            assert!(memory <= 2 * arrived, "{memory} for {arrived}");
        }
    }

    #[test]
    fn table_is_bounded_and_stale_refused() {
        let mut r = Reassembly::new(4, 2);
        for seq in 0..100u16 {
            assert_eq!(r.store(&frag(seq, 1, 2, &[9])), Ok(None));
            assert!(r.pending() <= 4);
        }
        assert_eq!(r.store(&frag(10, 1, 2, &[9])), Err(StoreError::Stale));
        assert!(r.memory() <= 4 * 2 * 2);
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod size_tests {
    /// The slot bookkeeping `EndpointConfig::memory_bound`'s documentation states.
    #[test]
    fn a_slot_is_as_documented() {
        assert_eq!(size_of::<super::Partial>(), 104);
    }
}
