//! The sans-IO packet endpoint: sequence numbers, acks, fragmentation, statistics.

use super::ack_delay::{ACK_DELAY_BYTES, HoldClock, ReplyLog};
use super::ack_state::{ProcessedAcks, ReceivedBits};
use super::config::{EndpointConfig, EndpointConfigError};
use super::fragment::{
    FRAGMENT_HEADER_BYTES, FragmentError, FragmentHeader, FragmentLimits, parse_fragment,
};
use super::header::{HeaderError, MAX_HEADER_BYTES, PacketHeader};
use super::outcome::{Acks, PacketSendError, ReceiveError, Received, Sent};
use super::reassembly::{Reassembly, StoreError};
use super::sent_window::{SentPacket, SentWindow};
use super::sequence_buffer::SequenceBuffer;
use super::stats::{EndpointStats, Estimates, Estimator};
use crate::Time;
use crate::sequence::Sequence;
use core::fmt;
use std::sync::Arc;
use std::time::Duration;

/// One end of a packet connection, byte-compatible with a `reliable` endpoint.
///
/// Sans-IO: it never reads a clock or touches a socket. Time comes in as `now`
/// (seconds, any origin, non-decreasing; if it does go back, an ack that seems to
/// arrive before its packet left is an RTT sample of 0, never negative, and a jump
/// forward is one long sample: the smoothed RTT recovers with the next acks, and the
/// endpoint has no timers to stall), datagrams come in as byte slices, and
/// outgoing datagrams are handed to a closure, one call per datagram, from an
/// internal buffer (no allocation per packet).
///
/// * [`send`](Self::send) stamps a payload with the next sequence number and the acks
///   of what we received, and transmits it as one datagram, or as fragments when it
///   is larger than `fragment_above`.
/// * [`receive`](Self::receive) validates a datagram, reassembles fragments, drops
///   stale and duplicate packets, and hands a whole packet out as a
///   [`PendingPacket`]; the layer above reads its payload and accepts it or not
///   (only accepted packets are acked; accepting reports which of our packets the
///   peer's header newly acked).
/// * [`update`](Self::update) refreshes the estimates of its [`EndpointStats`].
///
/// ```
/// use netproto::Time;
/// use std::time::Duration;
/// use netproto::packet::{Endpoint, EndpointConfig, Incoming, Sequence};
///
/// let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO)?;
/// let mut b = Endpoint::new(EndpointConfig::default(), Time::ZERO)?;
///
/// // A sends; the datagram goes over some transport...
/// let mut datagrams = Vec::new();
/// let sent = a.send(Time::ZERO, b"state update", |d| datagrams.push(d.to_vec()))?;
/// assert_eq!(sent.sequence, Sequence(0));
///
/// // ... and B receives it, reads the payload and accepts the packet.
/// let Incoming::Packet(packet) = b.receive(Time::from_secs_f64(0.05), &datagrams[0])? else {
///     unreachable!("a regular datagram is a whole packet");
/// };
/// assert_eq!(packet.payload(), b"state update");
/// packet.accept();
///
/// // B's next packet acks A's packet 0.
/// datagrams.clear();
/// b.send(Time::from_secs_f64(0.06), b"ack carrier", |d| datagrams.push(d.to_vec()))?;
/// let received = a.receive(Time::from_secs_f64(0.1), &datagrams[0])?.accept();
/// assert_eq!(received.acks().as_slice(), &[Sequence(0)]);
/// assert_eq!(a.stats().rtt, Duration::from_millis(100));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Endpoint {
    /// Shared by a server's connections (one allocation read by all of them, warm in
    /// the cache from one to the next).
    config: Arc<EndpointConfig>,
    limits: FragmentLimits,
    time: Time,
    /// Our packets' records; its next sequence is the one our next packet takes.
    sent: SentWindow,
    received: SequenceBuffer<()>,
    /// `received.ack_bits()`, maintained incrementally when that is exact.
    received_bits: Option<ReceivedBits>,
    /// The peer's ack fields already processed.
    processed: ProcessedAcks,
    reassembly: Reassembly,
    estimator: Estimator,
    /// The event counters (the estimates' fields unused: the estimator's).
    counters: EndpointStats,
    transmit_buffer: Box<[u8]>,
    /// The skipped-sequence trap, when `skip_sequence_seed` is set.
    skip: Option<Skipper>,
    /// With `report_ack_delay`: the packets accepted since our last send...
    hold: HoldClock,
    /// ... and the peer's recent headers, for network RTT samples.
    replies: Option<ReplyLog>,
}

/// When to skip a sequence: a Poisson process in time, sampled at each send from a
/// splitmix64 stream (deterministic from the seed).
#[derive(Clone, Copy, Debug)]
struct Skipper {
    state: u64,
    /// Mean time between skips.
    mean_gap: Duration,
    /// When the process was last sampled (the previous send, or the endpoint's
    /// creation).
    sampled_at: Time,
    /// A skip is due but waits for a send whose slot holds no unacked packet.
    pending: bool,
}

impl Skipper {
    fn new(seed: u64, mean_gap: Duration, now: Time) -> Self {
        // The seed goes through the mixer first: splitmix64 streams of seeds that
        // differ by a multiple of its increment are the same stream shifted.
        let mut mixer = Self {
            state: seed ^ 0x5851_f42d_4c95_7f2d,
            mean_gap,
            sampled_at: now,
            pending: false,
        };
        Self {
            state: mixer.next_u64(),
            mean_gap,
            sampled_at: now,
            pending: false,
        }
    }

    /// Whether a skip is due at a send at `now`: it is when at least one event of the
    /// process fell since the previous send (probability `1 - exp(-dt / mean_gap)`,
    /// drawn afresh each time: memoryless), or one was already waiting. A clock that
    /// went back counts as no time elapsed.
    fn due(&mut self, now: Time) -> bool {
        let dt = now.secs_since(self.sampled_at).max(0.0);
        self.sampled_at = now;
        if !self.pending && dt > 0.0 {
            let p = -(-dt / self.mean_gap.as_secs_f64()).exp_m1();
            self.pending = self.uniform() < p;
        }
        self.pending
    }

    /// A uniform draw in `[0, 1)` with 53 random bits.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// The next 64 bits of the splitmix64 stream.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Endpoint {
    /// An endpoint with `config`, created at time `now`. Fails when the configuration
    /// is invalid (see [`EndpointConfig::validate`]).
    pub fn new(config: EndpointConfig, now: Time) -> Result<Self, EndpointConfigError> {
        let skip_seed = config.skip_sequence_seed;
        Self::with_shared_config(Arc::new(config), skip_seed, now)
    }

    /// An endpoint with a `config` shared with others (a server's connections), its
    /// skipped-sequence trap seeded with `skip_seed` (the config's own
    /// `skip_sequence_seed` is not read: each connection has its own seed).
    pub(crate) fn with_shared_config(
        config: Arc<EndpointConfig>,
        skip_seed: Option<u64>,
        now: Time,
    ) -> Result<Self, EndpointConfigError> {
        config.validate()?;
        let regular = config.fragment_above.min(config.max_packet_size) + MAX_HEADER_BYTES;
        let fragment = FRAGMENT_HEADER_BYTES + MAX_HEADER_BYTES + config.fragment_size;
        let transmit_buffer = vec![0u8; regular.max(fragment)].into_boxed_slice();
        Ok(Self {
            limits: FragmentLimits {
                max_fragments: config.max_fragments,
                fragment_size: config.fragment_size,
                max_packet_size: config.max_packet_size,
            },
            time: now,
            sent: SentWindow::new(config.sent_packets_buffer_size),
            received: SequenceBuffer::new(config.received_packets_buffer_size),
            received_bits: ReceivedBits::exact_for(config.received_packets_buffer_size)
                .then(ReceivedBits::new),
            processed: ProcessedAcks::default(),
            reassembly: Reassembly::new(
                config.fragment_reassembly_buffer_size,
                config.fragment_size,
            ),
            estimator: Estimator::new(&config),
            counters: EndpointStats::default(),
            transmit_buffer,
            skip: skip_seed.map(|seed| Skipper::new(seed, config.skip_mean_gap, now)),
            hold: HoldClock::default(),
            replies: config.report_ack_delay.then(ReplyLog::new),
            config,
        })
    }

