//! The arena: a game server and bot clients over real UDP on 127.0.0.1, with the
//! [network simulator](netproto::sim) in between. The engine of the `arena` example
//! (`cargo run --release --example arena`), kept in the library so a test can run it.
//!
//! * A [`Backend`] (what a real game runs as a web service) makes each bot a connect
//!   token for the server, sealed with the private key the server shares.
//! * Each [`Bot`] is a [`UdpClient`](netproto::transport::UdpClient) behind its own
//!   [`SimLink`]: a pair of sockets that put the simulator (latency, jitter, loss,
//!   duplicates, reordering) between the bot and the server.
//! * Bots send their input every tick on the unreliable channel and chat lines now
//!   and then on the reliable one; each line is numbered, so every receiver checks
//!   that the lines of each sender arrive complete and in order.
//! * The [`Host`] moves one entity per client, sends every client all entities at
//!   the snapshot rate as a delta snapshot ([`ArenaView`], unreliable, tracked: each
//!   client's against the newest snapshot it acked), relays each chat line to every
//!   other client and sends the match phase every two seconds (reliable).
//! * After the play time nobody queues anything new, and the arena waits until every
//!   reliable message was acked (the drain), then everyone disconnects.
//!
//! [`Arena::run`] drives it all from one thread, and calls back with a [`Live`]
//! snapshot for the display; the [`Summary`] says what was sent, what arrived, and
//! whether anything went wrong.

mod backend;
pub use backend::Backend;
mod bot;
mod host;
mod link;
mod message;
mod report;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netproto::channel::ChannelId;
use netproto::sim::LinkConfig;
use netproto::transport::Config;

pub use bot::{Bot, BotLive, BotStats};
pub use host::{ClientLive, ClientTally, Host, MAX_CLIENTS, SnapshotBytesTally};
pub use link::{SimLink, WireStats};
pub use message::{ArenaMessage, ArenaView, EntityView, Motion, SNAPSHOT_BYTES, SnapshotBytes};
pub use report::{BotRow, EstimateLog, Live, LiveBot, Summary};

/// The reliable-ordered channel of [`LayerConfig::default`](netproto::channel::LayerConfig).
pub const RELIABLE: ChannelId = ChannelId::RELIABLE;

/// The settings of both sides: a 60 Hz game that sends its input every frame, so
/// [`Config::fast_paced`]'s packet a frame in good mode, and 30 packets a second in
/// bad mode, enough for the 20 Hz snapshots (the preset's 20 would queue them), with
/// [`MAX_CLIENTS`] slots.
pub fn config() -> Config {
    let mut config = Config::fast_paced();
    config.connection.congestion.bad_rate = 30.0;
    config.max_clients = MAX_CLIENTS;
    config
}
/// The unreliable channel of [`LayerConfig::default`](netproto::channel::LayerConfig).
pub const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;

/// Why the arena could not run.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    /// A socket failed.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] netproto::transport::TransportError),
    /// A connect token could not be made.
    #[error("connect token: {0}")]
    Token(#[from] netproto::netcode::TokenError),
    /// The configuration cannot run.
    #[error("invalid arena configuration: {0}")]
    Config(String),
}

/// Messages sent, as netproto bits and as a naive byte encoding
/// ([`NaiveSize`](crate::game::NaiveSize)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Messages.
    pub messages: u64,
    /// Their netproto size, bits (type id included).
    pub bits: u64,
    /// Their naive size, bytes (a one-byte type tag included).
    pub naive_bytes: u64,
}

impl Tally {
    /// Counts one message.
    pub fn add(&mut self, bits: usize, naive_bytes: usize) {
        self.messages += 1;
        self.bits += bits as u64;
        self.naive_bytes += naive_bytes as u64;
    }

    /// The sum of two tallies.
    pub fn plus(self, other: Tally) -> Tally {
        Tally {
            messages: self.messages + other.messages,
            bits: self.bits + other.bits,
            naive_bytes: self.naive_bytes + other.naive_bytes,
        }
    }
}

/// The number a bot put at the start of a chat line (`#17 gg` is 17).
pub(crate) fn chat_number(text: &str) -> Option<u64> {
    text.strip_prefix('#')?.split(' ').next()?.parse().ok()
}

