//! Messages encoded once and queued for many connections (broadcast).

use std::sync::Arc;

use crate::error::StreamError;
use crate::message::NetMessage;
use crate::schema::{Kind, Schema};
use crate::stream::{Stream, WriteStream};

/// A message encoded once, to be queued on many layers
/// ([`MessageLayer::send_encoded`](super::MessageLayer::send_encoded)) without being
/// encoded again: a broadcast. Cloning it shares the bytes.
///
/// Only a message whose bits do not depend on where it starts in a packet can be
/// copied bit for bit into any payload: one whose type (the set's variant) has no
/// byte-aligned parts (strings, byte sequences, or a hand-written impl that does not
/// describe its schema).
/// [`Encoded::new`] returns `None` for the others: send those one by one (as
/// [`ServerStack::broadcast`](crate::transport::ServerStack::broadcast) does).
///
/// ```
/// use netproto::Time;
/// use netproto::NetMessage;
/// use netproto::channel::{ChannelId, Encoded, LayerConfig, MessageLayer};
/// use netproto::packet::Sequence;
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Score(#[net(range = 0..=999)] u16);
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Chat(#[net(max_len = 20)] String);
/// #[derive(NetMessage, Debug, PartialEq)]
/// #[net(message_set)]
/// enum Msg { Score(Score), Chat(Chat) }
///
/// let encoded = Encoded::new(&Msg::Score(Score(42)))?.expect("no aligned parts");
/// // One encoding, queued on every connection's layer.
/// let mut layers: Vec<MessageLayer<Msg>> =
///     (0..3).map(|_| MessageLayer::new(LayerConfig::default())).collect::<Result<_, _>>()?;
/// for layer in &mut layers {
///     layer.send_encoded(ChannelId::RELIABLE, &encoded)?;
/// }
/// let mut payload = Vec::new();
/// layers[2].write_packet(Time::ZERO, Sequence(0), &mut payload);
/// let mut peer = MessageLayer::<Msg>::new(LayerConfig::default())?;
/// peer.read_packet(&payload)?;
/// assert_eq!(peer.receive(ChannelId::RELIABLE), Some(Msg::Score(Score(42))));
/// // A string is byte-aligned: its bits depend on where it starts.
/// assert!(Encoded::new(&Msg::Chat(Chat("gg".into())))?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Encoded {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The message written from bit 0 (zero padding to a byte).
    bytes: Box<[u8]>,
    /// Bits written.
    bits: usize,
}

impl Encoded {
    /// Encodes `message` once. `Ok(None)` when its bits depend on where it starts (see
    /// the type's documentation); an error when a value is out of its declared range.
    pub fn new<M: crate::MessageSet>(message: &M) -> Result<Option<Self>, StreamError> {
        // A set's type id is a ranged integer; what follows is the variant's payload.
        let free = match M::SCHEMA.kind {
            Kind::Enum(variants) => variants
                .get(message.type_id() as usize)
                .is_some_and(|v| v.fields.iter().all(|f| position_free(f.schema, 1))),
            _ => position_free(M::SCHEMA, 0),
        };
        if !free {
            return Ok(None);
        }
        let mut bytes = vec![0u8; M::MAX_BITS.div_ceil(8) + 8];
        let mut w = WriteStream::new(&mut bytes);
        message.write(&mut w)?;
        let bits = w.bits_processed();
        let len = w.finish();
        bytes.truncate(len);
        Ok(Some(Self {
            inner: Arc::new(Inner {
                bytes: bytes.into_boxed_slice(),
                bits,
            }),
        }))
    }

    /// Bits of the message.
    pub fn bits(&self) -> usize {
        self.inner.bits
    }

    /// The message encoded by itself (type id, body, zero padding to a byte): a
    /// block's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.inner.bytes
    }

    /// Copies the message's bits into `w`, 32 at a time.
    pub(crate) fn write_to(&self, w: &mut WriteStream<'_>) -> Result<(), StreamError> {
        let mut left = self.inner.bits;
        for chunk in self.inner.bytes.chunks(4) {
            if left == 0 {
                break;
            }
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let n = left.min(32);
            let mut value = u64::from_le_bytes(word) & ((1u64 << n) - 1);
            w.serialize_bits(&mut value, n as u32)?;
            left -= n;
        }
        Ok(())
    }
}

