//! The token backend example (`examples/token_backend`) over real HTTP on loopback: a
//! login gives a session, the session a connect token that two game servers with the
//! backend's key accept at the addresses it lists; wrong credentials, missing sessions,
//! unhealthy and full servers get their own status and text.

#[path = "../token_backend/service.rs"]
#[allow(dead_code)] // main.rs uses what the tests do not
mod service;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64ct::{Base64, Encoding};
use netproto::channel::{ChannelId, LayerConfig};
use netproto::netcode::{ConnectToken, Key};
use netproto::transport::{UdpClient, UdpServer, UdpServerEvent};
use netproto_examples::game::{ChatMessage, GameMessage};
use service::{Account, Backend, Config, GameServer};

const ADMIN_KEY: &str = "fleet-admin-key";

/// Starts the backend on an ephemeral loopback port, on a tokio runtime of its own
/// thread (it lives as long as the test process), and returns its base URL and the
/// time its clock is fixed at: read now, after the game servers started (a server
/// refuses tokens made before its start), so that every timestamp is exact.
fn start_backend(
    private_key: Key,
    servers: &[SocketAddr],
    capacity: u32,
    timeout_seconds: i32,
) -> (String, u64) {
    let now = service::unix_time();
    let config = Config {
        private_key,
        protocol_id: protocol_id(),
        accounts: vec![
            Account {
                name: "alice".into(),
                password: "wonderland".into(),
                user_id: 1,
            },
            Account {
                name: "bob".into(),
                password: "builder".into(),
                user_id: 2,
            },
        ],
        servers: servers
            .iter()
            .map(|&a| GameServer::new(a, capacity))
            .collect(),
        servers_per_token: 2,
        token_lifetime: 300,
        timeout_seconds,
        session_lifetime: 3600,
        admin_key: Some(ADMIN_KEY.into()),
        clock: Box::new(move || now),
    };
    let backend = Backend::new(config).expect("valid config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            axum::serve(listener, service::router(backend))
                .await
                .expect("serve");
        });
    });
    (format!("http://{address}"), now)
}

