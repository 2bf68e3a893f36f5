//! Row kernels: each block owns whole rows of a row-major `rows × cols` matrix (given
//! as its flat slice and `cols`), softmax and layer norm.
//!
//! How they reach the memory system's speed:
//! - A row of up to `64 · blockDim` elements (`16 · blockDim` when unaligned) is read
//!   from DRAM once: each thread keeps its part in registers between the statistics
//!   and the write, loaded with unconditional (clamped) loads that issue back to back.
//!   Longer rows take a streaming path (softmax: one pass of running max and rescaled
//!   sum, then the write pass; layer norm: mean, then squared deviations, then the
//!   write pass; the later passes mostly hit L2).
//! - A row's phases (load, block reductions, write) leave DRAM idle in the middle, so
//!   what keeps it busy is several rows in flight on each SM. A 16384-column row takes
//!   256 threads of 64 cached elements each (a plain call's block), 119 (softmax) or
//!   128 (layer norm) registers a thread: two rows an SM, each read once. (512 threads
//!   of 32 elements in 64 registers would also fit two an SM, but spilled; 512 threads
//!   at 81 registers fit one. On an H200 at 4096×16384: 256 × 64 at 0.81 of copy
//!   against 0.74 and 0.66; see docs/performance.md.)
//! - Each path (register cache of 8 or 16 chunks or streamed, vector or scalar) is a
//!   function of its own, chosen once per launch, so a short row does not pay for the
//!   long rows' registers; columns are 32-bit; loop-invariant values are recomputed per
//!   row (see [`access::fresh`]); the per-thread sums and maxima are trees, not chains.
//!   Only layer norm's 16-chunk path spills (28 bytes, at 128 registers).
//! - When the row, the output and (layer norm) weight and bias are 16-byte aligned,
//!   every access is a 128-bit vector; otherwise (a view such as `x[1:]`, or `cols` not
//!   a multiple of 4) scalar and still coalesced. Inputs load through the read-only
//!   cache (`ld.global.nc`).
//! - A block reduction costs one barrier (see [`access::block_allreduce`]).
//! - Blocks take rows `blockIdx, blockIdx + gridDim, …`, so any grid is correct; one
//!   block per row is the natural launch.
//!
//! Sizes are checked once: `x`, `out` (and `weight`, `bias`) must agree with `cols`, or
//! the kernel traps with a message (`gpu_assert!`) before touching memory.

// Lane indices `v` also name columns (`Share::col(j, v)`) and unrolled register slots.
#![allow(clippy::needless_range_loop)]

mod access;
mod backward;

use access::*;
pub use backward::*;
use oxide_device::ldst::{self, ReadOnlyLoad};
use oxide_device::prelude::*;

