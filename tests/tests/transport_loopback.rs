//! The UDP transport over real loopback sockets (127.0.0.1, ports chosen by the
//! system): connecting, reliable and unreliable messages both ways, disconnecting,
//! denials with their reasons, and a flood of junk at the server. Every wait is
//! bounded in time.

#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::net::{SocketAddr, UdpSocket};
use std::thread::sleep;
use std::time::{Duration, Instant};

use netproto::channel::LayerConfig;
use netproto::connection::{ClientId, DenyReason, DisconnectReason};
use netproto::sim::Rng;
use netproto::transport::{UdpClient, UdpClientEvent, UdpServer, UdpServerEvent};
use netproto::{MessageSet, NetMessage};
use netproto_examples::game::{ChatMessage, GameMessage, PlayerInput};

/// `LayerConfig::default()`: channel 0 is reliable-ordered, 1 unreliable.
const RELIABLE: usize = 0;
const UNRELIABLE: usize = 1;

/// The longest any step may take.
const STEP_LIMIT: Duration = Duration::from_secs(3);

type Server = UdpServer<GameMessage>;
type Client = UdpClient<GameMessage>;

fn server(max_clients: usize) -> (Server, SocketAddr) {
    let server = Server::bind("127.0.0.1:0", max_clients, LayerConfig::default()).unwrap();
    let addr = server.local_addr().unwrap();
    (server, addr)
}

/// Runs both sides' updates every millisecond until `done` holds; panics after
/// [`STEP_LIMIT`].
fn pump<S: MessageSet, C: MessageSet>(
    server: &mut UdpServer<S>,
    clients: &mut [&mut UdpClient<C>],
    what: &str,
    mut done: impl FnMut(&mut UdpServer<S>, &mut [&mut UdpClient<C>]) -> bool,
) {
    let start = Instant::now();
    loop {
        server.update().unwrap();
        for client in clients.iter_mut() {
            client.update().unwrap();
        }
        if done(server, clients) {
            return;
        }
        assert!(start.elapsed() < STEP_LIMIT, "timed out waiting for {what}");
        sleep(Duration::from_millis(1));
    }
}

fn chat(from: u8, text: &str) -> GameMessage {
    GameMessage::Chat(ChatMessage {
        from,
        text: text.to_string(),
    })
}

fn input(tick: u8) -> GameMessage {
    GameMessage::Input(PlayerInput {
        tick,
        buttons: 3,
        aim_yaw: 0.5,
        aim_pitch: -0.25,
        move_x: 7,
        move_y: -7,
    })
}

/// Connects `client`, returning its slot as the server saw it.
fn connect(server: &mut Server, client: &mut Client) -> ClientId {
    let mut slot = None;
    let mut accepted = false;
    let local = client.local_addr().unwrap();
    pump(server, &mut [client], "the handshake", |server, clients| {
        for event in server.events() {
            if let UdpServerEvent::Connected { client, address } = event {
                assert_eq!(address, local);
                slot = Some(client);
            }
        }
        for event in clients[0].events() {
            assert!(
                matches!(event, UdpClientEvent::Connected { .. }),
                "unexpected {event:?}"
            );
            accepted = true;
        }
        accepted && slot.is_some()
    });
    slot.unwrap()
}

#[test]
fn connect_exchange_and_disconnect() {
    let (mut server, addr) = server(4);
    let mut client = Client::connect(addr, LayerConfig::default()).unwrap();
    // Queued during the handshake: goes out once connected.
    client.send(RELIABLE, chat(1, "early")).unwrap();
    let id = connect(&mut server, &mut client);
    assert!(client.is_connected());
    assert_eq!(server.connection().connected_clients(), 1);

    for i in 0..50u8 {
        client.send(RELIABLE, chat(1, &format!("up {i}"))).unwrap();
        client.send(UNRELIABLE, input(i % 64)).unwrap();
        server
            .send(id, RELIABLE, chat(0, &format!("down {i}")))
            .unwrap();
        server.send(id, UNRELIABLE, input(i % 64)).unwrap();
    }
    let (mut up, mut down) = (Vec::new(), Vec::new());
    let (mut up_inputs, mut down_inputs) = (0, 0);
    pump(
        &mut server,
        &mut [&mut client],
        "messages",
        |server, clients| {
            while let Some(m) = server.receive(id, RELIABLE) {
                up.push(m);
            }
            while let Some(m) = server.receive(id, UNRELIABLE) {
                assert!(matches!(m, GameMessage::Input(_)), "{m:?}");
                up_inputs += 1;
            }
            while let Some(m) = clients[0].receive(RELIABLE) {
                down.push(m);
            }
            while let Some(m) = clients[0].receive(UNRELIABLE) {
                assert!(matches!(m, GameMessage::Input(_)), "{m:?}");
                down_inputs += 1;
            }
            up.len() == 51 && down.len() == 50 && up_inputs > 0 && down_inputs > 0
        },
    );
    // Reliable-ordered: every message, in order.
    assert_eq!(up[0], chat(1, "early"));
    for i in 0..50 {
        assert_eq!(up[i + 1], chat(1, &format!("up {i}")));
        assert_eq!(down[i], chat(0, &format!("down {i}")));
    }
    // Loopback loses nothing; the channel may still drop unreliable messages that do
    // not fit the packets the send rate allows, never deliver more.
    assert!(up_inputs <= 50 && down_inputs <= 50);

    // Everything reliable is acked: the send queues drain.
    pump(
        &mut server,
        &mut [&mut client],
        "acks",
        |server, clients| {
            clients[0].layer().send_queue_len(RELIABLE) == 0
                && server
                    .layer(id)
                    .is_some_and(|l| l.send_queue_len(RELIABLE) == 0)
        },
    );

    client.disconnect();
    assert_eq!(
        client.poll_event(),
        Some(UdpClientEvent::Disconnected {
            reason: DisconnectReason::Local
        })
    );
    assert!(client.send(RELIABLE, chat(1, "late")).is_err());
    let local = client.local_addr().unwrap();
    let mut gone = None;
    pump(
        &mut server,
        &mut [&mut client],
        "the disconnect",
        |server, _| {
            for event in server.events() {
                if let UdpServerEvent::Disconnected {
                    client,
                    address,
                    reason,
                } = event
                {
                    gone = Some((client, address, reason));
                }
            }
            gone.is_some()
        },
    );
    assert_eq!(gone, Some((id, local, DisconnectReason::PeerDisconnected)));
    assert_eq!(server.connection().connected_clients(), 0);
    assert!(server.send(id, RELIABLE, chat(0, "to nobody")).is_err());
}

