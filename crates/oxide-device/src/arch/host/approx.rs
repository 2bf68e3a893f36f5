//! Host backend of `math::ex2_approx_ftz`: `f32::exp2`, flushed as the GPU's
//! `ex2.approx.ftz.f32` flushes (subnormal inputs read as 0, subnormal results become
//! +0). The GPU's result is within 2 ulp of this one.

pub(crate) fn ex2_approx_ftz(x: f32) -> f32 {
    let x = if x.is_subnormal() { 0.0 } else { x };
    let y = x.exp2();
    if y.is_subnormal() { 0.0 } else { y }
}
