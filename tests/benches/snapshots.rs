//! Delta snapshots (issue 27): bytes and encode time of one client's snapshot, netproto's
//! generated delta against the contenders, on the same data.
//!
//! `cargo bench -p netproto-tests --bench snapshots`. Before timing with criterion it
//! prints, per workload, a size and time table (self-timed, the same loop criterion
//! times): bytes per snapshot, kbit/s per client at the tick rate, ns per snapshot at
//! each lag, ns per entity and the time over bitcode's full snapshot at the round-trip
//! lag, and the sender path's time over bitcode's at each lag.
//!
//! Workloads (`netproto_tests::delta_workload`, seeded): `cube`, 900 bodies (position
//! at 1 mm in a 256 m box, smallest-three orientation, an at-rest flag), about 10%
//! moving in any tick, 60 Hz; `arena`, 64 entities (position, yaw, health, state), 90%
//! moving, 20 Hz. 160 ticks are generated; ticks 40.. are measured. Each snapshot is
//! encoded against a baseline `lag` ticks older: 1 (the previous snapshot was acked:
//! the best case), and the lag of a 100 ms round trip (6 ticks at 60 Hz, 2 at 20 Hz).
//!
//! Contenders, all from the same state. netproto encodes the game's structs (floats,
//! quantized as it writes); the others encode the quantized integers netproto puts on
//! the wire, converted beforehand and not timed, except `bitcode full+quant`, which
//! times that conversion too (the like-for-like time of a full snapshot):
//!
//! - `netproto full`: `Entities` full form (count, gap-coded ids, every field);
//! - `netproto delta`: the generated delta (`NetDelta::write_delta`) against the
//!   baseline, without the snapshot header;
//! - `netproto sender`: the whole per-client path, `SnapshotSender::encode_into`
//!   (header with the baseline's offset, the delta, the copy of the snapshot into the
//!   ring) plus the ack bookkeeping (`sent_in`, `packet_acked`);
//! - `bitcode full`: bitcode 0.6 on the snapshot as a `Vec` of structs of the narrowest
//!   integer types (a reused `bitcode::Buffer`);
//! - `bitcode+zstd dict`: that, compressed by zstd (level 3) with the baseline's bitcode
//!   bytes as a raw-content dictionary (a generic delta; the baseline's bytes are kept,
//!   not re-encoded; the dictionary is loaded per snapshot, as the baseline changes);
//! - `teeworlds delta`: written here after Teeworlds/DDNet's snapshot delta: the number
//!   of removed and of changed-or-added entities, the removed ids, then per
//!   changed-or-added entity its id and every field as the difference from the
//!   baseline's (0 for an added one), int32, zigzag varint; unchanged entities omitted.
//! - `bitcode full+quant`: `bitcode full` plus the conversion of the game's structs
//!   into bitcode's (quantizing every float), into a reused `Vec`.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use netproto::delta::{NetDelta, SnapshotSender, decode_delta};
use netproto::packet::Sequence;
use netproto::sim::Rng;
use netproto::{NetMessage, WriteStream};
use netproto_tests::delta_workload::{
    ArenaScene, ArenaState, CubeScene, arena_scene, arena_tick, cube_scene, cube_tick,
};

const TICKS: usize = 160;
const FIRST: usize = 40;
const ZSTD_LEVEL: i32 = 3;

// The workloads' own quantizations.
use netproto_tests::delta_workload::{
    ARENA_Q as ARENA_POS, POS_Q as CUBE_POS, ROT_Q as CUBE_ROT, YAW_Q as ARENA_YAW,
};

#[derive(bitcode::Encode, bitcode::Decode, Clone, PartialEq, Debug)]
struct BcCube {
    id: u16,
    x: u32,
    y: u32,
    z: u32,
    largest: u8,
    a: u16,
    b: u16,
    c: u16,
    at_rest: bool,
}

#[derive(bitcode::Encode, bitcode::Decode, Clone, PartialEq, Debug)]
enum BcState {
    Idle,
    Running,
    Shooting(u8),
    Dead,
}

#[derive(bitcode::Encode, bitcode::Decode, Clone, PartialEq, Debug)]
struct BcArena {
    id: u8,
    x: u16,
    y: u16,
    yaw: u16,
    health: u8,
    state: BcState,
}

