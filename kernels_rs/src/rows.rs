//! Row kernels: each block owns whole rows of a row-major `rows × cols` matrix (given
//! as its flat slice and `cols`), softmax and layer norm.
//!
//! How they reach the memory system's speed:
//! - A row of up to `32 · blockDim` elements (`16 · blockDim` when unaligned) is read
//!   from DRAM once: each thread keeps its part in registers between the statistics
//!   and the write, loaded with unconditional (clamped) loads that issue back to back.
//!   Longer rows take a streaming path (softmax: one pass of running max and rescaled
//!   sum, then the write pass; layer norm: mean, then squared deviations, then the
//!   write pass; the later passes mostly hit L2).
//! - Each of the four paths (cached or streamed, vector or scalar) is a function of its
//!   own, chosen once per launch, and loop-invariant addresses are recomputed per row
//!   (see [`fresh`]): no path spills, and the kernels take at most 84 (softmax) and 108
//!   (layer norm) registers a thread, from 128 in the first version.
//! - When the row, the output and (layer norm) weight and bias are 16-byte aligned,
//!   every access is a 128-bit vector; otherwise (a view such as `x[1:]`, or `cols` not
//!   a multiple of 4) scalar and still coalesced. Inputs load through the read-only
//!   cache (`ld.global.nc`).
//! - A block reduction costs one barrier (see [`block_allreduce`]).
//! - Blocks take rows `blockIdx, blockIdx + gridDim, …`, so any grid is correct; one
//!   block per row is the natural launch.
//!
//! Sizes are checked once: `x`, `out` (and `weight`, `bias`) must agree with `cols`, or
//! the kernel traps with a message (`gpu_assert!`) before touching memory.

// Lane indices `v` also name columns (`Share::col(j, v)`) and unrolled register slots.
#![allow(clippy::needless_range_loop)]

use oxide_device::ldst::{self, ReadOnlyLoad};
use oxide_device::prelude::*;

/// `f32` lanes in a 128-bit access.
const VEC: usize = 4;
/// The most 128-bit chunks a thread keeps in registers (the register cache's size).
const CHUNKS: usize = 8;
/// Chunks of the cache in use, with vector and with scalar accesses: rows up to
/// `4 · chunks · blockDim` are read from DRAM once. Scalar (unaligned) rows use half:
/// their 32-bit accesses need more registers for addresses, and the whole cache spilled.
const CACHE: Chunks = Chunks {
    vector: CHUNKS,
    scalar: CHUNKS / 2,
};

/// How many of the register cache's chunks are in use (see [`CACHE`]).
#[derive(Clone, Copy)]
struct Chunks {
    vector: usize,
    scalar: usize,
}

impl Chunks {
    #[inline(always)]
    const fn get(self, vector: bool) -> usize {
        if vector { self.vector } else { self.scalar }
    }

    /// Columns a block of `threads` keeps in registers.
    #[inline(always)]
    const fn cols(self, vector: bool, threads: usize) -> usize {
        threads * VEC * self.get(vector)
    }
}

/// The largest block the row kernels take (their `launch_bounds`): 16 384 cached
/// columns, and room for the cache in up to 128 registers a thread.
const MAX_BLOCK: u32 = 512;

/// `$body` once for each chunk index `$j` in `0..CHUNKS`, as straight-line code. LLVM
/// does not fully unroll loops this long by itself, and a rolled loop indexes the
/// register cache at run time, which moves it to local memory (DRAM).
macro_rules! each_chunk {
    ($j:ident => $body:block) => {
        each_chunk!(@ $j $body 0 1 2 3 4 5 6 7)
    };
    (@ $j:ident $body:block $($n:literal)*) => {
        $({
            let $j: usize = $n;
            $body
        })*
    };
}
const _: () = assert!(CHUNKS == 8, "each_chunk! lists the chunk indices");

/// A thread's share of a row: its registers' chunk `j`, lane `v`, and where that
/// element sits in the row.
#[derive(Clone, Copy)]
struct Share {
    t: usize,
    threads: usize,
    cols: usize,
}

impl Share {
    fn of_block(cols: usize) -> Share {
        Share {
            t: thread::block_thread_index() as usize,
            threads: thread::block_size() as usize,
            cols,
        }
    }

