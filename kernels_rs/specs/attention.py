"""Spec of kernels_rs/src/attention.rs (`attention`, bf16 and f16) as
``kernels.attention`` calls it (pyoxide/bundled/attention.py): on an sm_90 GPU aligned cases
run kernels_sm90a's ``attention_sm90``, misaligned views and the CPU emulator the
mma.sync kernel. Compared with a float64 reference on the 16-bit inputs.

It also verifies and tunes ``attention_sm90``'s schedules (``serves``): ``pyoxide tune``
runs each instance through ``as_attention`` (the call's argument preparation, pinned to
that instance), buckets by the scalars the call derives (``derived``: the kernel's tune
key is head_dim, seqlen_k and causal) and, at the long sequences it tunes (S up to
16384, where the float64 reference is ~10^12 flops), verifies each candidate at
``verify_shape``: the same batch layout, head dimension, mask and GQA, S cut to 300 or
less (not a multiple of the 64- or 128-row tiles).

A case's shape is (batch, seqlen_q, seqlen_k, kv_heads, group, d128, causal, varlen,
bhsd): heads = kv_heads · group (grouped-query attention when group > 1), head
dimension 128 if d128 else 64, the bottom-right causal mask if causal, packed
sequences with cumulative offsets if varlen (each sequence's lengths drawn up to
seqlen_q and seqlen_k from the case's seed), else (B, S, H, D) arrays, or (B, H, S, D)
if bhsd. Shrinking a failing case keeps every flag (0 and 1 have no smaller positive
value) and keeps the head dimension valid.

Tolerance: p is rounded to the input type before p·v and out is rounded once: bf16
measures 2e-3 relative (Frobenius), f16 3e-4; the bounds are 2^-7 and 2^-10. The
log-sum-exp (f32) is within 1e-6. Rows that see no key (causal with Sq > Sk, empty
sequences) have out 0 and lse -inf, compared as -50 on both sides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyoxide.bundled.attention import DERIVED, SM90_KERNEL, as_attention, derived_scalars
from pyoxide.spec import Case, Out, Shape, Spec

F64 = np.float64
#: lse's -inf (a row that sees no key), as compared: finite, so that the relative error
#: of the whole array stays defined.
NO_KEYS = -50.0

# Edge cases first: S = 1, S around the tiles (64 rows and keys for the mma.sync
# kernel, 128 for the sm_90 one), causal with fewer and more keys than queries (300
# queries against 20 keys: whole tiles of 64, 128 and 192 rows whose rows see no key),
# GQA, variable lengths, (B, H, S, D).
EDGE: list[Shape] = [
    (1, 1, 1, 1, 1, 0, 0, 0, 0), (1, 1, 1, 1, 1, 1, 1, 0, 0), (1, 1, 77, 1, 1, 0, 1, 0, 0),
    (1, 64, 64, 1, 1, 0, 0, 0, 0), (1, 65, 65, 1, 1, 1, 1, 0, 0), (2, 129, 129, 1, 2, 0, 1, 0, 0),
    (1, 100, 37, 2, 1, 1, 1, 0, 0), (1, 37, 100, 1, 1, 0, 1, 0, 0), (1, 128, 256, 2, 2, 1, 0, 0, 1),
    (2, 33, 17, 1, 4, 0, 0, 0, 1), (3, 70, 90, 1, 2, 1, 0, 1, 0), (4, 50, 50, 2, 1, 0, 1, 1, 0),
    (1, 200, 200, 1, 1, 1, 1, 0, 1), (2, 130, 129, 2, 2, 0, 1, 1, 0), (1, 1, 200, 1, 3, 1, 0, 0, 0),
    (1, 300, 20, 1, 1, 0, 1, 0, 0),
]  # fmt: skip


def _shapes(rng: np.random.Generator, count: int) -> list[Shape]:
    out = list(EDGE)
    # Random cases stay small: the emulator runs all of them in CI.
    while len(out) < count:
        seq = [int(np.exp(rng.uniform(0, np.log(160)))) for _ in range(2)]
        out.append((
            int(rng.integers(1, 3)), seq[0], seq[1], int(rng.integers(1, 3)),
            int(rng.choice([1, 1, 2])), int(rng.integers(0, 2)), int(rng.integers(0, 2)),
            int(rng.integers(0, 2)), int(rng.integers(0, 2)),
        ))  # fmt: skip
    return out


def _dims(case: Case) -> tuple[int, ...]:
    b, sq, sk, hk, group, d128, causal, varlen, bhsd = case.shape
    return b, sq, sk, hk * group, hk, 128 if d128 else 64, causal, varlen, bhsd


def _lengths(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's query and key lengths (varlen: drawn from the case's seed, so
    that the output shapes follow from the case alone)."""
    b, sq, sk, *_ = _dims(case)
    if not case.shape[7]:
        return np.full(b, sq), np.full(b, sk)
    rng = np.random.default_rng(case.seed + 7)
    return rng.integers(0, sq + 1, b), rng.integers(0, sk + 1, b)


