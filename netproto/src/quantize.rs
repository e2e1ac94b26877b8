//! Quantized `f32`: a float in `[min, max]` sent as an integer step of size `res`.

use crate::bits::bits_required;

/// The largest step count the reference library allows (`values` is clamped to it).
const MAX_STEPS: f32 = 4_294_967_040.0;

/// A quantization of `f32` values in `[min, max]` with resolution `res`.
///
/// The arithmetic is the reference `serialize` library's, in `f32` with a rounding after
/// every operation, so both ends of a connection agree bit for bit:
/// `max_int = ceil(clamp((max - min) / res, 1, 4294967040))`, sent in
/// `bits_required(0, max_int)` bits.
///
/// ```
/// use netproto::Quantization;
///
/// const POS: Quantization = Quantization::new(-512.0, 512.0, 0.01);
/// assert_eq!(POS.bits(), 17);
/// let q = POS.quantize(3.14159);
/// assert!((POS.dequantize(q) - 3.14159).abs() <= 0.005);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantization {
    min: f32,
    max: f32,
    res: f32,
    delta: f32,
    /// The largest value the writer accepts: `max`, or the top quantum if `f32`
    /// rounding puts it a hair above `max` (see [`Quantization::contains`]).
    upper: f32,
    /// `1 / max_int` in `f64`: the reader's division as a multiplication (see
    /// [`Quantization::dequantize`]).
    inv_max_int: f64,
    max_int: u32,
    bits: u32,
}

impl Quantization {
    /// Builds the quantization. The derive checks `min < max`, `res > 0` and `bits <= 32`
    /// at compile time; see [`Quantization::check`].
    pub const fn new(min: f32, max: f32, res: f32) -> Self {
        let delta = max - min;
        let mut values = delta / res;
        // NaN compares false both ways and stays NaN: `check` rejects it.
        if values < 1.0 {
            values = 1.0;
        }
        if values > MAX_STEPS {
            values = MAX_STEPS;
        }
        let max_int = ceil_to_u32(values);
        // What the reader returns for `max_int`: `(max_int / max_int) * delta + min`.
        let top = delta + min;
        let upper = if top > max { top } else { max };
        Self {
            min,
            max,
            res,
            delta,
            upper,
            inv_max_int: 1.0 / max_int as f64,
            max_int,
            bits: bits_required(0, max_int as u64),
        }
    }

