//! Round-trip time, packet loss and bandwidth estimates, and event counters.

use super::config::EndpointConfig;
use super::sequence::Sequence;
use super::sequence_buffer::SequenceBuffer;

/// What an endpoint remembers about a packet it sent.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SentPacket {
    /// Send time, seconds.
    pub(crate) time: f64,
    /// Payload plus `packet_header_size` bytes.
    pub(crate) bytes: u32,
    /// Acked by the peer (reported once).
    pub(crate) acked: bool,
    /// A sequence skipped on purpose, never sent: not a packet (not sent, lost,
    /// acked or measured), and a peer acking it acks what it never received.
    pub(crate) skipped: bool,
}

/// What an endpoint remembers about a packet it received and accepted.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReceivedPacket {
    /// Receive time, seconds.
    pub(crate) time: f64,
    /// Datagram bytes plus `packet_header_size`.
    pub(crate) bytes: u32,
}

/// Link estimates of an [`Endpoint`](super::Endpoint), in the units of the reference
/// (`reliable_endpoint_rtt` and friends): milliseconds, percent, kilobits per second.
///
/// `rtt_ms` is smoothed at every ack; everything else is recomputed by
/// [`Endpoint::update`](super::Endpoint::update) from the RTT history (the last
/// `rtt_history_size` samples, indexed by sequence) and from the older half of the
/// sent and received packet windows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Exponentially smoothed round-trip time (`rtt_smoothing_factor`).
    pub rtt_ms: f64,
    /// Smallest RTT sample in the history.
    pub rtt_min_ms: f64,
    /// Largest RTT sample in the history.
    pub rtt_max_ms: f64,
    /// Mean RTT sample in the history.
    pub rtt_avg_ms: f64,
    /// Mean of `sample - rtt_min_ms` over the history.
    pub jitter_avg_vs_min_rtt_ms: f64,
    /// Largest `sample - rtt_min_ms` over the history.
    pub jitter_max_vs_min_rtt_ms: f64,
    /// Standard deviation of the history around `rtt_avg_ms`.
    pub jitter_stddev_vs_avg_rtt_ms: f64,
    /// Smoothed percentage of sent packets never acked, measured over the older half
    /// of the sent-packet window (where every ack had time to arrive).
    pub packet_loss_percent: f64,
    /// Smoothed bandwidth sent (payload plus `packet_header_size` per packet).
    pub sent_kbps: f64,
    /// Smoothed bandwidth received and accepted.
    pub received_kbps: f64,
    /// Smoothed bandwidth of our packets the peer acked.
    pub acked_kbps: f64,
}

/// Event counters of an [`Endpoint`](super::Endpoint) (the reference's
/// `RELIABLE_ENDPOINT_COUNTER_*`, plus a few of ours). Every datagram `receive`
/// drops, and every packet refused after it, is counted in exactly one of the
/// `*_invalid`, `*_stale`, `*_duplicate`, `*_rejected`, `*_too_large*` or
/// `optimistic_acks` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Counters {
    /// Packets sent (a fragmented packet counts once).
    pub packets_sent: u64,
    /// Packets received: regular datagrams plus reassembled packets, counted before
    /// the header is checked (as the reference does).
    pub packets_received: u64,
    /// Our packets newly acked by the peer.
    pub packets_acked: u64,
    /// Our packets that left the sent window without an ack.
    pub packets_lost: u64,
    /// Received packets dropped as older than the received window.
    pub packets_stale: u64,
    /// Received packets dropped because they were already received.
    pub packets_duplicate: u64,
    /// Datagrams dropped because the packet header is malformed, or its ack names a
    /// sequence we have not sent yet.
    pub packets_invalid: u64,
    /// Packets the layer above refused (not acked).
    pub packets_rejected: u64,
    /// Packets dropped because their acks name a sequence we skipped (never sent):
    /// the peer acks packets it did not receive (see
    /// [`EndpointConfig::skip_sequence_seed`](super::EndpointConfig::skip_sequence_seed)).
    pub optimistic_acks: u64,
    /// Sequences we skipped on purpose (never sent; not counted in `packets_sent`).
    pub sequences_skipped: u64,
    /// Payloads `send` refused as larger than `max_packet_size`.
    pub packets_too_large_to_send: u64,
    /// Datagrams or packets dropped as larger than the configuration allows.
    pub packets_too_large_to_receive: u64,
    /// Fragment datagrams sent.
    pub fragments_sent: u64,
    /// Fragments received and stored.
    pub fragments_received: u64,
    /// Fragments dropped as malformed, stale or inconsistent with earlier fragments.
    pub fragments_invalid: u64,
    /// Fragments dropped because they (or their whole packet) were already received.
    pub fragments_duplicate: u64,
}

