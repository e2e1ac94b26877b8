//! The wire format of a type as static data: fields in order, their kind, declared
//! bounds and bit cost.
//!
//! Every [`NetMessage`](crate::NetMessage) has a [`NetMessage::SCHEMA`](crate::NetMessage::SCHEMA),
//! built at compile time: `#[derive(NetMessage)]` generates it from the field
//! annotations, and the runtime provides it for the primitives, `Option<T>`, arrays and
//! tuples. From a schema you get
//!
//! - a [`Layout`]: a printable table of every field's bit offsets, width, kind and bounds
//!   (and an RFC-style bit diagram of the fixed-size prefix);
//! - a [fingerprint](Schema::fingerprint): a stable 64-bit hash of the wire format,
//!   computed by a `const fn`, which changes when any field is added, removed, reordered,
//!   renamed, retyped or re-bounded. The fingerprint of a
//!   [message set](crate::MessageSet) is the protocol id of a connection.
//!
//! ```
//! use netproto::NetMessage;
//! use netproto::schema::{IntType, Kind};
//!
//! #[derive(NetMessage)]
//! struct Hit {
//!     #[net(range = 0..=100)]
//!     damage: u8,
//!     critical: bool,
//! }
//!
//! let schema = Hit::SCHEMA;
//! assert_eq!(schema.name, "Hit");
//! assert_eq!(schema.max_bits, 8);
//! let fields = schema.fields();
//! assert_eq!(fields[0].name, "damage");
//! assert_eq!(fields[0].schema.kind, Kind::Int { ty: IntType::U8, min: 0, max: 100 });
//! assert_eq!(fields[1].schema.kind, Kind::Bool);
//!
//! // A compile-time constant: pin it in a test, or use it as a protocol id.
//! const HIT_FINGERPRINT: u64 = Hit::SCHEMA.fingerprint();
//! # let _ = HIT_FINGERPRINT;
//! ```
//!
//! Schemas of hand-written `NetMessage` impls default to [`Kind::Opaque`] (only their
//! bit bounds are known); such an impl can describe itself with the `const fn`
//! constructors below, e.g. `Schema::structure("Mine", &[Field::new("x", u8::SCHEMA)])`.

mod fingerprint;
mod layout;

pub(crate) use fingerprint::FNV_OFFSET_BASIS;
pub use fingerprint::fnv1a_64;
pub use layout::{Diagram, Layout, LayoutRow, Offset, SetLayout};

use crate::bits::bits_for_count;

/// The wire format of one type (or of one annotated field).
///
/// Built by `#[derive(NetMessage)]` and by the `const fn` constructors; its fields are
/// public to read. `min_bits` / `max_bits` are the same bounds as
/// [`NetMessage::MIN_BITS`](crate::NetMessage::MIN_BITS) /
/// [`NetMessage::MAX_BITS`](crate::NetMessage::MAX_BITS) (a derived type's are read from
/// its schema): an align counts 0 bits in the minimum and 7 in the maximum.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Schema {
    /// The type's name: a derived type's identifier (`"PlayerInput"`, without generic
    /// arguments), a primitive's name (`"u8"`, `"bool"`, `"f32"`), or the constructor of
    /// a composite (`"String"`, `"Vec"`, `"Option"`, `"array"`, `"tuple"`).
    pub name: &'static str,
    /// How it goes on the wire.
    pub kind: Kind,
    /// The fewest bits it can take.
    pub min_bits: usize,
    /// The most bits it can take.
    pub max_bits: usize,
}

