//! What the server and the load generator of both stacks share: the load (messages,
//! rates, matches), the run parameters, the clock, and the measurements.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netproto::channel::ChannelId;
pub(crate) use netproto_tests::load::*;
use serde_json::{Value, json};

/// Clients the load generator starts connecting per tick, at most.
pub(crate) const CONNECTS_PER_TICK: usize = 25;
/// Handshakes the load generator has in flight at once, at most: the connects ramp up
/// instead of arriving as one burst, which a busy server (or its socket buffer)
/// answers late or drops.
pub(crate) const MAX_HANDSHAKES: usize = 64;
/// Handshakes per client before it counts as not connected: one that is denied or
/// times out is started again, with a new token and a new socket.
pub(crate) const CONNECT_ATTEMPTS: u32 = 5;
/// The longest the clients may take to connect.
pub(crate) const CONNECT_TIMEOUT: f64 = 60.0;
/// The reliable channel (events) and the unreliable one (inputs, snapshots).
pub(crate) const RELIABLE: ChannelId = ChannelId::RELIABLE;
/// See [`RELIABLE`].
pub(crate) const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;
/// The protocol id renet's tokens carry.
pub(crate) const RENET_PROTOCOL_ID: u64 = 0x6e65_7470_726f_746f;

/// The stack under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stack {
    /// This library.
    Netproto,
    /// renet 2 with renet_netcode, secure tokens.
    Renet,
}

impl Stack {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stack::Netproto => "netproto",
            Stack::Renet => "renet",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        match s {
            "netproto" => Ok(Stack::Netproto),
            "renet" => Ok(Stack::Renet),
            _ => Err(format!("unknown stack {s:?} (netproto or renet)")),
        }
    }
}

/// What one server or load generator process runs.
#[derive(Clone, Debug)]
pub(crate) struct Params {
    pub(crate) stack: Stack,
    pub(crate) clients: usize,
    /// Seconds from "every client connected" to the start of the measured window.
    pub(crate) warmup: f64,
    /// Seconds measured.
    pub(crate) seconds: f64,
    /// The longest the load generator waits, after the window, for every reliable
    /// event to arrive.
    pub(crate) drain: f64,
    /// The private key tokens are sealed with (shared by the "backend", here the load
    /// generator, and the server).
    pub(crate) key: [u8; 32],
    /// The server's addresses (one per server instance), for the load generator.
    pub(crate) servers: Vec<SocketAddr>,
    /// netproto's packet rate in good mode on both sides (`CongestionConfig::good_rate`),
    /// when not the benchmark's 120; renet sends every tick whatever this says.
    pub(crate) rate: Option<f64>,
    /// How the server sends its snapshot to every client.
    pub(crate) snapshots: Snapshots,
}

/// How the server sends a tick's snapshot, the same for every client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Snapshots {
    /// Encoded once and shared: renet's `Bytes` cloned to every client, netproto's
    /// `broadcast`. The default.
    Shared,
    /// Encoded for each client, as a game whose clients see different snapshots
    /// would: `netproto::encode` per client for renet, `send` per client for netproto.
    PerClient,
}

impl Snapshots {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::PerClient => "per-client",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        match s {
            "shared" => Ok(Self::Shared),
            "per-client" => Ok(Self::PerClient),
            _ => Err(format!("--snapshots {s}: shared or per-client")),
        }
    }
}

