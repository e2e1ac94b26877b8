//! The reference netcode 1.02 vectors (`tests/fixtures/netcode_*.jsonl`, produced by
//! the reference C library): connect tokens and their private parts are written
//! byte-identical and read back; every packet type is written byte-identical and read
//! back; the reader gives the reference's verdict on 2400 valid and mutated packets;
//! and the replay window gives the reference's verdict on 10,000 steps.

use std::net::SocketAddr;

use netproto::internals::netcode::{
    AllowedPackets, ChallengeToken, ConnectTokenPrivate, Packet, PacketType, ReplayProtection,
    read_packet, write_packet,
};
use netproto::netcode::{ConnectToken, Key, TokenParams, generate_connect_token_with};
use netproto_tests::fixtures::{hex, load as fixture, to_hex};
use serde_json::Value;

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}: not a string in {v}"))
}

/// A 64-bit value written as 16 hex digits.
fn u64_hex(v: &Value, key: &str) -> u64 {
    u64::from_str_radix(str_of(v, key), 16).unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// A timestamp: a plain number or 16 hex digits.
fn timestamp(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| u64_hex(v, key))
}

fn bytes_of<const N: usize>(v: &Value, key: &str) -> [u8; N] {
    hex(str_of(v, key))
        .try_into()
        .unwrap_or_else(|b: Vec<u8>| panic!("{key}: {} bytes, expected {N}", b.len()))
}

fn key_of(v: &Value, key: &str) -> Key {
    Key::from_bytes(bytes_of(v, key))
}

fn addresses(v: &Value, key: &str) -> Vec<SocketAddr> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: not an array"))
        .iter()
        .map(|a| {
            a.as_str()
                .expect("address string")
                .parse()
                .expect("address")
        })
        .collect()
}

fn packet_type_of(v: &Value) -> PacketType {
    let id = v["type"].as_u64().expect("type");
    PacketType::from_id(u8::try_from(id).expect("type id")).expect("known type")
}

