//! [`sgemm`](crate::sgemm)'s 256-row instance (`sgemm_256`): a 256×128 tile of `c` a
//! block, 16×8 of it a thread.
//!
//! Why a second body: the 128-row body reads 4 shared-memory vectors for 64 FMAs a k-row.
//! Here a thread reads 6 for 128 FMAs, and a block reads 25 % fewer bytes from L2 per FMA
//! (384 against 256 k-column elements for twice the products). A warp's lanes are 8 tile
//! columns by 4 tile rows (the 128-row body's are 16 by 2), so each shared-memory read of
//! a k-row is one 128- or 64-byte run: one wavefront, not two. The 128 accumulators
//! leave room for few other registers, so k steps 8 at a time and the tiles come in by
//! `cp.async`, which needs no staging registers: three stages of 8 k in static shared
//! memory, filled two steps ahead (`k_loop!`'s async form). A step's copies are 8
//! four-byte `cp.async.ca` of A a thread, which transpose it, and one 16-byte
//! `cp.async.cg` of B (4 four-byte copies when `n % 4 != 0` or `b` is not 16-byte
//! aligned: a loop of its own, so the vector path's steps do not issue them predicated
//! off). The ragged k step goes first, its indices below 0 zero-filled by the copies'
//! source size, so only the prologue's copies carry a bound on k; rows past m and
//! columns past n read in-bounds elements that only reach the rows and columns of c that
//! are not stored.
//!
//! Local ptxas (CUDA 13, sm_90): 239 registers (sm_80: 223), no spills, 37,248 bytes of
//! shared memory. A step of the vector path that copies issues 1024 FFMA, 48 LDS.128, 9
//! LDGSTS and 28 others (3 of them ptxas's `@!PT LDS` no-ops before the copies): 1109,
//! 92 % FFMA; the last two steps, which only wait, 1087. The register-staged body this
//! replaced: 255 registers (sm_80: 238), 1024 FFMA, 48 LDS.128, 3 LDG.128, 9 STS and 25
//! others, also 1109. About 300 of a step's FFMAs write a register other than their
//! accumulator in both (sgemm_64, at 128 registers, does the same with 50 of 512): ptxas's
//! renaming, at no instruction's cost, not a sign of too few registers.
//!
//! An earlier `cp.async` form of this body (the same copies, each step's guarded by the
//! step count, 231 registers, 1126 instructions a step) ran slower on the H200: the
//! tuner timed it at 4096³ in 3619 µs against the register staging's 3064 (8192³: 28.8
//! against 24.4 ms). A's transposing copies are 4 bytes each: each of a warp's 8 copies
//! a step touches 16 rows of A, where the staging's 2 16-byte loads touch each row once.
//! This form, with no guard in the loop's copies, is the faster one: pinned (bench_gemm
//! --pin sgemm_256) under sustained load on an H100, 0.915× / 0.922× cuBLAS at 4096³ /
//! 8192³ against the register staging's 0.865× / 0.875× in the same run (an earlier run:
//! 0.904× / 0.925× against 0.862× / 0.875×). A form whose copies of A read whole rows
//! (4 rows × 8 k a warp copy; 251 registers, 1135 instructions a step) ran at 0.893× /
//! 0.921× in that earlier run. On the H200 (2026-12-05, one call): pinned 0.926× / 0.934×,
//! and the plain call after the tuner's search, which picks this instance at both sizes,
//! 0.933× / 0.936× (docs/performance.md).
//!
//! A is stored transposed (k-major, rows padded by 4 floats) so a thread's 4 rows are one
//! vector; a warp's 4-byte copies of it (16 rows at k and k + 4) land in 32 banks
//! (unpadded, the two k would share banks: `cp.async` writes shared memory through the
//! same banks as a store).

use oxide_device::mma::{cp_async_ca_zfill, cp_async_cg_zfill};
use oxide_device::prelude::*;

use crate::k_steps::k_loop;
use crate::vec16::{Vec4, aligned16};

