//! Property tests of the bit streams: random programs of every primitive round-trip,
//! the measure is the exact bound the design promises, and the written bytes are
//! exactly `ceil(bits / 8)` with a zero-padded last byte.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use netproto::{
    ErrorKind, MeasureStream, Quantization, ReadStream, Stream, WriteStream, bits_required,
};
use proptest::prelude::*;

mod common;

/// The seed of this file's property tests.
const SEED: u64 = 0x7374_7265_616d_7321;

/// One primitive with its value (written) or slot (read).
#[derive(Clone, Debug)]
enum Op {
    Bits { n: u32, v: u64 },
    U8 { min: u8, max: u8, v: u8 },
    U16 { min: u16, max: u16, v: u16 },
    U32 { min: u32, max: u32, v: u32 },
    U64 { min: u64, max: u64, v: u64 },
    I8 { min: i8, max: i8, v: i8 },
    I16 { min: i16, max: i16, v: i16 },
    I32 { min: i32, max: i32, v: i32 },
    I64 { min: i64, max: i64, v: i64 },
    Bool(bool),
    F32(f32),
    F64(f64),
    Quantized { q: Quantization, v: f32 },
    Index { count: u32, v: u32 },
    Align,
    Bytes(Vec<u8>),
    Str { max_len: usize, s: String },
    Relative { prev: u32, cur: u32 },
    VecU16 { max_len: usize, v: Vec<u16> },
}

impl Op {
    fn run<S: Stream>(&mut self, s: &mut S) -> Result<(), S::Error> {
        match self {
            Op::Bits { n, v } => s.serialize_bits(v, *n),
            Op::U8 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::U16 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::U32 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::U64 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::I8 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::I16 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::I32 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::I64 { min, max, v } => s.serialize_int(v, *min, *max),
            Op::Bool(v) => s.serialize_bool(v),
            Op::F32(v) => s.serialize_f32(v),
            Op::F64(v) => s.serialize_f64(v),
            Op::Quantized { q, v } => s.serialize_quantized(v, q),
            Op::Index { count, v } => s.serialize_index(v, *count),
            Op::Align => s.serialize_align(),
            Op::Bytes(b) => {
                if S::IS_READING {
                    s.serialize_bytes(&mut b[..])
                } else {
                    s.serialize_bytes(&b[..])
                }
            }
            Op::Str { max_len, s: st } => s.serialize_string(st, *max_len),
            Op::Relative { prev, cur } => s.serialize_relative(*prev, cur),
            Op::VecU16 { max_len, v } => s.serialize_vec(v, *max_len),
        }
    }

    /// The op with a blank slot to read into (a byte run keeps its length: the caller
    /// knows it).
    fn blank(&self) -> Op {
        let mut b = self.clone();
        match &mut b {
            Op::Bits { v, .. } | Op::U64 { v, .. } => *v = 0,
            Op::U8 { v, .. } => *v = 0,
            Op::U16 { v, .. } => *v = 0,
            Op::U32 { v, .. } | Op::Index { v, .. } => *v = 0,
            Op::I8 { v, .. } => *v = 0,
            Op::I16 { v, .. } => *v = 0,
            Op::I32 { v, .. } => *v = 0,
            Op::I64 { v, .. } => *v = 0,
            Op::Bool(v) => *v = false,
            Op::F32(v) | Op::Quantized { v, .. } => *v = 0.0,
            Op::F64(v) => *v = 0.0,
            Op::Align => {}
            Op::Bytes(v) => v.fill(0),
            Op::Str { s, .. } => s.clear(),
            Op::Relative { cur, .. } => *cur = 0,
            Op::VecU16 { v, .. } => v.clear(),
        }
        b
    }

    /// A comparable rendering, floats by their bits. `as_written` renders a quantized
    /// float as the value a reader must return for it (its quantum); a value already
    /// read renders as itself (re-quantizing it is not idempotent at fine resolutions).
    fn render(&self, as_written: bool) -> String {
        match self {
            Op::F32(v) => format!("f32 {:#x}", v.to_bits()),
            Op::F64(v) => format!("f64 {:#x}", v.to_bits()),
            Op::Quantized { q, v } if as_written => {
                format!("q {:#x}", q.dequantize(q.quantize(*v)).to_bits())
            }
            Op::Quantized { v, .. } => format!("q {:#x}", v.to_bits()),
            other => format!("{other:?}"),
        }
    }

    /// The padding an align-performing op adds when it starts at bit `pos`, or `None`
    /// for ops that do not align.
    fn padding_at(&self, pos: usize) -> Option<usize> {
        let pad = |p: usize| (8 - p % 8) % 8;
        match self {
            Op::Align | Op::Bytes(_) => Some(pad(pos)),
            Op::Str { max_len, .. } => Some(pad(pos + bits_required(0, *max_len as u64) as usize)),
            _ => None,
        }
    }
}

