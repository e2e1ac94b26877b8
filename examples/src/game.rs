//! The messages of a small arena shooter, annotated for netproto.

// Angle ranges are written as 3.1416 and 1.5708 on purpose: rounded up from pi and pi/2
// so that the whole circle fits the declared range.
#![allow(clippy::approx_constant)]

use netproto::NetMessage;
use netproto::sim::Rng;

/// Aim and heading ranges: pi rounded up, so the whole circle fits.
pub const HALF_TURN: f32 = 3.1416;
/// Pitch range: pi/2 rounded up.
pub const QUARTER_TURN: f32 = 1.5708;

/// Button bit flags of [`PlayerInput::buttons`].
pub mod buttons {
    /// Primary fire.
    pub const FIRE: u8 = 1 << 0;
    /// Jump.
    pub const JUMP: u8 = 1 << 1;
    /// Crouch.
    pub const CROUCH: u8 = 1 << 2;
    /// Reload.
    pub const RELOAD: u8 = 1 << 3;
    /// Use / interact.
    pub const USE: u8 = 1 << 4;
    /// Sprint.
    pub const SPRINT: u8 = 1 << 5;
}

/// One tick of a player's input: 6 + 8 + 13 + 12 + 4 + 4 = 47 bits.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub struct PlayerInput {
    /// Client tick, wrapping at 64.
    #[net(bits = 6)]
    pub tick: u8,
    /// Held buttons, see [`buttons`].
    #[net(bits = 8)]
    pub buttons: u8,
    /// Aim yaw in radians.
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
    pub aim_yaw: f32,
    /// Aim pitch in radians.
    #[net(quantize(min = -1.5708, max = 1.5708, res = 0.001))]
    pub aim_pitch: f32,
    /// Stick x, -7 (left) to 7 (right).
    #[net(range = -7..=7)]
    pub move_x: i8,
    /// Stick y, -7 (back) to 7 (forward).
    #[net(range = -7..=7)]
    pub move_y: i8,
}

/// A position in the 2 km arena, to 1 cm: 18 + 18 + 16 = 52 bits.
#[derive(NetMessage, Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub struct Position {
    /// East, metres.
    #[net(quantize(min = -1024.0, max = 1024.0, res = 0.01))]
    pub x: f32,
    /// North, metres.
    #[net(quantize(min = -1024.0, max = 1024.0, res = 0.01))]
    pub y: f32,
    /// Up, metres.
    #[net(quantize(min = -64.0, max = 448.0, res = 0.01))]
    pub z: f32,
}

/// What an entity is doing.
#[derive(NetMessage, Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub enum EntityState {
    /// Standing still.
    Idle,
    /// Moving at `speed` (0..=15 m/s).
    Moving {
        /// Metres per second.
        #[net(range = 0..=15)]
        speed: u8,
    },
    /// Attacking another entity.
    Attacking {
        /// The target's id.
        target: EntityId,
    },
    /// Dead, respawning in `respawn_ticks`.
    Dead {
        /// Ticks until respawn.
        #[net(range = 0..=300)]
        respawn_ticks: u16,
    },
}

/// An entity id: at most 4096 entities in an arena.
#[derive(NetMessage, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub struct EntityId(#[net(range = 0..=4095)] pub u16);

/// The server's update of one entity.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub struct EntityUpdate {
    /// Which entity.
    pub entity: EntityId,
    /// Where it is.
    pub position: Position,
    /// Heading, radians.
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.01))]
    pub heading: f32,
    /// Health points.
    #[net(range = 0..=100)]
    pub health: u8,
    /// What it is doing.
    pub state: EntityState,
}

/// A chat line from a player.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub struct ChatMessage {
    /// Sender's player slot (64 players).
    #[net(range = 0..=63)]
    pub from: u8,
    /// UTF-8 text, at most 140 bytes.
    #[net(max_len = 140)]
    pub text: String,
}

/// Entities that left the player's view this tick.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub struct EntityBatch {
    /// At most 64 ids.
    #[net(max_len = 64)]
    pub ids: Vec<EntityId>,
}

/// The phase of the match.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub enum MatchPhase {
    /// Waiting for players.
    Warmup {
        /// Players connected.
        #[net(range = 0..=64)]
        players: u8,
    },
    /// Countdown before the round.
    Countdown {
        /// Seconds left.
        #[net(range = 0..=10)]
        seconds: u8,
    },
    /// Round in progress.
    Playing {
        /// Round number.
        #[net(range = 1..=30)]
        round: u8,
        /// Score of team red.
        #[net(range = 0..=999)]
        red: u16,
        /// Score of team blue.
        #[net(range = 0..=999)]
        blue: u16,
    },
    /// Round over.
    RoundOver {
        /// Winning team: None for a draw.
        winner: Option<bool>,
    },
}

/// Size of a naive byte encoding: every field at its in-memory width (what a memcpy of
/// the struct, or a fixed-width encoder, sends), strings and sequences with a 4-byte
/// length. The baseline the examples compare against.
pub trait NaiveSize {
    /// Bytes of the naive encoding.
    fn naive_size(&self) -> usize;
}

impl NaiveSize for PlayerInput {
    fn naive_size(&self) -> usize {
        1 + 1 + 4 + 4 + 1 + 1
    }
}

