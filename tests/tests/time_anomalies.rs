//! Time anomalies: `now` going backwards, standing still and jumping minutes forward,
//! for the packet endpoint, congestion avoidance, the message layer and the
//! connection (server and client). Nothing panics or hangs, RTT is never negative,
//! the estimators recover, and timers behave as documented: a timestamp later than
//! `now` (the clock went back) counts as `now`, so every timeout and interval starts
//! over from the new time instead of waiting for the clock to catch up; a jump
//! forward is elapsed time (a connection silent for longer than `timeout` ends).

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::ChannelId;
use netproto::channel::{LayerConfig, MessageLayer};
use netproto::connection::{
    Client, ClientEvent, Congestion, CongestionConfig, ConnectionConfig, DisconnectReason,
    LinkStats, MAX_DATAGRAM_BYTES, Mode, Server, ServerEvent,
};
use netproto::packet::{Endpoint, EndpointConfig, EndpointStats, Sequence};
use netproto::sim::NodeId;
use netproto_tests::Millis;
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};
use std::time::Duration;

const TICK: f64 = 1.0 / 60.0;

fn check_stats(stats: &EndpointStats) {
    for (name, value) in [
        ("rtt", stats.rtt.ms()),
        ("rtt min", stats.rtt_min.map_or(0.0, |d| d.ms())),
        ("rtt max", stats.rtt_max.map_or(0.0, |d| d.ms())),
        ("rtt avg", stats.rtt_avg.map_or(0.0, |d| d.ms())),
        (
            "jitter avg",
            stats.jitter_avg_vs_min_rtt.map_or(0.0, |d| d.ms()),
        ),
        (
            "jitter max",
            stats.jitter_max_vs_min_rtt.map_or(0.0, |d| d.ms()),
        ),
        (
            "jitter stddev",
            stats.jitter_stddev_vs_avg_rtt.map_or(0.0, |d| d.ms()),
        ),
        ("loss", stats.packet_loss_percent.unwrap_or(0.0)),
        ("long loss", stats.packet_loss_percent_long.unwrap_or(0.0)),
        ("sent kbps", stats.sent_kbps),
        ("received kbps", stats.received_kbps),
        ("acked kbps", stats.acked_kbps),
    ] {
        assert!(
            value.is_finite() && value >= 0.0,
            "{name} is {value}: {stats:?}"
        );
    }
}

fn check_link_stats(stats: &LinkStats) {
    for (name, value) in [
        ("rtt", stats.endpoint.rtt.ms()),
        ("rtt min", stats.endpoint.rtt_min.map_or(0.0, |d| d.ms())),
        (
            "jitter",
            stats
                .endpoint
                .jitter_stddev_vs_avg_rtt
                .map_or(0.0, |d| d.ms()),
        ),
        ("ack delay", stats.endpoint.ack_delay.ms()),
        ("loss", stats.endpoint.packet_loss_percent.unwrap_or(0.0)),
        ("sent kbps", stats.sent_kbps),
        ("received kbps", stats.received_kbps),
        ("penalty", stats.penalty.as_secs_f64()),
    ] {
        assert!(
            value.is_finite() && value >= 0.0,
            "{name} is {value}: {stats:?}"
        );
    }
}

/// Two endpoints; `b` answers each packet of `a` at once, so `a` sees the time
/// between its send and the answer as RTT.
struct Pair {
    a: Endpoint,
    b: Endpoint,
}

impl Pair {
    fn new() -> Self {
        let config = EndpointConfig {
            rtt_smoothing_factor: 0.1,
            ..EndpointConfig::default()
        };
        Self {
            a: Endpoint::new(config.clone(), Time::ZERO).expect("valid"),
            b: Endpoint::new(config, Time::ZERO).expect("valid"),
        }
    }