    /// Why these parameters cannot be honoured, or `None` when they are fine.
    pub const fn check(min: f32, max: f32, res: f32) -> Option<&'static str> {
        if min.is_nan() || max.is_nan() || res.is_nan() {
            return Some("quantize bounds must be numbers, not NaN");
        }
        if min.is_infinite() || max.is_infinite() || res.is_infinite() {
            return Some("quantize bounds must be finite");
        }
        if min >= max {
            return Some("quantize needs min < max");
        }
        if res <= 0.0 {
            return Some("quantize needs res > 0");
        }
        if (max - min) / res > MAX_STEPS {
            return Some("quantize needs more than 32 bits: raise res or narrow min..max");
        }
        None
    }

    /// Lower bound.
    pub const fn min(&self) -> f32 {
        self.min
    }
    /// Upper bound.
    pub const fn max(&self) -> f32 {
        self.max
    }
    /// Resolution (step size requested).
    pub const fn res(&self) -> f32 {
        self.res
    }
    /// The largest integer sent on the wire.
    pub const fn max_int(&self) -> u32 {
        self.max_int
    }
    /// Bits on the wire.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// Whether the writer accepts `value`: it lies in `[min, max]`, or is the top
    /// quantum (false for NaN).
    ///
    /// The top quantum is what a reader returns for `max_int`, `delta + min` in `f32`,
    /// and for some ranges that rounds a hair above `max` (e.g. `-623.2..=187.6` gives
    /// `187.60004`). Every value a reader returns must be accepted by the writer, so that
    /// a decoded message can be sent on unchanged; it quantizes back to `max_int`.
    ///
    /// ```
    /// use netproto::Quantization;
    ///
    /// let q = Quantization::new(-623.2, 187.6, 0.5);
    /// let top = q.dequantize(q.max_int());
    /// assert!(top > q.max() && q.contains(top));
    /// assert_eq!(q.quantize(top), q.max_int());
    /// assert!(!q.contains(f32::from_bits(top.to_bits() + 1)));
    /// ```
    #[inline]
    pub fn contains(&self, value: f32) -> bool {
        value >= self.min && value <= self.upper
    }

    /// The integer the writer sends for `value`, clamped into `[min, max]` like the
    /// reference writer (the derive rejects out-of-range values before they get here).
    ///
    /// Unlike the reference, it never returns more than `max_int`: at resolutions where
    /// `max_int` is odd and at least 2^23, the reference rounds `max` up to
    /// `max_int + 1`, which its own reader rejects.
    #[inline(always)]
    pub fn quantize(&self, value: f32) -> u32 {
        let mut norm = (value - self.min) / self.delta;
        // `max`/`min` on f32 treat NaN as missing; keep the reference's clamp order.
        if norm.is_nan() || norm < 0.0 {
            norm = 0.0;
        }
        self.quantize_norm(norm)
    }

    /// [`Quantization::quantize`] for a value the writer accepted
    /// ([`Quantization::contains`]), without the clamp at 0: the same integer, in three
    /// instructions fewer per field.
    ///
    /// For a contained value `value - min >= 0` and `delta >= 0`, so the quotient is never
    /// negative; it is NaN only for a one-point range (`0 / 0`) or infinite bounds
    /// (`inf / inf`), and a NaN converts to 0 below, the integer the clamp would give.
    #[inline(always)]
    pub(crate) fn quantize_contained(&self, value: f32) -> u32 {
        debug_assert!(self.contains(value));
        self.quantize_norm((value - self.min) / self.delta)
    }

    /// The integer for `norm`, which is not negative (NaN gives 0).
    #[inline(always)]
    fn quantize_norm(&self, mut norm: f32) -> u32 {
        if norm > 1.0 {
            norm = 1.0;
        }
        let scaled = norm * self.max_int as f32;
        // `floor` then convert: for the non-negative `scaled + 0.5` truncation is
        // exactly `floor` (and needs no libm call on baseline x86-64).
        let rounded = scaled + 0.5;
        // In `[0.5, max_int + 0.5]`, below 2^33 (or NaN, which gives 0 below).
        let q = truncate(rounded);
        // Below 2^23 steps `max_int + 0.5` is exact in `f32`, so `rounded` is at most
        // that and `q` at most `max_int`: the clamp is needed only above, where the sum
        // may round up to `max_int + 1`. Below, a mask of the width's bits, which changes
        // nothing, tells the compiler that `q` fits the width (one `and`, where the clamp
        // took a compare and a move; without either, the writer's check that the value
        // fits its bits would no longer fold away).
        if self.max_int < 1 << 23 {
            (q as u32) & (u32::MAX >> self.max_int.leading_zeros())
        } else {
            q.clamp(0, i64::from(self.max_int)) as u32
        }
    }

    /// The value the reader returns for integer `q` (`q <= max_int`): the reference
    /// `(q / max_int) * delta + min`, in `f32` with a rounding after every operation.
    ///
    /// Below 2^24 steps the division is done as `q * (1 / max_int)` in `f64`, rounded
    /// once to `f32`: bit for bit the `f32` quotient, and about three times cheaper. Both
    /// integers are exact in `f32` there, so the reference quotient is `q / max_int`
    /// correctly rounded. The `f64` product is within a relative 2^-52 of the exact
    /// quotient, while an exact quotient with a denominator below 2^24 is never a tie
    /// between two `f32`s and lies at least a relative 2^-49 away from every tie (a tie
    /// has 25 significant bits): both round to the same `f32`. The tests check it
    /// exhaustively for every `q` of many quantizations. Above 2^24 steps the reference
    /// division is used as is.
    #[inline]
    pub fn dequantize(&self, q: u32) -> f32 {
        let norm = if self.max_int < 1 << 24 {
            (f64::from(q) * self.inv_max_int) as f32
        } else {
            q as f32 / self.max_int as f32
        };
        norm * self.delta + self.min
    }

    /// [`Quantization::dequantize`] as the reference library writes it, with the `f32`
    /// division: the formula the fast one is tested against.
    #[doc(hidden)]
    pub fn dequantize_reference(&self, q: u32) -> f32 {
        let norm = q as f32 / self.max_int as f32;
        norm * self.delta + self.min
    }
}

/// `ceil(v) as u32` for `v` in `[1, 4294967040]`, usable in `const`.
const fn ceil_to_u32(v: f32) -> u32 {
    if v.is_nan() {
        return 1;
    }
    let t = v as u32; // truncates toward zero, saturates
    if (t as f32) < v { t + 1 } else { t }
}

