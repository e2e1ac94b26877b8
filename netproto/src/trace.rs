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
        rtt_ms = link.estimates().rtt.as_secs_f64() * 1000.0,
        penalty_s = congestion.penalty().as_secs_f64(),
        send_rate = congestion.send_rate(),
        "congestion mode changed"
    );
}

/// Why a datagram or payload was dropped: the `reason` field of every drop event,
/// on either side. The server counts each in the [`ServerStats`] field of the
/// same name (`datagrams_dropped_*` without the prefix; `requests_dropped_*` and
/// `responses_dropped_*` as `request_*` and `response_*`).
///
/// [`ServerStats`]: crate::connection::ServerStats
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropReason {
    /// Not a packet of the protocol, or one that does not parse.
    Malformed,
    /// A packet of a type the receiver does not expect in its state.
    Unexpected,
    /// (Server) from an address with no connection or handshake.
    UnknownAddress,
    /// (Client) from an address other than the server's.
    WrongAddress,
    /// A sealed packet that failed to authenticate.
    Unauthenticated,
    /// A sealed packet already received (the replay window).
    Replayed,
    /// Refused by the packet endpoint (its header, fragments or acks).
    ByEndpoint,
    /// A connection request that does not parse.
    RequestMalformed,
    /// A connection request whose token expired.
    RequestExpired,
    /// A connection request whose token failed to authenticate.
    RequestUnauthenticated,
    /// A connection request whose token names other servers.
    RequestWrongServer,
    /// A connection request whose token was used already.
    RequestTokenReused,
    /// A connection request whose token is older than the server's restart rule allows.
    RequestBeforeStart,
    /// A connection request refused because the token history is full of live tokens.
    RequestHistoryFull,
    /// A connection request from a client already connected.
    RequestAlreadyConnected,
    /// A connection request whose token timeout is out of range.
    RequestBadTimeout,
    /// A connection request refused because every handshake slot is busy.
    RequestBusy,
    /// A challenge response that does not match a handshake.
    ResponseInvalid,
    /// A payload the message layer refused (no room now, or malformed).
    PayloadRefused,
    /// A datagram the socket refused to send.
    SendFailed,
}

impl DropReason {
    /// The reason's stable name, as drop events carry it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Unexpected => "unexpected",
            Self::UnknownAddress => "unknown_address",
            Self::WrongAddress => "wrong_address",
            Self::Unauthenticated => "unauthenticated",
            Self::Replayed => "replayed",
            Self::ByEndpoint => "by_endpoint",
            Self::RequestMalformed => "request_malformed",
            Self::RequestExpired => "request_expired",
            Self::RequestUnauthenticated => "request_unauthenticated",
            Self::RequestWrongServer => "request_wrong_server",
            Self::RequestTokenReused => "request_token_reused",
            Self::RequestBeforeStart => "request_before_start",
            Self::RequestHistoryFull => "request_history_full",
            Self::RequestAlreadyConnected => "request_already_connected",
            Self::RequestBadTimeout => "request_bad_timeout",
            Self::RequestBusy => "request_busy",
            Self::ResponseInvalid => "response_invalid",
            Self::PayloadRefused => "payload_refused",
            Self::SendFailed => "send_failed",
        }
    }

    /// A sealed packet that did not open.
    pub(crate) fn of_read_error(error: crate::netcode::ReadError) -> Self {
        use crate::netcode::ReadError;
        match error {
            ReadError::Decrypt => Self::Unauthenticated,
            ReadError::Replayed => Self::Replayed,
            ReadError::NotAllowed(_) => Self::Unexpected,
            _ => Self::Malformed,
        }
    }
}

impl Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    pub(crate) reason: DropReason,
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
            log_drop!(self, now, side, ?addr, %reason, %error, "dropped");
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
