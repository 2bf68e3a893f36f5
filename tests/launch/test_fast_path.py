"""The compiled fast path (crates/pyoxide-native, pyoxide/_launch/fastplan.py) held to the
general path, on a fake ``cupy`` and a fake ``torch`` with ctypes stand-ins for
cuLaunchKernel, cuCtxGetCurrent and cuGetErrorName.

One conformance table: each call, made after a first launch built the compiled
launcher, is `fast` (the compiled launcher launched it, with exactly the parameter bytes,
grid, block and stream the general path gives the same call), `declined` (the general
path launched it) or an error class (the general path refused it; nothing was launched
anywhere). Then the driver-facing cases: current context, launch errors, knobs changed
after a fast launch.
"""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.fake_launch import FakeNdarray, fake_native, record_aligns, warm_up
from helpers.fake_launch import assert_same_launch as same_launch
from helpers.fake_torch import Tensor, fake_torch_module
from helpers.fixtures import REPO_DIR, write_manifest

import pyoxide
import pyoxide._launch._native as pyoxide_native
from pyoxide.errors import ArgumentTypeError, ArgumentValueError, KernelTrapError, LaunchError

native = pytest.fixture(fake_native, name="native")

FAST, DECLINED = "fast", "declined"


torch = pytest.fixture(fake_torch_module, name="torch")


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


X = FakeNdarray(1000)
Y = FakeNdarray(1000)
OUT = FakeNdarray(1000)
OUT64 = FakeNdarray(5, "float64")
MIX = (-3, 7, True, 0, 0.5, 0, 0)
TX, TY, TOUT = Tensor(1000), Tensor(1000), Tensor(1000)
NP_MIX = (np.int8(-3), np.uint16(7), np.bool_(True), np.int64(-(2**40)), np.float64(0.5),
          np.uint32(2**32 - 1), np.uint64(2**64 - 1))  # fmt: skip


def st(a: Any = (1, 2, 3), b: Any = (-4, 5), c: Any = (6, 7, 8), flag: Any = True,
       out: Any = OUT) -> tuple[Any, ...]:  # fmt: skip
    """Arguments of strided(a: [u64; 3], b: [i32; 2], c: [u8; 3], flag: bool, out)."""
    return a, b, c, flag, out