    /// The configuration. (A server's connections share the server's, whose
    /// `skip_sequence_seed` is not theirs: each connection's trap has a seed of its
    /// own.)
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// The time of the last call that took `now`.
    pub fn time(&self) -> Time {
        self.time
    }

    /// The sequence number the next packet will get.
    pub fn next_sequence(&self) -> Sequence {
        self.sent.next_sequence()
    }

    /// The header our next packet would carry: the next sequence and the acks of
    /// what we have received and accepted.
    #[inline]
    pub(crate) fn next_header(&self) -> PacketHeader {
        let (ack, ack_bits) = match &self.received_bits {
            Some(bits) => bits.get(),
            None => self.received.ack_bits(),
        };
        PacketHeader {
            sequence: self.sent.next_sequence(),
            ack,
            ack_bits,
        }
    }

    /// The link estimates (refreshed by [`update`](Self::update); `rtt` at every
    /// ack) and the event counters.
    pub fn stats(&self) -> EndpointStats {
        self.estimator.estimates().stats(&self.counters)
    }

    /// The estimates, for the layers that time by them.
    pub(crate) fn estimates(&self) -> &Estimates {
        self.estimator.estimates()
    }

    /// `true` when our packet `sequence` is in the sent window and has been acked;
    /// `false` when it is in the window unacked; `None` when it is not in the window
    /// (or is a sequence we skipped: never sent).
    pub fn is_acked(&self, sequence: Sequence) -> Option<bool> {
        self.sent
            .get(sequence)
            .filter(|p| !p.skipped)
            .map(|p| p.acked)
    }

    /// `true` when `sequence` is in the sent window as a sequence we skipped (never
    /// sent): a peer acking it acks a packet it never received (see
    /// [`EndpointConfig::skip_sequence_seed`]).
    pub fn is_skipped(&self, sequence: Sequence) -> bool {
        self.sent.get(sequence).is_some_and(|p| p.skipped)
    }

    /// Packets currently being reassembled (at most `fragment_reassembly_buffer_size`).
    pub fn pending_reassemblies(&self) -> usize {
        self.reassembly.pending()
    }

    /// Bytes held by reassembly buffers (in use or kept for reuse); at most
    /// `fragment_reassembly_buffer_size * max_fragments * (fragment_size + 1)`.
    pub fn reassembly_memory(&self) -> usize {
        self.reassembly.memory()
    }

    /// Sets the time and refreshes the statistics: the packet loss at every call, the
    /// others (RTT min / max / jitter from the RTT history's running sums, bandwidth
    /// from the bytes counted since the last time) four times a second. Call it once
    /// per tick.
    pub fn update(&mut self, now: Time) {
        self.time = now;
        self.estimator.update(now, &self.sent);
    }

    /// Asks the CPU for the endpoint's own fields that receiving a packet reads and
    /// writes: the first stage of a batch's prefetch (`crate::prefetch`). Their
    /// addresses need no loads, so many connections' fetches overlap.
    #[inline]
    pub(crate) fn prefetch_fields(&self) {
        use crate::prefetch::prefetch;
        let c = &self.counters;
        prefetch(&c.rtt);
        prefetch(&c.jitter_stddev_vs_avg_rtt);
        prefetch(&c.packets_sent);
        prefetch(&c.packets_dropped_stale);
        prefetch(&c.fragments_sent);
        self.estimator.prefetch_fields();
        prefetch(&self.config);
        prefetch(&self.config.max_packet_size);
        prefetch(&self.sent);
        prefetch(&self.received);
        prefetch(&self.received_bits);
        prefetch(&self.processed);
        prefetch(&self.hold);
        prefetch(&self.replies);
        prefetch(&self.skip);
        prefetch(&self.time);
    }

    /// The second stage, once [`prefetch_fields`](Self::prefetch_fields) brought the
    /// windows' positions: the slots the peer's next packet fills and reads (the
    /// received window's next, the records of our newest packets it will ack, the
    /// reply log's pair and the RTT history's slot).
    #[inline]
    pub(crate) fn prefetch_windows(&self) {
        let next = self.received.next_sequence();
        self.received.prefetch(next);
        self.sent.prefetch_recent();
        if let Some(replies) = &self.replies {
            replies.prefetch(next);
        }
        self.estimator
            .prefetch_windows(next, self.sent.next_sequence().prev());
        // The start of the buffer a packet is written to (a small one fits in 2 lines).
        crate::prefetch::prefetch_at(&self.transmit_buffer, 0);
        crate::prefetch::prefetch_at(&self.transmit_buffer, 64);
    }

    /// Sends `payload` as the next packet, calling `transmit` once per datagram.
    ///
    /// A packet above `fragment_above` bytes goes out as `ceil(len / fragment_size)`
    /// fragments. A payload above [`max_payload_size`](EndpointConfig::max_payload_size)
    /// is refused with [`PacketSendError::TooLarge`] and does not consume a sequence
    /// number. With [`report_ack_delay`](EndpointConfig::report_ack_delay) the packet
    /// is the ack-delay byte followed by `payload`.
    ///
    /// The datagram slices borrow an internal buffer: copy them out (or write them to
    /// a socket) inside `transmit`.
    pub fn send(
        &mut self,
        now: Time,
        payload: &[u8],
        mut transmit: impl FnMut(&[u8]),
    ) -> Result<Sent, PacketSendError> {
        self.time = now;
        let max = self.config.max_payload_size();
        if payload.len() > max {
            self.counters.packets_dropped_too_large_to_send += 1;
            return Err(PacketSendError::TooLarge {
                size: payload.len(),
                max,
            });
        }
        let header = self.next_header();
        let mut extension = [0u8; ACK_DELAY_BYTES];
        let extension: &[u8] = if self.config.report_ack_delay {
            extension[0] = self.hold.take(now, header.ack);
            &extension
        } else {
            &[]
        };
        let len = extension.len() + payload.len();

        // The slot this packet takes holds the packet sent one window ago (or
        // nothing): if it was never acked, it is now lost for good.
        let bytes = self.config.packet_header_size + len;
        self.estimator.on_sent(bytes);
        let (sequence, evicted) = self.sent.record(SentPacket {
            time: now,
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
            acked: false,
            skipped: false,
        });
        let lost = evicted
            .filter(|(_, p)| !p.acked && !p.skipped)
            .map(|(old, _)| old);
        if lost.is_some() {
            self.counters.packets_lost += 1;
        }

        let buf = &mut self.transmit_buffer;
        let fragments = if len <= self.config.fragment_above {
            let mut header_bytes = [0u8; MAX_HEADER_BYTES];
            let h = header.write(&mut header_bytes);
            buf[..h].copy_from_slice(&header_bytes[..h]);
            let end = copy_packet(extension, payload, 0, &mut buf[h..h + len]);
            transmit(&buf[..h + end]);
            0
        } else {
            let header_bytes = header.encode();
            let fs = self.config.fragment_size;
            let count = len.div_ceil(fs);
            for id in 0..count {
                let fragment = FragmentHeader {
                    sequence,
                    fragment_id: id as u8,
                    fragment_count: count as u16,
                };
                buf[..FRAGMENT_HEADER_BYTES].copy_from_slice(&fragment.encode());
                let mut pos = FRAGMENT_HEADER_BYTES;
                if id == 0 {
                    buf[pos..pos + header_bytes.len()].copy_from_slice(&header_bytes);
                    pos += header_bytes.len();
                }
                // The last fragment is shorter: copy_packet stops at the packet's end.
                pos += copy_packet(extension, payload, id * fs, &mut buf[pos..pos + fs]);
                transmit(&buf[..pos]);
            }
            self.counters.fragments_sent += count as u64;
            count as u16
        };
        self.counters.packets_sent += 1;
        self.maybe_skip(now);
        Ok(Sent {
            sequence,
            fragments,
            lost,
        })
    }

