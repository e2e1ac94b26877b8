//! Interoperability with renetcode (crates.io), an independent implementation of
//! netcode 1.02, over UDP on loopback: a renetcode client to netproto's
//! netcode-only server ([`NetcodeServer`]), and netproto's [`NetcodeClient`] to a
//! renetcode server. Each direction connects with tokens of both generators
//! (renetcode's `ConnectToken::generate`, netproto's `generate_connect_token`, the
//! other side reading the 2048 bytes), one of them with no timeout (-1); exchanges
//! 50 payloads each way, byte for byte; and disconnects from each side, each seeing
//! it.
//!
//! Where the two disagree (netcode's STANDARD.md decides; the test pins both):
//!
//! * The connect token's public bytes: the standard's ("Connect Token") start with
//!   the version info and are zero-padded to 2048 bytes; renetcode's
//!   `ConnectToken::write` puts the client id (u64) first and does not pad, and its
//!   `read` expects that. The private part (sealed by the backend, opened by the
//!   server) is the same. The test converts between the two layouts
//!   ([`standard_from_renetcode`], [`renetcode_from_standard`]): netproto is right.
//! * Payload size: the standard's payload packet carries "[1,1200] bytes"
//!   ("Reading Encrypted Packets"); renetcode sends up to 1300 and empty ones too.
//!   netproto drops those whole and counts them: netproto is right.
//! * Disconnect copies: the standard sends "a number of redundant connection
//!   disconnect packets" (client and server state machines; the reference sends 10);
//!   renetcode sends one. On a lossy link its peer may miss it and time out instead.
//!
//! The wall clock only bounds how long a step may take (a loopback exchange takes
//! milliseconds); every assertion is on what arrived.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use netproto::connection::{
    ClientEvent, ClientId, ClientState, ConnectionConfig, DisconnectReason, ServerEvent,
};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token};
use netproto::transport::{NetcodeClient, NetcodeServer};
use renetcode::{
    ClientAuthentication, NetcodeClient as RenetClient, NetcodeServer as RenetServer,
    ServerAuthentication, ServerConfig as RenetServerConfig, ServerResult,
};

const PROTOCOL: u64 = 0x7265_6e65_7463_6f64;
const KEY: [u8; 32] = *b"an interop key, 32 bytes long!!!";
const PAYLOADS: usize = 50;

/// The token generators.
#[derive(Clone, Copy, Debug)]
enum Generator {
    Renetcode,
    Netproto,
}

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
}

/// The standard's 2048 token bytes from renetcode's: without the leading client id,
/// zero-padded.
fn standard_from_renetcode(bytes: &[u8]) -> Vec<u8> {
    let mut standard = bytes[8..].to_vec();
    assert!(standard.len() < 2048);
    standard.resize(2048, 0);
    standard
}

/// renetcode's token bytes from the standard's: the client id first.
fn renetcode_from_standard(client_id: u64, bytes: &[u8]) -> Vec<u8> {
    let mut renet = client_id.to_le_bytes().to_vec();
    renet.extend_from_slice(bytes);
    renet
}

/// The token's 2048 bytes (the standard's layout), made by `generator`.
fn token_bytes(generator: Generator, client_id: u64, timeout: i32, server: SocketAddr) -> Vec<u8> {
    match generator {
        Generator::Renetcode => {
            let token = renetcode::ConnectToken::generate(
                since_epoch(),
                PROTOCOL,
                300,
                client_id,
                timeout,
                vec![server],
                None,
                &KEY,
            )
            .expect("renetcode token");
            let mut bytes = Vec::new();
            token.write(&mut bytes).expect("written");
            assert_eq!(&bytes[..8], &client_id.to_le_bytes(), "renetcode's layout");
            assert_eq!(&bytes[8..21], b"NETCODE 1.02\0");
            standard_from_renetcode(&bytes)
        }
        Generator::Netproto => {
            let mut params = TokenParams::new(PROTOCOL, client_id, vec![server]);
            params.timeout_seconds = timeout;
            let token =
                generate_connect_token(&params, &Key::from_bytes(KEY), since_epoch().as_secs())
                    .expect("netproto token");
            token.write().expect("written").to_vec()
        }
    }
}