/// The tile's rows (the instance's BM), columns and k-depth.
pub(crate) const TALL_BM: usize = 256;
const BN: usize = 128;
const BK: usize = 8;
/// Shared-memory stages: a step computes from one while the copies of the next
/// `STAGES - 1` fly.
const STAGES: usize = 3;
/// Row length of the transposed A tile: 4 floats of padding put the lanes that copy k
/// and k + 4 of one row 16 banks apart, and keep rows 16-byte aligned.
const LDA: usize = TALL_BM + 4;
const A_STAGE: usize = BK * LDA;
const B_STAGE: usize = BK * BN;

/// `c = a · b` for the block at (`blockIdx.y`, `blockIdx.x`) of a grid of 256×128 tiles;
/// 256 threads.
#[inline(always)]
pub(crate) fn sgemm_tall(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, m: u32, n: u32, k: u32) {
    #[unsafe(link_section = ".oxide.shared")]
    static A_S: SharedArray<f32, { STAGES * A_STAGE }> = SharedArray::UNINIT;
    #[unsafe(link_section = ".oxide.shared")]
    static B_S: SharedArray<f32, { STAGES * B_STAGE }> = SharedArray::UNINIT;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    let tid = thread::threadIdx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (m0, n0) = (
        thread::blockIdx_y() as usize * TALL_BM,
        thread::blockIdx_x() as usize * BN,
    );
    let b_vec = n.is_multiple_of(4) && aligned16(b.as_ptr());
    // k is cut into steps of 8 with the ragged one first: step t holds k indices
    // `8t - pad..+8`, so only step 0 has indices to zero-fill (those below 0) and the
    // other steps' copies need no bound on k.
    let pad = k.div_ceil(BK) * BK - k;
    // This thread's part of a step's copies. A: rows `tid / 2 + 128j` (j < 2), k columns
    // `4 (tid % 2)..+4` (a warp reads 16 rows × 32 bytes). Rows past m are read from row
    // m - 1 instead: they only feed rows of c that are not stored, so they need no
    // zeros. B: k row `tid / 32`, columns `4 (tid % 32)..+4` (a warp reads 512
    // contiguous bytes); columns past n likewise only feed columns of c that are not
    // stored: the vector reads the last 4 columns instead, the element path zero-fills.
    // A copy that reads no bytes (`src_bytes` 0) zero-fills and does not dereference its
    // source, which may then point outside the array.
    let a_col = 4 * (tid % 2);
    let a_row = move |j: usize| tid / 2 + 128 * j;
    let a_src = move |j: usize| {
        let row = (m0 + a_row(j)).min(m - 1);
        a.as_ptr().wrapping_add(row * k + a_col).wrapping_sub(pad)
    };
    let (b_row, b_col) = (tid / 32, (tid % 32) * 4);
    let b_src = {
        let col = if b_vec {
            (n0 + b_col).min(n - 4)
        } else {
            n0 + b_col
        };
        b.as_ptr()
            .wrapping_add(b_row * n + col)
            .wrapping_sub(pad * n)
    };
    // This thread's destinations in stage 0, as integers, so that a stage's copies differ
    // by constants from one 32-bit shared offset (with pointer arithmetic LLVM moves the
    // constants under the generic-to-shared conversion: one register a copy).
    let a_dst0 = A_S.as_mut_ptr() as usize + 4 * (a_col * LDA + a_row(0));
    let b_dst0 = B_S.as_mut_ptr() as usize + 4 * (b_row * BN + b_col);
    let b_step = 4 * BK * n;
    // Step `t`'s copies into stage `stage` (the caller commits the group). `first`:
    // step 0, whose k indices below 0 zero-fill; the others need no bound on k. `b_vec`
    // as above, a constant in each of the two k loops.
    let copy = move |t: u32, stage: usize, first: bool, b_vec: bool| {
        let t = t as usize;
        let (a_dst, b_dst) = (a_dst0 + stage * 4 * A_STAGE, b_dst0 + stage * 4 * B_STAGE);
        // SAFETY: each thread copies into its own slots of stage `stage`, which no thread
        // reads between the barrier before this call and the wait + barrier after its
        // group lands; a copy that reads bytes reads them in bounds (rows clamped to
        // m - 1, k indices in 0..k for the steps that exist, B's columns below n), 4-byte
        // aligned (B's vector: 16-byte, as `b_vec` checked).
        unsafe {
            unrolled!(for j in [0, 1] {
                let src = a_src(j).wrapping_add(t * BK);
                unrolled!(for e in [0, 1, 2, 3] {
                    let bytes = if !first || a_col + e >= pad { 4 } else { 0 };
                    let dst = (a_dst + 4 * (e * LDA + 128 * j)) as *mut f32;
                    cp_async_ca_zfill(dst, src.wrapping_add(e), bytes);
                });
            });
            // In bytes: t times a step's stride (a 32- by 64-bit product; scaling t * BK * n
            // elements by 4 after it cost two instructions a step more).
            let src = (b_src as usize + t * b_step) as *const f32;
            let row_ok = !first || b_row >= pad;
            if b_vec {
                let bytes = if row_ok { 16 } else { 0 };
                cp_async_cg_zfill(b_dst as *mut Vec4, src as *const Vec4, bytes);
            } else {
                unrolled!(for e in [0, 1, 2, 3] {
                    let bytes = if row_ok && n0 + b_col + e < n { 4 } else { 0 };
                    cp_async_ca_zfill((b_dst + 4 * e) as *mut f32, src.wrapping_add(e), bytes);
                });
            }
        }
    };
    // This thread's piece of c: rows `4ty + 64g..+4` (g < 4), columns `4tx + 64h..+4`
    // (h < 2); a warp is 8 tx by 4 ty.
    let tx = (warp % 2) * 8 + lane % 8;
    let ty = (warp / 2) * 4 + lane / 8;
    // The operands of k-row `kk` of stage `stage`: A's 16 rows, then B's 8 columns.
    let frag = move |stage: usize, kk: usize| -> [[f32; 4]; 6] {
        // SAFETY: stage `stage` landed (wait + barrier) and is not copied into again before
        // the next barrier; offsets are multiples of 4 floats.
        unsafe {
            let av = A_S.as_ptr().add(stage * A_STAGE + kk * LDA + 4 * ty) as *const Vec4;
            let bv = B_S.as_ptr().add(stage * B_STAGE + kk * BN + 4 * tx) as *const Vec4;
            [
                av.read().0,
                av.add(16).read().0,
                av.add(32).read().0,
                av.add(48).read().0,
                bv.read().0,
                bv.add(16).read().0,
            ]
        }
    };
    let mut acc = [[0.0f32; 8]; 16];
    // One k-row: the 16×8 products of A's 16 rows and B's 8 columns in `cur`.
    let mut fma = |cur: &[[f32; 4]; 6]| {
        unrolled!(
            for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                let a_i = cur[i / 4][i % 4];
                unrolled!(for j in [0, 1, 2, 3, 4, 5, 6, 7] {
                    acc[i][j] = a_i.mul_add(cur[4 + j / 4][j % 4], acc[i][j]);
                });
            }
        );
    };
    // One loop for each of B's paths: in one, a step issued both (the element path's
    // four copies predicated off on the vector path, and their four predicates held).
    if b_vec {
        let copy = |t, stage, first| copy(t, stage, first, true);
        k_loop!(async STAGES, k, [0, 1, 2, 3, 4, 5, 6, 7], copy, frag, fma);
    } else {
        let copy = |t, stage, first| copy(t, stage, first, false);
        k_loop!(async STAGES, k, [0, 1, 2, 3, 4, 5, 6, 7], copy, frag, fma);
    }
    let c_vec = n.is_multiple_of(4) && aligned16(c.as_mut_ptr());
    let cp = c.as_mut_ptr();
    unrolled!(
        for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let r = m0 + (i / 4) * 64 + ty * 4 + i % 4;
            unrolled!(for h in [0, 1] {
                let col = n0 + h * 64 + tx * 4;
                let v = [
                    acc[i][h * 4],
                    acc[i][h * 4 + 1],
                    acc[i][h * 4 + 2],
                    acc[i][h * 4 + 3],
                ];
                // SAFETY: every element of c belongs to exactly one thread of one block (its
                // row and column above); bounds checked against m and n, and
                // `c.len() >= m * n` was asserted.
                unsafe {
                    if r < m && c_vec && col + 4 <= n {
                        (cp.add(r * n + col) as *mut Vec4).write(Vec4(v));
                    } else if r < m {
                        unrolled!(for e in [0, 1, 2, 3] {
                            if col + e < n {
                                cp.add(r * n + col + e).write(v[e]);
                            }
                        });
                    }
                }
            });
        }
    );
}
