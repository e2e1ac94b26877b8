//! Hostile input: whatever bytes arrive, the reader never panics, never reads out of
//! bounds, never allocates more than the input can justify, and rejects (never clamps)
//! with the right error kind.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use netproto::{
    ErrorKind, NetMessage, Quantization, ReadStream, Stream, StreamError, WriteStream,
    bits_required,
};

const Q: Quantization = Quantization::new(-100.0, 100.0, 0.01);

/// One step of the sample program, with its value (written) or slot (read).
#[derive(Clone, Debug, PartialEq)]
enum Op {
    Bits(u32, u64),
    Int(i32, i32, i32),
    Int64(i64, i64, i64),
    Bool(bool),
    F32(u32),
    F64(u64),
    Quantized(u32),
    Index(u32, u32),
    Align,
    Bytes(Vec<u8>),
    Str(usize, String),
    Relative(u32, u32),
    Vec16(usize, Vec<u16>),
    Opt(Option<(u8, bool)>),
}

impl Op {
    fn run<S: Stream>(&mut self, s: &mut S) -> Result<(), S::Error> {
        match self {
            Op::Bits(n, v) => s.serialize_bits(v, *n),
            Op::Int(min, max, v) => s.serialize_int(v, *min, *max),
            Op::Int64(min, max, v) => s.serialize_int(v, *min, *max),
            Op::Bool(v) => s.serialize_bool(v),
            Op::F32(bits) => {
                let mut f = f32::from_bits(*bits);
                s.serialize_f32(&mut f)?;
                *bits = f.to_bits();
                Ok(())
            }
            Op::F64(bits) => {
                let mut f = f64::from_bits(*bits);
                s.serialize_f64(&mut f)?;
                *bits = f.to_bits();
                Ok(())
            }
            Op::Quantized(bits) => {
                let mut f = f32::from_bits(*bits);
                s.serialize_quantized(&mut f, &Q)?;
                *bits = f.to_bits();
                Ok(())
            }
            Op::Index(count, v) => s.serialize_index(v, *count),
            Op::Align => s.serialize_align(),
            Op::Bytes(b) => s.serialize_bytes(&mut b[..]),
            Op::Str(max, v) => s.serialize_string(v, *max),
            Op::Relative(prev, cur) => s.serialize_relative(*prev, cur),
            Op::Vec16(max, v) => s.serialize_vec(v, *max),
            Op::Opt(v) => v.serialize(s),
        }
    }

    fn blank(&self) -> Op {
        match self {
            Op::Bits(n, _) => Op::Bits(*n, 0),
            Op::Int(a, b, _) => Op::Int(*a, *b, 0),
            Op::Int64(a, b, _) => Op::Int64(*a, *b, 0),
            Op::Bool(_) => Op::Bool(false),
            Op::F32(_) => Op::F32(0),
            Op::F64(_) => Op::F64(0),
            Op::Quantized(_) => Op::Quantized(0),
            Op::Index(c, _) => Op::Index(*c, 0),
            Op::Align => Op::Align,
            Op::Bytes(b) => Op::Bytes(vec![0; b.len()]),
            Op::Str(m, _) => Op::Str(*m, String::new()),
            Op::Relative(p, _) => Op::Relative(*p, 0),
            Op::Vec16(m, _) => Op::Vec16(*m, Vec::new()),
            Op::Opt(_) => Op::Opt(None),
        }
    }
}

/// A fixed mixed program: every primitive, aligned and unaligned, ranged and raw.
fn sample() -> Vec<Op> {
    vec![
        Op::Bits(37, 0x1F_0F0F_0F0F),
        Op::Int(-1000, 1000, -999),
        Op::Quantized(Q.dequantize(Q.quantize(12.345)).to_bits()),
        Op::Str(20, "héllo, wörld 😀".into()),
        Op::Bool(true),
        Op::Int64(i64::MIN, i64::MAX, -42),
        Op::Index(5, 4),
        Op::Bytes(vec![0xDE, 0xAD, 0xBE, 0xEF, 0x00]),
        Op::Relative(1000, 1003),
        Op::F32(f32::NAN.to_bits() | 1),
        Op::Vec16(8, vec![1, 2, 65535]),
        Op::Opt(Some((7, true))),
        Op::Align,
        Op::Relative(70_000, 200_000),
        Op::F64((-0.0f64).to_bits()),
        Op::Int(0, 100, 100),
        Op::Bits(3, 5),
    ]
}

/// Writes `ops`; returns the bytes and the bit position after each op.
fn write(ops: &[Op]) -> (Vec<u8>, Vec<usize>) {
    let mut buf = vec![0u8; 1024];
    let mut w = WriteStream::new(&mut buf);
    let mut ends = Vec::new();
    for op in ops {
        op.clone().run(&mut w).unwrap();
        ends.push(w.bits_processed());
    }
    let len = w.finish();
    buf.truncate(len);
    (buf, ends)
}