/// The smoothed and windowed estimates behind [`Stats`].
#[derive(Debug)]
pub(crate) struct Estimator {
    stats: Stats,
    /// RTT samples in ms by `sequence % len`; negative = empty.
    history: Box<[f64]>,
    rtt_smoothing: f64,
    loss_smoothing: f64,
    bandwidth_smoothing: f64,
}

/// Moves `current` towards `target` by `factor`, or snaps to it when (almost) equal,
/// as the reference does.
fn smooth(current: &mut f64, target: f64, factor: f64) {
    if (*current - target).abs() > 0.00001 {
        *current += (target - *current) * factor;
    } else {
        *current = target;
    }
}

impl Estimator {
    pub(crate) fn new(config: &EndpointConfig) -> Self {
        Self {
            stats: Stats::default(),
            history: vec![-1.0; config.rtt_history_size].into_boxed_slice(),
            rtt_smoothing: config.rtt_smoothing_factor,
            loss_smoothing: config.packet_loss_smoothing_factor,
            bandwidth_smoothing: config.bandwidth_smoothing_factor,
        }
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Records the round trip of `sequence`, acked `rtt_ms` after it was sent.
    #[inline]
    pub(crate) fn rtt_sample(&mut self, sequence: Sequence, rtt_ms: f64) {
        let index = usize::from(sequence.0) % self.history.len();
        self.history[index] = rtt_ms;
        let rtt = &mut self.stats.rtt_ms;
        if (*rtt == 0.0 && rtt_ms > 0.0) || (*rtt - rtt_ms).abs() < 0.00001 {
            *rtt = rtt_ms;
        } else {
            *rtt += (rtt_ms - *rtt) * self.rtt_smoothing;
        }
    }

    /// Recomputes the windowed estimates (the reference's `reliable_endpoint_update`).
    pub(crate) fn update(
        &mut self,
        sent: &SequenceBuffer<SentPacket>,
        received: &SequenceBuffer<ReceivedPacket>,
    ) {
        self.update_rtt_history();

        // The older half of each window: sequences next - N .. next - N / 2.
        let oldest_half = |next: Sequence, size: usize| {
            let base = next.wrapping_sub(size as u16);
            (0..size / 2).map(move |i| base.wrapping_add(i as u16))
        };

        let sent_window = || {
            oldest_half(sent.next_sequence(), sent.capacity())
                .filter_map(|s| sent.get(s))
                .filter(|p| !p.skipped)
        };
        let mut num_sent = 0u32;
        let mut num_dropped = 0u32;
        for packet in sent_window() {
            num_sent += 1;
            if !packet.acked {
                num_dropped += 1;
            }
        }
        if num_sent > 0 {
            let loss = f64::from(num_dropped) / f64::from(num_sent) * 100.0;
            smooth(
                &mut self.stats.packet_loss_percent,
                loss,
                self.loss_smoothing,
            );
        } else {
            self.stats.packet_loss_percent = 0.0;
        }

        let factor = self.bandwidth_smoothing;
        if let Some(kbps) = kbps(sent_window().map(|p| (p.time, p.bytes))) {
            smooth(&mut self.stats.sent_kbps, kbps, factor);
        }
        let received_window = oldest_half(received.next_sequence(), received.capacity())
            .filter_map(|s| received.get(s))
            .map(|p| (p.time, p.bytes));
        if let Some(kbps) = kbps(received_window) {
            smooth(&mut self.stats.received_kbps, kbps, factor);
        }
        let acked_window = sent_window().filter(|p| p.acked).map(|p| (p.time, p.bytes));
        if let Some(kbps) = kbps(acked_window) {
            smooth(&mut self.stats.acked_kbps, kbps, factor);
        }
    }

    fn update_rtt_history(&mut self) {
        let samples = || self.history.iter().copied().filter(|&r| r >= 0.0);
        let mut count = 0usize;
        let mut min = f64::INFINITY;
        let mut max = 0.0f64;
        let mut sum = 0.0;
        for r in samples() {
            count += 1;
            min = min.min(r);
            max = max.max(r);
            sum += r;
        }
        let s = &mut self.stats;
        if count == 0 {
            s.rtt_min_ms = 0.0;
            s.rtt_max_ms = 0.0;
            s.rtt_avg_ms = 0.0;
            s.jitter_avg_vs_min_rtt_ms = 0.0;
            s.jitter_max_vs_min_rtt_ms = 0.0;
            s.jitter_stddev_vs_avg_rtt_ms = 0.0;
            return;
        }
        let n = count as f64;
        let avg = sum / n;
        let mut jitter_sum = 0.0;
        let mut var_sum = 0.0;
        for r in samples() {
            jitter_sum += r - min;
            var_sum += (r - avg) * (r - avg);
        }
        s.rtt_min_ms = min;
        s.rtt_max_ms = max;
        s.rtt_avg_ms = avg;
        s.jitter_avg_vs_min_rtt_ms = jitter_sum / n;
        s.jitter_max_vs_min_rtt_ms = max - min;
        s.jitter_stddev_vs_avg_rtt_ms = (var_sum / n).sqrt();
    }
}

/// Kilobits per second of `(time, bytes)` samples over their time span, or `None`
/// when the span is empty.
fn kbps(samples: impl Iterator<Item = (f64, u32)>) -> Option<f64> {
    let mut bytes = 0.0;
    let mut start = f64::INFINITY;
    let mut finish = f64::NEG_INFINITY;
    for (time, b) in samples {
        bytes += f64::from(b);
        start = start.min(time);
        finish = finish.max(time);
    }
    (finish > start).then(|| bytes / (finish - start) * 8.0 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_first_sample_is_taken_whole_then_smoothed() {
        let config = EndpointConfig {
            rtt_smoothing_factor: 0.1,
            ..EndpointConfig::default()
        };
        let mut e = Estimator::new(&config);
        e.rtt_sample(Sequence(0), 100.0);
        assert_eq!(e.stats().rtt_ms, 100.0);
        e.rtt_sample(Sequence(1), 200.0);
        assert!((e.stats().rtt_ms - 110.0).abs() < 1e-9);
    }

    #[test]
    fn history_min_max_jitter_and_loss() {
        let config = EndpointConfig {
            sent_packets_buffer_size: 8,
            ..EndpointConfig::default()
        };
        let mut e = Estimator::new(&config);
        for (s, r) in [(0u16, 50.0), (1, 70.0), (2, 60.0)] {
            e.rtt_sample(Sequence(s), r);
        }
        let mut sent: SequenceBuffer<SentPacket> = SequenceBuffer::new(8);
        let received: SequenceBuffer<ReceivedPacket> = SequenceBuffer::new(8);
        for s in 0..8u16 {
            let p = SentPacket {
                time: f64::from(s) * 0.1,
                bytes: 100,
                acked: s % 2 == 0,
                skipped: false,
            };
            sent.insert(Sequence(s), p).expect("fresh");
        }
        e.update(&sent, &received);
        let st = e.stats();
        assert_eq!((st.rtt_min_ms, st.rtt_max_ms), (50.0, 70.0));
        assert!((st.rtt_avg_ms - 60.0).abs() < 1e-9);
        assert!((st.jitter_avg_vs_min_rtt_ms - 10.0).abs() < 1e-9);
        assert_eq!(st.jitter_max_vs_min_rtt_ms, 20.0);
        // Older half = 0..4: 2 of 4 unacked, smoothed from 0 by 10%.
        assert!((st.packet_loss_percent - 5.0).abs() < 1e-9);
        // 400 bytes over 0.3 s, smoothed from 0 by 10%.
        assert!((st.sent_kbps - 0.1 * 400.0 / 0.3 * 8.0 / 1000.0).abs() < 1e-9);
        assert_eq!(st.received_kbps, 0.0);
    }
}
