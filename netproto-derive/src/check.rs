//! Checks each field's `#[net(...)]` against its type and resolves it to a [`Kind`].
//!
//! Every problem is recorded (the caller combines them), with a span on the offending
//! token and a message that says what to write instead. Bounds the macro cannot evaluate
//! become [`Bound::Const`] / [`Quant::Const`], checked by `const` assertions in codegen.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, ExprRange, Ident, RangeLimits, Type};

use crate::ast::{Bound, ConstExpr, Kind, Prim, Quant, Spans};
use crate::attr::{FieldAttrs, Keyed, Quantize};
use crate::errors::Errors;
use crate::value::{self, IntTy, Shape};

/// The largest step count of a quantization (`values` in the runtime's `Quantization`).
const MAX_STEPS: f32 = 4_294_967_040.0;

/// Resolves a field's encoding. On error the result is [`Kind::Skip`] (never generated:
/// the caller reports the errors instead).
pub(crate) fn kind<'a>(ty: &'a Type, attrs: &FieldAttrs, errors: &mut Errors) -> Kind<'a> {
    if conflicts(attrs, errors) {
        return Kind::Skip;
    }
    let shape = value::shape(ty);
    let result = if attrs.skip.is_some() {
        Some(Kind::Skip)
    } else if let Some(range) = &attrs.range {
        ranged(ty, shape, range, errors)
    } else if let Some(bits) = &attrs.bits {
        bits_kind(ty, shape, bits, errors)
    } else if let Some(quantize) = &attrs.quantize {
        quantized(ty, shape, quantize, errors)
    } else if let Some(max_len) = &attrs.max_len {
        length(ty, shape, max_len, errors)
    } else {
        unannotated(ty, shape, errors)
    };
    result.unwrap_or(Kind::Skip)
}

/// Reports every key that conflicts with an earlier one: a field has one encoding.
fn conflicts(attrs: &FieldAttrs, errors: &mut Errors) -> bool {
    let mut first: Option<&Ident> = None;
    let mut found = false;
    for key in &attrs.order {
        match first {
            None => first = Some(key),
            Some(first) if first == key => {} // a duplicate, already reported
            Some(first) => {
                found = true;
                if first == "skip" || key == "skip" {
                    errors.spanned(
                        key,
                        format_args!(
                            "`{key}` cannot be combined with `{first}`: a skipped field is not \
                             sent; keep `skip` alone or remove it"
                        ),
                    );
                } else {
                    errors.spanned(
                        key,
                        format_args!(
                            "`{key}` conflicts with `{first}`: a field has one encoding; keep \
                             one of them"
                        ),
                    );
                }
            }
        }
    }
    found
}

fn hint_for(shape: Shape<'_>) -> &'static str {
    match shape {
        Shape::F32 => "; for an f32 use quantize(min = .., max = .., res = ..)",
        Shape::Bool => "; a bool is sent as 1 bit already: remove the attribute",
        Shape::String | Shape::Vec(_) => "; for a length bound use max_len = N",
        Shape::Size(_) => "; its width differs between 32- and 64-bit peers: use u32 or u64",
        _ => "",
    }
}

fn ranged<'a>(
    ty: &Type,
    shape: Shape<'_>,
    attr: &Keyed<Expr>,
    errors: &mut Errors,
) -> Option<Kind<'a>> {
    let Shape::Int(int) = shape else {
        errors.spanned(
            &attr.key,
            format_args!(
                "`range` needs an integer field (u8, u16, u32, u64, i8, i16, i32 or i64), found \
                 `{}`{}",
                shape.describe(ty),
                hint_for(shape)
            ),
        );
        return None;
    };
    let Expr::Range(range) = &attr.value else {
        errors.spanned(
            &attr.value,
            "expected a range: write `range = MIN..=MAX` (or `MIN..MAX`), e.g. `range = 0..=100`",
        );
        return None;
    };
    let (Some(start), Some(end)) = (&range.start, &range.end) else {
        errors.spanned(
            range,
            format_args!(
                "a range needs both bounds: write `range = MIN..=MAX`, e.g. `range = 0..={}`",
                int.max().min(100)
            ),
        );
        return None;
    };
    let inclusive = matches!(range.limits, RangeLimits::Closed(_));
    let min = int_bound(int, start, 0, "range", errors);
    let max = int_bound(int, end, if inclusive { 0 } else { 1 }, "range", errors);
    let (min, max) = (min?, max?);
    if let (Bound::Known(lo), Bound::Known(hi)) = (&min, &max) {
        empty_range(range, *lo, *hi, inclusive, errors)?;
    }
    Some(Kind::Ranged {
        int,
        min,
        max,
        spans: Spans::of(range),
    })
}

