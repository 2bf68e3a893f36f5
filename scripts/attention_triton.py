"""Triton's fused-attention tutorial, written here from its algorithm: the Triton peer
of scripts/bench_attention (imported from there, beside which it lives)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# One program per (block of BM query rows, batch·head): q stays in registers, the keys
# and values stream through in blocks of BN; running maximum m and sum (total) per row,
# exp2 with log2(e) folded into the scale, the accumulator rescaled by 2^(m_old - m_new).
# Causal: the blocks left of the diagonal band run unmasked, the band's blocks masked.


@triton.jit
def _attn_blocks(
    acc,
    total,
    m,
    q,
    k_base,
    v_base,
    lo,
    hi,
    offs_m,
    offs_n,
    qk_scale,
    stride_n,
    D: tl.constexpr,
    BN: tl.constexpr,
    MASKED: tl.constexpr,
):
    offs_d = tl.arange(0, D)
    for start in range(lo, hi, BN):
        start = tl.multiple_of(start, BN)
        cols = start + offs_n
        kt = tl.load(k_base + cols[None, :] * stride_n + offs_d[:, None])
        s = tl.dot(q, kt)
        if MASKED:
            s = s * qk_scale + tl.where(offs_m[:, None] >= cols[None, :], 0.0, -1.0e6)
            m_new = tl.maximum(m, tl.max(s, 1))
            s = s - m_new[:, None]
        else:
            m_new = tl.maximum(m, tl.max(s, 1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(s)
        alpha = tl.math.exp2(m - m_new)
        total = total * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        vv = tl.load(v_base + cols[:, None] * stride_n + offs_d[None, :])
        acc = tl.dot(p.to(vv.dtype), vv, acc)
        m = m_new
    return acc, total, m


@triton.autotune(
    configs=[
        triton.Config({"BM": 128, "BN": 64}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128}, num_stages=3, num_warps=8),
    ],
    key=["N", "D", "CAUSAL"],
)
@triton.jit
def _triton_attention(
    q,
    k,
    v,
    o,
    sm_scale,
    stride_bh,
    stride_n,
    N,
    D: tl.constexpr,
    CAUSAL: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    base = bh.to(tl.int64) * stride_bh
    qb = tl.load(q + base + offs_m[:, None] * stride_n + offs_d[None, :])
    m = tl.full([BM], float("-inf"), tl.float32)
    total = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # Off the band: keys [0, start_m·BM); on it: the block's own keys, masked.
        acc, total, m = _attn_blocks(
            acc,
            total,
            m,
            qb,
            k + base,
            v + base,
            0,
            start_m * BM,
            offs_m,
            offs_n,
            qk_scale,
            stride_n,
            D,
            BN,
            False,
        )
        acc, total, m = _attn_blocks(
            acc,
            total,
            m,
            qb,
            k + base,
            v + base,
            start_m * BM,
            (start_m + 1) * BM,
            offs_m,
            offs_n,
            qk_scale,
            stride_n,
            D,
            BN,
            True,
        )
    else:
        acc, total, m = _attn_blocks(
            acc,
            total,
            m,
            qb,
            k + base,
            v + base,
            0,
            N,
            offs_m,
            offs_n,
            qk_scale,
            stride_n,
            D,
            BN,
            False,
        )
    acc = acc / total[:, None]
    tl.store(o + base + offs_m[:, None] * stride_n + offs_d[None, :], acc.to(o.dtype.element_ty))


def triton_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, causal: bool
) -> None:
    b, h, n, d = q.shape

    def grid(meta: dict) -> tuple[int, int]:
        return (triton.cdiv(n, meta["BM"]), b * h)

    _triton_attention[grid](q, k, v, o, d**-0.5, q.stride(1), q.stride(2), n, D=d, CAUSAL=causal)
