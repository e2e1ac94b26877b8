//! Connection packets and their byte layout.
//!
//! Every connection datagram starts with a kind byte. All integers are little-endian.
//! Lengths are exact: a datagram whose length does not match its kind is dropped.
//!
//! | kind | packet | layout after the kind byte | size |
//! |---|---|---|---|
//! | 1 | request | protocol id u64, nonce u64, zero padding | [`REQUEST_SIZE`] = 64 |
//! | 2 | challenge | protocol id u64, nonce u64, bucket u64, token u64 | 33 |
//! | 3 | response | protocol id u64, nonce u64, bucket u64, token u64 | 33 |
//! | 4 | accepted | nonce u64, token u64, client index u16 | 19 |
//! | 5 | denied | protocol id u64 (the server's), nonce u64, reason u8 | 18 |
//! | 6 | keep-alive | token u64, packet-endpoint datagram (empty payload) | 9 + 3.. |
//! | 7 | payload | token u64, packet-endpoint datagram | 9 + 3.. |
//! | 8 | disconnect | token u64 | 9 |
//!
//! * The nonce is the client's random per-connection number; every handshake reply
//!   echoes it, so a client ignores replies to someone else's request.
//! * The bucket is the server's coarse time (`floor(now / challenge_window)`), the
//!   token the keyed hash of [`challenge::token`](super::challenge::token). After the
//!   handshake the token is the session token: keep-alive, payload and disconnect
//!   packets carry it, and a datagram with the wrong one is dropped.
//! * The request is padded so that no reply to it (challenge 33, denied 18) is
//!   larger; the response (33) is larger than its replies (accepted 19, denied 18).
//! * Keep-alive and payload packets wrap one datagram of the packet endpoint (a
//!   regular packet or a fragment, see [`packet`](crate::packet)): keep-alives are
//!   empty packets so that acks and RTT keep flowing when the game sends nothing.
//! * Deny reasons: 1 = server full, 2 = protocol id mismatch; other codes decode as
//!   [`DenyReason::Other`].

use super::event::DenyReason;

/// The size of a connection request, padded so that no reply is larger.
pub const REQUEST_SIZE: usize = 64;
/// The size of a challenge and of a response.
pub const CHALLENGE_SIZE: usize = 33;
/// The size of an accepted packet.
pub const ACCEPTED_SIZE: usize = 19;
/// The size of a denied packet.
pub const DENIED_SIZE: usize = 18;
/// The size of a disconnect packet, and of the prefix of keep-alive and payload
/// packets.
pub const SESSION_PREFIX_SIZE: usize = 9;

const _: () = assert!(CHALLENGE_SIZE <= REQUEST_SIZE && DENIED_SIZE <= REQUEST_SIZE);
const _: () = assert!(ACCEPTED_SIZE <= CHALLENGE_SIZE && DENIED_SIZE <= CHALLENGE_SIZE);

/// The kind byte of each connection packet.
pub(crate) mod kind {
    pub(crate) const REQUEST: u8 = 1;
    pub(crate) const CHALLENGE: u8 = 2;
    pub(crate) const RESPONSE: u8 = 3;
    pub(crate) const ACCEPTED: u8 = 4;
    pub(crate) const DENIED: u8 = 5;
    pub(crate) const KEEP_ALIVE: u8 = 6;
    pub(crate) const PAYLOAD: u8 = 7;
    pub(crate) const DISCONNECT: u8 = 8;
}

/// A decoded connection packet, borrowing the datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet<'a> {
    /// Kind 1: a client asks to connect.
    Request {
        /// The client's protocol id.
        protocol_id: u64,
        /// The client's nonce.
        nonce: u64,
    },
    /// Kind 2: the server's stateless challenge.
    Challenge {
        /// The server's protocol id.
        protocol_id: u64,
        /// The client's nonce, echoed.
        nonce: u64,
        /// The server's time bucket.
        bucket: u64,
        /// The keyed hash the client must echo.
        token: u64,
    },
    /// Kind 3: the client echoes the challenge.
    Response {
        /// The client's protocol id.
        protocol_id: u64,
        /// The client's nonce.
        nonce: u64,
        /// The bucket of the challenge.
        bucket: u64,
        /// The token of the challenge.
        token: u64,
    },
    /// Kind 4: the server accepted the client.
    Accepted {
        /// The client's nonce, echoed.
        nonce: u64,
        /// The session token.
        token: u64,
        /// The client's index (slot) on the server.
        client: u16,
    },
    /// Kind 5: the server refused the client.
    Denied {
        /// The server's protocol id.
        protocol_id: u64,
        /// The client's nonce, echoed.
        nonce: u64,
        /// Why.
        reason: DenyReason,
    },
    /// Kind 6: an empty packet-endpoint packet that keeps the connection alive.
    KeepAlive {
        /// The session token.
        token: u64,
        /// The packet-endpoint datagram.
        datagram: &'a [u8],
    },
    /// Kind 7: a packet-endpoint datagram carrying the layer above's payload.
    Payload {
        /// The session token.
        token: u64,
        /// The packet-endpoint datagram.
        datagram: &'a [u8],
    },
    /// Kind 8: the peer is leaving.
    Disconnect {
        /// The session token.
        token: u64,
    },
}

