"""The fast launch path for CuPy arrays.

A typed launch checks every argument against the manifest, which costs tens of
microseconds in the general path (array protocols, error bookkeeping). Most calls in a
hot loop repeat one shape of call: plain ``cupy.ndarray`` arguments of the right dtype
on the current device, Python scalars, no explicit stream. For that shape, this module
generates (once per kernel and device) a function that checks exactly the same rules
with a handful of attribute loads, packs the arguments into one parameter buffer with
``struct.pack_into`` and calls ``cuLaunchKernel`` with ``CU_LAUNCH_PARAM_BUFFER_POINTER``.

Any argument it is not sure about makes it return ``False``, and the caller takes the
general path, which then accepts the call or raises the documented error: the fast path
never raises an argument error of its own and never launches what the general path
would refuse.

The compiled launcher (:mod:`.cupy_native`, crates/pyoxide-native) implements the same
contract and is preferred when it loads; this one is the fallback. A change to the rules
here must be made there too (tests/test_native_launcher.py mirrors this module's tests).
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .._arrays import RUST_TYPESTR
from .._manifest import INT_RANGES, SLICE_KINDS, KernelSpec
from .._policy import plain_rule

# cuLaunchKernel's `extra` keys (cuda.h).
_CU_LAUNCH_PARAM_END = 0
_CU_LAUNCH_PARAM_BUFFER_POINTER = 1
_CU_LAUNCH_PARAM_BUFFER_SIZE = 2

# struct codes and sizes of the scalar ABI types (bool travels as one byte).
_STRUCT = {
    "i8": "b", "i16": "h", "i32": "i", "i64": "q", "isize": "q",
    "u8": "B", "u16": "H", "u32": "I", "u64": "Q", "usize": "Q",
    "f32": "f", "f64": "d", "bool": "B",
}  # fmt: skip
_F32_MAX = 3.4028234663852886e38
_MAX_GRID_X = 2**31 - 1

FastLauncher = Callable[[Sequence[Any], Any], bool]


class _Layout:
    """The PTX parameter buffer: each word at its natural alignment, in order."""

    def __init__(self) -> None:
        self.fmt = "="
        self.offset = 0

    def add(self, code: str) -> None:
        size = struct.calcsize("=" + code)
        pad = -self.offset % size
        self.fmt += "x" * pad + code
        self.offset += pad + size


def build(
    backend: Any, spec: KernelSpec, function: Any, device: int, default_block: int
) -> FastLauncher | None:
    """A fast launcher for `spec` on `device`, or None when the kernel's shape of call is
    not one this path handles (raw pointers) or CuPy lacks the needed entry points."""
    cp = backend._cp
    ndarray = getattr(cp, "ndarray", None)
    launch_kernel = getattr(getattr(cp.cuda, "driver", None), "launchKernel", None)
    if ndarray is None or launch_kernel is None or not hasattr(function, "ptr"):
        return None
    if any(p.kind not in SLICE_KINDS and p.is_array for p in spec.params):
        return None  # raw pointers (unsafe kernels): the general path only

    import numpy as np

    env: dict[str, Any] = {
        "ndarray": ndarray,
        "DEV": device,
        "F": int(function.ptr),
        "getDevice": cp.cuda.runtime.getDevice,
        "current_stream": cp.cuda.get_current_stream,
        "launch": launch_kernel,
        "LOCAL": threading.local(),
        "BACKEND": backend,
        "NAME": spec.entry,
        "DriverError": cp.cuda.driver.CUDADriverError,
        "RuntimeError_": cp.cuda.runtime.CUDARuntimeError,
    }
    layout = _Layout()
    body: list[str] = []
    packed: list[str] = []
    slices: list[tuple[int, bool, int]] = []  # (index, mutable, itemsize)
    for i, p in enumerate(spec.params):
        a = f"a{i}"
        if p.is_array:
            dtype = np.dtype(RUST_TYPESTR[p.type])  # the general path's table
            env[f"D{i}"] = dtype
            body += [
                f"    if type({a}) is not ndarray or {a}.dtype is not D{i} or {a}.ndim != 1"
                f" or not {a}._c_contiguous: return False",
                f"    m{i} = {a}.data",
                f"    if m{i}.device_id != DEV: return False",
                f"    p{i} = m{i}.ptr",
                f"    n{i} = {a}.size",
            ]
            layout.add("Q")
            layout.add("Q")
            packed += [f"p{i}", f"n{i}"]
            slices.append((i, p.mutable, dtype.itemsize))
        elif p.type in ("f32", "f64"):
            bound = "-F32_MAX <= {a} <= F32_MAX" if p.type == "f32" else "{a} == {a}"
            # NaN and out-of-range values go to the general path, which decides.
            body.append(f"    if type({a}) is not float or not ({bound.format(a=a)}): return False")
            env["F32_MAX"] = _F32_MAX
            layout.add(_STRUCT[p.type])
            packed.append(a)
        elif p.type == "bool":
            body.append(f"    if type({a}) is not bool: return False")
            layout.add("B")
            packed.append(a)
        else:
            lo, hi = INT_RANGES[p.type]
            body.append(f"    if type({a}) is not int or not ({lo} <= {a} <= {hi}): return False")
            layout.add(_STRUCT[p.type])
            packed.append(a)
    # A mutable slice may not overlap another slice (Rust's exclusivity); let the general
    # path explain any overlap.
    for i, (x, x_mut, x_size) in enumerate(slices):
        for y, y_mut, y_size in slices[i + 1 :]:
            if x_mut or y_mut:
                body.append(
                    f"    if n{x} and n{y} and p{x} < p{y} + n{y} * {y_size}"
                    f" and p{y} < p{x} + n{x} * {x_size}: return False"
                )
    rule = plain_rule(spec)  # a plain call's grid: ceil(n / per_block) blocks of `block`
    env["PACK"] = struct.Struct(layout.fmt).pack_into
    env["SIZE"] = struct.calcsize(layout.fmt)
    env["make_buffer"] = _make_buffer
    n = len(spec.params)
    names = ", ".join(f"a{i}" for i in range(n))
    src = [
        "def fast(args, cfg):",
        f"    if len(args) != {n}: return False",
        f"    {names}{',' if n == 1 else ''} = args" if n else "    pass",
        *body,
        "    if getDevice() != DEV: return False",
        "    if cfg is None:",
    ]
    if rule is None:
        src.append("        return False  # the policy needs more than a division: general path")
    else:
        grid_param, block, per_block = rule
        src += [
            f"        gx = (n{grid_param} + {per_block - 1}) // {per_block}",
            f"        if gx > {_MAX_GRID_X}: return False",
            f"        gy = gz = 1; bx = {block}; by = bz = 1; smem = 0",
        ]
    src += [
        "    else:",
        "        gx, gy, gz, bx, by, bz, smem = cfg",
        "    if gx == 0: return True  # an empty output: nothing to do",
        "    try:",
        "        buf, extra, _ = LOCAL.v",
        "    except AttributeError:",
        "        buf, extra, _ = LOCAL.v = make_buffer(SIZE)",
        f"    PACK(buf, 0{''.join(', ' + v for v in packed)})",
        "    previous = BACKEND._last_kernel",
        "    BACKEND._last_kernel = NAME",
        "    try:",
        "        launch(F, gx, gy, gz, bx, by, bz, smem, current_stream().ptr, 0, extra)",
        "    except (DriverError, RuntimeError_) as e:",
        "        raise BACKEND._error(NAME, previous, e) from None",
        "    return True",
    ]
    code = compile("\n".join(src) + "\n", f"<pyoxide fast launcher {spec.entry}>", "exec")
    exec(code, env)
    fast: FastLauncher = env["fast"]
    return fast


def _make_buffer(size: int) -> tuple[Any, int, Any]:
    """A parameter buffer, the address of the `extra` array that points at it, and what
    must stay alive with them (one per thread and kernel)."""
    buf = ctypes.create_string_buffer(max(size, 1))
    size_word = ctypes.c_size_t(size)
    extra = (ctypes.c_void_p * 5)(
        _CU_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(buf),
        _CU_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size_word),
        _CU_LAUNCH_PARAM_END,
    )  # fmt: skip
    return buf, ctypes.addressof(extra), (size_word, extra)
