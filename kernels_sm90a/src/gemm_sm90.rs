//! `c = a · b` for bf16 `a` (m×k) and `b` (k×n), row-major, f32 accumulation, on
//! Hopper's warpgroup tensor cores (`wgmma.mma_async`) with operands brought in by
//! the tensor-memory accelerator (TMA: `cp.async.bulk.tensor` completing on
//! `mbarrier`s). The same product as kernels_rs's mma.sync `gemm_bf16`: declared its
//! variant (`#[variant_of]`), which pyoxide runs for a plain call of `gemm_bf16` where it
//! takes the arguments (an sm_90 GPU, shapes and addresses TMA accepts) and `gemm_bf16`
//! everywhere else (other devices, the emulator, other shapes).
//!
//! # Shape of the computation
//!
//! A block of 384 threads is three warpgroups. Warpgroup 0 is the producer: one of
//! its threads keeps a ring of shared-memory stages full ([`RING_BYTES`], 192 KiB), each
//! one 64-wide slab of k: A's 128×64 box and B's 64×256 (four 64×64 boxes), 48 KiB, so
//! four stages ([`stages`]). Warpgroups 1
//! and 2 are consumers: each multiplies its 64 rows of the block's 128×256 tile of
//! `c` with `wgmma m64n256k16` (four per stage), accumulating 128 f32 a thread, and
//! hands the stage back. The tile's width `BN` is tuned: 128-wide tiles (`wgmma
//! m64n128k16`, 64 accumulators, two B boxes a stage: 32 KiB, so the same ring holds six
//! stages and more loads are in flight) make twice the tiles, for shapes with too few to
//! fill the SMs (m = 128 against a 4096-column weight is 16 tiles of 256 columns for 132
//! SMs), and 64-wide ones (`m64n64k16`, 32 accumulators, one B box: eight stages of 24
//! KiB) four times, 128 blocks with a split of 2, as cuBLAS tiles that shape (64×64
//! tiles, 128 blocks). The tuned tiles are the `(BN, BM)` pairs of the `#[tune]`: 256 and
//! 128 at every `BM`, 64 at 128 rows only (`BM` below). Blocks are persistent: each
//! walks tiles `blockIdx.x`, `+ gridDim.x`, … in a grouped order (a wave's tiles cover
//! a region about as tall as wide, [`group_rows`], sharing A and B in L2), so the
//! producer fills the next tile's stages while the consumers store the last one's
//! results. The producer gives up registers
//! (`setmaxnreg.dec` 40) and the consumers take them (`setmaxnreg.inc` 232). The k range
//! may be split too (`SPLIT`, below).
//!
//! # Split-K in a cluster (`SPLIT = 2, 3, 4`)
//!
//! A decode or prefill GEMM (m = 16 or 128 rows against a 4096×4096 or 4096×14336
//! weight) has 16 to 32 tiles for 132 SMs, and each tile walked all of k alone: 0.24 to
//! 0.33× cuBLAS on an H200. The tuned `SPLIT` (`#[tune(..., SPLIT = [1, 2, 3, 4])]`,
//! `#[cluster_launch(SPLIT)]`) gives each tile a thread-block cluster
//! of `SPLIT` blocks instead: the block of rank r walks the tile's k-slabs r, r + SPLIT,
//! r + 2·SPLIT, … (interleaved, so the ranks' counts differ by one at most; a rank past
//! the last slab has none and contributes zeros), accumulating its partial tile in
//! registers exactly as the unsplit kernel does; then the cluster adds the partials up
//! through distributed shared memory (`mapa` + `ld.shared::cluster`) and each rank stores
//! a `1/SPLIT` share of the tile: one launch, no workspace, no memset, no atomics, and
//! the same f32 sums on every run (added in rank order). gemm_sm90_split.rs has the
//! protocol. Why 3 beside 2 and 4: a cluster's blocks share a GPC, and with one block an
//! SM (230 KB of shared memory) the H200 holds 30 clusters of 4 at once
//! (`cuOccupancyMaxActiveClusters`) but 39 of 3, so the 32 tiles of a 128-row product
//! against a 4096-column weight (128 wide) ran in two waves of clusters of 4 and fit one
//! of 3 (96 blocks, each streaming 1/96 of the weight).
//!
//! The clusters are persistent as the blocks are: the launch is `min(tiles, clusters) ·
//! SPLIT` blocks, `clusters` being the fewer of SMs / SPLIT and the clusters the device
//! runs at once (pyoxide/_launch/clusters.py's `persistent_blocks`), and
//! cluster `%clusterid.x` walks tiles `%clusterid.x`, `+ %nclusterid.x`, …, its blocks in
//! step. Shared memory stays 230 560 bytes: a block's partial (128 × `BN` f32, 64 or
//! 128 KiB) lies over the ring's stages (192 KiB), which are idle once the tile's k loop is
//! done. So that the producer does not refill them under it, it passes the tile's two
//! cluster barriers with the consumers before it loads the next tile: a split instance
//! does not prefetch across tiles, which costs only where a cluster walks several tiles
//! (the tuner weighs it; the LLM shapes it is for have about one tile a cluster). Its
//! results go straight from registers to c (each thread 16 contiguous bytes of f32, or 8
//! of bf16, a chunk), since a rank's share of a row is narrower than the c map's box.
//!
//! # Swapped tiles for few rows (`BM = 64`)
//!
//! wgmma's products are 64 rows tall, so a 128-row tile of a 16-row product multiplies
//! 112 rows of zeros, and its second consumer warpgroup computes nothing but zeros. The
//! tuned `BM = 64` instances compute `cᵀ = bᵀ · aᵀ` instead (gemm_sm90_swap.rs): b's
//! columns are wgmma's rows (each consumer warpgroup takes half of the tile's `BN`), the
//! tile's 64 rows of c are wgmma's columns, so a 16-row product wastes 4× instead of 8×
//! with both warpgroups busy, and m = 128 makes twice the tiles. The producer and the
//! ring are the ones above (a's 128-row box, its first 64 rows read); the results go
//! straight from registers to c.
//!
//! `SPLIT = 1` is the kernel above, unchanged (the hand pick; no cluster, no barrier; the
//! instruction mix of its PTX is the old kernel's but for branch layout). ptxas, sm_90a,
//! every instance: 168 registers at launch (384 threads, one block an SM), no stack, no
//! spills; 16 named barriers unsplit (the epilogue's per-warpgroup ids), 4 split.
//!
//! # Epilogue
//!
//! Each consumer writes its 64×256 results to its own 16 KiB of shared memory, 16 KiB
//! of columns at a time (128 bf16 or 64 f32: two or four rounds), in the layout of two
//! TMA boxes of 64 rows × 128 bytes with the 128-byte swizzle, so that a warp's stores
//! hit 32 different banks. After a `fence.proxy.async` and a named barrier over its
//! 128 threads (`bar.sync 1 + half, 128`), one thread issues the two TMA stores
//! (`cp.async.bulk.tensor` shared → global) and commits them as a bulk group; before
//! the buffer is written again it waits for the group's reads
//! (`cp.async.bulk.wait_group.read 0`), and so does its last wait before the block
//! exits (the writes complete by the kernel's end without one). The global writes thus
//! run while the warpgroup goes on to its next round, tile or exit: at 8192³ this took
//! the kernel from
//! 0.85–0.88× to 0.95–0.99× cuBLAS against stores straight from registers
//! (docs/performance.md). A bf16 result is packed two sums at a time by one
//! `cvt.rn.bf16x2.f32` ([`cvt_bf16x2_f32`]); `bf16::from_f32`'s integer rounding (a
//! NaN test, an add and a shift a value: 1 072 SASS instructions a thread per tile in
//! the epilogue, against 238 with the packing) cost the bf16-result kernel 3 % of its
//! cycles (ncu, 8192³). The epilogue is not overlapped with the next tile's products:
//! packing a tile's sums to bf16 in registers, starting the next tile and storing them
//! after its second k-step (the bf16-result 128-row instances, H100) ran at the same
//! rate under sustained load (4096³: 671 TFLOP/s against 670), although ncu puts 5.5 %
//! of a consumer's tile time in the epilogue there.
//!
//! # Where the time goes (ncu, H200, 8192³, clocks locked)
//!
//! The tensor pipe is busy 96 % (f32 result) and 98 % (bf16 result) of the cycles an
//! SM is active, level with Triton's tutorial matmul (same 128×256×64 tile, 96 %). What
//! is left is the last partial wave: 2 048 tiles over 132 SMs is 15.5 tiles a block,
//! so 64 blocks idle through the last tile and 4–6 % of the elapsed cycles have an
//! idle SM. Splitting the last wave's k-range between blocks (stream-K, with a
//! workspace for the partial sums) would recover it; halving the tiles along m or n
//! would not (4 096 halves over 132 SMs still take 32 rounds, 16 tiles' time).
//! Timed back to back, a bf16 GEMM at this size also runs the card into its 700 W
//! limit within a second, after which the clock, not the kernel, sets the pace: work
//! per joule counts (`scripts/bench_gemm` times each row after a lead-in of its own
//! launches, so a sample runs at the clock the row itself settles to).
//! At ncu's locked clocks (H100) this kernel takes cuBLAS's time: 216.2 µs against
//! 216.2 at 4096³ (f32 result), 666.9 against 669.5 at 4096×14336×4096 (bf16 result;
//! 500 MB read from DRAM against cuBLAS's 572). Timed alone, 2 s back to back after 1 s
//! of lead-in with nvidia-smi sampling beside it (H100, 2026-12-07, bf16 result), the
//! card draws 687-698 W under either kernel, this one settles within 3.1 % of cuBLAS's
//! clock and runs at 0.997-0.999× cuBLAS at 4096³ and 0.988-0.990× at
//! 4096×14336×4096. Sharing A between two blocks by TMA multicast (cuBLAS's 256×128
//! tiles in clusters of 2, an unmerged branch's build) cuts the L2 traffic but not the
//! energy: 145.3 mJ a 4096³ call against 141.9-142.9 for that build's 256-wide tile.
//! In bench_gemm's rotation (its cells' rows paired, NVML's power read every 5 ms; H100,
//! 2026-12-07) this kernel spends cuBLAS's energy a call within 0-3.5 % at 4096³, 8192³
//! and 4096×14336×4096 (140 against 141 mJ at 4096³, bf16 result). At 4096³ and 8192³
//! it yet draws 11-27 W less than cuBLAS's kernel and runs 2-5 % below its clock (677 W
//! at 1344 MHz against 704 W at 1415): there the mean power is not what holds this
//! kernel's clock down. A second H100 run of the same harness (8192³ only, the same day)
//! found no such gap: 1371 MHz at 715 W against cuBLAS's 1367 at 705 (f32 result, 1.004×),
//! 1367 at 714 against 1382 at 693 (bf16 result, 1.012×), and NVML gave the power cap
//! (`sw_power_cap`) as the clock's reason in every reading of both kernels' windows, no
//! thermal or hardware slowdown. A ping-pong schedule (each consumer warpgroup its own
//! 128×128 tile, the two taking turns so that one's products run under the other's
//! epilogue; an unmerged branch's build) ran at a higher clock in that run (1456-1464 MHz)
//! but at 0.62-0.66× cuBLAS: it moves a third more bytes from L2 to shared memory a FLOP,
//! and one warpgroup issues products at a time. It was not profiled further.
//!
//! Instructions (ncu, H100, 4096³, bf16 result): this kernel issued 239 k warp
//! instructions an SM against cuBLAS's 129 k (`nvjet_sm90_tst_256x128_64x4_1x2`), 83 a
//! k-slab in the consumers' loop against cuBLAS's 40-54 for the same four products:
//! each slab built its wgmma descriptors from the stage's address again in 64-bit
//! registers and moved them into uniform ones. The loop now moves stage 0's
//! descriptors on by a 32-bit add (`SmemDescriptor`), counts in 32 bits, and takes
//! its warpgroup from lane 0 (a shuffle, so ptxas keeps A's descriptors uniform): 53
//! a slab. In one bench_gemm call (H100, 2026-12-07, paired order, the two builds'
//! rows in turn) that took 4096³ from 206.1 to 203.5 µs (bf16 result; f32 result
//! 216.3 → 215.6) and 8192³ from 1607.5 to 1586.0 µs (f32 result 1671.5 → 1665.6):
//! 0.3-1.3 % faster, under the 2 % the same cell moves between runs, so no more
//! than "not slower".
//!
//! # Shared-memory layouts
//!
//! TMA writes each box with the 128-byte swizzle (16-byte chunk `c` of row `r` goes
//! to chunk `c ^ (r % 8)`), and the wgmma descriptors read it with the same swizzle:
//! A is K-major (128-byte rows of 64 k; 8-row groups 1024 bytes apart, the stride
//! byte offset), B is N-major (128-byte rows of 64 n per k; 8-k groups 1024 bytes
//! apart, the stride byte offset; the next 64 columns 8 KiB on, the leading byte
//! offset). Each stage starts 1024-byte aligned, as the swizzle requires. Stepping
//! k by 16 inside a stage moves A's descriptor 32 bytes along its rows and B's 16
//! rows (2048 bytes) down.
//!
//! # Tails
//!
//! The tensor maps carry m, n and k, and TMA fills the parts of a box outside them
//! with zeros, so a partial tile multiplies zeros; TMA stores drop the parts of a box
//! outside m×n. B boxes wholly right of n are not loaded at all, and c boxes wholly
//! outside m×n are not stored.

