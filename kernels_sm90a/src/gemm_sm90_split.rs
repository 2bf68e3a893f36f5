//! The split-K epilogue of `gemm_sm90`'s instances with `SPLIT > 1` (the module docs of
//! `gemm_sm90` explain the split): the blocks of a cluster computed partial sums of one
//! tile of `c` over interleaved k-slabs; here they add them up through distributed
//! shared memory and store the tile.
//!
//! Protocol, per tile, for the 256 consumer threads of each block (the producer
//! warpgroup passes the same two cluster barriers, so that it issues the next tile's
//! loads, which land where the partial was, only after every block read it):
//!
//! 1. `bar.sync 3, 256`: both consumer warpgroups' wgmmas have retired (each waited for
//!    its own), so the stages, which the partial overwrites, are no longer read.
//! 2. Each thread writes its accumulators, the block's partial tile, as f32 into this
//!    block's stage memory (`P`: 128 rows of `BN` f32, 16-byte chunk `c` of row `r` at
//!    chunk `c ^ (r % 8)`, so that a warp's stores and loads hit every bank).
//! 3. Cluster barrier (arrive: release; wait: acquire): every block's partial is written
//!    and visible to the cluster.
//! 4. The tile's 16-byte chunks in the rows inside `m`, counted row by row, are dealt
//!    to the ranks in `SPLIT` runs as even as whole chunks allow (rank `r` owns chunks
//!    `[r · total / SPLIT, (r+1) · total / SPLIT)`: any `SPLIT`, 3 included, and each
//!    run's stores walk rows of `c` contiguously): for each chunk of its run, a rank reads
//!    the chunk from every block's `P` (`mapa.shared::cluster` + `ld.shared::cluster.v4.f32`,
//!    its own included), adds them in rank order (the same f32 sums on every run), and
//!    stores the four results (f32, or two `cvt.rn.bf16x2.f32` pairs) straight to `c`,
//!    dropping columns past `n`.
//! 5. `fence.proxy.async` (the next writes there are the TMA's), then the second cluster
//!    barrier: no block reads any `P` any more, so each may load its next tile into its
//!    stages, and none exits while another still reads its shared memory.
//!
//! Every thread of a block passes the two barriers once per tile, and the blocks of a
//! cluster walk the same tiles, so the barriers' phases stay paired.

use oxide_device::barrier::{fence_proxy_async_shared_cta, named_barrier_sync};
use oxide_device::cluster;
use oxide_device::prelude::*;

/// Rows of a tile.
const BM: usize = 128;
/// Consumer threads (two warpgroups).
const THREADS: usize = 256;
/// Chunks each thread reduces at once: `UNROLL × SPLIT` 16-byte loads in flight.
const UNROLL: usize = 4;

/// Shared memory the partial tile takes (it lies over the ring's stages).
pub const fn partial_bytes(bn: usize) -> usize {
    BM * bn * 4
}

/// Byte offset of `P`'s 16-byte chunk `chunk` of row `row` (the swizzle above).
#[inline(always)]
fn at(row: usize, chunk: usize, bn: usize) -> usize {
    row * bn * 4 + ((chunk ^ (row % 8)) * 16)
}

/// Both cluster barriers' halves for a thread that has no part in the sums (the
/// producer warpgroup): steps 3 and 5 of the protocol.
#[inline(always)]
pub fn pass_tile() {
    cluster::cluster_sync();
    cluster::cluster_sync();
}

/// Where a tile's sums go: `c`'s first element, its extents, and the tile's origin.
pub struct Tile<T> {
    pub c: *mut T,
    pub m: usize,
    pub n: usize,
    pub y0: usize,
    pub x0: usize,
}

