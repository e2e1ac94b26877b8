//! Configuration of the message layer and its channels, validated up front.

use std::time::Duration;

use super::payload::{
    entry_header_bits, fragment_bits, frame_bits, group_header_bits, message_id_bits,
};

/// Most channels one layer can have.
pub const MAX_CHANNELS: usize = 64;

/// Largest send or receive queue: half the 16-bit message id space, so that "older
/// than the window" stays unambiguous.
pub const MAX_QUEUE_SIZE: usize = 32768;

/// Bits of a message id written in full (the first of an entry, and a block's).
pub const MESSAGE_ID_BITS: usize = 16;

/// What a channel guarantees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChannelKind {
    /// Every message is delivered exactly once and in send order, resent until acked;
    /// messages larger than a packet travel as blocks (see [`BlockConfig`]).
    ReliableOrdered,
    /// Every message is delivered exactly once, resent until acked, as soon as it
    /// arrives (a lost packet delays only what it carried); blocks as for
    /// [`ReliableOrdered`](Self::ReliableOrdered).
    ReliableUnordered,
    /// Every message is sent at most once, best effort; what arrives is delivered in
    /// arrival order.
    UnreliableUnordered,
    /// Every message is sent at most once, best effort, with a message id; a message
    /// older than the newest one received (by id) is dropped on arrival, so that what
    /// is delivered is always newer than what was delivered before ("latest only":
    /// state that supersedes itself).
    UnreliableSequenced,
}

impl ChannelKind {
    /// `true` for the kinds that resend until acked (and may carry blocks).
    pub fn is_reliable(self) -> bool {
        matches!(self, Self::ReliableOrdered | Self::ReliableUnordered)
    }

    /// `true` for the kinds whose messages carry ids on the wire (all but
    /// [`UnreliableUnordered`](Self::UnreliableUnordered)).
    pub fn has_ids(self) -> bool {
        !matches!(self, Self::UnreliableUnordered)
    }
}

/// Blocks: messages larger than one packet, sent over a reliable channel as fragments
/// that are each acked and resent on their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockConfig {
    /// Largest block, in bytes of the encoded message (type id + body), at most
    /// 16 MiB. A queued block holds this many bytes at most (plus 9 bytes of
    /// bookkeeping per fragment), and so does each reassembly of the receiver (plus
    /// about 2 bytes per fragment), which grows with the fragments received, not with
    /// the size the block declares.
    pub max_block_size: usize,
    /// Bytes per fragment (the last fragment of a block holds the rest), at most
    /// 65536; a block has at most 65536 fragments.
    pub fragment_size: usize,
    /// Most fragments in one packet (1 to 256). With `fragment_size` it bounds the
    /// block bytes one packet carries, and so a transfer's rate: packets per second
    /// (the congestion mode's rate, [`CongestionConfig`](crate::connection::CongestionConfig))
    /// times the block bytes per packet, which the channel's
    /// [`max_bits_per_packet`](ChannelConfig::max_bits_per_packet) and the layer's
    /// [`max_packet_bits`](LayerConfig::max_packet_bits) cap in turn.
    pub max_fragments_per_packet: usize,
    /// Most blocks with fragments out at once (the oldest unacked ones), 1 to 64. A
    /// block needs at least a round trip, so this bounds blocks per round trip; the
    /// receiver reassembles at most this many blocks at once, each holding what it
    /// received of it (up to `max_block_size`).
    pub max_blocks_in_flight: usize,
}

impl Default for BlockConfig {
    /// 64 KiB blocks in 256-byte fragments, up to 3 per packet, 4 blocks in flight.
    fn default() -> Self {
        Self {
            max_block_size: 64 * 1024,
            fragment_size: 256,
            max_fragments_per_packet: 3,
            max_blocks_in_flight: 4,
        }
    }
}

impl BlockConfig {
    /// Blocks for large transfers ([`ChannelConfig::bulk`]): up to 1 MiB in
    /// 1024-byte fragments, up to 8 per packet (8 KiB: the bulk channel's budget
    /// takes 8, a packet that carries the game's messages too fewer), 2 blocks in
    /// flight (2 MiB of reassembly at most).
    ///
    /// Until issue 25 the preset sent 128-byte fragments, 7 to a
    /// 1 KiB packet: 120 packets per second moved about 107 KB/s whatever else was
    /// set (see the guide, "Bulk transfers and their rate").
    pub fn bulk() -> Self {
        Self {
            max_block_size: 1024 * 1024,
            fragment_size: 1024,
            max_fragments_per_packet: 8,
            max_blocks_in_flight: 2,
        }
    }

    /// Fragments of the largest block: `ceil(max_block_size / fragment_size)`.
    pub fn max_fragments(&self) -> usize {
        self.max_block_size.div_ceil(self.fragment_size.max(1))
    }
}

