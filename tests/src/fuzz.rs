//! The fuzz targets' bodies: one function per target, each taking arbitrary bytes and
//! panicking when an invariant of hostile-input handling breaks (SECURITY.md says what
//! netproto guarantees against hostile input).
//!
//! The cargo-fuzz targets in `fuzz/fuzz_targets/` are one-line calls of these
//! functions; the stable-toolchain smoke (`tests/tests/fuzz_smoke.rs`) calls the same
//! functions with seeded, generated and mutated inputs ([`seeds`], [`mutate`]). So both
//! check the same invariants:
//!
//! * no panic, no out-of-bounds access (overflow checks are on in both builds);
//! * memory bounded by the configuration (queues, reassembly tables);
//! * anything that decodes re-encodes to something that decodes to the same value;
//! * decoding the same bytes twice (or replaying the same script on fresh state) gives
//!   the same result.
//!
//! Multi-datagram targets read their input as a script ([`Script`]): an op byte, then
//! the op's operands (lengths are little-endian `u16`, cut to what is left).

mod config;
mod connection;
mod delta_snapshot;
mod input;
mod message_layer;
mod message_set;
mod netcode_packet;
mod netcode_token;
mod packet_endpoint;

use netproto_examples::game::GameMessage;

/// The message set every target carries: the richest of the examples (quantized
/// floats, ranged ints, enums with data, a bounded string and a bounded list).
pub type Msg = GameMessage;

pub use config::{connection_config, endpoint_config, layer_config};
pub use connection::{
    Backend, CHALLENGE_KEY, CLIENT, Duo, DuoOutcome, PRIVATE_KEY, SERVER, ScriptOutcome, UNIX_TIME,
    UnknownOutcome, connection_connected, connection_connected_outcome, connection_script,
    connection_script_outcome, connection_unknown, connection_unknown_outcome, server_address,
    server_config, two_stacks, two_stacks_outcome,
};
pub use delta_snapshot::delta_snapshot;
pub use input::{Script, Seed, mutate, push_blob};
pub use message_layer::message_layer;
pub use message_set::{check_round_trip, message_set, seeded_message};
pub use netcode_packet::{PACKET_KEY, PACKET_PROTOCOL_ID, PACKET_UNIX_TIME, netcode_packet};
pub use netcode_token::netcode_token;
pub use packet_endpoint::packet_endpoint;

/// Valid inputs of every target, generated from a seed, each with what the target
/// must make of it.
pub mod seeds {
    pub use super::connection::seeds::{
        connection_connected, connection_script, connection_unknown, two_stacks,
    };
    pub use super::delta_snapshot::seeds::delta_snapshot;
    pub use super::message_layer::seeds::message_layer;
    pub use super::message_set::seeds::message_set;
    pub use super::netcode_packet::seeds::netcode_packet;
    pub use super::netcode_token::seeds::netcode_token;
    pub use super::packet_endpoint::seeds::packet_endpoint;
}
