//! pyoxide's bundled kernels for the arch-specific `sm_90a` target (Hopper's
//! warpgroup tensor cores). Built with `cargo oxide build --arch sm_90a`; the CPU
//! emulator refuses them, naming the first sm_90 instruction it meets.
#![no_std]

mod attention_sm90;
mod attention_sm90_consumer;
mod attention_sm90_tiles;
mod gemm_sm90;
mod gemm_sm90_split;
mod gemm_sm90_swap;

pub use attention_sm90::*;
pub use gemm_sm90::*;
