//! Snapshots of the printed wire layout (`netproto::schema::Layout`) of the example game
//! messages and of their message set: a changed range, field order or encoding changes
//! the text and fails here until the new snapshot is reviewed (`cargo insta review`).

use netproto::NetMessage;
use netproto::schema::{Layout, SetLayout};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityUpdate, GameMessage, MatchPhase, PlayerInput, Position,
};

/// The table, then the bit diagram of the fixed-size prefix.
fn layout<T: NetMessage>() -> String {
    let layout = Layout::of::<T>();
    format!("{layout}\n{}", layout.diagram())
}

#[test]
fn player_input() {
    insta::assert_snapshot!(layout::<PlayerInput>());
}

#[test]
fn position() {
    insta::assert_snapshot!(layout::<Position>());
}

#[test]
fn entity_update() {
    insta::assert_snapshot!(layout::<EntityUpdate>());
}

#[test]
fn chat_message() {
    insta::assert_snapshot!(layout::<ChatMessage>());
}

#[test]
fn entity_batch() {
    insta::assert_snapshot!(layout::<EntityBatch>());
}

#[test]
fn match_phase() {
    insta::assert_snapshot!(layout::<MatchPhase>());
}

#[test]
fn game_message_set() {
    insta::assert_snapshot!(SetLayout::of::<GameMessage>().to_string());
}

/// Composite shapes: arrays, options, tuples and sequences of structs, and a
/// variable-size field followed by fixed ones.
#[derive(NetMessage)]
struct Composite {
    #[net(range = 1..=4)]
    team: u8,
    cells: [u8; 4],
    spawn: Option<Position>,
    #[net(max_len = 3)]
    path: Vec<Position>,
    pair: (bool, i16),
    flags: [Option<bool>; 2],
    after_variable: bool,
}

#[test]
fn composite() {
    insta::assert_snapshot!(layout::<Composite>());
}
