"""The compiled launcher sizes a plain call of every launch policy whose grid comes from
the arguments' extents (`block_per_element`, `columns`, `grid_stride`, `block_per_row`
with a `cols` argument) exactly as the general path does (pyoxide/_launch/policy.py), on the
fake ``cupy`` of tests/launch/test_fast_path.py: the same grid, block and parameter bytes, or
nothing launched anywhere. A call its rule cannot size (a grid past the CUDA limit, a
row length that does not divide the array) is declined, and the general path refuses it
with its message."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.fake_launch import FakeNdarray, assert_same_launch, fake_native, warm_up
from helpers.fixtures import kernel, load_with_entry, param

from pyoxide.errors import ArgumentValueError

native = pytest.fixture(fake_native, name="native")

MAX_GRID_X = 2**31 - 1


def shaped(name: str, kind: str, dims: list[str], type_: str = "f32") -> dict[str, Any]:
    return {**param(name, kind, type_, kind == "disjoint_array"),
            "array": {"layout": "c", "dims": dims}}  # fmt: skip


def policy(name: str, params: list[dict[str, Any]], launch: dict[str, Any], **extra: Any) -> Any:
    return {**kernel(name, params), "launch": launch, **extra}


X, OUT = param("x", "slice", "f32"), param("out", "disjoint_slice", "f32")
KERNELS = {
    "block_per_element": policy("per_element", [X, OUT],
                                {"kind": "block_per_element", "over": "out", "block": 256}),
    # One block per element of a 2-D output: its element count, not its first extent.
    "block_per_element_2d": policy(
        "per_element_2d", [X, shaped("out", "disjoint_array", ["r", "c"])],
        {"kind": "block_per_element", "over": "out", "block": 128},
    ),
    # A kernel of warp collectives: its plain block is rounded down to whole warps (96).
    "block_per_element_warps": policy(
        "per_element_warps", [X, OUT], {"kind": "block_per_element", "over": "out", "block": 100},
        whole_warps="warp::reduce",
    ),
    "columns": policy(
        "columns", [shaped("x", "array", ["r", "c"]), OUT],
        {"kind": "columns", "over": "out", "per_block": 32, "block": 1024},
    ),
    "grid_stride": policy(
        "stride", [X, param("out", "atomic_slice", "f32", True)],
        {"kind": "grid_stride", "over": "x", "per_thread": 4, "block": 256, "blocks_per_sm": 4},
    ),
    "block_per_row_cols": policy(
        "rows_cols", [X, OUT, param("cols", "scalar", "u32")],
        {"kind": "block_per_row", "over": "out", "cols": "cols", "block": 1024},
    ),
    # f64 rows (a warp per 512 columns) and a signed row length.
    "block_per_row_cols_i64": policy(
        "rows_cols_i64",
        [param("cols", "scalar", "i64"), param("x", "slice", "f64"),
         param("out", "disjoint_slice", "f64")],
        {"kind": "block_per_row", "over": "out", "cols": "cols", "block": 512},
    ),
}  # fmt: skip
RULES = {
    "block_per_element": "elements", "block_per_element_2d": "elements",
    "block_per_element_warps": "elements", "columns": "elements", "grid_stride": "stride",
    "block_per_row_cols": "rows", "block_per_row_cols_i64": "rows",
}  # fmt: skip


def vec(n: int, dtype: str = "float32") -> FakeNdarray:
    return FakeNdarray(n, dtype)


def rows(r: int, c: int) -> tuple[Any, ...]:
    return vec(r * c), vec(r * c), np.uint32(c)


def rows64(r: int, c: int) -> tuple[Any, ...]:
    return c, vec(r * c, "float64"), vec(r * c, "float64")


ARGS: dict[str, Callable[..., tuple[Any, ...]]] = {
    "block_per_element": lambda n: (vec(1), vec(n)),  # x first: the fakes never overlap
    "block_per_element_2d": lambda r, c: (vec(3), FakeNdarray((r, c))),
    "block_per_element_warps": lambda n: (vec(n), vec(n)),
    "columns": lambda c: (FakeNdarray((3, c)), vec(c)),
    "grid_stride": lambda n: (vec(n), vec(1)),
    "block_per_row_cols": rows,
    "block_per_row_cols_i64": rows64,
}
SIZED = [
    *[("block_per_element", (n,)) for n in (0, 1, 132, 100_000, MAX_GRID_X)],
    *[("block_per_element_2d", s) for s in ((4, 5), (1, 1), (0, 7), (7, 0), (65536, 3))],
    *[("block_per_element_warps", (n,)) for n in (0, 1, 5, 1000)],
    *[("columns", (c,)) for c in (0, 1, 31, 32, 33, 4096, 100_001)],
    # 132 SMs × 4 blocks cap the grid at 528 blocks of 1024 elements; empty: one block.
    *[("grid_stride", (n,)) for n in (0, 1, 1024, 1025, 528 * 1024, 528 * 1024 + 1, 2**28)],
    *[("block_per_row_cols", s) for s in ((300, 1000), (1, 1), (3, 1024), (3, 1025), (2, 9000),
                                          (0, 8), (5000, 4))],
    *[("block_per_row_cols_i64", s) for s in ((2, 512), (2, 513), (1, 100_000), (0, 3))],
]  # fmt: skip
F64 = "float64"
REFUSED: list[tuple[str, str, Callable[[], tuple[Any, ...]], str]] = [
    # More blocks than a 1-D grid has.
    ("past-the-grid", "block_per_element", lambda: (vec(1), vec(MAX_GRID_X + 1)), "at most"),
    ("past-the-grid-2d", "block_per_element_2d", lambda: (vec(3), FakeNdarray((2**16, 2**15))),
     "at most"),
    # A row length that does not divide the array, or is not positive.
    ("rows-do-not-divide", "block_per_row_cols", lambda: (vec(1001), vec(1001), np.uint32(10)),
     "rows of cols elements"),
    ("no-row-length", "block_per_row_cols", lambda: (vec(0), vec(0), 0), "rows of cols elements"),
    ("negative-row-length", "block_per_row_cols_i64", lambda: (-4, vec(8, F64), vec(8, F64)),
     "rows of cols elements"),
]  # fmt: skip


def warm(native: Any, tmp_path: Path, name: str) -> Any:
    """The kernel `name`, after a first plain call that built its compiled launcher."""
    k = load_with_entry(tmp_path, KERNELS[name])
    first = {"block_per_element_2d": (2, 2), "block_per_row_cols": (2, 4),
             "block_per_row_cols_i64": (2, 4)}.get(name, (4,))  # fmt: skip
    warm_up(k, *ARGS[name](*first))
    return k


@pytest.mark.parametrize("name", list(KERNELS))
def test_each_policy_has_a_compiled_rule(tmp_path: Path, name: str) -> None:
    k = load_with_entry(tmp_path, KERNELS[name])
    assert k.fast_plan is not None and k.fast_plan.grid is not None
    assert k.fast_plan.grid.kind == RULES[name]


@pytest.mark.parametrize(
    ("name", "size"), SIZED, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in SIZED]
)
def test_a_plain_call_is_sized_as_the_general_path_sizes_it(
    native, tmp_path: Path, name: str, size: tuple[int, ...]
) -> None:
    fake, driver = native
    k = warm(native, tmp_path, name)
    general, compiled = len(fake.launches), len(driver.launches)
    args = ARGS[name](*size)
    k(*args)
    assert len(fake.launches) == general  # the compiled launcher took it
    k.launch(*args)  # the general path
    if len(fake.launches) == general:  # an empty grid: nothing launched on either path
        assert len(driver.launches) == compiled
        return
    (fast,) = driver.launches[compiled:]
    assert_same_launch(fast, fake.launches[-1])


@pytest.mark.parametrize(("name", "args", "message"), [r[1:] for r in REFUSED],
                         ids=[r[0] for r in REFUSED])  # fmt: skip
def test_a_call_its_rule_cannot_size_is_declined_then_refused(
    native, tmp_path: Path, name: str, args: Callable[[], tuple[Any, ...]], message: str
) -> None:
    fake, driver = native
    k = warm(native, tmp_path, name)
    for call in (lambda: k(*args()), lambda: k.launch(*args())):
        with pytest.raises(ArgumentValueError, match=message):
            call()
    assert len(fake.launches) == 1 and driver.launches == []


@pytest.mark.parametrize("sms", [1, 7, 132])
def test_a_grid_stride_grid_is_capped_by_each_devices_multiprocessors(
    native, tmp_path: Path, sms: int
) -> None:
    """The backend gives each device's launcher that device's multiprocessor count."""
    import cupy

    fake, driver = native
    fake.multiprocessors_of[1] = sms
    k = warm(native, tmp_path, "grid_stride")
    args = (FakeNdarray(2**28, device=1), FakeNdarray(1, device=1))
    with cupy.cuda.Device(1):
        k(*args)  # the general path, which builds device 1's launcher
        k(*args)
    assert sorted(launcher.device for launcher in k.launchers) == [0, 1]
    (fast,) = driver.launches
    assert fast["grid"] == fake.launches[-1]["grid"] == (4 * sms, 1, 1)
