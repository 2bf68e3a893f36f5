//! Attention forward, `out = softmax(scale · q·kᵀ + mask) · v`, on the tensor cores
//! with `mma.sync` (sm_80+): FlashAttention-2's algorithm, which the CPU emulator also
//! runs. kernels_sm90a's `attention_sm90` is the same call on Hopper's warpgroup tensor
//! cores; pyoxide/bundled/attention.py picks between them and derives every scalar below from
//! the arrays.
//!
//! # What is computed
//!
//! For each batch entry `b`, query head `h` and query row `i` of a sequence of `sq`
//! queries against `sk` keys: `s_j = scale · q_i·k_j` over the keys `j` it may see, then
//! `out_i = Σ_j softmax(s)_j · v_j` and `lse_i = ln Σ_j exp(s_j)`. The causal mask is
//! aligned at the bottom right (FlashAttention's convention, which decoding needs): row
//! `i` sees keys `j <= i + sk - sq`, so with `sq == sk` it is the usual lower triangle.
//! A row that sees no key (only when causal with `sq > sk`) gets `out = 0` and
//! `lse = -inf`. Keys and values may have fewer heads than queries (grouped-query
//! attention): query head `h` reads key/value head `h / (heads / kv_heads)`.
//!
//! # Where the elements are
//!
//! Element `d` of row `r` of head `h` of batch entry `b` of `q` is
//! `q[b·s0 + r·s1 + h·s2 + d]` with `q_strides = [s0, s1, s2]` (in elements; `d` is
//! contiguous), and likewise for `k`, `v` and `out`: one kernel serves (B, S, H, D),
//! (B, H, S, D) and any strided view of them, with no copy. With `cu_seqlens_q`
//! non-empty (variable-length batches, `batch + 1` cumulative offsets) sequence `b`'s
//! rows are `cu_seqlens_q[b]..cu_seqlens_q[b + 1]` of a packed (total, H, D) array
//! (whose batch stride is 0), and `seqlen_q` is only the longest, which sizes the grid;
//! `cu_seqlens_k` likewise. `lse` (f32; empty: not written) holds `lse_i` of row `r` at
//! `b·l0 + h·l1 + r` with `lse_strides = [l0, l1]` (varlen: `r` counted from the
//! packed array's start).
//!
//! # Shape of the computation
//!
//! A block of 4 warps takes 64 query rows of one head (16 a warp) and walks the keys
//! 64 at a time: `s = q·kᵀ` with `mma.m16n8k16` (q's fragments stay in registers), the
//! online softmax (running row maximum and sum; the accumulator rescaled when the
//! maximum grows; `exp2` with `log2(e)` folded into the scale), then `o += p·v` with p
//! converted in registers to the A operand. Key and value tiles come in by `cp.async`
//! into one 16 KiB buffer each (the next tile's copy overlaps this tile's products),
//! rows swizzled (16-byte chunk `c` of row `r` at `c ^ (r % 8)`) so that `ldmatrix`
//! reads are conflict-free. Causal blocks stop at the diagonal and mask only the tiles
//! that cross it. Views whose rows are not 16-byte aligned load element by element.

use oxide_device::convert::{cvt_bf16x2_f32, cvt_f16x2_f32};
use oxide_device::math::ex2_approx_ftz;
use oxide_device::mma::{
    FragA16, FragB16, FragC, cp_async_cg_zfill, cp_async_commit_group, cp_async_wait_group,
    ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_f32_bf16, mma_m16n8k16_f32_f16,
};
use oxide_device::prelude::*;

/// Query rows per block of [`attention`].
pub const ATTENTION_BM: u32 = 64;
/// Threads per block of [`attention`].
pub const ATTENTION_THREADS: u32 = 128;
/// Keys per step.
const BN: usize = 64;
const BM: usize = ATTENTION_BM as usize;
/// The largest head dimension (the shared tiles are sized for it).
const MAX_D: usize = 128;
const TILE: usize = BM * MAX_D;

/// The 16-bit element types [`attention`] takes: the `mma` and the packing that differ
/// between them.
pub trait AttentionElement: Copy + 'static {
    /// `mma.sync.m16n8k16` with f32 accumulation.
    ///
    /// # Safety
    /// As [`mma_m16n8k16_f32_bf16`].
    unsafe fn mma(c: FragC, a: FragA16, b: FragB16) -> FragC;
    /// Two f32 rounded to nearest even, packed (the first in the low half).
    fn pack(lo: f32, hi: f32) -> u32;
    /// The elements' bit patterns.
    fn bits(s: &[Self]) -> &[u16];
}

