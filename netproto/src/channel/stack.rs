//! [`MessageStack`]: a message layer on top of a packet endpoint.

use super::{
    Carrier, ChannelId, ChannelSendError, LayerConfig, LayerConfigError, MessageLayer,
    PayloadError, Scratch,
};
use crate::Time;
use crate::packet::{
    self, Acks, Endpoint, EndpointConfig, Incoming, PendingPacket, ReceiveError, Received, Sent,
    Sequence,
};
use crate::stream::NetMessage;

/// Why a [`MessageStack`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StackConfigError {
    /// The endpoint configuration is invalid.
    #[error("endpoint: {0}")]
    Endpoint(packet::EndpointConfigError),
    /// The layer configuration is invalid.
    #[error("message layer: {0}")]
    Layer(LayerConfigError),
    /// The endpoint's packet windows are larger than the layer's
    /// `sent_packets_buffer_size`, which the layer's id-window checks assume.
    #[error(
        "the endpoint's packet windows ({sent} sent, {received} received) exceed the layer's sent_packets_buffer_size {layer}"
    )]
    PacketWindow {
        /// The endpoint's `sent_packets_buffer_size`.
        sent: usize,
        /// The endpoint's `received_packets_buffer_size`.
        received: usize,
        /// The layer's `sent_packets_buffer_size`.
        layer: usize,
    },
    /// The layer's packet budget is larger than the endpoint's largest payload
    /// ([`max_payload_size`](EndpointConfig::max_payload_size)).
    #[error("max_packet_bits {bits} exceeds the endpoint's largest payload of {bytes} bytes")]
    PacketTooLarge {
        /// The layer's budget.
        bits: usize,
        /// The endpoint's limit.
        bytes: usize,
    },
}

/// Checks that a layer fits over an endpoint: its packet budget within the endpoint's
/// [`max_payload_size`](EndpointConfig::max_payload_size), and the endpoint's packet windows within the layer's
/// `sent_packets_buffer_size` (the layer's message-id rule, `AckWindowTooLarge`,
/// assumes a packet older than that window is dropped by the endpoint). Anything
/// that glues a [`MessageLayer`] to an endpoint (a [`MessageStack`], the UDP
/// transport) checks this; the configurations themselves are checked by their own
/// `validate`.
///
/// ```
/// use netproto::channel::{LayerConfig, StackConfigError, check_pair};
/// use netproto::packet::EndpointConfig;
///
/// assert_eq!(check_pair(&EndpointConfig::default(), &LayerConfig::default()), Ok(()));
/// let wide = EndpointConfig { received_packets_buffer_size: 1024, ..EndpointConfig::default() };
/// assert!(matches!(
///     check_pair(&wide, &LayerConfig::default()),
///     Err(StackConfigError::PacketWindow { .. })
/// ));
/// ```
pub fn check_pair(endpoint: &EndpointConfig, layer: &LayerConfig) -> Result<(), StackConfigError> {
    if layer.max_packet_bits.div_ceil(8) > endpoint.max_payload_size() {
        return Err(StackConfigError::PacketTooLarge {
            bits: layer.max_packet_bits,
            bytes: endpoint.max_payload_size(),
        });
    }
    let window = endpoint
        .sent_packets_buffer_size
        .max(endpoint.received_packets_buffer_size);
    if window > layer.sent_packets_buffer_size {
        return Err(StackConfigError::PacketWindow {
            sent: endpoint.sent_packets_buffer_size,
            received: endpoint.received_packets_buffer_size,
            layer: layer.sent_packets_buffer_size,
        });
    }
    Ok(())
}

/// Why [`MessageStack::receive_datagram`] dropped a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StackReceiveError {
    /// The packet endpoint dropped it (malformed header, stale, duplicate...).
    #[error(transparent)]
    Packet(ReceiveError),
    /// The message layer refused its payload; the packet is not acked.
    #[error(transparent)]
    Messages(PayloadError),
}

/// A [`MessageLayer`] glued to a packet [`Endpoint`]: the two full layers of one end
/// of a connection, sans-IO.
///
/// Each [`send_packet`](Self::send_packet) writes one payload under the endpoint's
/// next sequence and sends it; each [`receive_datagram`](Self::receive_datagram)
/// hands the payload to the layer (the packet is acked only if the layer accepted it)
/// and forwards the endpoint's acks to the layer (also those of a packet the layer
/// postponed for flow control: only a malformed packet's acks are ignored). Lost
/// packets need nothing: the resend interval covers them.
///
/// ```
/// use netproto::Time;
/// use netproto::NetMessage;
/// use netproto::channel::{ChannelId, LayerConfig, MessageStack};
/// use netproto::packet::EndpointConfig;
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Chat(#[net(range = 0..=9)] u8);
///
/// let new = || MessageStack::<Chat>::new(EndpointConfig::default(), LayerConfig::default(), Time::ZERO);
/// let (mut a, mut b) = (new()?, new()?);
/// a.send(ChannelId::RELIABLE, Chat(7))?;
/// let mut wire = Vec::new();
/// a.send_packet(Time::ZERO, |d| wire.push(d.to_vec()))?;
/// for d in &wire {
///     b.receive_datagram(Time::from_secs_f64(0.05), d)?;
/// }
/// assert_eq!(b.receive(ChannelId::RELIABLE), Some(Chat(7)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MessageStack<M> {
    endpoint: Endpoint,
    layer: MessageLayer<M>,
    payload: Vec<u8>,
    /// Lent to the layer for each packet, as the transport's stacks do.
    scratch: Scratch<M>,
}

