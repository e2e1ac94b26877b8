//! The packet payload format, written once: [`serialize_payload`] walks the layout
//! documented on the [module](super) with any [`Stream`], so that the writer, the
//! reader and the budget measures agree by construction.
//!
//! A payload is an entry count, then per entry (channels in increasing order):
//!
//! * the [`EntryHeader`]: channel index, message count, has-fragments flag;
//! * the messages, each after its id ([`serialize_message_id`]) on the kinds with ids:
//!   the first id in full, the others relative to the one before;
//! * on a reliable channel with blocks, one [`FragmentGroup`] (block id, block size,
//!   fragment count), then each fragment: its index ([`serialize_fragment_index`]),
//!   then its bytes from the next byte boundary ([`serialize_fragment_bytes`]);
//!
//! and zero padding to a byte. The walk also holds the reading rules (channel order,
//! id span, fragment order, ...): it rejects what a conforming writer never writes,
//! whichever stream runs it.
//!
//! What the walk writes or reads comes from, or goes to, a [`Contents`]: the
//! selection of the packet being written, or the staging area of the payload being
//! read. Selection (see `select`) measures each part with the same functions and a
//! [`MeasureStream`] before it commits to it: the `*_bits` functions below.

use core::convert::Infallible;

use super::block::fragment_range;
use super::config::{BlockConfig, ChannelConfig, MESSAGE_ID_BITS};
use super::error::PayloadError;
use crate::bits::bits_for_count;
use crate::error::{ErrorKind, StreamError};
use crate::stream::{MeasureStream, Stream};

/// A stream error as a payload rejection.
pub(crate) trait IntoReadError {
    /// The error as a [`PayloadError`].
    fn into_read_error(self) -> PayloadError;
}

impl IntoReadError for StreamError {
    #[inline]
    fn into_read_error(self) -> PayloadError {
        PayloadError::Malformed(self)
    }
}

impl IntoReadError for Infallible {
    #[inline]
    fn into_read_error(self) -> PayloadError {
        match self {}
    }
}

#[inline]
fn fault<E: IntoReadError>(e: E) -> PayloadError {
    e.into_read_error()
}

/// The number of entries, in `[0, channels]`.
#[inline]
pub(crate) fn serialize_entry_count<S: Stream>(
    s: &mut S,
    entries: &mut usize,
    channels: usize,
) -> Result<(), S::Error> {
    s.serialize_len(entries, channels)
}

/// An entry's header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EntryHeader {
    /// The channel index, in `[0, channels - 1]`.
    pub(crate) channel: usize,
    /// Messages in the entry, in `[0, max_messages_per_packet]`.
    pub(crate) count: usize,
    /// A fragment group follows the messages.
    pub(crate) fragments: bool,
}

impl EntryHeader {
    /// The channel index, then (with `config_of(channel)`, which rejects a channel
    /// that may not come here) the message count and the fragments flag. Returns the
    /// channel's configuration.
    #[inline]
    pub(crate) fn serialize<'c, S: Stream>(
        &mut self,
        s: &mut S,
        channels: usize,
        config_of: impl FnOnce(usize) -> Result<&'c ChannelConfig, PayloadError>,
    ) -> Result<&'c ChannelConfig, PayloadError>
    where
        S::Error: IntoReadError,
    {
        let bits = bits_for_count(channels as u64);
        let mut index = if S::IS_READING {
            0
        } else {
            self.channel as u64
        };
        if bits > 0 {
            s.serialize_bits(&mut index, bits).map_err(fault)?;
        }
        if S::IS_READING {
            // At most 6 bits: it fits.
            self.channel = index as usize;
        }
        let config = config_of(self.channel)?;
        s.serialize_len(&mut self.count, config.max_messages_per_packet)
            .map_err(fault)?;
        s.serialize_bool(&mut self.fragments).map_err(fault)?;
        Ok(config)
    }
}

/// Message `value`'s id: the first of an entry (`previous == None`) in full
/// ([`MESSAGE_ID_BITS`]), the others relative to the one before (1 bit for `+1`).
/// Ids of an entry are unwrapped to increasing `u32` values: the first is the `u16`
/// id, each next one the previous value plus the id difference.
#[inline]
pub(crate) fn serialize_message_id<S: Stream>(
    s: &mut S,
    previous: Option<u32>,
    value: &mut u32,
) -> Result<(), S::Error> {
    match previous {
        None => {
            let mut wide = u64::from(*value);
            s.serialize_bits(&mut wide, MESSAGE_ID_BITS as u32)?;
            if S::IS_READING {
                // 16 bits: it fits.
                *value = wide as u32;
            }
            Ok(())
        }
        Some(previous) => s.serialize_relative(previous, value),
    }
}

/// The header of a block's fragments in one entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FragmentGroup {
    /// The block's message id.
    pub(crate) id: u16,
    /// The block's size in bytes, in `[1, max_block_size]`.
    pub(crate) size: u32,
    /// Fragments in the group, in `[1, max_fragments_per_packet]`.
    pub(crate) count: u32,
}

