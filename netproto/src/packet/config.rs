//! Endpoint configuration, validated when the endpoint is built.

use super::fragment::MAX_FRAGMENTS;
use super::sequence_buffer::MAX_SEQUENCE_BUFFER_SIZE;
use std::time::Duration;

/// The configuration of an [`Endpoint`](super::Endpoint).
///
/// [`Default`] gives the values of the reference `reliable_default_config()`, so a
/// default endpoint produces the same datagrams as a default C endpoint:
///
/// | field | default |
/// |---|---|
/// | `max_packet_size` | 16384 |
/// | `fragment_above` | 1024 |
/// | `fragment_size` | 1024 |
/// | `max_fragments` | 16 |
/// | `sent_packets_buffer_size`, `received_packets_buffer_size` | 256 |
/// | `fragment_reassembly_buffer_size` | 64 |
/// | `rtt_smoothing_factor` | 0.0025 |
/// | `rtt_history_size` | 512 |
/// | `loss_window` | 32 (netproto's own: the reference smooths by 0.1 instead) |
/// | `bandwidth_smoothing_factor` | 0.1 |
/// | `packet_header_size` | 28 |
/// | `skip_sequence_seed` | `None` (never skip: the reference's datagrams) |
/// | `skip_mean_gap` | 125 ms (used only with a seed) |
/// | `report_ack_delay` | `false` (the reference's datagrams) |
///
/// The RTT smoothing factor is the reference's 0.0025, not the 10% of the article
/// the design cites: with 10% a single jittery sample moves the estimate by a tenth
/// of its error, which is visible noise at 60 packets per second; 0.0025 averages
/// over a few hundred acks (a few seconds at game rates) and the min/max/average and
/// jitter over the recent history ([`EndpointStats`](super::EndpointStats)) react faster. Set 0.1 for
/// the article's behaviour.
///
/// ```
/// use netproto::packet::{EndpointConfigError, EndpointConfig};
///
/// let config = EndpointConfig { fragment_size: 0, ..EndpointConfig::default() };
/// assert_eq!(config.validate(), Err(EndpointConfigError::Zero { field: "fragment_size" }));
/// assert!(EndpointConfig::default().validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointConfig {
    /// Largest packet payload `send` accepts (and a reassembled packet may have).
    pub max_packet_size: usize,
    /// Packets larger than this many bytes are sent as fragments.
    pub fragment_above: usize,
    /// Payload bytes per fragment (all but the last fragment carry exactly this).
    pub fragment_size: usize,
    /// Most fragments per packet, 1 to 256. `max_fragments * fragment_size` must be
    /// at least `max_packet_size`, so every packet that may be sent can be.
    pub max_fragments: usize,
    /// Sent packets remembered for acks (the ack window of our packets): a fixed ring
    /// of this many entries, allocated at construction.
    pub sent_packets_buffer_size: usize,
    /// Received packets remembered for ack bits and duplicate detection: a fixed ring
    /// of this many entries, allocated at construction. Packets older than this
    /// window are dropped as stale.
    pub received_packets_buffer_size: usize,
    /// Packets being reassembled at once (a ring indexed by sequence, like the packet
    /// windows: a new packet evicts the one a window older, so a never-completed
    /// packet holds its slot only until the peer's sequences move on). A slot's
    /// buffers grow with the fragments received (not with the fragment count they
    /// declare) up to `max_fragments * (fragment_size + 1)` bytes, and are kept for
    /// reuse, so reassembly memory is bounded by
    /// `fragment_reassembly_buffer_size * max_fragments * (fragment_size + 1)` (just
    /// over 1 MiB with the defaults), and a peer must send about as many bytes to make
    /// us hold them; see [`memory_bound`](Self::memory_bound).
    pub fragment_reassembly_buffer_size: usize,
    /// Weight of each new RTT sample in the smoothed RTT, in (0, 1].
    pub rtt_smoothing_factor: f64,
    /// RTT samples kept for min / max / average / jitter (a fixed array of this many
    /// `f64`, allocated at construction).
    pub rtt_history_size: usize,
    /// Our packets the loss estimate looks at: the last `loss_window` packets whose
    /// fate is known (acked, or passed over by the peer's acks), at most the sent
    /// window. 32 is about a second at 30 packets per second.
    /// See [`EndpointStats::packet_loss_percent`](super::EndpointStats::packet_loss_percent).
    pub loss_window: usize,
    /// Weight of each new bandwidth measurement (one every quarter second: the bytes
    /// counted since the last), in (0, 1].
    pub bandwidth_smoothing_factor: f64,
    /// Bytes added to every packet for bandwidth accounting (IPv4 + UDP = 28).
    pub packet_header_size: usize,
    /// Arms the skipped-sequence trap against optimistic acks (QUIC's defence): with
    /// a seed, the endpoint now and then skips a sequence number when sending (the
    /// sequence is never sent, and recorded as skipped in the sent window), and a
    /// received header that acks a skipped sequence comes from a peer that acks
    /// packets it never received: it is dropped whole with
    /// [`ReceiveError::OptimisticAck`](super::ReceiveError::OptimisticAck) so that
    /// the connection can disconnect the peer. When to skip is drawn from this seed
    /// (deterministic: seed it from the OS RNG in production, from a constant in
    /// tests); see [`skip_mean_gap`](Self::skip_mean_gap).
    ///
    /// `None` (the default) never skips, so a default endpoint sends exactly the
    /// reference's datagrams. The [connection layer](crate::connection) arms it.
    ///
    /// The peer sees a skip as one lost packet (a `reliable` C peer simply sees a gap
    /// in our sequences; its ack bits have a hole, so its headers carry more ack-bits
    /// bytes); we count it in `sequences_skipped`, never as sent, lost or in the loss
    /// and bandwidth estimates. A skip never pushes an unacked packet out of the sent
    /// window (it waits for a send whose slot holds none), and the record lives in the
    /// sent window like any packet, so it leaves it (and stops trapping) as a packet
    /// would.
    pub skip_sequence_seed: Option<u64>,
    /// Mean time between two skipped sequences, when `skip_sequence_seed` is set.
    ///
    /// Skips are drawn in time, not in packets, and memoryless: each send skips the
    /// sequence after its packet with probability `1 - exp(-dt / skip_mean_gap)`,
    /// `dt` the time since the previous send (a Poisson process of mean gap
    /// `skip_mean_gap`, at most one skip per send), independently of every earlier
    /// draw, so the skips seen so far say nothing about the next one. A skip whose
    /// slot in the sent window still holds an unacked packet waits for the next send.
    ///
    /// A peer that acks packets it never received names a skip among them with
    /// probability `1 - exp(-T / skip_mean_gap)`, where `T` is the time over which
    /// we sent the sequences its false acks cover, whatever our send rate. Streaming
    /// false acks for a second covers at least the second less the one-way latency
    /// and the peer's send interval (a skip must reach the peer, and its ack come
    /// back, within the second). The default, 125 ms (8 skips a second), catches it
    /// within the second with probability at least 0.99 while that is at least
    /// 0.58 s (`ln 100 * 125 ms`): up to a round trip of 600 ms at 10 packets a
    /// second. Measured over 1000 seeds at 10 to 120 packets a second and round
    /// trips of 100 and 250 ms (`tests/tests/packet_skip_rate.rs`): at least 997
    /// caught within 1 s by every attacker; 1000 of 1000, in at most 0.78 s, when
    /// it acks everything up to the newest packet it knows of.
    ///
    /// The cost, in sequence numbers: at most one skip per send, so a side never uses
    /// more than twice as many sequences as it sends packets (the connection's
    /// `TimeoutOutlastsSequences` rule counts that), and on average `rate * (1 -
    /// exp(-1 / (rate * skip_mean_gap)))` skips a second at `rate` packets a second:
    /// 5.5 at 10 packets a second, 7.7 at 120. The peer's ack bits have a hole for
    /// each skip, so its headers carry more ack-bits bytes: measured over a perfect
    /// link, 8.3 bytes per header instead of 4.8 at 10 packets a second, 5.8
    /// instead of 4.1 at 120. Must be positive.
    pub skip_mean_gap: Duration,
    /// Network RTT (netproto's extension, off by default): every packet's payload
    /// starts with one byte, how long the peer held the packets it acks before
    /// acking them, so that [`EndpointStats::rtt`](super::EndpointStats::rtt) is the round
    /// trip on the network rather than send-to-ack (which adds up to a whole send
    /// interval of the peer). Both ends must agree; the payload a layer sends can be
    /// one byte smaller ([`max_payload_size`](Self::max_payload_size)). The
    /// [connection layer](crate::connection) turns it on.
    pub report_ack_delay: bool,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self {
            max_packet_size: 16 * 1024,
            fragment_above: 1024,
            fragment_size: 1024,
            max_fragments: 16,
            sent_packets_buffer_size: 256,
            received_packets_buffer_size: 256,
            fragment_reassembly_buffer_size: 64,
            rtt_smoothing_factor: 0.0025,
            rtt_history_size: 512,
            loss_window: 32,
            bandwidth_smoothing_factor: 0.1,
            packet_header_size: 28,
            skip_sequence_seed: None,
            skip_mean_gap: Duration::from_millis(125),
            report_ack_delay: false,
        }
    }
}

