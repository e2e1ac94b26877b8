//! Generates the `NetDelta` impl of a `#[net(delta)]` type from the same model as the
//! `NetMessage` impl, inside the same `const _: () = { ... };` block, so it names the
//! same block-level constants (`__NET_{id}_MIN` / `_MAX` / `_Q` / `_LEN`; a struct's
//! field `i` has id `i`).
//!
//! A struct gets one function, `serialize_delta_in`, with one statement per sent field
//! (the same for writing, reading, measuring and tracing): the field's place projected
//! out of `__this`, its baseline `&__base.field`, and one runtime helper of
//! `netproto::delta` that sends the changed bit and what changed (`int`, `quantized`
//! with the declared delta range or none (a delta code, or the escape code and the
//! value), `string`, `sequence`, or `field` for a type with its own `NetDelta` impl,
//! which recurses). `delta_changed` ORs the fields'
//! comparisons; `DELTA_MAX_BITS` sums the fields' bounds at compile time (a field's
//! absolute bits are read from its schema, the bound `MAX_BITS` is made of).
//!
//! An enum is sent whole when it changes: `serialize_delta_in` is its `serialize_in`,
//! `delta_changed` its `PartialEq`.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use crate::ast::{Body, Bound, DeltaRange, Field, Input, Kind, Prim, Quant};
use crate::tokens::{assertion, bounded_params, int_lit, len_expr, span_of};

