//! Integration tests, trybuild cases, wire snapshots and benchmarks for netproto live in `tests/` and `benches/`.
