//! The state of one established connection, shared by clients and servers: the
//! packet endpoint, congestion avoidance, the session token and the timers.

use std::collections::VecDeque;

use super::config::ConnectionConfig;
use super::congestion::Congestion;
use super::event::Transmit;
use super::packet::{SESSION_PREFIX_SIZE, kind};
use crate::packet::{
    Acks, Endpoint, Incoming as PacketIncoming, ReceiveError, SendError, Sequence, SequenceBuffer,
    Stats,
};

#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) token: u64,
    pub(crate) endpoint: Endpoint,
    pub(crate) congestion: Congestion,
    pub(crate) last_sent: f64,
    pub(crate) last_received: f64,
    pub(crate) last_payload_sent: f64,
    /// Our packets that carried a payload (not keep-alives), by sequence: only
    /// their acks are reported to the layer above.
    payload_packets: SequenceBuffer<()>,
}

/// What a keep-alive or payload packet brought: the payload (of a payload packet),
/// and the acks of our payload packets its header carried.
#[derive(Debug, Default)]
pub(crate) struct Incoming {
    pub(crate) payload: Option<(Sequence, Vec<u8>)>,
    pub(crate) acks: Acks,
}

impl Session {
    /// A session; the endpoint configuration was validated with the connection's.
    pub(crate) fn new(config: &ConnectionConfig, token: u64, now: f64) -> Option<Self> {
        let endpoint = Endpoint::new(config.endpoint.clone(), now).ok()?;
        Some(Self {
            token,
            endpoint,
            congestion: Congestion::new(config.congestion, now),
            last_sent: now,
            last_received: now,
            last_payload_sent: f64::NEG_INFINITY,
            payload_packets: SequenceBuffer::new(config.endpoint.sent_packets_buffer_size),
        })
    }

    /// Sends one packet-endpoint packet, wrapped as a keep-alive (empty payload) or
    /// a payload packet, to `to`.
    pub(crate) fn send<A: Copy>(
        &mut self,
        now: f64,
        to: A,
        payload: Option<&[u8]>,
        out: &mut VecDeque<Transmit<A>>,
    ) -> Result<Sequence, SendError> {
        let k = if payload.is_some() {
            kind::PAYLOAD
        } else {
            kind::KEEP_ALIVE
        };
        let token = self.token;
        let sent = self
            .endpoint
            .send(now, payload.unwrap_or(&[]), |datagram| {
                let mut bytes = Vec::with_capacity(SESSION_PREFIX_SIZE + datagram.len());
                bytes.push(k);
                bytes.extend_from_slice(&token.to_le_bytes());
                bytes.extend_from_slice(datagram);
                out.push_back(Transmit { to, payload: bytes });
            })?;
        self.last_sent = now;
        if payload.is_some() {
            self.last_payload_sent = now;
            // Sends are consecutive and newest, never stale.
            let _ = self.payload_packets.insert(sent.sequence, ());
        } else {
            self.payload_packets.advance(sent.sequence);
        }
        Ok(sent.sequence)
    }

    /// Receives the packet-endpoint datagram of a keep-alive or payload packet whose
    /// token matched. A payload packet's payload is returned if `accept` takes it (a
    /// refused payload drops the whole packet: it is not acked); a keep-alive must be
    /// empty.
    pub(crate) fn receive(
        &mut self,
        now: f64,
        datagram: &[u8],
        is_payload: bool,
        accept: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Incoming, ReceiveError> {
        let mut payload = None;
        let received = match self.endpoint.receive(now, datagram)? {
            PacketIncoming::Packet(packet) => {
                let sequence = packet.sequence();
                let take = if is_payload {
                    accept(packet.payload())
                } else {
                    packet.payload().is_empty()
                };
                if !take {
                    packet.refuse();
                    return Err(ReceiveError::Rejected(sequence));
                }
                if is_payload {
                    payload = Some((sequence, packet.payload().to_vec()));
                }
                packet.accept()
            }
            PacketIncoming::Fragment { .. } => Acks::EMPTY,
        };
        self.last_received = now;
        let mut acks = Acks::EMPTY;
        for sequence in &received {
            if self.payload_packets.remove(sequence).is_some() {
                acks.push(sequence);
            }
        }
        Ok(Incoming { payload, acks })
    }

    /// The clock went back if a timestamp is after `now`: such timestamps become
    /// `now`, so that the timeout, the keep-alive interval and the send rate count
    /// from the new time instead of waiting for the clock to catch up.
    pub(crate) fn rebase(&mut self, now: f64) {
        self.last_sent = self.last_sent.min(now);
        self.last_received = self.last_received.min(now);
        self.last_payload_sent = self.last_payload_sent.min(now);
    }

    /// Refreshes the statistics and congestion mode; sends a keep-alive when nothing
    /// was sent for `keepalive_interval`.
    pub(crate) fn update<A: Copy>(
        &mut self,
        now: f64,
        keepalive_interval: f64,
        to: A,
        out: &mut VecDeque<Transmit<A>>,
    ) {
        self.endpoint.update(now);
        let rtt = self.endpoint.stats().rtt_ms;
        self.congestion.update(now, rtt);
        if now - self.last_sent >= keepalive_interval {
            // An empty packet always fits.
            let _ = self.send(now, to, None, out);
        }
    }

    /// The sequence the next packet (payload or keep-alive) will carry.
    pub(crate) fn next_sequence(&self) -> Sequence {
        self.endpoint.next_sequence()
    }

    /// `true` when a payload sent now keeps to the congestion mode's rate.
    pub(crate) fn ready_to_send(&self, now: f64) -> bool {
        // A microsecond of slack so that a 60 Hz tick keeps to 30 packets per second.
        // A last send after `now` means the clock went back: ready (that send is
        // then stamped with the new time).
        self.last_payload_sent > now
            || now - self.last_payload_sent + 1e-6 >= self.congestion.send_interval()
    }

    pub(crate) fn stats(&self) -> &Stats {
        self.endpoint.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_that_goes_back_restarts_the_timers_from_now() {
        let config = ConnectionConfig::new(1);
        let mut session = Session::new(&config, 7, 1000.0).expect("valid");
        let mut out = VecDeque::new();
        session
            .send(1000.0, 0u8, Some(b"x"), &mut out)
            .expect("sent");
        // Before the rebase the clock reads 0: nothing would be due for 1000 s, but
        // a last send in the future counts as ready.
        assert!(session.ready_to_send(0.0));
        session.rebase(0.0);
        assert_eq!(
            (
                session.last_sent,
                session.last_received,
                session.last_payload_sent
            ),
            (0.0, 0.0, 0.0)
        );
        // The keep-alive interval now runs from 0.
        out.clear();
        session.update(0.05, config.keepalive_interval, 0u8, &mut out);
        assert!(out.is_empty());
        session.update(0.1, config.keepalive_interval, 0u8, &mut out);
        assert_eq!(
            out.len(),
            1,
            "a keep-alive after the interval on the new clock"
        );
        // Timestamps before `now` are left alone.
        session.rebase(5.0);
        assert_eq!(session.last_sent, 0.1);
    }
}