/// Reads `ops` from `bytes`: the values read, or the failing op and its error.
fn read(ops: &[Op], bytes: &[u8]) -> Result<(Vec<Op>, usize), (usize, StreamError)> {
    let mut r = ReadStream::new(bytes);
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let mut got = op.blank();
        got.run(&mut r).map_err(|e| (i, e))?;
        out.push(got);
    }
    assert!(r.bits_processed() <= bytes.len() * 8);
    Ok((out, r.bits_processed()))
}

fn read_one(op: Op, bytes: &[u8]) -> Result<Op, ErrorKind> {
    let mut r = ReadStream::new(bytes);
    let mut got = op.blank();
    got.run(&mut r).map_err(|e| e.kind())?;
    Ok(got)
}

/// Bytes from `(value, bits)` chunks, written with raw `serialize_bits`.
fn raw(chunks: &[(u64, u32)]) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let mut w = WriteStream::new(&mut buf);
    for &(v, n) in chunks {
        w.serialize_bits(&mut { v }, n).unwrap();
    }
    let len = w.finish();
    buf.truncate(len);
    buf
}

#[test]
fn the_sample_round_trips() {
    let ops = sample();
    let (bytes, ends) = write(&ops);
    let (back, bits) = read(&ops, &bytes).unwrap();
    assert_eq!(back, ops);
    assert_eq!(bits, *ends.last().unwrap());
}

#[test]
fn every_truncation_fails_past_end_at_the_op_that_crosses_the_cut() {
    let ops = sample();
    let (bytes, ends) = write(&ops);
    for len in 0..bytes.len() {
        let (k, err) = read(&ops, &bytes[..len]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PastEnd, "len {len}");
        // The first op that needs a bit beyond the cut.
        let want = ends.iter().position(|&end| end > len * 8).unwrap();
        assert_eq!(k, want, "len {len}");
    }
    // And one more byte than needed is fine (trailing data is the caller's business).
    let mut longer = bytes.clone();
    longer.push(0xFF);
    assert!(read(&ops, &longer).is_ok());
}

#[test]
fn headroom_values_are_rejected_never_clamped() {
    // int 0..=100 is 7 bits: 101..=127 are headroom.
    for v in 101..128u64 {
        let e = read_one(Op::Int(0, 100, 0), &raw(&[(v, 7)]));
        assert_eq!(e, Err(ErrorKind::OutOfRange));
    }
    assert_eq!(
        read_one(Op::Int(0, 100, 0), &raw(&[(100, 7)])),
        Ok(Op::Int(0, 100, 100))
    );
    // int64 with a 33-bit span split across the 32-bit boundary.
    let span = (1u64 << 32) + 5;
    let e = read_one(Op::Int64(-7, -7 + span as i64, 0), &raw(&[(span + 1, 33)]));
    assert_eq!(e, Err(ErrorKind::OutOfRange));
    // Index: 5 choices in 3 bits.
    for v in 5..8 {
        assert_eq!(
            read_one(Op::Index(5, 0), &raw(&[(v, 3)])),
            Err(ErrorKind::UnknownVariant)
        );
    }
    // Quantized above max_int.
    let q = u64::from(Q.max_int());
    for v in [q + 1, (1 << Q.bits()) - 1] {
        let e = read_one(Op::Quantized(0), &raw(&[(v, Q.bits())]));
        assert_eq!(e, Err(ErrorKind::OutOfRange));
    }
    // Length above max_len (20 fits 5 bits: 21..=31 are headroom), with the bytes there.
    let mut chunks = vec![(21u64, 5u32), (0, 3)];
    chunks.extend(std::iter::repeat_n((u64::from(b'a'), 8), 21));
    assert_eq!(
        read_one(Op::Str(20, String::new()), &raw(&chunks)),
        Err(ErrorKind::TooLong)
    );
    let e = read_one(
        Op::Vec16(20, vec![]),
        &raw(&[(31, 5), (0, 64), (0, 64), (0, 64)]),
    );
    assert_eq!(e, Err(ErrorKind::TooLong));
    // Relative tier 2..=6 in 3 bits: offsets 5..=7 are headroom.
    for v in 5..8 {
        let e = read_one(Op::Relative(10, 0), &raw(&[(0b10, 2), (v, 3)]));
        assert_eq!(e, Err(ErrorKind::OutOfRange));
    }
}

