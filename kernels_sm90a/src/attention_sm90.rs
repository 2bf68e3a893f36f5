//! Attention forward on Hopper's warpgroup tensor cores: the same call as kernels_rs's
//! mma.sync `attention` (its module docs give what is computed, the causal convention
//! and where the elements are), which pyoxide runs where this one cannot (other
//! devices, the emulator, views TMA refuses). FlashAttention-3's recipe.
//!
//! # Shape of the computation
//!
//! A block of 384 threads takes 128 query rows of one head: three warpgroups.
//! Warpgroup 0 is the producer: one thread loads the q tile once and keeps a ring of
//! [`ATTENTION_SM90_STAGES`] key and value tiles of 128 rows full, by TMA (`cp.async.bulk.tensor`,
//! 4-D maps over (d, row, head, batch), so any layout with a contiguous d loads the
//! same way), each tile completing on its own `mbarrier` so that `q·kᵀ` can start
//! while `v` is still landing. Warpgroups 1 and 2 are consumers, 64 query rows each:
//! `s = q·kᵀ` by `wgmma m64n128k16` (q and k from shared memory), the online softmax
//! in registers, then `o += p·v` by `wgmma m64nDk16` with p straight from registers
//! (the f32 scores packed pairwise are the A operand's layout). The producer gives up
//! registers (`setmaxnreg.dec` 24) and the consumers take them (`setmaxnreg.inc` 240).
//!
//! Inside a consumer the products overlap the softmax: tile `j`'s `q·kᵀ` and tile
//! `j-1`'s `p·v` are issued back to back, the wait retires only the first, and the
//! softmax of tile `j` runs while the tensor cores finish `p·v` (FlashAttention-3's
//! intra-warpgroup overlap). The exponentials are `ex2.approx.ftz` with `log2(e)`
//! folded into the scale (one FFMA and one MUFU an element); the causal and length
//! masks are applied only to the tiles that cross the diagonal or the end of the keys.
//! Causal blocks stop at the diagonal, and the longest row blocks start first.
//!
//! # Epilogue
//!
//! Each consumer scales its rows by `1/sum`, packs them to 16 bits and writes them into
//! its own half of the q tile in shared memory (q is no longer read), 128-byte rows
//! swizzled as TMA swizzles them so the stores are conflict-free; after a named barrier
//! over its 128 threads each thread copies 16-byte chunks out, coalesced, skipping rows
//! past the sequence (a variable-length batch's next sequence starts there).
//!
//! # Shared-memory layouts
//!
//! Every tile is boxes of 128 rows × 64 d (128 bytes a row, 16 KiB), TMA's 128-byte
//! swizzle (16-byte chunk `c` of row `r` at `c ^ (r % 8)`), 1024-byte aligned. q and k
//! are K-major operands of `q·kᵀ` (8-row groups 1024 bytes apart, the stride byte
//! offset; 16 d further is 32 bytes along the rows, the next 64 d the next box); v is
//! the N-major B of `p·v` (16 keys further is 2048 bytes; the next 64 d, the next box,
//! is the leading byte offset).

use oxide_device::barrier::{
    Barrier, fence_proxy_async_shared_cta, mbarrier_arrive_expect_tx, mbarrier_init,
};
use oxide_device::prelude::*;
use oxide_device::tma::{TmaDescriptor, cp_async_bulk_tensor_4d_g2s};
use oxide_device::wgmma::{Swizzle, setmaxnreg_dec, setmaxnreg_inc, smem_descriptor};

pub use crate::attention_sm90_consumer::{ATTENTION_SM90_STAGES, Sm90Element};
use crate::attention_sm90_consumer::{
    BN, BOX_BYTES, Consumer, HALF_BOX_BYTES, OutputAcc, Ring, Tile, consume, epilogue, wait,
};

