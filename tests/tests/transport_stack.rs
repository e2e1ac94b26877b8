//! The sans-IO stacks the UDP transport and the simulator harness share, on virtual
//! time over a perfect in-memory network: deterministic.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::ChannelId;
use netproto::channel::LayerConfig;
use netproto::connection::{
    Client, ClientEvent, ConnectionConfig, DisconnectReason, MAX_DATAGRAM_BYTES, Mode, Server,
    ServerEvent,
};
use netproto::sim::NodeId;
use netproto::transport::{ClientStack, ServerStack};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Hello {
    #[net(range = 0..=100)]
    n: u8,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Hello(Hello),
}

fn hello(n: u8) -> Msg {
    Msg::Hello(Hello { n })
}

const SERVER: u32 = 0;
const CLIENT: u32 = 1;

fn pair() -> (ServerStack<u32, Msg>, ClientStack<u32, Msg>) {
    pair_with(LayerConfig::default())
}

fn pair_with(layer: LayerConfig) -> (ServerStack<u32, Msg>, ClientStack<u32, Msg>) {
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 99);
    let server_config = backend.server_config(NodeId(SERVER));
    let token = backend.token(1, NodeId(SERVER));
    let server = ServerStack::new(server_config, layer.clone(), Time::ZERO, SIM_UNIX_TIME)
        .expect("valid configuration");
    let client = ClientStack::new(
        ConnectionConfig::new(protocol_id),
        &token,
        SERVER,
        layer,
        Time::ZERO,
    )
    .expect("valid configuration");
    (server, client)
}

/// One millisecond tick: both updates, then every datagram delivered at once. Returns
/// the datagrams (client's, server's) sent.
fn tick(
    now: f64,
    server: &mut ServerStack<u32, Msg>,
    client: &mut ClientStack<u32, Msg>,
) -> (u32, u32) {
    client.update(Time::from_secs_f64(now));
    server.update(Time::from_secs_f64(now));
    let (mut up, mut down) = (0, 0);
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    while let Some((_, len)) = client.poll_transmit(&mut buf) {
        up += 1;
        server.handle_datagram(Time::from_secs_f64(now), CLIENT, &buf[..len]);
    }
    while let Some((to, len)) = server.poll_transmit(&mut buf) {
        down += 1;
        assert_eq!(to, CLIENT);
        client.handle_datagram(Time::from_secs_f64(now), SERVER, &buf[..len]);
    }
    (up, down)
}

#[test]
fn messages_go_both_ways_and_the_mode_keeps_to_its_rate() {
    let (mut server, mut client) = pair();
    client.send(ChannelId::new(0), hello(1)).unwrap();
    let mut now = 0.0;
    while !client.connection().is_connected() {
        now += 0.001;
        tick(now, &mut server, &mut client);
        assert!(
            now < 1.0,
            "no handshake: {:?} {:?}",
            client.connection().state(),
            server.connection().server_stats()
        );
    }
    assert!(matches!(
        client.poll_event(),
        Some(ClientEvent::Connected { .. })
    ));
    assert!(matches!(
        server.poll_event(),
        Some(ServerEvent::Connected {
            address: CLIENT,
            ..
        })
    ));

    // Two seconds of 1 ms ticks in good mode (from the start) with nothing new to
    // send: the idle rate, 30 packets a second each way, a payload every 1/30 s and
    // never a keep-alive beside it.
    let (mut up, mut down) = (0, 0);
    for _ in 0..2000 {
        now += 0.001;
        let (u, d) = tick(now, &mut server, &mut client);
        up += u;
        down += d;
    }
    assert_eq!(client.connection().congestion().unwrap().mode(), Mode::Good);
    assert!((59..=61).contains(&up), "client sent {up} datagrams in 2 s");
    assert!(
        (59..=61).contains(&down),
        "server sent {down} datagrams in 2 s"
    );
    assert_eq!(client.stack_stats().payloads_sent, u64::from(up));

    // The queued message arrived, and an answer comes back.
    let (id, _) = server.clients().next().unwrap();
    assert_eq!(server.receive(id, ChannelId::new(0)), Some(hello(1)));
    server.send(id, ChannelId::new(0), hello(2)).unwrap();
    for _ in 0..200 {
        now += 0.001;
        tick(now, &mut server, &mut client);
    }
    assert_eq!(client.receive(ChannelId::new(0)), Some(hello(2)));
    assert_eq!(
        server.layer(id).unwrap().send_queue_len(ChannelId::new(0)),
        0,
        "acked"
    );
}

