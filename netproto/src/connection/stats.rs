//! What a connection measures of its link: [`LinkStats`], and the traffic and
//! bandwidth meters behind it; what a server counts: [`ServerStats`].

use std::time::Duration;

use super::congestion::{Congestion, Mode};
use crate::Time;
use crate::packet::EndpointStats;

/// One connection's link as it measured it: its packet endpoint's estimates and
/// counters, the congestion state, and the datagrams and bytes of the session. Read
/// it with [`Server::stats`](super::Server::stats) or
/// [`Client::stats`](super::Client::stats) (with the message side,
/// [`ConnectionStats`](crate::transport::ConnectionStats)).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LinkStats {
    /// The packet endpoint's estimates and counters. Its `rtt` is the round trip on
    /// the network: the time the peer held our packets before acking them is taken
    /// out (the ack-delay byte, see
    /// [`EndpointConfig::report_ack_delay`](crate::packet::EndpointConfig::report_ack_delay));
    /// `rtt + ack_delay` is how long an ack takes to come back; its
    /// `jitter_stddev_vs_avg_rtt` is how much the round trip varies. The round-trip
    /// history (`rtt_min`, `rtt_max`, `rtt_avg`, the jitters) and the loss
    /// (`packet_loss_percent`, `packet_loss_percent_long`, whose resolution they state)
    /// are `None` until measured.
    pub endpoint: EndpointStats,
    /// The congestion mode (good: 30 packets per second, bad: 10, by default).
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
    /// Bandwidth we send, kbps: every datagram of the session as sent, plus
    /// `packet_header_size` (28 bytes of IPv4 and UDP headers), over about the last
    /// second (the endpoint's `sent_kbps` counts its packets only, over the last
    /// quarter second).
    pub sent_kbps: f64,
    /// Bandwidth we receive from the peer, kbps, counted the same way (datagrams that
    /// opened under the session key only).
    pub received_kbps: f64,
}

/// What a [`Server`](super::Server) counted over all its connections and handshakes,
/// from [`Server::server_stats`](super::Server::server_stats). Every datagram handed to
/// [`handle_datagram`](super::Server::handle_datagram) lands in `datagrams_received`; one
/// that changes nothing lands in exactly one of the `datagrams_dropped_*`,
/// `requests_dropped_*` or `responses_dropped_*` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ServerStats {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_received: u64,
    /// DropReason: not a netcode packet (too short or long, unknown type, bad sequence
    /// length, a body of the wrong size).
    pub datagrams_dropped_malformed: u64,
    /// DropReason: a packet type the server does not take from that address now.
    pub datagrams_dropped_unexpected: u64,
    /// DropReason: a sealed packet from an address with no session or handshake.
    pub datagrams_dropped_unknown_address: u64,
    /// DropReason: the packet failed to authenticate (forged, corrupt, or sealed with
    /// another key). It changed nothing.
    pub datagrams_dropped_unauthenticated: u64,
    /// DropReason: a packet already received (a replay).
    pub datagrams_dropped_replayed: u64,
    /// DropReason by the packet endpoint of a session (stale, duplicate, malformed
    /// inside the seal).
    pub datagrams_dropped_by_endpoint: u64,
    /// Requests ignored: the wrong size or version.
    pub requests_dropped_malformed: u64,
    /// Requests ignored: a well-formed request for another protocol id (a client
    /// built with other messages or another channel configuration). Logged at warn
    /// level with both ids, rate-limited.
    pub requests_dropped_wrong_protocol: u64,
    /// Requests ignored: the token expired.
    pub requests_dropped_expired: u64,
    /// Requests ignored: the token's private part did not open with our key.
    pub requests_dropped_unauthenticated: u64,
    /// Requests ignored: the token does not name this server.
    pub requests_dropped_wrong_server: u64,
    /// Requests ignored: the token already opened a session (whether or not it is
    /// still on), or its handshake is under way from another address.
    pub requests_dropped_token_reused: u64,
    /// Requests ignored by the restart rule: the token expires less than
    /// [`max_token_lifetime`](super::ServerConfig::max_token_lifetime) after this server
    /// started, so it may have been made, and used, before: a server remembers no
    /// token of its previous runs.
    pub requests_dropped_before_start: u64,
    /// Requests ignored: the history of connect tokens is full of unexpired tokens
    /// (eight times [`pending_handshakes`](super::ServerConfig::pending_handshakes)); no
    /// entry is evicted, or a used token could open a second session.
    pub requests_dropped_history_full: u64,
    /// Requests ignored: the address or the token's client id is connected.
    pub requests_dropped_already_connected: u64,
    /// Requests ignored: the token's timeout is not one this server accepts.
    pub requests_dropped_bad_timeout: u64,
    /// Requests ignored: the table of handshakes in progress is full of handshakes
    /// younger than a second.
    pub requests_dropped_busy: u64,
    /// Handshakes in progress replaced, when the table was full, by a newer
    /// authenticated request (the one that started first goes, once it has had a
    /// second to complete). Not a drop: the request that replaced it got a challenge.
    pub handshakes_replaced: u64,
    /// Responses ignored: the challenge token did not open, or its client is
    /// connected.
    pub responses_dropped_invalid: u64,
    /// Challenges sent.
    pub challenges_sent: u64,
    /// Denials sent (the server was full).
    pub denials_sent: u64,
    /// Clients accepted.
    pub clients_accepted: u64,
    /// Clients timed out.
    pub clients_timed_out: u64,
    /// Clients disconnected for breaking the protocol.
    pub clients_dropped_protocol_error: u64,
}