    /// `a` sends at `sent`, `b` answers, `a` receives the answer at `answered`.
    fn round(&mut self, sent: f64, answered: f64) {
        let mut wire = Vec::new();
        self.a
            .send(Time::from_secs_f64(sent), b"ping", |d| {
                wire.push(d.to_vec())
            })
            .expect("fits");
        for d in wire.drain(..) {
            self.b
                .receive(Time::from_secs_f64(sent), &d)
                .expect("accepted")
                .accept();
        }
        self.b
            .send(Time::from_secs_f64(sent), b"pong", |d| {
                wire.push(d.to_vec())
            })
            .expect("fits");
        for d in wire.drain(..) {
            self.a
                .receive(Time::from_secs_f64(answered), &d)
                .expect("accepted")
                .accept();
        }
        self.a.update(Time::from_secs_f64(answered));
        self.b.update(Time::from_secs_f64(answered));
        check_stats(&self.a.stats());
        check_stats(&self.b.stats());
    }
}

#[test]
fn endpoint_rtt_is_never_negative_and_recovers_from_every_anomaly() {
    let mut p = Pair::new();
    let mut t = 0.0;
    for _ in 0..100 {
        p.round(t, t + 0.05);
        t += TICK;
    }
    let settled = p.a.stats().rtt.ms();
    assert!((settled - 50.0).abs() < 1.0, "{settled}");

    // Backwards: the answer arrives "before" the packet left. The sample is 0, never
    // negative.
    p.round(t, t - 60.0);
    assert!(p.a.stats().rtt.ms() >= 0.0 && p.a.stats().rtt.ms() < settled);
    t -= 60.0;
    // Standing still: every answer at the same instant.
    for _ in 0..50 {
        p.round(t, t);
    }
    assert!(p.a.stats().rtt.ms() < 1.0, "{:?}", p.a.stats());
    // Recovery at the real 50 ms.
    for _ in 0..100 {
        t += TICK;
        p.round(t, t + 0.05);
    }
    assert!(
        (p.a.stats().rtt.ms() - 50.0).abs() < 1.0,
        "{:?}",
        p.a.stats()
    );

    // Forward: one answer arrives five minutes later.
    p.round(t, t + 300.0);
    t += 300.0;
    let jumped = p.a.stats().rtt.ms();
    assert!(jumped > 1000.0, "{jumped}");
    let mut rounds = 0;
    while (p.a.stats().rtt.ms() - 50.0).abs() >= 1.0 {
        t += TICK;
        p.round(t, t + 0.05);
        rounds += 1;
        assert!(
            rounds < 200,
            "RTT still {} after {rounds} acks",
            p.a.stats().rtt.ms()
        );
    }
    // The history (min / max / jitter) forgets the outlier once it is overwritten.
    for _ in 0..600 {
        t += TICK;
        p.round(t, t + 0.05);
    }
    assert!(
        p.a.stats().rtt_max.expect("measured").ms() < 51.0,
        "{:?}",
        p.a.stats()
    );
}

