//! Round-trip time, packet loss and bandwidth estimates, and event counters.

use std::time::Duration;

use super::config::EndpointConfig;
use super::rtt_history::RttHistory;
use super::sent_window::SentWindow;
use super::seq_bits::{SeqBits, low_bits, run_mask};
use crate::Time;
use crate::sequence::Sequence;
use crate::time::saturating_duration;

/// What an [`Endpoint`](super::Endpoint) measured of its link and counted: the link
/// estimates (round-trip times, loss in percent, bandwidth in kilobits per second)
/// and the event counters (the reference's `RELIABLE_ENDPOINT_COUNTER_*`, plus a few
/// of ours).
///
/// `rtt` and `ack_delay` are smoothed at every ack; `packet_loss_percent` is
/// recomputed at every [`Endpoint::update`](super::Endpoint::update); the rest (the
/// RTT history's summary, over the last `rtt_history_size` samples, and the bandwidths,
/// over the bytes counted since the last time) four times a second of the `now` given
/// to it. The estimators compute on durations, to the nanosecond.
///
/// Every datagram `receive` drops, and every packet refused after it, is counted in
/// exactly one of the `packets_dropped_*` or `fragments_dropped_*` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct EndpointStats {
    /// Exponentially smoothed round-trip time (`rtt_smoothing_factor` per packet).
    ///
    /// With [`report_ack_delay`](super::EndpointConfig::report_ack_delay) (as the
    /// [connection layer](crate::connection) runs it), the round trip on the network:
    /// the time the peer held our packets before acking them is taken out (see the
    /// `ack_delay` module documentation in the source). Without it, as the reference
    /// measures it: from the send of each packet to the arrival of the first ack of
    /// it, which includes the wait for the peer's next packet.
    pub rtt: Duration,
    /// Smallest RTT sample in the history; `None` until a sample is in it (the
    /// history is passed over four times a second, so it appears within a quarter
    /// second of the first ack). The same for the five fields below: a round trip not
    /// measured yet is absent, never 0.
    pub rtt_min: Option<Duration>,
    /// Largest RTT sample in the history; `None` until measured.
    pub rtt_max: Option<Duration>,
    /// Mean RTT sample in the history; `None` until measured.
    pub rtt_avg: Option<Duration>,
    /// Mean of `sample - rtt_min` over the history; `None` until measured.
    pub jitter_avg_vs_min_rtt: Option<Duration>,
    /// Largest `sample - rtt_min` over the history; `None` until measured.
    pub jitter_max_vs_min_rtt: Option<Duration>,
    /// Standard deviation of the history around `rtt_avg`: how much the round trip
    /// varies; `None` until measured.
    pub jitter_stddev_vs_avg_rtt: Option<Duration>,
    /// The time the peer holds our packets before acking them, smoothed (0 without
    /// `report_ack_delay`): `rtt + ack_delay` is how long an ack takes to come back,
    /// what a resend timer waits for.
    pub ack_delay: Duration,
    /// Percentage of our last `loss_window` packets whose fate is known that were
    /// lost: a packet is known acked when an ack of it arrives, and known lost once
    /// the peer's acks have passed it by 3 packets (its reordering allowance) or, once
    /// an RTT is measured, when it was sent over `2 * (rtt + ack_delay) + 100 ms`
    /// ago, unacked. An ack that comes after all corrects it. No smoothing on top:
    /// it reflects a change within about `loss_window` packets.
    ///
    /// `None` until the fate of one of our packets is known. Resolution: 1/N after N
    /// packets, at best 1/`loss_window` (1/32 by default, 3.1 points): for a finer
    /// figure that follows a change more slowly, see
    /// [`packet_loss_percent_long`](Self::packet_loss_percent_long).
    pub packet_loss_percent: Option<f64>,
    /// Percentage of our last 1024 packets whose fate is known that were lost, by the
    /// same rules as `packet_loss_percent` (an ack that comes while the packet is among
    /// the last `loss_window` known ones corrects it).
    ///
    /// `None` until the fate of one of our packets is known. Resolution: 1/N after N
    /// packets, 1/1024 (0.1 point) once 1024 are known; at 1% loss its standard error
    /// over 1024 packets is about 0.3 point. It follows a change over about 1024
    /// packets (34 s at 30 packets per second): the figure to display or log, where
    /// `packet_loss_percent` is the one to react to.
    pub packet_loss_percent_long: Option<f64>,
    /// Smoothed bandwidth sent, in kilobits per second: the bytes of the packets sent
    /// (payload plus `packet_header_size` each; a fragmented packet counts once)
    /// between two passes, four times a second, over the time between them, smoothed
    /// by `bandwidth_smoothing_factor` per pass (the first interval's rate is taken
    /// whole). 0 until two passes are a time apart.
    pub sent_kbps: f64,
    /// Smoothed bandwidth received, counted the same way over the packets received
    /// and accepted (datagram bytes plus `packet_header_size`).
    pub received_kbps: f64,
    /// Smoothed bandwidth of our packets the peer acked, counted the same way when
    /// their first ack arrives.
    pub acked_kbps: f64,

    /// Packets sent (a fragmented packet counts once).
    pub packets_sent: u64,
    /// Packets received: regular datagrams plus reassembled packets, counted before
    /// the header is checked (as the reference does).
    pub packets_received: u64,
    /// Packets the layer above accepted (recorded as received, acked).
    pub packets_accepted: u64,
    /// Our packets newly acked by the peer.
    pub packets_acked: u64,
    /// Our packets that left the sent window without an ack.
    pub packets_lost: u64,
    /// Received packets dropped as older than the received window.
    pub packets_dropped_stale: u64,
    /// Received packets dropped because they were already received.
    pub packets_dropped_duplicate: u64,
    /// Datagrams dropped because the packet header is malformed, or its ack names a
    /// sequence we have not sent yet.
    pub packets_dropped_invalid: u64,
    /// Packets the layer above refused (not acked).
    pub packets_dropped_by_layer: u64,
    /// Packets dropped because their acks name a sequence we skipped (never sent):
    /// the peer acks packets it did not receive (see
    /// [`EndpointConfig::skip_sequence_seed`](super::EndpointConfig::skip_sequence_seed)).
    pub packets_dropped_optimistic_ack: u64,
    /// Sequences we skipped on purpose (never sent; not counted in `packets_sent`).
    pub sequences_skipped: u64,
    /// Payloads `send` refused as larger than `max_packet_size`.
    pub packets_dropped_too_large_to_send: u64,
    /// Datagrams or packets dropped as larger than the configuration allows.
    pub packets_dropped_too_large_to_receive: u64,
    /// Fragment datagrams sent.
    pub fragments_sent: u64,
    /// Fragments received and stored.
    pub fragments_received: u64,
    /// Fragments dropped as malformed, stale or inconsistent with earlier fragments.
    pub fragments_dropped_invalid: u64,
    /// Fragments dropped because they (or their whole packet) were already received.
    pub fragments_dropped_duplicate: u64,
}

