//! Incremental ack bookkeeping for the hot path: the ack fields we send, and the part
//! of the peer's ack fields we have already processed.

use crate::sequence::Sequence;

/// The `(ack, ack_bits)` describing the received-packet buffer, kept up to date at
/// every insert instead of scanning 32 slots per send.
///
/// Exact (equal to [`SequenceBuffer::ack_bits`]) when the buffer size is a power of
/// two of at least 32: then no entry within 32 of the newest can share a slot with
/// another, so nothing inside the ack window is ever evicted. For other sizes the
/// endpoint scans the buffer as the reference does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReceivedBits {
    ack: Sequence,
    bits: u32,
}

impl ReceivedBits {
    pub(crate) fn new() -> Self {
        Self {
            ack: Sequence(u16::MAX),
            bits: 0,
        }
    }

    /// Whether the incremental form is exact for a buffer of `size` entries.
    pub(crate) fn exact_for(size: usize) -> bool {
        size.is_power_of_two() && size >= 32
    }

    /// Records that `sequence` was inserted into the received buffer.
    #[inline]
    pub(crate) fn insert(&mut self, sequence: Sequence) {
        let d = sequence.distance_from(self.ack);
        if d > 0 {
            self.bits = if d < 32 { (self.bits << d) | 1 } else { 1 };
            self.ack = sequence;
        } else if d > -32 {
            self.bits |= 1 << (-d);
        }
    }

    pub(crate) fn get(&self) -> (Sequence, u32) {
        (self.ack, self.bits)
    }
}

/// The newest ack fields of the peer we processed, so that the next header's bits
/// already covered are not looked up again (in steady state, 31 of 32).
///
/// A bit covered by an earlier header needs no second look: its packet was then
/// either acked, or absent from the sent window. It was not "not sent yet", because
/// an ack at or beyond our next sequence is refused; and it cannot re-enter the window
/// before the sequence wraps, which needs 65536 more sequences (sends plus skipped
/// sequences: the endpoint passes their count as `sent`). The cache is dropped well
/// before that (after 32768 of them).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProcessedAcks {
    /// `(ack, ack_bits, packets sent when recorded)`.
    last: Option<(Sequence, u32, u64)>,
}

impl ProcessedAcks {
    const MAX_AGE: u64 = 32768;

    /// The bits of `(ack, ack_bits)` not covered by the headers already processed.
    #[inline]
    pub(crate) fn unseen(&self, ack: Sequence, ack_bits: u32, sent: u64) -> u32 {
        match self.last {
            Some((last_ack, last_bits, at)) if sent - at < Self::MAX_AGE => {
                let d = ack.distance_from(last_ack);
                if (0..32).contains(&d) {
                    ack_bits & !(last_bits << d)
                } else {
                    ack_bits
                }
            }
            _ => ack_bits,
        }
    }

    /// Records that `(ack, ack_bits)` has been processed (when it is the newest).
    #[inline]
    pub(crate) fn record(&mut self, ack: Sequence, ack_bits: u32, sent: u64) {
        match self.last {
            Some((last_ack, last_bits, at)) if sent - at < Self::MAX_AGE => {
                let d = ack.distance_from(last_ack);
                if d < 0 {
                    // An older header, reordered: keep the newest.
                } else if d < 32 {
                    self.last = Some((ack, ack_bits | (last_bits << d), sent));
                } else {
                    self.last = Some((ack, ack_bits, sent));
                }
            }
            _ => self.last = Some((ack, ack_bits, sent)),
        }
    }
}