use crate::gemm_sm90_split as split;
use crate::gemm_sm90_swap as swap;
use oxide_device::barrier::{
    Barrier, fence_proxy_async_shared_cta, mbarrier_arrive, mbarrier_arrive_expect_tx,
    mbarrier_init, mbarrier_try_wait_parity, named_barrier_sync,
};
use oxide_device::cluster;
use oxide_device::convert::cvt_bf16x2_f32;
use oxide_device::grid;
use oxide_device::prelude::*;
use oxide_device::tma::{
    TmaDescriptor, cp_async_bulk_commit_group, cp_async_bulk_tensor_2d_g2s,
    cp_async_bulk_tensor_2d_s2g, cp_async_bulk_wait_group_read, prefetch_tensormap,
};
use oxide_device::warp;
use oxide_device::wgmma::{
    SmemDescriptor, Swizzle, setmaxnreg_dec, setmaxnreg_inc, wgmma_commit_group, wgmma_fence,
    wgmma_m64n64k16_f32_bf16, wgmma_m64n128k16_f32_bf16, wgmma_m64n256k16_f32_bf16,
    wgmma_wait_group, wgmma_wait_group_acc,
};

/// The accumulators a narrower tile uses: the first `N` of the 128 a thread holds for the
/// widest (64 for a 128-wide tile, 32 for a 64-wide one). The rest stay zero and unread,
/// so they take no registers.
#[inline(always)]
fn live<const N: usize>(acc: &mut [f32; 128]) -> &mut [f32; N] {
    acc.first_chunk_mut::<N>().expect("N <= 128")
}