# kernel, arguments (after a first plain launch of `kernel` with good ones), outcome.
TABLE: list[tuple[str, str, Callable[[], tuple[Any, ...]], Any]] = [
    ("plain", "saxpy", lambda: (2.5, X, Y, OUT), FAST),
    ("negative-zero", "saxpy", lambda: (-0.0, X, Y, OUT), FAST),
    ("f32-max", "saxpy", lambda: (3.4028234663852886e38, X, Y, OUT), FAST),
    ("inputs-may-alias", "saxpy", lambda: (1.0, X, X, OUT), FAST),
    ("empty-output", "vecadd", lambda: (FakeNdarray(0),) * 3, FAST),
    ("numpy-float32", "saxpy", lambda: (np.float32(1.7), X, Y, OUT), FAST),
    ("numpy-float64", "saxpy", lambda: (np.float64(-2.25), X, Y, OUT), FAST),
    ("numpy-float16", "saxpy", lambda: (np.float16(0.5), X, Y, OUT), FAST),
    ("0-d-float32", "saxpy", lambda: (np.array(1.7, np.float32), X, Y, OUT), FAST),
    ("numpy-int-for-float", "saxpy", lambda: (np.int32(2), X, Y, OUT), DECLINED),
    ("numpy-bool-for-float", "saxpy", lambda: (np.bool_(True), X, Y, OUT), ArgumentTypeError),
    ("int-for-float", "saxpy", lambda: (2, X, Y, OUT), DECLINED),
    ("infinity", "saxpy", lambda: (math.inf, X, Y, OUT), DECLINED),
    (
        "wrong-dtype",
        "saxpy",
        lambda: (2.0, FakeNdarray(1000, "float64"), Y, OUT),
        ArgumentTypeError,
    ),
    ("out-aliases-x", "saxpy", lambda: (2.0, X, Y, X), ArgumentValueError),
    ("beyond-f32", "saxpy", lambda: (1e39, X, Y, OUT), ArgumentValueError),
    ("numpy-beyond-f32", "saxpy", lambda: (np.float64(1e39), X, Y, OUT), ArgumentValueError),
    ("arity", "saxpy", lambda: (2.0, X, Y), ArgumentTypeError),
    ("bool-for-f32", "saxpy", lambda: (True, X, Y, OUT), ArgumentTypeError),
    ("str-for-f32", "saxpy", lambda: ("2", X, Y, OUT), ArgumentTypeError),
    (
        "other-device",
        "saxpy",
        lambda: (2.0, X, Y, FakeNdarray(1000, device=1)),
        ArgumentValueError,
    ),
    ("2-d", "saxpy", lambda: (2.0, X, Y, FakeNdarray((10, 100))), ArgumentValueError),
    (
        "strided",
        "saxpy",
        lambda: (2.0, X, Y, FakeNdarray(500, strides=(8,))),
        ArgumentValueError,
    ),
    (
        "misaligned",
        "saxpy",
        lambda: (2.0, X, Y, FakeNdarray(1000, ptr=Y.ptr + 2**29 + 2)),
        ArgumentValueError,
    ),
    ("torch", "saxpy", lambda: (2.5, TX, TY, TOUT), FAST),
    ("torch-numpy-scalar", "saxpy", lambda: (np.float32(0.25), TX, TY, TOUT), FAST),
    ("torch-empty", "vecadd", lambda: (Tensor(0),) * 3, FAST),
    ("torch-on-device-1", "vecadd", lambda: tuple(Tensor(8, device=1) for _ in "abc"), DECLINED),
    (
        "torch-requires-grad",
        "saxpy",
        lambda: (2.0, Tensor(1000, requires_grad=True), TY, TOUT),
        ArgumentTypeError,
    ),
    (
        "torch-strided",
        "saxpy",
        lambda: (2.0, TX, TY, Tensor(500, strides=(2,))),
        ArgumentValueError,
    ),
    (
        "torch-wrong-dtype",
        "saxpy",
        lambda: (2.0, TX, TY, Tensor(1000, "float64")),
        ArgumentTypeError,
    ),
    ("torch-and-cupy", "saxpy", lambda: (2.0, TX, Y, TOUT), ArgumentTypeError),
    ("torch-aliasing", "saxpy", lambda: (2.0, TX, TY, TX), ArgumentValueError),
    ("mix", "mix", lambda: (-3, 7, True, -(2**40), 0.5, 2**32 - 1, 2**64 - 1, OUT64), FAST),
    ("mix-extremes", "mix", lambda: (127, 0, False, 2**63 - 1, -math.inf, 0, 0, OUT64), FAST),
    ("mix-numpy", "mix", lambda: (*NP_MIX, OUT64), FAST),
    ("mix-0-d", "mix", lambda: (*(np.array(v) for v in NP_MIX), OUT64), FAST),
    ("nan-f64", "mix", lambda: (*MIX[:4], math.nan, *MIX[5:], OUT64), DECLINED),
    ("int-for-f64", "mix", lambda: (*MIX[:4], 1, *MIX[5:], OUT64), DECLINED),
    ("int-for-bool", "mix", lambda: (-3, 7, 1, *MIX[3:], OUT64), ArgumentTypeError),
    ("numpy-int-for-bool", "mix", lambda: (-3, 7, np.int8(1), *MIX[3:], OUT64), ArgumentTypeError),
    ("numpy-float-for-int", "mix", lambda: (np.float32(1), *MIX[1:], OUT64), ArgumentTypeError),
    ("beyond-i8", "mix", lambda: (128, *MIX[1:], OUT64), ArgumentValueError),
    ("numpy-beyond-i8", "mix", lambda: (np.int16(128), *MIX[1:], OUT64), ArgumentValueError),
    ("negative-u16", "mix", lambda: (-3, -1, *MIX[2:], OUT64), ArgumentValueError),
    ("beyond-u32", "mix", lambda: (*MIX[:5], 2**32, 0, OUT64), ArgumentValueError),
    ("beyond-usize", "mix", lambda: (*MIX[:6], 2**64, OUT64), ArgumentValueError),
    ("beyond-i64", "mix", lambda: (*MIX[:3], 2**63, *MIX[4:], OUT64), ArgumentValueError),
    ("lanes", "strided", lambda: st(), FAST),
    ("lanes-extremes", "strided", lambda: st([2**64 - 1, 0, 2**40], [-(2**31), 2**31 - 1],
                                             [0, 255, 128], False), FAST),
    ("lanes-numpy-ints-torch", "strided", lambda: st((np.uint64(2**64 - 1), np.int64(3), 4),
     (np.int32(-1), np.int8(0)), (np.uint8(255), 0, 1), out=TOUT), FAST),
    ("lanes-array", "strided", lambda: st(np.array([1, 2, 3], np.uint64)), DECLINED),
    ("lanes-bytes", "strided", lambda: st(bytes(24)), DECLINED),
    ("lanes-nested", "strided", lambda: st([[1, 2, 3]]), DECLINED),
    ("lanes-short", "strided", lambda: st((1, 2)), ArgumentValueError),
    ("lanes-long", "strided", lambda: st(b=(1, 2, 3)), ArgumentValueError),
    ("lanes-an-int", "strided", lambda: st(7), ArgumentTypeError),
    ("lanes-bool", "strided", lambda: st((1, True, 3)), ArgumentTypeError),
    ("lanes-float", "strided", lambda: st((1.0, 2, 3)), ArgumentTypeError),
    ("lanes-negative-u64", "strided", lambda: st((-1, 0, 0)), ArgumentValueError),
    ("lanes-beyond-i32", "strided", lambda: st(b=(2**31, 0)), ArgumentValueError),
    ("lanes-beyond-u8", "strided", lambda: st(c=(0, 256, 0)), ArgumentValueError),
]  # fmt: skip
GOOD = {
    "saxpy": lambda: (1.0, X, Y, OUT),
    "vecadd": lambda: (X, Y, OUT),
    "mix": lambda: (*MIX, OUT64),
    "strided": lambda: st(flag=False),
}


