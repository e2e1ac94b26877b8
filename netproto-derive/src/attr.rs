//! `#[net(...)]` parsed into a typed form that keeps the span of every key and value.
//!
//! This module checks syntax only (known keys, no duplicates, well-formed values). Whether
//! a key suits the field's type, and whether two keys conflict, is `check`'s job; whether
//! the type-level keys suit the type is `set::check`'s.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, Ident, Path, Token};

use crate::errors::Errors;

/// The keys a field may carry, for the "unknown key" message.
const FIELD_KEYS: &str = "range, bits, quantize, max_len, skip, delta";

/// A key and the value written after it.
pub(crate) struct Keyed<T> {
    /// The key as written, for spans.
    pub(crate) key: Ident,
    pub(crate) value: T,
}

/// `key = value`, for error spans that cover a whole parameter.
impl quote::ToTokens for Keyed<Expr> {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        self.key.to_tokens(tokens);
        <Token![=]>::default().to_tokens(tokens);
        self.value.to_tokens(tokens);
    }
}

/// `quantize(min = A, max = B, res = R)`; missing parameters are reported by `check`.
pub(crate) struct Quantize {
    pub(crate) min: Option<Keyed<Expr>>,
    pub(crate) max: Option<Keyed<Expr>>,
    pub(crate) res: Option<Keyed<Expr>>,
    /// A parameter was misspelt or malformed (already reported): a missing one is not news.
    pub(crate) malformed: bool,
}

/// Everything `#[net(...)]` says about one field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// `range = MIN..=MAX` or `MIN..MAX`, kept as written.
    pub(crate) range: Option<Keyed<Expr>>,
    /// `bits = N`.
    pub(crate) bits: Option<Keyed<Expr>>,
    /// `quantize(...)`.
    pub(crate) quantize: Option<Keyed<Quantize>>,
    /// `max_len = N`.
    pub(crate) max_len: Option<Keyed<Expr>>,
    /// `skip`.
    pub(crate) skip: Option<Ident>,
    /// `delta = LO..=HI`: the range of a changed value's difference (delta encoding).
    /// Not an encoding of its own: it is not in `order`, and combines with `range`,
    /// `bits` and `quantize`.
    pub(crate) delta: Option<Keyed<Expr>>,
    /// Every key in the order written (for conflict messages that point at the later key).
    pub(crate) order: Vec<Ident>,
}