/// Rows of `c` per tile (two consumer warpgroups of 64).
pub const SM90_BM: u32 = 128;
/// Columns of `c` per tile of the hand pick (one `wgmma m64n256k16` wide); `BN` is tuned
/// over 256 and 128 (`wgmma m64n128k16`: twice the tiles, for shapes with few of them).
pub const SM90_BN: u32 = 256;
/// Threads per block: one producer and two consumer warpgroups.
pub const SM90_THREADS: u32 = 384;
/// Bytes of the shared-memory ring of stages: four stages of the widest tile, six of a
/// 128-wide one ([`stages`]).
pub const RING_BYTES: usize = 4 * stage_bytes(SM90_BN as usize, SM90_BM as usize);
/// The most stages any instance has (its barriers are laid out for this many): a
/// 128-wide tile of 16 rows.
const MAX_STAGES: usize = stages(128, 16);
/// Dynamic shared memory a launch must give: the stages, the epilogue's buffer, the
/// barriers, and 1 KiB of slack to align the first stage to 1024 bytes. The kernels'
/// `#[launch(..., shared = 230_560)]` states it to the launcher (an attribute takes a
/// literal; tests/launch/test_variants.py checks the two agree).
pub const SM90_SHARED_BYTES: u32 = 230_560;
const _: () = assert!(
    SM90_SHARED_BYTES as usize == RING_BYTES + 2 * EPI_WG_BYTES + 2 * MAX_STAGES * 8 + 1024
);
/// The three tensor maps (A's, B's, then C's), 128 bytes each, in the `maps` argument.
pub const TENSOR_MAP_BYTES: usize = 128; // oxide-abi's TENSOR_MAP_BYTES
const TENSOR_MAPS: usize = 3;

