//! The same load on renet 2: the server is `RenetServer` with renet_netcode's
//! `NetcodeServerTransport` and secure connect tokens (every packet sealed), used as
//! its documentation shows. One renet_netcode server takes at most 1024 clients, so
//! above that the server process runs one instance per 1000 clients, each on its own
//! socket, in the same loop (a match is never split). The load generator's clients are
//! `RenetClient`s over renetcode's `NetcodeClient` on their own sockets: what
//! renet_netcode's client transport does, with the datagrams and bytes counted.

use std::io::Write as _;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use renet::{Bytes, ConnectionConfig, DefaultChannel, RenetClient, RenetServer, ServerEvent};
use renet_netcode::{
    ClientAuthentication, ConnectToken, NetcodeServerTransport, ServerAuthentication, ServerConfig,
};
use renetcode::{NETCODE_MAX_PACKET_BYTES, NetcodeClient};

use crate::common::*;

/// Clients per renet server instance (renetcode's limit is 1024).
const PER_INSTANCE: usize = 1000;

fn instances(clients: usize) -> usize {
    clients.div_ceil(PER_INSTANCE).max(1)
}

/// The instance that hosts `user` (by match, so that a match is never split).
fn instance_of(user: usize, instances: usize) -> usize {
    (user / MATCH_SIZE) % instances
}

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

struct Instance {
    server: RenetServer,
    transport: NetcodeServerTransport,
}

/// The game server, as [`netproto_side::serve`](crate::netproto_side::serve).
pub(crate) fn serve(params: &Params) -> Result<(), String> {
    let n = params.clients;
    let mut shards = Vec::new();
    let mut addrs = Vec::new();
    for _ in 0..instances(n) {
        let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        // The buffers netproto's `UdpServer` asks for. With the system's default
        // (208 KB on Linux) the socket overflows between two ticks once about 128
        // clients send two datagrams a tick, and the handshakes of the rest are
        // dropped: a comparison of CPU needs both servers to see every datagram.
        let sock = socket2::SockRef::from(&socket);
        sock.set_recv_buffer_size(netproto::transport::SOCKET_BUFFER_BYTES)
            .map_err(|e| e.to_string())?;
        sock.set_send_buffer_size(netproto::transport::SOCKET_BUFFER_BYTES)
            .map_err(|e| e.to_string())?;
        let addr = socket.local_addr().map_err(|e| e.to_string())?;
        let config = ServerConfig {
            current_time: since_epoch(),
            max_clients: PER_INSTANCE.min(n),
            protocol_id: RENET_PROTOCOL_ID,
            public_addresses: vec![addr],
            authentication: ServerAuthentication::Secure {
                private_key: params.key,
            },
        };
        let transport = NetcodeServerTransport::new(config, socket).map_err(|e| e.to_string())?;
        shards.push(Instance {
            server: RenetServer::new(ConnectionConfig::default()),
            transport,
        });
        addrs.push(addr.to_string());
    }
    println!("READY {}", addrs.join(","));
    std::io::stdout().flush().map_err(|e| e.to_string())?;

    let mut connected: Vec<(usize, u64)> = Vec::with_capacity(n);
    let mut app = AppCounts::default();
    let mut snap = snapshot(0);
    let mut meter = ServerMeter::new(params);
    let mut ticker = Ticker::new();
    let mut last = Instant::now();
    loop {
        if !meter.begin_tick(connected.len(), Io::default(), app) {
            break;
        }
        let now = Instant::now();
        let dt = now - last;
        last = now;
        for shard in &mut shards {
            shard.server.update(dt);
            shard
                .transport
                .update(dt, &mut shard.server)
                .map_err(|e| e.to_string())?;
        }
        for (s, shard) in shards.iter_mut().enumerate() {
            while let Some(event) = shard.server.get_event() {
                match event {
                    ServerEvent::ClientConnected { client_id } => connected.push((s, client_id)),
                    ServerEvent::ClientDisconnected { client_id, .. } => {
                        if let Some(i) = connected.iter().position(|&c| c == (s, client_id)) {
                            connected.swap_remove(i);
                        }
                    }
                }
            }
        }
        for &(s, id) in &connected {
            let server = &mut shards[s].server;
            while let Some(bytes) = server.receive_message(id, DefaultChannel::Unreliable) {
                if let Ok(LoadMessage::Input(_)) = netproto::decode::<LoadMessage>(&bytes) {
                    app.inputs += 1;
                }
            }
            while let Some(bytes) = server.receive_message(id, DefaultChannel::ReliableOrdered) {
                let Ok(LoadMessage::Event(_)) = netproto::decode::<LoadMessage>(&bytes) else {
                    continue;
                };
                app.events_in += 1;
                let user = id as usize;
                for mate in match_of(user, n) {
                    let mate = mate as u64;
                    if mate == id || !server.is_connected(mate) {
                        continue;
                    }
                    if server.can_send_message(mate, DefaultChannel::ReliableOrdered, bytes.len()) {
                        server.send_message(mate, DefaultChannel::ReliableOrdered, bytes.clone());
                        app.events_relayed += 1;
                    } else {
                        app.relay_refused += 1;
                    }
                }
            }
        }
        if ticker.total.is_multiple_of(SNAPSHOT_EVERY) {
            advance(&mut snap, ticker.total);
            let message = LoadMessage::Snapshot(snap.clone());
            let mut bytes = Bytes::from(netproto::encode(&message).map_err(|e| e.to_string())?);
            for &(s, id) in &connected {
                if params.snapshots == Snapshots::PerClient {
                    bytes = Bytes::from(netproto::encode(&message).map_err(|e| e.to_string())?);
                }
                let server = &mut shards[s].server;
                if server.can_send_message(id, DefaultChannel::Unreliable, bytes.len()) {
                    server.send_message(id, DefaultChannel::Unreliable, bytes.clone());
                    app.snapshots_sent += 1;
                } else {
                    app.snapshots_refused += 1;
                }
            }
        }
        for shard in &mut shards {
            shard.transport.send_packets(&mut shard.server);
        }
        meter.end_tick();
        ticker.wait();
    }
    let report = meter.finish(Io::default(), app, ticker.late);
    println!("REPORT {report}");
    Ok(())
}