/// Row-wise softmax of the row-major matrix `x` (`x.len() / cols` rows of `cols`):
/// `out[r, c] = exp(x[r, c] - max_r) / Σ_c exp(x[r, c] - max_r)`.
///
/// Launch: a plain call `softmax_rows(x, out)` takes one block per row and `cols / 32`
/// threads rounded up to a multiple of 32, clamped to 128..=256 (the `block_per_row`
/// policy; what `scripts/bench_rows` calls "policy"). 256, not 512: at 16384 columns,
/// 256 threads hold the row in registers (64 elements each) two blocks an SM, where 512
/// threads fit one (on an H200, 1.09× against 0.89× torch.softmax). An explicit block
/// must be 32..=512 threads, a multiple of 32; any explicit grid covers every row (the
/// blocks walk them). Rows up to `64 · blockDim` columns are read once; longer ones twice. Traps when
/// `x.len()` is not `rows · cols` or `out.len()` differs from `x.len()`.
///
/// Tuned: the block, and `blocks_per_sm` (0, the hand pick: one block per row; K: at
/// most K blocks a multiprocessor, each walking rows). Short rows want the second: on an
/// H200 at 65536 rows of 128, 145 µs with a 64-thread block per row, 108 µs with 8 of
/// them an SM walking the rows (a copy of the bytes takes about 15 µs: a block's row
/// phases, not the launches alone, leave the memory idle).
#[kernel]
#[launch_bounds(512)]
#[launch(block_per_row(out, block = 256))]
#[tune(block = [64, 128, 256, 512], blocks_per_sm = [0, 8, 16, 32])]
#[shapes(x[rows, cols], out[rows, cols])]
pub fn softmax_rows(x: Array2<f32>, out: DisjointArray2<f32>) {
    // The body works on the flat rows (the launcher checked the shapes).
    let (x, mut out, cols) = (x.as_slice(), out.into_flat(), x.cols() as u32);
    static MAXES: SharedArray<f32, 32> = SharedArray::UNINIT;
    static SUMS: SharedArray<f32, 32> = SharedArray::UNINIT;
    let cols = cols as usize;
    let n = x.len();
    gpu_assert!(
        out.len() == n && (cols > 0 && n.is_multiple_of(cols) || n == 0),
        "softmax_rows: x has {} elements, out {}, cols = {}: need x.len() == out.len(), a multiple of cols\n",
        n,
        out.len(),
        cols
    );
    check_block();
    let rows = n.checked_div(cols).unwrap_or(0);
    let (src, dst) = (x.as_ptr(), out.as_mut_ptr());
    let s = Share::of_block(cols as u32);
    let vector = vector_ok(cols, &[src as usize, dst as usize]);
    let chunks = cache_chunks(cols, vector, s.threads);
    let rows = Rows {
        src,
        dst,
        rows,
        cols,
        s,
    };
    // SAFETY (each arm): the pointers cover `rows · cols` elements of `x` and of `out`,
    // and `out` is written nowhere else.
    unsafe { by_path!(chunks, vector, softmax_path(rows, &MAXES, &SUMS)) }
}

/// One of softmax's paths (`N` cached chunks, or 0: streamed), a function of its own
/// (not inlined): every row of a launch takes the same path, and compiled apart, each
/// path's registers are allocated on their own (the paths inlined into the kernel
/// spilled).
///
/// # Safety
/// As [`Rows::each`]; only this block works on its rows (block_rows), and `dst` is
/// written nowhere else during the launch.
#[inline(never)]
unsafe fn softmax_path<const N: usize, const VECTOR: bool>(
    rows: Rows,
    maxes: &SharedArray<f32, 32>,
    sums: &SharedArray<f32, 32>,
) {
    let s = rows.s;
    // SAFETY: upheld by the caller.
    unsafe {
        rows.each(|x, y| {
            // Per row, so that the column offsets are recomputed (a few multiply-adds)
            // rather than held in registers for the whole loop.
            let s = fresh(s);
            if N > 0 {
                softmax_cached::<N, VECTOR>(x, y, s, maxes, sums)
            } else {
                softmax_streamed::<VECTOR>(x, y, s, maxes, sums)
            }
        })
    }
}

/// One row read once into registers. # Safety: as `load_row` and `store_row`.
#[inline(always)]
unsafe fn softmax_cached<const N: usize, const VECTOR: bool>(
    src: *const f32,
    dst: *mut f32,
    s: Share,
    maxes: &SharedArray<f32, 32>,
    sums: &SharedArray<f32, 32>,
) {
    // Columns past the row's end hold copies of its last element: they do not change
    // the max, and are left out of the sum.
    // SAFETY: upheld by the caller.
    let n = N;
    let mut c = unsafe { load_row::<VECTOR>(src, s, n) };
    // Trees, not chains: the reductions sit between the row's loads and its stores.
    let local_max = tree(
        c.map(|v| lanes(v, f32::max)),
        n,
        f32::NEG_INFINITY,
        f32::max,
    );
    let max = block_allreduce(local_max, s, maxes, f32::NEG_INFINITY, f32::max);
    each_chunk!(j => {
        if j < n {
            for v in 0..VEC {
                c[j][v] = exp(c[j][v] - max);
            }
        }
    });
    let local_sum = masked_sum::<VECTOR>(&c, s, n, |e| e);
    let inv = 1.0 / block_allreduce(local_sum, s, sums, 0.0, |a, b| a + b);
    // SAFETY: upheld by the caller.
    unsafe { store_row::<VECTOR>(dst, fresh(s), n, &c, |e, _| e.map(|e| e * inv)) };
}

