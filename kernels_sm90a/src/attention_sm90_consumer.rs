//! The consumer warpgroups of kernels_sm90a's `attention_sm90` (its module docs give
//! the whole): `q·kᵀ` and `p·v` on `wgmma`, the online softmax between them, and the
//! epilogue; with what the producer shares with them (the tile and ring layout, the
//! element types' `wgmma` forms).

use oxide_device::barrier::{
    Barrier, fence_proxy_async_shared_cta, mbarrier_arrive, mbarrier_try_wait_parity,
    named_barrier_arrive, named_barrier_sync,
};
use oxide_device::convert::{cvt_bf16x2_f32, cvt_f16x2_f32};
use oxide_device::math::{ex2_approx_ftz, rcp_approx_ftz};
use oxide_device::prelude::*;
use oxide_device::tma::{
    TmaDescriptor, cp_async_bulk_commit_group, cp_async_bulk_tensor_4d_s2g,
    cp_async_bulk_wait_group_read,
};
use oxide_device::wgmma::{
    Accumulators, wgmma_commit_group, wgmma_fence, wgmma_m64n64k16_f32_bf16_rs,
    wgmma_m64n64k16_f32_f16_rs, wgmma_m64n128k16_f32_bf16, wgmma_m64n128k16_f32_bf16_rs,
    wgmma_m64n128k16_f32_f16, wgmma_m64n128k16_f32_f16_rs, wgmma_wait_group_acc,
};

/// Stages of the key/value ring.
pub const ATTENTION_SM90_STAGES: usize = 2;

/// Keys per tile.
pub(crate) const BN: usize = 128;
/// One box: 128 rows of 64 16-bit elements.
pub(crate) const BOX_BYTES: usize = 128 * 128;
/// A warpgroup's 64 rows of a box.
pub(crate) const HALF_BOX_BYTES: usize = BOX_BYTES / 2;

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

macro_rules! sm90_element {
    ($($t:ty: $qk:ident, $pv64:ident, $pv128:ident, $pack:ident;)*) => {$(
        impl Sm90Element for $t {
            #[inline(always)]
            unsafe fn qk(acc: &mut [f32; 64], desc_a: u64, desc_b: u64, accumulate: bool) {
                // SAFETY: upheld by the caller.
                unsafe { $qk::<0, 0>(acc, desc_a, desc_b, accumulate) }
            }
            #[inline(always)]
            unsafe fn pv64(acc: &mut [f32; 32], p: [u32; 4], desc_b: u64) {
                // SAFETY: upheld by the caller.
                unsafe { $pv64::<1>(acc, p, desc_b, true) }
            }
            #[inline(always)]
            unsafe fn pv128(acc: &mut [f32; 64], p: [u32; 4], desc_b: u64) {
                // SAFETY: upheld by the caller.
                unsafe { $pv128::<1>(acc, p, desc_b, true) }
            }
            #[inline(always)]
            fn pack(lo: f32, hi: f32) -> u32 {
                $pack(lo, hi)
            }
        }
    )*};
}

sm90_element! {
    bf16: wgmma_m64n128k16_f32_bf16, wgmma_m64n64k16_f32_bf16_rs, wgmma_m64n128k16_f32_bf16_rs,
        cvt_bf16x2_f32;
    f16: wgmma_m64n128k16_f32_f16, wgmma_m64n64k16_f32_f16_rs, wgmma_m64n128k16_f32_f16_rs,
        cvt_f16x2_f32;
}

/// The output accumulator of one head dimension: 32 f32 a thread for d = 64, 64 for
/// d = 128, each with its `p·v` product.
pub(crate) trait OutputAcc<T: Sm90Element>: Accumulators {
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

/// Wait until the phase of `bar` with `parity` has completed.
///
/// # Safety
/// `bar` is an initialised barrier.
#[inline(always)]
pub(crate) unsafe fn wait(bar: *mut Barrier, parity: u32) {
    // SAFETY: upheld by the caller.
    while !unsafe { mbarrier_try_wait_parity(bar, parity) } {}
}

/// A ring position: the stage and the parity of its current phase.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    pub(crate) stage: usize,
    pub(crate) phase: u32,
}

impl Ring {
    pub(crate) const START: Ring = Ring { stage: 0, phase: 0 };