/// `AttentionElement` for one 16-bit type: its `mma` and its packing.
macro_rules! attention_element {
    ($($t:ident: $mma:ident, $pack:ident;)*) => {$(
        impl AttentionElement for $t {
            #[inline(always)]
            unsafe fn mma(c: FragC, a: FragA16, b: FragB16) -> FragC {
                // SAFETY: upheld by the caller.
                unsafe { $mma(c, a, b) }
            }
            #[inline(always)]
            fn pack(lo: f32, hi: f32) -> u32 {
                $pack(lo, hi)
            }
            #[inline(always)]
            fn bits(s: &[Self]) -> &[u16] {
                $t::slice_as_bits(s)
            }
        }
    )*};
}

attention_element! {
    bf16: mma_m16n8k16_f32_bf16, cvt_bf16x2_f32;
    f16: mma_m16n8k16_f32_f16, cvt_f16x2_f32;
}

/// One sequence's rows in an array: where row 0 of head 0 starts, the row and head
/// strides, and how many rows there are.
#[derive(Clone, Copy)]
struct Rows {
    base: usize,
    row: usize,
    head: usize,
    len: usize,
}

impl Rows {
    /// Batch entry `b`'s rows of an array with `strides`, `seqlen` rows long, or the
    /// packed rows `cu[b]..cu[b + 1]` when `cu` is given. Panics (a trap) when the last
    /// row of the last head would lie past `total` elements, or `cu` decreases.
    #[inline(always)]
    fn of(
        strides: [u64; 3],
        cu: &[i32],
        b: usize,
        seqlen: u32,
        heads: usize,
        d: usize,
        total: usize,
    ) -> Rows {
        let [s0, s1, s2] = strides.map(|s| s as usize);
        let (start, len) = if cu.is_empty() {
            (0, seqlen as usize)
        } else {
            let (lo, hi) = (cu[b], cu[b + 1]);
            assert!(
                0 <= lo && lo <= hi,
                "cu_seqlens must start at 0 or more and not decrease"
            );
            (lo as usize, (hi - lo) as usize)
        };
        let rows = Rows {
            base: b * s0 + start * s1,
            row: s1,
            head: s2,
            len,
        };
        if len > 0 {
            assert!(
                rows.at(len - 1, heads - 1) + d <= total,
                "a row lies past its array"
            );
        }
        rows
    }

    #[inline(always)]
    fn at(&self, r: usize, h: usize) -> usize {
        self.base + r * self.row + h * self.head
    }
}

/// `attention` forward for bf16 (`attention_bf16`) and f16 (`attention_f16`) q, k, v
/// and out, f32 accumulation; the module docs give the layout. A launch: block (128,
/// 1, 1), grid (⌈seqlen_q / 64⌉, heads, batch). `head_dim` is 64 or 128; `heads` a
/// multiple of `kv_heads`; `scale` positive (usually `1/√head_dim`).
#[kernel(bf16, f16)]
#[launch_bounds(128)]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn attention<T: AttentionElement>(
    q: &[T],
    k: &[T],
    v: &[T],
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
    let args = Args {
        q: T::bits(q),
        k: T::bits(k),
        v: T::bits(v),
        cu_q: cu_seqlens_q,
        cu_k: cu_seqlens_k,
        strides: [q_strides, k_strides, v_strides, out_strides],
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
        64 => attention_block::<T, 64>(&args, out, lse),
        128 => attention_block::<T, 128>(&args, out, lse),
        _ => panic!("head_dim must be 64 or 128"),
    }
}

/// The kernel's inputs, gathered.
struct Args<'a> {
    q: &'a [u16],
    k: &'a [u16],
    v: &'a [u16],
    cu_q: &'a [i32],
    cu_k: &'a [i32],
    strides: [[u64; 3]; 4],
    lse_strides: [u64; 2],
    batch: u32,
    heads: u32,
    kv_heads: u32,
    seqlen_q: u32,
    seqlen_k: u32,
    scale: f32,
    causal: bool,
}

/// Offset in a 64×D tile of element `col` of row `row`: 16-byte chunks swizzled by
/// `chunk ^ (row % 8)`, so the 8 rows one `ldmatrix` matrix reads hit 8 bank groups.
#[inline(always)]
fn swz<const D: usize>(row: usize, col: usize) -> usize {
    row * D + (((col / 8) ^ (row % 8)) * 8) + col % 8
}

