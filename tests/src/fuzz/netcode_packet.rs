//! Target: reading netcode packets ([`read_packet`]), every type, with and without a
//! key and a replay window.

use netproto::internals::netcode::{
    AllowedPackets, CHALLENGE_TOKEN_BYTES, CONNECT_TOKEN_PRIVATE_BYTES, CONNECTION_REQUEST_BYTES,
    MAX_PACKET_BYTES, MAX_PAYLOAD_BYTES, Packet, PacketType, ReadError, ReplayProtection,
    read_packet, write_packet,
};
use netproto::netcode::Key;
use netproto::sim::Rng;

use super::{Script, Seed, push_blob};

/// The key packets are sealed and read with (fixed: inputs replay byte for byte).
pub const PACKET_KEY: [u8; 32] = *b"netproto-fuzzing-packet-key-256!";
/// The protocol id packets are read for.
pub const PACKET_PROTOCOL_ID: u64 = 0x0102_0304_0506_0708;
/// The Unix time packets are read at (requests must expire after it).
pub const PACKET_UNIX_TIME: u64 = 1_800_000_000;

const TYPES: [PacketType; 7] = [
    PacketType::Request,
    PacketType::Denied,
    PacketType::Challenge,
    PacketType::Response,
    PacketType::KeepAlive,
    PacketType::Payload,
    PacketType::Disconnect,
];

/// The packet types of `mask` (bit `t` = type `t`).
fn allowed_of(mask: u8) -> AllowedPackets {
    TYPES
        .iter()
        .filter(|t| mask & (1 << **t as u8) != 0)
        .fold(AllowedPackets::NONE, |a, t| a.with(*t))
}

