//! Host backend: the CPU emulator (`engine`: the launch and its workers; `block`: one
//! block's threads as coroutines, its barrier, warps and shared memory) and the
//! "special registers" of the emulated thread that runs on the current OS thread.
//! Code that runs outside a launch (a plain host test calling a kernel function) sees
//! thread 0 of a 1×1 launch, a warp of one lane, and barriers that do nothing.

use core::cell::Cell;

mod approx;
pub(crate) use approx::*;
mod block;
pub(crate) mod checks;
mod cluster;
pub(crate) use cluster::*;
mod convert;
pub(crate) use convert::*;
pub(crate) mod engine;
mod f16x2;
pub(crate) use f16x2::*;
mod fault;
mod grid;
pub(crate) use fault::uninterruptible;
pub(crate) use grid::*;
mod mma;
pub(crate) use mma::*;
mod rendezvous;
mod sm90_more;
pub(crate) use sm90_more::*;

/// Coordinates of one emulated GPU thread, as CUDA's `threadIdx`, `blockIdx`,
/// `blockDim` and `gridDim` (x, y, z).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadCoords {
    pub thread_idx: [u32; 3],
    pub block_idx: [u32; 3],
    pub block_dim: [u32; 3],
    pub grid_dim: [u32; 3],
}

impl ThreadCoords {
    /// Thread 0 of a launch with one block of one thread.
    pub const SINGLE: ThreadCoords = ThreadCoords {
        thread_idx: [0; 3],
        block_idx: [0; 3],
        block_dim: [1; 3],
        grid_dim: [1; 3],
    };
}

impl Default for ThreadCoords {
    fn default() -> Self {
        ThreadCoords::SINGLE
    }
}

std::thread_local! {
    static CURRENT: Cell<ThreadCoords> = const { Cell::new(ThreadCoords::SINGLE) };
}

/// Make `coords` the current thread's coordinates; returns the previous ones so a
/// caller can restore them.
pub fn set_thread_coords(coords: ThreadCoords) -> ThreadCoords {
    CURRENT.with(|c| c.replace(coords))
}

/// The current thread's coordinates.
pub fn thread_coords() -> ThreadCoords {
    CURRENT.with(Cell::get)
}

macro_rules! special_registers {
    ($($name:ident => $field:ident[$axis:literal],)*) => {$(
        #[inline]
        pub(crate) fn $name() -> u32 {
            thread_coords().$field[$axis]
        }
    )*};
}

special_registers! {
    thread_idx_x => thread_idx[0], thread_idx_y => thread_idx[1], thread_idx_z => thread_idx[2],
    block_idx_x => block_idx[0], block_idx_y => block_idx[1], block_idx_z => block_idx[2],
    block_dim_x => block_dim[0], block_dim_y => block_dim[1], block_dim_z => block_dim[2],
    grid_dim_x => grid_dim[0], grid_dim_y => grid_dim[1], grid_dim_z => grid_dim[2],
}

/// `sync_threads`: a real block barrier in the emulator; nothing outside it (a block
/// of one thread).
#[inline]
pub(crate) fn sync_threads() {
    block::barrier()
}

// Fences order memory between the threads of a launch.
#[inline]
pub(crate) fn threadfence_block() {
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
}

#[inline]
pub(crate) fn threadfence() {
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
}

#[inline]
pub(crate) fn threadfence_system() {
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
}

// ---- warps: 32 lanes in the emulator, 1 outside ------------------------------------
//
// Every warp operation is collective over the running lanes of its mask (see
// `rendezvous`): each lane deposits its value and waits until they all have. A warp
// has 32 lanes, as on a GPU, even a block's partial last warp: the lanes it lacks are
// treated as lanes that returned (not waited for), and a shuffle that reads one traps
// (a GPU gives an undefined value); see `block::read_lane`.

/// Lanes of a warp: 32 in a launch, as on a GPU (a partial last warp too: the lanes it
/// lacks are read by the same shuffles a GPU runs, and trap); 1 outside.
#[inline]
pub(crate) fn warp_lanes() -> u32 {
    if block::in_block() { 32 } else { 1 }
}