#[test]
fn a_full_server_denies() {
    let (mut server, addr) = server(1);
    let mut first = Client::connect(addr, LayerConfig::default()).unwrap();
    connect(&mut server, &mut first);
    let mut second = Client::connect(addr, LayerConfig::default()).unwrap();
    let mut denied = None;
    pump(
        &mut server,
        &mut [&mut first, &mut second],
        "the denial",
        |_, clients| {
            if let Some(event) = clients[1].poll_event() {
                denied = Some(event);
            }
            denied.is_some()
        },
    );
    assert_eq!(
        denied,
        Some(UdpClientEvent::Denied {
            reason: DenyReason::ServerFull,
            server_protocol_id: GameMessage::FINGERPRINT,
        })
    );
    assert!(first.is_connected());
    assert_eq!(server.connection().connected_clients(), 1);
}

#[test]
fn a_silent_client_times_out_and_frees_its_slot() {
    // One slot, and a timeout of half a second on the server.
    let mut config = netproto::connection::ServerConfig::new(
        netproto::connection::ConnectionConfig::new(GameMessage::FINGERPRINT),
        netproto::transport::random_key(),
    );
    config.max_clients = 1;
    config.connection.timeout = 0.5;
    let mut server = Server::bind_with("127.0.0.1:0", config, LayerConfig::default()).unwrap();
    let addr = server.local_addr().unwrap();
    let mut silent = Client::connect(addr, LayerConfig::default()).unwrap();
    let slot = connect(&mut server, &mut silent);

    // The client stops updating (a crashed or frozen game): nothing more reaches the
    // server, which frees the slot after its timeout, not before.
    let start = Instant::now();
    let mut gone = None;
    pump(
        &mut server,
        &mut [],
        "the timeout",
        |server, _: &mut [&mut Client]| {
            for event in server.events() {
                gone = Some((event, start.elapsed()));
            }
            gone.is_some()
        },
    );
    let (event, after) = gone.unwrap();
    assert_eq!(
        event,
        UdpServerEvent::Disconnected {
            client: slot,
            address: silent.local_addr().unwrap(),
            reason: DisconnectReason::TimedOut,
        }
    );
    assert!(after >= Duration::from_millis(400), "freed after {after:?}");
    assert_eq!(server.connection().connected_clients(), 0);

    // The slot takes a new client.
    let mut next = Client::connect(addr, LayerConfig::default()).unwrap();
    connect(&mut server, &mut next);
    assert!(next.is_connected());
}

#[test]
fn an_idle_connection_in_bad_mode_keeps_to_ten_packets_a_second() {
    // A connection starts in bad mode (10 packets per second) for 4 s. With the
    // keep-alive interval equal to the send interval, a keep-alive sent beside each
    // payload packet once doubled that rate.
    let (mut server, addr) = server(1);
    let mut client = Client::connect(addr, LayerConfig::default()).unwrap();
    connect(&mut server, &mut client);
    let (client_before, server_before) = (
        client.counters().datagrams_sent,
        server.counters().datagrams_sent,
    );
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        server.update().unwrap();
        client.update().unwrap();
        sleep(Duration::from_millis(1));
    }
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(
        client.connection().congestion().unwrap().mode(),
        netproto::connection::Mode::Bad
    );
    // The congestion rate, read on the same clock: at most one packet per 0.1 s, plus
    // the one a window can start with.
    let limit = (elapsed * 10.0).floor() as u64 + 1;
    let client_sent = client.counters().datagrams_sent - client_before;
    let server_sent = server.counters().datagrams_sent - server_before;
    assert!(
        client_sent <= limit,
        "client sent {client_sent} > {limit} in {elapsed:.2} s"
    );
    assert!(
        server_sent <= limit,
        "server sent {server_sent} > {limit} in {elapsed:.2} s"
    );
    // Idle, it still sends: keep-alives or payload packets carry the acks.
    assert!(client_sent > 0 && server_sent > 0);
}

