//! The reader: unpacks and validates bits from a byte slice, one unaligned word load per read;
//! and its fast path, derived mechanically: a message's serialize function run on a
//! [`PackedRead`] word reader instead of the [`ReadStream`] itself.

use super::{NetMessage, Place, Stream, out_of_range};
use crate::error::{ErrorKind, StreamError};

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
    /// [`PackedRead`], which reads ahead in words and gives
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
        read_message(message, self)
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

/// A reader that takes bits from the [`ReadStream`] under it a 64-bit word at a time and
/// hands them out field by field, for a message whose [`NetMessage::MAX_BITS`] plus a
/// word are known to be there.
///
/// [`ReadStream`]'s [`Stream::serialize_message`] runs a message's serialize function on one when the reader has that
/// much left: the end-of-input check and the unaligned load are then made once per word
/// instead of once per field, and since the word starts empty at the message's first bit,
/// the offsets of its fixed-width fields are constants the compiler folds. What the
/// message does not use is given back ([`PackedRead::finish`]); aligns and byte runs go
/// to the reader itself, after the bits read ahead are given back, so that padding,
/// lengths and errors are exactly the reader's. The values read, their checks and their
/// errors (field paths included) are those of the plain reader.
///
/// `ROOMY` says that the input holds the message plus 64 bits: every word taken is then a
/// whole 64 bits, which lets the compiler fold the word's bookkeeping. Without it, the
/// last word is what is left (and a field that runs out fails with
/// [`ErrorKind::PastEnd`], nothing consumed, as with the reader).
#[derive(Debug)]
pub(crate) struct PackedRead<'s, 'a, const ROOMY: bool> {
    inner: &'s mut ReadStream<'a>,
    /// Bits read ahead and not yet handed out, in the low `bits` bits (`bits <= 64`).
    word: u64,
    bits: u32,
}

impl<'s, 'a, const ROOMY: bool> PackedRead<'s, 'a, ROOMY> {
    /// A word reader in front of `inner`. With `ROOMY`, `inner` must hold every bit the
    /// message reads plus 64 (short of that, a read fails with [`ErrorKind::PastEnd`] when
    /// a word is taken, which may be before the field that runs out).
    #[inline(always)]
    pub(crate) fn new(inner: &'s mut ReadStream<'a>) -> Self {
        Self {
            inner,
            word: 0,
            bits: 0,
        }
    }

    /// Gives the bits read ahead back to the reader: it is then exactly past the bits
    /// handed out.
    #[inline(always)]
    pub(crate) fn finish(&mut self) {
        self.inner.unread(self.bits as usize);
        self.word = 0;
        self.bits = 0;
    }
}

impl<const ROOMY: bool> Stream for PackedRead<'_, '_, ROOMY> {
    type Error = StreamError;
    const IS_WRITING: bool = false;
    const IS_READING: bool = true;

    /// As [`ReadStream`]: [`ErrorKind::PastEnd`] (and nothing consumed) when fewer bits
    /// remain, [`ErrorKind::OutOfRange`] for a width outside `1..=64`.
    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        if bits.wrapping_sub(1) >= 64 {
            return Err(out_of_range());
        }
        let mask = u64::MAX >> (64 - bits);
        if bits <= self.bits {
            *value = self.word & mask;
            // `>> bits` for bits == 64 too.
            self.word = (self.word >> 1) >> (bits - 1);
            self.bits -= bits;
            return Ok(());
        }
        // The word runs short: its bits are the low ones, a fresh word gives the rest.
        let have = self.bits;
        let need = bits - have;
        let take = if ROOMY {
            64
        } else {
            let left = self.inner.bits_remaining().min(64) as u32;
            if left < need {
                // Nothing consumed: the bits read ahead are still in the word.
                return Err(past_end());
            }
            left
        };
        let mut fresh = 0;
        self.inner.serialize_bits(&mut fresh, take)?;
        // have < bits <= 64: the shift is defined.
        *value = (self.word | fresh << have) & mask;
        self.word = (fresh >> 1) >> (need - 1);
        self.bits = take - need;
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), StreamError> {
        self.finish();
        self.inner.serialize_align()
    }

    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), StreamError> {
        self.finish();
        self.inner.serialize_bytes(bytes)
    }

    #[inline(always)]
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), StreamError> {
        self.inner.check(ok, kind)
    }

    #[inline(always)]
    fn in_field(err: StreamError, field: &'static str) -> StreamError {
        err.in_field(field)
    }

    #[inline]
    fn bits_processed(&self) -> usize {
        self.inner.bits_processed() - self.bits as usize
    }

    #[inline]
    fn bits_remaining(&self) -> usize {
        self.inner.bits_remaining() + self.bits as usize
    }
}

