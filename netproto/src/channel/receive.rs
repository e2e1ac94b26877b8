//! The receive side of the message layer: each channel's receive queue (and, on a
//! reliable channel with blocks, the blocks being reassembled), and reading a packet
//! payload: decoded with the payload format ([`payload`](super::payload)) into a
//! staging area, validated against the receive windows, and only then applied, so
//! that a payload that fails is dropped whole and changes nothing.

use core::ops::Range;

use super::block::{BlockProgress, Reassembly, fragment_range};
use super::config::{ChannelConfig, ChannelKind};
use super::error::PayloadError;
use super::id::ChannelId;
use super::layer_config::LayerConfig;
use super::payload::{Contents, EntryHeader, FragmentGroup, serialize_payload};
use super::reliable::{Class, ReliableReceiver};
use super::stats::LayerStats;
use super::unreliable::UnreliableReceiver;
use crate::error::{ErrorKind, StreamError};
use crate::stream::{NetMessage, ReadStream};

/// One channel's receive state, by channel kind.
#[derive(Debug)]
pub(crate) enum ChannelReceiver<M> {
    /// Reliable channels (ordered or unordered): the receive window, and the blocks
    /// being reassembled.
    Reliable {
        queue: ReliableReceiver<M>,
        blocks: Reassembly,
    },
    /// Unreliable channels (unordered or sequenced).
    Unreliable(UnreliableReceiver<M>),
}

impl<M> ChannelReceiver<M> {
    /// Asks the CPU for the queue slots the next messages take (`crate::prefetch`).
    #[inline]
    fn prefetch_queue(&self) {
        match self {
            Self::Reliable { queue, .. } => queue.prefetch(),
            Self::Unreliable(queue) => queue.prefetch(),
        }
    }

    /// The receive state of `config`.
    fn new(config: &ChannelConfig) -> Self {
        if config.kind.is_reliable() {
            Self::Reliable {
                queue: ReliableReceiver::new(
                    config.receive_queue_size,
                    config.kind == ChannelKind::ReliableUnordered,
                ),
                blocks: Reassembly::default(),
            }
        } else {
            Self::Unreliable(UnreliableReceiver::new(config.receive_queue_size))
        }
    }

    /// Messages buffered and not taken.
    fn len(&self) -> usize {
        match self {
            Self::Reliable { queue, .. } => queue.buffered(),
            Self::Unreliable(queue) => queue.len(),
        }
    }

    /// Checks a message read from a payload (with its id, on a channel with ids)
    /// against the receive window, changing nothing: an error refuses the payload.
    fn check(&self, channel: usize, id: Option<u16>) -> Result<(), PayloadError> {
        let (Self::Reliable { queue, .. }, Some(id)) = (self, id) else {
            return Ok(());
        };
        match queue.classify(id) {
            Class::Outside => Err(PayloadError::OutsideWindow { channel, id }),
            Class::Full => Err(PayloadError::ReceiveQueueFull { channel }),
            Class::New | Class::Old => Ok(()),
        }
    }

    /// How far the block being reassembled with the lowest id has come.
    fn progress(&self) -> Option<BlockProgress> {
        let Self::Reliable { queue, blocks } = self else {
            return None;
        };
        blocks.first(queue.next).map(|p| BlockProgress {
            id: p.id(),
            bytes: p.received_bytes(),
            total: p.size(),
        })
    }
}

impl<M: NetMessage> ChannelReceiver<M> {
    /// The next message to deliver.
    fn pop(&mut self) -> Option<M> {
        match self {
            Self::Reliable { queue, .. } => queue.pop(),
            Self::Unreliable(queue) => queue.pop(),
        }
    }

    /// Applies a message of a validated payload: moves it out of `message` into the
    /// queue for delivery (`true`), or counts why not (a duplicate, a stale sequenced
    /// message, a full unreliable queue) and leaves it.
    fn accept(&mut self, id: Option<u16>, message: &mut M, counters: &mut LayerStats) -> bool {
        match (self, id) {
            (Self::Reliable { queue, .. }, Some(id)) => {
                if queue.classify(id) == Class::New {
                    queue.insert_from(id, message);
                    return true;
                }
                counters.messages_dropped_duplicate += 1;
            }
            (Self::Unreliable(queue), id) => {
                if id.is_some_and(|id| !queue.newer(id)) {
                    counters.messages_dropped_stale += 1;
                } else if queue.push_from(message) {
                    return true;
                } else {
                    counters.messages_dropped_receive_queue_full += 1;
                }
            }
            _ => {}
        }
        false
    }
}

