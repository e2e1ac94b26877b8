//! The fast paths, derived mechanically: the one serialize function run on a [`Packed`]
//! writer instead of the [`WriteStream`] itself, or on a [`PackedRead`] reader instead of
//! the [`ReadStream`].

use super::{Place, ReadStream, Stream, WriteStream};
use crate::delta::NetDelta;
use crate::error::{ErrorKind, StreamError};
use crate::message::NetMessage;

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

#[cold]
#[inline(never)]
fn out_of_range() -> StreamError {
    StreamError::new(ErrorKind::OutOfRange)
}

#[cold]
#[inline(never)]
fn past_end() -> StreamError {
    StreamError::new(ErrorKind::PastEnd)
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
