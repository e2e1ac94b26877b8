//! [`Peer`]: one connection's message layer and the glue that joins it to the
//! connection, written once for the server's slots and the client.
//!
//! A peer is the upper part of its connection: the client's sits beside its
//! [`Client`], a server's in its client's slot of the one
//! [`Server`](crate::connection::Server) table (the slot's `upper`). Both
//! connections are reached through [`PacedCarrier`], what the send step asks of a
//! connection (may a packet go now; and the layer's [`Carrier`]: the round trip,
//! send a payload under the next sequence), so the send step and the receive step
//! exist once, here.

use std::fmt::Debug;
use std::time::Duration;

use super::{ConnectionStats, SendError, StackStats};
use crate::MessageSet;
use crate::Time;
use crate::channel::{Carrier, ChannelId, MessageLayer, PayloadError, Scratch};
use crate::connection::{Client, ClientId, Delivery, LinkStats, PayloadSendError, SlotSender};
use crate::packet::Sequence;
use crate::trace::{DropLog, DropReason, Refusal};

/// Most payload packets a stack sends one connection in one update: the first, and
/// more while the message layer has more to send
/// ([`more_to_send`](MessageLayer::more_to_send)) and the congestion mode's rate allows
/// (at 120 packets per second, `CongestionConfig::bulk()`, a 60 Hz update sends up
/// to two).
pub const MAX_PACKETS_PER_UPDATE: usize = 4;

/// A connection as the send step sees it: the layer's [`Carrier`] (round trip, send a
/// payload) and whether a payload packet is due now, which the connection's timers
/// decide. Implemented by a [`Client`] and by a server's client ([`SlotSender`], its
/// slot's session split from the slot's peer).
pub(crate) trait PacedCarrier: Carrier {
    /// `true` when a payload packet is due at `now`: the congestion mode's rate
    /// allows one, and the layer has `news` or (when `idle` packets are wanted) the
    /// idle interval passed since the last payload.
    fn payload_due(&self, now: Time, news: bool, idle: bool) -> bool;
}

impl<A: Copy + Eq + Debug> Carrier for Client<A> {
    type Sent = Sequence;
    type Error = PayloadSendError;

    fn ack_time(&self) -> Option<Duration> {
        self.endpoint_estimates().map(|e| e.ack_time())
    }

    fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Sequence, PayloadSendError> {
        Client::send_with(self, now, write)
    }
}

impl<A: Copy + Eq + Debug> PacedCarrier for Client<A> {
    fn payload_due(&self, now: Time, news: bool, idle: bool) -> bool {
        Client::payload_due(self, now, news, idle)
    }
}

impl<A: Copy> Carrier for SlotSender<'_, A> {
    type Sent = Sequence;
    type Error = PayloadSendError;

    fn ack_time(&self) -> Option<Duration> {
        SlotSender::ack_time(self)
    }

    fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Sequence, PayloadSendError> {
        SlotSender::send_with(self, now, write)
    }
}

impl<A: Copy> PacedCarrier for SlotSender<'_, A> {
    fn payload_due(&self, now: Time, news: bool, idle: bool) -> bool {
        SlotSender::payload_due(self, now, news, idle)
    }
}

/// One connection's message layer and its glue: whether a graceful disconnect
/// waits for it. A [`ServerStack`]'s server holds one in each connected client's
/// slot, a [`ClientStack`] one.
///
/// [`ServerStack`]: super::ServerStack
/// [`ClientStack`]: super::ClientStack
#[derive(Debug)]
pub(crate) struct Peer<M> {
    layer: MessageLayer<M>,
    /// The deadline of a disconnect after flush.
    closing: Option<Time>,
}

impl<M: MessageSet> Peer<M> {
    /// A peer around a new `layer`.
    pub(crate) fn new(layer: MessageLayer<M>) -> Self {
        Self {
            layer,
            closing: None,
        }
    }

    /// The message layer (queues and counters).
    pub(crate) fn layer(&self) -> &MessageLayer<M> {
        &self.layer
    }

    /// The message layer, to send and receive directly.
    pub(crate) fn layer_mut(&mut self) -> &mut MessageLayer<M> {
        &mut self.layer
    }

