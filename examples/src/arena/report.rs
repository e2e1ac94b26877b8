//! What the arena shows: the live table while it runs, and the summary at the end.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

use netproto::connection::{LinkStats, Mode};
use netproto::sim::LinkConfig;

use super::{BotLive, BotStats, ClientLive, ClientTally, SnapshotBytesTally, Tally, WireStats};

/// A live snapshot of the arena.
#[derive(Clone, Debug, PartialEq)]
pub struct Live {
    /// Seconds since the start.
    pub t: f64,
    /// `false` once the play time is over (draining).
    pub playing: bool,
    /// Each bot.
    pub bots: Vec<LiveBot>,
    /// Each connected client, as the server sees it (when the arena has the server).
    pub server: Vec<ClientLive>,
    /// Clients connected to the server, when the arena has the server.
    pub connected: Option<usize>,
}

/// A live line of one bot.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveBot {
    /// The bot's number.
    pub index: u8,
    /// Its link.
    pub link: LinkConfig,
    /// Its side of the connection.
    pub client: BotLive,
    /// The server's side, when the arena has the server.
    pub server: Option<ClientLive>,
    /// What it counted.
    pub stats: BotStats,
    /// What its link carried since the previous snapshot: the truth its
    /// connection's estimates are after.
    pub wire: WireStats,
    /// Seconds since the previous snapshot.
    pub seconds: f64,
}

impl LiveBot {
    /// Kilobits per second its link carried up (client to server) and down since the
    /// previous snapshot, with 28 bytes of IPv4 and UDP headers per datagram (as the
    /// connection counts them).
    pub fn wire_kbps(&self) -> (f64, f64) {
        let kbps = |datagrams: u64, bytes: u64| {
            if self.seconds > 0.0 {
                (bytes + 28 * datagrams) as f64 * 8.0 / 1000.0 / self.seconds
            } else {
                0.0
            }
        };
        let w = &self.wire;
        (
            kbps(w.up_datagrams, w.up_bytes),
            kbps(w.down_datagrams, w.down_bytes),
        )
    }
}

/// A bot's connection estimates over a run, to compare with its link's truth.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EstimateLog {
    /// Sum of the loss estimates (percent) taken at the live snapshots.
    pub loss_sum: f64,
    /// Snapshots taken while connected with a loss estimate.
    pub samples: u64,
}

impl EstimateLog {
    /// Takes one snapshot of the estimates.
    pub fn record(&mut self, stats: &LinkStats) {
        // Not known yet (no packet's fate): not a reading.
        if let Some(loss) = stats.endpoint.packet_loss_percent {
            self.loss_sum += loss;
            self.samples += 1;
        }
    }

    /// The mean loss estimate, percent.
    pub fn mean_loss(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.loss_sum / self.samples as f64)
    }
}

/// The end of the arena for one bot.
#[derive(Clone, Debug, PartialEq)]
pub struct BotRow {
    /// The bot's number.
    pub index: u8,
    /// Its link.
    pub link: LinkConfig,
    /// Its side of the connection at the end.
    pub last: BotLive,
    /// What it counted.
    pub bot: BotStats,
    /// What the server counted for it (when the arena has the server).
    pub server: Option<ClientTally>,
    /// What its link carried.
    pub wire: WireStats,
    /// Its connection's estimates over the run.
    pub estimates: EstimateLog,
}

/// How the arena went.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// One row per bot.
    pub rows: Vec<BotRow>,
    /// What the server sent, and counted per client address (when the arena has the
    /// server).
    pub server: Option<(Tally, BTreeMap<SocketAddr, ClientTally>)>,
    /// Seconds the arena ran, goodbyes included.
    pub elapsed: f64,
    /// Seconds of play.
    pub play: f64,
    /// Seconds after the play until every reliable message was acked; `None` when
    /// the drain limit passed first (or there are no bots).
    pub drained_in: Option<f64>,
    /// What went wrong: empty when every reliable message arrived once and in order
    /// and nobody was disconnected.
    pub problems: Vec<String>,
    /// The entity state the server sent: as delta snapshots, and as the per-entity
    /// messages they replace (when the arena has the server).
    pub snapshot_bytes: Option<SnapshotBytesTally>,
}

impl Summary {
    pub(crate) fn new(
        rows: Vec<BotRow>,
        server: Option<(Tally, BTreeMap<SocketAddr, ClientTally>)>,
        play: f64,
        drained_in: Option<f64>,
    ) -> Self {
        let mut summary = Self {
            rows,
            server,
            elapsed: 0.0,
            play,
            drained_in,
            snapshot_bytes: None,
            problems: Vec::new(),
        };
        summary.problems = summary.find_problems();
        summary
    }

