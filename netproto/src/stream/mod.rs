//! Bit streams: the [`Stream`] trait and its writer, reader and measurer, with the two
//! traits whose functions a stream runs, [`NetMessage`] and [`NetDelta`] (each names
//! the others, so they are defined together; all re-exported at the crate root or in
//! [`delta`](crate::delta)).

mod int;
mod measure;
mod place;
mod read;
mod write;

pub use int::RangedInt;
pub use measure::MeasureStream;
pub use place::Place;
pub use read::ReadStream;
pub use write::WriteStream;

use crate::bits::{bits_for_count, bits_required};
use crate::error::{ErrorKind, StreamError};
use crate::quantize::Quantization;
use crate::schema::Schema;

/// The tiers of [`Stream::serialize_relative`]: a flag bit, then `value - lo` in
/// `bits_required(lo, hi)` bits. A difference above the last tier sends the value itself
/// in 32 bits.
const RELATIVE_TIERS: [(u32, u32); 5] = [(2, 6), (7, 23), (24, 280), (281, 4377), (4378, 69914)];

/// A bit stream that a serialize function writes to, reads from or measures.
///
/// The three implementations are [`WriteStream`], [`ReadStream`] and [`MeasureStream`].
/// Required methods are the handful of primitives each stream implements; every other
/// method is written once, here, in terms of them, so that all three streams agree on
/// the wire format by construction.
///
/// Values are passed as `&mut`: the writer and measurer read them, the reader fills them.
///
/// One serialize function, generic over [`Stream`], describes a message's wire format;
/// running it with a [`WriteStream`] writes bits, with a [`ReadStream`] reads (and
/// validates) them, with a [`MeasureStream`] counts them. The wire rules are those of
/// the reference C++ `serialize` library: bits are packed least-significant first into
/// little-endian bytes, ranged integers are sent as `value - min` in
/// [`bits_required(min, max)`](crate::bits_required) bits, and the reader rejects,
/// never clamps, anything outside its range.
///
/// # Rules for implementations
///
/// Derived serialize functions pick their code path from the three constants, at compile
/// time, and rely on these rules:
///
/// - At most one of [`Stream::IS_WRITING`] and [`Stream::IS_READING`] is true.
/// - A stream with **neither** set is a *measurer*: it counts the bits it is given and
///   never fails on the values.
/// - [`Stream::serialize_message`] runs a whole message's serialize function; a stream
///   may override it with a faster stream of its own around itself ([`WriteStream`] and
///   [`ReadStream`] do), which must write or read the same bits with the same errors.
/// - With [`Stream::TRACING`] set, the derive calls [`Stream::begin_field`] and
///   [`Stream::end_field`] around every sent field (see them for the exact contract).
///
/// Every derived field is one statement, the same for reading, writing, measuring and
/// tracing: the value is found through a [`Place`] (`&T` to write or measure, `&mut T`
/// to read).
pub trait Stream: Sized {
    /// The error of this stream: [`crate::StreamError`] for the writer and reader,
    /// [`core::convert::Infallible`] for the measurer (its `?` compiles away).
    type Error: Copy + core::fmt::Debug;

    /// True for [`WriteStream`]: the stream takes the values from the message (the
    /// crate's channels also check a message before queueing it with a stream that
    /// takes them as the writer does and writes nothing).
    const IS_WRITING: bool;
    /// True for [`ReadStream`].
    const IS_READING: bool;
    /// True for streams that want [`Stream::begin_field`] / [`Stream::end_field`] calls
    /// for every field (the wire-layout tracer). When false, the derive's calls to them
    /// compile away.
    const TRACING: bool = false;

    /// Serializes the low `bits` bits (1..=64) of `value`; a value of more than 32 bits
    /// goes as its low 32 bits, then the high ones.
    ///
    /// The writer rejects a value with bits set above `bits` with
    /// [`ErrorKind::OutOfRange`] rather than send some other value; the writer and reader
    /// reject a width outside `1..=64` the same way (the measurer validates nothing).
    fn serialize_bits(&mut self, value: &mut u64, bits: u32) -> Result<(), Self::Error>;