impl FragmentGroup {
    /// Block id, block size, fragment count.
    #[inline]
    pub(crate) fn serialize<S: Stream>(
        &mut self,
        s: &mut S,
        blocks: &BlockConfig,
    ) -> Result<(), S::Error> {
        let mut id = u64::from(self.id);
        s.serialize_bits(&mut id, MESSAGE_ID_BITS as u32)?;
        if S::IS_READING {
            // 16 bits: it fits.
            self.id = id as u16;
        }
        s.serialize_int(&mut self.size, 1, blocks.max_block_size as u32)?;
        s.serialize_int(&mut self.count, 1, blocks.max_fragments_per_packet as u32)
    }
}

/// A fragment's index in its block, in `[0, max_fragments - 1]`.
#[inline]
pub(crate) fn serialize_fragment_index<S: Stream>(
    s: &mut S,
    index: &mut u32,
    blocks: &BlockConfig,
) -> Result<(), S::Error> {
    let last = blocks.max_fragments().saturating_sub(1) as u32;
    s.serialize_int(index, 0, last)
}

/// A fragment's bytes (`len` of them, in the buffer `bytes(len)` returns), from the
/// next byte boundary. The reader checks that they are there before it asks for the
/// buffer.
#[inline]
pub(crate) fn serialize_fragment_bytes<'b, S: Stream>(
    s: &mut S,
    len: usize,
    bytes: impl FnOnce(usize) -> &'b mut [u8],
) -> Result<(), S::Error> {
    if S::IS_READING {
        s.serialize_align()?;
        s.check(len * 8 <= s.bits_remaining(), ErrorKind::PastEnd)?;
    }
    s.serialize_bytes(bytes(len))
}

/// What [`serialize_payload`] writes, or where it puts what it reads. The methods that
/// return a value are asked when writing; a reader returns anything (the walk reads
/// over it).
pub(crate) trait Contents<S: Stream> {
    /// Entries in the payload.
    fn entries(&mut self) -> usize;
    /// Entry `k`'s header.
    fn entry(&mut self, k: usize) -> EntryHeader;
    /// Message `i` of the current entry: its unwrapped id (see
    /// [`serialize_message_id`]) given the one before.
    fn message_id(&mut self, i: usize, previous: Option<u32>) -> u32;
    /// The current entry's next message (on `channel`), with its id on the kinds that
    /// have ids.
    fn message(&mut self, s: &mut S, channel: usize, id: Option<u16>) -> Result<(), S::Error>;
    /// The current entry's fragment group (a reader: one starts).
    fn group(&mut self) -> FragmentGroup;
    /// The index of fragment `j` of the group.
    fn fragment_index(&mut self, j: usize) -> u32;
    /// The bytes of fragment `index` (`len` bytes): a writer's to write, a reader's
    /// buffer to fill.
    fn fragment(&mut self, group: &FragmentGroup, index: u32, len: usize) -> &mut [u8];
    /// The current entry's fragment group is done.
    fn end_group(&mut self, channel: usize, group: &FragmentGroup);
}

/// The payload: writes `contents` with a writer, reads into it with a reader. Rejects
/// (as [`PayloadError`]) what a conforming writer never writes. A reader then checks
/// that the payload ends here.
pub(crate) fn serialize_payload<S, C>(
    s: &mut S,
    configs: &[ChannelConfig],
    contents: &mut C,
) -> Result<(), PayloadError>
where
    S: Stream,
    S::Error: IntoReadError,
    C: Contents<S>,
{
    let channels = configs.len();
    let mut entries = contents.entries();
    serialize_entry_count(s, &mut entries, channels).map_err(fault)?;
    let mut next_channel = 0;
    for k in 0..entries {
        let mut entry = contents.entry(k);
        let config = entry.serialize(s, channels, |index| {
            configs
                .get(index)
                .filter(|_| index >= next_channel)
                .ok_or(PayloadError::BadChannel(index as u32))
        })?;
        let channel = entry.channel;
        next_channel = channel + 1;
        if entry.count == 0 && !entry.fragments {
            return Err(PayloadError::EmptyEntry(channel));
        }
        if entry.fragments && !config.kind.is_reliable() {
            return Err(PayloadError::BadFragment {
                channel,
                reason: "fragments on an unreliable channel",
            });
        }
        // Ids span less than the receive window (reliable) or the message limit
        // (sequenced: consecutive ids).
        let window = if config.kind.is_reliable() {
            config.receive_queue_size
        } else {
            config.max_messages_per_packet
        } as u32;
        let mut first = 0u32;
        let mut previous = None;
        for i in 0..entry.count {
            let id = if config.kind.has_ids() {
                let mut value = contents.message_id(i, previous);
                serialize_message_id(s, previous, &mut value).map_err(fault)?;
                if previous.is_none() {
                    first = value;
                } else if value - first >= window {
                    return Err(PayloadError::IdSpan { channel });
                }
                previous = Some(value);
                // The low 16 bits are the id.
                Some(value as u16)
            } else {
                None
            };
            contents.message(s, channel, id).map_err(fault)?;
        }
        if entry.fragments {
            let Some(blocks) = config.blocks else {
                return Err(PayloadError::BadFragment {
                    channel,
                    reason: "blocks are disabled on this channel",
                });
            };
            let mut group = contents.group();
            group.serialize(s, &blocks).map_err(fault)?;
            let mut previous: Option<u32> = None;
            for j in 0..group.count as usize {
                let mut index = contents.fragment_index(j);
                serialize_fragment_index(s, &mut index, &blocks).map_err(fault)?;
                if previous.is_some_and(|p| index <= p) {
                    return Err(PayloadError::BadFragment {
                        channel,
                        reason: "fragment indexes not increasing",
                    });
                }
                previous = Some(index);
                let Some(range) =
                    fragment_range(group.size as usize, blocks.fragment_size, index as usize)
                else {
                    return Err(PayloadError::BadFragment {
                        channel,
                        reason: "fragment index beyond the block",
                    });
                };
                serialize_fragment_bytes(s, range.len(), |len| {
                    contents.fragment(&group, index, len)
                })
                .map_err(fault)?;
            }
            contents.end_group(channel, &group);
        }
    }
    s.serialize_align().map_err(fault)
}

