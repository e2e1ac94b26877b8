//! Binary congestion avoidance (from Glenn Fiedler's
//! "Reliability and Congestion Avoidance").
//!
//! Two modes: good (30 packets/s) and bad (10 packets/s). An RTT above the
//! threshold (250 ms) makes the mode bad at once. From bad, the mode returns to good
//! after `t` seconds of good conditions (the penalty time). Dropping back to bad
//! within 10 s of going good doubles `t` (up to 60 s); every 10 s spent in good
//! halves it (down to 1 s). It starts good (the article's algorithm starts bad: set
//! [`initial_mode`](CongestionConfig::initial_mode)) with `t` = 4 s.
//!
//! The article (Glenn Fiedler, "Reliability, Ordering and Congestion Avoidance over
//! UDP", gafferongames.com, 2008, section "Congestion Avoidance") switches at an RTT
//! of 250 ms between 30 packets per second (good) and 10 (bad), with the penalty
//! time of 4 s, doubled on a relapse within 10 s (up to 60 s) and halved every 10 s
//! of good (down to 1 s). Those are the defaults; [`CongestionConfig::article`] also
//! starts bad, as the article does. A 60 Hz game that sends a packet every frame sets
//! `good_rate` to 60 (or a little above); a connection that downloads large blocks
//! takes [`CongestionConfig::bulk`] (120 and 30), since a transfer's rate is packets
//! per second x bytes per packet (see
//! [`ChannelConfig::bulk`](crate::channel::ChannelConfig::bulk), "Its rate").
//!
//! The rate is a ceiling: the transport's stacks send a packet in an update when the
//! message layer has something new and the mode's interval has passed (a 60 Hz game
//! sends 30 per second at the defaults, two frames' messages to a packet, and 60 with
//! `good_rate` 60; 30 a second without news), and a second one in the same update
//! only when the layer has more to send than one packet holds (a large transfer), so
//! that 120 packets per second is reached only by a download.

use std::time::Duration;

use crate::Time;
use crate::time::saturating_duration;

/// The thresholds of [`Congestion`]; every field is configurable. The three that set
/// how fast a connection sends are `good_rate`, `bad_rate` and `rtt_threshold`; with
/// the layer's bytes per packet they make a transfer's rate (see
/// [`ChannelConfig::bulk`](crate::channel::ChannelConfig::bulk), "Its rate").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CongestionConfig {
    /// Packets per second in good mode: 30, the article's. A ceiling: the
    /// transports send at most two packets per update, so a rate above twice the
    /// update rate (120 at 60 Hz) is reached only by updating more often. A 60 Hz
    /// game that sends every frame sets 60 or a little above ([`bulk`](Self::bulk):
    /// 120).
    pub good_rate: f64,
    /// Packets per second in bad mode: 10, the article's. A bulk transfer moves
    /// about 80 kB/s at this rate with the bulk channel's 8 KiB packets, about
    /// 217 kB/s at [`bulk`](Self::bulk)'s 30 (a 300 ms round trip, 1% loss:
    /// `tests/tests/bulk_throughput.rs`).
    pub bad_rate: f64,
    /// The mode a connection starts in (good).
    pub initial_mode: Mode,
    /// RTT above this is bad conditions: 250 ms, as in the article. The RTT is the
    /// endpoint's smoothed estimate with the peer's hold taken out.
    pub rtt_threshold: Duration,
    /// The penalty time at start (4 s).
    pub initial_penalty: Duration,
    /// The smallest penalty time (1 s).
    pub min_penalty: Duration,
    /// The largest penalty time (60 s).
    pub max_penalty: Duration,
    /// Going bad within this long of going good doubles the penalty (10 s).
    pub relapse_window: Duration,
    /// Every this long in good halves the penalty (10 s).
    pub reduce_every: Duration,
}

impl Default for CongestionConfig {
    fn default() -> Self {
        Self {
            good_rate: 30.0,
            bad_rate: 10.0,
            initial_mode: Mode::Good,
            rtt_threshold: Duration::from_millis(250),
            initial_penalty: Duration::from_secs(4),
            min_penalty: Duration::from_secs(1),
            max_penalty: Duration::from_secs(60),
            relapse_window: Duration::from_secs(10),
            reduce_every: Duration::from_secs(10),
        }
    }
}

impl CongestionConfig {
    /// The article's settings (Glenn Fiedler, "Reliability, Ordering and Congestion
    /// Avoidance over UDP", 2008): the defaults' 30 packets per second in good mode,
    /// 10 in bad, above an RTT of 250 ms, and starting bad as the article does (the
    /// defaults start good, so a connection sends at its good rate from the first
    /// packet).
    pub fn article() -> Self {
        Self {
            initial_mode: Mode::Bad,
            ..Self::default()
        }
    }