/// Steps 1 to 5 for one consumer thread (`ct` in `0..256`: `half` is `ct / 128`), whose
/// accumulators hold its part of this block's partial tile, in wgmma's layout.
///
/// # Safety
/// Every consumer thread of every block of the cluster calls it once per tile, for the
/// same tile, after its last wgmma retired; `p` is this block's shared memory, 1024-byte
/// aligned, [`partial_bytes`]`(BN)` of it that no TMA load writes until the producer has
/// passed its [`pass_tile`]; `tile.c` is `m × n`, row-major, 16-byte aligned with `n` a
/// multiple of 8, and no other block writes this tile's elements.
#[inline(always)]
pub unsafe fn reduce<T: Copy, W: Copy, const BN: usize, const SPLIT: usize>(
    acc: &[f32; 128],
    p: *mut u8,
    ct: usize,
    tile: Tile<T>,
    pair: impl Fn(f32, f32) -> W,
) {
    let rows = (tile.m - tile.y0).min(BM);
    // 2. Rows at or past m are never read: a warpgroup wholly below m skips them.
    let write = |Lanes { half, w, lane }: Lanes| {
        if half * 64 < rows {
            unrolled!(for j in [
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                23, 24, 25, 26, 27, 28, 29, 30, 31
            ] {
                if j < BN / 8 {
                    unrolled!(for h in [0, 1] {
                        let r = half * 64 + 16 * w + lane / 4 + 8 * h;
                        let col = 8 * j + 2 * (lane % 4);
                        let (x, y) = (acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                        // One 8-byte store a pair (`st.shared.v2`-sized), x first.
                        // SAFETY: inside P (the caller's promise), this thread's chunk.
                        unsafe {
                            let q = p.add(at(r, col / 4, BN) + (col % 4) * 4) as *mut u64;
                            q.write(u64::from(x.to_bits()) | u64::from(y.to_bits()) << 32);
                        }
                    });
                }
            });
        }
    };
    // SAFETY: as the caller promised.
    unsafe { sum_tile::<T, W, BN, SPLIT>(p, ct, tile, rows, pair, write) }
}

/// Steps 1 to 5 for a consumer thread of a swapped instance (`BM = TM`, 64 or 16:
/// gemm_sm90_swap.rs), whose accumulators hold its warpgroup's `BN / 2` columns of `c`
/// (wgmma's rows) for the tile's `TM` rows of `c` (wgmma's columns): `BN / 128` products
/// of `m64nTM`, `TM / 2` results each. `P` is laid out as [`reduce`]'s, rows being rows
/// of `c`.
///
/// # Safety
/// As [`reduce`].
#[inline(always)]
pub unsafe fn reduce_swapped<
    T: Copy,
    W: Copy,
    const BN: usize,
    const SPLIT: usize,
    const TM: usize,
>(
    acc: &[f32; 64],
    p: *mut u8,
    ct: usize,
    tile: Tile<T>,
    pair: impl Fn(f32, f32) -> W,
) {
    let rows = (tile.m - tile.y0).min(TM);
    // 2. One f32 a store: a warp's lanes cover 8 columns of 4 rows, which the swizzle
    // puts in 32 different banks. Rows at or past m are never read.
    let write = |Lanes { half, w, lane }: Lanes| {
        unrolled!(for i in [0, 1] {
            if i < BN / 128 {
                unrolled!(for j in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if j < TM / 8 {
                        unrolled!(for e in [0, 1, 2, 3] {
                            let col = half * (BN / 2) + 64 * i + 16 * w + lane / 4 + 8 * (e / 2);
                            let row = 8 * j + 2 * (lane % 4) + e % 2;
                            if row < rows {
                                // SAFETY: inside P (the caller's promise), this thread's.
                                unsafe {
                                    let at = at(row, col / 4, BN) + (col % 4) * 4;
                                    (p.add(at) as *mut f32).write(acc[i * (TM / 2) + 4 * j + e]);
                                }
                            }
                        });
                    }
                });
            }
        });
    };
    // SAFETY: as the caller promised.
    unsafe { sum_tile::<T, W, BN, SPLIT>(p, ct, tile, rows, pair, write) }
}

/// A consumer thread's place: its warpgroup (`half`), its warp in it and its lane.
#[derive(Clone, Copy)]
struct Lanes {
    half: usize,
    w: usize,
    lane: usize,
}

/// Steps 1 to 5: the barrier, `write` (step 2: this thread's part of the block's partial
/// tile, its first `rows` rows, into `P`), then the sums.
///
/// # Safety
/// As [`reduce`]; `write` writes only this thread's part of `P`.
#[inline(always)]
unsafe fn sum_tile<T: Copy, W: Copy, const BN: usize, const SPLIT: usize>(
    p: *mut u8,
    ct: usize,
    tile: Tile<T>,
    rows: usize,
    pair: impl Fn(f32, f32) -> W,
    write: impl FnOnce(Lanes),
) {
    const { assert!(core::mem::size_of::<W>() == 2 * core::mem::size_of::<T>()) };
    const { assert!(SPLIT <= 8, "a rank reads at most 8 peers") };
    // SAFETY (the whole body): as `reduce`'s caller promised; each chunk of `P` is read
    // only after the cluster barrier that follows the writes; each element of c is
    // written by one thread of one block (its rank's run, its chunk).
    unsafe {
        // 1.
        named_barrier_sync(3, THREADS as u32);
        let wg_tid = ct % 128;
        write(Lanes {
            half: ct / 128,
            w: wg_tid / 32,
            lane: wg_tid % 32,
        });
        // 3.
        cluster::cluster_sync();
        // 4. This rank's run of chunks, UNROLL at a time per thread; a chunk past the
        // run's end is read as its first (every thread's loads then go out together) and
        // not stored.
        let rank = cluster::block_rank() as usize;
        let per_row = BN / 4;
        let total = rows * per_row;
        let (lo, hi) = (rank * total / SPLIT, (rank + 1) * total / SPLIT);
        let mut i = lo + ct;
        while i < hi {
            let mut sums = [[0.0f32; 4]; UNROLL];
            let mut offsets = [0usize; UNROLL];
            unrolled!(for u in [0, 1, 2, 3] {
                let idx = i + u * THREADS;
                let idx = if idx < hi { idx } else { lo };
                offsets[u] = at(idx / per_row, idx % per_row, BN);
            });
            unrolled!(for peer in [0, 1, 2, 3, 4, 5, 6, 7] {
                if peer < SPLIT {
                    unrolled!(for u in [0, 1, 2, 3] {
                        let v =
                            cluster::dsmem_read_f32x4(p.add(offsets[u]) as *const f32, peer as u32);
                        unrolled!(for e in [0, 1, 2, 3] {
                            sums[u][e] += v[e];
                        });
                    });
                }
            });
            unrolled!(for u in [0, 1, 2, 3] {
                let idx = i + u * THREADS;
                let (y, x) = (tile.y0 + idx / per_row, tile.x0 + (idx % per_row) * 4);
                // n is a multiple of 8: a chunk's four columns are all in or all out.
                if idx < hi && x < tile.n {
                    let out = tile.c.add(y * tile.n + x) as *mut W;
                    out.write(pair(sums[u][0], sums[u][1]));
                    out.add(1).write(pair(sums[u][2], sums[u][3]));
                }
            });
            i += UNROLL * THREADS;
        }
        // 5.
        fence_proxy_async_shared_cta();
        cluster::cluster_sync();
    }
}