/// How the arena runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ArenaConfig {
    /// Bot clients (0 for a server alone), at most [`MAX_CLIENTS`].
    pub bots: usize,
    /// Seconds of play; then the drain, at most `drain_limit` seconds.
    pub seconds: f64,
    /// Most seconds to wait for every reliable message to be acked after play.
    pub drain_limit: f64,
    /// Game ticks per second (inputs, entity movement).
    pub tick_rate: f64,
    /// The server sends the entities every this many ticks.
    pub snapshot_every: u64,
    /// Chat lines per bot per second, on average.
    pub chat_rate: f64,
    /// The link of every bot (both ways). With `spread`, bot `i` of `n` gets the
    /// latency and jitter scaled by `0.4 + 1.2 * i / (n - 1)`: the same mean, and a
    /// range of round trips either side of the congestion threshold.
    pub link: LinkConfig,
    /// Spread the bots' latencies around `link.latency`.
    pub spread: bool,
    /// Seeds the simulator and the bots.
    pub seed: u64,
    /// Seconds between two [`Live`] snapshots.
    pub display_interval: f64,
}

impl Default for ArenaConfig {
    /// Six bots for 20 seconds at 60 Hz, entities at 20 Hz, a chat line per bot per
    /// second, over a bad link: 80 ms one way (spread from 32 to 128 ms), ±20 ms
    /// jitter, 5% loss, 1% duplicates, 2% reordered by up to 50 ms.
    fn default() -> Self {
        Self {
            bots: 6,
            seconds: 20.0,
            drain_limit: 5.0,
            tick_rate: 60.0,
            snapshot_every: 3,
            chat_rate: 1.0,
            link: LinkConfig::default()
                .with_latency(Duration::from_millis(80))
                .with_jitter(Duration::from_millis(20))
                .with_loss(0.05)
                .with_duplicates(0.01)
                .with_reordering(0.02, Duration::from_millis(50)),
            spread: true,
            seed: 1,
            display_interval: 1.0,
        }
    }
}

impl ArenaConfig {
    /// The link of bot `index`.
    pub fn link_of(&self, index: usize) -> LinkConfig {
        let mut link = self.link;
        if self.spread && self.bots > 1 {
            let scale = 0.4 + 1.2 * index as f64 / (self.bots - 1) as f64;
            link.latency = link.latency.mul_f64(scale);
            link.jitter = link.jitter.mul_f64(scale);
        }
        link
    }

    fn validate(&self) -> Result<(), ArenaError> {
        let fail = |what: &str| Err(ArenaError::Config(what.to_owned()));
        if self.bots > MAX_CLIENTS {
            return fail("at most 64 bots");
        }
        if !(1.0..=1000.0).contains(&self.tick_rate) {
            return fail("the tick rate must be 1 to 1000 per second");
        }
        if self.snapshot_every == 0 {
            return fail("the snapshot interval must be at least one tick");
        }
        let finite = 0.0..=1e9;
        let times = [self.seconds, self.drain_limit, self.chat_rate];
        if !times.iter().all(|t| finite.contains(t)) {
            return fail("times and rates must not be negative");
        }
        if !(0.001..=1e9).contains(&self.display_interval) {
            return fail("the display interval must be positive");
        }
        let link = &self.link;
        let probabilities = [link.loss, link.duplicate, link.reorder];
        if probabilities.iter().any(|p| !(0.0..=1.0).contains(p)) {
            return fail("loss, duplicate and reorder are probabilities (0 to 100%)");
        }
        let max_delay = Duration::from_secs(1_000_000_000);
        if [link.latency, link.jitter, link.reorder_delay]
            .iter()
            .any(|t| *t > max_delay)
        {
            return fail("latency, jitter and reorder delay must be at most 1e9 s");
        }
        Ok(())
    }
}

/// A server, bots, or both, in one thread.
#[derive(Debug)]
pub struct Arena {
    config: ArenaConfig,
    host: Option<Host>,
    bots: Vec<Bot>,
    /// The address the server sees for each bot (local mode only).
    bot_addresses: Vec<Option<SocketAddr>>,
    /// Each bot's link counters at the previous live snapshot, and its time.
    last_wire: (Vec<WireStats>, f64),
    /// Each bot's estimates, taken at every live snapshot.
    estimates: Vec<EstimateLog>,
}

