//! [`ConnectionStats`]: one connection's figures, link and messages.

use crate::channel::MessageStats;
use crate::connection::LinkStats;

/// Everything one connection measured, on either side: the link (round trip,
/// jitter, loss, bandwidth, congestion, datagrams and bytes) and the messages (sent,
/// received, resent, queue depths). From [`ServerStack::stats`](super::ServerStack::stats),
/// [`ClientStack::stats`](super::ClientStack::stats), [`UdpServer::stats`](super::UdpServer::stats)
/// and [`UdpClient::stats`](super::UdpClient::stats).
///
/// ```
/// # fn show(stats: &netproto::transport::ConnectionStats) {
/// println!(
///     "{:?} ± {:?}, {:.1}% loss, {:.1}/{:.1} kbps, {} resent, {} queued",
///     stats.link.rtt,
///     stats.link.jitter,
///     stats.link.packet_loss_percent,
///     stats.link.sent_kbps,
///     stats.link.received_kbps,
///     stats.messages.resent,
///     stats.messages.send_queue,
/// );
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// The connection's link.
    pub link: LinkStats,
    /// The connection's message layer.
    pub messages: MessageStats,
}

impl ConnectionStats {
    pub(crate) fn new(link: LinkStats, messages: MessageStats) -> Self {
        Self { link, messages }
    }
}
