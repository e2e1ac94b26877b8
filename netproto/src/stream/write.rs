//! The writer: packs bits into a caller's buffer through a 64-bit scratch register;
//! and its fast path, derived mechanically: a message's serialize function run on a
//! [`Packed`] word writer instead of the [`WriteStream`] itself.

use super::{NetDelta, NetMessage, Place, Stream, out_of_range};
use crate::error::{ErrorKind, StreamError};

/// Writes bits into a caller-provided byte buffer.
///
/// Bits accumulate in a 64-bit scratch register and leave it 64 at a time as
/// little-endian words; [`WriteStream::finish`] flushes the tail and returns the number
/// of bytes written (`ceil(bits / 8)`, the last byte zero-padded). Any buffer length
/// works, and the writer never touches a byte past `ceil(bits / 8)`: writing more than
/// the buffer holds fails with [`ErrorKind::BufferFull`] and writes nothing. The output
/// does not depend on what the buffer held before.
///
/// ```
/// use netproto::{Stream, WriteStream};
///
/// let mut buf = [0u8; 8];
/// let mut w = WriteStream::new(&mut buf);
/// w.serialize_int(&mut 42u8, 0, 100).unwrap();
/// w.serialize_bool(&mut true).unwrap();
/// let len = w.finish();
/// assert_eq!(&buf[..len], &[42 | 1 << 7]);
/// ```
#[derive(Debug)]
pub struct WriteStream<'a> {
    /// The part of the buffer not flushed to yet: the next flushed word goes at its
    /// start. (A slice rather than the buffer and an offset: a flushed word then costs a
    /// length test and a step of the slice, not two bounds tests and an offset.)
    rest: &'a mut [u8],
    /// The buffer's length: `len - rest.len()` bytes are flushed.
    len: usize,
    /// Bits written but not yet flushed, in the low `scratch_bits` bits (0..=63).
    scratch: u64,
    scratch_bits: u32,
    /// Bits that can still be written: the capacity minus the bits written.
    remaining: usize,
}

impl<'a> WriteStream<'a> {
    /// A writer that fills `buf` from its start.
    pub fn new(buf: &'a mut [u8]) -> Self {
        let remaining = buf.len().saturating_mul(8);
        Self {
            len: buf.len(),
            rest: buf,
            scratch: 0,
            scratch_bits: 0,
            remaining,
        }
    }

    /// Bytes flushed to the buffer.
    #[inline(always)]
    fn flushed(&self) -> usize {
        self.len - self.rest.len()
    }

    /// Flushes the scratch register and returns the bytes written, `ceil(bits / 8)`.
    #[inline]
    pub fn finish(mut self) -> usize {
        self.flush_tail();
        self.bytes_written()
    }

    /// Bytes written so far, counting a partial last byte.
    pub fn bytes_written(&self) -> usize {
        self.flushed() + self.scratch_bits.div_ceil(8) as usize
    }

    /// Appends the low `bits` bits (1..=64) of `value`, which has no bits above them.
    /// The caller has already charged `bits` to `remaining`, so a word is flushed only
    /// when all 64 of its bits are within the buffer.
    #[inline(always)]
    fn put(&mut self, value: u64, bits: u32) {
        debug_assert!((1..=64).contains(&bits) && (value >> (bits - 1)) >> 1 == 0);
        let used = self.scratch_bits;
        // The bits of `value` that do not fit (above 64 - used) are picked up below.
        self.scratch |= value << used;
        let total = used + bits;
        if total < 64 {
            self.scratch_bits = total;
        } else {
            self.flush_word();
            // `value >> (64 - used)`, written so that `used == 0` gives 0, not an overflow.
            self.scratch = (value >> 1) >> (63 - used);
            self.scratch_bits = total - 64;
        }
    }

    #[inline(always)]
    fn flush_word(&mut self) {
        // Always there (see `put`); the split keeps it so without `unsafe`.
        if let Some((dst, rest)) = core::mem::take(&mut self.rest).split_first_chunk_mut::<8>() {
            *dst = self.scratch.to_le_bytes();
            self.rest = rest;
        }
    }