impl<M: NetMessage> MessageStack<M> {
    /// Both layers, created at `now`.
    pub fn new(
        endpoint: EndpointConfig,
        layer: LayerConfig,
        now: Time,
    ) -> Result<Self, StackConfigError> {
        check_pair(&endpoint, &layer)?;
        let endpoint = Endpoint::new(endpoint, now).map_err(StackConfigError::Endpoint)?;
        let layer = MessageLayer::new(layer).map_err(StackConfigError::Layer)?;
        Ok(Self {
            endpoint,
            layer,
            payload: Vec::new(),
            scratch: Scratch::default(),
        })
    }

    /// The packet endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The packet endpoint, mutably (for [`Endpoint::update`]).
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// The message layer.
    pub fn layer(&self) -> &MessageLayer<M> {
        &self.layer
    }

    /// The message layer, mutably.
    pub fn layer_mut(&mut self) -> &mut MessageLayer<M> {
        &mut self.layer
    }

    /// Queues a message: see [`MessageLayer::send`].
    pub fn send(&mut self, channel: ChannelId, message: M) -> Result<(), ChannelSendError> {
        self.layer.send(channel, message)
    }

    /// The next received message of `channel`: see [`MessageLayer::receive`].
    pub fn receive(&mut self, channel: ChannelId) -> Option<M> {
        self.layer.receive(channel)
    }

    /// Writes the next packet and sends it through the endpoint, calling `transmit`
    /// once per datagram. Call it once per tick, even with nothing queued: the packet
    /// carries acks.
    pub fn send_packet(
        &mut self,
        now: Time,
        transmit: impl FnMut(&[u8]),
    ) -> Result<Sent, packet::PacketSendError> {
        let mut link = EndpointCarrier {
            endpoint: &mut self.endpoint,
            payload: &mut self.payload,
            transmit,
        };
        Ok(self.layer.send_over(&mut self.scratch, now, &mut link)?.0)
    }

    /// Receives one datagram: the endpoint validates it, the layer reads the payload
    /// (all or nothing), and the acks it carries release our messages. A payload
    /// the layer has no room for now is postponed (not acked, so the peer resends
    /// what it carried; its acks still apply); a malformed one is refused whole.
    pub fn receive_datagram(
        &mut self,
        now: Time,
        datagram: &[u8],
    ) -> Result<Received, StackReceiveError> {
        let packet = match self.endpoint.receive(now, datagram) {
            Ok(Incoming::Packet(packet)) => packet,
            Ok(fragment) => return Ok(fragment.accept()),
            Err(e) => return Err(StackReceiveError::Packet(e)),
        };
        let sequence = packet.sequence();
        let (read, acks) = deliver(&mut self.layer, &mut self.scratch, packet);
        read.map(|()| Received::Packet { sequence, acks })
            .map_err(StackReceiveError::Messages)
    }
}

/// Hands a packet's payload to `layer`: accepted when the layer reads it, postponed
/// when the layer has no room for it now (flow control: not acked, so the peer
/// resends it, but its acks release what the peer already has), refused when
/// malformed (its acks ignored). Returns the layer's verdict and the acks applied.
/// A bare packet endpoint as the layer's [`Carrier`]: the payload is sent at once, its
/// datagrams handed to `transmit`.
struct EndpointCarrier<'a, F> {
    endpoint: &'a mut Endpoint,
    payload: &'a mut Vec<u8>,
    transmit: F,
}

impl<F: FnMut(&[u8])> Carrier for EndpointCarrier<'_, F> {
    type Sent = Sent;
    type Error = packet::PacketSendError;

    fn ack_time(&self) -> Option<std::time::Duration> {
        Some(self.endpoint.estimates().ack_time())
    }

    fn send_with(
        &mut self,
        now: Time,
        write: impl FnOnce(Sequence, &mut Vec<u8>),
    ) -> Result<Sent, packet::PacketSendError> {
        self.payload.clear();
        write(self.endpoint.next_sequence(), self.payload);
        self.endpoint.send(now, self.payload, &mut self.transmit)
    }
}

/// Every glue of a layer to an endpoint (this stack, the transport's) receives so.
pub(crate) fn deliver<M: NetMessage>(
    layer: &mut MessageLayer<M>,
    scratch: &mut Scratch<M>,
    packet: PendingPacket<'_>,
) -> (Result<(), PayloadError>, Acks) {
    let read = layer.read_packet_in(scratch, packet.payload());
    let acks = match read {
        Ok(()) => packet.accept(),
        Err(e) if e.is_malformed() => {
            packet.refuse();
            Acks::EMPTY
        }
        Err(_) => packet.postpone(),
    };
    for sequence in &acks {
        layer.on_packet_acked(sequence);
    }
    (read, acks)
}
