//! The receive side of the message layer: each channel's receive queue (and, on a
//! reliable channel with blocks, the blocks being reassembled), and reading a packet
//! payload: decoded with the payload format ([`payload`](super::payload)) into a
//! staging area, validated against the receive windows, and only then applied, so
//! that a payload that fails is dropped whole and changes nothing.

use core::ops::Range;

use super::BlockProgress;
use super::block::{Reassembly, fragment_range};
use super::config::{ChannelConfig, ChannelKind, LayerConfig};
use super::error::PayloadError;
use super::id::ChannelId;
use super::payload::{Contents, EntryHeader, FragmentGroup, serialize_payload};
use super::reliable::{Class, ReliableReceiver};
use super::stats::LayerStats;
use super::unreliable::UnreliableReceiver;
use crate::error::{ErrorKind, StreamError};
use crate::message::NetMessage;
use crate::stream::ReadStream;

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

    /// The next message to deliver.
    fn pop(&mut self) -> Option<M> {
        match self {
            Self::Reliable { queue, .. } => queue.pop(),
            Self::Unreliable(queue) => queue.pop(),
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

    /// Applies a message of a validated payload: buffers it for delivery, or counts
    /// why not (a duplicate, a stale sequenced message, a full unreliable queue).
    fn accept(&mut self, id: Option<u16>, message: M, counters: &mut LayerStats) {
        match (self, id) {
            (Self::Reliable { queue, .. }, Some(id)) => {
                if queue.classify(id) == Class::New {
                    queue.insert(id, message);
                } else {
                    counters.messages_dropped_duplicate += 1;
                }
            }
            (Self::Unreliable(queue), id) => {
                if id.is_some_and(|id| !queue.newer(id)) {
                    counters.messages_dropped_stale += 1;
                } else {
                    counters.messages_dropped_receive_queue_full += u64::from(!queue.push(message));
                }
            }
            _ => {}
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

/// The receive side: the layer's [`LayerConfig`] is passed in by the layer, the
/// event counters too.
#[derive(Debug)]
pub(crate) struct ReceiveSide<M> {
    /// Per channel, by index.
    channels: Vec<ChannelReceiver<M>>,
    staged: Staged<M>,
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

/// A payload decoded and validated, waiting to be applied.
#[derive(Debug)]
struct Staged<M> {
    messages: Vec<(usize, Option<u16>, M)>,
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
            groups: Vec::new(),
            frags: Vec::new(),
            bytes: Vec::new(),
            blocks: Vec::new(),
            assemble: Vec::new(),
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
        // Decoded in its staging slot: a message set's value can be large (an enum is
        // as large as its largest variant), and every move of it is a copy.
        let messages = &mut self.staged.messages;
        messages.push((channel, id, M::blank()));
        let Some((_, _, message)) = messages.last_mut() else {
            return Ok(());
        };
        let read = message.serialize(s);
        if read.is_err() {
            messages.pop();
        }
        read
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

impl<M: NetMessage> ReceiveSide<M> {
    /// The receive side of a layer with `config` (validated).
    pub(crate) fn new(config: &LayerConfig) -> Self {
        Self {
            channels: config.channels.iter().map(ChannelReceiver::new).collect(),
            staged: Staged::default(),
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
        payload: &[u8],
        counters: &mut LayerStats,
    ) -> Result<(), PayloadError> {
        self.staged.clear();
        let result = self
            .parse(config, payload)
            .and_then(|()| self.validate(config));
        if let Err(e) = result {
            self.staged.clear();
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
        self.apply(config, counters);
        counters.payloads_read += 1;
        Ok(())
    }

    /// Decodes `payload` into the staging area.
    fn parse(&mut self, config: &LayerConfig, payload: &[u8]) -> Result<(), PayloadError> {
        let mut reader = Reader {
            staged: &mut self.staged,
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

    /// Checks every staged id against the receive windows, and decodes the blocks
    /// this payload completes. Changes nothing but the staging area.
    fn validate(&mut self, config: &LayerConfig) -> Result<(), PayloadError> {
        let staged = &mut self.staged;
        for (channel, id, _) in &staged.messages {
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
    fn apply(&mut self, config: &LayerConfig, counters: &mut LayerStats) {
        let staged = &mut self.staged;
        for (channel, id, message) in staged.messages.drain(..) {
            self.channels[channel].accept(id, message, counters);
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
