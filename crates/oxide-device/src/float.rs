//! Float arithmetic with its rounding spelled out, under cuda-oxide's names
//! (`cuda_device::float::mul_rn_f32`, …): CUDA C++'s `__fmul_rn`, `__fadd_rn`, `__fmaf_rn`.
//!
//! `cargo oxide build` contracts `a * b + c` into one fused multiply-add by default, as
//! nvcc and cuda-oxide do (`--no-fmad` turns that off for the whole crate). These
//! functions keep their rounding either way: `mul_rn_*` and `add_rn_*` are never fused
//! (PTX `mul.rn` / `add.rn`, which neither LLVM nor ptxas contracts), so
//! `add_rn_f32(mul_rn_f32(a, b), c)` rounds twice, as Rust's `a * b + c` does on the CPU;
//! `fma_rn_*` always rounds once. On the emulator they are the plain operations and
//! `mul_add`, which give the same bits.

macro_rules! rounded {
    ($($(#[$doc:meta])* $name:ident($($arg:ident),+): $t:ty => $llvm:literal, |$($h:ident),+| $host:expr;)*) => {
        #[cfg(target_arch = "nvptx64")]
        mod nvvm {
            unsafe extern "C" {
                $(
                    #[link_name = $llvm]
                    pub(super) fn $name($($arg: $t),+) -> $t;
                )*
            }
        }

        $(
            $(#[$doc])*
            #[inline(always)]
            #[must_use]
            pub fn $name($($arg: $t),+) -> $t {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: the NVVM intrinsic is a pure, total operation on floats.
                return unsafe { nvvm::$name($($arg),+) };
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let ($($h),+) = ($($arg),+);
                    $host
                }
            }
        )*
    };
}

rounded! {
    /// `a + b`, rounded to nearest even; never fused with a multiply (`add.rn.f32`).
    add_rn_f32(a, b): f32 => "llvm.nvvm.add.rn.f", |a, b| a + b;
    /// `a + b`, rounded to nearest even; never fused with a multiply (`add.rn.f64`).
    add_rn_f64(a, b): f64 => "llvm.nvvm.add.rn.d", |a, b| a + b;
    /// `a * b`, rounded to nearest even; never fused into an add (`mul.rn.f32`).
    mul_rn_f32(a, b): f32 => "llvm.nvvm.mul.rn.f", |a, b| a * b;
    /// `a * b`, rounded to nearest even; never fused into an add (`mul.rn.f64`).
    mul_rn_f64(a, b): f64 => "llvm.nvvm.mul.rn.d", |a, b| a * b;
    /// `a * b + c` rounded once, to nearest even (`fma.rn.f32`; `f32::mul_add`).
    fma_rn_f32(a, b, c): f32 => "llvm.nvvm.fma.rn.f", |a, b, c| f32::mul_add(a, b, c);
    /// `a * b + c` rounded once, to nearest even (`fma.rn.f64`; `f64::mul_add`).
    fma_rn_f64(a, b, c): f64 => "llvm.nvvm.fma.rn.d", |a, b, c| f64::mul_add(a, b, c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separate_and_fused_roundings_differ_where_they_should() {
        // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the last term is lost when the product is
        // rounded to f32 on its own, and kept by a fused multiply-add.
        let a = 1.0 + f32::powi(2.0, -12);
        let c = -(1.0 + f32::powi(2.0, -11));
        assert_eq!(add_rn_f32(mul_rn_f32(a, a), c), 0.0);
        assert_eq!(fma_rn_f32(a, a, c), f32::powi(2.0, -24));
        let a = 1.0 + f64::powi(2.0, -27);
        let c = -(1.0 + f64::powi(2.0, -26));
        assert_eq!(add_rn_f64(mul_rn_f64(a, a), c), 0.0);
        assert_eq!(fma_rn_f64(a, a, c), f64::powi(2.0, -54));
    }
}
