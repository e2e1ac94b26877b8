//! The fuzz targets on the stable toolchain, inside `cargo test`: deterministic,
//! seeded, 1,894,900 generated and mutated inputs across the targets.
//!
//! Each target body lives in `netproto_tests::fuzz` (the cargo-fuzz targets in `fuzz/`
//! call the same functions). The inputs are valid encodings from `fuzz::seeds` and
//! mutations of them (`fuzz::mutate`: bit flips, random bytes, truncations,
//! extensions, insertions, deletions, splices of two seeds, whole random inputs).
//! Run with `--nocapture` to see the per-target counts.

use std::time::Instant;

use netproto::sim::Rng;
use netproto_tests::fuzz::{self, DuoOutcome, ScriptOutcome, Seed, UnknownOutcome, mutate, seeds};

/// What one target ran.
struct Run {
    name: &'static str,
    seeds: usize,
    mutants: usize,
    /// The target's "taken" count on each seed (valid input), in order.
    seed_taken: Vec<usize>,
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
    inputs: &[Seed],
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
        seed_taken: Vec::new(),
        mutant_taken: 0,
        mutants_with_any: 0,
    };
    for (i, input) in inputs.iter().enumerate() {
        r.seed_taken.push(target(&input.input));
        r.seeds += 1;
        for _ in 0..per_seed {
            let other = &inputs[(i + 1 + rng.below(inputs.len() as u64) as usize) % inputs.len()];
            let mutant = mutate(&mut rng, &input.input, &other.input);
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
        r.seed_taken.iter().sum::<usize>(),
        r.mutant_taken,
        100.0 * r.mutants_with_any as f64 / r.mutants.max(1) as f64,
        started.elapsed().as_secs_f64()
    );
    r
}