    /// `true` when nothing went wrong.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    /// Bytes the hosts put on the simulated wire, both ways: every datagram,
    /// headers, acks, resends, keep-alives and handshakes included.
    pub fn wire_bytes(&self) -> u64 {
        self.rows.iter().map(|r| r.wire.bytes()).sum()
    }

    /// The messages of the arena: those the bots and the server queued; without the
    /// server (bots alone), those the bots queued and received.
    pub fn messages(&self) -> Tally {
        let bots = self
            .rows
            .iter()
            .fold(Tally::default(), |t, r| t.plus(r.bot.sent));
        match &self.server {
            Some((sent, _)) => bots.plus(*sent),
            None => self.rows.iter().fold(bots, |t, r| t.plus(r.bot.received)),
        }
    }

    fn find_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for row in &self.rows {
            let (b, i) = (&row.bot, row.index);
            if !b.connected {
                problems.push(format!("bot {i} never connected"));
            }
            if let Some(why) = &b.ended {
                problems.push(format!("bot {i} ended early: {why}"));
            }
            if b.out_of_order > 0 {
                problems.push(format!(
                    "bot {i}: {} chat lines out of order",
                    b.out_of_order
                ));
            }
            if let Some(s) = &row.server {
                if s.out_of_order > 0 {
                    problems.push(format!(
                        "server: {} lines of bot {i} out of order",
                        s.out_of_order
                    ));
                }
                if s.chats_received != b.chats_sent {
                    problems.push(format!(
                        "bot {i} sent {} chat lines, the server got {}",
                        b.chats_sent, s.chats_received
                    ));
                }
                if b.chats_received != s.chats_relayed {
                    problems.push(format!(
                        "the server relayed {} chat lines to bot {i}, it got {}",
                        s.chats_relayed, b.chats_received
                    ));
                }
                if b.phases_received != s.phases_sent {
                    problems.push(format!(
                        "the server sent {} phase events to bot {i}, it got {}",
                        s.phases_sent, b.phases_received
                    ));
                }
                if let Some(why) = &s.ended {
                    problems.push(format!("the server lost bot {i}: {why}"));
                }
            }
        }
        if !self.rows.is_empty() && self.drained_in.is_none() {
            problems.push("reliable messages still unacked at the drain limit".to_owned());
        }
        if self.rows.is_empty() {
            for (address, s) in self.server.iter().flat_map(|s| &s.1) {
                if s.out_of_order > 0 {
                    problems.push(format!(
                        "{address}: {} chat lines out of order",
                        s.out_of_order
                    ));
                }
            }
        }
        problems
    }
}

