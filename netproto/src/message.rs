//! The [`NetMessage`] trait and its implementations for the building blocks.

use crate::schema::{IntType, Schema};
use crate::stream::Stream;

/// A type with a wire format: one serialize function that writes, reads and measures.
///
/// Derive it with `#[derive(NetMessage)]`; the derive generates [`NetMessage::serialize`]
/// and [`NetMessage::write`] from the field annotations, [`NetMessage::SCHEMA`] at compile
/// time with [`NetMessage::MAX_BITS`] and [`NetMessage::MIN_BITS`] read from it, and
/// [`NetMessage::blank`] (the value a reader fills in).
///
/// Implemented here for `bool`, every fixed-width integer (full width), `f32`, `f64`
/// (raw IEEE bits), `()`, `Option<T>` (1 bit + value), `[T; N]` and tuples of up to
/// eight elements.
///
/// ```
/// use netproto::NetMessage;
///
/// #[derive(NetMessage, Debug, PartialEq)]
/// struct PlayerInput {
///     #[net(range = 0..=100)]
///     health: u8,
///     jump: bool,
/// }
///
/// assert_eq!(PlayerInput::MAX_BITS, 8);
/// let bytes = netproto::encode(&PlayerInput { health: 42, jump: true }).unwrap();
/// assert_eq!(bytes.len(), 1);
/// let back: PlayerInput = netproto::decode(&bytes).unwrap();
/// assert_eq!(back, PlayerInput { health: 42, jump: true });
/// ```
pub trait NetMessage: Sized {
    /// An upper bound on the bits [`NetMessage::serialize`] writes (every align counted
    /// as 7 bits).
    const MAX_BITS: usize;
    /// A lower bound on the bits it writes (every align counted as 0 bits).
    const MIN_BITS: usize;

    /// The description of the wire format: fields in order, their kind, declared bounds
    /// and bit cost (see [`schema`](crate::schema)), from which a
    /// [`Layout`](crate::schema::Layout) is printed and a
    /// [fingerprint](Schema::fingerprint) computed.
    ///
    /// The derive generates it. A hand-written impl gets [`Kind::Opaque`](crate::schema::Kind::Opaque)
    /// with its bit bounds unless it describes itself with the `Schema` constructors; one
    /// that does must give the schema its own `MIN_BITS` / `MAX_BITS`: a derived type
    /// containing it reads its bounds from the schemas of its fields.
    const SCHEMA: &'static Schema = &Schema::opaque("opaque", Self::MIN_BITS, Self::MAX_BITS);

    /// The value a reader starts from before it fills the fields in.
    fn blank() -> Self;

    /// Writes, reads or measures `self`, depending on the stream.
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error>;

    /// Writes or measures `self` from a shared reference: the same bits, checks and
    /// errors as [`NetMessage::serialize`] with a writer or a measurer, without the `&mut`
    /// (a message broadcast to many peers need not be cloned to be sent).
    ///
    /// `stream` is a writer or a measurer; a reader has nothing to take from `&self`.
    /// The derive generates both methods from the one declaration (its `serialize`
    /// writes and measures through this one); a hand-written impl writes the same bits in
    /// both, which the property tests of its crate should hold equal.
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error>;

    /// The derive's write fast path: writes `self` through `packer`, which gathers
    /// fixed-width fields (across nested types) into words. `stream` is a writer
    /// (`S::IS_WRITING`, not `S::TRACING`) with room for [`NetMessage::MAX_BITS`]; the
    /// caller flushes `packer` at the end. The default flushes and calls
    /// [`NetMessage::write`]; the derive overrides it.
    #[doc(hidden)]
    #[inline(always)]
    fn pack<S: Stream>(
        &self,
        stream: &mut S,
        packer: &mut crate::stream::Packer,
    ) -> Result<(), S::Error> {
        packer.flush(stream)?;
        self.write(stream)
    }
}

impl NetMessage for bool {
    const MAX_BITS: usize = 1;
    const MIN_BITS: usize = 1;
    const SCHEMA: &'static Schema = &Schema::BOOL;
    fn blank() -> Self {
        false
    }
    #[inline]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_bool(self)
    }
    #[inline]
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_bool(&mut { *self })
    }
    #[inline(always)]
    fn pack<S: Stream>(
        &self,
        stream: &mut S,
        packer: &mut crate::stream::Packer,
    ) -> Result<(), S::Error> {
        packer.push(stream, u64::from(*self), 1)
    }
}

