//! 16-bit wrapping sequence numbers with wrap-aware ordering: the packet endpoint's packet
//! sequences and the delta snapshots' snapshot sequences (public as
//! `netproto::packet::Sequence`); and the receipts of tracked unreliable messages
//! (public as `netproto::channel::Receipt`), which the delta snapshots take too.

use core::cmp::Ordering;
use core::fmt;

/// A 16-bit packet sequence number that wraps from 65535 back to 0.
///
/// Ordering is wrap-aware, as in the reference `reliable` library: `s1` is newer than
/// `s2` when `(s1 > s2 && s1 - s2 <= 32768) || (s1 < s2 && s2 - s1 > 32768)`. So 0 is
/// newer than 65535, and 100 is older than 101.
///
/// That relation is not transitive over the whole ring (0 < 20000 < 40000 < 0), so
/// `Sequence` deliberately implements neither `PartialOrd` nor `Ord`: compare with
/// [`is_newer_than`](Self::is_newer_than), [`is_older_than`](Self::is_older_than),
/// [`cmp_wrapping`](Self::cmp_wrapping) or [`distance_from`](Self::distance_from).
///
/// ```
/// use netproto::packet::Sequence;
///
/// let last = Sequence(65535);
/// let next = last.next();
/// assert_eq!(next, Sequence(0));
/// assert!(next.is_newer_than(last));
/// assert_eq!(next.distance_from(last), 1);
/// assert_eq!(last.distance_from(next), -1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sequence(pub u16);

impl Sequence {
    /// The sequence number `value`.
    pub const fn new(value: u16) -> Self {
        Self(value)
    }

    /// The raw 16-bit value.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// The sequence after this one (65535 wraps to 0).
    #[must_use]
    pub const fn next(self) -> Self {
        Self(self.0.wrapping_add(1))
    }

    /// The sequence before this one (0 wraps to 65535).
    #[must_use]
    pub const fn prev(self) -> Self {
        Self(self.0.wrapping_sub(1))
    }

    /// This sequence plus `n`, modulo 65536.
    #[must_use]
    pub const fn wrapping_add(self, n: u16) -> Self {
        Self(self.0.wrapping_add(n))
    }

    /// This sequence minus `n`, modulo 65536.
    #[must_use]
    pub const fn wrapping_sub(self, n: u16) -> Self {
        Self(self.0.wrapping_sub(n))
    }

    /// `true` when `self` is newer than `other` (wrap-aware; never for equal values).
    ///
    /// ```
    /// use netproto::packet::Sequence;
    /// assert!(Sequence(5).is_newer_than(Sequence(65530)));
    /// assert!(!Sequence(65530).is_newer_than(Sequence(5)));
    /// // At exactly half the ring the numerically larger one wins.
    /// assert!(Sequence(32768).is_newer_than(Sequence(0)));
    /// assert!(!Sequence(0).is_newer_than(Sequence(32768)));
    /// ```
    pub const fn is_newer_than(self, other: Self) -> bool {
        let (s1, s2) = (self.0, other.0);
        (s1 > s2 && s1 - s2 <= 32768) || (s1 < s2 && s2 - s1 > 32768)
    }

    /// `true` when `self` is older than `other`, i.e. `other.is_newer_than(self)`.
    pub const fn is_older_than(self, other: Self) -> bool {
        other.is_newer_than(self)
    }

    /// Wrap-aware three-way comparison: `Greater` when `self` is newer than `other`.
    ///
    /// Consistent with [`is_newer_than`](Self::is_newer_than) for every pair, but not
    /// a total order over the whole ring (it is not transitive).
    pub const fn cmp_wrapping(self, other: Self) -> Ordering {
        if self.0 == other.0 {
            Ordering::Equal
        } else if self.is_newer_than(other) {
            Ordering::Greater
        } else {
            Ordering::Less
        }
    }

    /// Signed wrap-aware distance `self - other`, positive when `self` is newer.
    ///
    /// The result lies in `-32768..=32768`; its sign always agrees with
    /// [`cmp_wrapping`](Self::cmp_wrapping) (at exactly half the ring the numerically
    /// larger value is the newer one, +32768 from the other).
    pub const fn distance_from(self, other: Self) -> i32 {
        let d = self.0.wrapping_sub(other.0);
        if d < 32768 {
            d as i32
        } else if d == 32768 {
            if self.0 > other.0 { 32768 } else { -32768 }
        } else {
            d as i32 - 65536
        }
    }
}

