//! Generates the `NetMessage` impl from the model, in one traversal of the fields.
//!
//! The impl has one function, `serialize_in`, generic over the stream and over the
//! [`Place`](../../netproto/stream/trait.Place.html) that holds the value (`&Self` to
//! write or measure, `&mut Self` to read): every sent field is ONE statement, the same
//! for reading, writing, measuring and tracing. A leaf (ranged, `bits` and quantized
//! fields) copies the value out of its place, runs the stream on the copy and stores it
//! back (a no-op through `&Self`); strings, sequences, primitives and nested types get
//! the field's place itself. Tracing streams get `begin_field` / `end_field` around each
//! statement (behind `if __S::TRACING`, compiled away for the others). The fast paths
//! are not generated here: `WriteStream` and `ReadStream` run this same function on a
//! word packer / word reader in their `Stream::serialize_message`. Nested values are
//! always run with `serialize_in`, never through `serialize_message`.
//!
//! The output is wrapped in `const _: () = { ... };` and uses absolute paths only
//! (`::core::...`, and trait functions as `<T as ::core::convert::From<U>>::from`): it
//! compiles where the prelude is not in scope (`tests/tests/derive_hygiene.rs`). It
//! carries no `#[allow(...)]`: it is written to be lint-clean, which
//! `tests/tests/derive_lints.rs` checks with rustc's and clippy's pedantic lints denied.
//! Per field it also produces block-level `const` items (typed bounds, quantizations,
//! and the assertions that check bounds the macro could not evaluate) and a blank value.
//!
//! `MAX_BITS` / `MIN_BITS` are not summed here: they are the bounds of `SCHEMA` (see
//! `schema`), whose `const fn` constructors sum the fields' bounds, so the two cannot
//! disagree. Both are associated constants, evaluated by the compiler.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use crate::ast::{Body, Bound, ConstExpr, Field, Fields, Input, Kind, Prim, Quant, Spans};
use crate::tokens::{assertion, bounded_params, int_lit, len_expr, span_of, spanned_macro};
use crate::value::{self, IntTy};