    /// The skipped-sequence trap: after a send, when a skip is due (see
    /// [`EndpointConfig::skip_mean_gap`]), takes the next sequence out of use
    /// (recorded in the sent window as skipped, never sent), so that
    /// [`next_sequence`](Self::next_sequence) already names the packet after it. At
    /// most one skip per send. A skip waits while its slot holds an unacked packet,
    /// so that it never pushes a packet out of the window (every packet is still
    /// reported once, acked or lost, by the send that evicts it).
    fn maybe_skip(&mut self, now: Time) {
        let Some(skip) = &mut self.skip else {
            return;
        };
        if !skip.due(now) {
            return;
        }
        let evicts_unacked = self
            .sent
            .occupant()
            .and_then(|old| self.sent.get(old))
            .is_some_and(|p| !p.acked && !p.skipped);
        if evicts_unacked {
            return;
        }
        skip.pending = false;
        self.sent.record(SentPacket {
            time: now,
            bytes: 0,
            acked: false,
            skipped: true,
        });
        self.counters.sequences_skipped += 1;
    }

    /// Phase 1 of receiving one datagram at time `now`: validates it and, when it
    /// completes a packet, hands the packet out for the layer above's verdict.
    ///
    /// Every check runs here, before a byte of payload is handed out: the header or
    /// fragment fields, the sizes, the acks (an ack naming a packet not sent yet is
    /// [`ForgedAck`](ReceiveError::ForgedAck), one naming a sequence we skipped is
    /// [`OptimisticAck`](ReceiveError::OptimisticAck)), stale and duplicate packets.
    /// A fragment is stored and reported as [`Incoming::Fragment`]; a regular datagram,
    /// or the last fragment of a packet, gives [`Incoming::Packet`] with a
    /// [`PendingPacket`] that borrows the endpoint until the verdict: only
    /// [`accept`](PendingPacket::accept) records the packet as received (so that it
    /// will be acked) and processes its header's acks;
    /// [`refuse`](PendingPacket::refuse), or dropping it, leaves no trace but the
    /// `packets_dropped_by_layer` counter.
    ///
    /// Everything else is dropped whole, counted, and returned as a
    /// [`ReceiveError`]; no input can make this panic or allocate beyond the
    /// configured reassembly table.
    ///
    /// ```
    /// use netproto::Time;
    /// use netproto::packet::{Endpoint, EndpointConfig, Incoming, Sequence};
    ///
    /// let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO)?;
    /// let mut b = Endpoint::new(EndpointConfig::default(), Time::ZERO)?;
    /// let mut wire = Vec::new();
    /// a.send(Time::ZERO, b"bad", |d| wire.push(d.to_vec()))?;
    /// a.send(Time::ZERO, b"good", |d| wire.push(d.to_vec()))?;
    /// for datagram in &wire {
    ///     if let Incoming::Packet(packet) = b.receive(Time::from_secs_f64(0.05), datagram)? {
    ///         if packet.payload() == b"good" {
    ///             packet.accept();
    ///         } else {
    ///             packet.refuse();
    ///         }
    ///     }
    /// }
    /// assert_eq!(b.stats().packets_dropped_by_layer, 1);
    /// // Only packet 1 was accepted: b's next packet acks it alone.
    /// let mut back = Vec::new();
    /// b.send(Time::from_secs_f64(0.05), b"reply", |d| back.push(d.to_vec()))?;
    /// let Incoming::Packet(reply) = a.receive(Time::from_secs_f64(0.1), &back[0])? else {
    ///     return Err("a whole packet".into());
    /// };
    /// let acks: Vec<Sequence> = reply.accept().iter().collect();
    /// assert_eq!(acks, [Sequence(1)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn receive<'a>(
        &'a mut self,
        now: Time,
        datagram: &'a [u8],
    ) -> Result<Incoming<'a>, ReceiveError> {
        self.time = now;
        let Some(&prefix) = datagram.first() else {
            self.counters.packets_dropped_invalid += 1;
            return Err(ReceiveError::InvalidHeader(HeaderError::Truncated {
                needed: 3,
                got: 0,
            }));
        };
        let max = self.config.max_packet_size + MAX_HEADER_BYTES + FRAGMENT_HEADER_BYTES;
        if datagram.len() > max {
            self.counters.packets_dropped_too_large_to_receive += 1;
            return Err(ReceiveError::TooLarge {
                size: datagram.len(),
                max,
            });
        }
        if prefix & 1 != 0 {
            return self.receive_fragment(datagram);
        }
        self.counters.packets_received += 1;
        let (header, header_len) = PacketHeader::decode(datagram).map_err(|e| {
            self.counters.packets_dropped_invalid += 1;
            ReceiveError::InvalidHeader(e)
        })?;
        let body = datagram.get(header_len..).unwrap_or_default();
        self.check_packet(&header, body.len())?;
        let Some((hold, payload)) = self.split_extension(body) else {
            return Err(self.missing_extension(header_len, datagram.len()));
        };
        Ok(Incoming::Packet(PendingPacket {
            header,
            hold,
            wire_len: datagram.len(),
            payload: Payload::Datagram(payload),
            endpoint: Some(self),
        }))
    }

    /// Splits a packet's body into the ack-delay byte (with `report_ack_delay`) and
    /// the payload; `None` when the byte is missing.
    #[inline]
    fn split_extension<'b>(&self, body: &'b [u8]) -> Option<(Option<u8>, &'b [u8])> {
        if !self.config.report_ack_delay {
            return Some((None, body));
        }
        let (&hold, payload) = body.split_first()?;
        Some((Some(hold), payload))
    }

    /// Counts and reports a packet without the ack-delay byte (`report_ack_delay`
    /// on): `header_len` header bytes, `len` bytes in all.
    fn missing_extension(&mut self, header_len: usize, len: usize) -> ReceiveError {
        self.counters.packets_dropped_invalid += 1;
        ReceiveError::InvalidHeader(HeaderError::Truncated {
            needed: header_len + ACK_DELAY_BYTES,
            got: len,
        })
    }

    fn receive_fragment<'a>(
        &'a mut self,
        datagram: &'a [u8],
    ) -> Result<Incoming<'a>, ReceiveError> {
        let fragment = parse_fragment(datagram, &self.limits).map_err(|e| {
            self.counters.fragments_dropped_invalid += 1;
            ReceiveError::InvalidFragment(e)
        })?;
        let sequence = fragment.header.sequence;
        let fragment_id = fragment.header.fragment_id;
        // A sender fragments only packets above `fragment_above`, so a one-fragment
        // packet is a packet of `fragment_above + 1 ..= fragment_size` bytes: with
        // `fragment_size <= fragment_above` there is none, and a smaller one would
        // have been sent whole.
        let fragment_above = self.config.fragment_above;
        if fragment.header.fragment_count == 1 && fragment.payload.len() <= fragment_above {
            self.counters.fragments_dropped_invalid += 1;
            return Err(ReceiveError::InvalidFragment(
                FragmentError::NeedlessFragment {
                    len: fragment.payload.len(),
                    fragment_above,
                },
            ));
        }
        if self.received.contains(sequence) {
            self.counters.fragments_dropped_duplicate += 1;
            return Err(ReceiveError::DuplicateFragment {
                sequence,
                fragment_id,
            });
        }
        if self.received.is_stale(sequence) {
            self.counters.fragments_dropped_invalid += 1;
            return Err(ReceiveError::StaleFragment(sequence));
        }
        let completed = match self.reassembly.store(&fragment) {
            Ok(completed) => completed,
            Err(e) => {
                return Err(match e {
                    StoreError::Stale => {
                        self.counters.fragments_dropped_invalid += 1;
                        ReceiveError::StaleFragment(sequence)
                    }
                    StoreError::CountMismatch { expected, got } => {
                        self.counters.fragments_dropped_invalid += 1;
                        ReceiveError::FragmentCountMismatch {
                            sequence,
                            expected,
                            got,
                        }
                    }
                    StoreError::Duplicate => {
                        self.counters.fragments_dropped_duplicate += 1;
                        ReceiveError::DuplicateFragment {
                            sequence,
                            fragment_id,
                        }
                    }
                });
            }
        };
        self.counters.fragments_received += 1;
        let Some(packet) = completed else {
            return Ok(Incoming::Fragment {
                sequence,
                fragment_id,
                fragment_count: fragment.header.fragment_count,
            });
        };
        self.counters.packets_received += 1;
        if let Err(e) = self.check_packet(&packet.header, packet.len) {
            self.reassembly.recycle(sequence, packet.data);
            return Err(e);
        }
        let body = packet.data.get(..packet.len).unwrap_or_default();
        let Some((hold, payload)) = self.split_extension(body) else {
            self.reassembly.recycle(sequence, packet.data);
            return Err(self.missing_extension(packet.header.encoded_len(), packet.len));
        };
        let start = packet.len - payload.len();
        Ok(Incoming::Packet(PendingPacket {
            header: packet.header,
            hold,
            wire_len: packet.header.encoded_len() + packet.len,
            payload: Payload::Reassembled {
                data: packet.data,
                start,
                len: packet.len,
            },
            endpoint: Some(self),
        }))
    }

    /// The checks of a whole packet, shared by regular datagrams and reassembled
    /// packets: everything is refused here or nowhere, so that a packet handed out
    /// needs nothing but the verdict.
    #[inline]
    fn check_packet(
        &mut self,
        header: &PacketHeader,
        payload_len: usize,
    ) -> Result<(), ReceiveError> {
        let sequence = header.sequence;
        if payload_len > self.config.max_packet_size {
            self.counters.packets_dropped_too_large_to_receive += 1;
            return Err(ReceiveError::TooLarge {
                size: payload_len,
                max: self.config.max_packet_size,
            });
        }
        // A peer can only ack what we sent: an ack at or beyond our next sequence
        // with any bit set is forged or corrupt. (A fresh peer sends ack 65535 with
        // no bits, which passes whatever our sequence is.)
        if header.ack_bits != 0 && !header.ack.is_older_than(self.sent.next_sequence()) {
            self.counters.packets_dropped_invalid += 1;
            return Err(ReceiveError::ForgedAck {
                ack: header.ack,
                next: self.sent.next_sequence(),
            });
        }
        if let Some(skipped) = self.acked_skip(header) {
            self.counters.packets_dropped_optimistic_ack += 1;
            return Err(ReceiveError::OptimisticAck { sequence: skipped });
        }
        if self.received.is_stale(sequence) {
            self.counters.packets_dropped_stale += 1;
            return Err(ReceiveError::Stale(sequence));
        }
        if self.received.contains(sequence) {
            self.counters.packets_dropped_duplicate += 1;
            return Err(ReceiveError::Duplicate(sequence));
        }
        Ok(())
    }

    /// The bits of `header` not covered by a header already accepted. Those covered
    /// were checked when it was, and cannot ack anything new.
    #[inline]
    fn unseen_bits(&self, header: &PacketHeader) -> u32 {
        self.processed
            .unseen(header.ack, header.ack_bits, self.sequences_used())
    }

    /// Sequences consumed so far: sent packets plus skipped sequences.
    fn sequences_used(&self) -> u64 {
        self.counters.packets_sent + self.counters.sequences_skipped
    }

    /// A sequence we skipped (never sent) that `header` acks, if any.
    #[inline]
    fn acked_skip(&self, header: &PacketHeader) -> Option<Sequence> {
        // Nothing can be skipped without a skip seed: no lookups.
        self.skip.as_ref()?;
        let mut bits = self.unseen_bits(header);
        let mut acked = header.ack;
        while bits != 0 {
            let skip = bits.trailing_zeros();
            acked = acked.wrapping_sub(skip as u16);
            bits >>= skip;
            if self.sent.get(acked).is_some_and(|p| p.skipped) {
                return Some(acked);
            }
            bits >>= 1;
            acked = acked.prev();
        }
        None
    }

    /// Phase 2 of an accepted packet: records it as received (so it will be acked)
    /// and processes its header's acks. The packet passed [`check_packet`].
    fn accept_packet(&mut self, header: &PacketHeader, hold: Option<u8>, wire_len: usize) -> Acks {
        let sequence = header.sequence;
        self.estimator
            .on_received(self.config.packet_header_size + wire_len);
        if self.received.insert_in_place(sequence).is_ok()
            && let Some(bits) = &mut self.received_bits
        {
            bits.insert(sequence);
        }
        self.reassembly.advance(sequence);
        self.counters.packets_accepted += 1;
        self.hold
            .on_accept(sequence, self.time, self.received.newest());
        self.apply_acks(header, hold)
    }

    /// Processes the acks of a packet that passed [`check_packet`] (accepted, or
    /// postponed by the layer above), and the RTT samples they give.
    fn apply_acks(&mut self, header: &PacketHeader, hold: Option<u8>) -> Acks {
        // Walk the ack bits from bit 0 (ack) to bit 31 (ack - 31), skipping those an
        // earlier header already covered (they cannot ack anything new).
        let mut acks = Acks::EMPTY;
        let used = self.sequences_used();
        let mut bits = self.unseen_bits(header);
        self.processed.record(header.ack, header.ack_bits, used);
        // With the ack-delay byte the samples come from the reply log below;
        // without it, every newly acked packet is a send-to-ack sample.
        let per_packet_rtt = self.replies.is_none();
        let mut acked = header.ack;
        while bits != 0 {
            let skip = bits.trailing_zeros();
            acked = acked.wrapping_sub(skip as u16);
            bits >>= skip;
            // A skipped sequence cannot be here: `check_packet` refused it.
            if let Some(packet) = self.sent.ack(acked) {
                self.counters.packets_acked += 1;
                self.estimator.on_acked(packet.bytes);
                if per_packet_rtt {
                    let rtt = self.time.saturating_duration_since(packet.time);
                    self.estimator.rtt_sample(acked, rtt, 1);
                }
                acks.push(acked);
            }
            bits >>= 1;
            acked = acked.prev();
        }
        self.estimator.on_acks(header.ack, header.ack_bits);
        if let (Some(log), Some(hold)) = (&mut self.replies, hold) {
            for sample in log
                .on_accept(header, hold, self.time, self.sent.ring())
                .into_iter()
                .flatten()
            {
                self.estimator
                    .rtt_sample(sample.reply, sample.rtt, sample.packets);
                self.estimator.ack_delay_sample(sample.hold, sample.packets);
            }
        }
        acks
    }
}