const BK: usize = 64;
/// A's box of a 128-row tile.
const A_BYTES: usize = a_bytes(SM90_BM as usize);

/// A's box of a `bm`-row tile (the map's box is `bm` rows: `a(rows = BM)`).
const fn a_bytes(bm: usize) -> usize {
    bm * BK * 2
}
pub(crate) const B_BOX_BYTES: usize = 64 * BK * 2;

/// B's bytes a stage of a `bn`-wide tile: `bn / 64` boxes.
const fn b_stage_bytes(bn: usize) -> usize {
    (bn / 64) * B_BOX_BYTES
}

/// Bytes of one stage of a `bm`×`bn` tile: A's box and B's boxes.
const fn stage_bytes(bn: usize, bm: usize) -> usize {
    a_bytes(bm) + b_stage_bytes(bn)
}

/// Stages of a `bm`×`bn` tile's ring: as many as [`RING_BYTES`] holds (128 rows: 4 at
/// 256 columns, 6 at 128; 64 rows: 4 and 8; 16 rows: 5 and 10). The consumers hand a
/// stage back one slab late (below), so the loads in flight are about two fewer than
/// the stages: the extra stages of narrow and short tiles matter most where a few
/// blocks stream a long k (decode and prefill GEMMs).
pub const fn stages(bn: usize, bm: usize) -> usize {
    RING_BYTES / stage_bytes(bn, bm)
}
/// Tile-rows that walk the columns together (L2 reuse of B), for `walkers` blocks or
/// clusters walking `bm`×`bn` tiles at once: the tiles a wave runs side by side then
/// cover a region about as tall as it is wide (`g · bm ≈ (walkers / g) · bn`), which
/// brings the fewest bytes of A and B into L2 for a wave's k loop. A fixed 8 made a
/// 4096³ wave of 132 256-wide tiles 1024 rows by all 4096 columns: every wave read all
/// of B, 187 MB from DRAM where cuBLAS read 151 (ncu, H100); 16 rows by 8¼ tile-columns
/// reads about a fifth less a wave.
const fn group_rows(walkers: usize, bm: usize, bn: usize, tiles_m: usize) -> usize {
    let mut g = 1;
    while (g + 1) * (g + 1) * bm <= walkers * bn && g < tiles_m {
        g += 1;
    }
    g
}
/// Each consumer warpgroup's epilogue buffer: 64 rows of 128 bytes per box, two boxes.
const EPI_BOX_BYTES: usize = 64 * 128;
const EPI_WG_BYTES: usize = 2 * EPI_BOX_BYTES;

/// A block's ring: `stages` stages from the 1024-byte-aligned `smem`, A's boxes first
/// (`a_bytes` a stage), then B's (`b_bytes` a stage), and each stage's `full` and `empty` barriers at `bars`.
#[derive(Clone, Copy)]
pub(crate) struct RingAt {
    smem: *mut u8,
    pub stages: usize,
    a_bytes: usize,
    b_bytes: usize,
    bars: *mut Barrier,
}

