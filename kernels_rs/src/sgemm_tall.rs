//! [`sgemm`](crate::sgemm)'s 256-row instance (`sgemm_256`): a 256×128 tile of `c` a
//! block, 16×8 of it a thread.
//!
//! Why a second body: the 128-row body reads 4 shared-memory vectors for 64 FMAs a k-row.
//! Here a thread reads 6 for 128 FMAs, and a block reads 25 % fewer bytes from L2 per FMA
//! (384 against 256 k-column elements for twice the products). A warp's lanes are 8 tile
//! columns by 4 tile rows (the 128-row body's are 16 by 2), so each shared-memory read of
//! a k-row is one 128- or 64-byte run: one wavefront, not two. The 128 accumulators
//! leave room for few other registers: k steps 8 at a time, so a step's global loads
//! stage through 12 registers (and two buffers of 8 k fit the 48 KiB of static shared
//! memory, where 16 k would not).
//!
//! Local ptxas (sm_90): 255 registers, no spills; a whole step on the vector path is 1024
//! FFMA, 48 LDS.128, 9 STS, 3 LDG.128 and 25 others: 92 % of its issue slots are FFMA
//! (the 128-row body: 64 LDS.128 and about 120 others for its 1024 FFMA of 16 k). With
//! the checked loads in every step it was 82 others (89 %). A 3-stage `cp.async` pipeline instead of the
//! staging was tried twice. With 64-bit `cvta`d addresses each copy cost about 9
//! instructions. With 32-bit shared offsets (as `cp_async` takes them now) a step was
//! 1024 FFMA, 48 LDS.128, 9 LDGSTS and about 45 others (231 registers, no spills), yet the
//! H200 tuner timed it at 4096³ in 3619 µs against this body's 3064 (8192³: 28.8 against
//! 24.4 ms). A's transposing copies are 4 bytes each, 8 a thread a step, where the
//! staging loads them as 2 16-byte vectors.
//!
//! A is stored transposed (k-major, rows padded by 4 floats) so a thread's 4 rows are one
//! vector; a warp's 4-byte stores of it (16 rows, two groups of 4 k) fall in 32 banks.

use oxide_device::ldst;
use oxide_device::prelude::*;

use crate::k_steps::k_loop;
use crate::vec16::{Vec4, aligned16};

/// The tile's rows (the instance's BM), columns and k-depth.
pub(crate) const TALL_BM: usize = 256;
const BN: usize = 128;
const BK: usize = 8;
/// Row length of the transposed A tile: 4 floats of padding put the lanes that store k
/// and k + 4 of one row 16 banks apart, and keep rows 16-byte aligned.
const LDA: usize = TALL_BM + 4;
const A_STAGE: usize = BK * LDA;
const B_STAGE: usize = BK * BN;

