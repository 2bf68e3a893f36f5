"""The native call path around the launcher, on a fake ``cupy`` and ctypes stand-ins for
the driver: a kernel's compiled ``__call__`` (pyoxide._native.KernelBase, no Python frame
before the launcher), the current stream from CuPy's C function (a capsule in
``cupy.cuda.stream.__pyx_capi__``) or from the Python call, and the ``_last_kernel``
bookkeeping. tests/test_fast_path.py holds the launcher's checks and packing to the
general path's."""

from __future__ import annotations

import ctypes
import gc
import sys
import types
import weakref
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_cupy
from helpers.fake_launch import _CTX, _LAUNCH, FakeDriver, FakeNdarray, install_native
from helpers.fixtures import write_manifest

import pyoxide
import pyoxide._native as pyoxide_native
from pyoxide import _launch
from pyoxide.backends.cupy import _native as cupy_native
from pyoxide.errors import ArgumentTypeError, ArgumentValueError


@pytest.fixture
def fake() -> fake_cupy.FakeCuda:
    return fake_cupy.FakeCuda(device_count=2)


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch, fake: fake_cupy.FakeCuda) -> FakeDriver:
    _, driver = install_native(monkeypatch, fake)
    return driver


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def arrays(n: int = 10, k: int = 3) -> list[FakeNdarray]:
    return [FakeNdarray(n) for _ in range(k)]


# --- the compiled kernel call ----------------------------------------------------------


def test_kernels_get_the_compiled_call(mod) -> None:
    k = mod.vecadd
    assert isinstance(k, pyoxide.Kernel) and isinstance(k, pyoxide_native.KernelBase)
    assert type(k).__call__ is pyoxide_native.KernelBase.__call__
    assert k._fast is None
    assert repr(k).startswith("<pyoxide.Kernel fn vecadd(")
    assert "src/lib.rs" in (k.__doc__ or "")


