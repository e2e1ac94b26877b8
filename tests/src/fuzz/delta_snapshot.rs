//! Deltas read against hostile baselines and bytes (issue 27).
//!
//! Input: one byte picks the workload (even: the cube scene, odd: the arena), eight
//! bytes seed the baseline (a scene of up to 64 entities; one seed in four spoils some
//! of its values: out of their ranges, NaN), the rest is the delta. Invariants: no
//! panic; what decodes has at most `MAX_LEN` entities with increasing ids in bounds;
//! against a valid baseline it re-encodes (every value came in range: nothing was
//! clamped, out-of-range deltas were refused) to a delta that decodes to the same
//! value, within `DELTA_MAX_BITS`; decoding twice gives the same result.

use netproto::delta::{Entities, NetDelta, decode_delta, encode_delta};
use netproto::sim::Rng;

use crate::delta_workload::{
    ArenaScene, CubeScene, arena_scene, arena_tick, cube_scene, cube_tick,
};

use super::Seed;

/// The baseline a seed names, and whether it was left valid.
fn cube_baseline(seed: u64) -> (CubeScene, bool) {
    let mut rng = Rng::new(seed);
    let count = rng.below(65) as usize;
    let mut scene = cube_scene(&mut rng, count);
    let hostile = rng.below(4) == 0;
    if hostile {
        for (_, cube) in scene.iter_mut() {
            match rng.below(4) {
                0 => cube.position.x = f32::NAN,
                1 => cube.position.y = 1000.0,
                2 => cube.orientation.largest = 9,
                _ => {}
            }
        }
    }
    (scene, !hostile)
}

fn arena_baseline(seed: u64) -> (ArenaScene, bool) {
    let mut rng = Rng::new(seed);
    let count = rng.below(65) as usize;
    let mut scene = arena_scene(&mut rng, count);
    let hostile = rng.below(4) == 0;
    if hostile {
        for (_, e) in scene.iter_mut() {
            match rng.below(4) {
                0 => e.health = 200 + rng.below(56) as u8,
                1 => e.yaw = -100.0,
                2 => e.x = f32::INFINITY,
                _ => {}
            }
        }
    }
    (scene, !hostile)
}

/// Reads `delta` against `base`; returns whether it decoded.
fn check<T, const MAX_ID: u32, const MAX_LEN: usize>(
    delta: &[u8],
    base: &Entities<T, MAX_ID, MAX_LEN>,
    valid: bool,
) -> bool
where
    T: NetDelta + PartialEq + core::fmt::Debug,
{
    let first = decode_delta(delta, base);
    // Compared as text: a hostile baseline's NaN is kept, and NaN != NaN.
    assert_eq!(
        format!("{first:?}"),
        format!("{:?}", decode_delta(delta, base)),
        "decoding is not deterministic"
    );
    let Ok(got) = first else { return false };
    assert!(got.len() <= MAX_LEN);
    assert!(
        got.as_slice().windows(2).all(|w| w[0].0 < w[1].0),
        "ids out of order"
    );
    assert!(got.iter().all(|(id, _)| id <= MAX_ID), "id out of bounds");
    assert!(delta.len() * 8 <= Entities::<T, MAX_ID, MAX_LEN>::DELTA_MAX_BITS + 7);
    if valid {
        let again = encode_delta(&got, base)
            .unwrap_or_else(|e| panic!("a decoded delta does not re-encode: {e}"));
        assert_eq!(got.measure_delta(base).div_ceil(8), again.len());
        assert_eq!(
            decode_delta(&again, base).as_ref(),
            Ok(&got),
            "decode(encode(d)) != d"
        );
    }
    true
}

/// The fuzz target: 1 when the delta decoded, else 0.
pub fn delta_snapshot(data: &[u8]) -> usize {
    let Some((&kind, rest)) = data.split_first() else {
        return 0;
    };
    let Some((seed, delta)) = rest.split_first_chunk::<8>() else {
        return 0;
    };
    let seed = u64::from_le_bytes(*seed);
    let decoded = if kind.is_multiple_of(2) {
        let (base, valid) = cube_baseline(seed);
        check(delta, &base, valid)
    } else {
        let (base, valid) = arena_baseline(seed);
        check(delta, &base, valid)
    };
    usize::from(decoded)
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` deltas of the two workloads against valid baselines, with entities
    /// moved, removed and added (each decodes: 1).
    pub fn delta_snapshot(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let kind = rng.below(256) as u8;
            let base_seed = rng.next_u64();
            let delta = if kind.is_multiple_of(2) {
                let (base, valid) = cube_baseline(base_seed);
                if !valid {
                    continue;
                }
                let mut now = base.clone();
                let moving = rng.range_f64(0.0, 1.0);
                cube_tick(&mut rng, &mut now, moving);
                let count = rng.below(4) as usize;
                let extra = cube_scene(&mut rng, count);
                for (id, cube) in extra.iter() {
                    if rng.chance(0.5) {
                        now.remove(id);
                    } else if now.len() < 64 {
                        let _ = now.insert(id, *cube);
                    }
                }
                encode_delta(&now, &base)
            } else {
                let (base, valid) = arena_baseline(base_seed);
                if !valid {
                    continue;
                }
                let mut now = base.clone();
                arena_tick(&mut rng, &mut now, 0.9);
                let count = rng.below(3) as usize;
                let extra = arena_scene(&mut rng, count);
                for (_, e) in extra.iter() {
                    let id = rng.below(256) as u32;
                    if rng.chance(0.5) {
                        now.remove(id);
                    } else if now.len() < 64 {
                        let _ = now.insert(id, *e);
                    }
                }
                encode_delta(&now, &base)
            };
            let mut input = vec![kind];
            input.extend_from_slice(&base_seed.to_le_bytes());
            input.extend(delta.expect("a valid delta"));
            out.push(Seed::taking(input, 1));
        }
        out
    }
}