/// Rows `r0..r0 + 64` of head `h` of `src` (zeros past `rows.len`) into the tile at
/// `dst`: 16-byte `cp.async` copies when `vec`, else element by element.
///
/// # Safety
/// `dst` is a 64×D shared tile that no thread reads until the copies' group is waited
/// for and the block synchronised, nor is reading now; `rows` were checked against
/// `src` ([`Rows::of`]); `vec` only when every row start is 16-byte aligned.
#[inline(always)]
unsafe fn load_tile<const D: usize>(
    dst: *mut u16,
    src: &[u16],
    rows: Rows,
    r0: usize,
    h: usize,
    vec: bool,
) {
    let tid = thread::threadIdx_x() as usize;
    let chunks = D / 8;
    if vec {
        for j in 0..BM * chunks / ATTENTION_THREADS as usize {
            let id = tid + ATTENTION_THREADS as usize * j;
            let (r, ch) = (id / chunks, id % chunks);
            let ok = r0 + r < rows.len;
            // SAFETY: in bounds when `ok` (Rows::of checked the last row); src-size 0
            // reads nothing otherwise; 16-byte aligned when `vec`.
            unsafe {
                let from = if ok {
                    src.as_ptr().add(rows.at(r0 + r, h) + ch * 8)
                } else {
                    src.as_ptr()
                };
                cp_async_cg_zfill(
                    dst.add(swz::<D>(r, ch * 8)) as *mut [u32; 4],
                    from as *const [u32; 4],
                    if ok { 16 } else { 0 },
                );
            }
        }
    } else {
        for j in 0..BM * D / ATTENTION_THREADS as usize {
            let e = tid + ATTENTION_THREADS as usize * j;
            let (r, c) = (e / D, e % D);
            let x = if r0 + r < rows.len {
                src[rows.at(r0 + r, h) + c]
            } else {
                0
            };
            // SAFETY: this thread's element of the tile (see the contract).
            unsafe { dst.add(swz::<D>(r, c)).write(x) };
        }
    }
}