/// The payload `i` of a direction: sizes 1 to 1200 (the standard's range).
fn payload(direction: u8, i: usize) -> Vec<u8> {
    let len = 1 + (i * 97) % 1200;
    (0..len)
        .map(|j| (j as u8) ^ direction ^ (i as u8))
        .collect()
}

fn expected(direction: u8) -> Vec<Vec<u8>> {
    (0..PAYLOADS).map(|i| payload(direction, i)).collect()
}

/// Runs `step` every millisecond until it returns `true`; panics after 10 s.
fn until(what: &str, mut step: impl FnMut() -> bool) {
    let start = Instant::now();
    while !step() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: gave up after 10 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

// 1. A renetcode client to netproto's NetcodeServer --------------------------------

/// A renetcode client on its own socket.
struct Renet {
    client: RenetClient,
    socket: UdpSocket,
    last: Instant,
    received: Vec<Vec<u8>>,
}

impl Renet {
    fn new(client_id: u64, token: &[u8]) -> Self {
        // renetcode does not read the standard's layout.
        assert!(renetcode::ConnectToken::read(&mut &token[..]).is_err());
        let token = renetcode_from_standard(client_id, token);
        let token = renetcode::ConnectToken::read(&mut &token[..]).expect("renetcode reads it");
        let client = RenetClient::new(
            since_epoch(),
            ClientAuthentication::Secure {
                connect_token: token,
            },
        )
        .expect("client");
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        socket.set_nonblocking(true).expect("non-blocking");
        Self {
            client,
            socket,
            last: Instant::now(),
            received: Vec::new(),
        }
    }

    fn pump(&mut self) {
        let mut buf = [0u8; 1500];
        while let Ok((len, _)) = self.socket.recv_from(&mut buf) {
            if let Some(p) = self.client.process_packet(&mut buf[..len]) {
                self.received.push(p.to_vec());
            }
        }
        let dt = self.last.elapsed();
        self.last = Instant::now();
        if let Some((packet, to)) = self.client.update(dt) {
            self.socket.send_to(packet, to).expect("sent");
        }
    }

    fn send(&mut self, payload: &[u8]) {
        let (to, packet) = self
            .client
            .generate_payload_packet(payload)
            .expect("sealed");
        self.socket.send_to(packet, to).expect("sent");
    }
}

/// The server's received payloads and events until `done`.
fn serve(
    server: &mut NetcodeServer,
    got: &mut Vec<(ClientId, Vec<u8>)>,
    events: &mut Vec<ServerEvent<SocketAddr>>,
) {
    server.update().expect("update");
    while let Some((client, p)) = server.receive() {
        got.push((client, p.to_vec()));
    }
    events.extend(core::iter::from_fn(|| server.poll_event()));
}

#[test]
fn a_renetcode_client_talks_to_a_netproto_server() {
    let mut server = NetcodeServer::bind(
        "127.0.0.1:0",
        ConnectionConfig::new(PROTOCOL),
        Key::from_bytes(KEY),
    )
    .expect("bind");
    let address = server.local_addr().expect("bound");
    let mut sessions = 0;
    for (generator, timeout, server_ends) in [
        (Generator::Renetcode, 5, false),
        (Generator::Netproto, -1, true),
        (Generator::Renetcode, -1, true),
        (Generator::Netproto, 5, false),
    ] {
        let user = 100 + sessions;
        sessions += 1;
        let mut renet = Renet::new(user, &token_bytes(generator, user, timeout, address));
        let (mut got, mut events) = (Vec::new(), Vec::new());
        until("connect", || {
            renet.pump();
            serve(&mut server, &mut got, &mut events);
            renet.client.is_connected()
        });
        let Some(&ServerEvent::Connected {
            client, user_id, ..
        }) = events.first()
        else {
            panic!("{generator:?}: no connection event: {events:?}");
        };
        assert_eq!(user_id, user);
        // 50 payloads each way.
        for i in 0..PAYLOADS {
            renet.send(&payload(1, i));
            server.send(client, &payload(2, i)).expect("connected");
        }
        until("payloads", || {
            renet.pump();
            serve(&mut server, &mut got, &mut events);
            got.len() == PAYLOADS && renet.received.len() == PAYLOADS
        });
        let up: Vec<Vec<u8>> = got.iter().map(|(_, p)| p.clone()).collect();
        assert!(got.iter().all(|(c, _)| *c == client));
        assert_eq!(up, expected(1), "{generator:?}: renetcode to netproto");
        assert_eq!(
            renet.received,
            expected(2),
            "{generator:?}: netproto to renetcode"
        );

        // What renetcode sends beyond the standard: an empty payload and one of 1300
        // bytes. netproto drops both whole and counts them.
        let dropped = server
            .connection()
            .connection()
            .server_stats()
            .datagrams_dropped_malformed;
        renet.send(&[]);
        renet.send(&[7; 1300]);
        renet.send(b"after");
        until("the payload after", || {
            renet.pump();
            serve(&mut server, &mut got, &mut events);
            got.len() == PAYLOADS + 1
        });
        assert_eq!(got[PAYLOADS].1, b"after");
        let stats = server.connection().connection().server_stats();
        assert_eq!(stats.datagrams_dropped_malformed - dropped, 2, "{stats:?}");

        // Disconnect, from either side; each sees it.
        if server_ends {
            assert!(server.disconnect(client));
            until("renetcode sees the disconnect", || {
                renet.pump();
                serve(&mut server, &mut got, &mut events);
                renet.client.is_disconnected()
            });
            assert_eq!(
                renet.client.disconnect_reason(),
                Some(renetcode::DisconnectReason::DisconnectedByServer)
            );
        } else {
            let (to, packet) = renet.client.disconnect().expect("sealed");
            renet.socket.send_to(packet, to).expect("sent");
            until("netproto sees the disconnect", || {
                serve(&mut server, &mut got, &mut events);
                server.clients().count() == 0
            });
        }
        let reason = if server_ends {
            DisconnectReason::Local
        } else {
            DisconnectReason::PeerDisconnected
        };
        assert_eq!(
            events.last(),
            Some(&ServerEvent::Disconnected {
                client,
                address: renet.socket.local_addr().expect("bound"),
                reason
            }),
            "{generator:?}"
        );
    }
    assert_eq!(
        server
            .connection()
            .connection()
            .server_stats()
            .clients_accepted,
        sessions
    );
}

// 2. netproto's NetcodeClient to a renetcode server --------------------------------

/// A renetcode server on its own socket.
struct RenetHost {
    server: RenetServer,
    socket: UdpSocket,
    last: Instant,
    received: Vec<(u64, Vec<u8>)>,
    connected: Vec<u64>,
    disconnected: Vec<u64>,
}

impl RenetHost {
    fn new() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        socket.set_nonblocking(true).expect("non-blocking");
        let server = RenetServer::new(RenetServerConfig {
            current_time: since_epoch(),
            max_clients: 4,
            protocol_id: PROTOCOL,
            public_addresses: vec![socket.local_addr().expect("bound")],
            authentication: ServerAuthentication::Secure { private_key: KEY },
        });
        Self {
            server,
            socket,
            last: Instant::now(),
            received: Vec::new(),
            connected: Vec::new(),
            disconnected: Vec::new(),
        }
    }

    fn address(&self) -> SocketAddr {
        self.socket.local_addr().expect("bound")
    }

    /// Does what a result asks: sends its packet, records payloads and events.
    fn handle(
        result: ServerResult<'_, '_>,
        socket: &UdpSocket,
        received: &mut Vec<(u64, Vec<u8>)>,
        connected: &mut Vec<u64>,
        disconnected: &mut Vec<u64>,
    ) {
        match result {
            ServerResult::None => {}
            ServerResult::PacketToSend { addr, payload } => {
                socket.send_to(payload, addr).expect("sent");
            }
            ServerResult::Payload { client_id, payload } => {
                received.push((client_id, payload.to_vec()));
            }
            ServerResult::ClientConnected {
                client_id,
                addr,
                payload,
                ..
            } => {
                connected.push(client_id);
                socket.send_to(payload, addr).expect("sent");
            }
            ServerResult::ClientDisconnected {
                client_id,
                addr,
                payload,
            } => {
                disconnected.push(client_id);
                if let Some(payload) = payload {
                    socket.send_to(payload, addr).expect("sent");
                }
            }
        }
    }

    fn pump(&mut self) {
        let mut buf = [0u8; 1500];
        while let Ok((len, from)) = self.socket.recv_from(&mut buf) {
            let result = self.server.process_packet(from, &mut buf[..len]);
            Self::handle(
                result,
                &self.socket,
                &mut self.received,
                &mut self.connected,
                &mut self.disconnected,
            );
        }
        let dt = self.last.elapsed();
        self.last = Instant::now();
        self.server.update(dt);
        for id in self.server.clients_id() {
            let result = self.server.update_client(id);
            Self::handle(
                result,
                &self.socket,
                &mut self.received,
                &mut self.connected,
                &mut self.disconnected,
            );
        }
    }

    fn send(&mut self, client_id: u64, payload: &[u8]) {
        let (to, packet) = self
            .server
            .generate_payload_packet(client_id, payload)
            .expect("sealed");
        self.socket.send_to(packet, to).expect("sent");
    }
}

