//! Property tests on the example game messages: roundtrip, measure vs written, and a
//! flood of random and mutated buffers that must never panic.

use netproto::{ErrorKind, NetMessage, ReadStream, Stream};
use netproto_examples::game::{
    ChatMessage, EntityBatch, EntityId, EntityState, EntityUpdate, GameMessage, HALF_TURN,
    MatchPhase, PlayerInput, Position, QUARTER_TURN, workload,
};
use proptest::prelude::*;

mod common;

/// The seed of this file's property tests.
const SEED: u64 = 0x6d65_7373_6167_6573;

fn id() -> impl Strategy<Value = EntityId> {
    (0u16..=4095).prop_map(EntityId)
}

fn input() -> impl Strategy<Value = PlayerInput> {
    (
        0u8..64,
        any::<u8>(),
        -HALF_TURN..=HALF_TURN,
        -QUARTER_TURN..=QUARTER_TURN,
        -7i8..=7,
        -7i8..=7,
    )
        .prop_map(
            |(tick, buttons, aim_yaw, aim_pitch, move_x, move_y)| PlayerInput {
                tick,
                buttons,
                aim_yaw,
                aim_pitch,
                move_x,
                move_y,
            },
        )
}

fn state() -> impl Strategy<Value = EntityState> {
    prop_oneof![
        Just(EntityState::Idle),
        (0u8..=15).prop_map(|speed| EntityState::Moving { speed }),
        id().prop_map(|target| EntityState::Attacking { target }),
        (0u16..=300).prop_map(|respawn_ticks| EntityState::Dead { respawn_ticks }),
    ]
}

fn update() -> impl Strategy<Value = EntityUpdate> {
    (
        id(),
        (-1024f32..=1024.0, -1024f32..=1024.0, -64f32..=448.0),
        -HALF_TURN..=HALF_TURN,
        0u8..=100,
        state(),
    )
        .prop_map(|(entity, (x, y, z), heading, health, state)| EntityUpdate {
            entity,
            position: Position { x, y, z },
            heading,
            health,
            state,
        })
}

fn chat() -> impl Strategy<Value = ChatMessage> {
    // Any non-NUL text of at most 140 UTF-8 bytes.
    (0u8..64, "[^\u{0}]{0,35}").prop_filter_map("at most 140 bytes", |(from, text)| {
        (text.len() <= 140).then_some(ChatMessage { from, text })
    })
}

fn phase() -> impl Strategy<Value = MatchPhase> {
    prop_oneof![
        (0u8..=64).prop_map(|players| MatchPhase::Warmup { players }),
        (0u8..=10).prop_map(|seconds| MatchPhase::Countdown { seconds }),
        (1u8..=30, 0u16..=999, 0u16..=999).prop_map(|(round, red, blue)| MatchPhase::Playing {
            round,
            red,
            blue
        }),
        proptest::option::of(any::<bool>()).prop_map(|winner| MatchPhase::RoundOver { winner }),
    ]
}

fn message() -> impl Strategy<Value = GameMessage> {
    prop_oneof![
        input().prop_map(GameMessage::Input),
        update().prop_map(GameMessage::Update),
        chat().prop_map(GameMessage::Chat),
        proptest::collection::vec(id(), 0..=64)
            .prop_map(|ids| GameMessage::Batch(EntityBatch { ids })),
        phase().prop_map(GameMessage::Phase),
    ]
}

