//! `ServerStack::prefetch` is a cache hint: it takes `&self` and the crate has no
//! interior mutability, so the compiler already holds it to changing no value (two
//! worlds run with and without it could not differ). What it decides is whose state to
//! ask for: each sender's connection, found by the sender's address
//! (`Server::client_id`), and none for a sender that is no client. This checks that
//! lookup in a world of 40 clients (more than one prefetch chunk of 32), connected
//! through `handle_batch` (which prefetches each batch), before and after a client
//! leaves; and it hands `prefetch` strangers, repeats and the departed.

use netproto::connection::{ClientEvent, ClientId, ServerEvent};
use netproto::sim::{Network, NodeId};
use netproto_tests::load::sim_world;

const CLIENTS: usize = 40;

#[test]
fn prefetch_finds_each_senders_connection_by_its_address() {
    let (mut server, mut clients) = sim_world(CLIENTS, 5);
    let server_node = NodeId(0);
    let mut net = Network::new(9);
    // Each Connected event's slot, address and user (client `i` is node `i + 1` with
    // user id `i`).
    let mut connected: Vec<(ClientId, NodeId, u64)> = Vec::new();
    let mut batch: Vec<(NodeId, Vec<u8>)> = Vec::new();
    let mut now = 0.0;
    for tick in 0..600 {
        now = f64::from(tick) / 60.0;
        while let Some(d) = net.poll(netproto::Time::from_secs_f64(now)) {
            if d.to == server_node {
                batch.push((d.from, d.payload.to_vec()));
            } else if let Some(c) = clients.get_mut(d.to.0 as usize - 1) {
                c.handle_datagram(now, d.from, &d.payload);
            }
        }
        server.handle_batch(now, &batch);
        batch.clear();
        while let Some(event) = server.poll_event() {
            if let ServerEvent::Connected {
                client,
                address,
                user_id,
            } = event
            {
                connected.push((client, address, user_id));
            }
        }
        server.update(now, &mut net);
        for c in &mut clients {
            while let Some(event) = c.poll_event() {
                assert!(matches!(event, ClientEvent::Connected { .. }), "{event:?}");
            }
            c.update(now, &mut net);
        }
        if connected.len() == CLIENTS {
            break;
        }
    }
    assert_eq!(connected.len(), CLIENTS, "every client connected");

    let lookup = server.connection();
    for &(client, address, user_id) in &connected {
        assert_eq!(address, NodeId(user_id as u32 + 1), "{client:?}'s address");
        assert_eq!(lookup.client_id(&address), Some(client), "{address:?}");
        assert_eq!(lookup.client_address(client), Some(address), "{client:?}");
    }
    let mut slots: Vec<ClientId> = connected.iter().map(|&(c, ..)| c).collect();
    slots.sort_by_key(|c| c.0);
    slots.dedup();
    assert_eq!(slots.len(), CLIENTS, "one slot each");
    for stranger in [server_node, NodeId(CLIENTS as u32 + 1), NodeId(999)] {
        assert_eq!(lookup.client_id(&stranger), None, "{stranger:?}");
    }

    // A client that leaves is no sender's connection any more.
    let (gone, gone_address, _) = connected[7];
    assert!(server.disconnect(now, gone));
    let lookup = server.connection();
    assert_eq!(lookup.client_id(&gone_address), None);
    for &(client, address, _) in connected.iter().filter(|&&(c, ..)| c != gone) {
        assert_eq!(lookup.client_id(&address), Some(client), "{address:?}");
    }

    // Every sender twice, in more than one chunk, with strangers and the departed.
    let mut senders: Vec<NodeId> = connected.iter().map(|&(_, a, _)| a).collect();
    senders.extend(senders.clone());
    senders.extend([NodeId(999), server_node, gone_address]);
    server.stack_mut().prefetch(&senders);
}
