//! The crate's `tracing` events: their targets, and the rate limit of the drop events.
//! The list of events and fields is in the crate documentation ("Logging").

use crate::Time;
use core::fmt::{Debug, Display};

use crate::connection::session::Link;
use crate::connection::{DenyReason, DisconnectReason};

/// Target of the connection lifecycle: connected, denied, disconnected, protocol error.
pub(crate) const CONNECTION: &str = "netproto::connection";
/// Target of the congestion mode changes.
pub(crate) const CONGESTION: &str = "netproto::congestion";
/// Target of the dropped and refused datagrams and payloads (rate-limited).
pub(crate) const DROP: &str = "netproto::drop";

/// Drop events logged per second, per server or client; the rest are counted and
/// reported in one `drop events suppressed` event.
pub(crate) const DROPS_PER_SECOND: u32 = 10;

/// The rate limit of one server's or client's drop events, on the sans-IO clock: a
/// flood of hostile datagrams costs a few lines a second, not one line each.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DropLog {
    window_start: Time,
    logged: u32,
    suppressed: u64,
}

impl DropLog {
    pub(crate) fn new(now: Time) -> Self {
        Self {
            window_start: now,
            logged: 0,
            suppressed: 0,
        }
    }

    /// `true` when a drop at `now` may be logged; otherwise it is counted for the
    /// summary.
    pub(crate) fn admit(&mut self, now: Time, side: &'static str) -> bool {
        self.roll(now, side);
        if self.logged < DROPS_PER_SECOND {
            self.logged += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }

    /// Starts a new window once a second has passed (or the clock went back),
    /// reporting how many drops the last one suppressed.
    pub(crate) fn roll(&mut self, now: Time, side: &'static str) {
        if now.secs_since(self.window_start) < 1.0 && now >= self.window_start {
            return;
        }
        if self.suppressed > 0 {
            tracing::debug!(
                target: DROP,
                side,
                suppressed = self.suppressed,
                "drop events suppressed"
            );
        }
        *self = Self::new(now);
    }

    /// Reports the suppressed drops of a finished window (from `update`, so that the
    /// summary comes when a flood stops too).
    pub(crate) fn flush(&mut self, now: Time, side: &'static str) {
        if self.suppressed > 0 {
            self.roll(now, side);
        }
    }
}

/// `disconnected`: at `warn` level for a timeout or a protocol error, `info` otherwise.
/// `client` is the slot, unknown on a client that never connected.
pub(crate) fn disconnected(
    side: &'static str,
    client: Option<u16>,
    addr: &dyn Debug,
    reason: DisconnectReason,
) {
    let warn = !matches!(
        reason,
        DisconnectReason::Local | DisconnectReason::PeerDisconnected
    );
    let reason = reason.as_str();
    match (client, warn) {
        (Some(client), true) => {
            tracing::warn!(target: CONNECTION, side, client, ?addr, reason, "disconnected");
        }
        (Some(client), false) => {
            tracing::info!(target: CONNECTION, side, client, ?addr, reason, "disconnected");
        }
        (None, true) => tracing::warn!(target: CONNECTION, side, ?addr, reason, "disconnected"),
        (None, false) => tracing::info!(target: CONNECTION, side, ?addr, reason, "disconnected"),
    }
}

/// `denied`: a server denied `addr` (server side) or `addr` denied us (client side).
pub(crate) fn denied(side: &'static str, addr: &dyn Debug, reason: DenyReason) {
    tracing::info!(
        target: CONNECTION,
        side,
        ?addr,
        reason = reason.as_str(),
        "denied"
    );
}

/// `congestion mode changed`, after `link`'s update changed its mode.
pub(crate) fn congestion_changed(side: &'static str, client: u16, addr: &dyn Debug, link: &Link) {
    let congestion = &link.congestion;
    tracing::debug!(
        target: CONGESTION,
        side,
        client,
        ?addr,
        mode = congestion.mode().as_str(),
        rtt_ms = link.estimates().rtt_ms,
        penalty_s = congestion.penalty_secs(),
        send_rate = congestion.send_rate(),
        "congestion mode changed"
    );
}

/// Logs a drop at `debug` level under [`DROP`] with `side` and the given fields, within
/// the rate limit of `$log` (a [`DropLog`]). Free when nothing listens: the limit is
/// consulted only when a subscriber takes the event.
macro_rules! log_drop {
    ($log:expr, $now:expr, $side:expr, $($fields:tt)+) => {
        if ::tracing::enabled!(target: $crate::trace::DROP, ::tracing::Level::DEBUG)
            && $log.admit($now, $side)
        {
            ::tracing::debug!(target: $crate::trace::DROP, side = $side, $($fields)+);
        }
    };
}
pub(crate) use log_drop;

/// What a layer refused of a peer's: a packet or payload, with why.
#[derive(Clone, Copy)]
pub(crate) struct Refusal<'a> {
    pub(crate) side: &'static str,
    pub(crate) client: u16,
    pub(crate) addr: &'a dyn Debug,
    /// The drop event's `reason`.
    pub(crate) reason: &'static str,
    pub(crate) error: &'a dyn Display,
    /// The peer broke the protocol: its connection ends.
    pub(crate) protocol_error: bool,
}

impl DropLog {
    /// Logs a refusal: `protocol error` at `warn` level when the peer broke the
    /// protocol (once per connection: it ends), a rate-limited drop otherwise.
    pub(crate) fn refused(&mut self, now: Time, refusal: Refusal<'_>) {
        let Refusal {
            side,
            client,
            addr,
            reason,
            error,
            protocol_error,
        } = refusal;
        if protocol_error {
            tracing::warn!(
                target: CONNECTION,
                side,
                client,
                ?addr,
                %error,
                "protocol error"
            );
        } else {
            log_drop!(self, now, side, ?addr, reason, %error, "dropped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_opens_again_each_second() {
        let mut log = DropLog::new(Time::ZERO);
        let admitted = (0..100)
            .filter(|_| log.admit(Time::from_secs_f64(0.5), "server"))
            .count();
        assert_eq!(admitted, DROPS_PER_SECOND as usize);
        assert_eq!(log.suppressed, 100 - u64::from(DROPS_PER_SECOND));
        assert!(log.admit(Time::from_secs_f64(1.5), "server"));
        assert_eq!(log.suppressed, 0);
        // A clock that goes back starts a new window too.
        for _ in 0..DROPS_PER_SECOND {
            log.admit(Time::from_secs_f64(1.6), "server");
        }
        assert!(!log.admit(Time::from_secs_f64(1.7), "server"));
        assert!(log.admit(Time::from_secs_f64(0.2), "server"));
    }
}