macro_rules! full_width_int {
    ($($t:ty => $ty:ident),*) => {$(
        impl NetMessage for $t {
            const MAX_BITS: usize = <$t>::BITS as usize;
            const MIN_BITS: usize = <$t>::BITS as usize;
            const SCHEMA: &'static Schema = &Schema::full_int(IntType::$ty);
            fn blank() -> Self {
                0
            }
            #[inline]
            fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
                stream.serialize_int(self, <$t>::MIN, <$t>::MAX)
            }
            #[inline]
            fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
                stream.serialize_int(&mut { *self }, <$t>::MIN, <$t>::MAX)
            }
            #[inline(always)]
            fn pack<S: Stream>(
                &self,
                stream: &mut S,
                packer: &mut crate::stream::Packer,
            ) -> Result<(), S::Error> {
                packer.push(stream, crate::stream::RangedInt::offset_from(*self, <$t>::MIN), <$t>::BITS)
            }
        }
    )*};
}

full_width_int!(
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16, i32 => I32, i64 => I64
);

impl NetMessage for f32 {
    const MAX_BITS: usize = 32;
    const MIN_BITS: usize = 32;
    const SCHEMA: &'static Schema = &Schema::F32;
    fn blank() -> Self {
        0.0
    }
    #[inline]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_f32(self)
    }
    #[inline]
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_f32(&mut { *self })
    }
    #[inline(always)]
    fn pack<S: Stream>(
        &self,
        stream: &mut S,
        packer: &mut crate::stream::Packer,
    ) -> Result<(), S::Error> {
        packer.push(stream, u64::from(self.to_bits()), 32)
    }
}

impl NetMessage for f64 {
    const MAX_BITS: usize = 64;
    const MIN_BITS: usize = 64;
    const SCHEMA: &'static Schema = &Schema::F64;
    fn blank() -> Self {
        0.0
    }
    #[inline]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_f64(self)
    }
    #[inline]
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_f64(&mut { *self })
    }
    #[inline(always)]
    fn pack<S: Stream>(
        &self,
        stream: &mut S,
        packer: &mut crate::stream::Packer,
    ) -> Result<(), S::Error> {
        packer.push(stream, self.to_bits(), 64)
    }
}

impl<T: NetMessage> NetMessage for Option<T> {
    const MAX_BITS: usize = 1 + T::MAX_BITS;
    const MIN_BITS: usize = 1;
    const SCHEMA: &'static Schema = &Schema::option(T::SCHEMA);
    fn blank() -> Self {
        None
    }
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        if !S::IS_READING {
            return self.write(stream);
        }
        let mut present = false;
        stream.serialize_bool(&mut present)?;
        *self = if present { Some(T::blank()) } else { None };
        match self {
            Some(value) => value.serialize(stream),
            None => Ok(()),
        }
    }
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_bool(&mut self.is_some())?;
        match self {
            Some(value) => value.write(stream),
            None => Ok(()),
        }
    }
    #[inline(always)]
    fn pack<S: Stream>(
        &self,
        stream: &mut S,
        packer: &mut crate::stream::Packer,
    ) -> Result<(), S::Error> {
        packer.push(stream, u64::from(self.is_some()), 1)?;
        match self {
            Some(value) => value.pack(stream, packer),
            None => Ok(()),
        }
    }
}

impl<T: NetMessage, const N: usize> NetMessage for [T; N] {
    const MAX_BITS: usize = N * T::MAX_BITS;
    const MIN_BITS: usize = N * T::MIN_BITS;
    const SCHEMA: &'static Schema = &Schema::array(N, T::SCHEMA);
    fn blank() -> Self {
        core::array::from_fn(|_| T::blank())
    }
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        for item in self.iter_mut() {
            item.serialize(stream)?;
        }
        Ok(())
    }
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
        for item in self {
            item.write(stream)?;
        }
        Ok(())
    }
    #[inline(always)]
    fn pack<S: Stream>(
        &self,
        stream: &mut S,
        packer: &mut crate::stream::Packer,
    ) -> Result<(), S::Error> {
        for item in self {
            item.pack(stream, packer)?;
        }
        Ok(())
    }
}

macro_rules! tuple {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: NetMessage),*> NetMessage for ($($name,)*) {
            const MAX_BITS: usize = 0 $(+ $name::MAX_BITS)*;
            const MIN_BITS: usize = 0 $(+ $name::MIN_BITS)*;
            const SCHEMA: &'static Schema = &Schema::tuple(&[$($name::SCHEMA),*]);
            #[allow(clippy::unused_unit)]
            fn blank() -> Self {
                ($($name::blank(),)*)
            }
            #[allow(unused_variables)]
            fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
                $(self.$idx.serialize(stream)?;)*
                Ok(())
            }
            #[allow(unused_variables)]
            fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
                $(self.$idx.write(stream)?;)*
                Ok(())
            }
            #[allow(unused_variables)]
            #[inline(always)]
            fn pack<S: Stream>(
                &self,
                stream: &mut S,
                packer: &mut crate::stream::Packer,
            ) -> Result<(), S::Error> {
                $(self.$idx.pack(stream, packer)?;)*
                Ok(())
            }
        }
    };
}

tuple!();
tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);
tuple!(A 0, B 1, C 2, D 3, E 4);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