/// Parses every `#[net(...)]` on a field, recording errors and going on past them.
pub(crate) fn field_attrs(attrs: &[Attribute], errors: &mut Errors) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("net")) {
        let result = attr.parse_nested_meta(|meta| {
            let Some(key) = meta.path.get_ident().cloned() else {
                errors.spanned(
                    &meta.path,
                    format_args!("unknown net attribute; expected one of: {FIELD_KEYS}"),
                );
                return skip_value(&meta);
            };
            match key.to_string().as_str() {
                "range" => {
                    let value = meta.value()?.parse::<Expr>()?;
                    set(&mut out.range, key.clone(), value, errors);
                }
                "bits" => {
                    let value = meta.value()?.parse::<Expr>()?;
                    set(&mut out.bits, key.clone(), value, errors);
                }
                "max_len" => {
                    let value = meta.value()?.parse::<Expr>()?;
                    set(&mut out.max_len, key.clone(), value, errors);
                }
                "delta" => {
                    if !meta.input.peek(Token![=]) {
                        errors.spanned(
                            &key,
                            "`delta` on a field takes the range of a difference, e.g. \
                             `delta = -31..=31`; `#[net(delta)]` alone goes on the type",
                        );
                        return skip_value(&meta);
                    }
                    let value = meta.value()?.parse::<Expr>()?;
                    set(&mut out.delta, key, value, errors);
                    return Ok(());
                }
                "quantize" => {
                    let value = quantize(&meta, errors)?;
                    set(&mut out.quantize, key.clone(), value, errors);
                }
                "skip" => {
                    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                        errors.spanned(&key, "`skip` takes no value: write `#[net(skip)]`");
                        skip_value(&meta)?;
                    }
                    if out.skip.is_some() {
                        errors.spanned(&key, "duplicate `skip`: write it once");
                    } else {
                        out.skip = Some(key.clone());
                    }
                }
                other => {
                    let hint = suggestion(other)
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_default();
                    errors.spanned(
                        &key,
                        format_args!(
                            "unknown net attribute `{other}`{hint} (expected one of: {FIELD_KEYS})"
                        ),
                    );
                    return skip_value(&meta);
                }
            }
            out.order.push(key);
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    out
}

/// The keys the type itself may carry, for the "unknown key" message.
const TYPE_KEYS: &str = "crate, delta, message_set, max_bits";

/// Everything `#[net(...)]` says about the type itself.
#[derive(Default)]
pub(crate) struct TypeAttrs {
    /// `message_set`: the enum is a message set (its variants each wrap one message type).
    pub(crate) message_set: Option<Ident>,
    /// `max_bits = N`: the largest message of the set, type id included.
    pub(crate) max_bits: Option<Keyed<Expr>>,
    /// `crate = "path"`: where the generated code finds netproto (a re-export).
    pub(crate) krate: Option<Keyed<Path>>,
    /// `delta`: the type also gets a `NetDelta` impl (delta encoding).
    pub(crate) delta: Option<Ident>,
}

impl TypeAttrs {
    /// The path of the netproto crate in generated code: `crate = "..."`, or `::netproto`.
    pub(crate) fn crate_path(&self) -> Path {
        self.krate
            .as_ref()
            .map_or_else(|| syn::parse_quote!(::netproto), |k| k.value.clone())
    }
}

/// Parses every `#[net(...)]` on the type itself, recording errors and going on past them.
pub(crate) fn type_attrs(attrs: &[Attribute], errors: &mut Errors) -> TypeAttrs {
    let mut out = TypeAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("net")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().cloned();
            match key.as_ref().map(Ident::to_string).as_deref() {
                Some("message_set") => {
                    let Some(key) = key else { return Ok(()) };
                    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                        errors.spanned(
                            &key,
                            "`message_set` takes no value: write `#[net(message_set)]`, or \
                             `#[net(message_set, max_bits = N)]` to bound its messages",
                        );
                        skip_value(&meta)?;
                    }
                    if out.message_set.is_some() {
                        errors.spanned(&key, "duplicate `message_set`: write it once");
                    } else {
                        out.message_set = Some(key);
                    }
                }
                Some("delta") if !meta.input.peek(Token![=]) => {
                    let Some(key) = key else { return Ok(()) };
                    if meta.input.peek(syn::token::Paren) {
                        errors.spanned(
                            &key,
                            "`delta` on the type takes no value: write `#[net(delta)]`, and \
                             `delta = LO..=HI` on the fields that may send a difference",
                        );
                        skip_value(&meta)?;
                    }
                    if out.delta.is_some() {
                        errors.spanned(&key, "duplicate `delta`: write it once");
                    } else {
                        out.delta = Some(key);
                    }
                }
                Some("max_bits") => {
                    let Some(key) = key else { return Ok(()) };
                    let value = meta.value()?.parse::<Expr>()?;
                    set(&mut out.max_bits, key, value, errors);
                }
                Some("crate") => {
                    let Some(key) = key else { return Ok(()) };
                    if let Some(path) = crate_path(&meta, &key, errors)? {
                        set(&mut out.krate, key, path, errors);
                    }
                }
                Some(field_key) if FIELD_KEYS.split(", ").any(|k| k == field_key) => {
                    errors.spanned(
                        &meta.path,
                        format_args!(
                            "`{field_key}` is a field attribute: put it on a field; on the type \
                             itself #[net(...)] takes {TYPE_KEYS} (the last two on an enum)"
                        ),
                    );
                    return skip_value(&meta);
                }
                _ => {
                    errors.spanned(
                        &meta.path,
                        format_args!(
                            "unknown net attribute on the type itself; expected one of: \
                             {TYPE_KEYS} (field attributes go on fields)"
                        ),
                    );
                    return skip_value(&meta);
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    out
}

/// Rejects `#[net(...)]` where no key applies (on the type itself or on an enum variant).
pub(crate) fn reject(attrs: &[Attribute], place: &str, errors: &mut Errors) {
    for attr in attrs.iter().filter(|a| a.path().is_ident("net")) {
        errors.spanned(
            attr,
            format_args!("#[net(...)] has no keys {place}; put it on a field ({FIELD_KEYS})"),
        );
    }
}

/// `crate = "path"`: the path, or `None` (reported) when the value is not a string
/// holding one.
fn crate_path(
    meta: &ParseNestedMeta<'_>,
    key: &Ident,
    errors: &mut Errors,
) -> syn::Result<Option<Path>> {
    const EXAMPLE: &str = "e.g. `#[net(crate = \"my_engine::netproto\")]`";
    if !meta.input.peek(Token![=]) {
        errors.spanned(
            key,
            format_args!(
                "`crate` takes the path netproto is re-exported at, as a string: {EXAMPLE}"
            ),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let value = meta.value()?.parse::<Expr>()?;
    let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(lit),
        ..
    }) = &value
    else {
        errors.spanned(
            &value,
            format_args!("expected the path as a string literal: {EXAMPLE}"),
        );
        return Ok(None);
    };
    match lit.parse::<Path>() {
        Ok(path) => Ok(Some(path)),
        Err(_) => {
            errors.spanned(
                lit,
                format_args!(
                    "`{}` is not a path: write the path netproto is re-exported at, {EXAMPLE}",
                    lit.value()
                ),
            );
            Ok(None)
        }
    }
}

fn set<T>(slot: &mut Option<Keyed<T>>, key: Ident, value: T, errors: &mut Errors) {
    if slot.is_some() {
        errors.spanned(&key, format_args!("duplicate `{key}`: write it once"));
    } else {
        *slot = Some(Keyed { key, value });
    }
}

fn quantize(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Quantize> {
    let mut out = Quantize {
        min: None,
        max: None,
        res: None,
        malformed: false,
    };
    if !meta.input.peek(syn::token::Paren) {
        errors.spanned(
            &meta.path,
            "quantize takes parameters: write `quantize(min = -1.0, max = 1.0, res = 0.01)`",
        );
        skip_value(meta)?;
        out.malformed = true;
        return Ok(out);
    }
    meta.parse_nested_meta(|inner| {
        let Some(key) = inner.path.get_ident().cloned() else {
            errors.spanned(
                &inner.path,
                "unknown quantize parameter; expected min, max or res",
            );
            out.malformed = true;
            return skip_value(&inner);
        };
        let slot = match key.to_string().as_str() {
            "min" => &mut out.min,
            "max" => &mut out.max,
            "res" => &mut out.res,
            other => {
                errors.spanned(
                    &key,
                    format_args!("unknown quantize parameter `{other}`; expected min, max or res"),
                );
                out.malformed = true;
                return skip_value(&inner);
            }
        };
        let value = inner.value()?.parse::<Expr>()?;
        set(slot, key, value, errors);
        Ok(())
    })?;
    Ok(out)
}

/// Consumes whatever follows a key we are not going to use: `= expr` or `(...)`.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}

/// The known key closest to a misspelt one, if any is close.
fn suggestion(unknown: &str) -> Option<&'static str> {
    const KEYS: [&str; 6] = ["range", "bits", "quantize", "max_len", "skip", "delta"];
    let lower = unknown.to_ascii_lowercase();
    KEYS.iter()
        .map(|key| (distance(&lower, key), *key))
        .filter(|(d, key)| *d <= key.len() / 3 + 1)
        .min()
        .map(|(_, key)| key)
}

/// Levenshtein distance, small inputs only.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}
