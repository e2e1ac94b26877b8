//! Connection configuration.

use super::congestion::CongestionConfig;
use crate::packet::EndpointConfig;

/// Settings shared by clients and servers.
///
/// | field | default |
/// |---|---|
/// | `keepalive_interval` | 0.1 s |
/// | `timeout` | 5 s |
/// | `handshake_resend_interval` | 0.1 s |
/// | `connect_timeout` | 5 s |
/// | `disconnect_copies` | 3 |
/// | `endpoint` | [`EndpointConfig::default`] with `rtt_smoothing_factor` 0.1 |
///
/// The endpoint's RTT smoothing is the article's 10% here (not the reference's
/// 0.0025): congestion avoidance reads the smoothed RTT every update, and must see a
/// jump above its threshold within a few acks.
///
/// # Timeouts and the sequence space
///
/// Packet sequences are 16 bits and compared wrap-aware: of two sequences, the newer
/// is the one less than half the space (32768) ahead. A connection lives on while
/// anything arrives within `timeout`, so the oldest sequence a side can still hear of
/// (an ack stuck at the last packet the peer received while our packets are lost, a
/// fragment of a packet still being reassembled, a packet that arrives up to
/// `timeout` late) is at most the packets sent in `timeout` behind the newest, plus a
/// packet window. [`validate`](Self::validate) refuses a configuration where that
/// could reach half the space, so an old sequence is never taken for a new one:
///
/// ```text
/// timeout * (max(good_rate, bad_rate) + 1 / keepalive_interval)
///     + max(sent_packets_buffer_size, received_packets_buffer_size) < 32768
/// ```
///
/// With the defaults, 5 s x (30 + 10) + 256 = 456 packets. The rate assumes the
/// caller keeps to [`ready_to_send`](super::Server::ready_to_send) (the UDP transport
/// does). The message ids of the channels have their own rule, checked by the
/// layer's configuration (`AckWindowTooLarge`).
///
/// ```
/// use netproto::connection::{ConfigError, ConnectionConfig};
///
/// let mut config = ConnectionConfig::new(7);
/// config.timeout = 600.0; // ten minutes at 40 packets per second: 24,000 packets
/// assert!(config.validate().is_ok());
/// config.congestion.good_rate = 60.0; // 42,000: an old ack could look new
/// assert!(matches!(
///     config.validate(),
///     Err(ConfigError::TimeoutOutlastsSequences { .. })
/// ));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionConfig {
    /// The protocol id: the message set's schema fingerprint
    /// ([`MessageSet::FINGERPRINT`](crate::MessageSet::FINGERPRINT)). A peer with a
    /// different one is denied with [`DenyReason::ProtocolMismatch`](super::DenyReason).
    pub protocol_id: u64,
    /// A keep-alive is sent when nothing was sent for this many seconds.
    pub keepalive_interval: f64,
    /// The connection ends when nothing was received for this many seconds.
    pub timeout: f64,
    /// The client resends its request or response this often during the handshake.
    pub handshake_resend_interval: f64,
    /// The client gives up the handshake after this many seconds.
    pub connect_timeout: f64,
    /// Copies of the disconnect packet sent when a side disconnects (1 to 16).
    pub disconnect_copies: u32,
    /// The packet endpoint of each connection (its windows and reassembly table bound
    /// a connection's memory: [`EndpointConfig::memory_bound`]).
    pub endpoint: EndpointConfig,
    /// Congestion avoidance of each connection.
    pub congestion: CongestionConfig,
}

impl ConnectionConfig {
    /// The defaults with `protocol_id`.
    pub fn new(protocol_id: u64) -> Self {
        Self {
            protocol_id,
            keepalive_interval: 0.1,
            timeout: 5.0,
            handshake_resend_interval: 0.1,
            connect_timeout: 5.0,
            disconnect_copies: 3,
            endpoint: EndpointConfig {
                rtt_smoothing_factor: 0.1,
                ..EndpointConfig::default()
            },
            congestion: CongestionConfig::default(),
        }
    }

    /// The most heap memory, in bytes, one established connection (its session: the
    /// packet endpoint and the record of which packets carried a payload) holds,
    /// whatever the peer sends:
    ///
    /// ```text
    /// endpoint.memory_bound() + 4 * endpoint.sent_packets_buffer_size
    /// ```
    ///
    /// ([`EndpointConfig::memory_bound`]). The datagrams and events a connection
    /// queues are the caller's to drain and are not included; neither is the
    /// message layer above (see
    /// [`LayerConfig::memory_bound`](crate::channel::LayerConfig::memory_bound)).
    pub fn memory_per_connection(&self) -> usize {
        self.endpoint
            .memory_bound()
            .saturating_add(4usize.saturating_mul(self.endpoint.sent_packets_buffer_size))
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [
            ("keepalive_interval", self.keepalive_interval),
            ("timeout", self.timeout),
            ("handshake_resend_interval", self.handshake_resend_interval),
            ("connect_timeout", self.connect_timeout),
        ] {
            positive(field, value)?;
        }
        if !(1..=16).contains(&self.disconnect_copies) {
            return Err(ConfigError::OutOfRange {
                field: "disconnect_copies",
            });
        }
        self.congestion.validate()?;
        self.endpoint.validate()?;
        let packets = self.packets_per_timeout();
        let limit = SEQUENCE_HALF - self.sequence_window();
        if packets.is_nan() || packets >= limit as f64 {
            return Err(ConfigError::TimeoutOutlastsSequences { packets, limit });
        }
        Ok(())
    }

