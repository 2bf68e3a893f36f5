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
    Barrier, fence_proxy_async_shared_cta, mbarrier_arrive, mbarrier_arrive_expect_tx,
    mbarrier_init, mbarrier_try_wait_parity, named_barrier_sync,
};
use oxide_device::convert::{cvt_bf16x2_f32, cvt_f16x2_f32};
use oxide_device::math::{ex2_approx_ftz, rcp_approx_ftz};
use oxide_device::prelude::*;
use oxide_device::tma::{TmaDescriptor, cp_async_bulk_tensor_4d_g2s};
use oxide_device::wgmma::{
    Accumulators, Swizzle, setmaxnreg_dec, setmaxnreg_inc, smem_descriptor, wgmma_commit_group,
    wgmma_fence, wgmma_m64n64k16_f32_bf16_rs, wgmma_m64n64k16_f32_f16_rs,
    wgmma_m64n128k16_f32_bf16, wgmma_m64n128k16_f32_bf16_rs, wgmma_m64n128k16_f32_f16,
    wgmma_m64n128k16_f32_f16_rs, wgmma_wait_group_acc,
};

/// Query rows per block of [`attention_sm90`] (two consumer warpgroups of 64).
pub const ATTENTION_SM90_BM: u32 = 128;
/// Threads per block: one producer and two consumer warpgroups.
pub const ATTENTION_SM90_THREADS: u32 = 384;
/// Stages of the key/value ring.
pub const ATTENTION_SM90_STAGES: usize = 2;
/// Dynamic shared memory a launch must give: q, the ring of k and v tiles (sized for
/// d = 128), the barriers, and 1 KiB of slack to align the first tile to 1024 bytes.
/// (A literal, so that pyoxide/_attention.py's copy can be checked against it by a test.)
pub const ATTENTION_SM90_SHARED_BYTES: u32 = 164_936;
const _: () = assert!(
    ATTENTION_SM90_SHARED_BYTES as usize
        == (1 + 2 * ATTENTION_SM90_STAGES) * 2 * BOX_BYTES + (1 + 4 * ATTENTION_SM90_STAGES) * 8 + 1024
);
/// The three tensor maps (q's, k's, then v's), 128 bytes each, in the `maps` argument.
pub const ATTENTION_TENSOR_MAP_BYTES: usize = 128;

/// Keys per tile.
const BN: usize = 128;
/// One box: 128 rows of 64 16-bit elements.
const BOX_BYTES: usize = 128 * 128;
/// A warpgroup's 64 rows of a box.
const HALF_BOX_BYTES: usize = BOX_BYTES / 2;

/// `body` once per listed value of `i`, as straight-line code, so that the register
/// arrays are indexed only by constants.
macro_rules! unroll {
    (for $i:ident in [$($n:literal),*] $body:block) => {
        $({
            #[allow(clippy::identity_op, clippy::erasing_op)]
            let $i: usize = $n;
            $body
        })*
    };
}

/// The 16-bit element types [`attention_sm90`] takes: the `wgmma` forms and the
/// packing that differ between them.
pub trait Sm90Element: Copy + 'static {
    /// `s (+)= a·b` for a 64×128 tile, A and B K-major in shared memory.
    ///
    /// # Safety
    /// As `wgmma_m64n128k16_f32_bf16`.
    unsafe fn qk(acc: &mut [f32; 64], desc_a: u64, desc_b: u64, accumulate: bool);
    /// `o += p·v` for d = 64: p from registers, v N-major in shared memory.
    ///
    /// # Safety
    /// As `wgmma_m64n64k16_f32_bf16_rs`.
    unsafe fn pv64(acc: &mut [f32; 32], p: [u32; 4], desc_b: u64);
    /// `o += p·v` for d = 128.
    ///
    /// # Safety
    /// As `wgmma_m64n128k16_f32_bf16_rs`.
    unsafe fn pv128(acc: &mut [f32; 64], p: [u32; 4], desc_b: u64);
    /// Two f32 rounded to nearest even, packed (the first in the low half).
    fn pack(lo: f32, hi: f32) -> u32;
}