/// One round: the client's update, its payloads and events, the host's.
fn step(
    client: &mut NetcodeClient,
    host: &mut RenetHost,
    got: &mut Vec<Vec<u8>>,
    events: &mut Vec<ClientEvent>,
) {
    client.update().expect("update");
    while let Some(p) = client.receive() {
        got.push(p.to_vec());
    }
    events.extend(core::iter::from_fn(|| client.poll_event()));
    host.pump();
}

#[test]
fn a_netproto_client_talks_to_a_renetcode_server() {
    let mut host = RenetHost::new();
    let address = host.address();
    let mut sessions = 0;
    for (generator, timeout, server_ends) in [
        (Generator::Netproto, 5, false),
        (Generator::Renetcode, -1, true),
        (Generator::Netproto, -1, true),
        (Generator::Renetcode, 5, false),
    ] {
        let user = 200 + sessions;
        sessions += 1;
        let token = ConnectToken::read(&token_bytes(generator, user, timeout, address))
            .expect("netproto reads it");
        let mut client = NetcodeClient::connect(&token).expect("client");
        let mut got = Vec::new();
        let mut events = Vec::new();
        until("connect", || {
            step(&mut client, &mut host, &mut got, &mut events);
            client.is_connected() && host.connected.contains(&user)
        });
        for i in 0..PAYLOADS {
            client.send(&payload(3, i)).expect("connected");
            host.send(user, &payload(4, i));
        }
        until("payloads", || {
            step(&mut client, &mut host, &mut got, &mut events);
            host.received.len() == PAYLOADS && got.len() == PAYLOADS
        });
        assert!(host.received.iter().all(|(id, _)| *id == user));
        let up: Vec<Vec<u8>> = host.received.drain(..).map(|(_, p)| p).collect();
        assert_eq!(up, expected(3), "{generator:?}: netproto to renetcode");
        assert_eq!(got, expected(4), "{generator:?}: renetcode to netproto");

        if server_ends {
            // renetcode sends one disconnect packet; it is enough on loopback.
            let result = host.server.disconnect(user);
            RenetHost::handle(
                result,
                &host.socket,
                &mut host.received,
                &mut host.connected,
                &mut host.disconnected,
            );
            until("netproto sees the disconnect", || {
                step(&mut client, &mut host, &mut got, &mut events);
                !client.is_connected()
            });
            assert_eq!(
                client.state(),
                ClientState::Disconnected(DisconnectReason::PeerDisconnected)
            );
        } else {
            // netproto sends 10; renetcode frees the slot at the first and drops the
            // others (no session from that address).
            client.disconnect();
            assert_eq!(
                client.state(),
                ClientState::Disconnected(DisconnectReason::Local)
            );
            until("renetcode sees the disconnect", || {
                host.pump();
                host.disconnected.contains(&user)
            });
            assert!(!host.server.is_client_connected(user));
        }
        assert!(matches!(
            events.first(),
            Some(ClientEvent::Connected { .. })
        ));
        assert_eq!(
            host.disconnected.iter().filter(|&&id| id == user).count(),
            1
        );
    }
    assert_eq!(host.connected.len(), sessions as usize);
}
