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
    /// The channel is declared for other message types
    /// ([`ChannelConfig::carries`](super::ChannelConfig::carries)). Names the channel's
    /// (first) declared type and the type sent, by their payload types' names.
    #[error(
        "channel {channel} is declared for {declared}{more}, not {sent} (variant {set}::{variant}): \
         send it on a channel declared for {sent}",
        more = others_text(*others)
    )]
    WrongType {
        /// The channel.
        channel: super::ChannelId,
        /// The first type it is declared for.
        declared: &'static str,
        /// How many other types it is declared for.
        others: usize,
        /// The payload type of the message sent.
        sent: &'static str,
        /// The message set.
        set: &'static str,
        /// The message's variant.
        variant: &'static str,
    },
    /// A string or sequence is longer than its declared `max_len`: the message breaks
    /// its own bounds and no channel can send it.
    #[error(
        "{field}: length {len} is above its declared max_len {max_len}: \
         shorten the value, or raise max_len (both sides must agree)",
        field = field.unwrap_or("a value")
    )]
    ValueTooLong {
        /// The field (`"Type.field"`), when known.
        field: Option<&'static str>,
        /// The value's length (bytes of a string, elements of a sequence).
        len: usize,
        /// Its declared `max_len`.
        max_len: usize,
    },
    /// A message within its declared bounds can never be sent on this channel: larger
    /// than its inline limit (and blocks are disabled) or than its largest block.
    /// Retrying will not help; `fix` says what would.
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
    /// [`send_tracked`](super::MessageLayer::send_tracked) on a reliable channel:
    /// receipts are for unreliable channels (a reliable message arrives anyway).
    #[error(
        "channel {channel} is reliable: its messages arrive without receipts; send_tracked is for unreliable channels"
    )]
    NotTracked {
        /// The channel.
        channel: super::ChannelId,
    },
}

/// ` (and 2 other types)` after the first declared type.
fn others_text(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => " (and 1 other type)".to_string(),
        n => format!(" (and {n} other types)"),
    }
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
