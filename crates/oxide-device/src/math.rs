//! `f32`/`f64` math as methods, as in cuda-oxide and `std`: with the prelude in scope,
//! `x.exp()`, `x.tanh()`, `y.powf(x)` work in a `no_std` kernel crate.
//!
//! On the GPU each method calls libdevice (`__nv_expf`, …), which the link step links
//! and inlines; on the host, Rust's `std`. Methods that `std` lacks (`rsqrt`, `erf`,
//! `erfc`, `exp10`) are implemented on the host here.
//!
//! (`abs`, `min`, `max`, `copysign` need nothing: `core` has them on every target.)

/// Float math for kernels; implemented for `f32` and `f64`.
pub trait GpuFloat: Copy {
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn atan2(self, other: Self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn tanh(self) -> Self;
    fn exp(self) -> Self;
    fn exp2(self) -> Self;
    /// `10^self`.
    fn exp10(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn ln_1p(self) -> Self;
    fn powf(self, n: Self) -> Self;
    fn powi(self, n: i32) -> Self;
    fn sqrt(self) -> Self;
    /// `1 / sqrt(self)`.
    fn rsqrt(self) -> Self;
    fn cbrt(self) -> Self;
    fn hypot(self, other: Self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// `1 - erf(self)`, accurate where `erf` is near 1.
    fn erfc(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
    fn trunc(self) -> Self;
    /// `self * a + b` with one rounding.
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    /// Round half to even (`rint`).
    fn round_ties_even(self) -> Self;
}

// Free-function forms of the methods `std` may gain (it has unstable `erf`/`erfc`
// already, and calling those by method syntax warns with `unstable_name_collisions`).

/// The error function, `erf(x)`.
#[inline(always)]
pub fn erf<T: GpuFloat>(x: T) -> T {
    x.erf()
}

/// The complementary error function, `1 - erf(x)`.
#[inline(always)]
pub fn erfc<T: GpuFloat>(x: T) -> T {
    x.erfc()
}

/// `1 / sqrt(x)`.
#[inline(always)]
pub fn rsqrt<T: GpuFloat>(x: T) -> T {
    x.rsqrt()
}

/// `10^x`.
#[inline(always)]
pub fn exp10<T: GpuFloat>(x: T) -> T {
    x.exp10()
}

/// `2^x` on the special-function unit: PTX `ex2.approx.ftz.f32`, one `MUFU.EX2` (about
/// 2 ulp; subnormal inputs and results flush to zero, `2^-inf` is `+0`). The exponential
/// of softmax and attention kernels, which fold `log2(e)` into their scale
/// (`ex2_approx_ftz(x * scale * LOG2_E - max)`); `x.exp2()` is libdevice's, which keeps
/// subnormals at the cost of a few more instructions. On the host: `f32::exp2`, its
/// subnormal results flushed to zero as the GPU's.
#[inline(always)]
pub fn ex2_approx_ftz(x: f32) -> f32 {
    crate::arch::ex2_approx_ftz(x)
}

/// `1/x` by the special-function unit: PTX `rcp.approx.ftz.f32` (about 1 ulp;
/// subnormals flush to zero). IEEE division (`1.0 / x`) is a call to a slow-path
/// routine on the GPU, which a kernel region that raised its registers with
/// `setmaxnreg` must not contain (ptxas then serialises its `wgmma`s); this has none.
/// On the host: `1.0 / x`, flushed alike.
#[inline(always)]
pub fn rcp_approx_ftz(x: f32) -> f32 {
    crate::arch::rcp_approx_ftz(x)
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::GpuFloat;

    /// `GpuFloat` for `f32` and `f64` through libdevice: each row names a method and its
    /// `f32` and `f64` functions; an argument typed `Self` has the float's type.
    macro_rules! libdevice {
        ({ $($method:ident($($arg:ident: $at:tt),*) => $nv32:ident, $nv64:ident;)* }) => {
            libdevice!(@ f32 { $($method($($arg: $at),*) => $nv32;)* });
            libdevice!(@ f64 { $($method($($arg: $at),*) => $nv64;)* });
        };
        (@ $t:ty { $($method:ident($($arg:ident: $at:tt),*) => $nv:ident;)* }) => {
            unsafe extern "C" {
                $(fn $nv(x: $t $(, $arg: arg_ty!($at, $t))*) -> $t;)*
            }
            impl GpuFloat for $t {
                $(
                    #[inline(always)]
                    fn $method(self $(, $arg: arg_ty!($at, $t))*) -> $t {
                        // SAFETY: libdevice functions are pure and total.
                        unsafe { $nv(self $(, $arg)*) }
                    }
                )*
            }
        };
    }

    macro_rules! arg_ty {
        (Self, $t:ty) => {
            $t
        };
        ($at:ty, $t:ty) => {
            $at
        };
    }

    libdevice!({
        sin() => __nv_sinf, __nv_sin; cos() => __nv_cosf, __nv_cos; tan() => __nv_tanf, __nv_tan;
        asin() => __nv_asinf, __nv_asin; acos() => __nv_acosf, __nv_acos;
        atan() => __nv_atanf, __nv_atan; atan2(other: Self) => __nv_atan2f, __nv_atan2;
        sinh() => __nv_sinhf, __nv_sinh; cosh() => __nv_coshf, __nv_cosh;
        tanh() => __nv_tanhf, __nv_tanh; exp() => __nv_expf, __nv_exp;
        exp2() => __nv_exp2f, __nv_exp2; exp10() => __nv_exp10f, __nv_exp10;
        exp_m1() => __nv_expm1f, __nv_expm1; ln() => __nv_logf, __nv_log;
        log2() => __nv_log2f, __nv_log2; log10() => __nv_log10f, __nv_log10;
        ln_1p() => __nv_log1pf, __nv_log1p; powf(n: Self) => __nv_powf, __nv_pow;
        powi(n: i32) => __nv_powif, __nv_powi; sqrt() => __nv_sqrtf, __nv_sqrt;
        rsqrt() => __nv_rsqrtf, __nv_rsqrt; cbrt() => __nv_cbrtf, __nv_cbrt;
        hypot(other: Self) => __nv_hypotf, __nv_hypot; erf() => __nv_erff, __nv_erf;
        erfc() => __nv_erfcf, __nv_erfc; floor() => __nv_floorf, __nv_floor;
        ceil() => __nv_ceilf, __nv_ceil; round() => __nv_roundf, __nv_round;
        trunc() => __nv_truncf, __nv_trunc; mul_add(a: Self, b: Self) => __nv_fmaf, __nv_fma;
        asinh() => __nv_asinhf, __nv_asinh; acosh() => __nv_acoshf, __nv_acosh;
        atanh() => __nv_atanhf, __nv_atanh; round_ties_even() => __nv_rintf, __nv_rint;
    });
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::GpuFloat;

    // `<$t>::m(self)` names std's inherent method (the trait's would recurse).
    macro_rules! std_backed {
        (@same $t:ty: $($m:ident)*) => {$(
            fn $m(self) -> $t { <$t>::$m(self) }
        )*};
        ($($t:ty => $erf:ident, $erfc:ident;)*) => {$(
            impl GpuFloat for $t {
                std_backed!(@same $t: sin cos tan asin acos atan sinh cosh tanh exp exp2 exp_m1 ln
                    log2 log10 ln_1p sqrt cbrt floor ceil round trunc asinh acosh atanh
                    round_ties_even);
                fn atan2(self, other: $t) -> $t { <$t>::atan2(self, other) }
                fn exp10(self) -> $t { <$t>::powf(10.0, self) }
                fn powf(self, n: $t) -> $t { <$t>::powf(self, n) }
                fn powi(self, n: i32) -> $t { <$t>::powi(self, n) }
                fn rsqrt(self) -> $t { 1.0 / <$t>::sqrt(self) }
                fn hypot(self, other: $t) -> $t { <$t>::hypot(self, other) }
                fn erf(self) -> $t { $erf(self as f64) as $t }
                fn erfc(self) -> $t { $erfc(self as f64) as $t }
                fn mul_add(self, a: $t, b: $t) -> $t { <$t>::mul_add(self, a, b) }
            }
        )*};
    }

    std_backed! {
        f32 => erf, erfc;
        f64 => erf, erfc;
    }

    /// erf by its Maclaurin series below 3 (alternating terms; about 1e-13 absolute
    /// error at the top of the range) and as `1 - erfc` above.
    fn erf(x: f64) -> f64 {
        if x.is_nan() {
            return x;
        }
        let a = x.abs();
        if a >= 3.0 {
            return (1.0 - erfc_cf(a)).copysign(x);
        }
        // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
        let (x2, mut term, mut sum) = (x * x, x, x);
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * core::f64::consts::FRAC_2_SQRT_PI
    }

    fn erfc(x: f64) -> f64 {
        if x >= 3.0 { erfc_cf(x) } else { 1.0 - erf(x) }
    }

    /// erfc(x) for x >= 3 by its continued fraction (Abramowitz & Stegun 7.1.14),
    /// evaluated bottom-up; 80 levels are far more than x >= 3 needs.
    fn erfc_cf(x: f64) -> f64 {
        let mut tail = x;
        for k in (1..80).rev() {
            tail = x + (k as f64 / 2.0) / tail;
        }
        (-x * x).exp() / (tail * core::f64::consts::PI.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::GpuFloat;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn erf_matches_known_values() {
        // Reference values from the closed forms' published tables (A&S Table 7.1).
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
        ] {
            assert!(close(GpuFloat::erf(x), want, 1e-12), "erf({x})");
            assert!(close(GpuFloat::erf(-x), -want, 1e-12), "erf(-{x})");
        }
        assert!(close(
            GpuFloat::erfc(4.0f64),
            1.541_725_790_028_002e-8,
            1e-10
        ));
        assert!(close(GpuFloat::erf(1.0f32) as f64, 0.842_700_8, 1e-6));
    }

    #[test]
    fn methods_match_std() {
        let x = 0.75f32;
        assert_eq!(GpuFloat::exp(x), x.exp());
        assert_eq!(GpuFloat::tanh(x), x.tanh());
        assert_eq!(GpuFloat::rsqrt(4.0f64), 0.5);
        assert!(close(GpuFloat::exp10(2.0f64), 100.0, 1e-15));
        assert_eq!(GpuFloat::powi(2.0f64, 10), 1024.0);
        assert_eq!(GpuFloat::mul_add(2.0f32, 3.0, 1.0), 7.0);
    }
}
