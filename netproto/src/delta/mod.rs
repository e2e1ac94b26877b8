//! Delta encoding: a value sent as what changed since a baseline both ends hold.
//!
//! [`NetDelta`] is the delta twin of [`NetMessage`]: one function,
//! [`NetDelta::serialize_delta_in`], writes, reads or measures a value against a
//! baseline, depending on the stream. `#[derive(NetMessage)]` generates it for a type
//! marked `#[net(delta)]`, from the same field model as `serialize_in`:
//!
//! - every sent field costs one "changed" bit; an unchanged field costs only that bit
//!   and the reader takes the baseline's value;
//! - a changed ranged integer or quantized float with a declared delta range
//!   (`#[net(delta = -31..=31)]`, in quantized units) sends the difference as one code:
//!   the codes are the nonzero differences in the range, then an escape code that says
//!   the absolute value follows (a difference outside the range). The code takes
//!   [`delta_code_bits`]`(lo, hi)` bits: 6 for `-31..=31`, whose escape takes the place
//!   0 would have had (a changed value never differs by 0);
//! - any other changed field goes whole (its `NetMessage` form), except a nested type
//!   implementing `NetDelta`, which recurses: its own changed bit, then its fields'
//!   delta form.
//!
//! The reader rejects a delta that lands outside the field's range
//! ([`ErrorKind::OutOfRange`](crate::ErrorKind)); nothing is clamped.
//!
//! [`Entities`] is a keyed collection with a delta form (removed ids, changed entities as
//! deltas, added entities whole, ids gap-coded).
//!
//! ```
//! use netproto::NetMessage;
//! use netproto::delta::{NetDelta, decode_delta, encode_delta};
//!
//! #[derive(NetMessage, Clone, Debug, PartialEq)]
//! #[net(delta)]
//! struct Player {
//!     #[net(range = 0..=1000, delta = -15..=15)]
//!     x: u16,
//!     #[net(range = 0..=100)]
//!     health: u8,
//!     alive: bool,
//! }
//!
//! let base = Player { x: 500, health: 100, alive: true };
//! let now = Player { x: 507, health: 100, alive: true };
//! // x: changed, a 5-bit delta code (30 nonzero differences and the escape);
//! // health: unchanged; alive: unchanged.
//! assert_eq!(now.measure_delta(&base), 1 + 5 + 1 + 1);
//! let bytes = encode_delta(&now, &base).unwrap();
//! assert_eq!(decode_delta(&bytes, &base).unwrap(), now);
//! ```

pub mod baseline;
mod entities;
mod field;

pub use crate::stream::NetDelta;
pub use baseline::{
    AppliedSnapshot, DEFAULT_RING, ReceiverStats, SenderStats, SentSnapshot, SnapshotHeader,
    SnapshotReceiver, SnapshotRefused, SnapshotSender,
};
pub use entities::Entities;
pub use field::{
    changed_bit, delta_code_bits, field, int, quantized, quantized_changed, sequence, string,
};

use crate::error::{ErrorKind, StreamError};
use crate::stream::{NetMessage, Place, ReadStream, Stream, WriteStream};
use crate::wire_view::WireView;

/// Encodes `current` against `base` into a new byte vector of
/// `T::DELTA_MAX_BITS.div_ceil(8)` bytes, truncated to what was written.
///
/// Fails when a field of `current` is outside its declared range (the error names it).
pub fn encode_delta<T: NetDelta>(current: &T, base: &T) -> Result<Vec<u8>, StreamError> {
    let mut buf = vec![0u8; T::DELTA_MAX_BITS.div_ceil(8)];
    let len = encode_delta_into(current, base, &mut buf)?;
    buf.truncate(len);
    Ok(buf)
}

/// Encodes `current` against `base` into `buf` and returns the bytes written; fails with
/// [`ErrorKind::BufferFull`] when `buf` is too small.
pub fn encode_delta_into<T: NetDelta>(
    current: &T,
    base: &T,
    buf: &mut [u8],
) -> Result<usize, StreamError> {
    let mut stream = WriteStream::new(buf);
    current.write_delta(base, &mut stream)?;
    Ok(stream.finish())
}

/// Decodes a delta against `base` that must fill `bytes` exactly (up to the zero
/// padding of its last byte), like [`decode`](crate::decode).
///
/// Never panics, rejects values outside their ranges, and never allocates more than
/// the input and the baseline justify.
pub fn decode_delta<T: NetDelta>(bytes: &[u8], base: &T) -> Result<T, StreamError> {
    let mut value = T::blank();
    decode_delta_into(&mut value, bytes, base)?;
    Ok(value)
}

/// [`decode_delta`] into an existing value, reusing its allocations (a snapshot ring
/// decodes into its slots without allocating in steady state). On error `value` is
/// valid but unspecified.
pub fn decode_delta_into<T: NetDelta>(
    value: &mut T,
    bytes: &[u8],
    base: &T,
) -> Result<(), StreamError> {
    let mut stream = ReadStream::new(bytes);
    value.read_delta(base, &mut stream)?;
    if stream.bytes_read() != bytes.len() {
        return Err(StreamError::new(ErrorKind::TrailingBytes));
    }
    Ok(())
}

