//! The two-phase receive: a payload handed up, accepted or refused.

use super::event::ClientId;
use crate::packet::{Acks, PendingPacket, Sequence};

/// A payload packet that arrived, authenticated, in order with the packet endpoint's
/// window, waiting for the layer above's verdict. It borrows the connection until
/// then.
///
/// * [`accept`](Self::accept): the packet is recorded (it will be acked) and its
///   header's acks are applied; returns our packets it newly acked, for the layer
///   above to release what they carried.
/// * [`postpone`](Self::postpone): the layer cannot take the payload *now* (a full
///   receive queue). It is not acked, so the peer sends what it carried again, but
///   its acks are applied (they are genuine): returns our packets it newly acked.
/// * [`refuse`](Self::refuse), or dropping it: as if it was lost. It is not acked
///   and its acks are not applied. A payload that is malformed is a protocol error:
///   refuse it and disconnect the peer.
///
/// ```
/// # use netproto::connection::Delivery;
/// fn take(delivery: Delivery<'_>, layer: &mut Vec<Vec<u8>>) {
///     layer.push(delivery.payload().to_vec());
///     for sequence in &delivery.accept() {
///         // release what our packet `sequence` carried
///         let _ = sequence;
///     }
/// }
/// ```
#[derive(Debug)]
pub struct Delivery<'a> {
    client: ClientId,
    packet: PendingPacket<'a>,
}

impl<'a> Delivery<'a> {
    pub(crate) fn new(client: ClientId, packet: PendingPacket<'a>) -> Self {
        Self { client, packet }
    }

    /// The client it came from (on a client: our own slot).
    pub fn client(&self) -> ClientId {
        self.client
    }

    /// The packet endpoint's sequence of the packet.
    pub fn sequence(&self) -> Sequence {
        self.packet.sequence()
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        self.packet.payload()
    }

    /// Takes the packet: it will be acked, and its acks apply. Returns our packets it
    /// newly acked (each reported once).
    pub fn accept(self) -> Acks {
        self.packet.accept()
    }

    /// Postpones the packet for flow control: not acked (the peer resends what it
    /// carried), but its acks apply. Returns our packets it newly acked.
    pub fn postpone(self) -> Acks {
        self.packet.postpone()
    }

    /// The packet endpoint's pending packet, for a glue that gives its verdict
    /// itself.
    pub(crate) fn into_packet(self) -> PendingPacket<'a> {
        self.packet
    }

    /// Refuses the packet, as if it was lost (dropping the delivery does the same).
    pub fn refuse(self) {
        self.packet.refuse();
    }
}
