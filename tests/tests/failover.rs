//! Failover across a connect token's servers, as the netcode standard's client state
//! machine says: the client tries each address of the token in turn, each for the
//! token's timeout, and moves on after a silence, a stalled handshake or a denial.
//!
//! On the simulator and virtual time (exact times and counts from seeded runs): a
//! silent first server and a second that answers (connected within one timeout and
//! a handshake); a full first server; a first server that dies after its challenge
//! (the responses to the two servers never share a nonce); every server silent; a
//! token that expires across the servers. Over loopback with real processes: two
//! servers (`src/bin/failover_server.rs`), the first killed, and the client reaches
//! the second within its timeout.

mod handshake_world;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use handshake_world::{LATENCY, TICK, TokenSpec, World, server_config};
use netproto::channel::LayerConfig;
use netproto::connection::{ClientEvent, ClientState, DisconnectReason};
use netproto::netcode::{Key, TokenParams, generate_connect_token};
use netproto::sim::NodeId;
use netproto::transport::{Config, UdpClient};
use netproto_examples::game::GameMessage;
use netproto_tests::sim_stack::sim_address;

const FIRST: NodeId = NodeId(1);
const SECOND: NodeId = NodeId(2);
/// The netcode packet type of a connection response.
const RESPONSE: u8 = 3;

type Game = World<GameMessage, GameMessage>;

fn layer() -> LayerConfig {
    LayerConfig::default()
}

fn world(seed: u64, spec: &TokenSpec) -> Game {
    World::new(seed, &spec.token(), layer())
}

fn both() -> TokenSpec {
    TokenSpec::new::<GameMessage>(&layer(), &[FIRST, SECOND])
}

/// Asserts the client is connected to the second server, as the token names it.
fn assert_on_second(w: &Game) {
    let c = w.client.connection();
    assert!(c.is_connected());
    assert_eq!(c.server(), SECOND);
    assert_eq!(c.server_index(), 1);
    assert_eq!(c.token_server_address(), Some(sim_address(SECOND)));
    assert_eq!(w.server(SECOND).connection().connected_clients(), 1);
}

#[test]
fn a_silent_first_server_is_given_the_timeout_then_the_second_connects() {
    let mut w = world(1, &both());
    w.start_server(SECOND, server_config(SECOND, 4), layer(), 0);
    let (at, event) = w.handshake(20.0);
    assert!(matches!(event, ClientEvent::Connected { .. }), "{event:?}");
    assert_on_second(&w);
    // The first server's timeout, then one handshake: request, challenge, response,
    // keep-alive, two round trips on the tick.
    let handshake = at - 5.0;
    assert!(
        handshake > 4.0 * LATENCY.as_secs_f64() && handshake <= 4.0 * TICK + 1e-9,
        "connected {handshake} s after the first server's timeout"
    );
    assert_eq!((w.sent_to(FIRST), w.sent_to(SECOND) > 0), (40, true));
    // Nothing went to the second server before the first was given up.
    let first_to_second = w
        .sent
        .iter()
        .find(|(_, to, _)| *to == SECOND)
        .map(|(t, _, _)| *t);
    assert_eq!(first_to_second, Some(5.0));
}

#[test]
fn a_full_first_server_sends_the_client_to_the_second_at_once() {
    let spec = both();
    let mut w = world(2, &spec);
    w.start_server(FIRST, server_config(FIRST, 1), layer(), 0);
    w.start_server(SECOND, server_config(SECOND, 4), layer(), 0);
    let mut other = TokenSpec::new::<GameMessage>(&layer(), &[FIRST]);
    other.client_id = 8;
    w.add_other(NodeId(101), &other.token(), layer());
    let taken = w.run_until(1.0, |w| {
        w.server(FIRST).connection().connected_clients() == 1
    });
    assert!(taken);
    let start = w.now();
    let (at, event) = w.handshake(5.0);
    assert!(matches!(event, ClientEvent::Connected { .. }), "{event:?}");
    assert_on_second(&w);
    assert_eq!(w.server(FIRST).connection().server_stats().denials_sent, 1);
    // Denied after one round trip, connected after two more.
    assert!(
        at - start < 0.5,
        "connected {} s after the start",
        at - start
    );
    assert!(
        !w.events
            .iter()
            .any(|(_, e)| matches!(e, ClientEvent::Denied { .. })),
        "a denial by a server that is not the last is not reported"
    );
}

/// The sequence of a sealed datagram (netcode: the prefix byte's high nibble is the
/// number of sequence bytes, little-endian after it).
fn sequence(datagram: &[u8]) -> u64 {
    let bytes = usize::from(datagram[0] >> 4);
    datagram[1..=bytes]
        .iter()
        .rev()
        .fold(0, |s, &b| s << 8 | u64::from(b))
}

