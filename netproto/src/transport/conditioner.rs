//! A link conditioner on the real socket (feature `conditioner`): loss, latency,
//! jitter, duplicates, reordering and a bandwidth cap applied to the datagrams a
//! [`UdpServer`](super::UdpServer), [`UdpClient`](super::UdpClient),
//! [`NetcodeServer`](super::NetcodeServer) or [`NetcodeClient`](super::NetcodeClient)
//! sends and receives, to test a game under bad network conditions without leaving
//! it.
//!
//! The model of each direction is the simulator's
//! ([`LinkConfig`], from [`netproto::sim`](crate::sim)), drawn from a seeded
//! generator: a conditioner given the same datagrams in the same order loses,
//! duplicates and delays the same ones as [`sim::Network`](crate::sim::Network) with
//! the same seed and link. Only the clock is real.
//!
//! # Turning it on
//!
//! In code, on a transport: [`UdpServer::set_conditioner`](super::UdpServer::set_conditioner),
//! [`UdpClient::set_conditioner`](super::UdpClient::set_conditioner), and the same on
//! [`NetcodeServer`](super::NetcodeServer::set_conditioner) and
//! [`NetcodeClient`](super::NetcodeClient::set_conditioner). Without a
//! rebuild: the environment variable [`ENV_VAR`] (`NETPROTO_CONDITIONER`), read when a
//! transport is created, *only when the crate is built with the `conditioner`
//! feature* (a game built without it never reads the variable). A malformed value
//! fails the transport's creation with [`TransportError::Conditioner`](super::TransportError::Conditioner)
//! naming the bad part; an active conditioner logs a `warn` event (target
//! `netproto::conditioner`) with its settings when the transport is created.
//!
//! ```text
//! NETPROTO_CONDITIONER="latency=50ms,jitter=5ms,loss=1%,dup=0.5%,reorder=1%,rate=2mbit" cargo run
//! ```
//!
//! # The grammar
//!
//! Comma-separated `key=value` parts, spaces around them ignored, each key at most
//! once; an empty value turns the conditioner off:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `latency` | duration | mean one-way delay added |
//! | `jitter` | duration | uniform delay variation, plus or minus |
//! | `loss` | probability | datagrams lost, independently |
//! | `dup` | probability | datagrams delivered twice |
//! | `reorder` | probability | datagrams held back by up to `reorder_delay` more |
//! | `reorder_delay` | duration | that extra delay's bound (default with `reorder`: 50 ms) |
//! | `rate` | rate | bandwidth cap, bytes of UDP payload per second |
//! | `queue` | duration | longest wait in the capped link's queue before a drop (default with `rate`: 100 ms) |
//! | `dir` | `both`, `out` or `in` | the directions conditioned (default `both`) |
//! | `seed` | integer | seed of the draws (default 1) |
//!
//! A duration is a number with `us`, `ms` or `s` (at most 60 s); a probability a
//! number with `%` (`0%` to `100%`) or without (`0` to `1`); a rate a number with
//! `bit`, `kbit`, `mbit`, `gbit` (bits per second, powers of 1000) or `B`, `kB`, `MB`
//! (bytes per second). Every value applies to each conditioned direction: on one side
//! with `dir=both`, `latency=50ms` adds 100 ms to the round trip. Conditioning both
//! sides adds both.
//!
//! # Precision
//!
//! Held datagrams are released by the transport's `update`: a delay is as precise as
//! the updates are frequent (a 60 Hz game loop rounds each delay up to the next frame,
//! 17 ms at most). The conditioner holds at most [`MAX_HELD_BYTES`] per direction; a
//! datagram beyond is dropped and counted.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::Time;
use crate::sim::Rng;
use crate::sim::{Fate, Link};
pub use crate::sim::{GilbertElliott, LinkConfig};

/// The environment variable a transport reads its conditioner from (feature
/// `conditioner` only).
pub const ENV_VAR: &str = "NETPROTO_CONDITIONER";

/// Most bytes a conditioner holds back in one direction (16 MiB): beyond, a datagram
/// is dropped ([`DirectionStats::datagrams_dropped_full`]).
pub const MAX_HELD_BYTES: usize = 16 << 20;

