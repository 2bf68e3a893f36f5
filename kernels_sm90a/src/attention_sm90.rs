//! Attention forward on Hopper's warpgroup tensor cores: the same call as kernels_rs's
//! mma.sync `attention` (its module docs give what is computed, the causal convention
//! and where the elements are), which pyoxide runs where this one cannot (other
//! devices, the emulator, views TMA refuses). FlashAttention-3's recipe.
//!
//! # Shape of the computation
//!
//! A block of 512 threads takes tiles of `BM` query rows of one head (at d = 64 the tuned
//! `D64_ROWS`, 192 or 128; 128 at d = 128): one tile on the
//! grid (⌈seqlen_q / BM⌉, heads, batch), or, on a persistent grid of one block an SM,
//! every grid-size-th tile in turn, numbered head by head (the blocks running at once
//! share a head's keys and values in L2; a head's row blocks turned round by round, so
//! that a causal call's long and short tiles are dealt evenly) or row block by row block,
//! longest first (each block's share of a causal call is as much work as another's):
//! `Tiles`.
//! Four warpgroups.
//! Warpgroup 0 is the producer: one thread loads each tile's q and keeps a ring of
//! [`ATTENTION_SM90_STAGES`] key and value tiles of 128 rows full, by TMA (`cp.async.bulk.tensor`,
//! 4-D maps over (d, row, head, batch), so any layout with a contiguous d loads the
//! same way), each tile completing on its own `mbarrier` so that `q·kᵀ` can start
//! while `v` is still landing. Warpgroups 1 to 3 (1 and 2 in tiles of 128 rows) are
//! consumers, 64 query rows each:
//! `s = q·kᵀ` by `wgmma m64n128k16` (q and k from shared memory), the online softmax
//! in registers, then `o += p·v` by `wgmma m64nDk16` with p straight from registers
//! (the f32 scores packed pairwise are the A operand's layout). The producer gives up
//! registers (`setmaxnreg.dec` 24) and the consumers take them (`setmaxnreg.inc` 160 with
//! three; with two the fourth warpgroup idles, its registers given up too, and the two
//! consumers take 232). Why three consumers at d = 64: a tile's exponentials there keep
//! the special-function unit as busy as its products keep the tensor cores, and with two
//! consumers (8 warps for 4 schedulers) the SM issued an instruction in 47 % of its
//! cycles, stalled on latencies (ncu, H200, S = 16384: tensor pipe 49 %, MUFU 52 %); a
//! third consumer's warps fill those cycles (FlashAttention-3 tiles d = 64 by 192 rows
//! likewise): 1.08-1.09× the two-consumer kernel at S = 8192 and 16384 without a mask,
//! 1.02-1.03× causal. Short sequences lose more (0.75-0.87× at S = 512 and at 2048
//! causal, against the tuned two-consumer instances: S = 512 is three tiles of 192 rows,
//! 11 % of them past the end, and a causal tile of 192 rows crosses the diagonal in two
//! key tiles): hence a tuned choice, per bucket. At d = 128 the products are twice as
//! long and a third consumer's 64 accumulators more do not fit.
//!
//! What S = 512 is not short of: overlap between a block's tiles. Two q slots (the next
//! tile's q loading by a second producer thread under this tile's whole key loop, the
//! output staged in the tile's own q slot) with a four-stage ring at d = 64 left every
//! S = 512 row where it was (H200, 2026-12-05: d = 64 0.82× cuDNN, causal 0.76×, against
//! 0.82× and 0.78× in the same session), and the rest within ±3 %. Nor did the consumers
//! lack it: a tile's last `p·v` issued in the next tile's first turn, the next tile's
//! first softmax under it and the store after, ran 2-14 % slower (H100, the 128-row
//! ping-pong instance, S = 512 and 2048), and its ncu at d = 64, S = 512 priced the
//! merged boundary as the separate one (287 stall samples a thousand tiles against 286).
//! Nor does the store hold the next tile back: its output packed in registers, the next
//! tile's first `q·kᵀ` issued and the store made under it, ran 0.96-1.01× (H100, every
//! d and mask at S = 512 and 2048).
//! A key step costs what cuDNN's does there (118 samples a thousand steps, cuDNN's 114
//! on the H200); the gap is the work done once a tile, about 2.4 steps' worth against
//! cuDNN's 0.6: the first `q·kᵀ` and softmax outside the loop, the last `p·v`, the
//! epilogue.
//!
//! Inside a consumer tile `j`'s `q·kᵀ` and tile `j-1`'s `p·v` are issued back to back
//! and the source waits for the first only, to run the softmax of tile `j` under `p·v`
//! (FlashAttention-3's intra-warpgroup overlap); but ptxas (13) puts the `p·v` wait ahead
//! of every exponential in the SASS of each key loop, so only the masking runs under it.
//! p's packing (`F2FP`), which ptxas interleaves with the exponentials, writes the
//! registers `p·v` reads, so the wait must precede it; ptxas puts it at the top of the
//! basic block (after the masking's reconvergence). Ending the
//! block after the softmax (a branch around a `nanosleep 0`, on the row sums) kept the
//! wait after all 66 `MUFU.EX2`s, and ran slower: 0.94-1.01× at d = 64 (1.006× only at
//! S = 16384 without a mask), 0.97-0.98× at d = 128 (H100, 2026-12-08, the tuned
//! instances against main's in one call; `exp/boundary`). So ptxas's order stays.
//! The exponentials are `ex2.approx.ftz` with `log2(e)`
//! folded into the scale (one FFMA and one MUFU an element; rows reduced in independent
//! chains in the ping-pong schedule at d = 64: `consume`). The causal and length masks
//! are applied only to the tiles that cross the diagonal or the end of the keys. Causal
//! tiles stop at the diagonal. The producer runs ahead across tiles: the next
//! tile's q loads as soon as the consumers' last `q·kᵀ` of this one retires, and its
//! first key and value tiles as stages free up, so a persistent block's next tile
//! starts under this one's last `p·v` and epilogue.
//!
//! # Epilogue
//!
//! Each consumer scales its rows by `1/sum`, packs them to 16 bits and writes them into
//! its own 64 rows of a staging tile in shared memory (q's own tile is the next tile's
//! by then), 128-byte rows
//! swizzled as TMA swizzles them so the stores are conflict-free; after a named barrier
//! over its 128 threads one thread stores them by TMA (boxes of 64 d by 64 rows of out's
//! own map, whose extent drops the rows past the sequence) and waits only until the
//! engine has read them: the global writes run on under the next tile. (Each thread
//! copying 16-byte chunks out instead, it was 2.4-6.3 % slower on the H100 at S = 512
//! and 2048, the 128-row ping-pong instance: cuDNN's kernel stores by TMA too.) A
//! variable-length batch's rows are copied out that way still, skipping rows past the
//! sequence: its next sequence starts there, inside a box.
//!
//! # Shared-memory layouts
//!
//! Every tile is boxes of 128 rows × 64 d (128 bytes a row, 16 KiB), TMA's 128-byte
//! swizzle (16-byte chunk `c` of row `r` at `c ^ (r % 8)`), 1024-byte aligned. q and k
//! are K-major operands of `q·kᵀ` (8-row groups 1024 bytes apart, the stride byte
//! offset; 16 d further is 32 bytes along the rows, the next 64 d the next box); v is
//! the N-major B of `p·v` (16 keys further is 2048 bytes; the next 64 d, the next box,
//! is the leading byte offset). q's 192 rows at d = 64 are two row boxes (the second's
//! last 64 rows loaded and unread); each consumer's 64 rows are half a row box.

