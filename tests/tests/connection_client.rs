//! The sans-IO connection [`Client`] alone, with the test playing its server: what it
//! reports in each state (connecting, connected, gone), what it counts of the
//! datagrams it drops, and the nonce of its challenge response whatever sequence the
//! server's challenge carries. Exact values from one scripted exchange, on virtual
//! time.

mod capture;

use capture::Capture;
use netproto::Time;
use netproto::connection::{
    Client, ClientEvent, ClientState, ConnectionConfig, DisconnectReason, MAX_DATAGRAM_BYTES,
};
use netproto::internals::netcode::{
    AllowedPackets, CHALLENGE_TOKEN_BYTES, Packet, PacketType, read_packet,
};
use netproto::internals::packet::PacketHeader;
use netproto::netcode::{ConnectToken, Key};
use netproto::packet::Sequence;
use netproto::sim::NodeId;
use netproto_tests::sealer::Sealer;
use netproto_tests::sim_stack::{SIM_UNIX_TIME, SimBackend};
use std::time::Duration;

const PROTOCOL: u64 = 0x5eed_f00d_1234_5678;
const SERVER: NodeId = NodeId(0);
const MAX_CLIENTS: u32 = 12;
const SLOT: u32 = 5;

/// A client of a fresh token, the token, and a sealer of the server's packets to it.
fn client() -> (Client<NodeId>, ConnectToken, Sealer) {
    let token = SimBackend::new(PROTOCOL, 1).token(7, SERVER);
    let client = Client::new(ConnectionConfig::new(PROTOCOL), &token, SERVER, Time::ZERO)
        .expect("valid client");
    let sealer = Sealer {
        key: token.server_to_client_key.clone(),
        protocol_id: PROTOCOL,
        sequence: 0,
    };
    (client, token, sealer)
}

/// Every datagram the client queued.
fn sent(client: &mut Client<NodeId>) -> Vec<Vec<u8>> {
    let mut buf = [0u8; MAX_DATAGRAM_BYTES];
    std::iter::from_fn(|| {
        client
            .poll_transmit(&mut buf)
            .map(|(_, n)| buf[..n].to_vec())
    })
    .collect()
}

/// Opens a datagram of the client's with the key it seals with: (sequence, type).
fn open(token: &ConnectToken, datagram: &[u8]) -> (u64, PacketType) {
    let mut bytes = datagram.to_vec();
    let allowed = AllowedPackets::NONE
        .with(PacketType::Request)
        .with(PacketType::Response)
        .with(PacketType::KeepAlive)
        .with(PacketType::Payload)
        .with(PacketType::Disconnect);
    let (sequence, packet) = read_packet(
        &mut bytes,
        PROTOCOL,
        SIM_UNIX_TIME,
        Some(&token.client_to_server_key),
        allowed,
        None,
    )
    .expect("a packet of the client's");
    (sequence, packet.packet_type())
}

/// Plays the server through the handshake: a challenge under `challenge_sequence`,
/// then the keep-alive that connects. Returns the sequence of the client's response.
fn handshake(
    client: &mut Client<NodeId>,
    token: &ConnectToken,
    sealer: &mut Sealer,
    challenge_sequence: u64,
) -> u64 {
    let t = Time::from_secs_f64(0.01);
    client.update(t);
    let request = sent(client);
    assert_eq!(request.len(), 1, "one request per resend interval");
    let token_data = [0x5a; CHALLENGE_TOKEN_BYTES];
    let challenge = sealer.seal(&Packet::Challenge {
        token_sequence: challenge_sequence,
        token_data: &token_data,
    });
    assert!(client.handle_datagram(t, SERVER, &challenge).is_none());
    let response = sent(client);
    assert_eq!(response.len(), 1, "the response goes at once");
    let (sequence, kind) = open(token, &response[0]);
    assert_eq!(kind, PacketType::Response);
    assert!(client.is_connecting());
    let keep_alive = sealer.seal(&Packet::KeepAlive {
        client_index: SLOT,
        max_clients: MAX_CLIENTS,
    });
    assert!(client.handle_datagram(t, SERVER, &keep_alive).is_none());
    // The session's traffic starts with that keep-alive.
    let stats = client.stats().expect("connected");
    assert_eq!(
        (stats.datagrams_received, stats.bytes_received),
        (1, keep_alive.len() as u64)
    );
    sequence
}

