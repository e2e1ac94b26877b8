//! The send side of the message layer: each channel's send queue, what a packet
//! carries (the selection and the channels' credit: [`select`](super::select)), how a
//! packet is filled ([`writer`](super::writer)), the record of what each sent packet
//! carried ([`sent`](super::sent)) and the acks that release it, and the round trip
//! that reliable channels time their resends by.

use std::time::Duration;

use super::block::BlockProgress;
use super::config::ChannelConfig;
use super::encoded::{Encoded, Payload};
use super::error::ChannelSendError;
use super::id::ChannelId;
use super::layer_config::LayerConfig;
use super::select::{Packer, Selection};
use super::sender::{ChannelSender, SendQueue};
use super::sent::SentPackets;
use super::stats::{ChannelStats, LayerStats};
use super::typed::{BoundsCheck, TooLong, TypeIdProbe};
use super::writer;
use crate::Time;
use crate::packet::Sequence;
use crate::stream::{NetMessage, ReadStream, Stream, WriteStream};

/// Largest block any channel may have ([`BlockConfig::max_block_size`](super::BlockConfig::max_block_size)).
const MAX_BLOCK_SIZE: usize = 1 << 24;

/// The refusal of a message of `size` bits (within its declared bounds) on a channel
/// that takes at most `max`, naming what would help: blocks only when a block could
/// hold it.
fn too_large(channel: usize, config: &ChannelConfig, size: usize, max: usize) -> ChannelSendError {
    let bulk = super::BlockConfig::bulk().max_block_size.saturating_mul(8);
    let largest = MAX_BLOCK_SIZE * 8;
    ChannelSendError::TooLarge {
        channel: ChannelId::new(channel),
        size,
        max,
        fix: match config.blocks {
            _ if size > largest => {
                "it is larger than any block (16 MiB): split it into smaller messages"
            }
            None if size <= bulk => "send it on a channel with blocks (ChannelConfig::bulk)",
            None => {
                "send it on a channel with blocks whose max_block_size holds it \
                 (ChannelConfig::bulk().with_blocks(..), at most 16 MiB)"
            }
            Some(_) => "raise this channel's blocks.max_block_size (at most 16 MiB)",
        },
    }
}

/// The refusal of a message whose type the channel is not declared for, if it is not.
fn check_type<M: NetMessage>(
    config: &ChannelConfig,
    channel: ChannelId,
    type_id: impl FnOnce(u32) -> Option<u64>,
) -> Result<(), ChannelSendError> {
    let Some(bits) = config.carries.type_bits() else {
        return Ok(());
    };
    let Some(id) = type_id(bits) else {
        return Ok(());
    };
    if config.carries.allows(id) {
        return Ok(());
    }
    let variant = usize::try_from(id)
        .ok()
        .and_then(|i| M::SCHEMA.variants().get(i));
    let name = variant.map_or("?", |v| v.name);
    let sent = variant
        .filter(|v| v.fields.len() == 1)
        .map_or(name, |v| v.fields[0].schema.name);
    let (declared, others) = config.carries.first();
    Err(ChannelSendError::WrongType {
        channel,
        declared,
        others,
        sent,
        set: M::SCHEMA.name,
        variant: name,
    })
}

/// The refusal of a message with a value outside its declared bounds
/// ([`BoundsCheck::run`]'s error), naming the field (and for a length, the length and
/// the limit).
fn refusal((error, too_long): (crate::StreamError, Option<TooLong>)) -> ChannelSendError {
    match too_long {
        Some(t) => ChannelSendError::ValueTooLong {
            field: t.field,
            len: t.len,
            max_len: t.max_len,
        },
        None => ChannelSendError::Invalid(error),
    }
}

/// The send side: the layer's [`LayerConfig`] is passed in by the layer, the event
/// counters too.
#[derive(Debug)]
pub(crate) struct SendSide<M> {
    /// Per channel, by index.
    channels: Vec<ChannelSender<M>>,
    /// The selection of what a packet carries, and the channels' credit.
    packer: Packer,
    /// What each sent packet carried on reliable channels.
    sent: SentPackets,
    /// Round-trip time estimate (for `resend_rtt_factor`).
    rtt: Duration,
    /// Encoding scratch (send-time validation).
    scratch: Vec<u8>,
    /// A message was queued since the last packet was written.
    queued: bool,
}

impl<M> SendSide<M> {
    /// Asks the CPU for the send side's own fields an ack reads (`crate::prefetch`,
    /// stage one).
    #[inline]
    pub(crate) fn prefetch_fields(&self) {
        crate::prefetch::prefetch(&self.sent);
        crate::prefetch::prefetch(&self.channels);
        crate::prefetch::prefetch(&self.packer);
        crate::prefetch::prefetch(&self.queued);
    }

    /// Stage two: each channel's send state and the newest packet's record.
    #[inline]
    pub(crate) fn prefetch_channels(&self) {
        for channel in &self.channels {
            crate::prefetch::prefetch(channel);
        }
        self.sent.prefetch_newest();
        self.packer.prefetch();
    }