/// The estimates behind [`EndpointStats`], as every layer that reads them (resend
/// timers, congestion, loss by age) takes them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Estimates {
    pub(crate) rtt: Duration,
    pub(crate) rtt_min: Option<Duration>,
    pub(crate) rtt_max: Option<Duration>,
    pub(crate) rtt_avg: Option<Duration>,
    pub(crate) jitter_avg_vs_min_rtt: Option<Duration>,
    pub(crate) jitter_max_vs_min_rtt: Option<Duration>,
    pub(crate) jitter_stddev_vs_avg_rtt: Option<Duration>,
    pub(crate) ack_delay: Duration,
    pub(crate) packet_loss_percent: Option<f64>,
    pub(crate) packet_loss_percent_long: Option<f64>,
    pub(crate) sent_kbps: f64,
    pub(crate) received_kbps: f64,
    pub(crate) acked_kbps: f64,
}

impl Estimates {
    /// How long an ack takes to come back: the round trip plus the peer's hold.
    pub(crate) fn ack_time(&self) -> Duration {
        self.rtt.saturating_add(self.ack_delay)
    }

    /// The estimates as reported, with `counters`' counters.
    pub(crate) fn stats(&self, counters: &EndpointStats) -> EndpointStats {
        EndpointStats {
            rtt: self.rtt,
            rtt_min: self.rtt_min,
            rtt_max: self.rtt_max,
            rtt_avg: self.rtt_avg,
            jitter_avg_vs_min_rtt: self.jitter_avg_vs_min_rtt,
            jitter_max_vs_min_rtt: self.jitter_max_vs_min_rtt,
            jitter_stddev_vs_avg_rtt: self.jitter_stddev_vs_avg_rtt,
            ack_delay: self.ack_delay,
            packet_loss_percent: self.packet_loss_percent,
            packet_loss_percent_long: self.packet_loss_percent_long,
            sent_kbps: self.sent_kbps,
            received_kbps: self.received_kbps,
            acked_kbps: self.acked_kbps,
            ..*counters
        }
    }
}

/// Packets the peer's acks may pass before one of ours counts as lost: it may have
/// been overtaken on the way (QUIC's packet threshold).
const REORDER_ALLOWANCE: u16 = 3;

/// Added to twice the ack time before an unacked packet counts as lost by age.
const LOSS_TIME_SLACK: Duration = Duration::from_millis(100);

/// Between two passes over the RTT history's summary and the bandwidth tallies: a
/// server pays them per connection four times a second rather than at every tick.
const WINDOWS_INTERVAL: Duration = Duration::from_millis(250);

/// Our packets whose fate the long loss figure
/// ([`EndpointStats::packet_loss_percent_long`]) counts: its finest resolution is one
/// in this many. A power of two that divides 65536 (a slot per sequence, modulo).
pub(crate) const LONG_LOSS_WINDOW: usize = 1024;

