//! The server's work on the load of `server_load`, deterministic: the library's
//! `ServerStack` with `clients` clients on the network simulator (instant delivery, no
//! loss), in simulated time, connected and then run for `ticks` ticks of the same game
//! (an input from every client every tick, an event from each once a second relayed to
//! its match, a snapshot broadcast to everyone every third tick).
//!
//! `server_load` measures CPU time on real sockets, where the kernel's share and the
//! shared machine's noise move single runs by a third. This program runs the same
//! library code without sockets or clocks, so that under callgrind the server's
//! instructions, and with its cache simulation the cache lines it touches, come out
//! the same from run to run (the address map's hash keys are the only randomness):
//!
//! ```text
//! cargo build --release -p netproto-tests --example server_tick_profile
//! valgrind --tool=callgrind --toggle-collect='server_tick_profile::server_tick' \
//!     target/release/examples/server_tick_profile 20 600
//! ```
//!
//! Everything the server does in a tick (its datagrams handled, its events and
//! messages taken, events relayed, the snapshot broadcast, its update) runs inside
//! `server_tick`, which is never inlined: collecting inside it counts the server's work
//! and nothing of the clients', whatever the compiler inlines within.
//!
//! With `--cache-sim=yes --D1=8192,8,64 --LL=16384,4,64` the last-level cache is far
//! smaller than a tick's working set: its misses count, nearly, the lines each tick
//! touches that the previous ticks left cold, which is what a server pays at 100
//! clients on a shared machine (its state is evicted while it sleeps between ticks).
//! It prints the ticks run, the datagrams and payloads the server sent, and the
//! messages delivered, so that two builds can be checked to have done the same work.
//!
//! That last-level cache is smaller than one client's share of a tick and holds the
//! code as well: a line every client reads (a shared configuration) misses again for
//! each, and a build whose code lands at other addresses moves the data misses with
//! it. To count the data lines a client-tick finds cold, model a core's own caches
//! instead, `--cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64`, and divide the
//! `DLmr` and `DLmw` events by clients times ticks: at `100 300`, 46.6 lines per
//! client-tick before issue 44's server slot changes (replay bitmap, boxed user
//! data, shared endpoint configuration), 41.0 after (measured: 2026-12-08).
//!
//! Callgrind's cache model does not show the server's prefetch
//! (`ServerStack::prefetch`): its misses stay at the same loads with and without it
//! (measured: 2026-11-27; why was not found). Run
//! natively with `EVICT_MB=64`, the program writes a 64 MiB buffer before each server
//! tick (what a shared machine does to the caches while a server sleeps) and prints
//! the wall time spent in `server_tick` per client-tick: compare two builds with
//! several alternating runs (`EVICT_MB=0` times the same ticks with warm caches).
//!
//! With `WARM_CODE=N` as well, a second world of N clients runs its own tick (clients
//! and server, untimed) between the eviction and the timed server tick. It shares
//! the library's code with the first world and none of its connections' state, so the
//! timed tick meets warm code and cold state: the difference from the same run without
//! it is what re-fetching the code costs a tick.

use netproto::channel::ChannelId;
use netproto::connection::{ClientEvent, ServerEvent};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto_tests::load::{
    Event, LoadMessage, Roster, SNAPSHOT_EVERY, Snapshot, TICK_HZ, advance, input, sends_event,
    sim_world, snapshot,
};
use netproto_tests::sim_stack::{SimClient, SimServer};

const RELIABLE: ChannelId = ChannelId::RELIABLE;
const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;

