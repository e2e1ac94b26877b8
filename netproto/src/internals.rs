//! The wire codecs below the public API, for netproto's own conformance tests (the
//! reference vectors) and fuzz targets, which drive them directly. Compiled only with
//! the `internals` feature and hidden from the docs: not a supported API, it changes
//! without notice. A game never needs it: the client, server and endpoint types are
//! built on these and check everything they read.

/// The netcode 1.02 packet codec: packets, challenge tokens, the private part of a
/// connect token, addresses, the replay window and the sizes of each.
pub mod netcode {
    pub use crate::netcode::address::{MAX_ADDRESS_BYTES, read_address, write_address};
    pub use crate::netcode::challenge::ChallengeToken;
    pub use crate::netcode::codec::{AllowedPackets, Packet, read_packet, write_packet};
    pub use crate::netcode::error::{ReadError, WriteError};
    pub use crate::netcode::key::{random_bytes, random_u64};
    pub use crate::netcode::packet_type::PacketType;
    pub use crate::netcode::replay::{REPLAY_PROTECTION_BUFFER_SIZE, ReplayProtection};
    pub use crate::netcode::sizes::*;
    pub use crate::netcode::token::ConnectTokenPrivate;
}

/// The packet layer's codecs: the `reliable` packet header, the fragment header and
/// parser, and the sequence buffer behind the ack and reassembly windows.
pub mod packet {
    pub use crate::packet::fragment::{
        FRAGMENT_HEADER_BYTES, FRAGMENT_PREFIX, Fragment, FragmentHeader, FragmentLimits,
        parse_fragment,
    };
    pub use crate::packet::header::{
        HeaderBytes, MAX_HEADER_BYTES, MIN_HEADER_BYTES, PacketHeader,
    };
    pub use crate::packet::sequence_buffer::{SequenceBuffer, StaleSequence};

    /// The header `endpoint`'s next packet would carry: its next sequence and the
    /// acks of what it received and accepted.
    pub fn next_header(endpoint: &crate::packet::Endpoint) -> PacketHeader {
        endpoint.next_header()
    }
}
