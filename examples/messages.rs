//! Annotates a few game messages, encodes them, and prints each one's size and bit
//! layout next to a naive byte encoding; then the static wire layout of the message set
//! and its fingerprint (which, with the channel configuration's, makes the protocol id).
//! Last, a 100 KB map sent on a bulk channel over a simulated 100 ms, 1%-loss link,
//! beside 20 Hz snapshots, with a loading bar from the layer's block progress.
//!
//! Run with `cargo run --release --example messages`.

use netproto::Time;
use netproto::channel::ChannelId;
use netproto::channel::{ChannelConfig, LayerConfig, MessageStack};
use netproto::packet::EndpointConfig;
use netproto::schema::{Layout, SetLayout};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto::{MessageSet, NetMessage, WireView};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityId, EntityState, EntityUpdate, GameMessage, MatchPhase,
    NaiveSize, PlayerInput, Position, buttons,
};
use std::time::Duration;

fn show<T: NetMessage + NaiveSize>(mut message: T) -> (usize, usize) {
    let naive = message.naive_size();
    let view = match WireView::of(&mut message) {
        Ok(view) => view,
        Err(err) => {
            eprintln!("cannot encode: {err}");
            std::process::exit(1);
        }
    };
    let bytes = view.bytes().len();
    println!("{view}");
    println!(
        "  netproto: {bytes} bytes ({} bits, bound {} bits)   naive: {naive} bytes   saved: {:.0}%\n",
        view.bits(),
        T::MAX_BITS,
        100.0 * (1.0 - bytes as f64 / naive as f64)
    );
    (bytes, naive)
}

fn main() {
    let results = [
        show(PlayerInput {
            tick: 17,
            buttons: buttons::FIRE | buttons::SPRINT,
            aim_yaw: 1.2345,
            aim_pitch: -0.25,
            move_x: -7,
            move_y: 5,
        }),
        show(EntityUpdate {
            entity: EntityId(1234),
            position: Position {
                x: 512.25,
                y: -100.5,
                z: 3.75,
            },
            heading: 0.5,
            health: 87,
            state: EntityState::Attacking {
                target: EntityId(77),
            },
        }),
        show(ChatMessage {
            from: 3,
            text: "gg, rematch?".to_owned(),
        }),
        show(EntityBatch {
            ids: vec![EntityId(5), EntityId(6), EntityId(900), EntityId(4095)],
        }),
        show(MatchPhase::Playing {
            round: 4,
            red: 12,
            blue: 9,
        }),
    ];
    let (ours, naive): (usize, usize) =
        results.iter().fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
    println!(
        "total: netproto {ours} bytes, naive {naive} bytes ({:.2}x smaller)",
        naive as f64 / ours as f64
    );

    // The static wire layout, from the schema the derive generated: every field's bit
    // offsets, width, kind and bounds, whatever the values.
    println!("\n--- wire layout of the message set ---\n");
    println!("{}", SetLayout::of::<GameMessage>());
    let input = Layout::of::<PlayerInput>();
    println!("{input}\n{}", input.diagram());
    println!(
        "schema fingerprint: {:#018x}; protocol id with the default channels: {:#018x}",
        GameMessage::FINGERPRINT,
        netproto::protocol_id::<GameMessage>(&netproto::channel::LayerConfig::default()),
    );
    println!(
        "{} message types, {}-bit type id, at most {} bits a message",
        GameMessage::COUNT,
        GameMessage::TYPE_BITS,
        GameMessage::MAX_BITS
    );

    download();
}

/// A map part of the download demo.
#[derive(NetMessage, Debug)]
struct Map {
    #[net(max_len = 200_000)]
    bytes: Vec<u8>,
}

/// The download demo's messages: snapshots and the map.
#[derive(NetMessage, Debug)]
#[net(message_set)]
enum Demo {
    Snapshot(EntityBatch),
    Map(Map),
}

/// A 100 KB map on `ChannelConfig::bulk()` beside 20 Hz snapshots on a sequenced
/// channel, over a 100 ms, 1%-loss simulated link (the packet and channel layers
/// only: two packets per 60 Hz tick at most, as the transport's default rate
/// allows), with a loading bar drawn from `receive_progress`.
fn download() {
    println!("\n--- a 100 KB map on a bulk channel, with a loading bar ---\n");
    let layer = LayerConfig::with_channels(vec![
        ChannelConfig::sequenced().carries::<Demo, EntityBatch>(),
        ChannelConfig::bulk(),
    ]);
    let stack = || {
        MessageStack::<Demo>::new(EndpointConfig::default(), layer.clone(), Time::ZERO)
            .expect("valid configuration")
    };
    let (mut server, mut client) = (stack(), stack());
    let (s, c) = (NodeId(0), NodeId(1));
    let mut net = Network::new(16);
    net.set_default_link(
        LinkConfig::default()
            .with_latency(Duration::from_millis(50))
            .with_loss(0.01),
    );
    let map = Demo::Map(Map {
        bytes: (0..100 * 1024).map(|i| (i % 251) as u8).collect(),
    });
    server
        .send(ChannelId::new(1), map)
        .expect("the bulk channel takes 1 MiB blocks");
    let mut snapshots = 0;
    let mut last_bar = usize::MAX;
    for tick in 0..600u32 {
        let now = Time::from_secs_f64(f64::from(tick) / 60.0);
        while let Some(d) = net.poll(now) {
            let to = if d.to == s { &mut server } else { &mut client };
            // A datagram the endpoint drops (stale, duplicate) changes nothing.
            let _ = to.receive_datagram(now, &d.payload);
        }
        while client.receive(ChannelId::new(0)).is_some() {
            snapshots += 1;
        }
        if let Some(Demo::Map(map)) = client.receive(ChannelId::new(1)) {
            println!(
                "[{}] {} bytes in {now:.2}, {snapshots} snapshots meanwhile",
                "#".repeat(40),
                map.bytes.len()
            );
            return;
        }
        if let Some(progress) = client.layer().receive_progress(ChannelId::new(1)) {
            let bar = (progress.fraction() * 40.0) as usize;
            // A line per tenth.
            if bar / 4 != last_bar / 4 {
                println!(
                    "[{}{}] {:>6} / {} bytes at {now:.2}",
                    "#".repeat(bar),
                    ".".repeat(40 - bar),
                    progress.bytes,
                    progress.total
                );
                last_bar = bar;
            }
        }
        if tick % 3 == 0 {
            let ids = (0..64).map(EntityId).collect();
            let _ = server.send(ChannelId::new(0), Demo::Snapshot(EntityBatch { ids }));
        }
        for (from, to, stack) in [(s, c, &mut server), (c, s, &mut client)] {
            for k in 0..2 {
                if k > 0 && !stack.layer().more_to_send() {
                    break;
                }
                let _ = stack.send_packet(now, |d| {
                    net.send(now, from, to, d);
                });
            }
        }
    }
    println!("the map did not arrive in 10 s");
}
