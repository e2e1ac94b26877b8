//! Configuration limits are enforced where things are built: a connection whose
//! timeout could outlast a sequence wrap, and a message layer that does not fit its
//! packet endpoint, are refused by the constructors with a clear error.

use netproto::channel::{LayerConfig, StackConfigError};
use netproto::connection::{Client, ConfigError, ConnectionConfig, Server, ServerConfig};
use netproto::transport::{TransportError, UdpClient, UdpServer};
use netproto::{MessageSet, NetMessage};

#[derive(NetMessage, Debug, Clone)]
struct Ping(#[net(range = 0..=9)] u8);

#[derive(NetMessage, Debug, Clone)]
#[net(message_set)]
enum Msg {
    Ping(Ping),
}

/// Ten minutes of timeout at 60 packets a second and 10 keep-alives: 42,000 packets,
/// more than half the sequence space.
fn wrapping() -> ConnectionConfig {
    let mut config = ConnectionConfig::new(1);
    config.timeout = 600.0;
    config.congestion.good_rate = 60.0;
    config
}

#[test]
fn a_timeout_that_could_outlast_a_sequence_wrap_is_refused_at_construction() {
    let server = Server::<u8>::new(ServerConfig::new(wrapping(), [1; 16]), 0.0);
    let err = server.expect_err("refused");
    assert!(matches!(err, ConfigError::TimeoutOutlastsSequences { .. }));
    assert!(err.to_string().contains("sequence numbers"), "{err}");
    let client = Client::<u8>::new(wrapping(), 0, 1, 0.0);
    assert!(matches!(
        client.expect_err("refused"),
        ConfigError::TimeoutOutlastsSequences { .. }
    ));
    // The transport refuses it before binding anything.
    let config = ServerConfig::new(wrapping(), [1; 16]);
    let udp = UdpServer::<Msg>::bind_with("127.0.0.1:0", config, LayerConfig::default());
    assert!(matches!(
        udp.expect_err("refused"),
        TransportError::Connection(ConfigError::TimeoutOutlastsSequences { .. })
    ));
}

#[test]
fn the_transport_refuses_a_layer_that_does_not_fit_its_endpoint() {
    // An endpoint that remembers more packets than the layer's window: the layer's
    // message-id rule would not hold.
    let mut wide = ConnectionConfig::new(Msg::FINGERPRINT);
    wide.endpoint.received_packets_buffer_size = 1024;
    assert_eq!(wide.validate(), Ok(()), "each configuration is valid alone");
    let server = UdpServer::<Msg>::bind_with(
        "127.0.0.1:0",
        ServerConfig::new(wide.clone(), [2; 16]),
        LayerConfig::default(),
    );
    let err = server.expect_err("refused");
    assert!(
        matches!(
            err,
            TransportError::Stack(StackConfigError::PacketWindow { received: 1024, .. })
        ),
        "{err}"
    );
    let client =
        UdpClient::<Msg>::connect_with("127.0.0.1:0", "127.0.0.1:9", wide, LayerConfig::default());
    assert!(matches!(
        client.expect_err("refused"),
        TransportError::Stack(StackConfigError::PacketWindow { .. })
    ));
    // A layer budget above the endpoint's largest packet.
    let mut small = ConnectionConfig::new(Msg::FINGERPRINT);
    small.endpoint.max_packet_size = 512;
    small.endpoint.fragment_above = 512;
    let server = UdpServer::<Msg>::bind_with(
        "127.0.0.1:0",
        ServerConfig::new(small, [2; 16]),
        LayerConfig::default(),
    );
    assert!(matches!(
        server.expect_err("refused"),
        TransportError::Stack(StackConfigError::PacketTooLarge { .. })
    ));
}
