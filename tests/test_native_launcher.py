"""The native launch fast path (crates/pyoxide-native, pyoxide/backends/cupy_native.py)
on a fake ``cupy``, with ctypes stand-ins for the driver's cuLaunchKernel,
cuCtxGetCurrent and cuGetErrorName: the same cases as test_cupy_fast_path.py, plus the
driver-facing ones (current context, launch errors), and the fallback when the module
is missing."""

from __future__ import annotations

import ast
import inspect
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_cupy
from helpers.fake_launch import FakeDriver, FakeNdarray, install_native
from helpers.fixtures import REPO_DIR, write_manifest

import pyoxide
from pyoxide.errors import ArgumentTypeError, ArgumentValueError, KernelTrapError, LaunchError

pyoxide_native = pytest.importorskip("pyoxide._native")


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> tuple[fake_cupy.FakeCuda, FakeDriver]:
    fake = fake_cupy.FakeCuda(device_count=2)
    _, driver = install_native(monkeypatch, fake)
    return fake, driver


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def test_the_native_launcher_is_the_one_built(native, mod) -> None:
    x, y, out = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.saxpy(2.0, x, y, out)
    assert type(mod.saxpy._fast) is pyoxide_native.Launcher
    assert mod.saxpy._fast.buffer_size == 56


def test_repeat_calls_take_the_fast_path_with_the_same_abi(native, mod) -> None:
    fake, driver = native
    x, y, out = FakeNdarray(1000), FakeNdarray(1000), FakeNdarray(1000)
    mod.saxpy(2.5, x, y, out)  # the general path, which then builds the fast one
    assert len(fake.launches) == 1 and driver.launches == []
    mod.saxpy(-1.25, x, y, out)
    (launch,) = driver.launches
    assert len(fake.launches) == 1  # not through Function.__call__
    assert launch["f"] == hash("saxpy") & 0xFFFF  # the fake Function's handle
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1)
    assert launch["smem"] == 0 and launch["stream"] == 0 and launch["params"] == 0
    a, *words = struct.unpack("=f4x6Q", launch["buffer"])
    assert a == -1.25
    assert words == [x.ptr, 1000, y.ptr, 1000, out.ptr, 1000]


def test_scalars_are_packed_at_their_alignment(native, mod) -> None:
    _, driver = native
    out = FakeNdarray(5, "float64")
    args = (-3, 7, True, -(2**40), 0.5, 2**32 - 1, 2**64 - 1, out)
    mod.mix(*args)
    mod.mix(*args)
    mod.mix(127, 0, False, 2**63 - 1, -float("inf"), 0, 0, out)  # f64 takes infinities
    first, second = driver.launches
    i8, u16, flag, i64, f64, u32, u64, ptr, n = struct.unpack(
        "=bxH B3xq d I4x Q Q Q", first["buffer"]
    )
    assert (i8, u16, flag, i64, f64, u32, u64) == (-3, 7, 1, -(2**40), 0.5, 2**32 - 1, 2**64 - 1)
    assert (ptr, n) == (out.ptr, 5)
    assert struct.unpack("=bxH B3xq d I4x Q", second["buffer"][:40]) == (
        127, 0, 0, 2**63 - 1, -float("inf"), 0, 0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("second_call", "error"),
    [
        (lambda x, y, out: (2.0, FakeNdarray(1000, "float64"), y, out), ArgumentTypeError),
        (lambda x, y, out: (2.0, x, y, x), ArgumentValueError),  # out aliases x
        (lambda x, y, out: (1e39, x, y, out), ArgumentValueError),  # beyond f32
        (lambda x, y, out: (2.0, x, y), ArgumentTypeError),  # arity
        (lambda x, y, out: (True, x, y, out), ArgumentTypeError),  # bool for f32
        (lambda x, y, out: (2.0, x, y, FakeNdarray(1000, device=1)), ArgumentValueError),
        (lambda x, y, out: (2.0, x, y, FakeNdarray((10, 100))), ArgumentValueError),  # 2-D
        (lambda x, y, out: (2.0, x, y, FakeNdarray(500, strides=(8,))), ArgumentValueError),
        (lambda x, y, out: ("2", x, y, out), ArgumentTypeError),
    ],
)
def test_what_the_fast_path_declines_gets_the_general_error(
    native, mod, second_call, error
) -> None:
    fake, driver = native
    x, y, out = FakeNdarray(1000), FakeNdarray(1000), FakeNdarray(1000)
    mod.saxpy(2.0, x, y, out)
    with pytest.raises(error):
        mod.saxpy(*second_call(x, y, out))
    assert driver.launches == [] and len(fake.launches) == 1


@pytest.mark.parametrize(
    "args",
    [
        (-3, 7, True, 0, float("nan"), 0, 0),  # NaN: the general path decides (accepts)
        (-3, 7, 1, 0, 0.5, 0, 0),  # int for bool: refused by the general path
        (128, 7, True, 0, 0.5, 0, 0),  # beyond i8
        (-3, -1, True, 0, 0.5, 0, 0),  # negative for u16
        (-3, 7, True, 0, 0.5, 2**32, 0),  # beyond u32
        (-3, 7, True, 0, 0.5, 0, 2**64),  # beyond usize
        (-3, 7, True, 2**63, 0.5, 0, 0),  # beyond i64
        (-3, 7, True, 0, 1, 0, 0),  # int for f64: the general path converts it
    ],
)
def test_unusual_scalars_are_declined(native, mod, args) -> None:
    fake, driver = native
    out = FakeNdarray(5, "float64")
    mod.mix(-3, 7, True, 0, 0.5, 0, 0, out)
    try:
        mod.mix(*args, out)
    except (ArgumentTypeError, ArgumentValueError):
        assert len(fake.launches) == 1
    else:
        assert len(fake.launches) == 2
    assert driver.launches == []


