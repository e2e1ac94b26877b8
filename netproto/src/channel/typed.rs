//! Channels declared for message types: the typed handle [`Channel`], the declaration
//! a [`ChannelConfig`](super::ChannelConfig) keeps ([`Carries`]), and the two probes
//! `send` runs: the type id of a message (checked against the declaration) and, when a
//! value breaks its declared bounds, the field, its length and the limit.
//!
//! A channel declared with [`ChannelConfig::carries`](super::ChannelConfig::carries)
//! takes only the declared types. Where the type system can say it, the handle
//! [`LayerConfig::add_typed`](super::LayerConfig::add_typed) returns makes sending
//! another type a compile error; an untyped send (a [`ChannelId`]) of another type is
//! refused at once with [`ChannelSendError::WrongType`](super::ChannelSendError::WrongType),
//! which names both types. The declaration is local: the receiver does not check it, and
//! it is not part of the protocol id.

use core::fmt;
use core::marker::PhantomData;

use super::id::ChannelId;
use crate::error::{ErrorKind, StreamError};
use crate::message_set::MessageSet;
use crate::stream::{NetMessage, Place, Stream};

/// A channel declared for message type `T` alone: what
/// [`LayerConfig::add_typed`](super::LayerConfig::add_typed) and
/// [`LayerConfig::typed`](super::LayerConfig::typed) return, and what
/// [`MessageLayer::send_on`](super::MessageLayer::send_on) (and the transport's
/// `send_on`) take with a `T`. Sending any other type on it does not compile:
///
/// ```
/// use netproto::NetMessage;
/// use netproto::channel::{Channel, ChannelConfig, LayerConfig, MessageLayer};
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Input(#[net(range = 0..=15)] u8);
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct Chat(#[net(max_len = 140)] String);
/// #[derive(NetMessage, Debug, PartialEq)]
/// #[net(message_set)]
/// enum Msg { Input(Input), Chat(Chat) }
///
/// let mut config = LayerConfig::with_channels(vec![]);
/// let inputs: Channel<Input> = config.add_typed::<Msg, Input>(ChannelConfig::unreliable());
/// let chat: Channel<Chat> = config.add_typed::<Msg, Chat>(ChannelConfig::reliable());
/// let mut layer = MessageLayer::<Msg>::new(config)?;
/// layer.send_on(inputs, Input(3))?;
/// layer.send_on(chat, Chat("hi".into()))?;
/// // layer.send_on(inputs, Chat("hi".into())); // error[E0308]: mismatched types
/// // Untyped, the same mistake is refused at once, naming both types:
/// let e = layer.send(inputs.id(), Msg::Chat(Chat("hi".into()))).unwrap_err();
/// assert_eq!(e.to_string(), "channel 0 is declared for Input, not Chat (variant Msg::Chat): \
///     send it on a channel declared for Chat");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Channel<T> {
    id: ChannelId,
    _type: PhantomData<fn(T) -> T>,
}

impl<T> Channel<T> {
    /// Made only by [`LayerConfig`](super::LayerConfig), which declares the channel.
    pub(crate) const fn new(id: ChannelId) -> Self {
        Self {
            id,
            _type: PhantomData,
        }
    }

    /// The untyped id: what `receive` and the statistics take.
    #[must_use]
    pub const fn id(self) -> ChannelId {
        self.id
    }
}

impl<T> Clone for Channel<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Channel<T> {}

impl<T> PartialEq for Channel<T> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<T> Eq for Channel<T> {}

impl<T> core::hash::Hash for Channel<T> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// `Channel<Type>(2)`.
impl<T> fmt::Debug for Channel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Channel<{}>({})", core::any::type_name::<T>(), self.id)
    }
}

/// The untyped id.
impl<T> From<Channel<T>> for ChannelId {
    fn from(channel: Channel<T>) -> Self {
        channel.id
    }
}

/// One declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Carried {
    /// The payload type's name (its schema's).
    name: &'static str,
    /// The type ids of the variants whose payload it is (a bit per id below 64, and
    /// `None` when it is the payload of no variant: a configuration error).
    ids: Option<u64>,
}

