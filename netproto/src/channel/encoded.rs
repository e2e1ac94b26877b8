//! Messages encoded once and queued for many connections (broadcast).

use std::sync::Arc;

use crate::error::StreamError;
use crate::schema::{Kind, Schema};
use crate::stream::{NetMessage, Stream, WriteStream};

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
    bytes: Vec<u8>,
    /// Bits written.
    bits: usize,
}

impl Encoded {
    /// Encodes `message` once. `Ok(None)` when its bits depend on where it starts (see
    /// the type's documentation); an error when a value is out of its declared range.
    pub fn new<M: crate::MessageSet>(message: &M) -> Result<Option<Self>, StreamError> {
        if !Self::is_position_free(message) {
            return Ok(None);
        }
        let mut inner = Inner {
            bytes: Vec::new(),
            bits: 0,
        };
        inner.encode(message)?;
        Ok(Some(Self {
            inner: Arc::new(inner),
        }))
    }

    /// `true` when `message`'s bits are the same wherever it starts.
    fn is_position_free<M: crate::MessageSet>(message: &M) -> bool {
        // A set's type id is a ranged integer; what follows is the variant's payload.
        match M::SCHEMA.kind {
            Kind::Enum(variants) => variants
                .get(message.type_id() as usize)
                .is_some_and(|v| v.fields.iter().all(|f| position_free(f.schema, 1))),
            _ => position_free(M::SCHEMA, 0),
        }
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

    /// Copies the message's bits into `w`, 64 at a time: the same bits as the
    /// message's own writes.
    pub(crate) fn write_to(&self, w: &mut WriteStream<'_>) -> Result<(), StreamError> {
        w.append_bits(&self.inner.bytes, self.inner.bits)
    }
}

impl Inner {
    /// Writes `message` from bit 0 into `bytes`, reusing its allocation.
    fn encode<M: crate::MessageSet>(&mut self, message: &M) -> Result<(), StreamError> {
        // Room for the measure (an upper bound), so that a kept buffer is the size of
        // the messages it holds, not of the largest the type allows.
        self.bytes.clear();
        self.bytes
            .resize(crate::codec::measure(message).div_ceil(8) + 8, 0);
        let mut w = WriteStream::new(&mut self.bytes);
        message.write(&mut w)?;
        self.bits = w.bits_processed();
        let len = w.finish();
        self.bytes.truncate(len);
        Ok(())
    }
}

/// The encodings a sender made for its broadcasts, kept to be written again once no
/// queue holds them (every layer sent or dropped its copy): a server that broadcasts
/// every tick allocates until the pool covers the broadcasts in flight, then never.
#[derive(Debug, Default)]
pub(crate) struct EncodedPool {
    kept: Vec<Encoded>,
}

/// Encodings a pool keeps at most (each the size of the largest message it held);
/// beyond them a broadcast allocates its own.
const POOL_KEPT: usize = 16;

impl EncodedPool {
    /// [`Encoded::new`], in a kept encoding no queue holds if there is one.
    pub(crate) fn encode<M: crate::MessageSet>(
        &mut self,
        message: &M,
    ) -> Result<Option<Encoded>, StreamError> {
        if !Encoded::is_position_free(message) {
            return Ok(None);
        }
        // A kept encoding only the pool holds.
        for kept in &mut self.kept {
            if let Some(inner) = Arc::get_mut(&mut kept.inner) {
                inner.encode(message)?;
                return Ok(Some(kept.clone()));
            }
        }
        let encoded = Encoded::new(message)?;
        if let Some(e) = &encoded
            && self.kept.len() < POOL_KEPT
        {
            self.kept.push(e.clone());
        }
        Ok(encoded)
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

/// A message on its way into a queue: the value, or its encoding shared by many
/// layers.
#[derive(Debug)]
pub(crate) enum Payload<M> {
    /// The message, written when a packet takes it.
    Value(M),
    /// Bits encoded once.
    Encoded(Encoded),
}

/// A queued message, borrowed: what a packet writes.
#[derive(Debug)]
pub(crate) enum PayloadRef<'a, M> {
    /// The message, written when a packet takes it.
    Value(&'a M),
    /// Bits encoded once.
    Encoded(&'a Encoded),
}

impl<M: NetMessage> PayloadRef<'_, M> {
    /// Writes the message into a packet.
    pub(crate) fn write(&self, w: &mut WriteStream<'_>) -> Result<(), StreamError> {
        match self {
            Self::Value(message) => message.write(w),
            Self::Encoded(encoded) => encoded.write_to(w),
        }
    }
}

/// A send-queue slot's message, kept from one message to the next: a value is moved
/// into the kept one with [`NetMessage::move_from`] (for a message set, only its
/// variant's payload: the set is as large as its largest variant, and a whole move
/// copies all of it), an encoded one sits beside it. Both send queues hold their
/// messages so.
#[derive(Debug)]
pub(crate) struct KeptMessage<M> {
    /// Made blank by the slot's first value.
    value: Option<M>,
    encoded: Option<Encoded>,
}

impl<M> Default for KeptMessage<M> {
    fn default() -> Self {
        Self {
            value: None,
            encoded: None,
        }
    }
}

impl<M> KeptMessage<M> {
    /// The message put last (the encoding when there is one), to write.
    pub(crate) fn get(&self) -> Option<PayloadRef<'_, M>> {
        match (&self.encoded, &self.value) {
            (Some(encoded), _) => Some(PayloadRef::Encoded(encoded)),
            (None, Some(value)) => Some(PayloadRef::Value(value)),
            (None, None) => None,
        }
    }
}

impl<M: NetMessage> KeptMessage<M> {
    /// Keeps `message` (the slot was cleared since its last).
    pub(crate) fn put(&mut self, message: Payload<M>) {
        match message {
            Payload::Value(mut value) => self
                .value
                .get_or_insert_with(M::blank)
                .move_from(&mut value),
            Payload::Encoded(encoded) => self.encoded = Some(encoded),
        }
    }

