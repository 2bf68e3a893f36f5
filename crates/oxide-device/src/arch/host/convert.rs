//! The emulator's packed `f32` -> `f16x2`/`bf16x2` conversions: the roundings PTX's
//! `cvt.{rn,rz}[.relu]` instructions make, in software. A NaN packs as the canonical
//! NaN (`0x7fff`), as the GPU's packing conversions give it; `relu` makes negative
//! values `+0`.

use crate::{bf16, f16};

const CANONICAL_NAN: u16 = 0x7fff;

fn f16_bits(x: f32, toward_zero: bool, relu: bool) -> u16 {
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    let x = if relu && x < 0.0 { 0.0 } else { x };
    let nearest = f16::from_f32(x);
    // Toward zero: nearest, then one step back where that went past `x` (f16's
    // magnitudes are ordered as their bit patterns; f16 -> f32 is exact).
    if toward_zero && x.is_finite() && nearest.to_f32().abs() > x.abs() {
        nearest.to_bits() - 1
    } else {
        nearest.to_bits()
    }
}

fn bf16_bits(x: f32, toward_zero: bool, relu: bool) -> u16 {
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    let x = if relu && x < 0.0 { 0.0 } else { x };
    if toward_zero {
        (x.to_bits() >> 16) as u16 // truncation rounds toward zero
    } else {
        bf16::from_f32(x).to_bits()
    }
}

fn pack(lo: u16, hi: u16) -> u32 {
    (u32::from(hi) << 16) | u32::from(lo)
}

/// The packed conversions: `bits(value, toward_zero, relu)` of each half.
macro_rules! packed_cvt {
    ($($name:ident: $bits:ident($toward_zero:literal, $relu:literal);)*) => {$(
        pub(crate) fn $name(lo: f32, hi: f32) -> u32 {
            pack($bits(lo, $toward_zero, $relu), $bits(hi, $toward_zero, $relu))
        }
    )*};
}

packed_cvt! {
    cvt_rn_f16x2_f32: f16_bits(false, false);
    cvt_rz_f16x2_f32: f16_bits(true, false);
    cvt_rn_relu_f16x2_f32: f16_bits(false, true);
    cvt_rn_bf16x2_f32: bf16_bits(false, false);
    cvt_rn_relu_bf16x2_f32: bf16_bits(false, true);
    cvt_rz_bf16x2_f32: bf16_bits(true, false);
}