@pytest.mark.parametrize(
    ("kernel", "args", "outcome"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE]
)
def test_conformance(
    native, torch, mod, kernel: str, args: Callable[[], tuple[Any, ...]], outcome: Any
) -> None:
    fake, driver = native
    k = mod[kernel]
    warm_up(k, *GOOD[kernel]())
    general, compiled = len(fake.launches), len(driver.launches)
    call = args()
    if outcome is FAST:
        k(*call)
        empty = len(driver.launches) == compiled  # an empty output launches nothing
        assert len(fake.launches) == general
        k.launch(*call)  # always the general path
        if empty:
            assert len(fake.launches) == general
            return
        (fast,) = driver.launches[compiled:]
        slow = fake.launches[-1]
        same_launch(fast, slow, record_aligns(k))
        assert fast["smem"] == slow["shared_mem"] == 0
        # The general path names PyTorch's stream, or leaves CuPy's current one (0 here).
        assert fast["stream"] == (0 if slow["stream"] is None else slow["stream"].ptr)
    elif outcome is DECLINED:
        k(*call)
        assert len(driver.launches) == compiled and len(fake.launches) == general + 1
    else:
        with pytest.raises(outcome):
            k(*call)
        assert len(driver.launches) == compiled and len(fake.launches) == general


def test_torch_calls_go_to_torchs_current_stream(native, torch, mod) -> None:
    """Read on every call (``torch.cuda.stream(s)``, graph capture), as the general path
    reads it."""
    _, driver = native
    mod.vecadd(TX, TY, TOUT)
    for stream in (0x100, 0x777, 0):
        torch.streams[0] = stream
        mod.vecadd(TX, TY, TOUT)
    assert [launch["stream"] for launch in driver.launches] == [0x100, 0x777, 0]


def test_the_fast_path_packs_at_natural_alignment(native, mod) -> None:
    """The table compares with the general path; this pins the layout itself."""
    _, driver = native
    mod.saxpy(1.0, X, Y, OUT)
    mod.saxpy(-1.25, X, Y, OUT)
    assert mod.saxpy.launchers[0].buffer_size == 56
    ((launch),) = driver.launches
    assert launch["buffer"][:4] == np.float32(-1.25).tobytes()
    assert np.frombuffer(launch["buffer"][8:], np.uint64).tolist() == [
        X.ptr, 1000, Y.ptr, 1000, OUT.ptr, 1000,
    ]  # fmt: skip