#[inline]
pub(crate) fn lane_id() -> u32 {
    block::lane_and_width().0
}

/// The live lanes of the warp (on a GPU, those converged here: the emulator does not
/// track divergence inside a warp).
#[inline]
pub(crate) fn active_mask() -> u32 {
    let (_, width) = block::lane_and_width();
    if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    }
}

/// A shuffle of `v` over `mask`, reading the lane `src` gives for this lane: past the
/// warp's ends (`None`, or 32 and up), the caller's own value, as PTX defines it.
fn shuffle(mask: u32, v: u32, src: impl FnOnce(u32) -> Option<u32>) -> u32 {
    let x = block::exchange(u64::from(v), mask);
    match src(lane_id()) {
        Some(s) if s < 32 => block::read_lane(&x, mask, s).map_or(v, |w| w as u32),
        _ => v,
    }
}

#[inline]
pub(crate) fn shfl_idx(mask: u32, v: u32, lane: u32) -> u32 {
    shuffle(mask, v, |_| Some(lane % 32))
}

#[inline]
pub(crate) fn shfl_xor(mask: u32, v: u32, lane_mask: u32) -> u32 {
    shuffle(mask, v, |me| Some(me ^ lane_mask))
}

#[inline]
pub(crate) fn shfl_down(mask: u32, v: u32, delta: u32) -> u32 {
    shuffle(mask, v, |me| me.checked_add(delta))
}

#[inline]
pub(crate) fn shfl_up(mask: u32, v: u32, delta: u32) -> u32 {
    shuffle(mask, v, |me| me.checked_sub(delta))
}

#[inline]
pub(crate) fn ballot(mask: u32, pred: bool) -> u32 {
    let x = block::exchange(u64::from(pred), mask);
    (0..32)
        .filter(|&l| x.arrived & (1 << l) != 0 && x.values[l] != 0)
        .fold(0u32, |b, l| b | 1 << l)
}

/// `__syncwarp`: the lanes of `mask` meet.
#[inline]
pub(crate) fn warp_sync(mask: u32) {
    let _ = block::exchange(0, mask);
}

#[inline]
pub(crate) fn match_any_u32(mask: u32, v: u32) -> u32 {
    match_any_u64(mask, u64::from(v))
}

#[inline]
pub(crate) fn match_any_u64(mask: u32, v: u64) -> u32 {
    let x = block::exchange(v, mask);
    (0..32)
        .filter(|&l| x.arrived & (1 << l) != 0 && x.values[l] == v)
        .fold(0u32, |b, l| b | 1 << l)
}

macro_rules! redux {
    ($($name:ident: $t:ty, $op:expr;)*) => {$(
        /// Over the lanes of `mask` that met (those that still run).
        #[inline]
        pub(crate) fn $name(mask: u32, v: $t) -> $t {
            let x = block::exchange(v as u32 as u64, mask);
            let op: fn($t, $t) -> $t = $op;
            (0..32)
                .filter(|&l| x.arrived & (1 << l) != 0)
                .map(|l| x.values[l] as u32 as $t)
                .reduce(op)
                .unwrap_or(v)
        }
    )*};
}

redux! {
    redux_add_u32: u32, u32::wrapping_add; redux_min_u32: u32, u32::min;
    redux_max_u32: u32, u32::max; redux_min_i32: i32, i32::min;
    redux_max_i32: i32, i32::max; redux_and_u32: u32, |a, b| a & b;
    redux_or_u32: u32, |a, b| a | b; redux_xor_u32: u32, |a, b| a ^ b;
}

/// The emulator's shared memory is host allocations, with no `.shared` window whose
/// offsets a kernel could see: refused by name.
pub(crate) fn cvta_to_shared(_p: *const u8) -> u64 {
    std::panic!(
        "cvta.to.shared is not emulated: the CPU emulator keeps shared memory in host \
         allocations and has no .shared window to give an offset into. Run this kernel on \
         a GPU, or keep the generic pointer"
    )
}