#[test]
fn congestion_survives_jumps_and_a_clock_that_goes_back() {
    // Starting bad (the article's settings), to see it go good.
    let config = CongestionConfig::article();
    let mut c = Congestion::new(config, Time::ZERO);
    // Standing still: no time passes, nothing changes.
    for _ in 0..1000 {
        assert_eq!(c.update(Time::ZERO, Duration::from_millis(50)), Mode::Bad);
    }
    // Minutes forward in good conditions: good at once, the penalty halved to its
    // minimum.
    assert_eq!(
        c.update(Time::from_secs_f64(300.0), Duration::from_millis(50)),
        Mode::Good
    );
    c.update(Time::from_secs_f64(600.0), Duration::from_millis(50));
    assert_eq!(c.penalty(), config.min_penalty);
    // A jump to a far epoch must not hang (each halving period counted one by one)
    // nor break the state.
    assert_eq!(
        c.update(Time::from_secs_f64(1e18), Duration::from_millis(50)),
        Mode::Good
    );
    assert_eq!(c.penalty(), config.min_penalty);
    // Non-finite times are ignored.
    c.update(Time::from_secs_f64(f64::NAN), Duration::from_millis(50));
    c.update(
        Time::from_secs_f64(f64::INFINITY),
        Duration::from_millis(50),
    );
    assert_eq!(
        c.update(Time::from_secs_f64(1e18 + 1e3), Duration::from_millis(500)),
        Mode::Bad,
        "a bad RTT still counts"
    );
    assert!(c.penalty() < Duration::MAX && c.penalty() >= config.min_penalty);

    // The clock goes back (a new epoch): the state carries on from the new time
    // instead of freezing until the clock catches up.
    let penalty = c.penalty();
    let mut now = 0.0;
    while c.update(Time::from_secs_f64(now), Duration::from_millis(50)) == Mode::Bad {
        now += 0.1;
        assert!(
            now < (penalty + Duration::from_secs(1)).as_secs_f64(),
            "still bad at {now} after the clock went back"
        );
    }
    // And once more from good.
    let mut c = Congestion::new(config, Time::from_secs_f64(100.0));
    c.update(Time::from_secs_f64(200.0), Duration::from_millis(50));
    assert_eq!(c.mode(), Mode::Good);
    let before = c.penalty();
    let mut now = 0.0;
    for _ in 0..=(10.0 * config.reduce_every.as_secs_f64() / 0.1) as usize {
        now += 0.1;
        c.update(Time::from_secs_f64(now), Duration::from_millis(50));
    }
    assert!(
        c.penalty() < before || c.penalty() == config.min_penalty,
        "time spent in good after the clock went back counts"
    );
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Note(#[net(range = 0..=1000)] u16);

/// Packets from `a` to `b` written at `times`; returns what `b` received, in order.
fn pump(a: &mut MessageLayer<Note>, b: &mut MessageLayer<Note>, times: &[f64]) -> Vec<u16> {
    let mut payload = Vec::new();
    let mut got = Vec::new();
    for (i, &t) in times.iter().enumerate() {
        let sequence = Sequence(1000 + i as u16);
        a.write_packet(Time::from_secs_f64(t), sequence, &mut payload);
        b.read_packet(&payload).expect("valid");
        a.on_packet_acked(sequence);
        while let Some(Note(n)) = b.receive(ChannelId::new(0)) {
            got.push(n);
        }
    }
    got
}

#[test]
fn reliable_messages_are_resent_when_the_clock_goes_back() {
    let config = LayerConfig::default();
    let mut a = MessageLayer::<Note>::new(config.clone()).expect("valid");
    let mut b = MessageLayer::<Note>::new(config).expect("valid");
    for n in 0..10 {
        a.send(ChannelId::new(0), Note(n)).expect("queued");
    }
    // Sent at t = 100 and lost.
    let mut lost = Vec::new();
    a.write_packet(Time::from_secs_f64(100.0), Sequence(0), &mut lost);
    assert!(lost.len() > 1);
    // The clock goes back to 0: the messages are due again now, not at t = 100.1.
    let got = pump(&mut a, &mut b, &[0.0, 0.05, 0.1]);
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert_eq!(a.send_queue_len(ChannelId::new(0)), 0);
}

#[test]
fn reliable_resends_wait_while_time_stands_still_and_resume() {
    let config = LayerConfig::default();
    let mut a = MessageLayer::<Note>::new(config.clone()).expect("valid");
    let mut b = MessageLayer::<Note>::new(config).expect("valid");
    a.send(ChannelId::new(0), Note(7)).expect("queued");
    let mut payload = Vec::new();
    a.write_packet(Time::from_secs_f64(5.0), Sequence(0), &mut payload); // lost
    let sent = a.stats().messages_transmitted;
    // The clock stands still: no resend storm, one transmission in all.
    for i in 1..100 {
        a.write_packet(Time::from_secs_f64(5.0), Sequence(i), &mut payload);
    }
    assert_eq!(a.stats().messages_transmitted, sent);
    // Minutes forward: due at once, delivered.
    assert_eq!(pump(&mut a, &mut b, &[305.0]), vec![7]);
}

/// A client and a server on a perfect instant network, each with its own clock.
struct Link {
    server: Server<u8>,
    client: Client<u8>,
    backend: SimBackend,
    server_events: Vec<ServerEvent<u8>>,
    client_events: Vec<ClientEvent>,
    /// Payloads delivered (and accepted) at the client and at the server.
    delivered: (u64, u64),
}

const SERVER: u8 = 0;
const CLIENT: u8 = 1;

impl Link {
    fn new(client_now: f64, server_now: f64) -> Self {
        let mut backend = SimBackend::new(0x7171, 77);
        let server = Server::new(
            backend.server_config(NodeId(u32::from(SERVER))),
            Time::from_secs_f64(server_now),
            SIM_UNIX_TIME,
        )
        .expect("valid");
        let token = backend.token(1, NodeId(u32::from(SERVER)));
        let client = Client::new(
            ConnectionConfig::new(0x7171),
            &token,
            SERVER,
            Time::from_secs_f64(client_now),
        )
        .expect("valid");
        Self {
            server,
            client,
            backend,
            server_events: Vec::new(),
            client_events: Vec::new(),
            delivered: (0, 0),
        }
    }

    /// One tick: both update at their own time; `deliver` says whether the datagrams
    /// of this tick arrive (payloads are accepted).
    fn tick(&mut self, client_now: f64, server_now: f64, deliver: bool) {
        self.client.update(Time::from_secs_f64(client_now));
        self.server.update(Time::from_secs_f64(server_now));
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        while let Some((_, len)) = self.client.poll_transmit(&mut buf) {
            if deliver
                && let Some(d) = self.server.handle_datagram(
                    Time::from_secs_f64(server_now),
                    CLIENT,
                    &buf[..len],
                )
            {
                d.accept();
                self.delivered.1 += 1;
            }
        }
        while let Some((_, len)) = self.server.poll_transmit(&mut buf) {
            if deliver
                && let Some(d) = self.client.handle_datagram(
                    Time::from_secs_f64(client_now),
                    SERVER,
                    &buf[..len],
                )
            {
                d.accept();
                self.delivered.0 += 1;
            }
        }
        self.server_events
            .extend(std::iter::from_fn(|| self.server.poll_event()));
        self.client_events
            .extend(std::iter::from_fn(|| self.client.poll_event()));
        for s in self.server.clients().map(|(id, _)| id).collect::<Vec<_>>() {
            if let Some(stats) = self.server.stats(s) {
                check_link_stats(&stats);
            }
        }
    }

    fn server_disconnects(&self) -> Vec<DisconnectReason> {
        self.server_events
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Disconnected { reason, .. } => Some(*reason),
                _ => None,
            })
            .collect()
    }

    fn client_disconnected(&self) -> Option<DisconnectReason> {
        self.client_events.iter().find_map(|e| match e {
            ClientEvent::Disconnected { reason } => Some(*reason),
            _ => None,
        })
    }

    /// Connects at times `c0` (client) and `s0` (server), ticking both clocks.
    fn connect(&mut self, c0: f64, s0: f64) -> f64 {
        for i in 0..60 {
            let dt = f64::from(i) * TICK;
            self.tick(c0 + dt, s0 + dt, true);
            if self.client.is_connected() && self.server.connected_clients() == 1 {
                return dt;
            }
        }
        panic!("no connection");
    }
}