    /// Column of chunk `j`, lane `v`. Vector rows: chunk `j` is the 4 columns from
    /// `(j·threads + t)·4` (a warp reads 512 contiguous bytes per chunk). Scalar rows:
    /// `(j·4 + v)·threads + t` (a warp reads 128 contiguous bytes per element).
    #[inline(always)]
    fn col<const VECTOR: bool>(self, j: usize, v: usize) -> usize {
        if VECTOR {
            (j * self.threads + self.t) * VEC + v
        } else {
            (j * VEC + v) * self.threads + self.t
        }
    }

    /// This thread's chunk `j`, lane `v` holds a column of the row, with `n` chunks.
    #[inline(always)]
    fn has<const VECTOR: bool>(self, j: usize, v: usize, n: usize) -> bool {
        j < n && self.col::<VECTOR>(j, v) < self.cols
    }
}

/// This thread's `4 · n` cached elements of the row at `src` (chunks `0..n`; `n` is a
/// constant once inlined), `fill` where it has none.
///
/// The loads are unconditional, so they issue back to back: a column past the row's
/// end loads the row's last element(s) instead (an L1 hit) and is then replaced by
/// `fill`. (Guarded loads put each in a basic block of its own.)
///
/// # Safety
/// `src` points at `share.cols > 0` readable `f32` not written during the launch; with
/// `VECTOR`, `src` is 16-byte aligned and `cols` a multiple of 4.
#[inline(always)]
unsafe fn load_row<const VECTOR: bool>(
    src: *const f32,
    s: Share,
    n: usize,
    fill: f32,
) -> [[f32; VEC]; CHUNKS] {
    let mut c = [[fill; VEC]; CHUNKS];
    let last = s.cols - if VECTOR { VEC } else { 1 };
    each_chunk!(j => {
        if j >= n {
            // Not part of this kernel's cache: stays `fill`, folded away.
        } else if VECTOR {
            let col = s.col::<true>(j, 0);
            // SAFETY: clamped to the row's last 4 columns (cols % 4 == 0), aligned.
            let v = unsafe { ldst::load_nc_f32x4(src.add(col.min(last))) };
            c[j] = if col < s.cols { v } else { [fill; VEC] };
        } else {
            for v in 0..VEC {
                let col = s.col::<false>(j, v);
                // SAFETY: clamped to the row's last column.
                let x = unsafe { f32::load_nc(src.add(col.min(last))) };
                c[j][v] = if col < s.cols { x } else { fill };
            }
        }
    });
    c
}

/// `s`, opaque to the optimiser: the phase that uses it computes its addresses anew,
/// instead of LLVM keeping every chunk's column offset (or pointer) live in registers
/// across a whole loop or across the block reductions (16 to 32 registers; the paths
/// spilled).
#[inline(always)]
fn fresh(s: Share) -> Share {
    Share {
        t: ldst::opaque_usize(s.t),
        threads: ldst::opaque_usize(s.threads),
        cols: s.cols,
    }
}

/// `start, start + step, …` below `end`, with a trip count LLVM cannot compute, so it
/// does not unroll the streamed paths' loops: unrolled, they took more registers than
/// the cached paths, and a kernel's register count is its hungriest path's.
struct Strided {
    next: usize,
    end: usize,
    step: usize,
}

impl Strided {
    #[inline(always)]
    fn new(start: usize, end: usize, step: usize) -> Strided {
        Strided {
            next: start,
            end,
            step,
        }
    }
}

impl Iterator for Strided {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let col = self.next;
        if col >= self.end {
            return None;
        }
        self.next = ldst::opaque_usize(col + self.step);
        Some(col)
    }
}

/// `p`, opaque to the optimiser (see [`fresh`]).
#[inline(always)]
fn opaque_ptr(p: *const f32) -> *const f32 {
    p.with_addr(ldst::opaque_usize(p.addr()))
}

/// `p`, opaque to the optimiser (see [`fresh`]).
#[inline(always)]
fn opaque_mut(p: *mut f32) -> *mut f32 {
    p.with_addr(ldst::opaque_usize(p.addr()))
}

