//! The UDP transport over real loopback sockets (127.0.0.1, ports chosen by the
//! system), one smoke test per behaviour: a client with a connect token from the
//! backend's key (or the insecure development key) connects, messages go both ways
//! and a disconnect is seen; a full server denies; a token sealed with another key,
//! or made for another build, gets no connection; a silent client times out and its
//! slot takes a new one; a junk flood connects nobody while the game goes on; a full
//! receive queue refuses packets without losing messages; an update reads at most
//! `MAX_DATAGRAMS_PER_UPDATE` datagrams. Every wait is bounded by a deadline that only
//! stops a hung test (a minute: a loaded machine never fails a step by being slow);
//! nothing else is timed. The protocol's behaviour and timings are asserted on virtual
//! time: `connection_protocol.rs`, `connection_flood.rs` and `transport_stack.rs`.

use std::net::{SocketAddr, UdpSocket};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use netproto::channel::{ChannelId, LayerConfig};
use netproto::connection::ServerConfig;
use netproto::connection::{
    ClientId, ClientState, ConnectionConfigError, DenyReason, DisconnectReason,
};
use netproto::internals::netcode::CONNECTION_REQUEST_BYTES;
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token};
use netproto::sim::Rng;
use netproto::transport::{
    Config, MAX_DATAGRAMS_PER_UPDATE, TransportError, UdpClient, UdpClientEvent, UdpServer,
    UdpServerEvent,
};
use netproto::{MessageSet, NetMessage};
use netproto_examples::game::{ChatMessage, GameMessage, PlayerInput};

/// `LayerConfig::default()`: channel 0 is reliable-ordered, 1 unreliable.
const RELIABLE: ChannelId = ChannelId::RELIABLE;
const UNRELIABLE: ChannelId = ChannelId::UNRELIABLE;

/// The longest any step may take before the test is declared hung (every step takes
/// milliseconds, or the 1-second timeout of a token, when the machine is idle).
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// The backend's private key, shared with the servers.
const KEY: Key = Key::from_bytes([0x42; 32]);

type Server = UdpServer<GameMessage>;
type Client = UdpClient<GameMessage>;

