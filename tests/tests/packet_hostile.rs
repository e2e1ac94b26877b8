//! Hostile input for the packet endpoint: every malformed datagram is dropped whole,
//! counted in the right counter, never panics, and memory stays bounded by the
//! configuration. Ends with 120,000 seeded mutated datagrams and 102,400 random ones.

use netproto::Time;
use netproto::internals::packet::{FragmentHeader, PacketHeader, next_header};
use netproto::packet::{
    Endpoint, EndpointConfig, EndpointStats, FragmentError, HeaderError, ReceiveError, Received,
    Sequence,
};
use netproto::sim::Rng;
use netproto_tests::endpoint::receive_with;
use proptest::prelude::*;

mod common;

/// The seed of this file's property tests.
const SEED: u64 = 0x7061_636b_6574_7321;

fn endpoint(config: EndpointConfig) -> Endpoint {
    Endpoint::new(config, Time::ZERO).expect("valid config")
}

fn default_endpoint() -> Endpoint {
    endpoint(EndpointConfig::default())
}

/// A small configuration so random fragments often complete packets.
fn small_config() -> EndpointConfig {
    EndpointConfig {
        max_packet_size: 64,
        fragment_above: 16,
        fragment_size: 16,
        max_fragments: 4,
        fragment_reassembly_buffer_size: 8,
        ..EndpointConfig::default()
    }
}

/// The sum of every counter a dropped datagram can land in.
fn drops(c: &EndpointStats) -> u64 {
    c.packets_dropped_invalid
        + c.packets_dropped_stale
        + c.packets_dropped_duplicate
        + c.packets_dropped_by_layer
        + c.packets_dropped_optimistic_ack
        + c.packets_dropped_too_large_to_receive
        + c.fragments_dropped_invalid
        + c.fragments_dropped_duplicate
}

/// Feeds `datagram` and checks the drop accounting: an error bumps exactly one drop
/// counter, success none; the payload handed up is never larger than allowed; the
/// reassembly table stays within its bounds.
fn feed(e: &mut Endpoint, now: f64, datagram: &[u8]) -> Result<Received, ReceiveError> {
    let before = e.stats();
    let max_payload = e.config().max_packet_size;
    let result = receive_with(e, now, datagram, |_, payload| {
        assert!(payload.len() <= max_payload);
        true
    });
    let after = e.stats();
    let dropped = drops(&after) - drops(&before);
    assert_eq!(
        dropped,
        u64::from(result.is_err()),
        "{result:?} for {datagram:02x?}"
    );
    let c = e.config();
    assert!(e.pending_reassemblies() <= c.fragment_reassembly_buffer_size);
    // Per slot: the fragments' bytes and their ids, one byte each.
    assert!(
        e.reassembly_memory()
            <= c.fragment_reassembly_buffer_size * c.max_fragments * (c.fragment_size + 1)
    );
    result
}

fn header(sequence: u16, ack: u16, ack_bits: u32) -> PacketHeader {
    PacketHeader {
        sequence: Sequence(sequence),
        ack: Sequence(ack),
        ack_bits,
    }
}

/// A fragment datagram; fragment 0 gets a canonical packet header with no acks.
fn fragment(sequence: u16, id: u8, count: u16, payload: &[u8]) -> Vec<u8> {
    let mut d = FragmentHeader {
        sequence: Sequence(sequence),
        fragment_id: id,
        fragment_count: count,
    }
    .encode()
    .to_vec();
    if id == 0 {
        d.extend_from_slice(&header(sequence, 65535, 0).encode());
    }
    d.extend_from_slice(payload);
    d
}