    /// Pads with zero bits to the next byte boundary. The reader rejects non-zero padding;
    /// the measurer charges 7 bits whatever the position (it is an upper bound).
    fn serialize_align(&mut self) -> Result<(), Self::Error>;

    /// Aligns, then reads raw bytes into `bytes` (a reader given `&mut [u8]`), or
    /// writes or measures them (`&[u8]` is enough). A reader given `&[u8]` reads past as
    /// many bytes and stores nothing.
    fn serialize_bytes<P: Place<[u8]>>(&mut self, bytes: P) -> Result<(), Self::Error>;

    /// Fails with `kind` when `ok` is false, on the writer and the reader; the measurer
    /// validates nothing.
    fn check(&self, ok: bool, kind: ErrorKind) -> Result<(), Self::Error>;

    /// Attributes `err` to a field (`"Type.field"`) unless an inner field already has it.
    fn in_field(err: Self::Error, field: &'static str) -> Self::Error;

    /// Bits written, read or measured so far.
    fn bits_processed(&self) -> usize;

    /// Bits that can still be written or read (`usize::MAX` for the measurer).
    fn bits_remaining(&self) -> usize;

    /// Called by derived code just before a field's bits, only when [`Stream::TRACING`] is
    /// set.
    ///
    /// `name` is the bare field name as declared: `"damage"` for a named field, `"0"`,
    /// `"1"`, ... for a tuple field; not the `"Type.field"` path that errors carry. Every
    /// sent field gets exactly one `begin_field` and, once its bits are done, one
    /// [`Stream::end_field`]; a skipped field (`#[net(skip)]`) gets neither. A nested
    /// type's fields are reported between the calls of the field that holds it, so the
    /// calls nest like the types. An enum's variant index gets no call of its own: its
    /// bits belong to the field that holds the enum (or come first, at the top level),
    /// and the fields of the variant follow, named as declared in the variant. Elements of
    /// arrays, tuples, `Option`s and `Vec`s get no call of their own either (a derived
    /// type among them reports its own fields as usual). If a field fails, its
    /// `end_field` is not called: the error is returned at once.
    ///
    /// The default does nothing.
    #[inline(always)]
    fn begin_field(&mut self, _name: &'static str) {}

    /// Called by derived code just after a field's bits, only when [`Stream::TRACING`] is
    /// set: closes the innermost [`Stream::begin_field`]. The default does nothing.
    #[inline(always)]
    fn end_field(&mut self) {}

    /// Called by the delta functions ([`crate::delta`]) only when [`Stream::TRACING`] is
    /// set, just before a field's [`Stream::end_field`]: what the field's bits mean when
    /// that is not the integer they carry (a delta code's difference, `+3`; a gap-coded
    /// id, `id 40`). [`WireView`](crate::WireView) shows it beside the value. The
    /// default does nothing.
    #[inline(always)]
    fn annotate(&mut self, _meaning: core::fmt::Arguments<'_>) {}

    /// Runs `M`'s serialize function, [`NetMessage::serialize_in`], on this stream for
    /// the message in `message` (`&M` to write or measure, `&mut M` to read): what
    /// [`NetMessage::serialize`] and [`NetMessage::write`] call.
    ///
    /// The default runs it on `self`. [`WriteStream`] overrides it with its fast path:
    /// with room for `M::MAX_BITS` the function runs on a word packer around the writer
    /// (one capacity check per 64-bit word instead of per field); [`ReadStream`] with
    /// its own: the function runs on a word reader around the reader (one end check and
    /// load per word). The bits, values, errors (field paths included) and final
    /// positions are those of the plain stream. Serialize functions call `serialize_in`
    /// for their nested values, never this, so the dispatch happens once per message.
    #[inline(always)]
    fn serialize_message<M: NetMessage, P: Place<M>>(
        &mut self,
        message: P,
    ) -> Result<(), Self::Error> {
        M::serialize_in(message, self)
    }

    /// Runs `T`'s delta function, [`NetDelta::serialize_delta_in`], on this stream for
    /// the value in `value` against `base`: what [`NetDelta::write_delta`] and
    /// [`NetDelta::read_delta`] call, and what [`Entities`](crate::delta::Entities) calls
    /// for each entity it sends.
    ///
    /// The default runs it on `self`; [`WriteStream`] overrides it with the word packer
    /// of [`Stream::serialize_message`], with room for `T::DELTA_MAX_BITS`. Same bits,
    /// errors and positions as the plain stream.
    #[inline(always)]
    fn serialize_delta<T: NetDelta, P: Place<T>>(
        &mut self,
        value: P,
        base: &T,
    ) -> Result<(), Self::Error> {
        T::serialize_delta_in(value, base, self)
    }

    /// A bool, as one bit.
    #[inline(always)]
    fn serialize_bool(&mut self, value: &mut bool) -> Result<(), Self::Error> {
        let mut bit = u64::from(*value);
        self.serialize_bits(&mut bit, 1)?;
        if Self::IS_READING {
            *value = bit != 0;
        }
        Ok(())
    }

    /// An integer in `[min, max]`, sent as `value - min` in `bits_required(min, max)` bits
    /// (0 bits for `min == max`). The writer rejects a value outside the range, the reader
    /// one in the bit headroom above `max - min`.
    #[inline(always)]
    fn serialize_int<T: RangedInt>(
        &mut self,
        value: &mut T,
        min: T,
        max: T,
    ) -> Result<(), Self::Error> {
        let span = max.offset_from(min);
        let bits = bits_required(0, span);
        // A reader starts from 0, never from the blank it fills: with a degenerate range
        // (0 bits) nothing is read and the value is `min`.
        let mut offset = if Self::IS_READING {
            0
        } else {
            value.offset_from(min)
        };
        if !Self::IS_READING {
            self.check(offset <= span, ErrorKind::OutOfRange)?;
        }
        if bits > 0 {
            self.serialize_bits(&mut offset, bits)?;
        }
        if Self::IS_READING {
            self.check(offset <= span, ErrorKind::OutOfRange)?;
            *value = T::from_offset(min, offset);
        }
        Ok(())
    }

    /// An index in `[0, count - 1]` (an enum variant or a message type id), rejected with
    /// [`ErrorKind::UnknownVariant`] when out of range.
    #[inline(always)]
    fn serialize_index(&mut self, index: &mut u32, count: u32) -> Result<(), Self::Error> {
        let bits = bits_for_count(u64::from(count));
        let mut wide = if Self::IS_READING {
            0
        } else {
            u64::from(*index)
        };
        if !Self::IS_READING {
            self.check(wide < u64::from(count), ErrorKind::UnknownVariant)?;
        }
        if bits > 0 {
            self.serialize_bits(&mut wide, bits)?;
        }
        if Self::IS_READING {
            self.check(wide < u64::from(count), ErrorKind::UnknownVariant)?;
            // In range, so it fits.
            *index = wide as u32;
        }
        Ok(())
    }

    /// A raw `f32`: its 32 IEEE bits, never canonicalised (NaN payloads survive).
    #[inline(always)]
    fn serialize_f32(&mut self, value: &mut f32) -> Result<(), Self::Error> {
        let mut bits = u64::from(value.to_bits());
        self.serialize_bits(&mut bits, 32)?;
        if Self::IS_READING {
            *value = f32::from_bits(bits as u32);
        }
        Ok(())
    }

    /// A raw `f64`: its 64 IEEE bits.
    #[inline(always)]
    fn serialize_f64(&mut self, value: &mut f64) -> Result<(), Self::Error> {
        let mut bits = value.to_bits();
        self.serialize_bits(&mut bits, 64)?;
        if Self::IS_READING {
            *value = f64::from_bits(bits);
        }
        Ok(())
    }

    /// A quantized `f32` (see [`Quantization`]). The writer rejects a value outside
    /// `[min, max]` or NaN; the reader rejects an integer above `max_int`.
    #[inline(always)]
    fn serialize_quantized(
        &mut self,
        value: &mut f32,
        quantization: &Quantization,
    ) -> Result<(), Self::Error> {
        let mut q = 0u64;
        if Self::IS_WRITING {
            self.check(quantization.contains(*value), ErrorKind::OutOfRange)?;
            q = u64::from(quantization.quantize_contained(*value));
        }
        self.serialize_bits(&mut q, quantization.bits())?;
        if Self::IS_READING {
            self.check(
                q <= u64::from(quantization.max_int()),
                ErrorKind::OutOfRange,
            )?;
            *value = quantization.dequantize(q as u32);
        }
        Ok(())
    }

    /// A value known to be greater than `previous`, sent as a ladder of flag bits and
    /// tiers of ranged differences (1 bit for `previous + 1`); a difference above 69914
    /// sends the value itself in 32 bits. Byte-compatible with the reference
    /// `serialize_int_relative`.
    fn serialize_relative(&mut self, previous: u32, current: &mut u32) -> Result<(), Self::Error> {
        let difference = current.wrapping_sub(previous);
        if !Self::IS_READING {
            self.check(*current > previous, ErrorKind::NotIncreasing)?;
        }
        let mut one = difference == 1;
        self.serialize_bool(&mut one)?;
        if one {
            if Self::IS_READING {
                *current = previous.checked_add(1).unwrap_or(previous);
                self.check(*current != previous, ErrorKind::NotIncreasing)?;
            }
            return Ok(());
        }
        for (lo, hi) in RELATIVE_TIERS {
            let mut in_tier = difference <= hi;
            self.serialize_bool(&mut in_tier)?;
            if in_tier {
                let mut d = difference;
                self.serialize_int(&mut d, lo, hi)?;
                if Self::IS_READING {
                    let next = previous.checked_add(d);
                    self.check(next.is_some(), ErrorKind::NotIncreasing)?;
                    *current = next.unwrap_or(previous);
                }
                return Ok(());
            }
        }
        let mut raw = u64::from(*current);
        self.serialize_bits(&mut raw, 32)?;
        if Self::IS_READING {
            *current = raw as u32;
            self.check(*current > previous, ErrorKind::NotIncreasing)?;
        }
        Ok(())
    }

    /// A length in `[0, max_len]`, rejected with [`ErrorKind::TooLong`] above `max_len`.
    #[inline(always)]
    fn serialize_len(&mut self, len: &mut usize, max_len: usize) -> Result<(), Self::Error> {
        let bits = bits_required(0, max_len as u64);
        let mut wide = if Self::IS_READING { 0 } else { *len as u64 };
        if !Self::IS_READING {
            self.check(wide <= max_len as u64, ErrorKind::TooLong)?;
        }
        if bits > 0 {
            self.serialize_bits(&mut wide, bits)?;
        }
        if Self::IS_READING {
            self.check(wide <= max_len as u64, ErrorKind::TooLong)?;
            *len = wide as usize;
        }
        Ok(())
    }

    /// A string of at most `max_len` bytes: the length in `[0, max_len]`, an align, then
    /// the UTF-8 bytes. The reader rejects invalid UTF-8 and NUL bytes, and checks that
    /// the bytes are there before it allocates (reusing the string's capacity); the writer
    /// refuses a NUL byte too, so it never writes what a reader would reject.
    ///
    /// `value` is `&String` to write or measure, `&mut String` to read (a reader given
    /// `&String` reads and validates a string and drops it).
    #[inline(always)]
    fn serialize_string<P: Place<String>>(
        &mut self,
        mut value: P,
        max_len: usize,
    ) -> Result<(), Self::Error> {
        if !Self::IS_READING {
            let value = value.get().as_bytes();
            // Before anything goes on the wire: a failed write leaves nothing half-written.
            self.check(!has_nul_out_of_line(value), ErrorKind::InvalidString)?;
            let mut len = value.len();
            self.serialize_len(&mut len, max_len)?;
            return self.serialize_bytes(value);
        }
        let mut scratch = String::new();
        let value = match value.get_mut() {
            Some(value) => value,
            None => &mut scratch,
        };
        let mut len = 0;
        self.serialize_len(&mut len, max_len)?;
        self.serialize_align()?;
        self.check(len <= self.bits_remaining() / 8, ErrorKind::PastEnd)?;
        // Into the string's own buffer: a reused message allocates nothing. On any
        // failure below the string is left empty, never holding unchecked bytes.
        let mut bytes = core::mem::take(value).into_bytes();
        bytes.clear();
        bytes.resize(len, 0);
        self.serialize_bytes(&mut bytes[..])?;
        self.check(!has_nul(&bytes), ErrorKind::InvalidString)?;
        match String::from_utf8(bytes) {
            Ok(s) => *value = s,
            Err(_) => self.check(false, ErrorKind::InvalidString)?,
        }
        Ok(())
    }

    /// A sequence of at most `max_len` elements: the length in `[0, max_len]`, then each
    /// element. The reader rejects a length the remaining bits cannot hold (at
    /// `T::MIN_BITS` each) before reserving anything, and reserves up front no more
    /// memory than the remaining input has bytes; beyond that the vector grows only as
    /// elements are actually read.
    ///
    /// `value` is `&Vec<T>` to write or measure, `&mut Vec<T>` to read (a reader given
    /// `&Vec<T>` reads and validates the elements and drops them).
    #[inline(always)]
    fn serialize_vec<T: NetMessage, P: Place<Vec<T>>>(
        &mut self,
        mut value: P,
        max_len: usize,
    ) -> Result<(), Self::Error> {
        if !Self::IS_READING {
            let value = value.get();
            let mut len = value.len();
            self.serialize_len(&mut len, max_len)?;
            for item in value {
                T::serialize_in(item, self)?;
            }
            return Ok(());
        }
        let mut scratch = Vec::new();
        let value = match value.get_mut() {
            Some(value) => value,
            None => &mut scratch,
        };
        let mut len = 0;
        self.serialize_len(&mut len, max_len)?;
        let per_item = T::MIN_BITS.max(1);
        self.check(
            T::MIN_BITS == 0 || len <= self.bits_remaining() / per_item,
            ErrorKind::PastEnd,
        )?;
        value.clear();
        // A 1-bit `Option<[u64; 1000]>` must not turn a 1 KB packet into a 64 MB
        // reservation that the attacker never has to fill.
        let by_memory = (self.bits_remaining() / 8).max(64) / size_of::<T>().max(1);
        let reserve = len.min(self.bits_remaining() / per_item).min(by_memory);
        if value.capacity() == 0 {
            // Straight to the allocator: `reserve` on an empty vector takes the
            // out-of-line growth path.
            *value = Vec::with_capacity(reserve);
        } else {
            value.reserve(reserve);
        }
        for _ in 0..len {
            let mut item = T::blank();
            T::serialize_in(&mut item, self)?;
            value.push(item);
        }
        Ok(())
    }
}

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

/// A type with a delta form against a baseline: one function that writes, reads and
/// measures what changed.
///
/// Derive it with `#[derive(NetMessage)]` and `#[net(delta)]` on the type (see the
/// [module](crate::delta)). The module implements it for `bool`, the fixed-width
/// integers, `f32`, `f64` (sent whole when changed), `Option<T>` and `[T; N]` (of
/// `NetDelta` types), and [`Entities`](crate::delta::Entities).
///
/// The contract between a value and its container: [`NetDelta::serialize_delta_in`]
/// sends no "changed" bit of its own for the value as a whole. A container (a derived
/// struct's field, an entity collection's changed list) decides with
/// [`NetDelta::delta_changed`] and sends the bit, or the id, itself; the top-level
/// functions ([`NetDelta::write_delta`], [`encode_delta`](crate::delta::encode_delta)) send the value's delta form
/// directly.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no delta form (`NetDelta`)",
    label = "a field of a #[net(delta)] type needs a delta form",
    note = "derive it: `#[derive(NetMessage, Clone)]` with `#[net(delta)]` on `{Self}`"
)]
pub trait NetDelta: NetMessage + Clone {
    /// An upper bound of the bits [`NetDelta::serialize_delta_in`] writes (every align
    /// counted as 7 bits), computed at compile time.
    const DELTA_MAX_BITS: usize;

