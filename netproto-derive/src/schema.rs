//! The `SCHEMA` constant: the model's fields, kinds and bounds as a
//! `netproto::schema::Schema` built by `const fn` constructors at compile time.
//!
//! Skipped fields are left out (they are not on the wire). An unannotated field, a
//! sequence's element and a nested type use `<T as NetMessage>::SCHEMA`, so the schema of
//! a type contains the schemas of the types it is made of.
//!
//! The schema is also where the bit bounds are computed: the generated `MAX_BITS` /
//! `MIN_BITS` are `SCHEMA.max_bits` / `SCHEMA.min_bits`, which the runtime's `const fn`
//! constructors sum from the fields (the widest and narrowest variant of an enum, plus
//! its index).

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Body, Bound, Fields, Input, Kind, Prim, Quant};
use crate::value::{self, IntTy};

/// `&'static Schema` of the input, as an expression for the impl's `const SCHEMA`.
pub(crate) fn expr(input: &Input<'_>) -> TokenStream {
    let krate = &input.krate;
    let name = input.ident.to_string();
    match &input.body {
        Body::Struct(fields) => {
            let fields = fields_expr(fields, krate);
            quote!(&#krate::schema::Schema::structure(#name, #fields))
        }
        Body::Enum(variants) => {
            let variants = variants.iter().map(|variant| {
                let vname = variant.ident.to_string();
                let fields = fields_expr(&variant.fields, krate);
                quote!(#krate::schema::Variant::new(#vname, #fields))
            });
            quote!(&#krate::schema::Schema::enumeration(#name, &[#(#variants),*]))
        }
    }
}

/// `&[Field::new("name", schema), ..]` for the sent fields.
fn fields_expr(fields: &Fields<'_>, krate: &syn::Path) -> TokenStream {
    let list = fields.list.iter().filter_map(|field| {
        let schema = field_schema(&field.kind, field.ty, krate)?;
        let name = &field.name;
        Some(quote!(#krate::schema::Field::new(#name, #schema)))
    });
    quote!(&[#(#list),*])
}

fn int_type(int: IntTy, krate: &syn::Path) -> TokenStream {
    let variant = match int {
        IntTy::U8 => quote!(U8),
        IntTy::U16 => quote!(U16),
        IntTy::U32 => quote!(U32),
        IntTy::U64 => quote!(U64),
        IntTy::I8 => quote!(I8),
        IntTy::I16 => quote!(I16),
        IntTy::I32 => quote!(I32),
        IntTy::I64 => quote!(I64),
    };
    quote!(#krate::schema::IntType::#variant)
}

/// A bound as an `i128` expression.
fn i128_expr(bound: &Bound) -> TokenStream {
    match bound {
        Bound::Known(v) => {
            let v = Literal::i128_suffixed(*v);
            quote!(#v)
        }
        Bound::Const(c) => c.value.clone(),
    }
}

/// A bound as a `u32` expression (bit counts and lengths, checked elsewhere to fit).
fn u32_expr(bound: &Bound) -> TokenStream {
    match bound {
        Bound::Known(v) => {
            let v = Literal::u32_suffixed(*v as u32);
            quote!(#v)
        }
        Bound::Const(c) => {
            let v = &c.value;
            quote!((#v as u32))
        }
    }
}

/// The `&'static Schema` of one field, `None` for a skipped one.
pub(crate) fn field_schema(
    kind: &Kind<'_>,
    ty: &syn::Type,
    krate: &syn::Path,
) -> Option<TokenStream> {
    let schema = quote!(#krate::schema::Schema);
    Some(match kind {
        Kind::Skip => return None,
        Kind::Ranged { int, min, max, .. } => {
            let (t, min, max) = (int_type(*int, krate), i128_expr(min), i128_expr(max));
            quote!(&#schema::int(#t, #min, #max))
        }
        Kind::Bits { int, bits } => {
            let (t, bits) = (int_type(*int, krate), u32_expr(bits));
            quote!(&#schema::bits(#t, #bits))
        }
        Kind::Quantized(Quant::Known { min, max, res, .. }) => {
            let (min, max, res) = (
                value::f32_expr(*min),
                value::f32_expr(*max),
                value::f32_expr(*res),
            );
            quote!(&#schema::quantized(#min, #max, #res))
        }
        Kind::Quantized(Quant::Const { min, max, res, .. }) => {
            quote!(&#schema::quantized(#min, #max, #res))
        }
        Kind::String { max_len } => {
            let len = u32_expr(max_len);
            quote!(&#schema::string(#len))
        }
        Kind::Vec { elem, max_len } => {
            let len = u32_expr(max_len);
            // Spanned on the type, like the other uses of a field's impl: a missing one
            // is reported at the field.
            let element = quote_spanned!(elem.span()=> <#elem as #krate::NetMessage>::SCHEMA);
            quote!(&#schema::sequence(#len, #element))
        }
        Kind::Prim(prim) => {
            let t = match prim {
                Prim::Bool => quote!(bool),
                Prim::Int(int) => {
                    let t = int.ident();
                    quote!(#t)
                }
                Prim::F32 => quote!(f32),
                Prim::F64 => quote!(f64),
            };
            quote!(<#t as #krate::NetMessage>::SCHEMA)
        }
        Kind::Nested => quote_spanned!(ty.span()=> <#ty as #krate::NetMessage>::SCHEMA),
    })
}
