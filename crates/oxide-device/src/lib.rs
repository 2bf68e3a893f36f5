//! pyoxide's device library: what a `#[kernel]` function may call.
//!
//! Shaped like `core`, with NVIDIA cuda-oxide's names where it has them, so its
//! kernels port by changing their `use` lines:
//!
//! | module | what |
//! |---|---|
//! | [`thread`] | `threadIdx_x()`…, `index_1d()`/`index_2d::<N>()`/`warp_index()` witnesses and their index spaces, `sync_threads()`, fences |
//! | [`disjoint`] | [`DisjointSlice`]: race-free outputs (`get_mut`, `get_chunk_mut::<N>`, `block_row_mut`, `map`) |
//! | [`vector`] | 128-bit vector access: `x.as_vectors::<N>()` on `&[T]`, `out.map(inputs, f)` |
//! | [`columns`] | column (axis-0) reductions: `out.reduce_columns(x, identity, op, finish)` with `#[launch(columns(out))]` |
//! | [`row`] | a block's rows: `x.block_share()` (`fold`, `cache::<S>()` into registers), `row.map(inputs, f)` on output rows, as 128-bit vectors |
//! | [`shared`] | [`SharedArray`](shared::SharedArray) statics, [`DynamicSharedArray`](shared::DynamicSharedArray) |
//! | [`warp`] | lane/warp ids, `shuffle_*_sync`, `ballot_sync`…, `match_any_sync`, warp reductions (`reduce(v, op)` over any [`Shuffle`](warp::Shuffle) value, `sum`/`min`/`max`/`arg_max`), scans |
//! | [`block`] | block-wide `reduce(v, op)`, `sum`, `min`, `max`, `arg_max`, `arg_min`, returned to every thread |
//! | [`combine`] | combining functions for reductions: `sum`, `min`, `max`, `arg_max`, `arg_min`, `sum_pair`, `welford` |
//! | [`atomic`] | `{Block,Device,System}Atomic{U32,I32,U64,I64,F32,F64}`, the [`AtomicSlice`] parameter |
//! | [`math`] | `x.exp()`, `x.tanh()`… through libdevice ([`math::GpuFloat`]) |
//! | [`float`] | rounding spelled out: `mul_rn_f32`, `add_rn_f32` (never fused, whatever `--no-fmad` says), `fma_rn_f32`, and `f64` |
//! | [`mma`] | tensor cores: `mma_m16n8k16_f32_bf16`…, `ldmatrix_x4`…, `stmatrix_x4`…, `cp_async_*` with commit/wait groups |
//! | [`wgmma`] | sm_90a: `wgmma_m64n{16,64,128,256}k16_f32_bf16` (and f16, register-A forms) with fence/commit/wait (`wgmma_wait_group_acc` names the accumulators), `smem_descriptor`, `shared_address`, `setmaxnreg_inc`/`_dec`; not emulated (refused by name) |
//! | [`async_copy`] | cuda-oxide's `cp.async` names: `cp_async_ca_{4,8,16}`, `cp_async_cg_16`, `_zfill` forms, commit/wait, `cp_async_mbarrier_arrive*` |
//! | [`f16x2`] | packed half arithmetic (`add_f16x2`, `fma_relu_f16x2`, …), bit-exact on the emulator |
//! | [`barrier`] | `mbarrier` ([`Barrier`](barrier::Barrier), `mbarrier_init`, `mbarrier_arrive`, `mbarrier_arrive_expect_tx`, `mbarrier_try_wait_parity`, `mbarrier_wait`…), `fence_proxy_async_shared_cta`, `named_barrier_sync` (`barrier.sync id, n`); not emulated |
//! | [`grid`] | sm_90: programmatic dependent launch, `griddepcontrol_wait` and `griddepcontrol_launch_dependents` (for `#[dependent_launch]` kernels); no-ops on the emulator |
//! | [`tma`] | sm_90: [`TmaDescriptor`](tma::TmaDescriptor), `cp_async_bulk_tensor_2d_g2s` (loads), `cp_async_bulk_tensor_2d_s2g` (stores) with `cp_async_bulk_commit_group` / `_wait_group` / `_wait_group_read`, `prefetch_tensormap`; not emulated |
//! | [`half`] | [`f16`](struct@f16), [`bf16`] |
//! | [`ldst`] | raw `ld.global.nc` and 128-bit `f32` loads and stores (`unsafe`; row and tile kernels) |
//! | [`print`] | [`gpu_printf!`], [`gpu_assert!`] |
//! | [`dotprod`], [`debug`] | `dp4a`/`dp2a`; timers, SM and warp ids, `trap`, `breakpoint` |
//!
//! Safe by default: ordinary kernels (element-wise maps, reductions into an
//! `AtomicSlice`, row-wise softmax) need no `unsafe`; shared memory, raw-pointer
//! atomics and runtime-strided 2-D indices are `unsafe`, with their contracts stated.
//!
//! ```
//! use oxide_device::prelude::*;
//!
//! /// `out[i] = tanh(x[i]) · scale`, and the total of `x` into `sum[0]`.
//! #[kernel]
//! pub fn tanh_and_sum(x: &[f32], scale: f32, mut out: DisjointSlice<f32>, sum: AtomicSlice<f32>) {
//!     let idx = thread::index_1d();
//!     let v = x.get(idx.get()).copied().unwrap_or(0.0);
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = v.tanh() * scale;
//!     }
//!     let block_total = warp::block_reduce_sum_f32(v);
//!     if let (0, Some(s)) = (thread::threadIdx_x(), sum.first()) {
//!         s.fetch_add(block_total, Ordering::Relaxed);
//!     }
//! }
//! # fn main() {
//! #     let (mut out, mut sum) = ([0.0f32; 1], [0.0f32; 1]);
//! #     tanh_and_sum(&[0.5], 2.0, DisjointSlice::from_mut(&mut out), AtomicSlice::from_mut(&mut sum));
//! #     assert_eq!((out[0], sum[0]), (0.5f32.tanh() * 2.0, 0.5));
//! # }
//! ```
//!
//! The same API compiles for two targets, picked once in `arch`:
//! - `nvptx64`: `core::arch::nvptx`, `llvm.nvvm.*` intrinsics, PTX `asm!` (the GPU);
//! - anything else: the CPU emulator (`arch/host`), which runs a launch's blocks on
//!   the machine's cores and a block's threads as coroutines, so barriers, block-shared
//!   memory and 32-lane warps mean what they mean on a GPU. A kernel called as a plain
//!   Rust function, outside a launch, is thread 0 of a one-thread block (a warp of
//!   one lane: shuffles return the caller's value, a ballot has one bit, barriers do
//!   nothing). Kernels run and are tested on the host either way.
#![no_std]
// The device build sets RUSTC_BOOTSTRAP=1; this gates `core::arch::nvptx` on nvptx64.
// Kernel crates themselves need no features. `asm!` (atomics, fences) and the
// `llvm.nvvm.*` intrinsics (shuffles, votes) need the other two.
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics),
    allow(internal_features)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