impl Sm90Element for bf16 {
    #[inline(always)]
    unsafe fn qk(acc: &mut [f32; 64], desc_a: u64, desc_b: u64, accumulate: bool) {
        // SAFETY: upheld by the caller.
        unsafe { wgmma_m64n128k16_f32_bf16::<0, 0>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn pv64(acc: &mut [f32; 32], p: [u32; 4], desc_b: u64) {
        // SAFETY: upheld by the caller.
        unsafe { wgmma_m64n64k16_f32_bf16_rs::<1>(acc, p, desc_b, true) }
    }
    #[inline(always)]
    unsafe fn pv128(acc: &mut [f32; 64], p: [u32; 4], desc_b: u64) {
        // SAFETY: upheld by the caller.
        unsafe { wgmma_m64n128k16_f32_bf16_rs::<1>(acc, p, desc_b, true) }
    }
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u32 {
        cvt_bf16x2_f32(lo, hi)
    }
}

impl Sm90Element for f16 {
    #[inline(always)]
    unsafe fn qk(acc: &mut [f32; 64], desc_a: u64, desc_b: u64, accumulate: bool) {
        // SAFETY: upheld by the caller.
        unsafe { wgmma_m64n128k16_f32_f16::<0, 0>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn pv64(acc: &mut [f32; 32], p: [u32; 4], desc_b: u64) {
        // SAFETY: upheld by the caller.
        unsafe { wgmma_m64n64k16_f32_f16_rs::<1>(acc, p, desc_b, true) }
    }
    #[inline(always)]
    unsafe fn pv128(acc: &mut [f32; 64], p: [u32; 4], desc_b: u64) {
        // SAFETY: upheld by the caller.
        unsafe { wgmma_m64n128k16_f32_f16_rs::<1>(acc, p, desc_b, true) }
    }
    #[inline(always)]
    fn pack(lo: f32, hi: f32) -> u32 {
        cvt_f16x2_f32(lo, hi)
    }
}

/// The output accumulator of one head dimension: 32 f32 a thread for d = 64, 64 for
/// d = 128, each with its `p·v` product.
trait OutputAcc<T: Sm90Element>: Accumulators {
    /// `self += p·v` for one step of 16 keys.
    ///
    /// # Safety
    /// As [`Sm90Element::pv64`].
    unsafe fn pv(&mut self, p: [u32; 4], desc_b: u64);
}

impl<T: Sm90Element> OutputAcc<T> for [f32; 32] {
    #[inline(always)]
    unsafe fn pv(&mut self, p: [u32; 4], desc_b: u64) {
        // SAFETY: upheld by the caller.
        unsafe { T::pv64(self, p, desc_b) }
    }
}

impl<T: Sm90Element> OutputAcc<T> for [f32; 64] {
    #[inline(always)]
    unsafe fn pv(&mut self, p: [u32; 4], desc_b: u64) {
        // SAFETY: upheld by the caller.
        unsafe { T::pv128(self, p, desc_b) }
    }
}

/// [`attention_sm90`]'s launch: grid (⌈seqlen_q / 128⌉, heads, batch), block (384, 1,
/// 1), [`ATTENTION_SM90_SHARED_BYTES`] of dynamic shared memory. The arguments are
/// kernels_rs `attention`'s plus `maps`: the three 128-byte `CUtensorMap`s of q, k and
/// v (16-bit elements; dims (d, rows, heads, batch), a varlen batch as one entry of the
/// packed rows; box 64 × 128 × 1 × 1; the 128-byte swizzle), 64-byte aligned in device
/// memory. Needs q, k, v and out 16-byte aligned with strides that are multiples of 8
/// elements (TMA's rules, and the epilogue's 16-byte stores).
#[kernel(bf16, f16)]
#[launch_bounds(384, 1)]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention_sm90<T: Sm90Element>(
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
    match head_dim {
        64 => attention_body::<T, 64, 32>(&a, out, lse),
        128 => attention_body::<T, 128, 64>(&a, out, lse),
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
    assert!(0 <= lo && lo <= hi, "cu_seqlens must start at 0 or more and not decrease");
    (lo as usize, (hi - lo) as usize)
}

/// Wait until the phase of `bar` with `parity` has completed.
///
/// # Safety
/// `bar` is an initialised barrier.
#[inline(always)]
unsafe fn wait(bar: *mut Barrier, parity: u32) {
    // SAFETY: upheld by the caller.
    while !unsafe { mbarrier_try_wait_parity(bar, parity) } {}
}

/// A ring position: the stage and the parity of its current phase.
#[derive(Clone, Copy)]
struct Ring {
    stage: usize,
    phase: u32,
}

impl Ring {
    const START: Ring = Ring { stage: 0, phase: 0 };

    #[inline(always)]
    fn next(self) -> Ring {
        if self.stage + 1 == ATTENTION_SM90_STAGES {
            Ring { stage: 0, phase: self.phase ^ 1 }
        } else {
            Ring { stage: self.stage + 1, phase: self.phase }
        }
    }
}

#[inline(always)]
fn attention_body<T: Sm90Element, const D: usize, const NO: usize>(
    a: &Args<'_>,
    mut out: DisjointSlice<T>,
    lse: DisjointSlice<f32>,
) where
    [f32; NO]: OutputAcc<T>,
{
    const { assert!(NO * 2 == D) };
    let (heads, kv_heads) = (a.heads as usize, a.kv_heads as usize);
    assert!(kv_heads > 0 && heads.is_multiple_of(kv_heads), "heads must be a multiple of kv_heads");
    assert!(a.scale > 0.0, "scale must be positive");
    assert!(a.maps.len() >= 3 * ATTENTION_TENSOR_MAP_BYTES && (a.maps.as_ptr() as usize).is_multiple_of(64));
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
    assert!((out.as_mut_ptr() as usize).is_multiple_of(16) && (o0 % 8, o1 % 8, o2 % 8) == (0, 0, 0));
    assert!(b * o0 + (q_start + last_row) * o1 + h * o2 + D <= out.len(), "a row lies past out");
    if !lse.is_empty() {
        let [l0, l1] = a.lse_strides.map(|s| s as usize);
        assert!(b * l0 + h * l1 + q_start + last_row < lse.len(), "lse is too short");
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
                        cp_async_bulk_tensor_4d_g2s(k_stage(s).add(x * BOX_BYTES), map_k, at, full_k(s));
                    }
                    wait(empty_v(s), ring.phase ^ 1);
                    let _ = mbarrier_arrive_expect_tx(full_v(s), 0, bytes);
                    for x in 0..boxes {
                        let at = [(64 * x) as i32, row, hk as i32, bk as i32];
                        cp_async_bulk_tensor_4d_g2s(v_stage(s).add(x * BOX_BYTES), map_v, at, full_v(s));
                    }
                    ring = ring.next();
                }
            }
        } else {
            setmaxnreg_inc::<240>();
            let half = warpgroup - 1;
            let c = Consumer {
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
                consume::<T, NO>(&c, n_blocks, full_q, full_k, full_v, empty_k, empty_v)
            } else {
                ([0.0; NO], [f32::NEG_INFINITY; 2], [0.0; 2])
            };
            let tile = Tile { q_s, half, b, h, q_start, sq, m_wg: c.m_wg };
            epilogue::<T, D, NO>(a, &o_acc, row_max, row_sum, out, lse, tile);
        }
    }
}