impl Arena {
    /// The server and the bots in this process, the bots reaching the server over
    /// their simulated links on 127.0.0.1.
    pub fn local(config: ArenaConfig) -> Result<Self, ArenaError> {
        config.validate()?;
        let mut backend = Backend::random();
        let host = Host::bind(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            backend.private_key().clone(),
        )?;
        let bots = Self::make_bots(&config, host.address()?, &mut backend)?;
        let bot_addresses = bots.iter().map(|b| b.server_side_address().ok()).collect();
        Ok(Self {
            config,
            host: Some(host),
            last_wire: (vec![WireStats::default(); bots.len()], 0.0),
            estimates: vec![EstimateLog::default(); bots.len()],
            bots,
            bot_addresses,
        })
    }

    /// The server alone, bound at `addr` (the bots come from other processes, with
    /// tokens of the insecure development key: see [`Backend::insecure_dev`]).
    pub fn server(config: ArenaConfig, addr: SocketAddr) -> Result<Self, ArenaError> {
        config.validate()?;
        let backend = Backend::insecure_dev();
        Ok(Self {
            host: Some(Host::bind(addr, backend.private_key().clone())?),
            bots: Vec::new(),
            bot_addresses: Vec::new(),
            last_wire: (Vec::new(), 0.0),
            estimates: Vec::new(),
            config,
        })
    }

    /// Bots alone, reaching the server at `server` through their simulated links
    /// (tokens of the insecure development key, like the server alone).
    pub fn clients(config: ArenaConfig, server: SocketAddr) -> Result<Self, ArenaError> {
        config.validate()?;
        let bots = Self::make_bots(&config, server, &mut Backend::insecure_dev())?;
        Ok(Self {
            bot_addresses: vec![None; bots.len()],
            last_wire: (vec![WireStats::default(); bots.len()], 0.0),
            estimates: vec![EstimateLog::default(); bots.len()],
            host: None,
            bots,
            config,
        })
    }

    fn make_bots(
        config: &ArenaConfig,
        server: SocketAddr,
        backend: &mut Backend,
    ) -> Result<Vec<Bot>, ArenaError> {
        (0..config.bots)
            .map(|i| {
                let seed = config.seed.wrapping_mul(1000).wrapping_add(i as u64);
                Bot::new(i as u8, server, config.link_of(i), seed, backend)
            })
            .collect()
    }

    /// The server's address, when this arena has the server.
    pub fn server_address(&self) -> Option<SocketAddr> {
        self.host.as_ref().and_then(|h| h.address().ok())
    }