/// One channel.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelConfig {
    /// Reliable-ordered or unreliable.
    pub kind: ChannelKind,
    /// Messages queued for sending (reliable: sent and not yet acked, too). A power of
    /// two in `1..=32768`, so that it divides 65536 and the id ring wraps cleanly.
    /// A full queue refuses [`send`](super::MessageLayer::send) with
    /// [`ChannelSendError::QueueFull`](super::ChannelSendError::QueueFull): it never grows.
    pub send_queue_size: usize,
    /// Messages buffered on receipt and not yet taken by [`receive`]. A power of two
    /// in `1..=32768`. For a reliable channel it is also the window: the sender never
    /// sends an id at or beyond `oldest unacked + receive_queue_size`. Both ends must
    /// use the same value. A full queue never grows: a reliable channel refuses the
    /// packet (not acked, so resent later), an unreliable one drops the message.
    ///
    /// [`receive`]: super::MessageLayer::receive
    pub receive_queue_size: usize,
    /// How long an unacked reliable message (or fragment) waits before it is sent
    /// again, at least (see `resend_rtt_factor`).
    pub resend_interval: Duration,
    /// When above 0, the resend interval is at least this many round trips (as last
    /// given to [`set_rtt`](super::MessageLayer::set_rtt); the
    /// [`MessageStack`](super::MessageStack) passes the endpoint's estimate, the
    /// transport the connection's). 1.25 for [`reliable`](Self::reliable); 0 keeps
    /// the algorithm's fixed interval. An ack takes a round trip plus the wait for the
    /// peer's next packet, so a fixed 0.1 s interval resends every message of a burst
    /// before its ack can arrive once the round trip nears 100 ms (twice the traffic:
    /// the megapacket test), and at long round trips resends the oldest messages every
    /// few packets, leaving little room for new ones; 1.25 sends each message about
    /// once per round trip.
    pub resend_rtt_factor: f64,
    /// Most messages of this channel in one packet, 1 to 1024 (also what a received
    /// packet may carry: more is malformed).
    pub max_messages_per_packet: usize,
    /// Most bits this channel's entry may take in one packet (header included). It must
    /// hold at least one maximal message, or one fragment when blocks are enabled.
    pub max_bits_per_packet: usize,
    /// The largest message this channel carries inline, in bits; `None` for the
    /// message set's [`NetMessage::MAX_BITS`](crate::NetMessage::MAX_BITS). The budget
    /// must hold one such message; `send` refuses a larger one (or, with blocks, sends
    /// it as a block). Lets a channel for small messages share a message set with
    /// large ones.
    pub max_message_bits: Option<usize>,
    /// Blocks (reliable channels only): `None` disables them.
    pub blocks: Option<BlockConfig>,
    /// Sharing: channels with higher priority are offered a packet first, among the
    /// channels that have not used more than their share (see
    /// [`weight`](Self::weight) and the [module documentation](super#sharing-packets-between-channels)).
    /// 1 for every preset but [`bulk`](Self::bulk) (0). Local: the peer need not agree.
    pub priority: u8,
    /// Sharing: this channel's share of the packets, against the weights of the other
    /// channels that have something to send, 1 to 1024 (1 for every preset). A
    /// channel that used more than its share waits behind those that did not, so no
    /// channel starves another. Local: the peer need not agree.
    pub weight: u32,
    /// The message types this channel is declared for
    /// ([`carries`](Self::carries)): `send` refuses any other type at once
    /// ([`ChannelSendError::WrongType`](super::ChannelSendError::WrongType)). Empty
    /// (every type goes) for every preset. Local: the peer need not agree.
    pub carries: super::Carries,
}

impl ChannelConfig {
    /// A reliable-ordered channel: queues of 1024, resend after 0.1 s or 1.25 round
    /// trips, whichever is longer, at most 64 messages and 7936 bits per packet, no
    /// blocks.
    pub fn reliable() -> Self {
        Self {
            kind: ChannelKind::ReliableOrdered,
            send_queue_size: 1024,
            receive_queue_size: 1024,
            resend_interval: Duration::from_millis(100),
            resend_rtt_factor: 1.25,
            max_messages_per_packet: 64,
            max_bits_per_packet: 7936,
            max_message_bits: None,
            blocks: None,
            priority: 1,
            weight: 1,
            carries: super::Carries::default(),
        }
    }

    /// A reliable-unordered channel: as [`reliable`](Self::reliable), but each message
    /// is delivered as soon as it arrives.
    pub fn reliable_unordered() -> Self {
        Self {
            kind: ChannelKind::ReliableUnordered,
            ..Self::reliable()
        }
    }

    /// An unreliable channel: queues of 256, at most 64 messages and 7936 bits per
    /// packet.
    pub fn unreliable() -> Self {
        Self {
            kind: ChannelKind::UnreliableUnordered,
            send_queue_size: 256,
            receive_queue_size: 256,
            resend_interval: Duration::ZERO,
            resend_rtt_factor: 0.0,
            max_messages_per_packet: 64,
            max_bits_per_packet: 7936,
            max_message_bits: None,
            blocks: None,
            priority: 1,
            weight: 1,
            carries: super::Carries::default(),
        }
    }

