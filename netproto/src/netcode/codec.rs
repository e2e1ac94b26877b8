//! The netcode packet codec: the seven packet types, written into a caller's buffer
//! and read (decrypted in place) from a received datagram, with no allocation.

use super::crypto::{open, seal, sequence_nonce};
use super::packet_type::PacketType;
use super::wire::{Reader, Writer};
use super::{
    CHALLENGE_TOKEN_BYTES, CONNECT_TOKEN_PRIVATE_BYTES, CONNECTION_REQUEST_BYTES, Key, MAC_BYTES,
    MAX_PAYLOAD_BYTES, MIN_ENCRYPTED_PACKET_BYTES, NONCE_BYTES, ReadError, ReplayProtection,
    VERSION_INFO, WriteError,
};

/// Body bytes of a challenge or response packet: token sequence and sealed token.
const CHALLENGE_BODY_BYTES: usize = 8 + CHALLENGE_TOKEN_BYTES;
/// Body bytes of a keep-alive packet: client index and max clients.
const KEEP_ALIVE_BODY_BYTES: usize = 8;

/// The set of packet types a reader accepts in its current state (a client waiting for
/// a challenge accepts denied and challenge, a connected peer keep-alive, payload and
/// disconnect, ...).
///
/// ```
/// use netproto::internals::netcode::{AllowedPackets, PacketType};
///
/// let allowed = AllowedPackets::NONE.with(PacketType::Denied).with(PacketType::Challenge);
/// assert!(allowed.contains(PacketType::Challenge));
/// assert!(!allowed.contains(PacketType::Payload));
/// assert!(AllowedPackets::ALL.contains(PacketType::Request));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AllowedPackets(u8);

impl AllowedPackets {
    /// Every type.
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub const ALL: Self = Self(0x7f);
    /// No type.
    pub const NONE: Self = Self(0);

    /// This set and `packet_type`.
    #[must_use]
    pub const fn with(self, packet_type: PacketType) -> Self {
        Self(self.0 | (1 << packet_type as u8))
    }

    /// This set without `packet_type`.
    #[must_use]
    #[cfg(any(test, feature = "internals"))] // used by tests only
    pub const fn without(self, packet_type: PacketType) -> Self {
        Self(self.0 & !(1 << packet_type as u8))
    }

    /// Whether `packet_type` is in the set.
    pub const fn contains(self, packet_type: PacketType) -> bool {
        self.0 & (1 << packet_type as u8) != 0
    }
}

/// One netcode packet, borrowing its variable parts (from the datagram it was read
/// from, or from the caller when writing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// Connection request: the public fields of the connect token and its sealed
    /// private part (opened by the server with
    /// [`ConnectTokenPrivate::open`](super::ConnectTokenPrivate::open)).
    Request {
        /// The protocol id in the token.
        protocol_id: u64,
        /// The token's expire timestamp.
        expire_timestamp: u64,
        /// The token's nonce.
        nonce: [u8; NONCE_BYTES],
        /// The sealed private part.
        private_data: &'a [u8; CONNECT_TOKEN_PRIVATE_BYTES],
    },
    /// Connection denied (empty body).
    Denied,
    /// Connection challenge.
    Challenge {
        /// The challenge token sequence (its nonce).
        token_sequence: u64,
        /// The sealed challenge token.
        token_data: &'a [u8; CHALLENGE_TOKEN_BYTES],
    },
    /// Connection response: the challenge echoed back.
    Response {
        /// The challenge token sequence (its nonce).
        token_sequence: u64,
        /// The sealed challenge token.
        token_data: &'a [u8; CHALLENGE_TOKEN_BYTES],
    },
    /// Keep-alive.
    KeepAlive {
        /// The client's slot on the server.
        client_index: u32,
        /// The server's number of slots.
        max_clients: u32,
    },
    /// Payload: 1 to [`MAX_PAYLOAD_BYTES`] bytes of game data.
    Payload(&'a [u8]),
    /// Disconnect (empty body).
    Disconnect,
}