/// A consumer warpgroup's constants: its operands' base descriptors (q's rows of this
/// warpgroup, stage 0 of k's and v's rings), its first row, and the masking facts.
struct Consumer {
    q_desc: u64,
    k_desc: u64,
    v_desc: u64,
    m_wg: usize,
    sk: usize,
    diag: isize,
    causal: bool,
    scale_log2: f32,
}

/// A descriptor moved `bytes` further (the address field counts 16 bytes).
#[inline(always)]
fn desc_at(desc: u64, bytes: usize) -> u64 {
    desc + (bytes >> 4) as u64
}

impl Consumer {
    /// Issue `s = q·kᵀ` over stage `stage` of k's ring and commit it as one group.
    ///
    /// # Safety
    /// All 128 threads of the warpgroup, after `wgmma_fence`; the stage holds its tile.
    #[inline(always)]
    unsafe fn issue_qk<T: Sm90Element, const D: usize>(&self, s_acc: &mut [f32; 64], stage: usize) {
        let k0 = stage * 2 * BOX_BYTES;
        unroll!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                // 16 d further: 32 bytes along the rows; 64 further: the next box.
                let step = (kk / 4) * BOX_BYTES + (kk % 4) * 32;
                // SAFETY: upheld by the caller.
                unsafe { T::qk(s_acc, desc_at(self.q_desc, step), desc_at(self.k_desc, k0 + step), kk > 0) };
            }
        });
        wgmma_commit_group();
    }

    /// Issue `o += p·v` over stage `stage` of v's ring and commit it as one group.
    ///
    /// # Safety
    /// As [`Consumer::issue_qk`]; `pf` is not written until the group retires.
    #[inline(always)]
    unsafe fn issue_pv<T: Sm90Element, const NO: usize>(&self, o_acc: &mut [f32; NO], pf: &[[u32; 4]; BN / 16], stage: usize)
    where
        [f32; NO]: OutputAcc<T>,
    {
        let v0 = stage * 2 * BOX_BYTES;
        unroll!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            // 16 keys further: 16 rows of 128 bytes.
            // SAFETY: upheld by the caller.
            unsafe { <[f32; NO] as OutputAcc<T>>::pv(o_acc, pf[kk], desc_at(self.v_desc, v0 + kk * 2048)) };
        });
        wgmma_commit_group();
    }

    /// Scale, mask and exponentiate tile `j`'s scores in place (s becomes p), and fold
    /// them into the running maximum and sums; returns each row's rescale factor for o.
    #[inline(always)]
    fn softmax(&self, s_acc: &mut [f32; 64], j: usize, row_max: &mut [f32; 2], row_sum: &mut [f32; 2]) -> [f32; 2] {
        let tid = thread::threadIdx_x() as usize;
        let (w, lane) = (tid % 128 / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        let rows = [self.m_wg + 16 * w + g, self.m_wg + 16 * w + g + 8];
        let n0 = j * BN;
        let crosses = n0 + BN > self.sk
            || (self.causal && (n0 + BN) as isize - 1 > self.m_wg as isize + self.diag);
        if crosses {
            unroll!(for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                unroll!(for i in [0, 1, 2, 3] {
                    let col = n0 + 8 * c + 2 * t + i % 2;
                    if col >= self.sk || (self.causal && col as isize > rows[i / 2] as isize + self.diag) {
                        s_acc[4 * c + i] = f32::NEG_INFINITY;
                    }
                });
            });
        }
        let mut tile_max = [f32::NEG_INFINITY; 2];
        unroll!(for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            unroll!(for i in [0, 1, 2, 3] {
                tile_max[i / 2] = tile_max[i / 2].max(s_acc[4 * c + i]);
            });
        });
        let mut alpha = [0.0f32; 2];
        let mut base = [0.0f32; 2];
        unroll!(for r in [0, 1] {
            let mut m = tile_max[r];
            m = m.max(warp::shuffle_xor_f32(m, 1));
            m = m.max(warp::shuffle_xor_f32(m, 2));
            let new_max = row_max[r].max(m * self.scale_log2);
            // A row that has seen only masked keys keeps max -inf: subtract 0 then.
            base[r] = if new_max == f32::NEG_INFINITY { 0.0 } else { new_max };
            alpha[r] = ex2_approx_ftz(row_max[r] - base[r]);
            row_max[r] = new_max;
        });
        let mut part = [0.0f32; 2];
        unroll!(for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            unroll!(for i in [0, 1, 2, 3] {
                let p = ex2_approx_ftz(s_acc[4 * c + i].mul_add(self.scale_log2, -base[i / 2]));
                s_acc[4 * c + i] = p;
                part[i / 2] += p;
            });
        });
        unroll!(for r in [0, 1] {
            row_sum[r] = row_sum[r] * alpha[r] + part[r];
        });
        alpha
    }
}