/// Checks of every run: every input ran; every seed gave exactly what its generator
/// says the target must take of it; and the mutants took what they take on this seeded
/// run (`mutants_with_any`, `mutant_taken`: measured, so that a change in what hostile
/// input gets through, either way, shows here).
fn check(r: &Run, planned: usize, inputs: &[Seed], mutants: (usize, usize)) {
    assert_eq!(r.inputs(), planned, "{}: not every input ran", r.name);
    for (i, (seed, &taken)) in inputs.iter().zip(&r.seed_taken).enumerate() {
        if let Some(expected) = seed.taken {
            assert_eq!(taken, expected, "{}: seed {i} (valid) took {taken}", r.name);
        }
    }
    assert_eq!(
        (r.mutants_with_any, r.mutant_taken),
        mutants,
        "{}: (mutants that took something, units taken by mutants)",
        r.name
    );
    // Both verdicts are reached: mutants get through, and mutants are refused.
    assert!(r.mutants_with_any > 0 && r.mutants_with_any < r.mutants);
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
const NETCODE_TOKEN: (usize, usize) = (2_000, 49);
const NETCODE_PACKET: (usize, usize) = (3_500, 49);
const CONNECTION_SCRIPT: (usize, usize) = (40, 9);
const DELTA_SNAPSHOT: (usize, usize) = (2_000, 49);

const fn total((seeds, per_seed): (usize, usize)) -> usize {
    seeds * (1 + per_seed)
}

/// Inputs across the targets on every `cargo test` (the guide and CONTRIBUTING.md
/// quote this figure).
const ALL_INPUTS: usize = 1_894_900;

const _: () = assert!(
    total(MESSAGE_SET)
        + total(PACKET_ENDPOINT)
        + total(MESSAGE_LAYER)
        + total(CONNECTION_UNKNOWN)
        + total(CONNECTION_CONNECTED)
        + total(TWO_STACKS)
        + total(NETCODE_TOKEN)
        + total(NETCODE_PACKET)
        + total(CONNECTION_SCRIPT)
        + total(DELTA_SNAPSHOT)
        == ALL_INPUTS
);

#[test]
fn message_set() {
    let (n, per) = MESSAGE_SET;
    let inputs = seeds::message_set(n, 1);
    let r = run("message_set", &inputs, per, 11, |d| {
        usize::from(fuzz::message_set(d))
    });
    check(&r, total(MESSAGE_SET), &inputs, (208_104, 208_104));
}

#[test]
fn delta_snapshot() {
    let (n, per) = DELTA_SNAPSHOT;
    let inputs = seeds::delta_snapshot(n, 27);
    let r = run("delta_snapshot", &inputs, per, 27, fuzz::delta_snapshot);
    // 9,400 while a changed field sent a "delta or absolute" bit, 9,969 with the delta
    // codes that replaced it (fewer bit patterns without a meaning); 9,671 with the cube
    // workload's narrower delta ranges (other seed bytes).
    check(&r, total(DELTA_SNAPSHOT), &inputs, (9_671, 9_671));
}

#[test]
fn packet_endpoint() {
    let (n, per) = PACKET_ENDPOINT;
    let inputs = seeds::packet_endpoint(n, 2);
    let r = run("packet_endpoint", &inputs, per, 12, fuzz::packet_endpoint);
    check(&r, total(PACKET_ENDPOINT), &inputs, (275_269, 3_235_676));
}

#[test]
fn message_layer() {
    let (n, per) = MESSAGE_LAYER;
    let inputs = seeds::message_layer(n, 3);
    let r = run("message_layer", &inputs, per, 13, fuzz::message_layer);
    check(&r, total(MESSAGE_LAYER), &inputs, (78_287, 144_705));
}

#[test]
fn netcode_token() {
    let (n, per) = NETCODE_TOKEN;
    let inputs = seeds::netcode_token(n, 7);
    let r = run("netcode_token", &inputs, per, 17, fuzz::netcode_token);
    check(&r, total(NETCODE_TOKEN), &inputs, (61_340, 68_218));
}

#[test]
fn netcode_packet() {
    let (n, per) = NETCODE_PACKET;
    let inputs = seeds::netcode_packet(n, 8);
    let r = run("netcode_packet", &inputs, per, 18, fuzz::netcode_packet);
    check(&r, total(NETCODE_PACKET), &inputs, (46_881, 46_881));
}

/// libFuzzer's first find in `netcode_packet` (a harness error, not the library's):
/// a payload sealed at sequence 2^64 - 256 read through a fresh replay window is
/// refused as too old (`sequence + 256` wraps to 0, as in the reference), which the
/// harness had expected to read.
#[test]
fn netcode_packet_sequence_near_wrap() {
    let mut input = vec![0x0b, 5, 0x00];
    input.extend_from_slice(&[0xff; 28]);
    input.push(0xc0);
    assert_eq!(fuzz::netcode_packet(&input), 0);
}

#[test]
fn connection_unknown() {
    let (n, per) = CONNECTION_UNKNOWN;
    let inputs = seeds::connection_unknown(n, 4);
    let mut outcomes: Vec<UnknownOutcome> = Vec::new();
    let r = run("connection_unknown", &inputs, per, 14, |d| {
        let o = fuzz::connection_unknown_outcome(d);
        outcomes.push(o);
        (o.challenges + o.sessions + o.payloads) as usize
    });
    // Each seed: exactly one challenge, one session and one payload.
    for (i, o) in outcomes.iter().step_by(1 + per).enumerate() {
        assert_eq!(
            (o.challenges, o.sessions, o.payloads),
            (1, 1, 1),
            "seed {i}: a valid handshake did not give one challenge, session and payload"
        );
    }
    // Some mutants still complete a handshake: the response path is reached.
    let mutant_sessions: u64 = outcomes
        .iter()
        .enumerate()
        .filter(|(i, _)| i % (1 + per) != 0)
        .map(|(_, o)| o.sessions)
        .sum();
    println!("connection_unknown: {mutant_sessions} sessions opened by mutants");
    assert_eq!(mutant_sessions, 2_540);
    check(&r, total(CONNECTION_UNKNOWN), &inputs, (4_686, 8_218));
}

/// Runs a two-stack target and checks its seeds' outcomes: every reliable message the
/// script queued arrived, and only the scripts that seal datagrams themselves are
/// tampered (every other one had its delivery checked for order and content).
fn run_duo(
    name: &'static str,
    inputs: &[Seed],
    (n, per): (usize, usize),
    seed: u64,
    target: fn(&[u8]) -> DuoOutcome,
) -> Run {
    assert_eq!(inputs.len(), n);
    let mut outcomes = Vec::new();
    let r = run(name, inputs, per, seed, |d| {
        let o = target(d);
        outcomes.push(o);
        o.delivered
    });
    let seeds: Vec<&DuoOutcome> = outcomes.iter().step_by(1 + per).collect();
    assert_eq!(seeds.len(), inputs.len());
    for (i, (seed, o)) in inputs.iter().zip(seeds).enumerate() {
        assert_eq!(o.tampered, seed.tampered, "{name}: seed {i} tampered");
        assert_eq!(
            o.reliable_sent, seed.reliable,
            "{name}: seed {i}: reliable messages queued"
        );
        if !seed.tampered {
            assert_eq!(
                o.reliable_delivered, seed.reliable,
                "{name}: seed {i}: reliable messages delivered"
            );
        }
    }
    let checked = inputs.iter().filter(|s| !s.tampered).count();
    println!(
        "{name}: {checked} of {} seeds checked for content, {} reliable messages",
        inputs.len(),
        inputs.iter().map(|s| s.reliable).sum::<usize>()
    );
    assert!(checked > 0, "{name}: every seed is tampered");
    r
}

#[test]
fn connection_connected() {
    let inputs = seeds::connection_connected(CONNECTION_CONNECTED.0, 5);
    let r = run_duo(
        "connection_connected",
        &inputs,
        CONNECTION_CONNECTED,
        15,
        fuzz::connection_connected_outcome,
    );
    // 3,795 since the disconnect went from 3 copies to 10 (the reference's count),
    // and only that (3,796 again with `disconnect_copies = 3` in the harness's
    // config). One input moved: seed 53's 12th mutant (input 807), a tampered script
    // in which a connection ends. Its client now drops 11 datagrams instead of 4 (the
    // seven more copies) and its server 6 instead of 7: the script's later ops that
    // pick a datagram by position ("alter the oldest in flight", "replay a delivered
    // one") pick another, and one reliable message fewer arrives (5, not 6).
    // 3,797 since the default good rate went from 120 packets a second to the
    // article's 30, and only that (3,795 again with `CongestionConfig::bulk()` in the
    // harness's config): the scripts' sends are paced by `ready_to_send`.
    check(&r, total(CONNECTION_CONNECTED), &inputs, (1_048, 3_797));
}

#[test]
fn two_stacks() {
    let inputs = seeds::two_stacks(TWO_STACKS.0, 6);
    let r = run_duo(
        "two_stacks",
        &inputs,
        TWO_STACKS,
        16,
        fuzz::two_stacks_outcome,
    );
    // 13,779 since the default good rate went from 120 packets a second to 30, and
    // only that (13,799 again with `CongestionConfig::bulk()` in the harness's config).
    check(&r, total(TWO_STACKS), &inputs, (2_536, 13_779));
}

#[test]
fn connection_script() {
    let (n, per) = CONNECTION_SCRIPT;
    let inputs = seeds::connection_script(n, 9);
    let mut outcomes: Vec<ScriptOutcome> = Vec::new();
    let r = run("connection_script", &inputs, per, 19, |d| {
        let o = fuzz::connection_script_outcome(d);
        outcomes.push(o);
        o.sessions + o.reliable_delivered + o.unreliable_delivered
    });
    let seeds: Vec<&ScriptOutcome> = outcomes.iter().step_by(1 + per).collect();
    let sum = |f: fn(&ScriptOutcome) -> usize| seeds.iter().map(|o| f(o)).sum::<usize>();
    println!(
        "connection_script seeds: {} sessions, {} reused tokens, {} restarts, {} of {} reliable delivered, {} unreliable, {} sealed datagrams",
        sum(|o| o.sessions),
        sum(|o| o.reused_tokens),
        sum(|o| o.restarts),
        sum(|o| o.reliable_delivered),
        sum(|o| o.reliable_sent),
        sum(|o| o.unreliable_delivered),
        seeds.iter().map(|o| o.sealed).sum::<u64>(),
    );
    let wrong: Vec<(usize, usize, usize)> = inputs
        .iter()
        .zip(&seeds)
        .enumerate()
        .filter(|(_, (s, o))| s.sessions != o.sessions)
        .map(|(i, (s, o))| (i, s.sessions, o.sessions))
        .collect();
    assert_eq!(
        wrong,
        [],
        "connection_script: (seed, sessions planned, opened)"
    );
    check(&r, total(CONNECTION_SCRIPT), &inputs, (280, 975));
}

/// A client connects (one session), the server restarts, and a second client comes
/// with the first one's token: the token must not open a second session, and no
/// (key, nonce) pair may be sealed twice. A restarted server that challenged the
/// used token would make the new client seal its response with the first session's
/// client-to-server key at sequence 0 again (the harness panics "nonce reuse").
#[test]
fn connection_script_used_token_after_server_restart() {
    // Seed 7; connect; a second of perfect network; restart the server; connect
    // with the used token; three seconds.
    let script = [7, 0, 0, 13, 11, 1, 0, 13, 13, 13];
    let o = fuzz::connection_script_outcome(&script);
    assert_eq!((o.sessions, o.reused_tokens, o.restarts), (1, 1, 1));
}

/// The same on one server: the used token comes back after its session ended.
#[test]
fn connection_script_used_token_after_disconnect() {
    // Seed 7; connect; a second; the client disconnects; a second; connect with the
    // used token; three seconds.
    let script = [7, 0, 0, 13, 10, 0, 13, 1, 0, 13, 13, 13];
    let o = fuzz::connection_script_outcome(&script);
    assert_eq!((o.sessions, o.reused_tokens, o.restarts), (1, 1, 0));
}

/// libFuzzer's find of 2026-11-26 on `connection_script` (after the token history
/// landed): the same script gave two outcomes. With a full handshake table, two
/// handshakes started at the same instant, and the one replaced was the first a
/// `HashMap` iterated to, whose order is random per map: the replacement now breaks
/// the tie by client id, so the sans-IO server is deterministic again.
#[test]
fn connection_script_handshake_replacement_is_deterministic() {
    let script = [
        150, 243, 104, 63, 73, 154, 0, 0, 0, 0, 0, 34, 236, 133, 140, 213, 69, 213, 69, 4, 2, 128,
        4, 2, 0, 1, 156, 226, 195, 119, 227, 226, 0, 0, 0, 46, 217, 215, 255, 255, 255, 255, 129,
        0, 197, 164,
    ];
    // Each outcome runs the script twice and panics if they differ; run it a few
    // times, since the old failure depended on the maps' random order.
    let first = fuzz::connection_script_outcome(&script);
    for _ in 0..20 {
        assert_eq!(fuzz::connection_script_outcome(&script), first);
    }
}

/// Writes the generated seeds of every target to `fuzz/corpus/<target>/` (the
/// starting corpus of the cargo-fuzz targets; see CONTRIBUTING.md). Ignored: run it
/// with `cargo test -p netproto-tests --test fuzz_smoke -- --ignored`.
#[test]
#[ignore = "writes files: run it to seed the cargo-fuzz corpus"]
fn write_seed_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let sets: [(&str, Vec<Seed>); 10] = [
        ("message_set", seeds::message_set(200, 1)),
        ("packet_endpoint", seeds::packet_endpoint(50, 2)),
        ("message_layer", seeds::message_layer(50, 3)),
        ("connection_unknown", seeds::connection_unknown(50, 4)),
        ("connection_connected", seeds::connection_connected(20, 5)),
        ("two_stacks", seeds::two_stacks(50, 6)),
        ("netcode_token", seeds::netcode_token(100, 7)),
        ("netcode_packet", seeds::netcode_packet(200, 8)),
        ("connection_script", seeds::connection_script(50, 9)),
        ("delta_snapshot", seeds::delta_snapshot(100, 27)),
    ];
    for (name, inputs) in sets {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("create the corpus directory");
        for (i, seed) in inputs.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:04}")), &seed.input).expect("write a seed");
        }
        assert!(std::fs::read_dir(&dir).expect("read the corpus").count() >= inputs.len());
    }
}