fn int_op<T: Arbitrary + Ord + Copy + core::fmt::Debug + 'static>(
    make: fn(T, T, T) -> Op,
    full: (T, T),
) -> BoxedStrategy<Op> {
    prop_oneof![
        // A random sub-range (often narrow), the value inside it.
        (any::<T>(), any::<T>(), any::<T>()).prop_map(move |(a, b, c)| {
            let mut x = [a, b, c];
            x.sort();
            make(x[0], x[2], x[1])
        }),
        // The full range of the type, values at and between the ends.
        prop_oneof![Just(full.0), Just(full.1), any::<T>()]
            .prop_map(move |v| make(full.0, full.1, v)),
        // Degenerate range: 0 bits.
        any::<T>().prop_map(move |v| make(v, v, v)),
    ]
    .boxed()
}

/// A quantization with an arbitrary resolution (`span / steps` for any real `steps`
/// from 1 to 2^25, so `max_int` is any integer in that range, 2^23 and above too,
/// where the `f32` step arithmetic rounds to whole integers and the reference writes
/// `max_int + 1` at the top), and a value at the ends, anywhere, on a quantum, or at the
/// rounding edge halfway between two quanta (and one ulp either side of it), where
/// `quantize` flips from one integer to the next.
fn quantized() -> impl Strategy<Value = Op> {
    (
        -1000.0f32..1000.0,
        0.001f32..5000.0,
        0.0f32..25.0,
        0.0f32..=1.0,
        0u8..7,
    )
        .prop_map(|(min, span, steps_log2, t, edge)| {
            let max = min + span;
            let res = span / steps_log2.exp2();
            let q = Quantization::new(min, max, res);
            let step = |k: f32| min + k / q.max_int() as f32 * (max - min);
            let k = (t * q.max_int() as f32).floor();
            let half = step(k + 0.5);
            let v = match edge {
                0 => min,
                1 => max,
                2 => step(k),
                3 => half,
                4 => f32::from_bits(half.to_bits().wrapping_add(1)),
                5 => f32::from_bits(half.to_bits().wrapping_sub(1)),
                _ => min + t * (max - min),
            };
            Op::Quantized {
                q,
                v: v.clamp(min, max),
            }
        })
}

fn relative() -> impl Strategy<Value = Op> {
    // Differences at and around every tier boundary, and anywhere.
    let diff = prop_oneof![
        prop::sample::select(vec![
            1u32, 2, 6, 7, 23, 24, 280, 281, 4377, 4378, 69914, 69915, 70000
        ]),
        1u32..100_000,
        1u32..=u32::MAX,
    ];
    (any::<u32>(), diff).prop_filter_map("cur must fit in u32", |(prev, d)| {
        prev.checked_add(d).map(|cur| Op::Relative { prev, cur })
    })
}

fn string() -> impl Strategy<Value = Op> {
    // Any Unicode (so multi-byte UTF-8), minus NUL, which the wire refuses.
    (
        prop_oneof![
            "[^\\x00]{0,24}",
            "[a-zé€😀\u{10FFFF}]{0,12}",
            Just(String::new())
        ],
        0usize..8,
    )
        .prop_map(|(s, extra)| Op::Str {
            max_len: s.len() + extra,
            s,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u32..=64, any::<u64>()).prop_map(|(n, v)| Op::Bits {
            n,
            v: v >> (64 - n)
        }),
        int_op(|min, max, v| Op::U8 { min, max, v }, (u8::MIN, u8::MAX)),
        int_op(|min, max, v| Op::U16 { min, max, v }, (u16::MIN, u16::MAX)),
        int_op(|min, max, v| Op::U32 { min, max, v }, (u32::MIN, u32::MAX)),
        int_op(|min, max, v| Op::U64 { min, max, v }, (u64::MIN, u64::MAX)),
        int_op(|min, max, v| Op::I8 { min, max, v }, (i8::MIN, i8::MAX)),
        int_op(|min, max, v| Op::I16 { min, max, v }, (i16::MIN, i16::MAX)),
        int_op(|min, max, v| Op::I32 { min, max, v }, (i32::MIN, i32::MAX)),
        int_op(|min, max, v| Op::I64 { min, max, v }, (i64::MIN, i64::MAX)),
        any::<bool>().prop_map(Op::Bool),
        any::<u32>().prop_map(|b| Op::F32(f32::from_bits(b))),
        any::<u64>().prop_map(|b| Op::F64(f64::from_bits(b))),
        quantized(),
        (1u32..2000)
            .prop_flat_map(|count| (Just(count), 0..count))
            .prop_map(|(count, v)| Op::Index { count, v }),
        Just(Op::Align),
        prop::collection::vec(any::<u8>(), 0..24).prop_map(Op::Bytes),
        string(),
        relative(),
        (prop::collection::vec(any::<u16>(), 0..6), 0usize..4).prop_map(|(v, extra)| Op::VecU16 {
            max_len: v.len() + extra,
            v
        }),
    ]
}