/// `x` truncated toward zero, for an `x` in `[0, 2^33)`; NaN gives 0 or `i64::MIN`
/// (both 0 in the low 32 bits).
///
/// On x86-64 this is the bare truncating conversion (`cvttss2si`), which is exact in
/// that range. Rust's `as` saturates and maps NaN to 0, which costs two compares and two
/// conditional moves after it; a quantized value never needs them, since the writer
/// checks it against its range first. Elsewhere, `as`.
#[inline(always)]
fn truncate(x: f32) -> i64 {
    #[cfg(target_arch = "x86_64")]
    {
        safe_arch::get_i64_from_m128_s(safe_arch::set_m128_s(x))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_roundtrip() {
        let q = Quantization::new(0.0, 1.0, 0.5);
        assert_eq!(q.max_int(), 2);
        assert_eq!(q.bits(), 2);
        assert_eq!(q.quantize(0.0), 0);
        assert_eq!(q.quantize(1.0), 2);
        assert_eq!(q.dequantize(1), 0.5);
        let tiny = Quantization::new(0.0, 1.0, 2.0);
        assert_eq!(tiny.max_int(), 1);
        assert_eq!(tiny.bits(), 1);
    }

    #[test]
    fn never_above_max_int() {
        // max_int odd in [2^23, 2^24): the reference writes max_int + 1 for `max`.
        let q = Quantization::new(0.0, 9_000_001.0, 1.0);
        assert_eq!(q.max_int() % 2, 1);
        assert_eq!(q.quantize(9_000_001.0), q.max_int());
    }

    #[test]
    fn every_decoded_value_is_accepted_back() {
        // Ranges where `delta + min` rounds above `max` (the first two), and not.
        let mut above = 0;
        for (min, max, res) in [
            (-623.2f32, 187.6f32, 0.5f32),
            (-41.76, 97.68, 0.0001),
            (-388.6, 747.6, 0.01),
            (-100.0, 100.0, 0.01),
        ] {
            let q = Quantization::new(min, max, res);
            above += usize::from(q.dequantize(q.max_int()) > max);
            for i in [0, 1, q.max_int() / 2, q.max_int() - 1, q.max_int()] {
                let v = q.dequantize(i);
                assert!(q.contains(v), "{min}..={max}: q {i} -> {v}");
                assert_eq!(q.dequantize(q.quantize(v)), v);
            }
            assert!(q.contains(min) && q.contains(max));
            assert!(!q.contains(f32::NAN));
        }
        assert_eq!(above, 2);
    }

    /// The quotient of the fast path against the `f32` division, for every `q`.
    fn same_quotient(max_int: u32) -> bool {
        let inv = 1.0 / f64::from(max_int);
        (0..=max_int).all(|q| {
            let fast = (f64::from(q) * inv) as f32;
            fast.to_bits() == (q as f32 / max_int as f32).to_bits()
        })
    }

    #[test]
    fn the_division_free_quotient_is_exact_for_every_small_step_count() {
        // Every q of every max_int up to 2^12, exhaustively.
        for max_int in 1..=4096 {
            assert!(same_quotient(max_int), "max_int {max_int}");
        }
    }

    #[test]
    fn the_division_free_quotient_is_exact_near_powers_of_two_and_at_the_limit() {
        // The widest step counts below 2^24 (where ties get closest), and either side of
        // every power of two, exhaustively.
        let mut counts = vec![(1 << 24) - 1, (1 << 24) - 3, 0x00AB_CDEF];
        for k in 13..24 {
            counts.extend([(1u32 << k) - 1, 1 << k, (1 << k) + 1]);
        }
        for max_int in counts {
            assert!(same_quotient(max_int), "max_int {max_int}");
        }
    }

    #[test]
    #[allow(clippy::approx_constant)]
    fn dequantize_matches_the_reference_for_every_integer() {
        // Ranges from the examples and benchmarks, widths 1 to 24 bits, and a few at and
        // above 2^24 steps (the reference path): every q of each, bit for bit.
        let mut cases = vec![
            (-3.1416f32, 3.1416f32, 0.001f32),
            (-1.5708, 1.5708, 0.001),
            (-1024.0, 1024.0, 0.01),
            (-64.0, 448.0, 0.01),
            (-3.1416, 3.1416, 0.01),
            (-2048.0, 2048.0, 0.01),
            (-256.0, 768.0, 0.01),
            (0.0, 64.0, 0.01),
            (-3.1416, 3.1416, 0.0005),
            (-1.5708, 1.5708, 0.0005),
            (-623.2, 187.6, 0.5),
            (-41.76, 97.68, 0.0001),
            (0.0, 1.0, 2.0),
            (0.0, 1.0, 1.0 / 16_777_215.0),
            (0.0, 9_000_001.0, 1.0),
            (-1.0, 1.0, 1.0 / 8_388_609.0),
        ];
        for bits in 1..=24 {
            cases.push((-1.0, 1.0, 2.0 / ((1u32 << bits) - 1) as f32));
        }
        for (min, max, res) in cases {
            let q = Quantization::new(min, max, res);
            for i in 0..=q.max_int() {
                assert_eq!(
                    q.dequantize(i).to_bits(),
                    q.dequantize_reference(i).to_bits(),
                    "{min}..={max} res {res}: q {i}"
                );
            }
        }
    }

    /// The writer's clamp-free path gives `quantize`'s integer for every accepted value:
    /// both ends, the top quantum, the values around every step of small ranges, and the
    /// one-point and infinite ranges whose quotient is NaN.
    #[test]
    #[allow(clippy::approx_constant)]
    fn quantize_contained_agrees_with_quantize() {
        let mut cases = vec![
            (-3.1416f32, 3.1416f32, 0.001f32),
            (-1024.0, 1024.0, 0.01),
            (-64.0, 448.0, 0.01),
            (0.0, 64.0, 0.01),
            (-623.2, 187.6, 0.5),
            (-41.76, 97.68, 0.0001),
            (0.0, 1.0, 2.0),
            (0.0, 9_000_001.0, 1.0),
            (-1.0, 1.0, 1.0 / 8_388_609.0),
            (0.0, 1.0, 1.0 / 8_388_607.0),
            (0.0, 4.0e9, 1.0),
            (5.0, 5.0, 1.0),
            (f32::NEG_INFINITY, 1.0, 1.0),
            (0.0, f32::INFINITY, 1.0),
        ];
        for bits in 1..=12 {
            cases.push((-1.0, 1.0, 2.0 / ((1u32 << bits) - 1) as f32));
        }
        for (min, max, res) in cases {
            let q = Quantization::new(min, max, res);
            let mut values = vec![min, max, q.upper, 0.0, -0.0, 1.0, -1.0, 0.5];
            for i in 0..=q.max_int().min(5000) {
                let v = q.dequantize(i);
                for d in [-2i32, -1, 0, 1, 2] {
                    values.push(f32::from_bits(v.to_bits().wrapping_add_signed(d)));
                }
            }
            values.extend([
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                f32::MAX,
                max * 2.0,
            ]);
            for &v in &values {
                // Without the final clamp below 2^23 steps too.
                assert!(q.quantize(v) <= q.max_int(), "{min}..={max} res {res}: {v}");
            }
            for v in values.into_iter().filter(|&v| q.contains(v)) {
                assert_eq!(
                    q.quantize_contained(v),
                    q.quantize(v),
                    "{min}..={max} res {res}: {v}"
                );
            }
        }
    }

    /// The conversion the quantizer uses is `as` for every value it converts: every
    /// `f32` from 0 to 2^33 at a stride that visits every exponent (and every one of
    /// the first 2^20 bit patterns), each integer and half below 2^16 with its
    /// neighbours, and the ends; NaN gives 0 in the low 32 bits, as `as` gives 0.
    #[test]
    fn truncate_agrees_with_as_over_the_quantizer_range() {
        let top = 8_589_934_592.0f32; // 2^33
        let check = |x: f32| {
            if (0.0..top).contains(&x) {
                assert_eq!(truncate(x), x as i64, "{x:e} ({:#x})", x.to_bits());
            }
        };
        let mut bits = 0u32;
        while bits <= top.to_bits() {
            check(f32::from_bits(bits));
            bits += if bits < 1 << 20 { 1 } else { 997 };
        }
        for i in 0..1u32 << 17 {
            let v = i as f32 * 0.5;
            for d in [-1i32, 0, 1] {
                check(f32::from_bits(v.to_bits().wrapping_add_signed(d)));
            }
        }
        for x in [
            0.5,
            1.0 - f32::EPSILON / 2.0,
            8_388_607.5,
            4_294_967_295.0,
            4_294_967_296.0,
        ] {
            check(x);
        }
        assert_eq!(truncate(f32::NAN) as u32, 0);
        let nan = std::hint::black_box(f32::NAN);
        assert_eq!(nan as i64 as u32, 0, "what `as` gives");
    }

    #[test]
    fn checks() {
        assert!(Quantization::check(0.0, 1.0, 0.1).is_none());
        assert!(Quantization::check(1.0, 1.0, 0.1).is_some());
        assert!(Quantization::check(0.0, 1.0, 0.0).is_some());
        assert!(Quantization::check(0.0, 1.0e10, 0.1).is_some());
        assert!(Quantization::check(f32::NAN, 1.0, 0.1).is_some());
    }
}