impl NaiveSize for EntityUpdate {
    fn naive_size(&self) -> usize {
        // id, 3 floats, heading, health, state tag + largest payload (u16).
        2 + 12 + 4 + 1 + 1 + 2
    }
}

impl NaiveSize for ChatMessage {
    fn naive_size(&self) -> usize {
        1 + 4 + self.text.len()
    }
}

impl NaiveSize for EntityBatch {
    fn naive_size(&self) -> usize {
        4 + 2 * self.ids.len()
    }
}

impl NaiveSize for MatchPhase {
    fn naive_size(&self) -> usize {
        // tag + largest payload (u8 + 2 x u16).
        1 + 5
    }
}

/// Every message the arena sends, as one message set: 3 bits of type id, then the
/// message. Adding a message type is adding a variant.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set, max_bits = 1200)]
#[cfg_attr(
    feature = "compare",
    derive(
        bitcode::Encode,
        bitcode::Decode,
        bincode::Encode,
        bincode::Decode,
        serde::Serialize,
        serde::Deserialize
    )
)]
pub enum GameMessage {
    /// A player's input.
    Input(PlayerInput),
    /// An entity update.
    Update(EntityUpdate),
    /// A chat line.
    Chat(ChatMessage),
    /// Entities that left the view.
    Batch(EntityBatch),
    /// A match-phase change.
    Phase(MatchPhase),
}

/// A seeded, realistic mix of `count` messages: 50% inputs, 30% entity updates, 10%
/// batches of ids, 5% chat, 5% match-phase changes, every value drawn within its
/// declared range.
pub fn workload(count: usize, seed: u64) -> Vec<GameMessage> {
    let mut rng = Draw(Rng::new(seed));
    (0..count).map(|_| random_message(&mut rng)).collect()
}

/// Draws values within declared ranges from the simulator's seeded generator.
struct Draw(Rng);

impl Draw {
    /// Uniform in `[lo, hi]`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.0.below((hi - lo + 1) as u64) as i64
    }

    /// Uniform in `[lo, hi]`.
    fn float(&mut self, lo: f32, hi: f32) -> f32 {
        (lo + self.0.next_f64() as f32 * (hi - lo)).clamp(lo, hi)
    }
}

fn random_id(rng: &mut Draw) -> EntityId {
    EntityId(rng.int(0, 4095) as u16)
}

fn random_message(rng: &mut Draw) -> GameMessage {
    const WORDS: [&str; 8] = [
        "gg",
        "nice shot",
        "rematch?",
        "on my way",
        "lol",
        "help B",
        "été",
        "✌",
    ];
    match rng.int(0, 99) {
        0..=49 => GameMessage::Input(PlayerInput {
            tick: rng.int(0, 63) as u8,
            buttons: rng.int(0, 255) as u8,
            aim_yaw: rng.float(-HALF_TURN, HALF_TURN),
            aim_pitch: rng.float(-QUARTER_TURN, QUARTER_TURN),
            move_x: rng.int(-7, 7) as i8,
            move_y: rng.int(-7, 7) as i8,
        }),
        50..=79 => GameMessage::Update(EntityUpdate {
            entity: random_id(rng),
            position: Position {
                x: rng.float(-1024.0, 1024.0),
                y: rng.float(-1024.0, 1024.0),
                z: rng.float(-64.0, 448.0),
            },
            heading: rng.float(-HALF_TURN, HALF_TURN),
            health: rng.int(0, 100) as u8,
            state: match rng.int(0, 3) {
                0 => EntityState::Idle,
                1 => EntityState::Moving {
                    speed: rng.int(0, 15) as u8,
                },
                2 => EntityState::Attacking {
                    target: random_id(rng),
                },
                _ => EntityState::Dead {
                    respawn_ticks: rng.int(0, 300) as u16,
                },
            },
        }),
        80..=89 => {
            let len = rng.int(0, 8) as usize;
            GameMessage::Batch(EntityBatch {
                ids: (0..len).map(|_| random_id(rng)).collect(),
            })
        }
        90..=94 => {
            let words = rng.int(1, 4);
            let text = (0..words)
                .map(|_| WORDS[rng.int(0, WORDS.len() as i64 - 1) as usize])
                .collect::<Vec<_>>()
                .join(" ");
            GameMessage::Chat(ChatMessage {
                from: rng.int(0, 63) as u8,
                text,
            })
        }
        _ => GameMessage::Phase(match rng.int(0, 3) {
            0 => MatchPhase::Warmup {
                players: rng.int(0, 64) as u8,
            },
            1 => MatchPhase::Countdown {
                seconds: rng.int(0, 10) as u8,
            },
            2 => MatchPhase::Playing {
                round: rng.int(1, 30) as u8,
                red: rng.int(0, 999) as u16,
                blue: rng.int(0, 999) as u16,
            },
            _ => MatchPhase::RoundOver {
                winner: match rng.int(0, 2) {
                    0 => None,
                    1 => Some(false),
                    _ => Some(true),
                },
            },
        }),
    }
}

impl NaiveSize for GameMessage {
    fn naive_size(&self) -> usize {
        // A one-byte type tag, then the message.
        1 + match self {
            GameMessage::Input(m) => m.naive_size(),
            GameMessage::Update(m) => m.naive_size(),
            GameMessage::Chat(m) => m.naive_size(),
            GameMessage::Batch(m) => m.naive_size(),
            GameMessage::Phase(m) => m.naive_size(),
        }
    }
}
