//! Connection configuration.

use std::net::SocketAddr;
use std::time::Duration;

use super::congestion::CongestionConfig;
use crate::netcode::Key;
use crate::packet::EndpointConfig;

/// Settings shared by clients and servers.
///
/// | field | default |
/// |---|---|
/// | `keepalive_interval` | 0.1 s |
/// | `max_timeout` | 60 s |
/// | `handshake_resend_interval` | 0.1 s |
/// | `disconnect_copies` | 10 (the reference implementation's count) |
/// | `allow_no_timeout` | `true` |
/// | `endpoint` | [`EndpointConfig::default`] with `rtt_smoothing_factor` 0.1 and `report_ack_delay` on |
///
/// The endpoint's skipped-sequence trap (against peers that ack packets they never
/// received) is armed on every server connection, seeded from the server's secret
/// challenge key, and by [`UdpClient`](crate::transport::UdpClient) with a seed from
/// the operating system; set `endpoint.skip_sequence_seed` to choose the seed.
///
/// The timeout of a connection is not set here: it comes from the connect token
/// (`timeout_seconds`, chosen by the backend that made it). `max_timeout` is the
/// longest one this side accepts: a client refuses a token with a longer one, a
/// server ignores its requests. A negative `timeout_seconds` means *no timeout*
/// (the netcode standard's "negative values disable timeout", meant for
/// development: a peer stopped in a debugger is not dropped); it is accepted when
/// `allow_no_timeout` is set, and what it means is in [`allow_no_timeout`](Self::allow_no_timeout).
/// A timeout of 0 is refused: the standard gives it no meaning, and the reference
/// implementation treats it half as "none" (connected peers, the client's
/// handshake) and half as "expired at once" (the server's handshake), so that a
/// 0-second token cannot connect to it.
///
/// The endpoint's RTT smoothing is the article's 10% here (not the reference's
/// 0.0025): congestion avoidance reads the smoothed RTT every update, and must see a
/// jump above its threshold within a few acks. With `report_ack_delay` every payload
/// carries the ack-delay byte, so that the RTT congestion avoidance judges is the
/// network's, not the network's plus the peer's send interval (a 180 ms link would
/// otherwise read up to 280 ms in bad mode and never go good).
///
/// # Timeouts and the sequence space
///
/// The packet endpoint's sequences are 16 bits and compared wrap-aware: of two
/// sequences, the newer is the one less than half the space (32768) ahead. (The
/// connection's own 64-bit sequence, which seals every packet, never wraps: replays
/// are refused by its window.) A connection lives on while anything arrives within its
/// timeout, so the oldest endpoint sequence a side can still hear of is at most the
/// sequences used in that time behind the newest, plus a packet window. The
/// sequences used are the packets sent and the sequences the skipped-sequence trap
/// skips ([`EndpointConfig::skip_mean_gap`]): at most one per packet, so at most
/// twice the packets. [`validate`](Self::validate) refuses a configuration where
/// that could reach half the space, so an old ack is never taken for a new one:
///
/// ```text
/// 2 * max_timeout * (max(good_rate, bad_rate) + 1 / keepalive_interval)
///     + max(sent_packets_buffer_size, received_packets_buffer_size) < 32768
/// ```
///
/// With the defaults, 2 x 60 s x (30 + 10) + 256 = 5,056 sequences (with
/// [`CongestionConfig::bulk`]'s 120 packets a second, 15,856).
///
/// ```
/// use netproto::connection::{ConnectionConfigError, ConnectionConfig};
/// use std::time::Duration;
///
/// let mut config = ConnectionConfig::new(7);
/// config.max_timeout = Duration::from_secs(120); // two minutes at 40 packets per second: 9,600 sequences
/// assert!(config.validate().is_ok());
/// config.congestion.good_rate = 240.0; // 60,000: an old ack could look new
/// assert!(matches!(
///     config.validate(),
///     Err(ConnectionConfigError::TimeoutOutlastsSequences { .. })
/// ));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionConfig {
    /// The protocol id: [`protocol_id`](crate::protocol_id) of the message set and
    /// the channel configuration. Tokens carry it; a request with another one is
    /// ignored, and a client refuses a token made for another.
    pub protocol_id: u64,
    /// A keep-alive is sent when nothing was sent for this long.
    pub keepalive_interval: Duration,
    /// The longest connection timeout a connect token may set (tokens count it in
    /// whole seconds).
    pub max_timeout: Duration,
    /// The client resends its request or response this often during the handshake.
    pub handshake_resend_interval: Duration,
    /// Copies of the disconnect packet sent when a side disconnects (1 to 16).
    /// Default 10, as the netcode reference implementation
    /// (`NETCODE_NUM_DISCONNECT_PACKETS`): the disconnect is sent once and never
    /// acked, so with 10% loss the peer misses all 10 copies once in 10^10
    /// disconnects (it then times out instead).
    pub disconnect_copies: u32,
    /// Whether this side accepts a connect token whose `timeout_seconds` is negative,
    /// "no timeout". Default `true`, as the standard and the reference
    /// implementation (only the backend, holding the private key, can make such a
    /// token: it is the operator's choice). When `false` a client refuses such a
    /// token ([`ConnectionConfigError::TokenTimeout`]) and a server ignores its
    /// requests ([`ServerStats::requests_dropped_bad_timeout`](super::ServerStats::requests_dropped_bad_timeout)).
    ///
    /// What "no timeout" means depends on what the connection carries:
    ///
    /// * **Raw netcode payloads** ([`RawClient`](super::RawClient),
    ///   [`RawServer`](super::RawServer),
    ///   [`transport::NetcodeServer`](crate::transport::NetcodeServer)): the
    ///   connection is never timed out for silence. It ends by a disconnect packet or
    ///   by the application. The trade-off: a server slot held by a client that
    ///   vanished without its disconnect packets arriving stays taken until the
    ///   application disconnects it ([`RawServer::silent_for`](super::RawServer::silent_for)
    ///   tells how long a client has been silent). A server that cannot afford that
    ///   sets `allow_no_timeout` to `false`.
    /// * **The packet endpoint** ([`Client`](super::Client), [`Server`](super::Server)
    ///   and the transports above them): the connection is not timed out before
    ///   `max_timeout` of silence, but is after it. Its endpoint's 16-bit sequences
    ///   are unambiguous only while a side cannot send more than half the sequence
    ///   space without hearing from its peer (see *Timeouts and the sequence space*
    ///   below): beyond `max_timeout` an old ack could be taken for a new one and a
    ///   reliable message be released unreceived. So the longest silence such a
    ///   connection survives is `max_timeout`, which [`validate`](Self::validate)
    ///   keeps within the sequence space.
    pub allow_no_timeout: bool,
    /// The packet endpoint of each connection (its windows and reassembly table bound
    /// a connection's memory: [`EndpointConfig::memory_bound`]). Its datagrams must
    /// fit a netcode payload packet ([`MAX_PAYLOAD_BYTES`](crate::netcode::MAX_PAYLOAD_BYTES)).
    pub endpoint: EndpointConfig,
    /// Congestion avoidance of each connection.
    pub congestion: CongestionConfig,
}