/// Write `f(element, column)` for each element of this thread's share of the row
/// (chunks `0..n`).
///
/// # Safety
/// `dst` points at `share.cols` writable `f32` that only this block writes, and with
/// `VECTOR` it is 16-byte aligned and `cols` a multiple of 4. (Threads write disjoint
/// columns: the [`Share`] layout gives each column to one thread.)
#[inline(always)]
unsafe fn store_row<const VECTOR: bool>(
    dst: *mut f32,
    s: Share,
    n: usize,
    c: &[[f32; VEC]; CHUNKS],
    f: impl Fn([f32; VEC], usize) -> [f32; VEC],
) {
    each_chunk!(j => {
        if VECTOR {
            if s.has::<true>(j, 0, n) {
                let col = s.col::<true>(j, 0);
                // SAFETY: as `load_row`; this thread's columns.
                unsafe { ldst::store_f32x4(dst.add(col), f(c[j], col)) };
            }
        } else {
            for v in 0..VEC {
                if s.has::<false>(j, v, n) {
                    let col = s.col::<false>(j, v);
                    // SAFETY: this thread's column, in the row.
                    unsafe { dst.add(col).write(f([c[j][v]; VEC], col)[0]) };
                }
            }
        }
    });
}

/// `e^x` as `2^(x · log2 e)`: one multiply and one `ex2.approx` (relative error about
/// 2⁻²², plus the product's rounding, which grows with |x|: at most about 1e-5 where
/// `e^x` is still a normal float, and such tiny terms weigh nothing in a softmax). The
/// libdevice `expf` would be about four times the instructions, which the streamed
/// path, with two exponentials an element, feels.
#[inline(always)]
fn exp(x: f32) -> f32 {
    (x * core::f32::consts::LOG2_E).exp2()
}

/// `op` over `value` of every thread of the block, returned to every thread, with one
/// barrier: each warp leaves its total in `partials`, then every warp combines them.
///
/// Every thread of the block must call it; the block size is a multiple of 32 and at
/// most 1024. A `partials` buffer may be used again only after another call with a
/// different buffer (whose barrier guarantees that every warp has read this one).
#[inline(always)]
fn block_allreduce(
    value: f32,
    partials: &SharedArray<f32, 32>,
    identity: f32,
    op: impl Fn(f32, f32) -> f32 + Copy,
) -> f32 {
    let warps = thread::block_size().div_ceil(warp::WARP_SIZE) as usize;
    let (lane, w) = (warp::lane_id() as usize, warp::warp_id() as usize);
    let total = warp::reduce(value, op);
    if lane == 0 {
        // SAFETY: one writer per slot; no warp still reads this buffer (the rule above).
        unsafe { partials.write(w, total) };
    }
    thread::sync_threads();
    // SAFETY: slots below `warps` were written before the barrier.
    let p = if lane < warps {
        unsafe { partials.read(lane) }
    } else {
        identity
    };
    warp::reduce(p, op)
}

/// The block's rows: `first, first + step, …` below `rows` (blocks numbered x fastest).
#[inline(always)]
fn block_rows(rows: usize) -> impl Iterator<Item = usize> {
    let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
    let step = gx * gy * thread::gridDim_z() as usize;
    let first = thread::blockIdx_x() as usize
        + gx * (thread::blockIdx_y() as usize + gy * thread::blockIdx_z() as usize);
    (first..rows).step_by(step.max(1))
}

/// The block shape both row kernels need, checked once.
#[inline(always)]
fn check_block() {
    let b = thread::block_size();
    gpu_assert!(
        b.is_multiple_of(warp::WARP_SIZE) && b <= MAX_BLOCK,
        "row kernels need a block of 32..=512 threads, a multiple of 32; got {}\n",
        b
    );
}

/// Whether every pointer is 16-byte aligned and rows of `cols` keep them so.
#[inline(always)]
fn vector_ok(cols: usize, ptrs: &[usize]) -> bool {
    cols.is_multiple_of(VEC) && ptrs.iter().all(|p| p.is_multiple_of(16))
}

/// Row-wise softmax of the row-major matrix `x` (`x.len() / cols` rows of `cols`):
/// `out[r, c] = exp(x[r, c] - max_r) / Σ_c exp(x[r, c] - max_r)`.
///
/// Launch: block of 32..=512 threads, a multiple of 32 (`cols / 32` rounded up to a
/// multiple of 32 and clamped to 128..=512 is a good choice), grid of one block per row
/// (any grid is correct: blocks stride over rows). Rows up to `32 · blockDim` columns are
/// read once; longer ones twice. Traps when `x.len()` is not `rows · cols` or `out.len()`
/// differs from `x.len()`.
#[kernel]
#[launch_bounds(512)]
pub fn softmax_rows(x: &[f32], mut out: DisjointSlice<f32>, cols: u32) {
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
    let s = Share::of_block(cols);
    let vector = vector_ok(cols, &[src as usize, dst as usize]);
    let cached = cols <= CACHE.cols(vector, s.threads);
    let rows = Rows {
        src,
        dst,
        rows,
        cols,
        s,
    };
    // SAFETY (each arm): the pointers cover `rows · cols` elements of `x` and of `out`,
    // and `out` is written nowhere else.
    unsafe {
        match (cached, vector) {
            (true, true) => softmax_path::<true, true>(rows, &MAXES, &SUMS),
            (true, false) => softmax_path::<true, false>(rows, &MAXES, &SUMS),
            (false, true) => softmax_path::<false, true>(rows, &MAXES, &SUMS),
            (false, false) => softmax_path::<false, false>(rows, &MAXES, &SUMS),
        }
    }
}

