//! Message channels and the packet packer: reliable (ordered or unordered),
//! unreliable (unordered or sequenced), blocks, and how channels share packets.
//!
//! [`MessageLayer`] is sans-IO and generic over a message set `M: NetMessage` (a
//! derived enum: its serialize function writes the type id, then the body). It keeps
//! a list of configured channels ([`LayerConfig`], [`ChannelConfig`]), each named by a
//! [`ChannelId`] ([`LayerConfig::add`] returns it):
//!
//! * [`send`](MessageLayer::send) measures a message and queues it, or refuses it at
//!   once: [`ChannelSendError::TooLarge`] if it can never fit, [`ChannelSendError::QueueFull`] for
//!   back-pressure (never a silent drop);
//! * [`write_packet`](MessageLayer::write_packet) fills one packet payload up to its
//!   bit budget, measuring before writing, and remembers which reliable messages (and
//!   block fragments) went into which packet sequence;
//! * [`read_packet`](MessageLayer::read_packet) validates a whole payload before it
//!   applies any of it: a payload that fails is dropped whole;
//! * [`on_packet_acked`](MessageLayer::on_packet_acked) releases what an acked packet
//!   carried;
//! * [`receive`](MessageLayer::receive) hands messages to the application.
//!
//! [`MessageStack`] glues a layer to a [`packet::Endpoint`](crate::packet::Endpoint).
//!
//! # Reliable-ordered channel
//!
//! Message ids are `u16` and wrap. The sender walks ids from the oldest unacked one,
//! never includes an id at or beyond `oldest unacked + receive_queue_size`, includes
//! each message not sent within the last resend interval (`resend_interval`, or
//! `resend_rtt_factor` round trips when longer) that still fits the
//! remaining bits, and stops at `max_messages_per_packet`: a burst of hundreds of
//! messages never makes a large packet, the rest waits in the queue. Acks release
//! messages. The receiver buffers by id and delivers strictly in order, drops
//! duplicates, refuses (does not ack) a packet carrying ids it has no room for yet
//! because the application has not taken earlier messages ([`PayloadError::ReceiveQueueFull`]:
//! the sender resends later), and treats an id no conforming sender could send (at
//! or beyond the first missing id + `receive_queue_size`, up to half the id space:
//! [`PayloadError::OutsideWindow`]) as a protocol error for the connection. Ids in the
//! half of the id space behind the first missing one are duplicates: a resend can be
//! overtaken in the network by packets sent after the window moved on.
//!
//! A message larger than the channel's inline limit, on a channel with
//! [`BlockConfig`], is encoded once and sent as a block: fragments of
//! `fragment_size` bytes, up to `max_fragments_per_packet` per packet, each acked and
//! resent on its own. A block takes one message id, so it is delivered in order with
//! the channel's other messages. At most `max_blocks_in_flight` blocks per channel
//! have fragments out (the oldest unacked ones; each packet carries fragments of one
//! of them), which bounds reassembly memory to that many `max_block_size` buffers per
//! channel and block throughput to that many blocks per round trip; messages before
//! and after them keep flowing around them.
//!
//! # Reliable-unordered channel
//!
//! The same sender, ids, window, acks, resends and blocks as the reliable-ordered
//! channel, and the same wire format; the receiver delivers each message as soon as
//! it arrives (a lost packet delays only what it carried). A delivered message
//! leaves its id in its slot until every earlier id has arrived and been delivered,
//! so that a late resend of it is still a duplicate; undelivered messages hold the
//! window as on an ordered channel.
//!
//! # Sequenced channel
//!
//! Unreliable (each message sent at most once, oldest first), but each message
//! carries an id: the sender numbers messages as it writes them (so the ids of one
//! entry are consecutive), the receiver keeps the newest id it has seen and drops a
//! message that is not newer (counted in [`LayerStats::messages_dropped_stale`]): what is
//! delivered is always newer than what was delivered before. For state that
//! supersedes itself (positions, "latest input").
//!
//! # Sharing packets between channels
//!
//! Each packet, every channel with something queued earns its share of the packet's
//! bits, `weight / (sum of the weights of the channels with something queued)`, as
//! credit, and pays for the bits it takes (credit is bounded by four packets either
//! way; a channel with nothing queued has none). The channels are then offered the
//! packet in this order: first those whose credit is not negative (they have not
//! taken more than their share), then the others; within each group by
//! [`priority`](ChannelConfig::priority) (higher first), then by credit (more first),
//! then by index. Each takes what it has due up to its
//! [`max_bits_per_packet`](ChannelConfig::max_bits_per_packet) and the bits left.
//!
//! So a channel that keeps to its share (a 20 Hz snapshot, inputs, chat) goes first
//! in the packets it needs, whatever its index, and a channel that wants everything
//! (a download) fills the rest and gets every packet the others leave; when two
//! channels both want more than their share, they get it in proportion to their
//! weights: no channel starves another. The defaults: every preset has weight 1 and
//! priority 1, but [`ChannelConfig::bulk`] has priority 0 (behind the game's channels
//! while they keep to their share). Priority and weight are local: the peer need not
//! use the same values, and they are not part of the protocol id.
//!
//! The packer records whether something due did not fit a packet
//! ([`MessageLayer::more_to_send`]): the transport's stacks then send another packet in
//! the same update, as far as the congestion mode's rate allows.
//!
//! # Memory
//!
//! Everything is bounded by the configuration, whatever the peer sends: per channel,
//! `send_queue_size` queued messages (a block holds its encoded bytes, at most
//! `max_block_size`), `receive_queue_size` received messages, `max_blocks_in_flight`
//! reassembly buffers of at most `max_block_size` bytes; per layer, `sent_packets_buffer_size` packet
//! records and a staging area no larger than one payload's messages.
//! [`LayerConfig::memory_bound`] adds these up into one figure in bytes.
//!
//! # Unreliable channel
//!
//! Each message is written into at most one packet, oldest first; a full send queue
//! refuses new messages ([`ChannelSendError::QueueFull`]), a full receive queue drops new
//! arrivals (counted in [`LayerStats::messages_dropped_receive_queue_full`]).
//!
//! # Packet layout
//!
//! Written with the bit streams (least significant bit first). `n` is the number of
//! channels; `[a, b]` is a ranged integer of `bits_required(a, b)` bits.
//!
//! ```text
//! payload   = entries:[0, n]  entry*  zero padding to a byte
//! entry     = channel:[0, n-1]            strictly increasing within a payload
//!             count:[0, max_messages_per_packet]
//!             has_fragments:1
//!             messages                    `count` of them
//!             fragments?                  if has_fragments (reliable + blocks only)
//! messages  = reliable, sequenced: first_id:16 message, then (relative_id message)*
//!             unreliable:          message*
//! relative_id = serialize_relative(previous id, id): 1 bit for +1, tiers beyond
//!             (ids of one entry increase and span less than receive_queue_size;
//!             on a sequenced channel they are consecutive, so 1 bit each, and span
//!             less than max_messages_per_packet)
//! message   = type id and body: the message set's serialize function
//! fragments = block_id:16  block_size:[1, max_block_size]
//!             fragment_count:[1, max_fragments_per_packet]
//!             (index:[0, max_fragments-1]  align  bytes)*   indexes increasing;
//!             every fragment is fragment_size bytes but the block's last
//! ```
//!
//! An entry with no messages and no fragments is malformed. A block's bytes are the
//! message encoded by itself (type id, body, zero padding).
//!
//! The layout is written once, as one walk generic over [`Stream`](crate::Stream):
//! writing a packet, reading one, and measuring what a message or fragment would add
//! to the packet being filled all run it (or its parts), so they cannot disagree.
//!
//! ```
//! use netproto::Time;
//! use netproto::NetMessage;
//! use netproto::channel::{ChannelId, LayerConfig, MessageLayer};
//! use netproto::packet::Sequence;
//!
//! #[derive(NetMessage, Debug, PartialEq)]
//! enum Msg {
//!     Hello(#[net(range = 0..=100)] u8),
//!     Bye,
//! }
//!
//! let config = LayerConfig::default(); // ChannelId::RELIABLE and ChannelId::UNRELIABLE
//! let mut a = MessageLayer::<Msg>::new(config.clone())?;
//! let mut b = MessageLayer::<Msg>::new(config)?;
//! a.send(ChannelId::RELIABLE, Msg::Hello(42))?;
//! a.send(ChannelId::RELIABLE, Msg::Bye)?;
//!
//! let mut payload = Vec::new();
//! a.write_packet(Time::ZERO, Sequence(0), &mut payload);
//! b.read_packet(&payload)?;
//! assert_eq!(b.receive(ChannelId::RELIABLE), Some(Msg::Hello(42)));
//! assert_eq!(b.receive(ChannelId::RELIABLE), Some(Msg::Bye));
//!
//! // The packet endpoint tells `a` that packet 0 was acked: the messages are released.
//! assert_eq!(a.send_queue_len(ChannelId::RELIABLE), 2);
//! a.on_packet_acked(Sequence(0));
//! assert_eq!(a.send_queue_len(ChannelId::RELIABLE), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod block;
mod carrier;
mod config;
mod encoded;
mod error;
mod id;
mod layer_config;
mod memory;
mod payload;
mod receive;
mod reliable;
mod ring;
mod scratch;
mod select;
mod send;
mod sender;
mod sent;
mod stack;
mod stats;
mod typed;
mod unreliable;
mod writer;

