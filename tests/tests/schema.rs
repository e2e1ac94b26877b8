//! The schema description (`NetMessage::SCHEMA`) and the schema fingerprint.
//!
//! - the description matches the declarations: fields in order, kinds, bounds, bits, and
//!   the same `MIN_BITS` / `MAX_BITS` as the generated code;
//! - the fingerprint is pinned by test vectors (the algorithm is specified on
//!   `Schema::write_canonical`: any change to it or to the canonical encoding fails
//!   here), is a compile-time constant, and changes when a field is added, removed,
//!   reordered, renamed, retyped or re-bounded.

#![allow(dead_code, clippy::approx_constant)]

use netproto::schema::{Field, IntType, Kind, Schema, Variant, fnv1a_64};
use netproto::{MessageSet, NetMessage};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityId, EntityState, EntityUpdate, GameMessage, MatchPhase,
    PlayerInput, Position,
};

fn canonical(schema: &Schema) -> Vec<u8> {
    let mut out = Vec::new();
    schema.write_canonical(&mut out);
    out
}

/// `SCHEMA` agrees with `MIN_BITS` / `MAX_BITS` and the fingerprint with the written
/// encoding.
fn consistent<T: NetMessage>() {
    assert_eq!(T::SCHEMA.max_bits, T::MAX_BITS, "{}", T::SCHEMA.name);
    assert_eq!(T::SCHEMA.min_bits, T::MIN_BITS, "{}", T::SCHEMA.name);
    assert_eq!(
        T::SCHEMA.fingerprint(),
        fnv1a_64(&canonical(T::SCHEMA)),
        "{}",
        T::SCHEMA.name
    );
}

#[test]
fn example_messages_describe_themselves() {
    consistent::<PlayerInput>();
    consistent::<Position>();
    consistent::<EntityState>();
    consistent::<EntityId>();
    consistent::<EntityUpdate>();
    consistent::<ChatMessage>();
    consistent::<EntityBatch>();
    consistent::<MatchPhase>();
    consistent::<GameMessage>();

    let input = PlayerInput::SCHEMA;
    assert_eq!(input.name, "PlayerInput");
    let fields: Vec<(&str, Kind)> = input
        .fields()
        .iter()
        .map(|f| (f.name, f.schema.kind))
        .collect();
    assert_eq!(
        fields,
        [
            (
                "tick",
                Kind::Bits {
                    ty: IntType::U8,
                    bits: 6
                }
            ),
            (
                "buttons",
                Kind::Bits {
                    ty: IntType::U8,
                    bits: 8
                }
            ),
            (
                "aim_yaw",
                Kind::Quantized {
                    min: -3.1416,
                    max: 3.1416,
                    res: 0.001,
                    bits: 13
                }
            ),
            (
                "aim_pitch",
                Kind::Quantized {
                    min: -1.5708,
                    max: 1.5708,
                    res: 0.001,
                    bits: 12
                }
            ),
            (
                "move_x",
                Kind::Int {
                    ty: IntType::I8,
                    min: -7,
                    max: 7
                }
            ),
            (
                "move_y",
                Kind::Int {
                    ty: IntType::I8,
                    min: -7,
                    max: 7
                }
            ),
        ]
    );
    let bits: Vec<usize> = input.fields().iter().map(|f| f.schema.max_bits).collect();
    assert_eq!(bits, [6, 8, 13, 12, 4, 4]);

    // Nested types are their own schemas.
    let update = EntityUpdate::SCHEMA.fields();
    assert_eq!(update[0].schema, EntityId::SCHEMA);
    assert_eq!(update[1].schema, Position::SCHEMA);
    assert_eq!(update[4].schema, EntityState::SCHEMA);
    let states: Vec<&str> = EntityState::SCHEMA
        .variants()
        .iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(states, ["Idle", "Moving", "Attacking", "Dead"]);

    // Strings and sequences carry their bounds.
    assert_eq!(
        ChatMessage::SCHEMA.fields()[1].schema.kind,
        Kind::String { max_len: 140 }
    );
    assert_eq!(
        EntityBatch::SCHEMA.fields()[0].schema.kind,
        Kind::Sequence {
            max_len: 64,
            element: EntityId::SCHEMA
        }
    );

    // A message set is an enum of one-field variants, one per type.
    let types: Vec<(&str, &str)> = GameMessage::SCHEMA
        .variants()
        .iter()
        .map(|v| (v.name, v.fields[0].schema.name))
        .collect();
    assert_eq!(
        types,
        [
            ("Input", "PlayerInput"),
            ("Update", "EntityUpdate"),
            ("Chat", "ChatMessage"),
            ("Batch", "EntityBatch"),
            ("Phase", "MatchPhase")
        ]
    );
}

