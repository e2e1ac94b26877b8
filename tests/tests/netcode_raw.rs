//! The netcode-only layer ([`RawClient`], [`RawServer`]: netcode payload packets that
//! carry the caller's bytes) and tokens with no timeout, on virtual time over a
//! perfect network that the tests can silence.
//!
//! * Payloads arrive byte for byte, one per send, both ways; a netcode payload
//!   packet carries 1 to 1200 bytes and nothing else is sent.
//! * A token with timeout -1 ("no timeout", the standard's "negative values disable
//!   timeout") connects on both sides; over raw payloads the connection survives an
//!   hour of silence, then carries payloads again and disconnects (10 copies).
//! * Over the packet endpoint the same token survives silence up to `max_timeout`
//!   and no longer (the endpoint's 16-bit sequences).
//! * A server with `allow_no_timeout` off ignores such requests, and counts them.

use netproto::Time;
use netproto::connection::{
    Client, ClientEvent, ClientState, ConnectionConfig, DisconnectReason, MAX_DATAGRAM_BYTES,
    RawClient, RawSendError, RawServer, Server, ServerConfig, ServerEvent,
};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token_with};

const PROTOCOL: u64 = 0x6e65_7463_6f64_6521;
const UNIX: u64 = 1_800_000_000;
const TICK: f64 = 0.05;

fn address() -> std::net::SocketAddr {
    "127.0.0.1:40000".parse().expect("address")
}

fn token(timeout_seconds: i32) -> ConnectToken {
    let mut params = TokenParams::new(PROTOCOL, 42, vec![address()]);
    params.timeout_seconds = timeout_seconds;
    generate_connect_token_with(
        &params,
        &Key::from_bytes([1; 32]),
        UNIX,
        UNIX + 7200,
        [2; 24],
        Key::from_bytes([3; 32]),
        Key::from_bytes([4; 32]),
    )
    .expect("token")
}

fn server_config(connection: ConnectionConfig) -> ServerConfig {
    let mut config = ServerConfig::new(connection, Key::from_bytes([1; 32]), vec![address()]);
    config.challenge_key = Key::from_bytes([5; 32]);
    config.max_token_lifetime = std::time::Duration::from_secs(1);
    config
}

/// A raw client and server on a perfect network, ticking every 50 ms.
struct Raw {
    client: RawClient<&'static str>,
    server: RawServer<&'static str>,
    now: f64,
    /// Payloads received: (by the server, by the client).
    up: Vec<Vec<u8>>,
    down: Vec<Vec<u8>>,
    /// Datagrams delivered each way.
    datagrams: [u64; 2],
}

impl Raw {
    fn new(timeout_seconds: i32) -> Self {
        let config = ConnectionConfig::new(PROTOCOL);
        let server =
            RawServer::new(server_config(config.clone()), Time::ZERO, UNIX).expect("server");
        let client =
            RawClient::new(config, &token(timeout_seconds), "server", Time::ZERO).expect("client");
        Self {
            client,
            server,
            now: 0.0,
            up: Vec::new(),
            down: Vec::new(),
            datagrams: [0; 2],
        }
    }

    fn t(&self) -> Time {
        Time::from_secs_f64(self.now)
    }

    /// Delivers (or, `silent`, drops) everything queued.
    fn deliver(&mut self, silent: bool) {
        let now = self.t();
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        while let Some((_, len)) = self.client.poll_transmit(&mut buf) {
            if !silent {
                self.datagrams[0] += 1;
                if let Some((_, p)) = self.server.handle_datagram(now, "client", &buf[..len]) {
                    self.up.push(p.to_vec());
                }
            }
        }
        while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
            assert_eq!(to, "client");
            if !silent {
                self.datagrams[1] += 1;
                if let Some(p) = self.client.handle_datagram(now, "server", &buf[..len]) {
                    self.down.push(p.to_vec());
                }
            }
        }
    }

    /// Runs `seconds` of ticks; `silent` drops every datagram.
    fn run(&mut self, seconds: f64, silent: bool) {
        let end = self.now + seconds;
        while self.now + 1e-9 < end {
            self.now += TICK;
            let now = self.t();
            self.client.update(now);
            self.server.update(now);
            self.deliver(silent);
        }
    }

    fn connect(&mut self) {
        self.run(0.5, false);
        assert!(self.client.is_connected());
        assert_eq!(self.server.clients().count(), 1);
    }
}