def test_empty_arrays_reach_the_kernel_as_non_null_pointers(native, mod) -> None:
    """oxide-abi's `empty_array_address`: an empty array, whose data pointer CuPy and
    PyTorch leave at 0, is passed as its element size (non-null, aligned), on both
    paths: the device rebuilds `&[T]` from the pointer as is."""
    fake, driver = native
    x, y, out = (FakeNdarray(0, ptr=0) for _ in range(3))
    mod.vecadd[1, 32](x, y, out)  # the general path (then builds the fast launcher)
    assert [int(w) for w in fake.launches[-1]["args"]] == [4, 0, 4, 0, 4, 0]
    mod.vecadd[1, 32](x, y, out)  # the compiled fast path
    (launch,) = driver.launches
    assert np.frombuffer(launch["buffer"], np.uint64).tolist() == [4, 0, 4, 0, 4, 0]
    mod.mix[1, 32](*MIX, FakeNdarray(0, "float64", ptr=0))  # general path
    assert [int(w) for w in fake.launches[-1]["args"][-2:]] == [8, 0]  # f64: 8-aligned
    mod.mix[1, 32](*MIX, FakeNdarray(0, "float64", ptr=0))
    assert np.frombuffer(driver.launches[-1]["buffer"][-16:], np.uint64).tolist() == [8, 0]


def test_configured_launch_uses_the_checked_configuration(native, mod) -> None:
    _, driver = native
    a, b, c = FakeNdarray(100), FakeNdarray(100), FakeNdarray(100)
    mod.vecadd(a, b, c)
    mod.vecadd[(3, 2), (64, 2), 1024](a, b, c)
    mod.saxpy(1.0, a, b, c)
    mod.saxpy[1, 128](np.float32(2), a, b, c)  # a NumPy scalar in a configured call
    first, second = driver.launches
    assert first["grid"] == (3, 2, 1) and first["block"] == (64, 2, 1) and first["smem"] == 1024
    assert second["grid"] == (1, 1, 1) and second["buffer"][:4] == np.float32(2).tobytes()
    with pytest.raises(ArgumentValueError):
        mod.vecadd[1, 2048](a, b, c)  # block beyond the CUDA limit: general path refuses


def test_a_configuration_is_checked_once(native, mod) -> None:
    """`kernel[grid, block]` with the same ints is the same configured call (kept per
    kernel, found by comparing its ints), so indexing in a loop costs little; one with a
    stream object is not kept (it would keep the stream alive)."""
    import cupy

    assert mod.vecadd[4, 256] is mod.vecadd[4, 256]
    assert mod.vecadd[(4, 1), (256,)] is mod.vecadd[(4, 1), (256,)]
    assert mod.vecadd[4, 256] is not mod.vecadd[4, 128]
    # The same ints in another structure are another configuration.
    shapes = [(4, 256), ((4,), 256), (4, (256,)), ((4,), (256,)), ((4, 1), 256), (4, 256, 0)]
    assert len({id(mod.vecadd[s]) for s in shapes}) == len(shapes)
    assert mod.vecadd[2**70, 256] is not mod.vecadd[2**70, 256]  # beyond i64: not kept
    stream = cupy.cuda.Stream(ptr=0x9000)
    assert mod.vecadd[4, 256, 0, stream] is not mod.vecadd[4, 256, 0, stream]
    with pytest.raises(ArgumentTypeError, match="kernel\\[grid, block\\]"):
        mod.vecadd[[4, 256]]  # unhashable: not kept, refused as before
    # Equal keys of other types are not the kept configuration: each is checked itself.
    for other in [(4.0, 256), (True, 256), (4, (256.0,))]:
        with pytest.raises((ArgumentValueError, ArgumentTypeError)):
            mod.vecadd[other](*[FakeNdarray(8) for _ in "abc"])
    assert mod.vecadd[np.int64(4), 256] is not mod.vecadd[np.int64(4), 256]  # not kept


def test_generic_kernels_pick_the_fast_instance_by_dtype(native, mod) -> None:
    fake, driver = native
    x32, o32 = FakeNdarray(10, "float32"), FakeNdarray(10, "float32")
    x64, o64 = FakeNdarray(10, "float64"), FakeNdarray(10, "float64")
    mod.scale(2.0, x32, o32)
    mod.scale(2.0, x64, o64)
    mod.scale(3.0, x64, o64)
    mod.scale(4.0, x32, o32)
    assert [launch["name"] for launch in fake.launches] == ["scale_f32", "scale_f64"]
    assert driver.launches[0]["buffer"][:8] == np.float64(3.0).tobytes()
    assert driver.launches[1]["buffer"][:4] == np.float32(4.0).tobytes()


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


