//! What [`Endpoint::send`](super::Endpoint::send) and
//! [`Endpoint::receive`](super::Endpoint::receive) report.

use super::fragment::FragmentError;
use super::header::HeaderError;
use crate::sequence::Sequence;
use core::fmt;

/// Most acks one received packet can report: one per bit of `ack_bits`.
pub const MAX_ACKS_PER_PACKET: usize = 32;

/// The sent packets newly acked by one received packet, at most 32, in the order of
/// the reference: from bit 0 (`ack`) to bit 31 (`ack - 31`), i.e. newest first.
/// Stored inline (no allocation).
///
/// ```
/// use netproto::Time;
/// use netproto::packet::{Endpoint, EndpointConfig, Received, Sequence};
///
/// let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO).unwrap();
/// let mut b = Endpoint::new(EndpointConfig::default(), Time::ZERO).unwrap();
/// let mut wire = Vec::new();
/// a.send(Time::ZERO, b"hello", |d| wire.push(d.to_vec())).unwrap();
/// b.receive(Time::from_secs_f64(0.05), &wire.pop().unwrap()).unwrap().accept();
/// b.send(Time::from_secs_f64(0.05), b"hi", |d| wire.push(d.to_vec())).unwrap();
/// let received = a.receive(Time::from_secs_f64(0.1), &wire.pop().unwrap()).unwrap().accept();
/// assert_eq!(received.acks().as_slice(), &[Sequence(0)]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Acks {
    list: [Sequence; MAX_ACKS_PER_PACKET],
    // u16 rather than u8: the struct is copied out as whole words, and a byte store
    // followed by a word load would stall store forwarding on the hot path.
    len: u16,
}

impl Acks {
    /// No acks.
    pub const EMPTY: Self = Self {
        list: [Sequence(0); MAX_ACKS_PER_PACKET],
        len: 0,
    };

    #[inline]
    pub(crate) fn push(&mut self, sequence: Sequence) {
        // At most 32 pushes per packet: one per ack bit.
        if let Some(slot) = self.list.get_mut(usize::from(self.len)) {
            *slot = sequence;
            self.len += 1;
        }
    }

    /// The acked sequences, newest first.
    pub fn as_slice(&self) -> &[Sequence] {
        &self.list[..usize::from(self.len)]
    }

    /// An iterator over the acked sequences.
    pub fn iter(&self) -> core::iter::Copied<core::slice::Iter<'_, Sequence>> {
        self.as_slice().iter().copied()
    }

    /// Number of acked sequences.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// `true` when nothing was acked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for Acks {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl fmt::Debug for Acks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<'a> IntoIterator for &'a Acks {
    type Item = Sequence;
    type IntoIter = core::iter::Copied<core::slice::Iter<'a, Sequence>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A packet [`Endpoint::send`](super::Endpoint::send) transmitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Sent {
    /// The sequence number of the packet.
    pub sequence: Sequence,
    /// Number of fragment datagrams (0: sent as one regular datagram).
    pub fragments: u16,
    /// An earlier packet that this send pushed out of the sent window before it was
    /// acked: it is now lost for good (no later ack can be reported for it). Every
    /// sent packet is eventually reported exactly once, acked or lost, unless the
    /// endpoint is dropped first.
    pub lost: Option<Sequence>,
}

/// What became of a valid datagram once the layer above accepted its packet: the
/// summary [`Incoming::accept`](super::Incoming::accept) and
/// [`MessageStack::receive_datagram`](crate::channel::MessageStack::receive_datagram)
/// return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Received {
    /// A whole packet was received and accepted by the layer above: it will be acked,
    /// and its header acked `acks` of our packets.
    Packet {
        /// The sequence of the received packet.
        sequence: Sequence,
        /// Our packets newly acked by its header.
        acks: Acks,
    },
    /// A fragment was stored; its packet is not complete yet.
    Fragment {
        /// The sequence of the packet.
        sequence: Sequence,
        /// The fragment's index.
        fragment_id: u8,
        /// The packet's fragment count.
        fragment_count: u16,
    },
}

impl Received {
    /// The sequence of the packet (of the fragment's packet, for a fragment).
    pub fn sequence(&self) -> Sequence {
        match self {
            Self::Packet { sequence, .. } | Self::Fragment { sequence, .. } => *sequence,
        }
    }

    /// The acks reported (empty for a fragment).
    pub fn acks(&self) -> Acks {
        match self {
            Self::Packet { acks, .. } => *acks,
            Self::Fragment { .. } => Acks::EMPTY,
        }
    }
}