#[test]
fn raw_payloads_arrive_byte_for_byte_both_ways() {
    let mut r = Raw::new(5);
    r.connect();
    let id = r.client.client_id().expect("connected");
    let now = r.t();
    let sizes = [1usize, 2, 100, 1199, 1200];
    for &n in &sizes {
        let bytes: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
        r.client.send(now, &bytes).expect("fits");
        r.server.send(now, id, &bytes).expect("fits");
    }
    r.deliver(false);
    let expected: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
        .collect();
    assert_eq!(r.up, expected, "client to server: the bytes, no header");
    assert_eq!(r.down, expected, "server to client");
    // A payload packet carries 1 to 1200 bytes: nothing is sent otherwise.
    for n in [0usize, 1201] {
        assert_eq!(
            r.client.send(now, &vec![0; n]),
            Err(RawSendError::Size { len: n })
        );
        assert_eq!(
            r.server.send(now, id, &vec![0; n]),
            Err(RawSendError::Size { len: n })
        );
    }
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    assert!(r.client.poll_transmit(&mut buf).is_none());
    assert!(r.server.poll_transmit(&mut buf).is_none());
    // The wire size: 1 prefix byte, the sequence, the payload, the 16-byte tag.
    r.client.send(now, b"x").expect("fits");
    let (_, len) = r.client.poll_transmit(&mut buf).expect("queued");
    assert_eq!(len, 1 + 1 + 1 + 16);
}

#[test]
fn a_raw_connection_with_no_timeout_survives_an_hour_of_silence() {
    let mut r = Raw::new(-1);
    r.connect();
    let id = r.client.client_id().expect("connected");
    // An hour with every datagram lost.
    r.run(3600.0, true);
    assert!(r.client.is_connected());
    assert_eq!(r.server.clients().count(), 1);
    let silence = r.server.silent_for(r.t(), id).expect("connected");
    assert!((silence.as_secs_f64() - 3600.0).abs() < 0.1, "{silence:?}");
    // The network is back: payloads flow again.
    let now = r.t();
    r.client.send(now, b"still here").expect("connected");
    r.server.send(now, id, b"welcome back").expect("connected");
    r.run(0.1, false);
    assert_eq!(r.up, vec![b"still here".to_vec()]);
    assert_eq!(r.down, vec![b"welcome back".to_vec()]);
    assert_eq!(
        r.server.silent_for(r.t(), id),
        Some(std::time::Duration::ZERO)
    );
    // The client disconnects: ten copies; the first frees the slot, the server
    // drops the other nine (from an address with no session).
    let dropped = r
        .server
        .connection()
        .server_stats()
        .datagrams_dropped_unknown_address;
    let before = r.datagrams[0];
    r.client.disconnect(r.t());
    r.deliver(false);
    assert_eq!(r.datagrams[0] - before, 10);
    assert_eq!(
        r.server
            .connection()
            .server_stats()
            .datagrams_dropped_unknown_address
            - dropped,
        9
    );
    assert_eq!(
        r.server.poll_event_last(),
        Some(ServerEvent::Disconnected {
            client: id,
            address: "client",
            reason: DisconnectReason::PeerDisconnected
        })
    );
    assert_eq!(
        r.client.state(),
        ClientState::Disconnected(DisconnectReason::Local)
    );
}

#[test]
fn a_raw_server_disconnects_a_no_timeout_client_and_it_sees_it() {
    let mut r = Raw::new(-1);
    r.connect();
    let id = r.client.client_id().expect("connected");
    r.run(600.0, true);
    assert!(r.server.disconnect(r.t(), id));
    r.deliver(false);
    assert_eq!(
        r.client.state(),
        ClientState::Disconnected(DisconnectReason::PeerDisconnected)
    );
    // The client counted the nine copies after the first as dropped.
    assert_eq!(r.client.connection().dropped(), 9);
}

