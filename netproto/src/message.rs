//! The [`NetMessage`] trait and its implementations for the building blocks.

use crate::stream::Stream;

/// A type with a wire format: one serialize function that writes, reads and measures.
///
/// Derive it with `#[derive(NetMessage)]`; the derive generates [`NetMessage::serialize`]
/// from the field annotations, [`NetMessage::MAX_BITS`] and [`NetMessage::MIN_BITS`] at
/// compile time, and [`NetMessage::blank`] (the value a reader fills in).
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
/// let bytes = netproto::encode(&mut PlayerInput { health: 42, jump: true }).unwrap();
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

    /// The value a reader starts from before it fills the fields in.
    fn blank() -> Self;

    /// Writes, reads or measures `self`, depending on the stream.
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error>;
}

impl NetMessage for bool {
    const MAX_BITS: usize = 1;
    const MIN_BITS: usize = 1;
    fn blank() -> Self {
        false
    }
    #[inline]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_bool(self)
    }
}

macro_rules! full_width_int {
    ($($t:ty),*) => {$(
        impl NetMessage for $t {
            const MAX_BITS: usize = <$t>::BITS as usize;
            const MIN_BITS: usize = <$t>::BITS as usize;
            fn blank() -> Self {
                0
            }
            #[inline]
            fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
                stream.serialize_int(self, <$t>::MIN, <$t>::MAX)
            }
        }
    )*};
}

full_width_int!(u8, u16, u32, u64, i8, i16, i32, i64);

impl NetMessage for f32 {
    const MAX_BITS: usize = 32;
    const MIN_BITS: usize = 32;
    fn blank() -> Self {
        0.0
    }
    #[inline]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_f32(self)
    }
}

impl NetMessage for f64 {
    const MAX_BITS: usize = 64;
    const MIN_BITS: usize = 64;
    fn blank() -> Self {
        0.0
    }
    #[inline]
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_f64(self)
    }
}

impl<T: NetMessage> NetMessage for Option<T> {
    const MAX_BITS: usize = 1 + T::MAX_BITS;
    const MIN_BITS: usize = 1;
    fn blank() -> Self {
        None
    }
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        let mut present = self.is_some();
        stream.serialize_bool(&mut present)?;
        if S::IS_READING {
            *self = if present { Some(T::blank()) } else { None };
        }
        match self {
            Some(value) => value.serialize(stream),
            None => Ok(()),
        }
    }
}

impl<T: NetMessage, const N: usize> NetMessage for [T; N] {
    const MAX_BITS: usize = N * T::MAX_BITS;
    const MIN_BITS: usize = N * T::MIN_BITS;
    fn blank() -> Self {
        core::array::from_fn(|_| T::blank())
    }
    fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
        for item in self.iter_mut() {
            item.serialize(stream)?;
        }
        Ok(())
    }
}

macro_rules! tuple {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: NetMessage),*> NetMessage for ($($name,)*) {
            const MAX_BITS: usize = 0 $(+ $name::MAX_BITS)*;
            const MIN_BITS: usize = 0 $(+ $name::MIN_BITS)*;
            #[allow(clippy::unused_unit)]
            fn blank() -> Self {
                ($($name::blank(),)*)
            }
            #[allow(unused_variables)]
            fn serialize<S: Stream>(&mut self, stream: &mut S) -> Result<(), S::Error> {
                $(self.$idx.serialize(stream)?;)*
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
