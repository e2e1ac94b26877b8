//! The simulated network: nodes addressed by id, a link model per direction, a
//! delivery queue on virtual time, and an oracle log of what was delivered.

use super::link::{Fate, Link, LinkConfig};
use super::rng::Rng;
use crate::Time;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

/// The address of a simulated endpoint. Any `u32` is a valid address; nodes need no
/// registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// The id the network gives each datagram handed to [`Network::send`], in send order
/// from 0. A duplicated datagram's copies share the id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DatagramId(pub u64);

/// A datagram arriving at its destination.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The datagram's id.
    pub id: DatagramId,
    /// The sender.
    pub from: NodeId,
    /// The receiver.
    pub to: NodeId,
    /// Virtual time of the send.
    pub sent_at: Time,
    /// Virtual time of the delivery.
    pub delivered_at: Time,
    /// `true` for the second copy of a duplicated datagram.
    pub duplicate: bool,
    /// The bytes.
    pub payload: Vec<u8>,
}

/// One line of the oracle log: a datagram that was actually delivered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OracleRecord {
    /// The datagram's id.
    pub id: DatagramId,
    /// The sender.
    pub from: NodeId,
    /// The receiver.
    pub to: NodeId,
    /// Virtual time of the send.
    pub sent_at: Time,
    /// Virtual time of the delivery.
    pub delivered_at: Time,
    /// `true` for the second copy of a duplicated datagram.
    pub duplicate: bool,
    /// Bytes delivered.
    pub len: usize,
}

/// Totals over the life of a [`Network`], and what it holds now (named by the
/// crate's stats rule: see `channel::LayerStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetworkStats {
    /// Datagrams handed to `send`.
    pub datagrams_sent: u64,
    /// Datagrams the links lost (at random, by their loss models).
    pub datagrams_dropped: u64,
    /// Datagrams a link's bottleneck dropped: its queue was full (see
    /// [`LinkConfig::bandwidth`]).
    pub datagrams_dropped_queue_full: u64,
    /// Extra copies the links made.
    pub datagrams_duplicated: u64,
    /// Copies handed out by `poll` (originals and duplicates).
    pub datagrams_delivered: u64,
    /// Copies scheduled and not yet delivered.
    pub in_flight_len: usize,
}

struct Scheduled {
    at: Time,
    order: u64,
    delivery: Delivery,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    // Reversed: BinaryHeap is a max-heap and we pop the earliest; ties go in the
    // order they were scheduled.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then_with(|| other.order.cmp(&self.order))
    }
}

/// A deterministic simulated network between any number of endpoints, on virtual
/// time.
///
/// Datagrams go in with [`send`](Self::send) and come out of [`poll`](Self::poll)
/// once the virtual clock reaches their delivery time. Each direction of each pair of
/// nodes has its own [`LinkConfig`] (or the default one) and its own burst state. The
/// same seed and the same calls give the same deliveries on every platform.
///
/// The oracle log ([`oracle`](Self::oracle)) records every delivery, so a test can
/// check what an endpoint believes (acks, loss) against what really happened.
///
/// ```
/// use netproto::Time;
/// use std::time::Duration;
/// use netproto::sim::{LinkConfig, Network, NodeId};
///
/// let (a, b) = (NodeId(0), NodeId(1));
/// let mut net = Network::new(1);
/// net.set_link(a, b, LinkConfig::default().with_latency(Duration::from_millis(100)));
/// net.send(Time::ZERO, a, b, b"ping");
/// assert!(net.poll(Time::from_secs_f64(0.05)).is_none());
/// let d = net.poll(Time::from_secs_f64(0.1)).unwrap();
/// assert_eq!((d.from, d.to, &d.payload[..]), (a, b, &b"ping"[..]));
/// assert_eq!(net.oracle().len(), 1);
/// ```
pub struct Network {
    rng: Rng,
    default_link: LinkConfig,
    links: BTreeMap<(NodeId, NodeId), Link>,
    queue: BinaryHeap<Scheduled>,
    next_id: u64,
    next_order: u64,
    oracle: Vec<OracleRecord>,
    oracle_enabled: bool,
    stats: NetworkStats,
}

impl core::fmt::Debug for Network {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Network")
            .field("default_link", &self.default_link)
            .field("links", &self.links.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Network {
    /// A network whose links are all perfect until configured, seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
            default_link: LinkConfig::PERFECT,
            links: BTreeMap::new(),
            queue: BinaryHeap::new(),
            next_id: 0,
            next_order: 0,
            oracle: Vec::new(),
            oracle_enabled: true,
            stats: NetworkStats::default(),
        }
    }

    /// Sets the link of every direction not configured with
    /// [`set_link`](Self::set_link) (affects directions not yet used).
    pub fn set_default_link(&mut self, config: LinkConfig) {
        self.default_link = config;
    }

    /// Configures the direction `from -> to` (keeping its burst state).
    pub fn set_link(&mut self, from: NodeId, to: NodeId, config: LinkConfig) {
        self.links
            .entry((from, to))
            .and_modify(|l| l.config = config)
            .or_insert_with(|| Link::new(config));
    }

    /// Configures both directions between `a` and `b`.
    pub fn set_link_both(&mut self, a: NodeId, b: NodeId, config: LinkConfig) {
        self.set_link(a, b, config);
        self.set_link(b, a, config);
    }

    /// Turns the oracle log on (the default) or off (for very long runs that do not
    /// need it).
    pub fn set_oracle_enabled(&mut self, enabled: bool) {
        self.oracle_enabled = enabled;
    }

