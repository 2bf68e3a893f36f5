"""The README's saxpy and its contract, on every backend (`lib`):
``#[shapes(x[n], y[n], out[n])]`` (slice lengths) and ``#[launch(elementwise(out))]``
(a 1-D launch). The kernel's entry assumes both, so the launcher must refuse any call
that breaks them before anything runs: the output stays as it was."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, sizes, tol
from helpers.bundled import bundled_specs

import pyoxide
from pyoxide.errors import ArgumentValueError, ShapeError
from pyoxide.spec import Case

RNG = np.random.default_rng()


def data(lib: ArrayLib, n: int) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    return x, y, lib.asarray(x), lib.asarray(y)


def want(a: float, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a*x + y in float64 and the size of its terms, from the bundled saxpy's spec (the
    README's kernel computes the same). Where a*x and y nearly cancel (likely at n = 1),
    float32 rounding is a fraction of the terms, not of the small result."""
    spec, args, case = bundled_specs()["saxpy"], {"a": a, "x": x, "y": y}, Case(x.shape)
    assert spec.scale is not None
    return spec.reference(args, case)["out"], spec.scale(args, case)["out"]


@pytest.mark.parametrize("n", sizes(0, 1, 31, 257, 4099))
def test_saxpy_matches_numpy(lib: ArrayLib, readme: pyoxide.Module, n: int) -> None:
    x, y, dx, dy = data(lib, n)
    out = lib.poisoned(n, np.float32)
    readme.saxpy(0.75, dx, dy, out)
    assert rel_err(lib.to_numpy(out), *want(0.75, x, y)) <= tol(np.float32)


def test_saxpy_misaligned_views(lib: ArrayLib, readme: pyoxide.Module) -> None:
    """`x[1:]` is aligned to its element only; the lengths still agree."""
    n = 1000
    x, y, dx, dy = data(lib, n + 1)
    out = lib.poisoned(n + 3, np.float32)
    readme.saxpy(-2.0, dx[1:], dy[:-1], out[3:])
    got = lib.to_numpy(out)
    assert rel_err(got[3:], *want(-2.0, x[1:], y[:-1])) <= tol(np.float32)


@pytest.mark.parametrize(
    ("lens", "param"),
    [((10, 10, 9), "out"), ((10, 9, 10), "y"), ((9, 10, 10), "y"), ((10, 10, 11), "out")],
)
def test_mismatched_lengths_are_refused(
    lib: ArrayLib, readme: pyoxide.Module, lens: tuple[int, int, int], param: str
) -> None:
    nx, ny, nout = lens
    _, _, dx, _ = data(lib, nx)
    _, _, _, dy = data(lib, ny)
    out = lib.poisoned(nout, np.float32)
    before = lib.to_numpy(out).copy()
    with pytest.raises(ShapeError) as e:
        readme.saxpy(1.0, dx, dy, out)
    err = e.value
    assert (err.kernel, err.param, err.dim) == ("saxpy", param, "n")
    assert "x[n], y[n], out[n]" in str(err) and "Fix:" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), str(again), again.param) == (ShapeError, str(err), param)
    np.testing.assert_array_equal(lib.to_numpy(out), before)


def test_refused_after_a_good_call(lib: ArrayLib, readme: pyoxide.Module) -> None:
    """A repeat call takes the compiled fast path on GPU arrays: it checks the
    contract too (it declines, and the general path refuses)."""
    x, y, dx, dy = data(lib, 512)
    out = lib.poisoned(512, np.float32)
    for _ in range(3):
        readme.saxpy(1.5, dx, dy, out)
    assert rel_err(lib.to_numpy(out), want(1.5, x, y)[0]) <= tol(np.float32)
    short = lib.poisoned(511, np.float32)
    before = lib.to_numpy(short).copy()
    for _ in range(2):
        with pytest.raises(ShapeError, match="'n'"):
            readme.saxpy(1.5, dx, dy, short)
    with pytest.raises(ShapeError, match="'n'"):
        readme.saxpy[2, 256](1.5, dx, dy, short)
    np.testing.assert_array_equal(lib.to_numpy(short), before)


@pytest.mark.parametrize(
    ("grid", "block", "what"),
    [
        ((2, 2), 128, "grid"),
        (4, (64, 2), "block"),
        ((4, 1, 2), 128, "grid"),
        (8, (32, 1, 2), "block"),
    ],
)
def test_multi_dimensional_launches_are_refused(
    lib: ArrayLib, readme: pyoxide.Module, grid: Any, block: Any, what: str
) -> None:
    """`#[launch(elementwise(out))]` is 1-D: the entry assumes blockDim.y = 1 and the
    rest, so a 2-D or 3-D grid or block (in which index_1d() repeats) is refused."""
    n = 512
    _, _, dx, dy = data(lib, n)
    out = lib.poisoned(n, np.float32)
    before = lib.to_numpy(out).copy()
    for call in (
        lambda: readme.saxpy[grid, block](1.0, dx, dy, out),
        lambda: readme.saxpy.launch(1.0, dx, dy, out, grid=grid, block=block),
    ):
        with pytest.raises(ArgumentValueError) as e:
            call()
        assert (e.value.kernel, e.value.param) == ("saxpy", what)
        assert "1-D" in str(e.value) and "elementwise" in str(e.value)
        assert pickle.loads(pickle.dumps(e.value)).param == what
    np.testing.assert_array_equal(lib.to_numpy(out), before)


def test_one_d_explicit_launch(lib: ArrayLib, readme: pyoxide.Module) -> None:
    """Explicit 1-D configurations, written as 3-tuples too, launch."""
    n = 1000
    x, y, dx, dy = data(lib, n)
    out = lib.poisoned(n, np.float32)
    readme.saxpy[(8, 1, 1), (128, 1, 1)](3.0, dx, dy, out)
    assert rel_err(lib.to_numpy(out), want(3.0, x, y)[0]) <= tol(np.float32)