impl ConnectionConfig {
    /// The defaults with `protocol_id`.
    pub fn new(protocol_id: u64) -> Self {
        Self {
            protocol_id,
            keepalive_interval: Duration::from_millis(100),
            max_timeout: Duration::from_secs(60),
            handshake_resend_interval: Duration::from_millis(100),
            disconnect_copies: 10,
            allow_no_timeout: true,
            endpoint: EndpointConfig {
                rtt_smoothing_factor: 0.1,
                report_ack_delay: true,
                ..EndpointConfig::default()
            },
            congestion: CongestionConfig::default(),
        }
    }

    /// The most heap memory, in bytes, one established connection (its packet
    /// endpoint) holds, whatever the peer sends: [`EndpointConfig::memory_bound`].
    /// The datagrams and events a connection queues are the caller's to drain and
    /// are not included; neither is the message layer above (see
    /// [`LayerConfig::memory_bound`](crate::channel::LayerConfig::memory_bound)).
    pub fn memory_per_connection(&self) -> usize {
        self.endpoint.memory_bound()
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConnectionConfigError> {
        for (field, value) in [
            ("keepalive_interval", self.keepalive_interval.as_secs_f64()),
            ("max_timeout", self.max_timeout.as_secs_f64()),
            (
                "handshake_resend_interval",
                self.handshake_resend_interval.as_secs_f64(),
            ),
        ] {
            positive(field, value)?;
        }
        if !(1..=16).contains(&self.disconnect_copies) {
            return Err(ConnectionConfigError::OutOfRange {
                field: "disconnect_copies",
            });
        }
        self.congestion.validate()?;
        self.endpoint.validate()?;
        let datagram = self.endpoint.max_datagram_size();
        if datagram > crate::netcode::MAX_PAYLOAD_BYTES {
            return Err(ConnectionConfigError::DatagramTooLarge { size: datagram });
        }
        let packets = self.packets_per_timeout();
        let limit = SEQUENCE_HALF - self.sequence_window();
        if packets >= limit as u64 {
            return Err(ConnectionConfigError::TimeoutOutlastsSequences { packets, limit });
        }
        Ok(())
    }

    /// The most endpoint sequence numbers one side uses in `max_timeout` seconds:
    /// the packets it sends when it keeps to its congestion mode's rate
    /// ([`ready_to_send`](super::Server::ready_to_send)) and sends keep-alives, and
    /// as many skipped sequences (the skipped-sequence trap skips at most one per
    /// packet): `2 * max_timeout * (max(good_rate, bad_rate) + 1 / keepalive_interval)`,
    /// rounded up; [`u64::MAX`] when that is not finite (a zero interval, an infinite
    /// or NaN rate).
    pub fn packets_per_timeout(&self) -> u64 {
        let rate = self.congestion.good_rate.max(self.congestion.bad_rate);
        let per_second = rate + 1.0 / self.keepalive_interval.as_secs_f64();
        let packets = 2.0 * self.max_timeout.as_secs_f64() * per_second;
        if packets.is_finite() {
            // Not negative: the rates are validated positive; `as` saturates.
            packets.ceil() as u64
        } else {
            u64::MAX
        }
    }

    /// The connection timeout a token's `timeout_seconds` sets, if this side accepts
    /// it: positive and at most `max_timeout`, or negative ("no timeout", when
    /// `allow_no_timeout`): [`NO_TIMEOUT`]. 0 is refused (see the type's
    /// documentation).
    pub(crate) fn token_timeout(&self, timeout_seconds: i32) -> Option<Duration> {
        if timeout_seconds < 0 {
            return self.allow_no_timeout.then_some(NO_TIMEOUT);
        }
        let seconds = u64::try_from(timeout_seconds).ok().filter(|&s| s > 0)?;
        let timeout = Duration::from_secs(seconds);
        (timeout <= self.max_timeout).then_some(timeout)
    }

    /// The larger packet window of the endpoint (sent or received).
    fn sequence_window(&self) -> usize {
        self.endpoint
            .sent_packets_buffer_size
            .max(self.endpoint.received_packets_buffer_size)
            .min(SEQUENCE_HALF)
    }
}

fn positive(field: &'static str, value: f64) -> Result<(), ConnectionConfigError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(ConnectionConfigError::NotPositive { field, value })
    }
}

