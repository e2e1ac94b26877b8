//! Server load benchmark: what a game server costs per player over real UDP on
//! loopback, netproto beside renet 2 (renet_netcode, secure tokens) in the same run.
//!
//! ```sh
//! cargo run --release -p netproto-tests --bin server_load
//! cargo run --release -p netproto-tests --bin server_load -- --clients 100,1000 --seconds 10
//! ```
//!
//! For every client count and stack, this process starts two processes of itself: the
//! server (`serve`) and a load generator (`load`) that runs every client, each on its
//! own socket with a sealed netcode connection. Each client sends an input every tick
//! at 60 Hz (unreliable) and a reliable event once a second; the server sends each
//! client a snapshot at 20 Hz (28 entities, about 300 bytes) and relays each event to
//! the other 9 clients of the sender's match. The snapshot is the same for every
//! client: by default (`--snapshots shared`) each stack encodes it once a tick and
//! shares it (renet: the `Bytes` cloned to every client; netproto: `broadcast`);
//! `--snapshots per-client` encodes it for each client on both sides (renet:
//! `netproto::encode` per client; netproto: `send` per client), what a game whose
//! clients see different snapshots pays. Once every client is connected, a
//! warm-up (`--warmup`, 5 s: the connections settle, each stack's buffers reach their
//! size), then the measured window (`--seconds`), then the load generator stops sending
//! events and waits (at most `--drain` seconds) for every relayed event to arrive, and
//! disconnects. `--rate N` sets netproto's good-mode packet rate on both sides
//! (without it, 120 a second, `CongestionConfig::bulk()`: every update that has news
//! sends); renet sends every tick whatever it says.
//!
//! Measured in the server process over the window: CPU time (getrusage, user +
//! system) per client-tick, heap allocations (a counting global allocator) per tick,
//! and the tick's duration (the server's work, not its sleep); at the clients'
//! sockets: datagrams and bytes each way. Delivery: every reliable event arrived once
//! and in order at every other client of its match. The process exits with 1 when
//! a client failed to connect, was disconnected, or an event was lost.
//!
//! The load generator connects its clients on a ramp, the same for both stacks: at
//! most 25 handshakes started per tick and 64 in flight, and a handshake that is
//! denied or times out started again with a new token and socket (5 attempts per
//! client). The table says how many clients each stack connected and how many
//! handshakes were retried; a stack that did not connect every client fails the run,
//! and the ratio line for that client count says so instead of giving a ratio.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

mod common;
mod netproto_side;
mod renet_side;

use common::{Params, Snapshots, Stack};

/// Counts every heap allocation of the process.
#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const USAGE: &str = "usage: server_load [--clients 100,500,1000,2000] [--seconds 10] [--warmup 5] [--drain 10] [--stacks netproto,renet] [--rate PACKETS_PER_SECOND] [--snapshots shared|per-client] [--json FILE]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => Params::parse(&args[1..]).and_then(|p| match p.stack {
            Stack::Netproto => netproto_side::serve(&p),
            Stack::Renet => renet_side::serve(&p),
        }),
        Some("load") => Params::parse(&args[1..]).and_then(|p| match p.stack {
            Stack::Netproto => netproto_side::load(&p),
            Stack::Renet => renet_side::load(&p),
        }),
        Some("--help" | "-h") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => run(&args),
    };
    if let Err(e) = result {
        eprintln!("server_load: {e}");
        std::process::exit(1);
    }
}

/// What the orchestrator was asked to run.
struct Run {
    clients: Vec<usize>,
    stacks: Vec<Stack>,
    seconds: f64,
    warmup: f64,
    drain: f64,
    /// netproto's good-mode packet rate, if not the default.
    rate: Option<f64>,
    snapshots: Snapshots,
    json: Option<String>,
}

