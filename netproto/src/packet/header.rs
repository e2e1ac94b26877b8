//! The packet header of `reliable`: sequence, ack and ack bits in 4 to 9 bytes.

use crate::sequence::Sequence;
use core::fmt;
use core::ops::Deref;

/// The largest encoded packet header: prefix, sequence, 16-bit ack, 4 ack-bits bytes.
pub const MAX_HEADER_BYTES: usize = 9;

/// The smallest encoded packet header: prefix, sequence, one-byte ack difference.
#[cfg(any(test, feature = "internals"))] // used by tests only
pub const MIN_HEADER_BYTES: usize = 4;

/// Prefix bit 5: the ack is sent as the one-byte difference `sequence - ack`.
const ACK_DIFF_FLAG: u8 = 1 << 5;

/// Why a packet header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The datagram ended before the header did (`needed` bytes, `got` bytes).
    #[error("packet header truncated: needs {needed} bytes, got {got}")]
    Truncated {
        /// Bytes the prefix byte announced (or the minimum readable so far).
        needed: usize,
        /// Bytes available.
        got: usize,
    },
    /// Bit 0 of the prefix byte is set: this is a fragment, not a regular packet.
    #[error("prefix byte {0:#04x} is not a regular packet")]
    NotRegular(u8),
    /// The header decodes, but is not the unique canonical encoding of its fields
    /// (only checked by the canonical decoder the conformance tests use).
    #[error("packet header is not in canonical form")]
    NonCanonical,
}

/// The header in front of every packet: the packet's sequence number and the acks of
/// the packets most recently received from the peer.
///
/// `ack` is the newest sequence received from the peer; bit `n` of `ack_bits` is set
/// when packet `ack - n` was received (bit 0 is `ack` itself).
///
/// Wire format (byte-identical with `reliable_write_packet_header`): a prefix byte
/// (bit 0 clear; bit `k + 1` set when ack-bits byte `k` is not 0xFF; bit 5 set when
/// `sequence - ack` mod 65536 is at most 255), the sequence as u16 LE, then either
/// that one-byte difference or the ack as u16 LE, then the ack-bits bytes that are not
/// 0xFF, low byte first.
///
/// ```
/// use netproto::packet::Sequence;
/// use netproto::internals::packet::PacketHeader;
///
/// // A fresh endpoint's first packet: ack 65535, nothing received.
/// let header = PacketHeader { sequence: Sequence(0), ack: Sequence(65535), ack_bits: 0 };
/// let bytes = header.encode();
/// assert_eq!(&bytes[..], &[0x3e, 0x00, 0x00, 0x01, 0, 0, 0, 0]);
/// assert_eq!(PacketHeader::decode(&bytes), Ok((header, 8)));
///
/// // Steady state without loss: every ack bit set, 4 bytes.
/// let header = PacketHeader { sequence: Sequence(200), ack: Sequence(100), ack_bits: !0 };
/// assert_eq!(header.encoded_len(), 4);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    /// The sequence number of this packet.
    pub sequence: Sequence,
    /// The newest sequence received from the peer.
    pub ack: Sequence,
    /// Bit `n` set: the packet `ack - n` was received.
    pub ack_bits: u32,
}

/// An encoded packet header: at most [`MAX_HEADER_BYTES`] bytes, on the stack.
/// Dereferences to the encoded bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeaderBytes {
    buf: [u8; MAX_HEADER_BYTES],
    len: u8,
}

impl HeaderBytes {
    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl Deref for HeaderBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for HeaderBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for HeaderBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HeaderBytes")
            .field(&self.as_bytes())
            .finish()
    }
}

impl PacketHeader {
    /// The number of bytes [`encode`](Self::encode) produces (4 to 9).
    pub fn encoded_len(&self) -> usize {
        let diff = self.sequence.0.wrapping_sub(self.ack.0);
        let ack_len = if diff <= 255 { 1 } else { 2 };
        let present = self
            .ack_bits
            .to_le_bytes()
            .iter()
            .filter(|&&b| b != 0xFF)
            .count();
        3 + ack_len + present
    }