fn protocol_id() -> u64 {
    netproto::protocol_id::<GameMessage>(&LayerConfig::default())
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// Sends a request and returns the status and the body text.
fn call(method: &str, url: &str, bearer: Option<&str>, body: Option<&str>) -> (u16, String) {
    let agent = agent();
    let mut request = match method {
        "POST" => agent.post(url),
        "PUT" => agent.put(url),
        _ => panic!("method {method}"),
    };
    if let Some(bearer) = bearer {
        request = request.header("Authorization", format!("Bearer {bearer}"));
    }
    let answer = match body {
        Some(body) => request.content_type("application/json").send(body),
        None => request.send_empty(),
    };
    let mut answer = answer.expect("HTTP exchange");
    let status = answer.status().as_u16();
    let text = answer.body_mut().read_to_string().expect("body");
    (status, text)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("JSON answer")
}

/// Logs in and returns the session.
fn login(base: &str, name: &str, password: &str) -> String {
    let body = serde_json::json!({ "name": name, "password": password }).to_string();
    let (status, text) = call("POST", &format!("{base}/login"), None, Some(&body));
    assert_eq!(status, 200, "{text}");
    json(&text)["session"].as_str().expect("session").to_owned()
}

/// Fetches a token with `session` and returns the answer and the token read from it.
fn fetch_token(base: &str, session: &str) -> (serde_json::Value, ConnectToken) {
    let (status, text) = call("POST", &format!("{base}/connect"), Some(session), None);
    assert_eq!(status, 200, "{text}");
    let answer = json(&text);
    let bytes = Base64::decode_vec(answer["token"].as_str().expect("token")).expect("base64");
    assert_eq!(bytes.len(), 2048);
    let token = ConnectToken::read(&bytes).expect("a netcode token");
    (answer, token)
}

fn game_server(key: &Key) -> UdpServer<GameMessage> {
    UdpServer::bind(
        "127.0.0.1:0",
        key.clone(),
        netproto::transport::Config {
            max_clients: 4,
            ..netproto::transport::Config::default()
        },
    )
    .expect("game server")
}

/// Connects with `token` (to its first address), says hello, and returns the user id
/// the server saw and the server's reply, from whichever of `servers` answered.
fn join(token: &ConnectToken, servers: &mut [UdpServer<GameMessage>]) -> (SocketAddr, u64, String) {
    let mut client =
        UdpClient::<GameMessage>::connect(token, netproto::transport::Config::default())
            .expect("client");
    let hello = ChatMessage {
        from: 0,
        text: "hello".into(),
    };
    client
        .send(ChannelId::RELIABLE, GameMessage::Chat(hello))
        .expect("send");
    let mut joined = None;
    let start = Instant::now();
    // Bounded: the handshake and one exchange take a few milliseconds on loopback.
    while start.elapsed() < Duration::from_secs(10) {
        client.update().expect("client update");
        for server in servers.iter_mut() {
            server.update().expect("server update");
            let address = server.local_addr().expect("address");
            while let Some(event) = server.poll_event() {
                if let UdpServerEvent::Connected { user_id, .. } = event {
                    joined = Some((address, user_id));
                }
            }
            let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
            for id in clients {
                while let Some(GameMessage::Chat(chat)) = server.receive(id, ChannelId::RELIABLE) {
                    let text = format!("{address} got {}", chat.text);
                    let reply = GameMessage::Chat(ChatMessage { from: 0, text });
                    server.send(id, ChannelId::RELIABLE, reply).expect("reply");
                }
            }
        }
        if let Some(GameMessage::Chat(reply)) = client.receive(ChannelId::RELIABLE) {
            assert_eq!(
                Some(client.server_addr()),
                joined.map(|(address, _)| address)
            );
            client.disconnect();
            for server in servers.iter_mut() {
                server.update().expect("server update");
            }
            let (address, user_id) = joined.expect("a Connected event before the reply");
            return (address, user_id, reply.text);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("no reply; client state {:?}", client.state());
}

#[test]
fn a_login_gives_a_token_the_listed_servers_accept() {
    let key = Key::random();
    // The servers start before the backend's clock is read (see `start_backend`).
    let mut servers = [game_server(&key), game_server(&key)];
    let addresses: Vec<_> = servers
        .iter()
        .map(|s| s.local_addr().expect("address"))
        .collect();
    let (base, now) = start_backend(key, &addresses, 4, 7);

    let body = r#"{"name": "alice", "password": "wonderland"}"#;
    let (status, text) = call("POST", &format!("{base}/login"), None, Some(body));
    assert_eq!(status, 200, "{text}");
    let answer = json(&text);
    assert_eq!(answer["user_id"], 1);
    assert_eq!(answer["expires_at"], now + 3600);
    let session = answer["session"].as_str().expect("session");
    assert_eq!(session.len(), 64);

    // Both servers empty: fleet order, and the first gets the player.
    let (answer, token) = fetch_token(&base, session);
    assert_eq!(token.protocol_id, protocol_id());
    assert_eq!(token.create_timestamp, now);
    assert_eq!(token.expire_timestamp, now + 300);
    assert_eq!(token.timeout_seconds, 7);
    assert_eq!(token.server_addresses, addresses);
    assert_eq!(answer["client_id"], 1);
    assert_eq!(answer["timeout_seconds"], 7);
    assert_eq!(answer["create_timestamp"], now);
    assert_eq!(answer["expire_timestamp"], now + 300);
    let listed: Vec<SocketAddr> = serde_json::from_value(answer["servers"].clone()).expect("list");
    assert_eq!(listed, addresses);
    // The servers open it with the backend's key, at the first address listed.
    assert_eq!(
        join(&token, &mut servers),
        (addresses[0], 1, format!("{} got hello", addresses[0]))
    );

    // The first server now counts one player: bob's token lists the second first.
    let bob = login(&base, "bob", "builder");
    let (answer, token) = fetch_token(&base, &bob);
    assert_eq!(answer["client_id"], 2);
    let reversed = vec![addresses[1], addresses[0]];
    assert_eq!(token.server_addresses, reversed);
    assert_eq!(
        join(&token, &mut servers),
        (addresses[1], 2, format!("{} got hello", addresses[1]))
    );
}

#[test]
fn a_client_fails_over_to_the_next_server_the_token_lists() {
    let key = Key::random();
    let [first, second] = [game_server(&key), game_server(&key)];
    let addresses: Vec<_> = [&first, &second]
        .iter()
        .map(|s| s.local_addr().expect("address"))
        .collect();
    // A 1-second timeout: the time the client gives each silent server.
    let (base, _) = start_backend(key, &addresses, 4, 1);
    let session = login(&base, "alice", "wonderland");
    let (_, token) = fetch_token(&base, &session);
    assert_eq!(token.server_addresses, addresses);
    // The first server dies after the backend listed it (before its next report).
    drop(first);
    assert_eq!(
        join(&token, &mut [second]),
        (addresses[1], 1, format!("{} got hello", addresses[1]))
    );
}

#[test]
fn wrong_credentials_and_sessions_get_401_with_the_reason() {
    let key = Key::random();
    let server = game_server(&key);
    let (base, _) = start_backend(key, &[server.local_addr().expect("address")], 4, 7);
    let login_url = format!("{base}/login");
    let connect_url = format!("{base}/connect");
    let wrong = (401, "wrong name or password".to_owned());

    let body = r#"{"name": "alice", "password": "wonderlant"}"#;
    assert_eq!(call("POST", &login_url, None, Some(body)), wrong);
    // An unknown name gets the same answer: no account enumeration.
    let body = r#"{"name": "mallory", "password": "wonderland"}"#;
    assert_eq!(call("POST", &login_url, None, Some(body)), wrong);
    let body = r#"{"name": "alice", "password": ""}"#;
    assert_eq!(call("POST", &login_url, None, Some(body)), wrong);

    let no_session = (401, "missing or expired session".to_owned());
    assert_eq!(call("POST", &connect_url, None, None), no_session);
    let made_up = "00".repeat(32);
    assert_eq!(call("POST", &connect_url, Some(&made_up), None), no_session);
    // A new login replaces the account's previous session.
    let first = login(&base, "alice", "wonderland");
    let second = login(&base, "alice", "wonderland");
    assert_ne!(first, second);
    assert_eq!(call("POST", &connect_url, Some(&first), None), no_session);
    assert_eq!(call("POST", &connect_url, Some(&second), None).0, 200);
}

#[test]
fn malformed_and_oversized_requests_are_refused_unread() {
    let key = Key::random();
    let server = game_server(&key);
    let (base, _) = start_backend(key, &[server.local_addr().expect("address")], 4, 7);
    let login_url = format!("{base}/login");
    // axum's JSON extractor: 400 for bad syntax, 422 for a missing field.
    assert_eq!(call("POST", &login_url, None, Some("{")).0, 400);
    assert_eq!(
        call("POST", &login_url, None, Some(r#"{"name": "alice"}"#)).0,
        422
    );
    // Over the 1024-byte body limit.
    let long = format!(r#"{{"name": "alice", "password": "{}"}}"#, "x".repeat(1024));
    assert_eq!(call("POST", &login_url, None, Some(&long)).0, 413);
}

#[test]
fn unhealthy_and_full_servers_are_not_handed_out() {
    let key = Key::random();
    let servers = [game_server(&key), game_server(&key)];
    let addresses: Vec<_> = servers
        .iter()
        .map(|s| s.local_addr().expect("address"))
        .collect();
    let (base, _) = start_backend(key, &addresses, 4, 7);
    let report = |address: SocketAddr, bearer: &str, body: &str| {
        call(
            "PUT",
            &format!("{base}/servers/{address}"),
            Some(bearer),
            Some(body),
        )
    };
    let session = login(&base, "alice", "wonderland");

    let healthy = r#"{"healthy": true, "players": 0}"#;
    assert_eq!(
        report(addresses[0], "not-the-key", healthy),
        (401, "wrong admin key".to_owned())
    );
    let unknown: SocketAddr = "127.0.0.1:9".parse().expect("address");
    assert_eq!(
        report(unknown, ADMIN_KEY, healthy),
        (404, "no such game server".to_owned())
    );

    // The first server fails its health check: tokens list the second only.
    let sick = r#"{"healthy": false, "players": 0}"#;
    assert_eq!(report(addresses[0], ADMIN_KEY, sick), (204, String::new()));
    let (_, token) = fetch_token(&base, &session);
    assert_eq!(token.server_addresses, vec![addresses[1]]);

    // The second is full (4 of 4): nothing to hand out.
    let full = r#"{"healthy": true, "players": 4}"#;
    assert_eq!(report(addresses[1], ADMIN_KEY, full), (204, String::new()));
    let unavailable = (503, "no game server has a free slot".to_owned());
    assert_eq!(
        call("POST", &format!("{base}/connect"), Some(&session), None),
        unavailable
    );

    // The first recovers with 3 players: it takes the next token, and with the slot
    // that token reserved it is full too.
    let back = r#"{"healthy": true, "players": 3}"#;
    assert_eq!(report(addresses[0], ADMIN_KEY, back), (204, String::new()));
    let (_, token) = fetch_token(&base, &session);
    assert_eq!(token.server_addresses, vec![addresses[0]]);
    assert_eq!(
        call("POST", &format!("{base}/connect"), Some(&session), None),
        unavailable
    );
}