    #[inline(always)]
    pub(crate) fn next(self) -> Ring {
        if self.stage + 1 == ATTENTION_SM90_STAGES {
            Ring {
                stage: 0,
                phase: self.phase ^ 1,
            }
        } else {
            Ring {
                stage: self.stage + 1,
                phase: self.phase,
            }
        }
    }
}

/// A consumer warpgroup's constants: its operands' base descriptors (q's rows of this
/// warpgroup, stage 0 of k's and v's rings), its first row, and the masking facts
/// (keys and diagonal in 32 bits, as the softmax compares them: `attention_body` asserts
/// that every row and key index fits an i32).
pub(crate) struct Consumer {
    pub(crate) q_desc: u64,
    pub(crate) k_desc: u64,
    pub(crate) v_desc: u64,
    pub(crate) m_wg: usize,
    pub(crate) sk: i32,
    pub(crate) diag: i32,
    pub(crate) causal: bool,
    pub(crate) scale_log2: f32,
}

/// A descriptor moved `bytes` further (the address field counts 16 bytes).
#[inline(always)]
fn desc_at(desc: u64, bytes: usize) -> u64 {
    desc + (bytes >> 4) as u64
}

impl Consumer {
    /// Issue `s = q·kᵀ` over stage `stage` of k's ring and commit it as one group, for
    /// head dimension `2·NO` (that of an output accumulator of `NO`).
    ///
    /// # Safety
    /// All 128 threads of the warpgroup, after `wgmma_fence`; the stage holds its tile.
    #[inline(always)]
    unsafe fn issue_qk<T: Sm90Element, const NO: usize>(
        &self,
        s_acc: &mut [f32; 64],
        stage: usize,
    ) {
        let k0 = stage * 2 * BOX_BYTES;
        unrolled!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < 2 * NO / 16 {
                // 16 d further: 32 bytes along the rows; 64 further: the next box.
                let step = (kk / 4) * BOX_BYTES + (kk % 4) * 32;
                // SAFETY: upheld by the caller.
                unsafe {
                    T::qk(
                        s_acc,
                        desc_at(self.q_desc, step),
                        desc_at(self.k_desc, k0 + step),
                        kk > 0,
                    )
                };
            }
        });
        wgmma_commit_group();
    }

    /// Issue `o += p·v` over stage `stage` of v's ring and commit it as one group.
    ///
    /// # Safety
    /// As [`Consumer::issue_qk`]; `pf` is not written until the group retires.
    #[inline(always)]
    unsafe fn issue_pv<T: Sm90Element, const NO: usize>(
        &self,
        o_acc: &mut [f32; NO],
        pf: &[[u32; 4]; BN / 16],
        stage: usize,
    ) where
        [f32; NO]: OutputAcc<T>,
    {
        let v0 = stage * 2 * BOX_BYTES;
        unrolled!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            // 16 keys further: 16 rows of 128 bytes.
            // SAFETY: upheld by the caller.
            unsafe {
                <[f32; NO] as OutputAcc<T>>::pv(o_acc, pf[kk], desc_at(self.v_desc, v0 + kk * 2048))
            };
        });
        wgmma_commit_group();
    }

    /// Scale, mask and exponentiate tile `j`'s scores in place (s becomes p), and fold
    /// them into the running maximum and sums; returns each row's rescale factor for o.
    /// Every exponential is one `ex2` on the MUFU: at d = 64, an eighth or a quarter of
    /// them as FMA-pipe polynomials instead (8 instructions each) ran 1-9 % slower
    /// (H100, S = 512 to 16384): the warps wait on latencies, not on MUFU throughput.
    #[inline(always)]
    fn softmax(
        &self,
        s_acc: &mut [f32; 64],
        j: usize,
        row_max: &mut [f32; 2],
        row_sum: &mut [f32; 2],
        chained: bool,
    ) -> [f32; 2] {
        let tid = thread::threadIdx_x() as usize;
        let (w, lane) = (tid % 128 / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        // Each row's last key as one bound, in 32 bits: one compare an element. (With two
        // 64-bit compares an element the key loop held 195 ISETPs, now 65: 931 -> 689 SASS
        // instructions a step at d = 128, 882 -> 640 at d = 64.)
        let (sk, diag) = (self.sk, self.diag);
        let last = |row: i32| {
            if self.causal {
                (sk - 1).min(row + diag)
            } else {
                sk - 1
            }
        };
        let m_wg = self.m_wg as i32;
        let row0 = m_wg + (16 * w + g) as i32;
        let bound = [last(row0), last(row0 + 8)];
        let n0 = (j * BN) as i32;
        // The warpgroup's first row has the smallest bound: one branch for all its threads.
        if n0 + BN as i32 - 1 > last(m_wg) {
            unrolled!(
                for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                    unrolled!(for i in [0, 1, 2, 3] {
                        if n0 + (8 * c + 2 * t + i % 2) as i32 > bound[i / 2] {
                            s_acc[4 * c + i] = f32::NEG_INFINITY;
                        }
                    });
                }
            );
        }
        let mut tile_max = [f32::NEG_INFINITY; 2];
        if chained {
            // Each row's maximum and sum as REDUCTION_CHAINS independent chains (column
            // group c's in chain c % REDUCTION_CHAINS), joined at the end, instead of one
            // chain of 32 dependent FMNMX or FADD a row: `Consumer::softmax`'s callers say
            // where that pays.
            tile_max = chained_rows(s_acc, |_, s| *s, f32::max);
        } else {
            unrolled!(
                for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                    unrolled!(for i in [0, 1, 2, 3] {
                        tile_max[i / 2] = tile_max[i / 2].max(s_acc[4 * c + i]);
                    });
                }
            );
        }
        let mut alpha = [0.0f32; 2];
        let mut base = [0.0f32; 2];
        unrolled!(for r in [0, 1] {
            let mut m = tile_max[r];
            m = m.max(warp::shuffle_xor_f32(m, 1));
            m = m.max(warp::shuffle_xor_f32(m, 2));
            let new_max = row_max[r].max(m * self.scale_log2);
            // A row that has seen only masked keys keeps max -inf: subtract 0 then.
            base[r] = if new_max == f32::NEG_INFINITY {
                0.0
            } else {
                new_max
            };
            alpha[r] = ex2_approx_ftz(row_max[r] - base[r]);
            row_max[r] = new_max;
        });
        let mut part = [0.0f32; 2];
        if chained {
            part = chained_rows(
                s_acc,
                |r, s| {
                    *s = ex2_approx_ftz(s.mul_add(self.scale_log2, -base[r]));
                    *s
                },
                |a, b| a + b,
            );
        } else {
            unrolled!(
                for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                    unrolled!(for i in [0, 1, 2, 3] {
                        let p =
                            ex2_approx_ftz(s_acc[4 * c + i].mul_add(self.scale_log2, -base[i / 2]));
                        s_acc[4 * c + i] = p;
                        part[i / 2] += p;
                    });
                }
            );
        }
        unrolled!(for r in [0, 1] {
            row_sum[r] = row_sum[r] * alpha[r] + part[r];
        });
        alpha
    }
}

