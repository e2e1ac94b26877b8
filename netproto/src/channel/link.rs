//! [`Link`]: what the layer's send step asks of whatever carries its packets (a bare
//! packet endpoint, a client's connection, a server's slot), and the send step itself,
//! written once for all of them.

use super::MessageLayer;
use crate::Time;
use crate::message::NetMessage;
use crate::packet::Sequence;

/// What carries the layer's packets.
pub(crate) trait Link {
    /// What the link says of a payload it sent.
    type Sent;
    /// Why the link refused a payload.
    type Error;
    /// The round trip the packet endpoint measures (its ack time, seconds), when
    /// there is one.
    fn ack_time(&self) -> Option<f64>;
    /// Sends one payload, written by `write` into the buffer under the sequence it
    /// will carry.
    fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Self::Sent, Self::Error>;
}

impl<M: NetMessage> MessageLayer<M> {
    /// The send step: the layer takes the link's round trip (for its resend timing),
    /// then writes the next payload under the sequence the link gives it. Returns what
    /// the link said and the payload's size in bytes.
    pub(crate) fn send_over<L: Link>(
        &mut self,
        now: Time,
        link: &mut L,
    ) -> Result<(L::Sent, usize), L::Error> {
        if let Some(ack_time) = link.ack_time() {
            self.set_rtt_secs(ack_time);
        }
        let mut size = 0;
        let sent = link.send_with(now, |sequence, buf| {
            self.write_packet(now, sequence, buf);
            size = buf.len();
        })?;
        Ok((sent, size))
    }
}