#[test]
fn empty_and_one_byte_datagrams() {
    let mut e = default_endpoint();
    assert_eq!(
        feed(&mut e, 0.0, &[]),
        Err(ReceiveError::InvalidHeader(HeaderError::Truncated {
            needed: 3,
            got: 0
        }))
    );
    for b in 0..=255u8 {
        let r = feed(&mut e, 0.0, &[b]);
        if b & 1 == 0 {
            assert!(matches!(
                r,
                Err(ReceiveError::InvalidHeader(HeaderError::Truncated { .. }))
            ));
        } else {
            assert!(matches!(r, Err(ReceiveError::InvalidFragment(_))));
        }
    }
    let c = e.stats();
    assert_eq!(
        (c.packets_dropped_invalid, c.fragments_dropped_invalid),
        (129, 128)
    );
    assert_eq!(next_header(&e).ack_bits, 0, "nothing was recorded");
}

#[test]
fn truncated_headers_and_missing_flagged_bytes() {
    let mut e = default_endpoint();
    for h in [
        header(10000, 100, 0),
        header(200, 100, 0xFFFE_FFFF),
        header(5, 65535, 0),
    ] {
        let bytes = h.encode();
        for len in 1..bytes.len() {
            assert!(matches!(
                feed(&mut e, 0.0, &bytes[..len]),
                Err(ReceiveError::InvalidHeader(HeaderError::Truncated { .. }))
            ));
        }
    }
    // Prefix flags a 16-bit ack and four ack-bits bytes (9 bytes), 7 given.
    assert_eq!(
        feed(&mut e, 0.0, &[0x1e, 1, 0, 0, 0, 0xAA, 0xBB]),
        Err(ReceiveError::InvalidHeader(HeaderError::Truncated {
            needed: 9,
            got: 7
        }))
    );
    assert_eq!(e.stats().packets_dropped_invalid, 8 + 4 + 7 + 1);
    assert_eq!(next_header(&e).ack_bits, 0);
}

#[test]
fn non_canonical_header_in_fragment_zero() {
    let mut e = default_endpoint();
    // Sequence 3, ack 2 (all acked) written with a 16-bit ack: legal in a regular
    // packet, refused inside fragment 0.
    let mut d = vec![1u8, 3, 0, 0, 1, 0x00, 3, 0, 2, 0];
    d.extend_from_slice(&[0x55; 1024]);
    assert_eq!(
        feed(&mut e, 0.0, &d),
        Err(ReceiveError::InvalidFragment(FragmentError::InvalidHeader(
            HeaderError::NonCanonical
        )))
    );
    // Explicit 0xFF ack-bits byte.
    let mut d = vec![1u8, 3, 0, 0, 1, 0x22, 3, 0, 1, 0xFF];
    d.extend_from_slice(&[0x55; 1024]);
    assert!(matches!(
        feed(&mut e, 0.0, &d),
        Err(ReceiveError::InvalidFragment(FragmentError::InvalidHeader(
            HeaderError::NonCanonical
        )))
    ));
    // The embedded header names another packet.
    let mut d = fragment(3, 0, 2, &[0x55; 1024]);
    d[1] = 4;
    assert!(matches!(
        feed(&mut e, 0.0, &d),
        Err(ReceiveError::InvalidFragment(
            FragmentError::SequenceMismatch { .. }
        ))
    ));
    assert_eq!(e.stats().fragments_dropped_invalid, 3);
    assert_eq!(e.pending_reassemblies(), 0);
}

