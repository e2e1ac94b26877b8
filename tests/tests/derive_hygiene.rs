//! The code `#[derive(NetMessage)]` generates names everything by its full path
//! (`::core::...`, `::netproto::...`): the derived types below compile in a module
//! without the prelude, where an unqualified `Option`, `From` or `Default` would not
//! resolve.

mod no_prelude {
    #![no_implicit_prelude]

    pub(super) const LIMIT: u8 = 10;
    pub(super) const BITS: u32 = 5;
    pub(super) const LEN: usize = 8;

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) struct Fixed {
        #[net(range = 0..=100)]
        pub(super) health: u8,
        #[net(range = -8..8)]
        pub(super) dx: i8,
        #[net(bits = 12)]
        pub(super) tick: u16,
        #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
        pub(super) aim: f32,
        pub(super) raw: f32,
        pub(super) precise: f64,
        pub(super) wide: u64,
        pub(super) signed: i32,
        pub(super) fire: bool,
        #[net(skip)]
        pub(super) local: ::std::string::String,
    }

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) struct Bounded {
        #[net(range = 0..=LIMIT)]
        pub(super) player: u8,
        #[net(bits = BITS)]
        pub(super) small: u32,
        #[net(quantize(min = -1.0, max = 1.0, res = 0.01))]
        pub(super) aim: f32,
        #[net(max_len = LEN)]
        pub(super) name: ::std::string::String,
        #[net(max_len = 4)]
        pub(super) items: ::std::vec::Vec<Fixed>,
        pub(super) maybe: ::core::option::Option<u8>,
        pub(super) grid: [bool; 2],
        pub(super) pair: (u8, bool),
    }

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) struct Tuple(#[net(range = 0..=3)] pub(super) u8, pub(super) Bounded);

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) struct Unit;

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) enum Command {
        Stop,
        Move {
            #[net(range = -8..=7)]
            dx: i8,
        },
        Say(#[net(max_len = 16)] ::std::string::String),
    }

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) enum Single {
        Only(#[net(range = 0..=3)] u8),
    }

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub(super) struct Wrapper<T> {
        pub(super) inner: T,
    }

    #[derive(::netproto::NetMessage, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    #[net(message_set, max_bits = 4000)]
    pub(super) enum Messages {
        Fixed(Fixed),
        Command(Command),
        Tuple(Tuple),
    }
}

use netproto::{MessageSet, NetMessage};
use no_prelude::{Bounded, Command, Fixed, Messages, Single, Tuple, Unit, Wrapper};

fn roundtrip<T: NetMessage + PartialEq + core::fmt::Debug>(message: &T) {
    let bytes = netproto::encode(message).expect("encodes");
    let back: T = netproto::decode(&bytes).expect("decodes");
    assert_eq!(&back, message);
}

fn fixed() -> Fixed {
    Fixed {
        health: 42,
        dx: -8,
        tick: 4095,
        aim: 0.5,
        raw: 2.5,
        precise: -1.25,
        wide: u64::MAX,
        signed: -7,
        fire: true,
        local: String::new(),
    }
}

#[test]
fn derived_without_the_prelude() {
    let bounded = Bounded {
        player: no_prelude::LIMIT,
        small: 31,
        aim: -1.0,
        name: "abc".to_owned(),
        items: vec![fixed()],
        maybe: Some(1),
        grid: [true, false],
        pair: (1, true),
    };
    roundtrip(&fixed());
    roundtrip(&bounded);
    roundtrip(&Unit);
    roundtrip(&Command::Move { dx: 7 });
    roundtrip(&Command::Say("hi".to_owned()));
    roundtrip(&Single::Only(3));
    roundtrip(&Wrapper { inner: 9u16 });
    let message = Messages::from(Tuple(2, bounded));
    assert_eq!(message.type_id(), 2);
    roundtrip(&message);
}