/// Independent chains a row's maximum and sum are reduced in, where `softmax` is told
/// to chain them.
const REDUCTION_CHAINS: usize = 4;
// `join` halves the chains each level: a power of two leaves none out.
const _: () = assert!(REDUCTION_CHAINS.is_power_of_two());

/// Each row's `op`-reduction of `elem(row, element)` over this thread's 32 elements of
/// it, taken in order, in REDUCTION_CHAINS chains (column group c's in chain
/// c % REDUCTION_CHAINS) joined by `join`.
#[inline(always)]
fn chained_rows(
    s_acc: &mut [f32; 64],
    mut elem: impl FnMut(usize, &mut f32) -> f32,
    op: impl Fn(f32, f32) -> f32 + Copy,
) -> [f32; 2] {
    let mut chain = [[0.0f32; REDUCTION_CHAINS]; 2];
    unrolled!(
        for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            unrolled!(for i in [0, 1, 2, 3] {
                let (r, k) = (i / 2, c % REDUCTION_CHAINS);
                let x = elem(r, &mut s_acc[4 * c + i]);
                chain[r][k] = if c < REDUCTION_CHAINS && i.is_multiple_of(2) {
                    x
                } else {
                    op(chain[r][k], x)
                };
            });
        }
    );
    [join(chain[0], op), join(chain[1], op)]
}

/// The chains' values joined pairwise: a tree, log2(REDUCTION_CHAINS) deep.
#[inline(always)]
fn join(mut v: [f32; REDUCTION_CHAINS], op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut width = REDUCTION_CHAINS;
    while width > 1 {
        width /= 2;
        let mut k = 0;
        while k < width {
            v[k] = op(v[k], v[k + width]);
            k += 1;
        }
    }
    v[0]
}