/// Another build's message set: the same chat message, one type fewer.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum OtherMessage {
    Chat(ChatMessage),
}

#[test]
fn a_different_message_set_is_denied_with_the_reason() {
    assert_ne!(OtherMessage::FINGERPRINT, GameMessage::FINGERPRINT);
    let (mut server, addr) = server(4);
    let mut client = UdpClient::<OtherMessage>::connect(addr, LayerConfig::default()).unwrap();
    let mut denied = None;
    pump(
        &mut server,
        &mut [&mut client],
        "the denial",
        |_, clients| {
            if let Some(event) = clients[0].poll_event() {
                denied = Some(event);
            }
            denied.is_some()
        },
    );
    let Some(UdpClientEvent::Denied {
        reason,
        server_protocol_id,
    }) = denied
    else {
        panic!("expected a denial, got {denied:?}");
    };
    assert_eq!(reason, DenyReason::ProtocolMismatch);
    assert_eq!(server_protocol_id, GameMessage::FINGERPRINT);
    assert!(reason.to_string().contains("different message schemas"));
    assert!(!client.is_connected());
    assert_eq!(server.connection().connected_clients(), 0);
    assert!(server.poll_event().is_none());
}

#[test]
fn a_junk_flood_creates_no_state_and_connected_clients_keep_working() {
    let (mut server, addr) = server(4);
    let mut client = Client::connect(addr, LayerConfig::default()).unwrap();
    let id = connect(&mut server, &mut client);

    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = Rng::new(0x6a75_6e6b);
    let mut bytes = vec![0u8; 1400];
    let start = Instant::now();
    let mut sent = 0;
    for round in 0..20 {
        for _ in 0..250 {
            let len = match rng.below(4) {
                0 => rng.below(16) as usize,
                1 => 64,                       // request size
                2 => 33,                       // response size
                _ => rng.below(1400) as usize, // anything
            };
            let datagram = &mut bytes[..len];
            rng.fill_bytes(datagram);
            if let Some(kind) = datagram.first_mut() {
                // Mostly valid kind bytes, so that the junk reaches every branch.
                *kind = rng.below(9) as u8;
            }
            if junk.send_to(datagram, addr).is_ok() {
                sent += 1;
            }
        }
        // The game goes on during the flood.
        server.update().unwrap();
        client.update().unwrap();
        client
            .send(RELIABLE, chat(2, &format!("during {round}")))
            .unwrap();
    }
    assert!(sent > 0);

    let mut received = Vec::new();
    pump(
        &mut server,
        &mut [&mut client],
        "messages after the flood",
        |server, _| {
            while let Some(m) = server.receive(id, RELIABLE) {
                received.push(m);
            }
            received.len() == 20
        },
    );
    for (i, m) in received.iter().enumerate() {
        assert_eq!(*m, chat(2, &format!("during {i}")));
    }
    assert_eq!(server.connection().connected_clients(), 1);
    assert!(client.is_connected());
    assert!(
        server
            .events()
            .all(|e| !matches!(e, UdpServerEvent::Connected { .. })),
        "junk must not connect anybody"
    );
    assert!(server.counters().datagrams_received > 0);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_full_receive_queue_refuses_packets_and_nothing_is_lost() {
    use netproto::channel::ChannelConfig;
    // The reliable channel holds at most 8 undelivered messages (both sides use the
    // same layer configuration, as the two builds of one game do).
    let small = LayerConfig::with_channels(vec![
        ChannelConfig::reliable().with_queues(256, 8),
        ChannelConfig::unreliable(),
    ]);
    let mut server = Server::bind("127.0.0.1:0", 2, small.clone()).unwrap();
    let addr = server.local_addr().unwrap();
    let mut client = Client::connect(addr, small).unwrap();
    let id = connect(&mut server, &mut client);
    for i in 0..100 {
        client.send(RELIABLE, chat(3, &format!("m {i}"))).unwrap();
    }
    // The game does not read for a while: packets beyond the queue are refused
    // (not acked), not dropped after an ack.
    pump(&mut server, &mut [&mut client], "a refusal", |server, _| {
        server.counters().payloads_refused > 0
    });
    let layer = server.layer(id).unwrap();
    assert!(
        layer.counters().packets_refused > 0,
        "{:?}",
        layer.counters()
    );
    let mut received = Vec::new();
    pump(
        &mut server,
        &mut [&mut client],
        "every message",
        |server, _| {
            while let Some(m) = server.receive(id, RELIABLE) {
                received.push(m);
            }
            received.len() == 100
        },
    );
    for (i, m) in received.iter().enumerate() {
        assert_eq!(*m, chat(3, &format!("m {i}")));
    }
    assert!(client.is_connected());
}
