//! Binary congestion avoidance over minutes of virtual time: a scripted RTT trace
//! checked rule by rule, and a connection on the simulator whose link goes bad and
//! recovers.

use netproto::Time;
use netproto::connection::{
    Client, ClientId, Congestion, CongestionConfig, ConnectionConfig, MAX_DATAGRAM_BYTES, Mode,
    Server,
};
use netproto::sim::{LinkConfig, Network, NodeId, Rng};
use netproto_tests::Millis;
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};
use std::time::Duration;

const DT: f64 = 1.0 / 60.0;

/// Oscillating conditions for 30 minutes: good stretches of 0.5 to 15 s (or 30 to 90 s) between bad ones
/// of 0.1 to 3 s, updated 60 times per second. Every rule is checked at every update
/// against the times of the transitions.
#[test]
fn scripted_rtt_follows_every_rule() {
    // The article's algorithm: starting bad.
    let config = CongestionConfig::article();
    let mut c = Congestion::new(config, Time::ZERO);
    let mut rng = Rng::new(5);
    let mut now = 0.0;
    // The expected penalty, tracked from the rules.
    let mut penalty = 4.0f64;
    let mut went_good_at = f64::NEG_INFINITY;
    let mut last_bad_sample = 0.0f64;
    let mut last_halving = 0.0f64;
    let (mut relapses, mut doublings, mut halvings, mut recoveries) = (0, 0, 0, 0);
    let mut bad = false;
    while now < 1800.0 {
        bad = !bad;
        let (rtt, seconds) = if bad {
            (rng.range_f64(251.0, 800.0), rng.range_f64(0.1, 3.0))
        } else {
            let long = rng.chance(0.3);
            let seconds = if long {
                rng.range_f64(30.0, 90.0)
            } else {
                rng.range_f64(0.5, 15.0)
            };
            (rng.range_f64(10.0, 249.0), seconds)
        };
        let end = now + seconds;
        while now < end {
            now += DT;
            let before = c.mode();
            let mode = c.update(
                Time::from_secs_f64(now),
                Duration::from_secs_f64(rtt / 1000.0),
            );
            if rtt > config.rtt_threshold.ms() {
                // Bad at once, within this very update.
                assert_eq!(mode, Mode::Bad, "at {now}");
                last_bad_sample = now;
                if before == Mode::Good {
                    relapses += 1;
                    if now - DT - went_good_at < config.relapse_window.as_secs_f64() {
                        penalty = (penalty * 2.0).min(config.max_penalty.as_secs_f64());
                        doublings += 1;
                    }
                }
            } else if before == Mode::Bad {
                // Good again exactly when `penalty` seconds of good conditions have
                // accumulated (to one update).
                let good_for = now - last_bad_sample.max(went_good_at.max(0.0));
                if mode == Mode::Good {
                    assert!(
                        good_for >= penalty - 1e-6,
                        "at {now}: {good_for} < {penalty}"
                    );
                    assert!(good_for < penalty + DT + 1e-6, "at {now}: late");
                    went_good_at = now;
                    last_halving = now;
                    recoveries += 1;
                } else {
                    assert!(good_for < penalty + DT + 1e-6, "at {now}: stuck in bad");
                }
            } else {
                assert_eq!(mode, Mode::Good);
                // Every 10 s in good halves the penalty.
                if now - last_halving >= config.reduce_every.as_secs_f64() - 1e-6 {
                    last_halving += config.reduce_every.as_secs_f64();
                    penalty = (penalty / 2.0).max(config.min_penalty.as_secs_f64());
                    halvings += 1;
                }
            }
            assert_eq!(c.penalty(), Duration::from_secs_f64(penalty), "at {now}");
            let rate = if mode == Mode::Good { 30.0 } else { 10.0 };
            assert_eq!(c.send_rate(), rate);
        }
    }
    // The trace exercised every rule.
    let counts = (relapses, doublings, halvings, recoveries);
    assert!(
        relapses > 10 && doublings > 3 && halvings > 3 && recoveries > 10,
        "{counts:?}"
    );
    assert!((1.0..=60.0).contains(&penalty));
}

#[test]
fn penalty_saturates_at_both_ends_under_a_flapping_link() {
    let mut c = Congestion::new(CongestionConfig::article(), Time::ZERO);
    let mut now = 0.0;
    let mut run = |c: &mut Congestion, rtt: f64, seconds: f64| {
        for _ in 0..(seconds / DT).round() as u32 {
            now += DT;
            c.update(
                Time::from_secs_f64(now),
                Duration::from_secs_f64(rtt / 1000.0),
            );
        }
    };
    // Relapse just after each recovery: 4, 8, 16, 32, 60, 60.
    let mut seen = Vec::new();
    for _ in 0..6 {
        while c.mode() == Mode::Bad {
            run(&mut c, 100.0, DT);
        }
        run(&mut c, 100.0, 1.0);
        run(&mut c, 400.0, DT);
        seen.push(c.penalty().as_secs_f64());
    }
    assert_eq!(seen, [8.0, 16.0, 32.0, 60.0, 60.0, 60.0]);
    // Then a long good stretch: halved every 10 s down to 1.
    run(&mut c, 100.0, 60.0 + 0.5);
    assert_eq!(c.mode(), Mode::Good);
    let mut halved = Vec::new();
    for _ in 0..7 {
        run(&mut c, 100.0, 10.0);
        halved.push(c.penalty().as_secs_f64());
    }
    assert_eq!(halved, [30.0, 15.0, 7.5, 3.75, 1.875, 1.0, 1.0]);
    // Other thresholds are honoured.
    let config = CongestionConfig {
        rtt_threshold: Duration::from_millis(100),
        initial_penalty: Duration::from_secs(2),
        good_rate: 60.0,
        ..CongestionConfig::article()
    };
    let mut c = Congestion::new(config, Time::ZERO);
    c.update(Time::from_secs_f64(2.0), Duration::from_millis(99));
    assert_eq!((c.mode(), c.send_rate()), (Mode::Good, 60.0));
    c.update(Time::from_secs_f64(2.1), Duration::from_millis(101));
    assert_eq!(c.mode(), Mode::Bad);
}

