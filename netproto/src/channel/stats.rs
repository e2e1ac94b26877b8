//! [`MessageStats`]: what a message layer has sent, resent and holds.

/// The message side of a connection's statistics: totals since the layer was made,
/// and what its queues hold now. Part of
/// [`ConnectionStats`](crate::transport::ConnectionStats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageStats {
    /// Messages accepted by `send` (blocks included).
    pub sent: u64,
    /// Messages delivered by `receive`.
    pub received: u64,
    /// Times a reliable message or block fragment went out again because its resend
    /// interval passed without an ack.
    pub resent: u64,
    /// Messages queued on every channel and not released: on reliable channels, sent
    /// or not and not acked yet; on unreliable ones, not sent yet.
    pub send_queue: usize,
    /// Messages received on every channel and not taken by `receive` yet (reliable:
    /// including those waiting for an earlier one).
    pub receive_queue: usize,
}