/// p as `p·v`'s A fragments: score tiles 2kk and 2kk + 1 make key step kk.
#[inline(always)]
fn pack_p<T: Sm90Element>(s_acc: &[f32; 64]) -> [[u32; 4]; BN / 16] {
    let mut pf = [[0u32; 4]; BN / 16];
    unrolled!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        pf[kk] = [
            T::pack(s_acc[8 * kk], s_acc[8 * kk + 1]),
            T::pack(s_acc[8 * kk + 2], s_acc[8 * kk + 3]),
            T::pack(s_acc[8 * kk + 4], s_acc[8 * kk + 5]),
            T::pack(s_acc[8 * kk + 6], s_acc[8 * kk + 7]),
        ];
    });
    pf
}

/// FlashAttention-3's ping-pong between the consumer warpgroups (when `on`:
/// `attention_sm90`'s tuned `PINGPONG = 1`): they take turns, in a ring, to issue their
/// products, so that one's softmax runs while the tensor cores work for the others.
/// Named barrier `4 + i` is "consumer `i` may issue" (1 to 3 are the epilogue's); each
/// use is the 128 threads that wait there and the 128 of the consumer before it that
/// arrive.
///
/// The ring runs through all of a persistent block's tiles, not tile by tile: consumer 0
/// goes first once, at the block's first tile with keys (the last consumer's arrival in
/// `start` meets its first wait), and every turn is passed on but the last consumer's
/// last of the block (at its last tile with keys), so that every arrival meets a wait.
/// Restarted at each tile, consumer 0 could not issue a tile's first `q·kᵀ` before the
/// last consumer had stored the previous tile and arrived again: the tensor cores idled
/// through an epilogue and a first softmax at every tile boundary. Carried on, the
/// consumers stay a turn apart across tiles, and one warpgroup's epilogue runs under the
/// other's products. (Consumer 0 taking one more turn after the block's last tile,
/// instead of the skipped pass, had ptxas serialise every wgmma: C7512.)
#[derive(Clone, Copy)]
pub(crate) struct Turns {
    pub(crate) on: bool,
    pub(crate) wg: usize,
    pub(crate) count: usize,
}

impl Turns {
    /// Before a block's first tile: the arrival that consumer 0's first wait meets.
    #[inline(always)]
    fn start(self) {
        if self.on && self.wg + 1 == self.count {
            // SAFETY: as `take`'s barrier 4.
            unsafe { named_barrier_arrive(4, 256) };
        }
    }

    /// Wait for this warpgroup's turn.
    #[inline(always)]
    fn take(self) {
        if self.on {
            // SAFETY: 128 threads wait, 128 of the consumer before arrive (type docs).
            unsafe { named_barrier_sync(4 + self.wg as u32, 256) };
        }
    }

    /// Give the turn to the next consumer (after this one issued its products), unless
    /// this is the last consumer's last turn of the block (`last`). (No `%`: a
    /// remainder by a count LLVM cannot see is a division-by-zero panic, and a call in
    /// the `setmaxnreg` region serialises every wgmma: `attention_body`.)
    #[inline(always)]
    fn pass(self, last: bool) {
        if self.on && !(last && self.wg + 1 == self.count) {
            let next = if self.wg + 1 == self.count {
                0
            } else {
                self.wg + 1
            };
            // SAFETY: as `take`.
            unsafe { named_barrier_arrive(4 + next as u32, 256) };
        }
    }
}

/// The block's barriers, in shared memory from `base` on: q's `full`, then each ring
/// stage's `full` (k's stages, then v's), each stage's `empty` (k's, then v's), and q's
/// `empty`: [`Bars::COUNT`] of them, laid out here only. Kept as each kind's first
/// barrier, a stage's `s` further: indexed from `base` instead, ptxas moved the `wgmma`
/// descriptors of the ping-pong consumers' inner loop out of uniform registers (1056 ->
/// 1101 SASS instructions a step).
#[derive(Clone, Copy)]
pub(crate) struct Bars {
    full_q: *mut Barrier,
    full_k: *mut Barrier,
    full_v: *mut Barrier,
    empty_k: *mut Barrier,
    empty_v: *mut Barrier,
    empty_q: *mut Barrier,
}

impl Bars {
    pub(crate) const COUNT: usize = 2 + 4 * ATTENTION_SM90_STAGES;