/// Checks that a known range is not empty, given its inclusive `hi`.
fn empty_range(
    range: &ExprRange,
    lo: i128,
    hi: i128,
    inclusive: bool,
    errors: &mut Errors,
) -> Option<()> {
    if lo <= hi {
        return Some(());
    }
    let written_hi = if inclusive { hi } else { hi + 1 };
    let message = if inclusive {
        format!(
            "range {lo}..={written_hi} is empty (MIN > MAX); write `range = {written_hi}..={lo}`"
        )
    } else if lo == written_hi {
        format!(
            "range {lo}..{lo} is empty (MIN..MAX excludes MAX); write `range = {lo}..={lo}` for a \
             single value"
        )
    } else {
        format!("range {lo}..{written_hi} is empty (MIN > MAX); write `range = {written_hi}..{lo}`")
    };
    errors.spanned(range, message);
    None
}

/// Evaluates a bound of an integer field (`exclusive` is 1 for the end of `MIN..MAX`).
fn int_bound(
    int: IntTy,
    expr: &Expr,
    exclusive: i128,
    what: &str,
    errors: &mut Errors,
) -> Option<Bound> {
    match value::int(expr) {
        Err(error) => {
            errors.push(error);
            None
        }
        Ok(Some(lit)) => {
            if !lit.suffix.is_empty() && lit.suffix != int.name() {
                errors.spanned(
                    expr,
                    format_args!(
                        "the `{}` suffix does not match the field type {}; drop the suffix",
                        lit.suffix,
                        int.name()
                    ),
                );
                return None;
            }
            let value = lit.value - exclusive;
            if value < int.min() || value > int.max() {
                let written = lit.value;
                let message = if value < 0 && !int.signed() {
                    format!(
                        "{what} bound {written} is negative, but the field is {}; use a signed type \
                         ({}) or a bound >= 0",
                        int.name(),
                        int.as_signed().name()
                    )
                } else {
                    let wider = match int.wider() {
                        Some(w) => format!("use a wider type ({}) or ", w.name()),
                        None => String::new(),
                    };
                    format!(
                        "{what} bound {written} does not fit in {} (whose values are {}..={}); \
                         {wider}a bound within it",
                        int.name(),
                        int.min(),
                        int.max()
                    )
                };
                errors.spanned(expr, message);
                return None;
            }
            Some(Bound::Known(value))
        }
        Ok(None) => {
            no_self(expr, errors)?;
            let adjust = if exclusive == 1 {
                quote!(-1)
            } else {
                TokenStream::new()
            };
            Some(Bound::Const(ConstExpr {
                value: quote!(((#expr) as i128 #adjust)),
                spans: Spans::of(expr),
                text: value::render(expr),
            }))
        }
    }
}

fn no_self(expr: &Expr, errors: &mut Errors) -> Option<()> {
    match value::mentions_self(expr) {
        Some(span) => {
            errors.at(
                span,
                "a bound cannot use `Self`: it is checked outside the impl; name the constant \
                 by its path, e.g. `MyType::LIMIT`",
            );
            None
        }
        None => Some(()),
    }
}

fn bits_kind<'a>(
    ty: &Type,
    shape: Shape<'_>,
    attr: &Keyed<Expr>,
    errors: &mut Errors,
) -> Option<Kind<'a>> {
    let int = match shape {
        Shape::Int(int) if !int.signed() => int,
        Shape::Int(int) => {
            let example = match value::int(&attr.value) {
                Ok(Some(lit)) if lit.value >= 1 && lit.value <= i128::from(int.bits()) => {
                    let half = 1i128 << (lit.value - 1);
                    format!("range = {}..={}", -half, half - 1)
                }
                _ => "range = -100..=100".to_owned(),
            };
            errors.spanned(
                &attr.key,
                format_args!(
                    "`bits` needs an unsigned integer; for an {} field write a range instead, \
                     e.g. `{example}`",
                    int.name()
                ),
            );
            return None;
        }
        _ => {
            errors.spanned(
                &attr.key,
                format_args!(
                    "`bits` needs an unsigned integer field (u8, u16, u32 or u64), found `{}`{}",
                    shape.describe(ty),
                    hint_for(shape)
                ),
            );
            return None;
        }
    };
    match value::int(&attr.value) {
        Err(error) => {
            errors.push(error);
            None
        }
        Ok(Some(lit)) => {
            let width = i128::from(int.bits());
            if lit.value < 1 {
                errors.spanned(
                    &attr.value,
                    format_args!(
                        "bits = {} sends nothing; write bits = 1..={width} for {}, or \
                         #[net(skip)] for a field that is not sent",
                        lit.value,
                        int.name()
                    ),
                );
                None
            } else if lit.value > width {
                let wider = match IntTy::from_name(&format!(
                    "u{}",
                    (lit.value as u128).next_power_of_two().max(8)
                )) {
                    Some(w) if lit.value <= 64 => format!(", or a {} field", w.name()),
                    _ => String::new(),
                };
                errors.spanned(
                    &attr.value,
                    format_args!(
                        "bits = {} is wider than {} ({width} bits); write bits = 1..={width}{wider}",
                        lit.value,
                        int.name()
                    ),
                );
                None
            } else {
                Some(Kind::Bits {
                    int,
                    bits: Bound::Known(lit.value),
                })
            }
        }
        Ok(None) => {
            no_self(&attr.value, errors)?;
            let expr = &attr.value;
            Some(Kind::Bits {
                int,
                bits: Bound::Const(ConstExpr {
                    value: quote!(((#expr) as i128)),
                    spans: Spans::of(expr),
                    text: value::render(expr),
                }),
            })
        }
    }
}

fn quantized<'a>(
    ty: &Type,
    shape: Shape<'_>,
    attr: &Keyed<Quantize>,
    errors: &mut Errors,
) -> Option<Kind<'a>> {
    if !matches!(shape, Shape::F32) {
        let hint = match shape {
            Shape::Int(_) => "; for an integer write `range = MIN..=MAX`",
            Shape::F64 => "; quantize an f32, or send the f64 raw (64 bits) without attributes",
            _ => "",
        };
        errors.spanned(
            &attr.key,
            format_args!(
                "`quantize` needs an f32 field, found `{}`{hint}",
                shape.describe(ty)
            ),
        );
        return None;
    }
    let q = &attr.value;
    let (Some(min), Some(max), Some(res)) = (&q.min, &q.max, &q.res) else {
        if q.malformed {
            return None;
        }
        let missing: Vec<&str> = [("min", &q.min), ("max", &q.max), ("res", &q.res)]
            .into_iter()
            .filter(|(_, v)| v.is_none())
            .map(|(name, _)| name)
            .collect();
        errors.spanned(
            &attr.key,
            format_args!(
                "quantize needs min, max and res (missing {}): write e.g. \
                 `quantize(min = -1.0, max = 1.0, res = 0.01)`",
                missing.join(", ")
            ),
        );
        return None;
    };
    let mut evaluated = [None; 3];
    let mut ok = true;
    for (slot, param) in evaluated.iter_mut().zip([min, max, res]) {
        match value::float(&param.value) {
            Ok(Some(v)) if !v.is_finite() => {
                errors.spanned(
                    &param.value,
                    "quantize parameters must be finite f32 values",
                );
                ok = false;
            }
            Ok(v) => *slot = v,
            Err(error) => {
                errors.push(error);
                ok = false;
            }
        }
        if value::mentions_self(&param.value).is_some() {
            no_self(&param.value, errors);
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    if let [Some(lo), Some(hi), Some(step)] = evaluated {
        if lo >= hi {
            errors.spanned(
                quote!(#min #max),
                format_args!(
                    "quantize needs min < max, found min = {lo:?} and max = {hi:?}; write e.g. \
                     `min = {:?}, max = {:?}`",
                    lo.min(hi),
                    if lo == hi { lo + 1.0 } else { lo.max(hi) }
                ),
            );
            return None;
        }
        if step <= 0.0 {
            errors.spanned(
                &res.value,
                format_args!(
                    "quantize needs res > 0, found res = {step:?}; res is the step between two \
                     sent values, e.g. res = 0.01"
                ),
            );
            return None;
        }
        let delta = hi - lo;
        if delta / step > MAX_STEPS {
            let bits = (f64::from(delta) / f64::from(step)).log2().ceil();
            let min_res = delta / MAX_STEPS;
            errors.spanned(
                quote!(#res),
                format_args!(
                    "quantize(min = {lo:?}, max = {hi:?}, res = {step:?}) needs about {bits} bits, \
                     more than 32: raise res to at least {min_res:e} or narrow min..max"
                ),
            );
            return None;
        }
        let bits = quant_bits(lo, hi, step);
        return Some(Kind::Quantized(Quant::Known {
            min: lo,
            max: hi,
            res: step,
            bits,
        }));
    }
    let as_f32 = |param: &Keyed<Expr>, known: Option<f32>| match known {
        Some(v) => value::f32_expr(v),
        None => {
            let expr = &param.value;
            quote!(((#expr) as f32))
        }
    };
    Some(Kind::Quantized(Quant::Const {
        min: as_f32(min, evaluated[0]),
        max: as_f32(max, evaluated[1]),
        res: as_f32(res, evaluated[2]),
        spans: Spans {
            lo: attr.key.span(),
            hi: Spans::of(&res.value).hi,
        },
    }))
}

/// The bits of `Quantization::new(min, max, res)`, with its exact `f32` arithmetic.
fn quant_bits(min: f32, max: f32, res: f32) -> u32 {
    let delta = max - min;
    let values = (delta / res).clamp(1.0, MAX_STEPS);
    // `values` is in [1, 4294967040]: the cast is exact after ceil.
    let max_int = values.ceil() as u32;
    crate::ast::bits_required(0, i128::from(max_int))
}

fn length<'a>(
    ty: &'a Type,
    shape: Shape<'a>,
    attr: &Keyed<Expr>,
    errors: &mut Errors,
) -> Option<Kind<'a>> {
    let elem = match shape {
        Shape::String => None,
        Shape::Vec(elem) => {
            if let Some(inner) = unbounded(elem) {
                errors.spanned(
                    inner,
                    "max_len bounds the outer Vec only; this inner String/Vec has no length \
                     bound: wrap it in a struct with its own #[net(max_len = N)]",
                );
                return None;
            }
            Some(elem)
        }
        _ => {
            let hint = match (shape, value::strip_type(ty)) {
                (_, Type::Array(_)) => " (an array's length is fixed and not sent): remove max_len",
                (Shape::Int(_), _) => ": remove it; to bound a number write `range = 0..=N`",
                _ => ": remove it",
            };
            errors.spanned(
                &attr.key,
                format_args!(
                    "`max_len` bounds the length of a String or Vec<T>, not of `{}`{hint}",
                    shape.describe(ty)
                ),
            );
            return None;
        }
    };
    let max_len = match value::int(&attr.value) {
        Err(error) => {
            errors.push(error);
            return None;
        }
        Ok(Some(lit)) if lit.value < 0 => {
            errors.spanned(
                &attr.value,
                format_args!("max_len = {} is negative; write a length >= 0", lit.value),
            );
            return None;
        }
        Ok(Some(lit)) if lit.value > i128::from(u32::MAX) => {
            errors.spanned(
                &attr.value,
                format_args!(
                    "max_len = {} is more than a message can hold; write at most 4294967295",
                    lit.value
                ),
            );
            return None;
        }
        Ok(Some(lit)) => Bound::Known(lit.value),
        Ok(None) => {
            no_self(&attr.value, errors)?;
            let expr = &attr.value;
            Bound::Const(ConstExpr {
                value: quote!(((#expr) as i128)),
                spans: Spans::of(expr),
                text: value::render(expr),
            })
        }
    };
    Some(match elem {
        None => Kind::String { max_len },
        Some(elem) => Kind::Vec { elem, max_len },
    })
}

/// `ty` itself, or a type inside it, when it is a `String` or `Vec`.
fn unbounded(ty: &Type) -> Option<&Type> {
    match value::shape(ty) {
        Shape::String | Shape::Vec(_) => Some(ty),
        _ => value::nested_unbounded(ty),
    }
}

fn unannotated<'a>(ty: &'a Type, shape: Shape<'a>, errors: &mut Errors) -> Option<Kind<'a>> {
    match shape {
        Shape::Bool => Some(Kind::Prim(Prim::Bool)),
        Shape::Int(int) => Some(Kind::Prim(Prim::Int(int))),
        Shape::F32 => Some(Kind::Prim(Prim::F32)),
        Shape::F64 => Some(Kind::Prim(Prim::F64)),
        Shape::Size(name) => {
            errors.spanned(
                ty,
                format_args!(
                    "`{name}` has no fixed width on the wire (it differs between 32- and 64-bit \
                     peers): use u32 or u64, bounded with e.g. #[net(range = 0..=1000)]"
                ),
            );
            None
        }
        Shape::String | Shape::Vec(_) => {
            let what = if matches!(shape, Shape::String) {
                "a String"
            } else {
                "a Vec"
            };
            errors.spanned(
                ty,
                format_args!(
                    "{what} field needs a length bound: add #[net(max_len = N)] (a length read \
                     from the network must be bounded before anything is allocated)"
                ),
            );
            None
        }
        Shape::Other => {
            if let Some(inner) = value::nested_unbounded(ty) {
                errors.spanned(
                    inner,
                    "this String/Vec has no length bound and max_len cannot reach inside another \
                     type: wrap it in a struct with #[net(max_len = N)] on the field",
                );
                return None;
            }
            Some(Kind::Nested)
        }
    }
}

/// Checks `#[net(delta = LO..=HI)]` against the field's kind: `delta` is `None` outside
/// a `#[net(delta)]` type, `Some(false)` in a delta enum (no field deltas).
pub(crate) fn delta(
    ty: &Type,
    attrs: &FieldAttrs,
    kind: &Kind<'_>,
    delta: Option<bool>,
    errors: &mut Errors,
) -> Option<crate::ast::DeltaRange> {
    let attr = attrs.delta.as_ref()?;
    match delta {
        None => {
            errors.spanned(
                &attr.key,
                "`delta` needs delta encoding on the type: add `#[net(delta)]` to the struct",
            );
            return None;
        }
        Some(false) => {
            errors.spanned(
                &attr.key,
                "an enum with #[net(delta)] is sent whole when it changes: remove `delta` \
                 (put the field in a #[net(delta)] struct to send its difference)",
            );
            return None;
        }
        Some(true) => {}
    }
    // The span of the field's values, when the macro knows it.
    let span: Option<i128> = match kind {
        Kind::Ranged { min, max, .. } => match (min, max) {
            (Bound::Known(lo), Bound::Known(hi)) => Some(hi - lo),
            _ => None,
        },
        Kind::Bits { bits, .. } => match bits {
            Bound::Known(n) => Some((1i128 << n) - 1),
            Bound::Const(_) => None,
        },
        Kind::Quantized(Quant::Known { min, max, res, .. }) => {
            let values = ((max - min) / res).clamp(1.0, MAX_STEPS);
            Some(values.ceil() as i128)
        }
        Kind::Quantized(Quant::Const { .. }) => None,
        Kind::Skip => {
            if attrs.skip.is_some() {
                errors.spanned(
                    &attr.key,
                    "a skipped field is not sent, so it has no delta: remove `delta` or `skip`",
                );
            }
            return None;
        }
        other => {
            let shape = value::shape(ty);
            let why = match (other, shape) {
                (_, Shape::Bool) => {
                    "a bool is sent whole when it changes (1 bit): remove `delta`".to_owned()
                }
                (Kind::String { .. } | Kind::Vec { .. }, _) => format!(
                    "a {} is sent whole when it changes: remove `delta`",
                    shape.describe(ty)
                ),
                (Kind::Prim(Prim::Int(int)), _) => format!(
                    "a delta needs the field's range: add `range = MIN..=MAX` (or `bits = N`) \
                     to this {} so that a difference can be checked against it",
                    int.name()
                ),
                (Kind::Prim(_), _) => format!(
                    "a delta counts quantized steps: add `quantize(min = .., max = .., res = ..)` \
                     to this {} (a raw float is sent whole when it changes)",
                    shape.describe(ty)
                ),
                _ => format!(
                    "`{}` is sent by its own NetDelta impl (a #[net(delta)] struct recurses, an \
                     enum goes whole when changed): remove `delta`",
                    shape.describe(ty)
                ),
            };
            errors.spanned(&attr.key, why);
            return None;
        }
    };
    let Expr::Range(range) = &attr.value else {
        errors.spanned(
            &attr.value,
            "expected the range of a difference: write `delta = LO..=HI`, e.g. `delta = -31..=31`",
        );
        return None;
    };
    let (Some(start), Some(end)) = (&range.start, &range.end) else {
        errors.spanned(
            range,
            "a delta range needs both bounds: write `delta = LO..=HI`, e.g. `delta = -31..=31`",
        );
        return None;
    };
    let inclusive = matches!(range.limits, RangeLimits::Closed(_));
    let literal = |expr: &Expr, errors: &mut Errors| match value::int(expr) {
        Ok(Some(lit)) if lit.suffix.is_empty() => {
            if lit.value < i128::from(i64::MIN) || lit.value > i128::from(i64::MAX) {
                errors.spanned(expr, "a delta bound must fit in i64");
                None
            } else {
                Some(lit.value)
            }
        }
        Ok(_) => {
            errors.spanned(
                expr,
                "a delta bound must be an integer literal without suffix (e.g. `-31`), in the \
                 field's units: quantized steps for a quantized float",
            );
            None
        }
        Err(error) => {
            errors.push(error);
            None
        }
    };
    let lo = literal(start, errors);
    let hi = literal(end, errors);
    let (lo, written_hi) = (lo?, hi?);
    let hi = if inclusive {
        written_hi
    } else {
        written_hi - 1
    };
    let dots = if inclusive { "..=" } else { ".." };
    if lo > hi {
        errors.spanned(
            range,
            format_args!(
                "delta range {lo}{dots}{written_hi} is empty: write LO <= HI, e.g. `delta = -{m}..={m}`",
                m = written_hi.unsigned_abs().max(lo.unsigned_abs()).max(1)
            ),
        );
        return None;
    }
    if lo == 0 && hi == 0 {
        errors.spanned(
            range,
            "delta range 0..=0 holds no change: a changed value never differs by 0; give it a \
             span, e.g. `delta = -31..=31`",
        );
        return None;
    }
    if let Some(span) = span
        && (hi - lo > span || lo < -span || hi > span)
    {
        let m = (span / 4).max(1);
        errors.spanned(
            range,
            format_args!(
                "delta range {lo}{dots}{written_hi} does not fit in the field, whose values span \
                 {span}: no change can be that large and the delta would cost as much as the \
                 value; narrow it, e.g. `delta = -{m}..={m}`, or remove `delta`"
            ),
        );
        return None;
    }
    Some(crate::ast::DeltaRange {
        lo: lo as i64,
        hi: hi as i64,
    })
}