/// One entity as Teeworlds sees it: an id and int32 fields.
type Row = (u32, Vec<i32>);

/// One workload: its snapshots in every form.
struct Data<S, B> {
    name: &'static str,
    rate: f64,
    /// Baseline lag of a 100 ms round trip, in ticks.
    rtt_lag: usize,
    scenes: Vec<S>,
    /// The game state to bitcode's structs (quantizing the floats).
    to_bitcode: fn(&S, &mut Vec<B>),
    bitcode: Vec<Vec<B>>,
    rows: Vec<Vec<Row>>,
}

impl<S, B> Data<S, B> {
    fn entities(&self) -> usize {
        self.rows[FIRST].len()
    }
}

/// The cube scene as bitcode's structs (the quantization netproto does while encoding).
fn cube_to_bitcode(s: &CubeScene, out: &mut Vec<BcCube>) {
    out.clear();
    out.extend(s.iter().map(|(id, c)| BcCube {
        id: id as u16,
        x: CUBE_POS.quantize(c.position.x),
        y: CUBE_POS.quantize(c.position.y),
        z: CUBE_POS.quantize(c.position.z),
        largest: c.orientation.largest,
        a: CUBE_ROT.quantize(c.orientation.a) as u16,
        b: CUBE_ROT.quantize(c.orientation.b) as u16,
        c: CUBE_ROT.quantize(c.orientation.c) as u16,
        at_rest: c.at_rest,
    }));
}

/// The arena as bitcode's structs.
fn arena_to_bitcode(s: &ArenaScene, out: &mut Vec<BcArena>) {
    out.clear();
    out.extend(s.iter().map(|(id, e)| BcArena {
        id: id as u8,
        x: ARENA_POS.quantize(e.x) as u16,
        y: ARENA_POS.quantize(e.y) as u16,
        yaw: ARENA_YAW.quantize(e.yaw) as u16,
        health: e.health,
        state: match e.state {
            ArenaState::Idle => BcState::Idle,
            ArenaState::Running => BcState::Running,
            ArenaState::Shooting(h) => BcState::Shooting(h),
            ArenaState::Dead => BcState::Dead,
        },
    }));
}

fn cube_data() -> Data<CubeScene, BcCube> {
    let mut rng = Rng::new(0xC0BE);
    let mut scene = cube_scene(&mut rng, 900);
    let mut scenes = Vec::new();
    for _ in 0..TICKS {
        cube_tick(&mut rng, &mut scene, 0.1);
        scenes.push(scene.clone());
    }
    let bitcode = scenes
        .iter()
        .map(|s| {
            let mut v = Vec::new();
            cube_to_bitcode(s, &mut v);
            v
        })
        .collect::<Vec<_>>();
    let rows = bitcode
        .iter()
        .map(|s| {
            s.iter()
                .map(|c| {
                    let f = [c.x, c.y, c.z, c.largest.into(), c.a.into(), c.b.into()];
                    let mut v: Vec<i32> = f.iter().map(|&x| x as i32).collect();
                    v.push(c.c.into());
                    v.push(c.at_rest.into());
                    (u32::from(c.id), v)
                })
                .collect()
        })
        .collect();
    Data {
        name: "cube",
        rate: 60.0,
        rtt_lag: 6,
        to_bitcode: cube_to_bitcode,
        scenes,
        bitcode,
        rows,
    }
}

fn arena_data() -> Data<ArenaScene, BcArena> {
    let mut rng = Rng::new(0xA4E4A);
    let mut scene = arena_scene(&mut rng, 64);
    let mut scenes = Vec::new();
    for _ in 0..TICKS {
        arena_tick(&mut rng, &mut scene, 0.9);
        scenes.push(scene.clone());
    }
    let bitcode = scenes
        .iter()
        .map(|s| {
            let mut v = Vec::new();
            arena_to_bitcode(s, &mut v);
            v
        })
        .collect::<Vec<_>>();
    let rows = bitcode
        .iter()
        .map(|s| {
            s.iter()
                .map(|e| {
                    let (tag, heat) = match e.state {
                        BcState::Idle => (0, 0),
                        BcState::Running => (1, 0),
                        BcState::Shooting(h) => (2, i32::from(h)),
                        BcState::Dead => (3, 0),
                    };
                    let v = vec![
                        e.x.into(),
                        e.y.into(),
                        e.yaw.into(),
                        e.health.into(),
                        tag,
                        heat,
                    ];
                    (u32::from(e.id), v)
                })
                .collect()
        })
        .collect();
    Data {
        name: "arena",
        rate: 20.0,
        rtt_lag: 2,
        to_bitcode: arena_to_bitcode,
        scenes,
        bitcode,
        rows,
    }
}

