//! pyoxide's bundled kernels. A kernel crate like any user's: `no_std`, no nightly
//! features, built for the GPU by `cargo oxide build` and for the host as is.
#![no_std]

use oxide_device::math;
use oxide_device::prelude::*;

/// `c[i] = a[i] + b[i]`.
#[kernel]
pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(c_i) = c.get_mut(idx) {
        *c_i = a[i] + b[i];
    }
}

/// `out[i] = a * x[i] + y[i]`.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out_i) = out.get_mut(idx) {
        *out_i = a * x[i] + y[i];
    }
}

/// `out[i] = factor * x[i]`, for `f32` (`scale_f32`) and `f64` (`scale_f64`).
#[kernel(f32, f64)]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(factor: T, x: &[T], mut out: DisjointSlice<T>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out_i) = out.get_mut(idx) {
        *out_i = factor * x[i];
    }
}

/// `out[0] += Σ x` (zero `out[0]` first). Each thread sums a grid-stride slice of `x`;
/// a warp sums its lanes with shuffles, lane 0 of each warp leaves its partial in
/// shared memory, warp 0 sums the partials, and thread 0 adds the block's total with
/// one atomic. Block size: a multiple of 32, at most 1024.
#[kernel]
#[launch_bounds(1024)]
pub fn reduce_sum_f32(x: &[f32], out: AtomicSlice<f32>) {
    static PARTIALS: SharedArray<f32, 32> = SharedArray::UNINIT;
    let start = thread::index_1d().get();
    let sum: f32 = x.iter().skip(start).step_by(thread::grid_stride()).sum();
    let warp_sum = warp::reduce_sum_f32(sum);
    let (lane, warp_id) = (warp::lane_id() as usize, warp::warp_id() as usize);
    if lane == 0 {
        // SAFETY: one writer per slot; read only after the barrier.
        unsafe { PARTIALS.write(warp_id, warp_sum) };
    }
    thread::sync_threads();
    if warp_id == 0 {
        let warps = thread::block_size().div_ceil(warp::WARP_SIZE) as usize;
        // SAFETY: slots below `warps` were written before the barrier.
        let partial = if lane < warps {
            unsafe { PARTIALS.read(lane) }
        } else {
            0.0
        };
        let block_sum = warp::reduce_sum_f32(partial);
        if let (0, Some(total)) = (lane, out.first()) {
            total.fetch_add(block_sum, Ordering::Relaxed);
        }
    }
}

