//! The code `#[derive(NetMessage)]` generates is lint-clean: this file derives over every
//! shape of message (structs of each kind, enums, quantized and raw floats, strings,
//! sequences, options, arrays, tuples, nested and generic types, constant bounds,
//! message sets) with rustc's warnings, several allow-by-default rustc lints and
//! clippy's pedantic group denied. `cargo clippy --all-targets -- -D warnings` (CI)
//! checks it, and a lint that fires in generated code fails the build here.

#![deny(
    warnings,
    future_incompatible,
    nonstandard_style,
    rust_2018_idioms,
    unused,
    unused_qualifications,
    unused_results,
    trivial_casts,
    trivial_numeric_casts,
    single_use_lifetimes,
    let_underscore_drop,
    clippy::all,
    clippy::pedantic
)]

use netproto::{MessageSet, NetMessage};

/// A constant bound: the derive leaves it to `const` assertions.
const MAX_PLAYERS: u8 = 64;
/// A constant length.
const MAX_NAME: usize = 16;
/// A constant width.
const TICK_BITS: u32 = 12;
/// A constant quantization bound.
const HALF_ARENA: f32 = 512.0;

/// Every fixed-width encoding, in more than 64 bits (several fused runs).
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Fixed {
    #[net(range = 0..=100)]
    health: u8,
    #[net(range = -8..8)]
    dx: i8,
    #[net(range = i64::MIN..=i64::MAX)]
    full: i64,
    #[net(bits = 12)]
    tick: u16,
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
    yaw: f32,
    raw: f32,
    precise: f64,
    wide: u64,
    signed: i32,
    fire: bool,
    #[net(range = 7..=7)]
    constant: u32,
    #[net(skip)]
    predicted: u16,
}

/// Constant bounds of every kind.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Bounded {
    #[net(range = 0..=MAX_PLAYERS)]
    player: u8,
    #[net(range = 1..MAX_PLAYERS)]
    other: u8,
    #[net(bits = TICK_BITS)]
    tick: u32,
    #[net(quantize(min = -HALF_ARENA, max = HALF_ARENA, res = 0.5))]
    x: f32,
    #[net(max_len = MAX_NAME)]
    name: String,
    #[net(max_len = MAX_NAME)]
    scores: Vec<u16>,
}

