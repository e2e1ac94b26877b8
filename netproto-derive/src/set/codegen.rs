//! The generated code of a message set: the `MessageSet` impl, `From` for each payload
//! type and the `max_bits` assertions; and the stub emitted beside errors.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Ident, Type};

use crate::ast::{Body, Input, Variant};
use crate::attr::TypeAttrs;

/// The `MessageSet` impl, the `From` impls and the `max_bits` assertions of a set.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let (Some(decl), Body::Enum(variants)) = (&input.set, &input.body) else {
        return TokenStream::new();
    };
    let ident = input.ident;
    let krate = &input.krate;
    let name = ident.to_string();
    let payloads = payloads(variants);
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
                .push(syn::parse_quote!(#param: #krate::NetMessage));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();

    let max_terms = payloads
        .iter()
        .map(|(_, ty)| quote!(<#ty as #krate::NetMessage>::MAX_BITS));
    let max_payload = max_terms.fold(
        quote!(0),
        |acc, term| quote!(#krate::__private::max_usize(#acc, #term)),
    );
    let id_arms = payloads.iter().enumerate().map(|(i, (v, _))| {
        let i = Literal::u32_unsuffixed(i as u32);
        quote!(Self::#v(..) => #i,)
    });
    let blank_arms = payloads.iter().enumerate().map(|(i, (v, ty))| {
        let i = Literal::u32_unsuffixed(i as u32);
        quote! {
            #i => ::core::option::Option::Some(Self::#v(<#ty as #krate::NetMessage>::blank())),
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
                    #type_bits_lit as usize + <#ty as #krate::NetMessage>::MAX_BITS <= #max_bits,
                    #message
                )
            };
            quote!(const _: () = #check;)
        })
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::MessageSet for #ident #ty_generics #where_clause {
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

/// Each variant with the payload type it wraps (a set's variants wrap one each).
fn payloads<'a>(variants: &'a [Variant<'a>]) -> Vec<(&'a Ident, &'a Type)> {
    variants
        .iter()
        .filter_map(|v| v.fields.list.first().map(|f| (v.ident, f.ty)))
        .collect()
}

/// The moves of a message set's `NetMessage` impl (empty for any other type): variant by
/// variant, so that moving a value copies its payload and not the whole enum (as large
/// as its largest variant).
pub(crate) fn moves(input: &Input<'_>) -> TokenStream {
    let (Some(_), Body::Enum(variants)) = (&input.set, &input.body) else {
        return TokenStream::new();
    };
    let krate = &input.krate;
    let payloads = payloads(variants);
    if payloads.is_empty() {
        // No value to move (and no arm to match a reference with): the defaults.
        return TokenStream::new();
    }
    let out_arms = payloads.iter().map(|(v, ty)| {
        quote! {
            Self::#v(payload) => Self::#v(<#ty as #krate::NetMessage>::move_out(payload)),
        }
    });
    let from_arms = payloads.iter().map(|(v, ty)| {
        quote! {
            Self::#v(payload) => {
                *self = Self::#v(<#ty as #krate::NetMessage>::move_out(payload));
            }
        }
    });
    quote! {
        #[inline]
        fn move_out(&mut self) -> Self {
            match self {
                #(#out_arms)*
            }
        }

        #[inline]
        fn move_from(&mut self, source: &mut Self) {
            match source {
                #(#from_arms)*
            }
        }
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
/// `attrs` are the type's attributes as parsed for a well-formed input: the stub and the
/// real impl agree on what declares a set.
pub(crate) fn stub(input: &DeriveInput, attrs: &TypeAttrs) -> TokenStream {
    if attrs.message_set.is_none() || !matches!(input.data, Data::Enum(_)) {
        return TokenStream::new();
    }
    let krate = attrs.crate_path();
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::MessageSet for #ident #ty_generics #where_clause {
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