    /// A sequenced unreliable channel ("latest only": a message older than the newest
    /// received is dropped): as [`unreliable`](Self::unreliable) otherwise.
    pub fn sequenced() -> Self {
        Self {
            kind: ChannelKind::UnreliableSequenced,
            ..Self::unreliable()
        }
    }

    /// A channel for large transfers (maps, assets, saves): reliable-ordered with
    /// [`BlockConfig::bulk`] (blocks up to 1 MiB in 1024-byte fragments, 8 a
    /// packet), a budget of [`BULK_BITS_PER_PACKET`] (8 fragments and their
    /// headers), priority 0 so that the game's own channels go first in each packet
    /// while they keep to their share, queues of 64 messages.
    ///
    /// **Its rate.** A transfer moves `packets per second x block bytes per packet`:
    /// the congestion mode's rate ([`CongestionConfig::good_rate`](crate::connection::CongestionConfig::good_rate),
    /// 30 by default; [`bad_rate`](crate::connection::CongestionConfig::bad_rate), 10,
    /// above [`rtt_threshold`](crate::connection::CongestionConfig::rtt_threshold),
    /// 250 ms: the article's values), at most two per transport update, times 8 KiB
    /// here. The bulk preset's connection side is
    /// [`CongestionConfig::bulk`](crate::connection::CongestionConfig::bulk) (120 and
    /// 30), on both peers. The block bytes per packet are the other setting:
    /// [`BlockConfig::max_fragments_per_packet`] x [`BlockConfig::fragment_size`]
    /// within this budget, and the layer's [`max_packet_bits`](LayerConfig::max_packet_bits),
    /// which [`LayerConfig::with_channels`] raises to hold it. Measured on the
    /// simulator (`tests/tests/bulk_throughput.rs`, 60 Hz updates, 1% loss each way):
    /// with `CongestionConfig::bulk` a 1 MB map in 1.12 s at a 50 ms round trip
    /// (895 kB/s) and 4.6 s at 300 ms (bad mode: 217 kB/s), while 20 Hz snapshots on
    /// the same connection keep their latency; at the default rates 4.8 s (210 kB/s)
    /// and 15.2 s (66 kB/s). The trade-off: a packet of 8 KiB leaves as 9 datagrams,
    /// and the loss of any loses the packet (8% of them at 1% loss), snapshots with
    /// it; a smaller budget is gentler on a thin link and slower. Follow progress with
    /// [`MessageLayer::send_progress`](super::MessageLayer::send_progress) and
    /// [`receive_progress`](super::MessageLayer::receive_progress).
    pub fn bulk() -> Self {
        Self {
            priority: 0,
            max_bits_per_packet: BULK_BITS_PER_PACKET,
            ..Self::reliable()
                .with_queues(64, 64)
                .with_blocks(BlockConfig::bulk())
        }
    }

    /// This channel with blocks enabled.
    #[must_use]
    pub fn with_blocks(mut self, blocks: BlockConfig) -> Self {
        self.blocks = Some(blocks);
        self
    }

    /// This channel with a per-packet bit budget.
    #[must_use]
    pub fn with_max_bits_per_packet(mut self, bits: usize) -> Self {
        self.max_bits_per_packet = bits;
        self
    }

    /// This channel with queue sizes.
    #[must_use]
    pub fn with_queues(mut self, send: usize, receive: usize) -> Self {
        self.send_queue_size = send;
        self.receive_queue_size = receive;
        self
    }

    /// This channel with a resend interval.
    #[must_use]
    pub fn with_resend_interval(mut self, interval: Duration) -> Self {
        self.resend_interval = interval;
        self
    }

    /// This channel with a resend interval of at least `factor` round trips.
    #[must_use]
    pub fn with_resend_rtt_factor(mut self, factor: f64) -> Self {
        self.resend_rtt_factor = factor;
        self
    }

    /// This channel with a largest inline message of `bits` bits.
    #[must_use]
    pub fn with_max_message_bits(mut self, bits: usize) -> Self {
        self.max_message_bits = Some(bits);
        self
    }