impl Packet<'_> {
    /// The packet's type.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Packet::Request { .. } => PacketType::Request,
            Packet::Denied => PacketType::Denied,
            Packet::Challenge { .. } => PacketType::Challenge,
            Packet::Response { .. } => PacketType::Response,
            Packet::KeepAlive { .. } => PacketType::KeepAlive,
            Packet::Payload(_) => PacketType::Payload,
            Packet::Disconnect => PacketType::Disconnect,
        }
    }
}

/// The fewest bytes (at least 1) that hold `sequence`.
fn sequence_bytes(sequence: u64) -> usize {
    let bits = 64 - sequence.leading_zeros() as usize;
    bits.div_ceil(8).max(1)
}

/// Associated data of a sealed packet body: version, protocol id (LE), prefix byte.
fn packet_associated_data(protocol_id: u64, prefix: u8) -> [u8; 22] {
    let mut ad = [0u8; 22];
    ad[..13].copy_from_slice(&VERSION_INFO);
    ad[13..21].copy_from_slice(&protocol_id.to_le_bytes());
    ad[21] = prefix;
    ad
}

/// Writes `packet` into `out` and returns its length.
///
/// A request (type 0) is written in the clear, from its own fields (`sequence`,
/// `write_key` and `protocol_id` are unused): 1078 bytes. Any other type: the prefix
/// byte (type | sequence bytes << 4), `sequence` in the fewest bytes (at least 1)
/// little-endian, then the body sealed with ChaCha20-Poly1305 (IETF) under
/// `write_key`, nonce = 4 zero bytes ++ `sequence` (u64 LE), associated data =
/// [`VERSION_INFO`] ++ `protocol_id` (LE) ++ prefix byte, and the 16-byte tag. At most
/// [`MAX_PACKET_BYTES`](super::MAX_PACKET_BYTES). No allocation.
///
/// ```
/// use netproto::netcode::Key;
/// use netproto::internals::netcode::{read_packet, write_packet, AllowedPackets, Packet};
///
/// let key = Key::from_bytes([9; 32]);
/// let mut buf = [0u8; netproto::internals::netcode::MAX_PACKET_BYTES];
/// let n = write_packet(&Packet::Payload(b"hello"), 1000, &key, 77, &mut buf).unwrap();
/// assert_eq!(n, 1 + 2 + 5 + 16);
/// let (sequence, packet) =
///     read_packet(&mut buf[..n], 77, 0, Some(&key), AllowedPackets::ALL, None).unwrap();
/// assert_eq!((sequence, packet), (1000, Packet::Payload(b"hello")));
/// ```
pub fn write_packet(
    packet: &Packet<'_>,
    sequence: u64,
    write_key: &Key,
    protocol_id: u64,
    out: &mut [u8],
) -> Result<usize, WriteError> {
    if let Packet::Request {
        protocol_id,
        expire_timestamp,
        nonce,
        private_data,
    } = packet
    {
        let too_small = |_| WriteError::BufferTooSmall {
            needed: CONNECTION_REQUEST_BYTES,
        };
        let mut w = Writer::new(out);
        w.put(&[PacketType::Request.id()]).map_err(too_small)?;
        w.put(&VERSION_INFO).map_err(too_small)?;
        w.u64(*protocol_id).map_err(too_small)?;
        w.u64(*expire_timestamp).map_err(too_small)?;
        w.put(nonce).map_err(too_small)?;
        w.put(*private_data).map_err(too_small)?;
        return Ok(w.position());
    }

    let body_len = match packet {
        Packet::Request { .. } | Packet::Denied | Packet::Disconnect => 0,
        Packet::Challenge { .. } | Packet::Response { .. } => CHALLENGE_BODY_BYTES,
        Packet::KeepAlive { .. } => KEEP_ALIVE_BODY_BYTES,
        Packet::Payload(data) => {
            if data.is_empty() || data.len() > MAX_PAYLOAD_BYTES {
                return Err(WriteError::BadPayloadSize(data.len()));
            }
            data.len()
        }
    };
    let seq_len = sequence_bytes(sequence);
    let body_start = 1 + seq_len;
    let mac_start = body_start + body_len;
    let needed = mac_start + MAC_BYTES;
    let out = out
        .get_mut(..needed)
        .ok_or(WriteError::BufferTooSmall { needed })?;

    // seq_len is 1..=8, so it fits the high nibble.
    let prefix = packet.packet_type().id() | ((seq_len as u8) << 4);
    out[0] = prefix;
    out[1..body_start].copy_from_slice(&sequence.to_le_bytes()[..seq_len]);
    let (body, mac) = out[body_start..].split_at_mut(body_len);
    match packet {
        Packet::Challenge {
            token_sequence,
            token_data,
        }
        | Packet::Response {
            token_sequence,
            token_data,
        } => {
            body[..8].copy_from_slice(&token_sequence.to_le_bytes());
            body[8..].copy_from_slice(*token_data);
        }
        Packet::KeepAlive {
            client_index,
            max_clients,
        } => {
            body[..4].copy_from_slice(&client_index.to_le_bytes());
            body[4..].copy_from_slice(&max_clients.to_le_bytes());
        }
        Packet::Payload(data) => body.copy_from_slice(data),
        Packet::Request { .. } | Packet::Denied | Packet::Disconnect => {}
    }
    let ad = packet_associated_data(protocol_id, prefix);
    let tag =
        seal(body, &ad, &sequence_nonce(sequence), write_key).map_err(|_| WriteError::Encrypt)?;
    mac.copy_from_slice(&tag);
    Ok(needed)
}