// ---- shared statics: one copy per block in the emulator --------------------------

/// The running block's copy of a `SharedArray` static (outside the emulator, this OS
/// thread's own copy).
#[inline]
pub(crate) fn shared_static(addr: *mut u8, bytes: usize, align: usize) -> *mut u8 {
    block::shared_static(addr, bytes, align)
}

// ---- dynamic shared memory -------------------------------------------------------

/// Bytes of the fallback dynamic shared memory: the most a CUDA block can have
/// (227 KiB on sm_90), so any launch that fits a GPU fits here.
pub(crate) const DYNAMIC_SHARED_BYTES: usize = oxide_abi::limits::MAX_DYNAMIC_SHARED_BYTES as usize;

std::thread_local! {
    // u128 elements give the 16-byte alignment that the device symbol has.
    static DYNAMIC_SHARED: std::boxed::Box<[core::cell::UnsafeCell<u128>]> =
        (0..DYNAMIC_SHARED_BYTES / 16).map(|_| core::cell::UnsafeCell::new(0)).collect();
    static DYNAMIC_SHARED_OVERRIDE: Cell<*mut u8> = const { Cell::new(core::ptr::null_mut()) };
    static DYNAMIC_SHARED_LEN: Cell<usize> = const { Cell::new(DYNAMIC_SHARED_BYTES) };
}

/// Make `bytes` the dynamic shared memory size the current OS thread's emulated thread
/// sees (the launch's `shared_bytes`); returns the previous one.
pub(crate) fn set_dynamic_shared_len(bytes: usize) -> usize {
    DYNAMIC_SHARED_LEN.with(|c| c.replace(bytes))
}

/// Bytes of dynamic shared memory of the running launch (the fallback's size outside
/// one), as `%dynamic_smem_size` on a GPU.
#[inline]
pub(crate) fn dynamic_shared_bytes() -> usize {
    DYNAMIC_SHARED_LEN.with(Cell::get)
}

/// What a GPU reports as `%total_smem_size`, as far as the emulator knows it: the
/// dynamic bytes. Its `SharedArray` statics live apart, one host allocation each, so
/// they add nothing here (see the porting guide).
#[inline]
pub(crate) fn total_shared_bytes() -> usize {
    dynamic_shared_bytes()
}

/// Make `base` the dynamic shared memory of the current OS thread's emulated thread
/// (the emulator points every thread of a block at that block's buffer); null goes
/// back to the per-OS-thread fallback. Returns the previous setting.
///
/// # Safety
/// A non-null `base` is 16-byte aligned and valid for the launch's shared-memory bytes
/// for as long as it stays set.
pub unsafe fn set_dynamic_shared(base: *mut u8) -> *mut u8 {
    DYNAMIC_SHARED_OVERRIDE.with(|c| c.replace(base))
}

#[inline]
pub(crate) fn dynamic_shared_base() -> *mut u8 {
    let set = DYNAMIC_SHARED_OVERRIDE.with(Cell::get);
    if !set.is_null() {
        return set;
    }
    // The fallback lives as long as the OS thread, which outlives any kernel call on it.
    DYNAMIC_SHARED.with(|b| b.as_ptr() as *mut u8)
}

/// The emulator's region is 16-byte aligned whatever `ALIGN` a kernel asks: its end
/// sits against a guard page, which catches overruns to the byte, and every view of
/// the region must start at the same address.
#[inline]
pub(crate) fn dynamic_shared_base_aligned(_align: usize) -> *mut u8 {
    dynamic_shared_base()
}

/// `trap`: on the host a panic, reported where the kernel called it.
#[track_caller]
pub(crate) fn trap() -> ! {
    std::panic!("GPU trap: the kernel called trap()")
}

// ---- scoped atomics: the host's own atomics, at the strongest scope ------------------

use core::sync::atomic::Ordering;

use super::Scope;