/// The bits `part` measures.
#[inline]
fn measure(part: impl FnOnce(&mut MeasureStream) -> Result<(), PayloadError>) -> usize {
    let mut m = MeasureStream::new();
    let measured = part(&mut m);
    debug_assert!(measured.is_ok(), "a measure failed: {measured:?}");
    m.bits_processed()
}

/// Bits of the entry count.
#[inline]
pub(crate) fn entry_count_bits(channels: usize) -> usize {
    measure(|m| serialize_entry_count(m, &mut 0, channels).map_err(fault))
}

/// Bits of the entry count and of the final padding (at most 7): what a payload takes
/// besides its entries.
#[inline]
pub(crate) fn frame_bits(channels: usize) -> usize {
    measure(|m| {
        serialize_entry_count(m, &mut 0, channels).map_err(fault)?;
        m.serialize_align().map_err(fault)
    })
}

/// Bits of an entry's header on `config`'s channel, among `channels`.
#[inline]
pub(crate) fn entry_header_bits(channels: usize, config: &ChannelConfig) -> usize {
    measure(|m| {
        EntryHeader::default()
            .serialize(m, channels, |_| Ok(config))
            .map(|_| ())
    })
}

/// Bits of message id `value` after `previous` (the first of an entry: `None`).
#[inline]
pub(crate) fn message_id_bits(previous: Option<u32>, value: u32) -> usize {
    measure(|m| serialize_message_id(m, previous, &mut { value }).map_err(fault))
}

/// Bits of a fragment group's header.
#[inline]
pub(crate) fn group_header_bits(blocks: &BlockConfig) -> usize {
    measure(|m| FragmentGroup::default().serialize(m, blocks).map_err(fault))
}

/// Bits of a fragment (index and bytes; its align counted as 7 bits).
#[inline]
pub(crate) fn fragment_bits(blocks: &BlockConfig, bytes: &mut [u8]) -> usize {
    measure(|m| {
        serialize_fragment_index(m, &mut 0, blocks).map_err(fault)?;
        serialize_fragment_bytes(m, bytes.len(), |_| bytes).map_err(fault)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_ids_follow_the_ladder() {
        assert_eq!(message_id_bits(None, 1234), 16);
        assert_eq!(message_id_bits(Some(10), 11), 1);
        assert_eq!(message_id_bits(Some(10), 12), 1 + 1 + 3);
        assert_eq!(message_id_bits(Some(10), 10 + 23), 1 + 2 + 5);
        assert_eq!(message_id_bits(Some(0), 1000), 1 + 4 + 13);
    }

    #[test]
    fn headers_measure_their_ranged_fields() {
        let reliable = ChannelConfig::reliable();
        // 4 channels: index 2 bits; 64 messages: count 7 bits; the flag.
        assert_eq!(entry_header_bits(4, &reliable), 2 + 7 + 1);
        assert_eq!(entry_header_bits(1, &reliable), 7 + 1);
        assert_eq!(frame_bits(4), 3 + 7);
        let blocks = BlockConfig::default();
        // Sizes 1 to 64 KiB: 16 bits; 1 to 3 per packet: 2 bits.
        assert_eq!(group_header_bits(&blocks), 16 + 16 + 2);
        // 256 fragments: index 8 bits; align; the bytes.
        assert_eq!(fragment_bits(&blocks, &mut [0; 10]), 8 + 7 + 80);
    }
}
