//! GPU backend of `grid` (sm_90+, PTX ISA 7.8): programmatic dependent launch's two
//! instructions. Neither block has `nomem`: each is a compiler barrier for memory, so no
//! global access moves above the wait.

use core::arch::asm;

#[inline(always)]
pub(crate) fn griddepcontrol_wait() {
    // SAFETY: no operands; it only waits.
    unsafe { asm!("griddepcontrol.wait;", options(nostack, preserves_flags)) }
}

#[inline(always)]
pub(crate) fn griddepcontrol_launch_dependents() {
    // SAFETY: no operands; a scheduling hint.
    unsafe {
        asm!(
            "griddepcontrol.launch_dependents;",
            options(nostack, preserves_flags)
        )
    }
}
