//! The load on netproto: a `UdpServer` and `UdpClient`s with tokens sealed by a key the
//! "backend" (the load generator) shares with the server.

use std::io::Write as _;
use std::net::SocketAddr;

use netproto::connection::{ConnectionConfig, ServerConfig};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token};
use netproto::transport::{UdpClient, UdpClientEvent, UdpServer, UdpServerEvent};

use crate::common::*;

fn protocol_id() -> u64 {
    netproto::protocol_id::<LoadMessage>(&layer_config())
}

fn io_of(c: &netproto::transport::TransportStats) -> Io {
    Io {
        datagrams_in: c.datagrams_received,
        bytes_in: c.bytes_received,
        datagrams_out: c.datagrams_sent,
        bytes_out: c.bytes_sent,
    }
}

/// Both sides' connection settings: 120 packets a second in good mode and 30 in bad
/// (`CongestionConfig::bulk()`, the library's defaults when the published figures were
/// measured), so that every 60 Hz input is a datagram as with renet; `--rate` sets the
/// good-mode rate.
fn connection_config(params: &Params) -> ConnectionConfig {
    let mut config = ConnectionConfig::new(protocol_id());
    config.congestion = netproto::connection::CongestionConfig::bulk();
    if let Some(rate) = params.rate {
        config.congestion.good_rate = rate;
    }
    config
}

/// The game server: relays each event to the sender's match, sends every client a
/// snapshot at 20 Hz, takes the inputs.
pub(crate) fn serve(params: &Params) -> Result<(), String> {
    let key = Key::from_bytes(params.key);
    let socket_addr: SocketAddr = "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?;
    let probe = std::net::UdpSocket::bind(socket_addr).map_err(|e| e.to_string())?;
    let addr = probe.local_addr().map_err(|e| e.to_string())?;
    drop(probe);
    let mut config = ServerConfig::new(connection_config(params), key, vec![addr]);
    config.max_clients = params.clients;
    config.pending_handshakes = 256;
    let socket = std::net::UdpSocket::bind(addr).map_err(|e| e.to_string())?;
    let mut server = UdpServer::<LoadMessage>::with_socket(socket, config, layer_config())
        .map_err(|e| e.to_string())?;
    println!("READY {addr}");
    std::io::stdout().flush().map_err(|e| e.to_string())?;

    let n = params.clients;
    let mut roster = Roster::new(n);
    let mut app = AppCounts::default();
    let mut snap = snapshot(0);
    let mut meter = ServerMeter::new(params);
    let mut ticker = Ticker::new();
    loop {
        let io = io_of(server.transport_stats());
        if !meter.begin_tick(roster.connected().len(), io, app) {
            break;
        }
        server.update().map_err(|e| e.to_string())?;
        while let Some(event) = server.poll_event() {
            match event {
                UdpServerEvent::Connected {
                    client, user_id, ..
                } => roster.connect(client, user_id),
                UdpServerEvent::Disconnected { client, .. } => roster.disconnect(client),
                _ => {}
            }
        }
        for &client in roster.connected() {
            while let Some(message) = server.receive(client, UNRELIABLE) {
                if let LoadMessage::Input(_) = message {
                    app.inputs += 1;
                }
            }
            while let Some(message) = server.receive(client, RELIABLE) {
                let LoadMessage::Event(event) = message else {
                    continue;
                };
                app.events_in += 1;
                for to in roster.mates(client) {
                    match server.send(to, RELIABLE, LoadMessage::Event(event.clone())) {
                        Ok(()) => app.events_relayed += 1,
                        Err(_) => app.relay_refused += 1,
                    }
                }
            }
        }
        if ticker.total.is_multiple_of(SNAPSHOT_EVERY) {
            advance(&mut snap, ticker.total);
            match params.snapshots {
                Snapshots::Shared => {
                    let message = LoadMessage::Snapshot(snap.clone());
                    let mut refused = 0;
                    let queued = server
                        .broadcast(UNRELIABLE, &message, |_, _| refused += 1)
                        .map_err(|e| e.to_string())?;
                    app.snapshots_sent += queued as u64;
                    app.snapshots_refused += refused;
                }
                Snapshots::PerClient => {
                    for &client in roster.connected() {
                        let message = LoadMessage::Snapshot(snap.clone());
                        match server.send(client, UNRELIABLE, message) {
                            Ok(()) => app.snapshots_sent += 1,
                            Err(_) => app.snapshots_refused += 1,
                        }
                    }
                }
            }
        }
        meter.end_tick();
        ticker.wait();
    }
    let io = io_of(server.transport_stats());
    let report = meter.finish(io, app, ticker.late);
    println!("REPORT {report}");
    Ok(())
}

