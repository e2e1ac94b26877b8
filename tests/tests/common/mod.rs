//! What the property-test files share.

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

/// A property test's configuration: deterministic (the fixed `seed`: the same cases on
/// every run and machine), failures persisted beside the test's file
/// (`<file>.proptest-regressions`, replayed first on every run: commit it).
pub(crate) fn proptest_config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}