    /// This channel declared for the messages of the set `M` whose payload is `T`:
    /// `send` refuses every other type at once, naming both
    /// ([`ChannelSendError::WrongType`](super::ChannelSendError::WrongType)), and the
    /// inline limit ([`max_message_bits`](Self::max_message_bits)) becomes at least
    /// `M::TYPE_BITS + T::MAX_BITS`, so that a larger type of the set no longer has to
    /// fit this channel's budget. Call it once per type the channel carries. For a
    /// channel of one type, [`LayerConfig::add_typed`] also gives a handle that makes
    /// sending another type a compile error. A `T` that is no payload of `M`, or types
    /// of two sets, make [`MessageLayer::new`](super::MessageLayer::new) fail
    /// ([`LayerConfigError::Carries`]).
    ///
    /// ```
    /// use netproto::NetMessage;
    /// use netproto::channel::{ChannelConfig, ChannelId, ChannelSendError, LayerConfig, MessageLayer};
    ///
    /// #[derive(NetMessage, Debug)]
    /// struct Input(#[net(range = 0..=15)] u8);
    /// #[derive(NetMessage, Debug)]
    /// struct Map(#[net(max_len = 100000)] Vec<u8>);
    /// #[derive(NetMessage, Debug)]
    /// #[net(message_set)]
    /// enum Msg { Input(Input), Map(Map) }
    ///
    /// // The map's 800,000 bits would not fit the default channels' packets:
    /// assert!(MessageLayer::<Msg>::new(LayerConfig::default()).is_err());
    /// let layer = LayerConfig::with_channels(vec![
    ///     ChannelConfig::unreliable().carries::<Msg, Input>(),
    ///     ChannelConfig::bulk(),
    /// ]);
    /// let mut layer = MessageLayer::<Msg>::new(layer)?;
    /// let map = Msg::Map(Map(vec![0; 10]));
    /// assert!(matches!(
    ///     layer.send(ChannelId::new(0), map),
    ///     Err(ChannelSendError::WrongType { declared: "Input", sent: "Map", .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn carries<M: crate::MessageSet, T: crate::NetMessage>(mut self) -> Self {
        let bits = M::TYPE_BITS as usize + T::MAX_BITS;
        self.max_message_bits = Some(self.max_message_bits.map_or(bits, |b| b.max(bits)));
        self.carries.add::<M, T>();
        self
    }

    /// This channel with a sharing priority (higher goes first).
    #[must_use]
    pub fn with_priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// This channel with a sharing weight (1 to 1024).
    #[must_use]
    pub fn with_weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// This channel with a per-packet message limit.
    #[must_use]
    pub fn with_max_messages_per_packet(mut self, n: usize) -> Self {
        self.max_messages_per_packet = n;
        self
    }
}

/// The budget of [`ChannelConfig::bulk`]: 8 fragments of 1024 bytes and their
/// headers, 66048 bits (8256 bytes).
pub const BULK_BITS_PER_PACKET: usize = 8 * 1024 * 8 + 512;

/// The message layer: its channels and the packet budget they share.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerConfig {
    /// The channels, by index (at most [`MAX_CHANNELS`]).
    pub channels: Vec<ChannelConfig>,
    /// Most bits of one packet payload. The default, 8192 bits (1024 bytes), is the
    /// packet endpoint's default fragmentation threshold: a packet is never split.
    /// [`with_channels`](Self::with_channels) raises it to hold the largest channel
    /// budget (the [`bulk`](ChannelConfig::bulk) preset's: 8 KiB, split into 9
    /// datagrams). With the congestion mode's packets per second it caps what the
    /// layer moves: see [`ChannelConfig::bulk`], "Its rate".
    pub max_packet_bits: usize,
    /// Packets remembered for acks: which messages each one carried. At least the
    /// packet endpoint's `sent_packets_buffer_size` and `received_packets_buffer_size`
    /// ([`MessageStack`](super::MessageStack) checks): times the messages per packet,
    /// it bounds how far the ids move while a packet is alive (1 to 32768; each record
    /// holds at most the messages and fragments one packet carries).
    pub sent_packets_buffer_size: usize,
}

impl Default for LayerConfig {
    /// One reliable-ordered channel ([`ChannelId::RELIABLE`](super::ChannelId::RELIABLE))
    /// and one unreliable channel ([`ChannelId::UNRELIABLE`](super::ChannelId::UNRELIABLE)).
    fn default() -> Self {
        Self {
            channels: vec![ChannelConfig::reliable(), ChannelConfig::unreliable()],
            max_packet_bits: 8192,
            sent_packets_buffer_size: 256,
        }
    }
}

