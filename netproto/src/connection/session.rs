//! The state of one connection, shared by clients and servers: the sealing state
//! (keys, our sequence, the peer's replay window) and, once connected, the link (the
//! packet endpoint, congestion avoidance and the timers).

use super::config::{ConnectionConfig, NO_TIMEOUT};
use super::congestion::Congestion;
use super::stats::{LinkStats, Meter, Traffic};
use super::transmit::TransmitQueue;
use crate::Time;
use crate::netcode::{self, AllowedPackets, Key, Packet, ReadError, ReplayProtection};
use crate::packet::{Endpoint, EndpointConfig, Estimates, PacketSendError, Sequence};
use std::sync::Arc;
use std::time::Duration;

/// Packets per second a stack sends a connection whose message layer has nothing new
/// ([`MessageLayer::has_news`](crate::channel::MessageLayer::has_news)): they carry
/// acks and resends only. With news (a message queued since the last packet, or more
/// due than a packet held) a packet goes at once, as far as the congestion mode's
/// rate allows; so a driver that updates a thousand times a second sends a packet
/// when the game has something to say, and 30 a second otherwise.
pub const IDLE_PACKET_RATE: f64 = 30.0;

/// One side's keys and sequence, and the peer's replay window. Every packet after the
/// request is sealed with `send_key` and a sequence that never repeats under it, and
/// opened with `receive_key`.
#[derive(Debug)]
pub(crate) struct Crypto {
    send_key: Key,
    receive_key: Key,
    protocol_id: u64,
    /// The sequence of our next packet.
    sequence: u64,
    replay: ReplayProtection,
    /// What was sealed and opened under these keys.
    pub(crate) traffic: Traffic,
}

impl Crypto {
    /// Asks the CPU for the fields opening and sealing a packet read
    /// (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_fields(&self) {
        crate::prefetch::prefetch(&self.receive_key);
        crate::prefetch::prefetch(&self.send_key);
        crate::prefetch::prefetch(&self.sequence);
        crate::prefetch::prefetch(&self.replay);
        crate::prefetch::prefetch(&self.traffic);
    }

    /// Asks for the replay window's bitmap.
    #[inline]
    pub(crate) fn prefetch_replay(&self) {
        self.replay.prefetch();
    }

    pub(crate) fn new(send_key: Key, receive_key: Key, protocol_id: u64) -> Self {
        Self {
            send_key,
            receive_key,
            protocol_id,
            sequence: 0,
            replay: ReplayProtection::new(),
            traffic: Traffic::default(),
        }
    }

    /// Seals `packet` with our next sequence and queues it to `to`.
    pub(crate) fn seal<A: Copy>(
        &mut self,
        to: A,
        packet: &Packet<'_>,
        out: &mut TransmitQueue<A>,
    ) -> bool {
        if !self.seal_at(to, packet, self.sequence, out) {
            return false;
        }
        self.sequence += 1;
        true
    }

    /// Seals `packet` with `sequence`, outside our sequence, and queues it to `to`.
    /// The caller guarantees that `sequence` never seals another packet under our
    /// key (a client's connection response: see `Client::send_handshake`).
    pub(crate) fn seal_at<A: Copy>(
        &mut self,
        to: A,
        packet: &Packet<'_>,
        sequence: u64,
        out: &mut TransmitQueue<A>,
    ) -> bool {
        let Some(len) = out.push(to, packet, sequence, &self.send_key, self.protocol_id) else {
            return false;
        };
        self.traffic.datagrams_sent += 1;
        self.traffic.bytes_sent += len as u64;
        true
    }

    /// Opens a datagram in place: only the `allowed` types, replays refused. A packet
    /// that fails changes nothing (the replay window moves only once the tag
    /// verified).
    pub(crate) fn open<'a>(
        &mut self,
        datagram: &'a mut [u8],
        allowed: AllowedPackets,
    ) -> Result<(u64, Packet<'a>), ReadError> {
        let len = datagram.len() as u64;
        let opened = netcode::read_packet(
            datagram,
            self.protocol_id,
            0,
            Some(&self.receive_key),
            allowed,
            Some(&mut self.replay),
        )?;
        self.traffic.datagrams_received += 1;
        self.traffic.bytes_received += len;
        Ok(opened)
    }

    /// The sequence our next packet will carry.
    #[cfg(test)]
    pub(crate) fn next_sequence(&self) -> u64 {
        self.sequence
    }
}

/// An established connection's link: the packet endpoint inside payload packets,
/// congestion avoidance and the timers.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) endpoint: Endpoint,
    pub(crate) congestion: Congestion,
    /// The silence after which the peer is gone: the connect token's timeout; for a
    /// token with none ([`NO_TIMEOUT`]), `max_timeout` while the link carries the
    /// packet endpoint (its sequences stay unambiguous no longer: see
    /// [`ConnectionConfig::allow_no_timeout`]) and `None`, never, once it carries raw
    /// payloads ([`carry_raw`](Self::carry_raw)).
    pub(crate) timeout: Option<Duration>,
    /// The token set no timeout.
    no_timeout: bool,
    pub(crate) last_sent: Time,
    pub(crate) last_received: Time,
    pub(crate) last_payload_sent: Time,
    /// When the rate allows the next payload: each one sent moves it an interval on
    /// from `max(itself, send time - interval)`, so that an update may send a second
    /// packet when the one before was an interval or more ago, within the rate.
    next_payload_at: Time,
    /// Bandwidth sent and received, with IP and UDP headers.
    meters: Meter<2>,
}

