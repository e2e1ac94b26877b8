//! `#[derive(NetMessage)]`: round trips of every shape, exact bit counts, errors that name
//! the field, and the packed write path (`encode`, `NetMessage::write` on a roomy
//! `WriteStream`) producing the same bytes and errors as the plain writer under a tracing
//! stream.

// 3.1416 is a declared wire bound (the reference examples use it), not an approximate PI.
#![allow(clippy::approx_constant)]

use netproto::{
    ErrorKind, MeasureStream, NetMessage, Place, Quantization, ReadStream, Stream, StreamError,
    WriteStream,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A stream that wants per-field calls (`TRACING`), delegating to another stream: it
/// forces the derive's per-field path, and records the field names it is given.
struct Tracing<S> {
    inner: S,
    depth: usize,
    names: Vec<(usize, &'static str)>,
}

impl<S> Tracing<S> {
    fn new(inner: S) -> Self {
        Self {
            inner,
            depth: 0,
            names: Vec::new(),
        }
    }
}

impl<S: Stream> Stream for Tracing<S> {
    type Error = S::Error;
    const IS_WRITING: bool = S::IS_WRITING;
    const IS_READING: bool = S::IS_READING;
    const TRACING: bool = true;

    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), Self::Error> {
        self.inner.serialize_bits(value, bits)
    }
    fn serialize_align(&mut self) -> Result<(), Self::Error> {
        self.inner.serialize_align()
    }
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), Self::Error> {
        self.inner.serialize_bytes(bytes)
    }
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), Self::Error> {
        self.inner.check(ok, kind)
    }
    fn in_field(err: Self::Error, field: &'static str) -> Self::Error {
        S::in_field(err, field)
    }
    fn bits_processed(&self) -> usize {
        self.inner.bits_processed()
    }
    fn bits_remaining(&self) -> usize {
        self.inner.bits_remaining()
    }
    fn begin_field(&mut self, name: &'static str) {
        self.names.push((self.depth, name));
        self.depth += 1;
    }
    fn end_field(&mut self) {
        self.depth -= 1;
    }
}

/// Encodes with the per-field (tracing) path.
fn encode_traced<T: NetMessage>(message: &mut T) -> Result<Vec<u8>, StreamError> {
    let mut buf = vec![0u8; T::MAX_BITS.div_ceil(8)];
    let mut stream = Tracing::new(WriteStream::new(&mut buf));
    message.serialize(&mut stream)?;
    assert_eq!(stream.depth, 0, "begin_field / end_field unbalanced");
    let len = stream.inner.finish();
    buf.truncate(len);
    Ok(buf)
}

/// Decodes with the per-field (tracing) path.
fn decode_traced<T: NetMessage>(bytes: &[u8]) -> Result<T, StreamError> {
    let mut stream = Tracing::new(ReadStream::new(bytes));
    let mut message = T::blank();
    message.serialize(&mut stream)?;
    assert_eq!(stream.depth, 0, "begin_field / end_field unbalanced");
    if stream.inner.bytes_read() != bytes.len() {
        return Err(StreamError::new(ErrorKind::TrailingBytes));
    }
    Ok(message)
}

/// Field names a tracing writer sees, with their nesting depth.
fn traced_names<T: NetMessage>(message: &mut T) -> Vec<(usize, &'static str)> {
    let mut buf = vec![0u8; T::MAX_BITS.div_ceil(8)];
    let mut stream = Tracing::new(WriteStream::new(&mut buf));
    message.serialize(&mut stream).expect("encodes");
    stream.names
}

fn measured<T: NetMessage>(message: &mut T) -> usize {
    let mut stream = MeasureStream::new();
    match message.serialize(&mut stream) {
        Ok(()) => stream.bits_processed(),
        Err(never) => match never {},
    }
}

/// Round trips through both paths, checks that they agree on bytes and values, that the
/// size is within `MIN_BITS..=MAX_BITS`, and returns the bytes.
#[track_caller]
fn roundtrip<T: NetMessage + PartialEq + core::fmt::Debug>(mut message: T) -> Vec<u8> {
    // `encode` has room for MAX_BITS: the packed path. The tracer wraps a plain writer.
    let fast = netproto::encode(&message).expect("packed path encodes");
    let traced = encode_traced(&mut message).expect("tracing path encodes");
    assert_eq!(
        fast, traced,
        "packed and per-field bytes differ for {message:?}"
    );
    // With room for less than MAX_BITS, `write` takes the plain writer: the same
    // bytes again.
    let mut tight = vec![0u8; fast.len()];
    let len = netproto::encode_into(&message, &mut tight).expect("plain path encodes");
    assert_eq!(&tight[..len], &fast[..], "packed and plain bytes differ");
    let back: T = netproto::decode(&fast).expect("fast path decodes");
    assert_eq!(back, message);
    let back: T = decode_traced(&fast).expect("tracing path decodes");
    assert_eq!(back, message);
    let bits = measured(&mut message);
    assert!(
        T::MIN_BITS <= bits && bits <= T::MAX_BITS,
        "{bits} not in MIN_BITS..=MAX_BITS"
    );
    assert_eq!(netproto::measure(&message), bits);
    assert!(fast.len() <= T::MAX_BITS.div_ceil(8));
    fast
}

