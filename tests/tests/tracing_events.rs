//! netproto's `tracing` events fire with the documented targets, levels, messages and
//! fields (the table in the crate docs, "Logging"): a capturing subscriber records
//! every event while a server stack and raw clients go through a connection's life on
//! virtual time.

mod capture;

use capture::{Capture, Captured};
use netproto::Time;

use netproto::NetMessage;
use netproto::channel::LayerConfig;
use netproto::connection::{
    Client, CongestionConfig, ConnectionConfig, MAX_DATAGRAM_BYTES, ServerConfig,
};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token};
use netproto::transport::ServerStack;
use tracing::Level;

#[derive(NetMessage, Debug, Clone)]
struct Chat {
    #[net(max_len = 16)]
    text: String,
}

#[derive(NetMessage, Debug, Clone)]
#[net(message_set)]
enum Msg {
    Chat(Chat),
}

const SERVER: &str = "server";
const UNIX_TIME: u64 = 1_800_000_000;
const KEY: Key = Key::from_bytes([3; 32]);

/// A server stack with one slot and raw connection clients, on a perfect network.
struct World {
    server: ServerStack<&'static str, Msg>,
    clients: Vec<(&'static str, Client<&'static str>)>,
    config: ConnectionConfig,
    /// Datagrams from a client that the network drops.
    muted: Vec<&'static str>,
}

impl World {
    fn new() -> Self {
        let layer = LayerConfig::default();
        let mut config = ConnectionConfig::new(netproto::protocol_id::<Msg>(&layer));
        // Start in bad mode, so that a life of good conditions has a mode change to log.
        config.congestion = CongestionConfig::article();
        let address = "127.0.0.1:40000".parse().expect("address");
        let mut server_config = ServerConfig::new(config.clone(), KEY, vec![address]);
        server_config.max_clients = 1;
        let server = ServerStack::new(server_config, layer, Time::ZERO, UNIX_TIME).expect("server");
        Self {
            server,
            clients: Vec::new(),
            config,
            muted: Vec::new(),
        }
    }

    /// A connect token of `user_id`'s for the server.
    fn token(&self, user_id: u64) -> ConnectToken {
        let address = "127.0.0.1:40000".parse().expect("address");
        let params = TokenParams::new(self.config.protocol_id, user_id, vec![address]);
        generate_connect_token(&params, &KEY, UNIX_TIME).expect("token")
    }

    fn join(&mut self, name: &'static str, user_id: u64, now: f64) {
        let token = self.token(user_id);
        let client = Client::new(
            self.config.clone(),
            &token,
            SERVER,
            Time::from_secs_f64(now),
        )
        .expect("client");
        self.clients.push((name, client));
    }

    fn client(&mut self, name: &str) -> &mut Client<&'static str> {
        let (_, client) = self
            .clients
            .iter_mut()
            .find(|(n, _)| *n == name)
            .expect("a client of that name");
        client
    }

    /// One tick at `now`: every side updates, every datagram arrives at once.
    fn tick(&mut self, now: f64) {
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        for (name, client) in &mut self.clients {
            client.update(Time::from_secs_f64(now));
            while let Some((_, len)) = client.poll_transmit(&mut buf) {
                if !self.muted.contains(name) {
                    self.server
                        .handle_datagram(Time::from_secs_f64(now), name, &buf[..len]);
                }
            }
        }
        self.server.update(Time::from_secs_f64(now));
        while let Some((to, len)) = self.server.poll_transmit(&mut buf) {
            if let Some((_, client)) = self.clients.iter_mut().find(|(n, _)| *n == to)
                && let Some(delivery) =
                    client.handle_datagram(Time::from_secs_f64(now), SERVER, &buf[..len])
            {
                delivery.accept();
            }
        }
    }

    /// Ticks of 50 ms from `from` for `seconds`; returns the time after.
    fn run(&mut self, from: f64, seconds: f64) -> f64 {
        let mut now = from;
        while now < from + seconds {
            now += 0.05;
            self.tick(now);
        }
        now
    }
}

