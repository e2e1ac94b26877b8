//! The typed model of a message: its fields in wire order, each with a resolved [`Kind`]
//! (encoding, bounds, bit cost). Codegen, the schema (whose bounds are the impl's
//! `MAX_BITS` / `MIN_BITS`) and the message-set code are generated from this model only.

use proc_macro2::{Span, TokenStream};
use syn::{Generics, Ident, Member, Type};

use crate::value::IntTy;

/// A type deriving `NetMessage`.
pub(crate) struct Input<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) generics: &'a Generics,
    pub(crate) body: Body<'a>,
    /// `#[net(message_set)]`: the enum is a message set (see `set`).
    pub(crate) set: Option<crate::set::SetDecl>,
    /// The path of the netproto crate that every generated path starts with:
    /// `#[net(crate = "...")]`, or `::netproto`.
    pub(crate) krate: syn::Path,
    /// `#[net(delta)]`: the type also gets a `NetDelta` impl (see `delta`).
    pub(crate) delta: Option<Ident>,
}

pub(crate) enum Body<'a> {
    Struct(Fields<'a>),
    /// Variants in declaration order: the variant index is the position.
    Enum(Vec<Variant<'a>>),
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) fields: Fields<'a>,
}

/// The fields of a struct or variant.
pub(crate) struct Fields<'a> {
    pub(crate) style: Style,
    pub(crate) list: Vec<Field<'a>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Named,
    Tuple,
    Unit,
}

pub(crate) struct Field<'a> {
    /// `name` or `0`.
    pub(crate) member: Member,
    pub(crate) ty: &'a Type,
    /// `"field"` or `"0"`: the name tracing streams get from `begin_field`.
    pub(crate) name: String,
    /// `"Type.field"` or `"Type::Variant.field"`: names the field in errors and traces.
    pub(crate) path: String,
    pub(crate) kind: Kind<'a>,
    /// `#[net(delta = LO..=HI)]`, checked against the kind (see `check::delta`).
    pub(crate) delta: Option<DeltaRange>,
}

/// The declared range of a changed value's difference, in the field's units (quantized
/// steps for a quantized float), inclusive. Literals only: the macro checks it against
/// the field's range.
#[derive(Clone, Copy)]
pub(crate) struct DeltaRange {
    pub(crate) lo: i64,
    pub(crate) hi: i64,
}

/// How a field goes on the wire.
pub(crate) enum Kind<'a> {
    /// `#[net(skip)]`: not sent, `Default::default()` in a blank value.
    Skip,
    /// `#[net(range = MIN..=MAX)]` (bounds inclusive here); `spans` cover the range.
    Ranged {
        int: IntTy,
        min: Bound,
        max: Bound,
        spans: Spans,
    },
    /// `#[net(bits = N)]`: the range `0..=2^N - 1`.
    Bits { int: IntTy, bits: Bound },
    /// `#[net(quantize(min = A, max = B, res = R))]` on an `f32`.
    Quantized(Quant),
    /// `#[net(max_len = N)]` on a `String`.
    String { max_len: Bound },
    /// `#[net(max_len = N)]` on a `Vec<T>`.
    Vec { elem: &'a Type, max_len: Bound },
    /// An unannotated `bool`, integer (full width), `f32` or `f64`.
    Prim(Prim),
    /// Anything else: `<T as NetMessage>::serialize_in` on the field's place.
    Nested,
}

#[derive(Clone, Copy)]
pub(crate) enum Prim {
    Bool,
    Int(IntTy),
    F32,
    F64,
}

/// An integer the macro either knows, or leaves to the compiler as a constant expression.
pub(crate) enum Bound {
    Known(i128),
    Const(ConstExpr),
}

/// A bound the macro cannot evaluate: checked by `const` assertions in the generated code.
pub(crate) struct ConstExpr {
    /// The value as an `i128` expression (e.g. `(LIMIT) as i128 - 1` for `0..LIMIT`).
    pub(crate) value: TokenStream,
    /// Where assertion failures point.
    pub(crate) spans: Spans,
    /// As written, for assertion messages.
    pub(crate) text: String,
}

/// A quantization, evaluated by the macro when its parameters are literals.
pub(crate) enum Quant {
    Known {
        min: f32,
        max: f32,
        res: f32,
        bits: u32,
    },
    /// Each parameter as an `f32` expression, checked by a `const` assertion.
    Const {
        min: TokenStream,
        max: TokenStream,
        res: TokenStream,
        spans: Spans,
    },
}

/// The first and last token of something the user wrote: an error raised by generated
/// code whose first token has `lo` and last token `hi` is shown under all of it.
#[derive(Clone, Copy)]
pub(crate) struct Spans {
    pub(crate) lo: Span,
    pub(crate) hi: Span,
}

impl Spans {
    pub(crate) fn of<T: quote::ToTokens>(tokens: &T) -> Self {
        let mut iter = tokens.to_token_stream().into_iter();
        let lo = iter.next().map_or_else(Span::call_site, |t| t.span());
        let hi = iter.last().map_or(lo, |t| match t {
            proc_macro2::TokenTree::Group(g) => g.span_close(),
            other => other.span(),
        });
        Spans { lo, hi }
    }
}

/// `bits_required` of the runtime, on the macro's `i128` bounds.
pub(crate) fn bits_required(min: i128, max: i128) -> u32 {
    if max <= min {
        0
    } else {
        128 - ((max - min) as u128).leading_zeros()
    }
}
