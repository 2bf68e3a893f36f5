//! GPU backend of `math::ex2_approx_ftz` and `math::rcp_approx_ftz`: the
//! special-function unit's `2^x` and `1/x`.

register_asm! {
    ex2_approx_ftz(f32) -> f32 = "ex2.approx.ftz.f32";
    rcp_approx_ftz(f32) -> f32 = "rcp.approx.ftz.f32";
}
