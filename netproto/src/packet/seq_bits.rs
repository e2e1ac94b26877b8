//! A ring of two bits per sequence number, read and written 64 sequences at a time.
//!
//! The loss estimates look at dozens of our packets at every update of every
//! connection; as bits, a window of 64 packets is one or two words, where the sent
//! packet records it summarises span a dozen cache lines. Each use keeps two facts
//! per sequence (sent and acked; counted and lost), read together: the two lanes'
//! words for the same sequences sit side by side, in one cache line or two.

use crate::sequence::Sequence;

/// Two bits (lanes 0 and 1) per sequence number for the last `64 * words`
/// sequences: sequence `s` is bit `s % (64 * words)` of each lane, whose words are
/// stored in pairs (`[lane 0, lane 1]`). The number of words is a power of two, so
/// that the ring divides the 16-bit sequence space and 65535 -> 0 stays consecutive.
#[derive(Clone, Debug)]
pub(crate) struct SeqBits<W> {
    pairs: W,
}

impl<const N: usize> Default for SeqBits<[[u64; 2]; N]> {
    fn default() -> Self {
        const { assert!(N.is_power_of_two() && N <= 1024) };
        Self { pairs: [[0; 2]; N] }
    }
}

impl SeqBits<Box<[[u64; 2]]>> {
    /// A ring of at least `bits` sequences (rounded up to a power of two, at least
    /// 64, at most 65536), all clear.
    pub(crate) fn with_bits(bits: usize) -> Self {
        Self {
            pairs: vec![[0; 2]; Self::ring_len(bits) / 64].into_boxed_slice(),
        }
    }

    /// The sequences a ring of at least `bits` holds.
    pub(crate) fn ring_len(bits: usize) -> usize {
        bits.clamp(64, 1 << 16).next_power_of_two()
    }
}

impl<W: AsRef<[[u64; 2]]> + AsMut<[[u64; 2]]>> SeqBits<W> {
    /// The number of sequences the ring holds.
    pub(crate) fn len(&self) -> usize {
        self.pairs.as_ref().len() * 64
    }

    /// The index of the word (of each lane) holding `s`, and the bit offset of `s` in
    /// it.
    #[inline]
    fn locate(&self, s: Sequence) -> (usize, u32) {
        let bit = usize::from(s.0) & (self.len() - 1);
        (bit / 64, (bit % 64) as u32)
    }

    /// Asks the CPU for the cache line of the words holding `s` (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self, s: Sequence) {
        crate::prefetch::prefetch_at(self.pairs.as_ref(), self.locate(s).0);
    }

    /// Both lanes' bits of sequences `s0 .. s0 + 64`: bit `j` is sequence `s0 + j`.
    #[inline]
    pub(crate) fn get(&self, s0: Sequence) -> [u64; 2] {
        let pairs = self.pairs.as_ref();
        let (w, off) = self.locate(s0);
        let [a, b] = pairs[w];
        if off == 0 {
            [a, b]
        } else {
            let [c, d] = pairs[(w + 1) & (pairs.len() - 1)];
            [a >> off | c << (64 - off), b >> off | d << (64 - off)]
        }
    }

    /// Sets, in each lane `k`, the bits of sequences `s0 + j` for every bit `j` of
    /// `masks[k]` to bit `j` of `values[k]`; the others keep theirs.
    #[inline]
    pub(crate) fn set(&mut self, s0: Sequence, masks: [u64; 2], values: [u64; 2]) {
        let (w, off) = self.locate(s0);
        let pairs = self.pairs.as_mut();
        let pair = &mut pairs[w];
        for k in 0..2 {
            let low = masks[k] << off;
            pair[k] = (pair[k] & !low) | ((values[k] << off) & low);
        }
        if off != 0 {
            // The high parts land in the next pair (the same one in a ring of 64:
            // the two parts' masks are disjoint).
            let pair = &mut pairs[(w + 1) & (pairs.len() - 1)];
            for k in 0..2 {
                let high = masks[k] >> (64 - off);
                pair[k] = (pair[k] & !high) | ((values[k] >> (64 - off)) & high);
            }
        }
    }
}

