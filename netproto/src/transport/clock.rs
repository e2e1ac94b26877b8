//! The only clock reads of the crate: everything below the transport takes the time as
//! an argument, which keeps it deterministic (the simulator drives it on virtual time).
//! The crate's `clippy.toml` forbids reading the clock anywhere else.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::Time;

/// The time since the transport started: the time its connection layer runs on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    epoch: Instant,
}

impl Clock {
    /// A clock that reads [`Time::ZERO`] now.
    #[expect(clippy::disallowed_methods, reason = "the transport owns the clock")]
    pub(crate) fn start() -> Self {
        Self {
            epoch: Instant::now(),
        }
    }

    /// The time since [`start`](Self::start).
    #[expect(clippy::disallowed_methods, reason = "the transport owns the clock")]
    pub(crate) fn now(&self) -> Time {
        Time::from_secs_f64(self.epoch.elapsed().as_secs_f64())
    }
}

/// The Unix time in seconds (0 if the clock is before 1970): connect tokens' expiry.
#[expect(clippy::disallowed_methods, reason = "the transport owns the clock")]
pub(crate) fn unix_time() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