impl Link {
    /// Asks the CPU for the link's fields and its endpoint's that receiving a
    /// packet reads (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch_fields(&self) {
        crate::prefetch::prefetch(&self.congestion);
        crate::prefetch::prefetch(&self.last_received);
        crate::prefetch::prefetch(&self.next_payload_at);
        crate::prefetch::prefetch(&self.meters);
        self.endpoint.prefetch_fields();
    }

    /// A link; `endpoint` is `config.endpoint` (a server's links share one), validated
    /// with the connection's. `skip_seed`, when given, arms the endpoint's
    /// skipped-sequence trap with it instead of the configuration's
    /// [`EndpointConfig::skip_sequence_seed`].
    pub(crate) fn new(
        config: &ConnectionConfig,
        endpoint: Arc<EndpointConfig>,
        timeout: Duration,
        now: Time,
        skip_seed: Option<u64>,
    ) -> Option<Self> {
        let skip_seed = skip_seed.or(endpoint.skip_sequence_seed);
        let endpoint = Endpoint::with_shared_config(endpoint, skip_seed, now).ok()?;
        Some(Self {
            endpoint,
            congestion: Congestion::new(config.congestion, now),
            timeout: Some(timeout.min(config.max_timeout)),
            no_timeout: timeout == NO_TIMEOUT,
            last_sent: now,
            last_received: now,
            last_payload_sent: Time::NEVER,
            next_payload_at: Time::NEVER,
            meters: Meter::default(),
        })
    }

    /// Sends `payload` as the endpoint's next packet: one payload packet per
    /// datagram (a regular packet, or each fragment).
    pub(crate) fn send_payload<A: Copy>(
        &mut self,
        crypto: &mut Crypto,
        now: Time,
        to: A,
        payload: &[u8],
        out: &mut TransmitQueue<A>,
    ) -> Result<Sequence, PacketSendError> {
        let sent = self.endpoint.send(now, payload, |datagram| {
            // Endpoint datagrams fit a payload packet (checked by the configuration).
            crypto.seal(to, &Packet::Payload(datagram), out);
        })?;
        self.last_sent = now;
        self.last_payload_sent = now;
        let interval = self.congestion.send_interval_secs();
        // Clamped on both sides: no credit saved from idle time beyond one packet,
        // and no debt beyond one interval (a clock that went back).
        let (now, at) = (now.as_secs_f64(), self.next_payload_at.as_secs_f64());
        self.next_payload_at =
            Time::from_secs_f64(at.max(now - interval).min(now + interval) + interval);
        Ok(sent.sequence)
    }

    /// Sends `payload` as one netcode payload packet, as it is (no packet endpoint):
    /// `false` when it does not fit one (1 to
    /// [`MAX_PAYLOAD_BYTES`](crate::netcode::MAX_PAYLOAD_BYTES) bytes).
    pub(crate) fn send_raw<A: Copy>(
        &mut self,
        crypto: &mut Crypto,
        now: Time,
        to: A,
        payload: &[u8],
        out: &mut TransmitQueue<A>,
    ) -> bool {
        if payload.is_empty() || !crypto.seal(to, &Packet::Payload(payload), out) {
            return false;
        }
        self.last_sent = now;
        self.last_payload_sent = now;
        true
    }

    /// Any packet from the peer opened: it is alive.
    pub(crate) fn heard(&mut self, now: Time) {
        self.last_received = self.last_received.max(now);
    }

    /// `true` once nothing was received for the timeout (never without one).
    pub(crate) fn timed_out(&self, now: Time) -> bool {
        self.timeout
            .is_some_and(|timeout| now.secs_since(self.last_received) >= timeout.as_secs_f64())
    }

    /// The link carries raw netcode payloads, not the packet endpoint's datagrams: a
    /// token with no timeout now means none (no 16-bit sequence to keep unambiguous).
    pub(crate) fn carry_raw(&mut self) {
        if self.no_timeout {
            self.timeout = None;
        }
    }

    /// The clock went back if a timestamp is after `now`: such timestamps become
    /// `now`, so that the timeout, the keep-alive interval and the send rate count
    /// from the new time instead of waiting for the clock to catch up.
    pub(crate) fn rebase(&mut self, now: Time) {
        self.last_sent = self.last_sent.min(now);
        self.last_received = self.last_received.min(now);
        if self.last_payload_sent > now {
            // Sent in the future: the rate counts from the new time.
            self.next_payload_at = now;
        }
        self.last_payload_sent = self.last_payload_sent.min(now);
    }

    /// Refreshes the statistics (with the session's `traffic` so far) and the
    /// congestion mode; `true` when a keep-alive is due (nothing was sent for
    /// `keepalive_interval`).
    pub(crate) fn update(
        &mut self,
        now: Time,
        keepalive_interval: Duration,
        traffic: &Traffic,
    ) -> bool {
        self.endpoint.update(now);
        let rtt = self.endpoint.estimates().rtt;
        self.congestion.update(now, rtt);
        let overhead = self.endpoint.config().packet_header_size as u64;
        let wire =
            |datagrams: u64, bytes: u64| bytes.saturating_add(datagrams.saturating_mul(overhead));
        self.meters.update(
            now,
            [
                wire(traffic.datagrams_sent, traffic.bytes_sent),
                wire(traffic.datagrams_received, traffic.bytes_received),
            ],
        );
        now.secs_since(self.last_sent) >= keepalive_interval.as_secs_f64()
    }

    /// When to send a payload, decided here alone (with the keep-alive check of
    /// [`update`](Self::update) beside it): `true` when a payload packet is due at
    /// `now`, that is when the congestion mode's rate allows one
    /// ([`ready_to_send`](Self::ready_to_send)) and the layer above has `news`, or,
    /// when it wants `idle` packets (acks and resends), [`IDLE_PACKET_RATE`]'s
    /// interval passed since the last payload.
    pub(crate) fn payload_due(&self, now: Time, news: bool, idle: bool) -> bool {
        let last = self.last_payload_sent;
        let idle_due =
            idle && (last > now || now.secs_since(last) + 1e-6 >= 1.0 / IDLE_PACKET_RATE);
        (news || idle_due) && self.ready_to_send(now)
    }

    /// `true` when a payload sent now keeps to the congestion mode's rate.
    pub(crate) fn ready_to_send(&self, now: Time) -> bool {
        // A microsecond of slack so that a 60 Hz tick keeps to 30 packets per second
        // (at that rate; one per tick up to 60).
        // A last send after `now` means the clock went back: ready (that send is
        // then stamped with the new time).
        self.last_payload_sent > now || now.plus_secs(1e-6) >= self.next_payload_at
    }

    /// The packet endpoint's estimates.
    pub(crate) fn estimates(&self) -> &Estimates {
        self.endpoint.estimates()
    }

    /// The link's figures, with the session's `traffic`.
    pub(crate) fn link_stats(&self, traffic: &Traffic) -> LinkStats {
        LinkStats::new(
            self.endpoint.stats(),
            &self.congestion,
            traffic,
            &self.meters,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seconds: f64) -> Time {
        Time::from_secs_f64(seconds)
    }

    #[test]
    fn a_clock_that_goes_back_restarts_the_timers_from_now() {
        let config = ConnectionConfig::new(1);
        let endpoint = Arc::new(config.endpoint.clone());
        let mut link =
            Link::new(&config, endpoint, Duration::from_secs(5), t(1000.0), None).expect("valid");
        let mut crypto = Crypto::new(Key::from_bytes([1; 32]), Key::from_bytes([2; 32]), 1);
        let mut out = TransmitQueue::new();
        link.send_payload(&mut crypto, t(1000.0), 0u8, b"x", &mut out)
            .expect("sent");
        // Before the rebase the clock reads 0: nothing would be due for 1000 s, but
        // a last send in the future counts as ready.
        assert!(link.ready_to_send(t(0.0)));
        link.rebase(t(0.0));
        assert_eq!(
            (link.last_sent, link.last_received, link.last_payload_sent),
            (t(0.0), t(0.0), t(0.0))
        );
        // The keep-alive interval now runs from 0.
        let traffic = Traffic::default();
        assert!(!link.update(t(0.05), config.keepalive_interval, &traffic));
        assert!(link.update(t(0.1), config.keepalive_interval, &traffic));
        // Timestamps before `now` are left alone.
        link.rebase(t(5.0));
        assert_eq!(link.last_sent, t(0.0));
        assert!(link.timed_out(t(5.0)) && !link.timed_out(t(4.9)));
    }

    #[test]
    fn sequences_never_repeat_and_a_packet_opens_once() {
        let (a, b) = (Key::from_bytes([1; 32]), Key::from_bytes([2; 32]));
        let mut us = Crypto::new(a.clone(), b.clone(), 9);
        let mut peer = Crypto::new(b, a, 9);
        let mut out = TransmitQueue::new();
        for _ in 0..3 {
            assert!(us.seal(0u8, &Packet::Payload(b"hi"), &mut out));
        }
        assert_eq!(us.next_sequence(), 3);
        let mut buf = [0u8; super::super::transmit::MAX_DATAGRAM_BYTES];
        let (_, len) = out.pop(&mut buf).expect("queued");
        let mut copy = buf;
        let allowed = AllowedPackets::ALL;
        let (sequence, packet) = peer.open(&mut buf[..len], allowed).expect("opens");
        assert_eq!((sequence, packet), (0, Packet::Payload(b"hi")));
        assert_eq!(
            peer.open(&mut copy[..len], allowed),
            Err(ReadError::Replayed),
            "a replay is refused"
        );
    }
}
