//! [`ChannelId`]: which channel of a layer a message goes on.

use core::fmt;

/// A channel of a [`LayerConfig`](super::LayerConfig): its index in `channels`, which is
/// also the index a payload carries on the wire.
///
/// [`LayerConfig::add`](super::LayerConfig::add) returns the id of the channel it adds;
/// [`RELIABLE`](Self::RELIABLE) and [`UNRELIABLE`](Self::UNRELIABLE) name the two
/// channels of [`LayerConfig::default`](super::LayerConfig::default). An id means
/// something only for the configuration it came from (both sides of a connection use
/// the same one): a layer refuses to send on a channel it does not have
/// ([`ChannelSendError::NoSuchChannel`](super::ChannelSendError::NoSuchChannel)) and has nothing to
/// receive there.
///
/// ```
/// use netproto::channel::{ChannelConfig, ChannelId, LayerConfig};
///
/// let mut config = LayerConfig::default();
/// let chat = config.add(ChannelConfig::reliable_unordered());
/// assert_eq!(chat, ChannelId::new(2));
/// assert_eq!(config.channels.len(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelId(usize);

impl ChannelId {
    /// Channel 0 of [`LayerConfig::default`](super::LayerConfig::default):
    /// reliable-ordered.
    pub const RELIABLE: Self = Self(0);

    /// Channel 1 of [`LayerConfig::default`](super::LayerConfig::default): unreliable.
    pub const UNRELIABLE: Self = Self(1);

    /// The channel at `index` in a configuration's `channels` (for one built as a
    /// list, [`LayerConfig::with_channels`](super::LayerConfig::with_channels)).
    #[must_use]
    pub const fn new(index: usize) -> Self {
        Self(index)
    }

    /// Its index in the configuration's `channels`.
    #[must_use]
    pub const fn index(self) -> usize {
        self.0
    }
}

/// The index: `channel 2` in messages.
impl fmt::Display for ChannelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