/// The one event with `message` on `side`, checked for its target and level.
fn one<'a>(events: &'a [Captured], message: &str, side: &str) -> &'a Captured {
    let found: Vec<_> = events
        .iter()
        .filter(|e| e.message() == message && e.field("side") == Some(side))
        .collect();
    assert_eq!(found.len(), 1, "{message} on the {side}: {events:#?}");
    found[0]
}

fn quoted(name: &str) -> String {
    format!("{name:?}")
}

#[test]
fn a_connection_s_life_in_events() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut world = World::new();

        // Connected, on both sides.
        world.join("a", 42, 0.0);
        let mut now = world.run(0.0, 0.5);
        assert!(world.client("a").is_connected());
        let events = capture.take();
        let server = one(&events, "connected", "server");
        assert_eq!(
            (server.target.as_str(), server.level),
            ("netproto::connection", Level::INFO)
        );
        assert_eq!(server.field("client"), Some("0"));
        assert_eq!(server.field("addr"), Some(quoted("a").as_str()));
        assert_eq!(server.field("user_id"), Some("42"));
        let client = one(&events, "connected", "client");
        assert_eq!(client.target, "netproto::connection");
        assert_eq!(client.field("client"), Some("0"));
        assert_eq!(client.field("addr"), Some(quoted(SERVER).as_str()));
        assert_eq!(client.field("max_clients"), Some("1"));

        // Denied: the only slot is taken.
        world.join("b", 43, now);
        now = world.run(now, 0.5);
        let events = capture.take();
        let server = one(&events, "denied", "server");
        assert_eq!(
            (server.target.as_str(), server.level),
            ("netproto::connection", Level::INFO)
        );
        assert_eq!(server.field("addr"), Some(quoted("b").as_str()));
        assert_eq!(server.field("reason"), Some("server_full"));
        let client = one(&events, "denied", "client");
        assert_eq!(client.field("reason"), Some("server_full"));
        assert_eq!(client.field("addr"), Some(quoted(SERVER).as_str()));

        // A flood of garbage: ten drop events, then one summary of the rest.
        for _ in 0..1000 {
            world
                .server
                .handle_datagram(Time::from_secs_f64(now), "attacker", &[0xff; 64]);
        }
        let events = capture.take();
        assert_eq!(events.len(), 10, "{events:#?}");
        for event in &events {
            assert_eq!(
                (event.target.as_str(), event.level),
                ("netproto::drop", Level::DEBUG)
            );
            assert_eq!(event.message(), "dropped");
            assert_eq!(event.field("side"), Some("server"));
            assert_eq!(event.field("addr"), Some(quoted("attacker").as_str()));
            assert_eq!(event.field("reason"), Some("unknown_address"));
        }
        now = world.run(now, 1.1);
        let events = capture.take();
        let summary = one(&events, "drop events suppressed", "server");
        assert_eq!(summary.target, "netproto::drop");
        assert_eq!(summary.field("suppressed"), Some("990"));

        // Good conditions for the penalty time: the congestion mode goes good.
        now = world.run(now, 5.0);
        let events = capture.take();
        for side in ["server", "client"] {
            let change = one(&events, "congestion mode changed", side);
            assert_eq!(
                (change.target.as_str(), change.level),
                ("netproto::congestion", Level::DEBUG)
            );
            assert_eq!(change.field("mode"), Some("good"));
            assert_eq!(change.field("client"), Some("0"));
            if side == "client" {
                // The penalty the mode change left (nothing changed it since).
                let congestion = world.client("a").congestion().expect("connected");
                let penalty = format!("{:?}", congestion.penalty().as_secs_f64());
                assert_eq!(change.field("penalty_s"), Some(penalty.as_str()));
                assert_ne!(penalty, "0.0");
            }
            for field in ["rtt_ms", "penalty_s", "send_rate"] {
                assert!(change.field(field).is_some(), "{field}: {change:#?}");
            }
        }

        // A payload the message layer finds malformed: a protocol error, then the
        // disconnection, on the server; the client hears the disconnect packets.
        world
            .client("a")
            .send(Time::from_secs_f64(now), &[0xff; 40])
            .expect("connected");
        now = world.run(now, 0.2);
        let events = capture.take();
        let error = one(&events, "protocol error", "server");
        assert_eq!(
            (error.target.as_str(), error.level),
            ("netproto::connection", Level::WARN)
        );
        assert_eq!(error.field("client"), Some("0"));
        assert!(error.field("error").is_some());
        let server = one(&events, "disconnected", "server");
        assert_eq!(server.level, Level::WARN);
        assert_eq!(server.field("reason"), Some("protocol_error"));
        assert_eq!(server.field("client"), Some("0"));
        let client = one(&events, "disconnected", "client");
        assert_eq!(client.level, Level::INFO);
        assert_eq!(client.field("reason"), Some("peer_disconnected"));

        // A client that goes silent times out on the server; the server, silent to
        // it, times out on the client.
        world.join("c", 44, now);
        now = world.run(now, 0.5);
        assert!(world.client("c").is_connected());
        capture.take();
        world.muted.push("c");
        world.run(now, 30.0);
        let events = capture.take();
        let server = one(&events, "disconnected", "server");
        assert_eq!(server.level, Level::WARN);
        assert_eq!(server.field("reason"), Some("timed_out"));
        assert_eq!(server.field("addr"), Some(quoted("c").as_str()));
        let client = one(&events, "disconnected", "client");
        assert_eq!(client.level, Level::WARN);
        assert_eq!(client.field("reason"), Some("timed_out"));
        assert_eq!(client.field("addr"), Some(quoted(SERVER).as_str()));
    });
}