/// The fates of our last [`LONG_LOSS_WINDOW`] settled packets: a bit per sequence
/// (modulo the window) for "counted" (sent, fate known: lane 0) and one for "lost"
/// (lane 1), with their totals. 256 bytes, fixed.
#[derive(Debug, Default)]
struct LongLoss {
    fates: SeqBits<[[u64; 2]; LONG_LOSS_WINDOW / 64]>,
    known: u32,
    lost_total: u32,
    /// The newest sequence whose fate is filed.
    front: Option<Sequence>,
}

impl LongLoss {
    /// Files the fates of sequences `s0 + j` for the bits `j` of `mask`: counted when
    /// bit `j` of `packets` is set (a packet was sent; otherwise no packet: skipped,
    /// or no record), lost when bit `j` of `lost` is set too.
    #[inline(always)]
    fn file(&mut self, s0: Sequence, mask: u64, packets: u64, lost: u64) {
        let (packets, lost) = (packets & mask, lost & packets & mask);
        let [was_counted, was_lost] = self.fates.get(s0).map(|w| w & mask);
        if (was_counted, was_lost) == (packets, lost) {
            // Filed already (the common case of the late-ack pass).
            return;
        }
        self.known = self.known - was_counted.count_ones() + packets.count_ones();
        self.lost_total = self.lost_total - was_lost.count_ones() + lost.count_ones();
        self.fates.set(s0, [mask, mask], [packets, lost]);
    }

    /// The share lost, in percent; `None` before any fate is known.
    fn percent(&self) -> Option<f64> {
        (self.known > 0).then(|| f64::from(self.lost_total) / f64::from(self.known) * 100.0)
    }
}

/// Below this a smoothed time snaps to its target, as the reference does (its
/// 0.00001 ms).
const SNAP: Duration = Duration::from_nanos(10);

/// Weight of each packet's reported hold in `ack_delay`.
const ACK_DELAY_SMOOTHING: f64 = 1.0 / 16.0;

/// The smoothed and windowed estimates behind [`EndpointStats`].
#[derive(Debug)]
pub(crate) struct Estimator {
    stats: Estimates,
    /// The last `rtt_history_size` RTT samples, with the sums of their summary.
    history: RttHistory,
    rtt_smoothing: f64,
    bandwidth_smoothing: f64,
    loss_window: u16,
    /// The fates of the last [`LONG_LOSS_WINDOW`] settled packets.
    long_loss: LongLoss,
    /// The newest of our packets the peer acked (the largest `ack` with bits set).
    ack_front: Option<Sequence>,
    /// Whether a hold was reported yet (the first is taken whole).
    ack_delay_known: bool,
    /// When the RTT history and the bandwidth tallies were last passed over.
    windows_at: Time,
    /// Bytes sent, received and acked since then, for the bandwidths.
    tally: Tally,
    /// A pass took bandwidths already (the first are taken whole).
    bandwidth_measured: bool,
    /// The newest packet settled by age at the last update: where the next search
    /// starts.
    by_age: Option<Sequence>,
}

/// Moves the rate `current` towards `target` by `factor`, or snaps to it when
/// (almost) equal, as the reference does.
fn smooth(current: &mut f64, target: f64, factor: f64) {
    if (*current - target).abs() > 0.00001 {
        *current += (target - *current) * factor;
    } else {
        *current = target;
    }
}

/// The weight of `count` samples of equal value under per-sample weight `factor`:
/// `factor` itself for one (as the reference smooths), without the power.
fn weight(factor: f64, count: u32) -> f64 {
    if count == 1 {
        return factor;
    }
    1.0 - (1.0 - factor).powi(count.min(1 << 16) as i32)
}

impl Estimator {
    pub(crate) fn new(config: &EndpointConfig) -> Self {
        Self {
            stats: Estimates::default(),
            history: RttHistory::new(config.rtt_history_size),
            rtt_smoothing: config.rtt_smoothing_factor,
            bandwidth_smoothing: config.bandwidth_smoothing_factor,
            // Within the sent window, at most 32768 entries.
            loss_window: u16::try_from(config.loss_window.min(config.sent_packets_buffer_size))
                .unwrap_or(u16::MAX),
            long_loss: LongLoss::default(),
            ack_front: None,
            ack_delay_known: false,
            windows_at: Time::NEVER,
            tally: Tally::default(),
            bandwidth_measured: false,
            by_age: None,
        }
    }

    pub(crate) fn estimates(&self) -> &Estimates {
        &self.stats
    }