#[test]
fn a_first_server_that_dies_after_its_challenge_hands_over_without_reusing_a_nonce() {
    let mut w = world(3, &both());
    w.start_server(FIRST, server_config(FIRST, 4), layer(), 0);
    w.start_server(SECOND, server_config(SECOND, 4), layer(), 0);
    let challenged = w.run_until(1.0, |w| {
        w.client.connection().state() == ClientState::Responding
    });
    assert!(challenged);
    let stalled_at = w.now();
    w.kill(FIRST);
    let (at, event) = w.handshake(10.0);
    assert!(matches!(event, ClientEvent::Connected { .. }), "{event:?}");
    assert_on_second(&w);
    assert!(at - stalled_at > 5.0 && at - stalled_at < 5.5, "{at}");
    // Both servers' first challenge had sequence 0: the responses to them carry the
    // server's index in their nonce, so the client never sealed two under one.
    let responses = |node: NodeId| -> Vec<u64> {
        let mut seqs: Vec<u64> = w
            .sent
            .iter()
            .filter(|(_, to, d)| *to == node && d[0] & 0x0f == RESPONSE)
            .map(|(_, _, d)| sequence(d))
            .collect();
        seqs.dedup();
        seqs
    };
    assert_eq!(responses(FIRST), vec![1 << 63]);
    assert_eq!(responses(SECOND), vec![1 << 63 | 1 << 58]);
}

#[test]
fn every_server_silent_ends_with_no_reply_naming_the_last() {
    let mut w = world(4, &both());
    let (at, event) = w.handshake(20.0);
    assert_eq!(at, 10.0);
    let reason = DisconnectReason::NoReply {
        server: Some(sim_address(SECOND)),
        servers: 2,
        waited: Duration::from_secs(5),
        protocol_id: netproto::protocol_id::<GameMessage>(&layer()),
    };
    assert_eq!(event, ClientEvent::Disconnected { reason });
    // 40 requests each, but for the rounding of the tick's float time (one falls due
    // a tick late, after the give-up).
    assert_eq!((w.sent_to(FIRST), w.sent_to(SECOND)), (40, 39));
    assert_eq!(
        reason.to_string(),
        format!(
            "no reply from 127.0.0.1:40002 in 5 s, the last of 2 servers tried (protocol id \
             {:#018x}): the server is not running or unreachable, or it speaks another \
             protocol (other messages or channel config: its log names the id it got), or the \
             token's key is not the server's",
            netproto::protocol_id::<GameMessage>(&layer())
        )
    );
}

#[test]
fn the_token_lifetime_spans_every_server_tried() {
    let mut spec = both();
    spec.lifetime = 7;
    let mut w = world(5, &spec);
    let (at, event) = w.handshake(20.0);
    assert_eq!(at, 7.0);
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::TokenExpired
        }
    );
    assert_eq!(w.client.connection().server_index(), 1);
}

// Over loopback, with real server processes.

/// A `failover_server` process, killed when dropped.
struct ServerProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServerProcess {
    fn spawn() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_failover_server"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server process starts");
        let stdout = child.stdout.take().expect("its stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("its address");
        let addr = line.trim().parse().expect("an address");
        Self { child, addr }
    }

    fn kill(&mut self) {
        // Already gone is fine: the test only needs it dead.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn kill_the_first_server_process_and_the_client_reaches_the_second_within_its_timeout() {
    let mut first = ServerProcess::spawn();
    let second = ServerProcess::spawn();
    first.kill();
    let timeout = 2;
    let layer = LayerConfig::default();
    let mut params = TokenParams::new(
        netproto::protocol_id::<GameMessage>(&layer),
        42,
        vec![first.addr, second.addr],
    );
    params.timeout_seconds = timeout;
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let token = generate_connect_token(&params, &Key::from_bytes([0x5a; 32]), unix).expect("token");
    let mut client =
        UdpClient::<GameMessage>::connect(&token, Config::default()).expect("a client");
    assert_eq!(client.server_addr(), first.addr);
    let start = Instant::now();
    // The first server's timeout, then a loopback handshake; a generous deadline for
    // a loaded machine, not a measurement.
    let deadline = Duration::from_secs(timeout as u64 * 5);
    let mut events = Vec::new();
    while !client.is_connected() && start.elapsed() < deadline {
        client.update().expect("update");
        events.extend(client.events());
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        client.is_connected(),
        "not connected after {:?}: {:?}, {events:?}",
        start.elapsed(),
        client.state()
    );
    // Printed for the record (`-- --nocapture`), not asserted: wall-clock time.
    println!(
        "connected to {} (the token's second server) {:?} after the start, token timeout {timeout} s",
        second.addr,
        start.elapsed()
    );
    assert_eq!(client.server_addr(), second.addr);
    assert_eq!(client.connection().server_index(), 1);
    assert_eq!(
        client.connection().token_server_address(),
        Some(second.addr)
    );
    assert!(
        matches!(events.as_slice(), [ClientEvent::Connected { .. }]),
        "{events:?}"
    );
}
