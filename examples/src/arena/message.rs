//! What the arena sends: the game's inputs, chat lines and match phases, and the
//! entities as delta snapshots (each client's against the newest snapshot it is known
//! to hold, see `netproto::delta`), in a message set of its own.

use netproto::NetMessage;
use netproto::delta::{DEFAULT_RING, Entities, SnapshotHeader};

use crate::game::{ChatMessage, EntityState, MatchPhase, NaiveSize, PlayerInput};

/// What an entity is doing, as the snapshots carry it (sent whole when it changes).
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub enum Motion {
    /// Standing.
    Idle,
    /// Moving at this speed (m/s).
    Moving(#[net(range = 0..=15)] u8),
}

impl From<EntityState> for Motion {
    fn from(state: EntityState) -> Self {
        match state {
            EntityState::Moving { speed } => Self::Moving(speed),
            _ => Self::Idle,
        }
    }
}

/// One entity in a snapshot: the fields of the game's `EntityUpdate`, with delta
/// ranges. A position moves at most 9 m/s, 0.45 m (45 steps of 1 cm) per 20 Hz
/// snapshot, so a delta of up to 255 steps covers a baseline 5 snapshots back (9
/// bits instead of 18); beyond, the absolute value goes.
#[derive(NetMessage, Clone, Copy, Debug, PartialEq)]
#[net(delta)]
pub struct EntityView {
    /// x, metres.
    #[net(quantize(min = -1024.0, max = 1024.0, res = 0.01), delta = -255..=255)]
    pub x: f32,
    /// y, metres.
    #[net(quantize(min = -1024.0, max = 1024.0, res = 0.01), delta = -255..=255)]
    pub y: f32,
    /// z, metres.
    #[net(quantize(min = -64.0, max = 448.0, res = 0.01), delta = -255..=255)]
    pub z: f32,
    /// Heading, radians.
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.01), delta = -31..=31)]
    pub heading: f32,
    /// Hit points.
    #[net(range = 0..=100, delta = -15..=15)]
    pub health: u8,
    /// What it is doing.
    pub motion: Motion,
}

/// Every entity a client sees, by entity id (the game's `EntityId`, 0 to 4095).
pub type ArenaView = Entities<EntityView, 4095, 64>;

/// The largest snapshot on the wire: its header and a full view.
pub const SNAPSHOT_BYTES: usize =
    (SnapshotHeader::bits::<DEFAULT_RING>(true) + <ArenaView as NetMessage>::MAX_BITS).div_ceil(8);

/// A snapshot of the client's view, as its `SnapshotSender` wrote it.
#[derive(NetMessage, Clone, Debug, PartialEq)]
pub struct SnapshotBytes {
    /// The header and the view, full or as a delta.
    #[net(max_len = SNAPSHOT_BYTES)]
    pub bytes: Vec<u8>,
}

/// Every message of the arena.
#[derive(NetMessage, Clone, Debug, PartialEq)]
#[net(message_set)]
pub enum ArenaMessage {
    /// A player's input.
    Input(PlayerInput),
    /// A chat line.
    Chat(ChatMessage),
    /// A match-phase change.
    Phase(MatchPhase),
    /// The entities.
    Snapshot(SnapshotBytes),
}

impl NaiveSize for ArenaMessage {
    /// A one-byte tag and the message's naive size; a snapshot counts its bytes (the
    /// host tallies its entities' naive size instead, see `Host::tick`).
    fn naive_size(&self) -> usize {
        1 + match self {
            Self::Input(m) => m.naive_size(),
            Self::Chat(m) => m.naive_size(),
            Self::Phase(m) => m.naive_size(),
            Self::Snapshot(s) => s.bytes.len(),
        }
    }
}
