//! The reference `serialize` vectors (`tests/fixtures/serialize_*.jsonl`, produced by the
//! reference C++ library): every program must write the reference bytes exactly, read
//! back to the same values, and measure to the reference bound; every reject buffer
//! must fail at the reference op with an error of the matching kind.
//!
//! Where we deliberately differ from the reference it is asserted explicitly:
//! - the writer REJECTS a quantized float outside `[min, max]` (the reference clamps);
//!   the test checks the rejection, that [`Quantization::quantize`] (which clamps) gives
//!   the reference integer, and then writes the clamped value to continue;
//! - the writer never sends `max_int + 1` (the reference does, see
//!   `serialize_cfloat_overflow.jsonl`): it sends `max_int`.

use netproto::{ErrorKind, MeasureStream, Quantization, ReadStream, Stream, WriteStream};
use netproto_tests::fixtures::{hex, load as fixture, to_hex};
use serde_json::Value;

fn f32_hex(v: &Value) -> u32 {
    let s = v.as_str().expect("f32 as a hex string");
    u32::from_str_radix(s.trim_start_matches("0x"), 16).expect("f32 hex")
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: not a u64 in {v}"))
}

fn i64_of(v: &Value, key: &str) -> i64 {
    v[key]
        .as_i64()
        .unwrap_or_else(|| panic!("{key}: not an i64 in {v}"))
}

fn i32_of(v: &Value, key: &str) -> i32 {
    i32::try_from(i64_of(v, key)).unwrap_or_else(|_| panic!("{key}: not an i32 in {v}"))
}

fn u32_of(v: &Value, key: &str) -> u32 {
    u32::try_from(u64_of(v, key)).unwrap_or_else(|_| panic!("{key}: not a u32 in {v}"))
}

/// One op of a program, holding the value it writes or the slot it reads into.
#[derive(Clone, Debug)]
enum Op {
    Bits { n: u32, v: u64 },
    Int { min: i32, max: i32, v: i32 },
    Int64 { min: i64, max: i64, v: i64 },
    Bool(bool),
    Float(f32),
    CFloat(CFloat),
    Align,
    Bytes(Vec<u8>),
    Str { max_len: usize, s: String },
    Relative { prev: u32, cur: u32 },
}

#[derive(Clone, Debug)]
struct CFloat {
    quant: Quantization,
    max_int: u32,
    qbits: u32,
    v: f32,
    /// The integer on the wire and the value the reference reader returned (ops file only).
    q: Option<u32>,
    decoded: Option<u32>,
}

impl Op {
    /// Parses an op. `with_values` is false for the reject file (parameters only).
    fn parse(j: &Value, with_values: bool) -> Op {
        let val = |key: &str| {
            assert!(with_values, "no values in this file");
            &j[key]
        };
        match j["op"].as_str().expect("op name") {
            "bits" => {
                let n = u32_of(j, "n");
                assert!((1..=64).contains(&n));
                Op::Bits {
                    n,
                    v: if with_values { u64_of(j, "v") } else { 0 },
                }
            }
            "int" => Op::Int {
                min: i32_of(j, "min"),
                max: i32_of(j, "max"),
                v: if with_values { i32_of(j, "v") } else { 0 },
            },
            "int64" => Op::Int64 {
                min: i64_of(j, "min"),
                max: i64_of(j, "max"),
                v: if with_values { i64_of(j, "v") } else { 0 },
            },
            "bool" => Op::Bool(with_values && val("v").as_bool().expect("bool")),
            "float" => Op::Float(if with_values {
                f32::from_bits(f32_hex(val("v")))
            } else {
                0.0
            }),
            "cfloat" => {
                let min = f32::from_bits(f32_hex(&j["min"]));
                let max = f32::from_bits(f32_hex(&j["max"]));
                let res = f32::from_bits(f32_hex(&j["res"]));
                Op::CFloat(CFloat {
                    quant: Quantization::new(min, max, res),
                    max_int: u32_of(j, "max_int"),
                    qbits: u32_of(j, "qbits"),
                    v: if with_values {
                        f32::from_bits(f32_hex(val("v")))
                    } else {
                        0.0
                    },
                    q: j.get("q").map(|_| u32_of(j, "q")),
                    decoded: j.get("decoded").map(f32_hex),
                })
            }
            "align" => Op::Align,
            "bytes" => Op::Bytes(if with_values {
                hex(val("hex").as_str().expect("hex"))
            } else {
                vec![0; usize::try_from(u64_of(j, "len")).expect("len")]
            }),
            "string" => {
                let bufsize = usize::try_from(u64_of(j, "max")).expect("max");
                assert!(bufsize >= 1);
                Op::Str {
                    max_len: bufsize - 1,
                    s: if with_values {
                        val("s").as_str().expect("s").to_owned()
                    } else {
                        String::new()
                    },
                }
            }
            "int_relative" => Op::Relative {
                prev: u32_of(j, "prev"),
                cur: if with_values { u32_of(j, "cur") } else { 0 },
            },
            other => panic!("unknown op {other}"),
        }
    }

