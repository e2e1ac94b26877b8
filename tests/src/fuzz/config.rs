//! The configurations every target runs with: small, so that fragments, blocks,
//! windows and full queues are a few bytes of input away.

use netproto::channel::{BlockConfig, ChannelConfig, LayerConfig};
use netproto::connection::ConnectionConfig;
use netproto::packet::EndpointConfig;

use super::Msg;

/// The packet endpoint of the endpoint target: 32-byte fragments, at most 8 of them,
/// 4 packets in reassembly at once, a skipped sequence every 8 ms on average (the
/// targets step time by up to 255 ms between sends, so most sends skip one).
pub fn endpoint_config() -> EndpointConfig {
    EndpointConfig {
        max_packet_size: 256,
        fragment_above: 32,
        fragment_size: 32,
        max_fragments: 8,
        sent_packets_buffer_size: 64,
        received_packets_buffer_size: 64,
        fragment_reassembly_buffer_size: 4,
        // The skipped-sequence trap armed, with short gaps, so that inputs reach it.
        skip_sequence_seed: Some(0xF022),
        skip_mean_gap: std::time::Duration::from_millis(8),
        ..EndpointConfig::default()
    }
}

/// The message layer of every target: channel 0 reliable with blocks (messages above
/// 96 bits, chat lines and id batches, travel as blocks of 16-byte fragments), channel
/// 1 unreliable, channel 2 reliable-unordered with the same blocks, channel 3
/// sequenced; small queues and a 2048-bit packet budget.
pub fn layer_config() -> LayerConfig {
    let blocks = BlockConfig {
        max_block_size: 256,
        fragment_size: 16,
        max_fragments_per_packet: 4,
        max_blocks_in_flight: 2,
    };
    LayerConfig {
        channels: vec![
            ChannelConfig::reliable()
                .with_queues(64, 64)
                .with_max_messages_per_packet(16)
                .with_max_bits_per_packet(1536)
                .with_max_message_bits(96)
                .with_blocks(blocks),
            ChannelConfig::unreliable()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536),
            ChannelConfig::reliable_unordered()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536)
                .with_max_message_bits(96)
                .with_blocks(blocks),
            ChannelConfig::sequenced()
                .with_queues(16, 16)
                .with_max_messages_per_packet(8)
                .with_max_bits_per_packet(1536),
        ],
        max_packet_bits: 2048,
        sent_packets_buffer_size: 256,
    }
}

/// The connection of every connection target: the protocol id of the message set and
/// [`layer_config`], an endpoint that fragments payloads above 96 bytes.
pub fn connection_config() -> ConnectionConfig {
    let mut config = ConnectionConfig::new(netproto::protocol_id::<Msg>(&layer_config()));
    config.endpoint.max_packet_size = 512;
    config.endpoint.fragment_above = 96;
    config.endpoint.fragment_size = 96;
    config.endpoint.max_fragments = 8;
    config.endpoint.fragment_reassembly_buffer_size = 4;
    // Skips about as rare as they were at one per 256 packets: the forging scripts
    // seal a mirror run's payloads again, whose acks may name a sequence this run
    // skipped (an optimistic ack, which ends the connection and refuses the script's
    // later sends). The packet endpoint target runs the trap with 8 ms gaps.
    config.endpoint.skip_mean_gap = std::time::Duration::from_secs(2);
    config
}
