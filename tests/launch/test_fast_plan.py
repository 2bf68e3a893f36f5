"""The fast plan (pyoxide/_launch/fastplan.py) as the compiled launcher reads it
(crates/pyoxide-native/src/plan.rs, params.rs): which parameters a plan describes, where
they sit in the parameter buffer, and the descriptions the launcher refuses.
tests/launch/test_fast_path.py holds the calls themselves to the general path's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.fake_launch import FakeNdarray, fake_native
from helpers.fixtures import kernel, lanes, load_with_entry, param, write_manifest

import pyoxide
import pyoxide._launch._native as pyoxide_native
from pyoxide._launch.fastplan import FastParam, FastPlan, GridRule

native = pytest.fixture(fake_native, name="native")


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def test_arrays_of_integers_by_value_are_lanes(mod) -> None:
    """strided(a: [u64; 3], b: [i32; 2], c: [u8; 3], flag: bool, out): each record is
    (how many, its alignment: the PTX's `.param .align A .b8 p[N]`)."""
    plan = mod.strided.fast_plan
    assert plan is not None
    assert plan.params[:4] == (
        FastParam("u64", lanes=(3, 8)), FastParam("i32", lanes=(2, 4)),
        FastParam("u8", lanes=(3, 1)), FastParam("bool"),
    )  # fmt: skip


def record(name: str, type_: str, rust_type: str, size: int, align: int, kind: str) -> Any:
    return {**param(name, kind, type_), "record": {"rust_type": rust_type, "size": size,
                                                   "align": align}}  # fmt: skip


OTHER_RECORDS = {
    "struct": ("u8", "Quad", 16, 4, "value"),
    "floats": ("f32", "[f32; 4]", 16, 4, "value"),
    "bools": ("bool", "[bool; 2]", 2, 1, "value"),
    "nested": ("u64", "[[u64; 3]; 2]", 48, 8, "value"),
    "tuple": ("u32", "(u32, u32)", 8, 4, "value"),
    "over-aligned": ("u32", "[u32; 4]", 16, 16, "value"),
    "slice-of-records": ("u64", "[u64; 3]", 24, 8, "slice"),
}


@pytest.mark.parametrize("name", list(OTHER_RECORDS))
def test_other_records_leave_the_kernel_to_the_general_path(tmp_path: Path, name: str) -> None:
    """The general path reads their bytes (pyoxide/_launch/records.py); the launcher
    places only flat arrays of integers, which the PTX aligns as their element."""
    params = [lanes("a", "u64", 3), record("s", *OTHER_RECORDS[name]),
              param("out", "disjoint_slice", "f32")]  # fmt: skip
    k = load_with_entry(tmp_path, kernel("rec_" + name.replace("-", "_"), params))
    assert k.fast_plan is None


def test_lanes_sit_at_their_records_alignment(native, mod) -> None:
    """The table compares with the general path; this pins the layout itself: a at 0
    (24 bytes), b at 24 (8), c at 32 (3), flag at 35, out's pointer and length at 40."""
    _, driver = native
    out = FakeNdarray(10)
    mod.strided((1, 2, 3), (-4, 5), (6, 7, 8), True, out)  # general, then the launcher
    mod.strided([2**64 - 1, 0, 9], (-(2**31), 2**31 - 1), (255, 0, 128), True, out)
    assert mod.strided.launchers[0].buffer_size == 56
    ((launch),) = driver.launches
    buf = launch["buffer"]
    assert np.frombuffer(buf[:24], np.uint64).tolist() == [2**64 - 1, 0, 9]
    assert np.frombuffer(buf[24:32], np.int32).tolist() == [-(2**31), 2**31 - 1]
    assert list(buf[32:36]) == [255, 0, 128, 1]
    assert np.frombuffer(buf[40:], np.uint64).tolist() == [out.ptr, 10]


def runtime(entry_points: Any = None) -> Any:
    launch, ctx = pyoxide_native._noop_entry_points()
    return pyoxide_native.Runtime(
        bind_array_type=lambda cls: ("cupy", cls, {}, lambda: type("S", (), {"ptr": 0})(),
                                     None),
        default_array_type=FakeNdarray, scalar_types={}, host_ndarray=None,
        record=pyoxide_native.LaunchRecord(), on_error=lambda *a: RuntimeError(a),
        entry_points=entry_points or (launch, ctx, 0, 0),
    )  # fmt: skip


def test_the_launcher_refuses_bad_descriptions() -> None:
    rt = runtime()

    def make(params: Any, grid: Any = None) -> Any:
        return pyoxide_native.Launcher(FastPlan("k", tuple(params), grid), rt, 1, 0)

    assert make([FastParam("i32")]).buffer_size == 4
    with pytest.raises(ValueError, match="unknown scalar type"):
        make([FastParam("i128")])
    with pytest.raises(ValueError, match="elements rule"):
        make([FastParam("i32")], GridRule("elements", 0, (256, 1, 1), per_block=256))
    with pytest.raises(ValueError, match="tile rule"):
        make([FastParam("f32", array=True)], GridRule("tiles", 0, (16, 16, 1), (16, 16, 1)))
    with pytest.raises(ValueError, match="stride rule"):
        make([FastParam("i32")], GridRule("stride", 0, (256, 1, 1), per_block=256))
    rows = GridRule("rows", 0, (256, 1, 1), least_block=128, cols=1)
    with pytest.raises(ValueError, match="rows rule"):  # a float is no row length
        make([FastParam("f32", array=True), FastParam("f32")], rows)
    assert make([FastParam("f32", array=True), FastParam("u32")], rows).buffer_size == 20
    with pytest.raises(ValueError, match="non-null"):
        runtime((0, 1, 0, 0))


def test_the_launcher_refuses_lanes_it_cannot_place() -> None:
    rt = runtime()

    def make(*params: FastParam) -> Any:
        return pyoxide_native.Launcher(FastPlan("k", params, None), rt, 1, 0)

    # A u8 record then a [u64; 2] at its alignment of 8; a record of one is a record.
    assert make(FastParam("u8", lanes=(3, 1)), FastParam("u64", lanes=(2, 8))).buffer_size == 24
    assert make(FastParam("i16", lanes=(1, 2))).buffer_size == 2
    for bad in [("f32", (4, 4)), ("f16", (2, 2)), ("bool", (2, 1)), ("u64", (0, 8)),
                ("u64", (3, 3)), ("u64", (3, 0))]:  # fmt: skip
        with pytest.raises(ValueError, match="lanes"):
            make(FastParam(bad[0], lanes=bad[1]))
