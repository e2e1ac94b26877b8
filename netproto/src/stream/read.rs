//! The reader: unpacks and validates bits from a byte slice through a scratch register.

use super::Stream;
use crate::error::{Error, ErrorKind};

/// Reads bits from a byte slice, validating everything it reads.
///
/// The limit is `bytes.len() * 8` bits: the zero padding of the last byte can be read,
/// anything beyond fails with [`ErrorKind::PastEnd`]. Reads never index out of bounds and
/// never panic, whatever the input.
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
    scratch: u64,
    scratch_bits: u32,
    /// Byte offset of the next word to load into the scratch register.
    loaded: usize,
    bits_read: usize,
    total_bits: usize,
}

impl<'a> ReadStream<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            scratch: 0,
            scratch_bits: 0,
            loaded: 0,
            bits_read: 0,
            total_bits: buf.len().saturating_mul(8),
        }
    }

    /// Bytes consumed so far, counting a partial last byte.
    pub fn bytes_read(&self) -> usize {
        self.bits_read.div_ceil(8)
    }

    #[inline(always)]
    fn take(&mut self, bits: u32) -> u64 {
        debug_assert!(bits <= 32);
        if self.scratch_bits < bits {
            let word = match self.buf.get(self.loaded..self.loaded + 4) {
                Some(w) => u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
                None => {
                    let mut w = [0u8; 4];
                    let rest = self.buf.get(self.loaded..).unwrap_or(&[]);
                    w[..rest.len().min(4)].copy_from_slice(&rest[..rest.len().min(4)]);
                    u32::from_le_bytes(w)
                }
            };
            self.scratch |= u64::from(word) << self.scratch_bits;
            self.scratch_bits += 32;
            self.loaded += 4;
        }
        let value = self.scratch & ((1u64 << bits) - 1);
        self.scratch >>= bits;
        self.scratch_bits -= bits;
        value
    }

    #[inline(always)]
    fn reserve(&mut self, bits: usize) -> Result<(), Error> {
        if bits > self.total_bits - self.bits_read {
            return Err(Error::new(ErrorKind::PastEnd));
        }
        self.bits_read += bits;
        Ok(())
    }
}

impl Stream for ReadStream<'_> {
    type Error = Error;
    const IS_WRITING: bool = false;
    const IS_READING: bool = true;

    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), Error> {
        debug_assert!((1..=64).contains(&bits));
        self.reserve(bits as usize)?;
        *value = if bits <= 32 {
            self.take(bits)
        } else {
            let low = self.take(32);
            low | self.take(bits - 32) << 32
        };
        Ok(())
    }

    fn serialize_align(&mut self) -> Result<(), Error> {
        let pad = (8 - self.bits_read % 8) % 8;
        if pad > 0 {
            self.reserve(pad)?;
            if self.take(pad as u32) != 0 {
                return Err(Error::new(ErrorKind::NonZeroPadding));
            }
        }
        Ok(())
    }

    fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), Error> {
        self.serialize_align()?;
        self.reserve(bytes.len().saturating_mul(8))?;
        let mut rest = &mut bytes[..];
        // Byte-aligned: drain whole bytes from the scratch word, then copy directly.
        while self.scratch_bits != 0 {
            let Some((b, tail)) = rest.split_first_mut() else { return Ok(()) };
            *b = self.take(8) as u8;
            rest = tail;
        }
        let n = rest.len();
        if let Some(src) = self.buf.get(self.loaded..self.loaded + n) {
            rest.copy_from_slice(src);
        }
        // Keep the load position word-granular: the next load starts where we stopped.
        self.loaded += n;
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

    fn bits_processed(&self) -> usize {
        self.bits_read
    }

    fn bits_remaining(&self) -> usize {
        self.total_bits - self.bits_read
    }
}
