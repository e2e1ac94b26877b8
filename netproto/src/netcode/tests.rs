//! Unit tests of the netcode wire layer: round trips, every malformed input refused
//! with its reason, no panic on random bytes, and the replay window's edges.

use std::net::SocketAddr;

use super::address::{MAX_ADDRESS_BYTES, read_address, write_address};
use super::crypto::{seal, sequence_nonce};
use super::*;
use crate::sim::Rng;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn v6_addresses(n: u16) -> Vec<SocketAddr> {
    (0..n)
        .map(|i| {
            addr(&format!(
                "[2001:db8:ffff:{i:x}:1234:5678:9abc:def0]:{}",
                40000 + i
            ))
        })
        .collect()
}

fn private(addresses: Vec<SocketAddr>) -> ConnectTokenPrivate {
    ConnectTokenPrivate {
        client_id: 0x0102_0304_0506_0708,
        timeout_seconds: -1,
        server_addresses: addresses,
        client_to_server_key: Key::from_bytes([1; 32]),
        server_to_client_key: Key::from_bytes([2; 32]),
        user_data: [0xab; USER_DATA_BYTES],
    }
}

fn params(addresses: Vec<SocketAddr>) -> TokenParams {
    TokenParams {
        protocol_id: 0x1234,
        client_id: 99,
        timeout_seconds: 5,
        expire_seconds: 30,
        public_addresses: addresses,
        internal_addresses: None,
        user_data: [7; USER_DATA_BYTES],
    }
}

// ---------------------------------------------------------------- keys

#[test]
fn key_debug_hides_the_bytes_and_random_keys_differ() {
    let key = Key::from_bytes([0x5a; 32]);
    assert_eq!(format!("{key:?}"), "Key(..)");
    assert_eq!(key.as_bytes(), &[0x5a; 32]);
    assert_ne!(Key::random(), Key::random());
    assert_ne!(random_bytes::<24>(), random_bytes::<24>());
    assert_ne!(random_u64(), random_u64());
}

// ---------------------------------------------------------------- addresses

#[test]
fn addresses_round_trip_with_little_endian_ipv6_groups() {
    let v4 = addr("1.2.3.4:4660");
    let mut buf = [0u8; MAX_ADDRESS_BYTES];
    assert_eq!(write_address(&v4, &mut buf), 7);
    assert_eq!(&buf[..7], &[1, 1, 2, 3, 4, 0x34, 0x12]);
    assert_eq!(read_address(&buf[..7]).unwrap(), (v4, 7));
    // What follows the address is not taken.
    assert_eq!(read_address(&buf).unwrap(), (v4, 7));

    let v6 = addr("[102:304:506:708:90a:b0c:d0e:f10]:258");
    assert_eq!(write_address(&v6, &mut buf), 19);
    assert_eq!(
        buf,
        [
            2, 0x02, 0x01, 0x04, 0x03, 0x06, 0x05, 0x08, 0x07, 0x0a, 0x09, 0x0c, 0x0b, 0x0e, 0x0d,
            0x10, 0x0f, 0x02, 0x01
        ]
    );
    assert_eq!(read_address(&buf).unwrap(), (v6, 19));
}

#[test]
fn truncated_addresses_and_bad_types_are_refused() {
    let mut buf = [0u8; MAX_ADDRESS_BYTES];
    for a in [addr("9.8.7.6:5"), addr("[::1]:5")] {
        let n = write_address(&a, &mut buf);
        for len in 0..n {
            assert_eq!(
                read_address(&buf[..len]),
                Err(TokenError::Truncated),
                "{a} {len}"
            );
        }
    }
    for t in [0u8, 3, 4, 0xff] {
        buf[0] = t;
        assert_eq!(read_address(&buf), Err(TokenError::BadAddressType(t)));
    }
}

// ---------------------------------------------------------------- private part

#[test]
fn private_part_round_trips_and_seals() {
    for addresses in [vec![addr("10.0.0.1:1")], v6_addresses(32)] {
        let p = private(addresses);
        let plain = p.write().unwrap();
        assert_eq!(&plain[1008..], &[0; 16]);
        assert_eq!(ConnectTokenPrivate::read(&plain).unwrap(), p);
        let key = Key::from_bytes([3; 32]);
        let nonce = [4; NONCE_BYTES];
        let sealed = p.seal(10, 20, &nonce, &key).unwrap();
        assert_ne!(sealed[..1008], plain[..1008]);
        assert_eq!(
            ConnectTokenPrivate::open(&sealed, 10, 20, &nonce, &key).unwrap(),
            p
        );
        let other = Key::from_bytes([5; 32]);
        for (pid, exp, n, k) in [
            (11, 20, nonce, &key),
            (10, 21, nonce, &key),
            (10, 20, [0; NONCE_BYTES], &key),
            (10, 20, nonce, &other),
        ] {
            assert_eq!(
                ConnectTokenPrivate::open(&sealed, pid, exp, &n, k),
                Err(TokenError::Decrypt)
            );
        }
    }
}

