//! Target: the message layer's payload decoding, with sends and acks between reads.

use netproto::Time;
use netproto::channel::ChannelId;
use netproto::channel::{ChannelSendError as LayerSendError, MessageLayer, PayloadError};
use netproto::packet::Sequence;
use netproto::sim::Rng;

use super::{Msg, Script, Seed, check_round_trip, layer_config, push_blob, seeded_message};

/// Ops of the layer script: read a payload (`0 | 4..`, then a blob), take every
/// delivered message (`1`), ack one of our packets (`2`, then a `u16`), send a message
/// drawn from a seed and write a packet (`3`, channel byte, seed byte). Every delivered
/// message must round-trip ([`check_round_trip`]); queues stay within their sizes; a
/// payload that fails leaves the layer as it was; the script run twice on fresh layers
/// gives the same trace. Returns the number of payloads read successfully.
pub fn message_layer(data: &[u8]) -> usize {
    let a = run_layer(data);
    let b = run_layer(data);
    assert_eq!(a, b, "the message layer is not deterministic");
    a.iter()
        .filter(|s| matches!(s, LayerStep::Read(Ok(()))))
        .count()
}

#[derive(Debug, PartialEq)]
enum LayerStep {
    Read(Result<(), PayloadError>),
    Delivered(usize, Msg),
    Send(Result<(), LayerSendError>, Vec<u8>),
}

fn run_layer(data: &[u8]) -> Vec<LayerStep> {
    let config = layer_config();
    let mut layer = new_layer();
    let mut trace = Vec::new();
    let mut script = Script::new(data);
    let mut sequence = Sequence(0);
    while let Some(op) = script.byte() {
        match op {
            1 => take_all(&mut layer, &mut trace),
            2 => layer.on_packet_acked(Sequence(script.u16())),
            3 => {
                let channel = usize::from(script.byte().unwrap_or(0) % 4);
                let message = seeded_message(u16::from(script.byte().unwrap_or(0)));
                let result = layer.send(ChannelId::new(channel), message);
                let mut payload = Vec::new();
                layer.write_packet(Time::ZERO, sequence, &mut payload);
                assert!(
                    payload.len() * 8 <= config.max_packet_bits + 7,
                    "oversized payload"
                );
                sequence = sequence.next();
                trace.push(LayerStep::Send(result, payload));
            }
            _ => {
                let payload = script.blob();
                let before: Vec<usize> = (0..4)
                    .map(|c| layer.receive_queue_len(ChannelId::new(c)))
                    .collect();
                let result = layer.read_packet(payload);
                if result.is_err() {
                    let after: Vec<usize> = (0..4)
                        .map(|c| layer.receive_queue_len(ChannelId::new(c)))
                        .collect();
                    assert_eq!(before, after, "a refused payload was partly applied");
                }
                trace.push(LayerStep::Read(result));
            }
        }
        for (c, channel) in config.channels.iter().enumerate() {
            assert!(layer.receive_queue_len(ChannelId::new(c)) <= channel.receive_queue_size);
            assert!(layer.send_queue_len(ChannelId::new(c)) <= channel.send_queue_size);
        }
    }
    take_all(&mut layer, &mut trace);
    trace
}

fn take_all(layer: &mut MessageLayer<Msg>, trace: &mut Vec<LayerStep>) {
    for channel in 0..4 {
        while let Some(message) = layer.receive(ChannelId::new(channel)) {
            check_round_trip(&message);
            trace.push(LayerStep::Delivered(channel, message));
        }
    }
}

pub(super) fn new_layer() -> MessageLayer<Msg> {
    MessageLayer::new(layer_config()).expect("the fuzz layer configuration is valid")
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` scripts of the layer target: payloads a peer layer wrote for seeded
    /// messages on every channel (blocks included), read in order, with takes. Every
    /// payload is read successfully.
    pub fn message_layer(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|_| {
                let mut peer = new_layer();
                let mut script = Vec::new();
                let mut payloads = 0;
                let mut sequence = Sequence(0);
                for _ in 0..1 + rng.below(4) {
                    for _ in 0..1 + rng.below(6) {
                        let channel = rng.below(4) as usize;
                        let _ = peer.send(
                            ChannelId::new(channel),
                            seeded_message(rng.next_u64() as u16),
                        );
                    }
                    let mut payload = Vec::new();
                    peer.write_packet(Time::ZERO, sequence, &mut payload);
                    peer.on_packet_acked(sequence);
                    sequence = sequence.next();
                    script.push(0);
                    push_blob(&mut script, &payload);
                    payloads += 1;
                    if rng.below(2) == 0 {
                        script.push(1);
                    }
                }
                Seed::taking(script, payloads)
            })
            .collect()
    }
}