/// The bits `j` in `0..64` for which `s0 + j` is among the `count` sequences from
/// `lo` on (`lo, lo + 1, ... lo + count - 1`, modulo 65536; `count <= 65536`).
#[inline]
pub(crate) fn run_mask(s0: Sequence, lo: Sequence, count: u32) -> u64 {
    // `s0 + j` is in the run when `(s0 + j - lo) mod 65536 < count`, that is `j` in
    // `off .. off + count` where `off = (lo - s0) mod 65536`, or below
    // `off + count - 65536` when the run wraps past `s0`.
    let off = u32::from(lo.0.wrapping_sub(s0.0));
    let ones = |from: u32, to: u32| -> u64 {
        let to = to.min(64);
        if to <= from {
            0
        } else {
            let width = to - from;
            (if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            }) << from
        }
    };
    ones(off, off + count) | ones(0, (off + count).saturating_sub(1 << 16))
}

/// The low `len` bits (`len <= 64`).
#[inline]
pub(crate) fn low_bits(len: u32) -> u64 {
    if len >= 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_and_set_match_two_bits_per_sequence_at_every_offset_and_across_the_wrap() {
        for words in [1usize, 2, 4] {
            let len = words * 64;
            let mut ring = SeqBits::with_bits(len);
            assert_eq!(ring.len(), len);
            let mut model = vec![[false; 2]; len];
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            for step in 0..4000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Around the 65535 -> 0 wrap as often as not.
                let s0 = Sequence((x as u16).wrapping_add(if step % 2 == 0 { 65500 } else { 0 }));
                // Either lane alone, or both.
                let lanes = [step % 3 != 1, step % 3 != 2];
                let lane = |on: bool, v: u64| if on { v } else { 0 };
                let masks = [
                    lane(lanes[0], x.rotate_left(17)),
                    lane(lanes[1], x.rotate_left(29)),
                ];
                let values = [x.rotate_left(41), x.rotate_left(53)];
                ring.set(s0, masks, values);
                for j in 0..64u16 {
                    for k in 0..2 {
                        if masks[k] >> j & 1 != 0 {
                            model[usize::from(s0.0.wrapping_add(j)) % len][k] =
                                values[k] >> j & 1 != 0;
                        }
                    }
                }
                let probe = Sequence(x.rotate_left(7) as u16);
                let got = ring.get(probe);
                for j in 0..64u16 {
                    let want = model[usize::from(probe.0.wrapping_add(j)) % len];
                    for k in 0..2 {
                        assert_eq!(
                            got[k] >> j & 1 != 0,
                            want[k],
                            "ring of {len}, lane {k}, bit {j} from {probe:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_fixed_ring_is_a_ring_too() {
        let mut ring = SeqBits::<[[u64; 2]; 16]>::default();
        assert_eq!(ring.len(), 1024);
        ring.set(Sequence(1020), [0xFF, 0x0F], [0xAA, 0x05]);
        // 1020..=1027: the last four bits wrap to slots 0..=3 (sequences 1024..=1027).
        assert_eq!(ring.get(Sequence(1020)).map(|w| w & 0xFF), [0xAA, 0x05]);
        assert_eq!(ring.get(Sequence(0)).map(|w| w & 0xF), [0xA, 0]);
        assert_eq!(ring.get(Sequence(2048 + 1))[0] & 1, 1);
    }

    #[test]
    fn run_masks_select_the_run_modulo_65536() {
        let check = |s0: u16, lo: u16, count: u32| {
            let mask = run_mask(Sequence(s0), Sequence(lo), count);
            for j in 0..64u16 {
                let s = s0.wrapping_add(j);
                let inside = u32::from(s.wrapping_sub(lo)) < count;
                assert_eq!(
                    mask >> j & 1 != 0,
                    inside,
                    "s0 {s0} lo {lo} count {count} j {j}"
                );
            }
        };
        for &(s0, lo) in &[
            (0u16, 0u16),
            (10, 20),
            (20, 10),
            (65530, 3),
            (3, 65530),
            (100, 60000),
        ] {
            for count in [0u32, 1, 5, 63, 64, 65, 1000, 32768, 65535, 65536] {
                check(s0, lo, count);
            }
        }
        assert_eq!(low_bits(0), 0);
        assert_eq!(low_bits(5), 0b11111);
        assert_eq!(low_bits(64), u64::MAX);
    }
}