    #[inline(always)]
    pub(crate) fn at(base: *mut Barrier) -> Bars {
        let nth = |i: usize| base.wrapping_add(i);
        Bars {
            full_q: nth(0),
            full_k: nth(1),
            full_v: nth(1 + ATTENTION_SM90_STAGES),
            empty_k: nth(1 + 2 * ATTENTION_SM90_STAGES),
            empty_v: nth(1 + 3 * ATTENTION_SM90_STAGES),
            empty_q: nth(1 + 4 * ATTENTION_SM90_STAGES),
        }
    }

    #[inline(always)]
    pub(crate) fn full_q(self) -> *mut Barrier {
        self.full_q
    }

    #[inline(always)]
    pub(crate) fn full_k(self, s: usize) -> *mut Barrier {
        self.full_k.wrapping_add(s)
    }

    #[inline(always)]
    pub(crate) fn full_v(self, s: usize) -> *mut Barrier {
        self.full_v.wrapping_add(s)
    }

    #[inline(always)]
    pub(crate) fn empty_k(self, s: usize) -> *mut Barrier {
        self.empty_k.wrapping_add(s)
    }

    #[inline(always)]
    pub(crate) fn empty_v(self, s: usize) -> *mut Barrier {
        self.empty_v.wrapping_add(s)
    }

    #[inline(always)]
    pub(crate) fn empty_q(self) -> *mut Barrier {
        self.empty_q
    }
}

/// Where a consumer is in the producer's sequence, carried from tile to tile of a
/// persistent block: the key/value ring's position (k's and v's move together) and the
/// parity of q's current phase.
pub(crate) struct Rings {
    pub(crate) kv: Ring,
    pub(crate) q_phase: u32,
}

/// A consumer warpgroup's main loop over one tile's `n_blocks` key tiles: o
/// (unnormalised), and each of this thread's rows' maximum and partial sum. `first` and
/// `last`: whether this is the block's first and last tile with keys (`Turns`). q is
/// released as soon as its last `q·kᵀ` retires, so that the producer can load the next
/// tile's q under this one's last `p·v` and epilogue.
///
/// # Safety
/// All 128 threads of a consumer warpgroup; the barriers and rings as
/// `attention_body` sets them up, the producer filling them in order.
#[inline(always)]
pub(crate) unsafe fn consume<T: Sm90Element, const NO: usize>(
    c: &Consumer,
    n_blocks: usize,
    bars: Bars,
    rings: &mut Rings,
    (turns, first, last): (Turns, bool, bool),
) -> ([f32; NO], [f32; 2], [f32; 2])
where
    [f32; NO]: OutputAcc<T>,
{
    let lane = thread::threadIdx_x() as usize % 32;
    // SAFETY: one arrival per warp on a barrier initialised for 4 a consumer warpgroup.
    let release = |bar: *mut Barrier| unsafe {
        if lane == 0 {
            let _ = mbarrier_arrive(bar);
        }
    };
    // The softmax's reductions in independent chains only in the ping-pong schedule at
    // d = 64, where a consumer's softmax is on every turn's path: 1.05× (the tuned
    // ping-pong instance, S = 16384 without a mask). With the consumers free, the same
    // change ran 0.92-1.01× at d = 64 (S = 512 to 16384). H100, 2026-12-07, each against
    // main's build in the same call.
    let chained = turns.on && NO == 32;
    let mut s_acc = [0.0f32; 64];
    let mut o_acc = [0.0f32; NO];
    let mut row_max = [f32::NEG_INFINITY; 2];
    let mut row_sum = [0.0f32; 2];
    let (mut kr, mut vr) = (rings.kv, rings.kv);
    // SAFETY: upheld by the caller; each stage is read only between its `full` wait
    // and its `empty` release, after the wgmma that read it retired.
    unsafe {
        if first {
            turns.start();
        }
        wait(bars.full_q(), rings.q_phase);
        // Tile 0: q·kᵀ alone, then its softmax (o is still zero: no rescale).
        wait(bars.full_k(kr.stage), kr.phase);
        turns.take();
        wgmma_fence();
        c.issue_qk::<T, NO>(&mut s_acc, kr.stage);
        turns.pass(false);
        wgmma_wait_group_acc::<0>(&mut s_acc);
        release(bars.empty_k(kr.stage));
        kr = kr.next();
        let _ = c.softmax(&mut s_acc, 0, &mut row_max, &mut row_sum, chained);
        let mut pf = pack_p::<T>(&s_acc);
        for j in 1..n_blocks {
            wait(bars.full_k(kr.stage), kr.phase);
            turns.take();
            wgmma_fence();
            c.issue_qk::<T, NO>(&mut s_acc, kr.stage);
            wait(bars.full_v(vr.stage), vr.phase);
            c.issue_pv::<T, NO>(&mut o_acc, &pf, vr.stage);
            turns.pass(false);
            // q·kᵀ retired (the older group); p·v is left running (ptxas waits for it before
            // the exponentials, though, which measured faster than after: module docs).
            wgmma_wait_group_acc::<1>(&mut s_acc);
            release(bars.empty_k(kr.stage));
            kr = kr.next();
            let alpha = c.softmax(&mut s_acc, j, &mut row_max, &mut row_sum, chained);
            wgmma_wait_group_acc::<0>(&mut o_acc);
            release(bars.empty_v(vr.stage));
            vr = vr.next();
            unrolled!(
                for x in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                    if x < NO / 4 {
                        unrolled!(for i in [0, 1, 2, 3] {
                            o_acc[4 * x + i] *= alpha[i / 2];
                        });
                    }
                }
            );
            pf = pack_p::<T>(&s_acc);
        }
        // Every q·kᵀ of the tile has retired: q may be overwritten.
        release(bars.empty_q());
        wait(bars.full_v(vr.stage), vr.phase);
        turns.take();
        wgmma_fence();
        c.issue_pv::<T, NO>(&mut o_acc, &pf, vr.stage);
        turns.pass(last);
        wgmma_wait_group_acc::<0>(&mut o_acc);
        release(bars.empty_v(vr.stage));
        vr = vr.next();
    }
    rings.kv = vr;
    rings.q_phase ^= 1;
    (o_acc, row_max, row_sum)
}