#[test]
fn a_raw_connection_with_a_timeout_times_out_on_both_sides() {
    let mut r = Raw::new(5);
    r.connect();
    let connected_at = r.now;
    r.run(4.9, true);
    assert!(r.client.is_connected());
    r.run(0.2, true);
    assert_eq!(
        r.client.state(),
        ClientState::Disconnected(DisconnectReason::TimedOut)
    );
    assert_eq!(r.server.clients().count(), 0);
    assert_eq!(r.server.connection().server_stats().clients_timed_out, 1);
    assert!(r.now - connected_at < 5.2);
}

/// The packet endpoint's connection (Client, Server) with a token of no timeout:
/// both sides accept it; silence is survived up to `max_timeout`, not beyond.
#[test]
fn over_the_packet_endpoint_no_timeout_lasts_max_timeout() {
    let mut config = ConnectionConfig::new(PROTOCOL);
    config.max_timeout = std::time::Duration::from_secs(100);
    let mut server = Server::new(server_config(config.clone()), Time::ZERO, UNIX).expect("server");
    let mut client = Client::new(config, &token(-1), "server", Time::ZERO).expect("accepted");
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut step =
        |now: f64, silent: bool, client: &mut Client<&str>, server: &mut Server<&str>| {
            let now = Time::from_secs_f64(now);
            client.update(now);
            server.update(now);
            while let Some((_, len)) = client.poll_transmit(&mut buf) {
                if !silent {
                    let _ = server.handle_datagram(now, "client", &buf[..len]);
                }
            }
            while let Some((_, len)) = server.poll_transmit(&mut buf) {
                if !silent {
                    let _ = client.handle_datagram(now, "server", &buf[..len]);
                }
            }
        };
    let mut tick = 0u32;
    let t = |tick: &mut u32| {
        *tick += 1;
        f64::from(*tick) * TICK
    };
    for _ in 0..10 {
        let now = t(&mut tick);
        step(now, false, &mut client, &mut server);
    }
    assert!(client.is_connected());
    assert_eq!(server.connected_clients(), 1);
    let silent_from = f64::from(tick) * TICK;
    // 99 s of silence: still connected (a 5-second token would have ended).
    while f64::from(tick) * TICK < silent_from + 99.0 {
        let now = t(&mut tick);
        step(now, true, &mut client, &mut server);
    }
    assert!(client.is_connected());
    assert_eq!(server.connected_clients(), 1);
    // At max_timeout both sides end it.
    while f64::from(tick) * TICK < silent_from + 100.1 {
        let now = t(&mut tick);
        step(now, true, &mut client, &mut server);
    }
    assert_eq!(
        client.state(),
        ClientState::Disconnected(DisconnectReason::TimedOut)
    );
    assert_eq!(server.connected_clients(), 0);
    assert_eq!(server.server_stats().clients_timed_out, 1);
    assert_eq!(
        client.poll_event(),
        Some(ClientEvent::Connected {
            client: netproto::connection::ClientId(0),
            max_clients: 64
        })
    );
}

#[test]
fn a_server_that_refuses_no_timeout_ignores_the_request_and_counts_it() {
    let config = ConnectionConfig::new(PROTOCOL);
    let strict = ConnectionConfig {
        allow_no_timeout: false,
        ..config.clone()
    };
    let mut server = RawServer::new(server_config(strict), Time::ZERO, UNIX).expect("server");
    let mut client = RawClient::new(config, &token(-1), "server", Time::ZERO).expect("client");
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut requests = 0;
    // Ticks of 1/16 s (exact in binary): a request every other tick.
    for tick in 1..=20 {
        let now = Time::from_secs_f64(f64::from(tick) / 16.0);
        client.update(now);
        server.update(now);
        while let Some((_, len)) = client.poll_transmit(&mut buf) {
            requests += 1;
            assert!(server.handle_datagram(now, "client", &buf[..len]).is_none());
        }
        assert!(server.poll_transmit(&mut buf).is_none(), "no answer");
    }
    assert_eq!(client.state(), ClientState::Requesting);
    let stats = server.connection().server_stats();
    assert_eq!(requests, 10, "one request every 125 ms");
    assert_eq!(stats.requests_dropped_bad_timeout, requests);
    assert_eq!(stats.challenges_sent, 0);
}

