//! Fragment datagrams: a 5-byte fragment header, the packet header in fragment 0,
//! then a slice of the packet.

use super::header::{HeaderError, PacketHeader};
use crate::sequence::Sequence;

/// Bytes of the fragment header: prefix 1, sequence u16 LE, fragment id, count - 1.
pub const FRAGMENT_HEADER_BYTES: usize = 5;

/// The most fragments a packet can have: the count travels as `count - 1` in a byte.
pub const MAX_FRAGMENTS: usize = 256;

/// The prefix byte of every fragment datagram.
pub const FRAGMENT_PREFIX: u8 = 1;

/// The header at the front of a fragment datagram.
///
/// ```
/// use netproto::packet::Sequence;
/// use netproto::internals::packet::FragmentHeader;
///
/// let header = FragmentHeader { sequence: Sequence(0x1234), fragment_id: 2, fragment_count: 3 };
/// assert_eq!(header.encode(), [0x01, 0x34, 0x12, 2, 2]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragmentHeader {
    /// The sequence of the packet this fragment belongs to.
    pub sequence: Sequence,
    /// The index of this fragment, `0..fragment_count`.
    pub fragment_id: u8,
    /// The number of fragments of the packet, 1 to 256.
    pub fragment_count: u16,
}

impl FragmentHeader {
    /// The 5-byte encoding. `fragment_count` must be in 1..=256 (it is sent minus one,
    /// truncated to a byte).
    pub fn encode(&self) -> [u8; FRAGMENT_HEADER_BYTES] {
        let seq = self.sequence.0.to_le_bytes();
        [
            FRAGMENT_PREFIX,
            seq[0],
            seq[1],
            self.fragment_id,
            self.fragment_count.wrapping_sub(1) as u8,
        ]
    }
}

/// The receiver's limits, from its configuration, that every fragment is checked
/// against before a byte of it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragmentLimits {
    /// Most fragments per packet (1 to 256).
    pub max_fragments: usize,
    /// Payload bytes of every fragment but the last.
    pub fragment_size: usize,
    /// Largest reassembled packet payload.
    pub max_packet_size: usize,
}

/// Why a fragment datagram was refused. Every field is validated before any byte is
/// copied; a refused fragment is dropped whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum FragmentError {
    /// Shorter than the 5-byte fragment header.
    #[error("fragment of {len} bytes is shorter than the fragment header")]
    Truncated {
        /// Bytes in the datagram.
        len: usize,
    },
    /// The prefix byte is not exactly 1.
    #[error("prefix byte {0:#04x} is not a fragment")]
    BadPrefix(u8),
    /// More fragments than the configuration allows.
    #[error("{count} fragments, at most {max} allowed")]
    TooManyFragments {
        /// Fragment count announced.
        count: usize,
        /// Configured maximum.
        max: usize,
    },
    /// The fragment id is not below the fragment count.
    #[error("fragment id {id} out of range for {count} fragments")]
    IdOutOfRange {
        /// Fragment id.
        id: u8,
        /// Fragment count.
        count: usize,
    },
    /// The packet header inside fragment 0 does not decode.
    #[error("packet header in fragment 0: {0}")]
    InvalidHeader(HeaderError),
    /// The packet header inside fragment 0 names another sequence than the fragment.
    #[error("fragment of packet {fragment} carries the header of packet {header}")]
    SequenceMismatch {
        /// Sequence in the fragment header.
        fragment: Sequence,
        /// Sequence in the embedded packet header.
        header: Sequence,
    },
    /// A fragment is longer than the fragment size.
    #[error("fragment carries {len} bytes, fragment size is {max}")]
    TooLong {
        /// Payload bytes carried.
        len: usize,
        /// Configured fragment size.
        max: usize,
    },
    /// A fragment other than the last is not exactly the fragment size, or a last
    /// fragment is empty.
    #[error("fragment {id} carries {len} bytes, expected {expected}")]
    WrongSize {
        /// Fragment id.
        id: u8,
        /// Payload bytes carried.
        len: usize,
        /// Expected bytes (for the last fragment: the minimum, 1).
        expected: usize,
    },
    /// A packet sent as one fragment that its sender would have sent whole: a
    /// sender fragments only packets above `fragment_above` bytes. (With
    /// `fragment_size <= fragment_above` no one-fragment packet exists at all.)
    /// Returned by [`Endpoint::receive`](super::Endpoint::receive), which knows
    /// `fragment_above`; the fragment parser does not check it.
    #[error("a one-fragment packet of {len} bytes is not above fragment_above ({fragment_above})")]
    NeedlessFragment {
        /// Payload bytes of the packet.
        len: usize,
        /// Configured `fragment_above`.
        fragment_above: usize,
    },
    /// The reassembled packet would exceed the maximum packet size.
    #[error("reassembled packet of at least {size} bytes exceeds the maximum of {max}")]
    PacketTooLarge {
        /// Size (or lower bound) of the reassembled packet.
        size: usize,
        /// Configured maximum packet size.
        max: usize,
    },
}

