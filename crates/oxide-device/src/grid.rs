//! Programmatic dependent launch (sm_90+): a kernel that overlaps its start with the end
//! of the kernel before it on the stream. CUDA C++'s `cudaGridDependencySynchronize()` and
//! `cudaTriggerProgrammaticLaunchCompletion()`, under their PTX names.
//!
//! A kernel marked `#[dependent_launch]` is launched with the driver's
//! programmatic-stream-serialisation attribute: its blocks may start while the grid
//! before it on the stream (its *prerequisite*) is still running, as that grid's blocks
//! trigger ([`griddepcontrol_launch_dependents`]) or exit. So it must call
//! [`griddepcontrol_wait`] before it reads anything the prerequisite may write, and before
//! it writes anything the prerequisite may still read or write: in practice, before its
//! first global-memory access. What comes before the wait (shared-memory and barrier
//! set-up, register allocation) runs under the prerequisite's last blocks instead of
//! after them. `cargo oxide build` refuses a `#[dependent_launch]` kernel whose PTX has no
//! `griddepcontrol.wait`.
//!
//! ```ignore
//! #[kernel]
//! #[dependent_launch]
//! pub fn scale(x: &[f32], mut out: DisjointSlice<f32>) {
//!     let idx = thread::index_1d();   // no memory access yet
//!     grid::griddepcontrol_wait();    // the kernel before this one is done
//!     grid::griddepcontrol_launch_dependents(); // the next one may start its blocks
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = 2.0 * x[idx.get()];
//!     }
//! }
//! ```
//!
//! Launched without the attribute (pyoxide's general path, CuPy's RawKernel, a CUDA graph
//! node, any kernel before sm_90's launchers), the wait returns at once and the trigger
//! does nothing: the stream already ordered the grids. The emulator runs launches one
//! after another, so both are no-ops there too.

use crate::arch;

/// `griddepcontrol.wait`: wait until every prerequisite grid has completed and its
/// memory operations are visible to this thread. Returns at once when the kernel was not
/// launched as a dependent.
#[inline(always)]
pub fn griddepcontrol_wait() {
    arch::griddepcontrol_wait()
}

/// `griddepcontrol.launch_dependents`: this block no longer holds back the launch of the
/// grids that depend on this one; they launch once every block of this grid has called it
/// or exited. A scheduling hint, not a memory fence: a dependent still waits for this
/// grid's completion in its own [`griddepcontrol_wait`].
#[inline(always)]
pub fn griddepcontrol_launch_dependents() {
    arch::griddepcontrol_launch_dependents()
}