    /// Whether `self` differs from `base` in what the wire carries (quantized floats
    /// compare their quantized steps, skipped fields are ignored). A writer sends an
    /// unchanged value as one bit.
    fn delta_changed(&self, base: &Self) -> bool;

    /// The one delta function: writes, reads or measures the value in `this` against
    /// `base`, depending on the stream (`this` is a [`Place`], as for
    /// [`NetMessage::serialize_in`]: `&Self` to write or measure, `&mut Self` to read).
    /// A reader overwrites every part of the value (from the wire or from `base`); on
    /// error the value is left valid but unspecified.
    fn serialize_delta_in<S: Stream, P: Place<Self>>(
        this: P,
        base: &Self,
        stream: &mut S,
    ) -> Result<(), S::Error>;

    /// Writes (or measures) `self` against `base`.
    #[inline]
    fn write_delta<S: Stream>(&self, base: &Self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_delta(self, base)
    }

    /// Reads a delta against `base` into `self` (every part of `self` is overwritten;
    /// its allocations are reused).
    #[inline]
    fn read_delta<S: Stream>(&mut self, base: &Self, stream: &mut S) -> Result<(), S::Error> {
        stream.serialize_delta(self, base)
    }

    /// The bits [`NetDelta::write_delta`] writes for `self` against `base` (an upper
    /// bound when the value holds aligned data: strings, bytes).
    fn measure_delta(&self, base: &Self) -> usize {
        let mut stream = MeasureStream::new();
        match Self::serialize_delta_in(self, base, &mut stream) {
            Ok(()) => stream.bits_processed(),
            Err(never) => match never {},
        }
    }
}

/// [`ErrorKind::OutOfRange`], out of line: the word writer's error for a width outside
/// `1..=64` or a value wider than its width, the word reader's for such a width.
#[cold]
#[inline(never)]
fn out_of_range() -> StreamError {
    StreamError::new(ErrorKind::OutOfRange)
}

/// [`has_nul`] out of line, for the writer: inlined into the encode loop, its two 64-bit
/// constants were hoisted out of the caller's loop over messages and held two registers
/// through every message, strings or not (callgrind: register moves on every field of
/// the encode loop; 8 to 18 instructions per message more than with the call). The
/// reader keeps it inline (a decode of a message alone was 3% slower with the call).
#[inline(never)]
fn has_nul_out_of_line(bytes: &[u8]) -> bool {
    has_nul(bytes)
}

/// Whether `bytes` holds a NUL byte: eight bytes at a time (game strings are short, and
/// a call to `memchr` cost more than the scan).
#[inline]
fn has_nul(bytes: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut found = false;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // A byte of x is zero iff its bit 7 is set here (exact, no false positives when
        // tested as "any": a borrow only propagates above a zero byte).
        found |= x.wrapping_sub(LOW) & !x & HIGH != 0;
    }
    // Not `contains`: that is a call to `memchr`, for fewer than 8 bytes.
    chunks
        .remainder()
        .iter()
        .fold(found, |found, &b| found | (b == 0))
}