fn server(max_clients: usize) -> (Server, SocketAddr) {
    let server = Server::bind(
        "127.0.0.1:0",
        KEY,
        Config {
            max_clients,
            ..Config::default()
        },
    )
    .expect("bind a loopback port");
    let addr = server.local_addr().expect("bound");
    (server, addr)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// A token of the backend holding `key` for `client_id` to connect to `server`,
/// speaking `M` over the default layer, with a connection timeout of `timeout`
/// seconds.
fn token<M: MessageSet>(
    key: &Key,
    client_id: u64,
    server: SocketAddr,
    timeout: i32,
) -> ConnectToken {
    let protocol_id = netproto::protocol_id::<M>(&LayerConfig::default());
    let mut params = TokenParams::new(protocol_id, client_id, vec![server]);
    params.timeout_seconds = timeout;
    generate_connect_token(&params, key, unix_now()).expect("a token")
}

fn client(server: SocketAddr, client_id: u64) -> Client {
    Client::connect(
        &token::<GameMessage>(&KEY, client_id, server, 10),
        Config::default(),
    )
    .expect("a client")
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
        server.update().expect("server update");
        for client in clients.iter_mut() {
            client.update().expect("client update");
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
    let local = client.local_addr().expect("bound");
    pump(server, &mut [client], "the handshake", |server, clients| {
        for event in server.events() {
            if let UdpServerEvent::Connected {
                client, address, ..
            } = event
            {
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
    slot.expect("connected")
}

/// Runs `server` and `client` until the client's handshake ends; returns its state.
/// How a client of `M` with a one-second token for `server` alone gives up.
fn no_reply<M: MessageSet>(server: SocketAddr) -> DisconnectReason {
    DisconnectReason::NoReply {
        server: Some(server),
        servers: 1,
        waited: Duration::from_secs(1),
        protocol_id: netproto::protocol_id::<M>(&LayerConfig::default()),
    }
}

fn until_given_up<C: MessageSet>(server: &mut Server, client: &mut UdpClient<C>) -> ClientState {
    pump(
        server,
        &mut [client],
        "the handshake to end",
        |_, clients| !clients[0].connection().is_connecting(),
    );
    client.state()
}

#[test]
fn connect_exchange_and_disconnect() {
    let (mut server, addr) = server(4);
    let mut client = client(addr, 77);
    // Queued during the handshake: goes out once connected.
    client.send(RELIABLE, chat(1, "early")).expect("queued");
    let id = connect(&mut server, &mut client);
    assert!(client.is_connected());
    assert_eq!(server.connection().connected_clients(), 1);
    assert_eq!(server.connection().user_id(id), Some(77));

    for i in 0..50u8 {
        client
            .send(RELIABLE, chat(1, &format!("up {i}")))
            .expect("queued");
        client.send(UNRELIABLE, input(i % 64)).expect("queued");
        server
            .send(id, RELIABLE, chat(0, &format!("down {i}")))
            .expect("queued");
        server.send(id, UNRELIABLE, input(i % 64)).expect("queued");
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
    // The channel may drop unreliable messages that do not fit the packets the send
    // rate allows, never deliver more.
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
    let local = client.local_addr().expect("bound");
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

    // The server disconnects a second client: it sees it.
    let mut second = self::client(addr, 78);
    let id = connect(&mut server, &mut second);
    assert!(server.disconnect(id));
    pump(
        &mut server,
        &mut [&mut second],
        "the server's disconnect",
        |_, clients| !clients[0].is_connected(),
    );
    assert_eq!(
        second.state(),
        ClientState::Disconnected(DisconnectReason::PeerDisconnected)
    );
    assert_eq!(server.connection().connected_clients(), 0);
}

#[test]
fn insecure_dev_tokens_connect_to_an_insecure_dev_server() {
    let mut server = Server::bind_insecure_dev(
        "127.0.0.1:0",
        Config {
            max_clients: 2,
            ..Config::default()
        },
    )
    .expect("bind");
    let addr = server.local_addr().expect("bound");
    let mut client = Client::connect_insecure_dev(addr, 5, Config::default()).expect("a client");
    let id = connect(&mut server, &mut client);
    assert_eq!(server.connection().user_id(id), Some(5));
    client.send(RELIABLE, chat(5, "hi")).expect("queued");
    server.send(id, RELIABLE, chat(0, "hello")).expect("queued");
    let (mut up, mut down) = (None, None);
    pump(
        &mut server,
        &mut [&mut client],
        "messages",
        |server, clients| {
            up = up.take().or_else(|| server.receive(id, RELIABLE));
            down = down.take().or_else(|| clients[0].receive(RELIABLE));
            up.is_some() && down.is_some()
        },
    );
    assert_eq!(up, Some(chat(5, "hi")));
    assert_eq!(down, Some(chat(0, "hello")));

    // A server with a real key ignores development tokens.
    let (mut real, real_addr) = self::server(2);
    let mut dev = UdpClient::<GameMessage>::connect(
        &token::<GameMessage>(
            &netproto::transport::insecure_dev::INSECURE_DEV_KEY,
            6,
            real_addr,
            1,
        ),
        Config::default(),
    )
    .expect("a client");
    assert_eq!(
        until_given_up(&mut real, &mut dev),
        ClientState::Disconnected(no_reply::<GameMessage>(real_addr))
    );
    assert_eq!(real.connection().connected_clients(), 0);
    assert!(
        real.connection()
            .server_stats()
            .requests_dropped_unauthenticated
            > 0
    );
}

#[test]
fn a_full_server_denies() {
    let (mut server, addr) = server(1);
    let mut first = client(addr, 1);
    connect(&mut server, &mut first);
    let mut second = client(addr, 2);
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
        })
    );
    assert_eq!(second.state(), ClientState::Denied(DenyReason::ServerFull));
    assert!(first.is_connected());
    assert_eq!(server.connection().connected_clients(), 1);
    assert!(server.connection().server_stats().denials_sent >= 1);
}

#[test]
fn a_token_sealed_with_another_key_gets_no_connection() {
    let (mut server, addr) = server(4);
    let other_key = Key::from_bytes([0x24; 32]);
    let mut client = Client::connect(
        &token::<GameMessage>(&other_key, 1, addr, 1),
        Config::default(),
    )
    .expect("a client");
    assert_eq!(
        until_given_up(&mut server, &mut client),
        ClientState::Disconnected(no_reply::<GameMessage>(addr))
    );
    let c = *server.connection().server_stats();
    assert!(c.requests_dropped_unauthenticated > 0);
    assert_eq!(c.requests_dropped_unauthenticated, c.datagrams_received);
    assert_eq!((c.challenges_sent, c.clients_accepted), (0, 0));
    assert_eq!(server.transport_stats().datagrams_sent, 0, "no reply");
    assert_eq!(server.connection().pending_handshakes(), 0);
    assert_eq!(server.connection().remembered_tokens(), 0);
    assert_eq!(server.connection().connected_clients(), 0);
    assert!(server.poll_event().is_none());
}

#[test]
fn a_silent_client_times_out_and_frees_its_slot() {
    // One slot, and a token with a 1-second timeout.
    let (mut server, addr) = server(1);
    let mut silent = Client::connect(&token::<GameMessage>(&KEY, 1, addr, 1), Config::default())
        .expect("a client");
    let slot = connect(&mut server, &mut silent);

    // The client stops updating (a crashed or frozen game): nothing more reaches the
    // server, which frees the slot after the timeout.
    let mut gone = None;
    pump(
        &mut server,
        &mut [],
        "the timeout",
        |server, _: &mut [&mut Client]| {
            for event in server.events() {
                gone = Some(event);
            }
            gone.is_some()
        },
    );
    assert_eq!(
        gone,
        Some(UdpServerEvent::Disconnected {
            client: slot,
            address: silent.local_addr().expect("bound"),
            reason: DisconnectReason::TimedOut,
        })
    );
    assert_eq!(server.connection().connected_clients(), 0);
    assert_eq!(server.connection().server_stats().clients_timed_out, 1);

    // The slot takes a new client.
    let mut next = client(addr, 2);
    assert_eq!(connect(&mut server, &mut next), slot);
    assert!(next.is_connected());
}

/// Another build's message set: the same chat message, one type fewer.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum OtherMessage {
    Chat(ChatMessage),
}

#[test]
fn another_build_gets_no_connection() {
    let (mut server, addr) = server(4);
    // The backend's token for this build: the other build refuses it.
    let ours = token::<GameMessage>(&KEY, 1, addr, 1);
    match UdpClient::<OtherMessage>::connect(&ours, Config::default()) {
        Err(TransportError::Connection(ConnectionConfigError::ProtocolMismatch {
            token,
            ours,
        })) => {
            assert_eq!(
                token,
                netproto::protocol_id::<GameMessage>(&LayerConfig::default())
            );
            assert_eq!(
                ours,
                netproto::protocol_id::<OtherMessage>(&LayerConfig::default())
            );
        }
        other => panic!("expected a protocol mismatch, got {other:?}"),
    }
    // A token for the other build: this server ignores its requests.
    let theirs = token::<OtherMessage>(&KEY, 2, addr, 1);
    let mut client =
        UdpClient::<OtherMessage>::connect(&theirs, Config::default()).expect("a client");
    assert_eq!(
        until_given_up(&mut server, &mut client),
        ClientState::Disconnected(no_reply::<OtherMessage>(addr))
    );
    let c = *server.connection().server_stats();
    assert!(c.requests_dropped_wrong_protocol > 0);
    assert_eq!(c.requests_dropped_wrong_protocol, c.datagrams_received);
    assert_eq!(server.transport_stats().datagrams_sent, 0, "no reply");
    assert_eq!(server.connection().connected_clients(), 0);
    assert!(server.poll_event().is_none());
}

#[test]
fn a_junk_flood_connects_nobody_and_connected_clients_keep_working() {
    let (mut server, addr) = server(4);
    let mut client = client(addr, 1);
    let id = connect(&mut server, &mut client);

    let junk = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut rng = Rng::new(0x6a75_6e6b);
    let mut bytes = vec![0u8; 1400];
    let mut sent = 0;
    for round in 0..20 {
        for _ in 0..250 {
            let len = match rng.below(4) {
                0 => rng.below(16) as usize,
                1 => CONNECTION_REQUEST_BYTES,
                2 => 1 + 8 + 8 + 300 + 16, // a response's size
                _ => rng.below(1400) as usize,
            };
            let datagram = &mut bytes[..len];
            rng.fill_bytes(datagram);
            if let Some(prefix) = datagram.first_mut() {
                // Mostly valid packet types, so that the junk reaches every branch.
                *prefix = (*prefix & 0xf0) | rng.below(8) as u8;
            }
            if junk.send_to(datagram, addr).is_ok() {
                sent += 1;
            }
        }
        // The game goes on during the flood.
        server.update().expect("server update");
        client.update().expect("client update");
        client
            .send(RELIABLE, chat(2, &format!("during {round}")))
            .expect("queued");
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
    let c = *server.connection().server_stats();
    assert_eq!(c.clients_accepted, 1);
    assert_eq!((c.challenges_sent, c.denials_sent), (1, 0));
    assert_eq!(server.connection().pending_handshakes(), 0);
    assert_eq!(
        server.connection().remembered_tokens(),
        1,
        "the client's own"
    );
    assert!(server.transport_stats().datagrams_received > 0);
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
    let config = Config {
        channels: small,
        max_clients: 2,
        ..Config::default()
    };
    let mut server = Server::bind("127.0.0.1:0", KEY, config.clone()).expect("bind");
    let addr = server.local_addr().expect("bound");
    // The protocol id covers the channels: the token is for this layer.
    let protocol_id = netproto::protocol_id::<GameMessage>(&config.channels);
    let mut params = TokenParams::new(protocol_id, 1, vec![addr]);
    params.timeout_seconds = 10;
    let token = generate_connect_token(&params, &KEY, unix_now()).expect("a token");
    let mut client = Client::connect(&token, config).expect("a client");
    let id = connect(&mut server, &mut client);
    for i in 0..100 {
        client
            .send(RELIABLE, chat(3, &format!("m {i}")))
            .expect("queued");
    }
    // The game does not read for a while: packets beyond the queue are refused
    // (not acked), not dropped after an ack.
    pump(&mut server, &mut [&mut client], "a refusal", |server, _| {
        server.transport_stats().payloads_dropped_by_layer > 0
    });
    let layer = server.layer(id).expect("connected");
    assert!(
        layer.stats().payloads_dropped_receive_queue_full > 0,
        "{:?}",
        layer.stats()
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

#[test]
fn an_update_reads_at_most_max_datagrams_per_update() {
    // A server socket whose receive buffer holds more than one update's worth of
    // datagrams (the default buffer holds a few hundred small ones).
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket2::SockRef::from(&socket)
        .set_recv_buffer_size(4 << 20)
        .expect("set the receive buffer size");
    let addr = socket.local_addr().expect("bound");
    let protocol_id = netproto::protocol_id::<GameMessage>(&LayerConfig::default());
    let config = ServerConfig::new(
        netproto::connection::ConnectionConfig::new(protocol_id),
        KEY,
        vec![addr],
    );
    let mut server = Server::with_socket(socket, config, LayerConfig::default()).expect("a server");

    // One and a half updates' worth of junk, sent before the server reads anything.
    let junk = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let flood = MAX_DATAGRAMS_PER_UPDATE * 3 / 2;
    for i in 0..flood {
        junk.send_to(&[0xff, i as u8], addr).expect("loopback send");
    }
    // The first update takes exactly the cap; the rest waits for the next updates.
    server.update().expect("server update");
    let first = server.transport_stats().datagrams_received;
    let mut total = first;
    for _ in 0..10 {
        server.update().expect("server update");
        let now = server.transport_stats().datagrams_received;
        assert!(now - total <= MAX_DATAGRAMS_PER_UPDATE as u64);
        total = now;
    }
    assert_eq!(
        total, flood as u64,
        "the socket buffer kept every datagram (raise net.core.rmem_max if not)"
    );
    assert_eq!(
        first, MAX_DATAGRAMS_PER_UPDATE as u64,
        "one update read {first}"
    );
    // Junk from an unknown address: dropped, unanswered.
    assert_eq!(server.transport_stats().datagrams_sent, 0);
    assert_eq!(server.connection().server_stats().datagrams_received, total);
}