    /// Runs the play time, the drain and the goodbyes, calling `on_live` every
    /// display interval; returns what happened. A server alone runs for the play
    /// time, or until every client that came has left.
    pub fn run(mut self, mut on_live: impl FnMut(&Live)) -> Result<Summary, ArenaError> {
        let start = Instant::now();
        let tick = Duration::from_secs_f64(1.0 / self.config.tick_rate);
        let chat_chance = self.config.chat_rate / self.config.tick_rate;
        let play = Duration::from_secs_f64(self.config.seconds);
        let drain_limit = play + Duration::from_secs_f64(self.config.drain_limit);
        let mut next_tick = start;
        let mut next_live = start;
        let mut drained_at = None;
        loop {
            self.pump()?;
            let now = Instant::now();
            let elapsed = now - start;
            let playing = elapsed < play;
            // The game runs during the play time; the drain only moves packets, so that
            // everything queued either arrives or is lost before the counts are taken.
            if playing && now >= next_tick {
                for bot in &mut self.bots {
                    bot.tick(chat_chance);
                }
                if let Some(host) = &mut self.host {
                    host.tick(self.config.tick_rate, self.config.snapshot_every);
                }
                next_tick += tick;
                // Far behind (a stalled machine): skip the missed ticks.
                if now > next_tick + 5 * tick {
                    next_tick = now + tick;
                }
            }
            if now >= next_live {
                let live = self.live(elapsed.as_secs_f64(), playing);
                on_live(&live);
                next_live += Duration::from_secs_f64(self.config.display_interval);
            }
            if self.bots.is_empty() {
                let host = self.host.as_ref();
                if !playing || host.is_some_and(Host::all_left) {
                    break;
                }
            } else if !playing {
                if self.is_drained() {
                    drained_at = Some(elapsed.saturating_sub(play).as_secs_f64());
                    break;
                }
                if elapsed >= drain_limit {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // The summary is taken before the goodbyes: a disconnect before this point is
        // a failure, the ones that follow are the plan.
        let mut summary = self.summary(drained_at);
        self.goodbye()?;
        summary.elapsed = start.elapsed().as_secs_f64();
        Ok(summary)
    }

    fn pump(&mut self) -> Result<(), ArenaError> {
        for bot in &mut self.bots {
            bot.pump()?;
        }
        if let Some(host) = &mut self.host {
            host.pump()?;
        }
        Ok(())
    }

    /// Every reliable message acked, on every side this arena runs.
    fn is_drained(&self) -> bool {
        self.bots.iter().all(|b| b.is_connected() && b.is_drained())
            && self.host.as_ref().is_none_or(Host::is_drained)
    }

    /// The bots disconnect (a server alone disconnects everyone), and the links carry
    /// the disconnect packets for a moment (until the server saw everyone leave, at
    /// most half a second).
    fn goodbye(&mut self) -> Result<(), ArenaError> {
        for bot in &mut self.bots {
            bot.disconnect();
        }
        if self.bots.is_empty()
            && let Some(host) = &mut self.host
        {
            host.disconnect_all();
        }
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until && !self.host.as_ref().is_some_and(Host::all_left) {
            self.pump()?;
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// A live snapshot; each bot's link truth is measured since the last one.
    fn live(&mut self, t: f64, playing: bool) -> Live {
        let server = self.host.as_ref().map(Host::live).unwrap_or_default();
        let wire: Vec<WireStats> = self.bots.iter().map(Bot::link_stats).collect();
        let (last, since) = std::mem::replace(&mut self.last_wire, (wire.clone(), t));
        let bots = self
            .bots
            .iter()
            .enumerate()
            .map(|(i, bot)| {
                let client = bot.live();
                if let Some(stats) = &client.stats {
                    self.estimates[i].record(stats);
                }
                LiveBot {
                    index: bot.index(),
                    link: self.config.link_of(i),
                    client,
                    server: self.bot_addresses[i]
                        .and_then(|a| server.iter().find(|c| c.address == a).copied()),
                    stats: bot.stats().clone(),
                    wire: wire[i].since(&last[i]),
                    seconds: t - since,
                }
            })
            .collect();
        Live {
            t,
            playing,
            bots,
            server,
            connected: self.host.as_ref().map(Host::connected),
        }
    }

    fn summary(&self, drained_at: Option<f64>) -> Summary {
        let host = self.host.as_ref();
        let rows = self
            .bots
            .iter()
            .enumerate()
            .map(|(i, bot)| {
                let tally = self.bot_addresses[i]
                    .and_then(|a| host.and_then(|h| h.tallies().get(&a)))
                    .cloned();
                BotRow {
                    index: bot.index(),
                    link: self.config.link_of(i),
                    last: bot.live(),
                    bot: bot.stats().clone(),
                    server: tally,
                    wire: bot.link_stats(),
                    estimates: self.estimates[i],
                }
            })
            .collect();
        let mut summary = Summary::new(
            rows,
            host.map(|h| (h.sent(), h.tallies().clone())),
            self.config.seconds,
            drained_at,
        );
        summary.snapshot_bytes = host.map(Host::snapshot_bytes);
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_lines_carry_their_number() {
        assert_eq!(chat_number("#17 gg"), Some(17));
        assert_eq!(chat_number("#0"), Some(0));
        assert_eq!(chat_number("17 gg"), None);
        assert_eq!(chat_number("#x gg"), None);
    }

    #[test]
    fn the_spread_keeps_the_mean_latency() {
        let config = ArenaConfig::default();
        let n = config.bots;
        let latency = |i| config.link_of(i).latency.as_secs_f64();
        let mean = (0..n).map(latency).sum::<f64>() / n as f64;
        assert!((mean - config.link.latency.as_secs_f64()).abs() < 1e-9);
        assert!(config.link_of(0).latency < config.link_of(n - 1).latency);
    }
}