    /// Asks the CPU for the estimator's own fields (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_fields(&self) {
        use crate::prefetch::prefetch;
        prefetch(&self.stats.rtt);
        prefetch(&self.stats.jitter_stddev_vs_avg_rtt);
        prefetch(&self.stats.acked_kbps);
        prefetch(&self.history);
        prefetch(&self.long_loss);
        prefetch(&self.tally);
        prefetch(&self.ack_front);
        prefetch(&self.by_age);
        prefetch(&self.windows_at);
    }

    /// Asks the CPU for the RTT history's slot of the peer's packet `received` and
    /// the long-loss window's bits of our packet `acked`.
    #[inline]
    pub(crate) fn prefetch_windows(&self, received: Sequence, acked: Sequence) {
        self.history.prefetch(received.0);
        self.long_loss.fates.prefetch(acked);
    }

    /// Records an RTT sample `sample` standing for `count` packets, filed in the
    /// history under `sequence`. The first sample is taken whole.
    #[inline]
    pub(crate) fn rtt_sample(&mut self, sequence: Sequence, sample: Duration, count: u32) {
        // A round trip of 584 years is filed as the longest the history holds.
        self.history.record(
            sequence.0,
            u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX),
        );
        let rtt = &mut self.stats.rtt;
        if (rtt.is_zero() && !sample.is_zero()) || rtt.abs_diff(sample) < SNAP {
            *rtt = sample;
        } else {
            *rtt = blend(*rtt, sample, weight(self.rtt_smoothing, count));
        }
    }

    /// Records the peer's `hold` of `count` of our packets (the first is taken whole).
    pub(crate) fn ack_delay_sample(&mut self, hold: Duration, count: u32) {
        let delay = &mut self.stats.ack_delay;
        if self.ack_delay_known {
            *delay = blend(*delay, hold, weight(ACK_DELAY_SMOOTHING, count));
        } else {
            *delay = hold;
            self.ack_delay_known = true;
        }
    }

    /// Notes the ack fields of an accepted packet.
    pub(crate) fn on_acks(&mut self, ack: Sequence, ack_bits: u32) {
        if ack_bits != 0 && self.ack_front.is_none_or(|front| ack.is_newer_than(front)) {
            self.ack_front = Some(ack);
        }
    }

    /// Counts a packet of `bytes` sent (payload plus `packet_header_size`).
    #[inline]
    pub(crate) fn on_sent(&mut self, bytes: usize) {
        self.tally.sent += bytes as u64;
    }

    /// Counts a packet of `bytes` received and accepted.
    #[inline]
    pub(crate) fn on_received(&mut self, bytes: usize) {
        self.tally.received += bytes as u64;
    }

    /// Bytes received since the last pass.
    #[cfg(test)]
    pub(crate) fn received_tally(&self) -> u64 {
        self.tally.received
    }

    /// Counts one of our packets of `bytes` acked for the first time.
    #[inline]
    pub(crate) fn on_acked(&mut self, bytes: u32) {
        self.tally.acked += u64::from(bytes);
    }

    /// Recomputes the estimates at `now`: the loss (the fate bits of the last
    /// `loss_window` packets, 64 at a time) at every call; the RTT history's summary
    /// and the bandwidths (the bytes tallied since the last pass over the time since
    /// it) at most every [`WINDOWS_INTERVAL`], or when the clock went back (which
    /// starts the bandwidth tallies again without a sample, as does the first pass).
    pub(crate) fn update(&mut self, now: Time, sent: &SentWindow) {
        self.update_loss(now, sent);
        let elapsed = now.secs_since(self.windows_at);
        if elapsed < WINDOWS_INTERVAL.as_secs_f64() && now >= self.windows_at {
            return;
        }
        let counted = now > self.windows_at && elapsed.is_finite();
        self.windows_at = now;
        self.update_rtt_history();
        let tally = std::mem::take(&mut self.tally);
        if counted {
            // The first interval's rates are taken whole.
            let factor = if self.bandwidth_measured {
                self.bandwidth_smoothing
            } else {
                1.0
            };
            self.bandwidth_measured = true;
            let kbps = |bytes: u64| bytes as f64 * 8.0 / 1000.0 / elapsed;
            smooth(&mut self.stats.sent_kbps, kbps(tally.sent), factor);
            smooth(&mut self.stats.received_kbps, kbps(tally.received), factor);
            smooth(&mut self.stats.acked_kbps, kbps(tally.acked), factor);
        }
    }

    /// The share of the last `loss_window` settled packets never acked (see
    /// [`EndpointStats::packet_loss_percent`]).
    fn update_loss(&mut self, now: Time, sent: &SentWindow) {
        // Settled by the acks: passed over by the reordering allowance.
        let mut end = self
            .ack_front
            .map(|front| front.wrapping_sub(REORDER_ALLOWANCE));
        // Settled by age: sent longer ago than an ack takes, with slack.
        if !self.stats.rtt.is_zero() {
            let age = self
                .stats
                .ack_time()
                .saturating_mul(2)
                .saturating_add(LOSS_TIME_SLACK);
            let by_age = sent.newest_sent_by(now - age, self.by_age);
            self.by_age = by_age;
            if let Some(by_age) = by_age
                && end.is_none_or(|e| by_age.is_newer_than(e))
            {
                end = Some(by_age);
            }
        }
        let Some(end) = end else {
            self.stats.packet_loss_percent = None;
            self.stats.packet_loss_percent_long = None;
            return;
        };
        // The long window: file the fates settled since the last update (at most a
        // window's worth; a sequence without a record files as no packet, clearing
        // the slot of the one a window before it).
        let long = &mut self.long_loss;
        let newly = match long.front {
            None => LONG_LOSS_WINDOW as u16,
            Some(front) if end.is_newer_than(front) => {
                end.0.wrapping_sub(front.0).min(LONG_LOSS_WINDOW as u16)
            }
            // The end moved back (the round trip grew): those stay filed.
            Some(_) => 0,
        };
        for_chunks(end.wrapping_sub(newly).next(), newly, |s0, len| {
            let (packets, acked) = sent.fates(s0);
            long.file(s0, low_bits(len), packets, !acked);
        });
        if newly > 0 {
            long.front = Some(end);
        }
        // The fast window, 64 sequences at a time; a late ack corrects the long
        // window too (for the sequences it filed).
        let (mut known, mut lost) = (0u32, 0u32);
        let first = end.wrapping_sub(self.loss_window).next();
        for_chunks(first, self.loss_window, |s0, len| {
            let (packets, acked) = sent.fates(s0);
            let packets = packets & low_bits(len);
            known += packets.count_ones();
            lost += (packets & !acked).count_ones();
            if let Some(front) = long.front {
                // Not newer than the front: outside the 32768 after it.
                let filed = !run_mask(s0, front.next(), 1 << 15) & packets;
                long.file(s0, filed, packets, !acked);
            }
        });
        self.stats.packet_loss_percent =
            (known > 0).then(|| f64::from(lost) / f64::from(known) * 100.0);
        self.stats.packet_loss_percent_long = long.percent();
    }

    fn update_rtt_history(&mut self) {
        let s = &mut self.stats;
        let Some(h) = self.history.summary() else {
            s.rtt_min = None;
            s.rtt_max = None;
            s.rtt_avg = None;
            s.jitter_avg_vs_min_rtt = None;
            s.jitter_max_vs_min_rtt = None;
            s.jitter_stddev_vs_avg_rtt = None;
            return;
        };
        // Nanoseconds squared, then seconds squared: a variance is not a time.
        let variance = h.variance * 1e-18;
        s.rtt_min = Some(Duration::from_nanos(h.min));
        s.rtt_max = Some(Duration::from_nanos(h.max));
        s.rtt_avg = Some(Duration::from_nanos(h.avg));
        s.jitter_avg_vs_min_rtt = Some(Duration::from_nanos(h.jitter));
        s.jitter_max_vs_min_rtt = Some(Duration::from_nanos(h.max - h.min));
        s.jitter_stddev_vs_avg_rtt = Some(saturating_duration(variance.sqrt()));
    }
}

