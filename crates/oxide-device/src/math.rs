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

    macro_rules! libdevice {
        ($t:ty { $($method:ident($($arg:ident: $at:ty),*) => $nv:ident;)* }) => {
            unsafe extern "C" {
                $(fn $nv(x: $t $(, $arg: $at)*) -> $t;)*
            }
            impl GpuFloat for $t {
                $(
                    #[inline(always)]
                    fn $method(self $(, $arg: $at)*) -> $t {
                        // SAFETY: libdevice functions are pure and total.
                        unsafe { $nv(self $(, $arg)*) }
                    }
                )*
            }
        };
    }

    libdevice!(f32 {
        sin() => __nv_sinf; cos() => __nv_cosf; tan() => __nv_tanf;
        asin() => __nv_asinf; acos() => __nv_acosf; atan() => __nv_atanf;
        atan2(other: f32) => __nv_atan2f;
        sinh() => __nv_sinhf; cosh() => __nv_coshf; tanh() => __nv_tanhf;
        exp() => __nv_expf; exp2() => __nv_exp2f; exp10() => __nv_exp10f;
        exp_m1() => __nv_expm1f; ln() => __nv_logf; log2() => __nv_log2f;
        log10() => __nv_log10f; ln_1p() => __nv_log1pf;
        powf(n: f32) => __nv_powf; powi(n: i32) => __nv_powif;
        sqrt() => __nv_sqrtf; rsqrt() => __nv_rsqrtf; cbrt() => __nv_cbrtf;
        hypot(other: f32) => __nv_hypotf; erf() => __nv_erff; erfc() => __nv_erfcf;
        floor() => __nv_floorf; ceil() => __nv_ceilf; round() => __nv_roundf;
        trunc() => __nv_truncf; mul_add(a: f32, b: f32) => __nv_fmaf;
        asinh() => __nv_asinhf; acosh() => __nv_acoshf; atanh() => __nv_atanhf;
        round_ties_even() => __nv_rintf;
    });

    libdevice!(f64 {
        sin() => __nv_sin; cos() => __nv_cos; tan() => __nv_tan;
        asin() => __nv_asin; acos() => __nv_acos; atan() => __nv_atan;
        atan2(other: f64) => __nv_atan2;
        sinh() => __nv_sinh; cosh() => __nv_cosh; tanh() => __nv_tanh;
        exp() => __nv_exp; exp2() => __nv_exp2; exp10() => __nv_exp10;
        exp_m1() => __nv_expm1; ln() => __nv_log; log2() => __nv_log2;
        log10() => __nv_log10; ln_1p() => __nv_log1p;
        powf(n: f64) => __nv_pow; powi(n: i32) => __nv_powi;
        sqrt() => __nv_sqrt; rsqrt() => __nv_rsqrt; cbrt() => __nv_cbrt;
        hypot(other: f64) => __nv_hypot; erf() => __nv_erf; erfc() => __nv_erfc;
        floor() => __nv_floor; ceil() => __nv_ceil; round() => __nv_round;
        trunc() => __nv_trunc; mul_add(a: f64, b: f64) => __nv_fma;
        asinh() => __nv_asinh; acosh() => __nv_acosh; atanh() => __nv_atanh;
        round_ties_even() => __nv_rint;
    });
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::GpuFloat;

    // `<$t>::m(self)` names std's inherent method (the trait's would recurse).
    macro_rules! std_backed {
        ($($t:ty => $erf:ident, $erfc:ident;)*) => {$(
            impl GpuFloat for $t {
                fn sin(self) -> $t { <$t>::sin(self) }
                fn cos(self) -> $t { <$t>::cos(self) }
                fn tan(self) -> $t { <$t>::tan(self) }
                fn asin(self) -> $t { <$t>::asin(self) }
                fn acos(self) -> $t { <$t>::acos(self) }
                fn atan(self) -> $t { <$t>::atan(self) }
                fn atan2(self, other: $t) -> $t { <$t>::atan2(self, other) }
                fn sinh(self) -> $t { <$t>::sinh(self) }
                fn cosh(self) -> $t { <$t>::cosh(self) }
                fn tanh(self) -> $t { <$t>::tanh(self) }
                fn exp(self) -> $t { <$t>::exp(self) }
                fn exp2(self) -> $t { <$t>::exp2(self) }
                fn exp10(self) -> $t { <$t>::powf(10.0, self) }
                fn exp_m1(self) -> $t { <$t>::exp_m1(self) }
                fn ln(self) -> $t { <$t>::ln(self) }
                fn log2(self) -> $t { <$t>::log2(self) }
                fn log10(self) -> $t { <$t>::log10(self) }
                fn ln_1p(self) -> $t { <$t>::ln_1p(self) }
                fn powf(self, n: $t) -> $t { <$t>::powf(self, n) }
                fn powi(self, n: i32) -> $t { <$t>::powi(self, n) }
                fn sqrt(self) -> $t { <$t>::sqrt(self) }
                fn rsqrt(self) -> $t { 1.0 / <$t>::sqrt(self) }
                fn cbrt(self) -> $t { <$t>::cbrt(self) }
                fn hypot(self, other: $t) -> $t { <$t>::hypot(self, other) }
                fn erf(self) -> $t { $erf(self as f64) as $t }
                fn erfc(self) -> $t { $erfc(self as f64) as $t }
                fn floor(self) -> $t { <$t>::floor(self) }
                fn ceil(self) -> $t { <$t>::ceil(self) }
                fn round(self) -> $t { <$t>::round(self) }
                fn trunc(self) -> $t { <$t>::trunc(self) }
                fn mul_add(self, a: $t, b: $t) -> $t { <$t>::mul_add(self, a, b) }
                fn asinh(self) -> $t { <$t>::asinh(self) }
                fn acosh(self) -> $t { <$t>::acosh(self) }
                fn atanh(self) -> $t { <$t>::atanh(self) }
                fn round_ties_even(self) -> $t { <$t>::round_ties_even(self) }
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
