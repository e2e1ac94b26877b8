//! Reading a packet payload: decoded with the payload format
//! ([`payload`](super::payload)) into a staging area, validated against the receive
//! windows, and only then applied, so that a payload that fails is dropped whole.

use core::ops::Range;

use super::block::{PartialBlock, fragment_range};
use super::error::PayloadError;
use super::payload::{Contents, EntryHeader, FragmentGroup, serialize_payload};
use super::reliable::Class;
use super::{MessageLayer, State};
use crate::error::{ErrorKind, StreamError};
use crate::message::NetMessage;
use crate::stream::ReadStream;

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
pub(crate) struct Staged<M> {
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
        let mut message = M::blank();
        message.serialize(s)?;
        self.staged.messages.push((channel, id, message));
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

impl<M: NetMessage> MessageLayer<M> {
    /// Reads a packet payload written by a peer's [`write_packet`](Self::write_packet).
    ///
    /// The whole payload is decoded and validated before anything is applied: on any
    /// error nothing of it is delivered, the error is counted, and the caller must not
    /// ack the packet. [`PayloadError::OutsideWindow`] is also recorded as the
    /// connection's [`protocol_error`](Self::protocol_error);
    /// [`PayloadError::ReceiveQueueFull`] is flow control, not an attack.
    pub fn read_packet(&mut self, payload: &[u8]) -> Result<(), PayloadError> {
        self.staged.clear();
        let result = self.parse(payload).and_then(|()| self.validate());
        if let Err(e) = result {
            self.staged.clear();
            if e.is_malformed() {
                self.counters.packets_malformed += 1;
            } else {
                self.counters.packets_refused += 1;
            }
            if matches!(e, PayloadError::OutsideWindow { .. }) && self.protocol_error.is_none() {
                self.protocol_error = Some(e);
            }
            return Err(e);
        }
        self.apply();
        self.counters.packets_read += 1;
        Ok(())
    }

    /// Decodes `payload` into the staging area.
    fn parse(&mut self, payload: &[u8]) -> Result<(), PayloadError> {
        let mut reader = Reader {
            staged: &mut self.staged,
            frags_start: 0,
        };
        let mut r = ReadStream::new(payload);
        serialize_payload(&mut r, &self.config.channels, &mut reader)?;
        if r.bytes_read() != payload.len() {
            return Err(PayloadError::Malformed(StreamError::new(
                ErrorKind::TrailingBytes,
            )));
        }
        Ok(())
    }

    /// Checks every staged id against the receive windows, and decodes the blocks
    /// this payload completes. Changes nothing but the staging area.
    fn validate(&mut self) -> Result<(), PayloadError> {
        let staged = &mut self.staged;
        for (channel, id, _) in &staged.messages {
            let (Some(id), State::Reliable { recv, .. }) = (id, &self.channels[*channel].state)
            else {
                continue;
            };
            match recv.classify(*id) {
                Class::Outside => {
                    return Err(PayloadError::OutsideWindow {
                        channel: *channel,
                        id: *id,
                    });
                }
                Class::Full => return Err(PayloadError::ReceiveQueueFull { channel: *channel }),
                Class::New | Class::Old => {}
            }
        }
        for g in &mut staged.groups {
            let channel = g.channel;
            let ch = &self.channels[channel];
            let (State::Reliable { recv, .. }, Some(bc)) = (&ch.state, ch.config.blocks) else {
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
            let partial = recv.partials.iter().find(|p| p.id == g.id);
            let missing = match partial {
                Some(p) => {
                    if p.size() != g.size {
                        return Err(PayloadError::BadFragment {
                            channel,
                            reason: "block size differs from earlier fragments",
                        });
                    }
                    let fresh = frags.iter().filter(|(i, _)| !p.has(*i)).count();
                    p.remaining - fresh
                }
                // A conforming sender has at most max_blocks_in_flight blocks with
                // fragments out, and each is reassembled here until complete.
                None if recv.partials.len() >= bc.max_blocks_in_flight => {
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
    fn apply(&mut self) {
        let staged = &mut self.staged;
        let counters = &mut self.counters;
        for (channel, id, message) in staged.messages.drain(..) {
            match (&mut self.channels[channel].state, id) {
                (State::Reliable { recv, .. }, Some(id)) => {
                    if recv.classify(id) == Class::New {
                        recv.insert(id, message);
                    } else {
                        counters.duplicates += 1;
                    }
                }
                (State::Unreliable { recv, .. }, id) => {
                    if id.is_some_and(|id| !recv.newer(id)) {
                        counters.stale += 1;
                    } else {
                        counters.receive_queue_overflow += u64::from(!recv.push(message));
                    }
                }
                _ => {}
            }
        }
        for (g, block) in staged.groups.iter().zip(staged.blocks.drain(..)) {
            let ch = &mut self.channels[g.channel];
            let (State::Reliable { recv, .. }, Some(bc)) = (&mut ch.state, ch.config.blocks) else {
                continue;
            };
            if g.skip || recv.classify(g.id) != Class::New {
                counters.duplicates += g.frags.len() as u64;
                continue;
            }
            if let Some(message) = block {
                recv.partials.retain(|p| p.id != g.id);
                recv.insert(g.id, message);
                continue;
            }
            let at = match recv.partials.iter().position(|p| p.id == g.id) {
                Some(at) => at,
                None => {
                    // One entry more, not a doubling: the list holds at most
                    // max_blocks_in_flight entries, each allocated when its block starts.
                    recv.partials.reserve_exact(1);
                    recv.partials
                        .push(PartialBlock::new(g.id, g.size, bc.fragment_size));
                    recv.partials.len() - 1
                }
            };
            let partial = &mut recv.partials[at];
            for (index, range) in &staged.frags[g.frags.clone()] {
                let data = staged.bytes.get(range.clone()).unwrap_or_default();
                if !partial.store(*index, bc.fragment_size, data) {
                    counters.duplicates += 1;
                }
            }
        }
        staged.clear();
    }
}
