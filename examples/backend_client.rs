//! The client side of the token backend (`examples/token_backend`): log in over HTTP,
//! fetch a connect token, connect to the game server it names and exchange a chat
//! message. So that it runs on one machine, this example also plays the fleet: it
//! starts a game server at each `--game-server` address (default 127.0.0.1:40000 and
//! 127.0.0.1:40001, the backend's default fleet) with the same private key.
//!
//! ```sh
//! export NETPROTO_PRIVATE_KEY=$(openssl rand -hex 32)   # the backend's key
//! cargo run -p netproto-examples --example token_backend &
//! cargo run -p netproto-examples --example backend_client -- --name alice --password wonderland
//! ```
//!
//! Options: `--backend URL` (default http://127.0.0.1:8080), `--name`, `--password`
//! (default alice / wonderland), `--game-server ADDR` (repeat it). The game servers
//! start before the token is fetched: a server refuses tokens made before it started.
//! To see the client fail over, start only the second (`--game-server 127.0.0.1:40001`)
//! against a backend just started, whose first token lists 127.0.0.1:40000 first: the
//! client gives that silent server the token's timeout (10 s), then tries the next.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64ct::{Base64, Encoding};
use netproto::channel::ChannelId;
use netproto::netcode::{ConnectToken, Key};
use netproto::transport::{Config, UdpClient, UdpServer, UdpServerEvent};
use netproto_examples::game::{ChatMessage, GameMessage};

struct Options {
    backend: String,
    name: String,
    password: String,
    game_servers: Vec<SocketAddr>,
}

fn parse() -> Result<Options, lexopt::Error> {
    use lexopt::prelude::*;
    let mut options = Options {
        backend: "http://127.0.0.1:8080".into(),
        name: "alice".into(),
        password: "wonderland".into(),
        game_servers: Vec::new(),
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("backend") => options.backend = parser.value()?.string()?,
            Long("name") => options.name = parser.value()?.string()?,
            Long("password") => options.password = parser.value()?.string()?,
            Long("game-server") => options.game_servers.push(parser.value()?.parse()?),
            _ => return Err(arg.unexpected()),
        }
    }
    if options.game_servers.is_empty() {
        options.game_servers = vec![
            SocketAddr::from(([127, 0, 0, 1], 40000)),
            SocketAddr::from(([127, 0, 0, 1], 40001)),
        ];
    }
    Ok(options)
}

/// Posts `body` (JSON, or nothing) to `url`, with the session as bearer if given, and
/// returns the answer's body if the status is 200; the status and the backend's reason
/// otherwise.
fn post(
    agent: &ureq::Agent,
    url: &str,
    session: Option<&str>,
    body: Option<serde_json::Value>,
) -> Result<serde_json::Value, String> {
    let mut request = agent.post(url);
    if let Some(session) = session {
        request = request.header("Authorization", format!("Bearer {session}"));
    }
    let answer = match body {
        Some(body) => request
            .content_type("application/json")
            .send(body.to_string()),
        None => request.send_empty(),
    };
    let mut answer = answer.map_err(|e| format!("POST {url}: {e}"))?;
    let status = answer.status();
    // A token answer is under 3 KB: refuse anything much larger.
    let text = answer
        .body_mut()
        .with_config()
        .limit(16 * 1024)
        .read_to_string()
        .map_err(|e| format!("POST {url}: {e}"))?;
    if status != 200 {
        return Err(format!("POST {url}: {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("POST {url}: {e}"))
}

/// Logs in and fetches a connect token.
fn fetch_token(options: &Options) -> Result<ConnectToken, Box<dyn std::error::Error>> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false) // read the reason a 401 or a 503 gives
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let login = serde_json::json!({ "name": options.name, "password": options.password });
    let url = format!("{}/login", options.backend);
    let session = post(&agent, &url, None, Some(login))?;
    let session = session["session"]
        .as_str()
        .ok_or("no session in the answer")?;
    let url = format!("{}/connect", options.backend);
    let answer = post(&agent, &url, Some(session), None)?;
    println!(
        "backend: player {} may join {} (token expires at {}, timeout {} s)",
        answer["client_id"],
        answer["servers"],
        answer["expire_timestamp"],
        answer["timeout_seconds"]
    );
    let base64 = answer["token"].as_str().ok_or("no token in the answer")?;
    let bytes = Base64::decode_vec(base64).map_err(|e| format!("token: {e}"))?;
    Ok(ConnectToken::read(&bytes)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse()?;
    let config = Config {
        max_clients: 16,
        ..Config::default()
    };
    let private_key = Key::from_env("NETPROTO_PRIVATE_KEY")?;
    let mut servers = Vec::new();
    for &address in &options.game_servers {
        let server = UdpServer::<GameMessage>::bind(address, private_key.clone(), config.clone())?;
        servers.push(server);
    }
    drop(private_key); // the client never holds it
    println!("game servers on {:?}", options.game_servers);

    let token = fetch_token(&options)?;
    let mut client = UdpClient::<GameMessage>::connect(&token, config)?;
    let text = format!("hello from {}", options.name);
    client.send(
        ChannelId::RELIABLE,
        GameMessage::Chat(ChatMessage { from: 0, text }),
    )?;

    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        client.update()?;
        for server in &mut servers {
            server.update()?;
            let address = server.local_addr()?;
            while let Some(event) = server.poll_event() {
                if let UdpServerEvent::Connected { user_id, .. } = event {
                    println!("game server {address}: player {user_id} joined");
                }
            }
            let clients: Vec<_> = server.clients().map(|(id, _)| id).collect();
            for id in clients {
                while let Some(GameMessage::Chat(chat)) = server.receive(id, ChannelId::RELIABLE) {
                    let text = format!("{address} got {:?}", chat.text);
                    let reply = GameMessage::Chat(ChatMessage { from: 0, text });
                    server.send(id, ChannelId::RELIABLE, reply)?;
                }
            }
        }
        if let Some(GameMessage::Chat(reply)) = client.receive(ChannelId::RELIABLE) {
            println!(
                "client (connected to {}): {}",
                client.server_addr(),
                reply.text
            );
            client.disconnect();
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err(format!(
        "no answer from {:?} (state {:?})",
        token.server_addresses,
        client.state()
    )
    .into())
}
