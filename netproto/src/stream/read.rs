//! The reader: unpacks and validates bits from a byte slice through a scratch register.

use super::Stream;
use crate::error::{Error, ErrorKind};

/// Reads bits from a byte slice, validating everything it reads.
///
/// The limit is `bytes.len() * 8` bits: the zero padding of the last byte can be read,
/// anything beyond fails with [`ErrorKind::PastEnd`]. Reads never index out of bounds and
/// never panic, whatever the input; any slice length works (the reader does not need
/// slack bytes after the data).
///
/// ```
/// use netproto::{ErrorKind, ReadStream, Stream};
///
/// let mut r = ReadStream::new(&[0x7f]);
/// let mut v = 0u8;
/// // 127 is in the 7-bit headroom of 0..=100: rejected, never clamped.
/// assert_eq!(r.serialize_int(&mut v, 0, 100).unwrap_err().kind(), ErrorKind::OutOfRange);
/// ```
#[derive(Debug, Clone)]
pub struct ReadStream<'a> {
    buf: &'a [u8],
    /// Bits loaded but not yet consumed, in the low `scratch_bits` bits (0..=63).
    scratch: u64,
    scratch_bits: u32,
    /// Byte offset of the next word to load into the scratch register. May run past the
    /// end of `buf` (the missing bytes load as zeros), never past `remaining`'s limit in
    /// what is actually consumed.
    loaded: usize,
    /// Bits that can still be read: `buf.len() * 8` minus the bits consumed.
    remaining: usize,
}

impl<'a> ReadStream<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        let remaining = buf.len().saturating_mul(8);
        Self {
            buf,
            scratch: 0,
            scratch_bits: 0,
            loaded: 0,
            remaining,
        }
    }

    /// Bytes consumed so far, counting a partial last byte.
    pub fn bytes_read(&self) -> usize {
        self.bits_processed().div_ceil(8)
    }

    /// Takes the next `bits` bits (1..=64). The caller has checked `remaining`.
    #[inline(always)]
    fn take(&mut self, bits: u32) -> u64 {
        debug_assert!((1..=64).contains(&bits));
        let have = self.scratch_bits;
        if bits <= have {
            // bits <= have <= 63: the shift is in range.
            let value = self.scratch & mask(bits);
            self.scratch >>= bits;
            self.scratch_bits = have - bits;
            value
        } else {
            let word = self.load_word();
            let value = (self.scratch | word << have) & mask(bits);
            let need = bits - have; // 1..=64
            // `word >> need`, written so that `need == 64` gives 0, not an overflow.
            self.scratch = (word >> (need - 1)) >> 1;
            self.scratch_bits = 64 - need;
            value
        }
    }

    /// The next 8 bytes as a little-endian word; bytes past the end read as zero.
    #[inline(always)]
    fn load_word(&mut self) -> u64 {
        let at = self.loaded;
        self.loaded = at.saturating_add(8);
        match self.buf.get(at..).and_then(|b| b.first_chunk::<8>()) {
            Some(word) => u64::from_le_bytes(*word),
            None => load_tail(self.buf, at),
        }
    }

    /// Charges `bits` to the input, or fails with nothing consumed.
    #[inline(always)]
    fn reserve(&mut self, bits: usize) -> Result<(), Error> {
        if bits > self.remaining {
            return Err(past_end());
        }
        self.remaining -= bits;
        Ok(())
    }
}

/// The bytes of `buf` from `at` (up to 8) as a little-endian word, zero-padded: the
/// last partial word of the input, or an all-zero word past it.
#[cold]
#[inline(never)]
fn load_tail(buf: &[u8], at: usize) -> u64 {
    let rest = buf.get(at..).unwrap_or(&[]);
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    u64::from_le_bytes(word)
}

/// The low `bits` bits set, for `bits` in 1..=64.
#[inline(always)]
fn mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

#[cold]
#[inline(never)]
fn past_end() -> Error {
    Error::new(ErrorKind::PastEnd)
}

#[cold]
#[inline(never)]
fn bits_error(bits: u32) -> Error {
    if (1..=64).contains(&bits) {
        Error::new(ErrorKind::PastEnd)
    } else {
        // bits == 0 or bits > 64: a programming error the derive never makes.
        Error::new(ErrorKind::OutOfRange)
    }
}