/// What the server keeps of the game: who is connected, as which user.
struct Game {
    roster: Roster,
    snap: Snapshot,
    inputs: u64,
    relayed: u64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let clients: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let ticks: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(600);
    let warm_code: Option<usize> = std::env::var("WARM_CODE").ok().and_then(|v| v.parse().ok());
    let mut world = World::new(clients, 11);
    // A small world of its own, ticked only to bring the code back into the caches.
    let mut warmer = warm_code.filter(|&n| n > 0).map(|n| World::new(n, 12));
    let mut evictor = Evictor::from_env();
    while world.game_ticks < ticks {
        world.clients_tick();
        if let Some(w) = warmer.as_mut() {
            w.clients_tick();
        }
        evictor.evict();
        if let Some(w) = warmer.as_mut() {
            w.serve();
        }
        let playing = world.playing;
        let took = world.serve();
        if playing {
            evictor.timed += took;
        }
    }
    let w = &world;
    println!(
        "ticks {} (after {} to connect), clients {clients}: server datagrams \
         sent {}, payloads sent {}; inputs {}, events relayed {} and delivered \
         {}, snapshots delivered {}",
        w.game_ticks,
        w.tick - w.game_ticks,
        w.server.wire().datagrams_sent,
        w.server.stack_stats().payloads_sent,
        w.game.inputs,
        w.game.relayed,
        w.delivered,
        w.snapshots,
    );
    if evictor.buffer.is_some() {
        let per = evictor.timed.as_nanos() as f64 / (clients as f64 * ticks as f64);
        println!("wall time in server_tick: {per:.0} ns per client-tick");
    }
}

/// A server, its clients and the network between them, in simulated time.
struct World {
    server: SimServer<LoadMessage>,
    players: Vec<SimClient<LoadMessage>>,
    net: Network,
    game: Game,
    /// Relayed events and snapshots the clients received.
    delivered: u64,
    snapshots: u64,
    event_seq: Vec<u32>,
    /// The datagrams for the server's next tick.
    to_server: Vec<(NodeId, Vec<u8>)>,
    /// Ticks run, and those run with every client connected.
    tick: u64,
    game_ticks: u64,
    /// Whether every client is connected (the game runs) in this tick.
    playing: bool,
    now: f64,
}

impl World {
    fn new(clients: usize, seed: u64) -> Self {
        let (server, players) = sim_world(clients, seed);
        let mut net = Network::new(3);
        net.set_default_link(LinkConfig::default());
        Self {
            server,
            players,
            net,
            game: Game {
                roster: Roster::new(clients),
                snap: snapshot(0),
                inputs: 0,
                relayed: 0,
            },
            delivered: 0,
            snapshots: 0,
            event_seq: vec![0u32; clients],
            to_server: Vec::new(),
            tick: 0,
            game_ticks: 0,
            playing: false,
            now: 0.0,
        }
    }

    /// The clients' half of a tick: an input every tick, an event once a second,
    /// what they received taken; their datagrams wait in `to_server`.
    fn clients_tick(&mut self) {
        let clients = self.players.len();
        self.now = self.tick as f64 / f64::from(TICK_HZ);
        self.tick += 1;
        if self.tick > 60 * u64::from(TICK_HZ) {
            eprintln!(
                "only {} of {clients} clients connected",
                self.game.roster.connected().len()
            );
            std::process::exit(1);
        }
        self.playing = self.game.roster.connected().len() == clients;
        for (user, p) in self.players.iter_mut().enumerate() {
            while let Some(event) = p.poll_event() {
                if let ClientEvent::Disconnected { reason } = event {
                    eprintln!("client {user} disconnected: {reason}");
                    std::process::exit(1);
                }
            }
            if self.playing {
                let _ = p.send(UNRELIABLE, LoadMessage::Input(input(user, self.game_ticks)));
                if sends_event(user, self.game_ticks) {
                    let event = Event {
                        from: user as u16,
                        seq: self.event_seq[user],
                    };
                    if p.send(RELIABLE, LoadMessage::Event(event)).is_ok() {
                        self.event_seq[user] += 1;
                    }
                }
            }
            while let Some(m) = p.receive(UNRELIABLE) {
                self.snapshots += u64::from(matches!(m, LoadMessage::Snapshot(_)));
            }
            while p.receive(RELIABLE).is_some() {
                self.delivered += 1;
            }
            p.update(self.now, &mut self.net);
        }
        deliver(
            &mut self.net,
            self.now,
            &mut self.players,
            &mut self.to_server,
        );
    }

