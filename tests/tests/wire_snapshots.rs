//! Wire-format snapshots of the example game messages.
//!
//! Each snapshot is the message's `WireView`: hex bytes plus one row per field with its
//! bit offset, width, bits and value. A change to the wire format (a range, a field's
//! order, the encoding of a primitive) changes the text and fails here until the new
//! snapshot is reviewed and accepted (`cargo insta review`).

use netproto::{NetMessage, WireView};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityId, EntityState, EntityUpdate, HALF_TURN, MatchPhase,
    PlayerInput, Position, QUARTER_TURN, buttons,
};

fn view<T: NetMessage>(mut message: T) -> String {
    match WireView::of(&mut message) {
        Ok(view) => view.to_string(),
        Err(err) => panic!("encoding failed: {err}"),
    }
}

#[test]
fn player_input() {
    insta::assert_snapshot!(view(PlayerInput {
        tick: 63,
        buttons: buttons::FIRE | buttons::JUMP | buttons::SPRINT,
        aim_yaw: -HALF_TURN,
        aim_pitch: QUARTER_TURN / 2.0,
        move_x: 7,
        move_y: -7,
    }));
}

#[test]
fn entity_update_with_quantized_position() {
    insta::assert_snapshot!(view(EntityUpdate {
        entity: EntityId(4095),
        position: Position {
            x: -1024.0,
            y: 1023.99,
            z: 0.01
        },
        heading: HALF_TURN,
        health: 100,
        state: EntityState::Moving { speed: 15 },
    }));
}

#[test]
fn entity_update_dead() {
    insta::assert_snapshot!(view(EntityUpdate {
        entity: EntityId(0),
        position: Position {
            x: 0.0,
            y: 0.0,
            z: 448.0
        },
        heading: 0.0,
        health: 0,
        state: EntityState::Dead { respawn_ticks: 300 },
    }));
}

#[test]
fn chat_with_multibyte_utf8() {
    insta::assert_snapshot!(view(ChatMessage {
        from: 63,
        text: "gg ✌ été".to_owned()
    }));
}

#[test]
fn batch_of_entity_ids() {
    insta::assert_snapshot!(view(EntityBatch {
        ids: vec![
            EntityId(0),
            EntityId(1),
            EntityId(2047),
            EntityId(2048),
            EntityId(4095)
        ],
    }));
}

#[test]
fn empty_batch() {
    insta::assert_snapshot!(view(EntityBatch { ids: Vec::new() }));
}

#[test]
fn enum_state_message() {
    insta::assert_snapshot!(view(MatchPhase::RoundOver { winner: Some(true) }));
    insta::assert_snapshot!(view(MatchPhase::Playing {
        round: 30,
        red: 999,
        blue: 0
    }));
}
