//! Network RTT: the ack-delay byte ([`EndpointConfig::report_ack_delay`], netproto's
//! own extension, off by default).
//!
//! A send-to-ack time includes the wait at the peer between the packet's arrival and
//! the departure of the packet that acks it: up to a whole send interval (33 ms at
//! 30 packets per second, 100 ms at 10). With the extension on, every packet's
//! payload starts with one byte: the mean time, in milliseconds, that the packets
//! this packet acks *for the first time* were held before it left (the packets
//! accepted since our previous send). The peer knows which packets those are: the ack
//! bits of this packet that were not set in our previous packet (the one with the
//! sequence before it). For them it knows the send times, so
//!
//! ```text
//! network RTT = mean over those packets of (arrival of this packet - their send)
//!               - mean hold
//! ```
//!
//! one sample per packet whose predecessor also arrived, weighted by the number of
//! packets it covers. Every packet the peer accepts is covered by exactly one of our
//! packets, whatever its delay, so the estimate has no selection bias: sampling only
//! the newest acked packet (as QUIC does) favours packets that overtook others, and
//! under 50 ms of jitter reads 10 to 20 ms low.
//!
//! [`EndpointConfig::report_ack_delay`]: super::EndpointConfig::report_ack_delay

use super::header::PacketHeader;
use super::sent_window::SentPacket;
use super::sequence_buffer::SequenceBuffer;
use crate::Time;
use crate::sequence::Sequence;
use crate::time::saturating_duration;
use std::time::Duration;

/// The byte that says "no delay to report": no packet was accepted since our previous
/// send, or one of them left the ack window, or the mean hold exceeds 254 ms.
pub(crate) const NO_ACK_DELAY: u8 = 255;

/// Bytes the extension adds to every packet's payload.
pub(crate) const ACK_DELAY_BYTES: usize = 1;

/// Packets one header acks: `ack` and the 31 before it.
const ACK_WINDOW: i32 = 32;

/// Received headers remembered to pair each with its predecessor.
const REPLY_LOG_SIZE: usize = 32;

/// The receiver's side: the packets accepted since our last send.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HoldClock {
    /// Sum of their accept times, seconds.
    time_sum: f64,
    count: u32,
    /// The oldest of them.
    oldest: Option<Sequence>,
}

impl HoldClock {
    /// Notes that packet `sequence` was accepted at `time`, when the newest packet
    /// accepted so far is `newest`. A packet already out of every header's ack window
    /// will never be acked: it is not counted (the peer cannot see it either).
    pub(crate) fn on_accept(&mut self, sequence: Sequence, time: Time, newest: Sequence) {
        if newest.distance_from(sequence) >= ACK_WINDOW {
            return;
        }
        self.time_sum += time.as_secs_f64();
        self.count += 1;
        if self.oldest.is_none_or(|o| sequence.is_older_than(o)) {
            self.oldest = Some(sequence);
        }
    }

    /// The byte for a packet sent at `now` whose header acks `ack`, and a fresh start
    /// for the next one.
    pub(crate) fn take(&mut self, now: Time, ack: Sequence) -> u8 {
        let byte = match self.oldest {
            Some(oldest) if self.count > 0 && ack.distance_from(oldest) < ACK_WINDOW => {
                let mean = self.time_sum / f64::from(self.count);
                encode_ms((now.as_secs_f64() - mean) * 1000.0)
            }
            _ => NO_ACK_DELAY,
        };
        *self = Self::default();
        byte
    }
}

/// Milliseconds, rounded, as the byte: 0 to 254, [`NO_ACK_DELAY`] above (a clock that
/// went back holds for 0 ms).
fn encode_ms(ms: f64) -> u8 {
    let rounded = ms.max(0.0).round();
    if rounded <= 254.0 {
        rounded as u8
    } else {
        NO_ACK_DELAY
    }
}