fn parse_run(args: &[String]) -> Result<Run, String> {
    let mut run = Run {
        clients: vec![100, 500, 1000, 2000],
        stacks: vec![Stack::Netproto, Stack::Renet],
        seconds: 10.0,
        warmup: 5.0,
        drain: 10.0,
        rate: None,
        snapshots: Snapshots::Shared,
        json: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}\n{USAGE}");
        match flag.as_str() {
            "--clients" => {
                run.clients = value
                    .split(',')
                    .map(|v| v.parse().map_err(|e| bad(&e)))
                    .collect::<Result<_, _>>()?
            }
            "--stacks" => {
                run.stacks = value
                    .split(',')
                    .map(Stack::parse)
                    .collect::<Result<_, _>>()?
            }
            "--seconds" => run.seconds = value.parse().map_err(|e| bad(&e))?,
            "--warmup" => run.warmup = value.parse().map_err(|e| bad(&e))?,
            "--drain" => run.drain = value.parse().map_err(|e| bad(&e))?,
            "--rate" => run.rate = Some(value.parse().map_err(|e| bad(&e))?),
            "--snapshots" => run.snapshots = Snapshots::parse(value).map_err(|e| bad(&e))?,
            "--json" => run.json = Some(value.clone()),
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    if run.clients.iter().any(|&n| n == 0 || n > 60_000) {
        return Err("client counts must be in 1..=60000".into());
    }
    Ok(run)
}

fn spawn(role: &str, params: &Params) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    Command::new(exe)
        .arg(role)
        .args(params.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the {role} process: {e}"))
}

/// Reads `child`'s stdout up to a line starting with `tag`; returns the rest of it.
fn read_tagged(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    tag: &str,
) -> Option<String> {
    for line in lines {
        let line = line.ok()?;
        if let Some(rest) = line.strip_prefix(tag) {
            return Some(rest.trim().to_string());
        }
    }
    None
}

/// One server and one load generator for `params`; their two reports.
fn run_one(params: &Params) -> Result<(Value, Value), String> {
    let mut server = spawn("serve", params)?;
    let mut server_out = BufReader::new(server.stdout.take().ok_or("no server stdout")?).lines();
    let ready = read_tagged(&mut server_out, "READY ");
    let Some(addresses) = ready else {
        let _ = server.kill();
        let _ = server.wait();
        return Err("the server did not start".into());
    };
    let mut load_params = params.clone();
    load_params.servers = addresses
        .split(',')
        .map(|a| a.parse().map_err(|e| format!("{a}: {e}")))
        .collect::<Result<_, _>>()?;
    let mut load = spawn("load", &load_params)?;
    let mut load_out = BufReader::new(load.stdout.take().ok_or("no load stdout")?).lines();
    let load_report = read_tagged(&mut load_out, "REPORT ");
    let _ = load.wait();
    let Some(load_report) = load_report else {
        let _ = server.kill();
        let _ = server.wait();
        return Err("the load generator failed".into());
    };
    let server_report = read_tagged(&mut server_out, "REPORT ");
    let _ = server.wait();
    let server_report = server_report.ok_or("the server failed")?;
    let parse = |s: &str| serde_json::from_str::<Value>(s).map_err(|e| format!("report: {e}"));
    Ok((parse(&server_report)?, parse(&load_report)?))
}

/// One row of the table, and whether delivery was complete.
struct Row {
    cells: Vec<String>,
    cpu_per_client_tick: f64,
    /// Clients the load generator saw connected at once, at most.
    connected: usize,
    ok: bool,
}

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_f64().unwrap_or(f64::NAN)
}

fn row(stack: Stack, n: usize, server: &Value, load: &Value) -> Row {
    let seconds = f(server, &["window", "seconds"]);
    let ticks = f(server, &["window", "ticks"]);
    let cpu = f(server, &["window", "cpu_user_us"]) + f(server, &["window", "cpu_sys_us"]);
    let per = cpu / (ticks * n as f64);
    let core = cpu / (seconds * 1e6) * 100.0;
    let ls = f(load, &["window", "seconds"]);
    let rate = |key: &str| f(load, &["window", key]) / ls;
    let missing = f(load, &["events_missing"]);
    let wrong = f(load, &["events_wrong"]);
    let disconnected = f(load, &["disconnected"]);
    let failure = server["failure"].as_str().map(str::to_string);
    let connected = load["connected_max"].as_u64().unwrap_or(0) as usize;
    let connect = &load["connect"];
    let retries = connect["retries"].as_u64().unwrap_or(0);
    let ok = connected >= n
        && missing == 0.0
        && wrong == 0.0
        && disconnected == 0.0
        && failure.is_none()
        && server["window"].is_object()
        && load["window"].is_object();
    let delivery = if ok {
        format!("all {} events", f(load, &["events_received"]))
    } else if connected < n {
        format!(
            "FAILED: {connected} of {n} clients connected ({retries} handshakes retried, {} clients gave up; failures: {})",
            connect["gave_up"].as_u64().unwrap_or(0),
            connect["failures"]
        )
    } else {
        format!(
            "FAILED: {missing} missing, {wrong} wrong, {disconnected} disconnected{}",
            failure.map(|f| format!(", {f}")).unwrap_or_default()
        )
    };
    let load_cpu = f(load, &["window", "cpu_us"]) / (ls * 1e6) * 100.0;
    // Per datagram at the clients' sockets, both ways: comparable across stacks that
    // send at different packet rates, and across runs whose ticks fell behind.
    let datagrams = f(load, &["window", "datagrams_up"]) + f(load, &["window", "datagrams_down"]);
    let per_datagram = cpu / (datagrams * seconds / ls);
    Row {
        cells: vec![
            stack.name().into(),
            n.to_string(),
            format!("{connected} ({retries} retried)"),
            format!("{per:.2}"),
            format!("{core:.1}%"),
            format!("{per_datagram:.2}"),
            format!("{:.0}", rate("datagrams_up")),
            format!("{:.0}", rate("bytes_up")),
            format!("{:.0}", rate("datagrams_down")),
            format!("{:.0}", rate("bytes_down")),
            format!("{:.2}", f(server, &["window", "allocs"]) / ticks),
            format!("{:.0}", f(server, &["window", "tick_p50_us"])),
            format!("{:.0}", f(server, &["window", "tick_p99_us"])),
            format!("{:.1}", ticks / seconds),
            format!("{load_cpu:.0}%"),
            delivery,
        ],
        cpu_per_client_tick: per,
        connected,
        ok,
    }
}