// Checked here, beside the rest of the connection's settings and with the same error:
// the congestion settings are the `congestion` field of a `ConnectionConfig`.
impl CongestionConfig {
    /// Checks every field: all positive (the rates finite), `min_penalty <=
    /// initial_penalty <= max_penalty`.
    pub fn validate(&self) -> Result<(), ConnectionConfigError> {
        for (field, value) in [
            ("good_rate", self.good_rate),
            ("bad_rate", self.bad_rate),
            ("rtt_threshold", self.rtt_threshold.as_secs_f64()),
            ("initial_penalty", self.initial_penalty.as_secs_f64()),
            ("min_penalty", self.min_penalty.as_secs_f64()),
            ("max_penalty", self.max_penalty.as_secs_f64()),
            ("relapse_window", self.relapse_window.as_secs_f64()),
            ("reduce_every", self.reduce_every.as_secs_f64()),
        ] {
            positive(field, value)?;
        }
        if !(self.min_penalty <= self.initial_penalty && self.initial_penalty <= self.max_penalty) {
            return Err(ConnectionConfigError::OutOfRange {
                field: "initial_penalty",
            });
        }
        Ok(())
    }
}

/// A server's settings.
///
/// ```
/// use netproto::connection::{ConnectionConfig, ServerConfig};
/// use netproto::netcode::Key;
///
/// // The private key is shared with the backend that makes connect tokens (fixed
/// // here so that the example is deterministic; load it from a secret store).
/// let private_key = Key::from_bytes([7; 32]);
/// let address = "127.0.0.1:40000".parse().unwrap();
/// let config = ServerConfig::new(ConnectionConfig::new(0x1234), private_key, vec![address]);
/// assert_eq!(config.max_clients, 64);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// The settings of every connection.
    pub connection: ConnectionConfig,
    /// The key shared with the backend: connect tokens' private parts are sealed with
    /// it. Anyone who has it can let anyone connect.
    pub private_key: Key,
    /// This server's addresses as connect tokens list them in their private part
    /// (the backend's "internal" addresses, the public ones when it gives none). A
    /// request whose token does not name one of them is ignored: a token is good
    /// for the servers it names only. 1 to 32.
    pub addresses: Vec<SocketAddr>,
    /// Client slots (1 to 65536). Default 64. Allocated at construction; each
    /// connection holds at most
    /// [`ConnectionConfig::memory_per_connection`] bytes besides
    /// ([`Server::memory_bound`](super::Server::memory_bound) for the whole server).
    pub max_clients: usize,
    /// The key that seals challenge tokens. Random per server run: the transport
    /// draws it from the operating system ([`Key::random`]); the sans-IO core takes
    /// it from here and stays deterministic. Never shared.
    pub challenge_key: Key,
    /// Handshakes in progress the server keeps keys for (at most), and connect tokens
    /// in its history (eight times as many): see [`Server`](super::Server). Default
    /// `4 * max_clients` when 0.
    ///
    /// A handshake lives at most its token's timeout from its first request, one
    /// client id holds at most one, and when the table is full a new authenticated
    /// request replaces the handshake that started first, once that one has had a
    /// second to complete: a holder of valid tokens who keeps re-requesting cannot
    /// keep new players out. The token history is never evicted (a token it forgot
    /// could open a second session under the same keys): when it is full of
    /// unexpired tokens, new tokens are refused until some expire
    /// ([`ServerStats::requests_dropped_history_full`](super::ServerStats::requests_dropped_history_full)).
    pub pending_handshakes: usize,
    /// The longest a connect token from the backend lives (its `expire_seconds`,
    /// [`TokenParams::expire_seconds`](crate::netcode::TokenParams::expire_seconds)):
    /// the restart rule. A server remembers no token of its previous runs, so it
    /// refuses every token that expires less than `max_token_lifetime` after the
    /// second it started in: such a token was made before the restart and may have
    /// opened a session then, and a second session under the same keys would reuse
    /// their nonces. Default 300 s, the lifetime of
    /// [`TokenParams`](crate::netcode::TokenParams)'s tokens.
    ///
    /// Set it to the backend's token lifetime: tokens made from the second a server
    /// starts in are accepted. Shorter tokens are refused for the difference after a
    /// start (a fresh server refuses 30-second tokens for 270 s with the default);
    /// tokens that live longer are not covered by the rule, and neither is a token
    /// made in the very second of a restart and used by the run before it (Unix
    /// timestamps cannot tell those apart: a restart takes longer than that).
    pub max_token_lifetime: Duration,
}