#[track_caller]
fn encode_err<T: NetMessage>(mut message: T) -> StreamError {
    let fast = netproto::encode(&message).expect_err("packed path must reject");
    let traced = encode_traced(&mut message).expect_err("tracing path must reject");
    assert_eq!(fast, traced, "the two paths disagree on the error");
    fast
}

#[track_caller]
fn decode_err<T: NetMessage>(bytes: &[u8]) -> StreamError {
    let fast = match netproto::decode::<T>(bytes) {
        Ok(_) => panic!("fast path must reject {bytes:02x?}"),
        Err(e) => e,
    };
    let traced = match decode_traced::<T>(bytes) {
        Ok(_) => panic!("tracing path must reject {bytes:02x?}"),
        Err(e) => e,
    };
    assert_eq!(fast, traced, "the two paths disagree on the error");
    fast
}

/// Writes with explicit stream calls: the reference the derive must match.
fn reference(write: impl FnOnce(&mut WriteStream<'_>) -> Result<(), StreamError>) -> Vec<u8> {
    let mut buf = vec![0u8; 1024];
    let mut stream = WriteStream::new(&mut buf);
    write(&mut stream).expect("reference writes");
    let len = stream.finish();
    buf.truncate(len);
    buf
}

/// A small deterministic generator for "random" field values.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11 ^ self.0 << 17
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ---------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------

const YAW: Quantization = Quantization::new(-3.1416, 3.1416, 0.001);

#[derive(NetMessage, Debug, PartialEq, Clone)]
struct PlayerInput {
    #[net(range = 0..=100)]
    health: u8,
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
    yaw: f32,
    fire: bool,
}

#[test]
fn named_struct_bits_and_bytes() {
    assert_eq!(PlayerInput::MAX_BITS, 7 + 13 + 1);
    assert_eq!(PlayerInput::MIN_BITS, 21);
    let yaw = YAW.dequantize(YAW.quantize(1.25));
    let bytes = roundtrip(PlayerInput {
        health: 97,
        yaw,
        fire: true,
    });
    assert_eq!(bytes.len(), 3);
    let expected = reference(|w| {
        w.serialize_int(&mut 97u8, 0, 100)?;
        w.serialize_quantized(&mut yaw.clone(), &YAW)?;
        w.serialize_bool(&mut true)
    });
    assert_eq!(bytes, expected);
}

#[derive(NetMessage, Debug, PartialEq)]
struct Tuple(#[net(range = -8..=7)] i8, #[net(bits = 12)] u16, u32);

#[derive(NetMessage, Debug, PartialEq)]
struct Unit;

#[derive(NetMessage, Debug, PartialEq)]
struct Empty {}

#[test]
fn tuple_and_unit_structs() {
    assert_eq!(Tuple::MAX_BITS, 4 + 12 + 32);
    let bytes = roundtrip(Tuple(-8, 4095, 0xdead_beef));
    let expected = reference(|w| {
        w.serialize_int(&mut -8i8, -8, 7)?;
        w.serialize_int(&mut 4095u16, 0, 4095)?;
        w.serialize_int(&mut 0xdead_beefu32, 0, u32::MAX)
    });
    assert_eq!(bytes, expected);
    roundtrip(Tuple(7, 0, 0));

    assert_eq!(Unit::MAX_BITS, 0);
    assert_eq!(Unit::MIN_BITS, 0);
    assert_eq!(roundtrip(Unit), Vec::<u8>::new());
    assert_eq!(Empty::MAX_BITS, 0);
    assert_eq!(roundtrip(Empty {}), Vec::<u8>::new());
}

#[derive(NetMessage, Debug, PartialEq, Clone)]
enum Command {
    Stop,
    Move {
        #[net(range = -8..=7)]
        dx: i8,
        #[net(range = -8..=7)]
        dy: i8,
    },
    Say(#[net(max_len = 16)] String),
    Aim(#[net(quantize(min = -1.0, max = 1.0, res = 0.5))] f32, bool),
}

#[test]
fn enums_of_every_variant_shape() {
    // 4 variants: a 2-bit index, then the largest variant (Say: 5 + 7 + 128 bits).
    assert_eq!(Command::MAX_BITS, 2 + 5 + 7 + 8 * 16);
    assert_eq!(Command::MIN_BITS, 2);
    assert_eq!(roundtrip(Command::Stop), [0]);
    let bytes = roundtrip(Command::Move { dx: -3, dy: 7 });
    let expected = reference(|w| {
        w.serialize_index(&mut 1, 4)?;
        w.serialize_int(&mut -3i8, -8, 7)?;
        w.serialize_int(&mut 7i8, -8, 7)
    });
    assert_eq!(bytes, expected);
    roundtrip(Command::Say("hello".to_owned()));
    roundtrip(Command::Say(String::new()));
    roundtrip(Command::Aim(0.5, true));
    assert!(matches!(Command::blank(), Command::Stop));
}

#[derive(NetMessage, Debug, PartialEq)]
enum Single {
    Only(#[net(range = 1..=3)] u8),
}

#[test]
fn a_single_variant_costs_no_index_bits() {
    assert_eq!(Single::MAX_BITS, 2);
    assert_eq!(roundtrip(Single::Only(3)), [2]);
    assert_eq!(Single::blank(), Single::Only(1));
}

#[derive(NetMessage, Debug, PartialEq, Clone)]
struct Vec2 {
    #[net(quantize(min = -512.0, max = 512.0, res = 0.5))]
    x: f32,
    #[net(quantize(min = -512.0, max = 512.0, res = 0.5))]
    y: f32,
}

#[derive(NetMessage, Debug, PartialEq, Clone)]
struct Entity {
    #[net(range = 0..1024)]
    id: u16,
    position: Vec2,
    velocity: Option<Vec2>,
    flags: [bool; 3],
    pair: (u8, i16),
    kind: Command,
    raw: f64,
    raw32: f32,
    big: i64,
    #[net(bits = 64)]
    mask: u64,
}

#[test]
fn nested_option_array_tuple() {
    // Vec2: 2 x 12 bits (2048 steps of 0.5 need max_int 2048, so 12 bits).
    assert_eq!(Vec2::MAX_BITS, 24);
    assert_eq!(
        Entity::MAX_BITS,
        10 + 24 + 25 + 3 + 24 + Command::MAX_BITS + 64 + 32 + 64 + 64
    );
    assert_eq!(
        Entity::MIN_BITS,
        10 + 24 + 1 + 3 + 24 + Command::MIN_BITS + 64 + 32 + 64 + 64
    );
    let e = Entity {
        id: 1023,
        position: Vec2 {
            x: -512.0,
            y: 511.5,
        },
        velocity: Some(Vec2 { x: 0.0, y: 1.5 }),
        flags: [true, false, true],
        pair: (255, -32768),
        kind: Command::Move { dx: 1, dy: -1 },
        raw: f64::from_bits(0x7ff8_0000_dead_beef),
        raw32: -0.0,
        big: i64::MIN,
        mask: u64::MAX,
    };
    // NaN != NaN: compare the rest, then the bits.
    let bytes = roundtrip(Entity {
        raw: 1.5e300,
        ..e.clone()
    });
    let nan = netproto::encode(&e).expect("encodes");
    assert_eq!(nan.len(), bytes.len());
    // Bit-exact against hand-written calls.
    let q = Quantization::new(-512.0, 512.0, 0.5);
    let bytes = nan;
    let expected = reference(|w| {
        w.serialize_int(&mut 1023u16, 0, 1023)?;
        w.serialize_quantized(&mut -512.0, &q)?;
        w.serialize_quantized(&mut 511.5, &q)?;
        w.serialize_bool(&mut true)?;
        w.serialize_quantized(&mut 0.0, &q)?;
        w.serialize_quantized(&mut 1.5, &q)?;
        for mut b in [true, false, true] {
            w.serialize_bool(&mut b)?;
        }
        w.serialize_int(&mut 255u8, 0, 255)?;
        w.serialize_int(&mut -32768i16, i16::MIN, i16::MAX)?;
        w.serialize_index(&mut 1, 4)?;
        w.serialize_int(&mut 1i8, -8, 7)?;
        w.serialize_int(&mut -1i8, -8, 7)?;
        w.serialize_f64(&mut f64::from_bits(0x7ff8_0000_dead_beef))?;
        w.serialize_f32(&mut -0.0)?;
        w.serialize_int(&mut { i64::MIN }, i64::MIN, i64::MAX)?;
        w.serialize_int(&mut { u64::MAX }, 0, u64::MAX)
    });
    assert_eq!(bytes, expected);
    let back: Entity = netproto::decode(&bytes).expect("decodes");
    assert_eq!(
        back.raw.to_bits(),
        0x7ff8_0000_dead_beef,
        "raw floats are never canonicalised"
    );
    assert!(back.raw32.is_sign_negative());
}

#[derive(NetMessage, Debug, PartialEq)]
struct Pair<T, U> {
    a: T,
    b: U,
    #[net(max_len = 4)]
    rest: Vec<T>,
}

#[test]
fn generics_get_a_net_message_bound() {
    assert_eq!(Pair::<u8, bool>::MAX_BITS, 8 + 1 + 3 + 4 * 8);
    assert_eq!(Pair::<u8, bool>::MIN_BITS, 8 + 1 + 3);
    roundtrip(Pair {
        a: 7u8,
        b: true,
        rest: vec![1, 2, 3, 4],
    });
    roundtrip(Pair {
        a: Vec2 { x: 1.0, y: 2.0 },
        b: Unit,
        rest: vec![],
    });
}

/// Not a message: a type parameter used only by a skipped field gets no bound, so
/// `Tagged<NotAMessage>` is a message.
#[derive(Debug, PartialEq)]
struct NotAMessage;

#[derive(NetMessage, Debug, PartialEq)]
struct Tagged<T, U> {
    value: U,
    #[net(skip)]
    tag: std::marker::PhantomData<T>,
}

#[test]
fn bounds_are_inferred_from_the_fields_on_the_wire() {
    assert_eq!(<Tagged<NotAMessage, u16>>::MAX_BITS, 16);
    roundtrip(Tagged::<NotAMessage, u16> {
        value: 513,
        tag: std::marker::PhantomData,
    });
}

#[derive(NetMessage, Debug, PartialEq, Default)]
struct Chat {
    #[net(max_len = 32)]
    text: String,
    #[net(max_len = 5)]
    targets: Vec<u16>,
    #[net(max_len = 3)]
    points: Vec<Vec2>,
    #[net(max_len = 0)]
    nothing: Vec<u8>,
}

#[test]
fn strings_and_vecs_with_max_len() {
    // text: 6 + 7 + 256, targets: 3 + 5 * 16, points: 2 + 3 * 24, nothing: 0.
    assert_eq!(Chat::MAX_BITS, 6 + 7 + 256 + 3 + 80 + 2 + 72);
    assert_eq!(Chat::MIN_BITS, 6 + 3 + 2);
    roundtrip(Chat::default());
    let bytes = roundtrip(Chat {
        text: "gg wp ♥".to_owned(),
        targets: vec![1, 65535, 3],
        points: vec![Vec2 { x: 1.5, y: -2.0 }],
        nothing: vec![],
    });
    let q = Quantization::new(-512.0, 512.0, 0.5);
    let expected = reference(|w| {
        w.serialize_string(&mut "gg wp ♥".to_owned(), 32)?;
        w.serialize_vec(&mut vec![1u16, 65535, 3], 5)?;
        w.serialize_len(&mut 1, 3)?;
        w.serialize_quantized(&mut 1.5, &q)?;
        w.serialize_quantized(&mut -2.0, &q)
    });
    assert_eq!(bytes, expected);
}

#[derive(NetMessage, Debug, PartialEq)]
struct WithSkip {
    #[net(range = 0..=3)]
    a: u8,
    #[net(skip)]
    cache: Vec<String>,
    #[net(skip)]
    local: u32,
    #[net(range = 0..=3)]
    b: u8,
}

#[test]
fn skipped_fields_are_not_sent_and_read_as_default() {
    assert_eq!(WithSkip::MAX_BITS, 4);
    let mut message = WithSkip {
        a: 1,
        cache: vec!["x".to_owned()],
        local: 99,
        b: 2,
    };
    let bytes = netproto::encode(&message).expect("encodes");
    assert_eq!(bytes, [1 | 2 << 2]);
    assert_eq!(encode_traced(&mut message).expect("encodes"), bytes);
    let back: WithSkip = netproto::decode(&bytes).expect("decodes");
    assert_eq!(
        back,
        WithSkip {
            a: 1,
            cache: vec![],
            local: 0,
            b: 2
        }
    );
}

// ---------------------------------------------------------------------------------------
// Bit counts
// ---------------------------------------------------------------------------------------

#[derive(NetMessage, Debug, PartialEq)]
struct Widths {
    #[net(range = 0..=100)]
    seven: u8,
    #[net(range = 0..256)]
    eight: u8,
    #[net(range = 5..=5)]
    zero: u32,
    #[net(range = -1000..=1000)]
    eleven: i16,
    #[net(range = i64::MIN..=i64::MAX)]
    full: i64,
    #[net(bits = 1)]
    one: u8,
    #[net(range = 1_000_000..=1_000_003)]
    two: u32,
}

#[test]
fn exact_bit_counts() {
    assert_eq!(Widths::MAX_BITS, 7 + 8 + 11 + 64 + 1 + 2);
    assert_eq!(Widths::MIN_BITS, Widths::MAX_BITS);
    let bytes = roundtrip(Widths {
        seven: 100,
        eight: 255,
        zero: 5,
        eleven: -1000,
        full: -1,
        one: 1,
        two: 1_000_003,
    });
    assert_eq!(bytes.len(), 93usize.div_ceil(8));
    assert_eq!(netproto::measure(&Widths::blank()), 93);
    assert_eq!(Widths::blank().zero, 5, "a ranged int's blank is its min");
    assert_eq!(Widths::blank().eleven, -1000);
}

// ---------------------------------------------------------------------------------------
// Errors name the field
// ---------------------------------------------------------------------------------------

#[test]
fn out_of_range_writes_name_the_field() {
    let e = encode_err(PlayerInput {
        health: 101,
        yaw: 0.0,
        fire: false,
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("PlayerInput.health"))
    );
    let e = encode_err(PlayerInput {
        health: 0,
        yaw: 3.5,
        fire: false,
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("PlayerInput.yaw"))
    );
    let e = encode_err(PlayerInput {
        health: 0,
        yaw: f32::NAN,
        fire: false,
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("PlayerInput.yaw"))
    );
    let e = encode_err(Tuple(8, 0, 0));
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Tuple.0"))
    );
    let e = encode_err(Tuple(0, 4096, 0));
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Tuple.1"))
    );
    let e = encode_err(Command::Move { dx: 0, dy: -9 });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Command::Move.dy"))
    );
    let e = encode_err(Command::Say("x".repeat(17)));
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::TooLong, Some("Command::Say.0"))
    );
    let e = encode_err(Chat {
        targets: vec![0; 6],
        ..Chat::default()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::TooLong, Some("Chat.targets"))
    );
    let e = encode_err(Chat {
        text: "y".repeat(33),
        ..Chat::default()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::TooLong, Some("Chat.text"))
    );
    let e = encode_err(Chat {
        nothing: vec![1],
        ..Chat::default()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::TooLong, Some("Chat.nothing"))
    );
    let mut w = Widths::blank();
    w.zero = 6;
    let e = encode_err(w);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Widths.zero"))
    );
    let mut w = Widths::blank();
    w.one = 2;
    let e = encode_err(w);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Widths.one"))
    );
    assert_eq!(
        e.to_string(),
        "Widths.one: value outside its declared range"
    );
}

