//! The [`MessageSet`] trait: the message factory the channels and the packer are
//! generic over.

use crate::stream::{NetMessage, Stream};

/// A set of message types: the factory that turns a type id read from the wire into a
/// blank message of that type, and the enum every channel carries.
///
/// Derive it by putting `#[net(message_set)]` on a `#[derive(NetMessage)]` enum whose
/// variants each wrap one message type. Adding a message type to your protocol is adding
/// a variant:
///
/// ```
/// use netproto::{MessageSet, NetMessage};
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct PlayerInput {
///     #[net(range = 0..=100)]
///     health: u8,
///     fire: bool,
/// }
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Chat {
///     #[net(max_len = 140)]
///     text: String,
/// }
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// #[net(message_set, max_bits = 2000)]
/// enum GameMessage {
///     Input(PlayerInput), // type id 0
///     Chat(Chat),         // type id 1
/// }
///
/// assert_eq!(GameMessage::COUNT, 2);
/// assert_eq!(GameMessage::TYPE_BITS, 1);
/// assert_eq!(GameMessage::MAX_BITS, 1 + Chat::MAX_BITS);
///
/// let message = GameMessage::from(PlayerInput { health: 97, fire: true });
/// assert_eq!(message.type_id(), 0);
/// let bytes = netproto::encode(&message).unwrap();
/// let back: GameMessage = netproto::decode(&bytes).unwrap();
/// assert_eq!(back, message);
///
/// assert_eq!(GameMessage::blank_of(1), Some(GameMessage::Chat(Chat { text: String::new() })));
/// assert_eq!(GameMessage::blank_of(2), None);
/// ```
///
/// On the wire a message is its type id, a ranged integer in `[0, COUNT - 1]` sent in
/// [`TYPE_BITS`](MessageSet::TYPE_BITS) bits (0 bits for a single type), then the
/// payload. A type id read from the wire that is not below `COUNT` (one in the bit
/// headroom, such as 5, 6 or 7 for 5 types in 3 bits) is rejected with
/// [`ErrorKind::UnknownVariant`](crate::ErrorKind::UnknownVariant), never mapped to some
/// message.
///
/// The derive also implements `From<Payload>` for the set, for each payload type that
/// appears in exactly one variant. `#[net(message_set, max_bits = N)]` makes a payload
/// that could make a message (type id included) larger than `N` bits a compile error
/// that names it.
pub trait MessageSet: NetMessage {
    /// The number of message types (variants).
    const COUNT: u32;

    /// The width of the type id on the wire: `bits_for_count(COUNT)`, that is
    /// `bits_required(0, COUNT - 1)`, 0 for a single type.
    const TYPE_BITS: u32;

    /// The largest payload's [`NetMessage::MAX_BITS`]; the set's own `MAX_BITS` is
    /// `TYPE_BITS + MAX_PAYLOAD_BITS`.
    const MAX_PAYLOAD_BITS: usize;

    /// The [schema fingerprint](crate::schema::Schema::fingerprint) of the whole set (its
    /// types, in order, and their wire formats): the protocol id of a connection, so that
    /// two builds with different schemas refuse to talk instead of decoding garbage.
    const FINGERPRINT: u64 = Self::SCHEMA.fingerprint();

    /// This message's type id, in `[0, COUNT - 1]`: its variant's position.
    fn type_id(&self) -> u32;

    /// A blank message of type `type_id` (the value a reader fills in), or `None` for an
    /// id out of range.
    fn blank_of(type_id: u32) -> Option<Self>;

    /// The variant name of type `type_id`, or `None` for an id out of range.
    fn type_name(type_id: u32) -> Option<&'static str> {
        let variants = Self::SCHEMA.variants();
        variants.get(type_id as usize).map(|variant| variant.name)
    }

    /// Writes, reads or measures a type id alone, as a message of this set sends it: a
    /// ranged integer in `[0, COUNT - 1]`. Reading an id outside it fails with
    /// [`ErrorKind::UnknownVariant`](crate::ErrorKind::UnknownVariant).
    fn serialize_type_id<S: Stream>(stream: &mut S, type_id: &mut u32) -> Result<(), S::Error> {
        stream.serialize_index(type_id, Self::COUNT)
    }
}
