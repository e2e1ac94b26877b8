//! Every way a connection fails says why, on the simulator and virtual time (exact
//! times and counts from seeded runs):
//!
//! * no server: [`DisconnectReason::NoReply`] after the token's timeout, naming the
//!   address and this client's protocol id;
//! * a server that answered the request, then died: [`DisconnectReason::HandshakeStalled`];
//! * a server that died once connected: [`DisconnectReason::TimedOut`];
//! * a server of another message set, or another channel configuration: the client
//!   sees no reply (netcode forbids answering a request the server cannot open), and
//!   the server counts the request under `requests_dropped_wrong_protocol` and logs,
//!   once per address per 10 s, at warn level, both protocol ids;
//! * a token that expires before a server accepts it (at once, or while the
//!   requests go unanswered): [`DisconnectReason::TokenExpired`];
//! * a full server: [`ClientEvent::Denied`] with [`DenyReason::ServerFull`];
//! * a token the server refuses (sealed with another key): no reply, and the server
//!   counts it under `requests_dropped_unauthenticated`.
//!
//! The text of each error is pinned in an insta snapshot.

mod capture;
mod handshake_world;

use std::time::Duration;

use capture::{Capture, Captured};
use handshake_world::{TICK, TokenSpec, World, server_config};
use netproto::channel::{ChannelConfig, LayerConfig};
use netproto::connection::{ClientEvent, ClientState, DenyReason, DisconnectReason};
use netproto::sim::NodeId;
use netproto::{MessageSet, NetMessage};
use netproto_examples::game::{ChatMessage, GameMessage};
use netproto_tests::sim_stack::sim_address;
use tracing::Level;

const SERVER: NodeId = NodeId(1);
const FIVE_SECONDS: Duration = Duration::from_secs(5);

/// Another build of the game: another message set.
#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum OtherMessage {
    Chat(ChatMessage),
}

fn layer() -> LayerConfig {
    LayerConfig::default()
}

/// The default layer with one more channel: another channel configuration.
fn other_layer() -> LayerConfig {
    let mut layer = LayerConfig::default();
    layer.add(ChannelConfig::unreliable());
    layer
}

fn protocol<M: MessageSet>(layer: &LayerConfig) -> u64 {
    netproto::protocol_id::<M>(layer)
}

/// The event that ended a handshake, as text.
fn text(event: &ClientEvent) -> String {
    match event {
        ClientEvent::Disconnected { reason } => reason.to_string(),
        ClientEvent::Denied { reason } => reason.to_string(),
        other => panic!("the handshake succeeded: {other:?}"),
    }
}

/// The warn-level events of the connection target.
fn warnings(events: &[Captured]) -> Vec<&Captured> {
    events
        .iter()
        .filter(|e| e.level == Level::WARN && e.target == "netproto::connection")
        .collect()
}

fn no_server() -> (f64, ClientEvent, usize) {
    let token = TokenSpec::new::<GameMessage>(&layer(), &[SERVER]).token();
    let mut w = World::<GameMessage, GameMessage>::new(1, &token, layer());
    let (at, event) = w.handshake(20.0);
    (at, event, w.sent_to(SERVER))
}

#[test]
fn no_server_ends_with_no_reply_after_the_timeout() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (at, event, requests) = no_server();
    assert_eq!(at, 5.0);
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::NoReply {
                server: Some(sim_address(SERVER)),
                servers: 1,
                waited: FIVE_SECONDS,
                protocol_id: protocol::<GameMessage>(&layer()),
            }
        }
    );
    // One request per 0.1-second resend interval, on the 0.05-second tick (a resend
    // falls one tick late every other time: the tick's time is a sum of floats).
    assert_eq!(requests, 40);
}

fn server_gone() -> (f64, f64, ClientEvent) {
    let token = TokenSpec::new::<GameMessage>(&layer(), &[SERVER]).token();
    let mut w = World::<GameMessage, GameMessage>::new(2, &token, layer());
    w.start_server(SERVER, server_config(SERVER, 4), layer(), 0);
    let (connected, event) = w.handshake(5.0);
    assert!(
        matches!(event, ClientEvent::Connected { .. }),
        "{event:?} at {connected}"
    );
    w.run_until(2.0, |_| false);
    let killed = w.now();
    w.kill(SERVER);
    let ended = w.run_until(10.0, |w| !w.client.connection().is_connected());
    assert!(ended);
    let (at, event) = w.events.last().cloned().expect("an event");
    (killed, at, event)
}

#[test]
fn a_server_that_dies_once_connected_times_out() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (killed, at, event) = server_gone();
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::TimedOut
        }
    );
    // The token's 5 seconds from the last packet heard: the kill's tick, whose
    // packets were on their way, arrives one tick later.
    let silence = at - killed;
    assert!(
        (silence - (5.0 + TICK)).abs() < 1e-9,
        "timed out {silence} s after the kill"
    );
}