#[test]
fn keepalives_go_on_when_the_clients_clock_goes_back() {
    let mut link = Link::new(1000.0, 0.0);
    let dt = link.connect(1000.0, 0.0);
    // The client's clock goes back 1000 s; the server's goes on. Nobody sends
    // payloads: only keep-alives keep the connection.
    for i in 1..=(30.0 / TICK) as usize {
        let t = dt + i as f64 * TICK;
        link.tick(t, t, true);
    }
    assert_eq!(
        link.server_disconnects(),
        vec![],
        "the server kept hearing keep-alives"
    );
    assert_eq!(link.client_disconnected(), None);
    assert!(link.client.is_connected());
    // Then payloads both ways at the send rate: the client's RTT, measured across
    // the jump, is sane (never negative, never the 1000 s jump).
    let client = link.server.clients().next().map(|(id, _)| id).expect("one");
    let start = dt + 30.0;
    for i in 1..=(5.0 / TICK) as usize {
        let t = start + i as f64 * TICK;
        if link.client.ready_to_send(Time::from_secs_f64(t)) {
            link.client
                .send(Time::from_secs_f64(t), b"input")
                .expect("sent");
        }
        if link.server.ready_to_send(Time::from_secs_f64(t), client) {
            link.server
                .send(Time::from_secs_f64(t), client, b"state")
                .expect("sent");
        }
        link.tick(t, t, true);
    }
    // Both sides in good mode (one payload every other 60 Hz tick: the good rate is
    // 30 a second, and the first tick after the jump has a packet of credit), every
    // payload arrives.
    assert_eq!(
        link.client.congestion().map(Congestion::mode),
        Some(Mode::Good)
    );
    assert_eq!(link.delivered, (151, 151), "payloads in 5 s after the jump");
    let stats = link.client.stats().expect("connected");
    check_link_stats(&stats);
    // On an instant network an ack waits at most a send interval (0.1 s in bad mode)
    // for the peer's next packet.
    assert!(
        stats.endpoint.rtt.ms() <= 150.0,
        "the client's RTT recovered: {stats:?}"
    );
}

