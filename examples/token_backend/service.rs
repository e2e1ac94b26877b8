//! The token backend's service: accounts, sessions, the pool of game servers and the
//! HTTP routes. `main.rs` beside it runs it; `examples/tests/token_backend.rs` tests it.
//!
//! | route | request | answer |
//! | --- | --- | --- |
//! | `POST /login` | JSON `{"name", "password"}` | 200 JSON `{"session", "user_id", "expires_at"}`; 401 `wrong name or password` |
//! | `POST /connect` | header `Authorization: Bearer <session>` | 200 JSON `{"token", "client_id", "servers", "timeout_seconds", "create_timestamp", "expire_timestamp"}`; 401 `missing or expired session`; 503 `no game server has a free slot` |
//! | `PUT /servers/{address}` | header `Authorization: Bearer <admin key>`, JSON `{"healthy", "players"}` | 204; 401 `wrong admin key`; 404 `no such game server` (also when no admin key is configured) |
//!
//! `token` is the 2048-byte netcode connect token in standard base64 (with padding).
//! The private key that seals it never leaves this process and the game servers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use axum::{Json, Router};
use base64ct::{Base64, Encoding};
use netproto::netcode::{Key, MAX_SERVERS_PER_CONNECT, TokenParams, generate_connect_token};
use serde::{Deserialize, Serialize};

/// Requests are a few dozen bytes of JSON: refuse anything larger unread.
const MAX_BODY_BYTES: usize = 1024;

/// One player account. A stub: a real backend asks its account service, which stores a
/// password hash (argon2, scrypt) and verifies the password against it.
#[derive(Clone, Debug)]
pub(crate) struct Account {
    /// The login name.
    pub(crate) name: String,
    /// The password (stub: in clear).
    pub(crate) password: String,
    /// The player's id: it becomes the token's client id, the `user_id` a game server
    /// sees when the player connects. Unique per account.
    pub(crate) user_id: u64,
}

/// A game server of the fleet, as the backend knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct GameServer {
    /// The address players reach it at (it must list the same address as its own:
    /// `ServerConfig`'s addresses, or the token's internal addresses).
    pub(crate) address: SocketAddr,
    /// Its number of player slots.
    pub(crate) capacity: u32,
    /// Players on it, as it last reported, plus the tokens issued for it since.
    pub(crate) players: u32,
    /// Whether it takes players (a server being drained or failing its health check
    /// does not).
    pub(crate) healthy: bool,
}

impl GameServer {
    /// A healthy, empty server with `capacity` slots.
    pub(crate) fn new(address: SocketAddr, capacity: u32) -> Self {
        Self {
            address,
            capacity,
            players: 0,
            healthy: true,
        }
    }

    fn has_room(&self) -> bool {
        self.healthy && self.players < self.capacity
    }
}

/// What the backend is started with.
pub(crate) struct Config {
    /// The key shared with the game servers (`Key::from_env`, `Key::from_file`).
    pub(crate) private_key: Key,
    /// `netproto::protocol_id` of the game's message set and channel config.
    pub(crate) protocol_id: u64,
    /// The accounts that may log in.
    pub(crate) accounts: Vec<Account>,
    /// The fleet.
    pub(crate) servers: Vec<GameServer>,
    /// How many servers a token lists (1 to 32): the least loaded first, the others
    /// for the client to fail over to, in order.
    pub(crate) servers_per_token: usize,
    /// Seconds a token is accepted after it is made. Keep it equal to the game
    /// servers' `ServerConfig::max_token_lifetime` (both default to 300).
    pub(crate) token_lifetime: u64,
    /// Seconds without packets before a connection times out, carried by the token.
    pub(crate) timeout_seconds: i32,
    /// Seconds a login session lasts.
    pub(crate) session_lifetime: u64,
    /// The bearer key of `PUT /servers/{address}`; `None` turns the route off.
    pub(crate) admin_key: Option<String>,
    /// The time in seconds since the Unix epoch ([`unix_time`]; a fixed value in
    /// tests).
    pub(crate) clock: Box<dyn Fn() -> u64 + Send + Sync>,
}

/// The wall clock, for [`Config::clock`].
pub(crate) fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[derive(Debug)]
struct Session {
    user_id: u64,
    expires_at: u64,
}

/// The service's state, shared by the request handlers.
pub(crate) struct Backend {
    config: Config,
    /// Live sessions by their bearer string: one per account at most (a new login
    /// replaces the old session), so the table never outgrows the account list.
    sessions: Mutex<HashMap<String, Session>>,
    servers: Mutex<Vec<GameServer>>,
}

/// Locks `mutex`; a handler that panicked while holding it left consistent data (every
/// update is a single assignment), so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Backend {
    /// The service with `config`. Refuses a `servers_per_token` outside 1..=32.
    pub(crate) fn new(config: Config) -> Result<Arc<Self>, String> {
        if !(1..=MAX_SERVERS_PER_CONNECT).contains(&config.servers_per_token) {
            return Err(format!(
                "servers per token is {}, expected 1 to {MAX_SERVERS_PER_CONNECT}",
                config.servers_per_token
            ));
        }
        let servers = Mutex::new(config.servers.clone());
        Ok(Arc::new(Self {
            config,
            sessions: Mutex::new(HashMap::new()),
            servers,
        }))
    }

    /// The fleet as the backend sees it now.
    pub(crate) fn servers(&self) -> Vec<GameServer> {
        lock(&self.servers).clone()
    }
}