/// Query rows per block of [`attention_sm90`] (two consumer warpgroups of 64).
pub const ATTENTION_SM90_BM: u32 = 128;
/// Threads per block: one producer and two consumer warpgroups.
pub const ATTENTION_SM90_THREADS: u32 = 384;
/// Dynamic shared memory a launch must give: q, the ring of k and v tiles (sized for
/// d = 128), the barriers, and 1 KiB of slack to align the first tile to 1024 bytes.
/// (A literal, so that pyoxide/_bundled/attention.py's copy can be checked against it by a test.)
pub const ATTENTION_SM90_SHARED_BYTES: u32 = 164_936;
const _: () = assert!(
    ATTENTION_SM90_SHARED_BYTES as usize
        == (1 + 2 * ATTENTION_SM90_STAGES) * 2 * BOX_BYTES
            + (1 + 4 * ATTENTION_SM90_STAGES) * 8
            + 1024
);
/// The three tensor maps (q's, k's, then v's), 128 bytes each, in the `maps` argument.
pub const ATTENTION_TENSOR_MAP_BYTES: usize = 128;

/// [`attention_sm90`]'s launch: grid (⌈seqlen_q / 128⌉, heads, batch), block (384, 1,
/// 1), [`ATTENTION_SM90_SHARED_BYTES`] of dynamic shared memory. The arguments are
/// kernels_rs `attention`'s plus `maps`: the three 128-byte `CUtensorMap`s of q, k and
/// v (16-bit elements; dims (d, rows, heads, batch), a varlen batch as one entry of the
/// packed rows; box 64 × 128 × 1 × 1; the 128-byte swizzle), 64-byte aligned in device
/// memory. Needs q, k, v and out 16-byte aligned with strides that are multiples of 8
/// elements (TMA's rules, and the epilogue's 16-byte stores).
///
/// `PINGPONG` is the consumers' schedule, tuned per call shape (`pyoxide tune`): 0 (the
/// hand pick) lets both consumer warpgroups run freely; 1 is FlashAttention-3's ping-pong
/// between them (attention_sm90_consumer.rs's `Turns`), one warpgroup's softmax under the
/// other's products. Which is faster depends on the head dimension, the mask and the
/// number of keys, so a choice is kept per (`head_dim`, `seqlen_k`, `causal`) bucket: the
/// tune key, the arrays being flat slices.
#[kernel(bf16, f16)]
#[launch_bounds(384, 1)]
#[tune(PINGPONG = [0, 1], key = [head_dim, seqlen_k, causal])]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_sm90<T: Sm90Element, const PINGPONG: u32>(
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
    };
    // A const condition: each instance keeps one body.
    if PINGPONG == 1 {
        head_dim_body::<T, true>(&a, head_dim, out, lse)
    } else {
        head_dim_body::<T, false>(&a, head_dim, out, lse)
    }
}

#[inline(always)]
fn head_dim_body<T: Sm90Element, const PINGPONG: bool>(
    a: &Args<'_>,
    head_dim: u32,
    out: DisjointSlice<T>,
    lse: DisjointSlice<f32>,
) {
    match head_dim {
        64 => attention_body::<T, 64, 32, PINGPONG>(a, out, lse),
        128 => attention_body::<T, 128, 64, PINGPONG>(a, out, lse),
        _ => panic!("head_dim must be 64 or 128"),
    }
}

/// The kernel's arguments that the body reads.
struct Args<'a> {
    maps: &'a [u8],
    cu_q: &'a [i32],
    cu_k: &'a [i32],
    out_strides: [u64; 3],
    lse_strides: [u64; 2],
    batch: u32,
    heads: u32,
    kv_heads: u32,
    seqlen_q: u32,
    seqlen_k: u32,
    scale: f32,
    causal: bool,
}

/// Sequence `b`'s first row in its array and its length: `cu[b]..cu[b + 1]` of the
/// packed rows, or rows `0..seqlen` of batch entry `b`.
#[inline(always)]
fn sequence(cu: &[i32], b: usize, seqlen: u32) -> (usize, usize) {
    if cu.is_empty() {
        return (0, seqlen as usize);
    }
    let (lo, hi) = (cu[b], cu[b + 1]);
    assert!(
        0 <= lo && lo <= hi,
        "cu_seqlens must start at 0 or more and not decrease"
    );
    (lo as usize, (hi - lo) as usize)
}