/// The `NetDelta` impl (and its `const` checks), or nothing without `#[net(delta)]`.
pub(crate) fn expand(input: &Input<'_>, generics: &syn::Generics) -> TokenStream {
    if input.delta.is_none() {
        return TokenStream::new();
    }
    let krate = &input.krate;
    let ident = input.ident;
    // The parameters the `NetMessage` impl bounds (those in sent fields) must also have
    // delta forms.
    let mut generics = generics.clone();
    let params = bounded_params(input);
    if !params.is_empty() {
        let where_clause = generics.make_where_clause();
        for param in params {
            where_clause
                .predicates
                .push(syn::parse_quote!(#param: #krate::delta::NetDelta));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let message = quote!(<Self as #krate::NetMessage>);
    let (items, max_bits, changed, body) = match &input.body {
        Body::Enum(_) => (
            TokenStream::new(),
            quote!(#message::MAX_BITS),
            quote!(::core::cmp::PartialEq::ne(self, __base)),
            quote!(#message::serialize_in(__this, stream)),
        ),
        Body::Struct(fields) => {
            let mut items = TokenStream::new();
            let mut bits = Vec::new();
            let mut changed = Vec::new();
            let mut statements = Vec::new();
            for (id, field) in fields.list.iter().enumerate() {
                if matches!(field.kind, Kind::Skip) {
                    continue;
                }
                let f = FieldDelta { field, id, krate };
                items.extend(f.checks());
                bits.push(f.max_bits());
                changed.push(f.changed());
                statements.push(f.statement());
            }
            let body = quote! {{
                let _ = (&__base, &stream);
                #(#statements)*
                ::core::result::Result::Ok(())
            }};
            (
                items,
                quote!(0usize #(+ #bits)*),
                quote!(false #(|| #changed)*),
                body,
            )
        }
    };
    let mutable = match &input.body {
        Body::Struct(fields) if fields.list.iter().any(|f| !matches!(f.kind, Kind::Skip)) => {
            quote!(mut __this)
        }
        Body::Struct(_) => quote!(__this),
        Body::Enum(_) => quote!(__this),
    };
    quote! {
        #items

        #[automatically_derived]
        impl #impl_generics #krate::delta::NetDelta for #ident #ty_generics #where_clause {
            const DELTA_MAX_BITS: usize = #max_bits;

            #[inline(always)]
            fn delta_changed(&self, __base: &Self) -> bool {
                #changed
            }

            #[inline(always)]
            fn serialize_delta_in<__S: #krate::Stream, __P: #krate::Place<Self>>(
                #mutable: __P,
                __base: &Self,
                stream: &mut __S,
            ) -> ::core::result::Result<(), __S::Error> {
                #body
            }
        }
    }
}

struct FieldDelta<'f, 'a> {
    field: &'f Field<'a>,
    id: usize,
    krate: &'f syn::Path,
}

impl FieldDelta<'_, '_> {
    /// `(MIN, MAX)` of a ranged or `bits` field: typed literals or the block's consts.
    fn bounds(&self) -> (TokenStream, TokenStream) {
        let id = self.id;
        let consts = || {
            let (a, b) = (
                format_ident!("__NET_{}_MIN", id),
                format_ident!("__NET_{}_MAX", id),
            );
            (quote!(#a), quote!(#b))
        };
        match &self.field.kind {
            Kind::Ranged {
                int,
                min: Bound::Known(lo),
                max: Bound::Known(hi),
                ..
            } => (int_lit(*int, *lo), int_lit(*int, *hi)),
            Kind::Bits {
                int,
                bits: Bound::Known(n),
            } => (int_lit(*int, 0), int_lit(*int, (1i128 << n) - 1)),
            _ => consts(),
        }
    }

    fn delta_arg(&self) -> TokenStream {
        match self.field.delta {
            Some(DeltaRange { lo, hi }) => {
                let (lo, hi) = (Literal::i64_suffixed(lo), Literal::i64_suffixed(hi));
                quote!(::core::option::Option::Some((#lo, #hi)))
            }
            None => quote!(::core::option::Option::None),
        }
    }

    fn quantization(&self) -> TokenStream {
        let q = format_ident!("__NET_{}_Q", self.id);
        quote!(#q)
    }

    /// `const` assertions for a delta range the macro could not check (the field's
    /// bounds are constants).
    fn checks(&self) -> TokenStream {
        let Some(DeltaRange { lo, hi }) = self.field.delta else {
            return TokenStream::new();
        };
        let width = i128::from(hi) - i128::from(lo);
        let width = Literal::i128_suffixed(width);
        let message = format!(
            "delta range {lo}..={hi} of `{}` does not fit in the field's range: narrow it or \
             remove `delta`",
            self.field.path
        );
        let known = matches!(
            &self.field.kind,
            Kind::Ranged {
                min: Bound::Known(_),
                max: Bound::Known(_),
                ..
            } | Kind::Bits {
                bits: Bound::Known(_),
                ..
            }
        );
        match &self.field.kind {
            Kind::Ranged { .. } | Kind::Bits { .. } if !known => {
                let (min, max) = self.bounds();
                let spans = match &self.field.kind {
                    Kind::Ranged { spans, .. } => *spans,
                    _ => crate::ast::Spans::of(&self.field.member),
                };
                assertion(
                    spans,
                    quote!(#width <= (#max as i128) - (#min as i128)),
                    &message,
                )
            }
            Kind::Quantized(Quant::Const { spans, .. }) => {
                let q = self.quantization();
                assertion(*spans, quote!(#width <= #q.max_int() as i128), &message)
            }
            _ => TokenStream::new(),
        }
    }

    /// The field's bound: its changed bit, then the larger of its forms.
    fn max_bits(&self) -> TokenStream {
        let krate = self.krate;
        let ty = self.field.ty;
        let absolute = match crate::schema::field_schema(&self.field.kind, ty, krate) {
            Some(schema) => quote!((#schema).max_bits),
            None => quote!(0usize),
        };
        match (&self.field.kind, self.field.delta) {
            (Kind::Prim(_) | Kind::Nested, _) => {
                let t = self.delta_type();
                quote!((1usize + <#t as #krate::delta::NetDelta>::DELTA_MAX_BITS))
            }
            (_, Some(DeltaRange { lo, hi })) => {
                // The changed bit, the delta code, and the value after an escape code.
                let (lo, hi) = (Literal::i64_suffixed(lo), Literal::i64_suffixed(hi));
                quote!((1usize + #krate::delta::delta_code_bits(#lo, #hi) + #absolute))
            }
            _ => quote!((1usize + #absolute)),
        }
    }

    /// The type whose `NetDelta` impl a primitive or nested field uses.
    fn delta_type(&self) -> TokenStream {
        match &self.field.kind {
            Kind::Prim(prim) => match prim {
                Prim::Bool => quote!(bool),
                Prim::Int(int) => {
                    let t = int.ident();
                    quote!(#t)
                }
                Prim::F32 => quote!(f32),
                Prim::F64 => quote!(f64),
            },
            _ => {
                let ty = self.field.ty;
                quote!(#ty)
            }
        }
    }

    /// Whether the field differs from the baseline's, as the wire sees it.
    fn changed(&self) -> TokenStream {
        let krate = self.krate;
        let m = &self.field.member;
        match &self.field.kind {
            Kind::Quantized(_) => {
                let q = self.quantization();
                quote!(#krate::delta::quantized_changed(&#q, self.#m, __base.#m))
            }
            Kind::Prim(_) | Kind::Nested => {
                let t = self.delta_type();
                let f = quote_spanned!(span_of(self.field.ty)=> <#t as #krate::delta::NetDelta>::delta_changed);
                quote!(#f(&self.#m, &__base.#m))
            }
            _ => quote!(self.#m != __base.#m),
        }
    }

    /// The field's one statement.
    fn statement(&self) -> TokenStream {
        let krate = self.krate;
        let field = self.field;
        let m = &field.member;
        let name = &field.name;
        let path = &field.path;
        let place = quote!(<__P as #krate::Place<Self>>);
        let delta = self.delta_arg();
        let call = match &field.kind {
            Kind::Ranged { .. } | Kind::Bits { .. } => {
                let (min, max) = self.bounds();
                quote!(#krate::delta::int(stream, __f, __base.#m, #min, #max, #delta))
            }
            Kind::Quantized(_) => {
                let q = self.quantization();
                quote!(#krate::delta::quantized(stream, __f, __base.#m, &#q, #delta))
            }
            Kind::String { max_len } => {
                let len = len_expr(max_len, self.id);
                quote!(#krate::delta::string(stream, __f, &__base.#m, #len))
            }
            Kind::Vec { max_len, .. } => {
                let len = len_expr(max_len, self.id);
                quote!(#krate::delta::sequence(stream, __f, &__base.#m, #len))
            }
            Kind::Prim(_) | Kind::Nested => {
                let t = self.delta_type();
                let f = quote_spanned!(span_of(field.ty)=> #krate::delta::field::<__S, #t, _>);
                quote!(#f(stream, __f, &__base.#m))
            }
            Kind::Skip => return TokenStream::new(),
        };
        quote! {
            if __S::TRACING {
                stream.begin_field(#name);
            }
            {
                let __f = #place::field(&mut __this, |__m| &__m.#m, |__m| &mut __m.#m);
                #call.map_err(|e| __S::in_field(e, #path))?;
            }
            if __S::TRACING {
                stream.end_field();
            }
        }
    }
}