impl RingAt {
    /// Stage `s`'s A box.
    #[inline(always)]
    pub fn a(self, s: usize) -> *mut u8 {
        self.smem.wrapping_add(s * self.a_bytes)
    }
    /// Stage `s`'s B boxes.
    #[inline(always)]
    pub fn b(self, s: usize) -> *mut u8 {
        self.smem
            .wrapping_add(self.stages * self.a_bytes + s * self.b_bytes)
    }
    /// Completes when stage `s` is loaded.
    #[inline(always)]
    pub fn full(self, s: usize) -> *mut Barrier {
        self.bars.wrapping_add(s)
    }
    /// Completes when the consumers gave stage `s` back (one arrival a consumer warp).
    #[inline(always)]
    pub fn empty(self, s: usize) -> *mut Barrier {
        self.bars.wrapping_add(MAX_STAGES + s)
    }
}

/// `c = a · b` on Hopper (the module docs), a variant of kernels_rs's `gemm_bf16`. Its
/// launch is its declaration's: grid (min(tiles, SMs / SPLIT) · SPLIT, 1, 1) with tiles =
/// ⌈m/BM⌉·⌈n/BN⌉ (`persistent_tiles`; clusters of `SPLIT` blocks along x where
/// `SPLIT > 1`), block (384, 1, 1), [`SM90_SHARED_BYTES`] of dynamic shared memory. `maps` receives from the launcher the three 128-byte
/// `CUtensorMap`s of `a` (dims k, m; box 64×128), `b` (dims n, k; box 64×64), both of
/// 16-bit elements, and `c` (dims n, m; box 64 rows of 128 bytes: 32 f32 or 64 bf16), all
/// with the 128-byte swizzle, 64-byte aligned in device memory; their rules (k and n
/// multiples of 8, a, b and c 16-byte aligned) are the launcher's to check.
#[kernel]
#[launch_bounds(384, 1)]
#[variant_of(gemm_bf16)]
#[tune(
    (BN, BM) = [(256, 128), (256, 64), (256, 16), (128, 128), (128, 64), (128, 16), (64, 128)],
    SPLIT = [1, 2, 3, 4]
)]
#[cluster_launch(SPLIT)]
#[dependent_launch]
#[launch(persistent_tiles(c, block = (384, 1), tile = (BN, BM), shared = 230_560))]
#[shapes(a[m, k], b[k, n], c[m, n])]
#[tensor_maps(maps, a(rows = BM), b(rows = 64), c(rows = 64))]
pub fn gemm_bf16_sm90<const BN: usize, const SPLIT: usize, const BM: usize>(
    a: Array2<bf16>,
    b: Array2<bf16>,
    c: DisjointArray2<f32>,
    maps: &[u8],
) {
    gemm_sm90_body::<_, _, BN, SPLIT, BM>(a, b, c, maps, |x, y| {
        u64::from(x.to_bits()) | u64::from(y.to_bits()) << 32
    })
}

/// [`gemm_bf16_sm90`] with a bf16 result (each f32 sum rounded to nearest even once; a
/// NaN sum gives the canonical NaN `0x7fff`), a variant of kernels_rs's
/// `gemm_bf16_bf16`. Same launch.
#[kernel]
#[launch_bounds(384, 1)]
#[variant_of(gemm_bf16_bf16)]
#[tune(
    (BN, BM) = [(256, 128), (256, 64), (256, 16), (128, 128), (128, 64), (128, 16), (64, 128)],
    SPLIT = [1, 2, 3, 4]
)]
#[cluster_launch(SPLIT)]
#[dependent_launch]
#[launch(persistent_tiles(c, block = (384, 1), tile = (BN, BM), shared = 230_560))]
#[shapes(a[m, k], b[k, n], c[m, n])]
#[tensor_maps(maps, a(rows = BM), b(rows = 64), c(rows = 64))]
pub fn gemm_bf16_bf16_sm90<const BN: usize, const SPLIT: usize, const BM: usize>(
    a: Array2<bf16>,
    b: Array2<bf16>,
    c: DisjointArray2<bf16>,
    maps: &[u8],
) {
    // One `cvt.rn.bf16x2.f32` a pair, not `bf16::from_f32` a value (the module docs).
    gemm_sm90_body::<_, _, BN, SPLIT, BM>(a, b, c, maps, cvt_bf16x2_f32)
}