const LIMIT: u16 = 500;
const BITS: u32 = 10;

#[derive(NetMessage)]
struct Shapes {
    #[net(range = 10..LIMIT)]
    below_limit: u16,
    #[net(bits = BITS)]
    raw: u32,
    #[net(max_len = 3)]
    bytes: Vec<u8>,
    maybe: Option<(u8, bool)>,
    grid: [[bool; 2]; 3],
    wide: i64,
    raw_f64: f64,
    #[net(skip)]
    cache: u32,
    unit: (),
}

#[derive(NetMessage)]
struct Wrapper<T> {
    inner: T,
    #[net(max_len = 2)]
    more: Vec<T>,
}

#[test]
fn every_shape_describes_itself() {
    consistent::<Shapes>();
    consistent::<Wrapper<Position>>();
    consistent::<Wrapper<Option<u8>>>();
    consistent::<(u8, [f32; 2], Option<bool>)>();

    let fields = Shapes::SCHEMA.fields();
    let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
    // The skipped field is not on the wire, so not in the schema.
    assert_eq!(
        names,
        [
            "below_limit",
            "raw",
            "bytes",
            "maybe",
            "grid",
            "wide",
            "raw_f64",
            "unit"
        ]
    );
    // Constant bounds are evaluated by the compiler (`10..LIMIT` is `10..=499`).
    assert_eq!(
        fields[0].schema.kind,
        Kind::Int {
            ty: IntType::U16,
            min: 10,
            max: 499
        }
    );
    assert_eq!(fields[0].schema.max_bits, 9);
    assert_eq!(
        fields[1].schema.kind,
        Kind::Bits {
            ty: IntType::U32,
            bits: 10
        }
    );
    assert_eq!(
        fields[2].schema.kind,
        Kind::Sequence {
            max_len: 3,
            element: u8::SCHEMA
        }
    );
    let Kind::Option(inner) = fields[3].schema.kind else {
        panic!("an option")
    };
    assert_eq!(inner.kind, Kind::Tuple(&[u8::SCHEMA, bool::SCHEMA]));
    let Kind::Array { len: 3, element } = fields[4].schema.kind else {
        panic!("an array of 3")
    };
    assert_eq!(
        element.kind,
        Kind::Array {
            len: 2,
            element: bool::SCHEMA
        }
    );
    assert_eq!(fields[5].schema.kind, Schema::full_int(IntType::I64).kind);
    assert_eq!(fields[6].schema.kind, Kind::F64);
    assert_eq!(fields[7].schema.kind, Kind::Tuple(&[]));

    assert_eq!(<Wrapper<u8>>::SCHEMA.name, "Wrapper");
    assert_eq!(<Wrapper<u8>>::SCHEMA.fields()[0].schema, u8::SCHEMA);
}

/// A hand-written impl without a schema is opaque; one with a schema is described.
struct Manual(u16);

impl NetMessage for Manual {
    const MAX_BITS: usize = 12;
    const MIN_BITS: usize = 12;
    fn blank() -> Self {
        Manual(0)
    }
    fn serialize_in<S: netproto::Stream, P: netproto::Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut value = this.get().0;
        stream.serialize_int(&mut value, 0, 4095)?;
        this.set(Self(value));
        Ok(())
    }
}

struct Described(u16);

impl NetMessage for Described {
    const MAX_BITS: usize = 12;
    const MIN_BITS: usize = 12;
    const SCHEMA: &'static Schema = &Schema::structure(
        "Described",
        &[Field::new("0", &Schema::int(IntType::U16, 0, 4095))],
    );
    fn blank() -> Self {
        Described(0)
    }
    fn serialize_in<S: netproto::Stream, P: netproto::Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut value = this.get().0;
        stream.serialize_int(&mut value, 0, 4095)?;
        this.set(Self(value));
        Ok(())
    }
}