pub use crate::sequence::Receipt;
pub use block::BlockProgress;
pub(crate) use carrier::Carrier;
pub use config::{
    BULK_BITS_PER_PACKET, BlockConfig, ChannelConfig, ChannelKind, MAX_CHANNELS, MAX_QUEUE_SIZE,
    MESSAGE_ID_BITS,
};
pub use encoded::Encoded;
pub(crate) use encoded::EncodedPool;
pub use error::{ChannelSendError, PayloadError};
pub use id::ChannelId;
pub use layer_config::{LayerConfig, LayerConfigError};
pub(crate) use scratch::Scratch;
pub(crate) use stack::deliver;
pub use stack::{MessageStack, StackConfigError, StackReceiveError, check_pair};
pub use stats::{ChannelStats, LayerStats};
pub use typed::{Carries, Channel};

use std::sync::Arc;
use std::time::Duration;

use crate::Time;
use crate::packet::Sequence;
use crate::stream::NetMessage;
use receive::ReceiveSide;
use send::SendSide;

/// The sans-IO message layer: channels, packing, acks, delivery. See the
/// [module documentation](self) for the algorithms and the packet layout.
///
/// It composes its two sides, each owning its state: the send side (`send.rs`: the
/// send queues, the selection and credits, the packet writer, the record of what
/// each packet carried, the round trip) and the receive side (`receive.rs`: the
/// receive queues, block reassembly, the staging and validation of a payload).
#[derive(Debug)]
pub struct MessageLayer<M> {
    /// Shared by a server's connections (one allocation read by all of them, warm in
    /// the cache from one to the next).
    config: Arc<LayerConfig>,
    send: SendSide<M>,
    receive: ReceiveSide<M>,
    /// The layer's event totals (the queue lengths are read when reported).
    counters: LayerStats,
    /// Each channel's event totals, by channel index (likewise).
    channel_counters: Box<[ChannelStats]>,
    /// The scratch space of [`write_packet`](Self::write_packet) and
    /// [`read_packet`](Self::read_packet); a stack lends its own instead
    /// (`scratch.rs`).
    scratch: Scratch<M>,
}