#[test]
fn fragment_fields_out_of_range() {
    let mut e = default_endpoint();
    let fs = 1024;
    // Id >= count.
    assert!(matches!(
        feed(&mut e, 0.0, &fragment(1, 2, 2, &[0; 10])),
        Err(ReceiveError::InvalidFragment(FragmentError::IdOutOfRange {
            id: 2,
            count: 2
        }))
    ));
    // Count above the configured 16 (up to the 256 the byte allows).
    for count in [17u16, 100, 256] {
        assert!(matches!(
            feed(&mut e, 0.0, &fragment(1, 1, count, &[0; 1024])),
            Err(ReceiveError::InvalidFragment(
                FragmentError::TooManyFragments { .. }
            ))
        ));
    }
    // A non-last fragment shorter or longer than the fragment size; a last one
    // longer; an empty last one.
    for (id, count, len) in [
        (0u8, 2u16, fs - 1),
        (1, 3, fs + 1),
        (1, 2, fs + 1),
        (1, 2, 0),
    ] {
        let r = feed(&mut e, 0.0, &fragment(1, id, count, &vec![0; len]));
        assert!(
            matches!(
                r,
                Err(ReceiveError::InvalidFragment(
                    FragmentError::WrongSize { .. } | FragmentError::TooLong { .. }
                ))
            ),
            "{id}/{count} with {len} bytes: {r:?}"
        );
    }
    assert_eq!(e.stats().fragments_dropped_invalid, 1 + 3 + 4);
    assert_eq!(
        e.pending_reassemblies(),
        0,
        "nothing stored from a refused fragment"
    );
}

#[test]
fn sizes_beyond_the_packet_maximum() {
    // 11 fragments of 1500 bytes could carry 16500 > 16384 bytes.
    let config = EndpointConfig {
        fragment_above: 1000,
        fragment_size: 1500,
        max_fragments: 11,
        ..EndpointConfig::default()
    };
    let mut e = endpoint(config);
    let last_len = 16384 - 10 * 1500 + 1; // one byte too many
    assert_eq!(
        feed(&mut e, 0.0, &fragment(1, 10, 11, &vec![0; last_len])),
        Err(ReceiveError::InvalidFragment(
            FragmentError::PacketTooLarge {
                size: 16385,
                max: 16384
            }
        ))
    );
    // Exactly at the maximum is fine.
    assert!(feed(&mut e, 0.0, &fragment(1, 10, 11, &vec![0; last_len - 1])).is_ok());
    // A datagram larger than any valid datagram is refused before parsing.
    let mut e = default_endpoint();
    let huge = vec![0x3e; 16384 + 9 + 5 + 1];
    assert!(matches!(
        feed(&mut e, 0.0, &huge),
        Err(ReceiveError::TooLarge { .. })
    ));
    // A regular packet whose payload exceeds the maximum.
    let mut d = header(0, 65535, 0).encode().to_vec();
    d.extend_from_slice(&vec![0; 16384 + 1]);
    assert!(matches!(
        feed(&mut e, 0.0, &d),
        Err(ReceiveError::TooLarge { .. })
    ));
    assert_eq!(e.stats().packets_dropped_too_large_to_receive, 2);
}

#[test]
fn count_changing_between_fragments_and_duplicates() {
    let mut e = default_endpoint();
    let part = vec![7u8; 1024];
    assert!(matches!(
        feed(&mut e, 0.0, &fragment(5, 0, 3, &part)),
        Ok(Received::Fragment { .. })
    ));
    assert_eq!(
        feed(&mut e, 0.0, &fragment(5, 1, 2, &part)),
        Err(ReceiveError::FragmentCountMismatch {
            sequence: Sequence(5),
            expected: 3,
            got: 2
        })
    );
    assert_eq!(
        feed(&mut e, 0.0, &fragment(5, 0, 3, &part)),
        Err(ReceiveError::DuplicateFragment {
            sequence: Sequence(5),
            fragment_id: 0
        })
    );
    assert!(feed(&mut e, 0.0, &fragment(5, 1, 3, &part)).is_ok());
    let mut got = None;
    let r = receive_with(&mut e, 0.0, &fragment(5, 2, 3, &[9; 10]), |s, p| {
        got = Some((s, p.len()));
        true
    });
    assert!(matches!(r, Ok(Received::Packet { .. })));
    assert_eq!(got, Some((Sequence(5), 2048 + 10)));
    // Any fragment of a packet already received is a duplicate.
    assert_eq!(
        feed(&mut e, 0.0, &fragment(5, 1, 3, &part)),
        Err(ReceiveError::DuplicateFragment {
            sequence: Sequence(5),
            fragment_id: 1
        })
    );
    let c = e.stats();
    assert_eq!(
        (
            c.fragments_dropped_invalid,
            c.fragments_dropped_duplicate,
            c.packets_received
        ),
        (1, 2, 1)
    );
}