/// An invalid [`LayerConfig`], naming the channel and field at fault.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LayerConfigError {
    /// No channels, or more than [`MAX_CHANNELS`].
    #[error("a layer needs 1 to {MAX_CHANNELS} channels, got {0}")]
    ChannelCount(usize),
    /// A queue size is not a power of two in `1..=32768` (it must divide 65536).
    #[error("channel {channel}: {field} is {value}, it must be a power of two in 1..=32768")]
    QueueSize {
        /// The channel.
        channel: usize,
        /// The field.
        field: &'static str,
        /// Its value.
        value: usize,
    },
    /// A count or size that must be positive is zero, or one above its limit.
    #[error("channel {channel}: {field} is {value}, it must be in 1..={max}")]
    OutOfRange {
        /// The channel.
        channel: usize,
        /// The field.
        field: &'static str,
        /// Its value.
        value: usize,
        /// The largest accepted value.
        max: usize,
    },
    /// The resend interval's round-trip factor is negative or not finite.
    #[error("channel {channel}: resend_rtt_factor must be finite and >= 0, got {value}")]
    ResendRttFactor {
        /// The channel.
        channel: usize,
        /// Its value.
        value: f64,
    },
    /// The channel's budget cannot hold one maximal message (or one fragment).
    #[error(
        "channel {channel}: max_bits_per_packet {budget} cannot hold {what} ({needed} bits needed): {fix}"
    )]
    BudgetTooSmall {
        /// The channel.
        channel: usize,
        /// Its budget.
        budget: usize,
        /// Bits needed.
        needed: usize,
        /// What must fit.
        what: &'static str,
        /// The settings to change.
        fix: &'static str,
    },
    /// The channel's budget is above the packet's.
    #[error("channel {channel}: max_bits_per_packet {budget} exceeds the packet budget {packet}")]
    BudgetAbovePacket {
        /// The channel.
        channel: usize,
        /// Its budget.
        budget: usize,
        /// Bits left for channel entries in a packet.
        packet: usize,
    },
    /// A type declared with [`ChannelConfig::carries`] is not one of the layer's
    /// message set.
    #[error("channel {channel}: declared to carry {what}, which {why}")]
    Carries {
        /// The channel.
        channel: usize,
        /// The type (or message set) named.
        what: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Blocks are configured on an unreliable channel.
    #[error("channel {channel}: blocks need a reliable channel")]
    BlocksOnUnreliable {
        /// The channel.
        channel: usize,
    },
    /// The packet window is too large for the message id space: a packet that lives
    /// through the whole window (a late ack, or a resend overtaken in the network)
    /// could then carry ids that are half the id space away, and be misread.
    #[error(
        "channel {channel}: sent_packets_buffer_size {packets} x (messages + fragments per packet) {messages} must stay below {limit}"
    )]
    AckWindowTooLarge {
        /// The channel.
        channel: usize,
        /// Packets remembered.
        packets: usize,
        /// Messages (and fragments) per packet.
        messages: usize,
        /// 32768 - receive queue.
        limit: usize,
    },
}

impl LayerConfig {
    /// The most heap memory, in bytes, a [`MessageLayer<M>`](super::MessageLayer)
    /// with this configuration holds, whatever the peer sends and however long the
    /// application leaves messages unread, when no message of `M` owns more than
    /// `message_heap` bytes of heap (a `String` of `max_len` bytes owns at most
    /// `max_len`; a message without `String` or `Vec` fields owns none):
    ///
    /// ```text
    /// sum over channels of
    ///     send_queue_size    * (slot + max(message_heap, block, encoded))   the send queue
    ///   + receive_queue_size * (slot + message_heap)               the receive queue
    ///   + max_blocks_in_flight * (max_block_size + 2 * fragments
    ///                             + 16 * ceil(fragments / 64) + P)  reassembly (blocks)
    /// + sent_packets_buffer_size * (32 + 8 * items)                packet records
    /// + staging
    /// ```
    ///
    /// where `slot` is the size of a queue slot (about `size_of::<M>()`; an unreliable
    /// queue grows to at least 4 slots), `block = q + 9 * ceil(q / fragment_size)` is
    /// what a queued block holds, with `q = min(max_block_size, M::MAX_BITS / 8)` (a
    /// block is an encoded message of the set), `encoded` what a queued
    /// [`Encoded`](super::Encoded) message holds (`M::MAX_BITS / 8` plus 24 bytes), `fragments` is
    /// [`BlockConfig::max_fragments`], `P` a reassembly's bookkeeping (96 bytes; a
    /// reassembly holds the bytes of the fragments received, in arrival order, their
    /// indexes (2 bytes each) and a sparse bitmap of them (16 bytes per 64 fragments),
    /// each growing as fragments arrive: a peer must send the bytes it makes us hold,
    /// whatever block size it declares),
    /// `items` the reliable messages and fragments one packet can carry (summed over
    /// channels, rounded up to a power of two, at least 4), and `staging` the scratch
    /// space of one packet: twice the largest encoded message or block, the payload
    /// (`max_packet_bits / 8`) and the largest block, plus a few words per item and
    /// channel (the transport's stacks lend one scratch space to all of their
    /// connections' layers, which then hold none of their own: the bound still counts
    /// it per layer). Every term is fixed by the configuration: nothing a peer sends can
    /// add another.
    pub fn memory_bound<M: crate::NetMessage>(&self, message_heap: usize) -> usize {
        use core::mem::size_of;
        let sum = |terms: &[usize]| terms.iter().fold(0usize, |a, &b| a.saturating_add(b));
        let mut total = 0usize;
        let mut items = 0usize;
        let mut largest_block = 0usize;
        let mut per_packet_messages = 0usize;
        // A queued Encoded message (a broadcast) holds its bytes behind an Arc.
        let encoded = M::MAX_BITS.div_ceil(8) + 8 + 2 * size_of::<usize>();
        for c in &self.channels {
            per_packet_messages += c.max_messages_per_packet;
            let (block, reassembly) = match c.blocks {
                Some(b) => {
                    largest_block = largest_block.max(b.max_block_size);
                    // A queued block is an encoded message of the set: at most
                    // M::MAX_BITS / 8 bytes, whatever max_block_size allows.
                    let queued = b.max_block_size.min(M::MAX_BITS.div_ceil(8));
                    let block = sum(&[
                        queued,
                        9usize.saturating_mul(queued.div_ceil(b.fragment_size.max(1))),
                    ]);
                    // A reassembly's heap, and its entry in the list (which grows one
                    // entry at a time, up to max_blocks_in_flight).
                    let partial = sum(&[
                        super::block::partial_block_heap(b.max_block_size, b.max_fragments()),
                        size_of::<super::block::PartialBlock>(),
                    ]);
                    (block, b.max_blocks_in_flight.saturating_mul(partial))
                }
                None => (0, 0),
            };
            let queues = match c.kind {
                ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered => {
                    items += c.max_messages_per_packet
                        + c.blocks.map_or(0, |b| b.max_fragments_per_packet);
                    let send_slot = super::reliable::ReliableSender::<M>::slot_bytes();
                    // A slot, and (unordered) the id in the ready list.
                    let receive_slot = size_of::<super::reliable::ReceiveSlot<M>>() + 2;
                    sum(&[
                        c.send_queue_size
                            .saturating_mul(send_slot + message_heap.max(block).max(encoded)),
                        c.receive_queue_size
                            .max(4)
                            .saturating_mul(receive_slot + message_heap),
                    ])
                }
                ChannelKind::UnreliableUnordered | ChannelKind::UnreliableSequenced => sum(&[
                    c.send_queue_size
                        .max(4)
                        .saturating_mul(size_of::<super::unreliable::SendSlot<M>>()),
                    c.send_queue_size.saturating_mul(message_heap.max(encoded)),
                    c.receive_queue_size.max(4).saturating_mul(size_of::<M>()),
                    c.receive_queue_size.saturating_mul(message_heap),
                ]),
            };
            total = sum(&[
                total,
                queues,
                reassembly,
                size_of::<super::send::ChannelSender<M>>()
                    + size_of::<super::receive::ChannelReceiver<M>>()
                    + size_of::<i64>()
                    + size_of::<ChannelConfig>(),
            ]);
        }
        let item = size_of::<super::sent::SentItem>();
        let records = self.sent_packets_buffer_size.saturating_mul(
            crate::packet::sequence_buffer::slot_bytes::<Vec<super::sent::SentItem>>()
                + item * items.next_power_of_two().max(4),
        );
        // Scratch vectors keep their largest size; growth at most doubles a need.
        let encoded = (M::MAX_BITS.div_ceil(8) + 8).max(largest_block + 8);
        let per_packet = (per_packet_messages + items).next_power_of_two().max(4);
        let staging = sum(&[
            2 * encoded,
            2 * self.max_packet_bits.div_ceil(8),
            2 * largest_block,
            per_packet.saturating_mul(size_of::<(usize, Option<u16>, M)>() + 64),
            self.channels.len() * 256,
        ]);
        sum(&[total, records, staging])
    }