/// The default bound of the reordering delay (50 ms).
pub const DEFAULT_REORDER_DELAY: Duration = Duration::from_millis(50);

/// The default queue of a capped link (100 ms).
pub const DEFAULT_QUEUE: Duration = Duration::from_millis(100);

/// Longest duration the grammar accepts (60 s).
const MAX_DURATION: Duration = Duration::from_secs(60);

/// How a conditioner treats each direction, and its seed.
///
/// ```
/// use netproto::transport::conditioner::{ConditionerConfig, LinkConfig};
/// use std::time::Duration;
///
/// let parsed: ConditionerConfig = "latency=50ms,loss=1%,dir=out".parse()?;
/// let link = LinkConfig::default().with_latency(Duration::from_millis(50)).with_loss(0.01);
/// assert_eq!(parsed, ConditionerConfig { outgoing: link, incoming: LinkConfig::PERFECT, seed: 1 });
/// # Ok::<(), netproto::transport::conditioner::ConditionerError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConditionerConfig {
    /// What happens to the datagrams sent.
    pub outgoing: LinkConfig,
    /// What happens to the datagrams received.
    pub incoming: LinkConfig,
    /// The seed of the draws (each direction draws from a generator of its own).
    pub seed: u64,
}

impl ConditionerConfig {
    /// `link` both ways, seed 1.
    pub fn both(link: LinkConfig) -> Self {
        Self {
            outgoing: link,
            incoming: link,
            seed: 1,
        }
    }

    /// This configuration with `seed`.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Parses the [grammar](self#the-grammar); `Ok(None)` for an empty (or blank)
    /// spec: no conditioner.
    pub fn parse(spec: &str) -> Result<Option<Self>, ConditionerError> {
        let mut link = LinkConfig::PERFECT;
        let (mut dir, mut seed) = ("both", 1);
        let mut reorder_delay = None;
        let mut queue = None;
        let mut seen: Vec<&str> = Vec::new();
        if spec.trim().is_empty() {
            return Ok(None);
        }
        for part in spec.split(',').map(str::trim) {
            let bad = |reason: &str| ConditionerError {
                part: part.to_owned(),
                reason: reason.to_owned(),
            };
            let (key, value) = part
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| bad("expected key=value"))?;
            if seen.contains(&key) {
                return Err(bad("this key was already given"));
            }
            seen.push(key);
            match key {
                "latency" => link.latency = duration(value).map_err(bad)?,
                "jitter" => link.jitter = duration(value).map_err(bad)?,
                "loss" => link.loss = probability(value).map_err(bad)?,
                "dup" => link.duplicate = probability(value).map_err(bad)?,
                "reorder" => link.reorder = probability(value).map_err(bad)?,
                "reorder_delay" => reorder_delay = Some(duration(value).map_err(bad)?),
                "rate" => link.bandwidth = rate(value).map_err(bad)?,
                "queue" => queue = Some(duration(value).map_err(bad)?),
                "dir" => {
                    dir = match value {
                        "both" | "out" | "in" => value,
                        _ => return Err(bad("expected both, out or in")),
                    }
                }
                "seed" => {
                    seed = value
                        .parse()
                        .map_err(|_| bad("expected an integer from 0 to 2^64 - 1"))?;
                }
                _ => {
                    return Err(bad(
                        "unknown key (latency, jitter, loss, dup, reorder, reorder_delay, rate, queue, dir, seed)",
                    ));
                }
            }
        }
        // The defaults go with the setting they complete (so that a spec without
        // them equals the `LinkConfig` built with the same `with_*` calls).
        let default_if = |given: bool, default| if given { default } else { Duration::ZERO };
        link.reorder_delay =
            reorder_delay.unwrap_or(default_if(seen.contains(&"reorder"), DEFAULT_REORDER_DELAY));
        link.queue_limit = queue.unwrap_or(default_if(seen.contains(&"rate"), DEFAULT_QUEUE));
        let (outgoing, incoming) = match dir {
            "out" => (link, LinkConfig::PERFECT),
            "in" => (LinkConfig::PERFECT, link),
            _ => (link, link),
        };
        Ok(Some(Self {
            outgoing,
            incoming,
            seed,
        }))
    }

    /// The configuration in [`ENV_VAR`]: `Ok(None)` when it is unset or empty.
    pub fn from_env() -> Result<Option<Self>, ConditionerError> {
        match std::env::var(ENV_VAR) {
            Ok(spec) => Self::parse(&spec).map_err(|mut e| {
                e.reason = format!("{} (in {ENV_VAR})", e.reason);
                e
            }),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(ConditionerError {
                part: String::new(),
                reason: format!("{ENV_VAR} is not valid UTF-8"),
            }),
        }
    }
}

