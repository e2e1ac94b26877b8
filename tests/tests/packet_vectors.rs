//! The reference `reliable` vectors (`tests/fixtures/reliable_*.jsonl`, produced by the
//! reference C library): every packet header encodes and decodes to the reference
//! bytes (and one byte shorter is refused); every configuration fragments packets into
//! the reference datagrams, reassembles them in order and reversed, and refuses
//! too-large packets without consuming a sequence; and a 300-step two-endpoint session
//! with 30% loss reproduces the reference header bytes and acks, in order.

use netproto::Time;
use netproto::internals::packet::PacketHeader;
use netproto::packet::{
    Endpoint, EndpointConfig, HeaderError, PacketSendError, Received, Sequence,
};
use netproto_tests::endpoint::receive_with;
use netproto_tests::fixtures::{hex, load as fixture, to_hex};
use serde_json::Value;

fn num(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: not a number in {v}"))
}

fn u16_of(v: &Value, key: &str) -> u16 {
    u16::try_from(num(v, key)).expect("u16")
}

fn usize_of(v: &Value, key: &str) -> usize {
    usize::try_from(num(v, key)).expect("usize")
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}: not a string in {v}"))
}

#[test]
fn every_reference_header_encodes_and_decodes() {
    let lines = fixture("reliable_header.jsonl");
    assert_eq!(lines.len(), 2000);
    let mut lengths = [0usize; 10];
    for (i, line) in lines.iter().enumerate() {
        let bits = str_of(line, "ack_bits");
        let header = PacketHeader {
            sequence: Sequence(u16_of(line, "seq")),
            ack: Sequence(u16_of(line, "ack")),
            ack_bits: u32::from_str_radix(bits.trim_start_matches("0x"), 16).expect("hex"),
        };
        let bytes = hex(str_of(line, "bytes"));
        let encoded = header.encode();
        assert_eq!(
            to_hex(&encoded),
            to_hex(&bytes),
            "line {}: encode {header:?}",
            i + 1
        );
        assert_eq!(header.encoded_len(), bytes.len(), "line {}", i + 1);
        lengths[bytes.len()] += 1;

        assert_eq!(
            PacketHeader::decode(&bytes),
            Ok((header, bytes.len())),
            "line {}: decode",
            i + 1
        );
        assert_eq!(
            PacketHeader::decode_canonical(&bytes),
            Ok((header, bytes.len())),
            "line {}: canonical",
            i + 1
        );
        // Trailing payload does not change the header.
        let mut with_payload = bytes.clone();
        with_payload.extend_from_slice(&[0xAB; 3]);
        assert_eq!(
            PacketHeader::decode(&with_payload),
            Ok((header, bytes.len()))
        );
        // One byte shorter is refused.
        assert!(
            matches!(
                PacketHeader::decode(&bytes[..bytes.len() - 1]),
                Err(HeaderError::Truncated { .. })
            ),
            "line {}: one byte shorter must be refused",
            i + 1
        );
    }
    // The vectors cover every header length from 4 to 9 bytes.
    for (len, &count) in lengths.iter().enumerate().skip(4) {
        assert!(count > 0, "no {len}-byte header in the vectors");
    }
}

fn config_of(line: &Value) -> EndpointConfig {
    let c = &line["config"];
    EndpointConfig {
        fragment_above: usize_of(c, "fragment_above"),
        fragment_size: usize_of(c, "fragment_size"),
        max_fragments: usize_of(c, "max_fragments"),
        max_packet_size: usize_of(c, "max_packet_size"),
        ..EndpointConfig::default()
    }
}

/// Payload byte `i` of the fragment vectors is `(i*7+3) & 0xFF`.
fn fragment_payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + 3) & 0xFF) as u8).collect()
}

/// Delivers `datagrams` to `receiver`; returns the packets it handed up.
fn deliver(receiver: &mut Endpoint, datagrams: &[Vec<u8>]) -> Vec<(Sequence, Vec<u8>)> {
    let mut got = Vec::new();
    for (k, d) in datagrams.iter().enumerate() {
        let result = receive_with(receiver, 0.0, d, |seq, payload| {
            got.push((seq, payload.to_vec()));
            true
        });
        match result {
            Ok(Received::Packet { .. }) => assert_eq!(k + 1, datagrams.len()),
            Ok(Received::Fragment { .. }) => assert!(k + 1 < datagrams.len()),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => panic!("datagram {k} refused: {e}"),
        }
    }
    got
}

