//! `ServerStack::prefetch` is a hint and nothing more: two identical worlds on the
//! simulator (40 clients, more than one prefetch chunk; loss, duplicates, reordering
//! and jitter; the load benchmark's game), one handling each datagram alone and one
//! prefetching every batch first (and prefetching senders that are no client, or
//! the same client twice), deliver the same messages in the same order and count
//! the same statistics.

use std::time::Duration;

use netproto::channel::ChannelId;
use netproto::connection::{ClientEvent, ServerEvent};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto_tests::load::{
    Event, LoadMessage, Roster, SNAPSHOT_EVERY, advance, input, sends_event, sim_world, snapshot,
};

const CLIENTS: usize = 40;
const TICKS: u32 = 900;

/// Everything a world's endpoints observed, in order, and the server's counters.
#[derive(Debug, PartialEq)]
struct Observed {
    log: Vec<String>,
    server_stats: String,
    connected: usize,
}

fn run(prefetch: bool) -> Observed {
    let (mut server, mut clients) = sim_world(CLIENTS, 5);
    let server_node = NodeId(0);
    let mut net = Network::new(9);
    net.set_default_link(
        LinkConfig::default()
            .with_latency(Duration::from_millis(30))
            .with_jitter(Duration::from_millis(5))
            .with_loss(0.05)
            .with_duplicates(0.03)
            .with_reordering(0.05, Duration::from_millis(20)),
    );
    let mut roster = Roster::new(CLIENTS);
    let mut snap = snapshot(0);
    let mut log = Vec::new();
    let mut batch: Vec<(NodeId, Vec<u8>)> = Vec::new();
    for tick in 0..TICKS {
        let now = f64::from(tick) / 60.0;
        while let Some(d) = net.poll(netproto::Time::from_secs_f64(now)) {
            if d.to == server_node {
                batch.push((d.from, d.payload.to_vec()));
            } else if let Some(c) = clients.get_mut(d.to.0 as usize - 1) {
                c.handle_datagram(now, d.from, &d.payload);
            }
        }
        if prefetch {
            // Senders that are no client, and one client twice: skipped, harmless.
            server.stack_mut().prefetch(&[
                NodeId(999),
                NodeId(1),
                NodeId(1),
                NodeId(CLIENTS as u32),
            ]);
            server.handle_batch(now, &batch);
        } else {
            for (from, datagram) in &batch {
                server.handle_datagram(now, *from, datagram);
            }
        }
        batch.clear();
        while let Some(event) = server.poll_event() {
            match event {
                ServerEvent::Connected {
                    client, user_id, ..
                } => roster.connect(client, user_id),
                ServerEvent::Disconnected { client, .. } => roster.disconnect(client),
                _ => {}
            }
        }
        let playing = roster.connected().len() == CLIENTS;
        for &client in roster.connected() {
            for channel in [ChannelId::UNRELIABLE, ChannelId::RELIABLE] {
                while let Some(m) = server.receive(client, channel) {
                    log.push(format!("server from {client:?}: {m:?}"));
                    if let LoadMessage::Event(event) = m {
                        for to in roster.mates(client) {
                            let relayed = LoadMessage::Event(event.clone());
                            let sent = server.stack_mut().send(to, ChannelId::RELIABLE, relayed);
                            log.push(format!("relay to {to:?}: {sent:?}"));
                        }
                    }
                }
            }
        }
        if playing && u64::from(tick).is_multiple_of(SNAPSHOT_EVERY) {
            advance(&mut snap, u64::from(tick));
            let message = LoadMessage::Snapshot(snap.clone());
            let queued = server
                .stack_mut()
                .broadcast(ChannelId::UNRELIABLE, &message, |_, _| {});
            log.push(format!("broadcast: {queued:?}"));
        }
        server.update(now, &mut net);
        for (user, c) in clients.iter_mut().enumerate() {
            while let Some(event) = c.poll_event() {
                assert!(matches!(event, ClientEvent::Connected { .. }), "{event:?}");
            }
            if playing {
                let _ = c.send(
                    ChannelId::UNRELIABLE,
                    LoadMessage::Input(input(user, tick.into())),
                );
                if sends_event(user, tick.into()) {
                    let event = Event {
                        from: user as u16,
                        seq: tick,
                    };
                    let _ = c.send(ChannelId::RELIABLE, LoadMessage::Event(event));
                }
            }
            for channel in [ChannelId::UNRELIABLE, ChannelId::RELIABLE] {
                while let Some(m) = c.receive(channel) {
                    log.push(format!("client {user}: {m:?}"));
                }
            }
            c.update(now, &mut net);
        }
    }
    let server_stats = format!(
        "{:?} {:?} {:?}",
        server.stack_stats(),
        server.wire(),
        roster
            .connected()
            .iter()
            .map(|&c| server.stats(c))
            .collect::<Vec<_>>()
    );
    Observed {
        log,
        server_stats,
        connected: roster.connected().len(),
    }
}

#[test]
fn prefetching_batches_changes_nothing_observable() {
    let alone = run(false);
    let prefetched = run(true);
    // The worlds did the work the comparison is about.
    assert_eq!(alone.connected, CLIENTS);
    let count = |o: &Observed, prefix: &str| o.log.iter().filter(|l| l.starts_with(prefix)).count();
    assert!(
        count(&alone, "server from") > 10_000,
        "inputs and events reached the server"
    );
    assert!(
        count(&alone, "client ") > 10_000,
        "snapshots and relayed events reached the clients"
    );
    assert_eq!(alone.log.len(), prefetched.log.len());
    if let Some(i) = (0..alone.log.len()).find(|&i| alone.log[i] != prefetched.log[i]) {
        panic!(
            "entry {i} differs: {:?} without prefetch, {:?} with",
            alone.log[i], prefetched.log[i]
        );
    }
    assert_eq!(alone.server_stats, prefetched.server_stats);
}
