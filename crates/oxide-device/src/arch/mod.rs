//! The one place that picks the backend behind the public API: the GPU's special
//! registers on nvptx64, the emulator's per-thread state elsewhere. Both modules
//! expose the same function names; nothing outside `arch` looks at `target_arch`.

/// Lanes per warp on every NVIDIA GPU (re-exported as `warp::WARP_SIZE`); here so that
/// `thread`, `warp` and `debug` can all use it without depending on each other.
pub(crate) const WARP_SIZE: u32 = 32;

/// A memory scope: who must observe an atomic operation (the GPU picks the PTX scope by
/// it; the emulator's host atomics are all at the strongest one).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[doc(hidden)]
pub enum Scope {
    Block,
    Device,
    System,
}

/// The packed-half (`f16x2`) operations both backends implement.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum F16x2Op {
    Abs,
    Neg,
    Add,
    Sub,
    Mul,
    Min,
    Max,
    Fma,
    FmaFtz,
    FmaSat,
    FmaFtzSat,
    FmaRelu,
    FmaFtzRelu,
}

/// The cluster's special registers (`function => "%register"`), listed once for both
/// backends: each hands in the macro that makes its functions of them (a `mov.u32` on
/// the GPU, a refusal naming the register on the emulator). Defined before the backend
/// modules so that they see it.
macro_rules! with_cluster_registers {
    ($make:ident) => {
        $make! {
            cluster_ctarank => "%cluster_ctarank";
            cluster_nctarank => "%cluster_nctarank";
            cluster_ctaid_x => "%cluster_ctaid.x";
            cluster_ctaid_y => "%cluster_ctaid.y";
            cluster_ctaid_z => "%cluster_ctaid.z";
            cluster_nctaid_x => "%cluster_nctaid.x";
            cluster_nctaid_y => "%cluster_nctaid.y";
            cluster_nctaid_z => "%cluster_nctaid.z";
            clusterid_x => "%clusterid.x";
            clusterid_y => "%clusterid.y";
            clusterid_z => "%clusterid.z";
            nclusterid_x => "%nclusterid.x";
            nclusterid_y => "%nclusterid.y";
            nclusterid_z => "%nclusterid.z";
        }
    };
}

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub(crate) use nvptx::*;

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use host::*;
