//! The consumers of `gemm_sm90`'s swapped instances (`BM` 64 and 16), for products with
//! few rows (decode and prefill GEMMs: m = 16 or 128 tokens against an LLM weight).
//!
//! wgmma's products are 64 rows tall. A 128-row tile of 16 rows of `c` multiplies 112
//! rows of zeros: eight times the tensor work, which on an H200 bounded the 16-row
//! GEMMs before memory did (a 16×14336×4096 product in 56 blocks ran at the tensor
//! cores' rate for 128 rows). A swapped instance computes `cᵀ = bᵀ · aᵀ` instead: `b`'s
//! columns are wgmma's rows (each consumer warpgroup takes `BN / 2` of the tile's `BN`
//! columns, `BN / 128` products of `m64nBMk16`, b's stage read MN-major: the transpose
//! immediate) and the tile's `BM` rows of `c` are wgmma's `BM` columns (a's stage,
//! K-major). So the two warpgroups split the columns instead of leaving one idle; a
//! 16-row tile (`m64n16k16`) computes no zeros for a 16-row product, and its stage is
//! a's 2 KiB box beside b's, so the ring holds 10 stages of a 128-wide tile: the depth a
//! weight-streaming product needs (cuBLAS's kernel for 16×4096×14336 on the H200,
//! `nvjet_sm90_tst_128x16_64x11`, is such a tile with 11 stages).
//!
//! The producer and the ring are `gemm_sm90`'s (a's box is `BM` rows, `a(rows = BM)`;
//! the tile's rows start at `BM · tm`). The results are stored straight from registers, one element at
//! a time (a warp stores 8 neighbouring columns of 4 rows at once): c has few rows, and
//! its bytes are small beside b's. A split instance (`SPLIT > 1`) adds the cluster's
//! partial tiles up as the others do (gemm_sm90_split.rs's `reduce_swapped`).

use crate::gemm_sm90::{B_BOX_BYTES, RingAt};
use crate::gemm_sm90_split as split;
use oxide_device::barrier::{mbarrier_arrive, mbarrier_try_wait_parity};
use oxide_device::prelude::*;
use oxide_device::wgmma::{
    Swizzle, smem_descriptor, wgmma_commit_group, wgmma_fence, wgmma_m64n16k16_f32_bf16,
    wgmma_m64n64k16_f32_bf16, wgmma_wait_group, wgmma_wait_group_acc,
};

/// A warpgroup's accumulators: `BN / 128` products of `TM / 2` a thread (32 for 64 rows
/// of c, 8 for 16), product `i` from element `i · TM / 2`.
type Acc = [f32; 64];

/// The first and the second product's accumulators of a 64-row tile.
#[inline(always)]
fn lo(acc: &mut Acc) -> &mut [f32; 32] {
    acc.first_chunk_mut::<32>().expect("64 >= 32")
}
#[inline(always)]
fn hi(acc: &mut Acc) -> &mut [f32; 32] {
    acc.last_chunk_mut::<32>().expect("64 >= 32")
}
/// The first and the second product's accumulators of a 16-row tile.
#[inline(always)]
fn lo8(acc: &mut Acc) -> &mut [f32; 8] {
    acc.first_chunk_mut::<8>().expect("64 >= 8")
}
#[inline(always)]
fn hi8(acc: &mut Acc) -> &mut [f32; 8] {
    lo(acc)[8..].first_chunk_mut::<8>().expect("32 >= 16")
}

/// The tiles a block (or cluster) walks: `first`, `+ step`, … below `count`, each
/// `(tile-row, tile-column)` by `at`.
pub struct Walk<F: Fn(usize) -> (usize, usize)> {
    pub first: usize,
    pub step: usize,
    pub count: usize,
    pub at: F,
}