    /// Writes the canonical encoding into the front of `out` and returns its length.
    #[inline]
    pub fn write(&self, out: &mut [u8; MAX_HEADER_BYTES]) -> usize {
        let diff = self.sequence.0.wrapping_sub(self.ack.0);
        let bits = self.ack_bits.to_le_bytes();
        let mut prefix = 0u8;
        for (k, &b) in bits.iter().enumerate() {
            if b != 0xFF {
                prefix |= 1 << (k + 1);
            }
        }
        let seq = self.sequence.0.to_le_bytes();
        out[1] = seq[0];
        out[2] = seq[1];
        let mut len = if let Ok(small) = u8::try_from(diff) {
            prefix |= ACK_DIFF_FLAG;
            out[3] = small;
            4
        } else {
            let ack = self.ack.0.to_le_bytes();
            out[3] = ack[0];
            out[4] = ack[1];
            5
        };
        out[0] = prefix;
        for &b in &bits {
            if b != 0xFF {
                out[len] = b;
                len += 1;
            }
        }
        len
    }

    /// The canonical encoding, on the stack.
    pub fn encode(&self) -> HeaderBytes {
        let mut buf = [0u8; MAX_HEADER_BYTES];
        let len = self.write(&mut buf);
        HeaderBytes {
            buf,
            len: len as u8,
        }
    }

    /// Reads a header from the front of `bytes` and returns it with its length.
    ///
    /// Lenient like `reliable_read_packet_header`: it also accepts a 16-bit ack where
    /// a one-byte difference would do, ack-bits bytes of 0xFF sent explicitly, and
    /// prefix bits 6-7 set. Use [`decode_canonical`](Self::decode_canonical) where
    /// the exact encoding matters.
    ///
    /// ```
    /// use netproto::packet::HeaderError;
    /// use netproto::internals::packet::PacketHeader;
    ///
    /// let bytes = [0x3e, 0x00, 0x00, 0x01, 0, 0, 0, 0];
    /// assert!(PacketHeader::decode(&bytes).is_ok());
    /// assert!(matches!(PacketHeader::decode(&bytes[..7]), Err(HeaderError::Truncated { .. })));
    /// ```
    #[inline]
    pub fn decode(bytes: &[u8]) -> Result<(Self, usize), HeaderError> {
        let truncated = |needed| HeaderError::Truncated {
            needed,
            got: bytes.len(),
        };
        let (&prefix, rest) = bytes.split_first().ok_or(truncated(3))?;
        if prefix & 1 != 0 {
            return Err(HeaderError::NotRegular(prefix));
        }
        let ack_len = if prefix & ACK_DIFF_FLAG != 0 { 1 } else { 2 };
        let present = ((prefix >> 1) & 0x0F).count_ones() as usize;
        let needed = 3 + ack_len + present;
        if bytes.len() < needed {
            return Err(truncated(needed));
        }
        let sequence = Sequence(u16::from_le_bytes([rest[0], rest[1]]));
        let (ack, mut pos) = if ack_len == 1 {
            (sequence.wrapping_sub(u16::from(bytes[3])), 4)
        } else {
            (Sequence(u16::from_le_bytes([bytes[3], bytes[4]])), 5)
        };
        let mut ack_bits = [0xFFu8; 4];
        for (k, b) in ack_bits.iter_mut().enumerate() {
            if prefix & (1 << (k + 1)) != 0 {
                *b = bytes[pos];
                pos += 1;
            }
        }
        let header = Self {
            sequence,
            ack,
            ack_bits: u32::from_le_bytes(ack_bits),
        };
        Ok((header, pos))
    }