/// One handshake's client: renet over renetcode's netcode client, on its own socket.
struct Conn {
    client: RenetClient,
    netcode: NetcodeClient,
    socket: UdpSocket,
}

impl Conn {
    /// A client for `user` of instance `server`, with a new token from the "backend".
    fn new(params: &Params, server: SocketAddr, user: usize) -> Result<Self, String> {
        let token = ConnectToken::generate(
            since_epoch(),
            RENET_PROTOCOL_ID,
            300,
            user as u64,
            10,
            vec![server],
            None,
            &params.key,
        )
        .map_err(|e| e.to_string())?;
        let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        socket.set_nonblocking(true).map_err(|e| e.to_string())?;
        let netcode = NetcodeClient::new(
            since_epoch(),
            ClientAuthentication::Secure {
                connect_token: token,
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            client: RenetClient::new(ConnectionConfig::default()),
            netcode,
            socket,
        })
    }
}

struct Player {
    user: usize,
    /// The current handshake or connection (none before the first, or once gone).
    conn: Option<Conn>,
    connected: bool,
    io: Io,
}

/// Sends `datagram` to `to` from `socket`, counting it in `io`.
fn send(socket: &UdpSocket, io: &mut Io, datagram: &[u8], to: SocketAddr) {
    if socket.send_to(datagram, to).is_ok() {
        io.datagrams_out += 1;
        io.bytes_out += datagram.len() as u64;
    }
}