/// The rows of a launch, as raw parts (checked by the kernel).
#[derive(Clone, Copy)]
struct Rows {
    src: *const f32,
    dst: *mut f32,
    rows: usize,
    cols: usize,
    s: Share,
}

impl Rows {
    /// `body(row of src, row of dst)` for each of this block's rows.
    ///
    /// # Safety
    /// `src` and `dst` hold `rows · cols` elements.
    #[inline(always)]
    unsafe fn each(self, body: impl Fn(*const f32, *mut f32)) {
        for row in block_rows(self.rows) {
            // SAFETY: row < rows, so the row's `cols` elements lie in both arrays.
            let (x, y) = unsafe { (self.src.add(row * self.cols), self.dst.add(row * self.cols)) };
            // Opaque per row: otherwise LLVM keeps one pointer per chunk as a loop
            // variable (8 · 2 registers for the whole loop) where one base and
            // per-row offsets do.
            body(opaque_ptr(x), opaque_mut(y));
        }
    }
}

/// One of softmax's four paths, a function of its own (not inlined): every row of a
/// launch takes the same path, and compiled apart, each path's registers are allocated
/// on their own (all four inlined into the kernel spilled).
///
/// # Safety
/// As [`Rows::each`]; only this block works on its rows (block_rows), and `dst` is
/// written nowhere else during the launch.
#[inline(never)]
unsafe fn softmax_path<const CACHED_ROW: bool, const VECTOR: bool>(
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
            if CACHED_ROW {
                softmax_cached::<VECTOR>(x, y, s, maxes, sums)
            } else {
                softmax_streamed::<VECTOR>(x, y, s, maxes, sums)
            }
        })
    }
}

/// One row read once into registers. # Safety: as `load_row` and `store_row`.
#[inline(always)]
unsafe fn softmax_cached<const VECTOR: bool>(
    src: *const f32,
    dst: *mut f32,
    s: Share,
    maxes: &SharedArray<f32, 32>,
    sums: &SharedArray<f32, 32>,
) {
    // Columns this thread lacks hold -inf: they add nothing to the max, exp(-inf) = 0.
    // SAFETY: upheld by the caller.
    let n = CACHE.get(VECTOR);
    let mut c = unsafe { load_row::<VECTOR>(src, s, n, f32::NEG_INFINITY) };
    let mut local_max = f32::NEG_INFINITY;
    each_chunk!(j => {
        if j < n {
            local_max = c[j].iter().fold(local_max, |m, &v| m.max(v));
        }
    });
    let max = block_allreduce(local_max, maxes, f32::NEG_INFINITY, f32::max);
    let mut local_sum = 0.0;
    each_chunk!(j => {
        if j < n {
            for v in 0..VEC {
                c[j][v] = exp(c[j][v] - max);
                local_sum += c[j][v];
            }
        }
    });
    let inv = 1.0 / block_allreduce(local_sum, sums, 0.0, |a, b| a + b);
    // SAFETY: upheld by the caller.
    unsafe { store_row::<VECTOR>(dst, fresh(s), n, &c, |e, _| e.map(|e| e * inv)) };
}

/// Chunks a thread of a streamed pass loads at once: independent loads in flight.
const GROUP: usize = 4;

/// A streamed pass over this thread's columns of one row: groups of [`GROUP`] chunks
/// (`width` columns each, 4 or 1, `stride` apart), each group's loads unconditional
/// (clamped into the row) so they issue together; a chunk past the row's end is marked
/// absent.
#[derive(Clone, Copy)]
struct Walk<const VECTOR: bool> {
    src: *const f32,
    s: Share,
}

