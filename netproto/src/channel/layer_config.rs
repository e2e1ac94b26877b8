//! Configuration of the message layer: its channels and the packet budget they share,
//! validated up front against the payload format (`payload`).

use super::config::{ChannelConfig, MAX_CHANNELS, MAX_QUEUE_SIZE};
use super::payload::{
    entry_header_bits, fragment_bits, frame_bits, group_header_bits, message_id_bits,
};

/// The message layer: its channels and the packet budget they share.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerConfig {
    /// The channels, by index (at most [`MAX_CHANNELS`]).
    pub channels: Vec<ChannelConfig>,
    /// Most bits of one packet payload. The default, 8192 bits (1024 bytes), is the
    /// packet endpoint's default fragmentation threshold: a packet is never split.
    /// [`with_channels`](Self::with_channels) raises it to hold the largest channel
    /// budget (the [`bulk`](ChannelConfig::bulk) preset's: 8 KiB, split into 9
    /// datagrams). With the congestion mode's packets per second it caps what the
    /// layer moves: see [`ChannelConfig::bulk`], "Its rate".
    pub max_packet_bits: usize,
    /// Packets remembered for acks: which messages each one carried. At least the
    /// packet endpoint's `sent_packets_buffer_size` and `received_packets_buffer_size`
    /// ([`MessageStack`](super::MessageStack) checks): times the messages per packet,
    /// it bounds how far the ids move while a packet is alive (1 to 32768; each record
    /// holds at most the messages and fragments one packet carries).
    pub sent_packets_buffer_size: usize,
}

impl Default for LayerConfig {
    /// One reliable-ordered channel ([`ChannelId::RELIABLE`](super::ChannelId::RELIABLE))
    /// and one unreliable channel ([`ChannelId::UNRELIABLE`](super::ChannelId::UNRELIABLE)).
    fn default() -> Self {
        Self {
            channels: vec![ChannelConfig::reliable(), ChannelConfig::unreliable()],
            max_packet_bits: 8192,
            sent_packets_buffer_size: 256,
        }
    }
}

/// An invalid [`LayerConfig`], naming the channel and field at fault.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LayerConfigError {
    /// No channels, or more than [`MAX_CHANNELS`].
    #[error("a layer needs 1 to {MAX_CHANNELS} channels, got {0}")]
    ChannelCount(usize),
    /// A queue size is not a power of two in `1..=32768` (it must divide 65536).
    #[error("channel {channel}: {field} is {value}, it must be a power of two in 1..=32768")]
    QueueSize {
        /// The channel.
        channel: usize,
        /// The field.
        field: &'static str,
        /// Its value.
        value: usize,
    },
    /// A count or size that must be positive is zero, or one above its limit.
    #[error("channel {channel}: {field} is {value}, it must be in 1..={max}")]
    OutOfRange {
        /// The channel.
        channel: usize,
        /// The field.
        field: &'static str,
        /// Its value.
        value: usize,
        /// The largest accepted value.
        max: usize,
    },
    /// The resend interval's round-trip factor is negative or not finite.
    #[error("channel {channel}: resend_rtt_factor must be finite and >= 0, got {value}")]
    ResendRttFactor {
        /// The channel.
        channel: usize,
        /// Its value.
        value: f64,
    },
    /// The channel's budget cannot hold one maximal message (or one fragment).
    #[error(
        "channel {channel}: max_bits_per_packet {budget} cannot hold {what} ({needed} bits needed): {fix}"
    )]
    BudgetTooSmall {
        /// The channel.
        channel: usize,
        /// Its budget.
        budget: usize,
        /// Bits needed.
        needed: usize,
        /// What must fit.
        what: &'static str,
        /// The settings to change.
        fix: &'static str,
    },
    /// The channel's budget is above the packet's.
    #[error("channel {channel}: max_bits_per_packet {budget} exceeds the packet budget {packet}")]
    BudgetAbovePacket {
        /// The channel.
        channel: usize,
        /// Its budget.
        budget: usize,
        /// Bits left for channel entries in a packet.
        packet: usize,
    },
    /// A type declared with [`ChannelConfig::carries`] is not one of the layer's
    /// message set.
    #[error("channel {channel}: declared to carry {what}, which {why}")]
    Carries {
        /// The channel.
        channel: usize,
        /// The type (or message set) named.
        what: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Blocks are configured on an unreliable channel.
    #[error("channel {channel}: blocks need a reliable channel")]
    BlocksOnUnreliable {
        /// The channel.
        channel: usize,
    },
    /// The packet window is too large for the message id space: a packet that lives
    /// through the whole window (a late ack, or a resend overtaken in the network)
    /// could then carry ids that are half the id space away, and be misread.
    #[error(
        "channel {channel}: sent_packets_buffer_size {packets} x (messages + fragments per packet) {messages} must stay below {limit}"
    )]
    AckWindowTooLarge {
        /// The channel.
        channel: usize,
        /// Packets remembered.
        packets: usize,
        /// Messages (and fragments) per packet.
        messages: usize,
        /// 32768 - receive queue.
        limit: usize,
    },
}

