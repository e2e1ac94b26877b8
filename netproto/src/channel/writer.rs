//! Writing a packet payload: the selection ([`select`](super::select)) written with
//! the payload format ([`payload`](super::payload)), and recorded against the packet
//! sequence for the acks.

use super::error::{LayerCounters, PayloadError};
use super::payload::{Contents, EntryHeader, FragmentGroup, serialize_payload};
use super::reliable::Outgoing;
use super::select::Selection;
use super::{Channel, MessageLayer, SentItem, State, WHOLE};
use crate::Time;
use crate::message::NetMessage;
use crate::packet::Sequence;
use crate::stream::WriteStream;

/// The selection as payload contents: takes the messages and fragments from the send
/// queues, numbers a sequenced channel's messages, and records what a reliable channel
/// sent.
struct Writer<'a, M> {
    channels: &'a mut [Channel<M>],
    selection: &'a Selection,
    /// What the packet carries on reliable channels (none: the record slot is taken).
    record: Option<&'a mut Vec<SentItem>>,
    counters: &'a mut LayerCounters,
    /// The entry being written.
    entry: usize,
    /// Where its reliable ids start in `Selection::ids` (`None`: not reliable).
    ids_start: Option<usize>,
    /// Sequenced: the channel's next id when the entry starts.
    next_id: u16,
    /// Reliable: the id of the message before, in this entry.
    previous_id: u16,
}

impl<M> Writer<'_, M> {
    fn record(&mut self, channel: usize, id: u16, fragment: u32) {
        if let Some(r) = self.record.as_deref_mut() {
            r.push(SentItem {
                channel: channel as u16,
                id,
                fragment,
            });
        }
    }

    fn block(&self) -> Option<(usize, u16, core::ops::Range<usize>)> {
        let e = self.selection.entries.get(self.entry)?;
        let (id, range) = e.block.clone()?;
        Some((e.channel, id, range))
    }
}

impl<'w, M: NetMessage> Contents<WriteStream<'w>> for Writer<'_, M> {
    fn entries(&mut self) -> usize {
        self.selection.entries.len()
    }

    fn entry(&mut self, k: usize) -> EntryHeader {
        self.entry = k;
        let Some(e) = self.selection.entries.get(k) else {
            return EntryHeader::default();
        };
        self.counters.transmissions += e.count as u64;
        (self.ids_start, self.next_id) = match self.channels.get(e.channel).map(|ch| &ch.state) {
            Some(State::Reliable { .. }) => (Some(e.ids.start), 0),
            Some(State::Unreliable { send, .. }) => (None, send.next_id),
            None => (None, 0),
        };
        EntryHeader {
            channel: e.channel,
            count: e.count,
            fragments: e.block.is_some(),
        }
    }

    #[inline(always)]
    fn message_id(&mut self, i: usize, previous: Option<u32>) -> u32 {
        match self.ids_start {
            Some(start) => {
                let id = self
                    .selection
                    .ids
                    .get(start + i)
                    .copied()
                    .unwrap_or_default();
                let value = match previous {
                    None => u32::from(id),
                    Some(p) => p + u32::from(id.wrapping_sub(self.previous_id)),
                };
                self.previous_id = id;
                value
            }
            // Sequenced: consecutive from the channel's next id.
            None => previous.map_or(u32::from(self.next_id), |p| p + 1),
        }
    }

    #[inline(always)]
    fn message(
        &mut self,
        s: &mut WriteStream<'w>,
        channel: usize,
        id: Option<u16>,
    ) -> Result<(), crate::StreamError> {
        let Some(ch) = self.channels.get_mut(channel) else {
            return Ok(());
        };
        match (&mut ch.state, id) {
            (State::Reliable { send, .. }, Some(id)) => {
                if let Some(Outgoing::Message { message, .. }) = send.get_mut(id) {
                    message.write(s)?;
                }
                self.record(channel, id, WHOLE);
            }
            (State::Unreliable { send, .. }, id) => {
                if let Some(id) = id {
                    send.next_id = id.wrapping_add(1);
                }
                if let Some((message, _)) = send.queue.pop_front() {
                    message.write(s)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn group(&mut self) -> FragmentGroup {
        let Some((channel, id, range)) = self.block() else {
            return FragmentGroup::default();
        };
        self.counters.transmissions += range.len() as u64;
        match self.channels.get(channel).map(|ch| &ch.state) {
            Some(State::Reliable { send, .. }) => match send.get(id) {
                Some(Outgoing::Block(b)) => FragmentGroup {
                    id,
                    size: b.bytes.len() as u32,
                    count: range.len() as u32,
                },
                // Not a block: a count of 0 is refused by the writer.
                _ => FragmentGroup::default(),
            },
            _ => FragmentGroup::default(),
        }
    }

    fn fragment_index(&mut self, j: usize) -> u32 {
        self.block()
            .and_then(|(_, _, range)| self.selection.frags.get(range.start + j).copied())
            .unwrap_or_default()
    }

    fn fragment(&mut self, group: &FragmentGroup, index: u32, _len: usize) -> &mut [u8] {
        let Some(channel) = self.selection.entries.get(self.entry).map(|e| e.channel) else {
            return &mut [];
        };
        self.record(channel, group.id, index);
        match self.channels.get_mut(channel).map(|ch| &mut ch.state) {
            Some(State::Reliable { send, .. }) => match send.get_mut(group.id) {
                Some(Outgoing::Block(b)) => b.fragment_mut(index as usize),
                _ => &mut [],
            },
            _ => &mut [],
        }
    }

    fn end_group(&mut self, _channel: usize, _group: &FragmentGroup) {}
}

impl<M: NetMessage> MessageLayer<M> {
    /// Writes the next packet payload into `out` (cleared first) and returns its
    /// length in bytes, at most `max_packet_bits / 8` rounded up.
    ///
    /// `sequence` is the packet sequence the payload will be sent under (the packet
    /// endpoint's [`next_sequence`](crate::packet::Endpoint::next_sequence)): the
    /// layer remembers which reliable messages and fragments went into it, and
    /// releases them when [`on_packet_acked`](Self::on_packet_acked) names it. With
    /// nothing to send the payload is one byte (no entries): send it anyway, it
    /// carries the packet header's acks.
    pub fn write_packet(&mut self, now: Time, sequence: Sequence, out: &mut Vec<u8>) -> usize {
        self.select(now);
        out.clear();
        out.resize(self.config.max_packet_bits.div_ceil(8) + 8, 0);
        let len = match self.write_selection(sequence, out) {
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
        self.counters.packets_written += 1;
        self.sent_at_last_packet = self.counters.messages_sent;
        self.counters.resends += self.packer.resends;
        len
    }

    /// Writes the selection into `out`; returns the bytes written.
    fn write_selection(
        &mut self,
        sequence: Sequence,
        out: &mut [u8],
    ) -> Result<usize, PayloadError> {
        let Self {
            config,
            channels,
            packer,
            sent_packets,
            counters,
            ..
        } = self;
        let mut record = sent_packets.insert_in_place(sequence).ok();
        if let Some(r) = record.as_deref_mut() {
            r.clear();
        }
        let mut writer = Writer {
            channels,
            selection: packer,
            record,
            counters,
            entry: 0,
            ids_start: None,
            next_id: 0,
            previous_id: 0,
        };
        let mut w = WriteStream::new(out);
        serialize_payload(&mut w, &config.channels, &mut writer)?;
        Ok(w.finish())
    }
}