    /// Writes the scratch's `ceil(scratch_bits / 8)` bytes (0 to 8) after the flushed
    /// ones, and not a byte more: as one 8-byte store, or a 4-, a 2- and a 1-byte store,
    /// each when the tail has it, instead of a `copy_from_slice` of a variable length (a
    /// `memmove` call that took 6% of encoding one small message, measured with
    /// `perf`). The tail's bytes are bounds-checked once, as one slice: each store then
    /// takes the front of what is left of it, whose length is the only test.
    #[inline]
    fn flush_tail(&mut self) {
        let tail = self.scratch_bits.div_ceil(8) as usize;
        let mut word = self.scratch;
        // Always in bounds (the bits were charged to `remaining`); `get_mut` keeps it so
        // without `unsafe`. The tail stays unflushed: `finish` is the last write.
        let Some(mut dst) = self.rest.get_mut(..tail) else {
            return;
        };
        // `dst.len() == tail <= 8`.
        if let Some(dst) = dst.first_chunk_mut() {
            *dst = word.to_le_bytes();
            return;
        }
        // The length is tested first: a failed split would have taken `dst` with it.
        if dst.len() >= 4
            && let Some((four, rest)) = core::mem::take(&mut dst).split_first_chunk_mut()
        {
            *four = (word as u32).to_le_bytes();
            word >>= 32;
            dst = rest;
        }
        if dst.len() >= 2
            && let Some((two, rest)) = core::mem::take(&mut dst).split_first_chunk_mut()
        {
            *two = (word as u16).to_le_bytes();
            word >>= 16;
            dst = rest;
        }
        if let Some(one) = dst.first_mut() {
            *one = word as u8;
        }
    }

    /// Appends the first `bits` bits of `bytes`, a bit string a writer produced (bit
    /// `i` is bit `i % 8` of byte `i / 8`, as [`finish`](Self::finish) leaves them):
    /// the same bits as writing its values again, 64 at a time, with the room checked
    /// once. Without room, or with fewer than `bits` bits in `bytes`, it fails and
    /// writes nothing.
    pub(crate) fn append_bits(&mut self, bytes: &[u8], bits: usize) -> Result<(), StreamError> {
        if bits > bytes.len().saturating_mul(8) {
            return Err(StreamError::new(ErrorKind::OutOfRange));
        }
        let (words, tail) = bytes.as_chunks::<8>();
        let full = bits / 64;
        // The whole words' bytes are always in the unflushed part (it covers every bit
        // not yet charged to `remaining`); testing it here keeps the split below from
        // panicking without `unsafe`, and fails like `reserve` if it ever did not.
        if self.rest.len() < full * 8 {
            return Err(buffer_full());
        }
        self.reserve(bits)?;
        // Whole words: each lands at the same offset in the scratch, so each output
        // word is the carry of the one before and the low bits of this one, stored
        // straight into the buffer.
        let used = self.scratch_bits;
        let (dst, after) = core::mem::take(&mut self.rest).split_at_mut(full * 8);
        let mut carry = self.scratch;
        for (dst, word) in dst.as_chunks_mut::<8>().0.iter_mut().zip(words) {
            let word = u64::from_le_bytes(*word);
            *dst = (carry | word << used).to_le_bytes();
            // `word >> (64 - used)`, written so that `used == 0` gives 0.
            carry = (word >> 1) >> (63 - used);
        }
        self.scratch = carry;
        self.rest = after;
        let rest = (bits % 64) as u32;
        if rest > 0 {
            let word = match words.get(full) {
                Some(word) => u64::from_le_bytes(*word),
                // Fewer than 8 bytes left, holding the last `rest` bits.
                None => tail.iter().rev().fold(0, |v, &b| v << 8 | u64::from(b)),
            };
            self.put(word & (u64::MAX >> (64 - rest)), rest);
        }
        Ok(())
    }

    /// Appends a whole 64-bit word, for the word packer ([`Packed`]):
    /// every one of its 64 bits is sent. Only the room is checked (a word has no bits
    /// above its width); without room it fails with [`ErrorKind::BufferFull`] and writes
    /// nothing.
    #[inline(always)]
    pub(super) fn put_word(&mut self, word: u64) -> Result<(), StreamError> {
        self.reserve(64)?;
        self.put(word, 64);
        Ok(())
    }

    /// Appends the low `bits` bits (1..=63) of `word`, which has no bits above them, for
    /// the word packer's last, partial word. Only the room is checked, as in
    /// [`WriteStream::put_word`].
    #[inline(always)]
    pub(super) fn put_low(&mut self, word: u64, bits: u32) -> Result<(), StreamError> {
        self.reserve(bits as usize)?;
        self.put(word, bits);
        Ok(())
    }

