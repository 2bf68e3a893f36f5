"""The native call path around the launcher, on a fake ``cupy`` and ctypes stand-ins for
the driver: a kernel's compiled ``__call__`` and ``__getitem__``
(pyoxide._launch._native.KernelBase: no Python frame before the launcher), the hooks it calls
for anything its launchers decline (made opaque to ``torch.compile`` once PyTorch is
imported), the current stream from CuPy's C function (a capsule in
``cupy.cuda.stream.__pyx_capi__``) or from the Python call, and the launch record.
tests/launch/test_fast_path.py holds the launcher's checks and packing to the general path's."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import types
import weakref
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_cupy, fake_torch
from helpers.fake_launch import _CTX, _LAUNCH, FakeNdarray, native_installed
from helpers.fixtures import TESTS_DIR, write_manifest

import pyoxide
import pyoxide._launch._native as pyoxide_native
from pyoxide._launch import kernel as _launch
from pyoxide._launch.fastplan import FastParam, FastPlan
from pyoxide._manifest.abi import DEFAULT_DYNAMIC_SHARED_BYTES, MAX_DYNAMIC_SHARED_BYTES
from pyoxide.backends.cupy import _native as cupy_native
from pyoxide.errors import ArgumentTypeError, ArgumentValueError


@pytest.fixture
def fake() -> fake_cupy.FakeCuda:
    return fake_cupy.FakeCuda(device_count=2)


@pytest.fixture
def driver(fake: fake_cupy.FakeCuda) -> Any:
    with native_installed(fake) as (_, driver):
        yield driver


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def arrays(n: int = 10, k: int = 3) -> list[FakeNdarray]:
    return [FakeNdarray(n) for _ in range(k)]


def no_python(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a Python frame ran on the fast path")


# --- the compiled kernel call ----------------------------------------------------------


def test_kernels_get_the_compiled_call(mod) -> None:
    k = mod.vecadd
    assert type(k) is pyoxide.Kernel and isinstance(k, pyoxide_native.KernelBase)
    assert type(k).__call__ is pyoxide_native.KernelBase.__call__
    assert type(k).__getitem__ is pyoxide_native.KernelBase.__getitem__
    assert isinstance(mod.scale, pyoxide_native.KernelBase)  # a generic kernel too
    assert k.launchers == ()
    assert repr(k).startswith("<pyoxide.Kernel fn vecadd(")
    assert "src/lib.rs" in (k.__doc__ or "")


def test_a_plain_call_reaches_the_launcher_without_python(driver, mod, monkeypatch) -> None:
    a, b, c = arrays()
    mod.vecadd(a, b, c)  # the general path, which installs the native launcher
    assert len(mod.vecadd.launchers) == 1
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


def test_only_a_compiled_launcher_is_installed(mod) -> None:
    with pytest.raises(TypeError):
        mod.vecadd.install(lambda args, cfg: True)
    assert mod.vecadd.launchers == ()


def test_errors_of_the_hooks_propagate(mod) -> None:
    def broken(kernel: Any, args: Any, kwargs: Any) -> None:
        raise KeyError("from the general path")

    mod.vecadd.set_hooks(broken, _launch._configure)
    with pytest.raises(KeyError, match="from the general path"):
        mod.vecadd(*arrays())


def test_hooks_that_refer_back_are_collected(mod) -> None:
    kernel = pyoxide.Kernel(mod.vecadd.spec, mod.function)
    kernel.set_hooks(lambda *a, k=kernel: None, lambda k, config: (k, config))
    assert kernel[1, 32] == (kernel, (1, 32))  # a kept configuration refers back too
    alive = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert alive() is None


def test_without_the_native_module_load_says_how_to_fix_it() -> None:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, tempfile, pathlib
            sys.modules["pyoxide._launch._native"] = None  # unimportable
            sys.path.insert(0, {str(TESTS_DIR)!r})
            from helpers.fixtures import write_manifest
            import pyoxide
            try:
                pyoxide.load(write_manifest(pathlib.Path(tempfile.mkdtemp())))
            except pyoxide.LoadError as e:
                print("OK", e)
        """)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.stdout.startswith("OK") and "scripts/setup" in r.stdout, r.stdout + r.stderr


