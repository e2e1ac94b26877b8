//! Derived message sets (`#[net(message_set)]`): the number of types, type ids and their
//! width on the wire, blank messages by type id, `From` for each payload, `MAX_BITS`,
//! the rejection of every type id in the bit headroom above the last type, and the
//! variant-by-variant moves the channels' queues use.

use netproto::{ErrorKind, MessageSet, NetMessage, Stream, WriteStream};

/// A small payload: 2 bits.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Tag {
    #[net(range = 0..=3)]
    x: u8,
}

/// Another payload type (its own `From`): 5 bits.
#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Marker {
    #[net(bits = 5)]
    m: u8,
}

/// `$name`: a message set of the listed `Tag` variants, then `Last(Marker)`.
macro_rules! set {
    ($name:ident; $($v:ident)*) => {
        #[derive(NetMessage, Debug, Clone, PartialEq)]
        #[net(message_set)]
        #[allow(dead_code)]
        enum $name {
            $($v(Tag),)*
            Last(Marker),
        }
    };
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum One {
    Only(Marker),
}

set!(Two; A0);
set!(Three; A0 A1);
set!(Four; A0 A1 A2);
set!(Five; A0 A1 A2 A3);
set!(Types255; A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 A10 A11 A12 A13 A14 A15 A16 A17 A18 A19 A20 A21 A22 A23 A24 A25 A26 A27 A28 A29 A30 A31 A32 A33 A34 A35 A36 A37 A38 A39 A40 A41 A42 A43 A44 A45 A46 A47 A48 A49 A50 A51 A52 A53 A54 A55 A56 A57 A58 A59 A60 A61 A62 A63 A64 A65 A66 A67 A68 A69 A70 A71 A72 A73 A74 A75 A76 A77 A78 A79 A80 A81 A82 A83 A84 A85 A86 A87 A88 A89 A90 A91 A92 A93 A94 A95 A96 A97 A98 A99 A100 A101 A102 A103 A104 A105 A106 A107 A108 A109 A110 A111 A112 A113 A114 A115 A116 A117 A118 A119 A120 A121 A122 A123 A124 A125 A126 A127 A128 A129 A130 A131 A132 A133 A134 A135 A136 A137 A138 A139 A140 A141 A142 A143 A144 A145 A146 A147 A148 A149 A150 A151 A152 A153 A154 A155 A156 A157 A158 A159 A160 A161 A162 A163 A164 A165 A166 A167 A168 A169 A170 A171 A172 A173 A174 A175 A176 A177 A178 A179 A180 A181 A182 A183 A184 A185 A186 A187 A188 A189 A190 A191 A192 A193 A194 A195 A196 A197 A198 A199 A200 A201 A202 A203 A204 A205 A206 A207 A208 A209 A210 A211 A212 A213 A214 A215 A216 A217 A218 A219 A220 A221 A222 A223 A224 A225 A226 A227 A228 A229 A230 A231 A232 A233 A234 A235 A236 A237 A238 A239 A240 A241 A242 A243 A244 A245 A246 A247 A248 A249 A250 A251 A252 A253);
set!(Types256; A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 A10 A11 A12 A13 A14 A15 A16 A17 A18 A19 A20 A21 A22 A23 A24 A25 A26 A27 A28 A29 A30 A31 A32 A33 A34 A35 A36 A37 A38 A39 A40 A41 A42 A43 A44 A45 A46 A47 A48 A49 A50 A51 A52 A53 A54 A55 A56 A57 A58 A59 A60 A61 A62 A63 A64 A65 A66 A67 A68 A69 A70 A71 A72 A73 A74 A75 A76 A77 A78 A79 A80 A81 A82 A83 A84 A85 A86 A87 A88 A89 A90 A91 A92 A93 A94 A95 A96 A97 A98 A99 A100 A101 A102 A103 A104 A105 A106 A107 A108 A109 A110 A111 A112 A113 A114 A115 A116 A117 A118 A119 A120 A121 A122 A123 A124 A125 A126 A127 A128 A129 A130 A131 A132 A133 A134 A135 A136 A137 A138 A139 A140 A141 A142 A143 A144 A145 A146 A147 A148 A149 A150 A151 A152 A153 A154 A155 A156 A157 A158 A159 A160 A161 A162 A163 A164 A165 A166 A167 A168 A169 A170 A171 A172 A173 A174 A175 A176 A177 A178 A179 A180 A181 A182 A183 A184 A185 A186 A187 A188 A189 A190 A191 A192 A193 A194 A195 A196 A197 A198 A199 A200 A201 A202 A203 A204 A205 A206 A207 A208 A209 A210 A211 A212 A213 A214 A215 A216 A217 A218 A219 A220 A221 A222 A223 A224 A225 A226 A227 A228 A229 A230 A231 A232 A233 A234 A235 A236 A237 A238 A239 A240 A241 A242 A243 A244 A245 A246 A247 A248 A249 A250 A251 A252 A253 A254);
set!(Types257; A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 A10 A11 A12 A13 A14 A15 A16 A17 A18 A19 A20 A21 A22 A23 A24 A25 A26 A27 A28 A29 A30 A31 A32 A33 A34 A35 A36 A37 A38 A39 A40 A41 A42 A43 A44 A45 A46 A47 A48 A49 A50 A51 A52 A53 A54 A55 A56 A57 A58 A59 A60 A61 A62 A63 A64 A65 A66 A67 A68 A69 A70 A71 A72 A73 A74 A75 A76 A77 A78 A79 A80 A81 A82 A83 A84 A85 A86 A87 A88 A89 A90 A91 A92 A93 A94 A95 A96 A97 A98 A99 A100 A101 A102 A103 A104 A105 A106 A107 A108 A109 A110 A111 A112 A113 A114 A115 A116 A117 A118 A119 A120 A121 A122 A123 A124 A125 A126 A127 A128 A129 A130 A131 A132 A133 A134 A135 A136 A137 A138 A139 A140 A141 A142 A143 A144 A145 A146 A147 A148 A149 A150 A151 A152 A153 A154 A155 A156 A157 A158 A159 A160 A161 A162 A163 A164 A165 A166 A167 A168 A169 A170 A171 A172 A173 A174 A175 A176 A177 A178 A179 A180 A181 A182 A183 A184 A185 A186 A187 A188 A189 A190 A191 A192 A193 A194 A195 A196 A197 A198 A199 A200 A201 A202 A203 A204 A205 A206 A207 A208 A209 A210 A211 A212 A213 A214 A215 A216 A217 A218 A219 A220 A221 A222 A223 A224 A225 A226 A227 A228 A229 A230 A231 A232 A233 A234 A235 A236 A237 A238 A239 A240 A241 A242 A243 A244 A245 A246 A247 A248 A249 A250 A251 A252 A253 A254 A255);

/// Checks one set of `count` types sent in `bits` bits.
fn check<M: MessageSet + core::fmt::Debug + PartialEq>(count: u32, bits: u32) {
    assert_eq!(M::COUNT, count);
    assert_eq!(M::TYPE_BITS, bits);
    assert_eq!(M::TYPE_BITS, netproto::bits_for_count(u64::from(count)));
    assert_eq!(M::MAX_PAYLOAD_BITS, Marker::MAX_BITS);
    assert_eq!(M::MAX_BITS, bits as usize + Marker::MAX_BITS);
    assert_eq!(M::SCHEMA.variants().len(), count as usize);
    assert_eq!(M::SCHEMA.max_bits, M::MAX_BITS);
    assert_eq!(M::SCHEMA.min_bits, M::MIN_BITS);

    // Every type id: a blank message of that type, which round-trips with its id in
    // `bits` bits.
    for id in 0..count {
        let Some(message) = M::blank_of(id) else {
            panic!("no blank message for type id {id} of {count}");
        };
        assert_eq!(message.type_id(), id);
        assert!(M::type_name(id).is_some());
        let bytes = netproto::encode(&message).expect("a blank message encodes");
        let back: M = netproto::decode(&bytes).expect("and decodes");
        assert_eq!(back, message);
        assert_eq!(back.type_id(), id);
        // The id is the first `bits` bits, LSB first.
        let mut raw = 0u64;
        for (i, byte) in bytes.iter().take(8).enumerate() {
            raw |= u64::from(*byte) << (8 * i);
        }
        if bits > 0 {
            assert_eq!(
                raw & ((1u64 << bits) - 1),
                u64::from(id),
                "id {id} of {count}"
            );
        }
    }
    assert_eq!(M::blank_of(count), None);
    assert_eq!(M::blank_of(u32::MAX), None);
    assert_eq!(M::type_name(count), None);

    // Every id in the headroom, [count, 2^bits), is rejected: by the set's decoder and by
    // `serialize_type_id`, whatever follows it.
    for id in count..(1u32 << bits) {
        let mut buf = [0u8; 8];
        let mut stream = WriteStream::new(&mut buf);
        let mut wide = u64::from(id);
        stream.serialize_bits(&mut wide, bits).expect("fits");
        let len = stream.finish().max(1);
        let err = netproto::decode::<M>(&buf[..len]).expect_err("a headroom id is rejected");
        assert_eq!(err.kind(), ErrorKind::UnknownVariant, "id {id} of {count}");
        let err = netproto::decode_prefix::<M>(&buf).expect_err("with a payload after it too");
        assert_eq!(err.kind(), ErrorKind::UnknownVariant, "id {id} of {count}");
        let mut read = netproto::ReadStream::new(&buf);
        let mut type_id = 0;
        let err = M::serialize_type_id(&mut read, &mut type_id).expect_err("rejected");
        assert_eq!(err.kind(), ErrorKind::UnknownVariant);
    }

    // Writing an id out of range is refused too.
    let mut buf = [0u8; 8];
    let mut stream = WriteStream::new(&mut buf);
    let mut type_id = count;
    let err = M::serialize_type_id(&mut stream, &mut type_id).expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::UnknownVariant);
}