/// Where a consumer's rows go: its 64 rows of the output's staging tile, its batch entry,
/// head and sequence, and out's and lse's strides.
pub(crate) struct Tile {
    pub(crate) o_s: *mut u8,
    pub(crate) wg: usize,
    pub(crate) b: usize,
    pub(crate) h: usize,
    pub(crate) q_start: usize,
    pub(crate) sq: usize,
    pub(crate) m_wg: usize,
    pub(crate) out_strides: [u64; 3],
    pub(crate) lse_strides: [u64; 2],
    /// out's tensor map (boxes of 64 d by 64 rows), or null where its rows are a
    /// packed batch's (a box would run into the next sequence's rows).
    pub(crate) map_o: *const TmaDescriptor,
}

/// `out = o / sum` and `lse = ln(sum) + max` for one consumer's 64 rows, through its
/// 64 rows of the staging tile (module docs).
///
/// # Safety
/// Called by all 128 threads of consumer warpgroup `tile.wg` after its last wgmma
/// retired; shared memory as `attention_body` lays it out.
#[inline(always)]
pub(crate) unsafe fn epilogue<T: Sm90Element, const D: usize, const NO: usize>(
    o_acc: &[f32; NO],
    row_max: [f32; 2],
    row_sum: [f32; 2],
    out: *mut u16,
    lse: *mut f32,
    tile: Tile,
) {
    let tid = thread::threadIdx_x() as usize;
    let wg_tid = tid % 128;
    let (w, lane) = (wg_tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    let mut inv = [0.0f32; 2];
    let mut row_lse = [f32::NEG_INFINITY; 2];
    unrolled!(for r in [0, 1] {
        let mut l = row_sum[r];
        l += warp::shuffle_xor_f32(l, 1);
        l += warp::shuffle_xor_f32(l, 2);
        if l > 0.0 {
            inv[r] = rcp_approx_ftz(l);
            row_lse[r] = (row_max[r] + l.log2()) * core::f32::consts::LN_2;
        }
    });
    // The warpgroup's threads have all read the staging rows of its previous tile (and
    // so has its store: below).
    let by_tma = !tile.map_o.is_null();
    let issuer = wg_tid == 0;
    // SAFETY: the 128 threads of this warpgroup, ids 1 to 3 one per consumer.
    unsafe { named_barrier_sync(1 + tile.wg as u32, 128) };
    // 64 rows of 128 bytes a consumer: d = 128's second 64 columns are the next box (two
    // consumers), d = 64 has one box a row (three consumers: 192 rows over both boxes).
    let stage = tile.o_s.wrapping_add(tile.wg * HALF_BOX_BYTES);
    // Row r, 16-byte chunk c (of 8 elements) of the staged rows: box c / 8, swizzled.
    let chunk_at = |r: usize, c: usize| {
        stage.wrapping_add((c / 8) * BOX_BYTES + r * 128 + (((c % 8) ^ (r % 8)) * 16))
    };
    // SAFETY: this warpgroup's rows of the staging tile, which no other warpgroup
    // touches and no thread of this one still reads (the barrier above); each thread
    // writes its own pairs.
    unsafe {
        unrolled!(
            for c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if c < D / 8 {
                    unrolled!(for r in [0, 1] {
                        let row = 16 * w + g + 8 * r;
                        let v = T::pack(
                            o_acc[4 * c + 2 * r] * inv[r],
                            o_acc[4 * c + 2 * r + 1] * inv[r],
                        );
                        (chunk_at(row, c).add(4 * t) as *mut u32).write(v);
                    });
                }
            }
        );
    }
    if by_tma {
        // The rows as TMA boxes of 64 d by 64 rows (the staging tile's layout is the map's
        // swizzle), rows past the sequence dropped by the map's extent. The issuer waits
        // until the engine has read them (not for the writes), so that the staging rows
        // can be written again and the block may exit (the exit's wait once after the
        // tile loop instead had ptxas serialise every wgmma: C7512).
        // SAFETY: every thread's writes made visible to the async proxy, then the 128
        // threads of this warpgroup; the staging rows are 1024-byte aligned.
        unsafe {
            fence_proxy_async_shared_cta();
            named_barrier_sync(1 + tile.wg as u32, 128);
            if issuer {
                let row = (tile.q_start + tile.m_wg) as i32;
                unrolled!(for x in [0, 1] {
                    if x < D / 64 {
                        let at = [(64 * x) as i32, row, tile.h as i32, tile.b as i32];
                        cp_async_bulk_tensor_4d_s2g(stage.add(x * BOX_BYTES), tile.map_o, at);
                    }
                });
                cp_async_bulk_commit_group();
                cp_async_bulk_wait_group_read::<0>();
            }
        }
    } else {
        // SAFETY: the 128 threads of this warpgroup, ids 1 to 3 one per consumer; the
        // staged rows are written (the barrier), out as the caller passes it.
        unsafe {
            named_barrier_sync(1 + tile.wg as u32, 128);
            copy_out::<D>(out, &tile, chunk_at, wg_tid);
        }
    }
    if t == 0 && !lse.is_null() {
        let [l0, l1] = tile.lse_strides.map(|s| s as usize);
        unrolled!(for r in [0, 1] {
            let row = tile.m_wg + 16 * w + g + 8 * r;
            if row < tile.sq {
                let i = tile.b * l0 + tile.h * l1 + tile.q_start + row;
                // SAFETY: one lane per row writes its element; in bounds.
                unsafe { lse.add(i).write(row_lse[r]) };
            }
        });
    }
}