#[inline(always)]
fn attention_body<T: Sm90Element, const D: usize, const NO: usize, const PINGPONG: bool>(
    a: &Args<'_>,
    mut out: DisjointSlice<T>,
    lse: DisjointSlice<f32>,
) where
    [f32; NO]: OutputAcc<T>,
{
    const { assert!(NO * 2 == D) };
    let (heads, kv_heads) = (a.heads as usize, a.kv_heads as usize);
    assert!(
        kv_heads > 0 && heads.is_multiple_of(kv_heads),
        "heads must be a multiple of kv_heads"
    );
    assert!(a.scale > 0.0, "scale must be positive");
    assert!(
        a.maps.len() >= 3 * ATTENTION_TENSOR_MAP_BYTES
            && (a.maps.as_ptr() as usize).is_multiple_of(64)
    );
    assert!(DynamicSharedArray::<u8>::bytes() >= ATTENTION_SM90_SHARED_BYTES as usize);
    let (b, h) = (thread::blockIdx_z() as usize, thread::blockIdx_y() as usize);
    if b >= a.batch as usize || h >= heads {
        return;
    }
    let hk = h / (heads / kv_heads);
    // The longest row blocks first (causal ones see the most keys).
    let m_block = (thread::gridDim_x() - 1 - thread::blockIdx_x()) as usize;
    let (q_start, sq) = sequence(a.cu_q, b, a.seqlen_q);
    let (k_start, sk) = sequence(a.cu_k, b, a.seqlen_k);
    let m0 = m_block * ATTENTION_SM90_BM as usize;
    if m0 >= sq {
        return;
    }
    let diag = sk as isize - sq as isize; // row i sees keys j <= i + diag
    let n_end = if a.causal {
        ((m0 + ATTENTION_SM90_BM as usize) as isize + diag).clamp(0, sk as isize) as usize
    } else {
        sk
    };
    let n_blocks = n_end.div_ceil(BN);
    let boxes = D / 64;
    // Every check of what the consumers write, here: a call (a panic, IEEE division's
    // slow path) inside a `setmaxnreg` region keeps ptxas from giving it the registers
    // it asked for, and the wgmmas are serialised (its info C7512).
    let last_row = sq.min(m0 + ATTENTION_SM90_BM as usize) - 1;
    let [o0, o1, o2] = a.out_strides.map(|s| s as usize);
    assert!(
        (out.as_mut_ptr() as usize).is_multiple_of(16) && (o0 % 8, o1 % 8, o2 % 8) == (0, 0, 0)
    );
    assert!(
        b * o0 + (q_start + last_row) * o1 + h * o2 + D <= out.len(),
        "a row lies past out"
    );
    if !lse.is_empty() {
        let [l0, l1] = a.lse_strides.map(|s| s as usize);
        assert!(
            b * l0 + h * l1 + q_start + last_row < lse.len(),
            "lse is too short"
        );
    }

    let tid = thread::threadIdx_x() as usize;
    let warpgroup = tid / 128;
    // The tiles from the first 1024-byte boundary: q, k's ring, v's ring, then the
    // barriers.
    let raw = DynamicSharedArray::<u8>::get();
    let skew = (1024 - (oxide_device::wgmma::shared_address(raw) as usize % 1024)) % 1024;
    let smem = raw.wrapping_add(skew);
    let tile_bytes = 2 * BOX_BYTES; // sized for d = 128
    let q_s = smem;
    let k_stage = |s: usize| smem.wrapping_add((1 + s) * tile_bytes);
    let v_stage = |s: usize| smem.wrapping_add((1 + ATTENTION_SM90_STAGES + s) * tile_bytes);
    let bars = smem.wrapping_add((1 + 2 * ATTENTION_SM90_STAGES) * tile_bytes) as *mut Barrier;
    let full_q = bars;
    let full_k = |s: usize| bars.wrapping_add(1 + s);
    let full_v = |s: usize| bars.wrapping_add(1 + ATTENTION_SM90_STAGES + s);
    let empty_k = |s: usize| bars.wrapping_add(1 + 2 * ATTENTION_SM90_STAGES + s);
    let empty_v = |s: usize| bars.wrapping_add(1 + 3 * ATTENTION_SM90_STAGES + s);

    // SAFETY (the whole body): every wgmma/setmaxnreg call is made by all 128 threads
    // of a warpgroup together (the role branches split at warpgroup boundaries and the
    // consumers loop over the same tiles); shared memory is the launch's dynamic region,
    // whose size was asserted above; a stage is written only by TMA after the producer
    // waited for its `empty` phase, and read only by wgmma after the consumers waited
    // for its `full` phase.
    unsafe {
        if tid == 0 {
            mbarrier_init(full_q, 1);
            for s in 0..ATTENTION_SM90_STAGES {
                mbarrier_init(full_k(s), 1);
                mbarrier_init(full_v(s), 1);
                // One arrival per consumer warp (lane 0 of each, once its warpgroup's
                // wgmma that read the stage has retired).
                mbarrier_init(empty_k(s), 2 * 4);
                mbarrier_init(empty_v(s), 2 * 4);
            }
        }
        fence_proxy_async_shared_cta();
        thread::sync_threads();

        if warpgroup == 0 {
            setmaxnreg_dec::<24>();
            if tid == 0 && n_blocks > 0 {
                let map_q = a.maps.as_ptr() as *const TmaDescriptor;
                let (map_k, map_v) = (map_q.add(1), map_q.add(2));
                // A varlen batch is one entry of the maps, its sequences at row offsets.
                let (bq, bk) = (
                    if a.cu_q.is_empty() { b } else { 0 },
                    if a.cu_k.is_empty() { b } else { 0 },
                );
                let bytes = (boxes * BOX_BYTES) as u32;
                let _ = mbarrier_arrive_expect_tx(full_q, 0, bytes);
                for x in 0..boxes {
                    let at = [(64 * x) as i32, (q_start + m0) as i32, h as i32, bq as i32];
                    cp_async_bulk_tensor_4d_g2s(q_s.add(x * BOX_BYTES), map_q, at, full_q);
                }
                let mut ring = Ring::START;
                for j in 0..n_blocks {
                    let s = ring.stage;
                    let row = (k_start + j * BN) as i32;
                    // A fresh barrier's "previous phase" (parity 1) counts as complete.
                    wait(empty_k(s), ring.phase ^ 1);
                    let _ = mbarrier_arrive_expect_tx(full_k(s), 0, bytes);
                    for x in 0..boxes {
                        let at = [(64 * x) as i32, row, hk as i32, bk as i32];
                        cp_async_bulk_tensor_4d_g2s(
                            k_stage(s).add(x * BOX_BYTES),
                            map_k,
                            at,
                            full_k(s),
                        );
                    }
                    wait(empty_v(s), ring.phase ^ 1);
                    let _ = mbarrier_arrive_expect_tx(full_v(s), 0, bytes);
                    for x in 0..boxes {
                        let at = [(64 * x) as i32, row, hk as i32, bk as i32];
                        cp_async_bulk_tensor_4d_g2s(
                            v_stage(s).add(x * BOX_BYTES),
                            map_v,
                            at,
                            full_v(s),
                        );
                    }
                    ring = ring.next();
                }
            }
        } else {
            setmaxnreg_inc::<240>();
            let half = warpgroup - 1;
            let c = Consumer {
                half,
                q_desc: smem_descriptor(q_s.add(half * HALF_BOX_BYTES), 16, 1024, Swizzle::B128),
                k_desc: smem_descriptor(k_stage(0), 16, 1024, Swizzle::B128),
                v_desc: smem_descriptor(v_stage(0), BOX_BYTES as u32, 1024, Swizzle::B128),
                m_wg: m0 + 64 * half,
                sk,
                diag,
                causal: a.causal,
                scale_log2: a.scale * core::f32::consts::LOG2_E,
            };
            let (o_acc, row_max, row_sum) = if n_blocks > 0 {
                consume::<T, NO, PINGPONG>(&c, n_blocks, full_q, full_k, full_v, empty_k, empty_v)
            } else {
                ([0.0; NO], [f32::NEG_INFINITY; 2], [0.0; 2])
            };
            let tile = Tile {
                q_s,
                half,
                b,
                h,
                q_start,
                sq,
                m_wg: c.m_wg,
                out_strides: a.out_strides,
                lse_strides: a.lse_strides,
            };
            epilogue::<T, D, NO>(&o_acc, row_max, row_sum, out, lse, tile);
        }
    }
}
