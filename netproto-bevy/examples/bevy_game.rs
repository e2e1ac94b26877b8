//! A headless Bevy game over netproto, in two terminals:
//!
//! ```sh
//! cargo run -p netproto-bevy --example bevy_game -- server
//! cargo run -p netproto-bevy --example bevy_game -- client
//! ```
//!
//! Each client walks its dot around a square arena with inputs (reliable channel); the
//! server moves the dots and sends every client the positions of all of them 20 times
//! a second as delta snapshots (unreliable channel, tracked: each snapshot is a delta
//! against the newest one the client is known to hold, see `netproto::delta`); each
//! client prints what it sees once a second, the server what the deltas saved. Run
//! more clients in more terminals. `--seconds N` stops after N seconds, `--address`
//! picks the server's (127.0.0.1:40000 by default). `--conditioner SPEC` puts
//! netproto's link conditioner on this side's socket, in the grammar of
//! `NETPROTO_CONDITIONER` (which works too):
//!
//! ```sh
//! cargo run -p netproto-bevy --example bevy_game -- client --conditioner "latency=50ms,jitter=5ms,loss=1%"
//! ```
//!
//! The connection events are netproto's `tracing` events, printed to the terminal.
//!
//! Development tokens only (`insecure_dev`): a real game's clients get theirs from
//! its backend.

// Bevy system parameters (`ResMut<T>`, `MessageReader<T>`, `Query<T>`) are written
// without their lifetimes, as in Bevy's own documentation.
#![allow(elided_lifetimes_in_paths)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use bevy_app::{App, AppExit, ScheduleRunnerPlugin, Update};
use bevy_ecs::prelude::*;
use netproto::NetMessage;
use netproto::channel::ChannelId;
use netproto::connection::ClientId;
use netproto::delta::{DEFAULT_RING, Entities, SnapshotHeader, SnapshotReceiver, SnapshotSender};
use netproto::transport::conditioner::ConditionerConfig;
use netproto::transport::{Config, UdpClient, UdpClientEvent, UdpServer, UdpServerEvent};
use netproto_bevy::{
    ClientConnectionEvent, ClientPlugin, FromClient, FromServer, NetClient, NetServer,
    ServerConnectionEvent, ServerPlugin,
};

/// One step of a dot: each axis -1, 0 or 1.
#[derive(NetMessage, Debug, Clone, Copy)]
struct Step {
    #[net(range = -1..=1)]
    dx: i8,
    #[net(range = -1..=1)]
    dy: i8,
}

/// Where a dot is. Deltas of up to 3 steps per axis go in 3 bits; a farther move (a
/// respawn) falls back to the absolute value.
#[derive(NetMessage, Debug, Clone, Copy, PartialEq)]
#[net(delta)]
struct DotState {
    #[net(range = -50..=50, delta = -3..=3)]
    x: i16,
    #[net(range = -50..=50, delta = -3..=3)]
    y: i16,
}

/// Every dot, by client id (0 to 15).
type Dots = Entities<DotState, 15, 16>;

/// The bytes of a delta snapshot of [`Dots`]: at most a full one and its header.
const SNAPSHOT_BYTES: usize =
    (SnapshotHeader::bits::<DEFAULT_RING>(true) + <Dots as NetMessage>::MAX_BITS).div_ceil(8);

/// A snapshot of every dot, written by a [`SnapshotSender`] for one client.
#[derive(NetMessage, Debug, Clone)]
struct Snapshot {
    #[net(max_len = SNAPSHOT_BYTES)]
    bytes: Vec<u8>,
}

/// The server's greeting.
#[derive(NetMessage, Debug, Clone)]
struct Welcome {
    #[net(max_len = 64)]
    text: String,
}

#[derive(NetMessage, Debug, Clone)]
#[net(message_set)]
enum GameMessage {
    Step(Step),
    Snapshot(Snapshot),
    Welcome(Welcome),
}
const MAX_CLIENTS: usize = 16;

/// Both sides' settings: the client moves every frame, so a packet a frame in good
/// mode (the fast-paced preset) and 30 in bad mode, above the 20 Hz snapshots.
fn config() -> Config {
    let mut config = Config::fast_paced();
    config.connection.congestion.bad_rate = 30.0;
    config.max_clients = MAX_CLIENTS;
    config
}
const ARENA: i16 = 50;
const FRAME: Duration = Duration::from_nanos(1_000_000_000 / 60);

/// A connected player's dot, on the server.
#[derive(Component, Debug)]
struct Player {
    client: ClientId,
    x: i16,
    y: i16,
}

/// Frames since start, and the frame to stop at.
#[derive(Resource, Debug, Default)]
struct Clock {
    frame: u32,
    stop_at: Option<u32>,
}

fn tick(mut clock: ResMut<Clock>, mut exit: MessageWriter<AppExit>) {
    clock.frame += 1;
    if clock.stop_at.is_some_and(|stop| clock.frame >= stop) {
        exit.write(AppExit::Success);
    }
}

