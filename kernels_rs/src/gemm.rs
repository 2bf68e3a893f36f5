//! Fast matrix products: `sgemm` (f32 on the FMA units) and `gemm_bf16` /
//! `gemm_bf16_bf16` (bf16 on the tensor cores, f32 or bf16 result). Both compute
//! `c = a · b` for row-major `a` (m×k), `b` (k×n) and `c` (m×n), for any m, n, k (tails
//! are bounds-checked); `matmul_tiled` stays the readable version of the same product.
//!
//! Each block computes a 128×128 tile of `c` (sgemm: BM×128, BM tuned). Vector loads (16 bytes) need rows that
//! start 16-byte aligned: `k` and `n` multiples of 4 (sgemm) or 8 (gemm_bf16) and
//! 16-byte-aligned arrays; otherwise the same kernel loads element by element, slower
//! but with the same result.

use oxide_device::ldst;
use oxide_device::mma::{
    cp_async_cg_zfill, cp_async_commit_group, cp_async_wait_group, ldmatrix_x4, ldmatrix_x4_trans,
    mma_m16n8k16_f32_bf16,
};
use oxide_device::prelude::*;

use crate::k_steps::k_loop;
use crate::sgemm_tall::{TALL_BM, sgemm_tall};
use crate::vec16::{Vec4, aligned16};

/// k-depth of one shared-memory tile: 16 halves the barriers of 8.
const SG_BK: usize = 16;
const SG_BN: usize = 128;
/// The tallest tile [`sgemm`] is tuned over; its shared memory is sized for it (a
/// `static` cannot depend on the kernel's const generic).
const SG_MAX_BM: usize = 128;
/// Padding of a row of the transposed A tile in shared memory: 4 floats put the
/// threads that store the same row at k and k + 4 in different banks.
const SG_PAD: usize = 4;
const SG_A_BUF: usize = SG_BK * (SG_MAX_BM + SG_PAD);
const SG_B_BUF: usize = SG_BK * SG_BN;

/// `c = a · b` in f32 with fused multiply-adds, for C-order `a` (m×k), `b` (k×n), `c`
/// (m×n). A plain call launches block (256, 1, 1), grid (⌈n/128⌉, ⌈m/BM⌉, 1).
///
/// Each block computes a BM×128 tile of `c` and each thread an (BM/16)×8 piece of it in
/// registers (rows `4ty..4ty+4`, and `64+4ty..` when BM is 128; columns `4tx..` and
/// `64+4tx..`, so its shared-memory reads are 16-byte vectors that the warp's lanes
/// broadcast without bank conflicts). The k loop steps 16 at a time through two
/// shared-memory buffers: the next step's global loads are in flight while the current
/// step computes, the operands of k-row `kk + 1` are read from shared memory while row
/// `kk` computes, and one barrier per step separates the two buffers.
///
/// The steps whose loads are whole (k0 + 16 <= k on the vector path) take them without
/// bounds checks, in a loop of their own (`sgemm_tile`): at BM = 128 such a step is 1024
/// FFMA, 64 LDS.128 and 36 other instructions (ptxas sm_90; the checked loop's body, all
/// its paths, was 1451 instructions).
///
/// `BM` is tuned (`pyoxide tune`); the hand pick, 128, holds 64 accumulators a thread
/// (181 registers on sm_90: one block of 8 warps per SM). 64-row tiles make twice the blocks,
/// which fills the SMs when `m` is small (m ≤ 128 against a few thousand columns gives
/// 32 blocks of 128 rows), at half the products per shared-memory read. 256-row tiles
/// (16×8 a thread, k steps of 8) run another body (`sgemm_tall`): twice the products
/// per shared-memory read (each read one wavefront, not two) and a third more per byte
/// from L2, and fewer instructions per FMA, for the large products where the 128-row
/// body spends issue slots and power on shared-memory reads and load bookkeeping (H200:
/// the tuner timed it at 4096³ in 3064 µs against the hand pick's 3313, and under
/// sustained load it ran at 0.873× cuBLAS there, against 0.816× for the hand pick; both
/// before their whole steps lost the checks, and sgemm_256 with register-staged loads; its
/// `cp.async` pipeline ran at 0.915× cuBLAS on an H100 where those loads ran at 0.865×).
#[kernel]
#[launch_bounds(256)]
#[tune(BM = [128, 64, 256])]
#[launch(tiles(c, block = (256, 1), tile = (128, BM)))]
#[shapes(a[m, k], b[k, n], c[m, n])]
#[inline(always)]
pub fn sgemm<const BM: usize>(a: Array2<f32>, b: Array2<f32>, c: DisjointArray2<f32>) {
    const { assert!(BM == 64 || BM == 128 || BM == TALL_BM, "BM: 64, 128 or 256") };
    let (m, n, k) = (a.rows() as u32, b.cols() as u32, a.cols() as u32);
    if BM == TALL_BM {
        sgemm_tall(a.as_slice(), b.as_slice(), c.into_flat(), m, n, k)
    } else {
        sgemm_tile::<BM>(a.as_slice(), b.as_slice(), c.into_flat(), m, n, k)
    }
}