/// The routes, on `backend`.
pub(crate) fn router(backend: Arc<Backend>) -> Router {
    Router::new()
        .route("/login", post(login))
        .route("/connect", post(connect))
        .route("/servers/{address}", put(report))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(backend)
}

/// An error answer: a status and a plain-text reason.
fn refuse(status: StatusCode, reason: &'static str) -> Response {
    (status, reason).into_response()
}

#[derive(Deserialize)]
struct LoginRequest {
    name: String,
    password: String,
}

#[derive(Serialize)]
struct LoginAnswer {
    session: String,
    user_id: u64,
    expires_at: u64,
}

/// Compares without stopping at the first difference. The stub's: a real service
/// verifies a password hash with its hashing crate.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes from the OS, as 64 hex digits.
fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

async fn login(State(backend): State<Arc<Backend>>, Json(request): Json<LoginRequest>) -> Response {
    let account = backend
        .config
        .accounts
        .iter()
        .find(|a| a.name == request.name);
    // Unknown name and wrong password get the same answer.
    let Some(account) =
        account.filter(|a| same_bytes(a.password.as_bytes(), request.password.as_bytes()))
    else {
        return refuse(StatusCode::UNAUTHORIZED, "wrong name or password");
    };
    let Ok(session) = new_session_id() else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let now = (backend.config.clock)();
    let expires_at = now.saturating_add(backend.config.session_lifetime);
    let mut sessions = lock(&backend.sessions);
    sessions.retain(|_, s| s.user_id != account.user_id && s.expires_at > now);
    sessions.insert(
        session.clone(),
        Session {
            user_id: account.user_id,
            expires_at,
        },
    );
    Json(LoginAnswer {
        session,
        user_id: account.user_id,
        expires_at,
    })
    .into_response()
}

/// The bearer string of an `Authorization: Bearer ...` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// The token answer. `servers` and the timestamps repeat what the token carries, for
/// the client's display; `client_id` is sealed in the token, where the client cannot
/// read it.
#[derive(Serialize)]
struct ConnectAnswer {
    token: String,
    client_id: u64,
    servers: Vec<SocketAddr>,
    timeout_seconds: i32,
    create_timestamp: u64,
    expire_timestamp: u64,
}

/// Up to `count` servers with a free slot, least loaded first (ties in fleet order),
/// and one slot taken on the first: the players a token sends there before the
/// server's next report. Empty when none has room.
fn pick_servers(servers: &mut [GameServer], count: usize) -> Vec<SocketAddr> {
    let mut order: Vec<usize> = (0..servers.len())
        .filter(|&i| servers[i].has_room())
        .collect();
    order.sort_by_key(|&i| servers[i].players); // stable: ties keep fleet order
    order.truncate(count);
    if let Some(&first) = order.first() {
        servers[first].players += 1;
    }
    order.into_iter().map(|i| servers[i].address).collect()
}

async fn connect(State(backend): State<Arc<Backend>>, headers: HeaderMap) -> Response {
    let config = &backend.config;
    let now = (config.clock)();
    let user_id = {
        let sessions = lock(&backend.sessions);
        match bearer(&headers).and_then(|b| sessions.get(b)) {
            Some(session) if session.expires_at > now => session.user_id,
            _ => return refuse(StatusCode::UNAUTHORIZED, "missing or expired session"),
        }
    };
    let servers = pick_servers(&mut lock(&backend.servers), config.servers_per_token);
    if servers.is_empty() {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "no game server has a free slot",
        );
    }
    let mut params = TokenParams::new(config.protocol_id, user_id, servers.clone());
    params.timeout_seconds = config.timeout_seconds;
    params.expire_seconds = config.token_lifetime;
    let token = generate_connect_token(&params, &config.private_key, now);
    let Ok(bytes) = token.and_then(|t| t.write()) else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "cannot make a token");
    };
    Json(ConnectAnswer {
        token: Base64::encode_string(&bytes),
        client_id: user_id,
        servers,
        timeout_seconds: config.timeout_seconds,
        create_timestamp: now,
        expire_timestamp: now.saturating_add(config.token_lifetime),
    })
    .into_response()
}

#[derive(Deserialize)]
struct Report {
    healthy: bool,
    players: u32,
}

/// A game server's (or the orchestrator's) report: whether it takes players and how
/// many it has.
async fn report(
    State(backend): State<Arc<Backend>>,
    Path(address): Path<SocketAddr>,
    headers: HeaderMap,
    Json(report): Json<Report>,
) -> Response {
    let Some(admin_key) = &backend.config.admin_key else {
        return refuse(StatusCode::NOT_FOUND, "no such game server");
    };
    let authorized =
        bearer(&headers).is_some_and(|b| same_bytes(b.as_bytes(), admin_key.as_bytes()));
    if !authorized {
        return refuse(StatusCode::UNAUTHORIZED, "wrong admin key");
    }
    let mut servers = lock(&backend.servers);
    let Some(server) = servers.iter_mut().find(|s| s.address == address) else {
        return refuse(StatusCode::NOT_FOUND, "no such game server");
    };
    server.healthy = report.healthy;
    server.players = report.players;
    StatusCode::NO_CONTENT.into_response()
}