impl Stream for ReadStream<'_> {
    type Error = Error;
    const IS_WRITING: bool = false;
    const IS_READING: bool = true;

    /// Reads `bits` bits, failing with [`ErrorKind::PastEnd`] (and consuming nothing)
    /// when fewer remain, or [`ErrorKind::OutOfRange`] for a width outside `1..=64`.
    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), Error> {
        if (bits.wrapping_sub(1) >= 64) | (bits as usize > self.remaining) {
            return Err(bits_error(bits));
        }
        self.remaining -= bits as usize;
        *value = self.take(bits);
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), Error> {
        // Loaded bytes are whole, so the bit position mod 8 is the scratch's.
        let pad = self.scratch_bits & 7;
        if pad > 0 {
            self.reserve(pad as usize)?;
            if self.take(pad) != 0 {
                return Err(Error::new(ErrorKind::NonZeroPadding));
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), Error> {
        self.serialize_align()?;
        self.reserve(bytes.len().saturating_mul(8))?;
        let mut rest = &mut bytes[..];
        // Byte-aligned: drain whole bytes from the scratch word, then copy directly.
        while self.scratch_bits != 0 {
            let Some((b, tail)) = rest.split_first_mut() else {
                return Ok(());
            };
            *b = self.take(8) as u8;
            rest = tail;
        }
        // The scratch is empty, so `loaded` is the read position, and `reserve` proved
        // the bytes are there.
        let at = self.loaded;
        if let Some(src) = self.buf.get(at..at + rest.len()) {
            rest.copy_from_slice(src);
        }
        self.loaded = at + rest.len();
        Ok(())
    }

    fn write_bytes(&mut self, _bytes: &[u8]) -> Result<(), Error> {
        Ok(())
    }

    #[inline(always)]
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), Error> {
        if ok { Ok(()) } else { Err(Error::new(kind)) }
    }

    #[inline(always)]
    fn in_field(err: Error, field: &'static str) -> Error {
        err.in_field(field)
    }

    #[inline]
    fn bits_processed(&self) -> usize {
        self.buf.len().saturating_mul(8) - self.remaining
    }

    #[inline]
    fn bits_remaining(&self) -> usize {
        self.remaining
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::model::{Rng, bit, pack};
    use super::*;

    #[test]
    fn every_width_at_every_offset_reads_what_the_model_packed() {
        let mut rng = Rng(11);
        for offset in 0..=64u32 {
            for bits in 1..=64u32 {
                let mut chunks = Vec::new();
                if offset > 0 {
                    chunks.push((rng.bits(offset), offset));
                }
                chunks.push((rng.bits(bits), bits));
                chunks.push((rng.bits(7), 7));
                let bytes = pack(&chunks);
                let mut r = ReadStream::new(&bytes);
                for &(v, n) in &chunks {
                    let mut got = 0;
                    r.serialize_bits(&mut got, n).unwrap();
                    assert_eq!(got, v, "offset {offset} bits {bits}");
                }
            }
        }
    }

    #[test]
    fn any_length_reads_to_the_last_bit_then_fails_without_consuming() {
        let mut rng = Rng(12);
        for len in 0..=40usize {
            for _ in 0..50 {
                let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                let mut r = ReadStream::new(&bytes);
                let mut k = 0usize;
                loop {
                    let bits = 1 + rng.below(64) as u32;
                    let mut got = 0;
                    match r.serialize_bits(&mut got, bits) {
                        Ok(()) => {
                            for i in 0..bits as usize {
                                assert_eq!(got >> i & 1, bit(&bytes, k + i), "len {len}");
                            }
                            assert_eq!(got >> (bits - 1) >> 1, 0, "no bits above {bits}");
                            k += bits as usize;
                        }
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::PastEnd);
                            assert!(k + bits as usize > len * 8);
                            assert_eq!(r.bits_processed(), k, "a failed read consumed bits");
                            break;
                        }
                    }
                }
                // What is left is still readable, to exactly the end.
                let left = len * 8 - k;
                if left > 0 {
                    let mut got = 0;
                    r.serialize_bits(&mut got, left as u32).unwrap();
                }
                assert_eq!(r.bits_remaining(), 0);
                assert_eq!(r.bytes_read(), len);
                assert_eq!(
                    r.serialize_bits(&mut 0, 1).unwrap_err().kind(),
                    ErrorKind::PastEnd
                );
                assert_eq!(r.serialize_align(), Ok(()));
                assert_eq!(r.serialize_bytes(&mut []), Ok(()));
                let err = r.serialize_bytes(&mut [0]).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::PastEnd);
            }
        }
    }

    #[test]
    fn the_padding_of_the_last_byte_is_readable_and_nothing_more() {
        let mut r = ReadStream::new(&[0x01]);
        let mut v = 0;
        r.serialize_bits(&mut v, 1).unwrap();
        r.serialize_bits(&mut v, 7).unwrap();
        assert_eq!(v, 0);
        assert_eq!(
            r.serialize_bits(&mut v, 1).unwrap_err().kind(),
            ErrorKind::PastEnd
        );
        let mut empty = ReadStream::new(&[]);
        assert_eq!(
            empty.serialize_bits(&mut v, 1).unwrap_err().kind(),
            ErrorKind::PastEnd
        );
        assert_eq!(
            empty.serialize_bits(&mut v, 64).unwrap_err().kind(),
            ErrorKind::PastEnd
        );
    }

    #[test]
    fn widths_outside_1_to_64_are_rejected() {
        let mut r = ReadStream::new(&[0xFF; 16]);
        let mut v = 7;
        assert_eq!(
            r.serialize_bits(&mut v, 0).unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
        assert_eq!(
            r.serialize_bits(&mut v, 65).unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
        assert_eq!(r.bits_processed(), 0);
    }

    #[test]
    fn non_zero_padding_is_rejected_at_every_offset() {
        for offset in 1..8u32 {
            for pad_bit in offset..8 {
                let bytes = [1u8 << pad_bit, 0xAA];
                let mut r = ReadStream::new(&bytes);
                r.serialize_bits(&mut 0, offset).unwrap();
                assert_eq!(
                    r.clone().serialize_align().unwrap_err().kind(),
                    ErrorKind::NonZeroPadding
                );
                let err = r.serialize_bytes(&mut [0]).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::NonZeroPadding);
            }
            // Zero padding passes, and the next byte follows.
            let mut r = ReadStream::new(&[0x00, 0xAA]);
            r.serialize_bits(&mut 0, offset).unwrap();
            let mut b = [0u8];
            r.serialize_bytes(&mut b).unwrap();
            assert_eq!(b, [0xAA]);
        }
    }

    #[test]
    fn bytes_at_every_offset_and_length_then_bits_again() {
        let mut rng = Rng(13);
        for offset in 0..=72usize {
            for n in 0..=20usize {
                let data: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                let mut chunks = vec![(0u64, 0u32); 0];
                let mut left = offset as u32;
                while left > 0 {
                    let bits = left.min(64);
                    chunks.push((rng.bits(bits), bits));
                    left -= bits;
                }
                let pad = ((8 - offset % 8) % 8) as u32;
                if pad > 0 {
                    chunks.push((0, pad));
                }
                chunks.extend(data.iter().map(|&b| (u64::from(b), 8)));
                chunks.push((rng.bits(41), 41));
                let bytes = pack(&chunks);
                let mut r = ReadStream::new(&bytes);
                let mut i = 0;
                let mut left = offset;
                while left > 0 {
                    let mut v = 0;
                    r.serialize_bits(&mut v, chunks[i].1).unwrap();
                    assert_eq!(v, chunks[i].0);
                    left -= chunks[i].1 as usize;
                    i += 1;
                }
                let mut got = vec![0u8; n];
                r.serialize_bytes(&mut got).unwrap();
                assert_eq!(got, data, "offset {offset} n {n}");
                let mut v = 0;
                r.serialize_bits(&mut v, 41).unwrap();
                assert_eq!(v, chunks.last().unwrap().0);
                assert_eq!(r.bits_remaining(), bytes.len() * 8 - r.bits_processed());
                assert!(r.bits_remaining() < 8);
            }
        }
    }
}