const HEADER: [&str; 16] = [
    "stack",
    "clients",
    "connected (handshakes retried)",
    "server CPU µs/client-tick",
    "server % of a core",
    "server CPU µs/datagram",
    "datagrams/s up",
    "bytes/s up",
    "datagrams/s down",
    "bytes/s down",
    "allocs/tick",
    "tick p50 µs",
    "tick p99 µs",
    "ticks/s",
    "load gen % of a core",
    "delivery",
];

fn run(args: &[String]) -> Result<(), String> {
    let run = parse_run(args)?;
    let mut rows = Vec::new();
    let mut reports = Vec::new();
    let mut all_ok = true;
    for &n in &run.clients {
        for &stack in &run.stacks {
            let params = Params {
                stack,
                clients: n,
                warmup: run.warmup,
                seconds: run.seconds,
                drain: run.drain,
                key: netproto::internals::netcode::random_bytes(),
                servers: Vec::new(),
                rate: run.rate,
                snapshots: run.snapshots,
            };
            eprintln!("server_load: {} with {n} clients...", stack.name());
            match run_one(&params) {
                Ok((server, load)) => {
                    let r = row(stack, n, &server, &load);
                    all_ok &= r.ok;
                    rows.push((n, stack, r));
                    reports.push(serde_json::json!({"server": server, "load": load}));
                }
                Err(e) => {
                    eprintln!("server_load: {} with {n} clients: {e}", stack.name());
                    all_ok = false;
                }
            }
        }
    }
    println!("| {} |", HEADER.join(" | "));
    println!("|{}", "---|".repeat(HEADER.len()));
    for (_, _, r) in &rows {
        println!("| {} |", r.cells.join(" | "));
    }
    // A ratio only between two runs that both connected every client and delivered
    // every event: otherwise the line says which did not.
    for &n in &run.clients {
        if !(run.stacks.contains(&Stack::Netproto) && run.stacks.contains(&Stack::Renet)) {
            break;
        }
        let row = |s: Stack| {
            rows.iter()
                .find(|(m, t, _)| *m == n && *t == s)
                .map(|(_, _, r)| r)
        };
        let failed = |s: Stack| match row(s) {
            None => Some(format!("{}'s run failed", s.name())),
            Some(r) if r.connected < n => Some(format!(
                "{} connected {} of {n} clients",
                s.name(),
                r.connected
            )),
            Some(r) if !r.ok => Some(format!("{}'s run failed (see the table)", s.name())),
            Some(_) => None,
        };
        match (row(Stack::Netproto), row(Stack::Renet)) {
            (Some(a), Some(b)) if a.ok && b.ok => println!(
                "{n} clients: netproto's server CPU per client-tick is {:.2}x renet's",
                a.cpu_per_client_tick / b.cpu_per_client_tick
            ),
            _ => {
                let why: Vec<String> = [Stack::Netproto, Stack::Renet]
                    .into_iter()
                    .filter_map(failed)
                    .collect();
                println!("{n} clients: NO RATIO: {}", why.join("; "));
            }
        }
    }
    if let Some(path) = &run.json {
        let text = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
    }
    if all_ok {
        println!(
            "result: PASS (every client connected, stayed connected, and received every relayed event once and in order)"
        );
        Ok(())
    } else {
        Err("FAIL: a stack did not connect every client, a client was disconnected, or an event was lost (see the table)".into())
    }
}