#[test]
fn one_type_sends_no_type_id() {
    check::<One>(1, 0);
    let message = One::from(Marker { m: 17 });
    assert_eq!(netproto::measure(&message), 5);
    assert_eq!(netproto::encode(&message).unwrap(), [17]);
}

#[test]
fn two_to_five_types() {
    check::<Two>(2, 1);
    check::<Three>(3, 2);
    check::<Four>(4, 2);
    check::<Five>(5, 3);
}

#[test]
fn two_hundred_and_fifty_five_to_two_hundred_and_fifty_seven_types() {
    check::<Types255>(255, 8);
    check::<Types256>(256, 8);
    check::<Types257>(257, 9);
}

#[test]
fn from_each_payload_and_its_type_id() {
    let message = Five::from(Marker { m: 3 });
    assert_eq!(message, Five::Last(Marker { m: 3 }));
    assert_eq!(message.type_id(), 4);
    assert_eq!(Five::A2(Tag { x: 1 }).type_id(), 2);
    assert_eq!(Types257::from(Marker { m: 0 }).type_id(), 256);
    assert_eq!(Five::type_name(0), Some("A0"));
    assert_eq!(Five::type_name(4), Some("Last"));
}

#[test]
fn type_id_comes_first_then_the_payload() {
    // Five: 3 bits of type id (4 = 0b100), then Marker's 5 bits (0b10101).
    let message = Five::Last(Marker { m: 0b10101 });
    assert_eq!(netproto::encode(&message).unwrap(), [0b1010_1100]);
    // Three: 2 bits (1), then Tag's 2 bits (3).
    let message = Three::A1(Tag { x: 3 });
    assert_eq!(netproto::encode(&message).unwrap(), [0b11_01]);
}

