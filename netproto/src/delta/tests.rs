//! The hand-written delta forms: primitives, `Option`, arrays, the field helpers and
//! [`Entities`] (gap coding, the three lists, the reader's rejections).

#![allow(clippy::unwrap_used)]

use super::*;
use crate::error::ErrorKind;
use crate::quantize::Quantization;
use crate::stream::model::Rng;

type Scene = Entities<u16, 1023, 64>;

/// Writes `now` against `base`, checks the measure and reads it back.
fn round_trip<T: NetDelta + PartialEq + core::fmt::Debug>(now: &T, base: &T) -> usize {
    let bytes = encode_delta(now, base).unwrap();
    let mut w = [0u8; 4096];
    let mut stream = WriteStream::new(&mut w);
    now.write_delta(base, &mut stream).unwrap();
    let written = stream.bits_processed();
    assert_eq!(now.measure_delta(base), written);
    assert!(written <= T::DELTA_MAX_BITS);
    assert_eq!(&decode_delta(&bytes, base).unwrap(), now);
    written
}

fn scene(rng: &mut Rng, len: usize) -> Scene {
    let mut s = Scene::new();
    while s.len() < len {
        let id = rng.below(1024) as u32;
        s.insert(id, rng.below(3) as u16).unwrap();
    }
    s
}

#[test]
fn primitives_option_and_arrays_round_trip() {
    assert_eq!(round_trip(&7u32, &7u32), 32);
    assert_eq!(round_trip(&Some(5u8), &None), 9);
    assert_eq!(round_trip(&None::<u8>, &Some(5u8)), 1);
    // Both `Some`: the inner value's delta form (whole for a `u8`).
    assert_eq!(round_trip(&Some(6u8), &Some(5u8)), 9);
    // Arrays: one changed bit per element, the changed ones whole.
    assert_eq!(round_trip(&[1u8, 2, 3], &[1u8, 9, 3]), 3 + 8);
    assert_eq!(round_trip(&[1.5f32, 2.0], &[0.0f32, 2.0]), 2 + 32);
}

#[test]
fn int_helper_sends_delta_absolute_or_nothing() {
    fn run(value: u16, base: u16) -> Result<(u16, usize), ErrorKind> {
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        field::int(&mut w, &value, base, 0, 1000, Some((-15, 15))).map_err(|e| e.kind())?;
        let bits = w.bits_processed();
        w.finish();
        let mut out = 0u16;
        let mut r = ReadStream::new(&buf);
        field::int(&mut r, &mut out, base, 0, 1000, Some((-15, 15))).unwrap();
        assert_eq!(r.bits_processed(), bits);
        Ok((out, bits))
    }
    // -15..=15: 30 nonzero differences and the escape, codes 0..=30, 5 bits.
    assert_eq!(run(500, 500), Ok((500, 1)));
    assert_eq!(run(515, 500), Ok((515, 1 + 5)));
    assert_eq!(run(485, 500), Ok((485, 1 + 5)));
    assert_eq!(run(501, 500), Ok((501, 1 + 5)));
    assert_eq!(run(499, 500), Ok((499, 1 + 5)));
    // Outside the delta range: the escape code, then the value in 10 bits.
    assert_eq!(run(516, 500), Ok((516, 1 + 5 + 10)));
    assert_eq!(run(0, 1000), Ok((0, 1 + 5 + 10)));
    assert_eq!(run(1001, 500), Err(ErrorKind::OutOfRange));
}

