//! GPU backend: PTX special registers, barriers, warp intrinsics, scoped atomics and
//! the dynamic shared-memory symbol here; the instruction families in nvptx/ (packed
//! halves, tensor cores, conversions, clusters, wgmma, approximate math), as the
//! emulator's are in host/.
//!
//! Warp intrinsics go through LLVM's `llvm.nvvm.*` intrinsics rather than `asm!`:
//! LLVM declares those `convergent`, so no pass can move a shuffle into a branch that
//! only some lanes take. Atomics and fences use `asm!` because Rust cannot name an
//! LLVM sync scope; an `asm!` block without `nomem` is a compiler barrier for memory.

use core::arch::asm;
use core::arch::nvptx;
use core::sync::atomic::Ordering;

/// Register-only instructions of one operand (`INS d, x;`), `pure`: LLVM may move or
/// drop them like arithmetic.
macro_rules! register_asm {
    ($($name:ident($t:ty) -> $r:ty = $ins:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name(x: $t) -> $r {
            let y: $r;
            // SAFETY: a register-only instruction.
            unsafe {
                core::arch::asm!(concat!($ins, " {y}, {x};"), y = out(reg32) y, x = in(reg32) x,
                     options(pure, nomem, nostack, preserves_flags));
            }
            y
        }
    )*};
}

mod approx;
pub(crate) use approx::*;
mod cluster;
pub(crate) use cluster::*;
mod convert;
pub(crate) use convert::*;
mod f16x2;
pub(crate) use f16x2::*;
mod grid;
pub(crate) use grid::*;
mod mma;
pub(crate) use mma::*;
mod wgmma;
pub(crate) use wgmma::*;

macro_rules! special_registers {
    ($($name:ident => $intrinsic:ident,)*) => {$(
        #[inline(always)]
        pub(crate) fn $name() -> u32 {
            // SAFETY: reading a special register has no preconditions inside a kernel.
            unsafe { nvptx::$intrinsic() as u32 }
        }
    )*};
}

special_registers! {
    thread_idx_x => _thread_idx_x, thread_idx_y => _thread_idx_y, thread_idx_z => _thread_idx_z,
    block_idx_x => _block_idx_x, block_idx_y => _block_idx_y, block_idx_z => _block_idx_z,
    block_dim_x => _block_dim_x, block_dim_y => _block_dim_y, block_dim_z => _block_dim_z,
    grid_dim_x => _grid_dim_x, grid_dim_y => _grid_dim_y, grid_dim_z => _grid_dim_z,
}

#[inline(always)]
pub(crate) fn sync_threads() {
    // SAFETY: `bar.sync 0`; every thread of the block must reach it (CUDA's rule for
    // `__syncthreads`, documented on `thread::sync_threads`).
    unsafe { nvptx::_syncthreads() }
}

#[inline(always)]
pub(crate) fn threadfence_block() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("membar.cta;", options(nostack, preserves_flags)) }
}

#[inline(always)]
pub(crate) fn threadfence() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("membar.gl;", options(nostack, preserves_flags)) }
}

#[inline(always)]
pub(crate) fn threadfence_system() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("membar.sys;", options(nostack, preserves_flags)) }
}

/// Lanes in a warp on every NVIDIA GPU so far.
pub(crate) const WARP_LANES: u32 = 32;

/// Lanes of the current warp (every warp has 32 on the GPU).
#[inline(always)]
pub(crate) fn warp_lanes() -> u32 {
    WARP_LANES
}

