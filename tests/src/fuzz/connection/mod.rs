//! The connection targets (netcode 1.02): datagrams from unknown addresses into a
//! [`Server`], and two full stacks ([`ServerStack`] and [`ClientStack`]) with a script
//! that injects, forges, alters and replays datagrams between them.
//!
//! Every key, nonce and token is drawn from fixed constants or from the input (a
//! seeded [`Rng`]), never from the operating system: a script replays byte for byte.
//! The harness holds the keys, so it checks the sealing itself: a datagram the
//! receiver drops as unauthenticated (or replayed, malformed, unexpected) must change
//! nothing but one drop counter; a datagram altered in flight, or one delivered
//! before, must be dropped that way.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};

use netproto::connection::{
    ClientEvent, ClientId, DisconnectReason, MAX_DATAGRAM_BYTES, Server, ServerConfig, ServerEvent,
    ServerStats,
};
use netproto::internals::netcode::{
    AllowedPackets, ChallengeToken, ConnectTokenPrivate, Packet, PacketType, read_packet,
    write_packet,
};
use netproto::netcode::{ConnectToken, Key};
use netproto::sim::Rng;
use netproto::transport::{ClientStack, ServerStack};

use super::{Msg, Script, Seed, check_round_trip, connection_config, layer_config, push_blob};

mod connected;
mod duo;
mod script;
mod two_stacks;
mod unknown;

pub use connected::{connection_connected, connection_connected_outcome};
pub use duo::{Duo, DuoOutcome};
pub use script::{ScriptOutcome, connection_script, connection_script_outcome};
pub use two_stacks::{two_stacks, two_stacks_outcome};
pub use unknown::{UnknownOutcome, connection_unknown, connection_unknown_outcome};

/// Valid inputs of the connection targets.
pub(super) mod seeds {
    pub use super::connected::seeds::connection_connected;
    pub use super::script::seeds::connection_script;
    pub use super::two_stacks::seeds::two_stacks;
    pub use super::unknown::seeds::connection_unknown;
}

/// The server's address (the driver's address type) in the connection targets.
pub const SERVER: u32 = 1000;
/// The connected client's address in the two-stack targets.
pub const CLIENT: u32 = 7;
/// The private key the fuzz backend and server share (connection_unknown: the
/// requests in its inputs carry tokens sealed with it).
pub const PRIVATE_KEY: [u8; 32] = *b"netproto-fuzzing-private-key-256";
/// The fuzz server's challenge key (fixed, so that the unknown-address target's
/// seeds can answer the challenges the server will send).
pub const CHALLENGE_KEY: [u8; 32] = *b"netproto-fuzzing-challenge-key!!";
/// The Unix time every fuzz server starts at (tokens are made at it, live an hour).
pub const UNIX_TIME: u64 = crate::sim_stack::SIM_UNIX_TIME;
/// Handshakes in progress the fuzz server keeps (16 tokens): small, so that full
/// tables are a few datagrams away.
const PENDING: usize = 2;

/// The fuzz server's address as connect tokens name it.
pub fn server_address() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000))
}

/// The server of the connection targets: 4 slots, 2 handshakes in progress, the given
/// keys (no key from the operating system).
pub fn server_config(private_key: Key, challenge_key: Key) -> ServerConfig {
    ServerConfig {
        connection: connection_config(),
        private_key,
        addresses: vec![server_address()],
        max_clients: 4,
        challenge_key,
        pending_handshakes: PENDING,
        // The default. Tokens here are made as the server starts and live an hour,
        // so they expire long after the restart rule's floor (start + 300 s).
        max_token_lifetime: std::time::Duration::from_secs(300),
    }
}

fn random_key(rng: &mut Rng) -> Key {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    Key::from_bytes(bytes)
}

/// A deterministic backend: nonces and session keys from a seeded generator
/// ([`SimBackend`](crate::sim_stack::SimBackend), with tokens for [`server_address`]).
#[derive(Debug)]
pub struct Backend(crate::sim_stack::SimBackend);

impl Backend {
    /// A backend with `private_key`, drawing nonces and session keys from `seed`.
    pub fn new(private_key: Key, seed: u64) -> Self {
        Self(crate::sim_stack::SimBackend::with_key(
            connection_config().protocol_id,
            private_key,
            seed,
        ))
    }

    /// The key tokens are sealed with.
    pub fn private_key(&self) -> &Key {
        &self.0.private_key
    }

    /// A token for `client_id` to [`server_address`] (5-second timeout, an hour to
    /// live from [`UNIX_TIME`]).
    pub fn token(&mut self, client_id: u64) -> ConnectToken {
        self.0.token_to(client_id, server_address())
    }
}

/// The sum of the counters of datagrams that changed nothing (every one lands in
/// exactly one of them). Not included: `datagrams_dropped_by_endpoint` (authenticated: the link
/// heard the peer) and `requests_dropped_busy` (the token may have been remembered).
fn drops(c: &ServerStats) -> u64 {
    c.datagrams_dropped_malformed
        + c.datagrams_dropped_unexpected
        + c.datagrams_dropped_unknown_address
        + c.datagrams_dropped_unauthenticated
        + c.datagrams_dropped_replayed
        + c.requests_dropped_malformed
        + c.requests_dropped_wrong_protocol
        + c.requests_dropped_expired
        + c.requests_dropped_unauthenticated
        + c.requests_dropped_wrong_server
        + c.requests_dropped_token_reused
        + c.requests_dropped_already_connected
        + c.requests_dropped_bad_timeout
        + c.responses_dropped_invalid
}

/// The counters with the drop counters and `datagrams_received` zeroed.
fn without_drops(mut c: ServerStats) -> ServerStats {
    c.datagrams_received = 0;
    c.datagrams_dropped_malformed = 0;
    c.datagrams_dropped_unexpected = 0;
    c.datagrams_dropped_unknown_address = 0;
    c.datagrams_dropped_unauthenticated = 0;
    c.datagrams_dropped_replayed = 0;
    c.requests_dropped_malformed = 0;
    c.requests_dropped_wrong_protocol = 0;
    c.requests_dropped_expired = 0;
    c.requests_dropped_unauthenticated = 0;
    c.requests_dropped_wrong_server = 0;
    c.requests_dropped_token_reused = 0;
    c.requests_dropped_already_connected = 0;
    c.requests_dropped_bad_timeout = 0;
    c.responses_dropped_invalid = 0;
    c
}

/// What a server holds, beside its counters.
fn server_state<A: Copy + Eq + std::hash::Hash + std::fmt::Debug, U>(s: &Server<A, U>) -> Vec<u64> {
    let mut state = vec![
        s.connected_clients() as u64,
        s.pending_handshakes() as u64,
        s.remembered_tokens() as u64,
        s.pending_transmits() as u64,
    ];
    for (id, _) in s.clients() {
        if let Some(c) = s.stats(id).map(|l| l.endpoint) {
            state.extend([
                u64::from(id.0),
                c.packets_received,
                c.fragments_received,
                c.packets_sent,
            ]);
        }
    }
    state
}

/// The sequence in a sealed datagram's header.
fn sealed_sequence(datagram: &[u8]) -> Option<u64> {
    let (&prefix, rest) = datagram.split_first()?;
    let n = usize::from(prefix >> 4);
    if prefix & 0x0f == 0 || !(1..=8).contains(&n) || rest.len() < n {
        return None;
    }
    let mut le = [0u8; 8];
    le[..n].copy_from_slice(&rest[..n]);
    Some(u64::from_le_bytes(le))
}

/// A small running digest (FNV-1a) of a trace.
fn digest(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash = (*hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
}
