//! Pieces of generated code that both impls write, the `NetMessage` impl (`codegen`)
//! and the `NetDelta` impl (`delta`): typed literals, length expressions, `const`
//! assertions reported under the user's tokens, and the bounds of type parameters.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, Type};

use crate::ast::{Body, Bound, Field, Input, Kind, Spans};
use crate::value::IntTy;

/// A `max_len` as a `usize` expression: the literal, or the field's `__NET_{id}_LEN`.
pub(crate) fn len_expr(max_len: &Bound, id: usize) -> TokenStream {
    {
        match max_len {
            Bound::Known(n) => {
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!(#n)
            }
            Bound::Const(_) => {
                let name = format_ident!("__NET_{}_LEN", id);
                quote!(#name)
            }
        }
    }
}

/// `const _: () = ::core::assert!(cond, "message");`, reported under `spans`.
pub(crate) fn assertion(spans: Spans, cond: TokenStream, message: &str) -> TokenStream {
    let assert = spanned_macro(spans, quote!(::core::assert), quote!(#cond, #message));
    quote!(const _: () = #assert;)
}

/// A macro call whose path carries `spans.lo` and whose parentheses carry `spans.hi`:
/// the compiler shows a failure inside it under everything from `lo` to `hi`.
pub(crate) fn spanned_macro(spans: Spans, path: TokenStream, args: TokenStream) -> TokenStream {
    let path = respan(path, spans.lo);
    let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, args);
    group.set_span(spans.hi);
    quote!(#path ! #group)
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

/// A typed integer literal (`-5i8`, `100u8`, `i64::MIN`).
pub(crate) fn int_lit(int: IntTy, value: i128) -> TokenStream {
    let t = int.ident();
    if int.signed() && value == int.min() {
        return quote!(#t::MIN);
    }
    let lit = syn::LitInt::new(
        &format!("{}{}", value.unsigned_abs(), int.name()),
        Span::call_site(),
    );
    if value < 0 {
        quote!((-#lit))
    } else {
        quote!(#lit)
    }
}

pub(crate) fn span_of(ty: &Type) -> Span {
    syn::spanned::Spanned::span(ty)
}

/// The type parameters that get a `NetMessage` bound: those that appear in the type of
/// a field that goes on the wire, as serde infers its bounds. A parameter used only by
/// skipped fields (or by none) gets none: the field's own bound, if it needs one, is
/// the user's `where` clause.
pub(crate) fn bounded_params(input: &Input<'_>) -> Vec<Ident> {
    let mut used = std::collections::BTreeSet::new();
    let fields: Vec<&Field<'_>> = match &input.body {
        Body::Struct(fields) => fields.list.iter().collect(),
        Body::Enum(variants) => variants.iter().flat_map(|v| &v.fields.list).collect(),
    };
    for field in fields {
        if !matches!(field.kind, Kind::Skip) {
            let ty = field.ty;
            idents_in(quote!(#ty), &mut used);
        }
    }
    input
        .generics
        .type_params()
        .map(|p| p.ident.clone())
        .filter(|p| used.contains(&p.to_string()))
        .collect()
}

/// Every identifier in `tokens`, groups included.
fn idents_in(tokens: TokenStream, out: &mut std::collections::BTreeSet<String>) {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => {
                out.insert(ident.to_string());
            }
            proc_macro2::TokenTree::Group(group) => idents_in(group.stream(), out),
            _ => {}
        }
    }
}