    /// Charges `bits` to the buffer, or fails with nothing written.
    #[inline(always)]
    fn reserve(&mut self, bits: usize) -> Result<(), StreamError> {
        if bits > self.remaining {
            return Err(buffer_full());
        }
        self.remaining -= bits;
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn buffer_full() -> StreamError {
    StreamError::new(ErrorKind::BufferFull)
}

#[cold]
#[inline(never)]
fn bits_error(value: u64, bits: u32, remaining: usize) -> StreamError {
    if (1..=64).contains(&bits) && (value >> (bits - 1)) >> 1 != 0 {
        StreamError::new(ErrorKind::OutOfRange)
    } else if bits as usize > remaining {
        StreamError::new(ErrorKind::BufferFull)
    } else {
        // bits == 0 or bits > 64: a programming error the derive never makes.
        StreamError::new(ErrorKind::OutOfRange)
    }
}

impl Stream for WriteStream<'_> {
    type Error = StreamError;
    const IS_WRITING: bool = true;
    const IS_READING: bool = false;

    /// The fast path: with room for `M::MAX_BITS`, the message's serialize function runs
    /// on a word packer around this writer (one capacity check per 64-bit word instead
    /// of per field); otherwise on the writer itself, whose per-field checks then name
    /// the field that does not fit. Same bytes, errors and position either way.
    #[inline(always)]
    fn serialize_message<M: NetMessage, P: Place<M>>(
        &mut self,
        message: P,
    ) -> Result<(), StreamError> {
        write_message(message, self)
    }

    /// The fast path of [`Stream::serialize_message`] for a delta form: with room for
    /// `T::DELTA_MAX_BITS` the delta function runs on a word packer around this writer.
    /// Same bytes, errors and position as the writer alone.
    #[inline(always)]
    fn serialize_delta<T: NetDelta, P: Place<T>>(
        &mut self,
        value: P,
        base: &T,
    ) -> Result<(), StreamError> {
        write_delta(value, base, self)
    }

    /// Writes the low `bits` bits of `value`. A value with bits set above them fails
    /// with [`ErrorKind::OutOfRange`] (it is never truncated into some other value), as
    /// does a width outside `1..=64`.
    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        let v = *value;
        // One branch for the three checks: room left, 1 <= bits <= 64, no bits above
        // `bits` (the double shift is defined for 64).
        let wide = (v >> (bits.wrapping_sub(1) & 63)) >> 1;
        if (bits.wrapping_sub(1) >= 64) | (bits as usize > self.remaining) | (wide != 0) {
            return Err(bits_error(v, bits, self.remaining));
        }
        self.remaining -= bits as usize;
        self.put(v, bits);
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), StreamError> {
        // Flushed bytes are whole, so the bit position mod 8 is the scratch's.
        let pad = self.scratch_bits.wrapping_neg() & 7;
        if pad > 0 {
            self.reserve(pad as usize)?;
            self.put(0, pad);
        }
        Ok(())
    }

    /// Writes the bytes; `&[u8]` is enough.
    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), StreamError> {
        let bytes = bytes.get();
        self.serialize_align()?;
        self.reserve(bytes.len().saturating_mul(8))?;
        let mut rest = bytes;
        // Byte-aligned now: top up the scratch word with one write of the bytes it has
        // room for (then it is flushed, or the bytes are all in it), then copy the rest
        // directly (the scratch is empty, so the buffer is exactly up to date).
        if self.scratch_bits != 0 {
            let room = ((64 - self.scratch_bits) / 8) as usize;
            let n = room.min(rest.len());
            if n == 0 {
                return Ok(());
            }
            let (head, tail) = rest.split_at(n);
            let word = match rest.first_chunk::<8>() {
                // n <= 7: keep the low n bytes.
                Some(chunk) => u64::from_le_bytes(*chunk) & (u64::MAX >> (64 - 8 * n)),
                None => head
                    .iter()
                    .rev()
                    .fold(0, |word, &b| word << 8 | u64::from(b)),
            };
            self.put(word, 8 * n as u32);
            rest = tail;
            if self.scratch_bits != 0 {
                return Ok(());
            }
        }
        if let Some((dst, after)) = core::mem::take(&mut self.rest).split_at_mut_checked(rest.len())
        {
            dst.copy_from_slice(rest);
            self.rest = after;
        }
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
        self.flushed() * 8 + self.scratch_bits as usize
    }

    #[inline]
    fn bits_remaining(&self) -> usize {
        self.remaining
    }
}