/// `c = a · b` for the block at (`blockIdx.y`, `blockIdx.x`) of a grid of 256×128 tiles;
/// 256 threads.
#[inline(always)]
pub(crate) fn sgemm_tall(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, m: u32, n: u32, k: u32) {
    #[unsafe(link_section = ".oxide.shared")]
    static A_S: SharedArray<f32, { 2 * A_STAGE }> = SharedArray::UNINIT;
    #[unsafe(link_section = ".oxide.shared")]
    static B_S: SharedArray<f32, { 2 * B_STAGE }> = SharedArray::UNINIT;
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
    let a_vec = k.is_multiple_of(4) && aligned16(a.as_ptr());
    let b_vec = n.is_multiple_of(4) && aligned16(b.as_ptr());
    // This thread's part of a step's loads. A: rows `tid / 2 + 128j` (j < 2), k columns
    // `4 (tid % 2)..+4` (a warp reads 16 rows × 32 bytes). Rows past m are read from row
    // m - 1 instead: they only feed rows of c that are not stored, so they need no
    // zeros, and a load's only bound is on k. B: k row `tid / 32`, columns
    // `4 (tid % 32)..+4` (a warp reads 512 contiguous bytes).
    let a_col = 4 * (tid % 2);
    let a_row = move |j: usize| tid / 2 + 128 * j;
    let a_start = move |j: usize| (m0 + a_row(j)).min(m - 1) * k;
    let (b_row, b_col) = (tid / 32, (tid % 32) * 4);
    // One step's loads into registers: [A j = 0, A j = 1, B]; zeros past k and n.
    let load = move |k0: usize| -> [[f32; 4]; 3] {
        let mut v = [[0.0f32; 4]; 3];
        let col = k0 + a_col;
        unrolled!(for j in [0, 1] {
            let at = a_start(j) + col;
            if a_vec {
                if col < k {
                    // SAFETY: row < m, col + 4 <= k (k % 4 == 0), 16-byte aligned.
                    v[j] = unsafe { (a.as_ptr().add(at) as *const Vec4).read().0 };
                }
            } else {
                unrolled!(for e in [0, 1, 2, 3] {
                    if col + e < k {
                        v[j][e] = a[at + e];
                    }
                });
            }
        });
        let (r, col) = (k0 + b_row, n0 + b_col);
        if b_vec {
            if r < k && col < n {
                // SAFETY: in bounds (n % 4 == 0), 16-byte aligned.
                v[2] = unsafe { (b.as_ptr().add(r * n + col) as *const Vec4).read().0 };
            }
        } else {
            unrolled!(for e in [0, 1, 2, 3] {
                if r < k && col + e < n {
                    v[2][e] = b[r * n + col + e];
                }
            });
        }
        v
    };
    // A whole step on the vector path (k0 + BK <= k, k and n multiples of 4, aligned
    // arrays): three 16-byte loads and no bounds check. B's columns past n are read from
    // its last four instead, as A's rows past m are: they feed only columns of c that are
    // not stored.
    let b_cols = (n0 + b_col).min(n.saturating_sub(4));
    let load_whole = move |step: u32| -> [[f32; 4]; 3] {
        let k0 = step as usize * BK;
        // SAFETY: rows < m; A's columns k0 + a_col..+4 and B's row k0 + b_row lie below
        // k0 + BK <= k (the caller's `whole` steps); B's columns b_cols..+4 <= n (n % 4 ==
        // 0, so n >= 4); every offset is a multiple of 4 floats from a 16-byte-aligned
        // base (k and n multiples of 4).
        // (`ld.global.nc.v4` said outright: B's vector, stored on as it is, compiled to two
        // 8-byte loads.)
        unsafe {
            [
                ldst::load_nc_f32x4(a.as_ptr().add(a_start(0) + k0 + a_col)),
                ldst::load_nc_f32x4(a.as_ptr().add(a_start(1) + k0 + a_col)),
                ldst::load_nc_f32x4(b.as_ptr().add((k0 + b_row) * n + b_cols)),
            ]
        }
    };
    let store = move |buf: usize, v: [[f32; 4]; 3]| {
        // SAFETY: each thread writes its own slots of buffer `buf`, which no thread reads
        // until the barrier that follows.
        unsafe {
            let a_s = A_S.as_mut_ptr().add(buf * A_STAGE);
            unrolled!(for j in [0, 1] {
                unrolled!(for e in [0, 1, 2, 3] {
                    a_s.add((a_col + e) * LDA + a_row(j)).write(v[j][e]);
                });
            });
            let b_s = B_S.as_mut_ptr().add(buf * B_STAGE + b_row * BN + b_col);
            (b_s as *mut Vec4).write(Vec4(v[2]));
        }
    };
    // This thread's piece of c: rows `4ty + 64g..+4` (g < 4), columns `4tx + 64h..+4`
    // (h < 2); a warp is 8 tx by 4 ty.
    let tx = (warp % 2) * 8 + lane % 8;
    let ty = (warp / 2) * 4 + lane / 8;
    // The operands of k-row `kk` of buffer `buf`: A's 16 rows, then B's 8 columns.
    let frag = move |buf: usize, kk: usize| -> [[f32; 4]; 6] {
        // SAFETY: buffer `buf` was written before the last barrier and is not written
        // again before the next; offsets are multiples of 4 floats.
        unsafe {
            let av = A_S.as_ptr().add(buf * A_STAGE + kk * LDA + 4 * ty) as *const Vec4;
            let bv = B_S.as_ptr().add(buf * B_STAGE + kk * BN + 4 * tx) as *const Vec4;
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
    k_loop!(
        k,
        [0, 1, 2, 3, 4, 5, 6, 7],
        a_vec && b_vec,
        load_whole,
        |t: u32| load(t as usize * BK),
        store,
        frag,
        fma
    );
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
