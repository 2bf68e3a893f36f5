"""FMA contraction: `cargo oxide build` contracts `a * b + c` into one fused multiply-add
(rounded once), as nvcc and cuda-oxide do by default, and the manifest says so
(`codegen.fmad`); `--no-fmad` keeps the two apart. The CPU emulator always rounds them
apart, as Rust does. `oxide_device::float`'s spelled-out roundings give the same bits on
every backend. Checked bit for bit on the README's saxpy (crates/oxide-device/tests/
fixtures/readme) against exact rational arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, sizes

import pyoxide

RNG = np.random.default_rng()


def round_to_f32(q: Fraction) -> np.float32:
    """`q` rounded once to the nearest float32, ties to even (`float(q)` alone rounds to
    a double first, which can land on a float32 tie that `q` is not on)."""
    guess = np.float32(float(q))
    below, above = np.nextafter(guess, np.float32(-np.inf)), np.nextafter(guess, np.float32(np.inf))
    best = min(
        (guess, below, above),
        key=lambda c: (abs(Fraction(float(c)) - q), int(np.array(c).view(np.uint32)) & 1),
    )
    return np.float32(best)


def rounded_once(a: np.float32, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    fa = Fraction(float(a))
    q = [fa * Fraction(float(xi)) + Fraction(float(yi)) for xi, yi in zip(x, y, strict=True)]
    return np.array([round_to_f32(v) for v in q], dtype=np.float32)


def data(n: int) -> tuple[np.float32, np.ndarray, np.ndarray]:
    a = np.float32(RNG.uniform(0.5, 4.0))
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    return a, x, y


def run(readme: pyoxide.Module, lib: ArrayLib, kernel: str, a: np.float32, x: np.ndarray,
        y: np.ndarray) -> np.ndarray:  # fmt: skip
    out = lib.poisoned(x.size, np.float32)
    readme[kernel](float(a), lib.asarray(x), lib.asarray(y), out)
    return lib.to_numpy(out)


def test_the_reference_tells_the_two_roundings_apart() -> None:
    """On random data the fused and the separate roundings differ in about a fifth of
    the elements, so the tests below can fail."""
    a, x, y = data(3001)
    once, twice = rounded_once(a, x, y), a * x + y  # NumPy: float32, rounded twice
    differ = np.count_nonzero(once != twice)
    assert 100 < differ < 3001, differ


def test_the_build_records_its_contraction(readme: pyoxide.Module) -> None:
    assert readme.manifest.fmad is True  # the default build, as nvcc's `--fmad=true`


@pytest.mark.parametrize("n", sizes(1, 1000))
def test_saxpy_rounds_as_its_build_and_backend_say(
    readme: pyoxide.Module, lib: ArrayLib, n: int
) -> None:
    a, x, y = data(n)
    fused = lib.on_gpu and readme.manifest.fmad
    want = rounded_once(a, x, y) if fused else a * x + y
    np.testing.assert_array_equal(run(readme, lib, "saxpy", a, x, y), want)


@pytest.mark.parametrize("n", sizes(1, 1000))
def test_spelled_out_roundings_agree_on_every_backend(
    readme: pyoxide.Module, lib: ArrayLib, n: int
) -> None:
    a, x, y = data(n)
    np.testing.assert_array_equal(run(readme, lib, "saxpy_rounded_twice", a, x, y), a * x + y)
    np.testing.assert_array_equal(
        run(readme, lib, "saxpy_rounded_once", a, x, y), rounded_once(a, x, y)
    )