#[test]
fn the_innermost_field_is_named() {
    let mut e = Entity {
        id: 0,
        position: Vec2 { x: 0.0, y: 600.0 },
        velocity: None,
        flags: [false; 3],
        pair: (0, 0),
        kind: Command::Stop,
        raw: 0.0,
        raw32: 0.0,
        big: 0,
        mask: 0,
    };
    assert_eq!(encode_err_ref(&mut e).field(), Some("Vec2.y"));
    e.position.y = 0.0;
    e.kind = Command::Move { dx: 100, dy: 0 };
    assert_eq!(encode_err_ref(&mut e).field(), Some("Command::Move.dx"));
    e.kind = Command::Stop;
    e.id = 1024;
    assert_eq!(encode_err_ref(&mut e).field(), Some("Entity.id"));
}

fn encode_err_ref<T: NetMessage>(message: &mut T) -> StreamError {
    let fast = netproto::encode(message).expect_err("must reject");
    assert_eq!(encode_traced(message).expect_err("must reject"), fast);
    fast
}

#[test]
fn decode_rejects_headroom_naming_the_field() {
    // health is 7 bits for 0..=100: 127 is headroom.
    let e = decode_err::<PlayerInput>(&[0x7f, 0, 0]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("PlayerInput.health"))
    );
    // yaw: 13 bits, max_int 6284; all ones is above it.
    let e = decode_err::<PlayerInput>(&[0x00, 0xff, 0x0f]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("PlayerInput.yaw"))
    );
    // Tuple.0 in 4 bits is exact (no headroom); Tuple.1 too. A nested Vec2 in Entity.
    let e = decode_err::<Vec2>(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Vec2.x"))
    );
    // The second field of a run: x = 0 is fine, y is all ones.
    let e = decode_err::<Vec2>(&[0, 0, 0xf0, 0xff, 0xff, 0x0f]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Vec2.y"))
    );
    // A variant's only field, ranged: Single::Only is 2 bits for 1..=3.
    let e = decode_err::<Single>(&[0x03]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Single::Only.0"))
    );
}