use core::num::NonZero;
use oxide_device::barrier::{
    Barrier, fence_proxy_async_shared_cta, mbarrier_arrive_expect_tx, mbarrier_init,
};

use oxide_device::prelude::*;
use oxide_device::tma::{TmaDescriptor, cp_async_bulk_tensor_4d_g2s};
use oxide_device::wgmma::{Swizzle, setmaxnreg_dec, setmaxnreg_inc, smem_descriptor};

pub use crate::attention_sm90_consumer::{ATTENTION_SM90_STAGES, Sm90Element};
use crate::attention_sm90_consumer::{
    BN, BOX_BYTES, Bars, Consumer, HALF_BOX_BYTES, OutputAcc, Ring, Rings, Tile, Turns, consume,
    epilogue, wait,
};
use crate::attention_sm90_tiles::{TileAt, Tiles};

/// Query rows per tile of [`attention_sm90`] at d = 128: two consumer warpgroups of 64 (a
/// third's accumulators and registers do not fit). At d = 64 the tuned `D64_ROWS`.
pub const ATTENTION_SM90_BM_D128: u32 = 128;
/// Threads per block: one producer and three consumer warpgroups (the third idle in
/// tiles of 128 rows).
pub const ATTENTION_SM90_THREADS: u32 = 512;
/// Dynamic shared memory a launch must give: q, the ring of k and v tiles, the output's
/// staging tile (each sized for d = 128), the barriers, and 1 KiB of slack to align the
/// first tile to 1024 bytes. (A literal, so that pyoxide/bundled/attention.py's copy can
/// be checked against it by a test.)
pub const ATTENTION_SM90_SHARED_BYTES: u32 = 197_712;
const _: () = assert!(
    ATTENTION_SM90_SHARED_BYTES as usize
        == (2 + 2 * ATTENTION_SM90_STAGES) * 2 * BOX_BYTES + Bars::COUNT * 8 + 1024
);
/// The four tensor maps (q's, k's, v's, then out's), 128 bytes each, in the `maps` argument.
pub const ATTENTION_TENSOR_MAP_BYTES: usize = 128;