fn varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// The Teeworlds-style delta of `now` against `base` (both sorted by id) into `out`.
fn teeworlds_encode(now: &[Row], base: &[Row], out: &mut Vec<u8>) {
    out.clear();
    let removed = base
        .iter()
        .filter(|(id, _)| now.binary_search_by_key(id, |r| r.0).is_err())
        .count();
    let mut j = 0;
    let mut changed = 0;
    for (id, fields) in now {
        while j < base.len() && base[j].0 < *id {
            j += 1;
        }
        if !(j < base.len() && base[j].0 == *id && base[j].1 == *fields) {
            changed += 1;
        }
    }
    varint(out, removed as u32);
    varint(out, changed);
    for (id, _) in base {
        if now.binary_search_by_key(id, |r| r.0).is_err() {
            varint(out, *id);
        }
    }
    let mut j = 0;
    for (id, fields) in now {
        while j < base.len() && base[j].0 < *id {
            j += 1;
        }
        let old = (j < base.len() && base[j].0 == *id).then(|| &base[j].1);
        if old == Some(fields) {
            continue;
        }
        varint(out, *id);
        for (k, v) in fields.iter().enumerate() {
            let b = old.map_or(0, |o| o[k]);
            varint(out, zigzag(v.wrapping_sub(b)));
        }
    }
}