/// p as `p·v`'s A fragments: score tiles 2kk and 2kk + 1 make key step kk.
#[inline(always)]
fn pack_p<T: Sm90Element>(s_acc: &[f32; 64]) -> [[u32; 4]; BN / 16] {
    let mut pf = [[0u32; 4]; BN / 16];
    unroll!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        pf[kk] = [
            T::pack(s_acc[8 * kk], s_acc[8 * kk + 1]),
            T::pack(s_acc[8 * kk + 2], s_acc[8 * kk + 3]),
            T::pack(s_acc[8 * kk + 4], s_acc[8 * kk + 5]),
            T::pack(s_acc[8 * kk + 6], s_acc[8 * kk + 7]),
        ];
    });
    pf
}

/// A consumer warpgroup's main loop over `n_blocks` key tiles: o (unnormalised), and
/// each of this thread's rows' maximum and partial sum.
///
/// # Safety
/// All 128 threads of a consumer warpgroup; the barriers and rings as
/// [`attention_body`] sets them up, the producer filling them in order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn consume<T: Sm90Element, const NO: usize>(
    c: &Consumer,
    n_blocks: usize,
    full_q: *mut Barrier,
    full_k: impl Fn(usize) -> *mut Barrier,
    full_v: impl Fn(usize) -> *mut Barrier,
    empty_k: impl Fn(usize) -> *mut Barrier,
    empty_v: impl Fn(usize) -> *mut Barrier,
) -> ([f32; NO], [f32; 2], [f32; 2])
where
    [f32; NO]: OutputAcc<T>,
{
    let d = 2 * NO;
    let lane = thread::threadIdx_x() as usize % 32;
    // SAFETY: one arrival per warp on a barrier initialised for 8 (both consumers).
    let release = |bar: *mut Barrier| unsafe {
        if lane == 0 {
            let _ = mbarrier_arrive(bar);
        }
    };
    let mut s_acc = [0.0f32; 64];
    let mut o_acc = [0.0f32; NO];
    let mut row_max = [f32::NEG_INFINITY; 2];
    let mut row_sum = [0.0f32; 2];
    let (mut kr, mut vr) = (Ring::START, Ring::START);
    // SAFETY: upheld by the caller; each stage is read only between its `full` wait
    // and its `empty` release, after the wgmma that read it retired.
    unsafe {
        wait(full_q, 0);
        // Tile 0: q·kᵀ alone, then its softmax (o is still zero: no rescale).
        wait(full_k(kr.stage), kr.phase);
        wgmma_fence();
        if d == 64 {
            c.issue_qk::<T, 64>(&mut s_acc, kr.stage);
        } else {
            c.issue_qk::<T, 128>(&mut s_acc, kr.stage);
        }
        wgmma_wait_group_acc::<0>(&mut s_acc);
        release(empty_k(kr.stage));
        kr = kr.next();
        let _ = c.softmax(&mut s_acc, 0, &mut row_max, &mut row_sum);
        let mut pf = pack_p::<T>(&s_acc);
        for j in 1..n_blocks {
            wait(full_k(kr.stage), kr.phase);
            wgmma_fence();
            if d == 64 {
                c.issue_qk::<T, 64>(&mut s_acc, kr.stage);
            } else {
                c.issue_qk::<T, 128>(&mut s_acc, kr.stage);
            }
            wait(full_v(vr.stage), vr.phase);
            c.issue_pv::<T, NO>(&mut o_acc, &pf, vr.stage);
            // q·kᵀ retired (the older group); p·v runs on under the softmax.
            wgmma_wait_group_acc::<1>(&mut s_acc);
            release(empty_k(kr.stage));
            kr = kr.next();
            let alpha = c.softmax(&mut s_acc, j, &mut row_max, &mut row_sum);
            wgmma_wait_group_acc::<0>(&mut o_acc);
            release(empty_v(vr.stage));
            vr = vr.next();
            unroll!(for x in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if x < NO / 4 {
                    unroll!(for i in [0, 1, 2, 3] {
                        o_acc[4 * x + i] *= alpha[i / 2];
                    });
                }
            });
            pf = pack_p::<T>(&s_acc);
        }
        wait(full_v(vr.stage), vr.phase);
        wgmma_fence();
        c.issue_pv::<T, NO>(&mut o_acc, &pf, vr.stage);
        wgmma_wait_group_acc::<0>(&mut o_acc);
        release(empty_v(vr.stage));
    }
    (o_acc, row_max, row_sum)
}