/// Input: a flags byte, then one of two forms.
///
/// Flags: bit 0 read with [`PACKET_KEY`] (else no key); bit 1 with a replay window;
/// bit 2 the allowed types are the next byte's low 7 bits (else every type); bit 3
/// the rest is a packet for the harness to seal (else a raw datagram).
///
/// * Raw: the rest of the input is the datagram.
/// * Sealed: a type byte (`% 7`), a sequence (`u64`, little-endian, missing bytes
///   are 0), the type's fields (a blob for a payload, a `u64` and 300 bytes for a
///   challenge or response, two `u32`s for a keep-alive, the fields of a request),
///   then a `u16` bit position: the harness writes the packet with [`write_packet`]
///   (the key, the protocol id), and when the position's low bit is 1 flips the bit
///   at position / 2 (modulo the length).
///
/// Checks: no panic; a datagram read without a key is a request; a packet that
/// reads is of an allowed type, writes back (same sequence, key) to the very bytes it
/// was read from, and reads again to itself with a fresh window; a second read of the
/// same datagram through the same window is refused as replayed for keep-alive,
/// payload and disconnect, and gives the same packet for the others; a failed read
/// leaves the window as it was (the second read fails the same way); a sealed packet
/// the harness wrote reads back (when its type is allowed and there is a key), and
/// with one flipped bit never reads. Returns 1 when the datagram read.
pub fn netcode_packet(data: &[u8]) -> usize {
    let mut script = Script::new(data);
    let flags = script.byte().unwrap_or(0);
    let key = Key::from_bytes(PACKET_KEY);
    let read_key = (flags & 1 != 0).then_some(&key);
    let allowed = if flags & 4 != 0 {
        allowed_of(script.byte().unwrap_or(0))
    } else {
        AllowedPackets::ALL
    };
    let mut window = (flags & 2 != 0).then(ReplayProtection::new);

    let mut sealed_as = None;
    let datagram: Vec<u8> = if flags & 8 != 0 {
        let mut buf = [0u8; MAX_PACKET_BYTES + CONNECTION_REQUEST_BYTES];
        let (sequence, packet) = sealed_packet(&mut script);
        let kind = packet.packet().packet_type();
        let flip = script.u16();
        let Ok(len) = write_packet(
            &packet.packet(),
            sequence,
            &key,
            PACKET_PROTOCOL_ID,
            &mut buf,
        ) else {
            // Only a payload of 0 or more than 1200 bytes is refused.
            assert!(
                matches!(&packet, Owned::Payload(p) if p.is_empty() || p.len() > MAX_PAYLOAD_BYTES)
            );
            return 0;
        };
        let mut bytes = buf[..len].to_vec();
        if flip & 1 == 1 {
            let bit = usize::from(flip >> 1) % (len * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
        } else {
            sealed_as = Some((sequence, packet));
        }
        if kind != PacketType::Request {
            assert!(len <= MAX_PACKET_BYTES);
        }
        if sealed_as.is_none() && kind != PacketType::Request {
            // A flipped bit in a sealed packet: never read.
            let mut copy = bytes.clone();
            let r = read_packet(
                &mut copy,
                PACKET_PROTOCOL_ID,
                PACKET_UNIX_TIME,
                Some(&key),
                AllowedPackets::ALL,
                None,
            );
            assert!(r.is_err(), "a sealed packet with a flipped bit read: {r:?}");
        }
        bytes
    } else {
        script.bytes(usize::MAX).to_vec()
    };

    // What the fresh window says of the sealed sequence before the read: a sequence
    // within 256 of 2^64 wraps below the window's most recent 0 and is refused as too
    // old (the reference's unsigned arithmetic; no sender gets there).
    let too_old = match (&sealed_as, &window) {
        (Some((sequence, packet)), Some(w)) => {
            packet.packet().packet_type().is_replay_protected() && w.already_received(*sequence)
        }
        _ => false,
    };
    let first = read(&datagram, read_key, allowed, window.as_mut());
    let expected_type = sealed_as.as_ref().map(|(_, p)| p.packet().packet_type());
    if let (Some((sequence, packet)), Some(_)) = (&sealed_as, read_key) {
        let kind = packet.packet().packet_type();
        let fresh = kind != PacketType::Request || request_fresh(packet);
        if allowed.contains(kind) && fresh && too_old {
            assert_eq!(first, Err(ReadError::Replayed));
        } else if allowed.contains(kind) && fresh {
            let (s, p) = first
                .as_ref()
                .expect("a packet the harness sealed did not read");
            let expect_sequence = if kind == PacketType::Request {
                0
            } else {
                *sequence
            };
            assert_eq!(
                (*s, p),
                (expect_sequence, packet),
                "a sealed packet read back altered"
            );
        }
    }
    let Ok((sequence, packet)) = &first else {
        // A refused datagram leaves the window as it was: the same verdict again.
        let again = read(&datagram, read_key, allowed, window.as_mut());
        assert_eq!(again, first, "a refused datagram changed the window");
        return 0;
    };
    let kind = packet.packet().packet_type();
    if let Some(t) = expected_type {
        assert_eq!(kind, t);
    }
    assert!(
        allowed.contains(kind),
        "a packet of a type not allowed read"
    );
    assert!(
        read_key.is_some() || kind == PacketType::Request,
        "a sealed packet read without a key"
    );
    if kind == PacketType::Request {
        assert_eq!(datagram.len(), CONNECTION_REQUEST_BYTES);
        assert_eq!(*sequence, 0);
    }
    // Writes back to the very bytes (only the minimal sequence length authenticates:
    // the harness has the only key).
    let mut buf = [0u8; MAX_PACKET_BYTES + CONNECTION_REQUEST_BYTES];
    let len = write_packet(
        &packet.packet(),
        *sequence,
        &key,
        PACKET_PROTOCOL_ID,
        &mut buf,
    )
    .expect("a packet that reads writes");
    assert_eq!(
        &buf[..len],
        &datagram[..],
        "a packet did not write back to its bytes"
    );
    // The second read through the same window.
    let again = read(&datagram, read_key, allowed, window.as_mut());
    if window.is_some() && kind.is_replay_protected() {
        assert_eq!(again, Err(ReadError::Replayed), "a replay read");
    } else {
        assert_eq!(again, first, "the same datagram read differently");
    }
    1
}

/// The packet of a sealed-form input: a type byte (`% 7`), the sequence (`u64`), the
/// type's fields (request: protocol id, expire timestamp, nonce, private part;
/// challenge and response: token sequence and token; keep-alive: two `u32`s; payload:
/// a blob).
fn sealed_packet(script: &mut Script<'_>) -> (u64, Owned) {
    let kind = TYPES[usize::from(script.byte().unwrap_or(0) % 7)];
    let sequence = u64::from_le_bytes(sized(script.bytes(8)));
    let packet = match kind {
        PacketType::Request => {
            let f = sized::<{ 8 + 8 + 24 + CONNECT_TOKEN_PRIVATE_BYTES }>(script.bytes(1064));
            Owned::Request {
                protocol_id: u64::from_le_bytes(sized(&f[..8])),
                expire_timestamp: u64::from_le_bytes(sized(&f[8..16])),
                nonce: sized(&f[16..40]),
                private_data: Box::new(sized(&f[40..])),
            }
        }
        PacketType::Challenge | PacketType::Response => {
            let f = sized::<{ 8 + CHALLENGE_TOKEN_BYTES }>(script.bytes(308));
            Owned::Token(
                kind,
                u64::from_le_bytes(sized(&f[..8])),
                Box::new(sized(&f[8..])),
            )
        }
        PacketType::KeepAlive => {
            let f = sized::<8>(script.bytes(8));
            Owned::KeepAlive(
                u32::from_le_bytes(sized(&f[..4])),
                u32::from_le_bytes(sized(&f[4..])),
            )
        }
        PacketType::Payload => Owned::Payload(script.blob().to_vec()),
        PacketType::Denied => Owned::Denied,
        PacketType::Disconnect => Owned::Disconnect,
    };
    (sequence, packet)
}

/// Whether a request the harness wrote is for this protocol and not expired (what
/// [`read_packet`] checks of one).
fn request_fresh(packet: &Owned) -> bool {
    match packet {
        Owned::Request {
            protocol_id,
            expire_timestamp,
            ..
        } => *protocol_id == PACKET_PROTOCOL_ID && *expire_timestamp > PACKET_UNIX_TIME,
        _ => true,
    }
}

/// A packet that owns its fields (what one read returns, kept past the datagram).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Owned {
    Request {
        protocol_id: u64,
        expire_timestamp: u64,
        nonce: [u8; 24],
        private_data: Box<[u8; CONNECT_TOKEN_PRIVATE_BYTES]>,
    },
    Denied,
    Token(PacketType, u64, Box<[u8; CHALLENGE_TOKEN_BYTES]>),
    KeepAlive(u32, u32),
    Payload(Vec<u8>),
    Disconnect,
}