#[test]
fn every_reference_fragmentation_is_reproduced_and_reassembles() {
    let lines = fixture("reliable_fragments.jsonl");
    assert_eq!(lines.len(), 54);
    let mut current: Option<(EndpointConfig, Endpoint, Endpoint, Endpoint)> = None;
    let (mut too_large_seen, mut single_fragment_seen) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        let config = config_of(line);
        if current.as_ref().is_none_or(|(c, ..)| *c != config) {
            let new =
                || Endpoint::new(config.clone(), Time::ZERO).expect("reference config is valid");
            current = Some((config.clone(), new(), new(), new()));
        }
        let Some((_, sender, in_order, reversed)) = current.as_mut() else {
            unreachable!("just set");
        };
        let seq = Sequence(u16_of(line, "packet_seq"));
        let len = usize_of(line, "packet_bytes");
        let payload = fragment_payload(len);
        let expected: Vec<Vec<u8>> = line["datagrams"]
            .as_array()
            .expect("datagrams")
            .iter()
            .map(|d| hex(d.as_str().expect("hex")))
            .collect();
        let too_large = line["too_large_to_send"].as_bool().expect("bool");

        assert_eq!(sender.next_sequence(), seq, "line {}", i + 1);
        let mut datagrams = Vec::new();
        let sent = sender.send(Time::ZERO, &payload, |d| datagrams.push(d.to_vec()));
        if too_large {
            too_large_seen += 1;
            assert_eq!(
                sent,
                Err(PacketSendError::TooLarge {
                    size: len,
                    max: config.max_packet_size
                })
            );
            assert!(datagrams.is_empty());
            assert!(expected.is_empty());
            // Not consumed: the next packet reuses the sequence.
            assert_eq!(sender.next_sequence(), seq, "line {}", i + 1);
            assert!(!line["reassembles"].as_bool().expect("bool"));
            continue;
        }
        let sent = sent.expect("fits");
        assert_eq!(sent.sequence, seq);
        assert_eq!(
            datagrams.iter().map(|d| to_hex(d)).collect::<Vec<_>>(),
            expected.iter().map(|d| to_hex(d)).collect::<Vec<_>>(),
            "line {}: {len} bytes with {config:?}",
            i + 1
        );
        if len > config.fragment_above && datagrams.len() == 1 {
            single_fragment_seen += 1;
        }
        assert!(line["reassembles"].as_bool().expect("bool"));
        assert_eq!(deliver(in_order, &expected), vec![(seq, payload.clone())]);
        let mut backwards = expected.clone();
        backwards.reverse();
        assert_eq!(deliver(reversed, &backwards), vec![(seq, payload)]);
    }
    assert_eq!(
        too_large_seen, 3,
        "5000 and 16000 with max 4096, 16000 with max 14522"
    );
    assert!(single_fragment_seen >= 2, "FS > FA single-fragment packets");
}

#[test]
fn reference_session_reproduces_headers_and_acks() {
    let lines = fixture("reliable_session.jsonl");
    assert_eq!(lines.len(), 300);
    let mut a = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("default");
    let mut b = Endpoint::new(EndpointConfig::default(), Time::ZERO).expect("default");
    let acks_of = |v: &Value, key: &str| -> Vec<u16> {
        v[key]
            .as_array()
            .expect("acks")
            .iter()
            .map(|x| u16::try_from(x.as_u64().expect("ack")).expect("u16"))
            .collect()
    };
    let (mut total_a, mut total_b) = (0, 0);
    for line in &lines {
        let step = num(line, "step");
        let now = step as f64 / 60.0;
        a.update(Time::from_secs_f64(now));
        b.update(Time::from_secs_f64(now));
        let payload_a: Vec<u8> = (0..10).map(|j| ((step * 10 + j) & 0xFF) as u8).collect();
        let payload_b: Vec<u8> = (0..10)
            .map(|j| ((step * 10 + j + 128) & 0xFF) as u8)
            .collect();
        let mut from_a = Vec::new();
        let mut from_b = Vec::new();
        a.send(Time::from_secs_f64(now), &payload_a, |d| {
            from_a.push(d.to_vec())
        })
        .expect("fits");
        b.send(Time::from_secs_f64(now), &payload_b, |d| {
            from_b.push(d.to_vec())
        })
        .expect("fits");
        let (from_a, from_b) = (&from_a[0], &from_b[0]);
        assert_eq!(
            to_hex(&from_a[..from_a.len() - 10]),
            str_of(line, "a_sent"),
            "step {step}: A's header"
        );
        assert_eq!(&from_a[from_a.len() - 10..], &payload_a[..]);
        assert_eq!(
            to_hex(&from_b[..from_b.len() - 10]),
            str_of(line, "b_sent"),
            "step {step}: B's header"
        );

        let mut a_acks = Vec::new();
        let mut b_acks = Vec::new();
        if line["a_delivered"].as_bool().expect("bool") {
            let mut got = None;
            let r = receive_with(&mut b, now, from_a, |seq, p| {
                got = Some((seq, p.to_vec()));
                true
            })
            .expect("valid");
            assert_eq!(got, Some((Sequence(step as u16), payload_a)));
            b_acks.extend(r.acks().iter().map(|s| s.0));
        }
        if line["b_delivered"].as_bool().expect("bool") {
            let r = a
                .receive(Time::from_secs_f64(now), from_b)
                .expect("valid")
                .accept();
            a_acks.extend(r.acks().iter().map(|s| s.0));
        }
        assert_eq!(a_acks, acks_of(line, "a_acks"), "step {step}: A's acks");
        assert_eq!(b_acks, acks_of(line, "b_acks"), "step {step}: B's acks");
        total_a += a_acks.len();
        total_b += b_acks.len();
    }
    assert_eq!(a.stats().packets_acked, total_a as u64);
    assert_eq!(b.stats().packets_acked, total_b as u64);
    assert!(total_a > 100 && total_b > 100);
}