impl From<u16> for Sequence {
    fn from(value: u16) -> Self {
        Self(value)
    }
}

impl From<Sequence> for u16 {
    fn from(value: Sequence) -> Self {
        value.0
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The receipt of a message sent with
/// [`MessageLayer::send_tracked`](crate::channel::MessageLayer::send_tracked) on an unreliable
/// channel: a number the channel gives its tracked messages in the order they were
/// sent (from 0, wrapping at 65536). [`MessageLayer::poll_receipt`](crate::channel::MessageLayer::poll_receipt)
/// hands it back once the peer acked a packet that carried the message, which proves
/// the peer received it (a lost packet returns nothing: unreliable messages are not
/// resent).
///
/// What feeds [`SnapshotSender`](crate::delta::SnapshotSender): a delta snapshot's
/// baseline is a snapshot the client is known to hold, and the receipt of the message
/// that carried it says so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Receipt(pub u16);

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_greater(s1: u16, s2: u16) -> bool {
        (s1 > s2 && s1 - s2 <= 32768) || (s1 < s2 && s2 - s1 > 32768)
    }

    #[test]
    fn newer_across_the_wrap() {
        assert!(Sequence(0).is_newer_than(Sequence(65535)));
        assert!(Sequence(1).is_newer_than(Sequence(65535)));
        assert!(Sequence(100).is_newer_than(Sequence(65500)));
        assert!(Sequence(65535).is_older_than(Sequence(0)));
        assert!(!Sequence(7).is_newer_than(Sequence(7)));
        assert!(!Sequence(7).is_older_than(Sequence(7)));
    }

    #[test]
    fn half_ring_boundary() {
        // d = 32767: plainly newer; d = 32768: the numerically larger is newer;
        // d = 32769: the other way round.
        assert!(Sequence(32767).is_newer_than(Sequence(0)));
        assert!(Sequence(32768).is_newer_than(Sequence(0)));
        assert!(!Sequence(32769).is_newer_than(Sequence(0)));
        assert!(Sequence(0).is_newer_than(Sequence(32769)));
        assert!(!Sequence(0).is_newer_than(Sequence(32768)));
        assert_eq!(Sequence(32768).distance_from(Sequence(0)), 32768);
        assert_eq!(Sequence(0).distance_from(Sequence(32768)), -32768);
        assert_eq!(Sequence(32769).distance_from(Sequence(0)), -32767);
    }

    #[test]
    fn matches_reference_formula_and_is_antisymmetric() {
        let samples: Vec<u16> = [
            0u16, 1, 2, 254, 255, 256, 257, 32766, 32767, 32768, 32769, 32770, 65279, 65280, 65533,
            65534, 65535,
        ]
        .into_iter()
        .chain((0..65536u32).step_by(997).map(|v| v as u16))
        .collect();
        for &a in &samples {
            for &b in &samples {
                let (sa, sb) = (Sequence(a), Sequence(b));
                assert_eq!(sa.is_newer_than(sb), reference_greater(a, b), "{a} vs {b}");
                if a != b {
                    assert_ne!(sa.is_newer_than(sb), sb.is_newer_than(sa), "{a} vs {b}");
                }
                let d = sa.distance_from(sb);
                assert_eq!(d > 0, sa.is_newer_than(sb), "{a} vs {b}: {d}");
                assert_eq!(d == 0, a == b);
                assert_eq!(sb.wrapping_add(d.rem_euclid(65536) as u16), sa);
                assert_eq!(sa.cmp_wrapping(sb), d.cmp(&0));
            }
        }
    }

    #[test]
    fn get_and_new_round_trip() {
        for v in [0, 1, 300, 65535] {
            assert_eq!(Sequence::new(v).get(), v);
        }
    }

    #[test]
    fn next_prev_and_arithmetic_wrap() {
        assert_eq!(Sequence(65535).next(), Sequence(0));
        assert_eq!(Sequence(0).prev(), Sequence(65535));
        assert_eq!(Sequence(65530).wrapping_add(10), Sequence(4));
        assert_eq!(Sequence(4).wrapping_sub(10), Sequence(65530));
        assert_eq!(Sequence(4).distance_from(Sequence(65530)), 10);
        assert_eq!(u16::from(Sequence::from(9)), 9);
        assert_eq!(Sequence(42).to_string(), "42");
    }
}