impl<M> MessageLayer<M> {
    /// Asks the CPU for the layer's own fields that a received payload reads: the
    /// first stage of a batch's prefetch (`crate::prefetch`; their addresses need no
    /// loads).
    #[inline]
    pub(crate) fn prefetch_fields(&self) {
        crate::prefetch::prefetch(&self.receive);
        crate::prefetch::prefetch(&self.counters);
        crate::prefetch::prefetch(&self.channel_counters);
        self.send.prefetch_fields();
    }

    /// The second stage: each channel's receive and send state, the newest packet's
    /// record.
    #[inline]
    pub(crate) fn prefetch_channels(&self) {
        self.receive.prefetch_channels();
        self.send.prefetch_channels();
        crate::prefetch::prefetch_at(&self.channel_counters, 0);
    }

    /// The third stage: the queue slots the payload's messages and acks touch.
    #[inline]
    pub(crate) fn prefetch_queues(&self) {
        self.receive.prefetch_queues();
        self.send.prefetch_queues();
    }
}

impl<M: NetMessage> MessageLayer<M> {
    /// A layer with `config`, validated against the message set's `M::MAX_BITS`, and
    /// what its channels are declared to carry against the set's types.
    pub fn new(config: LayerConfig) -> Result<Self, LayerConfigError> {
        Self::with_shared_config(Arc::new(config))
    }