/// The code each difference gets, and the escape, for ranges with and without 0.
#[test]
fn delta_codes_skip_zero_and_end_with_the_escape() {
    fn code_of(value: u16, base: u16, lo: i64, hi: i64) -> (u64, usize) {
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        field::int(&mut w, &value, base, 0, 1000, Some((lo, hi))).unwrap();
        let bits = w.bits_processed();
        w.finish();
        // After the changed bit (1), the code in `delta_code_bits(lo, hi)` bits.
        let width = field::delta_code_bits(lo, hi);
        let word = u64::from_le_bytes(buf);
        ((word >> 1) & ((1 << width) - 1), bits)
    }
    assert_eq!(field::delta_code_bits(-15, 15), 5);
    assert_eq!(field::delta_code_bits(-16, 15), 5);
    assert_eq!(field::delta_code_bits(-16, 16), 6);
    assert_eq!(field::delta_code_bits(-127, 127), 8);
    assert_eq!(field::delta_code_bits(1, 4), 3);
    assert_eq!(field::delta_code_bits(-1, 1), 2);
    // -15..=15: -15 -> 0, -1 -> 14, +1 -> 15, +15 -> 29, the escape 30.
    assert_eq!(code_of(485, 500, -15, 15).0, 0);
    assert_eq!(code_of(499, 500, -15, 15).0, 14);
    assert_eq!(code_of(501, 500, -15, 15).0, 15);
    assert_eq!(code_of(515, 500, -15, 15).0, 29);
    assert_eq!(code_of(516, 500, -15, 15).0, 30);
    // 1..=4 (no 0 to skip): +1 -> 0, +4 -> 3, escape 4; a decrease escapes.
    assert_eq!(code_of(501, 500, 1, 4), (0, 1 + 3));
    assert_eq!(code_of(504, 500, 1, 4), (3, 1 + 3));
    assert_eq!(code_of(505, 500, 1, 4), (4, 1 + 3 + 10));
    assert_eq!(code_of(499, 500, 1, 4), (4, 1 + 3 + 10));
    // -4..=-1: -4 -> 0, -1 -> 3.
    assert_eq!(code_of(496, 500, -4, -1), (0, 1 + 3));
    assert_eq!(code_of(499, 500, -4, -1), (3, 1 + 3));
    // Every difference of -20..=20 round-trips: the codes of -16..=16, and escapes.
    for value in 480..=520u16 {
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        field::int(&mut w, &value, 500, 0, 1000, Some((-16, 16))).unwrap();
        w.finish();
        let mut out = 0u16;
        field::int(
            &mut ReadStream::new(&buf),
            &mut out,
            500,
            0,
            1000,
            Some((-16, 16)),
        )
        .unwrap();
        assert_eq!(out, value);
    }
}

/// The widest delta range, `i64::MIN..=i64::MAX` on a full `u64`: 2^64 - 1 nonzero
/// differences and the escape, 64-bit codes (the escape once overflowed its count).
#[test]
fn the_widest_delta_range_codes_in_64_bits() {
    let (lo, hi) = (i64::MIN, i64::MAX);
    assert_eq!(field::delta_code_bits(lo, hi), 64);
    for (value, base, bits) in [
        (10u64, 5u64, 1 + 64),
        (5, 10, 1 + 64),
        // A difference of 2^64 - 1 is past `i64::MAX`: the escape, then the value.
        (u64::MAX, 0, 1 + 64 + 64),
    ] {
        let mut buf = [0u8; 24];
        let mut w = WriteStream::new(&mut buf);
        field::int(&mut w, &value, base, 0, u64::MAX, Some((lo, hi))).unwrap();
        assert_eq!(w.bits_processed(), bits);
        w.finish();
        let mut out = 0u64;
        field::int(
            &mut ReadStream::new(&buf),
            &mut out,
            base,
            0,
            u64::MAX,
            Some((lo, hi)),
        )
        .unwrap();
        assert_eq!(out, value);
    }
}