/// Datagrams and bytes sealed and opened under one session's keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub(crate) datagrams_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) datagrams_received: u64,
    pub(crate) bytes_received: u64,
}

/// The time over which the bandwidth meters average.
const METER_TIME_CONSTANT: Duration = Duration::from_secs(1);

/// Bandwidth meters for `N` running byte totals taken at the same instants:
/// kilobits per second over about the last [`METER_TIME_CONSTANT`], as an
/// exponential moving average in time (so that the result does not depend on how
/// often it is updated). The lanes share their instants, so an update computes the
/// average's weight (an `exp`) once for all of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meter<const N: usize> {
    kbps: [f64; N],
    /// `(time, total bytes)` at the last update.
    last: Option<(Time, [u64; N])>,
}

impl<const N: usize> Default for Meter<N> {
    fn default() -> Self {
        Self {
            kbps: [0.0; N],
            last: None,
        }
    }
}

impl<const N: usize> Meter<N> {
    /// Takes the running totals of bytes at `now`.
    pub(crate) fn update(&mut self, now: Time, totals: [u64; N]) {
        match self.last {
            Some((time, bytes)) if now > time => {
                let dt = now.secs_since(time);
                let weight = 1.0 - (-dt / METER_TIME_CONSTANT.as_secs_f64()).exp();
                for ((kbps, total), bytes) in self.kbps.iter_mut().zip(totals).zip(bytes) {
                    let rate = total.saturating_sub(bytes) as f64 * 8.0 / 1000.0 / dt;
                    *kbps += (rate - *kbps) * weight;
                }
                self.last = Some((now, totals));
            }
            // The same instant, or the clock went back: start over from here.
            Some((time, _)) if now == time => {}
            _ => self.last = Some((now, totals)),
        }
    }

    /// Each lane's rate, in kilobits per second.
    pub(crate) fn kbps(&self) -> [f64; N] {
        self.kbps
    }
}

impl LinkStats {
    /// Gathers the link's figures.
    pub(crate) fn new(
        endpoint: EndpointStats,
        congestion: &Congestion,
        traffic: &Traffic,
        meters: &Meter<2>,
    ) -> Self {
        Self {
            endpoint,
            mode: congestion.mode(),
            penalty: congestion.penalty(),
            datagrams_sent: traffic.datagrams_sent,
            datagrams_received: traffic.datagrams_received,
            bytes_sent: traffic.bytes_sent,
            bytes_received: traffic.bytes_received,
            sent_kbps: meters.kbps()[0],
            received_kbps: meters.kbps()[1],
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
            let mut meter = Meter::<1>::default();
            let mut total = 0u64;
            let mut next_send = 0.0;
            for i in 0..(10.0 * updates_per_second) as u32 {
                let now = f64::from(i) / updates_per_second;
                while next_send <= now {
                    total += 100;
                    next_send += 1.0 / 30.0;
                }
                meter.update(Time::from_secs_f64(now), [total]);
            }
            assert!(
                (meter.kbps()[0] - 24.0).abs() < 24.0 * 0.05,
                "{}",
                meter.kbps()[0]
            );
        }
    }

    #[test]
    fn bytes_taken_at_the_same_instant_count_from_the_previous_update() {
        // One meter sees the total twice at 11 s; the other once, at 12 s only.
        let mut twice = Meter::<1>::default();
        let mut once = Meter::<1>::default();
        for meter in [&mut twice, &mut once] {
            meter.update(Time::from_secs_f64(10.0), [0]);
            meter.update(Time::from_secs_f64(11.0), [1000]);
        }
        let before = twice.kbps()[0];
        twice.update(Time::from_secs_f64(11.0), [2000]);
        assert_eq!(twice.kbps()[0], before, "no time passed: no rate");
        twice.update(Time::from_secs_f64(12.0), [2000]);
        once.update(Time::from_secs_f64(12.0), [2000]);
        assert_eq!(twice.kbps()[0], once.kbps()[0], "the 1000 bytes count once");
    }

    #[test]
    fn a_clock_that_goes_back_starts_over() {
        let mut meter = Meter::<1>::default();
        meter.update(Time::from_secs_f64(10.0), [0]);
        meter.update(Time::from_secs_f64(11.0), [1000]);
        let kbps = meter.kbps()[0];
        assert!(kbps > 0.0);
        meter.update(Time::from_secs_f64(5.0), [2000]);
        assert_eq!(
            meter.kbps()[0],
            kbps,
            "nothing counted over a negative time"
        );
        meter.update(Time::from_secs_f64(6.0), [2000]);
        assert!(meter.kbps()[0] < kbps, "silence since the restart");
    }
}
