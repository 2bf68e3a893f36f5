//! Packed conversions between `f32` and `f16x2`/`bf16x2` (two halves in a `u32`, the
//! first argument in the low 16 bits), with cuda-oxide's names: `cvt_<dst>_<src>`, and
//! the rounding (`rn` to nearest even, `rz` toward zero) and `relu` (negative results
//! become `+0`) in between.
//!
//! On the GPU each packing function is one PTX `cvt.{rn,rz}[.relu].{f16x2,bf16x2}.f32`
//! (sm_80); on the emulator the same roundings are computed in software. A NaN packs
//! as the canonical NaN (`0x7fff`), as the GPU's packing conversions give it.

use crate::{bf16, f16};

/// Rounding of a packing conversion.
#[derive(Clone, Copy)]
enum Round {
    Nearest,
    Zero,
}

const CANONICAL_NAN: u16 = 0x7fff;

fn f16_bits(x: f32, round: Round, relu: bool) -> u16 {
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    let x = if relu && x < 0.0 { 0.0 } else { x };
    let nearest = f16::from_f32(x);
    match round {
        Round::Nearest => nearest.to_bits(),
        // Round to nearest, then step back toward zero if that went past `x` (f16's
        // magnitudes are ordered as their bit patterns; f16 -> f32 is exact).
        Round::Zero if x.is_infinite() => nearest.to_bits(),
        Round::Zero if nearest.to_f32().abs() > x.abs() => nearest.to_bits() - 1,
        Round::Zero => nearest.to_bits(),
    }
}

fn bf16_bits(x: f32, round: Round, relu: bool) -> u16 {
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    let x = if relu && x < 0.0 { 0.0 } else { x };
    match round {
        Round::Nearest => bf16::from_f32(x).to_bits(),
        Round::Zero => (x.to_bits() >> 16) as u16, // truncation is rounding toward zero
    }
}

#[cfg(not(target_arch = "nvptx64"))]
fn pack(lo: u16, hi: u16) -> u32 {
    (u32::from(hi) << 16) | u32::from(lo)
}

macro_rules! packing {
    ($($(#[$doc:meta])* $name:ident: $ptx:literal, $conv:ident, $round:expr, $relu:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(lo: f32, hi: f32) -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let _ = ($conv, $round, $relu); // the emulator's definition of the same
                let packed: u32;
                // SAFETY: a register-only conversion (sm_80+). PTX puts the first
                // source operand in the upper half.
                unsafe {
                    core::arch::asm!(
                        concat!($ptx, " {d}, {hi}, {lo};"),
                        d = out(reg32) packed,
                        hi = in(reg32) hi,
                        lo = in(reg32) lo,
                        options(pure, nomem, nostack, preserves_flags)
                    )
                };
                packed
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                pack($conv(lo, $round, $relu), $conv(hi, $round, $relu))
            }
        }
    )*};
}

packing! {
    /// Two `f32` to a packed `f16x2`, rounded to nearest even.
    cvt_f16x2_f32: "cvt.rn.f16x2.f32", f16_bits, Round::Nearest, false;
    /// Two `f32` to a packed `f16x2`, rounded toward zero (no overflow to infinity).
    cvt_rz_f16x2_f32: "cvt.rz.f16x2.f32", f16_bits, Round::Zero, false;
    /// Two `f32` to a packed `f16x2`, negatives to `+0`, rounded to nearest even.
    cvt_rn_relu_f16x2_f32: "cvt.rn.relu.f16x2.f32", f16_bits, Round::Nearest, true;
    /// Two `f32` to a packed `bf16x2`, negatives to `+0`, rounded to nearest even.
    cvt_rn_relu_bf16x2_f32: "cvt.rn.relu.bf16x2.f32", bf16_bits, Round::Nearest, true;
    /// Two `f32` to a packed `bf16x2`, rounded toward zero.
    cvt_rz_bf16x2_f32: "cvt.rz.bf16x2.f32", bf16_bits, Round::Zero, false;
}

/// A packed `f16x2`'s two values, low half first (the inverse of [`cvt_f16x2_f32`]).
#[inline(always)]
pub fn cvt_f32x2_f16x2(packed: u32) -> (f32, f32) {
    (cvt_f32_f16x2_lo(packed), cvt_f32_f16x2_hi(packed))
}

/// The low half of a packed `f16x2`, as `f32` (exact).
#[inline(always)]
pub fn cvt_f32_f16x2_lo(packed: u32) -> f32 {
    f16::from_bits(packed as u16).to_f32()
}

/// The high half of a packed `f16x2`, as `f32` (exact).
#[inline(always)]
pub fn cvt_f32_f16x2_hi(packed: u32) -> f32 {
    f16::from_bits((packed >> 16) as u16).to_f32()
}

/// A packed `bf16x2`'s two values, low half first.
#[inline(always)]
pub fn cvt_f32x2_bf16x2(packed: u32) -> (f32, f32) {
    (cvt_f32_bf16x2_lo(packed), cvt_f32_bf16x2_hi(packed))
}

/// The low half of a packed `bf16x2`, as `f32` (exact).
#[inline(always)]
pub fn cvt_f32_bf16x2_lo(packed: u32) -> f32 {
    bf16::from_bits(packed as u16).to_f32()
}

/// The high half of a packed `bf16x2`, as `f32` (exact).
#[inline(always)]
pub fn cvt_f32_bf16x2_hi(packed: u32) -> f32 {
    bf16::from_bits((packed >> 16) as u16).to_f32()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundings() {
        // 1 + 2^-11 is an f16 tie: nearest-even goes down, and so does toward-zero;
        // 1 + 3·2^-12 rounds up to nearest and down toward zero.
        let up = 1.0 + 3.0 * f32::powi(2.0, -12);
        assert_eq!(cvt_f16x2_f32(up, -up), 0xbc01_3c01);
        assert_eq!(cvt_rz_f16x2_f32(up, -up), 0xbc00_3c00);
        assert_eq!(cvt_rz_f16x2_f32(1e6, f32::INFINITY), 0x7c00_7bff);
        assert_eq!(cvt_rn_relu_f16x2_f32(-2.0, 2.0), 0x4000_0000);
        assert_eq!(
            cvt_rz_bf16x2_f32(1.0 + f32::EPSILON * 255.0, f32::NAN),
            0x7fff_3f80
        );
        assert_eq!(cvt_rn_relu_bf16x2_f32(-1.0, 1.5), 0x3fc0_0000);
        assert_eq!(cvt_f32x2_f16x2(0x4000_3c00), (1.0, 2.0));
        assert_eq!(cvt_f32x2_bf16x2(0x4000_3f80), (1.0, 2.0));
    }
}