#[test]
fn thousands_of_unfinished_reassemblies_stay_bounded() {
    let mut e = default_endpoint();
    let part = vec![1u8; 1024];
    let bound = 64 * 16 * (1024 + 1);
    for i in 0..20_000u32 {
        // Fragment 0 of a 16-fragment packet, never completed, with sequences
        // walking forward and jumping around the whole ring.
        let seq = (i.wrapping_mul(7919)) as u16;
        let _ = feed(&mut e, 0.0, &fragment(seq, 0, 16, &part));
        assert!(e.pending_reassemblies() <= 64);
        assert!(e.reassembly_memory() <= bound);
    }
    println!(
        "20000 unfinished reassemblies: {} pending, {} bytes held (bound {bound})",
        e.pending_reassemblies(),
        e.reassembly_memory()
    );
    // Reassembly grows with what arrived, not with the fragment count declared:
    // a slot holds at most one fragment and its id.
    assert!(e.reassembly_memory() <= 64 * (1024 + 1));
    // The endpoint still works.
    let mut sender = default_endpoint();
    let mut datagrams = Vec::new();
    sender
        .send(Time::ZERO, &[3; 3000], |d| datagrams.push(d.to_vec()))
        .expect("fits");
    let mut fresh = default_endpoint();
    let mut done = false;
    for d in &datagrams {
        done = matches!(feed(&mut fresh, 0.0, d), Ok(Received::Packet { .. }));
    }
    assert!(done);
}

#[test]
fn forged_acks() {
    let mut a = default_endpoint();
    for _ in 0..10 {
        a.send(Time::ZERO, b"x", |_| {}).expect("fits");
    }
    // Ack 500: we only sent 0..=9. Dropped whole, nothing handed up.
    let mut d = header(0, 500, u32::MAX).encode().to_vec();
    d.extend_from_slice(b"payload");
    let mut handed_up = false;
    let r = receive_with(&mut a, 0.0, &d, |_, _| {
        handed_up = true;
        true
    });
    assert_eq!(
        r,
        Err(ReceiveError::ForgedAck {
            ack: Sequence(500),
            next: Sequence(10)
        })
    );
    assert!(!handed_up);
    assert_eq!(a.stats().packets_dropped_invalid, 1);
    assert_eq!(next_header(&a).ack_bits, 0, "not recorded as received");
    // Ack exactly our next sequence is also impossible.
    let d = header(1, 10, 1).encode();
    assert!(matches!(
        feed(&mut a, 0.0, &d),
        Err(ReceiveError::ForgedAck { .. })
    ));
    // Acks behind our first packet (65535 and below: never sent) acknowledge nothing.
    let d = header(2, 65500, u32::MAX).encode();
    assert_eq!(feed(&mut a, 0.0, &d).map(|r| r.acks().len()), Ok(0));
    assert_eq!(a.stats().packets_acked, 0);
    for s in 0..10 {
        assert_eq!(a.is_acked(Sequence(s)), Some(false));
    }
    // A fresh peer's header (ack 65535, no bits) is fine whatever our sequence.
    let d = header(3, 65535, 0).encode();
    assert!(feed(&mut a, 0.0, &d).is_ok());
}

