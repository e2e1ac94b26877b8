//! The sans-IO packet endpoint: sequence numbers, acks, fragmentation, statistics.

use super::ack_state::{ProcessedAcks, ReceivedBits};
use super::config::{ConfigError, EndpointConfig};
use super::fragment::{FRAGMENT_HEADER_BYTES, FragmentHeader, FragmentLimits, parse_fragment};
use super::header::{HeaderError, MAX_HEADER_BYTES, PacketHeader};
use super::outcome::{Acks, ReceiveError, Received, SendError, Sent};
use super::reassembly::{Reassembly, StoreError};
use super::sequence::Sequence;
use super::sequence_buffer::SequenceBuffer;
use super::stats::{Counters, Estimator, ReceivedPacket, SentPacket, Stats};

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
///   stale and duplicate packets, hands the payload to the layer above (which accepts
///   it or not: only accepted packets are acked), then reports which of our packets
///   the peer's header newly acked.
/// * [`update`](Self::update) refreshes the [`Stats`].
///
/// ```
/// use netproto::packet::{Endpoint, EndpointConfig, Sequence};
///
/// let mut a = Endpoint::new(EndpointConfig::default(), 0.0)?;
/// let mut b = Endpoint::new(EndpointConfig::default(), 0.0)?;
///
/// // A sends; the datagram goes over some transport...
/// let mut datagrams = Vec::new();
/// let sent = a.send(0.0, b"state update", |d| datagrams.push(d.to_vec()))?;
/// assert_eq!(sent.sequence, Sequence(0));
///
/// // ... and B receives it and accepts the payload.
/// let mut got = Vec::new();
/// b.receive(0.05, &datagrams[0], |_seq, payload| {
///     got.extend_from_slice(payload);
///     true
/// })?;
/// assert_eq!(got, b"state update");
///
/// // B's next packet acks A's packet 0.
/// datagrams.clear();
/// b.send(0.06, b"ack carrier", |d| datagrams.push(d.to_vec()))?;
/// let received = a.receive(0.1, &datagrams[0], |_, _| true)?;
/// assert_eq!(received.acks().as_slice(), &[Sequence(0)]);
/// assert_eq!(a.stats().rtt_ms, 100.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    limits: FragmentLimits,
    time: f64,
    sequence: Sequence,
    sent: SequenceBuffer<SentPacket>,
    received: SequenceBuffer<ReceivedPacket>,
    /// `received.ack_bits()`, maintained incrementally when that is exact.
    received_bits: Option<ReceivedBits>,
    /// The peer's ack fields already processed.
    processed: ProcessedAcks,
    reassembly: Reassembly,
    estimator: Estimator,
    counters: Counters,
    transmit_buffer: Box<[u8]>,
}

