//! One channel's send state: its queue (reliable or unreliable) and the largest
//! message it sends inline. The send side (`send`) holds one per channel; the
//! selection (`select`) and the packet writer (`writer`) read and take from them.

use super::block::{BlockProgress, OutgoingBlock};
use super::config::ChannelConfig;
use super::encoded::Payload;
use super::payload::{entry_header_bits, message_id_bits};
use super::reliable::ReliableSender;
use super::sent::SentItem;
use super::unreliable::UnreliableSender;
use crate::stream::NetMessage;

/// One channel's send queue, by channel kind.
#[derive(Debug)]
pub(crate) enum SendQueue<M> {
    /// Reliable channels (ordered or unordered): ids, acks, resends, blocks.
    Reliable(ReliableSender<M>),
    /// Unreliable channels (unordered or sequenced): each message written once.
    Unreliable(UnreliableSender<M>),
}

/// One channel's send state.
#[derive(Debug)]
pub(crate) struct ChannelSender<M> {
    /// Largest message sent inline, bits.
    inline_max: usize,
    queue: SendQueue<M>,
}

impl<M> ChannelSender<M> {
    /// Asks the CPU for what an ack of this channel's messages reads
    /// (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_queue(&self) {
        match &self.queue {
            SendQueue::Reliable(queue) => queue.prefetch(),
            SendQueue::Unreliable(queue) => queue.prefetch(),
        }
    }

    /// The send state of `config`, one of `channels` channels.
    pub(crate) fn new(config: &ChannelConfig, channels: usize) -> Self {
        let queue = if config.kind.is_reliable() {
            SendQueue::Reliable(ReliableSender::new(config.send_queue_size))
        } else {
            SendQueue::Unreliable(UnreliableSender::new(config.send_queue_size))
        };
        let id_bits = if config.kind.has_ids() {
            message_id_bits(None, 0)
        } else {
            0
        };
        let fits = config
            .max_bits_per_packet
            .saturating_sub(entry_header_bits(channels, config) + id_bits);
        Self {
            inline_max: config.max_message_bits.map_or(fits, |m| m.min(fits)),
            queue,
        }
    }

    /// Largest message sent inline, bits.
    pub(crate) fn inline_max(&self) -> usize {
        self.inline_max
    }

    /// The send queue.
    pub(crate) fn queue(&self) -> &SendQueue<M> {
        &self.queue
    }

    /// The send queue, mutably (the selection marks what it takes, the writer takes
    /// unreliable messages).
    pub(crate) fn queue_mut(&mut self) -> &mut SendQueue<M> {
        &mut self.queue
    }

    /// Messages queued and not released: reliable, sent or not and not acked;
    /// unreliable, not written yet.
    pub(crate) fn len(&self) -> usize {
        match &self.queue {
            SendQueue::Reliable(send) => send.len(),
            SendQueue::Unreliable(send) => send.len(),
        }
    }

    /// `true` when something is queued.
    pub(crate) fn pending(&self) -> bool {
        self.len() > 0
    }

    pub(crate) fn is_full(&self) -> bool {
        match &self.queue {
            SendQueue::Reliable(send) => send.len() >= send.capacity(),
            SendQueue::Unreliable(send) => send.is_full(),
        }
    }

    /// Queues an admitted message: as a block of `block` bytes when given (a reliable
    /// channel with blocks), inline otherwise.
    pub(crate) fn push(
        &mut self,
        config: &ChannelConfig,
        message: Payload<M>,
        bits: usize,
        block: Option<Box<[u8]>>,
    ) where
        M: NetMessage,
    {
        match &mut self.queue {
            SendQueue::Reliable(send) => {
                match (block, config.blocks) {
                    (Some(bytes), Some(b)) => {
                        send.push_block(OutgoingBlock::new(bytes, b.fragment_size))
                    }
                    _ => send.push_message(message, bits),
                };
            }
            SendQueue::Unreliable(send) => send.push(message, bits),
        }
    }

    /// How far the oldest queued block has come.
    pub(crate) fn progress(&self) -> Option<BlockProgress> {
        let SendQueue::Reliable(send) = &self.queue else {
            return None;
        };
        (0..send.len()).find_map(|k| {
            let id = send.oldest.wrapping_add(k as u16);
            send.block(id).map(|b| BlockProgress {
                id,
                bytes: b.acked_bytes(),
                total: b.size(),
            })
        })
    }

    /// Releases what `item` names (an acked packet carried it); returns `true` when
    /// that is a message, or a fragment, acked for the first time.
    pub(crate) fn ack(&mut self, item: SentItem) -> bool
    where
        M: NetMessage,
    {
        let send = match &mut self.queue {
            SendQueue::Reliable(send) => send,
            SendQueue::Unreliable(send) => {
                // A tracked unreliable message: its receipt.
                send.acked(item.id());
                return false;
            }
        };
        let Some(index) = item.fragment_index() else {
            return send.release(item.id());
        };
        let Some(block) = send.block_mut(item.id()) else {
            return false;
        };
        let fresh = block.unacked(index);
        if block.ack(index) {
            send.release(item.id());
        }
        fresh
    }

    /// Moves a reliable queue's window past the ids released.
    pub(crate) fn advance(&mut self) {
        if let SendQueue::Reliable(send) = &mut self.queue {
            send.advance();
        }
    }
}