/// A writer that gathers bits into a 64-bit word and hands the [`WriteStream`] under it
/// whole words, for a message known to fit.
///
/// [`WriteStream`]'s [`Stream::serialize_message`] runs a message's serialize function on one when the writer has room
/// for the type's [`NetMessage::MAX_BITS`]: the capacity check is then made once per word
/// instead of once per field, and since the word starts empty at the message's first bit,
/// the offsets of its fixed-width fields are constants the compiler folds (nested types
/// inline into the same word). Values are checked exactly as the writer checks them, so a
/// value out of its range fails with the same error, naming the same field, and the bytes
/// are the same (bits go least-significant first, so how they are grouped into words does
/// not show on the wire).
#[derive(Debug)]
pub(crate) struct Packed<'s, 'a> {
    inner: &'s mut WriteStream<'a>,
    /// Bits gathered, in the low `bits` bits (`bits <= 63`): a word is handed over as
    /// soon as its 64 bits are full, the bits of the value that filled it starting the
    /// next one.
    word: u64,
    bits: u32,
}

impl<'s, 'a> Packed<'s, 'a> {
    /// A packer in front of `inner`, which must have room for everything written through
    /// it (writing past its room fails with [`ErrorKind::BufferFull`] when a word is
    /// handed over, not at the field that overflowed).
    #[inline(always)]
    pub(crate) fn new(inner: &'s mut WriteStream<'a>) -> Self {
        Self {
            inner,
            word: 0,
            bits: 0,
        }
    }

    /// Hands the bits gathered so far to the writer.
    #[inline(always)]
    pub(crate) fn flush(&mut self) -> Result<(), StreamError> {
        if self.bits > 0 {
            let word = self.word;
            let bits = self.bits;
            self.word = 0;
            self.bits = 0;
            self.inner.put_low(word, bits)?;
        }
        Ok(())
    }
}

impl Stream for Packed<'_, '_> {
    type Error = StreamError;
    const IS_WRITING: bool = true;
    const IS_READING: bool = false;

    /// As [`WriteStream`]: a value with bits set above `bits`, or a width outside
    /// `1..=64`, fails with [`ErrorKind::OutOfRange`].
    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        let v = *value;
        let wide = (v >> (bits.wrapping_sub(1) & 63)) >> 1;
        if (bits.wrapping_sub(1) >= 64) | (wide != 0) {
            return Err(out_of_range());
        }
        // Filled to exactly 64 bits, so that only whole words go to the writer (one
        // store each, no checks of the value): the value's bits that do not fit start
        // the next word. While the offsets are constants (a message's fixed-width
        // fields), so is which field fills a word.
        let used = self.bits & 63;
        self.word |= v << used;
        let total = used + bits;
        if total < 64 {
            self.bits = total;
            return Ok(());
        }
        if let Err(err) = self.inner.put_word(self.word) {
            // Nothing of the word went out: the value is dropped from it, the bits before
            // it stay, to be flushed (as far as there is room) like the plain writer's.
            self.word &= !(u64::MAX << used);
            return Err(err);
        }
        // `v >> (64 - used)`, written so that `used == 0` gives 0, not an overflow.
        self.word = (v >> 1) >> (63 - used);
        self.bits = total - 64;
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), StreamError> {
        self.flush()?;
        self.inner.serialize_align()
    }

    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), StreamError> {
        self.flush()?;
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
        self.inner.bits_processed() + self.bits as usize
    }

    #[inline]
    fn bits_remaining(&self) -> usize {
        self.inner
            .bits_remaining()
            .saturating_sub(self.bits as usize)
    }
}

/// Writes `message` into `stream`: the write fast path, behind
/// [`WriteStream`]'s [`Stream::serialize_message`] (so behind [`NetMessage::write`] and
/// [`NetMessage::serialize`] on a writer, which the codec, the channel layer and
/// [`Encoded`](crate::channel::Encoded) call).
///
/// With room for `M::MAX_BITS` the message's serialize function runs on a [`Packed`]
/// writer, otherwise on `stream` itself (whose per-field capacity checks then name the
/// field that does not fit). Both write the same bits and fail with the same errors.
/// The function is run with `serialize_in`, never through `serialize_message` again:
/// the dispatch happens once per message, not per nested value.
#[inline(always)]
pub(crate) fn write_message<M: NetMessage, P: Place<M>>(
    message: P,
    stream: &mut WriteStream<'_>,
) -> Result<(), StreamError> {
    packed_or_plain(
        stream,
        M::MAX_BITS,
        message,
        |m, s| M::serialize_in(m, s),
        |m, s| M::serialize_in(m, s),
    )
}