// Measured on the H200 (docs/performance.md): capping the earlier 8-deep body at 128
// registers for two blocks per SM (`launch_bounds(256, 2)`) spilled and ran 12 % slower
// than one block.
//
// The read-ahead of the next k-row is written out rather than left to ptxas: with
// the operands read at the top of each row, whether ptxas hoists those reads over
// the previous row's FMAs turned on small changes elsewhere in the PTX (the same
// source ran at 0.76x cuBLAS from one link step and 0.67x from the next).
#[inline(always)]
fn sgemm_tile<const BM: usize>(
    a: &[f32],
    b: &[f32],
    mut c: DisjointSlice<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    // A's tile is BM rows × 16 k: AV vectors of 4 a thread, over 4 / AV threads a row.
    // Each thread accumulates RI rows (two groups of 4 when BM is 128) by 8 columns.
    // (Also instantiated, never called, for `TALL_BM`, which runs `sgemm_tall`.)
    const { assert!(BM <= SG_MAX_BM || BM == TALL_BM) };
    let (av, ri, lda) = (BM / 64, BM / 16, BM + SG_PAD);
    #[unsafe(link_section = ".oxide.shared")]
    static A_S: SharedArray<f32, { 2 * SG_A_BUF }> = SharedArray::UNINIT;
    #[unsafe(link_section = ".oxide.shared")]
    static B_S: SharedArray<f32, { 2 * SG_B_BUF }> = SharedArray::UNINIT;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // Nothing to compute, and the whole steps' clamped rows and columns need a row and a
    // column to read.
    if m == 0 || n == 0 {
        return;
    }
    let tid = thread::threadIdx_x() as usize;
    let (m0, n0) = (
        thread::blockIdx_y() as usize * BM,
        thread::blockIdx_x() as usize * SG_BN,
    );
    let a_vec = k.is_multiple_of(4) && aligned16(a.as_ptr());
    let b_vec = n.is_multiple_of(4) && aligned16(b.as_ptr());
    // This thread's part of each tile load: of A, `av` vectors, row `tid / (4 / av)`,
    // k columns `4 * (tid % (4 / av) + (4 / av) j)..+4` (with BM 128, a warp reads 16
    // rows × 32 bytes); of B, two vectors, k row `tid / 32 + 8j`, columns
    // `4 * (tid % 32)..+4` (a warp reads 512 contiguous bytes).
    let a_threads = 4 / av;
    let a_row = tid / a_threads;
    let a_col = |j: usize| (tid % a_threads + a_threads * j) * 4;
    let (b_row, b_col) = (|j: usize| tid / 32 + 8 * j, (tid % 32) * 4);
    let load_a = |k0: usize, j: usize| -> [f32; 4] {
        let (r, col) = (m0 + a_row, k0 + a_col(j));
        if a_vec {
            if r < m && col < k {
                // SAFETY: in bounds (k % 4 == 0, so col + 4 <= k), 16-byte aligned.
                return unsafe { (a.as_ptr().add(r * k + col) as *const Vec4).read().0 };
            }
            return [0.0; 4];
        }
        let at = |e: usize| {
            if r < m && col + e < k {
                a[r * k + col + e]
            } else {
                0.0
            }
        };
        [at(0), at(1), at(2), at(3)]
    };
    let load_b = |k0: usize, j: usize| -> [f32; 4] {
        let (r, col) = (k0 + b_row(j), n0 + b_col);
        if b_vec {
            if r < k && col < n {
                // SAFETY: in bounds (n % 4 == 0), 16-byte aligned.
                return unsafe { (b.as_ptr().add(r * n + col) as *const Vec4).read().0 };
            }
            return [0.0; 4];
        }
        let at = |e: usize| {
            if r < k && col + e < n {
                b[r * n + col + e]
            } else {
                0.0
            }
        };
        [at(0), at(1), at(2), at(3)]
    };
    // One tile's loads into registers: [A j=0, A j=1 (BM 128), B j=0, B j=1].
    let load = |k0: usize| -> [[f32; 4]; 4] {
        let mut v = [[0.0f32; 4]; 4];
        unrolled!(for j in [0, 1] {
            if j < av {
                v[j] = load_a(k0, j);
            }
            v[2 + j] = load_b(k0, j);
        });
        v
    };
    // A is stored transposed (k-major) so a thread's 4 rows are one vector.
    let store = |buf: usize, v: [[f32; 4]; 4]| {
        // SAFETY: each thread writes its own slots of buffer `buf`, which no thread
        // reads until the barrier that follows.
        unsafe {
            let a_s = A_S.as_mut_ptr().add(buf * SG_A_BUF);
            let b_s = B_S.as_mut_ptr().add(buf * SG_B_BUF);
            unrolled!(for j in [0, 1] {
                if j < av {
                    unrolled!(for e in [0, 1, 2, 3] {
                        a_s.add((a_col(j) + e) * lda + a_row).write(v[j][e]);
                    });
                }
                (b_s.add(b_row(j) * SG_BN + b_col) as *mut Vec4).write(Vec4(v[2 + j]));
            });
        }
    };
    let (tx, ty) = (tid % 16, tid / 16);
    // The operands of k-row `kk` of buffer `buf`: [A rows 4ty.., A rows 64+4ty.. (BM
    // 128; zeros otherwise), B columns 4tx.., B columns 64+4tx..].
    let frag = |buf: usize, kk: usize| -> [[f32; 4]; 4] {
        // SAFETY: buffer `buf` was written before the last barrier; 16-byte aligned
        // vectors (offsets are multiples of 4 floats).
        unsafe {
            let a_s = A_S.as_ptr().add(buf * SG_A_BUF + kk * lda) as *const Vec4;
            let b_s = B_S.as_ptr().add(buf * SG_B_BUF + kk * SG_BN) as *const Vec4;
            [
                a_s.add(ty).read().0,
                if ri == 8 {
                    a_s.add(16 + ty).read().0
                } else {
                    [0.0; 4]
                },
                b_s.add(tx).read().0,
                b_s.add(16 + tx).read().0,
            ]
        }
    };
    // A whole step on the vector path (k0 + SG_BK <= k, k and n multiples of 4, aligned
    // arrays): its loads with no bounds check. Rows of A past m are read from row m - 1
    // and columns of B past n from its last four: they feed only rows and columns of c
    // that are not stored (sgemm_tall.rs does the same).
    let (a_rows, b_cols) = (
        (m0 + a_row).min(m.saturating_sub(1)),
        (n0 + b_col).min(n.saturating_sub(4)),
    );
    let load_whole = move |step: u32| -> [[f32; 4]; 4] {
        let k0 = step as usize * SG_BK;
        let mut v = [[0.0f32; 4]; 4];
        // SAFETY: a_rows < m; A's columns k0 + a_col(j)..+4 and B's rows k0 + b_row(j) lie
        // below k0 + SG_BK <= k (the caller's whole steps); B's columns b_cols..+4 <= n
        // (n % 4 == 0, so n >= 4); every offset is a multiple of 4 floats from a
        // 16-byte-aligned base (k and n multiples of 4).
        unsafe {
            unrolled!(for j in [0, 1] {
                if j < av {
                    v[j] = ldst::load_nc_f32x4(a.as_ptr().add(a_rows * k + k0 + a_col(j)));
                }
                v[2 + j] = ldst::load_nc_f32x4(b.as_ptr().add((k0 + b_row(j)) * n + b_cols));
            });
        }
        v
    };
    let mut acc = [[0.0f32; 8]; 8];
    // One k-row: the products of A's `ri` rows and B's 8 columns in `cur`.
    let mut fma = |cur: &[[f32; 4]; 4]| {
        unrolled!(for i in [0, 1, 2, 3, 4, 5, 6, 7] {
            if i < ri {
                let a_i = cur[i / 4][i % 4];
                unrolled!(for j in [0, 1, 2, 3, 4, 5, 6, 7] {
                    acc[i][j] = a_i.mul_add(cur[2 + j / 4][j % 4], acc[i][j]);
                });
            }
        });
    };
    k_loop!(
        staged k,
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        a_vec && b_vec,
        load_whole,
        |t: u32| load(t as usize * SG_BK),
        store,
        frag,
        fma
    );
    let c_vec = n.is_multiple_of(4) && aligned16(c.as_mut_ptr());
    let cp = c.as_mut_ptr();
    unrolled!(for i in [0, 1, 2, 3, 4, 5, 6, 7] {
        if i < ri {
            let r = m0 + (i / 4) * 64 + ty * 4 + i % 4;
            unrolled!(for half in [0, 1] {
                let col = n0 + half * 64 + tx * 4;
                let v = [
                    acc[i][half * 4],
                    acc[i][half * 4 + 1],
                    acc[i][half * 4 + 2],
                    acc[i][half * 4 + 3],
                ];
                // SAFETY: every element of c belongs to exactly one thread of one block
                // (its row and column above); bounds checked against m and n, and
                // `c.len() >= m * n` was asserted.
                unsafe {
                    if r < m && c_vec && col + 4 <= n {
                        (cp.add(r * n + col) as *mut Vec4).write(Vec4(v));
                    } else if r < m {
                        unrolled!(for j in [0, 1, 2, 3] {
                            if col + j < n {
                                cp.add(r * n + col + j).write(v[j]);
                            }
                        });
                    }
                }
            });
        }
    });
}