impl LayerConfig {
    /// Adds `channel` after the others and returns its id: what
    /// [`send`](super::MessageLayer::send) and [`receive`](super::MessageLayer::receive)
    /// take. Both sides must add the same channels in the same order. A configuration
    /// with more than [`MAX_CHANNELS`] channels is invalid ([`validate`](Self::validate)).
    ///
    /// As [`with_channels`](Self::with_channels) does, the packet budget
    /// ([`max_packet_bits`](Self::max_packet_bits)) is raised to what the largest
    /// channel budget needs when it is less (adding a [`bulk`](ChannelConfig::bulk)
    /// channel); it is never lowered.
    pub fn add(&mut self, channel: ChannelConfig) -> super::ChannelId {
        self.channels.push(channel);
        self.max_packet_bits = self.max_packet_bits.max(needed_packet_bits(&self.channels));
        super::ChannelId::new(self.channels.len() - 1)
    }

    /// Adds `channel` declared for the messages of the set `M` whose payload is `T`
    /// ([`ChannelConfig::carries`]) and returns its typed handle: what
    /// [`MessageLayer::send_on`](super::MessageLayer::send_on) takes with a `T`, and
    /// nothing else. Both sides must add the same channels in the same order.
    pub fn add_typed<M: crate::MessageSet, T: crate::NetMessage + Into<M>>(
        &mut self,
        channel: ChannelConfig,
    ) -> super::Channel<T> {
        super::Channel::new(self.add(channel.carries::<M, T>()))
    }

    /// The typed handle of channel `id` when it is declared for exactly `T` of the set
    /// `M` ([`ChannelConfig::carries`] called with `T` alone): for a configuration built
    /// as a list ([`with_channels`](Self::with_channels)). `None` for no such channel, or
    /// one that carries another type, several, or every type.
    pub fn typed<M: crate::MessageSet, T: crate::NetMessage + Into<M>>(
        &self,
        id: super::ChannelId,
    ) -> Option<super::Channel<T>> {
        let channel = self.channels.get(id.index())?;
        channel
            .carries
            .is_only::<M, T>()
            .then(|| super::Channel::new(id))
    }

    /// Checks what each channel is declared to carry against the message set whose
    /// schema fingerprint is `fingerprint`;
    /// [`MessageLayer::new`](super::MessageLayer::new) calls this.
    pub(crate) fn validate_carries(&self, fingerprint: u64) -> Result<(), LayerConfigError> {
        for (channel, c) in self.channels.iter().enumerate() {
            c.carries.check(fingerprint).map_err(|e| match e {
                super::typed::CarriesError::OtherSet(set) => LayerConfigError::Carries {
                    channel,
                    what: set,
                    why: "is another message set than this layer's",
                },
                super::typed::CarriesError::NotInSet(ty, _) => LayerConfigError::Carries {
                    channel,
                    what: ty,
                    why: "is the payload of no variant of this layer's message set",
                },
            })?;
        }
        Ok(())
    }

    /// The ids of the channels, in order.
    pub fn ids(&self) -> impl Iterator<Item = super::ChannelId> + use<> {
        (0..self.channels.len()).map(super::ChannelId::new)
    }

    /// A layer with these channels and the default budgets: channel `i` of the list is
    /// [`ChannelId::new(i)`](super::ChannelId::new). The packet budget
    /// ([`max_packet_bits`](Self::max_packet_bits)) is the default 8192 bits, or what
    /// the largest channel budget needs when that is more (a [`bulk`](ChannelConfig::bulk)
    /// channel's).
    pub fn with_channels(channels: Vec<ChannelConfig>) -> Self {
        let default = Self::default();
        Self {
            max_packet_bits: default.max_packet_bits.max(needed_packet_bits(&channels)),
            channels,
            ..default
        }
    }

