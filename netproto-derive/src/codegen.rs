//! Generates the `NetMessage` impl from the model, in one traversal of the fields.
//!
//! The output is wrapped in `const _: () = { ... };` and uses absolute paths only
//! (`::core::...`, and trait functions as `<T as ::core::convert::From<U>>::from`): it
//! compiles where the prelude is not in scope (`tests/tests/derive_hygiene.rs`). It
//! carries no `#[allow(...)]`: it is written to be lint-clean, which
//! `tests/tests/derive_lints.rs` checks with rustc's and clippy's pedantic lints denied
//! (a single-variant enum, for one, is filled through an irrefutable `let`, not an
//! `if let`). Per
//! field it produces: block-level `const` items (typed bounds, quantizations, and the
//! assertions that check bounds the macro could not evaluate), a blank value, the
//! per-field serialize statement (the tracing path), and, for fixed-width fields, a
//! [`Part`] of the fused fast path.
//!
//! `MAX_BITS` / `MIN_BITS` are not summed here: they are the bounds of `SCHEMA` (see
//! `schema`), whose `const fn` constructors sum the fields' bounds, so the two cannot
//! disagree. Both are associated constants, evaluated by the compiler.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Type};

use crate::ast::{
    Body, Bound, ConstExpr, Field, Fields, Input, Kind, Prim, Quant, Spans, Style, bits_required,
};
use crate::fused::{self, Part, Step};
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
    let (blank, serialize, write, pack) = match &input.body {
        Body::Struct(fields) => {
            let fg = cx.fields(fields);
            let pattern = fg.pattern(quote!(Self));
            let bind = if fg.bound {
                quote!(let #pattern = self;)
            } else {
                TokenStream::new()
            };
            let body = fg.body(None, false);
            let serialize = quote! {
                #bind
                #body
                ::core::result::Result::Ok(())
            };
            let body = fg.body(None, true);
            let write = quote! {
                #bind
                #body
                ::core::result::Result::Ok(())
            };
            let packs = &fg.packs;
            let pack = quote! {
                #bind
                #(#packs)*
                ::core::result::Result::Ok(())
            };
            (fg.blank(quote!(Self)), serialize, write, pack)
        }
        Body::Enum(variants) => {
            let count = variants.len();
            let count_lit = Literal::u32_unsuffixed(count as u32);
            let index_bits = bits_required(0, count as i128 - 1);
            let fgs: Vec<_> = variants
                .iter()
                .map(|v| (v.ident, cx.fields(&v.fields)))
                .collect();
            let blanks: Vec<_> = fgs
                .iter()
                .map(|(ident, fg)| fg.blank(quote!(Self::#ident)))
                .collect();
            // Reading dispatches once: build the blank variant, then fill it in place
            // (the pattern is then known to match, so no second dispatch is made). Filling
            // a local and storing it once measured slower.
            let read_arms = fgs
                .iter()
                .zip(&blanks)
                .enumerate()
                .map(|(i, ((ident, fg), blank))| {
                    let index = if i + 1 == count {
                        quote!(_)
                    } else {
                        let i = Literal::u32_unsuffixed(i as u32);
                        quote!(#i)
                    };
                    let fill = if fg.bound {
                        let pattern = fg.pattern(quote!(Self::#ident));
                        let body = fg.body(None, false);
                        if count == 1 {
                            // The only variant: its pattern is irrefutable.
                            quote!(let #pattern = self; #body)
                        } else {
                            quote!(if let #pattern = self { #body })
                        }
                    } else {
                        TokenStream::new()
                    };
                    quote!(#index => { *self = #blank; #fill })
                });
            // Writing and measuring dispatch once too: each arm sends its own index, fused
            // with the variant's first fields when they are fixed-width.
            let attribute = quote!(.map_err(|e| __S::in_field(e, #type_name))?);
            let arms = fgs.iter().enumerate().map(|(i, (ident, fg))| {
                let pattern = fg.pattern(quote!(Self::#ident));
                let tag_bits = Literal::u64_suffixed(i as u64);
                let i = Literal::u32_unsuffixed(i as u32);
                let single = quote! {{
                    let mut __index: u32 = #i;
                    stream.serialize_index(&mut __index, #count_lit) #attribute;
                }};
                let tag = Part {
                    width: index_bits,
                    path: type_name.clone(),
                    write: quote!(#tag_bits),
                    // Never run: the write path does not read.
                    read: TokenStream::new(),
                };
                let body = fg.body(Some((tag, single)), true);
                quote!(#pattern => { #body })
            });
            let serialize = quote! {
                // The index belongs to the enclosing field: no begin_field of its own.
                let mut __index: u32 = 0;
                stream.serialize_index(&mut __index, #count_lit) #attribute;
                match __index { #(#read_arms)* }
                ::core::result::Result::Ok(())
            };
            let write = quote! {
                match self { #(#arms)* }
                ::core::result::Result::Ok(())
            };
            let pack_arms = fgs.iter().enumerate().map(|(i, (ident, fg))| {
                let pattern = fg.pattern(quote!(Self::#ident));
                let packs = &fg.packs;
                let tag = if index_bits == 0 {
                    TokenStream::new()
                } else {
                    let i = Literal::u64_unsuffixed(i as u64);
                    let w = Literal::u32_unsuffixed(index_bits);
                    quote!(__p.push(stream, #i, #w)?;)
                };
                quote!(#pattern => { #tag #(#packs)* })
            });
            let pack = quote! {
                match self { #(#pack_arms)* }
                ::core::result::Result::Ok(())
            };
            let first_blank = blanks
                .first()
                .cloned()
                .unwrap_or_else(|| quote!(::core::unreachable!()));
            (first_blank, serialize, write, pack)
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

                // Always: the stream's state then stays in registers across a whole
                // message (and the caller's loop) instead of going through memory per field.
                #[inline(always)]
                fn serialize<__S: #krate::Stream>(
                    &mut self,
                    stream: &mut __S,
                ) -> ::core::result::Result<(), __S::Error> {
                    // Writing and measuring never change the message: one path for them,
                    // from a shared reference.
                    if !__S::IS_READING {
                        return <Self as #krate::NetMessage>::write(self, stream);
                    }
                    #serialize
                }

                #[inline(always)]
                fn write<__S: #krate::Stream>(
                    &self,
                    stream: &mut __S,
                ) -> ::core::result::Result<(), __S::Error> {
                    // Writing with room for the largest value: fixed-width fields, across
                    // nested types, go out in words of up to 64 bits. Short of room, the
                    // per-run path below names the field that does not fit.
                    if __S::IS_WRITING
                        && !__S::TRACING
                        && stream.bits_remaining() >= <Self as #krate::NetMessage>::MAX_BITS
                    {
                        let mut __p = #krate::__private::Packer::new();
                        <Self as #krate::NetMessage>::pack(self, stream, &mut __p)?;
                        return __p.flush(stream);
                    }
                    #write
                }

                #[inline(always)]
                fn pack<__S: #krate::Stream>(
                    &self,
                    stream: &mut __S,
                    __p: &mut #krate::__private::Packer,
                ) -> ::core::result::Result<(), __S::Error> {
                    #pack
                }
            }

            #set
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
                fn serialize<__S: #krate::Stream>(
                    &mut self,
                    _: &mut __S,
                ) -> ::core::result::Result<(), __S::Error> {
                    ::core::unimplemented!()
                }
                fn write<__S: #krate::Stream>(
                    &self,
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
    style: Style,
    /// `member: binding` for each sent field.
    bindings: Vec<TokenStream>,
    /// `member: blank` for every field.
    blanks: Vec<TokenStream>,
    /// Per-field statements with `begin_field` / `end_field` (the tracing path).
    traced: Vec<TokenStream>,
    /// Per-field statements and fused parts, in wire order (the fast path).
    items: Vec<(Option<Part>, TokenStream)>,
    /// `traced` and `items` from a shared reference (the write path).
    write_traced: Vec<TokenStream>,
    write_items: Vec<(Option<Part>, TokenStream)>,
    /// Per-field statements of the write fast path through a `Packer` (`__p`).
    packs: Vec<TokenStream>,
    /// Whether any field is bound (a pattern is needed).
    bound: bool,
}

impl FieldsGen {
    /// Statements serializing the fields, after `prefix` (an enum's variant index, which
    /// the fast path fuses with the first fields when they are fixed-width).
    ///
    /// `write` selects the statements from a shared reference (the `write` method, which
    /// never reads); otherwise they go through `&mut` (the `serialize` method).
    fn body(&self, prefix: Option<(Part, TokenStream)>, write: bool) -> TokenStream {
        let mut traced = Vec::new();
        let mut items = Vec::new();
        if let Some((part, single)) = prefix {
            traced.push(single.clone());
            items.push((Some(part), single));
        }
        let (own_traced, own_items) = if write {
            (&self.write_traced, &self.write_items)
        } else {
            (&self.traced, &self.items)
        };
        traced.extend(own_traced.iter().cloned());
        if write {
            items.extend(own_items.iter().cloned());
        } else {
            // Reading (the only use of this path: `serialize` writes through `write`),
            // a fixed-width field on its own is read by its part's code.
            items.extend(own_items.iter().map(|(part, single)| {
                let single = part
                    .as_ref()
                    .map_or_else(|| single.clone(), fused::read_single);
                (part.clone(), single)
            }));
        }
        if items.is_empty() {
            return TokenStream::new();
        }
        let fast = fused::plan(items).into_iter().map(|step| match step {
            Step::Single(single) => single,
            Step::Run(run) => {
                let parts: Vec<&Part> = run.iter().map(|(p, _)| p).collect();
                let singles: Vec<&TokenStream> = run.iter().map(|(_, s)| s).collect();
                fused::run_code(&parts, &singles, !write)
            }
        });
        quote! {
            if __S::TRACING {
                #(#traced)*
            } else {
                #(#fast)*
            }
        }
    }

    fn pattern(&self, path: TokenStream) -> TokenStream {
        let bindings = &self.bindings;
        match self.style {
            Style::Unit => quote!(#path { .. }),
            _ => quote!(#path { #(#bindings,)* .. }),
        }
    }

    fn blank(&self, path: TokenStream) -> TokenStream {
        let blanks = &self.blanks;
        quote!(#path { #(#blanks,)* })
    }
}

/// The generated pieces of one sent field.
struct FieldGen {
    /// The field's statement through `&mut` (reads, writes and measures).
    single: TokenStream,
    /// The same from a shared reference (writes and measures only): a plain value is
    /// copied into a temporary and goes through `single`; strings, sequences and nested
    /// types go through their `&`-taking counterparts.
    write_single: TokenStream,
    part: Option<Part>,
}

impl Cx {
    fn fields(&mut self, fields: &Fields<'_>) -> FieldsGen {
        let mut fg = FieldsGen {
            style: fields.style,
            bindings: Vec::new(),
            blanks: Vec::new(),
            traced: Vec::new(),
            items: Vec::new(),
            write_traced: Vec::new(),
            write_items: Vec::new(),
            packs: Vec::new(),
            bound: false,
        };
        let mut traced = Vec::new();
        let mut items = Vec::new();
        for field in &fields.list {
            let id = self.next_id;
            self.next_id += 1;
            let member = &field.member;
            let binding = format_ident!("__f{}", id);
            let blank = self.field_consts(field, id);
            fg.blanks.push(quote!(#member: #blank));
            if matches!(field.kind, Kind::Skip) {
                continue;
            }
            fg.bindings.push(quote!(#member: #binding));
            fg.bound = true;
            let FieldGen {
                single,
                write_single,
                part,
            } = self.field_code(field, id, &binding);
            debug_assert_eq!(part.as_ref().map(|p| p.width), field.kind.fixed_width());
            fg.packs.push(pack_code(
                &self.krate,
                field,
                &binding,
                part.as_ref(),
                &write_single,
            ));
            let name = &field.name;
            for (traced, single) in [
                (&mut traced, &single),
                (&mut fg.write_traced, &write_single),
            ] {
                traced.push(quote! {
                    stream.begin_field(#name);
                    #single
                    stream.end_field();
                });
            }
            fg.write_items.push((part.clone(), write_single));
            items.push((part, single));
        }
        fg.traced = traced;
        fg.items = items;
        fg
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

    /// The per-field statements and, for fixed-width fields, the fused part.
    fn field_code(&mut self, field: &Field<'_>, id: usize, b: &Ident) -> FieldGen {
        let krate = self.krate.clone();
        let (single, part) = self.field_code_mut(field, id, b);
        let path = &field.path;
        let attribute = quote!(.map_err(|e| __S::in_field(e, #path))?);
        let write_single = match &field.kind {
            Kind::Skip => TokenStream::new(),
            // Plain values: the same statement on a copy (the binding is shadowed by a
            // `&mut` to it), which the writer only reads.
            Kind::Ranged { .. } | Kind::Bits { .. } | Kind::Quantized(_) | Kind::Prim(_) => {
                quote!({ let #b = &mut { *#b }; #single })
            }
            Kind::String { max_len } => {
                let len = self.len_ref(max_len, id);
                quote!(stream.write_string(#b, #len) #attribute;)
            }
            Kind::Vec { max_len, elem } => {
                let len = self.len_ref(max_len, id);
                let f = quote_spanned!(span_of(elem)=> <__S as #krate::Stream>::write_vec::<#elem>);
                quote!(#f(stream, #b, #len) #attribute;)
            }
            Kind::Nested => {
                let ty = field.ty;
                let f = quote_spanned!(span_of(ty)=> <#ty as #krate::NetMessage>::write);
                quote!(#f(#b, stream) #attribute;)
            }
        };
        FieldGen {
            single,
            write_single,
            part,
        }
    }

    /// The per-field statement through `&mut` and, for fixed-width fields, the fused part.
    fn field_code_mut(
        &mut self,
        field: &Field<'_>,
        id: usize,
        b: &Ident,
    ) -> (TokenStream, Option<Part>) {
        let krate = self.krate.clone();
        let path = &field.path;
        let attribute = quote!(.map_err(|e| __S::in_field(e, #path))?);
        match &field.kind {
            Kind::Skip => (TokenStream::new(), None),
            Kind::Ranged { int, min, max, .. } => self.int_code(field, *int, min, max, id, b),
            Kind::Bits { int, bits } => {
                let (min, max) = match bits {
                    Bound::Known(n) => (Bound::Known(0), Bound::Known((1i128 << n) - 1)),
                    // Only the const names matter below.
                    Bound::Const(_) => (Bound::Known(0), Bound::Const(dummy_const())),
                };
                self.int_code(field, *int, &min, &max, id, b)
            }
            Kind::Quantized(quant) => {
                let q = format_ident!("__NET_{}_Q", id);
                let single = quote!(stream.serialize_quantized(#b, &#q) #attribute;);
                let part = match quant {
                    Quant::Known { bits, .. } => Some(Part {
                        width: *bits,
                        path: path.clone(),
                        write: quote!({
                            stream.check(#q.contains(*#b), #krate::ErrorKind::OutOfRange) #attribute;
                            <u64 as ::core::convert::From<u32>>::from(#q.quantize(*#b))
                        }),
                        read: quote! {
                            stream.check(__raw <= <u64 as ::core::convert::From<u32>>::from(#q.max_int()), #krate::ErrorKind::OutOfRange) #attribute;
                            *#b = #q.dequantize(__raw as u32);
                        },
                    }),
                    Quant::Const { .. } => None,
                };
                (single, part)
            }
            Kind::String { max_len } => {
                let len = self.len_ref(max_len, id);
                (quote!(stream.serialize_string(#b, #len) #attribute;), None)
            }
            Kind::Vec { max_len, elem } => {
                let len = self.len_ref(max_len, id);
                // The path spanned on the element type: a missing `NetMessage` impl points
                // there. Only the path: locals (`stream`, the binding) must keep the
                // derive's own hygiene, or a derive inside a `macro_rules!` cannot see them.
                let f =
                    quote_spanned!(span_of(elem)=> <__S as #krate::Stream>::serialize_vec::<#elem>);
                (quote!(#f(stream, #b, #len) #attribute;), None)
            }
            Kind::Prim(prim) => {
                let ty = prim_type(*prim);
                let single = quote!(<#ty as #krate::NetMessage>::serialize(#b, stream) #attribute;);
                let (write, read) = match prim {
                    Prim::Bool => (
                        quote!(<u64 as ::core::convert::From<bool>>::from(*#b)),
                        quote!(*#b = __raw != 0;),
                    ),
                    Prim::F32 => (
                        quote!(<u64 as ::core::convert::From<u32>>::from(#b.to_bits())),
                        quote!(*#b = f32::from_bits(__raw as u32);),
                    ),
                    Prim::F64 => (quote!(#b.to_bits()), quote!(*#b = f64::from_bits(__raw);)),
                    Prim::Int(int) => {
                        let t = int.ident();
                        (
                            quote!(<#t as #krate::RangedInt>::offset_from(*#b, #t::MIN)),
                            quote!(*#b = <#t as #krate::RangedInt>::from_offset(#t::MIN, __raw);),
                        )
                    }
                };
                let part = Part {
                    width: prim_width(*prim),
                    path: path.clone(),
                    write,
                    read,
                };
                (single, Some(part))
            }
            Kind::Nested => {
                let ty = field.ty;
                let f = quote_spanned!(span_of(ty)=> <#ty as #krate::NetMessage>::serialize);
                (quote!(#f(#b, stream) #attribute;), None)
            }
        }
    }

    fn int_code(
        &mut self,
        field: &Field<'_>,
        int: IntTy,
        min: &Bound,
        max: &Bound,
        id: usize,
        b: &Ident,
    ) -> (TokenStream, Option<Part>) {
        let krate = self.krate.clone();
        let path = &field.path;
        let attribute = quote!(.map_err(|e| __S::in_field(e, #path))?);
        let t = int.ident();
        let (Bound::Known(lo), Bound::Known(hi)) = (min, max) else {
            let cmin = format_ident!("__NET_{}_MIN", id);
            let cmax = format_ident!("__NET_{}_MAX", id);
            return (
                quote!(stream.serialize_int(#b, #cmin, #cmax) #attribute;),
                None,
            );
        };
        let (lo, hi) = (*lo, *hi);
        let (min, max) = (int_lit(int, lo), int_lit(int, hi));
        let single = quote!(stream.serialize_int(#b, #min, #max) #attribute;);
        let width = bits_required(lo, hi);
        let span = (hi - lo) as u64;
        let span_lit = Literal::u64_unsuffixed(span);
        // Offsets of a full-range field cannot exceed the span: no check is needed.
        let full = hi - lo == int.max() - int.min();
        let write_check = if full {
            TokenStream::new()
        } else {
            quote!(stream.check(__o <= #span_lit, #krate::ErrorKind::OutOfRange) #attribute;)
        };
        let fits_mask = width == 64 || span == (1u64 << width) - 1;
        let read_check = if fits_mask {
            TokenStream::new()
        } else {
            quote!(stream.check(__raw <= #span_lit, #krate::ErrorKind::OutOfRange) #attribute;)
        };
        let part = Part {
            width,
            path: path.clone(),
            write: quote!({
                let __o: u64 = <#t as #krate::RangedInt>::offset_from(*#b, #min);
                #write_check
                __o
            }),
            read: quote! {
                #read_check
                *#b = <#t as #krate::RangedInt>::from_offset(#min, __raw);
            },
        };
        (single, Some(part))
    }

    fn len_ref(&self, max_len: &Bound, id: usize) -> TokenStream {
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

/// A field's statement on the write fast path: a fixed-width field is checked, then pushed
/// into the packer `__p`; a nested type packs itself into it; anything else (strings,
/// sequences, options, ...) flushes the packer and writes as usual.
fn pack_code(
    krate: &syn::Path,
    field: &Field<'_>,
    b: &Ident,
    part: Option<&Part>,
    single: &TokenStream,
) -> TokenStream {
    if let Some(part) = part {
        let write = &part.write;
        if part.width == 0 {
            return quote!({ let _: u64 = #write; });
        }
        let width = Literal::u32_unsuffixed(part.width);
        return quote!({
            let __v: u64 = #write;
            __p.push(stream, __v, #width)?;
        });
    }
    if let Kind::Nested = field.kind {
        let ty = field.ty;
        let path = &field.path;
        let f = quote_spanned!(span_of(ty)=> <#ty as #krate::NetMessage>::pack);
        return quote!(#f(#b, stream, __p).map_err(|e| __S::in_field(e, #path))?;);
    }
    quote! {
        __p.flush(stream)?;
        #single
    }
}

/// `const _: () = ::core::assert!(cond, "message");`, reported under `spans`.
fn assertion(spans: Spans, cond: TokenStream, message: &str) -> TokenStream {
    let assert = spanned_macro(spans, quote!(::core::assert), quote!(#cond, #message));
    quote!(const _: () = #assert;)
}

/// A macro call whose path carries `spans.lo` and whose parentheses carry `spans.hi`:
/// the compiler shows a failure inside it under everything from `lo` to `hi`.
fn spanned_macro(spans: Spans, path: TokenStream, args: TokenStream) -> TokenStream {
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

/// A typed integer literal (`-5i8`, `100u8`, `i64::MIN`).
fn int_lit(int: IntTy, value: i128) -> TokenStream {
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

fn prim_width(prim: Prim) -> u32 {
    match prim {
        Prim::Bool => 1,
        Prim::Int(int) => int.bits(),
        Prim::F32 => 32,
        Prim::F64 => 64,
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

fn span_of(ty: &Type) -> Span {
    syn::spanned::Spanned::span(ty)
}

/// The type parameters that get a `NetMessage` bound: those that appear in the type of
/// a field that goes on the wire, as serde infers its bounds. A parameter used only by
/// skipped fields (or by none) gets none: the field's own bound, if it needs one, is
/// the user's `where` clause.
fn bounded_params(input: &Input<'_>) -> Vec<Ident> {
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