#[derive(NetMessage, Debug, PartialEq)]
enum Three {
    A,
    B,
    C,
}

#[derive(NetMessage, Debug, PartialEq)]
struct HoldsThree {
    flag: bool,
    three: Three,
}

#[test]
fn decode_rejects_an_unknown_variant() {
    assert_eq!(Three::MAX_BITS, 2);
    roundtrip(Three::C);
    let e = decode_err::<Three>(&[3]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::UnknownVariant, Some("Three"))
    );
    let e = decode_err::<HoldsThree>(&[0b110]);
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::UnknownVariant, Some("Three"))
    );
    let e = decode_err::<Command>(&[]);
    assert_eq!(e.kind(), ErrorKind::PastEnd);
}

#[test]
fn decode_rejects_truncated_input() {
    let e = decode_err::<PlayerInput>(&[0x10, 0x00]);
    assert_eq!(e.kind(), ErrorKind::PastEnd);
    let e = decode_err::<Chat>(&[0x05]);
    assert_eq!(e.kind(), ErrorKind::PastEnd);
}

// ---------------------------------------------------------------------------------------
// The word paths, the plain streams and the per-field (tracing) path agree
// ---------------------------------------------------------------------------------------

/// Many fixed-width fields, filling several of the packer's 64-bit words and crossing
/// their boundaries, with an aligned, variable-length field (the string) in the middle.
#[derive(NetMessage, Debug, PartialEq, Clone)]
struct Wide {
    #[net(range = 0..=100)]
    a: u8,
    b: bool,
    #[net(bits = 30)]
    c: u32,
    #[net(range = -70000..=70000)]
    d: i32,
    e: u16,
    #[net(quantize(min = 0.0, max = 1.0, res = 0.0001))]
    f: f32,
    g: u64,
    h: i8,
    #[net(max_len = 3)]
    name: String,
    i: f32,
    #[net(range = 3..=3)]
    j: u8,
    k: bool,
    l: f64,
    #[net(bits = 63)]
    m: u64,
    n: bool,
}

