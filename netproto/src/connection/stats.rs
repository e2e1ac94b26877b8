//! What a connection measures of its link: [`LinkStats`], and the traffic and
//! bandwidth meters behind it.

use std::time::Duration;

use super::congestion::{Congestion, Mode};
use crate::Time;
use crate::packet::{Counters, Estimates};
use crate::time::millis;

/// One connection's link as it measured it: durations, percent, kilobits per second.
/// The estimators compute in `f64` milliseconds; the durations are those values
/// rounded to the nanosecond. Read it with
/// [`Server::stats`](super::Server::stats) or [`Client::stats`](super::Client::stats)
/// (with the message side, [`ConnectionStats`](crate::transport::ConnectionStats)).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LinkStats {
    /// Smoothed round-trip time on the network: the time the peer held our packets
    /// before acking them is taken out (the ack-delay byte, see
    /// [`EndpointConfig::report_ack_delay`](crate::packet::EndpointConfig::report_ack_delay)).
    pub rtt: Duration,
    /// Smallest round trip among the recent samples (the last `rtt_history_size`).
    pub rtt_min: Duration,
    /// Standard deviation of the recent round-trip samples: how much the round trip
    /// varies.
    pub jitter: Duration,
    /// How long the peer holds our packets before its next packet acks them,
    /// smoothed (about half its send interval): `rtt + ack_delay` is how long an ack
    /// takes to come back.
    pub ack_delay: Duration,
    /// Share of our recent packets (the last `loss_window` whose fate is known) the
    /// peer never acked, percent (see
    /// [`Stats::packet_loss_percent`](crate::packet::Stats::packet_loss_percent)).
    pub packet_loss_percent: f64,
    /// Bandwidth we send, kbps: every datagram of the session as sent, plus
    /// `packet_header_size` (28 bytes of IPv4 and UDP headers), over about the last
    /// second.
    pub sent_kbps: f64,
    /// Bandwidth we receive from the peer, kbps, counted the same way (datagrams that
    /// opened under the session key only).
    pub received_kbps: f64,
    /// The congestion mode (good: 120 packets per second, bad: 30, by default).
    pub mode: Mode,
    /// The congestion penalty time: how long good conditions must last in bad mode
    /// before going good.
    pub penalty: Duration,
    /// Datagrams sent under the session (payloads, fragments, keep-alives,
    /// disconnects).
    pub datagrams_sent: u64,
    /// Datagrams received that opened under the session key.
    pub datagrams_received: u64,
    /// Bytes of those datagrams sent (without IP and UDP headers).
    pub bytes_sent: u64,
    /// Bytes of those datagrams received.
    pub bytes_received: u64,
    /// Packet-endpoint packets sent (a fragmented packet counts once).
    pub packets_sent: u64,
    /// Packet-endpoint packets received and accepted.
    pub packets_received: u64,
    /// Our packets the peer acked.
    pub packets_acked: u64,
    /// Our packets that left the sent window unacked.
    pub packets_lost: u64,
}

/// Datagrams and bytes sealed and opened under one session's keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub(crate) datagrams_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) datagrams_received: u64,
    pub(crate) bytes_received: u64,
}

/// Seconds over which the bandwidth meters average.
const METER_TIME_CONSTANT: f64 = 1.0;

/// A bandwidth meter: kilobits per second over about the last
/// [`METER_TIME_CONSTANT`], as an exponential moving average in time (so that the
/// result does not depend on how often it is updated).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Meter {
    kbps: f64,
    /// `(time, total bytes)` at the last update.
    last: Option<(Time, u64)>,
}

impl Meter {
    /// Takes the running total of bytes at `now`.
    pub(crate) fn update(&mut self, now: Time, total_bytes: u64) {
        match self.last {
            Some((time, bytes)) if now > time => {
                let dt = now.secs_since(time);
                let rate = total_bytes.saturating_sub(bytes) as f64 * 8.0 / 1000.0 / dt;
                let weight = 1.0 - (-dt / METER_TIME_CONSTANT).exp();
                self.kbps += (rate - self.kbps) * weight;
                self.last = Some((now, total_bytes));
            }
            // The same instant, or the clock went back: start over from here.
            Some((time, _)) if now == time => {}
            _ => self.last = Some((now, total_bytes)),
        }
    }

    pub(crate) fn kbps(&self) -> f64 {
        self.kbps
    }
}

impl LinkStats {
    /// Gathers the link's figures.
    pub(crate) fn new(
        estimates: &Estimates,
        counters: &Counters,
        congestion: &Congestion,
        traffic: &Traffic,
        meters: [&Meter; 2],
    ) -> Self {
        Self {
            rtt: millis(estimates.rtt_ms),
            rtt_min: millis(estimates.rtt_min_ms),
            jitter: millis(estimates.jitter_stddev_vs_avg_rtt_ms),
            ack_delay: millis(estimates.ack_delay_ms),
            packet_loss_percent: estimates.packet_loss_percent,
            sent_kbps: meters[0].kbps(),
            received_kbps: meters[1].kbps(),
            mode: congestion.mode(),
            penalty: congestion.penalty(),
            datagrams_sent: traffic.datagrams_sent,
            datagrams_received: traffic.datagrams_received,
            bytes_sent: traffic.bytes_sent,
            bytes_received: traffic.bytes_received,
            packets_sent: counters.packets_sent,
            packets_received: counters.packets_accepted,
            packets_acked: counters.packets_acked,
            packets_lost: counters.packets_lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_rate_reads_true_whatever_the_update_rate() {
        // 100 bytes every 1/30 s = 24 kbps, updated 60 or 7 times per second.
        for updates_per_second in [60.0, 7.0] {
            let mut meter = Meter::default();
            let mut total = 0u64;
            let mut next_send = 0.0;
            for i in 0..(10.0 * updates_per_second) as u32 {
                let now = f64::from(i) / updates_per_second;
                while next_send <= now {
                    total += 100;
                    next_send += 1.0 / 30.0;
                }
                meter.update(Time::from_secs_f64(now), total);
            }
            assert!(
                (meter.kbps() - 24.0).abs() < 24.0 * 0.05,
                "{}",
                meter.kbps()
            );
        }
    }

    #[test]
    fn bytes_taken_at_the_same_instant_count_from_the_previous_update() {
        // One meter sees the total twice at 11 s; the other once, at 12 s only.
        let mut twice = Meter::default();
        let mut once = Meter::default();
        for meter in [&mut twice, &mut once] {
            meter.update(Time::from_secs_f64(10.0), 0);
            meter.update(Time::from_secs_f64(11.0), 1000);
        }
        let before = twice.kbps();
        twice.update(Time::from_secs_f64(11.0), 2000);
        assert_eq!(twice.kbps(), before, "no time passed: no rate");
        twice.update(Time::from_secs_f64(12.0), 2000);
        once.update(Time::from_secs_f64(12.0), 2000);
        assert_eq!(twice.kbps(), once.kbps(), "the 1000 bytes count once");
    }

    #[test]
    fn a_clock_that_goes_back_starts_over() {
        let mut meter = Meter::default();
        meter.update(Time::from_secs_f64(10.0), 0);
        meter.update(Time::from_secs_f64(11.0), 1000);
        let kbps = meter.kbps();
        assert!(kbps > 0.0);
        meter.update(Time::from_secs_f64(5.0), 2000);
        assert_eq!(meter.kbps(), kbps, "nothing counted over a negative time");
        meter.update(Time::from_secs_f64(6.0), 2000);
        assert!(meter.kbps() < kbps, "silence since the restart");
    }
}