/// Reads one datagram, in the reference's order, decrypting the body in place.
///
/// * A request (prefix byte 0): allowed, exactly [`CONNECTION_REQUEST_BYTES`], the
///   version, `protocol_id`, an expire timestamp above `current_timestamp`. Its private
///   part is *not* opened here: the caller does it last, with
///   [`ConnectTokenPrivate::open`](super::ConnectTokenPrivate::open) (the reference
///   refuses a request whose private part does not open). The sequence returned is 0.
/// * Any other packet: `read_key` present, at least [`MIN_ENCRYPTED_PACKET_BYTES`], a
///   known type, allowed, 1 to 8 sequence bytes, room for them and the tag; for
///   keep-alive, payload and disconnect the replay window (if given) refuses a replayed
///   sequence before decryption; the tag must verify; the window then records the
///   sequence (even if the body length is then refused, as the reference does); the
///   body must have its type's length.
///
/// On success returns the packet sequence and the packet, borrowing `datagram`. On
/// failure the window is unchanged unless the tag verified.
pub fn read_packet<'a>(
    datagram: &'a mut [u8],
    protocol_id: u64,
    current_timestamp: u64,
    read_key: Option<&Key>,
    allowed: AllowedPackets,
    replay: Option<&mut ReplayProtection>,
) -> Result<(u64, Packet<'a>), ReadError> {
    let Some(&prefix) = datagram.first() else {
        return Err(ReadError::TooSmall);
    };
    if prefix == PacketType::Request.id() {
        return read_request(datagram, protocol_id, current_timestamp, allowed).map(|p| (0, p));
    }

    let key = read_key.ok_or(ReadError::NoKey)?;
    if datagram.len() < MIN_ENCRYPTED_PACKET_BYTES {
        return Err(ReadError::TooSmall);
    }
    let type_id = prefix & 0x0f;
    let packet_type = PacketType::from_id(type_id).ok_or(ReadError::UnknownType(type_id))?;
    if !allowed.contains(packet_type) {
        return Err(ReadError::NotAllowed(packet_type));
    }
    let seq_len = prefix >> 4;
    if !(1..=8).contains(&seq_len) {
        return Err(ReadError::BadSequenceBytes(seq_len));
    }
    if packet_type == PacketType::Request {
        // A sealed "request" (prefix 0x10..0x80): the reference decrypts it and then
        // drops it as an unknown type; dropping it first is the same verdict.
        return Err(ReadError::UnknownType(type_id));
    }
    let seq_len = usize::from(seq_len);
    let body_start = 1 + seq_len;
    if datagram.len() < body_start + MAC_BYTES {
        return Err(ReadError::TooSmall);
    }
    let (head, rest) = datagram.split_at_mut(body_start);
    let mut sequence_le = [0u8; 8];
    sequence_le[..seq_len].copy_from_slice(&head[1..]);
    let sequence = u64::from_le_bytes(sequence_le);

    let protected = packet_type.is_replay_protected();
    if let Some(window) = replay.as_deref()
        && protected
        && window.already_received(sequence)
    {
        return Err(ReadError::Replayed);
    }

    let body_len = rest.len() - MAC_BYTES;
    let (body, mac) = rest.split_at_mut(body_len);
    let tag: [u8; MAC_BYTES] = (&*mac).try_into().map_err(|_| ReadError::TooSmall)?;
    let ad = packet_associated_data(protocol_id, prefix);
    open(body, &ad, &sequence_nonce(sequence), key, &tag).map_err(|_| ReadError::Decrypt)?;

    if let Some(window) = replay
        && protected
    {
        window.advance(sequence);
    }

    let body: &'a [u8] = body;
    let packet = match packet_type {
        PacketType::Denied | PacketType::Disconnect => {
            if !body.is_empty() {
                return Err(ReadError::BadBody(body.len()));
            }
            if packet_type == PacketType::Denied {
                Packet::Denied
            } else {
                Packet::Disconnect
            }
        }
        PacketType::Challenge | PacketType::Response => {
            let (sequence_bytes, token) = body
                .split_first_chunk::<8>()
                .ok_or(ReadError::BadBody(body.len()))?;
            let token_data: &'a [u8; CHALLENGE_TOKEN_BYTES] = token
                .try_into()
                .map_err(|_| ReadError::BadBody(body.len()))?;
            let token_sequence = u64::from_le_bytes(*sequence_bytes);
            if packet_type == PacketType::Challenge {
                Packet::Challenge {
                    token_sequence,
                    token_data,
                }
            } else {
                Packet::Response {
                    token_sequence,
                    token_data,
                }
            }
        }
        PacketType::KeepAlive => {
            let fields: &[u8; KEEP_ALIVE_BODY_BYTES] = body
                .try_into()
                .map_err(|_| ReadError::BadBody(body.len()))?;
            let (index, max) = fields.split_at(4);
            let mut r = Reader::new(index);
            let client_index = r.u32().ok_or(ReadError::BadBody(body.len()))?;
            let mut r = Reader::new(max);
            let max_clients = r.u32().ok_or(ReadError::BadBody(body.len()))?;
            Packet::KeepAlive {
                client_index,
                max_clients,
            }
        }
        PacketType::Payload => {
            if body.is_empty() || body.len() > MAX_PAYLOAD_BYTES {
                return Err(ReadError::BadBody(body.len()));
            }
            Packet::Payload(body)
        }
        PacketType::Request => return Err(ReadError::UnknownType(type_id)),
    };
    Ok((sequence, packet))
}