/// A text table: a header and rows, columns right-aligned but the first.
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Self {
        Self {
            rows: vec![header.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                let cell = |r: &Vec<String>| r.get(c).map_or(0, |s| s.chars().count());
                self.rows.iter().map(cell).max().unwrap_or(0)
            })
            .collect();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c == 0 {
                    line.push_str(&format!("{cell:<w$}", w = widths[c]));
                } else {
                    line.push_str(&format!("  {cell:>w$}", w = widths[c]));
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

fn mode(stats: Option<&LinkStats>) -> String {
    match stats.map(|s| (s.mode, s.penalty.as_secs_f64())) {
        Some((Mode::Good, _)) => "good".to_owned(),
        Some((Mode::Bad, penalty)) => format!("bad ({penalty:.0}s)"),
        Some(_) => "?".to_owned(),
        None => "-".to_owned(),
    }
}

/// An estimate next to its truth: `est/true` with `unit`, `-` for what is unknown.
fn versus(estimate: Option<f64>, truth: Option<f64>, decimals: usize, unit: &str) -> String {
    let show = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.decimals$}"));
    format!("{}/{}{unit}", show(estimate), show(truth))
}

fn link(link: &LinkConfig) -> String {
    format!(
        "{:.0}ms {:.0}%",
        link.latency.as_secs_f64() * 1e3,
        link.loss * 100.0
    )
}

fn ratio(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

impl fmt::Display for Live {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = if self.playing { "playing" } else { "draining" };
        let clients = self
            .connected
            .map_or(String::new(), |n| format!(", {n} connected"));
        writeln!(f, "t = {:5.1} s, {phase}{clients}", self.t)?;
        if self.bots.is_empty() {
            let mut table = Table::new(&["client", "rtt", "loss", "out kbps", "in kbps", "mode"]);
            for c in &self.server {
                table.row(vec![
                    c.address.to_string(),
                    format!("{:.0}ms", c.stats.endpoint.rtt.as_secs_f64() * 1e3),
                    c.stats
                        .endpoint
                        .packet_loss_percent
                        .map_or_else(|| "-".to_string(), |l| format!("{l:.1}%")),
                    format!("{:.1}", c.stats.sent_kbps),
                    format!("{:.1}", c.stats.received_kbps),
                    mode(Some(&c.stats)),
                ]);
            }
            return write!(f, "{table}");
        }
        let mut table = Table::new(&[
            "bot",
            "link",
            "rtt est/true",
            "loss est/true",
            "up kbps est/true",
            "down kbps est/true",
            "mode",
            "server mode",
            "inputs",
            "chat",
            "snapshots",
        ]);
        for bot in &self.bots {
            let s = bot.client.stats.as_ref();
            let (up, down) = bot.wire_kbps();
            table.row(vec![
                bot.index.to_string(),
                link(&bot.link),
                versus(
                    s.map(|s| s.endpoint.rtt.as_secs_f64() * 1e3),
                    bot.wire.mean_rtt_ms(),
                    0,
                    "ms",
                ),
                versus(
                    s.and_then(|s| s.endpoint.packet_loss_percent),
                    bot.wire.up_loss().map(|l| l * 100.0),
                    1,
                    "%",
                ),
                versus(s.map(|s| s.sent_kbps), Some(up), 1, ""),
                versus(s.map(|s| s.received_kbps), Some(down), 1, ""),
                mode(s),
                mode(bot.server.as_ref().map(|c| &c.stats)),
                bot.stats.inputs_sent.to_string(),
                bot.stats.chats_sent.to_string(),
                bot.stats.snapshots_received.to_string(),
            ]);
        }
        write!(f, "{table}")?;
        writeln!(
            f,
            "est: the bot's connection estimates; true: what its simulated link did since the last table (mean delay up + down; the bot's datagrams lost on the way up; bytes with 28 for IP and UDP)"
        )
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let drained = match self.drained_in {
            Some(t) => format!("drained in {t:.2} s"),
            None => "NOT drained".to_owned(),
        };
        if self.rows.is_empty() {
            writeln!(f, "Arena summary: the server alone, {:.1} s", self.elapsed)?;
        } else {
            writeln!(
                f,
                "Arena summary: {} bots, {:.1} s of play, {drained}, {:.1} s in all",
                self.rows.len(),
                self.play,
                self.elapsed
            )?;
        }
        if !self.rows.is_empty() {
            let mut table = Table::new(&[
                "bot",
                "link",
                "rtt est/true",
                "error",
                "loss est/true",
                "mode",
                "inputs sent",
                "delivered",
                "chat sent",
                "delivered",
                "relayed",
                "received",
                "phases",
                "snapshots (deltas)",
                "datagrams up/down",
                "in order",
            ]);
            for row in &self.rows {
                let (b, s) = (&row.bot, row.server.as_ref());
                let stats = row.last.stats.as_ref();
                let from_server =
                    |f: fn(&ClientTally) -> u64| s.map_or("-".to_owned(), |s| f(s).to_string());
                let order_ok = b.out_of_order == 0 && s.is_none_or(|s| s.out_of_order == 0);
                let (rtt, truth) = (
                    stats.map(|s| s.endpoint.rtt.as_secs_f64() * 1e3),
                    row.wire.mean_rtt_ms(),
                );
                let error = match (rtt, truth) {
                    (Some(rtt), Some(truth)) => format!("{:+.0}ms", rtt - truth),
                    _ => "-".to_owned(),
                };
                table.row(vec![
                    row.index.to_string(),
                    link(&row.link),
                    versus(rtt, truth, 0, "ms"),
                    error,
                    versus(
                        row.estimates.mean_loss(),
                        row.wire.up_loss().map(|l| l * 100.0),
                        1,
                        "%",
                    ),
                    mode(stats),
                    b.inputs_sent.to_string(),
                    s.map_or("-".to_owned(), |s| {
                        format!(
                            "{} ({})",
                            s.inputs_received,
                            ratio(s.inputs_received, b.inputs_sent)
                        )
                    }),
                    b.chats_sent.to_string(),
                    from_server(|s| s.chats_received),
                    from_server(|s| s.chats_relayed),
                    b.chats_received.to_string(),
                    format!("{}/{}", b.phases_received, from_server(|s| s.phases_sent)),
                    format!(
                        "{}/{} ({})",
                        b.snapshots_received,
                        from_server(|s| s.snapshots_sent),
                        from_server(|s| s.snapshots_delta)
                    ),
                    format!("{}/{}", row.wire.up_datagrams, row.wire.down_datagrams),
                    (if order_ok { "yes" } else { "NO" }).to_owned(),
                ]);
            }
            write!(f, "\n{table}")?;
            writeln!(
                f,
                "(rtt: the bot's estimate at the end against its link's mean delay up + down over the run; loss: the bot's estimate averaged over the tables against the share of its datagrams the link lost; inputs and snapshots are unreliable: loss is expected (snapshots: applied by the bot / sent by the server, of which deltas); chat and phases are reliable and ordered)"
            )?;
        } else if let Some((_, tallies)) = &self.server {
            let mut table = Table::new(&[
                "client",
                "inputs",
                "chat",
                "relayed",
                "snapshots",
                "in order",
            ]);
            for (address, s) in tallies {
                table.row(vec![
                    address.to_string(),
                    s.inputs_received.to_string(),
                    s.chats_received.to_string(),
                    s.chats_relayed.to_string(),
                    s.snapshots_sent.to_string(),
                    (if s.out_of_order == 0 { "yes" } else { "NO" }).to_owned(),
                ]);
            }
            write!(f, "\n{table}")?;
        }
        let messages = self.messages();
        let netproto_bytes = messages.bits.div_ceil(8);
        writeln!(f)?;
        writeln!(
            f,
            "messages queued: {} ({} bytes as netproto bits, {} bytes as a naive byte encoding: {:.2}x)",
            messages.messages,
            netproto_bytes,
            messages.naive_bytes,
            netproto_bytes as f64 / messages.naive_bytes.max(1) as f64
        )?;
        if let Some(s) = self.snapshot_bytes.filter(|s| s.per_entity > 0) {
            writeln!(
                f,
                "entity state: {} bytes as delta snapshots, {} bytes as one update message per entity (the arena before its snapshots were deltas): {:.2}x",
                s.delta,
                s.per_entity,
                s.delta as f64 / s.per_entity as f64
            )?;
        }
        if !self.rows.is_empty() {
            let wire = self.wire_bytes();
            writeln!(
                f,
                "bytes on the wire: {wire} (both ways, every datagram: packet headers, acks, resends, keep-alives, handshakes): {:.2}x the naive encoding of the messages alone",
                wire as f64 / messages.naive_bytes.max(1) as f64
            )?;
        }
        if self.passed() {
            writeln!(
                f,
                "result: PASS (every reliable message arrived once and in order, no disconnects)"
            )
        } else {
            writeln!(f, "result: FAIL")?;
            for problem in &self.problems {
                writeln!(f, "  - {problem}")?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(chats_sent: u64, server_received: u64, out_of_order: u64) -> BotRow {
        BotRow {
            index: 0,
            link: LinkConfig::default(),
            last: BotLive::default(),
            bot: BotStats {
                connected: true,
                chats_sent,
                out_of_order,
                ..BotStats::default()
            },
            server: Some(ClientTally {
                chats_received: server_received,
                ..ClientTally::default()
            }),
            wire: WireStats::default(),
            estimates: EstimateLog::default(),
        }
    }

    #[test]
    fn a_complete_run_passes() {
        let summary = Summary::new(vec![row(5, 5, 0)], None, 1.0, Some(0.1));
        assert!(summary.passed(), "{:?}", summary.problems);
        assert!(summary.to_string().contains("result: PASS"));
    }

    #[test]
    fn lost_reordered_or_undrained_messages_fail() {
        let lost = Summary::new(vec![row(5, 4, 0)], None, 1.0, Some(0.1));
        assert_eq!(lost.problems, ["bot 0 sent 5 chat lines, the server got 4"]);
        let reordered = Summary::new(vec![row(5, 5, 1)], None, 1.0, Some(0.1));
        assert_eq!(reordered.problems, ["bot 0: 1 chat lines out of order"]);
        let stuck = Summary::new(vec![row(5, 5, 0)], None, 1.0, None);
        assert!(!stuck.passed());
        assert!(stuck.to_string().contains("result: FAIL"));
    }
}
