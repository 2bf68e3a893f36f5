"""The compiled fast path for shaped arrays (`Array2<T>` …) held to the general path,
on the fake ``cupy`` of tests/launch/test_fast_path.py: C-contiguous CuPy arrays whose shapes
keep the contract launch from compiled code with the general path's exact bytes; any
other view is declined (the general path launches it or raises ShapeError)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.fake_launch import FakeNdarray, assert_same_launch, fake_native, warm_up
from helpers.fixtures import kernel, load_with_entry, param

from pyoxide.errors import ArgumentValueError, ShapeError

native = pytest.fixture(fake_native, name="native")


def shaped(name: str, kind: str, layout: str, dims: list[str]) -> dict[str, Any]:
    return {**param(name, kind, "f32", kind == "disjoint_array"),
            "array": {"layout": layout, "dims": dims}}  # fmt: skip


MM = kernel("mm", [
    shaped("a", "array", "c", ["m", "k"]),
    shaped("b", "array", "strided", ["k", "n"]),
    shaped("c", "disjoint_array", "c", ["m", "n"]),
])  # fmt: skip


@pytest.fixture
def mm(tmp_path: Path) -> Any:
    return load_with_entry(tmp_path, MM)


def arrays(m: int = 40, n: int = 24, k: int = 33) -> tuple[FakeNdarray, ...]:
    return FakeNdarray((m, k)), FakeNdarray((k, n)), FakeNdarray((m, n))


def test_a_plain_call_sizes_a_2d_grid_from_the_output(native, mm) -> None:
    """The general path and then the compiled one: 16×16 blocks over c (40×24)."""
    fake, driver = native
    args = arrays()
    warm_up(mm, *args)
    mm(*args)
    ((slow,), (fast,)) = fake.launches, driver.launches
    assert_same_launch(fast, slow)
    assert (fast["grid"], fast["block"]) == ((2, 3, 1), (16, 16, 1))
    mm(*arrays(0, 24, 33))  # an empty output: nothing launched
    assert len(driver.launches) == 1 and len(fake.launches) == 1


@pytest.mark.parametrize(("m", "n", "k"), [(40, 24, 33), (1, 1, 1), (16, 0, 5), (3, 1, 0)])
def test_configured_calls_take_the_fast_path_with_the_general_bytes(
    native, mm, m: int, n: int, k: int
) -> None:
    fake, driver = native
    mm(*arrays())  # builds the compiled launcher
    args = arrays(m, n, k)
    mm[(2, 3), (16, 16)](*args)
    mm.launch(*args, grid=(2, 3), block=(16, 16))  # always the general path
    (fast,) = driver.launches
    assert_same_launch(fast, fake.launches[-1])
    assert (fast["grid"], fast["block"]) == ((2, 3, 1), (16, 16, 1))


def test_views_the_fast_path_is_unsure_of_go_to_the_general_path(native, mm) -> None:
    fake, driver = native
    a, b, c = arrays()
    mm(a, b, c)
    launch = mm[(2, 3), (16, 16)]
    # b in F order: declined by the compiled launcher, launched by the general path.
    f_order = FakeNdarray((33, 24), strides=(4, 4 * 33))
    launch(a, f_order, c)
    assert len(driver.launches) == 0 and len(fake.launches) == 2
    # a contract broken, a C-only parameter in F order, an output aliasing an input:
    # declined, then refused by the general path; nothing launched anywhere.
    for bad, error in [
        ((a, FakeNdarray((34, 24)), c), ShapeError),
        ((FakeNdarray((40, 33), strides=(4, 160)), b, c), ShapeError),
        ((a, b, FakeNdarray((40, 25))), ShapeError),
        ((a, b, FakeNdarray((40, 24, 1))), ShapeError),
        ((a, FakeNdarray((33, 24), ptr=c.ptr), c), ArgumentValueError),
    ]:
        with pytest.raises(error):
            launch(*bad)
    assert len(driver.launches) == 0 and len(fake.launches) == 2
    launch(a, b, c)
    assert len(driver.launches) == 1


ROWS = {
    **kernel("rows", [shaped("x", "array", "c", ["r", "n"]),
                      shaped("out", "disjoint_array", "c", ["r", "n"])]),
    "launch": {"kind": "block_per_row", "over": "out", "block": 512},
}  # fmt: skip


@pytest.mark.parametrize(("r", "n"), [(64, 256), (1, 1), (3, 1024), (3, 1025), (2, 9000), (0, 8)])
def test_a_row_kernel_is_sized_as_the_general_path_sizes_it(
    native, tmp_path: Path, r: int, n: int
) -> None:
    """block_per_row over a 2-D output: one block per row, a warp per 1024 columns
    between 128 and the policy's 512 threads (pyoxide/_launch/policy.py's row_rule)."""
    fake, driver = native
    rows = load_with_entry(tmp_path, ROWS)
    rows(FakeNdarray((4, 4)), FakeNdarray((4, 4)))  # builds the compiled launcher
    args = (FakeNdarray((r, n)), FakeNdarray((r, n)))
    rows(*args)
    rows.launch(*args)  # the general path
    if r == 0:
        assert len(driver.launches) == 0 and len(fake.launches) == 1
        return
    (fast,) = driver.launches
    assert_same_launch(fast, fake.launches[-1])
