//! A steady loop of the cube scene's delta encode, for profilers: `perf record`, or
//! valgrind's callgrind for instruction counts that do not depend on the machine's
//! load (the encode goal of issue 27 was worked on this way).
//!
//! `cargo build --release -p netproto-tests --bin delta_encode_profile`, then
//! `target/release/delta_encode_profile [LAG]`: encodes the snapshots of ticks 40..160
//! of the benchmark's cube scene (900 bodies, 10% moving per tick), each against the
//! one `LAG` ticks older (default 1), for 5 s (`SECS=..`) or `PASSES=N` passes, and
//! prints ns and bytes per snapshot. Instructions per snapshot: run it under
//! `valgrind --tool=callgrind` with `PASSES=0` and `PASSES=20`, and divide the
//! difference by 20 * 120.

use std::hint::black_box;
use std::time::Instant;

use netproto::WriteStream;
use netproto::delta::NetDelta;
use netproto::sim::Rng;
use netproto_tests::delta_workload::{cube_scene, cube_tick};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let lag: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .clamp(1, 40);
    let secs: f64 = env_or("SECS", 5.0);
    let passes: Option<u64> = std::env::var("PASSES").ok().and_then(|s| s.parse().ok());
    // The benchmark's seed and ticks (`tests/benches/snapshots.rs`).
    let mut rng = Rng::new(0xC0BE);
    let mut scene = cube_scene(&mut rng, 900);
    let mut scenes = Vec::new();
    for _ in 0..160 {
        cube_tick(&mut rng, &mut scene, 0.1);
        scenes.push(scene.clone());
    }
    let mut buf = vec![0u8; 64 * 1024];
    let start = Instant::now();
    let (mut snapshots, mut bytes, mut pass) = (0u64, 0usize, 0u64);
    while passes.map_or(start.elapsed().as_secs_f64() < secs, |p| pass < p) {
        pass += 1;
        for t in 40..160 {
            let mut stream = WriteStream::new(&mut buf);
            scenes[t]
                .write_delta(&scenes[t - lag], &mut stream)
                .expect("a 64 KiB buffer holds any cube delta");
            bytes += black_box(stream.finish());
            snapshots += 1;
        }
    }
    let per = snapshots.max(1) as f64;
    println!(
        "lag {lag}: {:.0} ns/snapshot, {:.1} B/snapshot ({snapshots} snapshots)",
        start.elapsed().as_nanos() as f64 / per,
        bytes as f64 / per
    );
}