/// Copies bytes `from .. from + out.len()` of the packet `extension ++ payload` into
/// `out` (one fragment's share, without building the packet), and returns how many.
fn copy_packet(extension: &[u8], payload: &[u8], from: usize, out: &mut [u8]) -> usize {
    let mut written = 0;
    let mut at = from;
    for part in [extension, payload] {
        if written == out.len() {
            break;
        }
        if at >= part.len() {
            at -= part.len();
            continue;
        }
        let n = (part.len() - at).min(out.len() - written);
        out[written..written + n].copy_from_slice(&part[at..at + n]);
        written += n;
        at = 0;
    }
    written
}

/// What [`Endpoint::receive`] made of a valid datagram.
#[derive(Debug)]
#[must_use = "a packet is acked only if it is accepted: dropping it refuses it"]
pub enum Incoming<'a> {
    /// A fragment was stored; its packet is not complete yet.
    Fragment {
        /// The sequence of the packet.
        sequence: Sequence,
        /// The fragment's index.
        fragment_id: u8,
        /// The packet's fragment count.
        fragment_count: u16,
    },
    /// A whole packet (a regular datagram, or the last fragment of a packet), waiting
    /// for the layer above's verdict.
    Packet(PendingPacket<'a>),
}

impl Incoming<'_> {
    /// Accepts the packet, if this is one, without looking at its payload (see
    /// [`PendingPacket::accept`]); a fragment needs no verdict. For tests and layers
    /// that take every packet.
    ///
    /// ```
    /// use netproto::Time;
    /// use netproto::packet::{Endpoint, EndpointConfig, Received, Sequence};
    ///
    /// let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO)?;
    /// let mut b = Endpoint::new(EndpointConfig::default(), Time::ZERO)?;
    /// let mut wire = Vec::new();
    /// a.send(Time::ZERO, b"hello", |d| wire.push(d.to_vec()))?;
    /// let received = b.receive(Time::from_secs_f64(0.05), &wire[0])?.accept();
    /// assert!(matches!(received, Received::Packet { sequence: Sequence(0), .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn accept(self) -> Received {
        match self {
            Self::Fragment {
                sequence,
                fragment_id,
                fragment_count,
            } => Received::Fragment {
                sequence,
                fragment_id,
                fragment_count,
            },
            Self::Packet(packet) => {
                let sequence = packet.sequence();
                Received::Packet {
                    sequence,
                    acks: packet.accept(),
                }
            }
        }
    }
}