impl Owned {
    fn packet(&self) -> Packet<'_> {
        match self {
            Owned::Request {
                protocol_id,
                expire_timestamp,
                nonce,
                private_data,
            } => Packet::Request {
                protocol_id: *protocol_id,
                expire_timestamp: *expire_timestamp,
                nonce: *nonce,
                private_data,
            },
            Owned::Denied => Packet::Denied,
            Owned::Token(PacketType::Challenge, token_sequence, token_data) => Packet::Challenge {
                token_sequence: *token_sequence,
                token_data,
            },
            Owned::Token(_, token_sequence, token_data) => Packet::Response {
                token_sequence: *token_sequence,
                token_data,
            },
            Owned::KeepAlive(client_index, max_clients) => Packet::KeepAlive {
                client_index: *client_index,
                max_clients: *max_clients,
            },
            Owned::Payload(data) => Packet::Payload(data),
            Owned::Disconnect => Packet::Disconnect,
        }
    }
}

trait CloneOwned {
    fn clone_owned(&self) -> Owned;
}

impl CloneOwned for Packet<'_> {
    fn clone_owned(&self) -> Owned {
        match *self {
            Packet::Request {
                protocol_id,
                expire_timestamp,
                nonce,
                private_data,
            } => Owned::Request {
                protocol_id,
                expire_timestamp,
                nonce,
                private_data: Box::new(*private_data),
            },
            Packet::Denied => Owned::Denied,
            Packet::Challenge {
                token_sequence,
                token_data,
            } => Owned::Token(PacketType::Challenge, token_sequence, Box::new(*token_data)),
            Packet::Response {
                token_sequence,
                token_data,
            } => Owned::Token(PacketType::Response, token_sequence, Box::new(*token_data)),
            Packet::KeepAlive {
                client_index,
                max_clients,
            } => Owned::KeepAlive(client_index, max_clients),
            Packet::Payload(data) => Owned::Payload(data.to_vec()),
            Packet::Disconnect => Owned::Disconnect,
        }
    }
}

/// Reads a copy of `datagram` (read_packet decrypts in place).
fn read(
    datagram: &[u8],
    key: Option<&Key>,
    allowed: AllowedPackets,
    window: Option<&mut ReplayProtection>,
) -> Result<(u64, Owned), ReadError> {
    let mut copy = datagram.to_vec();
    read_packet(
        &mut copy,
        PACKET_PROTOCOL_ID,
        PACKET_UNIX_TIME,
        key,
        allowed,
        window,
    )
    .map(|(s, p)| (s, p.clone_owned()))
}

