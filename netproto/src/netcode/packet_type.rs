//! The seven netcode packet types, as their ids on the wire.

/// The type of a packet, as its id on the wire (the low 4 bits of the prefix byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// Connection request (client to server, not encrypted).
    Request = 0,
    /// Connection denied (server to client: the server is full).
    Denied = 1,
    /// Connection challenge (server to client).
    Challenge = 2,
    /// Connection response (client to server).
    Response = 3,
    /// Keep-alive (both ways; the server's first one tells the client its index).
    KeepAlive = 4,
    /// Payload (both ways).
    Payload = 5,
    /// Disconnect (both ways).
    Disconnect = 6,
}

impl PacketType {
    /// The type with wire id `id`, if any (0 to 6).
    pub const fn from_id(id: u8) -> Option<Self> {
        Some(match id {
            0 => Self::Request,
            1 => Self::Denied,
            2 => Self::Challenge,
            3 => Self::Response,
            4 => Self::KeepAlive,
            5 => Self::Payload,
            6 => Self::Disconnect,
            _ => return None,
        })
    }

    /// The wire id (0 to 6).
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// Whether the replay window applies to this type (keep-alive, payload,
    /// disconnect).
    pub const fn is_replay_protected(self) -> bool {
        matches!(self, Self::KeepAlive | Self::Payload | Self::Disconnect)
    }
}