/// Why [`Endpoint::send`](super::Endpoint::send) refused a packet. A refused packet
/// does not consume a sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum PacketSendError {
    /// The payload is larger than `max_packet_size`.
    #[error("packet of {size} bytes is too large to send (max_packet_size is {max})")]
    TooLarge {
        /// Payload bytes.
        size: usize,
        /// Configured maximum.
        max: usize,
    },
}

/// Why [`Endpoint::receive`](super::Endpoint::receive) dropped a datagram. Every
/// dropped datagram is dropped whole (nothing of it is applied) and counted in
/// [`EndpointStats`](super::EndpointStats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// The datagram (or its payload) is larger than the configuration allows.
    #[error("{size} bytes is too large to receive (max {max})")]
    TooLarge {
        /// Bytes.
        size: usize,
        /// Limit.
        max: usize,
    },
    /// The packet header is malformed.
    #[error("invalid packet header: {0}")]
    InvalidHeader(HeaderError),
    /// The fragment is malformed or inconsistent with the configuration.
    #[error("invalid fragment: {0}")]
    InvalidFragment(FragmentError),
    /// The header acks packets up to `ack`, but our next sequence is `next`: we
    /// never sent it.
    #[error("ack {ack} names a packet not sent yet (next is {next})")]
    ForgedAck {
        /// The ack in the header.
        ack: Sequence,
        /// Our next sequence.
        next: Sequence,
    },
    /// The packet is older than the received window.
    #[error("packet {0} is stale")]
    Stale(Sequence),
    /// The packet was already received.
    #[error("packet {0} is a duplicate")]
    Duplicate(Sequence),
    /// The fragment's packet is older than the reassembly window.
    #[error("fragment of packet {0} is stale")]
    StaleFragment(Sequence),
    /// The fragment, or its whole packet, was already received.
    #[error("fragment {fragment_id} of packet {sequence} is a duplicate")]
    DuplicateFragment {
        /// The packet.
        sequence: Sequence,
        /// The fragment.
        fragment_id: u8,
    },
    /// The fragment count differs from the one of earlier fragments of the packet.
    #[error("fragment count of packet {sequence} changed from {expected} to {got}")]
    FragmentCountMismatch {
        /// The packet.
        sequence: Sequence,
        /// Count of the first fragment seen.
        expected: u16,
        /// Count of this fragment.
        got: u16,
    },
    /// The header acks `sequence`, a sequence we skipped on purpose and never sent:
    /// the peer acks packets it did not receive (an optimistic ack, which would
    /// release reliable messages never delivered and fake RTT samples). A protocol
    /// violation: the connection above should disconnect the peer. Only with
    /// [`EndpointConfig::skip_sequence_seed`](super::EndpointConfig::skip_sequence_seed)
    /// set.
    #[error("ack of packet {sequence}, which was never sent (optimistic ack)")]
    OptimisticAck {
        /// The skipped sequence the header acks.
        sequence: Sequence,
    },
    /// The layer above refused the packet: it is not acked. [`Endpoint::receive`]
    /// never returns it (the layer refuses with
    /// [`PendingPacket::refuse`](super::PendingPacket::refuse)); layers built on the
    /// endpoint use it to report their refusal.
    ///
    /// [`Endpoint::receive`]: super::Endpoint::receive
    #[error("packet {0} was refused by the layer above")]
    Rejected(Sequence),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_count_and_list_what_was_pushed() {
        let mut acks = Acks::EMPTY;
        assert!(acks.is_empty());
        assert_eq!(acks.len(), 0);
        for s in [7, 5, 65535] {
            acks.push(Sequence(s));
        }
        assert!(!acks.is_empty());
        assert_eq!(acks.len(), 3);
        assert_eq!(acks.as_slice(), [Sequence(7), Sequence(5), Sequence(65535)]);
        assert_eq!(acks.iter().count(), 3);
    }

    #[test]
    fn acks_iterate_by_reference_and_debug_as_a_list() {
        let mut acks = Acks::EMPTY;
        acks.push(Sequence(3));
        acks.push(Sequence(9));
        let mut seen = Vec::new();
        for s in &acks {
            seen.push(s);
        }
        assert_eq!(seen, [Sequence(3), Sequence(9)]);
        assert_eq!(
            format!("{acks:?}"),
            format!("{:?}", [Sequence(3), Sequence(9)])
        );
        assert_eq!(format!("{:?}", Acks::EMPTY), "[]");
    }
}
