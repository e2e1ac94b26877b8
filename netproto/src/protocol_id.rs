//! The protocol id: what two builds must agree on to talk.

use crate::MessageSet;
use crate::channel::{ChannelKind, LayerConfig};
use crate::schema::fnv1a_64;

/// The protocol id of a game built with message set `M` and channels `layer`: the
/// 64-bit FNV-1a of the message set's schema fingerprint
/// ([`MessageSet::FINGERPRINT`]) and the channel configuration's
/// ([`layer_fingerprint`]), both little-endian.
///
/// The game's backend writes it in every connect token and its servers and clients
/// configure it ([`ConnectionConfig::protocol_id`](crate::connection::ConnectionConfig::protocol_id)):
/// two builds whose messages or channels differ, which would misread or stall each
/// other, cannot connect (the client refuses the token, the server ignores the
/// request).
///
/// ```
/// use netproto::channel::{ChannelConfig, LayerConfig};
/// use netproto::{NetMessage, protocol_id};
///
/// #[derive(NetMessage, Debug)]
/// #[net(message_set)]
/// enum Msg {
///     Ping(u32),
/// }
///
/// let a = protocol_id::<Msg>(&LayerConfig::default());
/// assert_eq!(a, protocol_id::<Msg>(&LayerConfig::default()));
/// let mut wider = LayerConfig::default();
/// wider.channels[0] = ChannelConfig::reliable().with_queues(1024, 2048);
/// assert_ne!(a, protocol_id::<Msg>(&wider));
/// ```
pub fn protocol_id<M: MessageSet>(layer: &LayerConfig) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&M::FINGERPRINT.to_le_bytes());
    bytes[8..].copy_from_slice(&layer_fingerprint(layer).to_le_bytes());
    fnv1a_64(&bytes)
}

/// The 64-bit FNV-1a of every setting of `layer` that both sides must share, in a
/// fixed order, each as a little-endian u64 (floats as their IEEE bits, an absent
/// option as 0 then nothing, a present one as 1 then its value): the packet budget,
/// the packet record count, the number of channels, then per channel its kind (0
/// reliable-ordered, 1 unreliable, 2 reliable-unordered, 3 sequenced), queue sizes, resend interval and round-trip
/// factor, message and bit limits per packet, inline message limit and blocks
/// (block size, fragment size, fragments per packet, blocks in flight).
pub fn layer_fingerprint(layer: &LayerConfig) -> u64 {
    let mut words: Vec<u64> = vec![
        layer.max_packet_bits as u64,
        layer.sent_packets_buffer_size as u64,
        layer.channels.len() as u64,
    ];
    for channel in &layer.channels {
        words.push(match channel.kind {
            ChannelKind::ReliableOrdered => 0,
            ChannelKind::UnreliableUnordered => 1,
            ChannelKind::ReliableUnordered => 2,
            ChannelKind::UnreliableSequenced => 3,
        });
        words.extend([
            channel.send_queue_size as u64,
            channel.receive_queue_size as u64,
            // The f64 seconds this field was before it was a Duration: same fingerprint.
            channel.resend_interval.as_secs_f64().to_bits(),
            channel.resend_rtt_factor.to_bits(),
            channel.max_messages_per_packet as u64,
            channel.max_bits_per_packet as u64,
        ]);
        match channel.max_message_bits {
            None => words.push(0),
            Some(bits) => words.extend([1, bits as u64]),
        }
        match channel.blocks {
            None => words.push(0),
            Some(b) => words.extend([
                1,
                b.max_block_size as u64,
                b.fragment_size as u64,
                b.max_fragments_per_packet as u64,
                b.max_blocks_in_flight as u64,
            ]),
        }
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    fnv1a_64(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::{BlockConfig, ChannelConfig};
    use std::time::Duration;

    #[test]
    fn every_shared_setting_changes_the_fingerprint() {
        let base = LayerConfig::default();
        let f = layer_fingerprint(&base);
        let variants: Vec<LayerConfig> = vec![
            LayerConfig {
                max_packet_bits: 4096,
                ..base.clone()
            },
            LayerConfig {
                sent_packets_buffer_size: 512,
                ..base.clone()
            },
            LayerConfig::with_channels(vec![ChannelConfig::reliable()]),
            LayerConfig::with_channels(vec![
                ChannelConfig::unreliable(),
                ChannelConfig::reliable(),
            ]),
            LayerConfig::with_channels(vec![
                ChannelConfig::reliable().with_resend_interval(Duration::from_millis(200)),
                ChannelConfig::unreliable(),
            ]),
            LayerConfig::with_channels(vec![
                ChannelConfig::reliable().with_blocks(BlockConfig::default()),
                ChannelConfig::unreliable(),
            ]),
            LayerConfig::with_channels(vec![
                ChannelConfig::reliable().with_max_message_bits(100),
                ChannelConfig::unreliable(),
            ]),
        ];
        let mut seen = vec![f];
        for v in &variants {
            let g = layer_fingerprint(v);
            assert!(!seen.contains(&g), "{v:?}");
            seen.push(g);
        }
        assert_eq!(layer_fingerprint(&base.clone()), f);
    }
}