/// Largest supported `max_packet_size` (16 MiB): keeps every size computation far
/// from overflow on 32-bit targets.
pub const MAX_PACKET_SIZE_LIMIT: usize = 1 << 24;

/// Largest supported `packet_header_size` (bytes of IP/UDP overhead to account for).
pub const MAX_PACKET_HEADER_SIZE: usize = 65535;

/// An invalid [`EndpointConfig`].
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointConfigError {
    /// A size that must be positive is zero.
    #[error("{field} must be greater than zero")]
    Zero {
        /// The field.
        field: &'static str,
    },
    /// A size is above its supported maximum.
    #[error("{field} is {value}, the maximum is {max}")]
    TooLarge {
        /// The field.
        field: &'static str,
        /// Its value.
        value: usize,
        /// The largest supported value.
        max: usize,
    },
    /// `max_fragments * fragment_size` cannot hold a packet of `max_packet_size`.
    #[error(
        "max_fragments ({max_fragments}) * fragment_size ({fragment_size}) is below max_packet_size ({max_packet_size})"
    )]
    PacketDoesNotFit {
        /// Configured maximum packet size.
        max_packet_size: usize,
        /// Configured maximum fragments.
        max_fragments: usize,
        /// Configured fragment size.
        fragment_size: usize,
    },
    /// A smoothing factor is not in (0, 1].
    #[error("{field} is {value}, it must be in (0, 1]")]
    SmoothingFactor {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
}

