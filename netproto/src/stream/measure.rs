//! The measurer: counts the bits a writer would write.

use core::convert::Infallible;

use super::{Place, Stream};
use crate::error::ErrorKind;

/// Counts bits without writing them. It cannot fail.
///
/// Exact for everything but alignment: every align (and so every byte run and string) is
/// charged 7 bits whatever the position, because a message may be written at any bit
/// offset. The measure is therefore an upper bound, equal to the written size for
/// messages without aligns.
///
/// ```
/// use netproto::{MeasureStream, Stream};
///
/// let mut m = MeasureStream::new();
/// m.serialize_int(&mut 42u8, 0, 100).unwrap();
/// m.serialize_align().unwrap();
/// assert_eq!(m.bits_processed(), 7 + 7);
/// ```
#[derive(Debug, Default, Clone)]
pub struct MeasureStream {
    bits: usize,
}

impl MeasureStream {
    /// A measurer at zero bits.
    pub const fn new() -> Self {
        Self { bits: 0 }
    }
}

impl Stream for MeasureStream {
    type Error = Infallible;
    const IS_WRITING: bool = false;
    const IS_READING: bool = false;

    #[inline(always)]
    fn serialize_bits(&mut self, _value: &mut u64, bits: u32) -> Result<(), Infallible> {
        self.bits += bits as usize;
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), Infallible> {
        self.bits += 7;
        Ok(())
    }

    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), Infallible> {
        self.bits += 7 + bytes.get().len() * 8;
        Ok(())
    }

    #[inline(always)]
    fn check(&self, _ok: bool, _kind: ErrorKind) -> Result<(), Infallible> {
        Ok(())
    }

    #[inline(always)]
    fn in_field(err: Infallible, _field: &'static str) -> Infallible {
        err
    }

    fn bits_processed(&self) -> usize {
        self.bits
    }

    fn bits_remaining(&self) -> usize {
        usize::MAX - self.bits
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn aligns_cost_7_bits_wherever_they_start() {
        let mut m = MeasureStream::new();
        m.serialize_align().unwrap();
        assert_eq!(m.bits_processed(), 7, "even at bit 0");
        m.serialize_bytes(&[][..]).unwrap();
        assert_eq!(m.bits_processed(), 14, "an empty byte run still aligns");
        m.serialize_bytes(&[1u8, 2, 3][..]).unwrap();
        assert_eq!(m.bits_processed(), 14 + 7 + 24);
        m.serialize_bytes(&mut [0u8; 2][..]).unwrap();
        assert_eq!(m.bits_processed(), 45 + 7 + 16);
    }

    #[test]
    fn everything_else_is_exact() {
        let mut m = MeasureStream::new();
        m.serialize_bits(&mut 0, 64).unwrap();
        m.serialize_int(&mut 5i32, 5, 5).unwrap(); // degenerate: 0 bits
        m.serialize_int(&mut 0u16, 0, 1000).unwrap(); // 10 bits
        m.serialize_relative(10, &mut 11).unwrap(); // 1 bit
        m.serialize_relative(10, &mut 100_000).unwrap(); // 6 + 32 bits
        m.serialize_string(&mut "héllo".into(), 1).unwrap(); // 1 + 7 + 48: not validated
        assert_eq!(m.bits_processed(), 64 + 10 + 1 + 38 + 1 + 7 + 48);
        assert_eq!(m.bits_remaining(), usize::MAX - m.bits_processed());
    }
}