impl WireView {
    /// The wire form of `current`'s delta against `base`, field by field: each field's
    /// `changed` bit, then for a ranged field with a delta range its `delta` code, or the
    /// `escape` code and the `value`, the whole value for others; for [`Entities`]
    /// the `removed`, `changed` and `added` lists with their counts, Exp-Golomb
    /// parameter `k` and gap-coded ids. A delta code's row shows the difference it
    /// carries after its code (`82 (+20)`), a gap-coded id's row the id (`5 (id 40)`).
    pub fn of_delta<T: NetDelta>(current: &T, base: &T) -> Result<Self, StreamError> {
        Self::traced(T::DELTA_MAX_BITS, |tracer| {
            current.write_delta(base, tracer)
        })
        .map(|view| view.named(core::any::type_name::<T>()))
    }
}

macro_rules! whole_delta {
    ($($t:ty),*) => {$(
        impl NetDelta for $t {
            const DELTA_MAX_BITS: usize = <$t as NetMessage>::MAX_BITS;
            #[inline(always)]
            fn delta_changed(&self, base: &Self) -> bool {
                self != base
            }
            #[inline(always)]
            fn serialize_delta_in<S: Stream, P: Place<Self>>(
                this: P,
                _base: &Self,
                stream: &mut S,
            ) -> Result<(), S::Error> {
                Self::serialize_in(this, stream)
            }
        }
    )*};
}

whole_delta!(bool, u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float_delta {
    ($($t:ty),*) => {$(
        /// Raw IEEE bits: changed when the bits differ (a NaN equals itself).
        impl NetDelta for $t {
            const DELTA_MAX_BITS: usize = <$t as NetMessage>::MAX_BITS;
            #[inline(always)]
            fn delta_changed(&self, base: &Self) -> bool {
                self.to_bits() != base.to_bits()
            }
            #[inline(always)]
            fn serialize_delta_in<S: Stream, P: Place<Self>>(
                this: P,
                _base: &Self,
                stream: &mut S,
            ) -> Result<(), S::Error> {
                Self::serialize_in(this, stream)
            }
        }
    )*};
}

float_delta!(f32, f64);

/// A presence bit, then the value: its delta against the baseline's when both are
/// `Some`, whole when the baseline is `None`.
impl<T: NetDelta> NetDelta for Option<T> {
    const DELTA_MAX_BITS: usize = 1 + max(T::DELTA_MAX_BITS, T::MAX_BITS);
    fn delta_changed(&self, base: &Self) -> bool {
        match (self, base) {
            (Some(a), Some(b)) => a.delta_changed(b),
            (None, None) => false,
            _ => true,
        }
    }
    fn serialize_delta_in<S: Stream, P: Place<Self>>(
        mut this: P,
        base: &Self,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        let mut present = this.get().is_some();
        stream.serialize_bool(&mut present)?;
        if !present {
            this.set(None);
            return Ok(());
        }
        if S::IS_READING && P::MUT && this.get().is_none() {
            this.set(Some(T::blank()));
        }
        let mut scratch = None;
        let value = match this.variant(Option::as_ref, Option::as_mut) {
            Some(value) => value,
            // Only a reader given `&Self` gets here: it reads the value and drops it.
            None => return read_dropped(base.as_ref(), stream, &mut scratch),
        };
        match base {
            Some(base) => T::serialize_delta_in(value, base, stream),
            None => T::serialize_in(value, stream),
        }
    }
}

/// A reader given `&Option<T>` reads the value into a scratch and drops it.
fn read_dropped<T: NetDelta, S: Stream>(
    base: Option<&T>,
    stream: &mut S,
    scratch: &mut Option<T>,
) -> Result<(), S::Error> {
    let value = scratch.insert(T::blank());
    match base {
        Some(base) => T::serialize_delta_in(value, base, stream),
        None => T::serialize_in(value, stream),
    }
}

/// Each element's changed bit, then the changed elements' delta form.
impl<T: NetDelta, const N: usize> NetDelta for [T; N] {
    const DELTA_MAX_BITS: usize = N * (1 + T::DELTA_MAX_BITS);
    fn delta_changed(&self, base: &Self) -> bool {
        self.iter().zip(base).any(|(a, b)| a.delta_changed(b))
    }
    fn serialize_delta_in<S: Stream, P: Place<Self>>(
        mut this: P,
        base: &Self,
        stream: &mut S,
    ) -> Result<(), S::Error> {
        for (i, base) in base.iter().enumerate() {
            // Always `Some`: `i < N`.
            if let Some(item) =
                this.variant(|a| a.as_slice().get(i), |a| a.as_mut_slice().get_mut(i))
            {
                field(stream, item, base)?;
            }
        }
        Ok(())
    }
}

/// The larger of two sizes, in `const`.
pub(crate) const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

#[cfg(test)]
mod tests;