impl EndpointConfig {
    /// The most heap memory, in bytes, an [`Endpoint`](super::Endpoint) with this
    /// configuration holds, whatever it is sent:
    ///
    /// ```text
    /// fragment_reassembly_buffer_size * (max_fragments * (fragment_size + 1) + 8 + P)
    ///   + sent_packets_buffer_size * S + 2 * B / 8
    ///   + received_packets_buffer_size * 4
    ///   + rtt_history_size * 8
    ///   + max(min(fragment_above, max_packet_size) + 9, fragment_size + 14)
    ///   + C
    /// ```
    ///
    /// where `P` is the size of a reassembly slot's bookkeeping (104 bytes on 64-bit
    /// targets) and 8 the sequence stored beside it (4 bytes, padded to 8); `S` the
    /// size of a sent ring slot (24 bytes: the 16-byte packet record and its sequence,
    /// padded likewise); 4 a received ring slot (its sequence alone); `B` bits per sent
    /// packet's fate, twice (sent, acked): the power of two at or above
    /// `sent_packets_buffer_size + 65536 % sent_packets_buffer_size` and at least 64
    /// (for the default 256 entries, 64 bytes); the next term is the
    /// transmit buffer; `C` the configuration's own allocation (152 bytes: the
    /// configuration and its `Arc`'s two counts; a server's connections share one).
    /// Everything but the
    /// reassembly buffers is allocated at construction. A reassembly slot's buffers
    /// hold the bytes of the fragments received and one byte per fragment (its id, in
    /// arrival order), growing as fragments arrive (at most doubling, never beyond
    /// `max_fragments` fragments), and are kept for reuse: they reach their bound only
    /// when a peer has sent that many fragment bytes for every slot. (A slot's buffers
    /// stay within twice the most it held at once: the bytes held for a peer stay
    /// below about twice the fragment bytes it sent, whatever fragment count they
    /// declare.) The payload of a
    /// [`PendingPacket`](super::PendingPacket) borrows these buffers.
    ///
    /// ```
    /// use netproto::packet::EndpointConfig;
    ///
    /// let bound = EndpointConfig::default().memory_bound();
    /// // 64 reassembly slots of 16 x 1024 bytes dominate: just over 1 MiB.
    /// assert!(bound > 64 * 16 * 1024 && bound < 64 * 16 * 1024 + 64 * 1024);
    /// ```
    pub fn memory_bound(&self) -> usize {
        use super::sequence_buffer::slot_bytes;
        use core::mem::size_of;
        let ring = |n: usize, slot: usize| n.saturating_mul(slot);
        // Per slot: the fragments' bytes, and their ids in arrival order.
        let reassembly = ring(
            self.fragment_reassembly_buffer_size,
            slot_bytes::<super::reassembly::Partial>().saturating_add(
                self.max_fragments
                    .saturating_mul(self.fragment_size.saturating_add(1)),
            ),
        );
        let transmit = self.max_datagram_size();
        reassembly
            .saturating_add(ring(
                self.sent_packets_buffer_size,
                slot_bytes::<super::sent_window::SentPacket>(),
            ))
            .saturating_add(super::sent_window::SentWindow::bits_heap_bytes(
                self.sent_packets_buffer_size,
            ))
            .saturating_add(ring(self.received_packets_buffer_size, slot_bytes::<()>()))
            .saturating_add(self.rtt_history_size.saturating_mul(size_of::<u64>()))
            .saturating_add(transmit)
            .saturating_add(size_of::<Self>() + 2 * size_of::<usize>())
    }