#[test]
fn a_code_past_the_escape_is_rejected() {
    // -15..=15: codes 0..=30 in 5 bits; 31 is no code. Changed bit, then 31.
    let buf = [1 | (31 << 1), 0];
    let mut out = 0u16;
    let e = field::int(
        &mut ReadStream::new(&buf),
        &mut out,
        500,
        0,
        1000,
        Some((-15, 15)),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
}

#[test]
fn a_delta_landing_outside_the_range_is_rejected_not_clamped() {
    // changed, the code of +15, against a baseline of 995: 1010 > 1000.
    let mut buf = [0u8; 8];
    let mut w = WriteStream::new(&mut buf);
    field::int(&mut w, &1000u16, 985, 0, 1000, Some((-15, 15))).unwrap();
    w.finish();
    let mut out = 0u16;
    let e = field::int(
        &mut ReadStream::new(&buf),
        &mut out,
        995,
        0,
        1000,
        Some((-15, 15)),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
    // A quantized one below step 0.
    let q = Quantization::new(0.0, 10.0, 0.5);
    let mut w = WriteStream::new(&mut buf);
    field::quantized(&mut w, &0.0f32, 1.0, &q, Some((-3, 3))).unwrap();
    w.finish();
    let mut out = 0.0f32;
    let e =
        field::quantized(&mut ReadStream::new(&buf), &mut out, 0.5, &q, Some((-3, 3))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
}

#[test]
fn gap_coding_writes_what_it_measures_and_reads_it_back() {
    for k in 0..=10 {
        for (previous, id) in [
            (None, 0),
            (None, 1023),
            (Some(0), 1),
            (Some(5), 9),
            (Some(0), 1023),
        ] {
            let mut buf = [0u8; 16];
            let mut w = WriteStream::new(&mut buf);
            let mut v = id;
            entities::gap_id_for_tests(&mut w, previous, &mut v, k, 1023).unwrap();
            let n = id - previous.map_or(0, |p| p + 1);
            assert_eq!(
                w.bits_processed(),
                entities::gap_bits_for_tests(u64::from(n), k),
                "{previous:?} {id} k={k}"
            );
            w.finish();
            let mut back = 0;
            entities::gap_id_for_tests(&mut ReadStream::new(&buf), previous, &mut back, k, 1023)
                .unwrap();
            assert_eq!(back, id);
        }
    }
    // Gaps of 0 with k = 0: one bit each.
    assert_eq!(entities::gap_bits_for_tests(0, 0), 1);
    assert_eq!(entities::gap_bits_for_tests(9, 2), 5);
}

#[test]
fn entities_full_and_delta_round_trip_on_seeded_scenes() {
    let mut rng = Rng(27);
    let mut total_delta = 0;
    for round in 0..300 {
        let len = rng.below(65) as usize;
        let base = scene(&mut rng, len);
        let mut now = base.clone();
        for _ in 0..rng.below(20) {
            match rng.below(3) {
                0 => {
                    let id = rng.below(1024) as u32;
                    let _ = now.insert(id, rng.below(5) as u16);
                }
                1 => {
                    if let Some(&(id, _)) = now.as_slice().get(rng.below(64) as usize) {
                        now.remove(id);
                    }
                }
                _ => {
                    if let Some(&(id, v)) = now.as_slice().get(rng.below(64) as usize) {
                        now.insert(id, v + 1).unwrap();
                    }
                }
            }
        }
        let bytes = crate::encode(&now).unwrap();
        assert_eq!(
            crate::decode::<Scene>(&bytes).unwrap(),
            now,
            "round {round}"
        );
        total_delta += round_trip(&now, &base);
        // Against itself: three empty lists, the counts only.
        assert_eq!(round_trip(&now, &now), 3 * 7);
    }
    // Exact for this seed: a change in the coding changes it.
    assert_eq!(total_delta, 46_548);
}

/// Writes a delta by hand: lists of `(ids, values)`; `k` = 0 for every list.
fn hand_delta(removed: &[u32], changed: &[(u32, u16)], added: &[(u32, u16)]) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    let mut w = WriteStream::new(&mut buf);
    let list = |w: &mut WriteStream<'_>, ids: &[u32], values: Option<&[u16]>| {
        w.serialize_len(&mut ids.len(), 64).unwrap();
        if !ids.is_empty() {
            w.serialize_int(&mut 0u32, 0, 10).unwrap();
        }
        let mut previous = None;
        for (i, &id) in ids.iter().enumerate() {
            let mut id = id;
            entities::gap_id_for_tests(w, previous, &mut id, 0, 1023).unwrap();
            previous = Some(id);
            if let Some(values) = values {
                w.serialize_int(&mut { values[i] }, 0, u16::MAX).unwrap();
            }
        }
    };
    list(&mut w, removed, None);
    let (ids, values): (Vec<u32>, Vec<u16>) = changed.iter().copied().unzip();
    list(&mut w, &ids, Some(&values));
    let (ids, values): (Vec<u32>, Vec<u16>) = added.iter().copied().unzip();
    list(&mut w, &ids, Some(&values));
    let len = w.finish();
    buf.truncate(len);
    buf
}

#[test]
fn the_reader_rejects_deltas_that_do_not_fit_the_baseline() {
    let mut base = Scene::new();
    for id in [2, 5, 9] {
        base.insert(id, 1).unwrap();
    }
    let ok = hand_delta(&[5], &[(9, 4)], &[(3, 7)]);
    let got: Scene = decode_delta(&ok, &base).unwrap();
    assert_eq!(got.iter().collect::<Vec<_>>(), [(2, &1), (3, &7), (9, &4)]);
    let reject = |bytes: Vec<u8>| decode_delta::<Scene>(&bytes, &base).unwrap_err().kind();
    // Removing an id the baseline lacks (between, and above every id).
    assert_eq!(reject(hand_delta(&[4], &[], &[])), ErrorKind::OutOfRange);
    assert_eq!(reject(hand_delta(&[10], &[], &[])), ErrorKind::OutOfRange);
    // Changing an id the baseline lacks, or one just removed.
    assert_eq!(
        reject(hand_delta(&[], &[(4, 1)], &[])),
        ErrorKind::OutOfRange
    );
    assert_eq!(
        reject(hand_delta(&[5], &[(5, 1)], &[])),
        ErrorKind::OutOfRange
    );
    // Adding an id the baseline has (even one removed in the same delta).
    assert_eq!(
        reject(hand_delta(&[], &[], &[(9, 1)])),
        ErrorKind::OutOfRange
    );
    assert_eq!(
        reject(hand_delta(&[9], &[], &[(9, 1)])),
        ErrorKind::OutOfRange
    );
    // More removed or changed than the baseline holds.
    assert_eq!(
        reject(hand_delta(&[1, 2, 3, 4], &[], &[])),
        ErrorKind::OutOfRange
    );
    // An id above MAX_ID.
    assert_eq!(
        reject(hand_delta(&[], &[], &[(1024, 1)])),
        ErrorKind::OutOfRange
    );
    // More than MAX_LEN entities in the result.
    let many: Vec<(u32, u16)> = (100..162).map(|id| (id, 0)).collect();
    assert_eq!(reject(hand_delta(&[], &[], &many)), ErrorKind::TooLong);
    // An added count the input cannot hold: rejected before anything is reserved.
    let mut buf = [0u8; 4];
    let mut w = WriteStream::new(&mut buf);
    for count in [0usize, 0, 60] {
        w.serialize_len(&mut { count }, 64).unwrap();
    }
    w.finish();
    let mut out = Scene::new();
    let e = decode_delta_into(&mut out, &buf, &base).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PastEnd);
    assert!(out.as_slice().len() <= 3 && out.as_slice().len() + 60 > out.len());
}

