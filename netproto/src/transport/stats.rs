//! What the transport glue and the UDP transport report: [`ConnectionStats`] (one
//! connection: its link, its message layer, each channel), [`StackStats`] (a stack's
//! payloads) and [`TransportStats`] (a socket's datagrams).

use crate::channel::{ChannelStats, LayerStats};
use crate::connection::LinkStats;

/// Everything one connection measured, on either side: the link (its packet
/// endpoint's estimates and counters, congestion, datagrams and bytes), the message
/// layer (sent, received, resent, queue lengths) and each of its channels. From [`ServerStack::stats`](super::ServerStack::stats),
/// [`ClientStack::stats`](super::ClientStack::stats), [`UdpServer::stats`](super::UdpServer::stats)
/// and [`UdpClient::stats`](super::UdpClient::stats).
///
/// The round-trip history (`rtt_min`, jitter...) and the loss are `None` until
/// measured: a figure not measured yet is absent, never 0.
///
/// ```
/// # fn show(stats: &netproto::transport::ConnectionStats) {
/// let e = &stats.link.endpoint;
/// match (e.jitter_stddev_vs_avg_rtt, e.packet_loss_percent_long) {
///     (Some(jitter), Some(loss)) => println!("{:?} ± {jitter:?}, {loss:.1}% loss", e.rtt),
///     _ => println!("link not measured yet"),
/// }
/// println!(
///     "{:.1}/{:.1} kbps, {} resent, {} queued",
///     stats.link.sent_kbps,
///     stats.link.received_kbps,
///     stats.messages.messages_resent,
///     stats.messages.send_queue_len,
/// );
/// for (channel, c) in stats.channels.iter().enumerate() {
///     println!("channel {channel}: {} sent, {} queued", c.messages_sent, c.send_queue_len);
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// The connection's link.
    pub link: LinkStats,
    /// The connection's message layer: every channel's totals.
    pub messages: LayerStats,
    /// Each channel's figures, by channel index.
    pub channels: Vec<ChannelStats>,
}

impl ConnectionStats {
    pub(crate) fn new(link: LinkStats, messages: LayerStats, channels: Vec<ChannelStats>) -> Self {
        Self {
            link,
            messages,
            channels,
        }
    }
}

/// What a [`ServerStack`](super::ServerStack) or [`ClientStack`](super::ClientStack)
/// counted of the payloads it wrote and read, over all its connections: from their
/// `stack_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackStats {
    /// Payload packets written by a layer and handed to the connection.
    pub payloads_sent: u64,
    /// The largest payload written, bytes.
    pub largest_payload_bytes: usize,
    /// Payloads of connected peers that the layer refused (dropped whole, not acked).
    pub payloads_dropped_by_layer: u64,
    /// Disconnects after flush that ended flushed (everything acked).
    pub flushes_completed: u64,
    /// Disconnects after flush that ended at their timeout, with messages unacked.
    pub flushes_timed_out: u64,
}

/// What a [`UdpServer`](super::UdpServer) or [`UdpClient`](super::UdpClient) counted at
/// its socket: from their `transport_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportStats {
    /// Datagrams read from the socket.
    pub datagrams_received: u64,
    /// Bytes of the datagrams read from the socket (UDP payloads).
    pub bytes_received: u64,
    /// Datagrams handed to the socket.
    pub datagrams_sent: u64,
    /// Bytes of the datagrams handed to the socket (UDP payloads).
    pub bytes_sent: u64,
    /// Datagrams the socket refused to send (counted as lost).
    pub datagrams_dropped_send_error: u64,
    /// Transient receive errors skipped (reset or refused by an ICMP message).
    pub receive_errors_skipped: u64,
    /// Payloads of connected peers that the message layer refused (not acked): the
    /// stack's [`StackStats::payloads_dropped_by_layer`].
    pub payloads_dropped_by_layer: u64,
}
