//! The two delta workloads of issue 27, shared by the delta tests, the snapshots, the
//! fuzz body (and the benchmark to come): a cube scene (900 bodies, position quantized
//! to 1 mm in a 256 m box, orientation as smallest-three, an at-rest flag, about 10%
//! moving per tick) and the arena's game (64 entities: position, yaw, health, state,
//! most moving). Deterministic from a seed.

use netproto::delta::Entities;
use netproto::sim::Rng;
use netproto::{NetMessage, Quantization};

/// The yaw quantization's bound: a declared bound, not an approximation of π.
#[allow(clippy::approx_constant)]
pub const YAW_MAX: f32 = 3.1416;
/// The cube position's quantization (1 mm in 256 m).
pub const POS_Q: Quantization = Quantization::new(0.0, 256.0, 0.001);
/// The smallest-three components' quantization.
pub const ROT_Q: Quantization = Quantization::new(-0.7072, 0.7072, 0.003);
/// The arena position's quantization (1 cm in 128 m).
pub const ARENA_Q: Quantization = Quantization::new(-64.0, 64.0, 0.01);
/// The arena yaw's quantization.
pub const YAW_Q: Quantization = Quantization::new(-YAW_MAX, YAW_MAX, 0.01);

/// A position in a 256 m box, 1 mm steps (18 bits per axis); a changed axis within
/// ±127 mm of the baseline (one tick's motion at the scene's top speed, 6 m/s) goes as
/// an 8-bit delta code after its changed bit, else as the 8-bit escape code and the
/// value whole. (`-511..=511`, the change over a late ack, measured larger at both
/// benchmark lags: most cubes move in one tick of the six, see BENCHMARKS.md.)
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub struct CubePosition {
    /// x in metres.
    #[net(quantize(min = 0.0, max = 256.0, res = 0.001), delta = -127..=127)]
    pub x: f32,
    /// y in metres.
    #[net(quantize(min = 0.0, max = 256.0, res = 0.001), delta = -127..=127)]
    pub y: f32,
    /// z in metres.
    #[net(quantize(min = 0.0, max = 256.0, res = 0.001), delta = -127..=127)]
    pub z: f32,
}

/// A unit quaternion as smallest-three: the index of the largest component, and the
/// other three in `[-1/sqrt(2), 1/sqrt(2)]` (9 bits each); a changed component within
/// ±7 steps (one tick's turn) goes as a 4-bit delta code.
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub struct SmallestThree {
    /// Index of the dropped (largest) component.
    #[net(range = 0..=3)]
    pub largest: u8,
    /// First kept component.
    #[net(quantize(min = -0.7072, max = 0.7072, res = 0.003), delta = -7..=7)]
    pub a: f32,
    /// Second kept component.
    #[net(quantize(min = -0.7072, max = 0.7072, res = 0.003), delta = -7..=7)]
    pub b: f32,
    /// Third kept component.
    #[net(quantize(min = -0.7072, max = 0.7072, res = 0.003), delta = -7..=7)]
    pub c: f32,
}

/// One body of the cube scene.
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub struct Cube {
    /// Where it is.
    pub position: CubePosition,
    /// How it is turned.
    pub orientation: SmallestThree,
    /// Whether the physics put it to sleep.
    pub at_rest: bool,
}

/// The cube scene: up to 900 cubes, ids 0..=1023.
pub type CubeScene = Entities<Cube, 1023, 900>;

