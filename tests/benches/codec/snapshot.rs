//! A second message set, shaped like a shooter's snapshot traffic: entity updates with
//! four quantized floats, a 16-bit yaw and an animation enum; player inputs with a full
//! `u32` tick, button flags and two quantized angles; a few chat lines and id batches.
//! Two mixes of it are benchmarked: snapshot-heavy and input-heavy.

// Angle ranges are pi and pi/2 rounded up, on purpose.
#![allow(clippy::approx_constant)]

use netproto::NetMessage;
use netproto::sim::Rng;

/// Derives every compared encoding for a message: netproto's, bitcode's, bincode's and
/// serde's (for postcard).
macro_rules! compared {
    ($item:item) => {
        #[derive(
            NetMessage,
            Debug,
            Clone,
            PartialEq,
            bitcode::Encode,
            bitcode::Decode,
            bincode::Encode,
            bincode::Decode,
            serde::Serialize,
            serde::Deserialize,
        )]
        $item
    };
}

compared! {
    /// What an entity's model is playing.
    pub(crate) enum Anim {
        Idle,
        Walk,
        Run,
        Jump,
        Fall,
        Attack,
    }
}

compared! {
    /// An entity id (16384 entities).
    pub(crate) struct EntityRef(#[net(range = 0..=16383)] pub u16);
}

compared! {
    /// One entity in a snapshot: 14 + 19 + 19 + 17 + 13 + 16 + 3 = 101 bits.
    pub(crate) struct SnapEntity {
        pub(crate) id: EntityRef,
        #[net(quantize(min = -2048.0, max = 2048.0, res = 0.01))]
        pub(crate) x: f32,
        #[net(quantize(min = -2048.0, max = 2048.0, res = 0.01))]
        pub(crate) y: f32,
        #[net(quantize(min = -256.0, max = 768.0, res = 0.01))]
        pub(crate) z: f32,
        #[net(quantize(min = 0.0, max = 64.0, res = 0.01))]
        pub(crate) speed: f32,
        pub(crate) yaw: u16,
        pub(crate) anim: Anim,
    }
}

compared! {
    /// A player's input: 32 + 10 + 14 + 13 = 69 bits.
    pub(crate) struct SnapInput {
        pub(crate) tick: u32,
        #[net(bits = 10)]
        pub(crate) buttons: u16,
        #[net(quantize(min = -3.1416, max = 3.1416, res = 0.0005))]
        pub(crate) yaw: f32,
        #[net(quantize(min = -1.5708, max = 1.5708, res = 0.0005))]
        pub(crate) pitch: f32,
    }
}

compared! {
    /// A chat line.
    pub(crate) struct SnapChat {
        #[net(range = 0..=63)]
        pub(crate) from: u8,
        #[net(max_len = 96)]
        pub(crate) text: String,
    }
}

compared! {
    /// Entities that left the view.
    pub(crate) struct SnapIds {
        #[net(max_len = 32)]
        pub(crate) ids: Vec<EntityRef>,
    }
}

/// The set: 2 bits of type id.
// Not through `compared!`: bincode's derive cannot see its own bindings of tuple
// variants from inside a `macro_rules!`.
#[derive(
    NetMessage,
    Debug,
    Clone,
    PartialEq,
    bitcode::Encode,
    bitcode::Decode,
    bincode::Encode,
    bincode::Decode,
    serde::Serialize,
    serde::Deserialize,
)]
#[net(message_set)]
pub(crate) enum SnapMessage {
    Entity(SnapEntity),
    Input(SnapInput),
    Chat(SnapChat),
    Ids(SnapIds),
}

compared! {
    /// Percentages of entity updates, inputs and chat lines (id batches take the rest).
    pub(crate) struct Mix {
        pub(crate) entity: u64,
        pub(crate) input: u64,
        pub(crate) chat: u64,
    }
}

/// 80% entity updates, 12% inputs, 4% chat, 4% id batches.
pub(crate) const SNAPSHOT: Mix = Mix {
    entity: 80,
    input: 12,
    chat: 4,
};

/// 85% inputs, 10% entity updates, 3% chat, 2% id batches.
pub(crate) const INPUT: Mix = Mix {
    entity: 10,
    input: 85,
    chat: 3,
};

/// `count` seeded messages of `mix`, every value within its declared range.
pub(crate) fn workload(mix: &Mix, count: usize, seed: u64) -> Vec<SnapMessage> {
    const WORDS: [&str; 6] = ["gg", "push mid", "reloading", "été", "✌", "need heal"];
    let mut rng = Rng::new(seed);
    let float =
        |rng: &mut Rng, lo: f32, hi: f32| (lo + rng.next_f64() as f32 * (hi - lo)).clamp(lo, hi);
    let id = |rng: &mut Rng| EntityRef(rng.below(16384) as u16);
    (0..count)
        .map(|_| {
            let pick = rng.below(100);
            if pick < mix.entity {
                SnapMessage::Entity(SnapEntity {
                    id: id(&mut rng),
                    x: float(&mut rng, -2048.0, 2048.0),
                    y: float(&mut rng, -2048.0, 2048.0),
                    z: float(&mut rng, -256.0, 768.0),
                    speed: float(&mut rng, 0.0, 64.0),
                    yaw: rng.next_u64() as u16,
                    anim: match rng.below(6) {
                        0 => Anim::Idle,
                        1 => Anim::Walk,
                        2 => Anim::Run,
                        3 => Anim::Jump,
                        4 => Anim::Fall,
                        _ => Anim::Attack,
                    },
                })
            } else if pick < mix.entity + mix.input {
                SnapMessage::Input(SnapInput {
                    tick: rng.next_u64() as u32,
                    buttons: rng.below(1024) as u16,
                    yaw: float(&mut rng, -3.1416, 3.1416),
                    pitch: float(&mut rng, -1.5708, 1.5708),
                })
            } else if pick < mix.entity + mix.input + mix.chat {
                let words = 1 + rng.below(4);
                let text = (0..words)
                    .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                    .collect::<Vec<_>>()
                    .join(" ");
                SnapMessage::Chat(SnapChat {
                    from: rng.below(64) as u8,
                    text,
                })
            } else {
                let len = rng.below(17) as usize;
                SnapMessage::Ids(SnapIds {
                    ids: (0..len).map(|_| id(&mut rng)).collect(),
                })
            }
        })
        .collect()
}