#[test]
fn every_reference_token_is_written_and_read_back() {
    let lines = fixture("netcode_tokens.jsonl");
    assert_eq!(lines.len(), 64);
    let (mut ipv6_seen, mut max_addresses, mut never_timeout, mut never_expire) = (false, 0, 0, 0);
    let mut internal_differs = 0;
    for (i, line) in lines.iter().enumerate() {
        let private_key = key_of(line, "private_key");
        let protocol_id = u64_hex(line, "protocol_id");
        let create = timestamp(line, "create_timestamp");
        let expire = timestamp(line, "expire_timestamp");
        let nonce: [u8; 24] = bytes_of(line, "nonce");
        let public = addresses(line, "public_addresses");
        let internal = addresses(line, "internal_addresses");
        let timeout_seconds =
            i32::try_from(line["timeout_seconds"].as_i64().expect("timeout")).expect("i32 timeout");
        let c2s = key_of(line, "client_to_server_key");
        let s2c = key_of(line, "server_to_client_key");
        let user_data: [u8; 256] = bytes_of(line, "user_data");
        let plaintext: [u8; 1024] = bytes_of(line, "private_plaintext");
        let token_bytes = hex(str_of(line, "token"));
        assert_eq!(token_bytes.len(), 2048);

        ipv6_seen |= public.iter().chain(&internal).any(SocketAddr::is_ipv6);
        max_addresses = max_addresses.max(public.len());
        never_timeout += usize::from(timeout_seconds == -1);
        never_expire += usize::from(expire == u64::MAX);
        internal_differs += usize::from(public != internal);

        // The private plaintext, byte-identical.
        let private = ConnectTokenPrivate {
            client_id: u64_hex(line, "client_id"),
            timeout_seconds,
            server_addresses: internal.clone(),
            client_to_server_key: c2s.clone(),
            server_to_client_key: s2c.clone(),
            user_data,
        };
        assert_eq!(
            to_hex(&private.write().expect("write private")[..]),
            to_hex(&plaintext),
            "line {i}: private plaintext"
        );
        assert_eq!(
            ConnectTokenPrivate::read(&plaintext).expect("read private"),
            private
        );

        // The whole token, byte-identical, through the deterministic generator.
        let params = TokenParams {
            protocol_id,
            client_id: private.client_id,
            timeout_seconds,
            expire_seconds: 0, // ignored by generate_connect_token_with
            public_addresses: public.clone(),
            internal_addresses: Some(internal.clone()),
            user_data,
        };
        let token = generate_connect_token_with(
            &params,
            &private_key,
            create,
            expire,
            nonce,
            c2s.clone(),
            s2c.clone(),
        )
        .expect("generate");
        let written = token.write().expect("write token");
        assert_eq!(
            to_hex(&written),
            to_hex(&token_bytes),
            "line {i}: token bytes"
        );
        assert_eq!(&written[61..1085], &token.private_data[..]);

        // Read back to the same fields.
        let read = ConnectToken::read(&token_bytes).expect("read token");
        assert_eq!(read, token, "line {i}: token fields");
        assert_eq!(read.server_addresses, public);
        assert_eq!(read.timeout_seconds, timeout_seconds);
        assert_eq!(
            (read.create_timestamp, read.expire_timestamp),
            (create, expire)
        );

        // The sealed private part opens back to the plaintext's fields.
        let opened = ConnectTokenPrivate::open(
            &read.private_data,
            protocol_id,
            expire,
            &nonce,
            &private_key,
        )
        .expect("open private");
        assert_eq!(opened, private, "line {i}: opened private part");

        // One flipped bit anywhere in the sealed part (tag included) refuses it.
        for bit in [0usize, 8 * 500 + 3, 8 * 1007 + 7, 8 * 1008, 8 * 1023 + 7] {
            let mut tampered = read.private_data;
            tampered[bit / 8] ^= 1 << (bit % 8);
            assert!(
                ConnectTokenPrivate::open(&tampered, protocol_id, expire, &nonce, &private_key)
                    .is_err(),
                "line {i}: bit {bit} flipped still opens"
            );
        }
        // So does any change to the associated data.
        assert!(
            ConnectTokenPrivate::open(
                &read.private_data,
                protocol_id ^ 1,
                expire,
                &nonce,
                &private_key
            )
            .is_err()
        );
        assert!(
            ConnectTokenPrivate::open(
                &read.private_data,
                protocol_id,
                expire.wrapping_sub(1),
                &nonce,
                &private_key
            )
            .is_err()
        );
    }
    // What the file covers (its README says "1 to 32 addresses"; the largest is 29:
    // the unit tests cover 32 and 33).
    assert!(ipv6_seen);
    assert_eq!(max_addresses, 29);
    assert_eq!((never_timeout, never_expire, internal_differs), (10, 8, 51));
}