/// A raw connection client (no message layer) connected to a server stack, ticking
/// on virtual time; returns the server's and the client's events.
fn raw_client_against_stack(payload: &[u8]) -> (Vec<ServerEvent<u32>>, Vec<ClientEvent>, u64) {
    let layer = LayerConfig::default();
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 5);
    let mut server: ServerStack<u32, Msg> = ServerStack::new(
        backend.server_config(NodeId(SERVER)),
        layer,
        Time::ZERO,
        SIM_UNIX_TIME,
    )
    .expect("valid configuration");
    let token = backend.token(1, NodeId(SERVER));
    let mut client = Client::new(
        ConnectionConfig::new(protocol_id),
        &token,
        SERVER,
        Time::ZERO,
    )
    .expect("valid");
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let (mut server_events, mut client_events) = (Vec::new(), Vec::new());
    let mut sent = 0;
    for step in 1..=200 {
        let now = f64::from(step) * 0.01;
        if client.is_connected() && sent == 0 && client.ready_to_send(Time::from_secs_f64(now)) {
            client
                .send(Time::from_secs_f64(now), payload)
                .expect("connected");
            sent += 1;
        }
        client.update(Time::from_secs_f64(now));
        server.update(Time::from_secs_f64(now));
        while let Some((_, len)) = client.poll_transmit(&mut buf) {
            server.handle_datagram(Time::from_secs_f64(now), CLIENT, &buf[..len]);
        }
        while let Some((_, len)) = server.poll_transmit(&mut buf) {
            if let Some(delivery) =
                client.handle_datagram(Time::from_secs_f64(now), SERVER, &buf[..len])
            {
                delivery.accept();
            }
        }
        server_events.extend(std::iter::from_fn(|| server.poll_event()));
        client_events.extend(std::iter::from_fn(|| client.poll_event()));
    }
    (
        server_events,
        client_events,
        server.stack_stats().payloads_dropped_by_layer,
    )
}

/// Each side saw one session: connected, then disconnected for the given reason.
fn assert_one_session_ended(
    server_events: &[ServerEvent<u32>],
    server_reason: DisconnectReason,
    client_events: &[ClientEvent],
    client_reason: DisconnectReason,
) {
    assert!(
        matches!(
            server_events,
            [
                ServerEvent::Connected { .. },
                ServerEvent::Disconnected { reason, .. }
            ] if *reason == server_reason
        ),
        "{server_events:?}"
    );
    assert!(
        matches!(
            client_events,
            [
                ClientEvent::Connected { .. },
                ClientEvent::Disconnected { reason }
            ] if *reason == client_reason
        ),
        "{client_events:?}"
    );
}

/// A payload the message layer finds malformed (a peer of another build, or a hostile
/// one) ends the connection with a reason on both sides: the server sees a protocol
/// error, the client a disconnect.
#[test]
fn a_malformed_payload_ends_the_connection_on_both_sides() {
    // One channel index beyond the two configured: malformed for the layer.
    let (server_events, client_events, refused) = raw_client_against_stack(&[0xff; 8]);
    assert_eq!(refused, 1);
    assert_one_session_ended(
        &server_events,
        DisconnectReason::ProtocolError,
        &client_events,
        DisconnectReason::PeerDisconnected,
    );

    // The same exchange with a well-formed (empty) layer payload keeps the connection.
    let (server_events, client_events, refused) = raw_client_against_stack(&[0]);
    assert_eq!(refused, 0);
    assert!(
        matches!(server_events.as_slice(), [ServerEvent::Connected { .. }]),
        "{server_events:?}"
    );
    assert!(
        matches!(client_events.as_slice(), [ClientEvent::Connected { .. }]),
        "{client_events:?}"
    );
}