const SERVER: NodeId = NodeId(0);
const CLIENT: NodeId = NodeId(1);

/// A connection on the simulator; the server sends a payload to the client whenever
/// its congestion mode allows. The link's latency goes from 40 ms to 200 ms (each
/// way) and back, three times over four minutes.
#[test]
fn connection_mode_follows_the_link_rtt() {
    let mut backend = SimBackend::new(77, 1234);
    // The article's rates (30 and 10 packets per second), starting bad.
    let mut connection = ConnectionConfig::new(77);
    connection.congestion = CongestionConfig::article();
    let mut server_config = backend.server_config(SERVER);
    server_config.connection.congestion = CongestionConfig::article();
    let mut server: Server<NodeId> =
        Server::new(server_config, Time::ZERO, SIM_UNIX_TIME).expect("valid");
    let token = backend.token(1, SERVER);
    let mut client = Client::new(connection, &token, SERVER, Time::ZERO).expect("valid");
    let mut net = Network::new(3);
    net.set_oracle_enabled(false);
    let set_latency = |net: &mut Network, one_way: f64| {
        net.set_link_both(
            SERVER,
            CLIENT,
            LinkConfig::default()
                .with_latency(Duration::from_secs_f64(one_way))
                .with_jitter(Duration::from_millis(5)),
        );
    };
    set_latency(&mut net, 0.04);
    let mut now = 0.0;
    let mut id = None::<ClientId>;
    let mut sent_in_mode = [(0u32, 0.0f64); 2]; // (packets, seconds) in good, bad
    let mut previous_rtt = 0.0;
    let mut bad_turns = 0;
    let mut good_turns = 0;
    let mut last_mode = Mode::Bad;
    for step in 0..(240 * 60) {
        now = f64::from(step) * DT;
        match step / 60 {
            40 | 120 | 200 => set_latency(&mut net, 0.2),
            60 | 140 | 220 => set_latency(&mut net, 0.04),
            _ => {}
        }
        while let Some(d) = net.poll(Time::from_secs_f64(now)) {
            // Every payload is taken: its packet is acked.
            let delivery = if d.to == SERVER {
                server.handle_datagram(Time::from_secs_f64(now), d.from, &d.payload)
            } else {
                client.handle_datagram(Time::from_secs_f64(now), d.from, &d.payload)
            };
            if let Some(delivery) = delivery {
                delivery.accept();
            }
        }
        server.update(Time::from_secs_f64(now));
        client.update(Time::from_secs_f64(now));
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
        id = id.or_else(|| server.client_id(&CLIENT));
        if let Some(id) = id {
            let rtt = server.stats(id).expect("connected").endpoint.rtt.ms();
            let mode = server.congestion(id).expect("connected").mode();
            // The update that saw the RTT above the threshold turned the mode bad.
            if rtt > 250.0 {
                assert_eq!(mode, Mode::Bad, "at {now}: rtt {rtt}");
            }
            if mode != last_mode {
                match mode {
                    Mode::Bad => {
                        assert!(
                            previous_rtt <= 250.0 && rtt > 250.0,
                            "turned bad on the crossing"
                        );
                        bad_turns += 1;
                    }
                    _ => good_turns += 1,
                }
                last_mode = mode;
            }
            previous_rtt = rtt;
            let slot = usize::from(mode != Mode::Good);
            sent_in_mode[slot].1 += DT;
            if server.ready_to_send(Time::from_secs_f64(now), id) {
                server
                    .send(Time::from_secs_f64(now), id, b"snapshot")
                    .expect("connected");
                sent_in_mode[slot].0 += 1;
            }
        }
        // The client acks at the same rate (its inputs).
        if client.ready_to_send(Time::from_secs_f64(now)) {
            client
                .send(Time::from_secs_f64(now), b"input")
                .expect("connected");
        }
        let mut buf = [0u8; MAX_DATAGRAM_BYTES];
        while let Some((to, len)) = server.poll_transmit(&mut buf) {
            net.send(Time::from_secs_f64(now), SERVER, to, &buf[..len]);
        }
        while let Some((to, len)) = client.poll_transmit(&mut buf) {
            net.send(Time::from_secs_f64(now), CLIENT, to, &buf[..len]);
        }
    }
    assert!(client.is_connected(), "at {now}");
    // Good at the start (after 4 s), bad for each slow period, good after each.
    assert_eq!(bad_turns, 3);
    assert_eq!(good_turns, 4);
    assert_eq!(last_mode, Mode::Good);
    let rate = |(packets, seconds): (u32, f64)| f64::from(packets) / seconds;
    let (good, bad) = (rate(sent_in_mode[0]), rate(sent_in_mode[1]));
    assert!((29.0..=31.0).contains(&good), "good rate {good}");
    assert!((9.0..=11.0).contains(&bad), "bad rate {bad}");
}