#[inline(always)]
fn attention_block<T: AttentionElement, const D: usize>(
    a: &Args<'_>,
    mut out: DisjointSlice<T>,
    mut lse: DisjointSlice<f32>,
) {
    #[unsafe(link_section = ".oxide.shared")]
    static Q_S: SharedArray<u16, TILE> = SharedArray::UNINIT;
    #[unsafe(link_section = ".oxide.shared")]
    static K_S: SharedArray<u16, TILE> = SharedArray::UNINIT;
    #[unsafe(link_section = ".oxide.shared")]
    static V_S: SharedArray<u16, TILE> = SharedArray::UNINIT;
    let (heads, kv_heads) = (a.heads as usize, a.kv_heads as usize);
    assert!(
        kv_heads > 0 && heads.is_multiple_of(kv_heads),
        "heads must be a multiple of kv_heads"
    );
    assert!(a.scale > 0.0, "scale must be positive");
    let (b, h) = (thread::blockIdx_z() as usize, thread::blockIdx_y() as usize);
    if b >= a.batch as usize || h >= heads {
        return;
    }
    let hk = h / (heads / kv_heads);
    // The longest row blocks first (causal ones see the most keys): block x takes row
    // block `gridDim.x - 1 - x`.
    let m_block = (thread::gridDim_x() - 1 - thread::blockIdx_x()) as usize;
    let [qs, ks, vs, os] = a.strides;
    let qr = Rows::of(qs, a.cu_q, b, a.seqlen_q, heads, D, a.q.len());
    let kr = Rows::of(ks, a.cu_k, b, a.seqlen_k, kv_heads, D, a.k.len());
    let vr = Rows::of(vs, a.cu_k, b, a.seqlen_k, kv_heads, D, a.v.len());
    let or = Rows::of(os, a.cu_q, b, a.seqlen_q, heads, D, out.len());
    assert!(kr.len == vr.len);
    let (sq, sk) = (qr.len, kr.len);
    let m0 = m_block * BM;
    if m0 >= sq {
        return;
    }
    // Keys this block sees: all of them, or (causal) up to its last row's diagonal.
    let diag = sk as isize - sq as isize; // row i sees keys j <= i + diag
    let n_end = if a.causal {
        ((m0 + BM) as isize + diag).clamp(0, sk as isize) as usize
    } else {
        sk
    };
    let n_blocks = n_end.div_ceil(BN);
    let aligned = |s: &[u16], r: Rows| {
        (s.as_ptr() as usize).is_multiple_of(16) && (r.base % 8, r.row % 8, r.head % 8) == (0, 0, 0)
    };
    let vec = aligned(a.q, qr) && aligned(a.k, kr) && aligned(a.v, vr);

    let tid = thread::threadIdx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    let (q_s, k_s, v_s) = (Q_S.as_mut_ptr(), K_S.as_mut_ptr(), V_S.as_mut_ptr());
    let scale_log2 = a.scale * core::f32::consts::LOG2_E;

    // SAFETY (the whole pipeline): every warp-collective call below is made by all 32
    // lanes (no lane returns before the end); each tile is written only after the
    // barrier that follows every warp's last read of it, and read only after its
    // copies were waited for and the block synchronised.
    unsafe {
        load_tile::<D>(q_s, a.q, qr, m0, h, vec);
        if n_blocks > 0 {
            load_tile::<D>(k_s, a.k, kr, 0, hk, vec);
        }
        cp_async_commit_group();
        cp_async_wait_group::<0>();
        thread::sync_threads();
        let mut o = [[0.0f32; 4]; MAX_D / 8];
        // Running maximum (in log2 units, scale folded in) and this thread's part of the
        // running sum, for rows g and g + 8 of the warp's 16.
        let mut row_max = [f32::NEG_INFINITY; 2];
        let mut row_sum = [0.0f32; 2];
        for j in 0..n_blocks {
            let n0 = j * BN;
            if j > 0 {
                cp_async_wait_group::<0>();
                thread::sync_threads();
            }
            load_tile::<D>(v_s, a.v, vr, n0, hk, vec);
            cp_async_commit_group();
            // s = q·kᵀ: 8 tiles of 8 keys.
            let mut s = [[0.0f32; 4]; BN / 8];
            unrolled!(for kk in [0, 1, 2, 3, 4, 5, 6, 7] {
                if kk < D / 16 {
                    // This warp's 16 rows of q, columns 16kk.., as an A fragment (read
                    // from shared memory each step: 32 registers kept free for o).
                    let row = warp * 16 + lane % 16;
                    let qf = ldmatrix_x4(q_s.add(swz::<D>(row, kk * 16 + (lane / 16) * 8)));
                    unrolled!(for np in [0, 1, 2, 3] {
                        // Matrices (keys +0..8, d +0..8), (+0..8, +8..16), (+8..16, +0..8),
                        // (+8..16, +8..16): B fragments of key tiles 2np and 2np + 1.
                        let mi = lane / 8;
                        let key = np * 16 + (mi / 2) * 8 + lane % 8;
                        let kb = ldmatrix_x4(k_s.add(swz::<D>(key, kk * 16 + (mi % 2) * 8)));
                        s[2 * np] = T::mma(s[2 * np], qf, [kb[0], kb[1]]);
                        s[2 * np + 1] = T::mma(s[2 * np + 1], qf, [kb[2], kb[3]]);
                    });
                }
            });
            // Scale, mask, and the online softmax.
            let rows = [m0 + warp * 16 + g, m0 + warp * 16 + g + 8];
            let crosses = n0 + BN > sk || (a.causal && (n0 + BN) as isize - 1 > m0 as isize + diag);
            let mut x = [[0.0f32; 4]; BN / 8];
            let mut tile_max = [f32::NEG_INFINITY; 2];
            unrolled!(for nt in [0, 1, 2, 3, 4, 5, 6, 7] {
                unrolled!(for i in [0, 1, 2, 3] {
                    let col = n0 + nt * 8 + 2 * t + i % 2;
                    let masked = crosses
                        && (col >= sk || (a.causal && col as isize > rows[i / 2] as isize + diag));
                    x[nt][i] = if masked {
                        f32::NEG_INFINITY
                    } else {
                        s[nt][i] * scale_log2
                    };
                    tile_max[i / 2] = tile_max[i / 2].max(x[nt][i]);
                });
            });
            let mut alpha = [0.0f32; 2];
            let mut base = [0.0f32; 2];
            unrolled!(for r in [0, 1] {
                let mut m = tile_max[r];
                m = m.max(warp::shuffle_xor_f32(m, 1));
                m = m.max(warp::shuffle_xor_f32(m, 2));
                let new_max = row_max[r].max(m);
                // A row that has seen only masked keys keeps max -inf: subtract 0 then.
                base[r] = if new_max == f32::NEG_INFINITY {
                    0.0
                } else {
                    new_max
                };
                alpha[r] = ex2_approx_ftz(row_max[r] - base[r]);
                row_max[r] = new_max;
            });
            let mut p = [[0.0f32; 4]; BN / 8];
            let mut part = [0.0f32; 2];
            unrolled!(for nt in [0, 1, 2, 3, 4, 5, 6, 7] {
                unrolled!(for i in [0, 1, 2, 3] {
                    p[nt][i] = ex2_approx_ftz(x[nt][i] - base[i / 2]);
                    part[i / 2] += p[nt][i];
                });
            });
            unrolled!(for r in [0, 1] {
                row_sum[r] = row_sum[r] * alpha[r] + part[r];
            });
            unrolled!(
                for nt in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                    if nt < D / 8 {
                        unrolled!(for i in [0, 1, 2, 3] {
                            o[nt][i] *= alpha[i / 2];
                        });
                    }
                }
            );
            // p as A fragments: key tiles 2kk and 2kk + 1 make k-step kk.
            let mut pf = [[0u32; 4]; BN / 16];
            unrolled!(for kk in [0, 1, 2, 3] {
                pf[kk] = [
                    T::pack(p[2 * kk][0], p[2 * kk][1]),
                    T::pack(p[2 * kk][2], p[2 * kk][3]),
                    T::pack(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                    T::pack(p[2 * kk + 1][2], p[2 * kk + 1][3]),
                ];
            });
            // v has landed, and every warp is done with k: the next k may come in.
            cp_async_wait_group::<0>();
            thread::sync_threads();
            if j + 1 < n_blocks {
                load_tile::<D>(k_s, a.k, kr, n0 + BN, hk, vec);
            }
            cp_async_commit_group();
            // o += p·v: v is k×n (keys × d) with n contiguous, read transposed.
            unrolled!(for kk in [0, 1, 2, 3] {
                unrolled!(for np in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if np < D / 16 {
                        let key = kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
                        let col = np * 16 + (lane / 16) * 8;
                        let vb = ldmatrix_x4_trans(v_s.add(swz::<D>(key, col)));
                        o[2 * np] = T::mma(o[2 * np], pf[kk], [vb[0], vb[1]]);
                        o[2 * np + 1] = T::mma(o[2 * np + 1], pf[kk], [vb[2], vb[3]]);
                    }
                });
            });
        }
        cp_async_wait_group::<0>();

        // The row sums over the quad, then out = o / sum and lse = ln(sum) + max.
        let mut inv = [0.0f32; 2];
        let mut row_lse = [f32::NEG_INFINITY; 2];
        unrolled!(for r in [0, 1] {
            let mut l = row_sum[r];
            l += warp::shuffle_xor_f32(l, 1);
            l += warp::shuffle_xor_f32(l, 2);
            if l > 0.0 {
                inv[r] = 1.0 / l;
                row_lse[r] = (row_max[r] + l.log2()) * core::f32::consts::LN_2;
            }
        });
        let op = out.as_mut_ptr() as *mut u16;
        let pairs =
            (op as usize).is_multiple_of(4) && (or.base % 2, or.row % 2, or.head % 2) == (0, 0, 0);
        unrolled!(for r in [0, 1] {
            let row = m0 + warp * 16 + g + 8 * r;
            if row < sq {
                let at = or.at(row, h);
                unrolled!(
                    for nt in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                        if nt < D / 8 {
                            let packed = T::pack(o[nt][2 * r] * inv[r], o[nt][2 * r + 1] * inv[r]);
                            let e = at + nt * 8 + 2 * t;
                            // SAFETY: each element of out belongs to one lane of one warp of one
                            // block (its row and column); Rows::of checked the last row.
                            if pairs {
                                (op.add(e) as *mut u32).write(packed);
                            } else {
                                op.add(e).write(packed as u16);
                                op.add(e + 1).write((packed >> 16) as u16);
                            }
                        }
                    }
                );
                if t == 0 && !lse.is_empty() {
                    let [l0, l1] = a.lse_strides.map(|s| s as usize);
                    let start = if a.cu_q.is_empty() {
                        0
                    } else {
                        a.cu_q[b] as usize
                    };
                    let i = b * l0 + h * l1 + start + row;
                    assert!(i < lse.len(), "lse is too short");
                    // SAFETY: one lane per row writes its element; in bounds.
                    (lse.as_mut_ptr()).add(i).write(row_lse[r]);
                }
            }
        });
    }
}
