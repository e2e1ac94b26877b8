//! Filling a packet payload: the selection ([`select`](super::select)) written with
//! the payload format ([`payload`](super::payload)), and recorded against the packet
//! sequence for the acks ([`sent`](super::sent)).

use super::error::PayloadError;
use super::layer_config::LayerConfig;
use super::payload::{Contents, EntryHeader, FragmentGroup, serialize_payload};
use super::select::Selection;
use super::sender::{ChannelSender, SendQueue};
use super::sent::SentItem;
use super::stats::LayerStats;
use crate::stream::{NetMessage, WriteStream};

/// The selection as payload contents: takes the messages and fragments from the send
/// queues, numbers a sequenced channel's messages, and records what a reliable channel
/// sent and the receipts of tracked unreliable messages.
struct Writer<'a, M> {
    channels: &'a mut [ChannelSender<M>],
    selection: &'a Selection,
    /// What the packet carries on reliable channels (none: the record slot is taken).
    record: Option<&'a mut Vec<SentItem>>,
    counters: &'a mut LayerStats,
    /// The entry being written.
    entry: usize,
    /// Where its reliable ids start in the selection's ids (`None`: not reliable).
    ids_start: Option<usize>,
    /// Sequenced: the channel's next id when the entry starts.
    next_id: u16,
    /// Reliable: the id of the message before, in this entry.
    previous_id: u16,
}

impl<M> Writer<'_, M> {
    fn record(&mut self, item: SentItem) {
        if let Some(r) = self.record.as_deref_mut() {
            r.push(item);
        }
    }

    fn block(&self) -> Option<(usize, u16, core::ops::Range<usize>)> {
        let e = self.selection.entries().get(self.entry)?;
        let (id, range) = e.block.clone()?;
        Some((e.channel, id, range))
    }
}

impl<'w, M: NetMessage> Contents<WriteStream<'w>> for Writer<'_, M> {
    fn entries(&mut self) -> usize {
        self.selection.entries().len()
    }

    fn entry(&mut self, k: usize) -> EntryHeader {
        self.entry = k;
        let Some(e) = self.selection.entries().get(k) else {
            return EntryHeader::default();
        };
        self.counters.messages_transmitted += e.count as u64;
        (self.ids_start, self.next_id) = match self.channels.get(e.channel).map(|ch| ch.queue()) {
            Some(SendQueue::Reliable(_)) => (Some(e.ids.start), 0),
            Some(SendQueue::Unreliable(send)) => (None, send.next_id()),
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
                let id = self.selection.id(start + i).unwrap_or_default();
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
        match (ch.queue_mut(), id) {
            (SendQueue::Reliable(send), Some(id)) => {
                if let Some(message) = send.message(id) {
                    message.write(s)?;
                }
                self.record(SentItem::message(channel, id));
            }
            (SendQueue::Unreliable(send), id) => {
                if let Some((message, receipt)) = send.front() {
                    let written = message.write(s);
                    send.pop_written(id);
                    written?;
                    if let Some(receipt) = receipt {
                        self.record(SentItem::message(channel, receipt));
                    }
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
        self.counters.messages_transmitted += range.len() as u64;
        match self.channels.get(channel).map(|ch| ch.queue()) {
            Some(SendQueue::Reliable(send)) => match send.block(id) {
                Some(b) => FragmentGroup {
                    id,
                    size: b.size() as u32,
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
            .and_then(|(_, _, range)| self.selection.fragment(range.start + j))
            .unwrap_or_default()
    }

    fn fragment(&mut self, group: &FragmentGroup, index: u32, _len: usize) -> &mut [u8] {
        let Some(channel) = self.selection.entries().get(self.entry).map(|e| e.channel) else {
            return &mut [];
        };
        self.record(SentItem::fragment(channel, group.id, index));
        match self.channels.get_mut(channel).map(|ch| ch.queue_mut()) {
            Some(SendQueue::Reliable(send)) => match send.block_mut(group.id) {
                Some(b) => b.fragment_mut(index as usize),
                None => &mut [],
            },
            _ => &mut [],
        }
    }

    fn end_group(&mut self, _channel: usize, _group: &FragmentGroup) {}
}

/// Writes `selection` into `out` (at least the payload's largest size), taking the
/// messages and fragments from `channels`' send queues and recording into `record`
/// what it carries on reliable channels; returns the bytes written.
pub(crate) fn write_payload<M: NetMessage>(
    out: &mut [u8],
    config: &LayerConfig,
    channels: &mut [ChannelSender<M>],
    selection: &Selection,
    record: Option<&mut Vec<SentItem>>,
    counters: &mut LayerStats,
) -> Result<usize, PayloadError> {
    let mut writer = Writer {
        channels,
        selection,
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