/// A bit-at-a-time model of the wire format and a small PRNG, for the unit tests of the
/// word-level writer and reader.
#[cfg(test)]
pub(crate) mod model {
    /// splitmix64: deterministic test data without a dependency.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// A value of exactly `bits` bits (1..=64).
        pub(crate) fn bits(&mut self, bits: u32) -> u64 {
            self.next() >> (64 - bits)
        }

        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Packs `(value, bits)` chunks least-significant bit first, one bit at a time: bit
    /// `k` of the stream is bit `k % 8` of byte `k / 8`.
    pub(crate) fn pack(chunks: &[(u64, u32)]) -> Vec<u8> {
        let total: u32 = chunks.iter().map(|c| c.1).sum();
        let mut out = vec![0u8; total.div_ceil(8) as usize];
        let mut k = 0usize;
        for &(value, bits) in chunks {
            for i in 0..bits {
                if value >> i & 1 == 1 {
                    out[k / 8] |= 1 << (k % 8);
                }
                k += 1;
            }
        }
        out
    }

    /// Bit `k` of `bytes` in stream order.
    pub(crate) fn bit(bytes: &[u8], k: usize) -> u64 {
        u64::from(bytes[k / 8] >> (k % 8) & 1)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_range_reads_min_whatever_the_slot_held() {
        // 0 bits on the wire: the reader must produce `min`, not judge the old value.
        let mut r = ReadStream::new(&[]);
        let mut v = 12345i32;
        r.serialize_int(&mut v, 628_705_851, 628_705_851).unwrap();
        assert_eq!(v, 628_705_851);
        let mut len = 7usize;
        r.serialize_len(&mut len, 0).unwrap();
        assert_eq!(len, 0);
        let mut index = 3u32;
        r.serialize_index(&mut index, 1).unwrap();
        assert_eq!(index, 0);
        let mut s = String::from("stale");
        r.serialize_string(&mut s, 0).unwrap();
        assert_eq!(s, "");
        assert_eq!(r.bits_processed(), 0);
    }

    #[test]
    fn has_nul_agrees_with_a_byte_scan() {
        let mut rng = model::Rng(21);
        for len in 0..40usize {
            for _ in 0..200 {
                // Mostly bytes near 0x00, 0x01, 0x80 and 0xFF, where a word trick can err.
                let bytes: Vec<u8> = (0..len)
                    .map(|_| match rng.below(5) {
                        0 => 0x01,
                        1 => 0x80,
                        2 => 0xFF,
                        3 => rng.next() as u8,
                        _ => (rng.below(2) as u8) << 7,
                    })
                    .collect();
                assert_eq!(has_nul(&bytes), bytes.contains(&0), "{bytes:?}");
                let mut clean: Vec<u8> = bytes.iter().map(|&b| b.max(1)).collect();
                assert!(!has_nul(&clean));
                if len > 0 {
                    let at = rng.below(len as u64) as usize;
                    clean[at] = 0;
                    assert!(has_nul(&clean), "NUL at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn a_rejected_string_writes_nothing() {
        let mut buf = [0u8; 16];
        let mut w = WriteStream::new(&mut buf);
        let e = w.serialize_string(&mut "a\0b".into(), 10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidString);
        let e = w.serialize_string(&mut "too long".into(), 3).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TooLong);
        assert_eq!(w.bits_processed(), 0);
    }

    #[test]
    fn vec_reservation_is_bounded_by_the_input_bytes() {
        // 1000 bytes: a 13-bit length of 7999 (each `None` costs 1 bit, so it passes the
        // length check), then a `Some` whose 64000 bits are not there.
        let mut buf = [0u8; 1000];
        let mut w = WriteStream::new(&mut buf);
        w.serialize_len(&mut 7999, 8000).unwrap();
        w.serialize_bool(&mut true).unwrap();
        w.finish();
        let mut v: Vec<Option<[u64; 1000]>> = Vec::new();
        let e = ReadStream::new(&buf)
            .serialize_vec(&mut v, 8000)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PastEnd);
        // 8000 elements of 8008 bytes would be 64 MB; the input justifies 1 KB.
        assert!(v.capacity() * size_of::<Option<[u64; 1000]>>() <= 1000);
    }
}
