"""The CuPy backend's compiled launchers (``pyoxide._launch._native``): their runtime, and the
bindings of the array libraries they read.

A ``pyoxide._launch._native.Launcher`` is built per kernel and device from the kernel's fast plan
(pyoxide/_launch/fastplan.py) and this backend's ``Runtime``: the driver's entry points, the
backend's launch record and error hook, the NumPy scalar types, and
:func:`bind_array_type`, which the runtime asks about each array type it meets: CuPy's
``ndarray`` (read through its attributes, launched on CuPy's current stream) and, once
the caller has imported PyTorch, ``torch.Tensor`` (launched on PyTorch's current stream
on the tensor's device, read as Triton and Inductor read it). Nothing here imports
PyTorch.

The module is imported on the first fast-path build, never at ``import pyoxide``.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import importlib
import sys
from collections.abc import Callable
from typing import Any

from ..._launch._native import Launcher, LaunchRecord, Runtime, SharedLimit
from ..._launch.arrays import dtype_spelling, numpy_dtype
from ..._launch.fastplan import FastPlan, fast_scalar_types
from ..._manifest import abi as _abi
from ..._manifest import knobs as _knobs

# The C function behind CuPy's launches on the current stream: Cython exports a module's
# cdef functions in its `__pyx_capi__` dict, each a capsule named by its C signature
# (without the exception clause, which the launcher allows for). `cupy.cuda.stream`
# declares it in its .pxd; `cupy_backends.cuda.stream`, which holds the per-thread
# current stream it reads, declares one too.
_STREAM_FUNCTION = "get_current_stream_ptr"
_STREAM_SIGNATURE = b"intptr_t (void)"


def runtime(
    cp: Any,
    record: LaunchRecord,
    on_error: Callable[[str, str | None, str], BaseException],
    entry_points: tuple[int, ...] | None,
) -> Runtime | None:
    """The runtime of the backend's launchers, or None when the CUDA driver library
    cannot be loaded (every call then takes the general path)."""
    import numpy

    def bind(cls: type) -> tuple[Any, ...] | None:
        return bind_array_type(cp, cls)

    try:
        return Runtime(
            bind_array_type=bind, default_array_type=cp.ndarray,
            scalar_types=fast_scalar_types(), host_ndarray=numpy.ndarray, record=record,
            on_error=on_error, entry_points=entry_points,
        )  # fmt: skip
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def launcher(
    runtime: Runtime,
    plan: FastPlan,
    function: Any,
    device: int,
    multiprocessors: int,
    active_clusters: int = 0,
    shared_limit: SharedLimit | None = None,
) -> Launcher | None:
    """A launcher for the kernel of ``plan`` on ``device``, or None when it cannot be
    built (no current context, a plan this build of the module does not take).
    ``active_clusters``: how many of a persistent cluster kernel's clusters run at once
    (0: unknown, then the SM count alone sizes its grid); ``shared_limit``: the dynamic
    shared memory ``function`` has been opted in to, as it grows (None: 48 KiB).
    A `#[dependent_launch]` kernel's launcher asks for programmatic stream serialisation
    unless PYOXIDE_DEPENDENT_LAUNCH is 0 (a launch knob: read once per knob generation,
    as the launchers are built)."""
    if plan.dependent and not _knobs.dependent_launch():
        plan = dataclasses.replace(plan, dependent=False)
    try:
        return Launcher(plan, runtime, int(function.ptr), device, multiprocessors,
                        active_clusters, shared_limit)  # fmt: skip
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None


def bind_array_type(cp: Any, cls: type) -> tuple[Any, ...] | None:
    """How the compiled launchers read arrays of exactly ``cls``: (kind, cls, {Rust
    element type: dtype}, current stream, stream capsule), or None for a type they do not
    read (the general path takes such calls)."""
    if cls is cp.ndarray:
        dtypes = {t: numpy_dtype(t) for t in _abi.SCALARS}
        dtypes = {t: d for t, d in dtypes.items() if d is not None}
        return "cupy", cls, dtypes, cp.cuda.get_current_stream, stream_capsule(cp)
    torch = sys.modules.get("torch")
    if torch is not None and cls is getattr(torch, "Tensor", None):
        dtypes, stream = torch_binding(torch)
        return "torch", cls, dtypes, stream, None
    return None


def torch_binding(torch: Any) -> tuple[dict[str, Any], Any]:
    """The ``torch.dtype`` of each Rust element type PyTorch has, and the function giving
    a device's current stream, the one pyoxide/_launch/devices.py's ``torch_stream`` calls."""
    dtypes = {}
    for t in _abi.SCALARS:
        dtype = getattr(torch, dtype_spelling(t, "torch").split(".", 1)[1], None)
        if dtype is not None:
            dtypes[t] = dtype
    return dtypes, torch._C._cuda_getCurrentRawStream


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
