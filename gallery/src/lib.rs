//! The gallery: kernels a user writes with pyoxide, in the README's style, not bundled
//! with it. Each has a spec in `gallery/specs/` (what `pyoxide verify` checks and
//! `pyoxide bench` times), a CUDA C++ twin in `gallery/cuda/` written the way a CUDA
//! programmer writes it, and a PyTorch peer where PyTorch has the op;
//! `scripts/bench_gallery` times the three in one run (docs/guide/gallery.md).
#![no_std]

mod activations;
mod columns;
mod gather;
mod norms;
mod reductions;
mod rows;
mod scan;
mod stencil;

pub use activations::*;
pub use columns::*;
pub use gather::*;
pub use norms::*;
pub use reductions::*;
pub use rows::*;
pub use scan::*;
pub use stencil::*;