#[test]
fn private_part_address_counts_outside_1_to_32_are_refused() {
    assert_eq!(private(vec![]).write(), Err(TokenError::BadAddressCount(0)));
    assert_eq!(
        private(v6_addresses(33)).write(),
        Err(TokenError::BadAddressCount(33))
    );
    let mut plain = private(vec![addr("10.0.0.1:1")]).write().unwrap();
    for count in [0u32, 33, 0x8000_0000, u32::MAX] {
        plain[12..16].copy_from_slice(&count.to_le_bytes());
        assert_eq!(
            ConnectTokenPrivate::read(&plain),
            Err(TokenError::BadAddressCount(count))
        );
    }
    // 32 addresses of type 0: refused at the first.
    plain[12..16].copy_from_slice(&32u32.to_le_bytes());
    plain[16] = 0;
    assert_eq!(
        ConnectTokenPrivate::read(&plain),
        Err(TokenError::BadAddressType(0))
    );
    // Two addresses claimed, the second of type 0.
    let mut plain = [0u8; CONNECT_TOKEN_PRIVATE_BYTES];
    plain[12..16].copy_from_slice(&2u32.to_le_bytes());
    plain[16] = 1;
    assert_eq!(
        ConnectTokenPrivate::read(&plain),
        Err(TokenError::BadAddressType(0))
    );
}

#[test]
fn the_largest_private_part_fits_before_the_tag() {
    // 32 IPv6 addresses (the largest legal layout) fill 16 + 608 bytes; keys and user
    // data still fit before the tag at 1008, so a legal layout never overruns.
    let p = private(v6_addresses(32));
    let plain = p.write().unwrap();
    assert_eq!(ConnectTokenPrivate::read(&plain).unwrap(), p);
    const { assert!(16 + 32 * 19 + 64 + USER_DATA_BYTES <= 1008) };
}

// ---------------------------------------------------------------- connect token

#[test]
fn connect_token_round_trips() {
    let key = Key::from_bytes([9; 32]);
    let mut pr = params(v6_addresses(32));
    pr.internal_addresses = Some(
        (0..32u16)
            .map(|i| addr(&format!("10.0.{}.{}:{}", i / 8, i, 1000 + i)))
            .collect(),
    );
    let token = generate_connect_token(&pr, &key, 1_000).unwrap();
    assert_eq!(token.create_timestamp, 1_000);
    assert_eq!(token.expire_timestamp, 1_030);
    let bytes = token.write().unwrap();
    assert_eq!(&bytes[..13], &VERSION_INFO);
    assert_eq!(&bytes[61..1085], &token.private_data);
    let read = ConnectToken::read(&bytes).unwrap();
    assert_eq!(read, token);
    let opened = ConnectTokenPrivate::open(
        &read.private_data,
        read.protocol_id,
        read.expire_timestamp,
        &read.nonce,
        &key,
    )
    .unwrap();
    assert_eq!(Some(opened.server_addresses.clone()), pr.internal_addresses);
    assert_eq!(opened.client_to_server_key, read.client_to_server_key);
    assert_eq!(opened.server_to_client_key, read.server_to_client_key);
    assert_eq!((opened.client_id, opened.timeout_seconds), (99, 5));

    // Internal addresses default to the public ones; an expiry past u64::MAX saturates.
    let mut pr = params(vec![addr("1.1.1.1:1")]);
    pr.expire_seconds = u64::MAX;
    let token = generate_connect_token(&pr, &key, 1_000).unwrap();
    assert_eq!(token.expire_timestamp, u64::MAX);
    let opened = ConnectTokenPrivate::open(
        &token.private_data,
        token.protocol_id,
        token.expire_timestamp,
        &token.nonce,
        &key,
    )
    .unwrap();
    assert_eq!(opened.server_addresses, pr.public_addresses);
    // Two tokens never share keys or nonce.
    let again = generate_connect_token(&pr, &key, 1_000).unwrap();
    assert_ne!(again.nonce, token.nonce);
    assert_ne!(again.client_to_server_key, token.client_to_server_key);
}

