//! Errors of the netcode wire layer.

use super::packet_type::PacketType;

/// Why a connect token, its private part, a challenge token or an address was refused
/// (or could not be made).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The input is not the exact size of the structure.
    #[error("wrong size: {0} bytes")]
    WrongSize(usize),
    /// The input ends inside a field.
    #[error("truncated")]
    Truncated,
    /// The version string is not `NETCODE 1.02\0`.
    #[error("bad version info")]
    BadVersion,
    /// The number of server addresses is not in 1..=32.
    #[error("bad address count {0} (must be 1 to 32)")]
    BadAddressCount(u32),
    /// The public and internal address lists differ in length.
    #[error("public and internal address lists differ in length")]
    AddressCountMismatch,
    /// An address type byte other than 1 (IPv4) or 2 (IPv6).
    #[error("bad address type {0}")]
    BadAddressType(u8),
    /// The create timestamp is after the expire timestamp.
    #[error("create timestamp after expire timestamp")]
    BadTimestamps,
    /// The authentication tag did not verify: wrong key, nonce, protocol id, expire
    /// timestamp or sequence, or the bytes were altered.
    #[error("decryption failed")]
    Decrypt,
    /// The cipher refused to seal (cannot happen for these sizes).
    #[error("encryption failed")]
    Encrypt,
}

/// Why [`write_packet`](super::write_packet) could not write a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The output buffer is shorter than the packet.
    #[error("output buffer too small: {needed} bytes needed")]
    BufferTooSmall {
        /// Bytes the packet needs.
        needed: usize,
    },
    /// A payload of 0 or more than 1200 bytes.
    #[error("payload of {0} bytes (must be 1 to 1200)")]
    BadPayloadSize(usize),
    /// The cipher refused to seal (cannot happen for these sizes).
    #[error("encryption failed")]
    Encrypt,
}

/// Why [`read_packet`](super::read_packet) refused a datagram. Every reason is a
/// silent drop on the wire: nothing is ever answered to a refused datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Empty, or shorter than the minimum for its type
    /// ([`MIN_ENCRYPTED_PACKET_BYTES`](super::MIN_ENCRYPTED_PACKET_BYTES), or the
    /// prefix, sequence bytes and tag).
    #[error("datagram too small")]
    TooSmall,
    /// A connection request that is not exactly 1078 bytes.
    #[error("connection request of {0} bytes (must be 1078)")]
    WrongSize(usize),
    /// A type the caller does not accept in its current state.
    #[error("packet type {0:?} not allowed")]
    NotAllowed(PacketType),
    /// The type in the prefix byte is 7 to 15, or 0 with sequence bytes (a request is
    /// never encrypted).
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// The number of sequence bytes in the prefix is 0 or more than 8.
    #[error("bad number of sequence bytes {0}")]
    BadSequenceBytes(u8),
    /// A connection request whose version string is not `NETCODE 1.02\0`.
    #[error("bad version info")]
    BadVersion,
    /// A connection request for another protocol id.
    #[error("protocol id mismatch")]
    ProtocolMismatch,
    /// A connection request whose token expire timestamp is at or before now.
    #[error("connect token expired")]
    Expired,
    /// The replay window has already seen this sequence, or it is too old.
    #[error("replayed or too old sequence")]
    Replayed,
    /// An encrypted packet and no read key.
    #[error("no read key")]
    NoKey,
    /// The authentication tag did not verify.
    #[error("decryption failed")]
    Decrypt,
    /// The decrypted body has the wrong length for its type (denied and disconnect:
    /// 0; challenge and response: 308; keep-alive: 8; payload: 1 to 1200).
    #[error("bad body length {0} for the packet type")]
    BadBody(usize),
}