#[test]
fn hand_written_impls() {
    consistent::<Manual>();
    consistent::<Described>();
    assert_eq!(Manual::SCHEMA.kind, Kind::Opaque);
    assert_eq!(Described::SCHEMA.fields()[0].schema.max_bits, 12);
    // Same wire format as the derived `EntityId`, but another name.
    assert_ne!(
        Described::SCHEMA.fingerprint(),
        EntityId::SCHEMA.fingerprint()
    );
}

// ---------------------------------------------------------------------------------
// Test vectors. Changing any of these values changes the protocol id of every user:
// only ever update them together with a deliberate change of the specified algorithm.

/// Computed by the compiler: the fingerprint is a `const fn`.
const GAME_MESSAGE_ID: u64 = GameMessage::FINGERPRINT;
const _: () = assert!(GAME_MESSAGE_ID == GameMessage::SCHEMA.fingerprint());

#[test]
fn canonical_encoding_vectors() {
    // Written out byte by byte from the specification on `Schema::write_canonical`.
    #[derive(NetMessage)]
    struct Hp {
        #[net(range = 0..=100)]
        hp: u8,
        ok: bool,
    }
    let mut expected = Vec::new();
    expected.extend_from_slice(&[2, 0, 0, 0]);
    expected.extend_from_slice(b"Hp");
    expected.push(0x0c); // struct
    expected.extend_from_slice(&[2, 0, 0, 0]); // 2 fields
    expected.extend_from_slice(&[2, 0, 0, 0]);
    expected.extend_from_slice(b"hp");
    expected.extend_from_slice(&[2, 0, 0, 0]);
    expected.extend_from_slice(b"u8");
    expected.extend_from_slice(&[0x02, 0x01]); // int, u8
    expected.extend_from_slice(&0i128.to_le_bytes());
    expected.extend_from_slice(&100i128.to_le_bytes());
    expected.extend_from_slice(&[2, 0, 0, 0]);
    expected.extend_from_slice(b"ok");
    expected.extend_from_slice(&[4, 0, 0, 0]);
    expected.extend_from_slice(b"bool");
    expected.push(0x01);
    assert_eq!(canonical(Hp::SCHEMA), expected);
    assert_eq!(Hp::SCHEMA.fingerprint(), fnv1a_64(&expected));
    assert_eq!(Hp::SCHEMA.fingerprint(), 0x502c_65e1_5957_cd7e);

    // A quantized float: its parameters as f32 bits.
    let mut expected = b"\x03\0\0\0f32\x06".to_vec();
    for v in [-1.0f32, 1.0, 0.5] {
        expected.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    assert_eq!(canonical(&Schema::quantized(-1.0, 1.0, 0.5)), expected);
}

#[test]
fn fingerprint_vectors() {
    let vectors: [(&str, u64, u64); 12] = [
        ("bool", bool::SCHEMA.fingerprint(), 0xb039_176f_6195_ff50),
        ("u8", u8::SCHEMA.fingerprint(), 0xb774_4cf4_4487_75f4),
        ("i64", i64::SCHEMA.fingerprint(), 0x0553_d746_9d4f_8b6d),
        ("f32", f32::SCHEMA.fingerprint(), 0x95f1_eb29_42b6_44ff),
        (
            "Option<u8>",
            <Option<u8>>::SCHEMA.fingerprint(),
            0xd58c_e0cd_7ad2_a194,
        ),
        (
            "PlayerInput",
            PlayerInput::SCHEMA.fingerprint(),
            0x0030_602c_54fd_45a8,
        ),
        (
            "EntityUpdate",
            EntityUpdate::SCHEMA.fingerprint(),
            0x14cd_966d_0195_4370,
        ),
        (
            "ChatMessage",
            ChatMessage::SCHEMA.fingerprint(),
            0xa41b_4c1a_6254_2e8b,
        ),
        (
            "EntityBatch",
            EntityBatch::SCHEMA.fingerprint(),
            0x2aa7_ce51_af6d_b4b7,
        ),
        (
            "MatchPhase",
            MatchPhase::SCHEMA.fingerprint(),
            0xe39c_4ac1_de1d_0e4b,
        ),
        (
            "GameMessage",
            GameMessage::FINGERPRINT,
            0xbefb_ab22_7eae_05de,
        ),
        (
            "Shapes",
            Shapes::SCHEMA.fingerprint(),
            0x2ae5_3d90_7f4a_53cf,
        ),
    ];
    let mut failures = Vec::new();
    for (name, actual, expected) in vectors {
        if actual != expected {
            failures.push(format!(
                "{name}: {actual:#018x} (expected {expected:#018x})"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------
// Every change to a schema changes the fingerprint; an identical declaration does not.

mod base {
    use super::NetMessage;
    #[derive(NetMessage)]
    pub(crate) struct Msg {
        #[net(range = 0..=100)]
        pub(crate) hp: u8,
        pub(crate) alive: bool,
        #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
        pub(crate) x: f32,
        #[net(max_len = 16)]
        pub(crate) name: String,
    }
}

mod same {
    use super::NetMessage;
    #[derive(NetMessage)]
    pub(crate) struct Msg {
        #[net(range = 0..=100)]
        pub(crate) hp: u8,
        pub(crate) alive: bool,
        #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
        pub(crate) x: f32,
        #[net(max_len = 16)]
        pub(crate) name: String,
        #[net(skip)]
        pub(crate) local_only: u32,
    }
}

macro_rules! variant {
    ($module:ident { $($body:tt)* }) => {
        mod $module {
            use super::NetMessage;
            #[derive(NetMessage)]
            pub(crate) struct Msg { $($body)* }
        }
    };
}

variant!(added {
    #[net(range = 0..=100)]
    hp: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
    extra: bool,
});
variant!(removed {
    #[net(range = 0..=100)]
    hp: u8,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(reordered {
    alive: bool,
    #[net(range = 0..=100)]
    hp: u8,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(renamed {
    #[net(range = 0..=100)]
    health: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(retyped {
    #[net(range = 0..=100)]
    hp: u16,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(retyped_encoding {
    #[net(bits = 7)]
    hp: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(rebounded_range {
    #[net(range = 0..=99)]
    hp: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(rebounded_min {
    #[net(range = 1..=100)]
    hp: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(rebounded_res {
    #[net(range = 0..=100)]
    hp: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.02))]
    x: f32,
    #[net(max_len = 16)]
    name: String,
});
variant!(rebounded_len {
    #[net(range = 0..=100)]
    hp: u8,
    alive: bool,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    x: f32,
    #[net(max_len = 17)]
    name: String,
});
variant!(raw_float {
    #[net(range = 0..=100)]
    hp: u8,
    alive: bool,
    x: f32,
    #[net(max_len = 16)]
    name: String,
});

mod renamed_type {
    use super::NetMessage;
    #[derive(NetMessage)]
    pub(crate) struct Message {
        #[net(range = 0..=100)]
        pub(crate) hp: u8,
        pub(crate) alive: bool,
        #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
        pub(crate) x: f32,
        #[net(max_len = 16)]
        pub(crate) name: String,
    }
}

#[test]
fn fingerprint_changes_with_every_change() {
    let base = base::Msg::SCHEMA.fingerprint();
    assert_eq!(
        same::Msg::SCHEMA.fingerprint(),
        base,
        "an identical wire format"
    );
    let changed = [
        ("added", added::Msg::SCHEMA.fingerprint()),
        ("removed", removed::Msg::SCHEMA.fingerprint()),
        ("reordered", reordered::Msg::SCHEMA.fingerprint()),
        ("renamed", renamed::Msg::SCHEMA.fingerprint()),
        ("retyped", retyped::Msg::SCHEMA.fingerprint()),
        (
            "retyped_encoding",
            retyped_encoding::Msg::SCHEMA.fingerprint(),
        ),
        (
            "rebounded_range",
            rebounded_range::Msg::SCHEMA.fingerprint(),
        ),
        ("rebounded_min", rebounded_min::Msg::SCHEMA.fingerprint()),
        ("rebounded_res", rebounded_res::Msg::SCHEMA.fingerprint()),
        ("rebounded_len", rebounded_len::Msg::SCHEMA.fingerprint()),
        ("raw_float", raw_float::Msg::SCHEMA.fingerprint()),
        ("renamed_type", renamed_type::Message::SCHEMA.fingerprint()),
    ];
    for (i, (name, fingerprint)) in changed.iter().enumerate() {
        assert_ne!(*fingerprint, base, "{name} kept the fingerprint");
        for (other, other_fingerprint) in &changed[i + 1..] {
            assert_ne!(fingerprint, other_fingerprint, "{name} and {other} collide");
        }
    }
}

mod nested_base {
    use super::NetMessage;
    #[derive(NetMessage)]
    pub(crate) struct Inner {
        #[net(range = 0..=7)]
        pub(crate) v: u8,
    }
    #[derive(NetMessage)]
    pub(crate) struct Outer {
        pub(crate) inner: Inner,
    }
    #[derive(NetMessage)]
    #[net(message_set)]
    pub(crate) enum Set {
        A(Outer),
        B(Inner),
    }
}

mod nested_changed {
    use super::NetMessage;
    #[derive(NetMessage)]
    pub(crate) struct Inner {
        #[net(range = 0..=8)]
        pub(crate) v: u8,
    }
    #[derive(NetMessage)]
    pub(crate) struct Outer {
        pub(crate) inner: Inner,
    }
    #[derive(NetMessage)]
    #[net(message_set)]
    pub(crate) enum Set {
        A(Outer),
        B(Inner),
    }
}

mod set_reordered {
    use super::NetMessage;
    use super::nested_base::{Inner, Outer};
    #[derive(NetMessage)]
    #[net(message_set)]
    pub(crate) enum Set {
        B(Inner),
        A(Outer),
    }
}

mod set_renamed_variant {
    use super::NetMessage;
    use super::nested_base::{Inner, Outer};
    #[derive(NetMessage)]
    #[net(message_set)]
    pub(crate) enum Set {
        A(Outer),
        C(Inner),
    }
}

mod set_added {
    use super::NetMessage;
    use super::nested_base::{Inner, Outer};
    #[derive(NetMessage)]
    #[net(message_set)]
    pub(crate) enum Set {
        A(Outer),
        B(Inner),
        C(Inner),
    }
}

mod set_same {
    use super::NetMessage;
    use super::nested_base::{Inner, Outer};
    #[derive(NetMessage)]
    #[net(message_set, max_bits = 100)]
    pub(crate) enum Set {
        A(Outer),
        B(Inner),
    }
}

#[test]
fn set_fingerprint_covers_its_types() {
    use nested_base::Set;
    let base = Set::FINGERPRINT;
    // A limit is a compile-time check, not part of the wire format.
    assert_eq!(set_same::Set::FINGERPRINT, base);
    for (name, fingerprint) in [
        (
            "a nested field re-bounded",
            nested_changed::Set::FINGERPRINT,
        ),
        ("types reordered", set_reordered::Set::FINGERPRINT),
        ("a variant renamed", set_renamed_variant::Set::FINGERPRINT),
        ("a type added", set_added::Set::FINGERPRINT),
    ] {
        assert_ne!(fingerprint, base, "{name}");
    }
    assert_ne!(
        nested_base::Outer::SCHEMA.fingerprint(),
        nested_changed::Outer::SCHEMA.fingerprint()
    );
}

#[test]
fn variants_and_fields_are_distinguished() {
    // Moving a field between variants, or splitting a name, changes the encoding.
    const A: Schema = Schema::enumeration(
        "E",
        &[
            Variant::new("X", &[Field::new("a", &Schema::BOOL)]),
            Variant::new("Y", &[]),
        ],
    );
    const B: Schema = Schema::enumeration(
        "E",
        &[
            Variant::new("X", &[]),
            Variant::new("Y", &[Field::new("a", &Schema::BOOL)]),
        ],
    );
    const C: Schema = Schema::structure("ab", &[]);
    const D: Schema = Schema::structure("a", &[Field::new("b", &Schema::structure("", &[]))]);
    assert_ne!(A.fingerprint(), B.fingerprint());
    assert_ne!(C.fingerprint(), D.fingerprint());
}
