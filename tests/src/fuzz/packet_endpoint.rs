//! Target: the packet endpoint's receive path (headers, fragments, acks).

use netproto::Time;
use netproto::internals::packet::{FRAGMENT_HEADER_BYTES, PacketHeader, parse_fragment};
use netproto::packet::{Endpoint, Incoming, ReceiveError, Received, Sequence};
use netproto::sim::Rng;
use std::time::Duration;

use super::{Script, Seed, endpoint_config, push_blob};

/// One step of a packet-endpoint script, for the determinism check.
#[derive(Debug, PartialEq)]
enum EndpointStep {
    Received(Result<Received, ReceiveError>, Option<(Sequence, Vec<u8>)>),
    Sent(Vec<Vec<u8>>),
}

/// Ops of the endpoint script: receive a datagram (`0 | 3..`: the op is followed by a
/// blob), send a payload of `n` bytes (`1, n`), advance the clock by `n` ms and update
/// (`2, n`). Receiving refuses the payload when its first byte is 0xEE (so refusal is
/// fuzzed too). The script is run twice on fresh endpoints: the traces must match.
/// Returns the number of datagrams the endpoint took (packets and fragments).
pub fn packet_endpoint(data: &[u8]) -> usize {
    let a = run_endpoint(data);
    let b = run_endpoint(data);
    assert_eq!(a, b, "the endpoint is not deterministic");
    a.iter()
        .filter(|s| matches!(s, EndpointStep::Received(Ok(_), _)))
        .count()
}

fn run_endpoint(data: &[u8]) -> Vec<EndpointStep> {
    let config = endpoint_config();
    // Per slot: the fragments' bytes and their ids (one byte each).
    let max_memory =
        config.fragment_reassembly_buffer_size * config.max_fragments * (config.fragment_size + 1);
    let mut endpoint =
        Endpoint::new(config.clone(), Time::ZERO).expect("valid endpoint configuration");
    let limits = netproto::internals::packet::FragmentLimits {
        max_fragments: config.max_fragments,
        fragment_size: config.fragment_size,
        max_packet_size: config.max_packet_size,
    };
    let mut now = 0.0;
    let mut trace = Vec::new();
    let mut script = Script::new(data);
    while let Some(op) = script.byte() {
        match op {
            1 => {
                let len = usize::from(script.byte().unwrap_or(0));
                let payload = vec![0xA5; len];
                let mut out = Vec::new();
                let sent =
                    endpoint.send(Time::from_secs_f64(now), &payload, |d| out.push(d.to_vec()));
                assert!(sent.is_ok(), "a payload within max_packet_size was refused");
                trace.push(EndpointStep::Sent(out));
            }
            2 => {
                now += f64::from(script.byte().unwrap_or(0)) / 1000.0;
                endpoint.update(Time::from_secs_f64(now));
                let stats = endpoint.stats();
                assert!(stats.rtt < Duration::MAX, "bad RTT {stats:?}");
            }
            _ => {
                let datagram = script.blob();
                check_datagram_codecs(datagram, &limits);
                let mut got = None;
                let result = crate::endpoint::receive_with(
                    &mut endpoint,
                    now,
                    datagram,
                    |sequence, payload| {
                        assert!(payload.len() <= limits.max_packet_size, "oversized payload");
                        got = Some((sequence, payload.to_vec()));
                        payload.first() != Some(&0xEE)
                    },
                );
                if let Ok(Received::Packet { sequence, acks }) = &result {
                    assert_eq!(got.as_ref().map(|g| g.0), Some(*sequence));
                    for acked in acks {
                        assert!(
                            acked.is_older_than(endpoint.next_sequence()),
                            "acked {acked} was never sent"
                        );
                        assert_eq!(endpoint.is_acked(acked), Some(true));
                    }
                }
                trace.push(EndpointStep::Received(result, got));
            }
        }
        assert!(endpoint.pending_reassemblies() <= config.fragment_reassembly_buffer_size);
        assert!(
            endpoint.reassembly_memory() <= max_memory,
            "reassembly holds {} bytes, the bound is {max_memory}",
            endpoint.reassembly_memory()
        );
    }
    trace
}

/// Header and fragment codecs of one datagram: a header that decodes re-encodes (in
/// canonical form) to bytes that decode to the same header; a fragment that parses
/// has a header that re-encodes to its first bytes.
fn check_datagram_codecs(datagram: &[u8], limits: &netproto::internals::packet::FragmentLimits) {
    if let Ok((header, len)) = PacketHeader::decode(datagram) {
        assert!(len <= datagram.len());
        let canonical = header.encode();
        assert_eq!(
            PacketHeader::decode(&canonical),
            Ok((header, canonical.len()))
        );
        assert_eq!(
            PacketHeader::decode_canonical(&canonical),
            Ok((header, canonical.len()))
        );
    }
    if let Ok(fragment) = parse_fragment(datagram, limits) {
        assert_eq!(fragment.header.encode(), datagram[..FRAGMENT_HEADER_BYTES]);
        assert!(!fragment.payload.is_empty() && fragment.payload.len() <= limits.fragment_size);
        if let Some(header) = fragment.packet_header {
            assert_eq!(header.sequence, fragment.header.sequence);
        }
    }
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts of the endpoint target: a peer exchanges packets of random
    /// sizes (many fragmented) with the target endpoint, whose own sends are in the
    /// script so that the peer's acks name real packets. The target takes every
    /// datagram of the peer but one per packet whose payload starts with 0xEE (the
    /// target refuses those: the datagram that completes the packet is not taken).
    pub fn packet_endpoint(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut peer =
                    Endpoint::new(endpoint_config(), Time::ZERO).expect("valid endpoint");
                // A mirror of the target endpoint: it runs the same script, so its
                // datagrams are the target's, and the peer acks them.
                let mut target =
                    Endpoint::new(endpoint_config(), Time::ZERO).expect("valid endpoint");
                let mut script = Vec::new();
                let mut taken = 0;
                let mut now = 0.0;
                for _ in 0..1 + rng.below(8) {
                    let len = rng.below(80) as u8;
                    script.extend_from_slice(&[1, len]);
                    let mut ours = Vec::new();
                    let _ = target.send(
                        Time::from_secs_f64(now),
                        &vec![0xA5; usize::from(len)],
                        |d| ours.push(d.to_vec()),
                    );
                    if rng.below(4) != 0 {
                        for d in &ours {
                            let _ = peer
                                .receive(Time::from_secs_f64(now), d)
                                .map(Incoming::accept);
                        }
                    }
                    // The peer sends a packet of a random size.
                    let size = rng.below(257) as usize;
                    let mut payload = vec![0u8; size];
                    rng.fill_bytes(&mut payload);
                    let mut datagrams = Vec::new();
                    peer.send(Time::from_secs_f64(now), &payload, |d| {
                        datagrams.push(d.to_vec())
                    })
                    .expect("a payload within max_packet_size");
                    taken += datagrams.len() - usize::from(payload.first() == Some(&0xEE));
                    // Fragments in any order.
                    let n = datagrams.len();
                    for i in 0..n {
                        let j = i + rng.below((n - i) as u64) as usize;
                        datagrams.swap(i, j);
                    }
                    for d in &datagrams {
                        script.push(0);
                        push_blob(&mut script, d);
                        let _ = crate::endpoint::receive_with(&mut target, now, d, |_, p| {
                            p.first() != Some(&0xEE)
                        });
                    }
                    now += 0.016;
                    target.update(Time::from_secs_f64(now));
                    script.extend_from_slice(&[2, 16]);
                }
                Seed::taking(script, taken)
            })
            .collect()
    }
}
