//! What a message layer counts and holds: [`LayerStats`] for the layer, and
//! [`ChannelStats`] for each of its channels.
//!
//! The names follow the crate's stats rule (see the guide's "Stats" section): a
//! count of events is a `u64` named `<things>_<past verb>`, a refusal
//! `<things>_dropped_<reason>`, a current size a `usize` named for what it holds.

/// One channel's figures: totals since the layer was made, and what its queues hold
/// now. From [`MessageLayer::channel_stats`](super::MessageLayer::channel_stats), and
/// for every channel in [`ConnectionStats::channels`](crate::transport::ConnectionStats::channels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelStats {
    /// Messages accepted by `send` on this channel (blocks included).
    pub messages_sent: u64,
    /// Messages of this channel delivered by `receive`.
    pub messages_received: u64,
    /// Times a reliable message or block fragment of this channel went out again
    /// because its resend interval passed without an ack.
    pub messages_resent: u64,
    /// Messages queued on this channel and not released: on a reliable channel, sent
    /// or not and not acked yet; on an unreliable one, not sent yet.
    pub send_queue_len: usize,
    /// Messages received on this channel and not taken by `receive` yet (reliable:
    /// including those waiting for an earlier one).
    pub receive_queue_len: usize,
}

/// A [`MessageLayer`](super::MessageLayer)'s figures: event totals of every channel
/// since the layer was made, and what its queues hold now. From
/// [`MessageLayer::stats`](super::MessageLayer::stats), and as
/// [`ConnectionStats::messages`](crate::transport::ConnectionStats::messages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerStats {
    /// Messages accepted by `send` (blocks included).
    pub messages_sent: u64,
    /// Times a message or fragment went into a packet (first sends and resends).
    pub messages_transmitted: u64,
    /// Of those, the times a reliable message or fragment went out again (its resend
    /// interval passed without an ack).
    pub messages_resent: u64,
    /// Reliable messages (and fragments) released by acks.
    pub messages_acked: u64,
    /// Messages delivered by `receive`.
    pub messages_received: u64,
    /// Reliable messages or fragments received again and ignored.
    pub messages_dropped_duplicate: u64,
    /// `send` refusals because the channel's send queue was full.
    pub messages_dropped_send_queue_full: u64,
    /// Unreliable messages dropped on arrival because the receive queue was full.
    pub messages_dropped_receive_queue_full: u64,
    /// Sequenced messages dropped on arrival because a newer one had arrived.
    pub messages_dropped_stale: u64,
    /// Packet payloads written.
    pub payloads_written: u64,
    /// Packet payloads read and applied.
    pub payloads_read: u64,
    /// Packet payloads dropped as malformed or hostile.
    pub payloads_dropped_malformed: u64,
    /// Packet payloads refused for flow control (a receive queue full).
    pub payloads_dropped_receive_queue_full: u64,
    /// Messages queued on every channel and not released: on reliable channels, sent
    /// or not and not acked yet; on unreliable ones, not sent yet.
    pub send_queue_len: usize,
    /// Messages received on every channel and not taken by `receive` yet (reliable:
    /// including those waiting for an earlier one).
    pub receive_queue_len: usize,
}