/// `true` when a value of `schema` writes no align: its bits are the same wherever
/// it starts. Byte sequences are taken to be written as bytes (aligned).
fn position_free(schema: &Schema, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    let all =
        |mut schemas: core::slice::Iter<'_, &Schema>| schemas.all(|s| position_free(s, depth + 1));
    let fields =
        |fields: &[crate::schema::Field]| fields.iter().all(|f| position_free(f.schema, depth + 1));
    match schema.kind {
        Kind::Bool
        | Kind::Int { .. }
        | Kind::Bits { .. }
        | Kind::F32
        | Kind::F64
        | Kind::Quantized { .. } => true,
        Kind::Sequence { element, .. } | Kind::Array { element, .. } => {
            element.max_bits > 8 && position_free(element, depth + 1)
        }
        Kind::Option(inner) => position_free(inner, depth + 1),
        Kind::Tuple(items) => all(items.iter()),
        Kind::Struct(list) => fields(list),
        Kind::Enum(variants) => variants.iter().all(|v| fields(v.fields)),
        _ => false,
    }
}

/// What a queue holds for one message: the value, or its encoding shared by many
/// layers.
#[derive(Debug)]
pub(crate) enum Payload<M> {
    /// The message, written when a packet takes it.
    Value(M),
    /// Bits encoded once.
    Encoded(Encoded),
}

impl<M: NetMessage> Payload<M> {
    /// Writes the message into a packet.
    pub(crate) fn write(&self, w: &mut WriteStream<'_>) -> Result<(), StreamError> {
        match self {
            Self::Value(message) => message.write(w),
            Self::Encoded(encoded) => encoded.write_to(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::ReadStream;

    #[derive(Debug, PartialEq)]
    struct Odd(u64);

    impl NetMessage for Odd {
        const MAX_BITS: usize = 45;
        const MIN_BITS: usize = 45;
        const SCHEMA: &'static Schema = &Schema::BOOL;
        fn blank() -> Self {
            Odd(0)
        }
        fn serialize_in<S: Stream, P: crate::Place<Self>>(
            mut this: P,
            stream: &mut S,
        ) -> Result<(), S::Error> {
            let mut bits = this.get().0;
            stream.serialize_bits(&mut bits, 45)?;
            this.set(Odd(bits));
            Ok(())
        }
    }

    impl crate::MessageSet for Odd {
        const COUNT: u32 = 1;
        const TYPE_BITS: u32 = 0;
        const MAX_PAYLOAD_BITS: usize = 45;
        fn type_id(&self) -> u32 {
            0
        }
        fn blank_of(type_id: u32) -> Option<Self> {
            (type_id == 0).then_some(Odd(0))
        }
    }

    #[test]
    fn copied_bits_read_back_at_any_offset() {
        let value = 0x1555_5555_4321 & ((1 << 45) - 1);
        let encoded = Encoded::new(&Odd(value)).unwrap().unwrap();
        assert_eq!(encoded.bits(), 45);
        for offset in 0..9u32 {
            let mut buf = [0u8; 16];
            let mut w = WriteStream::new(&mut buf);
            if offset > 0 {
                w.serialize_bits(&mut 0, offset).unwrap();
            }
            encoded.write_to(&mut w).unwrap();
            w.finish();
            let mut r = ReadStream::new(&buf);
            if offset > 0 {
                r.serialize_bits(&mut 0, offset).unwrap();
            }
            let mut back = Odd(0);
            back.serialize(&mut r).unwrap();
            assert_eq!(back, Odd(value), "offset {offset}");
        }
    }

    #[test]
    fn aligned_parts_are_not_position_free() {
        assert!(position_free(&Schema::BOOL, 0));
        assert!(!position_free(&Schema::string(10), 0));
        assert!(!position_free(&Schema::opaque("x", 1, 2), 0));
    }
}
