//! The packet packer: writing channel entries up to a bit budget, and reading them
//! back all-or-nothing. The layout is documented on the [module](super).

use crate::Time;
use core::ops::Range;

use super::block::{PartialBlock, fragment_range};
use super::config::{MESSAGE_ID_BITS, entry_count_bits, entry_header_bits};
use super::error::ReadError;
use super::reliable::{Class, Outgoing, ReliableSender};
use super::unreliable::UnreliableSender;
use super::{ChannelConfig, MessageLayer, SentItem, State, WHOLE};
use crate::bits::bits_required;
use crate::error::{Error, ErrorKind};
use crate::message::NetMessage;
use crate::packet::Sequence;
use crate::stream::{MeasureStream, ReadStream, Stream, WriteStream};

/// What one channel puts in the packet being written.
#[derive(Debug, Clone)]
struct EntrySel {
    channel: usize,
    /// Reliable: the ids, in `Scratch::ids`. Unreliable: empty.
    ids: Range<usize>,
    /// Messages in the entry.
    count: usize,
    /// A block's id and its fragment indexes, in `Scratch::frags`.
    block: Option<(u16, Range<usize>)>,
}

/// Reused buffers of the writer.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    entries: Vec<EntrySel>,
    ids: Vec<u16>,
    frags: Vec<u32>,
    /// Messages and fragments picked again (sent before) for this packet.
    resends: u64,
    /// Channel indexes in the order they are offered the packet.
    order: Vec<usize>,
    /// Something due did not fit the packet.
    more: bool,
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

/// Bits of `serialize_relative(previous, current)`.
fn relative_bits(previous: u32, current: u32) -> usize {
    let mut m = MeasureStream::new();
    let mut c = current;
    match m.serialize_relative(previous, &mut c) {
        Ok(()) => m.bits_processed(),
        Err(never) => match never {},
    }
}

fn malformed(e: Error) -> ReadError {
    ReadError::Malformed(e)
}

/// `true` while a message (or fragment) sent at `last_sent` waits for its resend
/// interval. A send time after `now` means the clock went back: the message is due
/// at once (and is stamped with the new time), rather than held until the clock
/// catches up.
fn waiting(last_sent: Time, interval: f64, now: Time) -> bool {
    last_sent <= now && last_sent.plus_secs(interval) > now
}

/// Picks the reliable messages and fragments of one channel for this packet.
#[allow(clippy::too_many_arguments)]
fn select_reliable<M: NetMessage>(
    send: &mut ReliableSender<M>,
    config: &ChannelConfig,
    channel: usize,
    now: Time,
    rtt: f64,
    budget: usize,
    header: usize,
    scratch: &mut Scratch,
) -> Option<(EntrySel, usize)> {
    let interval = (config.resend_interval.as_secs_f64()).max(config.resend_rtt_factor * rtt);
    let max_messages = config.max_messages_per_packet;
    let mut used = header;
    let ids_start = scratch.ids.len();
    let mut count = 0usize;
    let mut previous: Option<u32> = None;
    let mut block = None;
    // Blocks met in the walk: only the oldest `max_blocks_in_flight` unacked ones may
    // have fragments out; one of them gets this packet's fragment group.
    let mut blocks_seen = 0;
    let max_blocks = config.blocks.map_or(0, |b| b.max_blocks_in_flight);
    let mut block_done = config.blocks.is_none();
    let min_message = 1 + M::MIN_BITS;
    // Never an id at or beyond oldest unacked + receive queue size.
    let window = send.len().min(config.receive_queue_size);
    let base = u32::from(send.oldest);
    for k in 0..window {
        let messages_done = count >= max_messages || used + min_message > budget;
        if messages_done && block_done {
            // Whatever is left may be due: let the caller send another packet.
            scratch.more |= k + 1 < window || count >= max_messages;
            break;
        }
        let id = send.oldest.wrapping_add(k as u16);
        let Some(item) = send.get_mut(id) else {
            continue;
        };
        match item {
            Outgoing::Message {
                bits, last_sent, ..
            } => {
                if messages_done || waiting(*last_sent, interval, now) {
                    continue;
                }
                let value = base + k as u32;
                let id_bits = previous.map_or(16, |p| relative_bits(p, value));
                let cost = id_bits + *bits;
                if used + cost > budget {
                    scratch.more = true;
                    continue;
                }
                used += cost;
                scratch.resends += u64::from(*last_sent != Time::NEVER);
                *last_sent = now;
                previous = Some(value);
                scratch.ids.push(id);
                count += 1;
            }
            Outgoing::Block(b) => {
                if block_done {
                    continue;
                }
                blocks_seen += 1;
                if blocks_seen >= max_blocks {
                    block_done = true;
                }
                let Some(bc) = config.blocks else { continue };
                let start = scratch.frags.len();
                let index_bits = bc.index_bits();
                for f in 0..b.fragments() {
                    if scratch.frags.len() - start >= bc.max_fragments_per_packet {
                        scratch.more |= b.remaining > scratch.frags.len() - start;
                        break;
                    }
                    if b.acked[f] || waiting(b.last_sent[f], interval, now) {
                        continue;
                    }
                    let group = if scratch.frags.len() == start {
                        bc.group_header_bits()
                    } else {
                        0
                    };
                    let cost = group + index_bits + 7 + 8 * b.fragment(f).len();
                    if used + cost > budget {
                        scratch.more = true;
                        continue;
                    }
                    used += cost;
                    scratch.resends += u64::from(b.last_sent[f] != Time::NEVER);
                    b.last_sent[f] = now;
                    scratch.frags.push(f as u32);
                }
                if scratch.frags.len() > start {
                    block = Some((id, start..scratch.frags.len()));
                    block_done = true;
                }
            }
        }
    }
    if count == 0 && block.is_none() {
        return None;
    }
    Some((
        EntrySel {
            channel,
            ids: ids_start..scratch.ids.len(),
            count,
            block,
        },
        used,
    ))
}

