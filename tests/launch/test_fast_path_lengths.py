"""Slice length contracts (``#[shapes(x[n], y[n], out[n], w[4])]``) and 1-D launch
policies in the compiled fast path, on the fake ``cupy`` of tests/launch/test_fast_path.py: the
kernel's entry assumes both, so a call that breaks either must never launch. The
compiled launcher declines it and the general path refuses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.fake_launch import FakeNdarray, assert_same_launch, fake_native, warm_up
from helpers.fixtures import kernel, load_with_entry, param

from pyoxide.errors import ArgumentValueError, ShapeError

native = pytest.fixture(fake_native, name="native")


def sliced(name: str, kind: str, length: str) -> dict[str, Any]:
    return {**param(name, kind, "f32"), "length": length}


SX = {
    **kernel("sx", [
        param("a", "scalar", "f32"), sliced("x", "slice", "n"), sliced("y", "slice", "n"),
        sliced("w", "slice", "4"), sliced("out", "disjoint_slice", "n"),
    ]),
    "launch": {"kind": "elementwise", "over": "out", "per_thread": 1, "block": 256},
}  # fmt: skip


@pytest.fixture
def sx(tmp_path: Path) -> Any:
    return load_with_entry(tmp_path, SX)


def arrays(nx: int = 1000, ny: int = 1000, nw: int = 4, nout: int = 1000) -> tuple[Any, ...]:
    return 2.0, FakeNdarray(nx), FakeNdarray(ny), FakeNdarray(nw), FakeNdarray(nout)


def test_the_manifest_carries_the_lengths(sx) -> None:
    assert [p.length for p in sx.spec.params] == [None, "n", "n", 4, "n"]


def test_calls_that_keep_the_contract_take_the_fast_path(native, sx) -> None:
    fake, driver = native
    args = arrays()
    warm_up(sx, *args)
    sx(*args)
    sx[4, 256](*args)
    ((slow,), (fast, configured)) = fake.launches, driver.launches
    assert_same_launch(fast, slow)
    assert (fast["grid"], fast["block"]) == ((4, 1, 1), (256, 1, 1))
    assert_same_launch(configured, slow)


@pytest.mark.parametrize(
    ("bad", "param", "dim"),
    [
        (arrays(ny=999), "y", "n"),
        (arrays(nout=1001), "out", "n"),
        (arrays(nx=7, ny=7, nout=8), "out", "n"),
        (arrays(nw=5), "w", "4"),
        (arrays(nx=0, ny=0, nw=0, nout=0), "w", "4"),
    ],
)
def test_a_broken_contract_is_declined_then_refused(
    native, sx, bad: tuple[Any, ...], param: str, dim: str
) -> None:
    fake, driver = native
    sx(*arrays())
    sx(*arrays())
    for call in (lambda: sx(*bad), lambda: sx[4, 256](*bad)):
        with pytest.raises(ShapeError) as e:
            call()
        assert (e.value.kernel, e.value.param, e.value.dim) == ("sx", param, dim)
    assert len(fake.launches) == 1 and len(driver.launches) == 1


@pytest.mark.parametrize(("grid", "block"), [((2, 2), 256), (4, (128, 2)), ((1, 1, 4), 64)])
def test_a_2d_launch_of_a_1d_policy_is_refused(native, sx, grid: Any, block: Any) -> None:
    fake, driver = native
    sx(*arrays())
    sx(*arrays())
    with pytest.raises(ArgumentValueError, match="1-D"):
        sx[grid, block](*arrays())
    with pytest.raises(ArgumentValueError, match="1-D"):
        sx.launch(*arrays(), grid=grid, block=block)
    assert len(fake.launches) == 1 and len(driver.launches) == 1
