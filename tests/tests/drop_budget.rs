//! One drop budget per server: the connection and the message layer above it log
//! their drops under one rate limit (ten lines a second, then a summary). Alone in its
//! test binary: `tracing` caches whether a call site is enabled process-wide, so a
//! test on another thread without the capturing subscriber could switch the drop
//! lines off for this one.

mod capture;

use netproto::channel::{ChannelConfig, ChannelId, LayerConfig};
use netproto::connection::{ConnectionConfig, MAX_DATAGRAM_BYTES};
use netproto::sim::NodeId;
use netproto::transport::{ClientStack, ServerStack};
use netproto::{NetMessage, Time};
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};

#[derive(NetMessage, Debug, Clone, PartialEq)]
struct Hello {
    #[net(range = 0..=100)]
    n: u8,
}

#[derive(NetMessage, Debug, Clone, PartialEq)]
#[net(message_set)]
enum Msg {
    Hello(Hello),
}

const SERVER: u32 = 0;
const CLIENT: u32 = 1;

/// A connected server and client whose reliable channel buffers 8 messages, after
/// 1 ms ticks from 0; the time after.
fn connected() -> (ServerStack<u32, Msg>, ClientStack<u32, Msg>, f64) {
    let layer = LayerConfig::with_channels(vec![
        ChannelConfig::reliable().with_queues(256, 8),
        ChannelConfig::unreliable(),
    ]);
    let protocol_id = netproto::protocol_id::<Msg>(&layer);
    let mut backend = SimBackend::new(protocol_id, 99);
    let server_config = backend.server_config(NodeId(SERVER));
    let token = backend.token(1, NodeId(SERVER));
    let mut server = ServerStack::new(server_config, layer.clone(), Time::ZERO, SIM_UNIX_TIME)
        .expect("valid configuration");
    let config = ConnectionConfig::new(protocol_id);
    let mut client =
        ClientStack::new(config, &token, SERVER, layer, Time::ZERO).expect("valid configuration");
    let mut now = 0.0;
    while !client.connection().is_connected() || server.clients().count() == 0 {
        now += 0.001;
        tick(now, &mut server, &mut client);
        assert!(now < 1.0, "no handshake");
    }
    (server, client, now)
}

/// Both updates at `now`, then every datagram delivered at once.
fn tick(now: f64, server: &mut ServerStack<u32, Msg>, client: &mut ClientStack<u32, Msg>) {
    let now = Time::from_secs_f64(now);
    client.update(now);
    server.update(now);
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    while let Some((_, len)) = client.poll_transmit(&mut buf) {
        server.handle_datagram(now, CLIENT, &buf[..len]);
    }
    while let Some((_, len)) = server.poll_transmit(&mut buf) {
        client.handle_datagram(now, SERVER, &buf[..len]);
    }
}

/// A server logs at most ten drop lines a second in all: the drops of its connection
/// (datagrams from strangers) and of the message layer above it (payloads refused for
/// want of room) share one limit, and a summary counts the rest.
#[test]
fn the_connection_and_its_layers_share_one_drop_budget() {
    use capture::Capture;
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        // A reliable channel that buffers 8 messages: the client's burst of 100 makes
        // the server's layer refuse payloads for want of room.
        let (mut server, mut client, mut now) = connected();
        for n in 0..100 {
            client
                .send(ChannelId::new(0), Msg::Hello(Hello { n }))
                .expect("queued");
        }
        capture.take();
        // Within one second: the layer's refusals (the server's application takes
        // nothing), then a flood from a stranger.
        let start = now;
        while server.stack_stats().payloads_dropped_by_layer < 3 {
            now += 0.01;
            tick(now, &mut server, &mut client);
            assert!(now < start + 0.5, "no payload refused");
        }
        for _ in 0..50 {
            server.handle_datagram(Time::from_secs_f64(now), 77, &[0xff; 40]);
        }
        let lines = capture.take();
        let drops: Vec<_> = lines
            .iter()
            .filter(|e| e.target == "netproto::drop" && e.message() == "dropped")
            .collect();
        assert_eq!(drops.len(), 10, "{drops:#?}");
        let refused = drops
            .iter()
            .filter(|e| e.field("reason") == Some("payload_refused"));
        let strangers = drops
            .iter()
            .filter(|e| e.field("reason") == Some("unknown_address"));
        let (refused, strangers) = (refused.count(), strangers.count());
        assert!(
            refused >= 3,
            "the layer's refusals are logged first: {refused}"
        );
        assert_eq!(refused + strangers, 10, "one budget for both");
    });
}