/// How a value goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Kind {
    /// One bit.
    Bool,
    /// A ranged integer: `value - min` in `bits_required(min, max)` bits. An integer
    /// without attributes is the full range of its type.
    Int {
        /// The Rust type of the value.
        ty: IntType,
        /// The smallest value (inclusive).
        min: i128,
        /// The largest value (inclusive).
        max: i128,
    },
    /// `#[net(bits = N)]`: an unsigned integer in `bits` raw bits.
    Bits {
        /// The Rust type of the value.
        ty: IntType,
        /// The width on the wire.
        bits: u32,
    },
    /// A raw `f32` (its 32 IEEE bits).
    F32,
    /// A raw `f64` (its 64 IEEE bits).
    F64,
    /// `#[net(quantize(min, max, res))]`: an `f32` as a step count (see
    /// [`Quantization`](crate::Quantization)).
    Quantized {
        /// The smallest value.
        min: f32,
        /// The largest value.
        max: f32,
        /// The step between two sent values.
        res: f32,
        /// The width on the wire.
        bits: u32,
    },
    /// A UTF-8 string of at most `max_len` bytes: the length in
    /// `bits_required(0, max_len)` bits, an align, then the bytes.
    String {
        /// The longest string, in bytes.
        max_len: u32,
    },
    /// A `Vec` of at most `max_len` elements: the length in `bits_required(0, max_len)`
    /// bits, then each element.
    Sequence {
        /// The most elements.
        max_len: u32,
        /// The element's wire format.
        element: &'static Schema,
    },
    /// An `Option`: one bit (present), then the value if present.
    Option(&'static Schema),
    /// A fixed-size array: each element in turn, no length.
    Array {
        /// The number of elements.
        len: usize,
        /// The element's wire format.
        element: &'static Schema,
    },
    /// A tuple: each element in turn.
    Tuple(&'static [&'static Schema]),
    /// A derived struct (named, tuple or unit): each sent field in declaration order.
    /// Tuple fields are named `"0"`, `"1"`, ...; skipped fields are not listed.
    Struct(&'static [Field]),
    /// A derived enum: the variant index in `bits_for_count(variants)` bits, then the
    /// variant's fields. A [message set](crate::MessageSet) is an enum whose variants
    /// each have one field, the payload (named `"0"`); the index is its type id.
    Enum(&'static [Variant]),
    /// A hand-written `NetMessage` that does not describe itself: only its bit bounds
    /// are known.
    Opaque,
}

/// A named part of a struct or enum variant.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Field {
    /// The field's name (`"0"`, `"1"`, ... in a tuple struct or variant).
    pub name: &'static str,
    /// The field's wire format, including its annotations.
    pub schema: &'static Schema,
}

/// A variant of a derived enum; its index on the wire is its position.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Variant {
    /// The variant's name.
    pub name: &'static str,
    /// Its sent fields, in order.
    pub fields: &'static [Field],
}

/// The integer types a [`Kind::Int`] or [`Kind::Bits`] can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the variants are the Rust types of the same name
pub enum IntType {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

impl IntType {
    /// The Rust name (`"u8"`).
    pub const fn name(self) -> &'static str {
        match self {
            IntType::U8 => "u8",
            IntType::U16 => "u16",
            IntType::U32 => "u32",
            IntType::U64 => "u64",
            IntType::I8 => "i8",
            IntType::I16 => "i16",
            IntType::I32 => "i32",
            IntType::I64 => "i64",
        }
    }

    /// The width of the type in memory, in bits.
    pub const fn bits(self) -> u32 {
        match self {
            IntType::U8 | IntType::I8 => 8,
            IntType::U16 | IntType::I16 => 16,
            IntType::U32 | IntType::I32 => 32,
            IntType::U64 | IntType::I64 => 64,
        }
    }

    /// Whether the type is signed.
    pub const fn signed(self) -> bool {
        matches!(
            self,
            IntType::I8 | IntType::I16 | IntType::I32 | IntType::I64
        )
    }

    /// The type's smallest value.
    pub const fn min(self) -> i128 {
        if self.signed() {
            -(1i128 << (self.bits() - 1))
        } else {
            0
        }
    }

    /// The type's largest value.
    pub const fn max(self) -> i128 {
        if self.signed() {
            (1i128 << (self.bits() - 1)) - 1
        } else {
            (1i128 << self.bits()) - 1
        }
    }

    /// The byte that stands for the type in the [fingerprint](Schema::fingerprint)
    /// encoding: 1 to 8 for `u8`, `u16`, `u32`, `u64`, `i8`, `i16`, `i32`, `i64`.
    pub const fn code(self) -> u8 {
        match self {
            IntType::U8 => 1,
            IntType::U16 => 2,
            IntType::U32 => 3,
            IntType::U64 => 4,
            IntType::I8 => 5,
            IntType::I16 => 6,
            IntType::I32 => 7,
            IntType::I64 => 8,
        }
    }
}

/// `bits_required` over `i128` bounds (the runtime's is over `u64` offsets).
const fn bits_between(min: i128, max: i128) -> u32 {
    if max <= min {
        0
    } else {
        128 - ((max - min) as u128).leading_zeros()
    }
}

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

const fn min(a: usize, b: usize) -> usize {
    if a < b { a } else { b }
}

impl Field {
    /// A field named `name` with wire format `schema`.
    pub const fn new(name: &'static str, schema: &'static Schema) -> Self {
        Field { name, schema }
    }
}

impl Variant {
    /// A variant named `name` with `fields`.
    pub const fn new(name: &'static str, fields: &'static [Field]) -> Self {
        Variant { name, fields }
    }

