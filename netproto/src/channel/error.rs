//! What the message layer reports: send refusals and rejected packets (its counters
//! are in `stats.rs`).

/// Why [`MessageLayer::send`](super::MessageLayer::send) refused a message. The layer
/// keeps nothing of a refused message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelSendError {
    /// The layer has no such channel: the id is not one of its configuration's.
    #[error("no channel {channel}: this layer has {channels} channels (0 to {last})", last = channels.saturating_sub(1))]
    NoSuchChannel {
        /// The channel asked for.
        channel: super::ChannelId,
        /// How many channels the layer has.
        channels: usize,
    },
    /// The message can never be sent on this channel: larger than its inline limit
    /// (and blocks are disabled) or than its largest block. Retrying will not help.
    #[error("message of {size} bits can never fit channel {channel} (at most {max} bits): {fix}")]
    TooLarge {
        /// The channel.
        channel: super::ChannelId,
        /// Measured size, bits.
        size: usize,
        /// The channel's limit, bits.
        max: usize,
        /// The settings to change.
        fix: &'static str,
    },
    /// The send queue is full: back-pressure. Retry after acks have freed room (see
    /// [`MessageLayer::can_send`](super::MessageLayer::can_send)).
    #[error("send queue of channel {channel} is full ({size} messages)")]
    QueueFull {
        /// The channel.
        channel: super::ChannelId,
        /// The queue size.
        size: usize,
    },
    /// A field is outside its declared range: the message cannot be written as it is.
    #[error("message cannot be encoded: {0}")]
    Invalid(crate::StreamError),
}

/// Why [`MessageLayer::read_packet`](super::MessageLayer::read_packet) dropped a packet
/// payload. Nothing of a dropped payload is delivered or applied, and it must not be
/// acked (the [`MessageStack`](super::MessageStack) refuses it to the endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// The bits do not decode (truncated, out-of-range count or type id, bad padding,
    /// trailing bytes...).
    #[error("malformed payload: {0}")]
    Malformed(crate::StreamError),
    /// A channel index is out of range or not above the previous entry's.
    #[error("bad channel index {0}")]
    BadChannel(u32),
    /// An entry carries neither messages nor fragments.
    #[error("channel {0}: empty entry")]
    EmptyEntry(usize),
    /// Message ids in one entry span more than the receive window.
    #[error("channel {channel}: message ids span more than the receive window")]
    IdSpan {
        /// The channel.
        channel: usize,
    },
    /// A message id beyond the receive window: a protocol error for the connection
    /// (see [`MessageLayer::protocol_error`](super::MessageLayer::protocol_error)).
    #[error("channel {channel}: message id {id} outside the receive window")]
    OutsideWindow {
        /// The channel.
        channel: usize,
        /// The id.
        id: u16,
    },
    /// Block fragments on a channel without blocks, or inconsistent fragment fields
    /// (index beyond the block, indexes not increasing, a size or block id that
    /// disagrees with the block being reassembled).
    #[error("channel {channel}: bad block fragment ({reason})")]
    BadFragment {
        /// The channel.
        channel: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// A reassembled block does not decode as a message.
    #[error("channel {channel}: block {id} does not decode: {error}")]
    BadBlock {
        /// The channel.
        channel: usize,
        /// The block's message id.
        id: u16,
        /// The decoding error.
        error: crate::StreamError,
    },
    /// Flow control, not an attack: the receive queue holds messages the application
    /// has not taken yet, and this packet carries ids beyond them. Unacked, so the
    /// sender will resend once [`receive`](super::MessageLayer::receive) makes room.
    #[error("channel {channel}: receive queue full")]
    ReceiveQueueFull {
        /// The channel.
        channel: usize,
    },
}

impl PayloadError {
    /// `true` for a violation no conforming peer commits (everything but
    /// [`PayloadError::ReceiveQueueFull`]).
    pub fn is_malformed(&self) -> bool {
        !matches!(self, Self::ReceiveQueueFull { .. })
    }
}