/// The receive side: the layer's [`LayerConfig`] is passed in by the layer, the
/// event counters too.
#[derive(Debug)]
pub(crate) struct ReceiveSide<M> {
    /// Per channel, by index.
    channels: Vec<ChannelReceiver<M>>,
    /// The first protocol error the peer committed.
    protocol_error: Option<PayloadError>,
}

/// A fragment group read from a payload, not applied yet.
#[derive(Debug)]
struct Group {
    channel: usize,
    id: u16,
    size: usize,
    /// `(index, byte range in Staged::bytes)` in `Staged::frags`.
    frags: Range<usize>,
    /// Already received: ignore.
    skip: bool,
}

/// A payload decoded and validated, waiting to be applied: scratch, empty between
/// payloads (and, lent by a transport stack, shared by its connections: see
/// [`Scratch`](super::Scratch)).
#[derive(Debug)]
pub(crate) struct Staged<M> {
    /// The messages read: channel and id, the values in `values` at the same index.
    messages: Vec<(usize, Option<u16>)>,
    /// Kept from payload to payload: a message is decoded over the value in its slot
    /// and moved out of it into its queue (a message set's value can be large, as
    /// large as its largest variant, and every move of it whole is a copy of that).
    /// At least as long as `messages`. A value is decoded over only as
    /// [`NetMessage::move_out`] or [`NetMessage::blank`] left it: one not moved into a
    /// queue is made blank again ([`Staged::reset`]).
    values: Vec<M>,
    groups: Vec<Group>,
    frags: Vec<(usize, Range<usize>)>,
    bytes: Vec<u8>,
    /// Per group: the block it completes, decoded.
    blocks: Vec<Option<M>>,
    assemble: Vec<u8>,
}

impl<M> Default for Staged<M> {
    fn default() -> Self {
        Self {
            messages: Vec::new(),
            values: Vec::new(),
            groups: Vec::new(),
            frags: Vec::new(),
            bytes: Vec::new(),
            blocks: Vec::new(),
            assemble: Vec::new(),
        }
    }
}

impl<M: NetMessage> Staged<M> {
    /// Makes blank again the values of a payload not applied (up to and including one
    /// whose decoding failed): a reader of a hand-written impl may count on starting
    /// from a blank value.
    fn reset(&mut self) {
        let read = (self.messages.len() + 1).min(self.values.len());
        for value in &mut self.values[..read] {
            *value = M::blank();
        }
    }
}

impl<M> Staged<M> {
    fn clear(&mut self) {
        self.messages.clear();
        self.groups.clear();
        self.frags.clear();
        self.bytes.clear();
        self.blocks.clear();
    }
}

/// The staging area as payload contents: what the walk reads goes here.
struct Reader<'a, M> {
    staged: &'a mut Staged<M>,
    /// Where the current fragment group's fragments start in `Staged::frags`.
    frags_start: usize,
}

impl<'r, M: NetMessage> Contents<ReadStream<'r>> for Reader<'_, M> {
    fn entries(&mut self) -> usize {
        0
    }

    fn entry(&mut self, _k: usize) -> EntryHeader {
        EntryHeader::default()
    }

    fn message_id(&mut self, _i: usize, _previous: Option<u32>) -> u32 {
        0
    }

    #[inline(always)]
    fn message(
        &mut self,
        s: &mut ReadStream<'r>,
        channel: usize,
        id: Option<u16>,
    ) -> Result<(), StreamError> {
        // Decoded over the value in its staging slot (see `Staged::values`).
        let staged = &mut *self.staged;
        let at = staged.messages.len();
        if at == staged.values.len() {
            staged.values.push(M::blank());
        }
        let Some(message) = staged.values.get_mut(at) else {
            return Ok(());
        };
        message.serialize(s)?;
        staged.messages.push((channel, id));
        Ok(())
    }

    fn group(&mut self) -> FragmentGroup {
        self.frags_start = self.staged.frags.len();
        FragmentGroup::default()
    }

    fn fragment_index(&mut self, _j: usize) -> u32 {
        0
    }

    fn fragment(&mut self, _group: &FragmentGroup, index: u32, len: usize) -> &mut [u8] {
        let bytes = &mut self.staged.bytes;
        let at = bytes.len();
        bytes.resize(at + len, 0);
        self.staged.frags.push((index as usize, at..at + len));
        &mut bytes[at..]
    }

    fn end_group(&mut self, channel: usize, group: &FragmentGroup) {
        self.staged.groups.push(Group {
            channel,
            id: group.id,
            size: group.size as usize,
            frags: self.frags_start..self.staged.frags.len(),
            skip: false,
        });
    }
}