const BF_BM: usize = 128;
const BF_BN: usize = 128;
const BF_BK: usize = 32;
const BF_STAGES: usize = 3;
const A_STAGE: usize = BF_BM * BF_BK;
const B_STAGE: usize = BF_BK * BF_BN;

/// Offset in a stage of A's tile (128 rows × 32 k, 4 chunks of 8 per row) of element
/// `col` of row `row`: chunks are swizzled (`chunk ^ (row/2 % 4)`) so that the 8 rows
/// one `ldmatrix` reads fall in 8 different bank groups.
#[inline(always)]
fn a_swz(row: usize, col: usize) -> usize {
    row * BF_BK + (((col / 8) ^ ((row / 2) % 4)) * 8) + col % 8
}

/// Offset in a stage of B's tile (32 k × 128 n, 16 chunks per row), swizzled by
/// `chunk ^ (row % 8)` for the same reason.
#[inline(always)]
fn b_swz(row: usize, col: usize) -> usize {
    row * BF_BN + (((col / 8) ^ (row % 8)) * 8) + col % 8
}

/// `c = a · b` with bf16 inputs and f32 accumulation and output, on the tensor cores
/// (`mma.sync.m16n8k16`, sm_80+). `a` and `b` are bfloat16 (`torch.bfloat16`,
/// `ml_dtypes.bfloat16`), `c` is f32. A plain call launches block
/// (256, 1, 1), grid (⌈n/128⌉, ⌈m/128⌉, 1); static shared memory 48 KiB.
///
/// Eight warps (2 × 4) each own a 64×32 piece of the block's 128×128 tile: 4 × 4
/// `m16n8k16` accumulators. Tiles of 32 k move global → shared through `cp.async`
/// in a 3-stage pipeline (two tiles in flight while one computes) into swizzled
/// shared memory, and shared → registers through `ldmatrix` (`.trans` for B, which is
/// row-major k×n). When `k` or `n` is not a multiple of 8 (or an array is not 16-byte
/// aligned) tiles load element by element instead of through `cp.async`.
#[kernel]
#[launch_bounds(256)]
#[launch(tiles(c, block = (256, 1), tile = (128, 128)))]
#[shapes(a[m, k], b[k, n], c[m, n])]
pub fn gemm_bf16(a: Array2<bf16>, b: Array2<bf16>, c: DisjointArray2<f32>) {
    let (m, n, k) = (a.rows() as u32, b.cols() as u32, a.cols() as u32);
    let (a, b) = (
        bf16::slice_as_bits(a.as_slice()),
        bf16::slice_as_bits(b.as_slice()),
    );
    gemm_bf16_tile(a, b, c.into_flat(), m, n, k, |v| v)
}