def test_configured_launch_uses_the_checked_configuration(native, mod) -> None:
    _, driver = native
    a, b, c = FakeNdarray(100), FakeNdarray(100), FakeNdarray(100)
    mod.vecadd(a, b, c)
    launcher = mod.vecadd[(3, 2), (64, 2), 1024]
    launcher(a, b, c)
    (launch,) = driver.launches
    assert launch["grid"] == (3, 2, 1) and launch["block"] == (64, 2, 1) and launch["smem"] == 1024
    with pytest.raises(ArgumentValueError):
        mod.vecadd[1, 2048](a, b, c)  # block beyond the CUDA limit: general path refuses


def test_generic_kernels_pick_the_fast_instance_by_dtype(native, mod) -> None:
    fake, driver = native
    x32, o32 = FakeNdarray(10, "float32"), FakeNdarray(10, "float32")
    x64, o64 = FakeNdarray(10, "float64"), FakeNdarray(10, "float64")
    mod.scale(2.0, x32, o32)
    mod.scale(2.0, x64, o64)
    assert [launch["name"] for launch in fake.launches] == ["scale_f32", "scale_f64"]
    mod.scale(3.0, x64, o64)
    mod.scale(4.0, x32, o32)
    assert [
        struct.unpack_from("=d", driver.launches[0]["buffer"])[0],
        struct.unpack_from("=f", driver.launches[1]["buffer"])[0],
    ] == [3.0, 4.0]
    assert len(fake.launches) == 2


def test_empty_outputs_launch_nothing_on_the_fast_path(native, mod) -> None:
    fake, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.vecadd(FakeNdarray(0), FakeNdarray(0), FakeNdarray(0))
    assert driver.launches == [] and len(fake.launches) == 1


def test_another_current_device_is_left_to_the_general_path(native, mod) -> None:
    fake, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    import cupy

    with cupy.cuda.Device(1), pytest.raises(ArgumentValueError, match="current device"):
        mod.vecadd(a, b, c)
    driver.context = 0xDEAD  # some other context made current through the driver API
    mod.vecadd(a, b, c)
    assert driver.launches == [] and len(fake.launches) == 2


def test_a_failed_launch_raises_the_backends_errors(native, mod) -> None:
    _, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.saxpy(1.0, a, b, c)
    driver.result = 1
    with pytest.raises(LaunchError, match="CUDA_ERROR_INVALID_VALUE") as e:
        mod.vecadd(a, b, c)
    assert not isinstance(e.value, KernelTrapError)
    driver.result = 700
    with pytest.raises(KernelTrapError, match=r"'saxpy' or an earlier launch.*'vecadd'"):
        mod.saxpy(1.0, a, b, c)
    driver.result = 999  # a code without a name
    with pytest.raises(LaunchError, match="CUDA error 999"):
        mod.vecadd(a, b, c)
    assert len(driver.launches) == 3


def test_the_last_kernel_is_recorded_for_trap_messages(native, mod) -> None:
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.saxpy(1.0, a, b, c)
    mod.vecadd(a, b, c)
    assert pyoxide.backends.get("cupy")._last_kernel == "vecadd"  # type: ignore[attr-defined]


def test_sync_mode_keeps_every_launch_on_the_general_path(native, mod, monkeypatch) -> None:
    monkeypatch.setenv("PYOXIDE_SYNC", "1")
    fake, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.vecadd(a, b, c)
    assert driver.launches == [] and len(fake.launches) == 2 and fake.syncs == 2


def test_without_the_module_the_python_fast_path_is_used(native, mod, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyoxide._native", None)  # unimportable
    _, driver = native
    launched: list[Any] = []
    import cupy

    cupy.cuda.driver.launchKernel = lambda *a: launched.append(a)
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    assert not isinstance(mod.vecadd._fast, pyoxide_native.Launcher)
    mod.vecadd(a, b, c)
    assert len(launched) == 1 and driver.launches == []


def test_the_launcher_refuses_bad_descriptions() -> None:
    launch, ctx = pyoxide_native._noop_entry_points()

    def make(
        params: Any, grid_param: Any = None, entry_points: Any = (launch, ctx, 0, 0), **kw: Any
    ) -> Any:
        return pyoxide_native.Launcher(
            1, 0, params, FakeNdarray, lambda: None, 256, grid_param, object(), "k",
            lambda *a: None, entry_points, **kw,
        )  # fmt: skip

    assert make([("i32", None, 0, False)]).buffer_size == 4
    with pytest.raises(ValueError, match="unknown scalar type"):
        make([("i128", None, 0, False)])
    with pytest.raises(ValueError, match="grid_param"):
        make([("i32", None, 0, False)], grid_param=0)
    with pytest.raises(ValueError, match="non-null"):
        make([], entry_points=(0, ctx, 0, 0))
    with pytest.raises(ValueError, match="elements_per_block must be positive"):
        make([("i32", None, 0, False)], elements_per_block=0)


def test_the_stub_matches_the_module() -> None:
    """pyoxide/_native.pyi names what the module has, with the
    constructor's parameters in order."""
    stub = ast.parse((REPO_DIR / "pyoxide/_native.pyi").read_text())
    names = {n.name for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {
        n.target.id
        for n in stub.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    public = {n for n in dir(pyoxide_native) if not n.startswith("__")}
    assert names == public - {"_native"}
    (cls,) = (n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Launcher")
    init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    stub_params = [a.arg for a in init.args.args[1:]]
    assert stub_params == list(inspect.signature(pyoxide_native.Launcher).parameters)
