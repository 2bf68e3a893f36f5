"""The compiled launch fast path for CuPy arrays (``pyoxide._native``).

``pyoxide._native.Launcher`` (crates/pyoxide-native) takes the plain calls the argument
rules of :mod:`pyoxide._args` accept (exact CuPy arrays, Python scalars), packs the
parameter buffer the general path would and makes one ``cuLaunchKernel`` with
``CU_LAUNCH_PARAM_BUFFER_POINTER``; it returns ``False`` for anything it is not sure
about. It is built once per kernel and device; when the CUDA driver library cannot be
loaded, :func:`build` returns None and every call takes the general path.

The module is imported here, on the first fast-path build, never at ``import pyoxide``.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn

from ..._arrays import numpy_dtype
from ..._manifest import KernelSpec
from ..._policy import plain_rule, tile_rule

FastLauncher = Callable[[Sequence[Any], Any], bool]

# Where the launcher finds the driver. None: cuLaunchKernel, cuCtxGetCurrent,
# cuGetErrorName and cuGetErrorString from libcuda.so.1. A tuple: their addresses (0 for
# the last two), so tests on a fake CuPy can stand in for the driver. False: no native
# launcher at all (the fake CuPy sets this, so its function handles never reach a driver).
entry_points: tuple[int, int, int, int] | Literal[False] | None = None

# The C function behind CuPy's launches on the current stream: Cython exports a module's
# cdef functions in its `__pyx_capi__` dict, each a capsule named by its C signature
# (without the exception clause, which the launcher allows for). `cupy.cuda.stream`
# declares it in its .pxd; `cupy_backends.cuda.stream`, which holds the per-thread
# current stream it reads, declares one too.
_STREAM_FUNCTION = "get_current_stream_ptr"
_STREAM_SIGNATURE = b"intptr_t (void)"


def build(
    backend: Any,
    spec: KernelSpec,
    function: Any,
    device: int,
    grid_param: int | None,
    default_block: int,
) -> FastLauncher | None:
    """A native launcher for `spec` on `device`, or None when unavailable or when the
    kernel's shape of call is not one the fast path handles (raw pointers)."""
    if entry_points is False:
        return None
    cp = backend._cp
    ndarray = getattr(cp, "ndarray", None)
    if ndarray is None or not hasattr(function, "ptr"):
        return None
    if any(p.takes_address for p in spec.params):
        return None  # raw pointers (unsafe kernels): the general path only
    if any(isinstance(p.length, int) and p.length >= 2**63 for p in spec.params):
        return None  # a length no array has (the general path explains): not an i64
    if any(p.record is not None for p in spec.params):
        return None  # structs, enums, [T; N] (pyoxide/_records.py): the general path only
    try:
        # import_module (not `from .. import`) consults sys.modules first, so a test
        # can make the module unimportable.
        _native = importlib.import_module("pyoxide._native")
    except ImportError:
        return None

    params: list[tuple[Any, ...]] = []
    shared: dict[str, int] = {}  # dimension name -> id, for the shape contract

    def code(d: str | int | None) -> int:  # -1 any, n >= 0 fixed, -2 - id a shared name
        return (
            -1 if d is None else d if isinstance(d, int) else -2 - shared.setdefault(d, len(shared))
        )

    for p in spec.params:
        if p.is_array:
            dtype = numpy_dtype(p.type)  # the general path's table
            if dtype is None:
                return None  # bfloat16 without ml_dtypes: CuPy has no such arrays
            dims = None if p.array is None else tuple(code(d) for d in p.array.dims)
            # A slice's length contract (x[n]) is coded as a dimension; -1: none.
            params.append((p.type, dtype, dtype.itemsize, p.mutable, dims, code(p.length)))
        else:
            params.append((p.type, None, 0, False, None, -1))
    name = spec.entry

    def failed(code: int, text: str, previous: str | None) -> NoReturn:
        raise backend._error(name, previous, text) from None

    try:
        # A plain call launches ceil(n / per_block) blocks (the launch policy's rule).
        rule = plain_rule(spec)
        launcher: FastLauncher = _native.Launcher(
            int(function.ptr), device, params, ndarray, cp.cuda.get_current_stream,
            default_block, grid_param, backend, name, failed, entry_points,
            stream_capsule(cp), rule[2] if rule else None, tile_rule(spec),
        )  # fmt: skip
    except (OSError, RuntimeError, TypeError, ValueError):
        # No driver library, no current context, or a description this build of the
        # module does not take: the general path does the job.
        return None
    return launcher


def stream_capsule(cp: Any) -> Any | None:
    """The capsule of CuPy's ``intptr_t get_current_stream_ptr()``, or None when this
    CuPy exports none of that exact signature (the launcher then calls
    ``cupy.cuda.get_current_stream()``; it also does when the two disagree)."""
    modules = [getattr(cp.cuda, "stream", None)]
    if hasattr(cp, "__path__"):  # the CuPy package itself, not a stand-in module
        with contextlib.suppress(ImportError):
            modules.append(importlib.import_module("cupy_backends.cuda.stream"))
    for module in modules:
        capi = getattr(module, "__pyx_capi__", None)
        capsule = capi.get(_STREAM_FUNCTION) if isinstance(capi, dict) else None
        if capsule is not None and _is_capsule(capsule, _STREAM_SIGNATURE):
            return capsule
    return None


def _is_capsule(obj: Any, name: bytes) -> bool:
    """Whether `obj` is a capsule named `name` (PyCapsule_IsValid never raises)."""
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.argtypes = (ctypes.py_object, ctypes.c_char_p)
    is_valid.restype = ctypes.c_int
    return bool(is_valid(obj, name))