/// [`gemm_bf16`] with a bf16 result, each f32 sum rounded to nearest (ties to even)
/// once, at the end. Same launch.
#[kernel]
#[launch_bounds(256)]
#[launch(tiles(c, block = (256, 1), tile = (128, 128)))]
#[shapes(a[m, k], b[k, n], c[m, n])]
pub fn gemm_bf16_bf16(a: Array2<bf16>, b: Array2<bf16>, c: DisjointArray2<bf16>) {
    let (m, n, k) = (a.rows() as u32, b.cols() as u32, a.cols() as u32);
    let (a, b) = (
        bf16::slice_as_bits(a.as_slice()),
        bf16::slice_as_bits(b.as_slice()),
    );
    gemm_bf16_tile(a, b, c.into_flat(), m, n, k, bf16::from_f32)
}

#[inline(always)]
fn gemm_bf16_tile<T: Copy>(
    a: &[u16],
    b: &[u16],
    mut c: DisjointSlice<T>,
    m: u32,
    n: u32,
    k: u32,
    out: impl Fn(f32) -> T,
) {
    #[unsafe(link_section = ".oxide.shared")]
    static A_S: SharedArray<u16, { BF_STAGES * A_STAGE }> = SharedArray::UNINIT;
    #[unsafe(link_section = ".oxide.shared")]
    static B_S: SharedArray<u16, { BF_STAGES * B_STAGE }> = SharedArray::UNINIT;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let tid = thread::threadIdx_x() as usize;
    let lane = tid % 32;
    let (wm, wn) = (tid / 32 / 4, tid / 32 % 4);
    let (m0, n0) = (
        thread::blockIdx_y() as usize * BF_BM,
        thread::blockIdx_x() as usize * BF_BN,
    );
    let vec = k.is_multiple_of(8)
        && n.is_multiple_of(8)
        && aligned16(a.as_ptr())
        && aligned16(b.as_ptr());
    let (a_s, b_s) = (A_S.as_mut_ptr(), B_S.as_mut_ptr());
    // Tile `kt` of A and B into stage `s`.
    let load = |kt: usize, s: usize| {
        let k0 = kt * BF_BK;
        // SAFETY: destinations are this thread's chunks of stage `s`, which no thread
        // reads until a barrier after the copy's group is waited for; sources are in
        // bounds (src-size 0 reads nothing) and 16-byte aligned when `vec`.
        unsafe {
            if vec {
                for j in 0..2 {
                    let id = tid + 256 * j;
                    let (r, ch) = (id / 4, id % 4);
                    let (gr, gc) = (m0 + r, k0 + ch * 8);
                    let ok = gr < m && gc < k;
                    let src = if ok {
                        a.as_ptr().add(gr * k + gc)
                    } else {
                        a.as_ptr()
                    };
                    let dst = a_s.add(s * A_STAGE + a_swz(r, ch * 8));
                    cp_async_cg_zfill(
                        dst as *mut Vec4,
                        src as *const Vec4,
                        if ok { 16 } else { 0 },
                    );
                }
                for j in 0..2 {
                    let id = tid + 256 * j;
                    let (r, ch) = (id / 16, id % 16);
                    let (gr, gc) = (k0 + r, n0 + ch * 8);
                    let ok = gr < k && gc < n;
                    let src = if ok {
                        b.as_ptr().add(gr * n + gc)
                    } else {
                        b.as_ptr()
                    };
                    let dst = b_s.add(s * B_STAGE + b_swz(r, ch * 8));
                    cp_async_cg_zfill(
                        dst as *mut Vec4,
                        src as *const Vec4,
                        if ok { 16 } else { 0 },
                    );
                }
            } else {
                for j in 0..A_STAGE / 256 {
                    let e = tid + 256 * j;
                    let (r, col) = (e / BF_BK, e % BF_BK);
                    let (gr, gc) = (m0 + r, k0 + col);
                    let v = if gr < m && gc < k { a[gr * k + gc] } else { 0 };
                    a_s.add(s * A_STAGE + a_swz(r, col)).write(v);
                }
                for j in 0..B_STAGE / 256 {
                    let e = tid + 256 * j;
                    let (r, col) = (e / BF_BN, e % BF_BN);
                    let (gr, gc) = (k0 + r, n0 + col);
                    let v = if gr < k && gc < n { b[gr * n + gc] } else { 0 };
                    b_s.add(s * B_STAGE + b_swz(r, col)).write(v);
                }
            }
        }
    };
    let mut acc = [[[0.0f32; 4]; 4]; 4];
    let tiles = k.div_ceil(BF_BK);
    for s in 0..BF_STAGES - 1 {
        if s < tiles {
            load(s, s);
        }
        cp_async_commit_group();
    }
    for kt in 0..tiles {
        cp_async_wait_group::<{ (BF_STAGES - 2) as u32 }>();
        thread::sync_threads();
        // The stage tile kt + 2 goes into was computed on in step kt - 1, which every
        // warp finished before the barrier above.
        let pre = kt + BF_STAGES - 1;
        if pre < tiles {
            load(pre, pre % BF_STAGES);
        }
        cp_async_commit_group();
        let s = kt % BF_STAGES;
        for kk in 0..BF_BK / 16 {
            // SAFETY: stage `s` is complete (waited for, then the barrier); every lane
            // of every warp runs these warp-collective loads and products.
            unsafe {
                let a_at = |mt: usize| {
                    let row = wm * 64 + mt * 16 + lane % 16;
                    ldmatrix_x4(a_s.add(s * A_STAGE + a_swz(row, kk * 16 + (lane / 16) * 8)))
                };
                let b_at = |np: usize| {
                    let row = kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
                    let col = wn * 32 + np * 16 + (lane / 16) * 8;
                    ldmatrix_x4_trans(b_s.add(s * B_STAGE + b_swz(row, col)))
                };
                let af = [a_at(0), a_at(1), a_at(2), a_at(3)];
                let bf = [b_at(0), b_at(1)];
                unrolled!(for mt in [0, 1, 2, 3] {
                    unrolled!(for nt in [0, 1, 2, 3] {
                        let b_frag = [bf[nt / 2][(nt % 2) * 2], bf[nt / 2][(nt % 2) * 2 + 1]];
                        acc[mt][nt] = mma_m16n8k16_f32_bf16(acc[mt][nt], af[mt], b_frag);
                    });
                });
            }
        }
    }
    cp_async_wait_group::<0>();
    let cp = c.as_mut_ptr();
    let (g, t4) = (lane / 4, lane % 4);
    unrolled!(for mt in [0, 1, 2, 3] {
        unrolled!(for nt in [0, 1, 2, 3] {
            unrolled!(for i in [0, 1, 2, 3] {
                let r = m0 + wm * 64 + mt * 16 + g + 8 * (i / 2);
                let col = n0 + wn * 32 + nt * 8 + 2 * t4 + i % 2;
                if r < m && col < n {
                    // SAFETY: each element of c belongs to one lane of one warp of one
                    // block (the fragment layout); in bounds; `c.len() >= m * n`.
                    unsafe { cp.add(r * n + col).write(out(acc[mt][nt][i])) };
                }
            });
        });
    });
}