#[test]
fn every_reference_packet_is_written_and_read_back() {
    let tokens = fixture("netcode_tokens.jsonl");
    let lines = fixture("netcode_packets.jsonl");
    assert_eq!(lines.len(), 300);
    let mut per_type = [0usize; 7];
    let mut challenge_tokens = 0;
    let mut out = [0u8; 2048];
    for (i, line) in lines.iter().enumerate() {
        let packet_type = packet_type_of(line);
        per_type[usize::from(packet_type.id())] += 1;
        let sequence = u64_hex(line, "sequence");
        let protocol_id = u64_hex(line, "protocol_id");
        let key = key_of(line, "key");
        let expected = hex(str_of(line, "bytes"));

        let payload = line["payload"].as_str().map(hex);
        let mut request_fields = None;
        let mut challenge_sealed = None;
        if packet_type == PacketType::Request {
            let token = &tokens
                [usize::try_from(line["token_index"].as_u64().expect("index")).expect("index")];
            let private: [u8; 1024] = hex(str_of(token, "token"))[61..1085]
                .try_into()
                .expect("1024");
            request_fields = Some((
                u64_hex(token, "protocol_id"),
                timestamp(token, "expire_timestamp"),
                bytes_of::<24>(token, "nonce"),
                private,
            ));
        }
        if matches!(packet_type, PacketType::Challenge | PacketType::Response) {
            let token_sequence = u64_hex(line, "challenge_token_sequence");
            let challenge_key = key_of(line, "challenge_key");
            let challenge = ChallengeToken {
                client_id: u64_hex(line, "challenge_client_id"),
                user_data: bytes_of(line, "challenge_user_data"),
            };
            let sealed = challenge.seal(token_sequence, &challenge_key);
            assert_eq!(
                to_hex(&sealed),
                str_of(line, "challenge_token"),
                "line {i}: challenge token"
            );
            assert_eq!(
                ChallengeToken::open(&sealed, token_sequence, &challenge_key).expect("open"),
                challenge
            );
            assert!(ChallengeToken::open(&sealed, token_sequence ^ 1, &challenge_key).is_err());
            challenge_tokens += 1;
            challenge_sealed = Some((token_sequence, sealed));
        }

        let packet = match packet_type {
            PacketType::Request => {
                let (protocol_id, expire_timestamp, nonce, private) =
                    request_fields.as_ref().expect("request fields");
                Packet::Request {
                    protocol_id: *protocol_id,
                    expire_timestamp: *expire_timestamp,
                    nonce: *nonce,
                    private_data: private,
                }
            }
            PacketType::Denied => Packet::Denied,
            PacketType::Challenge | PacketType::Response => {
                let (token_sequence, token_data) = challenge_sealed.as_ref().expect("challenge");
                if packet_type == PacketType::Challenge {
                    Packet::Challenge {
                        token_sequence: *token_sequence,
                        token_data,
                    }
                } else {
                    Packet::Response {
                        token_sequence: *token_sequence,
                        token_data,
                    }
                }
            }
            PacketType::KeepAlive => Packet::KeepAlive {
                client_index: u32::try_from(line["client_index"].as_u64().expect("index"))
                    .expect("u32"),
                max_clients: u32::try_from(line["max_clients"].as_u64().expect("max"))
                    .expect("u32"),
            },
            PacketType::Payload => Packet::Payload(payload.as_deref().expect("payload")),
            PacketType::Disconnect => Packet::Disconnect,
        };
        let n = write_packet(&packet, sequence, &key, protocol_id, &mut out).expect("write");
        assert_eq!(
            to_hex(&out[..n]),
            to_hex(&expected),
            "line {i}: packet bytes"
        );

        let mut datagram = expected.clone();
        let mut window = ReplayProtection::new();
        let (read_sequence, read) = read_packet(
            &mut datagram,
            protocol_id,
            0,
            Some(&key),
            AllowedPackets::ALL,
            Some(&mut window),
        )
        .unwrap_or_else(|e| panic!("line {i}: read: {e}"));
        let expected_sequence = if packet_type == PacketType::Request {
            0
        } else {
            sequence
        };
        assert_eq!(read_sequence, expected_sequence, "line {i}: sequence");
        assert_eq!(read, packet, "line {i}: fields");
        if let Packet::Request {
            protocol_id,
            expire_timestamp,
            nonce,
            private_data,
        } = read
        {
            ConnectTokenPrivate::open(private_data, protocol_id, expire_timestamp, &nonce, &key)
                .expect("request private part opens");
        }
    }
    assert_eq!(per_type.iter().sum::<usize>(), 300);
    assert!(per_type.iter().all(|&n| n > 0), "{per_type:?}");
    assert_eq!(challenge_tokens, per_type[2] + per_type[3]);
}

