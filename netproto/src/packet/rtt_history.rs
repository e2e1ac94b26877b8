//! The RTT history: the last `rtt_history_size` round-trip samples, filed by sequence,
//! with the sums its summary needs kept as samples come and go.
//!
//! The summary (minimum, maximum, mean, mean excess over the minimum, standard
//! deviation) used to be a pass over every entry, twice, four times a second per
//! connection: at the default 512 entries that was most of a server's estimator work.
//! Now a sample updates a count and two exact integer sums, and the minimum and maximum
//! when it extends them; the only pass left is over the minimum and maximum after a
//! sample equal to one of them was replaced (rare: one replacement in about
//! `rtt_history_size` on a steady link), or when a sample is too long for the sum of
//! squares (18 minutes, never on a working link).

/// An empty entry.
const NO_SAMPLE: u64 = u64::MAX;

/// Samples from this many nanoseconds on (2^40 ns, about 18 minutes) are not summed
/// in squares: 65536 squares of shorter ones fit a `u128` exactly.
const SQUARE_LIMIT: u64 = 1 << 40;

/// The history and its running sums.
#[derive(Debug)]
pub(crate) struct RttHistory {
    /// Samples in nanoseconds by `sequence % len`, [`NO_SAMPLE`] for none: 8 bytes
    /// an entry, as the memory bound counts them.
    samples: Box<[u64]>,
    count: u32,
    sum: u128,
    /// The sum of squares of the samples below [`SQUARE_LIMIT`].
    squares: u128,
    /// Samples at or above [`SQUARE_LIMIT`]: while any is in, the summary passes
    /// over the history.
    long: u32,
    /// The smallest and largest sample, unless `bounds_stale`.
    min: u64,
    max: u64,
    /// A sample equal to the minimum or maximum was replaced: they are found again
    /// at the next summary.
    bounds_stale: bool,
}

/// What the history says, in nanoseconds (`None` when it holds no sample).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Summary {
    pub(crate) min: u64,
    pub(crate) max: u64,
    /// The mean, rounded down.
    pub(crate) avg: u64,
    /// The mean of `sample - min`, rounded down.
    pub(crate) jitter: u64,
    /// The variance around `avg`, in nanoseconds squared.
    pub(crate) variance: f64,
}

impl RttHistory {
    /// A history of `len` entries (at least 1).
    pub(crate) fn new(len: usize) -> Self {
        Self {
            samples: vec![NO_SAMPLE; len.max(1)].into_boxed_slice(),
            count: 0,
            sum: 0,
            squares: 0,
            long: 0,
            min: u64::MAX,
            max: 0,
            bounds_stale: false,
        }
    }