#[test]
fn stale_and_duplicate_packets_are_counted() {
    let mut e = default_endpoint();
    let packet = |seq: u16| header(seq, 65535, 0).encode().to_vec();
    assert!(feed(&mut e, 0.0, &packet(1000)).is_ok());
    assert_eq!(
        feed(&mut e, 0.0, &packet(1000)),
        Err(ReceiveError::Duplicate(Sequence(1000)))
    );
    assert_eq!(
        feed(&mut e, 0.0, &packet(1000 - 256)),
        Err(ReceiveError::Stale(Sequence(744)))
    );
    assert!(feed(&mut e, 0.0, &packet(1000 - 255)).is_ok());
    assert!(matches!(
        feed(&mut e, 0.0, &fragment(700, 0, 2, &[0; 1024])),
        Err(ReceiveError::StaleFragment(_))
    ));
    let c = e.stats();
    assert_eq!(
        (
            c.packets_dropped_duplicate,
            c.packets_dropped_stale,
            c.fragments_dropped_invalid
        ),
        (1, 1, 1)
    );
}

/// Valid traffic from a real sender: regular packets and fragments, with acks.
struct Traffic {
    /// The datagrams, in the order sent (at least the count asked for).
    datagrams: Vec<Vec<u8>>,
    /// The payload of every packet, in the order sent.
    payloads: Vec<Vec<u8>>,
    /// For each datagram, the packets the peer had sent back when it was sent (its
    /// acks name only these).
    peer_packets: Vec<usize>,
}

fn valid_traffic(config: &EndpointConfig, rng: &mut Rng, count: usize) -> Traffic {
    let mut sender = endpoint(config.clone());
    let mut peer = endpoint(config.clone());
    let mut t = Traffic {
        datagrams: Vec::new(),
        payloads: Vec::new(),
        peer_packets: Vec::new(),
    };
    let mut peer_sent = 0;
    while t.datagrams.len() < count {
        let len = if rng.chance(0.3) {
            rng.below(config.max_packet_size as u64 + 1) as usize
        } else {
            rng.below(64) as usize
        };
        let mut payload = vec![0u8; len];
        rng.fill_bytes(&mut payload);
        sender
            .send(Time::ZERO, &payload, |d| {
                t.datagrams.push(d.to_vec());
                t.peer_packets.push(peer_sent);
            })
            .expect("a payload within max_packet_size");
        t.payloads.push(payload);
        // Let the sender's headers carry acks too.
        let mut back = Vec::new();
        peer.send(Time::ZERO, b"ack", |d| back.push(d.to_vec()))
            .expect("fits");
        peer_sent += 1;
        for d in back {
            sender
                .receive(Time::ZERO, &d)
                .expect("the peer's packet")
                .accept();
        }
    }
    t
}

/// An endpoint that sent as many packets as the traffic's peer had when datagram
/// `last` was sent, so the acks up to it name packets it sent (otherwise they are all
/// dropped as forged).
fn receiver_of(config: &EndpointConfig, traffic: &Traffic, last: usize) -> Endpoint {
    let mut e = endpoint(config.clone());
    for _ in 0..traffic.peer_packets[last] {
        e.send(Time::ZERO, b"ack", |_| {}).expect("fits");
    }
    e
}

fn mutate(rng: &mut Rng, datagram: &mut Vec<u8>) {
    match rng.below(6) {
        0 if !datagram.is_empty() => {
            let i = rng.below(datagram.len() as u64) as usize;
            datagram[i] ^= 1 << rng.below(8);
        }
        1 if !datagram.is_empty() => {
            let i = rng.below(datagram.len().min(12) as u64) as usize;
            datagram[i] = rng.next_u64() as u8;
        }
        2 => {
            let keep = rng.below(datagram.len() as u64 + 1) as usize;
            datagram.truncate(keep);
        }
        3 => {
            let extra = rng.below(40) as usize;
            datagram.extend((0..extra).map(|_| rng.next_u64() as u8));
        }
        4 if datagram.len() > 5 => {
            // Fragment header fields: id and count.
            datagram[3] = rng.next_u64() as u8;
            datagram[4] = rng.next_u64() as u8;
        }
        _ => {
            let i = rng.below(datagram.len() as u64 + 1) as usize;
            datagram.insert(i, rng.next_u64() as u8);
        }
    }
}