// Code generated by `#[kernel]` names `::oxide_device::…`; this makes those paths
// resolve inside this crate too (its own tests and doc examples).
extern crate self as oxide_device;

/// Public functions that are one call of another with the same arguments (most often
/// the `arch` function of the same operation): each entry is the function's docs and
/// signature, then `= path;`. An `unsafe fn` passes its caller's obligations on.
macro_rules! forward {
    () => {};
    (
        $(#[$m:meta])*
        pub fn $name:ident $(<const $c:ident: $ct:ty>)? ($($a:ident: $t:ty),*) $(-> $r:ty)?
            = $($target:ident)::+;
        $($rest:tt)*
    ) => {
        $(#[$m])*
        #[inline(always)]
        pub fn $name $(<const $c: $ct>)? ($($a: $t),*) $(-> $r)? {
            $($target)::+ $(::<$c>)? ($($a),*)
        }
        forward!($($rest)*);
    };
    (
        $(#[$m:meta])*
        pub unsafe fn $name:ident ($($a:ident: $t:ty),*) $(-> $r:ty)? = $($target:ident)::+;
        $($rest:tt)*
    ) => {
        $(#[$m])*
        #[inline(always)]
        pub unsafe fn $name($($a: $t),*) $(-> $r)? {
            // SAFETY: upheld by the caller.
            unsafe { $($target)::+($($a),*) }
        }
        forward!($($rest)*);
    };
}

mod arch;
pub mod array;
pub mod async_copy;
pub mod atomic;
pub mod barrier;
pub mod block;
pub mod cluster;
pub mod columns;
pub mod combine;
pub mod constant;
pub mod convert;
pub mod cooperative_groups;
pub mod debug;
pub mod disjoint;
pub mod dotprod;
pub mod f16x2;
pub mod float;
pub mod grid;
pub mod half;
pub mod ldst;
pub mod math;
pub mod mma;
pub mod prelude;
pub mod print;
pub mod row;
pub mod shared;
mod shuffle;
pub mod swizzle;
pub mod thread;
pub mod tma;
mod unrolled;
pub mod vector;
pub mod warp;
pub mod wgmma;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use array::{
    Array, Array1, Array2, Array3, DisjointArray, DisjointArray1, DisjointArray2, DisjointArray3,
    Strided,
};
pub use atomic::AtomicSlice;
pub use constant::{ConstantMemory, ConstantMemoryValue};
pub use disjoint::{BlockRow, DisjointSlice};
pub use half::{bf16, f16};
#[doc(hidden)]
pub use oxide_macros::__gpu_assert_failed;
pub use oxide_macros::{
    cluster_launch, constant, cuda_module, dependent_launch, device, gpu_printf, gpu_printf_c,
    kernel, launch, launch_bounds, launch_contract, shapes, tensor_maps, tune, unroll, variant_of,
};
pub use shared::{DynamicSharedArray, SharedArray};
pub use thread::*;

/// A GPU thread cannot unwind or report a message: a panic (including a failed bounds
/// check) stops the kernel with `trap`, which the host sees as a launch error.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    arch::trap()
}

#[cfg(test)]
mod testing {
    use crate::__private::emu::{ThreadCoords, set_thread_coords};

    /// Run `body` as every thread of a 1-D `grid` × `block` launch, one after another
    /// (so with no barriers or warp exchanges between them).
    pub(crate) fn each_thread(grid: u32, block: u32, mut body: impl FnMut()) {
        for b in 0..grid {
            for t in 0..block {
                let previous = set_thread_coords(ThreadCoords {
                    thread_idx: [t, 0, 0],
                    block_idx: [b, 0, 0],
                    block_dim: [block, 1, 1],
                    grid_dim: [grid, 1, 1],
                });
                body();
                set_thread_coords(previous);
            }
        }
    }
}