    /// Stage three: the messages an ack of the newest packet releases.
    #[inline]
    pub(crate) fn prefetch_queues(&self) {
        for channel in &self.channels {
            channel.prefetch_queue();
        }
        self.sent.prefetch_newest_items();
    }
}

impl<M: NetMessage> SendSide<M> {
    /// The send side of a layer with `config` (validated).
    pub(crate) fn new(config: &LayerConfig) -> Self {
        let n = config.channels.len();
        Self {
            channels: config
                .channels
                .iter()
                .map(|c| ChannelSender::new(c, n))
                .collect(),
            packer: Packer::new(n),
            sent: SentPackets::new(config.sent_packets_buffer_size),
            rtt: Duration::ZERO,
            scratch: Vec::new(),
            queued: false,
        }
    }

    /// Sets the round trip resends scale by; ignored unless positive.
    pub(crate) fn set_rtt(&mut self, rtt: Duration) {
        if !rtt.is_zero() {
            self.rtt = rtt;
        }
    }

    /// `true` when a message was queued since the last packet, or the last packet
    /// left something due.
    pub(crate) fn has_news(&self) -> bool {
        self.queued || self.packer.more()
    }

    /// `true` when the last packet left something due that did not fit.
    pub(crate) fn more_to_send(&self) -> bool {
        self.packer.more()
    }

    /// `true` when every channel's queue is empty.
    pub(crate) fn is_flushed(&self) -> bool {
        self.channels.iter().all(|ch| !ch.pending())
    }

    /// Messages queued on `channel` and not released (0 for no such channel).
    pub(crate) fn queue_len(&self, channel: ChannelId) -> usize {
        self.channels
            .get(channel.index())
            .map_or(0, ChannelSender::len)
    }

    /// Refuses to track messages on a reliable `channel` (or on none).
    pub(crate) fn check_trackable(
        &self,
        config: &LayerConfig,
        channel: ChannelId,
    ) -> Result<(), ChannelSendError> {
        match self.channels.get(channel.index()).map(ChannelSender::queue) {
            Some(SendQueue::Unreliable(_)) => Ok(()),
            Some(SendQueue::Reliable(_)) => Err(ChannelSendError::NotTracked { channel }),
            None => Err(ChannelSendError::NoSuchChannel {
                channel,
                channels: config.channels.len(),
            }),
        }
    }

    /// Tracks the message queued last on the unreliable `channel`: its receipt.
    pub(crate) fn track_last(&mut self, channel: ChannelId) -> Option<u16> {
        match self.channels.get_mut(channel.index())?.queue_mut() {
            SendQueue::Unreliable(send) => send.track_last(),
            SendQueue::Reliable(_) => None,
        }
    }

    /// The oldest receipt acked on the unreliable `channel`, taken.
    pub(crate) fn pop_receipt(&mut self, channel: ChannelId) -> Option<u16> {
        match self.channels.get_mut(channel.index())?.queue_mut() {
            SendQueue::Unreliable(send) => send.pop_acked(),
            SendQueue::Reliable(_) => None,
        }
    }

    /// How far the oldest block queued on `channel` has come.
    pub(crate) fn progress(&self, channel: ChannelId) -> Option<BlockProgress> {
        self.channels.get(channel.index())?.progress()
    }

    /// Measures and validates `message` in one pass (it is written when a packet
    /// takes it), and queues it.
    pub(crate) fn send(
        &mut self,
        config: &LayerConfig,
        channel: ChannelId,
        message: M,
        counters: &mut LayerStats,
    ) -> Result<(), ChannelSendError> {
        if let Some(c) = config.channels.get(channel.index()) {
            check_type::<M>(c, channel, |_| TypeIdProbe::of(&message))?;
        }
        let channel = channel.index();
        // The measure, or the writer's refusal (then the measure for the channel's
        // verdict, which comes first).
        let checked = BoundsCheck::run(&message);
        let bits = match checked {
            Ok(bits) => bits,
            Err(_) => crate::codec::measure(&message),
        };
        // Measured with every align at 7 bits: the written size may be 7 bits less.
        let block = match self.admit(config, channel, bits, 7, counters) {
            // A value beyond its bounds (a string above its max_len) is the fault, not
            // the channel: say so.
            Err(e @ ChannelSendError::TooLarge { .. }) => {
                checked.map_err(refusal)?;
                return Err(e);
            }
            admitted => admitted?,
        };
        checked.map_err(refusal)?;
        let c = &config.channels[channel];
        let bytes = match c.blocks {
            // A block is sent as bytes: written now.
            Some(b) if block => {
                self.scratch.clear();
                self.scratch.resize(bits.div_ceil(8) + 8, 0);
                let mut w = WriteStream::new(&mut self.scratch);
                // Checked: the writer, given the measured room, does not refuse it.
                message.write(&mut w).map_err(ChannelSendError::Invalid)?;
                let written = w.finish();
                if written > b.max_block_size {
                    return Err(too_large(channel, c, written * 8, b.max_block_size * 8));
                }
                Some(self.scratch[..written].to_vec().into_boxed_slice())
            }
            _ => None,
        };
        self.push(
            config,
            channel,
            Payload::Value(message),
            bits,
            bytes,
            counters,
        );
        Ok(())
    }

