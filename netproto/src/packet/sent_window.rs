//! The records of the packets we sent, with their fates as bits.

use super::seq_bits::{SeqBits, run_mask};
use super::sequence_buffer::SequenceBuffer;
use crate::Time;
use crate::sequence::Sequence;

/// What an endpoint remembers about a packet it sent.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SentPacket {
    /// Send time.
    pub(crate) time: Time,
    /// Payload plus `packet_header_size` bytes.
    pub(crate) bytes: u32,
    /// Acked by the peer (reported once).
    pub(crate) acked: bool,
    /// A sequence skipped on purpose, never sent: not a packet (not sent, lost,
    /// acked or measured), and a peer acking it acks what it never received.
    pub(crate) skipped: bool,
}

/// The sent-packet ring of an [`Endpoint`](super::Endpoint), and beside it two bits
/// per sequence that say the same as its records, for the loss estimates to read 64
/// at a time: "a packet (sent, not skipped) is in the ring under this sequence"
/// (lane 0) and "it was acked" (lane 1).
///
/// Sequences are taken in order ([`record`](Self::record) takes the next one), so the
/// only record a new one removes is the one in its slot, whose bits it clears. The
/// bit ring holds every sequence a record can stay in the ring for: when the ring's
/// size does not divide 65536, a slot's record can outlive `size` sequences across
/// the 65535 -> 0 wrap (by `65536 % size`), and the bits cover that too.
#[derive(Debug)]
pub(crate) struct SentWindow {
    ring: SequenceBuffer<SentPacket>,
    /// Lane 0: a packet is in the ring; lane 1: it was acked.
    fates: SeqBits<Box<[[u64; 2]]>>,
    /// The send time of the newest record.
    last_time: Time,
    /// The newest record sent earlier than the record before it (the clock went
    /// back), while it may be in the ring: until then send times are not in order.
    disorder: Option<Sequence>,
}

impl SentWindow {
    /// An empty window of `size` records (`1..=32768`).
    pub(crate) fn new(size: usize) -> Self {
        let bits = Self::bits_for(size);
        Self {
            ring: SequenceBuffer::new(size),
            fates: SeqBits::with_bits(bits),
            last_time: Time::NEVER,
            disorder: None,
        }
    }

    /// Sequences the bit ring covers for a ring of `size` records: the longest a
    /// record stays in the ring (see the type's documentation), rounded up to a
    /// power of two of at least 64 by [`SeqBits::with_bits`].
    pub(crate) fn bits_for(size: usize) -> usize {
        size.max(1) + (1 << 16) % size.max(1)
    }

    /// Heap bytes of the bit ring (two bits per sequence) for a ring of `size`
    /// records.
    pub(crate) fn bits_heap_bytes(size: usize) -> usize {
        2 * SeqBits::ring_len(Self::bits_for(size)) / 8
    }

    /// The records, to read.
    pub(crate) fn ring(&self) -> &SequenceBuffer<SentPacket> {
        &self.ring
    }