/// A consumer thread's loop over its tiles (`ct` in `0..256`), each over `slabs` stages.
///
/// # Safety
/// All 256 consumer threads call it together, with the ring the producer fills in the
/// same order (`gemm_sm90`'s body: the same tiles, `slabs` stages each); `c` is `m × n`,
/// row-major, and no other block writes a tile's elements; with `SPLIT > 1`, `smem` is
/// the ring's first byte and the cluster's blocks walk the same tiles
/// (`split::reduce_swapped`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn consume<T: Copy, W: Copy, const BN: usize, const SPLIT: usize, const TM: usize>(
    ring: RingAt,
    slabs: usize,
    walk: Walk<impl Fn(usize) -> (usize, usize)>,
    c: *mut T,
    (m, n): (usize, usize),
    ct: usize,
    pair: impl Fn(f32, f32) -> W,
) {
    // 64-wide tiles (128 rows only) instantiate this body too, in gemm_sm90_body's branch
    // for fewer rows, which they never take (a const generic argument cannot be chosen
    // from another); they must not run it: their BN / 2 columns would be no wgmma's rows.
    const { assert!((BN == 256 || BN == 128 || BN == 64) && (TM == 64 || TM == 16)) };
    debug_assert!(BN >= 128);
    let half = ct / 128;
    let (w, lane) = ((ct % 128) / 32, ct % 32);
    let (mut s, mut phase) = (0usize, 0u32);
    let mut t = walk.first;
    // SAFETY (the whole body): as the caller promised; a stage is read by wgmma only
    // after its `full` phase, and given back once the wgmmas that read it retired.
    unsafe {
        while t < walk.count {
            let (tm, tn) = (walk.at)(t);
            let mut acc: Acc = [0.0; 64];
            let mut held: Option<usize> = None;
            for _ in 0..slabs {
                while !mbarrier_try_wait_parity(ring.full(s), phase) {}
                // This warpgroup's columns of b: boxes `half · BN/128` on (64 columns
                // each), 128-byte rows of 64 columns per k, MN-major (8-k groups 1024
                // bytes apart). a's rows: K-major, as gemm_sm90's A.
                let first_box = half * (BN / 128);
                let db = smem_descriptor(
                    ring.b(s).add(first_box * B_BOX_BYTES),
                    B_BOX_BYTES as u32,
                    1024,
                    Swizzle::B128,
                );
                let da = smem_descriptor(ring.a(s), 16, 1024, Swizzle::B128);
                wgmma_fence();
                unrolled!(for kk in [0, 1, 2, 3] {
                    // 16 k: 16 rows (2048 bytes) of b, 32 bytes along a's rows.
                    let (db, da) = (db + ((kk * 2048) >> 4) as u64, da + ((kk * 32) >> 4) as u64);
                    let db2 = db + (B_BOX_BYTES >> 4) as u64;
                    if TM == 64 {
                        wgmma_m64n64k16_f32_bf16::<1, 0>(lo(&mut acc), db, da, true);
                        if BN == 256 {
                            wgmma_m64n64k16_f32_bf16::<1, 0>(hi(&mut acc), db2, da, true);
                        }
                    } else {
                        wgmma_m64n16k16_f32_bf16::<1, 0>(lo8(&mut acc), db, da, true);
                        if BN == 256 {
                            wgmma_m64n16k16_f32_bf16::<1, 0>(hi8(&mut acc), db2, da, true);
                        }
                    }
                });
                wgmma_commit_group();
                // As gemm_sm90's consumers: the stage before this one is read by retired
                // wgmmas; one lane a warp gives it back.
                wgmma_wait_group::<1>();
                if let (Some(p), 0) = (held, lane) {
                    let _ = mbarrier_arrive(ring.empty(p));
                }
                held = Some(s);
                s += 1;
                if s == ring.stages {
                    s = 0;
                    phase ^= 1;
                }
            }
            // (Naming the first 32 where fewer are used keeps zeros in a few registers.)
            if BN == 256 && TM == 64 {
                wgmma_wait_group_acc::<0>(&mut acc);
            } else {
                wgmma_wait_group_acc::<0>(lo(&mut acc));
            }
            if let (Some(p), 0) = (held, lane) {
                let _ = mbarrier_arrive(ring.empty(p));
            }
            let (y0, x0) = (tm * TM, tn * BN);
            if SPLIT > 1 {
                let tile = split::Tile { c, m, n, y0, x0 };
                split::reduce_swapped::<T, W, BN, SPLIT, TM>(&acc, ring.a(0), ct, tile, &pair);
                t += walk.step;
                continue;
            }
            // Result `4j + e` of product `i`: column `16w + l/4 + 8(e/2)` of the
            // warpgroup's `64 i`.., row `8j + 2(l%4) + e%2` of the tile (wgmma's layout).
            unrolled!(for i in [0, 1] {
                if i < BN / 128 {
                    unrolled!(for j in [0, 1, 2, 3, 4, 5, 6, 7] {
                        if j < TM / 8 {
                            unrolled!(for e in [0, 1, 2, 3] {
                                let x =
                                    x0 + half * (BN / 2) + 64 * i + 16 * w + lane / 4 + 8 * (e / 2);
                                let y = y0 + 8 * j + 2 * (lane % 4) + e % 2;
                                if y < m && x < n {
                                    // The pair's first element is the value rounded alone.
                                    let v = pair(acc[i * (TM / 2) + 4 * j + e], 0.0);
                                    let first = (&v as *const W).cast::<T>().read();
                                    c.add(y * n + x).write(first);
                                }
                            });
                        }
                    });
                }
            });
            t += walk.step;
        }
    }
}