/// Per configuration: the datagrams fed, and how many were taken (measured: the run
/// is seeded, so any change in what the endpoint accepts shows here).
const MUTATION_RUN: usize = 60_000;
/// Datagrams per fresh endpoint in the mutation run.
const SEGMENT: usize = 500;

#[test]
fn seeded_mutations_of_valid_traffic() {
    // (configuration, seed, taken: intact datagrams, mutated datagrams)
    let runs = [
        (EndpointConfig::default(), 1u64, (19_424, 7_710)),
        (small_config(), 2, (13_719, 3_963)),
    ];
    let mut total = 0usize;
    for (config, seed, expected) in runs {
        let mut rng = Rng::new(seed);
        let traffic = valid_traffic(&config, &mut rng, MUTATION_RUN);

        // The control: in order and unaltered, every datagram is taken and every
        // payload handed up exactly as sent.
        let mut e = receiver_of(&config, &traffic, traffic.datagrams.len() - 1);
        let mut payloads = Vec::new();
        for (i, d) in traffic.datagrams.iter().enumerate() {
            let r = receive_with(&mut e, i as f64 * 0.001, d, |_, p| {
                payloads.push(p.to_vec());
                true
            });
            assert!(r.is_ok(), "valid datagram {i} refused: {r:?}");
        }
        assert_eq!(
            payloads, traffic.payloads,
            "the control lost or altered a packet"
        );

        // The same stream in order, every other datagram (on average) mutated one to
        // three times, in segments of 500 datagrams each fed to a fresh endpoint: the
        // mutants reach live windows and reassemblies (a mutant that moves the window
        // far ahead makes the rest of its segment stale, not the rest of the run).
        let (mut intact, mut mutated) = ((0usize, 0usize), (0usize, 0usize));
        for segment in (0..MUTATION_RUN).step_by(SEGMENT) {
            let mut e = receiver_of(&config, &traffic, segment + SEGMENT - 1);
            for i in segment..segment + SEGMENT {
                let valid = &traffic.datagrams[i];
                let mut d = valid.clone();
                if rng.chance(0.5) {
                    for _ in 0..=rng.below(3) {
                        mutate(&mut rng, &mut d);
                    }
                }
                let taken = feed(&mut e, i as f64 * 0.001, &d).is_ok();
                let class = if d == *valid {
                    &mut intact
                } else {
                    &mut mutated
                };
                class.0 += 1;
                class.1 += usize::from(taken);
                total += 1;
            }
        }
        println!(
            "mutations: intact {} of {} taken, mutated {} of {} taken",
            intact.1, intact.0, mutated.1, mutated.0,
        );
        assert_eq!(intact.0 + mutated.0, MUTATION_RUN);
        assert_eq!(
            (intact.1, mutated.1),
            expected,
            "datagrams taken (intact, mutated)"
        );
        // Both verdicts on both classes: mutants that still parse are taken, intact
        // datagrams behind a mutant that moved the window or changed a reassembly are
        // dropped.
        assert!(mutated.1 > 0 && mutated.1 < mutated.0);
        assert!(intact.1 < intact.0);
    }
    assert_eq!(total, 2 * MUTATION_RUN);
}

/// `len` bytes from a seed: far cheaper for proptest than a vector of `any::<u8>()`.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Rng::new(seed).fill_bytes(&mut v);
    v
}

fn datagram_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Short noise: exercises every header path.
        prop::collection::vec(any::<u8>(), 0..16),
        // Regular-looking: an even prefix.
        (any::<u64>(), 1usize..80).prop_map(|(seed, len)| {
            let mut v = noise(seed, len);
            v[0] &= !1;
            v
        }),
        // Fragment-looking for the small config: prefix 1, small id and count.
        (any::<u16>(), 0u8..6, 0u8..6, 0usize..40).prop_map(|(seq, id, c, len)| {
            let mut v = vec![1u8];
            v.extend_from_slice(&seq.to_le_bytes());
            v.extend_from_slice(&[id, c]);
            v.extend(std::iter::repeat_n(0xA5, len));
            v
        }),
        // Well-formed fragments of the small config, so packets do complete.
        (0u16..8, 0u8..4, 1u16..5, 1usize..=16).prop_map(|(seq, id, count, len)| {
            let id = id % count as u8;
            let len = if u16::from(id) + 1 < count { 16 } else { len };
            fragment(seq, id, count, &vec![0x5A; len])
        }),
        // Long noise.
        (any::<u64>(), 0usize..1200).prop_map(|(seed, len)| noise(seed, len)),
    ]
}