    /// The record of `sequence`, if it is in the ring.
    /// Asks the CPU for the lines an ack of the newest packets reads, their records
    /// (three, on at most two lines) and fate bits, and the slot the next packet
    /// sent takes (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_recent(&self) {
        let next = self.ring.next_sequence();
        let newest = next.prev();
        self.ring.prefetch(next);
        self.ring.prefetch(newest);
        self.ring.prefetch(Sequence(newest.0.wrapping_sub(2)));
        self.fates.prefetch(newest);
    }

    #[inline]
    pub(crate) fn get(&self, sequence: Sequence) -> Option<&SentPacket> {
        self.ring.get(sequence)
    }

    /// The sequence the next [`record`](Self::record) takes.
    pub(crate) fn next_sequence(&self) -> Sequence {
        self.ring.next_sequence()
    }

    /// The sequence whose record the next [`record`](Self::record) removes, if any.
    pub(crate) fn occupant(&self) -> Option<Sequence> {
        self.ring.occupant(self.ring.next_sequence())
    }

    /// Records `packet` under the next sequence; returns that sequence and the record
    /// it removed from the ring (sent one ring ago) with its sequence, if any.
    pub(crate) fn record(
        &mut self,
        packet: SentPacket,
    ) -> (Sequence, Option<(Sequence, SentPacket)>) {
        let sequence = self.ring.next_sequence();
        let evicted = self
            .ring
            .occupant(sequence)
            .and_then(|old| Some((old, *self.ring.get(old)?)));
        if let Some((old, _)) = evicted {
            self.fates.set(old, [1, 0], [0, 0]);
        }
        if packet.time < self.last_time {
            self.disorder = Some(sequence);
        } else if self
            .disorder
            .is_some_and(|d| self.age(d) >= self.fates.len())
        {
            self.disorder = None;
        }
        self.last_time = packet.time;
        // The newest, never stale.
        if let Ok(slot) = self.ring.insert_in_place(sequence) {
            *slot = packet;
            self.fates.set(
                sequence,
                [1, 1],
                [u64::from(!packet.skipped), u64::from(packet.acked)],
            );
        }
        (sequence, evicted)
    }

    /// Marks the packet `sequence` acked; returns its record when this is its first
    /// ack (not for a skipped sequence, or one not in the ring).
    pub(crate) fn ack(&mut self, sequence: Sequence) -> Option<&SentPacket> {
        let packet = self.ring.get_mut(sequence)?;
        if packet.acked || packet.skipped {
            return None;
        }
        packet.acked = true;
        self.fates.set(sequence, [0, 1], [0, 1]);
        Some(packet)
    }

    /// How many sequences before the next one `sequence` is (1 for the newest).
    fn age(&self, sequence: Sequence) -> usize {
        usize::from(self.ring.next_sequence().0.wrapping_sub(sequence.0))
    }

    /// The newest sequence whose record was sent at or before `before`, among the
    /// last `capacity` sequences; `hint` is an earlier answer (for an earlier or equal
    /// `before`), from which the search may walk forward instead of back from the
    /// newest. The same answer with or without a hint.
    pub(crate) fn newest_sent_by(&self, before: Time, hint: Option<Sequence>) -> Option<Sequence> {
        let capacity = self.ring.capacity();
        // With send times in order, the records sent by `before` are the oldest ones:
        // from a record sent by then, the answer is it or a newer one.
        let start = hint.filter(|&h| {
            self.disorder.is_none()
                && (1..=capacity).contains(&self.age(h))
                && self.get(h).is_some_and(|p| p.time <= before)
        });
        if let Some(mut found) = start {
            let mut s = found.next();
            while s != self.ring.next_sequence() {
                match self.get(s) {
                    Some(p) if p.time > before => break,
                    Some(_) => found = s,
                    None => {}
                }
                s = s.next();
            }
            return Some(found);
        }
        let newest = self.ring.newest();
        (0..capacity as u16)
            .map(|back| newest.wrapping_sub(back))
            .find(|&s| self.get(s).is_some_and(|p| p.time <= before))
    }

    /// The fates of sequences `s0 .. s0 + 64` as two masks: bit `j` of the first is
    /// set when a packet is in the ring under `s0 + j`, and of the second when it
    /// also was acked. The same as looking each up with [`get`](Self::get).
    #[inline(always)]
    pub(crate) fn fates(&self, s0: Sequence) -> (u64, u64) {
        // The bit ring's sequences: those from `newest - len + 1` to the newest (the
        // others' bits belong to sequences a ring of bits ago, or ahead).
        let len = self.fates.len() as u32;
        let held = run_mask(s0, self.ring.next_sequence().wrapping_sub(len as u16), len);
        let [packets, acked] = self.fates.get(s0);
        let packets = packets & held;
        (packets, packets & acked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Time;

    /// Random sends, skips and acks on windows of several sizes (powers of two or
    /// not), across the 16-bit wrap: the fate bits always say what the records say.
    #[test]
    fn the_fate_bits_always_match_the_records() {
        for size in [1usize, 3, 8, 100, 256, 1000] {
            let mut window = SentWindow::new(size);
            let mut x = 0x2545_F491_4F6C_DD1Du64 ^ size as u64;
            // Two laps of the 16-bit space for the small rings.
            let steps = if size <= 8 { 140_000 } else { 70_000 };
            for step in 0..steps {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let packet = SentPacket {
                    time: Time::from_secs_f64(f64::from(step) * 0.01),
                    bytes: 10,
                    acked: x.is_multiple_of(7),
                    skipped: x.is_multiple_of(11),
                };
                let expected_evicted = window.occupant().and_then(|o| Some((o, *window.get(o)?)));
                let (sequence, evicted) = window.record(packet);
                assert_eq!(
                    evicted.map(|(s, p)| (s, p.time)),
                    expected_evicted.map(|(s, p)| (s, p.time))
                );
                assert!(window.get(sequence).is_some());
                let acked = sequence.wrapping_sub((x >> 20) as u16 % (size as u16 + 3));
                let first = window.get(acked).is_some_and(|p| !p.acked && !p.skipped);
                assert_eq!(window.ack(acked).is_some(), first);
                if step % 97 == 0 || (step > 65_000 && step < 65_600) {
                    let s0 = sequence.wrapping_sub((x >> 40) as u16 % (2 * size as u16 + 70));
                    let (packets, acked) = window.fates(s0);
                    for j in 0..64u16 {
                        let record = window.get(s0.wrapping_add(j)).filter(|p| !p.skipped);
                        assert_eq!(packets >> j & 1 != 0, record.is_some(), "size {size}");
                        assert_eq!(acked >> j & 1 != 0, record.is_some_and(|p| p.acked));
                    }
                }
            }
        }
    }

    /// Send times mostly in order, sometimes going back (and the disorder leaving the
    /// ring again); skips; sizes whose ring outlives its size across the wrap: the
    /// search from the last answer always finds what a scan from the newest finds.
    #[test]
    fn the_search_by_send_time_gives_the_same_answer_from_a_hint() {
        for size in [1usize, 5, 16, 100] {
            let mut window = SentWindow::new(size);
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ size as u64;
            let mut clock = 0.0;
            let mut hint = None;
            let mut walked = 0;
            for _ in 0..70_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                clock += if x.is_multiple_of(500) { -0.3 } else { 0.01 };
                window.record(SentPacket {
                    time: Time::from_secs_f64(clock),
                    bytes: 1,
                    acked: false,
                    skipped: x.is_multiple_of(13),
                });
                // A before that mostly follows the clock, sometimes steps back.
                let lag = if x.is_multiple_of(97) {
                    0.5
                } else {
                    [0.0, 0.02, 0.03][(x >> 30) as usize % 3]
                };
                let before = Time::from_secs_f64(clock - lag);
                let scanned = window.newest_sent_by(before, None);
                let found = window.newest_sent_by(before, hint);
                assert_eq!(found, scanned, "size {size}");
                walked += usize::from(hint.is_some() && found.is_some());
                hint = found;
            }
            assert!(walked > 3_500, "the hint was used: {walked}");
        }
    }
}