impl core::str::FromStr for ConditionerConfig {
    type Err = ConditionerError;

    /// [`parse`](Self::parse), an empty spec being a perfect link both ways.
    fn from_str(spec: &str) -> Result<Self, ConditionerError> {
        Ok(Self::parse(spec)?.unwrap_or(Self::both(LinkConfig::PERFECT)))
    }
}

/// A malformed conditioner spec: the part at fault and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("link conditioner: bad part `{part}`: {reason}")]
pub struct ConditionerError {
    /// The part (`key=value`) at fault, as given.
    pub part: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A number and its unit suffix: `("50", "ms")` from `"50ms"`.
fn split_unit(value: &str) -> (&str, &str) {
    let at = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    (&value[..at], value[at..].trim())
}

fn number(digits: &str) -> Result<f64, &'static str> {
    match digits.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err("expected a number"),
    }
}

fn duration(value: &str) -> Result<Duration, &'static str> {
    let (digits, unit) = split_unit(value);
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return Err("expected a duration with a unit: us, ms or s (50ms)"),
    };
    let secs = number(digits)? * scale;
    if secs > MAX_DURATION.as_secs_f64() {
        return Err("longer than 60 s");
    }
    Ok(Duration::from_secs_f64(secs))
}

fn probability(value: &str) -> Result<f64, &'static str> {
    let (digits, unit) = split_unit(value);
    let p = match unit {
        "%" => number(digits)? / 100.0,
        "" => number(digits)?,
        _ => return Err("expected a probability: 0% to 100%, or 0 to 1"),
    };
    if p > 1.0 {
        return Err("a probability is at most 100% (1)");
    }
    Ok(p)
}

fn rate(value: &str) -> Result<u64, &'static str> {
    let (digits, unit) = split_unit(value);
    let bytes_per_unit = match unit {
        "bit" => 1.0 / 8.0,
        "kbit" => 1e3 / 8.0,
        "mbit" => 1e6 / 8.0,
        "gbit" => 1e9 / 8.0,
        "B" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        _ => return Err("expected a rate with a unit: bit, kbit, mbit, gbit, B, kB or MB (2mbit)"),
    };
    let bytes = (number(digits)? * bytes_per_unit).round();
    if !(1.0..=1e12).contains(&bytes) {
        return Err("a rate is 1 to 10^12 bytes per second");
    }
    Ok(bytes as u64)
}

/// What one direction of a conditioner did (totals since it was made).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirectionStats {
    /// Datagrams handed to the conditioner.
    pub datagrams_in: u64,
    /// Datagrams lost by the link model (loss, bursts).
    pub datagrams_dropped: u64,
    /// Datagrams dropped by the bandwidth cap's full queue.
    pub datagrams_dropped_queue_full: u64,
    /// Datagrams dropped because the conditioner held [`MAX_HELD_BYTES`] already.
    pub datagrams_dropped_full: u64,
    /// Extra copies made.
    pub datagrams_duplicated: u64,
    /// Copies released (to the socket, or to the connection), duplicates included.
    pub datagrams_released: u64,
    /// Bytes of the copies released.
    pub bytes_released: u64,
    /// Copies held now.
    pub held_len: usize,
}

/// What a conditioner did, each way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConditionerStats {
    /// The datagrams sent.
    pub outgoing: DirectionStats,
    /// The datagrams received.
    pub incoming: DirectionStats,
}