macro_rules! host_rmw {
    ($($name:ident: $ty:ty, $atomic:ident, $method:ident;)*) => {$(
        /// # Safety
        /// `p` is valid, aligned, and every access to it is atomic.
        #[inline]
        pub(crate) unsafe fn $name(p: *mut $ty, v: $ty, _scope: Scope, order: Ordering) -> $ty {
            // SAFETY: upheld by the caller.
            unsafe { core::sync::atomic::$atomic::from_ptr(p.cast()).$method(v as _, order) as $ty }
        }
    )*};
}

host_rmw! {
    atom_add_u32: u32, AtomicU32, fetch_add;
    atom_add_u64: u64, AtomicU64, fetch_add;
    atom_min_u32: u32, AtomicU32, fetch_min;
    atom_max_u32: u32, AtomicU32, fetch_max;
    atom_min_i32: i32, AtomicI32, fetch_min;
    atom_max_i32: i32, AtomicI32, fetch_max;
    atom_min_u64: u64, AtomicU64, fetch_min;
    atom_max_u64: u64, AtomicU64, fetch_max;
    atom_min_i64: i64, AtomicI64, fetch_min;
    atom_max_i64: i64, AtomicI64, fetch_max;
    atom_and_u32: u32, AtomicU32, fetch_and;
    atom_or_u32: u32, AtomicU32, fetch_or;
    atom_xor_u32: u32, AtomicU32, fetch_xor;
    atom_and_u64: u64, AtomicU64, fetch_and;
    atom_or_u64: u64, AtomicU64, fetch_or;
    atom_xor_u64: u64, AtomicU64, fetch_xor;
    atom_exch_u32: u32, AtomicU32, swap;
    atom_exch_u64: u64, AtomicU64, swap;
}

macro_rules! host_float_add {
    ($($name:ident: $ty:ty, $bits:ty, $atomic:ident;)*) => {$(
        /// # Safety
        /// As the integer operations.
        #[inline]
        pub(crate) unsafe fn $name(p: *mut $ty, v: $ty, _scope: Scope, order: Ordering) -> $ty {
            // SAFETY: upheld by the caller.
            let a = unsafe { core::sync::atomic::$atomic::from_ptr(p.cast::<$bits>()) };
            let old = a
                .fetch_update(order, Ordering::Relaxed, |bits| Some((<$ty>::from_bits(bits) + v).to_bits()))
                .unwrap_or_else(|bits| bits);
            <$ty>::from_bits(old)
        }
    )*};
}

host_float_add! {
    atom_add_f32: f32, u32, AtomicU32;
    atom_add_f64: f64, u64, AtomicU64;
}

macro_rules! host_cas_load_store {
    ($($cas:ident, $load:ident, $store:ident: $ty:ty, $atomic:ident;)*) => {$(
        /// # Safety
        /// As the read-modify-write operations.
        #[inline]
        pub(crate) unsafe fn $cas(p: *mut $ty, current: $ty, new: $ty, _scope: Scope, order: Ordering) -> $ty {
            let failure = match order {
                Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
                Ordering::AcqRel => Ordering::Acquire,
                other => other,
            };
            // SAFETY: upheld by the caller.
            let a = unsafe { core::sync::atomic::$atomic::from_ptr(p) };
            a.compare_exchange(current, new, order, failure).unwrap_or_else(|v| v)
        }

        /// # Safety
        /// As the read-modify-write operations.
        #[inline]
        pub(crate) unsafe fn $load(p: *const $ty, _scope: Scope, order: Ordering) -> $ty {
            // SAFETY: upheld by the caller.
            unsafe { core::sync::atomic::$atomic::from_ptr(p.cast_mut()) }.load(order)
        }

        /// # Safety
        /// As the read-modify-write operations.
        #[inline]
        pub(crate) unsafe fn $store(p: *mut $ty, v: $ty, _scope: Scope, order: Ordering) {
            // SAFETY: upheld by the caller.
            unsafe { core::sync::atomic::$atomic::from_ptr(p) }.store(v, order)
        }
    )*};
}

host_cas_load_store! {
    atom_cas_u32, atom_load_u32, atom_store_u32: u32, AtomicU32;
    atom_cas_u64, atom_load_u64, atom_store_u64: u64, AtomicU64;
}