/// A validated fragment datagram, borrowing its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// The fragment header.
    pub header: FragmentHeader,
    /// The packet header, carried by fragment 0 only (canonical, same sequence).
    pub packet_header: Option<PacketHeader>,
    /// This fragment's slice of the packet payload.
    pub payload: &'a [u8],
}

/// Reads and validates a fragment datagram against `limits`, the way the reference
/// `reliable_read_fragment_header` does, plus two checks of its own: empty fragments
/// and fragments that would make the packet larger than `max_packet_size` are
/// refused up front.
///
/// ```
/// use netproto::packet::{FragmentError, Sequence};
/// use netproto::internals::packet::{parse_fragment, FragmentLimits};
///
/// let limits = FragmentLimits { max_fragments: 16, fragment_size: 4, max_packet_size: 64 };
/// // Fragment 1 (last) of 2 of packet 7, carrying 3 bytes.
/// let fragment = parse_fragment(&[1, 7, 0, 1, 1, 0xaa, 0xbb, 0xcc], &limits).unwrap();
/// assert_eq!(fragment.header.sequence, Sequence(7));
/// assert_eq!(fragment.payload, &[0xaa, 0xbb, 0xcc]);
/// // Fragment id 2 of 2 fragments.
/// assert!(matches!(
///     parse_fragment(&[1, 7, 0, 2, 1, 0xaa], &limits),
///     Err(FragmentError::IdOutOfRange { .. })
/// ));
/// ```
pub fn parse_fragment<'a>(
    datagram: &'a [u8],
    limits: &FragmentLimits,
) -> Result<Fragment<'a>, FragmentError> {
    let Some((fixed, rest)) = datagram.split_first_chunk::<FRAGMENT_HEADER_BYTES>() else {
        return Err(FragmentError::Truncated {
            len: datagram.len(),
        });
    };
    let [prefix, s0, s1, fragment_id, count_minus_one] = *fixed;
    if prefix != FRAGMENT_PREFIX {
        return Err(FragmentError::BadPrefix(prefix));
    }
    let sequence = Sequence(u16::from_le_bytes([s0, s1]));
    let count = usize::from(count_minus_one) + 1;
    if count > limits.max_fragments {
        return Err(FragmentError::TooManyFragments {
            count,
            max: limits.max_fragments,
        });
    }
    if usize::from(fragment_id) >= count {
        return Err(FragmentError::IdOutOfRange {
            id: fragment_id,
            count,
        });
    }
    let (packet_header, payload) = if fragment_id == 0 {
        let (header, len) =
            PacketHeader::decode_canonical(rest).map_err(FragmentError::InvalidHeader)?;
        if header.sequence != sequence {
            return Err(FragmentError::SequenceMismatch {
                fragment: sequence,
                header: header.sequence,
            });
        }
        (Some(header), &rest[len..])
    } else {
        (None, rest)
    };
    let len = payload.len();
    let fs = limits.fragment_size;
    if len > fs {
        return Err(FragmentError::TooLong { len, max: fs });
    }
    let last = usize::from(fragment_id) == count - 1;
    if !last && len != fs {
        return Err(FragmentError::WrongSize {
            id: fragment_id,
            len,
            expected: fs,
        });
    }
    if len == 0 {
        return Err(FragmentError::WrongSize {
            id: fragment_id,
            len,
            expected: 1,
        });
    }
    // Size of the whole packet: exact when this is the last fragment, else a lower
    // bound (the last fragment carries at least one byte).
    let tail = if last { len } else { 1 };
    let size = (count - 1).saturating_mul(fs).saturating_add(tail);
    if size > limits.max_packet_size {
        return Err(FragmentError::PacketTooLarge {
            size,
            max: limits.max_packet_size,
        });
    }
    Ok(Fragment {
        header: FragmentHeader {
            sequence,
            fragment_id,
            fragment_count: count as u16,
        },
        packet_header,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: FragmentLimits = FragmentLimits {
        max_fragments: 4,
        fragment_size: 8,
        max_packet_size: 30,
    };

    fn fragment0(sequence: u16, count: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = FragmentHeader {
            sequence: Sequence(sequence),
            fragment_id: 0,
            fragment_count: u16::from(count),
        }
        .encode()
        .to_vec();
        let header = PacketHeader {
            sequence: Sequence(sequence),
            ack: Sequence(65535),
            ack_bits: 0,
        };
        v.extend_from_slice(&header.encode());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn fragment_zero_carries_the_packet_header() {
        let d = fragment0(9, 2, &[7; 8]);
        let f = parse_fragment(&d, &LIMITS).expect("valid");
        assert_eq!(f.header.fragment_count, 2);
        assert_eq!(f.packet_header.map(|h| h.sequence), Some(Sequence(9)));
        assert_eq!(f.payload, &[7; 8]);
    }

    #[test]
    fn field_checks() {
        assert_eq!(
            parse_fragment(&[1, 0, 0, 0], &LIMITS),
            Err(FragmentError::Truncated { len: 4 })
        );
        assert_eq!(
            parse_fragment(&[3, 0, 0, 0, 0, 1], &LIMITS),
            Err(FragmentError::BadPrefix(3))
        );
        assert_eq!(
            parse_fragment(&[1, 0, 0, 1, 4, 1], &LIMITS),
            Err(FragmentError::TooManyFragments { count: 5, max: 4 })
        );
        assert_eq!(
            parse_fragment(&[1, 0, 0, 3, 2, 1], &LIMITS),
            Err(FragmentError::IdOutOfRange { id: 3, count: 3 })
        );
        assert!(matches!(
            parse_fragment(&[1, 0, 0, 1, 2, 1, 2, 3], &LIMITS),
            Err(FragmentError::WrongSize { .. })
        ));
        assert!(matches!(
            parse_fragment(&[1, 0, 0, 1, 1], &LIMITS),
            Err(FragmentError::WrongSize { expected: 1, .. })
        ));
        assert!(matches!(
            parse_fragment(&[1, 0, 0, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9], &LIMITS),
            Err(FragmentError::TooLong { len: 9, max: 8 })
        ));
        // 4 fragments of 8 bytes = at least 25 bytes: fine; the last one with 7
        // bytes makes 31 > 30.
        assert!(
            parse_fragment(
                &[
                    1, 0, 0, 0, 3, 0x3e, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8
                ],
                &LIMITS
            )
            .is_ok()
        );
        assert_eq!(
            parse_fragment(&[1, 0, 0, 3, 3, 1, 2, 3, 4, 5, 6, 7], &LIMITS),
            Err(FragmentError::PacketTooLarge { size: 31, max: 30 })
        );
        // 6 bytes make exactly 30: the limit itself is allowed.
        assert!(parse_fragment(&[1, 0, 0, 3, 3, 1, 2, 3, 4, 5, 6], &LIMITS).is_ok());
    }

    #[test]
    fn embedded_header_must_be_canonical_and_match() {
        let mut d = fragment0(9, 2, &[7; 8]);
        d[1] = 10; // fragment says 10, header says 9
        assert!(matches!(
            parse_fragment(&d, &LIMITS),
            Err(FragmentError::SequenceMismatch { .. })
        ));
        // seq 9 ack 8, all acked, sent with a 16-bit ack: decodes, not canonical.
        let d = [1u8, 9, 0, 0, 1, 0x00, 9, 0, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(
            parse_fragment(&d, &LIMITS),
            Err(FragmentError::InvalidHeader(HeaderError::NonCanonical))
        );
        let d = [1u8, 9, 0, 0, 1, 0x3e, 9];
        assert!(matches!(
            parse_fragment(&d, &LIMITS),
            Err(FragmentError::InvalidHeader(HeaderError::Truncated { .. }))
        ));
    }
}