/// Calls `f(s0, len)` for consecutive chunks of at most 64 sequences covering the
/// `count` sequences from `first` on.
#[inline]
fn for_chunks(first: Sequence, count: u16, mut f: impl FnMut(Sequence, u32)) {
    let mut s0 = first;
    let mut left = u32::from(count);
    while left > 0 {
        let len = left.min(64);
        f(s0, len);
        s0 = s0.wrapping_add(len as u16);
        left -= len;
    }
}

/// Bytes counted since the last pass, for the bandwidths.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    sent: u64,
    received: u64,
    acked: u64,
}

/// `current` moved towards `target` by `factor` (a weight in 0..=1), to the
/// nanosecond.
fn blend(current: Duration, target: Duration, factor: f64) -> Duration {
    let step = saturating_duration(current.abs_diff(target).as_secs_f64() * factor);
    if target >= current {
        current.saturating_add(step)
    } else {
        current.saturating_sub(step)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sent_window::SentPacket;
    use super::*;

    /// `d` in milliseconds (exact for whole microseconds).
    fn ms(d: Duration) -> f64 {
        d.as_nanos() as f64 / 1e6
    }

    /// `ms` milliseconds.
    fn millis(ms: f64) -> Duration {
        Duration::from_secs_f64(ms / 1000.0)
    }

    #[test]
    fn an_ack_takes_the_round_trip_plus_the_peer_s_hold() {
        let e = Estimates {
            rtt: Duration::from_millis(80),
            ack_delay: Duration::from_millis(15),
            ..Estimates::default()
        };
        assert_eq!(e.ack_time(), Duration::from_millis(95));
    }

    #[test]
    fn smoothing_moves_by_the_factor_and_snaps_within_a_hundred_thousandth() {
        let mut x = 0.0;
        smooth(&mut x, 10.0, 0.25);
        assert_eq!(x, 2.5);
        // Within 1e-5 of the target (on either side of it): the target itself.
        let mut x = 5.0;
        smooth(&mut x, 5.000001, 0.25);
        assert_eq!(x, 5.000001);
        let mut x = 0.0;
        smooth(&mut x, 0.00001, 0.25);
        assert_eq!(x, 0.00001, "exactly 1e-5 away snaps too");
    }

    #[test]
    fn rtt_first_sample_is_taken_whole_then_smoothed_per_packet() {
        let config = EndpointConfig {
            rtt_smoothing_factor: 0.1,
            ..EndpointConfig::default()
        };
        let mut e = Estimator::new(&config);
        e.rtt_sample(Sequence(0), millis(100.0), 1);
        assert_eq!(ms(e.estimates().rtt), 100.0);
        e.rtt_sample(Sequence(1), millis(200.0), 1);
        assert!((ms(e.estimates().rtt) - 110.0).abs() < 1e-6);
        // A sample standing for two packets weighs as two: 1 - 0.9^2.
        e.rtt_sample(Sequence(2), millis(210.0), 2);
        assert!((ms(e.estimates().rtt) - (110.0 + 100.0 * 0.19)).abs() < 1e-6);
    }

    /// An estimator over windows of 8 packets.
    fn small_estimator() -> Estimator {
        Estimator::new(&EndpointConfig {
            sent_packets_buffer_size: 8,
            loss_window: 8,
            ..EndpointConfig::default()
        })
    }

    fn sent_window() -> SentWindow {
        let mut sent = SentWindow::new(8);
        for s in 0..8u16 {
            let p = SentPacket {
                time: Time::from_secs_f64(f64::from(s) * 0.1),
                bytes: 100,
                acked: s % 2 == 0,
                skipped: false,
            };
            assert_eq!(sent.record(p).0, Sequence(s));
        }
        sent
    }

    #[test]
    fn history_min_max_and_jitter() {
        let mut e = small_estimator();
        for (s, r) in [(0u16, 50.0), (1, 70.0), (2, 60.0)] {
            e.rtt_sample(Sequence(s), millis(r), 1);
        }
        e.update(Time::from_secs_f64(0.0), &sent_window());
        let st = e.estimates();
        let ms = |d: Option<Duration>| ms(d.expect("measured"));
        assert_eq!((ms(st.rtt_min), ms(st.rtt_max)), (50.0, 70.0));
        assert!((ms(st.rtt_avg) - 60.0).abs() < 1e-6);
        assert!((ms(st.jitter_avg_vs_min_rtt) - 10.0).abs() < 1e-6);
        assert_eq!(ms(st.jitter_max_vs_min_rtt), 20.0);
    }

    #[test]
    fn loss_counts_the_packets_whose_fate_is_known() {
        let mut e = small_estimator();
        let mut sent = sent_window();
        e.update(Time::from_secs_f64(0.7), &sent);
        assert_eq!(e.estimates().packet_loss_percent, None, "nothing known yet");
        assert_eq!(e.estimates().packet_loss_percent_long, None);
        let loss = |e: &Estimator| e.estimates().packet_loss_percent.expect("known");
        let long = |e: &Estimator| e.estimates().packet_loss_percent_long.expect("known");
        // The peer acked up to 7 (evens only): 0..=4 are known, 1 and 3 lost; 5 and
        // 6 are within the reordering allowance.
        e.on_acks(Sequence(6), 0b1);
        e.on_acks(Sequence(2), 0b1);
        e.on_acks(Sequence(7), 0b1);
        e.update(Time::from_secs_f64(0.7), &sent);
        assert!((loss(&e) - 40.0).abs() < 1e-9);
        assert!((long(&e) - 40.0).abs() < 1e-9);
        // With an RTT of 50 ms, packets sent over 0.2 s ago are known too: 0..=5.
        e.rtt_sample(Sequence(0), millis(50.0), 1);
        e.update(Time::from_secs_f64(0.75), &sent);
        assert!((loss(&e) - 50.0).abs() < 1e-9);
        assert!((long(&e) - 50.0).abs() < 1e-9);
        // A late ack corrects it.
        assert!(sent.ack(Sequence(5)).is_some());
        e.update(Time::from_secs_f64(0.75), &sent);
        assert!((loss(&e) - 100.0 / 3.0).abs() < 1e-9);
        assert!((long(&e) - 100.0 / 3.0).abs() < 1e-9, "corrected too");
    }

    #[test]
    fn the_round_trip_history_is_absent_until_a_sample_is_in_it() {
        let mut e = small_estimator();
        e.update(Time::from_secs_f64(0.0), &sent_window());
        let st = e.estimates();
        assert_eq!(
            [
                st.rtt_min,
                st.rtt_max,
                st.rtt_avg,
                st.jitter_avg_vs_min_rtt,
                st.jitter_max_vs_min_rtt,
                st.jitter_stddev_vs_avg_rtt
            ],
            [None; 6]
        );
        e.rtt_sample(Sequence(0), millis(40.0), 1);
        e.update(Time::from_secs_f64(1.0), &sent_window());
        let st = e.estimates();
        assert_eq!(st.rtt_min, Some(millis(40.0)));
        assert_eq!(st.jitter_stddev_vs_avg_rtt, Some(Duration::ZERO));
        assert_eq!(st.jitter_max_vs_min_rtt, Some(Duration::ZERO));
    }

    #[test]
    fn the_long_loss_window_counts_1024_packets_and_forgets_older_ones() {
        // 2048 packets sent, every 10th lost (by its sequence); the peer acked up to
        // the newest: 2045 are settled (3 within the reordering allowance).
        let mut e = Estimator::new(&EndpointConfig {
            sent_packets_buffer_size: 4096,
            loss_window: 32,
            ..EndpointConfig::default()
        });
        let mut sent = SentWindow::new(4096);
        let mut fill = |e: &mut Estimator, from: u16, to: u16, lost: &dyn Fn(u16) -> bool| {
            for s in from..to {
                let p = SentPacket {
                    time: Time::from_secs_f64(f64::from(s) * 0.01),
                    bytes: 100,
                    acked: !lost(s),
                    skipped: false,
                };
                assert_eq!(sent.record(p).0, Sequence(s));
            }
            e.on_acks(Sequence(to - 1), 1);
            e.update(Time::from_secs_f64(f64::from(to) * 0.01), &sent);
        };
        fill(&mut e, 0, 1000, &|s| s % 10 == 0);
        // 997 settled (0..=996): 100 of them lost (0, 10, ... 990).
        let st = e.estimates();
        assert_eq!(st.packet_loss_percent_long, Some(100.0 / 997.0 * 100.0));
        // The fast window: 993..=996 ... the last 32 settled, 965..=996: 3 lost.
        assert_eq!(st.packet_loss_percent, Some(3.0 / 32.0 * 100.0));
        // Then 1000 more without loss: the long window holds 1024 (973..=1996),
        // 3 of them lost (980, 990 and none after... 973..=999 holds 980 and 990).
        fill(&mut e, 1000, 2000, &|_| false);
        let st = e.estimates();
        assert_eq!(st.packet_loss_percent_long, Some(2.0 / 1024.0 * 100.0));
        assert_eq!(st.packet_loss_percent, Some(0.0));
    }

    #[test]
    fn the_report_takes_every_estimate_and_keeps_the_counters() {
        let e = Estimates {
            rtt: Duration::from_millis(1),
            rtt_min: Some(Duration::from_millis(2)),
            rtt_max: Some(Duration::from_millis(3)),
            rtt_avg: Some(Duration::from_millis(4)),
            jitter_avg_vs_min_rtt: Some(Duration::from_millis(5)),
            jitter_max_vs_min_rtt: Some(Duration::from_millis(6)),
            jitter_stddev_vs_avg_rtt: Some(Duration::from_millis(7)),
            ack_delay: Duration::from_millis(8),
            packet_loss_percent: Some(9.0),
            packet_loss_percent_long: Some(9.5),
            sent_kbps: 10.0,
            received_kbps: 11.0,
            acked_kbps: 12.0,
        };
        let counters = EndpointStats {
            packets_sent: 13,
            packets_dropped_invalid: 14,
            ..EndpointStats::default()
        };
        let st = e.stats(&counters);
        let times = [
            Some(st.rtt),
            st.rtt_min,
            st.rtt_max,
            st.rtt_avg,
            st.jitter_avg_vs_min_rtt,
            st.jitter_max_vs_min_rtt,
            st.jitter_stddev_vs_avg_rtt,
            Some(st.ack_delay),
        ];
        assert_eq!(
            times,
            core::array::from_fn(|i| Some(Duration::from_millis(i as u64 + 1)))
        );
        let rates = [
            st.packet_loss_percent,
            st.packet_loss_percent_long,
            Some(st.sent_kbps),
            Some(st.received_kbps),
            Some(st.acked_kbps),
        ];
        assert_eq!(rates, [9.0, 9.5, 10.0, 11.0, 12.0].map(Some));
        assert_eq!((st.packets_sent, st.packets_dropped_invalid), (13, 14));
    }

    #[test]
    fn smoothing_moves_from_where_it_is() {
        let mut x = 2.0;
        smooth(&mut x, 10.0, 0.25);
        assert_eq!(x, 4.0);
        let mut x = 10.0;
        smooth(&mut x, 2.0, 0.25);
        assert_eq!(x, 8.0);
    }

    #[test]
    fn a_round_trip_too_long_for_the_history_is_kept_as_its_longest_entry() {
        // A sample past u64 nanoseconds, and one of exactly u64::MAX nanoseconds (the
        // empty mark): both are stored one below it, not as an empty entry.
        for sample in [Duration::MAX, Duration::from_nanos(u64::MAX)] {
            let mut e = small_estimator();
            e.rtt_sample(Sequence(0), sample, 1);
            e.update(Time::from_secs_f64(0.0), &sent_window());
            assert_eq!(
                e.estimates().rtt_max,
                Some(Duration::from_nanos(u64::MAX - 1)),
                "{sample:?}"
            );
        }
    }

    #[test]
    fn rtt_snaps_to_a_sample_within_ten_nanoseconds_only() {
        let base = Duration::from_millis(100);
        let mut e = Estimator::new(&EndpointConfig {
            rtt_smoothing_factor: 0.1,
            ..EndpointConfig::default()
        });
        e.rtt_sample(Sequence(0), base, 1);
        let near = base + Duration::from_nanos(9);
        e.rtt_sample(Sequence(1), near, 1);
        assert_eq!(e.estimates().rtt, near, "9 ns away: snapped");
        let far = near + SNAP;
        e.rtt_sample(Sequence(2), far, 1);
        let rtt = e.estimates().rtt;
        assert!(rtt >= near && rtt < far, "10 ns away: smoothed, {rtt:?}");
    }

    #[test]
    fn only_an_ack_with_bits_moves_the_ack_front() {
        let mut e = small_estimator();
        e.on_acks(Sequence(5), 0);
        assert_eq!(e.ack_front, None, "an ack field with no bits acks nothing");
        e.on_acks(Sequence(3), 0b1);
        assert_eq!(e.ack_front, Some(Sequence(3)));
        e.on_acks(Sequence(9), 0);
        e.on_acks(Sequence(2), 0b1);
        assert_eq!(e.ack_front, Some(Sequence(3)), "neither moves it");
        e.on_acks(Sequence(4), 0b10);
        assert_eq!(e.ack_front, Some(Sequence(4)));
    }

    #[test]
    fn the_history_is_passed_over_every_quarter_second_or_when_the_clock_goes_back() {
        let mut e = small_estimator();
        let sent = sent_window();
        let min_at = |e: &mut Estimator, rtt: f64, secs: f64| {
            e.rtt_sample(Sequence(0), millis(rtt), 1);
            e.update(Time::from_secs_f64(secs), &sent);
            ms(e.estimates().rtt_min.expect("measured"))
        };
        assert_eq!(min_at(&mut e, 50.0, 1.0), 50.0, "the first update passes");
        assert_eq!(min_at(&mut e, 40.0, 1.1), 50.0, "0.1 s later: not yet");
        assert_eq!(min_at(&mut e, 30.0, 1.249), 50.0, "0.249 s later: not yet");
        assert_eq!(min_at(&mut e, 20.0, 1.25), 20.0, "0.25 s later: passed");
        assert_eq!(
            min_at(&mut e, 10.0, 1.2),
            10.0,
            "the clock went back: passed"
        );
    }

    #[test]
    fn jitter_deviation_is_the_standard_deviation_of_the_history() {
        let mut e = small_estimator();
        for (s, r) in [(0u16, 50.0), (1, 70.0), (2, 60.0), (3, 60.0)] {
            e.rtt_sample(Sequence(s), millis(r), 1);
        }
        e.update(Time::from_secs_f64(0.0), &sent_window());
        // Deviations -10, 10, 0, 0 ms: variance 50 ms^2.
        let stddev = ms(e.estimates().jitter_stddev_vs_avg_rtt.expect("measured"));
        assert!((stddev - 50f64.sqrt()).abs() < 1e-6, "{stddev}");
    }

    #[test]
    fn bandwidth_is_the_bytes_tallied_between_two_passes_over_their_interval() {
        let mut e = small_estimator();
        let sent = sent_window();
        let kbps = |e: &Estimator| {
            let st = e.estimates();
            [st.sent_kbps, st.received_kbps, st.acked_kbps]
        };
        let tally = |e: &mut Estimator, n: usize| {
            e.on_sent(100 * n);
            e.on_received(50 * n);
            e.on_acked(25 * n as u32);
        };
        // Before the first pass: no interval, no sample, the tallies start again.
        tally(&mut e, 1);
        e.update(Time::from_secs_f64(1.0), &sent);
        assert_eq!(kbps(&e), [0.0; 3], "the first pass has no interval");
        // 0.5 s later: 400, 200 and 100 bytes, the first rates taken whole.
        tally(&mut e, 4);
        e.update(Time::from_secs_f64(1.2), &sent);
        assert_eq!(kbps(&e), [0.0; 3], "0.2 s later: not passed yet");
        e.update(Time::from_secs_f64(1.5), &sent);
        let expected = [400.0, 200.0, 100.0].map(|b: f64| b * 8.0 / 1000.0 / 0.5);
        for (got, want) in kbps(&e).into_iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{got} {want}");
        }
        // The clock goes back: the pass takes no sample and starts the tallies again.
        let before = kbps(&e);
        tally(&mut e, 1000);
        e.update(Time::from_secs_f64(1.4), &sent);
        assert_eq!(kbps(&e), before, "no sample when the clock went back");
        // Nothing tallied over the next interval: the rates fall by 10%.
        e.update(Time::from_secs_f64(1.9), &sent);
        for (got, want) in kbps(&e).into_iter().zip(before) {
            assert!((got - 0.9 * want).abs() < 1e-12, "{got} {want}");
        }
    }

    #[test]
    fn the_peer_hold_is_smoothed_per_packet() {
        let mut e = Estimator::new(&EndpointConfig::default());
        e.ack_delay_sample(millis(32.0), 1);
        assert_eq!(
            ms(e.estimates().ack_delay),
            32.0,
            "the first is taken whole"
        );
        e.ack_delay_sample(millis(16.0), 1);
        assert!((ms(e.estimates().ack_delay) - 31.0).abs() < 1e-6);
        e.ack_delay_sample(millis(2.0), 1_000_000);
        assert!((ms(e.estimates().ack_delay) - 2.0).abs() < 1e-6);
    }
}
