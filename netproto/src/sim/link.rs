//! The model of one direction of a link: latency, jitter, loss, bursts, duplicates,
//! reordering, and a bottleneck of limited bandwidth with a bounded queue.

use std::time::Duration;

use super::rng::Rng;

/// Bursty loss: the Gilbert-Elliott two-state Markov model.
///
/// The link is either *good* or *bad*. Before each datagram it moves from good to bad
/// with probability `good_to_bad` and from bad to good with probability
/// `bad_to_good`; the datagram is then lost with the loss probability of the current
/// state. The mean burst (time in the bad state) is `1 / bad_to_good` datagrams.
///
/// ```
/// use netproto::sim::GilbertElliott;
///
/// // Bursts of 5 datagrams on average, every ~100 datagrams, losing everything.
/// let burst = GilbertElliott::bursts(0.01, 0.2);
/// assert!((burst.mean_loss() - 0.01 / 0.21).abs() < 1e-12);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad, per datagram.
    pub good_to_bad: f64,
    /// Probability of moving from bad to good, per datagram.
    pub bad_to_good: f64,
    /// Loss probability in the good state.
    pub loss_in_good: f64,
    /// Loss probability in the bad state.
    pub loss_in_bad: f64,
}

impl GilbertElliott {
    /// The classic Gilbert model: no loss when good, total loss when bad.
    pub const fn bursts(good_to_bad: f64, bad_to_good: f64) -> Self {
        Self {
            good_to_bad,
            bad_to_good,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        }
    }

    /// The long-run fraction of time in the bad state.
    pub fn bad_fraction(&self) -> f64 {
        let total = self.good_to_bad + self.bad_to_good;
        if total > 0.0 {
            self.good_to_bad / total
        } else {
            0.0
        }
    }

    /// The long-run loss rate of the model alone.
    pub fn mean_loss(&self) -> f64 {
        let bad = self.bad_fraction();
        (1.0 - bad) * self.loss_in_good + bad * self.loss_in_bad
    }
}

/// How one direction of a simulated link treats datagrams.
///
/// A datagram is lost with probability `loss` (i.i.d.) or by the `burst` model (when
/// set; both apply independently). A datagram that survives is delivered after
/// `latency + uniform(-jitter, +jitter)` (never below 0), plus, with probability
/// `reorder`, an extra `uniform(0, reorder_delay)`; then with probability `duplicate`
/// a second copy is delivered after its own independent delay. Jitter alone already
/// reorders datagrams sent closer together than the jitter range.
///
/// With a `bandwidth` (bytes per second, 0 for none), the link is a bottleneck in
/// front of that delay: datagrams leave it one after the other, each taking
/// `len / bandwidth` seconds, and wait in its queue meanwhile; a datagram that would
/// wait longer than `queue_limit` is dropped (drop-tail, as a router's full buffer),
/// before any other draw. Lengths are the datagrams' bytes (UDP payload: the IP and
/// UDP headers are not counted). A duplicate copy is made behind the bottleneck and
/// takes no bandwidth.
///
/// ```
/// use netproto::sim::LinkConfig;
/// use std::time::Duration;
///
/// let link = LinkConfig::default()
///     .with_latency(Duration::from_millis(250))
///     .with_jitter(Duration::from_millis(100))
///     .with_loss(0.25)
///     .with_duplicates(0.25)
///     .with_reordering(0.1, Duration::from_millis(200));
/// assert_eq!(link.mean_round_trip(), Duration::from_millis(500));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkConfig {
    /// Mean one-way delay.
    pub latency: Duration,
    /// Half-width of the uniform delay variation around `latency`.
    pub jitter: Duration,
    /// Independent loss probability per datagram.
    pub loss: f64,
    /// Bursty loss, applied on top of `loss`.
    pub burst: Option<GilbertElliott>,
    /// Probability that a delivered datagram is delivered twice.
    pub duplicate: f64,
    /// Probability that a datagram is held back by an extra delay.
    pub reorder: f64,
    /// Upper bound of that extra delay.
    pub reorder_delay: Duration,
    /// Bytes per second the link carries; 0 for no limit.
    pub bandwidth: u64,
    /// Longest wait in the bottleneck's queue before a datagram is dropped (with a
    /// `bandwidth` only).
    pub queue_limit: Duration,
}