#[test]
fn connect_token_generation_refuses_bad_parameters() {
    let key = Key::from_bytes([9; 32]);
    assert_eq!(
        generate_connect_token(&params(vec![]), &key, 0),
        Err(TokenError::BadAddressCount(0))
    );
    assert_eq!(
        generate_connect_token(&params(v6_addresses(33)), &key, 0),
        Err(TokenError::BadAddressCount(33))
    );
    let mut pr = params(v6_addresses(2));
    pr.internal_addresses = Some(v6_addresses(3));
    assert_eq!(
        generate_connect_token(&pr, &key, 0),
        Err(TokenError::AddressCountMismatch)
    );
    pr.internal_addresses = Some(vec![]);
    assert_eq!(
        generate_connect_token(&pr, &key, 0),
        Err(TokenError::BadAddressCount(0))
    );
    let pr = params(v6_addresses(2));
    assert_eq!(
        generate_connect_token_with(&pr, &key, 2, 1, [0; 24], key.clone(), key.clone()),
        Err(TokenError::BadTimestamps)
    );
    // The boundary: a token that expires the second it is made is well formed (the
    // reader accepts the same timestamps; a server refuses it as expired).
    let token = generate_connect_token_with(&pr, &key, 2, 2, [0; 24], key.clone(), key.clone())
        .expect("equal timestamps are well formed");
    assert_eq!((token.create_timestamp, token.expire_timestamp), (2, 2));
}

#[test]
fn allowed_packet_sets_add_and_remove_one_type_each() {
    let types: Vec<PacketType> = (0..=u8::MAX).filter_map(PacketType::from_id).collect();
    assert_eq!(types.len(), 7);
    for (i, &a) in types.iter().enumerate() {
        let one = AllowedPackets::NONE.with(a);
        for &b in &types {
            assert_eq!(one.contains(b), a == b, "{a:?} then {b:?}");
        }
        // Adding a type twice keeps it; adding another keeps both.
        assert!(one.with(a).contains(a));
        let next = types[(i + 1) % types.len()];
        let two = one.with(next);
        assert!(two.contains(a) && two.contains(next));
        // Removing one leaves the other, and only the other.
        let left = two.without(a);
        for &b in &types {
            assert_eq!(
                left.contains(b),
                b == next,
                "{a:?}, {next:?} without {a:?}: {b:?}"
            );
        }
        assert!(!AllowedPackets::ALL.without(a).contains(a));
        assert!(AllowedPackets::ALL.without(a).contains(next));
    }
}

#[test]
fn malformed_connect_tokens_are_refused() {
    let key = Key::from_bytes([9; 32]);
    let token = generate_connect_token(&params(vec![addr("1.2.3.4:5")]), &key, 100).unwrap();
    let good = token.write().unwrap();
    for len in [0, 1, 2047, 2049, 4096] {
        let mut v = good.to_vec();
        v.resize(len, 0);
        assert_eq!(ConnectToken::read(&v), Err(TokenError::WrongSize(len)));
    }
    for i in 0..13 {
        let mut b = good;
        b[i] ^= 0x20;
        assert_eq!(
            ConnectToken::read(&b),
            Err(TokenError::BadVersion),
            "byte {i}"
        );
    }
    // create (21..29) after expire (29..37)
    let mut b = good;
    b[21..29].copy_from_slice(&200u64.to_le_bytes());
    assert_eq!(ConnectToken::read(&b), Err(TokenError::BadTimestamps));
    b[29..37].copy_from_slice(&200u64.to_le_bytes());
    assert!(ConnectToken::read(&b).is_ok()); // equal is fine
    for count in [0u32, 33, u32::MAX] {
        let mut b = good;
        b[1089..1093].copy_from_slice(&count.to_le_bytes());
        assert_eq!(
            ConnectToken::read(&b),
            Err(TokenError::BadAddressCount(count))
        );
    }
    for t in [0u8, 3, 0xff] {
        let mut b = good;
        b[1093] = t;
        assert_eq!(ConnectToken::read(&b), Err(TokenError::BadAddressType(t)));
    }
    // 32 IPv6 addresses fit (1093 + 32 * 19 + 64 <= 2048).
    let big = generate_connect_token(&params(v6_addresses(32)), &key, 100).unwrap();
    assert_eq!(ConnectToken::read(&big.write().unwrap()).unwrap(), big);
    // A count of 32 over a token holding one address: the rest reads as type 0.
    let mut b = good;
    b[1089..1093].copy_from_slice(&32u32.to_le_bytes());
    assert!(ConnectToken::read(&b).is_err());
}