/// What a channel is declared to carry: nothing declared (every type of the message
/// set goes), or the message types given to
/// [`ChannelConfig::carries`](super::ChannelConfig::carries). Local: the peer need not
/// declare the same, and it is not part of the protocol id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Carries {
    /// The message set's fingerprint, name and type id width, once a type is declared.
    set: Option<(u64, &'static str, u32)>,
    types: Vec<Carried>,
}

impl Carries {
    /// `true` when types are declared (the channel takes only them).
    pub fn is_declared(&self) -> bool {
        !self.types.is_empty()
    }

    /// The declared types' names, in declaration order (empty: every type goes).
    pub fn types(&self) -> impl ExactSizeIterator<Item = &'static str> + '_ {
        self.types.iter().map(|t| t.name)
    }

    /// Declares `T`, a payload type of message set `M`.
    pub(crate) fn add<M: MessageSet, T: NetMessage>(&mut self) {
        let name = T::SCHEMA.name;
        let set = (M::SCHEMA.fingerprint(), M::SCHEMA.name, M::TYPE_BITS);
        if self.set.is_some_and(|s| s.0 != set.0) {
            // Declared against another set: no type of this one matches.
            self.types.push(Carried { name, ids: None });
            return;
        }
        self.set = Some(set);
        if self.types.iter().any(|t| t.name == name) {
            return;
        }
        let print = T::SCHEMA.fingerprint();
        let ids = M::SCHEMA
            .variants()
            .iter()
            .enumerate()
            .filter(|(_, v)| v.fields.len() == 1 && v.fields[0].schema.fingerprint() == print)
            .fold(None, |ids: Option<u64>, (i, _)| {
                let bit = 1u64.checked_shl(i as u32).unwrap_or(0);
                Some(ids.unwrap_or(0) | bit)
            });
        self.types.push(Carried { name, ids });
    }

    /// `true` when exactly `T` of `M` is declared (a typed handle may be made).
    pub(crate) fn is_only<M: MessageSet, T: NetMessage>(&self) -> bool {
        let mut only = Self::default();
        only.add::<M, T>();
        only.types.iter().all(|t| t.ids.is_some()) && *self == only
    }

    /// Checks the declaration against the layer's message set, whose schema
    /// fingerprint is `fingerprint`: the error names what is wrong.
    pub(crate) fn check(&self, fingerprint: u64) -> Result<(), CarriesError> {
        let Some((print, set, _)) = self.set else {
            return Ok(());
        };
        if print != fingerprint {
            return Err(CarriesError::OtherSet(set));
        }
        match self.types.iter().find(|t| t.ids.is_none()) {
            Some(t) => Err(CarriesError::NotInSet(t.name, set)),
            None => Ok(()),
        }
    }

    /// The type id width when a check is needed: types are declared and the set has
    /// more than one type.
    pub(crate) fn type_bits(&self) -> Option<u32> {
        self.set.map(|s| s.2).filter(|&bits| bits > 0)
    }

    /// `true` when a message of type id `id` may go.
    pub(crate) fn allows(&self, id: u64) -> bool {
        let bit = u32::try_from(id)
            .ok()
            .and_then(|id| 1u64.checked_shl(id))
            .unwrap_or(0);
        // Sets of more than 64 types: ids from 64 on are not tracked, and go.
        bit == 0 || self.types.iter().any(|t| t.ids.unwrap_or(0) & bit != 0)
    }

    /// The first declared type's name and how many others are declared.
    pub(crate) fn first(&self) -> (&'static str, usize) {
        (
            self.types.first().map_or("", |t| t.name),
            self.types.len().saturating_sub(1),
        )
    }
}

/// What is wrong with a declaration, for [`LayerConfigError`](super::LayerConfigError).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CarriesError {
    /// Declared against another message set (named).
    OtherSet(&'static str),
    /// A declared type (named) is the payload of no variant of the set (named).
    NotInSet(&'static str, &'static str),
}

/// Stops the probe at the first bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stop;

/// Reads the type id of a message of a set without writing it: a set's serialize
/// function writes the type id first, and the probe stops there.
#[derive(Debug, Default)]
pub(crate) struct TypeIdProbe {
    value: Option<u64>,
}

impl TypeIdProbe {
    /// The type id of `message` (`None` if it writes no bits: a set of one type).
    pub(crate) fn of<M: NetMessage>(message: &M) -> Option<u64> {
        let mut probe = Self::default();
        let _ = M::serialize_in(message, &mut probe);
        probe.value
    }
}

