//! Target: a derived message set, decoded from arbitrary bytes.

use netproto::NetMessage;
use netproto_examples::game::{GameMessage, workload};

use super::{Msg, Seed};

/// Decodes `data` as a [`GameMessage`] (and as a prefix). Whatever decodes must decode
/// the same way twice, fit `MAX_BITS`, re-encode within its measured size, and the
/// re-encoding must decode to the same value and re-encode to the same bytes. Returns
/// whether `data` decoded.
pub fn message_set(data: &[u8]) -> bool {
    let first = netproto::decode::<Msg>(data);
    let second = netproto::decode::<Msg>(data);
    assert_eq!(first, second, "decoding is not deterministic");
    if let Ok(message) = &first {
        check_round_trip(message);
        assert!(
            data.len() <= Msg::MAX_BITS.div_ceil(8),
            "decoded more than MAX_BITS"
        );
    }
    match netproto::decode_prefix::<Msg>(data) {
        Ok((message, used)) => {
            assert!(used <= data.len());
            check_round_trip(&message);
            // The prefix decodes by itself, exactly.
            assert_eq!(netproto::decode::<Msg>(&data[..used]), Ok(message.clone()));
            if let Ok(whole) = &first {
                assert_eq!(whole, &message, "decode and decode_prefix disagree");
            }
        }
        Err(e) => assert!(
            first.is_err(),
            "decode_prefix failed ({e}) where decode worked"
        ),
    }
    first.is_ok()
}

/// Re-encodes a decoded message: it must encode (every value came in range), within
/// its measure, decode to itself and re-encode to the same bytes.
pub fn check_round_trip(message: &Msg) {
    let bytes = netproto::encode(message)
        .unwrap_or_else(|e| panic!("a decoded message does not re-encode: {e}: {message:?}"));
    assert!(
        bytes.len() * 8 <= netproto::measure(message) + 7,
        "measure below the written size"
    );
    let back = netproto::decode::<Msg>(&bytes)
        .unwrap_or_else(|e| panic!("a re-encoded message does not decode: {e}: {message:?}"));
    assert_eq!(&back, message, "decode(encode(m)) != m");
    assert_eq!(
        netproto::encode(&back).ok(),
        Some(bytes),
        "encoding is not stable"
    );
}

/// A message drawn from the example workload with `seed`.
pub fn seeded_message(seed: u16) -> Msg {
    let mut messages = workload(1, u64::from(seed));
    messages
        .pop()
        .unwrap_or(GameMessage::Input(netproto_examples::game::PlayerInput {
            tick: 0,
            buttons: 0,
            aim_yaw: 0.0,
            aim_pitch: 0.0,
            move_x: 0,
            move_y: 0,
        }))
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` encoded messages of the example workload (each decodes: 1).
    pub fn message_set(count: usize, seed: u64) -> Vec<Seed> {
        workload(count, seed)
            .into_iter()
            .map(|m| Seed::taking(netproto::encode(&m).expect("a valid message"), 1))
            .collect()
    }
}