fn measure(ops: &[Op]) -> usize {
    let mut m = MeasureStream::new();
    for op in ops {
        match op.clone().run(&mut m) {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }
    m.bits_processed()
}

proptest! {
    #![proptest_config(common::proptest_config(2000, SEED))]

    #[test]
    fn programs_round_trip(ops in prop::collection::vec(op(), 1..24)) {
        // Write, noting the padding of every align-performing op.
        let mut buf = vec![0xA5u8; 4096];
        let mut w = WriteStream::new(&mut buf);
        let mut padding = Vec::new();
        for op in &ops {
            if let Some(pad) = op.padding_at(w.bits_processed()) {
                padding.push(pad);
            }
            op.clone().run(&mut w).map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
        }
        let bits = w.bits_processed();
        let len = w.finish();
        let bytes = &buf[..len];

        // Size: ceil(bits / 8) bytes, the unused bits of the last byte zero.
        prop_assert_eq!(len, bits.div_ceil(8));
        if !bits.is_multiple_of(8) {
            prop_assert_eq!(bytes[len - 1] >> (bits % 8), 0);
        }

        // Measure: exact except 7 bits per align, minus the padding actually written.
        let measured = measure(&ops);
        let slack: usize = padding.iter().map(|p| 7 - p).sum();
        prop_assert_eq!(measured, bits + slack);
        prop_assert!(measured >= bits);
        if padding.is_empty() {
            prop_assert_eq!(measured, bits);
        }

        // Read back over exactly those bytes.
        let mut r = ReadStream::new(bytes);
        for op in &ops {
            let mut got = op.blank();
            got.run(&mut r).map_err(|e| TestCaseError::fail(format!("read {op:?}: {e}")))?;
            prop_assert_eq!(got.render(false), op.render(true));
        }
        prop_assert_eq!(r.bits_processed(), bits);

        // Exactly-sized buffer works and gives the same bytes; one byte less is BufferFull.
        let mut exact = vec![0x3Cu8; len];
        let mut w = WriteStream::new(&mut exact);
        for op in &ops {
            op.clone().run(&mut w).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        }
        prop_assert_eq!(w.finish(), len);
        prop_assert_eq!(&exact[..], bytes);
        if len > 0 {
            let mut short = vec![0u8; len - 1];
            let mut w = WriteStream::new(&mut short);
            let mut failed = None;
            for op in &ops {
                if let Err(e) = op.clone().run(&mut w) {
                    failed = Some(e.kind());
                    break;
                }
            }
            prop_assert_eq!(failed, Some(ErrorKind::BufferFull));
        }
    }

    #[test]
    fn every_decoded_quantized_value_can_be_sent_again(
        min in -1.0e6f32..1.0e6,
        span in 1.0e-3f32..1.0e6,
        steps_log2 in 0u32..32,
        pick in any::<u32>(),
    ) {
        let max = min + span;
        prop_assume!(max > min);
        let q = Quantization::new(min, max, span / (1u64 << steps_log2) as f32);
        for i in [0, 1, pick % (q.max_int() + 1), q.max_int() - 1, q.max_int()] {
            let v = q.dequantize(i);
            prop_assert!(q.contains(v), "q {} -> {} outside {}..={}", i, v, min, max);
            let mut buf = [0u8; 4];
            let mut w = WriteStream::new(&mut buf);
            w.serialize_quantized(&mut { v }, &q).map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(w.bits_processed(), q.bits() as usize);
        }
        prop_assert!(q.quantize(max) <= q.max_int());
    }

    #[test]
    fn relative_costs_the_ladder(op in relative()) {
        let Op::Relative { prev, mut cur } = op else { unreachable!() };
        let d = cur - prev;
        let want = match d {
            1 => 1,
            2..=6 => 2 + 3,
            7..=23 => 3 + 5,
            24..=280 => 4 + 9,
            281..=4377 => 5 + 13,
            4378..=69914 => 6 + 17,
            _ => 6 + 32,
        };
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        w.serialize_relative(prev, &mut cur).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(w.bits_processed(), want);
        let mut m = MeasureStream::new();
        let _ = m.serialize_relative(prev, &mut cur);
        prop_assert_eq!(m.bits_processed(), want);
        let len = w.finish();
        let mut r = ReadStream::new(&buf[..len]);
        let mut back = 0;
        r.serialize_relative(prev, &mut back).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(back, cur);
        // And the writer refuses anything not above prev.
        let mut w = WriteStream::new(&mut buf);
        let mut same = prev;
        prop_assert_eq!(w.serialize_relative(prev, &mut same).unwrap_err().kind(), ErrorKind::NotIncreasing);
    }

    #[test]
    fn strings_round_trip_any_unicode(s in "[^\\x00]{0,64}", extra in 0usize..40) {
        let max_len = s.len() + extra;
        let mut buf = vec![0u8; 512];
        let mut w = WriteStream::new(&mut buf);
        w.serialize_bool(&mut true).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        w.serialize_string(&mut s.clone(), max_len).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let bits = w.bits_processed();
        let len = w.finish();
        // 1 bit, the length, the padding to a byte, the UTF-8 bytes.
        let len_bits = bits_required(0, max_len as u64) as usize;
        prop_assert_eq!(bits, (1 + len_bits).div_ceil(8) * 8 + s.len() * 8);
        let mut r = ReadStream::new(&buf[..len]);
        let mut flag = false;
        let mut back = String::from("stale");
        r.serialize_bool(&mut flag).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        r.serialize_string(&mut back, max_len).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(back, s.clone());
        // Too long for a smaller max_len: refused by the writer, as TooLong.
        if !s.is_empty() {
            let mut w = WriteStream::new(&mut buf);
            let err = w.serialize_string(&mut s.clone(), s.len() - 1).unwrap_err();
            prop_assert_eq!(err.kind(), ErrorKind::TooLong);
        }
    }
}

/// For each integer type: random ranges (and the full range) round-trip in exactly
/// `bits_required` bits; the writer rejects values outside; the reader rejects every
/// offset in the bit headroom above `max - min`.
macro_rules! int_props {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        proptest! {
            #![proptest_config(common::proptest_config(1000, SEED))]
            #[test]
            fn $name(
                a in any::<$t>(),
                b in any::<$t>(),
                c in any::<$t>(),
                full in any::<bool>(),
                headroom in any::<u64>(),
            ) {
                let mut x = [a, b, c];
                x.sort();
                let (min, mut v, max) = if full { (<$t>::MIN, a, <$t>::MAX) } else { (x[0], x[1], x[2]) };
                // Sign-extended for signed types: the difference is exact modulo 2^64.
                let span = (max as u64).wrapping_sub(min as u64);
                let bits = bits_required(0, span);
                prop_assert_eq!(bits, if full { <$t>::BITS } else { 64 - span.leading_zeros() });

                let mut buf = [0u8; 16];
                let mut w = WriteStream::new(&mut buf);
                w.serialize_int(&mut v, min, max).map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(w.bits_processed(), bits as usize);
                let mut m = MeasureStream::new();
                let _ = m.serialize_int(&mut v, min, max);
                prop_assert_eq!(m.bits_processed(), bits as usize);
                let len = w.finish();
                let mut r = ReadStream::new(&buf[..len]);
                let mut back: $t = <$t>::MAX;
                r.serialize_int(&mut back, min, max).map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(back, v);

                // Outside the range: refused, nothing written.
                let mut w = WriteStream::new(&mut buf);
                if min > <$t>::MIN {
                    let err = w.serialize_int(&mut (min - 1), min, max).unwrap_err();
                    prop_assert_eq!(err.kind(), ErrorKind::OutOfRange);
                }
                if max < <$t>::MAX {
                    let err = w.serialize_int(&mut (max + 1), min, max).unwrap_err();
                    prop_assert_eq!(err.kind(), ErrorKind::OutOfRange);
                }
                prop_assert_eq!(w.bits_processed(), 0);

                // In the headroom: refused by the reader.
                let room = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
                if bits > 0 && span < room {
                    let offset = span + 1 + headroom % (room - span);
                    let mut buf = [0u8; 8];
                    let mut w = WriteStream::new(&mut buf);
                    w.serialize_bits(&mut { offset }, bits).map_err(|e| TestCaseError::fail(format!("{e}")))?;
                    let len = w.finish();
                    let mut r = ReadStream::new(&buf[..len]);
                    let mut back: $t = 0;
                    let err = r.serialize_int(&mut back, min, max).unwrap_err();
                    prop_assert_eq!(err.kind(), ErrorKind::OutOfRange);
                }
            }
        }
    )*};
}

int_props!(
    int_u8: u8, int_u16: u16, int_u32: u32, int_u64: u64,
    int_i8: i8, int_i16: i16, int_i32: i32, int_i64: i64,
);