/// A datagram released by a [`Conditioner`].
#[derive(Clone, Debug, PartialEq)]
pub struct Released<A> {
    /// Where it goes (outgoing) or where it came from (incoming).
    pub addr: A,
    /// When it was handed to the conditioner.
    pub sent_at: Time,
    /// When the link model delivers it (it is released at the first poll at or after).
    pub due: Time,
    /// `true` for the second copy of a duplicated datagram.
    pub duplicate: bool,
    /// The bytes.
    pub bytes: Vec<u8>,
}

struct Held<A> {
    order: u64,
    datagram: Released<A>,
}

impl<A> PartialEq for Held<A> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<A> Eq for Held<A> {}
impl<A> PartialOrd for Held<A> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<A> Ord for Held<A> {
    // Reversed: the heap pops the earliest due; ties in the order they were held.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .datagram
            .due
            .total_cmp(&self.datagram.due)
            .then_with(|| other.order.cmp(&self.order))
    }
}

/// One direction: the simulator's link model, its generator, and what it holds.
struct Way<A> {
    link: Link,
    rng: Rng,
    held: BinaryHeap<Held<A>>,
    held_bytes: usize,
    order: u64,
    stats: DirectionStats,
}

impl<A: Copy> Way<A> {
    fn new(config: LinkConfig, seed: u64) -> Self {
        Self {
            link: Link::new(config),
            rng: Rng::new(seed),
            held: BinaryHeap::new(),
            held_bytes: 0,
            order: 0,
            stats: DirectionStats::default(),
        }
    }

    fn push(&mut self, now: Time, addr: A, bytes: &[u8]) {
        self.stats.datagrams_in += 1;
        let (first, second) = match self
            .link
            .fate(&mut self.rng, now.as_secs_f64(), bytes.len())
        {
            Fate::Dropped => {
                self.stats.datagrams_dropped += 1;
                return;
            }
            Fate::Overflow => {
                self.stats.datagrams_dropped_queue_full += 1;
                return;
            }
            Fate::Delivered { first, second } => (first, second),
        };
        for (delay, duplicate) in [(Some(first), false), (second, true)] {
            let Some(delay) = delay else { continue };
            if self.held_bytes + bytes.len() > MAX_HELD_BYTES {
                self.stats.datagrams_dropped_full += 1;
                continue;
            }
            self.stats.datagrams_duplicated += u64::from(duplicate);
            self.held_bytes += bytes.len();
            self.order += 1;
            self.held.push(Held {
                order: self.order,
                datagram: Released {
                    addr,
                    sent_at: now,
                    due: now.plus_secs(delay),
                    duplicate,
                    bytes: bytes.to_vec(),
                },
            });
        }
        self.stats.held_len = self.held.len();
    }

    fn poll(&mut self, now: Time) -> Option<Released<A>> {
        if self.held.peek()?.datagram.due > now {
            return None;
        }
        let datagram = self.held.pop()?.datagram;
        self.held_bytes -= datagram.bytes.len();
        self.stats.datagrams_released += 1;
        self.stats.bytes_released += datagram.bytes.len() as u64;
        self.stats.held_len = self.held.len();
        Some(datagram)
    }
}

/// A link conditioner: two [`LinkConfig`] directions in front of a socket, sans-IO.
///
/// [`UdpServer`](super::UdpServer) and [`UdpClient`](super::UdpClient) hold one
/// when conditioned; use it directly in a transport of your own: hand it each
/// datagram you would send ([`send`](Self::send)) or have received
/// ([`receive`](Self::receive)), and send (or handle) what
/// [`poll_send`](Self::poll_send) (or [`poll_receive`](Self::poll_receive)) releases.
///
/// ```
/// use netproto::Time;
/// use netproto::transport::conditioner::{Conditioner, ConditionerConfig};
///
/// let mut conditioner = Conditioner::new("latency=50ms,dir=out".parse::<ConditionerConfig>()?);
/// conditioner.send(Time::ZERO, "server", b"hello");
/// assert!(conditioner.poll_send(Time::from_secs_f64(0.049)).is_none());
/// let released = conditioner.poll_send(Time::from_secs_f64(0.05)).unwrap();
/// assert_eq!((released.addr, &released.bytes[..]), ("server", &b"hello"[..]));
/// # Ok::<(), netproto::transport::conditioner::ConditionerError>(())
/// ```
pub struct Conditioner<A> {
    config: ConditionerConfig,
    out: Way<A>,
    inc: Way<A>,
}

