"""Triton's fused-attention tutorial (python/tutorials/06-fused-attention.py), written
here from its algorithm and with its tuning space: the Triton peer of
scripts/bench_attention, which imports it from beside itself.

One program per (block of BM query rows, batch·head): q stays in registers, keys and
values stream through in blocks of BN, loaded through TMA tensor descriptors made on the
host (as the tutorial does on Hopper); a running maximum m and sum (total) per row,
exp2 with log2(e) folded into the scale, the accumulator rescaled by 2^(m_old - m_new).
Causal: the blocks left of the diagonal band run unmasked, the band's blocks masked.

The autotuner tries the tutorial's whole space (BM 64 or 128, BN 32, 64 or 128, 2 to 4
stages, 4 or 8 warps; on sm_90 no 8-warp config under 128×128), so that the peer is the
tutorial at its best on the card, not one hand-picked config. Shapes: (B, H, S, D)
contiguous, S a multiple of 128."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _attn_blocks(
    acc,
    total,
    m,
    q,
    desc_k,
    desc_v,
    row0,
    lo,
    hi,
    offs_m,
    offs_n,
    qk_scale,
    BN: tl.constexpr,
    MASKED: tl.constexpr,
):
    for start in tl.range(lo, hi, BN):
        start = tl.multiple_of(start, BN)
        kt = desc_k.load([row0 + start, 0]).T
        s = tl.dot(q, kt)
        if MASKED:
            keep = offs_m[:, None] >= (start + offs_n)[None, :]
            s = s * qk_scale + tl.where(keep, 0.0, -1.0e6)
            m_new = tl.maximum(m, tl.max(s, 1))
            s = s - m_new[:, None]
        else:
            m_new = tl.maximum(m, tl.max(s, 1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(s)
        alpha = tl.math.exp2(m - m_new)
        total = total * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        vv = desc_v.load([row0 + start, 0])
        acc = tl.dot(p.to(vv.dtype), vv, acc)
        m = m_new
    return acc, total, m


def _sized(nargs: dict[str, Any]) -> None:
    """The config's tile sizes on the descriptors (a pre-hook: they are made once)."""
    bm, bn, d = nargs["BM"], nargs["BN"], nargs["D"]
    nargs["desc_q"].block_shape = [bm, d]
    nargs["desc_o"].block_shape = [bm, d]
    nargs["desc_k"].block_shape = [bn, d]
    nargs["desc_v"].block_shape = [bn, d]


def _space() -> list[triton.Config]:
    """The tutorial's space, less what it drops on sm_90 (8 warps on tiles under
    128×128)."""
    hopper = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
    return [
        triton.Config({"BM": bm, "BN": bn}, num_stages=s, num_warps=w, pre_hook=_sized)
        for bm in (64, 128)
        for bn in (32, 64, 128)
        for s in (2, 3, 4)
        for w in (4, 8)
        if not (hopper and w == 8 and bm * bn < 128 * 128)
    ]


def _valid(configs: list[triton.Config], named_args: dict[str, Any], **kwargs: Any) -> list:
    """Causal rows take the band in key blocks of at most BM (a wider block would run
    keys of the band unmasked); no config's BM exceeds the sequence."""
    args = {**named_args, **kwargs}
    return [
        c
        for c in configs
        if c.kwargs["BM"] <= args["N"] and not (args["CAUSAL"] and c.kwargs["BN"] > c.kwargs["BM"])
    ]


@triton.autotune(
    configs=_space(),
    key=["N", "D", "CAUSAL"],
    prune_configs_by={"early_config_prune": _valid},
)
@triton.jit
def _triton_attention(
    desc_q,
    desc_k,
    desc_v,
    desc_o,
    sm_scale,
    N,
    D: tl.constexpr,
    CAUSAL: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
):
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N  # this batch·head's first row of the flattened arrays
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    q = desc_q.load([row0 + start_m * BM, 0])
    m = tl.full([BM], float("-inf"), tl.float32)
    total = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # Off the band: keys [0, start_m·BM); on it: the block's own keys, masked.
        acc, total, m = _attn_blocks(
            acc, total, m, q, desc_k, desc_v, row0, 0, start_m * BM, offs_m, offs_n,
            qk_scale, BN, False,
        )  # fmt: skip
        acc, total, m = _attn_blocks(
            acc, total, m, q, desc_k, desc_v, row0, start_m * BM, (start_m + 1) * BM,
            offs_m, offs_n, qk_scale, BN, True,
        )  # fmt: skip
    else:
        acc, total, m = _attn_blocks(
            acc, total, m, q, desc_k, desc_v, row0, 0, N, offs_m, offs_n, qk_scale, BN, False
        )  # fmt: skip
    acc = acc / total[:, None]
    desc_o.store([row0 + start_m * BM, 0], acc.to(desc_o.dtype))


def descriptors(*arrays: torch.Tensor) -> list[TensorDescriptor]:
    """Each (B, H, S, D) array as a 2-D (B·H·S, D) tensor descriptor; the block shape is
    the config's (set by `_sized`)."""
    out = []
    for a in arrays:
        assert a.is_contiguous(), "the Triton peer takes contiguous (B, H, S, D) arrays"
        d = a.shape[-1]
        rows = a.numel() // d
        out.append(TensorDescriptor(a, shape=[rows, d], strides=[d, 1], block_shape=[1, d]))
    return out


def triton_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, causal: bool
) -> None:
    """o = softmax(q·kᵀ/√d)·v (causal: row i sees keys up to i), by the tutorial's
    algorithm; the first call at a (S, D, causal) tunes (Triton's autotuner, cached)."""
    b, h, n, d = q.shape
    assert n % 128 == 0, "the Triton peer takes sequences of a multiple of 128"

    def grid(meta: dict[str, Any]) -> tuple[int, int]:
        return (triton.cdiv(n, meta["BM"]), b * h)

    _triton_attention[grid](*descriptors(q, k, v, o), d**-0.5, n, D=d, CAUSAL=causal)