impl Stream for TypeIdProbe {
    type Error = Stop;
    const IS_WRITING: bool = false;
    const IS_READING: bool = false;

    fn serialize_bits(&mut self, value: &mut u64, _bits: u32) -> Result<(), Stop> {
        self.value = Some(*value);
        Err(Stop)
    }

    fn serialize_align(&mut self) -> Result<(), Stop> {
        Err(Stop)
    }

    fn serialize_bytes<P: Place<[u8]>>(&mut self, _bytes: P) -> Result<(), Stop> {
        Err(Stop)
    }

    fn check(&self, _ok: bool, _kind: ErrorKind) -> Result<(), Stop> {
        Ok(())
    }

    fn in_field(err: Stop, _field: &'static str) -> Stop {
        err
    }

    fn bits_processed(&self) -> usize {
        0
    }

    fn bits_remaining(&self) -> usize {
        usize::MAX
    }
}

/// A value longer than its declared `max_len`: the field, its length, the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLong {
    pub(crate) field: Option<&'static str>,
    pub(crate) len: usize,
    pub(crate) max_len: usize,
}

/// Checks a message as the writer does (every declared bound, with the writer's
/// errors), without writing it, and counts its bits as the measurer does (every align
/// at 7 bits); remembers the length and limit of a value longer than its `max_len`, so
/// that a refusal names the value at fault. Every send runs it once: what a channel
/// needs to know of a message it will write into a packet later (its size bound, and
/// that it can be written), for the price of one pass without the bit packing.
///
/// The writer's only other refusal, a full buffer, cannot happen to a writer given the
/// measured size.
#[derive(Debug, Default)]
pub(crate) struct BoundsCheck {
    bits: usize,
    too_long: Option<(usize, usize)>,
}

impl BoundsCheck {
    /// The bits `message` measures when every value is within its declared bounds;
    /// otherwise the first value outside them, as the writer's error, with the length
    /// and limit when a length is the fault.
    #[inline]
    pub(crate) fn run<M: NetMessage>(message: &M) -> Result<usize, (StreamError, Option<TooLong>)> {
        let mut check = Self::default();
        match M::serialize_in(message, &mut check) {
            Ok(()) => Ok(check.bits),
            Err(e) => {
                let too_long = check.too_long.map(|(len, max_len)| TooLong {
                    field: e.field(),
                    len,
                    max_len,
                });
                Err((e, too_long))
            }
        }
    }
}

impl Stream for BoundsCheck {
    type Error = StreamError;
    // Takes the values from the message, as the writer does, to check them (a
    // quantized value against its range, too).
    const IS_WRITING: bool = true;
    const IS_READING: bool = false;

