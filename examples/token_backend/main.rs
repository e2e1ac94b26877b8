//! A token backend to copy: the web service a player logs in to, which picks a game
//! server for them and hands out a netcode connect token for it (axum, HTTP/1.1 on
//! loopback; put it behind a TLS terminator to serve it to the internet, see GUIDE.md
//! "Issuing connect tokens").
//!
//! ```sh
//! export NETPROTO_PRIVATE_KEY=$(openssl rand -hex 32)   # shared with the game servers
//! cargo run -p netproto-examples --example token_backend -- \
//!     --server 127.0.0.1:40000 --server 127.0.0.1:40001
//! # in another terminal, with the same NETPROTO_PRIVATE_KEY:
//! cargo run -p netproto-examples --example backend_client
//! ```
//!
//! Options: `--listen ADDR` (default 127.0.0.1:8080), `--server ADDR` (repeat it, in
//! order of preference; default 127.0.0.1:40000 and 127.0.0.1:40001), `--capacity N`
//! slots per server (default 16), `--servers-per-token N` (default 3), `--key-file
//! PATH` instead of the variable. With `BACKEND_ADMIN_KEY` set, game servers report
//! their load and health with `PUT /servers/ADDR` (see `service.rs`).
//!
//! The accounts are a stub: `alice`/`wonderland` (player 1), `bob`/`builder` (player 2).

mod service;

use std::net::SocketAddr;

use netproto::channel::LayerConfig;
use netproto::netcode::Key;
use netproto_examples::game::GameMessage;
use service::{Account, Backend, Config, GameServer};

struct Options {
    listen: SocketAddr,
    servers: Vec<SocketAddr>,
    capacity: u32,
    servers_per_token: usize,
    key_file: Option<String>,
}

fn parse() -> Result<Options, lexopt::Error> {
    use lexopt::prelude::*;
    let mut options = Options {
        listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
        servers: Vec::new(),
        capacity: 16,
        servers_per_token: 3,
        key_file: None,
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("listen") => options.listen = parser.value()?.parse()?,
            Long("server") => options.servers.push(parser.value()?.parse()?),
            Long("capacity") => options.capacity = parser.value()?.parse()?,
            Long("servers-per-token") => options.servers_per_token = parser.value()?.parse()?,
            Long("key-file") => options.key_file = Some(parser.value()?.string()?),
            _ => return Err(arg.unexpected()),
        }
    }
    if options.servers.is_empty() {
        options.servers = vec![
            SocketAddr::from(([127, 0, 0, 1], 40000)),
            SocketAddr::from(([127, 0, 0, 1], 40001)),
        ];
    }
    Ok(options)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = parse()?;
    let private_key = match &options.key_file {
        Some(path) => Key::from_file(path)?,
        None => Key::from_env("NETPROTO_PRIVATE_KEY")
            .map_err(|e| format!("{e} (make one with: openssl rand -hex 32)"))?,
    };
    // The backend and the servers agree on the game build: its messages and channels.
    // A backend that does not link the game's crate takes this number as configuration.
    let protocol_id = netproto::protocol_id::<GameMessage>(&LayerConfig::default());
    let account = |name: &str, password: &str, user_id| Account {
        name: name.into(),
        password: password.into(),
        user_id,
    };
    let config = Config {
        private_key,
        protocol_id,
        accounts: vec![
            account("alice", "wonderland", 1),
            account("bob", "builder", 2),
        ],
        servers: options
            .servers
            .iter()
            .map(|&address| GameServer::new(address, options.capacity))
            .collect(),
        servers_per_token: options.servers_per_token,
        token_lifetime: 300,
        timeout_seconds: 10,
        session_lifetime: 3600,
        admin_key: std::env::var("BACKEND_ADMIN_KEY").ok(),
        clock: Box::new(service::unix_time),
    };
    let backend = Backend::new(config)?;
    let fleet = backend.servers();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(options.listen).await?;
        println!(
            "token backend on http://{} (protocol id {protocol_id:#018x}), servers {:?}",
            listener.local_addr()?,
            fleet
        );
        axum::serve(listener, service::router(backend)).await
    })?;
    Ok(())
}