    /// The bulk preset's rates, for a connection that downloads large blocks on a
    /// [`ChannelConfig::bulk`](crate::channel::ChannelConfig::bulk) channel (a map, a
    /// replay): 120 packets per second in good mode and 30 in bad, four times the
    /// article's, with its threshold and penalty rules. With the bulk channel's
    /// 8 KiB packets a 1 MB block takes 1.12 s over a 50 ms round trip with 1% loss
    /// and 4.6 s over 300 ms (bad mode), against 4.8 s and 15.2 s at the defaults
    /// (the simulator, `tests/tests/bulk_throughput.rs`). Both peers should use it: each
    /// side's rate caps what it sends.
    pub fn bulk() -> Self {
        Self {
            good_rate: 120.0,
            bad_rate: 30.0,
            ..Self::default()
        }
    }
}

/// Slack on time comparisons, so that durations summed from many ticks (60 ticks of
/// 1/60 s fall a hair short of 1 s) count as reached.
const EPSILON: Duration = Duration::from_micros(1);

/// The congestion mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// Good conditions: send at `good_rate`.
    Good,
    /// Bad conditions: send at `bad_rate`.
    Bad,
}

impl Mode {
    /// The mode's stable name: the `mode` field of the `congestion mode changed`
    /// tracing event (`good`, `bad`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Good => "good",
            Self::Bad => "bad",
        }
    }
}

/// The congestion state of one connection, driven by [`update`](Self::update) with
/// the current time and RTT.
///
/// ```
/// use netproto::connection::{Congestion, CongestionConfig, Mode};
///
/// use netproto::Time;
/// use std::time::Duration;
///
/// let ms = Duration::from_millis;
/// let mut c = Congestion::new(CongestionConfig::article(), Time::ZERO);
/// assert_eq!((c.mode(), c.penalty()), (Mode::Bad, Duration::from_secs(4)));
/// let mut now = Time::ZERO;
/// while c.mode() == Mode::Bad {
///     now += ms(100);
///     c.update(now, ms(50));
/// }
/// assert!((now.as_secs_f64() - 4.0).abs() < 0.15);
/// assert_eq!(c.send_rate(), 30.0);
/// c.update(now + ms(100), ms(300)); // RTT above 250 ms: bad at once,
/// assert_eq!(c.mode(), Mode::Bad);
/// assert_eq!(c.penalty(), Duration::from_secs(8)); // and within 10 s of going good: t doubles.
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Congestion {
    config: CongestionConfig,
    mode: Mode,
    penalty: Duration,
    last_update: Time,
    /// Bad mode: good conditions so far. Good mode: the time since going good.
    good_time: Duration,
    /// Good mode: the time toward the next halving of the penalty.
    reduction: Duration,
}