    /// Sends `payload` from `from` to `to` at virtual time `now`. The link decides
    /// its fate at once (drawn from the seeded generator); a delivered copy comes out
    /// of [`poll`](Self::poll) when its time comes.
    pub fn send(&mut self, now: Time, from: NodeId, to: NodeId, payload: &[u8]) -> DatagramId {
        let id = DatagramId(self.next_id);
        self.next_id += 1;
        self.stats.datagrams_sent += 1;
        let default = self.default_link;
        let link = self
            .links
            .entry((from, to))
            .or_insert_with(|| Link::new(default));
        match link.fate(&mut self.rng, now.as_secs_f64(), payload.len()) {
            Fate::Dropped => self.stats.datagrams_dropped += 1,
            Fate::Overflow => self.stats.datagrams_dropped_queue_full += 1,
            Fate::Delivered { first, second } => {
                let delivery = Delivery {
                    id,
                    from,
                    to,
                    sent_at: now,
                    delivered_at: now.plus_secs(first),
                    duplicate: false,
                    payload: payload.to_vec(),
                };
                if let Some(second) = second {
                    self.stats.datagrams_duplicated += 1;
                    let copy = Delivery {
                        delivered_at: now.plus_secs(second),
                        duplicate: true,
                        ..delivery.clone()
                    };
                    self.schedule(copy);
                }
                self.schedule(delivery);
            }
        }
        id
    }

    fn schedule(&mut self, delivery: Delivery) {
        self.stats.in_flight_len += 1;
        let order = self.next_order;
        self.next_order += 1;
        self.queue.push(Scheduled {
            at: delivery.delivered_at,
            order,
            delivery,
        });
    }

    /// The delivery time of the next datagram in flight.
    pub fn next_delivery_time(&self) -> Option<Time> {
        self.queue.peek().map(|s| s.at)
    }

    /// The next datagram due at or before `now`, earliest first (ties in the order
    /// they were scheduled), recorded in the oracle log.
    pub fn poll(&mut self, now: Time) -> Option<Delivery> {
        if self.queue.peek()?.at > now {
            return None;
        }
        let delivery = self.queue.pop()?.delivery;
        self.stats.in_flight_len -= 1;
        self.stats.datagrams_delivered += 1;
        if self.oracle_enabled {
            self.oracle.push(OracleRecord {
                id: delivery.id,
                from: delivery.from,
                to: delivery.to,
                sent_at: delivery.sent_at,
                delivered_at: delivery.delivered_at,
                duplicate: delivery.duplicate,
                len: delivery.payload.len(),
            });
        }
        Some(delivery)
    }

    /// Every delivery so far, in delivery order.
    pub fn oracle(&self) -> &[OracleRecord] {
        &self.oracle
    }

    /// Takes the oracle log, leaving it empty (to check and discard it in chunks).
    pub fn take_oracle(&mut self) -> Vec<OracleRecord> {
        core::mem::take(&mut self.oracle)
    }

    /// Totals so far.
    pub fn stats(&self) -> NetworkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn same_seed_same_deliveries() {
        let run = |seed| {
            let mut net = Network::new(seed);
            net.set_default_link(
                LinkConfig::PERFECT
                    .with_latency(Duration::from_millis(100))
                    .with_jitter(Duration::from_millis(50))
                    .with_loss(0.2)
                    .with_duplicates(0.2),
            );
            let mut out = Vec::new();
            for i in 0..1000u32 {
                let t = f64::from(i) * 0.01;
                net.send(
                    Time::from_secs_f64(t),
                    NodeId(i % 3),
                    NodeId((i + 1) % 3),
                    &i.to_le_bytes(),
                );
                while let Some(d) = net.poll(Time::from_secs_f64(t)) {
                    out.push((d.id, d.delivered_at.as_secs_f64().to_bits(), d.duplicate));
                }
            }
            out
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn deliveries_come_out_in_time_order_and_are_logged() {
        let mut net = Network::new(2);
        net.set_default_link(
            LinkConfig::PERFECT
                .with_latency(Duration::from_millis(100))
                .with_jitter(Duration::from_millis(90)),
        );
        for i in 0..500u32 {
            net.send(
                Time::from_secs_f64(f64::from(i) * 0.001),
                NodeId(0),
                NodeId(1),
                &[],
            );
        }
        let mut last = 0.0;
        let mut count = 0;
        let mut reordered = false;
        let mut last_id = 0;
        while let Some(d) = net.poll(Time::from_secs_f64(10.0)) {
            assert!(d.delivered_at >= Time::from_secs_f64(last));
            assert!(d.delivered_at >= d.sent_at);
            reordered |= d.id.0 < last_id;
            last_id = d.id.0;
            last = d.delivered_at.as_secs_f64();
            count += 1;
        }
        assert_eq!(count, 500);
        assert!(reordered, "jitter reorders");
        assert_eq!(net.oracle().len(), 500);
        assert_eq!(net.stats().in_flight_len, 0);
        assert_eq!(net.take_oracle().len(), 500);
        assert!(net.oracle().is_empty());
    }

    #[test]
    fn links_are_per_direction() {
        let mut net = Network::new(3);
        net.set_link(NodeId(0), NodeId(1), LinkConfig::PERFECT.with_loss(1.0));
        net.send(Time::ZERO, NodeId(0), NodeId(1), b"lost");
        net.send(Time::ZERO, NodeId(1), NodeId(0), b"kept");
        let d = net.poll(Time::ZERO).expect("reverse direction is perfect");
        assert_eq!(d.payload, b"kept");
        assert!(net.poll(Time::from_secs_f64(1.0)).is_none());
        assert_eq!(net.stats().datagrams_dropped, 1);
    }
}
