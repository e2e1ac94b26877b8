//! The per-field pieces of a delta form, called by derived code (and usable by
//! hand-written [`NetDelta`] impls): each sends a field's "changed" bit, then what
//! changed.
//!
//! Each is one function for writing, reading and measuring, like the rest of the
//! crate. A reader stores the baseline's value into an unchanged field.

use crate::error::ErrorKind;
use crate::quantize::Quantization;
use crate::stream::{NetMessage, Place, RangedInt, Stream};

use super::NetDelta;

/// Runs `op` between `begin_field(name)` and `end_field()` on a tracing stream.
#[inline(always)]
fn traced<S: Stream, R>(
    stream: &mut S,
    name: &'static str,
    op: impl FnOnce(&mut S) -> Result<R, S::Error>,
) -> Result<R, S::Error> {
    if S::TRACING {
        stream.begin_field(name);
    }
    let out = op(stream)?;
    if S::TRACING {
        stream.end_field();
    }
    Ok(out)
}

/// A field's "changed" bit (traced as `changed`): `changed` is the writer's answer; the
/// reader's is returned.
#[inline(always)]
pub fn changed_bit<S: Stream>(stream: &mut S, changed: bool) -> Result<bool, S::Error> {
    let mut bit = changed && !S::IS_READING;
    traced(stream, "changed", |s| s.serialize_bool(&mut bit))?;
    Ok(bit)
}

/// The difference of a changed field with a delta range `[lo, hi]`, as one code of
/// [`delta_code_bits`]`(lo, hi)` bits (traced as `delta`, or `escape` for the fallback).
///
/// A changed value never differs by 0, so the codes are the nonzero differences in
/// `[lo, hi]` in increasing order, then one more, the escape, which says the value
/// follows whole. For the usual symmetric ranges `-(2^n - 1)..=2^n - 1` the escape takes
/// the code 0 would have had: a difference costs `n + 1` bits and needs no separate
/// "delta or absolute" bit. The writer passes `Some(diff)` when `diff` is in `[lo, hi]`
/// (and not 0), `None` to escape; the reader gets the difference back, or `None` for
/// the escape, and rejects a code past the escape ([`ErrorKind::OutOfRange`]).
#[inline(always)]
fn delta_code<S: Stream>(
    stream: &mut S,
    diff: Option<i64>,
    lo: i64,
    hi: i64,
) -> Result<Option<i64>, S::Error> {
    let escape = delta_escape(lo, hi);
    let skips_zero = lo <= 0 && hi >= 0;
    let mut code = match diff {
        _ if S::IS_READING => 0,
        // In `[0, escape)`: `d` is in `[lo, hi]` and not 0.
        Some(d) => (i128::from(d) - i128::from(lo) - i128::from(skips_zero && d > 0)) as u64,
        None => escape,
    };
    // Not through `traced`: its closure was not inlined here (45 instructions a code,
    // measured with callgrind), so the field is opened and closed by hand.
    if S::TRACING {
        let escaping = !S::IS_READING && diff.is_none();
        stream.begin_field(if escaping { "escape" } else { "delta" });
    }
    stream.serialize_int(&mut code, 0, escape)?;
    if S::TRACING {
        if let (false, Some(d)) = (S::IS_READING, diff) {
            stream.annotate(format_args!("{d:+}"));
        }
        stream.end_field();
    }
    if code == escape {
        return Ok(None);
    }
    // Below the escape: back in `[lo, hi]`, so in `i64`.
    let d = i128::from(lo) + i128::from(code);
    Ok(Some((d + i128::from(skips_zero && d >= 0)) as i64))
}

/// The escape code of a delta range `[lo, hi]`: the number of nonzero differences in it.
#[inline(always)]
const fn delta_escape(lo: i64, hi: i64) -> u64 {
    // In `i128`: the widest range, `i64::MIN..=i64::MAX`, holds 2^64 values, 2^64 - 1 of
    // them nonzero, which is still a `u64`.
    let span = hi as i128 - lo as i128 + 1;
    (if lo <= 0 && hi >= 0 { span - 1 } else { span }) as u64
}

/// The bits of a delta code for the range `[lo, hi]` (`lo <= hi`, not `0..=0`): the
/// bits of the escape, the largest code. Derived code bounds a delta field with it.
pub const fn delta_code_bits(lo: i64, hi: i64) -> usize {
    crate::bits::bits_required(0, delta_escape(lo, hi)) as usize
}

/// A field of a [`NetDelta`] type: the changed bit, then its delta form
/// ([`NetDelta::serialize_delta_in`]) when changed; a reader copies `base` into an
/// unchanged field (reusing its allocations).
#[inline(always)]
pub fn field<S: Stream, T: NetDelta, P: Place<T>>(
    stream: &mut S,
    mut this: P,
    base: &T,
) -> Result<(), S::Error> {
    let changed = !S::IS_READING && this.get().delta_changed(base);
    if changed_bit(stream, changed)? {
        T::serialize_delta_in(this, base, stream)
    } else {
        if let Some(value) = this.get_mut() {
            value.clone_from(base);
        }
        Ok(())
    }
}