impl LinkConfig {
    /// A perfect link: no delay, no loss (the default).
    pub const PERFECT: Self = Self {
        latency: Duration::ZERO,
        jitter: Duration::ZERO,
        loss: 0.0,
        burst: None,
        duplicate: 0.0,
        reorder: 0.0,
        reorder_delay: Duration::ZERO,
        bandwidth: 0,
        queue_limit: Duration::ZERO,
    };

    /// With mean one-way delay `latency`.
    #[must_use]
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// With uniform delay variation of `± jitter`.
    #[must_use]
    pub fn with_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// With independent loss probability `p`.
    #[must_use]
    pub fn with_loss(mut self, p: f64) -> Self {
        self.loss = p;
        self
    }

    /// With bursty loss.
    #[must_use]
    pub fn with_burst_loss(mut self, model: GilbertElliott) -> Self {
        self.burst = Some(model);
        self
    }

    /// With duplicate probability `p`.
    #[must_use]
    pub fn with_duplicates(mut self, p: f64) -> Self {
        self.duplicate = p;
        self
    }

    /// Holding back a fraction `p` of datagrams by up to `max_delay` more.
    #[must_use]
    pub fn with_reordering(mut self, p: f64, max_delay: Duration) -> Self {
        self.reorder = p;
        self.reorder_delay = max_delay;
        self
    }

    /// Limited to `bytes_per_second`, with a queue that holds datagrams for
    /// `queue_limit` at most (a datagram that would wait longer is dropped).
    #[must_use]
    pub fn with_bandwidth(mut self, bytes_per_second: u64, queue_limit: Duration) -> Self {
        self.bandwidth = bytes_per_second;
        self.queue_limit = queue_limit;
        self
    }

    /// Twice the mean one-way delay (excluding reordering delays).
    pub fn mean_round_trip(&self) -> Duration {
        2 * self.latency
    }

    /// The long-run loss rate: `1 - (1 - loss) * (1 - burst loss)`.
    pub fn mean_loss(&self) -> f64 {
        let burst = self.burst.map_or(0.0, |b| b.mean_loss());
        1.0 - (1.0 - self.loss) * (1.0 - burst)
    }
}

/// What happens to one datagram on a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fate {
    /// Lost.
    Dropped,
    /// Dropped by the bottleneck: its queue was full.
    Overflow,
    /// Delivered after `first`, and again after `second` when duplicated (seconds,
    /// drawn in `f64`).
    Delivered { first: f64, second: Option<f64> },
}

/// One direction of a link: its configuration and its burst state.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub(crate) config: LinkConfig,
    bad: bool,
    /// When the bottleneck has sent everything queued so far (seconds).
    busy_until: f64,
}

impl Link {
    pub(crate) fn new(config: LinkConfig) -> Self {
        Self {
            config,
            bad: false,
            busy_until: f64::NEG_INFINITY,
        }
    }

    /// The bottleneck: the time `len` bytes sent at `now` wait in the queue and take
    /// to leave it, or `None` when the queue is full. No limit: 0.
    fn queue(&mut self, now: f64, len: usize) -> Option<f64> {
        let rate = self.config.bandwidth;
        if rate == 0 {
            return Some(0.0);
        }
        let start = self.busy_until.max(now);
        // A nanosecond of slack: waits summed from many lengths are inexact.
        if start - now > self.config.queue_limit.as_secs_f64() + 1e-9 {
            return None;
        }
        self.busy_until = start + len as f64 / rate as f64;
        Some(self.busy_until - now)
    }

    fn delay(&self, rng: &mut Rng) -> f64 {
        let c = &self.config;
        let mut delay = c.latency.as_secs_f64();
        let jitter = c.jitter.as_secs_f64();
        if jitter > 0.0 {
            delay += rng.range_f64(-jitter, jitter);
        }
        if c.reorder > 0.0 && rng.chance(c.reorder) {
            delay += rng.range_f64(0.0, c.reorder_delay.as_secs_f64());
        }
        delay.max(0.0)
    }