// ---------------------------------------------------------------- challenge token

#[test]
fn challenge_token_round_trips_and_refuses_wrong_key_or_sequence() {
    let key = Key::from_bytes([4; 32]);
    let token = ChallengeToken {
        client_id: u64::MAX,
        user_data: [0xee; USER_DATA_BYTES],
    };
    let sealed = token.seal(u64::MAX, &key);
    assert_eq!(
        ChallengeToken::open(&sealed, u64::MAX, &key).unwrap(),
        token
    );
    assert_eq!(
        ChallengeToken::open(&sealed, 0, &key),
        Err(TokenError::Decrypt)
    );
    assert_eq!(
        ChallengeToken::open(&sealed, u64::MAX, &Key::from_bytes([5; 32])),
        Err(TokenError::Decrypt)
    );
    for i in [0, 150, 283, 284, 299] {
        let mut t = sealed;
        t[i] ^= 1;
        assert_eq!(
            ChallengeToken::open(&t, u64::MAX, &key),
            Err(TokenError::Decrypt)
        );
    }
}

// ---------------------------------------------------------------- packets

const PID: u64 = 0x0bad_cafe_f00d_1234;

fn request_private() -> [u8; CONNECT_TOKEN_PRIVATE_BYTES] {
    let mut p = [0u8; CONNECT_TOKEN_PRIVATE_BYTES];
    for (i, b) in p.iter_mut().enumerate() {
        *b = (i * 7) as u8;
    }
    p
}

/// One packet of every type (the request borrows `private`, the challenge and
/// response `token`).
fn every_packet<'a>(
    private: &'a [u8; CONNECT_TOKEN_PRIVATE_BYTES],
    token: &'a [u8; CHALLENGE_TOKEN_BYTES],
    payload: &'a [u8],
) -> [Packet<'a>; 7] {
    [
        Packet::Request {
            protocol_id: PID,
            expire_timestamp: 1000,
            nonce: [3; NONCE_BYTES],
            private_data: private,
        },
        Packet::Denied,
        Packet::Challenge {
            token_sequence: 77,
            token_data: token,
        },
        Packet::Response {
            token_sequence: u64::MAX,
            token_data: token,
        },
        Packet::KeepAlive {
            client_index: 3,
            max_clients: 64,
        },
        Packet::Payload(payload),
        Packet::Disconnect,
    ]
}

fn read_all<'a>(datagram: &'a mut [u8], key: &Key) -> Result<(u64, Packet<'a>), ReadError> {
    read_packet(datagram, PID, 999, Some(key), AllowedPackets::ALL, None)
}

#[test]
fn every_packet_type_round_trips_at_every_sequence_width() {
    let key = Key::from_bytes([8; 32]);
    let private = request_private();
    let token = [0x5c; CHALLENGE_TOKEN_BYTES];
    let payload = [0x42; MAX_PAYLOAD_BYTES];
    let sequences = [
        0,
        1,
        0xff,
        0x100,
        0xffff_ffff,
        0x0100_0000_0000_0000,
        u64::MAX,
    ];
    for payload_len in [1, 100, MAX_PAYLOAD_BYTES] {
        for packet in every_packet(&private, &token, &payload[..payload_len]) {
            for (width, &sequence) in [1, 1, 1, 2, 4, 8, 8].iter().zip(&sequences) {
                let mut buf = [0u8; MAX_PACKET_BYTES];
                let n = write_packet(&packet, sequence, &key, PID, &mut buf).unwrap();
                assert!(n <= MAX_PACKET_BYTES.max(CONNECTION_REQUEST_BYTES));
                let (read_seq, read) = read_all(&mut buf[..n], &key).unwrap();
                assert_eq!(read, packet);
                if packet.packet_type() == PacketType::Request {
                    assert_eq!((n, read_seq), (CONNECTION_REQUEST_BYTES, 0));
                } else {
                    assert_eq!(read_seq, sequence);
                    assert_eq!(buf[0], packet.packet_type().id() | (width << 4));
                    assert!(n >= MIN_ENCRYPTED_PACKET_BYTES);
                }
            }
        }
    }
    // The smallest packets are exactly the reference's minimum.
    let mut buf = [0u8; 64];
    assert_eq!(
        write_packet(&Packet::Denied, 5, &key, PID, &mut buf),
        Ok(MIN_ENCRYPTED_PACKET_BYTES)
    );
    assert_eq!(
        write_packet(&Packet::Disconnect, 5, &key, PID, &mut buf),
        Ok(MIN_ENCRYPTED_PACKET_BYTES)
    );
}

