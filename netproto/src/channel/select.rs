//! Selection: which channels, messages and fragments go into the packet being written.
//!
//! The policy is documented on the [module](super#sharing-packets-between-channels):
//! each channel with something queued earns its weighted share of the packet as
//! credit, channels are offered the packet by (within their share, priority, credit,
//! index), and each takes what it has due, oldest first, while it fits its budget.
//! What a part costs is measured with the payload format's own functions
//! ([`payload`](super::payload)), never computed here.

use core::ops::Range;
use std::time::Duration;

use super::config::ChannelConfig;
use super::layer_config::LayerConfig;
use super::payload::{
    entry_count_bits, entry_header_bits, fragment_bits, group_header_bits, message_id_bits,
};
use super::reliable::ReliableSender;
use super::sender::{ChannelSender, SendQueue};
use super::unreliable::UnreliableSender;
use crate::Time;
use crate::stream::NetMessage;
use crate::time::saturating_duration;

/// What one channel puts in the packet being written.
#[derive(Debug, Clone)]
pub(crate) struct EntrySel {
    pub(crate) channel: usize,
    /// Reliable: the ids, in the selection's ids ([`Selection::id`]). Unreliable:
    /// empty.
    pub(crate) ids: Range<usize>,
    /// Messages in the entry.
    pub(crate) count: usize,
    /// A block's id and its fragment indexes, in the selection's fragments
    /// ([`Selection::fragment`]).
    pub(crate) block: Option<(u16, Range<usize>)>,
    /// Of the entry's messages and fragments, those sent before (resends).
    pub(crate) resends: u64,
}

/// The selection for the packet being written, in buffers reused from packet to packet
/// (and, lent by a transport stack, from connection to connection: see
/// [`Scratch`](super::Scratch)).
#[derive(Debug, Default)]
pub(crate) struct Selection {
    /// By increasing channel index.
    entries: Vec<EntrySel>,
    ids: Vec<u16>,
    frags: Vec<u32>,
    /// Channel indexes in the order they are offered the packet.
    order: Vec<usize>,
    /// Messages and fragments picked again (sent before) for this packet.
    resends: u64,
    /// Something due did not fit the packet.
    more: bool,
}

impl Selection {
    /// The entries, by increasing channel index.
    pub(crate) fn entries(&self) -> &[EntrySel] {
        &self.entries
    }

    /// The `i`-th reliable id selected (an entry's `ids` range indexes these).
    pub(crate) fn id(&self, i: usize) -> Option<u16> {
        self.ids.get(i).copied()
    }

    /// The `i`-th fragment index selected (an entry's block range indexes these).
    pub(crate) fn fragment(&self, i: usize) -> Option<u32> {
        self.frags.get(i).copied()
    }

    /// Messages and fragments picked again for this packet.
    pub(crate) fn resends(&self) -> u64 {
        self.resends
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.ids.clear();
        self.frags.clear();
        self.order.clear();
        self.resends = 0;
        self.more = false;
    }
}

/// The packer: what it keeps from packet to packet (each channel's credit, and
/// whether the last packet left something due); it selects into a [`Selection`].
#[derive(Debug)]
pub(crate) struct Packer {
    /// Per channel: bits of its share not used yet (negative: used beyond its share).
    credits: Vec<i64>,
    /// Something due did not fit the last packet selected.
    more: bool,
}

/// `true` while a message (or fragment) sent at `last_sent` waits for its resend
/// interval. A send time after `now` means the clock went back: the message is due
/// at once (and is stamped with the new time), rather than held until the clock
/// catches up.
fn waiting(last_sent: Time, interval: Duration, now: Time) -> bool {
    last_sent <= now && last_sent + interval > now
}

/// Picks the reliable messages and fragments of one channel for this packet, within
/// `budget` bits of which the entry header takes `header`; returns the entry and its
/// bits.
#[allow(clippy::too_many_arguments)]
fn select_reliable<M: NetMessage>(
    send: &mut ReliableSender<M>,
    config: &ChannelConfig,
    channel: usize,
    now: Time,
    rtt: Duration,
    budget: usize,
    header: usize,
    sel: &mut Selection,
) -> Option<(EntrySel, usize)> {
    let interval = config.resend_interval.max(saturating_duration(
        config.resend_rtt_factor * rtt.as_secs_f64(),
    ));
    let max_messages = config.max_messages_per_packet;
    let mut used = header;
    let ids_start = sel.ids.len();
    let resends_start = sel.resends;
    let mut count = 0usize;
    let mut previous: Option<u32> = None;
    let mut block = None;
    // Blocks met in the walk: only the oldest `max_blocks_in_flight` unacked ones may
    // have fragments out; one of them gets this packet's fragment group.
    let mut blocks_seen = 0;
    let max_blocks = config.blocks.map_or(0, |b| b.max_blocks_in_flight);
    let mut block_done = config.blocks.is_none();
    // The least a message takes: a relative id's one bit, and the smallest message.
    let min_message = message_id_bits(Some(0), 1) + M::MIN_BITS;
    // Never an id at or beyond oldest unacked + receive queue size.
    let window = send.len().min(config.receive_queue_size);
    let base = u32::from(send.oldest);
    for k in 0..window {
        let messages_done = count >= max_messages || used + min_message > budget;
        if messages_done && block_done {
            // Whatever is left may be due: let the caller send another packet.
            sel.more |= k + 1 < window || count >= max_messages;
            break;
        }
        let id = send.oldest.wrapping_add(k as u16);
        let Some(head) = send.head_mut(id) else {
            continue;
        };
        if !head.is_block() {
            if messages_done || waiting(head.last_sent, interval, now) {
                continue;
            }
            // The ids of an entry, unwrapped: increasing from the oldest.
            let value = base + k as u32;
            let cost = message_id_bits(previous, value) + head.bits as usize;
            if used + cost > budget {
                sel.more = true;
                continue;
            }
            used += cost;
            sel.resends += u64::from(head.last_sent != Time::NEVER);
            head.last_sent = now;
            previous = Some(value);
            sel.ids.push(id);
            count += 1;
            continue;
        }
        if block_done {
            continue;
        }
        blocks_seen += 1;
        if blocks_seen >= max_blocks {
            block_done = true;
        }
        let (Some(bc), Some(b)) = (config.blocks, send.block_mut(id)) else {
            continue;
        };
        let start = sel.frags.len();
        for f in 0..b.fragments() {
            if sel.frags.len() - start >= bc.max_fragments_per_packet {
                sel.more |= b.remaining() > sel.frags.len() - start;
                break;
            }
            if !b.unacked(f) || waiting(b.last_sent(f), interval, now) {
                continue;
            }
            let group = if sel.frags.len() == start {
                group_header_bits(&bc)
            } else {
                0
            };
            let cost = group + fragment_bits(&bc, b.fragment_mut(f));
            if used + cost > budget {
                sel.more = true;
                continue;
            }
            used += cost;
            sel.resends += u64::from(b.mark_sent(f, now));
            sel.frags.push(f as u32);
        }
        if sel.frags.len() > start {
            block = Some((id, start..sel.frags.len()));
            block_done = true;
        }
    }
    if count == 0 && block.is_none() {
        return None;
    }
    Some((
        EntrySel {
            channel,
            ids: ids_start..sel.ids.len(),
            count,
            block,
            resends: sel.resends - resends_start,
        },
        used,
    ))
}