/// `bytes` cut or zero-padded to `N` bytes.
fn sized<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    let n = bytes.len().min(N);
    out[..n].copy_from_slice(&bytes[..n]);
    out
}

/// Valid inputs of this target.
pub(super) mod seeds {
    use super::*;

    /// `count` inputs: packets of every type sealed by the harness (with the key and
    /// every type allowed: taken 1; without the key or with their type refused:
    /// taken 0 unless a request), and the same packets as raw datagrams, sealed here
    /// with [`PACKET_KEY`] (taken like the sealed form).
    pub fn netcode_packet(count: usize, seed: u64) -> Vec<Seed> {
        let mut rng = Rng::new(seed);
        (0..count)
            .map(|i| {
                let kind = (i % 7) as u8;
                let keyed = rng.below(5) != 0;
                let window = rng.below(2) as u8;
                let restrict = rng.below(4) == 0;
                let mask = rng.next_u64() as u8 & 0x7f;
                let allowed = if restrict { mask } else { 0x7f };
                let sequence = match rng.below(3) {
                    0 => rng.below(256),
                    1 => rng.below(1 << 20),
                    _ => rng.next_u64() >> rng.below(64),
                };
                let mut body = Vec::new();
                body.push(kind);
                body.extend_from_slice(&sequence.to_le_bytes());
                let mut request_ok = true;
                match kind {
                    0 => {
                        let expired = rng.below(8) == 0;
                        let protocol = if rng.below(8) == 0 {
                            rng.next_u64()
                        } else {
                            PACKET_PROTOCOL_ID
                        };
                        let expire = if expired {
                            PACKET_UNIX_TIME - rng.below(1000)
                        } else {
                            PACKET_UNIX_TIME + 1 + rng.below(1 << 30)
                        };
                        request_ok = !expired && protocol == PACKET_PROTOCOL_ID;
                        body.extend_from_slice(&protocol.to_le_bytes());
                        body.extend_from_slice(&expire.to_le_bytes());
                        let mut rest = vec![0u8; 24 + 1024];
                        rng.fill_bytes(&mut rest);
                        body.extend_from_slice(&rest);
                    }
                    2 | 3 => {
                        let mut token = vec![0u8; 308];
                        rng.fill_bytes(&mut token);
                        body.extend_from_slice(&token);
                    }
                    _ => {}
                }
                if kind == 4 {
                    let mut fields = [0u8; 8];
                    rng.fill_bytes(&mut fields);
                    body.extend_from_slice(&fields);
                }
                let blob: Vec<u8> = match kind {
                    5 => {
                        let max = if rng.below(4) == 0 { 1200 } else { 64 };
                        let n = 1 + rng.below(max) as usize;
                        let mut p = vec![0u8; n];
                        rng.fill_bytes(&mut p);
                        p
                    }
                    _ => Vec::new(),
                };
                if kind == 5 {
                    push_blob(&mut body, &blob);
                }
                body.extend_from_slice(&0u16.to_le_bytes()); // no flip
                let flags = u8::from(keyed) | window << 1 | u8::from(restrict) << 2;
                let type_allowed = allowed & (1 << kind) != 0;
                let taken =
                    usize::from(type_allowed && (if kind == 0 { request_ok } else { keyed }));
                let mut input = vec![flags | 8];
                if restrict {
                    input.push(mask);
                }
                if rng.below(2) == 0 {
                    input.extend_from_slice(&body);
                    return Seed::taking(input, taken);
                }
                // The raw form: the harness's own packet, sealed here.
                let mut raw = vec![flags];
                if restrict {
                    raw.push(mask);
                }
                raw.extend_from_slice(&sealed_bytes(&body));
                Seed::taking(raw, taken)
            })
            .collect()
    }

    /// The datagram the harness writes for a sealed-form input.
    fn sealed_bytes(body: &[u8]) -> Vec<u8> {
        let (sequence, owned) = sealed_packet(&mut Script::new(body));
        let key = Key::from_bytes(PACKET_KEY);
        let mut buf = [0u8; MAX_PACKET_BYTES + CONNECTION_REQUEST_BYTES];
        let len = write_packet(
            &owned.packet(),
            sequence,
            &key,
            PACKET_PROTOCOL_ID,
            &mut buf,
        )
        .expect("a seed's packet writes");
        buf[..len].to_vec()
    }
}