def test_a_configured_call_reaches_the_launcher_without_python(driver, mod, monkeypatch) -> None:
    a, b, c = arrays(100)
    mod.vecadd(a, b, c)
    configured = mod.vecadd[(3, 2), (64, 2), 1024]
    assert isinstance(configured, pyoxide_native.ConfiguredBase)
    assert type(configured).__call__ is pyoxide_native.ConfiguredBase.__call__
    assert configured.checked == (3, 2, 1, 64, 2, 1, 1024)
    monkeypatch.setattr(_launch._Configured, "_call_general", no_python)
    monkeypatch.setattr(_launch, "_configure", no_python)  # mod.vecadd[...] is kept
    mod.vecadd[(3, 2), (64, 2), 1024](a, b, c)
    (launch,) = driver.launches
    assert launch["grid"] == (3, 2, 1) and launch["block"] == (64, 2, 1) and launch["smem"] == 1024


def test_configured_calls_the_fast_path_cannot_take_go_the_general_way(driver, fake, mod) -> None:
    a, b, c = arrays(100)
    mod.vecadd[1, 128](a, b, c)  # general: no fast launcher yet
    import cupy

    unchecked = [
        mod.vecadd[1, 128, 0, cupy.cuda.Stream(ptr=0x9000)],  # an explicit stream
        mod.vecadd[1, 128, MAX_DYNAMIC_SHARED_BYTES + 1],  # more than any block may have
        mod.scale[1, 128],  # generic: dispatched by the general path
    ]
    assert [u.checked for u in unchecked] == [None, None, None]
    unchecked[0](a, b, c)
    with pytest.raises(ArgumentValueError, match="shared_mem"):
        unchecked[1](a, b, c)
    unchecked[2](2.0, FakeNdarray(10), FakeNdarray(10))
    with pytest.raises(ArgumentTypeError, match="keyword argument c="):
        mod.vecadd[1, 128](a, b, c=c)
    with pytest.raises(ArgumentValueError, match="block"):
        mod.vecadd[1, 2048](a, b, c)
    with pytest.raises(ArgumentValueError, match="overlapping"):
        mod.vecadd[1, 128](a, b, a)
    assert driver.launches == []
    assert len(fake.launches) == 3
    assert fake.launches[1]["stream"].ptr == 0x9000


def test_shared_memory_above_48_kib_takes_the_launcher_up_to_the_opt_in(driver, fake, mod) -> None:
    """A configured call may ask for more than the default 48 KiB of dynamic shared
    memory (attention_sm90's ~200 KiB): the general launch before the launcher was built
    opted the function in, and the launcher takes calls up to that much. Above it, the
    general path opts in further and launches; the opt-in never shrinks."""
    a, b, c = arrays(100)
    kib = 1024
    big = mod.vecadd[1, 128, 200 * kib]
    assert big.checked == (1, 1, 1, 128, 1, 1, 200 * kib)
    big(a, b, c)  # the general path: opts in, then builds the launcher
    (launcher,) = mod.vecadd.launchers
    assert launcher.shared_limit == 200 * kib
    big(a, b, c)
    mod.vecadd[1, 128, 64 * kib](a, b, c)
    mod.vecadd(a, b, c)  # a plain call: vecadd needs none
    assert [launch["smem"] for launch in driver.launches] == [200 * kib, 64 * kib, 0]
    mod.vecadd[1, 128, 220 * kib](a, b, c)  # above the opt-in: the general path's
    assert launcher.shared_limit == 220 * kib  # which opted in further
    mod.vecadd[1, 128, 220 * kib](a, b, c)  # the launcher's from now on
    mod.vecadd.launch(a, b, c, grid=1, block=128, shared_mem=100 * kib)  # no opt-in
    assert launcher.shared_limit == 220 * kib
    assert [launch["smem"] for launch in driver.launches][3:] == [220 * kib]
    assert [launch["shared_mem"] for launch in fake.launches] == [200 * kib, 220 * kib, 100 * kib]
    function = {f for f, _, _ in fake.attributes}
    assert len(function) == 1 and [v for _, _, v in fake.attributes] == [200 * kib, 220 * kib]