/// Why a datagram is not a connection packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// The datagram is empty.
    #[error("empty datagram")]
    Empty,
    /// The kind byte is unknown.
    #[error("unknown packet kind {0}")]
    UnknownKind(u8),
    /// The length does not match the kind.
    #[error("packet kind {kind} must be {expected} bytes, got {got}")]
    Length {
        /// The kind byte.
        kind: u8,
        /// The length it requires (the minimum for keep-alive and payload).
        expected: usize,
        /// The datagram's length.
        got: usize,
    },
}

#[inline]
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn exact(datagram: &[u8], kind: u8, expected: usize) -> Result<(), PacketError> {
    if datagram.len() == expected {
        Ok(())
    } else {
        Err(PacketError::Length {
            kind,
            expected,
            got: datagram.len(),
        })
    }
}

impl<'a> Packet<'a> {
    /// Decodes a datagram: checks the kind and the exact length, reads the fields.
    /// Never allocates; does not look at padding.
    pub fn decode(datagram: &'a [u8]) -> Result<Self, PacketError> {
        let &k = datagram.first().ok_or(PacketError::Empty)?;
        let d = datagram;
        match k {
            kind::REQUEST => {
                exact(d, k, REQUEST_SIZE)?;
                Ok(Self::Request {
                    protocol_id: u64_at(d, 1),
                    nonce: u64_at(d, 9),
                })
            }
            kind::CHALLENGE | kind::RESPONSE => {
                exact(d, k, CHALLENGE_SIZE)?;
                let (protocol_id, nonce, bucket, token) =
                    (u64_at(d, 1), u64_at(d, 9), u64_at(d, 17), u64_at(d, 25));
                Ok(if k == kind::CHALLENGE {
                    Self::Challenge {
                        protocol_id,
                        nonce,
                        bucket,
                        token,
                    }
                } else {
                    Self::Response {
                        protocol_id,
                        nonce,
                        bucket,
                        token,
                    }
                })
            }
            kind::ACCEPTED => {
                exact(d, k, ACCEPTED_SIZE)?;
                Ok(Self::Accepted {
                    nonce: u64_at(d, 1),
                    token: u64_at(d, 9),
                    client: u16::from_le_bytes([d[17], d[18]]),
                })
            }
            kind::DENIED => {
                exact(d, k, DENIED_SIZE)?;
                Ok(Self::Denied {
                    protocol_id: u64_at(d, 1),
                    nonce: u64_at(d, 9),
                    reason: DenyReason::from_code(d[17]),
                })
            }
            kind::DISCONNECT => {
                exact(d, k, SESSION_PREFIX_SIZE)?;
                Ok(Self::Disconnect {
                    token: u64_at(d, 1),
                })
            }
            kind::KEEP_ALIVE | kind::PAYLOAD => {
                if d.len() <= SESSION_PREFIX_SIZE {
                    return Err(PacketError::Length {
                        kind: k,
                        expected: SESSION_PREFIX_SIZE + 1,
                        got: d.len(),
                    });
                }
                let token = u64_at(d, 1);
                let datagram = &d[SESSION_PREFIX_SIZE..];
                Ok(if k == kind::KEEP_ALIVE {
                    Self::KeepAlive { token, datagram }
                } else {
                    Self::Payload { token, datagram }
                })
            }
            other => Err(PacketError::UnknownKind(other)),
        }
    }