/// Where a consumer's rows go.
struct Tile {
    q_s: *mut u8,
    half: usize,
    b: usize,
    h: usize,
    q_start: usize,
    sq: usize,
    m_wg: usize,
}

/// `out = o / sum` and `lse = ln(sum) + max` for one consumer's 64 rows, through its
/// half of the q tile (module docs).
///
/// # Safety
/// Called by all 128 threads of consumer warpgroup `tile.half` after its last wgmma
/// retired; shared memory as [`attention_body`] lays it out.
#[inline(always)]
unsafe fn epilogue<T: Sm90Element, const D: usize, const NO: usize>(
    a: &Args<'_>,
    o_acc: &[f32; NO],
    row_max: [f32; 2],
    row_sum: [f32; 2],
    mut out: DisjointSlice<T>,
    mut lse: DisjointSlice<f32>,
    tile: Tile,
) {
    let tid = thread::threadIdx_x() as usize;
    let wg_tid = tid % 128;
    let (w, lane) = (wg_tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    let mut inv = [0.0f32; 2];
    let mut row_lse = [f32::NEG_INFINITY; 2];
    unroll!(for r in [0, 1] {
        let mut l = row_sum[r];
        l += warp::shuffle_xor_f32(l, 1);
        l += warp::shuffle_xor_f32(l, 2);
        if l > 0.0 {
            inv[r] = rcp_approx_ftz(l);
            row_lse[r] = (row_max[r] + l.log2()) * core::f32::consts::LN_2;
        }
    });
    let stage = tile.q_s.wrapping_add(tile.half * HALF_BOX_BYTES);
    // Row r, 16-byte chunk c (of 8 elements) of the staged rows: box c / 8, swizzled.
    let chunk_at = |r: usize, c: usize| {
        stage.wrapping_add((c / 8) * BOX_BYTES + r * 128 + (((c % 8) ^ (r % 8)) * 16))
    };
    // SAFETY: this warpgroup's half of the q tile, which its retired wgmmas no longer
    // read and the other warpgroup never touches; each thread writes its own pairs.
    unsafe {
        unroll!(for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if c < D / 8 {
                unroll!(for r in [0, 1] {
                    let row = 16 * w + g + 8 * r;
                    let v = T::pack(o_acc[4 * c + 2 * r] * inv[r], o_acc[4 * c + 2 * r + 1] * inv[r]);
                    (chunk_at(row, c).add(4 * t) as *mut u32).write(v);
                });
            }
        });
    }
    // SAFETY: the 128 threads of this warpgroup, ids 1 and 2 one per warpgroup.
    unsafe { named_barrier_sync(1 + tile.half as u32, 128) };
    let [o0, o1, o2] = a.out_strides.map(|s| s as usize);
    let op = out.as_mut_ptr() as *mut u16;
    let base = tile.b * o0 + tile.q_start * o1 + tile.h * o2;
    let chunks = D / 8;
    for i in 0..64 * chunks / 128 {
        let id = wg_tid + 128 * i;
        let (r, c) = (id / chunks, id % chunks);
        let row = tile.m_wg + r;
        if row < tile.sq {
            let at = base + row * o1 + c * 8;
            // SAFETY: each 16-byte chunk of out belongs to one thread of one block (its
            // row and chunk); in bounds; 16-byte aligned (asserted above).
            unsafe {
                let v = (chunk_at(r, c) as *const [u32; 4]).read();
                (op.add(at) as *mut [u32; 4]).write(v);
            }
        }
    }
    if t == 0 && !lse.is_empty() {
        let [l0, l1] = a.lse_strides.map(|s| s as usize);
        unroll!(for r in [0, 1] {
            let row = tile.m_wg + 16 * w + g + 8 * r;
            if row < tile.sq {
                let i = tile.b * l0 + tile.h * l1 + tile.q_start + row;
                // SAFETY: one lane per row writes its element; in bounds.
                unsafe { lse.as_mut_ptr().add(i).write(row_lse[r]) };
            }
        });
    }
}
