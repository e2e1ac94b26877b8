//! Graceful disconnect: `disconnect_after_flush` keeps a
//! connection sending until every reliable message is acked, bounded by a timeout;
//! the immediate `disconnect` drops what is not acked. On the network simulator, 50 ms
//! each way, 10% loss each way.

use netproto::NetMessage;
use netproto::channel::ChannelId;
use netproto::channel::LayerConfig;
use netproto::connection::{
    ClientEvent, ClientId, ConnectionConfig, DisconnectReason, ServerEvent,
};
use netproto::sim::{LinkConfig, Network, NodeId};
use netproto::transport::SendError;
use netproto_tests::sim_stack::{SimBackend, SimClient, SimServer, deliver};
use std::time::Duration;

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Line {
    #[net(range = 0..=1000)]
    n: u16,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Line(Line),
}

const MESSAGES: u16 = 300;
const TICK: f64 = 1.0 / 60.0;

/// How the server ends the connection once it has queued the messages.
#[derive(Clone, Copy)]
enum End {
    Immediate,
    AfterFlush(f64),
}

/// What the client saw.
#[derive(Debug)]
struct Outcome {
    received: u16,
    /// Seconds from the server's call to the client's disconnection event.
    closed_after: f64,
    flushed: u64,
    timeouts: u64,
}

/// A server (node 0) and a client (node 1) with the default layer, and a network of
/// 50 ms each way and 10% loss each way drawn from `seed`.
fn setup(seed: u64) -> (SimServer<Msg>, SimClient<Msg>, Network) {
    let layer = LayerConfig::default();
    let mut net = Network::new(seed);
    net.set_oracle_enabled(false);
    net.set_default_link(
        LinkConfig::default()
            .with_latency(Duration::from_millis(50))
            .with_loss(0.1),
    );
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 3);
    let server_node = NodeId(0);
    let config = backend.server_config(server_node);
    let server = SimServer::<Msg>::new(server_node, config, layer.clone(), 0.0);
    let token = backend.token(1, server_node);
    let client = SimClient::<Msg>::new(
        NodeId(1),
        server_node,
        ConnectionConfig::new(protocol_id),
        &token,
        layer,
        0.0,
    );
    (server, client, net)
}

/// Connects, queues `MESSAGES` reliable messages at the server and ends the
/// connection with `end`; `deaf` stops everything the client sends from then on (the
/// acks never come back).
fn run(end: End, deaf: bool) -> Outcome {
    let link = LinkConfig::default()
        .with_latency(Duration::from_millis(50))
        .with_loss(0.1);
    let (mut server, mut client, mut net) = setup(5);
    let server_node = NodeId(0);
    let mut peer: Option<ClientId> = None;
    let mut ended_at = None::<f64>;
    let mut received = 0u16;
    let mut tick = 0u32;
    loop {
        let now = f64::from(tick) * TICK;
        assert!(now < 30.0, "the connection never closed");
        deliver(
            &mut net,
            now,
            &mut server,
            std::slice::from_mut(&mut client),
        );
        while let Some(event) = server.poll_event() {
            if let ServerEvent::Connected { client, .. } = event {
                peer = Some(client);
            }
        }
        while let Some(Msg::Line(line)) = client.receive(ChannelId::new(0)) {
            assert_eq!(line.n, received, "in order, exactly once");
            received += 1;
        }
        let mut closed = false;
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Connected { .. } => {}
                ClientEvent::Disconnected {
                    reason: DisconnectReason::PeerDisconnected,
                } => closed = true,
                other => panic!("client: {other:?}"),
            }
        }
        if closed {
            // What arrived with the disconnect's packet is delivered too.
            while let Some(Msg::Line(_)) = client.receive(ChannelId::new(0)) {
                received += 1;
            }
            let ended_at = ended_at.expect("ended");
            return Outcome {
                received,
                closed_after: now - ended_at,
                flushed: server.stack_stats().flushes_completed,
                timeouts: server.stack_stats().flushes_timed_out,
            };
        }
        if let (Some(id), None, 30) = (peer, ended_at, tick % 60) {
            {
                let layer = server.layer_mut(id).expect("connected");
                for n in 0..MESSAGES {
                    layer
                        .send(ChannelId::new(0), Msg::Line(Line { n }))
                        .expect("queued");
                }
                match end {
                    End::Immediate => assert!(server.disconnect(now, id)),
                    End::AfterFlush(timeout) => {
                        assert!(server.disconnect_after_flush(now, id, timeout));
                        assert!(server.stack_mut().is_closing(id));
                        assert_eq!(
                            server.stack_mut().send(
                                id,
                                ChannelId::new(0),
                                Msg::Line(Line { n: 0 })
                            ),
                            Err(SendError::Closing)
                        );
                    }
                }
                if deaf {
                    net.set_link(NodeId(1), server_node, link.with_loss(1.0));
                }
                ended_at = Some(now);
            }
        }
        server.update(now, &mut net);
        client.update(now, &mut net);
        tick += 1;
    }
}

#[test]
fn immediate_disconnect_drops_what_is_not_acked() {
    let o = run(End::Immediate, false);
    println!("{o:?}");
    assert!(o.received < MESSAGES, "{o:?}");
}

#[test]
fn disconnect_after_flush_delivers_everything_first() {
    let o = run(End::AfterFlush(5.0), false);
    println!("{o:?}");
    assert_eq!(o.received, MESSAGES, "{o:?}");
    assert_eq!((o.flushed, o.timeouts), (1, 0));
    // A few round trips (10% loss), far from the timeout.
    assert!(o.closed_after < 2.0, "{o:?}");
}

#[test]
fn disconnect_after_flush_gives_up_at_its_timeout() {
    let o = run(End::AfterFlush(1.0), true);
    println!("{o:?}");
    assert_eq!((o.flushed, o.timeouts), (0, 1));
    // The timeout, then the disconnect packets' one-way trip (a copy may be lost).
    assert!(o.closed_after >= 1.0 && o.closed_after < 1.3, "{o:?}");
}

#[test]
fn a_client_flushes_too() {
    let (mut server, mut client, mut net) = setup(9);
    for n in 0..MESSAGES {
        client
            .send(ChannelId::new(0), Msg::Line(Line { n }))
            .expect("queued");
    }
    client.disconnect_after_flush(0.0, 10.0);
    let (mut received, mut gone) = (0u16, false);
    for tick in 0..600 {
        let now = f64::from(tick) * TICK;
        deliver(
            &mut net,
            now,
            &mut server,
            std::slice::from_mut(&mut client),
        );
        let ids: Vec<ClientId> = server.layers().map(|(id, _)| id).collect();
        for id in ids {
            while server.receive(id, ChannelId::new(0)).is_some() {
                received += 1;
            }
        }
        while let Some(event) = server.poll_event() {
            gone |= matches!(event, ServerEvent::Disconnected { .. });
        }
        if gone {
            break;
        }
        server.update(now, &mut net);
        client.update(now, &mut net);
    }
    assert!(gone, "the client disconnected");
    assert_eq!(received, MESSAGES);
    assert_eq!(client.stack_stats().flushes_completed, 1);
}