#[test]
fn every_truncation_and_extension_is_refused() {
    let key = Key::from_bytes([8; 32]);
    let private = request_private();
    let token = [0x5c; CHALLENGE_TOKEN_BYTES];
    for packet in every_packet(&private, &token, b"abc") {
        let mut buf = [0u8; CONNECTION_REQUEST_BYTES + 1];
        let n = write_packet(&packet, 0x1234, &key, PID, &mut buf).unwrap();
        for len in 0..n {
            let mut copy = buf;
            let err = read_all(&mut copy[..len], &key).unwrap_err();
            let expected_ok = match packet.packet_type() {
                PacketType::Request if len == 0 => err == ReadError::TooSmall,
                PacketType::Request => err == ReadError::WrongSize(len),
                _ if len < 1 + 2 + MAC_BYTES => err == ReadError::TooSmall,
                _ => err == ReadError::Decrypt,
            };
            assert!(expected_ok, "{packet:?} truncated to {len}: {err:?}");
        }
        let mut copy = buf;
        let err = read_all(&mut copy[..n + 1], &key).unwrap_err();
        if packet.packet_type() == PacketType::Request {
            assert_eq!(err, ReadError::WrongSize(n + 1));
        } else {
            assert_eq!(err, ReadError::Decrypt);
        }
    }
}

#[test]
fn request_checks_version_protocol_and_expiry() {
    let key = Key::from_bytes([8; 32]);
    let private = request_private();
    let request = Packet::Request {
        protocol_id: PID,
        expire_timestamp: 1000,
        nonce: [3; NONCE_BYTES],
        private_data: &private,
    };
    let mut buf = [0u8; CONNECTION_REQUEST_BYTES];
    write_packet(&request, 0, &key, 0, &mut buf).unwrap();
    let read = |b: &mut [u8], pid: u64, now: u64, allowed: AllowedPackets| {
        read_packet(b, pid, now, None, allowed, None).map(|(s, p)| (s, p.packet_type()))
    };
    // No key needed for a request.
    assert_eq!(
        read(&mut { buf }, PID, 999, AllowedPackets::ALL),
        Ok((0, PacketType::Request))
    );
    assert_eq!(
        read(&mut { buf }, PID, 1000, AllowedPackets::ALL),
        Err(ReadError::Expired)
    );
    assert_eq!(
        read(&mut { buf }, PID ^ 1, 0, AllowedPackets::ALL),
        Err(ReadError::ProtocolMismatch)
    );
    assert_eq!(
        read(
            &mut { buf },
            PID,
            0,
            AllowedPackets::ALL.without(PacketType::Request)
        ),
        Err(ReadError::NotAllowed(PacketType::Request))
    );
    for i in 1..14 {
        let mut b = buf;
        b[i] ^= 0x01;
        assert_eq!(
            read(&mut b, PID, 0, AllowedPackets::ALL),
            Err(ReadError::BadVersion)
        );
    }
    // A request that does not fit the output buffer.
    assert_eq!(
        write_packet(&request, 0, &key, 0, &mut [0u8; 1077]),
        Err(WriteError::BufferTooSmall { needed: 1078 })
    );
}

