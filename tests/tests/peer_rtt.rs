//! The send step hands the round trip the connection measured to the message layer,
//! which times its resends by it, on the client's side and on the server's: on a
//! 400 ms round trip, a reliable message is not resent before its ack comes back (the default channel resends after
//! `max(100 ms, 1.25 x RTT)`). A layer left without the RTT resends every 100 ms.
//! On the network simulator, 200 ms each way, no loss: deterministic.

use netproto::NetMessage;
use netproto::channel::{ChannelId, LayerConfig};
use netproto::connection::{ClientEvent, ConnectionConfig};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, deliver};
use std::time::Duration;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Line {
    #[net(range = 0..=100)]
    n: u8,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Line(Line),
}

const TICK: f64 = 1.0 / 64.0;

#[test]
fn a_reliable_message_waits_for_its_ack_on_a_long_round_trip() {
    let layer = LayerConfig::default();
    let mut net = Network::new(11);
    net.set_oracle_enabled(false);
    net.set_default_link(LinkConfig::default().with_latency(Duration::from_millis(200)));
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 5);
    let server_node = NodeId(0);
    let config = backend.server_config(server_node);
    let mut server = SimServer::<Msg>::new(server_node, config, layer.clone(), 0.0);
    let token = backend.token(1, server_node);
    let mut clients = [SimClient::<Msg>::new(
        NodeId(1),
        server_node,
        ConnectionConfig::new(protocol_id),
        &token,
        layer,
        0.0,
    )];
    let mut connected = false;
    let mut resent_before = None;
    let mut server_resent_before = None;
    let mut sent = 0u8;
    let mut received = 0u8;
    let mut received_by_client = 0u8;
    for tick in 0..(12 * 64) {
        let now = f64::from(tick) * TICK;
        deliver(&mut net, now, &mut server, &mut clients);
        let client = &mut clients[0];
        while let Some(event) = client.poll_event() {
            connected |= matches!(event, ClientEvent::Connected { .. });
        }
        // From 4 s (round trips measured), one message every half second.
        if now >= 4.0 && sent < 10 && tick % 32 == 0 {
            assert!(connected);
            resent_before.get_or_insert(client.layer().stats().messages_resent);
            client
                .send(ChannelId::new(0), Msg::Line(Line { n: sent }))
                .expect("room");
            let id = server.connection().clients().next().expect("connected").0;
            let layer = server.layer_mut(id).expect("connected");
            server_resent_before.get_or_insert(layer.stats().messages_resent);
            layer
                .send(ChannelId::new(0), Msg::Line(Line { n: sent }))
                .expect("room");
            sent += 1;
        }
        while let Some(Msg::Line(line)) = client.receive(ChannelId::new(0)) {
            assert_eq!(line.n, received_by_client, "in order, once");
            received_by_client += 1;
        }
        client.update(now, &mut net);
        server.update(now, &mut net);
        for (id, _) in server.connection().clients().collect::<Vec<_>>() {
            while let Some(Msg::Line(line)) = server.receive(id, ChannelId::new(0)) {
                assert_eq!(line.n, received, "in order, once");
                received += 1;
            }
        }
    }
    assert_eq!((sent, received, received_by_client), (10, 10, 10));
    let rtt = clients[0].stats().expect("connected").link.endpoint.rtt;
    assert!(
        rtt >= Duration::from_millis(400) && rtt < Duration::from_millis(450),
        "{rtt:?}"
    );
    let resent = clients[0].layer().stats().messages_resent - resent_before.expect("sent");
    assert_eq!(
        resent, 0,
        "no message resent before its ack could come back"
    );
    let (_, layer) = server.layers().next().expect("connected");
    let server_resent = layer.stats().messages_resent - server_resent_before.expect("sent");
    assert_eq!(server_resent, 0, "nor by the server");
}