    /// Appends the encoding of this packet to `out` (requests are padded to
    /// [`REQUEST_SIZE`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Request { protocol_id, nonce } => {
                let start = out.len();
                out.push(kind::REQUEST);
                out.extend_from_slice(&protocol_id.to_le_bytes());
                out.extend_from_slice(&nonce.to_le_bytes());
                out.resize(start + REQUEST_SIZE, 0);
            }
            Self::Challenge {
                protocol_id,
                nonce,
                bucket,
                token,
            }
            | Self::Response {
                protocol_id,
                nonce,
                bucket,
                token,
            } => {
                out.push(if matches!(self, Self::Challenge { .. }) {
                    kind::CHALLENGE
                } else {
                    kind::RESPONSE
                });
                for v in [protocol_id, nonce, bucket, token] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Self::Accepted {
                nonce,
                token,
                client,
            } => {
                out.push(kind::ACCEPTED);
                out.extend_from_slice(&nonce.to_le_bytes());
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(&client.to_le_bytes());
            }
            Self::Denied {
                protocol_id,
                nonce,
                reason,
            } => {
                out.push(kind::DENIED);
                out.extend_from_slice(&protocol_id.to_le_bytes());
                out.extend_from_slice(&nonce.to_le_bytes());
                out.push(reason.code());
            }
            Self::KeepAlive { token, datagram } | Self::Payload { token, datagram } => {
                out.push(if matches!(self, Self::KeepAlive { .. }) {
                    kind::KEEP_ALIVE
                } else {
                    kind::PAYLOAD
                });
                out.extend_from_slice(&token.to_le_bytes());
                out.extend_from_slice(datagram);
            }
            Self::Disconnect { token } => {
                out.push(kind::DISCONNECT);
                out.extend_from_slice(&token.to_le_bytes());
            }
        }
    }

    /// The encoding in a new `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(REQUEST_SIZE);
        self.encode(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_documented_sizes() {
        let inner = [0u8, 1, 0, 0xff, 0xff];
        let cases = [
            (
                Packet::Request {
                    protocol_id: 1,
                    nonce: 2,
                },
                REQUEST_SIZE,
            ),
            (
                Packet::Challenge {
                    protocol_id: 1,
                    nonce: 2,
                    bucket: 3,
                    token: 4,
                },
                33,
            ),
            (
                Packet::Response {
                    protocol_id: 1,
                    nonce: 2,
                    bucket: 3,
                    token: 4,
                },
                33,
            ),
            (
                Packet::Accepted {
                    nonce: 2,
                    token: 4,
                    client: 513,
                },
                19,
            ),
            (
                Packet::Denied {
                    protocol_id: 1,
                    nonce: 2,
                    reason: DenyReason::ServerFull,
                },
                18,
            ),
            (
                Packet::KeepAlive {
                    token: 4,
                    datagram: &inner,
                },
                14,
            ),
            (
                Packet::Payload {
                    token: 4,
                    datagram: &inner,
                },
                14,
            ),
            (Packet::Disconnect { token: 4 }, 9),
        ];
        for (packet, size) in cases {
            let bytes = packet.to_vec();
            assert_eq!(bytes.len(), size, "{packet:?}");
            assert_eq!(Packet::decode(&bytes), Ok(packet));
            // One byte short or long is refused (keep-alive/payload: only short of 10).
            assert!(Packet::decode(&bytes[..SESSION_PREFIX_SIZE]).is_err() || size == 9);
            if !matches!(packet, Packet::KeepAlive { .. } | Packet::Payload { .. }) {
                assert!(Packet::decode(&bytes[..size - 1]).is_err());
                let mut long = bytes.clone();
                long.push(0);
                assert!(Packet::decode(&long).is_err());
            }
        }
    }

    #[test]
    fn byte_layout_of_a_request_and_a_challenge() {
        let bytes = Packet::Request {
            protocol_id: 0x0102_0304_0506_0708,
            nonce: 0xaa,
        }
        .to_vec();
        assert_eq!(&bytes[..10], &[1, 8, 7, 6, 5, 4, 3, 2, 1, 0xaa]);
        assert!(bytes[17..].iter().all(|&b| b == 0));
        let bytes = Packet::Denied {
            protocol_id: 0,
            nonce: 0,
            reason: DenyReason::ProtocolMismatch,
        }
        .to_vec();
        assert_eq!(bytes[0], 5);
        assert_eq!(bytes[17], 2);
    }

    #[test]
    fn junk_is_refused() {
        assert_eq!(Packet::decode(&[]), Err(PacketError::Empty));
        assert_eq!(Packet::decode(&[0]), Err(PacketError::UnknownKind(0)));
        assert_eq!(
            Packet::decode(&[200, 1, 2]),
            Err(PacketError::UnknownKind(200))
        );
        assert!(Packet::decode(&[kind::PAYLOAD; 9]).is_err());
    }
}