/// Where a pending packet's payload lives.
enum Payload<'a> {
    /// In the datagram (a regular packet).
    Datagram(&'a [u8]),
    /// In a reassembly buffer taken out of the table, given back at the verdict:
    /// bytes `start..len` (after the ack-delay byte, when there is one).
    Reassembled {
        data: Vec<u8>,
        start: usize,
        len: usize,
    },
}

/// The layer above's verdict on a [`PendingPacket`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accept,
    Postpone,
    Refuse,
}

/// A whole packet that passed every check of [`Endpoint::receive`], waiting for the
/// layer above's verdict. It borrows the endpoint (nothing else can happen to it
/// meanwhile) and, for a reassembled packet, one of its reassembly buffers, which
/// the verdict gives back for reuse (no allocation per packet).
///
/// [`accept`](Self::accept) records it; [`refuse`](Self::refuse) and dropping it
/// refuse it: not recorded, not acked, its acks not applied, counted in
/// `packets_dropped_by_layer`. [`postpone`](Self::postpone) is for a payload the layer above
/// cannot take *now* (flow control): not recorded or acked either, but its acks
/// apply. A packet not recorded can be received again (a copy is not a duplicate).
#[must_use = "a packet is acked only if it is accepted: dropping it refuses it"]
pub struct PendingPacket<'a> {
    header: PacketHeader,
    /// The ack-delay byte, with `report_ack_delay`.
    hold: Option<u8>,
    /// Datagram bytes (for the bandwidth estimate).
    wire_len: usize,
    payload: Payload<'a>,
    /// `None` once the verdict is given.
    endpoint: Option<&'a mut Endpoint>,
}

impl PendingPacket<'_> {
    /// The packet's sequence.
    pub fn sequence(&self) -> Sequence {
        self.header.sequence
    }

    /// The packet's payload.
    pub fn payload(&self) -> &[u8] {
        match &self.payload {
            Payload::Datagram(payload) => payload,
            Payload::Reassembled { data, start, len } => data.get(*start..*len).unwrap_or_default(),
        }
    }

    /// Phase 2: records the packet as received (it will be acked), processes its
    /// header's acks, and returns the sequences of our packets it newly acked, newest
    /// first; each of our packets is reported once over the endpoint's life.
    pub fn accept(mut self) -> Acks {
        self.verdict(Verdict::Accept)
    }

    /// Postpones the packet: the layer above cannot take its payload now (its receive
    /// queue is full), but the packet is genuine. It is not recorded (not acked: the
    /// peer sends what it carried again, and a copy of it is not a duplicate), and is
    /// counted in `packets_dropped_by_layer`; its header's acks *are* applied, so that what
    /// the peer already received is released rather than resent. Returns our packets
    /// it newly acked, as [`accept`](Self::accept) does.
    pub fn postpone(mut self) -> Acks {
        self.verdict(Verdict::Postpone)
    }

    /// Refuses the packet: it is not recorded (not acked, and a copy of it is not a
    /// duplicate), its acks are not applied, and it is counted in
    /// `packets_dropped_by_layer`. Dropping the packet does the same.
    pub fn refuse(mut self) {
        self.verdict(Verdict::Refuse);
    }

    fn verdict(&mut self, verdict: Verdict) -> Acks {
        let Some(endpoint) = self.endpoint.take() else {
            return Acks::EMPTY;
        };
        let acks = match verdict {
            Verdict::Accept => endpoint.accept_packet(&self.header, self.hold, self.wire_len),
            Verdict::Postpone => {
                endpoint.counters.packets_dropped_by_layer += 1;
                endpoint.apply_acks(&self.header, self.hold)
            }
            Verdict::Refuse => {
                endpoint.counters.packets_dropped_by_layer += 1;
                Acks::EMPTY
            }
        };
        if let Payload::Reassembled { data, .. } = &mut self.payload {
            endpoint
                .reassembly
                .recycle(self.header.sequence, core::mem::take(data));
        }
        acks
    }
}

impl Drop for PendingPacket<'_> {
    /// Refuses the packet if no verdict was given.
    fn drop(&mut self) {
        self.verdict(Verdict::Refuse);
    }
}