def _cu(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def _q_shape(case: Case) -> Shape:
    b, sq, _, h, _, d, _, varlen, bhsd = _dims(case)
    if varlen:
        return (int(_lengths(case)[0].sum()), h, d)
    return (b, h, sq, d) if bhsd else (b, sq, h, d)


def _lse_shape(case: Case) -> Shape:
    b, sq, _, h, *_ = _dims(case)
    return (h, _q_shape(case)[0]) if case.shape[7] else (b, h, sq)


def _inputs(case: Case, rng: np.random.Generator) -> dict[str, Any]:
    b, _sq, sk, _h, hk, d, causal, varlen, bhsd = _dims(case)
    lq, lk = _lengths(case)
    if varlen:
        kv_shape: Shape = (int(lk.sum()), hk, d)
    else:
        kv_shape = (b, hk, sk, d) if bhsd else (b, sk, hk, d)
    dt = case.np_dtype
    empty = np.zeros(0, np.int32)
    return {
        "q": rng.standard_normal(_q_shape(case)).astype(dt),
        "k": rng.standard_normal(kv_shape).astype(dt),
        "v": rng.standard_normal(kv_shape).astype(dt),
        "cu_seqlens_q": _cu(lq) if varlen else empty,
        "cu_seqlens_k": _cu(lk) if varlen else empty,
        "scale": float(1 / np.sqrt(d)),
        "causal": bool(causal),
        **dict.fromkeys(DERIVED),  # the call derives these from the arrays
    }


def _sequences(a: dict[str, Any], case: Case) -> list[tuple[np.ndarray, ...]]:
    """(q, k, v) of each sequence, as (S, H, D) float64 arrays."""
    b, *_, varlen, bhsd = _dims(case)
    x = {n: a[n].astype(F64) for n in "qkv"}
    if varlen:
        cq, ck = a["cu_seqlens_q"], a["cu_seqlens_k"]
        return [(x["q"][cq[i]:cq[i + 1]], x["k"][ck[i]:ck[i + 1]], x["v"][ck[i]:ck[i + 1]])
                for i in range(b)]  # fmt: skip
    if bhsd:
        x = {n: x[n].transpose(0, 2, 1, 3) for n in x}
    return [(x["q"][i], x["k"][i], x["v"][i]) for i in range(b)]


def _reference(a: dict[str, Any], case: Case) -> dict[str, np.ndarray]:
    _b, _sq, _, h, hk, _d, causal, varlen, bhsd = _dims(case)
    outs, lses = [], []
    for q, k, v in _sequences(a, case):
        k, v = np.repeat(k, h // hk, axis=1), np.repeat(v, h // hk, axis=1)
        # (h, sq, d) @ (h, d, sk): BLAS, not einsum's loops (GPU tests use large sizes).
        s = (q.transpose(1, 0, 2) @ k.transpose(1, 2, 0)) * a["scale"]
        if causal:
            n, m = q.shape[0], k.shape[0]
            s = np.where(np.arange(m)[None, :] <= np.arange(n)[:, None] + m - n, s, -np.inf)
        top = s.max(axis=-1, initial=-np.inf, keepdims=True)
        seen = np.isfinite(top)
        p = np.exp(s - np.where(seen, top, 0))
        total = p.sum(axis=-1, keepdims=True)
        outs.append(((p / np.where(seen, total, 1)) @ v.transpose(1, 0, 2)).transpose(1, 0, 2))
        lse = np.where(seen, np.log(np.where(seen, total, 1)) + top, NO_KEYS)[..., 0]
        lses.append(lse)  # (h, sq)
    if varlen:
        return {"out": np.concatenate(outs), "lse": np.concatenate(lses, axis=1)}
    out = np.stack(outs)
    return {
        "out": out.transpose(0, 2, 1, 3) if bhsd else out,
        "lse": np.stack(lses),
    }


def _observe(got: dict[str, np.ndarray], case: Case) -> dict[str, np.ndarray]:
    lse = got["lse"]
    return {**got, "lse": np.where(np.isneginf(lse), NO_KEYS, lse)}


def _options(named: dict[str, Any], case: Case) -> dict[str, Any]:
    """The call's keyword arguments for a case's arguments (by parameter name)."""
    varlen, bhsd = case.shape[7], case.shape[8]
    return {
        "causal": named["causal"], "scale": named["scale"],
        "cu_seqlens_q": named["cu_seqlens_q"] if varlen else None,
        "cu_seqlens_k": named["cu_seqlens_k"] if varlen else None,
        "layout": "bhsd" if bhsd else "bshd",
    }  # fmt: skip


def _launch(kernel: Any, args: list[Any], case: Case) -> None:
    named = dict(zip((p.name for p in kernel.spec.params), args, strict=True))
    as_attention(kernel)(named["q"], named["k"], named["v"], named["out"], lse=named["lse"],
                         **_options(named, case))  # fmt: skip


def _derived(a: dict[str, Any], case: Case) -> dict[str, Any]:
    return derived_scalars(a["q"], a["k"], a["v"], a["out"], **_options(a, case))


#: The longest sequence a tuned candidate is verified at (verify_shape).
VERIFY_S = 300


def _verify_shape(shape: Shape) -> Shape:
    """The tuned shape with each sequence cut to at most VERIFY_S (minus one a tile's
    multiple) and the batch to 2: everything else (GQA, head dim, causal, layout) kept."""
    b, sq, sk, *rest = shape

    def cut(s: int) -> int:
        s = min(s, VERIFY_S)
        return s - 1 if s % 64 == 0 and s > 1 else s

    return (min(b, 2), cut(sq), cut(sk), *rest)


def _flops(case: Case) -> int:
    _b, _sq, _sk, h, _, d, causal, *_ = _dims(case)
    lq, lk = _lengths(case)
    pairs = int((lq * lk).sum())
    return int(4 * h * d * pairs * (0.5 if causal else 1.0))


def _bytes(case: Case) -> int:
    _b, _sq, _sk, h, hk, d, *_ = _dims(case)
    lq, lk = _lengths(case)
    return int(2 * d * (2 * h * lq.sum() + 2 * hk * lk.sum()) + 4 * h * lq.sum())


def _torch_sdpa(a: dict[str, Any]) -> Any:
    import torch

    # (B, S, H, D) as SDPA's (B, H, S, D) views; GQA by enable_gqa.
    q, k, v = (torch.from_dlpack(a[n]).transpose(1, 2) for n in "qkv")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return lambda: sdpa(q, k, v, is_causal=bool(a["causal"]),
                                                  enable_gqa=True)  # fmt: skip


ATTENTION = Spec(
    kernel="attention",
    dtypes=("bf16", "f16"),
    inputs=_inputs,
    outputs={"out": Out(_q_shape), "lse": Out(_lse_shape, dtype="f32")},
    shapes=_shapes,
    reference=_reference,
    observe=_observe,
    launch=_launch,
    tolerance=lambda case: 2.0**-7 if case.dtype == "bf16" else 2.0**-10,
    flops=_flops,
    bytes=_bytes,
    bench_shapes=[(8, 2048, 2048, 16, 1, 1, 0, 0, 0), (8, 2048, 2048, 16, 1, 1, 1, 0, 0)],
    peers={"torch SDPA": _torch_sdpa},
    serves=(SM90_KERNEL,),
    derived=_derived,
    verify_shape=_verify_shape,
)

SPECS = [ATTENTION]