/// Picks the unreliable messages of one channel: oldest first, while they fit. A
/// sequenced channel's messages carry ids, consecutive from the channel's next id.
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
    let base = u32::from(send.next_id());
    for bits in send.bits() {
        let id_bits = if sequenced {
            let value = base + count as u32;
            message_id_bits((count > 0).then(|| value - 1), value)
        } else {
            0
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
            resends: 0,
        },
        used,
    ))
}

impl Packer {
    /// Asks the CPU for the channels' credits (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch_at(&self.credits, 0);
    }

    /// A packer for `channels` channels, none with credit.
    pub(crate) fn new(channels: usize) -> Self {
        Self {
            credits: vec![0; channels],
            more: false,
        }
    }

    /// `true` when something due did not fit the last packet selected.
    pub(crate) fn more(&self) -> bool {
        self.more
    }

    /// Selects into `selection` what the next packet carries, marking the reliable
    /// messages and fragments taken as sent at `now` (resent after the channel's
    /// resend interval, or `resend_rtt_factor` times `rtt` when longer), and records
    /// whether something due did not fit.
    pub(crate) fn select<M: NetMessage>(
        &mut self,
        selection: &mut Selection,
        channels: &mut [ChannelSender<M>],
        config: &LayerConfig,
        now: Time,
        rtt: Duration,
    ) {
        let n = channels.len();
        let credits = &mut self.credits;
        let configs = &config.channels;
        selection.clear();
        let total = config.max_packet_bits.saturating_sub(entry_count_bits(n));
        let mut remaining = total;
        // Sharing: every channel with something queued earns its weighted share of
        // this packet; those within their share are offered it first, by priority.
        let weights: u64 = channels
            .iter()
            .zip(configs)
            .filter(|(ch, _)| ch.pending())
            .map(|(_, c)| u64::from(c.weight))
            .sum();
        // Credit and debt are bounded by a few packets: enough to even out the
        // shares of channels that take whole packets, not enough to hoard.
        let cap = 4 * total as i64;
        for ((ch, c), credit) in channels.iter().zip(configs).zip(credits.iter_mut()) {
            *credit = if ch.pending() && weights > 0 {
                let share = (total as u64 * u64::from(c.weight) / weights) as i64;
                (*credit + share).min(cap)
            } else {
                0
            };
        }
        let order = &mut selection.order;
        order.extend(0..n);
        order.sort_unstable_by_key(|&c| {
            let within = credits[c] >= 0;
            (
                core::cmp::Reverse(within),
                core::cmp::Reverse(configs[c].priority),
                core::cmp::Reverse(credits[c]),
                c,
            )
        });
        for k in 0..n {
            let index = selection.order[k];
            let (Some(ch), Some(c)) = (channels.get_mut(index), configs.get(index)) else {
                continue;
            };
            let budget = c.max_bits_per_packet.min(remaining);
            let header = entry_header_bits(n, c);
            if budget <= header {
                selection.more |= ch.pending();
                continue;
            }
            let selected = match ch.queue_mut() {
                SendQueue::Reliable(send) => {
                    select_reliable(send, c, index, now, rtt, budget, header, selection)
                }
                SendQueue::Unreliable(send) => {
                    select_unreliable(send, c, index, budget, header, &mut selection.more)
                }
            };
            if let Some((entry, bits)) = selected {
                remaining -= bits;
                credits[index] = (credits[index] - bits as i64).max(-cap);
                selection.entries.push(entry);
            }
        }
        // The layout lists entries by increasing channel index.
        selection.entries.sort_unstable_by_key(|e| e.channel);
        self.more = selection.more;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_time_in_the_future_is_due() {
        let waiting = |last_sent: f64, interval, now: f64| {
            waiting(
                Time::from_secs_f64(last_sent),
                Duration::from_secs_f64(interval),
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
