//! The fuzz targets on the stable toolchain, inside `cargo test`: deterministic,
//! seeded, at least a million generated and mutated inputs across the targets.
//!
//! Each target body lives in `netproto_tests::fuzz` (the cargo-fuzz targets in `fuzz/`
//! call the same functions). The inputs are valid encodings from `fuzz::seeds` and
//! mutations of them (`fuzz::mutate`: bit flips, random bytes, truncations,
//! extensions, insertions, deletions, splices of two seeds, whole random inputs).
//! Run with `--nocapture` to see the per-target counts.

use std::time::Instant;

use netproto::sim::Rng;
use netproto_tests::fuzz::{self, mutate, seeds};

/// What one target ran.
struct Run {
    name: &'static str,
    seeds: usize,
    mutants: usize,
    /// Sum of the target's "taken" count over the seeds (valid inputs).
    seed_taken: usize,
    /// Sum over the mutants.
    mutant_taken: usize,
    /// Mutants the target took at least one unit of.
    mutants_with_any: usize,
}

impl Run {
    fn inputs(&self) -> usize {
        self.seeds + self.mutants
    }
}

/// Runs `target` on every seed and on `per_seed` mutants of each (spliced with
/// another seed), all drawn from `seed`.
fn run(
    name: &'static str,
    inputs: &[Vec<u8>],
    per_seed: usize,
    seed: u64,
    mut target: impl FnMut(&[u8]) -> usize,
) -> Run {
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let mut r = Run {
        name,
        seeds: 0,
        mutants: 0,
        seed_taken: 0,
        mutant_taken: 0,
        mutants_with_any: 0,
    };
    for (i, input) in inputs.iter().enumerate() {
        r.seed_taken += target(input);
        r.seeds += 1;
        for _ in 0..per_seed {
            let other = &inputs[(i + 1 + rng.below(inputs.len() as u64) as usize) % inputs.len()];
            let mutant = mutate(&mut rng, input, other);
            let taken = target(&mutant);
            r.mutant_taken += taken;
            r.mutants_with_any += usize::from(taken > 0);
            r.mutants += 1;
        }
    }
    println!(
        "{name:>22}: {:>7} inputs ({} valid, {} mutated), taken: valid {}, mutated {} ({:.1}% of mutants took something), {:.1} s",
        r.inputs(),
        r.seeds,
        r.mutants,
        r.seed_taken,
        r.mutant_taken,
        100.0 * r.mutants_with_any as f64 / r.mutants.max(1) as f64,
        started.elapsed().as_secs_f64()
    );
    r
}

/// The share of mutants the target took at least one unit of (a decoded message, an
/// accepted datagram or payload, a delivered message).
fn fraction(r: &Run) -> f64 {
    r.mutants_with_any as f64 / r.mutants.max(1) as f64
}

/// Checks of every run: the planned count was reached, and the mutants do not only hit
/// the first-byte reject paths: at least `min_fraction` of them still got something
/// through (a bit flip in a quantized float or a range is often a valid message).
fn check(r: &Run, planned: usize, min_fraction: f64) {
    assert_eq!(r.inputs(), planned, "{}: not every input ran", r.name);
    assert!(
        fraction(r) >= min_fraction,
        "{}: only {:.1}% of the mutants got anything through (expected {:.0}%)",
        r.name,
        100.0 * fraction(r),
        100.0 * min_fraction
    );
}

// Inputs per target: (seeds, mutants per seed). The tests run in parallel (one per
// target). The connection targets seal and open every datagram (ChaCha20-Poly1305,
// unoptimized in a debug build) and run each script twice: fewer inputs.
const MESSAGE_SET: (usize, usize) = (21_000, 49);
const PACKET_ENDPOINT: (usize, usize) = (3_000, 99);
const MESSAGE_LAYER: (usize, usize) = (1_500, 99);
const CONNECTION_UNKNOWN: (usize, usize) = (750, 19);
const CONNECTION_CONNECTED: (usize, usize) = (100, 14);
const TWO_STACKS: (usize, usize) = (200, 14);

/// What the message-layer seeds deliver (measured).
const MESSAGE_LAYER_TAKEN: usize = 3_725;

const fn total((seeds, per_seed): (usize, usize)) -> usize {
    seeds * (1 + per_seed)
}