/// Decodes `payload` into the staging area.
fn parse<M: NetMessage>(
    staged: &mut Staged<M>,
    config: &LayerConfig,
    payload: &[u8],
) -> Result<(), PayloadError> {
    let mut reader = Reader {
        staged,
        frags_start: 0,
    };
    let mut r = ReadStream::new(payload);
    serialize_payload(&mut r, &config.channels, &mut reader)?;
    if r.bytes_read() != payload.len() {
        return Err(PayloadError::Malformed(StreamError::new(
            ErrorKind::TrailingBytes,
        )));
    }
    Ok(())
}

impl<M> ReceiveSide<M> {
    /// Asks the CPU for each channel's receive state (`crate::prefetch`, stage two:
    /// the vector's address is in the layer's fields).
    #[inline]
    pub(crate) fn prefetch_channels(&self) {
        for channel in &self.channels {
            crate::prefetch::prefetch(channel);
        }
    }

    /// Stage three: the queue slots the next messages take.
    #[inline]
    pub(crate) fn prefetch_queues(&self) {
        for channel in &self.channels {
            channel.prefetch_queue();
        }
    }
}

impl<M: NetMessage> ReceiveSide<M> {
    /// The receive side of a layer with `config` (validated).
    pub(crate) fn new(config: &LayerConfig) -> Self {
        Self {
            channels: config.channels.iter().map(ChannelReceiver::new).collect(),
            protocol_error: None,
        }
    }

    /// The first protocol error the peer committed, if any.
    pub(crate) fn protocol_error(&self) -> Option<PayloadError> {
        self.protocol_error
    }

    /// Messages received on `channel` and not taken (0 for no such channel).
    pub(crate) fn queue_len(&self, channel: ChannelId) -> usize {
        self.channels
            .get(channel.index())
            .map_or(0, ChannelReceiver::len)
    }

    /// The next message of `channel`, counted as received.
    pub(crate) fn receive(&mut self, channel: ChannelId, counters: &mut LayerStats) -> Option<M> {
        let message = self.channels.get_mut(channel.index())?.pop();
        if message.is_some() {
            counters.messages_received += 1;
        }
        message
    }

    /// How far the block being reassembled on `channel` (the one with the lowest id)
    /// has come.
    pub(crate) fn progress(&self, channel: ChannelId) -> Option<BlockProgress> {
        self.channels.get(channel.index())?.progress()
    }

    /// Reads a packet payload: decoded and validated whole before anything is
    /// applied; on any error nothing of it is applied and the error is counted (and
    /// [`PayloadError::OutsideWindow`] recorded as the protocol error).
    pub(crate) fn read_packet(
        &mut self,
        config: &LayerConfig,
        staged: &mut Staged<M>,
        payload: &[u8],
        counters: &mut LayerStats,
    ) -> Result<(), PayloadError> {
        staged.clear();
        let result = parse(staged, config, payload).and_then(|()| self.validate(staged, config));
        if let Err(e) = result {
            staged.reset();
            staged.clear();
            if e.is_malformed() {
                counters.payloads_dropped_malformed += 1;
            } else {
                counters.payloads_dropped_receive_queue_full += 1;
            }
            if matches!(e, PayloadError::OutsideWindow { .. }) && self.protocol_error.is_none() {
                self.protocol_error = Some(e);
            }
            return Err(e);
        }
        self.apply(staged, config, counters);
        counters.payloads_read += 1;
        Ok(())
    }