/// [`attention_sm90`]'s launch: block (512, 1, 1), [`ATTENTION_SM90_SHARED_BYTES`] of
/// dynamic shared memory, and grid (⌈seqlen_q / BM⌉, heads, batch) (`PERSISTENT = 0`;
/// `BM` is `D64_ROWS` at d = 64, [`ATTENTION_SM90_BM_D128`] at d = 128)
/// or (min(tiles, multiprocessors), 1, 1) (`PERSISTENT` 1 and 2: one block an SM walking
/// the tiles, numbered head by head or row block by row block: `Tiles`). The arguments
/// are kernels_rs `attention`'s plus `maps`: the four 128-byte `CUtensorMap`s of q, k,
/// v and out (16-bit elements; dims (d, rows, heads, batch), a varlen batch as one entry
/// of the packed rows; box 64 × 128 × 1 × 1, out's 64 × 64 × 1 × 1; the 128-byte
/// swizzle), 64-byte aligned in device memory. Needs q, k, v and out 16-byte aligned
/// with strides that are multiples of 8 elements (TMA's rules, and the epilogue's
/// 16-byte stores).
///
/// The body takes any grid (module docs: each block walks its share of the tiles);
/// `PERSISTENT` tells the launcher which grid to make and the body how to number the
/// tiles, so that `pyoxide tune` chooses between them like any schedule. `PINGPONG` is
/// the consumers' schedule: 0 (the hand pick) lets both consumer warpgroups run freely;
/// 1 is FlashAttention-3's ping-pong between them (attention_sm90_consumer.rs's
/// `Turns`), one warpgroup's softmax under the other's products. `D64_ROWS` is d = 64's
/// tile: 192 rows (the hand pick: three consumers) or 128 (two; module docs); d = 128's
/// tiles are 128 rows whatever its value. Which is faster depends
/// on the head dimension, the mask, the number of keys and of tiles, so a choice is kept
/// per (`head_dim`, `seqlen_k`, `causal`) bucket: the tune key, the arrays being flat
/// slices.
#[kernel(bf16, f16)]
#[launch_bounds(512, 1)]
#[tune(
    PINGPONG = [0, 1],
    PERSISTENT = [0, 1, 2],
    D64_ROWS = [192, 128],
    key = [head_dim, seqlen_k, causal]
)]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_sm90<
    T: Sm90Element,
    const PINGPONG: u32,
    const PERSISTENT: u32,
    const D64_ROWS: u32,
>(
    q: &[T],
    k: &[T],
    v: &[T],
    maps: &[u8],
    out: DisjointSlice<T>,
    lse: DisjointSlice<f32>,
    cu_seqlens_q: &[i32],
    cu_seqlens_k: &[i32],
    q_strides: [u64; 3],
    k_strides: [u64; 3],
    v_strides: [u64; 3],
    out_strides: [u64; 3],
    lse_strides: [u64; 2],
    batch: u32,
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    seqlen_q: u32,
    seqlen_k: u32,
    scale: f32,
    causal: bool,
) {
    // q, k and v are read through the maps; their lengths make the launcher's checks
    // cover the memory the maps name (pyoxide makes the maps from these arrays).
    let _ = (q, k, v, q_strides, k_strides, v_strides);
    let a = Args {
        maps,
        cu_q: cu_seqlens_q,
        cu_k: cu_seqlens_k,
        out_strides,
        lse_strides,
        batch,
        heads,
        kv_heads,
        seqlen_q,
        seqlen_k,
        scale,
        causal,
        by_rows: PERSISTENT == 2,
    };
    // A const condition: each instance keeps one body.
    if PINGPONG == 1 {
        head_dim_body::<T, true, D64_ROWS>(&a, head_dim, out, lse)
    } else {
        head_dim_body::<T, false, D64_ROWS>(&a, head_dim, out, lse)
    }
}