/// Decodes [`teeworlds_encode`] (to check it carries the snapshot).
fn teeworlds_decode(bytes: &[u8], base: &[Row], fields: usize) -> Vec<Row> {
    let mut pos = 0;
    let mut read = || {
        let mut v = 0u32;
        let mut shift = 0;
        loop {
            let b = bytes[pos];
            pos += 1;
            v |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    };
    let removed = read();
    let changed = read();
    let gone: Vec<u32> = (0..removed).map(|_| read()).collect();
    let mut out: Vec<Row> = base
        .iter()
        .filter(|(id, _)| !gone.contains(id))
        .cloned()
        .collect();
    for _ in 0..changed {
        let id = read();
        let diffs: Vec<i32> = (0..fields)
            .map(|_| {
                let z = read();
                ((z >> 1) as i32) ^ -((z & 1) as i32)
            })
            .collect();
        match out.binary_search_by_key(&id, |r| r.0) {
            Ok(i) => {
                for (f, d) in out[i].1.iter_mut().zip(&diffs) {
                    *f = f.wrapping_add(*d);
                }
            }
            Err(i) => out.insert(i, (id, diffs)),
        }
    }
    out
}

/// The contenders' encoders, with their scratch buffers.
struct Encoders {
    buf: Vec<u8>,
    bitcode: bitcode::Buffer,
    zstd: zstd::bulk::Compressor<'static>,
    zstd_out: Vec<u8>,
    tw: Vec<u8>,
}

impl Encoders {
    fn new() -> Self {
        Self {
            buf: vec![0u8; 64 * 1024],
            bitcode: bitcode::Buffer::new(),
            zstd: zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("zstd"),
            zstd_out: vec![0u8; 64 * 1024],
            tw: Vec::with_capacity(64 * 1024),
        }
    }

    fn netproto_full<S: NetMessage>(&mut self, now: &S) -> usize {
        let mut stream = WriteStream::new(&mut self.buf);
        now.write(&mut stream).expect("fits");
        stream.finish()
    }

    fn netproto_delta<S: NetDelta>(&mut self, now: &S, base: &S) -> usize {
        let mut stream = WriteStream::new(&mut self.buf);
        now.write_delta(base, &mut stream).expect("fits");
        stream.finish()
    }

    fn bitcode_full<B: bitcode::Encode>(&mut self, now: &Vec<B>) -> usize {
        self.bitcode.encode(now).len()
    }

    fn bitcode_zstd<B: bitcode::Encode>(&mut self, now: &Vec<B>, base_bytes: &[u8]) -> usize {
        let bytes = self.bitcode.encode(now);
        self.zstd
            .set_dictionary(ZSTD_LEVEL, base_bytes)
            .expect("dictionary");
        self.zstd
            .compress_to_buffer(bytes, &mut self.zstd_out[..])
            .expect("fits")
    }

    fn teeworlds(&mut self, now: &[Row], base: &[Row]) -> usize {
        teeworlds_encode(now, base, &mut self.tw);
        self.tw.len()
    }
}

/// The per-client sender path over ticks `FIRST..`, acks `lag` ticks late; returns the
/// bytes of every snapshot (the first `lag` ones go full: nothing acked yet).
struct SenderRun<S> {
    sender: SnapshotSender<S>,
    tick: u64,
}

impl<S: NetDelta> SenderRun<S> {
    fn new(largest: &S) -> Self {
        let mut sender = SnapshotSender::new(0);
        sender.preallocate(largest);
        Self { sender, tick: 0 }
    }

    fn send(&mut self, now: &S, lag: usize, buf: &mut [u8]) -> usize {
        let sent = self.sender.encode_into(now, buf).expect("fits");
        let packet = Sequence(self.tick as u16);
        self.sender.sent_in(sent.sequence, packet);
        // Snapshot `tick - lag + 1`'s packet is acked now: the next one deltas against
        // the snapshot `lag` ticks before it.
        let acked = (self.tick + 1).checked_sub(lag as u64);
        if let Some(acked) = acked {
            self.sender.packet_acked(Sequence(acked as u16));
        }
        self.tick += 1;
        sent.bytes
    }
}

const CONTENDERS: [&str; 7] = [
    "netproto full",
    "netproto delta",
    "netproto sender",
    "bitcode full",
    "bitcode+zstd dict",
    "teeworlds delta",
    "bitcode full+quant",
];

/// Encodes every measured snapshot with contender `which` against the baseline `lag`
/// ticks older; returns the total bytes.
fn run<S: NetDelta, B: bitcode::Encode>(
    d: &Data<S, B>,
    enc: &mut Encoders,
    base_bytes: &[Vec<u8>],
    sender: &mut SenderRun<S>,
    which: usize,
    lag: usize,
) -> usize {
    let mut scratch = Vec::with_capacity(d.bitcode[0].len() * 2);
    let mut total = 0;
    for t in FIRST..TICKS {
        let b = t - lag;
        total += match which {
            0 => enc.netproto_full(&d.scenes[t]),
            1 => enc.netproto_delta(&d.scenes[t], &d.scenes[b]),
            2 => sender.send(&d.scenes[t], lag, &mut enc.buf),
            3 => enc.bitcode_full(&d.bitcode[t]),
            4 => enc.bitcode_zstd(&d.bitcode[t], &base_bytes[b]),
            5 => enc.teeworlds(&d.rows[t], &d.rows[b]),
            _ => {
                (d.to_bitcode)(&d.scenes[t], &mut scratch);
                enc.bitcode_full(&scratch)
            }
        };
    }
    total
}

/// Checks that each contender's bytes carry the snapshot (one tick, each lag).
fn check<S: NetDelta + PartialEq + core::fmt::Debug, B>(
    d: &Data<S, B>,
    base_bytes: &[Vec<u8>],
    lag: usize,
) where
    B: bitcode::Encode + for<'a> bitcode::Decode<'a> + PartialEq + core::fmt::Debug,
{
    let t = FIRST + 7;
    let (now, base) = (&d.scenes[t], &d.scenes[t - lag]);
    let mut enc = Encoders::new();
    let n = enc.netproto_delta(now, base);
    assert_eq!(
        &decode_delta::<S>(&enc.buf[..n], base).expect("decodes"),
        now
    );
    let n = enc.netproto_full(now);
    assert_eq!(&netproto::decode::<S>(&enc.buf[..n]).expect("decodes"), now);
    let n = enc.bitcode_zstd(&d.bitcode[t], &base_bytes[t - lag]);
    let mut dec = zstd::bulk::Decompressor::with_dictionary(&base_bytes[t - lag]).expect("zstd");
    let raw = dec.decompress(&enc.zstd_out[..n], 1 << 20).expect("zstd");
    assert_eq!(
        bitcode::decode::<Vec<B>>(&raw).expect("bitcode"),
        d.bitcode[t]
    );
    enc.teeworlds(&d.rows[t], &d.rows[t - lag]);
    let fields = d.rows[t][0].1.len();
    assert_eq!(
        teeworlds_decode(&enc.tw, &d.rows[t - lag], fields),
        d.rows[t]
    );
}

/// The size and time table of one workload; returns bitcode full's ns per snapshot
/// (the mean of both lags' measurements: it does not depend on the lag).
fn report<S, B>(d: &Data<S, B>) -> f64
where
    S: NetDelta + PartialEq + core::fmt::Debug,
    B: bitcode::Encode + for<'a> bitcode::Decode<'a> + PartialEq + core::fmt::Debug,
{
    let base_bytes: Vec<Vec<u8>> = d.bitcode.iter().map(bitcode::encode).collect();
    for lag in [1, d.rtt_lag] {
        check(d, &base_bytes, lag);
    }
    let snapshots = TICKS - FIRST;
    let entities = d.entities();
    println!(
        "\n{}: {} entities, {} Hz, {} snapshots measured; baseline 1 tick back, and {} ticks \
         back (100 ms round trip)",
        d.name, entities, d.rate, snapshots, d.rtt_lag
    );
    println!(
        "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10}",
        "contender",
        "B (lag1)",
        "kbit/s",
        "B (rtt)",
        "kbit/s",
        "ns (lag1)",
        "ns (rtt)",
        "ns/ent",
        "x bitcode"
    );
    let mut rows = Vec::new();
    for (which, name) in CONTENDERS.iter().enumerate() {
        let mut sizes = [0.0; 2];
        for (k, lag) in [1, d.rtt_lag].into_iter().enumerate() {
            let mut enc = Encoders::new();
            let mut sender = SenderRun::new(&d.scenes[0]);
            // The sender's first `lag` snapshots go full: prime it on earlier ticks.
            for t in FIRST - lag - 1..FIRST {
                sender.send(&d.scenes[t], lag, &mut enc.buf);
            }
            sizes[k] =
                run(d, &mut enc, &base_bytes, &mut sender, which, lag) as f64 / snapshots as f64;
        }
        // Time at each lag: repeat the whole pass for at least 300 ms.
        let mut ns = [0.0; 2];
        for (k, lag) in [1, d.rtt_lag].into_iter().enumerate() {
            let mut enc = Encoders::new();
            let mut sender = SenderRun::new(&d.scenes[0]);
            for t in 0..FIRST {
                sender.send(&d.scenes[t], lag, &mut enc.buf);
            }
            let start = Instant::now();
            let mut passes = 0u32;
            while start.elapsed().as_millis() < 300 || passes < 3 {
                black_box(run(d, &mut enc, &base_bytes, &mut sender, which, lag));
                passes += 1;
            }
            ns[k] = start.elapsed().as_nanos() as f64 / f64::from(passes) / snapshots as f64;
        }
        rows.push((*name, sizes, ns));
    }
    let bitcode_ns = rows[3].2[1];
    for (name, sizes, ns) in &rows {
        let kbit = |b: f64| b * 8.0 * d.rate / 1000.0;
        println!(
            "  {:<18} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.0} {:>10.0} {:>9.1} {:>10.2}",
            name,
            sizes[0],
            kbit(sizes[0]),
            sizes[1],
            kbit(sizes[1]),
            ns[0],
            ns[1],
            ns[1] / entities as f64,
            ns[1] / bitcode_ns
        );
    }
    let best_other = |k: usize| {
        rows.iter()
            .filter(|(n, _, _)| !n.starts_with("netproto"))
            .map(|(_, s, _)| s[k])
            .fold(f64::INFINITY, f64::min)
    };
    // bitcode's full snapshot does not depend on the lag: its time at each lag is a
    // measurement of the same work, so each lag's ratio uses the same run's.
    let over = |row: usize, by: usize, k: usize| rows[row].2[k] / rows[by].2[k];
    println!(
        "  netproto delta / best contender's bytes: {:.3} (lag 1), {:.3} (rtt)\n  \
         sender path time / bitcode full: {:.3} (lag 1), {:.3} (rtt); \
         / bitcode full+quant: {:.3} (lag 1), {:.3} (rtt)",
        rows[1].1[0] / best_other(0),
        rows[1].1[1] / best_other(1),
        over(2, 3, 0),
        over(2, 3, 1),
        over(2, 6, 0),
        over(2, 6, 1)
    );
    (rows[3].2[0] + rows[3].2[1]) / 2.0
}

fn bench_workload<S, B>(c: &mut Criterion, d: &Data<S, B>)
where
    S: NetDelta,
    B: bitcode::Encode,
{
    let base_bytes: Vec<Vec<u8>> = d.bitcode.iter().map(bitcode::encode).collect();
    let mut group = c.benchmark_group(format!("{}/encode", d.name));
    group.throughput(Throughput::Elements(
        ((TICKS - FIRST) * d.entities()) as u64,
    ));
    for (which, name) in CONTENDERS.iter().enumerate() {
        let mut enc = Encoders::new();
        let mut sender = SenderRun::new(&d.scenes[0]);
        for t in 0..FIRST {
            sender.send(&d.scenes[t], d.rtt_lag, &mut enc.buf);
        }
        group.bench_function(name.replace(' ', "_"), |b| {
            b.iter(|| black_box(run(d, &mut enc, &base_bytes, &mut sender, which, d.rtt_lag)))
        });
    }
    group.finish();
}

/// Where the delta encode's time goes (a diagnostic, printed): one pass of
/// `NetDelta::delta_changed` over every entity the snapshot and its baseline share, the
/// test the changed list applies to each entity (it walks its items more than once),
/// and one plain `PartialEq` pass: the floor of any delta encoder that finds what
/// changed by comparing the snapshot with its baseline, printed over bitcode's full
/// snapshot (`bitcode_ns`, measured in the same run).
fn changed_scan(d: &Data<CubeScene, BcCube>, bitcode_ns: f64) {
    let lag = d.rtt_lag;
    let scan = |now: &CubeScene, base: &CubeScene, exact: bool| {
        let (mut j, mut changed) = (0, 0usize);
        let base = base.as_slice();
        for (id, cube) in now.as_slice() {
            while j < base.len() && base[j].0 < *id {
                j += 1;
            }
            if j < base.len() && base[j].0 == *id {
                let b = &base[j].1;
                let differs = if exact {
                    cube != b
                } else {
                    cube.delta_changed(b)
                };
                changed += usize::from(differs);
            }
        }
        changed
    };
    for (exact, what) in [
        (false, "NetDelta::delta_changed"),
        (true, "PartialEq (raw f32, no quantize)"),
    ] {
        let start = Instant::now();
        let mut passes = 0u32;
        let mut changed = 0;
        while start.elapsed().as_millis() < 300 || passes < 3 {
            for t in FIRST..TICKS {
                changed += black_box(scan(&d.scenes[t], &d.scenes[t - lag], exact));
            }
            passes += 1;
        }
        let per = (passes as usize * (TICKS - FIRST)) as f64;
        let ns = start.elapsed().as_nanos() as f64 / per;
        println!(
            "  diagnostic: one {what} pass over the {} entities: {:.0} ns/snapshot, \
             {:.2}x bitcode full ({:.0} differ per snapshot at {} ticks back)",
            d.entities(),
            ns,
            ns / bitcode_ns,
            changed as f64 / per,
            lag
        );
    }
}

fn benches(c: &mut Criterion) {
    let cube = cube_data();
    let arena = arena_data();
    let bitcode_ns = report(&cube);
    changed_scan(&cube, bitcode_ns);
    report(&arena);
    println!();
    bench_workload(c, &cube);
    bench_workload(c, &arena);
}

criterion_group! {
    name = snapshots;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = benches
}
criterion_main!(snapshots);
