//! The implementations of [`NetMessage`] for the building blocks (the trait is
//! defined with the [`Stream`] it runs on).

use crate::schema::{IntType, Schema};
use crate::stream::{NetMessage, Place, Stream};

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
