//! A flood of 1078-byte connection requests with invalid tokens, at the sans-IO
//! [`Server`] on virtual time: requests with a valid header and an unexpired
//! timestamp but a random sealed part, and one-bit mutations of a genuine request.
//! Proves that none of them leaves state (no handshake, no remembered token, no
//! client), gets a reply (0 bytes out), or allocates (a counting global allocator,
//! [`cap::Cap`]: the server's heap is unchanged, not one allocation is made), that each
//! is counted in `requests_dropped_unauthenticated` and nowhere else, and that a genuine client
//! connects right after. It also measures what an invalid request costs the server
//! (one AEAD open of the token's private part) and prints it in ns per request; no
//! timing is asserted. For a figure to quote, run it optimized:
//!
//! ```text
//! cargo test --release -p netproto-tests --test connection_flood -- --nocapture
//! ```
//!
//! The allocator is process-global, so this binary holds a single test.

use netproto::Time;
use std::alloc::System;
use std::time::Instant;

use cap::Cap;
use netproto::connection::{
    Client, ConnectionConfig, MAX_DATAGRAM_BYTES, Server, ServerEvent, ServerStats,
};
use netproto::internals::netcode::{CONNECTION_REQUEST_BYTES, write_packet};
use netproto::netcode::{Key, VERSION_INFO};
use netproto::sim::{NodeId, Rng};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const PROTOCOL: u64 = 0x5eed_f00d_1234_5678;
const SERVER: NodeId = NodeId(0);
const REQUESTS: usize = 10_000;
/// Where the fields of a request start.
const EXPIRE: usize = 1 + 13 + 8;
const NONCE: usize = EXPIRE + 8;

/// A request with a valid header (version, protocol id, an expiry an hour away) and
/// a random nonce and sealed part.
fn random_request(rng: &mut Rng) -> Vec<u8> {
    let mut bytes = vec![0u8; CONNECTION_REQUEST_BYTES];
    bytes[1..14].copy_from_slice(&VERSION_INFO);
    bytes[14..EXPIRE].copy_from_slice(&PROTOCOL.to_le_bytes());
    bytes[EXPIRE..NONCE].copy_from_slice(&(SIM_UNIX_TIME + 3600).to_le_bytes());
    rng.fill_bytes(&mut bytes[NONCE..]);
    bytes
}

/// `genuine` with one bit of its nonce or sealed part flipped, or its expiry (part of
/// the sealed part's associated data) moved a second later.
fn mutated_request(rng: &mut Rng, genuine: &[u8]) -> Vec<u8> {
    let mut bytes = genuine.to_vec();
    if rng.chance(0.05) {
        let expire = u64::from_le_bytes(bytes[EXPIRE..NONCE].try_into().expect("8 bytes"));
        bytes[EXPIRE..NONCE].copy_from_slice(&(expire + 1).to_le_bytes());
    } else {
        let at = NONCE + rng.below((CONNECTION_REQUEST_BYTES - NONCE) as u64) as usize;
        bytes[at] ^= 1 << rng.below(8);
    }
    bytes
}

#[test]
fn a_flood_of_invalid_requests_leaves_no_state_gets_no_reply_and_allocates_nothing() {
    let mut backend = SimBackend::new(PROTOCOL, 1);
    let config = backend.server_config(SERVER);
    let mut server: Server<NodeId> = Server::new(config, Time::ZERO, SIM_UNIX_TIME).expect("valid");
    let token = backend.token(1, SERVER);
    let mut genuine = vec![0u8; MAX_DATAGRAM_BYTES];
    let len = write_packet(
        &token.request_packet(),
        0,
        &Key::from_bytes([0; 32]),
        PROTOCOL,
        &mut genuine,
    )
    .expect("a request");
    genuine.truncate(len);
    assert_eq!(len, CONNECTION_REQUEST_BYTES);

    // Every datagram is made before the baseline.
    let mut rng = Rng::new(0xf100d);
    let flood: Vec<(NodeId, Vec<u8>)> = (0..REQUESTS)
        .map(|i| {
            let bytes = if i % 2 == 0 {
                random_request(&mut rng)
            } else {
                mutated_request(&mut rng, &genuine)
            };
            assert_ne!(bytes, genuine);
            (NodeId(1000 + rng.below(1_000_000) as u32), bytes)
        })
        .collect();
    let bytes_in: usize = flood.iter().map(|(_, b)| b.len()).sum();

    let live = ALLOC.allocated();
    let total = ALLOC.total_allocated();
    let start = Instant::now();
    for (from, bytes) in &flood {
        // A whole second of floods at each virtual millisecond.
        let now = 0.001 * f64::from(from.0 % 1000);
        assert!(
            server
                .handle_datagram(Time::from_secs_f64(now), *from, bytes)
                .is_none()
        );
    }
    let elapsed = start.elapsed();
    let (live_after, total_after) = (ALLOC.allocated(), ALLOC.total_allocated());
    server.update(Time::from_secs_f64(1.0));

    let per_request = elapsed.as_nanos() as f64 / REQUESTS as f64;
    println!(
        "invalid connection request: {per_request:.0} ns each ({REQUESTS} requests in {elapsed:?}, {} build)",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );

    assert_eq!(live_after, live, "the server's heap is unchanged");
    assert_eq!(total_after, total, "not one allocation");
    assert_eq!(server.pending_handshakes(), 0);
    assert_eq!(server.remembered_tokens(), 0);
    assert_eq!(server.connected_clients(), 0);
    assert_eq!(server.pending_transmits(), 0);
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let bytes_out = std::iter::from_fn(|| server.poll_transmit(&mut buf))
        .map(|(_, len)| len)
        .sum::<usize>();
    assert_eq!(bytes_out, 0, "no reply to {bytes_in} bytes");
    assert!(server.poll_event().is_none());
    let mut expected = ServerStats::default();
    expected.datagrams_received = REQUESTS as u64;
    expected.requests_dropped_unauthenticated = REQUESTS as u64;
    assert_eq!(*server.server_stats(), expected);

    // The genuine client connects right after.
    let me = NodeId(1);
    let mut client = Client::new(
        ConnectionConfig::new(PROTOCOL),
        &token,
        SERVER,
        Time::from_secs_f64(1.0),
    )
    .expect("valid");
    for tick in 0..4 {
        let now = 1.0 + 0.05 * f64::from(tick);
        client.update(Time::from_secs_f64(now));
        while let Some((_, len)) = client.poll_transmit(&mut buf) {
            let datagram = buf[..len].to_vec();
            server.handle_datagram(Time::from_secs_f64(now), me, &datagram);
            let mut reply = [0u8; MAX_DATAGRAM_BYTES];
            while let Some((to, len)) = server.poll_transmit(&mut reply) {
                assert_eq!(to, me);
                client.handle_datagram(Time::from_secs_f64(now), SERVER, &reply[..len]);
            }
        }
    }
    assert!(client.is_connected());
    assert!(matches!(
        server.poll_event(),
        Some(ServerEvent::Connected {
            address: NodeId(1),
            user_id: 1,
            ..
        })
    ));
    assert_eq!(server.server_stats().clients_accepted, 1);
}