/// The body of `head_dim`: d = 64's tiles of `D64_ROWS` rows, d = 128's of
/// [`ATTENTION_SM90_BM_D128`].
#[inline(always)]
fn head_dim_body<T: Sm90Element, const PINGPONG: bool, const D64_ROWS: u32>(
    a: &Args<'_>,
    head_dim: u32,
    out: DisjointSlice<T>,
    lse: DisjointSlice<f32>,
) {
    match head_dim {
        64 => attention_body::<T, 64, 32, PINGPONG, D64_ROWS>(a, out, lse),
        128 => attention_body::<T, 128, 64, PINGPONG, ATTENTION_SM90_BM_D128>(a, out, lse),
        _ => panic!("head_dim must be 64 or 128"),
    }
}

/// The kernel's arguments that the body reads.
pub(crate) struct Args<'a> {
    maps: &'a [u8],
    cu_q: &'a [i32],
    cu_k: &'a [i32],
    out_strides: [u64; 3],
    lse_strides: [u64; 2],
    pub(crate) batch: u32,
    pub(crate) heads: u32,
    kv_heads: u32,
    pub(crate) seqlen_q: u32,
    seqlen_k: u32,
    scale: f32,
    causal: bool,
    /// `PERSISTENT == 2` (see `Tiles`).
    pub(crate) by_rows: bool,
}

/// The sequences of the batch: `cu[b]..cu[b + 1]` of the packed rows, or rows
/// `0..seqlen` of each batch entry. Checked once, before the roles split: a panic inside
/// a `setmaxnreg` region costs the consumers their registers (see `attention_body`).
#[derive(Clone, Copy)]
struct Sequences<'a> {
    cu: &'a [i32],
    seqlen: u32,
}

impl<'a> Sequences<'a> {
    /// The sequences after checking that `cu` (when given) has `batch + 1` offsets that
    /// start at 0 or more and do not decrease; and the end of the last one's rows.
    #[inline(always)]
    fn checked(cu: &'a [i32], seqlen: u32, batch: usize) -> (Sequences<'a>, usize) {
        if cu.is_empty() {
            return (Sequences { cu, seqlen }, seqlen as usize);
        }
        assert!(cu.len() > batch, "cu_seqlens needs batch + 1 offsets");
        assert!(
            cu[0] >= 0,
            "cu_seqlens must start at 0 or more and not decrease"
        );
        for b in 0..batch {
            assert!(
                cu[b] <= cu[b + 1],
                "cu_seqlens must start at 0 or more and not decrease"
            );
        }
        (Sequences { cu, seqlen }, cu[batch] as usize)
    }

    /// Sequence `b`'s first row in its array and its length (`b < batch`).
    #[inline(always)]
    fn get(self, b: usize) -> (usize, usize) {
        if self.cu.is_empty() {
            return (0, self.seqlen as usize);
        }
        // SAFETY: `checked` found batch + 1 offsets, and callers pass b < batch.
        let (lo, hi) = unsafe { (*self.cu.get_unchecked(b), *self.cu.get_unchecked(b + 1)) };
        (lo as usize, (hi - lo) as usize)
    }
}

/// What one tile computes: its rows' sequence and the key tiles they see.
#[derive(Clone, Copy)]
struct Work {
    q_start: usize,
    sq: usize,
    k_start: usize,
    sk: usize,
    /// Row i sees keys j <= i + diag (causal).
    diag: isize,
    n_blocks: usize,
}

