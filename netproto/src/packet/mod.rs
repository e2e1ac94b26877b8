//! Packet endpoint: sequence numbers, acks, fragmentation (byte-compatible with `reliable`).
//!
//! This is the layer below the channels: it turns payloads into datagrams stamped
//! with a 16-bit [`Sequence`] and the acks of the peer's recent packets, splits large
//! packets into fragments and reassembles them, reports which of our packets the peer
//! acked (or lost for good), and estimates RTT, loss and bandwidth.
//!
//! The wire format is byte-identical with the reference C library `reliable`
//! (`reliable_write_packet_header`, fragment datagrams), checked against vectors the
//! reference produced, so a C endpoint and an [`Endpoint`] can ack each other.
//!
//! * [`Sequence`]: wrap-aware sequence numbers (and, inside, the ring buffer every
//!   window is made of).
//! * The wire format, inside: the packet header (`header.rs`) and the fragment
//!   header and parser (`fragment.rs`).
//! * [`Endpoint`], [`EndpointConfig`]: the sans-IO state machine. Receiving is in
//!   two phases: [`Endpoint::receive`] validates a datagram and hands out a whole
//!   packet as a [`PendingPacket`]; the layer above reads its payload and
//!   [`accept`](PendingPacket::accept)s it (recorded, acked, its acks applied),
//!   [`postpone`](PendingPacket::postpone)s it (no room now: not acked, its acks
//!   applied) or [`refuse`](PendingPacket::refuse)s it (as if it never arrived).
//! * [`EndpointStats`]: what it measured and what it counted.
//!
//! Differences from the reference, none visible in a conforming exchange:
//!
//! * An ack naming a sequence we have not sent yet (with any ack bit set) drops the
//!   packet as invalid; the reference ignores such acks one by one.
//! * Starting a reassembly does not advance the received-packet window (the
//!   reference does, which makes the next ack name a packet not yet complete).
//! * Empty fragments and fragments that would make the packet exceed
//!   `max_packet_size` are refused on arrival, not after reassembly.
//! * Packets that leave the sent window unacked are reported lost
//!   ([`Sent::lost`]); the reference only counts them in its loss estimate.
//! * Duplicate fragments are counted (`fragments_dropped_duplicate`).
//! * A one-fragment packet is refused unless its payload is above `fragment_above`
//!   (a sender fragments nothing smaller, so with `fragment_size <= fragment_above`
//!   every one-fragment packet is refused); the reference accepts any. The reference
//!   does send one-fragment packets when `fragment_size > fragment_above`, and those
//!   are accepted.
//! * The loss estimate ([`EndpointStats::packet_loss_percent`]) counts the last
//!   `loss_window` packets whose fate is known, as soon as the acks tell it; the
//!   reference smooths the loss of packets sent 128 to 256 packets ago. The packet
//!   counters are the reference's.
//! * With [`EndpointConfig::report_ack_delay`] set (off by default; the
//!   [connections](crate::connection) set it), every packet's payload starts with
//!   one byte: how long the packets it acks for the first time were held before it
//!   left, so that [`EndpointStats::rtt`] is the round trip on the network. The header is
//!   the reference's; both ends must agree.
//! * With [`EndpointConfig::skip_sequence_seed`] set (off by default), the
//!   skipped-sequence trap: at random times (8 a second on average,
//!   [`EndpointConfig::skip_mean_gap`]) a sequence number is skipped (never sent),
//!   and a header acking a skipped sequence drops the packet as an optimistic ack
//!   ([`ReceiveError::OptimisticAck`]). A reference peer sees gaps.

mod ack_delay;
mod ack_state;
mod config;
mod endpoint;
// The modules below hold `pub` items that only `crate::internals` re-exports (the header
// and fragment codecs, the sequence buffer, for the conformance tests and fuzz targets):
// without that feature they are crate-private.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod fragment;
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod header;
mod outcome;
mod reassembly;
mod rtt_history;
mod sent_window;
mod seq_bits;

#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub(crate) mod sequence_buffer;
mod stats;

pub use crate::sequence::Sequence;
pub use config::{
    EndpointConfig, EndpointConfigError, MAX_PACKET_HEADER_SIZE, MAX_PACKET_SIZE_LIMIT,
};
pub use endpoint::{Endpoint, Incoming, PendingPacket};
pub use fragment::{FragmentError, MAX_FRAGMENTS};
pub use header::HeaderError;
pub use outcome::{Acks, MAX_ACKS_PER_PACKET, PacketSendError, ReceiveError, Received, Sent};
pub use sequence_buffer::MAX_SEQUENCE_BUFFER_SIZE;
pub use stats::EndpointStats;
pub(crate) use stats::Estimates;

pub(crate) use sequence_buffer::SequenceBuffer;