/// Picks the unreliable messages of one channel: oldest first, while they fit. A
/// sequenced channel's messages carry ids: the first in full, then one bit each (they
/// are consecutive).
fn select_unreliable<M>(
    send: &UnreliableSender<M>,
    config: &ChannelConfig,
    channel: usize,
    budget: usize,
    header: usize,
    more: &mut bool,
) -> Option<(EntrySel, usize)> {
    let mut used = header;
    let mut count = 0;
    let sequenced = config.kind.has_ids();
    for (_, bits) in &send.queue {
        let id_bits = match (sequenced, count) {
            (false, _) => 0,
            (true, 0) => MESSAGE_ID_BITS,
            (true, _) => 1,
        };
        if count == config.max_messages_per_packet || used + id_bits + bits > budget {
            *more = true;
            break;
        }
        used += id_bits + bits;
        count += 1;
    }
    (count > 0).then_some((
        EntrySel {
            channel,
            ids: 0..0,
            count,
            block: None,
        },
        used,
    ))
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
        let n = self.channels.len();
        let rtt = self.rtt;
        let Self {
            channels,
            packer,
            config,
            credits,
            ..
        } = self;
        packer.entries.clear();
        packer.ids.clear();
        packer.frags.clear();
        packer.resends = 0;
        packer.more = false;
        let total = config.max_packet_bits.saturating_sub(entry_count_bits(n));
        let mut remaining = total;
        // Sharing: every channel with something queued earns its weighted share of
        // this packet; those within their share are offered it first, by priority.
        let pending = |ch: &super::Channel<M>| match &ch.state {
            State::Reliable { send, .. } => send.len() > 0,
            State::Unreliable { send, .. } => !send.queue.is_empty(),
        };
        let weights: u64 = channels
            .iter()
            .filter(|ch| pending(ch))
            .map(|ch| u64::from(ch.config.weight))
            .sum();
        // Credit and debt are bounded by a few packets: enough to even out the
        // shares of channels that take whole packets, not enough to hoard.
        let cap = 4 * total as i64;
        for (ch, credit) in channels.iter().zip(credits.iter_mut()) {
            *credit = if pending(ch) && weights > 0 {
                let share = (total as u64 * u64::from(ch.config.weight) / weights) as i64;
                (*credit + share).min(cap)
            } else {
                0
            };
        }
        packer.order.clear();
        packer.order.extend(0..n);
        packer.order.sort_unstable_by_key(|&c| {
            let within = credits[c] >= 0;
            (
                core::cmp::Reverse(within),
                core::cmp::Reverse(channels[c].config.priority),
                core::cmp::Reverse(credits[c]),
                c,
            )
        });
        for k in 0..n {
            let index = packer.order[k];
            let ch = &mut channels[index];
            let budget = ch.config.max_bits_per_packet.min(remaining);
            let header = entry_header_bits(n, &ch.config);
            if budget <= header {
                packer.more |= pending(ch);
                continue;
            }
            let selected = match &mut ch.state {
                State::Reliable { send, .. } => {
                    select_reliable(send, &ch.config, index, now, rtt, budget, header, packer)
                }
                State::Unreliable { send, .. } => {
                    select_unreliable(send, &ch.config, index, budget, header, &mut packer.more)
                }
            };
            if let Some((entry, bits)) = selected {
                remaining -= bits;
                credits[index] = (credits[index] - bits as i64).max(-cap);
                packer.entries.push(entry);
            }
        }
        // The layout lists entries by increasing channel index.
        packer.entries.sort_unstable_by_key(|e| e.channel);
        let more = packer.more;
        self.more = more;
        out.clear();
        out.resize(config.max_packet_bits.div_ceil(8) + 8, 0);
        let len = match self.write_entries(sequence, out) {
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

    fn write_entries(&mut self, sequence: Sequence, out: &mut [u8]) -> Result<usize, Error> {
        let n = self.channels.len();
        let Self {
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
        let mut w = WriteStream::new(out);
        let mut entries = packer.entries.len();
        w.serialize_len(&mut entries, n)?;
        for e in &packer.entries {
            let Some(ch) = channels.get_mut(e.channel) else {
                continue;
            };
            let mut index = e.channel as u32;
            w.serialize_index(&mut index, n as u32)?;
            let mut count = e.count;
            w.serialize_len(&mut count, ch.config.max_messages_per_packet)?;
            w.serialize_bool(&mut e.block.is_some())?;
            counters.transmissions += e.count as u64;
            match &mut ch.state {
                State::Reliable { send, .. } => {
                    let mut previous = 0u32;
                    let mut previous_id = 0u16;
                    for (i, &id) in packer.ids[e.ids.clone()].iter().enumerate() {
                        if i == 0 {
                            w.serialize_bits(&mut u64::from(id), 16)?;
                            previous = u32::from(id);
                        } else {
                            let mut value = previous + u32::from(id.wrapping_sub(previous_id));
                            w.serialize_relative(previous, &mut value)?;
                            previous = value;
                        }
                        previous_id = id;
                        if let Some(Outgoing::Message { message, .. }) = send.get_mut(id) {
                            message.write(&mut w)?;
                        }
                        if let Some(r) = record.as_deref_mut() {
                            r.push(SentItem {
                                channel: e.channel as u16,
                                id,
                                fragment: WHOLE,
                            });
                        }
                    }
                    if let (Some((id, range)), Some(bc)) = (&e.block, ch.config.blocks) {
                        let Some(Outgoing::Block(b)) = send.get_mut(*id) else {
                            return Err(Error::new(ErrorKind::OutOfRange));
                        };
                        w.serialize_bits(&mut u64::from(*id), 16)?;
                        w.serialize_int(&mut (b.bytes.len() as u32), 1, bc.max_block_size as u32)?;
                        w.serialize_int(
                            &mut (range.len() as u32),
                            1,
                            bc.max_fragments_per_packet as u32,
                        )?;
                        let last = bc.max_fragments().saturating_sub(1) as u32;
                        for &f in &packer.frags[range.clone()] {
                            w.serialize_int(&mut f.clone(), 0, last)?;
                            w.write_bytes(b.fragment(f as usize))?;
                            if let Some(r) = record.as_deref_mut() {
                                r.push(SentItem {
                                    channel: e.channel as u16,
                                    id: *id,
                                    fragment: f,
                                });
                            }
                        }
                        counters.transmissions += range.len() as u64;
                    }
                }
                State::Unreliable { send, .. } => {
                    let sequenced = ch.config.kind.has_ids();
                    let mut previous = u32::from(send.next_id);
                    for i in 0..e.count {
                        if sequenced {
                            if i == 0 {
                                w.serialize_bits(&mut u64::from(send.next_id), 16)?;
                            } else {
                                // Consecutive ids: the relative id's one-bit "+1".
                                let mut value = previous + 1;
                                w.serialize_relative(previous, &mut value)?;
                                previous = value;
                            }
                            send.next_id = send.next_id.wrapping_add(1);
                        }
                        if let Some((message, _)) = send.queue.pop_front() {
                            message.write(&mut w)?;
                        }
                    }
                }
            }
        }
        Ok(w.finish())
    }

    /// Reads a packet payload written by a peer's [`write_packet`](Self::write_packet).
    ///
    /// The whole payload is decoded and validated before anything is applied: on any
    /// error nothing of it is delivered, the error is counted, and the caller must not
    /// ack the packet. [`ReadError::OutsideWindow`] is also recorded as the
    /// connection's [`protocol_error`](Self::protocol_error);
    /// [`ReadError::ReceiveQueueFull`] is flow control, not an attack.
    pub fn read_packet(&mut self, payload: &[u8]) -> Result<(), ReadError> {
        self.staged.clear();
        let result = self.parse(payload).and_then(|()| self.validate());
        if let Err(e) = result {
            self.staged.clear();
            if e.is_malformed() {
                self.counters.packets_malformed += 1;
            } else {
                self.counters.packets_refused += 1;
            }
            if matches!(e, ReadError::OutsideWindow { .. }) && self.protocol_error.is_none() {
                self.protocol_error = Some(e);
            }
            return Err(e);
        }
        self.apply();
        self.counters.packets_read += 1;
        Ok(())
    }

    fn parse(&mut self, payload: &[u8]) -> Result<(), ReadError> {
        let n = self.channels.len();
        let staged = &mut self.staged;
        let mut r = ReadStream::new(payload);
        let mut entries = 0usize;
        r.serialize_len(&mut entries, n).map_err(malformed)?;
        let index_bits = bits_required(0, n.saturating_sub(1) as u64);
        let mut next_channel = 0u64;
        for _ in 0..entries {
            let mut index = 0u64;
            if index_bits > 0 {
                r.serialize_bits(&mut index, index_bits)
                    .map_err(malformed)?;
            }
            if index >= n as u64 || index < next_channel {
                return Err(ReadError::BadChannel(index as u32));
            }
            next_channel = index + 1;
            let channel = index as usize;
            let ch = &self.channels[channel];
            let config = &ch.config;
            let mut count = 0usize;
            r.serialize_len(&mut count, config.max_messages_per_packet)
                .map_err(malformed)?;
            let mut has_fragments = false;
            r.serialize_bool(&mut has_fragments).map_err(malformed)?;
            if count == 0 && !has_fragments {
                return Err(ReadError::EmptyEntry(channel));
            }
            if has_fragments && !config.kind.is_reliable() {
                return Err(ReadError::BadFragment {
                    channel,
                    reason: "fragments on an unreliable channel",
                });
            }
            // The messages, with ids on every kind but unreliable-unordered: the first
            // in full, then relative, spanning less than the receive window (reliable)
            // or the message limit (sequenced: consecutive ids).
            let window = if config.kind.is_reliable() {
                config.receive_queue_size
            } else {
                config.max_messages_per_packet
            } as u32;
            let (mut first, mut previous) = (0u32, 0u32);
            for i in 0..count {
                let id = match (config.kind.has_ids(), i) {
                    (false, _) => None,
                    (true, 0) => {
                        let mut v = 0u64;
                        r.serialize_bits(&mut v, 16).map_err(malformed)?;
                        first = v as u32;
                        previous = first;
                        Some(v as u16)
                    }
                    (true, _) => {
                        let mut value = 0u32;
                        r.serialize_relative(previous, &mut value)
                            .map_err(malformed)?;
                        if value - first >= window {
                            return Err(ReadError::IdSpan { channel });
                        }
                        previous = value;
                        Some(value as u16)
                    }
                };
                let mut message = M::blank();
                message.serialize(&mut r).map_err(malformed)?;
                staged.messages.push((channel, id, message));
            }
            if has_fragments {
                let Some(bc) = config.blocks else {
                    return Err(ReadError::BadFragment {
                        channel,
                        reason: "blocks are disabled on this channel",
                    });
                };
                let mut id = 0u64;
                r.serialize_bits(&mut id, 16).map_err(malformed)?;
                let mut size = 0u32;
                r.serialize_int(&mut size, 1, bc.max_block_size as u32)
                    .map_err(malformed)?;
                let mut fragments = 0u32;
                r.serialize_int(&mut fragments, 1, bc.max_fragments_per_packet as u32)
                    .map_err(malformed)?;
                let size = size as usize;
                let last = bc.max_fragments().saturating_sub(1) as u32;
                let start = staged.frags.len();
                let mut previous: Option<u32> = None;
                for _ in 0..fragments {
                    let mut index = 0u32;
                    r.serialize_int(&mut index, 0, last).map_err(malformed)?;
                    if previous.is_some_and(|p| index <= p) {
                        return Err(ReadError::BadFragment {
                            channel,
                            reason: "fragment indexes not increasing",
                        });
                    }
                    previous = Some(index);
                    let Some(range) = fragment_range(size, bc.fragment_size, index as usize) else {
                        return Err(ReadError::BadFragment {
                            channel,
                            reason: "fragment index beyond the block",
                        });
                    };
                    r.serialize_align().map_err(malformed)?;
                    if range.len() * 8 > r.bits_remaining() {
                        return Err(malformed(Error::new(ErrorKind::PastEnd)));
                    }
                    let at = staged.bytes.len();
                    staged.bytes.resize(at + range.len(), 0);
                    r.serialize_bytes(&mut staged.bytes[at..])
                        .map_err(malformed)?;
                    staged.frags.push((index as usize, at..staged.bytes.len()));
                }
                staged.groups.push(Group {
                    channel,
                    id: id as u16,
                    size,
                    frags: start..staged.frags.len(),
                    skip: false,
                });
            }
        }
        r.serialize_align().map_err(malformed)?;
        if r.bytes_read() != payload.len() {
            return Err(malformed(Error::new(ErrorKind::TrailingBytes)));
        }
        Ok(())
    }

    /// Checks every staged id against the receive windows, and decodes the blocks
    /// this payload completes. Changes nothing but the staging area.
    fn validate(&mut self) -> Result<(), ReadError> {
        let staged = &mut self.staged;
        for (channel, id, _) in &staged.messages {
            let (Some(id), State::Reliable { recv, .. }) = (id, &self.channels[*channel].state)
            else {
                continue;
            };
            match recv.classify(*id) {
                Class::Outside => {
                    return Err(ReadError::OutsideWindow {
                        channel: *channel,
                        id: *id,
                    });
                }
                Class::Full => return Err(ReadError::ReceiveQueueFull { channel: *channel }),
                Class::New | Class::Old => {}
            }
        }
        for g in &mut staged.groups {
            let channel = g.channel;
            let ch = &self.channels[channel];
            let (State::Reliable { recv, .. }, Some(bc)) = (&ch.state, ch.config.blocks) else {
                return Err(ReadError::BadFragment {
                    channel,
                    reason: "blocks are disabled on this channel",
                });
            };
            match recv.classify(g.id) {
                Class::Outside => {
                    return Err(ReadError::OutsideWindow { channel, id: g.id });
                }
                Class::Full => return Err(ReadError::ReceiveQueueFull { channel }),
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
                    if p.bytes.len() != g.size {
                        return Err(ReadError::BadFragment {
                            channel,
                            reason: "block size differs from earlier fragments",
                        });
                    }
                    let fresh = frags
                        .iter()
                        .filter(|(i, _)| p.received.get(*i).is_some_and(|r| !r))
                        .count();
                    p.remaining - fresh
                }
                // A conforming sender has at most max_blocks_in_flight blocks with
                // fragments out, and each is reassembled here until complete.
                None if recv.partials.len() >= bc.max_blocks_in_flight => {
                    return Err(ReadError::BadFragment {
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
            match partial {
                Some(p) => assemble.extend_from_slice(&p.bytes),
                None => assemble.resize(g.size, 0),
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
                crate::codec::decode::<M>(assemble).map_err(|error| ReadError::BadBlock {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_bits_follow_the_ladder() {
        assert_eq!(relative_bits(10, 11), 1);
        assert_eq!(relative_bits(10, 12), 1 + 1 + 3);
        assert_eq!(relative_bits(10, 10 + 23), 1 + 2 + 5);
        assert_eq!(relative_bits(0, 1000), 1 + 4 + 13);
    }

    #[test]
    fn a_send_time_in_the_future_is_due() {
        let waiting = |last_sent: f64, interval, now: f64| {
            waiting(
                Time::from_secs_f64(last_sent),
                interval,
                Time::from_secs_f64(now),
            )
        };
        assert!(!waiting(f64::NEG_INFINITY, 0.1, 0.0));
        assert!(waiting(1.0, 0.1, 1.05));
        assert!(!waiting(1.0, 0.1, 1.1));
        // The clock went back from 100 to 0.
        assert!(!waiting(100.0, 0.1, 0.0));
        // It stands still: the interval has not passed.
        assert!(waiting(5.0, 0.1, 5.0));
    }
}