#[test]
fn prefix_errors_are_refused_before_decryption() {
    let key = Key::from_bytes([8; 32]);
    let mut buf = [0u8; 64];
    let n = write_packet(
        &Packet::KeepAlive {
            client_index: 1,
            max_clients: 2,
        },
        9,
        &key,
        PID,
        &mut buf,
    )
    .unwrap();
    let packet = buf;
    assert_eq!(
        read_packet(
            &mut { packet }[..n],
            PID,
            0,
            None,
            AllowedPackets::ALL,
            None
        ),
        Err(ReadError::NoKey)
    );
    for t in 7u8..16 {
        let mut b = packet;
        b[0] = (b[0] & 0xf0) | t;
        assert_eq!(read_all(&mut b[..n], &key), Err(ReadError::UnknownType(t)));
    }
    for s in [0u8, 9, 10, 15] {
        let mut b = packet;
        b[0] = (s << 4) | PacketType::KeepAlive.id();
        assert_eq!(
            read_all(&mut b[..n], &key),
            Err(ReadError::BadSequenceBytes(s))
        );
    }
    // A prefix of type 0 with sequence bytes: never a valid packet.
    let mut b = packet;
    b[0] = 0x10;
    assert_eq!(read_all(&mut b[..n], &key), Err(ReadError::UnknownType(0)));
    // Not allowed.
    let allowed = AllowedPackets::NONE
        .with(PacketType::Payload)
        .with(PacketType::Disconnect);
    assert_eq!(
        read_packet(&mut { packet }[..n], PID, 0, Some(&key), allowed, None),
        Err(ReadError::NotAllowed(PacketType::KeepAlive))
    );
    // Eight sequence bytes need 1 + 8 + 16 bytes.
    let mut b = packet;
    b[0] = 0x80 | PacketType::Denied.id();
    assert_eq!(read_all(&mut b[..24], &key), Err(ReadError::TooSmall));
    assert_eq!(read_all(&mut b[..25], &key), Err(ReadError::Decrypt));
    assert_eq!(read_all(&mut [], &key), Err(ReadError::TooSmall));
    assert_eq!(read_all(&mut [0x14; 17], &key), Err(ReadError::TooSmall));
}

#[test]
fn a_packet_sealed_under_one_key_or_protocol_does_not_open_under_another() {
    let key = Key::from_bytes([8; 32]);
    let other = Key::from_bytes([9; 32]);
    let mut buf = [0u8; 64];
    let n = write_packet(
        &Packet::KeepAlive {
            client_index: 1,
            max_clients: 2,
        },
        9,
        &key,
        PID,
        &mut buf,
    )
    .unwrap();
    let packet = buf;
    assert_eq!(read_all(&mut { buf }[..n], &other), Err(ReadError::Decrypt));
    assert_eq!(
        read_packet(
            &mut buf[..n],
            PID ^ 1,
            0,
            Some(&key),
            AllowedPackets::ALL,
            None
        ),
        Err(ReadError::Decrypt)
    );
    // A failed open leaves the prefix, sequence and tag as they were and wipes the
    // body it could not authenticate (ring decrypts as it authenticates): callers open
    // a copy of what they received.
    assert_eq!(buf[..2], packet[..2]);
    assert!(buf[2..n - MAC_BYTES].iter().all(|&b| b == 0));
    assert_eq!(buf[n - MAC_BYTES..], packet[n - MAC_BYTES..]);
    // Changing the type in the prefix (same sequence width) breaks the tag.
    let mut b = packet;
    b[0] = (b[0] & 0xf0) | PacketType::Payload.id();
    assert_eq!(read_all(&mut b[..n], &key), Err(ReadError::Decrypt));
}

/// A packet with a valid tag over a body of the wrong length for its type.
fn sealed_with_body(packet_type: PacketType, sequence: u8, body: &[u8], key: &Key) -> Vec<u8> {
    let prefix = 0x10 | packet_type.id();
    let mut out = vec![prefix, sequence];
    let mut sealed = body.to_vec();
    let mut ad = VERSION_INFO.to_vec();
    ad.extend_from_slice(&PID.to_le_bytes());
    ad.push(prefix);
    let tag = seal(&mut sealed, &ad, &sequence_nonce(u64::from(sequence)), key).unwrap();
    out.extend_from_slice(&sealed);
    out.extend_from_slice(&tag);
    out
}

#[test]
fn bodies_of_the_wrong_length_are_refused_after_decryption() {
    let key = Key::from_bytes([8; 32]);
    let cases: &[(PacketType, usize)] = &[
        (PacketType::Denied, 1),
        (PacketType::Denied, 4),
        (PacketType::Disconnect, 1),
        (PacketType::Challenge, 307),
        (PacketType::Challenge, 309),
        (PacketType::Response, 0),
        (PacketType::Response, 8),
        (PacketType::KeepAlive, 0),
        (PacketType::KeepAlive, 7),
        (PacketType::KeepAlive, 9),
        (PacketType::Payload, 0),
        (PacketType::Payload, MAX_PAYLOAD_BYTES + 1),
    ];
    for &(packet_type, len) in cases {
        let mut datagram = sealed_with_body(packet_type, 42, &vec![0u8; len], &key);
        let mut window = ReplayProtection::new();
        assert_eq!(
            read_packet(
                &mut datagram,
                PID,
                0,
                Some(&key),
                AllowedPackets::ALL,
                Some(&mut window)
            ),
            Err(ReadError::BadBody(len)),
            "{packet_type:?} with {len} bytes"
        );
        // As in the reference, the window records a sequence whose tag verified even
        // when the body is then refused.
        assert_eq!(
            window.already_received(42),
            packet_type.is_replay_protected()
        );
    }
}