/// What an arena entity is doing.
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub enum ArenaState {
    /// Standing.
    Idle,
    /// Moving.
    Running,
    /// Firing, with the weapon's heat.
    Shooting(#[net(range = 0..=15)] u8),
    /// Out until respawn.
    Dead,
}

/// One entity of the arena's game: a 128 m arena at 1 cm, yaw at about 0.01 rad.
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub struct ArenaEntity {
    /// x in metres.
    #[net(quantize(min = -64.0, max = 64.0, res = 0.01), delta = -63..=63)]
    pub x: f32,
    /// y in metres.
    #[net(quantize(min = -64.0, max = 64.0, res = 0.01), delta = -63..=63)]
    pub y: f32,
    /// Heading in radians.
    #[net(quantize(min = -YAW_MAX, max = YAW_MAX, res = 0.01), delta = -31..=31)]
    pub yaw: f32,
    /// Hit points.
    #[net(range = 0..=100, delta = -15..=15)]
    pub health: u8,
    /// What it is doing.
    pub state: ArenaState,
}

/// The arena's snapshot: up to 64 entities, ids 0..=255.
pub type ArenaScene = Entities<ArenaEntity, 255, 64>;

/// A value on a quantization's grid, near `value`.
fn on_grid(value: f64, q: &Quantization) -> f32 {
    let value = (value as f32).clamp(q.min(), q.max());
    q.dequantize(q.quantize(value))
}

fn cube_orientation(rng: &mut Rng) -> SmallestThree {
    let c = |rng: &mut Rng| on_grid(rng.range_f64(-0.7, 0.7), &ROT_Q);
    SmallestThree {
        largest: rng.below(4) as u8,
        a: c(rng),
        b: c(rng),
        c: c(rng),
    }
}

/// A cube scene of `count` cubes with random ids, positions and orientations.
pub fn cube_scene(rng: &mut Rng, count: usize) -> CubeScene {
    let mut scene = CubeScene::new();
    while scene.len() < count.min(900) {
        let id = rng.below(1024) as u32;
        let p = |rng: &mut Rng| on_grid(rng.range_f64(0.0, 256.0), &POS_Q);
        let cube = Cube {
            position: CubePosition {
                x: p(rng),
                y: p(rng),
                z: p(rng),
            },
            orientation: cube_orientation(rng),
            at_rest: rng.chance(0.5),
        };
        // In range and below the cap: cannot fail.
        let _ = scene.insert(id, cube);
    }
    scene
}

/// One 60 Hz tick: each cube moves with probability `moving` (a few cm per axis, a
/// small turn, awake); the others do not change.
pub fn cube_tick(rng: &mut Rng, scene: &mut CubeScene, moving: f64) {
    for (_, cube) in scene.iter_mut() {
        if !rng.chance(moving) {
            continue;
        }
        cube.at_rest = false;
        let step = |rng: &mut Rng, v: f32| on_grid(f64::from(v) + rng.range_f64(-0.1, 0.1), &POS_Q);
        cube.position.x = step(rng, cube.position.x);
        cube.position.y = step(rng, cube.position.y);
        cube.position.z = step(rng, cube.position.z);
        let turn =
            |rng: &mut Rng, v: f32| on_grid(f64::from(v) + rng.range_f64(-0.02, 0.02), &ROT_Q);
        cube.orientation.a = turn(rng, cube.orientation.a);
        cube.orientation.b = turn(rng, cube.orientation.b);
        cube.orientation.c = turn(rng, cube.orientation.c);
    }
}

/// An arena of `count` entities with ids 0.. and random state.
pub fn arena_scene(rng: &mut Rng, count: usize) -> ArenaScene {
    let mut scene = ArenaScene::new();
    for id in 0..count.min(64) as u32 {
        let entity = ArenaEntity {
            x: on_grid(rng.range_f64(-60.0, 60.0), &ARENA_Q),
            y: on_grid(rng.range_f64(-60.0, 60.0), &ARENA_Q),
            yaw: on_grid(rng.range_f64(-3.1, 3.1), &YAW_Q),
            health: rng.below(101) as u8,
            state: ArenaState::Running,
        };
        let _ = scene.insert(id, entity);
    }
    scene
}

/// One 20 Hz tick: each entity moves with probability `moving` (up to 30 cm, a turn
/// of up to 0.2 rad), sometimes takes damage or changes state.
pub fn arena_tick(rng: &mut Rng, scene: &mut ArenaScene, moving: f64) {
    for (_, e) in scene.iter_mut() {
        if rng.chance(moving) {
            e.x = on_grid(f64::from(e.x) + rng.range_f64(-0.3, 0.3), &ARENA_Q);
            e.y = on_grid(f64::from(e.y) + rng.range_f64(-0.3, 0.3), &ARENA_Q);
            e.yaw = on_grid(f64::from(e.yaw) + rng.range_f64(-0.2, 0.2), &YAW_Q);
        }
        if rng.chance(0.1) {
            e.health = e.health.saturating_sub(rng.below(20) as u8);
        }
        if rng.chance(0.05) {
            e.state = match rng.below(4) {
                0 => ArenaState::Idle,
                1 => ArenaState::Running,
                2 => ArenaState::Shooting(rng.below(16) as u8),
                _ => ArenaState::Dead,
            };
        }
    }
}