    /// Adds `channel` after the others and returns its id: what
    /// [`send`](super::MessageLayer::send) and [`receive`](super::MessageLayer::receive)
    /// take. Both sides must add the same channels in the same order. A configuration
    /// with more than [`MAX_CHANNELS`] channels is invalid ([`validate`](Self::validate)).
    ///
    /// As [`with_channels`](Self::with_channels) does, the packet budget
    /// ([`max_packet_bits`](Self::max_packet_bits)) is raised to what the largest
    /// channel budget needs when it is less (adding a [`bulk`](ChannelConfig::bulk)
    /// channel); it is never lowered.
    pub fn add(&mut self, channel: ChannelConfig) -> super::ChannelId {
        self.channels.push(channel);
        self.max_packet_bits = self.max_packet_bits.max(needed_packet_bits(&self.channels));
        super::ChannelId::new(self.channels.len() - 1)
    }

    /// Adds `channel` declared for the messages of the set `M` whose payload is `T`
    /// ([`ChannelConfig::carries`]) and returns its typed handle: what
    /// [`MessageLayer::send_on`](super::MessageLayer::send_on) takes with a `T`, and
    /// nothing else. Both sides must add the same channels in the same order.
    pub fn add_typed<M: crate::MessageSet, T: crate::NetMessage + Into<M>>(
        &mut self,
        channel: ChannelConfig,
    ) -> super::Channel<T> {
        super::Channel::new(self.add(channel.carries::<M, T>()))
    }

    /// The typed handle of channel `id` when it is declared for exactly `T` of the set
    /// `M` ([`ChannelConfig::carries`] called with `T` alone): for a configuration built
    /// as a list ([`with_channels`](Self::with_channels)). `None` for no such channel, or
    /// one that carries another type, several, or every type.
    pub fn typed<M: crate::MessageSet, T: crate::NetMessage + Into<M>>(
        &self,
        id: super::ChannelId,
    ) -> Option<super::Channel<T>> {
        let channel = self.channels.get(id.index())?;
        channel
            .carries
            .is_only::<M, T>()
            .then(|| super::Channel::new(id))
    }