/// The last event of a raw server, draining the others.
trait LastEvent {
    fn poll_event_last(&mut self) -> Option<ServerEvent<&'static str>>;
}

impl LastEvent for RawServer<&'static str> {
    fn poll_event_last(&mut self) -> Option<ServerEvent<&'static str>> {
        core::iter::from_fn(|| self.poll_event()).last()
    }
}

/// The guide's "Talking to a plain netcode peer" (`netproto/GUIDE.md`), over UDP on
/// loopback, with a port the system picks and a bound on the loop: keep them in sync.
#[test]
fn the_guide_s_netcode_only_example() -> Result<(), Box<dyn std::error::Error>> {
    use netproto::transport::{NetcodeClient, NetcodeServer};
    const PROTOCOL_ID: u64 = 0x1122_3344_5566_7788;
    let private_key = Key::from_bytes([7; 32]);
    let config = ConnectionConfig::new(PROTOCOL_ID);
    let mut server = NetcodeServer::bind("127.0.0.1:0", config, private_key.clone())?;
    let params = TokenParams::new(PROTOCOL_ID, 42, vec![server.local_addr()?]);
    let unix_time = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let token =
        netproto::netcode::generate_connect_token(&params, &private_key, unix_time.as_secs())?;
    let mut client = NetcodeClient::connect(&token)?;
    let mut received = Vec::new();
    let mut sent = 0;
    for _ in 0..2000 {
        client.update()?;
        server.update()?;
        if client.is_connected() && sent < 5 {
            client.send(b"my own framing")?;
            sent += 1;
        }
        while let Some((from, bytes)) = server.receive() {
            received.push((from, bytes.to_vec()));
        }
        if received.len() == 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let id = client.connection().client_id().expect("connected");
    assert_eq!(received, vec![(id, b"my own framing".to_vec()); 5]);
    assert_eq!(
        server
            .poll_event()
            .map(|e| matches!(e, ServerEvent::Connected { user_id: 42, .. })),
        Some(true)
    );
    Ok(())
}

/// A replayed or altered payload packet is dropped whole and counted; the
/// connection goes on, and the genuine packet an altered copy was made of still
/// opens (a packet that fails to authenticate changes no state: not the replay
/// window either).
#[test]
fn a_replayed_or_altered_raw_payload_is_dropped_and_counted() {
    let mut r = Raw::new(5);
    r.connect();
    let now = r.t();
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    let mut next = |r: &mut Raw, payload: &[u8]| {
        r.client.send(now, payload).expect("connected");
        let (_, len) = r.client.poll_transmit(&mut buf).expect("queued");
        buf[..len].to_vec()
    };
    let first = next(&mut r, b"once");
    let got = r.server.handle_datagram(now, "client", &first);
    assert_eq!(got.map(|(_, p)| p.to_vec()), Some(b"once".to_vec()));
    let before = *r.server.connection().server_stats();
    // The replay is refused before any decryption (the standard's order).
    assert!(r.server.handle_datagram(now, "client", &first).is_none());
    let second = next(&mut r, b"twice");
    let mut altered = second.clone();
    altered[3] ^= 1;
    assert!(r.server.handle_datagram(now, "client", &altered).is_none());
    let after = *r.server.connection().server_stats();
    assert_eq!(
        after.datagrams_dropped_replayed - before.datagrams_dropped_replayed,
        1
    );
    assert_eq!(
        after.datagrams_dropped_unauthenticated - before.datagrams_dropped_unauthenticated,
        1
    );
    let got = r.server.handle_datagram(now, "client", &second);
    assert_eq!(got.map(|(_, p)| p.to_vec()), Some(b"twice".to_vec()));
}