#[allow(improper_ctypes)]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
    fn sreg_laneid() -> i32;
    #[link_name = "llvm.nvvm.activemask"]
    fn activemask() -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_idx_i32(mask: i32, v: i32, lane: i32, c: i32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn shfl_bfly_i32(mask: i32, v: i32, lane: i32, c: i32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_down_i32(mask: i32, v: i32, lane: i32, c: i32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn shfl_up_i32(mask: i32, v: i32, lane: i32, c: i32) -> i32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: i32);
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn vote_ballot(mask: i32, pred: bool) -> i32;
    #[link_name = "llvm.nvvm.match.any.sync.i32"]
    fn match_any_i32(mask: i32, v: i32) -> i32;
    #[link_name = "llvm.nvvm.match.any.sync.i64"]
    fn match_any_i64(mask: i32, v: i64) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.add"]
    fn redux_add(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.umin"]
    fn redux_umin(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.umax"]
    fn redux_umax(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.min"]
    fn redux_min(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.max"]
    fn redux_max(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.and"]
    fn redux_and(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.or"]
    fn redux_or(v: i32, mask: i32) -> i32;
    #[link_name = "llvm.nvvm.redux.sync.xor"]
    fn redux_xor(v: i32, mask: i32) -> i32;
}

macro_rules! redux {
    ($($name:ident: $t:ty => $intrinsic:ident;)*) => {$(
        /// `redux.sync` (sm_80+, below every arch pyoxide builds for).
        #[inline(always)]
        pub(crate) fn $name(mask: u32, v: $t) -> $t {
            // SAFETY: as `shfl_idx`.
            unsafe { $intrinsic(v as i32, mask as i32) as $t }
        }
    )*};
}

redux! {
    redux_add_u32: u32 => redux_add;
    redux_min_u32: u32 => redux_umin;
    redux_max_u32: u32 => redux_umax;
    redux_min_i32: i32 => redux_min;
    redux_max_i32: i32 => redux_max;
    redux_and_u32: u32 => redux_and;
    redux_or_u32: u32 => redux_or;
    redux_xor_u32: u32 => redux_xor;
}

#[inline(always)]
pub(crate) fn lane_id() -> u32 {
    // SAFETY: reads %laneid.
    unsafe { sreg_laneid() as u32 }
}

#[inline(always)]
pub(crate) fn active_mask() -> u32 {
    // SAFETY: `activemask.b32` has no preconditions.
    unsafe { activemask() as u32 }
}

/// The `c` operand of `shfl.sync` for a whole-warp shuffle: lanes clamp at 31 for
/// idx/bfly/down, at 0 for up (PTX ISA, "shfl.sync").
const CLAMP_HIGH: i32 = 0x1f;
const CLAMP_LOW: i32 = 0;

macro_rules! shuffles {
    ($($name:ident: $intrinsic:ident, $clamp:ident;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name(mask: u32, v: u32, lane_or_delta: u32) -> u32 {
            // SAFETY: the caller's lanes in `mask` all execute this shuffle (documented
            // on `warp::shuffle_sync`); an absent lane yields an unspecified value, not UB
            // in LLVM.
            unsafe { $intrinsic(mask as i32, v as i32, lane_or_delta as i32, $clamp) as u32 }
        }
    )*};
}

shuffles! {
    shfl_idx: shfl_idx_i32, CLAMP_HIGH;
    shfl_xor: shfl_bfly_i32, CLAMP_HIGH;
    shfl_down: shfl_down_i32, CLAMP_HIGH;
    shfl_up: shfl_up_i32, CLAMP_LOW;
}

#[inline(always)]
pub(crate) fn ballot(mask: u32, pred: bool) -> u32 {
    // SAFETY: as `shfl_idx`.
    unsafe { vote_ballot(mask as i32, pred) as u32 }
}

/// `bar.warp.sync`: the lanes of `mask` wait for each other, and their memory
/// accesses before it are ordered before those after (`__syncwarp`).
#[inline(always)]
pub(crate) fn warp_sync(mask: u32) {
    // SAFETY: as `shfl_idx`.
    unsafe { bar_warp_sync(mask as i32) }
}

#[inline(always)]
pub(crate) fn match_any_u32(mask: u32, v: u32) -> u32 {
    // SAFETY: as `shfl_idx`; `match.sync` needs sm_70, below every arch pyoxide builds.
    unsafe { match_any_i32(mask as i32, v as i32) as u32 }
}

#[inline(always)]
pub(crate) fn match_any_u64(mask: u32, v: u64) -> u32 {
    // SAFETY: as `match_any_u32`.
    unsafe { match_any_i64(mask as i32, v as i64) as u32 }
}

// The launch-sized dynamic shared array. The link step turns this declaration into
// `.extern .shared .align 16 .b8 __oxide_dynamic_shared[]`, and the `_aN` names
// (oxide_abi::names::DYNAMIC_SHARED_SYMBOL, a larger ALIGN) into that same array,
// aligned to the largest N the kernel names.
unsafe extern "C" {
    static mut __oxide_dynamic_shared: [u8; 0];
    static mut __oxide_dynamic_shared_a32: [u8; 0];
    static mut __oxide_dynamic_shared_a64: [u8; 0];
    static mut __oxide_dynamic_shared_a128: [u8; 0];
    static mut __oxide_dynamic_shared_a256: [u8; 0];
}

#[inline(always)]
pub(crate) fn dynamic_shared_base() -> *mut u8 {
    (&raw mut __oxide_dynamic_shared).cast()
}

/// The dynamic array's base, aligned to `align` (a power of two up to 256).
#[inline(always)]
pub(crate) fn dynamic_shared_base_aligned(align: usize) -> *mut u8 {
    match align {
        32 => (&raw mut __oxide_dynamic_shared_a32).cast(),
        64 => (&raw mut __oxide_dynamic_shared_a64).cast(),
        128 => (&raw mut __oxide_dynamic_shared_a128).cast(),
        256 => (&raw mut __oxide_dynamic_shared_a256).cast(),
        _ => dynamic_shared_base(),
    }
}

/// `cvta.to.shared.u64`: the shared-window offset of a generic pointer into shared
/// memory.
#[inline(always)]
pub(crate) fn cvta_to_shared(p: *const u8) -> u64 {
    let a: u64;
    // SAFETY: an address conversion.
    unsafe {
        asm!("cvta.to.shared.u64 {a}, {p};", a = out(reg64) a, p = in(reg64) p,
             options(pure, nomem, nostack, preserves_flags));
    }
    a
}

/// The generic address of shared-memory offset 0 (`cvta.shared.u64 w, 0`). `pure` and
/// `nomem` (the window is fixed for the kernel's life), so LLVM computes it once.
#[inline(always)]
fn shared_window() -> usize {
    let w: usize;
    // SAFETY: an address conversion; reads no memory.
    unsafe {
        asm!("cvta.shared.u64 {w}, 0;", w = out(reg64) w,
             options(pure, nomem, nostack, preserves_flags));
    }
    w
}

/// [`cvta_to_shared`]'s offset, in 32 bits, as plain arithmetic on the pointer: the
/// generic address minus [`shared_window`]. LLVM sees through the subtraction, so
/// pointers at constant distances from one base share one register and differ by
/// immediates, where each `cvta.to.shared` is an opaque instruction of its own
/// (`cp.async`'s destinations use it).
#[inline(always)]
pub(crate) fn shared_offset(p: *const u8) -> u32 {
    (p as usize).wrapping_sub(shared_window()) as u32
}

/// Readers of the special registers LLVM has no intrinsic for, as `usize`.
macro_rules! asm_special_registers {
    ($($(#[$doc:meta])* $name:ident => $register:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub(crate) fn $name() -> usize {
            let value: u32;
            // SAFETY: reading a special register has no preconditions inside a kernel.
            unsafe {
                asm!(
                    concat!("mov.u32 {v}, ", $register, ";"),
                    v = out(reg32) value,
                    options(nomem, nostack, preserves_flags, pure)
                )
            };
            value as usize
        }
    )*};
}

asm_special_registers! {
    /// Bytes of shared memory a block of this launch has, static and dynamic.
    total_shared_bytes => "%total_smem_size";
    /// Bytes of dynamic shared memory the launch gave the block.
    dynamic_shared_bytes => "%dynamic_smem_size";
}

#[inline(always)]
pub(crate) fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { nvptx::trap() }
}

unsafe extern "C" {
    /// CUDA's device-side assertion (what `assert()` calls in CUDA C++): the driver
    /// prints the message, file, line, function, block and thread, and the launch
    /// fails with `CUDA_ERROR_ASSERT`.
    fn __assertfail(
        message: *const u8,
        file: *const u8,
        line: u32,
        function: *const u8,
        char_size: usize,
    );
}

/// A failed assertion: `__assertfail` (then `trap`, which it never returns to).
///
/// # Safety
/// `message` and `file` are NUL-terminated.
#[inline(always)]
pub(crate) unsafe fn assert_fail(message: *const u8, file: *const u8, line: u32) -> ! {
    // SAFETY: NUL-terminated strings (upheld by the caller and the literal).
    unsafe { __assertfail(message, file, line, c"kernel".as_ptr().cast(), 1) };
    trap()
}

/// `vprintf(format, args)`: CUDA's device printf; `args` packs the arguments with C's
/// alignment (see `print.rs`).
#[inline(always)]
pub(crate) unsafe fn vprintf(format: *const u8, args: *const u8) -> i32 {
    // SAFETY: upheld by the caller: a NUL-terminated format and a matching buffer.
    unsafe { nvptx::vprintf(format, args.cast()) }
}

// ---- scoped atomics -------------------------------------------------------------
//
// One PTX instruction per (operation, type, scope, ordering). `SeqCst` is `fence.sc`
// then the `acq_rel` form, as the PTX memory model's mapping of C++ seq_cst does.

use super::Scope;

macro_rules! by_scope_and_order {
    ($scope:expr, $order:expr, |$sem:ident, $sc:ident| $body:expr) => {
        match ($scope, $order) {
            (Scope::Block, Ordering::Relaxed) => { by_scope_and_order!(@ $body, $sem = ".relaxed", $sc = ".cta") }
            (Scope::Block, Ordering::Acquire) => { by_scope_and_order!(@ $body, $sem = ".acquire", $sc = ".cta") }
            (Scope::Block, Ordering::Release) => { by_scope_and_order!(@ $body, $sem = ".release", $sc = ".cta") }
            (Scope::Block, Ordering::AcqRel) => { by_scope_and_order!(@ $body, $sem = ".acq_rel", $sc = ".cta") }
            (Scope::Block, _) => { asm!("fence.sc.cta;"); by_scope_and_order!(@ $body, $sem = ".acq_rel", $sc = ".cta") }
            (Scope::Device, Ordering::Relaxed) => { by_scope_and_order!(@ $body, $sem = ".relaxed", $sc = ".gpu") }
            (Scope::Device, Ordering::Acquire) => { by_scope_and_order!(@ $body, $sem = ".acquire", $sc = ".gpu") }
            (Scope::Device, Ordering::Release) => { by_scope_and_order!(@ $body, $sem = ".release", $sc = ".gpu") }
            (Scope::Device, Ordering::AcqRel) => { by_scope_and_order!(@ $body, $sem = ".acq_rel", $sc = ".gpu") }
            (Scope::Device, _) => { asm!("fence.sc.gpu;"); by_scope_and_order!(@ $body, $sem = ".acq_rel", $sc = ".gpu") }
            (Scope::System, Ordering::Relaxed) => { by_scope_and_order!(@ $body, $sem = ".relaxed", $sc = ".sys") }
            (Scope::System, Ordering::Acquire) => { by_scope_and_order!(@ $body, $sem = ".acquire", $sc = ".sys") }
            (Scope::System, Ordering::Release) => { by_scope_and_order!(@ $body, $sem = ".release", $sc = ".sys") }
            (Scope::System, Ordering::AcqRel) => { by_scope_and_order!(@ $body, $sem = ".acq_rel", $sc = ".sys") }
            (Scope::System, _) => { asm!("fence.sc.sys;"); by_scope_and_order!(@ $body, $sem = ".acq_rel", $sc = ".sys") }
        }
    };
    (@ $body:expr, $sem:ident = $s:literal, $sc:ident = $c:literal) => {{
        macro_rules! $sem { () => { $s }; }
        macro_rules! $sc { () => { $c }; }
        $body
    }};
}

#[inline(always)]
fn fence_sc(scope: Scope) {
    // SAFETY: a fence has no preconditions.
    unsafe {
        match scope {
            Scope::Block => asm!("fence.sc.cta;", options(nostack)),
            Scope::Device => asm!("fence.sc.gpu;", options(nostack)),
            Scope::System => asm!("fence.sc.sys;", options(nostack)),
        }
    }
}

/// The ordering of an `ld` or `st`, which has only `.relaxed` and one stronger form
/// (`strong`: `.acquire` for `ld`, `.release` for `st`): `order` if relaxed, else
/// `strong`, after a `fence.sc` for `SeqCst`.
#[inline(always)]
fn relaxed_or(strong: Ordering, scope: Scope, order: Ordering) -> Ordering {
    match order {
        Ordering::Relaxed => Ordering::Relaxed,
        Ordering::SeqCst => {
            fence_sc(scope);
            strong
        }
        _ => strong,
    }
}

macro_rules! atom_rmw {
    ($($name:ident: $ty:ty, $reg:ident, $op:literal;)*) => {$(
        /// # Safety
        /// `p` is valid, aligned, and every access to it during the launch is atomic.
        #[inline(always)]
        pub(crate) unsafe fn $name(p: *mut $ty, v: $ty, scope: Scope, order: Ordering) -> $ty {
            let r: $ty;
            // SAFETY: upheld by the caller.
            unsafe {
                by_scope_and_order!(scope, order, |sem, sc| asm!(
                    concat!("atom", sem!(), sc!(), $op, " {r}, [{p}], {v};"),
                    r = out($reg) r, p = in(reg64) p, v = in($reg) v,
                    options(nostack),
                ))
            }
            r
        }
    )*};
}

atom_rmw! {
    atom_add_u32: u32, reg32, ".add.u32";
    atom_add_u64: u64, reg64, ".add.u64";
    atom_add_f32: f32, reg32, ".add.f32";
    atom_add_f64: f64, reg64, ".add.f64";
    atom_min_u32: u32, reg32, ".min.u32";
    atom_max_u32: u32, reg32, ".max.u32";
    atom_min_i32: i32, reg32, ".min.s32";
    atom_max_i32: i32, reg32, ".max.s32";
    atom_min_u64: u64, reg64, ".min.u64";
    atom_max_u64: u64, reg64, ".max.u64";
    atom_min_i64: i64, reg64, ".min.s64";
    atom_max_i64: i64, reg64, ".max.s64";
    atom_and_u32: u32, reg32, ".and.b32";
    atom_or_u32: u32, reg32, ".or.b32";
    atom_xor_u32: u32, reg32, ".xor.b32";
    atom_and_u64: u64, reg64, ".and.b64";
    atom_or_u64: u64, reg64, ".or.b64";
    atom_xor_u64: u64, reg64, ".xor.b64";
    atom_exch_u32: u32, reg32, ".exch.b32";
    atom_exch_u64: u64, reg64, ".exch.b64";
}

macro_rules! atom_cas {
    ($($name:ident: $ty:ty, $reg:ident, $op:literal;)*) => {$(
        /// # Safety
        /// As the read-modify-write operations.
        #[inline(always)]
        pub(crate) unsafe fn $name(p: *mut $ty, current: $ty, new: $ty, scope: Scope, order: Ordering) -> $ty {
            let r: $ty;
            // SAFETY: upheld by the caller.
            unsafe {
                by_scope_and_order!(scope, order, |sem, sc| asm!(
                    concat!("atom", sem!(), sc!(), $op, " {r}, [{p}], {c}, {n};"),
                    r = out($reg) r, p = in(reg64) p, c = in($reg) current, n = in($reg) new,
                    options(nostack),
                ))
            }
            r
        }
    )*};
}

atom_cas! {
    atom_cas_u32: u32, reg32, ".cas.b32";
    atom_cas_u64: u64, reg64, ".cas.b64";
}

macro_rules! atom_load_store {
    ($($load:ident, $store:ident: $ty:ty, $reg:ident, $bits:literal;)*) => {$(
        /// # Safety
        /// As the read-modify-write operations.
        #[inline(always)]
        pub(crate) unsafe fn $load(p: *const $ty, scope: Scope, order: Ordering) -> $ty {
            let r: $ty;
            // `ld` has only .relaxed and .acquire. (Release/AcqRel loads are rejected by
            // the public API, as core's are.)
            let order = relaxed_or(Ordering::Acquire, scope, order);
            // SAFETY: upheld by the caller.
            unsafe {
                by_scope_and_order!(scope, order, |sem, sc| asm!(
                    concat!("ld", sem!(), sc!(), $bits, " {r}, [{p}];"),
                    r = out($reg) r, p = in(reg64) p, options(nostack),
                ))
            }
            r
        }

        /// # Safety
        /// As the read-modify-write operations.
        #[inline(always)]
        pub(crate) unsafe fn $store(p: *mut $ty, v: $ty, scope: Scope, order: Ordering) {
            // `st` has only .relaxed and .release.
            let order = relaxed_or(Ordering::Release, scope, order);
            // SAFETY: upheld by the caller.
            unsafe {
                by_scope_and_order!(scope, order, |sem, sc| asm!(
                    concat!("st", sem!(), sc!(), $bits, " [{p}], {v};"),
                    p = in(reg64) p, v = in($reg) v, options(nostack),
                ))
            }
        }
    )*};
}

atom_load_store! {
    atom_load_u32, atom_store_u32: u32, reg32, ".b32";
    atom_load_u64, atom_store_u64: u64, reg64, ".b64";
}