/// A row too long for the registers: one pass of running max and rescaled sum, then
/// a second read to write. # Safety: as `load_row` and `store_row`.
#[inline(always)]
unsafe fn softmax_streamed<const VECTOR: bool>(
    src: *const f32,
    dst: *mut f32,
    s: Share,
    maxes: &SharedArray<f32, 32>,
    sums: &SharedArray<f32, 32>,
) {
    let walk = Walk::<VECTOR> { src, s };
    let width = Walk::<VECTOR>::WIDTH;
    let (mut m, mut sum) = (f32::NEG_INFINITY, 0.0f32);
    for base in walk.groups() {
        // SAFETY: upheld by the caller. Absent chunks and lanes hold -inf: no effect
        // on the max, exp(-inf) = 0 in the sum.
        let group = unsafe { walk.load(base, f32::NEG_INFINITY) };
        let group = group.map(|(_, here, v)| if here { v } else { [f32::NEG_INFINITY; VEC] });
        let new_m = group.iter().flatten().fold(m, |a, &b| a.max(b));
        // Rescale the sum to the new maximum (m == new_m also covers both -inf).
        let scale = if m == new_m { 1.0 } else { exp(m - new_m) };
        let mut add = 0.0;
        for v in &group {
            for &x in &v[..width] {
                add += exp(x - new_m);
            }
        }
        sum = sum * scale + add;
        m = new_m;
    }
    let max = block_allreduce(m, s, maxes, f32::NEG_INFINITY, f32::max);
    let mine = if m == f32::NEG_INFINITY {
        0.0
    } else {
        sum * exp(m - max)
    };
    let inv = 1.0 / block_allreduce(mine, s, sums, 0.0, |a, b| a + b);
    for base in walk.groups() {
        // SAFETY: upheld by the caller.
        for (col, here, v) in unsafe { walk.load(base, 0.0) } {
            if here {
                let e = v.map(|x| exp(x - max) * inv);
                // SAFETY: this thread's columns of the row, which only this block writes.
                unsafe {
                    if VECTOR {
                        ldst::store_f32x4(dst.add(col), e);
                    } else {
                        dst.add(col).write(e[0]);
                    }
                }
            }
        }
    }
}

/// Layer norm of each row of the row-major matrix `x` (`x.len() / cols` rows of
/// `cols`): `out = (x - mean) / sqrt(var + eps) · weight + bias`, with the row's mean
/// and biased variance (as `torch.nn.functional.layer_norm`); `weight` and `bias` have
/// `cols` elements. The variance is a second pass over the centred values (in registers
/// when the row fits), so no cancellation.
///
/// Launch: as [`softmax_rows`] (at 16384 columns on an H200, 256 threads measured
/// 1.16× torch, 512 threads 1.07×). Traps when the sizes disagree with `cols`.
#[kernel]
#[launch_bounds(512)]
#[launch(block_per_row(out, block = 256))]
#[tune(block = [64, 128, 256, 512], blocks_per_sm = [0, 8, 16, 32])]
#[shapes(x[rows, cols], weight[cols], bias[cols], out[rows, cols])]
pub fn layernorm_rows(
    x: Array2<f32>,
    weight: Array1<f32>,
    bias: Array1<f32>,
    out: DisjointArray2<f32>,
    eps: f32,
) {
    // The body works on the flat rows (the launcher checked the shapes).
    let (x, weight, bias, mut out, cols) = (
        x.as_slice(),
        weight.as_slice(),
        bias.as_slice(),
        out.into_flat(),
        x.cols() as u32,
    );
    static SUMS: SharedArray<f32, 32> = SharedArray::UNINIT;
    static SQUARES: SharedArray<f32, 32> = SharedArray::UNINIT;
    let cols = cols as usize;
    let n = x.len();
    gpu_assert!(
        out.len() == n
            && weight.len() == cols
            && bias.len() == cols
            && (cols > 0 && n.is_multiple_of(cols) || n == 0),
        "layernorm_rows: x has {} elements, out {}, weight {}, bias {}, cols = {}: need x.len() == out.len(), a multiple of cols, weight.len() == bias.len() == cols\n",
        n,
        out.len(),
        weight.len(),
        bias.len(),
        cols
    );
    check_block();
    let rows = n.checked_div(cols).unwrap_or(0);
    let (src, dst) = (x.as_ptr(), out.as_mut_ptr());
    let s = Share::of_block(cols as u32);
    let affine = Affine {
        weight: weight.as_ptr(),
        bias: bias.as_ptr(),
    };
    let vector = vector_ok(
        cols,
        &[
            src as usize,
            dst as usize,
            affine.weight as usize,
            affine.bias as usize,
        ],
    );
    let chunks = cache_chunks(cols, vector, s.threads);
    let stats = (&SUMS, &SQUARES, cols as f32, eps);
    let rows = Rows {
        src,
        dst,
        rows,
        cols,
        s,
    };
    // SAFETY (each arm): as in softmax_rows; weight and bias have `cols` elements.
    unsafe { by_path!(chunks, vector, layernorm_path(rows, affine, stats)) }
}

