//! Message sets: `#[net(message_set)]` on an enum whose variants each wrap one message
//! type makes it the message factory (`netproto::MessageSet`), with `From` for each
//! payload and, with `max_bits = N`, a compile-time bound on every message's size.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Expr, Ident, Type};

use crate::ast::{Body, Input, Style};
use crate::attr::TypeAttrs;
use crate::errors::Errors;
use crate::value;

/// A checked `#[net(message_set, max_bits = N)]`.
pub(crate) struct SetDecl {
    /// `max_bits`, as a `usize` expression, with the span of its value.
    pub(crate) max_bits: Option<(TokenStream, String)>,
}

/// Checks the type-level attributes against the body: `message_set` needs an enum whose
/// every variant wraps exactly one message type (without attributes); `max_bits` needs
/// `message_set`.
pub(crate) fn declare(
    input: &DeriveInput,
    attrs: &TypeAttrs,
    body: &Body<'_>,
    errors: &mut Errors,
) -> Option<SetDecl> {
    let Some(keyword) = &attrs.message_set else {
        if let Some(max_bits) = &attrs.max_bits {
            errors.spanned(
                &max_bits.key,
                "`max_bits` bounds the messages of a message set: write \
                 `#[net(message_set, max_bits = N)]` on an enum whose variants each wrap one \
                 message type",
            );
        }
        return None;
    };
    let Data::Enum(data) = &input.data else {
        errors.spanned(
            keyword,
            "`message_set` goes on an enum whose variants each wrap one message type, e.g. \
             `enum GameMessage { Input(PlayerInput), Chat(ChatMessage) }`",
        );
        return None;
    };
    if let Body::Enum(variants) = body {
        for (variant, syn_variant) in variants.iter().zip(&data.variants) {
            let name = variant.ident;
            let problem = match (variant.fields.style, variant.fields.list.len()) {
                (Style::Tuple, 1) => None,
                (Style::Unit, _) => Some(format!(
                    "variant `{name}` of a message set wraps no message type: write \
                     `{name}({name})` with a `#[derive(NetMessage)] struct {name};` (a message \
                     set's variants each wrap exactly one message type)"
                )),
                (Style::Named, _) => Some(format!(
                    "variant `{name}` of a message set has named fields: move them into a \
                     `#[derive(NetMessage)] struct {name} {{ .. }}` and write `{name}({name})` \
                     (a message set's variants each wrap exactly one message type)"
                )),
                (_, n) => Some(format!(
                    "variant `{name}` of a message set wraps {n} types: put them in one \
                     `#[derive(NetMessage)]` struct and wrap that (a message set's variants \
                     each wrap exactly one message type)"
                )),
            };
            if let Some(problem) = problem {
                errors.spanned(syn_variant, problem);
                continue;
            }
            if let Some(field) = syn_variant.fields.iter().next() {
                for attr in field.attrs.iter().filter(|a| a.path().is_ident("net")) {
                    errors.spanned(
                        attr,
                        "a message set's payload takes no #[net(...)] attributes: put them on \
                         the fields of the payload type",
                    );
                }
            }
        }
    }
    let max_bits = attrs.max_bits.as_ref().and_then(|max_bits| {
        if input.generics.type_params().next().is_some() {
            errors.spanned(
                &max_bits.key,
                "`max_bits` cannot be checked on a generic message set: remove it, or make \
                 the enum concrete",
            );
            return None;
        }
        max_bits_value(&max_bits.value, errors)
    });
    Some(SetDecl { max_bits })
}