#[test]
fn refusals_by_the_restart_rule_are_logged_within_the_drop_budget() {
    use netproto::connection::Server;
    use netproto::sim::NodeId;
    use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};
    let mut backend = SimBackend::new(0x7e57, 3);
    let mut config = backend.server_config(NodeId(0));
    config.max_token_lifetime = std::time::Duration::from_secs(backend.expire_seconds);
    let mut server: Server<NodeId> = Server::new(config, Time::ZERO, SIM_UNIX_TIME).expect("valid");
    // Made 10 s before the server started: refused by the restart rule.
    let token = backend.token_at(1, NodeId(0), SIM_UNIX_TIME - 10);
    let request = netproto_tests::sealer::request(&token);
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        for _ in 0..100 {
            assert!(
                server
                    .handle_datagram(Time::ZERO, NodeId(1), &request)
                    .is_none()
            );
        }
    });
    assert_eq!(server.server_stats().requests_dropped_before_start, 100);
    // Each refusal takes two log entries (the drop, the warning) from the budget of
    // ten a second: five refusals are logged, the rest counted for the summary.
    let events = capture.take();
    let warnings = events
        .iter()
        .filter(|e| {
            e.message()
                .starts_with("request refused by the restart rule")
        })
        .count();
    let drops = events
        .iter()
        .filter(|e| e.message() == "dropped" && e.field("reason") == Some("request_before_start"))
        .count();
    assert_eq!((warnings, drops), (5, 5), "{events:#?}");
}

#[test]
fn denials_are_logged_within_the_drop_budget() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut world = World::new();
        world.join("a", 42, 0.0);
        let now = world.run(0.0, 0.5) + 2.0;
        assert!(world.client("a").is_connected());
        capture.take();
        // The one slot is taken: a hundred requests of another player's, at one
        // instant, are each denied, and ten denials are logged.
        let request = netproto_tests::sealer::request(&world.token(43));
        for _ in 0..100 {
            world
                .server
                .handle_datagram(Time::from_secs_f64(now), "b", &request);
        }
        assert_eq!(world.server.connection().server_stats().denials_sent, 100);
        let denied = capture
            .take()
            .iter()
            .filter(|e| e.message() == "denied" && e.field("side") == Some("server"))
            .count();
        assert_eq!(denied, 10);
    });
}