fn random_wide(rng: &mut Lcg) -> Wide {
    let q = Quantization::new(0.0, 1.0, 0.0001);
    Wide {
        a: rng.below(101) as u8,
        b: rng.below(2) == 1,
        c: rng.below(1 << 30) as u32,
        d: rng.below(140_001) as i32 - 70_000,
        e: rng.next() as u16,
        f: q.dequantize(rng.below(u64::from(q.max_int()) + 1) as u32),
        g: rng.next(),
        h: rng.next() as i8,
        name: ["", "a", "ab", "abc"][rng.below(4) as usize].to_owned(),
        i: f32::from_bits(rng.next() as u32 & 0x7f7f_ffff),
        j: 3,
        k: rng.below(2) == 0,
        l: f64::from_bits(rng.next() & 0x7fef_ffff_ffff_ffff),
        m: rng.next() >> 1,
        n: rng.below(2) == 0,
    }
}

#[test]
fn packed_plain_and_traced_paths_agree_on_bytes_and_values() {
    let mut rng = Lcg(7);
    for _ in 0..2000 {
        roundtrip(random_wide(&mut rng));
    }
    for _ in 0..500 {
        let e = Entity {
            id: rng.below(1024) as u16,
            position: Vec2 {
                x: rng.below(2048) as f32 / 2.0 - 512.0,
                y: 0.5,
            },
            velocity: (rng.below(2) == 0).then_some(Vec2 { x: -1.0, y: 1.0 }),
            flags: [rng.below(2) == 0, true, rng.below(2) == 0],
            pair: (rng.next() as u8, rng.next() as i16),
            kind: Command::Aim(0.5, rng.below(2) == 0),
            raw: 1.0,
            raw32: 2.0,
            big: rng.next() as i64,
            mask: rng.next(),
        };
        roundtrip(e);
    }
}

