"""Every bad argument is refused with the documented error, naming kernel, parameter,
expectation and fix, BEFORE anything is loaded or launched.

The arrays are fakes speaking ``__cuda_array_interface__`` v3; the backend is a
recording fake, so "nothing launched" is checked, not assumed.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.fakes import RecordingBackend, cuda, fresh_ptr
from helpers.fixtures import write_manifest

import pyoxide
from pyoxide import backends
from pyoxide.errors import ArgumentError, ArgumentTypeError, ArgumentValueError

T, V = ArgumentTypeError, ArgumentValueError


@pytest.fixture(scope="module")
def mod(tmp_path_factory: pytest.TempPathFactory) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path_factory.mktemp("fixture")))


def f32(n: Any = 16, **kw: Any) -> Any:
    return cuda(n, "<f4", **kw)


def f64(n: Any = 16, **kw: Any) -> Any:
    return cuda(n, "<f8", **kw)


def u32(n: Any = 16, **kw: Any) -> Any:
    return cuda(n, "<u4", **kw)


def saxpy(a: Any = 2.0, x: Any = None, y: Any = None, out: Any = None) -> Callable[[Any], None]:
    x, y, out = (f32() if v is None else v for v in (x, y, out))
    return lambda m: m.saxpy(a, x, y, out)


MIX_OK = {"a": -1, "b": 2, "c": True, "d": 3, "e": 0.5, "f": 4, "g": 5}


def mix(**bad: Any) -> Callable[[Any], None]:
    args = {**MIX_OK, **bad}
    return lambda m: m.mix(*args.values(), f64())


class _Raises:
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")


class _NotADict:
    __cuda_array_interface__ = [1, 2, 3]


class _ROCm:
    def __dlpack__(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("must not be consumed")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (10, 0)


def _shared(n: int) -> tuple[Any, Any]:
    a = f32(n)
    return a, cuda(n, "<f4", ptr=a.ptr + 8)  # overlaps a from its third element


_x, _y_overlap = _shared(64)
_same = f32(32)

# (id, call, error class, fragments the message must hold)
CASES: list[tuple[str, Callable[[Any], None], type[ArgumentError], list[str]]] = [
    # arity and calling convention
    ("no-args", lambda m: m.saxpy(), T, ["saxpy()", "4 argument(s)", "got 0"]),
    ("too-few", lambda m: m.saxpy(2.0, f32(), f32()), T, ["4 argument(s)", "got 3"]),
    ("too-many", lambda m: m.saxpy(2.0, f32(), f32(), f32(), f32()), T, ["got 5"]),
    ("keyword", lambda m: m.saxpy(2.0, f32(), f32(), out=f32()), T, ["'out'", "positional"]),
    ("generic-arity", lambda m: m.scale(2.0, f64()), T, ["3 argument(s)"]),
    # dtype
    ("x-float64", saxpy(x=f64()), T, ["'x'", "float32", "float64", "astype"]),
    ("out-int32", saxpy(out=cuda(16, "<i4")), T, ["'out'", "int32"]),
    ("x-float16", saxpy(x=cuda(16, "<f2")), T, ["float16"]),
    ("x-big-endian", saxpy(x=cuda(16, ">f4")), T, ["big-endian"]),
    ("x-bool-array", saxpy(x=cuda(16, "|b1")), T, ["bool"]),
    ("x-complex", saxpy(x=cuda(16, "<c8")), T, ["complex64"]),
    ("iota-float", lambda m: m.iota(f32()), T, ["iota()", "'out'", "uint32"]),
    # shape and layout
    ("x-2d", saxpy(x=f32((4, 4))), V, ["'x'", "1-D", "2-D"]),
    ("x-0d", saxpy(x=f32(())), V, ["1-D", "0-D"]),
    ("x-strided", saxpy(x=f32(16, strides=(8,))), V, ["contiguous", "ascontiguousarray"]),
    ("out-strided-negative", saxpy(out=f32(16, strides=(-4,))), V, ["contiguous"]),
    ("x-negative-length", saxpy(x=f32((-1,))), V, ["negative length"]),
    ("x-float-shape", saxpy(x=f32((4.0,))), T, ["shape"]),
    # writability
    ("out-readonly", saxpy(out=f32(readonly=True)), V, ["'out'", "read-only", "copy()"]),
    ("mut-slice-readonly", lambda m: m.accumulate(f32(), f32(readonly=True)), V, ["'y'"]),
    (
        "mut-pointer-readonly",
        lambda m: m.count_positive[1, 32](f32(), u32(1, readonly=True)),
        V,
        ["'counter'", "read-only"],
    ),
    # memory and size
    ("null-pointer", saxpy(x=f32(5, ptr=0)), V, ["null pointer"]),
    ("abi-overflow", saxpy(x=f32(2**62)), V, ["2**63-1 bytes"]),
    # not arrays at all
    ("x-object", saxpy(x=object()), T, ["'x'", "object"]),
    ("x-none-value", lambda m: m.saxpy(2.0, None, f32(), f32()), T, ["got None"]),
    ("x-str", saxpy(x="abc"), T, ["str 'abc'"]),
    ("x-list", saxpy(x=[1.0, 2.0]), T, ["list", "cupy.asarray"]),
    ("x-int", saxpy(x=5), T, ["int 5"]),
    ("out-float", saxpy(out=1.0), T, ["'out'", "float 1.0"]),
    ("cai-raises", saxpy(x=_Raises()), T, ["requires grad", "detach"]),
    ("cai-not-dict", saxpy(x=_NotADict()), T, ["not a dict"]),
    ("cai-masked", saxpy(x=f32(mask=object())), T, ["masked"]),
    ("dlpack-rocm", saxpy(x=_ROCm()), T, ["ROCm"]),
    # float scalars (saxpy.a is f32)
    ("a-str", saxpy(a="2.0"), T, ["'a'", "float (f32)", "str '2.0'"]),
    ("a-None", saxpy(a=None), T, ["'a'", "got None"]),
    ("a-bool", saxpy(a=True), T, ["bool True", "float(flag)"]),
    ("a-complex", saxpy(a=1j), T, ["complex"]),
    ("a-f32-overflow", saxpy(a=1e39), V, ["f32's range"]),
    ("a-int-inexact", saxpy(a=2**24 + 1), V, ["exactly representable", "16777217"]),
    ("a-0d-complex-array", saxpy(a=np.array(2j)), T, [".item()"]),
    ("a-array", saxpy(a=f32()), T, ["'a'"]),
    # integer scalars (mix: a i8, b u16, c bool, d i64, e f64, f u32, g usize)
    ("i8-too-big", mix(a=128), V, ["mix()", "'a'", "[-128, 127]", "128"]),
    ("i8-too-small", mix(a=-129), V, ["-129"]),
    ("u16-negative", mix(b=-1), V, ["'b'", "[0, 65535]"]),
    ("u32-too-big", mix(f=2**32), V, ["'f'", "4294967296"]),
    ("usize-negative", mix(g=-1), V, ["'g'", "usize"]),
    ("i64-too-big", mix(d=2**63), V, ["'d'", "i64"]),
    ("i8-float", mix(a=1.0), T, ["float 1.0", "int(1.0)"]),
    ("i8-nan", mix(a=math.nan), V, ["NaN"]),
    ("i64-inf", mix(d=math.inf), V, ["infinity"]),
    ("i8-bool", mix(a=True), T, ["bool True", "int(flag)"]),
    ("i8-np-float", mix(a=np.float32(3)), T, ["'a'"]),
    ("u32-str", mix(f="7"), T, ["str '7'"]),
    ("u32-None", mix(f=None), T, ["None"]),
    ("bool-int", mix(c=1), T, ["'c'", "True or False"]),
    ("bool-str", mix(c="yes"), T, ["'c'"]),
    ("f64-bool", mix(e=False), T, ["'e'", "bool False"]),
    ("f64-int-inexact", mix(e=2**53 + 1), V, ["'e'", "exactly"]),
    ("f64-int-huge", mix(e=10**400), V, ["'e'", "exactly"]),
    # devices
    ("x-other-device", saxpy(x=f32(device=1)), V, ["'x'", "device 1"]),
    ("y-other-device", saxpy(y=f32(device=1)), V, ["'y'", "device 0, like 'x'"]),
    (
        "all-other-device",
        saxpy(x=f32(device=1), y=f32(device=1), out=f32(device=1)),
        V,
        ["current device (0)", "cupy.cuda.Device(1)"],
    ),
    ("torch-style-device", saxpy(y=f32(device=2, device_style="torch")), V, ["'y'", "device 2"]),
    (
        "bare-cai-elsewhere",
        saxpy(out=f32(device=None, device_style="none", ptr=0xDEAD0000)),
        V,
        ["'out'", "device 3"],
    ),
    (
        "bare-cai-host-memory",
        saxpy(out=f32(device=None, device_style="none", ptr=0xBEEF0000)),
        V,
        ["not device memory"],
    ),
    # backends
    ("gpu-and-numpy", saxpy(y=np.zeros(16, np.float32)), T, ["'y'", "NumPy array", "host"]),
    ("numpy-and-gpu", saxpy(x=np.zeros(16, np.float32)), T, ["'x'", "host memory"]),
    # aliasing
    ("out-is-x", lambda m: m.scale_f32(2.0, _same, _same), V, ["'out'", "overlapping 'x'"]),
    ("out-overlaps-x", lambda m: m.scale_f32(2.0, _x, _y_overlap), V, ["overlapping"]),
    # launch configuration
    (
        "no-output-no-grid",
        lambda m: m.count_positive(f32(), u32(1)),
        V,
        ["count_positive()", "explicit launch configuration", "[grid, block]"],
    ),
    ("block-zero", lambda m: m.vecadd[1, 0](f32(), f32(), f32()), V, ["'block'"]),
    ("block-too-big", lambda m: m.vecadd[1, 2048](f32(), f32(), f32()), V, ["'block'"]),
    ("block-over-launch-bounds", lambda m: m.iota[1, 256](u32()), V, ["at most 128 threads"]),
    ("grid-4d", lambda m: m.vecadd.launch(f32(), f32(), f32(), grid=(1, 1, 1, 1)), V, ["'grid'"]),
    ("grid-str", lambda m: m.vecadd.launch(f32(), f32(), f32(), grid="10"), V, ["'grid'"]),
    ("grid-negative", lambda m: m.vecadd[-1, 256](f32(), f32(), f32()), V, ["'grid'"]),
    ("grid-zero", lambda m: m.vecadd[0, 256](f32(), f32(), f32()), V, ["'grid'"]),
    ("grid-bool", lambda m: m.vecadd[True, 256](f32(), f32(), f32()), V, ["'grid'"]),
    (
        "shared-mem-negative",
        lambda m: m.vecadd.launch(f32(), f32(), f32(), shared_mem=-1),
        V,
        ["'shared_mem'"],
    ),
    ("config-one-item", lambda m: m.vecadd[5](f32(), f32(), f32()), T, ["kernel[grid, block]"]),
    (
        "shared-mem-negative-empty-output",  # refused even when nothing would launch
        lambda m: m.vecadd.launch(f32(0), f32(0), f32(0), shared_mem=-1),
        V,
        ["'shared_mem'"],
    ),
    (
        "shared-mem-over-the-block-limit",
        lambda m: m.vecadd.launch(f32(), f32(), f32(), shared_mem=227 * 1024 + 1),
        V,
        ["'shared_mem'", "from 0 to 232448"],
    ),
    ("stream-str", lambda m: m.vecadd.launch(f32(), f32(), f32(), stream="foo"), T, ["'stream'"]),
    (
        "launch-keyword-misspelt",
        lambda m: m.vecadd.launch(f32(), f32(), f32(), grdi=4),
        T,
        ["'grdi'", "grid, block, shared_mem, stream", "did you mean grid="],
    ),
    # alignment and address range (a GPU faults on a misaligned load and loses the context)
    ("x-misaligned", saxpy(x=f32(16, ptr=fresh_ptr() + 2)), V, ["'x'", "aligned", "x.copy()"]),
    ("x-ends-past-2**64", saxpy(x=f32(16, ptr=2**64 - 32)), V, ["'x'", "below 2**64"]),
    (
        "numpy-masked",
        lambda m: m.saxpy(
            2.0,
            np.ma.masked_array(np.zeros(16, np.float32), mask=[1] * 16),
            np.zeros(16, np.float32),
            np.zeros(16, np.float32),
        ),
        T,
        ["'x'", "masked", "filled"],
    ),
    # generic dispatch
    (
        "generic-int-arrays",
        lambda m: m.scale(2, cuda(8, "<i4"), cuda(8, "<i4")),
        T,
        ["scale()", "scale_f32 (T=f32)", "scale_f64 (T=f64)", "int32"],
    ),
    ("generic-mixed-dtypes", lambda m: m.scale(2.0, f32(), f64()), T, ["x: float32, out: float64"]),
    ("generic-not-array", lambda m: m.scale(2.0, None, f64()), T, ["'x'", "None"]),
    ("generic-bad-scalar", lambda m: m.scale("2", f64(), f64()), T, ["scale_f64()", "'factor'"]),
]


@pytest.fixture
def gpu() -> RecordingBackend:
    rb = RecordingBackend(pointer_devices={0xDEAD0000: 3, 0xBEEF0000: None})
    with backends.override("cupy", rb), backends.override("emu", RecordingBackend("emu", "host")):
        yield rb


def test_there_are_at_least_forty_distinct_bad_inputs() -> None:
    assert len({c[0] for c in CASES}) == len(CASES) >= 40


@pytest.mark.parametrize(
    ("call", "error", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_refused_before_launch(
    mod: pyoxide.Module, gpu: RecordingBackend, call: Any, error: Any, fragments: list[str]
) -> None:
    with pytest.raises(error) as info:
        call(mod)
    e = info.value
    text = str(e)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    assert "Fix:" in text and e.fix and e.expected and e.got
    assert e.kernel in text
    if e.param is not None:
        assert f"'{e.param}'" in text
    # the documented Python base class, so `except TypeError/ValueError` works
    assert isinstance(e, TypeError if error is ArgumentTypeError else ValueError)
    assert isinstance(e, pyoxide.PyoxideError)
    assert gpu.launches == [] and gpu.loads == []


def test_the_good_calls_next_to_the_bad_ones_do_launch(
    mod: pyoxide.Module, gpu: RecordingBackend
) -> None:
    saxpy()(mod)
    mix()(mod)
    mod.scale(2, f64(), f64())
    mod.scale_f32(np.float32(2), f32(), f32())
    mod.count_positive[1, 32](f32(), u32(1))
    mod.vecadd.launch(f32(), f32(), f32(), grid=(1,), block=(16, 1, 1), shared_mem=0)
    mod.saxpy(2.0, f32(), f32(), f32(device=None, device_style="none", ptr=0xCAFE0000))
    assert [launch.kernel for launch in gpu.launches] == [
        "saxpy", "mix", "scale_f64", "scale_f32", "count_positive", "vecadd", "saxpy",
    ]  # fmt: skip


def test_backend_forced_by_knob_refuses_the_other_kind(
    mod: pyoxide.Module, gpu: RecordingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYOXIDE_BACKEND", "emu")
    with pytest.raises(ArgumentTypeError, match="PYOXIDE_BACKEND=emu"):
        saxpy()(mod)
    monkeypatch.setenv("PYOXIDE_BACKEND", "cupy")
    host = np.zeros(16, np.float32)
    with pytest.raises(ArgumentTypeError, match="PYOXIDE_BACKEND=cupy"):
        mod.saxpy(2.0, host, host.copy(), host.copy())
    monkeypatch.setenv("PYOXIDE_BACKEND", "metal")
    with pytest.raises(pyoxide.ConfigError, match="auto, cupy or emu"):
        saxpy()(mod)
    assert gpu.launches == []


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda m: m.vecadd[0, 256](f32(), f32(), f32()), V, "'grid'"),
        (lambda m: m.vecadd.launch(f32(0), f32(0), f32(0), shared_mem=-1), V, "'shared_mem'"),
        (lambda m: m.scale_f32(2.0, _same, _same), V, "overlapping"),
        (lambda m: m.vecadd[1, 2048](f32(), f32(), f32()), V, "'block'"),
    ],
)
def test_argument_checks_come_before_the_backend(
    mod: pyoxide.Module, monkeypatch: pytest.MonkeyPatch, call: Any, error: Any, fragment: str
) -> None:
    """Without CuPy, a bad call with GPU arrays reports what is wrong with it, not that
    CuPy cannot be imported (it would once the call is fixed)."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # unimportable
    monkeypatch.setattr(backends, "_instances", {})
    with pytest.raises(error, match=fragment):
        call(mod)
    monkeypatch.setenv("PYOXIDE_BACKEND", "cupy")
    host = np.zeros(16, np.float32)
    with pytest.raises(ArgumentTypeError, match="PYOXIDE_BACKEND=cupy"):
        mod.vecadd(host, host.copy(), host.copy())
    monkeypatch.delenv("PYOXIDE_BACKEND")
    with pytest.raises(pyoxide.BackendUnavailableError, match="pyoxide\\[cuda\\]"):
        mod.vecadd(f32(), f32(), f32())  # a good call gets as far as the backend