fn handshake_stalled() -> (f64, f64, ClientEvent) {
    let token = TokenSpec::new::<GameMessage>(&layer(), &[SERVER]).token();
    let mut w = World::<GameMessage, GameMessage>::new(3, &token, layer());
    w.start_server(SERVER, server_config(SERVER, 4), layer(), 0);
    let challenged = w.run_until(1.0, |w| {
        w.client.connection().state() == ClientState::Responding
    });
    assert!(challenged);
    let at_challenge = w.now();
    w.kill(SERVER);
    let (at, event) = w.handshake(10.0);
    (at_challenge, at, event)
}

#[test]
fn a_server_that_dies_after_its_challenge_stalls_the_handshake() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (challenged, at, event) = handshake_stalled();
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::HandshakeStalled {
                server: Some(sim_address(SERVER)),
                waited: FIVE_SECONDS,
                protocol_id: protocol::<GameMessage>(&layer()),
            }
        }
    );
    assert!(
        (at - challenged - 5.0).abs() < 1e-9,
        "{at} after a challenge at {challenged}"
    );
}

/// A client of `C` over `client_layer` against a server of `S` over `server_layer`
/// for 6 seconds: the event that ended the handshake, the requests the client sent,
/// what the server counted, and the warnings it logged.
fn mismatch<S: MessageSet, C: MessageSet>(
    server_layer: LayerConfig,
    client_layer: LayerConfig,
) -> (ClientEvent, usize, u64, Vec<Captured>) {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let token = TokenSpec::new::<C>(&client_layer, &[SERVER]).token();
        let mut w = World::<S, C>::new(4, &token, client_layer);
        w.start_server(SERVER, server_config(SERVER, 4), server_layer, 0);
        let (_, event) = w.handshake(6.0);
        let stats = *w.server(SERVER).connection().server_stats();
        assert_eq!(stats.challenges_sent + stats.denials_sent, 0, "answered");
        assert_eq!(w.server(SERVER).connection().pending_handshakes(), 0);
        (
            event,
            w.sent_to(SERVER),
            stats.requests_dropped_wrong_protocol,
            warnings(&capture.take()).into_iter().cloned().collect(),
        )
    })
}

/// The assertions a mismatch shares: no reply on the client, every request counted
/// on the server, one warning naming both ids.
fn assert_mismatch(
    (event, requests, counted, warnings): &(ClientEvent, usize, u64, Vec<Captured>),
    client_id: u64,
    server_id: u64,
) {
    assert_eq!(
        *event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::NoReply {
                server: Some(sim_address(SERVER)),
                servers: 1,
                waited: FIVE_SECONDS,
                protocol_id: client_id,
            }
        }
    );
    assert_eq!(*requests, 40);
    assert_eq!(*counted, 40, "every request counted");
    // Once per address per 10 s: one line for the 5 seconds of requests (and the
    // client's own `disconnected` warning).
    let from_server: Vec<_> = warnings
        .iter()
        .filter(|w| w.field("side") == Some("server"))
        .collect();
    assert_eq!(from_server.len(), 1, "{warnings:?}");
    let line = from_server[0];
    assert_eq!(
        line.message(),
        format!(
            "request for protocol id {client_id:#018x} from NodeId({}), this server speaks \
             {server_id:#018x} (a client built with other messages or another channel config; \
             not answered)",
            handshake_world::CLIENT.0
        )
    );
    assert_eq!(
        line.field("protocol_id"),
        Some(client_id.to_string().as_str())
    );
    assert_eq!(line.field("ours"), Some(server_id.to_string().as_str()));
    assert_eq!(line.field("suppressed"), Some("0"));
}

#[test]
fn a_schema_mismatch_is_no_reply_and_the_server_logs_both_ids() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let outcome = mismatch::<GameMessage, OtherMessage>(layer(), layer());
    assert_mismatch(
        &outcome,
        protocol::<OtherMessage>(&layer()),
        protocol::<GameMessage>(&layer()),
    );
}

#[test]
fn a_channel_config_mismatch_is_no_reply_and_the_server_logs_both_ids() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let outcome = mismatch::<GameMessage, GameMessage>(layer(), other_layer());
    assert_mismatch(
        &outcome,
        protocol::<GameMessage>(&other_layer()),
        protocol::<GameMessage>(&layer()),
    );
}

/// A token living 0 seconds, no server.
fn token_expired_at_once() -> (f64, ClientEvent, usize) {
    let mut spec = TokenSpec::new::<GameMessage>(&layer(), &[SERVER]);
    spec.lifetime = 0;
    let mut w = World::<GameMessage, GameMessage>::new(5, &spec.token(), layer());
    let (at, event) = w.handshake(1.0);
    (at, event, w.sent.len())
}

#[test]
fn a_token_expired_before_sending_ends_at_once_without_a_request() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (at, event, sent) = token_expired_at_once();
    assert_eq!(at, TICK, "the first update");
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::TokenExpired
        }
    );
    assert_eq!(sent, 0);
}

