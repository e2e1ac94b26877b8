//! Bit-width arithmetic shared by the streams, the derive and the schema.

/// Bits needed to send any value in `[min, max]` as an offset from `min`.
///
/// Zero for a degenerate range (`min == max`), else `64 - leading_zeros(max - min)`: the
/// reference `serialize` library's `32 - leading_zeros` on 32-bit values, widened to 64
/// (equal wherever both apply).
///
/// ```
/// assert_eq!(netproto::bits_required(0, 100), 7);
/// assert_eq!(netproto::bits_required(5, 5), 0);
/// assert_eq!(netproto::bits_required(0, 255), 8);
/// assert_eq!(netproto::bits_required(0, 256), 9);
/// ```
pub const fn bits_required(min: u64, max: u64) -> u32 {
    if max <= min {
        0
    } else {
        64 - (max - min).leading_zeros()
    }
}

/// `bits_required(0, n - 1)`: the bits of an index into `n` choices (0 for one choice).
pub const fn bits_for_count(n: u64) -> u32 {
    if n <= 1 { 0 } else { bits_required(0, n - 1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(bits_required(0, 0), 0);
        assert_eq!(bits_required(0, 1), 1);
        assert_eq!(bits_required(0, 2), 2);
        assert_eq!(bits_required(0, 3), 2);
        assert_eq!(bits_required(0, u64::from(u32::MAX)), 32);
        assert_eq!(bits_required(0, u64::MAX), 64);
        assert_eq!(bits_for_count(1), 0);
        assert_eq!(bits_for_count(2), 1);
        assert_eq!(bits_for_count(256), 8);
        assert_eq!(bits_for_count(257), 9);
    }
}