    /// The largest datagram the endpoint sends: a regular packet of up to
    /// `fragment_above` bytes or a fragment, with their headers.
    ///
    /// ```
    /// use netproto::packet::EndpointConfig;
    ///
    /// // A fragment: 5-byte fragment header, up to 9 header bytes, 1024 bytes.
    /// assert_eq!(EndpointConfig::default().max_datagram_size(), 1038);
    /// ```
    pub fn max_datagram_size(&self) -> usize {
        use super::header::MAX_HEADER_BYTES;
        (self.fragment_above.min(self.max_packet_size) + MAX_HEADER_BYTES).max(
            super::fragment::FRAGMENT_HEADER_BYTES
                .saturating_add(MAX_HEADER_BYTES)
                .saturating_add(self.fragment_size),
        )
    }

    /// The largest payload [`Endpoint::send`](super::Endpoint::send) takes:
    /// `max_packet_size`, less the ack-delay byte when
    /// [`report_ack_delay`](Self::report_ack_delay) is on.
    ///
    /// ```
    /// use netproto::packet::EndpointConfig;
    ///
    /// let config = EndpointConfig { report_ack_delay: true, ..EndpointConfig::default() };
    /// assert_eq!(config.max_payload_size(), 16383);
    /// ```
    pub fn max_payload_size(&self) -> usize {
        let extension = if self.report_ack_delay {
            super::ack_delay::ACK_DELAY_BYTES
        } else {
            0
        };
        self.max_packet_size.saturating_sub(extension)
    }