impl ServerConfig {
    /// The defaults with `connection`, the backend's `private_key`, this server's
    /// `addresses` and a challenge key from the operating system's generator.
    pub fn new(connection: ConnectionConfig, private_key: Key, addresses: Vec<SocketAddr>) -> Self {
        Self {
            connection,
            private_key,
            addresses,
            max_clients: 64,
            challenge_key: Key::random(),
            pending_handshakes: 0,
            max_token_lifetime: Duration::from_secs(300),
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConnectionConfigError> {
        self.connection.validate()?;
        if !(1..=65536).contains(&self.max_clients) {
            return Err(ConnectionConfigError::OutOfRange {
                field: "max_clients",
            });
        }
        if !(1..=crate::netcode::MAX_SERVERS_PER_CONNECT).contains(&self.addresses.len()) {
            return Err(ConnectionConfigError::OutOfRange { field: "addresses" });
        }
        if self.max_token_lifetime.is_zero() {
            return Err(ConnectionConfigError::NotPositive {
                field: "max_token_lifetime",
                value: 0.0,
            });
        }
        if self.pending_handshakes > 1 << 20 {
            return Err(ConnectionConfigError::OutOfRange {
                field: "pending_handshakes",
            });
        }
        Ok(())
    }

    /// Handshakes in progress kept at once.
    pub(crate) fn pending_limit(&self) -> usize {
        if self.pending_handshakes == 0 {
            4 * self.max_clients
        } else {
            self.pending_handshakes
        }
    }
}

/// An invalid connection configuration.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionConfigError {
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
    Endpoint(#[from] crate::packet::EndpointConfigError),
    /// The packet endpoint's largest datagram does not fit a netcode payload packet:
    /// lower `endpoint.fragment_above` or `endpoint.fragment_size`.
    #[error(
        "the packet endpoint's datagrams reach {size} bytes, more than a netcode payload packet carries (1200): lower endpoint.fragment_above or endpoint.fragment_size"
    )]
    DatagramTooLarge {
        /// The endpoint's largest datagram, bytes.
        size: usize,
    },
    /// The connect token was made for another protocol id: another build of the game
    /// (its messages or channels differ), or a token for another game.
    #[error("the connect token is for protocol id {token:#018x}, this build speaks {ours:#018x}")]
    ProtocolMismatch {
        /// The token's protocol id.
        token: u64,
        /// Ours.
        ours: u64,
    },
    /// The connect token's timeout is 0, longer than `max_timeout`, or negative ("no
    /// timeout") when `allow_no_timeout` is off.
    #[error(
        "the connect token's timeout is {seconds} s; this side accepts 1 to max_timeout ({max:?}), or a negative one (no timeout) when allow_no_timeout is set"
    )]
    TokenTimeout {
        /// The token's `timeout_seconds`.
        seconds: i32,
        /// `max_timeout`.
        max: Duration,
    },
    /// A side may send so many packets within `max_timeout` seconds that endpoint
    /// sequence numbers could wrap around and an old ack be taken for a new one (see
    /// [`ConnectionConfig`]): shorten `max_timeout`, or lower the rates.
    #[error(
        "max_timeout x packet rate allows {packets} packets, at least the {limit} that keep sequence numbers unambiguous (32768 minus the packet window)"
    )]
    TimeoutOutlastsSequences {
        /// [`ConnectionConfig::packets_per_timeout`].
        packets: u64,
        /// Half the sequence space minus the endpoint's larger packet window.
        limit: usize,
    },
}