#[inline(always)]
fn gemm_sm90_body<T: Copy, W: Copy, const BN: usize, const SPLIT: usize, const BM: usize>(
    a: Array2<bf16>,
    b: Array2<bf16>,
    c: DisjointArray2<T>,
    maps: &[u8],
    pair: impl Fn(f32, f32) -> W,
) {
    // `pair` packs two neighbours of c into one aligned shared-memory store.
    const { assert!(core::mem::size_of::<W>() == 2 * core::mem::size_of::<T>()) };
    const {
        assert!(
            BN == 256 || BN == 128 || (BN == 64 && BM == SM90_BM as usize),
            "BN: 256 or 128, or 64 with 128 rows (a swapped tile's warpgroups take BN / 2 \
             columns as wgmma's 64 rows)"
        )
    };
    const { assert!(SPLIT >= 1 && SPLIT <= 4, "SPLIT: 1 to 4") };
    const {
        assert!(
            BM == SM90_BM as usize || BM == 64 || BM == 16,
            "BM: 128, or 64 and 16 (swapped)"
        )
    };
    const { assert!(split::partial_bytes(BN) <= RING_BYTES) };
    const { assert!(stages(BN, BM) <= MAX_STAGES) };
    let stages = const { stages(BN, BM) };
    let b_bytes = const { b_stage_bytes(BN) };
    // a, b and c are read and written through the maps the launcher made of them (the
    // shape contract holds: c is m×n); their extents give the loop bounds.
    let (m, k, n) = (a.rows(), a.cols(), b.cols());
    debug_assert!(c.rows() == m && c.cols() == n);
    // A split tile's sums are stored straight to c (gemm_sm90_split.rs); the others go
    // through TMA, by the map.
    let mut c = c;
    let c_ptr = c.as_mut_ptr();
    assert!(
        maps.len() >= TENSOR_MAPS * TENSOR_MAP_BYTES && (maps.as_ptr() as usize).is_multiple_of(64)
    );
    // A's map, then B's and C's.
    let map_a = maps.as_ptr() as *const TmaDescriptor;
    assert!(DynamicSharedArray::<u8>::bytes() >= SM90_SHARED_BYTES as usize);
    let tid = thread::threadIdx_x() as usize;
    let warpgroup = tid / 128;
    // The ring: stages from the first 1024-byte boundary, then the barriers.
    let raw = DynamicSharedArray::<u8>::get();
    let skew = (1024 - (oxide_device::wgmma::shared_address(raw) as usize % 1024)) % 1024;
    let smem = raw.wrapping_add(skew);
    let ring = RingAt {
        smem,
        stages,
        a_bytes: const { a_bytes(BM) },
        b_bytes,
        bars: smem.wrapping_add(RING_BYTES + 2 * EPI_WG_BYTES) as *mut Barrier,
    };
    let epi_at = |half: usize| smem.wrapping_add(RING_BYTES + half * EPI_WG_BYTES);

    let tiles_m = m.div_ceil(BM);
    let tiles_n = n.div_ceil(BN);
    let tiles = tiles_m * tiles_n;
    let k_tiles = k.div_ceil(BK);
    // Who walks which tiles, and which k-slabs of each: a block, every tile `blockIdx.x`,
    // `+ gridDim.x`, … and every slab; or (split) a cluster, every tile `%clusterid.x`,
    // `+ %nclusterid.x`, …, its block of rank r the slabs r, r + SPLIT, … (none where
    // k has fewer than r + 1 slabs: its partial sums are zeros).
    let (first, step, rank) = if SPLIT == 1 {
        (
            thread::blockIdx_x() as usize,
            thread::gridDim_x() as usize,
            0,
        )
    } else {
        let (id, clusters) = (cluster::cluster_idX(), cluster::cluster_grid_dimX());
        (
            id as usize,
            clusters as usize,
            cluster::block_rank() as usize,
        )
    };
    let group = group_rows(step, BM, BN, tiles_m);
    // Tile `t` in grouped order: `group` tile-rows at a time, column by column.
    let tile_at = |t: usize| {
        let per_group = group * tiles_n;
        let first_m = (t / per_group) * group;
        let rows = (tiles_m - first_m).min(group);
        (first_m + (t % per_group) % rows, (t % per_group) / rows)
    };
    let slabs = if SPLIT == 1 {
        k_tiles
    } else {
        k_tiles.saturating_sub(rank).div_ceil(SPLIT)
    };

    // SAFETY (the whole body): every wgmma/setmaxnreg call is made by all 128 threads
    // of a warpgroup together (the role branches split at warpgroup boundaries and
    // loop over the same tiles and k steps); shared memory is the launch's dynamic
    // region, whose size was asserted above; a stage is written only by TMA after the
    // producer waited for its `empty` phase, and read only by wgmma after the
    // consumers waited for its `full` phase; in a split instance, the partial sums
    // written over the stages are written after the tile's last wgmma retired and the
    // next tile's loads wait for the cluster barrier after the last read of them (every
    // thread of the cluster passes two a tile: gemm_sm90_split.rs).
    unsafe {
        if tid == 0 {
            // The maps' descriptors load under the barriers' setup, not under the first
            // copy through each.
            for i in 0..TENSOR_MAPS {
                prefetch_tensormap(map_a.add(i));
            }
            for s in 0..stages {
                mbarrier_init(ring.full(s), 1);
                // One arrival per consumer warp (see the release below).
                mbarrier_init(ring.empty(s), 2 * 4);
            }
        }
        fence_proxy_async_shared_cta();
        thread::sync_threads();
        // Launched as a dependent (`#[dependent_launch]`), the block may get here under the
        // end of the kernel before it. Nothing above touched global memory but the maps'
        // prefetch: the launcher's own buffer, copied onto the stream before the first
        // launch that reads it (a copy, not a kernel: that launch waits for it in full).
        // From here on a, b and c are that kernel's to have finished with. The next GEMM
        // may then start its blocks' set-up as this one's blocks exit.
        grid::griddepcontrol_wait();
        grid::griddepcontrol_launch_dependents();

        if warpgroup == 0 {
            setmaxnreg_dec::<40>();
            let map_b = map_a.add(1);
            let (mut s, mut phase) = (0usize, 0u32);
            // One thread issues a tile's loads: this block's slabs of it, into the ring.
            let mut load_tile = |t: usize| {
                let (tm, tn) = tile_at(t);
                let n0 = tn * BN;
                // B boxes that start right of n are skipped (see the module docs).
                let boxes = (n - n0).div_ceil(64).min(BN / 64);
                for i in 0..slabs {
                    // A fresh barrier's "previous phase" (parity 1) counts as
                    // complete, so the first pass over the ring does not wait.
                    while !mbarrier_try_wait_parity(ring.empty(s), phase ^ 1) {}
                    let _ = mbarrier_arrive_expect_tx(
                        ring.full(s),
                        0,
                        (ring.a_bytes + boxes * B_BOX_BYTES) as u32,
                    );
                    let k0 = ((rank + i * SPLIT) * BK) as i32;
                    cp_async_bulk_tensor_2d_g2s(
                        ring.a(s),
                        map_a,
                        k0,
                        (tm * BM) as i32,
                        ring.full(s),
                    );
                    for j in 0..boxes {
                        cp_async_bulk_tensor_2d_g2s(
                            ring.b(s).add(j * B_BOX_BYTES),
                            map_b,
                            (n0 + 64 * j) as i32,
                            k0,
                            ring.full(s),
                        );
                    }
                    s += 1;
                    if s == stages {
                        s = 0;
                        phase ^= 1;
                    }
                }
            };
            if SPLIT == 1 {
                if tid == 0 {
                    let mut t = first;
                    while t < tiles {
                        load_tile(t);
                        t += step;
                    }
                }
            } else {
                // Every thread of the warpgroup passes the tile's two cluster barriers
                // (a thread waiting at one waits for its warp's other live threads too);
                // the next tile's loads overwrite the partial sums, so they wait for
                // the second (gemm_sm90_split.rs).
                let mut t = first;
                while t < tiles {
                    if tid == 0 {
                        load_tile(t);
                    }
                    split::pass_tile();
                    t += step;
                }
            }
        } else if BM < SM90_BM as usize {
            setmaxnreg_inc::<232>();
            let walk = swap::Walk {
                first,
                step,
                count: tiles,
                at: tile_at,
            };
            // (BM as a literal: a const generic argument cannot be computed from another.)
            let (ct, shape) = (tid - 128, (m, n));
            if BM == 64 {
                swap::consume::<T, W, BN, SPLIT, 64>(ring, slabs, walk, c_ptr, shape, ct, pair);
            } else {
                swap::consume::<T, W, BN, SPLIT, 16>(ring, slabs, walk, c_ptr, shape, ct, pair);
            }
        } else {
            setmaxnreg_inc::<232>();
            // Broadcast from lane 0, so that ptxas knows the warpgroup is the same in every
            // lane: A's descriptors, which it offsets, then stay in uniform registers.
            let half = warp::shuffle_sync(u32::MAX, (warpgroup - 1) as u32, 0) as usize;
            let wg_tid = tid % 128;
            let (w, lane) = (wg_tid / 32, tid % 32);
            let epi = epi_at(half);
            let map_c = map_a.add(2);
            // The epilogue's rounds: 16 KiB of c's columns at a time (128 bf16 or 64
            // f32), each round two boxes of 128 bytes a row.
            let esz = core::mem::size_of::<T>();
            let (box_cols, round_cols) = (128 / esz, EPI_WG_BYTES / (64 * esz));
            let round_j = round_cols / 8;
            // The stage and the slab count in 32 bits: 64-bit ones cost a carry and a
            // compare pair each a slab.
            let (mut s, mut phase) = (0u32, 0u32);
            // Stage 0's descriptors, made once; stage `s`'s are these moved on by its
            // offset (`SmemDescriptor`: a 32-bit add a slab).
            let da0 =
                SmemDescriptor::new(ring.a(0).add(half * (A_BYTES / 2)), 16, 1024, Swizzle::B128);
            let db0 = SmemDescriptor::new(ring.b(0), B_BOX_BYTES as u32, 1024, Swizzle::B128);
            let mut t = first;
            while t < tiles {
                let (tm, tn) = tile_at(t);
                let mut acc = [0.0f32; 128];
                let mut held: Option<u32> = None;
                for _ in 0..slabs as u32 {
                    while !mbarrier_try_wait_parity(ring.full(s as usize), phase) {}
                    let (da, db) = (
                        da0.at(s as usize * ring.a_bytes),
                        db0.at(s as usize * ring.b_bytes),
                    );
                    wgmma_fence();
                    unrolled!(for kk in [0, 1, 2, 3] {
                        // 16 k: 32 bytes along A's rows, 16 rows (2048 bytes) of B.
                        let (da, db) = (da.at(kk * 32).get(), db.at(kk * 2048).get());
                        if BN == 256 {
                            wgmma_m64n256k16_f32_bf16::<0, 1>(&mut acc, da, db, true);
                        } else if BN == 128 {
                            // A 128-wide tile: the first 64 accumulators, in the same pattern.
                            wgmma_m64n128k16_f32_bf16::<0, 1>(live::<64>(&mut acc), da, db, true);
                        } else {
                            wgmma_m64n64k16_f32_bf16::<0, 1>(live::<32>(&mut acc), da, db, true);
                        }
                    });
                    wgmma_commit_group();
                    // The stage before this one is read by wgmmas now retired: give it back.
                    // A wgmma is one operation of the warpgroup, so once this warp's wait
                    // returns it has finished reading for all four warps; one lane per
                    // warp arrives (256 arrivals a stage cost issue slots).
                    wgmma_wait_group::<1>();
                    if let (Some(p), 0) = (held, lane) {
                        let _ = mbarrier_arrive(ring.empty(p as usize));
                    }
                    held = Some(s);
                    s += 1;
                    if s == stages as u32 {
                        s = 0;
                        phase ^= 1;
                    }
                }
                // The wait names `acc`, so that packing results for the epilogue is not
                // scheduled above it (which makes ptxas serialise every wgmma: C7514).
                if BN == 256 {
                    wgmma_wait_group_acc::<0>(&mut acc);
                } else if BN == 128 {
                    wgmma_wait_group_acc::<0>(live::<64>(&mut acc));
                } else {
                    wgmma_wait_group_acc::<0>(live::<32>(&mut acc));
                }
                if let (Some(p), 0) = (held, lane) {
                    let _ = mbarrier_arrive(ring.empty(p as usize));
                }
                if SPLIT > 1 {
                    // The cluster's partial sums of this tile, added up through
                    // distributed shared memory and stored (gemm_sm90_split.rs).
                    let tile = split::Tile {
                        c: c_ptr,
                        m,
                        n,
                        y0: tm * SM90_BM as usize,
                        x0: tn * BN,
                    };
                    split::reduce::<T, W, BN, SPLIT>(&acc, smem, tid - 128, tile, &pair);
                    t += step;
                    continue;
                }
                // Through this warpgroup's 16 KiB of shared memory, a round of
                // columns at a time, in the 128-byte-swizzled boxes the C map
                // describes (conflict-free writes: the 8 rows of a warp's store land
                // in 8 different 16-byte chunks); one thread then has TMA copy the
                // round out and the next tile's mainloop starts while it does.
                let y = tm * SM90_BM as usize + half * 64;
                unrolled!(for j in [
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                    22, 23, 24, 25, 26, 27, 28, 29, 30, 31
                ] {
                    // (8 columns of the tile per j: a 128-wide tile ends at j = 15, a
                    // 64-wide one at 7, inside a bf16 round of 128 columns: its last round
                    // is the tile's last j, and stores only the tile's boxes.)
                    if j < BN / 8 {
                        if j.is_multiple_of(round_j) {
                            // The last round's copy has read the buffer (this or the
                            // previous tile's): it may be written again.
                            if wg_tid == 0 {
                                cp_async_bulk_wait_group_read::<0>();
                            }
                            named_barrier_sync(1 + half as u32, 128);
                        }
                        let col = 8 * (j % round_j) + 2 * (lane % 4);
                        let (bx, cb) = (col / box_cols, (col % box_cols) * esz);
                        unrolled!(for h in [0, 1] {
                            let r = 16 * w + lane / 4 + 8 * h;
                            let at = bx * EPI_BOX_BYTES
                                + r * 128
                                + (((cb / 16) ^ (r % 8)) * 16)
                                + cb % 16;
                            let v = pair(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                            (epi.add(at) as *mut W).write(v);
                        });
                        if j % round_j == round_j - 1 || j == BN / 8 - 1 {
                            fence_proxy_async_shared_cta();
                            named_barrier_sync(1 + half as u32, 128);
                            if wg_tid == 0 {
                                let x0 = tn * BN + (j / round_j) * round_cols;
                                for b in 0..round_cols.min(BN) / box_cols {
                                    let x = x0 + b * box_cols;
                                    // Boxes wholly outside c are not stored; TMA clips
                                    // the rest to m × n.
                                    if x < n && y < m {
                                        cp_async_bulk_tensor_2d_s2g(
                                            epi.add(b * EPI_BOX_BYTES),
                                            map_c,
                                            x as i32,
                                            y as i32,
                                        );
                                    }
                                }
                                cp_async_bulk_commit_group();
                            }
                        }
                    }
                });
                t += step;
            }
            if SPLIT == 1 && wg_tid == 0 {
                // Shared memory must outlive the copies that read it; their writes to
                // global memory complete by the kernel's end without a wait here.
                cp_async_bulk_wait_group_read::<0>();
            }
        }
    }
}
