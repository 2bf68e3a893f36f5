//! What the row kernels share: the register cache of a thread's share of a row
//! ([`Share`], [`load_row`], [`store_row`]), the streamed walk over longer rows
//! ([`Walk`]), one-barrier block reductions, and the opaque values that keep LLVM from
//! holding loop-invariant addresses in registers.

// Lane indices `v` also name columns (`Share::col(j, v)`) and unrolled register slots.
#![allow(clippy::needless_range_loop)]

use oxide_device::ldst::{self, ReadOnlyLoad};
use oxide_device::prelude::*;

/// `f32` lanes in a 128-bit access.
pub(super) const VEC: usize = 4;
/// The most 128-bit chunks a thread keeps in registers (the register cache's size).
pub(super) const CHUNKS: usize = 16;

/// How many chunks of the register cache a launch's path uses: 8 for vector rows up to
/// `32 · blockDim` columns, 16 up to `64 · blockDim`, 4 for scalar (unaligned) rows up
/// to `16 · blockDim` (their 32-bit accesses need more registers for addresses), 0 when
/// the row is longer (streamed). Each count is a path of its own, so that a short row
/// does not load (and hold) the long rows' chunks.
#[inline(always)]
pub(super) fn cache_chunks(cols: usize, vector: bool, threads: u32) -> usize {
    let per_thread = cols.div_ceil(threads as usize * VEC);
    match (vector, per_thread) {
        (true, ..=8) => 8,
        (true, ..=16) => 16,
        (false, ..=4) => 4,
        _ => 0,
    }
}

/// `$path::<N, VECTOR>($args)` for the path [`cache_chunks`] and the vector check
/// picked: the five paths a row kernel compiles.
macro_rules! by_path {
    ($chunks:expr, $vector:expr, $path:ident($($arg:expr),*)) => {
        match ($chunks, $vector) {
            (8, true) => $path::<8, true>($($arg),*),
            (16, true) => $path::<16, true>($($arg),*),
            (0, true) => $path::<0, true>($($arg),*),
            (4, false) => $path::<4, false>($($arg),*),
            _ => $path::<0, false>($($arg),*),
        }
    };
}
pub(super) use by_path;

/// The largest block the row kernels take (their `launch_bounds`): 32 768 cached
/// columns, and room for the cache in up to 128 registers a thread.
pub(super) const MAX_BLOCK: u32 = 512;

/// `$body` once for each chunk index `$j` in `0..CHUNKS`, as straight-line code. LLVM
/// does not fully unroll loops this long by itself, and a rolled loop indexes the
/// register cache at run time, which moves it to local memory (DRAM).
macro_rules! each_chunk {
    ($j:ident => $body:block) => {
        oxide_device::unrolled!(for $j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] $body)
    };
}
pub(super) use each_chunk;
const _: () = assert!(CHUNKS == 16, "each_chunk! and tree list the chunk indices");

/// A thread's share of a row: its registers' chunk `j`, lane `v`, and where that
/// element sits in the row. Columns are 32-bit (the kernels take `cols` as a `u32`):
/// 64-bit column arithmetic took two registers for every offset and bound.
#[derive(Clone, Copy)]
pub(super) struct Share {
    pub(super) t: u32,
    pub(super) threads: u32,
    pub(super) cols: u32,
}

impl Share {
    pub(super) fn of_block(cols: u32) -> Share {
        Share {
            t: thread::block_thread_index(),
            threads: thread::block_size(),
            cols,
        }
    }

    /// Column of chunk `j`, lane `v`. Vector rows: chunk `j` is the 4 columns from
    /// `(j·threads + t)·4` (a warp reads 512 contiguous bytes per chunk). Scalar rows:
    /// `(j·4 + v)·threads + t` (a warp reads 128 contiguous bytes per element).
    #[inline(always)]
    pub(super) fn col<const VECTOR: bool>(self, j: usize, v: usize) -> u32 {
        let (j, v) = (j as u32, v as u32);
        if VECTOR {
            (j * self.threads + self.t) * VEC as u32 + v
        } else {
            (j * VEC as u32 + v) * self.threads + self.t
        }
    }

    /// This thread's chunk `j`, lane `v` holds a column of the row, with `n` chunks.
    /// (A vector row's `cols` is a multiple of 4: its chunk is in the row or not as a
    /// whole, one comparison per chunk.)
    #[inline(always)]
    pub(super) fn has<const VECTOR: bool>(self, j: usize, v: usize, n: usize) -> bool {
        j < n && self.col::<VECTOR>(j, if VECTOR { 0 } else { v }) < self.cols
    }
}