impl Params {
    /// The arguments that give these parameters to a child process.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--stack".into(),
            self.stack.name().into(),
            "--clients".into(),
            self.clients.to_string(),
            "--warmup".into(),
            self.warmup.to_string(),
            "--seconds".into(),
            self.seconds.to_string(),
            "--drain".into(),
            self.drain.to_string(),
            "--key".into(),
            hex(&self.key),
        ];
        if let Some(rate) = self.rate {
            args.push("--rate".into());
            args.push(rate.to_string());
        }
        args.push("--snapshots".into());
        args.push(self.snapshots.name().into());
        if !self.servers.is_empty() {
            args.push("--servers".into());
            args.push(
                self.servers
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        args
    }

    /// Parses what [`to_args`](Self::to_args) wrote.
    pub(crate) fn parse(args: &[String]) -> Result<Self, String> {
        let mut p = Params {
            stack: Stack::Netproto,
            clients: 0,
            warmup: 0.0,
            seconds: 0.0,
            drain: 0.0,
            key: [0; 32],
            servers: Vec::new(),
            rate: None,
            snapshots: Snapshots::Shared,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or(format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--stack" => p.stack = Stack::parse(value)?,
                "--clients" => p.clients = value.parse().map_err(|e| bad(&e))?,
                "--warmup" => p.warmup = value.parse().map_err(|e| bad(&e))?,
                "--seconds" => p.seconds = value.parse().map_err(|e| bad(&e))?,
                "--drain" => p.drain = value.parse().map_err(|e| bad(&e))?,
                "--rate" => p.rate = Some(value.parse().map_err(|e| bad(&e))?),
                "--snapshots" => p.snapshots = Snapshots::parse(value)?,
                "--key" => p.key = unhex(value).ok_or(format!("--key {value}: 64 hex digits"))?,
                "--servers" => {
                    p.servers = value
                        .split(',')
                        .map(|a| a.parse().map_err(|e| bad(&e)))
                        .collect::<Result<_, _>>()?
                }
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        Ok(p)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A 60 Hz schedule: ticks at fixed times from the start; a tick more than two
/// periods late restarts the schedule from now (counted).
#[derive(Debug)]
pub(crate) struct Ticker {
    start: Instant,
    period: Duration,
    /// Ticks since the start (of the current schedule).
    pub(crate) tick: u64,
    /// Ticks run since the first.
    pub(crate) total: u64,
    /// Times the schedule fell behind and restarted.
    pub(crate) late: u64,
}

impl Ticker {
    pub(crate) fn new() -> Self {
        Self {
            start: Instant::now(),
            period: Duration::from_secs(1) / TICK_HZ,
            tick: 0,
            total: 0,
            late: 0,
        }
    }

    /// Sleeps until the next tick is due.
    pub(crate) fn wait(&mut self) {
        self.tick += 1;
        self.total += 1;
        let due = self.start + self.period * (self.tick as u32);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else if now - due > 2 * self.period {
            self.late += 1;
            self.start = now;
            self.tick = 0;
        }
    }
}

/// User and system CPU time of this process so far, microseconds (getrusage).
pub(crate) fn cpu_time_us() -> (u64, u64) {
    use nix::sys::resource::{UsageWho, getrusage};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else {
        return (0, 0);
    };
    let us = |t: nix::sys::time::TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
    (us(usage.user_time()), us(usage.system_time()))
}

/// Datagrams and bytes at a socket (or a set of sockets), each way.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Io {
    pub(crate) datagrams_in: u64,
    pub(crate) bytes_in: u64,
    pub(crate) datagrams_out: u64,
    pub(crate) bytes_out: u64,
}

impl Io {
    /// Adds `o`'s counts.
    pub(crate) fn add(&mut self, o: Io) {
        self.datagrams_in += o.datagrams_in;
        self.bytes_in += o.bytes_in;
        self.datagrams_out += o.datagrams_out;
        self.bytes_out += o.bytes_out;
    }

    fn minus(self, o: Io) -> Io {
        Io {
            datagrams_in: self.datagrams_in - o.datagrams_in,
            bytes_in: self.bytes_in - o.bytes_in,
            datagrams_out: self.datagrams_out - o.datagrams_out,
            bytes_out: self.bytes_out - o.bytes_out,
        }
    }
}

/// What a server's game code counted.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AppCounts {
    pub(crate) inputs: u64,
    pub(crate) events_in: u64,
    pub(crate) events_relayed: u64,
    pub(crate) relay_refused: u64,
    pub(crate) snapshots_sent: u64,
    pub(crate) snapshots_refused: u64,
}

impl AppCounts {
    fn minus(self, o: AppCounts) -> AppCounts {
        AppCounts {
            inputs: self.inputs - o.inputs,
            events_in: self.events_in - o.events_in,
            events_relayed: self.events_relayed - o.events_relayed,
            relay_refused: self.relay_refused - o.relay_refused,
            snapshots_sent: self.snapshots_sent - o.snapshots_sent,
            snapshots_refused: self.snapshots_refused - o.snapshots_refused,
        }
    }

    fn json(&self) -> Value {
        json!({
            "inputs": self.inputs,
            "events_in": self.events_in,
            "events_relayed": self.events_relayed,
            "relay_refused": self.relay_refused,
            "snapshots_sent": self.snapshots_sent,
            "snapshots_refused": self.snapshots_refused,
        })
    }
}

/// The heap allocations made so far by the process (allocations and reallocations).
fn allocations() -> (u64, u64) {
    let s = crate::GLOBAL.stats();
    (
        (s.allocations + s.reallocations) as u64,
        (s.bytes_allocated + s.bytes_reallocated.max(0) as usize) as u64,
    )
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    cpu: (u64, u64),
    allocs: (u64, u64),
    io: Io,
    app: AppCounts,
    ticks: u64,
}

impl Sample {
    fn now(io: Io, app: AppCounts, ticks: u64) -> Self {
        Self {
            at: Instant::now(),
            cpu: cpu_time_us(),
            allocs: allocations(),
            io,
            app,
            ticks,
        }
    }
}

#[derive(Debug)]
enum Phase {
    /// Waiting for every client to connect (until the deadline).
    Connecting {
        deadline: Instant,
    },
    Warmup {
        until: Instant,
    },
    Measuring {
        start: Sample,
        until: Instant,
    },
    /// The window is over; the server runs on until the clients leave.
    After {
        deadline: Instant,
    },
}

/// The server's measurements: every client connected, a warm-up, then the measured
/// window (CPU, allocations, I/O, tick durations), then until the clients leave.
#[derive(Debug)]
pub(crate) struct ServerMeter {
    params: Params,
    phase: Phase,
    ticks: u64,
    tick_ns: Vec<u64>,
    /// Ticks during the window that allocated.
    ticks_allocating: u64,
    tick_start: Option<(Instant, u64)>,
    connected_max: usize,
    report: Option<Value>,
    failure: Option<String>,
}

impl ServerMeter {
    pub(crate) fn new(params: &Params) -> Self {
        let window_ticks = (params.seconds * f64::from(TICK_HZ)) as usize + 64;
        Self {
            params: params.clone(),
            phase: Phase::Connecting {
                deadline: Instant::now() + Duration::from_secs_f64(CONNECT_TIMEOUT + 10.0),
            },
            ticks: 0,
            tick_ns: Vec::with_capacity(window_ticks),
            ticks_allocating: 0,
            tick_start: None,
            connected_max: 0,
            report: None,
            failure: None,
        }
    }

    /// Call at the start of each tick with the clients connected now and the
    /// counters so far. Returns `false` once the server should stop.
    pub(crate) fn begin_tick(&mut self, connected: usize, io: Io, app: AppCounts) -> bool {
        let now = Instant::now();
        self.connected_max = self.connected_max.max(connected);
        match &self.phase {
            Phase::Connecting { deadline } => {
                if connected >= self.params.clients {
                    self.phase = Phase::Warmup {
                        until: now + Duration::from_secs_f64(self.params.warmup),
                    };
                } else if now > *deadline {
                    self.failure = Some(format!(
                        "only {connected} of {} clients connected",
                        self.params.clients
                    ));
                    return false;
                }
            }
            Phase::Warmup { until } => {
                if now >= *until {
                    self.phase = Phase::Measuring {
                        start: Sample::now(io, app, self.ticks),
                        until: now + Duration::from_secs_f64(self.params.seconds),
                    };
                }
            }
            Phase::Measuring { start, until } => {
                if now >= *until {
                    let end = Sample::now(io, app, self.ticks);
                    self.report = Some(self.window_report(start, &end));
                    self.phase = Phase::After {
                        deadline: now + Duration::from_secs_f64(self.params.drain + 30.0),
                    };
                }
            }
            Phase::After { deadline } => {
                if connected == 0 || now > *deadline {
                    return false;
                }
            }
        }
        self.ticks += 1;
        self.tick_start = Some((now, allocations().0));
        true
    }

    /// Call at the end of each tick's work (before sleeping).
    pub(crate) fn end_tick(&mut self) {
        let Some((start, allocs)) = self.tick_start.take() else {
            return;
        };
        if matches!(self.phase, Phase::Measuring { .. })
            && self.tick_ns.len() < self.tick_ns.capacity()
        {
            self.tick_ns.push(start.elapsed().as_nanos() as u64);
            if allocations().0 != allocs {
                self.ticks_allocating += 1;
            }
        }
    }

    fn window_report(&self, start: &Sample, end: &Sample) -> Value {
        let seconds = (end.at - start.at).as_secs_f64();
        let ticks = end.ticks - start.ticks;
        let cpu_user = end.cpu.0 - start.cpu.0;
        let cpu_sys = end.cpu.1 - start.cpu.1;
        let io = end.io.minus(start.io);
        let app = end.app.minus(start.app);
        let mut ns = self.tick_ns.clone();
        ns.sort_unstable();
        let pct = |p: f64| -> f64 {
            if ns.is_empty() {
                return 0.0;
            }
            let i = ((ns.len() as f64 - 1.0) * p).round() as usize;
            ns[i.min(ns.len() - 1)] as f64 / 1000.0
        };
        json!({
            "seconds": seconds,
            "ticks": ticks,
            "cpu_user_us": cpu_user,
            "cpu_sys_us": cpu_sys,
            "allocs": end.allocs.0 - start.allocs.0,
            "alloc_bytes": end.allocs.1 - start.allocs.1,
            "ticks_allocating": self.ticks_allocating,
            "tick_p50_us": pct(0.5),
            "tick_p99_us": pct(0.99),
            "tick_max_us": pct(1.0),
            "io": io_json(&io),
            "app": app.json(),
        })
    }

    /// The report to print when the server stops.
    pub(crate) fn finish(self, io: Io, app: AppCounts, late: u64) -> Value {
        json!({
            "stack": self.params.stack.name(),
            "clients": self.params.clients,
            "connected_max": self.connected_max,
            "failure": self.failure,
            "window": self.report,
            "total_io": io_json(&io),
            "total_app": app.json(),
            "late_ticks": late,
        })
    }
}

fn io_json(io: &Io) -> Value {
    json!({
        "datagrams_in": io.datagrams_in,
        "bytes_in": io.bytes_in,
        "datagrams_out": io.datagrams_out,
        "bytes_out": io.bytes_out,
    })
}

/// The load generator's connects: which client starts a handshake when (at most
/// [`CONNECTS_PER_TICK`] a tick and [`MAX_HANDSHAKES`] in flight), the handshakes that
/// failed started again (up to [`CONNECT_ATTEMPTS`] per client), and what happened,
/// for the report.
#[derive(Debug)]
pub(crate) struct Ramp {
    clients: usize,
    /// The first user never started.
    next: usize,
    /// Users whose handshake failed, to start again.
    retry: std::collections::VecDeque<usize>,
    /// Handshakes started, per user.
    attempts: Vec<u32>,
    in_flight: usize,
    started_this_tick: usize,
    connected: usize,
    retries: u64,
    /// Users that failed every attempt.
    gave_up: u64,
    /// Why handshakes failed, with how many.
    failures: std::collections::BTreeMap<String, u64>,
}

impl Ramp {
    pub(crate) fn new(clients: usize) -> Self {
        Self {
            clients,
            next: 0,
            retry: Default::default(),
            attempts: vec![0; clients],
            in_flight: 0,
            started_this_tick: 0,
            connected: 0,
            retries: 0,
            gave_up: 0,
            failures: Default::default(),
        }
    }

    /// Call once per tick, before [`start`](Self::start).
    pub(crate) fn tick(&mut self) {
        self.started_this_tick = 0;
    }

    /// The next user to start a handshake for now, if the ramp allows one.
    pub(crate) fn start(&mut self) -> Option<usize> {
        if self.started_this_tick >= CONNECTS_PER_TICK || self.in_flight >= MAX_HANDSHAKES {
            return None;
        }
        let user = match self.retry.pop_front() {
            Some(user) => user,
            None if self.next < self.clients => {
                self.next += 1;
                self.next - 1
            }
            None => return None,
        };
        self.attempts[user] += 1;
        self.in_flight += 1;
        self.started_this_tick += 1;
        Some(user)
    }

    /// `user`'s handshake completed.
    pub(crate) fn connected(&mut self) {
        self.in_flight -= 1;
        self.connected += 1;
    }

    /// `user`'s connection ended (`why`): a connection that was up is lost, which fails
    /// the run (counted in `disconnected`); a handshake that failed goes back to the ramp.
    pub(crate) fn ended(
        &mut self,
        user: usize,
        connected: &mut bool,
        disconnected: &mut u64,
        why: &str,
    ) {
        if *connected {
            *connected = false;
            *disconnected += 1;
        } else {
            self.failed(user, why);
        }
    }

    /// `user`'s handshake failed (`why`); returns whether to start it again.
    pub(crate) fn failed(&mut self, user: usize, why: &str) -> bool {
        self.in_flight -= 1;
        *self.failures.entry(why.to_string()).or_default() += 1;
        if self.attempts[user] < CONNECT_ATTEMPTS {
            self.retry.push_back(user);
            self.retries += 1;
            true
        } else {
            self.gave_up += 1;
            false
        }
    }

    fn json(&self) -> Value {
        json!({
            "connected": self.connected,
            "attempts": self.attempts.iter().map(|&a| u64::from(a)).sum::<u64>(),
            "retries": self.retries,
            "gave_up": self.gave_up,
            "failures": self.failures,
        })
    }
}

/// The load generator's phases, on its own clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LoadPhase {
    Connecting,
    Warmup,
    Measuring,
    Drain,
    Done,
}

/// Checks that every reliable event arrives once and in order at every other client
/// of its sender's match.
#[derive(Debug)]
pub(crate) struct Delivery {
    clients: usize,
    /// Events each user sent.
    pub(crate) sent: Vec<u32>,
    /// `next[user * MATCH_SIZE + k]`: the next event `user` expects from the `k`-th
    /// user of its match.
    next: Vec<u32>,
    /// Events that arrived out of order, twice, or from outside the match.
    pub(crate) wrong: u64,
    pub(crate) received: u64,
}

impl Delivery {
    pub(crate) fn new(clients: usize) -> Self {
        Self {
            clients,
            sent: vec![0; clients],
            next: vec![0; clients * MATCH_SIZE],
            wrong: 0,
            received: 0,
        }
    }

    /// `user` received `event`.
    pub(crate) fn received(&mut self, user: usize, event: &Event) {
        self.received += 1;
        let from = usize::from(event.from);
        let m = match_of(user, self.clients);
        if !m.contains(&from) || from == user {
            self.wrong += 1;
            return;
        }
        let slot = &mut self.next[user * MATCH_SIZE + (from - m.start)];
        if event.seq == *slot {
            *slot += 1;
        } else {
            self.wrong += 1;
        }
    }

    /// Events still to arrive.
    pub(crate) fn missing(&self) -> u64 {
        let mut missing = 0;
        for user in 0..self.clients {
            for from in match_of(user, self.clients) {
                if from != user {
                    let got =
                        self.next[user * MATCH_SIZE + (from - from / MATCH_SIZE * MATCH_SIZE)];
                    missing += u64::from(self.sent[from].saturating_sub(got));
                }
            }
        }
        missing
    }

    /// Events every client should receive in all.
    pub(crate) fn expected(&self) -> u64 {
        (0..self.clients)
            .map(|from| {
                u64::from(self.sent[from]) * (match_of(from, self.clients).len() as u64 - 1)
            })
            .sum()
    }
}

/// Where the load generator's window started.
#[derive(Clone, Copy, Debug)]
struct WindowStart {
    at: Instant,
    cpu: (u64, u64),
    io: Io,
    inputs: u64,
    snapshots: u64,
}

/// The load generator's measurements.
#[derive(Debug)]
pub(crate) struct LoadMeter {
    params: Params,
    pub(crate) phase: LoadPhase,
    phase_until: Instant,
    connect_start: Instant,
    connect_seconds: f64,
    start: Option<WindowStart>,
    window: Option<Value>,
    /// Inputs sent and snapshots received (all phases).
    pub(crate) inputs_sent: u64,
    pub(crate) snapshots_received: u64,
    pub(crate) disconnected: u64,
    connected_max: usize,
}

impl LoadMeter {
    pub(crate) fn new(params: &Params) -> Self {
        let now = Instant::now();
        Self {
            params: params.clone(),
            phase: LoadPhase::Connecting,
            phase_until: now + Duration::from_secs_f64(CONNECT_TIMEOUT),
            connect_start: now,
            connect_seconds: 0.0,
            start: None,
            window: None,
            inputs_sent: 0,
            snapshots_received: 0,
            disconnected: 0,
            connected_max: 0,
        }
    }

    /// Moves through the phases: `connected` clients now, `io` at the clients'
    /// sockets so far, `missing` reliable events (computed only in the drain).
    fn update(&mut self, connected: usize, io: Io, missing: impl FnOnce() -> u64) {
        let now = Instant::now();
        match self.phase {
            LoadPhase::Connecting => {
                if connected >= self.params.clients {
                    self.connect_seconds = (now - self.connect_start).as_secs_f64();
                    self.phase = LoadPhase::Warmup;
                    self.phase_until = now + Duration::from_secs_f64(self.params.warmup);
                } else if now > self.phase_until {
                    self.phase = LoadPhase::Done;
                }
            }
            LoadPhase::Warmup if now >= self.phase_until => {
                self.phase = LoadPhase::Measuring;
                self.phase_until = now + Duration::from_secs_f64(self.params.seconds);
                self.start = Some(WindowStart {
                    at: now,
                    cpu: cpu_time_us(),
                    io,
                    inputs: self.inputs_sent,
                    snapshots: self.snapshots_received,
                });
            }
            LoadPhase::Measuring if now >= self.phase_until => {
                if let Some(WindowStart {
                    at,
                    cpu,
                    io: io0,
                    inputs,
                    snapshots: snaps,
                }) = self.start
                {
                    let cpu1 = cpu_time_us();
                    let d = io.minus(io0);
                    self.window = Some(json!({
                        "seconds": (now - at).as_secs_f64(),
                        "cpu_us": (cpu1.0 + cpu1.1) - (cpu.0 + cpu.1),
                        "datagrams_up": d.datagrams_out,
                        "bytes_up": d.bytes_out,
                        "datagrams_down": d.datagrams_in,
                        "bytes_down": d.bytes_in,
                        "inputs_sent": self.inputs_sent - inputs,
                        "snapshots_received": self.snapshots_received - snaps,
                    }));
                }
                self.phase = LoadPhase::Drain;
                self.phase_until = now + Duration::from_secs_f64(self.params.drain);
            }
            LoadPhase::Drain if now >= self.phase_until || missing() == 0 => {
                self.phase = LoadPhase::Done;
            }
            _ => {}
        }
    }

    /// The end of load generator tick `tick`: `connected` clients, `io` at their
    /// sockets so far; the drain checks for missing events twice a second.
    pub(crate) fn end_tick(&mut self, connected: usize, io: Io, delivery: &Delivery, tick: u64) {
        self.connected_max = self.connected_max.max(connected);
        let check = tick.is_multiple_of(30);
        self.update(connected, io, || if check { delivery.missing() } else { 1 });
    }

    /// Whether clients send events now.
    pub(crate) fn sending_events(&self) -> bool {
        matches!(self.phase, LoadPhase::Warmup | LoadPhase::Measuring)
    }

    pub(crate) fn finish(self, delivery: &Delivery, ramp: &Ramp, late: u64) -> Value {
        json!({
            "stack": self.params.stack.name(),
            "clients": self.params.clients,
            "connected_max": self.connected_max,
            "connect_seconds": self.connect_seconds,
            "connect": ramp.json(),
            "window": self.window,
            "events_sent": delivery.sent.iter().map(|&s| u64::from(s)).sum::<u64>(),
            "events_expected": delivery.expected(),
            "events_received": delivery.received,
            "events_missing": delivery.missing(),
            "events_wrong": delivery.wrong,
            "inputs_sent": self.inputs_sent,
            "snapshots_received": self.snapshots_received,
            "disconnected": self.disconnected,
            "late_ticks": late,
        })
    }
}