    /// Checks every staged id against the receive windows, and decodes the blocks
    /// this payload completes. Changes nothing but the staging area.
    fn validate(
        &mut self,
        staged: &mut Staged<M>,
        config: &LayerConfig,
    ) -> Result<(), PayloadError> {
        for (channel, id) in &staged.messages {
            self.channels[*channel].check(*channel, *id)?;
        }
        for g in &mut staged.groups {
            let channel = g.channel;
            let (
                ChannelReceiver::Reliable {
                    queue: recv,
                    blocks,
                },
                Some(bc),
            ) = (&self.channels[channel], config.channels[channel].blocks)
            else {
                return Err(PayloadError::BadFragment {
                    channel,
                    reason: "blocks are disabled on this channel",
                });
            };
            match recv.classify(g.id) {
                Class::Outside => {
                    return Err(PayloadError::OutsideWindow { channel, id: g.id });
                }
                Class::Full => return Err(PayloadError::ReceiveQueueFull { channel }),
                Class::Old => {
                    g.skip = true;
                    staged.blocks.push(None);
                    continue;
                }
                Class::New => {}
            }
            let frags = &staged.frags[g.frags.clone()];
            let total = g.size.div_ceil(bc.fragment_size);
            let partial = blocks.get(g.id);
            let missing = match partial {
                Some(p) => {
                    if p.size() != g.size {
                        return Err(PayloadError::BadFragment {
                            channel,
                            reason: "block size differs from earlier fragments",
                        });
                    }
                    let fresh = frags.iter().filter(|(i, _)| !p.has(*i)).count();
                    p.remaining() - fresh
                }
                // A conforming sender has at most max_blocks_in_flight blocks with
                // fragments out, and each is reassembled here until complete.
                None if blocks.len() >= bc.max_blocks_in_flight => {
                    return Err(PayloadError::BadFragment {
                        channel,
                        reason: "more blocks being reassembled than max_blocks_in_flight",
                    });
                }
                None => total - frags.len(),
            };
            if missing > 0 {
                staged.blocks.push(None);
                continue;
            }
            // This payload completes the block: assemble and decode it now, so that a
            // block that does not decode drops the payload whole.
            let assemble = &mut staged.assemble;
            assemble.clear();
            assemble.resize(g.size, 0);
            if let Some(p) = partial {
                p.assemble(bc.fragment_size, assemble);
            }
            for (index, range) in frags {
                if let (Some(dst), Some(src)) = (
                    fragment_range(g.size, bc.fragment_size, *index)
                        .and_then(|r| assemble.get_mut(r)),
                    staged.bytes.get(range.clone()),
                ) {
                    dst.copy_from_slice(src);
                }
            }
            let message =
                crate::codec::decode::<M>(assemble).map_err(|error| PayloadError::BadBlock {
                    channel,
                    id: g.id,
                    error,
                })?;
            staged.blocks.push(Some(message));
        }
        Ok(())
    }

    /// Applies a validated payload.
    fn apply(&mut self, staged: &mut Staged<M>, config: &LayerConfig, counters: &mut LayerStats) {
        for (&(channel, id), message) in staged.messages.iter().zip(&mut staged.values) {
            if !self.channels[channel].accept(id, message, counters) {
                *message = M::blank();
            }
        }
        for (g, block) in staged.groups.iter().zip(staged.blocks.drain(..)) {
            let (
                ChannelReceiver::Reliable {
                    queue: recv,
                    blocks,
                },
                Some(bc),
            ) = (
                &mut self.channels[g.channel],
                config.channels[g.channel].blocks,
            )
            else {
                continue;
            };
            if g.skip || recv.classify(g.id) != Class::New {
                counters.messages_dropped_duplicate += g.frags.len() as u64;
                continue;
            }
            if let Some(message) = block {
                blocks.remove(g.id);
                recv.insert(g.id, message);
                continue;
            }
            let partial = blocks.get_or_start(g.id, g.size, bc.fragment_size);
            for (index, range) in &staged.frags[g.frags.clone()] {
                let data = staged.bytes.get(range.clone()).unwrap_or_default();
                if !partial.store(*index, bc.fragment_size, data) {
                    counters.messages_dropped_duplicate += 1;
                }
            }
        }
        staged.clear();
    }
}

#[cfg(test)]
mod tests {
    use crate::channel::{ChannelConfig, ChannelId, LayerConfig, MessageLayer};
    use crate::schema::Schema;
    use crate::sequence::Sequence;
    use crate::stream::{Place, Stream};
    use crate::{NetMessage, Time};

    /// A hand-written message whose reader counts on starting from a blank value: it
    /// stores `value` only when `present` is set.
    #[derive(Clone, Debug, PartialEq)]
    struct Sticky {
        present: bool,
        value: u8,
    }

    impl NetMessage for Sticky {
        const MAX_BITS: usize = 9;
        const MIN_BITS: usize = 1;
        const SCHEMA: &'static Schema = &Schema::BOOL;
        fn blank() -> Self {
            Sticky {
                present: false,
                value: 0,
            }
        }
        fn serialize_in<S: Stream, P: Place<Self>>(mut this: P, s: &mut S) -> Result<(), S::Error> {
            let mut present = this.get().present;
            s.serialize_bool(&mut present)?;
            let mut value = this.get().value;
            if present {
                s.serialize_int(&mut value, 0, 255)?;
            }
            if let Some(m) = this.get_mut() {
                m.present = present;
                if present {
                    m.value = value;
                }
            }
            Ok(())
        }
    }