impl fmt::Debug for PendingPacket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingPacket")
            .field("header", &self.header)
            .field("payload_len", &self.payload().len())
            .field("pending", &self.endpoint.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `d` in milliseconds (exact for whole microseconds).
    fn ms(d: Duration) -> f64 {
        d.as_nanos() as f64 / 1e6
    }

    fn pair() -> (Endpoint, Endpoint) {
        let a = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("valid");
        let b = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("valid");
        (a, b)
    }

    fn send(e: &mut Endpoint, now: Time, payload: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        e.send(now, payload, |d| out.push(d.to_vec()))
            .expect("fits");
        out
    }

    #[test]
    fn the_endpoint_keeps_the_time_of_its_last_call_and_counts_partial_packets() {
        let (mut a, mut b) = pair();
        assert_eq!(a.time(), Time::ZERO);
        a.update(Time::from_secs_f64(1.5));
        assert_eq!(a.time(), Time::from_secs_f64(1.5));
        // Two of a three-fragment packet: one packet being reassembled.
        let fragments = send(&mut a, Time::from_secs_f64(2.0), &[9; 2500]);
        assert_eq!(fragments.len(), 3);
        assert_eq!(a.time(), Time::from_secs_f64(2.0));
        assert_eq!(b.pending_reassemblies(), 0);
        for d in &fragments[..2] {
            assert!(matches!(
                b.receive(Time::from_secs_f64(2.1), d),
                Ok(Incoming::Fragment { .. })
            ));
        }
        assert_eq!(b.pending_reassemblies(), 1);
        assert_eq!(b.time(), Time::from_secs_f64(2.1));
        assert_eq!(b.stats().fragments_received, 2);
        // The last fragment completes it: recorded with the bytes of the packet it
        // rebuilt (its header and payload) for the bandwidth estimate.
        let header_size = b.config.packet_header_size;
        let Ok(Incoming::Packet(packet)) = b.receive(Time::from_secs_f64(2.2), &fragments[2])
        else {
            panic!("the packet, whole");
        };
        let bytes = header_size + packet.header.encoded_len() + 2500;
        assert!(packet.accept().is_empty(), "nothing of ours to ack");
        assert_eq!(b.stats().fragments_received, 3);
        assert_eq!(b.pending_reassemblies(), 0);
        assert!(b.received.get(Sequence(0)).is_some(), "recorded");
        assert_eq!(b.estimator.received_tally(), bytes as u64);
    }

    /// Ten seconds of 100-byte packets both ways at 60 per second, all delivered: the
    /// sent, received and acked bandwidths settle on the bytes that went out.
    #[test]
    fn the_bandwidths_follow_a_steady_exchange() {
        let (mut a, mut b) = pair();
        let header_size = a.config.packet_header_size;
        let mut wire_bytes = 0usize;
        let hop = |from: &mut Endpoint, to: &mut Endpoint, now: Time| {
            let mut bytes = 0;
            for d in send(from, now, &[7; 100]) {
                bytes += header_size + d.len();
                let Ok(Incoming::Packet(p)) = to.receive(now, &d) else {
                    panic!("a whole packet");
                };
                p.accept();
            }
            bytes
        };
        for tick in 0..600u32 {
            let now = Time::from_secs_f64(f64::from(tick) / 60.0);
            let bytes = hop(&mut a, &mut b, now);
            hop(&mut b, &mut a, now);
            if tick >= 300 {
                wire_bytes += bytes;
            }
            a.update(now);
            b.update(now);
        }
        // A's rate over the last five seconds: sent and acked count the payload,
        // received the datagram (with the packet header), each plus `header_size`.
        let sent = f64::from(60 * (header_size as u32 + 100)) * 8.0 / 1000.0;
        let received = wire_bytes as f64 * 8.0 / 1000.0 / 5.0;
        let (sa, sb) = (a.stats(), b.stats());
        for (what, kbps, truth) in [
            ("a sent", sa.sent_kbps, sent),
            ("a acked", sa.acked_kbps, sent),
            ("b received", sb.received_kbps, received),
        ] {
            assert!(
                (kbps - truth).abs() < truth * 0.02,
                "{what}: {kbps} / {truth}"
            );
        }
    }

    #[test]
    fn a_pending_packet_debugs_its_header_length_and_state() {
        let (mut a, mut b) = pair();
        let datagrams = send(&mut a, Time::ZERO, &[1, 2, 3]);
        let Ok(Incoming::Packet(packet)) = b.receive(Time::ZERO, &datagrams[0]) else {
            panic!("a packet");
        };
        let text = format!("{packet:?}");
        assert!(text.starts_with("PendingPacket {"), "{text}");
        assert!(
            text.contains("payload_len: 3") && text.contains("pending: true"),
            "{text}"
        );
        assert!(text.contains(&format!("{:?}", packet.header)), "{text}");
    }

    #[test]
    fn a_datagram_may_hold_a_whole_packet_with_both_headers_and_no_more() {
        let config = EndpointConfig {
            max_packet_size: 100,
            fragment_above: 100,
            fragment_size: 50,
            max_fragments: 2,
            ..EndpointConfig::default()
        };
        let mut a = Endpoint::new(config.clone(), Time::ZERO).expect("valid");
        let mut b = Endpoint::new(config, Time::ZERO).expect("valid");
        let whole = send(&mut a, Time::ZERO, &[7; 100]);
        assert_eq!(whole.len(), 1, "not fragmented");
        assert!(matches!(
            b.receive(Time::ZERO, &whole[0]),
            Ok(Incoming::Packet(_))
        ));
        // The datagram size check allows the packet, a fragment header and the
        // largest packet header: 114 bytes.
        let limit = 100 + MAX_HEADER_BYTES + FRAGMENT_HEADER_BYTES;
        let at_limit = vec![0u8; limit];
        assert!(!matches!(
            b.receive(Time::ZERO, &at_limit).map(|_| ()),
            Err(ReceiveError::TooLarge { size, .. }) if size == limit
        ));
        let over = vec![0u8; limit + 1];
        assert_eq!(
            b.receive(Time::ZERO, &over).map(|_| ()),
            Err(ReceiveError::TooLarge {
                size: limit + 1,
                max: limit
            })
        );
    }

    #[test]
    fn acks_flow_both_ways() {
        let (mut a, mut b) = pair();
        let mut acked_by_a = Vec::new();
        for i in 0..100u16 {
            let t = f64::from(i) * 0.01;
            for d in send(&mut a, Time::from_secs_f64(t), &[1, 2, 3]) {
                b.receive(Time::from_secs_f64(t), &d)
                    .expect("valid")
                    .accept();
            }
            for d in send(&mut b, Time::from_secs_f64(t), &[4, 5]) {
                let r = a
                    .receive(Time::from_secs_f64(t), &d)
                    .expect("valid")
                    .accept();
                acked_by_a.extend(r.acks().iter().map(|s| s.0));
            }
        }
        // Each packet of A is acked by B's packet of the same step.
        assert_eq!(acked_by_a, (0..100).collect::<Vec<_>>());
        assert_eq!(a.stats().packets_acked, 100);
    }

    #[test]
    fn rejected_packets_are_not_acked() {
        let (mut a, mut b) = pair();
        let d = send(&mut a, Time::ZERO, b"no");
        match b.receive(Time::ZERO, &d[0]) {
            Ok(Incoming::Packet(p)) => {
                assert_eq!(p.sequence(), Sequence(0));
                p.refuse();
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.next_header().ack_bits, 0);
        // A retransmitted copy is processed again, since it was never recorded.
        assert!(
            b.receive(Time::ZERO, &d[0])
                .is_ok_and(|i| i.accept().sequence() == Sequence(0))
        );
        assert_eq!(b.next_header().ack_bits, 1);
        assert!(matches!(
            b.receive(Time::ZERO, &d[0]),
            Err(ReceiveError::Duplicate(Sequence(0)))
        ));
        assert_eq!(b.stats().packets_dropped_duplicate, 1);
        assert_eq!(b.stats().packets_dropped_by_layer, 1);
    }

    #[test]
    fn fragments_reassemble_and_too_large_keeps_sequence() {
        let (mut a, mut b) = pair();
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut frags = send(&mut a, Time::ZERO, &payload);
        assert_eq!(frags.len(), 5);
        frags.reverse();
        let mut got = None;
        for d in &frags {
            if let Incoming::Packet(p) = b.receive(Time::ZERO, d).expect("valid") {
                got = Some((p.sequence(), p.payload().to_vec()));
                p.accept();
            }
        }
        assert_eq!(got, Some((Sequence(0), payload)));
        let big = vec![0u8; 16385];
        assert!(matches!(
            a.send(Time::ZERO, &big, |_| {}),
            Err(PacketSendError::TooLarge { .. })
        ));
        assert_eq!(a.next_sequence(), Sequence(1));
        assert_eq!(a.stats().packets_dropped_too_large_to_send, 1);
    }

    #[test]
    fn unacked_packets_are_reported_lost_once_out_of_the_window() {
        let config = EndpointConfig {
            sent_packets_buffer_size: 16,
            ..EndpointConfig::default()
        };
        let mut a = Endpoint::new(config, Time::ZERO).expect("valid");
        let mut lost = Vec::new();
        for i in 0..40 {
            let sent = a
                .send(Time::from_secs_f64(f64::from(i)), b"x", |_| {})
                .expect("fits");
            lost.extend(sent.lost.map(|s| s.0));
        }
        assert_eq!(lost, (0..24).collect::<Vec<_>>());
        assert_eq!(a.stats().packets_lost, 24);
    }

    #[test]
    fn incremental_ack_bits_equal_the_reference_scan() {
        // 256 received entries: incremental ack bits; 100: scanned like the
        // reference. Same traffic, with loss, reordering and duplicates, across a wrap:
        // the same headers.
        let with_received = |n| {
            let config = EndpointConfig {
                received_packets_buffer_size: n,
                ..EndpointConfig::default()
            };
            Endpoint::new(config, Time::ZERO).expect("valid")
        };
        let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("valid");
        let (mut incremental, mut scanned) = (with_received(256), with_received(100));
        let mut rng = crate::sim::Rng::new(7);
        let mut in_flight: Vec<Vec<u8>> = Vec::new();
        for i in 0..70_000u32 {
            let now = f64::from(i) / 60.0;
            a.send(Time::from_secs_f64(now), &i.to_le_bytes(), |d| {
                in_flight.push(d.to_vec())
            })
            .expect("fits");
            while !in_flight.is_empty() && rng.chance(0.6) {
                let k = rng.below(in_flight.len() as u64) as usize;
                let d = if rng.chance(0.1) {
                    in_flight[k].clone()
                } else {
                    in_flight.swap_remove(k)
                };
                if rng.chance(0.8) {
                    let r1 = incremental
                        .receive(Time::from_secs_f64(now), &d)
                        .map(Incoming::accept)
                        .is_ok();
                    let r2 = scanned
                        .receive(Time::from_secs_f64(now), &d)
                        .map(Incoming::accept)
                        .is_ok();
                    assert!(
                        r1 || !r2,
                        "the larger window accepts whatever the smaller does"
                    );
                }
            }
            assert_eq!(incremental.next_header(), scanned.next_header(), "step {i}");
        }
        assert!(incremental.stats().packets_received > 30_000);
    }

    fn header(sequence: u16, ack: u16, ack_bits: u32) -> super::super::header::HeaderBytes {
        PacketHeader {
            sequence: Sequence(sequence),
            ack: Sequence(ack),
            ack_bits,
        }
        .encode()
    }

    #[test]
    fn an_ack_exactly_at_the_sent_window_edge() {
        let (mut a, _) = pair();
        for i in 0..300u16 {
            send(&mut a, Time::from_secs_f64(f64::from(i) / 60.0), b"x");
        }
        // Sent 0..=299 with a window of 256: 44 is the oldest still in it, 0..=43
        // were reported lost as they left.
        assert_eq!(a.is_acked(Sequence(44)), Some(false));
        assert_eq!(a.is_acked(Sequence(43)), None);
        assert_eq!(a.stats().packets_lost, 44);
        let now = Time::from_secs_f64(5.0);
        let acks = a
            .receive(now, &header(0, 45, 0b111))
            .expect("valid")
            .accept();
        assert_eq!(acks.acks().as_slice(), &[Sequence(45), Sequence(44)]);
        assert_eq!(a.stats().packets_acked, 2);
        // An ack of the first packet out of the window acks nothing.
        let acks = a.receive(now, &header(1, 43, 1)).expect("valid").accept();
        assert!(acks.acks().is_empty());
        assert_eq!(a.stats().packets_acked, 2);
        assert_eq!(a.is_acked(Sequence(43)), None);
    }

    #[test]
    fn a_sequence_exactly_half_the_space_away() {
        // A packet is stale when it is older than the oldest sequence of the received
        // window (newest - 255), by the wrap-aware order, in which of two sequences
        // 32768 apart the numerically larger is the newer. With 100 the newest, the
        // window starts at 65381: 65381 + 32768 = 32613 is exactly half the space
        // away and numerically smaller, so older: stale; 32612 is newer.
        let (_, mut b) = pair();
        let accept = |b: &mut Endpoint, sequence: u16| {
            b.receive(Time::ZERO, &header(sequence, 65535, 0))
                .map(Incoming::accept)
                .map(|r| r.sequence())
        };
        assert_eq!(accept(&mut b, 100), Ok(Sequence(100)));
        assert_eq!(
            accept(&mut b, 32613),
            Err(ReceiveError::Stale(Sequence(32613)))
        );
        assert_eq!(b.next_header().ack, Sequence(100));
        assert_eq!(accept(&mut b, 32612), Ok(Sequence(32612)));
        assert_eq!(b.next_header().ack, Sequence(32612));
        assert_eq!(b.next_header().ack_bits, 1, "the window moved past 100");
        assert_eq!(accept(&mut b, 100), Err(ReceiveError::Stale(Sequence(100))));
        assert_eq!(b.stats().packets_dropped_stale, 2);

        // An ack up to half the space ahead of our next sequence names a packet not
        // sent yet; one further ahead is an old ack, of nothing in the window.
        let (mut a, _) = pair();
        for _ in 0..10 {
            send(&mut a, Time::ZERO, b"x");
        }
        for ack in [10u16, 10 + 32767, 10 + 32768] {
            assert_eq!(
                a.receive(Time::ZERO, &header(0, ack, 1)).map(|_| ()),
                Err(ReceiveError::ForgedAck {
                    ack: Sequence(ack),
                    next: Sequence(10)
                })
            );
        }
        let acks = a
            .receive(Time::ZERO, &header(0, 10 + 32769, u32::MAX))
            .expect("an old ack")
            .accept();
        assert!(acks.acks().is_empty());
        assert_eq!(a.stats().packets_dropped_invalid, 3);
        assert_eq!(a.stats().packets_acked, 0);
    }

    #[test]
    fn a_skip_traps_while_it_is_in_the_sent_window_and_not_after() {
        // Skips due at every send (1 ns mean gap, 1 ms between sends): each packet is
        // followed by a skip, since the slot a skip takes never holds an unacked
        // packet here (it held the skip one window ago).
        let config = EndpointConfig {
            sent_packets_buffer_size: 16,
            skip_sequence_seed: Some(1),
            skip_mean_gap: core::time::Duration::from_nanos(1),
            ..EndpointConfig::default()
        };
        let mut a = Endpoint::new(config, Time::ZERO).expect("valid");
        for i in 0..21u16 {
            let sent = a
                .send(Time::from_secs_f64(f64::from(i + 1) / 1000.0), b"x", |_| {})
                .expect("fits");
            assert_eq!(sent.sequence, Sequence(2 * i));
        }
        assert_eq!(a.next_sequence(), Sequence(42));
        assert_eq!(a.stats().sequences_skipped, 21);
        // The processed-acks cache ages by sequences used, skips included.
        assert_eq!(a.sequences_used(), 42, "21 packets and 21 skips");
        // The window is 26..=41: 27 is the oldest skip in it, 25 has left it.
        assert!(a.is_skipped(Sequence(27)) && !a.is_skipped(Sequence(25)));
        let now = Time::from_secs_f64(1.0);
        assert_eq!(
            a.receive(now, &header(0, 28, 0b10)).map(|_| ()),
            Err(ReceiveError::OptimisticAck {
                sequence: Sequence(27)
            })
        );
        let acks = a
            .receive(now, &header(1, 26, 0b10))
            .expect("valid")
            .accept();
        assert!(acks.acks().is_empty());
        assert_eq!(a.stats().packets_dropped_optimistic_ack, 1);
        assert_eq!(a.stats().packets_lost, 13, "packets 0 to 24 left unacked");
    }

    #[test]
    fn skips_follow_time_not_packets() {
        let trapped = |seed| {
            let config = EndpointConfig {
                skip_sequence_seed: Some(seed),
                ..EndpointConfig::default()
            };
            Endpoint::new(config, Time::ZERO).expect("valid")
        };
        // 100 s at 10 and at 1000 packets a second, every packet acked at once so
        // that no skip waits: about 5.5 and 8 skips a second (125 ms mean gap, at
        // most one per send).
        let mut per_second = Vec::new();
        for rate in [10u32, 1000] {
            let mut a = trapped(u64::from(rate));
            let mut ack = Sequence(0);
            for i in 0..100 * rate {
                let now = Time::from_secs_f64(f64::from(i) / f64::from(rate));
                let sent = a.send(now, b"x", |_| {}).expect("fits").sequence;
                let skipped = a.next_sequence() != sent.next();
                assert!(!skipped || a.next_sequence() == sent.next().next());
                let header = PacketHeader {
                    sequence: ack,
                    ack: sent,
                    ack_bits: 1,
                };
                ack = ack.next();
                a.receive(now, &header.encode()).expect("valid").accept();
            }
            per_second.push(a.stats().sequences_skipped);
        }
        assert_eq!(per_second, [547, 813]);
        // Packets sent at the same time, or with a clock that went back, draw no
        // skip: no time passed. Time then counts from the new clock.
        let mut a = trapped(3);
        let later = Time::from_secs_f64(1000.0);
        for _ in 0..1000 {
            a.send(later, b"burst", |_| {}).expect("fits");
        }
        assert_eq!(a.stats().sequences_skipped, 1, "the first send, 1000 s in");
        for i in 0..1000 {
            let back = Time::from_secs_f64(999.0 - f64::from(i) * 0.1);
            a.send(back, b"x", |_| {}).expect("fits");
        }
        assert_eq!(a.stats().sequences_skipped, 1);
        let at = Time::from_secs_f64(2000.0);
        a.send(at, b"x", |_| {}).expect("fits");
        // Due, but the slot of the next sequence holds a packet never acked: the
        // skip waits for a send whose slot is free, drawing nothing meanwhile.
        assert_eq!(a.stats().sequences_skipped, 1);
        a.send(at, b"x", |_| {}).expect("fits");
        assert_eq!(a.stats().sequences_skipped, 1);
        let held = a.next_sequence().wrapping_sub(256);
        let header = PacketHeader {
            sequence: Sequence(0),
            ack: held.next(),
            ack_bits: 0b11,
        };
        a.receive(at, &header.encode()).expect("valid").accept();
        a.send(at, b"x", |_| {}).expect("fits");
        assert_eq!(a.stats().sequences_skipped, 2);
        assert!(a.is_skipped(a.next_sequence().prev()));
    }

    #[test]
    fn forged_ack_is_dropped_whole() {
        let (mut a, _) = pair();
        send(&mut a, Time::ZERO, b"x");
        // Ack 5 with bits: we have only sent 0.
        let header = PacketHeader {
            sequence: Sequence(0),
            ack: Sequence(5),
            ack_bits: 0b100001,
        };
        let encoded = header.encode();
        assert!(matches!(
            a.receive(Time::ZERO, &encoded),
            Err(ReceiveError::ForgedAck { .. })
        ));
        assert_eq!(a.stats().packets_dropped_invalid, 1);
        assert_eq!(a.is_acked(Sequence(0)), Some(false));
    }

    #[test]
    fn dropping_a_pending_packet_refuses_it() {
        let (mut a, mut b) = pair();
        let d = send(&mut a, Time::ZERO, b"x");
        let pending = b.receive(Time::ZERO, &d[0]).expect("valid");
        drop(pending);
        assert_eq!(b.stats().packets_dropped_by_layer, 1);
        assert_eq!(b.next_header().ack_bits, 0);
        // Not recorded: a copy is not a duplicate.
        assert!(matches!(
            b.receive(Time::ZERO, &d[0]).expect("valid").accept(),
            Received::Packet {
                sequence: Sequence(0),
                ..
            }
        ));
        assert_eq!(b.stats().packets_dropped_by_layer, 1);
        assert_eq!(b.stats().packets_dropped_duplicate, 0);
    }

    #[test]
    fn a_refused_packet_applies_none_of_its_acks() {
        let (mut a, mut b) = pair();
        let d = send(&mut a, Time::ZERO, b"x");
        b.receive(Time::ZERO, &d[0]).expect("valid").accept();
        let reply = send(&mut b, Time::from_secs_f64(0.1), b"y");
        match a
            .receive(Time::from_secs_f64(0.2), &reply[0])
            .expect("valid")
        {
            Incoming::Packet(p) => {
                assert_eq!(p.header.ack, Sequence(0));
                p.refuse();
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.is_acked(Sequence(0)), Some(false));
        assert_eq!(a.stats().packets_acked, 0);
        assert_eq!(ms(a.estimates().rtt), 0.0);
        // The copy, accepted, acks it (once).
        let Incoming::Packet(p) = a
            .receive(Time::from_secs_f64(0.2), &reply[0])
            .expect("valid")
        else {
            panic!("a whole packet");
        };
        assert_eq!(p.accept().as_slice(), &[Sequence(0)]);
        assert_eq!(a.is_acked(Sequence(0)), Some(true));
    }

    #[test]
    fn a_reassembled_packet_gives_its_buffer_back_whatever_the_verdict() {
        let (mut a, mut b) = pair();
        let payload = vec![3u8; 4000];
        let frags = send(&mut a, Time::ZERO, &payload);
        assert_eq!(frags.len(), 4);
        for d in &frags[..3] {
            assert!(matches!(
                b.receive(Time::ZERO, d),
                Ok(Incoming::Fragment { .. })
            ));
        }
        let memory = b.reassembly_memory();
        assert_eq!(memory, 4 * 1024 + 4); // the bytes, and a list of 4 fragment ids
        match b.receive(Time::ZERO, &frags[3]).expect("valid") {
            Incoming::Packet(p) => {
                assert_eq!(p.payload(), &payload[..]);
                p.refuse();
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.reassembly_memory(), memory);
        assert_eq!(b.pending_reassemblies(), 0);
        // Refused: the packet can be reassembled again, in the same buffer.
        for d in &frags[..3] {
            assert!(b.receive(Time::ZERO, d).is_ok());
        }
        let Incoming::Packet(p) = b.receive(Time::ZERO, &frags[3]).expect("valid") else {
            panic!("complete");
        };
        assert_eq!(p.payload(), &payload[..]);
        drop(p);
        assert_eq!(b.stats().packets_dropped_by_layer, 2);
        assert_eq!(b.reassembly_memory(), memory);
        for d in &frags {
            let _ = b.receive(Time::ZERO, d).map(Incoming::accept);
        }
        assert_eq!(b.reassembly_memory(), memory);
        assert_eq!(b.next_header().ack_bits, 1);
    }

    fn network_rtt_pair() -> (Endpoint, Endpoint) {
        let config = EndpointConfig {
            report_ack_delay: true,
            ..EndpointConfig::default()
        };
        let a = Endpoint::new(config.clone(), Time::ZERO).expect("valid");
        let b = Endpoint::new(config, Time::ZERO).expect("valid");
        (a, b)
    }

    #[test]
    fn a_postponed_packet_applies_its_acks_but_is_not_acked() {
        let (mut a, mut b) = pair();
        let d = send(&mut a, Time::ZERO, b"x");
        b.receive(Time::ZERO, &d[0]).expect("valid").accept();
        let reply = send(&mut b, Time::from_secs_f64(0.1), b"y");
        let Incoming::Packet(p) = a
            .receive(Time::from_secs_f64(0.2), &reply[0])
            .expect("valid")
        else {
            panic!("a whole packet");
        };
        assert_eq!(p.postpone().as_slice(), &[Sequence(0)]);
        assert_eq!(a.is_acked(Sequence(0)), Some(true));
        assert_eq!(a.next_header().ack_bits, 0, "not recorded: not acked");
        assert_eq!(a.stats().packets_dropped_by_layer, 1);
        // A copy is not a duplicate, and acks nothing new.
        assert!(
            a.receive(Time::from_secs_f64(0.2), &reply[0])
                .expect("valid")
                .accept()
                .acks()
                .is_empty()
        );
        assert_eq!(a.next_header().ack_bits, 1);
    }

    #[test]
    fn the_ack_delay_byte_takes_the_peer_hold_out_of_the_rtt() {
        // 50 ms each way; B answers each packet of A 30 ms after it arrived.
        let (mut a, mut b) = network_rtt_pair();
        let (mut plain_a, mut plain_b) = pair();
        for (a, b) in [(&mut a, &mut b), (&mut plain_a, &mut plain_b)] {
            for i in 0..40 {
                let t = f64::from(i) * 0.1;
                for d in send(a, Time::from_secs_f64(t), b"ping") {
                    let received = b
                        .receive(Time::from_secs_f64(t + 0.05), &d)
                        .expect("valid")
                        .accept();
                    assert!(matches!(received, Received::Packet { .. }));
                }
                for d in send(b, Time::from_secs_f64(t + 0.08), b"pong") {
                    let Incoming::Packet(p) =
                        a.receive(Time::from_secs_f64(t + 0.13), &d).expect("valid")
                    else {
                        panic!("whole");
                    };
                    assert_eq!(p.payload(), b"pong", "the byte is not payload");
                    p.accept();
                }
            }
        }
        assert!(
            (ms(a.estimates().rtt) - 100.0).abs() < 1e-6,
            "{:?}",
            a.stats()
        );
        assert!((ms(a.estimates().ack_delay) - 30.0).abs() < 1e-6);
        // Without the byte: send to ack.
        assert!((ms(plain_a.estimates().rtt) - 130.0).abs() < 1e-6);
        assert_eq!(ms(plain_a.estimates().ack_delay), 0.0);
    }

    #[test]
    fn the_ack_delay_byte_rides_in_the_first_fragment() {
        let (mut a, mut b) = network_rtt_pair();
        assert!(matches!(
            a.send(Time::ZERO, &[0; 16384], |_| {}),
            Err(PacketSendError::TooLarge {
                size: 16384,
                max: 16383
            })
        ));
        let payload: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        // 3001 bytes with the byte: three fragments, the last of 953.
        let frags = send(&mut a, Time::ZERO, &payload);
        assert_eq!(frags.len(), 3);
        assert_eq!(frags[2].len(), FRAGMENT_HEADER_BYTES + 953);
        let mut got = None;
        for d in &frags {
            if let Incoming::Packet(p) = b.receive(Time::ZERO, d).expect("valid") {
                got = Some(p.payload().to_vec());
                p.accept();
            }
        }
        assert_eq!(got.as_deref(), Some(&payload[..]));
        // A packet of exactly `fragment_above` bytes with the byte goes whole.
        let whole = send(&mut a, Time::ZERO, &payload[..1023]);
        assert_eq!(whole.len(), 1);
    }

    #[test]
    fn a_packet_without_the_ack_delay_byte_is_dropped_whole() {
        let (_, mut b) = network_rtt_pair();
        let (mut plain, _) = pair();
        let d = send(&mut plain, Time::ZERO, b"");
        // The header alone: one byte short of the header and the extension.
        assert_eq!(
            b.receive(Time::ZERO, &d[0]).map(|_| ()),
            Err(ReceiveError::InvalidHeader(HeaderError::Truncated {
                needed: d[0].len() + ACK_DELAY_BYTES,
                got: d[0].len()
            }))
        );
        assert_eq!(b.stats().packets_dropped_invalid, 1);
        assert_eq!(b.next_header().ack_bits, 0);
        // An empty payload with the byte is fine.
        let (mut a, _) = network_rtt_pair();
        let d = send(&mut a, Time::ZERO, b"");
        let Incoming::Packet(p) = b.receive(Time::ZERO, &d[0]).expect("valid") else {
            panic!("whole");
        };
        assert!(p.payload().is_empty());
    }
}