/// One of layer norm's paths; see [`softmax_path`].
///
/// # Safety
/// As [`softmax_path`]; weight and bias have `cols` elements.
#[inline(never)]
unsafe fn layernorm_path<const N: usize, const VECTOR: bool>(
    rows: Rows,
    affine: Affine,
    stats: Stats,
) {
    let s = rows.s;
    // SAFETY: upheld by the caller.
    unsafe {
        rows.each(|x, y| {
            // The weight and bias addresses of this thread's columns are the same in
            // every row; made opaque, they are recomputed per row, rather than held in
            // up to 64 registers across the row loop (which spilled).
            let affine = Affine {
                weight: opaque_ptr(affine.weight),
                bias: opaque_ptr(affine.bias),
            };
            let s = fresh(s);
            if N > 0 {
                layernorm_cached::<N, VECTOR>(x, y, s, affine, stats)
            } else {
                layernorm_streamed::<VECTOR>(x, y, s, affine, stats)
            }
        })
    }
}

/// Layer norm's weight and bias, `cols` elements each.
#[derive(Clone, Copy)]
struct Affine {
    weight: *const f32,
    bias: *const f32,
}

impl Affine {
    /// `(x - mean) · rstd · weight + bias` for the `N` (1 or 4) columns from `col`.
    ///
    /// # Safety
    /// `col + N <= cols`; for `N == 4`, weight and bias are 16-byte aligned and `col`
    /// a multiple of 4.
    #[inline(always)]
    unsafe fn apply<const N: usize>(
        self,
        x: [f32; VEC],
        col: usize,
        mean: f32,
        rstd: f32,
    ) -> [f32; VEC] {
        // SAFETY: upheld by the caller.
        let (w, b) = unsafe {
            if N == VEC {
                (
                    ldst::load_nc_f32x4(self.weight.add(col)),
                    ldst::load_nc_f32x4(self.bias.add(col)),
                )
            } else {
                (
                    [f32::load_nc(self.weight.add(col)); VEC],
                    [f32::load_nc(self.bias.add(col)); VEC],
                )
            }
        };
        core::array::from_fn(|i| ((x[i] - mean) * rstd).mul_add(w[i], b[i]))
    }
}

/// Shared buffers for the two reductions, `cols` as f32, and eps.
type Stats<'a> = (&'a SharedArray<f32, 32>, &'a SharedArray<f32, 32>, f32, f32);

