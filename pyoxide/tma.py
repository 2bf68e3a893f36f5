"""TMA tensor maps for kernels that take one by value (``map: TmaDescriptor``).

A kernel parameter of type ``TmaDescriptor`` (parameter kind ``tensor_map``) is CUDA
C++'s ``const __grid_constant__ CUtensorMap``: the map's 128 bytes travel in the
launch's parameter space, 64-byte aligned, and the kernel's TMA copies read them there
(``&map``). Nothing is uploaded. Make the value on the host::

    m = pyoxide.tma.tensor_map(a, box=(8, 32))      # a: a 2-D CuPy array / CUDA tensor
    module.copy_box(m, 0, 0, out)

:func:`tensor_map` encodes the map with the driver's ``cuTensorMapEncodeTiled``
(pyoxide/backends/cupy/_tensormap.py); the :class:`TensorMap` it returns keeps the
array alive, since the map holds the array's device address and nothing else of it.
A kernel parameter of this kind also takes the raw 128 bytes (``bytes``, a ``uint8``
NumPy array): the CPU emulator passes them through as they are (it runs no TMA copy,
but a kernel may read the bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from . import _abi
from .errors import ArgumentTypeError, ArgumentValueError

__all__ = ["TENSOR_MAP_SIZE", "TensorMap", "tensor_map"]

#: Bytes of a tensor map (oxide-abi's ``TENSOR_MAP_SIZE``); aligned to ``TENSOR_MAP_ALIGN``.
TENSOR_MAP_SIZE = _abi.TENSOR_MAP_SIZE
TENSOR_MAP_ALIGN = _abi.TENSOR_MAP_ALIGN

#: Shared-memory swizzle spans in bytes -> CUtensorMapSwizzle (cuda.h).
_SWIZZLES = {None: 0, 32: 1, 64: 2, 128: 3}
_WHO = "pyoxide.tma.tensor_map"
#: cuTensorMapEncodeTiled's limit on each box extent.
_MAX_BOX = 256


@dataclass(frozen=True, eq=False)
class TensorMap:
    """A TMA tensor map of a 2-D array, for a ``TmaDescriptor`` kernel parameter.

    ``raw`` is the 128 bytes the kernel receives; ``array`` is the array the map points
    into, held so that its memory outlives the map. ``shape`` is (rows, cols), ``box``
    the (rows, cols) one copy moves, ``swizzle`` the swizzle span in bytes (None: none).
    Copy coordinates in the kernel are (column, row).
    """

    raw: bytes
    array: Any
    shape: tuple[int, int]
    box: tuple[int, int]
    swizzle: int | None

    def __bytes__(self) -> bytes:
        return self.raw

    def __repr__(self) -> str:
        rows, cols = self.shape
        return (
            f"TensorMap({rows}x{cols} array, box {self.box[0]}x{self.box[1]}, "
            f"swizzle {self.swizzle})"
        )


def _refuse(cls: type, param: str, expected: str, got: str, fix: str) -> NoReturn:
    raise cls(_WHO, param, expected, got, fix)


def tensor_map(array: Any, box: tuple[int, int], *, swizzle: int | None = None) -> TensorMap:
    """The tensor map of ``array`` (a C-contiguous 2-D GPU array: CuPy, a CUDA
    ``torch.Tensor``, anything with ``__cuda_array_interface__``; elements of 1, 2, 4 or
    8 bytes) copied in boxes of ``box = (rows, cols)`` elements, laid out in shared
    memory with ``swizzle`` (None, 32, 64 or 128 bytes). Elements a box reaches outside
    the array read as zero. Refused with :class:`~pyoxide.errors.ArgumentTypeError` /
    :class:`~pyoxide.errors.ArgumentValueError` before the driver is asked."""
    iface = getattr(array, "__cuda_array_interface__", None)
    if not isinstance(iface, dict):
        where = "host memory" if hasattr(array, "__array_interface__") else "not a GPU array"
        _refuse(
            ArgumentTypeError,
            "array",
            "a 2-D GPU array (CuPy, a CUDA torch.Tensor, __cuda_array_interface__)",
            f"{type(array).__module__}.{type(array).__name__} ({where})",
            "copy it to the GPU first (cupy.asarray(x), x.cuda()); on the emulator pass "
            f"the kernel {TENSOR_MAP_SIZE} bytes instead",
        )
    shape = tuple(int(n) for n in iface["shape"])
    itemsize = int(iface["typestr"][2:])
    if len(shape) != 2:
        _refuse(
            ArgumentValueError,
            "array",
            "a 2-D array",
            f"shape {shape}",
            "reshape it to (rows, cols)",
        )
    rows, cols = shape
    strides = iface.get("strides")
    if strides is not None and tuple(strides) != (cols * itemsize, itemsize):
        _refuse(
            ArgumentValueError,
            "array",
            "a C-contiguous array",
            f"strides {tuple(strides)}",
            "make it contiguous (cupy.ascontiguousarray(x), x.contiguous())",
        )
    if itemsize not in (1, 2, 4, 8):
        _refuse(
            ArgumentTypeError,
            "array",
            "elements of 1, 2, 4 or 8 bytes",
            f"typestr {iface['typestr']}",
            "view the data as an integer type of that size",
        )
    ptr = int(iface["data"][0])
    if ptr % 16 or (cols * itemsize) % 16:
        _refuse(
            ArgumentValueError,
            "array",
            "a 16-byte-aligned array whose rows are a multiple of 16 bytes",
            f"address {ptr:#x}, rows of {cols * itemsize} bytes",
            "pad the rows (allocate (rows, cols') with cols' * itemsize a multiple of 16)",
        )
    if (
        not isinstance(box, tuple)
        or len(box) != 2
        or not all(isinstance(b, int) and 1 <= b <= _MAX_BOX for b in box)
    ):
        _refuse(
            ArgumentValueError,
            "box",
            f"(rows, cols), each 1 to {_MAX_BOX}",
            repr(box),
            "pass box=(rows, cols) as two ints",
        )
    box_rows, box_cols = box
    if (box_cols * itemsize) % 16:
        _refuse(
            ArgumentValueError,
            "box",
            "box rows of a multiple of 16 bytes",
            f"{box_cols} columns of {itemsize} bytes",
            "widen the box's columns",
        )
    if swizzle not in _SWIZZLES:
        _refuse(
            ArgumentValueError,
            "swizzle",
            "None, 32, 64 or 128 (bytes)",
            repr(swizzle),
            "pass one of those",
        )
    if swizzle is not None and box_cols * itemsize > swizzle:
        _refuse(
            ArgumentValueError,
            "box",
            f"box rows of at most the swizzle span ({swizzle} bytes)",
            f"{box_cols * itemsize} bytes",
            "narrow the box or widen the swizzle",
        )
    from .backends.cupy._tensormap import encode_2d

    raw = encode_2d(_WHO, ptr, cols, rows, box_cols, box_rows, _SWIZZLES[swizzle], itemsize)
    return TensorMap(raw, array, (rows, cols), (box_rows, box_cols), swizzle)


def map_bytes(value: Any) -> bytes | None:
    """The 128 bytes a ``tensor_map`` parameter takes from ``value``, or None when it is
    not a map (a wrong-sized value gives its bytes: the launcher refuses the size)."""
    if isinstance(value, TensorMap):
        return value.raw
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    typestr = (
        getattr(value, "__array_interface__", {}).get("typestr")
        if hasattr(value, "__array_interface__")
        else None
    )
    if typestr == "|u1" and len(getattr(value, "shape", ())) == 1:
        import numpy as np

        return np.ascontiguousarray(value).tobytes()
    return None