impl<A> core::fmt::Debug for Conditioner<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Conditioner")
            .field("config", &self.config)
            .field("outgoing", &self.out.stats)
            .field("incoming", &self.inc.stats)
            .finish_non_exhaustive()
    }
}

impl<A: Copy> Conditioner<A> {
    /// A conditioner with `config`: the outgoing direction draws from a generator
    /// seeded with `config.seed` (as [`Network::new`](crate::sim::Network::new)
    /// does), the incoming one from another seed derived from it.
    pub fn new(config: ConditionerConfig) -> Self {
        Self {
            config,
            out: Way::new(config.outgoing, config.seed),
            inc: Way::new(config.incoming, config.seed ^ 0x1c0d_e51d_e0f1_1e55),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ConditionerConfig {
        &self.config
    }

    /// Holds back a datagram to be sent to `to` at `now`, by the outgoing link.
    pub fn send(&mut self, now: Time, to: A, datagram: &[u8]) {
        self.out.push(now, to, datagram);
    }

    /// Holds back a datagram received from `from` at `now`, by the incoming link.
    pub fn receive(&mut self, now: Time, from: A, datagram: &[u8]) {
        self.inc.push(now, from, datagram);
    }

    /// The next datagram to send that is due at `now`, earliest first.
    pub fn poll_send(&mut self, now: Time) -> Option<Released<A>> {
        self.out.poll(now)
    }

    /// The next received datagram due at `now`, earliest first.
    pub fn poll_receive(&mut self, now: Time) -> Option<Released<A>> {
        self.inc.poll(now)
    }

    /// What it did so far.
    pub fn stats(&self) -> ConditionerStats {
        ConditionerStats {
            outgoing: self.out.stats,
            incoming: self.inc.stats,
        }
    }
}

/// The conditioner a transport starts with: the one in [`ENV_VAR`], logged.
pub(crate) fn from_env<A: Copy>(
    side: &'static str,
) -> Result<Option<Conditioner<A>>, ConditionerError> {
    let config = ConditionerConfig::from_env()?;
    if let Some(config) = &config {
        log_active(side, config, "environment");
    }
    Ok(config.map(Conditioner::new))
}

/// The `warn` event of an active conditioner.
pub(crate) fn log_active(side: &'static str, config: &ConditionerConfig, from: &'static str) {
    tracing::warn!(
        target: "netproto::conditioner",
        side,
        from,
        outgoing = ?config.outgoing,
        incoming = ?config.incoming,
        seed = config.seed,
        "link conditioner active: datagrams are delayed, lost and duplicated on purpose"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_spec_parses() {
        let c = ConditionerConfig::parse(
            "latency=50ms, jitter=5ms,loss=1%,dup=0.5%,reorder=1%,rate=2mbit,seed=9",
        )
        .unwrap()
        .unwrap();
        let l = c.outgoing;
        assert_eq!(l, c.incoming);
        assert_eq!(c.seed, 9);
        assert_eq!(
            (l.latency, l.jitter),
            (Duration::from_millis(50), Duration::from_millis(5))
        );
        assert!((l.loss - 0.01).abs() < 1e-12);
        assert!((l.duplicate - 0.005).abs() < 1e-12);
        assert!((l.reorder - 0.01).abs() < 1e-12);
        assert_eq!(l.reorder_delay, DEFAULT_REORDER_DELAY);
        assert_eq!((l.bandwidth, l.queue_limit), (250_000, DEFAULT_QUEUE));
        assert_eq!(ConditionerConfig::parse(" ").unwrap(), None);
        let c = ConditionerConfig::parse("rate=64kB,queue=1s,dir=in,loss=0.25")
            .unwrap()
            .unwrap();
        assert_eq!(c.outgoing, LinkConfig::PERFECT);
        assert_eq!(c.incoming.bandwidth, 64_000);
        assert_eq!(c.incoming.queue_limit, Duration::from_secs(1));
        assert!((c.incoming.loss - 0.25).abs() < 1e-12);
    }

    #[test]
    fn a_malformed_spec_names_its_part() {
        let err = |spec: &str| ConditionerConfig::parse(spec).unwrap_err().to_string();
        assert_eq!(
            err("latency=50ms,loss=1O%"),
            "link conditioner: bad part `loss=1O%`: expected a probability: 0% to 100%, or 0 to 1"
        );
        assert_eq!(
            err("latency=50"),
            "link conditioner: bad part `latency=50`: expected a duration with a unit: us, ms or s (50ms)"
        );
        assert_eq!(
            err("loss=101%"),
            "link conditioner: bad part `loss=101%`: a probability is at most 100% (1)"
        );
        assert_eq!(
            err("lag=5ms"),
            "link conditioner: bad part `lag=5ms`: unknown key (latency, jitter, loss, dup, reorder, reorder_delay, rate, queue, dir, seed)"
        );
        assert_eq!(
            err("latency"),
            "link conditioner: bad part `latency`: expected key=value"
        );
        assert_eq!(
            err("loss=1%,loss=2%"),
            "link conditioner: bad part `loss=2%`: this key was already given"
        );
        assert_eq!(
            err("rate=2mbps"),
            "link conditioner: bad part `rate=2mbps`: expected a rate with a unit: bit, kbit, mbit, gbit, B, kB or MB (2mbit)"
        );
        assert_eq!(
            err("rate=0bit"),
            "link conditioner: bad part `rate=0bit`: a rate is 1 to 10^12 bytes per second"
        );
        assert_eq!(
            err("latency=61s"),
            "link conditioner: bad part `latency=61s`: longer than 60 s"
        );
        assert_eq!(
            err("jitter=-5ms"),
            "link conditioner: bad part `jitter=-5ms`: expected a duration with a unit: us, ms or s (50ms)"
        );
        assert_eq!(
            err("dir=up"),
            "link conditioner: bad part `dir=up`: expected both, out or in"
        );
        assert_eq!(
            err("seed=x"),
            "link conditioner: bad part `seed=x`: expected an integer from 0 to 2^64 - 1"
        );
        assert_eq!(
            err("loss=1%,"),
            "link conditioner: bad part ``: expected key=value"
        );
    }

    #[test]
    fn the_outgoing_direction_draws_as_the_simulator() {
        use crate::sim::{Network, NodeId};
        let link = LinkConfig::PERFECT
            .with_latency(Duration::from_millis(30))
            .with_jitter(Duration::from_millis(20))
            .with_loss(0.1)
            .with_duplicates(0.05);
        let mut net = Network::new(11);
        net.set_link(NodeId(0), NodeId(1), link);
        let mut conditioner = Conditioner::new(ConditionerConfig::both(link).with_seed(11));
        let mut theirs = Vec::new();
        let mut ours = Vec::new();
        for i in 0..2000u32 {
            let now = Time::from_secs_f64(f64::from(i) * 0.001);
            net.send(now, NodeId(0), NodeId(1), &i.to_le_bytes());
            conditioner.send(now, 7u8, &i.to_le_bytes());
            while let Some(d) = net.poll(now) {
                theirs.push((
                    d.payload,
                    d.delivered_at.as_secs_f64().to_bits(),
                    d.duplicate,
                ));
            }
            while let Some(d) = conditioner.poll_send(now) {
                ours.push((d.bytes, d.due.as_secs_f64().to_bits(), d.duplicate));
            }
        }
        assert_eq!(ours, theirs);
        let stats = conditioner.stats().outgoing;
        assert_eq!(stats.datagrams_dropped, net.stats().datagrams_dropped);
        assert_eq!(stats.datagrams_duplicated, net.stats().datagrams_duplicated);
        assert_eq!(conditioner.stats().incoming, DirectionStats::default());
    }
}