/// One row read once into registers. # Safety: as `load_row`, `store_row`, `Affine::apply`.
#[inline(always)]
unsafe fn layernorm_cached<const N: usize, const VECTOR: bool>(
    src: *const f32,
    dst: *mut f32,
    s: Share,
    affine: Affine,
    (sums, squares, cols_f, eps): Stats,
) {
    // SAFETY: upheld by the caller.
    let n = N;
    let c = unsafe { load_row::<VECTOR>(src, s, n) };
    // The columns anew (not the loads' offsets, kept live across the reduction).
    let local = masked_sum::<VECTOR>(&c, s, n, |x| x);
    let mean = block_allreduce(local, s, sums, 0.0, |a, b| a + b) / cols_f;
    let local_sq = masked_sum::<VECTOR>(&c, s, n, |x| (x - mean) * (x - mean));
    let var = block_allreduce(local_sq, s, squares, 0.0, |a, b| a + b) / cols_f;
    let rstd = (var + eps).rsqrt();
    // SAFETY: upheld by the caller; store_row passes columns of the row.
    unsafe {
        store_row::<VECTOR>(dst, fresh(s), n, &c, |x, col| {
            if VECTOR {
                affine.apply::<VEC>(x, col, mean, rstd)
            } else {
                affine.apply::<1>(x, col, mean, rstd)
            }
        })
    };
}

/// `Σ f(x)` over this thread's cached elements that are columns of the row, as trees
/// (see [`tree`]); the columns are computed anew (not the loads' offsets, which would
/// stay live across the block reductions).
#[inline(always)]
fn masked_sum<const VECTOR: bool>(
    c: &[[f32; VEC]; CHUNKS],
    s: Share,
    n: usize,
    f: impl Fn(f32) -> f32,
) -> f32 {
    let m = fresh(s);
    let mut per_chunk = [0.0f32; CHUNKS];
    each_chunk!(j => {
        let e = core::array::from_fn(|v| if m.has::<VECTOR>(j, v, n) { f(c[j][v]) } else { 0.0 });
        per_chunk[j] = lanes(e, |a, b| a + b);
    });
    tree(per_chunk, n, 0.0, |a, b| a + b)
}

/// A row too long for the registers: the mean, the squared deviations from it, then
/// the write (three reads; the later two mostly from L2). # Safety: as `layernorm_cached`.
#[inline(always)]
unsafe fn layernorm_streamed<const VECTOR: bool>(
    src: *const f32,
    dst: *mut f32,
    s: Share,
    affine: Affine,
    (sums, squares, cols_f, eps): Stats,
) {
    let walk = Walk::<VECTOR> { src, s };
    let width = Walk::<VECTOR>::WIDTH;
    let mut local = 0.0f32;
    for base in walk.groups() {
        // SAFETY: upheld by the caller.
        for (_, here, v) in unsafe { walk.load(base, 0.0) } {
            if here {
                local += v[..width].iter().sum::<f32>();
            }
        }
    }
    let mean = block_allreduce(local, s, sums, 0.0, |a, b| a + b) / cols_f;
    let mut local_sq = 0.0f32;
    for base in walk.groups() {
        // SAFETY: upheld by the caller.
        for (_, here, v) in unsafe { walk.load(base, 0.0) } {
            if here {
                local_sq += v[..width]
                    .iter()
                    .map(|&x| (x - mean) * (x - mean))
                    .sum::<f32>();
            }
        }
    }
    let var = block_allreduce(local_sq, s, squares, 0.0, |a, b| a + b) / cols_f;
    let rstd = (var + eps).rsqrt();
    for base in walk.groups() {
        // SAFETY: upheld by the caller.
        for (col, here, v) in unsafe { walk.load(base, 0.0) } {
            if here {
                // SAFETY: this thread's columns of the row, which only this block
                // writes; weight and bias have `cols` elements.
                unsafe {
                    if VECTOR {
                        let y = affine.apply::<VEC>(v, col, mean, rstd);
                        ldst::store_f32x4(dst.add(col), y);
                    } else {
                        let y = affine.apply::<1>(v, col, mean, rstd);
                        dst.add(col).write(y[0]);
                    }
                }
            }
        }
    }
}