#[test]
fn write_refuses_bad_payloads_and_small_buffers() {
    let key = Key::from_bytes([8; 32]);
    let mut buf = [0u8; MAX_PACKET_BYTES];
    assert_eq!(
        write_packet(&Packet::Payload(&[]), 1, &key, PID, &mut buf),
        Err(WriteError::BadPayloadSize(0))
    );
    let big = [0u8; MAX_PAYLOAD_BYTES + 1];
    assert_eq!(
        write_packet(&Packet::Payload(&big), 1, &key, PID, &mut buf),
        Err(WriteError::BadPayloadSize(MAX_PAYLOAD_BYTES + 1))
    );
    assert_eq!(
        write_packet(&Packet::Payload(&big[1..]), u64::MAX, &key, PID, &mut buf),
        Ok(MAX_PACKET_BYTES)
    );
    assert_eq!(
        write_packet(&Packet::Payload(b"xy"), 1, &key, PID, &mut buf[..19]),
        Err(WriteError::BufferTooSmall { needed: 20 })
    );
}

// ---------------------------------------------------------------- replay window

#[test]
fn replay_window_is_checked_before_decryption_and_advanced_after() {
    let key = Key::from_bytes([8; 32]);
    let mut window = ReplayProtection::new();
    let mut buf = [0u8; 64];
    let n = write_packet(&Packet::Payload(b"p"), 300, &key, PID, &mut buf).unwrap();
    let packet = buf;

    // A tampered copy fails to open and records nothing.
    let mut bad = packet;
    bad[n - 1] ^= 1;
    let read = |b: &mut [u8], w: &mut ReplayProtection| {
        read_packet(b, PID, 0, Some(&key), AllowedPackets::ALL, Some(w)).map(|(s, _)| s)
    };
    assert_eq!(read(&mut bad[..n], &mut window), Err(ReadError::Decrypt));
    assert_eq!(window.most_recent(), 0);
    assert!(!window.already_received(300));

    assert_eq!(read(&mut { buf }[..n], &mut window), Ok(300));
    assert_eq!(window.most_recent(), 300);
    // Replayed: refused before the (tampered) tag is even looked at.
    assert_eq!(read(&mut bad[..n], &mut window), Err(ReadError::Replayed));
    assert_eq!(
        read(&mut { buf }[..n], &mut window),
        Err(ReadError::Replayed)
    );

    // Challenge packets are not replay-protected.
    let token = [0u8; CHALLENGE_TOKEN_BYTES];
    let mut c = [0u8; 400];
    let challenge = Packet::Challenge {
        token_sequence: 1,
        token_data: &token,
    };
    let m = write_packet(&challenge, 1, &key, PID, &mut c).unwrap();
    assert_eq!(read(&mut { c }[..m], &mut window), Ok(1));
    assert_eq!(read(&mut c[..m], &mut window), Ok(1));
}