    /// Checks every field against a message set whose largest message is `max_bits`
    /// bits ([`NetMessage::MAX_BITS`](crate::NetMessage::MAX_BITS));
    /// [`MessageLayer::new`](super::MessageLayer::new) calls this.
    pub fn validate(&self, max_bits: usize) -> Result<(), LayerConfigError> {
        let n = self.channels.len();
        if n == 0 || n > MAX_CHANNELS {
            return Err(LayerConfigError::ChannelCount(n));
        }
        if self.sent_packets_buffer_size == 0 || self.sent_packets_buffer_size > MAX_QUEUE_SIZE {
            return Err(LayerConfigError::OutOfRange {
                channel: 0,
                field: "sent_packets_buffer_size",
                value: self.sent_packets_buffer_size,
                max: MAX_QUEUE_SIZE,
            });
        }
        let limit = 8 * crate::packet::MAX_PACKET_SIZE_LIMIT;
        if self.max_packet_bits == 0 || self.max_packet_bits > limit {
            return Err(LayerConfigError::OutOfRange {
                channel: 0,
                field: "max_packet_bits",
                value: self.max_packet_bits,
                max: limit,
            });
        }
        let packet = self.max_packet_bits.saturating_sub(frame_bits(n));
        for (i, c) in self.channels.iter().enumerate() {
            for (field, value) in [
                ("send_queue_size", c.send_queue_size),
                ("receive_queue_size", c.receive_queue_size),
            ] {
                if !value.is_power_of_two() || value > MAX_QUEUE_SIZE {
                    return Err(LayerConfigError::QueueSize {
                        channel: i,
                        field,
                        value,
                    });
                }
            }
            if c.max_messages_per_packet == 0 || c.max_messages_per_packet > 1024 {
                return Err(LayerConfigError::OutOfRange {
                    channel: i,
                    field: "max_messages_per_packet",
                    value: c.max_messages_per_packet,
                    max: 1024,
                });
            }
            let value = c.resend_rtt_factor;
            if !(value.is_finite() && value >= 0.0) {
                return Err(LayerConfigError::ResendRttFactor { channel: i, value });
            }
            if c.weight == 0 || c.weight > 1024 {
                return Err(LayerConfigError::OutOfRange {
                    channel: i,
                    field: "weight",
                    value: c.weight as usize,
                    max: 1024,
                });
            }
            if c.max_bits_per_packet > packet {
                return Err(LayerConfigError::BudgetAbovePacket {
                    channel: i,
                    budget: c.max_bits_per_packet,
                    packet,
                });
            }
            let reliable = c.kind.is_reliable();
            let header = entry_header_bits(n, c)
                + if c.kind.has_ids() {
                    message_id_bits(None, 0)
                } else {
                    0
                };
            match (&c.blocks, reliable) {
                (Some(_), false) => {
                    return Err(LayerConfigError::BlocksOnUnreliable { channel: i });
                }
                (Some(b), true) => {
                    for (field, value, max) in [
                        ("max_block_size", b.max_block_size, 1 << 24),
                        ("fragment_size", b.fragment_size, 1 << 16),
                        ("max_fragments_per_packet", b.max_fragments_per_packet, 256),
                        ("max_blocks_in_flight", b.max_blocks_in_flight, 64),
                    ] {
                        if value == 0 || value > max {
                            return Err(LayerConfigError::OutOfRange {
                                channel: i,
                                field,
                                value,
                                max,
                            });
                        }
                    }
                    if b.max_fragments() > 65536 {
                        return Err(LayerConfigError::OutOfRange {
                            channel: i,
                            field: "max_block_size / fragment_size",
                            value: b.max_fragments(),
                            max: 65536,
                        });
                    }
                    // A full fragment, as a writer measures it.
                    let needed = entry_header_bits(n, c)
                        + group_header_bits(b)
                        + fragment_bits(b, &mut vec![0; b.fragment_size]);
                    if c.max_bits_per_packet < needed {
                        return Err(LayerConfigError::BudgetTooSmall {
                            channel: i,
                            budget: c.max_bits_per_packet,
                            needed,
                            what: "one block fragment",
                            fix: "lower blocks.fragment_size or raise max_bits_per_packet",
                        });
                    }
                }
                (None, _) => {
                    let needed = header + c.max_message_bits.unwrap_or(max_bits);
                    if c.max_bits_per_packet < needed {
                        return Err(LayerConfigError::BudgetTooSmall {
                            channel: i,
                            budget: c.max_bits_per_packet,
                            needed,
                            what: "one maximal message of the message set",
                            fix: "declare what this channel carries (max_message_bits, or \
                                  ChannelConfig::carries), or give it blocks \
                                  (ChannelConfig::bulk) to send larger messages as blocks",
                        });
                    }
                }
            }
            if reliable {
                let per_packet =
                    c.max_messages_per_packet + c.blocks.map_or(0, |b| b.max_fragments_per_packet);
                // A packet lives at most one packet window (the endpoint drops older
                // ones), during which the ids move by at most this product: keep it,
                // plus the receive window, within half the id space.
                let limit = 32768 - c.receive_queue_size.min(32768);
                if self.sent_packets_buffer_size.saturating_mul(per_packet) >= limit {
                    return Err(LayerConfigError::AckWindowTooLarge {
                        channel: i,
                        packets: self.sent_packets_buffer_size,
                        messages: per_packet,
                        limit,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The packet budget the largest of `channels`' budgets needs, with the frame of that
/// many channels, in whole bytes.
fn needed_packet_bits(channels: &[ChannelConfig]) -> usize {
    let largest = channels
        .iter()
        .map(|c| c.max_bits_per_packet)
        .max()
        .unwrap_or(0);
    largest
        .saturating_add(frame_bits(channels.len()))
        .next_multiple_of(8)
}

#[cfg(test)]
mod tests {
    use super::super::config::BlockConfig;
    use super::*;

    #[test]
    fn default_is_valid_for_small_messages() {
        assert_eq!(LayerConfig::default().validate(1000), Ok(()));
    }

    #[test]
    fn each_rule_has_an_error() {
        let base = LayerConfig::default();
        let with = |f: &dyn Fn(&mut ChannelConfig)| {
            let mut c = base.clone();
            f(&mut c.channels[0]);
            c.validate(100)
        };
        assert!(matches!(
            with(&|c| c.send_queue_size = 1000),
            Err(LayerConfigError::QueueSize { .. })
        ));
        assert!(matches!(
            with(&|c| c.receive_queue_size = 65536),
            Err(LayerConfigError::QueueSize { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_messages_per_packet = 0),
            Err(LayerConfigError::OutOfRange { .. })
        ));
        assert!(matches!(
            with(&|c| c.resend_rtt_factor = f64::NAN),
            Err(LayerConfigError::ResendRttFactor { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_bits_per_packet = 50),
            Err(LayerConfigError::BudgetTooSmall { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_bits_per_packet = 9000),
            Err(LayerConfigError::BudgetAbovePacket { .. })
        ));
        assert!(matches!(
            with(&|c| c.max_messages_per_packet = 1024),
            Err(LayerConfigError::AckWindowTooLarge { .. })
        ));
        assert!(matches!(
            with(&|c| c.blocks = Some(BlockConfig {
                fragment_size: 2000,
                ..BlockConfig::default()
            })),
            Err(LayerConfigError::BudgetTooSmall { .. })
        ));
        let mut c = base.clone();
        c.channels[1].blocks = Some(BlockConfig::default());
        assert_eq!(
            c.validate(100),
            Err(LayerConfigError::BlocksOnUnreliable { channel: 1 })
        );
        assert_eq!(
            LayerConfig::with_channels(vec![]).validate(1),
            Err(LayerConfigError::ChannelCount(0))
        );
        let huge = LayerConfig {
            max_packet_bits: usize::MAX,
            ..base.clone()
        };
        assert!(matches!(
            huge.validate(100),
            Err(LayerConfigError::OutOfRange {
                field: "max_packet_bits",
                ..
            })
        ));
        // A message set with a message larger than the budget needs blocks.
        assert!(matches!(
            base.validate(8000),
            Err(LayerConfigError::BudgetTooSmall { .. })
        ));
        let e = with(&|c| c.send_queue_size = 3).expect_err("not a power of two");
        assert!(e.to_string().contains("power of two"));
    }
}
