//! [`Time`]: the instant every layer below the transport is given as `now`.
//!
//! Nothing below the transport reads a clock (sans-IO): the caller passes the time in,
//! and intervals, timeouts and round-trip times are [`Duration`]s. The UDP transport
//! reads the clock (`transport/clock.rs`, the only place allowed to); a simulation or
//! a test passes virtual time ([`Time::from_secs_f64`]).

use core::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point on the caller's clock: seconds since an epoch of the caller's choice (the
/// UDP transport's start, or 0 of a simulation).
///
/// Only differences between two `Time`s of the same clock mean anything. The layers
/// tolerate a clock that stands still, goes back or jumps (see each layer's
/// documentation); they never read one.
///
/// Inside it is `f64` seconds, not integer nanoseconds: the simulator steps a virtual
/// clock in `f64` (`1.0 / 60.0` per tick) and its runs replay bit for bit, which
/// rounding every instant to a nanosecond would break; and the layers' timers compare
/// `f64` differences exactly as they always have. For the same reason `Time` is
/// [`PartialOrd`] but not `Ord`: a broken clock may hand in NaN, which the layers
/// ignore (compare with [`total_cmp`](Self::total_cmp) to sort).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Time(f64);

impl Time {
    /// The epoch: 0 seconds.
    pub const ZERO: Self = Self(0.0);

    /// Before every time: a timestamp of something that never happened (so that the
    /// first interval since it has always elapsed).
    pub(crate) const NEVER: Self = Self(f64::NEG_INFINITY);

    /// The time `seconds` after the epoch (any `f64`, for a virtual clock; the layers
    /// ignore a non-finite one where the documentation says so).
    #[must_use]
    pub const fn from_secs_f64(seconds: f64) -> Self {
        Self(seconds)
    }

    /// Seconds since the epoch.
    #[must_use]
    pub const fn as_secs_f64(self) -> f64 {
        self.0
    }

    /// The time elapsed from `earlier` to `self`, or zero if `earlier` is later (the
    /// clock went back) or either is not finite.
    #[must_use]
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        saturating_duration(self.0 - earlier.0)
    }

    /// The time elapsed from `earlier` to `self`, or `None` if `earlier` is later or the
    /// difference is not a valid [`Duration`].
    #[must_use]
    pub fn checked_duration_since(self, earlier: Self) -> Option<Duration> {
        Duration::try_from_secs_f64(self.0 - earlier.0).ok()
    }

    /// The earlier of the two ([`f64::min`] of the seconds: a NaN gives the other).
    #[must_use]
    pub fn min(self, other: Self) -> Self {
        Self(self.0.min(other.0))
    }

    /// The later of the two ([`f64::max`] of the seconds: a NaN gives the other).
    #[must_use]
    pub fn max(self, other: Self) -> Self {
        Self(self.0.max(other.0))
    }

    /// [`f64::total_cmp`] of the seconds: a total order, for sorting.
    #[must_use]
    pub fn total_cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }

    /// Seconds from `earlier` to `self`, negative if the clock went back: the `f64`
    /// difference the layers' timers compare.
    pub(crate) fn secs_since(self, earlier: Self) -> f64 {
        self.0 - earlier.0
    }

    /// `seconds` later (earlier if negative), in `f64` seconds.
    pub(crate) fn plus_secs(self, seconds: f64) -> Self {
        Self(self.0 + seconds)
    }
}

impl Add<Duration> for Time {
    type Output = Self;

    fn add(self, rhs: Duration) -> Self {
        Self(self.0 + rhs.as_secs_f64())
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for Time {
    type Output = Self;

    fn sub(self, rhs: Duration) -> Self {
        Self(self.0 - rhs.as_secs_f64())
    }
}

impl Sub for Time {
    type Output = Duration;

    /// [`saturating_duration_since`](Self::saturating_duration_since).
    fn sub(self, rhs: Self) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

/// Seconds with an `s`: `1.5s`, or `{:.2}` for `1.50s`.
impl core::fmt::Display for Time {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match f.precision() {
            Some(digits) => write!(f, "{:.*}s", digits, self.0),
            None => write!(f, "{}s", self.0),
        }
    }
}

/// `seconds` as a [`Duration`]: zero if negative or NaN, [`Duration::MAX`] if too large.
pub(crate) fn saturating_duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(if seconds > 0.0 {
        Duration::MAX
    } else {
        Duration::ZERO
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_keeps_f64_seconds() {
        let t = Time::from_secs_f64(1.0 / 60.0);
        assert_eq!(t.as_secs_f64(), 1.0 / 60.0);
        assert_eq!(
            (Time::ZERO + Duration::from_millis(250)).as_secs_f64(),
            0.25
        );
        let mut u = t;
        u += Duration::from_secs(1);
        assert_eq!(u.saturating_duration_since(t), Duration::from_secs(1));
        assert_eq!(t - u, Duration::ZERO, "the clock went back");
        assert_eq!(t.checked_duration_since(u), None);
        assert!(t < u);
        let nan = Time::from_secs_f64(f64::NAN);
        assert_eq!(nan.saturating_duration_since(t), Duration::ZERO);
        assert!(nan.partial_cmp(&t).is_none());
        assert_eq!(Time::NEVER.total_cmp(&t), core::cmp::Ordering::Less);
        assert_eq!(saturating_duration(f64::INFINITY), Duration::MAX);
        assert_eq!(format!("{t:.2} {}", Time::from_secs_f64(1.5)), "0.02s 1.5s");
    }
}