    /// Checks what each channel is declared to carry against the message set whose
    /// schema fingerprint is `fingerprint`;
    /// [`MessageLayer::new`](super::MessageLayer::new) calls this.
    pub(crate) fn validate_carries(&self, fingerprint: u64) -> Result<(), LayerConfigError> {
        for (channel, c) in self.channels.iter().enumerate() {
            c.carries.check(fingerprint).map_err(|e| match e {
                super::typed::CarriesError::OtherSet(set) => LayerConfigError::Carries {
                    channel,
                    what: set,
                    why: "is another message set than this layer's",
                },
                super::typed::CarriesError::NotInSet(ty, _) => LayerConfigError::Carries {
                    channel,
                    what: ty,
                    why: "is the payload of no variant of this layer's message set",
                },
            })?;
        }
        Ok(())
    }

    /// The ids of the channels, in order.
    pub fn ids(&self) -> impl Iterator<Item = super::ChannelId> + use<> {
        (0..self.channels.len()).map(super::ChannelId::new)
    }

    /// A layer with these channels and the default budgets: channel `i` of the list is
    /// [`ChannelId::new(i)`](super::ChannelId::new). The packet budget
    /// ([`max_packet_bits`](Self::max_packet_bits)) is the default 8192 bits, or what
    /// the largest channel budget needs when that is more (a [`bulk`](ChannelConfig::bulk)
    /// channel's).
    pub fn with_channels(channels: Vec<ChannelConfig>) -> Self {
        let default = Self::default();
        Self {
            max_packet_bits: default.max_packet_bits.max(needed_packet_bits(&channels)),
            channels,
            ..default
        }
    }