    /// Queues a message encoded once.
    pub(crate) fn send_encoded(
        &mut self,
        config: &LayerConfig,
        channel: ChannelId,
        encoded: &Encoded,
        counters: &mut LayerStats,
    ) -> Result<(), ChannelSendError> {
        let bits = encoded.bits();
        if bits > M::MAX_BITS {
            // Encoded from another message set.
            return Err(ChannelSendError::TooLarge {
                channel,
                size: bits,
                max: M::MAX_BITS,
                fix: "encode a message of this layer's message set",
            });
        }
        if let Some(c) = config.channels.get(channel.index()) {
            check_type::<M>(c, channel, |bits| {
                let mut id = 0;
                let mut r = ReadStream::new(encoded.bytes());
                r.serialize_bits(&mut id, bits).ok().map(|()| id)
            })?;
        }
        let channel = channel.index();
        let block = self.admit(config, channel, bits, 0, counters)?;
        let bytes = block.then(|| encoded.bytes().to_vec().into_boxed_slice());
        self.push(
            config,
            channel,
            Payload::Encoded(encoded.clone()),
            bits,
            bytes,
            counters,
        );
        Ok(())
    }

    /// What `send` and `send_encoded` check first: the channel exists, a message of
    /// `bits` (`slack` bits fewer once written) can go on it, and its queue has room.
    /// Returns whether it goes as a block.
    fn admit(
        &self,
        config: &LayerConfig,
        channel: usize,
        bits: usize,
        slack: usize,
        counters: &mut LayerStats,
    ) -> Result<bool, ChannelSendError> {
        let (Some(ch), Some(c)) = (self.channels.get(channel), config.channels.get(channel)) else {
            return Err(ChannelSendError::NoSuchChannel {
                channel: ChannelId::new(channel),
                channels: self.channels.len(),
            });
        };
        let block = bits > ch.inline_max();
        if block {
            let max = c.blocks.map_or(ch.inline_max(), |b| b.max_block_size * 8);
            if c.blocks.is_none() || bits > max + slack {
                return Err(too_large(channel, c, bits, max));
            }
        }
        if ch.is_full() {
            counters.messages_dropped_send_queue_full += 1;
            return Err(ChannelSendError::QueueFull {
                channel: ChannelId::new(channel),
                size: c.send_queue_size,
            });
        }
        Ok(block)
    }

    /// Queues an admitted message.
    fn push(
        &mut self,
        config: &LayerConfig,
        channel: usize,
        message: Payload<M>,
        bits: usize,
        block: Option<Box<[u8]>>,
        counters: &mut LayerStats,
    ) {
        let (Some(ch), Some(c)) = (self.channels.get_mut(channel), config.channels.get(channel))
        else {
            return;
        };
        ch.push(c, message, bits, block);
        self.queued = true;
        counters.messages_sent += 1;
    }

    /// Selects what the next packet carries (into `selection`, scratch), writes it
    /// into `out` (cleared first) under `sequence`, and records what it carried on
    /// reliable channels.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_packet(
        &mut self,
        config: &LayerConfig,
        selection: &mut Selection,
        now: Time,
        sequence: Sequence,
        out: &mut Vec<u8>,
        counters: &mut LayerStats,
        channel_counters: &mut [ChannelStats],
    ) -> usize {
        self.packer
            .select(selection, &mut self.channels, config, now, self.rtt);
        let selection = &*selection;
        out.clear();
        out.resize(config.max_packet_bits.div_ceil(8) + 8, 0);
        let record = self.sent.start(sequence);
        let len = match writer::write_payload(
            out,
            config,
            &mut self.channels,
            selection,
            record,
            counters,
        ) {
            Ok(len) => len,
            Err(_) => {
                // Unreachable by construction (measured upper bounds, values checked at
                // send); never send half a packet: an empty payload instead.
                debug_assert!(false, "packet write failed");
                out.fill(0);
                1
            }
        };
        out.truncate(len);
        counters.payloads_written += 1;
        counters.messages_resent += selection.resends();
        for entry in selection.entries() {
            if let Some(c) = channel_counters.get_mut(entry.channel) {
                c.messages_resent += entry.resends;
            }
        }
        self.queued = false;
        len
    }

    /// Packet `sequence` was acked: releases the reliable messages and fragments it
    /// carried.
    pub(crate) fn on_packet_acked(&mut self, sequence: Sequence, counters: &mut LayerStats) {
        let channels = &mut self.channels;
        let known = self.sent.acked(sequence, |item| {
            if channels
                .get_mut(item.channel())
                .is_some_and(|ch| ch.ack(item))
            {
                counters.messages_acked += 1;
            }
        });
        if known {
            for ch in channels {
                ch.advance();
            }
        }
    }
}