/// A received header, remembered until its successor arrives.
#[derive(Clone, Copy, Debug, Default)]
struct Reply {
    ack: Sequence,
    ack_bits: u32,
    hold: u8,
    /// Accept time.
    time: Time,
}

/// One network RTT sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RttSample {
    /// The received packet that completed it (indexes the RTT history).
    pub(crate) reply: Sequence,
    /// Mean network round trip of the packets it covers (never below 0).
    pub(crate) rtt: Duration,
    /// How many of our packets it covers.
    pub(crate) packets: u32,
    /// The hold the peer reported.
    pub(crate) hold: Duration,
}

/// The sender's side: the last received headers, to pair each with its predecessor.
#[derive(Debug)]
pub(crate) struct ReplyLog {
    replies: SequenceBuffer<Reply>,
}

impl ReplyLog {
    pub(crate) fn new() -> Self {
        Self {
            replies: SequenceBuffer::new(REPLY_LOG_SIZE),
        }
    }

    /// Asks the CPU for the slots of `sequence` and its predecessor
    /// (`crate::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self, sequence: Sequence) {
        self.replies.prefetch(sequence);
        self.replies.prefetch(sequence.prev());
    }

    /// Records the accepted packet `header` carrying `hold`, accepted at `time`, and
    /// returns the samples it completes: its own (when its predecessor arrived) and
    /// its successor's (when that arrived first, reordered).
    pub(crate) fn on_accept(
        &mut self,
        header: &PacketHeader,
        hold: u8,
        time: Time,
        sent: &SequenceBuffer<SentPacket>,
    ) -> [Option<RttSample>; 2] {
        let reply = Reply {
            ack: header.ack,
            ack_bits: header.ack_bits,
            hold,
            time,
        };
        let sequence = header.sequence;
        if self.replies.insert(sequence, reply).is_err() {
            return [None, None];
        }
        let pair = |earlier: Sequence| {
            let later = earlier.next();
            let (Some(a), Some(b)) = (self.replies.get(earlier), self.replies.get(later)) else {
                return None;
            };
            sample(a, b, sent).map(|(rtt, packets)| RttSample {
                reply: later,
                rtt,
                packets,
                hold: Duration::from_millis(u64::from(b.hold)),
            })
        };
        [pair(sequence.prev()), pair(sequence)]
    }
}