    #[inline(always)]
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), StreamError> {
        // What the writer refuses but room: a width outside 1..=64, bits set above it.
        let wide = (*value >> (bits.wrapping_sub(1) & 63)) >> 1;
        if (bits.wrapping_sub(1) >= 64) | (wide != 0) {
            return Err(ErrorKind::OutOfRange.into());
        }
        self.bits += bits as usize;
        Ok(())
    }

    #[inline(always)]
    fn serialize_align(&mut self) -> Result<(), StreamError> {
        self.bits += 7;
        Ok(())
    }

    #[inline(always)]
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), StreamError> {
        self.bits += 7 + bytes.get().len() * 8;
        Ok(())
    }

    #[inline(always)]
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), StreamError> {
        if ok { Ok(()) } else { Err(kind.into()) }
    }

    #[inline(always)]
    fn in_field(err: StreamError, field: &'static str) -> StreamError {
        err.in_field(field)
    }

    fn bits_processed(&self) -> usize {
        self.bits
    }

    fn bits_remaining(&self) -> usize {
        usize::MAX - self.bits
    }

    #[inline(always)]
    fn serialize_len(&mut self, len: &mut usize, max_len: usize) -> Result<(), StreamError> {
        if *len > max_len {
            self.too_long = Some((*len, max_len));
            return Err(ErrorKind::TooLong.into());
        }
        self.bits += crate::bits::bits_required(0, max_len as u64) as usize;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantize::Quantization;
    use crate::schema::Schema;
    use crate::stream::WriteStream;

    #[test]
    fn a_bounds_check_counts_as_the_measure_does() {
        let message = (7u8, 300u32, true);
        assert_eq!(
            BoundsCheck::run(&message),
            Ok(crate::codec::measure(&message))
        );
    }

    /// The calls a derived message makes: a ranged int, a quantized float, a bounded
    /// string, raw bits, an align and bytes, each with a field name.
    #[derive(Clone, Debug)]
    struct Probe {
        health: u8,
        aim: f32,
        name: String,
        raw: u64,
    }

    const AIM: Quantization = Quantization::new(-1.0, 1.0, 0.01);

    impl crate::NetMessage for Probe {
        const MAX_BITS: usize = 7 + 8 + 3 + 4 * 8 + 7 + 3 + 7 + 16;
        const MIN_BITS: usize = 7 + 8 + 3 + 7 + 3 + 7 + 16;
        const SCHEMA: &'static Schema = &Schema::BOOL;
        fn blank() -> Self {
            Probe {
                health: 0,
                aim: 0.0,
                name: String::new(),
                raw: 0,
            }
        }
        fn serialize_in<S: Stream, P: Place<Self>>(this: P, s: &mut S) -> Result<(), S::Error> {
            let p = this.get();
            s.serialize_int(&mut p.health.clone(), 0, 100)
                .map_err(|e| S::in_field(e, "P.health"))?;
            s.serialize_quantized(&mut p.aim.clone(), &AIM)
                .map_err(|e| S::in_field(e, "P.aim"))?;
            s.serialize_string(&p.name, 4)
                .map_err(|e| S::in_field(e, "P.name"))?;
            s.serialize_bits(&mut p.raw.clone(), 3)
                .map_err(|e| S::in_field(e, "P.raw"))?;
            s.serialize_align()?;
            s.serialize_bytes(&b"ab"[..])
        }
    }

    /// Every refusal of the writer, at the bounds check: the same verdict and error (kind
    /// and field), and on success the measurer's count.
    #[test]
    fn the_bounds_check_refuses_what_the_writer_refuses_and_measures_what_the_measurer_measures() {
        let ok = Probe {
            health: 100,
            aim: 0.5,
            name: "ab".into(),
            raw: 7,
        };
        let cases = [
            ok.clone(),
            Probe {
                health: 101,
                ..ok.clone()
            },
            Probe {
                aim: 1.5,
                ..ok.clone()
            },
            Probe {
                aim: f32::NAN,
                ..ok.clone()
            },
            Probe {
                name: "abcde".into(),
                ..ok.clone()
            },
            Probe {
                name: "a\0".into(),
                ..ok.clone()
            },
            Probe {
                raw: 8,
                ..ok.clone()
            },
        ];
        let mut refused = 0;
        for message in &cases {
            let mut buf = vec![0u8; crate::codec::measure(message).div_ceil(8) + 8];
            let written = crate::NetMessage::write(message, &mut WriteStream::new(&mut buf));
            match (written, BoundsCheck::run(message).map_err(|(e, _)| e)) {
                (Ok(()), Ok(bits)) => assert_eq!(bits, crate::codec::measure(message)),
                (Err(w), Err(c)) => {
                    assert_eq!(w, c);
                    assert!(c.field().is_some(), "{c:?}");
                    refused += 1;
                }
                (w, c) => panic!("{message:?}: writer {w:?}, checker {c:?}"),
            }
        }
        assert_eq!(refused, cases.len() - 1);
    }

    #[test]
    fn the_probe_reads_an_enum_index_and_stops() {
        assert_eq!(TypeIdProbe::of(&200u8), Some(200));
        assert_eq!(TypeIdProbe::of(&(9u8, 1u32)), Some(9));
    }

    #[test]
    fn a_handle_prints_its_type_and_index() {
        let c = Channel::<u8>::new(ChannelId::new(3));
        assert_eq!(format!("{c:?}"), "Channel<u8>(3)");
        assert_eq!(ChannelId::from(c), ChannelId::new(3));
        assert_eq!(c, c.clone());
    }

    #[test]
    fn ids_beyond_64_types_go() {
        let c = Carries::default();
        assert!(c.allows(64) && c.allows(u64::MAX));
        assert!(!c.allows(0));
    }
}