#[test]
fn a_silent_client_times_out_after_the_servers_clock_goes_back() {
    let mut link = Link::new(0.0, 1000.0);
    let dt = link.connect(0.0, 1000.0);
    // The server's clock goes back to 0 and the client goes silent: its slot is
    // freed `timeout` seconds later on the new clock, not 1000 s later.
    let timeout = f64::from(link.backend.timeout_seconds);
    let mut freed = None;
    for i in 1..=(3.0 * timeout / TICK) as usize {
        let t = i as f64 * TICK;
        link.tick(dt + t, t, false);
        if freed.is_none() && link.server.connected_clients() == 0 {
            freed = Some(t);
        }
    }
    let freed = freed.expect("the silent client timed out");
    assert!(
        (timeout..timeout + 0.1).contains(&freed),
        "freed after {freed} s, timeout {timeout}"
    );
    assert_eq!(link.server_disconnects(), vec![DisconnectReason::TimedOut]);
}

#[test]
fn the_handshake_goes_on_when_the_clients_clock_goes_back() {
    let mut link = Link::new(1000.0, 0.0);
    // The request sent at 1000 is lost; then the client's clock goes back to 0.
    link.tick(1000.0, 0.0, false);
    let mut connected_at = None;
    for i in 1..=120 {
        let t = f64::from(i) * TICK;
        link.tick(t, t, true);
        if link.client.is_connected() {
            connected_at = Some(t);
            break;
        }
    }
    let t = connected_at.expect("the handshake resumed on the new clock");
    assert!(t < 0.5, "connected after {t} s");

    // And a handshake that never gets an answer still gives up on the new clock,
    // after the token's timeout.
    let mut link = Link::new(1000.0, 0.0);
    link.tick(1000.0, 0.0, false);
    let connect_timeout = f64::from(link.backend.timeout_seconds);
    for i in 1..=((connect_timeout + 1.0) / TICK) as usize {
        let t = i as f64 * TICK;
        link.tick(t, t, false);
    }
    assert!(
        matches!(
            link.client_disconnected(),
            Some(DisconnectReason::NoReply {
                server: None,
                servers: 1,
                protocol_id: 0x7171,
                ..
            })
        ),
        "{:?}",
        link.client_disconnected()
    );
}

#[test]
fn a_jump_of_minutes_ends_the_connection_and_a_new_one_works() {
    let mut link = Link::new(0.0, 0.0);
    let dt = link.connect(0.0, 0.0);
    for i in 1..60 {
        let t = dt + f64::from(i) * TICK;
        link.tick(t, t, true);
    }
    // Ten minutes pass at once on both sides (a suspended host): that is silence
    // longer than the timeout, and both ends say so.
    let t = dt + 600.0;
    link.tick(t, t, true);
    assert_eq!(link.server_disconnects(), vec![DisconnectReason::TimedOut]);
    assert_eq!(link.client_disconnected(), Some(DisconnectReason::TimedOut));
    // A new client (a new token) connects at the new time.
    let token = link.backend.token(2, NodeId(u32::from(SERVER)));
    link.client = Client::new(
        ConnectionConfig::new(0x7171),
        &token,
        SERVER,
        Time::from_secs_f64(t),
    )
    .expect("valid");
    link.connect(t + TICK, t + TICK);
}

