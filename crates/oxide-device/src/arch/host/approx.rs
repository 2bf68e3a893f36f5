//! Host backend of `math::ex2_approx_ftz` and `math::rcp_approx_ftz`: `f32::exp2`
//! and `1.0 / x`, flushed as the GPU's `.approx.ftz` instructions flush (subnormal
//! inputs read as 0, subnormal results become +0). The GPU's results are within 2 ulp
//! of these.

fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

pub(crate) fn ex2_approx_ftz(x: f32) -> f32 {
    flush(flush(x).exp2())
}

pub(crate) fn rcp_approx_ftz(x: f32) -> f32 {
    flush(1.0 / flush(x))
}
