//! Integer types that can be sent as a ranged offset.

/// An integer type usable with [`Stream::serialize_int`](super::Stream::serialize_int).
///
/// The offset from `min` is computed in the unsigned 64-bit domain with wrapping, as the
/// reference library does, so every range of every type (including the full `i64`
/// range) has an exact offset.
pub trait RangedInt: Copy {
    /// `self - min` in the wrapping unsigned domain. For `self` in `[min, max]` this is
    /// the true difference; for `self` outside it the result exceeds `max - min`.
    fn offset_from(self, min: Self) -> u64;
    /// `min + offset`, wrapping in the type (exact when the offset is within the range).
    fn from_offset(min: Self, offset: u64) -> Self;
}

macro_rules! ranged_int {
    ($($t:ty),*) => {$(
        impl RangedInt for $t {
            #[inline(always)]
            fn offset_from(self, min: Self) -> u64 {
                // Sign-extending casts keep the difference exact modulo 2^64.
                (self as u64).wrapping_sub(min as u64)
            }
            #[inline(always)]
            fn from_offset(min: Self, offset: u64) -> Self {
                min.wrapping_add(offset as Self)
            }
        }
    )*};
}

ranged_int!(u8, u16, u32, u64, i8, i16, i32, i64);

#[cfg(test)]
mod tests {
    use super::RangedInt;

    #[test]
    fn offsets_are_exact_in_range_and_large_outside() {
        assert_eq!(5u8.offset_from(3), 2);
        assert_eq!((-1i8).offset_from(-128), 127);
        assert_eq!(i64::MAX.offset_from(i64::MIN), u64::MAX);
        assert!(2u8.offset_from(3) > 250);
        assert_eq!(i32::from_offset(-10, 15), 5);
        assert_eq!(i64::from_offset(i64::MIN, u64::MAX), i64::MAX);
    }
}