    /// A payload dropped whole leaves nothing of its messages behind: the next one is
    /// decoded from a blank value, whatever the reader leaves unset.
    #[test]
    fn a_dropped_payload_leaves_its_staged_values_blank() {
        let config = LayerConfig::with_channels(vec![ChannelConfig::unreliable()]);
        let ch = ChannelId::new(0);
        let mut tx: MessageLayer<Sticky> = MessageLayer::new(config.clone()).unwrap();
        let mut rx: MessageLayer<Sticky> = MessageLayer::new(config).unwrap();
        let now = Time::ZERO;
        let sticky = |present, value| Sticky { present, value };
        tx.send(ch, sticky(true, 9)).unwrap();
        tx.send(ch, sticky(true, 8)).unwrap();
        let mut out = Vec::new();
        tx.write_packet(now, Sequence(0), &mut out);
        // Cut short: the first message decodes, the second does not.
        assert!(rx.read_packet(&out[..out.len() - 1]).is_err());
        assert_eq!(rx.receive(ch), None, "dropped whole");
        tx.send(ch, sticky(false, 0)).unwrap();
        let mut out = Vec::new();
        tx.write_packet(now, Sequence(1), &mut out);
        rx.read_packet(&out).unwrap();
        assert_eq!(rx.receive(ch), Some(sticky(false, 0)));
        assert_eq!(rx.receive(ch), None);
    }

    /// Two layers reading through one lent scratch (as a server's connections do):
    /// nothing of one's payloads reaches the other's messages, whether the payload was
    /// applied or dropped whole.
    #[test]
    fn a_shared_scratch_carries_nothing_from_one_layer_to_another() {
        use super::super::Scratch;
        let config = LayerConfig::with_channels(vec![ChannelConfig::unreliable()]);
        let ch = ChannelId::new(0);
        let layer = || MessageLayer::<Sticky>::new(config.clone()).unwrap();
        let (mut tx, mut rx1, mut rx2) = (layer(), layer(), layer());
        let mut scratch = Scratch::default();
        let sticky = |present, value| Sticky { present, value };
        let packet = |tx: &mut MessageLayer<Sticky>, messages: &[(bool, u8)], seq: u16| {
            for &(present, value) in messages {
                tx.send(ch, sticky(present, value)).unwrap();
            }
            let mut out = Vec::new();
            tx.write_packet(Time::ZERO, Sequence(seq), &mut out);
            out
        };
        // Applied on one layer, then the next payload read on the other.
        let first = packet(&mut tx, &[(true, 9)], 0);
        rx1.read_packet_in(&mut scratch, &first).unwrap();
        let second = packet(&mut tx, &[(false, 0)], 1);
        rx2.read_packet_in(&mut scratch, &second).unwrap();
        assert_eq!(rx2.receive(ch), Some(sticky(false, 0)));
        // Dropped whole on one layer (cut short after its first message), then read
        // on the other.
        let third = packet(&mut tx, &[(true, 7), (true, 8)], 2);
        assert!(
            rx1.read_packet_in(&mut scratch, &third[..third.len() - 1])
                .is_err()
        );
        let fourth = packet(&mut tx, &[(false, 0)], 3);
        rx2.read_packet_in(&mut scratch, &fourth).unwrap();
        assert_eq!(rx2.receive(ch), Some(sticky(false, 0)));
        assert_eq!(rx1.receive(ch), Some(sticky(true, 9)));
        assert_eq!((rx1.receive(ch), rx2.receive(ch)), (None, None));
    }

    /// Likewise a message applied as a duplicate (not moved into a queue).
    #[test]
    fn a_duplicate_leaves_its_staged_value_blank() {
        let config = LayerConfig::with_channels(vec![ChannelConfig::reliable()]);
        let ch = ChannelId::new(0);
        let mut tx: MessageLayer<Sticky> = MessageLayer::new(config.clone()).unwrap();
        let mut rx: MessageLayer<Sticky> = MessageLayer::new(config).unwrap();
        let sticky = |present, value| Sticky { present, value };
        tx.send(ch, sticky(true, 9)).unwrap();
        for (i, secs) in [0.0, 5.0].into_iter().enumerate() {
            // Never acked: sent again later, a duplicate the second time.
            let mut out = Vec::new();
            tx.write_packet(Time::from_secs_f64(secs), Sequence(i as u16), &mut out);
            rx.read_packet(&out).unwrap();
        }
        assert_eq!(rx.stats().messages_dropped_duplicate, 1);
        assert_eq!(rx.receive(ch), Some(sticky(true, 9)));
        tx.on_packet_acked(Sequence(0));
        tx.on_packet_acked(Sequence(1));
        tx.send(ch, sticky(false, 0)).unwrap();
        let mut out = Vec::new();
        tx.write_packet(Time::from_secs_f64(6.0), Sequence(2), &mut out);
        rx.read_packet(&out).unwrap();
        assert_eq!(rx.receive(ch), Some(sticky(false, 0)));
    }
}