/// A message set over the example game messages: the factory the channels use.
#[test]
fn game_message_set() {
    use netproto_examples::game::{
        ChatMessage, EntityBatch, EntityUpdate, GameMessage, MatchPhase, PlayerInput,
    };
    assert_eq!(GameMessage::COUNT, 5);
    assert_eq!(GameMessage::TYPE_BITS, 3);
    let largest = [
        PlayerInput::MAX_BITS,
        EntityUpdate::MAX_BITS,
        ChatMessage::MAX_BITS,
        EntityBatch::MAX_BITS,
        MatchPhase::MAX_BITS,
    ]
    .into_iter()
    .max();
    assert_eq!(Some(GameMessage::MAX_PAYLOAD_BITS), largest);
    assert_eq!(GameMessage::MAX_BITS, 3 + GameMessage::MAX_PAYLOAD_BITS);
    let message = GameMessage::from(ChatMessage {
        from: 1,
        text: "gg".into(),
    });
    assert_eq!(message.type_id(), 2);
    for id in 5..8u8 {
        let err = netproto::decode::<GameMessage>(&[id, 0, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnknownVariant);
    }
}

/// The factory is usable generically: what a channel does with a type id read from the
/// wire.
fn read_with_factory<M: MessageSet>(bytes: &[u8]) -> Result<M, netproto::StreamError> {
    let mut stream = netproto::ReadStream::new(bytes);
    let mut type_id = 0;
    M::serialize_type_id(&mut stream, &mut type_id)?;
    match M::blank_of(type_id) {
        Some(message) => Ok(message),
        None => Err(ErrorKind::UnknownVariant.into()),
    }
}

#[test]
fn generic_over_the_factory() {
    let five: Five = read_with_factory(&[4]).unwrap();
    assert_eq!(five.type_id(), 4);
    assert_eq!(
        read_with_factory::<Five>(&[7]).unwrap_err().kind(),
        ErrorKind::UnknownVariant
    );
}

/// Two variants with one payload type: no `From` (it would be ambiguous), the rest works.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set, max_bits = 8)]
enum PingPong {
    Ping(Tag),
    Pong(Tag),
    Mark(Marker),
}

#[test]
fn repeated_payload_type() {
    assert_eq!(PingPong::COUNT, 3);
    assert_eq!(PingPong::Pong(Tag { x: 1 }).type_id(), 1);
    assert_eq!(PingPong::from(Marker { m: 1 }).type_id(), 2);
    assert_eq!(PingPong::MAX_BITS, 7);
}

/// A generic message set.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Envelope<T> {
    Inner(T),
    Mark(Marker),
}