#[test]
fn non_zero_padding_is_rejected() {
    for pad_bit in 1..8u32 {
        let bytes = raw(&[(1, 1), (1 << (pad_bit - 1), 7), (0xAB, 8)]);
        let mut r = ReadStream::new(&bytes);
        r.serialize_bool(&mut false).unwrap();
        assert_eq!(
            r.clone().serialize_align().unwrap_err().kind(),
            ErrorKind::NonZeroPadding
        );
        assert_eq!(
            r.clone()
                .serialize_bytes(&mut [0u8][..])
                .unwrap_err()
                .kind(),
            ErrorKind::NonZeroPadding
        );
    }
    // A string: 3-bit length, then padding.
    let bytes = raw(&[(1, 3), (0b10000, 5), (u64::from(b'x'), 8)]);
    assert_eq!(
        read_one(Op::Str(7, String::new()), &bytes),
        Err(ErrorKind::NonZeroPadding)
    );
    let bytes = raw(&[(1, 3), (0, 5), (u64::from(b'x'), 8)]);
    assert_eq!(
        read_one(Op::Str(7, String::new()), &bytes),
        Ok(Op::Str(7, "x".into()))
    );
}

#[test]
fn lengths_beyond_the_input_fail_before_allocating() {
    // A string header claiming 60000 bytes in a 10-byte buffer.
    let mut chunks = vec![(60_000u64, 16u32)];
    chunks.extend(std::iter::repeat_n((u64::from(b'z'), 8), 8));
    let bytes = raw(&chunks);
    assert_eq!(bytes.len(), 10);
    assert_eq!(
        read_one(Op::Str(65_535, String::new()), &bytes),
        Err(ErrorKind::PastEnd)
    );
    // Exactly enough bytes passes; one short fails.
    let mut chunks = vec![(8u64, 16u32)];
    chunks.extend(std::iter::repeat_n((u64::from(b'z'), 8), 8));
    assert!(read_one(Op::Str(65_535, String::new()), &raw(&chunks)).is_ok());
    chunks.pop();
    assert_eq!(
        read_one(Op::Str(65_535, String::new()), &raw(&chunks)),
        Err(ErrorKind::PastEnd)
    );

    // Claims no machine could allocate: had the reader allocated the claimed length
    // first, the process would abort (capacity overflow / allocation failure).
    let mut huge = vec![(1u64 << 62, 64u32)];
    huge.extend(std::iter::repeat_n((0u64, 8), 8));
    let bytes = raw(&huge);
    let mut s = String::new();
    let e = ReadStream::new(&bytes)
        .serialize_string(&mut s, usize::MAX)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PastEnd);
    let mut v: Vec<u64> = Vec::new();
    let e = ReadStream::new(&bytes)
        .serialize_vec(&mut v, usize::MAX)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PastEnd);
    assert_eq!(v.capacity(), 0);
    // 60000 u16 claimed, 14 bytes left: refused up front, nothing reserved.
    let bytes = raw(&[(60_000, 16), (0, 64), (0, 48)]);
    let mut v: Vec<u16> = Vec::new();
    let e = ReadStream::new(&bytes)
        .serialize_vec(&mut v, 60_000)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PastEnd);
    assert_eq!(v.capacity(), 0);
    // 7 u16 claimed with exactly 7 there: accepted.
    let bytes = raw(&[(7, 16), (0, 64), (0, 48)]);
    let mut v: Vec<u16> = Vec::new();
    ReadStream::new(&bytes)
        .serialize_vec(&mut v, 60_000)
        .unwrap();
    assert_eq!(v, [0; 7]);
    // A byte run longer than the input.
    let e = ReadStream::new(&[0u8; 4])
        .serialize_bytes(&mut [0u8; 5][..])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PastEnd);
}

#[test]
fn invalid_utf8_and_nul_are_rejected() {
    let bad: &[&[u8]] = &[
        b"\xC0\xAF",         // overlong
        b"\xC1\xBF",         // overlong
        b"\xE0\x80\xAF",     // overlong
        b"\xF0\x80\x80\xAF", // overlong
        b"\xED\xA0\x80",     // surrogate
        b"\xF4\x90\x80\x80", // above U+10FFFF
        b"\xF5\x80\x80\x80",
        b"\x80",       // stray continuation
        b"a\xBFb",     // stray continuation
        b"\xFE",       // never valid
        b"\xFF",       // never valid
        b"\xC3\x28",   // bad continuation
        b"ok\xE2\x82", // truncated at the end
        b"\x00",
        b"a\x00b",
        b"abc\x00",
        b"\xC3\xA9\x00",
    ];
    for payload in bad {
        let mut chunks = vec![(payload.len() as u64, 8u32)];
        chunks.extend(payload.iter().map(|&b| (u64::from(b), 8)));
        let e = read_one(Op::Str(255, String::new()), &raw(&chunks));
        assert_eq!(e, Err(ErrorKind::InvalidString), "{payload:x?}");
    }
    // The writer refuses a NUL too: it never writes what a reader rejects.
    let mut buf = [0u8; 16];
    let e = WriteStream::new(&mut buf)
        .serialize_string(&mut "a\0".into(), 10)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidString);
}

