//! The one place that picks the backend behind the public API: the GPU's special
//! registers on nvptx64, the emulator's per-thread state elsewhere. Both modules
//! expose the same function names; nothing outside `arch` looks at `target_arch`.

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub(crate) use nvptx::*;
#[cfg(target_arch = "nvptx64")]
mod nvptx_mma;
#[cfg(target_arch = "nvptx64")]
pub(crate) use nvptx_mma::*;
#[cfg(target_arch = "nvptx64")]
mod nvptx_wgmma;
#[cfg(target_arch = "nvptx64")]
pub(crate) use nvptx_wgmma::*;

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use host::*;
