//! The writer: packs bits into a caller's buffer through a 64-bit scratch register.

use super::Stream;
use crate::error::{Error, ErrorKind};

/// Writes bits into a caller-provided byte buffer.
///
/// Bits accumulate in a 64-bit scratch register and leave it 32 at a time as
/// little-endian words; [`WriteStream::finish`] flushes the tail and returns the number
/// of bytes written (`ceil(bits / 8)`, the last byte zero-padded). Any buffer length
/// works; writing past its end fails with [`ErrorKind::BufferFull`].
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
    buf: &'a mut [u8],
    scratch: u64,
    scratch_bits: u32,
    /// Byte offset where the next flushed word goes.
    flushed: usize,
    bits_written: usize,
    capacity_bits: usize,
}

impl<'a> WriteStream<'a> {
    /// A writer that fills `buf` from its start.
    pub fn new(buf: &'a mut [u8]) -> Self {
        let capacity_bits = buf.len().saturating_mul(8);
        Self { buf, scratch: 0, scratch_bits: 0, flushed: 0, bits_written: 0, capacity_bits }
    }

    /// Flushes the scratch register and returns the bytes written, `ceil(bits / 8)`.
    pub fn finish(mut self) -> usize {
        self.flush_tail();
        self.bits_written.div_ceil(8)
    }

    /// Bytes written so far, counting a partial last byte.
    pub fn bytes_written(&self) -> usize {
        self.bits_written.div_ceil(8)
    }

    #[inline(always)]
    fn put(&mut self, value: u64, bits: u32) {
        debug_assert!(bits <= 32 && (bits == 64 || value >> bits == 0));
        self.scratch |= value << self.scratch_bits;
        self.scratch_bits += bits;
        if self.scratch_bits >= 32 {
            let at = self.flushed;
            // In bounds: the caller checked bits_written against the capacity, and a
            // whole word is flushed only once all of its bits are written.
            if let Some(dst) = self.buf.get_mut(at..at + 4) {
                dst.copy_from_slice(&(self.scratch as u32).to_le_bytes());
            }
            self.flushed += 4;
            self.scratch >>= 32;
            self.scratch_bits -= 32;
        }
    }

    fn flush_tail(&mut self) {
        let tail = self.scratch_bits.div_ceil(8) as usize;
        let bytes = self.scratch.to_le_bytes();
        if let Some(dst) = self.buf.get_mut(self.flushed..self.flushed + tail) {
            dst.copy_from_slice(&bytes[..tail]);
        }
    }

    #[inline(always)]
    fn reserve(&mut self, bits: usize) -> Result<(), Error> {
        if bits > self.capacity_bits - self.bits_written {
            return Err(Error::new(ErrorKind::BufferFull));
        }
        self.bits_written += bits;
        Ok(())
    }
}

impl Stream for WriteStream<'_> {
    type Error = Error;
    const IS_WRITING: bool = true;
    const IS_READING: bool = false;

    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), Error> {
        debug_assert!((1..=64).contains(&bits));
        debug_assert!(bits == 64 || *value >> bits == 0, "value wider than {bits} bits");
        self.reserve(bits as usize)?;
        if bits <= 32 {
            self.put(*value, bits);
        } else {
            self.put(*value & 0xFFFF_FFFF, 32);
            self.put(*value >> 32, bits - 32);
        }
        Ok(())
    }

    fn serialize_align(&mut self) -> Result<(), Error> {
        let pad = (8 - self.bits_written % 8) % 8;
        if pad > 0 {
            self.reserve(pad)?;
            self.put(0, pad as u32);
        }
        Ok(())
    }

    fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), Error> {
        self.write_bytes(bytes)
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.serialize_align()?;
        self.reserve(bytes.len().saturating_mul(8))?;
        let mut rest = bytes;
        // Byte-aligned now: top up the scratch word, then copy whole bytes directly.
        while self.scratch_bits != 0 {
            let Some((&b, tail)) = rest.split_first() else { return Ok(()) };
            self.put(u64::from(b), 8);
            rest = tail;
        }
        let words = rest.len() / 4 * 4;
        if let Some(dst) = self.buf.get_mut(self.flushed..self.flushed + words) {
            dst.copy_from_slice(&rest[..words]);
        }
        self.flushed += words;
        for &b in &rest[words..] {
            self.put(u64::from(b), 8);
        }
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

    fn bits_processed(&self) -> usize {
        self.bits_written
    }

    fn bits_remaining(&self) -> usize {
        self.capacity_bits - self.bits_written
    }
}