    /// [`new`](Self::new) with a configuration shared with other layers (a server's
    /// stack gives one to every connection's layer).
    pub(crate) fn with_shared_config(config: Arc<LayerConfig>) -> Result<Self, LayerConfigError> {
        config.validate(M::MAX_BITS)?;
        config.validate_carries(M::SCHEMA.fingerprint())?;
        Ok(Self {
            send: SendSide::new(&config),
            receive: ReceiveSide::new(&config),
            channel_counters: vec![ChannelStats::default(); config.channels.len()]
                .into_boxed_slice(),
            config,
            counters: LayerStats::default(),
            scratch: Scratch::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LayerConfig {
        &self.config
    }

    /// Sets the round-trip time estimate that channels with a
    /// [`resend_rtt_factor`](ChannelConfig::resend_rtt_factor) scale their resend
    /// interval by. Ignored unless positive.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.send.set_rtt(rtt);
    }

    /// `true` when something is new since the last packet written: a message was
    /// queued, or the last packet could not hold everything due
    /// ([`more_to_send`](Self::more_to_send)). Without news a packet would carry only
    /// acks and resends: the transport's stacks then send at most
    /// [`IDLE_PACKET_RATE`](crate::transport::IDLE_PACKET_RATE) packets a second.
    pub fn has_news(&self) -> bool {
        self.send.has_news()
    }

    /// `true` when everything sent is through: every reliable message (and block) is
    /// acked, and every unreliable one written into a packet. A graceful disconnect
    /// waits for this.
    pub fn is_flushed(&self) -> bool {
        self.send.is_flushed()
    }

    /// `true` when the last [`write_packet`](Self::write_packet) left something that
    /// was due and did not fit (the packet budget or a per-packet limit ran out): a
    /// driver that may send more than one packet per tick sends another now. The
    /// transport's stacks do, as far as the congestion mode's rate allows.
    pub fn more_to_send(&self) -> bool {
        self.send.more_to_send()
    }

    /// The first protocol error the peer committed (an id outside the receive
    /// window), if any: the connection should be closed.
    pub fn protocol_error(&self) -> Option<PayloadError> {
        self.receive.protocol_error()
    }

    /// Queues `message` on `channel`.
    ///
    /// The message is measured and written once into a scratch buffer (so a field
    /// outside its declared range is caught here, naming the field, and never goes on
    /// the wire). On a reliable channel with blocks, a message above the inline limit
    /// is encoded as a block.
    ///
    /// Errors: [`ChannelSendError::NoSuchChannel`]; [`ChannelSendError::WrongType`] when
    /// the channel is declared for other types ([`ChannelConfig::carries`]);
    /// [`ChannelSendError::ValueTooLong`] when a string or sequence is longer than its
    /// declared `max_len` (naming the field, its length and the limit);
    /// [`ChannelSendError::Invalid`] when another value is out of its declared range;
    /// [`ChannelSendError::TooLarge`] when a message within its bounds can never be
    /// sent on this channel; [`ChannelSendError::QueueFull`] when the send queue is
    /// full (back-pressure: retry later).
    pub fn send(&mut self, channel: ChannelId, message: M) -> Result<(), ChannelSendError> {
        self.send
            .send(&self.config, channel, message, &mut self.counters)?;
        self.count_sent(channel);
        Ok(())
    }

    /// Queues `message` on the unreliable `channel` as [`send`](Self::send) does, and
    /// tracks it: [`poll_receipt`](Self::poll_receipt) returns its [`Receipt`] once
    /// the peer acked a packet that carried it. For what must know which messages
    /// arrived without resending them: delta snapshots
    /// ([`SnapshotSender::sent_with`](crate::delta::SnapshotSender::sent_with)). A
    /// reliable channel refuses with [`ChannelSendError::NotTracked`] (its messages
    /// arrive anyway).
    ///
    /// ```
    /// use netproto::channel::{ChannelId, LayerConfig, MessageLayer, Receipt};
    /// # #[derive(netproto::NetMessage, Debug, Clone)]
    /// # #[net(message_set)]
    /// # enum Msg { Ping(Ping) }
    /// # #[derive(netproto::NetMessage, Debug, Clone)]
    /// # struct Ping { tick: u32 }
    /// let mut layer = MessageLayer::<Msg>::new(LayerConfig::default())?;
    /// let receipt = layer.send_tracked(ChannelId::UNRELIABLE, Msg::Ping(Ping { tick: 1 }))?;
    /// assert_eq!(receipt, Receipt(0));
    /// let mut payload = Vec::new();
    /// layer.write_packet(netproto::Time::ZERO, netproto::packet::Sequence(9), &mut payload);
    /// assert_eq!(layer.poll_receipt(ChannelId::UNRELIABLE), None); // not acked yet
    /// layer.on_packet_acked(netproto::packet::Sequence(9));
    /// assert_eq!(layer.poll_receipt(ChannelId::UNRELIABLE), Some(Receipt(0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_tracked(
        &mut self,
        channel: ChannelId,
        message: M,
    ) -> Result<Receipt, ChannelSendError> {
        self.send.check_trackable(&self.config, channel)?;
        self.send(channel, message)?;
        Ok(Receipt(self.send.track_last(channel).unwrap_or_default()))
    }

    /// The oldest receipt of a tracked message of `channel` that reached the peer and
    /// was not taken yet (see [`send_tracked`](Self::send_tracked)). A channel keeps
    /// at most its `send_queue_size` receipts: poll every tick, or the oldest go.
    pub fn poll_receipt(&mut self, channel: ChannelId) -> Option<Receipt> {
        self.send.pop_receipt(channel).map(Receipt)
    }

    /// Queues `message` on `channel`, a channel declared for its type alone
    /// ([`LayerConfig::add_typed`], [`LayerConfig::typed`]): another type does not
    /// compile. Otherwise as [`send`](Self::send).
    pub fn send_on<T: Into<M>>(
        &mut self,
        channel: Channel<T>,
        message: T,
    ) -> Result<(), ChannelSendError> {
        self.send(channel.id(), message.into())
    }

    /// Queues a message encoded once ([`Encoded`]) on `channel`, as
    /// [`send`](Self::send) would queue the message: the same refusals, the same
    /// delivery, but its bits are copied into the packet instead of written again
    /// (a broadcast queues one [`Encoded`] on many layers). On a channel with blocks a
    /// message above the inline limit becomes a block of its encoded bytes.
    pub fn send_encoded(
        &mut self,
        channel: ChannelId,
        encoded: &Encoded,
    ) -> Result<(), ChannelSendError> {
        self.send
            .send_encoded(&self.config, channel, encoded, &mut self.counters)?;
        self.count_sent(channel);
        Ok(())
    }

    /// A message accepted on `channel`, counted in its channel's totals (the layer's
    /// are counted by the send side).
    fn count_sent(&mut self, channel: ChannelId) {
        if let Some(c) = self.channel_counters.get_mut(channel.index()) {
            c.messages_sent += 1;
        }
    }

    /// What the layer counted since it was made, and what its queues hold now.
    pub fn stats(&self) -> LayerStats {
        let channels = (0..self.config.channels.len()).map(ChannelId::new);
        LayerStats {
            send_queue_len: channels.clone().map(|c| self.send_queue_len(c)).sum(),
            receive_queue_len: channels.map(|c| self.receive_queue_len(c)).sum(),
            ..self.counters
        }
    }

    /// What `channel` counted since the layer was made, and what its queues hold now;
    /// `None` if the layer has no such channel.
    pub fn channel_stats(&self, channel: ChannelId) -> Option<ChannelStats> {
        let counters = self.channel_counters.get(channel.index())?;
        Some(ChannelStats {
            send_queue_len: self.send_queue_len(channel),
            receive_queue_len: self.receive_queue_len(channel),
            ..*counters
        })
    }

    /// `true` when `channel` has room for one more message right now.
    pub fn can_send(&self, channel: ChannelId) -> bool {
        self.send_queue_len(channel)
            < self
                .config
                .channels
                .get(channel.index())
                .map_or(0, |c| c.send_queue_size)
    }

    /// Messages queued on `channel` and not released: for a reliable channel, sent or
    /// not and not acked; for an unreliable one, not sent yet.
    pub fn send_queue_len(&self, channel: ChannelId) -> usize {
        self.send.queue_len(channel)
    }

    /// Messages received on `channel` and buffered, not taken by
    /// [`receive`](Self::receive) (reliable: including those waiting for an earlier
    /// one).
    pub fn receive_queue_len(&self, channel: ChannelId) -> usize {
        self.receive.queue_len(channel)
    }

    /// The next message of `channel`: in send order on a reliable channel, in arrival
    /// order on an unreliable one.
    pub fn receive(&mut self, channel: ChannelId) -> Option<M> {
        let message = self.receive.receive(channel, &mut self.counters)?;
        if let Some(c) = self.channel_counters.get_mut(channel.index()) {
            c.messages_received += 1;
        }
        Some(message)
    }

    /// How far the oldest block queued on `channel` has come: its bytes acked by the
    /// peer of its total (a loading bar on the sending side). `None` when no block is
    /// queued (an acked block is released at once: poll while it is in flight).
    pub fn send_progress(&self, channel: ChannelId) -> Option<BlockProgress> {
        self.send.progress(channel)
    }

    /// How far the block being reassembled on `channel` (the one with the lowest id)
    /// has come: its bytes received of its total (a loading bar on the receiving
    /// side). `None` when no block is in reassembly: before its first fragment, and
    /// once complete (then it is delivered, or waits in the receive queue).
    pub fn receive_progress(&self, channel: ChannelId) -> Option<BlockProgress> {
        self.receive.progress(channel)
    }

    /// Writes the next packet payload into `out` (cleared first) and returns its
    /// length in bytes, at most `max_packet_bits / 8` rounded up.
    ///
    /// `sequence` is the packet sequence the payload will be sent under (the packet
    /// endpoint's [`next_sequence`](crate::packet::Endpoint::next_sequence)): the
    /// layer remembers which reliable messages and fragments went into it, and
    /// releases them when [`on_packet_acked`](Self::on_packet_acked) names it. With
    /// nothing to send the payload is one byte (no entries): send it anyway, it
    /// carries the packet header's acks.
    pub fn write_packet(&mut self, now: Time, sequence: Sequence, out: &mut Vec<u8>) -> usize {
        let mut scratch = core::mem::take(&mut self.scratch);
        let len = self.write_packet_in(&mut scratch, now, sequence, out);
        self.scratch = scratch;
        len
    }

    /// [`write_packet`](Self::write_packet) with `scratch` lent by a stack.
    pub(crate) fn write_packet_in(
        &mut self,
        scratch: &mut Scratch<M>,
        now: Time,
        sequence: Sequence,
        out: &mut Vec<u8>,
    ) -> usize {
        self.send.write_packet(
            &self.config,
            &mut scratch.selection,
            now,
            sequence,
            out,
            &mut self.counters,
            &mut self.channel_counters,
        )
    }

    /// Reads a packet payload written by a peer's [`write_packet`](Self::write_packet).
    ///
    /// The whole payload is decoded and validated before anything is applied: on any
    /// error nothing of it is delivered, the error is counted, and the caller must not
    /// ack the packet. [`PayloadError::OutsideWindow`] is also recorded as the
    /// connection's [`protocol_error`](Self::protocol_error);
    /// [`PayloadError::ReceiveQueueFull`] is flow control, not an attack.
    pub fn read_packet(&mut self, payload: &[u8]) -> Result<(), PayloadError> {
        let mut scratch = core::mem::take(&mut self.scratch);
        let read = self.read_packet_in(&mut scratch, payload);
        self.scratch = scratch;
        read
    }

    /// [`read_packet`](Self::read_packet) with `scratch` lent by a stack.
    pub(crate) fn read_packet_in(
        &mut self,
        scratch: &mut Scratch<M>,
        payload: &[u8],
    ) -> Result<(), PayloadError> {
        self.receive.read_packet(
            &self.config,
            &mut scratch.staged,
            payload,
            &mut self.counters,
        )
    }

    /// The packet `sequence` was acked by the peer: release the reliable messages and
    /// fragments it carried. Unknown or already processed sequences are ignored.
    pub fn on_packet_acked(&mut self, sequence: Sequence) {
        self.send.on_packet_acked(sequence, &mut self.counters);
    }

    /// The send step: the layer takes the link's round trip (for its resend timing),
    /// then writes the next payload under the sequence the link gives it. Returns what
    /// the link said and the payload's size in bytes.
    pub(crate) fn send_over<L: Carrier>(
        &mut self,
        scratch: &mut Scratch<M>,
        now: Time,
        link: &mut L,
    ) -> Result<(L::Sent, usize), L::Error> {
        if let Some(ack_time) = link.ack_time() {
            self.set_rtt(ack_time);
        }
        let mut size = 0;
        let sent = link.send_with(now, |sequence, buf| {
            self.write_packet_in(scratch, now, sequence, buf);
            size = buf.len();
        })?;
        Ok((sent, size))
    }
}
