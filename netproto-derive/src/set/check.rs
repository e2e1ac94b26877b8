//! Validation of a message set: `message_set` needs an enum whose every variant wraps
//! exactly one message type, without attributes; `max_bits` needs `message_set`, a
//! concrete enum and a size from 1 to `u32::MAX` bits.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Expr};

use super::SetDecl;
use crate::ast::{Body, Style};
use crate::attr::TypeAttrs;
use crate::errors::Errors;
use crate::value;

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