impl Endpoint {
    /// An endpoint with `config`, created at time `now`. Fails when the configuration
    /// is invalid (see [`EndpointConfig::validate`]).
    pub fn new(config: EndpointConfig, now: f64) -> Result<Self, ConfigError> {
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
            sequence: Sequence(0),
            sent: SequenceBuffer::new(config.sent_packets_buffer_size),
            received: SequenceBuffer::new(config.received_packets_buffer_size),
            received_bits: ReceivedBits::exact_for(config.received_packets_buffer_size)
                .then(ReceivedBits::new),
            processed: ProcessedAcks::default(),
            reassembly: Reassembly::new(
                config.fragment_reassembly_buffer_size,
                config.fragment_size,
            ),
            estimator: Estimator::new(&config),
            counters: Counters::default(),
            transmit_buffer,
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// The time of the last call that took `now`.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The sequence number the next packet will get.
    pub fn next_sequence(&self) -> Sequence {
        self.sequence
    }

    /// The header our next packet would carry: the next sequence and the acks of
    /// what we have received and accepted.
    #[inline]
    pub fn next_header(&self) -> PacketHeader {
        let (ack, ack_bits) = match &self.received_bits {
            Some(bits) => bits.get(),
            None => self.received.ack_bits(),
        };
        PacketHeader {
            sequence: self.sequence,
            ack,
            ack_bits,
        }
    }

    /// The link estimates (refreshed by [`update`](Self::update); `rtt_ms` at every
    /// ack).
    pub fn stats(&self) -> &Stats {
        self.estimator.stats()
    }

    /// The event counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// `true` when our packet `sequence` is in the sent window and has been acked;
    /// `false` when it is in the window unacked; `None` when it is not in the window.
    pub fn is_acked(&self, sequence: Sequence) -> Option<bool> {
        self.sent.get(sequence).map(|p| p.acked)
    }

    /// Packets currently being reassembled (at most `fragment_reassembly_buffer_size`).
    pub fn pending_reassemblies(&self) -> usize {
        self.reassembly.pending()
    }

    /// Bytes held by reassembly buffers (in use or kept for reuse); at most
    /// `fragment_reassembly_buffer_size * max_fragments * fragment_size`.
    pub fn reassembly_memory(&self) -> usize {
        self.reassembly.memory()
    }

    /// Sets the time and recomputes the windowed statistics (RTT min / max / jitter,
    /// packet loss, bandwidth). Call it once per tick; it costs a pass over the RTT
    /// history and half of each packet window.
    pub fn update(&mut self, now: f64) {
        self.time = now;
        self.estimator.update(&self.sent, &self.received);
    }

    /// Sends `payload` as the next packet, calling `transmit` once per datagram.
    ///
    /// A payload above `fragment_above` bytes goes out as `ceil(len / fragment_size)`
    /// fragments. A payload above `max_packet_size` is refused with
    /// [`SendError::TooLarge`] and does not consume a sequence number.
    ///
    /// The datagram slices borrow an internal buffer: copy them out (or write them to
    /// a socket) inside `transmit`.
    pub fn send(
        &mut self,
        now: f64,
        payload: &[u8],
        mut transmit: impl FnMut(&[u8]),
    ) -> Result<Sent, SendError> {
        self.time = now;
        let len = payload.len();
        if len > self.config.max_packet_size {
            self.counters.packets_too_large_to_send += 1;
            return Err(SendError::TooLarge {
                size: len,
                max: self.config.max_packet_size,
            });
        }
        let header = self.next_header();
        let sequence = header.sequence;
        self.sequence = sequence.next();

        // The slot this packet takes holds the packet sent one window ago (or
        // nothing): if it was never acked, it is now lost for good.
        let lost = self
            .sent
            .occupant(sequence)
            .filter(|&old| self.sent.get(old).is_some_and(|p| !p.acked));
        if lost.is_some() {
            self.counters.packets_lost += 1;
        }
        let record = SentPacket {
            time: now,
            bytes: u32::try_from(self.config.packet_header_size + len).unwrap_or(u32::MAX),
            acked: false,
        };
        // Sends are consecutive and newest, never stale.
        if let Ok(slot) = self.sent.insert_in_place(sequence) {
            *slot = record;
        }

        let buf = &mut self.transmit_buffer;
        let fragments = if len <= self.config.fragment_above {
            let mut header_bytes = [0u8; MAX_HEADER_BYTES];
            let h = header.write(&mut header_bytes);
            buf[..h].copy_from_slice(&header_bytes[..h]);
            buf[h..h + len].copy_from_slice(payload);
            transmit(&buf[..h + len]);
            0
        } else {
            let header_bytes = header.encode();
            let fs = self.config.fragment_size;
            let count = len.div_ceil(fs);
            for (id, chunk) in payload.chunks(fs).enumerate() {
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
                buf[pos..pos + chunk.len()].copy_from_slice(chunk);
                transmit(&buf[..pos + chunk.len()]);
            }
            self.counters.fragments_sent += count as u64;
            count as u16
        };
        self.counters.packets_sent += 1;
        Ok(Sent {
            sequence,
            fragments,
            lost,
        })
    }

    /// Receives one datagram at time `now`.
    ///
    /// When it completes a packet that is neither stale nor a duplicate, `process` is
    /// called with the packet's sequence and payload; it returns whether the layer
    /// above accepted the packet. Only an accepted packet is recorded as received (so
    /// that it will be acked) and has its header's acks processed: the sequences of
    /// our packets it newly acks are returned in [`Received::Packet`], each reported
    /// once over the endpoint's life.
    ///
    /// Everything else is dropped whole, counted, and returned as a
    /// [`ReceiveError`]; no input can make this panic or allocate beyond the
    /// configured reassembly table.
    pub fn receive(
        &mut self,
        now: f64,
        datagram: &[u8],
        process: impl FnOnce(Sequence, &[u8]) -> bool,
    ) -> Result<Received, ReceiveError> {
        self.time = now;
        let Some(&prefix) = datagram.first() else {
            self.counters.packets_invalid += 1;
            return Err(ReceiveError::InvalidHeader(HeaderError::Truncated {
                needed: 3,
                got: 0,
            }));
        };
        let max = self.config.max_packet_size + MAX_HEADER_BYTES + FRAGMENT_HEADER_BYTES;
        if datagram.len() > max {
            self.counters.packets_too_large_to_receive += 1;
            return Err(ReceiveError::TooLarge {
                size: datagram.len(),
                max,
            });
        }
        if prefix & 1 == 0 {
            self.counters.packets_received += 1;
            let (header, header_len) = PacketHeader::decode(datagram).map_err(|e| {
                self.counters.packets_invalid += 1;
                ReceiveError::InvalidHeader(e)
            })?;
            self.process_packet(header, &datagram[header_len..], datagram.len(), process)
        } else {
            self.receive_fragment(datagram, process)
        }
    }

    fn receive_fragment(
        &mut self,
        datagram: &[u8],
        process: impl FnOnce(Sequence, &[u8]) -> bool,
    ) -> Result<Received, ReceiveError> {
        let fragment = parse_fragment(datagram, &self.limits).map_err(|e| {
            self.counters.fragments_invalid += 1;
            ReceiveError::InvalidFragment(e)
        })?;
        let sequence = fragment.header.sequence;
        let fragment_id = fragment.header.fragment_id;
        if self.received.contains(sequence) {
            self.counters.fragments_duplicate += 1;
            return Err(ReceiveError::DuplicateFragment {
                sequence,
                fragment_id,
            });
        }
        if self.received.is_stale(sequence) {
            self.counters.fragments_invalid += 1;
            return Err(ReceiveError::StaleFragment(sequence));
        }
        let completed = match self.reassembly.store(&fragment) {
            Ok(completed) => completed,
            Err(e) => {
                return Err(match e {
                    StoreError::Stale => {
                        self.counters.fragments_invalid += 1;
                        ReceiveError::StaleFragment(sequence)
                    }
                    StoreError::CountMismatch { expected, got } => {
                        self.counters.fragments_invalid += 1;
                        ReceiveError::FragmentCountMismatch {
                            sequence,
                            expected,
                            got,
                        }
                    }
                    StoreError::Duplicate => {
                        self.counters.fragments_duplicate += 1;
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
            return Ok(Received::Fragment {
                sequence,
                fragment_id,
                fragment_count: fragment.header.fragment_count,
            });
        };
        self.counters.packets_received += 1;
        let payload = packet.data.get(..packet.len).unwrap_or_default();
        let wire_len = packet.header.encoded_len() + payload.len();
        let result = self.process_packet(packet.header, payload, wire_len, process);
        self.reassembly.recycle(sequence, packet.data);
        result
    }

    /// The regular receive path, shared by whole datagrams and reassembled packets.
    #[inline]
    fn process_packet(
        &mut self,
        header: PacketHeader,
        payload: &[u8],
        wire_len: usize,
        process: impl FnOnce(Sequence, &[u8]) -> bool,
    ) -> Result<Received, ReceiveError> {
        let sequence = header.sequence;
        if payload.len() > self.config.max_packet_size {
            self.counters.packets_too_large_to_receive += 1;
            return Err(ReceiveError::TooLarge {
                size: payload.len(),
                max: self.config.max_packet_size,
            });
        }
        // A peer can only ack what we sent: an ack at or beyond our next sequence
        // with any bit set is forged or corrupt. (A fresh peer sends ack 65535 with
        // no bits, which passes whatever our sequence is.)
        if header.ack_bits != 0 && !header.ack.is_older_than(self.sequence) {
            self.counters.packets_invalid += 1;
            return Err(ReceiveError::ForgedAck {
                ack: header.ack,
                next: self.sequence,
            });
        }
        if self.received.is_stale(sequence) {
            self.counters.packets_stale += 1;
            return Err(ReceiveError::Stale(sequence));
        }
        if self.received.contains(sequence) {
            self.counters.packets_duplicate += 1;
            return Err(ReceiveError::Duplicate(sequence));
        }
        if !process(sequence, payload) {
            self.counters.packets_rejected += 1;
            return Err(ReceiveError::Rejected(sequence));
        }
        let record = ReceivedPacket {
            time: self.time,
            bytes: u32::try_from(self.config.packet_header_size + wire_len).unwrap_or(u32::MAX),
        };
        if let Ok(slot) = self.received.insert_in_place(sequence) {
            *slot = record;
            if let Some(bits) = &mut self.received_bits {
                bits.insert(sequence);
            }
        }
        self.reassembly.advance(sequence);

        // Walk the ack bits from bit 0 (ack) to bit 31 (ack - 31), skipping those an
        // earlier header already covered (they cannot ack anything new).
        let mut acks = Acks::EMPTY;
        let sent_total = self.counters.packets_sent;
        let mut bits = self
            .processed
            .unseen(header.ack, header.ack_bits, sent_total);
        self.processed
            .record(header.ack, header.ack_bits, sent_total);
        let mut acked = header.ack;
        while bits != 0 {
            let skip = bits.trailing_zeros();
            acked = acked.wrapping_sub(skip as u16);
            bits >>= skip;
            if let Some(packet) = self.sent.get_mut(acked) {
                if !packet.acked {
                    packet.acked = true;
                    let rtt_ms = ((self.time - packet.time) * 1000.0).max(0.0);
                    self.counters.packets_acked += 1;
                    self.estimator.rtt_sample(acked, rtt_ms);
                    acks.push(acked);
                }
            }
            bits >>= 1;
            acked = acked.prev();
        }
        Ok(Received::Packet { sequence, acks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Endpoint, Endpoint) {
        let a = Endpoint::new(EndpointConfig::default(), 0.0).expect("valid");
        let b = Endpoint::new(EndpointConfig::default(), 0.0).expect("valid");
        (a, b)
    }

    fn send(e: &mut Endpoint, now: f64, payload: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        e.send(now, payload, |d| out.push(d.to_vec()))
            .expect("fits");
        out
    }

    #[test]
    fn acks_flow_both_ways() {
        let (mut a, mut b) = pair();
        let mut acked_by_a = Vec::new();
        for i in 0..100u16 {
            let t = f64::from(i) * 0.01;
            for d in send(&mut a, t, &[1, 2, 3]) {
                b.receive(t, &d, |_, _| true).expect("valid");
            }
            for d in send(&mut b, t, &[4, 5]) {
                let r = a.receive(t, &d, |_, _| true).expect("valid");
                acked_by_a.extend(r.acks().iter().map(|s| s.0));
            }
        }
        // Each packet of A is acked by B's packet of the same step.
        assert_eq!(acked_by_a, (0..100).collect::<Vec<_>>());
        assert_eq!(a.counters().packets_acked, 100);
    }

    #[test]
    fn rejected_packets_are_not_acked() {
        let (mut a, mut b) = pair();
        let d = send(&mut a, 0.0, b"no");
        assert_eq!(
            b.receive(0.0, &d[0], |_, _| false),
            Err(ReceiveError::Rejected(Sequence(0)))
        );
        assert_eq!(b.next_header().ack_bits, 0);
        // A retransmitted copy is processed again, since it was never recorded.
        assert!(b.receive(0.0, &d[0], |_, _| true).is_ok());
        assert_eq!(b.next_header().ack_bits, 1);
        assert_eq!(
            b.receive(0.0, &d[0], |_, _| true),
            Err(ReceiveError::Duplicate(Sequence(0)))
        );
        assert_eq!(b.counters().packets_duplicate, 1);
        assert_eq!(b.counters().packets_rejected, 1);
    }

    #[test]
    fn fragments_reassemble_and_too_large_keeps_sequence() {
        let (mut a, mut b) = pair();
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut frags = send(&mut a, 0.0, &payload);
        assert_eq!(frags.len(), 5);
        frags.reverse();
        let mut got = None;
        for d in &frags {
            b.receive(0.0, d, |s, p| {
                got = Some((s, p.to_vec()));
                true
            })
            .expect("valid");
        }
        assert_eq!(got, Some((Sequence(0), payload)));
        let big = vec![0u8; 16385];
        assert!(matches!(
            a.send(0.0, &big, |_| {}),
            Err(SendError::TooLarge { .. })
        ));
        assert_eq!(a.next_sequence(), Sequence(1));
        assert_eq!(a.counters().packets_too_large_to_send, 1);
    }

    #[test]
    fn unacked_packets_are_reported_lost_once_out_of_the_window() {
        let config = EndpointConfig {
            sent_packets_buffer_size: 16,
            ..EndpointConfig::default()
        };
        let mut a = Endpoint::new(config, 0.0).expect("valid");
        let mut lost = Vec::new();
        for i in 0..40 {
            let sent = a.send(f64::from(i), b"x", |_| {}).expect("fits");
            lost.extend(sent.lost.map(|s| s.0));
        }
        assert_eq!(lost, (0..24).collect::<Vec<_>>());
        assert_eq!(a.counters().packets_lost, 24);
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
            Endpoint::new(config, 0.0).expect("valid")
        };
        let mut a = Endpoint::new(EndpointConfig::default(), 0.0).expect("valid");
        let (mut incremental, mut scanned) = (with_received(256), with_received(100));
        let mut rng = crate::sim::Rng::new(7);
        let mut in_flight: Vec<Vec<u8>> = Vec::new();
        for i in 0..70_000u32 {
            let now = f64::from(i) / 60.0;
            a.send(now, &i.to_le_bytes(), |d| in_flight.push(d.to_vec()))
                .expect("fits");
            while !in_flight.is_empty() && rng.chance(0.6) {
                let k = rng.below(in_flight.len() as u64) as usize;
                let d = if rng.chance(0.1) {
                    in_flight[k].clone()
                } else {
                    in_flight.swap_remove(k)
                };
                if rng.chance(0.8) {
                    let r1 = incremental.receive(now, &d, |_, _| true).is_ok();
                    let r2 = scanned.receive(now, &d, |_, _| true).is_ok();
                    assert!(
                        r1 || !r2,
                        "the larger window accepts whatever the smaller does"
                    );
                }
            }
            assert_eq!(incremental.next_header(), scanned.next_header(), "step {i}");
        }
        assert!(incremental.counters().packets_received > 30_000);
    }

    #[test]
    fn forged_ack_is_dropped_whole() {
        let (mut a, _) = pair();
        send(&mut a, 0.0, b"x");
        // Ack 5 with bits: we have only sent 0.
        let header = PacketHeader {
            sequence: Sequence(0),
            ack: Sequence(5),
            ack_bits: 0b100001,
        };
        let mut called = false;
        let r = a.receive(0.0, &header.encode(), |_, _| {
            called = true;
            true
        });
        assert!(matches!(r, Err(ReceiveError::ForgedAck { .. })));
        assert!(!called);
        assert_eq!(a.counters().packets_invalid, 1);
        assert_eq!(a.is_acked(Sequence(0)), Some(false));
    }
}