#[test]
fn generic_message_set() {
    assert_eq!(<Envelope<u16>>::COUNT, 2);
    assert_eq!(<Envelope<u16>>::MAX_BITS, 17);
    // `T` could be `Marker`: no `From<T>` beside `From<Marker>`.
    assert_eq!(Envelope::<u16>::from(Marker { m: 2 }).type_id(), 1);
    let message = Envelope::Inner(513u16);
    let bytes = netproto::encode(&message).unwrap();
    assert_eq!(netproto::decode::<Envelope<u16>>(&bytes).unwrap(), message);
}

/// A message set with a large variant beside small ones: the channels' queues move its
/// values with `move_out` / `move_from`, which the derive writes variant by variant.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Mixed {
    Small(Tag),
    Big([Marker; 64]),
    Text(Named),
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Named {
    #[net(max_len = 16)]
    name: String,
}

#[test]
fn a_set_moves_its_variant_and_leaves_that_variant_blank() {
    let big = Mixed::Big(core::array::from_fn(|i| Marker { m: (i % 32) as u8 }));
    let mut slot = big.clone();
    assert_eq!(slot.move_out(), big);
    assert_eq!(slot, Mixed::Big(core::array::from_fn(|_| Marker { m: 0 })));

    let mut text = Mixed::Text(Named {
        name: "gg".to_string(),
    });
    let mut slot = Mixed::Small(Tag { x: 3 });
    slot.move_from(&mut text);
    assert_eq!(
        slot,
        Mixed::Text(Named {
            name: "gg".to_string()
        })
    );
    // The source holds its variant's blank: no string left behind.
    assert_eq!(
        text,
        Mixed::Text(Named {
            name: String::new()
        })
    );
    // Into a slot of another variant, and out again.
    let mut small = Mixed::Small(Tag { x: 2 });
    slot.move_from(&mut small);
    assert_eq!(slot, Mixed::Small(Tag { x: 2 }));
    assert_eq!(small, Mixed::Small(Tag { x: 0 }));
    // Nested and generic sets, and the default for a struct (replaced by its blank).
    let mut nested = Envelope::<Mixed>::Inner(Mixed::Small(Tag { x: 1 }));
    assert_eq!(
        nested.move_out(),
        Envelope::Inner(Mixed::Small(Tag { x: 1 }))
    );
    assert_eq!(nested, Envelope::Inner(Mixed::Small(Tag { x: 0 })));
    let mut tag = Tag { x: 3 };
    assert_eq!(tag.move_out(), Tag { x: 3 });
    assert_eq!(tag, Tag { x: 0 });
}

/// The guide's "Message sets" example, compiled and run: keep the two in sync.
mod readme {
    use netproto::{MessageSet, NetMessage};

    #[derive(NetMessage, Debug, PartialEq)]
    struct PlayerInput {
        #[net(range = 0..=100)]
        health: u8,
        fire: bool,
    }

    #[derive(NetMessage, Debug, PartialEq)]
    struct ChatMessage {
        #[net(range = 0..=63)]
        from: u8,
        #[net(max_len = 140)]
        text: String,
    }

    #[derive(NetMessage, Debug, PartialEq)]
    struct EntityUpdate {
        #[net(range = 0..=4095)]
        id: u16,
    }

    #[derive(NetMessage, Debug, PartialEq)]
    #[net(message_set, max_bits = 1200)]
    enum GameMessage {
        Input(PlayerInput),   // type id 0
        Chat(ChatMessage),    // type id 1
        Update(EntityUpdate), // type id 2
    }

    #[test]
    fn readme_message_sets() -> Result<(), netproto::StreamError> {
        let message = GameMessage::from(ChatMessage {
            from: 3,
            text: "gg".into(),
        });
        assert_eq!(message.type_id(), 1);
        let bytes = netproto::encode(&message)?; // 2 bits of type id, then the chat message
        let back: GameMessage = netproto::decode(&bytes)?;
        let blank = GameMessage::blank_of(2); // Some(Update(..)): what a reader fills in
        assert!(GameMessage::blank_of(3).is_none());

        assert_eq!(back, message);
        assert_eq!(blank, Some(GameMessage::Update(EntityUpdate { id: 0 })));
        assert_eq!(GameMessage::TYPE_BITS, 2);
        assert_eq!(
            netproto::decode::<GameMessage>(&[3]).map_err(|e| e.kind()),
            Err(netproto::ErrorKind::UnknownVariant)
        );
        let _ = GameMessage::Input(PlayerInput {
            health: 1,
            fire: false,
        });
        Ok(())
    }
}
