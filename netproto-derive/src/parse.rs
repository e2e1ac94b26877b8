//! Reads a derive input into the model of `ast`: the type's attributes (`attr`), then
//! each field's, checked against the field's type and resolved to a `Kind` by `check`,
//! collecting every error.

use syn::{Data, DeriveInput, Member};

use crate::ast::{Body, Field, Fields, Input, Style, Variant};
use crate::errors::Errors;
use crate::{attr, check};

/// Builds the model of `input`, reporting every problem found in it.
pub(crate) fn input(input: &DeriveInput) -> syn::Result<Input<'_>> {
    let mut errors = Errors::default();
    let type_attrs = attr::type_attrs(&input.attrs, &mut errors);
    let type_name = input.ident.to_string();
    let body = match &input.data {
        Data::Struct(data) => Body::Struct(fields(
            &data.fields,
            &type_name,
            type_attrs.delta.as_ref().map(|_| true),
            &mut errors,
        )),
        Data::Enum(data) => {
            if data.variants.is_empty() {
                errors.spanned(
                    &input.ident,
                    "NetMessage cannot be derived for an enum with no variants: a reader \
                     has no value to decode into; add a variant",
                );
            }
            if data.variants.len() > u32::MAX as usize {
                errors.spanned(&input.ident, "too many variants");
            }
            let variants = data
                .variants
                .iter()
                .map(|variant| {
                    attr::reject(&variant.attrs, "on an enum variant", &mut errors);
                    let prefix = format!("{type_name}::{}", variant.ident);
                    Variant {
                        ident: &variant.ident,
                        // An enum goes whole when changed: no field deltas.
                        fields: fields(
                            &variant.fields,
                            &prefix,
                            type_attrs.delta.as_ref().map(|_| false),
                            &mut errors,
                        ),
                    }
                })
                .collect();
            Body::Enum(variants)
        }
        Data::Union(data) => {
            errors.spanned(
                data.union_token,
                "NetMessage cannot be derived for a union: nothing on the wire says which \
                 field is active; use an enum, whose variant index is sent",
            );
            Body::Struct(Fields {
                style: Style::Unit,
                list: Vec::new(),
            })
        }
    };
    let set = crate::set::declare(input, &type_attrs, &body, &mut errors);
    errors.finish()?;
    Ok(Input {
        ident: &input.ident,
        generics: &input.generics,
        body,
        set,
        krate: type_attrs.crate_path(),
        delta: type_attrs.delta,
    })
}

/// The fields of a struct or variant: `delta` is `None` without `#[net(delta)]`,
/// `Some(true)` in a delta struct and `Some(false)` in a delta enum (which takes no
/// field deltas).
fn fields<'a>(
    fields: &'a syn::Fields,
    prefix: &str,
    delta: Option<bool>,
    errors: &mut Errors,
) -> Fields<'a> {
    let style = match fields {
        syn::Fields::Named(_) => Style::Named,
        syn::Fields::Unnamed(_) => Style::Tuple,
        syn::Fields::Unit => Style::Unit,
    };
    let list = fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let member = match &field.ident {
                Some(ident) => Member::Named(ident.clone()),
                None => Member::Unnamed(index.into()),
            };
            let name = match &field.ident {
                Some(ident) => ident.to_string().trim_start_matches("r#").to_owned(),
                None => index.to_string(),
            };
            let path = format!("{prefix}.{name}");
            let attrs = attr::field_attrs(&field.attrs, errors);
            let kind = check::kind(&field.ty, &attrs, errors);
            let delta = check::delta(&field.ty, &attrs, &kind, delta, errors);
            Field {
                member,
                ty: &field.ty,
                name,
                path,
                kind,
                delta,
            }
        })
        .collect();
    Fields { style, list }
}