#[test]
fn both_paths_reject_the_same_field() {
    let mut rng = Lcg(11);
    let base = random_wide(&mut rng);
    type Break = fn(&mut Wide);
    let cases: [(Break, &str); 6] = [
        (|w| w.a = 101, "Wide.a"),
        (|w| w.c = 1 << 30, "Wide.c"),
        (|w| w.d = 70_001, "Wide.d"),
        (|w| w.f = 1.5, "Wide.f"),
        (|w| w.j = 4, "Wide.j"),
        (|w| w.m = u64::MAX, "Wide.m"),
    ];
    for (break_it, field) in cases {
        let mut w = base.clone();
        break_it(&mut w);
        let e = encode_err(w);
        assert_eq!((e.kind(), e.field()), (ErrorKind::OutOfRange, Some(field)));
    }
    // Decoding garbage: both paths fail the same way (or both succeed) on every input.
    let good = netproto::encode(&base).expect("encodes");
    // Truncated anywhere: the word reader (the fast path) and the plain reader under the
    // tracer fail at the same field.
    for len in 0..good.len() {
        let e = decode_err::<Wide>(&good[..len]);
        assert_eq!(e.kind(), ErrorKind::PastEnd, "truncated to {len} bytes");
    }
    for i in 0..good.len() * 8 {
        let mut bytes = good.clone();
        bytes[i / 8] ^= 1 << (i % 8);
        let fast = netproto::decode::<Wide>(&bytes);
        let traced = decode_traced::<Wide>(&bytes);
        match (fast, traced) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a, b),
            (a, b) => panic!("paths disagree at bit {i}: {a:?} vs {b:?}"),
        }
    }
}

#[test]
fn tracing_streams_get_every_field_name() {
    let names = traced_names(&mut Entity::blank());
    let top: Vec<&str> = names
        .iter()
        .filter(|(d, _)| *d == 0)
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(
        top,
        [
            "id", "position", "velocity", "flags", "pair", "kind", "raw", "raw32", "big", "mask"
        ]
    );
    assert!(names.contains(&(1, "x")) && names.contains(&(1, "y")));
    let names = traced_names(&mut Tuple(0, 0, 0));
    assert_eq!(names, [(0, "0"), (0, "1"), (0, "2")]);
    let names = traced_names(&mut Command::Move { dx: 0, dy: 0 });
    assert_eq!(names, [(0, "dx"), (0, "dy")]);
}

#[test]
fn measure_matches_the_writer() {
    let mut rng = Lcg(3);
    for _ in 0..200 {
        let mut w = random_wide(&mut rng);
        let bits = measured(&mut w);
        let mut buf = vec![0u8; Wide::MAX_BITS.div_ceil(8)];
        let mut stream = WriteStream::new(&mut buf);
        w.serialize(&mut stream).expect("encodes");
        // One string: its align is charged 7 bits whatever the position.
        assert!(bits >= stream.bits_processed() && bits <= stream.bits_processed() + 7);
        let mut traced = Tracing::new(MeasureStream::new());
        match w.serialize(&mut traced) {
            Ok(()) => assert_eq!(traced.inner.bits_processed(), bits),
            Err(never) => match never {},
        }
    }
}

// ---------------------------------------------------------------------------------------
// Constant-expression bounds
// ---------------------------------------------------------------------------------------

const MAX_PLAYERS: u32 = 64;
const ID_BITS: u32 = 10;
const NAME_LEN: usize = 12;
const LO: f32 = -2.0;

mod limits {
    pub(crate) const MIN_HP: i16 = -50;
}

