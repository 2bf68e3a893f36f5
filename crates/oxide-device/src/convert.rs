//! Packed conversions between `f32` and `f16x2`/`bf16x2` (two halves in a `u32`, the
//! first argument in the low 16 bits), with cuda-oxide's names: `cvt_<dst>_<src>`, and
//! the rounding (`rn` to nearest even, `rz` toward zero) and `relu` (negative results
//! become `+0`) in between.
//!
//! On the GPU each packing function is one PTX `cvt.{rn,rz}[.relu].{f16x2,bf16x2}.f32`
//! (sm_80); on the emulator the same roundings are computed in software. A NaN packs
//! as the canonical NaN (`0x7fff`), as the GPU's packing conversions give it.

use crate::{arch, bf16, f16};

forward! {
    /// Two `f32` to a packed `f16x2`, rounded to nearest even.
    pub fn cvt_f16x2_f32(lo: f32, hi: f32) -> u32 = arch::cvt_rn_f16x2_f32;
    /// Two `f32` to a packed `f16x2`, rounded toward zero (no overflow to infinity).
    pub fn cvt_rz_f16x2_f32(lo: f32, hi: f32) -> u32 = arch::cvt_rz_f16x2_f32;
    /// Two `f32` to a packed `f16x2`, negatives to `+0`, rounded to nearest even.
    pub fn cvt_rn_relu_f16x2_f32(lo: f32, hi: f32) -> u32 = arch::cvt_rn_relu_f16x2_f32;
    /// Two `f32` to a packed `bf16x2`, rounded to nearest even (one instruction for what
    /// [`bf16::from_f32`] does per value in integer arithmetic; a NaN becomes `0x7fff`).
    pub fn cvt_bf16x2_f32(lo: f32, hi: f32) -> u32 = arch::cvt_rn_bf16x2_f32;
    /// Two `f32` to a packed `bf16x2`, negatives to `+0`, rounded to nearest even.
    pub fn cvt_rn_relu_bf16x2_f32(lo: f32, hi: f32) -> u32 = arch::cvt_rn_relu_bf16x2_f32;
    /// Two `f32` to a packed `bf16x2`, rounded toward zero.
    pub fn cvt_rz_bf16x2_f32(lo: f32, hi: f32) -> u32 = arch::cvt_rz_bf16x2_f32;
}

/// Unpacking, the same for both half types: the pair, then each half (exact).
macro_rules! unpacking {
    ($($half:ident: $pair:ident, $lo:ident, $hi:ident, $pair_doc:literal;)*) => {$(
        #[doc = $pair_doc]
        #[inline(always)]
        pub fn $pair(packed: u32) -> (f32, f32) {
            ($lo(packed), $hi(packed))
        }
        #[doc = concat!("The low half of a packed `", stringify!($half), "x2`, as `f32` (exact).")]
        #[inline(always)]
        pub fn $lo(packed: u32) -> f32 {
            $half::from_bits(packed as u16).to_f32()
        }
        #[doc = concat!("The high half of a packed `", stringify!($half), "x2`, as `f32` (exact).")]
        #[inline(always)]
        pub fn $hi(packed: u32) -> f32 {
            $half::from_bits((packed >> 16) as u16).to_f32()
        }
    )*};
}

unpacking! {
    f16: cvt_f32x2_f16x2, cvt_f32_f16x2_lo, cvt_f32_f16x2_hi,
        "A packed `f16x2`'s two values, low half first (the inverse of [`cvt_f16x2_f32`]).";
    bf16: cvt_f32x2_bf16x2, cvt_f32_bf16x2_lo, cvt_f32_bf16x2_hi,
        "A packed `bf16x2`'s two values, low half first.";
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
        // bf16 ties: 1 + 2^-8 goes down to even (1.0), 1 + 3·2^-8 up to 1 + 2^-6;
        // past the largest bf16 to infinity; NaN to the canonical 0x7fff.
        let (tie_down, tie_up) = (1.0 + f32::powi(2.0, -8), 1.0 + 3.0 * f32::powi(2.0, -8));
        assert_eq!(cvt_bf16x2_f32(tie_down, -tie_up), 0xbf82_3f80);
        assert_eq!(cvt_bf16x2_f32(f32::MAX, f32::NAN), 0x7fff_7f80);
        assert_eq!(cvt_bf16x2_f32(-0.0, 1.0e-40), 0x0001_8000);
        assert_eq!(cvt_f32x2_f16x2(0x4000_3c00), (1.0, 2.0));
        assert_eq!(cvt_f32x2_bf16x2(0x4000_3f80), (1.0, 2.0));
    }
}