/// Strings, sequences, options, arrays and tuples.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Shapes {
    #[net(max_len = 32)]
    text: String,
    #[net(max_len = 0)]
    nothing: Vec<u8>,
    #[net(max_len = 8)]
    items: Vec<Fixed>,
    maybe: Option<u8>,
    grid: [bool; 4],
    pair: (u8, bool),
    nested: Option<Unit>,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Tuple(#[net(range = -8..=7)] i8, #[net(bits = 3)] u8, Bounded);

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Unit;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Empty {}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct OnlySkipped {
    #[net(skip)]
    cache: u32,
}

/// Every kind of variant.
#[derive(NetMessage, Debug, Clone, PartialEq)]
enum Command {
    Stop,
    Move {
        #[net(range = -8..=7)]
        dx: i8,
        #[net(range = -8..=7)]
        dy: i8,
    },
    Say(#[net(max_len = 64)] String),
    Spawn(Fixed, Option<Unit>),
    Skipped {
        #[net(skip)]
        local: bool,
    },
}

/// One variant: its pattern is irrefutable.
#[derive(NetMessage, Debug, Clone, PartialEq)]
enum Single {
    Only {
        #[net(range = 0..=3)]
        lane: u8,
        fire: bool,
    },
}

/// One unit variant: no index, no bits.
#[derive(NetMessage, Debug, Clone, PartialEq)]
enum Lone {
    Alone,
}

/// A type parameter, with the `NetMessage` bound the derive adds.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Wrapper<T> {
    inner: T,
    #[net(max_len = 4)]
    more: Vec<T>,
}

/// A message set, bounded.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set, max_bits = 8000)]
enum GameMessage {
    Fixed(Fixed),
    Command(Command),
    Shapes(Shapes),
}

/// A message set of one type, with a constant bound.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set, max_bits = MAX_SET_BITS)]
enum OneSet {
    Single(Single),
}

/// The bound of `OneSet`.
const MAX_SET_BITS: u32 = 64;

fn fixed() -> Fixed {
    Fixed {
        health: 97,
        dx: -8,
        full: i64::MIN,
        tick: 4095,
        yaw: 0.0,
        raw: 1.5,
        precise: -2.25,
        wide: u64::MAX,
        signed: -1,
        fire: true,
        constant: 7,
        predicted: 0,
    }
}

fn bounded() -> Bounded {
    Bounded {
        player: MAX_PLAYERS,
        other: 1,
        tick: 4095,
        x: -HALF_ARENA,
        name: "lint".to_owned(),
        scores: vec![1, 2, 3],
    }
}

fn roundtrip<T: NetMessage + PartialEq + core::fmt::Debug>(message: &T) {
    let bytes = netproto::encode(message).expect("encodes");
    let back: T = netproto::decode(&bytes).expect("decodes");
    assert_eq!(&back, message);
}

#[test]
fn every_shape_round_trips() {
    roundtrip(&fixed());
    roundtrip(&bounded());
    roundtrip(&Shapes {
        text: "hello".to_owned(),
        nothing: Vec::new(),
        items: vec![fixed(), fixed()],
        maybe: Some(3),
        grid: [true, false, true, true],
        pair: (9, true),
        nested: Some(Unit),
    });
    roundtrip(&Tuple(-8, 7, bounded()));
    roundtrip(&Unit);
    roundtrip(&Empty {});
    roundtrip(&OnlySkipped { cache: 0 });
    for command in [
        Command::Stop,
        Command::Move { dx: -8, dy: 7 },
        Command::Say("hi".to_owned()),
        Command::Spawn(fixed(), None),
        Command::Skipped { local: false },
    ] {
        roundtrip(&command);
    }
    roundtrip(&Single::Only {
        lane: 3,
        fire: true,
    });
    roundtrip(&Lone::Alone);
    roundtrip(&Wrapper {
        inner: 5u8,
        more: vec![1, 2],
    });
    roundtrip(&GameMessage::from(Command::Stop));
    roundtrip(&OneSet::from(Single::Only {
        lane: 0,
        fire: false,
    }));
    assert_eq!(GameMessage::COUNT, 3);
    assert_eq!(
        OneSet::from(Single::Only {
            lane: 1,
            fire: true
        })
        .type_id(),
        0
    );
}

/// Every field kind of a `#[net(delta)]` struct, constant bounds included.
#[derive(NetMessage, Clone, Debug, PartialEq)]
#[net(delta)]
struct DeltaShapes {
    #[net(range = 0..=MAX_PLAYERS, delta = -3..=3)]
    players: u8,
    #[net(range = -100..=100, delta = -10..=10)]
    signed: i16,
    #[net(bits = 12, delta = -7..=7)]
    tick: u16,
    #[net(bits = TICK_BITS)]
    wide: u32,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01), delta = -5..=5)]
    q: f32,
    #[net(quantize(min = -HALF_ARENA, max = HALF_ARENA, res = 0.5))]
    qc: f32,
    #[net(max_len = MAX_NAME)]
    name: String,
    #[net(max_len = 4)]
    list: Vec<u8>,
    flag: bool,
    raw: u64,
    float: f64,
    maybe: Option<u8>,
    array: [u16; 2],
    state: DeltaState,
    #[net(skip)]
    local: u8,
}

/// An enum with a delta form: whole when changed.
#[derive(NetMessage, Clone, Debug, PartialEq)]
#[net(delta)]
enum DeltaState {
    Idle,
    Busy(#[net(range = 0..=9)] u8),
}

/// A generic delta struct, and one with nothing sent.
#[derive(NetMessage, Clone, Debug, PartialEq)]
#[net(delta)]
struct DeltaWrapper<T> {
    inner: T,
    #[net(skip)]
    cache: u8,
}

#[derive(NetMessage, Clone, Debug, PartialEq)]
#[net(delta)]
struct DeltaEmpty {}

#[test]
fn delta_shapes_round_trip() {
    use netproto::delta::{decode_delta, encode_delta};
    let base = DeltaShapes {
        players: 10,
        signed: -50,
        tick: 4000,
        wide: 1,
        q: 0.5,
        qc: 0.0,
        name: "a".to_owned(),
        list: vec![1],
        flag: false,
        raw: 7,
        float: 1.5,
        maybe: None,
        array: [1, 2],
        state: DeltaState::Idle,
        local: 0,
    };
    let now = DeltaShapes {
        players: 12,
        signed: 100,
        tick: 4001,
        wide: 2,
        q: -1.0,
        qc: 0.5,
        name: "b".to_owned(),
        list: vec![],
        flag: true,
        raw: 8,
        float: 2.5,
        maybe: Some(3),
        array: [1, 3],
        state: DeltaState::Busy(9),
        local: 0,
    };
    for (now, base) in [(&now, &base), (&base, &now), (&base, &base)] {
        let bytes = encode_delta(now, base).expect("in range");
        assert_eq!(decode_delta(&bytes, base).as_ref(), Ok(now));
    }
    let wrapped = DeltaWrapper {
        inner: 3u8,
        cache: 0,
    };
    let bytes = encode_delta(
        &wrapped,
        &DeltaWrapper {
            inner: 4u8,
            cache: 0,
        },
    )
    .expect("fits");
    // The changed bit, then the u8 whole.
    assert_eq!(bytes, [0b0000_0111, 0]);
    assert!(
        encode_delta(&DeltaEmpty {}, &DeltaEmpty {})
            .expect("empty")
            .is_empty()
    );
}