struct Player {
    user: usize,
    client: Option<UdpClient<LoadMessage>>,
    connected: bool,
    /// What this player's earlier clients (failed handshakes) counted at their sockets.
    io_before: Io,
    io: Io,
}

/// A client for `user` with a new token from the "backend".
fn connect(
    params: &Params,
    key: &Key,
    server: SocketAddr,
    unix_time: u64,
    user: usize,
) -> Result<UdpClient<LoadMessage>, String> {
    let mut token_params = TokenParams::new(protocol_id(), user as u64, vec![server]);
    token_params.timeout_seconds = 10;
    let token = generate_connect_token(&token_params, key, unix_time)
        .and_then(|t| ConnectToken::read(&t.write()?))
        .map_err(|e| e.to_string())?;
    let config = netproto::transport::Config {
        channels: layer_config(),
        connection: connection_config(params),
        max_clients: 1,
    };
    UdpClient::connect_with("127.0.0.1:0", server, &token, config).map_err(|e| e.to_string())
}

/// The load generator: `clients` players, each on its own socket, connecting on the
/// [`Ramp`].
pub(crate) fn load(params: &Params) -> Result<(), String> {
    let server = *params.servers.first().ok_or("no server address")?;
    let key = Key::from_bytes(params.key);
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let n = params.clients;
    let mut players: Vec<Player> = (0..n)
        .map(|user| Player {
            user,
            client: None,
            connected: false,
            io_before: Io::default(),
            io: Io::default(),
        })
        .collect();
    let mut delivery = Delivery::new(n);
    let mut meter = LoadMeter::new(params);
    let mut ramp = Ramp::new(n);
    let mut ticker = Ticker::new();
    while meter.phase != LoadPhase::Done {
        // Start the next few handshakes (the backend hands each player a token).
        ramp.tick();
        if meter.phase == LoadPhase::Connecting {
            while let Some(user) = ramp.start() {
                players[user].client = Some(connect(params, &key, server, unix_time, user)?);
            }
        }
        let events = meter.sending_events();
        let mut io = Io::default();
        let mut connected = 0;
        for p in &mut players {
            let Some(client) = p.client.as_mut() else {
                io.add(p.io);
                continue;
            };
            if p.connected {
                let _ = client.send(UNRELIABLE, LoadMessage::Input(input(p.user, ticker.total)));
                meter.inputs_sent += 1;
                if events && sends_event(p.user, ticker.total) {
                    let seq = delivery.sent[p.user];
                    let event = Event {
                        from: p.user as u16,
                        seq,
                    };
                    if client.send(RELIABLE, LoadMessage::Event(event)).is_ok() {
                        delivery.sent[p.user] += 1;
                    }
                }
            }
            let mut failed = client.update().err().map(|e| format!("socket error: {e}"));
            while let Some(event) = client.poll_event() {
                match event {
                    UdpClientEvent::Connected { .. } if !p.connected => {
                        p.connected = true;
                        ramp.connected();
                    }
                    UdpClientEvent::Denied { reason } => failed = Some(format!("denied: {reason}")),
                    UdpClientEvent::Disconnected { reason } => failed = Some(reason.to_string()),
                    _ => {}
                }
            }
            while let Some(message) = client.receive(UNRELIABLE) {
                if let LoadMessage::Snapshot(_) = message {
                    meter.snapshots_received += 1;
                }
            }
            while let Some(message) = client.receive(RELIABLE) {
                if let LoadMessage::Event(event) = message {
                    delivery.received(p.user, &event);
                }
            }
            let mut now = p.io_before;
            now.add(io_of(client.transport_stats()));
            p.io = now;
            if let Some(why) = failed {
                p.client = None;
                p.io_before = p.io;
                ramp.ended(p.user, &mut p.connected, &mut meter.disconnected, &why);
            }
            io.add(p.io);
            connected += usize::from(p.connected);
        }
        meter.end_tick(connected, io, &delivery, ticker.total);
        ticker.wait();
    }
    for p in &mut players {
        if let Some(mut client) = p.client.take() {
            client.disconnect();
        }
    }
    let report = meter.finish(&delivery, &ramp, ticker.late);
    println!("REPORT {report}");
    Ok(())
}
