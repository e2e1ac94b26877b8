//! Annotates a few game messages, encodes them, and prints each one's size and bit
//! layout next to a naive byte encoding; then the static wire layout of the message set
//! and its fingerprint (which, with the channel configuration's, makes the protocol id).
//!
//! Run with `cargo run --release --example messages`.

use netproto::schema::{Layout, SetLayout};
use netproto::{MessageSet, NetMessage, WireView};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityId, EntityState, EntityUpdate, GameMessage, MatchPhase,
    NaiveSize, PlayerInput, Position, buttons,
};

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
}
