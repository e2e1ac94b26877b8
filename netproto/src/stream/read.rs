//! The reader: unpacks and validates bits from a byte slice, one unaligned word load per read.

use super::{Place, Stream};
use crate::error::{ErrorKind, StreamError};
use crate::message::NetMessage;

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
    /// Bits consumed so far (never more than `limit`).
    pos: usize,
    /// `buf.len() * 8`: the bits that can be read in all.
    limit: usize,
}

impl<'a> ReadStream<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            limit: buf.len().saturating_mul(8),
        }
    }

    /// Bytes consumed so far, counting a partial last byte.
    pub fn bytes_read(&self) -> usize {
        self.bits_processed().div_ceil(8)
    }

    /// The `bits` bits (1..=64) at the read position, which the caller has checked are
    /// within the input; does not consume them.
    ///
    /// One unaligned little-endian load of the 8 bytes holding the position, shifted by
    /// the bit offset in the first byte, gives at least 57 bits: no state is carried
    /// from one read to the next (no scratch register to refill), so a read costs the
    /// same whatever was read before it. Only a read wider than 56 bits may need a ninth
    /// byte; at the call sites the width is a constant, so that branch folds away.
    #[inline(always)]
    fn peek(&self, bits: u32) -> u64 {
        debug_assert!((1..=64).contains(&bits));
        let byte = self.pos >> 3;
        let shift = (self.pos & 7) as u32;
        let word = match self.buf.get(byte..).and_then(|b| b.first_chunk::<8>()) {
            Some(word) => u64::from_le_bytes(*word),
            None => load_tail(self.buf, byte),
        };
        let mut value = word >> shift;
        if bits + shift > 64 {
            // shift is 1..=7 here: the ninth byte's low bits go above the first 64 - shift.
            let next = self.buf.get(byte.wrapping_add(8)).copied().unwrap_or(0);
            value |= u64::from(next) << (64 - shift);
        }
        value & mask(bits)
    }

    /// Charges `bits` to the input, or fails with nothing consumed.
    /// Steps back `bits` bits (at most the bits read), for
    /// [`PackedRead`](super::packed::PackedRead), which reads ahead in words and gives
    /// back what the message did not use.
    #[inline(always)]
    pub(crate) fn unread(&mut self, bits: usize) {
        self.pos -= bits.min(self.pos);
    }

    #[inline(always)]
    fn reserve(&mut self, bits: usize) -> Result<(), StreamError> {
        if bits > self.limit - self.pos {
            return Err(past_end());
        }
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
fn past_end() -> StreamError {
    StreamError::new(ErrorKind::PastEnd)
}

#[cold]
#[inline(never)]
fn bits_error(bits: u32) -> StreamError {
    if (1..=64).contains(&bits) {
        StreamError::new(ErrorKind::PastEnd)
    } else {
        // bits == 0 or bits > 64: a programming error the derive never makes.
        StreamError::new(ErrorKind::OutOfRange)
    }
}

impl Stream for ReadStream<'_> {
    type Error = StreamError;
    const IS_WRITING: bool = false;
    const IS_READING: bool = true;

    /// The fast path: the message's serialize function runs on a word reader around this
    /// reader (one end check and load per 64-bit word instead of per field). Same values,
    /// errors and position as the reader alone.
    #[inline(always)]
    fn serialize_message<M: NetMessage, P: Place<M>>(
        &mut self,
        message: P,
    ) -> Result<(), StreamError> {
        super::packed::read_message(message, self)
    }

    /// Reads `bits` bits, failing with [`ErrorKind::PastEnd`] (and consuming nothing)
    /// when fewer remain, or [`ErrorKind::OutOfRange`] for a width outside `1..=64`.
    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        if (bits.wrapping_sub(1) >= 64) | (bits as usize > self.limit - self.pos) {
            return Err(bits_error(bits));
        }
        *value = self.peek(bits);
        self.pos += bits as usize;
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), StreamError> {
        // `limit` is a whole number of bytes, so the padding is always there to read.
        let pad = (8 - (self.pos & 7) as u32) & 7;
        if pad > 0 {
            self.reserve(pad as usize)?;
            let bits = self.peek(pad);
            self.pos += pad as usize;
            if bits != 0 {
                return Err(StreamError::new(ErrorKind::NonZeroPadding));
            }
        }
        Ok(())
    }

    /// Reads into `&mut [u8]`; given `&[u8]`, reads past as many bytes (checked to be
    /// there) and stores nothing.
    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, mut bytes: P) -> Result<(), StreamError> {
        let len = bytes.get().len();
        self.serialize_align()?;
        self.reserve(len.saturating_mul(8))?;
        // Byte-aligned, and `reserve` proved the bytes are there.
        let at = self.pos >> 3;
        if let (Some(src), Some(dst)) = (self.buf.get(at..at + len), bytes.get_mut()) {
            dst.copy_from_slice(src);
        }
        self.pos += len * 8;
        Ok(())
    }

    #[inline(always)]
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), StreamError> {
        if ok {
            Ok(())
        } else {
            Err(StreamError::new(kind))
        }
    }

    #[inline(always)]
    fn in_field(err: StreamError, field: &'static str) -> StreamError {
        err.in_field(field)
    }

    #[inline]
    fn bits_processed(&self) -> usize {
        self.pos
    }

    #[inline]
    fn bits_remaining(&self) -> usize {
        self.limit - self.pos
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
                assert_eq!(r.serialize_bytes(&mut [0u8; 0][..]), Ok(()));
                let err = r.serialize_bytes(&mut [0u8][..]).unwrap_err();
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
                let err = r.serialize_bytes(&mut [0u8][..]).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::NonZeroPadding);
            }
            // Zero padding passes, and the next byte follows.
            let mut r = ReadStream::new(&[0x00, 0xAA]);
            r.serialize_bits(&mut 0, offset).unwrap();
            let mut b = [0u8];
            r.serialize_bytes(&mut b[..]).unwrap();
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
                r.serialize_bytes(&mut got[..]).unwrap();
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