/// A token living 3 seconds, against a server whose clock is 10 s ahead: it drops
/// every request as expired.
fn token_expired_while_retrying() -> (f64, ClientEvent, usize, u64) {
    let mut spec = TokenSpec::new::<GameMessage>(&layer(), &[SERVER]);
    spec.lifetime = 3;
    let mut w = World::<GameMessage, GameMessage>::new(6, &spec.token(), layer());
    w.start_server(SERVER, server_config(SERVER, 4), layer(), 10);
    let (at, event) = w.handshake(10.0);
    let expired = w
        .server(SERVER)
        .connection()
        .server_stats()
        .requests_dropped_expired;
    (at, event, w.sent_to(SERVER), expired)
}

#[test]
fn a_token_that_expires_while_retrying_ends_when_its_lifetime_is_over() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (at, event, requests, expired) = token_expired_while_retrying();
    assert_eq!(at, 3.0);
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::TokenExpired
        }
    );
    assert_eq!(requests, 24);
    assert_eq!(expired, 24, "the server dropped every request as expired");
}

fn server_full() -> (ClientEvent, u64) {
    let l = layer();
    let token = TokenSpec::new::<GameMessage>(&l, &[SERVER]).token();
    let mut w = World::<GameMessage, GameMessage>::new(7, &token, l.clone());
    w.start_server(SERVER, server_config(SERVER, 1), l.clone(), 0);
    let mut first = TokenSpec::new::<GameMessage>(&l, &[SERVER]);
    first.client_id = 8;
    w.add_other(NodeId(101), &first.token(), l);
    // The other client takes the one slot before ours asks.
    let taken = w.run_until(1.0, |w| {
        w.server(SERVER).connection().connected_clients() == 1
    });
    assert!(taken);
    let (_, event) = w.handshake(5.0);
    let denials = w.server(SERVER).connection().server_stats().denials_sent;
    (event, denials)
}

#[test]
fn a_full_server_denies() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (event, denials) = server_full();
    assert_eq!(
        event,
        ClientEvent::Denied {
            reason: DenyReason::ServerFull
        }
    );
    assert_eq!(denials, 1);
}

/// A token sealed with another key than the server's: the server cannot open it.
fn refused_token() -> (ClientEvent, usize, u64) {
    let mut spec = TokenSpec::new::<GameMessage>(&layer(), &[SERVER]);
    spec.key = netproto::netcode::Key::from_bytes([0x77; 32]);
    let mut w = World::<GameMessage, GameMessage>::new(8, &spec.token(), layer());
    w.start_server(SERVER, server_config(SERVER, 4), layer(), 0);
    let (_, event) = w.handshake(6.0);
    let refused = w
        .server(SERVER)
        .connection()
        .server_stats()
        .requests_dropped_unauthenticated;
    (event, w.sent_to(SERVER), refused)
}

#[test]
fn a_token_the_server_cannot_open_is_no_reply_and_counted_there() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (event, requests, refused) = refused_token();
    assert_eq!(
        event,
        ClientEvent::Disconnected {
            reason: DisconnectReason::NoReply {
                server: Some(sim_address(SERVER)),
                servers: 1,
                waited: FIVE_SECONDS,
                protocol_id: protocol::<GameMessage>(&layer()),
            }
        }
    );
    assert_eq!((requests, refused), (40, 40));
}

#[test]
fn each_failure_has_its_own_reason() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let reasons = [
        no_server().1,
        server_gone().2,
        handshake_stalled().2,
        token_expired_at_once().1,
        server_full().0,
    ];
    for (i, a) in reasons.iter().enumerate() {
        for b in &reasons[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn failure_texts() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let schema = mismatch::<GameMessage, OtherMessage>(layer(), layer());
    let channels = mismatch::<GameMessage, GameMessage>(layer(), other_layer());
    let server_line = |w: &[Captured]| {
        w.iter()
            .find(|w| w.field("side") == Some("server"))
            .map(|w| w.message().to_owned())
            .expect("a server warning")
    };
    let lines = [
        ("no server", text(&no_server().1)),
        ("server gone", text(&server_gone().2)),
        (
            "server died during the handshake",
            text(&handshake_stalled().2),
        ),
        ("schema mismatch (client)", text(&schema.0)),
        ("schema mismatch (server log)", server_line(&schema.3)),
        ("channel config mismatch (client)", text(&channels.0)),
        (
            "channel config mismatch (server log)",
            server_line(&channels.3),
        ),
        (
            "token expired before sending",
            text(&token_expired_at_once().1),
        ),
        (
            "token expired while retrying",
            text(&token_expired_while_retrying().1),
        ),
        ("server full", text(&server_full().0)),
        ("token the server cannot open", text(&refused_token().0)),
    ];
    let text: String = lines
        .iter()
        .map(|(what, text)| format!("{what}:\n  {text}\n"))
        .collect();
    // The ids are the example game's fingerprints (pinned by the tests above): named,
    // so that a change to its messages or the default channels leaves the texts be.
    let ids = [
        (protocol::<GameMessage>(&layer()), "<GameMessage id>"),
        (protocol::<OtherMessage>(&layer()), "<OtherMessage id>"),
        (
            protocol::<GameMessage>(&other_layer()),
            "<GameMessage+channel id>",
        ),
    ];
    let text = ids.iter().fold(text, |text, (id, name)| {
        text.replace(&format!("{id:#018x}"), name)
    });
    insta::assert_snapshot!(text);
}