/// Whether `b` is `a` read back: equal, but quantized floats within half a step plus
/// the f32 rounding of values of the range's magnitude (`bound`: the largest |min|, |max|).
fn close(a: &GameMessage, b: &GameMessage) -> bool {
    let near = |x: f32, y: f32, res: f32, bound: f32| {
        (x - y).abs() <= res / 2.0 + bound * 4.0 * f32::EPSILON
    };
    match (a, b) {
        (GameMessage::Input(a), GameMessage::Input(b)) => {
            a.tick == b.tick
                && a.buttons == b.buttons
                && near(a.aim_yaw, b.aim_yaw, 0.001, HALF_TURN)
                && near(a.aim_pitch, b.aim_pitch, 0.001, QUARTER_TURN)
                && a.move_x == b.move_x
                && a.move_y == b.move_y
        }
        (GameMessage::Update(a), GameMessage::Update(b)) => {
            a.entity == b.entity
                && near(a.position.x, b.position.x, 0.01, 1024.0)
                && near(a.position.y, b.position.y, 0.01, 1024.0)
                && near(a.position.z, b.position.z, 0.01, 448.0)
                && near(a.heading, b.heading, 0.01, HALF_TURN)
                && a.health == b.health
                && a.state == b.state
        }
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(common::proptest_config(2000, SEED))]

    #[test]
    fn roundtrip_and_measure(message in message()) {
        let bytes = netproto::encode(&message).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: GameMessage = netproto::decode(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(close(&message, &back), "{message:?} came back as {back:?}");

        let mut buf = [0u8; 256];
        let mut written = netproto::WriteStream::new(&mut buf);
        message.write(&mut written).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let written_bits = written.bits_processed();
        let measured = netproto::measure(&message);
        prop_assert!(measured <= GameMessage::MAX_BITS);
        prop_assert!(written_bits >= GameMessage::MIN_BITS);
        if matches!(message, GameMessage::Chat(_)) {
            // The string's align is charged 7 bits by the measurer, whatever it pads.
            prop_assert!(measured >= written_bits && measured - written_bits <= 7);
        } else {
            prop_assert_eq!(measured, written_bits);
        }
    }
}

proptest! {
    #![proptest_config(common::proptest_config(1000, SEED ^ 1))]

    /// Writing from `&T` (`NetMessage::write`) and through `serialize(&mut self)` -- the
    /// trait's methods, which take the writer's packed fast path when the buffer has room
    /// for `MAX_BITS` -- and the plain per-field path (`serialize_in` run on the writer
    /// itself) give the same bytes, measures and errors, in every buffer from empty to
    /// roomy, at offset 0 and 3; none changes the message. The roomy buffer packs; the
    /// tight ones (fewer than `MAX_BITS` bits) take the plain writer behind `write`.
    #[test]
    fn the_shared_and_mutable_write_paths_agree(message in message()) {
        let shared = netproto::encode(&message).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(netproto::decode::<GameMessage>(&shared).is_ok(), true);
        let mut measure = netproto::MeasureStream::new();
        message.clone().serialize(&mut measure).map_err(|e| match e {})?;
        prop_assert_eq!(measure.bits_processed(), netproto::measure(&message));
        let roomy = GameMessage::MAX_BITS.div_ceil(8);
        prop_assert!(shared.len() <= roomy);
        for len in (0..=shared.len() + 8).chain([roomy, roomy + 1]) {
            let mut a = vec![0xA5u8; len];
            let mut b = vec![0xA5u8; len];
            let mut p = vec![0xA5u8; len];
            let mut wa = netproto::WriteStream::new(&mut a);
            let ra = message.write(&mut wa).map(|()| wa.finish());
            let mut copy = message.clone();
            let mut wb = netproto::WriteStream::new(&mut b);
            let rb = copy.serialize(&mut wb).map(|()| wb.finish());
            prop_assert_eq!(&copy, &message);
            let mut wp = netproto::WriteStream::new(&mut p);
            let rp = GameMessage::serialize_in(&message, &mut wp).map(|()| wp.finish());
            prop_assert_eq!(ra, rb, "buffer of {} bytes", len);
            prop_assert_eq!(ra, rp, "buffer of {} bytes: trait method and plain path", len);
            // At offset 3, so that the packed words do not start on the writer's words.
            let mut c = vec![0xA5u8; len + 1];
            let mut d = vec![0xA5u8; len + 1];
            let mut wc = netproto::WriteStream::new(&mut c);
            let mut wd = netproto::WriteStream::new(&mut d);
            wc.serialize_bits(&mut 5, 3).map_err(|e| TestCaseError::fail(e.to_string()))?;
            wd.serialize_bits(&mut 5, 3).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let rc = message.write(&mut wc).map(|()| wc.finish());
            let rd = GameMessage::serialize_in(&message, &mut wd).map(|()| wd.finish());
            prop_assert_eq!(rc, rd, "buffer of {} bytes + 1", len);
            prop_assert_eq!(&c, &d);
            prop_assert_eq!(ra.is_ok(), len >= shared.len());
            if let Ok(n) = ra {
                prop_assert_eq!(&a[..n], &shared[..]);
            }
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(&a, &p);
        }
        // With room (packed) and without (exactly the message's bytes, plain unless the
        // message is as long as it can be): the same bytes.
        let mut tight = vec![0u8; shared.len()];
        let mut w = netproto::WriteStream::new(&mut tight);
        message.write(&mut w).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(w.finish(), shared.len());
        prop_assert_eq!(&tight, &shared);
    }
}

/// The trait's `write` takes the plain writer when the buffer is short of `MAX_BITS`:
/// the errors it then gives are those of the plain path, naming the field that does
/// not fit, and the same as the roomy (packed) path's for an out-of-range value.
#[test]
fn write_without_room_fails_like_the_plain_path() {
    let message = GameMessage::Chat(ChatMessage {
        from: 7,
        text: "hello there".to_owned(),
    });
    let bytes = netproto::encode(&message).unwrap();
    assert!(
        bytes.len() * 8 < GameMessage::MAX_BITS,
        "the tight buffers must be plain"
    );
    let mut failed = 0;
    for len in 0..bytes.len() {
        let mut a = vec![0u8; len];
        let mut b = vec![0u8; len];
        let mut wa = netproto::WriteStream::new(&mut a);
        let mut wb = netproto::WriteStream::new(&mut b);
        let ra = message.write(&mut wa);
        let rb = GameMessage::serialize_in(&message, &mut wb);
        assert_eq!(ra, rb, "buffer of {len} bytes");
        assert_eq!(ra.unwrap_err().kind(), ErrorKind::BufferFull);
        assert_eq!(wa.bits_processed(), wb.bits_processed());
        failed += 1;
    }
    assert_eq!(failed, bytes.len());
    // Out of range: the same error from a roomy buffer (packed) and a tight one (plain).
    let bad = GameMessage::Chat(ChatMessage {
        from: 200,
        text: String::new(),
    });
    let mut roomy = vec![0u8; GameMessage::MAX_BITS.div_ceil(8)];
    let mut tight = [0u8; 4];
    let packed = bad
        .write(&mut netproto::WriteStream::new(&mut roomy))
        .unwrap_err();
    let plain = bad
        .write(&mut netproto::WriteStream::new(&mut tight))
        .unwrap_err();
    assert_eq!(packed, plain);
    assert_eq!(packed.kind(), ErrorKind::OutOfRange);
}

/// Reads one `GameMessage` per call until the buffer runs out; returns how many decoded.
fn decode_all(bytes: &[u8]) -> (usize, Option<ErrorKind>) {
    let mut stream = ReadStream::new(bytes);
    let mut count = 0;
    while stream.bits_remaining() >= 8 {
        let mut message = GameMessage::blank();
        match message.serialize(&mut stream) {
            Ok(()) => count += 1,
            Err(err) => return (count, Some(err.kind())),
        }
    }
    (count, None)
}

/// 100,000+ random and mutated buffers decode to a message or an error, never a panic,
/// and each error is one of the documented kinds.
#[test]
fn hostile_buffers_never_panic() {
    let mut rng = netproto::sim::Rng::new(0x5EED);
    let mut next = move || rng.next_u64();
    let mut valid = Vec::new();
    for message in workload(256, 7) {
        valid.push(netproto::encode(&message).unwrap_or_default());
    }
    let (mut ok, mut rejected) = (0usize, 0usize);
    let mut kinds = std::collections::BTreeSet::new();
    for round in 0..120_000u64 {
        let bytes: Vec<u8> = if round % 2 == 0 {
            let len = (next() % 64) as usize;
            (0..len).map(|_| next() as u8).collect()
        } else {
            let mut bytes = valid[(next() % valid.len() as u64) as usize].clone();
            for _ in 0..=(next() % 3) {
                match next() % 3 {
                    0 if !bytes.is_empty() => {
                        let at = (next() % bytes.len() as u64) as usize;
                        bytes[at] ^= 1 << (next() % 8);
                    }
                    1 => bytes.truncate((next() % (bytes.len() as u64 + 1)) as usize),
                    _ => bytes.push(next() as u8),
                }
            }
            bytes
        };
        match netproto::decode::<GameMessage>(&bytes) {
            Ok(_) => ok += 1,
            Err(err) => {
                rejected += 1;
                kinds.insert(format!("{:?}", err.kind()));
            }
        }
        let _ = decode_all(&bytes);
    }
    println!("hostile: {ok} decoded, {rejected} rejected, kinds {kinds:?}");
    // Both outcomes must occur: a flood that only ever fails (or only ever decodes) would
    // not be testing the validating paths.
    assert!(ok > 0 && rejected > 0, "{ok} decoded, {rejected} rejected");
    // The flood must exercise the validating paths, not just run out of input.
    for kind in ["PastEnd", "OutOfRange", "UnknownVariant", "TrailingBytes"] {
        assert!(
            kinds.contains(kind),
            "no {kind} rejection in the flood: {kinds:?}"
        );
    }
}

/// A batch header claiming the maximum length in a short buffer fails before reserving.
#[test]
fn batch_length_beyond_input_is_rejected() {
    // Type id 3 (Batch) in bits 0..3, then length 64 (0b1000000) in bits 3..10: only
    // bit 9 is set. 64 ids need 768 bits; 6 remain.
    let bytes = [0b0000_0011, 0b0000_0010];
    let err = netproto::decode::<GameMessage>(&bytes).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PastEnd);
}