/// Half the 16-bit sequence space.
const SEQUENCE_HALF: usize = 32768;

/// The timeout of a token with a negative `timeout_seconds`: none. A handshake under
/// it ends only with its token's expiry (or, on a server, when its table makes room),
/// a connection as [`ConnectionConfig::allow_no_timeout`] says (the
/// [`Link`](super::session::Link) bounds it by `max_timeout` when it carries the
/// packet endpoint).
pub(crate) const NO_TIMEOUT: Duration = Duration::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_far_from_a_sequence_wrap() {
        let config = ConnectionConfig::new(1);
        assert_eq!(config.validate(), Ok(()));
        // 60 s at 30 packets and 10 keep-alives a second, and at most as many skips.
        assert_eq!(config.packets_per_timeout(), 4800);
        let bulk = ConnectionConfig {
            congestion: CongestionConfig::bulk(),
            ..config
        };
        assert_eq!(bulk.validate(), Ok(()));
        assert_eq!(bulk.packets_per_timeout(), 15600);
    }

    #[test]
    fn a_timeout_that_could_outlast_a_sequence_wrap_is_refused() {
        let mut base = ConnectionConfig::new(1);
        base.congestion = CongestionConfig::article();
        // 32768 - 256 = 32512 sequences allowed within the timeout, at 40 packets a
        // second and at most as many skipped sequences.
        let at = |max_timeout: f64| {
            ConnectionConfig {
                max_timeout: Duration::from_secs_f64(max_timeout),
                ..base.clone()
            }
            .validate()
        };
        assert_eq!(at(406.0), Ok(()));
        assert_eq!(
            at(406.5),
            Err(ConnectionConfigError::TimeoutOutlastsSequences {
                packets: 32520,
                limit: 32512,
            })
        );
        // Keep-alives count: a 1 ms interval is 1000 packets a second.
        let fast = ConnectionConfig {
            keepalive_interval: Duration::from_millis(1),
            max_timeout: Duration::from_secs(40),
            ..base.clone()
        };
        assert!(matches!(
            fast.validate(),
            Err(ConnectionConfigError::TimeoutOutlastsSequences { .. })
        ));
        // So does the packet window.
        let mut wide = base.clone();
        wide.max_timeout = Duration::from_secs(250); // 20000 sequences
        assert_eq!(wide.validate(), Ok(()));
        wide.endpoint.received_packets_buffer_size = 16384;
        assert!(matches!(
            wide.validate(),
            Err(ConnectionConfigError::TimeoutOutlastsSequences { limit: 16384, .. })
        ));
        let err = at(1e9).expect_err("refused");
        assert!(err.to_string().contains("sequence"), "{err}");
    }

    #[test]
    fn endpoint_datagrams_must_fit_a_payload_packet() {
        let mut config = ConnectionConfig::new(1);
        config.endpoint.fragment_above = 1200;
        config.endpoint.fragment_size = 1200;
        let err = config.validate().expect_err("too large");
        assert!(matches!(err, ConnectionConfigError::DatagramTooLarge { size } if size > 1200));
        assert!(err.to_string().contains("fragment_above"), "{err}");

        // The boundary: a datagram of exactly the netcode payload size fits.
        let mut config = ConnectionConfig::new(1);
        config.endpoint.fragment_above = 512;
        config.endpoint.fragment_size = 512;
        let overhead = config.endpoint.max_datagram_size() - 512;
        config.endpoint.fragment_size = 1200 - overhead;
        assert_eq!(config.endpoint.max_datagram_size(), 1200);
        assert_eq!(config.validate(), Ok(()));
        config.endpoint.fragment_size += 1;
        assert!(matches!(
            config.validate(),
            Err(ConnectionConfigError::DatagramTooLarge { size: 1201 })
        ));
    }

    #[test]
    fn zero_intervals_are_refused_naming_the_field() {
        for field in [
            "keepalive_interval",
            "max_timeout",
            "handshake_resend_interval",
        ] {
            let mut config = ConnectionConfig::new(1);
            match field {
                "keepalive_interval" => config.keepalive_interval = Duration::ZERO,
                "max_timeout" => config.max_timeout = Duration::ZERO,
                _ => config.handshake_resend_interval = Duration::ZERO,
            }
            assert_eq!(
                config.validate(),
                Err(ConnectionConfigError::NotPositive { field, value: 0.0 })
            );
        }
        assert_eq!(positive("x", 1e-9), Ok(()));
        for value in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert!(positive("x", value).is_err(), "{value}");
        }
    }

    #[test]
    fn pending_handshakes_are_bounded() {
        let server = |pending: usize| {
            let mut config = ServerConfig::new(
                ConnectionConfig::new(1),
                Key::from_bytes([1; 32]),
                vec!["127.0.0.1:40000".parse().expect("address")],
            );
            config.pending_handshakes = pending;
            config.validate()
        };
        assert_eq!(server(0), Ok(()), "0: four per slot");
        assert_eq!(server(1 << 20), Ok(()));
        assert_eq!(
            server((1 << 20) + 1),
            Err(ConnectionConfigError::OutOfRange {
                field: "pending_handshakes"
            })
        );
    }

    #[test]
    fn a_connection_s_memory_is_its_endpoint_s_bound() {
        let mut config = ConnectionConfig::new(1);
        let default = config.memory_per_connection();
        assert_eq!(default, config.endpoint.memory_bound());
        assert!(default > 1 << 20, "the defaults' windows: {default}");
        config.endpoint.received_packets_buffer_size /= 2;
        assert!(config.memory_per_connection() < default);
    }

    #[test]
    fn token_timeouts_are_accepted_up_to_the_maximum() {
        let config = ConnectionConfig::new(1);
        assert_eq!(config.token_timeout(5), Some(Duration::from_secs(5)));
        assert_eq!(config.token_timeout(60), Some(Duration::from_secs(60)));
        assert_eq!(config.token_timeout(61), None);
        assert_eq!(config.token_timeout(0), None, "0 has no meaning: refused");
        assert_eq!(config.token_timeout(-1), Some(NO_TIMEOUT), "-1: no timeout");
        assert_eq!(config.token_timeout(i32::MIN), Some(NO_TIMEOUT));
        let strict = ConnectionConfig {
            allow_no_timeout: false,
            ..config
        };
        assert_eq!(strict.token_timeout(-1), None);
        assert_eq!(strict.token_timeout(5), Some(Duration::from_secs(5)));
    }
}
