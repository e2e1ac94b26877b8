//! [`Place`]: where a serialize function finds its value, `&T` (write, measure) or
//! `&mut T` (read).

mod sealed {
    /// Only `&T` and `&mut T` are places.
    pub trait Sealed {}
    impl<T: ?Sized> Sealed for &T {}
    impl<T: ?Sized> Sealed for &mut T {}
}

/// Where a serialize function finds its value: `&T` when writing or measuring (it only
/// looks), `&mut T` when reading (it fills the value in). Sealed: only those two.
///
/// This is what lets one function, [`NetMessage::serialize_in`](crate::NetMessage::serialize_in),
/// serve [`NetMessage::serialize`](crate::NetMessage::serialize) (`&mut self`: reads)
/// and [`NetMessage::write`](crate::NetMessage::write) (`&self`: writes and measures).
/// A leaf is value-based: it copies the value out ([`Place::get`]), runs the stream on
/// the copy, and stores it back ([`Place::set`], which does nothing for `&T`):
///
/// ```
/// use netproto::{NetMessage, Place, Stream};
///
/// struct Health(u8);
///
/// impl NetMessage for Health {
///     const MAX_BITS: usize = 7;
///     const MIN_BITS: usize = 7;
///     fn blank() -> Self {
///         Health(0)
///     }
///     fn serialize_in<S: Stream, P: Place<Self>>(mut this: P, stream: &mut S) -> Result<(), S::Error> {
///         let mut value = this.get().0;
///         stream.serialize_int(&mut value, 0, 100)?;
///         this.set(Health(value));
///         Ok(())
///     }
/// }
///
/// let bytes = netproto::encode(&Health(42)).unwrap(); // from `&Health`
/// assert_eq!(netproto::decode::<Health>(&bytes).unwrap().0, 42); // into `&mut Health`
/// ```
///
/// Every method is `#[inline(always)]`: once inlined, a projection is a field access and
/// `set` through `&T` is nothing.
pub trait Place<T: ?Sized>: Sized + sealed::Sealed {
    /// The place of a part of `T` (a field, an element, a variant's field): `&U` inside
    /// `&T`, `&mut U` inside `&mut T`.
    type Field<'b, U: ?Sized + 'b>: Place<U>
    where
        Self: 'b;

    /// True for `&mut T`: the serialize function may store into it.
    const MUT: bool;

    /// The value.
    fn get(&self) -> &T;

    /// The value, mutably: `Some` only for `&mut T`.
    fn get_mut(&mut self) -> Option<&mut T>;

    /// Stores `value` through `&mut T`; does nothing through `&T`.
    fn set(&mut self, value: T)
    where
        T: Sized;

    /// The place of a part of the value: `by_ref` projects `&T`, `by_mut` projects
    /// `&mut T` (the same accessor twice, `|m| &m.f` and `|m| &mut m.f`); only the one
    /// matching the place runs.
    fn field<'b, U: ?Sized>(
        &'b mut self,
        by_ref: impl FnOnce(&T) -> &U,
        by_mut: impl FnOnce(&mut T) -> &mut U,
    ) -> Self::Field<'b, U>;

    /// The place of a part that may be absent (an enum variant's field, an `Option`'s
    /// value, an element by index): `None` when the projection finds nothing.
    fn variant<'b, U: ?Sized>(
        &'b mut self,
        by_ref: impl FnOnce(&T) -> Option<&U>,
        by_mut: impl FnOnce(&mut T) -> Option<&mut U>,
    ) -> Option<Self::Field<'b, U>>;
}

impl<T: ?Sized> Place<T> for &T {
    type Field<'b, U: ?Sized + 'b>
        = &'b U
    where
        Self: 'b;

    const MUT: bool = false;

    #[inline(always)]
    fn get(&self) -> &T {
        self
    }

    #[inline(always)]
    fn get_mut(&mut self) -> Option<&mut T> {
        None
    }

    #[inline(always)]
    fn set(&mut self, _value: T)
    where
        T: Sized,
    {
    }

    #[inline(always)]
    fn field<U: ?Sized>(
        &mut self,
        by_ref: impl FnOnce(&T) -> &U,
        _by_mut: impl FnOnce(&mut T) -> &mut U,
    ) -> &U {
        by_ref(*self)
    }

    #[inline(always)]
    fn variant<U: ?Sized>(
        &mut self,
        by_ref: impl FnOnce(&T) -> Option<&U>,
        _by_mut: impl FnOnce(&mut T) -> Option<&mut U>,
    ) -> Option<&U> {
        by_ref(*self)
    }
}

impl<T: ?Sized> Place<T> for &mut T {
    type Field<'b, U: ?Sized + 'b>
        = &'b mut U
    where
        Self: 'b;

    const MUT: bool = true;

    #[inline(always)]
    fn get(&self) -> &T {
        self
    }

    #[inline(always)]
    fn get_mut(&mut self) -> Option<&mut T> {
        Some(self)
    }

    #[inline(always)]
    fn set(&mut self, value: T)
    where
        T: Sized,
    {
        **self = value;
    }

    #[inline(always)]
    fn field<U: ?Sized>(
        &mut self,
        _by_ref: impl FnOnce(&T) -> &U,
        by_mut: impl FnOnce(&mut T) -> &mut U,
    ) -> &mut U {
        by_mut(self)
    }

    #[inline(always)]
    fn variant<U: ?Sized>(
        &mut self,
        _by_ref: impl FnOnce(&T) -> Option<&U>,
        by_mut: impl FnOnce(&mut T) -> Option<&mut U>,
    ) -> Option<&mut U> {
        by_mut(self)
    }
}
