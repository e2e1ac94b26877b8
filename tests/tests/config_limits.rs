//! Configuration limits are enforced where things are built: a connection whose
//! timeout could outlast a sequence wrap, and a message layer that does not fit its
//! packet endpoint, are refused by the constructors with a clear error.

use netproto::NetMessage;
use netproto::Time;
use netproto::channel::{LayerConfig, StackConfigError};
use netproto::connection::{Client, ConnectionConfig, ConnectionConfigError, Server, ServerConfig};
use netproto::netcode::Key;
use netproto::transport::{Config, TransportError, UdpClient, UdpServer, insecure_dev};
use std::time::Duration;

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
    let mut config = ConnectionConfig::new(protocol_id());
    config.max_timeout = Duration::from_secs(600);
    config.congestion.good_rate = 60.0;
    config
}

fn server_config(connection: ConnectionConfig) -> ServerConfig {
    let address = "127.0.0.1:40000".parse().expect("address");
    ServerConfig::new(connection, Key::from_bytes([1; 32]), vec![address])
}

/// A UDP server on a fresh loopback socket with `config` and `layer`.
fn udp_server(config: ServerConfig, layer: LayerConfig) -> Result<UdpServer<Msg>, TransportError> {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    UdpServer::with_socket(socket, config, layer)
}

fn protocol_id() -> u64 {
    netproto::protocol_id::<Msg>(&LayerConfig::default())
}

#[test]
fn a_timeout_that_could_outlast_a_sequence_wrap_is_refused_at_construction() {
    let server = Server::<u8>::new(server_config(wrapping()), Time::ZERO, 0);
    let err = server.expect_err("refused");
    assert!(matches!(
        err,
        ConnectionConfigError::TimeoutOutlastsSequences { .. }
    ));
    assert!(err.to_string().contains("sequence numbers"), "{err}");
    let address = "127.0.0.1:40000".parse().expect("address");
    let token = insecure_dev::token(protocol_id(), 1, address).expect("token");
    let client = Client::<u8>::new(wrapping(), &token, 0, Time::ZERO);
    assert!(matches!(
        client.expect_err("refused"),
        ConnectionConfigError::TimeoutOutlastsSequences { .. }
    ));
    // So does the transport.
    let config = server_config(wrapping());
    let udp = udp_server(config, LayerConfig::default());
    assert!(matches!(
        udp.expect_err("refused"),
        TransportError::Connection(ConnectionConfigError::TimeoutOutlastsSequences { .. })
    ));
}

#[test]
fn the_transport_refuses_a_layer_that_does_not_fit_its_endpoint() {
    // An endpoint that remembers more packets than the layer's window: the layer's
    // message-id rule would not hold.
    let mut wide = ConnectionConfig::new(protocol_id());
    wide.endpoint.received_packets_buffer_size = 1024;
    assert_eq!(wide.validate(), Ok(()), "each configuration is valid alone");
    let server = udp_server(server_config(wide.clone()), LayerConfig::default());
    let err = server.expect_err("refused");
    assert!(
        matches!(
            err,
            TransportError::Stack(StackConfigError::PacketWindow { received: 1024, .. })
        ),
        "{err}"
    );
    let server_address = "127.0.0.1:9".parse().expect("address");
    let token = insecure_dev::token(protocol_id(), 1, server_address).expect("token");
    let config = Config {
        connection: wide,
        ..Config::default()
    };
    let client = UdpClient::<Msg>::connect_with("127.0.0.1:0", server_address, &token, config);
    assert!(matches!(
        client.expect_err("refused"),
        TransportError::Stack(StackConfigError::PacketWindow { .. })
    ));
    // A layer budget above the endpoint's largest packet.
    let mut small = ConnectionConfig::new(protocol_id());
    small.endpoint.max_packet_size = 512;
    small.endpoint.fragment_above = 512;
    let server = udp_server(server_config(small), LayerConfig::default());
    assert!(matches!(
        server.expect_err("refused"),
        TransportError::Stack(StackConfigError::PacketTooLarge { .. })
    ));
}

#[test]
fn a_protocol_id_that_is_not_the_message_sets_and_channels_is_refused() {
    // Another channel configuration gives another protocol id: a server configured
    // with the default layer's id refuses to run with a different layer.
    let config = server_config(ConnectionConfig::new(protocol_id()));
    let mut other = LayerConfig::default();
    other.channels.pop();
    let err = udp_server(config, other).expect_err("refused");
    assert!(matches!(err, TransportError::ProtocolId { .. }), "{err}");
    assert!(err.to_string().contains("protocol_id"), "{err}");
    // A client refuses a token made for another protocol id, before sending anything.
    let server_address = "127.0.0.1:9".parse().expect("address");
    let token = insecure_dev::token(protocol_id() ^ 1, 1, server_address).expect("token");
    let err = UdpClient::<Msg>::connect(&token, Config::default()).expect_err("refused");
    assert!(
        matches!(
            err,
            TransportError::Connection(ConnectionConfigError::ProtocolMismatch { .. })
        ),
        "{err}"
    );
}