fn max_bits_value(expr: &Expr, errors: &mut Errors) -> Option<(TokenStream, String)> {
    match value::int(expr) {
        Err(error) => {
            errors.push(error);
            None
        }
        Ok(Some(lit)) if lit.value < 1 || lit.value > i128::from(u32::MAX) => {
            errors.spanned(
                expr,
                format_args!(
                    "max_bits = {} is not a message size: write a number of bits from 1 to \
                     4294967295, e.g. max_bits = 8000",
                    lit.value
                ),
            );
            None
        }
        Ok(Some(lit)) => {
            let n = Literal::usize_unsuffixed(lit.value as usize);
            Some((quote!(#n), lit.value.to_string()))
        }
        Ok(None) => {
            if let Some(span) = value::mentions_self(expr) {
                errors.at(
                    span,
                    "max_bits cannot use `Self`: name the constant by its path",
                );
                return None;
            }
            Some((quote!(((#expr) as usize)), value::render(expr)))
        }
    }
}

/// The `MessageSet` impl, the `From` impls and the `max_bits` assertions of a set.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let (Some(decl), Body::Enum(variants)) = (&input.set, &input.body) else {
        return TokenStream::new();
    };
    let ident = input.ident;
    let name = ident.to_string();
    let payloads: Vec<(&Ident, &Type)> = variants
        .iter()
        .filter_map(|v| v.fields.list.first().map(|f| (v.ident, f.ty)))
        .collect();
    let count = payloads.len();
    let count_lit = Literal::u32_unsuffixed(count as u32);
    let type_bits = crate::ast::bits_required(0, count as i128 - 1);
    let type_bits_lit = Literal::u32_unsuffixed(type_bits);

    let mut generics = input.generics.clone();
    let params: Vec<Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    if !params.is_empty() {
        let where_clause = generics.make_where_clause();
        for param in params {
            where_clause
                .predicates
                .push(syn::parse_quote!(#param: ::netproto::NetMessage));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();

    let max_terms = payloads
        .iter()
        .map(|(_, ty)| quote!(<#ty as ::netproto::NetMessage>::MAX_BITS));
    let max_payload = max_terms.fold(
        quote!(0),
        |acc, term| quote!(::netproto::__private::max_usize(#acc, #term)),
    );
    let id_arms = payloads.iter().enumerate().map(|(i, (v, _))| {
        let i = Literal::u32_unsuffixed(i as u32);
        quote!(Self::#v(..) => #i,)
    });
    let blank_arms = payloads.iter().enumerate().map(|(i, (v, ty))| {
        let i = Literal::u32_unsuffixed(i as u32);
        quote! {
            #i => ::core::option::Option::Some(Self::#v(<#ty as ::netproto::NetMessage>::blank())),
        }
    });

    // `From` for each payload type written in exactly one variant (two `From` impls for
    // one type would conflict).
    // A bare type parameter could be any of the other payloads: no `From` for it either
    // (unless it is the only one).
    let key = |ty: &Type| quote!(#ty).to_string();
    let params: Vec<String> = input
        .generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    let froms = payloads.iter().filter_map(|(v, ty)| {
        let k = key(ty);
        if payloads.iter().filter(|(_, t)| key(t) == k).count() > 1 {
            return None;
        }
        if payloads.len() > 1 && params.contains(&k) {
            return None;
        }
        Some(quote! {
            #[automatically_derived]
            impl #impl_generics ::core::convert::From<#ty> for #ident #ty_generics #where_clause {
                #[inline]
                fn from(message: #ty) -> Self {
                    Self::#v(message)
                }
            }
        })
    });

    let (name, type_bits_lit) = (&name, &type_bits_lit);
    let limits = decl.max_bits.iter().flat_map(|(max_bits, text)| {
        payloads.iter().map(move |(v, ty)| {
            let ty_text = value_type(ty);
            let message = format!(
                "message set {name}: payload `{ty_text}` (variant {v}) can exceed max_bits = \
                 {text}: its MAX_BITS plus the {type_bits}-bit type id is larger; make \
                 `{ty_text}` smaller or raise max_bits"
            );
            let span = ty.span();
            let check = quote_spanned! {span=>
                ::core::assert!(
                    #type_bits_lit as usize + <#ty as ::netproto::NetMessage>::MAX_BITS <= #max_bits,
                    #message
                )
            };
            quote!(const _: () = #check;)
        })
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics ::netproto::MessageSet for #ident #ty_generics #where_clause {
            const COUNT: u32 = #count_lit;
            const TYPE_BITS: u32 = #type_bits_lit;
            const MAX_PAYLOAD_BITS: usize = #max_payload;

            #[inline]
            fn type_id(&self) -> u32 {
                match self {
                    #(#id_arms)*
                }
            }

            fn blank_of(type_id: u32) -> ::core::option::Option<Self> {
                match type_id {
                    #(#blank_arms)*
                    _ => ::core::option::Option::None,
                }
            }
        }

        #(#froms)*

        #(#limits)*
    }
}

/// The type as written, for messages.
fn value_type(ty: &Type) -> String {
    quote!(#ty)
        .to_string()
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace(" :: ", "::")
}

/// Beside `compile_error!`: a `MessageSet` impl for an enum declared a message set, so
/// that its uses do not add "MessageSet is not implemented" to the real errors.
pub(crate) fn stub(input: &DeriveInput) -> TokenStream {
    let declared = input.attrs.iter().any(|attr| {
        attr.path().is_ident("net")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| list.tokens.to_string().contains("message_set"))
    });
    if !declared || !matches!(input.data, Data::Enum(_)) {
        return TokenStream::new();
    }
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics ::netproto::MessageSet for #ident #ty_generics #where_clause {
                const COUNT: u32 = 0;
                const TYPE_BITS: u32 = 0;
                const MAX_PAYLOAD_BITS: usize = 0;
                fn type_id(&self) -> u32 {
                    ::core::unimplemented!()
                }
                fn blank_of(_: u32) -> ::core::option::Option<Self> {
                    ::core::unimplemented!()
                }
            }
        };
    }
}