#[test]
fn the_reader_gives_the_reference_verdict_on_every_line() {
    let lines = fixture("netcode_read.jsonl");
    assert_eq!(lines.len(), 2400);
    let (mut accepted, mut rejected) = (0usize, 0usize);
    let (mut file_accepts, mut file_rejects) = (0usize, 0usize);
    let mut reasons = std::collections::BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let expected_accept = line["accept"].as_bool().expect("accept");
        if expected_accept {
            file_accepts += 1;
        } else {
            file_rejects += 1;
        }
        let protocol_id = u64_hex(line, "protocol_id");
        let now = timestamp(line, "current_timestamp");
        let key = key_of(line, "key");
        let mut window = ReplayProtection::with_most_recent(u64_hex(line, "replay_most_recent"));
        let mut datagram = hex(str_of(line, "bytes"));
        let result = read_packet(
            &mut datagram,
            protocol_id,
            now,
            Some(&key),
            AllowedPackets::ALL,
            Some(&mut window),
        );
        // The reference opens a request's private part as its last check.
        let verdict = match result {
            Ok((
                sequence,
                Packet::Request {
                    protocol_id,
                    expire_timestamp,
                    nonce,
                    private_data,
                },
            )) => {
                let private_key = key_of(line, "private_key");
                ConnectTokenPrivate::open(
                    private_data,
                    protocol_id,
                    expire_timestamp,
                    &nonce,
                    &private_key,
                )
                .map(|_| (sequence, PacketType::Request))
                .map_err(|e| format!("open: {e:?}"))
            }
            Ok((sequence, packet)) => Ok((sequence, packet.packet_type())),
            Err(e) => Err(format!("{e:?}")),
        };
        match verdict {
            Ok((sequence, packet_type)) => {
                assert!(
                    expected_accept,
                    "line {i} ({}): accepted, the reference refuses",
                    str_of(line, "case")
                );
                assert_eq!(packet_type, packet_type_of(line), "line {i}: type");
                assert_eq!(sequence, u64_hex(line, "sequence"), "line {i}: sequence");
                accepted += 1;
            }
            Err(e) => {
                assert!(
                    !expected_accept,
                    "line {i} ({}): refused ({e}), the reference accepts",
                    str_of(line, "case")
                );
                rejected += 1;
                let reason = e.split('(').next().unwrap_or_default().to_string();
                *reasons
                    .entry((str_of(line, "case").to_string(), reason))
                    .or_insert(0usize) += 1;
            }
        }
    }
    assert_eq!((file_accepts, file_rejects), (477, 1923));
    assert_eq!((accepted, rejected), (477, 1923));
    // Each mutation is refused for the reason it targets (a flipped bit lands anywhere:
    // mostly in a sealed body, a few times in a prefix, version or protocol id; the
    // truncations and extensions of requests break the exact 1078-byte size). The
    // five accepted `expired_or_late` requests carry an expire timestamp of
    // ffffffffffffffff: "one second after" wraps to 0, which the reference accepts.
    let observed: Vec<(&str, &str, usize)> = reasons
        .iter()
        .map(|((case, reason), n)| (case.as_str(), reason.as_str(), *n))
        .collect();
    assert_eq!(
        observed,
        [
            ("bad_sequence_bytes", "BadSequenceBytes", 257),
            ("bad_type", "UnknownType", 300),
            ("bit_flip", "BadVersion", 1),
            ("bit_flip", "Decrypt", 251),
            ("bit_flip", "ProtocolMismatch", 1),
            ("bit_flip", "TooSmall", 4),
            ("bit_flip", "UnknownType", 2),
            ("bit_flip", "open: Decrypt", 41),
            ("expired_or_late", "Expired", 38),
            ("expired_or_late", "Replayed", 128),
            ("extended", "Decrypt", 257),
            ("extended", "WrongSize", 43),
            ("other_protocol", "Decrypt", 257),
            ("other_protocol", "ProtocolMismatch", 43),
            ("truncated", "Decrypt", 122),
            ("truncated", "TooSmall", 135),
            ("truncated", "WrongSize", 43),
        ]
    );
}

#[test]
fn the_replay_window_gives_the_reference_verdict_at_every_step() {
    let lines = fixture("netcode_replay.jsonl");
    assert_eq!(lines.len(), 20);
    let (mut steps, mut replayed, mut near_wrap) = (0usize, 0usize, 0usize);
    for (i, line) in lines.iter().enumerate() {
        let mut window = ReplayProtection::new();
        for (j, step) in line["steps"].as_array().expect("steps").iter().enumerate() {
            let sequence =
                u64::from_str_radix(step[0].as_str().expect("sequence"), 16).expect("hex");
            let expected = step[1].as_bool().expect("verdict");
            let got = window.already_received(sequence);
            assert_eq!(got, expected, "line {i} step {j}: sequence {sequence:#x}");
            if !got {
                window.advance(sequence);
            }
            steps += 1;
            replayed += usize::from(got);
            near_wrap += usize::from(sequence > u64::MAX - (1 << 20));
        }
    }
    assert_eq!(steps, 10_000);
    assert!(replayed > 0 && replayed < steps);
    assert!(near_wrap > 0, "no sequence near 2^64");
}
