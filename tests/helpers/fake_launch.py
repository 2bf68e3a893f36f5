"""What the launch fast paths read on a fake CuPy: a `cupy.ndarray` look-alike, the
decoding of one cuLaunchKernel call that passes a packed parameter buffer, and ctypes
stand-ins for the driver entry points the native launcher calls."""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import fake_cupy
from .fake_cupy import FakeCuda
from .fakes import FakeCudaArray


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


class FakeNdarray(FakeCudaArray):
    """A `cupy.ndarray` look-alike: the attributes the fast paths read (`dtype`, `shape`,
    `strides` in bytes, `data.ptr`, `data.device_id`), plus the CUDA array interface the
    general path reads. Made as CuPy makes a view, ``ndarray(shape=, dtype=, memptr=x.data,
    strides=)``, it starts at `memptr`'s address on its device."""

    def __init__(
        self, shape: Any, dtype: Any = "float32", device: int = 0, *, memptr: Any = None,
        **kw: Any,
    ) -> None:  # fmt: skip
        dt = np.dtype(dtype)
        if memptr is not None:
            kw["ptr"], device = memptr.ptr, memptr.device_id
        super().__init__(shape, dt.str, device=device, **kw)
        self.dtype = dt
        self.itemsize = dt.itemsize
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape))
        given = kw.get("strides")
        self.strides = tuple(given) if given is not None else c_strides(self.shape, dt.itemsize)
        self.data = type("MemoryPointer", (), {"ptr": self.ptr, "device_id": device})()


def decode_launch(f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                  smem: int, stream: int, params: int, extra: int) -> dict[str, Any]:  # fmt: skip
    """One cuLaunchKernel call; `extra` is the void* array [1, buf, 2, &size, 0]."""
    words = (ctypes.c_void_p * 5).from_address(extra)
    assert [words[0], words[2], words[4]] == [1, 2, None]  # BUFFER_POINTER, BUFFER_SIZE, END
    size = ctypes.c_size_t.from_address(words[3]).value
    return {
        "f": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "smem": smem, "stream": stream,
        "params": params, "buffer": ctypes.string_at(words[1], size),
    }  # fmt: skip


_LAUNCH = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p,
)  # fmt: skip
_LAUNCH_EX = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)
_CTX = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))


class _LaunchAttribute(ctypes.Structure):
    """cuda.h's CUlaunchAttribute: an id, padded to 8 bytes, and a 64-byte value union."""

    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int * 16)]


class _LaunchConfig(ctypes.Structure):
    """cuda.h's CUlaunchConfig."""

    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_mem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)),
                ("num_attrs", ctypes.c_uint)]  # fmt: skip


def decode_launch_ex(config: int, f: int, params: int, extra: int) -> dict[str, Any]:
    """One cuLaunchKernelEx call, as :func:`decode_launch` decodes a cuLaunchKernel one,
    with its attributes as {id: first int of the value}."""
    c = _LaunchConfig.from_address(config)
    launch = decode_launch(f, *c.grid, *c.block, c.shared_mem, c.stream or 0, params, extra)
    launch["attributes"] = {c.attrs[i].id: c.attrs[i].value[0] for i in range(c.num_attrs)}
    return launch


_ERROR_TEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p))
_ERROR_NAMES = {1: b"CUDA_ERROR_INVALID_VALUE", 700: b"CUDA_ERROR_ILLEGAL_ADDRESS"}
_CONTEXT_BASE = 0x1000  # the fake context of device d is 0x1000 + d


