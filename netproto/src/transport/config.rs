//! [`Config`]: the one value a game sets its server and clients up with.

use crate::MessageSet;
use crate::channel::{ChannelConfig, ChannelId, LayerConfig};
use crate::connection::{CongestionConfig, ConnectionConfig};

/// Everything a game decides to set up a [`UdpServer`](super::UdpServer) and its
/// [`UdpClient`](super::UdpClient)s: the channels, the connection settings and the
/// server's capacity. Both sides take the same value (a client ignores
/// `max_clients`): the channels and the message set make the protocol id
/// ([`protocol_id`](crate::protocol_id)), so two builds that would misread each other
/// cannot connect.
///
/// Start from a preset and change what your game needs:
///
/// | preset | for | packets a second (good / bad mode) |
/// |---|---|---|
/// | [`Config::default`] | most games: a reliable-ordered and an unreliable channel | 30 / 10 |
/// | [`Config::fast_paced`] | a packet every frame at 60 Hz (shooters, fighting games) | 64 / 20 |
/// | [`Config::bulk`] | large downloads (maps, replays) beside the game's messages | 120 / 30 |
///
/// ```
/// use netproto::channel::ChannelConfig;
/// use netproto::transport::{Config, UdpServer};
///
/// #[derive(netproto::NetMessage, Debug, Clone)]
/// #[net(message_set)]
/// enum Msg {
///     Ping(u8),
/// }
///
/// let mut config = Config::fast_paced();
/// config.max_clients = 8;
/// let snapshots = config.channels.add(ChannelConfig::sequenced()); // channel 2
/// config.connection.max_timeout = std::time::Duration::from_secs(30);
/// let server = UdpServer::<Msg>::bind_insecure_dev("127.0.0.1:0", config)?;
/// assert_eq!(server.connection().max_clients(), 8);
/// # let _ = snapshots;
/// # Ok::<(), netproto::transport::TransportError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The channels (the message layer). Both sides must declare the same ones, in
    /// the same order: they are part of the protocol id.
    pub channels: LayerConfig,
    /// Timeouts, keep-alives, congestion rates and the packet endpoint's limits. Its
    /// `protocol_id` is not read: the drivers use
    /// [`protocol_id`](crate::protocol_id) of the message set and `channels`.
    pub connection: ConnectionConfig,
    /// A server's client slots (a client ignores it).
    pub max_clients: usize,
}

impl Default for Config {
    /// A reliable-ordered channel ([`ChannelId::RELIABLE`]) and an unreliable one
    /// ([`ChannelId::UNRELIABLE`]), 30 packets a second in good mode and 10 in bad
    /// (the congestion article's rates), 64 client slots.
    fn default() -> Self {
        Self {
            channels: LayerConfig::default(),
            connection: ConnectionConfig::new(0),
            max_clients: 64,
        }
    }
}

impl Config {
    /// The default channels, sending up to 64 packets a second in good mode (a
    /// packet every frame of a 60 Hz game that has something new each frame: a rate
    /// is a ceiling, and a frame that comes a hair early would skip its packet at
    /// exactly 60) and 20 in bad mode; keep-alives and timeouts as the defaults.
    pub fn fast_paced() -> Self {
        let mut config = Self::default();
        config.connection.congestion = CongestionConfig {
            good_rate: 64.0,
            bad_rate: 20.0,
            ..CongestionConfig::default()
        };
        config
    }

    /// The default channels and a third, [`ChannelConfig::bulk`], for large blocks
    /// ([`BULK`](Self::BULK)), with [`CongestionConfig::bulk`]'s rates (120 packets a
    /// second in good mode, 30 in bad): a 1 MB block in about a second over a 50 ms
    /// round trip while the other channels keep their latency (the
    /// `ChannelConfig::bulk` documentation has the figures and the trade-off).
    pub fn bulk() -> Self {
        let mut channels = LayerConfig::default().channels;
        channels.push(ChannelConfig::bulk());
        let mut config = Self {
            channels: LayerConfig::with_channels(channels),
            ..Self::default()
        };
        config.connection.congestion = CongestionConfig::bulk();
        config
    }

    /// The bulk channel of [`Config::bulk`].
    pub const BULK: ChannelId = ChannelId::new(2);

    /// The connection settings the drivers use for message set `M`: `connection`
    /// with the protocol id of `M` and `channels`.
    pub(crate) fn connection_for<M: MessageSet>(&self) -> ConnectionConfig {
        ConnectionConfig {
            protocol_id: crate::protocol_id::<M>(&self.channels),
            ..self.connection.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::NetMessage, Debug, Clone)]
    #[net(crate = "crate", message_set)]
    enum Msg {
        Ping(u8),
    }

    #[test]
    fn presets_are_valid() {
        for config in [Config::default(), Config::fast_paced(), Config::bulk()] {
            let connection = config.connection_for::<Msg>();
            assert_eq!(connection.validate(), Ok(()));
            assert_eq!(
                crate::channel::MessageLayer::<Msg>::new(config.channels.clone()).err(),
                None
            );
            crate::channel::check_pair(&connection.endpoint, &config.channels)
                .expect("the preset's channels fit its endpoint");
        }
    }

    #[test]
    fn presets_differ_in_rates_and_the_bulk_channel() {
        let (default, fast, bulk) = (Config::default(), Config::fast_paced(), Config::bulk());
        assert_eq!(default.connection.congestion.good_rate, 30.0);
        assert_eq!(fast.connection.congestion.good_rate, 64.0);
        assert_eq!(bulk.connection.congestion.good_rate, 120.0);
        assert_eq!(bulk.channels.channels.len(), 3);
        assert_eq!(
            bulk.channels.channels[Config::BULK.index()],
            ChannelConfig::bulk()
        );
    }

    #[test]
    fn the_protocol_id_follows_the_channels_not_the_field() {
        let mut config = Config::default();
        config.connection.protocol_id = 12345;
        let id = config.connection_for::<Msg>().protocol_id;
        assert_eq!(id, crate::protocol_id::<Msg>(&config.channels));
        assert_ne!(id, Config::bulk().connection_for::<Msg>().protocol_id);
    }
}