/// The load generator, as [`netproto_side::load`](crate::netproto_side::load).
pub(crate) fn load(params: &Params) -> Result<(), String> {
    let n = params.clients;
    let k = instances(n);
    if params.servers.len() != k {
        return Err(format!(
            "{} server addresses for {k} instances",
            params.servers.len()
        ));
    }
    let mut players: Vec<Player> = (0..n)
        .map(|user| Player {
            user,
            conn: None,
            connected: false,
            io: Io::default(),
        })
        .collect();
    let mut delivery = Delivery::new(n);
    let mut meter = LoadMeter::new(params);
    let mut ramp = Ramp::new(n);
    let mut ticker = Ticker::new();
    let mut buf = vec![0u8; NETCODE_MAX_PACKET_BYTES];
    let mut last = Instant::now();
    while meter.phase != LoadPhase::Done {
        ramp.tick();
        if meter.phase == LoadPhase::Connecting {
            while let Some(user) = ramp.start() {
                let server = params.servers[instance_of(user, k)];
                players[user].conn = Some(Conn::new(params, server, user)?);
            }
        }
        let now = Instant::now();
        let dt = now - last;
        last = now;
        let events = meter.sending_events();
        let mut io = Io::default();
        let mut connected = 0;
        for p in &mut players {
            let Some(c) = p.conn.as_mut() else {
                io.add(p.io);
                continue;
            };
            // renet_netcode's NetcodeClientTransport::update, counting the datagrams.
            c.client.update(dt);
            let lost = c.client.is_disconnected() && p.connected;
            if let Some(reason) = c.netcode.disconnect_reason().map(|r| r.to_string()) {
                p.conn = None;
                ramp.ended(p.user, &mut p.connected, &mut meter.disconnected, &reason);
                io.add(p.io);
                continue;
            } else if lost {
                p.conn = None;
                p.connected = false;
                meter.disconnected += 1;
                io.add(p.io);
                continue;
            }
            if c.netcode.is_connected() {
                c.client.set_connected();
            } else if c.netcode.is_connecting() {
                c.client.set_connecting();
            }
            loop {
                let len = match c.socket.recv_from(&mut buf) {
                    Ok((len, _)) => len,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => continue,
                };
                p.io.datagrams_in += 1;
                p.io.bytes_in += len as u64;
                if let Some(payload) = c.netcode.process_packet(&mut buf[..len]) {
                    c.client.process_packet(payload);
                }
            }
            if let Some((packet, to)) = c.netcode.update(dt) {
                send(&c.socket, &mut p.io, packet, to);
            }
            // The game.
            if c.client.is_connected() {
                if !p.connected {
                    p.connected = true;
                    ramp.connected();
                }
                let message = LoadMessage::Input(input(p.user, ticker.total));
                if let Ok(bytes) = netproto::encode(&message) {
                    c.client.send_message(DefaultChannel::Unreliable, bytes);
                    meter.inputs_sent += 1;
                }
                if events && sends_event(p.user, ticker.total) {
                    let seq = delivery.sent[p.user];
                    let message = LoadMessage::Event(Event {
                        from: p.user as u16,
                        seq,
                    });
                    if let Ok(bytes) = netproto::encode(&message) {
                        c.client
                            .send_message(DefaultChannel::ReliableOrdered, bytes);
                        delivery.sent[p.user] += 1;
                    }
                }
                while let Some(bytes) = c.client.receive_message(DefaultChannel::Unreliable) {
                    if let Ok(LoadMessage::Snapshot(_)) = netproto::decode::<LoadMessage>(&bytes) {
                        meter.snapshots_received += 1;
                    }
                }
                while let Some(bytes) = c.client.receive_message(DefaultChannel::ReliableOrdered) {
                    if let Ok(LoadMessage::Event(event)) = netproto::decode::<LoadMessage>(&bytes) {
                        delivery.received(p.user, &event);
                    }
                }
            }
            // renet_netcode's NetcodeClientTransport::send_packets.
            for packet in c.client.get_packets_to_send() {
                if let Ok((to, datagram)) = c.netcode.generate_payload_packet(&packet) {
                    send(&c.socket, &mut p.io, datagram, to);
                }
            }
            io.add(p.io);
            connected += usize::from(p.connected);
        }
        meter.end_tick(connected, io, &delivery, ticker.total);
        ticker.wait();
    }
    for p in &mut players {
        let Some(c) = p.conn.as_mut() else {
            continue;
        };
        if let Ok((to, packet)) = c.netcode.disconnect() {
            send(&c.socket, &mut p.io, packet, to);
        }
    }
    let report = meter.finish(&delivery, &ramp, ticker.late);
    println!("REPORT {report}");
    Ok(())
}
