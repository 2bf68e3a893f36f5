//! GPU backend of `math::ex2_approx_ftz` and `math::rcp_approx_ftz`: the
//! special-function unit's `2^x` and `1/x`.

use core::arch::asm;

#[inline(always)]
pub(crate) fn ex2_approx_ftz(x: f32) -> f32 {
    let y: f32;
    // SAFETY: a register-only instruction.
    unsafe {
        asm!("ex2.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x,
             options(pure, nomem, nostack, preserves_flags));
    }
    y
}

#[inline(always)]
pub(crate) fn rcp_approx_ftz(x: f32) -> f32 {
    let y: f32;
    // SAFETY: a register-only instruction.
    unsafe {
        asm!("rcp.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x,
             options(pure, nomem, nostack, preserves_flags));
    }
    y
}
