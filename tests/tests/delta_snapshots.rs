//! Wire-format snapshots of delta encodings (issue 27): the `WireView` of a delta shows
//! each field's `changed` bit, its `delta` code or the `escape` code and the absolute
//! `value`, and for entity collections the `removed`, `changed` and `added` lists
//! with their count, Exp-Golomb parameter `k` and gap-coded ids. A change to the delta
//! wire format changes the text (`cargo insta review`).

use netproto::WireView;
use netproto::delta::{NetDelta, decode_delta, encode_delta};
use netproto_tests::delta_workload::{
    ARENA_Q as ARENA, ArenaEntity, ArenaScene, ArenaState, Cube, CubePosition, CubeScene,
    POS_Q as POS, ROT_Q as ROT, SmallestThree, YAW_Q as YAW,
};

/// The view of `now`'s delta against `base`, after checking that it decodes to `now`.
fn view<T: NetDelta + PartialEq + core::fmt::Debug>(now: &T, base: &T) -> String {
    let bytes = encode_delta(now, base).unwrap_or_else(|e| panic!("encoding failed: {e}"));
    assert_eq!(decode_delta(&bytes, base).as_ref(), Ok(now));
    match WireView::of_delta(now, base) {
        Ok(view) => {
            assert_eq!(view.bytes(), &bytes[..]);
            view.to_string()
        }
        Err(err) => panic!("encoding failed: {err}"),
    }
}

fn cube(x: u32, a: u32, at_rest: bool) -> Cube {
    Cube {
        position: CubePosition {
            x: POS.dequantize(x),
            y: POS.dequantize(128_000),
            z: POS.dequantize(500),
        },
        orientation: SmallestThree {
            largest: 3,
            a: ROT.dequantize(a),
            b: ROT.dequantize(236),
            c: ROT.dequantize(236),
        },
        at_rest,
    }
}

fn arena(x: u32, yaw: u32, health: u8, state: ArenaState) -> ArenaEntity {
    ArenaEntity {
        x: ARENA.dequantize(x),
        y: ARENA.dequantize(6400),
        yaw: YAW.dequantize(yaw),
        health,
        state,
    }
}

#[test]
fn cube_at_rest_costs_its_changed_bits() {
    let base = cube(10_000, 200, true);
    insta::assert_snapshot!(view(&base, &base));
}

#[test]
fn cube_moving_small_delta_and_absolute_fallback() {
    // x by +37 mm (a delta), a by +250 steps (past ±15: absolute), woken up.
    insta::assert_snapshot!(view(&cube(10_037, 450, false), &cube(10_000, 200, true)));
}

#[test]
fn arena_entity_moving_hit_and_shooting() {
    insta::assert_snapshot!(view(
        &arena(6_420, 290, 88, ArenaState::Shooting(3)),
        &arena(6_400, 300, 100, ArenaState::Running),
    ));
}

#[test]
fn cube_scene_removed_changed_added_with_gap_coded_ids() {
    let mut base = CubeScene::new();
    for id in [1, 4, 5, 6, 20, 700] {
        base.insert(id, cube(1000 * id, 236, true)).unwrap();
    }
    let mut now = base.clone();
    now.remove(5);
    now.remove(700);
    for id in [4, 6, 20] {
        let c = now.get_mut(id).unwrap();
        c.position.x = POS.dequantize(1000 * id + 3);
        c.at_rest = false;
    }
    now.insert(21, cube(21, 236, false)).unwrap();
    insta::assert_snapshot!(view(&now, &base));
}

#[test]
fn arena_scene_all_moving() {
    let mut base = ArenaScene::new();
    for id in 0..4 {
        base.insert(id, arena(6_000 + 100 * id, 300, 100, ArenaState::Running))
            .unwrap();
    }
    let mut now = base.clone();
    for (id, e) in now.iter_mut() {
        e.x = ARENA.dequantize(6_010 + 100 * id);
    }
    insta::assert_snapshot!(view(&now, &base));
}