/// This thread's `4 · n` cached elements of the row at `src` (chunks `0..n`; `n` is a
/// constant once inlined). Chunks past the row's end hold copies of the row's last
/// element(s): the caller masks them where they would count ([`Share::has`]).
///
/// The loads are unconditional, so they issue back to back: a column past the row's
/// end loads the row's last element(s) instead (an L1 hit). (Guarded loads put each in
/// a basic block of its own, and replacing a loaded value right after its load, as a
/// fill value would, makes that move wait for the load: the loads would not overlap.)
///
/// # Safety
/// `src` points at `share.cols > 0` readable `f32` not written during the launch; with
/// `VECTOR`, `src` is 16-byte aligned and `cols` a multiple of 4.
#[inline(always)]
pub(super) unsafe fn load_row<const VECTOR: bool>(
    src: *const f32,
    s: Share,
    n: usize,
) -> [[f32; VEC]; CHUNKS] {
    let mut c = [[0.0; VEC]; CHUNKS];
    let last = s.cols - if VECTOR { VEC as u32 } else { 1 };
    each_chunk!(j => {
        if j >= n {
            // Not part of this kernel's cache: never read.
        } else if VECTOR {
            let col = s.col::<true>(j, 0);
            // SAFETY: clamped to the row's last 4 columns (cols % 4 == 0), aligned.
            c[j] = unsafe { ldst::load_nc_f32x4(src.add(col.min(last) as usize)) };
        } else {
            for v in 0..VEC {
                let col = s.col::<false>(j, v);
                // SAFETY: clamped to the row's last column.
                c[j][v] = unsafe { f32::load_nc(src.add(col.min(last) as usize)) };
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
pub(super) fn fresh(s: Share) -> Share {
    Share {
        t: opaque_u32(s.t),
        threads: opaque_u32(s.threads),
        cols: s.cols,
    }
}

/// `x`, opaque to the optimiser, as [`ldst::opaque_usize`].
#[inline(always)]
pub(super) fn opaque_u32(x: u32) -> u32 {
    ldst::opaque_usize(x as usize) as u32
}

/// `start, start + step, …` below `end`, with a trip count LLVM cannot compute, so it
/// does not unroll the streamed paths' loops: unrolled, they took more registers than
/// the cached paths, and a kernel's register count is its hungriest path's.
pub(super) struct Strided {
    next: usize,
    end: usize,
    step: usize,
}

impl Strided {
    #[inline(always)]
    pub(super) fn new(start: usize, end: usize, step: usize) -> Strided {
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

pub(super) use ldst::{opaque_mut, opaque_ptr};

/// Write `f(element, column)` for each element of this thread's share of the row
/// (chunks `0..n`).
///
/// # Safety
/// `dst` points at `share.cols` writable `f32` that only this block writes, and with
/// `VECTOR` it is 16-byte aligned and `cols` a multiple of 4. (Threads write disjoint
/// columns: the [`Share`] layout gives each column to one thread.)
#[inline(always)]
pub(super) unsafe fn store_row<const VECTOR: bool>(
    dst: *mut f32,
    s: Share,
    n: usize,
    c: &[[f32; VEC]; CHUNKS],
    f: impl Fn([f32; VEC], usize) -> [f32; VEC],
) {
    each_chunk!(j => {
        if VECTOR {
            if s.has::<true>(j, 0, n) {
                let col = s.col::<true>(j, 0) as usize;
                // SAFETY: as `load_row`; this thread's columns.
                unsafe { ldst::store_f32x4(dst.add(col), f(c[j], col)) };
            }
        } else {
            for v in 0..VEC {
                if s.has::<false>(j, v, n) {
                    let col = s.col::<false>(j, v) as usize;
                    // SAFETY: this thread's column, in the row.
                    unsafe { dst.add(col).write(f([c[j][v]; VEC], col)[0]) };
                }
            }
        }
    });
}

/// `op` over the first `n` of `v` (`n` a constant once inlined) as a balanced tree, so
/// the chain of dependent operations is 4 deep, not 15 (6 with a chunk's four lanes
/// before it, where a chain over a thread's 64 elements was 63 deep). `identity` for
/// the chunks from `n` on.
#[inline(always)]
pub(super) fn tree(v: [f32; CHUNKS], n: usize, identity: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let at = |i: usize| if i < n { v[i] } else { identity };
    let q = |i: usize| op(op(at(i), at(i + 1)), op(at(i + 2), at(i + 3)));
    op(op(q(0), q(4)), op(q(8), q(12)))
}

/// `op` over a chunk's four lanes, as a tree.
#[inline(always)]
pub(super) fn lanes(v: [f32; VEC], op: impl Fn(f32, f32) -> f32) -> f32 {
    op(op(v[0], v[1]), op(v[2], v[3]))
}

/// `e^x` as `2^(x · log2 e)`: one multiply and one `ex2.approx` (relative error about
/// 2⁻²², plus the product's rounding, which grows with |x|: at most about 1e-5 where
/// `e^x` is still a normal float, and such tiny terms weigh nothing in a softmax). The
/// libdevice `expf` would be about four times the instructions, which the streamed
/// path, with two exponentials an element, feels.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    (x * core::f32::consts::LOG2_E).exp2()
}

/// `op` over `value` of every thread of the block, returned to every thread, with one
/// barrier: each warp leaves its total in `partials`, then every warp combines them.
///
/// Every thread of the block must call it, with its own [`Share`]; the block size is a multiple of 32 and at
/// most 1024. A `partials` buffer may be used again only after another call with a
/// different buffer (whose barrier guarantees that every warp has read this one).
#[inline(always)]
pub(super) fn block_allreduce(
    value: f32,
    s: Share,
    partials: &SharedArray<f32, 32>,
    identity: f32,
    op: impl Fn(f32, f32) -> f32 + Copy,
) -> f32 {
    // Lane and warp from the caller's thread index (warps are runs of 32 consecutive
    // threads), made opaque per call: nothing of the reduction is kept in registers
    // across the caller's row loop (reading %laneid once and holding it, and the shared
    // slots' addresses, cost up to 8 registers the register cache needs).
    let s = fresh(s);
    let (lane, w) = (
        (s.t % warp::WARP_SIZE) as usize,
        (s.t / warp::WARP_SIZE) as usize,
    );
    let warps = s.threads.div_ceil(warp::WARP_SIZE) as usize;
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
pub(super) fn block_rows(rows: usize) -> impl Iterator<Item = usize> {
    let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
    let step = gx * gy * thread::gridDim_z() as usize;
    let first = thread::blockIdx_x() as usize
        + gx * (thread::blockIdx_y() as usize + gy * thread::blockIdx_z() as usize);
    (first..rows).step_by(step.max(1))
}

/// The block shape both row kernels need, checked once.
#[inline(always)]
pub(super) fn check_block() {
    let b = thread::block_size();
    gpu_assert!(
        b.is_multiple_of(warp::WARP_SIZE) && b <= MAX_BLOCK,
        "row kernels need a block of 32..=512 threads, a multiple of 32; got {}\n",
        b
    );
}

/// Whether every pointer is 16-byte aligned and rows of `cols` keep them so.
#[inline(always)]
pub(super) fn vector_ok(cols: usize, ptrs: &[usize]) -> bool {
    cols.is_multiple_of(VEC) && ptrs.iter().all(|p| p.is_multiple_of(16))
}

/// The rows of a launch, as raw parts (checked by the kernel).
#[derive(Clone, Copy)]
pub(super) struct Rows {
    pub(super) src: *const f32,
    pub(super) dst: *mut f32,
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) s: Share,
}

impl Rows {
    /// `body(row of src, row of dst)` for each of this block's rows.
    ///
    /// # Safety
    /// `src` and `dst` hold `rows · cols` elements.
    #[inline(always)]
    pub(super) unsafe fn each(self, body: impl Fn(*const f32, *mut f32)) {
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

/// Chunks a thread of a streamed pass loads at once: independent loads in flight.
pub(super) const GROUP: usize = 4;

/// A streamed pass over this thread's columns of one row: groups of [`GROUP`] chunks
/// (`width` columns each, 4 or 1, `stride` apart), each group's loads unconditional
/// (clamped into the row) so they issue together; a chunk past the row's end is marked
/// absent.
#[derive(Clone, Copy)]
pub(super) struct Walk<const VECTOR: bool> {
    pub(super) src: *const f32,
    pub(super) s: Share,
}

impl<const VECTOR: bool> Walk<VECTOR> {
    pub(super) const WIDTH: usize = if VECTOR { VEC } else { 1 };

    #[inline(always)]
    pub(super) fn stride(self) -> usize {
        self.s.threads as usize * Self::WIDTH
    }

    /// The first column of each of this thread's groups.
    #[inline(always)]
    pub(super) fn groups(self) -> Strided {
        Strided::new(
            self.s.t as usize * Self::WIDTH,
            self.s.cols as usize,
            self.stride() * GROUP,
        )
    }

    /// The group at `base`: per chunk its first column, whether it is in the row, and
    /// its values (`fill` in the lanes past `WIDTH`).
    ///
    /// # Safety
    /// `src` holds `cols > 0` readable `f32` not written during the launch; with
    /// `VECTOR` it is 16-byte aligned and `cols` a multiple of 4.
    #[inline(always)]
    pub(super) unsafe fn load(self, base: usize, fill: f32) -> [(usize, bool, [f32; VEC]); GROUP] {
        let cols = self.s.cols as usize;
        let last = cols - Self::WIDTH;
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
            (col, col < cols, v)
        })
    }
}