class FakeDriver:
    """The driver entry points, recording launches; `result` is what launches return.
    `has_launch_ex`: whether it has cuLaunchKernelEx (a driver before CUDA 12 has not)."""

    def __init__(self, fake: FakeCuda, has_launch_ex: bool = True) -> None:
        self.launches: list[dict[str, Any]] = []
        self.result = 0
        self.context: int | None = None  # None: the fake's current device's context

        def launch(*a: Any) -> int:
            self.launches.append({**decode_launch(*(0 if v is None else v for v in a)),
                                  "attributes": {}})  # fmt: skip
            return self.result

        def launch_ex(*a: Any) -> int:
            self.launches.append(decode_launch_ex(*(0 if v is None else v for v in a)))
            return self.result

        def ctx(out: Any) -> int:
            out[0] = self.context if self.context is not None else _CONTEXT_BASE + fake.current
            return 0

        def error_name(code: int, out: Any) -> int:
            if code not in _ERROR_NAMES:
                return 1
            out[0] = _ERROR_NAMES[code]
            return 0

        # Kept alive here: the launcher holds only their addresses. (cuLaunchKernel,
        # cuCtxGetCurrent, cuGetErrorName, cuGetErrorString: none, cuLaunchKernelEx.)
        self._callbacks = (_LAUNCH(launch), _CTX(ctx), _ERROR_TEXT(error_name),
                           _LAUNCH_EX(launch_ex))  # fmt: skip
        address = [ctypes.cast(c, ctypes.c_void_p).value or 0 for c in self._callbacks]
        self.entry_points = (*address[:3], 0, address[3] if has_launch_ex else 0)


@contextlib.contextmanager
def native_installed(
    fake: FakeCuda, backend_class: Any = None, has_launch_ex: bool = True
) -> Iterator[tuple[Any, FakeDriver]]:
    """Install `fake` as ``cupy`` (with FakeNdarray as its ndarray) and a CuPy backend
    whose compiled launchers call a FakeDriver's entry points; (the fake module, the
    driver) while the context lasts."""
    driver = FakeDriver(fake, has_launch_ex)
    with fake_cupy.installed(
        fake, entry_points=driver.entry_points, backend_class=backend_class
    ) as cp:
        cp.ndarray = FakeNdarray  # type: ignore[attr-defined]
        cp.empty = lambda n, dtype: FakeNdarray(n, dtype, device=fake.current)  # type: ignore[attr-defined]
        yield cp, driver


def warm_up(kernel: Any, *args: Any) -> None:
    """One plain call of `kernel`: the general path launches it and builds the kernel's
    compiled launcher."""
    import pyoxide._launch._native as pyoxide_native

    kernel(*args)
    assert [type(launcher) for launcher in kernel.launchers] == [pyoxide_native.Launcher]


def assert_same_launch(
    fast: dict[str, Any], slow: dict[str, Any], record_aligns: Sequence[int] = ()
) -> None:
    """The compiled launch `fast` (the fake driver's record) is the general launch `slow`
    (the fake CuPy's): the same grid, block and parameter bytes (`record_aligns`: as
    general_bytes takes them)."""
    assert (fast["grid"], fast["block"]) == (slow["grid"], slow["block"])
    assert fast["buffer"] == general_bytes(slow["args"], record_aligns)


def general_bytes(words: tuple[Any, ...], record_aligns: Sequence[int] = ()) -> bytes:
    """The PTX parameter buffer of the general path's ABI words (NumPy scalars), each at
    its natural alignment; a record by value (a structured scalar, whose bytes say
    nothing of its type) at the next of `record_aligns`, the alignment of its
    `.param .align A .b8 p[N]`, as the driver places the words CuPy passes."""
    buf = bytearray()
    aligns = iter(record_aligns)
    for w in words:
        b = np.asarray(w).tobytes()
        align = next(aligns) if np.asarray(w).dtype.kind == "V" else len(b)
        buf += bytes(-len(buf) % align) + b
    assert next(aligns, None) is None, "an alignment for each record"
    return bytes(buf)


def record_aligns(kernel: Any) -> list[int]:
    """The alignments of `kernel`'s records by value, in order (for general_bytes)."""
    return [p.record.align for p in kernel.spec.passed_params if p.kind == "value"]


def fake_native() -> Iterator[tuple[FakeCuda, FakeDriver]]:
    """The fake CUDA (two devices) installed with the native launcher switched on; (the
    fake, its driver). Test modules make it their `native` fixture:
    ``native = pytest.fixture(fake_native, name="native")``."""
    fake = FakeCuda(device_count=2)
    with native_installed(fake) as (_, driver):
        yield fake, driver
