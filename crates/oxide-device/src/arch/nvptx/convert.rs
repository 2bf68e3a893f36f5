//! Packed `f32` -> `f16x2`/`bf16x2` conversions (`oxide_device::convert`): one PTX
//! `cvt` each (sm_80+). PTX puts the first source operand in the upper half, so `hi`
//! goes first.

use core::arch::asm;

macro_rules! packing {
    ($($name:ident: $ptx:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name(lo: f32, hi: f32) -> u32 {
            let packed: u32;
            // SAFETY: a register-only conversion.
            unsafe {
                asm!(
                    concat!($ptx, " {d}, {hi}, {lo};"),
                    d = out(reg32) packed,
                    hi = in(reg32) hi,
                    lo = in(reg32) lo,
                    options(pure, nomem, nostack, preserves_flags)
                )
            };
            packed
        }
    )*};
}

packing! {
    cvt_rn_f16x2_f32: "cvt.rn.f16x2.f32";
    cvt_rz_f16x2_f32: "cvt.rz.f16x2.f32";
    cvt_rn_relu_f16x2_f32: "cvt.rn.relu.f16x2.f32";
    cvt_rn_bf16x2_f32: "cvt.rn.bf16x2.f32";
    cvt_rn_relu_bf16x2_f32: "cvt.rn.relu.bf16x2.f32";
    cvt_rz_bf16x2_f32: "cvt.rz.bf16x2.f32";
}
