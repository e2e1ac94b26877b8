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
    /// The packet endpoint of each connection.
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
        Ok(())
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
    /// Client slots (1 to 65536). Default 64.
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
}
