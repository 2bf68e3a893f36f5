"""16-bit float parameters (tests/fixtures/half_kernels): `f16` and `bf16` slices,
outputs, shaped arrays and scalars, on every array library (`lib`): NumPy float16 and
ml_dtypes.bfloat16 arrays on the emulator, CuPy and PyTorch arrays on the GPU. Each
kernel computes in f32 and rounds once, so NumPy's float32 arithmetic followed by one
conversion gives the same bits."""

from __future__ import annotations

import math
import pickle

import ml_dtypes
import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, sizes

import pyoxide
from pyoxide._launch.half import half_bits, half_value
from pyoxide.errors import ArgumentTypeError, ArgumentValueError

RNG = np.random.default_rng()
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f16": np.dtype(np.float16), "bf16": BF16}


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16)


@pytest.mark.parametrize("t", ["f16", "bf16"])
@pytest.mark.parametrize("n", sizes(0, 1, 256, 1000))
def test_axpy_rounds_once_like_numpy(half: pyoxide.Module, lib: ArrayLib, t: str, n: int) -> None:
    dt = DTYPES[t]
    x = RNG.standard_normal(n).astype(np.float32).astype(dt)
    y = RNG.standard_normal(n).astype(np.float32).astype(dt)
    a = float(RNG.uniform(-3, 3))  # a Python float: the launcher rounds it to t
    a_t = np.float32(half_value(t, half_bits(t, a)))
    out = lib.poisoned(n, dt)
    half[f"axpy_{t}"](a, lib.asarray(x), lib.asarray(y), out)
    want = (a_t * x.astype(np.float32) + y.astype(np.float32)).astype(dt)
    np.testing.assert_array_equal(bits(lib.to_numpy(out)), bits(want))


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_misaligned_views_of_half_arrays(half: pyoxide.Module, lib: ArrayLib, t: str) -> None:
    """x[1:] starts 2 bytes in: still aligned to its elements, so it runs as is."""
    dt = DTYPES[t]
    x = RNG.standard_normal(1001).astype(np.float32).astype(dt)
    y = RNG.standard_normal(1000).astype(np.float32).astype(dt)
    out = lib.poisoned(1000, dt)
    half[f"axpy_{t}"](2.0, lib.asarray(x)[1:], lib.asarray(y), out)
    want = (2 * x[1:].astype(np.float32) + y.astype(np.float32)).astype(dt)
    np.testing.assert_array_equal(bits(lib.to_numpy(out)), bits(want))


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_rounding_from_f32_is_nearest_even(half: pyoxide.Module, lib: ArrayLib, t: str) -> None:
    dt = DTYPES[t]
    # Random values over the type's range, and every tie between neighbours of a sample.
    lo = RNG.integers(0, 0x7BFF if t == "f16" else 0x7F7F, 2000).astype(np.uint16)
    low, high = lo.view(dt).astype(np.float32), (lo + 1).view(dt).astype(np.float32)
    ties = (low + (high - low) / 2).astype(np.float32)
    x = np.concatenate([RNG.standard_normal(3001).astype(np.float32) * 100, ties, -ties])
    out = lib.poisoned(x.size, dt)
    half.round_trip(lib.asarray(x), out)  # dispatched on out's dtype
    np.testing.assert_array_equal(bits(lib.to_numpy(out)), bits(x.astype(dt)))


@pytest.mark.parametrize("t", ["f16", "bf16"])
@pytest.mark.parametrize("view", ["c", "transposed", "every_other_row"])
def test_shaped_half_arrays_of_any_strides(
    half: pyoxide.Module, lib: ArrayLib, t: str, view: str
) -> None:
    dt = DTYPES[t]
    base = RNG.standard_normal((70, 45)).astype(np.float32).astype(dt)
    dev = lib.asarray(base)
    if view == "c":
        x, host = dev, base
    elif view == "transposed":
        x, host = lib.view(dev, (45, 70), (1, 45)), base.T
    else:
        x, host = lib.view(dev, (35, 45), (90, 1)), base[::2]
    out = lib.poisoned(host.shape[::-1], np.float32)
    half.transpose_widen(x, out)
    np.testing.assert_array_equal(lib.to_numpy(out), host.T.astype(np.float32))


# --- refused before launch (NumPy arrays: the checks come before any backend) -------


def refused(half: pyoxide.Module, kernel: str, *args: object) -> pyoxide.ArgumentError:
    with pytest.raises(pyoxide.ArgumentError) as info:
        half[kernel](*args)
    e = info.value
    assert pickle.loads(pickle.dumps(e)).args == e.args
    return e


def test_a_float32_array_for_an_f16_slice_is_refused_with_the_cast(half: pyoxide.Module) -> None:
    x = np.zeros(8, np.float32)
    e = refused(half, "axpy_f16", 1.0, x, np.zeros(8, np.float16), np.zeros(8, np.float16))
    assert isinstance(e, ArgumentTypeError) and e.param == "x", e
    assert "float16 array (&[f16])" in e.expected and "float32" in e.got, e
    assert ".astype(numpy.float16)" in e.fix, e


def test_a_float16_array_for_a_bf16_output_names_ml_dtypes(half: pyoxide.Module) -> None:
    x = np.zeros(8, BF16)
    e = refused(half, "axpy_bf16", 1.0, x, x.copy(), np.zeros(8, np.float16))
    assert isinstance(e, ArgumentTypeError) and e.param == "out", e
    assert "bfloat16 array" in e.expected and "float16" in e.got, e
    assert "ml_dtypes.bfloat16" in e.fix, e


@pytest.mark.parametrize(
    "t, value, why",
    [
        ("f16", 70000.0, "range"),  # rounds to inf as f16
        ("bf16", 3.4e38, "range"),  # rounds to inf as bf16
        ("f16", 2049, "exactly representable"),  # 11 significant bits
        ("bf16", 257, "exactly representable"),  # 8 significant bits
        ("bf16", True, "float(flag)"),
        ("f16", "1.0", "Python float"),
    ],
)
def test_half_scalars_out_of_reach_are_refused(
    half: pyoxide.Module, t: str, value: object, why: str
) -> None:
    dt = DTYPES[t]
    x = np.zeros(4, dt)
    e = refused(half, f"axpy_{t}", value, x, x.copy(), x.copy())
    assert e.param == "a" and why in str(e), e
    assert isinstance(e, ArgumentTypeError if why in ("float(flag)", "Python float") else
                      ArgumentValueError), e  # fmt: skip


def test_half_scalars_round_to_nearest_even_from_the_double() -> None:
    """The launcher's rounding of a Python float (pyoxide/_launch/half.py), checked against
    exact arithmetic on halfway points and their neighbours, where rounding through
    f32 first would go wrong."""
    from fractions import Fraction

    def distance(x: float, v: float) -> Fraction | float:
        # The largest finite half's upper neighbour is infinity, which has no Fraction:
        # infinitely far from any finite v.
        return abs(Fraction(x) - Fraction(v)) if math.isfinite(x) else math.inf

    for t, top in (("f16", 0x7BFF), ("bf16", 0x7F7F)):
        for b in RNG.integers(1, top, 500):
            lo, hi = half_value(t, int(b)), half_value(t, int(b) + 1)
            mid = (lo + hi) / 2
            for v in (mid, math.nextafter(mid, math.inf), math.nextafter(mid, -math.inf), -mid):
                got = half_bits(t, v)
                near = [distance(half_value(t, c & 0xFFFF), v) for c in (got - 1, got, got + 1)]
                assert near[1] == min(near), (t, v, hex(got))
                assert near.count(near[1]) == 1 or got % 2 == 0, (t, v, hex(got))