#[test]
fn replay_window_matches_the_reference_across_the_2_64_wrap() {
    // Too old: sequence + 256 <= most recent, in wrapping arithmetic.
    let w = ReplayProtection::with_most_recent(300);
    assert!(w.already_received(44));
    assert!(!w.already_received(45));

    // Near 2^64 the addition wraps: u64::MAX - 255 + 256 = 0 <= 0, so a fresh window
    // refuses exactly that one sequence as too old, and no other near the top.
    let fresh = ReplayProtection::new();
    assert!(fresh.already_received(u64::MAX - 255));
    for k in 1..256 {
        assert!(!fresh.already_received(u64::MAX - 255 + k));
    }
    let w = ReplayProtection::with_most_recent(50);
    assert!(!w.already_received(u64::MAX - 200)); // wraps to 55 > 50
    assert!(w.already_received(u64::MAX - 210)); // wraps to 45 <= 50

    // Once the most recent sequence is at least 256, every sequence in the last 256
    // below 2^64 wraps to a small value and is refused as too old, even if it is newer.
    let mut w = ReplayProtection::with_most_recent(u64::MAX - 300);
    for s in (u64::MAX - 300)..(u64::MAX - 255) {
        assert!(!w.already_received(s), "{s}");
        w.advance(s);
        assert!(w.already_received(s));
    }
    assert_eq!(w.most_recent(), u64::MAX - 256);
    for s in (u64::MAX - 255)..=u64::MAX {
        assert!(w.already_received(s), "{s}");
    }
    // The sequences after the wrap are all too old as well.
    for s in [0, 1, 100, 1 << 40] {
        assert!(w.already_received(s), "{s}");
    }
    // A fresh window accepts the top ones (they wrap to 1..=255 > 0)...
    let mut w = ReplayProtection::new();
    assert!(!w.already_received(u64::MAX));
    w.advance(u64::MAX - 10);
    // ...but once one is recorded, all of the top 256 (u64::MAX included) wrap below
    // the most recent and are too old: the window is dead past 2^64 - 256.
    for s in (u64::MAX - 255)..=u64::MAX {
        assert!(w.already_received(s), "{s}");
    }
    w.advance(u64::MAX);
    assert_eq!(w.most_recent(), u64::MAX);
    assert!(w.already_received(u64::MAX));
    // At u64::MAX every sequence is too old: the top 256 wrap, the rest are > 256 back.
    for s in [
        0,
        255,
        1 << 63,
        u64::MAX - 300,
        u64::MAX - 256,
        u64::MAX - 1,
    ] {
        assert!(w.already_received(s), "{s}");
    }
}

#[test]
fn slots_hold_the_newest_sequence() {
    let mut w = ReplayProtection::new();
    w.advance(1000);
    assert!(w.already_received(1000));
    assert!(!w.already_received(1001));
    assert!(!w.already_received(999));
    w.advance(999);
    assert!(w.already_received(999));
    // 1000 - 256 = 744 shares slot with 1000: too old anyway.
    assert!(w.already_received(744));
    assert!(!w.already_received(745));
}

// ---------------------------------------------------------------- hostile input

#[test]
fn random_bytes_never_panic() {
    let key = Key::from_bytes([8; 32]);
    let mut rng = Rng::new(0x006e_6574_636f_6465);
    let mut window = ReplayProtection::new();
    let mut buf = vec![0u8; 1300];
    let mut accepted = 0;
    for round in 0..20_000 {
        let len = match round % 4 {
            0 => rng.below(40) as usize,
            1 => CONNECTION_REQUEST_BYTES,
            _ => rng.below(1300) as usize,
        };
        let datagram = &mut buf[..len];
        rng.fill_bytes(datagram);
        if round % 3 == 0 && len > 0 {
            datagram[0] &= 0x8f; // plausible prefixes
        }
        if round % 5 == 0 && len > 14 {
            datagram[0] = 0;
            datagram[1..14].copy_from_slice(&VERSION_INFO);
        }
        let mut allowed = AllowedPackets::NONE;
        for id in 0..7 {
            if rng.chance(0.7) {
                allowed = allowed.with(PacketType::from_id(id).unwrap());
            }
        }
        let now = rng.next_u64();
        if read_packet(datagram, PID, now, Some(&key), allowed, Some(&mut window)).is_ok() {
            accepted += 1;
        }
        let _ = read_address(&buf[..len.min(20)]);
    }
    // Only requests can pass without the key; nothing sealed was forged.
    assert!(accepted < 20_000);

    let mut token = [0u8; CONNECT_TOKEN_BYTES];
    let mut plain = [0u8; CONNECT_TOKEN_PRIVATE_BYTES];
    for round in 0..5_000u32 {
        rng.fill_bytes(&mut token);
        token[..13].copy_from_slice(&VERSION_INFO);
        token[21..29].copy_from_slice(&0u64.to_le_bytes());
        let count = 1 + round % 40;
        token[1089..1093].copy_from_slice(&count.to_le_bytes());
        if round % 2 == 0 {
            // Mostly valid address types, so the reader goes deep.
            for i in 0..32 {
                token[1093 + i * 7] = 1;
            }
        }
        let _ = ConnectToken::read(&token);
        rng.fill_bytes(&mut plain);
        plain[12..16].copy_from_slice(&count.to_le_bytes());
        plain[16] = 1 + (round % 2) as u8;
        let _ = ConnectTokenPrivate::read(&plain);
    }
}