    /// The most packets one side sends in `timeout` seconds when it keeps to its
    /// congestion mode's rate ([`ready_to_send`](super::Server::ready_to_send)) and
    /// sends keep-alives: `timeout * (max(good_rate, bad_rate) + 1 / keepalive_interval)`.
    pub fn packets_per_timeout(&self) -> f64 {
        let rate = self.congestion.good_rate.max(self.congestion.bad_rate);
        self.timeout * (rate + 1.0 / self.keepalive_interval)
    }

    /// The larger packet window of the endpoint (sent or received).
    fn sequence_window(&self) -> usize {
        self.endpoint
            .sent_packets_buffer_size
            .max(self.endpoint.received_packets_buffer_size)
            .min(SEQUENCE_HALF)
    }
}

pub(crate) fn positive(field: &'static str, value: f64) -> Result<(), ConfigError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(ConfigError::NotPositive { field, value })
    }
}

/// A server's settings.
///
/// ```
/// use netproto::connection::{ConnectionConfig, ServerConfig};
///
/// // The key must be secret and random per server (from the OS's generator in a
/// // real server; fixed here so that the example is deterministic).
/// let config = ServerConfig::new(ConnectionConfig::new(0x1234), [7; 16]);
/// assert_eq!(config.max_clients, 64);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// The settings of every connection.
    pub connection: ConnectionConfig,
    /// Client slots (1 to 65536). Default 64. Allocated at construction; each
    /// connection holds at most
    /// [`ConnectionConfig::memory_per_connection`] bytes besides
    /// ([`Server::memory_bound`](super::Server::memory_bound) for the whole server).
    pub max_clients: usize,
    /// The secret key of the challenge hash. Must be random per server: anyone who
    /// knows it can answer challenges for addresses they do not own. The core takes
    /// it from here (and stays deterministic); the transport draws it at start.
    pub challenge_key: [u8; 16],
    /// Seconds per challenge time bucket; a challenge is accepted in its bucket and
    /// the next, so it lives between one and two windows. Default 10 s.
    pub challenge_window: f64,
}

impl ServerConfig {
    /// The defaults with `connection` and `challenge_key`.
    pub fn new(connection: ConnectionConfig, challenge_key: [u8; 16]) -> Self {
        Self {
            connection,
            max_clients: 64,
            challenge_key,
            challenge_window: 10.0,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.connection.validate()?;
        if !(1..=65536).contains(&self.max_clients) {
            return Err(ConfigError::OutOfRange {
                field: "max_clients",
            });
        }
        positive("challenge_window", self.challenge_window)
    }
}

/// An invalid connection configuration.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A duration or rate is not a positive finite number.
    #[error("{field} is {value}, it must be positive and finite")]
    NotPositive {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A count is outside its range (see the field's documentation).
    #[error("{field} is out of range")]
    OutOfRange {
        /// The field.
        field: &'static str,
    },
    /// The packet endpoint's configuration is invalid.
    #[error("endpoint: {0}")]
    Endpoint(#[from] crate::packet::ConfigError),
    /// A side may send so many packets within `timeout` that sequence numbers could
    /// wrap around and an old packet or ack be taken for a new one (see
    /// [`ConnectionConfig`]): shorten `timeout`, or lower the rates.
    #[error(
        "timeout x packet rate allows {packets} packets, at least the {limit} that keep sequence numbers unambiguous (32768 minus the packet window)"
    )]
    TimeoutOutlastsSequences {
        /// [`ConnectionConfig::packets_per_timeout`].
        packets: f64,
        /// Half the sequence space minus the endpoint's larger packet window.
        limit: usize,
    },
}

/// Half the 16-bit sequence space.
const SEQUENCE_HALF: usize = 32768;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_far_from_a_sequence_wrap() {
        let config = ConnectionConfig::new(1);
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.packets_per_timeout(), 200.0);
    }

    #[test]
    fn a_timeout_that_could_outlast_a_sequence_wrap_is_refused() {
        let base = ConnectionConfig::new(1);
        // 32768 - 256 = 32512 packets allowed within the timeout, at 40 per second.
        let at = |timeout: f64| {
            ConnectionConfig {
                timeout,
                ..base.clone()
            }
            .validate()
        };
        assert_eq!(at(812.0), Ok(()));
        assert_eq!(
            at(813.0),
            Err(ConfigError::TimeoutOutlastsSequences {
                packets: 32520.0,
                limit: 32512,
            })
        );
        // Keep-alives count: a 1 ms interval is 1000 packets a second.
        let fast = ConnectionConfig {
            keepalive_interval: 0.001,
            timeout: 40.0,
            ..base.clone()
        };
        assert!(matches!(
            fast.validate(),
            Err(ConfigError::TimeoutOutlastsSequences { .. })
        ));
        // So does the packet window.
        let mut wide = base.clone();
        wide.timeout = 500.0; // 20000 packets
        assert_eq!(wide.validate(), Ok(()));
        wide.endpoint.received_packets_buffer_size = 16384;
        assert!(matches!(
            wide.validate(),
            Err(ConfigError::TimeoutOutlastsSequences { limit: 16384, .. })
        ));
        let err = at(1e9).expect_err("refused");
        assert!(err.to_string().contains("sequence"), "{err}");
    }
}