/// The checks of a connection request, cheapest first (the private part is the
/// caller's).
fn read_request<'a>(
    datagram: &'a [u8],
    protocol_id: u64,
    current_timestamp: u64,
    allowed: AllowedPackets,
) -> Result<Packet<'a>, ReadError> {
    if !allowed.contains(PacketType::Request) {
        return Err(ReadError::NotAllowed(PacketType::Request));
    }
    if datagram.len() != CONNECTION_REQUEST_BYTES {
        return Err(ReadError::WrongSize(datagram.len()));
    }
    let wrong_size = ReadError::WrongSize(datagram.len());
    let mut r = Reader::new(datagram);
    r.u8().ok_or(wrong_size)?;
    if r.array::<13>().ok_or(wrong_size)? != VERSION_INFO {
        return Err(ReadError::BadVersion);
    }
    if r.u64().ok_or(wrong_size)? != protocol_id {
        return Err(ReadError::ProtocolMismatch);
    }
    let expire_timestamp = r.u64().ok_or(wrong_size)?;
    if expire_timestamp <= current_timestamp {
        return Err(ReadError::Expired);
    }
    let nonce = r.array().ok_or(wrong_size)?;
    let private_data: &'a [u8; CONNECT_TOKEN_PRIVATE_BYTES] =
        r.rest().try_into().map_err(|_| wrong_size)?;
    Ok(Packet::Request {
        protocol_id,
        expire_timestamp,
        nonce,
        private_data,
    })
}
