//! `#[net(crate = "...")]`: a crate that re-exports netproto names the path to it, and
//! every path the derive generates goes through it (a relative path from a `use`, a
//! path through the crate's own modules, or an absolute one).

// Reached through `crate::engine::netproto`, as a crate re-exporting netproto would be.
mod engine {
    pub(crate) use ::netproto;
}

// Reached through an alias in scope where the derive is used.
use netproto as np;

use netproto::{MessageSet, NetMessage};

/// A constant bound, checked through the renamed path too.
const LIMIT: u8 = 50;

#[derive(np::NetMessage, Debug, Clone, PartialEq)]
#[net(crate = "np")]
struct Aliased {
    #[net(range = 0..=100)]
    health: u8,
    #[net(range = 0..=LIMIT)]
    limited: u8,
    #[net(bits = 12)]
    tick: u16,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    aim: f32,
    #[net(max_len = 8)]
    name: String,
    #[net(max_len = 4)]
    items: Vec<u8>,
    maybe: Option<bool>,
    #[net(skip)]
    local: u32,
}

#[derive(engine::netproto::NetMessage, Debug, Clone, PartialEq)]
#[net(crate = "crate::engine::netproto")]
enum Command {
    Stop,
    Move {
        #[net(range = -8..=7)]
        dx: i8,
    },
    Nested(Aliased),
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(crate = "::netproto")]
struct Wrapper<T> {
    inner: T,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set, max_bits = 1000, crate = "crate::engine::netproto")]
enum Messages {
    Aliased(Aliased),
    Command(Command),
}

fn aliased() -> Aliased {
    Aliased {
        health: 100,
        limited: LIMIT,
        tick: 4095,
        aim: -1.0,
        name: "np".to_owned(),
        items: vec![1, 2],
        maybe: Some(true),
        local: 0,
    }
}

fn roundtrip<T: NetMessage + PartialEq + core::fmt::Debug>(message: &T) {
    let bytes = netproto::encode(message).expect("encodes");
    let back: T = netproto::decode(&bytes).expect("decodes");
    assert_eq!(&back, message);
}

/// The `crate` path changes where the generated code looks, not the wire format.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Plain {
    #[net(range = 0..=100)]
    health: u8,
    #[net(range = 0..=LIMIT)]
    limited: u8,
    #[net(bits = 12)]
    tick: u16,
    #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
    aim: f32,
    #[net(max_len = 8)]
    name: String,
    #[net(max_len = 4)]
    items: Vec<u8>,
    maybe: Option<bool>,
    #[net(skip)]
    local: u32,
}

#[test]
fn derives_through_a_named_crate_path() {
    roundtrip(&aliased());
    roundtrip(&Command::Move { dx: -8 });
    roundtrip(&Command::Nested(aliased()));
    roundtrip(&Wrapper { inner: 3u8 });
    let message = Messages::from(Command::Stop);
    assert_eq!(message.type_id(), 1);
    roundtrip(&message);

    let a = aliased();
    let plain = Plain {
        health: a.health,
        limited: a.limited,
        tick: a.tick,
        aim: a.aim,
        name: a.name.clone(),
        items: a.items.clone(),
        maybe: a.maybe,
        local: a.local,
    };
    assert_eq!(
        netproto::encode(&a).expect("encodes"),
        netproto::encode(&plain).expect("encodes")
    );
    assert_eq!(Aliased::MAX_BITS, Plain::MAX_BITS);
    assert_eq!(Aliased::MIN_BITS, Plain::MIN_BITS);
    // The schema names the type, so only the fields compare equal.
    assert_eq!(Aliased::SCHEMA.fields(), Plain::SCHEMA.fields());
}