    /// Asks the CPU for the cache line a sample for `sequence` goes to
    /// (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self, sequence: u16) {
        let len = self.samples.len().max(1);
        crate::prefetch::prefetch_at(&self.samples, usize::from(sequence) % len);
    }

    /// Files `nanos` (below `u64::MAX`) under sequence `sequence`, replacing the
    /// sample `len` sequences before it.
    #[inline]
    pub(crate) fn record(&mut self, sequence: u16, nanos: u64) {
        let nanos = nanos.min(NO_SAMPLE - 1);
        let index = usize::from(sequence) % self.samples.len();
        let old = std::mem::replace(&mut self.samples[index], nanos);
        if old != NO_SAMPLE {
            self.forget(old);
        }
        self.count += 1;
        self.sum += u128::from(nanos);
        if nanos < SQUARE_LIMIT {
            self.squares += u128::from(nanos) * u128::from(nanos);
        } else {
            self.long += 1;
        }
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    fn forget(&mut self, old: u64) {
        self.count -= 1;
        self.sum -= u128::from(old);
        if old < SQUARE_LIMIT {
            self.squares -= u128::from(old) * u128::from(old);
        } else {
            self.long -= 1;
        }
        if old == self.min || old == self.max {
            self.bounds_stale = true;
        }
    }

    /// The summary, or `None` while no sample is in.
    pub(crate) fn summary(&mut self) -> Option<Summary> {
        if self.count == 0 {
            return None;
        }
        if self.bounds_stale {
            let (min, max) = self
                .samples()
                .fold((u64::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
            (self.min, self.max, self.bounds_stale) = (min, max, false);
        }
        let count = u128::from(self.count);
        // At most the largest sample; a 64-bit division when the sum fits (always,
        // but for samples of centuries).
        let mean = |sum: u128| match u64::try_from(sum) {
            Ok(sum) => sum / u64::from(self.count),
            Err(_) => u64::try_from(sum / count).unwrap_or(u64::MAX),
        };
        let avg = mean(self.sum);
        // The mean of `sample - min` is the mean less the minimum, to the nanosecond
        // (both round down).
        let jitter = mean(self.sum - count * u128::from(self.min));
        let variance = if self.long == 0 {
            // sum (r - avg)^2 = squares - 2 avg sum + count avg^2, exactly: every
            // sample is below 2^40, so each term is below 2^97.
            let avg = i128::from(avg);
            let sum = self.sum as i128;
            let deviations = self.squares as i128 - 2 * avg * sum + count as i128 * avg * avg;
            deviations as f64 / count as f64
        } else {
            let squares: f64 = self
                .samples()
                .map(|r| {
                    let d = r.abs_diff(avg) as f64;
                    d * d
                })
                .sum();
            squares / count as f64
        };
        Some(Summary {
            min: self.min,
            max: self.max,
            avg,
            jitter,
            variance,
        })
    }

    fn samples(&self) -> impl Iterator<Item = u64> + '_ {
        self.samples.iter().copied().filter(|&n| n != NO_SAMPLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary by a pass over every sample: what the running sums must give.
    fn by_pass(samples: &[u64]) -> Option<Summary> {
        let present: Vec<u64> = samples
            .iter()
            .copied()
            .filter(|&n| n != NO_SAMPLE)
            .collect();
        if present.is_empty() {
            return None;
        }
        let count = present.len() as u128;
        let sum: u128 = present.iter().map(|&n| u128::from(n)).sum();
        let min = *present.iter().min().expect("not empty");
        let max = *present.iter().max().expect("not empty");
        let avg = u64::try_from(sum / count).expect("fits");
        let jitter = u64::try_from((sum - count * u128::from(min)) / count).expect("fits");
        let deviations: u128 = present
            .iter()
            .map(|&r| u128::from(r.abs_diff(avg)) * u128::from(r.abs_diff(avg)))
            .sum();
        Some(Summary {
            min,
            max,
            avg,
            jitter,
            variance: deviations as f64 / count as f64,
        })
    }

    #[test]
    fn the_running_sums_give_what_a_pass_gives() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for len in [1usize, 3, 16, 512] {
            let mut history = RttHistory::new(len);
            let mut model = vec![NO_SAMPLE; len];
            assert_eq!(history.summary(), None);
            for step in 0..5000u32 {
                let sequence = next() as u16;
                // Mostly a jittery round trip, sometimes a spike, a repeat of the
                // bounds, or a very long one (the pass-over fallback).
                let nanos = match next() % 16 {
                    0 => 1_000_000_000 + next() % 1_000_000_000,
                    1 => history.min,
                    2 => history.max,
                    3 if step % 7 == 0 => SQUARE_LIMIT + next() % 1000,
                    _ => 40_000_000 + next() % 20_000_000,
                };
                history.record(sequence, nanos);
                model[usize::from(sequence) % len] = nanos.min(NO_SAMPLE - 1);
                if step % 5 == 0 {
                    let (got, want) = (history.summary(), by_pass(&model));
                    let (got, want) = (got.expect("sampled"), want.expect("sampled"));
                    assert_eq!(
                        (got.min, got.max, got.avg, got.jitter),
                        (want.min, want.max, want.avg, want.jitter),
                        "history of {len}, step {step}"
                    );
                    let tolerance = want.variance * 1e-12 + 1e-3;
                    assert!(
                        (got.variance - want.variance).abs() <= tolerance,
                        "history of {len}, step {step}: {} against {}",
                        got.variance,
                        want.variance
                    );
                }
            }
        }
    }

    #[test]
    fn a_sample_of_centuries_is_kept_as_the_longest_entry() {
        let mut history = RttHistory::new(4);
        history.record(0, u64::MAX);
        history.record(1, 10);
        let summary = history.summary().expect("sampled");
        assert_eq!((summary.min, summary.max), (10, NO_SAMPLE - 1));
        assert_eq!(summary.avg, ((u128::from(NO_SAMPLE - 1) + 10) / 2) as u64);
    }
}
