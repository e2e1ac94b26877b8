//! The arena: a game server and six bot clients over real UDP on 127.0.0.1, with the
//! network simulator in between (a bad link by default), for 20 seconds. Bots send
//! their input every tick (unreliable) and chat (reliable); the server moves their
//! entities, sends everyone the entities at 20 Hz as delta snapshots (unreliable),
//! relays the chat and sends match events (reliable). A live table shows each
//! connection's RTT, loss, bandwidth and congestion mode; the summary says what was
//! sent and delivered, whether every reliable message arrived in order, the entity
//! state's bytes as delta snapshots against one message per entity, and the bytes on
//! the wire against a naive byte encoding. Exits with 1 when a reliable message was lost or
//! out of order, or a bot was disconnected.
//!
//! ```sh
//! cargo run --release --example arena                      # everything in one process
//! cargo run --release --example arena -- --loss 20 --latency 150
//! cargo run --release --example arena -- --conditioner "latency=50ms,jitter=5ms,loss=1%,rate=2mbit"
//! cargo run --release --example arena -- --server 127.0.0.1:40000       # terminal 1
//! cargo run --release --example arena -- --client 127.0.0.1:40000       # terminal 2
//! ```

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use netproto::sim::LinkConfig;
use netproto::transport::conditioner::ConditionerConfig;
use netproto_examples::arena::{Arena, ArenaConfig, Live};

const HELP: &str = "\
The netproto arena: a game server and bot clients over UDP on 127.0.0.1, with the
network simulator in between.

usage: cargo run --release --example arena -- [options]

  --bots N          bot clients, 0 to 64 (default 6)
  --seconds S       seconds of play, then the drain (default 20)
  --drain S         most seconds to wait after play for every reliable message to
                    be acked (default 5; raise it with heavy loss and latency)
  --latency MS      mean one-way latency of the bots' links (default 80)
  --jitter MS       delay variation, plus or minus (default 20)
  --loss PCT        datagrams lost, each way (default 5)
  --duplicates PCT  datagrams delivered twice (default 1)
  --reorder PCT     datagrams held back up to 50 ms more (default 2)
  --no-spread       every bot gets the same latency (by default bot i of n gets
                    0.4 + 1.2 i/(n-1) times it, either side of the congestion
                    threshold)
  --perfect         a perfect link: no latency, jitter, loss, duplicates or
                    reordering (later flags still apply)
  --conditioner SPEC
                    the bots' links in the grammar of netproto's link conditioner
                    and NETPROTO_CONDITIONER, e.g. \"latency=50ms,jitter=5ms,loss=1%,
                    dup=0.5%,reorder=1%,rate=2mbit\": a perfect link with those
                    settings, both ways (later flags still apply; no dir, and the
                    seed is --seed's)
  --tick HZ         game ticks per second (default 60)
  --seed N          seed of the simulator and the bots (default 1)
  --quiet           no live table, just the summary
  --server [ADDR]   run only the server, at ADDR (default 127.0.0.1:40000), for
                    --seconds (default 120) or until every client has left
  --client ADDR     run only the bots, against the server at ADDR
  -h, --help        this text
";

enum Role {
    Local,
    Server(SocketAddr),
    Clients(SocketAddr),
}

struct Options {
    config: ArenaConfig,
    role: Role,
    quiet: bool,
}

fn parse() -> Result<Options, lexopt::Error> {
    use lexopt::prelude::*;
    let mut config = ArenaConfig::default();
    let mut role = Role::Local;
    let mut quiet = false;
    let mut seconds = None;
    let mut parser = lexopt::Parser::from_env();
    let ms = |v: f64| v / 1000.0;
    let pct = |v: f64| v / 100.0;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("bots") => config.bots = parser.value()?.parse()?,
            Long("seconds") => seconds = Some(parser.value()?.parse()?),
            Long("drain") => config.drain_limit = parser.value()?.parse()?,
            Long("latency") => {
                config.link.latency = Duration::from_secs_f64(ms(parser.value()?.parse()?))
            }
            Long("jitter") => {
                config.link.jitter = Duration::from_secs_f64(ms(parser.value()?.parse()?))
            }
            Long("loss") => config.link.loss = pct(parser.value()?.parse()?),
            Long("duplicates") => config.link.duplicate = pct(parser.value()?.parse()?),
            Long("reorder") => config.link.reorder = pct(parser.value()?.parse()?),
            Long("no-spread") => config.spread = false,
            Long("perfect") => config.link = netproto::sim::LinkConfig::PERFECT,
            Long("conditioner") => {
                let spec = parser.value()?;
                let spec = spec.to_str().ok_or("--conditioner: not UTF-8")?;
                let parsed = ConditionerConfig::parse(spec).map_err(|e| e.to_string())?;
                let parsed = parsed.unwrap_or(ConditionerConfig::both(LinkConfig::PERFECT));
                if parsed.outgoing != parsed.incoming {
                    return Err(
                        "--conditioner: the arena's links are the same both ways (no dir)".into(),
                    );
                }
                config.link = parsed.outgoing;
            }
            Long("tick") => config.tick_rate = parser.value()?.parse()?,
            Long("seed") => config.seed = parser.value()?.parse()?,
            Long("quiet") => quiet = true,
            Long("server") => {
                role = match parser.optional_value() {
                    Some(v) => Role::Server(v.parse()?),
                    None => Role::Server(SocketAddr::from(([127, 0, 0, 1], 40000))),
                };
            }
            // `--server ADDR`: the address may follow as its own argument.
            Value(v) if matches!(role, Role::Server(_)) => role = Role::Server(v.parse()?),
            Long("client") => role = Role::Clients(parser.value()?.parse()?),
            Short('h') | Long("help") => {
                print!("{HELP}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    if let Role::Server(_) = role {
        config.bots = 0;
        config.seconds = seconds.unwrap_or(120.0);
    } else if let Some(s) = seconds {
        config.seconds = s;
    }
    Ok(Options {
        config,
        role,
        quiet,
    })
}

/// Prints the live table: redrawn in place on a terminal, every five seconds
/// otherwise (a log).
struct Display {
    terminal: bool,
    quiet: bool,
    lines: usize,
    last: f64,
}

impl Display {
    fn show(&mut self, live: &Live) {
        if self.quiet || (!self.terminal && live.t - self.last < 4.99) {
            return;
        }
        self.last = live.t;
        let text = live.to_string();
        let mut out = std::io::stdout().lock();
        if self.terminal && self.lines > 0 {
            // Up to the first line of the previous table, and clear to the end.
            let _ = write!(out, "\x1b[{}A\x1b[J", self.lines);
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
        self.lines = if self.terminal {
            text.lines().count() + 1
        } else {
            0
        };
    }
}

fn main() -> ExitCode {
    let options = match parse() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("arena: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let config = options.config;
    let arena = match options.role {
        Role::Local => Arena::local(config),
        Role::Server(addr) => Arena::server(config, addr),
        Role::Clients(addr) => Arena::clients(config, addr),
    };
    let arena = match arena {
        Ok(arena) => arena,
        Err(e) => {
            eprintln!("arena: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(addr) = arena.server_address() {
        println!("server listening on {addr}");
    }
    let mut display = Display {
        terminal: std::io::stdout().is_terminal(),
        quiet: options.quiet,
        lines: 0,
        last: 0.0,
    };
    match arena.run(|live| display.show(live)) {
        Ok(summary) => {
            println!("\n{summary}");
            if summary.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("arena: {e}");
            ExitCode::FAILURE
        }
    }
}