proptest! {
    #![proptest_config(common::proptest_config(1024, SEED))]

    /// 1024 cases x 100 datagrams = 102,400 random datagrams, each fed to an endpoint
    /// with the default and one with the small configuration.
    #[test]
    fn random_datagrams_never_panic(datagrams in prop::collection::vec(datagram_strategy(), 100)) {
        let mut big = default_endpoint();
        let mut small = endpoint(small_config());
        for (i, d) in datagrams.iter().enumerate() {
            let now = i as f64 * 0.01;
            let _ = feed(&mut big, now, d);
            let _ = feed(&mut small, now, d);
        }
    }
}

/// A sender fragments only packets above `fragment_above`: a one-fragment packet is
/// one of `fragment_above + 1 ..= fragment_size` bytes. Where none exists (the
/// default, `fragment_size == fragment_above`), or below that range, it is refused
/// whole; where the reference sends them (the vectors' FA=1000, FS=1500), accepted.
#[test]
fn one_fragment_packets_only_where_a_sender_makes_them() {
    // Default: 1024 / 1024. A one-fragment packet cannot come from a sender.
    let mut e = default_endpoint();
    for len in [1, 500, 1024] {
        assert_eq!(
            feed(&mut e, 0.0, &fragment(3, 0, 1, &vec![7; len])),
            Err(ReceiveError::InvalidFragment(
                FragmentError::NeedlessFragment {
                    len,
                    fragment_above: 1024
                }
            )),
            "{len} bytes"
        );
    }
    assert_eq!(e.stats().fragments_dropped_invalid, 3);
    assert_eq!(e.stats().fragments_received, 0);
    assert_eq!(e.pending_reassemblies(), 0);
    // Two fragments are still fine.
    assert!(matches!(
        feed(&mut e, 0.0, &fragment(4, 0, 2, &[1; 1024])),
        Ok(Received::Fragment { .. })
    ));

    // FA=1000, FS=1500: packets of 1001..=1500 bytes travel as one fragment.
    let config = EndpointConfig {
        fragment_above: 1000,
        fragment_size: 1500,
        max_fragments: 11,
        ..EndpointConfig::default()
    };
    let mut e = endpoint(config.clone());
    for (seq, len) in [(1u16, 1001), (2, 1023), (3, 1025), (4, 1500)] {
        match feed(&mut e, 0.0, &fragment(seq, 0, 1, &vec![9; len])) {
            Ok(Received::Packet { sequence, .. }) => assert_eq!(sequence, Sequence(seq)),
            other => panic!("{len} bytes: {other:?}"),
        }
    }
    // ... but not one that would have been sent whole.
    assert!(matches!(
        feed(&mut e, 0.0, &fragment(5, 0, 1, &[9; 1000])),
        Err(ReceiveError::InvalidFragment(
            FragmentError::NeedlessFragment { len: 1000, .. }
        ))
    ));
    // Our own sender makes them, and they get through.
    let mut sender = endpoint(config);
    let mut wire = Vec::new();
    let sent = sender
        .send(Time::ZERO, &[5; 1200], |d| wire.push(d.to_vec()))
        .expect("fits");
    assert_eq!(sent.fragments, 1);
    let mut receiver = endpoint(sender.config().clone());
    assert!(matches!(
        feed(&mut receiver, 0.0, &wire[0]),
        Ok(Received::Packet { .. })
    ));
}