fn server_connections(
    mut commands: Commands,
    mut server: ResMut<NetServer<GameMessage>>,
    mut snapshots: ResMut<Snapshots>,
    mut events: MessageReader<ServerConnectionEvent>,
    players: Query<(Entity, &Player)>,
) {
    for ServerConnectionEvent(event) in events.read() {
        match event {
            UdpServerEvent::Connected { client, .. } => {
                // A new connection starts from full snapshots.
                snapshots.senders.insert(*client, SnapshotSender::new(0));
                commands.spawn(Player {
                    client: *client,
                    x: 0,
                    y: 0,
                });
                let text = format!("welcome, player {}", client.0);
                let _ = server.send(
                    *client,
                    ChannelId::RELIABLE,
                    GameMessage::Welcome(Welcome { text }),
                );
            }
            UdpServerEvent::Disconnected { client, .. } => {
                snapshots.senders.remove(client);
                for (entity, player) in &players {
                    if player.client == *client {
                        commands.entity(entity).despawn();
                    }
                }
            }
            _ => {}
        }
    }
}

fn server_moves(
    mut received: MessageReader<FromClient<GameMessage>>,
    mut players: Query<&mut Player>,
) {
    for FromClient {
        client, message, ..
    } in received.read()
    {
        let GameMessage::Step(step) = message else {
            continue;
        };
        for mut player in &mut players {
            if player.client == *client {
                player.x = (player.x + i16::from(step.dx)).clamp(-ARENA, ARENA);
                player.y = (player.y + i16::from(step.dy)).clamp(-ARENA, ARENA);
            }
        }
    }
}

/// The server's delta senders, one per client, and what they sent.
#[derive(Resource, Debug, Default)]
struct Snapshots {
    senders: HashMap<ClientId, SnapshotSender<Dots>>,
    /// Bytes of the snapshots sent, and what they would have been sent full.
    sent_bytes: u64,
    full_bytes: u64,
}

/// Every third frame (20 Hz), every client gets every dot: a delta against the newest
/// snapshot it acked (the receipts of the tracked messages say which), or full.
fn server_snapshots(
    clock: Res<Clock>,
    mut server: ResMut<NetServer<GameMessage>>,
    mut snapshots: ResMut<Snapshots>,
    players: Query<&Player>,
) {
    if !clock.frame.is_multiple_of(3) {
        return;
    }
    let mut dots = Dots::new();
    for p in &players {
        // In range: at most 16 clients, positions clamped to the arena.
        let _ = dots.insert(u32::from(p.client.0), DotState { x: p.x, y: p.y });
    }
    let full_bytes = SnapshotHeader::bits::<DEFAULT_RING>(false) + netproto::measure(&dots);
    let Snapshots {
        senders,
        sent_bytes,
        full_bytes: full,
    } = &mut *snapshots;
    let mut buf = [0u8; SNAPSHOT_BYTES];
    for (&client, sender) in senders.iter_mut() {
        while let Some(receipt) = server.poll_receipt(client, ChannelId::UNRELIABLE) {
            sender.receipt_acked(receipt);
        }
        let Ok(sent) = sender.encode_into(&dots, &mut buf) else {
            continue;
        };
        let bytes = buf[..sent.bytes].to_vec();
        // A client whose queue is full misses this one.
        if let Ok(receipt) = server.send_tracked(
            client,
            ChannelId::UNRELIABLE,
            GameMessage::Snapshot(Snapshot { bytes }),
        ) {
            sender.sent_with(sent.sequence, receipt);
            *sent_bytes += sent.bytes as u64;
            *full += full_bytes.div_ceil(8) as u64;
        }
    }
    if clock.frame.is_multiple_of(300) && *full > 0 {
        println!(
            "snapshots: {} bytes as deltas, {} bytes had they gone full ({:.2}x)",
            sent_bytes,
            full,
            *sent_bytes as f64 / *full as f64
        );
    }
}

/// The client's view of the game.
#[derive(Resource, Debug, Default)]
struct View {
    me: Option<ClientId>,
    receiver: SnapshotReceiver<Dots>,
    snapshots: u32,
    /// Snapshots refused: stale, a baseline this client no longer holds, malformed.
    refused: u32,
}

fn client_connection(
    mut events: MessageReader<ClientConnectionEvent>,
    mut view: ResMut<View>,
    mut exit: MessageWriter<AppExit>,
) {
    for ClientConnectionEvent(event) in events.read() {
        match event {
            UdpClientEvent::Connected { client, .. } => view.me = Some(*client),
            UdpClientEvent::Denied { reason } => {
                eprintln!("denied: {reason}");
                exit.write(AppExit::error());
            }
            UdpClientEvent::Disconnected { reason } => {
                eprintln!("disconnected: {reason}");
                exit.write(AppExit::error());
            }
            _ => {}
        }
    }
}