#[test]
fn the_client_reports_its_state_slot_and_server_size_at_each_step() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (mut client, token, mut sealer) = client();
    // Before anything: connecting, nothing measured, no slot.
    assert_eq!(client.state(), ClientState::Requesting);
    assert!(client.is_connecting());
    assert!(!client.is_connected());
    assert_eq!(client.client_id(), None);
    assert_eq!(client.max_clients(), 0);
    assert!(client.stats().map(|l| l.endpoint).is_none());
    assert!(client.congestion().is_none());
    assert!(client.stats().is_none());
    assert!(!client.ready_to_send(Time::ZERO));

    handshake(&mut client, &token, &mut sealer, 9);
    assert_eq!(client.state(), ClientState::Connected);
    assert!(!client.is_connecting());
    assert!(client.is_connected());
    assert_eq!(client.client_id().map(|c| u32::from(c.0)), Some(SLOT));
    assert_eq!(client.max_clients(), MAX_CLIENTS);
    assert_eq!(
        client.poll_event(),
        Some(ClientEvent::Connected {
            client: client.client_id().expect("connected"),
            max_clients: MAX_CLIENTS,
        })
    );
    let t = Time::from_secs_f64(0.02);
    assert!(client.ready_to_send(t));
    client.send(t, b"hello").expect("connected");
    client.send(t, b"again").expect("connected");
    let counters = client.stats().map(|l| l.endpoint).expect("connected");
    assert_eq!(counters.packets_sent, 2);
    assert!(client.congestion().is_some());

    // Gone: neither connecting nor connected.
    client.disconnect(t);
    assert!(matches!(client.state(), ClientState::Disconnected(_)));
    assert!(!client.is_connecting());
    assert!(!client.is_connected());
}

#[test]
fn each_dropped_datagram_counts_once() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let (mut client, token, mut sealer) = client();
    handshake(&mut client, &token, &mut sealer, 9);
    let t = Time::from_secs_f64(0.02);
    assert_eq!(client.dropped(), 0);
    // From another address.
    let keep_alive = sealer.seal(&Packet::KeepAlive {
        client_index: SLOT,
        max_clients: MAX_CLIENTS,
    });
    assert!(client.handle_datagram(t, NodeId(9), &keep_alive).is_none());
    assert_eq!(client.dropped(), 1);
    // Sealed with the right key but refused by the packet endpoint (one byte: no
    // header).
    let headless = sealer.seal(&Packet::Payload(&[0xff]));
    assert!(client.handle_datagram(t, SERVER, &headless).is_none());
    assert_eq!(client.dropped(), 2);
    // The keep-alive refused from another address is new from the server's; a second
    // copy is a replay.
    assert!(client.handle_datagram(t, SERVER, &keep_alive).is_none());
    assert_eq!(client.dropped(), 2);
    assert!(client.handle_datagram(t, SERVER, &keep_alive).is_none());
    assert_eq!(client.dropped(), 3);
    assert!(client.is_connected(), "drops end nothing");
}

#[test]
fn the_challenge_response_is_sealed_in_the_upper_half_whatever_the_challenge_sequence() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    // The response's nonce is the challenge sequence with the top bit set and the
    // server's index in the token in bits 58 to 62 (0 here): never a nonce of the
    // client's payload packets (the lower half), nor of a response to another server
    // of the token.
    for challenge_sequence in [0, 9, (1 << 58) - 1] {
        let (mut client, token, mut sealer) = client();
        let response = handshake(&mut client, &token, &mut sealer, challenge_sequence);
        assert_eq!(
            response,
            (1 << 63) | challenge_sequence,
            "{challenge_sequence:#x}"
        );
    }
    // A challenge sequence that would reach the server index (2^58 challenges into a
    // server's run, or a hostile server's) is dropped, never answered.
    for challenge_sequence in [1 << 58, (1 << 63) | 9, u64::MAX] {
        let (mut client, _, mut sealer) = client();
        let t = Time::from_secs_f64(0.01);
        client.update(t);
        assert_eq!(sent(&mut client).len(), 1, "the request");
        let challenge = sealer.seal(&Packet::Challenge {
            token_sequence: challenge_sequence,
            token_data: &[0x5a; CHALLENGE_TOKEN_BYTES],
        });
        assert!(client.handle_datagram(t, SERVER, &challenge).is_none());
        assert_eq!(
            client.state(),
            ClientState::Requesting,
            "{challenge_sequence:#x}"
        );
        assert_eq!(client.dropped(), 1);
        assert!(sent(&mut client).is_empty(), "no response");
    }
}

