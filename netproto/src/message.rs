//! The [`NetMessage`] trait and its implementations for the building blocks.

use crate::schema::{IntType, Schema};
use crate::stream::{Place, Stream};

/// A type with a wire format: one serialize function that writes, reads and measures.
///
/// Derive it with `#[derive(NetMessage)]`; the derive generates one function,
/// [`NetMessage::serialize_in`], from the field annotations (reading, writing, measuring
/// and tracing all run it: [`NetMessage::serialize`] and [`NetMessage::write`] are
/// provided on top of it), [`NetMessage::SCHEMA`] at compile time with
/// [`NetMessage::MAX_BITS`] and [`NetMessage::MIN_BITS`] read from it, and
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

    /// Moves the value out, leaving in its place a value to be read over or moved into
    /// again, so that a queue can reuse its slots instead of moving whole values.
    ///
    /// The default replaces the value with [`NetMessage::blank`]. A derived message set
    /// (`#[net(message_set)]`) moves only its variant's payload and leaves that
    /// variant's blank: an enum is as large as its largest variant, and moving it whole
    /// copies all of that variant's bytes even for a small message.
    #[inline]
    fn move_out(&mut self) -> Self {
        core::mem::replace(self, Self::blank())
    }

    /// Moves `source`'s value into `self`, leaving in `source` what
    /// [`NetMessage::move_out`] leaves. A derived message set writes only the variant's
    /// payload into `self`, not the whole enum.
    #[inline]
    fn move_from(&mut self, source: &mut Self) {
        *self = source.move_out();
    }

    /// The one serialize function: writes, reads or measures the value in `this`,
    /// depending on the stream. `this` is a [`Place`]: `&Self` to write or measure (the
    /// value is only looked at), `&mut Self` to read (the value is filled in). The derive
    /// generates only this; a hand-written impl writes it once, value-based at the
    /// leaves (`let mut v = this.get().x; stream.serialize_int(&mut v, ..)?;` then
    /// `this.set(..)`, which does nothing through `&Self`), and nested values through
    /// their own `serialize_in` on a projected place ([`Place::field`]).
    ///
    /// A writer or measurer never changes the value; a reader given `&Self` reads and
    /// validates the bits and stores nothing.
    fn serialize_in<S: Stream, P: Place<Self>>(this: P, stream: &mut S) -> Result<(), S::Error>;

    /// Writes, reads or measures `self`, depending on the stream:
    /// [`NetMessage::serialize_in`] through `&mut self`, by way of
    /// [`Stream::serialize_message`] (so a [`WriteStream`](crate::WriteStream) or
    /// [`ReadStream`](crate::ReadStream) takes its word-at-a-time fast path).
    #[inline(always)]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_message(self)
    }

    /// Writes or measures `self` from a shared reference: [`NetMessage::serialize_in`]
    /// through `&self`, the same bits, checks and errors as [`NetMessage::serialize`]
    /// (a message broadcast to many peers need not be cloned to be sent). A reader given
    /// `&self` reads and validates a value and drops it.
    ///
    /// It goes by way of [`Stream::serialize_message`]: on a
    /// [`WriteStream`](crate::WriteStream) with room for [`NetMessage::MAX_BITS`] the
    /// function runs on a word packer (one capacity check per 64-bit word), otherwise
    /// on the writer itself, with the same bytes and errors either way.
    #[inline(always)]
    fn write<S: Stream>(&self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_message(self)
    }
}

impl NetMessage for bool {
    const MAX_BITS: usize = 1;
    const MIN_BITS: usize = 1;
    const SCHEMA: &'static Schema = &Schema::BOOL;
    fn blank() -> Self {
        false
    }
    #[inline(always)]
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut value = *this.get();
        stream.serialize_bool(&mut value)?;
        this.set(value);
        Ok(())
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
            #[inline(always)]
            fn serialize_in<S: Stream, P: Place<Self>>(
                mut this: P,
                stream: &mut S,
            ) -> Result<(), S::Error> {
                let mut value = *this.get();
                stream.serialize_int(&mut value, <$t>::MIN, <$t>::MAX)?;
                this.set(value);
                Ok(())
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
    #[inline(always)]
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut value = *this.get();
        stream.serialize_f32(&mut value)?;
        this.set(value);
        Ok(())
    }
}

impl NetMessage for f64 {
    const MAX_BITS: usize = 64;
    const MIN_BITS: usize = 64;
    const SCHEMA: &'static Schema = &Schema::F64;
    fn blank() -> Self {
        0.0
    }
    #[inline(always)]
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut value = *this.get();
        stream.serialize_f64(&mut value)?;
        this.set(value);
        Ok(())
    }
}

impl<T: NetMessage> NetMessage for Option<T> {
    const MAX_BITS: usize = 1 + T::MAX_BITS;
    const MIN_BITS: usize = 1;
    const SCHEMA: &'static Schema = &Schema::option(T::SCHEMA);
    fn blank() -> Self {
        None
    }
    #[inline(always)]
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut present = this.get().is_some();
        stream.serialize_bool(&mut present)?;
        if S::IS_READING && P::MUT {
            this.set(if present { Some(T::blank()) } else { None });
        }
        if present {
            match this.variant(Option::as_ref, Option::as_mut) {
                Some(value) => T::serialize_in(value, stream)?,
                // Only a reader given `&Self` gets here: it reads the value and drops it.
                None => T::serialize_in(&mut T::blank(), stream)?,
            }
        }
        Ok(())
    }
}

impl<T: NetMessage, const N: usize> NetMessage for [T; N] {
    const MAX_BITS: usize = N * T::MAX_BITS;
    const MIN_BITS: usize = N * T::MIN_BITS;
    const SCHEMA: &'static Schema = &Schema::array(N, T::SCHEMA);
    fn blank() -> Self {
        core::array::from_fn(|_| T::blank())
    }
    #[inline(always)]
    fn serialize_in<S: Stream, P: Place<Self>>(
        mut this: P,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        for i in 0..N {
            // Always `Some`: `i < N`.
            if let Some(item) =
                this.variant(|a| a.as_slice().get(i), |a| a.as_mut_slice().get_mut(i))
            {
                T::serialize_in(item, stream)?;
            }
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
            #[allow(unused_variables, unused_mut)]
            #[inline(always)]
            fn serialize_in<S: Stream, P: Place<Self>>(
                mut this: P,
                stream: &mut S,
            ) -> Result<(), S::Error> {
                $($name::serialize_in(this.field(|t| &t.$idx, |t| &mut t.$idx), stream)?;)*
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
