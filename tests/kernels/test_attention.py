"""`kernels.attention(q, k, v, out, ...)` on every array library, against the spec's
float64 reference (kernels_rs/specs/attention.py, with its tolerance): the layouts and
views the call takes without a copy (FlashAttention's (B, S, H, D), SDPA's (B, H, S,
D), q, k and v as views of one packed qkv array, out written through a transposed
view), grouped-query attention with the log-sum-exp, and packed variable-length
batches. On an sm_90 GPU aligned calls run kernels_sm90a's wgmma kernel (checked by
`picks`), at sizes whose key tiles wrap its shared-memory ring several times; the
emulator runs the mma.sync kernel at small sizes. `pyoxide verify` runs the spec's
200 cases; tests/bundled/test_attention_call.py the argument checks."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, skip_on_emu
from helpers.bundled import bundled_specs, sm90a_kernels_manifest
from helpers.probes import requires_sm90, sm90_device_present

import pyoxide
from pyoxide.bundled.attention import SM90_KERNEL, Attention, add_attention, as_attention
from pyoxide.spec import Case

BF16 = ml_dtypes.bfloat16
SPEC = bundled_specs()["attention"]


@pytest.fixture(scope="module")
def attention(kernels: pyoxide.Module) -> Attention:
    """The call as `from pyoxide import kernels` serves it: the sm_90a kernel where it runs."""
    module = pyoxide.load(kernels.manifest)
    add_attention(module, lambda: pyoxide.load(sm90a_kernels_manifest()))
    return module.attention  # type: ignore[no-any-return]


#: The call, or one instance of the sm_90a kernel on its own (its tuned consts PINGPONG,
#: PERSISTENT and D64_ROWS: each instance must compute the same attention, whichever a
#: tuned choice runs).
SCHEDULES = [
    "call",
    *(pytest.param(f"PINGPONG={p},PERSISTENT={g},D64_ROWS={r}",
                   marks=[pytest.mark.gpu, skip_on_emu("sm_90a code"),
                          requires_sm90("the sm_90a kernel's schedules")])
      for p in ("0", "1") for g in ("0", "1", "2") for r in ("192", "128")),
]  # fmt: skip


def schedule_call(attention: Attention, schedule: str, dtype: str) -> Attention:
    """``attention``, or the call pinned to the sm_90a instance of ``schedule``."""
    if schedule == "call":
        return attention
    sm90 = pyoxide.load(sm90a_kernels_manifest(), tuned=False)
    want = {"T": dtype, **dict(c.split("=") for c in schedule.split(","))}
    entry = next(k.entry for k in sm90.manifest.kernels
                 if k.name == SM90_KERNEL and dict(k.instance) == want)  # fmt: skip
    return as_attention(sm90[entry])


def on_sm90(lib: ArrayLib) -> bool:
    return lib.on_gpu and sm90_device_present()


def want(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, dtype: str = "bf16",
         cu: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """The spec's reference for (B, S, H, D) arrays (packed (T, H, D) with `cu`)."""
    h, hk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if cu is None:
        shape = (q.shape[0], q.shape[1], k.shape[1], hk, h // hk, d // 128, int(causal), 0, 0)
        args = {"q": q, "k": k, "v": v, "scale": d**-0.5}
    else:
        shape = (len(cu[0]) - 1, 1, 1, hk, h // hk, d // 128, int(causal), 1, 0)
        args = {
            "q": q,
            "k": k,
            "v": v,
            "scale": d**-0.5,
            "cu_seqlens_q": cu[0],
            "cu_seqlens_k": cu[1],
        }
    return SPEC.reference(args, Case(shape, dtype))


def check(lib: ArrayLib, got: Any, ref: np.ndarray, dtype: str = "bf16", what: str = "") -> None:
    g = lib.to_numpy(got).astype(np.float64)
    assert np.isfinite(g).all(), f"{what}: unwritten (NaN) output"
    tol = SPEC.tolerance(Case((1,), dtype))
    err = np.linalg.norm(g - ref) / np.linalg.norm(ref)
    assert err < tol, f"{what}: relative error {err:.2e} (tolerance {tol:.1e})"


def normal(rng: np.random.Generator, shape: tuple[int, ...], dt: Any = BF16) -> np.ndarray:
    return rng.standard_normal(shape).astype(dt)


def test_layouts_and_views_need_no_copy(attention: Attention, lib: ArrayLib) -> None:
    """(B, S, H, D), (B, H, S, D), q/k/v as views of one packed (B, S, 3, H, D) array and
    out as a transposed view: each the same answer, written in place."""
    rng = np.random.default_rng(0)
    b, s, h, d = (2, 300, 4, 128) if lib.on_gpu else (1, 70, 2, 64)
    qkv = normal(rng, (b, s, 3, h, d))
    ref = want(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True)["out"]
    base = lib.asarray(qkv.reshape(-1))
    packed = (s * 3 * h * d, 3 * h * d, d, 1)  # (B, S, H, D) strides of each of q, k, v
    q, k, v = (lib.view(base, (b, s, h, d), packed, i * h * d) for i in range(3))
    out = lib.poisoned((b, s, h, d), BF16)
    attention(q, k, v, out, causal=True)
    check(lib, out, ref, what="packed qkv")
    # The same arrays as (B, H, S, D) views (SDPA's layout), out through a transposed view
    # of a (B, S, H, D) buffer.
    bhsd = (s * 3 * h * d, d, 3 * h * d, 1)
    q, k, v = (lib.view(base, (b, h, s, d), bhsd, i * h * d) for i in range(3))
    flat_out = lib.poisoned((b * s * h * d,), BF16)
    out_t = lib.view(flat_out, (b, h, s, d), (s * h * d, d, h * d, 1))
    attention(q, k, v, out_t, causal=True, layout="bhsd")
    check(lib, flat_out, ref.reshape(-1), what="(B, H, S, D) views")
    if on_sm90(lib):
        # The hand pick (PINGPONG = 0) unless a tuned choice for this bucket says otherwise.
        picked = attention.picks(q, k, v, out_t, layout="bhsd")
        assert picked.startswith("attention_sm90_bf16_"), picked


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_gqa_causal_and_lse(attention: Attention, lib: ArrayLib, dtype: str, schedule: str) -> None:
    """Grouped-query attention (4 query heads a key head) at both head dimensions, causal
    and not, with fewer and more keys than queries; the log-sum-exp too. Through the call,
    and (on an sm_90 GPU) through each schedule of the sm_90a kernel on its own."""
    attention = schedule_call(attention, schedule, dtype)
    rng = np.random.default_rng(1)
    dt = BF16 if dtype == "bf16" else np.float16
    shapes = [(1, 65, 130, 64), (1, 130, 65, 128), (2, 1, 200, 64)]
    if lib.on_gpu:  # many key tiles: the sm_90 ring wraps, its phases flip
        shapes += [(2, 1024, 1024, 128), (1, 2000, 3000, 64), (1, 3001, 1500, 128)]
    for b, sq, sk, d in shapes:
        for causal in (False, True):
            q, k, v = (
                normal(rng, (b, sq, 8, d), dt),
                normal(rng, (b, sk, 2, d), dt),
                normal(rng, (b, sk, 2, d), dt),
            )
            ref = want(q, k, v, causal, dtype)
            out = lib.poisoned((b, sq, 8, d), dt)
            lse = lib.poisoned((b, 8, sq), np.float32)
            attention(lib.asarray(q), lib.asarray(k), lib.asarray(v), out, causal, lse=lse)
            what = f"{dtype} {b}x{sq}x{sk} d{d} causal={causal}"
            check(lib, out, ref["out"], dtype, what)
            got_lse = lib.to_numpy(lse)
            seen = ref["lse"] != SPEC.observe({"lse": np.array([-np.inf])}, Case((1,)))["lse"][0]
            assert np.isneginf(got_lse[~seen]).all(), f"{what}: rows that see no key"
            np.testing.assert_allclose(got_lse[seen], ref["lse"][seen], rtol=1e-5, atol=1e-5,
                                       err_msg=what)  # fmt: skip


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_variable_lengths(attention: Attention, lib: ArrayLib, schedule: str) -> None:
    """Packed sequences of different lengths (one empty) with cumulative offsets: each
    sequence attends only to its own keys, and rows past a sequence are not written.
    Through each schedule too: a persistent block meets tiles past their sequence, and
    a sequence with fewer keys than rows, between the tiles it computes."""
    attention = schedule_call(attention, schedule, "bf16")
    rng = np.random.default_rng(2)
    lq = [5, 0, 130, 64] if not lib.on_gpu else [5, 0, 1300, 640, 129]
    lk = [7, 3, 100, 64] if not lib.on_gpu else [7, 3, 1000, 2048, 129]
    cu_q, cu_k = (np.concatenate([[0], np.cumsum(x)]).astype(np.int32) for x in (lq, lk))
    h, hk, d = 4, 2, 64
    q, k, v = (
        normal(rng, (cu_q[-1], h, d)),
        normal(rng, (cu_k[-1], hk, d)),
        normal(rng, (cu_k[-1], hk, d)),
    )
    for causal in (False, True):
        ref = want(q, k, v, causal, cu=(cu_q, cu_k))
        out = lib.poisoned(q.shape, BF16)
        attention(lib.asarray(q), lib.asarray(k), lib.asarray(v), out, causal,
                  cu_seqlens_q=lib.asarray(cu_q), cu_seqlens_k=lib.asarray(cu_k))  # fmt: skip
        check(lib, out, ref["out"], what=f"varlen causal={causal}")


def test_misaligned_views_take_the_plain_kernel(attention: Attention, lib: ArrayLib) -> None:
    """Arrays that start off a 16-byte boundary run (element by element) in the mma.sync
    kernel, on any device."""
    rng = np.random.default_rng(3)
    b, s, h, d = 1, 100, 2, 64
    x = normal(rng, (3 * b * s * h * d + 1,))
    base = lib.asarray(x)
    shape, strides = (b, s, h, d), (s * h * d, h * d, d, 1)
    q, k, v = (lib.view(base, shape, strides, 1 + i * b * s * h * d) for i in range(3))
    out = lib.poisoned(shape, BF16)
    assert attention.picks(q, k, v, out) == "attention_bf16"
    attention(q, k, v, out)
    parts = [
        x[1 + i * b * s * h * d : 1 + (i + 1) * b * s * h * d].reshape(shape) for i in range(3)
    ]
    check(lib, out, want(*parts, causal=False)["out"], what="misaligned")
