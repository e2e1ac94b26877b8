//! The send side's record of what each sent packet carried on reliable channels (its
//! messages and block fragments), kept by packet sequence until the packet is acked
//! or its slot is reused.

use crate::packet::{Sequence, SequenceBuffer};

/// What one sent packet carried on a reliable channel: a message, or a fragment.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SentItem {
    channel: u16,
    id: u16,
    /// `WHOLE` for a whole message.
    fragment: u32,
}

const WHOLE: u32 = u32::MAX;

impl SentItem {
    /// The message `id` of `channel`, whole.
    pub(crate) fn message(channel: usize, id: u16) -> Self {
        Self {
            channel: channel as u16,
            id,
            fragment: WHOLE,
        }
    }

    /// Fragment `index` of the block `id` of `channel`.
    pub(crate) fn fragment(channel: usize, id: u16, index: u32) -> Self {
        Self {
            channel: channel as u16,
            id,
            fragment: index,
        }
    }

    /// The channel's index.
    pub(crate) fn channel(&self) -> usize {
        usize::from(self.channel)
    }

    /// The message (or block) id.
    pub(crate) fn id(&self) -> u16 {
        self.id
    }

    /// The fragment index, `None` for a whole message.
    pub(crate) fn fragment_index(&self) -> Option<usize> {
        (self.fragment != WHOLE).then_some(self.fragment as usize)
    }
}

/// The records of the last `sent_packets_buffer_size` packets, by sequence.
#[derive(Debug)]
pub(crate) struct SentPackets {
    packets: SequenceBuffer<Vec<SentItem>>,
}

impl SentPackets {
    /// Asks the CPU for the record of the newest packet, the one an ack most likely
    /// names, and the slot the next packet's record takes (`crate::prefetch`, stage
    /// two).
    #[inline]
    pub(crate) fn prefetch_newest(&self) {
        let next = self.packets.next_sequence();
        self.packets.prefetch(next.prev());
        self.packets.prefetch(next);
    }

    /// Stage three: the items of that record (their own allocation).
    #[inline]
    pub(crate) fn prefetch_newest_items(&self) {
        let newest = self.packets.next_sequence().prev();
        if let Some(first) = self.packets.get(newest).and_then(|items| items.first()) {
            crate::prefetch::prefetch(first);
        }
    }

    /// Room for `size` packet records.
    pub(crate) fn new(size: usize) -> Self {
        let mut packets: SequenceBuffer<Vec<SentItem>> = SequenceBuffer::new(size);
        // Every packet record gets room for 4 items now (what its first item would
        // allocate), so that a packet carrying reliable messages does not allocate in
        // the tick; only a packet with more items grows its record, once.
        for i in 0..size {
            packets.slot_mut(Sequence(i as u16)).reserve(4);
        }
        Self { packets }
    }

    /// The record of packet `sequence`, emptied, to fill while the packet is written;
    /// `None` when the sequence is too old for the buffer (then nothing is recorded).
    pub(crate) fn start(&mut self, sequence: Sequence) -> Option<&mut Vec<SentItem>> {
        let record = self.packets.insert_in_place(sequence).ok()?;
        record.clear();
        Some(record)
    }

    /// Packet `sequence` was acked: hands each item it carried to `acked`, once, and
    /// forgets the packet; returns `false` (and does nothing) for an unknown or
    /// already processed sequence.
    pub(crate) fn acked(&mut self, sequence: Sequence, mut acked: impl FnMut(SentItem)) -> bool {
        let Some(items) = self.packets.get_mut(sequence) else {
            return false;
        };
        for item in items.drain(..) {
            acked(item);
        }
        self.packets.invalidate(sequence);
        true
    }
}