/// `bins[v] += 1` for every `v` in `x` below `bins.len()` (zero `bins` first); values
/// past the last bin are ignored. Grid-stride, device-scope atomics.
#[kernel]
pub fn histogram(x: &[u32], bins: AtomicSlice<u32>) {
    let start = thread::index_1d().get();
    for &v in x.iter().skip(start).step_by(thread::grid_stride()) {
        if let Some(bin) = bins.get(v as usize) {
            bin.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Side of the square tiles of [`matmul_tiled`]; its blocks are `TILE × TILE` threads.
const TILE: usize = 16;

/// `c = a · b` for row-major `a` (m×k), `b` (k×n), `c` (m×n), in 16×16 tiles staged
/// through shared memory. Launch with block (16, 16) and grid (⌈n/16⌉, ⌈m/16⌉).
#[kernel]
#[launch_bounds(256)]
pub fn matmul_tiled(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, m: u32, n: u32, k: u32) {
    static A_TILE: SharedArray<f32, { TILE * TILE }> = SharedArray::UNINIT;
    static B_TILE: SharedArray<f32, { TILE * TILE }> = SharedArray::UNINIT;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (tx, ty) = (
        thread::threadIdx_x() as usize,
        thread::threadIdx_y() as usize,
    );
    let (row, col) = (thread::index_2d_row(), thread::index_2d_col());
    let mut acc = 0.0f32;
    for t in 0..k.div_ceil(TILE) {
        let (a_col, b_row) = (t * TILE + tx, t * TILE + ty);
        let a_val = if row < m && a_col < k {
            a[row * k + a_col]
        } else {
            0.0
        };
        let b_val = if b_row < k && col < n {
            b[b_row * n + col]
        } else {
            0.0
        };
        // SAFETY: each thread writes its own slot; the barriers separate the writes
        // from the reads of the same tile and from the next tile's writes.
        unsafe {
            A_TILE.write(ty * TILE + tx, a_val);
            B_TILE.write(ty * TILE + tx, b_val);
        }
        thread::sync_threads();
        for i in 0..TILE {
            // SAFETY: written by this block before the barrier above.
            acc += unsafe { A_TILE.read(ty * TILE + i) * B_TILE.read(i * TILE + tx) };
        }
        thread::sync_threads();
    }
    // SAFETY: `n` is a kernel argument, the same in every thread.
    let idx = unsafe { thread::index_2d_runtime(n) };
    if let Some(c_ij) = c.get_mut(idx) {
        *c_ij = acc;
    }
}

/// Row-wise softmax of a row-major matrix: launch one block per row (the grid size is
/// the number of rows; `x.len()` must be a multiple of it), 32·w threads a block.
/// Subtracting the row's maximum keeps `exp` from overflowing.
#[kernel]
#[launch_bounds(1024)]
pub fn softmax_rows(x: &[f32], mut out: DisjointSlice<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let cols = row.cols();
    let start = cols * thread::blockIdx_x() as usize;
    let first = thread::block_thread_index() as usize;
    let step = thread::block_size() as usize;
    let mine = || x[start..start + cols].iter().skip(first).step_by(step);
    let max = warp::block_reduce_max_f32(mine().fold(f32::NEG_INFINITY, |m, &v| m.max(v)));
    let sum = warp::block_reduce_sum_f32(mine().map(|&v| (v - max).exp()).sum());
    for (col, y) in row.iter_mut() {
        *y = (x[start + col] - max).exp() / sum;
    }
}

/// What `activate` applies after the polynomial: an enum matched per element.
#[derive(Clone, Copy)]
enum Activation {
    Identity,
    Relu,
    Tanh,
    /// The exact GELU, `v/2 · (1 + erf(v/√2))`.
    Gelu,
}

impl Activation {
    fn from_code(code: u32) -> Option<Activation> {
        match code {
            0 => Some(Activation::Identity),
            1 => Some(Activation::Relu),
            2 => Some(Activation::Tanh),
            3 => Some(Activation::Gelu),
            _ => None,
        }
    }
}

/// A generic trait with a blanket impl: anything that maps an `f32` applies.
trait Apply {
    fn apply(&self, v: f32) -> f32;
}

impl<F: Fn(f32) -> f32> Apply for F {
    fn apply(&self, v: f32) -> f32 {
        self(v)
    }
}

impl Apply for Activation {
    fn apply(&self, v: f32) -> f32 {
        match self {
            Activation::Identity => v,
            Activation::Relu => v.max(0.0),
            Activation::Tanh => v.tanh(),
            Activation::Gelu => 0.5 * v * (1.0 + math::erf(v * core::f32::consts::FRAC_1_SQRT_2)),
        }
    }
}

fn compose<A: Apply, B: Apply>(first: A, then: B) -> impl Fn(f32) -> f32 {
    move |v| then.apply(first.apply(v))
}

/// `out[i] = act(p(x[i]))`, `p(v) = Σ coeffs[j]·v^j` by Horner's rule over an iterator,
/// `act` chosen by `activation` (0 identity, 1 relu, 2 tanh, 3 gelu; any other code
/// writes NaN). Ordinary Rust on the GPU: iterators, closures, a trait with a blanket
/// impl, an enum and `match`, `Option` combinators.
#[kernel]
pub fn activate(x: &[f32], coeffs: &[f32], activation: u32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    let poly = |v: f32| {
        coeffs
            .iter()
            .rev()
            .fold(0.0f32, |acc, &c| acc.mul_add(v, c))
    };
    let value = Activation::from_code(activation)
        .map(|act| compose(poly, act).apply(x[i.min(x.len().saturating_sub(1))]))
        .unwrap_or(f32::NAN);
    if let Some(o) = out.get_mut(idx) {
        *o = value;
    }
}

/// Inclusive prefix sum (wrapping) of each block's `blockDim.x` elements of `x`: a
/// segmented scan, the building block of a full scan. Warps scan with `shfl.sync.up`;
/// the warps' totals go through dynamic shared memory (launch with
/// `4 * blockDim.x / 32` bytes of it), where warp 0 scans them in turn. Block size: a
/// multiple of 32 (checked: a wrong launch traps with a message).
#[kernel]
#[launch_bounds(1024)]
pub fn scan_blocks_u32(x: &[u32], mut out: DisjointSlice<u32>) {
    gpu_assert!(thread::blockDim_x().is_multiple_of(warp::WARP_SIZE));
    let totals = DynamicSharedArray::<u32>::get();
    let idx = thread::index_1d();
    let value = x.get(idx.get()).copied().unwrap_or(0);
    let in_warp = warp::inclusive_scan_sum_u32(value);
    let (lane, warp_id) = (warp::lane_id(), warp::warp_id() as usize);
    if lane == warp::WARP_SIZE - 1 {
        // SAFETY: one writer per warp slot, inside the launch's dynamic shared memory
        // (4 bytes per warp); read after the barrier.
        unsafe { totals.add(warp_id).write(in_warp) };
    }
    thread::sync_threads();
    let warps = (thread::blockDim_x() / warp::WARP_SIZE) as usize;
    if warp_id == 0 {
        // SAFETY: slots below `warps` were written before the barrier.
        let total = if (lane as usize) < warps {
            unsafe { totals.add(lane as usize).read() }
        } else {
            0
        };
        let scanned = warp::inclusive_scan_sum_u32(total);
        if (lane as usize) < warps {
            // SAFETY: each lane rewrites its own slot; other warps wait at the barrier.
            unsafe { totals.add(lane as usize).write(scanned) };
        }
    }
    thread::sync_threads();
    // SAFETY: written by warp 0 before the barrier.
    let before = if warp_id > 0 {
        unsafe { totals.add(warp_id - 1).read() }
    } else {
        0
    };
    if let Some(o) = out.get_mut(idx) {
        *o = in_warp.wrapping_add(before);
    }
}

/// Bins that [`histogram_shared`] can privatise in shared memory.
const SHARED_BINS: usize = 1024;

/// [`histogram`] with a private histogram per block in shared memory: threads count
/// with block-scope atomics (cheap, contended only within the block), then each block
/// adds its nonzero counts to `bins` with device-scope atomics. For up to 1024 bins;
/// more fall back to counting in global memory directly.
#[kernel]
#[launch_bounds(1024)]
pub fn histogram_shared(x: &[u32], bins: AtomicSlice<u32>) {
    static LOCAL: SharedArray<u32, SHARED_BINS> = SharedArray::UNINIT;
    let start = thread::index_1d().get();
    let values = || x.iter().skip(start).step_by(thread::grid_stride());
    if bins.len() > SHARED_BINS {
        for &v in values() {
            if let Some(bin) = bins.get(v as usize) {
                bin.fetch_add(1, Ordering::Relaxed);
            }
        }
        return;
    }
    let (t, step) = (
        thread::block_thread_index() as usize,
        thread::block_size() as usize,
    );
    for i in (t..bins.len()).step_by(step) {
        // SAFETY: each thread zeroes its own slots; the barrier orders them before use.
        unsafe { LOCAL.write(i, 0) };
    }
    thread::sync_threads();
    // SAFETY: the slots in use were zeroed before the barrier; until the next barrier
    // every access is atomic.
    let local = unsafe { &LOCAL.as_atomics()[..bins.len()] };
    for &v in values() {
        if let Some(bin) = local.get(v as usize) {
            bin.fetch_add(1, Ordering::Relaxed);
        }
    }
    thread::sync_threads();
    for i in (t..bins.len()).step_by(step) {
        let count = local[i].load(Ordering::Relaxed);
        if count != 0 {
            bins[i].fetch_add(count, Ordering::Relaxed);
        }
    }
}

/// One partial sum of `x` per block into `partial` (one element per block; its length
/// is the grid size), with no atomics: a grid-stride sum per thread, a block reduction,
/// and the block's first thread writing through its block witness. Sum `partial` on
/// the host or with a second launch. Block size: a multiple of 32.
#[kernel]
#[launch_bounds(1024)]
pub fn reduce_blocks_f32(x: &[f32], mut partial: DisjointSlice<f32>) {
    let start = thread::index_1d().get();
    let sum: f32 = x.iter().skip(start).step_by(thread::grid_stride()).sum();
    let block_sum = warp::block_reduce_sum_f32(sum);
    if let Some(p) = thread::block_leader_index().and_then(|b| partial.get_mut(b)) {
        *p = block_sum;
    }
}