/// The other way: a raw connection server sends a client stack a payload its layer
/// finds malformed; the client ends the connection with a protocol error, and the
/// server hears its disconnect packets.
#[test]
fn a_malformed_payload_from_the_server_ends_the_client_s_connection() {
    let layer = LayerConfig::default();
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 5);
    let mut server: Server<u32> = Server::new(
        backend.server_config(NodeId(SERVER)),
        Time::ZERO,
        SIM_UNIX_TIME,
    )
    .expect("valid configuration");
    let token = backend.token(1, NodeId(SERVER));
    let mut client: ClientStack<u32, Msg> = ClientStack::new(
        ConnectionConfig::new(protocol_id),
        &token,
        SERVER,
        layer,
        Time::ZERO,
    )
    .expect("valid configuration");
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let (mut server_events, mut client_events) = (Vec::new(), Vec::new());
    let mut sent = false;
    for step in 1..=200 {
        let now = Time::from_secs_f64(f64::from(step) * 0.01);
        let first = server.clients().next().map(|(id, _)| id);
        if let Some(id) = first
            && !sent
            && server.ready_to_send(now, id)
        {
            // One channel index beyond the two configured.
            server.send(now, id, &[0xff; 8]).expect("connected");
            sent = true;
        }
        client.update(now);
        server.update(now);
        while let Some((_, len)) = client.poll_transmit(&mut buf) {
            if let Some(delivery) = server.handle_datagram(now, CLIENT, &buf[..len]) {
                delivery.accept();
            }
        }
        while let Some((_, len)) = server.poll_transmit(&mut buf) {
            client.handle_datagram(now, SERVER, &buf[..len]);
        }
        server_events.extend(std::iter::from_fn(|| server.poll_event()));
        client_events.extend(std::iter::from_fn(|| client.poll_event()));
    }
    assert!(sent);
    assert_eq!(client.stack_stats().payloads_dropped_by_layer, 1);
    assert_one_session_ended(
        &server_events,
        DisconnectReason::PeerDisconnected,
        &client_events,
        DisconnectReason::ProtocolError,
    );
}

/// The transport's flow control on virtual time (the loopback test is its UDP smoke):
/// a server whose game does not read for 5 s refuses (does not ack) the packets that
/// carry messages beyond its full receive queue, and once it reads, every message
/// arrives once, in order.
#[test]
fn a_full_receive_queue_refuses_packets_and_nothing_is_lost() {
    use netproto::channel::ChannelConfig;
    let layer = LayerConfig::with_channels(vec![
        ChannelConfig::reliable().with_queues(256, 8),
        ChannelConfig::unreliable(),
    ]);
    let (mut server, mut client) = pair_with(layer);
    let mut now = 0.0;
    while !client.connection().is_connected() {
        now += 0.001;
        tick(now, &mut server, &mut client);
        assert!(now < 1.0, "no handshake");
    }
    for n in 0..100 {
        client.send(ChannelId::new(0), hello(n)).expect("queued");
    }
    let (id, _) = server.clients().next().expect("connected");
    for _ in 0..5000 {
        now += 0.001;
        tick(now, &mut server, &mut client);
    }
    assert_eq!(
        server
            .layer(id)
            .expect("connected")
            .receive_queue_len(ChannelId::new(0)),
        8
    );
    let refused = server.stack_stats().payloads_dropped_by_layer;
    assert!(refused > 0, "no packet was refused");
    assert_eq!(
        server
            .layer(id)
            .expect("connected")
            .stats()
            .payloads_dropped_receive_queue_full,
        refused
    );
    let mut got = Vec::new();
    for _ in 0..20_000 {
        now += 0.001;
        tick(now, &mut server, &mut client);
        got.extend(std::iter::from_fn(|| server.receive(id, ChannelId::new(0))));
        if got.len() == 100 {
            break;
        }
    }
    assert_eq!(got, (0..100).map(hello).collect::<Vec<_>>());
    assert!(client.connection().is_connected());
    assert_eq!(server.connection().connected_clients(), 1);
}