#[inline(always)]
fn work(a: &Args<'_>, seq_q: Sequences<'_>, seq_k: Sequences<'_>, at: TileAt, bm: usize) -> Work {
    let (q_start, sq) = seq_q.get(at.b);
    let (k_start, sk) = seq_k.get(at.b);
    let diag = sk as isize - sq as isize;
    let n_end = if a.causal {
        ((at.m0 + bm) as isize + diag).clamp(0, sk as isize) as usize
    } else {
        sk
    };
    Work {
        q_start,
        sq,
        k_start,
        sk,
        diag,
        // A tile past its (shorter) sequence's rows computes nothing.
        n_blocks: if at.m0 < sq { n_end.div_ceil(BN) } else { 0 },
    }
}

#[inline(always)]
fn attention_body<
    T: Sm90Element,
    const D: usize,
    const NO: usize,
    const PINGPONG: bool,
    const BM: u32,
>(
    a: &Args<'_>,
    mut out: DisjointSlice<T>,
    mut lse: DisjointSlice<f32>,
) where
    [f32; NO]: OutputAcc<T>,
{
    const { assert!(NO * 2 == D) };
    // A tile's rows are its consumers' (64 each): two, or three at d = 64 only (a third
    // consumer's accumulators fit in its 160 registers a thread there alone).
    const {
        assert!(
            BM == 128 || (BM == 192 && D == 64),
            "tiles of 128 rows, or 192 at d = 64"
        )
    };
    let (heads, kv_heads) = (a.heads as usize, a.kv_heads as usize);
    assert!(
        kv_heads > 0 && heads.is_multiple_of(kv_heads),
        "heads must be a multiple of kv_heads"
    );
    let group = NonZero::new(a.heads / a.kv_heads).expect("kv_heads <= heads");
    assert!(a.scale > 0.0, "scale must be positive");
    assert!(
        a.maps.len() >= 4 * ATTENTION_TENSOR_MAP_BYTES
            && (a.maps.as_ptr() as usize).is_multiple_of(64)
    );
    assert!(DynamicSharedArray::<u8>::bytes() >= ATTENTION_SM90_SHARED_BYTES as usize);
    // Row and key indices in 32 bits (the consumers' masks; cu_seqlens are i32 already).
    assert!(
        a.seqlen_q <= i32::MAX as u32 && a.seqlen_k <= i32::MAX as u32,
        "seqlen_q and seqlen_k must be below 2^31"
    );
    let batch = a.batch as usize;
    if batch == 0 || heads == 0 || a.seqlen_q == 0 {
        return;
    }
    let (bm, consumers) = (BM as usize, const { BM as usize / 64 });
    let tiles = Tiles::new(a, BM);
    // Every check of what the consumers write, here, for every tile a block may take: a
    // call (a panic, IEEE division's slow path) inside a `setmaxnreg` region keeps ptxas
    // from giving it the registers it asked for, and the wgmmas are serialised (its info
    // C7512). So the tile loops below index nothing that can panic.
    let (seq_q, q_rows) = Sequences::checked(a.cu_q, a.seqlen_q, batch);
    let (seq_k, _) = Sequences::checked(a.cu_k, a.seqlen_k, batch);
    let [o0, o1, o2] = a.out_strides.map(|s| s as usize);
    assert!(
        (out.as_mut_ptr() as usize).is_multiple_of(16) && (o0 % 8, o1 % 8, o2 % 8) == (0, 0, 0)
    );
    // The last row of every sequence: row q_rows - 1 of the last batch entry and head
    // (a packed batch's sequences end at cu_seqlens_q[batch]; a padded one's rows stop
    // at seqlen_q, and a sequence never reaches past that).
    if q_rows > 0 {
        let last = if a.cu_q.is_empty() { batch - 1 } else { 0 };
        assert!(
            last * o0 + (q_rows - 1) * o1 + (heads - 1) * o2 + D <= out.len(),
            "a row lies past out"
        );
        if !lse.is_empty() {
            let [l0, l1] = a.lse_strides.map(|s| s as usize);
            assert!(
                last * l0 + (heads - 1) * l1 + q_rows - 1 < lse.len(),
                "lse is too short"
            );
        }
    }

    // The epilogue's stores: each 16-byte chunk of out (and each element of lse) belongs
    // to one thread of one tile; in bounds by the checks above.
    let out_ptr = out.as_mut_ptr() as *mut u16;
    let lse_ptr = if lse.is_empty() {
        core::ptr::null_mut()
    } else {
        lse.as_mut_ptr()
    };

    let tid = thread::threadIdx_x() as usize;
    let warpgroup = tid / 128;
    // The tiles from the first 1024-byte boundary: q, k's ring, v's ring, the output's
    // staging tile, then the barriers.
    let raw = DynamicSharedArray::<u8>::get();
    let skew = (1024 - (oxide_device::wgmma::shared_address(raw) as usize % 1024)) % 1024;
    let smem = raw.wrapping_add(skew);
    let tile_bytes = 2 * BOX_BYTES; // sized for d = 128
    let q_s = smem;
    let k_stage = |s: usize| smem.wrapping_add((1 + s) * tile_bytes);
    let v_stage = |s: usize| smem.wrapping_add((1 + ATTENTION_SM90_STAGES + s) * tile_bytes);
    let o_s = smem.wrapping_add((1 + 2 * ATTENTION_SM90_STAGES) * tile_bytes);
    let bars =
        Bars::at(smem.wrapping_add((2 + 2 * ATTENTION_SM90_STAGES) * tile_bytes) as *mut Barrier);

    // SAFETY (the whole body): every wgmma/setmaxnreg call is made by all 128 threads
    // of a warpgroup together (the role branches split at warpgroup boundaries and the
    // consumers loop over the same tiles); shared memory is the launch's dynamic region,
    // whose size was asserted above; a stage (and q) is written only by TMA after the
    // producer waited for its `empty` phase, and read only by wgmma after the consumers
    // waited for its `full` phase. Producer and consumers walk the same tiles and take
    // the same key tiles of each, so every `full` phase the consumers wait for is one the
    // producer fills, and every `empty` phase it waits for is one they release.
    unsafe {
        if tid == 0 {
            mbarrier_init(bars.full_q(), 1);
            for s in 0..ATTENTION_SM90_STAGES {
                mbarrier_init(bars.full_k(s), 1);
                mbarrier_init(bars.full_v(s), 1);
                // One arrival per consumer warp (lane 0 of each, once its warpgroup's
                // wgmma that read the stage has retired).
                mbarrier_init(bars.empty_k(s), 4 * consumers as u32);
                mbarrier_init(bars.empty_v(s), 4 * consumers as u32);
            }
            mbarrier_init(bars.empty_q(), 4 * consumers as u32);
        }
        fence_proxy_async_shared_cta();
        thread::sync_threads();

        if warpgroup == 0 || warpgroup > consumers {
            // The producer, and at d = 128 the idle fourth warpgroup, give their registers
            // to the consumers: 24 + 24 + 2 × 232 (d = 128) or 24 + 3 × 160 (d = 64) a
            // thread of each warpgroup, within 4 × 128 (the launch's 65 536).
            setmaxnreg_dec::<24>();
            if tid != 0 {
                return;
            }
            let map_q = a.maps.as_ptr() as *const TmaDescriptor;
            let (map_k, map_v) = (map_q.add(1), map_q.add(2));
            // A tile of `rows` rows: boxes of 64 d by 128 rows, the d boxes of a row box
            // side by side (box y·D/64 + x: q's 192 rows at d = 64 are two row boxes, the
            // second half read; a key tile's 128 rows at d = 128, two d boxes).
            let d_boxes = D / 64;
            let load = |map: *const TmaDescriptor,
                        dst: *mut u8,
                        rows: usize,
                        row: usize,
                        h: usize,
                        b: usize,
                        bar: *mut Barrier| {
                let row_boxes = rows.div_ceil(128);
                let _ = mbarrier_arrive_expect_tx(bar, 0, (row_boxes * d_boxes * BOX_BYTES) as u32);
                for y in 0..row_boxes {
                    for x in 0..d_boxes {
                        let at = [(64 * x) as i32, (row + 128 * y) as i32, h as i32, b as i32];
                        let to = dst.add((y * d_boxes + x) * BOX_BYTES);
                        cp_async_bulk_tensor_4d_g2s(to, map, at, bar);
                    }
                }
            };
            // A varlen batch is one entry of the maps, its sequences at row offsets.
            let (packed_q, packed_k) = (!a.cu_q.is_empty(), !a.cu_k.is_empty());
            let (mut ring, mut q_phase) = (Ring::START, 0u32);
            for at in tiles.walk() {
                let w = work(a, seq_q, seq_k, at, bm);
                if w.n_blocks == 0 {
                    continue;
                }
                let hk = (at.h as u32 / group) as usize;
                // The consumers' last q·kᵀ of the previous tile has retired (a fresh
                // barrier's "previous phase", parity 1, counts as complete).
                wait(bars.empty_q(), q_phase ^ 1);
                let bq = if packed_q { 0 } else { at.b };
                load(map_q, q_s, bm, w.q_start + at.m0, at.h, bq, bars.full_q());
                q_phase ^= 1;
                let bk = if packed_k { 0 } else { at.b };
                for j in 0..w.n_blocks {
                    let s = ring.stage;
                    let row = w.k_start + j * BN;
                    wait(bars.empty_k(s), ring.phase ^ 1);
                    load(map_k, k_stage(s), BN, row, hk, bk, bars.full_k(s));
                    wait(bars.empty_v(s), ring.phase ^ 1);
                    load(map_v, v_stage(s), BN, row, hk, bk, bars.full_v(s));
                    ring = ring.next();
                }
            }
        } else {
            if consumers == 3 {
                setmaxnreg_inc::<160>();
            } else {
                setmaxnreg_inc::<232>();
            }
            let wg = warpgroup - 1;
            let k_desc = smem_descriptor(k_stage(0), 16, 1024, Swizzle::B128);
            let v_desc = smem_descriptor(v_stage(0), BOX_BYTES as u32, 1024, Swizzle::B128);
            // This consumer's 64 rows of q: half a row box (the producer's layout).
            let q_rows = q_s.add((wg / 2) * (D / 64) * BOX_BYTES + (wg % 2) * HALF_BOX_BYTES);
            let q_desc = smem_descriptor(q_rows, 16, 1024, Swizzle::B128);
            let mut rings = Rings {
                kv: Ring::START,
                q_phase: 0,
            };
            let turns = Turns {
                on: PINGPONG,
                wg,
                count: consumers,
            };
            // The ring of turns (`Turns`) starts at the block's first tile that has key
            // tiles and skips its last pass on the last such tile; the turns' barriers
            // stay inside `consume` (taken in the tile loop, ptxas guarded them for
            // divergent warps and moved the inner loop's descriptors out of uniform
            // registers: 644 -> 668 SASS instructions a key tile at d = 64).
            // Across tiles at d = 128 only: at d = 64 (H200 and H100, the persistent
            // 128-row ping-pong instance) it ran 6-7 % slower than restarting each tile,
            // at d = 128 about 2.5 % faster. Restarted, every tile is `first` and `last`.
            let across = D == 128;
            let has_keys = |at: TileAt| work(a, seq_q, seq_k, at, bm).n_blocks > 0;
            // out's map where its rows are not a packed batch's (the epilogue's TMA stores).
            let map_o = if a.cu_q.is_empty() {
                (a.maps.as_ptr() as *const TmaDescriptor).wrapping_add(3)
            } else {
                core::ptr::null()
            };
            let mut first = true;
            let mut walk = tiles.walk();
            while let Some(at) = walk.next() {
                let w = work(a, seq_q, seq_k, at, bm);
                if at.m0 >= w.sq {
                    continue; // no row of this tile is in its sequence
                }
                let c = Consumer {
                    q_desc,
                    k_desc,
                    v_desc,
                    m_wg: at.m0 + 64 * wg,
                    sk: w.sk as i32,
                    diag: w.diag as i32,
                    causal: a.causal,
                    scale_log2: a.scale * core::f32::consts::LOG2_E,
                };
                let (o_acc, row_max, row_sum) = if w.n_blocks > 0 {
                    // Usually the next tile has keys, and the look stops there.
                    let last = !across || !walk.clone().any(has_keys);
                    let turns = (turns, first || !across, last);
                    first = false;
                    consume::<T, NO>(&c, w.n_blocks, bars, &mut rings, turns)
                } else {
                    ([0.0; NO], [f32::NEG_INFINITY; 2], [0.0; 2])
                };
                let tile = Tile {
                    o_s,
                    wg,
                    b: at.b,
                    h: at.h,
                    q_start: w.q_start,
                    sq: w.sq,
                    m_wg: c.m_wg,
                    out_strides: a.out_strides,
                    lse_strides: a.lse_strides,
                    map_o,
                };
                epilogue::<T, D, NO>(&o_acc, row_max, row_sum, out_ptr, lse_ptr, tile);
            }
        }
    }
}