def test_each_device_gets_its_own_launcher(native, torch, mod) -> None:
    """Tensors on cuda:1 launch there (a device guard) and build a launcher for it, which
    the next call with cuda:1 tensors uses once that device is current."""
    fake, driver = native
    on1 = [Tensor(8, device=1) for _ in range(3)]
    mod.vecadd(X, Y, OUT)
    mod.vecadd(*on1)
    assert sorted(launcher.device for launcher in mod.vecadd.launchers) == [0, 1]
    import cupy

    with cupy.cuda.Device(1):
        mod.vecadd(*on1)
    assert len(fake.launches) == 2 and len(driver.launches) == 1


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
    """Both paths write the backend's launch record (general, then compiled)."""
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    record = pyoxide.backends.get("cupy").record  # type: ignore[attr-defined]
    mod.vecadd(a, b, c)
    mod.saxpy(1.0, a, b, c)
    assert record.last == "saxpy"
    mod.vecadd(a, b, c)
    assert record.last == "vecadd"


def test_sync_mode_keeps_every_launch_on_the_general_path(native, mod, monkeypatch) -> None:
    monkeypatch.setenv("PYOXIDE_SYNC", "1")
    fake, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.vecadd(a, b, c)
    assert driver.launches == [] and len(fake.launches) == 2 and fake.syncs == 2
    assert mod.vecadd.launchers == ()


def test_a_knob_change_applies_after_reload_knobs(native, mod, monkeypatch) -> None:
    """The documented point: pyoxide.reload_knobs() (and any launch the general path
    makes, which reads the knobs itself)."""
    fake, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.vecadd(a, b, c)
    assert len(driver.launches) == 1  # the fast path is in use
    monkeypatch.setenv("PYOXIDE_SYNC", "1")
    pyoxide.reload_knobs()
    mod.vecadd(a, b, c)
    mod.vecadd(a, b, c)
    assert len(driver.launches) == 1 and len(fake.launches) == 3 and fake.syncs == 2
    assert mod.vecadd.launchers == ()  # dropped: built for the old settings
    monkeypatch.setenv("PYOXIDE_BACKEND", "emu")
    with pytest.raises(ArgumentTypeError, match="PYOXIDE_BACKEND=emu"):
        mod.vecadd(a, b, c)
    monkeypatch.delenv("PYOXIDE_SYNC")
    monkeypatch.delenv("PYOXIDE_BACKEND")
    pyoxide.reload_knobs()
    mod.vecadd(a, b, c)  # the general path again, which builds a new fast launcher
    mod.vecadd(a, b, c)
    assert len(driver.launches) == 2 and len(mod.vecadd.launchers) == 1


def test_a_general_launch_publishes_a_knob_change(native, mod, monkeypatch) -> None:
    fake, driver = native
    a, b, c = FakeNdarray(10), FakeNdarray(10), FakeNdarray(10)
    mod.vecadd(a, b, c)
    mod.saxpy(1.0, a, b, c)
    monkeypatch.setenv("PYOXIDE_SYNC", "1")
    mod.vecadd.launch(a, b, c)  # any general launch reads the knobs
    mod.saxpy(1.0, a, b, c)  # its launcher is of the old generation: declined
    assert driver.launches == [] and fake.syncs == 2


def test_the_stub_matches_the_module() -> None:
    """pyoxide/_launch/_native.pyi names what the module has, with the constructors' parameters
    in order."""
    stub = ast.parse((REPO_DIR / "pyoxide/_launch/_native.pyi").read_text())
    names = {n.name for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {
        n.target.id
        for n in stub.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    public = {n for n in dir(pyoxide_native) if not n.startswith("__")}
    assert names == public - {"_native"}
    for name in ("Launcher", "Runtime"):
        (cls,) = (n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == name)
        init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
        stub_params = [a.arg for a in [*init.args.args[1:], *init.args.kwonlyargs]]
        assert stub_params == list(inspect.signature(getattr(pyoxide_native, name)).parameters)