/// Writes `value`'s delta form against `base` into `stream`: the same fast path as
/// [`write_message`] for [`NetDelta::serialize_delta_in`], with room for
/// `T::DELTA_MAX_BITS` (behind [`WriteStream`]'s [`Stream::serialize_delta`], so behind
/// [`NetDelta::write_delta`] and each entity of an [`Entities`](crate::delta::Entities)
/// delta written on a writer without room for the whole collection's bound).
#[inline(always)]
pub(crate) fn write_delta<T: NetDelta, P: Place<T>>(
    value: P,
    base: &T,
    stream: &mut WriteStream<'_>,
) -> Result<(), StreamError> {
    packed_or_plain(
        stream,
        T::DELTA_MAX_BITS,
        value,
        |v, s| T::serialize_delta_in(v, base, s),
        |v, s| T::serialize_delta_in(v, base, s),
    )
}

/// Runs `packed` on a [`Packed`] writer around `stream` when `stream` has room for
/// `max_bits`, else `plain` on `stream`: the two are the same serialize function, so
/// they write the same bits and fail with the same errors.
#[inline(always)]
fn packed_or_plain<X>(
    stream: &mut WriteStream<'_>,
    max_bits: usize,
    value: X,
    packed: impl FnOnce(X, &mut Packed<'_, '_>) -> Result<(), StreamError>,
    plain: impl FnOnce(X, &mut WriteStream<'_>) -> Result<(), StreamError>,
) -> Result<(), StreamError> {
    if stream.bits_remaining() >= max_bits {
        let mut words = Packed::new(stream);
        return match packed(value, &mut words) {
            Ok(()) => words.flush(),
            Err(err) => {
                // What was gathered before a failure goes out too: the writer is left
                // exactly as the plain path leaves it. The failure is the one reported.
                let _ = words.flush();
                Err(err)
            }
        };
    }
    plain(value, stream)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::model::{Rng, pack};
    use super::*;

    #[test]
    fn every_width_at_every_offset_matches_the_bit_model() {
        let mut rng = Rng(1);
        for offset in 0..=64u32 {
            for bits in 1..=64u32 {
                let mut chunks = Vec::new();
                if offset > 0 {
                    chunks.push((rng.bits(offset), offset));
                }
                chunks.push((rng.bits(bits), bits));
                chunks.push((0x5A, 7));
                let mut buf = [0xEEu8; 32];
                let mut w = WriteStream::new(&mut buf);
                for &(v, n) in &chunks {
                    w.serialize_bits(&mut v.clone(), n).unwrap();
                }
                let len = w.finish();
                let want = pack(&chunks);
                assert_eq!(&buf[..len], &want[..], "offset {offset} bits {bits}");
                assert!(buf[len..].iter().all(|&b| b == 0xEE), "wrote past the end");
            }
        }
    }

    #[test]
    fn an_appended_bit_string_is_its_bits_at_every_offset_and_length() {
        let mut rng = Rng(3);
        for offset in 0..=64u32 {
            for bits in [0usize, 1, 7, 8, 63, 64, 65, 127, 128, 129, 200, 255] {
                // The string: its bits as chunks of at most 64, packed by a writer.
                let mut string = Vec::new();
                let mut left = bits;
                while left > 0 {
                    let n = left.min(1 + rng.below(64) as usize) as u32;
                    string.push((rng.bits(n), n));
                    left -= n as usize;
                }
                let mut bytes = vec![0u8; bits.div_ceil(8) + 8];
                let mut w = WriteStream::new(&mut bytes);
                for &(v, n) in &string {
                    w.serialize_bits(&mut v.clone(), n).unwrap();
                }
                let len = w.finish();
                bytes.truncate(len);
                // Appended after `offset` bits, then a marker.
                let mut chunks = Vec::new();
                if offset > 0 {
                    chunks.push((rng.bits(offset), offset));
                }
                let mut buf = [0xEEu8; 64];
                let mut w = WriteStream::new(&mut buf);
                for &(v, n) in &chunks {
                    w.serialize_bits(&mut v.clone(), n).unwrap();
                }
                w.append_bits(&bytes, bits).unwrap();
                w.serialize_bits(&mut 0x5A, 7).unwrap();
                let len = w.finish();
                chunks.extend(string);
                chunks.push((0x5A, 7));
                assert_eq!(
                    &buf[..len],
                    &pack(&chunks)[..],
                    "offset {offset} bits {bits}"
                );
                assert!(buf[len..].iter().all(|&b| b == 0xEE), "wrote past the end");
            }
        }
    }

    #[test]
    fn an_appended_bit_string_that_does_not_fit_writes_nothing() {
        let bytes = [0xFFu8; 16];
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        w.serialize_bits(&mut 1, 1).unwrap();
        let full = w.append_bits(&bytes, 64).unwrap_err();
        assert_eq!(full.kind(), ErrorKind::BufferFull);
        assert_eq!((w.bits_processed(), w.bits_remaining()), (1, 63));
        let short = w.append_bits(&bytes[..1], 9).unwrap_err();
        assert_eq!(
            short.kind(),
            ErrorKind::OutOfRange,
            "more bits than the bytes hold"
        );
        assert_eq!(w.bits_processed(), 1);
        w.append_bits(&bytes, 63).unwrap();
        assert_eq!(w.finish(), 8);
        assert_eq!(buf, [0xFF; 8]);
        // Whole words into a buffer that ends with the string's last bit.
        let string: Vec<u8> = (0..16).map(|i| (0x11 * i as u8) ^ 0xA5).collect();
        for offset in 0..16u32 {
            let mut exact = vec![0u8; (offset as usize + 128).div_ceil(8)];
            let mut w = WriteStream::new(&mut exact);
            if offset > 0 {
                w.serialize_bits(&mut 0, offset).unwrap();
            }
            w.append_bits(&string, 128).unwrap();
            assert_eq!(w.bits_remaining(), exact_slack(offset));
            w.finish();
            let word = |i: usize| u64::from_le_bytes(string[i * 8..i * 8 + 8].try_into().unwrap());
            let chunks = [(0, offset), (word(0), 64), (word(1), 64)];
            let want = pack(&chunks[usize::from(offset == 0)..]);
            assert_eq!(exact, want, "offset {offset}");
        }
    }

    /// The bits left in a buffer of whole bytes after `offset + 128` bits.
    fn exact_slack(offset: u32) -> usize {
        (offset as usize + 128).div_ceil(8) * 8 - (offset as usize + 128)
    }

    #[test]
    fn fills_any_buffer_exactly_and_never_writes_past_it() {
        let mut rng = Rng(2);
        for len in 0..=40usize {
            for _ in 0..50 {
                let mut backing = vec![0xC3u8; len + 16];
                let (buf, guard) = backing.split_at_mut(len);
                let mut w = WriteStream::new(buf);
                let mut chunks = Vec::new();
                loop {
                    let bits = 1 + rng.below(64) as u32;
                    let v = rng.bits(bits);
                    let before = (w.bits_processed(), w.bits_remaining());
                    match w.serialize_bits(&mut v.clone(), bits) {
                        Ok(()) => chunks.push((v, bits)),
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::BufferFull);
                            assert!(bits as usize > before.1);
                            assert_eq!((w.bits_processed(), w.bits_remaining()), before);
                            // Whatever still fits goes in, to the last bit.
                            if before.1 > 0 {
                                let n = before.1 as u32;
                                let v = rng.bits(n);
                                w.serialize_bits(&mut v.clone(), n).unwrap();
                                chunks.push((v, n));
                            }
                            assert_eq!(w.bits_remaining(), 0);
                            let mut one = 0;
                            let full = w.serialize_bits(&mut one, 1).unwrap_err();
                            assert_eq!(full.kind(), ErrorKind::BufferFull);
                            break;
                        }
                    }
                }
                assert_eq!(w.bits_processed(), len * 8);
                let written = w.finish();
                assert_eq!(written, len);
                assert_eq!(&*buf, &pack(&chunks)[..]);
                assert!(guard.iter().all(|&b| b == 0xC3));
            }
        }
    }

    #[test]
    fn a_value_wider_than_its_bits_is_rejected_not_truncated() {
        let mut buf = [0u8; 16];
        let mut w = WriteStream::new(&mut buf);
        w.serialize_bits(&mut 1, 3).unwrap();
        for (value, bits) in [(8u64, 3u32), (1 << 32, 32), (u64::MAX, 63), (2, 1)] {
            let err = w.serialize_bits(&mut value.clone(), bits).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::OutOfRange, "{value:#x} in {bits}");
        }
        // Widths outside 1..=64 are programming errors: rejected in every build.
        assert_eq!(
            w.serialize_bits(&mut 0, 0).unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
        assert_eq!(
            w.serialize_bits(&mut 0, 65).unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
        // Too wide beats too big: the value is wrong whatever the room left.
        let mut tiny = [0u8; 1];
        let mut t = WriteStream::new(&mut tiny);
        let err = t.serialize_bits(&mut (1 << 20), 20).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutOfRange);
        // Nothing was written by the failures.
        assert_eq!(w.bits_processed(), 3);
        w.serialize_bits(&mut { u64::MAX }, 64).unwrap();
        assert_eq!(w.bits_processed(), 67);
    }

    #[test]
    fn output_does_not_depend_on_the_buffer_contents() {
        let mut rng = Rng(3);
        let chunks: Vec<(u64, u32)> = (0..40)
            .map(|_| {
                let bits = 1 + rng.below(64) as u32;
                (rng.bits(bits), bits)
            })
            .collect();
        let mut outs = Vec::new();
        for fill in [0x00u8, 0xFF, 0xA5] {
            let mut buf = [fill; 400];
            let mut w = WriteStream::new(&mut buf);
            for &(v, n) in &chunks {
                w.serialize_bits(&mut v.clone(), n).unwrap();
                w.serialize_align().unwrap();
                w.serialize_bytes(&[0x00u8, 0xFF, 0x12][..]).unwrap();
            }
            let len = w.finish();
            outs.push(buf[..len].to_vec());
        }
        assert_eq!(outs[0], outs[1]);
        assert_eq!(outs[0], outs[2]);
    }

    #[test]
    fn bytes_at_every_offset_and_length() {
        for offset in 0..=72u32 {
            for n in 0..=20usize {
                let data: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37) ^ 0x81).collect();
                let mut buf = [0xEEu8; 64];
                let mut w = WriteStream::new(&mut buf);
                let mut chunks = Vec::new();
                let mut left = offset;
                while left > 0 {
                    let bits = left.min(64);
                    w.serialize_bits(&mut (u64::MAX >> (64 - bits)), bits)
                        .unwrap();
                    chunks.push((u64::MAX >> (64 - bits), bits));
                    left -= bits;
                }
                w.serialize_bytes(&data[..]).unwrap();
                w.serialize_bits(&mut 5, 3).unwrap();
                let pad = (8 - offset % 8) % 8;
                if pad > 0 {
                    chunks.push((0, pad));
                }
                chunks.extend(data.iter().map(|&b| (u64::from(b), 8)));
                chunks.push((5, 3));
                let len = w.finish();
                assert_eq!(&buf[..len], &pack(&chunks)[..], "offset {offset} n {n}");
                assert!(buf[len..].iter().all(|&b| b == 0xEE));
            }
        }
    }

    #[test]
    fn byte_runs_and_aligns_respect_the_buffer_end() {
        for len in 0..=12usize {
            for offset in 0..=8u32 {
                for n in 0..=12usize {
                    let mut backing = vec![0x77u8; len + 8];
                    let (buf, guard) = backing.split_at_mut(len);
                    let mut w = WriteStream::new(buf);
                    let fits_offset = offset as usize <= len * 8;
                    if offset > 0 {
                        let r = w.serialize_bits(&mut 0, offset);
                        assert_eq!(r.is_ok(), fits_offset);
                        if !fits_offset {
                            continue;
                        }
                    }
                    let aligned = (offset as usize).div_ceil(8);
                    let r = w.serialize_bytes(&vec![0xABu8; n][..]);
                    assert_eq!(
                        r.is_ok(),
                        aligned + n <= len,
                        "len {len} offset {offset} n {n}"
                    );
                    if let Err(e) = r {
                        assert_eq!(e.kind(), ErrorKind::BufferFull);
                    }
                    let _ = w.finish();
                    assert!(guard.iter().all(|&b| b == 0x77));
                }
            }
        }
    }

    #[test]
    fn bytes_written_and_bits_processed_track_the_position() {
        let mut buf = [0u8; 32];
        let mut w = WriteStream::new(&mut buf);
        assert_eq!(
            (w.bits_processed(), w.bytes_written(), w.bits_remaining()),
            (0, 0, 256)
        );
        w.serialize_bits(&mut 1, 1).unwrap();
        assert_eq!((w.bits_processed(), w.bytes_written()), (1, 1));
        w.serialize_bits(&mut 0, 63).unwrap();
        assert_eq!((w.bits_processed(), w.bytes_written()), (64, 8));
        w.serialize_align().unwrap();
        assert_eq!(w.bits_processed(), 64, "align at a boundary writes nothing");
        w.serialize_bits(&mut 0, 9).unwrap();
        w.serialize_align().unwrap();
        assert_eq!((w.bits_processed(), w.bytes_written()), (80, 10));
        assert_eq!(w.finish(), 10);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod packer_tests {
    use super::super::model::Rng;
    use super::*;

    /// Random runs of bits, aligns and byte runs: the packer and the writer give the same
    /// bytes and the same position, at every starting offset.
    #[test]
    fn packed_writes_what_the_writer_writes() {
        let mut rng = Rng(31);
        for round in 0..2000 {
            let offset = (round % 70) as u32;
            let ops: Vec<(u32, u64)> = (0..rng.below(30))
                .map(|_| match rng.below(10) {
                    0 => (0, 0),
                    1 => (100, rng.below(12)),
                    _ => {
                        let bits = 1 + rng.below(64) as u32;
                        (bits, rng.bits(bits))
                    }
                })
                .collect();
            let run = |packed: bool| {
                let mut buf = [0xA5u8; 512];
                let mut w = WriteStream::new(&mut buf);
                let mut left = offset;
                while left > 0 {
                    let n = left.min(64);
                    w.serialize_bits(&mut 1, n).unwrap();
                    left -= n;
                }
                let data = [0x3Cu8; 12];
                let go = |s: &mut dyn FnMut(u32, u64)| {
                    for &(bits, value) in &ops {
                        s(bits, value);
                    }
                };
                if packed {
                    let mut p = Packed::new(&mut w);
                    go(&mut |bits, value| match bits {
                        0 => p.serialize_align().unwrap(),
                        100 => p.serialize_bytes(&data[..value as usize]).unwrap(),
                        _ => p.serialize_bits(&mut { value }, bits).unwrap(),
                    });
                    p.flush().unwrap();
                } else {
                    go(&mut |bits, value| match bits {
                        0 => w.serialize_align().unwrap(),
                        100 => w.serialize_bytes(&data[..value as usize]).unwrap(),
                        _ => w.serialize_bits(&mut { value }, bits).unwrap(),
                    });
                }
                let bits = w.bits_processed();
                let len = w.finish();
                (bits, buf[..len].to_vec())
            };
            assert_eq!(run(true), run(false), "round {round}");
        }
    }

    #[test]
    fn packed_rejects_what_the_writer_rejects() {
        let mut buf = [0u8; 32];
        let mut w = WriteStream::new(&mut buf);
        let mut p = Packed::new(&mut w);
        for (value, bits) in [
            (8u64, 3u32),
            (1 << 32, 32),
            (u64::MAX, 63),
            (2, 1),
            (0, 0),
            (0, 65),
        ] {
            let err = p.serialize_bits(&mut { value }, bits).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::OutOfRange, "{value:#x} in {bits}");
        }
        assert_eq!(p.bits_processed(), 0);
        p.serialize_bits(&mut 5, 3).unwrap();
        assert_eq!((p.bits_processed(), p.bits_remaining()), (3, 253));
        p.flush().unwrap();
        assert_eq!(w.bits_processed(), 3);
    }

    /// Past the writer's room (a `MAX_BITS` too small), the value that fills a word
    /// fails with `BufferFull`, and the bits before it are still flushed: the writer ends
    /// where the plain writer does.
    #[test]
    fn packed_past_its_room_fails_when_a_word_is_handed_over() {
        let mut buf = [0u8; 9];
        let mut w = WriteStream::new(&mut buf);
        let mut p = Packed::new(&mut w);
        p.serialize_bits(&mut 0x12_3456_789A, 40).unwrap();
        p.serialize_bits(&mut 0x2AAA_AAAA, 30).unwrap();
        assert_eq!((p.bits_processed(), p.bits_remaining()), (70, 2));
        let err = p.serialize_bits(&mut (u64::MAX >> 4), 60).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BufferFull);
        assert_eq!(p.bits_processed(), 70);
        p.flush().unwrap();
        let len = w.finish();
        let mut plain_buf = [0u8; 9];
        let mut plain = WriteStream::new(&mut plain_buf);
        plain.serialize_bits(&mut 0x12_3456_789A, 40).unwrap();
        plain.serialize_bits(&mut 0x2AAA_AAAA, 30).unwrap();
        let err = plain.serialize_bits(&mut (u64::MAX >> 4), 60).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BufferFull);
        assert_eq!(plain.bits_processed(), 70);
        assert_eq!(len, plain.finish());
        assert_eq!(buf, plain_buf);
    }
}
