"""pyoxide.spec's building blocks: what a family of specs shares (Out's default shape,
Case.normal, per_element, the tolerances, torch_peer)."""

from __future__ import annotations

import numpy as np
import pytest

from pyoxide.spec import Case, Out, compound_tol, exact_tol, per_element, tol, torch_peer


@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5), (2, 3, 4)])
def test_an_output_defaults_to_the_case_shape_and_dtype(shape: tuple[int, ...]) -> None:
    case = Case(shape, "f64")
    out = Out().make(case)
    assert out.shape == shape and out.dtype == np.float64
    assert np.isnan(out).all()
    counts = Out(lambda c: c.shape[-1], dtype="u32", init="zeros").make(case)
    assert counts.dtype == np.uint32 and counts.tolist() == [0] * shape[-1]


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16"])
def test_normal_draws_the_case_dtype_and_shape(dtype: str) -> None:
    if dtype == "bf16":
        pytest.importorskip("ml_dtypes")
    case = Case((64, 3), dtype)
    x = case.normal(np.random.default_rng(1), scale=2, shift=100)
    want = np.random.default_rng(1).standard_normal((64, 3)) * 2 + 100
    assert x.shape == (64, 3) and x.dtype == case.np_dtype
    assert np.array_equal(x, want.astype(case.np_dtype))
    assert case.normal(np.random.default_rng(1), shape=5).shape == (5,)


def test_per_element_counts_every_element_of_the_shape() -> None:
    assert Case((3, 5)).size == 15 and Case((0, 9)).size == 0
    assert per_element(8)(Case((3, 5))) == 120
    assert per_element(0.5)(Case((7,))) == 3


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_the_shared_tolerances(dtype: str) -> None:
    case = Case((4,), dtype)
    assert exact_tol(case) == 0.0
    assert compound_tol(case) == tol(case.np_dtype, compound=True) == 10 * tol(case.np_dtype)


def test_torch_peer_runs_the_op_on_the_named_arguments_as_tensors() -> None:
    torch = pytest.importorskip("torch")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    peer = torch_peer(lambda t, a, b: t.cumsum(a, dim=1) + b, "x", "y")
    got = peer({"x": x, "y": np.float32(1) * np.ones(3, np.float32), "out": None})()
    assert isinstance(got, torch.Tensor)
    assert got.tolist() == [[1, 2, 4], [4, 8, 13]]