    /// The variant's fewest and most bits, without the index.
    const fn bits(&self) -> (usize, usize) {
        fields_bits(self.fields)
    }
}

const fn fields_bits(fields: &[Field]) -> (usize, usize) {
    let (mut lo, mut hi) = (0, 0);
    let mut i = 0;
    while i < fields.len() {
        lo += fields[i].schema.min_bits;
        hi += fields[i].schema.max_bits;
        i += 1;
    }
    (lo, hi)
}

impl Schema {
    /// A `bool`: one bit.
    pub const BOOL: Schema = Schema::fixed("bool", Kind::Bool, 1);
    /// A raw `f32`: 32 bits.
    pub const F32: Schema = Schema::fixed("f32", Kind::F32, 32);
    /// A raw `f64`: 64 bits.
    pub const F64: Schema = Schema::fixed("f64", Kind::F64, 64);

    const fn fixed(name: &'static str, kind: Kind, bits: usize) -> Self {
        Schema {
            name,
            kind,
            min_bits: bits,
            max_bits: bits,
        }
    }

    /// A ranged integer of type `ty` in `[min, max]`.
    ///
    /// Like every constructor here, it describes and does not validate: the derive
    /// checks the bounds it declares (at compile time, with messages that name the
    /// field); a hand-written schema should declare what its serialize function does.
    pub const fn int(ty: IntType, min: i128, max: i128) -> Self {
        let bits = bits_between(min, max) as usize;
        Schema::fixed(ty.name(), Kind::Int { ty, min, max }, bits)
    }

    /// A full-width integer of type `ty` (what an unannotated integer field sends).
    pub const fn full_int(ty: IntType) -> Self {
        Schema::int(ty, ty.min(), ty.max())
    }

    /// An unsigned integer of type `ty` in `bits` raw bits.
    pub const fn bits(ty: IntType, bits: u32) -> Self {
        Schema::fixed(ty.name(), Kind::Bits { ty, bits }, bits as usize)
    }

    /// A quantized `f32` (see [`Quantization`](crate::Quantization)).
    pub const fn quantized(min: f32, max: f32, res: f32) -> Self {
        let bits = crate::Quantization::new(min, max, res).bits();
        Schema::fixed(
            "f32",
            Kind::Quantized {
                min,
                max,
                res,
                bits,
            },
            bits as usize,
        )
    }

    /// A string of at most `max_len` bytes.
    pub const fn string(max_len: u32) -> Self {
        let len_bits = crate::bits_required(0, max_len as u64) as usize;
        Schema {
            name: "String",
            kind: Kind::String { max_len },
            min_bits: len_bits,
            max_bits: len_bits + 7 + 8 * max_len as usize,
        }
    }

    /// A sequence (`Vec`) of at most `max_len` elements of `element`.
    pub const fn sequence(max_len: u32, element: &'static Schema) -> Self {
        let len_bits = crate::bits_required(0, max_len as u64) as usize;
        Schema {
            name: "Vec",
            kind: Kind::Sequence { max_len, element },
            min_bits: len_bits,
            max_bits: len_bits + max_len as usize * element.max_bits,
        }
    }

    /// An `Option` of `inner`.
    pub const fn option(inner: &'static Schema) -> Self {
        Schema {
            name: "Option",
            kind: Kind::Option(inner),
            min_bits: 1,
            max_bits: 1 + inner.max_bits,
        }
    }

    /// An array of `len` elements of `element`.
    pub const fn array(len: usize, element: &'static Schema) -> Self {
        Schema {
            name: "array",
            kind: Kind::Array { len, element },
            min_bits: len * element.min_bits,
            max_bits: len * element.max_bits,
        }
    }