    /// The same op with its value replaced by a blank, for reading into.
    fn blank(&self) -> Op {
        match self {
            Op::Bits { n, .. } => Op::Bits { n: *n, v: 0 },
            Op::Int { min, max, .. } => Op::Int {
                min: *min,
                max: *max,
                v: 0,
            },
            Op::Int64 { min, max, .. } => Op::Int64 {
                min: *min,
                max: *max,
                v: 0,
            },
            Op::Bool(_) => Op::Bool(false),
            Op::Float(_) => Op::Float(0.0),
            Op::CFloat(c) => Op::CFloat(CFloat {
                v: 0.0,
                ..c.clone()
            }),
            Op::Align => Op::Align,
            Op::Bytes(b) => Op::Bytes(vec![0; b.len()]),
            Op::Str { max_len, .. } => Op::Str {
                max_len: *max_len,
                s: String::new(),
            },
            Op::Relative { prev, .. } => Op::Relative {
                prev: *prev,
                cur: 0,
            },
        }
    }

    /// Runs the op on any stream. `raw_bytes` writes byte runs from a shared slice
    /// (`&[u8]`) instead of `&mut [u8]`.
    fn run<S: Stream>(&mut self, s: &mut S, raw_bytes: bool) -> Result<(), S::Error> {
        match self {
            Op::Bits { n, v } => s.serialize_bits(v, *n),
            Op::Int { min, max, v } => s.serialize_int::<i32>(v, *min, *max),
            Op::Int64 { min, max, v } => s.serialize_int::<i64>(v, *min, *max),
            Op::Bool(v) => s.serialize_bool(v),
            Op::Float(v) => s.serialize_f32(v),
            Op::CFloat(c) => s.serialize_quantized(&mut c.v, &c.quant),
            Op::Align => s.serialize_align(),
            Op::Bytes(b) if raw_bytes => s.serialize_bytes(&b[..]),
            Op::Bytes(b) => s.serialize_bytes(&mut b[..]),
            Op::Str { max_len, s: st } => s.serialize_string(st, *max_len),
            Op::Relative { prev, cur } => s.serialize_relative(*prev, cur),
        }
    }

    /// Whether an op aligns (and so the measure may exceed the written size).
    fn aligns(&self) -> bool {
        matches!(self, Op::Align | Op::Bytes(_) | Op::Str { .. })
    }
}

/// `value` clamped into the quantization's range (what the reference writer quantizes).
fn clamped(c: &CFloat) -> f32 {
    if c.v < c.quant.min() {
        c.quant.min()
    } else if c.v > c.quant.max() {
        c.quant.max()
    } else {
        c.v
    }
}

struct Program {
    line: usize,
    ops: Vec<Op>,
    bytes: Vec<u8>,
    bits: usize,
}

/// Writes `program` into `buf`, handling the out-of-range quantized floats as documented
/// at the top. Returns the bytes written, or the error and the failing op index.
fn write_program(
    ops: &[Op],
    buf: &mut [u8],
    raw_bytes: bool,
    out_of_range: &mut usize,
) -> Result<(usize, usize), (usize, ErrorKind)> {
    let mut w = WriteStream::new(buf);
    for (i, op) in ops.iter().enumerate() {
        let mut op = op.clone();
        if let Op::CFloat(c) = &mut op
            && !c.quant.contains(c.v)
        {
            let before = w.bits_processed();
            let err = op
                .run(&mut w, raw_bytes)
                .expect_err("out-of-range cfloat written");
            assert_eq!(err.kind(), ErrorKind::OutOfRange);
            assert_eq!(w.bits_processed(), before, "a rejected value wrote bits");
            *out_of_range += 1;
            let Op::CFloat(c) = &mut op else {
                unreachable!()
            };
            c.v = clamped(c);
        }
        op.run(&mut w, raw_bytes).map_err(|e| (i, e.kind()))?;
    }
    let bits = w.bits_processed();
    Ok((w.finish(), bits))
}