impl<const VECTOR: bool> Walk<VECTOR> {
    const WIDTH: usize = if VECTOR { VEC } else { 1 };

    #[inline(always)]
    fn stride(self) -> usize {
        self.s.threads * Self::WIDTH
    }

    /// The first column of each of this thread's groups.
    #[inline(always)]
    fn groups(self) -> Strided {
        Strided::new(self.s.t * Self::WIDTH, self.s.cols, self.stride() * GROUP)
    }

    /// The group at `base`: per chunk its first column, whether it is in the row, and
    /// its values (`fill` in the lanes past `WIDTH`).
    ///
    /// # Safety
    /// `src` holds `cols > 0` readable `f32` not written during the launch; with
    /// `VECTOR` it is 16-byte aligned and `cols` a multiple of 4.
    #[inline(always)]
    unsafe fn load(self, base: usize, fill: f32) -> [(usize, bool, [f32; VEC]); GROUP] {
        let last = self.s.cols - Self::WIDTH;
        core::array::from_fn(|u| {
            let col = base + u * self.stride();
            let at = col.min(last);
            // SAFETY: `at` is a column of the row (clamped), aligned when VECTOR.
            let v = unsafe {
                if VECTOR {
                    ldst::load_nc_f32x4(self.src.add(at))
                } else {
                    [f32::load_nc(self.src.add(at)), fill, fill, fill]
                }
            };
            (col, col < self.s.cols, v)
        })
    }
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
    let max = block_allreduce(m, maxes, f32::NEG_INFINITY, f32::max);
    let mine = if m == f32::NEG_INFINITY {
        0.0
    } else {
        sum * exp(m - max)
    };
    let inv = 1.0 / block_allreduce(mine, sums, 0.0, |a, b| a + b);
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
/// Launch: as [`softmax_rows`]. Traps when the sizes disagree with `cols`.
#[kernel]
#[launch_bounds(512)]
pub fn layernorm_rows(
    x: &[f32],
    weight: &[f32],
    bias: &[f32],
    mut out: DisjointSlice<f32>,
    cols: u32,
    eps: f32,
) {
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
    let s = Share::of_block(cols);
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
    let cached = cols <= CACHE.cols(vector, s.threads);
    let stats = (&SUMS, &SQUARES, cols as f32, eps);
    let rows = Rows {
        src,
        dst,
        rows,
        cols,
        s,
    };
    // SAFETY (each arm): as in softmax_rows; weight and bias have `cols` elements.
    unsafe {
        match (cached, vector) {
            (true, true) => layernorm_path::<true, true>(rows, affine, stats),
            (true, false) => layernorm_path::<true, false>(rows, affine, stats),
            (false, true) => layernorm_path::<false, true>(rows, affine, stats),
            (false, false) => layernorm_path::<false, false>(rows, affine, stats),
        }
    }
}

/// One of layer norm's four paths; see [`softmax_path`].
///
/// # Safety
/// As [`softmax_path`]; weight and bias have `cols` elements.
#[inline(never)]
unsafe fn layernorm_path<const CACHED_ROW: bool, const VECTOR: bool>(
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
            if CACHED_ROW {
                layernorm_cached::<VECTOR>(x, y, s, affine, stats)
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
unsafe fn layernorm_cached<const VECTOR: bool>(
    src: *const f32,
    dst: *mut f32,
    s: Share,
    affine: Affine,
    (sums, squares, cols_f, eps): Stats,
) {
    // SAFETY: upheld by the caller.
    let n = CACHE.get(VECTOR);
    let c = unsafe { load_row::<VECTOR>(src, s, n, 0.0) };
    let mut local = 0.0f32;
    each_chunk!(j => {
        local += c[j].iter().sum::<f32>();
    });
    let mean = block_allreduce(local, sums, 0.0, |a, b| a + b) / cols_f;
    let mut local_sq = 0.0f32;
    each_chunk!(j => {
        for v in 0..VEC {
            if s.has::<VECTOR>(j, v, n) {
                local_sq += (c[j][v] - mean) * (c[j][v] - mean);
            }
        }
    });
    let var = block_allreduce(local_sq, squares, 0.0, |a, b| a + b) / cols_f;
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
    let mean = block_allreduce(local, sums, 0.0, |a, b| a + b) / cols_f;
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
    let var = block_allreduce(local_sq, squares, 0.0, |a, b| a + b) / cols_f;
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