#[test]
fn a_clock_that_stands_still_breaks_nothing() {
    let mut link = Link::new(5.0, 5.0);
    link.connect(5.0, 5.0);
    let t = 5.0 + TICK;
    let client = link.server.clients().next().map(|(id, _)| id).expect("one");
    let before = link.delivered;
    let mut sent = (0, 0);
    for _ in 0..1000 {
        if link.server.ready_to_send(Time::from_secs_f64(t), client) {
            link.server
                .send(Time::from_secs_f64(t), client, b"state")
                .expect("sent");
            sent.0 += 1;
        }
        if link.client.ready_to_send(Time::from_secs_f64(t)) {
            link.client
                .send(Time::from_secs_f64(t), b"input")
                .expect("sent");
            sent.1 += 1;
        }
        link.tick(t, t, true);
    }
    // Nothing timed out, and exactly two payloads each way went out (and arrived) in
    // 1000 ticks on a frozen clock (the rate lets a second packet follow one sent
    // after a pause at once): the send rate holds.
    assert!(link.client.is_connected());
    assert_eq!(link.server.connected_clients(), 1);
    assert_eq!(sent, (2, 2));
    assert_eq!(
        (link.delivered.0 - before.0, link.delivered.1 - before.1),
        (2, 2)
    );
    assert!(!link.server.ready_to_send(Time::from_secs_f64(t), client));
    assert!(!link.client.ready_to_send(Time::from_secs_f64(t)));
    // Time resumes, for longer than the connection's timeout (so a connection the
    // frozen clock broke would end in this phase): payloads flow again both ways at
    // the send rate, and neither side disconnects.
    let timeout = f64::from(link.backend.timeout_seconds);
    let before = link.delivered;
    let mut modes = Vec::new();
    for i in 1..=((timeout + 2.0) / TICK) as usize {
        let now = t + i as f64 * TICK;
        if link.server.ready_to_send(Time::from_secs_f64(now), client) {
            link.server
                .send(Time::from_secs_f64(now), client, b"state")
                .expect("sent");
        }
        if link.client.ready_to_send(Time::from_secs_f64(now)) {
            link.client
                .send(Time::from_secs_f64(now), b"input")
                .expect("sent");
        }
        link.tick(now, now, true);
        if let Some(c) = link.client.congestion() {
            modes.push(c.mode());
        }
    }
    let resumed = (link.delivered.0 - before.0, link.delivered.1 - before.1);
    println!(
        "resumed: {resumed:?} payloads (to the client, to the server) in {} s",
        timeout + 2.0
    );
    assert!(link.client.is_connected());
    assert_eq!(link.server.connected_clients(), 1);
    assert_eq!(link.server_disconnects(), vec![]);
    assert_eq!(link.client_disconnected(), None);
    // Good mode throughout (it starts good): one payload every other 60 Hz tick (the
    // good rate, 30 a second); on this instant network every payload arrives, so the
    // counts are exact.
    assert!(modes.iter().all(|m| *m == Mode::Good), "good throughout");
    let expected = ((timeout + 2.0) * 30.0) as u64;
    assert_eq!(expected, 210);
    assert_eq!(
        resumed,
        (expected, expected),
        "payloads delivered after the freeze"
    );
}

#[test]
fn a_handshake_started_after_now_ends_when_the_clock_goes_back() {
    // Handshakes are expired at most once a second, and at once when the clock went
    // back: a handshake that started "in the future" is dropped, not kept until the
    // clock catches up.
    let mut backend = SimBackend::new(0xc10c, 4);
    let config = backend.server_config(NodeId(0));
    let mut server: Server<NodeId> = Server::new(config, Time::ZERO, SIM_UNIX_TIME).expect("valid");
    let token = backend.token(1, NodeId(0));
    let request = netproto_tests::sealer::request(&token);
    let t10 = Time::from_secs_f64(10.0);
    server.update(t10);
    assert!(server.handle_datagram(t10, NodeId(1), &request).is_none());
    server.update(t10);
    assert_eq!(server.pending_handshakes(), 1);
    server.update(Time::from_secs_f64(10.5));
    assert_eq!(server.pending_handshakes(), 1, "young, and no expiry due");
    server.update(Time::from_secs_f64(5.0));
    assert_eq!(server.pending_handshakes(), 0, "started after now: gone");
}