def test_a_launcher_built_before_its_functions_opt_in_takes_what_it_was_opted_in_to(
    driver, fake, mod
) -> None:
    """A launcher built at the default 48 KiB (after a plain call; or a variant's, built
    beside the kernel it is a variant of) shares its function's limit with the backend:
    after the general path's first larger launch, it takes such calls too."""
    a, b, c = arrays(100)
    mod.vecadd(a, b, c)  # the general path, which builds the launcher
    (launcher,) = mod.vecadd.launchers
    assert launcher.shared_limit == DEFAULT_DYNAMIC_SHARED_BYTES
    for _ in range(3):
        mod.vecadd[1, 128, 100 * 1024](a, b, c)  # first declined: the general path opts in
    assert [launch["smem"] for launch in driver.launches] == [100 * 1024] * 2
    assert len(fake.launches) == 2 and launcher.shared_limit == 100 * 1024


def test_a_launcher_declines_more_shared_memory_than_its_function_may_have() -> None:
    launches: list[Any] = []
    default = make_launcher(launches=launches)
    most = DEFAULT_DYNAMIC_SHARED_BYTES
    assert default.shared_limit == most
    assert default((1,), (1, 1, 1, 32, 1, 1, most)) is True
    assert default((1,), (1, 1, 1, 32, 1, 1, most + 1)) is False
    limit = pyoxide_native.SharedLimit(200 * 1024)
    opted = make_launcher(launches=launches, shared_limit=limit)
    assert opted((1,), (1, 1, 1, 32, 1, 1, 200 * 1024)) is True
    assert opted((1,), (1, 1, 1, 32, 1, 1, 200 * 1024 + 1)) is False
    limit.raise_to(210 * 1024)
    limit.raise_to(100 * 1024)  # an opt-in never shrinks
    assert limit.bytes == opted.shared_limit == 210 * 1024
    assert opted((1,), (1, 1, 1, 32, 1, 1, 210 * 1024)) is True
    assert len(launches) == 3


def test_a_configuration_is_checked_before_it_is_bound(mod) -> None:
    configured = mod.vecadd[2, 32]
    with pytest.raises(ValueError, match="7-tuple"):
        configured.bind(mod.vecadd, (1, 2, 3), _launch._configured_general)
    with pytest.raises(ValueError, match="7-tuple"):
        configured.bind(mod.vecadd, (1, 1, 1, 32, 1, 1, -1), _launch._configured_general)


def test_configured_and_generic_calls_use_the_native_launcher(driver, fake, mod) -> None:
    a, b, c = arrays(100)
    mod.vecadd(a, b, c)
    mod.vecadd[2, 64](a, b, c)
    x, y = FakeNdarray(10, "float64"), FakeNdarray(10, "float64")
    mod.scale(2.0, x, y)
    mod.scale(3.0, x, y)
    assert [launch["grid"] for launch in driver.launches] == [(2, 1, 1), (1, 1, 1)]
    assert len(fake.launches) == 2


# --- torch.compile ---------------------------------------------------------------------


def test_hooks_are_opaque_to_torch_compile_once_torch_is_imported(driver, mod) -> None:
    """A declined call runs the general path through `torch.compiler.disable` (made once
    per hook), so Dynamo breaks the graph at the call instead of tracing pyoxide's
    Python; without PyTorch the hooks are called as they are, and nothing imports it
    (here `import torch` would raise, whatever other tests imported before)."""
    a, b, c = arrays()
    with fake_cupy.replaced_module("torch", None):  # `import torch` raises meanwhile
        mod.vecadd(a, b, c)
        mod.vecadd[1, 32](a, b, c)
        assert sys.modules["torch"] is None
    with fake_torch.installed() as torch:
        mod.vecadd.launch(a, b, c)  # .launch is a Python method: not a hook
        assert torch.compiler.wrapped == []
        with pytest.raises(ArgumentTypeError):
            mod.vecadd(a, b, FakeNdarray(10, "float64"))
        with pytest.raises(ArgumentTypeError):
            mod.vecadd(a, b, FakeNdarray(10, "float64"))
        mod.saxpy[1, 32]
        mod.saxpy[1, 32](1.0, a, b, c)  # no launcher yet: the configured general path
        assert torch.compiler.wrapped == [
            _launch._general, _launch._configure, _launch._configured_general
        ]  # fmt: skip


# --- the current stream ------------------------------------------------------------------