    /// `true` while a disconnect after flush waits for the queues.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.is_some()
    }

    /// What the connection measured: `link`, the layer's messages and each channel's.
    pub(crate) fn stats(&self, link: LinkStats) -> ConnectionStats {
        let channels = (0..self.layer.config().channels.len())
            .filter_map(|c| self.layer.channel_stats(ChannelId::new(c)))
            .collect();
        ConnectionStats::new(link, self.layer.stats(), channels)
    }

    /// Queues `message` on `channel`, unless a disconnect after flush waits.
    pub(crate) fn send(&mut self, channel: ChannelId, message: M) -> Result<(), SendError> {
        if self.is_closing() {
            return Err(SendError::Closing);
        }
        Ok(self.layer.send(channel, message)?)
    }

    /// Queues and tracks `message` on the unreliable `channel`
    /// ([`MessageLayer::send_tracked`]).
    pub(crate) fn send_tracked(
        &mut self,
        channel: ChannelId,
        message: M,
    ) -> Result<crate::channel::Receipt, SendError> {
        if self.is_closing() {
            return Err(SendError::Closing);
        }
        Ok(self.layer.send_tracked(channel, message)?)
    }

    /// The next message delivered on `channel`.
    pub(crate) fn receive(&mut self, channel: ChannelId) -> Option<M> {
        self.layer.receive(channel)
    }

    /// The receive step: the layer reads the payload before the packet is taken
    /// (`channel::deliver`: accepted, postponed or refused). A refusal is counted and
    /// returned, for the caller to log ([`Refused::log`]) once the delivery let go of
    /// the connection; a malformed payload is a protocol error that ends the
    /// connection.
    pub(crate) fn deliver(
        &mut self,
        delivery: Delivery<'_>,
        scratch: &mut Scratch<M>,
        counters: &mut StackStats,
    ) -> Option<PayloadError> {
        let packet = delivery.into_packet();
        let error = crate::channel::deliver(&mut self.layer, scratch, packet)
            .0
            .err()?;
        counters.payloads_dropped_by_layer += 1;
        Some(error)
    }

    /// The send step at `now`: the first payload packet of the tick when the link
    /// says one is due (the layer has news or, unless `news_only`, the idle interval
    /// passed: [`PacedCarrier::payload_due`]), more while the layer has more to send
    /// and the rate allows, with the layer's RTT taken from the link.
    pub(crate) fn transmit(
        &mut self,
        now: Time,
        link: &mut impl PacedCarrier,
        scratch: &mut Scratch<M>,
        counters: &mut StackStats,
        news_only: bool,
    ) {
        for k in 0..MAX_PACKETS_PER_UPDATE {
            let due = match k {
                0 => link.payload_due(now, self.layer.has_news(), !news_only),
                _ => link.payload_due(now, self.layer.more_to_send(), false),
            };
            if !due {
                break;
            }
            // A payload within the layer's max_packet_bits always fits the endpoint
            // (checked at construction); a refusal is a lost packet.
            if let Ok((_, size)) = self.layer.send_over(scratch, now, link) {
                counters.payloads_sent += 1;
                counters.largest_payload_bytes = counters.largest_payload_bytes.max(size);
            }
        }
    }

    /// Starts (or shortens) a disconnect after flush: it ends `timeout` after `now`
    /// at the latest.
    pub(crate) fn close_after_flush(&mut self, now: Time, timeout: Duration) {
        let deadline = now + timeout;
        self.closing = Some(self.closing.map_or(deadline, |d| d.min(deadline)));
    }

    /// Forgets a disconnect after flush (the connection ended another way).
    pub(crate) fn cancel_close(&mut self) {
        self.closing = None;
    }

    /// `true` when a disconnect after flush is due at `now` (the queues flushed or
    /// the deadline passed): it is counted and forgotten, and the caller disconnects.
    pub(crate) fn close_due(&mut self, now: Time, counters: &mut StackStats) -> bool {
        let Some(deadline) = self.closing else {
            return false;
        };
        let flushed = self.layer.is_flushed();
        if !(flushed || now >= deadline) {
            return false;
        }
        self.closing = None;
        if flushed {
            counters.flushes_completed += 1;
        } else {
            counters.flushes_timed_out += 1;
        }
        true
    }
}

/// Where a refused payload came from, for its log line.
pub(crate) struct Refused<'a> {
    pub(crate) side: &'static str,
    pub(crate) client: Option<ClientId>,
    pub(crate) addr: &'a dyn Debug,
}

impl Refused<'_> {
    /// Logs a payload the layer refused in `drop_log` (the connection's): a
    /// malformed one is a protocol error (the connection ends), one it has no room
    /// for now a drop.
    pub(crate) fn log(&self, drop_log: &mut DropLog, now: Time, error: &PayloadError) {
        drop_log.refused(
            now,
            Refusal {
                side: self.side,
                client: self.client.map_or(0, |c| c.0),
                addr: self.addr,
                reason: DropReason::PayloadRefused,
                error,
                protocol_error: error.is_malformed(),
            },
        );
    }
}