/// Reads a message into `message` from `stream`: the read fast path, behind
/// [`ReadStream`]'s [`Stream::serialize_message`] (so behind [`NetMessage::serialize`]
/// on a reader, which [`decode`](crate::decode), [`decode_prefix`](crate::decode_prefix)
/// and the channel layer's payload reader call).
///
/// The message's serialize function runs on a `ROOMY` [`PackedRead`] reader (whose word
/// bookkeeping folds away) whenever at least a word is left. With `M::MAX_BITS` plus 64
/// bits left it cannot run short, and its result is the reader's. With less, it may run
/// short of a whole word before the message's end (the last messages of a packet, or a
/// message whose strings make `MAX_BITS` large): it then fails with
/// [`ErrorKind::PastEnd`] having handed out only bits that are there, so the read is
/// taken again from the message's first bit by a reader that takes what is left. Any
/// other outcome is the reader's own: the ROOMY reader reads the same values, makes the
/// same checks and fails with the same errors up to where it runs short. So every path
/// reads the same values as the plain reader, fails with the same errors and leaves
/// `stream` at the same position; only a message near the end of its input may be read
/// twice.
#[inline(always)]
pub(crate) fn read_message<M: NetMessage, P: Place<M>>(
    mut message: P,
    stream: &mut ReadStream<'_>,
) -> Result<(), StreamError> {
    let remaining = stream.bits_remaining();
    if remaining >= 64 {
        let mut packed = PackedRead::<true>::new(stream);
        let result = M::serialize_in(message.field(|m| m, |m| m), &mut packed);
        packed.finish();
        match result {
            Err(err)
                if err.kind() == ErrorKind::PastEnd
                    && remaining < M::MAX_BITS.saturating_add(64) =>
            {
                // Ran short of a whole word: back to the message's first bit.
                stream.unread(remaining - stream.bits_remaining());
            }
            result => return result,
        }
    }
    let mut packed = PackedRead::<false>::new(stream);
    let result = M::serialize_in(message, &mut packed);
    packed.finish();
    result
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod word_reader_tests {
    use super::super::WriteStream;
    use super::super::model::Rng;
    use super::*;

    /// One operation of `packed_read_reads_what_the_reader_reads` on `s`: 0 aligns,
    /// `100 + n` reads `n` bytes, anything else reads that many bits; the value read,
    /// with the position after it in the top byte.
    fn apply<S: Stream<Error = StreamError>>(s: &mut S, op: u32) -> Result<u64, StreamError> {
        let got = match op {
            0 => s.serialize_align().map(|()| 0),
            100.. => {
                let mut buf = vec![0u8; (op - 100) as usize];
                s.serialize_bytes(&mut buf[..])
                    .map(|()| buf.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)))
            }
            bits => {
                let mut v = 0;
                s.serialize_bits(&mut v, bits).map(|()| v)
            }
        };
        got.map(|v| v ^ (s.bits_processed() as u64) << 56)
    }

    /// Random widths, aligns and byte runs read through the word reader and through the
    /// reader give the same values, the same errors and the same positions.
    #[test]
    fn packed_read_reads_what_the_reader_reads() {
        let mut rng = Rng(37);
        for round in 0..3000 {
            let len = 1 + rng.below(48) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.below(4) == 0 {
                        0
                    } else {
                        rng.next() as u8
                    }
                })
                .collect();
            let offset = rng.below(9) as u32;
            let ops: Vec<u32> = (0..1 + rng.below(20))
                .map(|_| match rng.below(10) {
                    0 => 0,
                    1 => 100 + rng.below(5) as u32,
                    _ => 1 + rng.below(64) as u32,
                })
                .collect();
            let run = |packed: u8| {
                let mut r = ReadStream::new(&bytes);
                if offset > 0 && r.serialize_bits(&mut 0, offset).is_err() {
                    return Vec::new();
                }
                let mut out = Vec::new();
                let mut step = |s: &mut dyn FnMut(u32) -> Result<u64, StreamError>| {
                    for &op in &ops {
                        let got = s(op);
                        let stop = got.is_err();
                        out.push(got);
                        if stop {
                            break;
                        }
                    }
                };
                if packed == 1 {
                    let mut p = PackedRead::<true>::new(&mut r);
                    step(&mut |op| apply(&mut p, op));
                    p.finish();
                } else if packed == 2 {
                    let mut p = PackedRead::<false>::new(&mut r);
                    step(&mut |op| apply(&mut p, op));
                    p.finish();
                } else {
                    step(&mut |op| apply(&mut r, op));
                }
                out.push(Ok(r.bits_processed() as u64));
                out
            };
            // The word reader may read up to 64 bits ahead: only the errors of reads that
            // stay within the bytes are compared (past the end, PastEnd may come a read
            // early, which `read_message` answers by reading the message again exactly).
            let (a, b, c) = (run(1), run(0), run(2));
            // Taking what is left, the word reader is the reader exactly.
            assert_eq!(c, b, "round {round}");
            let ok_prefix =
                |v: &Vec<Result<u64, StreamError>>| v.iter().take_while(|x| x.is_ok()).count();
            let end = match b.last() {
                Some(Ok(end)) => *end as usize,
                _ => usize::MAX,
            };
            if b.iter().all(Result::is_ok) && end.saturating_add(64) <= len * 8 {
                assert_eq!(a, b, "round {round}");
            } else {
                let n = ok_prefix(&a).min(ok_prefix(&b));
                assert_eq!(a[..n], b[..n], "round {round}");
            }
        }
    }

    /// A message whose size varies (a byte run of 0..=20 bytes between fields of several
    /// widths, one of them range-checked), so that `MAX_BITS` is far above most sizes.
    #[derive(Debug, Clone, PartialEq)]
    struct Varied {
        head: u64,
        level: u64,
        run: Vec<u8>,
        tail: [u64; 5],
    }

    impl NetMessage for Varied {
        const MAX_BITS: usize = 13 + 7 + 5 + 8 + 20 * 8 + 5 * 33;
        const MIN_BITS: usize = 13 + 7 + 5 + 5 * 33;
        fn blank() -> Self {
            Varied {
                head: 0,
                level: 0,
                run: Vec::new(),
                tail: [0; 5],
            }
        }
        fn serialize_in<S: Stream, P: Place<Self>>(
            mut this: P,
            stream: &mut S,
        ) -> Result<(), S::Error> {
            let mut v = this.get().clone();
            stream.serialize_bits(&mut v.head, 13)?;
            stream.serialize_bits(&mut v.level, 7)?;
            stream.check(v.level <= 100, ErrorKind::OutOfRange)?;
            let mut len = v.run.len() as u64;
            stream.serialize_bits(&mut len, 5)?;
            stream.check(len <= 20, ErrorKind::OutOfRange)?;
            if len > 0 {
                stream.serialize_align()?;
                v.run.resize(len as usize, 0);
                stream.serialize_bytes(&mut v.run[..])?;
            }
            for t in &mut v.tail {
                stream.serialize_bits(t, 33)?;
            }
            this.set(v);
            Ok(())
        }
    }

    /// `read_message` (the ROOMY word reader, taken again by the exact one when it runs
    /// short) reads what the plain reader reads: the same values, errors and positions,
    /// for messages that end anywhere from well inside the input to past its end.
    #[test]
    fn read_message_reads_what_the_reader_reads() {
        let mut rng = Rng(41);
        // Messages the ROOMY reader alone fails on (PastEnd) that are whole in the input:
        // the ones only the second read gets right.
        let mut retried = 0;
        for round in 0..4000 {
            // Valid messages after an offset, cut anywhere, a byte sometimes spoiled.
            let offset = rng.below(70) as u32;
            let mut buf = [0u8; 256];
            let mut w = WriteStream::new(&mut buf);
            let mut left = offset;
            while left > 0 {
                let n = left.min(64);
                w.serialize_bits(&mut 0, n).unwrap();
                left -= n;
            }
            for _ in 0..1 + rng.below(4) {
                let mut m = Varied {
                    head: rng.bits(13),
                    level: rng.below(101),
                    run: (0..rng.below(21)).map(|_| rng.next() as u8).collect(),
                    tail: [0; 5],
                };
                for t in &mut m.tail {
                    *t = rng.bits(33);
                }
                Varied::serialize_in(&m, &mut w).unwrap();
            }
            let written = w.finish();
            let mut bytes = buf[..1 + rng.below(written as u64) as usize].to_vec();
            if rng.below(4) == 0 {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = rng.next() as u8;
            }
            let mut run = |fast: bool| {
                let mut r = ReadStream::new(&bytes);
                let mut left = offset;
                while left > 0 {
                    let n = left.min(64);
                    if r.serialize_bits(&mut 0, n).is_err() {
                        return None;
                    }
                    left -= n;
                }
                let mut out = Vec::new();
                // Messages one after another until one fails, as a payload is read.
                loop {
                    let mut m = Varied::blank();
                    let got = if fast {
                        let (mut alone, mut whole) = (r.clone(), Varied::blank());
                        let mut roomy = PackedRead::<true>::new(&mut alone);
                        let short = Varied::serialize_in(&mut whole, &mut roomy)
                            .is_err_and(|e| e.kind() == ErrorKind::PastEnd);
                        let got = read_message(&mut m, &mut r);
                        retried += usize::from(short && got.is_ok());
                        got
                    } else {
                        Varied::serialize_in(&mut m, &mut r)
                    };
                    let stop = got.is_err();
                    out.push((got.map(|()| m), r.bits_processed()));
                    if stop {
                        return Some(out);
                    }
                }
            };
            let fast = run(true);
            let plain = run(false);
            assert_eq!(fast, plain, "round {round}");
        }
        // The inputs reach the second read often.
        assert!(retried > 150, "{retried}");
    }
}