def test_a_plain_call_reaches_the_launcher_without_python(driver, mod, monkeypatch) -> None:
    a, b, c = arrays()
    mod.vecadd(a, b, c)  # the general path, which installs the native launcher
    assert type(mod.vecadd._fast) is pyoxide_native.Launcher

    def no_python(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a Python frame ran on the fast path")

    monkeypatch.setattr(pyoxide.Kernel, "__call__", no_python)
    monkeypatch.setattr(pyoxide.Kernel, "_call_general", no_python)
    mod.vecadd(a, b, c)
    (launch,) = driver.launches
    assert launch["grid"] == (1, 1, 1) and launch["block"] == (256, 1, 1)


def test_declined_calls_take_the_general_path(driver, fake, mod) -> None:
    a, b, c = arrays()
    mod.vecadd(a, b, c)
    with pytest.raises(ArgumentTypeError, match="vecadd"):
        mod.vecadd(a, b, FakeNdarray(10, "float64"))
    with pytest.raises(ArgumentTypeError, match="keyword argument c="):
        mod.vecadd(a, b, c=c)  # keywords are never launched, even valid ones
    with pytest.raises(ArgumentTypeError, match="3 argument"):
        mod.vecadd(a, b)
    with pytest.raises(ArgumentValueError, match="overlapping"):
        mod.vecadd(a, b, a)
    assert driver.launches == [] and len(fake.launches) == 1


def test_the_fast_slot_takes_any_launcher(mod) -> None:
    k = mod.vecadd
    seen: list[tuple[Any, Any]] = []

    def python_fast(args: Any, cfg: Any) -> bool:
        seen.append((args, cfg))
        return True

    k._fast = python_fast
    assert k._fast is python_fast
    k(1, 2, 3)  # the Python fast launcher accepted it: nothing else runs
    assert seen == [((1, 2, 3), None)]
    k._fast = lambda args, cfg: 0  # falsy: declined
    with pytest.raises(ArgumentTypeError):
        k(1, 2, 3)
    k._fast = None
    assert k._fast is None
    with pytest.raises(AttributeError):
        del k._fast


def test_errors_of_the_fast_launcher_propagate(mod) -> None:
    def broken(args: Any, cfg: Any) -> bool:
        raise KeyError("from the fast launcher")

    mod.vecadd._fast = broken
    with pytest.raises(KeyError, match="from the fast launcher"):
        mod.vecadd(*arrays())


def test_a_fast_launcher_that_refers_back_is_collected(mod) -> None:
    kernel = _launch.kernel_class()(mod.vecadd.spec, mod.function)
    kernel._fast = lambda args, cfg, k=kernel: False  # a cycle through the native slot
    alive = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert alive() is None


def test_without_the_module_kernels_are_plain_python(driver, fake, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyoxide._native", None)  # unimportable
    monkeypatch.setattr(_launch, "_native_classes", None)
    mod = pyoxide.load(write_manifest(tmp_path))
    assert type(mod.vecadd) is pyoxide.Kernel
    a, b, c = arrays()
    mod.vecadd(a, b, c)
    mod.vecadd(a, b, c)
    assert mod.vecadd._fast is None  # no compiled launcher: every call is a general one
    assert driver.launches == [] and len(fake.launches) == 2
    with pytest.raises(ArgumentTypeError, match="keyword"):
        mod.vecadd(a, b, c=c)


def test_a_configured_call_reaches_the_launcher_without_python(driver, mod, monkeypatch) -> None:
    a, b, c = arrays(100)
    mod.vecadd(a, b, c)
    configured = mod.vecadd[(3, 2), (64, 2), 1024]
    assert isinstance(configured, pyoxide_native.ConfiguredBase)
    assert type(configured).__call__ is pyoxide_native.ConfiguredBase.__call__
    assert configured._kernel is mod.vecadd and configured._checked == (3, 2, 1, 64, 2, 1, 1024)

    def no_python(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a Python frame ran on the fast path")

    monkeypatch.setattr(_launch._Configured, "__call__", no_python)
    monkeypatch.setattr(_launch._Configured, "_call_general", no_python)
    configured(a, b, c)
    (launch,) = driver.launches
    assert launch["grid"] == (3, 2, 1) and launch["block"] == (64, 2, 1) and launch["smem"] == 1024


def test_configured_calls_the_fast_path_cannot_take_go_the_general_way(driver, fake, mod) -> None:
    a, b, c = arrays(100)
    mod.vecadd[1, 128](a, b, c)  # general: no fast launcher yet
    import cupy

    unchecked = [
        mod.vecadd[1, 128, 0, cupy.cuda.Stream(ptr=0x9000)],  # an explicit stream
        mod.vecadd[1, 128, 64 * 1024],  # shared memory above the default limit
        mod.scale[1, 128],  # generic: dispatched by the general path
    ]
    assert [u._checked for u in unchecked] == [None, None, None]
    unchecked[0](a, b, c)
    unchecked[1](a, b, c)
    unchecked[2](2.0, FakeNdarray(10), FakeNdarray(10))
    with pytest.raises(ArgumentTypeError, match="keyword argument c="):
        mod.vecadd[1, 128](a, b, c=c)
    with pytest.raises(ArgumentValueError, match="block"):
        mod.vecadd[1, 2048](a, b, c)
    with pytest.raises(ArgumentValueError, match="overlapping"):
        mod.vecadd[1, 128](a, b, a)
    assert driver.launches == []
    assert len(fake.launches) == 4
    assert fake.launches[1]["stream"].ptr == 0x9000
    assert fake.launches[2]["shared_mem"] == 64 * 1024


def test_a_configured_call_hands_a_python_launcher_its_configuration(mod) -> None:
    seen: list[Any] = []
    mod.vecadd._fast = lambda args, cfg: seen.append((args, cfg)) or True
    mod.vecadd[2, 32](1, 2, 3)
    assert seen == [((1, 2, 3), (2, 1, 1, 32, 1, 1, 0))]
    configured = mod.vecadd[2, 32]
    with pytest.raises(ValueError, match="7-tuple"):
        configured._checked = (1, 2, 3)
    with pytest.raises(ValueError, match="7-tuple"):
        configured._checked = (1, 1, 1, 32, 1, 1, -1)
    configured._checked = None
    with pytest.raises(ArgumentTypeError):
        configured(1, 2, 3)  # general path: not arrays
    assert len(seen) == 1


def test_configured_and_generic_calls_use_the_native_launcher(driver, fake, mod) -> None:
    a, b, c = arrays(100)
    mod.vecadd(a, b, c)
    mod.vecadd[2, 64](a, b, c)
    x, y = FakeNdarray(10, "float64"), FakeNdarray(10, "float64")
    mod.scale(2.0, x, y)
    mod.scale(3.0, x, y)
    assert [launch["grid"] for launch in driver.launches] == [(2, 1, 1), (1, 1, 1)]
    assert len(fake.launches) == 2


# --- the current stream ------------------------------------------------------------------


@pytest.mark.parametrize("capsule", [True, False])
def test_launches_go_to_the_current_stream(capsule, fake, monkeypatch, mod) -> None:
    fake.stream_capsule = capsule
    cp, driver = install_native(monkeypatch, fake)
    assert (cupy_native.stream_capsule(cp) is not None) == capsule
    a, b, c = arrays()
    mod.vecadd(a, b, c)
    assert mod.vecadd._fast.stream_from_capsule == capsule
    current = cp.cuda.get_current_stream()
    for ptr in (0, 0x7000, 2):  # the legacy default, a created stream, per-thread default
        current.ptr = ptr
        mod.vecadd(a, b, c)
    assert [launch["stream"] for launch in driver.launches] == [0, 0x7000, 2]


def test_a_capsule_of_another_signature_is_not_called(fake, monkeypatch) -> None:
    fake.stream_capsule = True
    cp, _ = install_native(monkeypatch, fake)
    other = fake_cupy.capsule(cp.cuda.stream._keep_alive, ctypes_name(b"int (void)"))
    cp.cuda.stream.__pyx_capi__["get_current_stream_ptr"] = other
    assert cupy_native.stream_capsule(cp) is None
    with pytest.raises(ValueError, match="intptr_t"):
        make_launcher(current_stream_capsule=other)
    cp.cuda.stream.__pyx_capi__ = {"get_current_stream_ptr": "not a capsule"}
    assert cupy_native.stream_capsule(cp) is None
    del cp.cuda.stream.__pyx_capi__
    assert cupy_native.stream_capsule(cp) is None


def test_a_capsule_that_disagrees_with_python_is_not_used() -> None:
    capsule = pyoxide_native._test_stream_capsule()
    try:
        pyoxide_native._test_set_stream(0x5000)
        assert make_launcher(stream_ptr=0x5000, current_stream_capsule=capsule).stream_from_capsule
        assert not make_launcher(stream_ptr=0, current_stream_capsule=capsule).stream_from_capsule
        pyoxide_native._test_set_stream(None)  # raising when the launcher is built
        assert not make_launcher(stream_ptr=0, current_stream_capsule=capsule).stream_from_capsule
    finally:
        pyoxide_native._test_set_stream(0)


def test_a_stream_function_that_raises_launches_nothing() -> None:
    capsule = pyoxide_native._test_stream_capsule()
    launches: list[Any] = []
    launcher = make_launcher(current_stream_capsule=capsule, launches=launches)
    assert launcher.stream_from_capsule
    assert launcher((1,), (1, 1, 1, 32, 1, 1, 0)) is True
    try:
        pyoxide_native._test_set_stream(None)
        with pytest.raises(RuntimeError, match="get_current_stream_ptr failed"):
            launcher((1,), (1, 1, 1, 32, 1, 1, 0))
        pyoxide_native._test_set_stream(-1)  # -1 with no exception: a value (`except? -1`)
        assert launcher((1,), (1, 1, 1, 32, 1, 1, 0)) is True
    finally:
        pyoxide_native._test_set_stream(0)
    assert launches == [0, 2**64 - 1]


# --- the last kernel ---------------------------------------------------------------------


class SlotBackend:
    """A backend without an instance dict: the launcher falls back to setattr."""

    __slots__ = ("_last_kernel",)

    def __init__(self) -> None:
        self._last_kernel: str | None = "before"


class PropertyBackend:
    """A backend whose `_last_kernel` is a property: its dict entry would bypass it."""

    def __init__(self) -> None:
        self.log: list[str | None] = []

    @property
    def _last_kernel(self) -> str | None:
        return self.log[-1] if self.log else "before"

    @_last_kernel.setter
    def _last_kernel(self, value: str | None) -> None:
        self.log.append(value)


@pytest.mark.parametrize("backend", [types.SimpleNamespace, SlotBackend, PropertyBackend])
def test_the_last_kernel_is_swapped_on_any_backend(backend) -> None:
    b = backend() if backend is not types.SimpleNamespace else backend(_last_kernel="before")
    previous: list[Any] = []
    launcher = make_launcher(backend=b, result=1, on_error=lambda *a: previous.append(a[2]))
    with pytest.raises(RuntimeError, match="launching 'k' failed"):
        launcher((1,), (1, 1, 1, 32, 1, 1, 0))
    assert previous == ["before"] and b._last_kernel == "k"


# --- helpers -----------------------------------------------------------------------------

_keep: list[Any] = []  # ctypes objects the launchers built here point at


def ctypes_name(name: bytes) -> Any:
    buf = ctypes.create_string_buffer(name)
    _keep.append(buf)
    return buf


def make_launcher(
    *,
    stream_ptr: int = 0,
    current_stream_capsule: Any = None,
    backend: Any = None,
    result: int = 0,
    on_error: Any = None,
    launches: list[Any] | None = None,
) -> Any:
    """A Launcher for `fn k(x: i32)` on ctypes stand-ins for the driver."""

    def launch(*a: Any) -> int:
        if launches is not None:
            launches.append(a[8] or 0)  # the stream
        return result

    def ctx(out: Any) -> int:
        out[0] = 0x1000
        return 0

    callbacks = (_LAUNCH(launch), _CTX(ctx))
    _keep.append(callbacks)
    stream = types.SimpleNamespace(ptr=stream_ptr)
    return pyoxide_native.Launcher(
        1, 0, [("i32", None, 0, False, None, -1)], FakeNdarray, lambda: stream, 256, None,
        backend if backend is not None else types.SimpleNamespace(_last_kernel=None), "k",
        on_error or (lambda *a: None),
        (*(ctypes.cast(c, ctypes.c_void_p).value or 0 for c in callbacks), 0, 0),
        current_stream_capsule,
    )  # fmt: skip
