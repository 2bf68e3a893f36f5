"""The fast launch path (pyoxide/backends/cupy_fast.py) on a fake ``cupy``: after one
launch through the general path, plain CuPy-array calls go straight to cuLaunchKernel
with a packed parameter buffer; anything unusual falls back to the general path, which
raises exactly the documented errors and launches nothing."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_cupy
from helpers.fake_launch import FakeNdarray, decode_launch
from helpers.fixtures import write_manifest

import pyoxide
from pyoxide.errors import ArgumentTypeError, ArgumentValueError


@pytest.fixture
def fast_launches(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[fake_cupy.FakeCuda, list[dict[str, Any]]]:
    fake = fake_cupy.FakeCuda()
    cp = fake_cupy.install(monkeypatch, fake)
    launches: list[dict[str, Any]] = []
    cp.ndarray = FakeNdarray  # type: ignore[attr-defined]
    cp.cuda.driver.launchKernel = lambda *a: launches.append(decode_launch(*a))  # type: ignore[attr-defined]
    return fake, launches


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def test_repeat_calls_take_the_fast_path_with_the_same_abi(fast_launches, mod) -> None:
    fake, launches = fast_launches
    x, y, out = FakeNdarray(1000), FakeNdarray(1000), FakeNdarray(1000)
    mod.saxpy(2.5, x, y, out)  # the general path, which then builds the fast one
    assert len(fake.launches) == 1 and launches == []
    mod.saxpy(-1.25, x, y, out)
    (launch,) = launches
    assert len(fake.launches) == 1  # not through Function.__call__
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1)
    assert launch["smem"] == 0 and launch["stream"] == 0 and launch["params"] == 0
    # f32 at 0, then three (ptr, len) pairs at 8-byte alignment.
    a, *words = struct.unpack("=f4x6Q", launch["buffer"])
    assert a == -1.25
    assert words == [x.ptr, 1000, y.ptr, 1000, out.ptr, 1000]


def test_scalars_are_packed_at_their_alignment(fast_launches, mod) -> None:
    _, launches = fast_launches
    out = FakeNdarray(5, "float64")
    args = (-3, 7, True, -(2**40), 0.5, 2**32 - 1, 2**64 - 1, out)
    mod.mix(*args)
    mod.mix(*args)
    (launch,) = launches
    i8, u16, flag, i64, f64, u32, u64, ptr, n = struct.unpack(
        "=bxH B3xq d I4x Q Q Q", launch["buffer"]
    )
    assert (i8, u16, flag, i64, f64, u32, u64) == (-3, 7, 1, -(2**40), 0.5, 2**32 - 1, 2**64 - 1)
    assert (ptr, n) == (out.ptr, 5)


@pytest.mark.parametrize(
    ("second_call", "error"),
    [
        (lambda x, y, out: (2.0, FakeNdarray(1000, "float64"), y, out), ArgumentTypeError),
        (lambda x, y, out: (2.0, x, y, x), ArgumentValueError),  # out aliases x
        (lambda x, y, out: (1e39, x, y, out), ArgumentValueError),  # beyond f32
        (lambda x, y, out: (2.0, x, y), ArgumentTypeError),  # arity
        (lambda x, y, out: (True, x, y, out), ArgumentTypeError),  # bool for f32
        (lambda x, y, out: (2.0, x, y, FakeNdarray(1000, device=1)), ArgumentValueError),
    ],
)
def test_what_the_fast_path_declines_gets_the_general_error(
    fast_launches, mod, second_call, error
) -> None:
    fake, launches = fast_launches
    x, y, out = FakeNdarray(1000), FakeNdarray(1000), FakeNdarray(1000)
    mod.saxpy(2.0, x, y, out)
    with pytest.raises(error):
        mod.saxpy(*second_call(x, y, out))
    assert launches == [] and len(fake.launches) == 1


def test_configured_launch_uses_the_checked_configuration(fast_launches, mod) -> None:
    _, launches = fast_launches
    a, b, c = FakeNdarray(100), FakeNdarray(100), FakeNdarray(100)
    mod.vecadd(a, b, c)
    launcher = mod.vecadd[(3, 2), (64, 2), 1024]
    launcher(a, b, c)
    (launch,) = launches
    assert launch["grid"] == (3, 2, 1) and launch["block"] == (64, 2, 1) and launch["smem"] == 1024
    with pytest.raises(ArgumentValueError):
        mod.vecadd[1, 2048](a, b, c)  # block beyond the CUDA limit: general path refuses


def test_generic_kernels_pick_the_fast_instance_by_dtype(fast_launches, mod) -> None:
    fake, launches = fast_launches
    x32, o32 = FakeNdarray(10, "float32"), FakeNdarray(10, "float32")
    x64, o64 = FakeNdarray(10, "float64"), FakeNdarray(10, "float64")
    mod.scale(2.0, x32, o32)
    mod.scale(2.0, x64, o64)
    assert [launch["name"] for launch in fake.launches] == ["scale_f32", "scale_f64"]
    mod.scale(3.0, x64, o64)
    mod.scale(4.0, x32, o32)
    assert [
        struct.unpack_from("=d", launches[0]["buffer"])[0],
        struct.unpack_from("=f", launches[1]["buffer"])[0],
    ] == [3.0, 4.0]
    assert len(fake.launches) == 2


def test_empty_outputs_launch_nothing_on_the_fast_path(fast_launches, mod) -> None:
    fake, launches = fast_launches
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.vecadd(FakeNdarray(0), FakeNdarray(0), FakeNdarray(0))
    assert launches == [] and len(fake.launches) == 1


def test_sync_mode_keeps_every_launch_on_the_general_path(fast_launches, mod, monkeypatch) -> None:
    monkeypatch.setenv("PYOXIDE_SYNC", "1")
    fake, launches = fast_launches
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.vecadd(a, b, c)
    assert launches == [] and len(fake.launches) == 2 and fake.syncs == 2
