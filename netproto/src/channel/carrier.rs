//! [`Carrier`]: what the layer's send step
//! ([`MessageLayer::send_over`](super::MessageLayer::send_over), written once for all
//! of them) asks of whatever carries its packets (a bare packet endpoint, a client's
//! connection, a server's slot).

use std::time::Duration;

use crate::Time;
use crate::packet::Sequence;

/// What carries the layer's packets.
pub(crate) trait Carrier {
    /// What the carrier says of a payload it sent.
    type Sent;
    /// Why the carrier refused a payload.
    type Error;
    /// The round trip the packet endpoint measures (its ack time: the round trip
    /// plus the peer's hold), when there is one (and it is a valid [`Duration`]).
    fn ack_time(&self) -> Option<Duration>;
    /// Sends one payload, written by `write` into the buffer under the sequence it
    /// will carry.
    fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Self::Sent, Self::Error>;
}