#[test]
fn hostile_bytes_against_random_baselines_never_panic() {
    // Valid deltas, spoiled (bit flips, cuts) and read against their own baseline or
    // another one.
    let mut rng = Rng(2727);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..20_000 {
        let len = rng.below(65) as usize;
        let base = scene(&mut rng, len);
        let len = rng.below(65) as usize;
        let now = scene(&mut rng, len);
        let mut bytes = encode_delta(&now, &base).unwrap();
        for _ in 0..=rng.below(3) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.below(bytes.len() as u64) as usize;
            match rng.below(4) {
                0 => bytes.truncate(at),
                _ => bytes[at] ^= 1 << rng.below(8),
            }
        }
        let against = if rng.below(2) == 0 {
            base
        } else {
            let len = rng.below(65) as usize;
            scene(&mut rng, len)
        };
        match decode_delta::<Scene>(&bytes, &against) {
            Ok(got) => {
                accepted += 1;
                assert!(got.len() <= 64);
                let ids: Vec<u32> = got.iter().map(|e| e.0).collect();
                assert!(ids.windows(2).all(|w| w[0] < w[1]) && ids.iter().all(|&id| id <= 1023));
                // What was accepted re-encodes to a delta that decodes to the same.
                round_trip(&got, &against);
            }
            Err(_) => rejected += 1,
        }
    }
    assert_eq!((accepted, rejected), (2_627, 17_373));
}

#[test]
fn a_reader_given_a_shared_reference_validates_and_stores_nothing() {
    let mut rng = Rng(99);
    let base = scene(&mut rng, 20);
    let now = scene(&mut rng, 30);
    let bytes = encode_delta(&now, &base).unwrap();
    let untouched = Scene::new();
    let mut r = ReadStream::new(&bytes);
    Scene::serialize_delta_in(&untouched, &base, &mut r).unwrap();
    assert!(untouched.is_empty());
    assert_eq!(r.bits_processed(), now.measure_delta(&base));
    // And it still rejects: a removed id the baseline lacks.
    let mut r = ReadStream::new(&bytes);
    let e = Scene::serialize_delta_in(&untouched, &Scene::new(), &mut r).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
    // Option: the value read and dropped.
    let bytes = encode_delta(&Some(3u8), &Some(1u8)).unwrap();
    let mut r = ReadStream::new(&bytes);
    Option::<u8>::serialize_delta_in(&None, &Some(1u8), &mut r).unwrap();
    assert_eq!(r.bits_processed(), 9);
}

#[test]
fn decoding_into_a_reused_slot_keeps_its_allocation() {
    let mut rng = Rng(5);
    let base = scene(&mut rng, 60);
    let mut slot = Scene::new();
    slot.insert(0, 0).unwrap();
    let mut first_ptr = None;
    for round in 0..50 {
        let mut now = base.clone();
        for _ in 0..rng.below(8) {
            let id = rng.below(1024) as u32;
            if rng.below(2) == 0 {
                now.remove(id);
            } else {
                let _ = now.insert(id, 1);
            }
        }
        let bytes = encode_delta(&now, &base).unwrap();
        decode_delta_into(&mut slot, &bytes, &base).unwrap();
        assert_eq!(slot, now, "round {round}");
        // Grown once to the largest scene, then reused.
        let ptr = slot.as_slice().as_ptr();
        if round > 0 {
            assert_eq!(Some(ptr), first_ptr, "round {round} reallocated");
        }
        first_ptr = Some(ptr);
    }
}
