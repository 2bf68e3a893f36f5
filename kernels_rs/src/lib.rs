//! pyoxide's bundled kernels. A kernel crate like any user's: `no_std`, no nightly
//! features, built for the GPU by `cargo oxide build` and for the host as is.
#![no_std]

mod attention;
mod elementwise;
mod gemm;
mod histogram;
mod k_steps;
mod matmul;
mod reduce;
mod rows;
mod sgemm_tall;
mod strided;
mod transpose;
mod vec16;

pub use attention::*;
pub use elementwise::*;
pub use gemm::*;
pub use histogram::*;
pub use matmul::*;
pub use reduce::*;
pub use rows::*;
pub use strided::*;
pub use transpose::*;