#[derive(NetMessage, Debug, PartialEq)]
struct Consts {
    #[net(range = 0..MAX_PLAYERS)]
    player: u8,
    #[net(range = limits::MIN_HP..=limits::MIN_HP + 100)]
    hp: i16,
    #[net(bits = ID_BITS)]
    id: u16,
    #[net(max_len = NAME_LEN)]
    name: String,
    #[net(max_len = NAME_LEN / 4)]
    tags: Vec<u8>,
    #[net(quantize(min = LO, max = 2.0, res = 0.25))]
    q: f32,
}

#[test]
fn constant_expression_bounds() {
    assert_eq!(Consts::MAX_BITS, 6 + 7 + 10 + (4 + 7 + 96) + (2 + 24) + 5);
    assert_eq!(Consts::MIN_BITS, 6 + 7 + 10 + 4 + 2 + 5);
    let blank = Consts::blank();
    assert_eq!((blank.player, blank.hp, blank.q), (0, -50, -2.0));
    roundtrip(Consts {
        player: 63,
        hp: 50,
        id: 1023,
        name: "abc".to_owned(),
        tags: vec![1, 2, 3],
        q: 1.75,
    });
    let e = encode_err(Consts {
        player: 64,
        ..Consts::blank()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Consts.player"))
    );
    let e = encode_err(Consts {
        id: 1024,
        ..Consts::blank()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Consts.id"))
    );
    let e = encode_err(Consts {
        hp: 51,
        ..Consts::blank()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Consts.hp"))
    );
    let e = encode_err(Consts {
        q: -2.5,
        ..Consts::blank()
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::OutOfRange, Some("Consts.q"))
    );
}

// ---------------------------------------------------------------------------------------
// The example of the derive's documentation
// ---------------------------------------------------------------------------------------

#[derive(NetMessage, Debug, PartialEq)]
struct DocInput {
    #[net(range = 0..=100)]
    health: u8,
    #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
    yaw: f32,
    #[net(bits = 12)]
    tick: u16,
    fire: bool,
    #[net(max_len = 32)]
    name: String,
    #[net(skip)]
    predicted: bool,
}

#[test]
fn the_documented_example() {
    assert_eq!(DocInput::MAX_BITS, 7 + 13 + 12 + 1 + 6 + 7 + 256);
    let input = DocInput {
        health: 50,
        yaw: 0.0,
        tick: 7,
        fire: true,
        name: "neo".to_owned(),
        predicted: true,
    };
    let bytes = netproto::encode(&input).expect("encodes");
    let back: DocInput = netproto::decode(&bytes).expect("decodes");
    assert_eq!(
        back,
        DocInput {
            predicted: false,
            ..input
        }
    );
}

// ---------------------------------------------------------------------------------------
// Hygiene: names the generated code must not trip over
// ---------------------------------------------------------------------------------------

/// A type parameter named like the stream's, a `where` clause, a raw identifier.
#[derive(NetMessage, Debug, PartialEq)]
struct Hygiene<S, E>
where
    S: Copy,
{
    stream: S,
    e: Option<E>,
    #[net(range = 0..=9)]
    r#type: u8,
}

#[derive(NetMessage, Debug, PartialEq)]
enum GenericEnum<T> {
    Nothing,
    One(T),
    Two { first: T, second: T },
}

#[test]
fn hygiene() {
    roundtrip(Hygiene {
        stream: 3u16,
        e: Some(true),
        r#type: 9,
    });
    let e = encode_err(Hygiene {
        stream: 3u16,
        e: None::<bool>,
        r#type: 10,
    });
    assert_eq!(e.field(), Some("Hygiene.type"));
    assert_eq!(GenericEnum::<u8>::MAX_BITS, 2 + 16);
    roundtrip(GenericEnum::Two {
        first: 1u8,
        second: 2,
    });
    roundtrip(GenericEnum::One(Vec2 { x: 1.0, y: 1.0 }));
    roundtrip(GenericEnum::<u8>::Nothing);

    // A message declared in a function, with a bound from a local constant.
    const LOCAL: u8 = 20;
    #[derive(NetMessage, Debug, PartialEq)]
    struct Local {
        #[net(range = 10..=LOCAL)]
        level: u8,
    }
    assert_eq!(Local::MAX_BITS, 4);
    roundtrip(Local { level: 20 });
    assert_eq!(encode_err(Local { level: 9 }).field(), Some("Local.level"));
}

#[test]
fn a_full_buffer_fails_the_same_way_on_both_paths() {
    let mut rng = Lcg(5);
    let mut messages: Vec<Command> = vec![
        Command::Stop,
        Command::Move { dx: -8, dy: 7 },
        Command::Say("hello".to_owned()),
        Command::Aim(1.0, false),
    ];
    let mut wide = random_wide(&mut rng);
    for message in &mut messages {
        let len = netproto::encode(message).expect("encodes").len();
        for size in 0..len {
            let mut a = vec![0u8; size];
            let fast = netproto::encode_into(message, &mut a).expect_err("too small");
            let mut b = vec![0u8; size];
            let mut stream = Tracing::new(WriteStream::new(&mut b));
            let traced = message.serialize(&mut stream).expect_err("too small");
            assert_eq!((fast.kind(), fast.field()), (traced.kind(), traced.field()));
            assert_eq!(fast.kind(), ErrorKind::BufferFull);
        }
    }
    let len = netproto::encode(&wide).expect("encodes").len();
    for size in 0..len {
        let mut a = vec![0u8; size];
        let fast = netproto::encode_into(&wide, &mut a).expect_err("too small");
        let mut b = vec![0u8; size];
        let mut stream = Tracing::new(WriteStream::new(&mut b));
        let traced = wide.serialize(&mut stream).expect_err("too small");
        assert_eq!(fast, traced, "buffer of {size} bytes");
    }
}

/// A hand-written `NetMessage` that bounds a `Vec` itself.
#[derive(Debug, PartialEq)]
struct Capped<T>(T);

impl NetMessage for Capped<Vec<u8>> {
    const MAX_BITS: usize = 3 + 4 * 8;
    const MIN_BITS: usize = 3;
    fn blank() -> Self {
        Capped(Vec::new())
    }
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        stream.serialize_vec(this.field(|c| &c.0, |c| &mut c.0), 4)
    }
}

#[derive(NetMessage, Debug, PartialEq)]
struct UsesCapped {
    flag: bool,
    bytes: Capped<Vec<u8>>,
}

#[test]
fn hand_written_impls_compose() {
    assert_eq!(UsesCapped::MAX_BITS, 1 + 3 + 32);
    roundtrip(UsesCapped {
        flag: true,
        bytes: Capped(vec![1, 2, 3]),
    });
    let e = encode_err(UsesCapped {
        flag: true,
        bytes: Capped(vec![0; 5]),
    });
    assert_eq!(
        (e.kind(), e.field()),
        (ErrorKind::TooLong, Some("UsesCapped.bytes"))
    );
}

/// Declares its item as given: the derive then sees field types whose tokens come from
/// a `macro_rules!` expansion.
macro_rules! declared_by_a_macro {
    ($item:item) => {
        #[derive(NetMessage, Debug, Clone, PartialEq)]
        $item
    };
}

declared_by_a_macro! {
    struct MacroInner(#[net(range = 0..=9)] u8);
}

declared_by_a_macro! {
    struct MacroOuter {
        inner: MacroInner,
        pair: (MacroInner, bool),
        #[net(max_len = 3)]
        list: Vec<MacroInner>,
    }
}

#[test]
fn derives_inside_a_macro_rules() {
    // Nested types and sequences are called with the derive's own locals, which a
    // `macro_rules!` expansion must not hide from them.
    let message = MacroOuter {
        inner: MacroInner(7),
        pair: (MacroInner(9), true),
        list: vec![MacroInner(1), MacroInner(2)],
    };
    let bytes = netproto::encode(&message).expect("encodes");
    assert_eq!(
        netproto::decode::<MacroOuter>(&bytes).expect("decodes"),
        message
    );
}

/// A generic wrapper, for bounds computed per instantiation.
#[derive(NetMessage, Debug, PartialEq)]
struct Wrapped<T> {
    inner: T,
    flag: bool,
}

/// A const bound: the bit bounds then come from the compiler, not the macro.
const SLOTS: u32 = 5;

#[derive(NetMessage, Debug, PartialEq)]
enum Slotted {
    None,
    One(#[net(range = 0..=SLOTS)] u32),
    Two(
        #[net(range = 0..SLOTS)] u32,
        #[net(max_len = SLOTS)] Vec<u8>,
    ),
}

/// `MAX_BITS` / `MIN_BITS` are the schema's bounds, and constants: they size arrays and
/// feed other constants, generic instantiations included.
#[test]
fn bit_bounds_are_constants_read_from_the_schema() {
    const BYTES: usize = PlayerInput::MAX_BITS.div_ceil(8);
    let buf = [0u8; BYTES];
    assert_eq!(buf.len(), 3);
    const WRAPPED: usize = <Wrapped<PlayerInput>>::MAX_BITS;
    assert_eq!(WRAPPED, 7 + 13 + 1 + 1);
    assert_eq!(<Wrapped<u16>>::MIN_BITS, 17);
    // Index (2 bits), then the widest variant: 3 + 3 + 5 * 8 bits; the narrowest is None.
    const SLOTTED: (usize, usize) = (Slotted::MIN_BITS, Slotted::MAX_BITS);
    assert_eq!(SLOTTED, (2, 2 + 3 + 3 + 5 * 8));
    for (min, max, schema) in [
        (
            PlayerInput::MIN_BITS,
            PlayerInput::MAX_BITS,
            PlayerInput::SCHEMA,
        ),
        (Slotted::MIN_BITS, Slotted::MAX_BITS, Slotted::SCHEMA),
        (Tuple::MIN_BITS, Tuple::MAX_BITS, Tuple::SCHEMA),
    ] {
        assert_eq!(
            (min, max),
            (schema.min_bits, schema.max_bits),
            "{}",
            schema.name
        );
    }
    roundtrip(Slotted::Two(4, vec![1, 2, 3, 4, 5]));
    roundtrip(Wrapped {
        inner: 7u16,
        flag: true,
    });
}