impl Congestion {
    /// Bad mode with the initial penalty, at time `now`.
    pub fn new(config: CongestionConfig, now: Time) -> Self {
        Self {
            mode: config.initial_mode,
            penalty: config.initial_penalty,
            last_update: now,
            // Starting good is no relapse: a first drop does not double the penalty.
            good_time: match config.initial_mode {
                Mode::Good => config.relapse_window,
                Mode::Bad => Duration::ZERO,
            },
            reduction: Duration::ZERO,
            config,
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The penalty time `t`.
    pub fn penalty(&self) -> Duration {
        self.penalty
    }

    /// Packets per second the mode allows.
    pub fn send_rate(&self) -> f64 {
        match self.mode {
            Mode::Good => self.config.good_rate,
            Mode::Bad => self.config.bad_rate,
        }
    }

    /// The time between packets at the mode's rate.
    pub fn send_interval(&self) -> Duration {
        saturating_duration(self.send_interval_secs())
    }

    /// [`send_interval`](Self::send_interval) in `f64` seconds, as the send timer
    /// computes it.
    pub(crate) fn send_interval_secs(&self) -> f64 {
        1.0 / self.send_rate()
    }

    /// Advances to `now` with the current RTT. Conditions are taken to have held
    /// since the previous update. Returns the mode after the update.
    ///
    /// Time anomalies: a `now` before the previous update (the clock went back)
    /// counts as no time elapsed and becomes the new reference, so the timers go on
    /// from the new clock instead of waiting for it to catch up; a jump forward is
    /// elapsed time (minutes of good conditions return to good and halve the penalty
    /// down to its minimum); a non-finite `now` is ignored.
    pub fn update(&mut self, now: Time, rtt: Duration) -> Mode {
        if !now.as_secs_f64().is_finite() {
            return self.mode;
        }
        let dt = now.saturating_duration_since(self.last_update);
        self.last_update = now;
        let c = &self.config;
        let bad_conditions = rtt > c.rtt_threshold;
        match self.mode {
            Mode::Good => {
                if bad_conditions {
                    if self.good_time < c.relapse_window {
                        self.penalty = self.penalty.saturating_mul(2).min(c.max_penalty);
                    }
                    self.mode = Mode::Bad;
                    self.good_time = Duration::ZERO;
                    self.reduction = Duration::ZERO;
                } else {
                    self.good_time = self.good_time.saturating_add(dt);
                    self.reduction = self.reduction.saturating_add(dt);
                    while self.reduction.saturating_add(EPSILON) >= c.reduce_every {
                        if self.penalty <= c.min_penalty || c.reduce_every.is_zero() {
                            // Nothing left to halve: drop whole periods at once, so
                            // that a jump of any size ends the loop.
                            self.reduction = remainder(self.reduction, c.reduce_every);
                            break;
                        }
                        // Within EPSILON of a whole period counts as one (and leaves none).
                        self.reduction = self.reduction.saturating_sub(c.reduce_every);
                        self.penalty = (self.penalty / 2).max(c.min_penalty);
                    }
                }
            }
            Mode::Bad => {
                if bad_conditions {
                    self.good_time = Duration::ZERO;
                } else {
                    self.good_time = self.good_time.saturating_add(dt);
                    if self.good_time.saturating_add(EPSILON) >= self.penalty {
                        self.mode = Mode::Good;
                        self.good_time = Duration::ZERO;
                        self.reduction = Duration::ZERO;
                    }
                }
            }
        }
        self.mode
    }
}

/// `time` less whole periods of `period` (zero for a zero period: an unvalidated
/// configuration's).
fn remainder(time: Duration, period: Duration) -> Duration {
    match (
        time.as_nanos().checked_rem(period.as_nanos()),
        period.is_zero(),
    ) {
        (Some(rest), false) => Duration::from_nanos(u64::try_from(rest).unwrap_or(u64::MAX)),
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_send_interval_is_the_mode_s_period() {
        let config = CongestionConfig::article();
        let mut congestion = Congestion::new(config, Time::ZERO);
        assert_eq!(congestion.mode(), Mode::Bad);
        assert_eq!(congestion.send_interval(), Duration::from_millis(100));
        // Good conditions for the initial penalty: good mode, 30 a second.
        let mut now = Time::ZERO;
        while congestion.mode() == Mode::Bad {
            now += Duration::from_millis(100);
            congestion.update(now, Duration::from_millis(10));
        }
        assert_eq!(
            congestion.send_interval(),
            Duration::from_secs_f64(1.0 / 30.0)
        );
    }

    /// `update` at `now` seconds with an RTT of `rtt_ms` milliseconds.
    fn at(c: &mut Congestion, now: f64, rtt_ms: f64) -> Mode {
        c.update(
            Time::from_secs_f64(now),
            Duration::from_secs_f64(rtt_ms / 1000.0),
        )
    }

    #[test]
    fn rules_one_by_one() {
        let mut c = Congestion::new(CongestionConfig::article(), Time::ZERO);
        let mut now = 0.0;
        let mut step = |c: &mut Congestion, rtt: f64, seconds: f64| {
            for _ in 0..(seconds * 10.0).round() as u32 {
                now += 0.1;
                at(c, now, rtt);
            }
        };
        // Bad conditions keep it bad and reset the good time.
        step(&mut c, 300.0, 3.0);
        assert_eq!(c.mode(), Mode::Bad);
        step(&mut c, 50.0, 3.9);
        assert_eq!(c.mode(), Mode::Bad);
        step(&mut c, 50.0, 0.2);
        assert_eq!(c.mode(), Mode::Good);
        // Relapse after 5 s of good: t doubles to 8.
        step(&mut c, 50.0, 5.0);
        step(&mut c, 300.0, 0.1);
        assert_eq!(
            (c.mode(), c.penalty()),
            (Mode::Bad, Duration::from_secs_f64(8.0))
        );
        // 8 s of good conditions, then 25 s in good: halved twice, to 2.
        step(&mut c, 50.0, 8.1);
        assert_eq!(c.mode(), Mode::Good);
        step(&mut c, 50.0, 25.0);
        assert_eq!(c.penalty().as_secs_f64(), 2.0);
        // A relapse after more than 10 s in good does not double.
        step(&mut c, 300.0, 0.1);
        assert_eq!(
            (c.mode(), c.penalty()),
            (Mode::Bad, Duration::from_secs_f64(2.0))
        );
        // Doubling stops at 60, halving at 1.
        for _ in 0..10 {
            while c.mode() == Mode::Bad {
                step(&mut c, 50.0, 0.1);
            }
            step(&mut c, 300.0, 0.1);
        }
        assert_eq!(c.penalty().as_secs_f64(), 60.0);
        step(&mut c, 50.0, 60.0);
        step(&mut c, 50.0, 200.0);
        assert_eq!(c.penalty().as_secs_f64(), 1.0);
    }

    #[test]
    fn a_good_period_within_epsilon_of_a_whole_one_halves_the_penalty_without_underflow() {
        // A client under load (the server_load benchmark's load generator at 1,000
        // clients) once panicked here: the period counted as whole, then `reduction
        // - reduce_every` overflowed.
        let config = CongestionConfig::article();
        let mut c = Congestion::new(config, Time::ZERO);
        let mut now = 0.0;
        let until_good = |c: &mut Congestion, now: &mut f64| {
            while c.mode() == Mode::Bad {
                *now += 0.1;
                at(c, *now, 50.0);
            }
        };
        until_good(&mut c, &mut now);
        // A relapse at once: the penalty doubles, above the minimum.
        now += 0.1;
        assert_eq!(at(&mut c, now, 300.0), Mode::Bad);
        until_good(&mut c, &mut now);
        let penalty = c.penalty();
        assert!(penalty > config.min_penalty);
        let end = now + (config.reduce_every - EPSILON / 2).as_secs_f64();
        assert_eq!(at(&mut c, end, 50.0), Mode::Good);
        assert_eq!(c.penalty(), (penalty / 2).max(config.min_penalty));
    }

    #[test]
    fn far_jumps_end_and_a_clock_that_goes_back_restarts_the_timers() {
        let config = CongestionConfig::default();
        let mut c = Congestion::new(config, Time::ZERO);
        assert_eq!(at(&mut c, 1e18, 50.0), Mode::Good);
        // Halving period by period would never end at this magnitude.
        assert_eq!(at(&mut c, 2e18, 50.0), Mode::Good);
        assert_eq!(c.penalty(), config.min_penalty);
        at(&mut c, f64::NAN, 50.0);
        at(&mut c, f64::NEG_INFINITY, 50.0);
        assert_eq!(at(&mut c, 2e18, 300.0), Mode::Bad);
        // Back to 0: good again after the penalty on the new clock.
        let mut now = 0.0;
        while at(&mut c, now, 50.0) == Mode::Bad {
            now += 0.1;
            assert!(now <= config.min_penalty.as_secs_f64() + 0.2, "{now}");
        }
    }

    #[test]
    fn an_rtt_of_exactly_the_threshold_is_good_conditions() {
        // "Above the threshold" is bad: exactly 250 ms is not, a microsecond more is.
        let config = CongestionConfig::default();
        let threshold = config.rtt_threshold;
        assert_eq!(threshold, Duration::from_millis(250));
        let mut c = Congestion::new(config, Time::ZERO);
        let t = Time::from_secs_f64;
        assert_eq!(c.update(t(0.1), threshold), Mode::Good);
        assert_eq!(c.update(t(0.2), threshold), Mode::Good);
        let above = threshold + Duration::from_micros(1);
        assert_eq!(c.update(t(0.3), above), Mode::Bad);
        // In bad mode, exactly the threshold counts as good time: good again once it
        // lasted the penalty (4 s), not before.
        assert_eq!(c.penalty(), Duration::from_secs(4));
        assert_eq!(c.update(t(4.2), threshold), Mode::Bad);
        assert_eq!(c.update(t(4.3), threshold), Mode::Good);
        // The same from the test helper's milliseconds.
        let mut c = Congestion::new(config, Time::ZERO);
        assert_eq!(at(&mut c, 0.1, 250.0), Mode::Good);
        assert_eq!(at(&mut c, 0.2, 250.000_001), Mode::Bad);
    }

    #[test]
    fn starting_good_is_no_relapse() {
        let mut c = Congestion::new(CongestionConfig::default(), Time::ZERO);
        assert_eq!((c.mode(), c.send_rate()), (Mode::Good, 30.0));
        assert_eq!(CongestionConfig::bulk().good_rate, 120.0);
        assert_eq!(at(&mut c, 0.1, 300.0), Mode::Bad);
        assert_eq!(c.penalty().as_secs_f64(), 4.0);
    }

    #[test]
    fn config_is_checked() {
        assert!(CongestionConfig::default().validate().is_ok());
        let bad = CongestionConfig {
            min_penalty: Duration::from_secs(5),
            ..CongestionConfig::default()
        };
        assert!(bad.validate().is_err());
        let nan = CongestionConfig {
            good_rate: f64::NAN,
            ..CongestionConfig::default()
        };
        assert!(nan.validate().is_err());
    }
}