/// The mean network round trip and count of our packets `reply` acks that
/// `previous` (the peer's packet before it) did not: the packets the peer accepted
/// between the two, held for `reply.hold` on average.
fn sample(
    previous: &Reply,
    reply: &Reply,
    sent: &SequenceBuffer<SentPacket>,
) -> Option<(Duration, u32)> {
    if reply.hold == NO_ACK_DELAY {
        return None;
    }
    let shift = reply.ack.distance_from(previous.ack);
    // The peer's newest received packet never goes back: a header that says
    // otherwise is not a conforming peer's.
    if shift < 0 {
        return None;
    }
    let covered = if shift < ACK_WINDOW {
        previous.ack_bits << shift
    } else {
        0
    };
    let mut fresh = reply.ack_bits & !covered;
    if fresh == 0 {
        return None;
    }
    let mut total = 0.0;
    let mut packets = 0u32;
    while fresh != 0 {
        let bit = fresh.trailing_zeros();
        fresh &= fresh - 1;
        let ours = sent.get(reply.ack.wrapping_sub(bit as u16))?;
        if ours.skipped {
            return None;
        }
        total += reply.time.secs_since(ours.time);
        packets += 1;
    }
    // The mean in f64 seconds of the caller's clock (a clock that went back gives a
    // negative one: zero), less the hold.
    let mean = saturating_duration(total / f64::from(packets));
    Some((
        mean.saturating_sub(Duration::from_millis(u64::from(reply.hold))),
        packets,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::header::tests::header;
    use super::*;

    /// `d` in milliseconds (exact for whole microseconds).
    fn ms(d: Duration) -> f64 {
        d.as_nanos() as f64 / 1e6
    }

    fn sent_at(times: &[(u16, f64)]) -> SequenceBuffer<SentPacket> {
        let mut sent = SequenceBuffer::new(256);
        for &(s, time) in times {
            let packet = SentPacket {
                time: Time::from_secs_f64(time),
                ..SentPacket::default()
            };
            sent.insert(Sequence(s), packet).expect("fresh");
        }
        sent
    }

    #[test]
    fn the_hold_is_the_mean_wait_of_the_packets_accepted_since_the_last_send() {
        let mut clock = HoldClock::default();
        assert_eq!(
            clock.take(Time::from_secs_f64(1.0), Sequence(0)),
            NO_ACK_DELAY,
            "nothing accepted"
        );
        clock.on_accept(Sequence(10), Time::from_secs_f64(1.000), Sequence(10));
        clock.on_accept(Sequence(11), Time::from_secs_f64(1.010), Sequence(11));
        assert_eq!(
            clock.take(Time::from_secs_f64(1.026), Sequence(11)),
            21,
            "mean of 26 and 16 ms"
        );
        assert_eq!(
            clock.take(Time::from_secs_f64(1.05), Sequence(11)),
            NO_ACK_DELAY,
            "reset by the send"
        );
        clock.on_accept(Sequence(12), Time::from_secs_f64(2.0), Sequence(12));
        assert_eq!(
            clock.take(Time::from_secs_f64(2.3), Sequence(12)),
            NO_ACK_DELAY,
            "held over 254 ms"
        );
        clock.on_accept(Sequence(13), Time::from_secs_f64(3.0), Sequence(13));
        assert_eq!(
            clock.take(Time::from_secs_f64(2.9), Sequence(13)),
            0,
            "a clock that went back"
        );
        // A packet already out of the ack window is never acked: not counted.
        clock.on_accept(Sequence(100), Time::from_secs_f64(4.0), Sequence(140));
        assert_eq!(
            clock.take(Time::from_secs_f64(4.01), Sequence(140)),
            NO_ACK_DELAY
        );
        // One that leaves it before the send spoils the mean: nothing is reported.
        clock.on_accept(Sequence(150), Time::from_secs_f64(5.0), Sequence(150));
        clock.on_accept(Sequence(190), Time::from_secs_f64(5.0), Sequence(190));
        assert_eq!(
            clock.take(Time::from_secs_f64(5.01), Sequence(190)),
            NO_ACK_DELAY
        );
    }

    #[test]
    fn the_oldest_packet_counts_while_the_header_s_ack_window_still_covers_it() {
        // A header acking `ack` covers `ack - 31 ..= ack` (ack and 31 ack bits).
        for (ack, covered) in [(200, true), (231, true), (232, false)] {
            let mut clock = HoldClock::default();
            clock.on_accept(Sequence(200), Time::from_secs_f64(1.0), Sequence(200));
            let byte = clock.take(Time::from_secs_f64(1.012), Sequence(ack));
            assert_eq!(byte != NO_ACK_DELAY, covered, "ack {ack}: {byte}");
        }
    }

    #[test]
    fn a_sample_covers_the_packets_newly_acked_since_the_previous_reply() {
        // Our packets 0..=3 sent 0.1 s apart.
        let sent = sent_at(&[(0, 0.0), (1, 0.1), (2, 0.2), (3, 0.3)]);
        let mut log = ReplyLog::new();
        // Reply 7 acks 0 and 1, reply 8 acks 2 and 3 too (held 20 ms on average).
        let first = log.on_accept(&header(7, 1, 0b11), 5, Time::from_secs_f64(0.25), &sent);
        assert_eq!(first, [None, None], "no predecessor yet");
        let [own, next] =
            log.on_accept(&header(8, 3, 0b1111), 20, Time::from_secs_f64(0.47), &sent);
        assert_eq!(next, None);
        let own = own.expect("sample");
        // (0.47 - 0.2) and (0.47 - 0.3): mean 220 ms, minus 20 ms held.
        assert_eq!((own.reply, own.packets), (Sequence(8), 2));
        assert!((ms(own.rtt) - 200.0).abs() < 1e-6, "{own:?}");
        assert_eq!(ms(own.hold), 20.0);
    }

    #[test]
    fn a_reordered_reply_completes_its_successor() {
        let sent = sent_at(&[(0, 0.0), (1, 0.1)]);
        let mut log = ReplyLog::new();
        log.on_accept(
            &header(4, 0xffff, 0),
            NO_ACK_DELAY,
            Time::from_secs_f64(0.0),
            &sent,
        );
        // Reply 6 arrives before reply 5.
        let early = log.on_accept(&header(6, 1, 0b11), 10, Time::from_secs_f64(0.31), &sent);
        assert_eq!(early, [None, None]);
        let [five, six] = log.on_accept(&header(5, 0, 0b1), 0, Time::from_secs_f64(0.35), &sent);
        let five = five.expect("5 follows 4");
        assert!((ms(five.rtt) - 350.0).abs() < 1e-6);
        let six = six.expect("6 follows 5");
        assert_eq!((six.reply, six.packets), (Sequence(6), 1));
        assert!((ms(six.rtt) - 200.0).abs() < 1e-6, "{six:?}");
    }

    #[test]
    fn a_reply_with_the_same_ack_samples_the_gaps_it_fills() {
        let sent = sent_at(&[(0, 0.0), (1, 0.1), (2, 0.2), (3, 0.3)]);
        let mut log = ReplyLog::new();
        // Reply 7 acks 3, 1 and 0; reply 8 acks 2 as well (reordered on its way).
        log.on_accept(&header(7, 3, 0b1101), 0, Time::from_secs_f64(0.4), &sent);
        let [own, _] = log.on_accept(&header(8, 3, 0b1111), 0, Time::from_secs_f64(0.5), &sent);
        let own = own.expect("packet 2 is newly acked");
        assert_eq!(own.packets, 1);
        assert!((ms(own.rtt) - 300.0).abs() < 1e-6, "{own:?}");
    }

    #[test]
    fn an_ack_a_whole_window_ahead_makes_every_bit_fresh() {
        let sent = sent_at(&[(0, 0.0), (31, 0.1), (32, 0.2)]);
        let mut log = ReplyLog::new();
        log.on_accept(&header(10, 0, 0b1), 0, Time::from_secs_f64(0.1), &sent);
        // 32 ahead: no bit of the previous reply's window overlaps this one's.
        let [own, _] = log.on_accept(&header(11, 32, 0b11), 0, Time::from_secs_f64(0.4), &sent);
        let own = own.expect("packets 32 and 31 are newly acked");
        assert_eq!(own.packets, 2);
        assert!((ms(own.rtt) - 250.0).abs() < 1e-6, "{own:?}");
    }

    #[test]
    fn nothing_is_sampled_from_headers_that_cannot_be_paired_honestly() {
        let sent = sent_at(&[(0, 0.0), (1, 0.1), (2, 0.2)]);
        let mut log = ReplyLog::new();
        log.on_accept(&header(1, 1, 0b11), 0, Time::from_secs_f64(0.2), &sent);
        // No delay reported.
        assert_eq!(
            log.on_accept(
                &header(2, 2, 0b111),
                NO_ACK_DELAY,
                Time::from_secs_f64(0.3),
                &sent
            ),
            [None, None]
        );
        // Nothing new acked.
        assert_eq!(
            log.on_accept(&header(3, 2, 0b111), 3, Time::from_secs_f64(0.4), &sent),
            [None, None]
        );
        // An ack that goes back.
        assert_eq!(
            log.on_accept(&header(4, 1, 0b1), 3, Time::from_secs_f64(0.5), &sent),
            [None, None]
        );
        // An ack of a packet no longer in the sent window.
        assert_eq!(
            log.on_accept(&header(5, 300, 0b1), 3, Time::from_secs_f64(0.6), &sent),
            [None, None]
        );
    }
}
