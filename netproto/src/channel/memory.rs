//! The memory bound of a message layer: what its configuration lets every part of a
//! [`MessageLayer`](super::MessageLayer) hold (the queues, blocks, packet records and
//! staging of `send`, `receive` and `sent`), from the sizes of those parts.

use super::config::{ChannelConfig, ChannelKind};
use super::layer_config::LayerConfig;

impl LayerConfig {
    /// The most heap memory, in bytes, a [`MessageLayer<M>`](super::MessageLayer)
    /// with this configuration holds, whatever the peer sends and however long the
    /// application leaves messages unread, when no message of `M` owns more than
    /// `message_heap` bytes of heap (a `String` of `max_len` bytes owns at most
    /// `max_len`; a message without `String` or `Vec` fields owns none):
    ///
    /// ```text
    /// sum over channels of
    ///     send_queue_size    * (slot + max(message_heap, block, encoded))   the send queue
    ///   + receive_queue_size * (slot + message_heap)               the receive queue
    ///   + max_blocks_in_flight * (max_block_size + 2 * fragments
    ///                             + 16 * ceil(fragments / 64) + P)  reassembly (blocks)
    /// + sent_packets_buffer_size * (32 + 8 * items)                packet records
    /// + staging
    /// ```
    ///
    /// where `slot` is the size of a queue slot (about `size_of::<M>()`; an unreliable
    /// queue grows to at least 4 slots), `block = q + 9 * ceil(q / fragment_size)` is
    /// what a queued block holds, with `q = min(max_block_size, M::MAX_BITS / 8)` (a
    /// block is an encoded message of the set), `encoded` what a queued
    /// [`Encoded`](super::Encoded) message holds (`M::MAX_BITS / 8` plus 24 bytes), `fragments` is
    /// [`BlockConfig::max_fragments`](super::BlockConfig::max_fragments), `P` a reassembly's bookkeeping (96 bytes; a
    /// reassembly holds the bytes of the fragments received, in arrival order, their
    /// indexes (2 bytes each) and a sparse bitmap of them (16 bytes per 64 fragments),
    /// each growing as fragments arrive: a peer must send the bytes it makes us hold,
    /// whatever block size it declares),
    /// `items` the reliable messages and fragments one packet can carry (summed over
    /// channels, rounded up to a power of two, at least 4), and `staging` the scratch
    /// space of one packet: twice the largest encoded message or block, the payload
    /// (`max_packet_bits / 8`) and the largest block, plus a few words per item and
    /// channel (the transport's stacks lend one scratch space to all of their
    /// connections' layers, which then hold none of their own: the bound still counts
    /// it per layer). Every term is fixed by the configuration: nothing a peer sends can
    /// add another.
    pub fn memory_bound<M: crate::NetMessage>(&self, message_heap: usize) -> usize {
        use core::mem::size_of;
        let sum = |terms: &[usize]| terms.iter().fold(0usize, |a, &b| a.saturating_add(b));
        let mut total = 0usize;
        let mut items = 0usize;
        let mut largest_block = 0usize;
        let mut per_packet_messages = 0usize;
        // A queued Encoded message (a broadcast) holds its bytes behind an Arc.
        let encoded = M::MAX_BITS.div_ceil(8) + 8 + 2 * size_of::<usize>();
        for c in &self.channels {
            per_packet_messages += c.max_messages_per_packet;
            let (block, reassembly) = match c.blocks {
                Some(b) => {
                    largest_block = largest_block.max(b.max_block_size);
                    // A queued block is an encoded message of the set: at most
                    // M::MAX_BITS / 8 bytes, whatever max_block_size allows.
                    let queued = b.max_block_size.min(M::MAX_BITS.div_ceil(8));
                    let block = sum(&[
                        queued,
                        9usize.saturating_mul(queued.div_ceil(b.fragment_size.max(1))),
                    ]);
                    // A reassembly's heap, and its entry in the list (which grows one
                    // entry at a time, up to max_blocks_in_flight).
                    let partial = sum(&[
                        super::block::partial_block_heap(b.max_block_size, b.max_fragments()),
                        size_of::<super::block::PartialBlock>(),
                    ]);
                    (block, b.max_blocks_in_flight.saturating_mul(partial))
                }
                None => (0, 0),
            };
            let queues = match c.kind {
                ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered => {
                    items += c.max_messages_per_packet
                        + c.blocks.map_or(0, |b| b.max_fragments_per_packet);
                    let send_slot = super::reliable::ReliableSender::<M>::slot_bytes();
                    // A slot, and (unordered) the id in the ready list.
                    let receive_slot = size_of::<super::reliable::ReceiveSlot<M>>() + 2;
                    sum(&[
                        c.send_queue_size
                            .saturating_mul(send_slot + message_heap.max(block).max(encoded)),
                        c.receive_queue_size
                            .max(4)
                            .saturating_mul(receive_slot + message_heap),
                    ])
                }
                ChannelKind::UnreliableUnordered | ChannelKind::UnreliableSequenced => sum(&[
                    c.send_queue_size
                        .max(4)
                        .saturating_mul(size_of::<super::unreliable::SendSlot<M>>()),
                    c.send_queue_size.saturating_mul(message_heap.max(encoded)),
                    c.receive_queue_size.max(4).saturating_mul(size_of::<M>()),
                    c.receive_queue_size.saturating_mul(message_heap),
                ]),
            };
            total = sum(&[
                total,
                queues,
                reassembly,
                size_of::<super::sender::ChannelSender<M>>()
                    + size_of::<super::receive::ChannelReceiver<M>>()
                    + size_of::<i64>()
                    + size_of::<ChannelConfig>(),
            ]);
        }
        let item = size_of::<super::sent::SentItem>();
        let records = self.sent_packets_buffer_size.saturating_mul(
            crate::packet::sequence_buffer::slot_bytes::<Vec<super::sent::SentItem>>()
                + item * items.next_power_of_two().max(4),
        );
        // Scratch vectors keep their largest size; growth at most doubles a need.
        let encoded = (M::MAX_BITS.div_ceil(8) + 8).max(largest_block + 8);
        let per_packet = (per_packet_messages + items).next_power_of_two().max(4);
        let staging = sum(&[
            2 * encoded,
            2 * self.max_packet_bits.div_ceil(8),
            2 * largest_block,
            per_packet.saturating_mul(size_of::<(usize, Option<u16>, M)>() + 64),
            self.channels.len() * 256,
        ]);
        sum(&[total, records, staging])
    }
}