    /// Checks every field; [`Endpoint::new`](super::Endpoint::new) calls this.
    pub fn validate(&self) -> Result<(), EndpointConfigError> {
        let sizes = [
            (
                "max_packet_size",
                self.max_packet_size,
                MAX_PACKET_SIZE_LIMIT,
            ),
            ("fragment_above", self.fragment_above, usize::MAX),
            ("fragment_size", self.fragment_size, MAX_PACKET_SIZE_LIMIT),
            ("max_fragments", self.max_fragments, MAX_FRAGMENTS),
            (
                "sent_packets_buffer_size",
                self.sent_packets_buffer_size,
                MAX_SEQUENCE_BUFFER_SIZE,
            ),
            (
                "received_packets_buffer_size",
                self.received_packets_buffer_size,
                MAX_SEQUENCE_BUFFER_SIZE,
            ),
            (
                "fragment_reassembly_buffer_size",
                self.fragment_reassembly_buffer_size,
                MAX_SEQUENCE_BUFFER_SIZE,
            ),
            ("rtt_history_size", self.rtt_history_size, 65536),
            ("loss_window", self.loss_window, MAX_SEQUENCE_BUFFER_SIZE),
        ];
        if self.packet_header_size > MAX_PACKET_HEADER_SIZE {
            return Err(EndpointConfigError::TooLarge {
                field: "packet_header_size",
                value: self.packet_header_size,
                max: MAX_PACKET_HEADER_SIZE,
            });
        }
        for (field, value, max) in sizes {
            if value == 0 {
                return Err(EndpointConfigError::Zero { field });
            }
            if value > max {
                return Err(EndpointConfigError::TooLarge { field, value, max });
            }
        }
        if self.skip_mean_gap.is_zero() {
            return Err(EndpointConfigError::Zero {
                field: "skip_mean_gap",
            });
        }
        let capacity = self.max_fragments.checked_mul(self.fragment_size);
        if capacity.is_none_or(|c| c < self.max_packet_size) {
            return Err(EndpointConfigError::PacketDoesNotFit {
                max_packet_size: self.max_packet_size,
                max_fragments: self.max_fragments,
                fragment_size: self.fragment_size,
            });
        }
        for (field, value) in [
            ("rtt_smoothing_factor", self.rtt_smoothing_factor),
            (
                "bandwidth_smoothing_factor",
                self.bandwidth_smoothing_factor,
            ),
        ] {
            if !(value > 0.0 && value <= 1.0) {
                return Err(EndpointConfigError::SmoothingFactor { field, value });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_matches_reference() {
        let c = EndpointConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(
            (
                c.fragment_above,
                c.fragment_size,
                c.max_fragments,
                c.max_packet_size
            ),
            (1024, 1024, 16, 16384)
        );
    }

    #[test]
    fn rejects_each_bad_field() {
        let base = EndpointConfig::default();
        let cases = [
            EndpointConfig {
                max_fragments: 257,
                ..base.clone()
            },
            EndpointConfig {
                max_fragments: 15,
                ..base.clone()
            },
            EndpointConfig {
                sent_packets_buffer_size: 0,
                ..base.clone()
            },
            EndpointConfig {
                received_packets_buffer_size: 40000,
                ..base.clone()
            },
            EndpointConfig {
                rtt_smoothing_factor: 0.0,
                ..base.clone()
            },
            EndpointConfig {
                bandwidth_smoothing_factor: f64::NAN,
                ..base.clone()
            },
            EndpointConfig {
                fragment_size: usize::MAX,
                ..base.clone()
            },
            EndpointConfig {
                packet_header_size: usize::MAX,
                ..base.clone()
            },
            EndpointConfig {
                skip_mean_gap: Duration::ZERO,
                ..base.clone()
            },
            EndpointConfig {
                loss_window: 0,
                ..base.clone()
            },
            EndpointConfig {
                loss_window: 40000,
                ..base.clone()
            },
        ];
        for c in cases {
            let err = c.validate().expect_err("invalid");
            assert!(!err.to_string().is_empty());
        }
        assert!(matches!(
            EndpointConfig {
                max_fragments: 15,
                ..base
            }
            .validate(),
            Err(EndpointConfigError::PacketDoesNotFit { .. })
        ));
    }

    #[test]
    fn every_size_limit_is_inclusive() {
        let at_limits = EndpointConfig {
            packet_header_size: MAX_PACKET_HEADER_SIZE,
            max_packet_size: MAX_PACKET_SIZE_LIMIT,
            fragment_size: MAX_PACKET_SIZE_LIMIT,
            max_fragments: MAX_FRAGMENTS,
            sent_packets_buffer_size: MAX_SEQUENCE_BUFFER_SIZE,
            received_packets_buffer_size: MAX_SEQUENCE_BUFFER_SIZE,
            fragment_reassembly_buffer_size: MAX_SEQUENCE_BUFFER_SIZE,
            rtt_history_size: 65536,
            loss_window: MAX_SEQUENCE_BUFFER_SIZE,
            ..EndpointConfig::default()
        };
        assert_eq!(at_limits.validate(), Ok(()));
        type Field = fn(&mut EndpointConfig) -> &mut usize;
        let fields: [(&str, Field); 9] = [
            ("packet_header_size", |c| &mut c.packet_header_size),
            ("max_packet_size", |c| &mut c.max_packet_size),
            ("fragment_size", |c| &mut c.fragment_size),
            ("max_fragments", |c| &mut c.max_fragments),
            ("sent_packets_buffer_size", |c| {
                &mut c.sent_packets_buffer_size
            }),
            ("received_packets_buffer_size", |c| {
                &mut c.received_packets_buffer_size
            }),
            ("fragment_reassembly_buffer_size", |c| {
                &mut c.fragment_reassembly_buffer_size
            }),
            ("rtt_history_size", |c| &mut c.rtt_history_size),
            ("loss_window", |c| &mut c.loss_window),
        ];
        for (name, field) in fields {
            let mut over = at_limits.clone();
            *field(&mut over) += 1;
            assert!(
                matches!(over.validate(), Err(EndpointConfigError::TooLarge { field, .. }) if field == name),
                "{name}: {:?}",
                over.validate()
            );
        }
    }

    #[test]
    fn the_largest_datagram_is_a_whole_packet_or_a_fragment_with_headers() {
        use super::super::fragment::FRAGMENT_HEADER_BYTES;
        use super::super::header::MAX_HEADER_BYTES;
        // Fragments (1024 bytes and their headers) are the largest by default.
        let fragments = EndpointConfig::default();
        assert_eq!(
            fragments.max_datagram_size(),
            FRAGMENT_HEADER_BYTES + MAX_HEADER_BYTES + 1024
        );
        // A whole packet of up to `fragment_above` bytes is larger than a fragment.
        let whole = EndpointConfig {
            fragment_above: 1100,
            fragment_size: 256,
            max_fragments: 64,
            ..EndpointConfig::default()
        };
        assert_eq!(whole.max_datagram_size(), 1100 + MAX_HEADER_BYTES);
        // ... unless the packets themselves are smaller.
        let small = EndpointConfig {
            max_packet_size: 200,
            ..whole
        };
        assert_eq!(
            small.max_datagram_size(),
            FRAGMENT_HEADER_BYTES + MAX_HEADER_BYTES + 256
        );
    }

    #[test]
    fn the_memory_bound_adds_up_every_ring_and_the_send_buffer() {
        use super::super::reassembly::Partial;
        use super::super::sent_window::SentPacket;
        use core::mem::size_of;
        let c = EndpointConfig {
            fragment_reassembly_buffer_size: 4,
            max_fragments: 8,
            fragment_size: 100,
            max_packet_size: 800,
            fragment_above: 100,
            sent_packets_buffer_size: 16,
            received_packets_buffer_size: 32,
            rtt_history_size: 10,
            ..EndpointConfig::default()
        };
        assert_eq!(c.validate(), Ok(()));
        // Every ring slot carries 4 bytes of sequence beside its entry, padded to the
        // entry's alignment; the 16 sent packets' fates take two bits for each of 64 sequences.
        let slot = |entry: usize| (4 + entry).next_multiple_of(8);
        let expected = 4 * (slot(size_of::<Partial>()) + 8 * 101)
            + 16 * slot(size_of::<SentPacket>())
            + 2 * 8
            + 32 * size_of::<(u32, ())>()
            + 10 * size_of::<f64>()
            + c.max_datagram_size()
            + size_of::<EndpointConfig>()
            + 16;
        assert_eq!(c.memory_bound(), expected);
    }
}