#[test]
fn each_drop_is_logged_with_its_reason() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    let capture = Capture::default();
    let reasons = tracing::subscriber::with_default(capture.clone(), || {
        let (mut client, token, mut sealer) = client();
        let t = Time::from_secs_f64(0.01);
        // Requesting: a keep-alive is not expected yet, from the server or elsewhere.
        let early = sealer.seal(&Packet::KeepAlive {
            client_index: SLOT,
            max_clients: MAX_CLIENTS,
        });
        assert!(client.handle_datagram(t, SERVER, &early).is_none());
        handshake(&mut client, &token, &mut sealer, 9);
        let keep_alive = sealer.seal(&Packet::KeepAlive {
            client_index: SLOT,
            max_clients: MAX_CLIENTS,
        });
        // From another address; then too long to be a packet; then a replay.
        assert!(client.handle_datagram(t, NodeId(9), &keep_alive).is_none());
        let huge = vec![0u8; MAX_DATAGRAM_BYTES + 1];
        assert!(client.handle_datagram(t, SERVER, &huge).is_none());
        // Sealed with a key that is not the session's.
        let mut forger = Sealer {
            key: Key::from_bytes([7; 32]),
            protocol_id: PROTOCOL,
            sequence: 1000,
        };
        let forged = forger.seal(&Packet::KeepAlive {
            client_index: SLOT,
            max_clients: MAX_CLIENTS,
        });
        assert!(client.handle_datagram(t, SERVER, &forged).is_none());
        assert!(client.handle_datagram(t, SERVER, &keep_alive).is_none());
        assert!(client.handle_datagram(t, SERVER, &keep_alive).is_none());
        capture
            .take()
            .iter()
            .filter(|e| e.message() == "dropped" && e.field("side") == Some("client"))
            .map(|e| e.field("reason").unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    });
    assert_eq!(
        reasons,
        [
            "unexpected",
            "wrong_address",
            "malformed",
            "unauthenticated",
            "replayed"
        ]
    );
}

#[test]
fn a_client_caught_by_an_optimistic_ack_takes_no_other_packet() {
    let _serial = netproto_tests::serial::serial(); // see its docs: a tracing capture
    // Skips due at every send: each payload packet is followed by a skipped sequence.
    let token = SimBackend::new(PROTOCOL, 1).token(7, SERVER);
    let mut config = ConnectionConfig::new(PROTOCOL);
    config.endpoint.skip_sequence_seed = Some(1);
    config.endpoint.skip_mean_gap = Duration::from_nanos(1);
    let mut client = Client::new(config, &token, SERVER, Time::ZERO).expect("valid client");
    let mut sealer = Sealer {
        key: token.server_to_client_key.clone(),
        protocol_id: PROTOCOL,
        sequence: 0,
    };
    handshake(&mut client, &token, &mut sealer, 9);
    let t = Time::from_secs_f64(0.02);
    let first = client.send(t, b"state").expect("connected");
    let second = client.send(t, b"state").expect("connected");
    assert_eq!(
        second,
        first.next().next(),
        "the sequence between is skipped"
    );
    let payload = |sequence: u16, ack: Sequence, ack_bits: u32| {
        let mut bytes = PacketHeader {
            sequence: Sequence(sequence),
            ack,
            ack_bits,
        }
        .encode()
        .to_vec();
        bytes.extend_from_slice(b"reply");
        bytes
    };
    // The server claims the skipped packet: the endpoint catches the lie.
    let lie = sealer.seal(&Packet::Payload(&payload(0, second, 0b11)));
    assert!(client.handle_datagram(t, SERVER, &lie).is_none());
    assert_eq!(client.dropped(), 1);
    // An honest packet before the next update finds the connection already broken.
    let honest = sealer.seal(&Packet::Payload(&payload(1, first, 0b1)));
    assert!(client.handle_datagram(t, SERVER, &honest).is_none());
    assert_eq!(client.dropped(), 2);
    assert_eq!(
        client
            .stats()
            .map(|l| l.endpoint)
            .expect("connected")
            .packets_acked,
        0
    );
    client.update(t);
    assert_eq!(
        client.state(),
        ClientState::Disconnected(DisconnectReason::ProtocolError)
    );
}
