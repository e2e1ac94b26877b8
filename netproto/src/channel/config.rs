//! Configuration of a channel: its kind, budgets, queues and blocks (the layer's,
//! which holds the channels, is in `layer_config`).

use std::time::Duration;

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
    /// [`max_packet_bits`](super::LayerConfig::max_packet_bits) cap in turn.
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
    /// within this budget, and the layer's
    /// [`max_packet_bits`](super::LayerConfig::max_packet_bits), which
    /// [`LayerConfig::with_channels`](super::LayerConfig::with_channels) raises to hold
    /// it. Measured on the simulator (`tests/tests/bulk_throughput.rs`, 60 Hz updates, 1% loss each way):
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
    /// channel of one type, [`LayerConfig::add_typed`](super::LayerConfig::add_typed)
    /// also gives a handle that makes sending another type a compile error. A `T` that is no payload of `M`, or types
    /// of two sets, make [`MessageLayer::new`](super::MessageLayer::new) fail
    /// ([`LayerConfigError::Carries`](super::LayerConfigError::Carries)).
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