/// The reference computation, for checking [`ReceivedBits`] in tests.
#[cfg(test)]
pub(crate) fn scan<T>(buffer: &super::sequence_buffer::SequenceBuffer<T>) -> (Sequence, u32) {
    buffer.ack_bits()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::SequenceBuffer;
    use crate::sim::Rng;

    #[test]
    fn received_bits_match_a_scan_of_the_buffer() {
        let mut rng = Rng::new(1);
        for size in [32usize, 64, 256] {
            assert!(ReceivedBits::exact_for(size));
            let mut buffer: SequenceBuffer<()> = SequenceBuffer::new(size);
            let mut bits = ReceivedBits::new();
            assert_eq!(bits.get(), scan(&buffer));
            let mut newest = 65000u16;
            for _ in 0..200_000 {
                // Mostly forward, sometimes far ahead, sometimes behind (reordered or
                // stale), across many wraps.
                let step = match rng.below(10) {
                    0 => rng.below(400) as u16,
                    1..=3 => 0u16.wrapping_sub(rng.below(300) as u16),
                    _ => rng.below(4) as u16,
                };
                let s = Sequence(newest.wrapping_add(step));
                if buffer.insert(s, ()).is_ok() {
                    bits.insert(s);
                    if s.is_newer_than(Sequence(newest)) {
                        newest = s.0;
                    }
                }
                assert_eq!(bits.get(), scan(&buffer), "size {size} after {s:?}");
            }
        }
        assert!(!ReceivedBits::exact_for(100));
        assert!(!ReceivedBits::exact_for(16));
    }

    #[test]
    fn processed_acks_skip_only_covered_bits() {
        let mut p = ProcessedAcks::default();
        assert_eq!(p.unseen(Sequence(10), u32::MAX, 0), u32::MAX);
        p.record(Sequence(10), u32::MAX, 0);
        // Next header: ack 11, all bits: only bit 0 (11) is new.
        assert_eq!(p.unseen(Sequence(11), u32::MAX, 1), 1);
        p.record(Sequence(11), u32::MAX, 1);
        // A reordered older header is looked at whole.
        assert_eq!(p.unseen(Sequence(9), u32::MAX, 1), u32::MAX);
        // A jump of 40 covers nothing.
        assert_eq!(p.unseen(Sequence(51), 0b101, 2), 0b101);
        // Too long since: everything is looked at again, from exactly 32768
        // sequences after the record on.
        assert_eq!(p.unseen(Sequence(11), u32::MAX, 40_000), u32::MAX);
        assert_eq!(p.unseen(Sequence(11), u32::MAX, 1 + 32767), 0);
        assert_eq!(p.unseen(Sequence(11), u32::MAX, 1 + 32768), u32::MAX);
        // Across the wrap.
        let mut p = ProcessedAcks::default();
        p.record(Sequence(65534), 0b11, 0);
        assert_eq!(p.unseen(Sequence(1), 0b11111, 3), 0b00111);
    }

    /// The boundaries of the processed-ack cache, each step naming the mutations it
    /// kills (see CONTRIBUTING.md, "Mutation testing").
    #[test]
    fn processed_acks_boundaries() {
        // The cache is used up to 32767 sends after it was recorded, not at 32768
        // (`unseen`'s age check: `<` to `<=`, `-` to `+` or `/`).
        let mut p = ProcessedAcks::default();
        p.record(Sequence(10), u32::MAX, 40_000);
        assert_eq!(p.unseen(Sequence(10), u32::MAX, 72_767), 0);
        assert_eq!(p.unseen(Sequence(10), u32::MAX, 72_768), u32::MAX);
        // Nor merged into at 32768: a record then starts afresh (`record`'s age
        // check: `<` to `<=`, the guard replaced with `true`).
        p.record(Sequence(11), 0b1, 72_768);
        assert_eq!(p.unseen(Sequence(11), u32::MAX, 72_768), !0b1);
        // A header one ahead merges its bits with the recorded ones (`record`'s age
        // guard replaced with `false`, its `-` to `+`, `d < 0` to `d > 0`, the merge's
        // `|` to `&` and `<<` to `>>`).
        p.record(Sequence(12), 0b1, 72_769);
        assert_eq!(p.unseen(Sequence(12), 0b11, 72_769), 0);
        // The same ack again: merged too (`d < 0` to `d <= 0` or `d == 0`), not
        // toggled (the merge's `|` to `^`).
        p.record(Sequence(12), 0b111, 72_770);
        assert_eq!(p.unseen(Sequence(12), 0b111, 72_770), 0);
        p.record(Sequence(12), 0b111, 72_771);
        assert_eq!(p.unseen(Sequence(12), 0b111, 72_771), 0);
        // An older header (reordered) changes nothing.
        p.record(Sequence(5), u32::MAX, 72_772);
        assert_eq!(p.unseen(Sequence(12), u32::MAX, 72_772), !0b111);
        // 32 ahead shares nothing (`d < 32` to `d <= 32`: a shift by 32); 31 ahead
        // shares its oldest bit (`d < 32` to `d == 32` or `d > 32`).
        p.record(Sequence(44), 0b1, 72_773);
        assert_eq!(p.unseen(Sequence(44), 0b11, 72_773), 0b10);
        p.record(Sequence(75), 0b1, 72_774);
        assert_eq!(p.unseen(Sequence(75), 1 << 31 | 1, 72_774), 0);
    }
}