    /// A tuple of `elements`.
    pub const fn tuple(elements: &'static [&'static Schema]) -> Self {
        let (mut lo, mut hi) = (0, 0);
        let mut i = 0;
        while i < elements.len() {
            lo += elements[i].min_bits;
            hi += elements[i].max_bits;
            i += 1;
        }
        Schema {
            name: "tuple",
            kind: Kind::Tuple(elements),
            min_bits: lo,
            max_bits: hi,
        }
    }

    /// A struct named `name` with `fields`, sent in order.
    pub const fn structure(name: &'static str, fields: &'static [Field]) -> Self {
        let (lo, hi) = fields_bits(fields);
        Schema {
            name,
            kind: Kind::Struct(fields),
            min_bits: lo,
            max_bits: hi,
        }
    }

    /// An enum named `name` with `variants`: the index in `bits_for_count(variants)` bits,
    /// then the variant's fields.
    pub const fn enumeration(name: &'static str, variants: &'static [Variant]) -> Self {
        let tag = bits_for_count(variants.len() as u64) as usize;
        let (mut lo, mut hi) = (usize::MAX, 0);
        let mut i = 0;
        while i < variants.len() {
            let (vlo, vhi) = variants[i].bits();
            lo = min(lo, vlo);
            hi = max(hi, vhi);
            i += 1;
        }
        if variants.is_empty() {
            lo = 0;
        }
        Schema {
            name,
            kind: Kind::Enum(variants),
            min_bits: tag + lo,
            max_bits: tag + hi,
        }
    }

    /// A type that does not describe its wire format beyond its bit bounds (the default
    /// [`NetMessage::SCHEMA`](crate::NetMessage::SCHEMA) of a hand-written impl).
    pub const fn opaque(name: &'static str, min_bits: usize, max_bits: usize) -> Self {
        Schema {
            name,
            kind: Kind::Opaque,
            min_bits,
            max_bits,
        }
    }

    /// Whether every value takes the same number of bits.
    pub const fn is_fixed_size(&self) -> bool {
        self.min_bits == self.max_bits
    }

    /// The fields of a struct; empty for any other kind.
    pub const fn fields(&self) -> &'static [Field] {
        match self.kind {
            Kind::Struct(fields) => fields,
            _ => &[],
        }
    }

    /// The variants of an enum (the message types of a message set); empty for any other
    /// kind.
    pub const fn variants(&self) -> &'static [Variant] {
        match self.kind {
            Kind::Enum(variants) => variants,
            _ => &[],
        }
    }

    /// The stable 64-bit fingerprint of this wire format; see [`Schema::write_canonical`]
    /// for the exact algorithm.
    ///
    /// A `const fn`: `const ID: u64 = MyMessage::SCHEMA.fingerprint();` is computed by the
    /// compiler. Equal schemas give equal fingerprints on every build, platform and
    /// compiler version; a field added, removed, reordered, renamed, retyped or
    /// re-bounded, anywhere in the type or the types it contains, changes it.
    ///
    /// ```
    /// use netproto::NetMessage;
    /// use netproto::schema::Schema;
    ///
    /// // A `bool` is encoded as: name "bool" (length 4 as u32 LE, then the bytes), tag 0x01.
    /// assert_eq!(
    ///     bool::SCHEMA.fingerprint(),
    ///     netproto::schema::fnv1a_64(b"\x04\x00\x00\x00bool\x01")
    /// );
    /// assert_eq!(Schema::BOOL.fingerprint(), 0xb039_176f_6195_ff50);
    /// ```
    pub const fn fingerprint(&self) -> u64 {
        fingerprint::hash(self, FNV_OFFSET_BASIS)
    }

    /// Appends the canonical byte encoding of this schema to `out`: the bytes whose
    /// 64-bit FNV-1a hash ([`fnv1a_64`]) is the [fingerprint](Schema::fingerprint).
    ///
    /// The encoding, recursively (`u32`, `u64` and `i128` little-endian; a string `s` is
    /// `u32(len(s))` then its UTF-8 bytes; floats as their IEEE bits):
    ///
    /// ```text
    /// schema   = string(name) kind
    /// kind     = 0x01                                      Bool
    ///          | 0x02 u8(int code) i128(min) i128(max)     Int
    ///          | 0x03 u8(int code) u32(bits)               Bits
    ///          | 0x04                                      F32
    ///          | 0x05                                      F64
    ///          | 0x06 u32(min) u32(max) u32(res)           Quantized (f32 bits)
    ///          | 0x07 u32(max_len)                         String
    ///          | 0x08 u32(max_len) schema(element)         Sequence
    ///          | 0x09 schema(inner)                        Option
    ///          | 0x0a u64(len) schema(element)             Array
    ///          | 0x0b u32(count) schema(element)*          Tuple
    ///          | 0x0c fields                               Struct
    ///          | 0x0d u32(count) (string(name) fields)*    Enum (variants in order)
    ///          | 0x0e u64(min_bits) u64(max_bits)          Opaque
    /// fields   = u32(count) (string(name) schema)*
    /// int code = u8 1, u16 2, u32 3, u64 4, i8 5, i16 6, i32 7, i64 8
    /// ```
    ///
    /// Bit widths are not encoded: they follow from the bounds. Skipped fields are not
    /// part of the schema.
    pub fn write_canonical(&self, out: &mut Vec<u8>) {
        fingerprint::encode(self, out);
    }
}
