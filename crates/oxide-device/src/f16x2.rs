//! Packed half-precision arithmetic under NVIDIA cuda-oxide's names
//! (`cuda_device::f16x2`): two IEEE binary16 values in one `u32`, the low half in bits
//! 0..16, each operation applied to both lanes by one PTX `*.f16x2` instruction.
//!
//! Rounding is to nearest even (`.rn`, spelled out so that ptxas cannot fuse a
//! multiply and an add); subnormals are kept except by the `ftz` forms, which flush
//! subnormal inputs and results to a zero of the same sign. `sat` clamps a result to
//! [0, 1] (NaN becomes +0); `relu` clamps a negative result to 0 (NaN becomes the
//! canonical NaN `0x7fff`). `min`/`max` return the other lane when one is NaN. A NaN
//! result of the arithmetic is the canonical NaN. The emulator computes each lane
//! exactly in `f64` (a product of two halves has 22 significant bits, a sum of a
//! product and a half fits or is far below the half's last bit) and rounds once to
//! binary16, so it gives the GPU's bits. `min`/`max` need sm_80, `fma.relu` sm_80;
//! the rest sm_53.
//!
//! Not here: cuda-oxide's extended `min`/`max` forms (`_nan`, `_xorsign_abs`, the
//! `ftz` ones) and `bf16x2` arithmetic.

use crate::arch;

macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(a: u32) -> u32 {
            arch::f16x2_unary(arch::F16x2Op::$op, a)
        }
    )*};
}

macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(a: u32, b: u32) -> u32 {
            arch::f16x2_binary(arch::F16x2Op::$op, a, b)
        }
    )*};
}

macro_rules! ternary {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(a: u32, b: u32, c: u32) -> u32 {
            arch::f16x2_fma(arch::F16x2Op::$op, a, b, c)
        }
    )*};
}

unary! {
    /// `abs.f16x2`: both lanes' sign bits cleared.
    abs_f16x2 => Abs;
    /// `neg.f16x2`: both lanes' sign bits flipped.
    neg_f16x2 => Neg;
}

binary! {
    /// `add.rn.f16x2`.
    add_f16x2 => Add;
    /// `sub.rn.f16x2`: `a - b` per lane.
    sub_f16x2 => Sub;
    /// `mul.rn.f16x2`.
    mul_f16x2 => Mul;
    /// `min.f16x2` (sm_80).
    min_f16x2 => Min;
    /// `max.f16x2` (sm_80).
    max_f16x2 => Max;
}

ternary! {
    /// `fma.rn.f16x2`: `a * b + c` per lane, rounded once.
    fma_f16x2 => Fma;
    /// `fma.rn.ftz.f16x2`.
    fma_ftz_f16x2 => FmaFtz;
    /// `fma.rn.sat.f16x2`.
    fma_sat_f16x2 => FmaSat;
    /// `fma.rn.ftz.sat.f16x2`.
    fma_ftz_sat_f16x2 => FmaFtzSat;
    /// `fma.rn.relu.f16x2` (sm_80).
    fma_relu_f16x2 => FmaRelu;
    /// `fma.rn.ftz.relu.f16x2` (sm_80).
    fma_ftz_relu_f16x2 => FmaFtzRelu;
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u32 = 0x4400_4000; // (2, 4)
    const B: u32 = 0x4500_4200; // (3, 5)
    const C: u32 = 0x4980_4700; // (7, 11)
    const SUBNORMAL: u32 = 0x0002_0001; // (2^-24, 2^-23)
    const ONE: u32 = 0x3c00_3c00;

    #[test]
    fn lanes_round_as_the_gpu_does() {
        assert_eq!(add_f16x2(A, B), 0x4880_4500); // (5, 9)
        assert_eq!(sub_f16x2(A, B), 0xbc00_bc00); // (-1, -1)
        assert_eq!(mul_f16x2(A, B), 0x4d00_4600); // (6, 20)
        assert_eq!(fma_f16x2(A, B, C), 0x4fc0_4a80); // (13, 31)
        assert_eq!((min_f16x2(A, B), max_f16x2(A, B)), (A, B));
        assert_eq!(neg_f16x2(A), 0xc400_c000);
        assert_eq!(abs_f16x2(0xc400_c000), A);
        assert_eq!(fma_relu_f16x2(A, 0xbc00_bc00, 0), 0);
        assert_eq!(fma_f16x2(SUBNORMAL, ONE, 0), SUBNORMAL);
        assert_eq!(fma_ftz_f16x2(SUBNORMAL, ONE, 0), 0);
        assert_eq!(fma_sat_f16x2(A, B, C), ONE);
        assert_eq!(fma_ftz_relu_f16x2(SUBNORMAL, ONE, 0), 0);
        assert_eq!(fma_relu_f16x2(SUBNORMAL, ONE, 0), SUBNORMAL);
        // 2049 is a tie between 2048 and 2050: even mantissa wins.
        let (x, one) = (0x6800u32, 0x3c00u32); // 2048, 1
        assert_eq!(add_f16x2(x, one) & 0xffff, 0x6800);
        // A NaN lane is canonical; min/max take the other lane.
        assert_eq!(add_f16x2(0x7e01, one) & 0xffff, 0x7fff);
        assert_eq!(min_f16x2(0x7e01, one) & 0xffff, one);
        assert_eq!(fma_sat_f16x2(0x7e01, one, one) & 0xffff, 0);
    }
}
