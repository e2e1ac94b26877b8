//! Example game messages shared by the examples, the wire snapshots and the benchmarks.
//!
//! They are what a small arena shooter sends: inputs, entity updates with quantized
//! positions, chat, batches of entity ids and match-phase changes.

pub mod arena;
pub mod game;