    /// The server's half: [`server_tick`] (the wall time it took is returned), then
    /// its datagrams handed to the clients.
    fn serve(&mut self) -> std::time::Duration {
        let started = std::time::Instant::now();
        server_tick(
            &mut self.server,
            &mut self.game,
            &mut self.net,
            self.now,
            &self.to_server,
            self.playing.then_some(self.game_ticks),
        );
        let took = started.elapsed();
        self.to_server.clear();
        deliver(
            &mut self.net,
            self.now,
            &mut self.players,
            &mut self.to_server,
        );
        if self.playing {
            self.game_ticks += 1;
        }
        took
    }
}

/// With `EVICT_MB=N` set, writes an N MiB buffer before each server tick (what the
/// other processes of a shared machine do to the caches while the server sleeps) and
/// times the ticks: a native check of how much of the server's time is spent fetching
/// the state the previous tick left in memory. Not for callgrind (it would count the
/// buffer's misses outside the collected function, but slowly).
struct Evictor {
    buffer: Option<Vec<u64>>,
    round: u64,
    timed: std::time::Duration,
}

impl Evictor {
    fn from_env() -> Self {
        let mb: Option<usize> = std::env::var("EVICT_MB").ok().and_then(|v| v.parse().ok());
        Self {
            buffer: mb.map(|mb| vec![0u64; mb << 17]),
            round: 0,
            timed: std::time::Duration::ZERO,
        }
    }

    fn evict(&mut self) {
        if let Some(buffer) = self.buffer.as_mut() {
            self.round += 1;
            for word in buffer.iter_mut().step_by(8) {
                *word = word.wrapping_add(self.round);
            }
            std::hint::black_box(&buffer);
        }
    }
}

/// Hands the clients their datagrams due by `now`; keeps the server's in `to_server`.
fn deliver(
    net: &mut Network,
    now: f64,
    players: &mut [SimClient<LoadMessage>],
    to_server: &mut Vec<(NodeId, Vec<u8>)>,
) {
    while let Some(d) = net.poll(netproto::Time::from_secs_f64(now)) {
        if d.to == NodeId(0) {
            to_server.push((d.from, d.payload.to_vec()));
        } else if let Some(p) = players.get_mut(d.to.0 as usize - 1) {
            p.handle_datagram(now, d.from, &d.payload);
        }
    }
}

/// The server's tick: its datagrams, events and messages, what `server_load`'s server
/// does with them (`game_tick` is `None` until every client is connected), and its
/// update.
#[inline(never)]
fn server_tick(
    server: &mut SimServer<LoadMessage>,
    game: &mut Game,
    net: &mut Network,
    now: f64,
    datagrams: &[(NodeId, Vec<u8>)],
    game_tick: Option<u64>,
) {
    server.handle_batch(now, datagrams);
    while let Some(event) = server.poll_event() {
        match event {
            ServerEvent::Connected {
                client, user_id, ..
            } => game.roster.connect(client, user_id),
            ServerEvent::Disconnected { client, .. } => {
                eprintln!("server: client {client:?} disconnected");
                std::process::exit(1);
            }
            _ => {}
        }
    }
    for &client in game.roster.connected() {
        while let Some(m) = server.receive(client, UNRELIABLE) {
            game.inputs += u64::from(matches!(m, LoadMessage::Input(_)));
        }
        while let Some(m) = server.receive(client, RELIABLE) {
            let LoadMessage::Event(event) = m else {
                continue;
            };
            for to in game.roster.mates(client) {
                let message = LoadMessage::Event(event.clone());
                if server.stack_mut().send(to, RELIABLE, message).is_ok() {
                    game.relayed += 1;
                }
            }
        }
    }
    if let Some(tick) = game_tick
        && tick.is_multiple_of(SNAPSHOT_EVERY)
    {
        advance(&mut game.snap, tick);
        let message = LoadMessage::Snapshot(game.snap.clone());
        let _ = server
            .stack_mut()
            .broadcast(UNRELIABLE, &message, |_, _| {});
    }
    server.update(now, net);
}