/// A ranged integer in `[min, max]`: the changed bit; when changed and `delta` is
/// `Some((lo, hi))`, `value - base` as a delta code (see [`delta_code_bits`]), or the
/// escape code and the value itself in `[min, max]` when the difference is not in
/// `[lo, hi]`. Without `delta` a changed value goes whole.
///
/// The writer rejects a value outside `[min, max]` ([`ErrorKind::OutOfRange`]), and
/// sends the absolute value when the difference does not fit in `[lo, hi]`; the reader
/// rejects a difference that lands outside `[min, max]` (whatever the baseline holds).
#[inline(always)]
pub fn int<S, T, P>(
    stream: &mut S,
    mut this: P,
    base: T,
    min: T,
    max: T,
    delta: Option<(i64, i64)>,
) -> Result<(), S::Error>
where
    S: Stream,
    T: RangedInt + PartialEq + Into<i128> + TryFrom<i128>,
    P: Place<T>,
{
    let value = *this.get();
    if !S::IS_READING {
        stream.check(
            value.offset_from(min) <= max.offset_from(min),
            ErrorKind::OutOfRange,
        )?;
    }
    if !changed_bit(stream, value != base)? {
        this.set(base);
        return Ok(());
    }
    if let Some((lo, hi)) = delta {
        let diff = value.into() - base.into();
        let fits = diff >= i128::from(lo) && diff <= i128::from(hi);
        // In `[lo, hi]` when it fits; the reader gets its own.
        if let Some(d) = delta_code(stream, fits.then_some(diff as i64), lo, hi)? {
            if S::IS_READING {
                let landed = base.into() + i128::from(d);
                let lands = landed >= min.into() && landed <= max.into();
                stream.check(lands, ErrorKind::OutOfRange)?;
                if let Ok(landed) = T::try_from(landed) {
                    this.set(landed);
                }
            }
            return Ok(());
        }
    }
    let mut v = value;
    traced(stream, "value", |s| s.serialize_int(&mut v, min, max))?;
    this.set(v);
    Ok(())
}

/// Whether a quantized field changed: its quantized steps differ.
///
/// Equal raw bits quantize to the same step, so the common case (an entity that did not
/// move) costs one integer compare; only values whose bits differ are quantized.
#[inline(always)]
pub fn quantized_changed(q: &Quantization, value: f32, base: f32) -> bool {
    value.to_bits() != base.to_bits() && q.quantize(value) != q.quantize(base)
}

/// A quantized `f32`: the changed bit (changed when the quantized steps differ); when
/// changed and `delta` is `Some((lo, hi))`, the difference in steps as a delta code
/// (see [`delta_code_bits`]), or the escape code and the value quantized in full.
///
/// Both ends apply the difference to `q.quantize(base)` (a baseline the reader decoded
/// quantizes back to the step it came from). The writer rejects a value outside the
/// quantization's range; the reader rejects a difference that lands outside
/// `[0, max_int]`.
#[inline(always)]
pub fn quantized<S: Stream, P: Place<f32>>(
    stream: &mut S,
    mut this: P,
    base: f32,
    q: &Quantization,
    delta: Option<(i64, i64)>,
) -> Result<(), S::Error> {
    let value = *this.get();
    if !S::IS_READING {
        stream.check(q.contains(value), ErrorKind::OutOfRange)?;
    }
    let (now, then) = (i64::from(q.quantize(value)), i64::from(q.quantize(base)));
    if !changed_bit(stream, now != then)? {
        this.set(base);
        return Ok(());
    }
    if let Some((lo, hi)) = delta {
        let diff = now - then;
        let fits = diff >= lo && diff <= hi;
        if let Some(d) = delta_code(stream, fits.then_some(diff), lo, hi)? {
            if S::IS_READING {
                let landed = then + d;
                stream.check(
                    landed >= 0 && landed <= i64::from(q.max_int()),
                    ErrorKind::OutOfRange,
                )?;
                this.set(q.dequantize(landed as u32));
            }
            return Ok(());
        }
    }
    let mut v = value;
    traced(stream, "value", |s| s.serialize_quantized(&mut v, q))?;
    this.set(v);
    Ok(())
}

/// A `String` of at most `max_len` bytes: the changed bit, then the string whole.
#[inline(always)]
pub fn string<S: Stream, P: Place<String>>(
    stream: &mut S,
    mut this: P,
    base: &String,
    max_len: usize,
) -> Result<(), S::Error> {
    let changed = !S::IS_READING && this.get() != base;
    if changed_bit(stream, changed)? {
        traced(stream, "value", |s| s.serialize_string(this, max_len))
    } else {
        if let Some(value) = this.get_mut() {
            value.clone_from(base);
        }
        Ok(())
    }
}

/// A `Vec<T>` of at most `max_len` elements: the changed bit, then the sequence whole.
#[inline(always)]
pub fn sequence<S, T, P>(
    stream: &mut S,
    mut this: P,
    base: &Vec<T>,
    max_len: usize,
) -> Result<(), S::Error>
where
    S: Stream,
    T: NetMessage + Clone + PartialEq,
    P: Place<Vec<T>>,
{
    let changed = !S::IS_READING && this.get() != base;
    if changed_bit(stream, changed)? {
        traced(stream, "value", |s| s.serialize_vec(this, max_len))
    } else {
        if let Some(value) = this.get_mut() {
            value.clone_from(base);
        }
        Ok(())
    }
}