    /// Like [`decode`](Self::decode), but refuses any encoding other than the one
    /// [`encode`](Self::encode) produces (this is the rule for the header embedded in
    /// fragment 0: the reassembled packet is re-encoded canonically).
    ///
    /// ```
    /// use netproto::packet::HeaderError;
    /// use netproto::internals::packet::PacketHeader;
    ///
    /// // Sequence 5, ack 4 sent as a 16-bit ack instead of a one-byte difference.
    /// let lenient = [0x00, 0x05, 0x00, 0x04, 0x00];
    /// assert!(PacketHeader::decode(&lenient).is_ok());
    /// assert_eq!(PacketHeader::decode_canonical(&lenient), Err(HeaderError::NonCanonical));
    /// ```
    pub fn decode_canonical(bytes: &[u8]) -> Result<(Self, usize), HeaderError> {
        let (header, len) = Self::decode(bytes)?;
        let canonical = header.encode();
        if canonical.as_bytes() == &bytes[..len] {
            Ok((header, len))
        } else {
            Err(HeaderError::NonCanonical)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A header from raw numbers (for the tests of this module and others).
    pub(crate) fn header(sequence: u16, ack: u16, ack_bits: u32) -> PacketHeader {
        PacketHeader {
            sequence: Sequence(sequence),
            ack: Sequence(ack),
            ack_bits,
        }
    }

    #[test]
    fn reference_unit_cases() {
        // From reliable's own test_packet_header.
        for (h, len) in [
            (header(10000, 100, 0), 9),
            (header(10000, 100, 0xFEFE_FFFE), 1 + 2 + 2 + 3),
            (header(200, 100, 0xFFFE_FFFF), 1 + 2 + 1 + 1),
            (header(200, 100, 0xFFFF_FFFF), 1 + 2 + 1),
        ] {
            let bytes = h.encode();
            assert_eq!(bytes.len(), len);
            assert_eq!(h.encoded_len(), len);
            assert_eq!(PacketHeader::decode(&bytes), Ok((h, len)));
            assert_eq!(PacketHeader::decode_canonical(&bytes), Ok((h, len)));
            for short in 0..len {
                assert!(PacketHeader::decode(&bytes[..short]).is_err());
            }
        }
    }

    #[test]
    fn diff_boundary_255_256() {
        assert_eq!(header(300, 45, !0).encoded_len(), 4);
        assert_eq!(header(300, 44, !0).encoded_len(), 5);
        // Across the wrap: seq 10, ack 65300 is a difference of 246.
        let h = header(10, 65300, !0);
        assert_eq!(&h.encode()[..], &[0x20, 10, 0, 246]);
        // ack = seq + 1 is a difference of 65535: 16-bit ack.
        assert_eq!(&header(7, 8, !0).encode()[..], &[0x00, 7, 0, 8, 0]);
    }

    #[test]
    fn lenient_forms_are_read_but_not_canonical() {
        // Explicit 0xFF ack-bits byte, and prefix bits 6-7 set.
        let explicit_ff = [0x22u8, 5, 0, 1, 0xFF];
        let (h, len) = PacketHeader::decode(&explicit_ff).expect("lenient");
        assert_eq!((h, len), (header(5, 4, !0), 5));
        assert_eq!(
            PacketHeader::decode_canonical(&explicit_ff),
            Err(HeaderError::NonCanonical)
        );
        let high_bits = [0xE0u8, 5, 0, 1];
        assert_eq!(PacketHeader::decode(&high_bits), Ok((header(5, 4, !0), 4)));
        assert_eq!(
            PacketHeader::decode_canonical(&high_bits),
            Err(HeaderError::NonCanonical)
        );
    }

    #[test]
    fn refuses_fragments_and_truncation() {
        assert_eq!(
            PacketHeader::decode(&[0x01, 0, 0, 0, 0]),
            Err(HeaderError::NotRegular(1))
        );
        assert_eq!(
            PacketHeader::decode(&[]),
            Err(HeaderError::Truncated { needed: 3, got: 0 })
        );
        // Prefix announcing four ack-bits bytes and a 16-bit ack: 9 bytes needed.
        assert_eq!(
            PacketHeader::decode(&[0x1e, 0, 0, 0, 0, 0, 0, 0]),
            Err(HeaderError::Truncated { needed: 9, got: 8 })
        );
    }

    #[test]
    fn every_prefix_round_trips_when_canonical() {
        for prefix in 0..=255u8 {
            let mut bytes = [prefix, 0x34, 0x12, 0x10, 0x00, 0x01, 0x02, 0x03, 0x04];
            if let Ok((h, len)) = PacketHeader::decode(&bytes) {
                let canonical = PacketHeader::decode_canonical(&bytes).is_ok();
                assert_eq!(canonical, h.encode().as_bytes() == &bytes[..len]);
            }
            bytes[0] = prefix | 1;
            assert!(PacketHeader::decode(&bytes).is_err());
        }
    }

    #[test]
    fn encoded_bytes_read_the_same_through_every_view() {
        let bytes = header(9, 8, 0b11).encode();
        let expected: &[u8] = &bytes;
        assert_eq!(bytes.as_ref(), expected);
        assert!(!expected.is_empty());
        assert_eq!(format!("{bytes:?}"), format!("HeaderBytes({expected:?})"));
    }
}
