//! A server app and a client app over UDP on 127.0.0.1, updated frame by frame: the
//! client's message reaches a server system, the server's reply a client system.

// Bevy system parameters (`ResMut<T>`, `MessageReader<T>`, `Query<T>`) are written
// without their lifetimes, as in Bevy's own documentation.
#![allow(elided_lifetimes_in_paths)]

use bevy_app::{App, Update};
use bevy_ecs::prelude::*;
use netproto::NetMessage;
use netproto::channel::ChannelId;
use netproto::transport::{Config, UdpClient, UdpClientEvent, UdpServer, UdpServerEvent};
use netproto_bevy::{
    ClientConnectionEvent, ClientPlugin, FromClient, FromServer, NetClient, NetServer,
    ServerConnectionEvent, ServerPlugin,
};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Line {
    #[net(max_len = 32)]
    text: String,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Line(Line),
}

const RELIABLE: ChannelId = ChannelId::RELIABLE;

fn line(text: &str) -> Msg {
    Msg::Line(Line { text: text.into() })
}

/// What each side saw.
#[derive(Resource, Default, Debug)]
struct Seen {
    connected: bool,
    received: Vec<String>,
}

/// The server answers every line with "pong: <line>".
fn server_answers(
    mut server: ResMut<NetServer<Msg>>,
    mut events: MessageReader<ServerConnectionEvent>,
    mut received: MessageReader<FromClient<Msg>>,
    mut seen: ResMut<Seen>,
) {
    for ServerConnectionEvent(event) in events.read() {
        if let UdpServerEvent::Connected { user_id, .. } = event {
            assert_eq!(*user_id, 7);
            seen.connected = true;
        }
    }
    for FromClient {
        client,
        channel,
        message: Msg::Line(Line { text }),
    } in received.read()
    {
        assert_eq!(*channel, RELIABLE);
        seen.received.push(text.clone());
        server
            .send(*client, RELIABLE, line(&format!("pong: {text}")))
            .expect("the client is connected");
    }
}

/// The client says "ping" once connected.
fn client_pings(
    mut client: ResMut<NetClient<Msg>>,
    mut events: MessageReader<ClientConnectionEvent>,
    mut received: MessageReader<FromServer<Msg>>,
    mut seen: ResMut<Seen>,
) {
    for ClientConnectionEvent(event) in events.read() {
        if let UdpClientEvent::Connected { .. } = event {
            seen.connected = true;
            client.send(RELIABLE, line("ping")).expect("connected");
        }
    }
    for FromServer {
        message: Msg::Line(Line { text }),
        ..
    } in received.read()
    {
        seen.received.push(text.clone());
    }
}

#[test]
fn a_message_goes_each_way_between_two_apps() {
    let server = UdpServer::<Msg>::bind_insecure_dev(
        "127.0.0.1:0",
        Config {
            max_clients: 4,
            ..Config::default()
        },
    )
    .expect("bind");
    let address = server.local_addr().expect("bound");
    let mut server_app = App::new();
    server_app
        .add_plugins(ServerPlugin::<Msg>::default())
        .insert_resource(NetServer(server))
        .init_resource::<Seen>()
        .add_systems(Update, server_answers);

    let client =
        UdpClient::<Msg>::connect_insecure_dev(address, 7, Config::default()).expect("client");
    let mut client_app = App::new();
    client_app
        .add_plugins(ClientPlugin::<Msg>::default())
        .insert_resource(NetClient(client))
        .init_resource::<Seen>()
        .add_systems(Update, client_pings);

    // Frames until the reply arrived; the bound only stops a broken build from
    // hanging (a few hundred frames of 1 ms are enough on loopback).
    for _ in 0..20_000 {
        server_app.update();
        client_app.update();
        if !client_app.world().resource::<Seen>().received.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let server_seen = server_app.world().resource::<Seen>();
    assert!(server_seen.connected);
    assert_eq!(server_seen.received, ["ping"]);
    let client_seen = client_app.world().resource::<Seen>();
    assert!(client_seen.connected);
    assert_eq!(client_seen.received, ["pong: ping"]);
}