/// Connects `server` and `client` with 1 ms ticks from `now`; returns the time after.
fn connect(
    mut now: f64,
    server: &mut ServerStack<u32, Msg>,
    client: &mut ClientStack<u32, Msg>,
) -> f64 {
    while !client.connection().is_connected() || server.clients().count() == 0 {
        now += 0.001;
        tick(now, server, client);
        assert!(now < 1.0, "no handshake");
    }
    now
}

/// The datagrams waiting in `stack`'s transmit queue, drained.
fn drain_server(stack: &mut ServerStack<u32, Msg>) -> usize {
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    std::iter::from_fn(|| stack.poll_transmit(&mut buf)).count()
}

#[test]
fn a_flush_sends_what_was_queued_and_nothing_else_of_a_tick() {
    let (mut server, mut client) = pair();
    let mut now = connect(0.0, &mut server, &mut client);
    let id = server.clients().next().expect("a client").0;
    // Nothing new since the last update: a flush sends nothing, even long after the
    // idle interval (30 packets a second) and the keep-alive interval passed: those
    // are an update's.
    now += 0.5;
    server.flush(Time::from_secs_f64(now));
    assert_eq!(drain_server(&mut server), 0, "a flush without news");
    // A message queued: the flush sends it at once (the rate allows a packet).
    server.send(id, ChannelId::RELIABLE, hello(7)).unwrap();
    server.flush(Time::from_secs_f64(now));
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    while let Some((to, len)) = server.poll_transmit(&mut buf) {
        assert_eq!(to, CLIENT);
        client.handle_datagram(Time::from_secs_f64(now), SERVER, &buf[..len]);
    }
    assert_eq!(client.receive(ChannelId::RELIABLE), Some(hello(7)));
    // Sent: no news left, and the next one waits for the congestion mode's rate.
    server.flush(Time::from_secs_f64(now));
    assert_eq!(drain_server(&mut server), 0, "nothing new");
    // The rate: a packet an interval (1/30 s) on average, with the credit of one
    // interval at most (an idle connection may send two at once). Once that is spent,
    // a message waits for the interval.
    server.send(id, ChannelId::RELIABLE, hello(8)).unwrap();
    server.flush(Time::from_secs_f64(now + 0.001));
    drain_server(&mut server);
    server.send(id, ChannelId::RELIABLE, hello(9)).unwrap();
    server.flush(Time::from_secs_f64(now + 0.002));
    assert_eq!(drain_server(&mut server), 0, "within the rate's interval");
    server.flush(Time::from_secs_f64(now + 0.002 + 1.0 / 30.0));
    assert!(drain_server(&mut server) > 0, "after the interval");
    // A flush runs no timeout: far past the token's timeout, the client is still
    // connected until an update.
    let late = Time::from_secs_f64(now + 60.0);
    server.flush(late);
    assert_eq!(server.clients().count(), 1, "a flush times nobody out");
    server.update(late);
    assert_eq!(server.clients().count(), 0, "the update does");

    // The client's flush likewise.
    let (mut server, mut client) = pair();
    let now = connect(0.0, &mut server, &mut client) + 0.5;
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    client.flush(Time::from_secs_f64(now));
    assert!(
        client.poll_transmit(&mut buf).is_none(),
        "a flush without news"
    );
    client.send(ChannelId::RELIABLE, hello(9)).unwrap();
    client.flush(Time::from_secs_f64(now));
    assert!(
        client.poll_transmit(&mut buf).is_some(),
        "the message's packet"
    );
}