#[test]
fn relative_ints_must_increase_and_not_overflow() {
    // Absolute tier (six 0 flags, then 32 bits) at or below prev.
    for (prev, cur) in [
        (1000u32, 1000u64),
        (1000, 999),
        (1000, 0),
        (u32::MAX, u64::from(u32::MAX)),
    ] {
        let e = read_one(Op::Relative(prev, 0), &raw(&[(0, 6), (cur, 32)]));
        assert_eq!(e, Err(ErrorKind::NotIncreasing), "prev {prev} cur {cur}");
    }
    assert_eq!(
        read_one(Op::Relative(1000, 0), &raw(&[(0, 6), (1001, 32)])),
        Ok(Op::Relative(1000, 1001)),
        "the absolute tier accepts any value above prev"
    );
    // prev + 1 overflows.
    let e = read_one(Op::Relative(u32::MAX, 0), &raw(&[(1, 1)]));
    assert_eq!(e, Err(ErrorKind::NotIncreasing));
    // prev + d overflows in every tier.
    let tiers = [
        (2u64, 6u64, 2u32),
        (7, 23, 3),
        (24, 280, 4),
        (281, 4377, 5),
        (4378, 69914, 6),
    ];
    for (lo, hi, flags) in tiers {
        let prev = u32::MAX - (lo as u32) + 1; // prev + lo == 2^32
        let bits = bits_required(lo, hi);
        let e = read_one(
            Op::Relative(prev, 0),
            &raw(&[(1 << (flags - 1), flags), (0, bits)]),
        );
        assert_eq!(e, Err(ErrorKind::NotIncreasing), "tier {lo}..={hi}");
        let ok = read_one(
            Op::Relative(prev - 1, 0),
            &raw(&[(1 << (flags - 1), flags), (0, bits)]),
        );
        assert_eq!(ok, Ok(Op::Relative(prev - 1, u32::MAX)), "tier {lo}..={hi}");
    }
    // The writer refuses too.
    let mut buf = [0u8; 8];
    let mut w = WriteStream::new(&mut buf);
    assert_eq!(
        w.serialize_relative(5, &mut 5).unwrap_err().kind(),
        ErrorKind::NotIncreasing
    );
    assert_eq!(
        w.serialize_relative(5, &mut 4).unwrap_err().kind(),
        ErrorKind::NotIncreasing
    );
}

/// The simulator's seeded generator, so the fuzz loop is reproducible.
struct Rng(netproto::sim::Rng);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
}

/// A hostile variant of `valid`: bit flips, byte stores, truncation, extension,
/// splices, or pure noise of any length.
fn mutate(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
    let mut b = valid.to_vec();
    match rng.below(6) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                if !b.is_empty() {
                    let i = rng.below(b.len() * 8);
                    b[i / 8] ^= 1 << (i % 8);
                }
            }
        }
        1 => {
            for _ in 0..1 + rng.below(3) {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] = rng.next() as u8;
                }
            }
        }
        2 => b.truncate(rng.below(b.len() + 1)),
        3 => b.extend((0..rng.below(16)).map(|_| rng.next() as u8)),
        4 => {
            let i = rng.below(b.len() + 1);
            let j = rng.below(b.len() + 1);
            b.drain(i.min(j)..i.max(j));
        }
        _ => b = (0..rng.below(80)).map(|_| rng.next() as u8).collect(),
    }
    b
}

#[test]
fn a_hundred_thousand_hostile_buffers_never_panic() {
    let ops = sample();
    let (valid, _) = write(&ops);
    let mut rng = Rng(netproto::sim::Rng::new(0x5EED));
    let (mut accepted, mut rejected) = (0usize, std::collections::BTreeMap::new());
    for _ in 0..100_000 {
        let bytes = mutate(&mut rng, &valid);
        match read(&ops, &bytes) {
            Ok((values, bits)) => {
                accepted += 1;
                assert!(bits <= bytes.len() * 8);
                // Everything accepted is a valid message: it re-encodes (no value out of
                // its range, no bad string) and decodes back to the same values.
                let (again, _) = write(&values);
                let (back, _) = read(&ops, &again).unwrap();
                assert_eq!(back, values);
            }
            Err((_, e)) => *rejected.entry(format!("{:?}", e.kind())).or_insert(0usize) += 1,
        }
        // The building blocks through the whole-message decoder, too.
        let _ = netproto::decode::<(u8, Option<u32>, [bool; 3], i64, f64)>(&bytes);
        let _ = netproto::decode_prefix::<(Option<(u16, bool)>, [u8; 4])>(&bytes);
    }
    println!("hostile buffers: {accepted} accepted, rejected {rejected:?}");
    assert!(
        accepted > 0 && rejected.len() >= 5,
        "the mutations explore little"
    );
}
