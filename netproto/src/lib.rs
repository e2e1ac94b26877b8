//! netproto: the network protocol of real-time multiplayer games.
//!
//! Annotate message structs with `#[derive(NetMessage)]` and the range of every field;
//! the derive generates one serialize function that writes, reads and measures bits
//! with tight bounds, and rejects at compile time what it cannot honour.
//!
//! ```
//! use netproto::NetMessage;
//!
//! #[derive(NetMessage, Debug, PartialEq)]
//! struct PlayerInput {
//!     #[net(range = 0..=100)]
//!     health: u8, // 7 bits
//!     #[net(quantize(min = -3.1416, max = 3.1416, res = 0.001))]
//!     yaw: f32, // 13 bits
//!     fire: bool, // 1 bit
//! }
//!
//! let mut input = PlayerInput { health: 97, yaw: 1.25, fire: true };
//! let bytes = netproto::encode(&input).unwrap();
//! assert_eq!(bytes.len(), 3); // 21 bits
//! let back: PlayerInput = netproto::decode(&bytes).unwrap();
//! assert_eq!(back.health, 97);
//! assert!((back.yaw - 1.25).abs() <= 0.0005);
//! ```
//!
//! Layers (see the README): bit streams and the derive ([`Stream`], [`NetMessage`]);
//! message sets, the factory enum of every message type ([`MessageSet`]), and the
//! schema of every message: its printable layout and its fingerprint, the protocol id
//! ([`schema`]).
#![warn(missing_docs)]

mod bits;
pub mod channel;
mod codec;
pub mod connection;
mod error;
mod message;
mod message_set;
pub mod netcode;
pub mod packet;
mod protocol_id;
mod quantize;
pub mod schema;
pub mod sim;
pub mod stream;
mod text_table;
pub mod transport;
mod wire_view;

pub use bits::{bits_for_count, bits_required};
pub use codec::{decode, decode_prefix, encode, encode_into, measure};
pub use error::{Error, ErrorKind};
pub use message::NetMessage;
pub use message_set::MessageSet;
pub use netproto_derive::NetMessage;
pub use protocol_id::{layer_fingerprint, protocol_id};
pub use quantize::Quantization;
pub use stream::{MeasureStream, RangedInt, ReadStream, Stream, WriteStream};
pub use wire_view::{WireField, WireView};

/// Support for derived code. Not public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use core::result::Result::{Err, Ok};
    pub use std::string::String;
    pub use std::vec::Vec;

    /// The larger of two sizes, usable in `const` (enum `MAX_BITS`).
    pub const fn max_usize(a: usize, b: usize) -> usize {
        if a > b { a } else { b }
    }

    /// The smaller of two sizes, usable in `const` (enum `MIN_BITS`).
    pub const fn min_usize(a: usize, b: usize) -> usize {
        if a < b { a } else { b }
    }
}