/// The staged rows of one consumer copied to out by its 128 threads, 16 bytes each at a
/// time, skipping rows past the sequence (a packed batch's next sequence starts there).
///
/// # Safety
/// As [`epilogue`], after the warpgroup's barrier that follows its staging writes;
/// `chunk_at` addresses those staged rows.
#[inline(always)]
unsafe fn copy_out<const D: usize>(
    out: *mut u16,
    tile: &Tile,
    chunk_at: impl Fn(usize, usize) -> *mut u8,
    wg_tid: usize,
) {
    let [o0, o1, o2] = tile.out_strides.map(|s| s as usize);
    let base = tile.b * o0 + tile.q_start * o1 + tile.h * o2;
    let chunks = D / 8;
    for i in 0..64 * chunks / 128 {
        let id = wg_tid + 128 * i;
        let (r, c) = (id / chunks, id % chunks);
        let row = tile.m_wg + r;
        if row < tile.sq {
            let at = base + row * o1 + c * 8;
            // SAFETY: each 16-byte chunk of out belongs to one thread of one block (its
            // row and chunk); in bounds; 16-byte aligned (asserted in `attention_body`).
            unsafe {
                let v = (chunk_at(r, c) as *const [u32; 4]).read();
                (out.add(at) as *mut [u32; 4]).write(v);
            }
        }
    }
}