@pytest.mark.parametrize("capsule", [True, False])
def test_launches_go_to_the_current_stream(capsule, fake, mod) -> None:
    fake.stream_capsule = capsule
    with native_installed(fake) as (cp, driver):
        assert (cupy_native.stream_capsule(cp) is not None) == capsule
        a, b, c = arrays()
        mod.vecadd(a, b, c)
        assert mod.vecadd.launchers[0].stream_from_capsule == capsule
        current = cp.cuda.get_current_stream()
        for ptr in (0, 0x7000, 2):  # the legacy default, a created stream, per-thread
            current.ptr = ptr
            mod.vecadd(a, b, c)
    assert [launch["stream"] for launch in driver.launches] == [0, 0x7000, 2]


def test_a_capsule_of_another_signature_is_not_called(fake) -> None:
    fake.stream_capsule = True
    with native_installed(fake) as (cp, _):
        other = fake_cupy.capsule(cp.cuda.stream._keep_alive, ctypes_name(b"int (void)"))
        cp.cuda.stream.__pyx_capi__["get_current_stream_ptr"] = other
        assert cupy_native.stream_capsule(cp) is None
        with pytest.raises(ValueError, match="intptr_t"):
            make_launcher(capsule=other)
        cp.cuda.stream.__pyx_capi__ = {"get_current_stream_ptr": "not a capsule"}
        assert cupy_native.stream_capsule(cp) is None
        del cp.cuda.stream.__pyx_capi__
        assert cupy_native.stream_capsule(cp) is None


def test_a_capsule_that_disagrees_with_python_is_not_used() -> None:
    capsule = pyoxide_native._test_stream_capsule()
    try:
        pyoxide_native._test_set_stream(0x5000)
        assert make_launcher(stream_ptr=0x5000, capsule=capsule).stream_from_capsule
        assert not make_launcher(stream_ptr=0, capsule=capsule).stream_from_capsule
        pyoxide_native._test_set_stream(None)  # raising when the launcher is built
        assert not make_launcher(stream_ptr=0, capsule=capsule).stream_from_capsule
    finally:
        pyoxide_native._test_set_stream(0)


def test_a_stream_function_that_raises_launches_nothing() -> None:
    capsule = pyoxide_native._test_stream_capsule()
    launches: list[Any] = []
    launcher = make_launcher(capsule=capsule, launches=launches)
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


# --- the launch record and the error hook --------------------------------------------------


def test_a_failed_launch_raises_what_the_error_hook_makes() -> None:
    record = pyoxide_native.LaunchRecord()
    record.swap("before")
    seen: list[Any] = []

    def on_error(kernel: str, previous: str | None, text: str) -> BaseException:
        seen.append((kernel, previous, text))
        return KeyError(f"{kernel} failed")

    launcher = make_launcher(result=1, on_error=on_error, record=record)
    with pytest.raises(KeyError, match="k failed"):
        launcher((1,), (1, 1, 1, 32, 1, 1, 0))
    assert seen == [("k", "before", "CUDA error 1")] and record.last == "k"


def test_a_failing_error_hook_raises_its_own_error() -> None:
    def on_error(*a: Any) -> BaseException:
        raise ZeroDivisionError("hook")

    with pytest.raises(ZeroDivisionError, match="hook"):
        make_launcher(result=1, on_error=on_error)((1,), (1, 1, 1, 32, 1, 1, 0))


# --- helpers -----------------------------------------------------------------------------

_keep: list[Any] = []  # ctypes objects the launchers built here point at


def ctypes_name(name: bytes) -> Any:
    import ctypes

    buf = ctypes.create_string_buffer(name)
    _keep.append(buf)
    return buf


def make_launcher(
    *,
    stream_ptr: int = 0,
    capsule: Any = None,
    result: int = 0,
    on_error: Any = None,
    record: Any = None,
    launches: list[Any] | None = None,
    shared_limit: Any = None,
) -> Any:
    """A Launcher for `fn k(x: i32)` on ctypes stand-ins for the driver."""
    import ctypes

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
    runtime = pyoxide_native.Runtime(
        bind_array_type=lambda cls: ("cupy", cls, {}, lambda: stream, capsule),
        default_array_type=FakeNdarray, scalar_types={}, host_ndarray=None,
        record=record or pyoxide_native.LaunchRecord(),
        on_error=on_error or (lambda *a: RuntimeError(a)),
        entry_points=(*(ctypes.cast(c, ctypes.c_void_p).value or 0 for c in callbacks), 0, 0),
    )  # fmt: skip
    plan = FastPlan("k", (FastParam("i32"),), None)
    return pyoxide_native.Launcher(plan, runtime, 1, 0, shared_limit=shared_limit)