    /// Lets the message go: an encoding back within its pool's reach, a value's heap
    /// freed (its variant's payload moved out) where there is anything to free.
    pub(crate) fn clear(&mut self) {
        if self.encoded.take().is_none()
            && core::mem::needs_drop::<M>()
            && let Some(value) = &mut self.value
        {
            drop(value.move_out());
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

    /// A message of several words: copied at any offset, the same bytes as its own write.
    #[test]
    fn copied_bits_of_several_words_are_the_message_s_own() {
        #[derive(Debug, PartialEq)]
        struct Wide([u64; 3]);
        impl NetMessage for Wide {
            const MAX_BITS: usize = 45 + 64 + 26;
            const MIN_BITS: usize = 45 + 64 + 26;
            const SCHEMA: &'static Schema = &Schema::BOOL;
            fn blank() -> Self {
                Wide([0; 3])
            }
            fn serialize_in<S: Stream, P: crate::Place<Self>>(
                this: P,
                stream: &mut S,
            ) -> Result<(), S::Error> {
                let [a, b, c] = this.get().0;
                stream.serialize_bits(&mut { a }, 45)?;
                stream.serialize_bits(&mut { b }, 64)?;
                stream.serialize_bits(&mut { c }, 26)
            }
        }
        impl crate::MessageSet for Wide {
            const COUNT: u32 = 1;
            const TYPE_BITS: u32 = 0;
            const MAX_PAYLOAD_BITS: usize = 135;
            fn type_id(&self) -> u32 {
                0
            }
            fn blank_of(type_id: u32) -> Option<Self> {
                (type_id == 0).then_some(Wide([0; 3]))
            }
        }
        let wide = Wide([
            0x1234_5678_9ABC & ((1 << 45) - 1),
            0xF0E1_D2C3_B4A5_9687,
            0x2AB_CDEF,
        ]);
        let encoded = Encoded::new(&wide).unwrap().unwrap();
        assert_eq!(encoded.bits(), 135);
        for offset in 1..=64u32 {
            let write = |copy: bool| {
                let mut buf = [0u8; 32];
                let mut w = WriteStream::new(&mut buf);
                w.serialize_bits(&mut (u64::MAX >> (64 - offset)), offset)
                    .unwrap();
                if copy {
                    encoded.write_to(&mut w).unwrap();
                } else {
                    wide.write(&mut w).unwrap();
                }
                w.finish();
                buf
            };
            assert_eq!(write(true), write(false), "offset {offset}");
        }
    }

    /// A kept encoding is written again once no queue holds it, and not before; its
    /// bytes are those of a fresh one; the pool stops keeping at its bound.
    #[test]
    fn a_pool_reuses_an_encoding_no_queue_holds() {
        let mut pool = EncodedPool::default();
        let first = pool.encode(&Odd(5)).unwrap().unwrap();
        let held = pool.encode(&Odd(6)).unwrap().unwrap();
        assert!(
            !Arc::ptr_eq(&first.inner, &held.inner),
            "in use: a second one"
        );
        let first_ptr = Arc::as_ptr(&first.inner);
        drop(first);
        let again = pool.encode(&Odd(7)).unwrap().unwrap();
        assert_eq!(Arc::as_ptr(&again.inner), first_ptr, "reused");
        let fresh = Encoded::new(&Odd(7)).unwrap().unwrap();
        assert_eq!((again.bytes(), again.bits()), (fresh.bytes(), fresh.bits()));
        assert_eq!(
            held.bytes(),
            Encoded::new(&Odd(6)).unwrap().unwrap().bytes()
        );
        // Held by queues beyond the bound: new encodings, not kept.
        let many: Vec<_> = (0..2 * POOL_KEPT as u64)
            .map(|v| pool.encode(&Odd(v)).unwrap().unwrap())
            .collect();
        assert_eq!(pool.kept.len(), POOL_KEPT);
        assert_eq!(
            many[POOL_KEPT + 1].bytes(),
            Encoded::new(&Odd(POOL_KEPT as u64 + 1))
                .unwrap()
                .unwrap()
                .bytes()
        );
    }

    #[test]
    fn aligned_parts_are_not_position_free() {
        assert!(position_free(&Schema::BOOL, 0));
        assert!(!position_free(&Schema::string(10), 0));
        assert!(!position_free(&Schema::opaque("x", 1, 2), 0));
    }
}