    /// Checks every field against a message set whose largest message is `max_bits`
    /// bits ([`NetMessage::MAX_BITS`](crate::NetMessage::MAX_BITS));
    /// [`MessageLayer::new`](super::MessageLayer::new) calls this.
    pub fn validate(&self, max_bits: usize) -> Result<(), LayerConfigError> {
        let n = self.channels.len();
        if n == 0 || n > MAX_CHANNELS {
            return Err(LayerConfigError::ChannelCount(n));
        }
        if self.sent_packets_buffer_size == 0 || self.sent_packets_buffer_size > MAX_QUEUE_SIZE {
            return Err(LayerConfigError::OutOfRange {
                channel: 0,
                field: "sent_packets_buffer_size",
                value: self.sent_packets_buffer_size,
                max: MAX_QUEUE_SIZE,
            });
        }
        let limit = 8 * crate::packet::MAX_PACKET_SIZE_LIMIT;
        if self.max_packet_bits == 0 || self.max_packet_bits > limit {
            return Err(LayerConfigError::OutOfRange {
                channel: 0,
                field: "max_packet_bits",
                value: self.max_packet_bits,
                max: limit,
            });
        }
        let packet = self.max_packet_bits.saturating_sub(frame_bits(n));
        for (i, c) in self.channels.iter().enumerate() {
            for (field, value) in [
                ("send_queue_size", c.send_queue_size),
                ("receive_queue_size", c.receive_queue_size),
            ] {
                if !value.is_power_of_two() || value > MAX_QUEUE_SIZE {
                    return Err(LayerConfigError::QueueSize {
                        channel: i,
                        field,
                        value,
                    });
                }
            }
            if c.max_messages_per_packet == 0 || c.max_messages_per_packet > 1024 {
                return Err(LayerConfigError::OutOfRange {
                    channel: i,
                    field: "max_messages_per_packet",
                    value: c.max_messages_per_packet,
                    max: 1024,
                });
            }
            let value = c.resend_rtt_factor;
            if !(value.is_finite() && value >= 0.0) {
                return Err(LayerConfigError::ResendRttFactor { channel: i, value });
            }
            if c.weight == 0 || c.weight > 1024 {
                return Err(LayerConfigError::OutOfRange {
                    channel: i,
                    field: "weight",
                    value: c.weight as usize,
                    max: 1024,
                });
            }
            if c.max_bits_per_packet > packet {
                return Err(LayerConfigError::BudgetAbovePacket {
                    channel: i,
                    budget: c.max_bits_per_packet,
                    packet,
                });
            }
            let reliable = c.kind.is_reliable();
            let header = entry_header_bits(n, c)
                + if c.kind.has_ids() {
                    message_id_bits(None, 0)
                } else {
                    0
                };
            match (&c.blocks, reliable) {
                (Some(_), false) => {
                    return Err(LayerConfigError::BlocksOnUnreliable { channel: i });
                }
                (Some(b), true) => {
                    for (field, value, max) in [
                        ("max_block_size", b.max_block_size, 1 << 24),
                        ("fragment_size", b.fragment_size, 1 << 16),
                        ("max_fragments_per_packet", b.max_fragments_per_packet, 256),
                        ("max_blocks_in_flight", b.max_blocks_in_flight, 64),
                    ] {
                        if value == 0 || value > max {
                            return Err(LayerConfigError::OutOfRange {
                                channel: i,
                                field,
                                value,
                                max,
                            });
                        }
                    }
                    if b.max_fragments() > 65536 {
                        return Err(LayerConfigError::OutOfRange {
                            channel: i,
                            field: "max_block_size / fragment_size",
                            value: b.max_fragments(),
                            max: 65536,
                        });
                    }
                    // A full fragment, as a writer measures it.
                    let needed = entry_header_bits(n, c)
                        + group_header_bits(b)
                        + fragment_bits(b, &mut vec![0; b.fragment_size]);
                    if c.max_bits_per_packet < needed {
                        return Err(LayerConfigError::BudgetTooSmall {
                            channel: i,
                            budget: c.max_bits_per_packet,
                            needed,
                            what: "one block fragment",
                            fix: "lower blocks.fragment_size or raise max_bits_per_packet",
                        });
                    }
                }
                (None, _) => {
                    let needed = header + c.max_message_bits.unwrap_or(max_bits);
                    if c.max_bits_per_packet < needed {
                        return Err(LayerConfigError::BudgetTooSmall {
                            channel: i,
                            budget: c.max_bits_per_packet,
                            needed,
                            what: "one maximal message of the message set",
                            fix: "declare what this channel carries (max_message_bits, or \
                                  ChannelConfig::carries), or give it blocks \
                                  (ChannelConfig::bulk) to send larger messages as blocks",
                        });
                    }
                }
            }
            if reliable {
                let per_packet =
                    c.max_messages_per_packet + c.blocks.map_or(0, |b| b.max_fragments_per_packet);
                // A packet lives at most one packet window (the endpoint drops older
                // ones), during which the ids move by at most this product: keep it,
                // plus the receive window, within half the id space.
                let limit = 32768 - c.receive_queue_size.min(32768);
                if self.sent_packets_buffer_size.saturating_mul(per_packet) >= limit {
                    return Err(LayerConfigError::AckWindowTooLarge {
                        channel: i,
                        packets: self.sent_packets_buffer_size,
                        messages: per_packet,
                        limit,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The packet budget the largest of `channels`' budgets needs, with the frame of that
/// many channels, in whole bytes.
fn needed_packet_bits(channels: &[ChannelConfig]) -> usize {
    let largest = channels
        .iter()
        .map(|c| c.max_bits_per_packet)
        .max()
        .unwrap_or(0);
    largest
        .saturating_add(frame_bits(channels.len()))
        .next_multiple_of(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_for_small_messages() {
        assert_eq!(LayerConfig::default().validate(1000), Ok(()));
    }

    #[test]
    fn each_rule_has_an_error() {
        let base = LayerConfig::default();
        let with = |f: &dyn Fn(&mut ChannelConfig)| {
            let mut c = base.clone();
            f(&mut c.channels[0]);
            c.validate(100)
        };
        assert!(matches!(
            with(&|c| c.send_queue_size = 1000),
            Err(LayerConfigError::QueueSize { .. })
        ));
        assert!(matches!(
            with(&|c| c.receive_queue_size = 65536),
            Err(LayerConfigError::QueueSize { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_messages_per_packet = 0),
            Err(LayerConfigError::OutOfRange { .. })
        ));
        assert!(matches!(
            with(&|c| c.resend_rtt_factor = f64::NAN),
            Err(LayerConfigError::ResendRttFactor { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_bits_per_packet = 50),
            Err(LayerConfigError::BudgetTooSmall { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_bits_per_packet = 9000),
            Err(LayerConfigError::BudgetAbovePacket { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_messages_per_packet = 1024),
            Err(LayerConfigError::AckWindowTooLarge { .. })
        ));
        assert!(matches!(
            with(&|c| c.blocks = Some(BlockConfig {
                fragment_size: 2000,
                ..BlockConfig::default()
            })),
            Err(LayerConfigError::BudgetTooSmall { .. })
        ));
        let mut c = base.clone();
        c.channels[1].blocks = Some(BlockConfig::default());
        assert_eq!(
            c.validate(100),
            Err(LayerConfigError::BlocksOnUnreliable { channel: 1 })
        );
        assert_eq!(
            LayerConfig::with_channels(vec![]).validate(1),
            Err(LayerConfigError::ChannelCount(0))
        );
        let huge = LayerConfig {
            max_packet_bits: usize::MAX,
            ..base.clone()
        };
        assert!(matches!(
            huge.validate(100),
            Err(LayerConfigError::OutOfRange {
                field: "max_packet_bits",
                ..
            })
        ));
        // A message set with a message larger than the budget needs blocks.
        assert!(matches!(
            base.validate(8000),
            Err(LayerConfigError::BudgetTooSmall { .. })
        ));
        let e = with(&|c| c.send_queue_size = 3).expect_err("not a power of two");
        assert!(e.to_string().contains("power of two"));
    }
}
