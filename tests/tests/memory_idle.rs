//! Memory per connected idle client, measured (issue 44's figure): the heap a
//! `ServerStack` holds with every slot taken by a client that sends nothing, less
//! what the same server holds with no client, divided by the clients. Run with
//! `--nocapture` to see the figures and the sizes of the per-client structures a
//! game can name.
//!
//! A server's heap is measured by dropping it: a counting global allocator
//! ([`cap::Cap`]) gives the live bytes before and after, and the difference is what
//! the server owned, whatever the clients in the same process hold. The allocator
//! is process-global, so this binary holds a single test.

use std::alloc::System;
use std::mem::size_of;

use cap::Cap;
use netproto::channel::{LayerConfig, MessageLayer};
use netproto::connection::{Congestion, CongestionConfig, ConnectionConfig};
use netproto::internals::netcode::ReplayProtection;
use netproto::packet::{Endpoint, EndpointConfig};
use netproto::sim::{LinkConfig, Network};
use netproto_tests::load::{LoadMessage, TICK_HZ, layer_config, sim_world};
use netproto_tests::sim_stack::{SimClient, SimServer, deliver};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const CLIENTS: usize = 64;

/// The heap `server` owned, by dropping it.
fn held_by(server: SimServer<LoadMessage>) -> usize {
    let before = ALLOC.allocated();
    drop(server);
    before - ALLOC.allocated()
}

/// Runs `seconds` of ticks with clients that send nothing; every datagram delivered
/// by the end.
fn run(
    server: &mut SimServer<LoadMessage>,
    clients: &mut [SimClient<LoadMessage>],
    net: &mut Network,
    from_tick: u64,
    seconds: u64,
) -> u64 {
    let ticks = seconds * u64::from(TICK_HZ);
    for tick in from_tick..from_tick + ticks {
        let now = tick as f64 / f64::from(TICK_HZ);
        for c in clients.iter_mut() {
            while c.poll_event().is_some() {}
            c.update(now, net);
        }
        deliver(net, now, server, clients);
        while server.poll_event().is_some() {}
        server.update(now, net);
        deliver(net, now, server, clients);
    }
    from_tick + ticks
}

#[test]
fn memory_per_connected_idle_client() {
    let (empty, _) = sim_world(CLIENTS, 1);
    let empty_held = held_by(empty);

    let (mut server, mut clients) = sim_world(CLIENTS, 2);
    let mut net = Network::new(3);
    net.set_default_link(LinkConfig::default());
    let tick = run(&mut server, &mut clients, &mut net, 0, 5);
    assert_eq!(server.connection().connected_clients(), CLIENTS);
    // Idle: keep-alives and acks only, long enough for every queue to settle.
    run(&mut server, &mut clients, &mut net, tick, 10);
    assert_eq!(server.connection().connected_clients(), CLIENTS);
    let bound = server
        .connection()
        .config()
        .connection
        .memory_per_connection();
    let layer_bound = layer_config().memory_bound::<LoadMessage>(64);
    let held = held_by(server);
    let per_client = (held - empty_held) / CLIENTS;
    println!(
        "server heap: {empty_held} bytes with no client, {held} with {CLIENTS} idle \
         clients: {per_client} bytes per connected idle client ({} per slot in all)",
        held / CLIENTS
    );
    println!(
        "size_of: MessageLayer {}, Endpoint {}, EndpointConfig {}, Congestion {}, \
         CongestionConfig {}, ConnectionConfig {}, LayerConfig {}, ReplayProtection {}",
        size_of::<MessageLayer<LoadMessage>>(),
        size_of::<Endpoint>(),
        size_of::<EndpointConfig>(),
        size_of::<Congestion>(),
        size_of::<CongestionConfig>(),
        size_of::<ConnectionConfig>(),
        size_of::<LayerConfig>(),
        size_of::<ReplayProtection>(),
    );
    // An idle connection holds far less than the most a hostile peer can make it
    // hold (the bound `memory_bounds` checks).
    assert!(
        per_client > 0 && per_client < bound + layer_bound,
        "{per_client} bytes per idle client (bound {bound} + {layer_bound})"
    );
}