fn client_receive(mut received: MessageReader<FromServer<GameMessage>>, mut view: ResMut<View>) {
    for FromServer { message, .. } in received.read() {
        match message {
            GameMessage::Welcome(welcome) => println!("server: {}", welcome.text),
            GameMessage::Snapshot(snapshot) => match view.receiver.receive(&snapshot.bytes) {
                Ok(_) => view.snapshots += 1,
                Err(_) => view.refused += 1,
            },
            GameMessage::Step(_) => {}
        }
    }
}

/// Walks a square: 40 steps right, up, left, down, one step every 6 frames.
fn client_walk(clock: Res<Clock>, view: Res<View>, mut client: ResMut<NetClient<GameMessage>>) {
    if view.me.is_none() || !clock.frame.is_multiple_of(6) {
        return;
    }
    let (dx, dy) = match (clock.frame / 6 / 40) % 4 {
        0 => (1, 0),
        1 => (0, 1),
        2 => (-1, 0),
        _ => (0, -1),
    };
    let _ = client.send(ChannelId::RELIABLE, GameMessage::Step(Step { dx, dy }));
}

fn client_print(clock: Res<Clock>, view: Res<View>, client: Res<NetClient<GameMessage>>) {
    if !clock.frame.is_multiple_of(60) {
        return;
    }
    let Some(me) = view.me else {
        println!("connecting...");
        return;
    };
    let dots: Vec<String> = view
        .receiver
        .latest()
        .map(|(_, dots)| {
            dots.iter()
                .map(|(id, d)| {
                    let mark = if id == u32::from(me.0) { "*" } else { "" };
                    format!("{mark}{id}@({},{})", d.x, d.y)
                })
                .collect()
        })
        .unwrap_or_default();
    let rtt = client
        .stats()
        .map_or(0.0, |s| s.link.endpoint.rtt.as_secs_f64() * 1000.0);
    println!(
        "player {}: {} snapshots ({} refused), rtt {rtt:.1} ms, dots {}",
        me.0,
        view.snapshots,
        view.refused,
        dots.join(" ")
    );
}

struct Args {
    server: bool,
    address: SocketAddr,
    seconds: Option<f64>,
    conditioner: Option<ConditionerConfig>,
}

fn args() -> Result<Args, String> {
    let usage =
        "usage: bevy_game (server | client) [--address IP:PORT] [--seconds N] [--conditioner SPEC]";
    let mut args = std::env::args().skip(1);
    let server = match args.next().as_deref() {
        Some("server") => true,
        Some("client") => false,
        _ => return Err(usage.into()),
    };
    let mut parsed = Args {
        server,
        address: SocketAddr::from(([127, 0, 0, 1], 40000)),
        seconds: None,
        conditioner: None,
    };
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(usage)?;
        match arg.as_str() {
            "--address" => parsed.address = value.parse().map_err(|e| format!("{value}: {e}"))?,
            "--seconds" => {
                parsed.seconds = Some(value.parse().map_err(|e| format!("{value}: {e}"))?)
            }
            "--conditioner" => {
                parsed.conditioner = ConditionerConfig::parse(&value).map_err(|e| e.to_string())?
            }
            _ => return Err(usage.into()),
        }
    }
    Ok(parsed)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_target(false)
        .init();
    let mut app = App::new();
    app.add_plugins(ScheduleRunnerPlugin::run_loop(FRAME))
        .insert_resource(Clock {
            frame: 0,
            stop_at: args.seconds.map(|s| (s * 60.0) as u32),
        })
        .add_systems(Update, tick);
    if args.server {
        let mut server = UdpServer::<GameMessage>::bind_insecure_dev(args.address, config())?;
        if args.conditioner.is_some() {
            server.set_conditioner(args.conditioner);
        }
        println!(
            "serving on {}: run `cargo run -p netproto-bevy --example bevy_game -- client`",
            args.address
        );
        app.add_plugins(ServerPlugin::<GameMessage>::default())
            .insert_resource(NetServer(server))
            .init_resource::<Snapshots>()
            .add_systems(
                Update,
                (server_connections, server_moves, server_snapshots).chain(),
            );
    } else {
        // Any id the backend would give: the process id keeps two clients apart.
        let user_id = u64::from(std::process::id());
        let mut client =
            UdpClient::<GameMessage>::connect_insecure_dev(args.address, user_id, config())?;
        if args.conditioner.is_some() {
            client.set_conditioner(args.conditioner);
        }
        app.add_plugins(ClientPlugin::<GameMessage>::default())
            .insert_resource(NetClient(client))
            .init_resource::<View>()
            .add_systems(
                Update,
                (client_connection, client_receive, client_walk, client_print).chain(),
            );
    }
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => std::process::exit(i32::from(code.get())),
    }
}
