//! Reassembly of fragmented packets: a bounded table of partial packets.

use super::fragment::Fragment;
use super::header::PacketHeader;
use super::sequence::Sequence;
use super::sequence_buffer::SequenceBuffer;

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

/// A packet being reassembled. The data buffer is kept (and reused) when the entry
/// is evicted or completed, so a steady stream of fragmented packets does not
/// allocate, and the table's memory stays below `entries * max_fragments * size`.
#[derive(Debug, Default)]
pub(crate) struct Partial {
    count: u16,
    received: u16,
    mask: [u64; 4],
    header: Option<PacketHeader>,
    last_len: usize,
    data: Vec<u8>,
}

impl Partial {
    fn start(&mut self, count: u16, fragment_size: usize) {
        self.count = count;
        self.received = 0;
        self.mask = [0; 4];
        self.header = None;
        self.last_len = 0;
        // Grow only: stale bytes past what fragments write are never read, because a
        // packet completes only when every fragment has written its range.
        let needed = usize::from(count) * fragment_size;
        if self.data.len() < needed {
            self.data.reserve_exact(needed - self.data.len());
            self.data.resize(needed, 0);
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
                p.start(count, fs);
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
        // The fragment parser guarantees len <= fs and id < count, and `start` sized
        // the buffer to count * fs.
        let offset = id * fs;
        partial.data[offset..offset + len].copy_from_slice(fragment.payload);

        if partial.received < count {
            return Ok(None);
        }
        let len = (usize::from(count) - 1) * fs + partial.last_len;
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
            .map(|i| self.table.slot_at(i).data.capacity())
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
        assert_eq!(r.memory(), cap);
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