// At least a million inputs across the targets, on every `cargo test`.
const _: () = assert!(
    total(MESSAGE_SET)
        + total(PACKET_ENDPOINT)
        + total(MESSAGE_LAYER)
        + total(CONNECTION_UNKNOWN)
        + total(CONNECTION_CONNECTED)
        + total(TWO_STACKS)
        >= 1_000_000
);

#[test]
fn message_set() {
    let (n, per) = MESSAGE_SET;
    let r = run("message_set", &seeds::message_set(n, 1), per, 11, |d| {
        usize::from(fuzz::message_set(d))
    });
    assert_eq!(r.seed_taken, r.seeds, "a valid message failed to decode");
    check(&r, total(MESSAGE_SET), 0.18);
}

#[test]
fn packet_endpoint() {
    let (n, per) = PACKET_ENDPOINT;
    let r = run(
        "packet_endpoint",
        &seeds::packet_endpoint(n, 2),
        per,
        12,
        fuzz::packet_endpoint,
    );
    // Every peer datagram of the seeds is taken (measured: the generator is seeded).
    assert_eq!(r.seed_taken, 60_171, "valid datagrams were refused");
    check(&r, total(PACKET_ENDPOINT), 0.90);
}

#[test]
fn message_layer() {
    let (n, per) = MESSAGE_LAYER;
    let r = run(
        "message_layer",
        &seeds::message_layer(n, 3),
        per,
        13,
        fuzz::message_layer,
    );
    assert_eq!(
        r.seed_taken, MESSAGE_LAYER_TAKEN,
        "valid payloads were refused"
    );
    check(&r, total(MESSAGE_LAYER), 0.50);
}

#[test]
fn connection_unknown() {
    let (n, per) = CONNECTION_UNKNOWN;
    let mut sessions = 0;
    let r = run(
        "connection_unknown",
        &seeds::connection_unknown(n, 4),
        per,
        14,
        |d| {
            let o = fuzz::connection_unknown_outcome(d);
            sessions += o.sessions;
            (o.challenges + o.sessions + o.payloads) as usize
        },
    );
    // Each seed: one challenge, one session, one payload; nothing else gets through.
    assert_eq!(r.seed_taken, 3 * r.seeds, "valid handshakes failed");
    assert!(
        sessions > r.seeds as u64,
        "mutants never completed a handshake ({sessions} sessions)"
    );
    check(&r, total(CONNECTION_UNKNOWN), 0.30);
}

#[test]
fn connection_connected() {
    let (n, per) = CONNECTION_CONNECTED;
    let r = run(
        "connection_connected",
        &seeds::connection_connected(n, 5),
        per,
        15,
        fuzz::connection_connected,
    );
    // Deterministic: the messages the seeds' scripts deliver (measured).
    assert_eq!(r.seed_taken, 465, "valid messages were not delivered");
    check(&r, total(CONNECTION_CONNECTED), 0.65);
}

#[test]
fn two_stacks() {
    let (n, per) = TWO_STACKS;
    let r = run(
        "two_stacks",
        &seeds::two_stacks(n, 6),
        per,
        16,
        fuzz::two_stacks,
    );
    // Deterministic: the messages the seeds' scripts deliver (measured).
    assert_eq!(r.seed_taken, 1_256, "valid messages were not delivered");
    check(&r, total(TWO_STACKS), 0.85);
}

/// Writes the generated seeds of every target to `fuzz/corpus/<target>/` (the
/// starting corpus of the cargo-fuzz targets; see CONTRIBUTING.md). Ignored: run it
/// with `cargo test -p netproto-tests --test fuzz_smoke -- --ignored`.
#[test]
#[ignore = "writes files: run it to seed the cargo-fuzz corpus"]
fn write_seed_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let sets: [(&str, Vec<Vec<u8>>); 6] = [
        ("message_set", seeds::message_set(200, 1)),
        ("packet_endpoint", seeds::packet_endpoint(50, 2)),
        ("message_layer", seeds::message_layer(50, 3)),
        ("connection_unknown", seeds::connection_unknown(50, 4)),
        ("connection_connected", seeds::connection_connected(20, 5)),
        ("two_stacks", seeds::two_stacks(50, 6)),
    ];
    for (name, inputs) in sets {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("create the corpus directory");
        for (i, input) in inputs.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:04}")), input).expect("write a seed");
        }
        assert!(std::fs::read_dir(&dir).expect("read the corpus").count() >= inputs.len());
    }
}