    /// Draws the fate of the next datagram, of `len` bytes sent at `now` (seconds).
    pub(crate) fn fate(&mut self, rng: &mut Rng, now: f64, len: usize) -> Fate {
        let Some(queued) = self.queue(now, len) else {
            return Fate::Overflow;
        };
        let mut lost = self.config.loss > 0.0 && rng.chance(self.config.loss);
        if let Some(ge) = self.config.burst {
            let flip = if self.bad {
                ge.bad_to_good
            } else {
                ge.good_to_bad
            };
            if rng.chance(flip) {
                self.bad = !self.bad;
            }
            let p = if self.bad {
                ge.loss_in_bad
            } else {
                ge.loss_in_good
            };
            lost |= rng.chance(p);
        }
        if lost {
            return Fate::Dropped;
        }
        let first = queued + self.delay(rng);
        let second = (self.config.duplicate > 0.0 && rng.chance(self.config.duplicate))
            .then(|| queued + self.delay(rng));
        Fate::Delivered { first, second }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iid_loss_and_duplicates_match_their_rates() {
        let mut rng = Rng::new(3);
        let mut link = Link::new(LinkConfig::PERFECT.with_loss(0.3).with_duplicates(0.5));
        let (mut dropped, mut dups) = (0, 0);
        let n = 100_000;
        for _ in 0..n {
            match link.fate(&mut rng, 0.0, 0) {
                Fate::Dropped | Fate::Overflow => dropped += 1,
                Fate::Delivered { second, .. } => dups += usize::from(second.is_some()),
            }
        }
        assert!((dropped as f64 / n as f64 - 0.3).abs() < 0.01);
        assert!((dups as f64 / (n - dropped) as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn delays_stay_within_jitter_and_never_negative() {
        let mut rng = Rng::new(4);
        let mut link = Link::new(
            LinkConfig::PERFECT
                .with_latency(Duration::from_millis(50))
                .with_jitter(Duration::from_millis(100)),
        );
        for _ in 0..10_000 {
            if let Fate::Delivered { first, .. } = link.fate(&mut rng, 0.0, 0) {
                assert!((0.0..=0.15).contains(&first));
            }
        }
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts() {
        let mut rng = Rng::new(5);
        let model = GilbertElliott::bursts(0.02, 0.25);
        let mut link = Link::new(LinkConfig::PERFECT.with_burst_loss(model));
        let n = 200_000;
        let mut lost = 0usize;
        let mut bursts = 0usize;
        let mut previous_lost = false;
        for _ in 0..n {
            let is_lost = link.fate(&mut rng, 0.0, 0) == Fate::Dropped;
            lost += usize::from(is_lost);
            bursts += usize::from(is_lost && !previous_lost);
            previous_lost = is_lost;
        }
        let rate = lost as f64 / n as f64;
        assert!((rate - model.mean_loss()).abs() < 0.01, "{rate}");
        // Mean burst length 1 / 0.25 = 4 datagrams.
        let mean_burst = lost as f64 / bursts as f64;
        assert!((mean_burst - 4.0).abs() < 0.3, "{mean_burst}");
    }

    #[test]
    fn the_bottleneck_spaces_datagrams_and_drops_when_its_queue_is_full() {
        let mut rng = Rng::new(6);
        // 1000 bytes per second, 100 ms of queue: 100-byte datagrams take 0.1 s each.
        let config = LinkConfig::PERFECT
            .with_latency(Duration::from_millis(10))
            .with_bandwidth(1000, Duration::from_millis(100));
        let mut link = Link::new(config);
        let mut fates = Vec::new();
        for _ in 0..4 {
            fates.push(link.fate(&mut rng, 1.0, 100));
        }
        let first = |fate: Fate| match fate {
            Fate::Delivered {
                first,
                second: None,
            } => first,
            other => panic!("{other:?}"),
        };
        // Waits 0, then 0.1 (at the limit: kept), then 0.2 (over it: dropped).
        assert!((first(fates[0]) - 0.11).abs() < 1e-9);
        assert!((first(fates[1]) - 0.21).abs() < 1e-9);
        assert_eq!(&fates[2..], [Fate::Overflow, Fate::Overflow]);
        // Once the queue drained, the next one goes at once.
        assert!((first(link.fate(&mut rng, 2.0, 50)) - 0.06).abs() < 1e-9);
    }
}