/// The impl for a well-formed input.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let krate = &input.krate;
    let mut cx = Cx {
        items: TokenStream::new(),
        next_id: 0,
        krate: krate.clone(),
    };
    let type_name = input.ident.to_string();
    let place = quote!(<__P as #krate::Place<Self>>);
    let (blank, this, body) = match &input.body {
        Body::Struct(fields) => {
            let fg = cx.fields(fields, None);
            let statements = &fg.statements;
            let this = if fg.statements.is_empty() {
                quote!(_: __P)
            } else {
                quote!(mut __this: __P)
            };
            (fg.blank(quote!(Self)), this, quote!(#(#statements)*))
        }
        Body::Enum(variants) => {
            let count = variants.len();
            let count_lit = Literal::u32_unsuffixed(count as u32);
            let mut arms = Vec::new();
            let mut blanks = Vec::new();
            for (i, v) in variants.iter().enumerate() {
                let ident = v.ident;
                let fg = cx.fields(&v.fields, Some((ident, count)));
                let blank = fg.blank(quote!(Self::#ident));
                let statements = &fg.statements;
                let index = if i + 1 == count {
                    quote!(_)
                } else {
                    let i = Literal::u32_unsuffixed(i as u32);
                    quote!(#i)
                };
                arms.push(quote! {
                    #index => {
                        if __S::IS_READING {
                            #place::set(&mut __this, #blank);
                        }
                        #(#statements)*
                    }
                });
                blanks.push(blank);
            }
            let first_blank = blanks
                .into_iter()
                .next()
                .unwrap_or_else(|| quote!(::core::unreachable!()));
            // The index of the value's variant when writing; the reader reads it over 0.
            let index = if count == 1 {
                quote!(0)
            } else {
                let index_arms = variants.iter().enumerate().map(|(i, v)| {
                    let ident = v.ident;
                    let i = Literal::u32_unsuffixed(i as u32);
                    quote!(Self::#ident { .. } => #i,)
                });
                quote! {
                    if __S::IS_READING {
                        0
                    } else {
                        match #place::get(&__this) { #(#index_arms)* }
                    }
                }
            };
            let body = quote! {
                // The index belongs to the enclosing field: no begin_field of its own.
                let mut __index: u32 = #index;
                stream
                    .serialize_index(&mut __index, #count_lit)
                    .map_err(|e| __S::in_field(e, #type_name))?;
                match __index { #(#arms)* }
            };
            (first_blank, quote!(mut __this: __P), body)
        }
    };

    let ident = input.ident;
    let mut generics = input.generics.clone();
    let bounded = bounded_params(input);
    if !bounded.is_empty() {
        let where_clause = generics.make_where_clause();
        for param in bounded {
            where_clause
                .predicates
                .push(syn::parse_quote!(#param: #krate::NetMessage));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let items = &cx.items;
    let schema = crate::schema::expr(input);
    let set = crate::set::expand(input);
    let moves = crate::set::moves(input);
    let delta = crate::delta::expand(input, &generics);
    quote! {
        const _: () = {
            #items

            #[automatically_derived]
            impl #impl_generics #krate::NetMessage for #ident #ty_generics #where_clause {
                // The bounds of the schema, whose constructors sum the fields' bounds (and
                // take the widest and narrowest variant): one computation, at compile time.
                const MAX_BITS: usize = <Self as #krate::NetMessage>::SCHEMA.max_bits;
                const MIN_BITS: usize = <Self as #krate::NetMessage>::SCHEMA.min_bits;
                const SCHEMA: &'static #krate::schema::Schema = #schema;

                fn blank() -> Self {
                    #blank
                }

                #moves

                // Always: the stream's state then stays in registers across a whole
                // message (and the caller's loop) instead of going through memory per
                // field, and the place's projections compile to field accesses.
                #[inline(always)]
                fn serialize_in<__S: #krate::Stream, __P: #krate::Place<Self>>(
                    #this,
                    stream: &mut __S,
                ) -> ::core::result::Result<(), __S::Error> {
                    #body
                    ::core::result::Result::Ok(())
                }
            }

            #set

            #delta
        };
    }
}

/// An impl that compiles whatever the input, emitted beside `compile_error!` so that the
/// user sees the real error and not a cascade of "NetMessage is not implemented".
///
/// `krate` is the path of the netproto crate, as for a well-formed input.
pub(crate) fn stub(input: &syn::DeriveInput, krate: &syn::Path) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::NetMessage for #ident #ty_generics #where_clause {
                const MAX_BITS: usize = 0;
                const MIN_BITS: usize = 0;
                fn blank() -> Self {
                    ::core::unimplemented!()
                }
                fn serialize_in<__S: #krate::Stream, __P: #krate::Place<Self>>(
                    _: __P,
                    _: &mut __S,
                ) -> ::core::result::Result<(), __S::Error> {
                    ::core::unimplemented!()
                }
            }
        };
    }
}

struct Cx {
    /// Block-level items: typed bounds, quantizations, `const` assertions.
    items: TokenStream,
    next_id: usize,
    /// The path of the netproto crate (`::netproto` unless `#[net(crate = "...")]`).
    krate: syn::Path,
}

/// The generated pieces of a struct's or variant's fields.
struct FieldsGen {
    /// `member: blank` for every field.
    blanks: Vec<TokenStream>,
    /// One statement per sent field, in wire order.
    statements: Vec<TokenStream>,
}

impl FieldsGen {
    fn blank(&self, path: TokenStream) -> TokenStream {
        let blanks = &self.blanks;
        quote!(#path { #(#blanks,)* })
    }
}

impl Cx {
    /// The fields' statements; `variant` is the enum variant that holds them and the
    /// enum's number of variants.
    fn fields(&mut self, fields: &Fields<'_>, variant: Option<(&Ident, usize)>) -> FieldsGen {
        let mut fg = FieldsGen {
            blanks: Vec::new(),
            statements: Vec::new(),
        };
        for field in &fields.list {
            let id = self.next_id;
            self.next_id += 1;
            let member = &field.member;
            let blank = self.field_consts(field, id);
            fg.blanks.push(quote!(#member: #blank));
            if matches!(field.kind, Kind::Skip) {
                continue;
            }
            fg.statements.push(self.statement(field, id, variant));
        }
        fg
    }

    /// A sent field's one statement: its place projected out of `__this`, then the field's
    /// code on it, between `begin_field` and `end_field` for tracing streams.
    fn statement(
        &mut self,
        field: &Field<'_>,
        id: usize,
        variant: Option<(&Ident, usize)>,
    ) -> TokenStream {
        let krate = self.krate.clone();
        let place = quote!(<__P as #krate::Place<Self>>);
        let member = &field.member;
        let name = &field.name;
        let path = &field.path;
        let ty = field.ty;
        let attribute = quote!(.map_err(|e| __S::in_field(e, #path))?);
        let some = quote!(::core::option::Option::Some);
        // A leaf copies the value out and stores it back: its place is `mut`.
        let (leaf, code) = match &field.kind {
            Kind::Skip => return TokenStream::new(),
            Kind::Ranged { .. } | Kind::Bits { .. } | Kind::Quantized(_) => {
                let call = self.leaf_call(field, id);
                let code = quote! {
                    let mut __v: #ty = *<_ as #krate::Place<#ty>>::get(&__f);
                    #call #attribute;
                    <_ as #krate::Place<#ty>>::set(&mut __f, __v);
                };
                (true, code)
            }
            Kind::String { max_len } => {
                let len = self.len_ref(max_len, id);
                (
                    false,
                    quote!(stream.serialize_string(__f, #len) #attribute;),
                )
            }
            Kind::Vec { max_len, elem } => {
                let len = self.len_ref(max_len, id);
                // The path spanned on the element type: a missing `NetMessage` impl points
                // there. Only the path: locals (`stream`, the place) must keep the
                // derive's own hygiene, or a derive inside a `macro_rules!` cannot see them.
                let f = quote_spanned!(span_of(elem)=> <__S as #krate::Stream>::serialize_vec::<#elem, _>);
                (false, quote!(#f(stream, __f, #len) #attribute;))
            }
            Kind::Prim(prim) => {
                let ty = prim_type(*prim);
                let f = quote!(<#ty as #krate::NetMessage>::serialize_in);
                (false, quote!(#f(__f, stream) #attribute;))
            }
            Kind::Nested => {
                let f = quote_spanned!(span_of(ty)=> <#ty as #krate::NetMessage>::serialize_in);
                (false, quote!(#f(__f, stream) #attribute;))
            }
        };
        let binding = if leaf { quote!(mut __f) } else { quote!(__f) };
        let projected = match variant {
            None => quote! {{
                let #binding = #place::field(&mut __this, |__m| &__m.#member, |__m| &mut __m.#member);
                #code
            }},
            Some((ident, count)) => {
                // The variant was just read (its blank stored) or is the value's: the
                // projection finds the field. Only a reader given `&Self` may find
                // another variant there, and then the field stores nothing.
                let project = if count == 1 {
                    quote!(|__m| {
                        let Self::#ident { #member: __x, .. } = __m;
                        #some(__x)
                    })
                } else {
                    quote!(|__m| match __m {
                        Self::#ident { #member: __x, .. } => #some(__x),
                        _ => ::core::option::Option::None,
                    })
                };
                quote! {
                    if let #some(#binding) = #place::variant(&mut __this, #project, #project) {
                        #code
                    }
                }
            }
        };
        quote! {
            if __S::TRACING {
                stream.begin_field(#name);
            }
            #projected
            if __S::TRACING {
                stream.end_field();
            }
        }
    }

    /// The stream call of a leaf on `__v`: a ranged or `bits` integer, a quantized float.
    fn leaf_call(&mut self, field: &Field<'_>, id: usize) -> TokenStream {
        match &field.kind {
            Kind::Ranged { int, min, max, .. } => int_call(*int, min, max, id),
            Kind::Bits { int, bits } => {
                let (min, max) = match bits {
                    Bound::Known(n) => (Bound::Known(0), Bound::Known((1i128 << n) - 1)),
                    // Only the const names matter below.
                    Bound::Const(_) => (Bound::Known(0), Bound::Const(dummy_const())),
                };
                int_call(*int, &min, &max, id)
            }
            Kind::Quantized(_) => {
                let q = format_ident!("__NET_{}_Q", id);
                quote!(stream.serialize_quantized(&mut __v, &#q))
            }
            _ => TokenStream::new(),
        }
    }

    /// Emits the field's block-level items (typed bounds, quantizations, assertions);
    /// returns its blank value. Its bit bounds are not computed here: they come from the
    /// field's schema (see `schema`), which `MAX_BITS` / `MIN_BITS` read.
    fn field_consts(&mut self, field: &Field<'_>, id: usize) -> TokenStream {
        let krate = self.krate.clone();
        let ty = field.ty;
        match &field.kind {
            // Spanned on the type: a missing `Default` impl points at the field.
            Kind::Skip => {
                quote_spanned!(span_of(ty)=> <#ty as ::core::default::Default>::default())
            }
            Kind::Ranged {
                int,
                min,
                max,
                spans,
            } => self.int_consts(*int, min, max, id, None, *spans),
            Kind::Bits { int, bits } => {
                let (min, max) = match bits {
                    Bound::Known(n) => (Bound::Known(0), Bound::Known((1i128 << n) - 1)),
                    Bound::Const(c) => (
                        Bound::Known(0),
                        Bound::Const(ConstExpr {
                            value: {
                                let n = &c.value;
                                quote!((1u128.wrapping_shl(#n as u32).wrapping_sub(1) as i128))
                            },
                            spans: c.spans,
                            text: c.text.clone(),
                        }),
                    ),
                };
                let bits_check = match bits {
                    Bound::Known(_) => None,
                    Bound::Const(c) => Some(c),
                };
                let spans = match bits {
                    Bound::Known(_) => Spans::of(&field.member),
                    Bound::Const(c) => c.spans,
                };
                self.int_consts(*int, &min, &max, id, bits_check, spans)
            }
            Kind::Quantized(quant) => {
                let q = format_ident!("__NET_{}_Q", id);
                match quant {
                    Quant::Known {
                        min,
                        max,
                        res,
                        bits,
                    } => {
                        let (lo, hi, step) = (
                            value::f32_expr(*min),
                            value::f32_expr(*max),
                            value::f32_expr(*res),
                        );
                        let bits_lit = Literal::u32_unsuffixed(*bits);
                        self.items.extend(quote! {
                            const #q: #krate::Quantization = #krate::Quantization::new(#lo, #hi, #step);
                            const _: () = ::core::assert!(
                                #q.bits() == #bits_lit,
                                "netproto-derive: quantization width disagrees with the runtime"
                            );
                        });
                    }
                    Quant::Const {
                        min,
                        max,
                        res,
                        spans,
                    } => {
                        // A const panic can only print one `&str`: the span shows which field.
                        let panic =
                            spanned_macro(*spans, quote!(::core::panic), quote!("{}", problem));
                        self.items.extend(quote! {
                            const #q: #krate::Quantization = #krate::Quantization::new(#min, #max, #res);
                            const _: () = if let ::core::option::Option::Some(problem) =
                                #krate::Quantization::check(#min, #max, #res)
                            {
                                #panic
                            };
                        });
                    }
                }
                quote!(#q.min())
            }
            Kind::String { max_len } => {
                self.len_const(max_len, id);
                quote!(#krate::__private::String::new())
            }
            Kind::Vec { max_len, .. } => {
                self.len_const(max_len, id);
                quote!(#krate::__private::Vec::new())
            }
            Kind::Prim(prim) => {
                let ty = prim_type(*prim);
                quote!(<#ty as #krate::NetMessage>::blank())
            }
            Kind::Nested => quote_spanned!(span_of(ty)=> <#ty as #krate::NetMessage>::blank()),
        }
    }

    /// Bounds of a ranged (or `bits`) integer: literals when known, else typed `const`s
    /// behind assertions.
    fn int_consts(
        &mut self,
        int: IntTy,
        min: &Bound,
        max: &Bound,
        id: usize,
        bits_check: Option<&ConstExpr>,
        spans: Spans,
    ) -> TokenStream {
        if let (Bound::Known(lo), Bound::Known(_)) = (min, max) {
            return int_lit(int, *lo);
        }
        let t = int.ident();
        let (tmin, tmax) = (int.min(), int.max());
        let range_text = format!("{tmin}..={tmax}");
        if let Some(bits) = bits_check {
            let n = &bits.value;
            let message = format!(
                "bits = {} must be 1..={} for {}",
                bits.text,
                int.bits(),
                int.name()
            );
            let width = Literal::i128_unsuffixed(i128::from(int.bits()));
            self.items.extend(assertion(
                bits.spans,
                quote!(#n >= 1 && #n <= #width),
                &message,
            ));
        } else {
            for bound in [min, max] {
                if let Bound::Const(c) = bound {
                    let v = &c.value;
                    let message = format!(
                        "range bound `{}` does not fit in {} ({range_text}): use a wider type or a \
                         bound within it",
                        c.text,
                        int.name()
                    );
                    self.items.extend(assertion(
                        c.spans,
                        quote!(#v >= (#t::MIN as i128) && #v <= (#t::MAX as i128)),
                        &message,
                    ));
                }
            }
            let (lo, hi) = (bound_i128(min), bound_i128(max));
            let message = format!(
                "range {}..={} is empty: MIN must be <= MAX",
                bound_text(min),
                bound_text(max)
            );
            self.items
                .extend(assertion(spans, quote!(#lo <= #hi), &message));
        }
        let cmin = format_ident!("__NET_{}_MIN", id);
        let cmax = format_ident!("__NET_{}_MAX", id);
        let (lo, hi) = (bound_i128(min), bound_i128(max));
        self.items.extend(quote! {
            const #cmin: #t = #lo as #t;
            const #cmax: #t = #hi as #t;
        });
        quote!(#cmin)
    }

    /// A `max_len` that is not a literal: the `usize` constant `len_ref` names, behind an
    /// assertion.
    fn len_const(&mut self, max_len: &Bound, id: usize) {
        match max_len {
            Bound::Known(_) => {}
            Bound::Const(c) => {
                let name = format_ident!("__NET_{}_LEN", id);
                let v = &c.value;
                let message = format!("max_len = {} must be between 0 and 4294967295", c.text);
                self.items.extend(assertion(
                    c.spans,
                    quote!(#v >= 0 && #v <= 4294967295),
                    &message,
                ));
                self.items.extend(quote!(const #name: usize = #v as usize;));
            }
        }
    }

    fn len_ref(&self, max_len: &Bound, id: usize) -> TokenStream {
        len_expr(max_len, id)
    }
}

/// `stream.serialize_int(&mut __v, MIN, MAX)`: literal bounds when known, else the
/// field's typed `const`s.
fn int_call(int: IntTy, min: &Bound, max: &Bound, id: usize) -> TokenStream {
    let (Bound::Known(lo), Bound::Known(hi)) = (min, max) else {
        let cmin = format_ident!("__NET_{}_MIN", id);
        let cmax = format_ident!("__NET_{}_MAX", id);
        return quote!(stream.serialize_int(&mut __v, #cmin, #cmax));
    };
    let (min, max) = (int_lit(int, *lo), int_lit(int, *hi));
    quote!(stream.serialize_int(&mut __v, #min, #max))
}

fn dummy_const() -> ConstExpr {
    ConstExpr {
        value: TokenStream::new(),
        spans: Spans {
            lo: Span::call_site(),
            hi: Span::call_site(),
        },
        text: String::new(),
    }
}

fn bound_i128(bound: &Bound) -> TokenStream {
    match bound {
        Bound::Known(v) => {
            let v = Literal::i128_suffixed(*v);
            quote!(#v)
        }
        Bound::Const(c) => c.value.clone(),
    }
}

fn bound_text(bound: &Bound) -> String {
    match bound {
        Bound::Known(v) => v.to_string(),
        Bound::Const(c) => c.text.clone(),
    }
}

fn prim_type(prim: Prim) -> TokenStream {
    match prim {
        Prim::Bool => quote!(bool),
        Prim::Int(int) => {
            let t = int.ident();
            quote!(#t)
        }
        Prim::F32 => quote!(f32),
        Prim::F64 => quote!(f64),
    }
}
