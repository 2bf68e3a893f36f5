//! 16-bit floats for storage: IEEE [`f16`](struct@f16) (binary16) and [`bf16`] (bfloat16), with
//! correctly rounded (to nearest, ties to even) conversions from `f32`, exact ones to
//! `f32`, and arithmetic that computes in `f32` and rounds back.
//!
//! Conversions are plain integer code, identical on the GPU and the host, so host
//! tests check exactly what the GPU computes. Both types are `repr(transparent)` over
//! `u16`, so an array of them is what CuPy's `float16` (and, bit for bit, a `bfloat16`
//! array) holds.

use core::cmp::Ordering;
use core::ops::{Add, Div, Mul, Neg, Sub};

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits.
#[allow(non_camel_case_types)]
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
pub struct f16(u16);

/// bfloat16: the top half of an `f32` (1 sign, 8 exponent, 7 fraction bits).
#[allow(non_camel_case_types)]
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
pub struct bf16(u16);

/// Round `value >> shift` to nearest, ties to even (`shift` in 1..32).
#[inline(always)]
const fn shift_round_even(value: u32, shift: u32) -> u32 {
    let kept = value >> shift;
    let rest = value & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

impl f16 {
    /// The nearest `f16` (ties to even); overflow gives ±infinity, NaN stays NaN.
    pub const fn from_f32(value: f32) -> f16 {
        let x = value.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let exp = ((x >> 23) & 0xff) as i32;
        let man = x & 0x7f_ffff;
        if exp == 0xff {
            // Infinity, or NaN kept quiet with the top of its payload.
            let nan = if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
            return f16(sign | 0x7c00 | nan);
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return f16(sign | 0x7c00);
        }
        if e <= 0 {
            // Subnormal in f16 (or zero): the significand with its implicit bit,
            // scaled to units of 2^-24.
            if e < -10 {
                return f16(sign);
            }
            let significand = man | 0x80_0000;
            return f16(sign | shift_round_even(significand, (14 - e) as u32) as u16);
        }
        // A carry out of the fraction rounds up into the exponent (and to infinity
        // from MAX), which is the right answer.
        let rounded = shift_round_even(((e as u32) << 23) | man, 13);
        f16(sign | rounded as u16)
    }

    /// Exact.
    pub const fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        let bits = if exp == 0x1f {
            sign | 0x7f80_0000 | (man << 13)
        } else if exp == 0 {
            if man == 0 {
                sign
            } else {
                // man · 2^-24: normalise the leading one into f32's implicit bit.
                let lead = 31 - man.leading_zeros(); // position of the top set bit, 0..=9
                let frac = (man << (23 - lead)) & 0x7f_ffff;
                sign | ((lead + 127 - 24) << 23) | frac
            }
        } else {
            sign | ((exp + 127 - 15) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }
}

impl bf16 {
    /// The nearest `bf16` (ties to even); NaN stays NaN (made quiet).
    pub const fn from_f32(value: f32) -> bf16 {
        let x = value.to_bits();
        if value.is_nan() {
            return bf16(((x >> 16) | 0x40) as u16);
        }
        // Overflow carries into the exponent and gives infinity, as it should.
        bf16((x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16) as u16)
    }

    /// Exact.
    pub const fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

/// What `f16` and `bf16` share: the constants (`$c`, by their bits), the bit and `f64`
/// conversions, and the traits, all through `to_f32`/`from_f32`.
macro_rules! half_traits {
    ($($t:ident { $($(#[$doc:meta])* $c:ident = $bits:literal,)* })*) => {$(
        impl $t {
            $($(#[$doc])* pub const $c: $t = $t($bits);)*

            #[inline(always)]
            pub const fn from_bits(bits: u16) -> $t {
                $t(bits)
            }

            #[inline(always)]
            pub const fn to_bits(self) -> u16 {
                self.0
            }

            /// Through `f32`: a value within half an f32 ulp of a tie of this type may
            /// round twice.
            pub const fn from_f64(value: f64) -> $t {
                $t::from_f32(value as f32)
            }

            pub const fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }

            /// Every exponent bit set and a fraction: above infinity's bits, either sign.
            pub const fn is_nan(self) -> bool {
                self.0 & 0x7fff > Self::INFINITY.0
            }

            /// The bit patterns of a slice of these, in place: what code that moves raw
            /// 16-bit words (`ldmatrix`, `cp.async`, TMA) reads.
            #[inline(always)]
            pub fn slice_as_bits(s: &[$t]) -> &[u16] {
                // SAFETY: the type is `repr(transparent)` over `u16`: the same size,
                // alignment and valid bit patterns.
                unsafe { core::slice::from_raw_parts(s.as_ptr().cast(), s.len()) }
            }
        }
        impl From<$t> for f32 {
            #[inline(always)]
            fn from(h: $t) -> f32 {
                h.to_f32()
            }
        }
        impl From<$t> for f64 {
            #[inline(always)]
            fn from(h: $t) -> f64 {
                h.to_f64()
            }
        }
        impl From<f32> for $t {
            #[inline(always)]
            fn from(v: f32) -> $t {
                $t::from_f32(v)
            }
        }
        /// Numeric equality, as for `f32`: NaN is unequal to itself, -0 equals +0.
        impl PartialEq for $t {
            #[inline(always)]
            fn eq(&self, other: &$t) -> bool {
                self.to_f32() == other.to_f32()
            }
        }
        impl PartialOrd for $t {
            #[inline(always)]
            fn partial_cmp(&self, other: &$t) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }
        impl Neg for $t {
            type Output = $t;
            #[inline(always)]
            fn neg(self) -> $t {
                $t(self.0 ^ 0x8000)
            }
        }
        half_traits!(@op $t, Add, add, +);
        half_traits!(@op $t, Sub, sub, -);
        half_traits!(@op $t, Mul, mul, *);
        half_traits!(@op $t, Div, div, /);
        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(&self.to_f32(), f)
            }
        }
        impl core::fmt::Display for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.to_f32(), f)
            }
        }
    )*};
    (@op $t:ident, $trait:ident, $method:ident, $op:tt) => {
        /// Computed in `f32` and rounded once: exact for f16's and bf16's `+ - * /`,
        /// since `f32` has more than twice their precision.
        impl $trait for $t {
            type Output = $t;
            #[inline(always)]
            fn $method(self, rhs: $t) -> $t {
                $t::from_f32(self.to_f32() $op rhs.to_f32())
            }
        }
    };
}

half_traits! {
    f16 {
        ZERO = 0, ONE = 0x3c00, INFINITY = 0x7c00, NEG_INFINITY = 0xfc00, NAN = 0x7e00,
        /// The largest finite value, 65504.
        MAX = 0x7bff,
        /// The smallest positive normal value, 2^-14.
        MIN_POSITIVE = 0x0400,
        /// The gap between 1 and the next value, 2^-10.
        EPSILON = 0x1400,
    }
    bf16 {
        ZERO = 0, ONE = 0x3f80, INFINITY = 0x7f80, NEG_INFINITY = 0xff80, NAN = 0x7fc0,
        MAX = 0x7f7f, MIN_POSITIVE = 0x0080,
        /// 2^-7.
        EPSILON = 0x3c00,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_f16_round_trips_through_f32() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            let back = f16::from_f32(h.to_f32());
            if h.is_nan() {
                assert!(back.is_nan() && h.to_f32().is_nan(), "{bits:#06x}");
            } else {
                assert_eq!(back.to_bits(), bits, "{bits:#06x} -> {}", h.to_f32());
            }
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        let cases: [(f32, u16); 11] = [
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (65519.0, 0x7bff), // below the midpoint to 65536
            (65520.0, 0x7c00), // the midpoint rounds to even: infinity
            (2.0f32.powi(-24), 0x0001),
            (2.0f32.powi(-25), 0x0000), // tie between 0 and 2^-24: even is 0
            (1.5 * 2.0f32.powi(-25), 0x0001),
            (1.0 + 2.0f32.powi(-11), 0x3c00), // tie: even (1.0)
            (1.0 + 3.0 * 2.0f32.powi(-11), 0x3c02), // tie: even (1 + 2^-9)
            (f32::INFINITY, 0x7c00),
        ];
        for (v, want) in cases {
            assert_eq!(f16::from_f32(v).to_bits(), want, "{v:e}");
        }
        assert!(f16::from_f32(f32::NAN).is_nan());
        assert_eq!(f16::from_f64(0.1).to_f64(), 0.0999755859375);
    }

    #[test]
    fn bf16_conversions() {
        assert_eq!(bf16::from_f32(1.0).to_bits(), 0x3f80);
        assert_eq!(bf16::from_f32(core::f32::consts::PI).to_bits(), 0x4049);
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1.
        assert_eq!(bf16::from_f32(1.0 + 2.0f32.powi(-8)).to_bits(), 0x3f80);
        assert_eq!(bf16::from_f32(f32::MAX).to_bits(), bf16::INFINITY.to_bits());
        assert!(bf16::from_f32(f32::NAN).is_nan());
        for bits in (0..=u16::MAX).step_by(7) {
            let b = bf16::from_bits(bits);
            if !b.is_nan() {
                assert_eq!(bf16::from_f32(b.to_f32()).to_bits(), bits);
            }
        }
    }

    #[test]
    fn arithmetic_and_comparison() {
        let (a, b) = (f16::from_f32(1.5), f16::from_f32(0.25));
        assert_eq!((a + b).to_f32(), 1.75);
        assert_eq!((a - b).to_f32(), 1.25);
        assert_eq!((a * b).to_f32(), 0.375);
        assert_eq!((a / b).to_f32(), 6.0);
        assert_eq!((-a).to_f32(), -1.5);
        assert!(b < a && f16::NAN != f16::NAN && f16::ZERO == -f16::ZERO);
        assert_eq!(f32::from(bf16::ONE + bf16::ONE), 2.0);
        assert_eq!(std::format!("{:?}", f16::MAX), "65504.0");
    }
}