#[derive(Default, Debug)]
struct Counts {
    programs: usize,
    ops: usize,
    cfloats: usize,
    cfloat_out_of_range: usize,
    bits_over_32: usize,
    exact_buffer_writes: usize,
}

fn check_program(p: &Program, counts: &mut Counts) {
    let ctx = format!("serialize_ops.jsonl:{}", p.line);
    assert_eq!(
        p.bytes.len(),
        p.bits.div_ceil(8),
        "{ctx}: vector bytes vs bits"
    );

    // Write into a big buffer pre-filled with garbage: output must not depend on it.
    for (raw_bytes, fill) in [(true, 0xAAu8), (false, 0x00), (false, 0xFF)] {
        let mut buf = vec![fill; 8192];
        let mut oor = 0;
        let (len, bits) = write_program(&p.ops, &mut buf, raw_bytes, &mut oor)
            .unwrap_or_else(|(i, k)| panic!("{ctx}: write failed at op {i}: {k:?}"));
        assert_eq!(bits, p.bits, "{ctx}: bits written");
        assert_eq!(len, p.bytes.len(), "{ctx}: bytes written");
        assert_eq!(to_hex(&buf[..len]), to_hex(&p.bytes), "{ctx}: bytes");
        assert!(
            buf[len..].iter().all(|&b| b == fill),
            "{ctx}: wrote past the end"
        );
        if raw_bytes {
            counts.cfloat_out_of_range += oor;
        }
    }

    // A buffer of exactly the right size works; one byte less fails with BufferFull and
    // never touches bytes outside the slice.
    let mut exact = vec![0x55u8; p.bytes.len() + 4];
    let (inner, guard) = exact.split_at_mut(p.bytes.len());
    let (len, _) = write_program(&p.ops, inner, true, &mut 0)
        .unwrap_or_else(|(i, k)| panic!("{ctx}: exact buffer failed at op {i}: {k:?}"));
    assert_eq!(len, p.bytes.len());
    assert_eq!(inner, &p.bytes[..], "{ctx}: exact-size buffer");
    assert!(guard.iter().all(|&b| b == 0x55));
    counts.exact_buffer_writes += 1;
    if !p.bytes.is_empty() {
        let mut short = vec![0u8; p.bytes.len() - 1];
        let err = write_program(&p.ops, &mut short, true, &mut 0).expect_err("short buffer");
        assert_eq!(err.1, ErrorKind::BufferFull, "{ctx}: short buffer");
    }

    // Read back over exactly those bytes.
    let mut r = ReadStream::new(&p.bytes);
    for (i, op) in p.ops.iter().enumerate() {
        counts.ops += 1;
        let mut got = op.blank();
        if let Op::CFloat(c) = op {
            counts.cfloats += 1;
            check_cfloat_params(c, &ctx);
            // The integer on the wire.
            let mut q = 0u64;
            r.clone().serialize_bits(&mut q, c.qbits).expect("q bits");
            assert_eq!(Some(q), c.q.map(u64::from), "{ctx}: op {i}: q on the wire");
        }
        if let Op::Bits { n, .. } = op
            && *n > 32
        {
            counts.bits_over_32 += 1;
        }
        got.run(&mut r, false)
            .unwrap_or_else(|e| panic!("{ctx}: read op {i}: {e}"));
        match (op, &got) {
            (Op::Float(a), Op::Float(b)) => {
                assert_eq!(a.to_bits(), b.to_bits(), "{ctx}: op {i}: float bits")
            }
            (Op::CFloat(c), Op::CFloat(g)) => {
                assert_eq!(
                    Some(g.v.to_bits()),
                    c.decoded,
                    "{ctx}: op {i}: cfloat decoded"
                )
            }
            (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{ctx}: op {i}"),
        }
    }
    assert_eq!(r.bits_processed(), p.bits, "{ctx}: bits read");
}

fn check_cfloat_params(c: &CFloat, ctx: &str) {
    assert_eq!(c.quant.max_int(), c.max_int, "{ctx}: max_int");
    assert_eq!(c.quant.bits(), c.qbits, "{ctx}: qbits");
    if let (Some(q), Some(decoded)) = (c.q, c.decoded) {
        // quantize clamps like the reference, for in- and out-of-range values alike.
        assert_eq!(
            c.quant.quantize(c.v),
            q,
            "{ctx}: quantize({:#x})",
            c.v.to_bits()
        );
        assert_eq!(
            c.quant.dequantize(q).to_bits(),
            decoded,
            "{ctx}: dequantize({q})"
        );
    }
}

#[test]
fn serialize_ops() {
    let mut counts = Counts::default();
    let mut measured = 0;
    for (i, j) in fixture("serialize_ops.jsonl").iter().enumerate() {
        let ops: Vec<Op> = j["ops"]
            .as_array()
            .expect("ops")
            .iter()
            .map(|o| Op::parse(o, true))
            .collect();
        let p = Program {
            line: i + 1,
            ops,
            bytes: hex(j["bytes"].as_str().expect("bytes")),
            bits: usize::try_from(u64_of(j, "bits")).expect("bits"),
        };
        check_program(&p, &mut counts);

        let mut m = MeasureStream::new();
        for op in &p.ops {
            let mut op = op.clone();
            if let Op::CFloat(c) = &mut op {
                c.v = clamped(c);
            }
            match op.run(&mut m, true) {
                Ok(()) => {}
                Err(never) => match never {},
            }
        }
        let want = usize::try_from(u64_of(j, "measured_bits")).expect("measured_bits");
        assert_eq!(
            m.bits_processed(),
            want,
            "serialize_ops.jsonl:{}: measured",
            p.line
        );
        assert!(want >= p.bits);
        if !p.ops.iter().any(Op::aligns) {
            assert_eq!(want, p.bits);
        }
        measured += 1;
        counts.programs += 1;
    }
    println!("serialize_ops: {counts:?}, measured {measured}");
    assert_eq!(counts.programs, 500);
    assert!(counts.cfloat_out_of_range > 0 && counts.bits_over_32 > 0);
}

/// The error kind a reject reason must produce.
fn expected_kind(reason: &str) -> ErrorKind {
    match reason {
        "int_above_range"
        | "int64_above_range"
        | "cfloat_above_max_int"
        | "int_relative_tier_above_range" => ErrorKind::OutOfRange,
        "align_nonzero_padding" | "bytes_nonzero_padding" | "string_nonzero_padding" => {
            ErrorKind::NonZeroPadding
        }
        "read_past_end" => ErrorKind::PastEnd,
        "string_length_above_buffer" => ErrorKind::TooLong,
        "string_invalid_utf8" | "string_interior_nul" => ErrorKind::InvalidString,
        "int_relative_not_increasing" => ErrorKind::NotIncreasing,
        other => panic!("unknown reject reason {other}"),
    }
}

#[test]
fn serialize_reject() {
    let mut per_reason = std::collections::BTreeMap::<String, usize>::new();
    for (i, j) in fixture("serialize_reject.jsonl").iter().enumerate() {
        let ctx = format!("serialize_reject.jsonl:{}", i + 1);
        let ops: Vec<Op> = j["ops"]
            .as_array()
            .expect("ops")
            .iter()
            .map(|o| Op::parse(o, false))
            .collect();
        let bytes = hex(j["bytes"].as_str().expect("bytes"));
        let k = usize::try_from(u64_of(j, "fails_at_op")).expect("fails_at_op");
        let reason = j["reason"].as_str().expect("reason");
        let want = expected_kind(reason);

        // The same verdict whatever follows the data in memory: we read a sub-slice of a
        // larger buffer with 0x00 or 0xFF slack.
        for fill in [0x00u8, 0xFF] {
            let mut backing = bytes.clone();
            backing.extend_from_slice(&[fill; 8]);
            let mut r = ReadStream::new(&backing[..bytes.len()]);
            for (n, op) in ops.iter().enumerate().take(k) {
                if let Op::CFloat(c) = op {
                    check_cfloat_params(c, &ctx);
                }
                op.blank()
                    .run(&mut r, false)
                    .unwrap_or_else(|e| panic!("{ctx}: op {n} before {k} failed: {e}"));
            }
            let err = ops[k]
                .blank()
                .run(&mut r, false)
                .expect_err("op K must fail");
            assert_eq!(err.kind(), want, "{ctx}: reason {reason}");
        }
        *per_reason.entry(reason.to_owned()).or_default() += 1;
    }
    let total: usize = per_reason.values().sum();
    println!("serialize_reject: {total} buffers rejected at the right op: {per_reason:?}");
    assert_eq!(total, 100);
}

/// `serialize_cfloat_overflow.jsonl` records the reference writer sending `max_int + 1`
/// for a value at (or clamped to) `max`. What we assert:
/// - our `quantize` never returns more than `max_int`: it returns `max_int` there;
/// - our writer (value clamped to `max` first where it is above, which our writer rejects)
///   puts `max_int` on the wire, in `qbits` bits, and the sentinel after it is intact;
///   our reader reads our bytes back to `dequantize(max_int)` and the sentinel exactly;
/// - case A ("rejects"): our reader rejects the reference bytes at the same op, with
///   `OutOfRange` (the integer is `max_int + 1`);
/// - case B ("accepts_corrupted"): the reference bytes are a well-formed stream holding
///   `q = 0` and a sentinel with its low bit set; no reader can tell, and ours returns the
///   same corrupted values as the reference reader. The protection is on the write side.
#[test]
fn serialize_cfloat_overflow() {
    let (mut case_a, mut case_b) = (0, 0);
    for (i, j) in fixture("serialize_cfloat_overflow.jsonl")
        .iter()
        .enumerate()
    {
        let ctx = format!("serialize_cfloat_overflow.jsonl:{}", i + 1);
        let ops: Vec<Op> = j["ops"]
            .as_array()
            .expect("ops")
            .iter()
            .map(|o| Op::parse(o, true))
            .collect();
        let reference = hex(j["bytes"].as_str().expect("bytes"));

        // Our writer.
        let mut buf = vec![0u8; 64];
        let (len, bits) =
            write_program(&ops, &mut buf, true, &mut 0).unwrap_or_else(|e| panic!("{ctx}: {e:?}"));
        assert_eq!(
            bits,
            usize::try_from(u64_of(j, "bits")).expect("bits"),
            "{ctx}: same size"
        );
        let ours = &buf[..len];
        let mut r = ReadStream::new(ours);
        for op in &ops {
            let mut got = op.blank();
            if let Op::CFloat(c) = op {
                check_cfloat_params(c, &ctx);
                assert_eq!(c.q, Some(c.max_int + 1), "{ctx}: the reference overflowed");
                assert_eq!(
                    c.quant.quantize(c.v),
                    c.max_int,
                    "{ctx}: quantize caps at max_int"
                );
                let mut q = 0u64;
                r.clone().serialize_bits(&mut q, c.qbits).expect("q");
                assert_eq!(q, u64::from(c.max_int), "{ctx}: we write max_int");
            }
            got.run(&mut r, false)
                .unwrap_or_else(|e| panic!("{ctx}: our bytes: {e}"));
            match (op, &got) {
                (Op::CFloat(c), Op::CFloat(g)) => {
                    assert_eq!(g.v.to_bits(), c.quant.dequantize(c.max_int).to_bits())
                }
                (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{ctx}"),
            }
        }
        assert_eq!(r.bits_processed(), bits);

        // Our reader on the reference bytes.
        let mut r = ReadStream::new(&reference);
        match j["reader"].as_str().expect("reader") {
            "rejects" => {
                let k = usize::try_from(u64_of(j, "fails_at_op")).expect("fails_at_op");
                for op in &ops[..k] {
                    op.blank()
                        .run(&mut r, false)
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                }
                let err = ops[k]
                    .blank()
                    .run(&mut r, false)
                    .expect_err("case A must fail");
                assert_eq!(err.kind(), ErrorKind::OutOfRange, "{ctx}");
                assert_ne!(ours, &reference[..], "{ctx}");
                case_a += 1;
            }
            "accepts_corrupted" => {
                let values = j["read_values"].as_array().expect("read_values");
                for (op, want) in ops.iter().zip(values) {
                    let mut got = op.blank();
                    got.run(&mut r, false)
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    match got {
                        Op::CFloat(g) => assert_eq!(g.v.to_bits(), f32_hex(want), "{ctx}"),
                        Op::Bits { v, .. } => assert_eq!(Some(v), want.as_u64(), "{ctx}"),
                        _ => assert!(want.is_null()),
                    }
                }
                case_b += 1;
            }
            other => panic!("{ctx}: unknown reader verdict {other}"),
        }
    }
    println!("serialize_cfloat_overflow: case A {case_a} rejected, case B {case_b} corrupted");
    assert_eq!((case_a, case_b), (8, 4));
}
